//! Eviction policies shared by Augur's server store and its offline simulators, and
//! the exact cache simulators that are the ground truth for the MRC models.
//!
//! DESIGN.md's "one policy implementation" principle lives here: the sampled-eviction
//! logic in [`policy`] is generic over where candidates come from ([`policy::Candidates`]),
//! so the server's keyspace and the simulators run the very same code.

pub mod policy;

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
}
