//! LHD eviction in the store (`maxmemory-policy allkeys-lhd` / `volatile-lhd`): the
//! glue between shards' entries and [`augur_sim::lhd::LhdModel`], the one LHD
//! implementation that `augur sim --policy lhd` also runs (DESIGN.md: one policy
//! implementation; Beckmann et al., NSDI'18, `lhd-least-hit-density.txt`).
//!
//! # One model per tenant part of each shard
//!
//! Every tenant's part of a shard ([`crate::shard`]'s `Part`) owns a model, created on
//! the first access under an LHD policy and dropped when eviction next runs under
//! another policy. The tenant plays LHD's application id (§3.4): the paper gives each
//! application its own classes, i.e. its own histograms and density table, which is
//! what separate models are; all of a shard's models measure ages on the shard's one
//! logical clock ([`LhdModel::set_time`]), so their densities compare, and with
//! `tenant-partitioning off` one eviction ranks candidates of all tenants together.
//!
//! A shard sees 1/shards of the accesses and holds 1/shards of the objects, like one of
//! the miniature caches of `augur_sim::spec::build_miniature` at rate 1/shards: its time
//! constants counted in accesses shrink by the same factor, so that every model adapts
//! as often, relative to the whole store's traffic, as the simulator's one model does.
//! Reconfiguration runs every 2^20 / shards accesses of the part (at least 1 000), and
//! the age histograms have 20 000 / shards bins (at least [`MIN_MAX_AGE`]): the shards
//! together keep as many bins as the simulator's model (far fewer for small shard
//! counts), with the appendix's coarsening still spanning 1/ε times the part's objects.
//! Without this a store of 64 shards would hold 64 full-size models (3.8 MB each) and
//! pay 64 times the simulator's reconfiguration work; with it one reconfiguration is a
//! pass over 16 × 1 000 bins (tens of µs, measured in BENCHMARKS.md), which the
//! request that triggers it pays inline.
//!
//! # The tag: no memory beyond the LRU clock
//!
//! An entry's 32-bit `atime` (the shard's clock under LRU) holds, under LHD, the clock's
//! low 24 bits and two 4-bit classes of its last two hit ages; the explorer mark is a
//! flag bit (entry.rs: `LHD_FORMAT`, `LHD_EXPLORER`). So memory per key is the same under
//! both policies. The hit ages are kept on a log₂ scale (0, then one class per power of
//! two, the top class meaning "at least the maximum age", LHD's mark of a new object):
//! LHD classifies by the sum of the two ages on a log₂ scale anyway (§3.5, 16 classes
//! spaced at powers of two), so the rounding moves an object at most one class. The
//! 24-bit clock lets an entry idle for more than 2^24 of its shard's accesses alias to a
//! younger age (LRU's 32 bits alias the same way at 2^32).
//!
//! # Tags beside the index: ranking without reading entries
//!
//! An eviction ranks 64 candidates (§4.1), and reading each one's header is a cache
//! miss into the whole store: measured on SETs under eviction, those misses made LHD's
//! SETs 2.1x as costly as K-LRU's in-process (`examples/evict_cost.rs`). RankCache keeps
//! its objects' metadata in a separate contiguous region, "tags", so that "64 candidates
//! [cost] just 4 cache misses" (§4.1, "Efficient evictions"). Here, while a part evicts
//! by LHD, its index keeps a 32-bit tag per position ([`crate::index::Table`]'s tags,
//! 4 bytes a position, charged to the part's memory): the entry's LHD word with one
//! clock bit less ([`TAG_CLOCK_MASK`]: 23 bits, so a tag's age aliases after 2^23
//! accesses of the shard, the entry's after 2^24) and a bit saying "rank from the
//! entry" ([`TAG_FROM_ENTRY`]) for explorers and hashes and sets (whose size is not
//! their slot's). Candidates are drawn as windows of consecutive positions
//! (`crate::shard`'s `draw_windows`), so their tags and index words are a few adjacent
//! cache lines, and an entry in a slab slot is ranked from its tag and its slot's size
//! (a small per-slab table) exactly as from its header; others are read as before. A
//! hit or admission writes the tag with the entry's word; a position's tag is
//! [`crate::index::UNTAGGED`] (ranked from the entry) until then. A tag that went stale
//! (a path that rewrote an entry without it) costs ranking quality, never correctness:
//! the victim is still a live entry of the part.
//!
//! # Switching policies live
//!
//! Either format reads under either policy: LRU computes idle time from an LHD tag's 24
//! clock bits ([`Entry::idle`]); LHD reads an entry last touched under LRU as a new
//! object (no hit history) of the age its clock gives. No key is rewritten at a switch.

use crate::entry::{clock24_age, Entry, LHD_CLOCK_MASK};
use augur_sim::lhd::{LhdConfig, LhdModel, LhdTag};
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// One tenant's LHD state summed over the shards, for INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LhdStats {
    /// Shards holding a model for the tenant.
    pub models: u64,
    /// Reconfigurations, summed over the models.
    pub reconfigurations: u64,
    /// The largest age coarsening shift among the models (ages count 2^shift accesses).
    pub age_shift: u32,
    /// Rankings that met an entry past the maximum age, summed.
    pub overflows: u64,
    /// Heap bytes of the models.
    pub bytes: u64,
}

/// `lhd-samples`' default: RankCache's associativity (LHD §4.1).
pub const DEFAULT_LHD_SAMPLES: usize = 64;
/// The fewest age bins a shard's model keeps.
pub const MIN_MAX_AGE: usize = 1000;
/// Recently admitted low-density entries kept as extra eviction candidates (as the
/// simulator's `LhdConfig::admissions`).
const ADMISSIONS: usize = 8;

/// The model configuration of one shard of `shards` (see the module documentation).
pub fn shard_config(shards: usize) -> LhdConfig {
    let d = LhdConfig::default();
    let shards = shards.max(1);
    LhdConfig {
        reconfigure_every: (d.reconfigure_every / shards as u64).max(1000),
        max_age: (d.max_age / shards).clamp(MIN_MAX_AGE, d.max_age),
        class_max_age: d.max_age,
        initial_age_shift: d
            .initial_age_shift
            .saturating_sub(shards.next_power_of_two().trailing_zeros()),
        ..d
    }
}

/// Class of a hit age on the log₂ scale the tag keeps: 0 for 0, `l` for
/// [2^(l-1), 2^l), 15 for the maximum age or more.
fn quantize(age: u16, max_age: usize) -> u32 {
    if age as usize >= max_age {
        15
    } else if age == 0 {
        0
    } else {
        (32 - (age as u32).leading_zeros()).min(14)
    }
}

/// A representative age of a class of [`quantize`]: the middle (1.5 × its lower bound).
fn dequantize(q: u32, max_age: usize) -> u16 {
    match q {
        0 => 0,
        15 => max_age as u16,
        l => ((3u32 << (l - 1)) / 2).min(max_age as u32 - 1) as u16,
    }
}

/// The clock bits a tag keeps (see the module documentation).
pub(crate) const TAG_CLOCK_MASK: u32 = (1 << 23) - 1;
/// A tag bit: rank this entry from its header (an explorer, a hash or set, or an entry
/// not tagged since it was inserted: [`crate::index::UNTAGGED`] has it set).
pub(crate) const TAG_FROM_ENTRY: u32 = 1 << 23;

/// The tag of entry `e` in any format (an LRU-format entry's 32-bit clock holds the
/// same low bits; it ranks as a new object, as [`PartLhd::tag_of`] reads it).
pub(crate) fn tag_of_entry(e: Entry) -> u32 {
    let (word, from_entry) = match e.lhd() {
        Some((word, explorer)) => (word, explorer || e.is_object()),
        None => (e.atime() & LHD_CLOCK_MASK | 15 << 28, e.is_object()),
    };
    word & !(TAG_CLOCK_MASK + 1) | if from_entry { TAG_FROM_ENTRY } else { 0 }
}

/// One part's LHD state.
pub(crate) struct PartLhd {
    pub(crate) model: LhdModel,
    pub(crate) rng: SmallRng,
    /// Recent low-density admissions: (index hash, entry), checked against the index
    /// before use (an entry may have been removed or moved since).
    recent: [Option<(u64, Entry)>; ADMISSIONS],
    recent_head: usize,
    /// The capacity the explorer budget was sized for.
    capacity: u64,
    /// Read misses not yet followed by an insert: a cache fills a miss with a SET, and
    /// the simulator counts the pair as one access, so the insert that follows a miss
    /// does not count toward reconfiguration again (capped, so that misses never
    /// filled do not stop inserts from counting for long).
    unfilled_misses: u32,
}

// SAFETY: `recent` holds entry handles only as lookup keys: they are dereferenced only
// after the owning part's index confirms them live, under the shard's lock.
unsafe impl Send for PartLhd {}

impl PartLhd {
    pub(crate) fn new(shards: usize, capacity: u64, seed: u64) -> Box<PartLhd> {
        Box::new(PartLhd {
            model: LhdModel::new(shard_config(shards), capacity),
            rng: SmallRng::seed_from_u64(seed),
            recent: [None; ADMISSIONS],
            recent_head: 0,
            capacity,
            unfilled_misses: 0,
        })
    }

    fn max_age(&self) -> usize {
        self.model.config().max_age
    }

    /// Follows a change of the part's memory budget (CONFIG SET maxmemory).
    pub(crate) fn set_capacity(&mut self, capacity: u64) {
        if capacity != self.capacity {
            self.capacity = capacity;
            self.model.set_capacity(capacity);
        }
    }

    /// The model's view of `e` at shard clock `clock` (the model's time must be `clock`).
    pub(crate) fn tag_of(&self, e: Entry, clock: u64) -> LhdTag {
        let max_age = self.max_age();
        match e.lhd() {
            Some((word, explorer)) => {
                let age = clock24_age(word, clock as u32);
                LhdTag {
                    timestamp: clock.saturating_sub(age as u64),
                    last_hit_age: dequantize((word >> 24) & 15, max_age),
                    last_last_hit_age: dequantize(word >> 28, max_age),
                    app: 0,
                    explorer,
                }
            }
            // Last touched under LRU: a new object of the age its clock gives.
            None => LhdTag {
                timestamp: clock.saturating_sub(e.idle(clock as u32) as u64),
                last_hit_age: 0,
                last_last_hit_age: max_age as u16,
                app: 0,
                explorer: false,
            },
        }
    }

    fn store_tag(&self, e: Entry, tag: &LhdTag) {
        let max_age = self.max_age();
        let word = (tag.timestamp as u32 & LHD_CLOCK_MASK)
            | quantize(tag.last_hit_age, max_age) << 24
            | quantize(tag.last_last_hit_age, max_age) << 28;
        e.set_lhd(word, tag.explorer);
    }

    /// One access of the part at shard clock `clock` (counts toward reconfiguration).
    #[inline]
    pub(crate) fn access(&mut self, clock: u64, cached: usize) {
        self.model.set_time(clock);
        self.model.count_access(cached);
    }

    /// A read missed (after [`Self::access`] counted it).
    #[inline]
    pub(crate) fn missed(&mut self) {
        self.unfilled_misses = (self.unfilled_misses + 1).min(1024);
    }

    /// An insert at shard clock `clock`: one access, unless it fills a miss.
    #[inline]
    pub(crate) fn fill(&mut self, clock: u64, cached: usize) {
        if self.unfilled_misses > 0 {
            self.unfilled_misses -= 1;
            self.model.set_time(clock);
        } else {
            self.access(clock, cached);
        }
    }

    /// A hit (read or overwrite) of `e`.
    pub(crate) fn hit(&mut self, e: Entry, clock: u64) {
        self.model.set_time(clock);
        let mut tag = self.tag_of(e, clock);
        self.model.on_hit(&mut tag, e.rank_size(), &mut self.rng);
        self.store_tag(e, &tag);
    }

    /// `e` (index hash `h`) was just added.
    pub(crate) fn admit(&mut self, e: Entry, h: u64, clock: u64) {
        self.model.set_time(clock);
        let size = e.rank_size();
        let tag = self.model.on_insert(0, size, &mut self.rng);
        if self.model.looks_like_victim(&tag, size) {
            self.recent[self.recent_head % ADMISSIONS] = Some((h, e));
            self.recent_head = self.recent_head.wrapping_add(1);
        }
        self.store_tag(e, &tag);
    }

    /// `e` leaves for another reason than eviction (its explorer budget comes back).
    #[inline]
    pub(crate) fn removed(&mut self, e: Entry) {
        if e.is_lhd_explorer() {
            self.model.on_remove(
                &LhdTag {
                    explorer: true,
                    ..self.tag_of(e, 0)
                },
                e.rank_size(),
            );
        }
    }

    /// Hit density of `e` per byte (the model's time must be the shard's clock).
    #[inline]
    pub(crate) fn rank(&self, e: Entry, clock: u64) -> f32 {
        self.model.rank(&self.tag_of(e, clock), e.rank_size())
    }

    /// What [`Self::prepare_rank`] gives for an entry of tag `tag` in a slab slot of
    /// `slot_size` bytes, without reading the entry; None if the tag says to read it
    /// (the model's time must be `clock`).
    #[inline]
    pub(crate) fn prepare_rank_tagged(
        &self,
        tag: u32,
        slot_size: usize,
        clock: u64,
    ) -> Option<(LhdTag, u64)> {
        if tag & TAG_FROM_ENTRY != 0 {
            return None;
        }
        let max_age = self.max_age();
        let age = (clock as u32).wrapping_sub(tag) & TAG_CLOCK_MASK;
        let tag = LhdTag {
            timestamp: clock.saturating_sub(age as u64),
            last_hit_age: dequantize((tag >> 24) & 15, max_age),
            last_last_hit_age: dequantize(tag >> 28, max_age),
            app: 0,
            explorer: false,
        };
        self.model.prefetch_rank(&tag);
        Some((tag, slot_size as u64))
    }

    /// [`Self::rank`] in two steps for a batch of candidates: what ranking `e` needs
    /// from the entry, with the density-table word it will read already being fetched
    /// (the tables of all shards' models outgrow L2), then [`Self::rank_of`].
    #[inline]
    pub(crate) fn prepare_rank(&self, e: Entry, clock: u64) -> (LhdTag, u64) {
        let tag = self.tag_of(e, clock);
        self.model.prefetch_rank(&tag);
        (tag, e.rank_size())
    }

    #[inline]
    pub(crate) fn rank_of(&self, prepared: &(LhdTag, u64)) -> f32 {
        self.model.rank(&prepared.0, prepared.1)
    }

    /// `e`, ranked `rank`, is being evicted: the model learns it; its explorer mark is
    /// cleared so that the removal that follows does not return the budget twice.
    pub(crate) fn evicted(&mut self, e: Entry, clock: u64, rank: f32) {
        let tag = self.tag_of(e, clock);
        self.model.on_evict(&tag, e.rank_size(), rank);
        if tag.explorer {
            self.store_tag(
                e,
                &LhdTag {
                    explorer: false,
                    ..tag
                },
            );
        }
    }

    /// Heap bytes of the model: three f32 tables (hits, evictions, densities) per class
    /// and age, and the class-by-age-sum table.
    pub(crate) fn heap_bytes(&self) -> u64 {
        let c = self.model.config();
        (c.hit_age_classes * c.app_classes * c.max_age * 12 + 2 * c.max_age + 1) as u64
            + std::mem::size_of::<PartLhd>() as u64
    }

    /// The recent admissions still worth a look, as (hash, entry) to confirm.
    pub(crate) fn recent(&self) -> impl Iterator<Item = (u64, Entry)> + '_ {
        self.recent.iter().flatten().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_ages_keep_their_power_of_two() {
        for max_age in [1000usize, 20_000] {
            assert_eq!(dequantize(quantize(0, max_age), max_age), 0);
            assert_eq!(
                dequantize(quantize(max_age as u16, max_age), max_age),
                max_age as u16
            );
            for age in 1..max_age as u16 {
                let q = quantize(age, max_age);
                assert!(q < 15, "{age}");
                let back = dequantize(q, max_age) as u32;
                // Same power of two, except the top class which spans up to max_age.
                let lo = 1u32 << (q - 1);
                assert!(
                    back >= lo && back < max_age as u32,
                    "{age} -> {q} -> {back}"
                );
                if q < 14 {
                    assert!(back < 2 * lo && (age as u32) < 2 * lo && age as u32 >= lo);
                }
            }
        }
    }

    /// An entry in a slab slot ranks the same from its index tag and slot size as from
    /// its header, for new objects, objects hit once or twice at various ages, entries
    /// last touched under LRU, and as the clock runs past 2^23 (within the tag's range
    /// of ages); explorers and entries of the long format say "read the entry".
    #[test]
    fn a_tag_ranks_an_entry_as_its_header_does() {
        let mut l = PartLhd::new(1, 1 << 20, 5);
        let mut clock = (1u64 << 23) - 5_000;
        let mut entries = Vec::new();
        for i in 0..200u32 {
            clock += 37;
            l.model.set_time(clock);
            let key = format!("key:{i}");
            let value = vec![b'v'; 10 + (i as usize * 7) % 200];
            let e = Entry::new(0, key.as_bytes(), &value, None, clock as u32);
            match i % 4 {
                0 => {} // LRU's format
                1 => l.admit(e, i as u64, clock),
                _ => {
                    l.admit(e, i as u64, clock - 3_000);
                    l.hit(e, clock - 1_000 + i as u64);
                    if i % 4 == 3 {
                        l.hit(e, clock);
                    }
                }
            }
            entries.push(e);
        }
        let mut checked = 0;
        for later in [0u64, 1, 900, 17_000, 3_000_000] {
            let now = clock + later;
            l.model.set_time(now);
            for &e in &entries {
                let tag = tag_of_entry(e);
                if crate::slab::region_offset(e.addr()).is_none() || e.is_lhd_explorer() {
                    continue;
                }
                let slot = crate::slab::slot_size(e.addr() as *const u8);
                let from_tag = l
                    .prepare_rank_tagged(tag, slot, now)
                    .expect("a string's tag");
                assert_eq!(l.rank_of(&from_tag), l.rank(e, now), "entry {:?}", e.key());
                checked += 1;
            }
        }
        assert!(checked >= 900, "{checked}");
        // An explorer's or a long entry's tag defers to the entry.
        let x = Entry::new(0, b"explorer", b"v", None, 0);
        x.set_lhd(5, true);
        assert!(l.prepare_rank_tagged(tag_of_entry(x), 20, clock).is_none());
        assert!(l
            .prepare_rank_tagged(crate::index::UNTAGGED, 20, clock)
            .is_none());
        let long = Entry::new(0, b"long", &[b'v'; 300], None, 0);
        assert!(crate::slab::region_offset(long.addr()).is_none());
        for e in entries.into_iter().chain([x, long]) {
            e.free();
        }
    }

    #[test]
    fn shard_configs_scale_with_the_shard_count() {
        // One shard is the simulator's model (a class scale equal to max_age is the
        // default's 0).
        let one = shard_config(1);
        assert_eq!(one.class_max_age, one.max_age);
        assert_eq!(
            LhdConfig {
                class_max_age: 0,
                ..one
            },
            LhdConfig::default()
        );
        assert_eq!(shard_config(64).class_max_age, 20_000);
        assert_eq!(shard_config(64).initial_age_shift, 4);
        let c = shard_config(64);
        assert_eq!(c.reconfigure_every, (1 << 20) / 64);
        assert_eq!(c.max_age, MIN_MAX_AGE);
        assert_eq!(shard_config(4).max_age, 5000);
        assert_eq!(shard_config(1 << 12).reconfigure_every, 1000);
    }
}
