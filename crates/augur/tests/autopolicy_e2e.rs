//! `maxmemory-policy auto` over real sockets (augur_server::autopolicy): the server
//! runs K-LRU where K-LRU misses least and LHD where LHD does, switches live, and
//! policy switches (the chooser's and CONFIG SET's, to and from auto) under concurrent
//! clients lose no key and corrupt no value.

mod common;

use augur_server::ServerConfig;
use common::{
    dlru_decision, dlru_interval, get_or_set, info_field, limit_to_keys_then_auto, q,
    wait_dlru_interval, TestServer,
};
use redis::aio::MultiplexedConnection;
use std::time::Duration;

/// Every key sampled (R = 1: the miniatures are full size, so the tests need no
/// tolerance for sampling error); only the chooser's own interval (`dlru-interval`
/// GETs) ends decisions.
fn config(interval: u64) -> ServerConfig {
    ServerConfig {
        shards: 4,
        tenant_sample_rate: 1.0,
        tenant_sample_rate_auto: false,
        tenant_interval: u64::MAX,
        tenant_interval_ms: 0,
        dlru_interval: interval,
        ..ServerConfig::default()
    }
}

/// MGETs every key of `phase` and checks each holds its own value; with `all`, that
/// none is missing.
async fn check_values(
    con: &mut MultiplexedConnection,
    phase: &str,
    writers: usize,
    keys: usize,
    all: bool,
) {
    for w in 0..writers {
        let names: Vec<String> = (0..keys).map(|i| format!("{phase}:{w}:{i}")).collect();
        let mut args = vec!["MGET"];
        args.extend(names.iter().map(String::as_str));
        let got: Vec<Option<String>> = q(con, &args).await.unwrap();
        for (i, v) in got.iter().enumerate() {
            match v {
                Some(v) => assert_eq!(v, &value_of(w, i), "{phase}:{w}:{i}"),
                None => assert!(!all, "{phase}:{w}:{i} lost"),
            }
        }
    }
}

/// A fixed-seed generator (the workloads are reproducible).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

async fn effective_policy(con: &mut MultiplexedConnection) -> String {
    let info: String = q(con, &["INFO", "dlru"]).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("maxmemory_policy_effective:"))
        .unwrap()
        .trim()
        .to_string()
}

/// The two workloads of the simulator's test (augur_server::autopolicy), replayed over
/// sockets with every key sampled (R = 1: the miniatures are full size, so the test
/// needs no tolerance for sampling error), 1000 keys of room:
/// - a hot set of 800 keys that moves to 800 new keys every 10 000 GETs: K-LRU drops
///   the old set within a phase and misses ~8 %, LHD keeps the old set's often-hit
///   keys and misses ~60 % (simulated);
/// - a hot set of 600 keys read on every other GET, the other half a scan of keys
///   never read again: LHD ranks never-hit keys lowest (~52 % misses), S3-FIFO drops
///   them from probation (about the same), K-LRU lets the scan push hot keys out
///   (~69 %).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_runs_lru_on_shifting_sets_and_lhd_on_scans() {
    let s = TestServer::start(config(10_000)).await;
    let mut con = s.con().await;
    let value = "v".repeat(100);
    limit_to_keys_then_auto(&mut con, 1000, &value, "maxmemory-policy").await;
    // The initial policy until the chooser has evidence.
    assert_eq!(effective_policy(&mut con).await, "allkeys-s3fifo");

    // Shifting hot sets: K-LRU wins.
    let mut rng = Lcg(777);
    let before = dlru_interval(&dlru_decision(&mut con).await);
    for i in 0..60_000u64 {
        let key = format!("shift:{}", (i / 10_000) * 100_000 + rng.next() % 800);
        get_or_set(&mut con, &key, &value).await;
    }
    let d = wait_dlru_interval(&mut con, before + 5).await;
    assert!(d["policy"].starts_with("redis-lru:"), "{d:?}");
    // Decided on full miniatures; running K-LRU, its own family counts nothing.
    assert_eq!(d["filled"], "1", "{d:?}");
    assert_eq!(d["streak_klru"], "0", "{d:?}");
    let m5: f64 = d["misses_k5"].parse().unwrap();
    let ml: f64 = d["misses_lhd"].parse().unwrap();
    let ms: f64 = d["misses_s3fifo"].parse().unwrap();
    assert!(m5 < ml && m5 < ms, "{d:?}");
    assert_eq!(d["installed"], "1", "{d:?}");
    let lru_switches: u64 = d["switches"].parse().unwrap();
    assert!(lru_switches >= 1, "{d:?}");
    assert_eq!(effective_policy(&mut con).await, "allkeys-lru");

    // Hot set plus a scan: LHD wins.
    let before = dlru_interval(&dlru_decision(&mut con).await);
    let mut scan = 0u64;
    for _ in 0..60_000u64 {
        let key = if rng.next().is_multiple_of(2) {
            format!("hot:{}", rng.next() % 600)
        } else {
            scan += 1;
            format!("scan:{scan}")
        };
        get_or_set(&mut con, &key, &value).await;
    }
    let d = wait_dlru_interval(&mut con, before + 5).await;
    let m5: f64 = d["misses_k5"].parse().unwrap();
    let ml: f64 = d["misses_lhd"].parse().unwrap();
    let ms: f64 = d["misses_s3fifo"].parse().unwrap();
    // Both scan-resistant policies beat K-LRU here (they often tie: the hot set fits);
    // one of them runs, not costlier than the other by more than the switching margin.
    assert!(ml < m5 && ms < m5, "{d:?}");
    let cost = |name: &str| -> f64 { d[&format!("cost_{name}")].parse().unwrap() };
    let (running, other, store_name) = if d["policy"].starts_with("s3fifo:") {
        ("s3fifo", "lhd", "allkeys-s3fifo")
    } else {
        assert!(d["policy"].starts_with("lhd:"), "{d:?}");
        ("lhd", "s3fifo", "allkeys-lhd")
    };
    assert!(cost(running) <= cost(other) * 1.02, "{d:?}");
    let switches: u64 = d["switches"].parse().unwrap();
    assert!(switches > lru_switches, "{d:?}");
    assert_eq!(effective_policy(&mut con).await, store_name);
    let t: std::collections::HashMap<String, String> =
        q(&mut con, &["TENANT", "INFO", "default"]).await.unwrap();
    assert_eq!(t["eviction_policy"], store_name, "{t:?}");

    // A fixed policy turns auto off; the store runs it from then on.
    let _: () = q(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await
    .unwrap();
    let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "maxmemory-policy"])
        .await
        .unwrap();
    assert_eq!(got[1], "allkeys-lru");
    for i in 0..3000 {
        get_or_set(&mut con, &format!("hot:{}", i % 600), &value).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let info: String = q(&mut con, &["INFO", "dlru"]).await.unwrap();
    assert_eq!(info_field(&info, "maxmemory_policy_auto"), 0);
    assert_eq!(effective_policy(&mut con).await, "allkeys-lru");
    s.stop().await;
}

fn value_of(w: usize, i: usize) -> String {
    format!("value-{w}-{i}-{}", "x".repeat(40 + (i * 7 + w) % 60))
}

/// Writers and readers on four connections while a fifth flips `maxmemory-policy`
/// between auto, allkeys-lhd, allkeys-s3fifo and allkeys-lru and `tenant-partitioning` between off and
/// static (the per-tenant policy path), with auto deciding every 1000 GETs. First
/// without a memory limit: every key written must be there with its value. Then under
/// a limit (evicting under every policy): every key left must hold its own value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_under_concurrent_load_loses_no_key() {
    let s = TestServer::start(config(1000)).await;
    const WRITERS: usize = 4;
    const KEYS: usize = 2500;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));

    let flipper = {
        let mut con = s.con().await;
        let stop = stop.clone();
        tokio::spawn(async move {
            let policies = [
                "auto",
                "allkeys-lhd",
                "auto",
                "allkeys-s3fifo",
                "auto",
                "allkeys-lru",
                "auto",
            ];
            let modes = ["off", "static"];
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let p = policies[n % policies.len()];
                let _: () = q(&mut con, &["CONFIG", "SET", "maxmemory-policy", p])
                    .await
                    .unwrap();
                if n.is_multiple_of(3) {
                    let m = modes[(n / 3) % 2];
                    let _: () = q(&mut con, &["CONFIG", "SET", "tenant-partitioning", m])
                        .await
                        .unwrap();
                }
                n += 1;
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            n
        })
    };

    let run_writers = |phase: &'static str| {
        let mut handles = Vec::new();
        for w in 0..WRITERS {
            let addr = s.con();
            handles.push(async move {
                let mut con = addr.await;
                let mut rng = Lcg(w as u64 + 1);
                for i in 0..KEYS {
                    let key = format!("{phase}:{w}:{i}");
                    let _: () = q(&mut con, &["SET", &key, &value_of(w, i)]).await.unwrap();
                    // Re-read an earlier key: present (phase 1) or gone, never wrong.
                    let j = (rng.next() as usize) % (i + 1);
                    let v: Option<String> = q(&mut con, &["GET", &format!("{phase}:{w}:{j}")])
                        .await
                        .unwrap();
                    if phase == "a" {
                        assert_eq!(
                            v.as_deref(),
                            Some(value_of(w, j).as_str()),
                            "{phase}:{w}:{j}"
                        );
                    } else if let Some(v) = v {
                        assert_eq!(v, value_of(w, j), "{phase}:{w}:{j}");
                    }
                }
            });
        }
        futures_util::future::join_all(handles)
    };

    // Phase a: no limit, nothing may go.
    run_writers("a").await;
    let mut con = s.con().await;
    let n: u64 = q(&mut con, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, (WRITERS * KEYS) as u64);
    check_values(&mut con, "a", WRITERS, KEYS, true).await;

    // Phase b: a limit of half the data: evictions under every policy, values intact.
    let info: String = q(&mut con, &["INFO", "memory"]).await.unwrap();
    let used = info_field(&info, "used_memory");
    let _: () = q(
        &mut con,
        &["CONFIG", "SET", "maxmemory", &(used / 2).to_string()],
    )
    .await
    .unwrap();
    run_writers("b").await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.await.unwrap();
    assert!(flips >= 10, "only {flips} policy flips");
    let info: String = q(&mut con, &["INFO", "stats"]).await.unwrap();
    assert!(info_field(&info, "evicted_keys") > 0);
    for phase in ["a", "b"] {
        check_values(&mut con, phase, WRITERS, KEYS, false).await;
    }
    let pong: String = q(&mut con, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
    s.stop().await;
}
