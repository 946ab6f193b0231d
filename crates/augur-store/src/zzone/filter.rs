//! The per-block 16-byte Bloom filters of zExpander §3.2: the *Content Filter* (which
//! items a block holds, so a miss or a delete of an absent key decompresses nothing) and
//! the *Access Filter* (which items were read since the sweep last passed the block).
//!
//! Both are 128 bits with k = 4 probes of 7 bits each, taken from a second hash of the
//! key (`mix64` of the trie hash: the trie hash's top bits are the leaf's prefix, shared
//! by every item of a block, so they cannot index a per-block filter). The content filter
//! uses bits 0..28 of that second hash, the access filter bits 28..56, so the two are
//! independent.
//!
//! False-positive rate of a filter of m = 128 bits holding n items with k = 4 probes:
//! `p(n) = (1 - e^(-k n / m))^k` (the standard approximation; a 2 KB block of ~100-byte
//! items holds n ≈ 20, p ≈ 4.7 %; n = 10: p ≈ 0.5 %). The content filter is rebuilt
//! exactly from the block's items every time the block is rewritten, so removals leave
//! no stale bits.

/// Block capacity one Content Filter serves: a larger block gets one filter per this
/// many bytes (see [`part`]), so each holds about as many items as the paper's 2 KB block.
pub const CONTENT_FILTER_SPAN: usize = 2048;

/// Which of a block's `parts` Content Filters second hash `h2` belongs to (its top 8
/// bits, scaled: independent of the probe bits 0..56).
#[inline]
pub fn part(h2: u64, parts: usize) -> usize {
    ((h2 >> 56) as usize * parts) >> 8
}

/// Bits per filter.
pub const FILTER_BITS: u32 = 128;
/// Probes per item.
pub const FILTER_K: u32 = 4;

/// A 128-bit Bloom filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bloom(pub [u64; 2]);

#[inline]
fn probes(h2: u64, shift: u32) -> [u32; FILTER_K as usize] {
    let b = h2 >> shift;
    [
        (b & 127) as u32,
        ((b >> 7) & 127) as u32,
        ((b >> 14) & 127) as u32,
        ((b >> 21) & 127) as u32,
    ]
}

impl Bloom {
    #[inline]
    fn set(&mut self, shift: u32, h2: u64) {
        for p in probes(h2, shift) {
            self.0[(p >> 6) as usize] |= 1u64 << (p & 63);
        }
    }
    #[inline]
    fn test(&self, shift: u32, h2: u64) -> bool {
        probes(h2, shift)
            .iter()
            .all(|&p| self.0[(p >> 6) as usize] & (1u64 << (p & 63)) != 0)
    }
    pub fn clear(&mut self) {
        self.0 = [0; 2];
    }
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 2]
    }
    /// Content-filter insert (bits 0..28 of the second hash).
    #[inline]
    pub fn add_content(&mut self, h2: u64) {
        self.set(0, h2)
    }
    /// Content-filter test.
    #[inline]
    pub fn has_content(&self, h2: u64) -> bool {
        self.test(0, h2)
    }
    /// Access-filter insert (bits 28..56 of the second hash).
    #[inline]
    pub fn add_access(&mut self, h2: u64) {
        self.set(28, h2)
    }
    /// Access-filter test.
    #[inline]
    pub fn has_access(&self, h2: u64) -> bool {
        self.test(28, h2)
    }
}

/// The predicted false-positive rate `(1 - e^(-k n / m))^k` of a filter holding `n` items.
pub fn predicted_fpr(n: usize) -> f64 {
    let k = FILTER_K as f64;
    (1.0 - (-k * n as f64 / FILTER_BITS as f64).exp()).powf(k)
}
