//! End-to-end tests of lazy freeing (`augur_store::lazyfree`, Redis's lazyfree.c) over
//! real sockets: UNLINK, FLUSHDB / FLUSHALL ASYNC and the `lazyfree-lazy-*` parameters
//! hand large values (free effort over 64) to the background thread, which INFO
//! memory's `lazyfree_pending_objects` / `lazyfreed_objects` count; small values and
//! the synchronous forms are freed in place and not counted.

mod common;

use augur_server::ServerConfig;
use common::{q, TestServer};
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};

async fn lazyfree(c: &mut MultiplexedConnection) -> (u64, u64) {
    let info: String = q(c, &["INFO", "memory"]).await.unwrap();
    (
        common::info_field(&info, "lazyfree_pending_objects"),
        common::info_field(&info, "lazyfreed_objects"),
    )
}

/// Waits until nothing is pending and returns `lazyfreed_objects`.
async fn freed(c: &mut MultiplexedConnection) -> u64 {
    let t0 = Instant::now();
    loop {
        let (pending, freed) = lazyfree(c).await;
        if pending == 0 {
            return freed;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{pending} still pending"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A set of `n` members (a hash table from 65 members on: free effort `n`).
async fn big_set(c: &mut MultiplexedConnection, key: &str, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let mut cmd = redis::cmd("SADD");
        cmd.arg(key);
        for i in chunk {
            cmd.arg(format!("member:{i}"));
        }
        let _: i64 = cmd.query_async(c).await.unwrap();
    }
}

#[tokio::test]
async fn unlink_and_flush_async_free_large_values_in_the_background() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    assert_eq!(lazyfree(&mut c).await, (0, 0));
    // UNLINK: the key is gone at the reply, its value freed off the request path.
    big_set(&mut c, "big", 100_000).await;
    let n: i64 = q(&mut c, &["UNLINK", "big", "missing"]).await.unwrap();
    assert_eq!(n, 1);
    let n: i64 = q(&mut c, &["EXISTS", "big"]).await.unwrap();
    assert_eq!(n, 0);
    assert_eq!(freed(&mut c).await, 1);
    // A small value (effort 64: at the threshold, not over it) is freed in place.
    big_set(&mut c, "small", 64).await;
    let n: i64 = q(&mut c, &["UNLINK", "small"]).await.unwrap();
    assert_eq!(n, 1);
    assert_eq!(freed(&mut c).await, 1);
    // DEL frees in place unless lazyfree-lazy-user-del.
    big_set(&mut c, "big", 1000).await;
    let n: i64 = q(&mut c, &["DEL", "big"]).await.unwrap();
    assert_eq!(n, 1);
    assert_eq!(freed(&mut c).await, 1);
    let _: String = q(&mut c, &["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"])
        .await
        .unwrap();
    let v: Vec<String> = q(&mut c, &["CONFIG", "GET", "lazyfree-lazy-user-del"])
        .await
        .unwrap();
    assert_eq!(v, ["lazyfree-lazy-user-del", "yes"]);
    big_set(&mut c, "big", 1000).await;
    let n: i64 = q(&mut c, &["DEL", "big"]).await.unwrap();
    assert_eq!(n, 1);
    assert_eq!(freed(&mut c).await, 2);
    // FLUSHALL ASYNC: every key gone at the reply; the two large values counted.
    for k in ["a", "b"] {
        big_set(&mut c, k, 1000).await;
    }
    for i in 0..10 {
        let _: String = q(&mut c, &["SET", &format!("s{i}"), "v"]).await.unwrap();
    }
    let _: String = q(&mut c, &["FLUSHALL", "ASYNC"]).await.unwrap();
    let n: i64 = q(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 0);
    assert_eq!(freed(&mut c).await, 4);
    // FLUSHDB SYNC frees in place; FLUSHDB alone follows lazyfree-lazy-user-flush.
    big_set(&mut c, "a", 1000).await;
    let _: String = q(&mut c, &["FLUSHDB", "SYNC"]).await.unwrap();
    assert_eq!(freed(&mut c).await, 4);
    big_set(&mut c, "a", 1000).await;
    let _: String = q(&mut c, &["FLUSHDB"]).await.unwrap();
    assert_eq!(freed(&mut c).await, 4);
    let _: String = q(
        &mut c,
        &["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"],
    )
    .await
    .unwrap();
    big_set(&mut c, "a", 1000).await;
    let _: String = q(&mut c, &["FLUSHDB"]).await.unwrap();
    assert_eq!(freed(&mut c).await, 5);
    // CONFIG RESETSTAT zeroes the count.
    let _: String = q(&mut c, &["CONFIG", "RESETSTAT"]).await.unwrap();
    assert_eq!(lazyfree(&mut c).await, (0, 0));
    s.stop().await;
}

#[tokio::test]
async fn expiry_eviction_and_replacement_follow_their_parameters() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    // Off (the default): an expired large set is freed in place.
    big_set(&mut c, "e", 1000).await;
    let _: i64 = q(&mut c, &["PEXPIRE", "e", "1"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let n: i64 = q(&mut c, &["EXISTS", "e"]).await.unwrap();
    assert_eq!(n, 0);
    assert_eq!(freed(&mut c).await, 0);
    // lazyfree-lazy-expire: lazy expiry (a read), active expiry (the cron) and
    // EXPIRE with a time in the past.
    let _: String = q(&mut c, &["CONFIG", "SET", "lazyfree-lazy-expire", "yes"])
        .await
        .unwrap();
    big_set(&mut c, "e", 1000).await;
    let _: i64 = q(&mut c, &["PEXPIRE", "e", "1"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let v: Option<String> = q(&mut c, &["SRANDMEMBER", "e"]).await.unwrap();
    assert_eq!(v, None);
    assert_eq!(freed(&mut c).await, 1);
    big_set(&mut c, "e", 1000).await;
    let _: i64 = q(&mut c, &["PEXPIRE", "e", "1"]).await.unwrap();
    let t0 = Instant::now();
    loop {
        let n: i64 = q(&mut c, &["DBSIZE"]).await.unwrap();
        if n == 0 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "not expired actively"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(freed(&mut c).await, 2);
    big_set(&mut c, "e", 1000).await;
    let _: i64 = q(&mut c, &["EXPIREAT", "e", "1"]).await.unwrap();
    assert_eq!(freed(&mut c).await, 3);
    // lazyfree-lazy-server-del: SET over a large set, RENAME onto one.
    big_set(&mut c, "r", 1000).await;
    let _: String = q(&mut c, &["SET", "r", "now a string"]).await.unwrap();
    assert_eq!(freed(&mut c).await, 3);
    let _: String = q(
        &mut c,
        &["CONFIG", "SET", "lazyfree-lazy-server-del", "yes"],
    )
    .await
    .unwrap();
    let _: i64 = q(&mut c, &["DEL", "r"]).await.unwrap();
    big_set(&mut c, "r", 1000).await;
    let _: String = q(&mut c, &["SET", "r", "now a string"]).await.unwrap();
    assert_eq!(freed(&mut c).await, 4);
    big_set(&mut c, "dst", 1000).await;
    let _: String = q(&mut c, &["RENAME", "r", "dst"]).await.unwrap();
    let v: String = q(&mut c, &["GET", "dst"]).await.unwrap();
    assert_eq!(v, "now a string");
    assert_eq!(freed(&mut c).await, 5);
    // lazyfree-lazy-eviction: large sets evicted under maxmemory.
    let _: String = q(&mut c, &["FLUSHALL"]).await.unwrap();
    let _: String = q(&mut c, &["CONFIG", "SET", "lazyfree-lazy-eviction", "yes"])
        .await
        .unwrap();
    for k in ["v1", "v2", "v3", "v4"] {
        big_set(&mut c, k, 20_000).await;
    }
    let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
    let used = common::info_field(&info, "used_memory");
    let _: String = q(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    )
    .await
    .unwrap();
    let half = (used / 2).to_string();
    let _: String = q(&mut c, &["CONFIG", "SET", "maxmemory", &half])
        .await
        .unwrap();
    let _: String = q(&mut c, &["SET", "trigger", "v"]).await.unwrap();
    let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
    let evicted = common::info_field(&info, "evicted_keys");
    assert!(evicted >= 2, "evicted {evicted}");
    assert_eq!(freed(&mut c).await, 5 + evicted);
    s.stop().await;
}
