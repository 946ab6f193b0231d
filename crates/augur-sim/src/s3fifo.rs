//! S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP'23):
//! a small probationary FIFO (10 % of the capacity), a main FIFO with reinsertion (a
//! 2-bit CLOCK), and a ghost FIFO of keys recently dropped from the small queue.
//!
//! - A miss inserts into the small queue, or into the main queue if the key is in the
//!   ghost (it was dropped from the small queue recently and came back).
//! - A hit increments the object's frequency (capped at 3); nothing moves.
//! - Eviction takes from the main queue when it holds more than its share (or the small
//!   queue is empty), otherwise from the small queue: the small queue's oldest object
//!   moves to the main queue if it was hit at least `move_threshold` times, else it is
//!   dropped and its key remembered in the ghost; the main queue's oldest object is
//!   reinserted with its frequency decremented if it was hit, else evicted.
//!
//! Checked against libCacheSim's `S3FIFO` (Python bindings 0.3.5, `move_to_main_threshold
//! 1`, by object count on the shared traces at 10 / 25 / 50 % of the working set): equal
//! to 0.0015 in 35 of 36 cells, 0.012 lower on cloudphysics at 25 % (`tests/reference.rs`).
//! As libCacheSim does, until the first eviction new objects go to the main queue once
//! the small one is full (the first fill does not all pass through probation: on the
//! short LIRS traces this alone moves the miss ratio by up to 0.15). Unlike libCacheSim,
//! an object larger than the small queue is still admitted (a cache server stores what
//! it is given); it then leaves through the small queue at the next eviction.
//!
//! # Sampled queues
//!
//! A server that keeps its entries in a hash table and evicts by sampling (Redis, Augur)
//! has no FIFO to pop, so the queues can also be *sampled* ([`S3FifoConfig::sampled`]):
//! the main queue's "oldest" object is the oldest-inserted of K uniform samples of it, as
//! Redis's approximated LRU replaces the true LRU tail by the oldest of K samples, and
//! the small queue's is one uniform sample of it. Measured against the exact queues on
//! the shared traces (main K = 8; small queue exact, or oldest of 1, 2, 4, 16 samples):
//! the small queue's order barely matters (its objects are young and few; what decides
//! is their hit count), so one sample is as good as the FIFO and is what a store can
//! afford, where finding a small-queue entry among uniform draws of the whole table
//! costs ~10 draws. The ghost is exact in both cases (a FIFO of keys, bounded at
//! `ghost_ratio` of the capacity, in the cache's unit).

use std::collections::VecDeque;

use crate::key_index::KeyMap;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::spec::Unit;
use crate::CacheSim;

/// S3-FIFO's parameters (SOSP'23 §4: small queue 10 % of the cache, ghost as many
/// entries as the main queue, an object moves on if it was hit at least once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct S3FifoConfig {
    /// Share of the capacity the small (probationary) queue may hold.
    pub small_ratio: f64,
    /// Capacity of the ghost, as a share of the cache's capacity.
    pub ghost_ratio: f64,
    /// Hits in the small queue that earn a move to the main queue.
    pub move_threshold: u8,
    /// Samples per pick from the small queue (0: the exact FIFO).
    pub small_samples: usize,
    /// Samples per pick from the main queue (0: the exact FIFO).
    pub main_samples: usize,
}

/// The paper's parameters with exact FIFO queues.
impl Default for S3FifoConfig {
    fn default() -> Self {
        S3FifoConfig {
            small_ratio: 0.1,
            ghost_ratio: 0.9,
            move_threshold: 1,
            small_samples: 0,
            main_samples: 0,
        }
    }
}

impl S3FifoConfig {
    /// Exact queues for `k` = 0; otherwise the main queue's oldest of `k` samples and one
    /// uniform sample of the small queue (see the module docs).
    pub fn sampled(k: usize) -> S3FifoConfig {
        S3FifoConfig {
            small_samples: usize::from(k > 0),
            main_samples: k,
            ..S3FifoConfig::default()
        }
    }
}

/// The highest hit count an object keeps (S3-FIFO's 2-bit counter).
pub const MAX_FREQ: u8 = 3;

/// A hit: the object's count after it (capped at [`MAX_FREQ`]; nothing moves).
#[inline]
pub fn hit_freq(freq: u8) -> u8 {
    freq.saturating_add(1).min(MAX_FREQ)
}

/// The main queue's oldest object, hit `freq` times: `Some(count)` to reinsert it with
/// that count (a 2-bit CLOCK's second chance), `None` to evict it.
#[inline]
pub fn main_reinsert(freq: u8) -> Option<u8> {
    (freq >= 1).then(|| freq.min(MAX_FREQ) - 1)
}

/// Whether the small queue's oldest object, hit `freq` times, moves to the main queue
/// (else it is dropped and its key remembered in the ghost).
#[inline]
pub fn moves_to_main(cfg: &S3FifoConfig, freq: u8) -> bool {
    freq >= cfg.move_threshold
}

/// The code, kept beside an object's queue-entry time, of the last hit since it entered
/// its queue `since_entered` accesses before (0: none): 1 + floor(log2), at most 31, so
/// five spare bits of the store's 32-bit S3-FIFO word hold it (augur-store `s3fifo.rs`).
///
/// Why: S3-FIFO orders its queues by entry time, but a cache that switches to K-LRU or
/// LHD (`maxmemory-policy auto`, [`crate::switching`]) must hand over each object's
/// *last access*: read as idle since it entered its queue, a hot main-queue object,
/// hit a moment ago but entered long before, looks like the coldest in the cache and is
/// the first K-LRU evicts. On the shared traces that price of a switch was 0.002-0.003
/// of miss ratio (arc_p3 and scarab-recs at 50 % of the working set, BENCHMARKS.md
/// "S3-FIFO hands its recency over"); the coarse code removes it.
#[inline]
pub fn hit_recency_code(since_entered: u64) -> u8 {
    if since_entered == 0 {
        0
    } else {
        (64 - since_entered.leading_zeros()).min(31) as u8
    }
}

/// The accesses after its queue entry that an object's [`hit_recency_code`] vouches
/// for: the power of two at or below the true gap, so the idle time read from it is
/// never shorter than the true one (an object never looks hotter than it is).
#[inline]
pub fn hit_recency_credit(code: u8) -> u64 {
    if code == 0 {
        0
    } else {
        1 << (code - 1)
    }
}

const SMALL: usize = 0;
const MAIN: usize = 1;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    cost: u64,
    /// When the object entered its current queue (the cache's insertion counter:
    /// unique, so it orders the queue).
    inserted: u64,
    /// The same moment on the access clock (for a cache that switches policy).
    entered_at: u64,
    freq: u8,
    /// The last hit since it entered the queue ([`hit_recency_code`]).
    hit_code: u8,
}

/// One queue: a dense slot array (for sampling and swap-removal) and, for the exact
/// FIFO, the insertion order as (key, insertion stamp) records checked lazily.
#[derive(Debug, Clone, Default)]
struct Queue {
    slots: Vec<Slot>,
    order: VecDeque<(u64, u64)>,
    used: u64,
}

/// An S3-FIFO cache simulator (see the module docs).
pub struct S3FifoCache {
    cfg: S3FifoConfig,
    unit: Unit,
    capacity: u64,
    queues: [Queue; 2],
    /// key -> (queue, position in that queue's slots).
    index: KeyMap<(u8, u32)>,
    /// The ghost FIFO: (key, cost, stamp) records; a key is in the ghost while
    /// `ghost_stamp` holds the stamp of its latest record.
    ghost: VecDeque<(u64, u64, u64)>,
    ghost_stamp: KeyMap<u64>,
    ghost_used: u64,
    stamp: u64,
    /// Accesses so far.
    now: u64,
    /// Whether anything was evicted yet: until then, once the small queue is full, new
    /// objects go straight to the main queue (libCacheSim's S3FIFO.c does the same: the
    /// first fill does not all pass through probation).
    has_evicted: bool,
    rng: SmallRng,
}

impl S3FifoCache {
    pub fn new(cfg: S3FifoConfig, capacity: u64, unit: Unit, seed: u64) -> S3FifoCache {
        S3FifoCache {
            cfg,
            unit,
            capacity,
            queues: [Queue::default(), Queue::default()],
            index: KeyMap::default(),
            ghost: VecDeque::new(),
            ghost_stamp: KeyMap::default(),
            ghost_used: 0,
            stamp: 0,
            now: 0,
            has_evicted: false,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Every cached entry as (key, cost in the cache's unit, accesses since it was last
    /// touched), for a cache that switches policy (`crate::switching`): since it entered
    /// its queue, less what its [`hit_recency_code`] vouches for, as the store reads it.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.queues.iter().flat_map(|q| &q.slots).map(|s| {
            let age = self.now.saturating_sub(s.entered_at);
            (
                s.key,
                s.cost,
                age.saturating_sub(hit_recency_credit(s.hit_code)),
            )
        })
    }

    /// The access clock: requests seen so far.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The access clock (set before [`S3FifoCache::insert_aged`]: the clock of the
    /// cache the contents come from).
    pub fn set_now(&mut self, now: u64) {
        self.now = now;
    }

    /// Moves in another cache's contents as (key, cost, age in accesses), without
    /// evicting: each a main-queue object never hit, entered `age` accesses ago, in
    /// FIFO order oldest first (as the store reads an entry last touched under
    /// another policy).
    pub fn insert_aged(&mut self, entries: impl IntoIterator<Item = (u64, u64, u64)>) {
        let mut all: Vec<(u64, u64, u64)> = entries
            .into_iter()
            .filter(|(k, _, _)| !self.index.contains_key(k))
            .collect();
        all.sort_by_key(|&(_, _, age)| std::cmp::Reverse(age));
        let now = self.now;
        for (key, cost, age) in all {
            self.now = now.saturating_sub(age);
            self.push(MAIN, key, cost, 0);
        }
        self.now = now;
        self.has_evicted = true;
    }

    /// Samples per pick from queue `q` (0: its exact FIFO).
    fn samples(&self, q: usize) -> usize {
        if q == SMALL {
            self.cfg.small_samples
        } else {
            self.cfg.main_samples
        }
    }

    fn small_capacity(&self) -> u64 {
        (self.capacity as f64 * self.cfg.small_ratio) as u64
    }

    fn push(&mut self, q: usize, key: u64, cost: u64, freq: u8) {
        self.stamp += 1;
        let exact = self.samples(q) == 0;
        let queue = &mut self.queues[q];
        let i = u32::try_from(queue.slots.len()).expect("at most u32::MAX entries");
        queue.slots.push(Slot {
            key,
            cost,
            inserted: self.stamp,
            entered_at: self.now,
            freq,
            hit_code: 0,
        });
        if exact {
            queue.order.push_back((key, self.stamp));
        }
        queue.used += cost;
        self.index.insert(key, (q as u8, i));
    }

    fn take(&mut self, q: usize, i: usize) -> Slot {
        let queue = &mut self.queues[q];
        let s = queue.slots.swap_remove(i);
        queue.used -= s.cost;
        self.index.remove(&s.key);
        if let Some(moved) = queue.slots.get(i) {
            if let Some(e) = self.index.get_mut(&moved.key) {
                e.1 = i as u32;
            }
        }
        s
    }

    /// Position of the queue's "oldest" object: the FIFO head, or the oldest-inserted
    /// of `k` samples.
    fn oldest(&mut self, q: usize) -> usize {
        let k = self.samples(q);
        let queue = &mut self.queues[q];
        if k == 0 {
            loop {
                let (key, stamp) = queue.order.pop_front().expect("a non-empty queue");
                if let Some(&(qq, i)) = self.index.get(&key) {
                    if qq as usize == q && queue.slots[i as usize].inserted == stamp {
                        return i as usize;
                    }
                }
            }
        }
        let n = queue.slots.len();
        let mut best = self.rng.gen_range(0..n);
        for _ in 1..k {
            let i = self.rng.gen_range(0..n);
            if queue.slots[i].inserted < queue.slots[best].inserted {
                best = i;
            }
        }
        best
    }

    /// Adds `key` to the ghost. A key already there keeps its place (the ghost is a
    /// FIFO, not an LRU: being dropped again does not make it younger).
    fn remember(&mut self, key: u64, cost: u64) {
        if self.ghost_stamp.contains_key(&key) {
            return;
        }
        self.stamp += 1;
        self.ghost.push_back((key, cost, self.stamp));
        self.ghost_stamp.insert(key, self.stamp);
        self.ghost_used += cost;
        let limit = (self.capacity as f64 * self.cfg.ghost_ratio) as u64;
        while self.ghost_used > limit {
            let Some((k, c, stamp)) = self.ghost.pop_front() else {
                break;
            };
            self.ghost_used -= c;
            if self.ghost_stamp.get(&k) == Some(&stamp) {
                self.ghost_stamp.remove(&k);
            }
        }
    }

    /// Evicts one object (moving or reinserting others on the way).
    fn evict_one(&mut self) {
        self.has_evicted = true;
        let main_share = self.capacity - self.small_capacity();
        if self.queues[MAIN].used > main_share || self.queues[SMALL].slots.is_empty() {
            loop {
                let i = self.oldest(MAIN);
                let s = self.take(MAIN, i);
                match main_reinsert(s.freq) {
                    Some(freq) => self.push(MAIN, s.key, s.cost, freq),
                    None => return,
                }
            }
        }
        loop {
            let i = self.oldest(SMALL);
            let s = self.take(SMALL, i);
            if moves_to_main(&self.cfg, s.freq) {
                self.push(MAIN, s.key, s.cost, 0);
                if self.queues[SMALL].slots.is_empty() {
                    // Everything moved: the eviction has to come from the main queue.
                    return self.evict_one();
                }
            } else {
                self.remember(s.key, s.cost);
                return;
            }
        }
    }
}

impl CacheSim for S3FifoCache {
    fn access(&mut self, key: u64, size: u32) -> bool {
        self.now += 1;
        if let Some(&(q, i)) = self.index.get(&key) {
            let s = &mut self.queues[q as usize].slots[i as usize];
            s.freq = hit_freq(s.freq);
            s.hit_code = hit_recency_code(self.now - s.entered_at);
            return true;
        }
        let cost = self.unit.cost(size);
        if cost > self.capacity {
            return false;
        }
        let ghost_hit = self.ghost_stamp.remove(&key).is_some();
        while self.used() + cost > self.capacity {
            self.evict_one();
        }
        let small_full = self.queues[SMALL].used >= self.small_capacity();
        let q = if ghost_hit || (!self.has_evicted && small_full) {
            MAIN
        } else {
            SMALL
        };
        self.push(q, key, cost, 0);
        false
    }

    fn remove(&mut self, key: u64) {
        if let Some(&(q, i)) = self.index.get(&key) {
            self.take(q as usize, i as usize);
        }
    }

    fn len(&self) -> usize {
        self.index.len()
    }

    fn used(&self) -> u64 {
        self.queues[SMALL].used + self.queues[MAIN].used
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn set_capacity(&mut self, capacity: u64) -> bool {
        self.capacity = capacity;
        while self.used() > capacity {
            self.evict_one();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::{ListCache, ListOrder};

    fn configs() -> [S3FifoConfig; 2] {
        [S3FifoConfig::default(), S3FifoConfig::sampled(8)]
    }

    #[test]
    fn never_exceeds_capacity_and_counts_its_contents() {
        for cfg in configs() {
            let mut c = S3FifoCache::new(cfg, 5_000, Unit::Bytes, 7);
            let mut rng = SmallRng::seed_from_u64(3);
            for _ in 0..50_000 {
                let key = rng.gen_range(0..400u64);
                c.access(key, 1 + (key % 97) as u32);
                assert!(c.used() <= 5_000);
                if rng.gen_range(0..50) == 0 {
                    c.remove(rng.gen_range(0..400));
                }
            }
            let listed: u64 = c.queues.iter().flat_map(|q| &q.slots).map(|s| s.cost).sum();
            assert_eq!(listed, c.used());
            assert_eq!(
                c.len(),
                c.queues.iter().map(|q| q.slots.len()).sum::<usize>()
            );
            for (q, queue) in c.queues.iter().enumerate() {
                for (i, s) in queue.slots.iter().enumerate() {
                    assert_eq!(c.index[&s.key], (q as u8, i as u32));
                }
            }
            assert!(c.ghost_used <= (5_000.0 * cfg.ghost_ratio) as u64);
        }
    }

    /// S3-FIFO's point: objects seen once leave through the small queue, so a hot set hit
    /// between scans survives scans bigger than the cache, where LRU loses it each time.
    #[test]
    fn a_hot_set_survives_one_hit_scans_that_flush_lru() {
        for cfg in configs() {
            let mut s3 = S3FifoCache::new(cfg, 1_000, Unit::Objects, 1);
            let mut lru = ListCache::new(ListOrder::Lru, 1_000, Unit::Objects);
            let (mut s3_hits, mut lru_hits, mut next_scan_key) = (0, 0, 1_000_000u64);
            for round in 0..20 {
                for _ in 0..3 {
                    for hot in 0..500u64 {
                        s3_hits += u32::from(s3.access(hot, 1));
                        lru_hits += u32::from(lru.access(hot, 1));
                    }
                }
                for _ in 0..2_000 {
                    s3.access(next_scan_key, 1);
                    lru.access(next_scan_key, 1);
                    next_scan_key += 1;
                }
                if round == 0 {
                    (s3_hits, lru_hits) = (0, 0);
                }
            }
            // 19 measured rounds of 1,500 hot references: S3-FIFO misses only the first
            // pass after each scan for the few hot keys still in probation; LRU misses
            // every first pass entirely.
            assert!(s3_hits > 19 * 1_400, "{cfg:?}: {s3_hits}");
            assert!(lru_hits <= 19 * 1_000, "{lru_hits}");
        }
    }

    /// The idle time a switch hands over is the time since the last hit, never shorter
    /// than the truth and within a factor of two of the gap since queue entry: a hot
    /// object entered long ago no longer reads as the coldest.
    #[test]
    fn entries_report_idle_since_the_last_hit() {
        assert_eq!(hit_recency_code(0), 0);
        for gap in [1u64, 2, 3, 7, 8, 1000, (1 << 24) - 1, (1 << 31) - 1] {
            let credit = hit_recency_credit(hit_recency_code(gap));
            assert!(credit <= gap && credit > gap / 2, "{gap}: {credit}");
        }
        // Past 2^31 (beyond the store's 24-bit clock) the credit stops growing.
        for gap in [1u64 << 31, 1 << 40, u64::MAX] {
            assert_eq!(hit_recency_code(gap), 31);
            assert_eq!(hit_recency_credit(31), 1 << 30);
        }
        let mut c = S3FifoCache::new(S3FifoConfig::default(), 100, Unit::Objects, 1);
        c.access(1, 1);
        c.access(2, 1);
        for key in 100..1100u64 {
            c.access(key % 50 + 100, 1);
        }
        c.access(1, 1); // 1 002 accesses after key 1 entered its queue
        c.access(3, 1);
        let idle = |k: u64| c.entries().find(|e| e.0 == k).unwrap().2;
        // Key 1: in its queue for 1 003 accesses, hit 1 002 after entering; 512 of them
        // are credited (the true idle time is 1).
        assert_eq!(idle(1), 1_003 - 512);
        assert_eq!(idle(2), 1_002, "never hit: idle since it entered");
        assert_eq!(idle(3), 0);
        assert!(idle(1) < idle(2));
    }

    #[test]
    fn a_key_back_from_the_ghost_goes_to_the_main_queue() {
        let mut c = S3FifoCache::new(S3FifoConfig::default(), 10, Unit::Objects, 1);
        for key in 0..10 {
            c.access(key, 1);
        }
        // Full; key 10 evicts the small queue's only object (key 0, never hit) to the ghost.
        c.access(10, 1);
        assert_eq!(c.index.get(&0), None);
        assert!(c.ghost_stamp.contains_key(&0));
        c.access(0, 1);
        assert_eq!(c.index[&0].0 as usize, MAIN);
        assert!(!c.ghost_stamp.contains_key(&0));
    }

    #[test]
    fn contents_move_in_oldest_first_and_capacity_shrinks_by_eviction() {
        for cfg in configs() {
            let mut c = S3FifoCache::new(cfg, 100, Unit::Objects, 1);
            c.set_now(1_000);
            c.insert_aged((0..100u64).map(|k| (k, 1, k * 3)));
            assert_eq!(c.len(), 100);
            let ages: Vec<u64> = (0..100)
                .map(|k| c.entries().find(|e| e.0 == k).unwrap().2)
                .collect();
            assert_eq!(ages, (0..100).map(|k| k * 3).collect::<Vec<_>>());
            // Exact FIFO evicts the oldest first: keys 99, 98, ... (the largest ages).
            assert!(c.set_capacity(90));
            assert_eq!(c.len(), 90);
            if cfg.main_samples == 0 {
                assert!((90..100).all(|k| !c.index.contains_key(&k)));
            }
        }
    }

    #[test]
    fn equal_seeds_give_equal_runs() {
        let run = |seed| {
            let mut c = S3FifoCache::new(S3FifoConfig::sampled(4), 300, Unit::Objects, seed);
            let mut rng = SmallRng::seed_from_u64(9);
            (0..20_000)
                .filter(|_| c.access(rng.gen_range(0..1_000u64), 1))
                .count()
        };
        assert_eq!(run(5), run(5));
    }
}
