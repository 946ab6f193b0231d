//! A software prefetch: asks the memory system for a cache line that will be read soon,
//! so that several independent cache misses overlap instead of being paid one after the
//! other. Used where a loop knows its next random accesses in advance (the working-set
//! counter, LHD's sampled eviction candidates).

/// Prefetches the cache line holding `p` into all cache levels. A hint only: it never
/// faults, whatever `p` is; a no-op where the target has no stable intrinsic.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: _mm_prefetch is a hint that never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
