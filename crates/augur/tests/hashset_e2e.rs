//! End-to-end tests of hashes and sets over real sockets with the `redis` crate: the
//! commands, WRONGTYPE across types, encodings, TTLs, and eviction treating a hash as
//! one object; DUMP / RESTORE of hashes, sets and sorted sets.

mod common;

use augur_server::ServerConfig;
use common::{encoding, err, info_field, q, TestServer};
use std::collections::{HashMap, HashSet};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_commands() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    assert_eq!(
        q::<i64>(&mut c, &["HSET", "h", "a", "1", "b", "2"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        q::<i64>(&mut c, &["HSET", "h", "a", "10", "c", "3"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<String>(&mut c, &["HGET", "h", "a"]).await.unwrap(),
        "10"
    );
    assert_eq!(
        q::<Option<String>>(&mut c, &["HGET", "h", "zz"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        q::<Option<String>>(&mut c, &["HGET", "nokey", "a"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["HMGET", "h", "a", "nope", "c"])
            .await
            .unwrap(),
        vec![Some("10".into()), None, Some("3".into())]
    );
    assert_eq!(
        q::<String>(&mut c, &["HMSET", "h", "d", "4"])
            .await
            .unwrap(),
        "OK"
    );
    let all: HashMap<String, String> = q(&mut c, &["HGETALL", "h"]).await.unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all["d"], "4");
    let mut keys: Vec<String> = q(&mut c, &["HKEYS", "h"]).await.unwrap();
    keys.sort();
    assert_eq!(keys, ["a", "b", "c", "d"]);
    let mut vals: Vec<String> = q(&mut c, &["HVALS", "h"]).await.unwrap();
    vals.sort();
    assert_eq!(vals, ["10", "2", "3", "4"]);
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h"]).await.unwrap(), 4);
    assert_eq!(q::<i64>(&mut c, &["HSTRLEN", "h", "a"]).await.unwrap(), 2);
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", "b"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", "x"]).await.unwrap(), 0);
    assert_eq!(
        q::<i64>(&mut c, &["HSETNX", "h", "a", "x"]).await.unwrap(),
        0
    );
    assert_eq!(
        q::<i64>(&mut c, &["HSETNX", "h", "e", "5"]).await.unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["HINCRBY", "h", "a", "-3"])
            .await
            .unwrap(),
        7
    );
    assert_eq!(
        q::<i64>(&mut c, &["HINCRBY", "h", "new", "5"])
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "f", "1.5"])
            .await
            .unwrap(),
        "1.5"
    );
    assert_eq!(
        q::<String>(&mut c, &["HINCRBYFLOAT", "h", "f", "0.5"])
            .await
            .unwrap(),
        "2"
    );
    q::<()>(&mut c, &["HSET", "h", "s", "abc"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "s", "1"]).await,
        "ERR hash value is not an integer"
    );
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "s", "1"]).await,
        "ERR hash value is not a float"
    );
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "f", "+inf"]).await,
        "ERR value is NaN or Infinity"
    );
    q::<()>(&mut c, &["HSET", "h", "big", &i64::MAX.to_string()])
        .await
        .unwrap();
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "big", "1"]).await,
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        err(&mut c, &["HSET", "h", "a"]).await,
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(
        err(&mut c, &["HMSET", "h", "a", "1", "b"]).await,
        "ERR wrong number of arguments for 'hmset' command"
    );
    // HRANDFIELD: one field, distinct fields, repeats, with values.
    let f: String = q(&mut c, &["HRANDFIELD", "h"]).await.unwrap();
    assert_eq!(q::<i64>(&mut c, &["HEXISTS", "h", &f]).await.unwrap(), 1);
    let n: i64 = q(&mut c, &["HLEN", "h"]).await.unwrap();
    let distinct: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "3"]).await.unwrap();
    assert_eq!(distinct.iter().collect::<HashSet<_>>().len(), 3);
    let everything: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "100"]).await.unwrap();
    assert_eq!(everything.len() as i64, n);
    let repeats: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "-50"]).await.unwrap();
    assert_eq!(repeats.len(), 50);
    let wv: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "2", "WITHVALUES"])
        .await
        .unwrap();
    assert_eq!(wv.len(), 4);
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "h", "2", "bogus"]).await,
        "ERR syntax error"
    );
    assert!(err(&mut c, &["HRANDFIELD", "h", "-9223372036854775808"])
        .await
        .contains("value is out of range"));
    // HSCAN over a listpack and a hashtable.
    for i in 0..300 {
        q::<()>(&mut c, &["HSET", "big", &format!("f{i}"), &format!("v{i}")])
            .await
            .unwrap();
    }
    assert_eq!(encoding(&mut c, "big").await, "hashtable");
    let mut seen = HashMap::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let (next, items): (String, Vec<String>) =
            q(&mut c, &["HSCAN", "big", &cursor, "COUNT", "20"])
                .await
                .unwrap();
        for p in items.chunks(2) {
            seen.insert(p[0].clone(), p[1].clone());
        }
        calls += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 300);
    assert_eq!(seen["f7"], "v7");
    assert!(calls > 5, "{calls}");
    let (_, matched): (String, Vec<String>) = q(&mut c, &["HSCAN", "h", "0", "MATCH", "a*"])
        .await
        .unwrap();
    assert_eq!(matched, ["a", "7"]);
    // HDEL; an emptied hash is deleted.
    assert_eq!(
        q::<i64>(&mut c, &["HSET", "tmp", "x", "1", "y", "2"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        q::<i64>(&mut c, &["HDEL", "tmp", "x", "nope"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(q::<i64>(&mut c, &["HDEL", "tmp", "y"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "tmp"]).await.unwrap(), 0);
    assert_eq!(q::<i64>(&mut c, &["HDEL", "tmp", "y"]).await.unwrap(), 0);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_commands() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    assert_eq!(
        q::<i64>(&mut c, &["SADD", "s", "a", "b", "c", "a"])
            .await
            .unwrap(),
        3
    );
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]).await.unwrap(), 3);
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "b"]).await.unwrap(), 1);
    assert_eq!(
        q::<Vec<i64>>(&mut c, &["SMISMEMBER", "s", "a", "z", "c"])
            .await
            .unwrap(),
        [1, 0, 1]
    );
    let m: HashSet<String> = q(&mut c, &["SMEMBERS", "s"]).await.unwrap();
    assert_eq!(m, ["a", "b", "c"].iter().map(|s| s.to_string()).collect());
    assert_eq!(
        q::<i64>(&mut c, &["SREM", "s", "a", "zz"]).await.unwrap(),
        1
    );
    q::<()>(&mut c, &["SADD", "t", "b", "x"]).await.unwrap();
    let inter: Vec<String> = q(&mut c, &["SINTER", "s", "t"]).await.unwrap();
    assert_eq!(inter, ["b"]);
    let mut union: Vec<String> = q(&mut c, &["SUNION", "s", "t", "nokey"]).await.unwrap();
    union.sort();
    assert_eq!(union, ["b", "c", "x"]);
    let diff: Vec<String> = q(&mut c, &["SDIFF", "s", "t"]).await.unwrap();
    assert_eq!(diff, ["c"]);
    assert_eq!(
        q::<i64>(&mut c, &["SINTERCARD", "2", "s", "t"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["SUNIONSTORE", "u", "s", "t"])
            .await
            .unwrap(),
        3
    );
    assert_eq!(q::<i64>(&mut c, &["SCARD", "u"]).await.unwrap(), 3);
    assert_eq!(
        q::<i64>(&mut c, &["SINTERSTORE", "u", "s", "nokey"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "u"]).await.unwrap(), 0);
    assert_eq!(
        q::<i64>(&mut c, &["SDIFFSTORE", "d", "s", "t"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["SMOVE", "s", "t", "c"]).await.unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["SMOVE", "s", "t", "c"]).await.unwrap(),
        0
    );
    assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "t", "c"]).await.unwrap(), 1);
    // s had {b, c}; c moved away, so s = {b}.
    assert_eq!(q::<String>(&mut c, &["SPOP", "s"]).await.unwrap(), "b");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]).await.unwrap(), 0);
    for i in 0..100 {
        q::<()>(&mut c, &["SADD", "ints", &i.to_string()])
            .await
            .unwrap();
    }
    assert_eq!(encoding(&mut c, "ints").await, "intset");
    let popped: Vec<String> = q(&mut c, &["SPOP", "ints", "10"]).await.unwrap();
    assert_eq!(popped.iter().collect::<HashSet<_>>().len(), 10);
    assert_eq!(q::<i64>(&mut c, &["SCARD", "ints"]).await.unwrap(), 90);
    let r: Vec<String> = q(&mut c, &["SRANDMEMBER", "ints", "-200"]).await.unwrap();
    assert_eq!(r.len(), 200);
    let r: Vec<String> = q(&mut c, &["SRANDMEMBER", "ints", "20"]).await.unwrap();
    assert_eq!(r.iter().collect::<HashSet<_>>().len(), 20);
    assert_eq!(
        err(&mut c, &["SPOP", "ints", "-1"]).await,
        "ERR value is out of range, must be positive"
    );
    q::<()>(&mut c, &["SADD", "ints", "not-an-int"])
        .await
        .unwrap();
    assert_eq!(encoding(&mut c, "ints").await, "hashtable");
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, items): (String, Vec<String>) =
            q(&mut c, &["SSCAN", "ints", &cursor, "COUNT", "7"])
                .await
                .unwrap();
        seen.extend(items);
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 91);
    assert_eq!(
        err(&mut c, &["SINTERCARD", "0", "s"]).await,
        "ERR numkeys should be greater than 0"
    );
    assert_eq!(
        err(&mut c, &["SINTERCARD", "1", "s", "LIMIT", "-1"]).await,
        "ERR LIMIT can't be negative"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrongtype_type_and_ttls() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    q::<()>(&mut c, &["HSET", "h", "f", "v"]).await.unwrap();
    q::<()>(&mut c, &["SADD", "s", "m"]).await.unwrap();
    q::<()>(&mut c, &["SET", "str", "v"]).await.unwrap();
    assert_eq!(q::<String>(&mut c, &["TYPE", "h"]).await.unwrap(), "hash");
    assert_eq!(q::<String>(&mut c, &["TYPE", "s"]).await.unwrap(), "set");
    assert_eq!(
        q::<String>(&mut c, &["TYPE", "str"]).await.unwrap(),
        "string"
    );
    for cmd in [
        vec!["GET", "h"],
        vec!["APPEND", "h", "x"],
        vec!["INCR", "h"],
        vec!["INCRBYFLOAT", "h", "1"],
        vec!["GETRANGE", "h", "0", "1"],
        vec!["STRLEN", "h"],
        vec!["SETRANGE", "h", "0", "x"],
        vec!["GETDEL", "h"],
        vec!["GETEX", "h"],
        vec!["GETSET", "h", "x"],
        vec!["SET", "h", "x", "GET"],
        vec!["HGET", "s", "f"],
        vec!["SADD", "h", "x"],
        vec!["SISMEMBER", "str", "x"],
        vec!["HSET", "str", "f", "v"],
        vec!["SINTER", "s", "h"],
        vec!["SMOVE", "s", "h", "m"],
    ] {
        assert_eq!(err(&mut c, &cmd).await, WRONGTYPE, "{cmd:?}");
    }
    // Nothing above changed a value.
    assert_eq!(q::<String>(&mut c, &["HGET", "h", "f"]).await.unwrap(), "v");
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["MGET", "str", "h", "s"])
            .await
            .unwrap(),
        vec![Some("v".into()), None, None]
    );
    // SCAN TYPE filters by type.
    let (_, keys): (String, Vec<String>) =
        q(&mut c, &["SCAN", "0", "TYPE", "hash", "COUNT", "1000"])
            .await
            .unwrap();
    assert_eq!(keys, ["h"]);
    // SET overwrites any type.
    assert_eq!(
        q::<String>(&mut c, &["SET", "h", "now-a-string"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(q::<String>(&mut c, &["TYPE", "h"]).await.unwrap(), "string");
    // TTLs on hashes and sets, kept across writes.
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "s", "100"]).await.unwrap(), 1);
    q::<()>(&mut c, &["SADD", "s", "m2"]).await.unwrap();
    let ttl: i64 = q(&mut c, &["TTL", "s"]).await.unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    assert_eq!(q::<i64>(&mut c, &["PEXPIRE", "s", "30"]).await.unwrap(), 1);
    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
    assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]).await.unwrap(), 0);
    assert_eq!(q::<String>(&mut c, &["TYPE", "s"]).await.unwrap(), "none");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encodings_config_and_memory_usage() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "hash-max-ziplist-entries"])
        .await
        .unwrap();
    assert_eq!(got, ["hash-max-ziplist-entries", "128"]);
    q::<()>(&mut c, &["HSET", "h", "f", "v"]).await.unwrap();
    assert_eq!(encoding(&mut c, "h").await, "listpack");
    let small: i64 = q(&mut c, &["MEMORY", "USAGE", "h"]).await.unwrap();
    q::<()>(&mut c, &["CONFIG", "SET", "hash-max-listpack-value", "4"])
        .await
        .unwrap();
    q::<()>(&mut c, &["HSET", "h", "g", "longer-than-4"])
        .await
        .unwrap();
    assert_eq!(encoding(&mut c, "h").await, "hashtable");
    for i in 0..1000 {
        q::<()>(
            &mut c,
            &["HSET", "h", &format!("field:{i}"), &"x".repeat(100)],
        )
        .await
        .unwrap();
    }
    let big: i64 = q(&mut c, &["MEMORY", "USAGE", "h"]).await.unwrap();
    // 1000 fields of ~110 bytes: at least 110 KB, honestly counted. (Both include the
    // key's share of its shard's index, a few hundred bytes in a near-empty shard.)
    assert!(
        small < 1000 && big > 110_000 && big < 250_000,
        "{small} {big}"
    );
    q::<()>(&mut c, &["CONFIG", "SET", "set-max-intset-entries", "2"])
        .await
        .unwrap();
    q::<()>(&mut c, &["SADD", "s", "1", "2"]).await.unwrap();
    assert_eq!(encoding(&mut c, "s").await, "intset");
    q::<()>(&mut c, &["SADD", "s", "3"]).await.unwrap();
    assert_eq!(encoding(&mut c, "s").await, "hashtable");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_treats_a_large_hash_as_one_object() {
    let cfg = ServerConfig {
        maxmemory: 2 * 1024 * 1024,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLru,
        shards: 1,
        ..ServerConfig::default()
    };
    let srv = TestServer::start(cfg).await;
    let mut c = srv.con().await;
    // A hash of ~1.5 MB, then strings until it is evicted: it goes as a whole (its
    // key vanishes and used_memory drops by its size in one step), never field by field.
    let value = "v".repeat(80);
    for i in 0..14_000 {
        q::<()>(&mut c, &["HSET", "big", &format!("field:{i}"), &value])
            .await
            .unwrap();
    }
    let size: i64 = q(&mut c, &["MEMORY", "USAGE", "big"]).await.unwrap();
    assert!(size > 1_000_000, "{size}");
    let mut i = 0;
    loop {
        let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
        let before = info_field(&info, "used_memory");
        q::<()>(&mut c, &["SET", &format!("k{i}"), &"x".repeat(100)])
            .await
            .unwrap();
        if q::<i64>(&mut c, &["EXISTS", "big"]).await.unwrap() == 0 {
            let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
            let after = info_field(&info, "used_memory");
            assert!(
                after + size as u64 <= before + 1024,
                "{before} -> {after}, hash {size}"
            );
            break;
        }
        // Never partly evicted (MEMORY USAGE does not touch the key; HLEN would). Its
        // figure moves by a few bytes only: the key's share of the shard's index.
        let now: i64 = q(&mut c, &["MEMORY", "USAGE", "big"]).await.unwrap();
        assert!(now + 4096 >= size, "evicted in part: {now} < {size}");
        i += 1;
        assert!(i < 60_000, "never evicted");
    }
    let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
    assert!(info_field(&info, "used_memory") <= 2 * 1024 * 1024);
    srv.stop().await;
}

/// DUMP / RESTORE of hashes and sets over a socket: round trips with a TTL, REPLACE over
/// another type, BUSYKEY, and a payload DUMPed by redis-server 7.0.15 (a listpack hash),
/// which Redis writes for small hashes.
#[tokio::test]
async fn dump_and_restore_hashes_and_sets() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let long = "v".repeat(200);
    let _: i64 = q(&mut c, &["HSET", "h", "a", "1", "b", &long, "c", "-7"])
        .await
        .unwrap();
    let _: i64 = q(&mut c, &["SADD", "s", "1", "x", "70000"]).await.unwrap();
    for (key, copy) in [("h", "h2"), ("s", "s2")] {
        let payload: Vec<u8> = redis::cmd("DUMP")
            .arg(key)
            .query_async(&mut c)
            .await
            .unwrap();
        let _: () = redis::cmd("RESTORE")
            .arg(copy)
            .arg(60_000)
            .arg(&payload)
            .query_async(&mut c)
            .await
            .unwrap();
        let ttl: i64 = q(&mut c, &["PTTL", copy]).await.unwrap();
        assert!(ttl > 0 && ttl <= 60_000, "{ttl}");
        // Restoring onto an existing key needs REPLACE, whatever that key holds.
        let e: redis::RedisResult<()> = redis::cmd("RESTORE")
            .arg(copy)
            .arg(0)
            .arg(&payload)
            .query_async(&mut c)
            .await;
        assert_eq!(e.unwrap_err().code(), Some("BUSYKEY"));
        let _: () = q(&mut c, &["SET", "str", "x"]).await.unwrap();
        let _: () = redis::cmd("RESTORE")
            .arg("str")
            .arg(0)
            .arg(&payload)
            .arg("REPLACE")
            .query_async(&mut c)
            .await
            .unwrap();
        let t: String = q(&mut c, &["TYPE", "str"]).await.unwrap();
        assert_eq!(t, if key == "h" { "hash" } else { "set" });
        let _: i64 = q(&mut c, &["DEL", "str"]).await.unwrap();
    }
    let h2: HashMap<String, String> = q(&mut c, &["HGETALL", "h2"]).await.unwrap();
    let want: HashMap<String, String> = [("a", "1"), ("b", long.as_str()), ("c", "-7")]
        .into_iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    assert_eq!(h2, want);
    let s2: HashSet<String> = q(&mut c, &["SMEMBERS", "s2"]).await.unwrap();
    assert_eq!(
        s2,
        ["1", "x", "70000"].map(String::from).into_iter().collect()
    );

    // redis-server 7.0.15's DUMP of HSET k a 1 b 300 c 70000 d 5000000000 e -5 f hello g "".
    let hex = "103c3c0000000e008161020101816202c12c02816302f270110104816402f400f2052a0100000009816502dffb028166028568656c6c6f068167028001ff0a00fa540bacd91bd0af";
    let redis_payload: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let _: () = redis::cmd("RESTORE")
        .arg("fromredis")
        .arg(0)
        .arg(&redis_payload)
        .query_async(&mut c)
        .await
        .unwrap();
    let got: HashMap<String, String> = q(&mut c, &["HGETALL", "fromredis"]).await.unwrap();
    assert_eq!(got.len(), 7);
    assert_eq!(got["d"], "5000000000");
    assert_eq!(got["e"], "-5");
    assert_eq!(got["g"], "");
    // A corrupted payload is refused and nothing is written.
    let mut bad = redis_payload.clone();
    bad[5] ^= 0x40;
    let e: redis::RedisResult<()> = redis::cmd("RESTORE")
        .arg("bad")
        .arg(0)
        .arg(&bad)
        .query_async(&mut c)
        .await;
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("payload version or checksum are wrong"));
    let n: i64 = q(&mut c, &["EXISTS", "bad"]).await.unwrap();
    assert_eq!(n, 0);
    s.stop().await;
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

async fn dump_of(c: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query_async(c).await.unwrap()
}

async fn restore_of(
    c: &mut redis::aio::MultiplexedConnection,
    key: &str,
    ttl: i64,
    payload: &[u8],
) -> redis::RedisResult<()> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(ttl)
        .arg(payload)
        .query_async(c)
        .await
}

/// DUMP / RESTORE of sorted sets over a socket: both encodings round trip with their
/// scores (inf, -inf, fractions, whole numbers past 2^53) and TTL, the restored set gets
/// the encoding the server's zset-max-listpack-* give it, redis-server 7.0.15's payloads
/// restore, and a corrupt one is refused.
#[tokio::test]
async fn dump_and_restore_sorted_sets() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let _: i64 = q(
        &mut c,
        &[
            "ZADD", "small", "1", "a", "-2.5", "b", "inf", "c", "-inf", "d", "0.1", "e", "5e15",
            "f", "12", "10",
        ],
    )
    .await
    .unwrap();
    let mut args: Vec<String> = vec!["ZADD".into(), "big".into()];
    for i in 0..300 {
        args.push(format!("{}", i as f64 / 7.0));
        args.push(format!("member-{i}"));
    }
    args.extend(["1000".into(), "y".repeat(100)]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let _: i64 = q(&mut c, &argv).await.unwrap();
    assert_eq!(encoding(&mut c, "small").await, "listpack");
    assert_eq!(encoding(&mut c, "big").await, "skiplist");
    for (key, copy, enc) in [("small", "small2", "listpack"), ("big", "big2", "skiplist")] {
        let payload = dump_of(&mut c, key).await;
        restore_of(&mut c, copy, 60_000, &payload).await.unwrap();
        let ttl: i64 = q(&mut c, &["PTTL", copy]).await.unwrap();
        assert!(ttl > 0 && ttl <= 60_000, "{ttl}");
        let want: Vec<String> = q(&mut c, &["ZRANGE", key, "0", "-1", "WITHSCORES"])
            .await
            .unwrap();
        let got: Vec<String> = q(&mut c, &["ZRANGE", copy, "0", "-1", "WITHSCORES"])
            .await
            .unwrap();
        assert_eq!(got, want);
        assert_eq!(encoding(&mut c, copy).await, enc);
        let e = restore_of(&mut c, copy, 0, &payload).await;
        assert_eq!(e.unwrap_err().code(), Some("BUSYKEY"));
    }
    let got: Vec<String> = q(&mut c, &["ZRANGE", "small2", "0", "-1", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(
        got,
        [
            "d",
            "-inf",
            "b",
            "-2.5",
            "e",
            "0.10000000000000001",
            "a",
            "1",
            "10",
            "12",
            "f",
            "5000000000000000",
            "c",
            "inf"
        ]
    );
    // The restoring server's limits decide: a skiplist payload within them becomes a
    // listpack; a listpack payload past zset-max-listpack-entries becomes a skiplist.
    let small = dump_of(&mut c, "small").await;
    let _: i64 = q(&mut c, &["ZREMRANGEBYRANK", "big", "0", "-3"])
        .await
        .unwrap();
    let two = dump_of(&mut c, "big").await; // a skiplist of 2, one member of 100 bytes
    restore_of(&mut c, "two", 0, &two).await.unwrap();
    assert_eq!(encoding(&mut c, "two").await, "skiplist");
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-value", "200"])
        .await
        .unwrap();
    restore_of(&mut c, "two2", 0, &two).await.unwrap();
    assert_eq!(encoding(&mut c, "two2").await, "listpack");
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-entries", "3"])
        .await
        .unwrap();
    restore_of(&mut c, "seven", 0, &small).await.unwrap();
    assert_eq!(encoding(&mut c, "seven").await, "skiplist");
    q::<()>(
        &mut c,
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
    )
    .await
    .unwrap();
    q::<()>(&mut c, &["CONFIG", "SET", "zset-max-listpack-value", "64"])
        .await
        .unwrap();

    // redis-server 7.0.15's DUMP of ZADD k 1.5 a -2 b 0 c 300 d 70000 e 5000000000 f
    // (RDB_TYPE_ZSET_LISTPACK), and of ZADD k 1 a 2.5 b -inf c under
    // zset-max-listpack-entries 2 (RDB_TYPE_ZSET_2).
    let lp = unhex("1135350000000c00816202dffe02816302000181610283312e3504816402c12c02816502f270110104816602f400f2052a0100000009ff0a00f0e24b8868264d3d");
    let sk = unhex(
        "0503016200000000000004400161000000000000f03f0163000000000000f0ff0a009a24ca8fdcb1d08c",
    );
    restore_of(&mut c, "fromredis", 0, &lp).await.unwrap();
    let got: Vec<String> = q(&mut c, &["ZRANGE", "fromredis", "0", "-1", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(
        got,
        [
            "b",
            "-2",
            "c",
            "0",
            "a",
            "1.5",
            "d",
            "300",
            "e",
            "70000",
            "f",
            "5000000000"
        ]
    );
    // Augur's DUMP of the same set is the same bytes.
    assert_eq!(dump_of(&mut c, "fromredis").await, lp);
    restore_of(&mut c, "fromredis2", 0, &sk).await.unwrap();
    let got: Vec<String> = q(&mut c, &["ZRANGE", "fromredis2", "0", "-1", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(got, ["c", "-inf", "a", "1", "b", "2.5"]);
    assert_eq!(encoding(&mut c, "fromredis2").await, "listpack");
    // A bit flipped inside: the checksum fails; a sealed payload with a duplicate
    // member is "Bad data format". Nothing is written either way.
    let mut bad = lp.clone();
    bad[9] ^= 1;
    let e = restore_of(&mut c, "bad", 0, &bad).await.unwrap_err();
    assert!(e
        .to_string()
        .contains("payload version or checksum are wrong"));
    let mut dup = vec![5, 2];
    for _ in 0..2 {
        dup.extend_from_slice(&[1, b'a']);
        dup.extend_from_slice(&2f64.to_le_bytes());
    }
    augur_server::commands::dump::rdb_seal_payload(&mut dup);
    let e = restore_of(&mut c, "bad", 0, &dup).await.unwrap_err();
    assert!(e.to_string().contains("Bad data format"), "{e}");
    let n: i64 = q(&mut c, &["EXISTS", "bad"]).await.unwrap();
    assert_eq!(n, 0);
    s.stop().await;
}
