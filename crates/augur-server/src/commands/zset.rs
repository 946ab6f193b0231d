//! Sorted-set commands: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZCOUNT ZLEXCOUNT ZRANK
//! ZREVRANK, the range family (ZRANGE with BYSCORE/BYLEX/REV/LIMIT, ZRANGESTORE,
//! ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX), ZREMRANGEBYRANK
//! / SCORE / LEX, ZPOPMIN ZPOPMAX ZMPOP (and, through `list`'s blocking service, BZPOPMIN
//! BZPOPMAX BZMPOP), ZRANDMEMBER, the set algebra (ZUNION ZINTER ZDIFF, their STORE
//! forms, ZINTERCARD). ZSCAN is `scan`'s. Mirrors Redis 7.0's t_zset.c: argument order
//! (options parsed before the key is looked up), error texts, keyspace events, the
//! RESP3 shapes (pairs as nested arrays), doubles replied with `%.17g`.
//!
//! A sorted set is one object in the store (`augur_store::ZSet`; see `hash` for how reads
//! and writes reach it). Every range query becomes a rank interval there, so LIMIT,
//! REV and ZREMRANGEBY* are one code path.

use super::hash::{distinct_indices, parse_random_args};
use super::list::{resolve_range, Target};
use super::{
    eq, parse_long_in, parse_mpop_args, write_error, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE,
};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::long_double::{range_strtod, string2d};
use crate::notify::flags::{GENERIC, ZSET};
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::{Detached, Kind, LexBound, LexRange, Object, ScoreRange, Value, WrongType, ZSet};
use std::collections::HashMap;

const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_NAN: &str = "ERR resulting score is not a number (NaN)";
const ERR_RANGE_FLOAT: &str = "ERR min or max is not a float";
const ERR_RANGE_LEX: &str = "ERR min or max not valid string range item";

/// A member and its score, owned (replies are written after the shard lock is released).
type Scored = (Vec<u8>, f64);

/// A key and the members popped from it.
type KeyPopped = (Vec<u8>, Vec<Scored>);

fn zset(o: &Object) -> &ZSet {
    o.as_zset().expect("Kind::ZSet lookups return sorted sets")
}

fn zset_mut(o: &mut Object) -> &mut ZSet {
    o.as_zset_mut()
        .expect("Kind::ZSet lookups return sorted sets")
}

/// zslParseRange: `(x` exclusive, `x` inclusive, strtod semantics.
pub(crate) fn parse_score_range(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
    let bound = |a: &[u8]| match a.first() {
        Some(b'(') => range_strtod(&a[1..]).map(|v| (v, true)),
        _ => range_strtod(a).map(|v| (v, false)),
    };
    let (min, min_exclusive) = bound(min)?;
    let (max, max_exclusive) = bound(max)?;
    Some(ScoreRange {
        min,
        max,
        min_exclusive,
        max_exclusive,
    })
}

/// zslParseLexRangeItem: `+`, `-`, `[member`, `(member`.
fn parse_lex_bound(a: &[u8]) -> Option<LexBound> {
    match a.first()? {
        b'+' if a.len() == 1 => Some(LexBound::PosInf),
        b'-' if a.len() == 1 => Some(LexBound::NegInf),
        b'(' => Some(LexBound::Exclusive(a[1..].to_vec())),
        b'[' => Some(LexBound::Inclusive(a[1..].to_vec())),
        _ => None,
    }
}

pub(crate) fn parse_lex_range(min: &[u8], max: &[u8]) -> Option<LexRange> {
    Some(LexRange {
        min: parse_lex_bound(min)?,
        max: parse_lex_bound(max)?,
    })
}

/// Members, or members and scores (RESP2 flat, RESP3 pairs), as zrangeResultEmit* does.
fn reply_members(out: &mut Out, items: &[Scored], withscores: bool) {
    let nested = withscores && out.resp3;
    reply_scored(out, items, withscores, nested);
}

/// Members (with `withscores` their scores), flat or, with `nested`, as [member, score]
/// pairs.
fn reply_scored(out: &mut Out, items: &[Scored], withscores: bool, nested: bool) {
    out.array(if withscores && !nested {
        items.len() * 2
    } else {
        items.len()
    });
    for (m, s) in items {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        if withscores {
            out.double(*s);
        }
    }
}

// ----- ZADD / ZINCRBY -----

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member ... and ZINCRBY key incr member
/// (zaddGenericCommand + zsetAdd).
pub(super) fn zadd_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, spec.cmd == Cmd::ZIncrBy);
    let mut idx = 2;
    if spec.cmd == Cmd::ZAdd {
        while idx < args.len() {
            let a = args.get(idx);
            match () {
                _ if eq(a, "nx") => nx = true,
                _ if eq(a, "xx") => xx = true,
                _ if eq(a, "gt") => gt = true,
                _ if eq(a, "lt") => lt = true,
                _ if eq(a, "ch") => ch = true,
                _ if eq(a, "incr") => incr = true,
                _ => break,
            }
            idx += 1;
        }
    }
    let elements = args.len() - idx;
    if !elements.is_multiple_of(2) || elements == 0 {
        return c.out.error(ERR_SYNTAX);
    }
    let elements = elements / 2;
    if nx && xx {
        return c
            .out
            .error("ERR XX and NX options at the same time are not compatible");
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return c
            .out
            .error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && elements > 1 {
        return c
            .out
            .error("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(elements);
    for j in 0..elements {
        match string2d(args.get(idx + 2 * j)) {
            Some(s) => pairs.push((s, args.get(idx + 2 * j + 1))),
            None => return c.out.error(ERR_NOT_FLOAT),
        }
    }
    let flags = ZAddFlags {
        nx,
        xx,
        gt,
        lt,
        ch,
        incr,
    };
    zadd_pairs(shared, c, key, flags, &pairs, now);
}

/// ZADD's options (zaddGenericCommand's flags).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ZAddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub ch: bool,
    pub incr: bool,
}

/// ZADD's work once its arguments are parsed and checked (zsetAdd for every pair, the
/// reply, the "zadd" / "zincr" event): also GEOADD's, whose scores are geohashes.
pub(super) fn zadd_pairs(
    shared: &Shared,
    c: &mut Client,
    key: &[u8],
    f: ZAddFlags,
    pairs: &[(f64, &[u8])],
    now: u64,
) {
    let ZAddFlags {
        nx,
        xx,
        gt,
        lt,
        ch,
        incr,
    } = f;
    let lim = shared.store.encoding_limits();
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    // (added, updated, processed, last new score, NaN met)
    let r = shard.write_object_if(t.ns, key, Kind::ZSet, !xx, now, |o| {
        let z = zset_mut(o);
        // Redis 7.0.15 converts as members are added (zsetAdd), not by the command's
        // pair count (7.2's zsetTypeMaybeConvert): `ZADD k 1 a 1 a 1 a 1 a` under
        // zset-max-listpack-entries 3 stays a listpack there (measured).
        let (mut added, mut updated, mut processed) = (0usize, 0usize, 0usize);
        let mut newscore = 0.0;
        let mut nan = false;
        for &(score, m) in pairs {
            // zsetAdd's decision for one member, on its current score.
            z.upsert(m, &lim, |cur| match cur {
                Some(_) if nx => None,
                Some(cur) => {
                    let score = if incr { score + cur } else { score };
                    if score.is_nan() {
                        nan = true;
                        return None;
                    }
                    if (lt && score >= cur) || (gt && score <= cur) {
                        return None;
                    }
                    newscore = score;
                    processed += 1;
                    if score != cur {
                        updated += 1;
                    }
                    Some(score)
                }
                None if xx => None,
                None => {
                    newscore = score;
                    added += 1;
                    processed += 1;
                    Some(score)
                }
            });
            if nan {
                break;
            }
        }
        let changed = added + updated > 0;
        ((added, updated, processed, newscore, nan), changed)
    });
    drop(shard);
    let (added, updated, processed, newscore, nan) = match r {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => (0, 0, 0, 0.0, false),
        Ok(Some(v)) => v,
    };
    if nan {
        c.out.error(ERR_NAN);
    } else if incr {
        if processed > 0 {
            c.out.double(newscore);
        } else {
            c.out.null();
        }
    } else {
        c.out.int((if ch { added + updated } else { added }) as i64);
    }
    if added + updated > 0 {
        t.notify(shared, ZSET, if incr { "zincr" } else { "zadd" }, key);
    }
    if added > 0 {
        t.signal(shared, key);
    }
}

/// ZREM key member [member ...].
pub(super) fn zrem_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::ZSet, false, now, |o| {
        let z = zset_mut(o);
        let n = args
            .iter()
            .skip(2)
            .filter(|m| z.remove(m).is_some())
            .count();
        ((n, z.is_empty()), n > 0)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some((n, emptied))) => {
            c.out.int(n as i64);
            if n > 0 {
                t.notify(shared, ZSET, "zrem", key);
            }
            if emptied {
                t.notify(shared, GENERIC, "del", key);
            }
        }
    }
}

/// ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT.
pub(super) fn zset_query_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    // The ranges are parsed before the lookup, as t_zset.c does.
    let mut score_range = None;
    let mut lex_range = None;
    match spec.cmd {
        Cmd::ZCount => match parse_score_range(args.get(2), args.get(3)) {
            Some(r) => score_range = Some(r),
            None => return c.out.error(ERR_RANGE_FLOAT),
        },
        Cmd::ZLexCount => match parse_lex_range(args.get(2), args.get(3)) {
            Some(r) => lex_range = Some(r),
            None => return c.out.error(ERR_RANGE_LEX),
        },
        _ => {}
    }
    let mut shard = shared.store.lock_key(key);
    let z = match shard.read_object(c.ns(), key, Kind::ZSet, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(zset),
    };
    match spec.cmd {
        Cmd::ZCard => c.out.int(z.map_or(0, ZSet::len) as i64),
        Cmd::ZScore => match z.and_then(|z| z.score(args.get(2))) {
            Some(s) => c.out.double(s),
            None => c.out.null(),
        },
        Cmd::ZMScore => {
            c.out.array(args.len() - 2);
            for m in args.iter().skip(2) {
                match z.and_then(|z| z.score(m)) {
                    Some(s) => c.out.double(s),
                    None => c.out.null(),
                }
            }
        }
        Cmd::ZRank | Cmd::ZRevRank => match z.and_then(|z| z.rank(args.get(2)).map(|r| (z, r))) {
            Some((z, r)) if spec.cmd == Cmd::ZRevRank => c.out.int((z.len() - 1 - r) as i64),
            Some((_, r)) => c.out.int(r as i64),
            None => c.out.null(),
        },
        Cmd::ZCount => {
            let r = score_range.expect("parsed above");
            c.out.int(z.map_or(0, |z| z.score_ranks(&r).len()) as i64)
        }
        _ => {
            let r = lex_range.expect("parsed above");
            c.out.int(z.map_or(0, |z| z.lex_ranks(&r).len()) as i64)
        }
    }
}

// ----- ranges -----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Rank,
    Score,
    Lex,
}

/// A parsed range request (zrangeGenericCommand's steps 1 and 2).
struct RangeSpec {
    by: RangeBy,
    rev: bool,
    withscores: bool,
    /// LIMIT offset count (count < 0: no limit).
    offset: i64,
    limit: i64,
    start: i64,
    end: i64,
    score: Option<ScoreRange>,
    lex: Option<LexRange>,
}

/// Parses a range's arguments from `first` (the key's index): `key min max [options]`.
fn parse_range(
    args: Args<'_>,
    first: usize,
    store: bool,
    preset_by: Option<RangeBy>,
    preset_rev: Option<bool>,
) -> Result<RangeSpec, String> {
    let (mut by, mut rev) = (preset_by, preset_rev);
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = first + 3;
    while j < args.len() {
        let a = args.get(j);
        let left = args.len() - j - 1;
        if !store && eq(a, "withscores") {
            withscores = true;
        } else if eq(a, "limit") && left >= 2 {
            offset = parse_i64(args.get(j + 1)).ok_or(ERR_NOT_INT)?;
            limit = parse_i64(args.get(j + 2)).ok_or(ERR_NOT_INT)?;
            j += 2;
        } else if preset_rev.is_none() && rev.is_none() && eq(a, "rev") {
            rev = Some(true);
        } else if preset_by.is_none() && by.is_none() && eq(a, "bylex") {
            by = Some(RangeBy::Lex);
        } else if preset_by.is_none() && by.is_none() && eq(a, "byscore") {
            by = Some(RangeBy::Score);
        } else {
            return Err(ERR_SYNTAX.into());
        }
        j += 1;
    }
    let by = by.unwrap_or(RangeBy::Rank);
    let rev = rev.unwrap_or(false);
    // Redis refuses a LIMIT with a rank range only when its count is not -1.
    if limit != -1 && by == RangeBy::Rank {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into(),
        );
    }
    if withscores && by == RangeBy::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX".into());
    }
    let (mut min_i, mut max_i) = (first + 1, first + 2);
    if rev && by != RangeBy::Rank {
        // The range is given as max, min.
        std::mem::swap(&mut min_i, &mut max_i);
    }
    let mut spec = RangeSpec {
        by,
        rev,
        withscores,
        offset,
        limit,
        start: 0,
        end: 0,
        score: None,
        lex: None,
    };
    match by {
        RangeBy::Rank => {
            spec.start = parse_i64(args.get(min_i)).ok_or(ERR_NOT_INT)?;
            spec.end = parse_i64(args.get(max_i)).ok_or(ERR_NOT_INT)?;
        }
        RangeBy::Score => {
            spec.score =
                Some(parse_score_range(args.get(min_i), args.get(max_i)).ok_or(ERR_RANGE_FLOAT)?);
        }
        RangeBy::Lex => {
            spec.lex =
                Some(parse_lex_range(args.get(min_i), args.get(max_i)).ok_or(ERR_RANGE_LEX)?);
        }
    }
    Ok(spec)
}

/// The members a range selects, in reply order.
fn select(z: &ZSet, r: &RangeSpec) -> Vec<(Vec<u8>, f64)> {
    let len = z.len() as i64;
    let ranks = match r.by {
        RangeBy::Rank => {
            let Some((first, n)) = resolve_range(r.start, r.end, z.len()) else {
                return Vec::new();
            };
            // REV counts ranks from the top.
            if r.rev {
                z.len() - first - n..z.len() - first
            } else {
                first..first + n
            }
        }
        RangeBy::Score => z.score_ranks(r.score.as_ref().expect("parsed")),
        RangeBy::Lex => z.lex_ranks(r.lex.as_ref().expect("parsed")),
    };
    let ranks = if r.by == RangeBy::Rank {
        ranks
    } else {
        // LIMIT: a negative offset selects nothing; a negative count is no limit.
        if r.offset < 0 || (r.offset > 0 && r.offset >= len) {
            return Vec::new();
        }
        let n = ranks.len();
        let skip = (r.offset as usize).min(n);
        let take = if r.limit < 0 {
            n - skip
        } else {
            (r.limit as usize).min(n - skip)
        };
        if r.rev {
            ranks.end - skip - take..ranks.end - skip
        } else {
            ranks.start + skip..ranks.start + skip + take
        }
    };
    let mut out = Vec::with_capacity(ranks.len());
    z.visit_ranks(ranks, r.rev, |m, s| out.push((m.to_vec(), s)));
    out
}

/// ZRANGE ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX
/// ZRANGESTORE.
pub(super) fn zrange_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let store = spec.cmd == Cmd::ZRangeStore;
    let (by, rev) = match spec.cmd {
        Cmd::ZRange | Cmd::ZRangeStore => (None, None),
        Cmd::ZRevRange => (Some(RangeBy::Rank), Some(true)),
        Cmd::ZRangeByScore => (Some(RangeBy::Score), Some(false)),
        Cmd::ZRevRangeByScore => (Some(RangeBy::Score), Some(true)),
        Cmd::ZRangeByLex => (Some(RangeBy::Lex), Some(false)),
        _ => (Some(RangeBy::Lex), Some(true)),
    };
    let first = if store { 2 } else { 1 };
    let r = match parse_range(args, first, store, by, rev) {
        Ok(r) => r,
        Err(e) => return c.out.error(&e),
    };
    let src = args.get(first);
    let t = Target::of(c);
    if !store {
        let mut shard = shared.store.lock_key(src);
        return match shard.read_object(t.ns, src, Kind::ZSet, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(None) => c.out.array(0),
            Ok(Some(o)) => {
                let items = select(zset(o), &r);
                reply_members(&mut c.out, &items, r.withscores)
            }
        };
    }
    let dst = args.get(1);
    let mut lock = shared.store.lock_keys(&[src, dst]);
    let items = match lock.shard_for(src).read_object(t.ns, src, Kind::ZSet, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => Vec::new(),
        Ok(Some(o)) => select(zset(o), &r),
    };
    let lim = shared.store.encoding_limits();
    let hint = if r.by == RangeBy::Rank {
        items.len()
    } else {
        0
    };
    let mut out = ZSet::with_hint(hint, 0, &lim);
    for (m, s) in &items {
        out.insert(m, *s, &lim);
    }
    store_result(shared, c, &mut lock, t, dst, out, "zrangestore", now);
}

/// Stores a command's result set at `dst` (setKey: replacing any value, dropping the
/// TTL), or deletes `dst` when the result is empty; replies the result's size.
#[allow(clippy::too_many_arguments)]
pub(super) fn store_result(
    shared: &Shared,
    c: &mut Client,
    lock: &mut augur_store::MultiLock<'_>,
    t: Target,
    dst: &[u8],
    result: ZSet,
    event: &str,
    now: u64,
) {
    let n = result.len();
    if n == 0 {
        let existed = lock.shard_for(dst).delete(t.ns, dst, now);
        c.out.int(0);
        if existed {
            t.notify(shared, GENERIC, "del", dst);
        }
        return;
    }
    let d = Detached {
        value: Value::Object(Box::new(Object::ZSet(result))),
        expire_at_ms: None,
    };
    match lock.shard_for(dst).put(t.ns, dst, d, now) {
        Ok(()) => {
            c.out.int(n as i64);
            t.notify(shared, ZSET, event, dst);
            t.signal(shared, dst);
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

/// ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX (zremrangeGenericCommand).
pub(super) fn zremrange_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    enum R {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange),
    }
    let (range, event) = match spec.cmd {
        Cmd::ZRemRangeByRank => match (parse_i64(args.get(2)), parse_i64(args.get(3))) {
            (Some(s), Some(e)) => (R::Rank(s, e), "zremrangebyrank"),
            _ => return c.out.error(ERR_NOT_INT),
        },
        Cmd::ZRemRangeByScore => match parse_score_range(args.get(2), args.get(3)) {
            Some(r) => (R::Score(r), "zremrangebyscore"),
            None => return c.out.error(ERR_RANGE_FLOAT),
        },
        _ => match parse_lex_range(args.get(2), args.get(3)) {
            Some(r) => (R::Lex(r), "zremrangebylex"),
            None => return c.out.error(ERR_RANGE_LEX),
        },
    };
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::ZSet, false, now, |o| {
        let z = zset_mut(o);
        let ranks = match &range {
            R::Rank(s, e) => resolve_range(*s, *e, z.len()).map_or(0..0, |(f, n)| f..f + n),
            R::Score(r) => z.score_ranks(r),
            R::Lex(r) => z.lex_ranks(r),
        };
        let n = z.remove_ranks(ranks);
        ((n, z.is_empty()), n > 0)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some((n, emptied))) => {
            c.out.int(n as i64);
            if n > 0 {
                t.notify(shared, ZSET, event, key);
            }
            if emptied {
                t.notify(shared, GENERIC, "del", key);
            }
        }
    }
}

// ----- pops (shared with the blocked clients' service) -----

/// Pops up to `count` members from the low (or, with `max`, high) end of the first of
/// `keys` that holds a sorted set (genericZpopCommand's scan): Ok(None) if none does;
/// WRONGTYPE stops the scan at the first key of another type.
pub(crate) fn pop_first(
    shared: &Shared,
    t: Target,
    keys: &[&[u8]],
    max: bool,
    count: usize,
    now: u64,
) -> Result<Option<KeyPopped>, WrongType> {
    for key in keys {
        let mut shard = shared.store.lock_key(key);
        let r = shard.write_object_if(t.ns, key, Kind::ZSet, false, now, |o| {
            let z = zset_mut(o);
            let popped = z.pop(count, max);
            let changed = !popped.is_empty();
            ((popped, z.is_empty()), changed)
        });
        drop(shard);
        if let Some((popped, emptied)) = r? {
            if popped.is_empty() {
                continue;
            }
            t.notify(shared, ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
            if emptied {
                t.notify(shared, GENERIC, "del", key);
            }
            return Ok(Some((key.to_vec(), popped)));
        }
    }
    Ok(None)
}

/// How a pop's reply is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PopReply {
    /// BZPOPMIN / BZPOPMAX: `[key, member, score]`.
    KeyMemberScore,
    /// ZMPOP / BZMPOP: `[key, [[member, score], ...]]`.
    KeyPairs,
}

pub(crate) fn reply_pop(out: &mut Out, shape: PopReply, key: &[u8], items: &[(Vec<u8>, f64)]) {
    match shape {
        PopReply::KeyMemberScore => {
            out.array(1 + 2 * items.len());
            out.bulk(key);
            for (m, s) in items {
                out.bulk(m);
                out.double(*s);
            }
        }
        PopReply::KeyPairs => {
            out.array(2);
            out.bulk(key);
            reply_scored(out, items, true, true);
        }
    }
}

/// ZPOPMIN / ZPOPMAX key [count].
pub(super) fn zpop_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    if args.len() > 3 {
        return c.out.error(ERR_SYNTAX);
    }
    let count = if args.len() == 3 {
        match parse_long_in(
            args.get(2),
            0,
            i64::MAX,
            Some("value is out of range, must be positive"),
        ) {
            Ok(n) => Some(n as usize),
            Err(e) => return c.out.error(&e),
        }
    } else {
        None
    };
    let key = args.get(1);
    let max = spec.cmd == Cmd::ZPopMax;
    if count == Some(0) {
        // Still a lookup for the type check.
        let mut shard = shared.store.lock_key(key);
        return match shard.read_object(c.ns(), key, Kind::ZSet, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(_) => c.out.array(0),
        };
    }
    match pop_first(shared, Target::of(c), &[key], max, count.unwrap_or(1), now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.array(0),
        Ok(Some((_, items))) => {
            // RESP3 with a count: pairs; otherwise flat.
            let nested = c.out.resp3 && count.is_some();
            reply_scored(&mut c.out, &items, true, nested)
        }
    }
}

/// ZMPOP's and BZMPOP's arguments from `numkeys_idx`: (keys, max, count).
pub(crate) fn parse_zmpop(
    args: Args<'_>,
    numkeys_idx: usize,
) -> Result<(Vec<&[u8]>, bool, usize), String> {
    parse_mpop_args(args, numkeys_idx, |a| match a {
        a if eq(a, "min") => Some(false),
        a if eq(a, "max") => Some(true),
        _ => None,
    })
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
pub(super) fn zmpop_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (keys, max, count) = match parse_zmpop(args, 1) {
        Ok(p) => p,
        Err(e) => return c.out.error(&e),
    };
    match pop_first(shared, Target::of(c), &keys, max, count, now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.null_array(),
        Ok(Some((key, items))) => reply_pop(&mut c.out, PopReply::KeyPairs, &key, &items),
    }
}

// ----- ZRANDMEMBER -----

/// ZRANDMEMBER key [count [WITHSCORES]] (zrandmemberWithCountCommand).
pub(super) fn zrandmember_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut rng = rand::thread_rng();
    if args.len() == 2 {
        let mut shard = shared.store.lock_key(key);
        return match shard.read_object(c.ns(), key, Kind::ZSet, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(None) => c.out.null(),
            Ok(Some(o)) => {
                let z = zset(o);
                let r = rand::Rng::gen_range(&mut rng, 0..z.len());
                let (m, _) = z.get_by_rank(r).expect("rank below len");
                c.out.bulk(m)
            }
        };
    }
    let Some((count, withscores)) = parse_random_args(&mut c.out, args, "withscores") else {
        return;
    };
    let mut shard = shared.store.lock_key(key);
    let z = match shard.read_object(c.ns(), key, Kind::ZSet, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.array(0),
        Ok(Some(o)) => zset(o),
    };
    let len = z.len();
    let ranks: Vec<usize> = if count < 0 {
        // Repeats allowed: each pick independent and uniform.
        (0..count.unsigned_abs())
            .map(|_| rand::Rng::gen_range(&mut rng, 0..len))
            .collect()
    } else if count as usize >= len {
        (0..len).collect()
    } else {
        distinct_indices(len, count as usize, &mut rng)
    };
    let items: Vec<(Vec<u8>, f64)> = ranks
        .into_iter()
        .filter_map(|r| z.get_by_rank(r).map(|(m, s)| (m.to_vec(), s)))
        .collect();
    reply_members(&mut c.out, &items, withscores);
}

// ----- ZUNION ZINTER ZDIFF (and STORE), ZINTERCARD -----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// zunionInterAggregate: a sum that is NaN (inf + -inf) is 0.
fn aggregate(acc: &mut f64, v: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *acc += v;
            if acc.is_nan() {
                *acc = 0.0;
            }
        }
        Aggregate::Min => *acc = acc.min(v),
        Aggregate::Max => *acc = acc.max(v),
    }
}

/// One source of the algebra: a sorted set, or a set (every member scored 1).
enum Source {
    Missing,
    Z(Vec<(Vec<u8>, f64)>, HashMap<Vec<u8>, f64>),
}

impl Source {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Z(v, _) => v.len(),
        }
    }

    fn get(&self, m: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Z(_, idx) => idx.get(m).copied(),
        }
    }
}

/// ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE ZINTERCARD
/// (zunionInterDiffGenericCommand).
pub(super) fn zsetop_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let store = matches!(
        spec.cmd,
        Cmd::ZUnionStore | Cmd::ZInterStore | Cmd::ZDiffStore
    );
    let card_only = spec.cmd == Cmd::ZInterCard;
    let diff = matches!(spec.cmd, Cmd::ZDiff | Cmd::ZDiffStore);
    let inter = matches!(spec.cmd, Cmd::ZInter | Cmd::ZInterStore | Cmd::ZInterCard);
    let numkeys_idx = if store { 2 } else { 1 };
    let setnum = match parse_i64(args.get(numkeys_idx)) {
        None => return c.out.error(ERR_NOT_INT),
        Some(n) if n < 1 => {
            return c.out.error(&format!(
                "ERR at least 1 input key is needed for '{}' command",
                spec.name
            ))
        }
        Some(n) => n as u64,
    };
    if setnum > (args.len() - numkeys_idx - 1) as u64 {
        return c.out.error(ERR_SYNTAX);
    }
    let setnum = setnum as usize;
    let keys: Vec<&[u8]> = (0..setnum).map(|i| args.get(numkeys_idx + 1 + i)).collect();
    let dst = store.then(|| args.get(1));
    let t = Target::of(c);
    let mut all_keys = keys.clone();
    all_keys.extend(dst);
    let mut lock = shared.store.lock_keys(&all_keys);
    // Sources are looked up (and type-checked) before the options are parsed, as
    // t_zset.c does.
    let mut sources = Vec::with_capacity(setnum);
    for k in &keys {
        let shard = lock.shard_for(k);
        let src = match shard.kind(t.ns, k, now) {
            None => {
                let _ = shard.read_object(t.ns, k, Kind::ZSet, now); // counts the miss
                Source::Missing
            }
            Some(Kind::ZSet) => match shard.read_object(t.ns, k, Kind::ZSet, now) {
                Ok(Some(o)) => {
                    let v: Vec<(Vec<u8>, f64)> =
                        zset(o).iter().map(|(m, s)| (m.to_vec(), s)).collect();
                    let idx = v.iter().cloned().collect();
                    Source::Z(v, idx)
                }
                _ => Source::Missing,
            },
            Some(Kind::Set) => match shard.read_object(t.ns, k, Kind::Set, now) {
                Ok(Some(o)) => {
                    let v: Vec<(Vec<u8>, f64)> = o
                        .as_set()
                        .expect("Kind::Set lookups return sets")
                        .iter()
                        .map(|m| (m.into_owned(), 1.0))
                        .collect();
                    let idx = v.iter().cloned().collect();
                    Source::Z(v, idx)
                }
                _ => Source::Missing,
            },
            Some(_) => return c.out.error(ERR_WRONGTYPE),
        };
        sources.push(src);
    }
    let mut weights = vec![1.0f64; setnum];
    let mut how = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = numkeys_idx + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let a = args.get(j);
        if !diff && !card_only && remaining > setnum && eq(a, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                match string2d(args.get(j + 1 + i)) {
                    Some(v) => *w = v,
                    None => return c.out.error("ERR weight value is not a float"),
                }
            }
            j += 1 + setnum;
        } else if !diff && !card_only && remaining >= 2 && eq(a, "aggregate") {
            how = match args.get(j + 1) {
                x if eq(x, "sum") => Aggregate::Sum,
                x if eq(x, "min") => Aggregate::Min,
                x if eq(x, "max") => Aggregate::Max,
                _ => return c.out.error(ERR_SYNTAX),
            };
            j += 2;
        } else if !store && !card_only && eq(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && eq(a, "limit") {
            match parse_long_in(
                args.get(j + 1),
                0,
                i64::MAX,
                Some("LIMIT can't be negative"),
            ) {
                Ok(n) => limit = n as usize,
                Err(e) => return c.out.error(&e),
            }
            j += 2;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
    }
    let weighted = |v: f64, w: f64| {
        let s = v * w;
        if s.is_nan() {
            0.0
        } else {
            s
        }
    };
    // Results as member -> score, in the order members were first met.
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    if inter {
        // From the smallest source (a stable sort by size, as zuiCompareByCardinality
        // orders them), keep what every other source has.
        let mut order: Vec<usize> = (0..setnum).collect();
        order.sort_by_key(|&i| sources[i].len());
        if let Source::Z(first, _) = &sources[order[0]] {
            for (m, s) in first {
                let mut score = weighted(*s, weights[order[0]]);
                let mut all = true;
                for &i in &order[1..] {
                    // Only the first source's product has NaN (0 * inf) made 0; the
                    // others' goes into the aggregate (a NaN sum is then 0), as in Redis.
                    match sources[i].get(m) {
                        Some(v) => aggregate(&mut score, v * weights[i], how),
                        None => {
                            all = false;
                            break;
                        }
                    }
                }
                if all {
                    result.push((m.clone(), score));
                    if card_only && limit > 0 && result.len() >= limit {
                        break;
                    }
                }
            }
        }
    } else if diff {
        if let Source::Z(first, _) = &sources[0] {
            for (m, s) in first {
                if sources[1..].iter().all(|src| src.get(m).is_none()) {
                    result.push((m.clone(), *s));
                }
            }
        }
    } else {
        let mut order: Vec<usize> = (0..setnum).collect();
        order.sort_by_key(|&i| sources[i].len());
        let mut at: HashMap<Vec<u8>, usize> = HashMap::new();
        for &i in &order {
            if let Source::Z(v, _) = &sources[i] {
                for (m, s) in v {
                    let score = weighted(*s, weights[i]);
                    match at.get(m) {
                        Some(&p) => aggregate(&mut result[p].1, score, how),
                        None => {
                            at.insert(m.clone(), result.len());
                            result.push((m.clone(), score));
                        }
                    }
                }
            }
        }
    }
    if card_only {
        return c.out.int(result.len() as i64);
    }
    let lim = shared.store.encoding_limits();
    let mut out = ZSet::new_skiplist();
    for (m, s) in &result {
        out.insert(m, *s, &lim);
    }
    match dst {
        Some(dst) => {
            out.fit_encoding(&lim);
            let event = match spec.cmd {
                Cmd::ZUnionStore => "zunionstore",
                Cmd::ZInterStore => "zinterstore",
                _ => "zdiffstore",
            };
            store_result(shared, c, &mut lock, t, dst, out, event, now);
        }
        None => {
            let items: Vec<(Vec<u8>, f64)> = out.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            reply_members(&mut c.out, &items, withscores);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_redis() {
        let r = parse_score_range(b"(1", b"5").unwrap();
        assert_eq!(
            (r.min, r.min_exclusive, r.max, r.max_exclusive),
            (1.0, true, 5.0, false)
        );
        let r = parse_score_range(b"-inf", b"(+inf").unwrap();
        assert_eq!(
            (r.min, r.max, r.max_exclusive),
            (f64::NEG_INFINITY, f64::INFINITY, true)
        );
        // "(" alone is an exclusive 0 (strtod of ""), as in Redis.
        assert_eq!(parse_score_range(b"(", b"1").unwrap().min, 0.0);
        assert!(parse_score_range(b"nan", b"1").is_none());
        assert!(parse_score_range(b"1", b"x").is_none());
        assert_eq!(
            parse_lex_range(b"-", b"(b"),
            Some(LexRange {
                min: LexBound::NegInf,
                max: LexBound::Exclusive(b"b".to_vec())
            })
        );
        assert!(parse_lex_range(b"a", b"+").is_none());
        assert!(parse_lex_range(b"-x", b"+").is_none());
        assert!(parse_lex_range(b"", b"+").is_none());
    }
}
