//! `maxmemory-samples auto` (DLRU) over real sockets: the K the server installs follows
//! the workload (a loop larger than the cache wants random eviction, K <= 2; a recency
//! pattern wants LRU-like K >= 5), and setting a number turns auto off.

mod common;

use augur_server::ServerConfig;
use common::{
    dlru_decision, dlru_interval, get_or_set, info_field, limit_to_keys_then_auto, q,
    wait_dlru_interval, TestServer,
};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_k_follows_the_workload_and_a_number_turns_it_off() {
    let cfg = ServerConfig {
        shards: 4,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLru,
        // Every reference sampled (R = 1): the miniatures are full-size and exact, so
        // the test needs no tolerance for sampling error.
        tenant_sample_rate: 1.0,
        tenant_sample_rate_auto: false,
        // Only DLRU's own interval ends decisions here.
        tenant_interval: u64::MAX,
        tenant_interval_ms: 0,
        dlru_interval: 20_000,
        ..ServerConfig::default()
    };
    let s = TestServer::start(cfg).await;
    let mut con = s.con().await;
    let value = "v".repeat(100);
    // The cache holds 1000 such keys: measure their charged bytes, then set the limit.
    limit_to_keys_then_auto(&mut con, 1000, &value, "maxmemory-samples").await;

    // Phase 1: a loop over 1300 keys (30 % more than fit). LRU evicts each key just
    // before it comes back; random eviction keeps ~a third of the loop.
    let before = dlru_interval(&dlru_decision(&mut con).await);
    for _ in 0..35 {
        for i in 0..1300 {
            get_or_set(&mut con, &format!("loop:{i}"), &value).await;
        }
    }
    // 45 500 GETs: two whole 20 000-GET intervals of the loop alone.
    let d = wait_dlru_interval(&mut con, before + 2).await;
    let k_loop: u32 = d["k"].parse().unwrap();
    assert_eq!(d["fallback"], "0", "{d:?}");
    assert!(k_loop <= 2, "loop chose K = {k_loop}: {d:?}");
    let m1: f64 = d["misses_k1"].parse().unwrap();
    let m16: f64 = d["misses_k16"].parse().unwrap();
    assert!(m1 < m16, "{d:?}");
    assert_eq!(d["installed"], "1");
    let info: String = q(&mut con, &["INFO", "dlru"]).await.unwrap();
    assert_eq!(
        info_field(&info, "maxmemory_samples_effective"),
        u64::from(k_loop)
    );

    // Phase 2: each new key is read again 400 new keys later (800 distinct keys in
    // between fit under LRU; random eviction loses ~33 % of them).
    let before = dlru_interval(&dlru_decision(&mut con).await);
    for i in 0..30_000u32 {
        get_or_set(&mut con, &format!("new:{i}"), &value).await;
        if i >= 400 {
            get_or_set(&mut con, &format!("new:{}", i - 400), &value).await;
        }
    }
    let d = wait_dlru_interval(&mut con, before + 2).await;
    let k_rec: u32 = d["k"].parse().unwrap();
    assert!(k_rec >= 5, "recency chose K = {k_rec}: {d:?}");
    let m1: f64 = d["misses_k1"].parse().unwrap();
    let m16: f64 = d["misses_k16"].parse().unwrap();
    assert!(m16 < m1, "{d:?}");
    let info: String = q(&mut con, &["INFO", "dlru"]).await.unwrap();
    assert_eq!(
        info_field(&info, "maxmemory_samples_effective"),
        u64::from(k_rec)
    );

    // A number turns auto off and that K is the store's again.
    let _: () = q(&mut con, &["CONFIG", "SET", "maxmemory-samples", "7"])
        .await
        .unwrap();
    let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "maxmemory-samples"])
        .await
        .unwrap();
    assert_eq!(got[1], "7");
    let info: String = q(&mut con, &["INFO", "dlru"]).await.unwrap();
    assert_eq!(info_field(&info, "dlru_enabled"), 0);
    assert_eq!(info_field(&info, "maxmemory_samples_effective"), 7);
    // And stays so under more traffic (the profiler no longer installs K).
    for i in 0..3000 {
        get_or_set(&mut con, &format!("loop:{}", i % 1300), &value).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let info: String = q(&mut con, &["INFO", "dlru"]).await.unwrap();
    assert_eq!(info_field(&info, "maxmemory_samples_effective"), 7);
    s.stop().await;
}

#[tokio::test]
async fn bad_values_are_refused_with_redis_wording() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let e = common::err(&mut con, &["CONFIG", "SET", "maxmemory-samples", "0"]).await;
    assert!(
        e.contains("argument must be between 1 and 64 inclusive"),
        "{e}"
    );
    let e = common::err(&mut con, &["CONFIG", "SET", "k-chooser", "lru"]).await;
    assert!(e.contains("krr, minisim"), "{e}");
    let e = common::err(&mut con, &["CONFIG", "SET", "dlru-interval", "10"]).await;
    assert!(e.contains("between 1000"), "{e}");
    let _: () = q(&mut con, &["CONFIG", "SET", "k-chooser", "minisim"])
        .await
        .unwrap();
    let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "k-chooser"]).await.unwrap();
    assert_eq!(got[1], "minisim");
    s.stop().await;
}
