//! The bytes of a Z-zone block (zExpander §3.1-3.2) and their codecs.
//!
//! A block's *raw* (uncompressed) form:
//!
//! ```text
//! count: u32 LE | nidx: u8 | nidx x (tag: u32 LE, offset: u16 LE) | records...
//! record := kind: u8 (bit 0: has expiry, bit 1: large) | db: u8 | flags: u8
//!           | [varint expire_at_ms]
//!           | inline: varint key_len | varint value_len | key | value
//!           | large:  varint id      (the value, and the key, live behind the pointer)
//! ```
//!
//! Records are in hashed-key order (the trie hash, ascending). The index holds up to
//! eight evenly spaced records' `tag` (the hash's top 32 bits) and offset (relative to
//! the first record), so a look-up scans only the records between the last index entry
//! below the key's tag and the first above it (§3.2's "small index consisting of offsets
//! of up to eight items evenly spaced in the block"). Blocks whose records span more than
//! 64 KB (possible only for an over-full leaf at the depth cap) carry no index.
//!
//! A block is stored as a *frame*: `codec: u8 | varint raw_len | [varint dict_id] |
//! payload`, codec 0 = raw (used when compression does not shrink the block, e.g.
//! incompressible values), 1 = LZ4 block format (liblz4, [`lz4c`]), 2 = a zstd frame, 3 and 4 =
//! LZ4 and zstd compressed against the zone's dictionary `dict_id` (a [`Dict`]; only
//! these two carry the id). The codec is per frame, so changing the zone's codec or
//! dictionary needs no re-encoding of existing blocks.
//!
//! A block's stored *data* is either one frame, or a frame with a *tail*: `5 | varint
//! main_len | main frame | tail entry...`, each tail entry `tag: u16 LE | varint len |
//! frame` holding exactly one record (compressed on its own) and the top 16 bits of its
//! trie hash. Not in the paper: a demotion into a block that needs no split and holds no
//! copy of the key appends one entry (one small compression, no decompression) instead
//! of rewriting the whole block, and the next full rewrite merges the tail back in; the
//! zone bounds the tail's length (`super::tail_max`). A read checks the tail's tags
//! first and decompresses only an entry whose tag matches, so an item in the tail costs
//! one record's decompression and an item in the main frame no more than before.
//! Tail frames use the main frame's dictionary.

//! Nothing here trusts the bytes: every length and offset is bounds-checked, a raw length
//! is capped before anything is allocated, and any inconsistency is a [`Corrupt`] error.

use super::lz4c;
use std::cell::RefCell;
use std::fmt;

/// Largest raw block (or large-item value) a frame may declare: bounds the allocation a
/// corrupt frame could ask for.
pub const MAX_RAW: usize = 64 << 20;
/// Most index entries per block.
pub const MAX_INDEX: usize = 8;
/// Header bytes before the index.
pub const HEADER: usize = 5;

const KIND_EXPIRE: u8 = 1;
const KIND_LARGE: u8 = 2;

const CODEC_RAW: u8 = 0;
const CODEC_LZ4: u8 = 1;
const CODEC_ZSTD: u8 = 2;
const CODEC_LZ4_DICT: u8 = 3;
const CODEC_ZSTD_DICT: u8 = 4;
/// Block data with a tail (see [`put_tail`]); never a frame of its own.
const CODEC_TAIL: u8 = 5;

/// A raw-content compression dictionary (not in the paper; see the zone's module doc):
/// whole records sampled from the zone, which LZ4 and zstd use as a window preceding
/// every block they compress, so the field names and common values that a 2 KB block of
/// unrelated records cannot share with itself are found in the dictionary instead.
/// Frames name it by `id`; the zone keeps it while any frame does. LZ4 compresses
/// against liblz4's prepared state of it ([`lz4c::PreparedDict`]).
pub struct Dict {
    pub id: u32,
    content: lz4c::PreparedDict,
}

impl Dict {
    pub fn new(id: u32, bytes: Box<[u8]>) -> Dict {
        Dict {
            id,
            content: lz4c::PreparedDict::new(bytes),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        self.content.bytes()
    }

    /// Heap bytes it holds: the content's allocation and, once an LZ4 block was
    /// compressed against it, liblz4's 16 KB state.
    pub fn heap_bytes(&self) -> usize {
        crate::object::alloc_size(self.bytes().len()) + self.content.state_bytes()
    }
}

impl fmt::Debug for Dict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Dict {{ id: {}, {} bytes }}",
            self.id,
            self.bytes().len()
        )
    }
}

/// A block (or frame) that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt Z-zone block: {}", self.0)
    }
}
impl std::error::Error for Corrupt {}

/// Compression of blocks and large items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Codec {
    #[default]
    Lz4,
    Zstd {
        level: i32,
    },
}

/// What the zone keeps per item beside key and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZMeta {
    pub expire_at_ms: Option<u64>,
    /// An opaque byte the caller stores with the item.
    pub flags: u8,
}

/// One decoded record, borrowing the raw block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub db: u8,
    pub meta: ZMeta,
    pub body: Body<'a>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    Inline {
        key: &'a [u8],
        value: &'a [u8],
    },
    /// An item compressed on its own; `id` names it in the zone's large-item table.
    Large {
        id: u32,
    },
}

// ---- varints (LEB128) ----

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, Corrupt> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(*pos).ok_or(Corrupt("truncated varint"))?;
        *pos += 1;
        if i == 9 && b > 1 {
            return Err(Corrupt("varint overflow"));
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Corrupt("varint too long"))
}

#[inline]
fn get_len(buf: &[u8], pos: &mut usize) -> Result<usize, Corrupt> {
    let v = get_varint(buf, pos)?;
    if v > buf.len() as u64 {
        return Err(Corrupt("length past the block"));
    }
    Ok(v as usize)
}

#[inline]
fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], Corrupt> {
    let end = pos.checked_add(n).ok_or(Corrupt("length overflow"))?;
    let s = buf.get(*pos..end).ok_or(Corrupt("record past the block"))?;
    *pos = end;
    Ok(s)
}

// ---- records ----

fn put_head(out: &mut Vec<u8>, db: u8, meta: ZMeta, large: bool) {
    let mut kind = 0;
    if meta.expire_at_ms.is_some() {
        kind |= KIND_EXPIRE;
    }
    if large {
        kind |= KIND_LARGE;
    }
    out.extend_from_slice(&[kind, db, meta.flags]);
    if let Some(t) = meta.expire_at_ms {
        put_varint(out, t);
    }
}

/// Appends an inline record.
pub fn put_inline(out: &mut Vec<u8>, db: u8, key: &[u8], value: &[u8], meta: ZMeta) {
    put_head(out, db, meta, false);
    put_varint(out, key.len() as u64);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Appends a record pointing at large item `id`.
pub fn put_large(out: &mut Vec<u8>, db: u8, meta: ZMeta, id: u32) {
    put_head(out, db, meta, true);
    put_varint(out, id as u64);
}

/// Decodes the record at `*pos`, advancing it.
pub fn parse_record<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Record<'a>, Corrupt> {
    let h = take(buf, pos, 3)?;
    let (kind, db, flags) = (h[0], h[1], h[2]);
    if kind & !(KIND_EXPIRE | KIND_LARGE) != 0 {
        return Err(Corrupt("unknown record kind"));
    }
    let expire_at_ms = if kind & KIND_EXPIRE != 0 {
        Some(get_varint(buf, pos)?)
    } else {
        None
    };
    let meta = ZMeta {
        expire_at_ms,
        flags,
    };
    let body = if kind & KIND_LARGE != 0 {
        let id = get_varint(buf, pos)?;
        let id = u32::try_from(id).map_err(|_| Corrupt("large id out of range"))?;
        Body::Large { id }
    } else {
        let kl = get_len(buf, pos)?;
        let vl = get_len(buf, pos)?;
        let key = take(buf, pos, kl)?;
        let value = take(buf, pos, vl)?;
        Body::Inline { key, value }
    };
    Ok(Record { db, meta, body })
}

/// The parsed header of a raw block.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub count: u32,
    /// Offset of the first record.
    pub start: usize,
    nidx: usize,
}

impl Header {
    pub fn parse(raw: &[u8]) -> Result<Header, Corrupt> {
        let h = raw.get(..HEADER).ok_or(Corrupt("short header"))?;
        let count = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let nidx = h[4] as usize;
        if nidx > MAX_INDEX || nidx > count as usize {
            return Err(Corrupt("bad index size"));
        }
        let start = HEADER + 6 * nidx;
        if start > raw.len() {
            return Err(Corrupt("short index"));
        }
        // Each record is at least 5 bytes (kind, db, flags, two one-byte lengths or an id).
        if count as usize > (raw.len() - start) / 4 {
            return Err(Corrupt("count exceeds the block"));
        }
        Ok(Header { count, start, nidx })
    }

    fn entry(&self, raw: &[u8], i: usize) -> (u32, usize) {
        let p = HEADER + 6 * i;
        let tag = u32::from_le_bytes([raw[p], raw[p + 1], raw[p + 2], raw[p + 3]]);
        let off = u16::from_le_bytes([raw[p + 4], raw[p + 5]]) as usize;
        (tag, off)
    }

    /// The byte range of records that can hold a key whose hash's top 32 bits are `tag`.
    pub fn span(&self, raw: &[u8], tag: u32) -> Result<(usize, usize), Corrupt> {
        let (mut lo, mut hi) = (self.start, raw.len());
        for i in 0..self.nidx {
            let (t, off) = self.entry(raw, i);
            let at = self.start + off;
            if at > raw.len() {
                return Err(Corrupt("index offset past the block"));
            }
            if t < tag {
                lo = at;
            } else if t > tag {
                hi = at;
                break;
            }
        }
        if lo > hi {
            return Err(Corrupt("index out of order"));
        }
        Ok((lo, hi))
    }
}

/// Iterates a raw block's records with their byte ranges; the last item is an error if
/// the records do not fill the block exactly `count` times.
pub fn records(raw: &[u8]) -> Result<Records<'_>, Corrupt> {
    let h = Header::parse(raw)?;
    Ok(Records {
        raw,
        pos: h.start,
        left: Some(h.count),
        done: false,
    })
}

/// Iterates records laid end to end with no header (a block's tail), up to the end of
/// `buf`.
pub fn tail_records(buf: &[u8]) -> Records<'_> {
    Records {
        raw: buf,
        pos: 0,
        left: None,
        done: false,
    }
}

pub struct Records<'a> {
    raw: &'a [u8],
    pos: usize,
    /// Records still to come (None: until the end of `raw`).
    left: Option<u32>,
    done: bool,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<(Record<'a>, std::ops::Range<usize>), Corrupt>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let at_end = self.pos == self.raw.len();
        match self.left {
            Some(0) => {
                self.done = true;
                return (!at_end).then_some(Err(Corrupt("bytes after the last record")));
            }
            None if at_end => {
                self.done = true;
                return None;
            }
            _ => {}
        }
        let start = self.pos;
        match parse_record(self.raw, &mut self.pos) {
            Ok(r) => {
                if let Some(n) = &mut self.left {
                    *n -= 1;
                }
                Some(Ok((r, start..self.pos)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Builds a raw block into `out` from records already in hash order: `recs` yields each
/// record's hash and encoded bytes.
pub fn build(out: &mut Vec<u8>, recs: &[(u64, &[u8])]) {
    out.clear();
    let count = recs.len();
    let body: usize = recs.iter().map(|r| r.1.len()).sum();
    let nidx = if body > u16::MAX as usize {
        0
    } else {
        count.min(MAX_INDEX)
    };
    out.reserve(HEADER + 6 * nidx + body);
    out.extend_from_slice(&(count as u32).to_le_bytes());
    out.push(nidx as u8);
    let mut offs = Vec::with_capacity(nidx);
    {
        let mut off = 0usize;
        let mut next = 0usize;
        for (i, r) in recs.iter().enumerate() {
            if next < nidx && i == next * count / nidx {
                offs.push(((r.0 >> 32) as u32, off as u16));
                next += 1;
            }
            off += r.1.len();
        }
    }
    for (t, o) in offs {
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&o.to_le_bytes());
    }
    for r in recs {
        out.extend_from_slice(r.1);
    }
}

// ---- frames ----

thread_local! {
    // zstd contexts are ~1 MB; one per thread (a shard runs on one thread at a time),
    // never per zone. Borrowed only inside a single (de)compress call.
    static ZSTD_C: RefCell<Option<zstd::zstd_safe::CCtx<'static>>> = const { RefCell::new(None) };
    static ZSTD_D: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// zstd at `level`, against raw-content dictionary `dict` (empty: none).
fn zstd_compress(level: i32, raw: &[u8], dict: &[u8], out: &mut [u8]) -> Option<usize> {
    ZSTD_C.with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        if c.is_none() {
            *c = Some(zstd::zstd_safe::CCtx::try_create()?);
        }
        c.as_mut()?.compress_using_dict(out, raw, dict, level).ok()
    })
}

fn zstd_decompress(payload: &[u8], dict: &[u8], out: &mut [u8]) -> Result<usize, Corrupt> {
    ZSTD_D.with(|d| {
        let mut d = d.try_borrow_mut().map_err(|_| Corrupt("zstd busy"))?;
        if d.is_none() {
            *d = Some(zstd::zstd_safe::DCtx::try_create().ok_or(Corrupt("zstd context"))?);
        }
        d.as_mut()
            .ok_or(Corrupt("zstd context"))?
            .decompress_using_dict(out, payload, dict)
            .map_err(|_| Corrupt("zstd payload"))
    })
}

/// Encodes `raw` as a frame into `out` (cleared first), compressed with `codec` (against
/// `dict` if given) unless that does not make it smaller.
pub fn compress(codec: Codec, raw: &[u8], dict: Option<&Dict>, out: &mut Vec<u8>) {
    out.clear();
    out.push(CODEC_RAW);
    put_varint(out, raw.len() as u64);
    let hdr = out.len();
    if let Some(d) = dict {
        put_varint(out, d.id as u64);
    }
    let start = out.len();
    let (tag, n) = match codec {
        Codec::Lz4 => (
            if dict.is_some() {
                CODEC_LZ4_DICT
            } else {
                CODEC_LZ4
            },
            lz4c::compress_append(raw, dict.map(|d| &d.content), out),
        ),
        Codec::Zstd { level } => {
            let tag = if dict.is_some() {
                CODEC_ZSTD_DICT
            } else {
                CODEC_ZSTD
            };
            out.resize(start + zstd::zstd_safe::compress_bound(raw.len()), 0);
            let dict_bytes = dict.map_or(&[][..], Dict::bytes);
            let n = zstd_compress(level, raw, dict_bytes, &mut out[start..]);
            out.truncate(start + n.unwrap_or(0));
            (tag, n)
        }
    };
    match n {
        Some(n) if n + (start - hdr) < raw.len() => {
            out[0] = tag;
        }
        _ => {
            out.truncate(hdr);
            out.extend_from_slice(raw);
        }
    }
}

/// Whether record bytes `rec` (as [`put_inline`] / [`put_large`] write them) carry an
/// expiry time (its kind byte says so; no parsing).
pub fn record_may_expire(rec: &[u8]) -> bool {
    rec.first().is_some_and(|k| k & KIND_EXPIRE != 0)
}

/// Writes block data made of frame `main` and tail entries `tail` (bytes as
/// [`put_tail_entry`] writes them) into `out` (cleared).
pub fn put_tail(main: &[u8], tail: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.push(CODEC_TAIL);
    put_varint(out, main.len() as u64);
    out.extend_from_slice(main);
    out.extend_from_slice(tail);
}

/// Appends one tail entry: a record's hash tag and its frame.
pub fn put_tail_entry(out: &mut Vec<u8>, tag: u16, frame: &[u8]) {
    out.extend_from_slice(&tag.to_le_bytes());
    put_varint(out, frame.len() as u64);
    out.extend_from_slice(frame);
}

/// Block data's main frame and its tail entries' bytes, if it has a tail (no decoding).
pub fn split_tail(data: &[u8]) -> Result<(&[u8], Option<&[u8]>), Corrupt> {
    if data.first() != Some(&CODEC_TAIL) {
        return Ok((data, None));
    }
    let mut pos = 1;
    let n = get_len(data, &mut pos)?;
    let main = take(data, &mut pos, n)?;
    let tail = &data[pos..];
    if main.first() == Some(&CODEC_TAIL) || tail.is_empty() {
        return Err(Corrupt("nested or empty tail"));
    }
    Ok((main, Some(tail)))
}

/// Iterates a tail's entries: `(tag, frame)`; the last item is an error if an entry
/// does not parse.
pub fn tail_entries(tail: &[u8]) -> TailEntries<'_> {
    TailEntries {
        buf: tail,
        pos: 0,
        done: false,
    }
}

pub struct TailEntries<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Iterator for TailEntries<'a> {
    type Item = Result<(u16, &'a [u8]), Corrupt>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        let r = (|| {
            let t = take(self.buf, &mut self.pos, 2)?;
            let tag = u16::from_le_bytes([t[0], t[1]]);
            let n = get_len(self.buf, &mut self.pos)?;
            let frame = take(self.buf, &mut self.pos, n)?;
            if frame.first() == Some(&CODEC_TAIL) {
                return Err(Corrupt("nested tail"));
            }
            Ok((tag, frame))
        })();
        self.done = r.is_err();
        Some(r)
    }
}

/// Decodes every entry of tail `tail`, appending the records to `out`; returns how many.
/// At most `max_raw` bytes are appended; on error `out` may hold part of them.
pub fn decompress_tail_append(
    tail: &[u8],
    max_raw: usize,
    dicts: &[Dict],
    out: &mut Vec<u8>,
) -> Result<usize, Corrupt> {
    let base = out.len();
    let mut n = 0;
    for e in tail_entries(tail) {
        let (_, frame) = e?;
        let left = max_raw.saturating_sub(out.len() - base);
        decompress_append(frame, left, dicts, out)?;
        n += 1;
    }
    Ok(n)
}

/// The dictionary id a frame (or block data: its main frame's) was compressed against,
/// if any (no decoding).
pub fn frame_dict(frame: &[u8]) -> Option<u32> {
    let frame = split_tail(frame).ok()?.0;
    let codec = *frame.first()?;
    if codec != CODEC_LZ4_DICT && codec != CODEC_ZSTD_DICT {
        return None;
    }
    let mut pos = 1;
    get_varint(frame, &mut pos).ok()?;
    get_varint(frame, &mut pos).ok().map(|v| v as u32)
}

/// Decodes a frame into `out` (cleared first). Never allocates more than [`MAX_RAW`],
/// nor more than the payload could expand to under LZ4.
pub fn decompress(frame: &[u8], dicts: &[Dict], out: &mut Vec<u8>) -> Result<(), Corrupt> {
    out.clear();
    decompress_append(frame, MAX_RAW, dicts, out).map(|_| ())
}

/// Decodes a frame declaring at most `max_raw` bytes, appending them to `out`; returns
/// the raw length. A frame naming a dictionary not in `dicts` is corrupt. On error `out`
/// is left as it was.
pub fn decompress_append(
    frame: &[u8],
    max_raw: usize,
    dicts: &[Dict],
    out: &mut Vec<u8>,
) -> Result<usize, Corrupt> {
    let codec = *frame.first().ok_or(Corrupt("empty frame"))?;
    let mut pos = 1;
    let raw_len = get_varint(frame, &mut pos)?;
    if raw_len > max_raw as u64 {
        return Err(Corrupt("raw length too large"));
    }
    let raw_len = raw_len as usize;
    let dict: &[u8] = if codec == CODEC_LZ4_DICT || codec == CODEC_ZSTD_DICT {
        let id = get_varint(frame, &mut pos)?;
        dicts
            .iter()
            .find(|d| d.id as u64 == id)
            .ok_or(Corrupt("unknown dictionary"))?
            .bytes()
    } else {
        &[]
    };
    let payload = &frame[pos..];
    let base = out.len();
    let r = match codec {
        CODEC_RAW => {
            if payload.len() != raw_len {
                return Err(Corrupt("raw frame length"));
            }
            out.extend_from_slice(payload);
            Ok(())
        }
        CODEC_LZ4 | CODEC_LZ4_DICT => {
            // LZ4 expands at most ~255x (a match byte run of 255 per length byte).
            if raw_len > payload.len().saturating_mul(255) + 16 {
                return Err(Corrupt("lz4 length beyond its ratio"));
            }
            if lz4c::decompress_append(payload, raw_len, dict, out) {
                Ok(())
            } else {
                Err(Corrupt("lz4 payload"))
            }
        }
        CODEC_ZSTD | CODEC_ZSTD_DICT => {
            match zstd::zstd_safe::get_frame_content_size(payload) {
                Ok(Some(n)) if n == raw_len as u64 => {}
                _ => return Err(Corrupt("zstd content size")),
            }
            out.resize(base + raw_len, 0);
            match zstd_decompress(payload, dict, &mut out[base..]) {
                Ok(n) if n == raw_len => Ok(()),
                Ok(_) => Err(Corrupt("zstd length mismatch")),
                Err(e) => Err(e),
            }
        }
        _ => Err(Corrupt("unknown codec")),
    };
    match r {
        Ok(()) => Ok(raw_len),
        Err(e) => {
            out.truncate(base);
            Err(e)
        }
    }
}

/// The raw length a frame declares (no decoding), if its header parses; for block
/// data with a tail, the main frame's and the tail's together.
pub fn frame_raw_len(frame: &[u8]) -> Option<usize> {
    let (main, tail) = split_tail(frame).ok()?;
    let len = |f: &[u8]| -> Option<usize> {
        let mut pos = 1;
        f.first()?;
        get_varint(f, &mut pos).ok().map(|v| v as usize)
    };
    let mut n = len(main)?;
    for e in tail_entries(tail.unwrap_or(&[])) {
        n = n.saturating_add(len(e.ok()?.1)?);
    }
    Some(n)
}

/// Decodes a whole frame and every record in it (what the fuzz target drives): the
/// number of records, or why it is corrupt.
pub fn check_frame(frame: &[u8]) -> Result<usize, Corrupt> {
    check_frame_with(frame, &[])
}

/// [`check_frame`] with dictionaries frames may name; block data with a tail is checked
/// as its main frame plus the tail's records.
pub fn check_frame_with(frame: &[u8], dicts: &[Dict]) -> Result<usize, Corrupt> {
    let (main, tail) = split_tail(frame)?;
    let mut raw = Vec::new();
    decompress(main, dicts, &mut raw)?;
    let mut n = check_raw(&raw)?;
    if let Some(tail) = tail {
        raw.clear();
        decompress_tail_append(tail, MAX_RAW, dicts, &mut raw)?;
        for r in tail_records(&raw) {
            r?;
            n += 1;
        }
    }
    Ok(n)
}

/// Parses every record of a raw block and probes its index with every record's and a
/// few fixed tags: the number of records, or why it is corrupt.
pub fn check_raw(raw: &[u8]) -> Result<usize, Corrupt> {
    let h = Header::parse(raw)?;
    let mut n = 0;
    for r in records(raw)? {
        r?;
        n += 1;
    }
    for tag in [0, 1 << 31, u32::MAX] {
        let (lo, hi) = h.span(raw, tag)?;
        let mut pos = lo;
        while pos < hi {
            parse_record(raw, &mut pos)?;
        }
    }
    Ok(n)
}
