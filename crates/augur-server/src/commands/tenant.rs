//! Tenant commands: ACL (users are tenants, Redis's syntax; Redis's acl.c) and TENANT
//! (Augur's own: per-tenant limits, statistics and miss-ratio curves).
//!
//! Who may administer is the ACL's business, as in Redis: ACL SETUSER needs
//! `acl|setuser` (@admin), TENANT SET needs `tenant|set` (@admin). A user who may not
//! run TENANT SET sees only its own tenant's figures.

use super::{eq, help_reply, lossy, subcommand, Client};
use crate::acl::{self, Denied, LogEntry, Perms, Request};
use crate::cmdtable::CommandSpec;
use crate::pubsub::Kind as PsKind;
use crate::resp::{format_double, Args};
use crate::state::{Shared, ACL_DIRTY, ACL_RESTRICTED};
use crate::tenants::{TenantError, User, TENANT_PARAMS};
use augur_mrc::curve::Curve;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};
use std::sync::Arc;

/// Points of a TENANT MRC answer by default (as `augur mrc --points`).
const DEFAULT_MRC_POINTS: usize = 100;
const MAX_MRC_POINTS: usize = 10_000;

fn noperm(c: &mut Client, cmd: &str) {
    c.out.error(&format!(
        "NOPERM this user has no permissions to run the '{cmd}' command"
    ));
}

/// Whether the connection's user may run `tenant|set` (an administrator): others see
/// only their own tenant's figures.
fn is_admin(shared: &Shared, c: &mut Client) -> bool {
    refresh_perms(shared, c);
    let Some(id) = acl::lookup("tenant|set") else {
        return false;
    };
    let argv: [&[u8]; 2] = [b"tenant", b"set"];
    let ranges = [(0, 6), (6, 9)];
    let joined: Vec<u8> = argv.concat();
    let args = Args::from_parts(&joined, &ranges);
    c.perms.check(&Request { id, args }).is_ok()
}

fn no_such_tenant(c: &mut Client, name: &[u8]) {
    c.out
        .error(&format!("ERR No such tenant '{}'", lossy(name)));
}

/// Reloads the user's permissions if they changed since the last command, and keeps
/// the connection's fast-path flag in step (ACL_RESTRICTED off for an unrestricted
/// user).
pub(super) fn refresh_perms(shared: &Shared, c: &mut Client) {
    let st = c.meta.acl_state.fetch_and(!ACL_DIRTY, AcqRel);
    if st & ACL_DIRTY == 0 {
        return;
    }
    let uid = c.meta.user_id.load(Relaxed);
    // A deleted user's connection is being closed: it may run nothing meanwhile.
    let p = shared
        .tenants
        .perms_of(uid)
        .unwrap_or_else(|| Arc::new(Perms::new(false)));
    if p.unrestricted {
        c.meta.acl_state.fetch_and(!ACL_RESTRICTED, AcqRel);
    } else {
        c.meta.acl_state.fetch_or(ACL_RESTRICTED, AcqRel);
    }
    c.perms = p;
}

/// Checks a request against the connection's user (ACLCheckAllPerm); on refusal logs it
/// in ACL LOG with `context` and returns the reason and the command's full name.
pub(super) fn check_request(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    context: &'static str,
) -> Result<(), (Denied, &'static str)> {
    refresh_perms(shared, c);
    if c.perms.unrestricted {
        return Ok(());
    }
    let Some(id) = acl::request_id(spec.name, args) else {
        return Ok(());
    };
    match c.perms.check(&Request { id, args }) {
        Ok(()) => Ok(()),
        Err(d) => {
            let fullname = acl::rcmd(id).name;
            let object = match d {
                Denied::Command => fullname.as_bytes().to_vec(),
                Denied::Key(p) | Denied::Channel(p) => args.get(p).to_vec(),
            };
            log_denial(shared, c, d.reason(), context, object, None);
            Err((d, fullname))
        }
    }
}

/// Adds an ACL LOG entry (addACLLogEntry) for this connection.
pub(super) fn log_denial(
    shared: &Shared,
    c: &Client,
    reason: &'static str,
    context: &'static str,
    object: Vec<u8>,
    username: Option<String>,
) {
    let mut info = String::new();
    super::client::client_line(&c.meta, None, &mut info);
    let max = shared.config.read().acllog_max_len;
    shared.acl_log.add(
        LogEntry {
            count: 1,
            reason,
            context,
            object,
            username: username.unwrap_or_else(|| c.user.clone()),
            ctime_ms: crate::state::now_ms(),
            client_info: info,
        },
        max,
    );
}

/// After a user changed: connections reload its rules, and its Pub/Sub connections
/// whose subscriptions the new rules no longer allow are closed
/// (ACLKillPubsubClientsIfNeeded).
fn after_user_change(shared: &Shared, c: &mut Client, user: &User) {
    shared.acl_changed();
    let perms = user.perms.clone();
    if perms
        .selectors
        .iter()
        .any(|s| s.describe_channels() == "&*")
    {
        return;
    }
    let clients: Vec<_> = shared.clients.lock().values().cloned().collect();
    for m in clients {
        if m.user_id.load(Relaxed) != user.id
            || m.sub.load(Relaxed) + m.psub.load(Relaxed) + m.ssub.load(Relaxed) == 0
        {
            continue;
        }
        let subs = shared.pubsub.subscriptions_of(m.tenant.load(Relaxed), m.id);
        let kill = subs
            .iter()
            .any(|(kind, name)| !perms.subscription_allowed(name, *kind == PsKind::Pattern));
        if kill {
            if m.id == c.meta.id {
                c.close_after_reply = true;
            } else {
                m.close();
            }
        }
    }
}

pub(super) fn acl_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "setuser" => {
            let name = lossy(args.get(2)).into_owned();
            let rules: Vec<&[u8]> = args.iter().skip(3).collect();
            match shared.tenants.set_user(&name, &rules) {
                Ok((before, user)) => {
                    if before.is_none() {
                        // A reused slot starts empty, whatever a closing connection of the
                        // slot's previous user may still have written.
                        shared.store.drop_tenant(user.id);
                        let rate = shared.config.read().tenant_sample_rate;
                        shared.store.set_tenant_sample_rate(user.id, rate);
                        shared.install_tenant_limits();
                    } else if before.as_ref().map(|b| &b.keyspace) != Some(&user.keyspace) {
                        // Its keyspace moved (`tenant:`): its other connections close
                        // rather than silently see other data; this one moves.
                        shared.disconnect_user_except(user.id, c.meta.id);
                        if c.meta.user_id.load(Relaxed) == user.id {
                            c.tenant = shared.tenants.keyspace_of(&user);
                            c.meta.tenant.store(c.tenant, Relaxed);
                            c.pubsub = None;
                        }
                    }
                    if name == "default" {
                        shared.refresh_default_auth();
                    }
                    after_user_change(shared, c, &user);
                    c.out.ok()
                }
                Err(TenantError::Rule(e)) | Err(TenantError::Invalid(e)) => {
                    c.out.error(&format!("ERR {e}"))
                }
                Err(TenantError::TooMany) => c.out.error(&format!(
                    "ERR Too many tenants (at most {})",
                    augur_store::MAX_TENANTS
                )),
                Err(e) => c.out.error(&format!("ERR {e:?}")),
            }
        }
        "deluser" => {
            for name in args.iter().skip(2) {
                if name == b"default" {
                    return c.out.error("ERR The 'default' user cannot be removed");
                }
            }
            let mut n = 0;
            for name in args.iter().skip(2) {
                match shared.tenants.delete_user(&lossy(name)) {
                    Err(e) => return c.out.error(&format!("ERR {e}")),
                    Ok(None) => {}
                    Ok(Some(u)) => {
                        shared.disconnect_user_except(u.id, c.meta.id);
                        if c.meta.user_id.load(Relaxed) == u.id {
                            // Redis replies, then closes the connection.
                            c.close_after_reply = true;
                        }
                        shared.store.drop_tenant(u.id);
                        // Its function libraries are its data too (a later user may get
                        // the same tenant id).
                        shared.scripting.drop_tenant_functions(u.id);
                        shared.profiler.views.lock().remove(&u.id);
                        n += 1;
                    }
                }
            }
            if n > 0 {
                shared.install_tenant_limits();
                shared.acl_changed();
            }
            c.out.int(n)
        }
        "getuser" => match shared.tenants.get(&lossy(args.get(2))) {
            None => c.out.null(),
            Some(u) => {
                let extra = u.keyspace.is_some() as usize;
                c.out.map(6 + extra);
                c.out.bulk_str("flags");
                let flags = u.flags();
                c.out.array(flags.len());
                for f in flags {
                    c.out.bulk_str(f);
                }
                c.out.bulk_str("passwords");
                c.out.array(u.passwords.len());
                for p in &u.passwords {
                    c.out.bulk_str(p);
                }
                let root = &u.perms.selectors[0];
                c.out.bulk_str("commands");
                c.out.bulk_str(&root.describe_commands());
                c.out.bulk_str("keys");
                c.out.bulk_str(&root.describe_keys());
                c.out.bulk_str("channels");
                c.out.bulk_str(&root.describe_channels());
                c.out.bulk_str("selectors");
                c.out.array(u.perms.selectors.len() - 1);
                for s in &u.perms.selectors[1..] {
                    c.out.map(3);
                    c.out.bulk_str("commands");
                    c.out.bulk_str(&s.describe_commands());
                    c.out.bulk_str("keys");
                    c.out.bulk_str(&s.describe_keys());
                    c.out.bulk_str("channels");
                    c.out.bulk_str(&s.describe_channels());
                }
                if let Some(k) = &u.keyspace {
                    c.out.bulk_str("tenant");
                    c.out.bulk_str(k);
                }
            }
        },
        "users" => {
            let mut names: Vec<String> =
                shared.tenants.users().into_iter().map(|u| u.name).collect();
            names.sort();
            c.out.array(names.len());
            for n in names {
                c.out.bulk_str(&n);
            }
        }
        "list" => {
            let mut users = shared.tenants.users();
            users.sort_by(|a, b| a.name.cmp(&b.name));
            c.out.array(users.len());
            for u in users {
                c.out.bulk_str(&u.describe());
            }
        }
        "whoami" => {
            let user = c.user.clone();
            c.out.bulk_str(&user)
        }
        "cat" => {
            if args.len() == 2 {
                c.out.array(acl::CATEGORIES.len());
                for n in acl::CATEGORIES {
                    c.out.bulk_str(n);
                }
            } else if args.len() == 3 {
                let name = lossy(args.get(2)).into_owned();
                let Some(bit) = acl::category_bit(&name) else {
                    return c.out.error(&format!("ERR Unknown category '{name}'"));
                };
                let names = acl::commands_in(bit, served);
                c.out.array(names.len());
                for n in names {
                    c.out.bulk_str(n);
                }
            } else {
                c.out.error("ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.")
            }
        }
        "log" => {
            if args.len() > 3 {
                return c.out.error("ERR unknown subcommand or wrong number of arguments for 'log'. Try ACL HELP.");
            }
            let mut count = 10usize;
            if args.len() == 3 {
                let a = args.get(2);
                if eq(a, "reset") {
                    shared.acl_log.reset();
                    return c.out.ok();
                }
                match crate::resp::parse_i64(a) {
                    Some(n) if n >= 0 => count = n as usize,
                    // Redis answers an empty list for a negative count.
                    Some(_) => count = 0,
                    None => return c.out.error(super::ERR_NOT_INT),
                }
            }
            let now = crate::state::now_ms();
            let entries = shared.acl_log.entries(count);
            c.out.array(entries.len());
            for e in entries {
                c.out.map(7);
                c.out.bulk_str("count");
                c.out.int(e.count as i64);
                c.out.bulk_str("reason");
                c.out.bulk_str(e.reason);
                c.out.bulk_str("context");
                c.out.bulk_str(e.context);
                c.out.bulk_str("object");
                c.out.bulk(&e.object);
                c.out.bulk_str("username");
                c.out.bulk_str(&e.username);
                c.out.bulk_str("age-seconds");
                c.out
                    .double(now.saturating_sub(e.ctime_ms) as f64 / 1000.0);
                c.out.bulk_str("client-info");
                c.out.bulk_str(&e.client_info);
            }
        }
        "dryrun" => {
            let Some(u) = shared.tenants.get(&lossy(args.get(2))) else {
                return c.out.error(&format!(
                    "ERR User '{}' not found",
                    lossy(args.get(2))
                ));
            };
            // Any Redis 7.0 command can be tried, served by Augur or not: the ACL table
            // knows every command's categories, arity and key specs.
            let rest = args.range(3, args.len());
            let name = lossy(rest.get(0)).into_owned();
            let not_found = || format!("ERR Command '{name}' not found");
            let Some(base) = acl::lookup(&name).filter(|_| !name.contains('|')) else {
                return c.out.error(&not_found());
            };
            let Some(id) = acl::request_id(&name, rest) else {
                return c.out.error(&not_found());
            };
            if id == base && acl::has_subcommands(base) && rest.len() >= 2 {
                return c.out.error(&not_found());
            }
            let rc = acl::rcmd(id);
            if !crate::cmdtable::arity_ok(rc.arity, rest.len()) {
                return c.out.error(&format!(
                    "ERR wrong number of arguments for '{}' command",
                    rc.name
                ));
            }
            match u.perms.check(&Request { id, args: rest }) {
                Ok(()) => c.out.ok(),
                Err(d) => c
                    .out
                    .bulk_str(&d.dryrun_message(acl::rcmd(id).name, rest)),
            }
        }
        "genpass" => {
            let bits = if args.len() > 2 {
                match crate::resp::parse_i64(args.get(2)) {
                    Some(b) if (1..=4096).contains(&b) => b as usize,
                    _ => return c.out.error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"),
                }
            } else {
                256
            };
            c.out.bulk_str(&acl::genpass(bits))
        }
        "load" | "save" => {
            if shared.config.read().aclfile.is_empty() {
                return c.out.error("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.");
            }
            let res = if sub == "load" {
                shared.load_acl_file()
            } else {
                shared.save_acl_file()
            };
            match res {
                Err(e) => c.out.error(&format!("ERR {e}")),
                Ok(()) => {
                    if sub == "load" {
                        // Every user was replaced: every connection closes, this one
                        // after its reply (as Redis frees the old users' clients).
                        for m in shared.clients.lock().values() {
                            if m.id != c.meta.id {
                                m.close();
                            }
                        }
                        c.close_after_reply = true;
                    }
                    c.out.ok()
                }
            }
        }
        _ => help_reply(
            &mut c.out,
            "ACL",
            &[
                "CAT [<category>]",
                "    List all commands that belong to <category>, or all command categories",
                "    when no category is specified.",
                "DELUSER <username> [<username> ...]",
                "    Delete a list of users.",
                "DRYRUN <username> <command> [<arg> ...]",
                "    Returns whether the user can execute the given command without executing the command.",
                "GETUSER <username>",
                "    Get the user's details.",
                "GENPASS [<bits>]",
                "    Generate a secure 256-bit user password. The optional `bits` argument can",
                "    be used to specify a different size.",
                "LIST",
                "    Show users details in config file format.",
                "LOAD",
                "    Reload users from the ACL file.",
                "LOG [<count> | RESET]",
                "    Show the ACL log entries.",
                "SAVE",
                "    Save the current config to the ACL file.",
                "SETUSER <username> <attribute> [<attribute> ...]",
                "    Create or modify a user with the specified attributes.",
                "USERS",
                "    List all the registered usernames.",
                "WHOAMI",
                "    Return the current connection username.",
            ],
        ),
    }
}

/// Whether Augur serves a command or subcommand (ACL CAT lists only those).
fn served(name: &str) -> bool {
    let (cmd, sub) = match name.split_once('|') {
        Some((c, s)) => (c, Some(s)),
        None => (name, None),
    };
    let mut buf = [0u8; crate::cmdtable::MAX_NAME_LEN];
    let Some(spec) =
        crate::cmdtable::upper(cmd.as_bytes(), &mut buf).and_then(crate::cmdtable::lookup)
    else {
        return false;
    };
    sub.is_none_or(|s| spec.sub(s.as_bytes()).is_some())
}

/// The figures of TENANT INFO, as (field, value) pairs.
pub fn tenant_info_fields(shared: &Shared, u: &User) -> Vec<(&'static str, String)> {
    let stats = shared.store.tenant_stats();
    let st = stats.get(u.id as usize).cloned().unwrap_or_default();
    let (cap, target, _) = shared.store.tenant_limits(u.id);
    let view = shared
        .profiler
        .views
        .lock()
        .get(&u.id)
        .cloned()
        .unwrap_or_default();
    let k = shared.store.tenant_samples(u.id);
    // What the last interval's curve forecasts at the target with the tenant's K.
    let predicted_at_target = if target == 0 {
        None
    } else {
        view.forecast_at(target, k as u32)
    };
    let opt = |v: Option<f64>| v.map_or(String::new(), format_double);
    vec![
        ("name", u.name.clone()),
        ("id", u.id.to_string()),
        ("enabled", if u.enabled { "1" } else { "0" }.into()),
        ("used_memory", st.used_bytes.to_string()),
        ("keys", st.keys.to_string()),
        ("maxmemory", cap.to_string()),
        ("min_memory", u.settings.min_memory.to_string()),
        ("target", target.to_string()),
        ("k", k.to_string()),
        // The policy its evictions use now (`maxmemory-policy auto`'s choice for it,
        // crate::autopolicy, else the global one).
        (
            "eviction_policy",
            shared.store.tenant_policy(u.id).name().to_string(),
        ),
        ("hits", st.hits.to_string()),
        ("misses", st.misses.to_string()),
        ("writes", st.writes.to_string()),
        ("evicted_keys", st.evicted.to_string()),
        ("expired_keys", st.expired.to_string()),
        ("miss_latency_us", opt(view.miss_latency_us)),
        (
            "miss_latency_samples",
            view.miss_latency_samples.to_string(),
        ),
        ("miss_penalty_us", format_double(view.penalty_us)),
        ("access_rate", format_double(view.access_rate)),
        ("observed_miss_ratio", opt(view.observed_miss_ratio)),
        ("predicted_miss_ratio", opt(view.predicted_miss_ratio)),
        ("model_miss_ratio", opt(view.model_miss_ratio)),
        ("predicted_miss_ratio_at_target", opt(predicted_at_target)),
        (
            "working_set_bytes",
            format!("{}", view.working_set_bytes.round() as u64),
        ),
        (
            "distinct_keys",
            view.distinct_keys
                .map_or_else(String::new, |d| format!("{}", d.round() as u64)),
        ),
        // The spatial sampling rate now: §5's rule, the operator's, or lowered by the
        // profiler's CPU budget (crate::cpu_budget).
        (
            "sample_rate",
            format_double((shared.store.tenant_sample_rate(u.id) * 1e6).round() / 1e6),
        ),
        ("sampled_references", view.sampled_references.to_string()),
        (
            "dropped_samples",
            shared.ref_queue.dropped(u.id).to_string(),
        ),
        ("profiler_bytes", view.model_bytes.to_string()),
        (
            "intervals",
            shared.profiler.intervals.load(Relaxed).to_string(),
        ),
        (
            "target_history",
            view.history
                .iter()
                .map(|(i, t, k)| format!("{i}:{t}:{k}"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    ]
}

pub(super) fn tenant_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    let name = if args.len() > 2 {
        lossy(args.get(2)).into_owned()
    } else {
        String::new()
    };
    // A non-administrator sees only itself.
    let admin = is_admin(shared, c);
    if !name.is_empty() && !admin && name != c.user && sub != "help" {
        return noperm(c, &format!("tenant|{sub}"));
    }
    match sub {
        "set" => {
            if args.len() % 2 != 1 {
                return c.out.error("ERR wrong number of arguments for 'tenant|set' command");
            }
            let pairs: Vec<(String, String)> = (3..args.len())
                .step_by(2)
                .map(|i| (lossy(args.get(i)).to_ascii_lowercase(), lossy(args.get(i + 1)).into_owned()))
                .collect();
            let maxmemory = shared.config.read().maxmemory;
            match shared.tenants.set_settings(&name, &pairs, maxmemory) {
                Ok(u) => {
                    let rate = u
                        .settings
                        .sample_rate
                        .unwrap_or(shared.config.read().tenant_sample_rate);
                    shared.store.set_tenant_sample_rate(u.id, rate);
                    shared.install_tenant_limits();
                    c.out.ok()
                }
                Err(TenantError::NoSuchUser) => no_such_tenant(c, args.get(2)),
                Err(TenantError::Invalid(e)) => {
                    c.out.error(&format!("ERR TENANT SET failed: {e}"))
                }
                Err(e) => c.out.error(&format!("ERR {e:?}")),
            }
        }
        "get" => {
            let Some(u) = shared.tenants.get(&name) else {
                return no_such_tenant(c, args.get(2));
            };
            let wanted: Vec<&str> = if args.len() > 3 {
                TENANT_PARAMS
                    .iter()
                    .copied()
                    .filter(|p| args.iter().skip(3).any(|a| eq(a, p)))
                    .collect()
            } else {
                TENANT_PARAMS.to_vec()
            };
            c.out.map(wanted.len());
            for p in wanted {
                c.out.bulk_str(p);
                c.out.bulk_str(&u.settings.get(p).unwrap_or_default());
            }
        }
        "list" => {
            let users = shared.tenants.users();
            let visible: Vec<String> = users
                .into_iter()
                .filter(|u| admin || u.name == c.user)
                .map(|u| u.name)
                .collect();
            c.out.array(visible.len());
            for n in visible {
                c.out.bulk_str(&n);
            }
        }
        "info" => {
            let Some(u) = shared.tenants.get(&name) else {
                return no_such_tenant(c, args.get(2));
            };
            let fields = tenant_info_fields(shared, &u);
            c.out.map(fields.len());
            for (k, v) in fields {
                c.out.bulk_str(k);
                c.out.bulk_str(&v);
            }
        }
        "mrc" => {
            let Some(u) = shared.tenants.get(&name) else {
                return no_such_tenant(c, args.get(2));
            };
            let view = shared.profiler.views.lock().get(&u.id).cloned().unwrap_or_default();
            // TENANT MRC name [K|merged] [POINTS n]
            let mut which = "merged".to_string();
            let mut npoints = DEFAULT_MRC_POINTS;
            let mut i = 3;
            while i < args.len() {
                let a = lossy(args.get(i)).to_ascii_lowercase();
                if a == "points" && i + 1 < args.len() {
                    match lossy(args.get(i + 1)).parse::<usize>() {
                        Ok(n) if (1..=MAX_MRC_POINTS).contains(&n) => npoints = n,
                        _ => {
                            return c.out.error(&format!(
                                "ERR POINTS must be between 1 and {MAX_MRC_POINTS}"
                            ))
                        }
                    }
                    i += 2;
                } else if i == 3 {
                    which = a;
                    i += 1;
                } else {
                    return c.out.error("ERR syntax error");
                }
            }
            let curve: Option<Curve> = if which == "merged" {
                if view.curves.is_empty() {
                    None
                } else {
                    Some(merged_curve(&view.curves))
                }
            } else {
                match which.parse::<u32>() {
                    Ok(k) => match view.curves.iter().find(|c| c.k == Some(k)) {
                        Some(cv) => Some(cv.clone()),
                        // Profiled but nothing measured yet: an empty curve.
                        None if view.curves.is_empty()
                            && shared.config.read().tenant_k_set.contains(&k) =>
                        {
                            None
                        }
                        None => {
                            return c.out.error(&format!(
                                "ERR K {k} is not profiled (tenant-k-set is {})",
                                shared.config.read().get("tenant-k-set").unwrap_or_default()
                            ))
                        }
                    },
                    Err(_) => return c.out.error("ERR the curve must be a K or 'merged'"),
                }
            };
            // The points `augur mrc` writes: evenly spaced over (0, working set].
            let curve = curve.map(|cv| cv.resample(view.working_set_bytes, npoints));
            let points = curve.map(|c| c.points).unwrap_or_default();
            c.out.array(points.len());
            for p in points {
                c.out.array(2);
                c.out.bulk_str(&augur_mrc::curve::format_size(p.size));
                c.out.bulk_str(&format_double(p.miss_ratio));
            }
        }
        _ => help_reply(
            &mut c.out,
            "TENANT",
            &[
                "SET <name> <param> <value> [<param> <value> ...]",
                "    Set maxmemory, min-memory, miss-penalty (e.g. 2ms, or auto) or sample-rate.",
                "GET <name> [<param> ...]",
                "    Return a tenant's parameters.",
                "LIST",
                "    List the tenants (ACL users).",
                "INFO <name>",
                "    Memory, target, K, hits, misses, evictions, miss latency, access rate, predictions.",
                "MRC <name> [<K>|merged] [POINTS <n>]",
                "    The tenant's miss-ratio curve: (bytes, miss ratio) at n (default 100) sizes",
                "    evenly spaced up to its estimated working set, as `augur mrc` writes them.",
            ],
        ),
    }
}

/// The merged curve (kRedis Eq. 4: minimum over K at every size any curve has a point
/// for).
pub fn merged_curve(curves: &[Curve]) -> Curve {
    let mut sizes: Vec<f64> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.size))
        .collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let points = sizes
        .into_iter()
        .map(|s| augur_mrc::curve::Point {
            size: s,
            miss_ratio: curves
                .iter()
                .map(|c| c.miss_ratio_at(s))
                .fold(f64::INFINITY, f64::min),
        })
        .collect();
    Curve::new(
        "krr-merged",
        None,
        augur_mrc::curve::SizeUnit::Bytes,
        points,
    )
}
