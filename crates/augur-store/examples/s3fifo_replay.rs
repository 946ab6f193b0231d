//! S3-FIFO's fidelity without the server around it: replays a trace into the bare store
//! (`allkeys-s3fifo`, K = 8; a GET, and a SET of a 100-byte value on a miss, one thread)
//! and compares its miss ratio with `augur sim --policy s3fifo:8`'s at the number of keys
//! the store held at the end (the mean of five seeds), and, with more than one shard,
//! with SHARDS simulated caches of 1/SHARDS of that each, keys split by hash (what the
//! split alone costs). `bench/fidelity.sh s3fifo` measures the server; this takes the
//! network, the connections and the command layer out, and runs in seconds.
//!
//! Run: cargo run --release -p augur-store --example s3fifo_replay -- TRACE...
//! (each at ~10 / 25 / 50 % of its working set; SHARDS=64 by default, BYTES_PER_KEY=140
//! as `bench/fidelity.sh`).

use augur_sim::s3fifo::{S3FifoCache, S3FifoConfig};
use augur_sim::{CacheSim, Unit};
use augur_store::{EvictionPolicy, Ns, SetTtl, Store, StoreConfig};

fn env_or(name: &str, default: u64) -> anyhow::Result<u64> {
    Ok(std::env::var(name)
        .ok()
        .map_or(Ok(default), |s| s.parse())?)
}

/// Misses of one S3-FIFO simulator of `capacity` objects per part over `keys`.
fn sim_miss_ratio(keys: &[u64], capacity: u64, parts: usize, seed: u64) -> f64 {
    let mut caches: Vec<S3FifoCache> = (0..parts)
        .map(|p| {
            S3FifoCache::new(
                S3FifoConfig::sampled(8),
                capacity / parts as u64,
                Unit::Objects,
                seed + p as u64,
            )
        })
        .collect();
    let misses = keys
        .iter()
        .filter(|&&k| {
            let p = ((k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % parts as u64) as usize;
            !caches[p].access(k, 1)
        })
        .count();
    misses as f64 / keys.len().max(1) as f64
}

fn main() -> anyhow::Result<()> {
    let shards = env_or("SHARDS", 64)? as usize;
    let bytes_per_key = env_or("BYTES_PER_KEY", 140)?;
    println!(
        "{:13} {:>5} {:>8} {:>8} {:>8} {:>8} {:>12}",
        "trace", "ws%", "keys", "store", "sim", "diff_pp", "sharded_sim"
    );
    for path in std::env::args().skip(1) {
        let keys: Vec<u64> = augur_trace::load_all(&path)?
            .iter()
            .map(|r| r.key)
            .collect();
        let ws = keys.iter().collect::<std::collections::HashSet<_>>().len() as u64;
        let name = std::path::Path::new(&path)
            .file_name()
            .map_or(path.clone(), |n| n.to_string_lossy().into_owned());
        let name = name.split('.').next().unwrap_or("").to_string();
        for pct in [10, 25, 50] {
            let store = Store::new(StoreConfig {
                shards,
                databases: 16,
                maxmemory: ws * pct / 100 * bytes_per_key,
                policy: EvictionPolicy::AllKeysS3Fifo,
                ..Default::default()
            });
            store.set_samples(8);
            let ns = Ns::new(0, 0);
            let value = [b'a'; 100];
            let mut key = String::new();
            let mut misses = 0u64;
            for &k in &keys {
                key.clear();
                use std::fmt::Write;
                let _ = write!(key, "{k}");
                let mut shard = store.lock_key(key.as_bytes());
                if !matches!(shard.get(ns, key.as_bytes(), 0), Ok(Some(_))) {
                    misses += 1;
                    let _ = shard.set(ns, key.as_bytes(), &value, SetTtl::Clear, 0);
                }
            }
            let held = store.stats(0).keys_per_db[0].0;
            let stored = misses as f64 / keys.len().max(1) as f64;
            let sim = (42..47)
                .map(|seed| sim_miss_ratio(&keys, held, 1, seed))
                .sum::<f64>()
                / 5.0;
            let sharded = if shards > 1 {
                format!("{:.4}", sim_miss_ratio(&keys, held, shards, 42))
            } else {
                "-".into()
            };
            println!(
                "{name:13} {:4.1}% {held:8} {stored:8.4} {sim:8.4} {:+8.2} {sharded:>12}",
                100.0 * held as f64 / ws as f64,
                (stored - sim) * 100.0
            );
        }
    }
    Ok(())
}
