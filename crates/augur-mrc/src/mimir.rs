//! MIMIR: approximate LRU hit-rate curves from a bucketed LRU stack (Saemundsson et al.,
//! SoCC'14, §2-3).
//!
//! The LRU stack (the cached items, then the ghosts of recently evicted ones, §2.4) is
//! cut into `B` buckets. An element only remembers which bucket it is in (its *rank*
//! tag); elements in a higher bucket are more recent than those in a lower one, but
//! order inside a bucket is unknown. A hit on an element of a bucket whose more recent
//! neighbours hold `start` elements and which itself holds `end - start` is therefore
//! counted as `1 / (end - start)` hit at each distance in `(start, end]` (§2.3, Fig. 2;
//! Algorithm B `update-HRC`), and the element moves to the head bucket. When the head
//! bucket holds its fair share `N / B` it is *aged* (§3.3):
//! - **ROUNDER** (Algorithm D) folds the tail bucket into the next one and advances the
//!   circular `tail` index, an O(1) change of frame of reference; elements whose rank
//!   fell below `tail` are lazily mapped to the tail bucket when next touched.
//! - **STACKER** (Algorithm C) shifts every element whose bucket is at or above the one
//!   holding the average recently-hit stack distance down by one bucket: O(N) per aging,
//!   more faithful to LRU (see [`Mimir`]'s `age_stacker` for our choice of merge point).
//!
//! Corrections to Figure 4's pseudocode, which has typos: HIT must *decrement* the old
//! bucket (line 8 reads "+ 1"); STACKER shifts the buckets *above* the average distance
//! (`i >= b`, toward the tail), not those below it (`i <= b` would underflow bucket 0).
//!
//! **Variable sizes** (§3.7): bucket counts and the fair share are kept in the model's
//! unit (objects, or bytes = "pages" of one byte). The distance of a hit on an element of
//! `s` units is the total size of the elements above it plus its own, which lies in
//! `[start + s, end]`; the hit is spread uniformly over that range. Augur's curves are
//! request miss ratios against bytes, so a hit weighs 1 whatever its size (the paper's
//! `p / (end - start)` would give a byte hit ratio instead).
//!
//! **Ghosts** (§2.4): evicted keys stay in the stack, in the bucket they were in, as
//! dataless ghosts, up to `ghost_capacity` units; a reference to a ghost is a cache miss
//! that is counted as a hit at its estimated distance (beyond the cache size), so the
//! curve extends to `capacity + ghost_capacity`. The oldest ghosts are dropped first.
//!
//! **Ghost filters** (§2.4, §4): [`GhostMode::Filters`] keeps the ghosts in a queue of
//! counting Bloom filters instead ([`crate::ghost_filter`]): ~5 bytes per ghost instead
//! of ~40, at the price of false positives and of one filter's width as the resolution
//! of ghost distances. The `B` buckets then partition the cached elements only.
//!
//! **Layout** (for speed: most requests of a large cache miss, so one costs a table
//! probe, an insert, an eviction to the ghost list and a ghost drop): per key a 24-byte
//! slab record (key, list links, rank tag with the ghost/free flags, size in units), no heap
//! allocation; an open-addressing table of 8-byte cells maps keys to slab slots in one
//! probe sequence; one intrusive recency list through the slab holds the cached
//! elements and, below the LRU one, the ghosts, so evicting the LRU element to a ghost
//! moves a boundary and no link; the next victims and the next ghost's table cell are
//! prefetched.
//!
//! **Output**: DELTA of Algorithm B is kept as a piecewise-linear difference array: a
//! hit uniform on `(a, b]` adds slope `1/(b-a)` at `a` and removes it at `b`, so the
//! hit-rate curve at any bin boundary is exact (§3.1 `export-HRC`). §3.7's adaptive
//! profiling (multiply DELTA by `gamma` per epoch) is [`Mimir::decay`]. §3.6's bound on
//! the MAE (2/(N R) x the sum of the hit bucket widths, Theorem 1) is
//! [`Mimir::mae_bound`].

use crate::curve::{Curve, Point, SizeUnit};
use crate::ghost_filter::GhostFilters;
use crate::MrcModel;

/// MIMIR's aging policy (§3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aging {
    /// Algorithm D: O(1) aging by rotating the circular bucket array.
    Rounder,
    /// Algorithm C: shift the buckets above the average hit distance down by one.
    Stacker,
}

/// How to build a [`Mimir`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MimirConfig {
    /// Number of buckets `B` (at least 2).
    pub buckets: usize,
    pub aging: Aging,
    /// Capacity of the cache being profiled, in `unit`.
    pub capacity: u64,
    /// Capacity of the ghost list, in `unit` (0: no ghosts, the curve stops at the
    /// cache size). The paper's set-up for "what if the cache were larger" is a ghost
    /// list as large as the cache.
    pub ghost_capacity: u64,
    pub unit: SizeUnit,
}

/// Where MIMIR keeps its ghosts (§2.4). Chosen with [`Mimir::with_ghost_mode`] /
/// [`MimirLru::with_ghost_mode`] (a separate argument rather than a [`MimirConfig`]
/// field, so the struct literals that build configurations stay valid); [`Mimir::new`]
/// uses the list.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum GhostMode {
    /// Ghosts are dataless elements of the bucketed stack, below the cached ones, up to
    /// `ghost_capacity` units: exact recency order between buckets, ~40 bytes a ghost.
    #[default]
    List,
    /// "Ghost filters": `ghost_capacity` is split evenly over `filters` counting Bloom
    /// filters ([`GhostFilters`]), each a ghost bucket, sized for a false-positive rate
    /// of `fp_rate` when full. An evicted element leaves its bucket and the stack, and
    /// its key goes into the head filter; a miss on a key found in the filter at
    /// position `j` from the head is counted as a hit spread over the distances
    /// `(cached + above_j, cached + above_j + count_j]` and removed from the filter.
    /// The `B` buckets partition only the cached elements (fair share
    /// `capacity / B`). With `ghost_capacity = 0` this is the same as `List`.
    Filters { filters: usize, fp_rate: f64 },
}

impl GhostMode {
    /// [`GhostMode::Filters`] with `filters` filters at false-positive rate `fp_rate`.
    pub fn filters(filters: usize, fp_rate: f64) -> Self {
        GhostMode::Filters { filters, fp_rate }
    }
}

impl MimirConfig {
    /// `B` buckets, a cache of `capacity` objects and as many ghosts.
    pub fn objects(buckets: usize, aging: Aging, capacity: u64) -> Self {
        Self {
            buckets,
            aging,
            capacity,
            ghost_capacity: capacity,
            unit: SizeUnit::Objects,
        }
    }
}

const NIL: u32 = u32::MAX;

/// `Entry::tag` bits: the element is a ghost; the slot is free; the rest is the rank.
const GHOST: u32 = 1 << 31;
const FREE: u32 = 1 << 30;
const RANK: u32 = FREE - 1;
/// ROUNDER's `tail` only grows; when it reaches this, every rank is rebased down by a
/// multiple of the bucket array's length (an O(slab) pass once per 2^29 agings), so
/// ranks fit in 30 bits.
const REBASE_AT: u32 = 1 << 29;

/// One tracked key (cached or ghost): 24 bytes, no heap allocation. `prev`/`next` link
/// it into the stack's recency list (`next` also chains free slots).
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    prev: u32,
    next: u32,
    /// Rank (bucket tag, §3.1 (1)) in the low 30 bits, plus `GHOST` / `FREE`.
    tag: u32,
    /// Size in the model's unit: 1 for object curves (whatever the bytes), the size
    /// in bytes for byte curves. Stored as the cost so the request path never asks
    /// which unit it is in.
    units: u32,
}

impl Entry {
    #[inline]
    fn ghost(&self) -> bool {
        self.tag & GHOST != 0
    }
}

/// A vector whose every index is in range by construction, so indexing skips the
/// bounds check: these checks were ~15% of MIMIR's instructions per request (by
/// callgrind), being on every step of the request path. Each use states its invariant,
/// and every access `debug_assert!`s it, so the test suite (debug builds) checks it:
/// - the slab of [`Entry`] records, indexed by slot number: a slot number is only
///   stored (table cell, list link, `lru`, free chain) after `alloc` made it, the slab
///   never shrinks, and `NIL` is compared against before it would be an index;
/// - the table's cells: every index is a home cell `h >> shift`, below
///   `2^(32 - shift)` = the length, or is reduced `& mask` = length - 1;
/// - the bucket sizes: every index is `idx(rank)` = `rank & mask`, the length minus one.
#[derive(Debug, Clone, Default)]
struct Dense<T>(Vec<T>);

impl<T> std::ops::Index<usize> for Dense<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        debug_assert!(i < self.0.len(), "index {i} out of range");
        // SAFETY: every index used is below the length (see the type's docs).
        unsafe { self.0.get_unchecked(i) }
    }
}

impl<T> std::ops::IndexMut<usize> for Dense<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.0.len(), "index {i} out of range");
        // SAFETY: as for `Index`.
        unsafe { self.0.get_unchecked_mut(i) }
    }
}

impl<T> std::ops::Index<u32> for Dense<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, i: u32) -> &T {
        &self[i as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Dense<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self[i as usize]
    }
}

/// The records of the tracked keys, indexed by slot number.
type Slab = Dense<Entry>;

/// A doubly linked list through `Entry::prev/next`, head = most recent.
#[derive(Debug, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };
}

/// 32 well-mixed bits of a `u64` key: one 64x64->128 multiply, folded.
#[inline]
fn hash32(key: u64) -> u32 {
    let p = u128::from(key ^ 0x2d35_8dcc_aa6c_78a5).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let f = (p >> 64) as u64 ^ p as u64;
    (f >> 32) as u32
}

/// Asks the CPU to start loading `r`'s cache line (a hint; no effect elsewhere than
/// x86_64).
#[inline(always)]
fn prefetch<T>(r: &T) {
    prefetch_ptr(r as *const T);
}

/// [`prefetch`] of a raw address, which may be anything: a prefetch never faults.
#[inline(always)]
fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache and never faults, whatever the
    // address; its sole requirement is SSE, part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Key -> slab slot index: open addressing with linear probing over 8-byte cells
/// `hash32 << 32 | slot` (the key itself is checked in the slab, which the caller reads
/// next anyway), so a lookup-or-insert is one probe sequence, usually one cache line.
/// The home cell is the hash's top bits; deletion shifts later cells back (no
/// tombstones). Load is kept at most 4/5.
#[derive(Debug, Clone)]
struct Table {
    cells: Dense<u64>,
    shift: u32,
    mask: usize,
    len: usize,
}

const EMPTY: u64 = u64::MAX;

impl Table {
    fn with_keys(keys: usize) -> Self {
        let cap = (2 * keys + 1).next_power_of_two().max(16);
        Self {
            cells: Dense(vec![EMPTY; cap]),
            shift: 32 - cap.trailing_zeros(),
            mask: cap - 1,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, h: u32) -> usize {
        (h >> self.shift) as usize
    }

    /// `Ok(cell)` holding `key`, or `Err(cell)`: the empty cell where it would go.
    #[inline]
    fn find(&self, key: u64, h: u32, slab: &Slab) -> Result<usize, usize> {
        let mut i = self.home(h);
        loop {
            let c = self.cells[i];
            if c == EMPTY {
                return Err(i);
            }
            if (c >> 32) as u32 == h && slab[c as u32].key == key {
                return Ok(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The cell of the live `slot`, whose key hashes to `h` (compares slot numbers, so
    /// reads no slab record).
    #[inline]
    fn find_slot(&self, h: u32, slot: u32) -> usize {
        let want = u64::from(h) << 32 | u64::from(slot);
        let mut i = self.home(h);
        loop {
            let c = self.cells[i];
            if c == want {
                return i;
            }
            assert!(c != EMPTY, "a live slot's key is in the table");
            i = (i + 1) & self.mask;
        }
    }

    #[inline]
    fn slot(&self, cell: usize) -> u32 {
        self.cells[cell] as u32
    }

    /// Fills the empty `cell` returned by [`Table::find`].
    #[inline]
    fn insert_at(&mut self, cell: usize, h: u32, slot: u32) {
        self.cells[cell] = u64::from(h) << 32 | u64::from(slot);
        self.len += 1;
        if self.len * 5 > self.cells.0.len() * 4 {
            self.grow();
        }
    }

    /// Empties `cell`, shifting back the cells of its probe run.
    #[inline]
    fn remove_at(&mut self, cell: usize) {
        let mut hole = cell;
        let mut j = cell;
        loop {
            j = (j + 1) & self.mask;
            let c = self.cells[j];
            if c == EMPTY {
                break;
            }
            let home = self.home((c >> 32) as u32);
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(hole) & self.mask) {
                self.cells[hole] = c;
                hole = j;
            }
        }
        self.cells[hole] = EMPTY;
        self.len -= 1;
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.cells.0);
        let cap = old.len() * 2;
        self.cells = Dense(vec![EMPTY; cap]);
        self.shift = 32 - cap.trailing_zeros();
        self.mask = cap - 1;
        for c in old.into_iter().filter(|&c| c != EMPTY) {
            let mut i = self.home((c >> 32) as u32);
            while self.cells[i] != EMPTY {
                i = (i + 1) & self.mask;
            }
            self.cells[i] = c;
        }
    }
}

/// The hit histogram: piecewise-linear DELTA over bins of width `g` up to the covered
/// size (see the module docs).
#[derive(Debug, Clone)]
struct Delta {
    g: f64,
    /// Per bin, (slope, offset) side by side so a kink touches one cache line.
    bins: Vec<[f64; 2]>,
}

impl Delta {
    /// Bins at most; object curves up to this size are kept at every integer size.
    const MAX_BINS: u64 = 1 << 16;

    fn new(cover: u64) -> Self {
        let cover = cover.max(1);
        let bins = cover.min(Self::MAX_BINS);
        Self {
            g: cover as f64 / bins as f64,
            bins: vec![[0.0; 2]; bins as usize],
        }
    }

    #[inline]
    fn kink(&mut self, at: f64, c: f64) {
        let i = (at / self.g) as usize;
        if let Some(bin) = self.bins.get_mut(i) {
            bin[0] += c;
            bin[1] += c * at;
        }
    }

    /// One hit spread uniformly over `(a, b]`.
    #[inline]
    fn add(&mut self, a: f64, b: f64, w: f64) {
        let c = w / (b - a);
        self.kink(a, c);
        self.kink(b, -c);
    }

    /// Cumulative hits at each bin's upper boundary.
    fn cumulative(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let (mut s, mut o) = (0.0, 0.0);
        self.bins.iter().enumerate().map(move |(i, &[c, d])| {
            s += c;
            o += d;
            let x = (i + 1) as f64 * self.g;
            (x, x * s - o)
        })
    }

    fn scale(&mut self, f: f64) {
        self.bins.iter_mut().flatten().for_each(|v| *v *= f);
    }
}

/// MIMIR's HRC estimator with its ghost list, driven by a cache through the paper's
/// HIT / MISS / INSERT / DELETE upcalls (§2.1, Fig. 1): [`Mimir::hit`],
/// [`Mimir::miss`], [`Mimir::insert`], [`Mimir::evict`] and [`Mimir::delete`], plus
/// [`Mimir::miss_insert`] (MISS then INSERT of the same key in one table probe).
///
/// MIMIR keeps its own rank tags in a slab indexed through an open-addressing table
/// (the solid-line variant of Fig. 1); [`MimirLru`] reuses the same slab as its LRU
/// cache so a request costs one table probe (plus one to forget the oldest ghost).
#[derive(Debug, Clone)]
pub struct Mimir {
    cfg: MimirConfig,
    b: u32,
    /// `P - 1`, where `P` is the length of `buckets`: B rounded up to a power of two.
    mask: u32,
    /// Per-bucket sizes, indexed by `rank mod P` (`rank & mask`). The live ranks are
    /// the B consecutive `tail..=tail + B - 1`, so any modulus >= B maps them to
    /// distinct entries; a power of two makes the index a mask, with no division or
    /// branch on the request path. The `P - B` other entries are zero.
    buckets: Dense<u64>,
    tail: u32,
    share: u64,
    objects: bool,
    delta: Delta,
    /// References counted (hits, ghost hits and misses).
    requests: f64,
    /// Sum over hits of the hit bucket's width (Theorem 1).
    width_sum: f64,
    /// STACKER: sum and count of hit distances since the last aging round.
    avg_sum: f64,
    avg_n: u64,
    avg_dist: f64,
    table: Table,
    slab: Slab,
    /// Head of the free-slot chain (through `Entry::next`).
    free: u32,
    /// The stack as one recency list (§2.4: the ghosts continue the LRU stack below
    /// the cached elements): cached elements from the head down to `lru`, then the
    /// ghosts, oldest at the tail. Evicting the LRU element to a ghost only moves
    /// `lru` up by one, and no list link changes.
    stack: List,
    /// The least recently used cached element; NIL when nothing is cached.
    lru: u32,
    cached_used: u64,
    ghost_used: u64,
    /// [`GhostMode::Filters`] with ghosts: (filters, false-positive rate).
    filter_spec: Option<(usize, f64)>,
    /// The ghost filters, built at the first eviction (for byte units the filters are
    /// sized in keys from the mean size of the cached elements then).
    filters: Option<GhostFilters>,
}

impl Mimir {
    /// MIMIR with its ghosts on a list ([`GhostMode::List`]).
    pub fn new(cfg: MimirConfig) -> Self {
        Self::with_ghost_mode(cfg, GhostMode::List)
    }

    /// MIMIR with its ghosts kept as `ghosts` says.
    pub fn with_ghost_mode(cfg: MimirConfig, ghosts: GhostMode) -> Self {
        let filter_spec = match ghosts {
            GhostMode::Filters { filters, fp_rate } if cfg.ghost_capacity > 0 => {
                Some((filters.max(1), fp_rate))
            }
            _ => None,
        };
        let b = cfg.buckets.clamp(2, 1 << 20) as u32;
        let cover = cfg.capacity + cfg.ghost_capacity;
        // The stack the buckets partition: cached elements and ghosts, or with ghost
        // filters the cached elements only.
        let stack = if filter_spec.is_some() {
            cfg.capacity
        } else {
            cover
        };
        let objects = cfg.unit == SizeUnit::Objects;
        // Objects: the table never holds more than the stack + 1 keys; bytes: start
        // small and grow.
        let keys = if objects {
            stack.saturating_add(2).min(1 << 24) as usize
        } else {
            1024
        };
        Self {
            cfg,
            b,
            mask: b.next_power_of_two() - 1,
            buckets: Dense(vec![0; b.next_power_of_two() as usize]),
            // ROUNDER advances it; STACKER keeps it at bucket 0 (§3.3).
            tail: 0,
            share: stack.div_ceil(u64::from(b)).max(1),
            objects,
            delta: Delta::new(cover),
            requests: 0.0,
            width_sum: 0.0,
            avg_sum: 0.0,
            avg_n: 0,
            avg_dist: 0.0,
            table: Table::with_keys(keys),
            // Objects: at most `keys` slots, allocated once (no doubling slack).
            slab: Dense(Vec::with_capacity(if objects { keys } else { 0 })),
            free: NIL,
            stack: List::EMPTY,
            lru: NIL,
            cached_used: 0,
            ghost_used: 0,
            filter_spec,
            filters: None,
        }
    }

    /// Where the ghosts are kept ([`GhostMode::List`] also when there are no ghosts).
    pub fn ghost_mode(&self) -> GhostMode {
        match self.filter_spec {
            Some((filters, fp_rate)) => GhostMode::Filters { filters, fp_rate },
            None => GhostMode::List,
        }
    }

    /// The ghost filters ([`GhostMode::Filters`], from the first eviction on).
    pub fn ghost_filters(&self) -> Option<&GhostFilters> {
        self.filters.as_ref()
    }

    pub fn config(&self) -> &MimirConfig {
        &self.cfg
    }

    /// Cache size plus ghost size: the largest size the curve covers.
    pub fn covered_size(&self) -> u64 {
        self.cfg.capacity + self.cfg.ghost_capacity
    }

    /// Size of the cached elements known to MIMIR, in the unit.
    pub fn cached_used(&self) -> u64 {
        self.cached_used
    }

    /// Size of the ghosts, in the unit (with ghost filters: the filters' counts).
    pub fn ghost_used(&self) -> u64 {
        self.ghost_used + self.filters.as_ref().map_or(0, GhostFilters::total)
    }

    /// Number of tracked keys (cached and ghosts).
    pub fn tracked_keys(&self) -> usize {
        self.table.len
    }

    /// Bytes of heap memory held by the per-key structures (slab of 24-byte records
    /// and the 8-byte-cell table), from their capacities.
    pub fn key_heap_bytes(&self) -> usize {
        self.slab.0.capacity() * std::mem::size_of::<Entry>() + self.table.cells.0.len() * 8
    }

    /// Bytes of heap memory held by all the tracking structures: per-key ones plus
    /// DELTA, the buckets and the ghost filters if any.
    pub fn heap_bytes(&self) -> usize {
        self.key_heap_bytes()
            + self.delta.bins.len() * 16
            + self.buckets.0.len() * 8
            + self.filters.as_ref().map_or(0, GhostFilters::heap_bytes)
    }

    /// An element of `size` bytes, in the model's unit.
    #[inline]
    fn units(&self, size: u32) -> u32 {
        if self.objects {
            1
        } else {
            size
        }
    }

    /// Index in `buckets` of the bucket with rank tag `rank` (`rank mod P`).
    #[inline]
    fn idx(&self, rank: u32) -> usize {
        (rank & self.mask) as usize
    }

    #[inline]
    fn head_rank(&self) -> u32 {
        self.tail + self.b - 1
    }

    // ---- slab and linked lists ---------------------------------------------------

    /// Takes `slot` out of the stack list (moving `lru` up if it was the LRU cached
    /// element).
    #[inline(always)]
    fn unlink(&mut self, slot: u32) {
        let e = self.slab[slot];
        if slot == self.lru {
            self.lru = e.prev;
        }
        if e.prev == NIL {
            self.stack.head = e.next;
        } else {
            self.slab[e.prev].next = e.next;
        }
        if e.next == NIL {
            self.stack.tail = e.prev;
        } else {
            self.slab[e.next].prev = e.prev;
        }
    }

    /// Puts the cached element `slot` (out of the list) at the head of the stack list.
    #[inline(always)]
    fn push_front(&mut self, slot: u32) {
        let old = self.stack.head;
        self.stack.head = slot;
        if old == NIL {
            self.stack.tail = slot;
        } else {
            self.slab[old].prev = slot;
        }
        if self.lru == NIL {
            self.lru = slot;
        }
        let e = &mut self.slab[slot];
        e.prev = NIL;
        e.next = old;
    }

    /// Puts `slot` (out of the list) just below the LRU cached element: the most
    /// recent ghost. Needs a cached element (`lru != NIL`).
    #[inline]
    fn insert_below_lru(&mut self, slot: u32) {
        let at = self.lru;
        debug_assert_ne!(at, NIL, "a cached element other than `slot` exists");
        let next = self.slab[at].next;
        self.slab[at].next = slot;
        if next == NIL {
            self.stack.tail = slot;
        } else {
            self.slab[next].prev = slot;
        }
        let e = &mut self.slab[slot];
        e.prev = at;
        e.next = next;
    }

    /// A slot for `key` (not entered in the table), reusing a freed one if any.
    #[inline]
    fn alloc(&mut self, key: u64, units: u32) -> u32 {
        let e = Entry {
            key,
            prev: NIL,
            next: NIL,
            tag: 0,
            units,
        };
        if self.free != NIL {
            let s = self.free;
            self.free = self.slab[s].next;
            self.slab[s] = e;
            s
        } else {
            self.slab.0.push(e);
            (self.slab.0.len() - 1) as u32
        }
    }

    /// Frees `slot`, whose key is in table cell `cell`.
    #[inline]
    fn release_at(&mut self, slot: u32, cell: usize) {
        self.table.remove_at(cell);
        let e = &mut self.slab[slot];
        e.tag = FREE;
        e.next = self.free;
        self.free = slot;
    }

    /// Frees `slot`, looking its key up in the table.
    #[inline(always)]
    fn release(&mut self, slot: u32) {
        let cell = self.table.find_slot(hash32(self.slab[slot].key), slot);
        self.release_at(slot, cell);
    }

    // ---- the bucketed stack (Algorithm B) ----------------------------------------

    /// ROUNDER's lazy fix-up (Algorithm B lines 3-4): a rank below `tail` means the
    /// tail bucket.
    #[inline]
    fn current_rank(&mut self, slot: u32) -> u32 {
        let tail = self.tail;
        let e = &mut self.slab[slot];
        let r = e.tag & RANK;
        if r < tail {
            e.tag = (e.tag & !RANK) | tail;
            tail
        } else {
            r
        }
    }

    /// Sum of `n` consecutive buckets of the circular array from index `i`, as (at
    /// most) two contiguous slices, which the compiler vectorises.
    #[inline]
    fn circ_sum(&self, i: usize, n: usize) -> u64 {
        let buckets = &self.buckets.0;
        let bm = buckets.len();
        if i + n <= bm {
            buckets[i..i + n].iter().sum()
        } else {
            buckets[i..].iter().sum::<u64>() + buckets[..i + n - bm].iter().sum::<u64>()
        }
    }

    /// `get-stack-dist`: sizes of the buckets above `rank`'s and of its own. Sums from
    /// whichever end of the circular array is nearer, so it reads at most B/2 buckets.
    #[inline]
    fn stack_dist(&self, rank: u32) -> (u64, u64) {
        let i = self.idx(rank);
        let own = self.buckets[i];
        let above_n = (self.head_rank() - rank) as usize;
        let start = if above_n <= self.b as usize / 2 {
            // The next index round the circle, without a division.
            let next = if i + 1 == self.buckets.0.len() {
                0
            } else {
                i + 1
            };
            self.circ_sum(next, above_n)
        } else {
            let below_n = (rank - self.tail) as usize;
            let below = self.circ_sum(self.idx(self.tail), below_n);
            self.stack_total() - below - own
        };
        (start, start + own)
    }

    #[inline]
    fn stack_total(&self) -> u64 {
        self.cached_used + self.ghost_used
    }

    /// Records the hit of the element in `slot` (cached or ghost) at its estimated
    /// distance and takes it out of its bucket.
    fn record_hit(&mut self, slot: u32) {
        let rank = self.current_rank(slot);
        let cost = u64::from(self.slab[slot].units);
        let (start, end) = self.stack_dist(rank);
        self.record_hit_at(start, end, cost);
        let i = self.idx(rank);
        self.buckets[i] -= cost;
    }

    /// `update-HRC` for a hit on an element of `cost` units among the elements at
    /// distances `(start, end]`: its distance (counting the element itself) is in
    /// `[start + cost, end]`; the hit is spread uniformly over the integer sizes there,
    /// i.e. over `(start + cost - 1, end]`. Also counts the width for Theorem 1 and the
    /// distance for STACKER's average.
    #[inline]
    pub(crate) fn record_hit_at(&mut self, start: u64, end: u64, cost: u64) {
        let a = (start + cost - 1) as f64;
        let b = end.max(start + cost) as f64;
        self.delta.add(a, b, 1.0);
        self.width_sum += b - a;
        if self.cfg.aging == Aging::Stacker {
            self.avg_sum += 0.5 * (a + b);
            self.avg_n += 1;
        }
    }

    /// With ghost filters, a reference to `key`, which is not cached: if a filter
    /// reports it, it is counted as a hit at its ghost distance (below the cached
    /// elements and the ghosts of the more recent filters, among its own filter's) and
    /// removed from that filter. `size` is the referenced size if known (else the
    /// filter's mean). Returns whether it was a ghost hit.
    #[inline]
    fn filter_ghost_hit(&mut self, key: u64, size: Option<u32>) -> bool {
        if self.filters.is_none() {
            return false;
        }
        self.filter_ghost_hit_in_filters(key, size)
    }

    #[inline(never)]
    fn filter_ghost_hit_in_filters(&mut self, key: u64, size: Option<u32>) -> bool {
        let objects = self.objects;
        let Some(f) = self.filters.as_mut() else {
            return false;
        };
        let Some(pos) = f.position(key) else {
            return false;
        };
        let above = f.count_above(pos);
        let own = f.count(pos);
        let cost = match size {
            _ if objects => 1,
            Some(s) => u64::from(s),
            None => f.mean_units(pos),
        };
        f.remove_at(pos, key, cost);
        let start = self.cached_used + above;
        self.record_hit_at(start, start + own, cost);
        true
    }

    /// With ghost filters: the evicted `key` of `cost` units enters the head filter
    /// (the filters are built at the first eviction).
    fn filter_insert(&mut self, key: u64, cost: u64) {
        if self.filters.is_none() {
            let (filters, fp_rate) = self.filter_spec.expect("ghost filters configured");
            let per_filter = (self.cfg.ghost_capacity / filters as u64).max(1);
            // Keys per filter: its capacity over the mean size of the cached elements
            // (the evicted one included), 1 for object units.
            let cached = self.table.len.max(1) as u64;
            let mean = ((self.cached_used + cost) as f64 / cached as f64).max(1.0);
            let expected = (per_filter as f64 / mean).ceil() as usize;
            self.filters = Some(GhostFilters::new(filters, per_filter, expected, fp_rate));
        }
        if let Some(f) = self.filters.as_mut() {
            f.insert_units(key, cost);
        }
    }

    /// Puts the element in `slot` (already out of any bucket) into the head bucket,
    /// aging first if the head bucket holds its fair share (Algorithm B lines 9-13).
    #[inline(always)]
    fn move_to_head(&mut self, slot: u32) {
        let cost = u64::from(self.slab[slot].units);
        let mut head = self.head_rank();
        let mut h = self.idx(head);
        if self.buckets[h] > 0 && self.buckets[h] + cost > self.share {
            self.age(slot);
            head = self.head_rank();
            h = self.idx(head);
        }
        let e = &mut self.slab[slot];
        e.tag = (e.tag & !RANK) | head;
        self.buckets[h] += cost;
    }

    fn age(&mut self, moving: u32) {
        match self.cfg.aging {
            Aging::Rounder => {
                // Algorithm D.
                let t = self.idx(self.tail);
                let t1 = self.idx(self.tail + 1);
                self.buckets[t1] += self.buckets[t];
                // The old tail's entry is next used by rank `tail + P`, and the new
                // head's (rank `tail + B`, last used by `tail + B - P`) is already 0
                // unless P = B, where it is the old tail's.
                self.buckets[t] = 0;
                self.tail += 1;
                if self.tail >= REBASE_AT {
                    self.rebase();
                }
            }
            Aging::Stacker => self.age_stacker(moving),
        }
    }

    /// ROUNDER: lowers `tail` and every rank by the same multiple of `P` (ranks below
    /// `tail` first mapped to it), which changes no bucket index.
    #[cold]
    fn rebase(&mut self) {
        let tail = self.tail;
        let by = tail & !self.mask;
        for e in &mut self.slab.0 {
            if e.tag & FREE == 0 {
                let r = (e.tag & RANK).max(tail) - by;
                e.tag = (e.tag & GHOST) | r;
            }
        }
        self.tail -= by;
    }

    /// Algorithm C with `tail` fixed at 0: find the bucket `bk` that holds the average
    /// hit distance (counted from the head, `get-bucket`), then shift every element of
    /// buckets `i..B` down by one bucket, so bucket `i` merges into `i - 1` and the head
    /// empties. The paper takes `i = bk`; we take the `i <= bk` whose merged pair is
    /// smallest, which still shifts every element closer than the average (the paper's
    /// rule) but keeps buckets balanced: with `i = bk` the merges always land at the
    /// average's bucket, which then grows without bound while the buckets below it
    /// drain (measured on the LIRS traces: B = 128 accuracy 97.1-99.8% with `i = bk`,
    /// 99.76-99.99% with the balanced choice). `moving` is out of any bucket and skipped.
    fn age_stacker(&mut self, moving: u32) {
        if self.avg_n > 0 {
            self.avg_dist = self.avg_sum / self.avg_n as f64;
            self.avg_sum = 0.0;
            self.avg_n = 0;
        }
        let bm = self.b as usize;
        let mut len = 0u64;
        let mut bk = 0usize;
        for i in (0..bm).rev() {
            len += self.buckets[i];
            bk = i;
            if self.avg_dist <= len as f64 {
                break;
            }
        }
        // Merge point: the smallest adjacent pair (i - 1, i) with i <= bk, so the
        // shifted buckets i..B include every element more recent than the average.
        let bk = (1..=bk.max(1))
            .min_by_key(|&i| self.buckets[i - 1] + self.buckets[i])
            .expect("B >= 2") as u32;
        for i in bk as usize..bm {
            let v = self.buckets[i];
            self.buckets[i - 1] += v;
            self.buckets[i] = 0;
        }
        // Free slots have FREE set, so their rank field reads >= 2^30 > bk: test the
        // flag first. Ranks >= bk >= 1 lose 1 without borrowing from the flags.
        for (i, e) in self.slab.0.iter_mut().enumerate() {
            if e.tag & FREE == 0 && e.tag & RANK >= bk && i as u32 != moving {
                e.tag -= 1;
            }
        }
    }

    #[inline(always)]
    fn drop_from_bucket(&mut self, slot: u32) {
        let rank = self.current_rank(slot);
        let cost = u64::from(self.slab[slot].units);
        let i = self.idx(rank);
        self.buckets[i] -= cost;
    }

    /// Drops the oldest ghosts while the ghost list is over its capacity.
    #[inline(always)]
    fn trim_ghosts(&mut self) {
        while self.ghost_used > self.cfg.ghost_capacity {
            let slot = self.stack.tail;
            if slot == NIL || !self.slab[slot].ghost() {
                break;
            }
            self.drop_from_bucket(slot);
            self.unlink(slot);
            self.ghost_used -= u64::from(self.slab[slot].units);
            self.release(slot);
        }
    }

    /// Starts loading what the next evictions and ghost drops will touch, two steps
    /// ahead (the entry that is the list tail's predecessor was itself prefetched one
    /// step ago, so reading it here is cheap): the entries two places from the list
    /// tails, the table cell of the next ghost to drop and, with `victim_cell`, of the
    /// next LRU victim (for an [`Mimir::evict`] upcall).
    #[inline(always)]
    fn prefetch_next(&self, victim_cell: bool) {
        // Prefetch addresses are computed without bounds checks (`wrapping_add`): a hint
        // to a stale or wrong address is harmless, and these run on every eviction.
        let slab = self.slab.0.as_ptr();
        let cells = self.table.cells.0.as_ptr();
        let cell_of = |key: u64| cells.wrapping_add(self.table.home(hash32(key)));
        // The stack tail (the next ghost to drop) had its own cell prefetched one step
        // ago as its predecessor's.
        let t = self.stack.tail;
        if t != NIL {
            let e = &self.slab[t];
            if e.prev != NIL {
                let p = &self.slab[e.prev];
                prefetch_ptr(cell_of(p.key));
                if p.prev != NIL {
                    prefetch_ptr(slab.wrapping_add(p.prev as usize));
                }
            }
        }
        // The LRU element's cell is wanted by an EVICT upcall (`victim_cell`) of a key
        // that was not the LRU element, so it was not prefetched as a predecessor.
        let t = self.lru;
        if t != NIL {
            let e = &self.slab[t];
            if victim_cell {
                prefetch_ptr(cell_of(e.key));
            }
            if e.prev != NIL {
                let p = &self.slab[e.prev];
                if victim_cell {
                    prefetch_ptr(cell_of(p.key));
                }
                if p.prev != NIL {
                    prefetch_ptr(slab.wrapping_add(p.prev as usize));
                }
            }
        }
    }

    /// A hint that `key` will be looked up soon: starts loading its table cell. A cache
    /// server that knows upcoming keys (pipelined or multi-key requests) can call it a
    /// few requests ahead to overlap the lookup's cache miss with other work.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        prefetch(&self.table.cells[self.table.home(hash32(key))]);
    }

    // ---- the paper's API ---------------------------------------------------------

    /// HIT(e): the cache served `key`. Returns false (and counts nothing) if MIMIR does
    /// not know `key` as cached.
    pub fn hit(&mut self, key: u64) -> bool {
        match self.table.find(key, hash32(key), &self.slab) {
            Ok(cell) => {
                let slot = self.table.slot(cell);
                if self.slab[slot].ghost() {
                    return false;
                }
                self.requests += 1.0;
                self.hit_slot(slot);
                true
            }
            Err(_) => false,
        }
    }

    #[inline]
    fn hit_slot(&mut self, slot: u32) {
        self.record_hit(slot);
        self.move_to_head(slot);
        if self.stack.head != slot {
            self.unlink(slot);
            self.push_front(slot);
        }
    }

    /// MISS(e): the cache missed `key`. If `key` is a ghost, the reference is counted
    /// as a hit at its estimated distance (beyond the cache size) and the ghost leaves
    /// the stack, to come back through [`Mimir::insert`] when the cache fills it.
    /// Returns whether it was a ghost hit. With ghost filters, an unknown key is looked
    /// up in the filters (for byte units its size is taken as its filter's mean; use
    /// [`Mimir::miss_insert`] to give it).
    pub fn miss(&mut self, key: u64) -> bool {
        self.requests += 1.0;
        if let Ok(cell) = self.table.find(key, hash32(key), &self.slab) {
            let slot = self.table.slot(cell);
            let e = self.slab[slot];
            if e.ghost() {
                self.record_hit(slot);
                self.unlink(slot);
                self.ghost_used -= u64::from(e.units);
                self.release_at(slot, cell);
                return true;
            }
        } else if self.filters.is_some() {
            return self.filter_ghost_hit(key, None);
        }
        false
    }

    /// MISS(e) followed by INSERT(e) of `size` bytes (the cache filled the key it
    /// missed), with one table probe: a ghost is counted as a hit at its distance and
    /// becomes the cached head element in place. Returns whether it was a ghost hit.
    #[inline]
    pub fn miss_insert(&mut self, key: u64, size: u32) -> bool {
        self.requests += 1.0;
        let units = self.units(size);
        let h = hash32(key);
        match self.table.find(key, h, &self.slab) {
            Ok(cell) => {
                let slot = self.table.slot(cell);
                let e = self.slab[slot];
                let was_ghost = e.ghost();
                if was_ghost {
                    self.record_hit(slot);
                    self.unlink(slot);
                    self.ghost_used -= u64::from(e.units);
                } else {
                    // Tracked as cached although the cache missed it: re-stored.
                    self.drop_from_bucket(slot);
                    self.unlink(slot);
                    self.cached_used -= u64::from(e.units);
                }
                let e = &mut self.slab[slot];
                e.tag &= !GHOST;
                e.units = units;
                self.insert_slot(slot);
                was_ghost
            }
            Err(cell) => {
                let was_ghost = self.filter_ghost_hit(key, Some(size));
                let slot = self.alloc(key, units);
                self.table.insert_at(cell, h, slot);
                self.insert_slot(slot);
                was_ghost
            }
        }
    }

    /// INSERT(e): the cache stored `key` of `size` bytes; it enters the head bucket.
    /// A key MIMIR already tracks is first taken out of the stack. (Ghost filters are
    /// not consulted: a fill follows a MISS, which already took the key out, and a
    /// second lookup would only add false positives.)
    pub fn insert(&mut self, key: u64, size: u32) {
        let h = hash32(key);
        let cell = match self.table.find(key, h, &self.slab) {
            Ok(_) => {
                self.delete(key);
                self.table
                    .find(key, h, &self.slab)
                    .expect_err("deleted key")
            }
            Err(cell) => cell,
        };
        let slot = self.alloc(key, self.units(size));
        self.table.insert_at(cell, h, slot);
        self.insert_slot(slot);
    }

    #[inline(always)]
    fn insert_slot(&mut self, slot: u32) {
        // Every caller has cleared GHOST: the element joins the cached list.
        self.move_to_head(slot);
        self.push_front(slot);
        self.cached_used += u64::from(self.slab[slot].units);
    }

    /// The cache evicted `key`: it stays in its bucket as a ghost (the most recently
    /// evicted, so just below every cached element, which is where its bucket is), and
    /// the oldest ghosts beyond the ghost capacity are dropped.
    pub fn evict(&mut self, key: u64) {
        // A cache evicts its LRU item, which is MIMIR's LRU cached element (the same
        // order): then the table probe is not needed. An unknown key or a ghost is
        // never that element, so this changes no result.
        let t = self.lru;
        if t != NIL && self.slab[t].key == key {
            self.evict_slot(t);
            self.prefetch_next(false);
            return;
        }
        if let Ok(cell) = self.table.find(key, hash32(key), &self.slab) {
            let slot = self.table.slot(cell);
            if !self.slab[slot].ghost() {
                self.evict_slot(slot);
                self.prefetch_next(true);
            }
        }
    }

    #[inline(always)]
    fn evict_slot(&mut self, slot: u32) {
        let cost = u64::from(self.slab[slot].units);
        self.cached_used -= cost;
        if self.cfg.ghost_capacity == 0 || self.filter_spec.is_some() {
            self.unlink(slot);
            self.drop_from_bucket(slot);
            let key = self.slab[slot].key;
            self.release(slot);
            if self.filter_spec.is_some() {
                self.filter_insert(key, cost);
            }
            return;
        }
        // It becomes the most recent ghost, just below the cached elements: for the
        // LRU element (the usual victim) that is where it already is.
        if slot == self.lru {
            self.lru = self.slab[slot].prev;
        } else {
            self.unlink(slot);
            self.insert_below_lru(slot);
        }
        self.slab[slot].tag |= GHOST;
        self.ghost_used += cost;
        self.trim_ghosts();
    }

    /// DELETE(e): `key` is gone for good (deleted by a client, or expired): it leaves
    /// its bucket whether cached or ghost (with ghost filters: an unknown key is removed
    /// from the first filter reporting it, if any).
    pub fn delete(&mut self, key: u64) {
        let found = self.table.find(key, hash32(key), &self.slab);
        if found.is_err() {
            if let Some(f) = self.filters.as_mut() {
                f.remove_if_present(key);
            }
        }
        if let Ok(cell) = found {
            let slot = self.table.slot(cell);
            self.drop_from_bucket(slot);
            self.unlink(slot);
            let e = self.slab[slot];
            let cost = u64::from(e.units);
            if e.ghost() {
                self.ghost_used -= cost;
            } else {
                self.cached_used -= cost;
            }
            self.release_at(slot, cell);
        }
    }

    /// §3.7 adaptive profiling: at an epoch's end multiply the hit statistics (and the
    /// request count) by `gamma` in (0, 1), so old behaviour fades.
    pub fn decay(&mut self, gamma: f64) {
        self.delta.scale(gamma);
        self.requests *= gamma;
        self.width_sum *= gamma;
    }

    /// Theorem 1 (§3.6): `2 / (N R) x sum of hit bucket widths`, an upper bound on the
    /// MAE of the hit-rate curve over sizes up to `N` = [`Mimir::covered_size`],
    /// computable without the exact curve.
    pub fn mae_bound(&self) -> f64 {
        if self.requests == 0.0 {
            return 0.0;
        }
        2.0 * self.width_sum / (self.covered_size() as f64 * self.requests)
    }

    /// `export-HRC`: the miss-ratio curve (1 - hit rate) at every bin boundary up to
    /// [`Mimir::covered_size`] (every integer size for object curves up to 65,536).
    pub fn curve(&self) -> Curve {
        let name = match self.cfg.aging {
            Aging::Rounder => "mimir-rounder",
            Aging::Stacker => "mimir-stacker",
        };
        let reqs = self.requests;
        let points = self
            .delta
            .cumulative()
            .map(|(size, hits)| Point {
                size,
                miss_ratio: if reqs > 0.0 {
                    (1.0 - hits / reqs).clamp(0.0, 1.0)
                } else {
                    1.0
                },
            })
            .collect();
        Curve::new(name, None, self.cfg.unit, points)
    }
}

/// MIMIR beside its own exact LRU cache of `capacity` (objects or bytes), so it can run
/// offline on a trace: each request is a HIT, or a MISS followed by INSERT and as many
/// evictions (to ghosts) as needed. The cache and the ghost list share MIMIR's slab,
/// so a request costs one hash lookup.
#[derive(Debug, Clone)]
pub struct MimirLru {
    m: Mimir,
    hits: u64,
    requests: u64,
}

impl MimirLru {
    pub fn new(cfg: MimirConfig) -> Self {
        Self::with_ghost_mode(cfg, GhostMode::List)
    }

    /// [`Mimir::with_ghost_mode`] beside its LRU cache.
    pub fn with_ghost_mode(cfg: MimirConfig, ghosts: GhostMode) -> Self {
        Self {
            m: Mimir::with_ghost_mode(cfg, ghosts),
            hits: 0,
            requests: 0,
        }
    }

    /// The estimator.
    pub fn mimir(&self) -> &Mimir {
        &self.m
    }

    /// [`Mimir::prefetch`]: `key` will be requested soon.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        self.m.prefetch(key);
    }

    /// Miss ratio of the internal LRU cache itself (at its capacity).
    pub fn cache_miss_ratio(&self) -> f64 {
        if self.requests == 0 {
            return 1.0;
        }
        1.0 - self.hits as f64 / self.requests as f64
    }

    /// One GET of `key` (filled on a miss); true on a cache hit. One table probe finds
    /// the key or the cell where it goes.
    #[inline]
    pub fn request(&mut self, key: u64, size: u32) -> bool {
        self.requests += 1;
        let m = &mut self.m;
        m.requests += 1.0;
        let units = m.units(size);
        let h = hash32(key);
        match m.table.find(key, h, &m.slab) {
            Ok(cell) => {
                let slot = m.table.slot(cell);
                let e = m.slab[slot];
                // (For object curves every size is 1 unit, so a new size is a hit.)
                if !e.ghost() && e.units == units {
                    m.hit_slot(slot);
                    self.hits += 1;
                    return true;
                }
                // MISS on a ghost (counted at its distance, then re-inserted), or a
                // cached key whose size in bytes changed (a hit at its distance, then
                // re-stored at the new size).
                m.record_hit(slot);
                m.unlink(slot);
                if e.ghost() {
                    m.ghost_used -= u64::from(e.units);
                } else {
                    m.cached_used -= u64::from(e.units);
                    self.hits += 1;
                }
                let s = &mut m.slab[slot];
                s.tag &= !GHOST;
                s.units = units;
                m.insert_slot(slot);
                self.make_room();
                !e.ghost()
            }
            Err(cell) => {
                if m.filters.is_some() {
                    m.filter_ghost_hit(key, Some(size));
                }
                let slot = m.alloc(key, units);
                m.table.insert_at(cell, h, slot);
                m.insert_slot(slot);
                self.make_room();
                false
            }
        }
    }

    /// [`MimirLru::request`] for each `(key, size)` of a decoded trace, in order (the
    /// same curve), starting the load of each key's table cell `LOOKAHEAD` requests
    /// ahead. A request's first step is that load, which misses the CPU caches once the
    /// tracked keys outgrow them, and the next request's cannot start early on its own
    /// (the probe's branches depend on the loaded cell); issued ahead, the loads
    /// overlap: ~15-25 % more requests per second on arc_p3 (`mimir_speed`, (b')).
    pub fn request_all(&mut self, trace: &[(u64, u32)]) {
        const LOOKAHEAD: usize = 8;
        for &(key, _) in trace.iter().take(LOOKAHEAD) {
            self.prefetch(key);
        }
        for (i, &(key, size)) in trace.iter().enumerate() {
            if let Some(&(ahead, _)) = trace.get(i + LOOKAHEAD) {
                self.prefetch(ahead);
            }
            self.request(key, size);
        }
    }

    /// Evicts LRU items to ghosts until the cache fits its capacity.
    fn make_room(&mut self) {
        let m = &mut self.m;
        while m.cached_used > m.cfg.capacity {
            let victim = m.lru;
            if victim == NIL || victim == m.stack.head {
                break; // never evict the item just inserted
            }
            m.evict_slot(victim);
        }
        m.prefetch_next(false);
    }
}

impl MrcModel for MimirLru {
    fn access(&mut self, key: u64, size: u32) {
        self.request(key, size);
    }

    fn delete(&mut self, key: u64) {
        self.m.delete(key);
    }

    fn curves(&self) -> Vec<Curve> {
        vec![self.m.curve()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop over 20 keys with a 10-object cache and 10 ghosts: exact LRU misses
    /// everything below 20 objects and hits every reuse at 20. Every reuse is a ghost
    /// hit, so the whole curve comes from the ghost path, and all of it must land at
    /// or below the covered size 20.
    #[test]
    fn ghosts_catch_a_loop_just_beyond_the_cache() {
        for aging in [Aging::Rounder, Aging::Stacker] {
            let mut m = MimirLru::new(MimirConfig::objects(4, aging, 10));
            let n = 2000u64;
            for i in 0..n {
                assert!(!m.request(i % 20, 1));
            }
            let c = m.curves().pop().unwrap();
            let cold = 20.0 / n as f64;
            assert!((c.miss_ratio_at(20.0) - cold).abs() < 1e-9, "{aging:?}");
            assert!(
                c.miss_ratio_at(10.0) > 0.3,
                "{aging:?}: {}",
                c.miss_ratio_at(10.0)
            );
            assert!(m.mimir().cached_used() == 10 && m.mimir().ghost_used() == 10);
        }
    }

    /// ROUNDER B=4 for a cache of 10 objects and `ghost_capacity` ghosts, keys 0..10
    /// inserted (0 is the LRU one).
    fn ten_cached(ghost_capacity: u64) -> Mimir {
        let mut m = Mimir::new(MimirConfig {
            buckets: 4,
            aging: Aging::Rounder,
            capacity: 10,
            ghost_capacity,
            unit: SizeUnit::Objects,
        });
        for k in 0..10 {
            m.insert(k, 1);
        }
        m
    }

    #[test]
    fn api_keeps_bucket_sums_consistent() {
        let mut m = ten_cached(5);
        assert!(m.hit(3));
        m.evict(0);
        m.evict(1);
        assert!(m.miss(0));
        assert!(!m.miss(42));
        m.delete(5);
        assert_eq!(m.cached_used(), 7);
        assert_eq!(m.ghost_used(), 1);
        assert_eq!(m.buckets.0.iter().sum::<u64>(), 8);
    }

    /// `request_all` (prefetching ahead) is `request` in a loop.
    #[test]
    fn request_all_is_request_in_a_loop() {
        let mut x = 7u64;
        let trace: Vec<(u64, u32)> = (0..5_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 33) % 300, 1 + (x >> 60) as u32)
            })
            .collect();
        let cfg = MimirConfig::objects(8, Aging::Rounder, 100);
        let (mut one, mut all) = (MimirLru::new(cfg), MimirLru::new(cfg));
        for &(k, s) in &trace {
            one.request(k, s);
        }
        all.request_all(&trace);
        assert_eq!(one.cache_miss_ratio(), all.cache_miss_ratio());
        assert_eq!(one.m.curve().points, all.m.curve().points);
    }

    /// A cache that evicts other than its LRU item (e.g. sampled eviction): the victim
    /// becomes the most recent ghost, below the cached elements and above the older
    /// ghosts, and the oldest ghost is the first dropped.
    #[test]
    fn evicting_a_non_lru_key_makes_it_the_most_recent_ghost() {
        let mut m = ten_cached(2);
        m.evict(5); // not the LRU item: ghosts [5]
        m.evict(0); // the LRU item: ghosts [0, 5]
        m.evict(1); // ghosts [1, 0]; 5 is dropped
        assert_eq!((m.cached_used(), m.ghost_used()), (7, 2));
        assert!(!m.miss(5), "the oldest ghost was dropped");
        assert!(m.miss(0), "0 is still a ghost");
        m.evict(2); // the LRU item again: ghosts [2, 1]
        assert!(m.miss(1));
        assert!(m.miss(2));
        assert_eq!((m.cached_used(), m.ghost_used()), (6, 0));
        // The cached elements are still in recency order: 3 is the next victim.
        m.evict(3);
        assert!(m.miss(3));
        assert_eq!((m.cached_used(), m.ghost_used()), (5, 0));
        assert_eq!(m.buckets.0.iter().sum::<u64>(), 5);
    }

    /// ROUNDER's rank rebase (tail reaching 2^29) changes no bucket index, so the curve
    /// is the same as from a model that never rebases.
    #[test]
    fn rounder_rebase_keeps_the_curve() {
        // B = 6 has 8 bucket entries, two of them unused at any time.
        for buckets in [8, 6] {
            let cfg = MimirConfig::objects(buckets, Aging::Rounder, 50);
            let (mut a, mut b) = (MimirLru::new(cfg), MimirLru::new(cfg));
            b.m.tail = REBASE_AT - 5;
            let mut x = 1u64;
            for _ in 0..20_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (x >> 33) % 160;
                assert_eq!(a.request(k, 1), b.request(k, 1));
            }
            assert!(b.m.tail < REBASE_AT);
            assert_eq!(a.m.curve().points, b.m.curve().points);
        }
    }

    /// Upcalls for the property test: keys from a small range so they collide.
    #[derive(Debug, Clone)]
    enum Op {
        Hit(u64),
        Miss(u64),
        MissInsert(u64, u32),
        Insert(u64, u32),
        Evict(u64),
        Delete(u64),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        let key = 0u64..24;
        let size = 1u32..5;
        prop_oneof![
            key.clone().prop_map(Op::Hit),
            key.clone().prop_map(Op::Miss),
            (key.clone(), size.clone()).prop_map(|(k, s)| Op::MissInsert(k, s)),
            (key.clone(), size).prop_map(|(k, s)| Op::Insert(k, s)),
            key.clone().prop_map(Op::Evict),
            key.prop_map(Op::Delete),
        ]
    }

    /// The stack as MIMIR's list holds it: (cached keys from the head, ghost keys from
    /// the most recent), checking every back link, `lru` and the tail on the way.
    /// (key, units) of stack elements, most recent first.
    type Elements = Vec<(u64, u32)>;

    fn walk(m: &Mimir) -> (Elements, Elements) {
        let (mut cached, mut ghosts) = (Vec::new(), Vec::new());
        let (mut at, mut prev, mut last_cached) = (m.stack.head, NIL, NIL);
        while at != NIL {
            let e = m.slab[at];
            assert_eq!(e.prev, prev, "back link");
            assert_eq!(e.tag & FREE, 0, "a free slot on the list");
            if e.ghost() {
                ghosts.push((e.key, e.units));
            } else {
                assert!(ghosts.is_empty(), "a cached element below a ghost");
                cached.push((e.key, e.units));
                last_cached = at;
            }
            (prev, at) = (at, e.next);
        }
        assert_eq!(m.stack.tail, prev);
        assert_eq!(m.lru, last_cached);
        (cached, ghosts)
    }

    fn remove(list: &mut Vec<(u64, u32)>, key: u64) -> Option<(u64, u32)> {
        let i = list.iter().position(|&(k, _)| k == key)?;
        Some(list.remove(i))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Any sequence of upcalls (including EVICTs of keys that are not the LRU one,
        /// of ghosts and of unknown keys) keeps MIMIR's stack equal to a plain model of
        /// the cached list and the ghost list, every link consistent, and the bucket
        /// sizes summing to the stack's size. (Debug builds also check every slab, cell
        /// and bucket index against its vector's length.)
        #[test]
        fn upcalls_keep_the_stack_equal_to_a_reference(
            ops in proptest::collection::vec(op(), 1..400),
            stacker in proptest::bool::ANY,
            bytes in proptest::bool::ANY,
            ghost_capacity in 0u64..12,
            buckets in 2usize..6,
        ) {
            let mut m = Mimir::new(MimirConfig {
                buckets,
                aging: if stacker { Aging::Stacker } else { Aging::Rounder },
                capacity: 12,
                ghost_capacity,
                unit: if bytes { SizeUnit::Bytes } else { SizeUnit::Objects },
            });
            let units = |s: u32| if bytes { s } else { 1 };
            // Most recent first.
            let (mut cached, mut ghosts): (Elements, Elements) = (vec![], vec![]);
            for op in ops {
                match op {
                    Op::Hit(k) => {
                        let want = remove(&mut cached, k);
                        if let Some(e) = want {
                            cached.insert(0, e);
                        }
                        proptest::prop_assert_eq!(m.hit(k), want.is_some());
                    }
                    Op::Miss(k) => {
                        let want = remove(&mut ghosts, k).is_some();
                        proptest::prop_assert_eq!(m.miss(k), want);
                    }
                    Op::MissInsert(k, s) => {
                        let want = remove(&mut ghosts, k).is_some();
                        remove(&mut cached, k);
                        cached.insert(0, (k, units(s)));
                        proptest::prop_assert_eq!(m.miss_insert(k, s), want);
                    }
                    Op::Insert(k, s) => {
                        remove(&mut ghosts, k);
                        remove(&mut cached, k);
                        cached.insert(0, (k, units(s)));
                        m.insert(k, s);
                    }
                    Op::Evict(k) => {
                        if let Some(e) = remove(&mut cached, k) {
                            if ghost_capacity > 0 {
                                ghosts.insert(0, e);
                                while ghosts.iter().map(|g| u64::from(g.1)).sum::<u64>()
                                    > ghost_capacity
                                {
                                    ghosts.pop();
                                }
                            }
                        }
                        m.evict(k);
                    }
                    Op::Delete(k) => {
                        remove(&mut ghosts, k);
                        remove(&mut cached, k);
                        m.delete(k);
                    }
                }
                let (c, g) = walk(&m);
                proptest::prop_assert_eq!(&c, &cached);
                proptest::prop_assert_eq!(&g, &ghosts);
                let sum = |l: &[(u64, u32)]| l.iter().map(|e| u64::from(e.1)).sum::<u64>();
                proptest::prop_assert_eq!(m.cached_used(), sum(&cached));
                proptest::prop_assert_eq!(m.ghost_used(), sum(&ghosts));
                proptest::prop_assert_eq!(
                    m.buckets.0.iter().sum::<u64>(),
                    sum(&cached) + sum(&ghosts)
                );
                proptest::prop_assert_eq!(m.tracked_keys(), cached.len() + ghosts.len());
            }
        }

        /// MimirLru's cache is an exact LRU cache (by objects or by bytes, a key whose
        /// size changed being re-stored), whatever the sizes.
        #[test]
        fn mimir_lru_is_an_exact_lru_cache(
            reqs in proptest::collection::vec((0u64..40, 1u32..6), 1..600),
            bytes in proptest::bool::ANY,
        ) {
            let capacity = 20u64;
            let mut m = MimirLru::new(MimirConfig {
                buckets: 8,
                aging: Aging::Rounder,
                capacity,
                ghost_capacity: capacity,
                unit: if bytes { SizeUnit::Bytes } else { SizeUnit::Objects },
            });
            let units = |s: u32| if bytes { s } else { 1 };
            let mut lru: Vec<(u64, u32)> = Vec::new();
            for (k, s) in reqs {
                // A cached key is a hit even if its size changed (it is re-stored).
                let hit = remove(&mut lru, k).is_some();
                lru.insert(0, (k, units(s)));
                while lru.iter().map(|e| u64::from(e.1)).sum::<u64>() > capacity && lru.len() > 1 {
                    lru.pop();
                }
                proptest::prop_assert_eq!(m.request(k, s), hit);
                let (c, _) = walk(&m.m);
                proptest::prop_assert_eq!(&c, &lru);
            }
        }
    }
}
