//! Hashes and sets (and, in `list`, lists): the values of Redis's hash and set types, each kept as ONE object
//! behind its key's entry (see `entry`: the entry's value bytes hold the object's
//! pointer). Mirrors the encodings of Redis 7.0's t_hash.c and t_set.c.
//!
//! # Why one object, and why its memory is counted the way it is
//!
//! For eviction and for every model (K-LRU sampling, the KRR profiler's sized
//! references, per-tenant accounting) a hash or a set is one cached item, like a string:
//! it is sampled, aged and evicted as a whole, and its size is what it really holds on
//! the heap. [`Object::bytes`] is that size: jemalloc's size class (`nallocx`, which is
//! `malloc_usable_size` of the block when jemalloc is the global allocator, as it is in
//! the `augur` binary) of every allocation the object owns: its own box, the hash
//! table's single allocation (buckets + control bytes, at its real capacity) and one
//! block per element, or the one buffer of a small encoding. It is recomputed from an
//! incrementally kept element total, so asking costs O(1); the shard charges
//! `entry block + bytes()` to the key and re-reads it after every mutation.
//!
//! # Encodings (Redis 7.0's, with its thresholds)
//!
//! - Hash: *listpack* (one buffer of length-prefixed fields and values, scanned
//!   linearly) while it has at most `hash-max-listpack-entries` (128) pairs and no field
//!   or value is longer than `hash-max-listpack-value` (64); then *hashtable*, for good
//!   (Redis never converts back either).
//! - Set: *intset* (a sorted array of integers, binary searched) while every member is
//!   an integer in canonical form and there are at most `set-max-intset-entries` (512);
//!   then *hashtable*. Redis 7.0 has no listpack sets (7.2 added them).
//!
//! The listpack here is not Redis's byte format (no back-lengths, lengths are LEB128
//! varints) but has its properties: one allocation, linear lookup, compact for small
//! hashes. Table elements are one block each: a set member's bytes, or a hash pair as
//! `varint(field length) field value`.

use crate::list::List;
use crate::store::key_hash;
use crate::stream::Stream;
use crate::zset::ZSet;
use hashbrown17::HashTable;
use rand::Rng;
use std::borrow::Cow;

/// The type of a key's value, as TYPE names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
    Set,
    List,
    ZSet,
    Stream,
}

impl Kind {
    /// TYPE's answer.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::List => "list",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }
}

/// The encoding thresholds (CONFIG `hash-max-listpack-entries`,
/// `hash-max-listpack-value`, `set-max-intset-entries`; Redis 7.0's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    /// `list-max-listpack-size` (alias `list-max-ziplist-size`): a list node's fill
    /// (see `list`).
    pub list_max_listpack_size: i64,
    /// `list-compress-depth`: a list's raw nodes at each end (see `list`).
    pub list_compress_depth: u32,
    /// `zset-max-listpack-entries` (alias `zset-max-ziplist-entries`; see `zset`).
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value` (alias `zset-max-ziplist-value`).
    pub zset_max_listpack_value: usize,
    /// `stream-node-max-bytes` and `stream-node-max-entries` (see `stream`).
    pub stream_node: crate::stream::NodeLimits,
}

impl Limits {
    /// The layout new list nodes get.
    pub fn list_shape(&self) -> crate::list::ListShape {
        crate::list::ListShape {
            fill: self.list_max_listpack_size,
            compress_depth: self.list_compress_depth,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            list_max_listpack_size: crate::list::DEFAULT_LIST_FILL,
            list_compress_depth: 0,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            stream_node: crate::stream::NodeLimits::default(),
        }
    }
}

/// jemalloc's size class for a request of `n` bytes (0 for no allocation).
#[inline]
pub(crate) fn alloc_size(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        // SAFETY: nallocx only computes the size class; flags 0 = default alignment.
        unsafe { tikv_jemalloc_sys::nallocx(n, 0) }
    }
}

/// A hash, a set, a list or a sorted set.
#[derive(Debug, Clone)]
pub enum Object {
    Hash(Hash),
    Set(Set),
    List(List),
    ZSet(ZSet),
    Stream(Box<Stream>),
}

impl Object {
    pub fn new_hash() -> Object {
        Object::Hash(Hash::new())
    }

    pub fn new_set() -> Object {
        Object::Set(Set::new())
    }

    /// An empty object of `kind` (every kind but String); None for String.
    pub fn new_of(kind: Kind) -> Option<Object> {
        match kind {
            Kind::Hash => Some(Object::new_hash()),
            Kind::Set => Some(Object::new_set()),
            Kind::List => Some(Object::List(List::new())),
            Kind::ZSet => Some(Object::ZSet(ZSet::new())),
            Kind::Stream => Some(Object::Stream(Box::default())),
            Kind::String => None,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Object::Hash(_) => Kind::Hash,
            Object::Set(_) => Kind::Set,
            Object::List(_) => Kind::List,
            Object::ZSet(_) => Kind::ZSet,
            Object::Stream(_) => Kind::Stream,
        }
    }

    /// Fields of a hash or members of a set.
    pub fn len(&self) -> usize {
        match self {
            Object::Hash(h) => h.len(),
            Object::Set(s) => s.len(),
            Object::List(l) => l.len(),
            Object::ZSet(z) => z.len(),
            Object::Stream(s) => s.len() as usize,
        }
    }

    /// Whether the key goes away (a collection emptied by its last removal). A stream
    /// never does: an empty stream keeps its IDs and groups, as in Redis.
    pub fn is_empty(&self) -> bool {
        !matches!(self, Object::Stream(_)) && self.len() == 0
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        match self {
            Object::Hash(h) => h.encoding(),
            Object::Set(s) => s.encoding(),
            Object::List(l) => l.encoding(),
            Object::ZSet(z) => z.encoding(),
            Object::Stream(s) => s.encoding(),
        }
    }

    /// Heap bytes this object holds, including the box it lives in (see the module
    /// documentation). O(1).
    pub fn bytes(&self) -> usize {
        alloc_size(std::mem::size_of::<Object>())
            + match self {
                Object::Hash(h) => h.bytes(),
                Object::Set(s) => s.bytes(),
                Object::List(l) => l.bytes(),
                Object::ZSet(z) => z.bytes(),
                Object::Stream(s) => alloc_size(std::mem::size_of::<Stream>()) + s.bytes(),
            }
    }

    pub fn as_hash(&self) -> Option<&Hash> {
        match self {
            Object::Hash(h) => Some(h),
            _ => None,
        }
    }

    pub fn as_hash_mut(&mut self) -> Option<&mut Hash> {
        match self {
            Object::Hash(h) => Some(h),
            _ => None,
        }
    }

    pub fn as_set(&self) -> Option<&Set> {
        match self {
            Object::Set(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_set_mut(&mut self) -> Option<&mut Set> {
        match self {
            Object::Set(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&List> {
        match self {
            Object::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_list_mut(&mut self) -> Option<&mut List> {
        match self {
            Object::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_zset(&self) -> Option<&ZSet> {
        match self {
            Object::ZSet(z) => Some(z),
            _ => None,
        }
    }

    pub fn as_stream(&self) -> Option<&Stream> {
        match self {
            Object::Stream(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_stream_mut(&mut self) -> Option<&mut Stream> {
        match self {
            Object::Stream(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_zset_mut(&mut self) -> Option<&mut ZSet> {
        match self {
            Object::ZSet(z) => Some(z),
            _ => None,
        }
    }
}

// ----- shared helpers -----

pub(crate) fn put_varint(buf: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        buf.push((n as u8) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

/// Decodes a varint at the start of `b`: (value, bytes used). Only called on buffers
/// this module wrote.
pub(crate) fn get_varint(b: &[u8]) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    for (i, &x) in b.iter().enumerate() {
        n |= ((x & 0x7F) as usize) << shift;
        if x & 0x80 == 0 {
            return (n, i + 1);
        }
        shift += 7;
    }
    (n, b.len())
}

pub(crate) fn varint_len(n: usize) -> usize {
    let bits = usize::BITS - (n | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// A hash pair as one table element: `varint(field length) field value`.
fn pair_elem(field: &[u8], value: &[u8]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(varint_len(field.len()) + field.len() + value.len());
    put_varint(&mut v, field.len());
    v.extend_from_slice(field);
    v.extend_from_slice(value);
    v.into_boxed_slice()
}

fn split_pair(e: &[u8]) -> (&[u8], &[u8]) {
    let (flen, n) = get_varint(e);
    (&e[n..n + flen], &e[n + flen..])
}

/// Parses a set member as an intset integer: Redis's `string2ll`, i.e. only the
/// canonical decimal form ("12", "-3", "0"; not "012", "+1", "-0", " 1"). The server's
/// argument parser (`resp::parse_i64`) is this function too.
#[inline]
pub fn parse_canonical_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// A table of byte-string elements with honest memory and resumable scans.
#[derive(Debug, Clone, Default)]
struct ElemTable {
    table: HashTable<Box<[u8]>>,
    /// Sum of the elements' size classes.
    elem_bytes: usize,
    /// Bumped whenever elements may have moved (a grow, rehash or shrink), so a scan
    /// cursor from before restarts instead of skipping elements.
    epoch: u16,
}

/// Scan cursors: `epoch << CURSOR_EPOCH_SHIFT | next bucket`.
const CURSOR_EPOCH_SHIFT: u32 = 40;

impl ElemTable {
    fn bytes(&self) -> usize {
        alloc_size(self.table.allocation_size()) + self.elem_bytes
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    /// The element whose identity (`ident(elem)`) is `id`.
    fn find(&self, id: &[u8], ident: fn(&[u8]) -> &[u8]) -> Option<&[u8]> {
        self.table
            .find(key_hash(id), |e| ident(e) == id)
            .map(|e| &e[..])
    }

    /// Inserts or replaces the element with identity `id`; true if it was new.
    fn upsert(&mut self, id: &[u8], elem: Box<[u8]>, ident: fn(&[u8]) -> &[u8]) -> bool {
        let h = key_hash(id);
        if let Some(e) = self.table.find_mut(h, |e| ident(e) == id) {
            self.elem_bytes -= alloc_size(e.len());
            self.elem_bytes += alloc_size(elem.len());
            *e = elem;
            return false;
        }
        self.insert_new(h, elem, ident);
        true
    }

    /// Inserts an element known to be absent.
    fn insert_new(&mut self, h: u64, elem: Box<[u8]>, ident: fn(&[u8]) -> &[u8]) {
        if self.table.len() >= self.table.capacity() {
            // This insertion may grow or rehash the table: elements move.
            self.epoch = self.epoch.wrapping_add(1);
        }
        self.elem_bytes += alloc_size(elem.len());
        self.table
            .insert_unique(h, elem, move |e| key_hash(ident(e)));
    }

    /// Removes the element with identity `id`; returns it.
    fn remove(&mut self, id: &[u8], ident: fn(&[u8]) -> &[u8]) -> Option<Box<[u8]>> {
        let entry = self
            .table
            .find_entry(key_hash(id), |e| ident(e) == id)
            .ok()?;
        let (e, _) = entry.remove();
        self.elem_bytes -= alloc_size(e.len());
        self.maybe_shrink(ident);
        Some(e)
    }

    /// hashbrown never shrinks on its own; a set drained by SPOP/SREM would keep its
    /// peak table (memory) and make random draws slow. Shrink below 1/8 full.
    fn maybe_shrink(&mut self, ident: fn(&[u8]) -> &[u8]) {
        let buckets = self.table.num_buckets();
        if buckets >= 64 && self.table.len() * 8 < buckets {
            self.table
                .shrink_to(self.table.len(), move |e| key_hash(ident(e)));
            self.epoch = self.epoch.wrapping_add(1);
        }
    }

    /// A uniformly random element: every occupied bucket is equally likely to be drawn.
    fn random<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<&[u8]> {
        if self.table.is_empty() {
            return None;
        }
        let n = self.table.num_buckets();
        loop {
            if let Some(e) = self.table.get_bucket(rng.gen_range(0..n)) {
                return Some(e);
            }
        }
    }

    /// Visits buckets from the cursor's until `count` elements were found (or
    /// `count * 10` buckets were seen); returns the next cursor (0 when done). A cursor
    /// from another epoch restarts from bucket 0: duplicates, never misses (the
    /// guarantee SCAN gives).
    fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8])) -> u64 {
        let n = self.table.num_buckets();
        let epoch = (cursor >> CURSOR_EPOCH_SHIFT) as u16;
        let mut b = if cursor == 0 || epoch != self.epoch {
            0
        } else {
            (cursor & ((1 << CURSOR_EPOCH_SHIFT) - 1)) as usize
        };
        let mut found = 0;
        let mut budget = count.max(1).saturating_mul(10);
        while b < n && found < count.max(1) && budget > 0 {
            if let Some(e) = self.table.get_bucket(b) {
                f(e);
                found += 1;
            }
            b += 1;
            budget -= 1;
        }
        if b >= n {
            0
        } else {
            ((self.epoch as u64) << CURSOR_EPOCH_SHIFT) | b as u64
        }
    }
}

fn set_ident(e: &[u8]) -> &[u8] {
    e
}

fn pair_ident(e: &[u8]) -> &[u8] {
    split_pair(e).0
}

// ----- hashes -----

/// A hash (t_hash.c): field → value.
#[derive(Debug, Clone)]
pub struct Hash {
    enc: HashEnc,
}

#[derive(Debug, Clone)]
enum HashEnc {
    /// `varint(len) field varint(len) value`, repeated; `len` pairs.
    Pack {
        buf: Vec<u8>,
        len: usize,
    },
    Table(ElemTable),
}

/// Walks a listpack buffer: (field, value, byte offset of the pair, offset past it).
struct PackIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for PackIter<'a> {
    type Item = (&'a [u8], &'a [u8], usize, usize);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let (flen, n) = get_varint(&self.buf[self.pos..]);
        let f = &self.buf[self.pos + n..self.pos + n + flen];
        self.pos += n + flen;
        let (vlen, n) = get_varint(&self.buf[self.pos..]);
        let v = &self.buf[self.pos + n..self.pos + n + vlen];
        self.pos += n + vlen;
        Some((f, v, start, self.pos))
    }
}

/// Pairs of a hash, in its internal order.
pub struct HashIter<'a>(HashIterInner<'a>);

enum HashIterInner<'a> {
    Pack(PackIter<'a>),
    Table(hashbrown17::hash_table::Iter<'a, Box<[u8]>>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            HashIterInner::Pack(p) => p.next().map(|(f, v, _, _)| (f, v)),
            HashIterInner::Table(t) => t.next().map(|e| split_pair(e)),
        }
    }
}

impl Default for Hash {
    fn default() -> Self {
        Self::new()
    }
}

impl Hash {
    pub fn new() -> Hash {
        Hash {
            enc: HashEnc::Pack {
                buf: Vec::new(),
                len: 0,
            },
        }
    }

    pub fn len(&self) -> usize {
        match &self.enc {
            HashEnc::Pack { len, .. } => *len,
            HashEnc::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match &self.enc {
            HashEnc::Pack { .. } => "listpack",
            HashEnc::Table(_) => "hashtable",
        }
    }

    fn bytes(&self) -> usize {
        match &self.enc {
            HashEnc::Pack { buf, .. } => alloc_size(buf.capacity()),
            HashEnc::Table(t) => t.bytes(),
        }
    }

    pub fn iter(&self) -> HashIter<'_> {
        HashIter(match &self.enc {
            HashEnc::Pack { buf, .. } => HashIterInner::Pack(PackIter { buf, pos: 0 }),
            HashEnc::Table(t) => HashIterInner::Table(t.table.iter()),
        })
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.enc {
            HashEnc::Pack { buf, .. } => PackIter { buf, pos: 0 }
                .find(|(f, _, _, _)| *f == field)
                .map(|(_, v, _, _)| v),
            HashEnc::Table(t) => t.find(field, pair_ident).map(|e| split_pair(e).1),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value`; true if the field is new. Converts to a table when a
    /// threshold of `lim` is crossed (t_hash.c: hashTypeTryConversion / hashTypeSet).
    pub fn set(&mut self, field: &[u8], value: &[u8], lim: &Limits) -> bool {
        if let HashEnc::Pack { .. } = self.enc {
            if field.len() > lim.hash_max_listpack_value
                || value.len() > lim.hash_max_listpack_value
            {
                self.convert();
            }
        }
        match &mut self.enc {
            HashEnc::Pack { buf, len } => {
                let found = PackIter { buf, pos: 0 }
                    .find(|(f, _, _, _)| *f == field)
                    .map(|(_, _, s, e)| (s, e));
                let mut pair = Vec::with_capacity(
                    varint_len(field.len()) + field.len() + varint_len(value.len()) + value.len(),
                );
                put_varint(&mut pair, field.len());
                pair.extend_from_slice(field);
                put_varint(&mut pair, value.len());
                pair.extend_from_slice(value);
                let new = match found {
                    Some((s, e)) => {
                        buf.splice(s..e, pair);
                        false
                    }
                    None => {
                        // Grow exactly, as a listpack is realloc'ed to its new size.
                        buf.reserve_exact(pair.len());
                        buf.extend_from_slice(&pair);
                        *len += 1;
                        true
                    }
                };
                fit_capacity(buf);
                let over = *len > lim.hash_max_listpack_entries;
                if over {
                    self.convert();
                }
                new
            }
            HashEnc::Table(t) => t.upsert(field, pair_elem(field, value), pair_ident),
        }
    }

    /// Removes `field`; true if it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.enc {
            HashEnc::Pack { buf, len } => {
                let Some((s, e)) = PackIter { buf, pos: 0 }
                    .find(|(f, _, _, _)| *f == field)
                    .map(|(_, _, s, e)| (s, e))
                else {
                    return false;
                };
                buf.drain(s..e);
                *len -= 1;
                fit_capacity(buf);
                true
            }
            HashEnc::Table(t) => t.remove(field, pair_ident).is_some(),
        }
    }

    /// A uniformly random pair.
    pub fn random<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<(&[u8], &[u8])> {
        match &self.enc {
            HashEnc::Pack { buf, len } => {
                if *len == 0 {
                    return None;
                }
                let i = rng.gen_range(0..*len);
                PackIter { buf, pos: 0 }.nth(i).map(|(f, v, _, _)| (f, v))
            }
            HashEnc::Table(t) => t.random(rng).map(split_pair),
        }
    }

    /// HSCAN: a listpack is returned whole with cursor 0 (as Redis does); a table from
    /// the cursor's bucket on (see [`ElemTable::scan`]).
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        match &self.enc {
            HashEnc::Pack { .. } => {
                for (k, v) in self.iter() {
                    f(k, v);
                }
                0
            }
            HashEnc::Table(t) => t.scan(cursor, count, |e| {
                let (k, v) = split_pair(e);
                f(k, v)
            }),
        }
    }

    fn convert(&mut self) {
        let HashEnc::Pack { buf, len } = &self.enc else {
            return;
        };
        let mut t = ElemTable::default();
        t.table.reserve(*len, |e| key_hash(pair_ident(e)));
        for (f, v, _, _) in (PackIter { buf, pos: 0 }) {
            t.insert_new(key_hash(f), pair_elem(f, v), pair_ident);
        }
        self.enc = HashEnc::Table(t);
    }
}

/// Keeps a listpack buffer's capacity close to its length (a listpack is one exactly
/// sized allocation; a Vec's doubling would charge up to twice the bytes).
fn fit_capacity(buf: &mut Vec<u8>) {
    if buf.capacity() > buf.len() + buf.len() / 4 + 16 {
        buf.shrink_to_fit();
    }
}

// ----- sets -----

/// A set (t_set.c).
#[derive(Debug, Clone)]
pub struct Set {
    enc: SetEnc,
}

#[derive(Debug, Clone)]
enum SetEnc {
    /// Sorted, distinct.
    Ints(Vec<i64>),
    Table(ElemTable),
}

impl Default for Set {
    fn default() -> Self {
        Self::new()
    }
}

fn int_bytes(i: i64) -> Cow<'static, [u8]> {
    let mut b = itoa_buf::Buffer::new();
    Cow::Owned(b.format(i).as_bytes().to_vec())
}

/// Members of a set, in its internal order (integers are formatted on the way).
pub struct SetIter<'a>(SetIterInner<'a>);

enum SetIterInner<'a> {
    Ints(std::slice::Iter<'a, i64>),
    Table(hashbrown17::hash_table::Iter<'a, Box<[u8]>>),
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Cow<'a, [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            SetIterInner::Ints(i) => i.next().map(|&i| int_bytes(i)),
            SetIterInner::Table(t) => t.next().map(|e| Cow::Borrowed(&e[..])),
        }
    }
}

impl Set {
    /// An empty set in the intset encoding (Redis 7.0 starts a set as an intset when
    /// its first member is an integer; the first non-integer converts it at once).
    pub fn new() -> Set {
        Set {
            enc: SetEnc::Ints(Vec::new()),
        }
    }

    pub fn len(&self) -> usize {
        match &self.enc {
            SetEnc::Ints(v) => v.len(),
            SetEnc::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match &self.enc {
            SetEnc::Ints(_) => "intset",
            SetEnc::Table(_) => "hashtable",
        }
    }

    fn bytes(&self) -> usize {
        match &self.enc {
            SetEnc::Ints(v) => alloc_size(v.capacity() * 8),
            SetEnc::Table(t) => t.bytes(),
        }
    }

    pub fn iter(&self) -> SetIter<'_> {
        SetIter(match &self.enc {
            SetEnc::Ints(v) => SetIterInner::Ints(v.iter()),
            SetEnc::Table(t) => SetIterInner::Table(t.table.iter()),
        })
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match &self.enc {
            SetEnc::Ints(v) => parse_canonical_i64(m).is_some_and(|i| v.binary_search(&i).is_ok()),
            SetEnc::Table(t) => t.find(m, set_ident).is_some(),
        }
    }

    /// Adds `m`; true if it is new (t_set.c: setTypeAdd, with its conversions).
    pub fn insert(&mut self, m: &[u8], lim: &Limits) -> bool {
        if let SetEnc::Ints(v) = &mut self.enc {
            match parse_canonical_i64(m) {
                Some(i) => {
                    let Err(at) = v.binary_search(&i) else {
                        return false;
                    };
                    // An intset is realloc'ed to its exact size on every add.
                    v.reserve_exact(1);
                    v.insert(at, i);
                    if v.len() > lim.set_max_intset_entries {
                        self.convert();
                    }
                    return true;
                }
                None => self.convert(),
            }
        }
        match &mut self.enc {
            SetEnc::Table(t) => {
                let h = key_hash(m);
                if t.table.find(h, |e| &e[..] == m).is_some() {
                    return false;
                }
                t.insert_new(h, m.into(), set_ident);
                true
            }
            SetEnc::Ints(_) => unreachable!("converted above"),
        }
    }

    /// Removes `m`; true if it was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match &mut self.enc {
            SetEnc::Ints(v) => {
                let Some(Ok(at)) = parse_canonical_i64(m).map(|i| v.binary_search(&i)) else {
                    return false;
                };
                v.remove(at);
                if v.capacity() > v.len() + v.len() / 4 + 4 {
                    v.shrink_to_fit();
                }
                true
            }
            SetEnc::Table(t) => t.remove(m, set_ident).is_some(),
        }
    }

    /// A uniformly random member.
    pub fn random<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<Cow<'_, [u8]>> {
        match &self.enc {
            SetEnc::Ints(v) => {
                if v.is_empty() {
                    None
                } else {
                    Some(int_bytes(v[rng.gen_range(0..v.len())]))
                }
            }
            SetEnc::Table(t) => t.random(rng).map(Cow::Borrowed),
        }
    }

    /// Removes and returns a uniformly random member (SPOP).
    pub fn pop_random<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<Vec<u8>> {
        let m = self.random(rng)?.into_owned();
        self.remove(&m);
        Some(m)
    }

    /// SSCAN: an intset is returned whole with cursor 0 (as Redis does); a table from
    /// the cursor's bucket on.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(Cow<'a, [u8]>)) -> u64 {
        match &self.enc {
            SetEnc::Ints(_) => {
                for m in self.iter() {
                    f(m);
                }
                0
            }
            SetEnc::Table(t) => t.scan(cursor, count, |e| f(Cow::Borrowed(e))),
        }
    }

    fn convert(&mut self) {
        let SetEnc::Ints(v) = &self.enc else {
            return;
        };
        let mut t = ElemTable::default();
        t.table.reserve(v.len() + 1, |e| key_hash(e));
        for &i in v {
            let m = int_bytes(i);
            t.insert_new(key_hash(&m), m.into_owned().into_boxed_slice(), set_ident);
        }
        self.enc = SetEnc::Table(t);
    }
}

/// itoa without a dependency: formats an i64 into a stack buffer.
mod itoa_buf {
    pub struct Buffer([u8; 20]);

    impl Buffer {
        pub fn new() -> Buffer {
            Buffer([0; 20])
        }

        pub fn format(&mut self, i: i64) -> &str {
            let neg = i < 0;
            let mut n = i.unsigned_abs();
            let mut pos = self.0.len();
            loop {
                pos -= 1;
                self.0[pos] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            // u64::MAX has 20 digits but |i64::MIN| has 19, so the sign always fits.
            if neg {
                pos -= 1;
                self.0[pos] = b'-';
            }
            std::str::from_utf8(&self.0[pos..]).unwrap_or("0")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use std::collections::{HashMap, HashSet};

    fn small_limits() -> Limits {
        Limits {
            hash_max_listpack_entries: 8,
            hash_max_listpack_value: 16,
            set_max_intset_entries: 8,
            list_max_listpack_size: crate::list::DEFAULT_LIST_FILL,
            list_compress_depth: 0,
            ..Limits::default()
        }
    }

    /// The bytes an object must report, recomputed from scratch by walking it.
    fn recount(o: &Object) -> usize {
        let inner = match o {
            Object::Hash(h) => match &h.enc {
                HashEnc::Pack { buf, .. } => alloc_size(buf.capacity()),
                HashEnc::Table(t) => {
                    alloc_size(t.table.allocation_size())
                        + t.table.iter().map(|e| alloc_size(e.len())).sum::<usize>()
                }
            },
            Object::Set(s) => match &s.enc {
                SetEnc::Ints(v) => alloc_size(v.capacity() * 8),
                SetEnc::Table(t) => {
                    alloc_size(t.table.allocation_size())
                        + t.table.iter().map(|e| alloc_size(e.len())).sum::<usize>()
                }
            },
            // list.rs's, zset.rs's and stream.rs's own tests check their structures.
            Object::List(l) => l.bytes(),
            Object::ZSet(z) => z.bytes(),
            Object::Stream(st) => {
                alloc_size(std::mem::size_of::<crate::stream::Stream>()) + st.bytes()
            }
        };
        alloc_size(std::mem::size_of::<Object>()) + inner
    }

    #[test]
    fn canonical_integers_only() {
        assert_eq!(parse_canonical_i64(b"12"), Some(12));
        assert_eq!(parse_canonical_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"012"[..],
            b"+1",
            b"-0",
            b" 1",
            b"1 ",
            b"",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_canonical_i64(bad), None, "{bad:?}");
        }
        let mut b = itoa_buf::Buffer::new();
        assert_eq!(b.format(i64::MIN), "-9223372036854775808");
        assert_eq!(b.format(0), "0");
        assert_eq!(b.format(-7), "-7");
    }

    #[test]
    fn encodings_follow_redis_7_thresholds() {
        let lim = Limits::default();
        let mut h = Hash::new();
        for i in 0..128 {
            h.set(format!("f{i}").as_bytes(), b"v", &lim);
        }
        assert_eq!(h.encoding(), "listpack");
        h.set(b"f128", b"v", &lim);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = Hash::new();
        h.set(b"f", &[b'x'; 64], &lim);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"g", &[b'x'; 65], &lim);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"f"), Some(&[b'x'; 64][..]));

        let mut s = Set::new();
        for i in 0..512 {
            s.insert(i.to_string().as_bytes(), &lim);
        }
        assert_eq!(s.encoding(), "intset");
        s.insert(b"512", &lim);
        assert_eq!(s.encoding(), "hashtable");
        let mut s = Set::new();
        s.insert(b"1", &lim);
        s.insert(b"a", &lim);
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"1") && s.contains(b"a"));
    }

    #[test]
    fn random_members_are_roughly_uniform() {
        let lim = Limits::default();
        let mut s = Set::new();
        for i in 0..20 {
            s.insert(format!("m{i}").as_bytes(), &lim);
        }
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
        for _ in 0..20_000 {
            *counts
                .entry(s.random(&mut rng).unwrap().into_owned())
                .or_default() += 1;
        }
        assert_eq!(counts.len(), 20);
        for (_, c) in counts {
            assert!((800..1200).contains(&c), "{c}");
        }
    }

    #[test]
    fn scan_returns_every_element_despite_growth() {
        let lim = Limits::default();
        let mut s = Set::new();
        for i in 0..1000 {
            s.insert(format!("m{i}").as_bytes(), &lim);
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut extra = 0;
        loop {
            cursor = s.scan(cursor, 10, |m| {
                seen.insert(m.into_owned());
            });
            // Grow the set while scanning: elements move, the cursor restarts.
            if extra < 2000 {
                s.insert(format!("x{extra}").as_bytes(), &lim);
                extra += 1;
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..1000 {
            assert!(seen.contains(format!("m{i}").as_bytes()), "m{i} missed");
        }
    }

    #[derive(Debug, Clone)]
    enum HOp {
        Set(u8, Vec<u8>),
        Del(u8),
    }

    #[derive(Debug, Clone)]
    enum SOp {
        Add(Vec<u8>),
        Rem(Vec<u8>),
        Pop,
    }

    fn member() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (0i64..40).prop_map(|i| i.to_string().into_bytes()),
            (0u8..40).prop_map(|i| format!("m{i}").into_bytes()),
            prop::collection::vec(any::<u8>(), 0..24),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// A hash behaves as a HashMap and reports exactly the bytes it holds.
        #[test]
        fn hash_matches_a_map(ops in prop::collection::vec(prop_oneof![
            4 => (0u8..30, prop::collection::vec(any::<u8>(), 0..24)).prop_map(|(f, v)| HOp::Set(f, v)),
            1 => (0u8..30).prop_map(HOp::Del),
        ], 1..200)) {
            let lim = small_limits();
            let mut o = Object::new_hash();
            let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for op in ops {
                let h = o.as_hash_mut().unwrap();
                match op {
                    HOp::Set(f, v) => {
                        let f = format!("field{f}").into_bytes();
                        prop_assert_eq!(h.set(&f, &v, &lim), model.insert(f, v).is_none());
                    }
                    HOp::Del(f) => {
                        let f = format!("field{f}").into_bytes();
                        prop_assert_eq!(h.remove(&f), model.remove(&f).is_some());
                    }
                }
                prop_assert_eq!(o.len(), model.len());
                prop_assert_eq!(o.bytes(), recount(&o));
            }
            let h = o.as_hash().unwrap();
            let got: HashMap<Vec<u8>, Vec<u8>> = h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(&got, &model);
            for (f, v) in &model {
                prop_assert_eq!(h.get(f), Some(&v[..]));
            }
            let mut scanned = HashMap::new();
            let mut cursor = 0;
            loop {
                cursor = h.scan(cursor, 3, |f, v| { scanned.insert(f.to_vec(), v.to_vec()); });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(&scanned, &model);
        }

        /// A set behaves as a HashSet, keeps its intset sorted, and reports exactly the
        /// bytes it holds.
        #[test]
        fn set_matches_a_set(ops in prop::collection::vec(prop_oneof![
            4 => member().prop_map(SOp::Add),
            2 => member().prop_map(SOp::Rem),
            1 => Just(SOp::Pop),
        ], 1..200), seed in any::<u64>()) {
            let lim = small_limits();
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut o = Object::new_set();
            let mut model: HashSet<Vec<u8>> = HashSet::new();
            for op in ops {
                let s = o.as_set_mut().unwrap();
                match op {
                    SOp::Add(m) => prop_assert_eq!(s.insert(&m, &lim), model.insert(m)),
                    SOp::Rem(m) => prop_assert_eq!(s.remove(&m), model.remove(&m)),
                    SOp::Pop => match s.pop_random(&mut rng) {
                        Some(m) => prop_assert!(model.remove(&m)),
                        None => prop_assert!(model.is_empty()),
                    },
                }
                prop_assert_eq!(o.len(), model.len());
                prop_assert_eq!(o.bytes(), recount(&o));
                if let Object::Set(Set { enc: SetEnc::Ints(v) }) = &o {
                    prop_assert!(v.windows(2).all(|w| w[0] < w[1]));
                }
            }
            let s = o.as_set().unwrap();
            let got: HashSet<Vec<u8>> = s.iter().map(|m| m.into_owned()).collect();
            prop_assert_eq!(&got, &model);
            for m in &model {
                prop_assert!(s.contains(m));
            }
        }
    }
}
