//! Lists: the value of Redis's list type, kept as ONE object behind its key's entry
//! (like hashes and sets, see `object`). Mirrors Redis 7.0's quicklist (quicklist.c),
//! which t_list.c drives.
//!
//! # Layout, and why
//!
//! A list is a deque of *nodes*, each one buffer of packed elements (`varint(length)
//! bytes`, one after the other), as a quicklist is a doubly linked list of listpacks.
//! Packing is what makes a list of small elements cheap: a one-block-per-element deque
//! would spend a pointer, a length and a jemalloc block (at least 8 bytes, rounded up to
//! its size class) per element; a node spends one block per up to 8 KB of elements.
//! Pushes and pops at either end touch only the end node (a push at the head moves that
//! node's bytes, at most the fill limit, as listpack's insert does); LINDEX and LSET
//! walk the nodes from the nearer end by their counts, as quicklist does.
//!
//! # Fill (`list-max-listpack-size`, alias `list-max-ziplist-size`)
//!
//! Redis's rule (quicklist.c, `_quicklistNodeAllowInsert` and `optimization_level`): a
//! negative fill -1..-5 bounds a node's bytes at 4, 8, 16, 32 or 64 KB (values below -5
//! act as -5); a positive fill bounds its element count (and its bytes at 8 KB,
//! `SIZE_SAFETY_LIMIT`). An element larger than the bound gets a node of its own.
//! Default -2 (8 KB), Redis's default.
//!
//! # Compression (`list-compress-depth`)
//!
//! As quicklist.c does with LZF, the nodes more than `depth` nodes from either end are
//! kept compressed (LZ4 blocks, liblz4 as the Z-zone uses it), decompressed while an
//! operation works in them and compressed again after it: a list used as a queue or a
//! stack only touches its end nodes, which stay raw. As in Redis, a node under 48 bytes
//! or one that would not shrink by at least 8 bytes stays raw (and is not tried again
//! until it changes). Depth 0 (the default) compresses nothing.
//!
//! # Memory
//!
//! [`List::bytes`] is jemalloc's size class of every allocation the list owns (the node
//! deque and each node's buffer at its real capacity); buffers grow to exactly the size
//! class they need, so capacity is never more than a class above what they hold.

use crate::object::{alloc_size, get_varint, put_varint, varint_len};
use std::borrow::Cow;
use std::collections::VecDeque;

/// Redis's default `list-max-listpack-size`: nodes of at most 8 KB.
pub const DEFAULT_LIST_FILL: i64 = -2;

/// quicklist.c's SIZE_SAFETY_LIMIT: the byte bound of a node under a count fill.
const SIZE_SAFETY_LIMIT: usize = 8192;

/// quicklist.c's FILL_MAX: larger count fills act as this.
const FILL_MAX: i64 = (1 << 15) - 1;

/// quicklist.c's MIN_COMPRESS_BYTES and MIN_COMPRESS_IMPROVE.
const MIN_COMPRESS_BYTES: usize = 48;
const MIN_COMPRESS_IMPROVE: usize = 8;

/// A node's `raw_len` when it is raw and compressing it was tried and did not pay.
const INCOMPRESSIBLE: u32 = u32::MAX;

/// How a list lays out its nodes: `list-max-listpack-size` (the fill) and
/// `list-compress-depth`. A plain fill converts to a shape without compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListShape {
    pub fill: i64,
    pub compress_depth: u32,
}

impl From<i64> for ListShape {
    fn from(fill: i64) -> ListShape {
        ListShape {
            fill,
            compress_depth: 0,
        }
    }
}

/// Which end of a list (LEFT / RIGHT in the commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

impl End {
    pub fn other(self) -> End {
        match self {
            End::Head => End::Tail,
            End::Tail => End::Head,
        }
    }
}

/// A node's bounds under `fill`: (most elements, most bytes).
fn node_bounds(fill: i64) -> (usize, usize) {
    if fill >= 0 {
        (fill.clamp(1, FILL_MAX) as usize, SIZE_SAFETY_LIMIT)
    } else {
        let level = (-fill).min(5) as u32;
        (usize::MAX, 4096usize << (level - 1))
    }
}

/// One packed buffer of elements, or its LZ4 block.
#[derive(Debug, Clone, Default)]
struct Node {
    buf: Vec<u8>,
    count: u32,
    /// 0: `buf` holds the records; INCOMPRESSIBLE: it does, and compressing them did not
    /// pay; otherwise `buf` is their LZ4 block, which expands to this many bytes.
    raw_len: u32,
}

/// The bytes of one element's record.
fn record_len(v: &[u8]) -> usize {
    varint_len(v.len()) + v.len()
}

fn push_record(out: &mut Vec<u8>, v: &[u8]) {
    put_varint(out, v.len());
    out.extend_from_slice(v);
}

/// The record at `off` of `buf`: (element, offset of the next record).
#[inline]
fn record_at(buf: &[u8], off: usize) -> (&[u8], usize) {
    let (len, n) = get_varint(&buf[off..]);
    let start = off + n;
    (&buf[start..start + len], start + len)
}

impl Node {
    fn of(v: &[u8]) -> Node {
        let mut buf = Vec::with_capacity(alloc_size(record_len(v)));
        push_record(&mut buf, v);
        Node {
            buf,
            count: 1,
            raw_len: 0,
        }
    }

    fn is_compressed(&self) -> bool {
        self.raw_len != 0 && self.raw_len != INCOMPRESSIBLE
    }

    /// The bytes of its records, compressed or not.
    fn raw_size(&self) -> usize {
        if self.is_compressed() {
            self.raw_len as usize
        } else {
            self.buf.len()
        }
    }

    /// Its records, decompressed if need be.
    fn raw(&self) -> std::borrow::Cow<'_, [u8]> {
        if !self.is_compressed() {
            return std::borrow::Cow::Borrowed(&self.buf);
        }
        let mut out = Vec::with_capacity(self.raw_len as usize);
        let ok =
            crate::zzone::lz4c::decompress_append(&self.buf, self.raw_len as usize, &[], &mut out);
        assert!(ok, "a list node's own LZ4 block decodes");
        std::borrow::Cow::Owned(out)
    }

    /// Decompresses in place (before an operation works in the node).
    fn thaw(&mut self) {
        if self.is_compressed() {
            let raw = self.raw().into_owned();
            let mut buf = Vec::with_capacity(alloc_size(raw.len()));
            buf.extend_from_slice(&raw);
            self.buf = buf;
            self.raw_len = 0;
        }
    }

    /// Compresses in place if that pays (quicklist.c's __quicklistCompressNode rules).
    fn freeze(&mut self) {
        if self.raw_len != 0 || self.buf.len() < MIN_COMPRESS_BYTES {
            return;
        }
        let mut out = Vec::new();
        match crate::zzone::lz4c::compress_append(&self.buf, None, &mut out) {
            Some(n) if n + MIN_COMPRESS_IMPROVE < self.buf.len() => {
                let mut buf = Vec::with_capacity(alloc_size(n));
                buf.extend_from_slice(&out);
                self.raw_len = self.buf.len() as u32;
                self.buf = buf;
            }
            _ => self.raw_len = INCOMPRESSIBLE,
        }
    }

    fn bytes(&self) -> usize {
        alloc_size(self.buf.capacity())
    }

    fn elems(&self) -> NodeIter<'_> {
        debug_assert!(!self.is_compressed(), "records are read from a raw node");
        NodeIter {
            buf: &self.buf,
            off: 0,
        }
    }

    /// (start, end) of the `k`-th record.
    fn locate(&self, k: usize) -> (usize, usize) {
        debug_assert!(!self.is_compressed(), "records are read from a raw node");
        let mut off = 0;
        for _ in 0..k {
            off = record_at(&self.buf, off).1;
        }
        (off, record_at(&self.buf, off).1)
    }

    fn get(&self, k: usize) -> &[u8] {
        let (start, _) = self.locate(k);
        record_at(&self.buf, start).0
    }

    /// Whether `v` may join this node under `bounds` (an empty node takes anything).
    fn allows(&self, v: &[u8], (max_count, max_bytes): (usize, usize)) -> bool {
        self.count == 0
            || ((self.count as usize) < max_count && self.raw_size() + record_len(v) <= max_bytes)
    }

    /// Room for `extra` more bytes, growing to exactly the size class needed.
    fn reserve(&mut self, extra: usize) {
        let need = self.buf.len() + extra;
        if need > self.buf.capacity() {
            self.buf.reserve_exact(alloc_size(need) - self.buf.len());
        }
    }

    /// Gives back a buffer at least twice as large as what it holds.
    fn trim_capacity(&mut self) {
        if self.buf.capacity() > 64 && self.buf.capacity() >= 2 * self.buf.len() {
            self.buf.shrink_to(alloc_size(self.buf.len().max(1)));
        }
    }

    /// Replaces bytes `range` with the record of `v` (an insertion if the range is
    /// empty).
    fn splice_record(&mut self, range: std::ops::Range<usize>, v: &[u8]) {
        let mut rec = Vec::with_capacity(record_len(v));
        push_record(&mut rec, v);
        let removed = range.len();
        if rec.len() > removed {
            self.reserve(rec.len() - removed);
        }
        self.buf.splice(range, rec);
    }

    /// Keeps the records for which `keep(index, element)` holds; how many were dropped.
    fn retain(&mut self, mut keep: impl FnMut(usize, &[u8]) -> bool) -> usize {
        let mut out: Option<Vec<u8>> = None;
        let mut off = 0;
        let mut i = 0;
        let mut dropped = 0;
        while off < self.buf.len() {
            let (v, next) = record_at(&self.buf, off);
            if keep(i, v) {
                if let Some(out) = out.as_mut() {
                    out.extend_from_slice(&self.buf[off..next]);
                }
            } else {
                dropped += 1;
                if out.is_none() {
                    let mut o = Vec::with_capacity(alloc_size(self.buf.len()));
                    o.extend_from_slice(&self.buf[..off]);
                    out = Some(o);
                }
            }
            off = next;
            i += 1;
        }
        if let Some(out) = out {
            self.buf = out;
            self.count -= dropped as u32;
            self.trim_capacity();
        }
        dropped
    }

    /// Splits off the records from the `k`-th on into a new node.
    fn split_off(&mut self, k: usize) -> Node {
        let (at, _) = self.locate(k);
        let tail = self.buf[at..].to_vec();
        self.buf.truncate(at);
        let moved = self.count - k as u32;
        self.count = k as u32;
        self.trim_capacity();
        let mut buf = Vec::with_capacity(alloc_size(tail.len()));
        buf.extend_from_slice(&tail);
        Node {
            buf,
            count: moved,
            raw_len: 0,
        }
    }
}

struct NodeIter<'a> {
    buf: &'a [u8],
    off: usize,
}

impl<'a> Iterator for NodeIter<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.off >= self.buf.len() {
            return None;
        }
        let (v, next) = record_at(self.buf, self.off);
        self.off = next;
        Some(v)
    }
}

/// A list (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
    /// Sum of the nodes' buffer size classes.
    node_bytes: usize,
    /// `list-compress-depth` as of the last operation that named a shape.
    compress_depth: u32,
}

/// The elements from the head, or from an index on ([`List::iter_from`]): borrowed
/// from raw nodes, copied out of compressed ones.
pub struct ListIter<'a> {
    nodes: std::collections::vec_deque::Iter<'a, Node>,
    current: Option<NodeIter<'a>>,
    /// A compressed node, decompressed, and the offset of its next record.
    owned: Option<(Vec<u8>, usize)>,
    remaining: usize,
}

impl<'a> ListIter<'a> {
    fn enter(&mut self, n: &'a Node) {
        if n.is_compressed() {
            self.owned = Some((n.raw().into_owned(), 0));
        } else {
            self.current = Some(n.elems());
        }
    }
}

impl<'a> Iterator for ListIter<'a> {
    type Item = Cow<'a, [u8]>;
    fn next(&mut self) -> Option<Cow<'a, [u8]>> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            if let Some(v) = self.current.as_mut().and_then(Iterator::next) {
                self.remaining -= 1;
                return Some(Cow::Borrowed(v));
            }
            self.current = None;
            if let Some((buf, off)) = self.owned.as_mut() {
                if *off < buf.len() {
                    let (v, next) = record_at(buf, *off);
                    let v = v.to_vec();
                    *off = next;
                    self.remaining -= 1;
                    return Some(Cow::Owned(v));
                }
                self.owned = None;
            }
            let n = self.nodes.next()?;
            self.enter(n);
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

/// The records of a raw buffer.
fn records(buf: &[u8]) -> NodeIter<'_> {
    NodeIter { buf, off: 0 }
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// OBJECT ENCODING's answer: Redis 7.0 keeps every list in a quicklist.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Heap bytes of the node deque and the nodes' buffers. O(1).
    pub fn bytes(&self) -> usize {
        alloc_size(self.nodes.capacity() * std::mem::size_of::<Node>()) + self.node_bytes
    }

    /// Number of nodes (quicklist's `ql_nodes`, for DEBUG-like introspection and tests).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Runs `f` on node `i` (decompressed first), keeping the byte total in step.
    fn with_node<R>(&mut self, i: usize, f: impl FnOnce(&mut Node) -> R) -> R {
        let node = &mut self.nodes[i];
        let before = node.bytes();
        node.thaw();
        let r = f(node);
        // Changed: worth a new try at compressing.
        node.raw_len = 0;
        self.node_bytes = self.node_bytes - before + node.bytes();
        r
    }

    /// Node `i` raw (`thaw`) or compressed if that pays (`freeze`), the byte total in step.
    fn set_compressed(&mut self, i: usize, compressed: bool) {
        let node = &mut self.nodes[i];
        let before = node.bytes();
        if compressed {
            node.freeze();
        } else {
            node.thaw();
        }
        self.node_bytes = self.node_bytes - before + node.bytes();
    }

    /// Takes a shape's compression depth; a new depth re-lays every node.
    fn take_shape(&mut self, shape: ListShape) {
        if shape.compress_depth != self.compress_depth {
            self.compress_depth = shape.compress_depth;
            self.settle(0..self.nodes.len());
        }
    }

    /// After an operation: the `depth` nodes at each end raw, the nodes next to them and
    /// the `touched` ones compressed if they are inner (quicklist.c's __quicklistCompress).
    /// `touched` is the operation's nodes (one more than it added). O(depth + touched)
    /// flag checks; a node is (de)compressed only when its state is wrong.
    fn settle(&mut self, touched: std::ops::Range<usize>) {
        let d = self.compress_depth as usize;
        let len = self.nodes.len();
        if d == 0 || len <= 2 * d {
            // No inner node: every node raw. Only a depth change (every node touched) or
            // a list shrunk to within twice the depth can hold compressed ones.
            let upto = if touched.len() == len {
                len
            } else {
                len.min(2 * d)
            };
            for i in 0..upto {
                if self.nodes[i].is_compressed() {
                    self.set_compressed(i, false);
                }
            }
            return;
        }
        for i in (0..d).chain(len - d..len) {
            if self.nodes[i].is_compressed() {
                self.set_compressed(i, false);
            }
        }
        // Nodes that moved inward: the inner ones next to each boundary, as many as the
        // operation could have added (one for a push; an insertion's splits add more).
        let moved = touched.len() + 1;
        let near_ends = (d..d + moved).chain((len - d).saturating_sub(moved)..len - d);
        for i in near_ends.chain(touched) {
            if (d..len - d).contains(&i) && self.nodes[i].raw_len == 0 {
                self.set_compressed(i, true);
            }
        }
    }

    fn push_node(&mut self, at: usize, node: Node) {
        // Most lists have a node or two: grow the deque one slot at a time while it is
        // small (a first push would otherwise allocate four slots, 128 bytes), then
        // by doubling.
        if self.nodes.len() == self.nodes.capacity() && self.nodes.len() < 4 {
            self.nodes.reserve_exact(1);
        }
        self.node_bytes += node.bytes();
        self.len += node.count as usize;
        self.nodes.insert(at, node);
    }

    fn remove_node(&mut self, i: usize) {
        if let Some(node) = self.nodes.remove(i) {
            self.node_bytes -= node.bytes();
            self.len -= node.count as usize;
        }
        if self.nodes.capacity() > 16 && self.nodes.capacity() >= 4 * self.nodes.len() {
            self.nodes.shrink_to(self.nodes.len() * 2);
        }
    }

    /// LPUSH / RPUSH of one element.
    pub fn push(&mut self, end: End, v: &[u8], shape: impl Into<ListShape>) {
        let shape = shape.into();
        self.take_shape(shape);
        let bounds = node_bounds(shape.fill);
        let i = match end {
            End::Head => 0,
            End::Tail => self.nodes.len().wrapping_sub(1),
        };
        match self.nodes.get(i) {
            Some(node) if node.allows(v, bounds) => {
                self.with_node(i, |n| {
                    let at = if end == End::Head { 0 } else { n.buf.len() };
                    n.splice_record(at..at, v);
                    n.count += 1;
                });
                self.len += 1;
            }
            _ => {
                let at = if end == End::Head {
                    0
                } else {
                    self.nodes.len()
                };
                self.push_node(at, Node::of(v));
            }
        }
        self.settle(0..0);
    }

    /// LPOP / RPOP of one element.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let i = match end {
            End::Head => 0,
            End::Tail => self.nodes.len().checked_sub(1)?,
        };
        if self.nodes.get(i)?.count == 1 {
            let v = self.with_node(i, |n| n.get(0).to_vec());
            self.remove_node(i);
            self.settle(0..0);
            return Some(v);
        }
        let v = self.with_node(i, |n| {
            let k = if end == End::Head {
                0
            } else {
                n.count as usize - 1
            };
            let (start, next) = n.locate(k);
            let v = record_at(&n.buf, start).0.to_vec();
            n.buf.drain(start..next);
            n.count -= 1;
            n.trim_capacity();
            v
        });
        self.len -= 1;
        self.settle(0..0);
        Some(v)
    }

    /// A Redis index (negative counts from the tail) as a position, if in range.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.len as i64;
        let i = if index < 0 { len + index } else { index };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// (node, index within it) of position `pos` (< len), walking from the nearer end.
    fn locate(&self, pos: usize) -> (usize, usize) {
        if pos < self.len / 2 {
            let mut rest = pos;
            for (i, n) in self.nodes.iter().enumerate() {
                if rest < n.count as usize {
                    return (i, rest);
                }
                rest -= n.count as usize;
            }
        } else {
            let mut rest = self.len - 1 - pos;
            for (i, n) in self.nodes.iter().enumerate().rev() {
                if rest < n.count as usize {
                    return (i, n.count as usize - 1 - rest);
                }
                rest -= n.count as usize;
            }
        }
        unreachable!("position {pos} within a list of {}", self.len)
    }

    /// LINDEX.
    pub fn get(&self, index: i64) -> Option<Cow<'_, [u8]>> {
        let (i, k) = self.locate(self.position(index)?);
        let n = &self.nodes[i];
        if !n.is_compressed() {
            return Some(Cow::Borrowed(n.get(k)));
        }
        let raw = n.raw();
        let v = records(&raw).nth(k).expect("k < count").to_vec();
        Some(Cow::Owned(v))
    }

    /// LSET: false if the index is out of range.
    pub fn set(&mut self, index: i64, v: &[u8], shape: impl Into<ListShape>) -> bool {
        let shape = shape.into();
        self.take_shape(shape);
        let fill = shape.fill;
        let Some(pos) = self.position(index) else {
            return false;
        };
        let (i, k) = self.locate(pos);
        self.with_node(i, |n| {
            let (start, next) = n.locate(k);
            n.splice_record(start..next, v);
        });
        let before = self.nodes.len();
        self.split_if_over(i, fill);
        self.settle(i..i + 1 + self.nodes.len() - before);
        true
    }

    /// Splits node `i` in two if it holds more than `fill` allows (after an insertion
    /// or a replacement in its middle).
    fn split_if_over(&mut self, i: usize, fill: i64) {
        let (max_count, max_bytes) = node_bounds(fill);
        let n = &self.nodes[i];
        if n.count > 1 && (n.count as usize > max_count || n.raw_size() > max_bytes) {
            let half = n.count as usize / 2;
            let tail = self.with_node(i, |n| n.split_off(half));
            self.len -= tail.count as usize;
            self.push_node(i + 1, tail);
            self.split_if_over(i + 1, fill);
            self.split_if_over(i, fill);
        }
    }

    /// Merges node `i` with its successor when both fit in one under `fill` (after
    /// removals, so that a list thinned by LREM does not keep many small nodes).
    fn merge_with_next(&mut self, i: usize, fill: i64) {
        let (max_count, max_bytes) = node_bounds(fill);
        let (Some(a), Some(b)) = (self.nodes.get(i), self.nodes.get(i + 1)) else {
            return;
        };
        if (a.count + b.count) as usize > max_count || a.raw_size() + b.raw_size() > max_bytes {
            return;
        }
        let mut b = self.nodes.remove(i + 1).expect("checked above");
        self.node_bytes -= b.bytes();
        b.thaw();
        self.with_node(i, |a| {
            a.reserve(b.buf.len());
            a.buf.extend_from_slice(&b.buf);
            a.count += b.count;
        });
    }

    /// The elements from the head.
    pub fn iter(&self) -> ListIter<'_> {
        self.iter_from(0)
    }

    /// The elements from position `pos` on (none if `pos >= len`).
    pub fn iter_from(&self, pos: usize) -> ListIter<'_> {
        if pos >= self.len {
            return ListIter {
                nodes: self.nodes.range(0..0),
                current: None,
                owned: None,
                remaining: 0,
            };
        }
        let (i, k) = self.locate(pos);
        let mut it = ListIter {
            nodes: self.nodes.range(i + 1..),
            current: None,
            owned: None,
            remaining: self.len - pos + k,
        };
        it.enter(&self.nodes[i]);
        for _ in 0..k {
            it.next();
        }
        it
    }

    /// The elements from the tail.
    pub fn iter_rev(&self) -> impl Iterator<Item = Cow<'_, [u8]>> + '_ {
        self.nodes.iter().rev().flat_map(|n| {
            let v: Vec<Cow<'_, [u8]>> = if n.is_compressed() {
                let raw = n.raw();
                records(&raw).map(|e| Cow::Owned(e.to_vec())).collect()
            } else {
                n.elems().map(Cow::Borrowed).collect()
            };
            v.into_iter().rev()
        })
    }

    /// LINSERT: inserts `v` before or after the first element equal to `pivot`; false
    /// if there is none.
    pub fn insert(
        &mut self,
        pivot: &[u8],
        after: bool,
        v: &[u8],
        shape: impl Into<ListShape>,
    ) -> bool {
        let shape = shape.into();
        self.take_shape(shape);
        let fill = shape.fill;
        let mut found = None;
        'nodes: for (i, n) in self.nodes.iter().enumerate() {
            let raw = n.raw();
            let mut off = 0;
            while off < raw.len() {
                let (e, next) = record_at(&raw, off);
                if e == pivot {
                    found = Some((i, if after { next } else { off }));
                    break 'nodes;
                }
                off = next;
            }
        }
        let Some((i, at)) = found else {
            return false;
        };
        self.with_node(i, |n| {
            n.splice_record(at..at, v);
            n.count += 1;
        });
        self.len += 1;
        let before = self.nodes.len();
        self.split_if_over(i, fill);
        self.settle(i..i + 1 + self.nodes.len() - before);
        true
    }

    /// LREM: removes up to |count| elements equal to `v` (all if count is 0), from the
    /// head for count >= 0 and from the tail for count < 0. Returns how many.
    pub fn remove(&mut self, v: &[u8], count: i64, shape: impl Into<ListShape>) -> usize {
        let shape = shape.into();
        self.take_shape(shape);
        let fill = shape.fill;
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs().min(usize::MAX as u64) as usize
        };
        let mut removed = 0;
        let order: Vec<usize> = if count < 0 {
            (0..self.nodes.len()).rev().collect()
        } else {
            (0..self.nodes.len()).collect()
        };
        let mut emptied = Vec::new();
        for i in order {
            if removed == limit {
                break;
            }
            let raw = self.nodes[i].raw();
            // A node without the element is left as it is (compressed if it was).
            if !records(&raw).any(|e| e == v) {
                continue;
            }
            let drop_at: Option<Vec<usize>> = if count < 0 {
                // From the node's tail: the last matches first.
                let mut hits: Vec<usize> = records(&raw)
                    .enumerate()
                    .filter(|(_, e)| *e == v)
                    .map(|(k, _)| k)
                    .collect();
                let keep_from = hits.len().saturating_sub(limit - removed);
                hits.drain(..keep_from);
                Some(hits)
            } else {
                None
            };
            let budget = limit - removed;
            let dropped = self.with_node(i, |n| match &drop_at {
                Some(hits) => n.retain(|k, _| hits.binary_search(&k).is_err()),
                None => {
                    let mut taken = 0;
                    n.retain(|_, e| {
                        if taken < budget && e == v {
                            taken += 1;
                            false
                        } else {
                            true
                        }
                    })
                }
            });
            removed += dropped;
            self.len -= dropped;
            if self.nodes[i].count == 0 {
                emptied.push(i);
            }
        }
        emptied.sort_unstable();
        for &i in emptied.iter().rev() {
            self.remove_node(i);
        }
        if removed > 0 {
            let mut i = 0;
            while i + 1 < self.nodes.len() {
                let before = self.nodes.len();
                self.merge_with_next(i, fill);
                if self.nodes.len() == before {
                    i += 1;
                }
            }
            self.settle(0..self.nodes.len());
        }
        removed
    }

    /// LTRIM with resolved bounds: keeps positions `start..=stop` (nothing if start >
    /// stop or start >= len).
    pub fn trim(&mut self, start: usize, stop: usize) {
        if start > stop || start >= self.len {
            *self = List {
                compress_depth: self.compress_depth,
                ..List::default()
            };
            return;
        }
        let stop = stop.min(self.len - 1);
        let from_tail = self.len - 1 - stop;
        self.drop_end(End::Head, start);
        self.drop_end(End::Tail, from_tail);
        self.settle(0..0);
    }

    /// Removes `n` elements at `end`, whole nodes at a time where it can.
    fn drop_end(&mut self, end: End, mut n: usize) {
        while n > 0 && !self.nodes.is_empty() {
            let i = match end {
                End::Head => 0,
                End::Tail => self.nodes.len() - 1,
            };
            let count = self.nodes[i].count as usize;
            if count <= n {
                self.remove_node(i);
                n -= count;
                continue;
            }
            self.with_node(i, |node| match end {
                End::Head => {
                    let (at, _) = node.locate(n);
                    node.buf.drain(..at);
                    node.count -= n as u32;
                    node.trim_capacity();
                }
                End::Tail => {
                    let (at, _) = node.locate(count - n);
                    node.buf.truncate(at);
                    node.count -= n as u32;
                    node.trim_capacity();
                }
            });
            self.len -= n;
            n = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    fn check(list: &List, model: &VecDeque<Vec<u8>>, shape: ListShape) {
        assert_eq!(list.len(), model.len());
        let got: Vec<Cow<[u8]>> = list.iter().collect();
        let want: Vec<&[u8]> = model.iter().map(|v| &v[..]).collect();
        assert_eq!(got, want);
        let rev: Vec<Cow<[u8]>> = list.iter_rev().collect();
        let want_rev: Vec<&[u8]> = model.iter().rev().map(|v| &v[..]).collect();
        assert_eq!(rev, want_rev);
        let (max_count, max_bytes) = node_bounds(shape.fill);
        let mut bytes = 0;
        let d = shape.compress_depth as usize;
        let len = list.nodes.len();
        for (i, n) in list.nodes.iter().enumerate() {
            let inner = d > 0 && i >= d && i + d < len;
            if inner {
                assert!(
                    n.is_compressed()
                        || n.raw_len == INCOMPRESSIBLE
                        || n.buf.len() < MIN_COMPRESS_BYTES,
                    "inner node {i} of {len} (depth {d}) left raw"
                );
            } else {
                assert!(
                    !n.is_compressed(),
                    "node {i} of {len} within depth {d} compressed"
                );
            }
            assert!(n.count > 0, "no empty node");
            assert_eq!(
                records(&n.raw()).count(),
                n.count as usize,
                "node {i}'s count"
            );
            assert!(n.count as usize <= max_count || n.count == 1);
            assert!(
                n.raw_size() <= max_bytes || n.count == 1,
                "node over its bytes"
            );
            bytes += n.bytes();
        }
        assert_eq!(bytes, list.node_bytes, "byte total kept in step");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, Vec<u8>),
        Pop(bool),
        Set(i64, Vec<u8>),
        Insert(u8, bool, Vec<u8>),
        Remove(u8, i64),
        Trim(i64, i64),
    }

    fn elem() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => (0u8..6).prop_map(|b| vec![b'a' + b]),
            1 => proptest::collection::vec(any::<u8>(), 0..300),
            1 => (0usize..9000).prop_map(|n| vec![b'x'; n]),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<bool>(), elem()).prop_map(|(h, v)| Op::Push(h, v)),
            2 => any::<bool>().prop_map(Op::Pop),
            1 => (-20i64..20, elem()).prop_map(|(i, v)| Op::Set(i, v)),
            1 => (0u8..6, any::<bool>(), elem()).prop_map(|(p, a, v)| Op::Insert(p, a, v)),
            1 => (0u8..6, -3i64..4).prop_map(|(p, c)| Op::Remove(p, c)),
            1 => (-30i64..30, -30i64..30).prop_map(|(a, b)| Op::Trim(a, b)),
        ]
    }

    /// LTRIM's index resolution (t_list.c ltrimCommand).
    fn resolve(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
        let len = len as i64;
        let start = if start < 0 {
            (len + start).max(0)
        } else {
            start
        };
        let stop = if stop < 0 { len + stop } else { stop };
        (start <= stop && start < len && stop >= 0).then_some((start as usize, stop as usize))
    }

    proptest! {
        #[test]
        fn list_matches_a_deque(ops in proptest::collection::vec(op(), 1..120),
                                fill in prop_oneof![Just(-2i64), Just(-1), Just(1), Just(2), Just(5), Just(0)],
                                depth in prop_oneof![Just(0u32), Just(0), Just(1), Just(2)]) {
            let shape = ListShape { fill, compress_depth: depth };
            let mut list = List::new();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(head, v) => {
                        list.push(if head { End::Head } else { End::Tail }, &v, shape);
                        if head { model.push_front(v) } else { model.push_back(v) }
                    }
                    Op::Pop(head) => {
                        let got = list.pop(if head { End::Head } else { End::Tail });
                        let want = if head { model.pop_front() } else { model.pop_back() };
                        prop_assert_eq!(got, want);
                    }
                    Op::Set(i, v) => {
                        let pos = list.position(i);
                        prop_assert_eq!(list.set(i, &v, shape), pos.is_some());
                        if let Some(p) = pos { model[p] = v; }
                    }
                    Op::Insert(p, after, v) => {
                        let pivot = vec![b'a' + p];
                        let at = model.iter().position(|e| *e == pivot);
                        prop_assert_eq!(list.insert(&pivot, after, &v, shape), at.is_some());
                        if let Some(at) = at { model.insert(at + after as usize, v); }
                    }
                    Op::Remove(p, count) => {
                        let v = vec![b'a' + p];
                        let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                        let mut want = 0;
                        if count >= 0 {
                            let mut i = 0;
                            while i < model.len() {
                                if want < limit && model[i] == v { model.remove(i); want += 1; } else { i += 1; }
                            }
                        } else {
                            let mut i = model.len();
                            while i > 0 {
                                i -= 1;
                                if want < limit && model[i] == v { model.remove(i); want += 1; }
                            }
                        }
                        prop_assert_eq!(list.remove(&v, count, shape), want);
                    }
                    Op::Trim(a, b) => {
                        match resolve(a, b, model.len()) {
                            Some((s, e)) => {
                                list.trim(s, e);
                                let e = e.min(model.len() - 1);
                                model = model.drain(s..=e).collect();
                            }
                            None => { list.trim(1, 0); model.clear(); }
                        }
                    }
                }
                check(&list, &model, shape);
                for (i, want) in model.iter().enumerate() {
                    let (a, b) = (list.get(i as i64), list.get(i as i64 - model.len() as i64));
                    prop_assert_eq!(a.as_deref(), Some(&want[..]));
                    prop_assert_eq!(b.as_deref(), Some(&want[..]));
                }
                prop_assert_eq!(list.get(model.len() as i64), None);
                let from = model.len() / 3;
                let tail: Vec<Cow<[u8]>> = list.iter_from(from).collect();
                let want_tail: Vec<&[u8]> = model.iter().skip(from).map(|v| &v[..]).collect();
                prop_assert_eq!(tail, want_tail);
            }
        }
    }

    #[test]
    fn small_elements_pack_into_nodes() {
        let mut list = List::new();
        for i in 0..10_000u32 {
            list.push(End::Tail, format!("{i:05}").as_bytes(), DEFAULT_LIST_FILL);
        }
        // 6-byte records, 8 KB nodes: about 1365 a node.
        assert_eq!(list.node_count(), 10_000usize.div_ceil(8192 / 6));
        // Far less than a block per element (each would be at least 8 + 16 bytes).
        assert!(list.bytes() < 10_000 * 8, "{} bytes", list.bytes());
        let mut list = List::new();
        for _ in 0..10 {
            list.push(End::Head, b"v", 3);
        }
        assert_eq!(list.node_count(), 4, "a count fill of 3");
    }

    #[test]
    fn inner_nodes_are_compressed() {
        let shape = ListShape {
            fill: 8,
            compress_depth: 1,
        };
        let mut list = List::new();
        for i in 0..100u32 {
            list.push(
                End::Tail,
                format!("element-{i:04}-{}", "z".repeat(40)).as_bytes(),
                shape,
            );
        }
        let raw = List::new();
        let mut plain = raw.clone();
        for i in 0..100u32 {
            plain.push(
                End::Tail,
                format!("element-{i:04}-{}", "z".repeat(40)).as_bytes(),
                8,
            );
        }
        let inner = list.nodes.len() - 2;
        let compressed = list.nodes.iter().filter(|n| n.is_compressed()).count();
        assert_eq!(compressed, inner, "every inner node compressed");
        assert!(
            !list.nodes[0].is_compressed() && !list.nodes[list.nodes.len() - 1].is_compressed()
        );
        assert!(
            list.bytes() * 2 < plain.bytes(),
            "{} vs {}",
            list.bytes(),
            plain.bytes()
        );
        let (a, b) = (list.get(50), plain.get(50));
        assert_eq!(a.as_deref(), b.as_deref());
        assert!(list.iter().eq(plain.iter()));
        // Back to depth 0: every node raw again.
        list.push(End::Head, b"h", 8);
        assert_eq!(list.nodes.iter().filter(|n| n.is_compressed()).count(), 0);
        // Incompressible content is left raw (and not retried until it changes).
        let mut noise = List::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..64 {
            let e: Vec<u8> = (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            noise.push(End::Tail, &e, shape);
        }
        assert!(noise.nodes.iter().all(|n| !n.is_compressed()));
    }

    #[test]
    fn a_large_element_has_a_node_of_its_own() {
        let mut list = List::new();
        list.push(End::Tail, b"a", -1);
        list.push(End::Tail, &vec![b'b'; 5000], -1);
        list.push(End::Tail, b"c", -1);
        assert_eq!(list.node_count(), 3);
        assert_eq!(list.get(1).map(|v| v.len()), Some(5000));
    }
}
