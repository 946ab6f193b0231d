//! Time per SET under eviction of the bare store, by eviction policy: one thread, the
//! server's 64 shards, a memory limit, random keys `key:%012d` over a keyspace larger
//! than fits (as `redis-benchmark -t set -d 100 -r 1000000`), 100-byte values. After a
//! warm-up (the limit reached, LHD's models past their first reconfiguration) every SET
//! evicts; prints ns per SET for each policy, in alternated rounds, and the medians.
//! Isolates the eviction path's cost (the cost bar of `bench/lhd_cost.sh`) from the
//! network and redis-benchmark's share of the cores, which move rps by 10-15 % from run
//! to run on a small machine.
//! `cargo run --release -p augur-store --example evict_cost [ROUNDS=5] [N=2000000]
//! [MAXMEMORY_MB=64] [POLICY...=allkeys-lru allkeys-lhd]` (`LHD_SAMPLES=A`: LHD's
//! candidates per eviction, `lhd-samples`)

use augur_store::{EvictionPolicy, Ns, SetTtl, Store, StoreConfig};
use rand::{Rng, SeedableRng};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let n: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let mb: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(64);
    let mut policies: Vec<String> = args.iter().skip(4).cloned().collect();
    if policies.is_empty() {
        policies = vec!["allkeys-lru".into(), "allkeys-lhd".into()];
    }
    let keyspace = 1_000_000u64;
    let value = [b'x'; 100];
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
    for round in 0..rounds {
        for (i, name) in policies.iter().enumerate() {
            let policy = name.parse::<EvictionPolicy>().expect("a maxmemory-policy");
            let store = Store::new(StoreConfig {
                shards: 64,
                databases: 16,
                maxmemory: mb << 20,
                policy,
                ..Default::default()
            });
            if let Some(a) = std::env::var("LHD_SAMPLES")
                .ok()
                .and_then(|a| a.parse().ok())
            {
                store.set_lhd_samples(a);
            }
            let mut rng = rand::rngs::SmallRng::seed_from_u64(round as u64);
            let mut key = Vec::with_capacity(16);
            let mut set = |rng: &mut rand::rngs::SmallRng| {
                key.clear();
                let k = rng.gen_range(0..keyspace);
                key.extend_from_slice(format!("key:{k:012}").as_bytes());
                let _ = store
                    .lock_key(&key)
                    .set(Ns::new(0, 0), &key, &value, SetTtl::Clear, 0);
            };
            // Warm-up: fill to the limit, then as many SETs again (every shard's LHD
            // model reconfigures after 2^20 / 64 of its accesses).
            for _ in 0..3 * keyspace {
                set(&mut rng);
            }
            let evicted = store.stats(0).evicted_keys;
            let t = Instant::now();
            for _ in 0..n {
                set(&mut rng);
            }
            let ns = t.elapsed().as_nanos() as f64 / n as f64;
            let evictions = store.stats(0).evicted_keys - evicted;
            println!(
                "round {round} {name:<14} {ns:7.1} ns/SET  evictions/SET {:.3}",
                evictions as f64 / n as f64
            );
            results[i].push(ns);
        }
    }
    println!("medians:");
    for (name, r) in policies.iter().zip(&mut results) {
        r.sort_by(|a, b| a.total_cmp(b));
        println!("  {name:<14} {:7.1} ns/SET", r[r.len() / 2]);
    }
}
