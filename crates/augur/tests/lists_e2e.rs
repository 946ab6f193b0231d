//! End-to-end tests of lists over real sockets with the `redis` crate: a seeded random
//! command sequence against a `VecDeque` model (default and small nodes), the errors
//! Redis sends, blocking pops (service order, timeouts, BLMOVE, CLIENT UNBLOCK, MULTI,
//! many producers and consumers), DUMP/RESTORE (our payloads and redis-server's) and
//! keyspace notifications.

mod common;

use augur_server::ServerConfig;
use common::blocking::{
    block_in_turn, blocked_clients, check_each_once, check_producer_order, produce, replies_of,
    reply_of, spawn_q, wait_blocked,
};
use common::replies::{
    assert_step, brief, bulk, bulks, con, error_text, pick_weighted, qb, qr, resolve, run_all,
    Reply,
};
use common::{encoding, err, keyspace_messages, psubscribe_all, q, TestServer};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

// ---------------------------------------------------------------------------------
// The model.

/// What the random sequence draws elements from: integers (canonical and not, at the
/// listpack's integer encoding limits), short strings, binary, strings at the
/// listpack's string length limits and large ones (up to 10 KB), so a list spans
/// several nodes and LREM/LPOS/LINSERT find repeated elements.
fn element_pool(rng: &mut SmallRng) -> Vec<Vec<u8>> {
    let mut p: Vec<Vec<u8>> = [
        "",
        "a",
        "b",
        "hello",
        "0",
        "1",
        "-1",
        "-7",
        "12",
        "127",
        "128",
        "4095",
        "4096",
        "-4096",
        "-4097",
        "32767",
        "-32768",
        "8388608",
        "2147483648",
        "-2147483649",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "007",
        "-0",
        "+5",
        " 3",
        "1.5",
        "1e3",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    p.push(vec![0, 255, b'\n', b'\r', 0]);
    for len in [63, 64, 127, 128, 4095, 4096] {
        p.push(
            std::iter::once(b'E')
                .chain(std::iter::repeat_n(b'e', len - 1))
                .collect(),
        );
    }
    for i in 0..8 {
        let len = rng.gen_range(20..400);
        let mut s = format!("m{i}:").into_bytes();
        s.extend((0..len).map(|_| rng.gen_range(b'a'..=b'z')));
        p.push(s);
    }
    for _ in 0..5 {
        let len = rng.gen_range(1000..=10_000);
        p.push((0..len).map(|_| rng.gen::<u8>()).collect());
    }
    p
}

fn element(rng: &mut SmallRng, pool: &[Vec<u8>], step: usize) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=84 => pool[rng.gen_range(0..pool.len())].clone(),
        85..=94 => format!("u{step}:{}", rng.gen::<u32>()).into_bytes(),
        _ => {
            let len = rng.gen_range(1..3000);
            (0..len).map(|_| rng.gen::<u8>()).collect()
        }
    }
}

/// Redis's LINDEX/LSET position.
fn position(len: usize, idx: i64) -> Option<usize> {
    let i = if idx < 0 {
        idx as i128 + len as i128
    } else {
        idx as i128
    };
    (0..len as i128).contains(&i).then_some(i as usize)
}

/// An index argument: mostly within the list, from either end, sometimes out of it.
fn index(rng: &mut SmallRng, len: usize) -> i64 {
    let len = len as i64;
    match rng.gen_range(0..100) {
        0..=39 if len > 0 => rng.gen_range(0..len),
        40..=74 if len > 0 => -rng.gen_range(1..=len),
        75..=84 => rng.gen_range(len..len + 4),
        85..=94 => -rng.gen_range(len + 1..len + 5),
        95..=96 => i64::MAX,
        97..=98 => i64::MIN,
        _ => rng.gen_range(-3..3),
    }
}

/// The lists the sequence works on, by key.
#[derive(Default)]
struct Model {
    lists: HashMap<Vec<u8>, VecDeque<Vec<u8>>>,
}

impl Model {
    fn len(&self, k: &[u8]) -> usize {
        self.lists.get(k).map_or(0, |l| l.len())
    }

    fn pop(&mut self, k: &[u8], left: bool) -> Option<Vec<u8>> {
        let l = self.lists.get_mut(k)?;
        let e = if left { l.pop_front() } else { l.pop_back() };
        if l.is_empty() {
            self.lists.remove(k);
        }
        e
    }

    fn push(&mut self, k: &[u8], e: Vec<u8>, left: bool) -> usize {
        let l = self.lists.entry(k.to_vec()).or_default();
        if left {
            l.push_front(e)
        } else {
            l.push_back(e)
        }
        l.len()
    }

    fn drop_if_empty(&mut self, k: &[u8]) {
        if self.lists.get(k).is_some_and(|l| l.is_empty()) {
            self.lists.remove(k);
        }
    }
}

fn side(left: bool) -> &'static str {
    if left {
        "LEFT"
    } else {
        "RIGHT"
    }
}

/// Draws one command, applies it to the model; the command and Redis's reply.
fn step(
    rng: &mut SmallRng,
    m: &mut Model,
    keys: &[Vec<u8>; 2],
    pool: &[Vec<u8>],
    n: usize,
) -> (Vec<Vec<u8>>, Reply) {
    let key = keys[rng.gen_range(0..2)].clone();
    let len = m.len(&key);
    let k = key.clone();
    let a = |s: &str| s.as_bytes().to_vec();
    let num = |i: i64| i.to_string().into_bytes();
    // Short lists grow, long ones shrink.
    let push_weight = if len < 100 {
        40
    } else if len < 300 {
        20
    } else {
        4
    };
    let weights = [
        push_weight, // 0 LPUSH / RPUSH
        3,           // 1 LPUSHX / RPUSHX
        8,           // 2 LPOP / RPOP
        8,           // 3 LPOP / RPOP count
        6,           // 4 LINSERT
        6,           // 5 LSET
        6,           // 6 LREM
        3,           // 7 LTRIM
        9,           // 8 LMOVE
        2,           // 9 RPOPLPUSH
        6,           // 10 LINDEX
        6,           // 11 LRANGE
        9,           // 12 LPOS
        2,           // 13 LLEN
        3,           // 14 LMPOP
        2,           // 15 EXISTS
    ];
    let op = pick_weighted(rng, &weights);
    let left = rng.gen_bool(0.5);
    match op {
        0 | 1 => {
            let x = op == 1;
            let name = match (left, x) {
                (true, false) => "LPUSH",
                (false, false) => "RPUSH",
                (true, true) => "LPUSHX",
                (false, true) => "RPUSHX",
            };
            let count = rng.gen_range(1..=6);
            let elems: Vec<Vec<u8>> = (0..count).map(|_| element(rng, pool, n)).collect();
            let mut args = vec![a(name), k];
            args.extend(elems.iter().cloned());
            if x && len == 0 {
                return (args, Ok(Value::Int(0)));
            }
            let mut l = 0;
            for e in elems {
                l = m.push(&key, e, left);
            }
            (args, Ok(Value::Int(l as i64)))
        }
        2 => {
            let args = vec![a(if left { "LPOP" } else { "RPOP" }), k];
            let r = m.pop(&key, left).map_or(Value::Nil, |e| bulk(&e));
            (args, Ok(r))
        }
        3 => {
            let count = match rng.gen_range(0..10) {
                0 => 0,
                1 => rng.gen_range(0..=len + 3),
                _ => rng.gen_range(1..=6),
            };
            let args = vec![a(if left { "LPOP" } else { "RPOP" }), k, num(count as i64)];
            if len == 0 {
                return (args, Ok(Value::Nil));
            }
            let got: Vec<Value> = (0..count)
                .map_while(|_| m.pop(&key, left))
                .map(|e| bulk(&e))
                .collect();
            (args, Ok(Value::Array(got)))
        }
        4 => {
            let before = rng.gen_bool(0.5);
            let pivot = match m.lists.get(&key) {
                Some(l) if rng.gen_bool(0.8) => l[rng.gen_range(0..l.len())].clone(),
                _ => element(rng, pool, n),
            };
            let e = element(rng, pool, n);
            let args = vec![
                a("LINSERT"),
                k,
                a(if before { "BEFORE" } else { "AFTER" }),
                pivot.clone(),
                e.clone(),
            ];
            let Some(l) = m.lists.get_mut(&key) else {
                return (args, Ok(Value::Int(0)));
            };
            match l.iter().position(|x| *x == pivot) {
                None => (args, Ok(Value::Int(-1))),
                Some(i) => {
                    l.insert(if before { i } else { i + 1 }, e);
                    (args, Ok(Value::Int(l.len() as i64)))
                }
            }
        }
        5 => {
            let i = index(rng, len);
            let e = element(rng, pool, n);
            let args = vec![a("LSET"), k, num(i), e.clone()];
            let Some(l) = m.lists.get_mut(&key) else {
                return (args, Err("ERR no such key".into()));
            };
            match position(l.len(), i) {
                None => (args, Err("ERR index out of range".into())),
                Some(p) => {
                    l[p] = e;
                    (args, Ok(Value::Okay))
                }
            }
        }
        6 => {
            let count: i64 = match rng.gen_range(0..3) {
                0 => 0,
                1 => rng.gen_range(1..4),
                _ => -rng.gen_range(1..4),
            };
            let e = match m.lists.get(&key) {
                Some(l) if rng.gen_bool(0.7) => l[rng.gen_range(0..l.len())].clone(),
                _ => element(rng, pool, n),
            };
            let args = vec![a("LREM"), k, num(count), e.clone()];
            let Some(l) = m.lists.get_mut(&key) else {
                return (args, Ok(Value::Int(0)));
            };
            let limit = if count == 0 {
                usize::MAX
            } else {
                count.unsigned_abs() as usize
            };
            let mut removed = 0;
            let mut v: Vec<Vec<u8>> = l.drain(..).collect();
            if count < 0 {
                v.reverse();
            }
            v.retain(|x| {
                if removed < limit && *x == e {
                    removed += 1;
                    false
                } else {
                    true
                }
            });
            if count < 0 {
                v.reverse();
            }
            l.extend(v);
            m.drop_if_empty(&key);
            (args, Ok(Value::Int(removed as i64)))
        }
        7 => {
            let (start, end) = if rng.gen_bool(0.1) || len == 0 {
                (index(rng, len), index(rng, len))
            } else {
                let s = rng.gen_range(0..=3.min(len as i64));
                let e = len as i64 - 1 - rng.gen_range(0..=3);
                // Either end from the head or the tail.
                let s = if rng.gen_bool(0.5) { s } else { s - len as i64 };
                let e = if rng.gen_bool(0.5) { e } else { e - len as i64 };
                (s, e)
            };
            let args = vec![a("LTRIM"), k, num(start), num(end)];
            if let Some(l) = m.lists.get_mut(&key) {
                match resolve(l.len(), start, end) {
                    None => l.clear(),
                    Some((s, e)) => {
                        l.truncate(e + 1);
                        l.drain(..s);
                    }
                }
                m.drop_if_empty(&key);
            }
            (args, Ok(Value::Okay))
        }
        8 | 9 => {
            let dst = keys[rng.gen_range(0..2)].clone();
            let (from, to) = if op == 9 {
                (false, true)
            } else {
                (left, rng.gen_bool(0.5))
            };
            let args = if op == 9 {
                vec![a("RPOPLPUSH"), k, dst.clone()]
            } else {
                vec![a("LMOVE"), k, dst.clone(), a(side(from)), a(side(to))]
            };
            match m.pop(&key, from) {
                None => (args, Ok(Value::Nil)),
                Some(e) => {
                    m.push(&dst, e.clone(), to);
                    (args, Ok(bulk(&e)))
                }
            }
        }
        10 => {
            let i = index(rng, len);
            let r = m
                .lists
                .get(&key)
                .and_then(|l| position(l.len(), i).map(|p| bulk(&l[p])))
                .unwrap_or(Value::Nil);
            (vec![a("LINDEX"), k, num(i)], Ok(r))
        }
        11 => {
            let (s, e) = (index(rng, len), index(rng, len));
            let r = match m.lists.get(&key).and_then(|l| resolve(l.len(), s, e)) {
                None => Vec::new(),
                Some((s, e)) => m.lists[&key].range(s..=e).map(|x| bulk(x)).collect(),
            };
            (vec![a("LRANGE"), k, num(s), num(e)], Ok(Value::Array(r)))
        }
        12 => {
            let e = match m.lists.get(&key) {
                Some(l) if rng.gen_bool(0.75) => l[rng.gen_range(0..l.len())].clone(),
                _ => element(rng, pool, n),
            };
            let mut args = vec![a("LPOS"), k, e.clone()];
            let mut opts: Vec<(&str, i64)> = Vec::new();
            if rng.gen_bool(0.5) {
                let r = rng.gen_range(1..=4);
                opts.push(("RANK", if rng.gen_bool(0.5) { r } else { -r }));
            }
            if rng.gen_bool(0.5) {
                opts.push(("COUNT", rng.gen_range(0..=4)));
            }
            if rng.gen_bool(0.3) {
                opts.push(("MAXLEN", rng.gen_range(0..=len as i64 + 2)));
            }
            // Options in any order; a repeated one counts as its last value.
            if rng.gen_bool(0.1) && !opts.is_empty() {
                let (name, v) = opts[0];
                opts.insert(0, (name, if name == "RANK" { 3 } else { v + 1 }));
            }
            for i in (1..opts.len()).rev() {
                let j = rng.gen_range(0..=i);
                if opts[i].0 != opts[j].0 {
                    opts.swap(i, j);
                }
            }
            let mut rank = 1;
            let mut count = None;
            let mut maxlen = 0;
            for &(name, v) in &opts {
                args.push(a(name));
                args.push(num(v));
                match name {
                    "RANK" => rank = v,
                    "COUNT" => count = Some(v),
                    _ => maxlen = v,
                }
            }
            let Some(l) = m.lists.get(&key) else {
                let r = if count.is_some() {
                    Value::Array(Vec::new())
                } else {
                    Value::Nil
                };
                return (args, Ok(r));
            };
            let (abs, from_tail) = (rank.unsigned_abs(), rank < 0);
            let mut matches = 0;
            let mut found = Vec::new();
            for i in 0..l.len() {
                if maxlen != 0 && i as i64 >= maxlen {
                    break;
                }
                let p = if from_tail { l.len() - 1 - i } else { i };
                if l[p] == e {
                    matches += 1;
                    if matches >= abs {
                        found.push(Value::Int(p as i64));
                        match count {
                            None => break,
                            Some(c) if c != 0 && matches - abs + 1 >= c as u64 => break,
                            Some(_) => {}
                        }
                    }
                }
            }
            let r = match count {
                Some(_) => Value::Array(found),
                None => found.pop().unwrap_or(Value::Nil),
            };
            (args, Ok(r))
        }
        13 => (vec![a("LLEN"), k], Ok(Value::Int(len as i64))),
        14 => {
            let order: Vec<Vec<u8>> = if rng.gen_bool(0.5) {
                vec![key.clone()]
            } else if key == keys[0] {
                vec![keys[0].clone(), keys[1].clone()]
            } else {
                vec![keys[1].clone(), keys[0].clone()]
            };
            let mut args = vec![a("LMPOP"), num(order.len() as i64)];
            args.extend(order.iter().cloned());
            args.push(a(side(left)));
            let mut count = 1;
            if rng.gen_bool(0.6) {
                count = rng.gen_range(1..=5);
                args.push(a("COUNT"));
                args.push(num(count as i64));
            }
            let Some(from) = order.iter().find(|k| m.len(k) > 0).cloned() else {
                return (args, Ok(Value::Nil));
            };
            let got: Vec<Value> = (0..count)
                .map_while(|_| m.pop(&from, left))
                .map(|e| bulk(&e))
                .collect();
            (args, Ok(Value::Array(vec![bulk(&from), Value::Array(got)])))
        }
        _ => (vec![a("EXISTS"), k], Ok(Value::Int((len > 0) as i64))),
    }
}

/// Checks the server's lists (and their existence) equal the model's.
async fn check_whole(c: &mut MultiplexedConnection, m: &Model, keys: &[Vec<u8>; 2], n: usize) {
    for k in keys {
        let want: Vec<Vec<u8>> = m
            .lists
            .get(k)
            .map_or(Vec::new(), |l| l.iter().cloned().collect());
        let got = qb(
            c,
            &[b"LRANGE".to_vec(), k.clone(), b"0".to_vec(), b"-1".to_vec()],
        )
        .await;
        assert!(
            got == Ok(bulks(&want)),
            "step {n}: LRANGE {} 0 -1 is {} but the model has {}",
            String::from_utf8_lossy(k),
            brief(&got),
            brief(&Ok(bulks(&want)))
        );
        let exists = qb(c, &[b"EXISTS".to_vec(), k.clone()]).await;
        assert_eq!(exists, Ok(Value::Int(!want.is_empty() as i64)), "step {n}");
        let len = qb(c, &[b"LLEN".to_vec(), k.clone()]).await;
        assert_eq!(len, Ok(Value::Int(want.len() as i64)), "step {n}");
    }
}

/// `steps` random commands on keys `prefix:a` and `prefix:b`, every reply compared
/// with the model's, the whole lists every 100 commands and at the end.
async fn run_model(c: &mut MultiplexedConnection, seed: u64, prefix: &str, steps: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let pool = element_pool(&mut rng);
    let keys = [
        format!("{prefix}:a").into_bytes(),
        format!("{prefix}:b").into_bytes(),
    ];
    let mut m = Model::default();
    let mut max_len = 0;
    let mut emptied = 0;
    for n in 0..steps {
        let had: Vec<bool> = keys.iter().map(|k| m.len(k) > 0).collect();
        let (args, want) = step(&mut rng, &mut m, &keys, &pool, n);
        assert_step(seed, n, &args, &qb(c, &args).await, &want);
        for (i, k) in keys.iter().enumerate() {
            max_len = max_len.max(m.len(k));
            if had[i] && m.len(k) == 0 {
                emptied += 1;
            }
        }
        if n % 100 == 99 {
            check_whole(c, &m, &keys, n).await;
        }
    }
    check_whole(c, &m, &keys, steps).await;
    for k in &keys {
        let want = if m.len(k) > 0 { "quicklist" } else { "none" };
        let ty: String = q(c, &["TYPE", std::str::from_utf8(k).unwrap()])
            .await
            .unwrap();
        assert_eq!(ty, if m.len(k) > 0 { "list" } else { "none" });
        if want == "quicklist" {
            assert_eq!(encoding(c, std::str::from_utf8(k).unwrap()).await, want);
        }
    }
    // The sequence did what it is for: long lists (many nodes), and lists emptied.
    assert!(
        max_len >= 120,
        "{prefix}: lists reached only {max_len} elements"
    );
    assert!(
        emptied >= 3,
        "{prefix}: lists were emptied only {emptied} times"
    );
}

async fn random_commands_match_a_deque_model(addr: SocketAddr) {
    let mut c = con(addr).await;
    run_model(&mut c, 0x5eed_0001, "default", 3000).await;
    // Small nodes (4 elements), on fresh keys.
    let ok: String = q(&mut c, &["CONFIG", "SET", "list-max-listpack-size", "4"])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    run_model(&mut c, 0x5eed_0002, "small", 3000).await;
    // One element a node; and nodes of at most 4 KB.
    q::<()>(&mut c, &["CONFIG", "SET", "list-max-listpack-size", "1"])
        .await
        .unwrap();
    run_model(&mut c, 0x5eed_0003, "single", 3000).await;
    q::<()>(&mut c, &["CONFIG", "SET", "list-max-listpack-size", "-1"])
        .await
        .unwrap();
    run_model(&mut c, 0x5eed_0004, "4kb", 3000).await;
}

async fn replies_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    let r = |v: Value| -> Reply { Ok(v) };
    assert_eq!(qr(&mut c, &["LPOP", "nokey"]).await, r(Value::Nil));
    assert_eq!(qr(&mut c, &["LPOP", "nokey", "0"]).await, r(Value::Nil));
    assert_eq!(qr(&mut c, &["LPOP", "nokey", "3"]).await, r(Value::Nil));
    assert_eq!(qr(&mut c, &["LLEN", "nokey"]).await, r(Value::Int(0)));
    assert_eq!(
        qr(&mut c, &["LRANGE", "nokey", "0", "-1"]).await,
        r(bulks::<&str>(&[]))
    );
    assert_eq!(
        qr(&mut c, &["RPUSH", "k", "a", "b", "c", "a"]).await,
        r(Value::Int(4))
    );
    assert_eq!(
        qr(&mut c, &["LPOP", "k", "0"]).await,
        r(Value::Array(vec![]))
    );
    assert_eq!(qr(&mut c, &["LPOP", "k", "1"]).await, r(bulks(&["a"])));
    assert_eq!(
        qr(&mut c, &["LINSERT", "k", "BEFORE", "zz", "x"]).await,
        r(Value::Int(-1))
    );
    assert_eq!(
        qr(&mut c, &["LINSERT", "nokey", "BEFORE", "zz", "x"]).await,
        r(Value::Int(0))
    );
    assert_eq!(
        qr(&mut c, &["LINSERT", "k", "after", "c", "x"]).await,
        r(Value::Int(4))
    );
    assert_eq!(
        qr(&mut c, &["LRANGE", "k", "0", "-1"]).await,
        r(bulks(&["b", "c", "x", "a"]))
    );
    assert_eq!(
        qr(&mut c, &["LSET", "k", "4", "y"]).await,
        Err("ERR index out of range".into())
    );
    assert_eq!(
        qr(&mut c, &["LSET", "k", "-5", "y"]).await,
        Err("ERR index out of range".into())
    );
    assert_eq!(qr(&mut c, &["LSET", "k", "-1", "y"]).await, r(Value::Okay));
    assert_eq!(qr(&mut c, &["LINDEX", "k", "-1"]).await, r(bulk(b"y")));
    assert_eq!(qr(&mut c, &["LINDEX", "k", "4"]).await, r(Value::Nil));
    assert_eq!(
        qr(&mut c, &["LPUSHX", "nokey", "v"]).await,
        r(Value::Int(0))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "nokey"]).await, r(Value::Int(0)));
    assert_eq!(qr(&mut c, &["LPOS", "k", "x"]).await, r(Value::Int(2)));
    assert_eq!(qr(&mut c, &["LPOS", "k", "nope"]).await, r(Value::Nil));
    assert_eq!(
        qr(&mut c, &["LPOS", "k", "nope", "COUNT", "0"]).await,
        r(Value::Array(vec![]))
    );
    assert_eq!(
        qr(
            &mut c,
            &["LMPOP", "2", "nokey", "k", "RIGHT", "COUNT", "10"]
        )
        .await,
        r(Value::Array(vec![bulk(b"k"), bulks(&["y", "x", "c", "b"])]))
    );
    // An emptied list is gone.
    assert_eq!(qr(&mut c, &["EXISTS", "k"]).await, r(Value::Int(0)));
    assert_eq!(
        qr(&mut c, &["TYPE", "k"]).await,
        r(Value::SimpleString("none".into()))
    );
    q::<()>(&mut c, &["RPUSH", "t", "1", "2", "3"])
        .await
        .unwrap();
    assert_eq!(qr(&mut c, &["LTRIM", "t", "2", "1"]).await, r(Value::Okay));
    assert_eq!(qr(&mut c, &["EXISTS", "t"]).await, r(Value::Int(0)));
    q::<()>(&mut c, &["RPUSH", "t", "1", "1", "2"])
        .await
        .unwrap();
    assert_eq!(qr(&mut c, &["LREM", "t", "0", "1"]).await, r(Value::Int(2)));
    assert_eq!(qr(&mut c, &["RPOPLPUSH", "t", "t"]).await, r(bulk(b"2")));
    assert_eq!(qr(&mut c, &["RPOP", "t"]).await, r(bulk(b"2")));
    assert_eq!(qr(&mut c, &["EXISTS", "t"]).await, r(Value::Int(0)));
    assert_eq!(
        qr(&mut c, &["LMOVE", "nokey", "t", "LEFT", "LEFT"]).await,
        r(Value::Nil)
    );
    assert_eq!(qr(&mut c, &["EXISTS", "t"]).await, r(Value::Int(0)));
}

async fn errors_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    q::<()>(&mut c, &["SET", "s", "v"]).await.unwrap();
    for cmd in [
        &["LPUSH", "s", "a"][..],
        &["RPUSH", "s", "a"],
        &["LPUSHX", "s", "a"],
        &["LRANGE", "s", "0", "-1"],
        &["LPOP", "s"],
        &["LPOP", "s", "2"],
        &["LLEN", "s"],
        &["LINDEX", "s", "0"],
        &["LPOS", "s", "a"],
        &["LINSERT", "s", "BEFORE", "a", "b"],
        &["LSET", "s", "0", "a"],
        &["LMOVE", "s", "d", "LEFT", "LEFT"],
        &["LMPOP", "1", "s", "LEFT"],
        &["BLPOP", "s", "0"],
        &["BRPOP", "nokey", "s", "0"],
        &["BLMOVE", "s", "d", "LEFT", "LEFT", "0"],
    ] {
        assert_eq!(err(&mut c, cmd).await, WRONGTYPE, "{cmd:?}");
    }
    // An LMOVE to a string moves nothing.
    q::<()>(&mut c, &["RPUSH", "k", "a", "b"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["LMOVE", "k", "s", "LEFT", "LEFT"]).await,
        WRONGTYPE
    );
    assert_eq!(err(&mut c, &["RPOPLPUSH", "k", "s"]).await, WRONGTYPE);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "k", "0", "-1"])
            .await
            .unwrap(),
        ["a", "b"]
    );
    assert_eq!(q::<String>(&mut c, &["TYPE", "k"]).await.unwrap(), "list");
    assert_eq!(encoding(&mut c, "k").await, "quicklist");
    assert_eq!(
        err(&mut c, &["LSET", "nokey", "0", "a"]).await,
        "ERR no such key"
    );
    for key in ["k", "nokey"] {
        assert_eq!(
            err(&mut c, &["LPOP", key, "-1"]).await,
            "ERR value is out of range, must be positive"
        );
        assert_eq!(
            err(&mut c, &["RPOP", key, "x"]).await,
            "ERR value is out of range, must be positive"
        );
        assert_eq!(
            err(&mut c, &["LINSERT", key, "middle", "a", "b"]).await,
            "ERR syntax error"
        );
    }
    let rank0 = err(&mut c, &["LPOS", "k", "a", "RANK", "0"]).await;
    assert!(rank0.starts_with("ERR RANK can't be zero"), "{rank0}");
    assert_eq!(
        err(&mut c, &["LPOS", "k", "a", "COUNT", "-1"]).await,
        "ERR COUNT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "k", "a", "MAXLEN", "-1"]).await,
        "ERR MAXLEN can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "k", "a", "BOGUS", "1"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["LMPOP", "0", "k", "LEFT"]).await,
        "ERR numkeys should be greater than 0"
    );
    assert_eq!(
        err(&mut c, &["LMPOP", "1", "k", "LEFT", "COUNT", "0"]).await,
        "ERR count should be greater than 0"
    );
    assert_eq!(
        err(&mut c, &["LMPOP", "1", "k", "MIDDLE"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["LMOVE", "k", "d", "UP", "LEFT"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["BLPOP", "k", "-1"]).await,
        "ERR timeout is negative"
    );
    assert_eq!(
        err(&mut c, &["BLPOP", "nokey", "abc"]).await,
        "ERR timeout is not a float or out of range"
    );
    assert_eq!(
        err(&mut c, &["BLMPOP", "0", "0", "k", "LEFT"]).await,
        "ERR numkeys should be greater than 0"
    );
    assert_eq!(
        err(&mut c, &["LPUSH", "k"]).await,
        "ERR wrong number of arguments for 'lpush' command"
    );
    assert_eq!(
        err(&mut c, &["BLPOP", "k"]).await,
        "ERR wrong number of arguments for 'blpop' command"
    );
    // Nothing above changed the list.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "k", "0", "-1"])
            .await
            .unwrap(),
        ["a", "b"]
    );
    assert_eq!(blocked_clients(&mut c).await, 0);
}

// ---------------------------------------------------------------------------------
// Blocking.

async fn a_push_serves_the_blocked_client_before_the_pusher_goes_on(addr: SocketAddr) {
    let mut c = con(addr).await;
    let h = spawn_q(con(addr).await, &["BLPOP", "k", "0"]);
    wait_blocked(&mut c, 1).await;
    assert!(!h.is_finished(), "BLPOP on an empty key answered");
    assert_eq!(qr(&mut c, &["RPUSH", "k", "v"]).await, Ok(Value::Int(1)));
    assert_eq!(
        qr(&mut c, &["LRANGE", "k", "0", "-1"]).await,
        Ok(Value::Array(vec![]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "k"]).await, Ok(Value::Int(0)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k", "v"])));
    // The same with the push and the read pipelined; BRPOP on two keys.
    let h = spawn_q(b, &["BRPOP", "k1", "k2", "0"]);
    wait_blocked(&mut c, 1).await;
    let (n, range): (i64, Vec<String>) = redis::pipe()
        .cmd("RPUSH")
        .arg("k2")
        .arg("x")
        .arg("y")
        .cmd("LRANGE")
        .arg("k2")
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!((n, range), (2, vec!["x".to_string()]));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k2", "y"])));
    // BLMPOP with a count.
    let h = spawn_q(b, &["BLMPOP", "0", "2", "m1", "m2", "LEFT", "COUNT", "2"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(
        qr(&mut c, &["RPUSH", "m2", "a", "b", "c"]).await,
        Ok(Value::Int(3))
    );
    assert_eq!(
        qr(&mut c, &["LRANGE", "m2", "0", "-1"]).await,
        Ok(bulks(&["c"]))
    );
    let (_, r) = reply_of(h).await;
    assert_eq!(r, Ok(Value::Array(vec![bulk(b"m2"), bulks(&["a", "b"])])));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

/// Writers other than pushes serve blocked clients too: a transaction (after its last
/// command), RENAME, LMOVE's destination, RESTORE.
async fn other_writers_serve_blocked_clients(addr: SocketAddr) {
    let mut c = con(addr).await;
    let h = spawn_q(con(addr).await, &["BLPOP", "k", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(qr(&mut c, &["MULTI"]).await, Ok(Value::Okay));
    for cmd in [
        &["RPUSH", "k", "a"][..],
        &["RPUSH", "k", "b"],
        &["LPOP", "k"],
    ] {
        qr(&mut c, cmd).await.unwrap();
    }
    assert_eq!(
        qr(&mut c, &["EXEC"]).await,
        Ok(Value::Array(vec![Value::Int(1), Value::Int(2), bulk(b"a")]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "k"]).await, Ok(Value::Int(0)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k", "b"])));
    q::<()>(&mut c, &["RPUSH", "tmp", "x"]).await.unwrap();
    let h = spawn_q(b, &["BRPOP", "k2", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(qr(&mut c, &["RENAME", "tmp", "k2"]).await, Ok(Value::Okay));
    assert_eq!(qr(&mut c, &["EXISTS", "k2"]).await, Ok(Value::Int(0)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k2", "x"])));
    q::<()>(&mut c, &["RPUSH", "s", "y", "z"]).await.unwrap();
    let h = spawn_q(b, &["BLPOP", "k3", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(
        qr(&mut c, &["LMOVE", "s", "k3", "LEFT", "LEFT"]).await,
        Ok(bulk(b"y"))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "k3"]).await, Ok(Value::Int(0)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulks(&["k3", "y"])));
    let payload = dump(&mut c, "s").await;
    let h = spawn_q(b, &["BLPOP", "k4", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(restore(&mut c, "k4", &payload).await, Ok(Value::Okay));
    assert_eq!(qr(&mut c, &["EXISTS", "k4"]).await, Ok(Value::Int(0)));
    assert_eq!(reply_of(h).await.1, Ok(bulks(&["k4", "z"])));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn blocked_clients_are_served_first_blocked_first(addr: SocketAddr) {
    let mut c = con(addr).await;
    let cmd: &[&str] = &["BLPOP", "f", "0"];
    let waiting = block_in_turn(addr, &mut c, &[cmd; 3]).await;
    assert_eq!(
        qr(&mut c, &["RPUSH", "f", "x", "y", "z"]).await,
        Ok(Value::Int(3))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "f"]).await, Ok(Value::Int(0)));
    let got = replies_of(waiting).await;
    assert_eq!(
        got,
        [
            Ok(bulks(&["f", "x"])),
            Ok(bulks(&["f", "y"])),
            Ok(bulks(&["f", "z"]))
        ]
    );
    // Two elements for three: the first two are served, the third stays blocked.
    let cmd: &[&str] = &["BRPOP", "g", "0"];
    let mut waiting = block_in_turn(addr, &mut c, &[cmd; 3]).await;
    assert_eq!(
        qr(&mut c, &["LPUSH", "g", "p", "q"]).await,
        Ok(Value::Int(2))
    );
    let third = waiting.pop().unwrap();
    let got = replies_of(waiting).await;
    // LPUSH g p q makes [q, p]; BRPOP takes p, then q.
    assert_eq!(got, [Ok(bulks(&["g", "p"])), Ok(bulks(&["g", "q"]))]);
    wait_blocked(&mut c, 1).await;
    assert!(!third.is_finished());
    assert_eq!(qr(&mut c, &["RPUSH", "g", "r"]).await, Ok(Value::Int(1)));
    assert_eq!(reply_of(third).await.1, Ok(bulks(&["g", "r"])));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn a_blocking_pop_times_out_with_nil(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut b = con(addr).await;
    let t = Instant::now();
    let r = qr(&mut b, &["BLPOP", "nokey", "0.2"]).await;
    let took = t.elapsed();
    assert_eq!(r, Ok(Value::Nil));
    assert!(
        took >= Duration::from_millis(150) && took <= Duration::from_secs(5),
        "BLPOP 0.2 took {took:?}"
    );
    let t = Instant::now();
    let r = qr(&mut b, &["BLMOVE", "nokey", "d", "LEFT", "RIGHT", "0.2"]).await;
    let took = t.elapsed();
    assert_eq!(r, Ok(Value::Nil));
    assert!(took >= Duration::from_millis(150) && took <= Duration::from_secs(5));
    assert_eq!(qr(&mut c, &["EXISTS", "d"]).await, Ok(Value::Int(0)));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn blmove_moves_the_pushed_element(addr: SocketAddr) {
    let mut c = con(addr).await;
    let h = spawn_q(
        con(addr).await,
        &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"],
    );
    wait_blocked(&mut c, 1).await;
    assert_eq!(qr(&mut c, &["LPUSH", "src", "v"]).await, Ok(Value::Int(1)));
    assert_eq!(
        qr(&mut c, &["LRANGE", "dst", "0", "-1"]).await,
        Ok(bulks(&["v"]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "src"]).await, Ok(Value::Int(0)));
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(bulk(b"v")));
    // BRPOPLPUSH onto a list another client waits on: the move serves it too.
    let h1 = spawn_q(b, &["BRPOPLPUSH", "a", "dst2", "0"]);
    wait_blocked(&mut c, 1).await;
    let h2 = spawn_q(con(addr).await, &["BLPOP", "dst2", "0"]);
    wait_blocked(&mut c, 2).await;
    assert_eq!(qr(&mut c, &["RPUSH", "a", "w"]).await, Ok(Value::Int(1)));
    assert_eq!(reply_of(h1).await.1, Ok(bulk(b"w")));
    assert_eq!(reply_of(h2).await.1, Ok(bulks(&["dst2", "w"])));
    assert_eq!(
        qr(&mut c, &["EXISTS", "a", "dst2"]).await,
        Ok(Value::Int(0))
    );
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn brpoplpush_to_a_string_fails_and_leaves_the_element(addr: SocketAddr) {
    let mut c = con(addr).await;
    q::<()>(&mut c, &["SET", "dst", "str"]).await.unwrap();
    let h = spawn_q(con(addr).await, &["BRPOPLPUSH", "src", "dst", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(qr(&mut c, &["LPUSH", "src", "v"]).await, Ok(Value::Int(1)));
    let (_, r) = reply_of(h).await;
    assert_eq!(r, Err(WRONGTYPE.to_string()));
    assert_eq!(
        qr(&mut c, &["LRANGE", "src", "0", "-1"]).await,
        Ok(bulks(&["v"]))
    );
    assert_eq!(qr(&mut c, &["GET", "dst"]).await, Ok(bulk(b"str")));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn client_unblock(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut b = con(addr).await;
    let id: i64 = q(&mut b, &["CLIENT", "ID"]).await.unwrap();
    let ids = id.to_string();
    let h = spawn_q(b, &["BLPOP", "u", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(
        qr(&mut c, &["CLIENT", "UNBLOCK", &ids]).await,
        Ok(Value::Int(1))
    );
    let (b, r) = reply_of(h).await;
    assert_eq!(r, Ok(Value::Nil));
    assert_eq!(blocked_clients(&mut c).await, 0);
    let h = spawn_q(b, &["BLMOVE", "u", "d", "RIGHT", "LEFT", "0"]);
    wait_blocked(&mut c, 1).await;
    assert_eq!(
        qr(&mut c, &["CLIENT", "UNBLOCK", &ids, "ERROR"]).await,
        Ok(Value::Int(1))
    );
    let (mut b, r) = reply_of(h).await;
    assert_eq!(
        r,
        Err("UNBLOCKED client unblocked via CLIENT UNBLOCK".to_string())
    );
    // Not blocked (any more): 0; and the unblocked connection works on.
    assert_eq!(
        qr(&mut c, &["CLIENT", "UNBLOCK", &ids]).await,
        Ok(Value::Int(0))
    );
    assert_eq!(
        qr(&mut c, &["CLIENT", "UNBLOCK", &ids, "TIMEOUT"]).await,
        Ok(Value::Int(0))
    );
    assert_eq!(
        qr(&mut c, &["CLIENT", "UNBLOCK", "999999"]).await,
        Ok(Value::Int(0))
    );
    assert_eq!(qr(&mut b, &["CLIENT", "ID"]).await, Ok(Value::Int(id)));
    // A later push goes to the list, not to the unblocked client.
    assert_eq!(qr(&mut c, &["RPUSH", "u", "e"]).await, Ok(Value::Int(1)));
    assert_eq!(qr(&mut c, &["LLEN", "u"]).await, Ok(Value::Int(1)));
    assert_eq!(qr(&mut c, &["EXISTS", "d"]).await, Ok(Value::Int(0)));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn a_closed_blocked_connection_is_no_longer_blocked(addr: SocketAddr) {
    let mut c = con(addr).await;
    let h = spawn_q(con(addr).await, &["BLPOP", "gone", "0"]);
    wait_blocked(&mut c, 1).await;
    h.abort(); // drops the connection
    wait_blocked(&mut c, 0).await;
    assert_eq!(qr(&mut c, &["RPUSH", "gone", "v"]).await, Ok(Value::Int(1)));
    assert_eq!(
        qr(&mut c, &["LRANGE", "gone", "0", "-1"]).await,
        Ok(bulks(&["v"]))
    );
}

async fn blocking_pops_in_multi_do_not_block(addr: SocketAddr) {
    let mut c = con(addr).await;
    let exec = |c: &mut MultiplexedConnection, cmds: &'static [&'static [&'static str]]| {
        let mut c = c.clone();
        async move {
            assert_eq!(qr(&mut c, &["MULTI"]).await, Ok(Value::Okay));
            for cmd in cmds {
                assert_eq!(
                    qr(&mut c, cmd).await,
                    Ok(Value::SimpleString("QUEUED".into()))
                );
            }
            tokio::time::timeout(Duration::from_secs(5), qr(&mut c, &["EXEC"]))
                .await
                .expect("EXEC answered within 5 s")
        }
    };
    let t = Instant::now();
    assert_eq!(
        exec(
            &mut c,
            &[
                &["BLPOP", "e", "0"],
                &["BRPOP", "e", "10"],
                &["BLMOVE", "e", "d", "LEFT", "LEFT", "0"],
                &["BLMPOP", "0", "1", "e", "LEFT"],
            ]
        )
        .await,
        Ok(Value::Array(vec![Value::Nil; 4]))
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // With an element the pop happens as it would outside.
    assert_eq!(
        exec(
            &mut c,
            &[
                &["RPUSH", "e", "a", "b"],
                &["BLPOP", "e", "0"],
                &["BRPOPLPUSH", "e", "d", "0"]
            ]
        )
        .await,
        Ok(Value::Array(vec![
            Value::Int(2),
            bulks(&["e", "a"]),
            bulk(b"b")
        ]))
    );
    assert_eq!(
        qr(&mut c, &["LRANGE", "d", "0", "-1"]).await,
        Ok(bulks(&["b"]))
    );
    assert_eq!(qr(&mut c, &["EXISTS", "e"]).await, Ok(Value::Int(0)));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

async fn many_producers_and_consumers_hand_over_each_element_once(addr: SocketAddr) {
    const CONSUMERS: usize = 8;
    const PRODUCERS: usize = 4;
    const EACH: usize = 2000;
    let mut c = con(addr).await;
    let mut consumers = Vec::new();
    for _ in 0..CONSUMERS {
        let mut b = con(addr).await;
        consumers.push(tokio::spawn(async move {
            let mut got: Vec<String> = Vec::new();
            loop {
                let r: Option<(String, String)> = q(&mut b, &["BLPOP", "q", "5"]).await.unwrap();
                match r {
                    None => continue,
                    Some((k, e)) => {
                        assert_eq!(k, "q");
                        if e == "STOP" {
                            return got;
                        }
                        got.push(e);
                    }
                }
            }
        }));
    }
    wait_blocked(&mut c, CONSUMERS as u64).await;
    produce(
        addr,
        PRODUCERS,
        EACH,
        "RPUSH",
        |cmd, _, e| {
            cmd.arg(e);
        },
        |_, _| {},
    )
    .await;
    let stops = vec!["STOP"; CONSUMERS];
    let mut cmd = redis::cmd("RPUSH");
    cmd.arg("q").arg(&stops);
    let _: i64 = cmd.query_async(&mut c).await.unwrap();
    let mut all = Vec::new();
    for h in consumers {
        let got = tokio::time::timeout(Duration::from_secs(60), h)
            .await
            .expect("consumer stopped within 60 s")
            .unwrap();
        // Each consumer saw each producer's elements in push order (FIFO).
        check_producer_order(&got, PRODUCERS);
        all.extend(got);
    }
    check_each_once(&all, PRODUCERS, EACH, "element");
    assert_eq!(qr(&mut c, &["EXISTS", "q"]).await, Ok(Value::Int(0)));
    assert_eq!(blocked_clients(&mut c).await, 0);
}

// ---------------------------------------------------------------------------------
// DUMP / RESTORE.

async fn dump(c: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    q(c, &["DUMP", key]).await.unwrap()
}

async fn restore(c: &mut MultiplexedConnection, key: &str, payload: &[u8]) -> Reply {
    let mut cmd = redis::cmd("RESTORE");
    cmd.arg(key).arg(0).arg(payload);
    cmd.query_async::<Value>(c)
        .await
        .map_err(|e| error_text(&e))
}

async fn whole(c: &mut MultiplexedConnection, key: &str) -> Vec<Vec<u8>> {
    q(c, &["LRANGE", key, "0", "-1"]).await.unwrap()
}

async fn dump_and_restore(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut rng = SmallRng::seed_from_u64(7);
    let pool = element_pool(&mut rng);
    let elems: Vec<Vec<u8>> = (0..5000).map(|n| element(&mut rng, &pool, n)).collect();
    for (size, key) in [("-2", "big"), ("4", "big4")] {
        q::<()>(&mut c, &["CONFIG", "SET", "list-max-listpack-size", size])
            .await
            .unwrap();
        for chunk in elems.chunks(100) {
            let mut cmd = redis::cmd("RPUSH");
            cmd.arg(key);
            for e in chunk {
                cmd.arg(&e[..]);
            }
            let _: i64 = cmd.query_async(&mut c).await.unwrap();
        }
        let payload = dump(&mut c, key).await;
        let copy = format!("{key}:copy");
        assert_eq!(restore(&mut c, &copy, &payload).await, Ok(Value::Okay));
        assert!(whole(&mut c, &copy).await == elems, "{key}'s copy differs");
        assert_eq!(encoding(&mut c, &copy).await, "quicklist");
        assert_eq!(
            restore(&mut c, &copy, &payload).await,
            Err("BUSYKEY Target key name already exists.".into())
        );
        // The copy is a list like any other.
        assert_eq!(
            qr(&mut c, &["RPOP", &copy]).await,
            Ok(bulk(elems.last().unwrap()))
        );
        assert_eq!(qr(&mut c, &["LLEN", &copy]).await, Ok(Value::Int(4999)));
        let mut bad = payload.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(
            restore(&mut c, "bad", &bad).await,
            Err("ERR DUMP payload version or checksum are wrong".into())
        );
    }
    // redis-server 7.0.15's DUMP of RPUSH l a bb 1 -7 <70 x's>.
    let redis_payload: [u8; 45] = [
        18, 1, 2, 195, 28, 64, 92, 20, 92, 0, 0, 0, 5, 0, 129, 97, 2, 130, 98, 98, 3, 1, 1, 223,
        249, 2, 224, 70, 120, 224, 60, 0, 1, 72, 255, 10, 0, 118, 142, 67, 28, 194, 57, 245, 218,
    ];
    assert_eq!(restore(&mut c, "l", &redis_payload).await, Ok(Value::Okay));
    let x70 = "x".repeat(70);
    assert_eq!(
        qr(&mut c, &["LRANGE", "l", "0", "-1"]).await,
        Ok(bulks(&["a", "bb", "1", "-7", &x70]))
    );
    assert_eq!(q::<String>(&mut c, &["TYPE", "l"]).await.unwrap(), "list");
    assert_eq!(qr(&mut c, &["LPUSH", "l", "z"]).await, Ok(Value::Int(6)));
}

// ---------------------------------------------------------------------------------
// Keyspace notifications.

use common::MsgStream as Stream;

async fn take(s: &mut Stream, n: usize) -> Vec<String> {
    common::take_messages(s, n).await
}

async fn keyspace_notifications_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    // "del" is a generic event: class g as well as l.
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEgl"])
        .await
        .unwrap();
    let mut s = psubscribe_all(addr).await;
    run_all(
        &mut c,
        &[
            &["LPUSH", "k", "a", "b"],
            &["RPUSH", "k", "c"],
            &["LPOP", "nokey"],                     // nothing
            &["LPUSHX", "nokey", "v"],              // nothing
            &["LINSERT", "k", "BEFORE", "zz", "x"], // no pivot: nothing
            &["LINSERT", "k", "BEFORE", "c", "x"],
            &["LSET", "k", "0", "z"],
            &["LREM", "k", "1", "nope"], // nothing removed: nothing
            &["LREM", "k", "1", "x"],
            &["LTRIM", "k", "0", "-1"],
            &["LMOVE", "k", "d", "LEFT", "RIGHT"],
            &["RPOP", "k"],
            &["RPOP", "k"],
            &["LMOVE", "d", "d", "RIGHT", "LEFT"],
            &["RPOPLPUSH", "d", "e"],
            &["RPUSH", "e", "f", "g"],
            &["LPOP", "e", "0"], // nothing
            &["LMPOP", "1", "e", "LEFT", "COUNT", "2"],
            &["RPOP", "e", "5"],
        ],
    )
    .await;
    let want = keyspace_messages(&[
        ("lpush", "k"),
        ("rpush", "k"),
        ("linsert", "k"),
        ("lset", "k"),
        ("lrem", "k"),
        ("ltrim", "k"),
        ("rpush", "d"),
        ("lpop", "k"),
        ("rpop", "k"),
        ("rpop", "k"),
        ("del", "k"),
        ("lpush", "d"),
        ("rpop", "d"),
        ("lpush", "e"),
        ("rpop", "d"),
        ("del", "d"),
        ("rpush", "e"),
        ("lpop", "e"),
        ("rpop", "e"),
        ("del", "e"),
    ]);
    assert_eq!(take(&mut s, want.len()).await, want);
    // A blocked client's pop: the push, then the pop and the deletion.
    let h = spawn_q(con(addr).await, &["BLPOP", "w", "0"]);
    wait_blocked(&mut c, 1).await;
    run_all(
        &mut c,
        &[&["RPUSH", "w", "v"], &["LTRIM", "nokey", "0", "1"]],
    )
    .await;
    assert_eq!(reply_of(h).await.1, Ok(bulks(&["w", "v"])));
    let h = spawn_q(
        con(addr).await,
        &["BLMOVE", "w", "w2", "RIGHT", "LEFT", "0"],
    );
    wait_blocked(&mut c, 1).await;
    run_all(&mut c, &[&["LPUSH", "w", "v"], &["SET", "marker", "1"]]).await;
    assert_eq!(reply_of(h).await.1, Ok(bulk(b"v")));
    let want = keyspace_messages(&[
        ("rpush", "w"),
        ("lpop", "w"),
        ("del", "w"),
        ("lpush", "w"),
        ("lpush", "w2"),
        ("rpop", "w"),
        ("del", "w"),
    ]);
    assert_eq!(take(&mut s, want.len()).await, want);
    // Without class g the deletion is not published.
    q::<()>(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEl"])
        .await
        .unwrap();
    run_all(
        &mut c,
        &[&["RPUSH", "z", "1"], &["RPOP", "z"], &["LPUSH", "z2", "m"]],
    )
    .await;
    let want = keyspace_messages(&[("rpush", "z"), ("rpop", "z"), ("lpush", "z2")]);
    assert_eq!(take(&mut s, want.len()).await, want);
}

// ---------------------------------------------------------------------------------
// The tests: each body on a fresh in-process server.

mod on_augur {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn random_commands_match_a_deque_model() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::random_commands_match_a_deque_model(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replies_as_redis() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::replies_as_redis(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn errors_as_redis() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::errors_as_redis(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_push_serves_the_blocked_client_before_the_pusher_goes_on() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::a_push_serves_the_blocked_client_before_the_pusher_goes_on(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn other_writers_serve_blocked_clients() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::other_writers_serve_blocked_clients(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocked_clients_are_served_first_blocked_first() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::blocked_clients_are_served_first_blocked_first(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocking_pop_times_out_with_nil() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::a_blocking_pop_times_out_with_nil(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blmove_moves_the_pushed_element() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::blmove_moves_the_pushed_element(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn brpoplpush_to_a_string_fails_and_leaves_the_element() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::brpoplpush_to_a_string_fails_and_leaves_the_element(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn client_unblock() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::client_unblock(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_blocked_connection_is_no_longer_blocked() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::a_closed_blocked_connection_is_no_longer_blocked(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_pops_in_multi_do_not_block() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::blocking_pops_in_multi_do_not_block(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn many_producers_and_consumers_hand_over_each_element_once() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::many_producers_and_consumers_hand_over_each_element_once(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dump_and_restore() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::dump_and_restore(srv.addr).await;
        srv.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keyspace_notifications_as_redis() {
        let srv = TestServer::start(ServerConfig::default()).await;
        super::keyspace_notifications_as_redis(srv.addr).await;
        srv.stop().await;
    }
}
