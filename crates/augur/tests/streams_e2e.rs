//! End-to-end tests of streams over real sockets with the `redis` crate: XADD's IDs and
//! trimming options, XLEN, XRANGE and XREVRANGE, XDEL, XTRIM (approximate trimming by
//! whole listpack nodes), XREAD (blocking too), consumer groups (XGROUP, XREADGROUP,
//! XACK, XPENDING, XCLAIM, XAUTOCLAIM, blocked group readers unblocked by errors),
//! XINFO, XSETID, the generic commands on a stream (TYPE, OBJECT ENCODING, COPY, RENAME,
//! DUMP and RESTORE, also of a payload redis-server 7.0.15 produced), keyspace
//! notifications, MULTI and RESP3's reply shapes (raw bytes).
//!
//! Every expectation is what redis-server 7.0.15 answers. Replies are compared as text
//! (see [`show`]: bulk strings bare, integers as `:n`, nulls as `nil`, arrays in
//! brackets, errors as `!CODE detail`), null kinds and RESP3 as raw bytes. What depends
//! on the clock (idle times, delivery and seen times, `*` IDs) is checked against
//! bounds, never a fixed value.
//!
//! Every body takes the server's address, so the same bodies run against a real
//! redis-server 7.0 too: start one (`cd /tmp && redis-server --port 7653 --save ""
//! --daemonize yes`) and run
//!
//! ```text
//! AUGUR_E2E_REDIS=127.0.0.1:7653 cargo test --release -p augur --test streams_e2e on_redis -- --ignored
//! ```
//!
//! The `on_redis` tests take turns (one lock), FLUSHALL first and reset the configs they
//! touch; without the variable they pass without checking anything.

mod common;

use common::blocking::{blocked_clients, reply_of, spawn_q, wait_blocked};
use common::replies::{bulk, con, qb, qr, raw_exchange, Reply};
use common::{keyspace_messages, psubscribe_all, q};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

const INVALID_ID: &str = "!ERR Invalid stream ID specified as stream command argument";
const TOP_ITEM: &str =
    "!ERR The ID specified in XADD is equal or smaller than the target stream top item";
const ZERO_ID: &str = "!ERR The ID specified in XADD must be greater than 0-0";
const EXHAUSTED: &str =
    "!ERR The stream has exhausted the last possible ID, unable to add more items";
const WRONGTYPE: &str = "!WRONGTYPE Operation against a key holding the wrong kind of value";
const SYNTAX: &str = "!ERR syntax error";
const NOT_INT: &str = "!ERR value is not an integer or out of range";
const MAXLEN_MINID: &str =
    "!ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
const LIMIT_NO_TILDE: &str = "!ERR syntax error, LIMIT cannot be used without the special ~ option";
const LIMIT_NO_STRATEGY: &str =
    "!ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
const MAXLEN_NEGATIVE: &str = "!ERR The MAXLEN argument must be >= 0.";
const LIMIT_NEGATIVE: &str = "!ERR The LIMIT argument must be >= 0.";
const XGROUP_NO_KEY: &str = "!ERR The XGROUP subcommand requires the key to exist. Note that \
     for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";
const NO_SUCH_KEY: &str = "!ERR no such key";
const BUSYGROUP: &str = "!BUSYGROUP Consumer Group name already exists";
const ENTRIESREAD_RANGE: &str = "!ERR value for ENTRIESREAD must be positive or -1";
const UNBALANCED: &str = "!ERR Unbalanced XREAD list of streams: for each stream key an ID or \
     '$' must be specified.";
const DOLLAR_IN_GROUP: &str = "!ERR The $ ID is meaningless in the context of XREADGROUP: you \
     want to read the history of this consumer by specifying a proper ID, or use the > ID to \
     get new messages. The $ ID would just return an empty result set.";
const GT_IN_XREAD: &str = "!ERR The > ID can be specified only when calling XREADGROUP using \
     the GROUP <group> <consumer> option.";
const COUNT_POSITIVE: &str = "!ERR COUNT must be > 0";
/// How long (ms) an idle time measured in these tests may be: generous, for slow machines.
const IDLE_MAX: i64 = 20_000;

/// "ERR wrong number of arguments" for `cmd` (lower case, `xgroup|create` for a
/// subcommand), as [`sh`] shows it.
fn arity(cmd: &str) -> String {
    format!("!ERR wrong number of arguments for '{cmd}' command")
}

/// A reply as these tests compare it: bulk strings bare (quoted when empty or holding a
/// space, a bracket, a quote or a non-ASCII byte), integers `:n`, null `nil`, arrays
/// `[a b]`, +OK `OK`, other simple strings `+text`.
fn show(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => format!(":{i}"),
        Value::BulkString(b) => {
            let s = String::from_utf8_lossy(b);
            if !s.is_empty()
                && s.chars()
                    .all(|ch| ch.is_ascii_graphic() && !"[]\"".contains(ch))
            {
                s.into_owned()
            } else {
                format!("{s:?}")
            }
        }
        Value::Array(a) => format!("[{}]", a.iter().map(show).collect::<Vec<_>>().join(" ")),
        Value::Okay => "OK".into(),
        Value::SimpleString(s) => format!("+{s}"),
        other => format!("{other:?}"),
    }
}

/// [`show`] of a reply, an error as `!CODE detail`.
fn shown(r: &Reply) -> String {
    match r {
        Ok(v) => show(v),
        Err(e) => format!("!{e}"),
    }
}

/// Runs a command; its reply as [`shown`].
async fn sh(c: &mut MultiplexedConnection, args: &[&str]) -> String {
    shown(&qr(c, args).await)
}

/// Runs each command in order and checks its reply (as [`sh`] shows it).
async fn check(c: &mut MultiplexedConnection, cases: &[(&[&str], &str)]) {
    for (args, want) in cases {
        assert_eq!(sh(c, args).await, *want, "{args:?}");
    }
}

/// Runs a command that must succeed.
async fn ok(c: &mut MultiplexedConnection, args: &[&str]) -> Value {
    qr(c, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The server's clock (TIME) in ms.
async fn now_ms(c: &mut MultiplexedConnection) -> i64 {
    let t: Vec<String> = q(c, &["TIME"]).await.unwrap();
    t[0].parse::<i64>().unwrap() * 1000 + t[1].parse::<i64>().unwrap() / 1000
}

fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

/// Replaces the integer after each field named in `keys` (in any field-value array, at
/// any depth) with the bulk string `T`, checking first that it is within `lo..=hi`.
fn mask_fields(v: &mut Value, keys: &[&str], lo: i64, hi: i64) {
    if let Value::Array(a) = v {
        for i in 0..a.len().saturating_sub(1) {
            let named = matches!(&a[i], Value::BulkString(k) if keys.iter().any(|n| n.as_bytes() == &k[..]));
            if named {
                if let Value::Int(x) = a[i + 1] {
                    assert!((lo..=hi).contains(&x), "{x} not within {lo}..={hi}");
                    a[i + 1] = bulk(b"T");
                }
            }
        }
        for e in a.iter_mut() {
            mask_fields(e, keys, lo, hi);
        }
    }
}

/// Replaces element `col` of each row of `v` (an array of arrays) with `T`, checking
/// first that it is an integer within `lo..=hi`.
fn mask_column(v: &mut Value, col: usize, lo: i64, hi: i64) {
    if let Value::Array(rows) = v {
        for r in rows.iter_mut() {
            if let Value::Array(r) = r {
                let x = int_of(&r[col]);
                assert!((lo..=hi).contains(&x), "{x} not within {lo}..={hi}");
                r[col] = bulk(b"T");
            }
        }
    }
}

/// XINFO STREAM FULL's times masked: each group's and consumer's PEL delivery times
/// and the consumers' seen-time, which must be within `lo..=hi`.
fn mask_full(v: &mut Value, lo: i64, hi: i64) {
    mask_fields(v, &["seen-time"], lo, hi);
    fn walk(v: &mut Value, lo: i64, hi: i64) {
        if let Value::Array(a) = v {
            for i in 0..a.len().saturating_sub(1) {
                if matches!(&a[i], Value::BulkString(k) if k == b"pending") {
                    if let Value::Array(rows) = &a[i + 1] {
                        let col = match rows.first() {
                            Some(Value::Array(r)) if r.len() == 4 => 2, // a group's PEL
                            _ => 1,                                     // a consumer's
                        };
                        mask_column(&mut a[i + 1], col, lo, hi);
                    }
                }
            }
            for e in a.iter_mut() {
                walk(e, lo, hi);
            }
        }
    }
    walk(v, lo, hi);
}

/// XPENDING's extended form with the idle times masked (each within 0..=`max_idle`).
async fn pending(c: &mut MultiplexedConnection, args: &[&str], max_idle: i64) -> String {
    let mut v = ok(c, args).await;
    mask_column(&mut v, 2, 0, max_idle);
    show(&v)
}

/// XINFO CONSUMERS with the idle times masked (each within 0..=IDLE_MAX).
async fn consumers(c: &mut MultiplexedConnection, key: &str, group: &str) -> String {
    let mut v = ok(c, &["XINFO", "CONSUMERS", key, group]).await;
    mask_fields(&mut v, &["idle"], 0, IDLE_MAX);
    show(&v)
}

/// Runs `cmds` pipelined (one round trip); each must succeed.
async fn pipe_all(c: &mut MultiplexedConnection, cmds: &[Vec<String>]) {
    let mut p = redis::pipe();
    for cmd in cmds {
        p.cmd(&cmd[0]);
        for a in &cmd[1..] {
            p.arg(a);
        }
        p.ignore();
    }
    let () = p.query_async(c).await.unwrap();
}

/// XADD `key` `i-1` f v for each i in `ids` (pipelined).
async fn add_n(c: &mut MultiplexedConnection, key: &str, ids: std::ops::RangeInclusive<u64>) {
    let cmds: Vec<Vec<String>> = ids
        .map(|i| {
            ["XADD", key, &format!("{i}-1"), "f", "v"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        })
        .collect();
    for chunk in cmds.chunks(5000) {
        pipe_all(c, chunk).await;
    }
}

/// A stream ID's two parts.
fn id_parts(id: &str) -> (u64, u64) {
    let (ms, seq) = id
        .split_once('-')
        .unwrap_or_else(|| panic!("not an ID: {id}"));
    (ms.parse().unwrap(), seq.parse().unwrap())
}

/// XINFO STREAM with radix-tree-nodes (the radix tree's inner node count, an artifact of
/// Redis's rax) masked; the other fields exactly.
async fn xinfo_stream(c: &mut MultiplexedConnection, args: &[&str]) -> String {
    let mut v = ok(c, args).await;
    mask_fields(&mut v, &["radix-tree-nodes"], 0, i64::MAX);
    show(&v)
}

/// Raw RESP with the value of each radix-tree-nodes field replaced by `N` (see
/// [`xinfo_stream`]).
fn rax_masked(raw: String) -> String {
    let tag = "$16\r\nradix-tree-nodes\r\n:";
    let mut out = String::new();
    let mut rest = &raw[..];
    while let Some(at) = rest.find(tag) {
        out.push_str(&rest[..at + tag.len()]);
        rest = &rest[at + tag.len()..];
        let end = rest.find("\r\n").unwrap();
        out.push('N');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------
// XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM.

/// XADD's explicit, incomplete and partly generated IDs and its ID errors.
async fn xadd_ids(addr: SocketAddr) {
    let mut c = con(addr).await;
    check(
        &mut c,
        &[
            (&["XADD", "s", "1-1", "a", "1"], "1-1"),
            (&["XADD", "s", "1-1", "a", "1"], TOP_ITEM),
            (&["XADD", "s", "1-0", "a", "1"], TOP_ITEM),
            (&["XADD", "s", "0-0", "a", "1"], ZERO_ID),
            (&["XADD", "fresh", "0-0", "a", "1"], ZERO_ID),
            (&["EXISTS", "fresh"], ":0"),
            (&["XADD", "s", "1-*", "b", "2"], "1-2"),
            (&["XADD", "s", "1-*", "b", "2"], "1-3"),
            (&["XADD", "s", "5", "c", "3"], "5-0"),
            (&["XADD", "s", "5", "c", "3"], TOP_ITEM),
            (&["XADD", "s", "0-*", "a", "1"], TOP_ITEM),
            (&["XADD", "s", "4-*", "a", "1"], TOP_ITEM),
            (&["XADD", "s", "7-*", "a", "1", "b", "2"], "7-0"),
            (&["XADD", "u", "0-*", "a", "1"], "0-1"),
            (&["XADD", "u", "0-*", "a", "1"], "0-2"),
            (
                &["XRANGE", "s", "-", "+"],
                "[[1-1 [a 1]] [1-2 [b 2]] [1-3 [b 2]] [5-0 [c 3]] [7-0 [a 1 b 2]]]",
            ),
            (&["XLEN", "s"], ":5"),
            // The ID's numbers are read with strtoull: a sign and leading blanks pass.
            (&["XADD", "v", "+1-1", "a", "1"], "1-1"),
            (&["XADD", "v", " 2-+3", "a", "1"], "2-3"),
            (&["XADD", "v", "02-04", "a", "1"], "2-4"),
            (&["XADD", "v", "9- 1", "a", "1"], "9-1"),
            // `*` after an ID from the future: the last ID's ms, the next sequence.
            (
                &["XADD", "f", "99999999999999-5", "a", "1"],
                "99999999999999-5",
            ),
            (&["XADD", "f", "*", "a", "1"], "99999999999999-6"),
            (
                &["XADD", "f", "99999999999999-18446744073709551615", "a", "1"],
                "99999999999999-18446744073709551615",
            ),
            (&["XADD", "f", "*", "a", "1"], "100000000000000-0"),
            // ms-* when that ms's sequence is used up: 7.0's (odd) error text.
            (
                &["XADD", "n", "7-18446744073709551615", "a", "1"],
                "7-18446744073709551615",
            ),
            (
                &["XADD", "n", "7-*", "a", "1"],
                "!ERR Elements are too large to be stored",
            ),
            (&["XADD", "n", "8-*", "a", "1"], "8-0"),
            // The last possible ID: nothing more, whatever ID is asked for.
            (
                &[
                    "XADD",
                    "m",
                    "18446744073709551615-18446744073709551615",
                    "a",
                    "1",
                ],
                "18446744073709551615-18446744073709551615",
            ),
            (&["XADD", "m", "*", "a", "1"], EXHAUSTED),
            (
                &["XADD", "m", "18446744073709551615-*", "a", "1"],
                EXHAUSTED,
            ),
            (&["XADD", "m", "1-1", "a", "1"], EXHAUSTED),
            (&["XLEN", "m"], ":1"),
        ],
    )
    .await;
    for bad in [
        "abc",
        "1-1-1",
        "-",
        "+",
        "$",
        ">",
        "",
        "1-18446744073709551616",
        "18446744073709551616-0",
        "0x10-1",
        "1-0x1",
        "23-",
        "-23",
        "1--1",
        "1.5",
        "*-1",
        "1-**",
        "**",
        "-*",
        "11 ",
        "(5",
    ] {
        assert_eq!(
            sh(&mut c, &["XADD", "s", bad, "a", "1"]).await,
            INVALID_ID,
            "{bad:?}"
        );
    }
    for args in [
        &["XADD", "s"][..],
        &["XADD", "s", "10-1"],
        &["XADD", "s", "10-1", "a"],
        &["XADD", "s", "*", "a", "1", "b"],
        &["XADD", "s", "NOMKSTREAM"],
        &["XADD", "s", "NOMKSTREAM", "*", "a"],
        &["XADD", "s", "*"],
    ] {
        assert_eq!(sh(&mut c, args).await, arity("xadd"), "{args:?}");
    }
    assert_eq!(sh(&mut c, &["XLEN", "s"]).await, ":5");

    // `*`: the server's ms and a sequence; then ms-* for the same ms goes on from it.
    let t0 = now_ms(&mut c).await;
    let id = sh(&mut c, &["XADD", "t", "*", "a", "1"]).await;
    let id2 = sh(&mut c, &["XADD", "t", "*", "a", "2"]).await;
    let t1 = now_ms(&mut c).await;
    let ((ms, seq), (ms2, seq2)) = (id_parts(&id), id_parts(&id2));
    assert!(
        (t0 as u64..=t1 as u64).contains(&ms),
        "{id} not within {t0}..={t1}"
    );
    assert_eq!(seq, 0, "{id}: a new stream's first * ID");
    assert!(
        ms2 > ms || (ms2 == ms && seq2 == seq + 1),
        "{id} then {id2}"
    );
    let next = format!("{ms2}-*");
    assert_eq!(
        sh(&mut c, &["XADD", "t", &next, "a", "3"]).await,
        format!("{ms2}-{}", seq2 + 1)
    );
    let before = format!("{}-*", ms2 - 1);
    assert_eq!(
        sh(&mut c, &["XADD", "t", &before, "a", "4"]).await,
        TOP_ITEM
    );
    assert_eq!(sh(&mut c, &["XLEN", "t"]).await, ":3");
}

/// XADD's NOMKSTREAM, MAXLEN and MINID (exact and `~`), LIMIT and their errors.
async fn xadd_options(addr: SocketAddr) {
    let mut c = con(addr).await;
    check(
        &mut c,
        &[
            (&["XADD", "nokey", "NOMKSTREAM", "1-1", "a", "1"], "nil"),
            (&["EXISTS", "nokey"], ":0"),
            (&["XADD", "s", "1-1", "a", "1"], "1-1"),
            (&["XADD", "s", "NOMKSTREAM", "2-1", "a", "1"], "2-1"),
            (
                &["XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "2-2", "a", "1"],
                "2-2",
            ),
            (&["XADD", "s", "MAXLEN", "2", "3-1", "a", "1"], "3-1"),
            (&["XRANGE", "s", "-", "+"], "[[2-2 [a 1]] [3-1 [a 1]]]"),
            (&["XADD", "s", "MAXLEN", "=", "2", "4-1", "b", "2"], "4-1"),
            (&["XRANGE", "s", "-", "+"], "[[3-1 [a 1]] [4-1 [b 2]]]"),
            (&["XADD", "s", "MINID", "4", "5-1", "c", "3"], "5-1"),
            (&["XRANGE", "s", "-", "+"], "[[4-1 [b 2]] [5-1 [c 3]]]"),
            (&["XADD", "s", "MINID", "=", "5-1", "6-1", "d", "4"], "6-1"),
            (&["XRANGE", "s", "-", "+"], "[[5-1 [c 3]] [6-1 [d 4]]]"),
            (
                &["XADD", "s", "maxlen", "5", "nomkstream", "7-1", "e", "5"],
                "7-1",
            ),
            (&["XLEN", "s"], ":3"),
            // `~`: whole nodes only (one node here: nothing goes).
            (&["XADD", "s", "MAXLEN", "~", "1", "8-1", "a", "1"], "8-1"),
            (&["XLEN", "s"], ":4"),
            (
                &[
                    "XADD", "s", "MAXLEN", "~", "1", "LIMIT", "10", "9-1", "a", "1",
                ],
                "9-1",
            ),
            (
                &[
                    "XADD", "s", "MINID", "~", "9", "LIMIT", "0", "9-2", "a", "1",
                ],
                "9-2",
            ),
            (&["XLEN", "s"], ":6"),
            (&["XADD", "s", "MAXLEN", "0", "10-1", "a", "1"], "10-1"),
            (&["XLEN", "s"], ":0"),
            (&["EXISTS", "s"], ":1"),
            // MAXLEN ~ 0 drops the whole node, the entry just added too.
            (&["XADD", "s", "MAXLEN", "~", "0", "11-1", "a", "1"], "11-1"),
            (&["XLEN", "s"], ":0"),
            (&["XADD", "s", "11-1", "a", "1"], TOP_ITEM),
            (&["XADD", "s", "MAXLEN", "a", "*", "a", "1"], NOT_INT),
            (
                &["XADD", "s", "MAXLEN", "-1", "*", "a", "1"],
                MAXLEN_NEGATIVE,
            ),
            (
                &["XADD", "s", "MAXLEN", "99999999999999999999", "*", "a", "1"],
                NOT_INT,
            ),
            (&["XADD", "s", "MAXLEN", "~", "*", "a", "1"], NOT_INT),
            (&["XADD", "s", "MAXLEN", "==", "0", "*", "a", "1"], NOT_INT),
            (
                &["XADD", "s", "MAXLEN", "1", "LIMIT", "10", "*", "a", "1"],
                LIMIT_NO_TILDE,
            ),
            (
                &[
                    "XADD", "s", "MAXLEN", "=", "1", "LIMIT", "10", "*", "a", "1",
                ],
                LIMIT_NO_TILDE,
            ),
            (
                &["XADD", "s", "LIMIT", "10", "*", "a", "1"],
                LIMIT_NO_STRATEGY,
            ),
            (
                &[
                    "XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "a", "1",
                ],
                LIMIT_NEGATIVE,
            ),
            (
                &["XADD", "s", "MAXLEN", "~", "1", "LIMIT", "a", "*", "a", "1"],
                NOT_INT,
            ),
            (
                &["XADD", "s", "MINID", "0", "MAXLEN", "1", "*", "a", "1"],
                MAXLEN_MINID,
            ),
            (
                &["XADD", "s", "MAXLEN", "1", "MAXLEN", "2", "*", "a", "1"],
                MAXLEN_MINID,
            ),
            (
                &["XADD", "s", "MINID", "1", "MINID", "2", "*", "a", "1"],
                MAXLEN_MINID,
            ),
            (&["XADD", "s", "MINID", "abc", "*", "a", "1"], INVALID_ID),
            (
                &["XADD", "s", "MINID", "~", "abc", "*", "a", "1"],
                INVALID_ID,
            ),
            (&["XADD", "s", "MINID", "-", "*", "a", "1"], INVALID_ID),
            (&["XADD", "s", "FOO", "*", "a", "1"], INVALID_ID),
            (&["XADD", "s", "MAXLEN", "1", "*", "a"], &arity("xadd")),
            (&["XLEN", "s"], ":0"),
            (
                &[
                    "XADD",
                    "nokey",
                    "NOMKSTREAM",
                    "MAXLEN",
                    "0",
                    "1-1",
                    "a",
                    "1",
                ],
                "nil",
            ),
            (&["EXISTS", "nokey"], ":0"),
        ],
    )
    .await;
}

/// Approximate trimming removes whole nodes (stream-node-max-entries 100) while what
/// is left stays at least the threshold, up to LIMIT entries (100 nodes' worth by
/// default, 0 for no limit).
async fn approximate_trims_whole_nodes(addr: SocketAddr) {
    let mut c = con(addr).await;
    add_n(&mut c, "s", 1..=250).await;
    check(
        &mut c,
        &[
            (&["XLEN", "s"], ":250"),
            (&["XTRIM", "s", "MAXLEN", "~", "200"], ":0"),
            (&["XTRIM", "s", "MAXLEN", "~", "10", "LIMIT", "150"], ":100"),
            (&["XLEN", "s"], ":150"),
            (&["XTRIM", "s", "MAXLEN", "~", "10"], ":100"),
            (&["XRANGE", "s", "-", "+", "COUNT", "1"], "[[201-1 [f v]]]"),
            (&["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "49"], ":0"),
            (&["XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "50"], ":50"),
            (&["XLEN", "s"], ":0"),
        ],
    )
    .await;
    add_n(&mut c, "m", 1..=250).await;
    check(
        &mut c,
        &[
            (&["XTRIM", "m", "MINID", "~", "150"], ":100"),
            (&["XTRIM", "m", "MINID", "~", "201-1"], ":100"),
            (&["XTRIM", "m", "MINID", "~", "202"], ":0"),
            (&["XTRIM", "m", "MINID", "202"], ":1"),
            (&["XRANGE", "m", "-", "+", "COUNT", "1"], "[[202-1 [f v]]]"),
            (&["XLEN", "m"], ":49"),
        ],
    )
    .await;
    add_n(&mut c, "z", 1..=250).await;
    check(
        &mut c,
        &[
            (&["XTRIM", "z", "MAXLEN", "~", "10", "LIMIT", "0"], ":200"),
            (&["XLEN", "z"], ":50"),
        ],
    )
    .await;
    add_n(&mut c, "big", 1..=25_000).await;
    check(
        &mut c,
        &[
            (&["XTRIM", "big", "MAXLEN", "~", "0"], ":10000"),
            (&["XLEN", "big"], ":15000"),
            (
                &["XTRIM", "big", "MAXLEN", "~", "0", "LIMIT", "0"],
                ":15000",
            ),
            (&["XLEN", "big"], ":0"),
        ],
    )
    .await;
}

/// Nodes end at stream-node-max-bytes (4096) as at stream-node-max-entries, which
/// CONFIG SET changes; approximate trimming and radix-tree-keys follow them.
async fn node_limits(addr: SocketAddr) {
    let mut c = con(addr).await;
    let value = "x".repeat(1000);
    for i in 1..=20 {
        ok(&mut c, &["XADD", "b", &format!("{i}-1"), "f", &value]).await;
    }
    let info: Vec<Value> = q(&mut c, &["XINFO", "STREAM", "b"]).await.unwrap();
    assert_eq!(show(&info[2]), "radix-tree-keys");
    assert_eq!(show(&info[3]), ":5");
    check(
        &mut c,
        &[
            (&["XTRIM", "b", "MAXLEN", "~", "5"], ":12"),
            (&["XLEN", "b"], ":8"),
            (&["CONFIG", "SET", "stream-node-max-entries", "10"], "OK"),
        ],
    )
    .await;
    add_n(&mut c, "s", 1..=25).await;
    let info: Vec<Value> = q(&mut c, &["XINFO", "STREAM", "s"]).await.unwrap();
    assert_eq!(show(&info[3]), ":3");
    check(
        &mut c,
        &[
            (&["XTRIM", "s", "MAXLEN", "~", "12"], ":10"),
            (&["XTRIM", "s", "MAXLEN", "~", "0"], ":15"),
            (&["CONFIG", "SET", "stream-node-max-entries", "100"], "OK"),
        ],
    )
    .await;
}

const E11: &str = "[1-1 [a 1]]";
const E12: &str = "[1-2 [b 2]]";
const E20: &str = "[2-0 [c 3]]";
const E55: &str = "[5-5 [d 4 e 5]]";
const E5M: &str = "[5-18446744073709551615 [f 6]]";

/// XRANGE and XREVRANGE: `-` and `+`, incomplete IDs (`5` is 5-0 as a start, 5-max as
/// an end), exclusive `(` bounds, COUNT, and the errors.
async fn xrange_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    for (id, fields) in [
        ("1-1", &["a", "1"][..]),
        ("1-2", &["b", "2"]),
        ("2-0", &["c", "3"]),
        ("5-5", &["d", "4", "e", "5"]),
        ("5-18446744073709551615", &["f", "6"]),
    ] {
        let mut args = vec!["XADD", "s", id];
        args.extend(fields);
        ok(&mut c, &args).await;
    }
    let all = format!("[{E11} {E12} {E20} {E55} {E5M}]");
    let cases: &[(&[&str], String)] = &[
        (&["XRANGE", "s", "-", "+"], all.clone()),
        (
            &["XRANGE", "s", "-", "+", "COUNT", "2"],
            format!("[{E11} {E12}]"),
        ),
        (&["XRANGE", "s", "-", "+", "count", "99"], all.clone()),
        (&["XRANGE", "s", "-", "+", "COUNT", "0"], "nil".into()),
        (&["XRANGE", "s", "-", "+", "COUNT", "-1"], "nil".into()),
        (
            &["XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "3"],
            format!("[{E11} {E12} {E20}]"),
        ),
        (&["XRANGE", "s", "1", "1"], format!("[{E11} {E12}]")),
        (&["XRANGE", "s", "5", "5"], format!("[{E55} {E5M}]")),
        (
            &["XRANGE", "s", "1-2", "5-5"],
            format!("[{E12} {E20} {E55}]"),
        ),
        (&["XRANGE", "s", "01", "1-01"], format!("[{E11}]")),
        (
            &["XRANGE", "s", "(1-1", "+"],
            format!("[{E12} {E20} {E55} {E5M}]"),
        ),
        (&["XRANGE", "s", "-", "(2-0"], format!("[{E11} {E12}]")),
        (&["XRANGE", "s", "(1", "+"], all.clone()),
        (&["XRANGE", "s", "(5", "+"], format!("[{E55} {E5M}]")),
        (
            &["XRANGE", "s", "-", "(5"],
            format!("[{E11} {E12} {E20} {E55}]"),
        ),
        (&["XRANGE", "s", "(0-0", "+"], all.clone()),
        (&["XRANGE", "s", "(0", "+"], all.clone()),
        (&["XRANGE", "s", "(1-2", "(5-5"], format!("[{E20}]")),
        (&["XRANGE", "s", "(1-2", "(2-0"], "[]".into()),
        (&["XRANGE", "s", "+", "-"], "[]".into()),
        (&["XRANGE", "s", "3", "2"], "[]".into()),
        (&["XRANGE", "s", "-", "18446744073709551615"], all.clone()),
        (&["XRANGE", "s", "(18446744073709551615", "+"], "[]".into()),
        (&["XRANGE", "s", "-", "(0"], "[]".into()),
        (&["XRANGE", "s", "-", "(0-1"], "[]".into()),
        (&["XRANGE", "nokey", "-", "+"], "[]".into()),
        (
            &["XRANGE", "s", "-", "(0-0"],
            "!ERR invalid end ID for the interval".into(),
        ),
        (
            &[
                "XRANGE",
                "s",
                "(18446744073709551615-18446744073709551615",
                "+",
            ],
            "!ERR invalid start ID for the interval".into(),
        ),
        (&["XRANGE", "s", "(-", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "-", "(+"], INVALID_ID.into()),
        (&["XRANGE", "s", "abc", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "-", "abc"], INVALID_ID.into()),
        (&["XRANGE", "s", "1-x", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "1-", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "-1", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "-0", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "(", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "((1", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "1-*", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "*", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "", "+"], INVALID_ID.into()),
        (&["XRANGE", "s", "-", "+", "COUNT", "a"], NOT_INT.into()),
        (&["XRANGE", "s", "-", "+", "COUNT"], SYNTAX.into()),
        (&["XRANGE", "s", "-", "+", "FOO", "1"], SYNTAX.into()),
        (&["XRANGE", "s", "-"], arity("xrange")),
        (
            &["XREVRANGE", "s", "+", "-"],
            format!("[{E5M} {E55} {E20} {E12} {E11}]"),
        ),
        (
            &["XREVRANGE", "s", "+", "-", "COUNT", "1"],
            format!("[{E5M}]"),
        ),
        (&["XREVRANGE", "s", "+", "-", "COUNT", "0"], "nil".into()),
        (&["XREVRANGE", "s", "-", "+"], "[]".into()),
        (
            &["XREVRANGE", "s", "(5-18446744073709551615", "(1-1"],
            format!("[{E55} {E20} {E12}]"),
        ),
        (
            &["XREVRANGE", "s", "5", "2"],
            format!("[{E5M} {E55} {E20}]"),
        ),
        (
            &["XREVRANGE", "s", "(5", "-"],
            format!("[{E55} {E20} {E12} {E11}]"),
        ),
        (&["XREVRANGE", "s", "+", "(5"], format!("[{E5M} {E55}]")),
        (&["XREVRANGE", "s", "1", "1"], format!("[{E12} {E11}]")),
        (&["XREVRANGE", "s", "abc", "-"], INVALID_ID.into()),
        (
            &["XREVRANGE", "s", "(0-0", "-"],
            "!ERR invalid end ID for the interval".into(),
        ),
        (&["XREVRANGE", "s", "+"], arity("xrevrange")),
        (&["XLEN", "s"], ":5".into()),
        (&["XLEN", "nokey"], ":0".into()),
        (&["XLEN", "s", "x"], arity("xlen")),
    ];
    for (args, want) in cases {
        assert_eq!(sh(&mut c, args).await, *want, "{args:?}");
    }
}

/// XDEL: the count of entries it found, duplicates once, any bad ID refuses the lot;
/// a stream emptied by XDEL stays (and keeps its last ID).
async fn xdel_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    check(
        &mut c,
        &[
            (&["XADD", "s", "1-1", "a", "1"], "1-1"),
            (&["XADD", "s", "2-1", "b", "2"], "2-1"),
            (&["XADD", "s", "3-1", "c", "3"], "3-1"),
            (&["XADD", "s", "4-1", "d", "4"], "4-1"),
            (&["XDEL", "s", "2-1", "2-1", "9-9"], ":1"),
            (&["XDEL", "s", "2-1"], ":0"),
            (&["XDEL", "s", "abc"], INVALID_ID),
            (&["XDEL", "s", "1-1", "abc"], INVALID_ID),
            (&["XDEL", "s", "-"], INVALID_ID),
            (&["XDEL", "s", "+"], INVALID_ID),
            (&["XDEL", "s", "1-*"], INVALID_ID),
            (&["XLEN", "s"], ":3"),
            (&["XDEL", "s", "3"], ":0"),
            (&["XDEL", "nokey", "1-1"], ":0"),
            (&["XDEL", "s"], &arity("xdel")),
            (
                &["XRANGE", "s", "-", "+"],
                "[[1-1 [a 1]] [3-1 [c 3]] [4-1 [d 4]]]",
            ),
            (&["XDEL", "s", "1-1", "3-1", "4-1"], ":3"),
            (&["XLEN", "s"], ":0"),
            (&["EXISTS", "s"], ":1"),
            (&["XADD", "s", "4-1", "a", "1"], TOP_ITEM),
            (&["XADD", "s", "5-0", "a", "1"], "5-0"),
            (&["XRANGE", "s", "-", "+"], "[[5-0 [a 1]]]"),
        ],
    )
    .await;
}

/// XTRIM: exact MAXLEN and MINID, the count removed, and the errors.
async fn xtrim_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    add_n(&mut c, "t", 1..=4).await;
    check(
        &mut c,
        &[
            (&["XTRIM", "t", "MAXLEN", "2"], ":2"),
            (&["XRANGE", "t", "-", "+"], "[[3-1 [f v]] [4-1 [f v]]]"),
            (&["XTRIM", "t", "MAXLEN", "5"], ":0"),
            (&["XTRIM", "t", "MINID", "4"], ":1"),
            (&["XTRIM", "t", "MINID", "4-1"], ":0"),
            (&["XTRIM", "t", "MINID", "0"], ":0"),
            (&["XTRIM", "t", "minid", "=", "5"], ":1"),
            (&["XLEN", "t"], ":0"),
            (&["EXISTS", "t"], ":1"),
            (&["XTRIM", "nokey", "MAXLEN", "1"], ":0"),
            (&["EXISTS", "nokey"], ":0"),
            (&["XTRIM", "t", "MAXLEN", "~", "1", "LIMIT", "1"], ":0"),
            (&["XTRIM", "t", "maxlen", "~", "0"], ":0"),
            (&["XTRIM", "t"], &arity("xtrim")),
            (&["XTRIM", "t", "MAXLEN"], &arity("xtrim")),
            (&["XTRIM", "t", "FOO", "1"], SYNTAX),
            (&["XTRIM", "t", "MAXLEN", "1", "extra"], SYNTAX),
            (&["XTRIM", "t", "MAXLEN", "1", "LIMIT"], SYNTAX),
            (&["XTRIM", "t", "NOMKSTREAM", "MAXLEN", "1"], SYNTAX),
            (&["XTRIM", "t", "MAXLEN", "1", "LIMIT", "1"], LIMIT_NO_TILDE),
            (&["XTRIM", "t", "MAXLEN", "-1"], MAXLEN_NEGATIVE),
            (&["XTRIM", "t", "MAXLEN", "a"], NOT_INT),
            (&["XTRIM", "t", "MAXLEN", "1", "MINID", "1"], MAXLEN_MINID),
            (&["XTRIM", "t", "MAXLEN", "1", "MAXLEN", "2"], MAXLEN_MINID),
            (&["XTRIM", "t", "MINID", "abc"], INVALID_ID),
            (&["XTRIM", "t", "MINID", "-"], INVALID_ID),
            (
                &["XTRIM", "t", "MAXLEN", "~", "1", "LIMIT", "-1"],
                LIMIT_NEGATIVE,
            ),
            (
                &[
                    "XTRIM",
                    "t",
                    "MAXLEN",
                    "~",
                    "1",
                    "LIMIT",
                    "99999999999999999999",
                ],
                NOT_INT,
            ),
        ],
    )
    .await;
}

// ---------------------------------------------------------------------------------
// XREAD.

/// XREAD without BLOCK: COUNT, several keys (a key repeated too), `$`, a null reply
/// when nothing is new, and the errors.
async fn xread_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    ok(&mut c, &["XADD", "s", "2-1", "b", "2"]).await;
    ok(&mut c, &["XADD", "t", "3-1", "c", "3"]).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    let s_all = "[s [[1-1 [a 1]] [2-1 [b 2]]]]";
    let cases: &[(&[&str], String)] = &[
        (&["XREAD", "STREAMS", "s", "0"], format!("[{s_all}]")),
        (&["XREAD", "STREAMS", "s", "1"], format!("[{s_all}]")),
        (
            &["XREAD", "COUNT", "1", "STREAMS", "s", "t", "0", "0"],
            "[[s [[1-1 [a 1]]]] [t [[3-1 [c 3]]]]]".into(),
        ),
        (
            &["XREAD", "STREAMS", "s", "t", "1-1", "0"],
            "[[s [[2-1 [b 2]]]] [t [[3-1 [c 3]]]]]".into(),
        ),
        (&["XREAD", "STREAMS", "s", "t", "2-1", "3-1"], "nil".into()),
        (&["XREAD", "STREAMS", "s", "$"], "nil".into()),
        (&["XREAD", "STREAMS", "nokey", "0"], "nil".into()),
        (&["XREAD", "STREAMS", "nokey", "$"], "nil".into()),
        (
            &["XREAD", "STREAMS", "s", "nokey", "0", "0"],
            format!("[{s_all}]"),
        ),
        (
            &[
                "XREAD",
                "STREAMS",
                "s",
                "18446744073709551615-18446744073709551615",
            ],
            "nil".into(),
        ),
        (
            &["XREAD", "STREAMS", "s", "s", "1-1", "0"],
            format!("[[s [[2-1 [b 2]]]] {s_all}]"),
        ),
        (
            &["XREAD", "COUNT", "0", "STREAMS", "s", "0"],
            format!("[{s_all}]"),
        ),
        (
            &["XREAD", "COUNT", "-1", "STREAMS", "s", "0"],
            format!("[{s_all}]"),
        ),
        (
            &["XREAD", "COUNT", "5", "COUNT", "1", "STREAMS", "s", "0"],
            "[[s [[1-1 [a 1]]]]]".into(),
        ),
        (
            &["xread", "count", "1", "streams", "t", "0"],
            "[[t [[3-1 [c 3]]]]]".into(),
        ),
        (
            &["XREAD", "BLOCK", "10", "STREAMS", "s", "0"],
            format!("[{s_all}]"),
        ),
        (&["XREAD", "STREAMS", "str", "0"], WRONGTYPE.into()),
        (
            &["XREAD", "STREAMS", "s", "str", "0", "0"],
            WRONGTYPE.into(),
        ),
        (
            &["XREAD", "STREAMS", "s", "str", "9", "0"],
            WRONGTYPE.into(),
        ),
        (
            &["XREAD", "BLOCK", "10", "STREAMS", "str", "$"],
            WRONGTYPE.into(),
        ),
        (&["XREAD", "STREAMS", "s", "t", "0"], UNBALANCED.into()),
        (&["XREAD", "STREAMS", "s"], arity("xread")),
        (&["XREAD", "STREAMS"], arity("xread")),
        (&["XREAD", "s", "0"], arity("xread")),
        (&["XREAD", "COUNT", "1"], arity("xread")),
        (
            &["XREAD", "COUNT", "a", "STREAMS", "s", "0"],
            NOT_INT.into(),
        ),
        (&["XREAD", "COUNT", "STREAMS", "s", "0"], NOT_INT.into()),
        (
            &[
                "XREAD",
                "COUNT",
                "99999999999999999999",
                "STREAMS",
                "s",
                "0",
            ],
            NOT_INT.into(),
        ),
        (&["XREAD", "STREAMS", "s", "abc"], INVALID_ID.into()),
        (&["XREAD", "STREAMS", "s", "(1"], INVALID_ID.into()),
        (&["XREAD", "STREAMS", "s", "-"], INVALID_ID.into()),
        (&["XREAD", "STREAMS", "s", "+"], INVALID_ID.into()),
        (&["XREAD", "STREAMS", "s", ">"], GT_IN_XREAD.into()),
        (&["XREAD", "FOO", "STREAMS", "s", "0"], SYNTAX.into()),
        (
            &["XREAD", "BLOCK", "a", "STREAMS", "s", "0"],
            "!ERR timeout is not an integer or out of range".into(),
        ),
        (
            &["XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"],
            "!ERR timeout is not an integer or out of range".into(),
        ),
        (
            &["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"],
            "!ERR timeout is negative".into(),
        ),
        (
            &["XREAD", "NOACK", "STREAMS", "s", "0"],
            "!ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
                .into(),
        ),
    ];
    for (args, want) in cases {
        assert_eq!(sh(&mut c, args).await, *want, "{args:?}");
    }
}

/// The null replies' kinds (RESP2 bytes): a null array from XREAD, XREADGROUP and a
/// COUNT 0 range, a null bulk string from XADD NOMKSTREAM and for XINFO STREAM's
/// first-entry of an empty stream, XPENDING's summary of an empty PEL, and a deleted
/// entry in a consumer's history as a null array of fields.
async fn null_reply_kinds(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["XADD", "s", "NOMKSTREAM", "1-1", "a", "1"], "$-1\r\n"),
        (&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], "+OK\r\n"),
        (&["XREAD", "STREAMS", "s", "0"], "*-1\r\n"),
        (&["XREAD", "BLOCK", "5", "STREAMS", "s", "0"], "*-1\r\n"),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            "*-1\r\n",
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "5",
                "STREAMS",
                "s",
                ">",
            ],
            "*-1\r\n",
        ),
        (&["XRANGE", "s", "-", "+", "COUNT", "0"], "*-1\r\n"),
        (&["XREVRANGE", "s", "+", "-", "COUNT", "0"], "*-1\r\n"),
        (&["XRANGE", "s", "-", "+"], "*0\r\n"),
        (&["XPENDING", "s", "g"], "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"),
        (&["XPENDING", "s", "g", "-", "+", "10"], "*0\r\n"),
        (
            &["XINFO", "STREAM", "s"],
            "*20\r\n$6\r\nlength\r\n:0\r\n$15\r\nradix-tree-keys\r\n:0\r\n\
             $16\r\nradix-tree-nodes\r\n:N\r\n$17\r\nlast-generated-id\r\n$3\r\n0-0\r\n\
             $20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:0\r\n\
             $23\r\nrecorded-first-entry-id\r\n$3\r\n0-0\r\n$6\r\ngroups\r\n:1\r\n\
             $11\r\nfirst-entry\r\n$-1\r\n$10\r\nlast-entry\r\n$-1\r\n",
        ),
        (
            &["XAUTOCLAIM", "s", "g", "c", "0", "0"],
            "*3\r\n$3\r\n0-0\r\n*0\r\n*0\r\n",
        ),
        (&["XCLAIM", "s", "g", "c", "0", "1-1"], "*0\r\n"),
        (&["XADD", "s", "1-1", "a", "1"], "$3\r\n1-1\r\n"),
        (&["XADD", "s", "2-1", "b", "2"], "$3\r\n2-1\r\n"),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n\
             *2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
        ),
        (&["XDEL", "s", "1-1"], ":1\r\n"),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
            "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*-1\r\n\
             *2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(
            rax_masked(raw_exchange(&mut s, &[cmd]).await),
            *want,
            "{cmd:?}"
        );
    }
}

/// RESP3: XREAD and XREADGROUP answer a map of key to entries, nulls are `_`, XINFO's
/// field lists are maps, the PEL summary stays an array.
async fn resp3_shapes(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    raw_exchange(&mut s, &[&["HELLO", "3"]]).await;
    let cases: &[(&[&str], &str)] = &[
        (&["XADD", "s", "1-1", "a", "1"], "$3\r\n1-1\r\n"),
        (&["XADD", "t", "2-1", "b", "2"], "$3\r\n2-1\r\n"),
        (&["XADD", "x", "NOMKSTREAM", "1-1", "a", "1"], "_\r\n"),
        (
            &["XREAD", "STREAMS", "s", "t", "0", "0"],
            "%2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n\
             $1\r\nt\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
        ),
        (&["XREAD", "STREAMS", "s", "9"], "_\r\n"),
        (&["XREAD", "BLOCK", "5", "STREAMS", "s", "$"], "_\r\n"),
        (
            &["XRANGE", "s", "-", "+"],
            "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        (&["XRANGE", "s", "-", "+", "COUNT", "0"], "_\r\n"),
        (&["XGROUP", "CREATE", "s", "g", "0"], "+OK\r\n"),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            "_\r\n",
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "5",
                "STREAMS",
                "s",
                ">",
            ],
            "_\r\n",
        ),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
            "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        (
            &["XINFO", "GROUPS", "s"],
            "*1\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n\
             $7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n1-1\r\n\
             $12\r\nentries-read\r\n:1\r\n$3\r\nlag\r\n:0\r\n",
        ),
        (
            &["XINFO", "STREAM", "s"],
            "%10\r\n$6\r\nlength\r\n:1\r\n$15\r\nradix-tree-keys\r\n:1\r\n\
             $16\r\nradix-tree-nodes\r\n:N\r\n$17\r\nlast-generated-id\r\n$3\r\n1-1\r\n\
             $20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:1\r\n\
             $23\r\nrecorded-first-entry-id\r\n$3\r\n1-1\r\n$6\r\ngroups\r\n:1\r\n\
             $11\r\nfirst-entry\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n\
             $10\r\nlast-entry\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        (
            &["XPENDING", "s", "g"],
            "*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n1\r\n",
        ),
        (
            &["XAUTOCLAIM", "s", "g", "c", "0", "0", "JUSTID"],
            "*3\r\n$3\r\n0-0\r\n*1\r\n$3\r\n1-1\r\n*0\r\n",
        ),
        (&["XGROUP", "CREATE", "s", "g2", "0"], "+OK\r\n"),
        (&["XPENDING", "s", "g2"], "*4\r\n:0\r\n_\r\n_\r\n_\r\n"),
        (
            &["XINFO", "GROUPS", "s"],
            "*2\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n\
             $7\r\npending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$3\r\n1-1\r\n\
             $12\r\nentries-read\r\n:1\r\n$3\r\nlag\r\n:0\r\n\
             %6\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n\
             $7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n\
             $12\r\nentries-read\r\n_\r\n$3\r\nlag\r\n:1\r\n",
        ),
        (&["XSETID", "s", "3-0"], "+OK\r\n"),
    ];
    for (cmd, want) in cases {
        assert_eq!(
            rax_masked(raw_exchange(&mut s, &[cmd]).await),
            *want,
            "{cmd:?}"
        );
    }
}

/// XREAD BLOCK: served by another connection's XADD (a new key too; only the keys that
/// got entries in the reply; everything a MULTI added at once), timing out with a null,
/// `$` fixed when it blocks (a stream deleted and re-created with lower IDs does not
/// serve it), an explicit ID served only by a later entry, a string at the key serving
/// no one.
async fn xread_block(addr: SocketAddr) {
    let mut c = con(addr).await;
    wait_blocked(&mut c, 0).await;
    // A new key.
    let h = spawn_q(
        con(addr).await,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    assert_eq!(shown(&reply_of(h).await.1), "[[s [[1-1 [a 1]]]]]");
    // Two keys, one served.
    let h = spawn_q(
        con(addr).await,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "x", "$", "$"],
    );
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XADD", "x", "2-1", "b", "2"]).await;
    assert_eq!(shown(&reply_of(h).await.1), "[[x [[2-1 [b 2]]]]]");
    // A MULTI's entries together; COUNT still limits.
    let h = spawn_q(
        con(addr).await,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    let h1 = spawn_q(
        con(addr).await,
        &["XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    wait_blocked(&mut c, 2).await;
    let mut raw = TcpStream::connect(addr).await.unwrap();
    raw_exchange(
        &mut raw,
        &[
            &["MULTI"],
            &["XADD", "s", "3-1", "c", "3"],
            &["XADD", "s", "4-1", "d", "4"],
            &["EXEC"],
        ],
    )
    .await;
    assert_eq!(
        shown(&reply_of(h).await.1),
        "[[s [[3-1 [c 3]] [4-1 [d 4]]]]]"
    );
    assert_eq!(shown(&reply_of(h1).await.1), "[[s [[3-1 [c 3]]]]]");
    // A timeout: a null after the time.
    let t = Instant::now();
    assert_eq!(
        sh(&mut c, &["XREAD", "BLOCK", "150", "STREAMS", "s", "$"]).await,
        "nil"
    );
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(140) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // An explicit ID ahead of the stream: only a later entry serves it.
    let h = spawn_q(
        con(addr).await,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "7-0"],
    );
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XADD", "s", "6-1", "e", "5"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(blocked_clients(&mut c).await, 1, "6-1 is not after 7-0");
    ok(&mut c, &["XADD", "s", "8-1", "f", "6"]).await;
    assert_eq!(shown(&reply_of(h).await.1), "[[s [[8-1 [f 6]]]]]");
    // `$` is the last ID when it blocked: deleting the stream keeps the client blocked,
    // and a new stream's lower IDs do not serve it.
    let h = spawn_q(
        con(addr).await,
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
    );
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["DEL", "s"]).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(blocked_clients(&mut c).await, 1, "1-1 is not after 8-1");
    ok(&mut c, &["XADD", "s", "9-1", "g", "7"]).await;
    assert_eq!(shown(&reply_of(h).await.1), "[[s [[9-1 [g 7]]]]]");
    // The key becomes a string: the client stays blocked (a string serves no one), and
    // is served once the key is a stream with an entry again.
    let h = spawn_q(
        con(addr).await,
        &["XREAD", "BLOCK", "0", "STREAMS", "nokey", "$"],
    );
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["SET", "nokey", "v"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(blocked_clients(&mut c).await, 1, "SET serves no one");
    ok(&mut c, &["DEL", "nokey"]).await;
    ok(&mut c, &["XADD", "nokey", "1-1", "a", "1"]).await;
    assert_eq!(shown(&reply_of(h).await.1), "[[nokey [[1-1 [a 1]]]]]");
    wait_blocked(&mut c, 0).await;
}

// ---------------------------------------------------------------------------------
// Consumer groups.

/// XGROUP's subcommands, their replies and errors, and XINFO GROUPS after them.
async fn xgroup_subcommands(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    let unknown = |sub: &str| {
        format!(
            "!ERR unknown subcommand or wrong number of arguments for '{sub}'. Try XGROUP HELP."
        )
    };
    let nogroup = "!NOGROUP No such consumer group 'nog' for key name 's'";
    let cases: &[(&[&str], String)] = &[
        (&["XGROUP", "CREATE", "s", "g", "$"], XGROUP_NO_KEY.into()),
        (
            &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
            "OK".into(),
        ),
        (
            &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
            BUSYGROUP.into(),
        ),
        (&["XGROUP", "CREATE", "s", "g", "0"], BUSYGROUP.into()),
        (&["XGROUP", "CREATE", "s", "g2", "0"], "OK".into()),
        (&["XGROUP", "CREATE", "s", "g3", "abc"], INVALID_ID.into()),
        (&["XGROUP", "CREATE", "s", "g3", "-"], INVALID_ID.into()),
        (&["XGROUP", "CREATE", "s", "g3", "+"], INVALID_ID.into()),
        (&["XGROUP", "CREATE", "s", "g3", "1-*"], INVALID_ID.into()),
        (&["XGROUP", "CREATE", "s", "g3", "5"], "OK".into()),
        (
            &["XGROUP", "CREATE", "s", "g4", "$", "ENTRIESREAD", "5"],
            "OK".into(),
        ),
        (
            &["XGROUP", "CREATE", "s", "g5", "$", "ENTRIESREAD", "-1"],
            "OK".into(),
        ),
        (
            &["XGROUP", "CREATE", "s", "g6", "$", "ENTRIESREAD", "-2"],
            ENTRIESREAD_RANGE.into(),
        ),
        (
            &["XGROUP", "CREATE", "s", "g7", "$", "ENTRIESREAD", "a"],
            NOT_INT.into(),
        ),
        (
            &["XGROUP", "CREATE", "s", "g8", "$", "FOO"],
            unknown("CREATE"),
        ),
        (
            &[
                "XGROUP",
                "CREATE",
                "s",
                "g9",
                "$",
                "MKSTREAM",
                "ENTRIESREAD",
                "3",
            ],
            "OK".into(),
        ),
        (&["XGROUP", "CREATE", "s"], arity("xgroup|create")),
        (&["XGROUP", "CREATE", "s", "g"], arity("xgroup|create")),
        (
            &["XGROUP", "FOO"],
            "!ERR unknown subcommand 'FOO'. Try XGROUP HELP.".into(),
        ),
        (&["XGROUP"], arity("xgroup")),
        (&["XGROUP", "CREATE", "str", "g", "$"], WRONGTYPE.into()),
        (
            &["XGROUP", "CREATE", "str", "g", "$", "MKSTREAM"],
            WRONGTYPE.into(),
        ),
        (
            &["XINFO", "GROUPS", "s"],
            "[[name g consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g2 consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g3 consumers :0 pending :0 last-delivered-id 5-0 entries-read nil lag :0] \
              [name g4 consumers :0 pending :0 last-delivered-id 0-0 entries-read :5 lag :0] \
              [name g5 consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g9 consumers :0 pending :0 last-delivered-id 0-0 entries-read :3 lag :0]]"
                .into(),
        ),
        (&["XGROUP", "SETID", "s", "g", "0"], "OK".into()),
        (
            &["XGROUP", "SETID", "s", "g", "7", "ENTRIESREAD", "7"],
            "OK".into(),
        ),
        (&["XGROUP", "SETID", "s", "nog", "0"], nogroup.into()),
        (
            &["XGROUP", "SETID", "nokey", "g", "0"],
            XGROUP_NO_KEY.into(),
        ),
        (&["XGROUP", "SETID", "s", "g", "abc"], INVALID_ID.into()),
        (
            &["XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "-3"],
            ENTRIESREAD_RANGE.into(),
        ),
        (&["XGROUP", "SETID", "s", "g", "$", "FOO"], unknown("SETID")),
        (&["XGROUP", "SETID", "s", "g"], arity("xgroup|setid")),
        (&["XGROUP", "SETID", "str", "g", "0"], WRONGTYPE.into()),
        (
            &["XGROUP", "CREATECONSUMER", "s", "g", "alice"],
            ":1".into(),
        ),
        (
            &["XGROUP", "CREATECONSUMER", "s", "g", "alice"],
            ":0".into(),
        ),
        (&["XGROUP", "CREATECONSUMER", "s", "g", "bob"], ":1".into()),
        (
            &["XGROUP", "CREATECONSUMER", "s", "nog", "alice"],
            nogroup.into(),
        ),
        (
            &["XGROUP", "CREATECONSUMER", "nokey", "g", "alice"],
            XGROUP_NO_KEY.into(),
        ),
        (
            &["XGROUP", "CREATECONSUMER", "s", "g"],
            arity("xgroup|createconsumer"),
        ),
        (
            &["XGROUP", "CREATECONSUMER", "str", "g", "a"],
            WRONGTYPE.into(),
        ),
        (
            &["XINFO", "GROUPS", "s"],
            "[[name g consumers :2 pending :0 last-delivered-id 7-0 entries-read :7 lag :0] \
              [name g2 consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g3 consumers :0 pending :0 last-delivered-id 5-0 entries-read nil lag :0] \
              [name g4 consumers :0 pending :0 last-delivered-id 0-0 entries-read :5 lag :0] \
              [name g5 consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g9 consumers :0 pending :0 last-delivered-id 0-0 entries-read :3 lag :0]]"
                .into(),
        ),
        (&["XGROUP", "DELCONSUMER", "s", "g", "alice"], ":0".into()),
        (&["XGROUP", "DELCONSUMER", "s", "g", "alice"], ":0".into()),
        (
            &["XGROUP", "DELCONSUMER", "s", "nog", "alice"],
            nogroup.into(),
        ),
        (
            &["XGROUP", "DELCONSUMER", "nokey", "g", "alice"],
            XGROUP_NO_KEY.into(),
        ),
        (
            &["XGROUP", "DELCONSUMER", "s", "g"],
            arity("xgroup|delconsumer"),
        ),
        (&["XGROUP", "DESTROY", "s", "g"], ":1".into()),
        (&["XGROUP", "DESTROY", "s", "g"], ":0".into()),
        (&["XGROUP", "DESTROY", "nokey", "g"], XGROUP_NO_KEY.into()),
        (&["XGROUP", "DESTROY", "s"], arity("xgroup|destroy")),
        (&["XGROUP", "DESTROY", "str", "g"], WRONGTYPE.into()),
        (&["XGROUP", "CREATE", "s", "", "$"], "OK".into()),
        (
            &["XGROUP", "CREATE", "nokey", "g", "0"],
            XGROUP_NO_KEY.into(),
        ),
        (
            &["XGROUP", "CREATE", "nokey", "g", "0", "mkstream"],
            "OK".into(),
        ),
        (&["TYPE", "nokey"], "+stream".into()),
        (&["XLEN", "nokey"], ":0".into()),
        (
            &["XINFO", "GROUPS", "s"],
            "[[name \"\" consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g2 consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g3 consumers :0 pending :0 last-delivered-id 5-0 entries-read nil lag :0] \
              [name g4 consumers :0 pending :0 last-delivered-id 0-0 entries-read :5 lag :0] \
              [name g5 consumers :0 pending :0 last-delivered-id 0-0 entries-read nil lag :0] \
              [name g9 consumers :0 pending :0 last-delivered-id 0-0 entries-read :3 lag :0]]"
                .into(),
        ),
    ];
    for (args, want) in cases {
        assert_eq!(sh(&mut c, args).await, *want, "{args:?}");
    }
    let help: Vec<String> = q(&mut c, &["XGROUP", "HELP"]).await.unwrap();
    assert_eq!(
        help,
        [
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Prints this help.",
        ]
    );
}

/// XREADGROUP (`>` and a consumer's history, COUNT, NOACK, several keys) and XACK;
/// delivery counts (a history read counts a delivery) as XPENDING reports them.
async fn xreadgroup_and_xack(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    ok(&mut c, &["XADD", "s", "2-1", "b", "2"]).await;
    ok(&mut c, &["XADD", "s", "3-1", "c", "3"]).await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    let nogroup = |k: &str, g: &str| {
        format!(
            "!NOGROUP No such key '{k}' or consumer group '{g}' in XREADGROUP with GROUP option"
        )
    };
    let cases: &[(&[&str], String)] = &[
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "COUNT",
                "1",
                "STREAMS",
                "s",
                ">",
            ],
            "[[s [[1-1 [a 1]]]]]".into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
            "[[s [[2-1 [b 2]] [3-1 [c 3]]]]]".into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
            "nil".into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"],
            "[[s [[1-1 [a 1]]]]]".into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"],
            "[[s [[2-1 [b 2]] [3-1 [c 3]]]]]".into(),
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "bob",
                "COUNT",
                "1",
                "STREAMS",
                "s",
                "2-1",
            ],
            "[[s [[3-1 [c 3]]]]]".into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "0"],
            "[[s []]]".into(),
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "NOACK",
                "STREAMS",
                "s",
                "0",
            ],
            "[[s [[1-1 [a 1]]]]]".into(),
        ),
        (
            &["XREADGROUP", "GROUP", "nog", "alice", "STREAMS", "s", ">"],
            nogroup("s", "nog"),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "nokey", ">"],
            nogroup("nokey", "g"),
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "STREAMS",
                "s",
                "nokey",
                ">",
                ">",
            ],
            nogroup("nokey", "g"),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "$"],
            DOLLAR_IN_GROUP.into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "abc"],
            INVALID_ID.into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "str", ">"],
            WRONGTYPE.into(),
        ),
        (
            &["XREADGROUP", "GROUP", "g", "STREAMS", "s", ">"],
            arity("xreadgroup"),
        ),
        (&["XREADGROUP", "STREAMS", "s", ">"], arity("xreadgroup")),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "STREAMS",
                "s",
                "t",
                ">",
            ],
            UNBALANCED.into(),
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "COUNT",
                "x",
                "STREAMS",
                "s",
                ">",
            ],
            NOT_INT.into(),
        ),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "FOO",
                "STREAMS",
                "s",
                ">",
            ],
            SYNTAX.into(),
        ),
    ];
    for (args, want) in cases {
        assert_eq!(sh(&mut c, args).await, *want, "{args:?}");
    }
    assert_eq!(
        pending(&mut c, &["XPENDING", "s", "g", "-", "+", "10"], IDLE_MAX).await,
        "[[1-1 alice T :3] [2-1 bob T :2] [3-1 bob T :3]]"
    );
    assert_eq!(
        consumers(&mut c, "s", "g").await,
        "[[name alice pending :1 idle T] [name bob pending :2 idle T] \
         [name carol pending :0 idle T]]"
    );
    check(
        &mut c,
        &[
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :3 pending :3 last-delivered-id 3-1 entries-read :3 lag :0]]",
            ),
            (&["XACK", "s", "g", "1-1", "9-9"], ":1"),
            (&["XACK", "s", "g", "1-1"], ":0"),
            (&["XACK", "s", "g", "abc"], INVALID_ID),
            (&["XACK", "s", "g", "2-1", "abc"], INVALID_ID),
            (&["XACK", "s", "nog", "2-1"], ":0"),
            (&["XACK", "nokey", "g", "2-1"], ":0"),
            (&["XACK", "s", "g"], &arity("xack")),
            (&["XACK", "s", "g", "2", "3"], ":0"),
            (&["XACK", "str", "g", "1-1"], WRONGTYPE),
            (&["XPENDING", "s", "g"], "[:2 2-1 3-1 [[bob 2]]]"),
            (&["XADD", "s", "4-1", "d", "4"], "4-1"),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "dave",
                    "NOACK",
                    "STREAMS",
                    "s",
                    ">",
                ],
                "[[s [[4-1 [d 4]]]]]",
            ),
            (&["XPENDING", "s", "g"], "[:2 2-1 3-1 [[bob 2]]]"),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :4 pending :2 last-delivered-id 4-1 entries-read :4 lag :0]]",
            ),
            // Several keys: only those with something new are in the reply.
            (&["XADD", "t", "1-1", "x", "y"], "1-1"),
            (&["XGROUP", "CREATE", "t", "g", "0"], "OK"),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "eve",
                    "STREAMS",
                    "s",
                    "t",
                    ">",
                    ">",
                ],
                "[[t [[1-1 [x y]]]]]",
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "eve",
                    "STREAMS",
                    "s",
                    "t",
                    "0",
                    "0",
                ],
                "[[s []] [t [[1-1 [x y]]]]]",
            ),
            (&["XACK", "t", "g", "1-1"], ":1"),
            (&["XACK", "s", "g", "2-1", "3-1"], ":2"),
            (&["XPENDING", "s", "g"], "[:0 nil nil nil]"),
        ],
    )
    .await;
}

/// Which commands create a consumer: a read of `>` only when it delivers something, a
/// history read always, XCLAIM and XAUTOCLAIM only when they claim something,
/// CREATECONSUMER. Consumers are listed in name order.
async fn consumers_are_created_when(addr: SocketAddr) {
    let mut c = con(addr).await;
    check(
        &mut c,
        &[
            (&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], "OK"),
            (
                &["XREADGROUP", "GROUP", "g", "c3", "STREAMS", "s", ">"],
                "nil",
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c4",
                    "BLOCK",
                    "10",
                    "STREAMS",
                    "s",
                    ">",
                ],
                "nil",
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c5", "STREAMS", "s", "0"],
                "[[s []]]",
            ),
            (&["XADD", "s", "1-1", "a", "1"], "1-1"),
            (
                &["XREADGROUP", "GROUP", "g", "c6", "STREAMS", "s", ">"],
                "[[s [[1-1 [a 1]]]]]",
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c7", "STREAMS", "s", ">"],
                "nil",
            ),
            (&["XCLAIM", "s", "g", "c9", "0", "1-1", "JUSTID"], "[1-1]"),
            (&["XCLAIM", "s", "g", "c10", "0", "9-9"], "[]"),
            (&["XCLAIM", "s", "g", "c10", "99999999", "1-1"], "[]"),
            (
                &["XAUTOCLAIM", "s", "g", "c12", "99999999", "0", "JUSTID"],
                "[0-0 [] []]",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "C11", "0", "0", "JUSTID"],
                "[0-0 [1-1] []]",
            ),
            (&["XGROUP", "CREATECONSUMER", "s", "g", "c1"], ":1"),
        ],
    )
    .await;
    assert_eq!(
        consumers(&mut c, "s", "g").await,
        "[[name C11 pending :1 idle T] [name c1 pending :0 idle T] \
         [name c5 pending :0 idle T] [name c6 pending :0 idle T] [name c9 pending :0 idle T]]"
    );
    check(
        &mut c,
        &[
            (&["XGROUP", "DELCONSUMER", "s", "g", "C11"], ":1"),
            (&["XPENDING", "s", "g"], "[:0 nil nil nil]"),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :4 pending :0 last-delivered-id 1-1 entries-read :1 lag :0]]",
            ),
        ],
    )
    .await;
}

/// The ID 18446744073709551615-18446744073709551615 in XREADGROUP is `>` (Redis's
/// marker for it): new entries, delivered and added to the PEL; one less is a history
/// read.
async fn max_id_in_xreadgroup_is_new_entries(addr: SocketAddr) {
    let mut c = con(addr).await;
    let max = "18446744073709551615-18446744073709551615";
    check(
        &mut c,
        &[
            (&["XADD", "s", "1-1", "a", "1"], "1-1"),
            (&["XADD", "s", "2-1", "b", "2"], "2-1"),
            (&["XGROUP", "CREATE", "s", "g", "0"], "OK"),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "COUNT",
                    "1",
                    "STREAMS",
                    "s",
                    max,
                ],
                "[[s [[1-1 [a 1]]]]]",
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", max],
                "[[s [[2-1 [b 2]]]]]",
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", max],
                "nil",
            ),
            (&["XPENDING", "s", "g"], "[:2 1-1 2-1 [[c 2]]]"),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :1 pending :2 last-delivered-id 2-1 entries-read :2 lag :0]]",
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "d",
                    "STREAMS",
                    "s",
                    "18446744073709551615-18446744073709551614",
                ],
                "[[s []]]",
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
                "[[s [[1-1 [a 1]] [2-1 [b 2]]]]]",
            ),
        ],
    )
    .await;
}

/// XREADGROUP BLOCK: served by XADD (first blocked first, one entry each), NOACK, a
/// history ID never blocks, a timeout creates no consumer; a blocked reader is answered
/// with an error when its group is destroyed or its key deleted or renamed; SETID moving
/// the group back serves it only at the next XADD.
async fn xreadgroup_block(addr: SocketAddr) {
    let mut c = con(addr).await;
    wait_blocked(&mut c, 0).await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]).await;
    let read = |who: &'static str, ms: &'static str| {
        [
            "XREADGROUP",
            "GROUP",
            "g",
            who,
            "BLOCK",
            ms,
            "STREAMS",
            "s",
            ">",
        ]
    };
    let h1 = spawn_q(con(addr).await, &read("c1", "0"));
    wait_blocked(&mut c, 1).await;
    let h2 = spawn_q(con(addr).await, &read("c2", "0"));
    wait_blocked(&mut c, 2).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    assert_eq!(shown(&reply_of(h1).await.1), "[[s [[1-1 [a 1]]]]]");
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XADD", "s", "2-1", "b", "2"]).await;
    assert_eq!(shown(&reply_of(h2).await.1), "[[s [[2-1 [b 2]]]]]");
    assert_eq!(
        sh(&mut c, &["XPENDING", "s", "g"]).await,
        "[:2 1-1 2-1 [[c1 1] [c2 1]]]"
    );
    // NOACK: delivered, not pending.
    let h = spawn_q(
        con(addr).await,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c3",
            "BLOCK",
            "0",
            "NOACK",
            "STREAMS",
            "s",
            ">",
        ],
    );
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XADD", "s", "3-1", "c", "3"]).await;
    assert_eq!(shown(&reply_of(h).await.1), "[[s [[3-1 [c 3]]]]]");
    assert_eq!(
        sh(&mut c, &["XPENDING", "s", "g"]).await,
        "[:2 1-1 2-1 [[c1 1] [c2 1]]]"
    );
    // A history read answers at once.
    let t = Instant::now();
    assert_eq!(
        sh(
            &mut c,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c1",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                "0"
            ]
        )
        .await,
        "[[s [[1-1 [a 1]]]]]"
    );
    assert!(t.elapsed() < Duration::from_secs(2));
    // A timeout: null, and no consumer made.
    let t = Instant::now();
    assert_eq!(sh(&mut c, &read("c4", "100")).await, "nil");
    assert!(
        t.elapsed() >= Duration::from_millis(90),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        consumers(&mut c, "s", "g").await,
        "[[name c1 pending :1 idle T] [name c2 pending :1 idle T] [name c3 pending :0 idle T]]"
    );
    // The group destroyed.
    let h = spawn_q(con(addr).await, &read("c1", "0"));
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XGROUP", "DESTROY", "s", "g"]).await;
    assert_eq!(
        shown(&reply_of(h).await.1),
        "!NOGROUP the consumer group this client was blocked on no longer exists"
    );
    // The key deleted, renamed, flushed.
    let unblocked = "!UNBLOCKED the stream key no longer exists";
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]).await;
    let h = spawn_q(con(addr).await, &read("c1", "0"));
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["DEL", "s"]).await;
    assert_eq!(shown(&reply_of(h).await.1), unblocked);
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]).await;
    let h = spawn_q(con(addr).await, &read("c1", "0"));
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["RENAME", "s", "s2"]).await;
    assert_eq!(shown(&reply_of(h).await.1), unblocked);
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]).await;
    let h = spawn_q(con(addr).await, &read("c1", "0"));
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["DEL", "s"]).await;
    ok(&mut c, &["SET", "s", "x"]).await;
    assert_eq!(shown(&reply_of(h).await.1), unblocked);
    ok(&mut c, &["DEL", "s"]).await;
    // SETID back to an entry does not serve the reader; the next XADD does, with all
    // that the group has not read since.
    ok(&mut c, &["XADD", "s", "5-1", "e", "5"]).await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]).await;
    let h = spawn_q(con(addr).await, &read("c1", "0"));
    wait_blocked(&mut c, 1).await;
    ok(&mut c, &["XGROUP", "SETID", "s", "g", "0"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(blocked_clients(&mut c).await, 1, "SETID serves no one");
    ok(&mut c, &["XADD", "s", "6-1", "f", "6"]).await;
    assert_eq!(
        shown(&reply_of(h).await.1),
        "[[s [[5-1 [e 5]] [6-1 [f 6]]]]]"
    );
    wait_blocked(&mut c, 0).await;
}

/// A row of XPENDING's extended reply: (id, consumer, idle, deliveries).
type PelRow = (String, String, i64, i64);

/// An XPENDING extended reply's rows.
async fn pel(c: &mut MultiplexedConnection, args: &[&str]) -> Vec<PelRow> {
    let v: Vec<PelRow> = q(c, args).await.unwrap_or_else(|e| panic!("{args:?}: {e}"));
    v
}

/// Sets up s (1-1 a 1 .. n-1) with group g at 0 and `reader` holding all of it.
async fn all_pending(c: &mut MultiplexedConnection, n: u64, reader: &str) {
    for i in 1..=n {
        let f = ((b'a' + (i - 1) as u8) as char).to_string();
        ok(c, &["XADD", "s", &format!("{i}-1"), &f, &i.to_string()]).await;
    }
    ok(c, &["XGROUP", "CREATE", "s", "g", "0"]).await;
    ok(
        c,
        &["XREADGROUP", "GROUP", "g", reader, "STREAMS", "s", ">"],
    )
    .await;
}

/// XPENDING: the summary, the extended form (IDLE, exclusive and incomplete bounds,
/// COUNT, a consumer filter) and the errors.
async fn xpending_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    all_pending(&mut c, 3, "alice").await;
    ok(&mut c, &["XCLAIM", "s", "g", "bob", "0", "2-1", "3-1"]).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    check(
        &mut c,
        &[
            (&["XPENDING", "s", "g"], "[:3 1-1 3-1 [[alice 1] [bob 2]]]"),
            (&["XPENDING", "s", "g", "-", "+", "0"], "[]"),
            (&["XPENDING", "s", "g", "-", "+", "-1"], "[]"),
            (&["XPENDING", "s", "g", "-", "+", "10", "nobody"], "[]"),
            (
                &["XPENDING", "s", "g", "IDLE", "99999999", "-", "+", "10"],
                "[]",
            ),
            (&["XPENDING", "s", "g", "(3-1", "+", "10"], "[]"),
            (&["XPENDING", "s", "g", "-", "+"], SYNTAX),
            (&["XPENDING", "s", "g", "-"], SYNTAX),
            (&["XPENDING", "s", "g", "IDLE", "0"], SYNTAX),
            (
                &["XPENDING", "s", "g", "IDLE", "a", "-", "+", "10"],
                NOT_INT,
            ),
            (&["XPENDING", "s", "g", "abc", "+", "10"], INVALID_ID),
            (&["XPENDING", "s", "g", "-", "abc", "10"], INVALID_ID),
            (&["XPENDING", "s", "g", "-", "+", "a"], NOT_INT),
            (
                &["XPENDING", "s", "nog"],
                "!NOGROUP No such key 's' or consumer group 'nog'",
            ),
            (
                &["XPENDING", "nokey", "g"],
                "!NOGROUP No such key 'nokey' or consumer group 'g'",
            ),
            (&["XPENDING", "str", "g"], WRONGTYPE),
            (&["XPENDING", "s"], &arity("xpending")),
        ],
    )
    .await;
    let rows = |v: &[(&str, &str, i64)]| -> Vec<(String, String, i64)> {
        v.iter()
            .map(|(i, c, n)| (i.to_string(), c.to_string(), *n))
            .collect()
    };
    let strip = |v: Vec<PelRow>| -> Vec<(String, String, i64)> {
        for r in &v {
            assert!((0..=IDLE_MAX).contains(&r.2), "idle {r:?}");
        }
        v.into_iter().map(|(i, c, _, n)| (i, c, n)).collect()
    };
    type Row<'a> = (&'a str, &'a str, i64);
    let cases: &[(&[&str], &[Row])] = &[
        (
            &["XPENDING", "s", "g", "-", "+", "10"],
            &[("1-1", "alice", 1), ("2-1", "bob", 2), ("3-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "IDLE", "0", "-", "+", "10"],
            &[("1-1", "alice", 1), ("2-1", "bob", 2), ("3-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "idle", "0", "-", "+", "10", "bob"],
            &[("2-1", "bob", 2), ("3-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "-", "+", "10", "bob", "extra"],
            &[("2-1", "bob", 2), ("3-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "-", "+", "1"],
            &[("1-1", "alice", 1)],
        ),
        (
            &["XPENDING", "s", "g", "(1-1", "+", "10"],
            &[("2-1", "bob", 2), ("3-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "-", "(3-1", "10"],
            &[("1-1", "alice", 1), ("2-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "2", "2", "10"],
            &[("2-1", "bob", 2)],
        ),
        (
            &["XPENDING", "s", "g", "(2", "+", "10"],
            &[("2-1", "bob", 2), ("3-1", "bob", 2)],
        ),
        (&["XPENDING", "s", "g", "+", "-", "10"], &[]),
    ];
    for (args, want) in cases {
        assert_eq!(strip(pel(&mut c, args).await), rows(want), "{args:?}");
    }
    // IDLE filters by idle time: a claim with IDLE 100000 makes 2-1 old.
    ok(
        &mut c,
        &[
            "XCLAIM", "s", "g", "bob", "0", "2-1", "IDLE", "100000", "JUSTID",
        ],
    )
    .await;
    let got = pel(
        &mut c,
        &["XPENDING", "s", "g", "IDLE", "50000", "-", "+", "10"],
    )
    .await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].0.as_str(), got[0].1.as_str(), got[0].3),
        ("2-1", "bob", 2)
    );
    assert!(
        (100_000..=100_000 + IDLE_MAX).contains(&got[0].2),
        "{got:?}"
    );
}

/// XCLAIM: min-idle-time, IDLE, TIME, RETRYCOUNT, FORCE, JUSTID (no delivery counted),
/// LASTID; a deleted entry leaves the PEL; the errors.
async fn xclaim_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    all_pending(&mut c, 4, "alice").await;
    check(
        &mut c,
        &[
            (&["XCLAIM", "s", "g", "bob", "0", "1-1"], "[[1-1 [a 1]]]"),
            (&["XCLAIM", "s", "g", "bob", "0", "2-1", "JUSTID"], "[2-1]"),
            (&["XCLAIM", "s", "g", "bob", "99999999", "3-1"], "[]"),
            (
                &[
                    "XCLAIM",
                    "s",
                    "g",
                    "bob",
                    "0",
                    "3-1",
                    "IDLE",
                    "5000",
                    "RETRYCOUNT",
                    "7",
                ],
                "[[3-1 [c 3]]]",
            ),
            (&["XCLAIM", "s", "g", "bob", "0", "9-9"], "[]"),
            (&["XCLAIM", "s", "g", "bob", "0", "9-9", "FORCE"], "[]"),
        ],
    )
    .await;
    let got = pel(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]).await;
    let plain: Vec<_> = got
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str(), r.3))
        .collect();
    assert_eq!(
        plain,
        [
            ("1-1", "bob", 2),
            ("2-1", "bob", 1),
            ("3-1", "bob", 7),
            ("4-1", "alice", 1)
        ]
    );
    assert!((5000..=5000 + IDLE_MAX).contains(&got[2].2), "{got:?}");
    assert!((0..=IDLE_MAX).contains(&got[0].2), "{got:?}");
    // FORCE makes a PEL entry for an entry no one had, and only for an entry that exists.
    check(
        &mut c,
        &[
            (&["XADD", "s", "5-1", "e", "5"], "5-1"),
            (&["XCLAIM", "s", "g", "carol", "0", "5-1"], "[]"),
            (
                &["XCLAIM", "s", "g", "carol", "0", "5-1", "FORCE", "JUSTID"],
                "[5-1]",
            ),
        ],
    )
    .await;
    let got = pel(&mut c, &["XPENDING", "s", "g", "5-1", "5-1", "1"]).await;
    assert_eq!((got[0].1.as_str(), got[0].3), ("carol", 1), "{got:?}");
    // A deleted entry: XCLAIM drops it from the PEL.
    check(
        &mut c,
        &[
            (&["XDEL", "s", "4-1"], ":1"),
            (&["XCLAIM", "s", "g", "carol", "0", "4-1"], "[]"),
            (&["XPENDING", "s", "g"], "[:4 1-1 5-1 [[bob 3] [carol 1]]]"),
            // LASTID moves last-delivered-id forward only.
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "LASTID", "10-0"],
                "[[1-1 [a 1]]]",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "LASTID", "0-1"],
                "[[1-1 [a 1]]]",
            ),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :3 pending :4 last-delivered-id 10-0 entries-read :4 lag :1]]",
            ),
            // Negative min-idle-time and RETRYCOUNT -1 are taken (as 0 and as absent).
            (
                &["XCLAIM", "s", "g", "carol", "-5", "1-1", "JUSTID"],
                "[1-1]",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "RETRYCOUNT", "-1"],
                "[[1-1 [a 1]]]",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "2-1", "JUSTID"],
                "[1-1 2-1]",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "LASTID", "abc"],
                INVALID_ID,
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "abc"],
                "!ERR Unrecognized XCLAIM option 'abc'",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "FOO"],
                "!ERR Unrecognized XCLAIM option 'FOO'",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "IDLE"],
                "!ERR Unrecognized XCLAIM option 'IDLE'",
            ),
            (
                &[
                    "XCLAIM", "s", "g", "carol", "0", "1-1", "2-1", "FOO", "JUSTID",
                ],
                "!ERR Unrecognized XCLAIM option 'FOO'",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "abc", "1-1"],
                "!ERR Invalid min-idle-time argument for XCLAIM",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "IDLE", "abc"],
                "!ERR Invalid IDLE option argument for XCLAIM",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "TIME", "abc"],
                "!ERR Invalid TIME option argument for XCLAIM",
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "1-1", "RETRYCOUNT", "abc"],
                "!ERR Invalid RETRYCOUNT option argument for XCLAIM",
            ),
            (
                &["XCLAIM", "s", "nog", "carol", "0", "1-1"],
                "!NOGROUP No such key 's' or consumer group 'nog'",
            ),
            (
                &["XCLAIM", "nokey", "g", "carol", "0", "1-1"],
                "!NOGROUP No such key 'nokey' or consumer group 'g'",
            ),
            (&["XCLAIM", "s", "g", "carol", "0"], &arity("xclaim")),
        ],
    )
    .await;
    let got = pel(&mut c, &["XPENDING", "s", "g", "1-1", "2-1", "10"]).await;
    let plain: Vec<_> = got
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str(), r.3))
        .collect();
    assert_eq!(plain, [("1-1", "carol", 5), ("2-1", "carol", 1)]);
    // TIME: a delivery time in ms (idle from it); one in the future is now.
    let t0 = now_ms(&mut c).await;
    ok(
        &mut c,
        &[
            "XCLAIM", "s", "g", "carol", "0", "1-1", "TIME", "1000", "JUSTID",
        ],
    )
    .await;
    ok(
        &mut c,
        &[
            "XCLAIM",
            "s",
            "g",
            "carol",
            "0",
            "2-1",
            "TIME",
            "99999999999999",
            "JUSTID",
        ],
    )
    .await;
    ok(
        &mut c,
        &[
            "XCLAIM", "s", "g", "carol", "0", "3-1", "IDLE", "-5", "JUSTID",
        ],
    )
    .await;
    let t1 = now_ms(&mut c).await;
    let got = pel(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]).await;
    assert!(
        (t0 - 1000..=t1 - 1000 + IDLE_MAX).contains(&got[0].2),
        "{got:?}"
    );
    assert!((0..=IDLE_MAX).contains(&got[1].2), "{got:?}");
    assert!((0..=IDLE_MAX).contains(&got[2].2), "{got:?}");
    let plain: Vec<_> = got
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str(), r.3))
        .collect();
    assert_eq!(
        plain,
        [
            ("1-1", "carol", 5),
            ("2-1", "carol", 1),
            ("3-1", "carol", 7),
            ("5-1", "carol", 1)
        ]
    );
    assert_eq!(
        consumers(&mut c, "s", "g").await,
        "[[name alice pending :0 idle T] [name bob pending :0 idle T] [name carol pending :4 idle T]]"
    );
}

/// XAUTOCLAIM: the cursor, COUNT (deleted entries count too), JUSTID, the deleted
/// entries' IDs (7.0's third element, dropped from the PEL), the errors.
async fn xautoclaim_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    all_pending(&mut c, 5, "alice").await;
    ok(&mut c, &["XDEL", "s", "2-1", "4-1"]).await;
    check(
        &mut c,
        &[
            (
                &["XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "2"],
                "[3-1 [[1-1 [a 1]]] [2-1]]",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "bob", "0", "3-1", "COUNT", "2"],
                "[5-1 [[3-1 [c 3]]] [4-1]]",
            ),
            (&["XPENDING", "s", "g"], "[:3 1-1 5-1 [[alice 1] [bob 2]]]"),
            (
                &["XAUTOCLAIM", "s", "g", "bob", "0", "0", "JUSTID"],
                "[0-0 [1-1 3-1 5-1] []]",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "99999999", "0"],
                "[0-0 [] []]",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "(1-1"],
                "[0-0 [[3-1 [c 3]] [5-1 [e 5]]] []]",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "-"],
                "[0-0 [[1-1 [a 1]] [3-1 [c 3]] [5-1 [e 5]]] []]",
            ),
            (&["XAUTOCLAIM", "s", "g", "carol", "0", "+"], "[0-0 [] []]"),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "-1", "5-1", "COUNT", "1"],
                "[0-0 [[5-1 [e 5]]] []]",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "6", "COUNT", "1"],
                "[0-0 [] []]",
            ),
            (
                &[
                    "XAUTOCLAIM",
                    "s",
                    "g",
                    "carol",
                    "0",
                    "0",
                    "COUNT",
                    "1",
                    "JUSTID",
                ],
                "[3-1 [1-1] []]",
            ),
            (
                &[
                    "XAUTOCLAIM",
                    "s",
                    "g",
                    "carol",
                    "0",
                    "0",
                    "JUSTID",
                    "JUSTID",
                    "COUNT",
                    "99999999999",
                ],
                "[0-0 [1-1 3-1 5-1] []]",
            ),
            (&["XAUTOCLAIM", "s", "g", "carol", "0", "abc"], INVALID_ID),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "abc", "0"],
                "!ERR Invalid min-idle-time argument for XAUTOCLAIM",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "0"],
                COUNT_POSITIVE,
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "-1"],
                COUNT_POSITIVE,
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "a"],
                COUNT_POSITIVE,
            ),
            (
                &[
                    "XAUTOCLAIM",
                    "s",
                    "g",
                    "carol",
                    "0",
                    "0",
                    "COUNT",
                    "576460752303423488",
                ],
                COUNT_POSITIVE,
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT"],
                SYNTAX,
            ),
            (&["XAUTOCLAIM", "s", "g", "carol", "0", "0", "FOO"], SYNTAX),
            (
                &["XAUTOCLAIM", "s", "nog", "carol", "0", "0"],
                "!NOGROUP No such key 's' or consumer group 'nog'",
            ),
            (
                &["XAUTOCLAIM", "nokey", "g", "carol", "0", "0"],
                "!NOGROUP No such key 'nokey' or consumer group 'g'",
            ),
            (
                &["XAUTOCLAIM", "s", "g", "carol", "0"],
                &arity("xautoclaim"),
            ),
        ],
    )
    .await;
    let got = pel(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]).await;
    let plain: Vec<_> = got
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str(), r.3))
        .collect();
    // A claim with the entries counts a delivery, JUSTID does not.
    assert_eq!(
        plain,
        [
            ("1-1", "carol", 3),
            ("3-1", "carol", 4),
            ("5-1", "carol", 4)
        ]
    );
}

// ---------------------------------------------------------------------------------
// XINFO, XSETID.

/// XINFO STREAM (plain and FULL, COUNT) and XINFO's errors. Times are checked against
/// the server's clock around the reads that set them.
async fn xinfo_stream_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    ok(&mut c, &["XADD", "s", "2-1", "b", "2"]).await;
    ok(&mut c, &["XADD", "s", "3-1", "c", "3"]).await;
    ok(&mut c, &["XDEL", "s", "2-1"]).await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]).await;
    let t0 = now_ms(&mut c).await;
    ok(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ],
    )
    .await;
    ok(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"],
    )
    .await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g2", "$"]).await;
    ok(&mut c, &["XGROUP", "CREATECONSUMER", "s", "g2", "zed"]).await;
    let t1 = now_ms(&mut c).await;
    assert_eq!(
        xinfo_stream(&mut c, &["XINFO", "STREAM", "s"]).await,
        "[length :2 radix-tree-keys :1 radix-tree-nodes T last-generated-id 3-1 \
         max-deleted-entry-id 2-1 entries-added :3 recorded-first-entry-id 1-1 groups :2 \
         first-entry [1-1 [a 1]] last-entry [3-1 [c 3]]]"
    );
    let full = |count: &str| {
        let head = "[length :2 radix-tree-keys :1 radix-tree-nodes T last-generated-id 3-1 \
                    max-deleted-entry-id 2-1 entries-added :3 recorded-first-entry-id 1-1";
        if count == "1" {
            format!(
                "{head} entries [[1-1 [a 1]]] groups [\
                 [name g last-delivered-id 3-1 entries-read :3 lag :0 pel-count :2 \
                 pending [[1-1 alice T :1]] consumers [\
                 [name alice seen-time T pel-count :1 pending [[1-1 T :1]]] \
                 [name bob seen-time T pel-count :1 pending [[3-1 T :1]]]]] \
                 [name g2 last-delivered-id 3-1 entries-read nil lag :0 pel-count :0 \
                 pending [] consumers [[name zed seen-time T pel-count :0 pending []]]]]]"
            )
        } else {
            format!(
                "{head} entries [[1-1 [a 1]] [3-1 [c 3]]] groups [\
                 [name g last-delivered-id 3-1 entries-read :3 lag :0 pel-count :2 \
                 pending [[1-1 alice T :1] [3-1 bob T :1]] consumers [\
                 [name alice seen-time T pel-count :1 pending [[1-1 T :1]]] \
                 [name bob seen-time T pel-count :1 pending [[3-1 T :1]]]]] \
                 [name g2 last-delivered-id 3-1 entries-read nil lag :0 pel-count :0 \
                 pending [] consumers [[name zed seen-time T pel-count :0 pending []]]]]]"
            )
        }
    };
    for (args, want) in [
        (&["XINFO", "STREAM", "s", "FULL"][..], full("")),
        (&["XINFO", "STREAM", "s", "full", "COUNT", "1"], full("1")),
        (&["XINFO", "STREAM", "s", "FULL", "COUNT", "0"], full("")),
        (&["XINFO", "STREAM", "s", "FULL", "COUNT", "-1"], full("")),
    ] {
        let mut v = ok(&mut c, args).await;
        mask_full(&mut v, t0, t1);
        mask_fields(&mut v, &["radix-tree-nodes"], 0, i64::MAX);
        assert_eq!(show(&v), want, "{args:?}");
    }
    let unknown =
        "!ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.";
    check(
        &mut c,
        &[
            (&["XINFO", "STREAM", "s", "FULL", "COUNT", "a"], NOT_INT),
            (&["XINFO", "STREAM", "s", "FOO"], unknown),
            (&["XINFO", "STREAM", "s", "FULL", "FOO"], unknown),
            (&["XINFO", "STREAM", "s", "COUNT", "1"], unknown),
            (&["XINFO", "STREAM", "nokey"], NO_SUCH_KEY),
            (&["XINFO", "STREAM", "nokey", "FULL"], NO_SUCH_KEY),
            (&["XINFO", "GROUPS", "nokey"], NO_SUCH_KEY),
            (&["XINFO", "CONSUMERS", "nokey", "g"], NO_SUCH_KEY),
            (
                &["XINFO", "CONSUMERS", "s", "nog"],
                "!NOGROUP No such consumer group 'nog' for key name 's'",
            ),
            (&["XINFO", "STREAM", "str"], WRONGTYPE),
            (&["XINFO", "GROUPS", "str"], WRONGTYPE),
            (&["XINFO", "CONSUMERS", "str", "g"], WRONGTYPE),
            (&["XINFO", "STREAM"], &arity("xinfo|stream")),
            (&["XINFO", "GROUPS"], &arity("xinfo|groups")),
            (&["XINFO", "CONSUMERS", "s"], &arity("xinfo|consumers")),
            (&["XINFO"], &arity("xinfo")),
            (
                &["XINFO", "FOO"],
                "!ERR unknown subcommand 'FOO'. Try XINFO HELP.",
            ),
        ],
    )
    .await;
    let help: Vec<String> = q(&mut c, &["XINFO", "HELP"]).await.unwrap();
    assert_eq!(
        help,
        [
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Prints this help.",
        ]
    );
}

/// Each group of `key` as "name last-delivered-id entries-read lag", joined by " | ".
async fn groups_brief(c: &mut MultiplexedConnection, key: &str) -> String {
    let v = ok(c, &["XINFO", "GROUPS", key]).await;
    let Value::Array(groups) = v else {
        panic!("{v:?}")
    };
    groups
        .iter()
        .map(|g| {
            let Value::Array(f) = g else { panic!("{g:?}") };
            let field = |name: &str| {
                let at = f
                    .iter()
                    .position(|x| matches!(x, Value::BulkString(b) if b == name.as_bytes()))
                    .unwrap_or_else(|| panic!("no {name} in {f:?}"));
                show(&f[at + 1])
            };
            format!(
                "{} {} {} {}",
                field("name"),
                field("last-delivered-id"),
                field("entries-read"),
                field("lag")
            )
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// XINFO GROUPS' entries-read and lag: known while the group's reads can be counted,
/// null after a deletion between the group's position and the end, after SETID without
/// ENTRIESREAD, and where Redis cannot tell.
async fn xinfo_groups_lag(addr: SocketAddr) {
    let mut c = con(addr).await;
    add_n(&mut c, "s", 1..=5).await;
    let steps: &[(&[&str], &str)] = &[
        (&["XGROUP", "CREATE", "s", "g0", "0"], ""),
        (&["XGROUP", "CREATE", "s", "g3", "3-1"], ""),
        (&["XGROUP", "CREATE", "s", "gd", "$"], ""),
        (
            &["XGROUP", "CREATE", "s", "gm", "3"],
            "g0 0-0 nil :5 | g3 3-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil",
        ),
        (&["XREADGROUP", "GROUP", "g0", "c", "COUNT", "2", "STREAMS", "s", ">"], ""),
        (
            &["XREADGROUP", "GROUP", "g3", "c", "COUNT", "1", "STREAMS", "s", ">"],
            "g0 2-1 :2 :3 | g3 4-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil",
        ),
        (
            &["XDEL", "s", "4-1"],
            "g0 2-1 :2 nil | g3 4-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil",
        ),
        (
            &["XREADGROUP", "GROUP", "g0", "c", "COUNT", "1", "STREAMS", "s", ">"],
            "g0 3-1 nil nil | g3 4-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil",
        ),
        (
            &["XREADGROUP", "GROUP", "g0", "c", "COUNT", "1", "STREAMS", "s", ">"],
            "g0 5-1 :5 :0 | g3 4-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil",
        ),
        (&["XDEL", "s", "1-1"], "g0 5-1 :5 :0 | g3 4-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil"),
        (
            &["XGROUP", "CREATE", "s", "gn", "0"],
            "g0 5-1 :5 :0 | g3 4-1 nil nil | gd 5-1 nil :0 | gm 3-0 nil nil | gn 0-0 nil nil",
        ),
        (
            &["XADD", "s", "6-1", "f", "v"],
            "g0 5-1 :5 :1 | g3 4-1 nil nil | gd 5-1 nil nil | gm 3-0 nil nil | gn 0-0 nil nil",
        ),
        (
            &["XGROUP", "SETID", "s", "gn", "2-1"],
            "g0 5-1 :5 :1 | g3 4-1 nil nil | gd 5-1 nil nil | gm 3-0 nil nil | gn 2-1 nil nil",
        ),
        (
            &["XGROUP", "SETID", "s", "gn", "5-1", "ENTRIESREAD", "5"],
            "g0 5-1 :5 :1 | g3 4-1 nil nil | gd 5-1 nil nil | gm 3-0 nil nil | gn 5-1 :5 :1",
        ),
        (
            &["XGROUP", "SETID", "s", "gn", "0", "ENTRIESREAD", "100"],
            "g0 5-1 :5 :1 | g3 4-1 nil nil | gd 5-1 nil nil | gm 3-0 nil nil | gn 0-0 :100 nil",
        ),
        (
            &["XGROUP", "SETID", "s", "gn", "$"],
            "g0 5-1 :5 :1 | g3 4-1 nil nil | gd 5-1 nil nil | gm 3-0 nil nil | gn 6-1 nil :0",
        ),
        (
            &["XTRIM", "s", "MAXLEN", "1"],
            "g0 5-1 :5 :1 | g3 4-1 nil :1 | gd 5-1 nil :1 | gm 3-0 nil :1 | gn 6-1 nil :0",
        ),
        (&["XGROUP", "CREATE", "s", "go", "0"], ""),
        (
            &["XREADGROUP", "GROUP", "go", "c", "STREAMS", "s", ">"],
            "g0 5-1 :5 :1 | g3 4-1 nil :1 | gd 5-1 nil :1 | gm 3-0 nil :1 | gn 6-1 nil :0 | go 6-1 :6 :0",
        ),
    ];
    for (args, want) in steps {
        ok(&mut c, args).await;
        if !want.is_empty() {
            assert_eq!(groups_brief(&mut c, "s").await, *want, "after {args:?}");
        }
    }
    // A trim past a group's position, then reads from it.
    add_n(&mut c, "t", 1..=5).await;
    let steps: &[(&[&str], &str)] = &[
        (&["XGROUP", "CREATE", "t", "g", "0"], "g 0-0 nil :5"),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "2",
                "STREAMS",
                "t",
                ">",
            ],
            "g 2-1 :2 :3",
        ),
        (&["XTRIM", "t", "MAXLEN", "2"], "g 2-1 :2 :3"),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "1",
                "STREAMS",
                "t",
                ">",
            ],
            "g 4-1 :3 :2",
        ),
    ];
    for (args, want) in steps {
        ok(&mut c, args).await;
        assert_eq!(groups_brief(&mut c, "t").await, *want, "after {args:?}");
    }
    // The first entry deleted before the group reads anything; an entry added and deleted.
    add_n(&mut c, "u", 1..=5).await;
    let steps: &[(&[&str], &str)] = &[
        (&["XGROUP", "CREATE", "u", "g", "0"], "g 0-0 nil :5"),
        (&["XDEL", "u", "1-1"], "g 0-0 nil :4"),
        (
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "1",
                "STREAMS",
                "u",
                ">",
            ],
            "g 2-1 :2 :3",
        ),
        (&["XADD", "u", "7-1", "f", "v"], "g 2-1 :2 :4"),
        (&["XDEL", "u", "7-1"], "g 2-1 :2 nil"),
        (
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "u", ">"],
            "g 5-1 nil nil",
        ),
    ];
    for (args, want) in steps {
        ok(&mut c, args).await;
        assert_eq!(groups_brief(&mut c, "u").await, *want, "after {args:?}");
    }
}

/// XSETID: the last ID (which may go below last-generated-id, never below the last
/// entry), ENTRIESADDED, MAXDELETEDID, their checks and the errors.
async fn xsetid_forms(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    let info = "[length :2 radix-tree-keys :1 radix-tree-nodes T last-generated-id {last} \
                max-deleted-entry-id {del} entries-added {added} recorded-first-entry-id 1-1 \
                groups :0 first-entry [1-1 [a 1]] last-entry [2-1 [b 2]]]";
    let info = |last: &str, del: &str, added: &str| {
        info.replace("{last}", last)
            .replace("{del}", del)
            .replace("{added}", added)
    };
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    ok(&mut c, &["XADD", "s", "2-1", "b", "2"]).await;
    check(
        &mut c,
        &[
            (&["XSETID", "s", "5-0"], "OK"),
            (&["XADD", "s", "5-0", "x", "y"], TOP_ITEM),
        ],
    )
    .await;
    assert_eq!(
        xinfo_stream(&mut c, &["XINFO", "STREAM", "s"]).await,
        info("5-0", "0-0", ":2")
    );
    check(
        &mut c,
        &[
            (&["XSETID", "s", "1-0"], "!ERR The ID specified in XSETID is smaller than the target stream top item"),
            (&["XSETID", "s", "2-0"], "!ERR The ID specified in XSETID is smaller than the target stream top item"),
            (&["XSETID", "s", "2-1"], "OK"),
            (&["XSETID", "s", "3-0", "ENTRIESADDED", "1"], "!ERR The entries_added specified in XSETID is smaller than the target stream length"),
            (&["XSETID", "s", "3-0", "ENTRIESADDED", "2"], "OK"),
            (&["XSETID", "s", "3-0", "ENTRIESADDED", "10", "MAXDELETEDID", "2-5"], "OK"),
        ],
    )
    .await;
    assert_eq!(
        xinfo_stream(&mut c, &["XINFO", "STREAM", "s"]).await,
        info("3-0", "2-5", ":10")
    );
    check(
        &mut c,
        &[
            (
                &[
                    "XSETID",
                    "s",
                    "3-0",
                    "ENTRIESADDED",
                    "10",
                    "MAXDELETEDID",
                    "4-0",
                ],
                "!ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
            ),
            (&["XSETID", "s", "3-0", "MAXDELETEDID", "1-0"], "OK"),
            (&["XSETID", "s", "3-0", "MAXDELETEDID", "3-0"], "OK"),
            (
                &["XSETID", "s", "3-0", "ENTRIESADDED", "-1"],
                "!ERR entries_added must be positive",
            ),
            (&["XSETID", "s", "3-0", "ENTRIESADDED", "a"], NOT_INT),
            (&["XSETID", "s", "3-0", "MAXDELETEDID", "abc"], INVALID_ID),
            (&["XSETID", "s", "3-0", "FOO"], SYNTAX),
            (&["XSETID", "s", "3-0", "ENTRIESADDED"], SYNTAX),
            (&["XSETID", "s", "abc"], INVALID_ID),
            (&["XSETID", "s", "$"], INVALID_ID),
            (&["XSETID", "s", "*"], INVALID_ID),
            (&["XSETID", "s", "3-*"], INVALID_ID),
            (&["XSETID", "nokey", "1-1"], NO_SUCH_KEY),
            (&["XSETID", "str", "1-1"], WRONGTYPE),
            (&["XSETID", "s"], &arity("xsetid")),
            (
                &[
                    "XSETID",
                    "s",
                    "4-0",
                    "ENTRIESADDED",
                    "12",
                    "MAXDELETEDID",
                    "3-1",
                ],
                "OK",
            ),
        ],
    )
    .await;
    assert_eq!(
        xinfo_stream(&mut c, &["XINFO", "STREAM", "s"]).await,
        info("4-0", "3-1", ":12")
    );
    check(
        &mut c,
        &[
            (&["XSETID", "s", "5"], "OK"),
            (&["XADD", "s", "5-*", "x", "y"], "5-1"),
            // An empty stream's last ID may go anywhere, down to 0-0.
            (&["XADD", "e", "1-1", "a", "1"], "1-1"),
            (&["XDEL", "e", "1-1"], ":1"),
            (&["XSETID", "e", "0-0"], "OK"),
            (&["XSETID", "e", "0-5"], "OK"),
            (&["XADD", "e", "0-*", "a", "1"], "0-6"),
            (&["XDEL", "e", "0-6"], ":1"),
            (&["XSETID", "e", "0-0", "ENTRIESADDED", "0"], "OK"),
        ],
    )
    .await;
    assert_eq!(
        xinfo_stream(&mut c, &["XINFO", "STREAM", "e"]).await,
        "[length :0 radix-tree-keys :0 radix-tree-nodes T last-generated-id 0-0 \
         max-deleted-entry-id 1-1 entries-added :0 recorded-first-entry-id 0-0 groups :0 \
         first-entry nil last-entry nil]"
    );
}

// ---------------------------------------------------------------------------------
// The generic commands on a stream, notifications, MULTI and scripts.

/// TYPE and OBJECT ENCODING of a stream, WRONGTYPE from every stream command on a
/// string and from string commands on a stream.
async fn type_encoding_wrongtype(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    ok(&mut c, &["SET", "str", "x"]).await;
    check(
        &mut c,
        &[
            (&["TYPE", "s"], "+stream"),
            (&["OBJECT", "ENCODING", "s"], "stream"),
            (&["OBJECT", "ENCODING", "nokey"], "nil"),
            (&["GET", "s"], WRONGTYPE),
            (&["LPUSH", "s", "x"], WRONGTYPE),
            (&["HSET", "s", "a", "1"], WRONGTYPE),
            (&["XADD", "str", "1-1", "a", "1"], WRONGTYPE),
            (&["XADD", "str", "NOMKSTREAM", "1-1", "a", "1"], WRONGTYPE),
            (&["XLEN", "str"], WRONGTYPE),
            (&["XRANGE", "str", "-", "+"], WRONGTYPE),
            (&["XREVRANGE", "str", "+", "-"], WRONGTYPE),
            (&["XDEL", "str", "1-1"], WRONGTYPE),
            (&["XTRIM", "str", "MAXLEN", "1"], WRONGTYPE),
            (&["XREAD", "STREAMS", "str", "0"], WRONGTYPE),
            (&["XGROUP", "CREATE", "str", "g", "0"], WRONGTYPE),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"],
                WRONGTYPE,
            ),
            (&["XACK", "str", "g", "1-1"], WRONGTYPE),
            (&["XPENDING", "str", "g"], WRONGTYPE),
            (&["XCLAIM", "str", "g", "c", "0", "1-1"], WRONGTYPE),
            (&["XAUTOCLAIM", "str", "g", "c", "0", "0"], WRONGTYPE),
            (&["XINFO", "STREAM", "str"], WRONGTYPE),
            (&["XSETID", "str", "1-1"], WRONGTYPE),
            (&["EXISTS", "s"], ":1"),
            (&["DEL", "s"], ":1"),
            (&["TYPE", "s"], "+none"),
        ],
    )
    .await;
}

/// COPY and RENAME carry the groups, consumers and PEL (delivery times and counts too);
/// the copy is independent of the original.
async fn copy_and_rename(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["XADD", "s", "1-1", "a", "1"]).await;
    ok(&mut c, &["XADD", "s", "2-1", "b", "2", "c", "3"]).await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]).await;
    ok(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ],
    )
    .await;
    let full_s = ok(&mut c, &["XINFO", "STREAM", "s", "FULL"]).await;
    check(
        &mut c,
        &[
            (&["COPY", "s", "s2"], ":1"),
            (&["COPY", "s", "s2"], ":0"),
            (&["TYPE", "s2"], "+stream"),
        ],
    )
    .await;
    assert_eq!(ok(&mut c, &["XINFO", "STREAM", "s2", "FULL"]).await, full_s);
    check(
        &mut c,
        &[
            (
                &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s2", ">"],
                "[[s2 [[2-1 [b 2 c 3]]]]]",
            ),
            (&["XADD", "s2", "3-1", "d", "4"], "3-1"),
            (&["XLEN", "s"], ":2"),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :1 pending :1 last-delivered-id 1-1 entries-read :1 lag :1]]",
            ),
            (
                &["XINFO", "GROUPS", "s2"],
                "[[name g consumers :1 pending :2 last-delivered-id 2-1 entries-read :2 lag :1]]",
            ),
            (&["COPY", "s", "s2", "REPLACE"], ":1"),
            (&["XLEN", "s2"], ":2"),
            (&["RENAME", "s2", "s3"], "OK"),
            (&["EXISTS", "s2"], ":0"),
            (&["XPENDING", "s3", "g"], "[:1 1-1 1-1 [[alice 1]]]"),
            (
                &["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s3", ">"],
                "[[s3 [[2-1 [b 2 c 3]]]]]",
            ),
            (&["XPENDING", "s", "g"], "[:1 1-1 1-1 [[alice 1]]]"),
        ],
    )
    .await;
    assert_eq!(
        consumers(&mut c, "s3", "g").await,
        "[[name alice pending :1 idle T] [name bob pending :1 idle T]]"
    );
}

/// DUMP then RESTORE on the same server: the entries, the ID counters, the groups,
/// consumers and PEL (times too) come back the same; RESTORE's errors.
async fn dump_restore_round_trip(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["CONFIG", "SET", "stream-node-max-entries", "2"]).await;
    for (id, f, v) in [
        ("1-1", "a", "1"),
        ("2-1", "b", "2"),
        ("3-1", "a", "3"),
        ("4-1", "c", "4"),
        ("5-1", "a", "5"),
    ] {
        ok(&mut c, &["XADD", "s", id, f, v]).await;
    }
    ok(&mut c, &["CONFIG", "SET", "stream-node-max-entries", "100"]).await;
    ok(&mut c, &["XDEL", "s", "2-1"]).await;
    ok(
        &mut c,
        &["XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "0"],
    )
    .await;
    ok(&mut c, &["XGROUP", "CREATE", "s", "g2", "$"]).await;
    ok(
        &mut c,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "2",
            "STREAMS",
            "s",
            ">",
        ],
    )
    .await;
    ok(
        &mut c,
        &[
            "XCLAIM",
            "s",
            "g",
            "bob",
            "0",
            "3-1",
            "TIME",
            "1000000000000",
            "RETRYCOUNT",
            "4",
            "JUSTID",
        ],
    )
    .await;
    ok(&mut c, &["XGROUP", "CREATECONSUMER", "s", "g2", "zed"]).await;
    ok(
        &mut c,
        &[
            "XSETID",
            "s",
            "9-0",
            "ENTRIESADDED",
            "20",
            "MAXDELETEDID",
            "7-0",
        ],
    )
    .await;
    let full = ok(&mut c, &["XINFO", "STREAM", "s", "FULL"]).await;
    let dump = match ok(&mut c, &["DUMP", "s"]).await {
        Value::BulkString(b) => b,
        other => panic!("DUMP gave {other:?}"),
    };
    let restore = |key: &str, extra: &[&str]| {
        let mut a: Vec<Vec<u8>> = vec![
            b"RESTORE".to_vec(),
            key.as_bytes().to_vec(),
            b"0".to_vec(),
            dump.clone(),
        ];
        a.extend(extra.iter().map(|x| x.as_bytes().to_vec()));
        a
    };
    assert_eq!(shown(&qb(&mut c, &restore("r", &[])).await), "OK");
    assert_eq!(ok(&mut c, &["XINFO", "STREAM", "r", "FULL"]).await, full);
    assert_eq!(
        shown(&qb(&mut c, &restore("r", &[])).await),
        "!BUSYKEY Target key name already exists."
    );
    assert_eq!(shown(&qb(&mut c, &restore("r", &["REPLACE"])).await), "OK");
    check(
        &mut c,
        &[
            (&["TYPE", "r"], "+stream"),
            (
                &["XRANGE", "r", "-", "+"],
                "[[1-1 [a 1]] [3-1 [a 3]] [4-1 [c 4]] [5-1 [a 5]]]",
            ),
            (&["XADD", "r", "9-0", "x", "y"], TOP_ITEM),
            (&["XADD", "r", "9-*", "x", "y"], "9-1"),
            (&["XPENDING", "r", "g"], "[:2 1-1 3-1 [[alice 1] [bob 1]]]"),
            (
                &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "r", ">"],
                "[[r [[4-1 [c 4]] [5-1 [a 5]] [9-1 [x y]]]]]",
            ),
        ],
    )
    .await;
    let mut bad = dump.clone();
    let n = bad.len();
    bad[n - 1] ^= 0xff;
    assert_eq!(
        shown(
            &qb(
                &mut c,
                &[b"RESTORE".to_vec(), b"r2".to_vec(), b"0".to_vec(), bad]
            )
            .await
        ),
        "!ERR DUMP payload version or checksum are wrong"
    );
}

/// `DUMP s` from redis-server 7.0.15 (RDB 10, type 19: stream listpacks 2) of: XADD s 1-1
/// name alice age 30, 2-1 name bob age 25, 3-0 other field, 5-0 name eve age 22 (with
/// stream-node-max-entries 2: two nodes), XDEL s 2-1, XGROUP CREATE s g 0, XREADGROUP
/// GROUP g c1 COUNT 2 STREAMS s >, XCLAIM s g c1 0 1-1 TIME 1000000000000 RETRYCOUNT 3
/// JUSTID, XCLAIM s g c1 0 3-0 TIME 1000000000500 RETRYCOUNT 1 JUSTID, XGROUP CREATE s g2
/// $ ENTRIESREAD 4, XGROUP CREATECONSUMER s g2 idle1.
const REDIS_STREAM_DUMP: &[u8] =
    b"\x13\x02\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01::\x00\
    \x00\x00\x12\x00\x01\x01\x01\x01\x02\x01\x84name\x05\x83age\x04\x00\x01\x02\x01\x00\
    \x01\x00\x01\x85alice\x06\x1e\x01\x05\x01\x03\x01\x01\x01\x00\x01\x83bob\x04\x19\x01\
    \x05\x01\xff\x10\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00@AA\
    \x00\x00\x00\x13\x00\x02\x01\x00\x01\x01\x01\x85other\x06\x00\x01\x02\x01\x00\x01\
    \x00\x01\x85field\x06\x04\x01\x00\x01\x02\x01\x00\x01\x02\x01\x84name\x05\x83eve\x04\
    \x83age\x04\x16\x01\x08\x01\xff\x03\x05\x00\x01\x01\x02\x01\x04\x02\x01g\x03\x00\x81\
    \xff\xff\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\
    \x00\x00\x00\x01\x00\x10\xa5\xd4\xe8\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x03\
    \x00\x00\x00\x00\x00\x00\x00\x00\xf4\x11\xa5\xd4\xe8\x00\x00\x00\x01\x01\x02c1\x98\
    \x8di:\xa2\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\
    \x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x02g2\x05\
    \x00\x04\x00\x01\x05idle1\x98\x8di:\xa2\x01\x00\x00\x00\x0a\x00\xb4\x04\xee\x09\xd1\
    \xd6Y-";
/// The consumers' seen-time in [`REDIS_STREAM_DUMP`].
const DUMP_SEEN_TIME: i64 = 1796276325784;

/// RESTORE of [`REDIS_STREAM_DUMP`] (redis-server's RDB format): the entries, the ID
/// counters, both nodes, the groups, consumers and PEL with their times, then reads and
/// writes on the restored stream.
async fn restore_redis_payload(addr: SocketAddr) {
    let mut c = con(addr).await;
    let restore = [
        b"RESTORE".to_vec(),
        b"s".to_vec(),
        b"0".to_vec(),
        REDIS_STREAM_DUMP.to_vec(),
    ];
    assert_eq!(shown(&qb(&mut c, &restore).await), "OK");
    assert_eq!(
        xinfo_stream(&mut c, &["XINFO", "STREAM", "s", "FULL"]).await,
        format!(
            "[length :3 radix-tree-keys :2 radix-tree-nodes T last-generated-id 5-0 \
             max-deleted-entry-id 2-1 entries-added :4 recorded-first-entry-id 1-1 \
             entries [[1-1 [name alice age 30]] [3-0 [other field]] [5-0 [name eve age 22]]] \
             groups [[name g last-delivered-id 3-0 entries-read nil lag nil pel-count :2 \
             pending [[1-1 c1 :1000000000000 :3] [3-0 c1 :1000000000500 :1]] \
             consumers [[name c1 seen-time :{DUMP_SEEN_TIME} pel-count :2 \
             pending [[1-1 :1000000000000 :3] [3-0 :1000000000500 :1]]]]] \
             [name g2 last-delivered-id 5-0 entries-read :4 lag :0 pel-count :0 pending [] \
             consumers [[name idle1 seen-time :{DUMP_SEEN_TIME} pel-count :0 pending []]]]]]"
        )
    );
    let t0 = now_ms(&mut c).await;
    let got = pel(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]).await;
    let t1 = now_ms(&mut c).await;
    assert_eq!(got.len(), 2);
    assert!(
        (t0 - 1_000_000_000_000..=t1 - 1_000_000_000_000).contains(&got[0].2),
        "{got:?}"
    );
    assert!(
        (t0 - 1_000_000_000_500..=t1 - 1_000_000_000_500).contains(&got[1].2),
        "{got:?}"
    );
    check(
        &mut c,
        &[
            (&["XLEN", "s"], ":3"),
            (&["XRANGE", "s", "(1-1", "4"], "[[3-0 [other field]]]"),
            (
                &["XREVRANGE", "s", "+", "-", "COUNT", "1"],
                "[[5-0 [name eve age 22]]]",
            ),
            (&["XPENDING", "s", "g"], "[:2 1-1 3-0 [[c1 2]]]"),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :1 pending :2 last-delivered-id 3-0 entries-read nil lag nil] \
                  [name g2 consumers :1 pending :0 last-delivered-id 5-0 entries-read :4 lag :0]]",
            ),
            (&["XADD", "s", "5-0", "x", "y"], TOP_ITEM),
            (&["XADD", "s", "6-*", "x", "y"], "6-0"),
            (
                &["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"],
                "[[s [[5-0 [name eve age 22]] [6-0 [x y]]]]]",
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"],
                "[[s [[1-1 [name alice age 30]] [3-0 [other field]]]]]",
            ),
            (&["XACK", "s", "g", "1-1", "3-0"], ":2"),
            (
                &["XREADGROUP", "GROUP", "g2", "idle1", "STREAMS", "s", ">"],
                "[[s [[6-0 [x y]]]]]",
            ),
            (
                &["XINFO", "GROUPS", "s"],
                "[[name g consumers :2 pending :2 last-delivered-id 6-0 entries-read :5 lag :0] \
                  [name g2 consumers :1 pending :1 last-delivered-id 6-0 entries-read :5 lag :0]]",
            ),
            (&["XDEL", "s", "3-0"], ":1"),
            (
                &["XRANGE", "s", "-", "+"],
                "[[1-1 [name alice age 30]] [5-0 [name eve age 22]] [6-0 [x y]]]",
            ),
        ],
    )
    .await;
    let v = ok(&mut c, &["XINFO", "CONSUMERS", "s", "g2"]).await;
    let Value::Array(rows) = &v else {
        panic!("{v:?}")
    };
    assert_eq!(rows.len(), 1, "{v:?}");
}

/// The keyspace events of the stream commands, as Redis 7.0 names them (and where it
/// sends none).
async fn keyspace_notifications(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]).await;
    let mut s = psubscribe_all(addr).await;
    for cmd in [
        &["XADD", "s", "1-1", "a", "1"][..],
        &["XADD", "s", "MAXLEN", "1", "2-1", "a", "1"],
        &["XADD", "s", "NOMKSTREAM", "3-1", "a", "1"],
        &["XADD", "s2", "NOMKSTREAM", "3-1", "a", "1"],
        &["XADD", "s", "1-1", "a", "1"],
        &["XTRIM", "s", "MAXLEN", "0"],
        &["XTRIM", "s", "MAXLEN", "0"],
        &["XADD", "s", "4-1", "a", "1"],
        &["XDEL", "s", "4-1"],
        &["XDEL", "s", "4-1"],
        &["XGROUP", "CREATE", "s", "g", "0"],
        &["XGROUP", "CREATE", "s", "g", "0"],
        &["XGROUP", "CREATE", "s2", "g", "0", "MKSTREAM"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c1"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c1"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XADD", "s", "5-1", "a", "1"],
        &["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"],
        &["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"],
        &["XCLAIM", "s", "g", "c3", "0", "5-1"],
        &["XACK", "s", "g", "5-1"],
        &["XCLAIM", "s", "g", "c4", "0", "5-1"],
        &["XAUTOCLAIM", "s", "g", "c5", "0", "0"],
        &["XGROUP", "DELCONSUMER", "s", "g", "c1"],
        &["XGROUP", "DELCONSUMER", "s", "g", "nobody"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XGROUP", "DESTROY", "s", "g"],
        &["XSETID", "s", "9-9"],
        &["XSETID", "s", "1-1"],
        &["XADD", "s", "MAXLEN", "~", "0", "10-1", "a", "1"],
        &["XADD", "s", "MAXLEN", "~", "5", "11-1", "a", "1"],
        &["COPY", "s", "s3"],
        &["RENAME", "s3", "s4"],
        &["DEL", "s4"],
        &["SET", "marker", "x"],
    ] {
        let _ = qr(&mut c, cmd).await;
    }
    let want = keyspace_messages(&[
        ("xadd", "s"),
        ("xadd", "s"),
        ("xtrim", "s"),
        ("xadd", "s"),
        ("xtrim", "s"),
        ("xadd", "s"),
        ("xdel", "s"),
        ("xgroup-create", "s"),
        ("xgroup-create", "s2"),
        ("xgroup-createconsumer", "s"),
        ("xgroup-setid", "s"),
        ("xadd", "s"),
        ("xgroup-createconsumer", "s"),
        ("xgroup-createconsumer", "s"),
        ("xgroup-delconsumer", "s"),
        ("xgroup-destroy", "s"),
        ("xsetid", "s"),
        ("xadd", "s"),
        ("xtrim", "s"),
        ("xadd", "s"),
        ("copy_to", "s3"),
        ("rename_from", "s3"),
        ("rename_to", "s4"),
        ("del", "s4"),
        ("set", "marker"),
    ]);
    assert_eq!(common::take_messages(&mut s, want.len()).await, want);
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", ""]).await;
}

/// MULTI with XADD and XREAD (a BLOCK inside MULTI does not block), an error among the
/// queued commands; XREAD BLOCK refused in a script.
async fn transactions_and_scripts(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut raw = TcpStream::connect(addr).await.unwrap();
    let got = raw_exchange(
        &mut raw,
        &[
            &["MULTI"],
            &["XADD", "s", "1-1", "a", "1"],
            &["XREAD", "STREAMS", "s", "0"],
            &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
            &["XGROUP", "CREATE", "s", "g", "$"],
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
            &["XADD", "s", "1-1", "a", "1"],
            &["XLEN", "s"],
            &["EXEC"],
        ],
    )
    .await;
    assert_eq!(
        got,
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n\
         *7\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n\
         $1\r\n1\r\n*-1\r\n+OK\r\n*-1\r\n\
         -ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n\
         :1\r\n"
    );
    check(
        &mut c,
        &[
            (
                &[
                    "EVAL",
                    "return redis.call('XADD', KEYS[1], '2-1', 'b', '2')",
                    "1",
                    "s",
                ],
                "2-1",
            ),
            (
                &[
                    "EVAL",
                    "return redis.call('XRANGE', KEYS[1], '-', '+')",
                    "1",
                    "s",
                ],
                "[[1-1 [a 1]] [2-1 [b 2]]]",
            ),
        ],
    )
    .await;
    let e = sh(
        &mut c,
        &[
            "EVAL",
            "return redis.call('XREAD', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')",
            "1",
            "s",
        ],
    )
    .await;
    assert!(
        e.starts_with("!ERR XREAD command is not allowed with BLOCK option from scripts"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------
// The tests: each body on a fresh in-process server, and (with AUGUR_E2E_REDIS) on an
// external server.

/// The external server for the `on_redis` tests, reset for the next one.
async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    let ext = common::replies::external(&[
        &["CONFIG", "SET", "notify-keyspace-events", ""],
        &["CONFIG", "SET", "stream-node-max-entries", "100"],
        &["CONFIG", "SET", "stream-node-max-bytes", "4096"],
    ])
    .await?;
    let mut c = con(ext.0).await;
    wait_blocked(&mut c, 0).await;
    Some(ext)
}

common::replies::on_both!(
    xadd_ids,
    xadd_options,
    approximate_trims_whole_nodes,
    node_limits,
    xrange_forms,
    xdel_forms,
    xtrim_forms,
    xread_forms,
    null_reply_kinds,
    resp3_shapes,
    xread_block,
    xgroup_subcommands,
    xreadgroup_and_xack,
    consumers_are_created_when,
    max_id_in_xreadgroup_is_new_entries,
    xreadgroup_block,
    xpending_forms,
    xclaim_forms,
    xautoclaim_forms,
    xinfo_stream_forms,
    xinfo_groups_lag,
    xsetid_forms,
    type_encoding_wrongtype,
    copy_and_rename,
    dump_restore_round_trip,
    restore_redis_payload,
    keyspace_notifications,
    transactions_and_scripts,
);
