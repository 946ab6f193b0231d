//! End-to-end tests of the HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG,
//! PFSELFTEST) over real sockets: known results, registers against a model (the
//! element's register and run from its hash, the maximum per register), the estimate's
//! error, sparse to dense promotion at `hll-sparse-max-bytes`, corrupt values set with
//! SETRANGE / APPEND / SET, the errors Redis sends, MULTI and WATCH, scripts, keyspace
//! notifications and COMMAND INFO.
//!
//! Every body takes the server's address, so the same bodies run against a real
//! redis-server 7.0 too; the `with_redis` tests also compare Augur's replies and the
//! HLL strings themselves (GET, DUMP/RESTORE both ways) with it, byte for byte. Start
//! one (`redis-server --port 6399 --save "" --daemonize yes`, from /tmp) and run
//!
//! ```text
//! AUGUR_E2E_REDIS=6399 cargo test -p augur --test hll_e2e -- --ignored
//! ```
//!
//! The external tests take turns (one lock), FLUSHALL first and reset the configs they
//! touch; without the variable they fail (they are ignored by default).

mod common;

use augur_server::hll;
use augur_server::ServerConfig;
use common::replies::{bulk, con, qb, qr, run_all, Reply};
use common::{keyspace_messages, psubscribe_all, take_messages, TestServer};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::collections::HashSet;
use std::net::SocketAddr;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

async fn ok(c: &mut MultiplexedConnection, args: &[&str]) -> Value {
    qr(c, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

async fn int(c: &mut MultiplexedConnection, args: &[&str]) -> i64 {
    match ok(c, args).await {
        Value::Int(i) => i,
        v => panic!("{args:?}: {v:?}"),
    }
}

async fn get(c: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    match ok(c, &["GET", key]).await {
        Value::BulkString(b) => b,
        v => panic!("GET {key}: {v:?}"),
    }
}

async fn set_bytes(c: &mut MultiplexedConnection, key: &str, v: &[u8]) {
    qb(c, &[b"SET".to_vec(), key.as_bytes().to_vec(), v.to_vec()])
        .await
        .unwrap();
}

async fn encoding(c: &mut MultiplexedConnection, key: &str) -> String {
    match ok(c, &["PFDEBUG", "ENCODING", key]).await {
        Value::SimpleString(s) => s,
        v => panic!("PFDEBUG ENCODING {key}: {v:?}"),
    }
}

/// PFDEBUG GETREG (converts the key to dense, as in Redis).
async fn registers(c: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    match ok(c, &["PFDEBUG", "GETREG", key]).await {
        Value::Array(a) => a
            .into_iter()
            .map(|v| match v {
                Value::Int(i) => i as u8,
                v => panic!("register {v:?}"),
            })
            .collect(),
        v => panic!("GETREG: {v:?}"),
    }
}

fn elements(rng: &mut SmallRng, n: usize) -> Vec<String> {
    (0..n).map(|_| format!("e{}", rng.gen::<u32>())).collect()
}

/// The registers after adding `elems` to `model`: each element raises its register to
/// its run length (the hash is hyperloglog.c's; checked against redis-server's registers
/// in `hll::tests`).
fn model_add(model: &mut [u8], elems: &[String]) -> bool {
    let mut changed = false;
    for e in elems {
        let (i, n) = hll::pat_len(e.as_bytes());
        if n > model[i] {
            model[i] = n;
            changed = true;
        }
    }
    changed
}

async fn pfadd(c: &mut MultiplexedConnection, key: &str, elems: &[String]) -> i64 {
    let mut args = vec!["PFADD", key];
    args.extend(elems.iter().map(|s| s.as_str()));
    int(c, &args).await
}

async fn known_results(addr: SocketAddr) {
    let mut c = con(addr).await;
    assert_eq!(int(&mut c, &["PFADD", "hll"]).await, 1);
    assert_eq!(int(&mut c, &["EXISTS", "hll"]).await, 1);
    assert_eq!(int(&mut c, &["PFADD", "hll"]).await, 0);
    assert_eq!(int(&mut c, &["PFCOUNT", "hll"]).await, 0);
    assert_eq!(int(&mut c, &["PFADD", "hll", "a", "b", "c"]).await, 1);
    assert_eq!(int(&mut c, &["PFADD", "hll", "a", "b", "c"]).await, 0);
    assert_eq!(int(&mut c, &["PFCOUNT", "hll"]).await, 3);
    assert_eq!(int(&mut c, &["PFADD", "hll", ""]).await, 1);
    assert_eq!(int(&mut c, &["PFCOUNT", "hll"]).await, 4);
    assert_eq!(int(&mut c, &["PFCOUNT", "nokey"]).await, 0);
    assert_eq!(int(&mut c, &["EXISTS", "nokey"]).await, 0);
    // The cached cardinality's validity bit (byte 15) follows the registers.
    assert_eq!(get(&mut c, "hll").await[15], 0);
    assert_eq!(int(&mut c, &["PFADD", "hll", "a"]).await, 0);
    assert_eq!(get(&mut c, "hll").await[15], 0);
    assert_eq!(int(&mut c, &["PFADD", "hll", "1", "2", "3"]).await, 1);
    assert_eq!(get(&mut c, "hll").await[15], 0x80);
    assert_eq!(int(&mut c, &["PFCOUNT", "hll"]).await, 7);
    let v = get(&mut c, "hll").await;
    assert_eq!(&v[..5], b"HYLL\x01");
    assert_eq!(u64::from_le_bytes(v[8..16].try_into().unwrap()), 7);
    // Union counts, PFMERGE into an absent and into an existing key.
    run_all(
        &mut c,
        &[
            &["PFADD", "h1{t}", "a", "b", "c"],
            &["PFADD", "h2{t}", "b", "c", "d"],
            &["PFADD", "h3{t}", "c", "d", "e"],
        ],
    )
    .await;
    assert_eq!(
        int(&mut c, &["PFCOUNT", "h1{t}", "h2{t}", "h3{t}", "none{t}"]).await,
        5
    );
    let before = get(&mut c, "h1{t}").await;
    assert_eq!(int(&mut c, &["PFCOUNT", "h1{t}", "h2{t}"]).await, 4);
    assert_eq!(
        get(&mut c, "h1{t}").await,
        before,
        "a union count writes nothing"
    );
    assert_eq!(
        ok(&mut c, &["PFMERGE", "d{t}", "h1{t}", "h2{t}", "h3{t}"]).await,
        Value::Okay
    );
    assert_eq!(int(&mut c, &["PFCOUNT", "d{t}"]).await, 5);
    assert_eq!(
        ok(&mut c, &["PFMERGE", "h1{t}", "h3{t}"]).await,
        Value::Okay
    );
    assert_eq!(int(&mut c, &["PFCOUNT", "h1{t}"]).await, 5);
    assert_eq!(ok(&mut c, &["PFMERGE", "empty{t}"]).await, Value::Okay);
    assert_eq!(int(&mut c, &["PFCOUNT", "empty{t}"]).await, 0);
    assert_eq!(encoding(&mut c, "empty{t}").await, "sparse");
    // PFADD with no element on an existing key changes nothing.
    assert_eq!(int(&mut c, &["PFADD", "h1{t}"]).await, 0);
    assert_eq!(ok(&mut c, &["PFSELFTEST"]).await, Value::Okay);
}

/// Random PFADD / PFMERGE / PFCOUNT against registers modelled from the elements' hashes,
/// sparse and dense keys mixed; estimates within 5 % (Redis's suite's bound) of the
/// exact distinct counts, exact below 10.
async fn registers_match_a_model(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut rng = SmallRng::seed_from_u64(7);
    let keys = ["a{m}", "b{m}", "c{m}", "d{m}"];
    let mut models = vec![vec![0u8; hll::REGISTERS]; keys.len()];
    let mut sets: Vec<HashSet<String>> = vec![HashSet::new(); keys.len()];
    let mut exists = [false; 4];
    for step in 0..120 {
        let k = rng.gen_range(0..keys.len());
        match rng.gen_range(0..10) {
            0..=6 => {
                let n = *[0usize, 1, 3, 20, 200, 1500]
                    .get(rng.gen_range(0..6))
                    .unwrap();
                let elems = elements(&mut rng, n);
                let changed = model_add(&mut models[k], &elems);
                sets[k].extend(elems.iter().cloned());
                let got = pfadd(&mut c, keys[k], &elems).await;
                let want = !exists[k] || changed;
                assert_eq!(got, want as i64, "step {step}: PFADD {}", keys[k]);
                exists[k] = true;
            }
            7 => {
                let s = rng.gen_range(0..keys.len());
                ok(&mut c, &["PFMERGE", keys[k], keys[s]]).await;
                let src = models[s].clone();
                for (d, s) in models[k].iter_mut().zip(src) {
                    *d = (*d).max(s);
                }
                let other = sets[s].clone();
                sets[k].extend(other);
                exists[k] = true;
            }
            8 if exists[k] => {
                ok(&mut c, &["PFDEBUG", "TODENSE", keys[k]]).await;
            }
            _ => {
                let n = int(&mut c, &["PFCOUNT", keys[0], keys[1], keys[2], keys[3]]).await;
                let all: HashSet<&String> = sets.iter().flatten().collect();
                let real = all.len() as i64;
                assert!(
                    (n - real).abs() as f64 <= real as f64 * 0.05 + 1.0,
                    "step {step}: union {n} vs {real}"
                );
            }
        }
        assert_eq!(int(&mut c, &["EXISTS", keys[k]]).await == 1, exists[k]);
        if !exists[k] {
            continue;
        }
        let n = int(&mut c, &["PFCOUNT", keys[k]]).await;
        let real = sets[k].len() as i64;
        if real < 10 {
            assert_eq!(n, real, "step {step}: PFCOUNT {}", keys[k]);
        } else {
            assert!(
                (n - real).abs() as f64 <= real as f64 * 0.05,
                "step {step}: PFCOUNT {} = {n}, {real} distinct",
                keys[k]
            );
        }
        // The cached count is the one returned, and valid now.
        let v = get(&mut c, keys[k]).await;
        assert_eq!(u64::from_le_bytes(v[8..16].try_into().unwrap()), n as u64);
        if step % 10 == 0 {
            // GETREG converts; check a copy, keeping the key's encoding.
            let v = get(&mut c, keys[k]).await;
            set_bytes(&mut c, "copy{m}", &v).await;
            assert_eq!(registers(&mut c, "copy{m}").await, models[k], "step {step}");
        }
    }
}

/// A sparse HLL stays within hll-sparse-max-bytes and turns dense (12304 bytes) when an
/// update would pass it, registers unchanged by the conversion.
async fn sparse_promotes_at_max_bytes(addr: SocketAddr) {
    let mut c = con(addr).await;
    assert_eq!(
        ok(&mut c, &["CONFIG", "GET", "hll-sparse-max-bytes"]).await,
        Value::Array(vec![bulk(b"hll-sparse-max-bytes"), bulk(b"3000")])
    );
    for limit in [200usize, 3000] {
        ok(
            &mut c,
            &["CONFIG", "SET", "hll-sparse-max-bytes", &limit.to_string()],
        )
        .await;
        ok(&mut c, &["DEL", "h"]).await;
        let mut model = vec![0u8; hll::REGISTERS];
        let mut rng = SmallRng::seed_from_u64(limit as u64);
        let mut last_sparse = 0;
        for i in 0.. {
            let e = elements(&mut rng, 1);
            model_add(&mut model, &e);
            pfadd(&mut c, "h", &e).await;
            let len = int(&mut c, &["STRLEN", "h"]).await as usize;
            if encoding(&mut c, "h").await == "dense" {
                assert_eq!(len, hll::DENSE_SIZE);
                assert!(
                    last_sparse + 5 > limit || model.iter().any(|&r| r > 32),
                    "converted at {last_sparse} bytes, limit {limit}"
                );
                assert!(i > 10, "{i}");
                break;
            }
            assert!(len <= limit, "sparse {len} bytes > {limit}");
            last_sparse = len;
        }
        let v = get(&mut c, "h").await;
        set_bytes(&mut c, "copy", &v).await;
        assert_eq!(registers(&mut c, "copy").await, model);
    }
    // 3kb is a memory value, as in Redis.
    ok(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "3kb"]).await;
    assert_eq!(
        ok(&mut c, &["CONFIG", "GET", "hll-sparse-max-bytes"]).await,
        Value::Array(vec![bulk(b"hll-sparse-max-bytes"), bulk(b"3072")])
    );
    let e = qr(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "-1"])
        .await
        .unwrap_err();
    assert!(e.contains("argument must be a memory value"), "{e}");
    ok(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]).await;
    // PFDEBUG TODENSE converts once; DECODE is for sparse values only.
    run_all(&mut c, &[&["DEL", "t"], &["PFADD", "t", "a"]]).await;
    let (i, n) = hll::pat_len(b"a");
    let want = format!("Z:{} v:{},1 Z:{}", i, n, hll::REGISTERS - i - 1);
    assert_eq!(
        ok(&mut c, &["PFDEBUG", "DECODE", "t"]).await,
        bulk(want.as_bytes())
    );
    assert_eq!(int(&mut c, &["PFDEBUG", "TODENSE", "t"]).await, 1);
    assert_eq!(int(&mut c, &["PFDEBUG", "TODENSE", "t"]).await, 0);
    assert_eq!(
        qr(&mut c, &["PFDEBUG", "DECODE", "t"]).await,
        Err("ERR HLL encoding is not sparse".into())
    );
    assert_eq!(int(&mut c, &["PFCOUNT", "t"]).await, 1);
}

/// Corrupt HLL strings get WRONGTYPE or INVALIDOBJ, never a crash; then random
/// corruption, which must leave the server answering.
async fn corrupt_values(addr: SocketAddr) {
    let mut c = con(addr).await;
    let setup = [&["DEL", "h"][..], &["PFADD", "h", "a", "b", "c"]];
    run_all(&mut c, &setup).await;
    ok(&mut c, &["APPEND", "h", "hello"]).await;
    assert_eq!(qr(&mut c, &["PFCOUNT", "h"]).await, Err(INVALID.into()));
    assert_eq!(
        qr(&mut c, &["PFCOUNT", "h", "x"]).await,
        Err(INVALID.into())
    );
    assert_eq!(
        qr(&mut c, &["PFMERGE", "x", "h"]).await,
        Err(INVALID.into())
    );
    assert_eq!(
        qr(&mut c, &["PFDEBUG", "GETREG", "h"]).await,
        Err(INVALID.into())
    );
    for (pos, bytes) in [(0, "0123"), (4, "x"), (4, "\0")] {
        run_all(&mut c, &setup).await;
        ok(&mut c, &["SETRANGE", "h", &pos.to_string(), bytes]).await;
        for cmd in [
            &["PFCOUNT", "h"][..],
            &["PFADD", "h", "a"],
            &["PFCOUNT", "h", "h"],
            &["PFMERGE", "h"],
            &["PFDEBUG", "ENCODING", "h"],
        ] {
            assert_eq!(
                qr(&mut c, cmd).await,
                Err(NOT_HLL.into()),
                "{pos} {bytes:?} {cmd:?}"
            );
        }
    }
    // Sparse values whose opcodes do not cover exactly 16384 registers.
    let mut hdr = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
    for body in [
        &b""[..],
        b"\x7f",
        b"\x7f\xfe",
        b"\x7f\xff\x80",
        b"\x7f\xff\x00",
    ] {
        hdr.truncate(16);
        hdr.extend_from_slice(body);
        set_bytes(&mut c, "bad", &hdr).await;
        assert_eq!(
            qr(&mut c, &["PFCOUNT", "bad"]).await,
            Err(INVALID.into()),
            "{body:?}"
        );
        assert_eq!(
            qr(&mut c, &["PFMERGE", "x", "bad"]).await,
            Err(INVALID.into())
        );
        assert_eq!(
            qr(&mut c, &["PFDEBUG", "TODENSE", "bad"]).await,
            Err(INVALID.into())
        );
    }
    // A dense value of the wrong length; a short string; an integer.
    let mut dense = b"HYLL\0\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
    dense.resize(hll::DENSE_SIZE - 1, 0);
    set_bytes(&mut c, "bad", &dense).await;
    assert_eq!(qr(&mut c, &["PFCOUNT", "bad"]).await, Err(NOT_HLL.into()));
    dense.push(0);
    set_bytes(&mut c, "bad", &dense).await;
    assert_eq!(int(&mut c, &["PFCOUNT", "bad"]).await, 0);
    ok(&mut c, &["SET", "bad", "HYLL"]).await;
    assert_eq!(
        qr(&mut c, &["PFADD", "bad", "a"]).await,
        Err(NOT_HLL.into())
    );
    ok(&mut c, &["SET", "bad", "12345678901234567"]).await;
    assert_eq!(qr(&mut c, &["PFCOUNT", "bad"]).await, Err(NOT_HLL.into()));

    // The suite's fuzzing, with every command: replies are values or these errors.
    let mut rng = SmallRng::seed_from_u64(11);
    for j in 0..300 {
        ok(&mut c, &["DEL", "h"]).await;
        let n = rng.gen_range(0..3000);
        pfadd(&mut c, "h", &elements(&mut rng, n)).await;
        for _ in 0..5 {
            let len = int(&mut c, &["STRLEN", "h"]).await;
            let pos = rng.gen_range(0..len);
            let byte = [rng.gen::<u8>()];
            qb(
                &mut c,
                &[
                    b"SETRANGE".to_vec(),
                    b"h".to_vec(),
                    pos.to_string().into_bytes(),
                    byte.to_vec(),
                ],
            )
            .await
            .unwrap();
            if rng.gen_bool(0.5) {
                break;
            }
        }
        let e = elements(&mut rng, 5);
        for cmd in [
            vec!["PFCOUNT", "h"],
            vec!["PFADD", "h", &e[0], &e[1], &e[2], &e[3], &e[4]],
            vec!["PFCOUNT", "h", "other"],
            vec!["PFMERGE", "dest", "h"],
            vec!["PFDEBUG", "DECODE", "h"],
            vec!["PFDEBUG", "GETREG", "h"],
        ] {
            match qr(&mut c, &cmd).await {
                Ok(_) => {}
                Err(e) if e == INVALID || e == NOT_HLL || e.starts_with("ERR HLL encoding") => {}
                Err(e) => panic!("round {j}: {cmd:?}: {e}"),
            }
        }
    }
    assert_eq!(
        ok(&mut c, &["PING"]).await,
        Value::SimpleString("PONG".into())
    );
}

async fn errors_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    run_all(
        &mut c,
        &[&["SET", "foo{t}", "bar"], &["LPUSH", "list{t}", "a"]],
    )
    .await;
    let cases: &[(&[&str], &str)] = &[
        (&["PFADD", "foo{t}", "1"], NOT_HLL),
        (&["PFCOUNT", "foo{t}"], NOT_HLL),
        (&["PFCOUNT", "foo{t}", "bar{t}"], NOT_HLL),
        (&["PFMERGE", "bar{t}", "foo{t}"], NOT_HLL),
        (&["PFMERGE", "foo{t}", "bar{t}"], NOT_HLL),
        (&["PFADD", "list{t}", "1"], WRONGTYPE),
        (&["PFCOUNT", "list{t}"], WRONGTYPE),
        (&["PFCOUNT", "bar{t}", "list{t}"], WRONGTYPE),
        (&["PFMERGE", "list{t}"], WRONGTYPE),
        (&["PFMERGE", "bar{t}", "list{t}"], WRONGTYPE),
        (&["PFDEBUG", "ENCODING", "list{t}"], WRONGTYPE),
        (
            &["PFDEBUG", "GETREG", "nokey"],
            "ERR The specified key does not exist",
        ),
        (
            &["PFDEBUG", "nosuch", "nokey"],
            "ERR The specified key does not exist",
        ),
        (&["PFDEBUG", "ENCODING", "foo{t}"], NOT_HLL),
        (
            &["PFADD"],
            "ERR wrong number of arguments for 'pfadd' command",
        ),
        (
            &["PFCOUNT"],
            "ERR wrong number of arguments for 'pfcount' command",
        ),
        (
            &["PFMERGE"],
            "ERR wrong number of arguments for 'pfmerge' command",
        ),
        (
            &["PFDEBUG", "GETREG"],
            "ERR wrong number of arguments for 'pfdebug' command",
        ),
        (
            &["PFDEBUG", "DECODE", "k", "x"],
            "ERR wrong number of arguments for 'pfdebug' command",
        ),
        (
            &["PFSELFTEST", "x"],
            "ERR wrong number of arguments for 'pfselftest' command",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(qr(&mut c, cmd).await, Err(want.to_string()), "{cmd:?}");
    }
    ok(&mut c, &["PFADD", "h", "a"]).await;
    assert_eq!(
        qr(&mut c, &["PFDEBUG", "Nosuch", "h"]).await,
        Err("ERR Unknown PFDEBUG subcommand 'Nosuch'".into())
    );
    // Nothing was created by the failed commands.
    assert_eq!(int(&mut c, &["EXISTS", "bar{t}"]).await, 0);
}

/// MULTI, WATCH (a changing PFADD and a PFCOUNT that stores its count touch the key; a
/// PFADD that changes nothing does not) and scripts.
async fn transactions_and_scripts(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut other = con(addr).await;
    let got: Value = redis::pipe()
        .atomic()
        .cmd("PFADD")
        .arg("m")
        .arg("a")
        .arg("b")
        .cmd("PFCOUNT")
        .arg("m")
        .cmd("PFADD")
        .arg("m")
        .arg("a")
        .cmd("PFMERGE")
        .arg("m2")
        .arg("m")
        .cmd("PFCOUNT")
        .arg("m2")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(
        got,
        Value::Array(vec![
            Value::Int(1),
            Value::Int(2),
            Value::Int(0),
            Value::Okay,
            Value::Int(2)
        ])
    );
    for (touch, aborted) in [
        (&["PFADD", "m", "a"][..], false),
        (&["PFADD", "m", "new"][..], true),
        (&["PFCOUNT", "m"][..], true), // the count was stale: it is stored
        (&["PFCOUNT", "m"][..], false), // cached now
        (&["PFCOUNT", "m", "m2"][..], false),
    ] {
        ok(&mut c, &["WATCH", "m"]).await;
        ok(&mut other, touch).await;
        ok(&mut c, &["MULTI"]).await;
        ok(&mut c, &["PFCOUNT", "m"]).await;
        let r = ok(&mut c, &["EXEC"]).await;
        assert_eq!(r == Value::Nil, aborted, "{touch:?}: {r:?}");
    }
    let script = "return {redis.call('pfadd', KEYS[1], 'a', 'b', 'c'), \
                  redis.call('pfcount', KEYS[1]), redis.call('pfadd', KEYS[1], 'a')}";
    assert_eq!(
        ok(&mut c, &["EVAL", script, "1", "s"]).await,
        Value::Array(vec![Value::Int(1), Value::Int(3), Value::Int(0)])
    );
    // PFCOUNT may store its count (Redis's MAY_REPLICATE): refused in read-only
    // scripts, although flagged readonly.
    let e = qr(
        &mut c,
        &["EVAL_RO", "return redis.call('pfcount', KEYS[1])", "1", "s"],
    )
    .await
    .unwrap_err();
    assert!(
        e.starts_with("ERR Write commands are not allowed from read-only scripts."),
        "{e}"
    );
    assert_eq!(
        ok(
            &mut c,
            &[
                "EVAL_RO",
                "return redis.call('get', KEYS[1]) ~= false",
                "1",
                "s"
            ]
        )
        .await,
        Value::Int(1)
    );
}

async fn keyspace_notifications(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KE$g"]).await;
    let mut s = psubscribe_all(addr).await;
    run_all(
        &mut c,
        &[
            &["PFADD", "h", "a"],
            &["PFADD", "h", "a"], // no change: nothing
            &["PFCOUNT", "h"],    // nothing
            &["PFADD", "h"],      // nothing
            &["PFMERGE", "d", "h"],
            &["PFMERGE", "d"],
            &["PFDEBUG", "TODENSE", "d"], // nothing
            &["PFADD", "d", "b"],
            &["DEL", "d"],
        ],
    )
    .await;
    let want = keyspace_messages(&[
        ("pfadd", "h"),
        ("pfadd", "d"),
        ("pfadd", "d"),
        ("pfadd", "d"),
        ("del", "d"),
    ]);
    assert_eq!(take_messages(&mut s, want.len()).await, want);
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", ""]).await;
}

async fn command_info(addr: SocketAddr) {
    let mut c = con(addr).await;
    let flags = |v: &Value| -> (i64, Vec<String>, i64, i64, i64) {
        let Value::Array(outer) = v else {
            panic!("{v:?}")
        };
        let Value::Array(e) = &outer[0] else {
            panic!("{v:?}")
        };
        let Value::Int(arity) = e[1] else { panic!() };
        let Value::Array(f) = &e[2] else { panic!() };
        let f = f
            .iter()
            .map(|x| match x {
                Value::SimpleString(s) => s.clone(),
                Value::BulkString(b) => String::from_utf8_lossy(b).into(),
                x => panic!("{x:?}"),
            })
            .collect();
        let n = |i: usize| match e[i] {
            Value::Int(n) => n,
            _ => panic!(),
        };
        (arity, f, n(3), n(4), n(5))
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    for (cmd, want) in [
        ("pfadd", (-2, s(&["write", "denyoom", "fast"]), 1, 1, 1)),
        ("pfcount", (-2, s(&["readonly"]), 1, -1, 1)),
        ("pfmerge", (-2, s(&["write", "denyoom"]), 1, -1, 1)),
        ("pfdebug", (3, s(&["write", "denyoom", "admin"]), 2, 2, 1)),
        ("pfselftest", (1, s(&["admin"]), 0, 0, 0)),
    ] {
        assert_eq!(
            flags(&ok(&mut c, &["COMMAND", "INFO", cmd]).await),
            want,
            "{cmd}"
        );
    }
}

/// The external redis-server of `AUGUR_E2E_REDIS` (host:port or a port), flushed and
/// with the configs these tests touch reset; holds the turn.
async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let v = std::env::var("AUGUR_E2E_REDIS").ok()?;
    let addr: SocketAddr = if v.chars().all(|ch| ch.is_ascii_digit()) {
        format!("127.0.0.1:{v}").parse().unwrap()
    } else {
        v.parse().expect("AUGUR_E2E_REDIS is host:port or a port")
    };
    let guard = LOCK.lock().await;
    let mut c = con(addr).await;
    for cmd in [
        &["FLUSHALL"][..],
        &["CONFIG", "SET", "notify-keyspace-events", ""],
        &["CONFIG", "SET", "hll-sparse-max-bytes", "3000"],
    ] {
        ok(&mut c, cmd).await;
    }
    Some((addr, guard))
}

/// Runs one command on both servers; the replies must be equal.
async fn both(a: &mut MultiplexedConnection, r: &mut MultiplexedConnection, args: &[Vec<u8>]) {
    let got = qb(a, args).await;
    let want = qb(r, args).await;
    let show = |x: &Reply| format!("{x:?}").chars().take(300).collect::<String>();
    assert_eq!(
        got,
        want,
        "{:?}: augur {} redis {}",
        String::from_utf8_lossy(&args[0]),
        show(&got),
        show(&want)
    );
}

fn args(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// A seeded sequence on Augur and on redis-server: every reply and every HLL string
/// (GET) equal, sparse, dense, promoted, merged and corrupted values included.
async fn values_match_redis(augur: SocketAddr, redis: SocketAddr) {
    let mut a = con(augur).await;
    let mut r = con(redis).await;
    let mut rng = SmallRng::seed_from_u64(3);
    let keys = ["k0{x}", "k1{x}", "k2{x}", "k3{x}"];
    for limit in ["3000", "100"] {
        both(
            &mut a,
            &mut r,
            &args(&["CONFIG", "SET", "hll-sparse-max-bytes", limit]),
        )
        .await;
        for step in 0..300 {
            let k = keys[rng.gen_range(0..keys.len())];
            let k2 = keys[rng.gen_range(0..keys.len())];
            let cmd: Vec<Vec<u8>> = match rng.gen_range(0..12) {
                0..=4 => {
                    let n = [0, 1, 5, 40, 300, 3000][rng.gen_range(0..6)];
                    let mut c = args(&["PFADD", k]);
                    c.extend(elements(&mut rng, n).into_iter().map(String::into_bytes));
                    c
                }
                5 => args(&["PFCOUNT", k]),
                6 => args(&["PFCOUNT", k, k2, "none{x}"]),
                7 => args(&["PFMERGE", k, k2]),
                8 => args(&["PFMERGE", "new{x}", k, k2]),
                9 => args(&["PFDEBUG", "DECODE", k]),
                10 => args(&["PFDEBUG", "TODENSE", k]),
                _ => {
                    // Corrupt a byte (header included) of an existing value.
                    let Ok(Value::Int(len)) = qb(&mut r, &args(&["STRLEN", k])).await else {
                        continue;
                    };
                    if len == 0 || step % 3 != 0 {
                        continue;
                    }
                    let pos = rng.gen_range(0..len as usize);
                    vec![
                        b"SETRANGE".to_vec(),
                        k.as_bytes().to_vec(),
                        pos.to_string().into_bytes(),
                        vec![rng.gen()],
                    ]
                }
            };
            both(&mut a, &mut r, &cmd).await;
            for key in [k, "new{x}"] {
                both(&mut a, &mut r, &args(&["GET", key])).await;
            }
        }
    }
}

/// An HLL moves between the servers with GET/SET and DUMP/RESTORE both ways and counts
/// the same.
async fn values_move_between_servers(augur: SocketAddr, redis: SocketAddr) {
    let mut a = con(augur).await;
    let mut r = con(redis).await;
    let mut rng = SmallRng::seed_from_u64(5);
    for n in [3usize, 400, 5000] {
        let elems = elements(&mut rng, n);
        let mut cmd = args(&["PFADD", "src"]);
        cmd.extend(elems.iter().map(|e| e.clone().into_bytes()));
        both(&mut a, &mut r, &cmd).await;
        for dir in 0..2 {
            let (from, to) = if dir == 0 {
                (&mut a, &mut r)
            } else {
                (&mut r, &mut a)
            };
            let v = get(from, "src").await;
            set_bytes(to, "viaset", &v).await;
            let Ok(Value::BulkString(d)) = qb(from, &args(&["DUMP", "src"])).await else {
                panic!("DUMP");
            };
            qb(
                to,
                &[
                    b"RESTORE".to_vec(),
                    b"viadump".to_vec(),
                    b"0".to_vec(),
                    d,
                    b"REPLACE".to_vec(),
                ],
            )
            .await
            .unwrap();
            let want = int(from, &["PFCOUNT", "src"]).await;
            assert_eq!(int(to, &["PFCOUNT", "viaset"]).await, want);
            assert_eq!(int(to, &["PFCOUNT", "viadump"]).await, want);
            assert_eq!(get(to, "viadump").await, get(from, "src").await);
        }
    }
}

/// `on_both!(name, ...)`: each body as an `on_augur` and an `on_redis` test.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod on_augur {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let srv = super::TestServer::start(super::ServerConfig::default()).await;
                    super::$name(srv.addr).await;
                    srv.stop().await;
                }
            )*
        }

        mod on_redis {
            $(
                #[ignore = "runs on an external redis-server: set AUGUR_E2E_REDIS, pass --ignored"]
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some((addr, _turn)) = super::external().await else {
                        panic!("AUGUR_E2E_REDIS is not set");
                    };
                    super::$name(addr).await;
                }
            )*
        }
    };
}

on_both!(
    known_results,
    registers_match_a_model,
    sparse_promotes_at_max_bytes,
    corrupt_values,
    errors_as_redis,
    transactions_and_scripts,
    keyspace_notifications,
    command_info,
);

/// `with_redis!(name, ...)`: a body taking Augur's and redis-server's addresses.
macro_rules! with_redis {
    ($($name:ident),* $(,)?) => {
        mod with_redis {
            $(
                #[ignore = "compares with an external redis-server: set AUGUR_E2E_REDIS, pass --ignored"]
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some((redis, _turn)) = super::external().await else {
                        panic!("AUGUR_E2E_REDIS is not set");
                    };
                    let srv = super::TestServer::start(super::ServerConfig::default()).await;
                    super::$name(srv.addr, redis).await;
                    srv.stop().await;
                }
            )*
        }
    };
}

with_redis!(values_match_redis, values_move_between_servers);
