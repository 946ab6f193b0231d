//! What the server's per-shard LHD models alone change against the simulator's one
//! model (`augur_store::lhd`: each shard runs `lhd_shard_config(shards)`, 1 000 age bins
//! instead of 20 000), with no other server detail: the trace is split by key hash into
//! SHARDS simulated LHD caches of 1/SHARDS of the capacity each, and compared with one
//! `augur sim --policy lhd` cache of the whole capacity. `bench/fidelity.sh lhd` measures
//! the server itself; this separates the shards' share of its difference.
//!
//! Run: cargo run --release -p augur-store --example lhd_shards -- TRACE... [CAPACITY...]
//! (a CAPACITY is a number of objects; without any, 10 / 25 / 50 % of each trace's
//! working set). SHARDS (default 64) in the environment.

use augur_sim::lhd::{LhdCache, LhdConfig};
use augur_sim::{CacheSim, Unit};

/// Miss ratio of `shards` LHD caches of `capacity / shards` objects each, keys split by
/// hash, all with model configuration `cfg`.
fn miss_ratio(requests: &[u64], capacity: u64, shards: usize, cfg: &LhdConfig) -> f64 {
    let mut caches: Vec<LhdCache> = (0..shards)
        .map(|s| {
            LhdCache::new(
                cfg.clone(),
                capacity / shards as u64,
                Unit::Objects,
                42 + s as u64,
            )
        })
        .collect();
    let misses = requests
        .iter()
        .filter(|&&key| {
            let shard = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % shards as u64) as usize;
            !caches[shard].access(key, 1)
        })
        .count();
    misses as f64 / requests.len().max(1) as f64
}

fn main() -> anyhow::Result<()> {
    let shards: usize = std::env::var("SHARDS").ok().map_or(Ok(64), |s| s.parse())?;
    let (traces, capacities): (Vec<String>, Vec<String>) = std::env::args()
        .skip(1)
        .partition(|a| a.parse::<u64>().is_err());
    let capacities: Vec<u64> = capacities.iter().map(|c| c.parse().unwrap()).collect();
    let sharded = augur_store::lhd_shard_config(shards);
    println!(
        "{:13} {:>9} {:>8} {:>10} {:>10} {:>8}",
        "trace", "capacity", "ws%", "one model", "sharded", "diff_pp"
    );
    for path in &traces {
        let requests: Vec<u64> = augur_trace::load_all(path)?.iter().map(|r| r.key).collect();
        let ws = requests
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len() as u64;
        let name = std::path::Path::new(path)
            .file_name()
            .map_or(path.clone(), |n| {
                n.to_string_lossy()
                    .split('.')
                    .next()
                    .unwrap_or("")
                    .to_string()
            });
        let sizes = if capacities.is_empty() {
            vec![ws / 10, ws / 4, ws / 2]
        } else {
            capacities.clone()
        };
        for capacity in sizes {
            let (one, split) = std::thread::scope(|s| {
                let one = s.spawn(|| miss_ratio(&requests, capacity, 1, &LhdConfig::default()));
                let split = miss_ratio(&requests, capacity, shards, &sharded);
                (one.join().unwrap(), split)
            });
            println!(
                "{name:13} {capacity:9} {:7.1}% {one:10.4} {split:10.4} {:+8.2}",
                100.0 * capacity as f64 / ws as f64,
                (split - one) * 100.0
            );
        }
    }
    Ok(())
}
