//! Memory per key of the bare store: loads N keys `key:%010d` with 100-byte values and
//! prints used_memory / key and process RSS / key.
//! `cargo run --release -p augur-store --example store_memory [N]`

use augur_store::{EvictionPolicy, SetTtl, Store, StoreConfig};

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
    let store = Store::new(StoreConfig {
        policy: EvictionPolicy::NoEviction,
        ..Default::default()
    });
    let value = [b'v'; 100];
    let t = std::time::Instant::now();
    for i in 0..n {
        let k = format!("key:{i:010}");
        store
            .lock_key(k.as_bytes())
            .set(0, k.as_bytes(), &value, SetTtl::Clear, 0)
            .unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "keys={n} used_memory/key={:.1} B  rss/key={:.1} B  (rss delta/key {:.1} B, baseline {:.1} MiB)  {:.2} M sets/s",
        store.used_memory() as f64 / n as f64,
        rss() as f64 / n as f64,
        (rss() - base) as f64 / n as f64,
        base as f64 / 1048576.0,
        n as f64 / secs / 1e6
    );
}
