//! LHD in the server (issue 9, item 1): `maxmemory-policy allkeys-lhd` / `volatile-lhd`
//! over real sockets: live switches under concurrent load keep every key, INFO shows the
//! models, and the server's miss ratio follows `augur sim --policy lhd` on a real trace.

mod common;
#[path = "../../../tests/support/traces.rs"]
mod traces;

use augur_server::ServerConfig;
use augur_sim::{simulate, PolicySpec, Unit};
use common::{info_field, load_refs, q, replay_miss_ratio, TestServer};
use redis::aio::MultiplexedConnection;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn value_of(key: &str, round: u32) -> String {
    format!("{key}:{round}:{}", "v".repeat(40 + key.len() % 30))
}

/// Cycles `maxmemory-policy` through `policies` until `stop`; returns switches made.
async fn switcher(
    mut con: MultiplexedConnection,
    policies: &'static [&'static str],
    stop: Arc<AtomicBool>,
) -> usize {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let p = policies[n % policies.len()];
        let ok: String = q(&mut con, &["CONFIG", "SET", "maxmemory-policy", p])
            .await
            .unwrap();
        assert_eq!(ok, "OK");
        let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "maxmemory-policy"])
            .await
            .unwrap();
        assert_eq!(got[1], p);
        n += 1;
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    n
}

/// Without a memory limit nothing may be evicted: four clients write, overwrite, read
/// and rename their keys while a fifth switches the policy between LRU, LHD and the
/// others every few milliseconds. Afterwards DBSIZE and every value are exactly what
/// the clients wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_switches_under_concurrent_load_lose_no_key() {
    let srv = TestServer::start(ServerConfig::default()).await;
    const POLICIES: &[&str] = &[
        "allkeys-lhd",
        "allkeys-lru",
        "volatile-lhd",
        "allkeys-lhd",
        "allkeys-random",
        "volatile-lru",
        "allkeys-s3fifo",
        "volatile-s3fifo",
        "allkeys-lfu",
        "volatile-lfu",
        "noeviction",
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let sw = tokio::spawn(switcher(srv.con().await, POLICIES, stop.clone()));
    let mut workers = Vec::new();
    for t in 0..4u32 {
        let mut con = srv.con().await;
        workers.push(tokio::spawn(async move {
            for round in 0..6u32 {
                for i in 0..500u32 {
                    let k = format!("w{t}:{i}");
                    let v = value_of(&k, round);
                    let _: () = q(&mut con, &["SET", &k, &v]).await.unwrap();
                    if i % 5 == 0 {
                        let _: i64 = q(&mut con, &["EXPIRE", &k, "1000"]).await.unwrap();
                    }
                    let got: Option<String> = q(&mut con, &["GET", &k]).await.unwrap();
                    assert_eq!(got.as_deref(), Some(v.as_str()), "{k}");
                    if i % 7 == 0 {
                        // Out and back: the entry's tag travels with it.
                        let tmp = format!("{k}:tmp");
                        let _: () = q(&mut con, &["RENAME", &k, &tmp]).await.unwrap();
                        let _: () = q(&mut con, &["RENAME", &tmp, &k]).await.unwrap();
                    }
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let switches = sw.await.unwrap();
    assert!(switches >= 5, "only {switches} policy switches happened");
    let mut con = srv.con().await;
    let n: u64 = q(&mut con, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 4 * 500);
    for t in 0..4u32 {
        for i in 0..500u32 {
            let k = format!("w{t}:{i}");
            let got: Option<String> = q(&mut con, &["GET", &k]).await.unwrap();
            assert_eq!(got, Some(value_of(&k, 5)), "{k}");
        }
    }
    srv.stop().await;
}

/// With a limit, the same switching (LRU, LHD, S3-FIFO and LFU, all keys and volatile) keeps memory
/// within the limit, every read answers the value written or nothing, no write is
/// refused, and INFO memory names the policy and LHD's per-tenant state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_switches_under_memory_pressure_keep_evicting_correctly() {
    let srv = TestServer::start(ServerConfig {
        maxmemory: 2 << 20,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLhd,
        ..ServerConfig::default()
    })
    .await;
    const POLICIES: &[&str] = &[
        "allkeys-lru",
        "allkeys-lhd",
        "volatile-lhd",
        "allkeys-s3fifo",
        "allkeys-lhd",
        "volatile-s3fifo",
        "allkeys-lfu",
        "volatile-lfu",
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let sw = tokio::spawn(switcher(srv.con().await, POLICIES, stop.clone()));
    let mut workers = Vec::new();
    for t in 0..3u32 {
        let mut con = srv.con().await;
        workers.push(tokio::spawn(async move {
            for i in 0..12_000u32 {
                // A hot set re-read often and a stream of new keys, half with a TTL.
                let k = if i % 3 == 0 {
                    format!("hot{t}:{}", i % 300)
                } else {
                    format!("cold{t}:{i}")
                };
                let got: Option<String> = q(&mut con, &["GET", &k]).await.unwrap();
                let v = value_of(&k, 0);
                match got {
                    Some(g) => assert_eq!(g, v, "{k}"),
                    None if i % 2 == 0 => {
                        let _: () = q(&mut con, &["SET", &k, &v, "EX", "1000"]).await.unwrap();
                    }
                    None => {
                        // Under volatile-lhd this may find nothing to evict: then OOM
                        // is the right answer (as volatile-lru), not a lost key.
                        let r: redis::RedisResult<()> = q(&mut con, &["SET", &k, &v]).await;
                        if let Err(e) = r {
                            assert_eq!(e.code(), Some("OOM"), "{k}: {e}");
                        }
                    }
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    sw.await.unwrap();
    let mut con = srv.con().await;
    let _: String = q(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lhd"],
    )
    .await
    .unwrap();
    // One more write under LHD so that its models exist whatever the last switch was.
    let _: () = q(&mut con, &["SET", "last", "x"]).await.unwrap();
    let info: String = q(&mut con, &["INFO", "memory"]).await.unwrap();
    assert!(info.contains("maxmemory_policy:allkeys-lhd"), "{info}");
    assert_eq!(info_field(&info, "lhd_samples"), 64);
    let line = info
        .lines()
        .find(|l| l.starts_with("lhd_tenant0:"))
        .unwrap_or_else(|| panic!("no lhd_tenant0 line in {info}"));
    assert!(
        line.contains("models=") && line.contains("reconfigurations="),
        "{line}"
    );
    assert!(info_field(&info, "used_memory") <= 2 << 20, "{info}");
    let stats: String = q(&mut con, &["INFO", "stats"]).await.unwrap();
    assert!(info_field(&stats, "evicted_keys") > 1000, "{stats}");
    // lhd-samples is a live setting, range-checked.
    let _: String = q(&mut con, &["CONFIG", "SET", "lhd-samples", "16"])
        .await
        .unwrap();
    let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "lhd-samples"])
        .await
        .unwrap();
    assert_eq!(got[1], "16");
    let e = common::err(&mut con, &["CONFIG", "SET", "lhd-samples", "0"]).await;
    assert!(e.contains("between 1 and 1024"), "{e}");
    srv.stop().await;
}

/// Fidelity at a small size (bench/fidelity.sh lhd does the shared traces): the
/// cloudphysics trace replayed (GET, SET of 100 bytes on a miss, one connection) into
/// the server under allkeys-lhd at ~25 % of its working set, against `augur sim`'s LHD
/// (the same `LhdModel`) at the number of keys the server held: within 1 point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_lhd_miss_ratio_follows_the_simulator() {
    if !traces::available(&["cloudphysics"]) {
        return;
    }
    let trace = load_refs(&traces::path("cloudphysics"));
    // 48 974 objects; ~140 bytes a key with a 100-byte value.
    let cfg = ServerConfig {
        maxmemory: 12_000 * 140,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLhd,
        ..ServerConfig::default()
    };
    let (server, keys) = replay_miss_ratio(cfg, &trace).await;
    let sim = simulate(&trace, PolicySpec::Lhd { k: 64 }, keys, Unit::Objects, 42).miss_ratio;
    eprintln!("cloudphysics, {keys} keys: server {server:.4}, simulator {sim:.4}");
    assert!(
        keys > 8_000 && keys < 16_000,
        "{keys} keys held: not ~25 % of the working set"
    );
    assert!(
        (server - sim).abs() <= 0.01,
        "server LHD miss ratio {server:.4}, simulator {sim:.4}"
    );
}
