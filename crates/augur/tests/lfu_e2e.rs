//! Redis's LFU policies in the server over real sockets: `maxmemory-policy allkeys-lfu`
//! / `volatile-lfu`, `lfu-log-factor` / `lfu-decay-time`, OBJECT FREQ, RESTORE ... FREQ,
//! and what LFU keeps that LRU does not under a memory limit.

mod common;
#[path = "../../../tests/support/traces.rs"]
mod traces;

use augur_server::ServerConfig;
use augur_sim::{simulate, PolicySpec, Unit};
use common::{
    err, get_or_set, info_field, limit_to_keys, load_refs, q, replay_miss_ratio, TestServer,
};
use redis::aio::MultiplexedConnection;

async fn freq(con: &mut MultiplexedConnection, key: &str) -> i64 {
    q(con, &["OBJECT", "FREQ", key]).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lfu_settings_are_redis_s() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut con = srv.con().await;
    for p in ["allkeys-lfu", "volatile-lfu", "ALLKEYS-LFU"] {
        let ok: String = q(&mut con, &["CONFIG", "SET", "maxmemory-policy", p])
            .await
            .unwrap();
        assert_eq!(ok, "OK");
        let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "maxmemory-policy"])
            .await
            .unwrap();
        assert_eq!(got[1], p.to_ascii_lowercase());
    }
    let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "lfu-*"]).await.unwrap();
    assert_eq!(
        got,
        ["lfu-log-factor", "10", "lfu-decay-time", "1"].map(String::from)
    );
    let _: () = q(&mut con, &["CONFIG", "SET", "lfu-log-factor", "3"])
        .await
        .unwrap();
    let _: () = q(&mut con, &["CONFIG", "SET", "lfu-decay-time", "0"])
        .await
        .unwrap();
    let got: Vec<String> = q(&mut con, &["CONFIG", "GET", "lfu-*"]).await.unwrap();
    assert_eq!(
        got,
        ["lfu-log-factor", "3", "lfu-decay-time", "0"].map(String::from)
    );
    let e = err(&mut con, &["CONFIG", "SET", "lfu-log-factor", "-1"]).await;
    assert!(e.contains("lfu-log-factor"), "{e}");
    let e = err(&mut con, &["CONFIG", "SET", "maxmemory-policy", "lfu"]).await;
    assert!(e.contains("volatile-lfu, allkeys-lfu"), "{e}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_freq_and_restore_freq_as_redis() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut con = srv.con().await;
    let _: () = q(&mut con, &["SET", "foo", "bar"]).await.unwrap();
    // Redis's reply when the policy is not LFU.
    let e = err(&mut con, &["OBJECT", "FREQ", "foo"]).await;
    assert!(
        e.starts_with("ERR An LFU maxmemory policy is not selected"),
        "{e}"
    );
    let _: () = q(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    )
    .await
    .unwrap();
    let _: () = q(&mut con, &["SET", "new", "v"]).await.unwrap();
    assert_eq!(freq(&mut con, "new").await, 5, "LFU_INIT_VAL");
    // Factor 0: every read counts one.
    let _: () = q(&mut con, &["CONFIG", "SET", "lfu-log-factor", "0"])
        .await
        .unwrap();
    for _ in 0..50 {
        let _: String = q(&mut con, &["GET", "new"]).await.unwrap();
    }
    assert_eq!(freq(&mut con, "new").await, 55);
    // OBJECT FREQ itself does not touch the key; a missing key is a null reply.
    assert_eq!(freq(&mut con, "new").await, 55);
    let none: Option<i64> = q(&mut con, &["OBJECT", "FREQ", "nokey"]).await.unwrap();
    assert_eq!(none, None);
    // dump.tcl's "RESTORE can set LFU".
    let dump: Vec<u8> = q(&mut con, &["DUMP", "foo"]).await.unwrap();
    let _: () = q(&mut con, &["DEL", "foo"]).await.unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("foo")
        .arg(0)
        .arg(&dump[..])
        .arg("FREQ")
        .arg(100)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(freq(&mut con, "foo").await, 100);
    let v: String = q(&mut con, &["GET", "foo"]).await.unwrap();
    assert_eq!(v, "bar");
    // Out of range, as Redis words it.
    let e = match redis::cmd("RESTORE")
        .arg("x")
        .arg(0)
        .arg(&dump[..])
        .arg("FREQ")
        .arg(256)
        .query_async::<()>(&mut con)
        .await
    {
        Err(e) => e.to_string(),
        Ok(()) => panic!("FREQ 256 accepted"),
    };
    assert!(
        e.contains("Invalid FREQ value, must be >= 0 and <= 255"),
        "{e}"
    );
    // IDLETIME under LFU is ignored (objectSetLRUOrLFU), the key is restored.
    let _: () = redis::cmd("RESTORE")
        .arg("idle")
        .arg(0)
        .arg(&dump[..])
        .arg("IDLETIME")
        .arg(1000)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(freq(&mut con, "idle").await, 5);
    // Back to LRU: OBJECT FREQ is refused again, the keys stay.
    let _: () = q(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await
    .unwrap();
    let e = err(&mut con, &["OBJECT", "FREQ", "foo"]).await;
    assert!(e.contains("not selected"), "{e}");
    let n: u64 = q(&mut con, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 3);
    srv.stop().await;
}

/// A cache-aside client reads 100 hot keys once a round and then 1000 keys never seen
/// again, in a server limited to ~500 keys: under allkeys-lru the hot keys' reuse
/// distance (1100 keys) is beyond the cache, under allkeys-lfu their counters keep them.
/// Four shards, not the default 64: at ~8 keys a shard, each shard's 16-entry pool
/// would hold every key with the score it had when sampled (as Redis's pool does), so
/// a hot key pooled at a new key's count would be evicted on that stale count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allkeys_lfu_keeps_the_hot_set_through_scans_where_lru_cannot() {
    let value = "v".repeat(100);
    let mut hits = Vec::new();
    for policy in ["allkeys-lru", "allkeys-lfu"] {
        let srv = TestServer::start(ServerConfig {
            shards: 4,
            ..ServerConfig::default()
        })
        .await;
        let mut con = srv.con().await;
        let limit = limit_to_keys(&mut con, 500, &value).await;
        let _: () = q(&mut con, &["CONFIG", "SET", "maxmemory-policy", policy])
            .await
            .unwrap();
        let (mut scan, mut hot_hits) = (0u32, 0u32);
        for round in 0..25 {
            for h in 0..100 {
                let hit = get_or_set(&mut con, &format!("hot:{h}"), &value)
                    .await
                    .is_some();
                if round >= 15 {
                    hot_hits += hit as u32;
                }
            }
            for _ in 0..1000 {
                get_or_set(&mut con, &format!("scan:{scan}"), &value).await;
                scan += 1;
            }
        }
        let info: String = q(&mut con, &["INFO"]).await.unwrap();
        assert!(info_field(&info, "used_memory") <= limit);
        assert!(info_field(&info, "evicted_keys") > 10_000);
        hits.push(hot_hits);
        srv.stop().await;
    }
    // 10 rounds x 100 hot reads measured.
    let (lru, lfu) = (hits[0], hits[1]);
    assert!(lru < 1000 / 5, "LRU hot hits {lru}");
    assert!(lfu > 1000 * 8 / 10, "LFU hot hits {lfu} (LRU {lru})");
}

/// Fidelity (as bench/fidelity.sh for K-LRU, LHD and S3-FIFO): the cloudphysics trace
/// replayed (GET, SET of 100 bytes on a miss, one connection) into the server under
/// allkeys-lfu at ~25 % of its working set, against `augur sim --policy redis-lfu:5`
/// (the same counter and pool code) at the number of keys the server held: within 1
/// point. `lfu-decay-time 0`: the simulator has no wall time to decay by.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_lfu_miss_ratio_follows_the_simulator() {
    if !traces::available(&["cloudphysics"]) {
        return;
    }
    let trace = load_refs(&traces::path("cloudphysics"));
    let cfg = ServerConfig {
        maxmemory: 12_000 * 140,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLfu,
        lfu_decay_time: 0,
        ..ServerConfig::default()
    };
    let (server, keys) = replay_miss_ratio(cfg, &trace).await;
    let sims: Vec<f64> = (42..45)
        .map(|seed| {
            simulate(
                &trace,
                PolicySpec::RedisLfu { k: 5 },
                keys,
                Unit::Objects,
                seed,
            )
            .miss_ratio
        })
        .collect();
    let sim = sims.iter().sum::<f64>() / sims.len() as f64;
    let lru = simulate(
        &trace,
        PolicySpec::RedisLru { k: 5 },
        keys,
        Unit::Objects,
        42,
    )
    .miss_ratio;
    eprintln!("cloudphysics, {keys} keys: server LFU {server:.4}, simulator LFU {sim:.4} {sims:?}, LRU {lru:.4}");
    assert!(
        keys > 8_000 && keys < 16_000,
        "{keys} keys held: not ~25 % of the working set"
    );
    assert!(
        (server - sim).abs() <= 0.01,
        "server LFU miss ratio {server:.4}, simulator {sim:.4}"
    );
}
