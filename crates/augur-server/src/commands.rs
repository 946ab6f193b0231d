//! Command execution. Each command writes its reply straight into the connection's
//! output buffer; keyed commands lock the key's shard once. Error texts are Redis 7.0's
//! (t_string.c, expire.c, db.c, server.c, networking.c, config.c).

use crate::cmdtable::{self, Cmd, CommandSpec, DENYOOM, NO_AUTH};
use crate::config::{ServerConfig, LIVE_PARAMS, PARAMS};
use crate::resp::{parse_i64, Args, Out};
use crate::state::{ClientMeta, Shared, REDIS_COMPAT_VERSION};
use augur_store::{glob_match, SetTtl, TtlState, WriteError};
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

const ERR_SYNTAX: &str = "ERR syntax error";
const ERR_NOT_INT: &str = "ERR value is not an integer or out of range";
const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
const ERR_TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const ERR_NOAUTH: &str = "NOAUTH Authentication required.";
const ERR_WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// One connection's command-level state.
pub struct Client {
    pub meta: Arc<ClientMeta>,
    pub db: u8,
    pub authenticated: bool,
    pub out: Out,
    /// QUIT: close once the replies so far are written.
    pub close_after_reply: bool,
    /// Commands run since the connection last reported to the shared counters.
    pub commands: u64,
}

impl Client {
    pub fn new(meta: Arc<ClientMeta>, authenticated: bool) -> Self {
        Self {
            meta,
            db: 0,
            authenticated,
            out: Out::new(),
            close_after_reply: false,
            commands: 0,
        }
    }

    /// Whether the connection must still authenticate before running commands.
    pub fn auth_required(&self, shared: &Shared) -> bool {
        !self.authenticated && shared.pass_required.load(Relaxed)
    }
}

/// Runs one command. `now` is the Unix time in ms used for all TTL decisions of this
/// command.
pub fn execute(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    c.commands += 1;
    let name = args.get(0);
    let mut buf = [0u8; 16];
    let spec = match cmdtable::upper(name, &mut buf).and_then(cmdtable::lookup) {
        Some(s) => s,
        None => return unknown_command(&mut c.out, args),
    };
    if !spec.arity_ok(args.len()) {
        return arity_error(&mut c.out, spec.name);
    }
    if spec.flags & NO_AUTH == 0 && c.auth_required(shared) {
        return c.out.error(ERR_NOAUTH);
    }
    if spec.flags & DENYOOM != 0 && shared.store.over_limit_for_writes() {
        return c.out.error(ERR_OOM);
    }
    c.meta.last_cmd.store(spec.cmd as u32, Relaxed);
    let key = || args.get(1);
    match spec.cmd {
        Cmd::Get => {
            let mut shard = shared.store.lock_key(key());
            match shard.get(c.db, key(), now) {
                Some(v) => c.out.bulk(v),
                None => c.out.null(),
            }
        }
        Cmd::Set => set_command(shared, c, args, now),
        Cmd::SetNx => {
            let mut shard = shared.store.lock_key(key());
            if shard.exists(c.db, key(), now) {
                c.out.int(0);
            } else {
                match shard.set(c.db, key(), args.get(2), SetTtl::Clear, now) {
                    Ok(()) => c.out.int(1),
                    Err(e) => write_error(&mut c.out, e),
                }
            }
        }
        Cmd::SetEx | Cmd::PSetEx => {
            let unit = if spec.cmd == Cmd::SetEx { 1000 } else { 1 };
            let Some(at) = expire_ms_or_reply(&mut c.out, args.get(2), unit, true, spec.name, now)
            else {
                return;
            };
            let mut shard = shared.store.lock_key(key());
            match shard.set(c.db, key(), args.get(3), SetTtl::At(at), now) {
                Ok(()) => c.out.ok(),
                Err(e) => write_error(&mut c.out, e),
            }
        }
        Cmd::GetSet => {
            let mut shard = shared.store.lock_key(key());
            let mark = c.out.buf.len();
            match shard.get(c.db, key(), now) {
                Some(v) => c.out.bulk(v),
                None => c.out.null(),
            }
            if let Err(e) = shard.set(c.db, key(), args.get(2), SetTtl::Clear, now) {
                // The old value is already in the reply; replace it with the error.
                c.out.buf.truncate(mark);
                write_error(&mut c.out, e);
            }
        }
        Cmd::GetDel => {
            let mut shard = shared.store.lock_key(key());
            match shard.get(c.db, key(), now) {
                Some(v) => {
                    c.out.bulk(v);
                    shard.delete(c.db, key(), now);
                }
                None => c.out.null(),
            }
        }
        Cmd::GetEx => getex_command(shared, c, args, now),
        Cmd::MGet => {
            let keys: Vec<&[u8]> = args.iter().skip(1).collect();
            let mut lock = shared.store.lock_keys(&keys);
            c.out.array(keys.len());
            for k in &keys {
                match lock.shard_for(k).get(c.db, k, now) {
                    Some(v) => c.out.bulk(v),
                    None => c.out.null(),
                }
            }
        }
        Cmd::MSet | Cmd::MSetNx => {
            if args.len().is_multiple_of(2) {
                return arity_error(&mut c.out, spec.name);
            }
            let keys: Vec<&[u8]> = args.iter().skip(1).step_by(2).collect();
            let mut lock = shared.store.lock_keys(&keys);
            if spec.cmd == Cmd::MSetNx
                && keys.iter().any(|k| lock.shard_for(k).exists(c.db, k, now))
            {
                return c.out.int(0);
            }
            for i in (1..args.len()).step_by(2) {
                let k = args.get(i);
                if let Err(e) = lock
                    .shard_for(k)
                    .set(c.db, k, args.get(i + 1), SetTtl::Clear, now)
                {
                    return write_error(&mut c.out, e);
                }
            }
            if spec.cmd == Cmd::MSet {
                c.out.ok()
            } else {
                c.out.int(1)
            }
        }
        Cmd::Del | Cmd::Unlink | Cmd::Exists | Cmd::Touch => {
            let mut n = 0;
            for k in args.iter().skip(1) {
                let mut shard = shared.store.lock_key(k);
                let hit = match spec.cmd {
                    Cmd::Exists => shard.exists(c.db, k, now),
                    Cmd::Touch => shard.touch(c.db, k, now),
                    _ => shard.delete(c.db, k, now),
                };
                n += hit as i64;
            }
            c.out.int(n);
        }
        Cmd::Expire | Cmd::PExpire | Cmd::ExpireAt | Cmd::PExpireAt => {
            expire_command(shared, c, spec, args, now)
        }
        Cmd::Ttl | Cmd::PTtl => {
            let state = shared.store.lock_key(key()).ttl(c.db, key(), now);
            match state {
                TtlState::Missing => c.out.int(-2),
                TtlState::Persistent => c.out.int(-1),
                TtlState::ExpiresAt(at) => {
                    let ms = at.saturating_sub(now) as i64;
                    c.out.int(if spec.cmd == Cmd::PTtl {
                        ms
                    } else {
                        (ms + 500) / 1000
                    });
                }
            }
        }
        Cmd::Persist => {
            let done = shared
                .store
                .lock_key(key())
                .set_expire(c.db, key(), None, now);
            c.out.int(done as i64);
        }
        Cmd::Type => {
            if shared.store.lock_key(key()).exists(c.db, key(), now) {
                c.out.simple("string")
            } else {
                c.out.simple("none")
            }
        }
        Cmd::Incr => incr_by(shared, c, key(), 1, now),
        Cmd::Decr => incr_by(shared, c, key(), -1, now),
        Cmd::IncrBy => match parse_i64(args.get(2)) {
            Some(n) => incr_by(shared, c, key(), n, now),
            None => c.out.error(ERR_NOT_INT),
        },
        Cmd::DecrBy => match parse_i64(args.get(2)) {
            Some(i64::MIN) => c.out.error("ERR decrement would overflow"),
            Some(n) => incr_by(shared, c, key(), -n, now),
            None => c.out.error(ERR_NOT_INT),
        },
        Cmd::IncrByFloat => incr_by_float(shared, c, args, now),
        Cmd::Append => append_command(shared, c, args, now),
        Cmd::StrLen => {
            let len = shared
                .store
                .lock_key(key())
                .get(c.db, key(), now)
                .map_or(0, |v| v.len());
            c.out.int(len as i64);
        }
        Cmd::GetRange => getrange_command(shared, c, args, now),
        Cmd::SetRange => setrange_command(shared, c, args, now),
        Cmd::Keys => {
            let keys = shared.store.keys(c.db, key(), now);
            c.out.array(keys.len());
            for k in &keys {
                c.out.bulk(k);
            }
        }
        Cmd::Scan => scan_command(shared, c, args, now),
        Cmd::RandomKey => match shared.store.random_key(c.db, now) {
            Some(k) => c.out.bulk(&k),
            None => c.out.null(),
        },
        Cmd::DbSize => c.out.int(shared.store.dbsize(c.db) as i64),
        Cmd::FlushDb | Cmd::FlushAll => {
            if args.len() > 2
                || (args.len() == 2 && !eq(args.get(1), "async") && !eq(args.get(1), "sync"))
            {
                return c.out.error(ERR_SYNTAX);
            }
            if spec.cmd == Cmd::FlushDb {
                shared.store.flushdb(c.db)
            } else {
                shared.store.flushall()
            }
            c.out.ok();
        }
        Cmd::Ping => match args.len() {
            1 => c.out.simple("PONG"),
            2 => c.out.bulk(args.get(1)),
            _ => arity_error(&mut c.out, "ping"),
        },
        Cmd::Echo => c.out.bulk(args.get(1)),
        Cmd::Hello => hello_command(shared, c, args),
        Cmd::Auth => auth_command(shared, c, args),
        Cmd::Quit => {
            c.out.ok();
            c.close_after_reply = true;
        }
        Cmd::Select => match parse_i64(args.get(1)).and_then(|n| i32::try_from(n).ok()) {
            None => c.out.error(ERR_NOT_INT),
            Some(n) if n < 0 || n as usize >= shared.store.databases() => {
                c.out.error("ERR DB index is out of range")
            }
            Some(n) => {
                c.db = n as u8;
                c.meta.db.store(c.db, Relaxed);
                c.out.ok();
            }
        },
        Cmd::Time => {
            let d = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            c.out.array(2);
            c.out.bulk(d.as_secs().to_string().as_bytes());
            c.out.bulk(d.subsec_micros().to_string().as_bytes());
        }
        Cmd::Info => {
            let text = crate::info::render(shared, args);
            c.out.verbatim(text.as_bytes());
        }
        Cmd::Config => config_command(shared, c, spec, args),
        Cmd::Command => command_command(c, spec, args),
        Cmd::Client => client_command(shared, c, spec, args),
        Cmd::Memory => memory_command(shared, c, spec, args, now),
        Cmd::Object => object_command(shared, c, spec, args, now),
        Cmd::Shutdown => {
            for a in args.iter().skip(1) {
                if !["nosave", "save", "now", "force", "abort"]
                    .iter()
                    .any(|o| eq(a, o))
                {
                    return c.out.error(ERR_SYNTAX);
                }
            }
            if args.iter().skip(1).any(|a| eq(a, "abort")) {
                return c.out.error("ERR No shutdown in progress.");
            }
            tracing::warn!("User requested shutdown...");
            // Like Redis, a successful SHUTDOWN sends no reply: the connection just closes.
            c.close_after_reply = true;
            shared.request_shutdown();
        }
    }
}

#[inline]
fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn arity_error(out: &mut Out, name: &str) {
    out.error(&format!(
        "ERR wrong number of arguments for '{name}' command"
    ));
}

fn write_error(out: &mut Out, e: WriteError) {
    match e {
        WriteError::OutOfMemory => out.error(ERR_OOM),
        WriteError::TooLarge => out.error(ERR_TOO_BIG),
    }
}

/// Like C's `%s`: a client string stops at its first NUL byte.
fn c_str(b: &[u8]) -> &[u8] {
    match memchr::memchr(0, b) {
        Some(i) => &b[..i],
        None => b,
    }
}

/// Redis 7's exact unknown-command error: the name (at most 128 bytes), then arguments in
/// quotes, each followed by a space, while the list is shorter than 128 bytes.
fn unknown_command(out: &mut Out, args: Args<'_>) {
    let name = c_str(args.get(0));
    let name = &name[..name.len().min(128)];
    let mut list: Vec<u8> = Vec::new();
    for a in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let a = c_str(a);
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend_from_slice(&a[..a.len().min(room)]);
        list.extend_from_slice(b"' ");
    }
    out.error(&format!(
        "ERR unknown command '{}', with args beginning with: {}",
        lossy(name),
        lossy(&list)
    ));
}

fn unknown_subcommand(out: &mut Out, args: Args<'_>) {
    let sub = c_str(args.get(1));
    out.error(&format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(&sub[..sub.len().min(128)]),
        lossy(args.get(0)).to_uppercase()
    ));
}

/// Resolves a container command's subcommand and checks its arity; replies and returns
/// None on error.
fn subcommand(out: &mut Out, spec: &'static CommandSpec, args: Args<'_>) -> Option<&'static str> {
    match spec.sub(args.get(1)) {
        None => {
            unknown_subcommand(out, args);
            None
        }
        Some(sub) if !cmdtable::arity_ok(sub.arity, args.len()) => {
            arity_error(out, sub.name);
            None
        }
        Some(sub) => Some(sub.short()),
    }
}

fn help_reply(out: &mut Out, container: &str, lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        out.simple(l);
    }
    out.simple("HELP");
    out.simple("    Print this help.");
}

// ---------------------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------------------

/// Flags parsed by SET and GETEX (Redis's parseExtendedStringArgumentsOrReply).
#[derive(Default)]
struct ExtFlags {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// (argument, unit ms per unit, relative)
    expire: Option<(usize, u64, bool)>,
}

fn parse_ext_flags(args: Args<'_>, start: usize, is_set: bool) -> Option<ExtFlags> {
    let mut f = ExtFlags::default();
    let mut j = start;
    while j < args.len() {
        let opt = args.get(j);
        let has_next = j + 1 < args.len();
        let no_expire = f.expire.is_none();
        if eq(opt, "nx") && !f.xx && is_set {
            f.nx = true;
        } else if eq(opt, "xx") && !f.nx && is_set {
            f.xx = true;
        } else if eq(opt, "get") && is_set {
            f.get = true;
        } else if eq(opt, "keepttl") && !f.persist && no_expire && is_set {
            f.keepttl = true;
        } else if eq(opt, "persist") && !is_set && no_expire && !f.keepttl {
            f.persist = true;
        } else if has_next && !f.keepttl && !f.persist && (no_expire || same_unit(&f, opt, args)) {
            let (unit, relative) = if eq(opt, "ex") {
                (1000, true)
            } else if eq(opt, "px") {
                (1, true)
            } else if eq(opt, "exat") {
                (1000, false)
            } else if eq(opt, "pxat") {
                (1, false)
            } else {
                return None;
            };
            f.expire = Some((j + 1, unit, relative));
            j += 1;
        } else {
            return None;
        }
        j += 1;
    }
    Some(f)
}

/// Redis lets an expire option be repeated (`EX 1 EX 2`, the last wins) but not mixed
/// with another (`EX 1 PX 2` is a syntax error).
fn same_unit(f: &ExtFlags, opt: &[u8], args: Args<'_>) -> bool {
    let Some((arg, _, _)) = f.expire else {
        return true;
    };
    eq(opt, &String::from_utf8_lossy(args.get(arg - 1)))
}

/// Parses an expire argument into an absolute Unix time in ms (getExpireMillisecondsOrReply).
fn expire_ms_or_reply(
    out: &mut Out,
    arg: &[u8],
    unit: u64,
    relative: bool,
    cmd: &str,
    now: u64,
) -> Option<u64> {
    let Some(n) = parse_i64(arg) else {
        out.error(ERR_NOT_INT);
        return None;
    };
    let bad = |out: &mut Out| out.error(&format!("ERR invalid expire time in '{cmd}' command"));
    if n <= 0 || (unit == 1000 && n > i64::MAX / 1000) {
        bad(out);
        return None;
    }
    let mut ms = n * unit as i64;
    if relative {
        match ms.checked_add(now as i64) {
            Some(v) => ms = v,
            None => {
                bad(out);
                return None;
            }
        }
    }
    Some(ms as u64)
}

fn set_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(f) = parse_ext_flags(args, 3, true) else {
        return c.out.error(ERR_SYNTAX);
    };
    let mut ttl = if f.keepttl {
        SetTtl::Keep
    } else {
        SetTtl::Clear
    };
    if let Some((arg, unit, relative)) = f.expire {
        let Some(at) = expire_ms_or_reply(&mut c.out, args.get(arg), unit, relative, "set", now)
        else {
            return;
        };
        ttl = SetTtl::At(at);
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let mark = c.out.buf.len();
    let found = if f.get {
        match shard.get(c.db, key, now) {
            Some(v) => {
                c.out.bulk(v);
                true
            }
            None => {
                c.out.null();
                false
            }
        }
    } else if f.nx || f.xx {
        shard.exists(c.db, key, now)
    } else {
        false
    };
    if (f.nx && found) || (f.xx && !found) {
        if !f.get {
            c.out.null();
        }
        return;
    }
    let result = match ttl {
        // An absolute time already past: the key ends up deleted, as in Redis.
        SetTtl::At(at) if at <= now => {
            shard.delete(c.db, key, now);
            Ok(())
        }
        _ => shard.set(c.db, key, args.get(2), ttl, now),
    };
    match result {
        Ok(()) if !f.get => c.out.ok(),
        Ok(()) => {}
        Err(e) => {
            // Drop the old value already encoded (SET ... GET); the client gets only the error.
            c.out.buf.truncate(mark);
            write_error(&mut c.out, e)
        }
    }
}

fn getex_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(f) = parse_ext_flags(args, 2, false) else {
        return c.out.error(ERR_SYNTAX);
    };
    let mut at = None;
    if let Some((arg, unit, relative)) = f.expire {
        let Some(ms) = expire_ms_or_reply(&mut c.out, args.get(arg), unit, relative, "getex", now)
        else {
            return;
        };
        at = Some(ms);
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.get(c.db, key, now) {
        None => return c.out.null(),
        Some(v) => c.out.bulk(v),
    }
    if let Some(at) = at {
        if at <= now {
            shard.delete(c.db, key, now);
        } else {
            shard.set_expire(c.db, key, Some(at), now);
        }
    } else if f.persist {
        shard.set_expire(c.db, key, None, now);
    }
}

fn incr_by(shared: &Shared, c: &mut Client, key: &[u8], by: i64, now: u64) {
    let mut shard = shared.store.lock_key(key);
    let old = match shard.peek(c.db, key, now) {
        None => 0,
        Some(v) => match parse_i64(v) {
            Some(n) => n,
            None => return c.out.error(ERR_NOT_INT),
        },
    };
    let Some(new) = old.checked_add(by) else {
        return c.out.error("ERR increment or decrement would overflow");
    };
    let mut b = itoa::Buffer::new();
    match shard.set(c.db, key, b.format(new).as_bytes(), SetTtl::Keep, now) {
        Ok(()) => c.out.int(new),
        Err(e) => write_error(&mut c.out, e),
    }
}

/// Parses a float as Redis's string2ld: no leading space, whole string, not NaN.
fn parse_float(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b.len() >= 5 * 1024 || b[0].is_ascii_whitespace() {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

fn incr_by_float(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let old = match shard.peek(c.db, key, now) {
        None => Some(0.0),
        Some(v) => parse_float(v),
    };
    let (Some(old), Some(incr)) = (old, parse_float(args.get(2))) else {
        return c.out.error(ERR_NOT_FLOAT);
    };
    let new = old + incr;
    if !new.is_finite() {
        return c.out.error("ERR increment would produce NaN or Infinity");
    }
    // Rust's Display is the shortest text that reads back to the same double and never
    // uses an exponent, like Redis's human-readable long double format.
    let text = format!("{new}");
    match shard.set(c.db, key, text.as_bytes(), SetTtl::Keep, now) {
        Ok(()) => c.out.bulk(text.as_bytes()),
        Err(e) => write_error(&mut c.out, e),
    }
}

fn append_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let tail = args.get(2);
    let max = shared.proto_max_bulk_len.load(Relaxed);
    let mut shard = shared.store.lock_key(key);
    let result = match shard.peek(c.db, key, now) {
        None => shard
            .set(c.db, key, tail, SetTtl::Clear, now)
            .map(|_| tail.len()),
        Some(v) => {
            if (v.len() + tail.len()) as u64 > max {
                return c.out.error(ERR_TOO_BIG);
            }
            let mut joined = Vec::with_capacity(v.len() + tail.len());
            joined.extend_from_slice(v);
            joined.extend_from_slice(tail);
            shard
                .set(c.db, key, &joined, SetTtl::Keep, now)
                .map(|_| joined.len())
        }
    };
    match result {
        Ok(n) => c.out.int(n as i64),
        Err(e) => write_error(&mut c.out, e),
    }
}

fn getrange_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (Some(mut start), Some(mut end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return c.out.error(ERR_NOT_INT);
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let Some(v) = shard.get(c.db, key, now) else {
        return c.out.bulk(b"");
    };
    let len = v.len() as i64;
    if start < 0 && end < 0 && start > end {
        return c.out.bulk(b"");
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        c.out.bulk(b"")
    } else {
        c.out.bulk(&v[start as usize..=end as usize])
    }
}

fn setrange_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(offset) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    if offset < 0 {
        return c.out.error("ERR offset is out of range");
    }
    let offset = offset as u64;
    let key = args.get(1);
    let value = args.get(3);
    let max = shared.proto_max_bulk_len.load(Relaxed);
    let mut shard = shared.store.lock_key(key);
    let existing = shard.peek(c.db, key, now);
    if value.is_empty() {
        return c.out.int(existing.map_or(0, |v| v.len() as i64));
    }
    if offset
        .checked_add(value.len() as u64)
        .is_none_or(|t| t > max)
    {
        return c.out.error(ERR_TOO_BIG);
    }
    let offset = offset as usize;
    let ttl = if existing.is_some() {
        SetTtl::Keep
    } else {
        SetTtl::Clear
    };
    let old = existing.unwrap_or(b"");
    let new_len = old.len().max(offset + value.len());
    let mut new = Vec::with_capacity(new_len);
    new.extend_from_slice(old);
    new.resize(new_len, 0);
    new[offset..offset + value.len()].copy_from_slice(value);
    match shard.set(c.db, key, &new, ttl, now) {
        Ok(()) => c.out.int(new_len as i64),
        Err(e) => write_error(&mut c.out, e),
    }
}

// ---------------------------------------------------------------------------------------
// Keyspace
// ---------------------------------------------------------------------------------------

fn expire_command(shared: &Shared, c: &mut Client, spec: &CommandSpec, args: Args<'_>, now: u64) {
    let (nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    let mut nx = nx;
    for opt in args.iter().skip(3) {
        if eq(opt, "nx") {
            nx = true
        } else if eq(opt, "xx") {
            xx = true
        } else if eq(opt, "gt") {
            gt = true
        } else if eq(opt, "lt") {
            lt = true
        } else {
            return c
                .out
                .error(&format!("ERR Unsupported option {}", lossy(c_str(opt))));
        }
    }
    if nx && (xx || gt || lt) {
        return c
            .out
            .error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return c
            .out
            .error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    let bad = format!("ERR invalid expire time in '{}' command", spec.name);
    if matches!(spec.cmd, Cmd::Expire | Cmd::ExpireAt) {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return c.out.error(&bad);
        }
        when *= 1000;
    }
    if matches!(spec.cmd, Cmd::Expire | Cmd::PExpire) {
        match when.checked_add(now as i64) {
            Some(w) => when = w,
            None => return c.out.error(&bad),
        }
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let current = match shard.ttl(c.db, key, now) {
        TtlState::Missing => return c.out.int(0),
        TtlState::Persistent => None,
        TtlState::ExpiresAt(at) => Some(at as i64),
    };
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|cur| when <= cur))
        || (lt && current.is_some_and(|cur| when >= cur));
    if refused {
        return c.out.int(0);
    }
    if when <= now as i64 {
        shard.delete(c.db, key, now);
    } else {
        shard.set_expire(c.db, key, Some(when as u64), now);
    }
    c.out.int(1);
}

fn scan_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let cursor = match std::str::from_utf8(args.get(1))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(v) => v,
        None => return c.out.error("ERR invalid cursor"),
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut type_ok = true;
    let mut i = 2;
    while i < args.len() {
        let opt = args.get(i);
        let has_value = i + 1 < args.len();
        if eq(opt, "count") && has_value {
            match parse_i64(args.get(i + 1)) {
                None => return c.out.error(ERR_NOT_INT),
                Some(n) if n < 1 => return c.out.error(ERR_SYNTAX),
                Some(n) => count = n.min(1 << 20) as usize,
            }
        } else if eq(opt, "match") && has_value {
            let p = args.get(i + 1);
            // "*" matches everything: skip the per-key matching.
            pattern = if p == b"*" { None } else { Some(p) };
        } else if eq(opt, "type") && has_value {
            // Only strings exist: any other type filters out every key.
            type_ok = eq(args.get(i + 1), "string");
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        i += 2;
    }
    let page = shared.store.scan(c.db, cursor, count, pattern, now);
    c.out.array(2);
    c.out.bulk(page.next_cursor.to_string().as_bytes());
    if type_ok {
        c.out.array(page.keys.len());
        for k in &page.keys {
            c.out.bulk(k);
        }
    } else {
        c.out.array(0);
    }
}

// ---------------------------------------------------------------------------------------
// Connection
// ---------------------------------------------------------------------------------------

fn check_password(shared: &Shared, user: &[u8], pass: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    match &shared.config.read().requirepass {
        None => true,
        Some(p) => p.as_bytes() == pass,
    }
}

fn auth_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    if args.len() > 3 {
        return c.out.error(ERR_SYNTAX);
    }
    let (user, pass) = if args.len() == 2 {
        if !shared.pass_required.load(Relaxed) {
            return c.out.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        }
        (&b"default"[..], args.get(1))
    } else {
        (args.get(1), args.get(2))
    };
    if check_password(shared, user, pass) {
        c.authenticated = true;
        c.out.ok();
    } else {
        tracing::debug!(client = c.meta.id, "AUTH failed");
        c.out.error(ERR_WRONGPASS);
    }
}

/// Redis's validateClientName: printable ASCII without spaces.
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

const ERR_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

fn hello_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
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
        if check_password(shared, user, pass) {
            c.authenticated = true;
        } else {
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

fn client_command(shared: &Shared, c: &mut Client, spec: &'static CommandSpec, args: Args<'_>) {
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
        "list" => {
            let mut ids: Option<Vec<u64>> = None;
            let mut i = 2;
            while i < args.len() {
                if eq(args.get(i), "type") && i + 1 < args.len() {
                    let t = args.get(i + 1);
                    if !["normal", "master", "replica", "slave", "pubsub"]
                        .iter()
                        .any(|n| eq(t, n))
                    {
                        return c
                            .out
                            .error(&format!("ERR Unknown client type '{}'", lossy(t)));
                    }
                    if !eq(t, "normal") {
                        ids = Some(Vec::new());
                    }
                    i += 2;
                } else if eq(args.get(i), "id") && i + 1 < args.len() {
                    let mut v = Vec::new();
                    for a in args.iter().skip(i + 1) {
                        match parse_i64(a) {
                            Some(n) if n > 0 => v.push(n as u64),
                            _ => return c.out.error("ERR Invalid client ID"),
                        }
                    }
                    ids = Some(v);
                    i = args.len();
                } else {
                    return c.out.error(ERR_SYNTAX);
                }
            }
            let mut clients: Vec<Arc<ClientMeta>> =
                shared.clients.lock().values().cloned().collect();
            clients.sort_by_key(|m| m.id);
            let mut text = String::new();
            for m in clients {
                if ids.as_ref().is_some_and(|ids| !ids.contains(&m.id)) {
                    continue;
                }
                client_line(&m, m.id == c.meta.id, &mut text);
                text.push('\n');
            }
            c.out.verbatim(text.as_bytes());
        }
        "info" => {
            let mut text = String::new();
            client_line(&c.meta, true, &mut text);
            text.push('\n');
            c.out.verbatim(text.as_bytes());
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
        "no-evict" | "no-touch" => {
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
                "SETNAME <name>",
                "GETNAME",
                "LIST [TYPE <type>] [ID <id> ...]",
                "INFO",
                "SETINFO <LIB-NAME|LIB-VER> <value>",
                "NO-EVICT (ON|OFF)",
                "NO-TOUCH (ON|OFF)",
            ],
        ),
    }
}

/// One CLIENT LIST line, in Redis's field order (fields Augur has no notion of are given
/// Redis's idle values so that parsers keep working).
fn client_line(m: &ClientMeta, current: bool, out: &mut String) {
    let cmd = match m.last_cmd.load(Relaxed) {
        i if (i as usize) < cmdtable::COMMANDS.len() => cmdtable::COMMANDS[i as usize].name,
        _ => "NULL",
    };
    let cmd = if current { "client|list" } else { cmd };
    let _ = write!(
        out,
        "id={} addr={} laddr={} fd=0 name={} age={} idle={} flags=N db={} sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={}",
        m.id,
        m.addr,
        m.laddr,
        lossy(&m.name.lock()),
        m.created.elapsed().as_secs(),
        m.idle_secs(),
        m.db.load(Relaxed),
        cmd,
        m.resp.load(Relaxed),
        lossy(&m.lib_name.lock()),
        lossy(&m.lib_ver.lock()),
    );
}

// ---------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------

fn config_command(shared: &Shared, c: &mut Client, spec: &'static CommandSpec, args: Args<'_>) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "get" => {
            let cfg = shared.config.read();
            let mut pairs: Vec<(&str, String)> = Vec::new();
            for pat in args.iter().skip(2) {
                let pat = pat.to_ascii_lowercase();
                for name in PARAMS {
                    if glob_match(&pat, name.as_bytes()) && !pairs.iter().any(|(n, _)| n == name) {
                        pairs.push((name, cfg.get(name).unwrap_or_default()));
                    }
                }
            }
            drop(cfg);
            c.out.map(pairs.len());
            for (n, v) in pairs {
                c.out.bulk(n.as_bytes());
                c.out.bulk(v.as_bytes());
            }
        }
        "set" => {
            if !args.len().is_multiple_of(2) {
                return arity_error(&mut c.out, "config|set");
            }
            let mut new: ServerConfig = shared.config.read().clone();
            let mut seen: Vec<String> = Vec::new();
            for i in (2..args.len()).step_by(2) {
                let name = lossy(args.get(i)).to_ascii_lowercase();
                let value = lossy(args.get(i + 1)).into_owned();
                if !PARAMS.contains(&name.as_str()) {
                    return c.out.error(&format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                        lossy(args.get(i))
                    ));
                }
                if seen.contains(&name) {
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                    ));
                }
                if !LIVE_PARAMS.contains(&name.as_str()) {
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
                    ));
                }
                if let Err(e) = new.apply(&name, &value) {
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                    ));
                }
                seen.push(name);
            }
            shared.install_config(new);
            c.out.ok();
        }
        "resetstat" => {
            shared.store.reset_stats();
            let k = &shared.counters;
            k.total_commands_processed.reset();
            k.total_connections_received.store(0, Relaxed);
            k.rejected_connections.store(0, Relaxed);
            k.net_input_bytes.reset();
            k.net_output_bytes.reset();
            c.out.ok();
        }
        "rewrite" => c
            .out
            .error("ERR The server is running without a config file"),
        _ => help_reply(
            &mut c.out,
            "CONFIG",
            &[
                "GET <pattern>",
                "SET <directive> <value> [<directive> <value> ...]",
                "RESETSTAT",
                "REWRITE",
            ],
        ),
    }
}

fn command_entry(out: &mut Out, spec: &CommandSpec) {
    out.array(10);
    out.bulk(spec.name.as_bytes());
    out.int(spec.arity as i64);
    let flags: Vec<&str> = cmdtable::flag_names(spec.flags).collect();
    out.set(flags.len());
    for f in flags {
        out.simple(f);
    }
    out.int(spec.first_key as i64);
    out.int(spec.last_key as i64);
    out.int(spec.step as i64);
    let cats = categories(spec.flags, spec.group);
    out.set(cats.len());
    for cat in cats {
        out.simple(cat);
    }
    out.set(0); // tips
    out.set(0); // key specs
    out.set(spec.subcommands.len());
    for s in spec.subcommands {
        out.array(10);
        out.bulk(s.name.as_bytes());
        out.int(s.arity as i64);
        let flags: Vec<&str> = cmdtable::flag_names(s.flags).collect();
        out.set(flags.len());
        for f in flags {
            out.simple(f);
        }
        out.int(0);
        out.int(0);
        out.int(0);
        out.set(0);
        out.set(0);
        out.set(0);
        out.set(0);
    }
}

fn categories(flags: u32, group: &str) -> Vec<&'static str> {
    let mut v = Vec::new();
    if flags & cmdtable::WRITE != 0 {
        v.push("@write");
    }
    if flags & cmdtable::READONLY != 0 {
        v.push("@read");
    }
    match group {
        "string" => v.push("@string"),
        "generic" => v.push("@keyspace"),
        "connection" => v.push("@connection"),
        _ => {}
    }
    if flags & cmdtable::ADMIN != 0 {
        v.push("@admin");
        v.push("@dangerous");
    }
    v.push(if flags & cmdtable::FAST != 0 {
        "@fast"
    } else {
        "@slow"
    });
    v
}

fn command_doc(out: &mut Out, summary: &str, group: &str, subs: &[cmdtable::SubSpec]) {
    out.map(if subs.is_empty() { 4 } else { 5 });
    out.bulk(b"summary");
    out.bulk(summary.as_bytes());
    out.bulk(b"since");
    out.bulk(b"1.0.0");
    out.bulk(b"group");
    out.bulk(group.as_bytes());
    out.bulk(b"complexity");
    out.bulk(b"O(1)");
    if !subs.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for s in subs {
            out.bulk(s.name.as_bytes());
            command_doc(out, s.summary, group, &[]);
        }
    }
}

fn command_command(c: &mut Client, spec: &'static CommandSpec, args: Args<'_>) {
    if args.len() == 1 {
        c.out.array(cmdtable::COMMANDS.len());
        for s in cmdtable::COMMANDS {
            command_entry(&mut c.out, s);
        }
        return;
    }
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    let find = |name: &[u8]| {
        let mut b = [0u8; 16];
        cmdtable::upper(name, &mut b).and_then(cmdtable::lookup)
    };
    match sub {
        "count" => c.out.int(cmdtable::COMMANDS.len() as i64),
        "info" => {
            if args.len() == 2 {
                c.out.array(cmdtable::COMMANDS.len());
                for s in cmdtable::COMMANDS {
                    command_entry(&mut c.out, s);
                }
            } else {
                c.out.array(args.len() - 2);
                for name in args.iter().skip(2) {
                    match find(name) {
                        Some(s) => command_entry(&mut c.out, s),
                        None => c.out.null_array(),
                    }
                }
            }
        }
        "docs" => {
            let specs: Vec<&CommandSpec> = if args.len() == 2 {
                cmdtable::COMMANDS.iter().collect()
            } else {
                args.iter().skip(2).filter_map(find).collect()
            };
            c.out.map(specs.len());
            for s in specs {
                c.out.bulk(s.name.as_bytes());
                command_doc(&mut c.out, s.summary, s.group, s.subcommands);
            }
        }
        "list" => {
            c.out.array(cmdtable::COMMANDS.len());
            for s in cmdtable::COMMANDS {
                c.out.bulk(s.name.as_bytes());
            }
        }
        _ => help_reply(
            &mut c.out,
            "COMMAND",
            &[
                "(no subcommand)",
                "COUNT",
                "DOCS [<command-name> ...]",
                "INFO [<command-name> ...]",
                "LIST",
            ],
        ),
    }
}

fn memory_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "usage" => {
            // Only `SAMPLES <count>` may follow (and is irrelevant for strings).
            if args.len() != 3 && !(args.len() == 5 && eq(args.get(3), "samples")) {
                return c.out.error(ERR_SYNTAX);
            }
            if args.len() == 5 && parse_i64(args.get(4)).is_none() {
                return c.out.error(ERR_NOT_INT);
            }
            let key = args.get(2);
            match shared.store.lock_key(key).info(c.db, key, now) {
                Some(info) => c.out.int(info.memory_bytes as i64),
                None => c.out.null(),
            }
        }
        _ => help_reply(&mut c.out, "MEMORY", &["USAGE <key> [SAMPLES <count>]"]),
    }
}

fn object_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    if sub == "help" {
        return help_reply(
            &mut c.out,
            "OBJECT",
            &[
                "ENCODING <key>",
                "FREQ <key>",
                "IDLETIME <key>",
                "REFCOUNT <key>",
            ],
        );
    }
    let key = args.get(2);
    let mut shard = shared.store.lock_key(key);
    let Some(info) = shard.info(c.db, key, now) else {
        return c.out.null();
    };
    match sub {
        "encoding" => {
            let v = shard.peek(c.db, key, now).unwrap_or(b"");
            let enc = if v.len() <= 20 && parse_i64(v).is_some() {
                "int"
            } else if v.len() <= 44 {
                "embstr"
            } else {
                "raw"
            };
            c.out.bulk(enc.as_bytes());
        }
        "refcount" => c.out.int(1),
        // Augur's recency clock is logical (accesses of the shard), not seconds: the
        // number reported is the key's idle age in accesses.
        "idletime" => c.out.int(info.idle_accesses as i64),
        _ => c.out.error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}

#[cfg(test)]
mod tests {
    //! Command semantics without a network: inline commands in, RESP bytes out.

    use super::*;
    use crate::resp::{Parsed, Parser};

    struct Harness {
        shared: Shared,
        client: Client,
    }

    impl Harness {
        fn new(cfg: ServerConfig) -> Self {
            let shared = Shared::new(cfg, None);
            let addr = "127.0.0.1:1".parse().unwrap();
            let authenticated = !shared.pass_required.load(Relaxed);
            let client = Client::new(Arc::new(ClientMeta::new(1, addr, addr)), authenticated);
            Harness { shared, client }
        }

        /// Runs one inline command line at time `now`; returns the reply bytes as text.
        fn at(&mut self, line: &str, now: u64) -> String {
            let buf = format!("{line}\r\n");
            let mut p = Parser::default();
            let Ok(Parsed::Command(_)) = p.parse(buf.as_bytes()) else {
                panic!("parse {line}")
            };
            execute(&self.shared, &mut self.client, p.args(buf.as_bytes()), now);
            let out = String::from_utf8_lossy(&self.client.out.buf).into_owned();
            self.client.out.buf.clear();
            out
        }

        fn run(&mut self, line: &str) -> String {
            self.at(line, 1_000_000)
        }
    }

    #[test]
    fn set_options() {
        let mut h = Harness::new(ServerConfig::default());
        assert_eq!(h.run("SET k v"), "+OK\r\n");
        assert_eq!(h.run("SET k w NX"), "$-1\r\n");
        assert_eq!(h.run("SET k w XX GET"), "$1\r\nv\r\n");
        assert_eq!(h.run("SET k w NX XX"), "-ERR syntax error\r\n");
        assert_eq!(h.run("SET k w EX 1 PX 5"), "-ERR syntax error\r\n");
        assert_eq!(h.run("SET k w EX 1 EX 5"), "+OK\r\n");
        assert_eq!(h.run("SET k w KEEPTTL EX 5"), "-ERR syntax error\r\n");
        assert_eq!(h.run("SET k w EX"), "-ERR syntax error\r\n");
        assert_eq!(
            h.run("SET k w EX x"),
            "-ERR value is not an integer or out of range\r\n"
        );
        assert_eq!(
            h.run("SET k w PX 0"),
            "-ERR invalid expire time in 'set' command\r\n"
        );
        assert_eq!(
            h.run("SET k w EX 9223372036854775807"),
            "-ERR invalid expire time in 'set' command\r\n"
        );
        assert_eq!(
            h.run("SETEX k 0 v"),
            "-ERR invalid expire time in 'setex' command\r\n"
        );
        assert_eq!(
            h.run("GETEX k EX 0"),
            "-ERR invalid expire time in 'getex' command\r\n"
        );
        assert_eq!(h.run("GETEX k PERSIST EX 1"), "-ERR syntax error\r\n");
        // Time-driven: PX 100 at t=1_000_000 lives through t=1_000_100 (Redis expires when
        // now > at), gone after.
        assert_eq!(h.at("SET t v PX 100", 1_000_000), "+OK\r\n");
        assert_eq!(h.at("PTTL t", 1_000_040), ":60\r\n");
        assert_eq!(h.at("TTL t", 1_000_040), ":0\r\n");
        assert_eq!(h.at("GET t", 1_000_100), "$1\r\nv\r\n");
        assert_eq!(h.at("GET t", 1_000_101), "$-1\r\n");
        assert_eq!(h.at("SET t v PXAT 999999", 1_000_000), "+OK\r\n");
        assert_eq!(h.at("EXISTS t", 1_000_000), ":0\r\n");
    }

    #[test]
    fn counters() {
        let mut h = Harness::new(ServerConfig::default());
        assert_eq!(h.run("INCR n"), ":1\r\n");
        assert_eq!(h.run("DECRBY n 11"), ":-10\r\n");
        assert_eq!(
            h.run("DECRBY n -9223372036854775808"),
            "-ERR decrement would overflow\r\n"
        );
        assert_eq!(
            h.run("INCRBY n 01"),
            "-ERR value is not an integer or out of range\r\n"
        );
        assert_eq!(h.run("SET n 9223372036854775807"), "+OK\r\n");
        assert_eq!(
            h.run("INCR n"),
            "-ERR increment or decrement would overflow\r\n"
        );
        assert_eq!(h.run("GET n"), "$19\r\n9223372036854775807\r\n");
        assert_eq!(h.run("INCRBYFLOAT f 10.5"), "$4\r\n10.5\r\n");
        assert_eq!(h.run("INCRBYFLOAT f 0.1"), "$4\r\n10.6\r\n");
        assert_eq!(h.run("INCRBYFLOAT f 1e3"), "$6\r\n1010.6\r\n");
        assert_eq!(
            h.run("INCRBYFLOAT f nan"),
            "-ERR value is not a valid float\r\n"
        );
        assert_eq!(
            h.run("INCRBYFLOAT f inf"),
            "-ERR increment would produce NaN or Infinity\r\n"
        );
        assert_eq!(
            h.run("INCRBYFLOAT f \" 1\""),
            "-ERR value is not a valid float\r\n"
        );
        // INCR keeps the TTL.
        assert_eq!(h.run("SET t 1 EX 100"), "+OK\r\n");
        assert_eq!(h.run("INCR t"), ":2\r\n");
        assert_eq!(h.run("TTL t"), ":100\r\n");
    }

    #[test]
    fn ranges_and_append() {
        let mut h = Harness::new(ServerConfig::default());
        assert_eq!(h.run("APPEND s Hello"), ":5\r\n");
        assert_eq!(h.run("APPEND s World"), ":10\r\n");
        assert_eq!(h.run("GETRANGE s -5 -1"), "$5\r\nWorld\r\n");
        assert_eq!(h.run("GETRANGE s -1 -5"), "$0\r\n\r\n");
        assert_eq!(h.run("GETRANGE s 3 100"), "$7\r\nloWorld\r\n");
        assert_eq!(h.run("SETRANGE s 12 !"), ":13\r\n");
        assert_eq!(h.run("GET s"), "$13\r\nHelloWorld\0\0!\r\n");
        assert_eq!(h.run("SETRANGE s 0 \"\""), ":13\r\n");
        assert_eq!(h.run("SETRANGE e 3 \"\""), ":0\r\n");
        assert_eq!(h.run("EXISTS e"), ":0\r\n");
        assert_eq!(h.run("SETRANGE s -1 x"), "-ERR offset is out of range\r\n");
        assert_eq!(
            h.run("SETRANGE s 536870911 xx"),
            "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
        );
        assert_eq!(h.run("STRLEN s"), ":13\r\n");
    }

    #[test]
    fn expire_options() {
        let mut h = Harness::new(ServerConfig::default());
        h.run("SET k v");
        assert_eq!(h.run("EXPIRE k 10 XX"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 10 GT"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 10 LT"), ":1\r\n");
        assert_eq!(h.run("EXPIRE k 20 LT"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 20 GT"), ":1\r\n");
        assert_eq!(h.run("EXPIRE k 5 NX"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 5 FOO"), "-ERR Unsupported option FOO\r\n");
        assert_eq!(
            h.run("EXPIRE k 5 GT LT"),
            "-ERR GT and LT options at the same time are not compatible\r\n"
        );
        assert_eq!(
            h.run("PEXPIRE k 9223372036854775807"),
            "-ERR invalid expire time in 'pexpire' command\r\n"
        );
        assert_eq!(h.run("EXPIRE k -1"), ":1\r\n");
        assert_eq!(h.run("EXISTS k"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 5"), ":0\r\n");
    }

    #[test]
    fn connection_and_server_commands() {
        let mut h = Harness::new(ServerConfig {
            requirepass: Some("pw".into()),
            ..ServerConfig::default()
        });
        assert_eq!(h.run("GET k"), "-NOAUTH Authentication required.\r\n");
        assert_eq!(
            h.run("FOO bar"),
            "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"
        );
        assert_eq!(h.run("AUTH a b c"), "-ERR syntax error\r\n");
        assert_eq!(
            h.run("AUTH nope"),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        );
        assert_eq!(h.run("AUTH pw"), "+OK\r\n");
        assert_eq!(h.run("SELECT 15"), "+OK\r\n");
        assert_eq!(h.run("SELECT 16"), "-ERR DB index is out of range\r\n");
        assert_eq!(
            h.run("PING a b"),
            "-ERR wrong number of arguments for 'ping' command\r\n"
        );
        assert_eq!(
            h.run("CONFIG GETX"),
            "-ERR unknown subcommand 'GETX'. Try CONFIG HELP.\r\n"
        );
        assert_eq!(
            h.run("CONFIG GET"),
            "-ERR wrong number of arguments for 'config|get' command\r\n"
        );
        assert_eq!(
            h.run("CONFIG SET maxmemory 1 hz"),
            "-ERR wrong number of arguments for 'config|set' command\r\n"
        );
        assert_eq!(
            h.run("CONFIG SET port 1"),
            "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config\r\n"
        );
        assert_eq!(h.run("CONFIG SET maxmemory 5mb hz 20"), "+OK\r\n");
        assert_eq!(h.shared.store.maxmemory(), 5 * 1024 * 1024);
        assert_eq!(h.run("CONFIG GET hz"), "*2\r\n$2\r\nhz\r\n$2\r\n20\r\n");
        assert_eq!(h.run("FLUSHALL LAZY"), "-ERR syntax error\r\n");
        assert_eq!(
            h.run("CLIENT SETNAME \"a b\""),
            "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
        );
        assert_eq!(
            h.run("HELLO 4"),
            "-NOPROTO unsupported protocol version\r\n"
        );
        assert_eq!(
            h.run("HELLO 3 FOO"),
            "-ERR Syntax error in HELLO option 'FOO'\r\n"
        );
        assert!(h.run("HELLO 3").starts_with("%7\r\n"));
        assert_eq!(h.run("GET missing"), "_\r\n");
        assert_eq!(h.run("CONFIG GET hz"), "%1\r\n$2\r\nhz\r\n$2\r\n20\r\n");
        assert!(h.run("INFO keyspace").starts_with("="));
        assert_eq!(
            h.run("COMMAND COUNT"),
            format!(":{}\r\n", cmdtable::COMMANDS.len())
        );
        assert_eq!(h.run("QUIT"), "+OK\r\n");
        assert!(h.client.close_after_reply);
    }

    #[test]
    fn noeviction_oom_keeps_data() {
        let mut h = Harness::new(ServerConfig {
            maxmemory: 100_000,
            shards: 1,
            ..ServerConfig::default()
        });
        let value = "x".repeat(1000);
        let mut n = 0;
        loop {
            let r = h.run(&format!("SET k{n} {value}"));
            if r.starts_with("-OOM") {
                assert_eq!(
                    r,
                    "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
                );
                break;
            }
            assert_eq!(r, "+OK\r\n");
            n += 1;
            assert!(n < 1000, "never refused");
        }
        assert_eq!(h.run("DBSIZE"), format!(":{n}\r\n"));
        assert_eq!(h.run("GET k0"), format!("$1000\r\n{value}\r\n"));
    }
}
