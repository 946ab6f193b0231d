//! Counting a trace's working set (distinct keys and their bytes) in one streaming pass.
//!
//! This is the hot loop of `augur mrc` whenever the models themselves are cheap (KRR at
//! R = 0.001 looks at one request in a thousand): every request is a set lookup, and
//! with hundreds of thousands of keys the table is far bigger than the caches, so a
//! general-purpose hash map spends its time waiting for memory (half of `augur mrc`'s
//! profile, ~70 ns a request on arc_p3). Here the set is an open-addressing table of
//! bare `u64` keys (linear probing, at most half full, Fibonacci hashing) and a batch is
//! inserted with the slot of the request [`PREFETCH_AHEAD`] positions later already
//! requested from memory, so the misses of consecutive requests overlap.

use crate::run::WorkingSet;

/// How far ahead in a batch the slot of a key is prefetched: enough requests to cover a
/// DRAM access at a few ns each.
const PREFETCH_AHEAD: usize = 16;

/// Builds a [`WorkingSet`] request by request, for traces that are streamed rather
/// than held in memory. A key whose size changes counts with its first size (the
/// oracleGeneral traces here have one size per key except cloudphysics, where sizes
/// rarely change).
#[derive(Debug)]
pub struct WorkingSetCounter {
    /// Keys, 0 marking an empty slot (key 0 itself is `has_zero`).
    slots: Vec<u64>,
    /// log2 of `slots.len()`.
    bits: u32,
    len: usize,
    has_zero: bool,
    total: WorkingSet,
}

impl Default for WorkingSetCounter {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl WorkingSetCounter {
    /// A counter sized for about `keys` distinct keys (it grows past them).
    pub fn with_capacity(keys: u64) -> Self {
        let bits = (keys.max(512) * 2).next_power_of_two().trailing_zeros();
        WorkingSetCounter {
            slots: vec![0; 1 << bits],
            bits,
            len: 0,
            has_zero: false,
            total: WorkingSet::default(),
        }
    }

    /// Counts one request for `key` of `size` bytes.
    #[inline]
    pub fn add(&mut self, key: u64, size: u32) {
        if self.insert(key) {
            self.total.objects += 1;
            self.total.bytes += u64::from(size);
        }
    }

    /// Counts a batch of requests; `entry` gives a request's key and size, or None for
    /// a request that is not a reference (a DELETE). Same result as [`Self::add`] on
    /// each, faster: see the module documentation.
    pub fn add_batch<T>(&mut self, batch: &[T], entry: impl Fn(&T) -> Option<(u64, u32)>) {
        for (i, r) in batch.iter().enumerate() {
            if let Some((key, _)) = batch.get(i + PREFETCH_AHEAD).and_then(&entry) {
                self.prefetch(key);
            }
            if let Some((key, size)) = entry(r) {
                self.add(key, size);
            }
        }
    }

    pub fn working_set(&self) -> WorkingSet {
        self.total
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // Fibonacci hashing: the top bits of key * 2^64/phi spread sequential and
        // strided ids (common in traces) evenly.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        crate::prefetch::prefetch(self.slots.as_ptr().wrapping_add(self.home(key)));
    }

    /// Inserts `key`; true if it was not there.
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        if key == 0 {
            return !std::mem::replace(&mut self.has_zero, true);
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s == key {
                return false;
            }
            if s == 0 {
                self.slots[i] = key;
                self.len += 1;
                if self.len * 2 > self.slots.len() {
                    self.grow();
                }
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.bits += 1;
        self.slots = vec![0; 1 << self.bits];
        let mask = self.slots.len() - 1;
        for key in old.into_iter().filter(|&k| k != 0) {
            let mut i = self.home(key);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = key;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Against a std HashMap: same distinct count and first-size bytes, through
        /// growth (tiny start), with key 0, duplicates and DELETEs (None entries).
        #[test]
        fn matches_a_hash_map(
            reqs in prop::collection::vec((0u64..3000, 1u32..1000, any::<bool>()), 0..5000),
            batched in any::<bool>(),
        ) {
            let mut expect: HashMap<u64, u32> = HashMap::new();
            for &(k, size, del) in &reqs {
                if !del {
                    expect.entry(k).or_insert(size);
                }
            }
            let mut c = WorkingSetCounter::with_capacity(0);
            if batched {
                c.add_batch(&reqs, |&(k, size, del)| (!del).then_some((k, size)));
            } else {
                for &(k, size, del) in &reqs {
                    if !del {
                        c.add(k, size);
                    }
                }
            }
            let ws = c.working_set();
            prop_assert_eq!(ws.objects, expect.len() as u64);
            prop_assert_eq!(ws.bytes, expect.values().map(|&s| u64::from(s)).sum::<u64>());
        }
    }

    #[test]
    fn sequential_and_strided_ids_spread() {
        // Fibonacci hashing keeps probe runs short for the id patterns traces have.
        let mut c = WorkingSetCounter::with_capacity(1 << 16);
        for k in 0..(1u64 << 16) {
            c.add(k * 4096, 1);
        }
        assert_eq!(c.working_set().objects, 1 << 16);
        let mask = c.slots.len() - 1;
        let longest = (0..c.slots.len())
            .filter(|&i| c.slots[i] != 0)
            .map(|i| {
                let home = c.home(c.slots[i]);
                (i.wrapping_sub(home)) & mask
            })
            .max()
            .unwrap();
        assert!(longest < 32, "probe distance {longest}");
    }
}
