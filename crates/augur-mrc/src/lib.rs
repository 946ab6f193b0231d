//! Miss-ratio-curve models for Augur: exact (Olken), KRR for Redis's sampled LRU,
//! SHARDS, MIMIR and miniature simulation, plus the [`curve::Curve`] type they produce.
//!
//! A pure library: no I/O, no threads, no server types. Every model is usable online
//! (fed one request at a time, bounded memory) and offline (fed a whole trace).

pub mod curve;

/// An online miss-ratio-curve model, fed one request at a time in O(1) amortised time
/// (or O(log M) for exact models) and bounded memory, so the server can run it live.
pub trait MrcModel: Send {
    /// A reference to `key` of `size` bytes (a GET that is filled on a miss).
    fn access(&mut self, key: u64, size: u32);
    /// `key` was deleted from the cache being modelled.
    fn delete(&mut self, key: u64);
    /// The curves known so far: one per K for multi-K models, else one.
    fn curves(&self) -> Vec<curve::Curve>;
}
