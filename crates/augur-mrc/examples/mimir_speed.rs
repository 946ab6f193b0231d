//! MIMIR throughput and memory on arc_p3 (3.9M requests, 762k objects), one core, the
//! trace decoded in memory first. The cache is 50,000 objects (the MIMIR paper's Table 1
//! size for the P-traces) with 50,000 ghosts; MIMIR runs beside its own exact LRU cache
//! ([`MimirLru`]), so the figure is "LRU cache + profiler" per request. Also prints the
//! accuracy against exact LRU over 1..=100,000 objects.
//!
//! `cargo run --release -p augur-mrc --example mimir_speed [trace] [cache_size]`

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use augur_mrc::curve::SizeUnit;
use augur_mrc::mimir::{Aging, MimirConfig, MimirLru};
use augur_mrc::shards::Shards;
use augur_mrc::MrcModel;

fn load(name: &str) -> Vec<(u64, u32)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(format!("{name}.oracleGeneral.bin.zst"));
    let mut raw = Vec::new();
    zstd::Decoder::new(std::fs::File::open(&path).expect("trace"))
        .expect("zstd")
        .read_to_end(&mut raw)
        .expect("read");
    raw.chunks_exact(24)
        .map(|r| {
            (
                u64::from_le_bytes(r[4..12].try_into().unwrap()),
                u32::from_le_bytes(r[12..16].try_into().unwrap()),
            )
        })
        .collect()
}

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`), so
/// the rate is not diluted by other processes on a shared machine; None elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("arc_p3", String::as_str);
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50_000);
    let trace = load(name);
    let mut exact = Shards::fixed_rate(1.0);
    for &(k, s) in &trace {
        exact.access(k, s);
    }
    let exact = exact.curve(SizeUnit::Objects);
    println!(
        "{name}: {} requests, cache {n} objects + {n} ghosts",
        trace.len()
    );
    for (aging, b) in [
        (Aging::Rounder, 8),
        (Aging::Rounder, 128),
        (Aging::Stacker, 8),
        (Aging::Stacker, 128),
    ] {
        let mut best = f64::INFINITY;
        let mut best_cpu = f64::INFINITY;
        let mut last = None;
        for _ in 0..5 {
            let mut m = MimirLru::new(MimirConfig::objects(b, aging, n));
            let cpu = thread_cpu_ns();
            let t = Instant::now();
            for &(k, s) in &trace {
                m.request(k, s);
            }
            best = best.min(t.elapsed().as_secs_f64());
            if let (Some(a), Some(z)) = (cpu, thread_cpu_ns()) {
                best_cpu = best_cpu.min((z - a) as f64 / 1e9);
            }
            last = Some(m);
        }
        let m = last.expect("ran");
        let c = m.curves().pop().expect("one curve");
        let acc_n = 1.0 - c.mae(&exact, n as f64, n as usize);
        let acc_2n = 1.0 - c.mae(&exact, 2.0 * n as f64, 2 * n as usize);
        println!(
            "{aging:?} B={b:3}: {:5.1} M requests/s wall, {:5.1} M/s per CPU-second (best of 5), heap {:.1} MB ({:.0} B/tracked key), \
             LRU miss ratio at {n}: {:.4}, accuracy 1..N {:.2}%, 1..2N {:.2}%",
            trace.len() as f64 / best / 1e6,
            trace.len() as f64 / best_cpu / 1e6,
            m.mimir().heap_bytes() as f64 / 1e6,
            m.mimir().heap_bytes() as f64 / m.mimir().tracked_keys() as f64,
            m.cache_miss_ratio(),
            100.0 * acc_n,
            100.0 * acc_2n,
        );
    }
}
