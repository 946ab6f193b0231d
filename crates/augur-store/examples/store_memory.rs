//! Memory per key of the bare store: loads N keys `key:%010d` with 100-byte values and
//! prints used_memory / key and process RSS / key.
//! `cargo run --release -p augur-store --example store_memory [N] [SHARDS]`
//! Also prints the latency distribution of single SETs (index resizes show in the tail).

use augur_store::{EvictionPolicy, Ns, SetTtl, Store, StoreConfig};

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let base = rss();
    let shards: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let store = Store::new(StoreConfig {
        policy: EvictionPolicy::NoEviction,
        shards,
        ..Default::default()
    });
    let value = [b'v'; 100];
    // Latency samples (4 bytes each) are subtracted from the RSS figures below.
    let mut lat: Vec<u32> = Vec::with_capacity(n as usize);
    let lat_bytes = lat.capacity() as u64 * 4;
    let t = std::time::Instant::now();
    for i in 0..n {
        let k = format!("key:{i:010}");
        let t0 = std::time::Instant::now();
        store
            .lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &value, SetTtl::Clear, 0)
            .unwrap();
        lat.push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
    }
    let secs = t.elapsed().as_secs_f64();
    lat.sort_unstable();
    let q = |f: f64| lat[((lat.len() as f64 * f) as usize).min(lat.len() - 1)];
    println!(
        "set latency ns: p50 {} p99 {} p99.9 {} p99.99 {} max {}",
        q(0.5),
        q(0.99),
        q(0.999),
        q(0.9999),
        lat[lat.len() - 1]
    );
    println!(
        "keys={n} used_memory/key={:.1} B  rss/key={:.1} B  (rss delta/key {:.1} B, baseline {:.1} MiB)  {:.2} M sets/s",
        store.used_memory() as f64 / n as f64,
        (rss() - lat_bytes) as f64 / n as f64,
        (rss() - lat_bytes - base) as f64 / n as f64,
        base as f64 / 1048576.0,
        n as f64 / secs / 1e6
    );
}
