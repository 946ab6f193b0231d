//! Where the Z-zone's block frames live: packed into fixed-size segments that are
//! compacted when too much of them is dead (not in the paper).
//!
//! Why: with every frame its own heap allocation, each demotion frees a frame and
//! allocates one of another size (the block grew by an item), so jemalloc's slabs of the
//! 1-2 KB size classes are left partly empty: with the zone on, RSS measured 1.28x the
//! bytes allocated, against 1.06 without it (BENCHMARKS.md, "Compressed zone"), and the
//! zone broke the store's "RSS <= maxmemory + 10 %". Here a frame is appended to one of
//! a few open segments (the first with room, so frames of varied sizes fill each
//! other's tails) behind an 8-byte header naming its owner (the block) and its length;
//! freeing it only marks it dead. When the dead bytes of the closed segments exceed an
//! sixteenth of the live bytes plus a segment, the closed segment with the smallest live
//! share is copied into the open ones, its owners told their frames' new places, and it
//! is given back. The zone is charged for the segments themselves, dead bytes and open
//! tails included, so its accounting is what the process holds. Segments are 32 KB (a
//! page-aligned extent of its own in jemalloc, outside the slabs) once the zone holds
//! 1 MB, with four open; a smaller zone uses smaller ones, a thirty-second of what it
//! holds down to 4 KB, and fewer open, so that a zone just started is not charged for
//! space it does not use (the zone's pays check would otherwise turn it off).
//!
//! A frame larger than half the current segment size (incompressible blocks of a small
//! zone, large block capacities) gets a segment of its own size, given back when it is
//! freed.

use crate::object::alloc_size;

/// Bytes of a segment once the zone is large.
pub const SEGMENT_BYTES: usize = 32 << 10;
/// Bytes of a segment of a small zone.
const MIN_SEGMENT_BYTES: usize = 4 << 10;
/// Per-frame header: owner (u32 LE), length (u32 LE).
const HDR: usize = 8;
/// The owner of a freed frame.
const DEAD: u32 = u32::MAX;
/// Dead bytes the closed segments may hold before compaction: live / `DEAD_SHARE` (plus
/// a segment). Each dead byte is memory the zone is charged for and holds no item, so
/// this is the zone's memory overhead. Halving it from 1/8 took the zone from 90.1 to
/// 85.7 B/item with inserts within noise (8.9 vs 8.8 us); 1/32 gave 83.4 B/item for 9 %
/// slower inserts (`ZZ_ONLY=lz4:4096:2048 cargo run --release -p augur-store --example
/// zzone_bench 300000`).
const DEAD_SHARE: u64 = 16;
/// Most segments one [`Arena::compact`] call empties (bounds the work of one write).
const COMPACTIONS_PER_CALL: usize = 4;

/// The (owner, length) header of the frame at `off`.
#[inline]
fn header(buf: &[u8], off: usize) -> (u32, u32) {
    let word = |at: usize| u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
    (word(off), word(off + 4))
}

/// Where a frame is: its segment, the offset of its header, its length (0: no frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef {
    seg: u32,
    off: u32,
    len: u32,
}

impl FrameRef {
    pub const EMPTY: FrameRef = FrameRef {
        seg: u32::MAX,
        off: 0,
        len: 0,
    };
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

struct Segment {
    /// Empty for a free slot.
    buf: Box<[u8]>,
    /// One frame's own segment (never open, never compacted).
    solo: bool,
    /// Bytes written (frames and headers, live or dead).
    used: u32,
    /// Bytes of live frames and their headers.
    live: u32,
}

/// Frame storage of one zone.
pub struct Arena {
    segs: Vec<Segment>,
    free_slots: Vec<u32>,
    /// Segments taking new frames (at most [`Arena::max_open`]).
    open: Vec<u32>,
    /// Σ live frames + headers.
    live: u64,
    /// Σ size classes of the segments' buffers.
    held: u64,
    /// A frame being moved by compaction.
    scratch: Vec<u8>,
    compactions: u64,
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

impl Arena {
    pub fn new() -> Arena {
        Arena {
            segs: Vec::new(),
            free_slots: Vec::new(),
            open: Vec::new(),
            live: 0,
            held: 0,
            scratch: Vec::new(),
            compactions: 0,
        }
    }

    /// The frame `r` names (empty for [`FrameRef::EMPTY`]).
    #[inline]
    pub fn get(&self, r: FrameRef) -> &[u8] {
        if r.len == 0 {
            return &[];
        }
        let at = r.off as usize + HDR;
        &self.segs[r.seg as usize].buf[at..at + r.len as usize]
    }

    /// The frame's bytes, writable (tests damage frames in place).
    #[cfg(test)]
    pub(crate) fn get_mut(&mut self, r: FrameRef) -> &mut [u8] {
        let at = r.off as usize + HDR;
        &mut self.segs[r.seg as usize].buf[at..at + r.len as usize]
    }

    /// The size of the next shared segment: a thirty-second of the live bytes, in powers
    /// of two between 4 and 32 KB.
    fn segment_bytes(&self) -> usize {
        ((self.live / 32) as usize)
            .next_power_of_two()
            .clamp(MIN_SEGMENT_BYTES, SEGMENT_BYTES)
    }

    fn new_segment(&mut self, bytes: usize, solo: bool) -> u32 {
        let s = Segment {
            solo,
            buf: vec![0u8; bytes].into_boxed_slice(),
            used: 0,
            live: 0,
        };
        self.held += alloc_size(bytes) as u64;
        match self.free_slots.pop() {
            Some(i) => {
                self.segs[i as usize] = s;
                i
            }
            None => {
                self.segs.push(s);
                (self.segs.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, seg: u32) {
        let s = &mut self.segs[seg as usize];
        self.held -= alloc_size(s.buf.len()) as u64;
        s.buf = Box::new([]);
        s.used = 0;
        s.live = 0;
        s.solo = false;
        self.open.retain(|&o| o != seg);
        self.free_slots.push(seg);
    }

    /// Stores `frame` for `owner` (a block id; not [`u32::MAX`]).
    pub fn alloc(&mut self, owner: u32, frame: &[u8]) -> FrameRef {
        if frame.is_empty() {
            return FrameRef::EMPTY;
        }
        let need = HDR + frame.len();
        let size = self.segment_bytes();
        let seg = if need > size / 2 {
            self.new_segment(need, true)
        } else {
            let fits = self.open.iter().copied().find(|&o| {
                let s = &self.segs[o as usize];
                s.buf.len() - s.used as usize >= need
            });
            match fits {
                Some(o) => o,
                None => {
                    if self.open.len() >= self.max_open() {
                        // Close the fullest.
                        let fullest = (0..self.open.len())
                            .max_by_key(|&i| self.segs[self.open[i] as usize].used)
                            .unwrap_or(0);
                        self.open.swap_remove(fullest);
                    }
                    let o = self.new_segment(size, false);
                    self.open.push(o);
                    o
                }
            }
        };
        let s = &mut self.segs[seg as usize];
        let off = s.used as usize;
        s.buf[off..off + 4].copy_from_slice(&owner.to_le_bytes());
        s.buf[off + 4..off + 8].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        s.buf[off + HDR..off + need].copy_from_slice(frame);
        s.used += need as u32;
        s.live += need as u32;
        self.live += need as u64;
        FrameRef {
            seg,
            off: off as u32,
            len: frame.len() as u32,
        }
    }

    /// Frees frame `r` (nothing for [`FrameRef::EMPTY`]).
    pub fn free(&mut self, r: FrameRef) {
        if r.len == 0 {
            return;
        }
        let need = HDR + r.len as usize;
        let s = &mut self.segs[r.seg as usize];
        let off = r.off as usize;
        s.buf[off..off + 4].copy_from_slice(&DEAD.to_le_bytes());
        s.live -= need as u32;
        self.live -= need as u64;
        if s.live == 0 {
            if self.open.contains(&r.seg) {
                s.used = 0; // an empty open segment starts over
            } else {
                self.release(r.seg);
            }
        }
    }

    /// Bytes held: the segments' size classes, the tables and the scratch buffer.
    pub fn bytes(&self) -> u64 {
        self.held
            + alloc_size(self.segs.capacity() * std::mem::size_of::<Segment>()) as u64
            + alloc_size(self.free_slots.capacity() * 4) as u64
            + alloc_size(self.open.capacity() * 4) as u64
            + alloc_size(self.scratch.capacity()) as u64
    }

    /// Bytes of live frames and their headers.
    pub fn live_bytes(&self) -> u64 {
        self.live
    }

    /// Segments emptied by compaction so far.
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Open segments: one while the zone is small, four once its segments are 32 KB.
    fn max_open(&self) -> usize {
        (self.segment_bytes() / (SEGMENT_BYTES / 4)).max(1)
    }

    /// Bytes the arena holds beyond its live frames whatever its size: the open
    /// segments' unused tails and the one segment of dead bytes compaction allows.
    pub fn slack_bytes(&self) -> u64 {
        self.open_room() + self.segment_bytes() as u64
    }

    /// Unused tails of the open segments.
    fn open_room(&self) -> u64 {
        self.open
            .iter()
            .map(|&o| {
                let s = &self.segs[o as usize];
                (s.buf.len() - s.used as usize) as u64
            })
            .sum()
    }

    fn needs_compaction(&self) -> bool {
        self.held
            > self.live + self.live / DEAD_SHARE + self.open_room() + self.segment_bytes() as u64
    }

    /// While the closed segments' dead bytes exceed a sixteenth of the live ones plus a
    /// segment, empties the closed segment with the smallest live share into the open
    /// ones (a few per call),
    /// telling `moved(owner, new place)` for every frame moved.
    pub fn compact(&mut self, mut moved: impl FnMut(u32, FrameRef)) {
        for _ in 0..COMPACTIONS_PER_CALL {
            if !self.needs_compaction() {
                return;
            }
            // The smallest live share: live_a / len_a < live_b / len_b, cross-multiplied.
            let victim = self
                .segs
                .iter()
                .enumerate()
                .filter(|(i, s)| !s.solo && !s.buf.is_empty() && !self.open.contains(&(*i as u32)))
                .min_by(|(_, a), (_, b)| {
                    (a.live as u64 * b.buf.len() as u64).cmp(&(b.live as u64 * a.buf.len() as u64))
                })
                .map(|(i, _)| i as u32);
            let Some(v) = victim else {
                return;
            };
            let mut off = 0usize;
            while off < self.segs[v as usize].used as usize {
                let s = &self.segs[v as usize];
                let (owner, len) = header(&s.buf, off);
                let len = len as usize;
                if owner != DEAD {
                    let mut tmp = std::mem::take(&mut self.scratch);
                    tmp.clear();
                    tmp.extend_from_slice(&s.buf[off + HDR..off + HDR + len]);
                    // Counted live again where it lands; the victim goes as a whole.
                    self.live -= (HDR + len) as u64;
                    let r = self.alloc(owner, &tmp);
                    self.scratch = tmp;
                    moved(owner, r);
                }
                off += HDR + len;
            }
            self.release(v);
            self.compactions += 1;
        }
        if self.scratch.capacity() > SEGMENT_BYTES / 4 {
            self.scratch = Vec::new();
        }
    }

    /// Recounts the live bytes and lists every live frame as (owner, place), checking
    /// the counters (tests, [`super::ZZone::check`]).
    pub fn walk(&self) -> Result<Vec<(u32, FrameRef)>, String> {
        let mut out = Vec::new();
        let (mut live, mut held) = (0u64, 0u64);
        for (i, s) in self.segs.iter().enumerate() {
            if s.buf.is_empty() {
                continue;
            }
            held += alloc_size(s.buf.len()) as u64;
            let (mut off, mut seg_live) = (0usize, 0u32);
            while off < s.used as usize {
                let (owner, len) = header(&s.buf, off);
                if owner != DEAD {
                    seg_live += HDR as u32 + len;
                    out.push((
                        owner,
                        FrameRef {
                            seg: i as u32,
                            off: off as u32,
                            len,
                        },
                    ));
                }
                off += HDR + len as usize;
            }
            if seg_live != s.live {
                return Err(format!("segment {i}: live {} vs {seg_live}", s.live));
            }
            live += seg_live as u64;
        }
        if live != self.live || held != self.held {
            return Err(format!(
                "arena: live {} vs {live}, held {} vs {held}",
                self.live, self.held
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Frames of `len` bytes derived from `owner` and a generation (so a stale copy is
    /// told apart from the live one).
    fn frame(owner: u32, gen: u32, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (owner as usize * 31 + gen as usize * 7 + i) as u8)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Replacing owners' frames at random (sizes from empty to large): every owner
        /// reads back its latest frame wherever compaction moved it, the counters match
        /// a walk, and what is held stays within the compaction bound.
        #[test]
        fn frames_survive_churn_and_the_arena_stays_compact(
            ops in prop::collection::vec((0u32..200, 0usize..3000), 1..3000)
        ) {
            let mut a = Arena::new();
            let mut refs: HashMap<u32, FrameRef> = HashMap::new();
            let mut want: HashMap<u32, Vec<u8>> = HashMap::new();
            for (gen, (owner, len)) in ops.into_iter().enumerate() {
                let f = frame(owner, gen as u32, len);
                let r = a.alloc(owner, &f);
                if let Some(old) = refs.insert(owner, r) {
                    a.free(old);
                }
                want.insert(owner, f);
                a.compact(|o, r| {
                    refs.insert(o, r);
                });
                for (o, r) in &refs {
                    prop_assert_eq!(a.get(*r), &want[o][..]);
                }
            }
            let placed = a.walk().map_err(TestCaseError::fail)?;
            prop_assert_eq!(placed.len(), refs.values().filter(|r| !r.is_empty()).count());
            for (o, r) in placed {
                prop_assert_eq!(refs[&o], r);
            }
            // A few more compaction rounds reach the bound.
            for _ in 0..1000 {
                a.compact(|o, r| {
                    refs.insert(o, r);
                });
            }
            let solo: u64 = refs
                .values()
                .filter(|r| HDR + r.len() > MIN_SEGMENT_BYTES / 2)
                .map(|r| alloc_size(HDR + r.len()) as u64)
                .sum();
            prop_assert!(
                a.held <= a.live + a.live / DEAD_SHARE + a.slack_bytes() + solo,
                "held {} live {} slack {} solo {}", a.held, a.live, a.slack_bytes(), solo
            );
            for (o, r) in &refs {
                a.free(*r);
                want.remove(o);
            }
            prop_assert_eq!(a.live, 0);
            prop_assert!(a.held <= SEGMENT_BYTES as u64 * 4, "{}", a.held);
        }
    }
}
