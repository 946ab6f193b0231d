//! The simulators' key index (and the MRC models' per-key maps, `augur_mrc::KeyMap`): a
//! hash map from a trace's 64-bit keys, hashed by one folded multiplication.
//!
//! Why not the default hasher: a simulator looks its index up once per request and
//! updates it twice per miss, and with a cache that fits in L1 or L2 (the small shared
//! traces) the hash is on every request's critical path. ahash's fallback (no AES on
//! the build target) takes two folded multiplications and a variable rotation for a
//! `u64`; one is enough to spread any key set over both ends of the hash, which is what
//! hashbrown reads (its low bits pick the bucket, its top 7 bits the tag). Keys come
//! from trace files, not from untrusted clients, so the fixed seed (which also keeps
//! runs reproducible) is no flooding risk; the server's store has its own keyed hash.

use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by trace keys ([`KeyHasher`]).
pub type KeyMap<V> = hashbrown::HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// The 128-bit product's halves folded: every input bit reaches the middle bits of the
/// product and, through the xor, both ends of the result (the "folded multiply" of
/// wyhash and ahash).
#[inline(always)]
fn folded_multiply(x: u64, y: u64) -> u64 {
    let p = u128::from(x) * u128::from(y);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Digits of pi (odd, about half its bits set), so that neither factor is degenerate.
const SEED: u64 = 0x243f_6a88_85a3_08d3;
const MULTIPLIER: u64 = 0x1319_8a2e_0370_7345;

/// Hashes a `u64` key with one [`folded_multiply`]; other inputs (unused by the
/// simulators) are folded in eight bytes at a time.
#[derive(Debug, Clone, Copy)]
pub struct KeyHasher(u64);

impl Default for KeyHasher {
    fn default() -> KeyHasher {
        KeyHasher(SEED)
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write_u64(&mut self, key: u64) {
        self.0 = folded_multiply(self.0 ^ key, MULTIPLIER);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(key: u64) -> u64 {
        BuildHasherDefault::<KeyHasher>::default().hash_one(key)
    }

    /// Structured key sets (sequential block numbers, strided and high-bit-only keys,
    /// as traces have) spread evenly over the buckets a map of their size would use and
    /// over the 128 tags: no bucket or tag gets much more than its share, and no more
    /// buckets stay empty than uniform hashing leaves.
    #[test]
    fn structured_keys_spread_over_buckets_and_tags() {
        type KeySet = (&'static str, fn(u64) -> u64);
        let sets: [KeySet; 4] = [
            ("sequential", |i| i),
            ("stride 4096", |i| i << 12),
            ("high bits", |i| i << 44),
            ("sparse", |i| i * 1_000_003 + (1 << 40)),
        ];
        let n = 1u64 << 14;
        for (name, key) in &sets {
            let mut buckets = vec![0u32; n as usize];
            let mut tags = [0u32; 128];
            for i in 0..n {
                let h = hash(key(i));
                buckets[(h & (n - 1)) as usize] += 1;
                tags[(h >> 57) as usize] += 1;
            }
            let fullest = *buckets.iter().max().unwrap();
            let empty = buckets.iter().filter(|&&b| b == 0).count() as f64 / n as f64;
            // Uniform hashing: max ~8 in 16k buckets, ~37 % empty (1/e); fewer empty
            // (a stride can land almost one key per bucket) is only better.
            assert!(fullest <= 12, "{name}: fullest bucket {fullest}");
            assert!(empty <= 0.45, "{name}: {empty:.3} of buckets empty");
            let (lo, hi) = (tags.iter().min().unwrap(), tags.iter().max().unwrap());
            // 128 per tag on average; binomial spread ~±11.
            assert!(*lo >= 80 && *hi <= 180, "{name}: tags from {lo} to {hi}");
        }
    }

    #[test]
    fn a_key_map_finds_what_it_holds() {
        let mut m: KeyMap<u32> = KeyMap::default();
        for i in 0..10_000u64 {
            m.insert(i << 20, i as u32);
        }
        for i in 0..10_000u64 {
            assert_eq!(m.get(&(i << 20)), Some(&(i as u32)));
            assert_eq!(m.get(&((i << 20) + 1)), None);
        }
    }
}
