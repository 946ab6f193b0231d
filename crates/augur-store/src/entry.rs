//! One stored key/value pair as a single heap allocation.
//!
//! Why one allocation: a cache's memory per key is dominated by per-entry overhead, not
//! payload. Redis spends ~185 B of `used_memory` on a 14-byte key with a 100-byte value
//! (dictEntry + robj + two sds + expires entry). Here the header, key and value share
//! one block, whose size for that case is 6 + 14 + 100 = 120 bytes (in database 0), in a
//! slot of exactly that size (`crate::slab`); in other databases the header has a db
//! byte more, 121 bytes.
//!
//! Layout (all integers little-endian, byte-addressed so no alignment is needed). Two
//! header formats: *short* (7 bytes, 6 in database 0) when the key and the value are each
//! at most 255 bytes, the common cache item, stored in an exact-size slab slot; *normal*
//! (12 bytes) otherwise, a jemalloc block. The format is chosen when a block is allocated
//! and never changes in place: a short entry whose value changes length gets a new block.
//!
//! ```text
//! 0   u32  atime      logical access time (the shard's clock, truncated; see `Shard`)
//! 4   u8   flags      HAS_TTL | LONG_KEY | type (2 bits: string, raw string, hash, set) |
//!                 policy (bits 4, 5 and 7: LRU, LHD, LHD explorer, S3-FIFO, LFU) | SHORT
//! 5   u8   db
//! short:  6 u8 key_len                                       (header: 7 bytes)
//!         in database 0 (flag SHORT_DB0): no db byte, 5 u8 key_len (header: 6 bytes)
//! normal: 6 u16 key_len (0xFFFF: the real length is the u32 in the LONG_KEY block),
//!         8 u32 value_len                                     (header: 12 bytes)
//! then [u64 expire_at_ms, u32 volatile_index]   only with HAS_TTL
//! (Most deployments use database 0 only; its short entries omit the db byte, 1 B/key.
//! MOVE of such an entry out of database 0 builds a new block.)
//!      [u32 key_len]                             only with LONG_KEY
//!      key bytes, then value bytes
//! ```
//!
//! A short block's slot is exactly its size, so a value of another length never fits in
//! place (an overwrite with a value of the same length does), and the value's length
//! need not be stored: it is the slot's size (`slab::slot_size`, a 2-byte table entry
//! per slab) less the header, TTL block and key. That byte was 1 B per key, 1 MB at
//! 1M keys.
//!
//! # Hashes and sets
//!
//! A hash or set entry has the same block; its type bits say so and its 8 value bytes
//! are the address of a boxed [`Object`] that the entry owns. The object is outside the
//! block because it grows and shrinks in place (a field added to a hash must not copy
//! the key's block), and because moving the entry to another shard or database
//! (RENAME, MOVE) then moves one pointer. What a key is charged is [`Entry::charge`]:
//! the block's usable size plus [`Object::bytes`] (0 for strings), so eviction, the
//! tenants' accounting and the profiler see a hash or set as one item of its real size.
//!
//! Ownership rules: [`Entry::free`] drops the object with the block (every removal path:
//! delete, overwrite, eviction, expiry, flush, tenant drop, shard drop). A copy made by
//! [`Entry::with_ttl`] *shares* the object pointer: the caller keeps exactly one of the
//! two and releases the other with [`Entry::free_block`]. [`Entry::take_object`] detaches
//! the object (the entry is then released with `free_block`).
//!
//! Entries are allocated straight from jemalloc or the slabs (not the global allocator)
//! so that the size charged to a key is what was really handed out (the slot's size,
//! or jemalloc's `malloc_usable_size`), whatever allocator the embedding binary or test
//! uses.

use crate::object::{Kind, Object};
use crate::slab;
use std::ptr::NonNull;

/// A normal (jemalloc) block's header bytes.
const HEADER: usize = 12;
/// A short (slab) block's header bytes.
const SHORT_HEADER: usize = 7;
/// A short block's header bytes in database 0 (no db byte).
const SHORT_HEADER_DB0: usize = 6;
/// The longest key and value a short block holds (one length byte each).
const SHORT_MAX: usize = u8::MAX as usize;
const FLAGS_AT: usize = 4;
const DB_AT: usize = 5;
const KEY_LEN_AT: usize = 6;
/// The value length, in a normal header (a short block's is its slot's size less the
/// rest).
const VALUE_LEN_AT: usize = 8;
/// The fewest bytes any entry is charged (a header with an empty key and value).
pub(crate) const SMALLEST_ENTRY: usize = SHORT_HEADER_DB0;
const TTL_BLOCK: usize = 12;
/// The largest short block: a header with a database byte, a TTL block, and key and
/// value of [`SHORT_MAX`] bytes (the slab classes end here).
pub(crate) const LARGEST_SHORT_ENTRY: usize = SHORT_HEADER + TTL_BLOCK + 2 * SHORT_MAX;
const LONG_KEY_BLOCK: usize = 4;
const HAS_TTL: u8 = 1;
const LONG_KEY: u8 = 2;
/// In a short block (which never has a long key) the LONG_KEY bit means: database 0,
/// and the header has no db byte.
const SHORT_DB0: u8 = LONG_KEY;
/// Type bits: 0 string, TYPE_HASH, TYPE_OTHER_OBJECT, RAW_STRING.
const TYPE_MASK: u8 = 0b1100;
const TYPE_HASH: u8 = 0b0100;
/// Any object but a hash (a set or a list): the object itself says which. The four
/// codes of the type field are all taken, so types beyond the first two share this
/// one and [`Entry::kind`] reads the object (type checks only, never eviction).
const TYPE_OTHER_OBJECT: u8 = 0b1000;
const PTR_LEN: usize = std::mem::size_of::<*mut Object>();
/// The block is in the short format, in a slab slot of exactly its size.
const SHORT: u8 = 0x40;
/// A string value last written by an in-place string modification (APPEND, SETRANGE,
/// SETBIT, BITFIELD, BITOP's result), which in Redis leaves a string in the `raw`
/// encoding whatever its length or content (t_string.c, bitops.c: dbUnshareStringValue);
/// a plain SET (tryObjectEncoding) clears it. Only OBJECT ENCODING reads it. It is the
/// type field's fourth code (a string's), which leaves bit 7 to the policy formats.
const RAW_STRING: u8 = 0b1100;
/// The policy bits say which policy's format the `atime` word is in: none (LRU's
/// 32-bit clock), [`LHD_FORMAT`], [`LHD_EXPLORER_FORMAT`], [`S3_FORMAT`] or
/// [`LFU_FORMAT`]; every format but LRU's keeps only [`LHD_CLOCK_MASK`]'s 24 clock bits.
const POLICY_BITS: u8 = 0xB0;
/// The `atime` word is in LHD's format (see `crate::lhd`): 24 bits of clock and two
/// 4-bit hit-age classes instead of the 32-bit clock. Set only by [`Entry::set_lhd`];
/// [`Entry::set_atime`] (an LRU touch) clears it, so either policy can read any entry.
const LHD_FORMAT: u8 = 0x10;
/// LHD's format with LHD's explorer mark (§3.5).
const LHD_EXPLORER_FORMAT: u8 = 0x30;
/// The `atime` word is in S3-FIFO's format (see `crate::s3fifo`): 24 bits of clock (the
/// time the entry entered its queue), 2 bits of hit count, the small-queue bit and, in
/// bits 27-31 ([`S3_HIT_CODE_SHIFT`]), the code of its last hit since it entered.
/// Set only by [`Entry::set_s3`]; an LRU touch or an LHD tag clears it.
const S3_FORMAT: u8 = 0x20;
/// The `atime` word is in Redis LFU's format (see `crate::lfu`): 24 bits of clock (the
/// last access) and, in bits 24-31, the 8-bit logarithmic access counter. Set only by
/// [`Entry::set_lfu`]; an LRU touch, an LHD tag or an S3-FIFO word clears it.
const LFU_FORMAT: u8 = 0x80;
/// Clock bits an LHD-format `atime` keeps.
pub(crate) const LHD_CLOCK_MASK: u32 = (1 << 24) - 1;

/// Accesses from the 24 clock bits of an LHD or S3-FIFO `atime` word to the 32-bit shard
/// clock `clock` (an age of 2^24 or more aliases to a younger one).
#[inline]
pub(crate) fn clock24_age(word: u32, clock: u32) -> u32 {
    clock.wrapping_sub(word) & LHD_CLOCK_MASK
}
/// Where an S3-FIFO word keeps its last hit since queue entry
/// (`augur_sim::s3fifo::hit_recency_code`, 5 bits).
pub(crate) const S3_HIT_CODE_SHIFT: u32 = 27;
/// Flag bits that describe the block's layout (recomputed whenever a block is rebuilt);
/// every other bit describes the value and is carried over by [`Entry::rekeyed`].
const LAYOUT_FLAGS: u8 = HAS_TTL | LONG_KEY | SHORT;
const SHORT_KEY_MAX: usize = 0xFFFE;

/// Largest value (and key) length an entry can hold.
pub const MAX_LEN: usize = u32::MAX as usize;

/// A handle to an entry's allocation. It is `Copy` because the index stores handles
/// as tagged words and hands out copies; ownership is the index's: exactly one index
/// position holds each live allocation, and [`Entry::free`] is called once, on removal.
/// Slices from [`Entry::key`] / [`Entry::value`] borrow from the allocation, not from the
/// handle, so their lifetime is chosen by the caller, who must not outlive the entry
/// (the shard ties them to its own borrow).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Entry(NonNull<u8>);

// SAFETY: an Entry is a uniquely owned heap block with no thread affinity.
unsafe impl Send for Entry {}

impl Entry {
    /// Allocates an entry. `key.len()` and `value.len()` must be <= [`MAX_LEN`].
    pub fn new(db: u8, key: &[u8], value: &[u8], ttl: Option<(u64, u32)>, atime: u32) -> Entry {
        Self::filled(db, key, value, value.len(), ttl, atime)
    }

    /// A new block for `key` and a value of `value_len` bytes that starts with `value`
    /// (zeros after it), with a TTL block if `ttl`: what [`Entry::new`],
    /// [`Entry::rekeyed`] and growing a short value share.
    fn filled(
        db: u8,
        key: &[u8],
        value: &[u8],
        value_len: usize,
        ttl: Option<(u64, u32)>,
        atime: u32,
    ) -> Entry {
        let e = Self::alloc_uninit(db, key.len(), value_len, ttl.is_some(), atime);
        if let Some((at, idx)) = ttl {
            e.set_ttl_fields(at, idx);
        }
        let keep = value.len().min(value_len);
        // SAFETY: alloc_uninit sized the block for the key and a `value_len`-byte value
        // at these offsets.
        unsafe {
            let dst = e.0.as_ptr().add(e.key_offset());
            std::ptr::copy_nonoverlapping(key.as_ptr(), dst, key.len());
            std::ptr::copy_nonoverlapping(value.as_ptr(), dst.add(key.len()), keep);
            if keep < value_len {
                std::ptr::write_bytes(dst.add(key.len() + keep), 0, value_len - keep);
            }
        }
        e
    }

    /// Allocates a hash, set or list entry owning `obj`.
    pub fn new_object(
        db: u8,
        key: &[u8],
        obj: Box<Object>,
        ttl: Option<(u64, u32)>,
        atime: u32,
    ) -> Entry {
        let tag = match obj.kind() {
            Kind::Hash => TYPE_HASH,
            _ => TYPE_OTHER_OBJECT,
        };
        let ptr = Box::into_raw(obj) as usize as u64;
        let e = Entry::new(db, key, &ptr.to_le_bytes(), ttl, atime);
        e.write_u8(FLAGS_AT, e.flags() | tag);
        e
    }

    /// What the key holds.
    #[inline]
    pub fn kind(&self) -> Kind {
        match self.flags() & TYPE_MASK {
            TYPE_HASH => Kind::Hash,
            TYPE_OTHER_OBJECT => self.object().map_or(Kind::Set, |o| o.kind()),
            _ => Kind::String,
        }
    }

    #[inline]
    pub fn is_object(&self) -> bool {
        matches!(self.flags() & TYPE_MASK, TYPE_HASH | TYPE_OTHER_OBJECT)
    }

    fn object_ptr(&self) -> Option<*mut Object> {
        if !self.is_object() {
            return None;
        }
        let v = self.value();
        let mut b = [0u8; 8];
        b[..PTR_LEN].copy_from_slice(&v[..PTR_LEN]);
        Some(u64::from_le_bytes(b) as usize as *mut Object)
    }

    /// The hash or set this entry owns. Like [`Entry::value`], the lifetime is the
    /// caller's to bound (the shard ties it to its own borrow, so there is never more
    /// than one live reference).
    pub fn object<'a>(self) -> Option<&'a mut Object> {
        // SAFETY: the pointer came from Box::into_raw in new_object and is owned by
        // this entry until free / take_object.
        self.object_ptr().map(|p| unsafe { &mut *p })
    }

    /// Whether `other` shares this entry's object (a `with_ttl` copy).
    pub fn shares_object_with(&self, other: &Entry) -> bool {
        self.object_ptr().is_some() && self.object_ptr() == other.object_ptr()
    }

    /// Detaches the object (the caller then owns it and must release the block with
    /// [`Entry::free_block`], not [`Entry::free`]).
    pub fn take_object(self) -> Option<Box<Object>> {
        // SAFETY: as `object`; ownership moves to the returned box.
        self.object_ptr().map(|p| unsafe { Box::from_raw(p) })
    }

    /// Bytes charged to this key: the block's usable size plus, for a hash or set,
    /// the object's heap bytes.
    #[inline]
    pub fn charge(&self) -> usize {
        self.usable_size() + self.object().map_or(0, |o| o.bytes())
    }

    /// Whether an entry of this shape gets a short block (in a slab).
    #[inline]
    fn is_short_shape(key_len: usize, value_len: usize) -> bool {
        key_len <= SHORT_MAX && value_len <= SHORT_MAX
    }

    /// Bytes requested from the allocator for an entry of this shape.
    pub fn block_size(db: u8, key_len: usize, value_len: usize, ttl: bool) -> usize {
        if Self::is_short_shape(key_len, value_len) {
            Self::short_block_size(db, key_len, value_len, ttl)
        } else {
            Self::normal_block_size(key_len, value_len, ttl)
        }
    }

    fn short_block_size(db: u8, key_len: usize, value_len: usize, ttl: bool) -> usize {
        Self::short_header_len(db) + if ttl { TTL_BLOCK } else { 0 } + key_len + value_len
    }

    #[inline]
    fn short_header_len(db: u8) -> usize {
        if db == 0 {
            SHORT_HEADER_DB0
        } else {
            SHORT_HEADER
        }
    }

    fn normal_block_size(key_len: usize, value_len: usize, ttl: bool) -> usize {
        HEADER
            + if ttl { TTL_BLOCK } else { 0 }
            + if key_len > SHORT_KEY_MAX {
                LONG_KEY_BLOCK
            } else {
                0
            }
            + key_len
            + value_len
    }

    /// Bytes an entry of this shape is charged (a string's [`Entry::usable_size`]): a
    /// short block's exact size, or a normal block's jemalloc size class.
    pub fn allocated_size(db: u8, key_len: usize, value_len: usize, ttl: bool) -> usize {
        if Self::is_short_shape(key_len, value_len) {
            return Self::short_block_size(db, key_len, value_len, ttl);
        }
        let block = Self::normal_block_size(key_len, value_len, ttl);
        // SAFETY: nallocx only computes the size class; flags 0 = default alignment.
        unsafe { tikv_jemalloc_sys::nallocx(block, 0) }
    }

    fn alloc_uninit(db: u8, key_len: usize, value_len: usize, ttl: bool, atime: u32) -> Entry {
        // A short shape gets a slab slot while the slab region has room (64 GB), else a
        // normal block.
        if let Some(slot) = Self::is_short_shape(key_len, value_len)
            .then(|| slab::alloc(Self::short_block_size(db, key_len, value_len, ttl)))
            .flatten()
        {
            let e = Entry(slot);
            e.write_u32(0, atime);
            let db0 = if db == 0 { SHORT_DB0 } else { 0 };
            e.write_u8(FLAGS_AT, SHORT | db0 | if ttl { HAS_TTL } else { 0 });
            if db != 0 {
                e.write_u8(DB_AT, db);
            }
            // The header's last byte, where `key_len` reads it.
            e.write_u8(Self::short_header_len(db) - 1, key_len as u8);
            debug_assert_eq!(e.value_len(), value_len);
            return e;
        }
        let long = key_len > SHORT_KEY_MAX;
        let size = Self::normal_block_size(key_len, value_len, ttl);
        // SAFETY: plain malloc; the result is checked for null below.
        let raw = unsafe { tikv_jemalloc_sys::malloc(size) } as *mut u8;
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(std::alloc::Layout::from_size_align(size, 1).unwrap());
        };
        let e = Entry(ptr);
        let flags = if ttl { HAS_TTL } else { 0 } | if long { LONG_KEY } else { 0 };
        debug_assert!(flags & !LAYOUT_FLAGS == 0);
        e.write_u32(0, atime);
        e.write_u8(FLAGS_AT, flags);
        e.write_u8(DB_AT, db);
        e.write_u16(KEY_LEN_AT, if long { 0xFFFF } else { key_len as u16 });
        e.write_u32(VALUE_LEN_AT, value_len as u32);
        if long {
            let off = HEADER + if ttl { TTL_BLOCK } else { 0 };
            e.write_u32(off, key_len as u32);
        }
        e
    }

    /// The allocation's address, for the index's tagged words.
    pub fn addr(self) -> u64 {
        self.0.as_ptr() as u64
    }

    /// Rebuilds a handle from [`Entry::addr`] (the index only passes addresses it got
    /// from live entries).
    pub fn from_addr(addr: u64) -> Entry {
        Entry(NonNull::new(addr as *mut u8).expect("index words hold non-null addresses"))
    }

    /// Releases the allocation and the hash or set it owns.
    pub fn free(self) {
        drop(self.take_object());
        self.free_block();
    }

    /// Releases the block only (its object was moved elsewhere or is shared with a
    /// `with_ttl` copy).
    pub fn free_block(self) {
        debug_assert_eq!(self.is_short(), slab::is_slot(self.0.as_ptr()));
        if self.is_short() {
            slab::free(self.0, self.usable_size());
            return;
        }
        // SAFETY: the block came from jemalloc's malloc and is owned by `self`.
        unsafe { tikv_jemalloc_sys::free(self.0.as_ptr() as *mut _) }
    }

    /// Bytes really reserved for this entry: a short block's slot is exactly its size;
    /// a normal block is jemalloc's.
    #[inline]
    pub fn usable_size(&self) -> usize {
        if self.is_short() {
            return slab::slot_size(self.0.as_ptr());
        }
        // SAFETY: the block came from jemalloc's malloc and is live.
        unsafe { tikv_jemalloc_sys::malloc_usable_size(self.0.as_ptr() as *const _) }
    }

    /// Bytes the header, TTL block, key and value take.
    #[inline]
    fn used_size(&self) -> usize {
        let (off, len) = self.value_span();
        off + len
    }

    /// Whether the block is in the short format (a slab slot).
    #[inline]
    fn is_short(&self) -> bool {
        self.flags() & SHORT != 0
    }

    /// Whether the block is a short one of database 0, whose header has no db byte.
    #[inline]
    fn is_short_db0(&self) -> bool {
        self.flags() & (SHORT | SHORT_DB0) == SHORT | SHORT_DB0
    }

    #[inline]
    fn flags(&self) -> u8 {
        self.read_u8(FLAGS_AT)
    }

    pub fn db(&self) -> u8 {
        if self.is_short_db0() {
            0
        } else {
            self.read_u8(DB_AT)
        }
    }

    pub fn atime(&self) -> u32 {
        self.read_u32(0)
    }

    /// An LRU touch: the 32-bit clock, dropping any LHD or S3-FIFO tag.
    #[inline]
    pub fn set_atime(&self, t: u32) {
        self.write_u32(0, t);
        let f = self.flags();
        if f & POLICY_BITS != 0 {
            self.write_u8(FLAGS_AT, f & !POLICY_BITS);
        }
    }

    /// Accesses since the entry was last touched, at 32-bit clock `clock`, whichever
    /// format its `atime` is in (an LHD tag keeps 24 clock bits: older looks younger).
    /// An S3-FIFO entry was last touched when it entered its queue or at its last hit
    /// since, which its hit code gives to within a factor of two of the gap, never
    /// later than the truth (`augur_sim::s3fifo::hit_recency_credit`): what LRU, LHD and
    /// OBJECT IDLETIME read after a switch from S3-FIFO.
    #[inline]
    pub fn idle(&self, clock: u32) -> u32 {
        let w = self.atime();
        let format = self.flags() & POLICY_BITS;
        if format == 0 {
            return clock.wrapping_sub(w);
        }
        let d = clock24_age(w, clock);
        if format != S3_FORMAT {
            return d;
        }
        let credit = augur_sim::s3fifo::hit_recency_credit((w >> S3_HIT_CODE_SHIFT) as u8);
        d.saturating_sub(credit as u32)
    }

    /// Accesses since an S3-FIFO entry entered its queue (the queues' order); for an
    /// entry in another format, [`Entry::idle`] (read as entering when last touched).
    #[inline]
    pub fn queue_age(&self, clock: u32) -> u32 {
        if self.flags() & POLICY_BITS == S3_FORMAT {
            clock24_age(self.atime(), clock)
        } else {
            self.idle(clock)
        }
    }

    /// The LHD tag word and explorer mark, if `atime` is in LHD's format.
    #[inline]
    pub fn lhd(&self) -> Option<(u32, bool)> {
        let format = self.flags() & POLICY_BITS;
        (format & LHD_FORMAT != 0).then(|| (self.atime(), format == LHD_EXPLORER_FORMAT))
    }

    #[inline]
    pub fn is_lhd_explorer(&self) -> bool {
        self.flags() & POLICY_BITS == LHD_EXPLORER_FORMAT
    }

    /// Stores an LHD tag word (see `crate::lhd`).
    #[inline]
    pub fn set_lhd(&self, word: u32, explorer: bool) {
        let format = if explorer {
            LHD_EXPLORER_FORMAT
        } else {
            LHD_FORMAT
        };
        self.set_word(word, format);
    }

    /// The `atime` word if it is in policy format `format` (one code of [`POLICY_BITS`]).
    #[inline]
    fn word_in(&self, format: u8) -> Option<u32> {
        (self.flags() & POLICY_BITS == format).then(|| self.atime())
    }

    /// Stores `word` as the `atime` word in policy format `format`.
    #[inline]
    fn set_word(&self, word: u32, format: u8) {
        self.write_u32(0, word);
        let f = self.flags() & !POLICY_BITS;
        self.write_u8(FLAGS_AT, f | format);
    }

    /// The S3-FIFO word (24 clock bits, hit count in bits 24-25, small-queue bit 26, hit
    /// code in bits 27-31), if `atime` is in S3-FIFO's format.
    #[inline]
    pub fn s3(&self) -> Option<u32> {
        self.word_in(S3_FORMAT)
    }

    /// Stores an S3-FIFO word (see `crate::s3fifo`).
    #[inline]
    pub fn set_s3(&self, word: u32) {
        self.set_word(word, S3_FORMAT);
    }

    /// The LFU word (24 clock bits of the last access, the counter in bits 24-31), if
    /// `atime` is in LFU's format.
    #[inline]
    pub fn lfu(&self) -> Option<u32> {
        self.word_in(LFU_FORMAT)
    }

    /// Stores an LFU word (see `crate::lfu`).
    #[inline]
    pub fn set_lfu(&self, word: u32) {
        self.set_word(word, LFU_FORMAT);
    }

    /// Gives this entry `other`'s recency (its `atime` word in any format).
    pub fn copy_recency_from(&self, other: &Entry) {
        self.set_word(other.atime(), other.flags() & POLICY_BITS);
    }

    /// The entry's size for ranking: header, key and value bytes plus a hash's or set's
    /// object bytes, without asking the allocator (cheaper than [`Entry::charge`]).
    #[inline]
    pub fn rank_size(&self) -> u64 {
        self.used_size() as u64 + self.object().map_or(0, |o| o.bytes()) as u64
    }

    pub fn has_ttl(&self) -> bool {
        self.flags() & HAS_TTL != 0
    }

    /// Expiry time in Unix ms, if the entry has a TTL.
    pub fn expire_at(&self) -> Option<u64> {
        self.has_ttl().then(|| self.read_u64(self.header_len()))
    }

    /// Position of this entry in its shard's volatile (has-TTL) list.
    pub fn volatile_index(&self) -> u32 {
        debug_assert!(self.has_ttl());
        self.read_u32(self.header_len() + 8)
    }

    pub fn set_volatile_index(&self, idx: u32) {
        debug_assert!(self.has_ttl());
        self.write_u32(self.header_len() + 8, idx)
    }

    /// Updates the expiry time of an entry that already has a TTL block.
    pub fn set_expire_at(&self, at_ms: u64) {
        debug_assert!(self.has_ttl());
        self.write_u64(self.header_len(), at_ms)
    }

    fn set_ttl_fields(&self, at_ms: u64, idx: u32) {
        let h = self.header_len();
        self.write_u64(h, at_ms);
        self.write_u32(h + 8, idx);
    }

    #[inline]
    fn header_len(&self) -> usize {
        let f = self.flags();
        if f & SHORT == 0 {
            HEADER
        } else if f & SHORT_DB0 != 0 {
            SHORT_HEADER_DB0
        } else {
            SHORT_HEADER
        }
    }

    #[inline]
    fn key_len(&self) -> usize {
        if self.is_short() {
            // The header's last byte.
            return self.read_u8(self.header_len() - 1) as usize;
        }
        let short = self.read_u16(KEY_LEN_AT);
        if short == 0xFFFF && self.flags() & LONG_KEY != 0 {
            self.read_u32(HEADER + if self.has_ttl() { TTL_BLOCK } else { 0 }) as usize
        } else {
            short as usize
        }
    }

    #[inline]
    fn key_offset(&self) -> usize {
        let f = self.flags();
        // (In a short block the LONG_KEY bit is SHORT_DB0: no long-key block.)
        self.header_len()
            + if f & HAS_TTL != 0 { TTL_BLOCK } else { 0 }
            + if f & (LONG_KEY | SHORT) == LONG_KEY {
                LONG_KEY_BLOCK
            } else {
                0
            }
    }

    #[inline]
    pub fn value_len(&self) -> usize {
        self.value_span().1
    }

    /// Where the value starts: after the header, TTL and long-key blocks and the key.
    #[inline]
    fn value_offset(&self) -> usize {
        self.key_offset() + self.key_len()
    }

    /// The value's offset and length, the offset computed once (a short value's length
    /// is its slot's size less that offset).
    #[inline]
    fn value_span(&self) -> (usize, usize) {
        let off = self.value_offset();
        let len = if self.is_short() {
            slab::slot_size(self.0.as_ptr()) - off
        } else {
            self.read_u32(VALUE_LEN_AT) as usize
        };
        (off, len)
    }

    /// Records a new value length (the block holds it: checked by the caller).
    fn set_value_len(&self, len: usize) {
        if self.is_short() {
            // Its slot's size records it: only an overwrite of the same length stays in
            // a short block.
            debug_assert_eq!(len, self.value_len());
        } else {
            self.write_u32(VALUE_LEN_AT, len as u32)
        }
    }

    pub fn key<'a>(self) -> &'a [u8] {
        // SAFETY: key_offset..+key_len lies inside the block, written at allocation.
        unsafe {
            std::slice::from_raw_parts(self.0.as_ptr().add(self.key_offset()), self.key_len())
        }
    }

    pub fn value<'a>(self) -> &'a [u8] {
        let (off, len) = self.value_span();
        // SAFETY: the value follows the key inside the block.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(off), len) }
    }

    /// Whether a value of `len` bytes fits this block in place (same header layout): in
    /// a short block only a value of the same length (its slot is exactly its size).
    pub fn fits_in_place(&self, len: usize) -> bool {
        if self.is_short() {
            return len == self.value_len();
        }
        self.value_offset() + len <= self.usable_size()
    }

    /// Whether a value of `len` bytes should overwrite this block in place: it fits and
    /// a fresh block for it would come from the same jemalloc size class. A smaller
    /// value in a larger class gets a new block, so the memory charged for the key
    /// shrinks with it (keeping the old block would leave `SET k <100 KB>; SET k x`
    /// charging 100 KB for one byte).
    pub fn reuse_for(&self, len: usize) -> bool {
        // A hash or set becoming a string gets a fresh block (its object is freed).
        if self.is_object() || !self.fits_in_place(len) {
            return false;
        }
        if self.is_short() {
            return true;
        }
        if Self::is_short_shape(self.key_len(), len) {
            // A fresh block would be a short one.
            return false;
        }
        let block = self.value_offset() + len;
        // SAFETY: nallocx only computes the size class; flags 0 = default alignment.
        let class = unsafe { tikv_jemalloc_sys::nallocx(block, 0) };
        class == self.usable_size()
    }

    /// Whether the value is a string in Redis's `raw` encoding (see [`RAW_STRING`]).
    pub fn is_raw(&self) -> bool {
        self.flags() & TYPE_MASK == RAW_STRING
    }

    /// Marks a string value as in `raw` encoding or not; a hash's or set's type stays.
    pub fn set_raw(&self, raw: bool) {
        let f = self.flags();
        if self.is_object() {
            return;
        }
        let f = f & !TYPE_MASK;
        self.write_u8(FLAGS_AT, if raw { f | RAW_STRING } else { f });
    }

    /// Whether [`Entry::set_db`] can move this block to database `db` in place: all but
    /// a short block of database 0 (which has no db byte) going to another database.
    pub fn can_set_db(&self, db: u8) -> bool {
        db == 0 || !self.is_short_db0()
    }

    /// Moves the entry to database `db` (MOVE: same key, same block); only where
    /// [`Entry::can_set_db`] allows it.
    pub fn set_db(&self, db: u8) {
        debug_assert!(self.can_set_db(db));
        if !self.is_short_db0() {
            self.write_u8(DB_AT, db)
        }
    }

    /// A new block holding this entry's value (and value flags, e.g. a type tag) under
    /// another key and/or database, with (`Some`) or without a TTL block: RENAME, COPY.
    /// `self` stays valid; the caller frees it or keeps it.
    pub fn rekeyed(&self, db: u8, key: &[u8], ttl: Option<(u64, u32)>) -> Entry {
        self.copied(db, key, self.value_len(), ttl)
    }

    /// [`Entry::rekeyed`] with a value of `value_len` bytes (this value's first bytes,
    /// then zeros).
    fn copied(&self, db: u8, key: &[u8], value_len: usize, ttl: Option<(u64, u32)>) -> Entry {
        let e = Self::filled(db, key, self.value(), value_len, ttl, self.atime());
        e.write_u8(FLAGS_AT, e.flags() | (self.flags() & !LAYOUT_FLAGS));
        e
    }

    /// The value's bytes, writable (in-place string updates: SETBIT, SETRANGE...).
    pub fn value_mut<'a>(self) -> &'a mut [u8] {
        let (off, len) = self.value_span();
        // SAFETY: the value follows the key inside the block; the shard hands out one
        // mutable view at a time, under its lock.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr().add(off), len) }
    }

    /// Grows the value to `len` bytes (>= the current length), the new bytes zeroed: in
    /// place when the block already has room, else by `realloc`, which for large blocks
    /// can often extend the mapping without copying. Returns the entry's (possibly new)
    /// handle; the old handle must not be used afterwards.
    pub fn grow_value(self, len: usize) -> Entry {
        let old = self.value_len();
        debug_assert!(len >= old && len <= MAX_LEN);
        if self.is_short() && len != old {
            return self.resized(len);
        }
        let off = self.value_offset();
        let e = if off + len <= self.usable_size() {
            self
        } else {
            let size = off + len;
            // SAFETY: the block came from jemalloc's malloc; realloc keeps its contents.
            let raw = unsafe { tikv_jemalloc_sys::realloc(self.0.as_ptr() as *mut _, size) };
            let Some(ptr) = NonNull::new(raw as *mut u8) else {
                std::alloc::handle_alloc_error(
                    std::alloc::Layout::from_size_align(size, 1).unwrap(),
                );
            };
            Entry(ptr)
        };
        // SAFETY: the block holds off + len bytes (checked or just reallocated).
        unsafe { std::ptr::write_bytes(e.0.as_ptr().add(off + old), 0, len - old) };
        e.set_value_len(len);
        e
    }

    /// This string entry in a new block for a value of `len` bytes (the block's format
    /// chosen for the new shape), the value's first bytes kept and any new ones zeroed;
    /// the old block is freed.
    fn resized(self, len: usize) -> Entry {
        debug_assert!(!self.is_object());
        let ttl = self.expire_at().map(|at| (at, self.volatile_index()));
        let e = self.copied(self.db(), self.key(), len, ttl);
        self.free_block();
        e
    }

    /// Overwrites the value in place; the caller checked [`Entry::fits_in_place`].
    pub fn overwrite_value(&self, value: &[u8]) {
        debug_assert!(self.fits_in_place(value.len()));
        let off = self.value_offset();
        // SAFETY: fits_in_place guarantees the block holds off + value.len() bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(value.as_ptr(), self.0.as_ptr().add(off), value.len())
        };
        self.set_value_len(value.len());
    }

    /// A copy of this entry with a TTL block (`Some`) or without one (`None`). The caller
    /// frees `self` afterwards (or keeps it: both are valid, independent blocks). A hash
    /// or set copy shares the object pointer: release the other block with
    /// [`Entry::free_block`].
    pub fn with_ttl(&self, ttl: Option<(u64, u32)>) -> Entry {
        self.rekeyed(self.db(), self.key(), ttl)
    }

    /// Whether [`Entry::relocated`] would free space (`crate::defrag`): the block sits in
    /// a sparse slab (of `crate::slab`'s, or of jemalloc's size class).
    pub fn worth_moving(&self) -> bool {
        if self.is_short() {
            slab::worth_moving(self.0.as_ptr(), self.used_size())
        } else {
            crate::defrag::worth_moving(self.0.as_ptr())
        }
    }

    /// Active defragmentation (`crate::defrag`): the same entry in a fresh allocation
    /// taken past the thread cache (so it lands in the fullest slab of its size class
    /// with room), the old block released past it too (so its sparse slab empties).
    /// A hash's or set's object moves with the block (it holds the pointer). `None`
    /// (and `self` untouched) if the allocation fails.
    pub fn relocated(self) -> Option<Entry> {
        if self.is_short() {
            let len = self.used_size();
            let fresh = slab::alloc_packed(len)?;
            // SAFETY: both slots are `len` bytes and distinct (the old one is live).
            unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr(), fresh.as_ptr(), len) };
            slab::free_to_slab(self.0, len);
            return Some(Entry(fresh));
        }
        let len = Self::normal_block_size(self.key_len(), self.value_len(), self.has_ttl());
        // SAFETY: mallocx with a non-zero size; checked for null below.
        let raw = unsafe { tikv_jemalloc_sys::mallocx(len, tikv_jemalloc_sys::MALLOCX_TCACHE_NONE) }
            as *mut u8;
        let fresh = NonNull::new(raw)?;
        // SAFETY: both blocks hold at least `len` bytes and do not overlap; the old
        // block came from jemalloc and is owned by `self`, released once here.
        unsafe {
            std::ptr::copy_nonoverlapping(self.0.as_ptr(), fresh.as_ptr(), len);
            tikv_jemalloc_sys::dallocx(
                self.0.as_ptr() as *mut _,
                tikv_jemalloc_sys::MALLOCX_TCACHE_NONE,
            );
        }
        Some(Entry(fresh))
    }

    fn read_u8(&self, off: usize) -> u8 {
        // SAFETY: all offsets used are inside the header written at allocation.
        unsafe { *self.0.as_ptr().add(off) }
    }
    fn write_u8(&self, off: usize, v: u8) {
        // SAFETY: as read_u8.
        unsafe { *self.0.as_ptr().add(off) = v }
    }
    fn read_u16(&self, off: usize) -> u16 {
        // SAFETY: as read_u8; unaligned read.
        u16::from_le(unsafe { (self.0.as_ptr().add(off) as *const u16).read_unaligned() })
    }
    fn write_u16(&self, off: usize, v: u16) {
        // SAFETY: as read_u8; unaligned write.
        unsafe { (self.0.as_ptr().add(off) as *mut u16).write_unaligned(v.to_le()) }
    }
    fn read_u32(&self, off: usize) -> u32 {
        // SAFETY: as read_u8; unaligned read.
        u32::from_le(unsafe { (self.0.as_ptr().add(off) as *const u32).read_unaligned() })
    }
    fn write_u32(&self, off: usize, v: u32) {
        // SAFETY: as read_u8; unaligned write.
        unsafe { (self.0.as_ptr().add(off) as *mut u32).write_unaligned(v.to_le()) }
    }
    fn read_u64(&self, off: usize) -> u64 {
        // SAFETY: as read_u8; unaligned read.
        u64::from_le(unsafe { (self.0.as_ptr().add(off) as *const u64).read_unaligned() })
    }
    fn write_u64(&self, off: usize, v: u64) {
        // SAFETY: as read_u8; unaligned write.
        unsafe { (self.0.as_ptr().add(off) as *mut u64).write_unaligned(v.to_le()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_14_byte_key_and_100_byte_value_take_a_121_byte_slot() {
        let e = Entry::new(3, b"key:0000000001", &[7u8; 100], None, 42);
        assert_eq!(e.usable_size(), 121);
        assert_eq!(Entry::allocated_size(3, 14, 100, false), 121);
        assert_eq!(e.db(), 3);
        assert_eq!(e.key(), b"key:0000000001");
        assert_eq!(e.value(), &[7u8; 100][..]);
        assert_eq!(e.atime(), 42);
        assert_eq!(e.expire_at(), None);
        e.free();
    }

    #[test]
    fn ttl_and_long_key_blocks_round_trip() {
        let key = vec![b'k'; 70_000];
        let e = Entry::new(0, &key, b"v", Some((1_700_000_000_000, 9)), 1);
        assert_eq!(e.key(), &key[..]);
        assert_eq!(e.value(), b"v");
        assert_eq!(e.expire_at(), Some(1_700_000_000_000));
        assert_eq!(e.volatile_index(), 9);
        e.set_volatile_index(11);
        e.set_expire_at(5);
        assert_eq!((e.expire_at(), e.volatile_index()), (Some(5), 11));
        let plain = e.with_ttl(None);
        e.free();
        assert_eq!(plain.key(), &key[..]);
        assert_eq!(plain.expire_at(), None);
        plain.free();
    }

    #[test]
    fn an_object_entry_owns_its_object_and_a_ttl_copy_shares_it() {
        let mut o = Object::new_set();
        o.as_set_mut()
            .unwrap()
            .insert(b"a", &crate::object::Limits::default());
        let bytes = o.bytes();
        let e = Entry::new_object(1, b"k", Box::new(o), None, 5);
        assert_eq!(e.kind(), Kind::Set);
        assert_eq!(e.key(), b"k");
        assert_eq!(e.charge(), e.usable_size() + bytes);
        assert!(!e.reuse_for(1));
        let t = e.with_ttl(Some((10, 0)));
        assert_eq!(t.kind(), Kind::Set);
        assert!(t.shares_object_with(&e));
        e.free_block();
        assert!(t.object().unwrap().as_set().unwrap().contains(b"a"));
        let o = t.take_object().unwrap();
        t.free_block();
        assert_eq!(o.len(), 1);
        let s = Entry::new(0, b"s", b"v", None, 0);
        assert_eq!(s.kind(), Kind::String);
        assert!(s.object().is_none());
        assert_eq!(s.charge(), s.usable_size());
        s.free();
    }

    /// In database 0 a short header has no db byte (6 bytes): 120 bytes for the same
    /// item; a MOVE out of database 0 cannot happen in place, one into it can.
    #[test]
    fn database_0_short_entries_take_a_6_byte_header() {
        let e = Entry::new(0, b"key:0000000001", &[7u8; 100], Some((99, 4)), 42);
        assert_eq!(e.usable_size(), 120 + TTL_BLOCK);
        assert_eq!(Entry::allocated_size(0, 14, 100, true), 120 + TTL_BLOCK);
        assert_eq!(
            (e.db(), e.key(), e.value()),
            (0, &b"key:0000000001"[..], &[7u8; 100][..])
        );
        assert_eq!(
            (e.expire_at(), e.volatile_index(), e.atime()),
            (Some(99), 4, 42)
        );
        assert!(e.can_set_db(0) && !e.can_set_db(1));
        let moved = e.rekeyed(5, e.key(), Some((99, 4)));
        e.free_block();
        assert_eq!(moved.usable_size(), 121 + TTL_BLOCK);
        assert_eq!(
            (moved.db(), moved.key(), moved.value()),
            (5, &b"key:0000000001"[..], &[7u8; 100][..])
        );
        assert!(moved.can_set_db(0) && moved.can_set_db(9));
        moved.set_db(0);
        assert_eq!((moved.db(), moved.key()), (0, &b"key:0000000001"[..]));
        moved.free();
    }

    #[test]
    fn overwrite_in_place_only_when_it_fits() {
        // A normal (jemalloc) block: any value within its size class.
        let key = [b'k'; 300];
        let e = Entry::new(0, &key, b"0123456789", None, 0);
        assert!(e.fits_in_place(3));
        e.overwrite_value(b"abc");
        assert_eq!(e.value(), b"abc");
        assert!(!e.fits_in_place(1000));
        e.free();
        // A short (slab) block is exactly its size: only a value of the same length.
        let e = Entry::new(0, b"k", b"0123456789", None, 0);
        assert_eq!(e.usable_size(), 6 + 1 + 10);
        assert!(!e.fits_in_place(3) && !e.fits_in_place(11) && e.fits_in_place(10));
        assert!(e.reuse_for(10) && !e.reuse_for(9));
        e.overwrite_value(b"abcdefghij");
        assert_eq!((e.key(), e.value()), (&b"k"[..], &b"abcdefghij"[..]));
        e.free();
    }

    #[test]
    fn the_format_follows_the_shape_across_growth_and_copies() {
        // Short while key and value are at most 255 bytes; growing past that moves the
        // value into a normal block, with its TTL, flags, recency and key.
        let e = Entry::new(7, b"key", &[1u8; 250], Some((99, 4)), 0);
        e.set_raw(true);
        e.set_lhd(0x00AB_CDEF, true);
        assert_eq!(e.usable_size(), 7 + 12 + 3 + 250);
        let g = e.grow_value(255);
        assert_eq!(g.usable_size(), 7 + 12 + 3 + 255);
        let g = g.grow_value(256);
        assert!(g.usable_size() >= 12 + 12 + 3 + 256);
        assert_eq!((g.db(), g.key(), g.value_len()), (7, &b"key"[..], 256));
        assert!(g.value()[..250].iter().all(|&b| b == 1));
        assert!(g.value()[250..].iter().all(|&b| b == 0));
        assert_eq!((g.expire_at(), g.volatile_index()), (Some(99), 4));
        assert!(g.is_raw() && g.is_lhd_explorer());
        assert_eq!(g.lhd(), Some((0x00AB_CDEF, true)));
        // A copy under a short key with a short value is short again.
        let c = g.rekeyed(1, b"k2", None);
        assert!(c.usable_size() >= 12 + 2 + 256);
        g.free();
        let s = Entry::new(0, b"s", b"v", None, 0);
        s.set_s3(0x1234_5678);
        assert_eq!(
            (s.s3(), s.lhd(), s.is_lhd_explorer()),
            (Some(0x1234_5678), None, false)
        );
        s.set_lfu(0xFF12_3456);
        assert_eq!((s.lfu(), s.s3(), s.lhd()), (Some(0xFF12_3456), None, None));
        // An LFU word's clock is 24 bits, as LHD's: the counter is not part of its age.
        assert_eq!(s.idle(0x0012_3460), 10);
        assert!(!s.is_raw() && !s.is_object());
        s.set_raw(true);
        assert!(s.is_raw() && s.lfu().is_some() && s.kind() == Kind::String);
        s.set_raw(false);
        s.set_atime(5);
        assert_eq!((s.lfu(), s.s3(), s.lhd(), s.atime()), (None, None, None, 5));
        let moved = s.relocated().unwrap();
        assert_eq!(
            (moved.key(), moved.value(), moved.atime()),
            (&b"s"[..], &b"v"[..], 5)
        );
        moved.free();
        c.free();
    }

    #[test]
    fn rekeyed_keeps_value_flags_and_drops_layout_flags() {
        let e = Entry::new(1, b"a", b"value", Some((77, 3)), 9);
        e.set_raw(true);
        let long = vec![b'x'; 70_000];
        let r = e.rekeyed(4, &long, None);
        assert_eq!((r.db(), r.key(), r.value()), (4, &long[..], &b"value"[..]));
        assert!(r.is_raw() && !r.has_ttl());
        assert_eq!(r.atime(), 9);
        let back = r.rekeyed(2, b"b", Some((5, 0)));
        assert_eq!(
            (back.key(), back.expire_at(), back.is_raw()),
            (&b"b"[..], Some(5), true)
        );
        back.set_raw(false);
        assert!(!back.is_raw() && back.has_ttl());
        for x in [e, r, back] {
            x.free();
        }
    }

    #[test]
    fn grow_value_zero_fills_in_place_or_by_realloc() {
        let e = Entry::new(0, b"k", b"ab", Some((1, 0)), 0);
        let e = e.grow_value(5);
        assert_eq!(e.value(), b"ab\0\0\0");
        let e = e.grow_value(100_000);
        assert_eq!(&e.value()[..2], b"ab");
        assert!(e.value()[2..].iter().all(|&b| b == 0));
        assert_eq!((e.key(), e.expire_at()), (&b"k"[..], Some(1)));
        e.value_mut()[99_999] = 7;
        assert_eq!(e.value()[99_999], 7);
        e.free();
    }
}

#[cfg(test)]
mod format_props {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Step {
        /// Grow the value by this many zero bytes (APPEND, SETRANGE).
        Grow(usize),
        /// Overwrite with a value of this length if the block can be reused (SET).
        Overwrite(usize, u8),
        /// Copy under a new key of this length, with or without a TTL (RENAME).
        Rekey(usize, Option<u64>),
        /// Move to a fresh block (active defragmentation).
        Relocate,
        Tag(u32),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0usize..300).prop_map(Step::Grow),
            (0usize..300, any::<u8>()).prop_map(|(n, b)| Step::Overwrite(n, b)),
            (0usize..300, prop::option::of(1u64..1 << 40)).prop_map(|(n, t)| Step::Rekey(n, t)),
            Just(Step::Relocate),
            any::<u32>().prop_map(Step::Tag),
        ]
    }

    proptest! {
        /// Whatever the sequence, an entry holds the key, value, TTL, database, raw
        /// flag and recency it was given; its format is short exactly when key and
        /// value fit a byte each (slab slots are then exactly the block), and what it
        /// is charged is the size of what holds it.
        #[test]
        fn entries_keep_their_contents_across_formats(
            key_len in 0usize..300,
            value in prop::collection::vec(any::<u8>(), 0..300),
            ttl in prop::option::of(1u64..1 << 40),
            db in any::<u8>(),
            steps in prop::collection::vec(step(), 0..12),
        ) {
            let mut key = vec![b'k'; key_len];
            let mut value = value;
            let mut ttl = ttl;
            let mut e = Entry::new(db, &key, &value, ttl.map(|t| (t, 3)), 77);
            e.set_raw(true);
            let mut recency = 77u32;
            for s in steps {
                match s {
                    Step::Grow(n) => {
                        let len = value.len() + n;
                        e = e.grow_value(len);
                        value.resize(len, 0);
                    }
                    Step::Overwrite(n, b) => {
                        if e.reuse_for(n) {
                            let v = vec![b; n];
                            e.overwrite_value(&v);
                            value = v;
                        }
                    }
                    Step::Rekey(n, t) => {
                        let k = vec![b'r'; n];
                        let r = e.rekeyed(db, &k, t.map(|t| (t, 3)));
                        e.free();
                        e = r;
                        key = k;
                        ttl = t;
                    }
                    Step::Relocate => e = e.relocated().unwrap(),
                    Step::Tag(w) => {
                        e.set_lhd(w & LHD_CLOCK_MASK, w & 1 == 1);
                        e.set_lfu(w);
                        prop_assert_eq!(e.lfu(), Some(w));
                        prop_assert!(e.is_raw());
                        e.set_atime(w);
                        recency = w;
                    }
                }
                prop_assert_eq!(e.key(), &key[..]);
                prop_assert_eq!(e.value(), &value[..]);
                prop_assert_eq!(e.expire_at(), ttl);
                if ttl.is_some() {
                    prop_assert_eq!(e.volatile_index(), 3);
                }
                prop_assert_eq!(e.db(), db);
                prop_assert!(e.is_raw());
                prop_assert_eq!(e.atime(), recency);
                let short = key.len() <= 255 && value.len() <= 255;
                prop_assert_eq!(e.is_short(), short);
                prop_assert_eq!(e.is_short(), slab::is_slot(e.0.as_ptr()));
                let used = e.used_size();
                if short {
                    prop_assert_eq!(e.usable_size(), used);
                    prop_assert_eq!(Entry::allocated_size(db, key.len(), value.len(), ttl.is_some()), used);
                } else {
                    prop_assert!(e.usable_size() >= used);
                }
                prop_assert_eq!(used, Entry::block_size(db, key.len(), value.len(), ttl.is_some()));
            }
            e.free();
        }
    }
}
