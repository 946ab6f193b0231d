//! DUMP and RESTORE for string values, in Redis's serialization (cluster.c
//! dumpCommand/restoreCommand, rdb.c): the value as an RDB object, then the RDB
//! version (2 bytes, little-endian) and a CRC-64 (Jones polynomial, reflected, as
//! Redis's crc64.c) of everything before it (8 bytes, little-endian). A payload DUMPed
//! by Augur restores in Redis 7.0 and the other way round (RESTORE also reads Redis's
//! integer and LZF-compressed string encodings).
//!
//! Only strings exist as values so far; a value type added later needs its own RDB
//! encoding here (its DUMP must not fall through to the string encoding).

use super::{eq, write_error, Client, ERR_NOT_INT, ERR_SYNTAX};
use crate::resp::{parse_i64, Args};
use crate::state::Shared;
use augur_store::SetTtl;

/// RDB_VERSION of Redis 7.0: payloads from newer versions are refused, as Redis does.
const RDB_VERSION: u16 = 10;
const RDB_TYPE_STRING: u8 = 0;
const ERR_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const ERR_BAD_FORMAT: &str = "ERR Bad data format";

/// crc64.c's CRC-64/Jones: reflected polynomial 0x95ac9329ac4bc9b5, init 0, no xorout.
fn crc64(data: &[u8]) -> u64 {
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [0u64; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x95ac_9329_ac4b_c9b5
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    data.iter().fold(0u64, |crc, &b| {
        t[((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8)
    })
}

fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// rdbSaveRawString without compression: a short canonical integer that fits 32 bits
/// is saved in the integer encoding, anything else as length + bytes.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(v) = parse_i64(s) {
            if let Ok(v8) = i8::try_from(v) {
                out.extend_from_slice(&[0xC0, v8 as u8]);
                return;
            } else if let Ok(v16) = i16::try_from(v) {
                out.push(0xC1);
                out.extend_from_slice(&v16.to_le_bytes());
                return;
            } else if let Ok(v32) = i32::try_from(v) {
                out.push(0xC2);
                out.extend_from_slice(&v32.to_le_bytes());
                return;
            }
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// The DUMP payload of a string value.
pub(super) fn dump_string(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() + 16);
    out.push(RDB_TYPE_STRING);
    put_string(&mut out, v);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }

    /// rdbLoadLen: Some((length or encoding type, is_encoded)).
    fn len(&mut self) -> Option<(u64, bool)> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => ((first & 0x3F) as u64, false),
            1 => ((((first & 0x3F) as u64) << 8) | self.byte()? as u64, false),
            2 => match first {
                0x80 => (
                    u32::from_be_bytes(self.take(4)?.try_into().ok()?) as u64,
                    false,
                ),
                0x81 => (u64::from_be_bytes(self.take(8)?.try_into().ok()?), false),
                _ => return None,
            },
            _ => ((first & 0x3F) as u64, true),
        })
    }

    /// rdbGenericLoadStringObject.
    fn string(&mut self) -> Option<Vec<u8>> {
        let (n, encoded) = self.len()?;
        if !encoded {
            return self.take(usize::try_from(n).ok()?).map(<[u8]>::to_vec);
        }
        let v: i64 = match n {
            0 => self.byte()? as i8 as i64,
            1 => i16::from_le_bytes(self.take(2)?.try_into().ok()?) as i64,
            2 => i32::from_le_bytes(self.take(4)?.try_into().ok()?) as i64,
            3 => {
                let (clen, e1) = self.len()?;
                let (ulen, e2) = self.len()?;
                if e1 || e2 {
                    return None;
                }
                let data = self.take(usize::try_from(clen).ok()?)?;
                return lzf_decompress(data, usize::try_from(ulen).ok()?);
            }
            _ => return None,
        };
        Some(v.to_string().into_bytes())
    }
}

/// liblzf's decompressor (lzf_d.c): literal runs and back references.
fn lzf_decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(i..i + n)?);
            i += n;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..n + 2 {
                let b = out[start + k];
                out.push(b);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

/// verifyDumpPayload then rdbLoadObject for a string: the value, or the error text.
pub(super) fn load_string(p: &[u8]) -> Result<Vec<u8>, &'static str> {
    if p.len() < 10 {
        return Err(ERR_PAYLOAD);
    }
    let (body, trailer) = p.split_at(p.len() - 10);
    let version = u16::from_le_bytes([trailer[0], trailer[1]]);
    let crc = u64::from_le_bytes(trailer[2..].try_into().expect("8 bytes"));
    if version > RDB_VERSION || crc64(&p[..p.len() - 8]) != crc {
        return Err(ERR_PAYLOAD);
    }
    let mut r = Reader { b: body, at: 0 };
    if r.byte() != Some(RDB_TYPE_STRING) {
        return Err(ERR_BAD_FORMAT);
    }
    match r.string() {
        Some(v) if r.at == body.len() => Ok(v),
        _ => Err(ERR_BAD_FORMAT),
    }
}

/// A raw RDB string (rdbSaveRawString, uncompressed): length and bytes. FUNCTION DUMP
/// writes library code with it.
pub(crate) fn rdb_put_raw_string(out: &mut Vec<u8>, s: &[u8]) {
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends the RDB version and the CRC-64 of everything (a DUMP payload's trailer).
pub(crate) fn rdb_seal_payload(out: &mut Vec<u8>) {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// verifyDumpPayload: the payload without its trailer, if version and checksum hold.
pub(crate) fn rdb_verify_payload(p: &[u8]) -> Option<&[u8]> {
    if p.len() < 10 {
        return None;
    }
    let (body, trailer) = p.split_at(p.len() - 10);
    let version = u16::from_le_bytes([trailer[0], trailer[1]]);
    let crc = u64::from_le_bytes(trailer[2..].try_into().ok()?);
    (version <= RDB_VERSION && crc64(&p[..p.len() - 8]) == crc).then_some(body)
}

/// An RDB string (any of its encodings) at `*pos` of `b`, advancing `pos`.
pub(crate) fn rdb_read_string(b: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let mut r = Reader { b, at: *pos };
    let s = r.string()?;
    *pos = r.at;
    Some(s)
}

pub(super) fn dump_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.get(c.ns(), key, now) {
        Ok(Some(v)) => {
            let payload = dump_string(v);
            c.out.bulk(&payload)
        }
        Ok(None) => c.out.null(),
        // Only strings have an RDB serialisation here.
        Err(_) => c
            .out
            .error("ERR DUMP of hashes and sets is not supported by Augur"),
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency].
/// IDLETIME and FREQ are checked and accepted; the restored key starts recently used.
pub(super) fn restore_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (false, false);
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        let opt = args.get(j);
        if eq(opt, "replace") {
            replace = true;
        } else if eq(opt, "absttl") {
            absttl = true;
        } else if eq(opt, "idletime") && more && !freq {
            match parse_i64(args.get(j + 1)) {
                None => return c.out.error(ERR_NOT_INT),
                Some(n) if n < 0 => return c.out.error("ERR Invalid IDLETIME value, must be >= 0"),
                Some(_) => {}
            }
            idle = true;
            j += 1;
        } else if eq(opt, "freq") && more && !idle {
            match parse_i64(args.get(j + 1)) {
                None => return c.out.error(ERR_NOT_INT),
                Some(n) if !(0..=255).contains(&n) => {
                    return c
                        .out
                        .error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Some(_) => {}
            }
            freq = true;
            j += 1;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let Some(ttl) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    if ttl < 0 {
        return c.out.error("ERR Invalid TTL value, must be >= 0");
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    if !replace && shard.exists(c.ns(), key, now) {
        return c.out.error("BUSYKEY Target key name already exists.");
    }
    let value = match load_string(args.get(3)) {
        Ok(v) => v,
        Err(e) => return c.out.error(e),
    };
    let at = match ttl {
        0 => None,
        t if absttl => Some(t as u64),
        t => Some((t as u64).saturating_add(now)),
    };
    if at.is_some_and(|at| at <= now) {
        // Already expired: nothing is created (an existing key is replaced by nothing).
        if shard.delete(c.ns(), key, now) {
            crate::notify::notify(shared, c, crate::notify::flags::GENERIC, "del", key);
        }
        return c.out.ok();
    }
    match shard.set(
        c.ns(),
        key,
        &value,
        at.map_or(SetTtl::Clear, SetTtl::At),
        now,
    ) {
        Ok(()) => {
            crate::notify::notify(shared, c, crate::notify::flags::GENERIC, "restore", key);
            c.out.ok()
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_jones() {
        // crc64.c's own test vector.
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn payloads_match_redis_bytes() {
        // From redis-server 7.0: DUMP of "hello" and of "1".
        assert_eq!(
            dump_string(b"hello")[..8],
            [0x00, 0x05, b'h', b'e', b'l', b'l', b'o', 0x0a]
        );
        assert_eq!(dump_string(b"1")[..3], [0x00, 0xC0, 0x01]);
        for v in [
            &b""[..],
            b"1",
            b"-129",
            b"70000",
            b"2147483648",
            b"012",
            &[7u8; 70][..],
            &[9u8; 20_000][..],
        ] {
            assert_eq!(load_string(&dump_string(v)).as_deref(), Ok(v), "{v:?}");
        }
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn byte_identical_to_redis_7_0_and_reads_its_lzf_payloads() {
        // DUMP replies of redis-server 7.0.15.
        assert_eq!(
            dump_string(b"hello"),
            unhex("000568656c6c6f0a006372df766534200a")
        );
        assert_eq!(dump_string(b"1"), unhex("00c0010a002678e7b6d10111fc"));
        assert_eq!(dump_string(b"-129"), unhex("00c17fff0a001760822854808480"));
        let x100 = unhex("00c3094064017878e057000178780a005db7f663bb08625f");
        assert_eq!(load_string(&x100), Ok(vec![b'x'; 100]));
        let abc = unhex("00c30b405a0361626361e04b020162630a00238036f9e2d0c780");
        assert_eq!(load_string(&abc), Ok(b"abc".repeat(30)));
    }

    #[test]
    fn bad_payloads_are_refused() {
        let mut p = dump_string(b"hello");
        let n = p.len();
        p[n - 1] ^= 1;
        assert_eq!(load_string(&p), Err(ERR_PAYLOAD));
        assert_eq!(load_string(b"short"), Err(ERR_PAYLOAD));
        // A list type byte with a valid trailer.
        let mut q = vec![0x12, 0x00];
        q.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(&q);
        q.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(load_string(&q), Err(ERR_BAD_FORMAT));
    }

    #[test]
    fn lzf_back_references() {
        // "aaaaaaaaaa": literal 'a' then a back reference of 9 bytes at distance 1.
        let data = [0x00, b'a', 0xE0, 0x00, 0x00];
        assert_eq!(
            lzf_decompress(&data, 10).as_deref(),
            Some(&b"aaaaaaaaaa"[..])
        );
        assert_eq!(lzf_decompress(&data, 9), None);
    }
}
