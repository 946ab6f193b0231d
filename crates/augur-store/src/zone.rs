//! The two zones of zExpander (Wu, Ahmad, Li, Jiang: "zExpander: a key-value cache with
//! both high performance and fewer misses", EuroSys'16) around one tenant's part of a
//! shard: the N-zone is the part's ordinary entries, the Z-zone a [`ZZone`] of compressed
//! blocks (`crate::zzone`, §3.1-3.2) holding what the N-zone evicts.
//!
//! What this module decides, and why (the shard does the moving):
//!
//! - **Where memory goes (§3.3.1).** The N-zone has a target share of the part's memory
//!   (N + Z bytes). An eviction demotes from the N-zone while it is over its share and
//!   evicts from the Z-zone otherwise, so both zones together stay within the part's
//!   budget (`maxmemory`'s share, or the tenant's target). As in the paper the N-zone is
//!   held at its target from the start: a write that would take it past its share of the
//!   budget demotes first, even before memory is full. (Letting it fill all memory and
//!   shrink later left its allocator slabs half empty: measured, RSS 1.63x the bytes in
//!   use, against 1.28x with the cap.) Every window (default one
//!   minute) the fraction of requests served in the N-zone is compared with the target
//!   fraction (default 90 %): below it, the N-zone's share grows by 3 % of memory; above
//!   it, shrinks by 3 %, with the paper's expand / shrink / stay status so a share moves
//!   once per direction change. Requests that need no (de)compression (misses and deletes
//!   the Content Filter rules out) are not counted; demotions count as served in Z, as in
//!   the paper. Shrinking happens in the background (the store's cron demotes a bounded
//!   number of entries per tick) rather than on the request path.
//! - **When a Z item moves back (§3.3.2).** A GET served from the Z-zone promotes the
//!   item only when its reuse time (since its previous access, remembered in a small
//!   table of hashed keys and times, the paper's two records per block) is shorter than
//!   the N-zone's locality benchmark; otherwise the value is decompressed and served in
//!   place. The paper measures the benchmark with Marker SETs: keys never re-accessed,
//!   timed from insertion to eviction. Under sampled eviction that time is exactly the
//!   idle age a victim has when it is evicted without having been touched again, so the
//!   benchmark here samples the idle age of every `MARKER_EVERY`-th demoted victim
//!   instead of inserting fake keys (which KEYS, SCAN and DBSIZE would see). As in the
//!   paper it is a weighted mean of the three most recent samples (weights 3:2:1, newest
//!   first). Times are the shard's logical clock (accesses), like the LRU clock.
//! - **A SET over a Z-zone item (§3.3.2, second scenario)** writes the new value to the
//!   N-zone and leaves the old Z copy in place, marked stale (invisible to every lookup,
//!   enumeration and count), instead of rewriting its block at once: if the new value is
//!   demoted again soon (a cold item), the demotion replaces the stale copy in the same
//!   block write; otherwise the Z-zone's replacement first removes the stale copies that
//!   are older than the benchmark, as the paper's pending removals.
//! - Every other command that finds its key in the Z-zone moves it to the N-zone first
//!   (the shard's `find_live_pos`), so APPEND, SETRANGE, INCR, TTL, OBJECT, RENAME, ...
//!   keep Redis's semantics unchanged for an item in either zone.

use crate::zzone::{Codec, ZConfig, ZZone};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The N-zone's initial share of a part's memory, before the first window adjusts it.
pub(crate) const INITIAL_N_SHARE: f64 = 0.5;
/// `compressed-zone-dict-size`'s default: 4 KB per part (see `zzone`'s module doc for
/// what it buys; a part trains one only once its frames hold 16 times that).
pub const DEFAULT_DICT_SIZE: usize = 4096;
/// §3.3.1: each adjustment moves the N-zone's target by 3 % of the memory.
const SHARE_STEP: f64 = 0.03;
/// The N-zone keeps at least this share (a Z-zone of everything would decompress on
/// every hit) and the Z-zone at least `1 - MAX_N_SHARE` while it is on.
const MIN_N_SHARE: f64 = 0.10;
const MAX_N_SHARE: f64 = 0.97;
/// "Non-trivially" smaller or larger than the target fraction (§3.3.1): a dead band
/// of 1 percentage point.
const DEAD_BAND: f64 = 0.01;
/// One benchmark sample per this many demotions (the paper's "periodically").
const MARKER_EVERY: u64 = 64;
/// How often (in demotions) the zone checks that it stores an item in fewer bytes than
/// the N-zone does.
const PAY_CHECK_EVERY: u64 = 256;
/// The Z-zone must store an item in at most this fraction of the N-zone's bytes per item
/// to keep taking demotions (a margin for the zone's fixed costs and the churn of moving
/// items between zones).
const PAY_MARGIN: f64 = 0.9;
/// Stale copies removed per replacement run at most (bounds one eviction's latency).
const STALE_REMOVALS_PER_RUN: usize = 64;
/// Windows with fewer counted requests than this keep the split unchanged.
const MIN_WINDOW_REQUESTS: u64 = 64;

/// The zone settings the shards read (live by CONFIG SET where noted).
pub(crate) struct ZoneSettings {
    /// `compressed-zone yes|no` (live: turning it off drops the Z-zones' items, which
    /// are counted as evicted).
    pub(crate) enabled: AtomicBool,
    /// `compressed-zone-target`: fraction of requests the N-zone should serve, in
    /// millionths (live).
    target_ppm: AtomicU64,
    /// `compressed-zone-window-ms` (live).
    window_ms: AtomicU64,
    /// Codec and block capacity: fixed at startup (a zone's blocks all share them).
    pub(crate) block: ZConfig,
}

impl ZoneSettings {
    pub(crate) fn new(cfg: &ZoneConfig) -> ZoneSettings {
        ZoneSettings {
            enabled: AtomicBool::new(cfg.enabled),
            target_ppm: AtomicU64::new((cfg.target_n_fraction * 1e6) as u64),
            window_ms: AtomicU64::new(cfg.window_ms),
            block: ZConfig {
                block_capacity: cfg.block_capacity,
                codec: cfg.codec,
                dict_size: cfg.dict_size,
            },
        }
    }
    #[inline]
    pub(crate) fn on(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }
    pub(crate) fn target(&self) -> f64 {
        self.target_ppm.load(Ordering::Relaxed) as f64 / 1e6
    }
    pub(crate) fn set_target(&self, f: f64) {
        self.target_ppm
            .store((f.clamp(0.0, 1.0) * 1e6) as u64, Ordering::Relaxed);
    }
    pub(crate) fn window_ms(&self) -> u64 {
        self.window_ms.load(Ordering::Relaxed)
    }
    pub(crate) fn set_window_ms(&self, ms: u64) {
        self.window_ms.store(ms.max(1), Ordering::Relaxed);
    }
}

/// The compressed zone's configuration (`compressed-zone*` settings).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneConfig {
    pub enabled: bool,
    pub codec: Codec,
    /// Uncompressed bytes a block holds before it splits (§3.1; default 2 KB).
    pub block_capacity: usize,
    /// Bytes of each part's sampled compression dictionary (0: none; see
    /// `zzone`'s module doc).
    pub dict_size: usize,
    /// Fraction of requests the N-zone should serve (§3.3.1; default 0.9).
    pub target_n_fraction: f64,
    /// The adjustment window (§3.3.1; default one minute).
    pub window_ms: u64,
}

impl Default for ZoneConfig {
    fn default() -> Self {
        ZoneConfig {
            enabled: false,
            codec: Codec::Lz4,
            block_capacity: 2048,
            dict_size: DEFAULT_DICT_SIZE,
            target_n_fraction: 0.9,
            window_ms: 60_000,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Action {
    Expand,
    Shrink,
    Stay,
}

/// Reuse-time records of Z-zone reads: a direct-mapped table of (hashed key, logical
/// time), the paper's two 8-byte records per block (§3.3.2) kept per part instead, at
/// one slot per ~8 Z items (grown at window ends).
struct RecentReads {
    slots: Vec<(u32, u32)>,
}

impl RecentReads {
    fn new() -> RecentReads {
        RecentReads {
            slots: vec![(0, 0); 64],
        }
    }
    /// Records a read of hashed key `h` at `now`; returns the reuse time since its last
    /// recorded read, if it is still remembered.
    fn read(&mut self, h: u64, now: u32) -> Option<u32> {
        let tag = (h >> 32) as u32 | 1;
        let i = (h as usize) & (self.slots.len() - 1);
        let (t, at) = self.slots[i];
        self.slots[i] = (tag, now);
        (t == tag).then(|| now.wrapping_sub(at))
    }
    fn forget(&mut self, h: u64) {
        let tag = (h >> 32) as u32 | 1;
        let i = (h as usize) & (self.slots.len() - 1);
        if self.slots[i].0 == tag {
            self.slots[i] = (0, 0);
        }
    }
    fn resize_for(&mut self, items: u64) {
        let want = ((items / 8).max(64) as usize)
            .next_power_of_two()
            .min(1 << 16);
        if want != self.slots.len() {
            self.slots = vec![(0, 0); want];
        }
    }
    fn bytes(&self) -> u64 {
        (self.slots.capacity() * std::mem::size_of::<(u32, u32)>()) as u64
    }
}

/// Counters of one part's zones (INFO zones sums them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ZoneStats {
    pub z_items: u64,
    pub z_bytes: u64,
    /// Uncompressed key + value bytes of the Z-zone's items.
    pub z_raw_bytes: u64,
    /// Compressed bytes of the Z-zone's blocks.
    pub z_compressed_bytes: u64,
    /// Bytes of the parts' live compression dictionaries, and dictionaries sampled.
    pub z_dict_bytes: u64,
    pub z_dicts_trained: u64,
    pub n_bytes: u64,
    pub n_items: u64,
    pub n_hits: u64,
    pub z_hits: u64,
    pub promotions: u64,
    pub demotions: u64,
    pub z_evictions: u64,
    /// Blocks (and large items) decompressed, for any reason: reads, writes, sweeps.
    pub z_decompressions: u64,
    /// Look-ups the Content Filters answered without decompressing (the key is not in
    /// the block), and those they let through for a key that was not there.
    pub z_filter_negatives: u64,
    pub z_filter_false_positives: u64,
    /// Demotions appended to a block's tail rather than rewriting the block.
    pub z_tail_appends: u64,
    /// Blocks compressed whole, and the leaf splits and merges among the reasons.
    pub z_block_writes: u64,
    pub z_splits: u64,
    pub z_merges: u64,
    /// The N-zone's locality benchmark (logical time), 0 before the first sample.
    pub benchmark: u64,
    /// The N-zone's current target share of the part's memory.
    pub n_share: f64,
    /// Fraction of counted requests served in the N-zone in the last full window.
    pub last_window_n_fraction: f64,
    /// Parts (tenant × shard) with a Z-zone: `benchmark`, `n_share` and
    /// `last_window_n_fraction` are their means.
    pub zones: u64,
}

impl ZoneStats {
    pub fn add(&mut self, o: &ZoneStats) {
        self.z_items += o.z_items;
        self.z_bytes += o.z_bytes;
        self.z_raw_bytes += o.z_raw_bytes;
        self.z_compressed_bytes += o.z_compressed_bytes;
        self.z_dict_bytes += o.z_dict_bytes;
        self.z_dicts_trained += o.z_dicts_trained;
        self.n_bytes += o.n_bytes;
        self.n_items += o.n_items;
        self.n_hits += o.n_hits;
        self.z_hits += o.z_hits;
        self.promotions += o.promotions;
        self.demotions += o.demotions;
        self.z_evictions += o.z_evictions;
        self.z_decompressions += o.z_decompressions;
        self.z_filter_negatives += o.z_filter_negatives;
        self.z_filter_false_positives += o.z_filter_false_positives;
        self.z_tail_appends += o.z_tail_appends;
        self.z_block_writes += o.z_block_writes;
        self.z_splits += o.z_splits;
        self.z_merges += o.z_merges;
        if o.zones > 0 {
            let (a, b) = (self.zones as f64, o.zones as f64);
            let mean = |x: f64, y: f64| (x * a + y * b) / (a + b);
            self.n_share = mean(self.n_share, o.n_share);
            self.last_window_n_fraction =
                mean(self.last_window_n_fraction, o.last_window_n_fraction);
            self.benchmark = mean(self.benchmark as f64, o.benchmark as f64) as u64;
            self.zones += o.zones;
        }
    }
}

/// One part's Z-zone and the decisions around it.
pub(crate) struct PartZone {
    pub(crate) z: ZZone,
    /// Per database: Z-zone items and those with a TTL (DBSIZE and INFO keyspace count
    /// both zones).
    pub(crate) keys_per_db: Vec<u64>,
    pub(crate) expires_per_db: Vec<u64>,
    n_share: f64,
    action: Action,
    window_start_ms: u64,
    window_n: u64,
    window_z: u64,
    last_fraction: f64,
    marker_samples: [u64; 3],
    markers_taken: u64,
    recent: RecentReads,
    /// Whether demoting saves memory: false when the Z-zone's bytes per item reached the
    /// N-zone's (incompressible values), and then the zone drains (its items are evicted
    /// first) and eviction drops instead of demoting, so that the zone never holds fewer
    /// items than no zone. Probed again at the first window end with the zone empty.
    pays: bool,
    /// What the empty zone costs (its trie's first levels, tables): fixed, so not part
    /// of what an item costs there.
    base_bytes: u64,
    /// Z copies superseded by a SET in the N-zone, awaiting removal (logical time they
    /// became stale). They are not counted in `keys_per_db`.
    pub(crate) stale: hashbrown::HashMap<(u8, Box<[u8]>), u32>,
    /// Heap bytes of `stale`'s keys.
    pub(crate) stale_key_bytes: u64,
    /// A decompressed value served in place (the slice GET returns).
    pub(crate) scratch: Vec<u8>,
    pub(crate) n_hits: u64,
    pub(crate) z_hits: u64,
    pub(crate) promotions: u64,
    pub(crate) demotions: u64,
    pub(crate) z_evictions: u64,
}

impl PartZone {
    pub(crate) fn new(settings: &ZoneSettings, dbs: usize) -> PartZone {
        // Seeded per process (the store's key hash is), against hash flooding.
        let z = ZZone::with_seed(settings.block, crate::store::key_hash(b"augur zzone seed"));
        PartZone {
            base_bytes: z.bytes(),
            z,
            keys_per_db: vec![0; dbs],
            expires_per_db: vec![0; dbs],
            n_share: INITIAL_N_SHARE,
            action: Action::Stay,
            window_start_ms: 0,
            window_n: 0,
            window_z: 0,
            last_fraction: 0.0,
            marker_samples: [0; 3],
            markers_taken: 0,
            recent: RecentReads::new(),
            pays: true,
            stale: hashbrown::HashMap::new(),
            stale_key_bytes: 0,
            scratch: Vec::new(),
            n_hits: 0,
            z_hits: 0,
            promotions: 0,
            demotions: 0,
            z_evictions: 0,
        }
    }

    /// Bytes this zone holds: the Z-zone's blocks and index, and the reuse table. (The
    /// scratch buffer, at most one value, is not counted, like connection buffers.)
    pub(crate) fn bytes(&self) -> u64 {
        let stale = self.stale.capacity() as u64 * 40 + self.stale_key_bytes;
        self.z.bytes() + self.recent.bytes() + stale
    }

    /// Whether the Z copy of (db, key) is stale (superseded by the N-zone's).
    #[inline]
    pub(crate) fn is_stale(&self, db: u8, key: &[u8]) -> bool {
        !self.stale.is_empty() && self.stale.contains_key(&(db, Box::<[u8]>::from(key)))
    }

    /// Live (not stale) items.
    pub(crate) fn live_items(&self) -> u64 {
        self.z.len() - self.stale.len() as u64
    }

    /// Marks the Z copy of (db, key) stale at logical time `now` (the caller has
    /// uncounted it).
    pub(crate) fn mark_stale(&mut self, db: u8, key: &[u8], now: u32) {
        if self.stale.insert((db, key.into()), now).is_none() {
            self.stale_key_bytes += key.len() as u64;
        }
    }

    /// (db, key) was written to the Z-zone afresh or removed from it: no longer stale.
    /// Returns whether it was.
    pub(crate) fn unstale(&mut self, db: u8, key: &[u8]) -> bool {
        if self.stale.is_empty() {
            return false;
        }
        let gone = self.stale.remove(&(db, Box::<[u8]>::from(key))).is_some();
        if gone {
            self.stale_key_bytes -= key.len() as u64;
        }
        gone
    }

    /// FLUSHDB: the database's stale marks go with its items.
    pub(crate) fn clear_stale_db(&mut self, db: u8) {
        let mut freed = 0u64;
        self.stale.retain(|(d, k), _| {
            let keep = *d != db;
            if !keep {
                freed += k.len() as u64;
            }
            keep
        });
        self.stale_key_bytes -= freed;
    }

    /// The pending removals the replacement runs first: stale copies at least one
    /// benchmark old at logical time `now` (all of them when no benchmark exists yet),
    /// at most `STALE_REMOVALS_PER_RUN`; returns how many were removed.
    pub(crate) fn remove_stale(&mut self, now: u32) -> usize {
        if self.stale.is_empty() {
            return 0;
        }
        let bench = self.benchmark();
        let due: Vec<(u8, Box<[u8]>)> = self
            .stale
            .iter()
            .filter(|(_, &t)| now.wrapping_sub(t) as u64 >= bench)
            .map(|(k, _)| k.clone())
            .take(STALE_REMOVALS_PER_RUN)
            .collect();
        for (db, key) in &due {
            // Its removal is the point; an expired copy is dropped the same.
            let _ = self.z.remove(*db, key, 0);
            self.unstale(*db, key);
        }
        if self.stale.len() * 4 < self.stale.capacity() && self.stale.capacity() > 64 {
            self.stale.shrink_to_fit();
        }
        due.len()
    }

    /// Whether the next eviction of this part should demote from the N-zone (`n_bytes`
    /// over its share of `n_bytes + Z`) rather than evict from the Z-zone.
    pub(crate) fn demote_next(&self, n_bytes: u64) -> bool {
        if self.z.is_empty() {
            return true;
        }
        if !self.pays {
            return false;
        }
        let total = (n_bytes + self.bytes()) as f64;
        n_bytes as f64 > self.n_share * total
    }

    /// The N-zone's target share of memory.
    pub(crate) fn n_share(&self) -> f64 {
        self.n_share
    }

    /// The N-zone's target in bytes, for background shrinking.
    pub(crate) fn n_target(&self, n_bytes: u64) -> u64 {
        ((n_bytes + self.bytes()) as f64 * self.n_share) as u64
    }

    /// The locality benchmark: weighted mean of the last three marker samples (3:2:1).
    pub(crate) fn benchmark(&self) -> u64 {
        let [a, b, c] = self.marker_samples;
        match self.markers_taken {
            0 => 0,
            1 => a,
            2 => (3 * a + 2 * b) / 5,
            _ => (3 * a + 2 * b + c) / 6,
        }
    }

    /// The zone gave up (it does not pay) and is empty: the part drops it and retries
    /// a window later.
    pub(crate) fn gave_up(&self) -> bool {
        !self.pays && self.z.is_empty()
    }

    /// Whether an N-zone victim should move here rather than be evicted.
    pub(crate) fn takes_demotions(&self) -> bool {
        self.pays
    }

    /// A victim with idle age `age` was demoted: count it, take every `MARKER_EVERY`-th
    /// age as a benchmark sample, and every `PAY_CHECK_EVERY`-th compare bytes per item
    /// with the N-zone's (`n_bytes` for `n_items`). A demotion is not a request, so the
    /// split's window (§3.3.1: "the fraction of requests serviced at the N-zone") does
    /// not count it: counted as served in Z, a write-heavy phase (every SET past the
    /// limit demotes one item) read as "the N-zone serves nothing" and grew the N-zone by
    /// 3 % a window, shrinking the zone's capacity while nothing was being read.
    pub(crate) fn note_demotion(&mut self, age: u32, n_bytes: u64, n_items: u64) {
        self.demotions += 1;
        if self.demotions.is_multiple_of(PAY_CHECK_EVERY) && self.z.len() >= 256 && n_items > 0 {
            let marginal = self
                .z
                .bytes()
                .saturating_sub(self.base_bytes + self.z.fixed_bytes());
            let z_per_item = marginal as f64 / self.z.len() as f64;
            let n_per_item = n_bytes as f64 / n_items as f64;
            self.pays = z_per_item < PAY_MARGIN * n_per_item;
        }
        if self.demotions % MARKER_EVERY == 1 {
            self.marker_samples = [age as u64, self.marker_samples[0], self.marker_samples[1]];
            self.markers_taken += 1;
        }
    }

    /// A request served by the N-zone (a hit or a write there).
    #[inline]
    pub(crate) fn served_in_n(&mut self) {
        self.window_n += 1;
    }

    /// A request that decompressed in the Z-zone (a read, or a move to the N-zone).
    pub(crate) fn served_in_z(&mut self) {
        self.window_z += 1;
    }

    /// A GET found hashed key `h` in the Z-zone at logical time `now`: whether to
    /// promote it (its reuse time beats the benchmark, §3.3.2).
    pub(crate) fn promote_on_read(&mut self, h: u64, now: u32) -> bool {
        self.z_hits += 1;
        self.window_z += 1;
        match self.recent.read(h, now) {
            Some(reuse) => {
                let bench = self.benchmark();
                if bench > 0 && (reuse as u64) < bench {
                    self.recent.forget(h);
                    true
                } else {
                    false
                }
            }
            None => false,
        }
    }

    /// Ends the window if `now_ms` is past it: moves the N-zone's share toward the target
    /// fraction (§3.3.1) and resizes the reuse table. The action status is where the
    /// N-zone (`n_bytes` now) stands against its target size: still growing (expand),
    /// still shrinking, or there (stay, within one step); the share moves only when the
    /// zone is not already moving that way, as in the paper.
    pub(crate) fn tick(&mut self, now_ms: u64, n_bytes: u64, settings: &ZoneSettings) {
        if self.window_start_ms == 0 {
            self.window_start_ms = now_ms;
            return;
        }
        if now_ms < self.window_start_ms + settings.window_ms() {
            return;
        }
        let total = (n_bytes + self.bytes()) as f64;
        let gap = n_bytes as f64 - self.n_share * total;
        self.action = if gap < -SHARE_STEP * total {
            Action::Expand
        } else if gap > SHARE_STEP * total {
            Action::Shrink
        } else {
            Action::Stay
        };
        let counted = self.window_n + self.window_z;
        if counted >= MIN_WINDOW_REQUESTS {
            let frac = self.window_n as f64 / counted as f64;
            self.last_fraction = frac;
            let target = settings.target();
            if frac < target - DEAD_BAND && self.action != Action::Expand {
                self.n_share = (self.n_share + SHARE_STEP).min(MAX_N_SHARE);
            } else if frac > target + DEAD_BAND && self.action != Action::Shrink {
                self.n_share = (self.n_share - SHARE_STEP).max(MIN_N_SHARE);
            }
        }
        if !self.pays && self.z.is_empty() {
            self.pays = true;
        }
        self.window_start_ms = now_ms;
        self.window_n = 0;
        self.window_z = 0;
        self.recent.resize_for(self.z.len());
    }

    pub(crate) fn stats(&self) -> ZoneStats {
        let s = self.z.stats();
        ZoneStats {
            z_items: self.live_items(),
            z_bytes: self.bytes(),
            z_raw_bytes: s.raw_bytes,
            z_compressed_bytes: s.compressed_bytes,
            z_dict_bytes: s.dict_bytes,
            z_dicts_trained: s.dicts_trained,
            n_hits: self.n_hits,
            z_hits: self.z_hits,
            promotions: self.promotions,
            demotions: self.demotions,
            z_evictions: self.z_evictions,
            z_decompressions: s.decompressions,
            z_filter_negatives: s.filter_negatives,
            z_filter_false_positives: s.filter_false_positives,
            z_tail_appends: s.tail_appends,
            z_block_writes: s.block_writes,
            z_splits: s.splits,
            z_merges: s.merges,
            benchmark: self.benchmark(),
            n_share: self.n_share,
            last_window_n_fraction: self.last_fraction,
            zones: 1,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §3.3.1 counts requests: demotions alone (a pure write load past the limit) leave
    /// the split where it is, while reads served in the Z-zone move it.
    #[test]
    fn demotions_are_not_requests_for_the_split() {
        let settings = ZoneSettings::new(&ZoneConfig {
            enabled: true,
            ..Default::default()
        });
        settings.set_window_ms(100);
        let mut z = PartZone::new(&settings, 1);
        let n_bytes = 1 << 20;
        z.tick(1_000, n_bytes, &settings);
        for w in 1..=5u64 {
            for _ in 0..1_000 {
                z.note_demotion(10, n_bytes, 10_000);
            }
            z.tick(1_000 + 100 * w, n_bytes, &settings);
        }
        assert_eq!(z.n_share, INITIAL_N_SHARE);
        for w in 6..=8u64 {
            for _ in 0..1_000 {
                z.served_in_z();
            }
            z.tick(1_000 + 100 * w, n_bytes, &settings);
        }
        assert!(z.n_share > INITIAL_N_SHARE + 0.05, "{}", z.n_share);
    }
}
