//! The shard's index: an open-addressing hash table of tagged 6-byte entry handles.
//!
//! # Why not hashbrown
//!
//! Memory per key is what a cache sells. A hashbrown table grows by doubling and keeps
//! at most 7/8 of its buckets full, so its fill swings between 44 % and 88 %; at one
//! million keys it sits at 48 %. With a 4-byte slot number per bucket plus an 8-byte
//! pointer in a dense slot array for sampling, the index cost ~19 bytes per key there.
//! This table is the only structure: one 6-byte word per position naming the entry and
//! carrying a hash tag, grown by 1.25x between 72 % and 90 % fill, i.e. 6.8-8.5 bytes
//! per key, and sampling needs no second array (below). Linear probing at 90 % fill
//! scans ~50 words on a miss, but they are contiguous (10.7 to a cache line) and the
//! tags mean almost no entry is touched, so a miss costs about one or two cache-line
//! fetches.
//!
//! # Layout
//!
//! - Linear probing from the home position `home(h) = h * cap >> 64` ("fastrange"), so
//!   `cap` need not be a power of two. No wrap-around: a short overflow tail follows the
//!   `cap` home positions, and an insertion that runs off the end grows the table.
//! - A word is 48 bits, `0` when empty. Two kinds of block hold entries: slab slots
//!   (`crate::slab`: every entry whose key and value fit 255 bytes) all lie in one
//!   reserved region of at most 2^36 bytes, so a slot is named by its 36-bit offset
//!   there, leaving 11 bits of tag (`1 | tag:11 | offset:36`); a jemalloc block (a longer
//!   key or value) is 16-aligned below 2^47, named by its address / 16 in 43 bits,
//!   leaving a 4-bit tag (`0 | tag:4 | address/16:43`). The tag is the hash's low bits
//!   (independent of the high bits that pick the home), so a probe rejects all but 1 in
//!   2048 non-matching slot words, 1 in 16 block words, without touching the entry; the
//!   weaker tag costs a key comparison on ~1 in 16 words probed past, on entries whose
//!   values exceed 255 bytes, i.e. whose own copy costs more. The 8-byte words before
//!   (a 48-bit pointer and a 16-bit tag) cost 2.6 B/key more at 1M keys (11.8 -> 10.2
//!   -> 7.6 MB with the mappings and phases below); per SET under eviction the
//!   decoding adds ~200 instructions (5,625 -> 5,822 in callgrind) and no measurable
//!   time (`bench/` A/B in BENCHMARKS.md).
//! - Words are read as unaligned 8-byte loads masked to 48 bits (two padding bytes
//!   follow the last word) and written as a 4- and a 2-byte store, so a write never
//!   touches a neighbour.
//! - Deletion uses backward shift (Knuth's Algorithm R): later members of the cluster
//!   that may legally move back do, so there are no tombstones and probe lengths do not
//!   degrade under the constant churn of an evicting cache. Entries only ever move to
//!   lower positions on deletion.
//!
//! # Memory: exact-size tables, staggered growth
//!
//! A table of [`MAP_FROM_BYTES`] or more is an anonymous mapping of whole pages rather
//! than a jemalloc block: jemalloc rounds a large request up to its next size class
//! (classes are 1.14-1.25x apart), so a 176 KB table took a 192 KB block. The tail is
//! counted as active and, in an extent jemalloc reuses, resident; a mapping is returned
//! to the kernel whole when the table is replaced, with no purge to wait for. Every
//! table also grows at its own *phase*: its first growth past [`PHASE_FROM_CAP`]
//! positions is stretched by a factor in [1, 1.25) that differs per table (a
//! golden-ratio sequence over the store's shards and tenants, the same in every run). Tables of a store fill at the same
//! rate (keys hash uniformly over the shards), so without phases all 64 shards' tables
//! grow at the same key count: the index's size moved in 25 % steps with a resize of
//! every shard at once (a latency spike on all of them), and its bytes per key swung
//! between 6.8 and 8.5 (9.2 and 11.3 with 8-byte words). With phases, the growths are
//! spread evenly over each 1.25x of keys and the index costs its average, ~7.6 B/key,
//! at any key count.
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
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per position (module docs: "Words").
pub(crate) const WORD_BYTES: usize = 6;
/// A word's 48 bits, read from 8 bytes.
const WORD_MASK: u64 = (1 << 48) - 1;
/// Set in a word that names a slab slot: the rest is an 11-bit tag and the slot's offset
/// in the slab region.
const SLAB_BIT: u64 = 1 << 47;
const SLAB_TAG_SHIFT: u32 = 36;
const SLAB_TAG_MASK: u64 = 0x7FF;
const SLAB_OFFSET_MASK: u64 = (1 << SLAB_TAG_SHIFT) - 1;
/// A word without [`SLAB_BIT`] names a jemalloc block: a 4-bit tag and the block's
/// address divided by 16 (43 bits: user space is below 2^47, blocks are 16-aligned).
const HEAP_TAG_SHIFT: u32 = 43;
const HEAP_TAG_MASK: u64 = 0xF;
const HEAP_ADDR_MASK: u64 = (1 << HEAP_TAG_SHIFT) - 1;
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

/// The word naming entry `e`, whose hash is `h`.
#[inline]
fn encode(e: Entry, h: u64) -> u64 {
    let a = e.addr();
    match crate::slab::region_offset(a) {
        Some(offset) => SLAB_BIT | (h & SLAB_TAG_MASK) << SLAB_TAG_SHIFT | offset,
        None => {
            assert!(
                a < SLAB_BIT && a & 15 == 0,
                "entry block {a:#x} above 2^47 or not 16-aligned: this platform is not supported"
            );
            (h & HEAP_TAG_MASK) << HEAP_TAG_SHIFT | a >> 4
        }
    }
}

/// The entry an occupied word names.
#[inline]
fn entry_of(w: u64) -> Entry {
    Entry::from_addr(addr_of(w))
}

#[inline]
fn addr_of(w: u64) -> u64 {
    if w & SLAB_BIT != 0 {
        crate::slab::region_addr(w & SLAB_OFFSET_MASK)
    } else {
        (w & HEAP_ADDR_MASK) << 4
    }
}

/// What an occupied word's tag bits must be for hash `h`: the words a probe for `h` can
/// skip without touching their entries are those whose [`TagProbe::may_match`] is false.
#[derive(Clone, Copy)]
struct TagProbe {
    slab: u64,
    heap: u64,
}

impl TagProbe {
    #[inline]
    fn new(h: u64) -> TagProbe {
        TagProbe {
            slab: SLAB_BIT | (h & SLAB_TAG_MASK) << SLAB_TAG_SHIFT,
            heap: (h & HEAP_TAG_MASK) << HEAP_TAG_SHIFT,
        }
    }

    #[inline]
    fn may_match(self, w: u64) -> bool {
        if w & SLAB_BIT != 0 {
            w & (SLAB_BIT | SLAB_TAG_MASK << SLAB_TAG_SHIFT) == self.slab
        } else {
            w & (HEAP_TAG_MASK << HEAP_TAG_SHIFT) == self.heap
        }
    }
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

/// Positions in one window of LHD's contiguous sampling ([`Table::window_start`]):
/// 8 words, 48 bytes, at most two cache lines.
pub const WINDOW: usize = 8;

/// Tables of at least this many bytes are page mappings of their own (module docs).
const MAP_FROM_BYTES: usize = 64 << 10;
/// A table's growth phase is applied at its first growth to at least this many
/// positions (below, rounding of small capacities would blur it anyway).
const PHASE_FROM_CAP: usize = 1024;
const PAGE_BYTES: usize = 4096;

/// Bytes of tables held as page mappings, process-wide (jemalloc's statistics do not
/// see them; INFO's allocator figures add them, see [`mapped_bytes`]).
static MAPPED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Counts the tables tests create, to give each its own growth phase.
#[cfg(test)]
static TABLES_CREATED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Bytes of index tables held outside jemalloc, as page mappings.
pub fn mapped_bytes() -> u64 {
    MAPPED_BYTES.load(Ordering::Relaxed)
}

/// The growth phase of the `n`th table created, in [0, 1): n times the golden ratio's
/// fraction, modulo 1, so that any run of consecutive tables (a store's shards) is
/// spread evenly.
fn phase_of(n: u32) -> f64 {
    (n as f64 * 0.618_033_988_749_894_9).fract()
}

/// A table's words, [`WORD_BYTES`] each, zeroed: a jemalloc block while small, an
/// anonymous mapping of whole pages from [`MAP_FROM_BYTES`] (the last page's spare words
/// extend the overflow tail). Two bytes of padding after the last word let every word be
/// read as one unaligned 8-byte load.
struct Words {
    ptr: NonNull<u8>,
    /// Number of words.
    len: usize,
    /// Bytes allocated.
    bytes: usize,
    mapped: bool,
}

// SAFETY: `Words` owns its memory exclusively, as a `Box<[u8]>` does.
unsafe impl Send for Words {}
// SAFETY: shared access only reads, as for a `Box<[u8]>`.
unsafe impl Sync for Words {}

const WORDS_PADDING: usize = 8 - WORD_BYTES;

impl Words {
    const EMPTY: Words = Words {
        ptr: NonNull::dangling(),
        len: 0,
        bytes: 0,
        mapped: false,
    };

    fn zeroed(len: usize) -> Words {
        let bytes = len * WORD_BYTES + WORDS_PADDING;
        if bytes >= MAP_FROM_BYTES {
            let map_len = bytes.next_multiple_of(PAGE_BYTES);
            // A fresh mapping, owned by the returned Words until its drop unmaps it.
            if let Some(ptr) =
                crate::slab::map_table(map_len).and_then(|p| NonNull::new(p as *mut u8))
            {
                MAPPED_BYTES.fetch_add(map_len as u64, Ordering::Relaxed);
                return Words {
                    ptr,
                    len: (map_len - WORDS_PADDING) / WORD_BYTES,
                    bytes: map_len,
                    mapped: true,
                };
            }
            // No mapping (address space or map count exhausted): the allocator's block.
        }
        let boxed: Box<[u8]> = vec![0u8; bytes].into_boxed_slice();
        let ptr = NonNull::new(Box::into_raw(boxed) as *mut u8).unwrap_or(NonNull::dangling());
        Words {
            ptr,
            len,
            bytes,
            mapped: false,
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    /// The address of word `i` (for prefetching; any `i`).
    #[inline]
    fn addr_of_word(&self, i: usize) -> u64 {
        (self.ptr.as_ptr() as u64).wrapping_add((i * WORD_BYTES) as u64)
    }

    /// Word `i`, if `i` is a position.
    #[inline]
    fn get(&self, i: usize) -> Option<u64> {
        if i < self.len {
            // SAFETY: word i's 6 bytes and the 2 after them (the next word's or the
            // padding) are inside the allocation; unaligned reads are allowed.
            Some(
                unsafe { (self.ptr.as_ptr().add(i * WORD_BYTES) as *const u64).read_unaligned() }
                    & WORD_MASK,
            )
        } else {
            None
        }
    }

    /// Word `i`; `i` must be a position.
    #[inline]
    fn at(&self, i: usize) -> u64 {
        self.get(i).expect("index position in range")
    }

    /// Sets word `i` (`w` < 2^48) and leaves its neighbours as they are.
    #[inline]
    fn set(&mut self, i: usize, w: u64) {
        assert!(i < self.len, "index position in range");
        debug_assert!(w <= WORD_MASK);
        // SAFETY: word i's 6 bytes are inside the allocation, exclusively borrowed.
        unsafe {
            let p = self.ptr.as_ptr().add(i * WORD_BYTES);
            (p as *mut u32).write_unaligned(w as u32);
            (p.add(4) as *mut u16).write_unaligned((w >> 32) as u16);
        }
    }

    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len).map(|i| self.at(i))
    }
}

impl Default for Words {
    fn default() -> Words {
        Words::EMPTY
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        if self.mapped {
            // SAFETY: the mapping made in `zeroed`, of exactly these bytes, unused after.
            unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.bytes) };
            MAPPED_BYTES.fetch_sub(self.bytes as u64, Ordering::Relaxed);
        } else {
            // SAFETY: the box leaked in `zeroed`, of exactly `bytes` bytes.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr(),
                    self.bytes,
                ))
            });
        }
    }
}

fn overflow_for(cap: usize) -> usize {
    if cap == 0 {
        0
    } else {
        32 + cap / 64
    }
}

pub(crate) struct Table {
    words: Words,
    /// Number of home positions (`words.len()` minus the overflow tail).
    cap: usize,
    len: usize,
    epoch: u32,
    /// A resize freed a table of at least [`PURGE_AFTER_FREEING`] bytes since the
    /// owner last asked ([`Table::take_freed_large`]).
    freed_large: bool,
    /// This table's growth phase, in [0, 1) (module docs).
    phase: f64,
    /// Whether the phase has stretched a growth since the table was last empty or
    /// shrunk.
    phased: bool,
}

impl Table {
    /// An empty table with the next phase of a process-wide sequence (tests).
    #[cfg(test)]
    pub fn new() -> Table {
        Table::with_phase(TABLES_CREATED.fetch_add(1, Ordering::Relaxed))
    }

    /// An empty table with the `n`th phase of the golden-ratio sequence: an owner that
    /// numbers its tables (a store: shard and tenant) gets the same phases in every run,
    /// spread evenly over any run of consecutive numbers.
    pub fn with_phase(n: u32) -> Table {
        Table::empty(phase_of(n))
    }

    fn empty(phase: f64) -> Table {
        Table {
            words: Words::EMPTY,
            cap: 0,
            len: 0,
            epoch: 0,
            freed_large: false,
            phase,
            phased: false,
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
        self.words.bytes() as u64
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
        let w = self.words.get(pos)?;
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
            if self.words.at(pos) != 0 {
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
        prefetch(self.words.addr_of_word(pos));
        Some(pos)
    }

    /// A uniformly random position at which to start a window of [`WINDOW`] positions
    /// (None if the table is empty), the window's words already being fetched. With
    /// [`Table::window`] it is LHD's contiguous sampling: every entry lies in a window
    /// with the same probability, `WINDOW / positions` (a fixed span of positions,
    /// wrapping at the end, not a fixed count of entries, which would favour entries
    /// after empty runs), and a window's words are one or two cache lines where as many
    /// independent draws are as many misses.
    #[inline]
    pub fn window_start<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Option<usize> {
        let start = self.random_position(rng)?;
        prefetch(self.words.addr_of_word(start + WINDOW - 1));
        Some(start)
    }

    /// The [`WINDOW`] positions from `start` (wrapping from the last position to the
    /// first; each position once in a table of fewer, the rest `(0, 0)`) with the
    /// address of the entry at each, 0 where empty, each occupied one's header already
    /// being fetched. Decoded without a branch on what a word holds ([`addr_of`]'s
    /// decode as a select): a sample decodes ~10 windows of words that have just arrived
    /// from memory, and a branch on each word's emptiness or kind mispredicts a quarter
    /// of the time and, resolved only when its word arrives, holds back the windows
    /// after it.
    #[inline]
    pub fn window_addrs(&self, start: usize) -> [(usize, u64); WINDOW] {
        let n = self.words.len();
        let base = crate::slab::region_addr(0);
        let mut out = [(0usize, 0u64); WINDOW];
        for (i, slot) in out.iter_mut().enumerate().take(WINDOW.min(n)) {
            let pos = if start + i >= n {
                start + i - n
            } else {
                start + i
            };
            let w = self.words.at(pos);
            let slab = base.wrapping_add(w & SLAB_OFFSET_MASK);
            let heap = (w & HEAP_ADDR_MASK) << 4;
            let addr = if w & SLAB_BIT != 0 { slab } else { heap };
            prefetch(addr);
            *slot = (pos, addr);
        }
        out
    }

    /// The words' base address (0 while there are none) and the number of home
    /// positions: what locates hash `h`'s home word without the table (for prefetching
    /// from another thread, see `store::IndexHint`).
    #[inline]
    pub fn layout(&self) -> (u64, u64) {
        if self.words.is_empty() {
            (0, 0)
        } else {
            (self.words.addr_of_word(0), self.cap as u64)
        }
    }

    /// Starts fetching the word where a probe for hash `h` begins.
    #[inline]
    pub fn prefetch_home(&self, h: u64) {
        if !self.words.is_empty() {
            prefetch(self.words.addr_of_word(self.home(h)));
        }
    }

    /// Starts fetching the word at `pos` (nothing past the last position).
    #[inline]
    pub fn prefetch_position(&self, pos: usize) {
        if pos < self.words.len() {
            prefetch(self.words.addr_of_word(pos));
        }
    }

    /// `pos` if occupied, else the first occupied one of further uniform draws (the
    /// table must not be empty).
    #[inline]
    pub fn occupied_from<R: rand::Rng + ?Sized>(&self, mut pos: usize, rng: &mut R) -> usize {
        debug_assert!(self.len > 0);
        while self.words.at(pos) == 0 {
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
        let tag = TagProbe::new(h);
        let mut pos = self.home(h);
        while let Some(w) = self.words.get(pos) {
            if w == 0 {
                return;
            }
            if tag.may_match(w) {
                // The lookup compares the key and a GET then copies the value: the
                // entry's first three lines. (A short entry's exact-size slot spans
                // three lines more often than a 128-byte jemalloc region spanned two,
                // whose second line the CPU's adjacent-line prefetcher fetched.)
                let a = addr_of(w);
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
        let tag = TagProbe::new(h);
        let mut pos = self.home(h);
        while let Some(w) = self.words.get(pos) {
            if w == 0 {
                return Err(Some(pos));
            }
            if tag.may_match(w) && eq(entry_of(w)) {
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
                    && self.words.get(pos) == Some(0) =>
            {
                debug_assert!(pos >= self.home(h));
                self.words.set(pos, encode(e, h));
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
            let mut new_cap = Self::cap_for(self.len + 1);
            if !self.phased && new_cap >= PHASE_FROM_CAP {
                // 1.25^phase, stretching this growth (and so shifting every later one).
                new_cap = (new_cap as f64 * 1.25f64.powf(self.phase)) as usize;
                self.phased = true;
            }
            self.resize(new_cap, hash_of);
        }
        loop {
            if let Some(pos) = self.place(h, encode(e, h)) {
                self.len += 1;
                return pos;
            }
            // Ran off the overflow tail: grow (rare; only at unlucky cluster positions).
            self.resize(self.cap + self.cap / 2 + 16, hash_of);
        }
    }

    /// Swaps in a new allocation for the entry at `pos` (same key, so same hash). The
    /// word's tag is kept when the new block is of the same kind (slab slot or jemalloc
    /// block) as the old; otherwise its width differs and `hash_of` recomputes it.
    pub fn replace(&mut self, pos: usize, e: Entry, hash_of: &impl Fn(Entry) -> u64) {
        let old = self.words.at(pos);
        debug_assert!(old != 0);
        let w = encode(e, 0);
        let w = if w & SLAB_BIT != old & SLAB_BIT {
            encode(e, hash_of(e))
        } else if w & SLAB_BIT != 0 {
            w | (old & SLAB_TAG_MASK << SLAB_TAG_SHIFT)
        } else {
            w | (old & HEAP_TAG_MASK << HEAP_TAG_SHIFT)
        };
        self.words.set(pos, w);
    }

    /// Removes the entry at `pos` and returns it (the caller frees it). Later members of
    /// the cluster shift back; positions below `pos` are untouched.
    pub fn remove(&mut self, pos: usize, hash_of: &impl Fn(Entry) -> u64) -> Entry {
        let removed = entry_of(self.words.at(pos));
        // The shift reads the key of every entry in the rest of the cluster (its home): at
        // the fills the table keeps that is ~5-15 entries, each a cache miss. Fetch them
        // all first so the misses overlap (an eviction or DEL otherwise waits for each).
        for w in
            (pos + 1..self.words.len().min(pos + 1 + REMOVE_PREFETCH)).map(|i| self.words.at(i))
        {
            if w == 0 {
                break;
            }
            prefetch(addr_of(w));
        }
        let mut hole = pos;
        let mut j = pos + 1;
        while let Some(w) = self.words.get(j) {
            if w == 0 {
                break;
            }
            if self.home(hash_of(entry_of(w))) <= hole {
                self.words.set(hole, w);
                hole = j;
            }
            j += 1;
        }
        self.words.set(hole, 0);
        self.len -= 1;
        if self.len * 100 < self.cap * MIN_LOAD && self.cap > 64 {
            self.phased = false;
            self.resize(Self::cap_for(self.len), hash_of);
        }
        removed
    }

    /// Drops every position; the caller has freed or taken all entries.
    pub fn clear(&mut self) {
        *self = Table::empty(self.phase);
    }

    /// All occupied positions' entries (unordered).
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        self.words.iter().filter(|&w| w != 0).map(entry_of)
    }

    fn cap_for(len: usize) -> usize {
        (len * 100 / TARGET_LOAD).max(16)
    }

    /// Puts word `w` (of an entry with hash `h`) at the first empty position from `h`'s
    /// home; None if the probe runs off the end.
    fn place(&mut self, h: u64, w: u64) -> Option<usize> {
        let mut pos = self.home(h);
        while let Some(x) = self.words.get(pos) {
            if x == 0 {
                self.words.set(pos, w);
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
            self.words = Words::zeroed(new_cap + overflow_for(new_cap));
            // Rehashing reads every entry's key: a cache miss each. Prefetching the
            // entries a few positions ahead overlaps those misses (resize time is the
            // tail latency of a write that triggers it).
            const AHEAD: usize = 8;
            for (i, w) in old.iter().enumerate() {
                if let Some(next) = old.get(i + AHEAD) {
                    if next != 0 {
                        prefetch(addr_of(next));
                    }
                }
                if w == 0 {
                    continue;
                }
                if self.place(hash_of(entry_of(w)), w).is_none() {
                    new_cap += new_cap / 2 + 16;
                    continue 'retry;
                }
            }
            break;
        }
        // A mapping is returned to the kernel by its drop; only a jemalloc block leaves
        // dirty pages behind.
        let freed_block = !old.mapped && old.bytes() >= PURGE_AFTER_FREEING;
        drop(old);
        self.freed_large |= freed_block;
    }
}

/// Draws [`DrawsAhead`] keeps in flight at each of its two stages.
const AHEAD: usize = 4;

/// Uniform draws over a table's entries, as [`Table::random_occupied`] makes them, each
/// made [`AHEAD`] draws before it is handed out: a draw is two dependent cache misses
/// (its index word, then the header of the entry it names, which the caller reads at
/// once), and a caller that draws one at a time and stops where the entries it reads
/// tell it to (S3-FIFO's eviction: ~10 draws to find a small-queue entry at its 10 %
/// share) would otherwise wait for each miss in turn. A draw's word is fetched when it
/// is made; [`AHEAD`] draws later the word is read (an empty position is dropped, as
/// `random_occupied` redraws) and the entry's header fetched; [`AHEAD`] entries later it
/// is handed out. What it hands out is a sequence of independent uniform draws; what is
/// still in flight when the caller stops is dropped. The table must not change while
/// draws are being made (its borrow sees to that).
pub struct DrawsAhead<'a, R: ?Sized> {
    table: &'a Table,
    rng: &'a mut R,
    /// Drawn positions whose words are being fetched (all [`AHEAD`] of them once the
    /// table has entries), the oldest at `oldest_position`.
    positions: [usize; AHEAD],
    oldest_position: usize,
    /// Entries whose headers are being fetched, oldest at `entries_head`.
    entries: [Option<Entry>; AHEAD],
    entries_head: usize,
    entries_len: usize,
}

impl<'a, R: rand::Rng + ?Sized> DrawsAhead<'a, R> {
    pub fn new(table: &'a Table, rng: &'a mut R) -> Self {
        let mut positions = [0; AHEAD];
        if table.len > 0 {
            for pos in &mut positions {
                *pos = rng.gen_range(0..table.words.len());
                prefetch(table.words.addr_of_word(*pos));
            }
        }
        DrawsAhead {
            table,
            rng,
            positions,
            oldest_position: 0,
            entries: [None; AHEAD],
            entries_head: 0,
            entries_len: 0,
        }
    }

    /// The next uniformly drawn entry (None if the table is empty).
    pub fn next_entry(&mut self) -> Option<Entry> {
        if self.table.len == 0 {
            return None;
        }
        while self.entries_len < AHEAD {
            self.advance();
        }
        let e = self.entries[self.entries_head].take();
        self.entries_head = (self.entries_head + 1) % AHEAD;
        self.entries_len -= 1;
        self.advance();
        e
    }

    /// Moves the oldest drawn position on to the entry stage (if occupied), and draws
    /// a position in its place (the table has entries).
    #[inline]
    fn advance(&mut self) {
        let fresh = self.rng.gen_range(0..self.table.words.len());
        prefetch(self.table.words.addr_of_word(fresh));
        let pos = std::mem::replace(&mut self.positions[self.oldest_position], fresh);
        self.oldest_position = (self.oldest_position + 1) % AHEAD;
        if let Some(e) = self.table.at(pos) {
            prefetch(e.addr());
            self.entries[(self.entries_head + self.entries_len) % AHEAD] = Some(e);
            self.entries_len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The store's key hash of an entry.
    fn hash(e: Entry) -> u64 {
        crate::store::key_hash(e.key())
    }

    /// Entries `key:0` .. `key:{n-1}` (value `v`), inserted into `t`.
    fn fill(t: &mut Table, n: u32) -> Vec<Entry> {
        (0..n)
            .map(|i| {
                let e = Entry::new(0, format!("key:{i}").as_bytes(), b"v", None, 0);
                t.insert(hash(e), e, &hash);
                e
            })
            .collect()
    }

    /// Every one of `entries` entries was counted, each within `tolerance` (relative)
    /// of `expected`.
    fn assert_even(counts: &HashMap<u64, u32>, entries: usize, expected: f64, tolerance: f64) {
        assert_eq!(counts.len(), entries);
        for &n in counts.values() {
            let r = n as f64 / expected;
            assert!((r - 1.0).abs() <= tolerance, "{n} vs {expected}");
        }
    }

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

    /// Tables past [`MAP_FROM_BYTES`] live in page mappings of whole pages (counted by
    /// [`mapped_bytes`] while they live) and behave as the small ones do: 20 000 entries
    /// inserted, found and removed. (Other tests run in parallel and map tables too, so
    /// the counter is compared with this table's own share, not exactly.)
    #[test]
    fn large_tables_are_page_mappings_that_work_like_small_ones() {
        let mut t = Table::new();
        let all = fill(&mut t, 20_000);
        assert!(t.words.mapped);
        assert_eq!(t.heap_bytes() % PAGE_BYTES as u64, 0);
        assert!(t.words.len() >= t.cap + overflow_for(t.cap));
        assert!(mapped_bytes() >= t.heap_bytes());
        for (i, &e) in all.iter().enumerate() {
            let key = format!("key:{i}");
            let pos = t.find(hash(e), |x| x.key() == key.as_bytes());
            assert_eq!(pos.and_then(|p| t.at(p)).map(|x| x.addr()), Some(e.addr()));
        }
        for &e in &all[..19_000] {
            let pos = t.find(hash(e), |x| x.addr() == e.addr()).unwrap();
            t.remove(pos, &hash).free();
        }
        // Shrunk below the mapping threshold: a jemalloc block again.
        assert_eq!(t.len(), 1000);
        assert!(!t.words.mapped);
        for &e in &all[19_000..] {
            assert!(t.find(hash(e), |x| x.addr() == e.addr()).is_some());
        }
        t.clear();
        all[19_000..].iter().for_each(|&e| e.free());
    }

    /// Tables filled alike grow at different key counts (their phases), so at any count
    /// their sizes are spread over a growth step instead of all equal: 64 tables of
    /// 15 625 entries (a store's shards at 1M keys) have at least 8 distinct capacities,
    /// and their mean bytes per entry is near the staggered average (~7.6), away from a
    /// single table's extremes (6.8 just before a growth, 8.5 just after).
    #[test]
    fn tables_filled_alike_grow_at_staggered_counts() {
        let entries: Vec<Entry> = (0..15_625u32)
            .map(|i| Entry::new(0, format!("key:{i}").as_bytes(), b"v", None, 0))
            .collect();
        let mut caps = Vec::new();
        let mut bytes = 0u64;
        for _ in 0..64 {
            // The tables index the same entries; they own none of them.
            let mut t = Table::new();
            for &e in &entries {
                t.insert(hash(e), e, &hash);
            }
            caps.push(t.cap);
            bytes += t.heap_bytes();
        }
        entries.into_iter().for_each(Entry::free);
        caps.sort_unstable();
        caps.dedup();
        assert!(caps.len() >= 8, "{caps:?}");
        let per_entry = bytes as f64 / (64.0 * 15_625.0);
        assert!((7.1..=8.2).contains(&per_entry), "{per_entry}");
    }

    /// A word names a slab slot (11-bit tag, offset in the region) or a jemalloc block
    /// (4-bit tag, address / 16); replacing an entry by one of the other kind (a short
    /// value grown past 255 bytes, and back) re-tags the word, and lookups find it each
    /// time, among 2 000 neighbours of both kinds.
    #[test]
    fn words_name_slab_slots_and_jemalloc_blocks_alike() {
        let mut t = Table::new();
        let mut all = Vec::new();
        for i in 0..2000u32 {
            let value = vec![b'v'; if i % 2 == 0 { 10 } else { 300 }];
            let e = Entry::new(0, format!("key:{i}").as_bytes(), &value, None, 0);
            t.insert(hash(e), e, &hash);
            all.push(e);
        }
        let slab_words = t.words.iter().filter(|&w| w & SLAB_BIT != 0).count();
        if crate::slab::region_offset(all[0].addr()).is_some() {
            assert_eq!(slab_words, 1000);
        }
        let key = b"key:7";
        let h = hash(all[7]);
        let mut current = all[7];
        for len in [20usize, 400, 30, 500] {
            let pos = t.find(h, |e| e.key() == key).expect("present");
            let fresh = Entry::new(0, key, &vec![b'w'; len], None, 0);
            t.replace(pos, fresh, &hash);
            current.free();
            current = fresh;
            let pos = t.find(h, |e| e.key() == key).expect("still present");
            assert_eq!(t.at(pos).map(|e| e.value().len()), Some(len));
        }
        all[7] = current;
        for (i, &e) in all.iter().enumerate() {
            let k = format!("key:{i}");
            assert!(
                t.find(hash(e), |x| x.key() == k.as_bytes()).is_some(),
                "{k}"
            );
        }
        t.clear();
        all.into_iter().for_each(Entry::free);
    }

    /// Every entry lies in a sampling window equally often, whatever runs of empty
    /// positions precede it (clusters and gaps below): over 200 entries, 100 000
    /// windows put every entry within 20 % of its expected count
    /// (100 000 x WINDOW / positions, ~2 000 here, so about 9 standard deviations); a
    /// window never yields an entry twice, and wraps from the last position to the first.
    #[test]
    fn windows_cover_every_entry_equally() {
        use rand::SeedableRng;
        let mut t = Table::new();
        let all = fill(&mut t, 200);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut counts: HashMap<u64, u32> = HashMap::new();
        let windows = 100_000u32;
        for _ in 0..windows {
            let start = t.window_start(&mut rng).unwrap();
            let mut seen: Vec<u64> = window(&t, start).iter().map(|e| e.addr()).collect();
            let n = seen.len();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), n, "an entry twice in one window");
            for a in seen {
                *counts.entry(a).or_default() += 1;
            }
        }
        let expected = windows as f64 * WINDOW as f64 / t.positions() as f64;
        assert_even(&counts, 200, expected, 0.2);
        // The last position's window goes on from position 0.
        let last = t.positions() - 1;
        let wrapped = window(&t, last);
        let expect: Vec<Entry> = std::iter::once(last)
            .chain(0..WINDOW - 1)
            .filter_map(|p| t.at(p))
            .collect();
        assert_eq!(wrapped, expect);
        assert!(Table::new().window_start(&mut rng).is_none());
        t.clear();
        all.into_iter().for_each(Entry::free);
    }

    /// The entries of [`Table::window_addrs`] (its non-zero addresses).
    fn window(t: &Table, start: usize) -> Vec<Entry> {
        let addrs = t.window_addrs(start);
        addrs
            .into_iter()
            .filter(|&(_, a)| a != 0)
            .map(|(_, a)| Entry::from_addr(a))
            .collect()
    }

    /// A window decodes each position as [`Table::at`] does, for both kinds of word
    /// (slab slots and jemalloc blocks: values of 255 bytes or fewer and longer), from
    /// every start, in a table smaller than a window and in a larger one.
    #[test]
    fn windows_decode_both_kinds_of_word() {
        for n in [3u32, 300] {
            let mut t = Table::new();
            let all: Vec<Entry> = (0..n)
                .map(|i| {
                    let value = vec![b'v'; if i % 3 == 0 { 1000 } else { 10 }];
                    let e = Entry::new(0, format!("key:{i}").as_bytes(), &value, None, 0);
                    t.insert(hash(e), e, &hash);
                    e
                })
                .collect();
            let slab = all
                .iter()
                .filter(|e| crate::slab::region_offset(e.addr()).is_some());
            assert!(slab.count() > 0, "some entries in slab slots");
            let positions = t.positions();
            for start in 0..positions {
                let expect: Vec<(usize, u64)> = (0..WINDOW.min(positions))
                    .map(|i| (start + i) % positions)
                    .map(|p| (p, t.at(p).map_or(0, Entry::addr)))
                    .collect();
                assert_eq!(t.window_addrs(start)[..expect.len()], expect[..], "{start}");
                assert!(t.window_addrs(start)[expect.len()..]
                    .iter()
                    .all(|&(_, a)| a == 0));
            }
            t.clear();
            all.into_iter().for_each(Entry::free);
        }
    }

    /// Draws made ahead are uniform over the entries as `random_occupied`'s are: over
    /// 200 entries in clusters and gaps, 200 000 draws (in runs of 1 to 12 from a fresh
    /// `DrawsAhead`, as S3-FIFO's evictions stop) put every entry within 25 % of its
    /// expected 1 000 (about 8 standard deviations); an empty table draws nothing.
    #[test]
    fn draws_made_ahead_are_uniform_over_entries() {
        use rand::{Rng, SeedableRng};
        let mut t = Table::new();
        let all = fill(&mut t, 200);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        let mut counts: HashMap<u64, u32> = HashMap::new();
        let mut drawn = 0;
        while drawn < 200_000 {
            let run = rng.gen_range(1..=12);
            let mut stop_rng = rand::rngs::SmallRng::seed_from_u64(drawn as u64);
            let mut ahead = DrawsAhead::new(&t, &mut stop_rng);
            for _ in 0..run {
                let e = ahead.next_entry().expect("an entry");
                *counts.entry(e.addr()).or_default() += 1;
                drawn += 1;
            }
        }
        assert_even(&counts, 200, 1000.0, 0.25);
        let empty = Table::new();
        assert!(DrawsAhead::new(&empty, &mut rng).next_entry().is_none());
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
        let all = fill(&mut t, 200);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for _ in 0..200_000 {
            let pos = t.random_position(&mut rng).unwrap();
            let pos = t.occupied_from(pos, &mut rng);
            let e = t.at(pos).expect("an occupied position");
            *counts.entry(e.addr()).or_default() += 1;
        }
        assert_even(&counts, 200, 1000.0, 0.25);
        assert!(Table::new().random_position(&mut rng).is_none());
        t.clear();
        all.into_iter().for_each(Entry::free);
    }
}
