//! Running a trace through simulators: one size ([`simulate`]), many sizes of one
//! policy ([`simulate_sizes`]) or a policy x size grid ([`simulate_grid`]), the latter
//! two in parallel on all cores with rayon (one independent simulator per job; the
//! trace is shared read-only).
//!
//! A trace is a slice of [`SimRequest`]s: plain `(key, size)` tuples, every one a GET
//! filled on a miss, or [`TraceOp`]s, which may also be DELETEs. A DELETE removes the
//! key from the cache ([`CacheSim::remove`]) and is not a request: it counts in neither
//! `requests`, `hits` nor the byte totals of a [`SimResult`], nor in the working set.
//! GETs and SETs are both references (looked up, filled on a miss), as in the MRC
//! models. The runners are generic over the request type, so the hot loop is
//! monomorphised per (request, simulator) type; for tuples the DELETE branch is a
//! constant `false` and compiles away.

use rayon::prelude::*;

use crate::lhd::{LhdCache, LhdConfig};
use crate::list::{ListCache, ListOrder};
use crate::sampled::{SampledCache, Sampling};
use crate::spec::{PolicySpec, Unit};
use crate::CacheSim;

/// How often (in trace entries) a running simulation reports progress.
const PROGRESS_EVERY: usize = 1 << 16;

/// One entry of a trace fed to the simulators: a reference to `key` of `size` bytes
/// (GET or SET: looked up, filled on a miss) or, when [`is_delete`](Self::is_delete),
/// a DELETE of `key` (removed if cached, not counted as a request).
pub trait SimRequest: Sync {
    fn key(&self) -> u64;
    /// Object size in bytes (ignored for a DELETE).
    fn size(&self) -> u32;
    /// Whether this entry removes `key` instead of referencing it.
    fn is_delete(&self) -> bool {
        false
    }
}

/// `(key, size)`: always a GET.
impl SimRequest for (u64, u32) {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.1
    }
    #[inline(always)]
    fn is_delete(&self) -> bool {
        false
    }
}

/// A trace entry that may be a DELETE: what `augur sim` and `augur mrc-compare` build
/// from a trace's GET / SET / DELETE requests (GET and SET both become references).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceOp {
    pub key: u64,
    /// Object size in bytes (unused for a DELETE).
    pub size: u32,
    /// A DELETE: removes `key`, is not counted as a request.
    pub delete: bool,
}

impl TraceOp {
    /// A reference (GET or SET) to `key` of `size` bytes.
    pub fn get(key: u64, size: u32) -> TraceOp {
        TraceOp {
            key,
            size,
            delete: false,
        }
    }

    /// A DELETE of `key`.
    pub fn delete(key: u64) -> TraceOp {
        TraceOp {
            key,
            size: 0,
            delete: true,
        }
    }
}

impl SimRequest for TraceOp {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.key
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.size
    }
    #[inline(always)]
    fn is_delete(&self) -> bool {
        self.delete
    }
}

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

pub use crate::working_set::WorkingSetCounter;

/// The working set of a trace (see [`WorkingSetCounter`]); DELETEs are skipped, so it
/// is over the keys the trace references (GET / SET).
pub fn working_set<R: SimRequest>(trace: &[R]) -> WorkingSet {
    let mut counter = WorkingSetCounter::with_capacity(trace.len() as u64 / 4);
    counter.add_batch(trace, |r| (!r.is_delete()).then(|| (r.key(), r.size())));
    counter.working_set()
}

/// Outcome of one simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    pub policy: PolicySpec,
    pub unit: Unit,
    /// Cache capacity, in `unit`.
    pub size: u64,
    /// References (GET / SET) in the trace; DELETEs are not counted.
    pub requests: u64,
    pub hits: u64,
    /// Sum of the sizes of all requests (DELETEs excluded).
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

/// The running totals of a simulation fed its trace in pieces ([`SimTally::feed`]):
/// what [`simulate_cache`] keeps for a whole slice, and what a caller that streams a
/// trace too large to hold in memory keeps between batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimTally {
    /// Trace entries fed, DELETEs included.
    pub entries: u64,
    pub deletes: u64,
    pub hits: u64,
    pub bytes_requested: u64,
    pub bytes_missed: u64,
}

impl SimTally {
    /// Feeds `chunk` to `sim`. A DELETE removes its key and is not counted as a request.
    /// Generic so the hot loop is monomorphised per request and simulator type.
    #[inline]
    pub fn feed<S: CacheSim, R: SimRequest>(&mut self, sim: &mut S, chunk: &[R]) {
        let (mut hits, mut bytes_requested, mut bytes_missed) = (0u64, 0u64, 0u64);
        let mut deletes = 0u64;
        for r in chunk {
            let key = r.key();
            if r.is_delete() {
                sim.remove(key);
                deletes += 1;
                continue;
            }
            let size = r.size();
            let hit = sim.access(key, size);
            hits += u64::from(hit);
            bytes_requested += u64::from(size);
            if !hit {
                bytes_missed += u64::from(size);
            }
        }
        self.entries += chunk.len() as u64;
        self.deletes += deletes;
        self.hits += hits;
        self.bytes_requested += bytes_requested;
        self.bytes_missed += bytes_missed;
    }

    /// The result so far of a simulator of capacity `size` running `policy`.
    pub fn result(&self, policy: PolicySpec, unit: Unit, size: u64) -> SimResult {
        let requests = self.entries - self.deletes;
        SimResult {
            policy,
            unit,
            size,
            requests,
            hits: self.hits,
            bytes_requested: self.bytes_requested,
            bytes_missed: self.bytes_missed,
            miss_ratio: ratio(requests - self.hits, requests),
            byte_miss_ratio: ratio(self.bytes_missed, self.bytes_requested),
        }
    }
}

/// Feeds `trace` to `sim`, calling `progress(n)` every [`PROGRESS_EVERY`] trace
/// entries and once at the end with the number of entries (DELETEs included) since the
/// last call. A DELETE removes its key and is not counted. Generic so the hot loop is
/// monomorphised per request and simulator type. Public for simulators built by the
/// caller (e.g. the server's `maxmemory-policy auto` chooser driving a
/// [`crate::SwitchingCache`]); `policy` only labels the result.
pub fn simulate_cache<S: CacheSim, R: SimRequest>(
    sim: &mut S,
    trace: &[R],
    policy: PolicySpec,
    unit: Unit,
    progress: &(dyn Fn(u64) + Sync),
) -> SimResult {
    let mut tally = SimTally::default();
    for chunk in trace.chunks(PROGRESS_EVERY) {
        tally.feed(sim, chunk);
        progress(chunk.len() as u64);
    }
    tally.result(policy, unit, sim.capacity())
}

/// The simulator of a [`PolicySpec`] as a concrete type where one exists, so that
/// [`PolicySimulation::feed`] dispatches once per chunk and the per-request loop has
/// no virtual call (S3-FIFO goes through [`crate::spec::build`]'s box). One per
/// simulation, so the variants' size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum ConcreteSim {
    List(ListCache),
    Sampled(SampledCache),
    Lhd(LhdCache),
    Boxed(Box<dyn CacheSim>),
}

/// One policy at one size, fed a trace in chunks: [`simulate_with_progress`] over a
/// slice, or `augur sim` streaming a trace it does not hold in memory (decoded batch by
/// batch on the simulating thread, as libCacheSim does). The same simulator and seed as
/// [`simulate`], so the result is the same as over the whole slice.
pub struct PolicySimulation {
    policy: PolicySpec,
    unit: Unit,
    sim: ConcreteSim,
    tally: SimTally,
}

impl PolicySimulation {
    pub fn new(policy: PolicySpec, size: u64, unit: Unit, seed: u64) -> PolicySimulation {
        let sim = match policy {
            PolicySpec::Lru => ConcreteSim::List(ListCache::new(ListOrder::Lru, size, unit)),
            PolicySpec::Fifo => ConcreteSim::List(ListCache::new(ListOrder::Fifo, size, unit)),
            PolicySpec::Random => {
                ConcreteSim::Sampled(SampledCache::new(Sampling::Random, size, unit, seed))
            }
            PolicySpec::RedisLru { k } => {
                ConcreteSim::Sampled(SampledCache::new(Sampling::Pooled { k }, size, unit, seed))
            }
            PolicySpec::RedisLfu { k } => ConcreteSim::Sampled(SampledCache::new(
                Sampling::PooledLfu { k },
                size,
                unit,
                seed,
            )),
            PolicySpec::KLru { k } => {
                ConcreteSim::Sampled(SampledCache::new(Sampling::Fresh { k }, size, unit, seed))
            }
            PolicySpec::Lhd { k } => ConcreteSim::Lhd(LhdCache::new(
                LhdConfig {
                    associativity: k,
                    ..LhdConfig::default()
                },
                size,
                unit,
                seed,
            )),
            PolicySpec::S3Fifo { .. } => {
                ConcreteSim::Boxed(crate::spec::build(policy, size, unit, seed))
            }
        };
        PolicySimulation {
            policy,
            unit,
            sim,
            tally: SimTally::default(),
        }
    }

    /// Feeds the next `chunk` of the trace.
    pub fn feed<R: SimRequest>(&mut self, chunk: &[R]) {
        let tally = &mut self.tally;
        match &mut self.sim {
            ConcreteSim::List(s) => tally.feed(s, chunk),
            ConcreteSim::Sampled(s) => tally.feed(s, chunk),
            ConcreteSim::Lhd(s) => tally.feed(s, chunk),
            ConcreteSim::Boxed(s) => tally.feed(s, chunk),
        }
    }

    /// The result over everything fed so far.
    pub fn result(&self) -> SimResult {
        let capacity = match &self.sim {
            ConcreteSim::List(s) => s.capacity(),
            ConcreteSim::Sampled(s) => s.capacity(),
            ConcreteSim::Lhd(s) => s.capacity(),
            ConcreteSim::Boxed(s) => s.capacity(),
        };
        self.tally.result(self.policy, self.unit, capacity)
    }
}

/// [`simulate`], calling `progress(n)` from the simulating thread each time it has
/// processed `n` more trace entries, DELETEs included (every 65,536 entries and at the
/// end), for progress bars and for callers that schedule and time simulations
/// themselves.
pub fn simulate_with_progress<R: SimRequest>(
    trace: &[R],
    policy: PolicySpec,
    size: u64,
    unit: Unit,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> SimResult {
    let mut run = PolicySimulation::new(policy, size, unit, seed);
    for chunk in trace.chunks(PROGRESS_EVERY) {
        run.feed(chunk);
        progress(chunk.len() as u64);
    }
    run.result()
}

/// Simulates `policy` with capacity `size` (in `unit`) on a trace: `(key, size)`
/// tuples, each a GET filled on a miss, or [`TraceOp`]s, where a DELETE removes the key
/// (so its next GET misses) and is not counted as a request. Deterministic for a given
/// `seed`.
pub fn simulate<R: SimRequest>(
    trace: &[R],
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
pub fn simulate_sizes<R: SimRequest>(
    trace: &[R],
    policy: PolicySpec,
    sizes: &[u64],
    unit: Unit,
    seed: u64,
) -> Vec<SimResult> {
    simulate_grid(trace, &[policy], sizes, unit, seed, &|_| {})
}

/// [`simulate`] for every (policy, size) pair, in parallel, results policy-major
/// (all sizes of `policies[0]` first). `progress(n)` is called from the worker threads
/// as simulations advance by `n` trace entries (DELETEs included), summing to
/// `policies.len() * sizes.len() * trace.len()`.
pub fn simulate_grid<R: SimRequest>(
    trace: &[R],
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
        assert_eq!(working_set::<(u64, u32)>(&[]).objects, 0);
    }

    const ALL_POLICIES: [PolicySpec; 5] = [
        PolicySpec::Lru,
        PolicySpec::Fifo,
        PolicySpec::Random,
        PolicySpec::RedisLru { k: 5 },
        PolicySpec::KLru { k: 3 },
    ];

    #[test]
    fn delete_removes_the_key_and_is_not_a_request() {
        let g = TraceOp::get;
        // LRU of 2 objects. With the DELETE: g1 miss, g2 miss, g1 hit, d1, g1 miss (it
        // was deleted), g2 hit, g3 miss (evicts 1), g1 miss (evicts 2): 2 hits in 7.
        // The DELETE carries a size, which must not count as requested bytes.
        let with = [
            g(1, 10),
            g(2, 20),
            g(1, 10),
            TraceOp {
                key: 1,
                size: 1000,
                delete: true,
            },
            g(1, 10),
            g(2, 20),
            g(3, 30),
            g(1, 10),
        ];
        let r = simulate(&with, PolicySpec::Lru, 2, Unit::Objects, 0);
        assert_eq!((r.requests, r.hits), (7, 2));
        assert_eq!(r.bytes_requested, 110);
        assert_eq!(r.bytes_missed, 10 + 20 + 10 + 30 + 10);
        assert!((r.miss_ratio - 5.0 / 7.0).abs() < 1e-12);
        // Without it: g1 m, g2 m, g1 h, g1 h, g2 h, g3 m (evicts 1), g1 m: 3 hits in 7.
        let without: Vec<TraceOp> = with.iter().copied().filter(|r| !r.delete).collect();
        let r = simulate(&without, PolicySpec::Lru, 2, Unit::Objects, 0);
        assert_eq!((r.requests, r.hits), (7, 3));
        // The same trace as tuples (the DELETE read as a GET, as mrc-compare used to):
        // 4 hits in 8. The DELETE's entry is different from both.
        let as_gets: Vec<(u64, u32)> = with.iter().map(|r| (r.key, r.size)).collect();
        let r = simulate(&as_gets, PolicySpec::Lru, 2, Unit::Objects, 0);
        assert_eq!((r.requests, r.hits), (8, 4));
        // The working set ignores the DELETE's size (and would ignore its key).
        assert_eq!(
            working_set(&with),
            WorkingSet {
                objects: 3,
                bytes: 60
            }
        );
        assert_eq!(
            working_set(&[TraceOp::delete(7), g(1, 5)]),
            WorkingSet {
                objects: 1,
                bytes: 5
            }
        );
    }

    /// A trace with DELETEs (about 1 in 10 entries) over keys of fixed sizes.
    fn trace_with_deletes() -> Vec<TraceOp> {
        trace()
            .into_iter()
            .enumerate()
            .map(|(i, (k, s))| {
                if i % 10 == 3 {
                    TraceOp::delete(k)
                } else {
                    TraceOp::get(k, s)
                }
            })
            .collect()
    }

    #[test]
    fn with_room_for_everything_every_policy_misses_exactly_after_first_use_and_deletes() {
        // At the working set nothing is evicted, so each policy's cache holds exactly
        // the keys referenced since their last DELETE: a reference misses iff its key
        // is not in that set, whatever the eviction policy.
        let t = trace_with_deletes();
        let ws = working_set(&t);
        let mut present = std::collections::HashSet::new();
        let (mut refs, mut misses, mut missed_bytes) = (0u64, 0u64, 0u64);
        for r in &t {
            if r.delete {
                present.remove(&r.key);
            } else {
                refs += 1;
                if present.insert(r.key) {
                    misses += 1;
                    missed_bytes += u64::from(r.size);
                }
            }
        }
        assert!(misses > ws.objects + 1000, "the DELETEs must cost misses");
        for policy in ALL_POLICIES {
            let r = simulate(&t, policy, ws.objects, Unit::Objects, 5);
            assert_eq!(
                (r.requests, r.requests - r.hits),
                (refs, misses),
                "{policy}"
            );
            let r = simulate(&t, policy, ws.bytes, Unit::Bytes, 5);
            assert_eq!(
                (r.requests, r.bytes_missed),
                (refs, missed_bytes),
                "{policy}"
            );
        }
    }

    #[test]
    fn trace_ops_without_deletes_equal_tuples() {
        let t = trace();
        let ops: Vec<TraceOp> = t.iter().map(|&(k, s)| TraceOp::get(k, s)).collect();
        let ws = working_set(&t);
        assert_eq!(working_set(&ops), ws);
        for unit in [Unit::Objects, Unit::Bytes] {
            let w = ws.in_unit(unit);
            let sizes = [w / 20, w / 4, w / 2];
            for policy in ALL_POLICIES {
                for &size in &sizes {
                    assert_eq!(
                        simulate(&ops, policy, size, unit, 3),
                        simulate(&t, policy, size, unit, 3),
                        "{policy} {size} {unit}"
                    );
                }
            }
            assert_eq!(
                simulate_grid(&ops, &ALL_POLICIES, &sizes, unit, 3, &|_| {}),
                simulate_grid(&t, &ALL_POLICIES, &sizes, unit, 3, &|_| {})
            );
        }
    }

    #[test]
    fn deletes_count_as_progress_but_not_as_requests() {
        let t = trace_with_deletes();
        let deletes = t.iter().filter(|r| r.delete).count() as u64;
        let done = AtomicU64::new(0);
        let out = simulate_grid(
            &t,
            &[PolicySpec::Lru],
            &[100, 1000],
            Unit::Objects,
            1,
            &|n| {
                done.fetch_add(n, Ordering::Relaxed);
            },
        );
        assert_eq!(done.load(Ordering::Relaxed), 2 * t.len() as u64);
        for r in &out {
            assert_eq!(r.requests, t.len() as u64 - deletes);
        }
        assert_eq!(
            out,
            simulate_sizes(&t, PolicySpec::Lru, &[100, 1000], Unit::Objects, 1)
        );
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
