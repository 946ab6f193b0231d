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
//! # Switching policies live
//!
//! Either format reads under either policy: LRU computes idle time from an LHD tag's 24
//! clock bits ([`Entry::idle`]); LHD reads an entry last touched under LRU as a new
//! object (no hit history) of the age its clock gives. No key is rewritten at a switch.

use crate::entry::{clock24_age, Entry, LHD_CLOCK_MASK};
use crate::index::Table;
use augur_sim::lhd::{CompactTag, LhdConfig, LhdModel, LhdTag};
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

/// An eviction candidate (`shard::lhd_sample_carried`): where it was in the index and
/// what ranks it. 32 bytes; its rank and when that goes stale are kept apart, in
/// [`Carried`].
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    /// The part (tenant) of the shard's parts that the eviction ranked.
    pub(crate) part: u32,
    /// Its size in the rank's unit, saturated at `u32::MAX` (4 GiB: past any value's
    /// proto-max-bulk-len; a saturated size only ranks such an entry a little higher).
    pub(crate) size: u32,
    pub(crate) pos: usize,
    pub(crate) entry: Entry,
    pub(crate) tag: CompactTag,
}

/// The candidates one eviction carries to the next, and the reconfigurations their
/// ranks were read under (a reconfiguration rewrites the density table, so every rank
/// is read again).
///
/// Why parallel arrays, not one array of candidates with their ranks: an eviction
/// scans every carried candidate's rank (for the lowest, for the share to carry) and
/// the shard clock at which it goes stale, but reads or moves the candidate itself only
/// for the few it ranks anew, evicts or drops. With 64-byte candidates in one array
/// each eviction walked (and dirtied) 64 cache lines of its shard's 4 KB; the scans now
/// cover 13 lines (4 B ranks, 8 B clocks, the read flags) and ~20 candidates of 32 B
/// are touched (BENCHMARKS.md, "LHD's carried candidates as parallel arrays").
#[derive(Default)]
pub(crate) struct Carried {
    pub(crate) cands: Vec<Candidate>,
    /// `cands[i]`'s rank.
    pub(crate) ranks: Vec<f32>,
    /// The shard clock at which `cands[i]`'s age leaves the density-table bin its rank
    /// was read from ([`LhdModel::density_entry`]).
    pub(crate) until: Vec<u64>,
    /// Whether `cands[i]`'s header was read during this eviction (scratch).
    pub(crate) read: Vec<bool>,
    pub(crate) epoch: u64,
    /// Scratch of one eviction, kept for its capacity: the candidates to rank (index in
    /// `cands`, density-table entry) and the drawn windows' entries.
    pub(crate) pending: Vec<(usize, usize)>,
    pub(crate) drawn: Vec<(usize, u64, usize)>,
}

impl Carried {
    pub(crate) fn len(&self) -> usize {
        self.cands.len()
    }

    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.cands.truncate(len);
        self.ranks.truncate(len);
        self.until.truncate(len);
        self.read.truncate(len);
    }

    pub(crate) fn push(&mut self, c: Candidate, rank: f32, until: u64, read: bool) {
        self.cands.push(c);
        self.ranks.push(rank);
        self.until.push(until);
        self.read.push(read);
    }

    /// Removes candidate `i`, the last taking its place.
    pub(crate) fn swap_remove(&mut self, i: usize) -> Candidate {
        self.ranks.swap_remove(i);
        self.until.swap_remove(i);
        self.read.swap_remove(i);
        self.cands.swap_remove(i)
    }
}

/// A recent admission LHD's eviction looks at (libCacheSim's and the authors' LHD rank
/// the last few low-density admissions besides the sample): its index hash, its handle,
/// and the index position it was last confirmed at.
#[derive(Clone, Copy)]
struct RecentAdmission {
    hash: u64,
    entry: Entry,
    /// Where the index held it at the last confirmation; `usize::MAX` before the first.
    pos: usize,
}

/// One part's LHD state.
pub(crate) struct PartLhd {
    pub(crate) model: LhdModel,
    pub(crate) rng: SmallRng,
    /// Recent low-density admissions, checked against the index before use (an entry
    /// may have been removed or moved since).
    recent: [Option<RecentAdmission>; ADMISSIONS],
    recent_head: usize,
    /// The model's class code ([`CompactTag`]'s `code`, explorer bit clear) of every
    /// pair of quantized hit ages, as an LHD tag's top byte holds them: ranking a sampled
    /// entry is then a table lookup, not two [`dequantize`]s (a `match` on data, one
    /// mispredicted branch in three) and the class-by-sum lookup.
    class_codes: [u16; 256],
    /// The lowest-ranked candidates of the last eviction that it did not evict, to be
    /// ranked again by the next (never read until the index confirms them).
    pub(crate) carried: Carried,
    /// The capacity the explorer budget was sized for.
    capacity: u64,
}

// SAFETY: `recent` and `carried` hold entry handles only as lookup keys: they are
// dereferenced only after the owning part's index confirms them live, under the shard's
// lock.
unsafe impl Send for PartLhd {}

impl PartLhd {
    pub(crate) fn new(shards: usize, capacity: u64, seed: u64) -> Box<PartLhd> {
        let model = LhdModel::new(shard_config(shards), capacity);
        let max_age = model.config().max_age;
        let class_codes = std::array::from_fn(|byte| {
            let tag = LhdTag {
                timestamp: 0,
                last_hit_age: dequantize(byte as u32 & 15, max_age),
                last_last_hit_age: dequantize(byte as u32 >> 4, max_age),
                app: 0,
                explorer: false,
            };
            model.compact(&tag).code
        });
        Box::new(PartLhd {
            model,
            class_codes,
            carried: Carried::default(),
            rng: SmallRng::seed_from_u64(seed),
            recent: [None; ADMISSIONS],
            recent_head: 0,
            capacity,
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

    /// [`Self::tag_of`] in the model's compact form (the same rank, see
    /// [`LhdModel::rank_compact`]), from `e`'s header word and flags as [`Entry::lhd`]
    /// gives them: the clock's age and a [`Self::class_codes`] lookup.
    #[inline]
    pub(crate) fn compact_of(&self, e: Entry, clock: u64) -> CompactTag {
        match e.lhd() {
            Some((word, explorer)) => {
                let age = u64::from(clock24_age(word, clock as u32)).min(clock);
                CompactTag {
                    stamp: clock.wrapping_sub(age) as u32,
                    code: self.class_codes[(word >> 24) as usize] | u16::from(explorer) << 15,
                    last_hit_age: 0,
                }
            }
            None => self.model.compact(&self.tag_of(e, clock)),
        }
    }

    /// What an eviction reads of `e` (at index position `pos` of part `part`) to rank
    /// it: one header read, and the density-table word its rank needs already being
    /// fetched; its rank is left to read ([`Self::rank_candidate`] of the returned
    /// entry) once a batch's words are on their way. As (candidate, density-table
    /// entry, the shard clock at which its rank goes stale).
    #[inline]
    pub(crate) fn candidate(
        &self,
        part: usize,
        pos: usize,
        e: Entry,
        clock: u64,
    ) -> (Candidate, usize, u64) {
        let tag = self.compact_of(e, clock);
        let (at, until) = self.model.density_entry(tag);
        self.model.prefetch_density_entry(at);
        let c = Candidate {
            part: part as u32,
            size: u32::try_from(e.rank_size()).unwrap_or(u32::MAX),
            pos,
            entry: e,
            tag,
        };
        (c, at, until)
    }

    /// The rank of a [`Self::candidate`] whose density-table entry is `at`.
    #[inline]
    pub(crate) fn rank_candidate(&self, c: &Candidate, at: usize) -> f32 {
        self.model.rank_compact_at(at, c.tag, u64::from(c.size))
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

    /// A hit (read or overwrite) of `e`.
    pub(crate) fn hit(&mut self, e: Entry, clock: u64) {
        self.model.set_time(clock);
        let mut tag = self.tag_of(e, clock);
        self.model
            .on_hit_batched(&mut tag, e.rank_size(), &mut self.rng);
        self.store_tag(e, &tag);
    }

    /// The tag [`Self::evicted`] of `e` counts, read once: its histogram bin starts
    /// arriving now, for a caller with other work to do before the count (the victim's
    /// index position).
    #[inline]
    pub(crate) fn eviction_tag(&self, e: Entry, clock: u64) -> LhdTag {
        let tag = self.tag_of(e, clock);
        self.model.prefetch_eviction(&tag);
        tag
    }

    /// `e` (index hash `h`) was just added.
    pub(crate) fn admit(&mut self, e: Entry, h: u64, clock: u64) {
        self.model.set_time(clock);
        let size = e.rank_size();
        let tag = self.model.on_insert(0, size, &mut self.rng);
        if self.model.looks_like_victim(&tag, size) {
            self.recent[self.recent_head % ADMISSIONS] = Some(RecentAdmission {
                hash: h,
                entry: e,
                pos: usize::MAX,
            });
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

    /// Hit density of `e` per byte (the model's time must be the shard's clock), from
    /// its compact tag (a class-code lookup, not two `dequantize`s and the class by
    /// sum: the same value, tested below).
    #[inline]
    pub(crate) fn rank(&self, e: Entry, clock: u64) -> f32 {
        self.model
            .rank_compact(self.compact_of(e, clock), e.rank_size())
    }

    /// `e`, ranked `rank`, is being evicted: the model learns it; its explorer mark is
    /// cleared so that the removal that follows does not return the budget twice.
    pub(crate) fn evicted(&mut self, e: Entry, tag: LhdTag, rank: f32) {
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

    /// Starts fetching the index words that confirm the recent admissions (where each
    /// was last confirmed, else its hash's home), so that [`Self::confirm_recent`]
    /// after the sample finds them arrived.
    pub(crate) fn prefetch_recent(&self, table: &Table) {
        for r in self.recent.iter().flatten() {
            if r.pos == usize::MAX {
                table.prefetch_home(r.hash);
            } else {
                table.prefetch_position(r.pos);
            }
        }
    }

    /// The recent admissions `table` still holds (the handle compared, never read,
    /// until the index confirms it). Each is confirmed at the position it was last
    /// confirmed at, one index word, and only when it is no longer there (moved by a
    /// removal's backward shift or a resize, or gone) by a probe from its hash's home:
    /// an admission stays here for up to 8 later admissions and is looked at by every
    /// eviction meanwhile, and those probes (a cluster's words each, with a
    /// mispredicted exit) were ~4 % of the server's cycles under evicting SETs. One no
    /// longer in the index is forgotten (an entry once gone never comes back under the
    /// same handle as the same admission).
    fn confirm_recent(&mut self, table: &Table) -> [Option<(Entry, usize)>; ADMISSIONS] {
        let mut live = [None; ADMISSIONS];
        for (slot, out) in self.recent.iter_mut().zip(&mut live) {
            let Some(r) = slot else { continue };
            if table.at(r.pos) != Some(r.entry) {
                match table.find(r.hash, |x| x == r.entry) {
                    Some(pos) => r.pos = pos,
                    None => {
                        *slot = None;
                        continue;
                    }
                }
            }
            *out = Some((r.entry, r.pos));
        }
        live
    }

    /// The lowest-ranked of the recent admissions `table` still holds
    /// ([`Self::confirm_recent`]), never `pinned` and, `from_volatile`, only one with a
    /// TTL; the first of equal ranks; as (entry, rank, its index position). What both
    /// LHD victims (a tenant's own, free competition) compare with their sample's
    /// lowest.
    pub(crate) fn lowest_recent(
        &mut self,
        table: &Table,
        pinned: Option<Entry>,
        from_volatile: bool,
        clock: u64,
    ) -> Option<(Entry, f32, usize)> {
        let mut lowest: Option<(Entry, f32, usize)> = None;
        for (e, pos) in self.confirm_recent(table).into_iter().flatten() {
            if Some(e) != pinned && (!from_volatile || e.has_ttl()) {
                let r = self.rank(e, clock);
                if lowest.is_none_or(|(_, b, _)| r < b) {
                    lowest = Some((e, r, pos));
                }
            }
        }
        lowest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recent admissions are confirmed by the index wherever it now holds them:
    /// at the position of their last confirmation, after a removal's backward shift or a
    /// resize moved them (found again, the new position kept), and a removed one is
    /// never returned again, even when its key comes back at another handle.
    #[test]
    fn recent_admissions_follow_the_index() {
        let hash = |e: Entry| crate::store::key_hash(e.key());
        let mut l = PartLhd::new(64, 1 << 20, 7);
        let mut table = Table::new();
        let mut entries: Vec<Entry> = (0..40)
            .map(|i| Entry::new(0, format!("k{i}").as_bytes(), b"v", None, 0))
            .collect();
        for &e in &entries {
            table.insert(hash(e), e, &hash);
        }
        let admitted = &entries[32..];
        for (slot, &e) in l.recent.iter_mut().zip(admitted) {
            *slot = Some(RecentAdmission {
                hash: hash(e),
                entry: e,
                pos: usize::MAX,
            });
        }
        let live = |l: &mut PartLhd, table: &Table| -> Vec<Entry> {
            (l.confirm_recent(table).into_iter().flatten())
                .map(|(e, pos)| {
                    assert_eq!(table.at(pos), Some(e), "confirmed where it is");
                    e
                })
                .collect()
        };
        assert_eq!(live(&mut l, &table), admitted);
        for r in l.recent.iter().flatten() {
            assert_eq!(table.at(r.pos), Some(r.entry), "positions kept");
        }
        // Removing everything else moves some of them (backward shift) and grows nothing.
        let gone = [entries[32], entries[35]];
        for &e in entries[..32].iter().chain(&gone) {
            let pos = table.find(hash(e), |x| x == e).expect("present");
            table.remove(pos, &hash);
        }
        let want: Vec<Entry> = admitted
            .iter()
            .copied()
            .filter(|e| !gone.contains(e))
            .collect();
        assert_eq!(live(&mut l, &table), want);
        assert_eq!(
            l.recent.iter().flatten().count(),
            6,
            "the removed are forgotten"
        );
        for r in l.recent.iter().flatten() {
            assert_eq!(table.at(r.pos), Some(r.entry));
        }
        // A resize moves every entry; a removed key re-inserted is another handle.
        let back = Entry::new(0, b"k32", b"v", None, 0);
        table.insert(hash(back), back, &hash);
        let more: Vec<Entry> = (100..400)
            .map(|i| Entry::new(0, format!("k{i}").as_bytes(), b"v", None, 0))
            .collect();
        for &e in &more {
            table.insert(hash(e), e, &hash);
        }
        assert_eq!(live(&mut l, &table), want);
        for r in l.recent.iter().flatten() {
            assert_eq!(table.at(r.pos), Some(r.entry));
        }
        table.clear();
        entries
            .drain(..)
            .chain(more)
            .chain([back])
            .for_each(Entry::free);
    }

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

    /// A sampled entry's compact rank ([`PartLhd::compact_of`], what evictions rank by)
    /// is bit for bit its full rank ([`PartLhd::rank`]), for entries with every kind of
    /// hit history, explorers, entries last touched under LRU, and ages from 0 to past
    /// the 24-bit clock, under a model that has reconfigured (ranks that differ).
    #[test]
    fn compact_ranks_are_the_full_ranks() {
        use rand::Rng;
        let mut l = PartLhd::new(1024, 1 << 20, 7);
        let mut rng = SmallRng::seed_from_u64(3);
        let entries: Vec<Entry> = (0..500)
            .map(|i| Entry::new(0, format!("k{i}").as_bytes(), &vec![b'v'; i % 300], None, 0))
            .collect();
        let mut clock = 0u64;
        for (i, &e) in entries.iter().enumerate() {
            clock += 1;
            l.access(clock, i);
            l.admit(e, i as u64, clock);
        }
        for step in 0..40_000 {
            clock += 1;
            // A hot tenth and a cold rest, so that classes and ages rank apart.
            let e = entries[rng.gen_range(0..if step % 2 == 0 { 50 } else { 500 })];
            l.access(clock, entries.len());
            l.hit(e, clock);
            if step % 7 == 0 {
                let v = entries[rng.gen_range(0..entries.len())];
                let r = l.rank(v, clock);
                let tag = l.eviction_tag(v, clock);
                l.evicted(v, tag, r);
                l.admit(v, 0, clock);
            }
        }
        assert!(l.model.reconfigurations() > 0);
        assert!(entries.iter().any(|e| e.is_lhd_explorer()), "an explorer");
        for e in entries.iter().step_by(10) {
            e.set_atime(clock as u32 - 5);
        }
        let mut ranks = std::collections::HashSet::new();
        for later in [0, 1, 100, 5000, 1 << 20, 1 << 25] {
            let now = clock + later;
            l.model.set_time(now);
            for &e in &entries {
                let full = l.model.rank(&l.tag_of(e, now), e.rank_size());
                assert_eq!(l.rank(e, now).to_bits(), full.to_bits());
                let compact = l.model.rank_compact(l.compact_of(e, now), e.rank_size());
                assert_eq!(
                    full.to_bits(),
                    compact.to_bits(),
                    "{later} {full} {compact}"
                );
                ranks.insert(full.to_bits());
            }
        }
        assert!(ranks.len() > 100, "{} distinct ranks", ranks.len());
        entries.into_iter().for_each(Entry::free);
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
