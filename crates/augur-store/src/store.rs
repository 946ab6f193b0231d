//! The store: shards, live configuration, and whole-keyspace operations.

use crate::defrag::DefragStats;
use crate::tenant::{Ns, Partitioning, ReferenceSink, TenantId, TenantTable, MAX_TENANTS};
use crate::{EvictionPolicy, Shard};
use parking_lot::{Mutex, MutexGuard};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Number of independently locked shards (rounded up to a power of two).
    pub shards: usize,
    /// Number of databases (SELECT 0..databases-1), at most 256.
    pub databases: usize,
    /// Memory limit in bytes; 0 means no limit.
    pub maxmemory: u64,
    pub policy: EvictionPolicy,
    /// `maxmemory-samples` K.
    pub samples: usize,
    /// The compressed zone (zExpander; `crate::zone`).
    pub zone: crate::zone::ZoneConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            shards: 16,
            databases: 16,
            maxmemory: 0,
            policy: EvictionPolicy::NoEviction,
            samples: 5,
            zone: Default::default(),
        }
    }
}

/// Counters for INFO stats / keyspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub evicted_keys: u64,
    pub expired_keys: u64,
    /// Per database: (keys, keys with a TTL).
    pub keys_per_db: Vec<(u64, u64)>,
}

/// One tenant's figures, for TENANT INFO, INFO tenants and the tuner.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantStats {
    pub hits: u64,
    pub misses: u64,
    pub writes: u64,
    pub evicted: u64,
    pub expired: u64,
    /// Bytes charged to the tenant (its share of `used_memory`).
    pub used_bytes: u64,
    pub keys: u64,
}

/// One page of SCAN.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanPage {
    /// 0 when the iteration is complete.
    pub next_cursor: u64,
    pub keys: Vec<Vec<u8>>,
}

/// Configuration the shards read on every write; changed live by CONFIG SET.
pub(crate) struct SharedConfig {
    maxmemory: AtomicU64,
    policy: AtomicU8,
    samples: AtomicUsize,
    /// `lhd-samples`: candidates an LHD eviction ranks (`crate::lhd`).
    lhd_samples: AtomicUsize,
    /// `lfu-log-factor` and `lfu-decay-time` (minutes): Redis LFU's tuning (`crate::lfu`).
    lfu_log_factor: AtomicU32,
    lfu_decay_minutes: AtomicU32,
    pub(crate) shards: usize,
    pub(crate) databases: usize,
    pub(crate) tenants: TenantTable,
    /// Where sampled references go (set once by the server when it starts profiling).
    pub(crate) sink: OnceLock<Arc<dyn ReferenceSink>>,
    /// Hash and set encoding thresholds (CONFIG SET hash-max-listpack-*, ...).
    limits: parking_lot::RwLock<crate::object::Limits>,
    /// `notify-keyspace-events` (Redis's flags word, [`crate::notify::flags`]): the
    /// server's commands and the shards' own events read it.
    pub(crate) notify: std::sync::atomic::AtomicU32,
    /// Where store events go (set once by the server).
    pub(crate) events: OnceLock<Arc<dyn crate::notify::KeyEventSink>>,
    /// Where key changes go while `key_changes_on` (CLIENT TRACKING; set once).
    pub(crate) changes: OnceLock<Arc<dyn crate::notify::KeyChangeSink>>,
    /// Whether any client tracks keys: off, a change costs one relaxed load.
    pub(crate) key_changes_on: std::sync::atomic::AtomicBool,
    /// Writes may exceed the memory limits (set while an `allow-oom` script runs).
    pub(crate) oom_exempt: std::sync::atomic::AtomicBool,
    /// Until when (Unix ms) reads leave expired keys in place (0: no pause): CLIENT
    /// PAUSE, during which Redis's `expireIfNeeded` reports a key expired without
    /// deleting it, so that a paused dataset does not change (see
    /// [`Store::pause_expiry`]).
    pub(crate) expiry_paused_until_ms: AtomicU64,
    /// The background freer of large values (`crate::lazyfree`).
    pub(crate) lazyfree: crate::lazyfree::LazyFree,
    /// Shards over their share of `maxmemory` on room the others left, for a write
    /// large against the share or because their policy found nothing to evict there (a
    /// volatile policy and no key with a TTL; `Shard::make_room_unpublished`). While any
    /// is, the store may be over `maxmemory` with victims in other shards, which
    /// [`Store::over_limit_for_writes`] then evicts, as Redis's `performEvictions` would;
    /// while none is, every shard is within its share and the store within the limit,
    /// and that check costs this one load.
    pub(crate) borrowing_shards: AtomicUsize,
    /// The compressed zone's settings (`crate::zone`).
    pub(crate) zone: crate::zone::ZoneSettings,
    /// Every shard's [`Published`] cell, in shard order: the store reads the usage and
    /// index hints there without a shard's lock, and a shard reads the whole store's
    /// usage ([`SharedConfig::store_used`]).
    pub(crate) published: Box<[Arc<Published>]>,
}

/// `ceil(m / n)` for `n >= 1`. Every write asks for its shard's limits (twice): a shift for
/// the power-of-two shard counts the server allows, instead of a 64-bit division.
#[inline]
fn ceil_share(m: u64, n: u64) -> u64 {
    if n.is_power_of_two() {
        (m >> n.trailing_zeros()) + u64::from(m & (n - 1) != 0)
    } else {
        m.div_ceil(n)
    }
}

#[cfg(test)]
#[test]
fn ceil_share_is_div_ceil() {
    let ms = [
        0,
        1,
        2,
        3,
        63,
        64,
        65,
        1 << 20,
        (1 << 31) + 7,
        u64::MAX - 1,
        u64::MAX,
    ];
    for n in [1u64, 2, 3, 4, 7, 64, 100, 1 << 16] {
        for m in ms {
            assert_eq!(ceil_share(m, n), m.div_ceil(n), "{m} / {n}");
        }
    }
}

impl SharedConfig {
    /// Whether reads at `now_ms` leave expired keys in place ([`Store::pause_expiry`]).
    #[inline]
    pub(crate) fn expiry_paused(&self, now_ms: u64) -> bool {
        now_ms < self.expiry_paused_until_ms.load(Ordering::Relaxed)
    }

    /// A shard's share of a store-wide limit of `bytes`, rounded up: a limit smaller than
    /// the shard count is still a limit (a share of 0 would mean unlimited).
    pub(crate) fn shard_share(&self, bytes: u64) -> u64 {
        ceil_share(bytes, self.shards as u64)
    }
    /// This shard's share of `maxmemory` (0 = unlimited).
    pub(crate) fn shard_limit(&self) -> u64 {
        self.shard_share(self.maxmemory.load(Ordering::Relaxed))
    }
    /// `maxmemory` itself (0 = unlimited).
    pub(crate) fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }
    /// The store's usage as the shards last published it.
    pub(crate) fn store_used(&self) -> u64 {
        self.published
            .iter()
            .map(|p| p.used.load(Ordering::Relaxed))
            .sum()
    }
    /// This shard's share of tenant `t`'s cap under partitioning (0: none, or
    /// `tenant-partitioning off`, where caps do not apply).
    pub(crate) fn tenant_cap_share(&self, t: TenantId) -> u64 {
        if self.tenants.partitioning() == Partitioning::Off {
            0
        } else {
            self.shard_share(self.tenants.get(t).cap())
        }
    }
    pub(crate) fn policy(&self) -> EvictionPolicy {
        EvictionPolicy::ALL[self.policy.load(Ordering::Relaxed) as usize]
    }
    pub(crate) fn samples(&self) -> usize {
        self.samples.load(Ordering::Relaxed)
    }
    pub(crate) fn lhd_samples(&self) -> usize {
        self.lhd_samples.load(Ordering::Relaxed)
    }
    pub(crate) fn lfu_log_factor(&self) -> u32 {
        self.lfu_log_factor.load(Ordering::Relaxed)
    }
    pub(crate) fn lfu_decay_minutes(&self) -> u32 {
        self.lfu_decay_minutes.load(Ordering::Relaxed)
    }

    /// Whether events of `class` are on: the one relaxed load every event site pays.
    #[inline]
    pub(crate) fn notifies(&self, class: u32) -> bool {
        self.notify.load(Ordering::Relaxed) & class != 0
    }

    /// Hands a store event of tenant `t` in physical database `db` to the sink, if it
    /// would be published at all (`K` or `E` on). Call after [`Self::notifies`].
    #[cold]
    pub(crate) fn emit(&self, t: TenantId, db: u8, key: &[u8], ev: crate::notify::KeyEvent) {
        use crate::notify::flags::{KEYEVENT, KEYSPACE};
        let f = self.notify.load(Ordering::Relaxed);
        if f & ev.class() == 0 || f & (KEYSPACE | KEYEVENT) == 0 {
            return;
        }
        if let Some(sink) = self.events.get() {
            sink.key_event(f, t, self.tenants.db_map(t).logical(db), key, ev);
        }
    }
    /// The policy tenant `t`'s entries are evicted and tagged by: its own (set by
    /// `maxmemory-policy auto` while memory is partitioned), else the global one.
    /// With `tenant-partitioning off` eviction is one keyspace's, so the global policy.
    #[inline]
    pub(crate) fn tenant_policy(&self, t: TenantId) -> EvictionPolicy {
        if (t as usize) < MAX_TENANTS {
            let own = self.tenants.get(t).policy.load(Ordering::Relaxed);
            if own != 0 && self.tenants.partitioning() != Partitioning::Off {
                return EvictionPolicy::ALL[(own as usize - 1).min(EvictionPolicy::ALL.len() - 1)];
            }
        }
        self.policy()
    }

    /// The K evictions from tenant `t` sample: its own (set by the tuner), else the
    /// global `maxmemory-samples`.
    pub(crate) fn tenant_samples(&self, t: TenantId) -> usize {
        match self.tenants.get(t).samples() {
            0 => self.samples(),
            k => k.clamp(1, 64),
        }
    }
}

fn hasher() -> &'static hashbrown::hash_map::DefaultHashBuilder {
    static HASHER: OnceLock<hashbrown::hash_map::DefaultHashBuilder> = OnceLock::new();
    HASHER.get_or_init(Default::default)
}

/// The hash of a key, shared by shard selection and the shards' indexes. Its seed is
/// fixed for a build, not random per process: without its `runtime-rng` feature, ahash
/// seeds from constants (the same hash in every process). Tests lean on that layout
/// (per-shard shares, the profiler's spatial sample); foldhash (~130 fewer instructions
/// per pipelined SET) was tried and reverted: its layout made the profiler test
/// `the_model_describes_each_interval_it_measured` fail in ~1 run of 6.
#[inline]
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    hasher().hash_one(key)
}

/// What a shard publishes for readers that do not take its lock, on cache lines of its
/// own (every write stores to it; unpadded, neighbouring shards' cells, written by
/// different cores, would share a line): its `used()`, and where its tenants' indexes
/// are ([`IndexHint`]).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Published {
    pub(crate) used: AtomicU64,
    pub(crate) index: IndexHints,
}

/// The index hints on lines apart from `used`, which every write stores to: readers
/// of the hints (which change only when a table resizes) must not miss on it.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct IndexHints(pub(crate) [IndexHint; HINTED_TENANTS]);

/// Where a key's lookup will go, from [`Store::prefetch_key`] (its shard, tenant and
/// index hash), for [`Store::prefetch_entry`].
#[derive(Debug, Clone, Copy)]
pub struct KeyLocation {
    shard: usize,
    tenant: TenantId,
    h: u64,
}

/// Tenants (by id) whose index positions a connection can prefetch.
pub(crate) const HINTED_TENANTS: usize = 8;

/// Where one tenant's index of a shard was at the end of the shard's last write: the
/// table's base address and number of home positions. [`Store::prefetch_key`] reads it
/// without the shard's lock to start fetching a pipelined command's index word while
/// earlier commands run. It may be stale (the table resized since, even freed): the
/// address is only ever given to a prefetch instruction, a hint that never faults and
/// never reads into the program, so a stale one costs a wasted fetch and nothing else.
#[derive(Default)]
pub(crate) struct IndexHint {
    base: AtomicU64,
    homes: AtomicU64,
}

impl IndexHint {
    /// Records the table's layout (stores only on a change, so the line stays shared).
    #[inline]
    pub(crate) fn note(&self, (base, homes): (u64, u64)) {
        if self.base.load(Ordering::Relaxed) != base {
            self.base.store(base, Ordering::Relaxed);
        }
        if self.homes.load(Ordering::Relaxed) != homes {
            self.homes.store(homes, Ordering::Relaxed);
        }
    }

    #[inline]
    fn prefetch(&self, h: u64) {
        let base = self.base.load(Ordering::Relaxed);
        if base != 0 {
            let homes = self.homes.load(Ordering::Relaxed);
            let home = ((h as u128 * homes as u128) >> 64) as u64;
            crate::index::prefetch(
                base.wrapping_add(home.wrapping_mul(crate::index::WORD_BYTES as u64)),
            );
        }
    }
}

/// A shard padded to its own cache lines so two cores locking neighbours don't contend.
#[repr(align(128))]
struct PaddedShard(Mutex<Shard>);

/// Several shards locked at once, in ascending shard order (no deadlock), for
/// multi-key commands (MSET, MSETNX, MGET, DEL, ...).
pub struct MultiLock<'a> {
    store: &'a Store,
    guards: Vec<(usize, MutexGuard<'a, Shard>)>,
}

impl MultiLock<'_> {
    /// The locked shard that holds `key`.
    ///
    /// # Panics
    /// If `key` was not among the keys locked (a programming error, not client input).
    pub fn shard_for(&mut self, key: &[u8]) -> &mut Shard {
        let s = self.store.shard_index(key);
        let pos = self
            .guards
            .binary_search_by_key(&s, |(i, _)| *i)
            .expect("shard_for: key was not locked");
        &mut self.guards[pos].1
    }

    /// The locked shards holding `a` and `b` at once: the second is `None` when both
    /// keys live in the same shard (RENAME, COPY: [`Shard::relocate`]).
    ///
    /// # Panics
    /// If either key was not among the keys locked.
    pub fn pair(&mut self, a: &[u8], b: &[u8]) -> (&mut Shard, Option<&mut Shard>) {
        let find = |guards: &[(usize, MutexGuard<'_, Shard>)], s: usize| {
            guards
                .binary_search_by_key(&s, |(i, _)| *i)
                .expect("pair: key was not locked")
        };
        let pa = find(&self.guards, self.store.shard_index(a));
        let pb = find(&self.guards, self.store.shard_index(b));
        if pa == pb {
            return (&mut self.guards[pa].1, None);
        }
        let (lo, hi) = self.guards.split_at_mut(pa.max(pb));
        let (first, second) = (&mut lo[pa.min(pb)].1, &mut hi[0].1);
        if pa < pb {
            (first, Some(second))
        } else {
            (second, Some(first))
        }
    }
}

/// Active defragmentation's walk over the shards: where it continues (shard, part,
/// index position) and what it has done since it started.
#[derive(Default)]
struct DefragWalk {
    cursor: (usize, usize, usize),
    done: DefragStats,
}

pub struct Store {
    shards: Box<[PaddedShard]>,
    config: Arc<SharedConfig>,
    shard_bits: u32,
    /// Where active defragmentation continues, and what the walk under way has done.
    defrag: Mutex<DefragWalk>,
    /// The shard the next store-wide eviction starts from ([`Store::over_limit_for_writes`]).
    evict_round: AtomicUsize,
}

impl Store {
    pub fn new(config: StoreConfig) -> Self {
        let n = config.shards.clamp(1, 1024).next_power_of_two();
        let published: Box<[Arc<Published>]> =
            (0..n).map(|_| Arc::new(Published::default())).collect();
        let shared = Arc::new(SharedConfig {
            maxmemory: AtomicU64::new(config.maxmemory),
            policy: AtomicU8::new(policy_code(config.policy)),
            samples: AtomicUsize::new(config.samples.clamp(1, 64)),
            lhd_samples: AtomicUsize::new(crate::lhd::DEFAULT_LHD_SAMPLES),
            lfu_log_factor: AtomicU32::new(augur_sim::lfu::DEFAULT_LOG_FACTOR),
            lfu_decay_minutes: AtomicU32::new(augur_sim::lfu::DEFAULT_DECAY_MINUTES),
            shards: n,
            databases: config.databases.clamp(1, 256),
            tenants: TenantTable::new(config.databases.clamp(1, 256)),
            sink: OnceLock::new(),
            limits: parking_lot::RwLock::new(crate::object::Limits::default()),
            notify: Default::default(),
            events: OnceLock::new(),
            changes: OnceLock::new(),
            key_changes_on: std::sync::atomic::AtomicBool::new(false),
            oom_exempt: std::sync::atomic::AtomicBool::new(false),
            expiry_paused_until_ms: AtomicU64::new(0),
            lazyfree: Default::default(),
            borrowing_shards: AtomicUsize::new(0),
            zone: crate::zone::ZoneSettings::new(&config.zone),
            published,
        });
        let shards = (0..n)
            .map(|i| {
                PaddedShard(Mutex::new(Shard::new(
                    shared.clone(),
                    shared.published[i].clone(),
                    0x5eed + i as u64,
                )))
            })
            .collect();
        Store {
            shards,
            config: shared,
            shard_bits: n.trailing_zeros(),
            defrag: Mutex::new(DefragWalk::default()),
            evict_round: AtomicUsize::new(0),
        }
    }

    pub fn databases(&self) -> usize {
        self.config.databases
    }

    /// Starts fetching the index word where a lookup of `key` by `ns` will begin, without
    /// locking its shard (see [`IndexHint`]). A connection calls it for the keys of the
    /// commands a read brought in before running them, so that a pipelined batch's index
    /// misses overlap instead of each stalling its own command. The answer locates the
    /// key for [`Store::prefetch_entry`], so the key is hashed once.
    #[inline]
    pub fn prefetch_key(&self, ns: Ns, key: &[u8]) -> KeyLocation {
        let kh = key_hash(key);
        let at = KeyLocation {
            shard: self.shard_of_hash(kh),
            tenant: ns.tenant,
            h: crate::shard::db_hash(kh, ns.db),
        };
        if let Some(hint) = self.config.published[at.shard]
            .index
            .0
            .get(at.tenant as usize)
        {
            hint.prefetch(at.h);
        }
        at
    }

    /// After [`Store::prefetch_key`]: starts fetching the header of the entry the key's
    /// index words point to, so that a pipelined batch's entry misses overlap too. Takes
    /// the shard's lock only if it is free (reading index words needs it), and gives up
    /// otherwise.
    #[inline]
    pub fn prefetch_entry(&self, at: KeyLocation) {
        if let Some(s) = self.shards[at.shard].0.try_lock() {
            s.prefetch_entry(at.tenant, at.h);
        }
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Which shard holds `key`. Uses hash bits 40.. so that they are independent of the
    /// low bits (bucket index) and top 7 bits (control tag) the shard's table uses.
    pub fn shard_index(&self, key: &[u8]) -> usize {
        self.shard_of_hash(key_hash(key))
    }

    #[inline]
    fn shard_of_hash(&self, kh: u64) -> usize {
        if self.shard_bits == 0 {
            return 0;
        }
        ((kh >> 40) & ((1 << self.shard_bits) - 1)) as usize
    }

    /// Locks the shard holding `key`.
    pub fn lock_key(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        self.shards[self.shard_index(key)].0.lock()
    }

    /// Locks shard number `i` (0..shard_count).
    pub fn lock_shard(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].0.lock()
    }

    /// Locks the shards holding all of `keys`, each once, in ascending order.
    pub fn lock_keys(&self, keys: &[&[u8]]) -> MultiLock<'_> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.shard_index(k)).collect();
        idx.sort_unstable();
        idx.dedup();
        let guards = idx
            .into_iter()
            .map(|i| (i, self.shards[i].0.lock()))
            .collect();
        MultiLock {
            store: self,
            guards,
        }
    }

    /// The hash and set encoding thresholds commands pass to the objects they change.
    pub fn encoding_limits(&self) -> crate::object::Limits {
        *self.config.limits.read()
    }

    /// Sets the encoding thresholds (existing objects keep their encodings, as in Redis).
    pub fn set_encoding_limits(&self, limits: crate::object::Limits) {
        *self.config.limits.write() = limits;
    }

    pub fn maxmemory(&self) -> u64 {
        self.config.maxmemory.load(Ordering::Relaxed)
    }

    /// Sets the limit and evicts down to it at once (as Redis does on CONFIG SET).
    pub fn set_maxmemory(&self, bytes: u64) {
        self.config.maxmemory.store(bytes, Ordering::Relaxed);
        self.enforce_limits();
    }

    pub fn policy(&self) -> EvictionPolicy {
        self.config.policy()
    }

    /// Lets writes exceed maxmemory and tenant caps while set (what could be evicted
    /// still is): Redis's `allow-oom` scripts write past the limit, since the OOM check
    /// happens once, before the script runs (script.c). The server sets it only while
    /// such a script holds the gate exclusively.
    /// Reads leave expired keys in place until `until_ms` (Unix ms; 0 ends it at
    /// once): while clients are paused (CLIENT PAUSE), a read sees an expired key as
    /// missing, as always, but does not delete it, so `expired_keys` does not move and
    /// nothing is announced until the pause ends (Redis 7.0 `expireIfNeeded`:
    /// `checkClientPauseTimeoutAndReturnIfPaused`). Writes, which a pause holds, still
    /// remove an expired key they meet, since they replace it.
    pub fn pause_expiry(&self, until_ms: u64) {
        self.config
            .expiry_paused_until_ms
            .store(until_ms, Ordering::Relaxed);
    }

    /// Which removals the store frees lazily on its own (`lazyfree-lazy-expire`,
    /// `lazyfree-lazy-eviction`; `crate::lazyfree`).
    pub fn set_lazyfree(&self, cfg: crate::lazyfree::LazyFreeConfig) {
        self.config.lazyfree.configure(cfg);
    }

    /// (`lazyfree_pending_objects`, `lazyfreed_objects`): values handed to the
    /// background freer and not yet freed, and those freed since CONFIG RESETSTAT.
    pub fn lazyfree_stats(&self) -> (u64, u64) {
        self.config.lazyfree.stats()
    }

    pub fn set_oom_exempt(&self, on: bool) {
        self.config.oom_exempt.store(on, Ordering::Relaxed);
    }

    pub fn set_policy(&self, policy: EvictionPolicy) {
        self.config
            .policy
            .store(policy_code(policy), Ordering::Relaxed);
    }

    pub fn samples(&self) -> usize {
        self.config.samples()
    }

    /// K, clamped to 1..=64.
    pub fn set_samples(&self, k: usize) {
        self.config.samples.store(k.clamp(1, 64), Ordering::Relaxed);
    }

    /// `add(part, its tenant's total)` for every tenant part of every shard, one shard
    /// lock at a time; the totals indexed by tenant id.
    fn per_tenant<T: Default + Clone>(
        &self,
        mut add: impl FnMut(&crate::shard::Part, &mut T),
    ) -> Vec<T> {
        let mut out: Vec<T> = Vec::new();
        for s in self.shards.iter() {
            let g = s.0.lock();
            for (t, p) in g.parts().iter().enumerate() {
                if out.len() <= t {
                    out.resize(t + 1, T::default());
                }
                add(p, &mut out[t]);
            }
        }
        out
    }

    /// Each tenant's LHD models summed over the shards (indexed by tenant id; empty
    /// entries for tenants without one).
    pub fn lhd_stats(&self) -> Vec<crate::lhd::LhdStats> {
        self.per_tenant(|p, o: &mut crate::lhd::LhdStats| {
            let Some(l) = p.lhd_state() else { return };
            o.models += 1;
            o.reconfigurations += l.model.reconfigurations();
            o.age_shift = o.age_shift.max(l.model.age_shift());
            o.overflows += l.model.overflows();
            o.bytes += l.heap_bytes();
        })
    }

    /// Each tenant's S3-FIFO state summed over the shards (indexed by tenant id; default
    /// entries for tenants without one).
    pub fn s3fifo_stats(&self) -> Vec<crate::s3fifo::S3FifoStats> {
        let mut out = self.per_tenant(|p, o: &mut crate::s3fifo::S3FifoStats| {
            if let Some(q) = p.s3_stats() {
                o.add(&q);
            }
        });
        for o in &mut out {
            o.small_share_permille /= o.shards.max(1);
        }
        out
    }

    /// `lhd-samples`: candidates ranked per LHD eviction.
    pub fn lhd_samples(&self) -> usize {
        self.config.lhd_samples()
    }

    /// `lfu-log-factor`: how many hits an LFU counter's step takes (Redis's default 10).
    pub fn lfu_log_factor(&self) -> u32 {
        self.config.lfu_log_factor()
    }

    pub fn set_lfu_log_factor(&self, factor: u32) {
        self.config.lfu_log_factor.store(factor, Ordering::Relaxed);
    }

    /// `lfu-decay-time`: minutes of idle time per LFU counter decrement (0: never).
    pub fn lfu_decay_minutes(&self) -> u32 {
        self.config.lfu_decay_minutes()
    }

    /// Takes effect at each shard's next active-expiry cycle (its decay marks).
    pub fn set_lfu_decay_minutes(&self, minutes: u32) {
        self.config
            .lfu_decay_minutes
            .store(minutes, Ordering::Relaxed);
    }

    /// Sets `lhd-samples`, clamped to 1..=[`MAX_LHD_SAMPLES`].
    pub fn set_lhd_samples(&self, a: usize) {
        self.config
            .lhd_samples
            .store(a.clamp(1, MAX_LHD_SAMPLES), Ordering::Relaxed);
    }

    /// Evicts in every shard until each is within its budget.
    pub fn enforce_limits(&self) {
        for s in self.shards.iter() {
            s.0.lock().enforce_limit();
        }
    }

    /// Bytes charged to stored data: allocator usable sizes plus index overhead.
    pub fn used_memory(&self) -> u64 {
        self.config.store_used()
    }

    /// Whether a write must be refused up front. Write commands call this before doing
    /// anything, as Redis calls `performEvictions` before a `denyoom` command (evict.c).
    ///
    /// Under noeviction: whether the store is over maxmemory. Redis's `used_memory`
    /// includes the server's own baseline, so it is never 0 and `used > maxmemory`
    /// refuses writes under any tiny limit (the suite's `maxmemory 1`). Ours counts
    /// stored data only, so the question is whether even the smallest entry (a header)
    /// would still fit: otherwise a write on an empty store would be let in and then fail
    /// inside the command, counted as a failed call instead of a rejected one.
    ///
    /// Under an evicting policy each shard keeps itself within its share of maxmemory as
    /// it writes, so the store is over only while some shard is over its share on room
    /// the others left (`SharedConfig::borrowing_shards`: a write large against its
    /// share, or its policy found nothing to evict there, e.g. a volatile policy and no
    /// key with a TTL). Then, as Redis, this evicts by the policy in the shards that
    /// still have something to evict until the smallest entry fits again, and refuses
    /// the write only when none has. Otherwise it costs one load.
    pub fn over_limit_for_writes(&self) -> bool {
        let max = self.maxmemory();
        if max == 0 {
            return false;
        }
        if self.policy() == EvictionPolicy::NoEviction {
            return !self.smallest_entry_fits(max);
        }
        if self.config.borrowing_shards.load(Ordering::Relaxed) == 0 {
            return false;
        }
        !self.evict_until_store_fits(max)
    }

    /// [`Self::over_limit_for_writes`]'s eviction for a command that is not refused for
    /// memory: under an evicting policy, while a shard borrows, evict until the store
    /// fits (one load otherwise; nothing under noeviction).
    #[inline]
    pub fn evict_before_command(&self) {
        if self.config.borrowing_shards.load(Ordering::Relaxed) == 0
            || self.policy() == EvictionPolicy::NoEviction
        {
            return;
        }
        let max = self.maxmemory();
        if max > 0 {
            self.evict_until_store_fits(max);
        }
    }

    /// Evicts, one entry a shard in turn (so that one shard's keys do not pay for
    /// all), until the smallest entry fits in `max`; false if a whole round of the
    /// shards found nothing to evict first.
    #[cold]
    fn evict_until_store_fits(&self, max: u64) -> bool {
        let n = self.shards.len();
        let mut i = self.evict_round.fetch_add(1, Ordering::Relaxed) % n;
        let mut idle = 0;
        while !self.smallest_entry_fits(max) {
            if self.shards[i].0.lock().evict_one_for_store() {
                idle = 0;
            } else {
                idle += 1;
                if idle == n {
                    return false;
                }
            }
            i = (i + 1) % n;
        }
        true
    }

    /// Whether the smallest entry (a header) still fits under `max` bytes.
    fn smallest_entry_fits(&self, max: u64) -> bool {
        self.used_memory() + crate::entry::SMALLEST_ENTRY as u64 <= max
    }

    /// Whole-store counters; `keys_per_db` is tenant `keyspace_of`'s databases (INFO
    /// keyspace shows the caller's tenant only).
    pub fn stats(&self, keyspace_of: TenantId) -> StoreStats {
        let mut st = StoreStats {
            keys_per_db: vec![(0, 0); self.config.databases],
            ..Default::default()
        };
        for s in self.shards.iter() {
            let g = s.0.lock();
            for p in g.parts() {
                st.keyspace_hits += p.hits;
                st.keyspace_misses += p.misses;
                st.evicted_keys += p.evicted;
                st.expired_keys += p.expired;
            }
            for (acc, (k, e)) in st.keys_per_db.iter_mut().zip(g.db_counts(keyspace_of)) {
                acc.0 += k;
                acc.1 += e;
            }
        }
        // Counted per physical database; reported per database as clients name them.
        let map = self.config.tenants.db_map(keyspace_of);
        let phys = std::mem::take(&mut st.keys_per_db);
        st.keys_per_db = (0..phys.len())
            .map(|l| phys[(map.phys(l as u8) as usize).min(phys.len() - 1)])
            .collect();
        st
    }

    /// Figures of every tenant slot up to the highest one in use (index = TenantId).
    pub fn tenant_stats(&self) -> Vec<TenantStats> {
        let mut out: Vec<TenantStats> = Vec::new();
        for s in self.shards.iter() {
            let g = s.0.lock();
            if out.len() < g.parts().len() {
                out.resize(g.parts().len(), TenantStats::default());
            }
            for (acc, p) in out.iter_mut().zip(g.parts()) {
                acc.hits += p.hits;
                acc.misses += p.misses;
                acc.writes += p.writes;
                acc.evicted += p.evicted;
                acc.expired += p.expired;
                acc.used_bytes += p.used();
                acc.keys += p.len() as u64 + p.zone_items();
            }
        }
        out
    }

    /// Tenant `t`'s bytes over all shards as eviction sees them: lock-free, within
    /// 16 KB per shard of the exact figure `tenant_stats` sums under the locks.
    pub fn tenant_usage(&self, t: TenantId) -> u64 {
        if (t as usize) < MAX_TENANTS {
            self.config.tenants.get(t).used()
        } else {
            0
        }
    }

    /// How memory is divided between tenants.
    pub fn partitioning(&self) -> Partitioning {
        self.config.tenants.partitioning()
    }

    /// Switches the partitioning mode live (no key is lost; limits apply from the next
    /// write on, and at once to tenants over a cap).
    pub fn set_partitioning(&self, mode: Partitioning) {
        self.config
            .tenants
            .partitioning
            .store(mode.code(), Ordering::Relaxed);
        self.enforce_limits();
    }

    /// Sets tenant `t`'s hard cap, target and K (0 = none / the global K). A lowered
    /// cap is enforced at once (as CONFIG SET maxmemory is).
    pub fn set_tenant_limits(&self, t: TenantId, cap: u64, target: u64, samples: usize) {
        let l = self.config.tenants.get(t);
        let old_cap = l.cap.swap(cap, Ordering::Relaxed);
        l.target.store(target, Ordering::Relaxed);
        l.samples.store(samples.min(64), Ordering::Relaxed);
        if cap != 0 && (old_cap == 0 || cap < old_cap) {
            self.enforce_limits();
        }
    }

    /// Gives tenant `t` its own eviction policy (`maxmemory-policy auto`), or the
    /// global one again (`None`). Live: the next eviction of the tenant uses it and no
    /// key is rewritten (LRU and LHD read each other's clock word, crate::lhd). Only
    /// honoured while memory is partitioned (off: one keyspace, one policy).
    pub fn set_tenant_policy(&self, t: TenantId, policy: Option<EvictionPolicy>) {
        if (t as usize) < MAX_TENANTS {
            let code = policy.map_or(0, |p| policy_code(p) + 1);
            self.config
                .tenants
                .get(t)
                .policy
                .store(code, Ordering::Relaxed);
        }
    }

    /// The policy evictions from tenant `t` use now (see [`Self::set_tenant_policy`]).
    pub fn tenant_policy(&self, t: TenantId) -> EvictionPolicy {
        self.config.tenant_policy(t)
    }

    /// The K evictions from tenant `t` use now: its own, else `maxmemory-samples`.
    pub fn tenant_samples(&self, t: TenantId) -> usize {
        if (t as usize) < MAX_TENANTS {
            self.config.tenant_samples(t)
        } else {
            self.samples()
        }
    }

    /// Tenant `t`'s current (cap, target, K) as set.
    pub fn tenant_limits(&self, t: TenantId) -> (u64, u64, usize) {
        let l = self.config.tenants.get(t);
        (l.cap(), l.target(), l.samples())
    }

    /// Sets the spatial sampling rate of tenant `t`'s profiling (0 = off).
    pub fn set_tenant_sample_rate(&self, t: TenantId, rate: f64) {
        let limits = self.config.tenants.get(t);
        if rate > 0.0 {
            // Counting distinct keys from the tenant's first profiled reference.
            limits.distinct.get_or_init(Default::default);
        }
        limits
            .sample_threshold
            .store(crate::tenant::sample_threshold(rate), Ordering::Relaxed);
    }

    /// Tenant `t`'s current sampling rate (the threshold as a fraction; 0 = off).
    pub fn tenant_sample_rate(&self, t: TenantId) -> f64 {
        if t as usize >= MAX_TENANTS {
            return 0.0;
        }
        let thr = self
            .config
            .tenants
            .get(t)
            .sample_threshold
            .load(Ordering::Relaxed);
        thr as f64 / crate::tenant::SAMPLE_MODULUS as f64
    }

    /// Tenant `t`'s distinct-key sketch, once it was ever profiled (created with its
    /// first sampling rate above 0): while the tenant is profiled, the request path
    /// counts every key it references in it, sampled or not (see `Shard::sampled`). The
    /// profiler reads it at the end of an interval and clears it when its model
    /// restarts.
    pub fn tenant_distinct(&self, t: TenantId) -> Option<&augur_sim::distinct::DistinctCounter> {
        if t as usize >= MAX_TENANTS {
            return None;
        }
        self.config.tenants.get(t).distinct.get()
    }

    /// Installs where sampled references go; only the first call takes effect.
    pub fn set_reference_sink(&self, sink: Arc<dyn ReferenceSink>) {
        let _ = self.config.sink.set(sink);
    }

    /// Removes every key of tenant `t` and clears its limits and counters (the slot can
    /// then be given to a new tenant).
    pub fn drop_tenant(&self, t: TenantId) {
        if t as usize >= MAX_TENANTS {
            return;
        }
        self.set_tenant_limits(t, 0, 0, 0);
        self.set_tenant_policy(t, None);
        self.set_tenant_sample_rate(t, 0.0);
        if let Some(sketch) = self.tenant_distinct(t) {
            sketch.clear();
        }
        for s in self.shards.iter() {
            s.0.lock().flush_tenant(t, true, false);
        }
        self.config.tenants.db_map(t).reset();
    }

    /// `notify-keyspace-events` as Redis's flags word ([`crate::notify::flags`]).
    #[inline]
    pub fn notify_flags(&self) -> u32 {
        self.config.notify.load(Ordering::Relaxed)
    }

    pub fn set_notify_flags(&self, flags: u32) {
        self.config.notify.store(flags, Ordering::Relaxed);
    }

    /// Installs where store events (new, expired, evicted, keymiss) go; only the first
    /// call takes effect.
    pub fn set_key_event_sink(&self, sink: Arc<dyn crate::notify::KeyEventSink>) {
        let _ = self.config.events.set(sink);
    }

    /// Installs where key changes go (client-side caching); only the first call takes
    /// effect. Nothing is sent until [`Self::set_key_changes`] turns it on.
    pub fn set_key_change_sink(&self, sink: Arc<dyn crate::notify::KeyChangeSink>) {
        let _ = self.config.changes.set(sink);
    }

    /// Turns the key-change sink on or off (on once some client tracks keys).
    pub fn set_key_changes(&self, on: bool) {
        self.config.key_changes_on.store(on, Ordering::Relaxed);
    }

    /// Tenant `t`'s logical -> physical database map (see [`crate::notify`]).
    pub fn db_map(&self, t: TenantId) -> Arc<crate::notify::DbMap> {
        self.config.tenants.db_map(t).clone()
    }

    /// The namespace entries of logical namespace `ns` are stored under.
    #[inline]
    pub fn physical(&self, ns: Ns) -> Ns {
        Ns::new(ns.tenant, self.config.tenants.db_map(ns.tenant).phys(ns.db))
    }

    /// SWAPDB (db.c `swapdbCommand`) of tenant `t`'s logical databases `a` and `b`: an
    /// O(1) exchange in its [`DbMap`](crate::notify::DbMap), plus, in every shard, the
    /// WATCHes of the two databases: a watched key that exists (live) in either is
    /// touched (multi.c `touchAllWatchedKeysInDb`), and every watch moves with its
    /// logical database, since a client watches a database by number, not contents.
    ///
    /// The caller must ensure no command runs meanwhile (the server holds its gate
    /// exclusively); every shard is locked for the exchange, so the shards' own work
    /// (active expiry, which maps databases back for events) never sees it half done.
    pub fn swap_dbs(&self, t: TenantId, a: u8, b: u8, now_ms: u64) {
        if a == b {
            return;
        }
        let map = self.config.tenants.db_map(t);
        let (pa, pb) = (map.phys(a), map.phys(b));
        let mut guards: Vec<_> = self.shards.iter().map(|s| s.0.lock()).collect();
        for g in guards.iter_mut() {
            g.swap_watches(t, pa, pb, now_ms);
        }
        map.swap(a, b);
        drop(guards);
    }

    /// CONFIG RESETSTAT: zero hits, misses, evicted and expired counters.
    pub fn reset_stats(&self) {
        for s in self.shards.iter() {
            s.0.lock().reset_stats();
        }
        self.config.lazyfree.reset_stats();
    }

    /// Keys in `db` (including expired keys not yet removed, as Redis's DBSIZE).
    pub fn dbsize(&self, ns: Ns) -> u64 {
        self.shards.iter().map(|s| s.0.lock().keys_in_db(ns)).sum()
    }

    /// Total keys over all tenants and databases.
    pub fn total_keys(&self) -> u64 {
        self.shards.iter().map(|s| s.0.lock().len() as u64).sum()
    }

    pub fn flushdb(&self, ns: Ns) {
        self.flushdb_as(ns, false)
    }

    /// FLUSHDB ASYNC: [`Self::flushdb`], large values freed on the background thread
    /// (`crate::lazyfree`); the keys are gone when it returns.
    pub fn flushdb_lazily(&self, ns: Ns) {
        self.flushdb_as(ns, true)
    }

    fn flushdb_as(&self, ns: Ns, lazy: bool) {
        for s in self.shards.iter() {
            s.0.lock().flush_db(ns, lazy);
        }
    }

    /// FLUSHALL: every database of tenant `t` (other tenants keep their keys).
    pub fn flushall(&self, t: TenantId) {
        self.flushall_as(t, false)
    }

    /// FLUSHALL ASYNC: [`Self::flushall`], large values freed on the background thread.
    pub fn flushall_lazily(&self, t: TenantId) {
        self.flushall_as(t, true)
    }

    fn flushall_as(&self, t: TenantId, lazy: bool) {
        for s in self.shards.iter() {
            s.0.lock().flush_tenant(t, false, lazy);
        }
    }

    /// A uniformly random live key of `db`: a shard chosen with probability proportional
    /// to its share of `db`, then a uniform key within it.
    pub fn random_key(&self, ns: Ns, now_ms: u64) -> Option<Vec<u8>> {
        use rand::Rng;
        for _ in 0..8 {
            let counts: Vec<u64> = self
                .shards
                .iter()
                .map(|s| s.0.lock().keys_in_db(ns))
                .collect();
            let total: u64 = counts.iter().sum();
            if total == 0 {
                return None;
            }
            let mut r = rand::thread_rng().gen_range(0..total);
            let shard = counts
                .iter()
                .position(|&c| {
                    if r < c {
                        true
                    } else {
                        r -= c;
                        false
                    }
                })
                .unwrap_or(0);
            if let Some(k) = self.shards[shard].0.lock().random_key(ns, now_ms) {
                return Some(k);
            }
        }
        None
    }

    /// All live keys of `db` matching a glob `pattern` (Redis's glob syntax).
    pub fn keys(&self, ns: Ns, pattern: &[u8], now_ms: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let all = pattern == b"*";
        for s in self.shards.iter() {
            let g = s.0.lock();
            g.collect_keys(
                ns,
                0..usize::MAX,
                (!all).then_some(pattern),
                now_ms,
                &mut out,
            );
        }
        out
    }

    /// SCAN: returns about `count` keys of `db` per call (before MATCH filtering, as
    /// Redis counts), then the cursor to go on from.
    ///
    /// Guarantee (as Redis's): a key present for the whole iteration is returned at least
    /// once. The cursor packs (shard + 1, the shard's index epoch, position); each shard's
    /// positions are walked from the top down, deletions only move entries downwards
    /// (see `index`), and a cursor whose epoch is stale (the shard's index was resized
    /// since) restarts that shard from its top: duplicates, never misses.
    ///
    /// Page sizes: a call walks on until it has seen `count` keys of the database
    /// (crossing into following shards if needed) and then up to the next one, so no
    /// page is empty except when MATCH filters everything out; the work per call is
    /// bounded by `count * 20 + 64` positions, as Redis bounds it by `count * 10`
    /// buckets.
    pub fn scan(
        &self,
        ns: Ns,
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
        now_ms: u64,
    ) -> ScanPage {
        const POS_BITS: u32 = 40;
        // The Z-zone phase of a shard (its compressed keys, after its N-zone positions):
        // epoch byte 0xFE with bit 39 of the position set (an N-zone position never
        // reaches 2^39; the "fresh shard" sentinel below has epoch 0xFF). The zone's own
        // cursor is a hash position at a leaf boundary, a multiple of 2^(64 - depth):
        // kept as its top 39 bits (exact for tries up to 39 levels, i.e. fewer than 2^39
        // blocks; a deeper cursor would round down, which repeats keys, never skips).
        const Z_PHASE: u64 = 1 << 39;
        const Z_SHIFT: u32 = 25;
        const Z_EPOCH: u32 = 0xFE;
        let count = count.max(1);
        let n = self.shards.len() as u64;
        let (mut shard, mut resume) = if cursor == 0 {
            (0u64, None)
        } else {
            let epoch = ((cursor >> POS_BITS) & 0xFF) as u32;
            let pos = (cursor & ((1 << POS_BITS) - 1)) as usize;
            ((cursor >> 48).saturating_sub(1), Some((epoch, pos)))
        };
        let mut page = ScanPage::default();
        let mut seen = 0usize;
        let mut budget = count.saturating_mul(20).saturating_add(64);
        while shard < n {
            let g = self.shards[shard as usize].0.lock();
            if seen >= count && g.keys_in_db(ns) > 0 {
                // The next call starts with this shard.
                break;
            }
            let z_resume = match resume {
                Some((e, pos)) if e == Z_EPOCH && pos as u64 & Z_PHASE != 0 => {
                    Some((pos as u64 & (Z_PHASE - 1)) << Z_SHIFT)
                }
                _ => None,
            };
            if z_resume.is_none() {
                let (positions, epoch) = g.scan_extent(ns.tenant);
                let top = match resume {
                    Some((e, pos)) if e == epoch & 0xFF => pos.min(positions),
                    _ => positions,
                };
                let (next, s, examined) = g.scan_walk(
                    ns,
                    top,
                    count.saturating_sub(seen),
                    budget,
                    pattern,
                    now_ms,
                    &mut page.keys,
                );
                seen += s;
                budget = budget.saturating_sub(examined);
                if next > 0 {
                    page.next_cursor =
                        ((shard + 1) << 48) | (((epoch & 0xFF) as u64) << POS_BITS) | next as u64;
                    return page;
                }
            }
            if z_resume.is_some() || g.zone_keys_in_db(ns) > 0 {
                let (next, s) = g.zone_scan(
                    ns,
                    z_resume.unwrap_or(0),
                    count.saturating_sub(seen),
                    pattern,
                    now_ms,
                    &mut page.keys,
                );
                seen += s;
                let z = next >> Z_SHIFT;
                if z != 0 {
                    page.next_cursor =
                        ((shard + 1) << 48) | ((Z_EPOCH as u64) << POS_BITS) | Z_PHASE | z;
                    return page;
                }
            }
            shard += 1;
            resume = None;
        }
        // Next shard from its top (an impossible epoch/position pair means "fresh").
        page.next_cursor = if shard >= n {
            0
        } else {
            ((shard + 1) << 48) | (0xFF << POS_BITS) | ((1 << POS_BITS) - 1)
        };
        page
    }

    /// The compressed zone's figures (INFO zones), for tenant `t` or all tenants.
    pub fn zone_stats(&self, t: Option<TenantId>) -> crate::zone::ZoneStats {
        let mut out = crate::zone::ZoneStats::default();
        for s in self.shards.iter() {
            out.add(&s.0.lock().zone_stats(t));
        }
        out
    }

    /// Whether the compressed zone is on, and its live settings.
    pub fn zone_enabled(&self) -> bool {
        self.config.zone.on()
    }
    pub fn set_zone_enabled(&self, on: bool) {
        self.config.zone.enabled.store(on, Ordering::Relaxed);
    }
    pub fn zone_target(&self) -> f64 {
        self.config.zone.target()
    }
    pub fn set_zone_target(&self, f: f64) {
        self.config.zone.set_target(f)
    }
    pub fn zone_window_ms(&self) -> u64 {
        self.config.zone.window_ms()
    }
    pub fn set_zone_window_ms(&self, ms: u64) {
        self.config.zone.set_window_ms(ms)
    }

    /// Active defragmentation (`crate::defrag`): moves entries out of sparse allocator
    /// slabs, visiting up to `budget` index positions from where the previous call
    /// stopped (shard by shard, each shard locked only for its own step). Returns what
    /// this call did and, when it finished a walk over every shard, that whole walk's
    /// totals.
    pub fn defrag_cycle(&self, budget: usize) -> (DefragStats, Option<DefragStats>) {
        let mut walk = self.defrag.lock();
        let mut stats = DefragStats::default();
        let mut left = budget;
        let mut finished = None;
        while left > 0 {
            let (shard, part, pos) = walk.cursor;
            if shard >= self.shards.len() {
                finished = Some(std::mem::take(&mut *walk).done);
                break;
            }
            let (next, s, visited) = self.shards[shard].0.lock().defrag_step((part, pos), left);
            stats.add(s);
            walk.done.add(s);
            // An empty shard still costs a lock: count it as one position.
            left = left.saturating_sub(visited.max(1));
            walk.cursor = match next {
                Some((p, q)) => (shard, p, q),
                None => (shard + 1, 0, 0),
            };
        }
        (stats, finished)
    }

    /// One active-expiry cycle (Redis's `activeExpireCycle`): samples keys with a TTL in
    /// each shard and deletes the expired ones, repeating while many were expired.
    /// Returns how many keys it removed. The server calls it `hz` times a second.
    pub fn active_expire_cycle(&self, now_ms: u64) -> u64 {
        self.shards
            .iter()
            .map(|s| s.0.lock().expire_cycle(now_ms, 16))
            .sum()
    }
}

fn policy_code(p: EvictionPolicy) -> u8 {
    EvictionPolicy::ALL
        .iter()
        .position(|&q| q == p)
        .unwrap_or(0) as u8
}

pub use crate::glob::glob_match;

/// The largest `lhd-samples`.
pub const MAX_LHD_SAMPLES: usize = 1024;

#[cfg(test)]
mod hint_tests {
    use super::*;
    use crate::SetTtl;

    /// After writes (which grow, and after deletes shrink, the tables), every shard
    /// publishes where its default tenant's index is, so `prefetch_key` aims at the
    /// words a lookup will read; and prefetching any key, present or not, on an empty
    /// or busy store is harmless.
    #[test]
    fn index_hints_follow_the_tables() {
        let s = crate::tests::store(0, EvictionPolicy::NoEviction, 4);
        let ns = Ns::new(0, 0);
        s.prefetch_entry(s.prefetch_key(ns, b"nothing yet"));
        let check = |s: &Store| {
            for i in 0..s.shard_count() {
                let shard = s.lock_shard(i);
                let hint = &s.config.published[i].index.0[0];
                let layout = shard.index_layout(0);
                assert_eq!(hint.base.load(Ordering::Relaxed), layout.0, "shard {i}");
                assert_eq!(hint.homes.load(Ordering::Relaxed), layout.1, "shard {i}");
            }
        };
        for k in 0..20_000u32 {
            let key = format!("k{k}");
            s.lock_key(key.as_bytes())
                .set(ns, key.as_bytes(), b"v", SetTtl::Clear, 0)
                .unwrap();
        }
        check(&s);
        for k in 0..20_000u32 {
            let key = format!("k{k}");
            s.prefetch_entry(s.prefetch_key(ns, key.as_bytes()));
            s.prefetch_key(Ns::new(7, 3), key.as_bytes());
            s.prefetch_key(Ns::new(200, 3), key.as_bytes());
        }
        for k in 0..19_990u32 {
            let key = format!("k{k}");
            s.lock_key(key.as_bytes()).delete(ns, key.as_bytes(), 0);
        }
        check(&s);
        crate::tests::check_all(&s);
    }
}
