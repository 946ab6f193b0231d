//! Shared helpers for the SHARDS / MIMIR / miniature-simulation tests: decoding the
//! real traces and exact LRU ground truth.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;

use augur_mrc::curve::{Curve, Point, SizeUnit};
use augur_mrc::shards::Shards;
use augur_mrc::MrcModel;

#[path = "../../../../tests/support/traces.rs"]
pub mod traces;

/// Decodes `traces/<name>.oracleGeneral.bin.zst` into (key, size) pairs: 24-byte
/// little-endian records (u32 time, u64 obj_id, u32 obj_size, i64 next_access_vtime).
pub fn load(name: &str) -> Vec<(u64, u32)> {
    let path = traces::path(name);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut raw = Vec::new();
    zstd::Decoder::new(f)
        .unwrap()
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw.len() % 24, 0);
    raw.chunks_exact(24)
        .map(|r| {
            let key = u64::from_le_bytes(r[4..12].try_into().unwrap());
            let size = u32::from_le_bytes(r[12..16].try_into().unwrap());
            (key, size)
        })
        .collect()
}

/// Distinct objects and their total bytes (at each key's last size).
pub fn working_set(trace: &[(u64, u32)]) -> (u64, u64) {
    let mut last: HashMap<u64, u32> = HashMap::new();
    for &(k, s) in trace {
        last.insert(k, s);
    }
    (
        last.len() as u64,
        last.values().map(|&s| u64::from(s)).sum(),
    )
}

/// Exact LRU curves (objects, bytes): SHARDS at rate 1 samples every key, so it is
/// Olken's exact O(log M) stack-distance algorithm; `naive_mattson_objects` checks it.
pub fn exact_lru(trace: &[(u64, u32)]) -> (Curve, Curve) {
    let mut s = Shards::fixed_rate(1.0);
    for &(k, sz) in trace {
        s.access(k, sz);
    }
    (s.curve(SizeUnit::Objects), s.curve(SizeUnit::Bytes))
}

/// Mattson's O(N M) stack algorithm by object count: the curve at every integer size
/// up to `max` (an independent reference, for small traces only).
pub fn naive_mattson_objects(trace: &[(u64, u32)], max: usize) -> Curve {
    let mut stack: Vec<u64> = Vec::new();
    let mut hist = vec![0u64; max + 1];
    for &(k, _) in trace {
        if let Some(p) = stack.iter().position(|&x| x == k) {
            if p < max {
                hist[p + 1] += 1;
            }
            stack.remove(p);
        }
        stack.insert(0, k);
    }
    let mut cum = 0;
    let n = trace.len() as f64;
    let pts = (1..=max)
        .map(|d| {
            cum += hist[d];
            Point {
                size: d as f64,
                miss_ratio: 1.0 - cum as f64 / n,
            }
        })
        .collect();
    Curve::new("mattson", None, SizeUnit::Objects, pts)
}

/// A deterministic per-key size in [64, 4096) bytes for uniform-size traces, derived
/// from a hash of the key (traces/README.md: "derive a size per key deterministically").
pub fn derived_size(key: u64) -> u32 {
    64 + (augur_mrc::shards::key_hash(key ^ 0xa5a5_5a5a) % 4032) as u32
}
