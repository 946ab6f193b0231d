//! Exact LRU stack distances in O(log M) per reference, after Olken (the kRedis paper's
//! ground truth for LRU, §5 and §7.1 "[Olken] reduced the algorithm complexity down to
//! O(N log M) by replacing the linear stack structure with the balanced search tree").
//!
//! Instead of a balanced tree keyed by last-access time we keep a Fenwick (binary
//! indexed) tree over access *timestamps*: slot `t` holds 1 (and the object's size) iff
//! the object whose most recent reference happened at time `t` is still live. The LRU
//! stack distance of a re-reference to an object last seen at `t0` is the number of
//! live slots at `>= t0` (every object referenced since, plus itself), a suffix sum;
//! its byte distance is the same suffix sum of sizes (the tree then holds each slot's
//! size instead of 1: one `u64` per node either way, to keep the tree small). The reference then clears `t0`
//! and sets the current time. Timestamps only grow, so when the tree's capacity is
//! exhausted the live slots are renumbered `0..M` in order (compaction) into a tree of
//! capacity `max(2M, 1024)`: O(M) work every >= M references, O(1) amortised, and the
//! tree never holds more than ~2M + 1024 slots.

use crate::curve::{Curve, DistanceHistogram, SizeUnit};
use crate::{KeyMap, MrcModel};

/// Smallest Fenwick tree capacity (slots).
const MIN_CAPACITY: usize = 1024;

/// Where a live object's most recent reference sits.
#[derive(Debug, Clone, Copy)]
struct Entry {
    slot: u32,
    size: u32,
}

/// Exact LRU stack distances (Olken), by object count or bytes.
#[derive(Debug, Clone)]
pub struct Olken {
    unit: SizeUnit,
    map: KeyMap<Entry>,
    /// Key referenced at each timestamp slot; stale unless `map[key].slot` is that slot.
    slots: Vec<u64>,
    /// 1-based Fenwick tree over slots `0..capacity` (index `slot + 1`) of each live
    /// slot's weight: 1, or the object's size in byte mode.
    tree: Vec<u64>,
    live_bytes: u64,
    hist: DistanceHistogram,
    compactions: u64,
}

impl Olken {
    /// Default histogram size: exact object distances up to 2^20 objects.
    pub const DEFAULT_MAX_BUCKETS: usize = 1 << 20;

    /// A model measuring distances in `unit`.
    pub fn new(unit: SizeUnit) -> Self {
        Self::with_max_buckets(unit, Self::DEFAULT_MAX_BUCKETS)
    }

    /// As [`Olken::new`], with a bound on the distance histogram's buckets (see
    /// [`DistanceHistogram`]: distances stay exact until they exceed it).
    pub fn with_max_buckets(unit: SizeUnit, max_buckets: usize) -> Self {
        Self {
            unit,
            map: KeyMap::default(),
            slots: Vec::with_capacity(MIN_CAPACITY),
            tree: vec![0; MIN_CAPACITY + 1],
            live_bytes: 0,
            hist: DistanceHistogram::new(max_buckets),
            compactions: 0,
        }
    }

    /// What the distances count.
    pub fn unit(&self) -> SizeUnit {
        self.unit
    }

    /// The distance histogram so far.
    pub fn histogram(&self) -> &DistanceHistogram {
        &self.hist
    }

    /// Number of live (tracked) objects.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no object is tracked.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// How many times the timestamp tree was compacted.
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Approximate heap bytes held (hash map, slot keys, tree, histogram).
    pub fn memory_bytes(&self) -> usize {
        // hashbrown: one control byte plus the (key, entry) pair per bucket.
        let map = self.map.capacity() * (1 + std::mem::size_of::<(u64, Entry)>());
        map + self.slots.capacity() * 8 + self.tree.capacity() * 8 + self.hist.counts().len() * 8
    }

    /// The stack distance of a reference to `key` (1 = most recent) in the model's unit,
    /// without recording it or updating the stack; `None` for a first reference.
    pub fn distance_of(&self, key: u64) -> Option<u64> {
        let e = self.map.get(&key)?;
        Some(self.total_weight(self.map.len() as u64) - self.prefix(e.slot as usize))
    }

    /// Weight of an object of `size` bytes in the tree.
    #[inline]
    fn weight(&self, size: u32) -> u64 {
        match self.unit {
            SizeUnit::Objects => 1,
            SizeUnit::Bytes => u64::from(size),
        }
    }

    /// Total weight of `live` objects.
    #[inline]
    fn total_weight(&self, live: u64) -> u64 {
        match self.unit {
            SizeUnit::Objects => live,
            SizeUnit::Bytes => self.live_bytes,
        }
    }

    fn capacity(&self) -> usize {
        self.tree.len() - 1
    }

    /// Sum of weights over slots `0..slot` (exclusive).
    #[inline]
    fn prefix(&self, slot: usize) -> u64 {
        let mut acc = 0u64;
        let mut i = slot;
        while i > 0 {
            acc += self.tree[i];
            i &= i - 1;
        }
        acc
    }

    #[inline]
    fn add(&mut self, slot: usize, delta: u64) {
        let mut i = slot + 1;
        let cap = self.capacity();
        while i <= cap {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Renumbers the live slots `0..M` in timestamp order into a fresh tree of capacity
    /// `max(2M, MIN_CAPACITY)`, built bottom-up in O(capacity).
    fn compact(&mut self) {
        self.compactions += 1;
        let live = self.map.len();
        let cap = (2 * live).max(MIN_CAPACITY);
        let mut slots = Vec::with_capacity(cap);
        let mut tree = vec![0u64; cap + 1];
        for (old_slot, &key) in self.slots.iter().enumerate() {
            if let Some(e) = self.map.get_mut(&key) {
                if e.slot as usize == old_slot {
                    e.slot = slots.len() as u32;
                    slots.push(key);
                    tree[slots.len()] = match self.unit {
                        SizeUnit::Objects => 1,
                        SizeUnit::Bytes => u64::from(e.size),
                    };
                }
            }
        }
        // Linear-time Fenwick construction: push each node's sum to its parent.
        for i in 1..=cap {
            let parent = i + (i & i.wrapping_neg());
            if parent <= cap {
                tree[parent] += tree[i];
            }
        }
        self.slots = slots;
        self.tree = tree;
    }
}

impl MrcModel for Olken {
    fn access(&mut self, key: u64, size: u32) {
        if self.slots.len() == self.capacity() {
            self.compact();
        }
        let now = self.slots.len();
        self.slots.push(key);
        let live = self.map.len() as u64;
        // One hash lookup per reference: the entry is updated in place.
        let prev = match self.map.entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut o) => {
                let e = *o.get();
                *o.get_mut() = Entry {
                    slot: now as u32,
                    size,
                };
                Some(e)
            }
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert(Entry {
                    slot: now as u32,
                    size,
                });
                None
            }
        };
        match prev {
            Some(e) => {
                let d = self.total_weight(live) - self.prefix(e.slot as usize);
                self.hist.record(d);
                let w = self.weight(e.size);
                self.add(e.slot as usize, w.wrapping_neg());
                self.live_bytes = self.live_bytes - u64::from(e.size) + u64::from(size);
            }
            None => {
                self.hist.record_cold();
                self.live_bytes += u64::from(size);
            }
        }
        self.add(now, self.weight(size));
    }

    fn delete(&mut self, key: u64) {
        if let Some(e) = self.map.remove(&key) {
            let w = self.weight(e.size);
            self.add(e.slot as usize, w.wrapping_neg());
            self.live_bytes -= u64::from(e.size);
        }
    }

    fn curves(&self) -> Vec<Curve> {
        vec![self.hist.to_curve("olken", None, self.unit, 1.0)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_of_a_small_sequence_by_objects_and_bytes() {
        let mut o = Olken::new(SizeUnit::Objects);
        let mut b = Olken::new(SizeUnit::Bytes);
        // a b c a b b d a
        let trace = [
            (1, 10),
            (2, 20),
            (3, 30),
            (1, 10),
            (2, 20),
            (2, 20),
            (4, 5),
            (1, 10),
        ];
        let mut od = Vec::new();
        let mut bd = Vec::new();
        for &(k, s) in &trace {
            od.push(o.distance_of(k));
            bd.push(b.distance_of(k));
            o.access(k, s);
            b.access(k, s);
        }
        assert_eq!(
            od,
            vec![None, None, None, Some(3), Some(3), Some(1), None, Some(3)]
        );
        assert_eq!(
            bd,
            vec![
                None,
                None,
                None,
                Some(60),
                Some(60),
                Some(20),
                None,
                Some(35)
            ]
        );
        let c = o.curves().remove(0);
        // 8 refs, 4 cold; hits at distances 3, 3, 1, 3.
        assert!((c.miss_ratio_at(1.0) - 7.0 / 8.0).abs() < 1e-12);
        assert!((c.miss_ratio_at(2.0) - 7.0 / 8.0).abs() < 1e-12);
        assert!((c.miss_ratio_at(3.0) - 4.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn compaction_keeps_distances_and_bounds_the_tree() {
        let mut o = Olken::new(SizeUnit::Objects);
        // A loop over 700 keys: after the first pass every distance is 700.
        for r in 0..21_000u64 {
            let k = r % 700;
            if r >= 700 {
                assert_eq!(o.distance_of(k), Some(700), "ref {r}");
            }
            o.access(k, 1);
        }
        assert!(o.compactions() > 5);
        assert!(o.tree.len() <= 2 * 700 + MIN_CAPACITY + 1);
        // Stack now: 699 (top), 698, ..., 0 (bottom). Deleting 5 and 6 shortens the
        // distance of everything referenced before them, not after.
        o.delete(5);
        o.delete(6);
        assert_eq!(o.len(), 698);
        assert_eq!(o.distance_of(0), Some(698));
        assert_eq!(o.distance_of(4), Some(694));
        assert_eq!(o.distance_of(7), Some(693));
        assert_eq!(o.distance_of(699), Some(1));
    }
}
