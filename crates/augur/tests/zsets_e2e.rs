//! End-to-end tests of sorted sets over real sockets with the `redis` crate: a seeded random
//! command sequence against a `BTreeMap` model (zset-max-listpack-entries 0, 3 and 128,
//! OBJECT ENCODING tracked too), every range form against the model, the set operations
//! (with WEIGHTS, AGGREGATE and a plain set as an input), ZRANDMEMBER's properties, a
//! full ZSCAN, the errors Redis sends, the encoding thresholds, blocking pops (service
//! order, timeouts, BZMPOP, CLIENT UNBLOCK, MULTI, many producers and consumers),
//! keyspace notifications and RESP3's reply shapes (raw bytes).
//!
//! Every body takes the server's address, so the same bodies run against a real
//! redis-server 7.0 too: start one (`redis-server --port 7651 --save "" --daemonize yes`)
//! and run
//!
//! ```text
//! AUGUR_E2E_REDIS=127.0.0.1:7651 cargo test -p augur --test zsets_e2e on_redis -- --ignored
//! ```
//!
//! The `on_redis` tests take turns (one lock), FLUSHALL first and reset the configs they
//! touch; without the variable they pass without checking anything.

mod common;

use common::blocking::{
    block_in_turn, blocked_clients, check_each_once, check_producer_order, produce, replies_of,
    reply_of, spawn_q, wait_blocked,
};
use common::replies::{
    assert_step, brief, brief_args, bulk, bulks, con, pick_weighted, qb, qr, raw_exchange, resolve,
    run_all, Reply,
};
use common::{encoding, err, keyspace_messages, psubscribe_all, q};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
const RANGE_NOT_FLOAT: &str = "ERR min or max is not a float";
const RANGE_NOT_LEX: &str = "ERR min or max not valid string range item";
const NX_XX: &str = "ERR XX and NX options at the same time are not compatible";
const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
const INCR_PAIRS: &str = "ERR INCR option supports a single increment-element pair";
const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

/// A member and its score.
type Item = (Vec<u8>, f64);

/// Runs a command that must succeed.
async fn ok(c: &mut MultiplexedConnection, args: &[&str]) -> Value {
    qr(c, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn int(i: i64) -> Value {
    Value::Int(i)
}

/// C's `%.17g`, Redis's format for a double reply ("inf" and "-inf" for the infinities).
fn g17(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    fn strip(s: &str) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    }
    let e = format!("{x:.16e}");
    let (mant, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if !(-4..17).contains(&exp) {
        format!(
            "{}e{}{:02}",
            strip(mant),
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    } else {
        strip(&format!("{:.*}", (16 - exp) as usize, x))
    }
}

/// A score as a RESP2 reply carries it.
fn sv(x: f64) -> Value {
    bulk(g17(x).as_bytes())
}

/// Members (and scores) as a flat array: ZRANGE's reply.
fn flat(items: &[Item], withscores: bool) -> Value {
    let mut out = Vec::new();
    for (m, s) in items {
        out.push(bulk(m));
        if withscores {
            out.push(sv(*s));
        }
    }
    Value::Array(out)
}

/// [member, score] pairs: ZMPOP's and BZMPOP's reply.
fn pairs(items: &[Item]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|(m, s)| Value::Array(vec![bulk(m), sv(*s)]))
            .collect(),
    )
}

fn items(list: &[(&str, f64)]) -> Vec<Item> {
    list.iter()
        .map(|(m, s)| (m.as_bytes().to_vec(), *s))
        .collect()
}

// ---------------------------------------------------------------------------------
// The model: ranges.

type Members = BTreeMap<Vec<u8>, f64>;

/// The members in Redis's order: by score, then bytewise by member.
fn ordered(m: &Members) -> Vec<Item> {
    let mut v: Vec<Item> = m.iter().map(|(k, s)| (k.clone(), *s)).collect();
    sort_items(&mut v);
    v
}

fn sort_items(v: &mut [Item]) {
    v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then_with(|| a.0.cmp(&b.0)));
}

fn by_rank(v: &[Item], start: i64, end: i64) -> Vec<Item> {
    match resolve(v.len(), start, end) {
        None => Vec::new(),
        Some((s, e)) => v[s..=e].to_vec(),
    }
}

/// One end of a score range: the value and whether it is excluded.
#[derive(Clone, Copy, Debug)]
struct ScoreBound {
    v: f64,
    ex: bool,
}

/// A score range bound as Redis parses it ("(" for exclusive, strtod for the rest);
/// only for the strings the tests draw, which Rust's parser reads as strtod does.
fn score_bound(s: &str) -> Option<ScoreBound> {
    let (ex, rest) = match s.strip_prefix('(') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v: f64 = if rest.is_empty() {
        0.0 // strtod of "" is 0 and ends at the end: Redis takes it
    } else {
        rest.trim_start().parse().ok()?
    };
    (!v.is_nan()).then_some(ScoreBound { v, ex })
}

fn in_score(s: f64, min: ScoreBound, max: ScoreBound) -> bool {
    let lo = if min.ex { s > min.v } else { s >= min.v };
    let hi = if max.ex { s < max.v } else { s <= max.v };
    lo && hi
}

#[derive(Clone, Debug)]
enum LexBound {
    Min,
    Max,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

fn lex_bound(s: &[u8]) -> Option<LexBound> {
    match s.first() {
        Some(b'-') if s.len() == 1 => Some(LexBound::Min),
        Some(b'+') if s.len() == 1 => Some(LexBound::Max),
        Some(b'[') => Some(LexBound::Incl(s[1..].to_vec())),
        Some(b'(') => Some(LexBound::Excl(s[1..].to_vec())),
        _ => None,
    }
}

fn in_lex(m: &[u8], min: &LexBound, max: &LexBound) -> bool {
    let lo = match min {
        LexBound::Min => true,
        LexBound::Max => false,
        LexBound::Incl(x) => m >= &x[..],
        LexBound::Excl(x) => m > &x[..],
    };
    let hi = match max {
        LexBound::Min => false,
        LexBound::Max => true,
        LexBound::Incl(x) => m <= &x[..],
        LexBound::Excl(x) => m < &x[..],
    };
    lo && hi
}

/// LIMIT offset count: a negative offset is an empty range, a negative count no limit.
fn limit(v: Vec<Item>, lim: Option<(i64, i64)>) -> Vec<Item> {
    match lim {
        None => v,
        Some((off, _)) if off < 0 => Vec::new(),
        Some((off, cnt)) => {
            let it = v.into_iter().skip(off as usize);
            if cnt < 0 {
                it.collect()
            } else {
                it.take(cnt as usize).collect()
            }
        }
    }
}

fn by_score(
    v: &[Item],
    min: ScoreBound,
    max: ScoreBound,
    rev: bool,
    lim: Option<(i64, i64)>,
) -> Vec<Item> {
    let mut r: Vec<Item> = v
        .iter()
        .filter(|(_, s)| in_score(*s, min, max))
        .cloned()
        .collect();
    if rev {
        r.reverse();
    }
    limit(r, lim)
}

fn by_lex(
    v: &[Item],
    min: &LexBound,
    max: &LexBound,
    rev: bool,
    lim: Option<(i64, i64)>,
) -> Vec<Item> {
    let mut r: Vec<Item> = v
        .iter()
        .filter(|(m, _)| in_lex(m, min, max))
        .cloned()
        .collect();
    if rev {
        r.reverse();
    }
    limit(r, lim)
}

// ---------------------------------------------------------------------------------
// The model: keys and their encodings.

/// A zset of the model and whether Redis holds it as a skiplist (7.0: a zset created by
/// ZADD is a skiplist if zset-max-listpack-entries is 0 or the command's first member is
/// longer than zset-max-listpack-value; a listpack becomes one when a new member would
/// pass either limit; nothing turns a skiplist back). A listpack stores an integral
/// score as an integer, so a score of -0 reads back as 0; a skiplist keeps -0.
#[derive(Default, Clone)]
struct ZKey {
    m: Members,
    skiplist: bool,
}

struct Model {
    keys: HashMap<Vec<u8>, ZKey>,
    entries: usize,
    value: usize,
}

impl Model {
    fn new(entries: usize, value: usize) -> Model {
        Model {
            keys: HashMap::new(),
            entries,
            value,
        }
    }

    fn card(&self, k: &[u8]) -> usize {
        self.keys.get(k).map_or(0, |z| z.m.len())
    }

    fn ordered(&self, k: &[u8]) -> Vec<Item> {
        self.keys.get(k).map(|z| ordered(&z.m)).unwrap_or_default()
    }

    fn create(&mut self, k: &[u8], first_member: &[u8]) {
        let skiplist = self.entries == 0 || first_member.len() > self.value;
        self.keys.insert(
            k.to_vec(),
            ZKey {
                m: Members::new(),
                skiplist,
            },
        );
    }

    /// Adds a new member (or sets an existing one's score).
    fn set(&mut self, k: &[u8], member: &[u8], score: f64) {
        let (entries, value) = (self.entries, self.value);
        let z = self.keys.get_mut(k).expect("created");
        if !z.m.contains_key(member) && (z.m.len() + 1 > entries || member.len() > value) {
            // The conversion reads the listpack's scores: no -0 among them.
            z.skiplist = true;
        }
        let score = if !z.skiplist && score == 0.0 {
            0.0
        } else {
            score
        };
        z.m.insert(member.to_vec(), score);
    }

    fn remove(&mut self, k: &[u8], member: &[u8]) -> bool {
        let Some(z) = self.keys.get_mut(k) else {
            return false;
        };
        let had = z.m.remove(member).is_some();
        if z.m.is_empty() {
            self.keys.remove(k);
        }
        had
    }

    /// Replaces `k` with a ZRANGESTORE result, `result` in the order Redis emits it:
    /// deleted if empty. The destination starts as a skiplist if a rank range
    /// (`known_len`) has more members than the limit, else as a listpack that converts
    /// as the members are added.
    fn store(&mut self, k: &[u8], result: &[Item], known_len: bool) {
        if result.is_empty() {
            self.keys.remove(k);
            return;
        }
        let skiplist = known_len && result.len() > self.entries;
        self.keys.insert(
            k.to_vec(),
            ZKey {
                m: Members::new(),
                skiplist,
            },
        );
        for (m, s) in result {
            self.set(k, m, *s);
        }
    }

    /// Pops up to `count` from the low (or high) end.
    fn pop(&mut self, k: &[u8], max: bool, count: usize) -> Vec<Item> {
        let mut v = self.ordered(k);
        if max {
            v.reverse();
        }
        v.truncate(count);
        for (m, _) in &v {
            self.remove(k, m);
        }
        v
    }
}

// ---------------------------------------------------------------------------------
// The random sequence.

/// Scores ZADD and ZINCRBY draw: integers, halves, values with no exact decimal (1.1,
/// 0.1: `%.17g` shows their error), signed zeros, infinities, large and small magnitudes.
const VALID_SCORES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-2",
    "-5",
    "7",
    "0.5",
    "1.5",
    "-2.5",
    "1.1",
    "0.1",
    "-0.3",
    "-0",
    "+0",
    "inf",
    "-inf",
    "+inf",
    "1e3",
    "2.0",
    "1e-5",
    "123456789.125",
    "1e20",
    "-1e20",
    "9007199254740993",
    "3.14159265358979323846",
    "1e16",
    "1e17",
];

/// Scores Redis refuses with "value is not a valid float".
const BAD_SCORES: &[&str] = &["abc", "nan", "", " 1", "1e400", "(1", "1 ", "--1", "1.5.5"];

/// Member names: short ones (repeated often), numbers as strings, binary, the empty
/// member, many distinct ones (past 128 entries) and ones about the 64-byte limit.
fn member_pool() -> Vec<Vec<u8>> {
    let mut p: Vec<Vec<u8>> = [
        "a", "b", "c", "d", "e", "f", "g", "h", "aa", "ab", "ba", "abc", "", "1", "-2", "10",
        "3.5", "007", "inf", "[a", "(b", "-", "+",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    p.push(b"b\x00c".to_vec());
    p.push(vec![0xff, 0xfe, b'\n']);
    for i in 0..600 {
        p.push(format!("m{i:03}").into_bytes());
    }
    p
}

fn member(rng: &mut SmallRng, pool: &[Vec<u8>]) -> Vec<u8> {
    match rng.gen_range(0..1000) {
        0..=449 => pool[rng.gen_range(0..25)].clone(),
        450..=989 => pool[rng.gen_range(25..pool.len())].clone(),
        990..=994 => vec![b'x'; 64],
        _ => vec![b'y'; 65 + rng.gen_range(0..3)],
    }
}

/// A score argument and its value (None: Redis refuses it).
fn score_arg(rng: &mut SmallRng, lex: bool) -> (String, Option<f64>) {
    if lex {
        return ("0".into(), Some(0.0));
    }
    let s: String = match rng.gen_range(0..100) {
        0..=49 => rng.gen_range(-6..=6).to_string(),
        50..=59 => (rng.gen_range(-12..=12) as f64 / 4.0).to_string(),
        60..=96 => VALID_SCORES[rng.gen_range(0..VALID_SCORES.len())].to_string(),
        _ => return (BAD_SCORES[rng.gen_range(0..BAD_SCORES.len())].into(), None),
    };
    let v: f64 = s.parse().unwrap();
    (s, Some(v))
}

/// A score range bound: a member's score (so equal scores are hit), a small number, or
/// an infinity; exclusive ("(") often. Rarely one Redis refuses.
fn range_bound(rng: &mut SmallRng, v: &[Item]) -> String {
    let open = if rng.gen_bool(0.35) { "(" } else { "" };
    match rng.gen_range(0..100) {
        0..=34 if !v.is_empty() => format!("{open}{}", g17(v[rng.gen_range(0..v.len())].1)),
        0..=74 => format!("{open}{}", rng.gen_range(-12..=12) as f64 / 2.0),
        75..=96 => ["-inf", "+inf", "inf", "(-inf", "(+inf", "-inf", "+inf"][rng.gen_range(0..7)]
            .to_string(),
        _ => ["abc", "nan", "(nan", "((1", "1x"][rng.gen_range(0..5)].to_string(),
    }
}

/// A lex range bound: "-", "+", or "[" / "(" and a member or a pool name; rarely one
/// Redis refuses.
fn lex_arg(rng: &mut SmallRng, v: &[Item], pool: &[Vec<u8>]) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=9 => b"-".to_vec(),
        10..=19 => b"+".to_vec(),
        20..=97 => {
            let mut s = vec![if rng.gen_bool(0.5) { b'[' } else { b'(' }];
            if !v.is_empty() && rng.gen_bool(0.6) {
                s.extend_from_slice(&v[rng.gen_range(0..v.len())].0);
            } else {
                s.extend(member(rng, pool));
            }
            s
        }
        _ => [&b"a"[..], b"", b"+a", b"-a"][rng.gen_range(0..4)].to_vec(),
    }
}

/// A rank argument: within the zset from either end, sometimes past it.
fn rank_arg(rng: &mut SmallRng, len: usize) -> i64 {
    let len = len as i64;
    match rng.gen_range(0..100) {
        0..=39 if len > 0 => rng.gen_range(0..len),
        40..=74 if len > 0 => -rng.gen_range(1..=len),
        75..=89 => rng.gen_range(len..len + 4),
        90..=95 => -rng.gen_range(len + 1..len + 5),
        96 => i64::MAX,
        97 => i64::MIN,
        _ => rng.gen_range(-3..3),
    }
}

fn limit_arg(rng: &mut SmallRng, p: f64) -> Option<(i64, i64)> {
    if !rng.gen_bool(p) {
        return None;
    }
    let off = if rng.gen_bool(0.05) {
        -1
    } else {
        rng.gen_range(0..6)
    };
    let cnt = match rng.gen_range(0..10) {
        0 => -1,
        1 => -rng.gen_range(2..5),
        2 => 0,
        _ => rng.gen_range(1..8),
    };
    Some((off, cnt))
}

fn maybe_lower(rng: &mut SmallRng, s: &str) -> Vec<u8> {
    if rng.gen_bool(0.15) {
        s.to_lowercase().into_bytes()
    } else {
        s.as_bytes().to_vec()
    }
}

/// A ZADD score argument (with its value, None if Redis refuses it) and member.
type ScorePair = ((String, Option<f64>), Vec<u8>);

/// The ZADD options drawn, the model's application of them and its reply.
fn zadd_model(m: &mut Model, key: &[u8], opts: &[&str], pairs: &[ScorePair], odd: bool) -> Reply {
    let has = |o: &str| opts.contains(&o);
    let (nx, xx, gt, lt, ch, incr) = (
        has("NX"),
        has("XX"),
        has("GT"),
        has("LT"),
        has("CH"),
        has("INCR"),
    );
    if odd {
        return Err(SYNTAX.into());
    }
    if nx && xx {
        return Err(NX_XX.into());
    }
    if (gt || lt) && nx || (gt && lt) {
        return Err(GT_LT_NX.into());
    }
    if incr && pairs.len() > 1 {
        return Err(INCR_PAIRS.into());
    }
    if pairs.iter().any(|((_, v), _)| v.is_none()) {
        return Err(NOT_FLOAT.into());
    }
    let nop = if incr { Value::Nil } else { int(0) };
    if !m.keys.contains_key(key) {
        if xx {
            return Ok(nop);
        }
        m.create(key, &pairs[0].1);
    }
    let (mut added, mut updated, mut processed) = (0, 0, 0);
    let mut last = 0.0;
    for ((_, v), mem) in pairs {
        let score = v.unwrap();
        let cur = m.keys[key].m.get(mem).copied();
        match cur {
            Some(cur) => {
                if nx {
                    continue;
                }
                let mut s = score;
                if incr {
                    s += cur;
                    if s.is_nan() {
                        return Err(NAN_SCORE.into());
                    }
                }
                if (lt && s >= cur) || (gt && s <= cur) {
                    continue;
                }
                if s != cur {
                    m.set(key, mem, s);
                    updated += 1;
                }
                processed += 1;
                last = s;
            }
            None => {
                if xx {
                    continue;
                }
                m.set(key, mem, score);
                added += 1;
                processed += 1;
                last = score;
            }
        }
    }
    if incr {
        Ok(if processed > 0 { sv(last) } else { Value::Nil })
    } else {
        Ok(int(if ch { added + updated } else { added }))
    }
}

/// Draws one command, applies it to the model; the command, Redis's reply and the keys
/// it may have changed.
fn step(
    rng: &mut SmallRng,
    m: &mut Model,
    keys: &[Vec<u8>; 3],
    pool: &[Vec<u8>],
) -> (Vec<Vec<u8>>, Reply, Vec<Vec<u8>>) {
    let ki = rng.gen_range(0..3);
    let key = keys[ki].clone();
    let lex = ki == 2; // keys[2] holds score 0 only: lex ranges are asked of it
    let len = m.card(&key);
    let v = m.ordered(&key);
    let a = |s: &str| s.as_bytes().to_vec();
    let num = |i: i64| i.to_string().into_bytes();
    // Zsets grow past 128 members, then shrink; now and then one is emptied.
    let add_weight = if len < 60 {
        40
    } else if len < 200 {
        25
    } else {
        3
    };
    let cut = if len < 130 { 1 } else { 4 };
    let weights = [
        add_weight, // 0 ZADD
        4,          // 1 ZINCRBY
        8,          // 2 ZREM
        6,          // 3 ZPOPMIN / ZPOPMAX
        cut,        // 4 ZREMRANGEBYRANK
        cut,        // 5 ZREMRANGEBYSCORE / ZREMRANGEBYLEX
        6,          // 6 ZRANGEBYSCORE / ZREVRANGEBYSCORE / ZRANGEBYLEX / ZREVRANGEBYLEX
        4,          // 7 ZCOUNT / ZLEXCOUNT
        8,          // 8 ZRANGE (any form)
        4,          // 9 ZSCORE
        3,          // 10 ZMSCORE
        4,          // 11 ZRANK / ZREVRANK
        2,          // 12 ZCARD
        3,          // 13 ZMPOP
        2,          // 14 ZREVRANGE
        cut,        // 15 ZRANGESTORE
        cut / 2,    // 16 remove everything (ZREMRANGEBYRANK 0 -1 or by score -inf +inf)
    ];
    let op = pick_weighted(rng, &weights);
    let k = key.clone();
    let just = vec![key.clone()];
    match op {
        0 => {
            let mut opts: Vec<&str> = ["NX", "XX", "GT", "LT", "CH", "INCR"]
                .into_iter()
                .filter(|_| rng.gen_bool(0.12))
                .collect();
            opts.shuffle(rng);
            let n = if opts.contains(&"INCR") && rng.gen_bool(0.9) {
                1
            } else if rng.gen_bool(if len < 150 { 0.3 } else { 0.1 }) {
                rng.gen_range(5..50)
            } else {
                rng.gen_range(1..=4)
            };
            let pairs: Vec<_> = (0..n)
                .map(|_| {
                    let mem = if !v.is_empty() && rng.gen_bool(0.3) {
                        v[rng.gen_range(0..v.len())].0.clone()
                    } else if n > 4 {
                        pool[rng.gen_range(25..pool.len())].clone()
                    } else {
                        member(rng, pool)
                    };
                    // A bad score fails the whole ZADD: only in short ones.
                    let mut sc = score_arg(rng, lex);
                    while n > 4 && sc.1.is_none() {
                        sc = score_arg(rng, lex);
                    }
                    (sc, mem)
                })
                .collect();
            let odd = rng.gen_bool(0.02);
            let mut args = vec![a("ZADD"), k];
            for o in &opts {
                args.push(maybe_lower(rng, o));
            }
            for ((s, _), mem) in &pairs {
                args.push(s.clone().into_bytes());
                args.push(mem.clone());
            }
            if odd {
                args.pop();
                if args.len() < 4 {
                    let e = "ERR wrong number of arguments for 'zadd' command";
                    return (args, Err(e.into()), just);
                }
            }
            let r = zadd_model(m, &key, &opts, &pairs, odd);
            (args, r, just)
        }
        1 => {
            let (s, val) = score_arg(rng, lex);
            let mem = if !v.is_empty() && rng.gen_bool(0.6) {
                v[rng.gen_range(0..v.len())].0.clone()
            } else {
                member(rng, pool)
            };
            let args = vec![a("ZINCRBY"), k, s.clone().into_bytes(), mem.clone()];
            let r = zadd_model(m, &key, &["INCR"], &[((s, val), mem)], false);
            (args, r, just)
        }
        2 => {
            let n = rng.gen_range(1..=4);
            let mut args = vec![a("ZREM"), k];
            let mut removed = 0;
            for _ in 0..n {
                let mem = if !v.is_empty() && rng.gen_bool(0.7) {
                    v[rng.gen_range(0..v.len())].0.clone()
                } else {
                    member(rng, pool)
                };
                if m.remove(&key, &mem) {
                    removed += 1;
                }
                args.push(mem);
            }
            (args, Ok(int(removed)), just)
        }
        3 => {
            let max = rng.gen_bool(0.5);
            let mut args = vec![a(if max { "ZPOPMAX" } else { "ZPOPMIN" }), k];
            let count: i64 = match rng.gen_range(0..10) {
                0..=3 => -100, // no count
                4 => 0,
                5 => -rng.gen_range(1..3),
                6 if len < 130 => rng.gen_range(0..=len as i64 + 3),
                _ => rng.gen_range(1..=6),
            };
            if count == -100 {
                let got = m.pop(&key, max, 1);
                return (args, Ok(flat(&got, true)), just);
            }
            args.push(num(count));
            if count < 0 {
                return (args, Err(NOT_POSITIVE.into()), just);
            }
            let got = m.pop(&key, max, count as usize);
            (args, Ok(flat(&got, true)), just)
        }
        4 => {
            let (s, e) = (rank_arg(rng, len), rank_arg(rng, len));
            let gone = by_rank(&v, s, e);
            for (mem, _) in &gone {
                m.remove(&key, mem);
            }
            let args = vec![a("ZREMRANGEBYRANK"), k, num(s), num(e)];
            (args, Ok(int(gone.len() as i64)), just)
        }
        5 => {
            let (name, lo, hi, gone) = if lex {
                let (lo, hi) = (lex_arg(rng, &v, pool), lex_arg(rng, &v, pool));
                let gone = match (lex_bound(&lo), lex_bound(&hi)) {
                    (Some(x), Some(y)) => Ok(by_lex(&v, &x, &y, false, None)),
                    _ => Err(RANGE_NOT_LEX.to_string()),
                };
                ("ZREMRANGEBYLEX", lo, hi, gone)
            } else {
                let (lo, hi) = (range_bound(rng, &v), range_bound(rng, &v));
                let gone = match (score_bound(&lo), score_bound(&hi)) {
                    (Some(x), Some(y)) => Ok(by_score(&v, x, y, false, None)),
                    _ => Err(RANGE_NOT_FLOAT.to_string()),
                };
                ("ZREMRANGEBYSCORE", lo.into_bytes(), hi.into_bytes(), gone)
            };
            let args = vec![a(name), k, lo, hi];
            let r = gone.map(|g| {
                for (mem, _) in &g {
                    m.remove(&key, mem);
                }
                int(g.len() as i64)
            });
            (args, r, just)
        }
        6 => {
            let rev = rng.gen_bool(0.4);
            let lim = limit_arg(rng, 0.4);
            let ws = !lex && rng.gen_bool(0.5);
            let (name, lo, hi, got) = if lex {
                let (lo, hi) = (lex_arg(rng, &v, pool), lex_arg(rng, &v, pool));
                // ZREVRANGEBYLEX takes max first.
                let (min, max) = if rev { (&hi, &lo) } else { (&lo, &hi) };
                let got = match (lex_bound(min), lex_bound(max)) {
                    (Some(x), Some(y)) => Ok(by_lex(&v, &x, &y, rev, lim)),
                    _ => Err(RANGE_NOT_LEX.to_string()),
                };
                let name = if rev { "ZREVRANGEBYLEX" } else { "ZRANGEBYLEX" };
                (name, lo, hi, got)
            } else {
                let (lo, hi) = (range_bound(rng, &v), range_bound(rng, &v));
                let (min, max) = if rev { (&hi, &lo) } else { (&lo, &hi) };
                let got = match (score_bound(min), score_bound(max)) {
                    (Some(x), Some(y)) => Ok(by_score(&v, x, y, rev, lim)),
                    _ => Err(RANGE_NOT_FLOAT.to_string()),
                };
                let name = if rev {
                    "ZREVRANGEBYSCORE"
                } else {
                    "ZRANGEBYSCORE"
                };
                (name, lo.into_bytes(), hi.into_bytes(), got)
            };
            let mut args = vec![a(name), k, lo, hi];
            let mut opts: Vec<Vec<Vec<u8>>> = Vec::new();
            if ws {
                opts.push(vec![maybe_lower(rng, "WITHSCORES")]);
            }
            if let Some((o, c)) = lim {
                opts.push(vec![maybe_lower(rng, "LIMIT"), num(o), num(c)]);
            }
            opts.shuffle(rng);
            args.extend(opts.into_iter().flatten());
            (args, got.map(|g| flat(&g, ws)), Vec::new())
        }
        7 => {
            if lex {
                let (lo, hi) = (lex_arg(rng, &v, pool), lex_arg(rng, &v, pool));
                let r = match (lex_bound(&lo), lex_bound(&hi)) {
                    (Some(x), Some(y)) => Ok(int(by_lex(&v, &x, &y, false, None).len() as i64)),
                    _ => Err(RANGE_NOT_LEX.to_string()),
                };
                (vec![a("ZLEXCOUNT"), k, lo, hi], r, Vec::new())
            } else {
                let (lo, hi) = (range_bound(rng, &v), range_bound(rng, &v));
                let r = match (score_bound(&lo), score_bound(&hi)) {
                    (Some(x), Some(y)) => Ok(int(by_score(&v, x, y, false, None).len() as i64)),
                    _ => Err(RANGE_NOT_FLOAT.to_string()),
                };
                let args = vec![a("ZCOUNT"), k, lo.into_bytes(), hi.into_bytes()];
                (args, r, Vec::new())
            }
        }
        8 | 15 => {
            // ZRANGE key a b [BYSCORE|BYLEX] [REV] [LIMIT o c] [WITHSCORES], or
            // ZRANGESTORE dst key a b ... (no WITHSCORES).
            let store = op == 15;
            let form = if lex {
                rng.gen_range(0..3)
            } else {
                rng.gen_range(0..2)
            };
            let rev = rng.gen_bool(0.4);
            let lim = if form > 0 { limit_arg(rng, 0.5) } else { None };
            let ws = !store && form != 2 && rng.gen_bool(0.5);
            let (lo, hi, got): (Vec<u8>, Vec<u8>, Result<Vec<Item>, String>) = match form {
                0 => {
                    let (s, e) = (rank_arg(rng, len), rank_arg(rng, len));
                    let mut vv = v.clone();
                    if rev {
                        vv.reverse();
                    }
                    (num(s), num(e), Ok(by_rank(&vv, s, e)))
                }
                1 => {
                    let (lo, hi) = (range_bound(rng, &v), range_bound(rng, &v));
                    let (min, max) = if rev { (&hi, &lo) } else { (&lo, &hi) };
                    let got = match (score_bound(min), score_bound(max)) {
                        (Some(x), Some(y)) => Ok(by_score(&v, x, y, rev, lim)),
                        _ => Err(RANGE_NOT_FLOAT.to_string()),
                    };
                    (lo.into_bytes(), hi.into_bytes(), got)
                }
                _ => {
                    let (lo, hi) = (lex_arg(rng, &v, pool), lex_arg(rng, &v, pool));
                    let (min, max) = if rev { (&hi, &lo) } else { (&lo, &hi) };
                    let got = match (lex_bound(min), lex_bound(max)) {
                        (Some(x), Some(y)) => Ok(by_lex(&v, &x, &y, rev, lim)),
                        _ => Err(RANGE_NOT_LEX.to_string()),
                    };
                    (lo, hi, got)
                }
            };
            let dst = if lex {
                key.clone()
            } else {
                keys[rng.gen_range(0..2)].clone()
            };
            let mut args = if store {
                vec![a("ZRANGESTORE"), dst.clone(), k]
            } else {
                vec![a("ZRANGE"), k]
            };
            args.push(lo);
            args.push(hi);
            let mut opts: Vec<Vec<Vec<u8>>> = Vec::new();
            match form {
                1 => opts.push(vec![maybe_lower(rng, "BYSCORE")]),
                2 => opts.push(vec![maybe_lower(rng, "BYLEX")]),
                _ => {}
            }
            if rev {
                opts.push(vec![maybe_lower(rng, "REV")]);
            }
            if let Some((o, c)) = lim {
                opts.push(vec![maybe_lower(rng, "LIMIT"), num(o), num(c)]);
            }
            if ws {
                opts.push(vec![maybe_lower(rng, "WITHSCORES")]);
            }
            if rng.gen_bool(0.3) {
                opts.shuffle(rng);
            }
            args.extend(opts.into_iter().flatten());
            if store {
                let r = got.map(|g| {
                    m.store(&dst, &g, form == 0);
                    int(g.len() as i64)
                });
                (args, r, vec![dst])
            } else {
                (args, got.map(|g| flat(&g, ws)), Vec::new())
            }
        }
        9 => {
            let mem = if !v.is_empty() && rng.gen_bool(0.7) {
                v[rng.gen_range(0..v.len())].0.clone()
            } else {
                member(rng, pool)
            };
            let r = m
                .keys
                .get(&key)
                .and_then(|z| z.m.get(&mem))
                .map_or(Value::Nil, |s| sv(*s));
            (vec![a("ZSCORE"), k, mem], Ok(r), Vec::new())
        }
        10 => {
            let mut args = vec![a("ZMSCORE"), k];
            let mut r = Vec::new();
            for _ in 0..rng.gen_range(1..=4) {
                let mem = if !v.is_empty() && rng.gen_bool(0.6) {
                    v[rng.gen_range(0..v.len())].0.clone()
                } else {
                    member(rng, pool)
                };
                r.push(
                    m.keys
                        .get(&key)
                        .and_then(|z| z.m.get(&mem))
                        .map_or(Value::Nil, |s| sv(*s)),
                );
                args.push(mem);
            }
            (args, Ok(Value::Array(r)), Vec::new())
        }
        11 => {
            let rev = rng.gen_bool(0.5);
            let mem = if !v.is_empty() && rng.gen_bool(0.7) {
                v[rng.gen_range(0..v.len())].0.clone()
            } else {
                member(rng, pool)
            };
            let r = match v.iter().position(|(x, _)| *x == mem) {
                None => Value::Nil,
                Some(p) => int(if rev { v.len() - 1 - p } else { p } as i64),
            };
            let args = vec![a(if rev { "ZREVRANK" } else { "ZRANK" }), k, mem];
            (args, Ok(r), Vec::new())
        }
        12 => (vec![a("ZCARD"), k], Ok(int(len as i64)), Vec::new()),
        13 => {
            let order: Vec<Vec<u8>> = match rng.gen_range(0..3) {
                0 => vec![key.clone()],
                1 => vec![keys[0].clone(), keys[1].clone()],
                _ => vec![keys[(ki + 1) % 3].clone(), key.clone()],
            };
            let max = rng.gen_bool(0.5);
            let mut args = vec![a("ZMPOP"), num(order.len() as i64)];
            args.extend(order.iter().cloned());
            args.push(a(if max { "MAX" } else { "MIN" }));
            let mut count = 1;
            if rng.gen_bool(0.6) {
                count = rng.gen_range(1..=6);
                args.push(a("COUNT"));
                args.push(num(count as i64));
            }
            let Some(from) = order.iter().find(|k| m.card(k) > 0).cloned() else {
                return (args, Ok(Value::Nil), Vec::new());
            };
            let got = m.pop(&from, max, count);
            let r = Value::Array(vec![bulk(&from), pairs(&got)]);
            (args, Ok(r), vec![from])
        }
        14 => {
            let (s, e) = (rank_arg(rng, len), rank_arg(rng, len));
            let ws = rng.gen_bool(0.5);
            let mut vv = v.clone();
            vv.reverse();
            let mut args = vec![a("ZREVRANGE"), k, num(s), num(e)];
            if ws {
                args.push(maybe_lower(rng, "WITHSCORES"));
            }
            (args, Ok(flat(&by_rank(&vv, s, e), ws)), Vec::new())
        }
        _ => {
            let n = len as i64;
            let args = if rng.gen_bool(0.5) || lex {
                vec![a("ZREMRANGEBYRANK"), k, a("0"), a("-1")]
            } else {
                vec![a("ZREMRANGEBYSCORE"), k, a("-inf"), a("+inf")]
            };
            m.keys.remove(&key);
            (args, Ok(int(n)), just)
        }
    }
}

/// Checks a zset of the server against the model: its members and scores (ZRANGE 0 -1
/// WITHSCORES), and with `deep` its existence, ZCARD, TYPE and OBJECT ENCODING.
async fn check_key(c: &mut MultiplexedConnection, m: &Model, k: &[u8], deep: bool, what: &str) {
    let want = flat(&m.ordered(k), true);
    let got = qb(
        c,
        &[
            b"ZRANGE".to_vec(),
            k.to_vec(),
            b"0".to_vec(),
            b"-1".to_vec(),
            b"WITHSCORES".to_vec(),
        ],
    )
    .await;
    assert!(
        got == Ok(want.clone()),
        "{what}: ZRANGE {} 0 -1 WITHSCORES is {} but the model has {}",
        String::from_utf8_lossy(k),
        brief(&got),
        brief(&Ok(want))
    );
    if !deep {
        return;
    }
    let n = m.card(k) as i64;
    let card = qb(c, &[b"ZCARD".to_vec(), k.to_vec()]).await;
    assert_eq!(card, Ok(int(n)), "{what}: ZCARD");
    let exists = qb(c, &[b"EXISTS".to_vec(), k.to_vec()]).await;
    assert_eq!(exists, Ok(int((n > 0) as i64)), "{what}: EXISTS");
    let ty = qb(c, &[b"TYPE".to_vec(), k.to_vec()]).await;
    let want_ty = if n > 0 { "zset" } else { "none" };
    assert_eq!(ty, Ok(Value::SimpleString(want_ty.into())), "{what}: TYPE");
    if let Some(z) = m.keys.get(k) {
        let enc = qb(c, &[b"OBJECT".to_vec(), b"ENCODING".to_vec(), k.to_vec()]).await;
        let want_enc = if z.skiplist { "skiplist" } else { "listpack" };
        assert_eq!(
            enc,
            Ok(bulk(want_enc.as_bytes())),
            "{what}: OBJECT ENCODING {} ({} members)",
            String::from_utf8_lossy(k),
            n
        );
    }
}

/// `steps` random commands on `prefix:a`, `prefix:b` and `prefix:lex`, every reply
/// compared with the model's, the changed keys after each command and every key (with
/// its encoding) every 50 commands and at the end.
async fn run_model(c: &mut MultiplexedConnection, seed: u64, entries: usize, steps: usize) {
    q::<()>(
        c,
        &[
            "CONFIG",
            "SET",
            "zset-max-listpack-entries",
            &entries.to_string(),
        ],
    )
    .await
    .unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let pool = member_pool();
    let prefix = format!("e{entries}");
    let keys = [
        format!("{prefix}:a").into_bytes(),
        format!("{prefix}:b").into_bytes(),
        format!("{prefix}:lex").into_bytes(),
    ];
    let mut m = Model::new(entries, 64);
    let (mut max_len, mut emptied, mut errors, mut listpacks, mut skiplists) = (0, 0, 0, 0, 0);
    for n in 0..steps {
        let had: Vec<bool> = keys.iter().map(|k| m.card(k) > 0).collect();
        let (args, want, touched) = step(&mut rng, &mut m, &keys, &pool);
        assert_step(seed, n, &args, &qb(c, &args).await, &want);
        if want.is_err() {
            errors += 1;
        }
        let what = format!("seed {seed} step {n} ({})", brief_args(&args));
        for k in &touched {
            check_key(c, &m, k, false, &what).await;
        }
        for (i, k) in keys.iter().enumerate() {
            max_len = max_len.max(m.card(k));
            if had[i] && m.card(k) == 0 {
                emptied += 1;
            }
        }
        if n % 50 == 49 || n == steps - 1 {
            for k in &keys {
                check_key(c, &m, k, true, &what).await;
                match m.keys.get(k) {
                    Some(z) if z.skiplist => skiplists += 1,
                    Some(_) => listpacks += 1,
                    None => {}
                }
            }
        }
    }
    eprintln!(
        "{prefix}: {steps} commands, {errors} errors, largest zset {max_len}, emptied \
         {emptied} times, encodings checked {listpacks} listpack / {skiplists} skiplist"
    );
    // The sequence did what it is for: zsets past 128 members, emptied, both
    // encodings (except where the configuration allows one), error replies.
    assert!(
        max_len > 128,
        "{prefix}: zsets reached only {max_len} members"
    );
    assert!(emptied >= 3, "{prefix}: zsets were emptied {emptied} times");
    assert!(errors >= 20, "{prefix}: only {errors} error replies");
    assert!(skiplists > 0, "{prefix}: never a skiplist");
    if entries > 0 {
        assert!(listpacks > 0, "{prefix}: never a listpack");
    }
}

async fn random_commands_match_a_model_listpack_128(addr: SocketAddr) {
    run_model(&mut con(addr).await, 0x25e7_0001, 128, 3000).await;
}

/// Listpacks of at most 3 members: most ZADDs carry more pairs than that.
async fn random_commands_match_a_model_listpack_3(addr: SocketAddr) {
    run_model(&mut con(addr).await, 0x25e7_0002, 3, 3000).await;
}

/// zset-max-listpack-entries 0: every zset a skiplist.
async fn random_commands_match_a_model_skiplist_only(addr: SocketAddr) {
    run_model(&mut con(addr).await, 0x25e7_0003, 0, 3000).await;
}

// ---------------------------------------------------------------------------------
// Ranges, ranks and scores against the model.

/// A zset with repeated scores, signed zeros, infinities and inexact decimals.
fn range_fixture() -> Vec<Item> {
    let mut rng = SmallRng::seed_from_u64(0x7a11);
    let mut m = Members::new();
    for i in 0..60 {
        let s = match rng.gen_range(0..10) {
            0 => f64::INFINITY,
            1 => f64::NEG_INFINITY,
            2 => 0.1 * rng.gen_range(-5..5) as f64,
            3 => -0.0,
            _ => rng.gen_range(-6..=6) as f64 / 2.0,
        };
        m.insert(
            format!("r{:02}{}", i, ["", "x", "yy"][i % 3]).into_bytes(),
            s,
        );
    }
    ordered(&m)
}

async fn zadd_items(c: &mut MultiplexedConnection, key: &str, items: &[Item]) {
    for chunk in items.chunks(50) {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(key);
        for (mem, s) in chunk {
            cmd.arg(g17(*s)).arg(&mem[..]);
        }
        let _: i64 = cmd.query_async(c).await.unwrap();
    }
}

async fn range_forms_match_the_model(addr: SocketAddr) {
    let mut c = con(addr).await;
    let fx = range_fixture();
    // The same members as a listpack and as a skiplist; lex ranges on score-0 copies.
    zadd_items(&mut c, "lp", &fx).await;
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-entries", "0"])
        .await
        .unwrap();
    zadd_items(&mut c, "sl", &fx).await;
    let mut lexfx: Vec<Item> = fx.iter().map(|(m, _)| (m.clone(), 0.0)).collect();
    sort_items(&mut lexfx);
    zadd_items(&mut c, "lexsl", &lexfx).await;
    q::<()>(
        &mut c,
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
    )
    .await
    .unwrap();
    zadd_items(&mut c, "lexlp", &lexfx).await;
    assert_eq!(encoding(&mut c, "lp").await, "listpack");
    assert_eq!(encoding(&mut c, "sl").await, "skiplist");
    assert_eq!(encoding(&mut c, "lexlp").await, "listpack");
    assert_eq!(encoding(&mut c, "lexsl").await, "skiplist");
    // The listpack reads -0 back as 0.
    let no_neg_zero = |v: &[Item]| -> Vec<Item> {
        v.iter()
            .map(|(m, s)| (m.clone(), if *s == 0.0 { 0.0 } else { *s }))
            .collect()
    };
    let lp_fx = no_neg_zero(&fx);
    let mut rng = SmallRng::seed_from_u64(0x7a12);
    let pool = member_pool();
    let s = |x: &str| x.to_string();
    let mut checked = 0;
    for round in 0..400 {
        for key in ["lp", "sl"] {
            let v = if key == "lp" { &lp_fx } else { &fx };
            let mut rev_fx = v.clone();
            rev_fx.reverse();
            // ZRANGE by rank, REV, WITHSCORES; ZREVRANGE.
            let (a, b) = (rank_arg(&mut rng, v.len()), rank_arg(&mut rng, v.len()));
            let (sa, sb) = (a.to_string(), b.to_string());
            let want = flat(&by_rank(v, a, b), true);
            assert_eq!(
                qr(&mut c, &["ZRANGE", key, &sa, &sb, "WITHSCORES"]).await,
                Ok(want),
                "ZRANGE {key} {sa} {sb}"
            );
            let want = flat(&by_rank(&rev_fx, a, b), false);
            assert_eq!(
                qr(&mut c, &["ZRANGE", key, &sa, &sb, "REV"]).await,
                Ok(want.clone()),
                "ZRANGE {key} {sa} {sb} REV"
            );
            assert_eq!(
                qr(&mut c, &["ZREVRANGE", key, &sa, &sb]).await,
                Ok(want),
                "ZREVRANGE {key} {sa} {sb}"
            );
            // By score: ZRANGE BYSCORE [REV] [LIMIT], ZRANGEBYSCORE, ZREVRANGEBYSCORE,
            // ZCOUNT.
            let (lo, hi) = (range_bound(&mut rng, v), range_bound(&mut rng, v));
            let lim = limit_arg(&mut rng, 0.5);
            let lim_args: Vec<String> = lim
                .map(|(o, n)| vec![s("LIMIT"), o.to_string(), n.to_string()])
                .unwrap_or_default();
            let la: Vec<&str> = lim_args.iter().map(String::as_str).collect();
            let (x, y) = (score_bound(&lo), score_bound(&hi));
            let fwd = match (x, y) {
                (Some(x), Some(y)) => Ok(by_score(v, x, y, false, lim)),
                _ => Err(RANGE_NOT_FLOAT.to_string()),
            };
            let rev = match (x, y) {
                (Some(x), Some(y)) => Ok(by_score(v, x, y, true, lim)),
                _ => Err(RANGE_NOT_FLOAT.to_string()),
            };
            let cmdv = |head: &[&str], tail: &[&str]| -> Vec<String> {
                head.iter().chain(tail).map(|x| x.to_string()).collect()
            };
            for (args, want) in [
                (
                    cmdv(&["ZRANGE", key, &lo, &hi, "BYSCORE"], &la),
                    fwd.clone().map(|g| flat(&g, false)),
                ),
                (
                    cmdv(
                        &["ZRANGE", key, &hi, &lo, "BYSCORE", "REV", "WITHSCORES"],
                        &la,
                    ),
                    rev.clone().map(|g| flat(&g, true)),
                ),
                (
                    cmdv(&["ZRANGEBYSCORE", key, &lo, &hi, "WITHSCORES"], &la),
                    fwd.clone().map(|g| flat(&g, true)),
                ),
                (
                    cmdv(&["ZREVRANGEBYSCORE", key, &hi, &lo], &la),
                    rev.clone().map(|g| flat(&g, false)),
                ),
            ] {
                let a: Vec<&str> = args.iter().map(String::as_str).collect();
                assert_eq!(qr(&mut c, &a).await, want, "{a:?}");
                checked += 1;
            }
            let count = match (x, y) {
                (Some(x), Some(y)) => Ok(int(by_score(v, x, y, false, None).len() as i64)),
                _ => Err(RANGE_NOT_FLOAT.to_string()),
            };
            assert_eq!(
                qr(&mut c, &["ZCOUNT", key, &lo, &hi]).await,
                count,
                "ZCOUNT {key} {lo} {hi}"
            );
            // ZRANGESTORE of the same range: the count, then the stored members.
            let dst = format!("dst:{key}");
            let mut args = vec!["ZRANGESTORE", &dst, key, &lo, &hi, "BYSCORE"];
            args.extend(&la);
            let stored = qr(&mut c, &args).await;
            match &fwd {
                Ok(g) => {
                    assert_eq!(stored, Ok(int(g.len() as i64)), "{args:?}");
                    // At most 60 members: a listpack.
                    assert_eq!(
                        qr(&mut c, &["ZRANGE", &dst, "0", "-1", "WITHSCORES"]).await,
                        Ok(flat(&no_neg_zero(g), true)),
                        "{args:?} stored"
                    );
                }
                Err(e) => assert_eq!(stored, Err(e.clone()), "{args:?}"),
            }
            // Rank and score of a member (or of a missing one).
            let mem = if rng.gen_bool(0.8) {
                v[rng.gen_range(0..v.len())].0.clone()
            } else {
                member(&mut rng, &pool)
            };
            let ms = String::from_utf8(mem.clone()).unwrap_or_default();
            let pos = v.iter().position(|(x, _)| *x == mem);
            assert_eq!(
                qr(&mut c, &["ZRANK", key, &ms]).await,
                Ok(pos.map_or(Value::Nil, |p| int(p as i64)))
            );
            assert_eq!(
                qr(&mut c, &["ZREVRANK", key, &ms]).await,
                Ok(pos.map_or(Value::Nil, |p| int((v.len() - 1 - p) as i64)))
            );
            assert_eq!(
                qr(&mut c, &["ZSCORE", key, &ms]).await,
                Ok(pos.map_or(Value::Nil, |p| sv(v[p].1)))
            );
            assert_eq!(
                qr(&mut c, &["ZMSCORE", key, &ms, "nope", &ms]).await,
                Ok(Value::Array(vec![
                    pos.map_or(Value::Nil, |p| sv(v[p].1)),
                    Value::Nil,
                    pos.map_or(Value::Nil, |p| sv(v[p].1)),
                ]))
            );
        }
        for key in ["lexlp", "lexsl"] {
            let v = &lexfx;
            let (lo, hi) = (lex_arg(&mut rng, v, &pool), lex_arg(&mut rng, v, &pool));
            let (lo, hi) = (
                String::from_utf8_lossy(&lo).into_owned(),
                String::from_utf8_lossy(&hi).into_owned(),
            );
            let lim = limit_arg(&mut rng, 0.5);
            let lim_args: Vec<String> = lim
                .map(|(o, n)| vec![s("LIMIT"), o.to_string(), n.to_string()])
                .unwrap_or_default();
            let la: Vec<&str> = lim_args.iter().map(String::as_str).collect();
            let (x, y) = (lex_bound(lo.as_bytes()), lex_bound(hi.as_bytes()));
            let fwd = match (&x, &y) {
                (Some(x), Some(y)) => Ok(by_lex(v, x, y, false, lim)),
                _ => Err(RANGE_NOT_LEX.to_string()),
            };
            let rev = match (&x, &y) {
                (Some(x), Some(y)) => Ok(by_lex(v, x, y, true, lim)),
                _ => Err(RANGE_NOT_LEX.to_string()),
            };
            let cmdv = |head: &[&str], tail: &[&str]| -> Vec<String> {
                head.iter().chain(tail).map(|x| x.to_string()).collect()
            };
            for (args, want) in [
                (
                    cmdv(&["ZRANGE", key, &lo, &hi, "BYLEX"], &la),
                    fwd.clone().map(|g| flat(&g, false)),
                ),
                (
                    cmdv(&["ZRANGE", key, &hi, &lo, "BYLEX", "REV"], &la),
                    rev.clone().map(|g| flat(&g, false)),
                ),
                (
                    cmdv(&["ZRANGEBYLEX", key, &lo, &hi], &la),
                    fwd.clone().map(|g| flat(&g, false)),
                ),
                (
                    cmdv(&["ZREVRANGEBYLEX", key, &hi, &lo], &la),
                    rev.clone().map(|g| flat(&g, false)),
                ),
            ] {
                let a: Vec<&str> = args.iter().map(String::as_str).collect();
                assert_eq!(qr(&mut c, &a).await, want, "round {round}: {a:?}");
                checked += 1;
            }
            let count = match (&x, &y) {
                (Some(x), Some(y)) => Ok(int(by_lex(v, x, y, false, None).len() as i64)),
                _ => Err(RANGE_NOT_LEX.to_string()),
            };
            assert_eq!(
                qr(&mut c, &["ZLEXCOUNT", key, &lo, &hi]).await,
                count,
                "ZLEXCOUNT {key} {lo} {hi}"
            );
            let dst = format!("dst:{key}");
            let mut args = vec!["ZRANGESTORE", &dst, key, &hi, &lo, "BYLEX", "REV"];
            args.extend(&la);
            let stored = qr(&mut c, &args).await;
            match &rev {
                Ok(g) => {
                    assert_eq!(stored, Ok(int(g.len() as i64)), "{args:?}");
                    let mut g = g.clone();
                    sort_items(&mut g);
                    assert_eq!(
                        qr(&mut c, &["ZRANGE", &dst, "0", "-1", "WITHSCORES"]).await,
                        Ok(flat(&g, true)),
                        "{args:?} stored"
                    );
                }
                Err(e) => assert_eq!(stored, Err(e.clone()), "{args:?}"),
            }
        }
    }
    assert!(checked >= 3000);
    // Bounds strtod reads as Redis does: "" is 0, "(" is an exclusive 0, leading blanks
    // are skipped, 1e400 is +inf; an exclusive infinity is empty.
    q::<()>(
        &mut c,
        &["ZADD", "b", "0", "a", "1", "b", "2", "c", "-1", "d"],
    )
    .await
    .unwrap();
    for (lo, hi, want) in [
        ("", "", &["a"][..]),
        ("(", "1", &["b"]),
        (" 1", "1e400", &["b", "c"]),
        ("-1e400", "(0", &["d"]),
        ("(-inf", "(inf", &["d", "a", "b", "c"]),
        ("(inf", "+inf", &[]),
        ("-inf", "(-inf", &[]),
        ("0x1", "0x2", &["b", "c"]),
        ("-0", "(1", &["a"]),
        ("2", "1", &[]),
        ("1", "(1", &[]),
    ] {
        assert_eq!(
            qr(&mut c, &["ZRANGEBYSCORE", "b", lo, hi]).await,
            Ok(bulks(want)),
            "ZRANGEBYSCORE b {lo:?} {hi:?}"
        );
    }
    q::<()>(&mut c, &["ZADD", "l", "0", "", "0", "a", "0", "b"])
        .await
        .unwrap();
    for (lo, hi, want) in [
        ("[", "+", &["", "a", "b"][..]),
        ("(", "+", &["a", "b"]),
        ("-", "(a", &[""]),
        ("+", "-", &[]),
        ("[b", "[a", &[]),
        ("(a", "[b", &["b"]),
    ] {
        assert_eq!(
            qr(&mut c, &["ZRANGEBYLEX", "l", lo, hi]).await,
            Ok(bulks(want)),
            "ZRANGEBYLEX l {lo:?} {hi:?}"
        );
    }
    // ZRANGESTORE of an empty range deletes the destination; of a missing source too.
    q::<()>(&mut c, &["ZADD", "d", "1", "x"]).await.unwrap();
    assert_eq!(
        qr(&mut c, &["ZRANGESTORE", "d", "b", "5", "10"]).await,
        Ok(int(0))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "d"]).await, Ok(int(0)));
    q::<()>(&mut c, &["SET", "d", "str"]).await.unwrap();
    assert_eq!(
        qr(&mut c, &["ZRANGESTORE", "d", "b", "0", "1"]).await,
        Ok(int(2))
    );
    assert_eq!(
        qr(&mut c, &["ZRANGE", "d", "0", "-1", "WITHSCORES"]).await,
        Ok(bulks(&["d", "-1", "a", "0"]))
    );
    assert_eq!(
        qr(&mut c, &["ZRANGESTORE", "d", "nokey", "0", "-1"]).await,
        Ok(int(0))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "d"]).await, Ok(int(0)));
}

// ---------------------------------------------------------------------------------
// Set operations.

#[derive(Clone, Copy, PartialEq, Debug)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, Debug)]
enum Agg {
    Sum,
    Min,
    Max,
}

fn aggregate(acc: f64, v: f64, how: Agg) -> f64 {
    match how {
        Agg::Sum => {
            let s = acc + v;
            if s.is_nan() {
                0.0
            } else {
                s
            }
        }
        Agg::Min => {
            if v < acc {
                v
            } else {
                acc
            }
        }
        Agg::Max => {
            if v > acc {
                v
            } else {
                acc
            }
        }
    }
}

/// ZUNION / ZINTER / ZDIFF of `inputs` (a missing key is empty, a set's members score 1).
fn setop(op: Op, inputs: &[Members], weights: &[f64], how: Agg) -> Vec<Item> {
    let weighted = |i: usize, s: f64| {
        let w = s * weights[i];
        if w.is_nan() {
            0.0
        } else {
            w
        }
    };
    let mut out = Members::new();
    match op {
        Op::Union => {
            for (i, m) in inputs.iter().enumerate() {
                for (k, s) in m {
                    let w = weighted(i, *s);
                    out.entry(k.clone())
                        .and_modify(|acc| *acc = aggregate(*acc, w, how))
                        .or_insert(w);
                }
            }
        }
        Op::Inter => {
            for (k, s) in &inputs[0] {
                if inputs[1..].iter().all(|m| m.contains_key(k)) {
                    let mut acc = weighted(0, *s);
                    for (i, m) in inputs.iter().enumerate().skip(1) {
                        acc = aggregate(acc, weighted(i, m[k]), how);
                    }
                    out.insert(k.clone(), acc);
                }
            }
        }
        Op::Diff => {
            for (k, s) in &inputs[0] {
                if !inputs[1..].iter().any(|m| m.contains_key(k)) {
                    out.insert(k.clone(), *s);
                }
            }
        }
    }
    ordered(&out)
}

async fn set_operations_match_the_model(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut rng = SmallRng::seed_from_u64(0x5e70);
    // Scores nonzero halves (sums exact in any order, no signed zeros); weights too.
    let mut inputs: BTreeMap<&str, Members> = BTreeMap::new();
    for (key, n) in [("za", 12), ("zb", 25), ("zc", 140)] {
        let mut m = Members::new();
        while m.len() < n {
            let s = loop {
                let s = rng.gen_range(-16..=16) as f64 / 2.0;
                if s != 0.0 {
                    break s;
                }
            };
            m.insert(format!("m{}", rng.gen_range(0..200)).into_bytes(), s);
        }
        zadd_items(&mut c, key, &ordered(&m)).await;
        inputs.insert(key, m);
    }
    let mut set = Members::new();
    let mut cmd = redis::cmd("SADD");
    cmd.arg("st");
    for _ in 0..20 {
        let mname = format!("m{}", rng.gen_range(0..60));
        cmd.arg(&mname);
        set.insert(mname.into_bytes(), 1.0);
    }
    let _: i64 = cmd.query_async(&mut c).await.unwrap();
    inputs.insert("st", set);
    inputs.insert("missing", Members::new());
    let names: Vec<&str> = inputs.keys().copied().collect();
    for round in 0..300 {
        let op = [Op::Union, Op::Inter, Op::Diff][rng.gen_range(0..3)];
        let n = rng.gen_range(1..=4);
        // Mostly zsets and the set; the missing key now and then.
        let ks: Vec<&str> = (0..n)
            .map(|_| {
                let k = names[rng.gen_range(0..names.len())];
                if k == "missing" && rng.gen_bool(0.5) {
                    "za"
                } else {
                    k
                }
            })
            .collect();
        let mut weights = vec![1.0; n];
        let mut how = Agg::Sum;
        let mut opts: Vec<String> = Vec::new();
        if op != Op::Diff && rng.gen_bool(0.5) {
            opts.push("WEIGHTS".into());
            for w in weights.iter_mut() {
                *w = [1.0, 2.0, 0.5, -1.0, 3.0, -0.5][rng.gen_range(0..6)];
                opts.push(g17(*w));
            }
        }
        if op != Op::Diff && rng.gen_bool(0.5) {
            let (name, a) =
                [("SUM", Agg::Sum), ("MIN", Agg::Min), ("MAX", Agg::Max)][rng.gen_range(0..3)];
            how = a;
            opts.push("AGGREGATE".into());
            opts.push(if rng.gen_bool(0.2) {
                name.to_lowercase()
            } else {
                name.into()
            });
        }
        let ins: Vec<Members> = ks.iter().map(|k| inputs[k].clone()).collect();
        let want = setop(op, &ins, &weights, how);
        let base = match op {
            Op::Union => "ZUNION",
            Op::Inter => "ZINTER",
            Op::Diff => "ZDIFF",
        };
        let nk = n.to_string();
        let store = rng.gen_bool(0.5);
        let mut args: Vec<String> = if store {
            vec![format!("{base}STORE"), "dst".into(), nk]
        } else {
            vec![base.into(), nk]
        };
        args.extend(ks.iter().map(|k| k.to_string()));
        args.extend(opts);
        let ws = !store && rng.gen_bool(0.6);
        if ws {
            args.push("WITHSCORES".into());
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = qr(&mut c, &a).await;
        if store {
            assert_eq!(got, Ok(int(want.len() as i64)), "round {round}: {a:?}");
            assert_eq!(
                qr(&mut c, &["ZRANGE", "dst", "0", "-1", "WITHSCORES"]).await,
                Ok(flat(&want, true)),
                "round {round}: {a:?} stored"
            );
            if !want.is_empty() {
                let enc = if want.len() > 128 {
                    "skiplist"
                } else {
                    "listpack"
                };
                assert_eq!(encoding(&mut c, "dst").await, enc, "round {round}: {a:?}");
            } else {
                assert_eq!(qr(&mut c, &["EXISTS", "dst"]).await, Ok(int(0)));
            }
        } else {
            assert_eq!(got, Ok(flat(&want, ws)), "round {round}: {a:?}");
        }
        if op == Op::Inter {
            let inter = setop(Op::Inter, &ins, &vec![1.0; n], Agg::Sum).len() as i64;
            let mut args: Vec<String> = vec!["ZINTERCARD".into(), n.to_string()];
            args.extend(ks.iter().map(|k| k.to_string()));
            let lim = rng.gen_range(0..inter + 3);
            if rng.gen_bool(0.5) {
                args.push("LIMIT".into());
                args.push(lim.to_string());
            }
            let want = if args.len() > n + 2 && lim > 0 {
                inter.min(lim)
            } else {
                inter
            };
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_eq!(qr(&mut c, &a).await, Ok(int(want)), "{a:?}");
        }
    }
    // The destination may be an input; an empty result deletes it.
    q::<()>(&mut c, &["ZADD", "x", "1", "a", "2", "b"])
        .await
        .unwrap();
    assert_eq!(
        qr(
            &mut c,
            &["ZUNIONSTORE", "x", "2", "x", "x", "WEIGHTS", "1", "2"]
        )
        .await,
        Ok(int(2))
    );
    assert_eq!(
        qr(&mut c, &["ZRANGE", "x", "0", "-1", "WITHSCORES"]).await,
        Ok(bulks(&["a", "3", "b", "6"]))
    );
    assert_eq!(
        qr(&mut c, &["ZINTERSTORE", "x", "2", "x", "missing"]).await,
        Ok(int(0))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "x"]).await, Ok(int(0)));
    // +inf and -inf add up to 0 (Redis's convention for the NaN), and so does inf * 0.
    q::<()>(&mut c, &["ZADD", "pi", "inf", "a", "1", "b"])
        .await
        .unwrap();
    q::<()>(&mut c, &["ZADD", "ni", "-inf", "a", "-inf", "b"])
        .await
        .unwrap();
    assert_eq!(
        qr(&mut c, &["ZUNION", "2", "pi", "ni", "WITHSCORES"]).await,
        Ok(bulks(&["b", "-inf", "a", "0"]))
    );
    assert_eq!(
        qr(
            &mut c,
            &["ZINTER", "2", "pi", "ni", "WEIGHTS", "0", "1", "WITHSCORES"]
        )
        .await,
        Ok(bulks(&["a", "-inf", "b", "-inf"]))
    );
    assert_eq!(
        qr(
            &mut c,
            &[
                "ZUNION",
                "1",
                "pi",
                "WEIGHTS",
                "0",
                "AGGREGATE",
                "MAX",
                "WITHSCORES"
            ]
        )
        .await,
        Ok(bulks(&["a", "0", "b", "0"]))
    );
    assert_eq!(
        qr(&mut c, &["ZINTER", "2", "pi", "ni", "AGGREGATE", "MIN"]).await,
        Ok(bulks(&["a", "b"]))
    );
    // A set alone, with a weight: every member scores the weight.
    q::<()>(&mut c, &["SADD", "s2", "q", "p"]).await.unwrap();
    assert_eq!(
        qr(
            &mut c,
            &["ZUNION", "1", "s2", "WEIGHTS", "2.5", "WITHSCORES"]
        )
        .await,
        Ok(bulks(&["p", "2.5", "q", "2.5"]))
    );
    assert_eq!(
        qr(&mut c, &["ZDIFF", "2", "s2", "pi", "WITHSCORES"]).await,
        Ok(bulks(&["p", "1", "q", "1"]))
    );
    assert_eq!(
        qr(&mut c, &["ZINTERCARD", "2", "s2", "pi"]).await,
        Ok(int(0))
    );
    assert_eq!(
        qr(&mut c, &["ZDIFFSTORE", "dd", "1", "s2"]).await,
        Ok(int(2))
    );
    assert_eq!(encoding(&mut c, "dd").await, "listpack");
    assert_eq!(q::<String>(&mut c, &["TYPE", "dd"]).await.unwrap(), "zset");
}

// ---------------------------------------------------------------------------------
// ZRANDMEMBER and ZSCAN.

async fn zrandmember_properties(addr: SocketAddr) {
    let mut c = con(addr).await;
    let small: Members = (0..10)
        .map(|i| (format!("s{i}").into_bytes(), i as f64 * 1.1))
        .collect();
    let large: Members = (0..200)
        .map(|i| (format!("l{i:03}").into_bytes(), (i % 17) as f64 - 0.5))
        .collect();
    zadd_items(&mut c, "small", &ordered(&small)).await;
    zadd_items(&mut c, "large", &ordered(&large)).await;
    assert_eq!(encoding(&mut c, "small").await, "listpack");
    assert_eq!(encoding(&mut c, "large").await, "skiplist");
    for (key, z) in [("small", &small), ("large", &large)] {
        let card = z.len() as i64;
        // One member: every one of them comes up.
        let mut seen = HashSet::new();
        for _ in 0..(if card == 10 { 300 } else { 6000 }) {
            let Value::BulkString(m) = ok(&mut c, &["ZRANDMEMBER", key]).await else {
                panic!("ZRANDMEMBER {key} is not a bulk string");
            };
            assert!(z.contains_key(&m));
            seen.insert(m);
        }
        assert_eq!(seen.len() as i64, card, "ZRANDMEMBER {key} missed members");
        for count in [
            1,
            5,
            card / 2,
            card - 1,
            card,
            card + 1,
            3 * card,
            -1,
            -7,
            -card,
            -3 * card,
        ] {
            for ws in [false, true] {
                let cs = count.to_string();
                let mut args = vec!["ZRANDMEMBER", key, &cs];
                if ws {
                    args.push("WITHSCORES");
                }
                let Value::Array(vals) = ok(&mut c, &args).await else {
                    panic!("{args:?} is not an array");
                };
                let mut got: Vec<(Vec<u8>, Option<Value>)> = Vec::new();
                let mut it = vals.into_iter();
                while let Some(Value::BulkString(m)) = it.next() {
                    let s = if ws { it.next() } else { None };
                    got.push((m, s));
                }
                let want_len = if count > 0 { count.min(card) } else { -count };
                assert_eq!(got.len() as i64, want_len, "{args:?}: how many");
                for (m, s) in &got {
                    let score = z.get(m).unwrap_or_else(|| panic!("{args:?}: not a member"));
                    if ws {
                        assert_eq!(s.as_ref(), Some(&sv(*score)), "{args:?}: score");
                    }
                }
                if count > 0 {
                    let distinct: HashSet<&Vec<u8>> = got.iter().map(|(m, _)| m).collect();
                    assert_eq!(distinct.len(), got.len(), "{args:?}: repeats");
                }
            }
        }
        // A negative count much larger than the zset repeats members.
        let Value::Array(vals) = ok(&mut c, &["ZRANDMEMBER", key, "-1000"]).await else {
            panic!()
        };
        let distinct: HashSet<String> = vals.iter().map(|v| format!("{v:?}")).collect();
        assert!(distinct.len() < 1000 && distinct.len() as i64 <= card);
        assert_eq!(
            qr(&mut c, &["ZRANDMEMBER", key, "0"]).await,
            Ok(Value::Array(vec![]))
        );
        assert_eq!(
            qr(&mut c, &["ZRANDMEMBER", key, "0", "WITHSCORES"]).await,
            Ok(Value::Array(vec![]))
        );
    }
    assert_eq!(qr(&mut c, &["ZRANDMEMBER", "nokey"]).await, Ok(Value::Nil));
    assert_eq!(
        qr(&mut c, &["ZRANDMEMBER", "nokey", "5"]).await,
        Ok(Value::Array(vec![]))
    );
    assert_eq!(
        qr(&mut c, &["ZRANDMEMBER", "nokey", "-5", "WITHSCORES"]).await,
        Ok(Value::Array(vec![]))
    );
    assert_eq!(err(&mut c, &["ZRANDMEMBER", "small", "1.5"]).await, NOT_INT);
    assert_eq!(
        err(&mut c, &["ZRANDMEMBER", "small", "1", "WITHSCORE"]).await,
        SYNTAX
    );
    assert_eq!(
        err(&mut c, &["ZRANDMEMBER", "small", "-9223372036854775808"]).await,
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    assert_eq!(
        err(
            &mut c,
            &["ZRANDMEMBER", "small", "-9223372036854775807", "WITHSCORES"]
        )
        .await,
        "ERR value is out of range"
    );
    // Nothing above changed the zsets.
    assert_eq!(
        qr(&mut c, &["ZRANGE", "small", "0", "-1", "WITHSCORES"]).await,
        Ok(flat(&ordered(&small), true))
    );
    assert_eq!(qr(&mut c, &["ZCARD", "large"]).await, Ok(int(200)));
}

/// A full ZSCAN iteration from cursor 0: the member/score pairs, in the order returned.
async fn zscan_all(
    c: &mut MultiplexedConnection,
    key: &str,
    extra: &[&str],
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    for _ in 0..100_000 {
        let mut args = vec!["ZSCAN", key, &cursor];
        args.extend(extra);
        let (next, page): (String, Vec<Vec<u8>>) = q(c, &args).await.unwrap();
        assert!(page.len() % 2 == 0, "ZSCAN page of odd length");
        for p in page.chunks(2) {
            out.push((p[0].clone(), p[1].clone()));
        }
        if next == "0" {
            return out;
        }
        cursor = next;
    }
    panic!("ZSCAN {key} did not end");
}

async fn zscan_returns_every_member_once(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut rng = SmallRng::seed_from_u64(0x5ca4);
    let mut big = Members::new();
    while big.len() < 3000 {
        let s = match rng.gen_range(0..4) {
            0 => rng.gen_range(-1000..1000) as f64,
            1 => rng.gen::<f64>() * 1e6 - 5e5,
            2 => 0.1 * rng.gen_range(0..100) as f64,
            _ => [f64::INFINITY, f64::NEG_INFINITY, -0.0, 1.1][rng.gen_range(0..4)],
        };
        big.insert(format!("k{}", rng.gen::<u32>()).into_bytes(), s);
    }
    zadd_items(&mut c, "big", &ordered(&big)).await;
    assert_eq!(encoding(&mut c, "big").await, "skiplist");
    let mut small = Members::new();
    for i in 0..20 {
        small.insert(format!("s{i}").into_bytes(), i as f64 / 3.0);
    }
    zadd_items(&mut c, "small", &ordered(&small)).await;
    assert_eq!(encoding(&mut c, "small").await, "listpack");
    for (key, z) in [("big", &big), ("small", &small)] {
        for extra in [&[][..], &["COUNT", "7"], &["COUNT", "1000"]] {
            let got = zscan_all(&mut c, key, extra).await;
            let mut seen: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for (m, s) in &got {
                assert!(
                    seen.insert(m.clone(), s.clone()).is_none(),
                    "ZSCAN {key} {extra:?} returned {} twice",
                    String::from_utf8_lossy(m)
                );
                let want = z
                    .get(m)
                    .unwrap_or_else(|| panic!("ZSCAN {key}: not a member"));
                assert_eq!(
                    String::from_utf8_lossy(s),
                    g17(*want),
                    "ZSCAN {key}: the score of {}",
                    String::from_utf8_lossy(m)
                );
            }
            assert_eq!(seen.len(), z.len(), "ZSCAN {key} {extra:?}: how many");
        }
        // MATCH filters: exactly the matching members.
        let got = zscan_all(&mut c, key, &["MATCH", "*1*", "COUNT", "50"]).await;
        let got: HashSet<Vec<u8>> = got.into_iter().map(|(m, _)| m).collect();
        let want: HashSet<Vec<u8>> = z.keys().filter(|m| m.contains(&b'1')).cloned().collect();
        assert_eq!(got, want, "ZSCAN {key} MATCH *1*");
    }
    // A listpack is returned whole, in its order, with cursor 0.
    let (cur, page): (String, Vec<String>) = q(&mut c, &["ZSCAN", "small", "0", "COUNT", "1"])
        .await
        .unwrap();
    assert_eq!(cur, "0");
    let want: Vec<String> = ordered(&small)
        .iter()
        .flat_map(|(m, s)| [String::from_utf8_lossy(m).into_owned(), g17(*s)])
        .collect();
    assert_eq!(page, want);
    assert_eq!(
        qr(&mut c, &["ZSCAN", "nokey", "0"]).await,
        Ok(Value::Array(vec![bulk(b"0"), Value::Array(vec![])]))
    );
    assert_eq!(
        err(&mut c, &["ZSCAN", "big", "abc"]).await,
        "ERR invalid cursor"
    );
    q::<()>(&mut c, &["SET", "str", "v"]).await.unwrap();
    assert_eq!(err(&mut c, &["ZSCAN", "str", "0"]).await, WRONGTYPE);
}

// ---------------------------------------------------------------------------------
// Replies and errors.

async fn replies_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    // %.17g: the double nearest 1.1 shows its error; integers have no point; large and
    // small magnitudes an exponent.
    for (score, shown) in [
        ("1.1", "1.1000000000000001"),
        ("0.1", "0.10000000000000001"),
        ("2.0", "2"),
        ("-0", "0"), // a listpack stores -0 as the integer 0
        ("+0", "0"),
        ("1e20", "1e+20"),
        ("1e16", "10000000000000000"),
        ("1e17", "1e+17"),
        ("1e-5", "1.0000000000000001e-05"),
        ("0.0001", "0.0001"),
        ("123456789.125", "123456789.125"),
        ("inf", "inf"),
        ("-INF", "-inf"),
        ("+Infinity", "inf"),
        ("0x10", "16"),
        ("9007199254740993", "9007199254740992"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
    ] {
        q::<()>(&mut c, &["ZADD", "f", score, "m"]).await.unwrap();
        assert_eq!(
            qr(&mut c, &["ZSCORE", "f", "m"]).await,
            Ok(bulk(shown.as_bytes())),
            "ZSCORE after ZADD f {score} m"
        );
        if score != "-0" {
            assert_eq!(g17(score.parse().unwrap_or(16.0)), shown, "g17 {score}");
        }
    }
    q::<()>(&mut c, &["DEL", "f"]).await.unwrap();
    // A skiplist keeps -0; ZADD INCR replies with the score it computed.
    let m65 = "y".repeat(65);
    q::<()>(&mut c, &["ZADD", "f", "-0", &m65, "5", "m"])
        .await
        .unwrap();
    assert_eq!(encoding(&mut c, "f").await, "skiplist");
    assert_eq!(qr(&mut c, &["ZSCORE", "f", &m65]).await, Ok(bulk(b"-0")));
    assert_eq!(qr(&mut c, &["ZADD", "f", "-0", "m"]).await, Ok(int(0)));
    assert_eq!(qr(&mut c, &["ZSCORE", "f", "m"]).await, Ok(bulk(b"-0")));
    assert_eq!(
        qr(&mut c, &["ZRANGE", "f", "0", "-1", "WITHSCORES"]).await,
        Ok(bulks(&["m", "-0", &m65, "-0"]))
    );
    assert_eq!(g17(-0.0), "-0");
    assert_eq!(
        qr(&mut c, &["ZADD", "g", "INCR", "-0", "m"]).await,
        Ok(bulk(b"-0"))
    );
    assert_eq!(qr(&mut c, &["ZSCORE", "g", "m"]).await, Ok(bulk(b"0")));
    q::<()>(&mut c, &["DEL", "f", "g"]).await.unwrap();
    // ZADD's replies: added, or added and changed (CH); INCR the new score or nil.
    let cases: &[(&[&str], Value)] = &[
        (&["ZADD", "z", "1", "a", "2", "b", "1", "a"], int(2)),
        (&["ZADD", "z", "1", "a", "3", "b"], int(0)),
        (&["ZADD", "z", "CH", "1", "a", "4", "b", "5", "c"], int(2)),
        (&["ZADD", "z", "NX", "9", "a", "9", "d"], int(1)),
        (&["ZADD", "z", "XX", "CH", "7", "a", "7", "e"], int(1)),
        (
            &["ZADD", "z", "GT", "CH", "6", "a", "8", "b", "1", "f"],
            int(2),
        ),
        (&["ZADD", "z", "LT", "CH", "9", "a", "5", "b"], int(1)),
        (
            &["ZADD", "z", "XX", "GT", "CH", "10", "a", "1", "zz"],
            int(1),
        ),
        (&["ZADD", "z", "INCR", "1.5", "a"], bulk(b"11.5")),
        (&["ZADD", "z", "NX", "INCR", "1", "a"], Value::Nil),
        (&["ZADD", "z", "XX", "INCR", "1", "nope"], Value::Nil),
        (&["ZADD", "z", "GT", "INCR", "-1", "a"], Value::Nil),
        (&["ZADD", "z", "GT", "INCR", "0", "a"], Value::Nil),
        (&["ZADD", "z", "INCR", "0", "a"], bulk(b"11.5")),
        (&["ZADD", "z", "LT", "INCR", "-1", "a"], bulk(b"10.5")),
        (&["ZADD", "z", "incr", "nx", "2", "new"], bulk(b"2")),
        (&["ZINCRBY", "z", "-0.5", "new"], bulk(b"1.5")),
        (&["ZINCRBY", "z", "1", "fresh"], bulk(b"1")),
        (&["ZADD", "nokey", "XX", "1", "a"], int(0)),
        (&["ZADD", "nokey", "XX", "INCR", "1", "a"], Value::Nil),
        (&["ZCARD", "z"], int(7)),
        (&["ZCARD", "nokey"], int(0)),
        (&["ZSCORE", "nokey", "a"], Value::Nil),
        (&["ZRANK", "nokey", "a"], Value::Nil),
        (&["ZREM", "nokey", "a"], int(0)),
        (&["ZREM", "z", "a", "a", "nope"], int(1)),
        (&["ZPOPMIN", "nokey"], Value::Array(vec![])),
        (&["ZPOPMAX", "nokey", "3"], Value::Array(vec![])),
        (&["ZPOPMIN", "z", "0"], Value::Array(vec![])),
        (&["ZMPOP", "1", "nokey", "MIN"], Value::Nil),
        (
            &["ZMSCORE", "nokey", "a", "b"],
            Value::Array(vec![Value::Nil, Value::Nil]),
        ),
        (&["ZRANGE", "nokey", "0", "-1"], Value::Array(vec![])),
        (&["ZCOUNT", "nokey", "-inf", "+inf"], int(0)),
        (&["ZREMRANGEBYRANK", "nokey", "0", "-1"], int(0)),
        (&["ZUNION", "1", "nokey"], Value::Array(vec![])),
        (&["ZUNIONSTORE", "out", "1", "nokey"], int(0)),
        (&["ZINTERCARD", "1", "nokey"], int(0)),
    ];
    for (args, want) in cases {
        assert_eq!(qr(&mut c, args).await, Ok(want.clone()), "{args:?}");
    }
    assert_eq!(
        qr(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]).await,
        Ok(bulks(&[
            "f", "1", "fresh", "1", "new", "1.5", "b", "5", "c", "5", "d", "9"
        ]))
    );
    assert_eq!(qr(&mut c, &["ZPOPMIN", "z"]).await, Ok(bulks(&["f", "1"])));
    assert_eq!(
        qr(&mut c, &["ZPOPMAX", "z", "2"]).await,
        Ok(bulks(&["d", "9", "c", "5"]))
    );
    assert_eq!(
        qr(&mut c, &["ZMPOP", "2", "nokey", "z", "MAX", "COUNT", "10"]).await,
        Ok(Value::Array(vec![
            bulk(b"z"),
            pairs(&items(&[("b", 5.0), ("new", 1.5), ("fresh", 1.0)]))
        ]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "z"]).await, Ok(int(0)));
    // Options in any case and order; the same member twice in one ZADD.
    assert_eq!(
        qr(&mut c, &["ZADD", "o", "ch", "Nx", "1", "a", "2", "a"]).await,
        Ok(int(1))
    );
    assert_eq!(qr(&mut c, &["ZSCORE", "o", "a"]).await, Ok(bulk(b"1")));
    assert_eq!(
        qr(&mut c, &["ZADD", "o", "CH", "1", "b", "2", "b"]).await,
        Ok(int(2))
    );
    assert_eq!(qr(&mut c, &["ZSCORE", "o", "b"]).await, Ok(bulk(b"2")));
    // A score of -0 replaces 0 only by value: nothing changes.
    assert_eq!(
        qr(&mut c, &["ZADD", "o", "CH", "0", "c", "-0", "c"]).await,
        Ok(int(1))
    );
    assert_eq!(qr(&mut c, &["ZSCORE", "o", "c"]).await, Ok(bulk(b"0")));
}

async fn errors_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    q::<()>(&mut c, &["SET", "s", "v"]).await.unwrap();
    q::<()>(&mut c, &["RPUSH", "l", "a"]).await.unwrap();
    q::<()>(&mut c, &["ZADD", "z", "1", "a", "2", "b"])
        .await
        .unwrap();
    for cmd in [
        &["ZADD", "s", "1", "a"][..],
        &["ZADD", "l", "1", "a"],
        &["ZINCRBY", "s", "1", "a"],
        &["ZREM", "s", "a"],
        &["ZCARD", "s"],
        &["ZSCORE", "s", "a"],
        &["ZMSCORE", "s", "a"],
        &["ZRANK", "s", "a"],
        &["ZREVRANK", "s", "a"],
        &["ZRANGE", "s", "0", "-1"],
        &["ZRANGE", "s", "-inf", "+inf", "BYSCORE"],
        &["ZREVRANGE", "s", "0", "-1"],
        &["ZRANGEBYSCORE", "s", "0", "1"],
        &["ZREVRANGEBYSCORE", "s", "1", "0"],
        &["ZRANGEBYLEX", "s", "-", "+"],
        &["ZREVRANGEBYLEX", "s", "+", "-"],
        &["ZCOUNT", "s", "0", "1"],
        &["ZLEXCOUNT", "s", "-", "+"],
        &["ZPOPMIN", "s"],
        &["ZPOPMAX", "s", "2"],
        &["ZPOPMIN", "s", "0"],
        &["ZREMRANGEBYRANK", "s", "0", "1"],
        &["ZREMRANGEBYSCORE", "s", "0", "1"],
        &["ZREMRANGEBYLEX", "s", "-", "+"],
        &["ZRANGESTORE", "d", "s", "0", "-1"],
        &["ZUNIONSTORE", "d", "2", "z", "s"],
        &["ZUNIONSTORE", "d", "2", "z", "l"],
        &["ZINTERSTORE", "d", "2", "z", "s"],
        &["ZDIFFSTORE", "d", "1", "s"],
        &["ZUNION", "1", "s"],
        &["ZINTER", "2", "s", "z"],
        &["ZDIFF", "2", "z", "l"],
        &["ZINTERCARD", "2", "z", "s"],
        &["ZMPOP", "1", "s", "MIN"],
        &["ZMPOP", "2", "nokey", "s", "MAX"],
        &["BZPOPMIN", "s", "0"],
        &["BZPOPMAX", "nokey", "s", "0"],
        &["BZMPOP", "0", "1", "s", "MIN"],
        &["ZRANDMEMBER", "s"],
        &["ZRANDMEMBER", "s", "2"],
        &["ZSCAN", "s", "0"],
    ] {
        assert_eq!(err(&mut c, cmd).await, WRONGTYPE, "{cmd:?}");
    }
    let cases: &[(&[&str], &str)] = &[
        (&["ZADD", "z", "abc", "a"], NOT_FLOAT),
        (&["ZADD", "z", "nan", "a"], NOT_FLOAT),
        (&["ZADD", "z", "", "a"], NOT_FLOAT),
        (&["ZADD", "z", " 1", "a"], NOT_FLOAT),
        (&["ZADD", "z", "1e400", "a"], NOT_FLOAT),
        (&["ZADD", "z", "1", "c", "x", "d"], NOT_FLOAT),
        (&["ZADD", "s", "x", "a"], NOT_FLOAT), // scores are read before the key
        (&["ZINCRBY", "z", "abc", "a"], NOT_FLOAT),
        (&["ZINCRBY", "z", "nan", "a"], NOT_FLOAT),
        (&["ZADD", "z", "NX", "XX", "1", "a"], NX_XX),
        (&["ZADD", "s", "xx", "nx", "1", "a"], NX_XX),
        (&["ZADD", "z", "GT", "LT", "1", "a"], GT_LT_NX),
        (&["ZADD", "z", "NX", "GT", "1", "a"], GT_LT_NX),
        (&["ZADD", "z", "LT", "NX", "1", "a"], GT_LT_NX),
        (&["ZADD", "z", "NX", "XX", "GT", "1", "a"], NX_XX),
        (&["ZADD", "z", "INCR", "1", "a", "2", "b"], INCR_PAIRS),
        (&["ZADD", "z", "1", "a", "2"], SYNTAX),
        (&["ZADD", "z", "NX", "1"], SYNTAX),
        (&["ZADD", "z", "FOO", "1", "a"], SYNTAX),
        (
            &["ZADD", "z", "1"],
            "ERR wrong number of arguments for 'zadd' command",
        ),
        (
            &["ZINCRBY", "z", "1"],
            "ERR wrong number of arguments for 'zincrby' command",
        ),
        (&["ZRANGEBYSCORE", "z", "a", "1"], RANGE_NOT_FLOAT),
        (&["ZRANGEBYSCORE", "z", "1", "(a"], RANGE_NOT_FLOAT),
        (&["ZRANGEBYSCORE", "z", "(nan", "1"], RANGE_NOT_FLOAT),
        (&["ZRANGEBYSCORE", "z", "((1", "2"], RANGE_NOT_FLOAT),
        (&["ZREVRANGEBYSCORE", "z", "1", "x"], RANGE_NOT_FLOAT),
        (&["ZCOUNT", "z", "nan", "1"], RANGE_NOT_FLOAT),
        (&["ZREMRANGEBYSCORE", "z", "1", "1x"], RANGE_NOT_FLOAT),
        (&["ZRANGE", "z", "a", "b", "BYSCORE"], RANGE_NOT_FLOAT),
        (
            &["ZRANGESTORE", "d", "z", "a", "b", "BYSCORE"],
            RANGE_NOT_FLOAT,
        ),
        (&["ZRANGEBYLEX", "z", "a", "+"], RANGE_NOT_LEX),
        (&["ZRANGEBYLEX", "z", "-", ""], RANGE_NOT_LEX),
        (&["ZREVRANGEBYLEX", "z", "+a", "-"], RANGE_NOT_LEX),
        (&["ZLEXCOUNT", "z", "-", "a"], RANGE_NOT_LEX),
        (&["ZREMRANGEBYLEX", "z", "x", "+"], RANGE_NOT_LEX),
        (&["ZRANGE", "z", "a", "b", "BYLEX"], RANGE_NOT_LEX),
        (
            &["ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"],
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ),
        (
            &["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"],
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ),
        (&["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"], SYNTAX),
        (&["ZRANGE", "z", "0", "-1", "REV", "REV"], SYNTAX),
        (&["ZRANGE", "z", "0", "-1", "FOO"], SYNTAX),
        (&["ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "0"], SYNTAX),
        (
            &["ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "x", "1"],
            NOT_INT,
        ),
        (
            &["ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0", "x"],
            NOT_INT,
        ),
        (&["ZRANGEBYSCORE", "z", "0", "1", "WITHSCORE"], SYNTAX),
        (&["ZRANGE", "z", "a", "b"], NOT_INT),
        (&["ZRANGE", "z", "0", "1.5"], NOT_INT),
        (&["ZREVRANGE", "z", "0", "-1", "LIMIT"], SYNTAX),
        (&["ZREMRANGEBYRANK", "z", "a", "1"], NOT_INT),
        (&["ZPOPMIN", "z", "-1"], NOT_POSITIVE),
        (&["ZPOPMAX", "z", "x"], NOT_POSITIVE),
        (&["ZPOPMIN", "nokey", "-1"], NOT_POSITIVE),
        (&["ZPOPMIN", "z", "1", "2"], SYNTAX),
        (
            &["ZMPOP", "0", "z", "MIN"],
            "ERR numkeys should be greater than 0",
        ),
        (&["ZMPOP", "1", "z", "MID"], SYNTAX),
        (
            &["ZMPOP", "1", "z", "MIN", "COUNT", "0"],
            "ERR count should be greater than 0",
        ),
        (
            &["ZMPOP", "1", "z", "MIN", "COUNT", "-1"],
            "ERR count should be greater than 0",
        ),
        (&["ZMPOP", "1", "z", "MIN", "FOO", "1"], SYNTAX),
        (&["BZPOPMIN", "z", "-1"], "ERR timeout is negative"),
        (
            &["BZPOPMIN", "z", "abc"],
            "ERR timeout is not a float or out of range",
        ),
        (
            &["BZPOPMAX", "z", "nan"],
            "ERR timeout is not a float or out of range",
        ),
        (
            &["BZMPOP", "0", "0", "z", "MIN"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["BZMPOP", "-1", "1", "z", "MIN"],
            "ERR timeout is negative",
        ),
        (
            &["ZUNIONSTORE", "d", "0", "z"],
            "ERR at least 1 input key is needed for 'zunionstore' command",
        ),
        (
            &["ZINTER", "0", "z"],
            "ERR at least 1 input key is needed for 'zinter' command",
        ),
        (
            &["ZDIFF", "0", "z"],
            "ERR at least 1 input key is needed for 'zdiff' command",
        ),
        (
            &["ZINTERCARD", "0", "z"],
            "ERR at least 1 input key is needed for 'zintercard' command",
        ),
        (&["ZUNION", "2", "z"], SYNTAX),
        (&["ZUNION", "x", "z"], NOT_INT),
        (&["ZUNIONSTORE", "d", "1", "z", "WEIGHTS", "1", "2"], SYNTAX),
        (&["ZUNIONSTORE", "d", "1", "z", "WEIGHTS"], SYNTAX),
        (
            &["ZUNIONSTORE", "d", "1", "z", "WEIGHTS", "abc"],
            "ERR weight value is not a float",
        ),
        (
            &["ZINTER", "1", "z", "WEIGHTS", "nan"],
            "ERR weight value is not a float",
        ),
        (&["ZUNIONSTORE", "d", "1", "z", "AGGREGATE", "AVG"], SYNTAX),
        (&["ZUNIONSTORE", "d", "1", "z", "WITHSCORES"], SYNTAX),
        (&["ZDIFF", "1", "z", "WEIGHTS", "1"], SYNTAX),
        (&["ZDIFF", "1", "z", "AGGREGATE", "SUM"], SYNTAX),
        (
            &["ZINTERCARD", "1", "z", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["ZINTERCARD", "1", "z", "LIMIT", "x"],
            "ERR LIMIT can't be negative",
        ),
        (&["ZINTERCARD", "1", "z", "FOO", "1"], SYNTAX),
        (&["ZRANDMEMBER", "z", "x"], NOT_INT),
        (&["ZSCAN", "z", "x"], "ERR invalid cursor"),
        (&["ZSCAN", "z", "0", "COUNT", "0"], SYNTAX),
        (&["ZSCAN", "z", "0", "FOO"], SYNTAX),
        (
            &["ZRANK", "z", "a", "WITHSCORE"],
            "ERR wrong number of arguments for 'zrank' command",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(err(&mut c, args).await, *want, "{args:?}");
    }
    // ZINCRBY of -inf onto +inf: NaN, refused; the score stays.
    q::<()>(&mut c, &["ZADD", "n", "inf", "a"]).await.unwrap();
    assert_eq!(err(&mut c, &["ZINCRBY", "n", "-inf", "a"]).await, NAN_SCORE);
    assert_eq!(
        err(&mut c, &["ZADD", "n", "INCR", "-inf", "a"]).await,
        NAN_SCORE
    );
    assert_eq!(qr(&mut c, &["ZSCORE", "n", "a"]).await, Ok(bulk(b"inf")));
    assert_eq!(
        qr(&mut c, &["ZINCRBY", "n", "inf", "a"]).await,
        Ok(bulk(b"inf"))
    );
    // Nothing above changed anything.
    assert_eq!(
        qr(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]).await,
        Ok(bulks(&["a", "1", "b", "2"]))
    );
    assert_eq!(qr(&mut c, &["GET", "s"]).await, Ok(bulk(b"v")));
    assert_eq!(qr(&mut c, &["EXISTS", "d"]).await, Ok(int(0)));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn encodings_and_type(addr: SocketAddr) {
    let mut c = con(addr).await;
    // 128 members are a listpack; the 129th makes a skiplist, which stays.
    let mut cmd = redis::cmd("ZADD");
    cmd.arg("e");
    for i in 0..128 {
        cmd.arg(i as f64 * 1.1).arg(format!("m{i}"));
    }
    let _: i64 = cmd.query_async(&mut c).await.unwrap();
    assert_eq!(encoding(&mut c, "e").await, "listpack");
    assert_eq!(q::<String>(&mut c, &["TYPE", "e"]).await.unwrap(), "zset");
    let before: Vec<String> = q(&mut c, &["ZRANGE", "e", "0", "-1", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(qr(&mut c, &["ZADD", "e", "1", "m0"]).await, Ok(int(0)));
    assert_eq!(encoding(&mut c, "e").await, "listpack");
    q::<()>(&mut c, &["ZADD", "e", "0", "m0"]).await.unwrap();
    assert_eq!(qr(&mut c, &["ZADD", "e", "-1", "new"]).await, Ok(int(1)));
    assert_eq!(encoding(&mut c, "e").await, "skiplist");
    assert_eq!(qr(&mut c, &["ZCARD", "e"]).await, Ok(int(129)));
    assert_eq!(
        qr(&mut c, &["ZRANGE", "e", "0", "0", "WITHSCORES"]).await,
        Ok(bulks(&["new", "-1"]))
    );
    let after: Vec<String> = q(&mut c, &["ZRANGE", "e", "1", "-1", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(after, before, "the members survive the conversion");
    assert_eq!(qr(&mut c, &["ZREM", "e", "new"]).await, Ok(int(1)));
    assert_eq!(encoding(&mut c, "e").await, "skiplist");
    assert_eq!(
        qr(&mut c, &["ZREMRANGEBYRANK", "e", "2", "-1"]).await,
        Ok(int(126))
    );
    assert_eq!(encoding(&mut c, "e").await, "skiplist");
    // A 64-byte member keeps a listpack; a 65-byte one makes a skiplist.
    let (m64, m65) = ("x".repeat(64), "y".repeat(65));
    q::<()>(&mut c, &["ZADD", "v", "1", "a", "2", &m64])
        .await
        .unwrap();
    assert_eq!(encoding(&mut c, "v").await, "listpack");
    q::<()>(&mut c, &["ZADD", "v", "3", &m65]).await.unwrap();
    assert_eq!(encoding(&mut c, "v").await, "skiplist");
    assert_eq!(
        qr(&mut c, &["ZRANGE", "v", "0", "-1"]).await,
        Ok(bulks(&["a", &m64, &m65]))
    );
    // Created by a long first member, by ZINCRBY, with the limit 0.
    q::<()>(&mut c, &["ZADD", "v2", "1", &m65]).await.unwrap();
    assert_eq!(encoding(&mut c, "v2").await, "skiplist");
    q::<()>(&mut c, &["ZINCRBY", "v3", "1", &m65])
        .await
        .unwrap();
    assert_eq!(encoding(&mut c, "v3").await, "skiplist");
    q::<()>(&mut c, &["ZADD", "v4", "1", "a", "2", &m65])
        .await
        .unwrap();
    assert_eq!(encoding(&mut c, "v4").await, "skiplist");
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-entries", "0"])
        .await
        .unwrap();
    q::<()>(&mut c, &["ZADD", "z0", "1", "a"]).await.unwrap();
    assert_eq!(encoding(&mut c, "z0").await, "skiplist");
    q::<()>(
        &mut c,
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
    )
    .await
    .unwrap();
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-value", "3"])
        .await
        .unwrap();
    q::<()>(&mut c, &["ZADD", "w", "1", "abc"]).await.unwrap();
    assert_eq!(encoding(&mut c, "w").await, "listpack");
    q::<()>(&mut c, &["ZADD", "w", "1", "abcd"]).await.unwrap();
    assert_eq!(encoding(&mut c, "w").await, "skiplist");
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-value", "64"])
        .await
        .unwrap();
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "zset-max-listpack-*"])
        .await
        .unwrap();
    let got: HashMap<&str, &str> = got
        .chunks(2)
        .map(|p| (p[0].as_str(), p[1].as_str()))
        .collect();
    assert_eq!(got["zset-max-listpack-entries"], "128");
    assert_eq!(got["zset-max-listpack-value"], "64");
    // Stored results: a listpack when small enough, from a skiplist source too.
    assert_eq!(
        qr(&mut c, &["ZRANGESTORE", "st", "e", "0", "-1"]).await,
        Ok(int(2))
    );
    assert_eq!(encoding(&mut c, "st").await, "listpack");
    assert_eq!(
        qr(&mut c, &["ZUNIONSTORE", "u", "2", "e", "v"]).await,
        Ok(int(5))
    );
    assert_eq!(encoding(&mut c, "u").await, "skiplist"); // the 65-byte member
    assert_eq!(
        qr(&mut c, &["ZINTERSTORE", "u", "2", "e", "e"]).await,
        Ok(int(2))
    );
    assert_eq!(encoding(&mut c, "u").await, "listpack");
    let mut cmd = redis::cmd("ZADD");
    cmd.arg("big");
    for i in 0..129 {
        cmd.arg(i).arg(format!("b{i}"));
    }
    let _: i64 = cmd.query_async(&mut c).await.unwrap();
    assert_eq!(
        qr(&mut c, &["ZUNIONSTORE", "u", "1", "big"]).await,
        Ok(int(129))
    );
    assert_eq!(encoding(&mut c, "u").await, "skiplist");
    assert_eq!(
        qr(&mut c, &["ZRANGESTORE", "u", "big", "0", "127"]).await,
        Ok(int(128))
    );
    assert_eq!(encoding(&mut c, "u").await, "listpack");
    assert_eq!(
        qr(
            &mut c,
            &["ZRANGESTORE", "u", "big", "-inf", "+inf", "BYSCORE"]
        )
        .await,
        Ok(int(129))
    );
    assert_eq!(encoding(&mut c, "u").await, "skiplist");
    assert_eq!(q::<String>(&mut c, &["TYPE", "u"]).await.unwrap(), "zset");
    assert_eq!(
        q::<String>(&mut c, &["TYPE", "nokey"]).await.unwrap(),
        "none"
    );
    // DUMP / RESTORE keeps members, scores and the encoding.
    for key in ["e", "big", "v"] {
        let payload: Vec<u8> = q(&mut c, &["DUMP", key]).await.unwrap();
        let copy = format!("{key}:copy");
        let mut cmd = redis::cmd("RESTORE");
        cmd.arg(&copy).arg(0).arg(&payload[..]);
        let _: () = cmd.query_async(&mut c).await.unwrap();
        let a: Vec<Vec<u8>> = q(&mut c, &["ZRANGE", key, "0", "-1", "WITHSCORES"])
            .await
            .unwrap();
        let b: Vec<Vec<u8>> = q(&mut c, &["ZRANGE", &copy, "0", "-1", "WITHSCORES"])
            .await
            .unwrap();
        assert_eq!(a, b, "RESTORE of {key}");
        let (ea, eb) = (encoding(&mut c, key).await, encoding(&mut c, &copy).await);
        // Redis restores a skiplist with few enough members as a listpack.
        let want = if b.len() / 2 <= 128 && b.iter().step_by(2).all(|m| m.len() <= 64) {
            "listpack".to_string()
        } else {
            ea.clone()
        };
        assert_eq!(eb, want, "RESTORE of {key} ({ea})");
    }
}

/// Redis 7.0.15's ZADD creates a listpack whatever its pair count, and converts only
/// when a new member passes a limit (7.2's zsetTypeCreate / zsetTypeMaybeConvert size
/// it by the pairs instead). Seen in the encoding, and in a score of -0 (a listpack
/// stores it as 0): here the third pair of five goes into the listpack before the
/// fourth converts it.
async fn zadd_converts_by_members_not_pairs(addr: SocketAddr) {
    let mut c = con(addr).await;
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-entries", "3"])
        .await
        .unwrap();
    q::<()>(&mut c, &["ZADD", "e", "1", "a"]).await.unwrap();
    q::<()>(&mut c, &["ZADD", "y", "1", "a", "2", "b"])
        .await
        .unwrap();
    // Each ZADD: the members it adds and the encoding it leaves its key in.
    for (args, added, enc) in [
        (
            &["ZADD", "d", "1", "a", "2", "a", "3", "a", "4", "a"][..],
            1,
            "listpack",
        ),
        (
            &["ZADD", "e", "XX", "1", "p", "2", "q", "3", "r", "4", "s"],
            0,
            "listpack",
        ),
        (
            &["ZADD", "e", "NX", "1", "a", "2", "a", "3", "a", "4", "a"],
            0,
            "listpack",
        ),
        (
            &[
                "ZADD", "x", "1", "a", "1.1", "b", "-0", "c", "2", "d", "3", "e",
            ],
            5,
            "skiplist",
        ),
        (&["ZADD", "y", "-0", "c", "5", "d", "6", "e"], 3, "skiplist"),
    ] {
        assert_eq!(qr(&mut c, args).await, Ok(int(added)), "{args:?}");
        assert_eq!(encoding(&mut c, args[1]).await, enc, "{args:?}");
    }
    assert_eq!(qr(&mut c, &["ZSCORE", "d", "a"]).await, Ok(bulk(b"4")));
    // The -0s went into a listpack (as 0) before the conversion.
    assert_eq!(qr(&mut c, &["ZSCORE", "x", "c"]).await, Ok(bulk(b"0")));
    assert_eq!(qr(&mut c, &["ZSCORE", "y", "c"]).await, Ok(bulk(b"0")));
    q::<()>(
        &mut c,
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
    )
    .await
    .unwrap();
    let mut cmd = redis::cmd("ZADD");
    cmd.arg("same");
    for i in 0..200 {
        cmd.arg(i).arg("m");
    }
    let added: i64 = cmd.query_async(&mut c).await.unwrap();
    assert_eq!(added, 1);
    assert_eq!(encoding(&mut c, "same").await, "listpack");
}

// ---------------------------------------------------------------------------------
// Blocking.

async fn bzpopmin_is_served_by_a_later_zadd(addr: SocketAddr) {
    let mut c = con(addr).await;
    let h = spawn_q(con(addr).await, &["BZPOPMIN", "k", "0"]);
    wait_blocked(&mut c, 1).await;
    assert!(!h.is_finished(), "BZPOPMIN on an empty key answered");
    assert_eq!(
        qr(&mut c, &["ZADD", "k", "2", "b", "1.5", "a"]).await,
        Ok(int(2))
    );
    // The waiter was served before the ZADD's client goes on.
    assert_eq!(
        qr(&mut c, &["ZRANGE", "k", "0", "-1", "WITHSCORES"]).await,
        Ok(bulks(&["b", "2"]))
    );
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k", "a", "1.5"])));
    // BZPOPMAX on several keys, the ZADD and a read pipelined.
    let h = spawn_q(b, &["BZPOPMAX", "k1", "k2", "0"]);
    wait_blocked(&mut c, 1).await;
    let (n, range): (i64, Vec<String>) = redis::pipe()
        .cmd("ZADD")
        .arg("k2")
        .arg(1)
        .arg("x")
        .arg(2)
        .arg("y")
        .cmd("ZRANGE")
        .arg("k2")
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!((n, range), (2, vec!["x".to_string()]));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k2", "y", "2"])));
    // Served at once when a key has members (the first such key in order).
    q::<()>(&mut c, &["ZADD", "k3", "5", "p"]).await.unwrap();
    let h = spawn_q(b, &["BZPOPMIN", "k1", "k3", "k2", "0"]);
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k3", "p", "5"])));
    // BZMPOP with a count: up to COUNT from the first key that gets members.
    let h = spawn_q(b, &["BZMPOP", "0", "2", "m1", "m2", "MIN", "COUNT", "2"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(
        qr(&mut c, &["ZADD", "m2", "3", "c", "1", "a", "2", "b"]).await,
        Ok(int(3))
    );
    assert_eq!(
        qr(&mut c, &["ZRANGE", "m2", "0", "-1"]).await,
        Ok(bulks(&["c"]))
    );
    let (b, r) = reply_of(h).await;
    assert_eq!(
        r,
        Ok(Value::Array(vec![
            bulk(b"m2"),
            pairs(&items(&[("a", 1.0), ("b", 2.0)]))
        ]))
    );
    let h = spawn_q(b, &["BZMPOP", "0", "1", "m3", "MAX", "COUNT", "10"]);
    wait_blocked(&mut c, 1).await;
    q::<()>(&mut c, &["ZADD", "m3", "1", "a", "2", "b"])
        .await
        .unwrap();
    assert_eq!(
        reply_of(h).await.1,
        Ok(Value::Array(vec![
            bulk(b"m3"),
            pairs(&items(&[("b", 2.0), ("a", 1.0)]))
        ]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "m3"]).await, Ok(int(0)));
    // A ZADD that adds nothing (XX on a missing key) serves nobody; a transaction and
    // ZUNIONSTORE into the key do.
    let h = spawn_q(con(addr).await, &["BZPOPMIN", "w", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(qr(&mut c, &["ZADD", "w", "XX", "1", "a"]).await, Ok(int(0)));
    assert!(!h.is_finished());
    assert_eq!(qr(&mut c, &["MULTI"]).await, Ok(Value::Okay));
    for cmd in [&["ZADD", "w", "1", "a", "2", "b"][..], &["ZREM", "w", "a"]] {
        qr(&mut c, cmd).await.unwrap();
    }
    assert_eq!(
        qr(&mut c, &["EXEC"]).await,
        Ok(Value::Array(vec![int(2), int(1)]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "w"]).await, Ok(int(0)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["w", "b", "2"])));
    let h = spawn_q(b, &["BZPOPMAX", "w2", "0"]);
    wait_blocked(&mut c, 1).await;
    q::<()>(&mut c, &["ZADD", "src", "7", "s"]).await.unwrap();
    assert_eq!(
        qr(&mut c, &["ZUNIONSTORE", "w2", "1", "src"]).await,
        Ok(int(1))
    );
    assert_eq!(reply_of(h).await.1, Ok(bulks(&["w2", "s", "7"])));
    assert_eq!(qr(&mut c, &["EXISTS", "w2"]).await, Ok(int(0)));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn blocked_clients_are_served_first_blocked_first(addr: SocketAddr) {
    let mut c = con(addr).await;
    let cmd: &[&str] = &["BZPOPMIN", "f", "0"];
    let waiting = block_in_turn(addr, &mut c, &[cmd; 3]).await;
    assert_eq!(
        qr(&mut c, &["ZADD", "f", "3", "z", "1", "x", "2", "y"]).await,
        Ok(int(3))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "f"]).await, Ok(int(0)));
    let got = replies_of(waiting).await;
    assert_eq!(
        got,
        [
            Ok(bulks(&["f", "x", "1"])),
            Ok(bulks(&["f", "y", "2"])),
            Ok(bulks(&["f", "z", "3"]))
        ]
    );
    // Two members for three waiters: the first two are served, the third waits on.
    let (min, max): (&[&str], &[&str]) =
        (&["BZPOPMIN", "g", "0"], &["BZPOPMAX", "other", "g", "0"]);
    let mut waiting = block_in_turn(addr, &mut c, &[max, min, max]).await;
    assert_eq!(
        qr(&mut c, &["ZADD", "g", "1", "p", "2", "q"]).await,
        Ok(int(2))
    );
    let third = waiting.pop().unwrap();
    let got = replies_of(waiting).await;
    assert_eq!(
        got,
        [Ok(bulks(&["g", "q", "2"])), Ok(bulks(&["g", "p", "1"]))]
    );
    wait_blocked(&mut c, 1).await;
    assert!(!third.is_finished());
    assert_eq!(qr(&mut c, &["ZADD", "other", "9", "r"]).await, Ok(int(1)));
    assert_eq!(reply_of(third).await.1, Ok(bulks(&["other", "r", "9"])));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn a_blocking_pop_times_out_with_nil(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut b = con(addr).await;
    for cmd in [
        &["BZPOPMAX", "nokey", "0.2"][..],
        &["BZPOPMIN", "nokey", "nokey2", "0.2"],
        &["BZMPOP", "0.2", "1", "nokey", "MIN", "COUNT", "3"],
    ] {
        let t = Instant::now();
        let r = qr(&mut b, cmd).await;
        let took = t.elapsed();
        assert_eq!(r, Ok(Value::Nil), "{cmd:?}");
        assert!(
            took >= Duration::from_millis(150) && took <= Duration::from_secs(5),
            "{cmd:?} took {took:?}"
        );
    }
    assert_eq!(blocked_clients(&mut c).await, 0);
    // A member added after the timeout stays.
    q::<()>(&mut c, &["ZADD", "nokey", "1", "a"]).await.unwrap();
    assert_eq!(qr(&mut c, &["ZCARD", "nokey"]).await, Ok(int(1)));
}

async fn client_unblock(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut b = con(addr).await;
    let id: i64 = q(&mut b, &["CLIENT", "ID"]).await.unwrap();
    let ids = id.to_string();
    let h = spawn_q(b, &["BZPOPMIN", "u", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(qr(&mut c, &["CLIENT", "UNBLOCK", &ids]).await, Ok(int(1)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(Value::Nil));
    assert_eq!(blocked_clients(&mut c).await, 0);
    let h = spawn_q(b, &["BZMPOP", "0", "1", "u", "MAX"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(
        qr(&mut c, &["CLIENT", "UNBLOCK", &ids, "ERROR"]).await,
        Ok(int(1))
    );
    let (mut b, r) = reply_of(h).await;
    assert_eq!(
        r,
        Err("UNBLOCKED client unblocked via CLIENT UNBLOCK".to_string())
    );
    assert_eq!(qr(&mut c, &["CLIENT", "UNBLOCK", &ids]).await, Ok(int(0)));
    assert_eq!(qr(&mut b, &["CLIENT", "ID"]).await, Ok(int(id)));
    // A later ZADD goes to the zset, not to the unblocked client.
    assert_eq!(qr(&mut c, &["ZADD", "u", "1", "e"]).await, Ok(int(1)));
    assert_eq!(qr(&mut c, &["ZCARD", "u"]).await, Ok(int(1)));
    // A closed blocked connection is no longer blocked either.
    let h = spawn_q(b, &["BZPOPMAX", "gone", "0"]);
    wait_blocked(&mut c, 1).await;
    h.abort();
    wait_blocked(&mut c, 0).await;
    assert_eq!(qr(&mut c, &["ZADD", "gone", "1", "v"]).await, Ok(int(1)));
    assert_eq!(qr(&mut c, &["ZCARD", "gone"]).await, Ok(int(1)));
}

async fn many_producers_and_consumers_hand_over_each_member_once(addr: SocketAddr) {
    const CONSUMERS: usize = 8;
    const PRODUCERS: usize = 4;
    const EACH: usize = 1500;
    let mut c = con(addr).await;
    let mut consumers = Vec::new();
    for i in 0..CONSUMERS {
        let mut b = con(addr).await;
        let cmd = if i % 2 == 0 { "BZPOPMIN" } else { "BZMPOP" };
        consumers.push(tokio::spawn(async move {
            let mut got: Vec<String> = Vec::new();
            loop {
                let batch: Vec<(String, f64)> = if cmd == "BZPOPMIN" {
                    let r: Option<(String, String, f64)> =
                        q(&mut b, &["BZPOPMIN", "q", "5"]).await.unwrap();
                    match r {
                        None => continue,
                        Some((k, m, s)) => {
                            assert_eq!(k, "q");
                            vec![(m, s)]
                        }
                    }
                } else {
                    let r: Option<(String, Vec<(String, f64)>)> =
                        q(&mut b, &["BZMPOP", "5", "1", "q", "MIN", "COUNT", "3"])
                            .await
                            .unwrap();
                    match r {
                        None => continue,
                        Some((k, items)) => {
                            assert_eq!(k, "q");
                            items
                        }
                    }
                };
                for (m, s) in batch {
                    if m.starts_with("STOP") {
                        // Any later member of this batch is a STOP too (they score
                        // +inf, the others less).
                        assert_eq!(s, f64::INFINITY);
                        return got;
                    }
                    got.push(m);
                }
            }
        }));
    }
    wait_blocked(&mut c, CONSUMERS as u64).await;
    produce(
        addr,
        PRODUCERS,
        EACH,
        "ZADD",
        |cmd, j, m| {
            cmd.arg(j).arg(m);
        },
        |added, n| assert_eq!(added, n as i64),
    )
    .await;
    // The STOP members score +inf: popped only when every other member is gone. A
    // BZMPOP consumer may take more than one; each consumer stops at its first, so
    // we add STOPs until every consumer has stopped.
    let mut all = Vec::new();
    let mut stop = 0;
    for h in consumers {
        let got = loop {
            if h.is_finished() {
                break h.await.unwrap();
            }
            q::<()>(&mut c, &["ZADD", "q", "+inf", &format!("STOP{stop}")])
                .await
                .unwrap();
            stop += 1;
            assert!(stop < 10_000, "consumers do not stop");
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        // Each producer's members are popped in score order.
        check_producer_order(&got, PRODUCERS);
        all.extend(got);
    }
    check_each_once(&all, PRODUCERS, EACH, "member");
    // Only STOP members can be left.
    let left: Vec<String> = q(&mut c, &["ZRANGE", "q", "0", "-1"]).await.unwrap();
    assert!(left.iter().all(|m| m.starts_with("STOP")), "{left:?}");
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn transactions(addr: SocketAddr) {
    let mut c = con(addr).await;
    q::<()>(&mut c, &["SET", "str", "v"]).await.unwrap();
    // Read as raw RESP: the redis crate turns an error inside EXEC's array into an
    // error of the whole reply. Blocking pops inside do not block.
    let t = Instant::now();
    let mut raw = TcpStream::connect(addr).await.unwrap();
    let got = raw_exchange(
        &mut raw,
        &[
            &["MULTI"],
            &["ZADD", "m", "1", "a", "2", "b"],
            &["ZINCRBY", "m", "2.5", "a"],
            &["ZRANGE", "m", "0", "-1", "WITHSCORES"],
            &["ZADD", "str", "1", "a"],
            &["ZPOPMIN", "m"],
            &["BZPOPMIN", "empty", "0"],
            &["BZMPOP", "0", "1", "empty", "MIN"],
            &["BZPOPMAX", "m", "0"],
            &["ZCARD", "m"],
            &["EXEC"],
        ],
    )
    .await;
    let mut want = String::from("+OK\r\n");
    want += &"+QUEUED\r\n".repeat(9);
    want += "*9\r\n:2\r\n$3\r\n3.5\r\n*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$3\r\n3.5\r\n";
    want += &format!("-{WRONGTYPE}\r\n");
    want +=
        "*2\r\n$1\r\nb\r\n$1\r\n2\r\n*-1\r\n*-1\r\n*3\r\n$1\r\nm\r\n$1\r\na\r\n$3\r\n3.5\r\n:0\r\n";
    assert_eq!(got, want);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(qr(&mut c, &["EXISTS", "m"]).await, Ok(int(0)));
    // A command refused while queueing aborts the transaction.
    assert_eq!(qr(&mut c, &["MULTI"]).await, Ok(Value::Okay));
    assert!(qr(&mut c, &["ZADD", "m", "1"]).await.is_err());
    assert_eq!(
        qr(&mut c, &["ZADD", "m", "1", "a"]).await,
        Ok(Value::SimpleString("QUEUED".into()))
    );
    let r = qr(&mut c, &["EXEC"]).await;
    assert!(matches!(&r, Err(e) if e.starts_with("EXECABORT")), "{r:?}");
    assert_eq!(qr(&mut c, &["EXISTS", "m"]).await, Ok(int(0)));
    // WATCH sees a zset written by another client.
    q::<()>(&mut c, &["ZADD", "wz", "1", "a"]).await.unwrap();
    assert_eq!(qr(&mut c, &["WATCH", "wz"]).await, Ok(Value::Okay));
    let mut other = con(addr).await;
    q::<()>(&mut other, &["ZINCRBY", "wz", "1", "a"])
        .await
        .unwrap();
    assert_eq!(qr(&mut c, &["MULTI"]).await, Ok(Value::Okay));
    qr(&mut c, &["ZADD", "wz", "10", "a"]).await.unwrap();
    assert_eq!(qr(&mut c, &["EXEC"]).await, Ok(Value::Nil));
    assert_eq!(qr(&mut c, &["ZSCORE", "wz", "a"]).await, Ok(bulk(b"2")));
}

// ---------------------------------------------------------------------------------
// Raw RESP (RESP3 shapes, EXEC's array with an error inside).

async fn resp3_shapes(addr: SocketAddr) {
    const M65: &str = "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy";
    assert_eq!(M65.len(), 65);
    let mut s = TcpStream::connect(addr).await.unwrap();
    raw_exchange(&mut s, &[&["HELLO", "3"]]).await;
    let cases: &[(&[&str], &str)] = &[
        (&["ZADD", "z", "1.1", "a", "2", "b"], ":2\r\n"),
        (&["ZSCORE", "z", "a"], ",1.1000000000000001\r\n"),
        (&["ZSCORE", "z", "nope"], "_\r\n"),
        (&["ZSCORE", "nokey", "a"], "_\r\n"),
        (
            &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
            "*2\r\n*2\r\n$1\r\na\r\n,1.1000000000000001\r\n*2\r\n$1\r\nb\r\n,2\r\n",
        ),
        (&["ZRANGE", "z", "0", "-1"], "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        (
            &[
                "ZREVRANGEBYSCORE",
                "z",
                "+inf",
                "-inf",
                "WITHSCORES",
                "LIMIT",
                "0",
                "1",
            ],
            "*1\r\n*2\r\n$1\r\nb\r\n,2\r\n",
        ),
        (
            &["ZMSCORE", "z", "a", "nope"],
            "*2\r\n,1.1000000000000001\r\n_\r\n",
        ),
        (&["ZINCRBY", "z", "1", "b"], ",3\r\n"),
        (&["ZADD", "z", "INCR", "1", "b"], ",4\r\n"),
        (&["ZADD", "z", "NX", "INCR", "1", "b"], "_\r\n"),
        (&["ZRANK", "z", "nope"], "_\r\n"),
        (&["ZRANK", "z", "b"], ":1\r\n"),
        (&["ZADD", "z", "inf", "i", "-inf", "j"], ":2\r\n"),
        (&["ZSCORE", "z", "i"], ",inf\r\n"),
        (&["ZSCORE", "z", "j"], ",-inf\r\n"),
        (&["ZPOPMIN", "z"], "*2\r\n$1\r\nj\r\n,-inf\r\n"),
        (&["ZPOPMAX", "z", "1"], "*1\r\n*2\r\n$1\r\ni\r\n,inf\r\n"),
        (&["ZPOPMAX", "z", "0"], "*0\r\n"),
        (&["ZPOPMIN", "nokey"], "*0\r\n"),
        (
            &["ZUNION", "1", "z", "WITHSCORES"],
            "*2\r\n*2\r\n$1\r\na\r\n,1.1000000000000001\r\n*2\r\n$1\r\nb\r\n,4\r\n",
        ),
        (
            &["ZMPOP", "1", "z", "MIN"],
            "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n,1.1000000000000001\r\n",
        ),
        (&["ZMPOP", "1", "nokey", "MIN"], "_\r\n"),
        (
            &["ZRANDMEMBER", "z", "-2", "WITHSCORES"],
            "*2\r\n*2\r\n$1\r\nb\r\n,4\r\n*2\r\n$1\r\nb\r\n,4\r\n",
        ),
        (&["ZRANDMEMBER", "z", "1"], "*1\r\n$1\r\nb\r\n"),
        (
            &["ZSCAN", "z", "0"],
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\n4\r\n",
        ),
        (
            &["BZPOPMIN", "z", "0"],
            "*3\r\n$1\r\nz\r\n$1\r\nb\r\n,4\r\n",
        ),
        (&["BZPOPMAX", "nokey", "0.01"], "_\r\n"),
        (&["BZMPOP", "0.01", "1", "nokey", "MIN"], "_\r\n"),
        (&["ZADD", "z", "-0", "n"], ":1\r\n"),
        (&["ZSCORE", "z", "n"], ",0\r\n"), // a listpack's -0 is 0
        (&["ZADD", "zs", "-0", M65], ":1\r\n"),
        (&["ZSCORE", "zs", M65], ",-0\r\n"), // a skiplist's is not
    ];
    for (cmd, want) in cases {
        assert_eq!(raw_exchange(&mut s, &[cmd]).await, *want, "{cmd:?}");
    }
    // RESP2 on the same commands: flat arrays, bulk strings for the scores.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["ZADD", "r2", "1.1", "a", "2", "b"], ":2\r\n"),
        (&["ZSCORE", "r2", "a"], "$18\r\n1.1000000000000001\r\n"),
        (&["ZSCORE", "r2", "nope"], "$-1\r\n"),
        (
            &["ZRANGE", "r2", "0", "-1", "WITHSCORES"],
            "*4\r\n$1\r\na\r\n$18\r\n1.1000000000000001\r\n$1\r\nb\r\n$1\r\n2\r\n",
        ),
        (&["ZPOPMAX", "r2", "1"], "*2\r\n$1\r\nb\r\n$1\r\n2\r\n"),
        (&["ZMPOP", "1", "nokey", "MIN"], "*-1\r\n"),
        (&["BZPOPMAX", "nokey", "0.01"], "*-1\r\n"),
        (&["ZADD", "r2", "NX", "INCR", "1", "a"], "$-1\r\n"),
    ];
    for (cmd, want) in cases {
        assert_eq!(raw_exchange(&mut s, &[cmd]).await, *want, "{cmd:?}");
    }
}

// ---------------------------------------------------------------------------------
// Keyspace notifications.

async fn keyspace_notifications_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEgz"])
        .await
        .unwrap();
    let mut s = psubscribe_all(addr).await;
    run_all(
        &mut c,
        &[
            &["ZADD", "k", "1", "a", "2", "b", "3", "c"],
            &["ZADD", "k", "NX", "1", "a"], // nothing changed: nothing
            &["ZADD", "k", "CH", "1", "a"], // nothing changed: nothing
            &["ZADD", "k", "5", "a"],
            &["ZINCRBY", "k", "1", "a"],
            &["ZADD", "k", "INCR", "1", "b"],
            &["ZADD", "k", "XX", "INCR", "1", "nope"], // nothing
            &["ZADD", "k", "GT", "0", "a"],            // nothing
            &["ZREM", "k", "nope"],                    // nothing
            &["ZREM", "k", "c"],
            &["ZPOPMIN", "k"],
            &["ZPOPMIN", "nokey"],  // nothing
            &["ZPOPMAX", "k", "0"], // nothing
            &["ZPOPMAX", "k"],
            &["ZADD", "s", "1", "x", "2", "y", "3", "z", "4", "w"],
            &["ZRANGESTORE", "d", "s", "0", "1"],
            &["ZRANGESTORE", "d", "s", "10", "20"],
            &["ZRANGESTORE", "d", "s", "10", "20"], // no d: nothing
            &["ZUNIONSTORE", "u", "1", "s"],
            &["ZINTERSTORE", "i", "2", "s", "u"],
            &["ZDIFFSTORE", "f", "1", "s"],
            &["ZINTERSTORE", "i", "2", "s", "nokey"],
            &["ZUNIONSTORE", "none", "1", "nokey"], // nothing
            &["ZREMRANGEBYRANK", "s", "0", "0"],
            &["ZREMRANGEBYSCORE", "s", "2", "2"],
            &["ZREMRANGEBYSCORE", "s", "100", "200"], // nothing
            &["ZADD", "l", "0", "a", "0", "b", "0", "c"],
            &["ZREMRANGEBYLEX", "l", "[a", "[b"],
            &["ZMPOP", "1", "l", "MIN"],
            &["ZREMRANGEBYRANK", "s", "0", "-1"],
            &["DEL", "u", "f"],
        ],
    )
    .await;
    let want = keyspace_messages(&[
        ("zadd", "k"),
        ("zadd", "k"),
        ("zincr", "k"),
        ("zincr", "k"),
        ("zrem", "k"),
        ("zpopmin", "k"),
        ("zpopmax", "k"),
        ("del", "k"),
        ("zadd", "s"),
        ("zrangestore", "d"),
        ("del", "d"),
        ("zunionstore", "u"),
        ("zinterstore", "i"),
        ("zdiffstore", "f"),
        ("del", "i"),
        ("zremrangebyrank", "s"),
        ("zremrangebyscore", "s"),
        ("zadd", "l"),
        ("zremrangebylex", "l"),
        ("zpopmin", "l"),
        ("del", "l"),
        ("zremrangebyrank", "s"),
        ("del", "s"),
        ("del", "u"),
        ("del", "f"),
    ]);
    assert_eq!(common::take_messages(&mut s, want.len()).await, want);
    // A blocked client's pop: the ZADD, then the pop and the deletion.
    let h = spawn_q(con(addr).await, &["BZPOPMIN", "w", "0"]);
    wait_blocked(&mut c, 1).await;
    run_all(&mut c, &[&["ZADD", "w", "1", "v"], &["SET", "marker", "1"]]).await;
    assert_eq!(reply_of(h).await.1, Ok(bulks(&["w", "v", "1"])));
    let h = spawn_q(
        con(addr).await,
        &["BZMPOP", "0", "1", "w2", "MAX", "COUNT", "5"],
    );
    wait_blocked(&mut c, 1).await;
    run_all(
        &mut c,
        &[&["ZADD", "w2", "1", "v", "2", "u"], &["ZREM", "nokey", "x"]],
    )
    .await;
    assert_eq!(
        reply_of(h).await.1,
        Ok(Value::Array(vec![
            bulk(b"w2"),
            pairs(&items(&[("u", 2.0), ("v", 1.0)]))
        ]))
    );
    let want = keyspace_messages(&[
        ("zadd", "w"),
        ("zpopmin", "w"),
        ("del", "w"),
        ("zadd", "w2"),
        ("zpopmax", "w2"),
        ("del", "w2"),
    ]);
    assert_eq!(common::take_messages(&mut s, want.len()).await, want);
    // Without class g the deletion is not published.
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEz"])
        .await
        .unwrap();
    run_all(
        &mut c,
        &[
            &["ZADD", "y", "1", "a"],
            &["ZPOPMIN", "y"],
            &["ZADD", "y2", "1", "m"],
        ],
    )
    .await;
    let want = keyspace_messages(&[("zadd", "y"), ("zpopmin", "y"), ("zadd", "y2")]);
    assert_eq!(common::take_messages(&mut s, want.len()).await, want);
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", ""])
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------
// The tests: each body on a fresh in-process server, and (with AUGUR_E2E_REDIS) on an
// external server.

/// The external server for the `on_redis` tests, reset for the next one.
async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    let ext = common::replies::external(&[
        &["CONFIG", "SET", "notify-keyspace-events", ""],
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
        &["CONFIG", "SET", "zset-max-listpack-value", "64"],
    ])
    .await?;
    let mut c = con(ext.0).await;
    wait_blocked(&mut c, 0).await;
    Some(ext)
}

common::replies::on_both!(
    random_commands_match_a_model_listpack_128,
    // (ZADD converts by members added, as 7.0.15 does: fixed after 214fab1.)
    random_commands_match_a_model_listpack_3,
    zadd_converts_by_members_not_pairs,
    random_commands_match_a_model_skiplist_only,
    range_forms_match_the_model,
    set_operations_match_the_model,
    zrandmember_properties,
    zscan_returns_every_member_once,
    replies_as_redis,
    errors_as_redis,
    encodings_and_type,
    bzpopmin_is_served_by_a_later_zadd,
    blocked_clients_are_served_first_blocked_first,
    a_blocking_pop_times_out_with_nil,
    client_unblock,
    many_producers_and_consumers_hand_over_each_member_once,
    transactions,
    resp3_shapes,
    keyspace_notifications_as_redis,
);
