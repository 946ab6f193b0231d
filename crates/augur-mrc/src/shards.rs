//! SHARDS: spatially hashed sampling for LRU miss-ratio curves (Waldspurger et al.,
//! FAST'15; adopted by the kRedis paper §2.7 and by DLRU §2.2).
//!
//! A key is in the sample iff `hash(key) mod P < T`; the sampling rate is `R = T / P`.
//! Because the filter is a function of the key, *every* reference to a sampled key is
//! kept, so the reuse pattern of the sampled keys is intact: the LRU stack distance of
//! a sampled reference, measured among sampled keys only, estimates the full trace's
//! distance times `R`. Scaling sampled distances by `1/R` and histogramming them gives
//! the full-trace MRC from a `1/R` times smaller stack.
//!
//! Two modes, as in the SHARDS paper:
//! - **fixed rate** (§3): `T` is fixed; memory grows with `R` times the number of keys.
//!   Optionally the "SHARDS_adj" correction (§3.3) adds the difference between the
//!   expected (`R` x references) and the actual number of sampled references to the
//!   first histogram bucket, which removes most of the bias from a sample that happens
//!   to hold a hot key more or fewer.
//! - **fixed size** (§4): at most `s_max` sampled keys. When a new key would exceed
//!   that, the key with the largest hash value is evicted from the sample and `T` is
//!   lowered to that value, so the rate only ever goes down. Histogram counts gathered
//!   at the old rate are multiplied by `R_new / R_old`, so every reference recorded so
//!   far weighs as if it had been sampled at the current rate.
//!
//! The underlying exact stack-distance computation ([`LruStack`]) is a Fenwick tree over
//! logical timestamps (Bennett & Kruskal's partial sums; Olken's O(log M) idea): each
//! live key holds a 1 (and its size, in a second tree) at the timestamp of its last
//! reference, and the distance of a reuse is the number (total size) of keys whose
//! marks lie after the key's previous timestamp. Timestamps are compacted when they run
//! out, which keeps memory proportional to the live keys.

use std::collections::BinaryHeap;

use crate::curve::{Curve, Point, SizeUnit};
use crate::MrcModel;

/// The SHARDS modulus `P` (2^32). The hash's top 32 bits are the value compared with
/// the threshold: fine enough that fixed-size SHARDS can lower `T` one key at a time
/// even below rate 1e-6.
pub const MODULUS: u64 = 1 << 32;

/// The 64-bit mixer used for spatial sampling: the crate's [`crate::mix64`] (SplitMix64's
/// finaliser), under the name SHARDS' callers use.
pub use crate::mix64 as key_hash;

/// `hash(key) mod P` for [`MODULUS`] `P` (the top bits of [`key_hash`]).
#[inline]
pub fn sample_value(key: u64) -> u64 {
    key_hash(key) >> 32
}

/// A hash map keyed by `u64` ids (the crate's [`crate::KeyMap`]).
pub type U64Map<V> = crate::KeyMap<V>;

/// The spatial filter `hash(key) mod P < T` (SHARDS §3; kRedis §2.7; DLRU Eq. 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampler {
    threshold: u64,
}

impl Sampler {
    /// A filter of rate `rate` (clamped to `[1/P, 1]`, rounded to a multiple of `1/P`).
    pub fn with_rate(rate: f64) -> Self {
        let t = (rate.clamp(0.0, 1.0) * MODULUS as f64).round() as u64;
        Self {
            threshold: t.clamp(1, MODULUS),
        }
    }

    /// A filter with threshold `T` (clamped to `[1, P]`).
    pub fn with_threshold(threshold: u64) -> Self {
        Self {
            threshold: threshold.clamp(1, MODULUS),
        }
    }

    /// The threshold `T`.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The rate `R = T / P`.
    pub fn rate(&self) -> f64 {
        self.threshold as f64 / MODULUS as f64
    }

    /// Whether `key` is in the sample.
    #[inline]
    pub fn sampled(&self, key: u64) -> bool {
        sample_value(key) < self.threshold
    }
}

/// The LRU stack distance of one reuse, counting the reused key itself: a reference
/// hits in an LRU cache of `c` objects iff `objects <= c`, and in one of `b` bytes iff
/// `bytes <= b` (Mattson's inclusion property; MIMIR Lemma 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reuse {
    pub objects: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Mark {
    ts: usize,
    size: u32,
}

/// Exact LRU stack distances in O(log M) per reference: Fenwick trees of object counts
/// and of bytes indexed by each key's last-reference timestamp.
#[derive(Debug, Clone, Default)]
pub struct LruStack {
    marks: U64Map<Mark>,
    counts: Vec<u64>,
    bytes: Vec<u64>,
    now: usize,
    live_bytes: u64,
}

const MIN_TIMESTAMPS: usize = 1024;

impl LruStack {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys in the stack.
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// Total bytes of the keys in the stack (at their latest sizes).
    pub fn bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Whether `key` is in the stack.
    pub fn contains(&self, key: u64) -> bool {
        self.marks.contains_key(&key)
    }

    /// References `key` with `size` bytes, moving it to the top. Returns its stack
    /// distance, or `None` on its first reference (an infinite distance, a cold miss).
    /// The byte distance counts the key at its new size.
    pub fn access(&mut self, key: u64, size: u32) -> Option<Reuse> {
        if self.now >= self.counts.len() {
            self.compact();
        }
        let ts = self.now;
        self.now += 1;
        let reuse = match self.marks.get_mut(&key) {
            Some(mark) => {
                let old = *mark;
                *mark = Mark { ts, size };
                let above_objects = self.marks.len() as u64 - prefix(&self.counts, old.ts);
                let above_bytes = self.live_bytes - prefix(&self.bytes, old.ts);
                add(&mut self.counts, old.ts, u64::MAX); // -1
                add(&mut self.bytes, old.ts, (old.size as u64).wrapping_neg());
                self.live_bytes -= u64::from(old.size);
                // `above_*` count the keys strictly more recent than the old mark;
                // the distance also counts the key itself, at its new size.
                Some(Reuse {
                    objects: above_objects + 1,
                    bytes: above_bytes + u64::from(size),
                })
            }
            None => {
                self.marks.insert(key, Mark { ts, size });
                None
            }
        };
        add(&mut self.counts, ts, 1);
        add(&mut self.bytes, ts, u64::from(size));
        self.live_bytes += u64::from(size);
        reuse
    }

    /// Removes `key`; true if it was there.
    pub fn remove(&mut self, key: u64) -> bool {
        match self.marks.remove(&key) {
            Some(old) => {
                add(&mut self.counts, old.ts, u64::MAX);
                add(&mut self.bytes, old.ts, (old.size as u64).wrapping_neg());
                self.live_bytes -= u64::from(old.size);
                true
            }
            None => false,
        }
    }

    /// Renumbers live marks 0..n in recency order and rebuilds the trees with room for
    /// as many new timestamps again: O(n log n) once per >= n references.
    fn compact(&mut self) {
        let mut order: Vec<(usize, u64)> = self.marks.iter().map(|(&k, m)| (m.ts, k)).collect();
        order.sort_unstable();
        let cap = (order.len() * 2).max(MIN_TIMESTAMPS);
        self.counts = vec![0; cap];
        self.bytes = vec![0; cap];
        for (i, &(_, key)) in order.iter().enumerate() {
            let m = self.marks.get_mut(&key).expect("key from the map");
            m.ts = i;
            self.counts[i] = 1;
            self.bytes[i] = u64::from(m.size);
        }
        build(&mut self.counts);
        build(&mut self.bytes);
        self.now = order.len();
    }
}

/// Sum of entries `0..=i` of a Fenwick tree (wrapping, so negative deltas work).
#[inline]
fn prefix(tree: &[u64], i: usize) -> u64 {
    let mut i = i + 1;
    let mut s = 0u64;
    while i > 0 {
        s = s.wrapping_add(tree[i - 1]);
        i &= i - 1;
    }
    s
}

/// Adds `delta` (wrapping) at index `i`.
#[inline]
fn add(tree: &mut [u64], i: usize, delta: u64) {
    let mut i = i + 1;
    while i <= tree.len() {
        tree[i - 1] = tree[i - 1].wrapping_add(delta);
        i += i & i.wrapping_neg();
    }
}

/// Turns an array of point values into a Fenwick tree in O(n).
fn build(tree: &mut [u64]) {
    let n = tree.len();
    for i in 1..=n {
        let parent = i + (i & i.wrapping_neg());
        if parent <= n {
            tree[parent - 1] = tree[parent - 1].wrapping_add(tree[i - 1]);
        }
    }
}

/// A histogram of (scaled) reuse distances with bins `((i-1)w, iw]` whose width `w`
/// doubles (merging bin pairs) whenever a distance falls past [`Self::MAX_BINS`] bins,
/// so it stays small for byte distances of any magnitude while object distances up to
/// `MAX_BINS` are kept exactly (w = 1).
#[derive(Debug, Clone)]
pub struct DistanceHistogram {
    bins: Vec<f64>,
    width: f64,
}

impl Default for DistanceHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl DistanceHistogram {
    /// Number of bins before the width doubles.
    pub const MAX_BINS: usize = 1 << 16;

    pub fn new() -> Self {
        Self {
            bins: Vec::new(),
            width: 1.0,
        }
    }

    /// Bin width.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Adds `weight` hits at distance `d` (> 0).
    pub fn add(&mut self, d: f64, weight: f64) {
        let mut i = ((d / self.width).ceil() as usize).max(1) - 1;
        while i >= Self::MAX_BINS {
            self.coarsen();
            i = ((d / self.width).ceil() as usize).max(1) - 1;
        }
        if i >= self.bins.len() {
            self.bins.resize(i + 1, 0.0);
        }
        self.bins[i] += weight;
    }

    fn coarsen(&mut self) {
        let merged: Vec<f64> = self.bins.chunks(2).map(|c| c.iter().sum()).collect();
        self.bins = merged;
        self.width *= 2.0;
    }

    /// Multiplies every count by `f` (SHARDS §4 rescaling, MIMIR §3.7 decay).
    pub fn scale(&mut self, f: f64) {
        self.bins.iter_mut().for_each(|b| *b *= f);
    }

    /// Total weight.
    pub fn total(&self) -> f64 {
        self.bins.iter().sum()
    }

    /// Points `(i w, 1 - hits(<= i w) / references)` for every bin, where
    /// `extra_first` hits are added at distance `first_at` (the SHARDS_adj correction).
    fn points(&self, references: f64, extra: Option<(f64, f64)>) -> Vec<Point> {
        let mut cum = 0.0;
        let mut pts = Vec::with_capacity(self.bins.len());
        for (i, &h) in self.bins.iter().enumerate() {
            cum += h;
            let size = (i + 1) as f64 * self.width;
            let mut hits = cum;
            if let Some((at, n)) = extra {
                if at <= size {
                    hits += n;
                }
            }
            let mr = if references > 0.0 {
                1.0 - hits / references
            } else {
                1.0
            };
            pts.push(Point {
                size,
                miss_ratio: mr.clamp(0.0, 1.0),
            });
        }
        pts
    }
}

/// Which SHARDS variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShardsMode {
    /// Fixed rate `R` (SHARDS §3); `adjust` enables SHARDS_adj (§3.3).
    FixedRate { rate: f64, adjust: bool },
    /// At most `s_max` sampled keys, the rate lowering adaptively from 1 (§4).
    /// `adjust` applies the SHARDS_adj correction with the current rate: after the
    /// §4 rescaling every recorded reference weighs as if sampled at the current rate,
    /// so `R_now x all references` is the expected sampled count.
    FixedSize { s_max: usize, adjust: bool },
}

/// SHARDS LRU miss-ratio-curve model, by objects and by bytes at once.
#[derive(Debug, Clone)]
pub struct Shards {
    mode: ShardsMode,
    sampler: Sampler,
    stack: LruStack,
    /// Sampled keys by hash value, largest first (fixed size only); may hold stale
    /// entries for deleted keys, skipped when popped.
    heap: BinaryHeap<(u64, u64)>,
    objects: DistanceHistogram,
    bytes: DistanceHistogram,
    /// Sampled references, rescaled like the histograms (fixed size).
    sampled_refs: f64,
    /// All references seen, sampled or not (for SHARDS_adj).
    all_refs: u64,
}

impl Shards {
    /// Fixed-rate SHARDS with rate `rate` (SHARDS §3) with the SHARDS_adj correction
    /// (§3.3), the variant the paper recommends.
    pub fn fixed_rate(rate: f64) -> Self {
        Self::new(ShardsMode::FixedRate { rate, adjust: true })
    }

    /// Fixed-size SHARDS keeping at most `s_max` sampled keys (SHARDS §4), with the
    /// SHARDS_adj correction at the current rate.
    pub fn fixed_size(s_max: usize) -> Self {
        Self::new(ShardsMode::FixedSize {
            s_max: s_max.max(1),
            adjust: true,
        })
    }

    pub fn new(mode: ShardsMode) -> Self {
        let sampler = match mode {
            ShardsMode::FixedRate { rate, .. } => Sampler::with_rate(rate),
            ShardsMode::FixedSize { .. } => Sampler::with_threshold(MODULUS),
        };
        Self {
            mode,
            sampler,
            stack: LruStack::new(),
            heap: BinaryHeap::new(),
            objects: DistanceHistogram::new(),
            bytes: DistanceHistogram::new(),
            sampled_refs: 0.0,
            all_refs: 0,
        }
    }

    /// The current sampling rate `R`.
    pub fn rate(&self) -> f64 {
        self.sampler.rate()
    }

    /// Number of sampled keys being tracked.
    pub fn tracked_keys(&self) -> usize {
        self.stack.len()
    }

    fn lower_threshold(&mut self, s_max: usize) {
        let old_rate = self.sampler.rate();
        while self.stack.len() > s_max {
            let Some((v, key)) = self.heap.pop() else {
                break;
            };
            if v >= self.sampler.threshold() || !self.stack.remove(key) {
                continue; // a stale entry (deleted key, or already excluded).
            }
            self.sampler = Sampler::with_threshold(v);
            // Every key with the same hash value is now outside the sample too.
            while let Some(&(v2, k2)) = self.heap.peek() {
                if v2 < v {
                    break;
                }
                self.heap.pop();
                self.stack.remove(k2);
            }
        }
        let f = self.sampler.rate() / old_rate;
        if f < 1.0 {
            self.objects.scale(f);
            self.bytes.scale(f);
            self.sampled_refs *= f;
        }
        if self.heap.len() > 2 * self.stack.len() + 1024 {
            let t = self.sampler.threshold();
            let stack = &self.stack;
            self.heap.retain(|&(v, k)| v < t && stack.contains(k));
        }
    }

    /// The curve in `unit`: miss ratio by cache size (objects or bytes).
    pub fn curve(&self, unit: SizeUnit) -> Curve {
        let hist = match unit {
            SizeUnit::Objects => &self.objects,
            SizeUnit::Bytes => &self.bytes,
        };
        let (refs, extra) = match self.mode {
            ShardsMode::FixedRate { adjust: true, .. }
            | ShardsMode::FixedSize { adjust: true, .. } => {
                // SHARDS_adj: the sample should hold R x all references; put the
                // difference at the smallest distance a sampled reuse can have.
                let expected = self.all_refs as f64 * self.rate();
                let diff = expected - self.sampled_refs;
                let at = match unit {
                    SizeUnit::Objects => 1.0 / self.rate(),
                    SizeUnit::Bytes => hist.width(),
                };
                (expected, Some((at, diff)))
            }
            _ => (self.sampled_refs, None),
        };
        let name = match self.mode {
            ShardsMode::FixedRate { adjust: true, .. } => "shards-adj",
            ShardsMode::FixedRate { .. } => "shards",
            ShardsMode::FixedSize { adjust: true, .. } => "shards-fixed-size-adj",
            ShardsMode::FixedSize { .. } => "shards-fixed-size",
        };
        Curve::new(name, None, unit, hist.points(refs, extra))
    }
}

impl MrcModel for Shards {
    fn access(&mut self, key: u64, size: u32) {
        self.all_refs += 1;
        let v = sample_value(key);
        if v >= self.sampler.threshold() {
            return;
        }
        self.sampled_refs += 1.0;
        let inv = 1.0 / self.sampler.rate();
        match self.stack.access(key, size) {
            Some(r) => {
                self.objects.add(r.objects as f64 * inv, 1.0);
                self.bytes.add(r.bytes as f64 * inv, 1.0);
            }
            None => {
                if let ShardsMode::FixedSize { s_max, .. } = self.mode {
                    self.heap.push((v, key));
                    if self.stack.len() > s_max {
                        self.lower_threshold(s_max);
                    }
                }
            }
        }
    }

    fn delete(&mut self, key: u64) {
        self.stack.remove(key);
    }

    /// Two curves: by objects, then by bytes.
    fn curves(&self) -> Vec<Curve> {
        vec![self.curve(SizeUnit::Objects), self.curve(SizeUnit::Bytes)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Naive Mattson stack: the reference the Fenwick stack must agree with exactly.
    fn mattson(trace: &[(u64, u32)]) -> Vec<Option<Reuse>> {
        let mut stack: Vec<(u64, u32)> = Vec::new();
        trace
            .iter()
            .map(|&(k, s)| {
                let pos = stack.iter().position(|&(x, _)| x == k);
                let r = pos.map(|p| {
                    let above: u64 = stack[..p].iter().map(|&(_, sz)| u64::from(sz)).sum();
                    Reuse {
                        objects: p as u64 + 1,
                        bytes: above + u64::from(s),
                    }
                });
                if let Some(p) = pos {
                    stack.remove(p);
                }
                stack.insert(0, (k, s));
                r
            })
            .collect()
    }

    #[test]
    fn fenwick_stack_matches_mattson_across_compactions_and_deletes() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let trace: Vec<(u64, u32)> = (0..20_000)
            .map(|_| {
                let k = if rng.gen_bool(0.7) {
                    rng.gen_range(0..50)
                } else {
                    rng.gen_range(0..3000)
                };
                (k, rng.gen_range(1..500))
            })
            .collect();
        let expect = mattson(&trace);
        let mut st = LruStack::new();
        for (i, &(k, s)) in trace.iter().enumerate() {
            assert_eq!(st.access(k, s), expect[i], "at {i}");
        }
        assert!(st.remove(3) || !st.contains(3));
        assert!(!st.contains(3));
    }

    #[test]
    fn histogram_coarsens_without_losing_weight() {
        let mut h = DistanceHistogram::new();
        for d in 1..=200_000u64 {
            h.add(d as f64, 1.0);
        }
        assert!(h.width() >= 4.0);
        assert!((h.total() - 200_000.0).abs() < 1e-6);
    }

    #[test]
    fn fixed_size_never_exceeds_s_max_and_rate_drops() {
        let mut s = Shards::fixed_size(500);
        for k in 0..100_000u64 {
            s.access(k % 20_000, 100);
            assert!(s.tracked_keys() <= 500);
        }
        let r = s.rate();
        assert!(r > 0.015 && r < 0.035, "rate {r}");
    }
}
