//! S3-FIFO eviction in the store (`maxmemory-policy allkeys-s3fifo` / `volatile-s3fifo`;
//! Yang et al., "FIFO queues are all you need for cache eviction", SOSP'23): the glue
//! between shards' entries and the rules in [`augur_sim::s3fifo`], which
//! `augur sim --policy s3fifo:K` runs with the same sampled queues.
//!
//! # Queues without queues
//!
//! S3-FIFO keeps a small probationary FIFO (10 % of the cache), a main FIFO with 2-bit
//! reinsertion and a ghost FIFO of keys dropped from probation. A store that evicts by
//! sampling its hash table has no FIFO to pop, so, as Redis's approximated LRU stands in
//! for the LRU tail with the oldest of K samples:
//! - an entry's queue, hit count and the time it entered its queue live in its 32-bit
//!   `atime` word (24 clock bits, 2 count bits, the small-queue bit; entry.rs:
//!   `S3_FORMAT`), so memory per key is the same as under LRU; the 5 bits left hold
//!   when it was last hit since it entered, to a factor of two
//!   (`augur_sim::s3fifo::hit_recency_code`), for the switch below;
//! - the main queue's "oldest" is the oldest-entered of K uniform draws that are in it
//!   (K = `maxmemory-samples`), the small queue's is one uniform draw that is in it
//!   (`augur_sim::s3fifo`'s module docs measure both choices against exact queues);
//! - which queue gives is decided by the small queue's share of the part's entries
//!   against S3-FIFO's 10 %, from an exact count of the entries whose small bit is set
//!   ([`SmallQueueCount`], kept by the part wherever an entry enters or leaves the
//!   queue). Until 2026-12-02 the share was estimated from the eviction draws (an EWMA
//!   of each round's first draw, weight 1/64), so that no counter had to follow every
//!   write, delete, rename and expiry; its noise (+-0.03 around 0.10 in a part) cost up
//!   to 0.4 point of miss ratio against the simulator's exact queues on cloudphysics;
//! - the ghost is a table of 16-bit key fingerprints with coarse insertion stamps in
//!   buckets of 8, each key in the emptier (else the older) of two buckets, remembering
//!   about as many keys as 90 % of the part's entries: 4 bytes a remembered key, ~3.6
//!   bytes per cached key, charged to the tenant like its index, from the part's first
//!   write (it grows with the part while it remembers nothing). A full ghost remembers
//!   ~94 % of the keys an exact FIFO would (one bucket a key: ~87 %; each key it forgets
//!   early comes back to probation instead of the main queue). An eviction writes its
//!   victim's fingerprint one small-queue eviction later, its two bucket lines
//!   prefetched meanwhile (`Ghost::add_soon`), so the eviction does not wait for them
//!   (suspected, not shown, of S3-FIFO's -P 16 SET cost: BENCHMARKS.md, "S3-FIFO's
//!   ghost write deferred one eviction").
//!
//! Under `volatile-s3fifo` the draws come from the TTL list but the share is the whole
//! part's: the queues are the cache's, the policy only limits which entries may go.
//!
//! A draw that finds nothing of the wanted queue falls back to the other; a run of
//! reinsertions and moves is bounded ([`MAX_ROUNDS`]), after which the last candidate
//! is evicted whatever its count, so an eviction's cost is bounded.
//!
//! # Switching policies live
//!
//! An entry last touched under LRU or LHD reads as a main-queue entry that entered the
//! queue when it was last touched, never hit since; LRU and LHD read an S3-FIFO entry's
//! last access as the time it entered its queue plus what its hit code vouches for
//! (`Entry::idle`): without the code, a hot main-queue entry that entered long ago read
//! as the coldest in the cache, and K-LRU evicted it first after the switch. No key is
//! rewritten at a switch.

use crate::entry::{clock24_age, Entry, LHD_CLOCK_MASK, S3_HIT_CODE_SHIFT};
use augur_sim::s3fifo::{hit_freq, hit_recency_code, main_reinsert, moves_to_main, S3FifoConfig};

/// Rounds of moves and reinsertions one eviction may make before it evicts its last
/// candidate anyway.
pub const MAX_ROUNDS: usize = 64;
/// Uniform draws one look for a small-queue entry may make.
const SMALL_DRAWS: usize = 32;

const FREQ_SHIFT: u32 = 24;
const SMALL_BIT: u32 = 1 << 26;
const HIT_CODE_MASK: u32 = 31;

fn word(clock: u64, freq: u8, small: bool) -> u32 {
    (clock as u32 & LHD_CLOCK_MASK)
        | (u32::from(freq) << FREQ_SHIFT)
        | if small { SMALL_BIT } else { 0 }
}

/// (hit count, in the small queue) of an entry in any format: one last touched under
/// another policy is a main-queue entry never hit.
#[inline]
pub(crate) fn state(e: Entry) -> (u8, bool) {
    match e.s3() {
        Some(w) => (((w >> FREQ_SHIFT) & 3) as u8, w & SMALL_BIT != 0),
        None => (0, false),
    }
}

/// One tenant's S3-FIFO state summed over the shards, for INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3FifoStats {
    /// Shards where the tenant has S3-FIFO state.
    pub shards: u64,
    /// Entries moved from the small queue to the main queue.
    pub moved_to_main: u64,
    /// Main-queue entries given another round for their hits.
    pub reinserted: u64,
    /// Evictions from the small queue (their keys go to the ghost).
    pub small_evictions: u64,
    /// Evictions from the main queue.
    pub main_evictions: u64,
    /// Inserts admitted straight to the main queue because the ghost remembered the key.
    pub ghost_hits: u64,
    /// The small queue's share of the entries (counted, not estimated), in thousandths
    /// (the mean over the shards).
    pub small_share_permille: u64,
    /// Heap bytes of the ghosts.
    pub ghost_bytes: u64,
}

impl S3FifoStats {
    /// Adds one shard's state (`shards` counts it; the small-queue shares add up, for
    /// the caller to divide by `shards`).
    pub(crate) fn add(&mut self, x: &S3FifoStats) {
        self.shards += 1;
        self.moved_to_main += x.moved_to_main;
        self.reinserted += x.reinserted;
        self.small_evictions += x.small_evictions;
        self.main_evictions += x.main_evictions;
        self.ghost_hits += x.ghost_hits;
        self.small_share_permille += x.small_share_permille;
        self.ghost_bytes += x.ghost_bytes;
    }
}

/// Fingerprints of keys recently dropped from the small queue (see the module docs).
struct Ghost {
    /// Buckets of [`BUCKET`] slots: `fingerprint << 16 | stamp`, 0 when empty.
    slots: Vec<u32>,
    /// Keys it should remember (the FIFO's length).
    capacity: u64,
    /// Keys added so far.
    added: u64,
    /// Stamps count units of `2^shift` additions, so that `capacity` spans < 2^15 units.
    shift: u32,
    /// The hash of the last key given to [`Ghost::add_soon`], written at the next one:
    /// its two bucket lines were prefetched when it came, so that the eviction that
    /// forgets it does not wait for them (they were most of S3-FIFO's cost over LRU).
    pending: Option<u64>,
}

const BUCKET: usize = 8;

impl Ghost {
    fn new() -> Ghost {
        Ghost {
            slots: Vec::new(),
            capacity: 0,
            added: 0,
            shift: 0,
            pending: None,
        }
    }

    fn bytes(&self) -> u64 {
        self.slots.capacity() as u64 * 4
    }

    /// Remembers about `capacity` keys from now on; a change of more than a quarter
    /// rebuilds the table empty (fingerprints cannot be rehashed).
    fn resize(&mut self, capacity: u64) {
        let (lo, hi) = (
            self.capacity - self.capacity / 4,
            self.capacity + self.capacity / 4,
        );
        if !self.slots.is_empty() && capacity >= lo && capacity <= hi {
            return;
        }
        self.rebuild(capacity);
    }

    /// An empty table for `capacity` keys.
    fn rebuild(&mut self, capacity: u64) {
        let buckets = (capacity as usize).div_ceil(BUCKET).max(1);
        self.slots = vec![0; buckets * BUCKET];
        self.capacity = capacity;
        self.shift = 0;
        while capacity >> self.shift >= 1 << 15 {
            self.shift += 1;
        }
    }

    /// Grows the table toward `capacity` keys while it remembers none (a part filling
    /// up before its first eviction): an empty table loses nothing by being rebuilt, and
    /// its bytes are then charged a little at a time as the part grows, instead of all
    /// at its first eviction (see [`PartS3::admit`]). Steps of a tenth keep the
    /// rebuilds few (~7 per doubling of the part).
    fn grow_while_empty(&mut self, capacity: u64) {
        if self.added == 0 && capacity > self.capacity + self.capacity / 10 {
            self.rebuild(capacity);
        }
    }

    /// The first slots of the key's two buckets: the first from the hash's low 32 bits,
    /// the second from all 64 mixed (bits 40-45 name the shard, so they are the same for
    /// every key of a part and cannot choose a bucket; the fingerprint is bits 48-63).
    #[inline]
    fn bucket_starts(&self, h: u64) -> [usize; 2] {
        let buckets = (self.slots.len() / BUCKET) as u64;
        let first = ((h as u32) as u64 * buckets) >> 32;
        let mixed = (h ^ (h >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let second = ((mixed >> 32) * buckets) >> 32;
        [first as usize * BUCKET, second as usize * BUCKET]
    }

    /// The key's two buckets, as one chain of slots.
    fn buckets(&self, h: u64) -> impl Iterator<Item = usize> {
        let [a, b] = self.bucket_starts(h);
        (a..a + BUCKET).chain(b..b + BUCKET)
    }

    fn fingerprint(h: u64) -> u32 {
        ((h >> 48) as u32).max(1)
    }

    fn now(&self) -> u32 {
        ((self.added >> self.shift) & 0xFFFF) as u32
    }

    /// Additions since `slot` was written, in stamp units; None for an empty slot or
    /// one older than the FIFO's length.
    fn age(&self, slot: u32) -> Option<u32> {
        if slot == 0 {
            return None;
        }
        let age = self.now().wrapping_sub(slot & 0xFFFF) & 0xFFFF;
        (u64::from(age) <= self.capacity >> self.shift).then_some(age)
    }

    fn add(&mut self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        let fp = Self::fingerprint(h);
        let mut victim = usize::MAX;
        let mut victim_age = 0;
        for i in self.buckets(h) {
            let slot = self.slots[i];
            match self.age(slot) {
                // Already remembered: a FIFO keeps its place.
                Some(_) if slot >> 16 == fp => return,
                Some(age) if victim == usize::MAX || age > victim_age => {
                    (victim, victim_age) = (i, age)
                }
                Some(_) => {}
                None => {
                    (victim, victim_age) = (i, u32::MAX);
                }
            }
        }
        self.slots[victim] = fp << 16 | self.now();
        self.added += 1;
    }

    /// Remembers the key of hash `h` one call later: prefetches its buckets now and
    /// writes the previous call's key, whose lines have had an eviction's time to
    /// arrive. A [`Ghost::take`] in between finds the pending key all the same.
    fn add_soon(&mut self, h: u64) {
        if let Some(previous) = self.pending.replace(h) {
            self.add(previous);
        }
        self.prefetch(h);
    }

    /// Starts fetching the key's two buckets (see [`PartS3::prefetch_ghost`]).
    #[inline]
    fn prefetch(&self, h: u64) {
        if self.slots.is_empty() {
            return;
        }
        for start in self.bucket_starts(h) {
            crate::index::prefetch(self.slots[start..].as_ptr() as u64);
        }
    }

    /// Whether the key of hash `h` is remembered; forgets it if so.
    fn take(&mut self, h: u64) -> bool {
        if self.pending == Some(h) {
            self.pending = None;
            return true;
        }
        if self.slots.is_empty() {
            return false;
        }
        let fp = Self::fingerprint(h);
        for i in self.buckets(h) {
            let slot = self.slots[i];
            if slot >> 16 == fp && self.age(slot).is_some() {
                self.slots[i] = 0;
                return true;
            }
        }
        false
    }
}

/// Keys the ghost of a part of `part_len` entries remembers (S3-FIFO §4: about as many
/// as the main queue holds).
fn ghost_capacity(cfg: &S3FifoConfig, part_len: usize) -> u64 {
    (part_len as f64 * cfg.ghost_ratio).ceil() as u64
}

/// How many of a part's entries are in S3-FIFO's small queue (their word's small bit
/// set), kept exact by the part at each place an entry enters or leaves the queue: its
/// admission and its move to the main queue here, and in the part (`shard.rs`,
/// `shard/keyops.rs`) its unlinking (eviction, deletion, expiry, demotion), its detaching
/// and re-indexing (RENAME, MOVE, across shards too), and every rewrite of its word by
/// another policy (a hit or admission under LRU, LHD or LFU, RESTORE's IDLETIME or
/// FREQ). The store's invariant check (`check_invariants`, run by the store's tests)
/// compares it with a count of the entries' small bits. It lives in the part, not in
/// [`PartS3`], because entries keep their small bit while another policy runs and the
/// S3-FIFO state is dropped (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SmallQueueCount(usize);

impl SmallQueueCount {
    /// `e` leaves the part or has its word rewritten: counted out if it was in the
    /// small queue. Reads `e`'s word only while some entry is counted.
    #[inline]
    pub(crate) fn leaving(&mut self, e: Entry) {
        if self.0 > 0 && state(e).1 {
            self.0 -= 1;
        }
    }

    /// `e` arrives with its word (a renamed or moved entry keeps it) or was just given
    /// one: counted in if it is in the small queue.
    #[inline]
    pub(crate) fn arriving(&mut self, e: Entry) {
        if state(e).1 {
            self.0 += 1;
        }
    }

    /// The small queue's share of `part_len` entries.
    pub(crate) fn share(&self, part_len: usize) -> f64 {
        self.0 as f64 / part_len.max(1) as f64
    }

    /// Every entry left (the part was flushed).
    pub(crate) fn clear(&mut self) {
        self.0 = 0;
    }

    #[cfg(test)]
    pub(crate) fn get(&self) -> usize {
        self.0
    }
}

/// One part's S3-FIFO state.
pub(crate) struct PartS3 {
    cfg: S3FifoConfig,
    ghost: Ghost,
    /// Bytes admitted to the small queue before the first eviction (libCacheSim's
    /// warm-up rule: once probation is full, the first fill goes to the main queue).
    warm_small_bytes: u64,
    has_evicted: bool,
    stats: S3FifoStats,
}

impl PartS3 {
    pub(crate) fn new() -> Box<PartS3> {
        Box::new(PartS3 {
            cfg: S3FifoConfig::default(),
            ghost: Ghost::new(),
            warm_small_bytes: 0,
            has_evicted: false,
            stats: S3FifoStats::default(),
        })
    }

    /// `e` (index hash `h`) was just added at shard clock `clock`, to a part that now
    /// holds `part_len` entries and may hold `limit` bytes (0: no limit).
    ///
    /// Until the first eviction the ghost grows with the part, empty: its bytes (4 a
    /// remembered key, ~3.6 per cached key) are charged to the tenant like its index,
    /// and charged all at once at the first eviction they made the store evict ~2.6 %
    /// of its keys in one burst (the ghost of a 28 000-key part is ~100 KB, ~730 of its
    /// 140-byte keys), by the main queue's rule while the small queue's share was still
    /// unknown: on cloudphysics at 55 % of its working set that burst alone put the
    /// server 0.7-1.0 point of miss ratio above `augur sim --policy s3fifo:8` at the
    /// same final key count (BENCHMARKS.md, "S3-FIFO's fidelity on cloudphysics: the
    /// ghost's charge, its buckets and the small queue's count"); grown with the part,
    /// it moves the key count by nothing at that moment.
    ///
    /// Counts the entry in `small` if it enters the small queue.
    pub(crate) fn admit(
        &mut self,
        e: Entry,
        h: u64,
        clock: u64,
        part_len: usize,
        limit: u64,
        small: &mut SmallQueueCount,
    ) {
        if !self.has_evicted && limit > 0 {
            self.ghost
                .grow_while_empty(ghost_capacity(&self.cfg, part_len));
        }
        let main = if self.ghost.take(h) {
            self.stats.ghost_hits += 1;
            true
        } else if self.has_evicted {
            false
        } else {
            let full =
                limit > 0 && self.warm_small_bytes as f64 >= limit as f64 * self.cfg.small_ratio;
            if !full {
                self.warm_small_bytes += e.rank_size();
            }
            full
        };
        e.set_s3(word(clock, 0, !main));
        small.arriving(e);
    }

    /// Starts fetching the ghost buckets an admission of hash `h` reads: a write calls
    /// it before it evicts, so that the two lines (two buckets a key, where one bucket
    /// was one line) arrive while the eviction's own misses are served.
    #[inline]
    pub(crate) fn prefetch_ghost(&self, h: u64) {
        self.ghost.prefetch(h);
    }

    /// A hit (read or overwrite) of `e` at shard clock `clock`.
    #[inline]
    pub(crate) fn hit(&mut self, e: Entry, clock: u64) {
        match e.s3() {
            Some(w) => {
                let freq = hit_freq(((w >> FREQ_SHIFT) & 3) as u8);
                // `w` is the S3 word: its queue age is its 24 clock bits' distance.
                let code = hit_recency_code(u64::from(clock24_age(w, clock as u32)));
                e.set_s3(
                    (w & !(3 << FREQ_SHIFT) & !(HIT_CODE_MASK << S3_HIT_CODE_SHIFT))
                        | u32::from(freq) << FREQ_SHIFT
                        | u32::from(code) << S3_HIT_CODE_SHIFT,
                );
            }
            // Last touched under another policy: a main-queue entry since then, hit now.
            None => e.set_s3(word(
                clock.wrapping_sub(u64::from(e.idle(clock as u32))),
                1,
                false,
            )),
        }
    }

    /// The victim among the part's entries (`draw` gives uniform draws of them, None
    /// when there is nothing to draw), never `pinned`; moves and reinserts on the way
    /// (S3-FIFO §4). The part holds `part_len` entries, `small` of them in the small
    /// queue (an entry moved to the main queue here leaves the count; the victim is
    /// the caller's to unlink, which takes it out); `drawn_from` is how many entries
    /// `draw` draws from (sizes the ghost); `k` is the main queue's sample count.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn victim(
        &mut self,
        draw: &mut dyn FnMut() -> Option<Entry>,
        pinned: Option<Entry>,
        clock: u64,
        k: usize,
        drawn_from: usize,
        part_len: usize,
        small: &mut SmallQueueCount,
        hash_of: &dyn Fn(Entry) -> u64,
    ) -> Option<Entry> {
        self.has_evicted = true;
        self.ghost.resize(ghost_capacity(&self.cfg, drawn_from));
        let k = k.max(1);
        let mut last = None;
        for _ in 0..MAX_ROUNDS {
            if small.share(part_len) >= self.cfg.small_ratio {
                let mut found = None;
                for _ in 0..SMALL_DRAWS {
                    let e = draw()?;
                    let (freq, in_small) = state(e);
                    if Some(e) == pinned {
                        continue;
                    }
                    last = Some(e);
                    if in_small {
                        found = Some((e, freq));
                        break;
                    }
                }
                if let Some((e, freq)) = found {
                    if moves_to_main(&self.cfg, freq) {
                        small.leaving(e);
                        e.set_s3(word(clock, 0, false));
                        self.stats.moved_to_main += 1;
                        continue;
                    }
                    return Some(self.evict(e, hash_of));
                }
            }
            // The main queue: the oldest-entered of k draws in it.
            let mut best: Option<(Entry, u32, u8)> = None;
            let mut seen = 0;
            for _ in 0..4 * k {
                let e = draw()?;
                let (freq, in_small) = state(e);
                if Some(e) == pinned {
                    continue;
                }
                last = Some(e);
                if in_small {
                    continue;
                }
                let age = e.queue_age(clock as u32);
                if best.is_none_or(|(_, b, _)| age > b) {
                    best = Some((e, age, freq));
                }
                seen += 1;
                if seen == k {
                    break;
                }
            }
            let Some((e, _, freq)) = best else {
                // Nothing of the main queue among the draws: the small queue gives.
                return last.map(|e| self.evict(e, hash_of));
            };
            match main_reinsert(freq) {
                Some(f) => {
                    e.set_s3(word(clock, f, false));
                    self.stats.reinserted += 1;
                }
                None => return Some(self.evict(e, hash_of)),
            }
        }
        // Every candidate earned another round: evict the last one anyway.
        last.map(|e| self.evict(e, hash_of))
    }

    /// `e` is the victim: counted by its queue, and remembered in the ghost if it leaves
    /// from the small queue (whichever way the eviction found it).
    fn evict(&mut self, e: Entry, hash_of: &dyn Fn(Entry) -> u64) -> Entry {
        if state(e).1 {
            self.ghost.add_soon(hash_of(e));
            self.stats.small_evictions += 1;
        } else {
            self.stats.main_evictions += 1;
        }
        e
    }

    /// Heap bytes: the ghost and this state.
    pub(crate) fn heap_bytes(&self) -> u64 {
        self.ghost.bytes() + std::mem::size_of::<PartS3>() as u64
    }

    /// INFO's figures, with the part's small queue holding `small` of `part_len`
    /// entries.
    pub(crate) fn stats(&self, small: &SmallQueueCount, part_len: usize) -> S3FifoStats {
        S3FifoStats {
            small_share_permille: (small.share(part_len) * 1000.0).round() as u64,
            ghost_bytes: self.ghost.bytes(),
            ..self.stats.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ghost_remembers_about_its_capacity_in_fifo_order() {
        let mut g = Ghost::new();
        g.resize(1000);
        let hash = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 7);
        for i in 0..3000u64 {
            g.add(hash(i));
        }
        // The last ~1000 are remembered (bucket collisions lose a few), older ones not.
        let recent = (2000..3000).filter(|&i| g.take(hash(i))).count();
        let old = (0..1900).filter(|&i| g.take(hash(i))).count();
        assert!(recent > 850, "{recent}");
        assert!(old < 20, "{old}");
        // Taken keys are forgotten.
        assert!(!g.take(hash(2999)));
        assert_eq!(g.bytes(), 1000 * 4);
    }

    /// The keys of one part share the shard's hash bits (40-45): neither bucket may
    /// depend on them, or a part's keys crowd into a few buckets and the ghost forgets
    /// most of them. With two buckets a key, a full ghost remembers ~94 % of the keys it
    /// should (one bucket a key: ~87 %).
    #[test]
    fn the_ghost_remembers_one_parts_keys_in_two_buckets_each() {
        let shard_bits = 0x2Bu64 << 40;
        // splitmix64's finalizer: random-looking bits (a bare multiply spreads
        // consecutive keys too evenly over the buckets to show their overflow).
        let hash = |i: u64| {
            let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) & !(0x3F << 40)) | shard_bits
        };
        for capacity in [80u64, 1000, 20_000] {
            let mut g = Ghost::new();
            g.resize(capacity);
            for i in 0..10 * capacity {
                g.add(hash(i));
            }
            let recent = (9 * capacity..10 * capacity)
                .filter(|&i| g.take(hash(i)))
                .count() as u64;
            assert!(recent * 100 > capacity * 92, "{capacity}: {recent}");
        }
    }

    /// The eviction path's deferred add loses no key: the pending one is found by
    /// `take` before it is written, and written by the next add.
    #[test]
    fn a_key_added_soon_is_remembered_before_and_after_it_is_written() {
        let mut g = Ghost::new();
        g.resize(1000);
        let hash = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 7);
        g.add_soon(hash(1));
        assert!(g.take(hash(1)), "pending key not found");
        assert!(!g.take(hash(1)), "a taken pending key is forgotten");
        for i in 10..20 {
            g.add_soon(hash(i));
        }
        // 10..18 are written, 19 is pending: all ten are remembered.
        assert_eq!(g.added, 9);
        assert_eq!((10..20).filter(|&i| g.take(hash(i))).count(), 10);
    }

    #[test]
    fn the_ghost_spans_large_capacities_with_coarse_stamps() {
        let mut g = Ghost::new();
        g.resize(200_000);
        assert!(g.shift > 0);
        let hash = |i: u64| i.wrapping_mul(0xD6E8_FEB8_6659_FD93).rotate_left(17);
        for i in 0..400_000u64 {
            g.add(hash(i));
        }
        let recent = (300_000..400_000).filter(|&i| g.take(hash(i))).count();
        let old = (0..180_000).filter(|&i| g.take(hash(i))).count();
        assert!(recent > 85_000, "{recent}");
        assert!(old < 2_000, "{old}");
    }

    #[test]
    fn words_round_trip() {
        for (clock, freq, small) in [(0u64, 0u8, false), (5, 3, true), (1 << 30, 2, false)] {
            let w = word(clock, freq, small);
            assert_eq!(w & LHD_CLOCK_MASK, clock as u32 & LHD_CLOCK_MASK);
            assert_eq!(((w >> FREQ_SHIFT) & 3) as u8, freq);
            assert_eq!(w & SMALL_BIT != 0, small);
        }
    }
}
