//! MIMIR's ghost *filters* (Saemundsson et al., SoCC'14, §2.4 "Ghost filters", §4): the
//! ghost list replaced by a short queue of counting Bloom filters, one per ghost bucket.
//!
//! **Why.** A ghost list keeps a record per evicted key: in [`crate::mimir`] a 24-byte
//! slab record plus ~16 bytes of hash-table cells (8-byte cells, load at most 4/5, a
//! power of two), about 40 bytes per ghost (measured 40.4 with 2000 ghosts), and a real
//! cache keeps the key itself as well (memcached keys run to 250 bytes). When values are
//! small (Facebook's ETC pool: over 40% of values are 11 bytes or less, §2.4, citing
//! the paper's ref. 3) that "tax" is a large share of the memory. A counting Bloom
//! filter (the paper's ref. 20, Fan et al.) with 4-bit counters sized for 1% false
//! positives costs 9.6 counters = 38 bits = 4.8 bytes per ghost whatever the key's
//! length (measured 4.87 bytes = 39 bits per ghost with the per-filter bookkeeping).
//!
//! **What is lost.** Inside a filter the order of the ghosts is unknown, exactly like
//! inside a MIMIR bucket: a ghost found in filter `j` is somewhere among that filter's
//! ghosts, below every ghost of the more recent filters, so its stack distance is
//! spread uniformly over `(cached + above_j, cached + above_j + count_j]`
//! ([`GhostFilters::count_above`], [`GhostFilters::count`]), a resolution of one
//! filter's width. Filters answer with false positives: a first reference (or one to a
//! long-forgotten key) mistaken for a ghost is counted as a hit beyond the cache, and
//! removing it decrements counters of other keys. And the ghost depth is shorter than
//! the list's: right after a rotation the queue holds only `(F - 1) / F` of the ghost
//! capacity, and keys removed by ghost hits from the older filters are not replaced by
//! older ghosts (a list refills from further back), so hits near the far end of the
//! covered range are under-counted. On `arc_p3` (cache a quarter of the working set, as
//! many ghosts, 3 filters, STACKER B = 128) the estimated miss ratio at twice the cache is .294 against
//! .255 exact (the list: .255), accuracy 99.6% against the list's 99.9%. Filling the
//! head past its share until the whole queue is at capacity fixes the far end with 3
//! filters but overloads the head filter (more false positives; 8 filters: 97.6%), so
//! the paper's rule (rotate when the head is full) is kept. The paper measured 95.5%
//! fidelity for LRU on the `multi1` trace with 3 ghost filters up to twice the cache
//! size (§4 "Ghost filters"); see `tests/ghost_filter.rs` for ours.
//!
//! **Sizing** (the standard Bloom filter formulas, e.g. Broder & Mitzenmacher, "Network
//! applications of Bloom filters: a survey", 2004): for `n` items and a target
//! false-positive rate `p`, `m = ceil(-n ln p / (ln 2)^2)` counters and
//! `k = round((m / n) ln 2)` hash functions, for a false-positive rate of
//! `(1 - e^(-k n / m))^k ~ p`. The `k` indexes come from one 64-bit hash by double
//! hashing, `g_i = h1 + i h2` (Kirsch & Mitzenmacher, "Less hashing, same performance",
//! 2006), each mapped to `[0, m)` by a multiply-shift. Counters are 4 bits, as in Fan et
//! al.'s Summary Cache (ref. 20; an overflow needs 16 of the `n` keys on one counter,
//! probability ~1.4e-15 per counter at the optimal `k`), and saturate: a counter at 15 is
//! never incremented nor decremented again, so an overflow can cause a false positive
//! but never a false negative, and a decrement never wraps below zero.

use crate::mix64;

/// Salt so the filter's hash is independent of the hash tables keyed by the same keys.
const SALT: u64 = 0x6a09_e667_f3bc_c908;
/// A saturated 4-bit counter: sticky.
const SATURATED: u8 = 15;

/// A counting Bloom filter over `u64` keys with `m` 4-bit saturating counters (two per
/// byte) and `k` hash functions (see the module docs for sizing and hashing).
#[derive(Debug, Clone)]
pub struct CountingBloom {
    nibbles: Vec<u8>,
    m: u32,
    k: u32,
}

impl CountingBloom {
    /// Counters for `items` keys at false-positive rate `fp_rate`:
    /// `m = ceil(-n ln p / (ln 2)^2)` (at least 8; `p` clamped to `[1e-9, 0.5]`).
    pub fn optimal_counters(items: usize, fp_rate: f64) -> usize {
        let n = items.max(1) as f64;
        let p = fp_rate.clamp(1e-9, 0.5);
        let ln2 = std::f64::consts::LN_2;
        ((-n * p.ln() / (ln2 * ln2)).ceil() as usize).max(8)
    }

    /// Hash functions minimising the false-positive rate of `counters` counters holding
    /// `items` keys: `k = round((m / n) ln 2)`, in `1..=32`.
    pub fn optimal_hashes(counters: usize, items: usize) -> u32 {
        let k = (counters as f64 / items.max(1) as f64 * std::f64::consts::LN_2).round();
        (k as u32).clamp(1, 32)
    }

    /// A filter with `counters` counters and `hashes` hash functions.
    pub fn new(counters: usize, hashes: u32) -> Self {
        let m = counters.clamp(1, u32::MAX as usize) as u32;
        Self {
            nibbles: vec![0; (m as usize).div_ceil(2)],
            m,
            k: hashes.max(1),
        }
    }

    /// A filter sized for `items` keys at false-positive rate `fp_rate`.
    pub fn with_rate(items: usize, fp_rate: f64) -> Self {
        let m = Self::optimal_counters(items, fp_rate);
        Self::new(m, Self::optimal_hashes(m, items))
    }

    /// Number of counters `m`.
    pub fn counters(&self) -> usize {
        self.m as usize
    }

    /// Number of hash functions `k`.
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// Bytes of heap memory (half a byte per counter).
    pub fn heap_bytes(&self) -> usize {
        self.nibbles.capacity()
    }

    /// The false-positive rate the formula predicts with `items` keys in the filter:
    /// `(1 - e^(-k n / m))^k`.
    pub fn expected_fp_rate(&self, items: usize) -> f64 {
        let k = f64::from(self.k);
        (1.0 - (-k * items as f64 / f64::from(self.m)).exp()).powf(k)
    }

    /// Counters that are not zero (a fill measure; 0 means empty).
    pub fn nonzero_counters(&self) -> usize {
        (0..self.m as usize).filter(|&i| self.get(i) != 0).count()
    }

    /// Zeroes every counter.
    pub fn clear(&mut self) {
        self.nibbles.fill(0);
    }

    /// The filter's hash of `key` (one 64-bit hash feeds all `k` indexes).
    #[inline]
    pub fn hash(key: u64) -> u64 {
        mix64(key ^ SALT)
    }

    /// The `k` counter indexes of hash `h`: `g_i = h1 + i h2 (mod 2^32)` with `h1`,
    /// `h2` the hash's halves (`h2` odd, so the `g_i` are distinct), mapped to `[0, m)`
    /// by `g_i m / 2^32`.
    #[inline]
    fn indexes(&self, h: u64) -> impl Iterator<Item = usize> {
        let (h1, h2, m) = (h as u32, (h >> 32) as u32 | 1, u64::from(self.m));
        (0..self.k).map(move |i| {
            let g = h1.wrapping_add(i.wrapping_mul(h2));
            ((u64::from(g) * m) >> 32) as usize
        })
    }

    #[inline]
    fn get(&self, i: usize) -> u8 {
        (self.nibbles[i >> 1] >> ((i & 1) * 4)) & 0xf
    }

    #[inline]
    fn set(&mut self, i: usize, v: u8) {
        let shift = (i & 1) * 4;
        let b = &mut self.nibbles[i >> 1];
        *b = (*b & !(0xf << shift)) | (v << shift);
    }

    /// Adds the key with filter hash `h` ([`CountingBloom::hash`]).
    #[inline]
    pub fn insert_hash(&mut self, h: u64) {
        for i in self.indexes(h) {
            let c = self.get(i);
            if c < SATURATED {
                self.set(i, c + 1);
            }
        }
    }

    /// Whether the key with filter hash `h` may be in the filter (no false negatives for
    /// keys inserted and not removed, unless a false-positive removal took their count).
    #[inline]
    pub fn contains_hash(&self, h: u64) -> bool {
        self.indexes(h).all(|i| self.get(i) != 0)
    }

    /// Removes the key with filter hash `h` if the filter reports it: decrements its `k`
    /// counters only when all are non-zero (saturated ones stay at 15). Returns whether
    /// it did.
    #[inline]
    pub fn remove_hash(&mut self, h: u64) -> bool {
        if !self.contains_hash(h) {
            return false;
        }
        for i in self.indexes(h) {
            let c = self.get(i);
            // `c > 0` also guards a key whose k indexes repeat one counter.
            if c > 0 && c < SATURATED {
                self.set(i, c - 1);
            }
        }
        true
    }

    /// Adds `key`.
    pub fn insert(&mut self, key: u64) {
        self.insert_hash(Self::hash(key));
    }

    /// Whether `key` may be in the filter.
    pub fn contains(&self, key: u64) -> bool {
        self.contains_hash(Self::hash(key))
    }

    /// Removes `key` if reported present; returns whether it was.
    pub fn remove(&mut self, key: u64) -> bool {
        self.remove_hash(Self::hash(key))
    }
}

/// One filter of the queue with its bookkeeping.
#[derive(Debug, Clone)]
struct Slot {
    bloom: CountingBloom,
    /// Units (objects, or bytes) added minus removed.
    units: u64,
    /// Keys added minus removed.
    items: u64,
    /// Keys the bloom filter was sized for.
    design: u64,
}

/// §2.4's list of ghost filters: `F` counting Bloom filters in a circular array, each a
/// ghost bucket of at most `capacity` units (objects, or bytes). Evicted keys go into
/// the head filter; when it is full the filters rotate: the tail filter (the oldest
/// ghosts) is cleared and becomes the new, empty, head. A reference to a key that the
/// cache misses is looked up from the head (most recent) to the tail; the first filter
/// reporting it gives its recency class, and the key is removed there.
///
/// Positions count from the head: 0 is the most recent filter, `F - 1` the oldest. A
/// hit in position `j` lies below `count_above(j)` units of more recent ghosts and among
/// `count(j)` units, so its ghost distance is in `(count_above(j), count_above(j) +
/// count(j)]` (to which a MIMIR adds the cached size).
///
/// Byte-sized ghosts: capacity and counts are in bytes while the Bloom filters are sized
/// in keys. Each filter starts sized for `expected_items`; when a head filter fills with
/// a number of keys that differs from its design by more than 25%, the filter recycled
/// as the next head is re-allocated for that many keys, so the false-positive rate
/// follows the actual key count if object sizes drift.
#[derive(Debug, Clone)]
pub struct GhostFilters {
    slots: Vec<Slot>,
    /// Index in `slots` of the head filter.
    head: usize,
    capacity: u64,
    fp_rate: f64,
}

impl GhostFilters {
    /// `filters` filters (at least 1) of `capacity` units each (at least 1), sized for
    /// `expected_items` keys each at false-positive rate `fp_rate`. For object units pass
    /// `expected_items = capacity`.
    pub fn new(filters: usize, capacity: u64, expected_items: usize, fp_rate: f64) -> Self {
        let design = expected_items.max(1) as u64;
        let slot = Slot {
            bloom: CountingBloom::with_rate(design as usize, fp_rate),
            units: 0,
            items: 0,
            design,
        };
        Self {
            slots: vec![slot; filters.max(1)],
            head: 0,
            capacity: capacity.max(1),
            fp_rate,
        }
    }

    /// Number of filters `F`.
    pub fn filters(&self) -> usize {
        self.slots.len()
    }

    /// Units each filter takes before the queue rotates.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The configured false-positive rate per filter (at its design load).
    pub fn fp_rate(&self) -> f64 {
        self.fp_rate
    }

    /// Index in the circular array of the filter at `pos` from the head.
    #[inline]
    fn at(&self, pos: usize) -> usize {
        let f = self.slots.len();
        assert!(pos < f, "filter position {pos} out of {f}");
        (self.head + f - pos) % f
    }

    /// Units (added minus removed) in the filter at `pos` from the head.
    pub fn count(&self, pos: usize) -> u64 {
        self.slots[self.at(pos)].units
    }

    /// Keys (added minus removed) in the filter at `pos` from the head.
    pub fn items(&self, pos: usize) -> u64 {
        self.slots[self.at(pos)].items
    }

    /// Units in the filters more recent than the one at `pos`.
    pub fn count_above(&self, pos: usize) -> u64 {
        (0..pos).map(|p| self.count(p)).sum()
    }

    /// Units per filter from the head (most recent) to the tail.
    pub fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.slots.len()).map(|p| self.count(p))
    }

    /// Units in all the filters.
    pub fn total(&self) -> u64 {
        self.slots.iter().map(|s| s.units).sum()
    }

    /// Bytes of heap memory: the counters plus the per-filter bookkeeping.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self
                .slots
                .iter()
                .map(|s| s.bloom.heap_bytes())
                .sum::<usize>()
    }

    /// The filter at `pos` from the head.
    pub fn filter(&self, pos: usize) -> &CountingBloom {
        &self.slots[self.at(pos)].bloom
    }

    /// Adds a ghost of one unit (object units).
    pub fn insert(&mut self, key: u64) {
        self.insert_units(key, 1);
    }

    /// Adds a ghost of `units` units to the head filter, first rotating if the head is
    /// full (holds `capacity` units or more).
    pub fn insert_units(&mut self, key: u64, units: u64) {
        if self.slots[self.head].units >= self.capacity {
            self.rotate();
        }
        let s = &mut self.slots[self.head];
        s.bloom.insert(key);
        s.units += units;
        s.items += 1;
    }

    /// Discards the tail filter and makes it, cleared, the new head.
    fn rotate(&mut self) {
        let filled = self.slots[self.head].items.max(1);
        self.head = (self.head + 1) % self.slots.len();
        let fp = self.fp_rate;
        let s = &mut self.slots[self.head];
        if filled * 4 > s.design * 5 || filled * 4 < s.design * 3 {
            s.bloom = CountingBloom::with_rate(filled as usize, fp);
            s.design = filled;
        } else {
            s.bloom.clear();
        }
        s.units = 0;
        s.items = 0;
    }

    /// Position from the head of the first (most recent) filter reporting `key`,
    /// without removing it.
    pub fn position(&self, key: u64) -> Option<usize> {
        let h = CountingBloom::hash(key);
        (0..self.slots.len()).find(|&p| self.slots[self.at(p)].bloom.contains_hash(h))
    }

    /// Removes `key`, of `units` units, from the filter at `pos` (as returned by
    /// [`GhostFilters::position`]); the counts never go below zero.
    pub fn remove_at(&mut self, pos: usize, key: u64, units: u64) {
        let i = self.at(pos);
        let s = &mut self.slots[i];
        if s.bloom.remove(key) {
            s.units = s.units.saturating_sub(units);
            s.items = s.items.saturating_sub(1);
        }
    }

    /// Average units per key in the filter at `pos` (1 for object units), for removing
    /// a key whose size is unknown.
    pub fn mean_units(&self, pos: usize) -> u64 {
        let s = &self.slots[self.at(pos)];
        if s.items == 0 {
            1
        } else {
            (s.units as f64 / s.items as f64).round().max(1.0) as u64
        }
    }

    /// Looks `key` up from the head to the tail; in the first filter reporting it,
    /// removes it (one key of [`GhostFilters::mean_units`] units) and returns that
    /// filter's position from the head (0 = most recent).
    pub fn remove_if_present(&mut self, key: u64) -> Option<usize> {
        let pos = self.position(key)?;
        let units = self.mean_units(pos);
        self.remove_at(pos, key, units);
        Some(pos)
    }
}
