//! Sampling-based eviction simulators: Redis's pooled approximated LRU, the KRR paper's
//! plain K-LRU and random eviction, all through the shared code in [`crate::policy`].
//!
//! # Uniform O(1) sampling
//!
//! Entries live in a dense array (`slots`, no holes) beside a hash index
//! key -> slot. A sample is `slots[i]` for `i` drawn uniformly from `0..len` (rand's
//! `gen_range` is unbiased), so every cached entry has probability exactly `1/len`,
//! independently of keys, hashes, insertion order or history. Deletion keeps the array
//! dense by moving the last slot into the hole (swap-remove) and fixing that one index
//! entry, O(1). This is what the KRR model (§2.2, Eq. 1) assumes and what Redis only
//! approximates: Redis's `dictGetSomeKeys` walks consecutive hash buckets from a random
//! start, so keys in long chains or after empty runs are over- or under-sampled.
//! Samples are drawn with replacement (a round of K may see a key twice); for the cache
//! sizes of interest (thousands of entries and more) this is indistinguishable from
//! Redis's distinct-key rounds.
//!
//! # Logical time
//!
//! The clock advances by one per request (hit or miss); an entry's score is its idle
//! time `now - last_access`, in requests, as DESIGN.md prescribes and as the KRR and
//! DLRU papers define recency.

use crate::key_index::KeyMap;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::policy::{
    select_victim_fresh, select_victim_pooled, select_victim_random, Candidates, EvictionPool,
};
use crate::spec::Unit;
use crate::CacheSim;

/// How a [`SampledCache`] picks its victim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// Redis `allkeys-lru`: each round offers `k` samples to the 16-entry eviction pool
    /// and evicts the pool's best surviving candidate ([`select_victim_pooled`]).
    Pooled { k: usize },
    /// The KRR paper's K-LRU (Eq. 1): the oldest of `k` fresh samples
    /// ([`select_victim_fresh`]). With `k` = 1 it is random eviction.
    Fresh { k: usize },
    /// Redis `allkeys-random`: one uniform sample ([`select_victim_random`]).
    Random,
    /// Redis `allkeys-lfu`: as [`Sampling::Pooled`], ranked by 255 less each entry's
    /// logarithmic access counter ([`crate::lfu`]), at `lfu-log-factor` 10 without
    /// decay unless [`CacheSim::set_lfu_clock`] gives a tuning and a wall clock: a
    /// trace's requests carry none, so offline this is the server's LFU with
    /// `lfu-decay-time 0`; a live server's miniatures (DLRU under `allkeys-lfu`) are
    /// given its tuning and clock.
    PooledLfu { k: usize },
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    /// Logical time of the last access.
    last: u64,
    size: u32,
    /// The LFU counter (only [`Sampling::PooledLfu`] reads it; it fits the padding).
    counter: u8,
    /// The minute of the last access, 16 bits as Redis keeps it (`LFUGetTimeInMinutes`).
    minute: u16,
}

/// The cached entries as a [`Candidates`] population (split from the cache so the
/// pool and the generator can be borrowed beside it).
#[derive(Debug, Clone, Default)]
struct Population {
    slots: Vec<Slot>,
    index: KeyMap<u32>,
    now: u64,
    /// Scores are LFU's (255 - counter), not idle times.
    lfu: bool,
    /// LFU's `lfu-decay-time` in minutes (0: counters never decay).
    decay_minutes: u32,
    /// The wall clock's minute, 16 bits.
    minute: u16,
}

impl Candidates for Population {
    type Id = u64;

    fn population(&self) -> usize {
        self.slots.len()
    }

    fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(u64, u64)> {
        if self.slots.is_empty() {
            return None;
        }
        let s = self.slots[rng.gen_range(0..self.slots.len())];
        let score = if self.lfu {
            crate::lfu::eviction_score(self.decayed(&s))
        } else {
            self.now - s.last
        };
        Some((s.key, score))
    }

    fn contains(&self, id: &u64) -> bool {
        self.index.contains_key(id)
    }
}

impl Population {
    /// `s`'s LFU counter decayed by its idle minutes (Redis's `LFUDecrAndReturn`).
    fn decayed(&self, s: &Slot) -> u8 {
        if self.decay_minutes == 0 {
            return s.counter;
        }
        let idle = crate::lfu::minutes_elapsed(self.minute, s.minute);
        crate::lfu::decayed(s.counter, idle / u64::from(self.decay_minutes))
    }

    /// Swap-removes `key`'s slot; returns its size.
    fn remove(&mut self, key: u64) -> Option<u32> {
        let i = self.index.remove(&key)? as usize;
        let gone = self.slots.swap_remove(i);
        if let Some(moved) = self.slots.get(i) {
            *self
                .index
                .get_mut(&moved.key)
                .expect("moved slot is indexed") = i as u32;
        }
        Some(gone.size)
    }
}

/// A cache simulator whose victims are chosen by sampling (see [`Sampling`]).
///
/// Capacity is counted in [`Unit`]s. On a miss, victims are evicted one at a time until
/// the new object fits (Redis's `performEvictions` loop, run before the insert instead
/// of after it so the cache never exceeds its capacity); an object whose own cost
/// exceeds the whole capacity is not cached and evicts nothing. A hit refreshes the
/// access time but not the stored size (a GET does not rewrite the value). In byte mode
/// a zero-byte object costs nothing and is always admitted.
#[derive(Debug, Clone)]
pub struct SampledCache {
    sampling: Sampling,
    unit: Unit,
    capacity: u64,
    used: u64,
    pop: Population,
    pool: EvictionPool<u64>,
    rng: SmallRng,
    /// LFU's increments' coin flips (a stream apart from the sampling's, so that LFU and
    /// LRU at the same seed sample alike).
    flips: crate::lfu::CoinFlips,
    /// LFU's `lfu-log-factor`.
    log_factor: u32,
}

impl SampledCache {
    /// `seed` fixes the sampling sequence: equal seeds and inputs give equal results.
    pub fn new(sampling: Sampling, capacity: u64, unit: Unit, seed: u64) -> Self {
        Self {
            sampling,
            unit,
            capacity,
            used: 0,
            pop: Population {
                lfu: matches!(sampling, Sampling::PooledLfu { .. }),
                ..Population::default()
            },
            pool: EvictionPool::new(),
            rng: SmallRng::seed_from_u64(seed),
            flips: crate::lfu::CoinFlips::new(seed ^ 0x9E37_79B9_7F4A_7C15),
            log_factor: crate::lfu::DEFAULT_LOG_FACTOR,
        }
    }

    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Whether `key` is cached (does not count as an access).
    pub fn contains(&self, key: u64) -> bool {
        self.pop.index.contains_key(&key)
    }

    /// The logical clock: number of requests seen so far.
    pub fn now(&self) -> u64 {
        self.pop.now
    }

    /// Idle time of `key` in requests, if cached.
    pub fn idle(&self, key: u64) -> Option<u64> {
        let i = *self.pop.index.get(&key)? as usize;
        Some(self.pop.now - self.pop.slots[i].last)
    }

    /// Changes how victims are chosen from now on (a live `maxmemory-samples` change);
    /// the contents and the eviction pool stay.
    pub fn set_sampling(&mut self, sampling: Sampling) {
        let lfu = matches!(sampling, Sampling::PooledLfu { .. });
        if lfu != self.pop.lfu {
            // Pooled scores of the other kind mean nothing now.
            self.pool.clear();
        }
        self.pop.lfu = lfu;
        self.sampling = sampling;
    }

    /// Every cached entry as (key, size, idle time in requests), for a cache that
    /// switches policy and moves its contents (`crate::switching`).
    pub fn entries(&self) -> impl Iterator<Item = (u64, u32, u64)> + '_ {
        self.pop
            .slots
            .iter()
            .map(|s| (s.key, s.size, self.pop.now - s.last))
    }

    /// Sets the logical clock (before [`SampledCache::insert_idle`]s: the clock of the
    /// cache the contents come from).
    pub fn set_now(&mut self, now: u64) {
        self.pop.now = now;
    }

    /// Inserts `key` as last accessed `idle` requests ago, without evicting: the caller
    /// moves in the contents of a cache of the same capacity. Not an access.
    pub fn insert_idle(&mut self, key: u64, size: u32, idle: u64) {
        if self.pop.index.contains_key(&key) {
            return;
        }
        let i = u32::try_from(self.pop.slots.len()).expect("at most u32::MAX entries");
        self.pop.slots.push(Slot {
            key,
            last: self.pop.now.saturating_sub(idle),
            size,
            counter: crate::lfu::LFU_INIT_VAL,
            minute: self.pop.minute,
        });
        self.pop.index.insert(key, i);
        self.used += self.unit.cost(size);
    }

    fn evict_one(&mut self) {
        let victim = match self.sampling {
            Sampling::Pooled { k } | Sampling::PooledLfu { k } => {
                select_victim_pooled(&mut self.pool, &mut self.pop, k, &mut self.rng)
            }
            Sampling::Fresh { k } => select_victim_fresh(&mut self.pop, k, &mut self.rng),
            Sampling::Random => select_victim_random(&mut self.pop, &mut self.rng),
        };
        let key = victim.expect("eviction from a non-empty cache finds a victim");
        let size = self.pop.remove(key).expect("victim is cached");
        self.used -= self.unit.cost(size);
    }
}

impl CacheSim for SampledCache {
    fn access(&mut self, key: u64, size: u32) -> bool {
        self.pop.now += 1;
        let now = self.pop.now;
        if let Some(&i) = self.pop.index.get(&key) {
            if self.pop.lfu {
                // Redis's updateLFU: decay, then the logarithmic increment.
                let decayed = self.pop.decayed(&self.pop.slots[i as usize]);
                let counter = crate::lfu::log_incr(decayed, self.log_factor, self.flips.next_f64());
                let slot = &mut self.pop.slots[i as usize];
                slot.counter = counter;
                slot.minute = self.pop.minute;
            }
            self.pop.slots[i as usize].last = now;
            return true;
        }
        let cost = self.unit.cost(size);
        if cost > self.capacity {
            return false;
        }
        while self.used + cost > self.capacity {
            self.evict_one();
        }
        let i = u32::try_from(self.pop.slots.len()).expect("at most u32::MAX entries");
        self.pop.slots.push(Slot {
            key,
            last: now,
            size,
            counter: crate::lfu::LFU_INIT_VAL,
            minute: self.pop.minute,
        });
        self.pop.index.insert(key, i);
        self.used += cost;
        false
    }

    fn remove(&mut self, key: u64) {
        // A pooled reference to `key` may stay behind: the pool skips candidates that
        // no longer exist, as Redis does.
        if let Some(size) = self.pop.remove(key) {
            self.used -= self.unit.cost(size);
        }
    }

    fn len(&self) -> usize {
        self.pop.slots.len()
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Shrinking evicts with the cache's own sampling until the contents fit (DLRU
    /// removes random overflow items; K-LRU's victims are the same random draw refined
    /// by idle time, so the miniature stays what the policy would hold).
    fn set_capacity(&mut self, capacity: u64) -> bool {
        self.capacity = capacity;
        while self.used > self.capacity && !self.pop.slots.is_empty() {
            self.evict_one();
        }
        true
    }

    fn set_lfu_clock(&mut self, clock: crate::lfu::LfuClock) {
        if self.pop.lfu && clock.decay_minutes != self.pop.decay_minutes {
            // The pool's scores were decayed the old way.
            self.pool.clear();
        }
        self.log_factor = clock.log_factor;
        self.pop.decay_minutes = clock.decay_minutes;
        // Redis's LFUGetTimeInMinutes: 16 bits.
        self.pop.minute = (clock.minutes & 0xFFFF) as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::{ListCache, ListOrder};
    use proptest::prelude::*;
    // Explicit, so it wins over the (older) `Rng` re-exported by proptest's prelude.
    use rand::Rng;

    /// 40 rounds of the `hot` keys read once each, then `scans` one-off keys; the hot
    /// keys' hits in the last 10 rounds.
    fn hot_among_scans(c: &mut SampledCache, hot: std::ops::Range<u64>, scans: usize) -> u32 {
        let (mut scan, mut hits) = (1u64 << 32, 0);
        for round in 0..40 {
            for h in hot.clone() {
                let hit = c.access(h, 1);
                if round >= 30 {
                    hits += hit as u32;
                }
            }
            for _ in 0..scans {
                c.access(scan, 1);
                scan += 1;
            }
            assert!(c.len() as u64 <= c.capacity());
        }
        hits
    }

    /// LFU's idle decay (`lfu-decay-time`): 300 keys read 40 times each at minute 0, then
    /// from minute 100 another 300 read once a round among one-off keys, in a cache of
    /// 500. Without decay the old set's high counters hold 300 of the 500 slots for ever
    /// and the new set fights the one-off keys for the rest; with a decay of one minute
    /// the old counters read 0 and the new set takes their room. The factor given is
    /// used: at factor 0 every hit counts, so the old set climbs higher.
    #[test]
    fn pooled_lfu_decays_idle_counters_by_the_wall_clock_it_is_given() {
        let run = |decay_minutes: u32| {
            let mut c = SampledCache::new(Sampling::PooledLfu { k: 5 }, 500, Unit::Objects, 9);
            let at = |minutes| crate::lfu::LfuClock {
                decay_minutes,
                minutes,
                ..Default::default()
            };
            c.set_lfu_clock(at(0));
            for _ in 0..40 {
                for old in 0..300u64 {
                    c.access(old, 1);
                }
            }
            c.set_lfu_clock(at(100));
            let hits = hot_among_scans(&mut c, 1000..1300, 300);
            let old_left = (0..300u64).filter(|&k| c.contains(k)).count();
            (hits, old_left)
        };
        let (kept_hits, kept_old) = run(0);
        let (decayed_hits, decayed_old) = run(1);
        assert!(kept_old > 250, "no decay: old set kept {kept_old}");
        assert!(decayed_old < 30, "decay: old set kept {decayed_old}");
        assert!(
            decayed_hits > kept_hits + 1000,
            "new set's hits: {decayed_hits} with decay, {kept_hits} without"
        );
        // Redis's 16-bit minutes wrap as `LFUTimeElapsed` does: from 65,530 to 65,540
        // (4 after the wrap) is 65535 - 65530 + 4 = 9 idle minutes (one short of 10).
        let mut c = SampledCache::new(Sampling::PooledLfu { k: 5 }, 10, Unit::Objects, 1);
        let at = |minutes| crate::lfu::LfuClock {
            log_factor: 0,
            decay_minutes: 1,
            minutes,
        };
        c.set_lfu_clock(at(65_530));
        for _ in 0..20 {
            c.access(7, 1);
        }
        let fresh = c.pop.slots[0];
        // Inserted at 5, then 19 hits.
        assert_eq!(fresh.counter, 24, "factor 0: every hit counts");
        c.set_lfu_clock(at(65_540));
        assert_eq!(c.pop.decayed(&fresh), 15);
    }

    /// Redis's LFU (the store's `allkeys-lfu`, `crate::lfu`): 200 hot keys read once a
    /// round among 2000 one-off keys, in a cache of 1000. LRU loses the hot keys (reuse
    /// distance 2200); one hit lifts a hot key's counter above the one-off keys' 5.
    #[test]
    fn pooled_lfu_keeps_a_hot_set_through_scans_where_lru_cannot() {
        let run = |sampling| {
            let mut c = SampledCache::new(sampling, 1000, Unit::Objects, 3);
            hot_among_scans(&mut c, 0..200, 2000)
        };
        let lru = run(Sampling::Pooled { k: 5 });
        let lfu = run(Sampling::PooledLfu { k: 5 });
        assert!(lru < 400, "LRU hits {lru}");
        assert!(lfu > 1600, "LFU hits {lfu} (LRU {lru})");
        // Switching from LFU to LRU drops the pool's LFU scores and keeps the contents.
        let mut c = SampledCache::new(Sampling::PooledLfu { k: 5 }, 100, Unit::Objects, 1);
        for key in 0..300 {
            c.access(key, 1);
        }
        c.set_sampling(Sampling::Pooled { k: 5 });
        assert_eq!(c.len(), 100);
        c.access(1000, 1);
        assert_eq!(c.len(), 100);
    }

    fn check_invariants(c: &SampledCache) {
        assert_eq!(c.pop.slots.len(), c.pop.index.len());
        for (i, s) in c.pop.slots.iter().enumerate() {
            assert_eq!(c.pop.index[&s.key] as usize, i);
        }
        let used: u64 = c.pop.slots.iter().map(|s| c.unit.cost(s.size)).sum();
        assert_eq!(used, c.used);
        assert!(c.used <= c.capacity);
    }

    /// A skewed request stream over `keys` keys: key = floor(keys * u^3).
    fn skewed(n: usize, keys: u64, seed: u64) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let u: f64 = rng.gen();
                ((keys as f64) * u * u * u) as u64
            })
            .collect()
    }

    #[test]
    fn set_capacity_shrinks_by_eviction_and_grows_in_place() {
        let mut c = SampledCache::new(Sampling::Pooled { k: 5 }, 100, Unit::Objects, 3);
        for key in 0..100u64 {
            assert!(!c.access(key, 10));
        }
        assert_eq!(c.len(), 100);
        assert!(c.set_capacity(40));
        assert_eq!(c.len(), 40);
        check_invariants(&c);
        assert!(c.set_capacity(60));
        for key in 1000..1020u64 {
            c.access(key, 10);
        }
        assert_eq!(c.len(), 60);
        check_invariants(&c);
    }

    #[test]
    fn plain_klru_with_every_entry_sampled_is_exact_lru() {
        // With 256 samples from at most 6 entries, missing the oldest has probability
        // (5/6)^256 < 1e-20 per eviction: the victim is the LRU entry every time.
        for cap in 1..=6u64 {
            let mut k = SampledCache::new(Sampling::Fresh { k: 256 }, cap, Unit::Objects, cap);
            let mut l = ListCache::new(ListOrder::Lru, cap, Unit::Objects);
            for (t, key) in skewed(20_000, 20, 7).into_iter().enumerate() {
                assert_eq!(k.access(key, 1), l.access(key, 1), "cap {cap} request {t}");
            }
            check_invariants(&k);
        }
    }

    #[test]
    fn pooled_klru_with_every_entry_sampled_is_close_to_lru() {
        // The pool keeps a candidate's idle time from when it was sampled, so a pooled
        // entry that is hit afterwards can still be evicted (Redis does the same):
        // unlike plain K-LRU it is not exactly LRU even when every entry is sampled,
        // but it evicts the true LRU entry almost always.
        let cap = 8;
        let mut k = SampledCache::new(Sampling::Pooled { k: 256 }, cap, Unit::Objects, 3);
        let mut l = ListCache::new(ListOrder::Lru, cap, Unit::Objects);
        let (mut same, mut kh, mut lh) = (0usize, 0usize, 0usize);
        let trace = skewed(50_000, 30, 11);
        for &key in &trace {
            let a = k.access(key, 1);
            let b = l.access(key, 1);
            same += usize::from(a == b);
            kh += usize::from(a);
            lh += usize::from(b);
        }
        check_invariants(&k);
        let n = trace.len() as f64;
        assert!(same as f64 / n > 0.97, "agreement {}", same as f64 / n);
        assert!(
            ((kh as f64 - lh as f64) / n).abs() < 0.01,
            "hits {kh} vs {lh}"
        );
    }

    #[test]
    fn plain_klru_eviction_probability_follows_eq_1() {
        // Cache of C entries inserted at times 1..=C, so the entry of rank d (1 = most
        // recent) is key C - d. Inserting one more evicts rank d with probability
        // (d^K - (d-1)^K) / C^K (KRR paper Eq. 1). With K = 1 this is uniform random
        // eviction, which also checks that the dense-array sampling is uniform after
        // swap-removes have shuffled it.
        let c = 8u64;
        let trials = 40_000u64;
        for (sampling, k) in [
            (Sampling::Fresh { k: 1 }, 1u32),
            (Sampling::Fresh { k: 3 }, 3),
            (Sampling::Random, 1),
        ] {
            let mut counts = vec![0u64; c as usize + 1];
            for seed in 0..trials {
                let mut s = SampledCache::new(sampling, c, Unit::Objects, seed);
                // Shuffle the slot array: insert extra keys and delete them again.
                for key in 100..104 {
                    s.access(key, 1);
                }
                for key in [101, 100, 103, 102] {
                    s.remove(key);
                }
                for key in 0..c {
                    s.access(key, 1);
                }
                s.access(999, 1);
                let victim = (0..c).find(|&key| !s.contains(key)).expect("one evicted");
                counts[(c - victim) as usize] += 1;
            }
            for d in 1..=c {
                let p = ((d as f64).powi(k as i32) - ((d - 1) as f64).powi(k as i32))
                    / (c as f64).powi(k as i32);
                let expect = p * trials as f64;
                let sigma = (trials as f64 * p * (1.0 - p)).sqrt();
                let got = counts[d as usize] as f64;
                assert!(
                    (got - expect).abs() <= 5.0 * sigma + 1.0,
                    "{sampling:?} rank {d}: {got} evictions, expected {expect:.0} ± {sigma:.0}"
                );
            }
        }
    }

    #[test]
    fn random_beats_lru_on_a_loop_larger_than_the_cache() {
        // A cyclic scan over 2C keys: LRU and FIFO always evict the key needed soonest
        // and never hit; random eviction keeps a random subset and hits often.
        let cap = 100u64;
        let mut r = SampledCache::new(Sampling::Random, cap, Unit::Objects, 5);
        let mut l = ListCache::new(ListOrder::Lru, cap, Unit::Objects);
        let mut f = ListCache::new(ListOrder::Fifo, cap, Unit::Objects);
        let (mut rh, mut lh, mut fh) = (0, 0, 0);
        for i in 0..100_000u64 {
            let key = i % (2 * cap);
            rh += u64::from(r.access(key, 1));
            lh += u64::from(l.access(key, 1));
            fh += u64::from(f.access(key, 1));
        }
        assert_eq!((lh, fh), (0, 0));
        assert!(rh > 20_000, "random hits {rh}");
        check_invariants(&r);
    }

    #[test]
    fn same_seed_same_result_other_seed_other_result() {
        let trace = skewed(30_000, 2_000, 3);
        let run = |seed| {
            let mut s = SampledCache::new(Sampling::Pooled { k: 5 }, 300, Unit::Objects, seed);
            trace.iter().map(|&k| s.access(k, 1)).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Get(u64, u32),
        Del(u64),
    }

    proptest! {
        #[test]
        fn byte_mode_never_exceeds_capacity(
            cap in 0u64..500,
            which in 0usize..4,
            seed in any::<u64>(),
            ops in proptest::collection::vec(prop_oneof![
                8 => (0u64..40, 0u32..200).prop_map(|(k, s)| Op::Get(k, s)),
                1 => (0u64..40).prop_map(Op::Del),
            ], 0..300),
        ) {
            let sampling = [
                Sampling::Pooled { k: 5 },
                Sampling::Fresh { k: 5 },
                Sampling::Fresh { k: 1 },
                Sampling::Random,
            ][which];
            let mut c = SampledCache::new(sampling, cap, Unit::Bytes, seed);
            for op in ops {
                match op {
                    Op::Get(k, s) => {
                        let cached = c.contains(k);
                        prop_assert_eq!(c.access(k, s), cached);
                        // After a miss the object is cached iff it fits at all.
                        prop_assert_eq!(c.contains(k), cached || u64::from(s) <= cap);
                        prop_assert_eq!(c.idle(k), c.contains(k).then_some(0));
                    }
                    Op::Del(k) => {
                        c.remove(k);
                        prop_assert!(!c.contains(k));
                    }
                }
                check_invariants(&c);
            }
        }
    }
}
