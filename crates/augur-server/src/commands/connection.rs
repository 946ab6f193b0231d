//! Connection commands: PING, ECHO, HELLO, AUTH, QUIT, SELECT, RESET and CLIENT. Mirrors
//! Redis's networking.c (PING, ECHO and SELECT: server.c and db.c).

use super::{arity_error, c_str, eq, lossy, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGPASS};
use crate::resp::{parse_i64, Args};
use crate::state::{Shared, REDIS_COMPAT_VERSION};
use std::sync::atomic::Ordering::Relaxed;

pub(super) fn ping_command(c: &mut Client, args: Args<'_>) {
    if args.len() <= 2 && c.pubsub.is_some() && !c.out.resp3 {
        // A RESP2 connection in Pub/Sub mode can only read arrays: ["pong", arg or ""].
        c.out.array(2);
        c.out.bulk(b"pong");
        return c.out.bulk(if args.len() == 2 { args.get(1) } else { b"" });
    }
    match args.len() {
        1 => c.out.simple("PONG"),
        2 => c.out.bulk(args.get(1)),
        _ => arity_error(&mut c.out, "ping"),
    }
}

pub(super) fn echo_command(c: &mut Client, args: Args<'_>) {
    c.out.bulk(args.get(1))
}

pub(super) fn quit_command(c: &mut Client) {
    c.out.ok();
    c.close_after_reply = true;
}

pub(super) fn select_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    match parse_i64(args.get(1)).and_then(|n| i32::try_from(n).ok()) {
        None => c.out.error(ERR_NOT_INT),
        Some(n) if n < 0 || n as usize >= shared.store.databases() => {
            c.out.error("ERR DB index is out of range")
        }
        Some(n) => {
            c.db = n as u8;
            c.meta.db.store(c.db, Relaxed);
            c.out.ok();
        }
    }
}

/// Authenticates as `user` (an ACL user, i.e. a tenant): on success the connection's
/// keyspace becomes that tenant's (or its `tenant:` target's) and its permissions the
/// user's. A failure is logged in ACL LOG (reason `auth`, object the command's name).
fn check_password(shared: &Shared, c: &mut Client, cmd: &[u8], user: &[u8], pass: &[u8]) -> bool {
    let name = lossy(user).into_owned();
    let Some(u) = shared.tenants.get(&name).filter(|u| u.password_ok(pass)) else {
        let context = if c.multi.is_some() {
            "multi"
        } else {
            "toplevel"
        };
        super::tenant::log_denial(shared, c, "auth", context, cmd.to_vec(), Some(name));
        return false;
    };
    c.authenticated = true;
    let keyspace = shared.tenants.keyspace_of(&u);
    if c.tenant != keyspace {
        // Subscriptions belong to the tenant that made them (see crate::pubsub).
        c.pubsub = None;
    }
    c.tenant = keyspace;
    *c.meta.user.lock() = u.name.clone();
    c.attach_db_map(shared);
    c.user = u.name;
    c.meta.tenant.store(c.tenant, Relaxed);
    c.meta.user_id.store(u.id, Relaxed);
    c.meta.acl_state.fetch_or(crate::state::ACL_DIRTY, Relaxed);
    true
}

pub(super) fn auth_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    if args.len() > 3 {
        return c.out.error(ERR_SYNTAX);
    }
    let (user, pass) = if args.len() == 2 {
        if shared.tenants.get("default").is_some_and(|u| u.nopass) {
            return c.out.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        }
        (&b"default"[..], args.get(1))
    } else {
        (args.get(1), args.get(2))
    };
    if check_password(shared, c, args.get(0), user, pass) {
        c.out.ok();
    } else {
        tracing::debug!(client = c.meta.id, "AUTH failed");
        c.out.error(ERR_WRONGPASS);
    }
}

/// Redis's validateClientName: printable ASCII without spaces.
pub(super) fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

pub(super) const ERR_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

pub(super) fn hello_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    let mut ver = None;
    if args.len() >= 2 {
        match parse_i64(args.get(1)) {
            None => {
                return c
                    .out
                    .error("ERR Protocol version is not an integer or out of range")
            }
            Some(v) if !(2..=3).contains(&v) => {
                return c.out.error("NOPROTO unsupported protocol version")
            }
            Some(v) => ver = Some(v),
        }
    }
    let mut auth = None;
    let mut name = None;
    let mut j = 2;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = args.get(j);
        if eq(opt, "auth") && more >= 2 {
            auth = Some((args.get(j + 1), args.get(j + 2)));
            j += 2;
        } else if eq(opt, "setname") && more >= 1 {
            let n = args.get(j + 1);
            if !valid_client_name(n) {
                return c.out.error(ERR_CLIENT_NAME);
            }
            name = Some(n);
            j += 1;
        } else {
            return c.out.error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                lossy(c_str(opt))
            ));
        }
        j += 1;
    }
    if let Some((user, pass)) = auth {
        if !check_password(shared, c, args.get(0), user, pass) {
            return c.out.error(ERR_WRONGPASS);
        }
    }
    if c.auth_required(shared) {
        return c.out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(n) = name {
        *c.meta.name.lock() = n.to_vec();
    }
    if let Some(v) = ver {
        c.out.resp3 = v == 3;
        c.meta.resp.store(v as u8, Relaxed);
    }
    let out = &mut c.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_COMPAT_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if out.resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(c.meta.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

/// RESET (networking.c `clearClientConnectionState`): ends any transaction and its
/// WATCHes, selects database 0, returns to RESP2, drops the name, and authenticates the
/// connection as the `default` user again (unauthenticated if it needs a password).
pub(super) fn reset_command(shared: &Shared, c: &mut Client) {
    shared.tracking.disable(&c.meta, c.tenant);
    c.multi = None;
    super::multi::unwatch_all(shared, c);
    c.pubsub = None;
    c.db = 0;
    c.meta.db.store(0, Relaxed);
    c.out.resp3 = false;
    c.meta.resp.store(2, Relaxed);
    c.meta.name.lock().clear();
    c.tenant = 0;
    c.attach_db_map(shared);
    c.user = "default".to_string();
    *c.meta.user.lock() = c.user.clone();
    c.meta.tenant.store(0, Relaxed);
    // CLIENT REPLY, CLIENT NO-EVICT and MONITOR end too (7.0's clearClientConnectionState).
    c.reply = 0;
    c.meta.no_evict.store(false, Relaxed);
    c.monitor = None;
    c.meta.user_id.store(0, Relaxed);
    c.meta.acl_state.fetch_or(crate::state::ACL_DIRTY, Relaxed);
    c.authenticated = !shared.pass_required.load(Relaxed);
    c.out.simple("RESET");
}
