//! Active defragmentation of the N-zone's entries (what Redis's `activedefrag` does in
//! defrag.c, with the hint its patched jemalloc exports as `je_get_defrag_hint`).
//!
//! Why: every entry is one small jemalloc allocation, and jemalloc gives a slab (a page
//! or a few) back only when all of its regions are free. A cache frees entries in
//! eviction order, not allocation order, and a workload whose value sizes drift moves
//! memory from one size class to another, so slabs end up half empty: after
//! `bench/zone_capacity.sh`'s fill, the 128-byte class held 16 MB in 31 MB of slabs
//! (MEMORY MALLOC-STATS), and RSS was 1.25x `maxmemory`. Nothing the store charges
//! (`used_memory`) sees it; only moving the entries out of sparse slabs gives it back.
//!
//! How: a cursor walks each part's index a bounded number of positions per cron tick.
//! For each entry, jemalloc's `experimental.utilization.query` tells how full the
//! entry's slab is, how full its size class is on average, and which slab new
//! allocations of that class go to (`slabcur`). As in Redis's hint, an entry moves when
//! its slab has free regions, is not `slabcur`, and is no fuller than the class's
//! average (`used_in_slab / regions_in_slab <= used_in_class / regions_in_class`):
//! the copy is allocated and the old block freed past the thread cache
//! (`MALLOCX_TCACHE_NONE`), so the copy lands in the fullest slab with room and the
//! freed region goes straight back to its sparse slab, which empties out and is
//! released. The index word and the TTL list slot are the only references to an entry
//! block (LHD's recent-admission list holds handles it re-checks against the index), so
//! the move is the same operation as giving an entry a TTL block (`swap_allocation`).
//!
//! When it runs is the server's decision (`activedefrag`, the thresholds): it costs a
//! `mallctl` per entry visited, so it only runs while jemalloc's active bytes exceed its
//! allocated bytes by the configured share.

use std::sync::OnceLock;

/// The MIB of `experimental.utilization.query` (None if this jemalloc lacks it).
fn query_mib() -> Option<&'static [usize]> {
    static MIB: OnceLock<Option<Vec<usize>>> = OnceLock::new();
    MIB.get_or_init(|| {
        let name = b"experimental.utilization.query\0";
        let mut mib = [0usize; 4];
        let mut len = mib.len();
        // SAFETY: a NUL-terminated name and a MIB buffer of `len` entries.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctlnametomib(
                name.as_ptr() as *const _,
                mib.as_mut_ptr(),
                &mut len,
            )
        };
        (rc == 0).then(|| mib[..len].to_vec())
    })
    .as_deref()
}

/// Returns every jemalloc arena's dirty pages to the OS now
/// (`arena.<MALLCTL_ARENAS_ALL>.purge`) instead of after the decay time: MEMORY PURGE,
/// and the index after a resize freed a large table (during a fast fill every shard's
/// table doubles several times within a second, and the freed tables, about the size of
/// the final index, otherwise stay resident until they decay, raising peak RSS past
/// `maxmemory`'s bound just as eviction starts). Harmless when the caller's allocations
/// come from another allocator (the tests'): it purges jemalloc's arenas only.
pub fn purge_dirty_pages() {
    // MALLCTL_ARENAS_ALL is 4096 in jemalloc 5.
    // SAFETY: a NUL-terminated name, no input or output.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arena.4096.purge".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// Whether the allocation at `ptr` (a live jemalloc allocation) sits in a slab that is
/// no fuller than its size class's average and is not the slab new allocations of its
/// class go to, so moving it frees space (Redis's `je_get_defrag_hint`).
pub(crate) fn worth_moving(ptr: *const u8) -> bool {
    let Some(mib) = query_mib() else {
        return false;
    };
    // Output: slabcur address, then nfree, nregs, slab bytes, class nfree, class nregs.
    let mut out = [0usize; 6];
    let mut out_len = std::mem::size_of_val(&out);
    let mut input = ptr as *const std::ffi::c_void;
    // SAFETY: the output buffer has the size the query requires (a pointer and five
    // size_t), and the input is a pointer to one pointer, as documented in jemalloc's
    // ctl.c (experimental_utilization_query_ctl).
    let rc = unsafe {
        tikv_jemalloc_sys::mallctlbymib(
            mib.as_ptr(),
            mib.len(),
            out.as_mut_ptr() as *mut _,
            &mut out_len,
            &mut input as *mut _ as *mut _,
            std::mem::size_of::<*const std::ffi::c_void>(),
        )
    };
    if rc != 0 {
        return false;
    }
    let [slabcur, nfree, nregs, slab_bytes, class_nfree, class_nregs] = out;
    if nregs <= 1 || nfree == 0 || class_nregs == 0 || class_nfree > class_nregs {
        // A large allocation, a full slab, or no class statistics.
        return false;
    }
    let p = ptr as usize;
    if slabcur != 0 && p >= slabcur && p < slabcur + slab_bytes {
        return false;
    }
    let used = (nregs - nfree) as u128;
    let class_used = (class_nregs - class_nfree) as u128;
    used * class_nregs as u128 <= class_used * nregs as u128
}

/// What one defragmentation pass did (INFO stats' active_defrag_* fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefragStats {
    /// Entries moved.
    pub hits: u64,
    /// Entries looked at and left where they were.
    pub misses: u64,
}

impl DefragStats {
    pub fn add(&mut self, o: DefragStats) {
        self.hits += o.hits;
        self.misses += o.misses;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fragmented size class: many 600-byte blocks (the 640-byte class, which other
    /// tests running alongside hardly use), three in four of the first half freed. A
    /// block in that sparse half is worth moving; a block of a full slab is not.
    #[test]
    fn hint_prefers_sparse_slabs() {
        if query_mib().is_none() {
            eprintln!("SKIPPED: this jemalloc has no utilization query");
            return;
        }
        let alloc = |n: usize| -> Vec<*mut u8> {
            (0..n)
                // SAFETY: plain allocations, freed below.
                .map(|_| unsafe {
                    tikv_jemalloc_sys::mallocx(600, tikv_jemalloc_sys::MALLOCX_TCACHE_NONE)
                } as *mut u8)
                .collect()
        };
        let blocks = alloc(20_000);
        let mut kept = Vec::new();
        for (i, &b) in blocks.iter().enumerate() {
            if i < 10_000 && !i.is_multiple_of(4) {
                // SAFETY: allocated above, freed once.
                unsafe {
                    tikv_jemalloc_sys::dallocx(b as *mut _, tikv_jemalloc_sys::MALLOCX_TCACHE_NONE)
                };
            } else {
                kept.push((i, b));
            }
        }
        let sparse = kept
            .iter()
            .filter(|(i, _)| *i < 10_000)
            .filter(|(_, b)| worth_moving(*b))
            .count();
        let dense = kept
            .iter()
            .filter(|(i, _)| *i >= 10_000 && *i < 19_000)
            .filter(|(_, b)| worth_moving(*b))
            .count();
        // SAFETY: the kept blocks are live; each freed once.
        for (_, b) in kept {
            unsafe {
                tikv_jemalloc_sys::dallocx(b as *mut _, tikv_jemalloc_sys::MALLOCX_TCACHE_NONE)
            };
        }
        assert!(
            sparse >= 2_250,
            "sparse blocks worth moving: {sparse} of 2500"
        );
        assert!(
            dense <= 90,
            "blocks in full slabs worth moving: {dense} of 9000"
        );
    }
}
