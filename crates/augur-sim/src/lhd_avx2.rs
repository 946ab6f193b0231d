//! LHD's eviction (§4.1: the lowest hit density among uniformly sampled candidates)
//! with AVX2, for [`crate::LhdCache`]: the candidates' draws eight at a time, and their
//! ranking eight at a time in objects mode.
//!
//! Why: an eviction draws and ranks 72 candidates at our settings (64 draws and the 8
//! recent admissions; 16 at libCacheSim's), and on the small shared traces the eviction
//! is most of the simulation. Scalar, a draw cost ~17 instructions (half a xoshiro
//! output, Lemire's multiply and rejection test, the store, the prefetch) and a ranking
//! ~37 (load the tag, age it, find its density-table entry, load and compare the
//! density).
//! - [`draw_slots`]: four xoshiro outputs make eight draws; Lemire's multiplications,
//!   the rejection test and the interleaving of low and high halves take a few vector
//!   instructions; a block with a rejected draw (rare: at most n / 2^32 of the draws)
//!   goes through the scalar rule.
//! - [`lowest_objects`]: one gather loads eight tags' stamps, another their class codes,
//!   the ages and table entries are computed in one register, a third gather loads the
//!   eight densities, and a running minimum keeps each lane's lowest rank and its
//!   position.
//!
//! Both give exactly the scalar code's results: the same draws in the same order with
//! the generator left in the same state, the same victim and rank (ties to the
//! candidate that comes first), so a simulation does not depend on the CPU (tests
//! compare each with its scalar counterpart).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use rand::rngs::SmallRng;
use rand::RngCore;

use crate::lhd::{CompactClock, CompactTag};

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
    clock: CompactClock,
    density: &[f32],
) -> (usize, f32) {
    assert!(!candidates.is_empty() && !tags.is_empty() && !density.is_empty());
    // The gathers take signed 32-bit indices.
    assert!(tags.len() <= i32::MAX as usize && density.len() <= i32::MAX as usize);
    let last_slot = _mm256_set1_epi32((tags.len() - 1) as i32);
    let last_entry = _mm256_set1_epi32((density.len() - 1) as i32);
    let now = _mm256_set1_epi32(clock.now as i32);
    let shift = _mm_set_epi64x(0, i64::from(clock.shift));
    let last_age = _mm256_set1_epi32(clock.max_age.saturating_sub(1) as i32);
    let max_age = _mm256_set1_epi32(clock.max_age as i32);
    let class_bits = _mm256_set1_epi32(0x7fff);
    let explorer_bit = _mm256_set1_epi32(0x8000);
    let one = _mm256_set1_ps(1.0);
    let eight = _mm256_set1_epi32(8);
    // `CompactTag` is `repr(C)`: the stamp at byte 0, the code (low 16 bits) and the
    // last hit age (high 16) at byte 4 of each 8-byte tag.
    let stamps = tags.as_ptr() as *const i32;
    let codes = stamps.add(1);
    let density = density.as_ptr();

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

/// `crate::lhd::draw_slots` (uniform draws over `0..n` into `out`, each slot
/// prefetched), eight draws per step: the same draws in the same order, and `rng` left
/// in the same state.
///
/// # Safety
/// The CPU must support AVX2 ([`available`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn draw_slots<T>(
    rng: &mut SmallRng,
    n: u32,
    reject_below: u32,
    slots: *const T,
    out: &mut [u32],
) {
    let mut generator = rng.clone();
    let scale = _mm256_set1_epi64x(i64::from(n));
    let threshold = _mm256_set1_epi32(reject_below as i32);
    let mut k = 0;
    while out.len() - k >= 8 {
        let x = [
            generator.next_u64(),
            generator.next_u64(),
            generator.next_u64(),
            generator.next_u64(),
        ];
        let v = _mm256_loadu_si256(x.as_ptr() as *const __m256i);
        // Lemire: each 32-bit half times n; the high 32 bits are the draw, the low 32
        // bits decide rejection. Low halves in the even 32-bit lanes, high halves in the
        // odd ones: the scalar order (each output's low half, then its high half).
        let low = _mm256_mul_epu32(v, scale);
        let high = _mm256_mul_epu32(_mm256_srli_epi64::<32>(v), scale);
        let fraction = _mm256_blend_epi32::<0b1010_1010>(low, _mm256_slli_epi64::<32>(high));
        let draws = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(low), high);
        let kept = _mm256_cmpeq_epi32(_mm256_max_epu32(fraction, threshold), fraction);
        if _mm256_movemask_epi8(kept) == -1 {
            let block = &mut out[k..k + 8];
            _mm256_storeu_si256(block.as_mut_ptr() as *mut __m256i, draws);
            for &i in block.iter() {
                crate::prefetch::prefetch(slots.wrapping_add(i as usize));
            }
            k += 8;
        } else {
            // The same halves through the scalar rule, in order. At least 8 draws are
            // still wanted, so all of these outputs' accepted halves are used, as the
            // scalar loop would use them.
            for x in x {
                crate::lhd::take_draws(x, n, reject_below, slots, out, &mut k);
            }
        }
    }
    crate::lhd::draw_slots(&mut generator, n, reject_below, slots, &mut out[k..]);
    *rng = generator;
}
