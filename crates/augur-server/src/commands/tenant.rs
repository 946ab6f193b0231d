//! Tenant commands: ACL (users are tenants, Redis's syntax; Redis's acl.c) and TENANT
//! (Augur's own: per-tenant limits, statistics and miss-ratio curves).
//!
//! Administration (ACL SETUSER / DELUSER, TENANT SET) is the `default` user's: a
//! tenant may read its own figures but not change another's memory or password.

use super::{eq, help_reply, lossy, subcommand, Client};
use crate::cmdtable::CommandSpec;
use crate::resp::{format_double, Args};
use crate::state::Shared;
use crate::tenants::{TenantError, User, TENANT_PARAMS};
use augur_mrc::curve::Curve;
use std::sync::atomic::Ordering::Relaxed;

/// Points of a TENANT MRC answer by default (as `augur mrc --points`).
const DEFAULT_MRC_POINTS: usize = 100;
const MAX_MRC_POINTS: usize = 10_000;

fn noperm(c: &mut Client, cmd: &str) {
    c.out.error(&format!(
        "NOPERM User {} has no permissions to run the '{cmd}' command",
        c.user
    ));
}

fn admin_only(c: &mut Client, cmd: &str) -> bool {
    if c.tenant == 0 {
        return true;
    }
    noperm(c, cmd);
    false
}

fn no_such_tenant(c: &mut Client, name: &[u8]) {
    c.out
        .error(&format!("ERR No such tenant '{}'", lossy(name)));
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
            if !admin_only(c, "acl|setuser") {
                return;
            }
            let name = lossy(args.get(2)).into_owned();
            let rules: Vec<&[u8]> = args.iter().skip(3).collect();
            let existed = shared.tenants.get(&name).is_some();
            match shared.tenants.set_user(&name, &rules) {
                Ok(user) => {
                    if !existed {
                        // A reused slot starts empty, whatever a closing connection of the
                        // slot's previous user may still have written.
                        shared.store.drop_tenant(user.id);
                        let rate = shared.config.read().tenant_sample_rate;
                        shared.store.set_tenant_sample_rate(user.id, rate);
                        shared.install_tenant_limits();
                    }
                    if !user.enabled {
                        shared.disconnect_tenant_except(user.id, c.meta.id);
                    }
                    c.out.ok()
                }
                Err(TenantError::Rule(e)) => c.out.error(&format!("ERR {e}")),
                Err(TenantError::TooMany) => c.out.error(&format!(
                    "ERR Too many tenants (at most {})",
                    augur_store::MAX_TENANTS
                )),
                Err(e) => c.out.error(&format!("ERR {e:?}")),
            }
        }
        "deluser" => {
            if !admin_only(c, "acl|deluser") {
                return;
            }
            for name in args.iter().skip(2) {
                if name == b"default" {
                    return c.out.error("ERR The 'default' user cannot be removed");
                }
            }
            let mut n = 0;
            for name in args.iter().skip(2) {
                if let Some(u) = shared.tenants.delete_user(&lossy(name)) {
                    shared.disconnect_tenant_except(u.id, u64::MAX);
                    shared.store.drop_tenant(u.id);
                    // Its function libraries are its data too (a later user may get
                    // the same tenant id).
                    shared.scripting.drop_tenant_functions(u.id);
                    shared.profiler.views.lock().remove(&u.id);
                    n += 1;
                }
            }
            if n > 0 {
                shared.install_tenant_limits();
            }
            c.out.int(n)
        }
        "getuser" => match shared.tenants.get(&lossy(args.get(2))) {
            None => c.out.null(),
            Some(u) => {
                c.out.map(6);
                c.out.bulk_str("flags");
                let mut flags = vec![if u.enabled { "on" } else { "off" }];
                if u.nopass {
                    flags.push("nopass");
                }
                c.out.array(flags.len());
                for f in flags {
                    c.out.bulk_str(f);
                }
                c.out.bulk_str("passwords");
                c.out.array(u.passwords.len());
                for p in &u.passwords {
                    c.out.bulk_str(p);
                }
                c.out.bulk_str("commands");
                c.out.bulk_str("+@all");
                c.out.bulk_str("keys");
                c.out.bulk_str("~*");
                c.out.bulk_str("channels");
                c.out.bulk_str("&*");
                c.out.bulk_str("selectors");
                c.out.array(0);
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
        _ => help_reply(
            &mut c.out,
            "ACL",
            &[
                "SETUSER <username> <attribute> [<attribute> ...]",
                "    Create or modify a user (a tenant) with the specified attributes.",
                "DELUSER <username> [<username> ...]",
                "    Delete a list of users, their keys, and close their connections.",
                "GETUSER <username>",
                "    Get the user's details.",
                "USERS",
                "    List all the registered usernames.",
                "LIST",
                "    Show users details in config file format.",
                "WHOAMI",
                "    Return the current connection username.",
            ],
        ),
    }
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
        ("predicted_miss_ratio_at_target", opt(predicted_at_target)),
        (
            "working_set_bytes",
            format!("{}", view.working_set_bytes.round() as u64),
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
    // A tenant other than default sees only itself.
    if !name.is_empty() && c.tenant != 0 && name != c.user && sub != "help" {
        return noperm(c, &format!("tenant|{sub}"));
    }
    match sub {
        "set" => {
            if !admin_only(c, "tenant|set") {
                return;
            }
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
                .filter(|u| c.tenant == 0 || u.id == c.tenant)
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
