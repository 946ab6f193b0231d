//! Set commands: SADD SREM SMOVE SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SINTER
//! SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SMEMBERS SSCAN. Mirrors
//! Redis 7.0's t_set.c (SSCAN: db.c's scanGenericCommand).
//!
//! A set is one object in the store (see `hash` for how reads and writes reach it).
//! The multi-key commands lock every key's shard at once, so they are atomic; they read
//! each source once for the keyspace statistics (as Redis's lookupKeyRead) and type-check
//! all of them before computing anything, so a WRONGTYPE anywhere leaves the destination
//! untouched.

use super::hash::{distinct_indices, parse_random_count};
use super::{write_error, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::{GENERIC, SET};
use crate::notify::notify;
use crate::resp::{parse_i64, Args};
use crate::state::Shared;
use augur_store::{Detached, Kind, Object, Set, Value};
use std::borrow::Cow;

/// The set inside an object `read_object`/`write_object` returned for `Kind::Set`.
fn set(o: &Object) -> &Set {
    o.as_set().expect("Kind::Set lookups return sets")
}

fn set_mut(o: &mut Object) -> &mut Set {
    o.as_set_mut().expect("Kind::Set lookups return sets")
}

pub(super) fn sadd_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let lim = shared.store.encoding_limits();
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(c.ns(), key, Kind::Set, true, now, |o| {
        let s = set_mut(o);
        let n = args.iter().skip(2).filter(|m| s.insert(m, &lim)).count();
        (n, n > 0)
    });
    drop(shard);
    if matches!(r, Ok(Some(n)) if n > 0) {
        notify(shared, c, SET, "sadd", key);
    }
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(n) => c.out.int(n.unwrap_or(0) as i64),
    }
}

pub(super) fn srem_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(c.ns(), key, Kind::Set, false, now, |o| {
        let s = set_mut(o);
        let n = args.iter().skip(2).filter(|m| s.remove(m)).count();
        ((n, s.is_empty()), n > 0)
    });
    drop(shard);
    if let Ok(Some((n, emptied))) = r {
        if n > 0 {
            notify(shared, c, SET, "srem", key);
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

pub(super) fn smove_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (src, dst, member) = (args.get(1), args.get(2), args.get(3));
    let ns = c.ns();
    let lim = shared.store.encoding_limits();
    let mut lock = shared.store.lock_keys(&[src, dst]);
    let src_kind = lock.shard_for(src).kind(ns, src, now);
    let dst_kind = lock.shard_for(dst).kind(ns, dst, now);
    let Some(src_kind) = src_kind else {
        return c.out.int(0);
    };
    if src_kind != Kind::Set || dst_kind.is_some_and(|k| k != Kind::Set) {
        return c.out.error(ERR_WRONGTYPE);
    }
    if src == dst {
        let there = lock
            .shard_for(src)
            .read_object(ns, src, Kind::Set, now)
            .ok()
            .flatten()
            .is_some_and(|o| set(o).contains(member));
        return c.out.int(there as i64);
    }
    let removed = lock
        .shard_for(src)
        .write_object_if(ns, src, Kind::Set, false, now, |o| {
            let s = set_mut(o);
            let r = s.remove(member);
            ((r, s.is_empty()), r)
        });
    let Ok(Some((true, emptied))) = removed else {
        return c.out.int(0);
    };
    notify(shared, c, SET, "srem", src);
    if emptied {
        notify(shared, c, GENERIC, "del", src);
    }
    // Redis touches (and notifies) the destination only when the member was added.
    let added = lock
        .shard_for(dst)
        .write_object_if(ns, dst, Kind::Set, true, now, |o| {
            let added = set_mut(o).insert(member, &lim);
            (added, added)
        });
    if added == Ok(Some(true)) {
        notify(shared, c, SET, "sadd", dst);
    }
    c.out.int(1);
}

/// SISMEMBER, SMISMEMBER and SCARD.
pub(super) fn set_query_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let s = match shard.read_object(c.ns(), key, Kind::Set, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(set),
    };
    match spec.cmd {
        Cmd::SCard => c.out.int(s.map_or(0, Set::len) as i64),
        Cmd::SIsMember => c.out.int(s.is_some_and(|s| s.contains(args.get(2))) as i64),
        _ => {
            c.out.array(args.len() - 2);
            for m in args.iter().skip(2) {
                c.out.int(s.is_some_and(|s| s.contains(m)) as i64);
            }
        }
    }
}

pub(super) fn smembers_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.read_object(c.ns(), key, Kind::Set, now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.set(0),
        Ok(Some(o)) => {
            let s = set(o);
            c.out.set(s.len());
            for m in s.iter() {
                c.out.bulk(&m);
            }
        }
    }
}

pub(super) fn spop_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut rng = rand::thread_rng();
    if args.len() > 3 {
        return c.out.error(ERR_SYNTAX);
    }
    if args.len() == 2 {
        let mut shard = shared.store.lock_key(key);
        let r = shard.write_object_if(c.ns(), key, Kind::Set, false, now, |o| {
            let s = set_mut(o);
            let m = s.pop_random(&mut rng);
            let emptied = s.is_empty();
            ((m, emptied), true)
        });
        drop(shard);
        if let Ok(Some((Some(_), emptied))) = &r {
            notify(shared, c, SET, "spop", key);
            if *emptied {
                notify(shared, c, GENERIC, "del", key);
            }
        }
        let r = r.map(|o| o.map(|(m, _)| m));
        return match r {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(Some(Some(m))) => c.out.bulk(&m),
            Ok(_) => c.out.null(),
        };
    }
    let count = match parse_i64(args.get(2)) {
        None => return c.out.error(ERR_NOT_INT),
        Some(n) if n < 0 => return c.out.error("ERR value is out of range, must be positive"),
        Some(n) => n as u64,
    };
    let mut shard = shared.store.lock_key(key);
    if count == 0 {
        // Still a lookup: WRONGTYPE on another type, an empty set otherwise.
        return match shard.read_object(c.ns(), key, Kind::Set, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(_) => c.out.set(0),
        };
    }
    let r = shard.write_object(c.ns(), key, Kind::Set, false, now, |o| {
        let s = set_mut(o);
        if count as usize >= s.len() {
            let all: Vec<Vec<u8>> = s.iter().map(Cow::into_owned).collect();
            *s = Set::new();
            (all, true)
        } else {
            (
                (0..count).filter_map(|_| s.pop_random(&mut rng)).collect(),
                false,
            )
        }
    });
    drop(shard);
    if let Ok(Some((_, emptied))) = &r {
        notify(shared, c, SET, "spop", key);
        if *emptied {
            notify(shared, c, GENERIC, "del", key);
        }
    }
    let r = r.map(|o| o.map(|(m, _)| m));
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.set(0),
        Ok(Some(popped)) => {
            c.out.set(popped.len());
            for m in &popped {
                c.out.bulk(m);
            }
        }
    }
}

pub(super) fn srandmember_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut rng = rand::thread_rng();
    if args.len() > 3 {
        return c.out.error(ERR_SYNTAX);
    }
    if args.len() == 2 {
        let mut shard = shared.store.lock_key(key);
        return match shard.read_object(c.ns(), key, Kind::Set, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(o) => match o.and_then(|o| set(o).random(&mut rng)) {
                Some(m) => c.out.bulk(&m),
                None => c.out.null(),
            },
        };
    }
    let Some(count) = parse_random_count(&mut c.out, args.get(2)) else {
        return;
    };
    let mut shard = shared.store.lock_key(key);
    let s = match shard.read_object(c.ns(), key, Kind::Set, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.array(0),
        Ok(Some(o)) => set(o),
    };
    if count < 0 {
        // Repeats allowed: each pick independent and uniform.
        let n = count.unsigned_abs();
        c.out.array(n as usize);
        for _ in 0..n {
            if let Some(m) = s.random(&mut rng) {
                c.out.bulk(&m);
            }
        }
        return;
    }
    let picked: Vec<Cow<'_, [u8]>> = if count as usize >= s.len() {
        s.iter().collect()
    } else {
        let all: Vec<Cow<'_, [u8]>> = s.iter().collect();
        distinct_indices(all.len(), count as usize, &mut rng)
            .into_iter()
            .map(|i| all[i].clone())
            .collect()
    };
    c.out.set(picked.len());
    for m in &picked {
        c.out.bulk(m);
    }
}

/// SINTER, SUNION and SDIFF and their STORE forms, and SINTERCARD.
pub(super) fn setop_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let store = matches!(
        spec.cmd,
        Cmd::SInterStore | Cmd::SUnionStore | Cmd::SDiffStore
    );
    let mut limit = 0usize;
    let keys: Vec<&[u8]> = if spec.cmd == Cmd::SInterCard {
        let numkeys = match parse_i64(args.get(1)) {
            Some(n) if n >= 1 => n as usize,
            _ => return c.out.error("ERR numkeys should be greater than 0"),
        };
        if numkeys > args.len() - 2 {
            return c
                .out
                .error("ERR Number of keys can't be greater than number of args");
        }
        let mut i = 2 + numkeys;
        while i < args.len() {
            if super::eq(args.get(i), "limit") && i + 1 < args.len() {
                match parse_i64(args.get(i + 1)) {
                    Some(n) if n >= 0 => limit = n as usize,
                    _ => return c.out.error("ERR LIMIT can't be negative"),
                }
                i += 2;
            } else {
                return c.out.error(ERR_SYNTAX);
            }
        }
        args.iter().skip(2).take(numkeys).collect()
    } else {
        args.iter().skip(if store { 2 } else { 1 }).collect()
    };
    let dst = store.then(|| args.get(1));
    let mut all_keys = keys.clone();
    all_keys.extend(dst);
    let ns = c.ns();
    let lim = shared.store.encoding_limits();
    let mut lock = shared.store.lock_keys(&all_keys);

    // Look every source up once (hit/miss, recency), type-checking all of them first.
    let mut sizes: Vec<Option<usize>> = Vec::with_capacity(keys.len());
    for k in &keys {
        match lock.shard_for(k).read_object(ns, k, Kind::Set, now) {
            Err(_) => return c.out.error(ERR_WRONGTYPE),
            Ok(o) => sizes.push(o.map(|o| o.len())),
        }
    }
    // Later reads of the same sources: no stats, no touch (they were counted above).
    let mut members_of = |k: &[u8], f: &mut dyn FnMut(&Set)| {
        if let Ok(Some(o)) = lock.shard_for(k).peek_object(ns, k, Kind::Set, now) {
            f(set(o));
        }
    };
    let result: Vec<Vec<u8>> = match spec.cmd {
        Cmd::SInter | Cmd::SInterStore | Cmd::SInterCard => {
            if sizes.iter().any(Option::is_none) {
                Vec::new()
            } else {
                // From the smallest set, keep what every other set has (t_set.c's order).
                let mut order: Vec<usize> = (0..keys.len()).collect();
                order.sort_by_key(|&i| sizes[i]);
                let mut acc: Vec<Vec<u8>> = Vec::new();
                members_of(keys[order[0]], &mut |s| {
                    acc = s.iter().map(Cow::into_owned).collect();
                });
                for &i in &order[1..] {
                    if acc.is_empty() {
                        break;
                    }
                    members_of(keys[i], &mut |s| acc.retain(|m| s.contains(m)));
                }
                acc
            }
        }
        Cmd::SUnion | Cmd::SUnionStore => {
            let mut acc = Set::new();
            for k in &keys {
                members_of(k, &mut |s| {
                    for m in s.iter() {
                        acc.insert(&m, &lim);
                    }
                });
            }
            acc.iter().map(Cow::into_owned).collect()
        }
        _ => {
            let mut acc = Set::new();
            members_of(keys[0], &mut |s| {
                for m in s.iter() {
                    acc.insert(&m, &lim);
                }
            });
            for k in &keys[1..] {
                if acc.is_empty() {
                    break;
                }
                members_of(k, &mut |s| {
                    for m in s.iter() {
                        acc.remove(&m);
                    }
                });
            }
            acc.iter().map(Cow::into_owned).collect()
        }
    };
    if spec.cmd == Cmd::SInterCard {
        let n = if limit > 0 {
            result.len().min(limit)
        } else {
            result.len()
        };
        return c.out.int(n as i64);
    }
    let Some(dst) = dst else {
        c.out.set(result.len());
        for m in &result {
            c.out.bulk(m);
        }
        return;
    };
    // The destination is replaced whatever it held, its TTL dropped (Redis's setKey);
    // an empty result deletes it.
    let mut out = Set::new();
    for m in &result {
        out.insert(m, &lim);
    }
    let n = out.len();
    let value = Value::Object(Box::new(Object::Set(out)));
    let d = Detached {
        value,
        expire_at_ms: None,
    };
    let existed = n == 0 && lock.shard_for(dst).exists(ns, dst, now);
    match lock.shard_for(dst).put(ns, dst, d, now) {
        Ok(()) => {
            if n > 0 {
                let event = match spec.cmd {
                    Cmd::SInterStore => "sinterstore",
                    Cmd::SUnionStore => "sunionstore",
                    _ => "sdiffstore",
                };
                notify(shared, c, SET, event, dst);
            } else if existed {
                notify(shared, c, GENERIC, "del", dst);
            }
            c.out.int(n as i64)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}
