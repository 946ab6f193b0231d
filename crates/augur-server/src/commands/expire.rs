//! Key expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME,
//! PEXPIRETIME, PERSIST.
//! Mirrors Redis's expire.c (and the TTL/PERSIST parts of db.c).

use super::{c_str, eq, lossy, Client, ERR_NOT_INT};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::{GENERIC, KEY_MISS};
use crate::notify::notify;
use crate::resp::{parse_i64, Args};
use crate::state::Shared;
use augur_store::TtlState;

pub(super) fn expire_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
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
    let current = match shard.ttl(c.ns(), key, now) {
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
        shard.delete_expired_now(c.ns(), key, now);
        drop(shard);
        notify(shared, c, GENERIC, "del", key);
    } else {
        shard.set_expire(c.ns(), key, Some(when as u64), now);
        drop(shard);
        notify(shared, c, GENERIC, "expire", key);
    }
    c.out.int(1);
}

/// TTL (seconds, rounded) and PTTL (milliseconds); EXPIRETIME and PEXPIRETIME, the
/// same as absolute Unix times (expire.c ttlGenericCommand).
pub(super) fn ttl_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let state = shared.store.lock_key(key).ttl(c.ns(), key, now);
    match state {
        TtlState::Missing => {
            notify(shared, c, KEY_MISS, "keymiss", key);
            c.out.int(-2)
        }
        TtlState::Persistent => c.out.int(-1),
        TtlState::ExpiresAt(at) => {
            let abs = matches!(spec.cmd, Cmd::ExpireTime | Cmd::PExpireTime);
            let ms = if abs { at } else { at.saturating_sub(now) } as i64;
            c.out
                .int(if matches!(spec.cmd, Cmd::PTtl | Cmd::PExpireTime) {
                    ms
                } else {
                    (ms + 500) / 1000
                });
        }
    }
}

pub(super) fn persist_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let done = shared
        .store
        .lock_key(key)
        .set_expire(c.ns(), key, None, now);
    if done {
        notify(shared, c, GENERIC, "persist", key);
    }
    c.out.int(done as i64);
}
