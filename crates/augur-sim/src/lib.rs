//! Eviction policies shared by Augur's server store and its offline simulators, and
//! the exact cache simulators that are the ground truth for the MRC models.
//!
//! DESIGN.md's "one policy implementation" principle lives here: the sampled-eviction
//! logic in [`policy`] is generic over where candidates come from ([`policy::Candidates`]),
//! so the server's keyspace and the simulators run the very same code.
//!
//! The simulators:
//! - [`SampledCache`]: Redis's pooled K-LRU ([`policy::select_victim_pooled`]), the
//!   KRR paper's plain K-LRU (§2.2, Eq. 1, [`policy::select_victim_fresh`]) and random
//!   eviction ([`policy::select_victim_random`]), over a dense entry array that makes
//!   uniform sampling O(1);
//! - [`ListCache`]: exact LRU and FIFO, O(1) per request with an intrusive doubly
//!   linked list over a slab.
//!
//! - [`LhdCache`]: LHD, least hit density (NSDI'18), whose ranking model [`LhdModel`]
//!   is meant for the store as well.
//!
//! [`PolicySpec`] names a policy (`lru`, `fifo`, `random`, `redis-lru:K`, `klru:K`, `lhd:A`),
//! [`build`] makes a simulator for it, and [`simulate_sizes`] / [`simulate_grid`] run
//! one trace at many cache sizes on all cores. A trace is `(key, size)` GETs or
//! [`TraceOp`]s, whose DELETEs remove the key without counting as requests
//! ([`SimRequest`]).

pub mod distinct;
pub mod key_index;
pub mod lfu;
pub mod lhd;
mod lhd_avx2;
pub mod list;
pub mod policy;
mod prefetch;
pub mod run;
pub mod s3fifo;
pub mod sampled;
pub mod spec;
pub mod switching;
mod working_set;

pub use lhd::{LhdCache, LhdConfig, LhdModel, LhdTag};
pub use list::{ListCache, ListOrder};
pub use run::{
    simulate, simulate_cache, simulate_grid, simulate_sizes, simulate_with_progress, working_set,
    PolicySimulation, SimRequest, SimResult, SimTally, TraceOp, WorkingSet, WorkingSetCounter,
};
pub use sampled::{SampledCache, Sampling};
pub use spec::{build, build_miniature, ParsePolicyError, PolicySpec, Unit};
pub use switching::SwitchingCache;

/// A cache simulator fed one request at a time: the exact ground truth the MRC models
/// are judged against, and the engine of miniature simulation.
pub trait CacheSim: Send {
    /// One GET of `key` with `size` bytes, filled (inserted) on a miss; true on a hit.
    fn access(&mut self, key: u64, size: u32) -> bool;
    /// Removes `key` if cached (a DELETE in the trace).
    fn remove(&mut self, key: u64);
    /// Number of cached objects.
    fn len(&self) -> usize;
    /// Whether nothing is cached.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Occupied capacity, in the simulator's unit (objects or bytes).
    fn used(&self) -> u64;
    /// Capacity, in the simulator's unit (objects or bytes).
    fn capacity(&self) -> u64;
    /// Resizes the cache in place, evicting by the policy until it fits (DLRU §3.3
    /// resizes its miniature caches every interval as the average item size moves, and
    /// keeps their contents). Returns false, changing nothing, for a simulator that
    /// cannot resize; the caller then rebuilds it.
    fn set_capacity(&mut self, capacity: u64) -> bool {
        let _ = capacity;
        false
    }
    /// Redis LFU's tuning and the wall clock of the references that follow, for a
    /// simulator that runs LFU (the others ignore it). A simulator starts at factor 10
    /// without decay: trace references carry no wall time.
    fn set_lfu_clock(&mut self, clock: lfu::LfuClock) {
        let _ = clock;
    }
}

impl<S: CacheSim + ?Sized> CacheSim for Box<S> {
    fn access(&mut self, key: u64, size: u32) -> bool {
        (**self).access(key, size)
    }
    fn remove(&mut self, key: u64) {
        (**self).remove(key)
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn used(&self) -> u64 {
        (**self).used()
    }
    fn capacity(&self) -> u64 {
        (**self).capacity()
    }
    fn set_capacity(&mut self, capacity: u64) -> bool {
        (**self).set_capacity(capacity)
    }
    fn set_lfu_clock(&mut self, clock: lfu::LfuClock) {
        (**self).set_lfu_clock(clock)
    }
}
