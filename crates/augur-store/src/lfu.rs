//! Redis's LFU policies (`allkeys-lfu`, `volatile-lfu`) in the store: where each key's
//! counter lives and how idle time becomes decay.
//!
//! The counter's arithmetic is `augur_sim::lfu` (Redis 7.0's `LFULogIncr` and
//! `LFUDecrAndReturn`). Redis keeps, in an object's 24-bit `lru` field, the counter and
//! the minute of its last access (`ldt`, 16 bits). Augur keeps the entry's access word
//! in LFU's format instead (`Entry::set_lfu`): the counter in bits 24-31 and the shard's
//! logical clock of the last access in bits 0-23, as LHD's and S3-FIFO's formats do.
//! The clock serves everything that reads recency (OBJECT IDLETIME, and LRU or LHD right
//! after a switch away from LFU), so an entry never carries two times.
//!
//! Decay needs minutes, and the clock counts accesses. [`DecayMarks`] turns one into the
//! other: every active-expiry cycle the shard asks its wall clock (`shard::wallclock`)
//! which clock value had been reached `j` decay periods ago, for `j` = 1..=255; an
//! access at clock `a` is then `#{j : mark_j >= a}` whole periods old. That is a
//! binary search over at most 255 words, and none for a key accessed within the last
//! period (the common case for a key worth keeping). The marks are at most one cycle
//! stale (100 ms at `hz` 10), against a decay period of at least a minute.
//!
//! Two deliberate differences from Redis, both where Redis is arbitrary:
//! - Redis counts elapsed minutes between calendar minutes (`server.unixtime / 60`);
//!   here they are whole periods of real idle time.
//! - An entry whose word is in another format (written before a switch to LFU) reads
//!   as a new key's counter ([`LFU_INIT_VAL`]) decayed by its idle time. Redis reads
//!   the LRU clock's bits as a counter ("LRU and LFU data will take some time to
//!   adjust").
//!
//! The clock keeps 24 bits: a key idle for more than 2^24 of its shard's accesses
//! looks younger than it is (it decays less), as under LHD.

use crate::entry::{Entry, LHD_CLOCK_MASK};
use augur_sim::lfu::{decayed, log_incr, CoinFlips, LFU_INIT_VAL};
use std::sync::Arc;

/// Clock values that separate whole decay periods of idle time, newest first:
/// `marks[j - 1]` is the last clock value accessed at least `j` periods ago.
#[derive(Debug, Default)]
pub(crate) struct DecayMarks {
    marks: Vec<u64>,
}

impl DecayMarks {
    /// The marks at `now_sec` for a period of `decay_minutes` (0: no decay), from
    /// `clock_by(sec)`: the last clock value accessed by second `sec` (0 if none).
    pub(crate) fn new(now_sec: u64, decay_minutes: u32, clock_by: impl Fn(u64) -> u64) -> Self {
        let mut marks = Vec::new();
        if decay_minutes > 0 {
            let period = decay_minutes as u64 * 60;
            for j in 1..=u8::MAX as u64 {
                let Some(target) = now_sec.checked_sub(j * period) else {
                    break;
                };
                let mark = clock_by(target);
                if mark == 0 {
                    break;
                }
                marks.push(mark);
            }
        }
        DecayMarks { marks }
    }

    /// Whole decay periods since an access at (full) clock value `atime`.
    #[inline]
    pub(crate) fn periods(&self, atime: u64) -> u64 {
        match self.marks.first() {
            Some(&newest) if atime <= newest => self.marks.partition_point(|&m| m >= atime) as u64,
            _ => 0,
        }
    }
}

/// A part's LFU state while its policy is LFU: the shard's current marks and the coin
/// flips of its counters' increments.
#[derive(Debug)]
pub(crate) struct PartLfu {
    pub(crate) marks: Arc<DecayMarks>,
    flips: CoinFlips,
}

impl PartLfu {
    pub(crate) fn new(marks: Arc<DecayMarks>, seed: u64) -> PartLfu {
        PartLfu {
            marks,
            flips: CoinFlips::new(seed),
        }
    }

    /// A read or write of `e` at clock `clock` (`updateLFU`): decay, then a chance of
    /// one more count; the last access becomes now.
    #[inline]
    pub(crate) fn hit(&mut self, e: Entry, clock: u64, log_factor: u32) {
        let c = counter(e, clock, &self.marks);
        let c = log_incr(c, log_factor, self.flips.next_f64());
        e.set_lfu(word(clock, c));
    }
}

/// A new key's word: [`LFU_INIT_VAL`], accessed now.
#[inline]
pub(crate) fn admit(e: Entry, clock: u64) {
    e.set_lfu(word(clock, LFU_INIT_VAL));
}

/// Sets `e`'s counter to `freq` as of now (RESTORE ... FREQ, Redis's
/// `objectSetLRUOrLFU`).
pub(crate) fn set_frequency(e: Entry, clock: u64, freq: u8) {
    e.set_lfu(word(clock, freq));
}

/// `e`'s counter at clock `clock`, decayed by its idle periods (`LFUDecrAndReturn`);
/// an entry in another format reads as a new key last accessed when it was
/// ([`Entry::idle`] reads every format's clock, an LFU word's 24 bits included).
#[inline]
pub(crate) fn counter(e: Entry, clock: u64, marks: &DecayMarks) -> u8 {
    let c = e.lfu().map_or(LFU_INIT_VAL, |w| (w >> 24) as u8);
    let age = e.idle(clock as u32) as u64;
    decayed(c, marks.periods(clock.saturating_sub(age)))
}

#[inline]
fn word(clock: u64, counter: u8) -> u32 {
    (clock as u32 & LHD_CLOCK_MASK) | (counter as u32) << 24
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accesses numbered 100 per second from second 1000 (clock 100 by 1000, ...).
    fn steady(sec: u64) -> u64 {
        if sec < 1000 {
            0
        } else {
            (sec - 999) * 100
        }
    }

    #[test]
    fn marks_count_whole_periods_of_idle_time() {
        // Now is second 1000 + 10 minutes; periods of 2 minutes.
        let now = 1000 + 600;
        let m = DecayMarks::new(now, 2, steady);
        // Five whole periods fit after second 1000; the sixth target is before any access.
        assert_eq!(m.marks.len(), 5);
        let clock_at = |sec: u64| steady(sec);
        assert_eq!(m.periods(clock_at(now)), 0);
        assert_eq!(m.periods(clock_at(now - 119)), 0);
        assert_eq!(m.periods(clock_at(now - 120)), 1);
        assert_eq!(m.periods(clock_at(now - 239)), 1);
        assert_eq!(m.periods(clock_at(now - 240)), 2);
        assert_eq!(m.periods(clock_at(1000)), 5);
        // Before every observation: at least as old as the oldest mark.
        assert_eq!(m.periods(1), 5);
        // No decay.
        assert_eq!(DecayMarks::new(now, 0, steady).periods(1), 0);
    }

    #[test]
    fn counters_decay_by_idle_periods_and_others_read_as_new_keys() {
        let e = Entry::new(0, b"k", b"v", None, 0);
        let now = 1000 + 600;
        let m = DecayMarks::new(now, 1, steady);
        let clock = steady(now);
        set_frequency(e, clock - 100 * 150, 20); // 150 s ago: two whole minutes
        assert_eq!(counter(e, clock, &m), 18);
        set_frequency(e, clock, 20);
        assert_eq!(counter(e, clock, &m), 20);
        // An LRU-format entry idle for 3 minutes: LFU_INIT_VAL less 3.
        e.set_atime((clock - 100 * 180) as u32);
        assert_eq!(counter(e, clock, &m), LFU_INIT_VAL - 3);
        // A hit decays first, then may count, and dates the access now.
        let mut lfu = PartLfu::new(Arc::new(m), 1);
        set_frequency(e, clock - 100 * 300, 200);
        lfu.hit(e, clock, 10);
        let c = counter(e, clock, &lfu.marks);
        assert!(c == 195 || c == 196, "{c}");
        assert_eq!(e.idle(clock as u32), 0);
        e.free();
    }
}
