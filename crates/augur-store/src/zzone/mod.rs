//! The Z-zone of zExpander (Wu et al., "zExpander: a Key-Value Cache with both High
//! Performance and Fewer Misses", EuroSys 2016, §3.1-3.2): items the hot, uncompressed
//! N-zone (the shard's table) evicts are packed into small blocks compressed as a whole,
//! so the same memory holds more of the long tail. This module is the zone alone; the
//! shard decides what enters it, serves GET misses from it and promotes out of it.
//!
//! # Organisation (§3.1)
//!
//! - An item's identity is `(db, key)`, hashed with a fixed-seed aHash ([`ZZone::new`]
//!   uses a built-in seed, [`ZZone::with_seed`] a caller's, e.g. a random one per
//!   process against hash flooding).
//! - Blocks ([`block`]) hold up to `block_capacity` raw bytes of records in hash order
//!   with an index of up to eight offsets, and are stored compressed (LZ4 by default,
//!   zstd as an option). An item larger than half a block is compressed on its own and
//!   the block keeps a pointer (a large-item id) in its place.
//! - Blocks are the leaves of a hashed binary trie ([`trie`]): a leaf holds the items
//!   whose hash starts with its prefix; an overloaded leaf splits in two on the next bit.
//!   A leaf is found in O(1) through the linearised complete-tree pointer array with two
//!   levels of segments (Fig. 4). Not in the paper: a leaf rewritten under a quarter
//!   block merges with its sibling leaf when both fit in half a block, so a shrinking
//!   zone gives back its per-leaf overhead; the split depth is capped at
//!   log2(leaves) + 8 (an over-full leaf at the cap just grows), so keys crafted against
//!   a known seed cannot blow up the pointer array.
//! - Each block has a 16-byte Content Filter and a 16-byte Access Filter ([`filter`]) and
//!   §3.3.2's two recent-access records (4-byte hash tag + 4-byte time), from which
//!   [`ZZone::get_reuse`] reports an item's re-use time for promotion decisions.
//!   A block larger than the paper's 2 KB gets one 16-byte Content Filter per 2 KB of
//!   capacity (a blocked Bloom filter: 8 bits of the key's second hash pick one), so
//!   each filter holds about as many items as at 2 KB and keeps its false-positive rate
//!   (a single 16-byte filter let 4.8 % through at 4 KB, against 0.5 % at 2 KB).
//!
//! # Replacement (§3.2)
//!
//! [`ZZone::evict_to`] sweeps the blocks circularly. At each block with items it evicts
//! a random half (rounded up) of the items the Access Filter does not record, then clears
//! the filter and moves on; a block whose items are all recorded is skipped (and, its
//! filter cleared, is a candidate next time round). Expired items met on the way are
//! dropped too: [`ZZone::sweep_to`] reports each removal with a [`Gone`] reason;
//! [`ZZone::evict_to`] reports both kinds to its one callback (an expired item is one
//! whose `meta.expire_at_ms <= ` the zone's clock, the largest `now_ms` it has been
//! given, see [`ZZone::clock_ms`]).
//!
//! # Dictionary (not in the paper)
//!
//! A 2 KB block holds some fifteen unrelated records (hashed order), so the field names
//! and common values they share with the rest of the zone are mostly not in the block
//! itself: LZ4 compresses the iso-codes records 2.0x in such blocks. With
//! `dict_size > 0`, once the zone's frames hold 16 dictionaries' worth, it samples whole
//! records from random blocks into a raw-content dictionary that LZ4 and zstd use as the
//! window before every block they write (measured on those records, key + value in
//! 2 KB blocks: LZ4 2.0x -> 2.4x with 4 KB, 2.45x with 8 KB; zstd-1 2.8x -> 3.2x; the
//! `zzone_bench` example: LZ4 97 -> 86 B/item with 4 KB, all overheads included, at
//! ~30 % more CPU per insert with lz4_flex, which indexed the dictionary for every block
//! it wrote; liblz4 indexes it once, [`lz4c`]). Under LZ4 a dictionary also holds
//! liblz4's 16 KB prepared state (charged). Frames name their dictionary, so old frames stay
//! readable: after the zone has written eight times its content since the last training
//! a new dictionary is sampled (the data may have drifted), and [`ZZone::expire_cycle`]'s
//! hand re-encodes blocks still on the old one, which is dropped with its last frame (at
//! most two are live). Dictionaries are charged to the zone. Large items are compressed
//! without one (they are long enough to find their own repeats).
//!
//! # Memory
//!
//! [`ZZone::bytes`] is jemalloc's size class of every allocation the zone owns (the
//! segments holding the block frames, dead bytes included ([`arena`]), large items' keys
//! and values, the trie's arrays, the block and large-item
//! tables, scratch buffers) plus the zone struct itself: what a tenant is charged.
//!
//! # Corruption
//!
//! Blocks are decoded without trusting their bytes ([`block`]); a block that does not
//! decode (which only a bug could cause) is counted in [`ZStats::corrupt_blocks`] and
//! emptied, its items lost as if evicted (without callbacks: they cannot be named).

pub mod arena;
pub mod block;
pub mod filter;
pub mod lz4c;
pub mod trie;

#[cfg(test)]
mod tests;

use crate::object::alloc_size;
use crate::tenant::mix64;
use arena::{Arena, FrameRef};
use block::{Body, Record};
pub use block::{Codec, Corrupt, Dict, ZMeta};
use filter::{Bloom, CONTENT_FILTER_SPAN};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::ops::Range;
use trie::{node_depth, node_range, Trie};

/// Z-zone configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZConfig {
    /// Raw (uncompressed) bytes a block holds before its leaf splits (paper: 2 KB).
    pub block_capacity: usize,
    pub codec: Codec,
    /// Bytes of the sampled compression dictionary (0: none; see the module doc).
    pub dict_size: usize,
}

impl Default for ZConfig {
    fn default() -> Self {
        ZConfig {
            block_capacity: 2048,
            codec: Codec::Lz4,
            dict_size: 0,
        }
    }
}

/// Largest dictionary (LZ4's window is 64 KB).
pub const MAX_DICT: usize = 64 << 10;

/// Why [`ZZone::sweep_to`] removed an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    /// Chosen by the replacement sweep.
    Evicted,
    /// Its `expire_at_ms` had passed.
    Expired,
}

/// Counters and sizes (INFO and benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZStats {
    /// Leaf blocks (including empty ones).
    pub blocks: u64,
    pub items: u64,
    /// Key + value bytes of the items held, uncompressed.
    pub raw_bytes: u64,
    /// Bytes of the compressed frames (blocks and large items' values).
    pub compressed_bytes: u64,
    /// [`ZZone::bytes`].
    pub bytes: u64,
    pub large_items: u64,
    /// Items the sweep evicted.
    pub evictions: u64,
    /// Expired items dropped (by reads, removals, sweeps or [`ZZone::expire_cycle`]).
    pub expired: u64,
    /// Look-ups (get, contains, remove) the Content Filter answered without decompressing.
    pub filter_negatives: u64,
    /// Look-ups the Content Filter passed that found nothing.
    pub filter_false_positives: u64,
    /// Block decompressions.
    pub decompressions: u64,
    /// Inserts appended to a block's tail instead of rewriting the block.
    pub tail_appends: u64,
    /// Block frames compressed whole (inserts that could not go to a tail, splits,
    /// merges, sweeps, removals, re-encodings): the expensive writes.
    pub block_writes: u64,
    /// Leaf splits.
    pub splits: u64,
    /// Sibling leaves merged back (a leaf under a quarter block whose sibling leaf fits
    /// with it in half a block).
    pub merges: u64,
    /// Blocks found corrupt (and emptied).
    pub corrupt_blocks: u64,
    /// Inserts dropped because their leaf could neither split nor grow (depth cap and
    /// [`block::MAX_RAW`] both reached: only under adversarial key sets).
    pub rejected: u64,
    /// Depth of the deepest leaf.
    pub trie_depth: u64,
    /// Bytes of the trie's pointer arrays.
    pub trie_bytes: u64,
    /// Frame segments emptied by compaction ([`arena`]).
    pub frame_compactions: u64,
    /// Live dictionaries (0-2) and their bytes.
    pub dicts: u64,
    pub dict_bytes: u64,
    /// Dictionaries sampled so far.
    pub dicts_trained: u64,
}

const FREE: u8 = u8::MAX;

struct Block {
    /// The block's frame (in the zone's [`Arena`]); empty when it holds no items.
    data: FrameRef,
    content: Bloom,
    access: Bloom,
    /// §3.3.2: the last two accessed items' (hash tag, access time in ms, wrapping).
    recent: [(u32, u32); 2],
    count: u32,
    /// Depth of its leaf; [`FREE`] for an unused slot.
    depth: u8,
    /// Records in its data's tail ([`block::put_tail`]), at most [`tail_max`] of the codec.
    tail: u8,
    /// Whether any of its items may carry an expiry time (set when one is written,
    /// recomputed when the block is rewritten): active expiry decodes only such blocks.
    expiring: bool,
}

/// Most records a block's tail holds before an insert rewrites the whole block (see
/// [`ZZone::insert`]), by the zone's codec: an appended record costs one small LZ4
/// compression instead of a block's decompression and recompression, but compresses
/// less well on its own than inside the block, so the tail is bounded (and by the
/// block's capacity). The bound trades demotion CPU against items held; measured in the
/// server, 256 MB filled with 4M records (BENCHMARKS.md, "Tail entries"): under LZ4 /
/// 2 KB, 4 instead of 8 held 0.3 % more items for 5 % more fill CPU (8 kept); under
/// zstd / 4 KB, whose blocks compress a record far better than a lone LZ4 entry does,
/// 4.9 % more items for 15 % more CPU (4 kept: zstd is the capacity setting).
pub(crate) const fn tail_max(codec: Codec) -> u8 {
    match codec {
        // The largest bound (`check` relies on it).
        Codec::Lz4 => 8,
        Codec::Zstd { .. } => 4,
    }
}

/// The tag a tail entry carries for a record of trie hash `h` (its top 16 bits): a read
/// decompresses only the entries whose tag matches.
fn tail_tag(h: u64) -> u16 {
    (h >> 48) as u16
}

struct LargeItem {
    hash: u64,
    key: Box<[u8]>,
    /// The value's frame.
    value: Box<[u8]>,
    value_len: usize,
}

/// Grows a table by an eighth instead of doubling: the block table is per-block
/// overhead (its slack is charged), and splits are rare next to inserts.
fn grow<T>(v: &mut Vec<T>) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 8 + 8);
    }
}

/// The built-in hash seed.
const DEFAULT_SEED: u64 = 0x7a45_7870_616e_6465; // "zExpande"

/// A compressed zone. `Send`, not `Sync` (statistics counted by `&self` look-ups).
pub struct ZZone {
    cfg: ZConfig,
    seed: u64,
    hasher: ahash::RandomState,
    trie: Trie,
    blocks: Vec<Block>,
    /// The Content Filters beyond each block's own: `content_parts - 1` per block slot,
    /// slot `bid`'s at `bid * (content_parts - 1)`.
    content_ext: Vec<Bloom>,
    /// Content Filters per block: one per 2 KB of block capacity (1..=8).
    content_parts: usize,
    free_blocks: Vec<u32>,
    large: Vec<Option<LargeItem>>,
    free_large: Vec<u32>,
    db_counts: Vec<u64>,
    items: u64,
    leaves: u64,
    /// The block frames.
    arena: Arena,
    /// Size classes of every large item's key and value.
    large_bytes: u64,
    compressed: u64,
    raw_bytes: u64,
    large_items: u64,
    hand: usize,
    expire_hand: usize,
    rng: SmallRng,
    clock_ms: u64,
    // Scratch: the decoded block, a block being built, a frame being compressed.
    raw: Vec<u8>,
    build: Vec<u8>,
    frame: Vec<u8>,
    evictions: u64,
    expired: u64,
    splits: u64,
    merges: u64,
    corrupt: Cell<u64>,
    rejected: u64,
    decompressions: Cell<u64>,
    tail_appends: u64,
    block_writes: u64,
    filter_neg: Cell<u64>,
    filter_fp: Cell<u64>,
    /// Live dictionaries, the current (newest) last, and how many block frames use each.
    dicts: Vec<Dict>,
    dict_frames: Vec<u64>,
    next_dict_id: u32,
    /// Raw block bytes written since the last training attempt.
    written_since_train: u64,
    dicts_trained: u64,
}

/// A removal report: (db, key, meta, why).
type OnGone<'f> = dyn FnMut(u8, &[u8], ZMeta, Gone) + 'f;

/// An item of a decoded block: its hash and its record's bytes.
type Rec<'a> = (u64, &'a [u8]);

impl ZZone {
    pub fn new(cfg: ZConfig) -> Self {
        Self::with_seed(cfg, DEFAULT_SEED)
    }

    /// A zone hashing keys with `seed`.
    pub fn with_seed(cfg: ZConfig, seed: u64) -> Self {
        let cfg = ZConfig {
            block_capacity: cfg.block_capacity.clamp(64, block::MAX_RAW / 4),
            codec: cfg.codec,
            dict_size: cfg.dict_size.min(MAX_DICT),
        };
        let content_parts = cfg.block_capacity.div_ceil(CONTENT_FILTER_SPAN).clamp(1, 8);
        let root = Block {
            data: FrameRef::EMPTY,
            content: Bloom::default(),
            access: Bloom::default(),
            recent: [(0, 0); 2],
            count: 0,
            depth: 0,
            tail: 0,
            expiring: false,
        };
        ZZone {
            cfg,
            seed,
            hasher: ahash::RandomState::with_seeds(
                seed,
                mix64(seed),
                mix64(seed ^ 1),
                mix64(seed ^ 2),
            ),
            trie: Trie::new(0),
            blocks: vec![root],
            content_ext: vec![Bloom::default(); content_parts - 1],
            content_parts,
            free_blocks: Vec::new(),
            large: Vec::new(),
            free_large: Vec::new(),
            db_counts: Vec::new(),
            items: 0,
            leaves: 1,
            arena: Arena::new(),
            large_bytes: 0,
            compressed: 0,
            raw_bytes: 0,
            large_items: 0,
            hand: 0,
            expire_hand: 0,
            rng: SmallRng::seed_from_u64(mix64(seed ^ 3)),
            clock_ms: 0,
            raw: Vec::new(),
            build: Vec::new(),
            frame: Vec::new(),
            evictions: 0,
            expired: 0,
            splits: 0,
            merges: 0,
            corrupt: Cell::new(0),
            rejected: 0,
            decompressions: Cell::new(0),
            tail_appends: 0,
            block_writes: 0,
            filter_neg: Cell::new(0),
            filter_fp: Cell::new(0),
            dicts: Vec::new(),
            dict_frames: Vec::new(),
            next_dict_id: 1,
            written_since_train: 0,
            dicts_trained: 0,
        }
    }

    pub fn config(&self) -> ZConfig {
        self.cfg
    }

    /// Changes the codec for blocks written from now on (existing frames keep theirs).
    pub fn set_codec(&mut self, codec: Codec) {
        self.cfg.codec = codec;
    }

    /// The largest `now_ms` the zone has been given (by get, contains' callers through
    /// [`ZZone::set_clock`], remove, sweeps): [`ZZone::evict_to`] drops items expired by it.
    pub fn clock_ms(&self) -> u64 {
        self.clock_ms
    }

    /// Advances the zone's clock (never moves it back).
    pub fn set_clock(&mut self, now_ms: u64) {
        self.clock_ms = self.clock_ms.max(now_ms);
    }

    #[inline]
    fn hash(&self, db: u8, key: &[u8]) -> u64 {
        self.hasher.hash_one((db, key))
    }

    /// The hash a record stands for.
    #[inline]
    fn rec_hash(&self, r: &Record<'_>) -> Option<u64> {
        match r.body {
            Body::Inline { key, .. } => Some(self.hash(r.db, key)),
            Body::Large { id } => self.large_item(id).map(|l| l.hash),
        }
    }

    #[inline]
    fn large_item(&self, id: u32) -> Option<&LargeItem> {
        self.large.get(id as usize).and_then(|l| l.as_ref())
    }

    /// Does record `r` (hash `h`) hold `(db, key)`?
    #[inline]
    fn matches(&self, r: &Record<'_>, h: u64, db: u8, key: &[u8]) -> bool {
        if r.db != db {
            return false;
        }
        match r.body {
            Body::Inline { key: k, .. } => k == key,
            Body::Large { id } => self
                .large_item(id)
                .is_some_and(|l| l.hash == h && &*l.key == key),
        }
    }

    /// The key a record names.
    fn rec_key<'a>(&'a self, r: &Record<'a>) -> Option<&'a [u8]> {
        match r.body {
            Body::Inline { key, .. } => Some(key),
            Body::Large { id } => self.large_item(id).map(|l| &*l.key),
        }
    }

    /// Key + value bytes a record stands for.
    fn rec_raw_len(&self, r: &Record<'_>) -> u64 {
        match r.body {
            Body::Inline { key, value } => (key.len() + value.len()) as u64,
            Body::Large { id } => self
                .large_item(id)
                .map_or(0, |l| (l.key.len() + l.value_len) as u64),
        }
    }

    /// Is an item this size compressed on its own behind a pointer (§3.1: larger than
    /// half a block)?
    fn is_large(&self, key: &[u8], value: &[u8]) -> bool {
        key.len() + value.len() > self.cfg.block_capacity / 2
    }

    fn depth_cap(&self) -> u8 {
        let log = 64 - self.leaves.leading_zeros() as u8;
        (log + 8).clamp(12, trie::MAX_DEPTH)
    }

    /// Decodes block `bid` into `out`, a raw block in hash order with its tail merged in.
    /// (The callers empty a block that is corrupt; see the module doc.)
    fn decode(&self, bid: u32, out: &mut Vec<u8>) -> Result<(), Corrupt> {
        let main_end = self.decode_unmerged(bid, out)?;
        self.merge_tail(out, main_end)
    }

    /// Turns `raw`, a main raw block followed from `main_end` on by tail records (as
    /// [`Self::decode_unmerged`] leaves it), into one raw block in hash order.
    fn merge_tail(&self, raw: &mut Vec<u8>, main_end: usize) -> Result<(), Corrupt> {
        if main_end == raw.len() {
            return Ok(());
        }
        let tail = raw.split_off(main_end);
        let mut recs = self.collect(raw, 0..0)?;
        for r in block::tail_records(&tail) {
            let (r, range) = r?;
            let h = self.rec_hash(&r).ok_or(Corrupt("dangling large id"))?;
            recs.push((h, &tail[range]));
        }
        recs.sort_unstable_by_key(|r| r.0);
        let mut merged = Vec::with_capacity(raw.len() + tail.len() + 6 * block::MAX_INDEX);
        block::build(&mut merged, &recs);
        drop(recs);
        // Copied rather than swapped in: `raw` is usually the zone's scratch buffer,
        // whose capacity is charged (a read must not change the zone's bytes).
        raw.clear();
        raw.extend_from_slice(&merged);
        Ok(())
    }

    /// The fast path of [`Self::insert`]: appends an inline record for `(db, key)` to
    /// block `bid`'s tail when its Content Filter rules the key out (no old copy to
    /// replace), the block is compressed against a dictionary, needs no split and its
    /// tail has room. The record is compressed on its own against the block's
    /// dictionary, always with LZ4 (a record of ~100 bytes: zstd's fixed cost per frame
    /// is several times LZ4's, and the next full rewrite recompresses the record with
    /// the zone's codec anyway); nothing is decompressed. False (nothing done)
    /// otherwise; the caller then rewrites the block.
    fn try_append(
        &mut self,
        bid: u32,
        h: u64,
        db: u8,
        key: &[u8],
        value: &[u8],
        meta: ZMeta,
    ) -> bool {
        let b = &self.blocks[bid as usize];
        if b.count == 0 || b.tail >= tail_max(self.cfg.codec) || self.has_content(bid, mix64(h)) {
            return false;
        }
        let data = self.arena.get(b.data);
        let Ok((main, tail)) = block::split_tail(data) else {
            return false;
        };
        // Without a dictionary a lone record does not compress: the tail would hold its
        // records raw, so such blocks are rewritten whole.
        let Some(dict_id) = block::frame_dict(main) else {
            return false;
        };
        let Some(raw_len) = block::frame_raw_len(data) else {
            return false;
        };
        let mut rec = std::mem::take(&mut self.build);
        rec.clear();
        block::put_inline(&mut rec, db, key, value, meta);
        if raw_len + rec.len() + 6 > self.cfg.block_capacity {
            self.build = rec;
            return false;
        }
        let dict = self.dicts.iter().find(|d| d.id == dict_id);
        let mut frame = std::mem::take(&mut self.frame);
        block::compress(Codec::Lz4, &rec, dict, &mut frame);
        let mut out = std::mem::take(&mut self.raw);
        out.clear();
        match tail {
            // Already tailed: the data so far, plus one entry.
            Some(_) => out.extend_from_slice(data),
            None => block::put_tail(main, &[], &mut out),
        }
        block::put_tail_entry(&mut out, tail_tag(h), &frame);
        self.written_since_train += rec.len() as u64;
        let tail_len = self.blocks[bid as usize].tail + 1;
        self.set_data(bid, &out, tail_len);
        let b = &mut self.blocks[bid as usize];
        b.count += 1;
        b.expiring |= meta.expire_at_ms.is_some();
        self.tail_appends += 1;
        self.add_content(bid, mix64(h));
        self.items += 1;
        self.db_add(db);
        self.raw_bytes += (key.len() + value.len()) as u64;
        self.build = rec;
        self.frame = frame;
        self.raw = out;
        true
    }

    /// Replaces block `bid`'s data with `frame` (empty: none; no tail), keeping the
    /// counters.
    fn set_frame(&mut self, bid: u32, frame: &[u8]) {
        self.set_data(bid, frame, 0);
    }

    /// Replaces block `bid`'s data with `data`, whose tail holds `tail` records.
    fn set_data(&mut self, bid: u32, data: &[u8], tail: u8) {
        let new = self.arena.alloc(bid, data);
        self.compressed += data.len() as u64;
        self.note_dict(block::frame_dict(data), true);
        let b = &mut self.blocks[bid as usize];
        b.tail = tail;
        let old = std::mem::replace(&mut b.data, new);
        self.release_frame(old);
    }

    /// Frees a frame no block names any more, then lets the arena compact.
    fn release_frame(&mut self, old: FrameRef) {
        if old.is_empty() {
            return;
        }
        let id = block::frame_dict(self.arena.get(old));
        self.note_dict(id, false);
        self.compressed -= old.len() as u64;
        self.arena.free(old);
        let blocks = &mut self.blocks;
        self.arena
            .compact(|owner, r| blocks[owner as usize].data = r);
    }

    /// Counts a block frame now stored (`add`) or dropped against its dictionary `id`; a
    /// dictionary other than the current one goes with its last frame.
    fn note_dict(&mut self, id: Option<u32>, add: bool) {
        let Some(id) = id else {
            return;
        };
        let Some(i) = self.dicts.iter().position(|d| d.id == id) else {
            return;
        };
        if add {
            self.dict_frames[i] += 1;
        } else {
            self.dict_frames[i] = self.dict_frames[i].saturating_sub(1);
            if self.dict_frames[i] == 0 && i + 1 < self.dicts.len() {
                self.dicts.remove(i);
                self.dict_frames.remove(i);
            }
        }
    }

    /// Compresses raw block `raw` into `frame` with the zone's codec and current
    /// dictionary.
    fn encode_block(&mut self, raw: &[u8], frame: &mut Vec<u8>) {
        let dict = if self.cfg.dict_size > 0 {
            self.dicts.last()
        } else {
            None
        };
        block::compress(self.cfg.codec, raw, dict, frame);
        self.block_writes += 1;
        self.written_since_train += raw.len() as u64;
    }

    /// Dictionary upkeep after a write (module doc): samples the first dictionary once
    /// the frames hold 16 of its size, a new one once the zone has written eight times
    /// its raw content since the last, and never while an older one is still in use.
    /// Attempts are spaced by 16 dictionaries' worth of writes. (Under LZ4 a dictionary
    /// also holds liblz4's 16 KB prepared state, charged in `dict_bytes`; it is worth it
    /// early because block tails, the cheap demotions, need a dictionary.)
    fn maybe_train(&mut self) {
        let size = self.cfg.dict_size as u64;
        if size == 0 || self.dicts.len() > 1 || self.written_since_train < 16 * size {
            return;
        }
        let due = if self.dicts.is_empty() {
            self.compressed >= 16 * size
        } else {
            self.written_since_train >= 8 * self.raw_bytes
        };
        if due {
            self.written_since_train = 0;
            self.train();
        }
    }

    /// Samples whole inline records from random blocks into a new current dictionary
    /// (nothing if the blocks hold too little inline data to fill a quarter of it).
    fn train(&mut self) {
        let size = self.cfg.dict_size;
        let mut dict: Vec<u8> = Vec::with_capacity(size);
        let mut raw = std::mem::take(&mut self.raw);
        let mut misses = 0;
        for _ in 0..4 * (size / 64 + 16) {
            if dict.len() + 16 > size || misses > 64 {
                break;
            }
            let bid = self.rng.gen_range(0..self.blocks.len());
            let b = &self.blocks[bid];
            if b.depth == FREE || b.count == 0 || self.decode(bid as u32, &mut raw).is_err() {
                continue;
            }
            let Ok(it) = block::records(&raw) else {
                continue;
            };
            let inline: Vec<Range<usize>> = it
                .filter_map(|r| match r {
                    Ok((r, range)) if matches!(r.body, Body::Inline { .. }) => Some(range),
                    _ => None,
                })
                .collect();
            // Two records per decoded block: a wide sample for few decodes.
            for _ in 0..2.min(inline.len()) {
                let r = &inline[self.rng.gen_range(0..inline.len())];
                if dict.len() + r.len() <= size {
                    dict.extend_from_slice(&raw[r.clone()]);
                } else {
                    misses += 1;
                }
            }
        }
        self.raw = raw;
        if dict.len() < size / 4 {
            return;
        }
        let id = self.next_dict_id;
        self.next_dict_id = self.next_dict_id.wrapping_add(1).max(1);
        if self.dict_frames.last() == Some(&0) {
            // The current dictionary has no frames (all rewritten or dropped): replace it.
            self.dicts.pop();
            self.dict_frames.pop();
        }
        self.dicts.push(Dict::new(id, dict.into_boxed_slice()));
        self.dict_frames.push(0);
        self.dicts_trained += 1;
    }

    /// Re-encodes block `bid` with the current dictionary if it uses an older one.
    fn recode_if_stale(&mut self, bid: u32) {
        let cur = self.dicts.last().map(|d| d.id);
        let used = block::frame_dict(self.arena.get(self.blocks[bid as usize].data));
        if used.is_none() || used == cur {
            return;
        }
        let mut raw = std::mem::take(&mut self.raw);
        if self.decode(bid, &mut raw).is_err() {
            self.drop_corrupt(bid);
        } else {
            let mut frame = std::mem::take(&mut self.frame);
            self.encode_block(&raw, &mut frame);
            self.set_frame(bid, &frame);
            self.frame = frame;
        }
        self.raw = raw;
    }

    /// Empties corrupt block `bid`.
    fn drop_corrupt(&mut self, bid: u32) {
        self.corrupt.set(self.corrupt.get() + 1);
        let b = &mut self.blocks[bid as usize];
        let n = b.count as u64;
        let old = std::mem::replace(&mut b.data, FrameRef::EMPTY);
        b.count = 0;
        b.tail = 0;
        b.expiring = false;
        b.access.clear();
        self.set_content(bid, &[]);
        self.items = self.items.saturating_sub(n);
        self.release_frame(old);
    }

    /// Finds `(db, key)` (hash `h`) in raw block `raw`: the record and its byte range.
    fn find<'a>(
        &self,
        raw: &'a [u8],
        h: u64,
        db: u8,
        key: &[u8],
    ) -> Result<Option<(Record<'a>, Range<usize>)>, Corrupt> {
        let hdr = block::Header::parse(raw)?;
        let (mut pos, hi) = hdr.span(raw, (h >> 32) as u32)?;
        while pos < hi {
            let at = pos;
            let r = block::parse_record(raw, &mut pos)?;
            if self.matches(&r, h, db, key) {
                return Ok(Some((r, at..pos)));
            }
        }
        Ok(None)
    }

    /// Every record of raw block `raw` with its hash and byte range; a record that does
    /// not parse, or names a missing large item, makes the block corrupt.
    fn hashed_records<'a>(
        &self,
        raw: &'a [u8],
    ) -> Result<Vec<(u64, Range<usize>, Record<'a>)>, Corrupt> {
        block::records(raw)?
            .map(|r| {
                let (r, range) = r?;
                let h = self.rec_hash(&r).ok_or(Corrupt("dangling large id"))?;
                Ok((h, range, r))
            })
            .collect()
    }

    /// [`Self::find`], counting a miss as a Content Filter false positive (the callers
    /// decode only blocks whose filter passed the key).
    fn find_counted<'a>(
        &self,
        raw: &'a [u8],
        h: u64,
        db: u8,
        key: &[u8],
    ) -> Result<Option<(Record<'a>, Range<usize>)>, Corrupt> {
        let found = self.find(raw, h, db, key)?;
        if found.is_none() {
            self.filter_fp.set(self.filter_fp.get() + 1);
        }
        Ok(found)
    }

    /// The items of raw block `raw` as (hash, record bytes), skipping the byte range
    /// `skip`.
    fn collect<'a>(&self, raw: &'a [u8], skip: Range<usize>) -> Result<Vec<Rec<'a>>, Corrupt> {
        let mut v = Vec::new();
        for r in block::records(raw)? {
            let (r, range) = r?;
            if range == skip {
                continue;
            }
            let h = self.rec_hash(&r).ok_or(Corrupt("dangling large id"))?;
            v.push((h, &raw[range]));
        }
        Ok(v)
    }

    /// Where block `bid`'s Content Filter for second hash `h2` is (module doc: one per
    /// 2 KB of capacity): the block's own (`None`), or its index in `content_ext`.
    #[inline]
    fn content_ext_at(&self, bid: u32, h2: u64) -> Option<usize> {
        let ext = self.content_parts - 1;
        match filter::part(h2, self.content_parts) {
            0 => None,
            i => Some(bid as usize * ext + i - 1),
        }
    }

    #[inline]
    fn has_content(&self, bid: u32, h2: u64) -> bool {
        match self.content_ext_at(bid, h2) {
            None => self.blocks[bid as usize].content.has_content(h2),
            Some(i) => self.content_ext[i].has_content(h2),
        }
    }

    fn add_content(&mut self, bid: u32, h2: u64) {
        match self.content_ext_at(bid, h2) {
            None => self.blocks[bid as usize].content.add_content(h2),
            Some(i) => self.content_ext[i].add_content(h2),
        }
    }

    /// Replaces block `bid`'s Content Filters with ones holding exactly `recs`.
    fn set_content(&mut self, bid: u32, recs: &[Rec<'_>]) {
        let ext = self.content_parts - 1;
        let at = bid as usize * ext;
        self.blocks[bid as usize].content.clear();
        self.content_ext[at..at + ext]
            .iter_mut()
            .for_each(Bloom::clear);
        for r in recs {
            self.add_content(bid, mix64(r.0));
        }
    }

    /// The block slots in use (leaves).
    fn live_blocks(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter().filter(|b| b.depth != FREE)
    }

    fn alloc_block(&mut self, depth: u8) -> u32 {
        let b = Block {
            data: FrameRef::EMPTY,
            content: Bloom::default(),
            access: Bloom::default(),
            recent: [(0, 0); 2],
            count: 0,
            depth,
            tail: 0,
            expiring: false,
        };
        let ext = self.content_parts - 1;
        match self.free_blocks.pop() {
            // `free_block` cleared the slot's Content Filters.
            Some(i) => {
                self.blocks[i as usize] = b;
                i
            }
            None => {
                grow(&mut self.blocks);
                self.blocks.push(b);
                if ext > 0 {
                    if self.content_ext.len() + ext > self.content_ext.capacity() {
                        self.content_ext
                            .reserve_exact(self.content_ext.len() / 8 + 8 * ext);
                    }
                    self.content_ext
                        .resize(self.blocks.len() * ext, Bloom::default());
                }
                (self.blocks.len() - 1) as u32
            }
        }
    }

    /// Writes `recs` (in hash order) as leaf `node`'s block `bid`, splitting the leaf
    /// while it is over capacity (node 0: never split, for writes that only shrink).
    /// `access` is the leaf's Access Filter.
    fn store_leaf(&mut self, node: u64, bid: u32, recs: &[Rec<'_>], access: Bloom) {
        self.store_leaf_m(node, bid, recs, access, true)
    }

    /// [`Self::store_leaf`]; `merge` false while writing the halves of a split (the
    /// second half is not written yet when the first is).
    fn store_leaf_m(&mut self, node: u64, bid: u32, recs: &[Rec<'_>], access: Bloom, merge: bool) {
        let n = recs.len();
        let body: usize = recs.iter().map(|r| r.1.len()).sum();
        let raw_size = block::HEADER + 6 * n.min(block::MAX_INDEX) + body;
        let depth = if node == 0 {
            self.blocks[bid as usize].depth
        } else {
            node_depth(node)
        };
        if node != 0 && raw_size > self.cfg.block_capacity && n >= 2 && depth < self.depth_cap() {
            let bit = 63 - depth as u32;
            let p = recs.partition_point(|r| (r.0 >> bit) & 1 == 0);
            let mut la = Bloom::default();
            let mut ra = Bloom::default();
            for (i, r) in recs.iter().enumerate() {
                let h2 = mix64(r.0);
                if access.has_access(h2) {
                    if i < p {
                        la.add_access(h2)
                    } else {
                        ra.add_access(h2)
                    }
                }
            }
            let right = self.alloc_block(depth + 1);
            self.blocks[bid as usize].depth = depth + 1;
            self.trie.set(node, None);
            self.trie.set(2 * node, Some(bid));
            self.trie.set(2 * node + 1, Some(right));
            self.leaves += 1;
            self.splits += 1;
            self.store_leaf_m(2 * node, bid, &recs[..p], la, false);
            self.store_leaf_m(2 * node + 1, right, &recs[p..], ra, false);
            return;
        }
        // The reverse of a split: a leaf that shrank to a quarter of a block merges with
        // its sibling leaf when both fit in half a block (hysteresis against split /
        // merge ping-pong), so a zone that shrinks (evictions, the adaptive split) does
        // not keep a block record and a pointer per former leaf.
        if merge && node > 1 && raw_size <= self.cfg.block_capacity / 4 {
            let sib = node ^ 1;
            if let Some(sb) = self.trie.get(sib) {
                let sframe = self.arena.get(self.blocks[sb as usize].data);
                let slen = if sframe.is_empty() {
                    block::HEADER
                } else {
                    block::frame_raw_len(sframe).unwrap_or(usize::MAX)
                };
                if raw_size.saturating_add(slen) <= self.cfg.block_capacity / 2 {
                    let mut sraw = Vec::new();
                    if self.decode(sb, &mut sraw).is_ok() {
                        if let Ok(srecs) = self.collect(&sraw, 0..0) {
                            let mut both: Vec<Rec<'_>> = Vec::with_capacity(n + srecs.len());
                            if node & 1 == 0 {
                                both.extend_from_slice(recs);
                                both.extend_from_slice(&srecs);
                            } else {
                                both.extend_from_slice(&srecs);
                                both.extend_from_slice(recs);
                            }
                            let mut acc = access;
                            let sa = self.blocks[sb as usize].access;
                            acc.0[0] |= sa.0[0];
                            acc.0[1] |= sa.0[1];
                            self.free_block(sb);
                            self.trie.set(node, None);
                            self.trie.set(sib, None);
                            self.trie.set(node >> 1, Some(bid));
                            self.blocks[bid as usize].depth = depth - 1;
                            self.leaves -= 1;
                            self.merges += 1;
                            self.store_leaf(node >> 1, bid, &both, acc);
                            return;
                        }
                    }
                }
            }
        }
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        if n > 0 {
            let mut build = std::mem::take(&mut self.build);
            block::build(&mut build, recs);
            self.encode_block(&build, &mut frame);
            self.build = build;
        }
        let b = &mut self.blocks[bid as usize];
        b.count = n as u32;
        b.access = access;
        b.expiring = recs.iter().any(|r| block::record_may_expire(r.1));
        self.set_content(bid, recs);
        self.set_frame(bid, &frame);
        self.frame = frame;
    }

    /// Returns block `bid`'s slot to the free list (its items already moved).
    fn free_block(&mut self, bid: u32) {
        let b = &mut self.blocks[bid as usize];
        let old = std::mem::replace(&mut b.data, FrameRef::EMPTY);
        b.depth = FREE;
        b.count = 0;
        b.tail = 0;
        b.expiring = false;
        b.access.clear();
        self.set_content(bid, &[]);
        self.release_frame(old);
        if self.free_blocks.len() == self.free_blocks.capacity() {
            self.free_blocks
                .reserve_exact(self.free_blocks.len() / 8 + 8);
        }
        self.free_blocks.push(bid);
    }

    fn db_add(&mut self, db: u8) {
        let i = db as usize;
        if i >= self.db_counts.len() {
            self.db_counts.resize(i + 1, 0);
        }
        self.db_counts[i] += 1;
    }

    /// Accounts for the removal of record `r` and frees its large item.
    fn forget(&mut self, r: &Record<'_>) {
        self.raw_bytes = self.raw_bytes.saturating_sub(self.rec_raw_len(r));
        self.items = self.items.saturating_sub(1);
        if let Some(c) = self.db_counts.get_mut(r.db as usize) {
            *c = c.saturating_sub(1);
        }
        if let Body::Large { id } = r.body {
            self.free_large(id);
        }
    }

    fn free_large(&mut self, id: u32) {
        if let Some(l) = self.large.get_mut(id as usize).and_then(Option::take) {
            self.large_bytes -= (alloc_size(l.key.len()) + alloc_size(l.value.len())) as u64;
            self.compressed -= l.value.len() as u64;
            self.large_items -= 1;
            self.free_large.push(id);
        }
    }

    fn trim_scratch(&mut self) {
        let keep = 2 * self.cfg.block_capacity + 4096;
        for v in [&mut self.raw, &mut self.build, &mut self.frame] {
            if v.capacity() > keep {
                v.clear();
                v.shrink_to(keep);
            }
        }
    }

    /// Stores (db, key) -> value, replacing any older copy. The item counts as not
    /// recently accessed.
    pub fn insert(&mut self, db: u8, key: &[u8], value: &[u8], meta: ZMeta) {
        let h = self.hash(db, key);
        let Some((node, bid)) = self.trie.lookup(h) else {
            return;
        };
        if !self.is_large(key, value) && self.try_append(bid, h, db, key, value, meta) {
            self.maybe_train();
            self.trim_scratch();
            return;
        }
        let mut raw = std::mem::take(&mut self.raw);
        if self.decode(bid, &mut raw).is_err() {
            self.drop_corrupt(bid);
            block::build(&mut raw, &[]);
        }
        // The new record, inline or behind a large-item pointer.
        let mut rec = Vec::new();
        let mut large_id = None;
        if self.is_large(key, value) {
            let mut frame = std::mem::take(&mut self.frame);
            block::compress(self.cfg.codec, value, None, &mut frame);
            let l = LargeItem {
                hash: h,
                key: key.into(),
                value: frame.as_slice().into(),
                value_len: value.len(),
            };
            self.frame = frame;
            self.large_bytes += (alloc_size(l.key.len()) + alloc_size(l.value.len())) as u64;
            self.compressed += l.value.len() as u64;
            self.large_items += 1;
            let id = match self.free_large.pop() {
                Some(id) => {
                    self.large[id as usize] = Some(l);
                    id
                }
                None => {
                    grow(&mut self.large);
                    self.large.push(Some(l));
                    (self.large.len() - 1) as u32
                }
            };
            large_id = Some(id);
            block::put_large(&mut rec, db, meta, id);
        } else {
            block::put_inline(&mut rec, db, key, value, meta);
        }
        // The block's items without the old copy, plus the new record in hash order.
        let old = match self.find(&raw, h, db, key) {
            Ok(o) => o,
            Err(_) => {
                self.drop_corrupt(bid);
                block::build(&mut raw, &[]);
                None
            }
        };
        let skip = old.as_ref().map_or(0..0, |o| o.1.clone());
        let mut recs = match self.collect(&raw, skip) {
            Ok(v) => v,
            Err(_) => {
                self.drop_corrupt(bid);
                Vec::new()
            }
        };
        let at = recs.partition_point(|r| r.0 < h);
        recs.insert(at, (h, &rec));
        let body: usize = recs.iter().map(|r| r.1.len()).sum();
        if body + 64 > block::MAX_RAW && node_depth(node) >= self.depth_cap() {
            // Cannot split and cannot grow: keep the old copy out (it is replaced) and
            // drop the new one.
            recs.remove(at);
            if let Some(id) = large_id {
                self.free_large(id);
            }
            self.rejected += 1;
        } else {
            self.items += 1;
            self.db_add(db);
            self.raw_bytes += (key.len() + value.len()) as u64;
        }
        if let Some((o, _)) = &old {
            self.forget(o);
        }
        let access = self.blocks[bid as usize].access;
        self.store_leaf(node, bid, &recs, access);
        drop(recs);
        self.raw = raw;
        self.maybe_train();
        self.trim_scratch();
    }

    /// Looks up (db, key); on a hit appends the value to `out`, sets the item's access
    /// bit, returns its meta. Items whose expire_at_ms <= now_ms are absent (and dropped
    /// on the spot).
    pub fn get(&mut self, db: u8, key: &[u8], now_ms: u64, out: &mut Vec<u8>) -> Option<ZMeta> {
        self.get_reuse(db, key, now_ms, out).map(|x| x.0)
    }

    /// [`ZZone::get`], also returning the item's re-use time (§3.3.2): the ms since its
    /// previous read, if that read is still one of its block's two recent-access records.
    pub fn get_reuse(
        &mut self,
        db: u8,
        key: &[u8],
        now_ms: u64,
        out: &mut Vec<u8>,
    ) -> Option<(ZMeta, Option<u64>)> {
        self.set_clock(now_ms);
        let h = self.hash(db, key);
        let h2 = mix64(h);
        let (node, bid) = self.trie.lookup(h)?;
        if !self.has_content(bid, h2) {
            self.filter_neg.set(self.filter_neg.get() + 1);
            return None;
        }
        let mut raw = std::mem::take(&mut self.raw);
        let res = self.get_in(node, bid, &mut raw, h, db, key, now_ms, out);
        if res.is_err() {
            self.drop_corrupt(bid);
        }
        raw.clear();
        self.raw = raw;
        let meta = res.ok()??;
        let b = &mut self.blocks[bid as usize];
        b.access.add_access(h2);
        let (tag, now) = (h as u32, now_ms as u32);
        let reuse = if let Some(r) = b.recent.iter_mut().find(|r| r.0 == tag && r.1 != 0) {
            let gap = now.wrapping_sub(r.1) as u64;
            r.1 = now.max(1);
            Some(gap)
        } else {
            // Replace the older record.
            let older = if now.wrapping_sub(b.recent[0].1) >= now.wrapping_sub(b.recent[1].1) {
                0
            } else {
                1
            };
            b.recent[older] = (tag, now.max(1));
            None
        };
        Some((meta, reuse))
    }

    #[allow(clippy::too_many_arguments)]
    fn get_in(
        &mut self,
        node: u64,
        bid: u32,
        raw: &mut Vec<u8>,
        h: u64,
        db: u8,
        key: &[u8],
        now_ms: u64,
        out: &mut Vec<u8>,
    ) -> Result<Option<ZMeta>, Corrupt> {
        let Some(r) = self.find_unmerged(bid, raw, h, db, key)? else {
            self.filter_fp.set(self.filter_fp.get() + 1);
            return Ok(None);
        };
        let expired = r.meta.expire_at_ms.is_some_and(|t| t <= now_ms);
        let ok = !expired
            && match r.body {
                Body::Inline { value, .. } => {
                    out.extend_from_slice(value);
                    true
                }
                Body::Large { id } => match self.large_item(id) {
                    Some(l) => {
                        let n = block::decompress_append(&l.value, l.value_len, &self.dicts, out);
                        n == Ok(l.value_len)
                    }
                    None => false,
                },
            };
        if !ok {
            if expired {
                self.expired += 1;
            } else {
                self.corrupt.set(self.corrupt.get() + 1);
            }
            // Drop the item: rewrite the block (tail merged in) without it.
            self.decode(bid, raw)?;
            let Some((r, range)) = self.find(raw, h, db, key)? else {
                return Err(Corrupt("item vanished"));
            };
            let recs = self.collect(raw, range)?;
            self.forget(&r);
            let access = self.blocks[bid as usize].access;
            self.store_leaf(node, bid, &recs, access);
            return Ok(None);
        }
        Ok(Some(r.meta))
    }

    /// Decodes block `bid` into `out` as its main frame's raw block followed by its
    /// tail's records (not merged: see [`Self::decode`]); returns where the tail starts.
    fn decode_unmerged(&self, bid: u32, out: &mut Vec<u8>) -> Result<usize, Corrupt> {
        let b = &self.blocks[bid as usize];
        if b.count == 0 {
            out.clear();
            block::build(out, &[]);
            return Ok(out.len());
        }
        self.decompressions.set(self.decompressions.get() + 1);
        let (main, tail) = block::split_tail(self.arena.get(b.data))?;
        block::decompress(main, &self.dicts, out)?;
        let main_end = out.len();
        if let Some(tail) = tail {
            let max = block::MAX_RAW - main_end;
            block::decompress_tail_append(tail, max, &self.dicts, out)?;
        }
        Ok(main_end)
    }

    /// The record of `(db, key)` in block `bid`, decoded into `raw` without merging:
    /// the tail entries whose tag matches are decompressed one at a time, and the main
    /// frame (searched through its index) only if none holds the key. A key is in at most
    /// one of them (a record is appended to a tail only when the block holds no copy).
    fn find_unmerged<'a>(
        &self,
        bid: u32,
        raw: &'a mut Vec<u8>,
        h: u64,
        db: u8,
        key: &[u8],
    ) -> Result<Option<Record<'a>>, Corrupt> {
        let b = &self.blocks[bid as usize];
        if b.count == 0 {
            return Ok(None);
        }
        let (main, tail) = block::split_tail(self.arena.get(b.data))?;
        let tag = tail_tag(h);
        let mut in_tail = false;
        for e in block::tail_entries(tail.unwrap_or(&[])) {
            let (t, frame) = e?;
            if t != tag {
                continue;
            }
            self.decompressions.set(self.decompressions.get() + 1);
            raw.clear();
            block::decompress_append(frame, block::MAX_RAW, &self.dicts, raw)?;
            if let Some(r) = block::tail_records(raw).next() {
                if self.matches(&r?.0, h, db, key) {
                    in_tail = true;
                    break;
                }
            }
        }
        if in_tail {
            return Ok(block::tail_records(raw).next().transpose()?.map(|r| r.0));
        }
        self.decompressions.set(self.decompressions.get() + 1);
        block::decompress(main, &self.dicts, raw)?;
        Ok(self.find(raw, h, db, key)?.map(|r| r.0))
    }

    /// Like get without the value and without setting the access bit; decompresses
    /// nothing when the Content Filter says no.
    pub fn contains(&self, db: u8, key: &[u8], now_ms: u64) -> bool {
        self.peek(db, key, now_ms).is_some()
    }

    /// The meta of (db, key) if it is present and not expired, without touching access
    /// state (TTL, TYPE, EXISTS on a Z-zone item).
    pub fn peek(&self, db: u8, key: &[u8], now_ms: u64) -> Option<ZMeta> {
        let h = self.hash(db, key);
        let (_, bid) = self.trie.lookup(h)?;
        if !self.has_content(bid, mix64(h)) {
            self.filter_neg.set(self.filter_neg.get() + 1);
            return None;
        }
        let mut raw = Vec::new();
        let Some(r) = self.find_unmerged(bid, &mut raw, h, db, key).ok()? else {
            self.filter_fp.set(self.filter_fp.get() + 1);
            return None;
        };
        r.meta
            .expire_at_ms
            .is_none_or(|t| t > now_ms)
            .then_some(r.meta)
    }

    /// Removes (db, key); returns the value and meta if it was there (not expired).
    pub fn remove(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<(Vec<u8>, ZMeta)> {
        self.set_clock(now_ms);
        let h = self.hash(db, key);
        let (node, bid) = self.trie.lookup(h)?;
        if !self.has_content(bid, mix64(h)) {
            self.filter_neg.set(self.filter_neg.get() + 1);
            return None;
        }
        let mut raw = std::mem::take(&mut self.raw);
        let res = self.remove_in(node, bid, &mut raw, h, db, key, now_ms);
        if res.is_err() {
            self.drop_corrupt(bid);
        }
        raw.clear();
        self.raw = raw;
        res.ok()?
    }

    #[allow(clippy::too_many_arguments)]
    fn remove_in(
        &mut self,
        node: u64,
        bid: u32,
        raw: &mut Vec<u8>,
        h: u64,
        db: u8,
        key: &[u8],
        now_ms: u64,
    ) -> Result<Option<(Vec<u8>, ZMeta)>, Corrupt> {
        self.decode(bid, raw)?;
        let raw = &raw[..];
        let Some((r, range)) = self.find_counted(raw, h, db, key)? else {
            return Ok(None);
        };
        let expired = r.meta.expire_at_ms.is_some_and(|t| t <= now_ms);
        let mut value = Vec::new();
        let got = match r.body {
            Body::Inline { value: v, .. } => {
                value.extend_from_slice(v);
                true
            }
            Body::Large { id } => self.large_item(id).is_some_and(|l| {
                block::decompress_append(&l.value, l.value_len, &self.dicts, &mut value)
                    == Ok(l.value_len)
            }),
        };
        let recs = self.collect(raw, range)?;
        self.forget(&r);
        let access = self.blocks[bid as usize].access;
        self.store_leaf(node, bid, &recs, access);
        if expired {
            self.expired += 1;
            return Ok(None);
        }
        if !got {
            self.corrupt.set(self.corrupt.get() + 1);
            return Ok(None);
        }
        Ok(Some((value, r.meta)))
    }

    /// The trie node (heap-numbered) of the leaf (db, key) maps to: the trie look-up
    /// alone, for measurements.
    #[doc(hidden)]
    pub fn locate(&self, db: u8, key: &[u8]) -> Option<u64> {
        self.trie.lookup(self.hash(db, key)).map(|x| x.0)
    }

    /// Live items (expired ones count until dropped).
    pub fn len(&self) -> u64 {
        self.items
    }

    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Items of `db` (expired ones count until dropped).
    pub fn db_len(&self, db: u8) -> u64 {
        self.db_counts.get(db as usize).copied().unwrap_or(0)
    }

    /// Honest memory: jemalloc size classes of every allocation the zone owns, plus the
    /// zone struct.
    pub fn bytes(&self) -> u64 {
        let vec = |cap: usize, elem: usize| alloc_size(cap * elem) as u64;
        self.large_bytes
            + self.arena.bytes()
            + self.trie.bytes()
            + vec(self.blocks.capacity(), std::mem::size_of::<Block>())
            + vec(self.content_ext.capacity(), std::mem::size_of::<Bloom>())
            + vec(self.free_blocks.capacity(), 4)
            + vec(
                self.large.capacity(),
                std::mem::size_of::<Option<LargeItem>>(),
            )
            + vec(self.free_large.capacity(), 4)
            + vec(self.db_counts.capacity(), 8)
            + vec(self.raw.capacity(), 1)
            + vec(self.build.capacity(), 1)
            + vec(self.frame.capacity(), 1)
            + vec(self.dicts.capacity(), std::mem::size_of::<Dict>())
            + vec(self.dict_frames.capacity(), 8)
            + self.dict_bytes()
            + std::mem::size_of::<ZZone>() as u64
    }

    /// The part of [`ZZone::bytes`] that does not grow with the items: scratch buffers
    /// and the frame arena's slack (for "does the zone pay" estimates at the margin).
    pub fn fixed_bytes(&self) -> u64 {
        let vec = |cap: usize| alloc_size(cap) as u64;
        vec(self.raw.capacity())
            + vec(self.build.capacity())
            + vec(self.frame.capacity())
            + self.arena.slack_bytes()
    }

    fn dict_bytes(&self) -> u64 {
        self.dicts.iter().map(|d| d.heap_bytes() as u64).sum()
    }

    /// Removes the items of block `bid` that `pick` selects (given the record, its hash,
    /// and whether it has expired), reporting each through `f`. Returns the number removed.
    fn drop_from_block(&mut self, bid: u32, now_ms: u64, evict: bool, f: &mut OnGone<'_>) -> usize {
        let mut raw = std::mem::take(&mut self.raw);
        if self.decode(bid, &mut raw).is_err() {
            self.drop_corrupt(bid);
            self.raw = raw;
            return 0;
        }
        let Ok(all) = self.hashed_records(&raw) else {
            self.drop_corrupt(bid);
            self.raw = raw;
            return 0;
        };
        let access = self.blocks[bid as usize].access;
        let mut gone: Vec<Option<Gone>> = all
            .iter()
            .map(|(_, _, r)| {
                r.meta
                    .expire_at_ms
                    .is_some_and(|t| t <= now_ms)
                    .then_some(Gone::Expired)
            })
            .collect();
        if evict {
            let cold: Vec<usize> = (0..all.len())
                .filter(|&i| gone[i].is_none() && !access.has_access(mix64(all[i].0)))
                .collect();
            let mut cold = cold;
            let k = cold.len().div_ceil(2);
            for j in 0..k {
                let pick = self.rng.gen_range(j..cold.len());
                cold.swap(j, pick);
                gone[cold[j]] = Some(Gone::Evicted);
            }
            self.blocks[bid as usize].access.clear();
        }
        let removed = gone.iter().filter(|g| g.is_some()).count();
        if removed > 0 {
            let mut keep: Vec<Rec<'_>> = Vec::with_capacity(all.len() - removed);
            for (i, (h, range, r)) in all.iter().enumerate() {
                match gone[i] {
                    None => keep.push((*h, &raw[range.clone()])),
                    Some(g) => {
                        if let Some(k) = self.rec_key(r) {
                            f(r.db, k, r.meta, g);
                        }
                        match g {
                            Gone::Evicted => self.evictions += 1,
                            Gone::Expired => self.expired += 1,
                        }
                        self.forget(r);
                    }
                }
            }
            let access = self.blocks[bid as usize].access;
            let node = self.trie.lookup(all[0].0).map_or(0, |x| x.0);
            self.store_leaf(node, bid, &keep, access);
        }
        drop(all);
        self.raw = raw;
        removed
    }

    /// §3.2 replacement: circular sweep evicting half of the not-recently-accessed items
    /// of each block it stops at (clearing access bits as it passes), until
    /// `bytes() <= target_bytes` or the zone is empty. Calls `on_evict(db, key, meta)` for
    /// each item removed, evicted or expired by the zone's clock (see the module doc).
    pub fn evict_to(&mut self, target_bytes: u64, mut on_evict: impl FnMut(u8, &[u8], ZMeta)) {
        let now = self.clock_ms;
        self.sweep_to(target_bytes, now, |db, k, m, _| on_evict(db, k, m));
    }

    /// [`ZZone::evict_to`] with an explicit clock and the reason for each removal.
    pub fn sweep_to(
        &mut self,
        target_bytes: u64,
        now_ms: u64,
        mut f: impl FnMut(u8, &[u8], ZMeta, Gone),
    ) {
        self.set_clock(now_ms);
        let mut idle = 0usize;
        while self.bytes() > target_bytes && self.items > 0 {
            if self.hand >= self.blocks.len() {
                self.hand = 0;
            }
            let bid = self.hand as u32;
            self.hand += 1;
            let b = &self.blocks[bid as usize];
            let dropped = if b.depth == FREE || b.count == 0 {
                0
            } else {
                self.drop_from_block(bid, now_ms, true, &mut f)
            };
            if dropped == 0 {
                idle += 1;
                // Two full turns without a removal: every filter was cleared on the
                // first, so this only happens if blocks are corrupt; stop.
                if idle > 2 * self.blocks.len() + 2 {
                    break;
                }
            } else {
                idle = 0;
            }
        }
        self.trim_scratch();
    }

    /// Active expiry: visits up to `blocks` blocks (a hand of its own) and drops their
    /// expired items, reporting each. Returns the number dropped.
    pub fn expire_cycle(
        &mut self,
        now_ms: u64,
        blocks: usize,
        mut f: impl FnMut(u8, &[u8], ZMeta),
    ) -> usize {
        self.set_clock(now_ms);
        let mut n = 0;
        for _ in 0..blocks.min(self.blocks.len()) {
            if self.expire_hand >= self.blocks.len() {
                self.expire_hand = 0;
            }
            let bid = self.expire_hand as u32;
            self.expire_hand += 1;
            let b = &self.blocks[bid as usize];
            if b.depth != FREE && b.count > 0 {
                if b.expiring {
                    n += self.drop_from_block(bid, now_ms, false, &mut |db, k, m, _| f(db, k, m));
                }
                if self.dicts.len() > 1 && self.blocks[bid as usize].count > 0 {
                    self.recode_if_stale(bid);
                }
            }
        }
        n
    }

    /// Visits every item's (db, key, meta), expired or not.
    pub fn for_each(&self, mut f: impl FnMut(u8, &[u8], ZMeta)) {
        let mut raw = Vec::new();
        for bid in 0..self.blocks.len() as u32 {
            let b = &self.blocks[bid as usize];
            if b.depth == FREE || b.count == 0 || self.decode(bid, &mut raw).is_err() {
                continue;
            }
            let Ok(it) = block::records(&raw) else {
                continue;
            };
            for r in it {
                let Ok((r, _)) = r else { break };
                if let Some(k) = self.rec_key(&r) {
                    f(r.db, k, r.meta);
                }
            }
        }
    }

    /// A resumable scan in hash order: visits the items of whole leaves from `cursor`
    /// (0 starts) until at least `count` were visited, and returns the cursor to resume
    /// from (0 = done). Cursors are hash positions, which neither inserts, removals nor
    /// splits move, so every item present for the whole scan is visited exactly once
    /// (Redis's SCAN guarantee, and more: no repeats).
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(u8, &[u8], ZMeta)) -> u64 {
        let mut pos = cursor;
        let mut seen = 0usize;
        let mut raw = Vec::new();
        loop {
            let Some((node, bid)) = self.trie.lookup(pos) else {
                return 0;
            };
            let (start, len) = node_range(node);
            let b = &self.blocks[bid as usize];
            if b.count > 0 && self.decode(bid, &mut raw).is_ok() {
                if let Ok(it) = block::records(&raw) {
                    for r in it {
                        let Ok((r, _)) = r else { break };
                        if self.rec_hash(&r).is_some_and(|h| h >= pos) {
                            if let Some(k) = self.rec_key(&r) {
                                f(r.db, k, r.meta);
                                seen += 1;
                            }
                        }
                    }
                }
            }
            let end = start as u128 + len;
            if end > u64::MAX as u128 {
                return 0;
            }
            pos = end as u64;
            if seen >= count.max(1) {
                return pos;
            }
        }
    }

    /// A random key of `db` (not necessarily uniform: a random block's random key).
    pub fn random_key(&self, db: u8, rng: &mut impl Rng) -> Option<Vec<u8>> {
        if self.db_len(db) == 0 {
            return None;
        }
        let mut raw = Vec::new();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for _ in 0..32 {
            let bid = rng.gen_range(0..self.blocks.len()) as u32;
            let b = &self.blocks[bid as usize];
            if b.depth == FREE || b.count == 0 || self.decode(bid, &mut raw).is_err() {
                continue;
            }
            let Ok(it) = block::records(&raw) else {
                continue;
            };
            keys.clear();
            for r in it.flatten() {
                if r.0.db == db {
                    if let Some(k) = self.rec_key(&r.0) {
                        keys.push(k.to_vec());
                    }
                }
            }
            if !keys.is_empty() {
                let i = rng.gen_range(0..keys.len());
                return Some(keys.swap_remove(i));
            }
        }
        keys.clear();
        self.for_each(|d, k, _| {
            if d == db {
                keys.push(k.to_vec())
            }
        });
        if keys.is_empty() {
            return None;
        }
        let i = rng.gen_range(0..keys.len());
        Some(keys.swap_remove(i))
    }

    /// Drops every item of `db` (no callbacks; FLUSHDB).
    pub fn clear_db(&mut self, db: u8) {
        if self.db_len(db) == 0 {
            return;
        }
        for bid in 0..self.blocks.len() as u32 {
            let b = &self.blocks[bid as usize];
            if b.depth == FREE || b.count == 0 {
                continue;
            }
            let mut raw = std::mem::take(&mut self.raw);
            if self.decode(bid, &mut raw).is_err() {
                self.drop_corrupt(bid);
                self.raw = raw;
                continue;
            }
            let Ok(all) = self.hashed_records(&raw) else {
                self.drop_corrupt(bid);
                self.raw = raw;
                continue;
            };
            let (gone, keep): (Vec<_>, Vec<_>) = all.into_iter().partition(|x| x.2.db == db);
            let keep: Vec<Rec<'_>> = keep
                .into_iter()
                .map(|(h, range, _)| (h, &raw[range]))
                .collect();
            if !gone.is_empty() {
                for (_, _, r) in &gone {
                    self.forget(r);
                }
                let access = self.blocks[bid as usize].access;
                self.store_leaf(0, bid, &keep, access);
            }
            drop((keep, gone));
            self.raw = raw;
        }
        if let Some(c) = self.db_counts.get_mut(db as usize) {
            *c = 0;
        }
        self.trim_scratch();
    }

    /// Drops everything (FLUSHALL), keeping configuration, seed and counters.
    pub fn clear(&mut self) {
        let mut z = ZZone::with_seed(self.cfg, self.seed);
        z.evictions = self.evictions;
        z.expired = self.expired;
        z.splits = self.splits;
        z.merges = self.merges;
        z.tail_appends = self.tail_appends;
        z.block_writes = self.block_writes;
        z.corrupt = self.corrupt.clone();
        z.rejected = self.rejected;
        z.decompressions = self.decompressions.clone();
        z.filter_neg = self.filter_neg.clone();
        z.filter_fp = self.filter_fp.clone();
        z.clock_ms = self.clock_ms;
        *self = z;
    }

    pub fn stats(&self) -> ZStats {
        ZStats {
            blocks: self.leaves,
            items: self.items,
            raw_bytes: self.raw_bytes,
            compressed_bytes: self.compressed,
            bytes: self.bytes(),
            large_items: self.large_items,
            evictions: self.evictions,
            expired: self.expired,
            filter_negatives: self.filter_neg.get(),
            filter_false_positives: self.filter_fp.get(),
            decompressions: self.decompressions.get(),
            tail_appends: self.tail_appends,
            block_writes: self.block_writes,
            splits: self.splits,
            merges: self.merges,
            corrupt_blocks: self.corrupt.get(),
            rejected: self.rejected,
            trie_depth: self.trie.depth() as u64,
            trie_bytes: self.trie.bytes(),
            frame_compactions: self.arena.compactions(),
            dicts: self.dicts.len() as u64,
            dict_bytes: self.dict_bytes(),
            dicts_trained: self.dicts_trained,
        }
    }

    /// Recomputes every counter from the blocks themselves and compares (tests; also a
    /// cheap consistency probe for a debug command). Returns a description of the first
    /// mismatch.
    pub fn check(&self) -> Result<(), String> {
        let mut items = 0u64;
        let mut raw_bytes = 0u64;
        let mut large_bytes = 0u64;
        let mut compressed = 0u64;
        let mut dbs = vec![0u64; self.db_counts.len()];
        let mut large_seen = 0u64;
        let mut leaves = 0u64;
        let mut raw = Vec::new();
        let mut dict_frames = vec![0u64; self.dicts.len()];
        let mut frames = 0usize;
        for (bid, b) in self.blocks.iter().enumerate() {
            if b.depth == FREE {
                continue;
            }
            leaves += 1;
            let frame = self.arena.get(b.data);
            if !frame.is_empty() {
                frames += 1;
            }
            if let Some(id) = block::frame_dict(frame) {
                let i = self
                    .dicts
                    .iter()
                    .position(|d| d.id == id)
                    .ok_or_else(|| format!("block {bid}: dictionary {id} gone"))?;
                dict_frames[i] += 1;
            }
            compressed += b.data.len() as u64;
            let entries = match block::split_tail(frame) {
                Ok((_, Some(tail))) => block::tail_entries(tail).count(),
                _ => 0,
            };
            // (The bound of any codec: the codec can change while tails stand.)
            if entries != b.tail as usize || b.tail > tail_max(Codec::Lz4) {
                return Err(format!(
                    "block {bid}: tail of {entries} entries, counted {}",
                    b.tail
                ));
            }
            if b.count == 0 {
                if !b.data.is_empty() {
                    return Err(format!("empty block {bid} has data"));
                }
                continue;
            }
            self.decode(bid as u32, &mut raw)
                .map_err(|e| format!("block {bid}: {e}"))?;
            let mut n = 0;
            for r in block::records(&raw).map_err(|e| e.to_string())? {
                let (r, _) = r.map_err(|e| e.to_string())?;
                let h = self.rec_hash(&r).ok_or("dangling large id")?;
                match self.trie.lookup(h) {
                    Some((_, x)) if x == bid as u32 => {}
                    _ => return Err(format!("item of block {bid} not found at its leaf")),
                }
                if !self.has_content(bid as u32, mix64(h)) {
                    return Err("content filter misses an item".into());
                }
                if let Body::Large { .. } = r.body {
                    large_seen += 1;
                }
                raw_bytes += self.rec_raw_len(&r);
                *dbs.get_mut(r.db as usize).ok_or("db count missing")? += 1;
                n += 1;
            }
            if n != b.count {
                return Err(format!("block {bid}: count {} vs {n}", b.count));
            }
            items += n as u64;
        }
        for l in self.large.iter().flatten() {
            large_bytes += (alloc_size(l.key.len()) + alloc_size(l.value.len())) as u64;
            compressed += l.value.len() as u64;
        }
        let large_live = self.large.iter().flatten().count() as u64;
        let placed = self.arena.walk()?;
        if placed.len() != frames {
            return Err(format!(
                "arena holds {} frames, blocks {frames}",
                placed.len()
            ));
        }
        for (owner, r) in placed {
            match self.blocks.get(owner as usize) {
                Some(b) if b.data == r && b.depth != FREE => {}
                _ => return Err(format!("arena frame of block {owner} is not its frame")),
            }
        }
        let want = [
            ("items", self.items, items),
            ("raw_bytes", self.raw_bytes, raw_bytes),
            ("large_bytes", self.large_bytes, large_bytes),
            ("compressed", self.compressed, compressed),
            ("large_items", self.large_items, large_seen),
            ("large table", large_live, large_seen),
            ("leaves", self.leaves, leaves),
        ];
        for (what, kept, counted) in want {
            if kept != counted {
                return Err(format!("{what}: kept {kept}, counted {counted}"));
            }
        }
        let deepest = self.live_blocks().map(|b| b.depth).max().unwrap_or(0);
        if deepest != self.trie.depth() {
            return Err(format!(
                "trie depth {} vs deepest leaf {deepest}",
                self.trie.depth()
            ));
        }
        if dict_frames != self.dict_frames {
            return Err(format!(
                "dictionary frames: kept {:?}, counted {dict_frames:?}",
                self.dict_frames
            ));
        }
        if self.dicts.len() > 2 {
            return Err(format!("{} live dictionaries", self.dicts.len()));
        }
        if dbs != self.db_counts {
            return Err(format!(
                "db counts: kept {:?}, counted {dbs:?}",
                self.db_counts
            ));
        }
        Ok(())
    }
}
