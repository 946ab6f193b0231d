//! Miss-ratio-curve models for Augur: exact (Olken), KRR for Redis's sampled LRU,
//! SHARDS, MIMIR and miniature simulation, plus the [`curve::Curve`] type they produce
//! and kRedis's memory partitioning among tenants over those curves ([`partition`]).
//!
//! A pure library: no I/O, no threads, no server types. Every model is usable online
//! (fed one request at a time, bounded memory) and offline (fed a whole trace).

pub mod curve;
pub mod ghost_filter;
pub mod krr;
pub mod mimir;
pub mod minisim;
pub mod olken;
pub mod partition;
pub mod shards;

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

/// A 64-bit mixing function (the SplitMix64 finaliser): consecutive keys (block numbers,
/// counters) come out uniformly spread, which the spatial sampling filter `hash(key) mod
/// P < T` (kRedis §2.7, after SHARDS) relies on.
#[inline]
pub fn mix64(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The models' per-key maps: the simulators' ([`augur_sim::key_index`]), one hasher for
/// trace keys in the whole project.
pub use augur_sim::key_index::{KeyHasher, KeyMap};

/// Spatial sampling filter of SHARDS as used by KRR (kRedis §2.7): a key is tracked iff
/// `hash(key) mod P < T`, an effective rate `R = T / P`. Every reference to a sampled
/// key is kept, so reuse patterns inside the sample are intact and stack distances
/// measured on it estimate the full trace's distances divided by `R`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpatialSampler {
    threshold: u64,
}

impl SpatialSampler {
    /// The modulus `P` (2^24): rates down to 6e-8 are representable.
    pub const MODULUS: u64 = 1 << 24;

    /// A filter with rate `rate`, clamped to `[1/P, 1]` and rounded to a multiple of `1/P`.
    pub fn new(rate: f64) -> Self {
        let t = (rate.clamp(0.0, 1.0) * Self::MODULUS as f64).round() as u64;
        Self {
            threshold: t.clamp(1, Self::MODULUS),
        }
    }

    /// The effective rate `T / P`.
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / Self::MODULUS as f64
    }

    /// Whether every key is sampled (rate 1): callers skip the hash altogether.
    pub fn is_full(&self) -> bool {
        self.threshold == Self::MODULUS
    }

    /// Whether `key` is in the sample.
    #[inline]
    pub fn sampled(&self, key: u64) -> bool {
        self.is_full() || self.sampled_hash(mix64(key))
    }

    /// [`SpatialSampler::sampled`] of a key whose [`mix64`] the caller already has.
    #[inline]
    pub fn sampled_hash(&self, mixed: u64) -> bool {
        (mixed & (Self::MODULUS - 1)) < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_keeps_about_rate_of_keys() {
        for rate in [0.5, 0.01, 0.001] {
            let s = SpatialSampler::new(rate);
            let n = 2_000_000u64;
            let kept = (0..n).filter(|&k| s.sampled(k)).count() as f64;
            let expect = s.rate() * n as f64;
            // Binomial sd is sqrt(n p); allow 5 sd.
            assert!(
                (kept - expect).abs() < 5.0 * expect.sqrt(),
                "rate {rate}: kept {kept}, expected {expect}"
            );
        }
        assert!(SpatialSampler::new(1.0).is_full());
        assert!((SpatialSampler::new(0.25).rate() - 0.25).abs() < 1e-12);
    }
}
