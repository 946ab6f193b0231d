//! The shard's index: an open-addressing hash table of tagged entry pointers.
//!
//! # Why not hashbrown
//!
//! Memory per key is what a cache sells. A hashbrown table grows by doubling and keeps
//! at most 7/8 of its buckets full, so its fill swings between 44 % and 88 %; at one
//! million keys it sits at 48 %. With a 4-byte slot number per bucket plus an 8-byte
//! pointer in a dense slot array for sampling, the index cost ~19 bytes per key there.
//! This table is the only structure: one 8-byte word per position holding the entry
//! pointer and a 16-bit hash tag, grown by 1.25x between 72 % and 90 % fill, i.e.
//! 9-11.3 bytes per key, and sampling needs no second array (below). Linear probing at
//! 90 % fill scans ~50 words on a miss, but they are contiguous and the tags mean no
//! entry is touched, so a miss costs about one or two cache-line fetches.
//!
//! # Layout
//!
//! - Linear probing from the home position `home(h) = h * cap >> 64` ("fastrange"), so
//!   `cap` need not be a power of two. No wrap-around: a short overflow tail follows the
//!   `cap` home positions, and an insertion that runs off the end grows the table.
//! - A word is `0` (empty) or `pointer | tag << 48`: user-space pointers on x86-64 and
//!   AArch64 fit in 48 bits, and the tag is the hash's low 16 bits (independent of the
//!   high bits that pick the home), so a probe rejects almost every non-matching word
//!   without touching the entry.
//! - Deletion uses backward shift (Knuth's Algorithm R): later members of the cluster
//!   that may legally move back do, so there are no tombstones and probe lengths do not
//!   degrade under the constant churn of an evicting cache. Entries only ever move to
//!   lower positions on deletion.
//!
//! # Sampling
//!
//! A uniformly random *position* holds each live entry with the same probability, so
//! drawing positions until one is occupied is an exactly uniform sample of the entries,
//! in expected `positions / len` draws: at most ~2 at the fills the table keeps (it
//! shrinks below 20 %). Contrast Redis's `dictGetSomeKeys`, which walks chains from a
//! random bucket and so favours keys in long chains and keys after empty runs.
//!
//! # Iteration (SCAN)
//!
//! Positions are walked from the top down. Backward shift moves entries only downwards,
//! from the visited part into the unvisited part (seen twice, which SCAN allows) or
//! within the unvisited part, so an entry present throughout is never skipped. A resize
//! reorders everything; it bumps [`Table::epoch`], and a cursor from an older epoch
//! restarts its shard (duplicates, never misses).

use crate::entry::Entry;

const PTR_BITS: u32 = 48;
const PTR_MASK: u64 = (1 << PTR_BITS) - 1;
/// Grow when an insertion would take the fill above this (percent).
const MAX_LOAD: usize = 90;
/// Fill right after growing or shrinking (percent).
const TARGET_LOAD: usize = 72;
/// Shrink when the fill falls below this (percent).
const MIN_LOAD: usize = 20;
/// A resize that frees a table at least this large tells its owner
/// ([`Table::take_freed_large`]), which may return the allocator's dirty pages at once
/// ([`crate::defrag::purge_dirty_pages`]): a few times per shard over a fill from empty,
/// and never in a steady state.
const PURGE_AFTER_FREEING: usize = 16 << 10;
/// Entries after a removed one whose headers are prefetched before the backward shift.
const REMOVE_PREFETCH: usize = 32;

#[inline]
fn tag_of(h: u64) -> u64 {
    h & 0xFFFF
}

#[inline]
fn entry_of(w: u64) -> Entry {
    Entry::from_addr(w & PTR_MASK)
}

/// Asks the CPU to start loading the cache line at `addr` (any address: a hint).
#[inline]
pub(crate) fn prefetch(addr: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

fn overflow_for(cap: usize) -> usize {
    if cap == 0 {
        0
    } else {
        32 + cap / 64
    }
}

pub(crate) struct Table {
    words: Vec<u64>,
    /// Number of home positions (`words.len()` minus the overflow tail).
    cap: usize,
    len: usize,
    epoch: u32,
    /// A resize freed a table of at least [`PURGE_AFTER_FREEING`] bytes since the
    /// owner last asked ([`Table::take_freed_large`]).
    freed_large: bool,
}

impl Table {
    pub fn new() -> Table {
        Table {
            words: Vec::new(),
            cap: 0,
            len: 0,
            epoch: 0,
            freed_large: false,
        }
    }

    /// Whether a resize freed a large table since the last call (and forgets it). The
    /// owner decides whether to return the allocator's dirty pages then: a purge is of
    /// every arena, so it also returns pages other code freed and would reuse (a refill
    /// after FLUSHALL at -P 16 took ~10k more page faults, 40 MB, and 5-10 % more CPU
    /// when every such resize purged); it is worth it near the memory limit, where the
    /// freed tables would otherwise hold RSS over `maxmemory`'s bound as eviction starts.
    #[inline]
    pub fn take_freed_large(&mut self) -> bool {
        std::mem::take(&mut self.freed_large)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of positions (for sampling and iteration).
    pub fn positions(&self) -> usize {
        self.words.len()
    }

    /// Heap bytes held by the table.
    pub fn heap_bytes(&self) -> u64 {
        self.words.capacity() as u64 * 8
    }

    /// Changes whenever positions are reassigned wholesale (resize).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    #[inline]
    fn home(&self, h: u64) -> usize {
        ((h as u128 * self.cap as u128) >> 64) as usize
    }

    /// The entry at `pos`, if occupied.
    #[inline]
    pub fn at(&self, pos: usize) -> Option<Entry> {
        let w = *self.words.get(pos)?;
        (w != 0).then(|| entry_of(w))
    }

    /// A uniformly random occupied position (None if empty): positions are drawn until
    /// one is occupied, so every entry is equally likely (see the module docs).
    pub fn random_occupied<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let n = self.words.len();
        loop {
            let pos = rng.gen_range(0..n);
            if self.words[pos] != 0 {
                return Some(pos);
            }
        }
    }

    /// A uniformly random position, occupied or not (None if the table is empty), its
    /// word already being fetched. With [`Table::occupied_from`] it draws what
    /// [`Table::random_occupied`] draws, in two steps, so that a batch of draws can
    /// overlap its cache misses (LHD's eviction samples 64).
    #[inline]
    pub fn random_position<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let pos = rng.gen_range(0..self.words.len());
        prefetch(self.words.as_ptr().wrapping_add(pos) as u64);
        Some(pos)
    }

    /// The words' base address (0 while there are none) and the number of home
    /// positions: what locates hash `h`'s home word without the table (for prefetching
    /// from another thread, see `store::IndexHint`).
    #[inline]
    pub fn layout(&self) -> (u64, u64) {
        if self.words.is_empty() {
            (0, 0)
        } else {
            (self.words.as_ptr() as u64, self.cap as u64)
        }
    }

    /// Starts fetching the word where a probe for hash `h` begins.
    #[inline]
    pub fn prefetch_home(&self, h: u64) {
        if !self.words.is_empty() {
            prefetch(self.words.as_ptr().wrapping_add(self.home(h)) as u64);
        }
    }

    /// `pos` if occupied, else the first occupied one of further uniform draws (the
    /// table must not be empty).
    #[inline]
    pub fn occupied_from<R: rand::Rng + ?Sized>(&self, mut pos: usize, rng: &mut R) -> usize {
        debug_assert!(self.len > 0);
        while self.words[pos] == 0 {
            pos = rng.gen_range(0..self.words.len());
        }
        pos
    }

    /// Starts fetching the header of the first entry whose tag matches hash `h` along
    /// its probe (the entry a lookup of `h` will most likely compare), without reading
    /// any entry.
    #[inline]
    pub fn prefetch_match(&self, h: u64) {
        if self.cap == 0 {
            return;
        }
        let tag = tag_of(h);
        let mut pos = self.home(h);
        while let Some(&w) = self.words.get(pos) {
            if w == 0 {
                return;
            }
            if w >> PTR_BITS == tag {
                // The lookup compares the key and a GET then copies the value: the
                // entry's first three lines. (A short entry's exact-size slot spans
                // three lines more often than a 128-byte jemalloc region spanned two,
                // whose second line the CPU's adjacent-line prefetcher fetched.)
                let a = w & PTR_MASK;
                prefetch(a);
                prefetch(a + 64);
                prefetch(a + 128);
                return;
            }
            pos += 1;
        }
    }

    /// Position of the entry with hash `h` for which `eq` holds.
    #[inline]
    pub fn find(&self, h: u64, eq: impl FnMut(Entry) -> bool) -> Option<usize> {
        self.find_or_vacancy(h, eq).ok()
    }

    /// Like [`Table::find`], but when the entry is absent also returns where an insert
    /// would put it: the empty word that ended the probe (None if the probe ran off the
    /// end). A write looks up its key and, on a miss, inserts without probing twice.
    #[inline]
    pub fn find_or_vacancy(
        &self,
        h: u64,
        mut eq: impl FnMut(Entry) -> bool,
    ) -> Result<usize, Option<usize>> {
        if self.cap == 0 {
            return Err(None);
        }
        let tag = tag_of(h);
        let mut pos = self.home(h);
        while let Some(&w) = self.words.get(pos) {
            if w == 0 {
                return Err(Some(pos));
            }
            if w >> PTR_BITS == tag && eq(entry_of(w)) {
                return Ok(pos);
            }
            pos += 1;
        }
        Err(None)
    }

    /// Inserts an entry known to be absent at `vacancy` from [`Table::find_or_vacancy`]
    /// (the table unchanged since) when no resize is due; otherwise as [`Table::insert`].
    pub fn insert_at_vacancy(
        &mut self,
        h: u64,
        e: Entry,
        vacancy: Option<usize>,
        hash_of: &impl Fn(Entry) -> u64,
    ) -> usize {
        match vacancy {
            Some(pos)
                if (self.len + 1) * 100 <= self.cap * MAX_LOAD
                    && self.words.get(pos) == Some(&0) =>
            {
                debug_assert!(pos >= self.home(h));
                self.words[pos] = Self::addr(e) | (tag_of(h) << PTR_BITS);
                self.len += 1;
                pos
            }
            _ => self.insert(h, e, hash_of),
        }
    }

    /// Inserts an entry known to be absent; returns its position. `hash_of` recomputes
    /// the hash of a stored entry when the table must be rebuilt.
    pub fn insert(&mut self, h: u64, e: Entry, hash_of: &impl Fn(Entry) -> u64) -> usize {
        if (self.len + 1) * 100 > self.cap * MAX_LOAD {
            self.resize(Self::cap_for(self.len + 1), hash_of);
        }
        loop {
            if let Some(pos) = self.place(h, e) {
                self.len += 1;
                return pos;
            }
            // Ran off the overflow tail: grow (rare; only at unlucky cluster positions).
            self.resize(self.cap + self.cap / 2 + 16, hash_of);
        }
    }

    /// Swaps in a new allocation for the entry at `pos` (same key, so same hash and tag).
    pub fn replace(&mut self, pos: usize, e: Entry) {
        let w = &mut self.words[pos];
        debug_assert!(*w != 0);
        *w = (*w & !PTR_MASK) | Self::addr(e);
    }

    /// Removes the entry at `pos` and returns it (the caller frees it). Later members of
    /// the cluster shift back; positions below `pos` are untouched.
    pub fn remove(&mut self, pos: usize, hash_of: &impl Fn(Entry) -> u64) -> Entry {
        let removed = entry_of(self.words[pos]);
        // The shift reads the key of every entry in the rest of the cluster (its home): at
        // the fills the table keeps that is ~5-15 entries, each a cache miss. Fetch them
        // all first so the misses overlap (an eviction or DEL otherwise waits for each).
        for &w in self.words[pos + 1..].iter().take(REMOVE_PREFETCH) {
            if w == 0 {
                break;
            }
            prefetch(w & PTR_MASK);
        }
        let mut hole = pos;
        let mut j = pos + 1;
        while let Some(&w) = self.words.get(j) {
            if w == 0 {
                break;
            }
            if self.home(hash_of(entry_of(w))) <= hole {
                self.words[hole] = w;
                hole = j;
            }
            j += 1;
        }
        self.words[hole] = 0;
        self.len -= 1;
        if self.len * 100 < self.cap * MIN_LOAD && self.cap > 64 {
            self.resize(Self::cap_for(self.len), hash_of);
        }
        removed
    }

    /// Drops every position; the caller has freed or taken all entries.
    pub fn clear(&mut self) {
        *self = Table::new();
    }

    /// All occupied positions' entries (unordered).
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        self.words.iter().filter(|&&w| w != 0).map(|&w| entry_of(w))
    }

    fn cap_for(len: usize) -> usize {
        (len * 100 / TARGET_LOAD).max(16)
    }

    fn addr(e: Entry) -> u64 {
        let a = e.addr();
        assert!(
            a & !PTR_MASK == 0,
            "heap pointer above 2^48: this platform is not supported"
        );
        a
    }

    fn place(&mut self, h: u64, e: Entry) -> Option<usize> {
        let mut pos = self.home(h);
        while let Some(w) = self.words.get_mut(pos) {
            if *w == 0 {
                *w = Self::addr(e) | (tag_of(h) << PTR_BITS);
                return Some(pos);
            }
            pos += 1;
        }
        None
    }

    fn resize(&mut self, mut new_cap: usize, hash_of: &impl Fn(Entry) -> u64) {
        let old = std::mem::take(&mut self.words);
        self.epoch = self.epoch.wrapping_add(1);
        'retry: loop {
            self.cap = new_cap;
            self.words = vec![0; new_cap + overflow_for(new_cap)];
            // Rehashing reads every entry's key: a cache miss each. Prefetching the
            // entries a few positions ahead overlaps those misses (resize time is the
            // tail latency of a write that triggers it).
            const AHEAD: usize = 8;
            for (i, &w) in old.iter().enumerate() {
                if let Some(&next) = old.get(i + AHEAD) {
                    if next != 0 {
                        prefetch(next & PTR_MASK);
                    }
                }
                if w == 0 {
                    continue;
                }
                let e = entry_of(w);
                if self.place(hash_of(e), e).is_none() {
                    new_cap += new_cap / 2 + 16;
                    continue 'retry;
                }
            }
            break;
        }
        let old_bytes = old.capacity() * std::mem::size_of::<u64>();
        drop(old);
        self.freed_large |= old_bytes >= PURGE_AFTER_FREEING;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Hash that puts every key at the same few homes, to exercise long clusters.
    fn clustered(e: Entry) -> u64 {
        let k = e.key();
        (k[0] as u64 % 3) << 62 | k.len() as u64 | (k[k.len() - 1] as u64) << 8
    }

    #[test]
    fn insert_find_remove_with_heavy_clustering() {
        let mut t = Table::new();
        let mut live: HashMap<Vec<u8>, ()> = HashMap::new();
        let mk = |i: u32| format!("{}{}", (b'a' + (i % 3) as u8) as char, i).into_bytes();
        for i in 0..3000u32 {
            let k = mk(i);
            let e = Entry::new(0, &k, b"v", None, 0);
            t.insert(clustered(e), e, &clustered);
            live.insert(k, ());
            if i % 3 == 0 {
                // Remove an older key.
                let old = mk(i / 2);
                let h = {
                    let probe = Entry::new(0, &old, b"", None, 0);
                    let h = clustered(probe);
                    probe.free();
                    h
                };
                if let Some(pos) = t.find(h, |e| e.key() == &old[..]) {
                    t.remove(pos, &clustered).free();
                    live.remove(&old);
                }
            }
        }
        assert_eq!(t.len(), live.len());
        for k in live.keys() {
            let probe = Entry::new(0, k, b"", None, 0);
            let h = clustered(probe);
            probe.free();
            assert!(t.find(h, |e| e.key() == &k[..]).is_some());
        }
        let n = t.entries().count();
        assert_eq!(n, live.len());
        let all: Vec<Entry> = t.entries().collect();
        t.clear();
        all.into_iter().for_each(Entry::free);
    }

    /// The two-step draw (`random_position` then `occupied_from`, as LHD's batched
    /// sampling uses it) is uniform over the entries, whatever runs of empty positions
    /// precede them: over 200 entries in clusters and gaps, 200 000 draws put every
    /// entry within 25 % of its expected 1 000 (about 8 standard deviations), and no
    /// empty position is ever returned.
    #[test]
    fn two_step_draws_are_uniform_over_entries() {
        use rand::SeedableRng;
        let mut t = Table::new();
        let hash = |e: Entry| crate::store::key_hash(e.key());
        let mut all = Vec::new();
        for i in 0..200u32 {
            let e = Entry::new(0, format!("key:{i}").as_bytes(), b"v", None, 0);
            t.insert(hash(e), e, &hash);
            all.push(e);
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for _ in 0..200_000 {
            let pos = t.random_position(&mut rng).unwrap();
            let pos = t.occupied_from(pos, &mut rng);
            let e = t.at(pos).expect("an occupied position");
            *counts.entry(e.addr()).or_default() += 1;
        }
        assert_eq!(counts.len(), 200);
        for (_, &n) in counts.iter() {
            assert!((750..=1250).contains(&n), "{n}");
        }
        assert!(Table::new().random_position(&mut rng).is_none());
        t.clear();
        all.into_iter().for_each(Entry::free);
    }
}
