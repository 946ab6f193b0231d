//! Exact-size slabs for short entries: every block of 7..=529 bytes gets a slot of
//! exactly its size.
//!
//! # Why
//!
//! A cache's memory per key is payload plus overhead, and for small items the allocator's
//! rounding is a large part of the overhead. jemalloc's size classes near 128 B are 16 B
//! apart (96, 112, 128) and 32 B apart up to 256, so a 14-byte key with a 100-byte value
//! (issue 10's benchmark item) took a 128-byte region for a 126-byte block, and would
//! take the same 128 bytes with any shorter header: the header and the class rounding
//! have to shrink together. Here a short entry (`crate::entry`: key and value of at most
//! 255 bytes, a 6-byte header in database 0) is stored in a slot of exactly its block
//! size, 120 bytes for that item. (zExpander §2.2 and issue 10 item 6: "finer size
//! classes, slab or segment storage, or the item header".)
//!
//! # Layout
//!
//! Slabs are [`SLAB_BYTES`] pieces of one address range reserved at start-up (the
//! region: [`MAX_SLABS`] slabs, address space only; a slab is made writable when first
//! used and its pages are given back to the OS the moment it empties), so a slot's slab
//! number is arithmetic on its address. A slab is cut into equal slots of one class (a
//! block size).
//! Slots are handed out in address order (`bump`, so a new slab's pages are touched only
//! as they fill) and then from a free list threaded through the free slots (a free
//! slot's first four bytes hold the offset of the next). The tail that no whole slot
//! fits is the only waste (see [`SLAB_BYTES`]).
//!
//! The slabs' bookkeeping ([`SlabMeta`], 20 bytes) is not in the slabs but in a dense
//! table indexed by slab number, which a few thousand slabs keep in a few cached pages.
//!
//! # Classes and locking
//!
//! One [`Class`] per block size, each behind its own mutex, taken only when a thread's
//! magazine of freed slots (below) is empty or full; entries of different sizes never
//! contend. A class allocates from its `current` slab until it is full, then from the
//! most recently freed-into slab of its partial list, then from a new slab. A slab whose
//! last slot is freed gives its pages back at once (unless it is `current`), so a class that stops
//! being used holds at most one slab. Slots free in partial slabs are fragmentation that
//! only allocations of the same size can reuse; `crate::defrag` moves entries out of
//! slabs no fuller than their class's average ([`worth_moving`], the rule Redis's
//! jemalloc hint applies to jemalloc's slabs), and the server counts the free slots as
//! fragmentation ([`stats`]), which is what starts it.

use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU16, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Bytes per slab. Every size class in use holds a partly filled slab or two, so the
/// slab size bounds that slack: with 64 KB slabs, a drifting mix of value sizes (240
/// classes in use, 64 MB `maxmemory`) left 16 MB of free slots that defragmentation
/// could not move, most in the classes' current slabs; 16 KB a quarter of that. The tail
/// no whole slot fits is below one slot: 0.2 % for 121-byte slots.
pub const SLAB_BYTES: usize = 16 << 10;
/// Slabs the region has room for: 2^22 of 16 KB, 64 GB of short entries (beyond it,
/// short entries are stored as normal jemalloc blocks: [`alloc`] answers `None`).
pub const MAX_SLABS: usize = 1 << 22;
// The index's words hold a slot's offset in the region in 36 bits.
const _: () = assert!(MAX_SLABS * SLAB_BYTES <= 1 << 36);
/// "None" for slab numbers and slot offsets.
const NONE: u32 = u32::MAX;
/// The smallest block a slab slot holds: the smallest entry, a database-0 short header
/// alone (`SET "" ""`, which Redis accepts). Taken from `crate::entry`, whose header
/// sizes decide it: a class range of its own fell out of step when that header shrank.
pub const MIN_BLOCK: usize = crate::entry::SMALLEST_ENTRY;
/// The largest block a slab slot holds: a short header, a TTL block and 255-byte key and
/// value.
pub const MAX_BLOCK: usize = crate::entry::LARGEST_SHORT_ENTRY;
const CLASSES: usize = MAX_BLOCK - MIN_BLOCK + 1;

/// One slab's bookkeeping, at its slab number in the region's table. Changed only under
/// the lock of the class that holds the slab (or of [`SlabPages`] while no class does).
#[derive(Clone, Copy)]
struct SlabMeta {
    /// Slots handed out and not freed.
    live: u32,
    /// Offset of the first slot of the free list, [`NONE`] if the list is empty.
    free_head: u32,
    /// Offset of the first never-used slot.
    bump: u32,
    /// Neighbours in the class's partial list (slab numbers, [`NONE`] at the ends).
    prev: u32,
    next: u32,
}

/// The address range slabs come from, and their bookkeeping table.
struct Region {
    metas: *mut UnsafeCell<SlabMeta>,
}

// SAFETY: the region is process-wide; each meta is accessed only under the lock that
// owns its slab (see SlabMeta).
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

/// Reserves the region (address space only: `PROT_NONE`, no memory, no commit charge;
/// slabs are made writable as they are first used) and its meta table (untouched pages
/// cost nothing). Halves the reservation while the kernel refuses it; `None` if even
/// 1 GB is refused, and short entries then all live in jemalloc blocks.
fn region() -> Option<&'static Region> {
    static REGION: OnceLock<Option<Region>> = OnceLock::new();
    REGION
        .get_or_init(|| {
            let mut slabs = MAX_SLABS;
            while slabs >= (1 << 30) / SLAB_BYTES {
                // SAFETY: anonymous mappings with no address hint; results checked.
                unsafe {
                    let len = slabs * SLAB_BYTES + SLAB_BYTES;
                    let raw = libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_NONE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                        -1,
                        0,
                    );
                    if raw != libc::MAP_FAILED {
                        let metas_len = slabs * std::mem::size_of::<SlabMeta>();
                        let sizes_len = slabs * std::mem::size_of::<AtomicU16>();
                        let (metas, sizes) = (map_table(metas_len), map_table(sizes_len));
                        if let (Some(metas), Some(sizes)) = (metas, sizes) {
                            // Aligned to the slab size (the extra slab reserved for it).
                            let base = (raw as usize).next_multiple_of(SLAB_BYTES);
                            REGION_SIZES.store(sizes as *mut AtomicU16, Ordering::Relaxed);
                            REGION_BASE.store(base as u64, Ordering::Relaxed);
                            REGION_BYTES.store((slabs * SLAB_BYTES) as u64, Ordering::Relaxed);
                            return Some(Region {
                                metas: metas as *mut UnsafeCell<SlabMeta>,
                            });
                        }
                        // One of the tables was refused: give back what was mapped.
                        for (table, table_len) in [(metas, metas_len), (sizes, sizes_len)] {
                            if let Some(t) = table {
                                libc::munmap(t, table_len);
                            }
                        }
                        libc::munmap(raw, len);
                    }
                }
                slabs /= 2;
            }
            None
        })
        .as_ref()
}

/// A private anonymous mapping of `len` bytes: writable, zero-filled, memory only for the
/// pages touched (`MAP_NORESERVE`); None if the kernel refuses it. The region's tables,
/// and the index's large tables (`crate::index`).
pub(crate) fn map_table(len: usize) -> Option<*mut libc::c_void> {
    // SAFETY: an anonymous mapping with no address hint; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p)
}

/// The region's base address and length (plain statics, not fields of [`Region`]: read
/// on every index probe and short value's length, where `OnceLock::get` would add a check).
/// Both 0 until the region is reserved, or if it cannot be. A slot's address is known
/// to another thread only through a structure handed over under a lock, after the
/// reservation that set these.
static REGION_BASE: AtomicU64 = AtomicU64::new(0);
static REGION_BYTES: AtomicU64 = AtomicU64::new(0);
/// The slot size of every slab, by slab number (0 while no class has held it): a dense
/// table of 2 bytes per slab beside the region, written when a class takes the slab, so
/// that a short entry need not record its own value length (`crate::entry`: the header
/// is 6 or 7 bytes; the value's length is the slot's size less the header and key). Read
/// by every access to a short entry's value, hence apart from [`SlabMeta`] (which
/// allocations and frees write under the class's lock): a few thousand slabs' sizes
/// take a few KB that stay cached.
static REGION_SIZES: AtomicPtr<AtomicU16> = AtomicPtr::new(std::ptr::null_mut());

/// The size of the slot at `ptr`, which must be a live slot handed out by [`alloc`] or
/// [`alloc_packed`] (its slab's class cannot change while the slot is live).
#[inline]
pub(crate) fn slot_size(ptr: *const u8) -> usize {
    slot_size_entry(slab_number(ptr as usize)).load(Ordering::Relaxed) as usize
}

/// The slab number of an address inside the region.
#[inline]
fn slab_number(addr: usize) -> u32 {
    ((addr - REGION_BASE.load(Ordering::Relaxed) as usize) / SLAB_BYTES) as u32
}

/// Slabs reserved (<= [`MAX_SLABS`]).
fn slab_count() -> usize {
    REGION_BYTES.load(Ordering::Relaxed) as usize / SLAB_BYTES
}

/// Slab `n`'s entry in [`REGION_SIZES`]; `n` must be one of the region's slabs.
#[inline]
fn slot_size_entry(n: u32) -> &'static AtomicU16 {
    // SAFETY: the region exists (it holds slab `n`), so its size table does, with an
    // entry per slab; the entries are atomics, never freed.
    unsafe { &*REGION_SIZES.load(Ordering::Relaxed).add(n as usize) }
}

/// The offset of `addr` in the slab region (< 2^36: [`MAX_SLABS`] slabs of
/// [`SLAB_BYTES`]), or None if `addr` is outside it (a jemalloc block). The index keeps
/// offsets rather than addresses for slab slots (`crate::index`: 6-byte words).
#[inline]
pub(crate) fn region_offset(addr: u64) -> Option<u64> {
    let offset = addr.wrapping_sub(REGION_BASE.load(Ordering::Relaxed));
    (offset < REGION_BYTES.load(Ordering::Relaxed)).then_some(offset)
}

/// The address at `offset` in the slab region (an offset from [`region_offset`]).
#[inline]
pub(crate) fn region_addr(offset: u64) -> u64 {
    REGION_BASE.load(Ordering::Relaxed) + offset
}

impl Region {
    /// # Safety
    /// `n` < [`slab_count`], and the caller holds the lock that owns slab `n`.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn meta(&self, n: u32) -> &mut SlabMeta {
        unsafe { &mut *(*self.metas.add(n as usize)).get() }
    }

    #[inline]
    fn slab_base(&self, n: u32) -> usize {
        REGION_BASE.load(Ordering::Relaxed) as usize + n as usize * SLAB_BYTES
    }
}

/// Slab numbers not held by any class: never used ones from `next_unused` on, and
/// released ones (their pages given back, still writable).
struct SlabPages {
    next_unused: usize,
    /// Slabs made writable so far (from 0): [`COMMIT_SLABS`] at a time.
    writable: usize,
    released: Vec<u32>,
}

/// Slabs made writable by one `mprotect` (1 MB): a call per slab was ~7,500 system calls
/// (each taking the address space's lock for writing) over a fill of 1M entries.
/// Writable pages cost nothing until touched.
const COMMIT_SLABS: usize = 64;

static SLAB_PAGES: Mutex<SlabPages> = Mutex::new(SlabPages {
    next_unused: 0,
    writable: 0,
    released: Vec::new(),
});

fn lock_pages() -> MutexGuard<'static, SlabPages> {
    SLAB_PAGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A slab number for a class (its meta reset), `None` when the region is full.
fn take_slab(r: &Region) -> Option<u32> {
    let mut pages = lock_pages();
    let n = match pages.released.pop() {
        Some(n) => n,
        None => {
            if pages.next_unused >= slab_count() {
                return None;
            }
            let n = pages.next_unused as u32;
            if pages.next_unused == pages.writable {
                let count = COMMIT_SLABS.min(slab_count() - pages.writable);
                // SAFETY: the slabs lie inside the reservation.
                let rc = unsafe {
                    libc::mprotect(
                        r.slab_base(n) as *mut _,
                        count * SLAB_BYTES,
                        libc::PROT_READ | libc::PROT_WRITE,
                    )
                };
                if rc != 0 {
                    // Out of commit charge or of mappings: no more slabs.
                    return None;
                }
                pages.writable += count;
            }
            pages.next_unused += 1;
            n
        }
    };
    // SAFETY: the slab is held by no class; SLAB_PAGES's lock is held.
    unsafe {
        *r.meta(n) = SlabMeta {
            live: 0,
            free_head: NONE,
            bump: 0,
            prev: NONE,
            next: NONE,
        }
    };
    Some(n)
}

/// Gives an empty slab's memory back to the OS at once (`MADV_DONTNEED`: its pages are
/// zero-filled if it is used again) and its number to the free pool.
fn release_slab(r: &Region, n: u32) {
    // SAFETY: the slab lies inside the reservation and holds no live slot.
    unsafe {
        libc::madvise(r.slab_base(n) as *mut _, SLAB_BYTES, libc::MADV_DONTNEED);
    }
    lock_pages().released.push(n);
}

/// One size class: which of its slabs can take an allocation.
struct Class {
    /// The slab allocations go to ([`NONE`]: none yet). Never in the partial list.
    current: u32,
    /// The most recently freed-into slab with a free slot, other than `current`.
    partial_head: u32,
    /// Slabs the class holds (including `current`).
    slabs: usize,
    /// Slots handed out and not freed, over all its slabs.
    live: usize,
}

/// Every class's state. The store uses one, [`ENTRY_SLABS`]; tests make their own (the
/// region and its slab numbers are shared).
pub(crate) struct SlabAllocator {
    classes: [Mutex<Class>; CLASSES],
}

/// The slabs of every short entry in the process (entries move between shards, so
/// the slabs are not a shard's).
static ENTRY_SLABS: SlabAllocator = SlabAllocator::new();

/// Slots of `size` bytes in a slab.
#[inline]
fn capacity_of(size: usize) -> u32 {
    (SLAB_BYTES / size) as u32
}

impl Class {
    /// # Safety (for the list helpers)
    /// Slab `n` belongs to this class and the class's lock is held.
    unsafe fn push_partial(&mut self, r: &Region, n: u32) {
        let head = self.partial_head;
        // SAFETY: the caller's contract; `head` is also this class's.
        unsafe {
            let m = r.meta(n);
            m.prev = NONE;
            m.next = head;
            if head != NONE {
                r.meta(head).prev = n;
            }
        }
        self.partial_head = n;
    }

    unsafe fn unlink_partial(&mut self, r: &Region, n: u32) {
        // SAFETY: the caller's contract; the neighbours are also this class's.
        unsafe {
            let m = r.meta(n);
            let (prev, next) = (m.prev, m.next);
            m.prev = NONE;
            m.next = NONE;
            if prev != NONE {
                r.meta(prev).next = next;
            } else {
                self.partial_head = next;
            }
            if next != NONE {
                r.meta(next).prev = prev;
            }
        }
    }
}

/// A slot of exactly `size` bytes (`MIN_BLOCK..=MAX_BLOCK`), uninitialised; `None` if
/// the region is full or could not be reserved.
#[inline]
pub(crate) fn alloc(size: usize) -> Option<NonNull<u8>> {
    // (A thread whose magazines are already destroyed, while it exits, goes to the slab.)
    match THREAD_MAGAZINES.try_with(|m| {
        // SAFETY: the magazines are this thread's and no reference to them outlives
        // the closure.
        unsafe { &mut *m.get() }.take_or_refill(size)
    }) {
        Ok(p) => p,
        Err(_) => ENTRY_SLABS.alloc(size),
    }
}

/// [`alloc`] for active defragmentation: a slot of the current slab, or of a new one
/// once it is full, never of a partial slab (those are the sparse slabs being emptied),
/// so the moved entries pack into full slabs.
pub(crate) fn alloc_packed(size: usize) -> Option<NonNull<u8>> {
    ENTRY_SLABS.alloc_in(size, false)
}

/// Whether `ptr` is a slab slot (else a jemalloc block).
#[inline]
pub(crate) fn is_slot(ptr: *const u8) -> bool {
    region_offset(ptr as u64).is_some()
}

/// Returns the slot at `ptr`, of `size` bytes, that [`alloc`] handed out.
#[inline]
pub(crate) fn free(ptr: NonNull<u8>, size: usize) {
    let cached = THREAD_MAGAZINES.try_with(|m| {
        // SAFETY: as in `alloc`.
        unsafe { &mut *m.get() }.put(ptr, size)
    });
    if cached.is_err() {
        ENTRY_SLABS.free(ptr, size);
    }
}

/// [`free`] straight to the slab, past the thread's magazine: active defragmentation's
/// old copies, so that the sparse slab they leave empties (a magazine would hand the
/// slot to the next allocation).
pub(crate) fn free_to_slab(ptr: NonNull<u8>, size: usize) {
    ENTRY_SLABS.free(ptr, size)
}

/// Freed slots a thread keeps per magazine (half go back when it is full).
const MAGAZINE_SLOTS: usize = 32;
/// Magazines per thread, direct-mapped by block size.
const MAGAZINES: usize = 8;
/// Slots an empty magazine takes from its class at once.
const MAGAZINE_REFILL: usize = 8;

/// A thread's last freed slots of one size, handed out again last-in first-out
/// without a lock (Bonwick's magazines; jemalloc's thread cache does the same for its
/// size classes). Under eviction a SET frees its victim and allocates its new entry:
/// both are a magazine push and pop, and the new entry lands in the victim's slot,
/// whose first line the eviction just read. Through the class's lock the pair took
/// 45 ns (jemalloc's 8 ns) and showed as 5-10 % more CPU per SET.
struct Magazine {
    /// The block size of the slots held (0: none yet).
    size: usize,
    len: usize,
    slots: [*mut u8; MAGAZINE_SLOTS],
}

/// A thread's magazines. Slots in them still count as live in their slabs (a slab
/// holding one is not released, `stats` counts it in use): at most
/// `MAGAZINES * MAGAZINE_SLOTS` slots per thread, 132 KB at the largest size.
struct Magazines([Magazine; MAGAZINES]);

thread_local! {
    static THREAD_MAGAZINES: std::cell::UnsafeCell<Magazines> = const {
        std::cell::UnsafeCell::new(Magazines(
            [const {
                Magazine {
                    size: 0,
                    len: 0,
                    slots: [std::ptr::null_mut(); MAGAZINE_SLOTS],
                }
            }; MAGAZINES],
        ))
    };
}

impl Magazines {
    /// The last slot of `size` this thread freed, or, when the magazine has none, a
    /// batch of [`MAGAZINE_REFILL`] slots taken under one lock (a fill allocates without
    /// freeing: a lock per allocation cost it ~5 % of its CPU), one of them returned.
    #[inline]
    fn take_or_refill(&mut self, size: usize) -> Option<NonNull<u8>> {
        let m = &mut self.0[size % MAGAZINES];
        if m.size == size && m.len > 0 {
            m.len -= 1;
            return NonNull::new(m.slots[m.len]);
        }
        if m.size != size && m.len > 0 {
            // The magazine holds another size's freed slots: leave it to that size.
            return ENTRY_SLABS.alloc(size);
        }
        m.size = size;
        let got = ENTRY_SLABS.alloc_batch(size, &mut m.slots[..MAGAZINE_REFILL]);
        if got == 0 {
            return None;
        }
        // Hand out the lowest-addressed first (the batch came in allocation order).
        m.slots[..got].reverse();
        m.len = got - 1;
        NonNull::new(m.slots[got - 1])
    }

    #[inline]
    fn put(&mut self, ptr: NonNull<u8>, size: usize) {
        let m = &mut self.0[size % MAGAZINES];
        if m.size != size {
            // Another size maps here: its slots go back to their slabs.
            ENTRY_SLABS.free_many(m.size, &m.slots[..m.len]);
            m.size = size;
            m.len = 0;
        } else if m.len == MAGAZINE_SLOTS {
            // Full: the older half goes back, the newer (cached) half stays.
            let half = MAGAZINE_SLOTS / 2;
            ENTRY_SLABS.free_many(size, &m.slots[..half]);
            m.slots.copy_within(half.., 0);
            m.len -= half;
        }
        m.slots[m.len] = ptr.as_ptr();
        m.len += 1;
    }
}

impl Drop for Magazines {
    /// A thread that ends gives its slots back.
    fn drop(&mut self) {
        for m in &mut self.0 {
            ENTRY_SLABS.free_many(m.size, &m.slots[..m.len]);
            m.len = 0;
        }
    }
}

/// Whether moving the short entry at `ptr` (of `size` bytes) to a fresh slot frees
/// space: its slab has a free slot, is not the one allocations go to, the class holds
/// more slabs than its live slots need, and the slab is no fuller than the
/// class's other slabs on average (the copy lands in the current slab or a new one, and
/// the sparse slab empties and is released).
///
/// The average leaves out the current slab. With it, a class whose slabs had all been
/// thinned to the same fill (random deletions, eviction) and whose current slab was
/// nearly empty had no slab at or below the average: each class kept ~2 slabs of free
/// slots that no walk would pack, 7.5 MiB over ~245 classes in `bench/memory_drift.sh`
/// (RSS over issue 10's bound). The spare-slab condition keeps a class whose free slots
/// add up to less than a slab (packing would release nothing) from being churned.
pub(crate) fn worth_moving(ptr: *const u8, size: usize) -> bool {
    ENTRY_SLABS.worth_moving(ptr, size)
}

/// What the slabs hold, over every class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlabStats {
    /// Slabs held by classes.
    pub slabs: usize,
    /// Their bytes.
    pub bytes: usize,
    /// Bytes of the slots in use.
    pub live_bytes: usize,
}

impl SlabStats {
    /// Slab bytes not holding an entry: free slots and tails.
    pub fn free_bytes(&self) -> usize {
        self.bytes - self.live_bytes
    }
}

/// Totals over every class of the entries' slabs (takes each class's lock in turn: for
/// INFO and the defragmenter's trigger, not for the request path).
pub fn stats() -> SlabStats {
    ENTRY_SLABS.stats()
}

impl SlabAllocator {
    pub(crate) const fn new() -> SlabAllocator {
        SlabAllocator {
            classes: [const {
                Mutex::new(Class {
                    current: NONE,
                    partial_head: NONE,
                    slabs: 0,
                    live: 0,
                })
            }; CLASSES],
        }
    }

    fn class(&self, size: usize) -> MutexGuard<'_, Class> {
        debug_assert!((MIN_BLOCK..=MAX_BLOCK).contains(&size));
        // Nothing under the lock panics, so a poisoned lock still guards consistent data.
        self.classes[size - MIN_BLOCK]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn alloc(&self, size: usize) -> Option<NonNull<u8>> {
        self.alloc_in(size, true)
    }

    /// `reuse`: take a partial slab's slot before a new slab's (every allocation but
    /// active defragmentation's, [`alloc_packed`]).
    fn alloc_in(&self, size: usize, reuse: bool) -> Option<NonNull<u8>> {
        let r = region()?;
        let mut c = self.class(size);
        Self::alloc_locked(&mut c, r, size, reuse)
    }

    /// Fills `out` with slots of `size` bytes under one acquisition of the class's lock;
    /// returns how many it got (fewer only when the region is full).
    fn alloc_batch(&self, size: usize, out: &mut [*mut u8]) -> usize {
        let Some(r) = region() else {
            return 0;
        };
        let mut c = self.class(size);
        for (i, slot) in out.iter_mut().enumerate() {
            match Self::alloc_locked(&mut c, r, size, true) {
                Some(p) => *slot = p.as_ptr(),
                None => return i,
            }
        }
        out.len()
    }

    fn alloc_locked(c: &mut Class, r: &Region, size: usize, reuse: bool) -> Option<NonNull<u8>> {
        let capacity = capacity_of(size);
        // (The slot freed last comes first from the thread's magazine, not from here.)
        // SAFETY (all meta accesses below): the slabs reached from the class are the
        // class's, and its lock is held.
        if c.current == NONE || unsafe { r.meta(c.current) }.live == capacity {
            let next = if reuse && c.partial_head != NONE {
                let n = c.partial_head;
                unsafe { c.unlink_partial(r, n) };
                n
            } else {
                let n = take_slab(r)?;
                c.slabs += 1;
                // Its slots are handed out only after this store, and reach other
                // threads through the store's locks.
                slot_size_entry(n).store(size as u16, Ordering::Relaxed);
                n
            };
            c.current = next;
        }
        let n = c.current;
        let base = r.slab_base(n);
        let m = unsafe { r.meta(n) };
        let off = if m.free_head != NONE {
            let off = m.free_head;
            // SAFETY: a free slot's first four bytes hold the next free offset.
            m.free_head = unsafe { ((base + off as usize) as *const u32).read_unaligned() };
            off
        } else {
            let off = m.bump;
            m.bump += size as u32;
            off
        };
        m.live += 1;
        c.live += 1;
        // SAFETY: the region's addresses are non-null; the offset is inside the slab.
        Some(unsafe { NonNull::new_unchecked((base + off as usize) as *mut u8) })
    }

    pub(crate) fn free(&self, ptr: NonNull<u8>, size: usize) {
        let r = region().expect("a slot was handed out from the region");
        let mut c = self.class(size);
        Self::free_locked(&mut c, r, ptr.as_ptr(), size);
    }

    /// Frees several slots of one size under one acquisition of the class's lock.
    fn free_many(&self, size: usize, slots: &[*mut u8]) {
        if slots.is_empty() {
            return;
        }
        let r = region().expect("a slot was handed out from the region");
        let mut c = self.class(size);
        for &p in slots {
            Self::free_locked(&mut c, r, p, size);
        }
    }

    fn free_locked(c: &mut Class, r: &Region, ptr: *mut u8, size: usize) {
        let n = slab_number(ptr as usize);
        let base = r.slab_base(n);
        let capacity = capacity_of(size);
        c.live -= 1;
        // SAFETY: the slot's slab is this class's; its lock is held.
        let m = unsafe { r.meta(n) };
        // SAFETY: the slot is at least MIN_BLOCK (>= 4) bytes and no longer in use.
        unsafe { (ptr as *mut u32).write_unaligned(m.free_head) };
        m.free_head = (ptr as usize - base) as u32;
        let was_full = m.live == capacity;
        m.live -= 1;
        let now_empty = m.live == 0;
        if n == c.current {
            return;
        }
        if now_empty {
            if !was_full {
                // SAFETY: a non-current slab with a free slot is in the partial list.
                unsafe { c.unlink_partial(r, n) };
            }
            c.slabs -= 1;
            release_slab(r, n);
        } else if was_full {
            // SAFETY: a full slab is in no list.
            unsafe { c.push_partial(r, n) };
        }
    }

    pub(crate) fn worth_moving(&self, ptr: *const u8, size: usize) -> bool {
        let Some(r) = region() else {
            return false;
        };
        let n = slab_number(ptr as usize);
        let c = self.class(size);
        if n == c.current || c.current == NONE {
            return false;
        }
        let capacity = capacity_of(size) as usize;
        if c.slabs <= c.live.div_ceil(capacity) {
            return false;
        }
        // SAFETY: the live slot's slab and the current slab are this class's; its lock
        // is held.
        let (live, current_live) =
            unsafe { (r.meta(n).live as usize, r.meta(c.current).live as usize) };
        live < capacity && live * (c.slabs - 1) <= c.live - current_live
    }

    pub(crate) fn stats(&self) -> SlabStats {
        let mut s = SlabStats::default();
        for (i, lock) in self.classes.iter().enumerate() {
            let c = lock.lock().unwrap_or_else(|e| e.into_inner());
            s.slabs += c.slabs;
            s.live_bytes += c.live * (i + MIN_BLOCK);
        }
        s.bytes = s.slabs * SLAB_BYTES;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each test has its own allocator: the store's tests allocate from the global one
    /// concurrently, in every class.
    fn fresh() -> Box<SlabAllocator> {
        Box::new(SlabAllocator::new())
    }

    /// Allocates until the class holds `slabs` slabs, all full.
    fn fill_slabs(a: &SlabAllocator, size: usize, slabs: usize) -> Vec<NonNull<u8>> {
        (0..slabs * capacity_of(size) as usize)
            .map(|_| a.alloc(size).unwrap())
            .collect()
    }

    /// The thread's magazine hands the last freed slot back first, holds at most
    /// `MAGAZINE_SLOTS` (the rest go back to their slabs) and empties when the thread
    /// ends. (The global allocator, with a size the store's tests do not use.)
    #[test]
    fn magazines_reuse_the_last_freed_slot_and_return_theirs_at_thread_exit() {
        let size = MAX_BLOCK - 11;
        let live = move || ENTRY_SLABS.class(size).live;
        let before = live();
        std::thread::spawn(move || {
            let slots: Vec<NonNull<u8>> = (0..100).map(|_| alloc(size).unwrap()).collect();
            // Allocations come in batches: a batch's rest waits in the magazine.
            assert!((100..100 + MAGAZINE_REFILL).contains(&(live() - before)));
            free(slots[7], size);
            free(slots[9], size);
            assert_eq!(alloc(size), Some(slots[9]));
            assert_eq!(alloc(size), Some(slots[7]));
            for &p in &slots {
                free(p, size);
            }
            // At most a magazine's worth is still held.
            assert!(live() - before <= MAGAZINE_SLOTS, "{}", live() - before);
            assert!(live() - before >= MAGAZINE_SLOTS / 2);
        })
        .join()
        .unwrap();
        assert_eq!(live(), before);
    }

    #[test]
    fn slots_are_exact_distinct_and_reused() {
        let a = fresh();
        let size = MAX_BLOCK - 1;
        // Exactly three full slabs: after the frees below, every free slot is one that
        // was handed out before.
        let mut slots = fill_slabs(&a, size, 3);
        let mut addrs: Vec<usize> = slots.iter().map(|p| p.as_ptr() as usize).collect();
        addrs.sort_unstable();
        for w in addrs.windows(2) {
            assert!(w[1] - w[0] >= size, "overlapping slots");
        }
        let r = region().unwrap();
        for &p in &addrs {
            assert!(is_slot(p as *const u8));
            let n = slab_number(p);
            assert!(
                p + size <= r.slab_base(n) + SLAB_BYTES,
                "a slot past its slab"
            );
        }
        assert_eq!(a.class(size).slabs, 3);
        for (i, p) in slots.iter().enumerate() {
            // SAFETY: each slot is `size` bytes and ours.
            unsafe { std::ptr::write_bytes(p.as_ptr(), i as u8, size) };
        }
        for (i, p) in slots.iter().enumerate() {
            // SAFETY: as above.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
            assert!(s.iter().all(|&b| b == i as u8), "slot {i} was overwritten");
        }
        // Free every other slot: the next allocations reuse them, no new slab.
        let freed: Vec<NonNull<u8>> = slots.iter().copied().step_by(2).collect();
        slots = slots.into_iter().skip(1).step_by(2).collect();
        for &p in &freed {
            a.free(p, size);
        }
        let slabs_before = a.class(size).slabs;
        let again: Vec<NonNull<u8>> = (0..freed.len()).map(|_| a.alloc(size).unwrap()).collect();
        assert_eq!(a.class(size).slabs, slabs_before);
        let mut reused: Vec<usize> = again.iter().map(|p| p.as_ptr() as usize).collect();
        let mut f: Vec<usize> = freed.iter().map(|p| p.as_ptr() as usize).collect();
        reused.sort_unstable();
        f.sort_unstable();
        assert_eq!(reused, f);
        for p in slots.into_iter().chain(again) {
            a.free(p, size);
        }
        let c = a.class(size);
        assert_eq!(c.live, 0);
        assert!(c.slabs <= 1, "empty slabs are released (kept: {})", c.slabs);
    }

    #[test]
    fn sparse_slabs_are_worth_moving_full_and_current_ones_are_not() {
        let a = fresh();
        let size = MAX_BLOCK - 3;
        let slots = fill_slabs(&a, size, 4);
        // Every slab full: nothing to gain.
        assert!(!a.worth_moving(slots[0].as_ptr(), size));
        assert!(region().is_some());
        let slab = |p: &NonNull<u8>| slab_number(p.as_ptr() as usize);
        let numbers: Vec<u32> = {
            let mut v: Vec<u32> = slots.iter().map(slab).collect();
            v.dedup();
            v
        };
        let in_slab = |n: u32| -> Vec<NonNull<u8>> {
            slots.iter().copied().filter(|p| slab(p) == n).collect()
        };
        let (first, second) = (in_slab(numbers[0]), in_slab(numbers[1]));
        // The first slab thinned to one entry: packing it would need another slab for
        // that entry (the current one is full), so the class would hold as many slabs
        // as before: not worth moving.
        for &p in &first[1..] {
            a.free(p, size);
        }
        assert!(!a.worth_moving(first[0].as_ptr(), size));
        // Free slots adding up to more than a slab: the sparse slab's survivor is worth
        // moving, a full slab's entries are not, nor a slab fuller than the others.
        for &p in &second[1..6] {
            a.free(p, size);
        }
        assert!(a.worth_moving(first[0].as_ptr(), size));
        assert!(!a.worth_moving(second[0].as_ptr(), size));
        let third = in_slab(numbers[2]);
        assert!(!a.worth_moving(third[0].as_ptr(), size));
        // The current slab's entries never are.
        let current = in_slab(numbers[3]);
        assert!(!a.worth_moving(current[0].as_ptr(), size));
        // A class whose slabs all thinned to the same fill, its current slab nearly
        // empty: each non-current slab is at the others' average, so worth moving (with
        // the current slab counted in the average, none was, and the free slots stayed).
        for &p in first.iter().take(1).chain(&second[..1]).chain(&second[6..]) {
            a.free(p, size);
        }
        for &p in third
            .iter()
            .take(third.len() / 2)
            .chain(current.iter().skip(1))
        {
            a.free(p, size);
        }
        for p in third.iter().skip(third.len() / 2) {
            assert!(a.worth_moving(p.as_ptr(), size));
        }
        for &p in third.iter().skip(third.len() / 2).chain(&current[..1]) {
            a.free(p, size);
        }
        assert_eq!(a.class(size).live, 0);
    }

    #[test]
    fn stats_count_live_bytes_and_slabs() {
        let a = fresh();
        let size = MAX_BLOCK - 5;
        let slots: Vec<NonNull<u8>> = (0..1000).map(|_| a.alloc(size).unwrap()).collect();
        let c = a.class(size).slabs;
        assert_eq!(c, 1000usize.div_ceil(SLAB_BYTES / size));
        let s = a.stats();
        assert_eq!((s.live_bytes, s.slabs), (1000 * size, c));
        assert_eq!(s.bytes, s.slabs * SLAB_BYTES);
        assert_eq!(s.free_bytes(), c * SLAB_BYTES - 1000 * size);
        for &p in &slots {
            a.free(p, size);
        }
        assert_eq!(a.class(size).live, 0);
    }

    /// Alloc and free from several threads at once on one class: no slot is handed out
    /// twice and the counts come back to zero.
    #[test]
    fn concurrent_allocations_never_share_a_slot() {
        let a: &'static SlabAllocator = Box::leak(fresh());
        let size = MAX_BLOCK - 7;
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut held: Vec<usize> = Vec::new();
                    for i in 0..20_000usize {
                        if i % 3 == 2 && !held.is_empty() {
                            let slot = held.swap_remove((i * 7919) % held.len());
                            // SAFETY: the slot is ours and `size` bytes.
                            let s = unsafe { std::slice::from_raw_parts(slot as *const u8, size) };
                            assert!(s.iter().all(|&b| b == t as u8 + 1), "slot shared");
                            a.free(NonNull::new(slot as *mut u8).unwrap(), size);
                        } else {
                            let p = a.alloc(size).unwrap();
                            // SAFETY: as above.
                            unsafe { std::ptr::write_bytes(p.as_ptr(), t as u8 + 1, size) };
                            held.push(p.as_ptr() as usize);
                        }
                    }
                    for slot in held {
                        a.free(NonNull::new(slot as *mut u8).unwrap(), size);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let c = a.class(size);
        assert_eq!(c.live, 0);
        assert!(c.slabs <= 1);
    }
}
