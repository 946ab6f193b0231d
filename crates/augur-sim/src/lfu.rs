//! Redis's LFU counter (`allkeys-lfu`, `volatile-lfu`): an 8-bit logarithmic access
//! counter per key that decays with idle time, and eviction of the sampled key with the
//! lowest decayed count.
//!
//! This is Redis 7.0's `evict.c` (`LFULogIncr`, `LFUDecrAndReturn`) and `db.c`
//! (`updateLFU`), kept to the letter because operators tune `lfu-log-factor` and
//! `lfu-decay-time` from Redis's documented table (redis.conf, "LFU tuning"):
//!
//! - A new key starts at [`LFU_INIT_VAL`] (5), so that a key just written is not the
//!   first victim before it had a chance to be read.
//! - A hit increments the counter with probability `1 / ((c - 5) * factor + 1)`
//!   (`c - 5` clamped at 0): a Morris counter, so 8 bits count up to ~1M hits at the
//!   default factor 10 (reaching `c` takes `sum_{j<c} ((j - 5) * factor + 1)` hits in
//!   expectation).
//! - Every `lfu-decay-time` minutes a key goes unaccessed, its counter loses one (0 never
//!   decays). Redis applies the decay lazily, when the key is read or sampled; so does
//!   Augur.
//! - Eviction ranks sampled keys by `255 - decayed counter` in the same 16-entry pool as
//!   LRU's idle time (`evictionPoolPopulate`), so [`crate::policy::select_victim_pooled`]
//!   serves both.
//!
//! The store keeps the counter with a 24-bit clock of the last access in the entry's
//! access word (`augur_store::lfu`), and turns clock ages into decay periods with its
//! wall clock.

/// The counter of a key just created (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// Redis's default `lfu-log-factor`.
pub const DEFAULT_LOG_FACTOR: u32 = 10;

/// Redis's default `lfu-decay-time`, in minutes.
pub const DEFAULT_DECAY_MINUTES: u32 = 1;

/// Redis LFU's tuning and the wall clock, for a simulator fed a live server's
/// references (DLRU's miniatures under `allkeys-lfu`): its counters then grow and
/// decay as the server's do. The default is Redis's tuning at minute 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LfuClock {
    /// `lfu-log-factor`.
    pub log_factor: u32,
    /// `lfu-decay-time`, in minutes (0: counters never decay).
    pub decay_minutes: u32,
    /// The wall clock, in minutes, of the references that follow.
    pub minutes: u64,
}

impl Default for LfuClock {
    fn default() -> Self {
        LfuClock {
            log_factor: DEFAULT_LOG_FACTOR,
            decay_minutes: DEFAULT_DECAY_MINUTES,
            minutes: 0,
        }
    }
}

/// Minutes from `last` to `now`, both Redis's 16-bit minute clocks
/// (`LFUTimeElapsed`: across the wrap it counts `65535 - last + now`, one short).
#[inline]
pub fn minutes_elapsed(now: u16, last: u16) -> u64 {
    if now >= last {
        u64::from(now - last)
    } else {
        65535 - u64::from(last) + u64::from(now)
    }
}

/// The counter after one more hit, given `r` uniform in [0, 1) (`LFULogIncr`).
#[inline]
pub fn log_incr(counter: u8, log_factor: u32, r: f64) -> u8 {
    if counter == u8::MAX {
        return counter;
    }
    let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

/// The counter after `periods` whole decay periods without an access
/// (`LFUDecrAndReturn`: one per period, never below 0).
#[inline]
pub fn decayed(counter: u8, periods: u64) -> u8 {
    counter.saturating_sub(periods.min(u8::MAX as u64) as u8)
}

/// The eviction pool's score of a key with decayed counter `counter`: higher is evicted
/// first (Redis's `idle = 255 - LFUDecrAndReturn(o)`).
#[inline]
pub fn eviction_score(counter: u8) -> u64 {
    (u8::MAX - counter) as u64
}

/// A small, fast generator for the increments' coin flips (xorshift64*): the counter's
/// statistics need uniform draws, not cryptographic ones, and the store draws one per
/// hit on its request path.
#[derive(Debug, Clone)]
pub struct CoinFlips(u64);

impl CoinFlips {
    pub fn new(seed: u64) -> CoinFlips {
        // xorshift's state must not be 0.
        CoinFlips(seed | 1)
    }

    /// Uniform in [0, 1), 53 bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter a key reaches after `hits` hits, from a new key.
    fn after_hits(hits: u64, factor: u32, seed: u64) -> u8 {
        let mut flips = CoinFlips::new(seed);
        let mut c = LFU_INIT_VAL;
        for _ in 0..hits {
            if c == u8::MAX {
                break;
            }
            c = log_incr(c, factor, flips.next_f64());
        }
        c
    }

    /// redis.conf's table ("LFU tuning"), measured by Redis's authors with
    /// redis-benchmark: counters after 100 / 1K / 100K / 1M hits per factor. A Morris
    /// counter's relative spread shrinks as it grows, so the large cells are tight.
    #[test]
    fn counters_follow_redis_conf_table() {
        let table: [(u32, [(u64, u8); 4]); 3] = [
            (
                1,
                [(100, 18), (1_000, 49), (100_000, 255), (1_000_000, 255)],
            ),
            (
                10,
                [(100, 10), (1_000, 18), (100_000, 142), (1_000_000, 255)],
            ),
            (
                100,
                [(100, 8), (1_000, 11), (100_000, 49), (1_000_000, 143)],
            ),
        ];
        for (factor, cells) in table {
            for (hits, want) in cells {
                // Redis's table is one run of a random counter whose spread grows with
                // it (134..159 over 24 runs at factor 10, 100K hits): its value must be
                // a plausible run of ours, within 2.5 standard deviations of our mean.
                let runs: Vec<f64> = (0..12)
                    .map(|s| after_hits(hits, factor, 7919 * s + 13) as f64)
                    .collect();
                let n = runs.len() as f64;
                let mean = runs.iter().sum::<f64>() / n;
                let sd = (runs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
                assert!(
                    (mean - want as f64).abs() <= 2.5 * sd + 1.0,
                    "factor {factor}, {hits} hits: mean {mean} (sd {sd}), redis.conf says {want}"
                );
            }
        }
    }

    #[test]
    fn factor_zero_counts_every_hit_and_saturates() {
        assert_eq!(after_hits(100, 0, 1), 105);
        assert_eq!(after_hits(1_000, 0, 1), 255);
    }

    #[test]
    fn decay_loses_one_per_period_and_stops_at_zero() {
        assert_eq!(decayed(10, 0), 10);
        assert_eq!(decayed(10, 3), 7);
        assert_eq!(decayed(10, 10), 0);
        assert_eq!(decayed(10, u64::MAX), 0);
        assert_eq!(eviction_score(0), 255);
        assert_eq!(eviction_score(255), 0);
    }

    #[test]
    fn coin_flips_are_uniform() {
        let mut f = CoinFlips::new(42);
        let n = 100_000;
        let mut below = [0u32; 10];
        for _ in 0..n {
            let x = f.next_f64();
            assert!((0.0..1.0).contains(&x));
            below[(x * 10.0) as usize] += 1;
        }
        for b in below {
            assert!(
                (b as f64 - n as f64 / 10.0).abs() < 0.05 * n as f64 / 10.0,
                "{below:?}"
            );
        }
    }
}
