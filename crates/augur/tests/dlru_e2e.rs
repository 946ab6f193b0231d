//! `maxmemory-samples auto` (DLRU) over real sockets: the K the server installs follows
//! the workload (a loop larger than the cache wants random eviction, K <= 2; a recency
//! pattern wants LRU-like K >= 5), and setting a number turns auto off.

mod common;

use augur_server::dlru::DLRU_KS;
use augur_server::ServerConfig;
use common::{
    dlru_decision, dlru_interval, get_or_set, info_field, limit_to_keys_then_auto, q,
    wait_dlru_interval, TestServer,
};
use std::time::Duration;

/// A server evicting by `policy` with `maxmemory-samples auto`, a limit of 1000 keys of
/// the returned 100-byte value, and a connection to it.
async fn start_with_auto_k(
    policy: augur_store::EvictionPolicy,
) -> (TestServer, redis::aio::MultiplexedConnection, String) {
    let cfg = ServerConfig {
        shards: 4,
        maxmemory_policy: policy,
        // Every reference sampled (R = 1): the miniatures are full-size and exact, so
        // the tests need no tolerance for sampling error.
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
    (s, con, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_k_follows_the_workload_and_a_number_turns_it_off() {
    let (s, mut con, value) = start_with_auto_k(augur_store::EvictionPolicy::AllKeysLru).await;

    // Phase 1: a loop over 1300 keys (30 % more than fit). LRU evicts each key just
    // before it comes back; random eviction keeps ~a third of the loop.
    // The loop runs until two whole 20 000-GET intervals of it alone have ended (45 500
    // GETs without drops; the profiler drops references on a full queue under load, so
    // an interval can need more), at most 200 rounds.
    let before = dlru_interval(&dlru_decision(&mut con).await);
    for round in 0.. {
        for i in 0..1300 {
            get_or_set(&mut con, &format!("loop:{i}"), &value).await;
        }
        if round >= 34 && dlru_interval(&dlru_decision(&mut con).await) >= before + 2 {
            break;
        }
        assert!(round < 200, "no two loop intervals after 200 rounds");
    }
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
    // The first interval it ends also holds the loop's tail; the pattern runs until two
    // more, of it alone, have ended (59 600 GETs without drops), so the decision weighs
    // two whole intervals of it against the loop's (DLRU's `should_switch`: a large
    // smoothed gain switches at once).
    let before = dlru_interval(&dlru_decision(&mut con).await);
    for i in 0u32.. {
        get_or_set(&mut con, &format!("new:{i}"), &value).await;
        if i >= 400 {
            get_or_set(&mut con, &format!("new:{}", i - 400), &value).await;
        }
        if i >= 30_000
            && i % 1000 == 0
            && dlru_interval(&dlru_decision(&mut con).await) >= before + 3
        {
            break;
        }
        assert!(i < 300_000, "no three intervals after 600 000 GETs");
    }
    let d = wait_dlru_interval(&mut con, before + 3).await;
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

/// Under `allkeys-lfu`, `maxmemory-samples auto` chooses K among miniatures of Redis's
/// LFU (the decision line says `family=lfu`), not of LRU: on a hot set read through
/// one-off scans (a hot key comes back 1200 references later, past the 1000 keys that
/// fit, so LRU loses it and LFU keeps it) LFU at K = 16 misses less than at K = 1, the
/// K installed is the one of fewest misses, and a switch to `allkeys-lru` rebuilds the
/// miniatures as LRU's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_k_under_lfu_simulates_lfu() {
    let (s, mut con, value) = start_with_auto_k(augur_store::EvictionPolicy::AllKeysLfu).await;
    let mut i = 0u64;
    let mut hot_and_scans = async |con: &mut _, n: u64| {
        for _ in 0..n {
            let key = if i.is_multiple_of(4) {
                format!("hot:{}", (i / 4) % 300)
            } else {
                format!("scan:{i}")
            };
            get_or_set(con, &key, &value).await;
            i += 1;
        }
    };
    let before = dlru_interval(&dlru_decision(&mut con).await);
    hot_and_scans(&mut con, 45_000).await;
    let d = wait_dlru_interval(&mut con, before + 2).await;
    assert_eq!(d.get("family").map(String::as_str), Some("lfu"), "{d:?}");
    assert_eq!(d["fallback"], "0", "{d:?}");
    assert_eq!(d["installed"], "1", "{d:?}");
    let misses = |k: u32| -> f64 { d[&format!("misses_k{k}")].parse().unwrap() };
    assert!(misses(16) < misses(1), "{d:?}");
    // LFU keeps the hot set: about the scans miss (3/4 of the references).
    let sampled: f64 = d["sampled_refs"].parse().unwrap();
    assert!(misses(16) < 0.8 * sampled, "{d:?}");
    let k: u32 = d["k"].parse().unwrap();
    let least = DLRU_KS
        .iter()
        .map(|&k| misses(k))
        .fold(f64::INFINITY, f64::min);
    // The K installed misses least over the smoothed intervals; in this one it is at
    // most 2 % off the least.
    assert!(misses(k) <= least * 1.02, "K = {k}: {d:?}");
    let info: String = q(&mut con, &["INFO", "dlru"]).await.unwrap();
    assert_eq!(
        info_field(&info, "maxmemory_samples_effective"),
        u64::from(k)
    );

    let _: () = q(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await
    .unwrap();
    // The profiler drops the LFU models at its next refresh; the new models count their
    // intervals from 1, and their first decision is LRU's (no `family`), where LRU at
    // K = 16 loses the hot set that LFU kept.
    hot_and_scans(&mut con, 25_000).await;
    let t = std::time::Instant::now();
    let d = loop {
        let d = dlru_decision(&mut con).await.unwrap();
        if !d.contains_key("family") {
            break d;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "still LFU's: {d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let lru16: f64 = d["misses_k16"].parse().unwrap();
    let sampled: f64 = d["sampled_refs"].parse().unwrap();
    assert!(lru16 > 0.9 * sampled, "{d:?}");
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
