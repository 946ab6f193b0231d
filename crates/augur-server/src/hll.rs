//! Redis 7.0's HyperLogLog representation (hyperloglog.c), byte for byte, with no
//! server types: PFADD, PFCOUNT, PFMERGE and PFDEBUG (`commands::hll`) work on the
//! bytes of an ordinary string value through these functions, so that an HLL GET from
//! Augur equals one GET from redis-server, DUMP/RESTORE and GET/SET carry HLLs both
//! ways, and PFCOUNT returns Redis's estimate exactly.
//!
//! # Format
//!
//! A 16-byte header: the magic `HYLL`, one encoding byte (0 dense, 1 sparse), three
//! unused zero bytes, and the cached cardinality as a little-endian u64 whose most
//! significant bit (bit 7 of byte 15) set means "stale, recompute".
//!
//! - *Dense*: 16384 registers of 6 bits (12288 bytes), register `i` starting at bit
//!   `6*i` counted from the least significant bit of byte `6*i/8` (hyperloglog.c's
//!   HLL_DENSE_GET_REGISTER / HLL_DENSE_SET_REGISTER).
//! - *Sparse*: run-length opcodes covering the 16384 registers in order. `00xxxxxx`
//!   ZERO: `x+1` (1..=64) zero registers; `01xxxxxx yyyyyyyy` XZERO: `(x<<8|y)+1`
//!   (1..=16384) zero registers; `1vvvvvxx` VAL: `x+1` (1..=4) registers of value
//!   `v+1` (1..=32). A new HLL is sparse, one XZERO:16384. A register above 32, or an
//!   update that would make the value longer than `hll-sparse-max-bytes`, converts it
//!   to dense (hllSparseSet's `promote`).
//!
//! An element's register is the low 14 bits of MurmurHash64A(element, seed 0xadc83b19);
//! its value is the position of the first set bit of the other 50 bits, counting from 1
//! (51 when all are zero). The estimate is Ertl's ("New cardinality estimation
//! algorithms for HyperLogLog sketches", arXiv:1702.01284) from the registers'
//! histogram, as hllCount computes it, in the same floating-point order.
//!
//! # Corrupt values
//!
//! An HLL is a string a client may SETRANGE or APPEND at will, so nothing here trusts
//! it: a read past the end sees the byte Redis would read there (the sds NUL
//! terminator, or what hllSparseSet left past the end earlier in the same command: see
//! [`sparse_set`]), a sparse value whose opcodes do not cover exactly 16384 registers
//! is invalid (`Err(Invalid)`, Redis's INVALIDOBJ), and no index is taken unchecked.
//! The behaviour on corrupt values is Debian's redis-server 7.0.15's, as measured
//! reply for reply and byte for byte (`crates/augur/tests/hll_e2e.rs`, `with_redis`).

/// Header length.
pub const HDR_SIZE: usize = 16;
/// log2 of the register count.
pub const P: u32 = 14;
/// Hash bits left after the index: the longest run counted is Q+1.
pub const Q: u32 = 64 - P;
pub const REGISTERS: usize = 1 << P;
const P_MASK: u64 = REGISTERS as u64 - 1;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// A dense HLL's exact length: header + 12288 register bytes.
pub const DENSE_SIZE: usize = HDR_SIZE + (REGISTERS * BITS).div_ceil(8);
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;
const MAX_ENCODING: u8 = 1;

const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: u8 = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
/// 0.5 / ln(2), hyperloglog.c's HLL_ALPHA_INF.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
/// The seed hllPatLen hashes with.
pub const HASH_SEED: u32 = 0xadc8_3b19;

/// A sparse HLL whose opcodes do not describe exactly 16384 registers (Redis answers
/// "INVALIDOBJ Corrupted HLL object detected").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// MurmurHash64A as hyperloglog.c has it (endian neutral: 8-byte blocks are read
/// little-endian). `len * m` is C's int times uint64_t: the length widened, wrapping.
pub fn murmur64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // C's `int len` (the element's size_t length converted), widened to uint64_t.
    let len = key.len() as i32 as i64 as u64;
    let mut h = u64::from(seed) ^ len.wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// hllPatLen: the element's register index and its run length (1..=Q+1).
#[inline]
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, HASH_SEED);
    let index = (hash & P_MASK) as usize;
    // The sentinel bit makes an all-zero tail count Q+1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// isHLLObjectOrReply's checks on a string value: long enough for the header, the
/// magic, a known encoding, and a dense value's exact length. The encoding, or None
/// (Redis answers "WRONGTYPE Key is not a valid HyperLogLog string value.").
pub fn validate(v: &[u8]) -> Option<u8> {
    if v.len() < HDR_SIZE || &v[..4] != b"HYLL" || v[4] > MAX_ENCODING {
        return None;
    }
    if v[4] == DENSE && v.len() != DENSE_SIZE {
        return None;
    }
    Some(v[4])
}

/// createHLLObject: an empty sparse HLL (XZERO:16384), cached cardinality 0 (valid).
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR_SIZE + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut v, n);
        left -= n;
    }
    v
}

/// The cached cardinality, if valid.
pub fn cached_card(v: &[u8]) -> Option<u64> {
    let card = u64::from_le_bytes(v[8..16].try_into().expect("validated header"));
    (v[15] & 0x80 == 0).then_some(card)
}

/// Stores `card` as the cached cardinality (valid: a count never reaches 2^63).
pub fn set_cached_card(v: &mut [u8], card: u64) {
    v[8..16].copy_from_slice(&card.to_le_bytes());
}

/// HLL_INVALIDATE_CACHE.
pub fn invalidate_cache(v: &mut [u8]) {
    v[15] |= 0x80;
}

// ----- dense registers -----

/// HLL_DENSE_GET_REGISTER on the register bytes (after the header). The byte after the
/// last register's is read as zero (Redis reads the NUL terminator).
#[inline]
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u16::from(regs[byte]);
    let b1 = u16::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(REGISTER_MAX)) as u8
}

/// HLL_DENSE_SET_REGISTER (`val` <= 63).
#[inline]
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u16::from(val);
    let max = u16::from(REGISTER_MAX);
    regs[byte] = ((u16::from(regs[byte]) & !(max << fb)) | (v << fb)) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        *b = ((u16::from(*b) & !(max >> (8 - fb))) | (v >> (8 - fb))) as u8;
    }
}

/// hllDenseSet: raises register `i` to `count`; whether it changed.
#[inline]
pub fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// The dense registers' histogram (hllDenseRegHisto).
pub fn dense_histogram(regs: &[u8]) -> [u32; 64] {
    let mut h = [0u32; 64];
    // Four registers in every three bytes.
    for c in regs[..REGISTERS * BITS / 8].chunks_exact(3) {
        let (a, b, d) = (c[0], c[1], c[2]);
        h[(a & 63) as usize] += 1;
        h[((a >> 6 | b << 2) & 63) as usize] += 1;
        h[((b >> 4 | d << 4) & 63) as usize] += 1;
        h[(d >> 2) as usize] += 1;
    }
    h
}

// ----- sparse opcodes -----

/// The byte at `i`; past the end, the byte after the value in Redis's sds: `ghost` at
/// the end (the NUL terminator, or what hllSparseSet's last write left there, see
/// [`sparse_set`]), zero beyond.
#[inline]
fn at(v: &[u8], i: usize, ghost: u8) -> u8 {
    match v.get(i) {
        Some(&b) => b,
        None if i == v.len() => ghost,
        None => 0,
    }
}

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

#[inline]
fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}

/// XZERO's run at `p` (a second byte past the end reads as `ghost`).
#[inline]
fn xzero_len(v: &[u8], p: usize, ghost: u8) -> usize {
    (((v[p] & 0x3f) as usize) << 8 | at(v, p + 1, ghost) as usize) + 1
}

#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

#[inline]
fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}

#[inline]
fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | 0x80
}

fn push_xzero(v: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    v.push((l >> 8) as u8 | 0x40);
    v.push((l & 0xff) as u8);
}

/// One decoded sparse opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// ZERO (one byte) or XZERO (two): a run of zero registers.
    Zero { len: usize, long: bool },
    /// VAL: `len` registers of value `value`.
    Val { value: u8, len: usize },
}

/// The sparse opcodes after the header, as Redis walks them (PFDEBUG DECODE).
pub fn sparse_ops(v: &[u8]) -> impl Iterator<Item = Op> + '_ {
    ops_with(v, 0)
}

/// [`sparse_ops`] with the byte past the end reading as `ghost`.
fn ops_with(v: &[u8], ghost: u8) -> impl Iterator<Item = Op> + '_ {
    let mut p = HDR_SIZE;
    std::iter::from_fn(move || {
        if p >= v.len() {
            return None;
        }
        let b = v[p];
        Some(if is_zero(b) {
            p += 1;
            Op::Zero {
                len: zero_len(b),
                long: false,
            }
        } else if is_xzero(b) {
            let len = xzero_len(v, p, ghost);
            p += 2;
            Op::Zero { len, long: true }
        } else {
            p += 1;
            Op::Val {
                value: val_value(b),
                len: val_len(b),
            }
        })
    })
}

/// The sparse registers' histogram (hllSparseRegHisto); Err if the opcodes do not
/// cover exactly 16384 registers.
pub fn sparse_histogram(v: &[u8]) -> Result<[u64; 64], Invalid> {
    let mut h = [0u64; 64];
    let mut idx = 0usize;
    for op in sparse_ops(v) {
        match op {
            Op::Zero { len, .. } => {
                idx += len;
                h[0] += len as u64;
            }
            Op::Val { value, len } => {
                idx += len;
                h[value as usize] += len as u64;
            }
        }
    }
    if idx == REGISTERS {
        Ok(h)
    } else {
        Err(Invalid)
    }
}

/// hllSparseToDense: the dense value of a sparse one (the header copied, cached
/// cardinality included, with the dense encoding). Any opcode past the 16384th
/// register is corrupt: Debian's redis-server 7.0.15 rejects XZERO:16384 followed by a
/// VAL (INVALIDOBJ, measured; PFMERGE and PFDEBUG GETREG alike), which the 7.0 source's
/// `break` on an overflowing VAL would let through (Debian's build presumably carries
/// a later fix of these loops).
pub fn sparse_to_dense(v: &[u8]) -> Result<Vec<u8>, Invalid> {
    to_dense_with(v, 0)
}

fn to_dense_with(v: &[u8], ghost: u8) -> Result<Vec<u8>, Invalid> {
    let mut d = vec![0u8; DENSE_SIZE];
    d[..HDR_SIZE].copy_from_slice(&v[..HDR_SIZE]);
    d[4] = DENSE;
    let regs = &mut d[HDR_SIZE..];
    let mut idx = 0usize;
    for op in ops_with(v, ghost) {
        match op {
            Op::Zero { len, .. } => idx += len,
            Op::Val { value, len } => {
                if idx + len > REGISTERS {
                    return Err(Invalid);
                }
                for i in idx..idx + len {
                    dense_put(regs, i, value);
                }
                idx += len;
            }
        }
        if idx > REGISTERS {
            return Err(Invalid);
        }
    }
    if idx == REGISTERS {
        Ok(d)
    } else {
        Err(Invalid)
    }
}

/// hllSparseSet: raises register `index` to `count` in the sparse HLL `v`, in place.
/// Ok(true) when the register changed (the cached cardinality is then invalidated);
/// `v` may have become dense (a count above 32, or a value that would grow past
/// `max_bytes`). Err when `v`'s opcodes are corrupt; `v` is then unchanged.
///
/// `ghost` is the byte just past the value, which Redis's sds keeps: a truncated final
/// XZERO reads its second byte there. hllSparseSet grows the length (sdsIncrLen, which
/// writes a NUL) *before* copying the split sequence, so when the sequence ran one byte
/// past the new end, that byte stays past the end and the next set in the same
/// command reads it. Start a command with 0 (what a stored value has after SET or
/// RESTORE). A value Redis left that way between commands cannot be followed: Augur
/// stores no byte past a value.
pub fn sparse_set(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: u64,
    ghost: &mut u8,
) -> Result<bool, Invalid> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(v, index, count, *ghost);
    }
    // Step 1: the opcode covering `index`.
    let end = v.len();
    let mut p = HDR_SIZE;
    let mut first = 0usize;
    let mut prev = None;
    let mut span = 0usize;
    while p < end {
        let b = v[p];
        let oplen;
        (span, oplen) = if is_zero(b) {
            (zero_len(b), 1)
        } else if is_val(b) {
            (val_len(b), 1)
        } else {
            (xzero_len(v, p, *ghost), 2)
        };
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Invalid);
    }
    let b = v[p];
    let (zero, xzero) = (is_zero(b), is_xzero(b));
    let runlen = span;
    // Step 2: cases A-C in place, or D, the opcode split into up to 3 (5 bytes).
    let mut seq = [0u8; 5];
    let mut n = 0;
    if is_val(b) {
        let old = val_value(b);
        if old >= count {
            return Ok(false); // A
        }
        if runlen == 1 {
            v[p] = val_op(count, 1); // B
            return Ok(merge_adjacent(v, prev, ghost));
        }
    }
    if zero && runlen == 1 {
        v[p] = val_op(count, 1); // C
        return Ok(merge_adjacent(v, prev, ghost));
    }
    let last = first + span - 1;
    if zero || xzero {
        if index != first {
            put_zeros(&mut seq, &mut n, index - first);
        }
        seq[n] = val_op(count, 1);
        n += 1;
        if index != last {
            put_zeros(&mut seq, &mut n, last - index);
        }
    } else {
        let cur = val_value(b);
        if index != first {
            seq[n] = val_op(cur, index - first);
            n += 1;
        }
        seq[n] = val_op(count, 1);
        n += 1;
        if index != last {
            seq[n] = val_op(cur, last - index);
            n += 1;
        }
    }
    let seqlen = n;
    // Step 3: the sequence replaces the opcode, unless the value would grow too long.
    let oldlen = if xzero { 2 } else { 1 };
    if seqlen > oldlen && (end + seqlen - oldlen) as u64 > max_bytes {
        return promote(v, index, count, *ghost);
    }
    let new_len = end + seqlen - oldlen;
    // A truncated final XZERO (its second byte past the end) leaves the sequence's last
    // byte past the new length, where it becomes the ghost; otherwise sdsIncrLen's NUL.
    v.splice(p..(p + oldlen).min(end), seq[..seqlen].iter().copied());
    *ghost = if v.len() > new_len { v[new_len] } else { 0 };
    v.truncate(new_len);
    Ok(merge_adjacent(v, prev, ghost))
}

/// A run of `len` zero registers in a split: ZERO up to 64, XZERO above.
fn put_zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        let l = len - 1;
        seq[*n] = (l >> 8) as u8 | 0x40;
        seq[*n + 1] = (l & 0xff) as u8;
        *n += 2;
    } else {
        seq[*n] = (len - 1) as u8;
        *n += 1;
    }
}

/// hllSparseSet's `updated:` step: merges adjacent VALs of the same value, scanning up
/// to 5 opcodes from `prev`, then invalidates the cached cardinality. Always true.
fn merge_adjacent(v: &mut Vec<u8>, prev: Option<usize>, ghost: &mut u8) -> bool {
    let mut p = prev.unwrap_or(HDR_SIZE);
    let mut end = v.len();
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        let b = v[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(v[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(v[p + 1]));
            let len = val_len(b) + val_len(v[p + 1]);
            if v1 == v2 && len <= SPARSE_VAL_MAX_LEN as usize {
                v[p + 1] = val_op(v1, len);
                v.remove(p);
                // The memmove brings the ghost inside; sdsIncrLen(-1) NULs it.
                *ghost = 0;
                end -= 1;
                continue;
            }
        }
        p += 1;
    }
    invalidate_cache(v);
    true
}

/// hllSparseSet's `promote:` step: `v` becomes dense, then the register is set.
fn promote(v: &mut Vec<u8>, index: usize, count: u8, ghost: u8) -> Result<bool, Invalid> {
    let mut d = to_dense_with(v, ghost)?;
    // Redis asserts this is a change; a corrupt-but-covering value could make it not
    // one, which must not crash here.
    let changed = dense_set(&mut d[HDR_SIZE..], index, count);
    *v = d;
    Ok(changed)
}

/// hllAdd: adds `ele` to the HLL `v` (dense or sparse, validated); whether a register
/// changed. Err for a corrupt sparse value.
pub fn add(v: &mut Vec<u8>, ele: &[u8], max_bytes: u64, ghost: &mut u8) -> Result<bool, Invalid> {
    let (index, count) = pat_len(ele);
    match v[4] {
        DENSE => Ok(dense_set(&mut v[HDR_SIZE..], index, count)),
        SPARSE => sparse_set(v, index, count, max_bytes, ghost),
        _ => Err(Invalid),
    }
}

/// Sets register `index` to at least `count` whatever the encoding (PFMERGE's writes).
pub fn set_register(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: u64,
    ghost: &mut u8,
) -> Result<bool, Invalid> {
    match v[4] {
        DENSE => Ok(dense_set(&mut v[HDR_SIZE..], index, count)),
        SPARSE => sparse_set(v, index, count, max_bytes, ghost),
        _ => Err(Invalid),
    }
}

/// hllMerge: `max[i] = max(max[i], register i of v)` for a validated HLL `v`.
pub fn merge_into(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), Invalid> {
    if v[4] == DENSE {
        // Four registers in every three bytes, as hllDenseRegHisto reads them: no
        // per-register shifts or bounds checks (a 3-key PFCOUNT of dense HLLs ran at
        // 0.7x Redis's rate with dense_get per register).
        let regs = &v[HDR_SIZE..HDR_SIZE + REGISTERS * BITS / 8];
        for (c, m) in regs.chunks_exact(3).zip(max.chunks_exact_mut(4)) {
            let (a, b, d) = (c[0], c[1], c[2]);
            m[0] = m[0].max(a & 63);
            m[1] = m[1].max((a >> 6 | b << 2) & 63);
            m[2] = m[2].max((b >> 4 | d << 4) & 63);
            m[3] = m[3].max(d >> 2);
        }
        return Ok(());
    }
    let mut i = 0usize;
    for op in sparse_ops(v) {
        match op {
            Op::Zero { len, .. } => i += len,
            Op::Val { value, len } => {
                if i + len > REGISTERS {
                    return Err(Invalid);
                }
                for m in &mut max[i..i + len] {
                    if value > *m {
                        *m = value;
                    }
                }
                i += len;
            }
        }
        if i > REGISTERS {
            return Err(Invalid);
        }
    }
    if i == REGISTERS {
        Ok(())
    } else {
        Err(Invalid)
    }
}

/// Histogram of one-byte registers (hllRawRegHisto: PFCOUNT of several keys).
pub fn raw_histogram(max: &[u8; REGISTERS]) -> [u32; 64] {
    let mut h = [0u32; 64];
    // Eight registers at a time, all-zero words counted at once (hllRawRegHisto).
    for w in max.chunks_exact(8) {
        if u64::from_ne_bytes(w.try_into().expect("8 bytes")) == 0 {
            h[0] += 8;
        } else {
            for &r in w {
                h[(r & 63) as usize] += 1;
            }
        }
    }
    h
}

/// hllSigma (Ertl).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

/// hllTau (Ertl). `pow(1 - x, 2)` is a correctly rounded square in glibc, as `d * d`.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

/// hllCount's estimate from a register histogram (entries 0..=Q+1 used), in its
/// floating-point order; the rounding is llroundl's (half away from zero).
pub fn estimate<T: Copy + Into<f64>>(h: &[T; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q as usize + 1].into()) / m);
    for j in (1..=Q as usize).rev() {
        z += h[j].into();
        z *= 0.5;
    }
    z += m * sigma(h[0].into() / m);
    let e = (ALPHA_INF * m * m / z).round();
    // A corrupt histogram could give NaN or a negative; `as` saturates, never panics.
    e as u64
}

/// The estimate of a validated HLL value (hllCount); Err for a corrupt sparse one.
pub fn count(v: &[u8]) -> Result<u64, Invalid> {
    if v[4] == DENSE {
        let h = dense_histogram(&v[HDR_SIZE..]);
        Ok(estimate(&h))
    } else {
        let h = sparse_histogram(v)?;
        Ok(estimate(&h.map(|c| c as f64)))
    }
}

/// The 16384 register values of a validated HLL (PFDEBUG GETREG after its conversion).
pub fn registers(v: &[u8]) -> Result<Vec<u8>, Invalid> {
    let mut max = [0u8; REGISTERS];
    merge_into(&mut max, v)?;
    Ok(max.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode(v: &[u8]) -> Vec<u8> {
        registers(v).unwrap()
    }

    /// Registers and values redis-server 7.0.15 gave (`PFADD t <e>` then
    /// `PFDEBUG DECODE t`: "a" => `Z:12711 v:2,1 Z:3672`, ...), and its GET of
    /// `PFADD t a b c`.
    #[test]
    fn pat_len_and_bytes_match_redis() {
        assert_eq!(pat_len(b"a"), (12711, 2));
        assert_eq!(pat_len(b"foo"), (7348, 5));
        assert_eq!(pat_len(b""), (5938, 2));
        assert_eq!(pat_len(b"hello-world-123"), (9418, 6));
        let mut v = new_sparse();
        for e in [&b"a"[..], b"b", b"c"] {
            add(&mut v, e, 3000, &mut 0).unwrap();
        }
        let redis =
            b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ";
        assert_eq!(&v[..], &redis[..]);
    }

    #[test]
    fn new_hll_is_one_xzero() {
        let v = new_sparse();
        assert_eq!(v.len(), HDR_SIZE + 2);
        assert_eq!(&v[HDR_SIZE..], &[0x7f, 0xff]);
        assert_eq!(validate(&v), Some(SPARSE));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(cached_card(&v), Some(0));
    }

    #[test]
    fn dense_registers_do_not_disturb_neighbours() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR_SIZE];
        let mut model = vec![0u8; REGISTERS];
        let mut x = 12345u64;
        for _ in 0..3 {
            for (i, m) in model.iter_mut().enumerate() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = (x >> 33) as u8 & 63;
                *m = r;
                dense_put(&mut regs, i, r);
            }
            for (i, &m) in model.iter().enumerate() {
                assert_eq!(dense_get(&regs, i), m, "register {i}");
            }
        }
    }

    #[test]
    fn dense_merge_reads_every_register() {
        let mut v = sparse_to_dense(&new_sparse()).unwrap();
        for i in 0..REGISTERS {
            dense_put(&mut v[HDR_SIZE..], i, (i * 7 % 64) as u8);
        }
        let mut max = [5u8; REGISTERS];
        merge_into(&mut max, &v).unwrap();
        for (i, &m) in max.iter().enumerate() {
            assert_eq!(m, dense_get(&v[HDR_SIZE..], i).max(5), "register {i}");
        }
        let h = raw_histogram(&max);
        assert_eq!(h.iter().sum::<u32>(), REGISTERS as u32);
        assert_eq!(h[0], 0);
    }

    #[test]
    fn estimate_of_empty_and_small() {
        let v = new_sparse();
        assert_eq!(count(&v).unwrap(), 0);
        let mut v = new_sparse();
        for e in [&b"a"[..], b"b", b"c"] {
            add(&mut v, e, 3000, &mut 0).unwrap();
        }
        assert_eq!(count(&v).unwrap(), 3);
    }

    #[test]
    fn promotion_at_max_bytes() {
        let mut v = new_sparse();
        let mut i = 0u64;
        while v[4] == SPARSE {
            add(&mut v, &i.to_le_bytes(), 300, &mut 0).unwrap();
            assert!(v.len() <= 300 || v[4] == DENSE);
            i += 1;
        }
        assert_eq!(v.len(), DENSE_SIZE);
        assert!(i > 50 && i < 300, "{i}");
    }

    #[test]
    fn corrupt_sparse_is_invalid_not_a_panic() {
        let mut v = new_sparse();
        add(&mut v, b"x", 3000, &mut 0).unwrap();
        v.extend_from_slice(b"hello");
        assert_eq!(count(&v), Err(Invalid));
        let mut t = new_sparse();
        t.truncate(HDR_SIZE + 1); // a truncated XZERO
        assert_eq!(count(&t), Err(Invalid));
        let _ = sparse_set(&mut t, 16383, 3, 3000, &mut 0);
        let mut e = new_sparse();
        e.truncate(HDR_SIZE);
        assert_eq!(sparse_set(&mut e, 0, 1, 3000, &mut 0), Err(Invalid));
    }

    proptest! {
        /// Sparse and dense agree register by register and on the estimate, whatever
        /// the elements and the promotion threshold; the sparse value stays within it.
        #[test]
        fn sparse_and_dense_agree(
            elems in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..400),
            max_bytes in 20u64..4000,
        ) {
            let mut s = new_sparse();
            let mut d = sparse_to_dense(&s).unwrap();
            let mut model = vec![0u8; REGISTERS];
            for e in &elems {
                let (i, c) = pat_len(e);
                let changed = c > model[i];
                model[i] = model[i].max(c);
                prop_assert_eq!(add(&mut s, e, max_bytes, &mut 0).unwrap(), changed);
                add(&mut d, e, max_bytes, &mut 0).unwrap();
                if s[4] == SPARSE {
                    prop_assert!(s.len() as u64 <= max_bytes.max(HDR_SIZE as u64 + 2));
                }
            }
            prop_assert_eq!(decode(&s), model.clone());
            prop_assert_eq!(decode(&d), model);
            prop_assert_eq!(count(&s).unwrap(), count(&d).unwrap());
            if s[4] == SPARSE {
                // No two adjacent mergeable VALs are left behind only by construction
                // of the scan window; the opcodes must cover exactly 16384 registers.
                prop_assert!(sparse_histogram(&s).is_ok());
            }
        }

        /// Any bytes after a valid header: count, add, merge and conversion return
        /// Ok or Err(Invalid), never panic.
        #[test]
        fn arbitrary_sparse_never_panics(body in proptest::collection::vec(any::<u8>(), 0..64), ele in any::<u64>()) {
            let mut v = new_sparse();
            v.truncate(HDR_SIZE);
            v.extend_from_slice(&body);
            let _ = count(&v);
            let _ = sparse_to_dense(&v);
            let mut max = [0u8; REGISTERS];
            let _ = merge_into(&mut max, &v);
            let _ = add(&mut v, &ele.to_le_bytes(), 3000, &mut 0);
        }
    }
}
