//! String commands: GET, SET and its variants, GETSET, GETDEL, GETEX, MGET, MSET(NX),
//! INCR/DECR and friends, INCRBYFLOAT, APPEND, STRLEN, GETRANGE, SETRANGE, LCS. Mirrors
//! Redis's t_string.c. APPEND and SETRANGE edit the stored value in place
//! ([`augur_store::Shard::update`]), as Redis edits an unshared sds.

use super::{
    arity_error, eq, write_error, Client, ERR_NOT_FLOAT, ERR_NOT_INT, ERR_SYNTAX, ERR_TOO_BIG,
    ERR_WRONGTYPE,
};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::long_double::LongDouble;
use crate::notify::flags::{GENERIC, STRING};
use crate::notify::notify;
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::SetTtl;
use std::sync::atomic::Ordering::Relaxed;

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

pub(super) fn get_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => c.out.bulk(v),
        Ok(None) => c.out.null(),
        Err(_) => c.out.error(ERR_WRONGTYPE),
    }
}

pub(super) fn setnx_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    if shard.exists(c.ns(), key, now) {
        c.out.int(0);
    } else {
        match shard.set(c.ns(), key, args.get(2), SetTtl::Clear, now) {
            Ok(()) => {
                notify(shared, c, STRING, "set", key);
                c.out.int(1)
            }
            Err(e) => write_error(&mut c.out, e),
        }
    }
}

/// SETEX (seconds) and PSETEX (milliseconds).
pub(super) fn setex_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let unit = if spec.cmd == Cmd::SetEx { 1000 } else { 1 };
    let Some(at) = expire_ms_or_reply(&mut c.out, args.get(2), unit, true, spec.name, now) else {
        return;
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.set(c.ns(), key, args.get(3), SetTtl::At(at), now) {
        Ok(()) => {
            notify(shared, c, STRING, "set", key);
            notify(shared, c, GENERIC, "expire", key);
            c.out.ok()
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

pub(super) fn getset_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let mark = c.out.buf.len();
    match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => c.out.bulk(v),
        Ok(None) => c.out.null(),
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    }
    match shard.set(c.ns(), key, args.get(2), SetTtl::Clear, now) {
        Ok(()) => notify(shared, c, STRING, "set", key),
        Err(e) => {
            // The old value is already in the reply; replace it with the error.
            c.out.buf.truncate(mark);
            write_error(&mut c.out, e);
        }
    }
}

pub(super) fn getdel_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => {
            c.out.bulk(v);
            shard.delete(c.ns(), key, now);
            notify(shared, c, GENERIC, "del", key);
        }
        Ok(None) => c.out.null(),
        Err(_) => c.out.error(ERR_WRONGTYPE),
    }
}

pub(super) fn mget_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let keys: Vec<&[u8]> = args.iter().skip(1).collect();
    let mut lock = shared.store.lock_keys(&keys);
    c.out.array(keys.len());
    for k in &keys {
        // A hash or set is nil here, as in Redis.
        match lock.shard_for(k).get(c.ns(), k, now) {
            Ok(Some(v)) => c.out.bulk(v),
            Ok(None) | Err(_) => c.out.null(),
        }
    }
}

/// MSET and MSETNX.
pub(super) fn mset_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    if args.len().is_multiple_of(2) {
        return arity_error(&mut c.out, spec.name);
    }
    let keys: Vec<&[u8]> = args.iter().skip(1).step_by(2).collect();
    let mut lock = shared.store.lock_keys(&keys);
    if spec.cmd == Cmd::MSetNx
        && keys
            .iter()
            .any(|k| lock.shard_for(k).exists(c.ns(), k, now))
    {
        return c.out.int(0);
    }
    for i in (1..args.len()).step_by(2) {
        let k = args.get(i);
        if let Err(e) = lock
            .shard_for(k)
            .set(c.ns(), k, args.get(i + 1), SetTtl::Clear, now)
        {
            return write_error(&mut c.out, e);
        }
        notify(shared, c, STRING, "set", k);
    }
    if spec.cmd == Cmd::MSet {
        c.out.ok()
    } else {
        c.out.int(1)
    }
}

pub(super) fn incrby_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    match parse_i64(args.get(2)) {
        Some(n) => incr_by(shared, c, args.get(1), n, now),
        None => c.out.error(ERR_NOT_INT),
    }
}

pub(super) fn decrby_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    match parse_i64(args.get(2)) {
        Some(i64::MIN) => c.out.error("ERR decrement would overflow"),
        Some(n) => incr_by(shared, c, args.get(1), -n, now),
        None => c.out.error(ERR_NOT_INT),
    }
}

pub(super) fn strlen_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    match shared.store.lock_key(key).get(c.ns(), key, now) {
        Ok(v) => c.out.int(v.map_or(0, |v| v.len()) as i64),
        Err(_) => c.out.error(ERR_WRONGTYPE),
    }
}

pub(super) fn set_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
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
        match shard.get(c.ns(), key, now) {
            Ok(Some(v)) => {
                c.out.bulk(v);
                true
            }
            Ok(None) => {
                c.out.null();
                false
            }
            // SET ... GET on a hash or set fails without writing (t_string.c).
            Err(_) => return c.out.error(ERR_WRONGTYPE),
        }
    } else if f.nx || f.xx {
        shard.exists(c.ns(), key, now)
    } else {
        false
    };
    if (f.nx && found) || (f.xx && !found) {
        if !f.get {
            c.out.null();
        }
        return;
    }
    // An absolute time already past stores a key that is already expired, as Redis 7.0
    // does (setKey, then setExpire): it is gone for every lookup, and its removal (lazy or
    // active) publishes `expired`.
    let result = shard.set(c.ns(), key, args.get(2), ttl, now);
    if result.is_ok() {
        notify(shared, c, STRING, "set", key);
        if matches!(ttl, SetTtl::At(_)) {
            notify(shared, c, GENERIC, "expire", key);
        }
    }
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

pub(super) fn getex_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(f) = parse_ext_flags(args, 2, false) else {
        return c.out.error(ERR_SYNTAX);
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    // As Redis's getexCommand: a missing key answers nil and another type WRONGTYPE
    // before the expire time is read, so only a string's GETEX can fail on its number.
    let v = match shard.get(c.ns(), key, now) {
        Ok(None) => return c.out.null(),
        Ok(Some(v)) => v,
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    let mut at = None;
    if let Some((arg, unit, relative)) = f.expire {
        let Some(ms) = expire_ms_or_reply(&mut c.out, args.get(arg), unit, relative, "getex", now)
        else {
            return;
        };
        at = Some(ms);
    }
    c.out.bulk(v);
    if let Some(at) = at {
        if at <= now {
            shard.delete_expired_now(c.ns(), key, now);
            notify(shared, c, GENERIC, "del", key);
        } else {
            shard.set_expire(c.ns(), key, Some(at), now);
            notify(shared, c, GENERIC, "expire", key);
        }
    } else if f.persist && shard.set_expire(c.ns(), key, None, now) {
        notify(shared, c, GENERIC, "persist", key);
    }
}

pub(super) fn incr_by(shared: &Shared, c: &mut Client, key: &[u8], by: i64, now: u64) {
    let mut shard = shared.store.lock_key(key);
    let old = match shard.peek(c.ns(), key, now) {
        Ok(None) => 0,
        Ok(Some(v)) => match parse_i64(v) {
            Some(n) => n,
            None => return c.out.error(ERR_NOT_INT),
        },
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    let Some(new) = old.checked_add(by) else {
        return c.out.error("ERR increment or decrement would overflow");
    };
    let mut b = itoa::Buffer::new();
    match shard.set(c.ns(), key, b.format(new).as_bytes(), SetTtl::Keep, now) {
        Ok(()) => {
            notify(shared, c, STRING, "incrby", key);
            c.out.int(new)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

pub(super) fn incr_by_float(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let old = match shard.peek(c.ns(), key, now) {
        Ok(None) => Some(LongDouble::ZERO),
        Ok(Some(v)) => LongDouble::parse(v),
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    let (Some(old), Some(incr)) = (old, LongDouble::parse(args.get(2))) else {
        return c.out.error(ERR_NOT_FLOAT);
    };
    let Some(new) = old.checked_add(&incr) else {
        return c.out.error("ERR increment would produce NaN or Infinity");
    };
    // Redis's long double text (`crate::long_double`): ten INCRBYFLOAT k 0.1 are "1".
    let text = new.to_human();
    match shard.set(c.ns(), key, &text, SetTtl::Keep, now) {
        Ok(()) => {
            notify(shared, c, STRING, "incrbyfloat", key);
            c.out.bulk(&text)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

pub(super) fn append_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let tail = args.get(2);
    let max = shared.proto_max_bulk_len.load(Relaxed);
    let mut shard = shared.store.lock_key(key);
    let result = match shard.peek(c.ns(), key, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        // A new key is stored as SET stores it (tryObjectEncoding in Redis).
        Ok(None) => shard
            .set(c.ns(), key, tail, SetTtl::Clear, now)
            .map(|_| tail.len()),
        Ok(Some(v)) => {
            if (v.len() + tail.len()) as u64 > max {
                return c.out.error(ERR_TOO_BIG);
            }
            shard.update(
                c.ns(),
                key,
                now,
                |len| len + tail.len(),
                |buf, _| {
                    let at = buf.len() - tail.len();
                    buf[at..].copy_from_slice(tail);
                    buf.len()
                },
            )
        }
    };
    match result {
        Ok(n) => {
            notify(shared, c, STRING, "append", key);
            c.out.int(n as i64)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

pub(super) fn getrange_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (Some(mut start), Some(mut end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return c.out.error(ERR_NOT_INT);
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let v = match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => v,
        Ok(None) => return c.out.bulk(b""),
        Err(_) => return c.out.error(ERR_WRONGTYPE),
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

pub(super) fn setrange_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
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
    let Ok(existing) = shard.peek(c.ns(), key, now) else {
        return c.out.error(ERR_WRONGTYPE);
    };
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
    let end = offset + value.len();
    match shard.update(
        c.ns(),
        key,
        now,
        |len| len.max(end),
        |buf, _| {
            buf[offset..end].copy_from_slice(value);
            buf.len()
        },
    ) {
        Ok(n) => {
            notify(shared, c, STRING, "setrange", key);
            c.out.int(n as i64)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN] (t_string.c lcsCommand):
/// the longest common subsequence by the classic dynamic-programming table, whose
/// transient size is bounded by proto-max-bulk-len as in Redis 7.0.
pub(super) fn lcs_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (ka, kb) = (args.get(1), args.get(2));
    let (a, b) = {
        let mut lock = shared.store.lock_keys(&[ka, kb]);
        let a = lock
            .shard_for(ka)
            .get(c.ns(), ka, now)
            .map(|v| v.unwrap_or(b"").to_vec());
        let b = lock
            .shard_for(kb)
            .get(c.ns(), kb, now)
            .map(|v| v.unwrap_or(b"").to_vec());
        match (a, b) {
            (Ok(a), Ok(b)) => (a, b),
            _ => {
                return c
                    .out
                    .error("ERR The specified keys must contain string values")
            }
        }
    };
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: u64 = 0;
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        if eq(opt, "idx") {
            getidx = true;
        } else if eq(opt, "len") {
            getlen = true;
        } else if eq(opt, "withmatchlen") {
            withmatchlen = true;
        } else if eq(opt, "minmatchlen") && j + 1 < args.len() {
            let Some(n) = parse_i64(args.get(j + 1)) else {
                return c.out.error(ERR_NOT_INT);
            };
            minmatchlen = n.max(0) as u64;
            j += 1;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        j += 1;
    }
    if getlen && getidx {
        return c
            .out
            .error("ERR If you want both the length and indexes, please just use IDX.");
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return c.out.error("ERR String too long for LCS");
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells * 4 > shared.proto_max_bulk_len.load(Relaxed) {
        return c
            .out
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let mut table: Vec<u32> = Vec::new();
    if table.try_reserve_exact(cells as usize).is_err() {
        return c
            .out
            .error("ERR Insufficient memory, failed allocating transient memory for LCS");
    }
    table.resize(cells as usize, 0);
    let w = blen + 1;
    for i in 1..=alen {
        for jj in 1..=blen {
            table[i * w + jj] = if a[i - 1] == b[jj - 1] {
                table[(i - 1) * w + jj - 1] + 1
            } else {
                table[(i - 1) * w + jj].max(table[i * w + jj - 1])
            };
        }
    }
    let len = table[alen * w + blen];
    if getlen {
        return c.out.int(len as i64);
    }
    // Walk back from the end, collecting the LCS and (for IDX) the matching ranges.
    let mut result = vec![0u8; len as usize];
    let mut idx = len as usize;
    let mut ranges: Vec<[u64; 5]> = Vec::new();
    let (mut i, mut jj) = (alen, blen);
    // (a_start, a_end, b_start, b_end) of the range being grown; None between ranges.
    let mut cur: Option<(usize, usize, usize, usize)> = None;
    while i > 0 && jj > 0 {
        let mut emit = false;
        if a[i - 1] == b[jj - 1] {
            result[idx - 1] = a[i - 1];
            cur = match cur {
                None => Some((i - 1, i - 1, jj - 1, jj - 1)),
                Some((as_, ae, bs, be)) if as_ == i && bs == jj => Some((as_ - 1, ae, bs - 1, be)),
                Some(r) => {
                    emit = true;
                    Some(r)
                }
            };
            if let Some((as_, _, bs, _)) = cur {
                if as_ == 0 || bs == 0 {
                    emit = true;
                }
            }
            idx -= 1;
            i -= 1;
            jj -= 1;
        } else {
            if table[(i - 1) * w + jj] > table[i * w + jj - 1] {
                i -= 1;
            } else {
                jj -= 1;
            }
            if cur.is_some() {
                emit = true;
            }
        }
        if emit {
            if let Some((as_, ae, bs, be)) = cur.take() {
                let mlen = (ae - as_ + 1) as u64;
                if minmatchlen == 0 || mlen >= minmatchlen {
                    ranges.push([as_ as u64, ae as u64, bs as u64, be as u64, mlen]);
                }
            }
        }
    }
    if !getidx {
        return c.out.bulk(&result);
    }
    c.out.map(2);
    c.out.bulk(b"matches");
    c.out.array(ranges.len());
    for r in &ranges {
        c.out.array(if withmatchlen { 3 } else { 2 });
        c.out.array(2);
        c.out.int(r[0] as i64);
        c.out.int(r[1] as i64);
        c.out.array(2);
        c.out.int(r[2] as i64);
        c.out.int(r[3] as i64);
        if withmatchlen {
            c.out.int(r[4] as i64);
        }
    }
    c.out.bulk(b"len");
    c.out.int(len as i64);
}
