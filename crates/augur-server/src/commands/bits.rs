//! Bit commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
//! BITFIELD_RO. Mirrors Redis 7.0's bitops.c: bit 0 is the most significant bit of the
//! first byte, strings grow zero-padded on writes, offsets are limited by
//! `proto-max-bulk-len`, and the error texts and argument-checking order are Redis's.
//!
//! Writes go through the store's in-place update ([`augur_store::Shard::update`]): a
//! SETBIT on a large value edits one byte of the stored block (growing it first if the
//! offset is past the end), so it never costs more than a SETRANGE of one byte.

use super::{write_error, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::{GENERIC, STRING};
use crate::notify::notify;
use crate::resp::{parse_i64, Args};
use crate::state::Shared;
use augur_store::SetTtl;
use std::sync::atomic::Ordering::Relaxed;

const ERR_BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const ERR_BIT_VALUE: &str = "ERR bit is not an integer or out of range";
const ERR_BITFIELD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// getBitOffsetFromArgument: a non-negative bit offset whose byte is below
/// `max_bytes` (proto-max-bulk-len). With `bits > 0`, `#N` means N * bits (BITFIELD).
fn bit_offset(arg: &[u8], bits: u32, max_bytes: u64) -> Option<u64> {
    let (hash, digits) = match arg.first() {
        Some(b'#') if bits > 0 => (true, &arg[1..]),
        _ => (false, arg),
    };
    let mut off = parse_i64(digits)?;
    if hash {
        off = off.checked_mul(bits as i64)?;
    }
    if off < 0 || (off as u64 >> 3) >= max_bytes {
        return None;
    }
    Some(off as u64)
}

fn max_bytes(shared: &Shared) -> u64 {
    shared.proto_max_bulk_len.load(Relaxed)
}

#[inline]
fn get_bit(v: &[u8], off: u64) -> bool {
    let byte = (off >> 3) as usize;
    byte < v.len() && v[byte] & (0x80 >> (off & 7)) != 0
}

pub(super) fn setbit_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(off) = bit_offset(args.get(2), 0, max_bytes(shared)) else {
        return c.out.error(ERR_BIT_OFFSET);
    };
    let on = match parse_i64(args.get(3)) {
        Some(v @ (0 | 1)) => v == 1,
        _ => return c.out.error(ERR_BIT_VALUE),
    };
    let key = args.get(1);
    let byte = (off >> 3) as usize;
    let mask = 0x80u8 >> (off & 7);
    let mut shard = shared.store.lock_key(key);
    let grew = std::cell::Cell::new(false);
    let r = shard.update(
        c.ns(),
        key,
        now,
        |len| {
            grew.set(byte >= len);
            len.max(byte + 1)
        },
        |v, existed| {
            let old = v[byte] & mask != 0;
            if on {
                v[byte] |= mask
            } else {
                v[byte] &= !mask
            }
            (old, !existed || grew.get() || old != on)
        },
    );
    drop(shard);
    match r {
        Ok((old, changed)) => {
            // bitops.c (7.0): only a created, grown or flipped value is a change.
            if changed {
                notify(shared, c, STRING, "setbit", key);
            }
            c.out.int(old as i64)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

pub(super) fn getbit_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(off) = bit_offset(args.get(2), 0, max_bytes(shared)) else {
        return c.out.error(ERR_BIT_OFFSET);
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let bit = match shard.get(c.ns(), key, now) {
        Ok(v) => v.is_some_and(|v| get_bit(v, off)),
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    c.out.int(bit as i64);
}

/// Resolves a start/end pair as bitops.c does (negative from the end, clamped) into an
/// inclusive bit range of a `len`-byte string; None when the range is empty. `end`
/// None means "to the end of the string".
fn bit_range(len: usize, start: i64, end: Option<i64>, is_bit: bool) -> Option<(u64, u64)> {
    let total = if is_bit { len as i64 * 8 } else { len as i64 };
    let mut start = start;
    let mut end = end.unwrap_or(total - 1);
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    if start > end {
        return None;
    }
    Some(if is_bit {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    })
}

/// Set bits of `v` in the inclusive bit range.
fn count_bits(v: &[u8], (first, last): (u64, u64)) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    let mut n = popcount(&v[fb..=lb]);
    // Bits of the edge bytes outside the range.
    n -= (v[fb] & !(0xFFu8 >> (first & 7))).count_ones() as u64;
    n -= (v[lb] & (0x7Fu8 >> (last & 7))).count_ones() as u64;
    n
}

fn popcount(b: &[u8]) -> u64 {
    let mut chunks = b.chunks_exact(8);
    let mut n: u64 = chunks
        .by_ref()
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")).count_ones() as u64)
        .sum();
    n += chunks
        .remainder()
        .iter()
        .map(|x| x.count_ones() as u64)
        .sum::<u64>();
    n
}

/// The first bit equal to `bit` in the inclusive bit range of `v`.
fn find_bit(v: &[u8], (first, last): (u64, u64), bit: bool) -> Option<u64> {
    let skip = if bit { 0u8 } else { 0xFF };
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    // Whole bytes equal to `skip` hold no match: skip them eight at a time.
    let mut i = fb;
    while i <= lb {
        if i + 8 <= lb && v[i..i + 8] == [skip; 8] {
            i += 8;
            continue;
        }
        if v[i] != skip || i == fb || i == lb {
            for b in 0..8u64 {
                let pos = i as u64 * 8 + b;
                if pos < first || pos > last {
                    continue;
                }
                if (v[i] & (0x80 >> b) != 0) == bit {
                    return Some(pos);
                }
            }
        }
        i += 1;
    }
    None
}

fn parse_i64_or_reply(c: &mut Client, arg: &[u8]) -> Option<i64> {
    let v = parse_i64(arg);
    if v.is_none() {
        c.out.error(ERR_NOT_INT);
    }
    v
}

/// BITCOUNT key [start end [BYTE|BIT]]. As in Redis 7.0, the key is looked up first
/// (a missing key is 0 whatever the arguments), then the range is parsed.
pub(super) fn bitcount_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let v = match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => v,
        Ok(None) => return c.out.int(0),
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    let range = match args.len() {
        2 => bit_range(v.len(), 0, None, false),
        4 | 5 => {
            let Some(start) = parse_i64_or_reply(c, args.get(2)) else {
                return;
            };
            let Some(end) = parse_i64_or_reply(c, args.get(3)) else {
                return;
            };
            if start < 0 && end < 0 && start > end {
                return c.out.int(0);
            }
            let is_bit = match args.len() {
                5 if super::eq(args.get(4), "bit") => true,
                5 if super::eq(args.get(4), "byte") => false,
                5 => return c.out.error(ERR_SYNTAX),
                _ => false,
            };
            bit_range(v.len(), start, Some(end), is_bit)
        }
        _ => return c.out.error(ERR_SYNTAX),
    };
    c.out.int(range.map_or(0, |r| count_bits(v, r)) as i64);
}

/// BITPOS key bit [start [end [BYTE|BIT]]].
pub(super) fn bitpos_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let bit = match parse_i64(args.get(2)) {
        None => return c.out.error(ERR_NOT_INT),
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return c.out.error("ERR The bit argument must be 1 or 0."),
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let v = match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => v,
        // A missing key is an infinite run of zeros.
        Ok(None) => return c.out.int(if bit { -1 } else { 0 }),
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    let (range, end_given) = match args.len() {
        3 => (bit_range(v.len(), 0, None, false), false),
        4..=6 => {
            let Some(start) = parse_i64_or_reply(c, args.get(3)) else {
                return;
            };
            let is_bit = match args.len() {
                6 if super::eq(args.get(5), "bit") => true,
                6 if super::eq(args.get(5), "byte") => false,
                6 => return c.out.error(ERR_SYNTAX),
                _ => false,
            };
            let end = if args.len() >= 5 {
                let Some(end) = parse_i64_or_reply(c, args.get(4)) else {
                    return;
                };
                Some(end)
            } else {
                None
            };
            (bit_range(v.len(), start, end, is_bit), end.is_some())
        }
        _ => return c.out.error(ERR_SYNTAX),
    };
    let Some(range) = range else {
        return c.out.int(-1);
    };
    let pos = match find_bit(v, range, bit) {
        Some(p) => p as i64,
        // Looking for a clear bit without an explicit end: the string is taken as
        // zero-padded on the right, so the answer is the first bit after the range.
        None if !bit && !end_given => ((range.1 | 7) + 1) as i64,
        None => -1,
    };
    c.out.int(pos);
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP op destkey key [key ...]: sources shorter than the longest are zero-padded;
/// an empty result deletes the destination. The result replaces the destination (its
/// TTL is dropped) and is a `raw` string, as in Redis.
pub(super) fn bitop_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let op_name = args.get(1);
    let op = if super::eq(op_name, "and") {
        BitOp::And
    } else if super::eq(op_name, "or") {
        BitOp::Or
    } else if super::eq(op_name, "xor") {
        BitOp::Xor
    } else if super::eq(op_name, "not") {
        BitOp::Not
    } else {
        return c.out.error(ERR_SYNTAX);
    };
    if op == BitOp::Not && args.len() != 4 {
        return c
            .out
            .error("ERR BITOP NOT must be called with a single source key.");
    }
    let dest = args.get(2);
    let keys: Vec<&[u8]> = args.iter().skip(2).collect();
    let sources = &keys[1..];
    let mut lock = shared.store.lock_keys(&keys);
    let ns = c.ns();
    // Read each source once (counting hits and misses as Redis's lookupKeyRead does)
    // and fold it into the result.
    let mut res: Vec<u8> = Vec::new();
    for (i, k) in sources.iter().enumerate() {
        let v = match lock.shard_for(k).get(ns, k, now) {
            Ok(v) => v.unwrap_or(b""),
            Err(_) => return c.out.error(ERR_WRONGTYPE),
        };
        if v.len() > res.len() {
            // The sources folded so far are zero-padded up to this one's length.
            res.resize(v.len(), 0);
        }
        if i == 0 {
            res[..v.len()].copy_from_slice(v);
            continue;
        }
        for (r, &b) in res.iter_mut().zip(v) {
            match op {
                BitOp::And => *r &= b,
                BitOp::Or => *r |= b,
                BitOp::Xor => *r ^= b,
                BitOp::Not => {}
            }
        }
        if op == BitOp::And {
            for r in res.iter_mut().skip(v.len()) {
                *r = 0;
            }
        }
    }
    if op == BitOp::Not {
        res.iter_mut().for_each(|b| *b = !*b);
    }
    let shard = lock.shard_for(dest);
    if res.is_empty() {
        if shard.delete(ns, dest, now) {
            notify(shared, c, GENERIC, "del", dest);
        }
        return c.out.int(0);
    }
    match shard.set(ns, dest, &res, SetTtl::Clear, now) {
        Ok(()) => {
            shard.mark_raw(ns, dest, now);
            notify(shared, c, STRING, "set", dest);
            c.out.int(res.len() as i64)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

/// BITFIELD's integer arithmetic (bitops.c), kept pure for testing.
mod field {
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Overflow {
        Wrap,
        Sat,
        Fail,
    }

    /// Reads an unsigned `bits`-wide (1..=64) field at bit `off` of `p`; bytes past the
    /// end read as zero.
    pub fn get_unsigned(p: &[u8], off: u64, bits: u32) -> u64 {
        let mut v = 0u64;
        for j in 0..bits as u64 {
            let o = off + j;
            let byte = (o >> 3) as usize;
            let bit = p.get(byte).is_some_and(|b| b & (0x80 >> (o & 7)) != 0);
            v = (v << 1) | bit as u64;
        }
        v
    }

    pub fn get_signed(p: &[u8], off: u64, bits: u32) -> i64 {
        let v = get_unsigned(p, off, bits);
        if bits < 64 && v & (1 << (bits - 1)) != 0 {
            (v | (u64::MAX << bits)) as i64
        } else {
            v as i64
        }
    }

    /// Writes the low `bits` bits of `v` at bit `off`; `p` is long enough.
    pub fn set(p: &mut [u8], off: u64, bits: u32, v: u64) {
        for j in 0..bits as u64 {
            let bitval = v & (1 << (bits as u64 - 1 - j)) != 0;
            let o = off + j;
            let byte = (o >> 3) as usize;
            let mask = 0x80u8 >> (o & 7);
            if bitval {
                p[byte] |= mask
            } else {
                p[byte] &= !mask
            }
        }
    }

    /// checkUnsignedBitfieldOverflow: None when `value + incr` fits `bits` unsigned
    /// bits; otherwise Some(the value WRAP or SAT stores; FAIL does not use it).
    pub fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
        let max = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let maxincr = max.wrapping_sub(value) as i64;
        let minincr = (value as i64).wrapping_neg();
        let wrap = || {
            let mask = if bits == 64 { 0 } else { u64::MAX << bits };
            value.wrapping_add(incr as u64) & !mask
        };
        if value > max || (incr > 0 && incr > maxincr) {
            Some(match ow {
                Overflow::Wrap | Overflow::Fail => wrap(),
                Overflow::Sat => max,
            })
        } else if incr < 0 && incr < minincr {
            Some(match ow {
                Overflow::Wrap | Overflow::Fail => wrap(),
                Overflow::Sat => 0,
            })
        } else {
            None
        }
    }

    /// checkSignedBitfieldOverflow, likewise for `bits` signed bits.
    pub fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
        let max: i64 = if bits == 64 {
            i64::MAX
        } else {
            (1i64 << (bits - 1)) - 1
        };
        let min = -max - 1;
        let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
        let minincr = min.wrapping_sub(value);
        let wrap = || {
            let c = (value as u64).wrapping_add(incr as u64);
            if bits < 64 {
                let mask = u64::MAX << bits;
                if c & (1 << (bits - 1)) != 0 {
                    (c | mask) as i64
                } else {
                    (c & !mask) as i64
                }
            } else {
                c as i64
            }
        };
        if value > max
            || (bits != 64 && incr > maxincr)
            || (value >= 0 && incr > 0 && incr > maxincr)
        {
            Some(match ow {
                Overflow::Wrap | Overflow::Fail => wrap(),
                Overflow::Sat => max,
            })
        } else if value < min
            || (bits != 64 && incr < minincr)
            || (value < 0 && incr < 0 && incr < minincr)
        {
            Some(match ow {
                Overflow::Wrap | Overflow::Fail => wrap(),
                Overflow::Sat => min,
            })
        } else {
            None
        }
    }
}

use field::Overflow;

#[derive(Clone, Copy, Debug)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Clone, Copy, Debug)]
struct Field {
    op: FieldOp,
    signed: bool,
    bits: u32,
    offset: u64,
    overflow: Overflow,
}

/// getBitfieldTypeFromArgument: `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Option<(bool, u32)> {
    let signed = match arg.first()? {
        b'i' => true,
        b'u' => false,
        _ => return None,
    };
    let bits = parse_i64(&arg[1..])?;
    let max = if signed { 64 } else { 63 };
    (1..=max).contains(&bits).then_some((signed, bits as u32))
}

/// Runs one BITFIELD operation on the (already grown) value; None is FAIL's nil.
fn apply_field(v: &mut [u8], f: &Field) -> Option<i64> {
    let (off, bits) = (f.offset, f.bits);
    match f.op {
        FieldOp::Get => Some(if f.signed {
            field::get_signed(v, off, bits)
        } else {
            field::get_unsigned(v, off, bits) as i64
        }),
        FieldOp::Set(x) | FieldOp::IncrBy(x) => {
            let incr = matches!(f.op, FieldOp::IncrBy(_));
            let (newval, reply, overflow) = if f.signed {
                let old = field::get_signed(v, off, bits);
                let (base, by) = if incr { (old, x) } else { (x, 0) };
                let ov = field::signed_overflow(base, by, bits, f.overflow);
                let new = ov.unwrap_or(base.wrapping_add(by));
                (new as u64, if incr { new } else { old }, ov.is_some())
            } else {
                let old = field::get_unsigned(v, off, bits);
                let (base, by) = if incr { (old, x) } else { (x as u64, 0) };
                let ov = field::unsigned_overflow(base, by, bits, f.overflow);
                let new = ov.unwrap_or(base.wrapping_add(by as u64));
                (
                    new,
                    if incr { new as i64 } else { old as i64 },
                    ov.is_some(),
                )
            };
            if overflow && f.overflow == Overflow::Fail {
                return None;
            }
            field::set(v, off, bits, newval);
            Some(reply)
        }
    }
}

/// BITFIELD and BITFIELD_RO: all operations are parsed (and any argument error
/// reported) before the key is touched; the value grows once, to the farthest bit
/// written, then the operations run in order.
pub(super) fn bitfield_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let max = max_bytes(shared);
    let mut ops: Vec<Field> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let sub = args.get(j);
        let op = if super::eq(sub, "get") && rem >= 2 {
            FieldOp::Get
        } else if super::eq(sub, "set") && rem >= 3 {
            FieldOp::Set(0)
        } else if super::eq(sub, "incrby") && rem >= 3 {
            FieldOp::IncrBy(0)
        } else if super::eq(sub, "overflow") && rem >= 1 {
            let t = args.get(j + 1);
            overflow = if super::eq(t, "wrap") {
                Overflow::Wrap
            } else if super::eq(t, "sat") {
                Overflow::Sat
            } else if super::eq(t, "fail") {
                Overflow::Fail
            } else {
                return c.out.error("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return c.out.error(ERR_SYNTAX);
        };
        let Some((signed, bits)) = field_type(args.get(j + 1)) else {
            return c.out.error(ERR_BITFIELD_TYPE);
        };
        let Some(offset) = bit_offset(args.get(j + 2), bits, max) else {
            return c.out.error(ERR_BIT_OFFSET);
        };
        let op = match op {
            FieldOp::Get => op,
            _ => {
                let last = offset + bits as u64 - 1;
                highest_write = Some(highest_write.map_or(last, |h| h.max(last)));
                let Some(x) = parse_i64(args.get(j + 3)) else {
                    return c.out.error(ERR_NOT_INT);
                };
                match op {
                    FieldOp::Set(_) => FieldOp::Set(x),
                    _ => FieldOp::IncrBy(x),
                }
            }
        };
        ops.push(Field {
            op,
            signed,
            bits,
            offset,
            overflow,
        });
        j += if matches!(op, FieldOp::Get) { 3 } else { 4 };
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let results: Vec<Option<i64>> = match highest_write {
        None => {
            let v = match shard.get(c.ns(), key, now) {
                Ok(v) => v.unwrap_or(b""),
                Err(_) => return c.out.error(ERR_WRONGTYPE),
            };
            // GETs only: reading past the end reads zeros, nothing is written.
            let mut scratch = Vec::new();
            ops.iter()
                .map(|f| {
                    scratch.clear();
                    let from = (f.offset >> 3) as usize;
                    let to = (((f.offset + f.bits as u64 - 1) >> 3) as usize + 1).min(v.len());
                    if from < to {
                        scratch.extend_from_slice(&v[from..to]);
                    }
                    let local = Field {
                        offset: f.offset & 7,
                        ..*f
                    };
                    scratch.resize(9, 0);
                    apply_field(&mut scratch, &local)
                })
                .collect()
        }
        Some(_) if spec.cmd == Cmd::BitFieldRo => {
            return c
                .out
                .error("ERR BITFIELD_RO only supports the GET subcommand");
        }
        Some(h) => {
            let need = (h >> 3) as usize + 1;
            match shard.update(
                c.ns(),
                key,
                now,
                |len| len.max(need),
                |v, _| ops.iter().map(|f| apply_field(v, f)).collect(),
            ) {
                Ok(r) => r,
                Err(e) => return write_error(&mut c.out, e),
            }
        }
    };
    drop(shard);
    // bitops.c: "setbit" once if any SET or INCRBY took effect (an overflow FAIL does not).
    if ops
        .iter()
        .zip(&results)
        .any(|(f, r)| !matches!(f.op, FieldOp::Get) && r.is_some())
    {
        notify(shared, c, STRING, "setbit", key);
    }
    c.out.array(results.len());
    for r in results {
        match r {
            Some(v) => c.out.int(v),
            None => c.out.null(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::field::*;
    use super::*;
    use proptest::prelude::*;

    /// Bit-by-bit reference for a bit string stored as bools.
    fn bits_of(v: &[u8]) -> Vec<bool> {
        (0..v.len() as u64 * 8).map(|i| get_bit(v, i)).collect()
    }

    #[test]
    fn bit_offsets_follow_redis_limits() {
        assert_eq!(bit_offset(b"0", 0, 512), Some(0));
        assert_eq!(bit_offset(b"4095", 0, 512), Some(4095));
        assert_eq!(bit_offset(b"4096", 0, 512), None);
        assert_eq!(bit_offset(b"-1", 0, 512), None);
        assert_eq!(bit_offset(b"#2", 8, 512), Some(16));
        assert_eq!(bit_offset(b"#2", 0, 512), None, "# only for BITFIELD");
        assert_eq!(bit_offset(b"#-1", 8, 512), None);
        assert_eq!(bit_offset(b"#9223372036854775807", 8, u64::MAX), None);
        assert_eq!(bit_offset(b"x", 0, 512), None);
    }

    #[test]
    fn field_types() {
        assert_eq!(field_type(b"i64"), Some((true, 64)));
        assert_eq!(field_type(b"u63"), Some((false, 63)));
        assert_eq!(field_type(b"u64"), None);
        assert_eq!(field_type(b"i0"), None);
        assert_eq!(field_type(b"i65"), None);
        assert_eq!(field_type(b"x8"), None);
        assert_eq!(field_type(b"i"), None);
    }

    #[test]
    fn bitpos_edges() {
        let v = b"\xff\xf0\x00";
        assert_eq!(
            find_bit(v, bit_range(3, 0, None, false).unwrap(), false),
            Some(12)
        );
        assert_eq!(find_bit(v, (13, 13), true), None);
        assert_eq!(find_bit(b"\x00\x0f", (0, 15), true), Some(12));
        // Edges inside one byte.
        assert_eq!(find_bit(b"\x81", (1, 6), true), None);
        assert_eq!(find_bit(b"\x81", (1, 7), true), Some(7));
        assert_eq!(find_bit(b"\x7e", (1, 6), false), None);
        assert_eq!(bit_range(3, 2, Some(200), false), Some((16, 23)));
        assert_eq!(bit_range(6, -2, Some(1), false), None);
        assert_eq!(bit_range(0, 0, None, false), None);
        assert_eq!(bit_range(6, 10, Some(-34), true), Some((10, 14)));
    }

    #[test]
    fn unsigned_overflow_matches_wide_arithmetic() {
        for bits in [1u32, 2, 5, 8, 31, 63] {
            let max = (1i128 << bits) - 1;
            for value in [0u64, 1, (max / 2) as u64, max as u64] {
                for incr in [0i64, 1, -1, 7, -7, i64::MAX, i64::MIN, max as i64] {
                    let exact = value as i128 + incr as i128;
                    let got = unsigned_overflow(value, incr, bits, Overflow::Sat);
                    if (0..=max).contains(&exact) {
                        assert_eq!(got, None, "{bits} {value} {incr}");
                    } else {
                        let sat = if exact > max { max } else { 0 };
                        assert_eq!(got, Some(sat as u64), "{bits} {value} {incr}");
                        let wrapped = exact.rem_euclid(max + 1) as u64;
                        assert_eq!(
                            unsigned_overflow(value, incr, bits, Overflow::Wrap),
                            Some(wrapped),
                            "{bits} {value} {incr}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn signed_overflow_matches_wide_arithmetic() {
        for bits in [1u32, 2, 5, 8, 32, 63, 64] {
            let max = (1i128 << (bits - 1)) - 1;
            let min = -max - 1;
            for value in [0i64, 1, -1, max as i64, min as i64] {
                if (value as i128) > max || (value as i128) < min {
                    continue;
                }
                for incr in [0i64, 1, -1, 100, -100, i64::MAX, i64::MIN] {
                    let exact = value as i128 + incr as i128;
                    let got = signed_overflow(value, incr, bits, Overflow::Sat);
                    if (min..=max).contains(&exact) {
                        assert_eq!(got, None, "{bits} {value} {incr}");
                    } else {
                        let sat = if exact > max { max } else { min };
                        assert_eq!(got, Some(sat as i64), "{bits} {value} {incr}");
                        let span = max - min + 1;
                        let wrapped = (exact - min).rem_euclid(span) + min;
                        assert_eq!(
                            signed_overflow(value, incr, bits, Overflow::Wrap),
                            Some(wrapped as i64),
                            "{bits} {value} {incr}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fields_round_trip_at_unaligned_offsets() {
        let mut v = vec![0u8; 16];
        set(&mut v, 7, 5, 23);
        assert_eq!(&v[..2], &[0b0000_0001, 0b0111_0000]);
        assert_eq!(get_unsigned(&v, 7, 5), 23);
        set(&mut v, 13, 64, (-5i64) as u64);
        assert_eq!(get_signed(&v, 13, 64), -5);
        assert_eq!(get_signed(&v, 7, 5), -9, "23 as i5");
        // Reads past the end are zero.
        assert_eq!(get_unsigned(&[0xff], 4, 8), 0xf0);
    }

    proptest! {
        /// SETBIT/GETBIT/BITCOUNT/BITPOS against a Vec<bool> model.
        #[test]
        fn bit_commands_match_a_model(
            sets in prop::collection::vec((0u64..300, any::<bool>()), 0..60),
            start in -50i64..50, end in -50i64..50, is_bit in any::<bool>(),
        ) {
            let mut v: Vec<u8> = Vec::new();
            let mut model: Vec<bool> = Vec::new();
            for &(off, on) in &sets {
                let byte = (off >> 3) as usize;
                if v.len() <= byte {
                    v.resize(byte + 1, 0);
                    model.resize(v.len() * 8, false);
                }
                let mask = 0x80u8 >> (off & 7);
                if on { v[byte] |= mask } else { v[byte] &= !mask }
                model[off as usize] = on;
            }
            prop_assert_eq!(bits_of(&v), model.clone());
            for off in 0..(v.len() as u64 * 8 + 10) {
                prop_assert_eq!(get_bit(&v, off), model.get(off as usize).copied().unwrap_or(false));
            }
            let total = model.len() as i64;
            let units = if is_bit { total } else { total / 8 };
            // Model of the range conversion.
            let (mut s, mut e) = (start, end);
            if s < 0 { s += units }
            if e < 0 { e += units }
            s = s.max(0);
            e = e.max(0).min(units - 1);
            let expect_range = (s <= e).then(|| if is_bit { (s as u64, e as u64) } else { (s as u64 * 8, e as u64 * 8 + 7) });
            let r = bit_range(v.len(), start, Some(end), is_bit);
            prop_assert_eq!(r, expect_range);
            if let Some((a, b)) = r {
                let n = model[a as usize..=b as usize].iter().filter(|&&x| x).count() as u64;
                prop_assert_eq!(count_bits(&v, (a, b)), n);
                for bit in [false, true] {
                    let want = (a..=b).find(|&i| model[i as usize] == bit);
                    prop_assert_eq!(find_bit(&v, (a, b), bit), want);
                }
            }
            prop_assert_eq!(popcount(&v), model.iter().filter(|&&x| x).count() as u64);
        }
    }
}
