//! Exact-size slabs for short entries: every block of 8..=530 bytes gets a slot of
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
//! 255 bytes, an 8-byte header) is stored in a slot of exactly its block size, 122 bytes
//! for that item. (zExpander §2.2 and issue 10 item 6: "finer size classes, slab or
//! segment storage, or the item header".)
//!
//! # Layout
//!
//! A slab is a [`SLAB_BYTES`] allocation from jemalloc, aligned to its size (so the slab
//! of a slot is its address masked), cut into equal slots of one class (a block size).
//! Slots are handed out in address order (`bump`, so a new slab's pages are touched only
//! as they fill) and then from a free list threaded through the free slots (a free
//! slot's first four bytes hold the offset of the next). The tail that no whole slot
//! fits is the only waste: 0.1 % for 122-byte slots.
//!
//! The slabs' bookkeeping ([`SlabMeta`]) is not in the slabs but in a dense table per
//! class, found from the slab's address through a small hash map. A first version kept
//! it in a header inside each slab: freeing an evicted entry then touched a line of a
//! random slab, usually on another page than the entry, and under eviction (a free and
//! an allocation per SET) the server spent 10-19 % more CPU per request than with
//! jemalloc while executing fewer instructions (callgrind: 4,106 against 4,175 per SET):
//! TLB and cache misses, which the table, a few KB per class, does not take.
//!
//! # Classes and locking
//!
//! One [`Class`] per block size, each behind its own mutex (the allocation and the free
//! of a short entry take it once; entries of different sizes never contend). A class
//! allocates from its `current` slab until it is full, then from the most recently
//! freed-into slab of its partial list (LIFO: under eviction that is the slot just
//! freed, whose lines are cached), then from a new slab. A slab whose last slot is
//! freed goes back to jemalloc at once (unless it is `current`), so a class that stops
//! being used holds at most one slab. Slots free in partial slabs are fragmentation that
//! only allocations of the same size can reuse; `crate::defrag` moves entries out of
//! slabs no fuller than their class's average ([`worth_moving`], the rule Redis's
//! jemalloc hint applies to jemalloc's slabs), and the server counts the free slots as
//! fragmentation ([`stats`]), which is what starts it.

use std::hash::{BuildHasher, Hasher};
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

/// Bytes per slab (and its alignment).
pub const SLAB_BYTES: usize = 64 << 10;
/// "None" for slab indices and slot offsets.
const NONE: u32 = u32::MAX;
/// The smallest block a slab slot holds (a short entry's header, empty key and value).
pub const MIN_BLOCK: usize = 8;
/// The largest block a slab slot holds: a short header, a TTL block and 255-byte key and
/// value.
pub const MAX_BLOCK: usize = 8 + 12 + 255 + 255;
const CLASSES: usize = MAX_BLOCK - MIN_BLOCK + 1;

/// One slab's bookkeeping, in its class's dense table.
struct SlabMeta {
    /// The slab's address.
    base: usize,
    /// Slots handed out and not freed.
    live: u32,
    /// Offset of the first slot of the free list, [`NONE`] if the list is empty.
    free_head: u32,
    /// Offset of the first never-used slot.
    bump: u32,
    /// Neighbours in the class's partial list (table indices, [`NONE`] at the ends).
    prev: u32,
    next: u32,
}

/// Slab addresses are multiples of [`SLAB_BYTES`]: a multiplicative hash of the slab
/// number spreads them (a const-constructible hasher, for the static table).
#[derive(Clone, Copy, Default)]
struct SlabAddrHash;

struct SlabAddrHasher(u64);

impl Hasher for SlabAddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n / SLAB_BYTES) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl BuildHasher for SlabAddrHash {
    type Hasher = SlabAddrHasher;
    fn build_hasher(&self) -> SlabAddrHasher {
        SlabAddrHasher(0)
    }
}

/// One size class: its slabs, and which of them can take an allocation.
struct Class {
    /// Every slab of the class (entries of released slabs are reused: `spare`).
    metas: Vec<SlabMeta>,
    /// Indices in `metas` free for a new slab.
    spare: Vec<u32>,
    /// Slab address to index in `metas`.
    by_base: hashbrown::HashMap<usize, u32, SlabAddrHash>,
    /// The slab allocations go to ([`NONE`]: none yet). Never in the partial list.
    current: u32,
    /// The most recently freed-into slab with a free slot, other than `current`.
    partial_head: u32,
    /// The slab of the last slot freed, while it still has a free slot ([`NONE`]
    /// otherwise): allocations take that slot first (see [`SlabAllocator::alloc`]).
    last_freed: u32,
    /// Slabs the class holds (including `current`).
    slabs: usize,
    /// Slots handed out and not freed, over all its slabs.
    live: usize,
}

/// Every class's state. The store uses one, [`ENTRY_SLABS`]; tests make their own.
pub(crate) struct SlabAllocator {
    classes: [Mutex<Class>; CLASSES],
}

/// The slabs of every short entry in the process (entries move between shards, so
/// the slabs are not a shard's).
static ENTRY_SLABS: SlabAllocator = SlabAllocator::new();

impl SlabAllocator {
    pub(crate) const fn new() -> SlabAllocator {
        SlabAllocator {
            classes: [const {
                Mutex::new(Class {
                    metas: Vec::new(),
                    spare: Vec::new(),
                    by_base: hashbrown::HashMap::with_hasher(SlabAddrHash),
                    current: NONE,
                    partial_head: NONE,
                    last_freed: NONE,
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
}

#[inline]
fn slab_of(ptr: *const u8) -> usize {
    ptr as usize & !(SLAB_BYTES - 1)
}

/// Slots of `size` bytes in a slab.
#[inline]
fn capacity_of(size: usize) -> u32 {
    (SLAB_BYTES / size) as u32
}

fn new_slab_memory() -> usize {
    let flags =
        tikv_jemalloc_sys::MALLOCX_ALIGN(SLAB_BYTES) | tikv_jemalloc_sys::MALLOCX_TCACHE_NONE;
    // SAFETY: a non-zero size with a power-of-two alignment; checked for null below.
    let raw = unsafe { tikv_jemalloc_sys::mallocx(SLAB_BYTES, flags) } as *mut u8;
    if raw.is_null() {
        std::alloc::handle_alloc_error(
            std::alloc::Layout::from_size_align(SLAB_BYTES, SLAB_BYTES).unwrap(),
        );
    }
    raw as usize
}

fn release_slab_memory(slab: usize) {
    // SAFETY: the slab came from mallocx with these flags and holds no live slot.
    unsafe { tikv_jemalloc_sys::dallocx(slab as *mut _, tikv_jemalloc_sys::MALLOCX_TCACHE_NONE) }
}

impl Class {
    fn index_of(&self, slab: usize) -> u32 {
        *self
            .by_base
            .get(&slab)
            .expect("a slot of this class lies in one of its slabs")
    }

    fn add_slab(&mut self) -> u32 {
        let base = new_slab_memory();
        let meta = SlabMeta {
            base,
            live: 0,
            free_head: NONE,
            bump: 0,
            prev: NONE,
            next: NONE,
        };
        let i = match self.spare.pop() {
            Some(i) => {
                self.metas[i as usize] = meta;
                i
            }
            None => {
                self.metas.push(meta);
                (self.metas.len() - 1) as u32
            }
        };
        self.by_base.insert(base, i);
        self.slabs += 1;
        i
    }

    fn remove_slab(&mut self, i: u32) {
        let base = self.metas[i as usize].base;
        self.by_base.remove(&base);
        self.spare.push(i);
        self.slabs -= 1;
        release_slab_memory(base);
    }

    fn push_partial(&mut self, i: u32) {
        let head = self.partial_head;
        let m = &mut self.metas[i as usize];
        m.prev = NONE;
        m.next = head;
        if head != NONE {
            self.metas[head as usize].prev = i;
        }
        self.partial_head = i;
    }

    fn unlink_partial(&mut self, i: u32) {
        let (prev, next) = {
            let m = &mut self.metas[i as usize];
            let links = (m.prev, m.next);
            m.prev = NONE;
            m.next = NONE;
            links
        };
        if prev != NONE {
            self.metas[prev as usize].next = next;
        } else {
            self.partial_head = next;
        }
        if next != NONE {
            self.metas[next as usize].prev = prev;
        }
    }
}

/// A slot of exactly `size` bytes (`MIN_BLOCK..=MAX_BLOCK`), uninitialised.
#[inline]
pub(crate) fn alloc(size: usize) -> NonNull<u8> {
    ENTRY_SLABS.alloc(size)
}

/// Returns the slot at `ptr`, of `size` bytes, that [`alloc`] handed out.
#[inline]
pub(crate) fn free(ptr: NonNull<u8>, size: usize) {
    ENTRY_SLABS.free(ptr, size)
}

/// Whether moving the short entry at `ptr` (of `size` bytes) to a fresh slot frees
/// space: its slab has a free slot, is not the one allocations go to, and is no fuller
/// than its class's average (so the copy lands in a fuller slab, and the sparse slab
/// empties and is released).
pub(crate) fn worth_moving(ptr: *const u8, size: usize) -> bool {
    ENTRY_SLABS.worth_moving(ptr, size)
}

/// What the slabs hold, over every class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlabStats {
    /// Slabs allocated.
    pub slabs: usize,
    /// Their bytes (what jemalloc counts as allocated for them).
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
    pub(crate) fn alloc(&self, size: usize) -> NonNull<u8> {
        let mut c = self.class(size);
        let capacity = capacity_of(size);
        // The slot freed last first, as a thread cache would: under eviction it is the
        // victim's, whose lines the eviction just read. Filling `current` instead wrote
        // every new entry into cold lines while LRU's frees drained old slabs: 22-29 %
        // more CPU per SET than jemalloc at the same instruction count.
        let hot = c.last_freed;
        if hot != NONE {
            let m = &mut c.metas[hot as usize];
            let off = m.free_head;
            debug_assert!(off != NONE);
            // SAFETY: a free slot's first four bytes hold the next free offset.
            m.free_head = unsafe { ((m.base + off as usize) as *const u32).read_unaligned() };
            m.live += 1;
            let (base, full) = (m.base, m.live == capacity);
            if m.free_head == NONE {
                c.last_freed = NONE;
            }
            if full && hot != c.current {
                c.unlink_partial(hot);
            }
            c.live += 1;
            // SAFETY: slab addresses are non-null and the offset is inside the slab.
            return unsafe { NonNull::new_unchecked((base + off as usize) as *mut u8) };
        }
        if c.current == NONE || c.metas[c.current as usize].live == capacity {
            let next = if c.partial_head != NONE {
                let i = c.partial_head;
                c.unlink_partial(i);
                i
            } else {
                c.add_slab()
            };
            c.current = next;
        }
        c.live += 1;
        let current = c.current as usize;
        let m = &mut c.metas[current];
        let off = if m.free_head != NONE {
            let off = m.free_head;
            // SAFETY: a free slot's first four bytes hold the next free offset.
            m.free_head = unsafe { ((m.base + off as usize) as *const u32).read_unaligned() };
            off
        } else {
            let off = m.bump;
            m.bump += size as u32;
            off
        };
        m.live += 1;
        // SAFETY: slab addresses are non-null and the offset is inside the slab.
        unsafe { NonNull::new_unchecked((m.base + off as usize) as *mut u8) }
    }

    pub(crate) fn free(&self, ptr: NonNull<u8>, size: usize) {
        let slab = slab_of(ptr.as_ptr());
        let mut c = self.class(size);
        let i = c.index_of(slab);
        let capacity = capacity_of(size);
        c.live -= 1;
        let current = c.current;
        let m = &mut c.metas[i as usize];
        // SAFETY: the slot is at least MIN_BLOCK (>= 4) bytes and no longer in use.
        unsafe { (ptr.as_ptr() as *mut u32).write_unaligned(m.free_head) };
        m.free_head = (ptr.as_ptr() as usize - slab) as u32;
        let was_full = m.live == capacity;
        m.live -= 1;
        let now_empty = m.live == 0;
        c.last_freed = i;
        if i == current {
            return;
        }
        if now_empty {
            if !was_full {
                c.unlink_partial(i);
            }
            c.remove_slab(i);
            c.last_freed = NONE;
        } else if was_full {
            c.push_partial(i);
        }
    }

    pub(crate) fn worth_moving(&self, ptr: *const u8, size: usize) -> bool {
        let c = self.class(size);
        let i = c.index_of(slab_of(ptr));
        if i == c.current {
            return false;
        }
        let live = c.metas[i as usize].live;
        live < capacity_of(size) && live as usize * c.slabs <= c.live
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
            .map(|_| a.alloc(size))
            .collect()
    }

    #[test]
    fn the_slab_address_hash_spreads_consecutive_slabs() {
        let mut buckets = [0u32; 64];
        for n in 0..6400usize {
            let mut h = SlabAddrHash.build_hasher();
            h.write_usize(n * SLAB_BYTES);
            buckets[(h.finish() >> 58) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&b| (50..150).contains(&b)),
            "{buckets:?}"
        );
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
        for &p in &addrs {
            assert!(p + size <= slab_of(p as *const u8) + SLAB_BYTES);
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
        let again: Vec<NonNull<u8>> = (0..freed.len()).map(|_| a.alloc(size)).collect();
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
        // The first slab made sparse: its survivors are worth moving; a full slab's
        // entries are not.
        let first = slab_of(slots[0].as_ptr());
        let (in_first, others): (Vec<_>, Vec<_>) =
            slots.iter().partition(|p| slab_of(p.as_ptr()) == first);
        for &p in &in_first[1..] {
            a.free(p, size);
        }
        assert!(a.worth_moving(slots[0].as_ptr(), size));
        assert!(!a.worth_moving(others[others.len() / 2].as_ptr(), size));
        a.free(slots[0], size);
        for &p in &others {
            a.free(p, size);
        }
        assert_eq!(a.class(size).live, 0);
    }

    #[test]
    fn stats_count_live_bytes_and_slabs() {
        let a = fresh();
        let size = MAX_BLOCK - 5;
        let slots: Vec<NonNull<u8>> = (0..1000).map(|_| a.alloc(size)).collect();
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
                            let p = a.alloc(size);
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
