//! Hash commands: HSET HSETNX HGET HMSET HMGET HINCRBY HINCRBYFLOAT HDEL HLEN HSTRLEN
//! HKEYS HVALS HGETALL HEXISTS HSCAN HRANDFIELD. Mirrors Redis 7.0's t_hash.c (HSCAN:
//! db.c's scanGenericCommand).
//!
//! A hash is one object in the store ([`augur_store::Object`]): reads go through
//! `Shard::read_object` (a keyspace hit or miss, the key made most recently used, one
//! sized reference for the profiler), writes through `Shard::write_object`, which
//! deletes a hash left empty and evicts *other* keys if the hash grew past the budget.

use super::{arity_error, eq, Client, ERR_NOT_FLOAT, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::long_double::LongDouble;
use crate::notify::flags::{GENERIC, HASH};
use crate::notify::notify;
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::{Hash, Kind, Object};
use rand::seq::SliceRandom;
use rand::Rng;

/// The hash inside an object `read_object`/`write_object` returned for `Kind::Hash`.
fn hash(o: &Object) -> &Hash {
    o.as_hash().expect("Kind::Hash lookups return hashes")
}

fn hash_mut(o: &mut Object) -> &mut Hash {
    o.as_hash_mut().expect("Kind::Hash lookups return hashes")
}

/// HSET and HMSET (one reply differs: HSET counts new fields, HMSET says OK).
pub(super) fn hset_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    // Pairs after the key: an odd argument count (with the name) is a missing value.
    if !args.len().is_multiple_of(2) {
        return arity_error(&mut c.out, spec.name);
    }
    let key = args.get(1);
    let lim = shared.store.encoding_limits();
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object(c.ns(), key, Kind::Hash, true, now, |o| {
        let h = hash_mut(o);
        (2..args.len())
            .step_by(2)
            .filter(|&i| h.set(args.get(i), args.get(i + 1), &lim))
            .count()
    });
    drop(shard);
    if r.is_ok() {
        notify(shared, c, HASH, "hset", key);
    }
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(n) if spec.cmd == Cmd::HSet => c.out.int(n.unwrap_or(0) as i64),
        Ok(_) => c.out.ok(),
    }
}

pub(super) fn hsetnx_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (key, field, value) = (args.get(1), args.get(2), args.get(3));
    let lim = shared.store.encoding_limits();
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(c.ns(), key, Kind::Hash, true, now, |o| {
        let h = hash_mut(o);
        let set = !h.contains(field) && h.set(field, value, &lim);
        (set, set)
    });
    drop(shard);
    if let Ok(Some(true)) = r {
        notify(shared, c, HASH, "hset", key);
    }
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(set) => c.out.int(set.unwrap_or(false) as i64),
    }
}

pub(super) fn hget_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.read_object(c.ns(), key, Kind::Hash, now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(o) => match o.and_then(|o| hash(o).get(args.get(2))) {
            Some(v) => c.out.bulk(v),
            None => c.out.null(),
        },
    }
}

pub(super) fn hmget_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let h = match shard.read_object(c.ns(), key, Kind::Hash, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(hash),
    };
    c.out.array(args.len() - 2);
    for f in args.iter().skip(2) {
        match h.and_then(|h| h.get(f)) {
            Some(v) => c.out.bulk(v),
            None => c.out.null(),
        }
    }
}

pub(super) fn hincrby_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(by) = parse_i64(args.get(3)) else {
        return c.out.error(ERR_NOT_INT);
    };
    let (key, field) = (args.get(1), args.get(2));
    let lim = shared.store.encoding_limits();
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(c.ns(), key, Kind::Hash, true, now, |o| {
        let h = hash_mut(o);
        let r = (|| {
            let old = match h.get(field) {
                None => 0,
                Some(v) => parse_i64(v).ok_or("ERR hash value is not an integer")?,
            };
            let new = old
                .checked_add(by)
                .ok_or("ERR increment or decrement would overflow")?;
            let mut b = itoa::Buffer::new();
            h.set(field, b.format(new).as_bytes(), &lim);
            Ok(new)
        })();
        let changed = r.is_ok();
        (r, changed)
    });
    drop(shard);
    if let Ok(Some(Ok(_))) = r {
        notify(shared, c, HASH, "hincrby", key);
    }
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(Some(Ok(n))) => c.out.int(n),
        Ok(Some(Err(e))) => c.out.error(e),
        Ok(None) => c.out.error("ERR no such key"),
    }
}

pub(super) fn hincrbyfloat_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(by) = LongDouble::parse(args.get(3)) else {
        return c.out.error(ERR_NOT_FLOAT);
    };
    if by.is_infinite() {
        return c.out.error("ERR value is NaN or Infinity");
    }
    let (key, field) = (args.get(1), args.get(2));
    let lim = shared.store.encoding_limits();
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(c.ns(), key, Kind::Hash, true, now, |o| {
        let h = hash_mut(o);
        let r = (|| {
            let old = match h.get(field) {
                None => LongDouble::ZERO,
                Some(v) => LongDouble::parse(v).ok_or("ERR hash value is not a float")?,
            };
            let new = old
                .checked_add(&by)
                .ok_or("ERR increment would produce NaN or Infinity")?;
            // As INCRBYFLOAT: Redis's long double text.
            let text = new.to_human();
            h.set(field, &text, &lim);
            Ok(text)
        })();
        let changed = r.is_ok();
        (r, changed)
    });
    drop(shard);
    if let Ok(Some(Ok(_))) = r {
        notify(shared, c, HASH, "hincrbyfloat", key);
    }
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(Some(Ok(t))) => c.out.bulk(&t),
        Ok(Some(Err(e))) => c.out.error(e),
        Ok(None) => c.out.error("ERR no such key"),
    }
}

pub(super) fn hdel_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(c.ns(), key, Kind::Hash, false, now, |o| {
        let h = hash_mut(o);
        let n = args.iter().skip(2).filter(|f| h.remove(f)).count();
        ((n, h.is_empty()), n > 0)
    });
    drop(shard);
    if let Ok(Some((n, emptied))) = r {
        if n > 0 {
            notify(shared, c, HASH, "hdel", key);
        }
        if emptied {
            notify(shared, c, GENERIC, "del", key);
        }
    }
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(n) => c.out.int(n.map_or(0, |(n, _)| n) as i64),
    }
}

/// HLEN, HSTRLEN and HEXISTS: one integer about the hash.
pub(super) fn hash_int_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let h = match shard.read_object(c.ns(), key, Kind::Hash, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(hash),
    };
    let n = match spec.cmd {
        Cmd::HLen => h.map_or(0, Hash::len),
        Cmd::HStrLen => h.and_then(|h| h.get(args.get(2))).map_or(0, <[u8]>::len),
        _ => h.is_some_and(|h| h.contains(args.get(2))) as usize,
    };
    c.out.int(n as i64);
}

/// HKEYS, HVALS and HGETALL.
pub(super) fn hgetall_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let h = match shard.read_object(c.ns(), key, Kind::Hash, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(hash),
    };
    let n = h.map_or(0, Hash::len);
    match spec.cmd {
        Cmd::HGetAll => c.out.map(n),
        _ => c.out.array(n),
    }
    let Some(h) = h else {
        return;
    };
    for (f, v) in h.iter() {
        match spec.cmd {
            Cmd::HKeys => c.out.bulk(f),
            Cmd::HVals => c.out.bulk(v),
            _ => {
                c.out.bulk(f);
                c.out.bulk(v);
            }
        }
    }
}

/// Parses the count of HRANDFIELD / SRANDMEMBER (`-LONG_MAX..=LONG_MAX`, t_hash.c's
/// getRangeLongFromObjectOrReply).
pub(super) fn parse_random_count(out: &mut Out, arg: &[u8]) -> Option<i64> {
    super::parse_long_in(arg, -i64::MAX, i64::MAX, None)
        .map_err(|e| out.error(&e))
        .ok()
}

/// HRANDFIELD's and ZRANDMEMBER's `count [WITHVALUES|WITHSCORES]` (`with` names the
/// option): the count and whether the option was given, or the error written. With the
/// option a count beyond ±LONG_MAX/2 is refused (its reply would have twice as many
/// elements), as t_hash.c and t_zset.c do.
pub(super) fn parse_random_args(out: &mut Out, args: Args<'_>, with: &str) -> Option<(i64, bool)> {
    let count = parse_random_count(out, args.get(2))?;
    let with = match args.len() {
        3 => false,
        4 if eq(args.get(3), with) => true,
        _ => {
            out.error(ERR_SYNTAX);
            return None;
        }
    };
    if with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        out.error("ERR value is out of range");
        return None;
    }
    Some((count, with))
}

/// `count` distinct indices of `0..n` (count < n), uniformly: a partial Fisher-Yates
/// shuffle when asking for much of the collection, else rejection of repeats (Redis's
/// CASE 3 and CASE 4 of srandmemberWithCountCommand).
pub(super) fn distinct_indices<R: Rng + ?Sized>(n: usize, count: usize, rng: &mut R) -> Vec<usize> {
    if count * 3 > n {
        let mut all: Vec<usize> = (0..n).collect();
        let (picked, _) = all.partial_shuffle(rng, count);
        picked.to_vec()
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = rng.gen_range(0..n);
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

pub(super) fn hrandfield_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut rng = rand::thread_rng();
    if args.len() == 2 {
        let mut shard = shared.store.lock_key(key);
        return match shard.read_object(c.ns(), key, Kind::Hash, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(o) => match o.and_then(|o| hash(o).random(&mut rng)) {
                Some((f, _)) => c.out.bulk(f),
                None => c.out.null(),
            },
        };
    }
    let Some((count, withvalues)) = parse_random_args(&mut c.out, args, "withvalues") else {
        return;
    };
    let mut shard = shared.store.lock_key(key);
    let h = match shard.read_object(c.ns(), key, Kind::Hash, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.array(0),
        Ok(Some(o)) => hash(o),
    };
    let pairs: Vec<(&[u8], &[u8])> = if count < 0 {
        // Repeats allowed: each pick independent and uniform.
        (0..count.unsigned_abs())
            .filter_map(|_| h.random(&mut rng))
            .collect()
    } else if count as usize >= h.len() {
        h.iter().collect()
    } else {
        let all: Vec<(&[u8], &[u8])> = h.iter().collect();
        distinct_indices(all.len(), count as usize, &mut rng)
            .into_iter()
            .map(|i| all[i])
            .collect()
    };
    reply_pairs(&mut c.out, &pairs, withvalues);
}

/// HRANDFIELD's reply: fields, or fields and values (RESP3: an array of pairs).
fn reply_pairs(out: &mut Out, pairs: &[(&[u8], &[u8])], withvalues: bool) {
    if !withvalues {
        out.array(pairs.len());
        for (f, _) in pairs {
            out.bulk(f);
        }
    } else if out.resp3 {
        out.array(pairs.len());
        for (f, v) in pairs {
            out.array(2);
            out.bulk(f);
            out.bulk(v);
        }
    } else {
        out.array(pairs.len() * 2);
        for (f, v) in pairs {
            out.bulk(f);
            out.bulk(v);
        }
    }
}
