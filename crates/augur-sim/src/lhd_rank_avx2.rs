//! LHD's eviction ranking (§4.1: the lowest hit density among the sampled candidates)
//! eight candidates at a time with AVX2, for [`crate::LhdCache`] in objects mode.
//!
//! Why: an eviction ranks 40 candidates (32 draws and the 8 recent admissions at
//! libCacheSim's settings, 72 at ours), and the scalar loop spends ~37 instructions on
//! each (load the tag, age it, find its density-table entry, load and compare the
//! density): on the small shared traces the eviction is most of the simulation. Here one
//! gather loads eight tags' stamps, another their class codes, the ages and table
//! entries are computed in one register, a third gather loads the eight densities, and
//! a running minimum keeps each lane's lowest rank and its position.
//!
//! The result is exactly the scalar loop's ([`crate::LhdCache`]'s `lowest_density`):
//! the same rank for every candidate (the same table entry, plus 1 for an explorer), and
//! on ties the candidate that comes first, so a simulation's results do not depend on
//! the CPU (a test checks the two against each other on random tags).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::lhd::CompactTag;

/// Whether this CPU runs [`lowest_objects`] (checked once per cache).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// What ranking a compact tag reads besides the tag: the model's clock (low 32 bits),
/// age shift, ages per class and density table (`class * max_age + age`).
pub(crate) struct RankTable<'a> {
    pub now: u32,
    pub shift: u32,
    pub max_age: u32,
    pub density: &'a [f32],
}

/// The position in `candidates` of the lowest-ranked candidate (the first of equals)
/// and its rank, every object of size 1 (objects mode). Indices out of range are
/// clamped (a slot to the last tag, an entry to the last of the table), so no input
/// reads outside `tags` or the table; the callers never pass one.
///
/// # Safety
/// The CPU must support AVX2 ([`available`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn lowest_objects(
    tags: &[CompactTag],
    candidates: &[u32],
    table: &RankTable,
) -> (usize, f32) {
    assert!(!candidates.is_empty() && !tags.is_empty() && !table.density.is_empty());
    // The gathers take signed 32-bit indices.
    assert!(tags.len() <= i32::MAX as usize && table.density.len() <= i32::MAX as usize);
    let last_slot = _mm256_set1_epi32((tags.len() - 1) as i32);
    let last_entry = _mm256_set1_epi32((table.density.len() - 1) as i32);
    let now = _mm256_set1_epi32(table.now as i32);
    let shift = _mm_set_epi64x(0, i64::from(table.shift));
    let last_age = _mm256_set1_epi32(table.max_age.saturating_sub(1) as i32);
    let max_age = _mm256_set1_epi32(table.max_age as i32);
    let class_bits = _mm256_set1_epi32(0x7fff);
    let explorer_bit = _mm256_set1_epi32(0x8000);
    let one = _mm256_set1_ps(1.0);
    let eight = _mm256_set1_epi32(8);
    // `CompactTag` is `repr(C)`: the stamp at byte 0, the code (low 16 bits) and the
    // last hit age (high 16) at byte 4 of each 8-byte tag.
    let stamps = tags.as_ptr() as *const i32;
    let codes = stamps.add(1);
    let density = table.density.as_ptr();

    let mut best = _mm256_set1_ps(f32::MAX);
    let mut best_at = _mm256_set1_epi32(i32::MAX);
    let mut position = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let mut chunks = candidates.chunks_exact(8);
    let tail = chunks.remainder();
    // The ranks of eight candidates' slots (a macro, not a closure: a closure is not
    // compiled with this function's target features, so the intrinsics would be calls).
    macro_rules! rank {
        ($slots:expr) => {{
            let slots = _mm256_min_epu32($slots, last_slot);
            let stamp = _mm256_i32gather_epi32::<8>(stamps, slots);
            let code = _mm256_i32gather_epi32::<8>(codes, slots);
            let age = _mm256_srl_epi32(_mm256_sub_epi32(now, stamp), shift);
            let age = _mm256_min_epu32(age, last_age);
            let class = _mm256_and_si256(code, class_bits);
            let at = _mm256_add_epi32(_mm256_mullo_epi32(class, max_age), age);
            let at = _mm256_min_epu32(at, last_entry);
            let d = _mm256_i32gather_ps::<4>(density, at);
            let explorer = _mm256_cmpeq_epi32(_mm256_and_si256(code, explorer_bit), explorer_bit);
            _mm256_add_ps(d, _mm256_and_ps(_mm256_castsi256_ps(explorer), one))
        }};
    }
    // Each lane keeps its lowest rank and that rank's position (the first of equals:
    // a later candidate replaces it only if strictly lower).
    macro_rules! keep_lowest {
        ($d:expr) => {{
            let d = $d;
            let lower = _mm256_cmp_ps::<_CMP_LT_OQ>(d, best);
            best = _mm256_blendv_ps(best, d, lower);
            best_at = _mm256_blendv_epi8(best_at, position, _mm256_castps_si256(lower));
        }};
    }
    for chunk in chunks.by_ref() {
        keep_lowest!(rank!(_mm256_loadu_si256(chunk.as_ptr() as *const __m256i)));
        position = _mm256_add_epi32(position, eight);
    }
    if !tail.is_empty() {
        // The tail's lanes, the others filled with the first candidate, which ranks as
        // it did at position 0 and so never wins a tie against it. The masked load
        // reads only the tail's own elements.
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let in_tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail.len() as i32), lanes);
        let slots = _mm256_maskload_epi32(tail.as_ptr() as *const i32, in_tail);
        let first = _mm256_set1_epi32(candidates[0] as i32);
        keep_lowest!(rank!(_mm256_blendv_epi8(first, slots, in_tail)));
    }
    // The lowest rank, broadcast to every lane (halves, pairs, neighbours), then the
    // first position among the lanes that hold it.
    let mut low = _mm256_min_ps(best, _mm256_permute2f128_ps::<1>(best, best));
    low = _mm256_min_ps(low, _mm256_permute_ps::<0b01_00_11_10>(low));
    low = _mm256_min_ps(low, _mm256_permute_ps::<0b10_11_00_01>(low));
    let holds_low = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_EQ_OQ>(best, low));
    let mut at = _mm256_blendv_epi8(_mm256_set1_epi32(i32::MAX), best_at, holds_low);
    at = _mm256_min_epi32(at, _mm256_permute2x128_si256::<1>(at, at));
    at = _mm256_min_epi32(at, _mm256_shuffle_epi32::<0b01_00_11_10>(at));
    at = _mm256_min_epi32(at, _mm256_shuffle_epi32::<0b10_11_00_01>(at));
    let (first, rank_min) = (_mm256_cvtsi256_si32(at) as usize, _mm256_cvtss_f32(low));
    (first.min(candidates.len() - 1), rank_min)
}
