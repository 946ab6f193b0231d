//! Streams: the value of Redis's stream type, kept as ONE object behind its key's entry
//! (like lists and hashes, see `object`). Mirrors Redis 7.0's t_stream.c and stream.h:
//! the entries, the ID rules, trimming and the consumer groups with their pending
//! entries lists (PELs).
//!
//! # Layout, and why
//!
//! Redis keeps a stream as a radix tree of listpacks: each tree node holds up to
//! `stream-node-max-entries` entries (100) and `stream-node-max-bytes` bytes (4096),
//! keyed by the ID of the first entry added to it (the *master* ID). Entries inside a
//! node are delta-encoded against the master ID, and an entry whose field names are the
//! node's first entry's (the *master fields*) stores only its values. Here a stream is a
//! `BTreeMap` from master ID to a [`Node`]: one buffer of packed records with the same
//! two savings, so a stream of small entries costs a few bytes per entry beyond its
//! values and one jemalloc block per node, not per entry.
//!
//! **Node boundaries are Redis's, to the entry.** Approximate trimming (`MAXLEN ~`,
//! `MINID ~`) removes whole nodes only, so how many entries `XADD ... MAXLEN ~ 555`
//! leaves is decided by where the nodes split. Redis splits when the node's listpack
//! would reach `stream-node-max-bytes` or already holds `stream-node-max-entries`
//! entries (live plus deleted). Each node therefore also keeps the byte size the same
//! entries would have in Redis's listpack format ([`lp_int_size`], [`lp_str_size`]),
//! so the same commands split the same nodes and trim the same entries on both servers.
//!
//! **Deletion** (XDEL, exact trimming) marks a record deleted in place, as Redis flags
//! the listpack entry; a node whose last live entry goes is removed.
//!
//! # Consumer groups
//!
//! A [`Group`] has its last delivered ID, its `entries-read` counter (7.0's lag
//! bookkeeping), a PEL (`BTreeMap` from ID to [`Nack`]: delivery time, delivery count,
//! owner) and consumers, each with its own PEL (the IDs it owns) and seen time. Groups
//! and consumers are kept sorted by name, as Redis's rax keeps them, so XINFO lists them
//! in Redis's order.
//!
//! # Memory
//!
//! [`Stream::bytes`] is jemalloc's size class of every node buffer plus, per B-tree
//! slot, the slot's own size (nodes, PEL entries, consumers), plus names: O(1), kept
//! incrementally.

use crate::object::{alloc_size, get_varint, parse_canonical_i64, put_varint};
use std::collections::{BTreeMap, BTreeSet};

/// A stream entry ID: milliseconds and sequence (`<ms>-<seq>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// streamIncrID: the next ID, None past the last possible one.
    pub fn next(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// streamDecrID: the previous ID, None before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// `<ms>-<seq>`, as replies carry it.
    pub fn to_bytes(self) -> Vec<u8> {
        format!("{}-{}", self.ms, self.seq).into_bytes()
    }

    /// The 16-byte big-endian form Redis's rax keys and RDB use.
    pub fn encode(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; 16]) -> StreamId {
        StreamId::new(
            u64::from_be_bytes(b[..8].try_into().unwrap()),
            u64::from_be_bytes(b[8..].try_into().unwrap()),
        )
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// `stream-node-max-bytes` and `stream-node-max-entries` (Redis 7.0's defaults 4096 and
/// 100; 0 means no bound of that kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// t_stream.c's STREAM_LISTPACK_MAX_SIZE: the byte bound when `stream-node-max-bytes`
/// is 0 or larger, and the largest entry XADD accepts.
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

// ----- Redis listpack sizes (for node boundaries; see the module documentation) -----

/// listpack.c's lpEncodeBacklen size for an element of `l` encoded bytes.
fn lp_backlen(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Bytes an integer element takes in a listpack (encoding, value and back-length).
pub fn lp_int_size(v: i64) -> usize {
    let l = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if (i16::MIN as i64..=i16::MAX as i64).contains(&v) {
        3
    } else if (-8_388_608..=8_388_607).contains(&v) {
        4
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        5
    } else {
        9
    };
    l + lp_backlen(l)
}

/// Bytes a string element takes in a listpack: as an integer if it is one in canonical
/// form (lpStringToInt64), else as a string.
pub fn lp_str_size(s: &[u8]) -> usize {
    if let Some(v) = parse_canonical_i64(s) {
        return lp_int_size(v);
    }
    let l = s.len()
        + match s.len() {
            0..=63 => 1,
            64..=4095 => 2,
            _ => 5,
        };
    l + lp_backlen(l)
}

/// A listpack's header (total bytes, element count) and end byte.
const LP_OVERHEAD: usize = 7;

// ----- nodes -----

/// A record's flags (t_stream.c's STREAM_ITEM_FLAG_*).
const FLAG_DELETED: u8 = 1;
const FLAG_SAMEFIELDS: u8 = 2;

/// One node: its records packed in one buffer. The buffer starts with the master
/// fields (`varint(n) (varint(len) bytes)*n`); then one record per entry: `flags
/// varint(ms - master.ms) varint(seq)`, then, unless SAMEFIELDS, `varint(n)` and the
/// fields and values alternating, else the values alone (each `varint(len) bytes`).
#[derive(Debug, Clone)]
struct Node {
    buf: Vec<u8>,
    /// The master ID (the map's key, kept here so a node decodes alone).
    master: StreamId,
    /// Where the records start.
    records_at: u32,
    /// The master fields' count (a SAMEFIELDS record has this many values).
    master_count: u32,
    /// Live and deleted records.
    live: u32,
    deleted: u32,
    /// The last ID appended (deleted or not): lpGetEdgeStreamID(last).
    last_id: StreamId,
    /// Redis's listpack size of these entries, less the live and deleted counters
    /// (whose size changes with their values).
    lp_fixed: usize,
}

fn put_bytes(buf: &mut Vec<u8>, b: &[u8]) {
    put_varint(buf, b.len());
    buf.extend_from_slice(b);
}

fn get_bytes(buf: &[u8], off: &mut usize) -> (usize, usize) {
    let (len, k) = get_varint(&buf[*off..]);
    *off += k;
    let r = (*off, *off + len);
    *off += len;
    r
}

/// A record's flags and ID, where its body starts and where it ends.
#[derive(Debug, Clone, Copy)]
struct Header {
    flags: u8,
    id: StreamId,
    body: usize,
    end: usize,
}

impl Node {
    fn new(id: StreamId, fields: &[&[u8]]) -> Node {
        let mut buf = Vec::new();
        put_varint(&mut buf, fields.len());
        for f in fields {
            put_bytes(&mut buf, f);
        }
        // The master entry: count, deleted (kept apart), num-fields, fields, the 0.
        let lp_fixed = LP_OVERHEAD
            + lp_int_size(fields.len() as i64)
            + fields.iter().map(|f| lp_str_size(f)).sum::<usize>()
            + lp_int_size(0);
        Node {
            records_at: buf.len() as u32,
            master_count: fields.len() as u32,
            buf,
            master: id,
            live: 0,
            deleted: 0,
            last_id: id,
            lp_fixed,
        }
    }

    fn lp_bytes(&self) -> usize {
        self.lp_fixed + lp_int_size(self.live as i64) + lp_int_size(self.deleted as i64)
    }

    fn bytes(&self) -> usize {
        alloc_size(self.buf.capacity())
    }

    fn master_fields(&self) -> Vec<(usize, usize)> {
        let (n, mut off) = get_varint(&self.buf);
        (0..n).map(|_| get_bytes(&self.buf, &mut off)).collect()
    }

    fn same_fields(&self, pairs: &[(&[u8], &[u8])]) -> bool {
        let m = self.master_fields();
        m.len() == pairs.len()
            && m.iter()
                .zip(pairs)
                .all(|(&(a, b), (f, _))| &self.buf[a..b] == *f)
    }

    /// Appends an entry (the caller checked the node may take it).
    fn append(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])]) {
        let same = self.same_fields(pairs);
        let flags = if same { FLAG_SAMEFIELDS } else { 0 };
        let dms = id.ms - self.master.ms;
        let mut rec = Vec::with_capacity(
            16 + pairs
                .iter()
                .map(|(f, v)| f.len() + v.len() + 4)
                .sum::<usize>(),
        );
        rec.push(flags);
        put_varint(&mut rec, dms as usize);
        put_varint(&mut rec, id.seq as usize);
        // Redis's record: flags, ms-diff, seq-diff, [num-fields], [fields], values, lp-count.
        let mut lp = lp_int_size(flags as i64)
            + lp_int_size(dms as i64)
            + lp_int_size(id.seq.wrapping_sub(self.master.seq) as i64);
        let mut lp_count = pairs.len() + 3;
        if !same {
            put_varint(&mut rec, pairs.len());
            lp += lp_int_size(pairs.len() as i64);
            lp_count += pairs.len() + 1;
        }
        for (f, v) in pairs {
            if !same {
                put_bytes(&mut rec, f);
                lp += lp_str_size(f);
            }
            put_bytes(&mut rec, v);
            lp += lp_str_size(v);
        }
        lp += lp_int_size(lp_count as i64);
        let need = self.buf.len() + rec.len();
        if need > self.buf.capacity() {
            self.buf.reserve_exact(alloc_size(need) - self.buf.len());
        }
        self.buf.extend_from_slice(&rec);
        self.lp_fixed += lp;
        self.live += 1;
        self.last_id = id;
    }

    /// The record at `off`: flags and ID decoded, its body skipped over by lengths
    /// (no allocation), for scans that decode only the entries they return.
    fn header_at(&self, off: usize) -> Header {
        let buf = &self.buf;
        let mut p = off;
        let flags = buf[p];
        p += 1;
        let (dms, k) = get_varint(&buf[p..]);
        p += k;
        let (seq, k) = get_varint(&buf[p..]);
        p += k;
        let body = p;
        let skip = |p: &mut usize| {
            let (len, k) = get_varint(&buf[*p..]);
            *p += k + len;
        };
        if flags & FLAG_SAMEFIELDS != 0 {
            for _ in 0..self.master_count {
                skip(&mut p);
            }
        } else {
            let (n, k) = get_varint(&buf[p..]);
            p += k;
            for _ in 0..2 * n {
                skip(&mut p);
            }
        }
        Header {
            flags,
            id: StreamId::new(self.master.ms + dms as u64, seq as u64),
            body,
            end: p,
        }
    }

    fn headers_with_offsets(&self) -> impl Iterator<Item = (usize, Header)> + '_ {
        let mut off = self.records_at as usize;
        std::iter::from_fn(move || {
            if off >= self.buf.len() {
                return None;
            }
            let at = off;
            let h = self.header_at(off);
            off = h.end;
            Some((at, h))
        })
    }

    fn headers(&self) -> impl Iterator<Item = Header> + '_ {
        let mut off = self.records_at as usize;
        std::iter::from_fn(move || {
            if off >= self.buf.len() {
                return None;
            }
            let h = self.header_at(off);
            off = h.end;
            Some(h)
        })
    }

    /// The entry of a record found by [`Node::headers`].
    fn entry_of(&self, h: &Header) -> StreamEntry<'_> {
        let buf = &self.buf;
        let mut p = h.body;
        let mut pairs = Vec::new();
        if h.flags & FLAG_SAMEFIELDS != 0 {
            let (_, mut m) = get_varint(buf);
            pairs.reserve(self.master_count as usize);
            for _ in 0..self.master_count {
                let (fa, fb) = get_bytes(buf, &mut m);
                let (va, vb) = get_bytes(buf, &mut p);
                pairs.push((&buf[fa..fb], &buf[va..vb]));
            }
        } else {
            let (n, k) = get_varint(&buf[p..]);
            p += k;
            pairs.reserve(n);
            for _ in 0..n {
                let (fa, fb) = get_bytes(buf, &mut p);
                let (va, vb) = get_bytes(buf, &mut p);
                pairs.push((&buf[fa..fb], &buf[va..vb]));
            }
        }
        StreamEntry { id: h.id, pairs }
    }

    /// Marks the record at `off` deleted.
    fn mark_deleted(&mut self, off: usize) {
        self.buf[off] |= FLAG_DELETED;
        self.live -= 1;
        self.deleted += 1;
    }
}

/// An entry read from a stream: its ID and field-value pairs (borrowed from the node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEntry<'a> {
    pub id: StreamId,
    pub pairs: Vec<(&'a [u8], &'a [u8])>,
}

/// An entry with owned bytes (for replies written after the shard lock is released).
pub type OwnedEntry = (StreamId, Vec<(Vec<u8>, Vec<u8>)>);

/// A consumer's pending entry as a history read returns it: the entry's pairs, or None
/// if the entry was deleted meanwhile.
pub type PendingRead = (StreamId, Option<Vec<(Vec<u8>, Vec<u8>)>>);

/// A record as RESTORE hands it over: ID, deleted, pairs.
pub type RestoredRecord<'a> = (StreamId, bool, Vec<(&'a [u8], &'a [u8])>);

impl StreamEntry<'_> {
    pub fn to_owned_entry(&self) -> OwnedEntry {
        (
            self.id,
            self.pairs
                .iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect(),
        )
    }
}

// ----- consumer groups -----

/// t_stream.c's SCG_INVALID_ENTRIES_READ: a group's read counter is unknown.
pub const INVALID_ENTRIES_READ: i64 = -1;

/// A pending entry (streamNACK): delivered to `consumer`, not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    pub delivery_time: u64,
    pub delivery_count: u64,
    pub consumer: Box<[u8]>,
}

/// A consumer (streamConsumer): the IDs it owns and when it was last seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consumer {
    pub seen_time: u64,
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group (streamCG).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    /// The logical read counter, or [`INVALID_ENTRIES_READ`].
    pub entries_read: i64,
    pel: BTreeMap<StreamId, Nack>,
    consumers: BTreeMap<Box<[u8]>, Consumer>,
    /// Bytes of the consumers' names (PEL entries carry a copy each).
    name_bytes: usize,
}

/// Estimated heap bytes of one B-tree slot: the key and value plus the tree's share of
/// node overhead (a B-tree node holds up to 11 slots, about 2/3 full on average).
fn slot_bytes(key_value: usize) -> usize {
    key_value * 3 / 2 + 8
}

impl Group {
    fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
            name_bytes: 0,
        }
    }

    /// The group's PEL: pending IDs and their NACKs, in ID order.
    pub fn pel(&self) -> &BTreeMap<StreamId, Nack> {
        &self.pel
    }

    pub fn consumers(&self) -> &BTreeMap<Box<[u8]>, Consumer> {
        &self.consumers
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }

    fn bytes(&self) -> usize {
        let nack_slot = slot_bytes(16 + std::mem::size_of::<Nack>());
        let cpel_slot = slot_bytes(16);
        let consumer_slot = slot_bytes(16 + std::mem::size_of::<Consumer>());
        alloc_size(std::mem::size_of::<Group>())
            + self.pel.len() * (nack_slot + cpel_slot)
            + self.consumers.len() * consumer_slot
            + self.name_bytes
            + self
                .pel
                .values()
                .next()
                .map_or(0, |n| alloc_size(n.consumer.len()) * self.pel.len())
    }

    /// streamCreateConsumer: true if it was created (XGROUP CREATECONSUMER's 1).
    pub fn create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.name_bytes += alloc_size(name.len());
        self.consumers.insert(
            name.into(),
            Consumer {
                seen_time: now,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// streamLookupConsumer with a refresh: the consumer's seen time is now. Creates it if
    /// missing; returns whether it was created.
    pub fn touch_consumer(&mut self, name: &[u8], now: u64) -> bool {
        let created = self.create_consumer(name, now);
        if let Some(c) = self.consumers.get_mut(name) {
            c.seen_time = now;
        }
        created
    }

    /// streamDelConsumer: removes the consumer and its pending entries; the number of
    /// entries it had pending, or None if it did not exist.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        self.name_bytes -= alloc_size(name.len());
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// XACK of one ID: true if it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Records `id` as delivered to `consumer` now (streamReplyWithRange's NACK step):
    /// a new NACK, or the existing one moved to this consumer with its count reset.
    fn deliver(&mut self, id: StreamId, consumer: &[u8], now: u64) {
        if let Some(n) = self.pel.get_mut(&id) {
            if let Some(c) = self.consumers.get_mut(&n.consumer) {
                c.pel.remove(&id);
            }
            n.consumer = consumer.into();
            n.delivery_time = now;
            n.delivery_count = 1;
        } else {
            self.pel.insert(
                id,
                Nack {
                    delivery_time: now,
                    delivery_count: 1,
                    consumer: consumer.into(),
                },
            );
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// Drops a pending entry whose stream entry no longer exists (XCLAIM/XAUTOCLAIM).
    fn drop_pending(&mut self, id: StreamId) {
        self.ack(id);
    }

    /// XCLAIM's and XAUTOCLAIM's transfer of a pending (or, with FORCE, new) NACK to
    /// `consumer` (which must exist): sets its delivery time and count.
    fn claim(
        &mut self,
        id: StreamId,
        consumer: &[u8],
        delivery_time: u64,
        delivery_count: Option<u64>,
        increment: bool,
    ) {
        // streamCreateNACK starts a forced NACK at one delivery.
        let n = self.pel.entry(id).or_insert_with(|| Nack {
            delivery_time,
            delivery_count: 1,
            consumer: Box::default(),
        });
        if &*n.consumer != consumer {
            if let Some(c) = self.consumers.get_mut(&n.consumer) {
                c.pel.remove(&id);
            }
            n.consumer = consumer.into();
        }
        n.delivery_time = delivery_time;
        if let Some(cnt) = delivery_count {
            n.delivery_count = cnt;
        } else if increment {
            n.delivery_count += 1;
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}

// ----- the stream -----

/// What to trim to (XADD's and XTRIM's MAXLEN / MINID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// How XADD's ID was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddId {
    /// `*`.
    Auto,
    /// `<ms>-*`.
    AutoSeq(u64),
    /// `<ms>-<seq>` (or `<ms>`).
    Explicit(StreamId),
}

/// Why XADD cannot add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddIdError {
    /// The stream's last ID is the last possible one.
    Exhausted,
    /// The ID is not greater than the stream's last ID.
    TooSmall,
    /// `<ms>-*` with `<ms>` the last ID's and its sequence the last possible one.
    SeqOverflow,
}

/// A stream: entries, IDs, counters and consumer groups (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    length: u64,
    last_id: StreamId,
    first_id: StreamId,
    max_deleted_id: StreamId,
    entries_added: u64,
    groups: BTreeMap<Box<[u8]>, Group>,
    node_bytes: usize,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Entries (XLEN).
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// recorded-first-entry-id (0-0 when empty).
    pub fn first_id(&self) -> StreamId {
        self.first_id
    }

    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted_id
    }

    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// The nodes' master IDs, in order (the radix tree's keys).
    pub fn node_keys(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.nodes.keys().copied()
    }

    /// Nodes (XINFO's radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    /// Heap bytes (see the module documentation). O(groups).
    pub fn bytes(&self) -> usize {
        self.node_bytes
            + self.nodes.len() * slot_bytes(16 + std::mem::size_of::<Node>())
            + self
                .groups
                .iter()
                .map(|(n, g)| {
                    alloc_size(n.len()) + slot_bytes(16 + std::mem::size_of::<Group>()) + g.bytes()
                })
                .sum::<usize>()
    }

    /// The ID XADD would add under `spec` (streamNextID / streamAppendItem's checks).
    pub fn next_add_id(&self, spec: AddId, now_ms: u64) -> Result<StreamId, AddIdError> {
        if self.last_id == StreamId::MAX {
            return Err(AddIdError::Exhausted);
        }
        let last = self.last_id;
        match spec {
            AddId::Auto => {
                if now_ms > last.ms {
                    Ok(StreamId::new(now_ms, 0))
                } else {
                    last.next().ok_or(AddIdError::Exhausted)
                }
            }
            AddId::AutoSeq(ms) => {
                if ms == last.ms {
                    if last.seq == u64::MAX {
                        Err(AddIdError::SeqOverflow)
                    } else {
                        Ok(StreamId::new(ms, last.seq + 1))
                    }
                } else if ms > last.ms {
                    Ok(StreamId::new(ms, 0))
                } else {
                    Err(AddIdError::TooSmall)
                }
            }
            AddId::Explicit(id) => {
                if id > last {
                    Ok(id)
                } else {
                    Err(AddIdError::TooSmall)
                }
            }
        }
    }

    /// streamAppendItem: adds an entry with an ID from [`Stream::next_add_id`].
    pub fn append(&mut self, id: StreamId, pairs: &[(&[u8], &[u8])], lim: NodeLimits) {
        let total: usize = pairs.iter().map(|(f, v)| f.len() + v.len()).sum();
        let max_bytes = if lim.max_bytes == 0 || lim.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            lim.max_bytes
        };
        let fits = self.nodes.last_key_value().is_some_and(|(_, n)| {
            !(n.lp_bytes() + total >= max_bytes
                || (lim.max_entries != 0 && (n.live + n.deleted) as usize >= lim.max_entries))
        });
        if !fits {
            let fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| *f).collect();
            let node = Node::new(id, &fields);
            self.node_bytes += node.bytes();
            self.nodes.insert(id, node);
        }
        let node = self
            .nodes
            .values_mut()
            .next_back()
            .expect("a node to append to");
        let before = node.bytes();
        node.append(id, pairs);
        self.node_bytes = self.node_bytes + node.bytes() - before;
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// The node that may hold `id`: the last whose master ID is at most `id`.
    fn node_key_at_or_before(&self, id: StreamId) -> Option<StreamId> {
        self.nodes.range(..=id).next_back().map(|(k, _)| *k)
    }

    /// Live entries with IDs in `start..=end`, in order (or reversed), at most `count`
    /// (0: all).
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        count: usize,
    ) -> Vec<StreamEntry<'_>> {
        let mut out = Vec::new();
        if start > end {
            return out;
        }
        let first_key = self.node_key_at_or_before(start).unwrap_or(start);
        let full = |out: &Vec<StreamEntry<'_>>| count != 0 && out.len() >= count;
        if !rev {
            for (_, node) in self.nodes.range(first_key..=end) {
                if node.last_id < start {
                    continue;
                }
                for h in node.headers() {
                    if h.flags & FLAG_DELETED != 0 || h.id < start {
                        continue;
                    }
                    if h.id > end {
                        return out;
                    }
                    out.push(node.entry_of(&h));
                    if full(&out) {
                        return out;
                    }
                }
            }
        } else {
            let mut hs: Vec<Header> = Vec::new();
            for (_, node) in self.nodes.range(first_key..=end).rev() {
                if node.last_id < start {
                    return out;
                }
                hs.clear();
                hs.extend(node.headers());
                for h in hs.iter().rev() {
                    if h.flags & FLAG_DELETED != 0 || h.id > end {
                        continue;
                    }
                    if h.id < start {
                        return out;
                    }
                    out.push(node.entry_of(h));
                    if full(&out) {
                        return out;
                    }
                }
            }
        }
        out
    }

    /// The live entry with this ID.
    pub fn get(&self, id: StreamId) -> Option<StreamEntry<'_>> {
        self.range(id, id, false, 1).pop()
    }

    /// streamEntryExists.
    pub fn contains(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    /// The first or last live entry (XINFO's first-entry / last-entry).
    pub fn edge(&self, last: bool) -> Option<StreamEntry<'_>> {
        self.range(StreamId::MIN, StreamId::MAX, last, 1).pop()
    }

    /// streamDeleteItem without XDEL's bookkeeping: true if the entry was live.
    fn remove_entry(&mut self, id: StreamId) -> bool {
        let Some(key) = self.node_key_at_or_before(id) else {
            return false;
        };
        let node = self.nodes.get_mut(&key).expect("key from the map");
        let Some(off) = node
            .headers_with_offsets()
            .find(|(_, h)| h.id == id && h.flags & FLAG_DELETED == 0)
            .map(|(off, _)| off)
        else {
            return false;
        };
        self.length -= 1;
        if node.live == 1 {
            self.node_bytes -= node.bytes();
            self.nodes.remove(&key);
        } else {
            node.mark_deleted(off);
        }
        true
    }

    /// The first live entry's ID, or 0-0 (streamGetEdgeID(first) for first_id).
    fn refresh_first_id(&mut self) {
        self.first_id = if self.length == 0 {
            StreamId::MIN
        } else {
            self.edge(false).map_or(StreamId::MIN, |e| e.id)
        };
    }

    /// XDEL: deletes the listed entries; how many were live. Updates
    /// max-deleted-entry-id and recorded-first-entry-id as Redis 7.0 does.
    pub fn delete(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first = false;
        for &id in ids {
            if self.remove_entry(id) {
                deleted += 1;
                if id > self.max_deleted_id {
                    self.max_deleted_id = id;
                }
                if id == self.first_id {
                    first = true;
                }
            }
        }
        if deleted > 0 && (first || self.length == 0) {
            self.refresh_first_id();
        }
        deleted
    }

    /// streamTrim: removes entries from the head down to `to`; with `approx` whole
    /// nodes only; at most `limit` entries (0: no limit; only with `approx`). Returns
    /// how many were removed.
    pub fn trim(&mut self, to: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        loop {
            if let Trim::MaxLen(max) = to {
                if self.length <= max {
                    break;
                }
            }
            let Some((&key, node)) = self.nodes.first_key_value() else {
                break;
            };
            let entries = node.live as u64;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove = match to {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.last_id < min,
            };
            if remove {
                self.node_bytes -= node.bytes();
                self.nodes.remove(&key);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let node = self.nodes.get_mut(&key).expect("first node");
            let records: Vec<(usize, Header)> = node.headers_with_offsets().collect();
            for (off, r) in records {
                if r.flags & FLAG_DELETED != 0 {
                    continue;
                }
                let stop = match to {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => r.id >= min,
                };
                if stop {
                    break;
                }
                node.mark_deleted(off);
                self.length -= 1;
                deleted += 1;
            }
            break;
        }
        if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
    }

    /// XSETID's changes (the caller checked Redis's conditions).
    pub fn set_ids(
        &mut self,
        last: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) {
        self.last_id = last;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(m) = max_deleted {
            self.max_deleted_id = m;
        }
    }

    /// The last live entry's ID, or 0-0 (streamLastValidID).
    pub fn last_valid_id(&self) -> StreamId {
        self.edge(true).map_or(StreamId::MIN, |e| e.id)
    }

    // ----- groups -----

    pub fn groups(&self) -> &BTreeMap<Box<[u8]>, Group> {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    /// streamCreateCG: false if the name is taken.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups
            .insert(name.into(), Group::new(last_id, entries_read));
        true
    }

    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }

    /// streamRangeHasTombstones.
    fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// streamEstimateDistanceFromFirstEverEntry: `id`'s logical read counter, or
    /// [`INVALID_ENTRIES_READ`] when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        } else if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted_id == StreamId::MIN || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            } else if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// streamReplyWithCGLag: the group's lag, None when it cannot be known.
    pub fn group_lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ && !self.range_has_tombstones(g.last_id) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        (read != INVALID_ENTRIES_READ).then(|| self.entries_added as i64 - read)
    }

    /// XREADGROUP `>`: up to `count` (0: all) entries after the group's last ID,
    /// delivered to `consumer`, added to the PELs unless `noack`, the group's last ID
    /// and read counter advanced (streamReplyWithRange with a group). The consumer is
    /// created and its seen time refreshed only when there is something to deliver (a
    /// read that finds nothing creates none, as in Redis); the flag says it was created.
    pub fn read_group_new(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        count: usize,
        noack: bool,
        now: u64,
    ) -> (Vec<OwnedEntry>, bool) {
        let Some(g) = self.groups.get(group) else {
            return (Vec::new(), false);
        };
        let Some(start) = g.last_id.next() else {
            return (Vec::new(), false);
        };
        let entries: Vec<OwnedEntry> = self
            .range(start, StreamId::MAX, false, count)
            .iter()
            .map(|e| e.to_owned_entry())
            .collect();
        let created = !entries.is_empty()
            && self
                .groups
                .get_mut(group)
                .is_some_and(|g| g.touch_consumer(consumer, now));
        for (id, _) in &entries {
            let id = *id;
            let tomb = self.range_has_tombstones(id);
            let est = self.estimate_distance(id);
            let added = self.entries_added;
            let g = self.groups.get_mut(group).expect("group checked above");
            if id > g.last_id {
                if g.entries_read != INVALID_ENTRIES_READ && !tomb {
                    g.entries_read += 1;
                } else if added != 0 {
                    g.entries_read = est;
                }
                g.last_id = id;
            }
            if !noack {
                g.deliver(id, consumer, now);
            }
        }
        (entries, created)
    }

    /// XREADGROUP with an ID: the consumer's pending entries after `start`, at most
    /// `count` (0: all): each with its entry, or None if the entry was deleted; the
    /// delivered ones have their delivery time set to `now` and count incremented
    /// (streamReplyWithRangeFromConsumerPEL).
    pub fn read_group_history(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        count: usize,
        now: u64,
    ) -> Vec<PendingRead> {
        let ids: Vec<StreamId> = match self
            .groups
            .get(group)
            .and_then(|g| g.consumers.get(consumer))
        {
            Some(c) => c
                .pel
                .range(start..)
                .take(if count == 0 { usize::MAX } else { count })
                .copied()
                .collect(),
            None => return Vec::new(),
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let entry = self.get(id).map(|e| e.to_owned_entry().1);
            if entry.is_some() {
                if let Some(n) = self.groups.get_mut(group).and_then(|g| g.pel.get_mut(&id)) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
            out.push((id, entry));
        }
        out
    }

    /// XCLAIM over `ids` (see t_stream.c's xclaimCommand). Returns the claimed IDs with
    /// their entries (None when the entry is gone: never returned, kept for symmetry).
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        min_idle: u64,
        delivery_time: u64,
        retry_count: Option<u64>,
        force: bool,
        justid: bool,
        now: u64,
    ) -> Vec<OwnedEntry> {
        let mut out = Vec::new();
        let mut consumer_ready = false;
        for &id in ids {
            let exists = self.contains(id);
            let entry = if exists && !justid {
                self.get(id).map(|e| e.to_owned_entry())
            } else {
                None
            };
            let g = self
                .groups
                .get_mut(group)
                .expect("the caller checked the group");
            if !exists {
                g.drop_pending(id);
                continue;
            }
            let pending = g.pel.get(&id);
            let forced = pending.is_none();
            if forced && !force {
                continue;
            }
            if let Some(n) = pending {
                if min_idle > 0 && now.saturating_sub(n.delivery_time) < min_idle {
                    continue;
                }
            }
            if !consumer_ready {
                g.touch_consumer(consumer, now);
                consumer_ready = true;
            }
            g.claim(id, consumer, delivery_time, retry_count, !justid);
            out.push(entry.unwrap_or((id, Vec::new())));
        }
        out
    }

    /// XAUTOCLAIM (t_stream.c's xautoclaimCommand): claims up to `count` pending entries
    /// from `start` idle at least `min_idle`, examining at most `count * 10`. Returns the
    /// next cursor (0-0 at the end), the claimed entries and the IDs whose entries were
    /// deleted (dropped from the PEL).
    #[allow(clippy::too_many_arguments)]
    pub fn autoclaim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
        count: u64,
        min_idle: u64,
        justid: bool,
        now: u64,
    ) -> (StreamId, Vec<OwnedEntry>, Vec<StreamId>) {
        let mut attempts = count.saturating_mul(10);
        let mut count = count;
        let mut claimed = Vec::new();
        let mut deleted = Vec::new();
        let mut consumer_ready = false;
        let mut cursor = start;
        let mut last_seen: Option<StreamId> = None;
        loop {
            // while (attempts-- && count && raxNext(&ri))
            if attempts == 0 {
                break;
            }
            attempts -= 1;
            if count == 0 {
                break;
            }
            let g = self
                .groups
                .get(group)
                .expect("the caller checked the group");
            let next = g
                .pel
                .range(cursor..)
                .next()
                .map(|(id, n)| (*id, n.delivery_time));
            let Some((id, delivered)) = next else {
                last_seen = None;
                cursor = StreamId::MAX;
                break;
            };
            last_seen = Some(id);
            cursor = match id.next() {
                Some(n) => n,
                None => {
                    // The last possible ID: nothing can follow it.
                    StreamId::MAX
                }
            };
            if !self.contains(id) {
                self.groups.get_mut(group).unwrap().drop_pending(id);
                deleted.push(id);
                count -= 1;
                continue;
            }
            if min_idle > 0 && now.saturating_sub(delivered) < min_idle {
                continue;
            }
            let entry = if justid {
                (id, Vec::new())
            } else {
                self.get(id).expect("checked above").to_owned_entry()
            };
            let g = self.groups.get_mut(group).unwrap();
            if !consumer_ready {
                g.touch_consumer(consumer, now);
                consumer_ready = true;
            }
            g.claim(id, consumer, now, None, !justid);
            claimed.push(entry);
            count -= 1;
        }
        // raxNext after the loop: the entry after the last one examined.
        let next = match last_seen {
            None => None,
            Some(id) => {
                let g = self.groups.get(group).unwrap();
                g.pel
                    .range((std::ops::Bound::Excluded(id), std::ops::Bound::Unbounded))
                    .next()
                    .map(|(k, _)| *k)
            }
        };
        let _ = cursor;
        (next.unwrap_or(StreamId::MIN), claimed, deleted)
    }
}

/// Logical equality: the same live entries, IDs, counters and groups (node layout and
/// deleted records aside).
impl PartialEq for Stream {
    fn eq(&self, o: &Stream) -> bool {
        let all = |s: &Stream| -> Vec<OwnedEntry> {
            s.range(StreamId::MIN, StreamId::MAX, false, 0)
                .iter()
                .map(|e| e.to_owned_entry())
                .collect()
        };
        self.length == o.length
            && self.last_id == o.last_id
            && self.first_id == o.first_id
            && self.max_deleted_id == o.max_deleted_id
            && self.entries_added == o.entries_added
            && self.groups == o.groups
            && all(self) == all(o)
    }
}

/// A node as DUMP writes it: Redis's listpack layout (master entry, then records).
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    pub master: StreamId,
    pub master_fields: Vec<&'a [u8]>,
    pub live: u32,
    pub deleted: u32,
    pub records: Vec<RecordView<'a>>,
}

/// One record of a [`NodeView`].
#[derive(Debug, Clone)]
pub struct RecordView<'a> {
    pub id: StreamId,
    pub deleted: bool,
    pub same_fields: bool,
    pub pairs: Vec<(&'a [u8], &'a [u8])>,
}

impl Stream {
    /// Every node, for DUMP.
    pub fn node_views(&self) -> Vec<NodeView<'_>> {
        self.nodes
            .values()
            .map(|n| NodeView {
                master: n.master,
                master_fields: n
                    .master_fields()
                    .iter()
                    .map(|&(a, b)| &n.buf[a..b])
                    .collect(),
                live: n.live,
                deleted: n.deleted,
                records: n
                    .headers()
                    .map(|r| RecordView {
                        id: r.id,
                        deleted: r.flags & FLAG_DELETED != 0,
                        same_fields: r.flags & FLAG_SAMEFIELDS != 0,
                        pairs: n.entry_of(&r).pairs,
                    })
                    .collect(),
            })
            .collect()
    }

    /// RESTORE: appends a whole node as the payload had it (`records`: ID, deleted,
    /// pairs). False, with nothing changed, unless every ID is above the last one, the
    /// first is the master ID or later, and there is at least one record.
    pub fn restore_node(
        &mut self,
        master: StreamId,
        master_fields: &[&[u8]],
        records: &[RestoredRecord<'_>],
    ) -> bool {
        let mut prev = self.nodes.values().next_back().map(|n| n.last_id);
        for (id, _, _) in records {
            if prev.is_some_and(|p| *id <= p) || *id < master {
                return false;
            }
            prev = Some(*id);
        }
        // (A node may hold no live entry: exact MINID trimming can delete the last live
        // ones of a node whose last record was deleted before, and Redis keeps it.)
        if records.is_empty() {
            return false;
        }
        let mut node = Node::new(master, master_fields);
        for (id, deleted, pairs) in records {
            let off = node.buf.len();
            node.append(*id, pairs);
            if *deleted {
                node.mark_deleted(off);
            }
        }
        self.length += node.live as u64;
        self.node_bytes += node.bytes();
        self.nodes.insert(master, node);
        true
    }

    /// RESTORE: the stream's IDs and counters (RDB's length, last ID, first ID,
    /// max-deleted-entry-id and entries-added). False if the length is not the live
    /// entries' count or the last ID is below the last entry's.
    pub fn restore_meta(
        &mut self,
        length: u64,
        last: StreamId,
        first: StreamId,
        max_deleted: StreamId,
        entries_added: u64,
    ) -> bool {
        if length != self.length || last < self.last_valid_id() {
            return false;
        }
        self.last_id = last;
        self.first_id = first;
        self.max_deleted_id = max_deleted;
        self.entries_added = entries_added;
        true
    }

    /// RESTORE: a group with its PEL (ID, delivery time, delivery count) and consumers
    /// (name, seen time, owned IDs). False if the name is taken, a consumer owns an ID
    /// missing from the PEL or owned twice, or a PEL ID has no owner.
    #[allow(clippy::type_complexity)]
    pub fn restore_group(
        &mut self,
        name: &[u8],
        last_id: StreamId,
        entries_read: i64,
        pel: &[(StreamId, u64, u64)],
        consumers: &[(Vec<u8>, u64, Vec<StreamId>)],
    ) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        let mut g = Group::new(last_id, entries_read);
        let mut nacks: BTreeMap<StreamId, (u64, u64)> = BTreeMap::new();
        for &(id, t, n) in pel {
            if nacks.insert(id, (t, n)).is_some() {
                return false;
            }
        }
        for (cname, seen, ids) in consumers {
            if !g.create_consumer(cname, *seen) {
                return false;
            }
            for id in ids {
                let Some((t, n)) = nacks.remove(id) else {
                    return false;
                };
                g.pel.insert(
                    *id,
                    Nack {
                        delivery_time: t,
                        delivery_count: n,
                        consumer: cname.as_slice().into(),
                    },
                );
                g.consumers
                    .get_mut(cname.as_slice())
                    .unwrap()
                    .pel
                    .insert(*id);
            }
        }
        if !nacks.is_empty() {
            return false;
        }
        self.groups.insert(name.into(), g);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap as Model;

    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    #[test]
    fn listpack_sizes_are_redis_encodings() {
        // 7-bit uint, 13-bit, 16-bit, 24-bit, 32-bit, 64-bit ints with their back-length.
        assert_eq!(lp_int_size(0), 2);
        assert_eq!(lp_int_size(127), 2);
        assert_eq!(lp_int_size(128), 3);
        assert_eq!(lp_int_size(-4096), 3);
        assert_eq!(lp_int_size(4096), 4);
        assert_eq!(lp_int_size(40_000), 5);
        assert_eq!(lp_int_size(1 << 30), 6);
        assert_eq!(lp_int_size(1 << 40), 10);
        // Strings: 6-bit length up to 63, 12-bit up to 4095, then 32-bit; a canonical
        // integer is stored as one.
        assert_eq!(lp_str_size(b"abc"), 5);
        assert_eq!(lp_str_size(b"12"), 2);
        assert_eq!(lp_str_size(b"012"), 5);
        assert_eq!(lp_str_size(&[b'x'; 63]), 65);
        assert_eq!(lp_str_size(&[b'x'; 64]), 67);
        assert_eq!(lp_str_size(&[b'x'; 200]), 204);
    }

    #[test]
    fn ids_step_and_encode() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        let id = StreamId::new(0x0102, 7);
        assert_eq!(StreamId::decode(&id.encode()), id);
    }

    #[test]
    fn nodes_close_at_the_entry_limit_as_redis_does() {
        let mut s = Stream::new();
        let lim = NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        };
        for i in 1..=1000u64 {
            s.append(StreamId::new(i, 0), &[(b"item", b"1")], lim);
        }
        assert_eq!(s.node_count(), 10);
        // XADD ... MAXLEN ~ 555 leaves 600 (redis-server's answer in unit/type/stream).
        assert_eq!(s.trim(Trim::MaxLen(555), true, 10_000), 400);
        assert_eq!(s.len(), 600);
        assert_eq!(s.first_id(), StreamId::new(401, 0));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(u8, u8),
        Del(u16),
        MaxLen(u8, bool),
        MinId(u16, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..4, 0u8..40).prop_map(|(f, v)| Op::Add(f, v)),
            2 => (0u16..400).prop_map(Op::Del),
            1 => (0u8..50, any::<bool>()).prop_map(|(n, a)| Op::MaxLen(n, a)),
            1 => (0u16..400, any::<bool>()).prop_map(|(n, a)| Op::MinId(n, a)),
        ]
    }

    proptest! {
        /// Appends, deletes and trims against an ordered map: the same live entries in
        /// both directions, the same length and first ID; approximate trimming removes
        /// no more than exact trimming would; nodes stay within the entry limit.
        #[test]
        fn matches_an_ordered_map(ops in prop::collection::vec(op(), 1..300), max_entries in 1usize..8, max_bytes in prop_oneof![Just(0usize), Just(60), Just(4096)]) {
            let lim = NodeLimits { max_bytes, max_entries };
            let mut s = Stream::new();
            let mut m: Model<StreamId, Pairs> = Model::new();
            let mut next = 1u64;
            for o in ops {
                match o {
                    Op::Add(f, v) => {
                        let id = StreamId::new(next, (v % 3) as u64);
                        next += 1;
                        let field = vec![b'a' + f];
                        let value = vec![b'v'; v as usize];
                        let mut pairs = vec![(field.clone(), value.clone())];
                        if f == 3 {
                            pairs.push((b"x".to_vec(), b"12".to_vec()));
                        }
                        let borrowed: Vec<(&[u8], &[u8])> = pairs.iter().map(|(a, b)| (a.as_slice(), b.as_slice())).collect();
                        prop_assert_eq!(s.next_add_id(AddId::Explicit(id), 0), Ok(id));
                        s.append(id, &borrowed, lim);
                        m.insert(id, pairs);
                    }
                    Op::Del(k) => {
                        let id = StreamId::new(k as u64, 0);
                        let had = m.remove(&id).is_some();
                        prop_assert_eq!(s.delete(&[id]), had as u64);
                    }
                    Op::MaxLen(n, approx) => {
                        let before = m.len() as u64;
                        let removed = s.trim(Trim::MaxLen(n as u64), approx, 0);
                        let exact = before.saturating_sub(n as u64);
                        if approx {
                            prop_assert!(removed <= exact);
                        } else {
                            prop_assert_eq!(removed, exact);
                        }
                        for _ in 0..removed {
                            let k = *m.keys().next().unwrap();
                            m.remove(&k);
                        }
                    }
                    Op::MinId(k, approx) => {
                        let min = StreamId::new(k as u64, 0);
                        let exact = m.range(..min).count() as u64;
                        let removed = s.trim(Trim::MinId(min), approx, 0);
                        if approx {
                            prop_assert!(removed <= exact);
                        } else {
                            prop_assert_eq!(removed, exact);
                        }
                        for _ in 0..removed {
                            let k = *m.keys().next().unwrap();
                            m.remove(&k);
                        }
                    }
                }
                prop_assert_eq!(s.len(), m.len() as u64);
                let want: Vec<OwnedEntry> = m.iter().map(|(k, v)| (*k, v.clone())).collect();
                let got: Vec<OwnedEntry> = s.range(StreamId::MIN, StreamId::MAX, false, 0).iter().map(|e| e.to_owned_entry()).collect();
                prop_assert_eq!(&got, &want);
                let mut rev: Vec<OwnedEntry> = s.range(StreamId::MIN, StreamId::MAX, true, 0).iter().map(|e| e.to_owned_entry()).collect();
                rev.reverse();
                prop_assert_eq!(&rev, &want);
                prop_assert_eq!(s.first_id(), m.keys().next().copied().unwrap_or(StreamId::MIN));
                for v in s.node_views() {
                    prop_assert!((v.live + v.deleted) as usize <= max_entries.max(1));
                }
            }
        }
    }
}
