//! Miss-ratio-curve models for Augur: exact (Olken), KRR for Redis's sampled LRU,
//! SHARDS, MIMIR and miniature simulation, plus the [`curve::Curve`] type they produce.
//!
//! A pure library: no I/O, no threads, no server types. Every model is usable online
//! (fed one request at a time, bounded memory) and offline (fed a whole trace).

pub mod curve;
