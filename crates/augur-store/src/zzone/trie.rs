//! The hashed binary trie of zExpander §3.1 (Fig. 4): leaves are blocks, internal and
//! ghost nodes have no physical presence. The tree is completed with ghost leaves to a
//! complete binary tree of depth `depth` (the deepest leaf's), whose node pointers are
//! linearised top-down, left to right (heap numbering: root 1, children 2i and 2i+1, so
//! the node of prefix `p` of `d` bits is `2^d + p`). A key's block is found in O(1): take
//! the node of the hash's first `depth` bits and walk up (`i >> 1`) to the first non-null
//! pointer, usually fewer than three probes.
//!
//! The pointer array is split into segments of 128 four-byte pointers (block ids + 1, 0 =
//! null), allocated only when they hold a non-null pointer, behind a first-level array of
//! segment pointers, exactly as Fig. 4(a).

use crate::object::alloc_size;

/// Pointers per segment (Fig. 4: 128 4-byte pointers).
pub const SEG: usize = 128;
/// The deepest leaf the trie ever makes (node ids stay below 2^63).
pub const MAX_DEPTH: u8 = 56;

type Segment = Box<[u32; SEG]>;

pub struct Trie {
    segs: Vec<Option<Segment>>,
    /// Depth of the deepest leaf (the complete tree's last level).
    depth: u8,
    live_segs: usize,
    /// Leaves per depth, so the last level rises again when merges empty it.
    per_depth: [u32; MAX_DEPTH as usize + 1],
}

impl Trie {
    /// A trie whose root (node 1) is the leaf `block`.
    pub fn new(block: u32) -> Trie {
        let mut t = Trie {
            segs: Vec::new(),
            depth: 0,
            live_segs: 0,
            per_depth: [0; MAX_DEPTH as usize + 1],
        };
        t.set(1, Some(block));
        t
    }

    pub fn depth(&self) -> u8 {
        self.depth
    }

    /// The block at `node`, if it is a leaf.
    #[inline]
    pub fn get(&self, node: u64) -> Option<u32> {
        let seg = (node / SEG as u64) as usize;
        match self.segs.get(seg) {
            Some(Some(s)) => match s[(node % SEG as u64) as usize] {
                0 => None,
                v => Some(v - 1),
            },
            _ => None,
        }
    }

    /// Makes `node` the leaf `block` (Some) or an internal/ghost node (None).
    pub fn set(&mut self, node: u64, block: Option<u32>) {
        let seg = (node / SEG as u64) as usize;
        let off = (node % SEG as u64) as usize;
        let d = node_depth(node);
        if d > MAX_DEPTH {
            return;
        }
        match (self.get(node), block) {
            (None, Some(_)) => self.per_depth[d as usize] += 1,
            (Some(_), None) => self.per_depth[d as usize] -= 1,
            _ => {}
        }
        match block {
            Some(b) => {
                if seg >= self.segs.len() {
                    self.segs.resize_with(seg + 1, || None);
                }
                let s = self.segs[seg].get_or_insert_with(|| {
                    self.live_segs += 1;
                    Box::new([0u32; SEG])
                });
                s[off] = b + 1;
                self.depth = self.depth.max(d);
            }
            None => {
                if let Some(Some(s)) = self.segs.get_mut(seg) {
                    s[off] = 0;
                    if s.iter().all(|&v| v == 0) {
                        self.segs[seg] = None;
                        self.live_segs -= 1;
                    }
                }
                while self.depth > 0 && self.per_depth[self.depth as usize] == 0 {
                    self.depth -= 1;
                }
                while matches!(self.segs.last(), Some(None)) {
                    self.segs.pop();
                }
                if self.segs.capacity() > 2 * self.segs.len() + 8 {
                    self.segs.shrink_to_fit();
                }
            }
        }
    }

    /// The leaf holding hash `h`: (node, block). None only if the trie's invariant (every
    /// root-to-last-level path meets exactly one leaf) were broken.
    #[inline]
    pub fn lookup(&self, h: u64) -> Option<(u64, u32)> {
        let d = self.depth as u32;
        let mut node = if d == 0 {
            1
        } else {
            (1u64 << d) | (h >> (64 - d))
        };
        while node != 0 {
            if let Some(b) = self.get(node) {
                return Some((node, b));
            }
            node >>= 1;
        }
        None
    }

    /// Heap bytes: the first-level array and the allocated segments.
    pub fn bytes(&self) -> u64 {
        (alloc_size(self.segs.capacity() * std::mem::size_of::<Option<Segment>>())
            + self.live_segs * alloc_size(SEG * 4)) as u64
    }
}

/// The depth of `node`.
#[inline]
pub fn node_depth(node: u64) -> u8 {
    (63 - node.leading_zeros()) as u8
}

/// The first hash of the range of hashes `node` covers, and the number of hashes in it
/// (as u128: the root covers 2^64).
#[inline]
pub fn node_range(node: u64) -> (u64, u128) {
    let d = node_depth(node) as u32;
    let prefix = node ^ (1u64 << d);
    let start = if d == 0 { 0 } else { prefix << (64 - d) };
    (start, 1u128 << (64 - d))
}
