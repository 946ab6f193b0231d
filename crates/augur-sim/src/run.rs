//! Running a trace through simulators: one size ([`simulate`]), many sizes of one
//! policy ([`simulate_sizes`]) or a policy x size grid ([`simulate_grid`]), the latter
//! two in parallel on all cores with rayon (one independent simulator per job; the
//! trace is shared read-only).

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::list::{ListCache, ListOrder};
use crate::sampled::{SampledCache, Sampling};
use crate::spec::{PolicySpec, Unit};
use crate::CacheSim;

/// How often (in requests) a running simulation reports progress.
const PROGRESS_EVERY: usize = 1 << 16;

/// The footprint of a trace: what a cache must hold to never miss twice on a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkingSet {
    /// Distinct keys.
    pub objects: u64,
    /// Sum over distinct keys of the size of their first request.
    pub bytes: u64,
}

impl WorkingSet {
    /// The working set in `unit`.
    pub fn in_unit(&self, unit: Unit) -> u64 {
        match unit {
            Unit::Objects => self.objects,
            Unit::Bytes => self.bytes,
        }
    }
}

/// Builds a [`WorkingSet`] request by request, for traces that are streamed rather
/// than held in memory. A key whose size changes counts with its first size (the
/// oracleGeneral traces here have one size per key except cloudphysics, where sizes
/// rarely change).
#[derive(Debug, Default)]
pub struct WorkingSetCounter {
    seen: HashMap<u64, ()>,
    total: WorkingSet,
}

impl WorkingSetCounter {
    pub fn add(&mut self, key: u64, size: u32) {
        if self.seen.insert(key, ()).is_none() {
            self.total.objects += 1;
            self.total.bytes += u64::from(size);
        }
    }

    pub fn working_set(&self) -> WorkingSet {
        self.total
    }
}

/// The working set of a trace of `(key, size)` requests (see [`WorkingSetCounter`]).
pub fn working_set(trace: &[(u64, u32)]) -> WorkingSet {
    let mut counter = WorkingSetCounter {
        seen: HashMap::with_capacity(trace.len() / 4),
        total: WorkingSet::default(),
    };
    for &(key, size) in trace {
        counter.add(key, size);
    }
    counter.working_set()
}

/// Outcome of one simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    pub policy: PolicySpec,
    pub unit: Unit,
    /// Cache capacity, in `unit`.
    pub size: u64,
    pub requests: u64,
    pub hits: u64,
    /// Sum of the sizes of all requests.
    pub bytes_requested: u64,
    /// Sum of the sizes of the requests that missed.
    pub bytes_missed: u64,
    /// Misses / requests (0 for an empty trace).
    pub miss_ratio: f64,
    /// Missed bytes / requested bytes (0 when no bytes were requested).
    pub byte_miss_ratio: f64,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// Feeds `trace` to `sim`, calling `progress(n)` every [`PROGRESS_EVERY`] requests and
/// once at the end with the number of requests since the last call. Generic so the
/// hot loop is monomorphised per simulator type.
fn drive<S: CacheSim>(
    mut sim: S,
    trace: &[(u64, u32)],
    policy: PolicySpec,
    unit: Unit,
    progress: &(dyn Fn(u64) + Sync),
) -> SimResult {
    let (mut hits, mut bytes_requested, mut bytes_missed) = (0u64, 0u64, 0u64);
    for chunk in trace.chunks(PROGRESS_EVERY) {
        for &(key, size) in chunk {
            let hit = sim.access(key, size);
            hits += u64::from(hit);
            bytes_requested += u64::from(size);
            if !hit {
                bytes_missed += u64::from(size);
            }
        }
        progress(chunk.len() as u64);
    }
    let requests = trace.len() as u64;
    SimResult {
        policy,
        unit,
        size: sim.capacity(),
        requests,
        hits,
        bytes_requested,
        bytes_missed,
        miss_ratio: ratio(requests - hits, requests),
        byte_miss_ratio: ratio(bytes_missed, bytes_requested),
    }
}

/// [`simulate`], calling `progress(n)` from the simulating thread each time it has
/// processed `n` more requests (every 65,536 requests and at the end), for progress
/// bars and for callers that schedule and time simulations themselves.
pub fn simulate_with_progress(
    trace: &[(u64, u32)],
    policy: PolicySpec,
    size: u64,
    unit: Unit,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> SimResult {
    // Same simulators as `spec::build`, but concrete, so `access` is not a virtual call.
    match policy {
        PolicySpec::Lru => drive(
            ListCache::new(ListOrder::Lru, size, unit),
            trace,
            policy,
            unit,
            progress,
        ),
        PolicySpec::Fifo => drive(
            ListCache::new(ListOrder::Fifo, size, unit),
            trace,
            policy,
            unit,
            progress,
        ),
        PolicySpec::Random => drive(
            SampledCache::new(Sampling::Random, size, unit, seed),
            trace,
            policy,
            unit,
            progress,
        ),
        PolicySpec::RedisLru { k } => drive(
            SampledCache::new(Sampling::Pooled { k }, size, unit, seed),
            trace,
            policy,
            unit,
            progress,
        ),
        PolicySpec::KLru { k } => drive(
            SampledCache::new(Sampling::Fresh { k }, size, unit, seed),
            trace,
            policy,
            unit,
            progress,
        ),
    }
}

/// Simulates `policy` with capacity `size` (in `unit`) on a trace of `(key, size)`
/// requests, each a GET filled on a miss. Deterministic for a given `seed`.
pub fn simulate(
    trace: &[(u64, u32)],
    policy: PolicySpec,
    size: u64,
    unit: Unit,
    seed: u64,
) -> SimResult {
    simulate_with_progress(trace, policy, size, unit, seed, &|_| {})
}

/// [`simulate`] at every size in `sizes`, in parallel (one simulator per size, all
/// seeded with `seed`, so each result equals the corresponding [`simulate`] call).
/// Results are in the order of `sizes`.
pub fn simulate_sizes(
    trace: &[(u64, u32)],
    policy: PolicySpec,
    sizes: &[u64],
    unit: Unit,
    seed: u64,
) -> Vec<SimResult> {
    simulate_grid(trace, &[policy], sizes, unit, seed, &|_| {})
}

/// [`simulate`] for every (policy, size) pair, in parallel, results policy-major
/// (all sizes of `policies[0]` first). `progress(n)` is called from the worker threads
/// as simulations advance by `n` requests, summing to
/// `policies.len() * sizes.len() * trace.len()`.
pub fn simulate_grid(
    trace: &[(u64, u32)],
    policies: &[PolicySpec],
    sizes: &[u64],
    unit: Unit,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<SimResult> {
    let jobs: Vec<(PolicySpec, u64)> = policies
        .iter()
        .flat_map(|&p| sizes.iter().map(move |&s| (p, s)))
        .collect();
    // One job per rayon task: simulations differ widely in cost (sampled policies at
    // small sizes evict the most), so let work stealing balance them.
    jobs.into_par_iter()
        .with_max_len(1)
        .map(|(p, s)| simulate_with_progress(trace, p, s, unit, seed, progress))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn trace() -> Vec<(u64, u32)> {
        // Deterministic skewed stream with per-key sizes derived from the key.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let key = (5_000.0 * u * u) as u64;
                (key, 100 + (key.wrapping_mul(2654435761) % 900) as u32)
            })
            .collect()
    }

    #[test]
    fn working_set_counts_distinct_keys_with_first_sizes() {
        let ws = working_set(&[(1, 10), (2, 20), (1, 99), (3, 5), (2, 1)]);
        assert_eq!(
            ws,
            WorkingSet {
                objects: 3,
                bytes: 35
            }
        );
        assert_eq!(ws.in_unit(Unit::Bytes), 35);
        assert_eq!(working_set(&[]).objects, 0);
    }

    #[test]
    fn parallel_sizes_equal_sequential_runs_and_are_monotone_for_lru() {
        let t = trace();
        let ws = working_set(&t);
        let sizes: Vec<u64> = [5, 10, 25, 50, 100]
            .iter()
            .map(|p| ws.objects * p / 100)
            .collect();
        for policy in [PolicySpec::Lru, PolicySpec::RedisLru { k: 5 }] {
            let par = simulate_sizes(&t, policy, &sizes, Unit::Objects, 9);
            for (r, &s) in par.iter().zip(&sizes) {
                assert_eq!(*r, simulate(&t, policy, s, Unit::Objects, 9));
                assert_eq!(r.requests, t.len() as u64);
            }
            if policy == PolicySpec::Lru {
                // LRU is a stack algorithm (inclusion property, KRR §2.1): its miss
                // ratio cannot grow with the cache. At the working set it only takes
                // compulsory misses.
                for w in par.windows(2) {
                    assert!(w[1].miss_ratio <= w[0].miss_ratio);
                }
                assert_eq!(par[4].requests - par[4].hits, ws.objects);
            }
        }
    }

    #[test]
    fn byte_results_account_requested_and_missed_bytes() {
        let t = trace();
        let ws = working_set(&t);
        let total: u64 = t.iter().map(|&(_, s)| u64::from(s)).sum();
        let r = simulate(&t, PolicySpec::Lru, ws.bytes, Unit::Bytes, 0);
        assert_eq!(r.bytes_requested, total);
        // Everything fits: only first requests miss.
        assert_eq!(r.bytes_missed, ws.bytes);
        let small = simulate(&t, PolicySpec::Lru, ws.bytes / 10, Unit::Bytes, 0);
        assert!(small.byte_miss_ratio > r.byte_miss_ratio);
        assert!(small.bytes_missed <= small.bytes_requested);
    }

    #[test]
    fn grid_is_policy_major_and_reports_all_progress() {
        let t = trace();
        let done = AtomicU64::new(0);
        let policies = [
            PolicySpec::Fifo,
            PolicySpec::KLru { k: 3 },
            PolicySpec::Random,
        ];
        let sizes = [100, 1000];
        let out = simulate_grid(&t, &policies, &sizes, Unit::Objects, 1, &|n| {
            done.fetch_add(n, Ordering::Relaxed);
        });
        let got: Vec<(PolicySpec, u64)> = out.iter().map(|r| (r.policy, r.size)).collect();
        let want: Vec<(PolicySpec, u64)> = policies
            .iter()
            .flat_map(|&p| sizes.iter().map(move |&s| (p, s)))
            .collect();
        assert_eq!(got, want);
        assert_eq!(done.load(Ordering::Relaxed), 6 * t.len() as u64);
    }
}
