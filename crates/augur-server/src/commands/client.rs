//! CLIENT and MONITOR. Mirrors Redis 7.0's networking.c (`clientCommand`,
//! `catClientInfoString`, `getClientType`, CLIENT REPLY's flags in `resetClient` and
//! `prepareClientToWrite`, CLIENT PAUSE's `pauseClients`) and replication.c /
//! server.c for MONITOR (see [`crate::monitor`]).

use super::connection::{valid_client_name, ERR_CLIENT_NAME};
use super::{eq, help_reply, lossy, subcommand, Client, ERR_NOT_INT, ERR_SYNTAX};
use crate::cmdtable::{self, Cmd, CommandSpec, ADMIN};
use crate::monitor::Origin;
use crate::resp::{parse_i64, Args};
use crate::state::{flag, now_ms, ClientMeta, Shared};
use crate::tracking;
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// CLIENT REPLY OFF (CLIENT_REPLY_OFF).
pub const REPLY_OFF: u8 = 1;
/// The reply of the command being run is dropped (CLIENT_REPLY_SKIP).
pub const REPLY_SKIP: u8 = 2;
/// CLIENT REPLY SKIP was just run: the next command's reply is dropped
/// (CLIENT_REPLY_SKIP_NEXT).
pub const REPLY_SKIP_NEXT: u8 = 4;

/// After a command under CLIENT REPLY OFF / SKIP: drops what it wrote since `mark`,
/// unless it is Pub/Sub output (Redis writes those with CLIENT_PUSHING, which REPLY OFF
/// does not silence), then moves SKIP_NEXT to SKIP as `resetClient` does.
pub(super) fn filter_reply(c: &mut Client, mark: usize, args: Args<'_>) {
    if c.reply & (REPLY_OFF | REPLY_SKIP) != 0 && !is_pubsub_push(args.get(0)) {
        c.out.buf.truncate(mark);
    }
    c.reply &= !REPLY_SKIP;
    if c.reply & REPLY_SKIP_NEXT != 0 {
        c.reply = (c.reply & !REPLY_SKIP_NEXT) | REPLY_SKIP;
    }
}

/// Commands whose whole output is Pub/Sub confirmations (pushes in Redis's sense).
fn is_pubsub_push(name: &[u8]) -> bool {
    [
        "subscribe",
        "psubscribe",
        "ssubscribe",
        "unsubscribe",
        "punsubscribe",
        "sunsubscribe",
    ]
    .iter()
    .any(|n| eq(name, n))
}

/// The code CLIENT LIST's `cmd=` is kept as: the command's index, and for a container
/// the subcommand's index + 1 in the high bits (so `client|info`, as Redis's
/// `lastcmd->fullname`).
pub(super) fn cmd_code(spec: &'static CommandSpec, args: Args<'_>) -> u32 {
    let mut code = spec.cmd as u32;
    if !spec.subcommands.is_empty() && args.len() >= 2 {
        if let Some(i) = spec
            .subcommands
            .iter()
            .position(|s| s.short().as_bytes().eq_ignore_ascii_case(args.get(1)))
        {
            code |= (i as u32 + 1) << 16;
        }
    }
    code
}

fn cmd_name(code: u32) -> &'static str {
    let Some(spec) = cmdtable::COMMANDS.get((code & 0xffff) as usize) else {
        return "NULL";
    };
    match (code >> 16) as usize {
        0 => spec.name,
        i => spec.subcommands.get(i - 1).map_or(spec.name, |s| s.name),
    }
}

/// Whether `spec` (with its subcommand) is an admin command, which MONITOR never shows.
fn is_admin(spec: &'static CommandSpec, args: Args<'_>) -> bool {
    if spec.flags & ADMIN != 0 {
        return true;
    }
    !spec.subcommands.is_empty()
        && args.len() >= 2
        && spec.sub(args.get(1)).is_some_and(|s| s.flags & ADMIN != 0)
}

/// Shows a command the client ran to the MONITORs (replicationFeedMonitors), with the
/// secrets of AUTH and HELLO redacted as authCommand and helloCommand do.
pub(super) fn feed_monitors(
    shared: &Shared,
    c: &Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    if !shared.monitors.active() || is_admin(spec, args) {
        return;
    }
    let redact = crate::slowlog::redacted(spec, args);
    shared
        .monitors
        .feed(c.tenant, c.db, Origin::Client(&c.meta), args, redact);
}

/// Shows a command a Lua script ran (`[db lua]`).
pub(super) fn feed_script_monitors(
    shared: &Shared,
    c: &Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    if is_admin(spec, args) {
        return;
    }
    shared
        .monitors
        .feed(c.tenant, c.db, Origin::Lua, args, |_| false);
}

/// MONITOR (replication.c's monitorCommand): from now on the connection receives every
/// command its tenant runs (every tenant's, for the default user).
pub(super) fn monitor_command(shared: &Shared, c: &mut Client) {
    if c.monitor.is_some() {
        // Already a monitor: Redis ignores it silently.
        return;
    }
    c.monitor = Some(Box::new(shared.monitors.register(c.meta.clone(), c.tenant)));
    c.out.ok();
}

pub(super) fn client_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "id" => c.out.int(c.meta.id as i64),
        "setname" => {
            let n = args.get(2);
            if !valid_client_name(n) {
                return c.out.error(ERR_CLIENT_NAME);
            }
            *c.meta.name.lock() = n.to_vec();
            c.out.ok();
        }
        "getname" => {
            let name = c.meta.name.lock().clone();
            if name.is_empty() {
                c.out.null()
            } else {
                c.out.bulk(&name)
            }
        }
        "list" => list(shared, c, args),
        "info" => {
            let mut text = String::new();
            client_line(&c.meta, Some((c, args)), &mut text);
            text.push('\n');
            c.out.verbatim(text.as_bytes());
        }
        "kill" => kill(shared, c, args),
        "reply" => {
            let mode = args.get(2);
            if eq(mode, "on") {
                c.reply &= !(REPLY_SKIP | REPLY_OFF | REPLY_SKIP_NEXT);
                c.out.ok();
            } else if eq(mode, "off") {
                c.reply |= REPLY_OFF;
            } else if eq(mode, "skip") {
                if c.reply & REPLY_OFF == 0 {
                    c.reply |= REPLY_SKIP_NEXT;
                }
            } else {
                c.out.error(ERR_SYNTAX)
            }
        }
        "pause" => pause(shared, c, args),
        "unblock" => unblock(shared, c, args),
        "unpause" => {
            shared.unpause_clients();
            c.out.ok();
        }
        "setinfo" => {
            let attr = args.get(2);
            let val = args.get(3);
            let slot = if eq(attr, "lib-name") {
                &c.meta.lib_name
            } else if eq(attr, "lib-ver") {
                &c.meta.lib_ver
            } else {
                return c
                    .out
                    .error(&format!("ERR Unrecognized option '{}'", lossy(attr)));
            };
            if !valid_client_name(val) {
                return c.out.error(&format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    lossy(attr)
                ));
            }
            *slot.lock() = val.to_vec();
            c.out.ok();
        }
        "no-evict" => {
            if eq(args.get(2), "on") {
                c.meta.no_evict.store(true, Relaxed);
                c.out.ok()
            } else if eq(args.get(2), "off") {
                c.meta.no_evict.store(false, Relaxed);
                c.out.ok()
            } else {
                c.out.error(ERR_SYNTAX)
            }
        }
        "tracking" => tracking_command(shared, c, args),
        "caching" => caching_command(c, args),
        "getredir" => {
            let t = &c.meta.tracking;
            if t.flags() & tracking::ON != 0 {
                c.out.int(t.redirect.load(Relaxed) as i64)
            } else {
                c.out.int(-1)
            }
        }
        "trackinginfo" => trackinginfo(c),
        "no-touch" => {
            if eq(args.get(2), "on") || eq(args.get(2), "off") {
                c.out.ok()
            } else {
                c.out.error(ERR_SYNTAX)
            }
        }
        _ => help_reply(
            &mut c.out,
            "CLIENT",
            &[
                "ID",
                "    Return the ID of the current connection.",
                "INFO",
                "    Return information about the current client connection.",
                "KILL <ip:port>",
                "    Kill connection made from <ip:port>.",
                "KILL <option> <value> [<option> <value> [...]]",
                "    Kill connections. Options are:",
                "    * ADDR (<ip:port>|<unixsocket>:0)",
                "      Kill connections made from the specified address",
                "    * LADDR (<ip:port>|<unixsocket>:0)",
                "      Kill connections made to specified local address",
                "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
                "      Kill connections by type.",
                "    * USER <username>",
                "      Kill connections authenticated by <username>.",
                "    * SKIPME (YES|NO)",
                "      Skip killing current connection (default: yes).",
                "    * ID <client-id>",
                "      Kill connections by client id.",
                "    * MAXAGE <maxage>",
                "      Kill connections older than the specified age.",
                "LIST [options ...]",
                "    Return information about client connections. Options:",
                "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
                "      Return clients of specified type.",
                "UNPAUSE",
                "    Stop the current client pause, resuming traffic.",
                "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                "    Unblock the specified blocked client.",
                "PAUSE <timeout> [WRITE|ALL]",
                "    Suspend all, or just write, clients for <timeout> milliseconds.",
                "REPLY (ON|OFF|SKIP)",
                "    Control the replies sent to the current connection.",
                "SETNAME <name>",
                "    Assign the name <name> to the current connection.",
                "GETNAME",
                "    Return the name of the current connection.",
                "SETINFO <LIB-NAME|LIB-VER> <value>",
                "    Set client library name or version (Redis 7.2's; redis-py sends it).",
                "NO-EVICT (ON|OFF)",
                "    Protect current client connection from eviction.",
                "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
                "         [OPTIN] [OPTOUT] [NOLOOP]",
                "    Control server assisted client side caching.",
                "CACHING (YES|NO)",
                "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
                "GETREDIR",
                "    Return the client ID we are redirecting to when tracking is enabled.",
                "TRACKINGINFO",
                "    Report tracking status for the current connection.",
                "NO-TOUCH (ON|OFF)",
                "    Accepted; Augur's access tracking is not changed by it.",
            ],
        ),
    }
}

/// CLIENT TRACKING (ON|OFF) [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT]
/// [NOLOOP] (networking.c clientCommand): the options' checks in Redis's order.
fn tracking_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    let mut redirect: i64 = 0;
    let mut flags = 0u32;
    let mut prefixes: Vec<&[u8]> = Vec::new();
    let mut j = 3;
    while j < args.len() {
        let a = args.get(j);
        let more = j + 1 < args.len();
        if eq(a, "redirect") && more {
            j += 1;
            if redirect != 0 {
                return c
                    .out
                    .error("ERR A client can only redirect to a single other client");
            }
            let Some(id) = parse_i64(args.get(j)) else {
                return c.out.error(ERR_NOT_INT);
            };
            if id <= 0 || !shared.tracking.client_exists(id as u64) {
                return c
                    .out
                    .error("ERR The client ID you want redirect to does not exist");
            }
            redirect = id;
        } else if eq(a, "bcast") {
            flags |= tracking::BCAST;
        } else if eq(a, "optin") {
            flags |= tracking::OPTIN;
        } else if eq(a, "optout") {
            flags |= tracking::OPTOUT;
        } else if eq(a, "noloop") {
            flags |= tracking::NOLOOP;
        } else if eq(a, "prefix") && more {
            j += 1;
            prefixes.push(args.get(j));
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let mode = args.get(2);
    if eq(mode, "on") {
        let cur = c.meta.tracking.flags();
        if flags & tracking::BCAST == 0 && !prefixes.is_empty() {
            return c
                .out
                .error("ERR PREFIX option requires BCAST mode to be enabled");
        }
        if cur & tracking::ON != 0 && (cur & tracking::BCAST != 0) != (flags & tracking::BCAST != 0)
        {
            return c.out.error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
        if flags & tracking::BCAST != 0 && flags & (tracking::OPTIN | tracking::OPTOUT) != 0 {
            return c
                .out
                .error("ERR OPTIN and OPTOUT are not compatible with BCAST");
        }
        if flags & tracking::OPTIN != 0 && flags & tracking::OPTOUT != 0 {
            return c
                .out
                .error("ERR You can't specify both OPTIN mode and OPTOUT mode");
        }
        if (flags & tracking::OPTIN != 0 && cur & tracking::OPTOUT != 0)
            || (flags & tracking::OPTOUT != 0 && cur & tracking::OPTIN != 0)
        {
            return c.out.error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
        if flags & tracking::BCAST != 0 {
            if let Some(e) = shared.tracking.prefix_collision(&c.meta, &prefixes) {
                return c.out.error(&e);
            }
        }
        shared
            .tracking
            .enable(&c.meta, c.tenant, redirect as u64, flags, &prefixes);
        shared.store.set_key_changes(true);
    } else if eq(mode, "off") {
        shared.tracking.disable(&c.meta, c.tenant);
    } else {
        return c.out.error(ERR_SYNTAX);
    }
    c.out.ok();
}

/// CLIENT CACHING (YES|NO): whether the next command's keys are remembered in OPTIN /
/// OPTOUT mode.
fn caching_command(c: &mut Client, args: Args<'_>) {
    let t = &c.meta.tracking;
    let f = t.flags();
    if f & tracking::ON == 0 {
        return c.out.error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    }
    let opt = args.get(2);
    if eq(opt, "yes") {
        if f & tracking::OPTIN == 0 {
            return c.out.error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
    } else if eq(opt, "no") {
        if f & tracking::OPTOUT == 0 {
            return c.out.error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
    } else {
        return c.out.error(ERR_SYNTAX);
    }
    t.flags.fetch_or(tracking::CACHING, Relaxed);
    c.out.ok();
}

/// CLIENT TRACKINGINFO: flags (a set in RESP3), redirect (-1 when off), prefixes.
fn trackinginfo(c: &mut Client) {
    let t = &c.meta.tracking;
    let f = t.flags();
    let mut names: Vec<&str> = vec![if f & tracking::ON != 0 { "on" } else { "off" }];
    if f & tracking::BCAST != 0 {
        names.push("bcast");
    }
    if f & tracking::OPTIN != 0 {
        names.push("optin");
        if f & tracking::CACHING != 0 {
            names.push("caching-yes");
        }
    }
    if f & tracking::OPTOUT != 0 {
        names.push("optout");
        if f & tracking::CACHING != 0 {
            names.push("caching-no");
        }
    }
    if f & tracking::NOLOOP != 0 {
        names.push("noloop");
    }
    if f & tracking::BROKEN_REDIR != 0 {
        names.push("broken_redirect");
    }
    c.out.map(3);
    c.out.bulk(b"flags");
    c.out.set(names.len());
    for n in names {
        c.out.bulk(n.as_bytes());
    }
    c.out.bulk(b"redirect");
    if f & tracking::ON != 0 {
        c.out.int(t.redirect.load(Relaxed) as i64);
    } else {
        c.out.int(-1);
    }
    c.out.bulk(b"prefixes");
    let prefixes = t.prefixes.lock().clone();
    c.out.array(prefixes.len());
    for p in &prefixes {
        c.out.bulk(p);
    }
}

/// Redis's client types (getClientType): MONITORs are replicas in Redis but are
/// exposed as normal clients; Augur has no masters or replicas.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

fn client_type_by_name(t: &[u8]) -> Option<ClientType> {
    if eq(t, "normal") {
        Some(ClientType::Normal)
    } else if eq(t, "slave") || eq(t, "replica") {
        Some(ClientType::Replica)
    } else if eq(t, "pubsub") {
        Some(ClientType::Pubsub)
    } else if eq(t, "master") {
        Some(ClientType::Master)
    } else {
        None
    }
}

fn client_type(m: &ClientMeta) -> ClientType {
    if is_pubsub(m) {
        ClientType::Pubsub
    } else {
        ClientType::Normal
    }
}

/// CLIENT LIST [TYPE type] | [ID id ...] (networking.c: one filter at a time).
fn list(shared: &Shared, c: &mut Client, args: Args<'_>) {
    let mut ids: Option<Vec<u64>> = None;
    let mut ty: Option<ClientType> = None;
    if args.len() == 4 && eq(args.get(2), "type") {
        match client_type_by_name(args.get(3)) {
            Some(t) => ty = Some(t),
            None => {
                return c
                    .out
                    .error(&format!("ERR Unknown client type '{}'", lossy(args.get(3))))
            }
        }
    } else if args.len() > 3 && eq(args.get(2), "id") {
        let mut v = Vec::new();
        for a in args.iter().skip(3) {
            match parse_i64(a) {
                Some(n) if n > 0 => v.push(n as u64),
                _ => return c.out.error("ERR Invalid client ID"),
            }
        }
        ids = Some(v);
    } else if args.len() != 2 {
        return c.out.error(ERR_SYNTAX);
    }
    let mut clients: Vec<Arc<ClientMeta>> = shared.clients.lock().values().cloned().collect();
    clients.sort_by_key(|m| m.id);
    let mut text = String::new();
    for m in clients {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&m.id)) {
            continue;
        }
        if ty.is_some_and(|t| t != client_type(&m)) {
            continue;
        }
        let me = (m.id == c.meta.id).then_some((&*c, args));
        client_line(&m, me, &mut text);
        text.push('\n');
    }
    c.out.verbatim(text.as_bytes());
}

/// CLIENT KILL ip:port | CLIENT KILL <filter> <value> ... (networking.c). Killed
/// connections leave the client registry at once (as freeClient does), and their tasks
/// are woken to close their sockets; the caller itself closes after this reply.
fn kill(shared: &Shared, c: &mut Client, args: Args<'_>) {
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut user: Option<String> = None;
    let mut ty: Option<ClientType> = None;
    let mut id: u64 = 0;
    let mut maxage: Option<u64> = None;
    let mut skipme = true;
    let old_form = args.len() == 3;
    if old_form {
        addr = Some(args.get(2));
        skipme = false;
    } else {
        let mut i = 2;
        while i < args.len() {
            let more = i + 1 < args.len();
            let opt = args.get(i);
            if !more {
                return c.out.error(ERR_SYNTAX);
            }
            let v = args.get(i + 1);
            if eq(opt, "id") {
                match parse_i64(v) {
                    Some(n) if n >= 1 => id = n as u64,
                    _ => return c.out.error("ERR client-id should be greater than 0"),
                }
            } else if eq(opt, "type") {
                match client_type_by_name(v) {
                    Some(t) => ty = Some(t),
                    None => {
                        return c
                            .out
                            .error(&format!("ERR Unknown client type '{}'", lossy(v)))
                    }
                }
            } else if eq(opt, "addr") {
                addr = Some(v);
            } else if eq(opt, "laddr") {
                laddr = Some(v);
            } else if eq(opt, "user") {
                match shared.tenants.get(&lossy(v)) {
                    Some(u) => user = Some(u.name),
                    None => return c.out.error(&format!("ERR No such user '{}'", lossy(v))),
                }
            } else if eq(opt, "skipme") {
                if eq(v, "yes") {
                    skipme = true;
                } else if eq(v, "no") {
                    skipme = false;
                } else {
                    return c.out.error(ERR_SYNTAX);
                }
            } else if eq(opt, "maxage") {
                // Redis 7.4's filter: connections older than this many seconds.
                match parse_i64(v) {
                    Some(n) if n >= 0 => maxage = Some(n as u64),
                    _ => return c.out.error("ERR syntax error"),
                }
            } else {
                return c.out.error(ERR_SYNTAX);
            }
            i += 2;
        }
    }
    let mut killed = 0;
    let mut close_me = false;
    {
        let mut clients = shared.clients.lock();
        let mut victims = Vec::new();
        for m in clients.values() {
            if addr.is_some_and(|a| m.addr.to_string().as_bytes() != a) {
                continue;
            }
            if laddr.is_some_and(|a| m.laddr.to_string().as_bytes() != a) {
                continue;
            }
            if ty.is_some_and(|t| t != client_type(m)) {
                continue;
            }
            if id != 0 && m.id != id {
                continue;
            }
            if user.as_ref().is_some_and(|u| *m.user.lock() != *u) {
                continue;
            }
            if maxage.is_some_and(|a| m.age_secs() < a) {
                continue;
            }
            if m.id == c.meta.id {
                if skipme {
                    continue;
                }
                close_me = true;
            } else {
                victims.push(m.id);
            }
            killed += 1;
        }
        for v in victims {
            if let Some(m) = clients.remove(&v) {
                m.close();
            }
        }
    }
    if old_form {
        if killed == 0 {
            c.out.error("ERR No such client");
        } else {
            c.out.ok();
        }
    } else {
        c.out.int(killed);
    }
    if close_me {
        c.close_after_reply = true;
    }
}

/// CLIENT PAUSE timeout [WRITE|ALL].
fn pause(shared: &Shared, c: &mut Client, args: Args<'_>) {
    if args.len() > 4 {
        return super::arity_error(&mut c.out, "client|pause");
    }
    let mut all = true;
    if args.len() == 4 {
        if eq(args.get(3), "write") {
            all = false;
        } else if !eq(args.get(3), "all") {
            return c.out.error("ERR CLIENT PAUSE mode must be WRITE or ALL");
        }
    }
    // getTimeoutFromObjectOrReply, in milliseconds.
    let Some(ms) = parse_i64(args.get(2)) else {
        return c.out.error("ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return c.out.error("ERR timeout is negative");
    }
    let now = now_ms();
    let Some(until) = (ms as u64)
        .checked_add(now)
        .filter(|u| *u < i64::MAX as u64)
    else {
        return c.out.error("ERR timeout is out of range");
    };
    if ms > 0 {
        shared.pause_clients(until, all, now);
    }
    c.out.ok();
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends a blocked client's wait as its timeout would
/// (a null reply) or with the UNBLOCKED error; 1 if it was blocked, else 0.
fn unblock(shared: &Shared, c: &mut Client, args: Args<'_>) {
    if args.len() > 4 {
        return c.out.error(
            "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.",
        );
    }
    let error = match args.len() {
        4 if eq(args.get(3), "timeout") => false,
        4 if eq(args.get(3), "error") => true,
        4 => {
            return c
                .out
                .error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        }
        _ => false,
    };
    let Some(id) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    let blocking = &shared.blocking;
    let mut reg = blocking.lock();
    let done = u64::try_from(id)
        .ok()
        .and_then(|id| reg.client(id))
        .is_some_and(|w| {
            let outcome = if error {
                crate::blocking::Outcome::Failed(
                    "UNBLOCKED client unblocked via CLIENT UNBLOCK".into(),
                )
            } else {
                crate::blocking::Outcome::TimedOut
            };
            blocking.finish(&mut reg, &w, outcome)
        });
    c.out.int(done as i64);
}

/// Whether the connection is in Pub/Sub mode (CLIENT_PUBSUB: any subscription).
fn is_pubsub(m: &ClientMeta) -> bool {
    m.sub.load(Relaxed) + m.psub.load(Relaxed) + m.ssub.load(Relaxed) > 0
}

/// One CLIENT LIST line, in Redis 7.0's field order (networking.c
/// `catClientInfoString`), then Redis 7.2's lib-name and lib-ver (CLIENT SETINFO).
/// `me` is the client running the command, and the command's arguments, when `m` is its
/// own connection: its figures are taken live rather than from what it last published
/// (`argv-mem` is the running command's, as networking.c's argv_len_sum).
pub(super) fn client_line(m: &ClientMeta, me: Option<(&Client, Args<'_>)>, out: &mut String) {
    let s = &m.stats;
    let bits = s.flags.load(Relaxed);
    let mut flags = String::new();
    if bits & flag::MONITOR != 0 {
        flags.push('O');
    }
    if is_pubsub(m) {
        flags.push('P');
    }
    if m.blocked.load(Relaxed) {
        flags.push('b');
    }
    if bits & flag::MULTI != 0 {
        flags.push('x');
    }
    let tf = m.tracking.flags();
    if tf & tracking::ON != 0 {
        flags.push('t');
    }
    if tf & tracking::BROKEN_REDIR != 0 {
        flags.push('R');
    }
    if tf & tracking::BCAST != 0 {
        flags.push('B');
    }
    if m.dirty_cas.load(Relaxed) {
        flags.push('d');
    }
    if bits & flag::CLOSE_AFTER_REPLY != 0 {
        flags.push('c');
    }
    if m.no_evict.load(Relaxed) {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let (multi, multi_mem, argv_mem) = match me {
        Some((c, args)) => (
            c.multi.as_ref().map_or(-1, |q| q.len() as i64),
            c.multi.as_ref().map_or(0, |q| q.mem()),
            args.iter().map(<[u8]>::len).sum(),
        ),
        None => (
            s.multi_plus1.load(Relaxed) as i64 - 1,
            s.multi_mem.load(Relaxed) as usize,
            0,
        ),
    };
    let obl = s.obl.load(Relaxed);
    // MONITOR lines, Pub/Sub messages and invalidations queued for the connection.
    let omem = s.omem.load(Relaxed) + m.obuf.queued() as u64;
    // Redis's `redir=`: the tracking redirect (0: none), -1 with tracking off.
    let redir = if tf & tracking::ON != 0 {
        m.tracking.redirect.load(Relaxed) as i64
    } else {
        -1
    };
    let events = if obl > 0 { "rw" } else { "r" };
    let _ = write!(
        out,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
        m.id,
        m.addr,
        m.laddr,
        m.fd,
        lossy(&m.name.lock()),
        m.age_secs(),
        m.idle_secs(),
        flags,
        m.db.load(Relaxed),
        m.sub.load(Relaxed),
        m.psub.load(Relaxed),
        m.ssub.load(Relaxed),
        multi,
        s.qbuf.load(Relaxed),
        s.qbuf_free.load(Relaxed),
        argv_mem,
        multi_mem,
        s.rbs.load(Relaxed),
        s.rbp.load(Relaxed),
        obl,
        u64::from(omem > 0),
        omem,
        s.tot_mem.load(Relaxed) + argv_mem as u64,
        events,
        cmd_name(m.last_cmd.load(Relaxed)),
        m.user.lock(),
        redir,
        m.resp.load(Relaxed),
        lossy(&m.lib_name.lock()),
        lossy(&m.lib_ver.lock()),
    );
}

/// Whether CLIENT PAUSE holds this command now (server.c processCommand): every
/// command under PAUSE ALL; under PAUSE WRITE, those that may write or replicate by
/// [`command_flags`] (`write` and `may-replicate` commands and subcommands, scripts
/// that may write, an EXEC with such a command queued).
pub fn paused_for(shared: &Shared, c: &Client, args: Args<'_>, now: u64) -> bool {
    let Some(all) = shared.pause.active(now) else {
        return false;
    };
    if all {
        return true;
    }
    let mut buf = [0u8; crate::cmdtable::MAX_NAME_LEN];
    let Some(spec) = cmdtable::upper(args.get(0), &mut buf).and_then(cmdtable::lookup) else {
        return false;
    };
    let may_write = cmdtable::WRITE | cmdtable::MAY_REPLICATE;
    // FUNCTION LOAD / DELETE / FLUSH / RESTORE are `write` subcommands.
    command_flags(shared, c.tenant, spec, args) & may_write != 0
        || (spec.cmd == Cmd::Exec && c.multi.as_ref().is_some_and(|m| m.flags() & may_write != 0))
}

/// A command's flags as server.c's getCommandFlags sees them: its subcommand's, and
/// for EVAL / EVALSHA / FCALL the script's (eval.c evalGetCommandFlags,
/// scriptFlagsToCmdFlags): a script with no shebang, or one not found (an EVALSHA not
/// cached, an FCALL of no function), may replicate; one with flags writes unless it
/// declares `no-writes`, and is `denyoom` unless `no-writes` or `allow-oom`.
pub fn command_flags(
    shared: &Shared,
    tenant: augur_store::TenantId,
    spec: &'static crate::cmdtable::CommandSpec,
    args: Args<'_>,
) -> u32 {
    use crate::scripting::{FLAG_ALLOW_OOM, FLAG_EVAL_COMPAT_MODE, FLAG_NO_WRITES};
    let base = if !spec.subcommands.is_empty() && args.len() >= 2 {
        spec.sub(args.get(1)).map_or(spec.flags, |s| s.flags)
    } else {
        spec.flags
    };
    if !matches!(spec.cmd, Cmd::Eval | Cmd::EvalSha | Cmd::FCall) || args.len() < 2 {
        return base;
    }
    let unknown = base | cmdtable::MAY_REPLICATE;
    // A script's flags; the engines' locks are only tried (a running script holds them):
    // not known then, as for a script not cached.
    let script = match spec.cmd {
        Cmd::Eval => crate::scripting::extract_shebang_flags(args.get(1))
            .ok()
            .map(|f| f.0),
        Cmd::EvalSha => {
            let sha = String::from_utf8_lossy(args.get(1)).to_ascii_lowercase();
            shared
                .scripting
                .engine
                .try_lock()
                .and_then(|e| e.scripts.get(&sha).map(|s| s.flags))
        }
        _ => shared
            .scripting
            .functions
            .try_lock()
            .and_then(|f| f.find(tenant, args.get(1)).map(|i| i.flags)),
    };
    let Some(flags) = script else {
        return unknown;
    };
    if flags & FLAG_EVAL_COMPAT_MODE != 0 {
        return unknown;
    }
    let mut out = base & !(cmdtable::WRITE | cmdtable::DENYOOM | cmdtable::MAY_REPLICATE);
    if flags & (FLAG_ALLOW_OOM | FLAG_NO_WRITES) == 0 {
        out |= cmdtable::DENYOOM;
    }
    if flags & FLAG_NO_WRITES == 0 {
        out |= cmdtable::WRITE;
    }
    out
}

/// `maxmemory-clients` (networking.c `getClientEvictionLimit` and `evictClients`):
/// when the connections together hold more than the limit, the ones holding the most
/// are closed until they fit, sparing CLIENT NO-EVICT ones. Augur checks once a second
/// from the cron, not after every command as Redis does.
pub fn evict_clients(shared: &Shared) {
    let limit = {
        let cfg = shared.config.read();
        client_eviction_limit(cfg.maxmemory_clients, cfg.maxmemory)
    };
    if limit == 0 {
        return;
    }
    let mut clients: Vec<Arc<ClientMeta>> = shared.clients.lock().values().cloned().collect();
    let mut total: u64 = clients
        .iter()
        .filter(|m| !m.no_evict.load(Relaxed))
        .map(|m| m.stats.tot_mem.load(Relaxed))
        .sum();
    if total <= limit {
        return;
    }
    clients.sort_by_key(|m| std::cmp::Reverse(m.stats.tot_mem.load(Relaxed)));
    for m in clients {
        if total <= limit {
            break;
        }
        if m.no_evict.load(Relaxed) {
            continue;
        }
        let mem = m.stats.tot_mem.load(Relaxed);
        tracing::info!(
            "Evicting client: id={} addr={} tot-mem={mem} (maxmemory-clients {limit})",
            m.id,
            m.addr
        );
        shared.clients.lock().remove(&m.id);
        m.close();
        shared.counters.evicted_clients.fetch_add(1, Relaxed);
        total = total.saturating_sub(mem);
    }
}

/// The limit `maxmemory-clients` sets in bytes (0: none). Negative values are a
/// percentage of `maxmemory`; a limit is never below 128 KB, as in Redis.
pub fn client_eviction_limit(maxmemory_clients: i64, maxmemory: u64) -> u64 {
    let actual = if maxmemory_clients < 0 && maxmemory > 0 {
        (maxmemory as f64 * (-maxmemory_clients) as f64 / 100.0) as u64
    } else if maxmemory_clients > 0 {
        maxmemory_clients as u64
    } else {
        return 0;
    };
    actual.max(128 * 1024)
}
