//! One shard of the keyspace: every database's entries whose key hashes here.
//!
//! # Data structures, and why
//!
//! - `table` ([`crate::index::Table`]) is the only index: an open-addressing table of
//!   tagged entry pointers, ~8/0.7 bytes per key. Sampling for eviction draws random
//!   positions until one is occupied: O(1) expected and exactly uniform (see the index
//!   module for why, and why Redis's bucket walk is not).
//! - `volatile: Vec<Entry>` lists the entries with a TTL (each such entry stores its
//!   position in this list), so volatile-* eviction and the active expiry cycle also
//!   sample uniformly in O(1).
//! - `clock` is the shard's logical time: it advances by one on every access (read or
//!   write). An entry's idle time is `clock - atime`, in accesses (DESIGN.md: time is
//!   logical, so server and simulator agree). Only the order of idle times matters to
//!   LRU sampling, so a per-shard clock ranks a shard's keys exactly as a global one
//!   would. `atime` is stored as 32 bits and compared with wrapping arithmetic: idle times
//!   above 2^32 accesses alias, which at millions of accesses a second per shard means an
//!   entry untouched for over an hour can look younger than it is (Redis's 24-bit LRU
//!   clock has the same kind of wrap, at 194 days of seconds).
//!
//! # Memory accounting
//!
//! `used()` is the sum of jemalloc's usable sizes of all entries plus the capacity of the
//! three index structures, i.e. what this shard really holds on the heap. Eviction keeps
//! `used()` within the shard's share of `maxmemory` (`maxmemory / shards`). Keys are
//! spread over shards by hash, so per-shard budgets behave like one global budget.
//!
//! # Eviction
//!
//! Like Redis (`performEvictions`), eviction runs before a write, and a write for which
//! nothing can be evicted fails with OOM. Unlike Redis, which evicts until it is under
//! the limit and then lets the command overshoot, the shard evicts until the block the
//! write will allocate fits, so it never ends above its budget (with many shards, Redis's
//! way would overshoot by up to one value per shard); the simulators do the same. The
//! victim choice is [`augur_sim::policy`]'s code, the same code the simulators run.
//!
//! # Hashes and sets
//!
//! A hash or set is one entry whose charge is its block plus its object's heap bytes
//! ([`Entry::charge`]), so sampling, eviction, per-tenant accounting and the profiler's
//! sized references treat it as one item, like a string. Its size is only known after a
//! command changes it, so [`Shard::write_object`] evicts *after* the mutation, with the
//! object being written *pinned* (never a candidate, `Sampled` and the random policies
//! skip it): growth evicts other keys exactly as a SET would, and the object never
//! disappears under the command that is changing it. If nothing else can be evicted
//! the shard stays above its budget until its next write (Redis, which evicts only
//! before a command, lets a command overshoot the same way).

mod keyops;
mod wallclock;
pub use keyops::{ObjectInfo, Relocated, Relocation};

use crate::defrag::DefragStats;
use crate::entry::{Entry, MAX_LEN};
use crate::index::{self, DrawsAhead, Table};
use crate::lfu::{DecayMarks, PartLfu};
use crate::lhd::{Candidate, Carried, PartLhd};
use crate::notify::KeyEvent;
use crate::object::{Kind, Object};
use crate::s3fifo::{PartS3, SmallQueueCount};
use crate::store::{key_hash, Published, SharedConfig};
use crate::tenant::{mix64, Ns, Partitioning, RefKind, Reference, TenantId, SAMPLE_MODULUS};
use crate::watch::{WatchFlag, WatchTable};
use crate::zone::PartZone;
use crate::zzone::{Gone, ZMeta};
use crate::EvictionPolicy;
use augur_sim::policy::{select_victim_pooled, Candidates, EvictionPool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A shard's logical clock before its first access (which gets `CLOCK_BASE + 1`): the
/// values below are markers for keys RESTOREd as idle longer than every access
/// (`WallClock::clock_for_idle`).
const CLOCK_BASE: u64 = 1 << 16;

/// How a write treats the key's time to live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTtl {
    /// Remove any TTL (plain SET).
    Clear,
    /// Keep the existing TTL if the key had one (SET KEEPTTL, APPEND, INCR, SETRANGE...).
    Keep,
    /// Expire at this Unix time in milliseconds.
    At(u64),
}

/// A key's TTL state, for TTL / PTTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlState {
    Missing,
    Persistent,
    /// Expires at this Unix time in milliseconds.
    ExpiresAt(u64),
}

/// Why a write was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// Over `maxmemory` and the policy could not (noeviction) or found nothing to evict.
    OutOfMemory,
    /// The value would exceed the largest size the store can hold (4 GiB - 1).
    TooLarge,
    /// An in-place string update met a hash or set.
    WrongType,
}

/// A typed command met a key holding another type (Redis's WRONGTYPE error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// A key's value taken out of (or copied from) the store with ownership, to be put back
/// under another key, database or shard with [`Shard::put`] (RENAME, MOVE, COPY, and the
/// STORE forms of set commands). A hash or set moves as its boxed object: nothing is
/// copied, and the memory it holds moves with it.
#[derive(Debug, Clone)]
pub enum Value {
    String(Vec<u8>),
    Object(Box<Object>),
}

/// A [`Value`] with the key's expiry time (Unix ms), if any.
#[derive(Debug, Clone)]
pub struct Detached {
    pub value: Value,
    pub expire_at_ms: Option<u64>,
}

/// What OBJECT / MEMORY USAGE / TYPE need to know about a key, read without touching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryInfo {
    pub kind: Kind,
    /// OBJECT ENCODING of a hash or set (None for strings: the caller derives
    /// int/embstr/raw from the value).
    pub encoding: Option<&'static str>,
    pub value_len: usize,
    /// Logical accesses (of this shard) since the key was last read or written.
    pub idle_accesses: u64,
    pub expire_at_ms: Option<u64>,
    /// Bytes charged to this key: allocator usable size plus index overhead.
    pub memory_bytes: usize,
}

/// A pooled eviction candidate: the tenant (2 bytes, little-endian), the database byte,
/// then the key (Redis keeps a copy of the key name in its pool for the same reason:
/// entries move).
type PoolKey = Box<[u8]>;

fn pool_key(tenant: TenantId, db: u8, key: &[u8]) -> PoolKey {
    let mut v = Vec::with_capacity(key.len() + 3);
    v.extend_from_slice(&tenant.to_le_bytes());
    v.push(db);
    v.extend_from_slice(key);
    v.into_boxed_slice()
}

fn pool_tenant(id: &[u8]) -> TenantId {
    TenantId::from_le_bytes([id[0], id[1]])
}

/// Mixes the database number into a key's hash so the same key in different databases
/// lands in different positions.
#[inline]
pub(crate) fn db_hash(h: u64, db: u8) -> u64 {
    h ^ (db as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[inline]
fn entry_hash(e: Entry) -> u64 {
    db_hash(key_hash(e.key()), e.db())
}

/// How a key lookup treats a key it finds expired.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// A write's lookup: the expired key is removed (the write takes its place).
    Write,
    /// A read's lookup: the expired key is removed too, except while expiry is paused
    /// (CLIENT PAUSE, [`crate::Store::pause_expiry`]), when it is reported missing and
    /// left in place, as Redis 7.0's `expireIfNeeded` does.
    Read,
}

/// One tenant's dictionary in a shard (kRedis §4.3): its entries, TTL list, eviction
/// pool and counters. See the `tenant` module for why tenants are parts of shards.
pub(crate) struct Part {
    table: Table,
    volatile: Vec<Entry>,
    /// Sum of the entries' charges ([`Entry::charge`]: usable size plus a hash's or
    /// set's object bytes).
    entry_bytes: u64,
    keys_per_db: Vec<u64>,
    expires_per_db: Vec<u64>,
    pool: EvictionPool<PoolKey>,
    /// The policy `pool` was filled under; a policy change empties it.
    pool_policy: EvictionPolicy,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) evicted: u64,
    pub(crate) expired: u64,
    /// Writes (SET-like commands) that stored a value.
    pub(crate) writes: u64,
    /// `used()` as last added to the tenant's store-wide counter
    /// ([`TenantLimits::used`](crate::tenant::TenantLimits::used)).
    synced: u64,
    /// Keys of this part that connections WATCH (None while nothing is watched, so an
    /// unwatched write pays one branch).
    watched: Option<Box<WatchTable>>,
    /// The store's configuration (for keyspace-notification flags and the event sink)
    /// and the tenant this part belongs to (events name it).
    cfg: Arc<SharedConfig>,
    tenant: TenantId,
    /// LHD's model and candidates while the policy is LHD (`crate::lhd`); None under
    /// other policies, so that they pay nothing for it.
    lhd: Option<Box<PartLhd>>,
    /// S3-FIFO's ghost and counters while the policy is S3-FIFO (`crate::s3fifo`).
    s3: Option<Box<PartS3>>,
    /// Entries in S3-FIFO's small queue, under any policy (entries keep the queue bit
    /// after a switch; a hit under another policy or the entry's unlinking counts it
    /// out).
    s3_small: SmallQueueCount,
    /// Redis LFU's decay marks and coin flips while the policy is LFU (`crate::lfu`).
    lfu: Option<Box<PartLfu>>,
    /// The compressed Z-zone while `compressed-zone` is on (`crate::zone`); None
    /// otherwise, so that the request path pays one branch for it.
    zone: Option<Box<PartZone>>,
    /// An item was moved from the Z-zone to the N-zone without making room first; the
    /// shard evicts for it at the next `tick` or `publish` (a bounded overshoot of one
    /// item, like a write's).
    faulted: bool,
    /// The shard's clock as of the last `Shard::part` call (for entries moved in from
    /// the Z-zone by lookups that do not take the clock).
    clock_hint: u32,
    /// The expiry time of the Z copy the last `zone_supersede` superseded.
    superseded_expire: Option<u64>,
    /// The Z-zone did not pay (incompressible data) and was dropped; the cron lets the
    /// part try again a window after `zone_paused_since_ms` (0: not yet seen by it).
    zone_paused: bool,
    zone_paused_since_ms: u64,
}

impl Part {
    fn new(
        dbs: usize,
        policy: EvictionPolicy,
        cfg: Arc<SharedConfig>,
        tenant: TenantId,
        shard_seed: u64,
    ) -> Part {
        Part {
            // Shards' tables get consecutive phases, a tenant's spread from another's.
            table: Table::with_phase(
                (shard_seed as u32).wrapping_add((tenant as u32).wrapping_mul(1 << 16)),
            ),
            volatile: Vec::new(),
            entry_bytes: 0,
            keys_per_db: vec![0; dbs],
            expires_per_db: vec![0; dbs],
            pool: EvictionPool::new(),
            pool_policy: policy,
            hits: 0,
            misses: 0,
            evicted: 0,
            expired: 0,
            writes: 0,
            synced: 0,
            watched: None,
            cfg,
            tenant,
            lhd: None,
            s3: None,
            s3_small: SmallQueueCount::default(),
            lfu: None,
            zone: None,
            faulted: false,
            clock_hint: 0,
            superseded_expire: None,
            zone_paused: false,
            zone_paused_since_ms: 0,
        }
    }

    /// This part's LHD state if the policy is LHD now (created on first use).
    #[inline]
    fn lhd(&mut self) -> Option<&mut PartLhd> {
        if !self.cfg.tenant_policy(self.tenant).is_lhd() {
            return None;
        }
        Some(self.lhd_model())
    }

    /// This part's LHD state, created if missing, whatever the policy reads now (for an
    /// eviction already decided to be LHD's, which a concurrent CONFIG SET must not
    /// turn into "nothing to evict").
    fn lhd_model(&mut self) -> &mut PartLhd {
        let (shards, limit, tenant) = (self.cfg.shards, self.cfg.shard_limit(), self.tenant);
        self.lhd
            .get_or_insert_with(|| PartLhd::new(shards, limit, 0x1bd0 ^ tenant as u64))
    }

    /// One access of this tenant at shard clock `clock`: LHD counts it toward its
    /// next reconfiguration.
    #[inline]
    fn accessed(&mut self, clock: u64) {
        let n = self.table.len();
        if let Some(l) = self.lhd() {
            l.access(clock, n);
        }
    }

    /// `e` was read or rewritten: LRU's touch, an LHD hit or an S3-FIFO hit (the
    /// tenant's policy read once).
    #[inline]
    fn referenced(&mut self, e: Entry, clock: u64) {
        let policy = self.cfg.tenant_policy(self.tenant);
        if policy.is_s3fifo() {
            self.s3_state_mut().hit(e, clock);
            return;
        }
        // The other policies rewrite the word, queue bit and all.
        self.s3_small.leaving(e);
        if policy.is_lhd() {
            self.lhd_model().hit(e, clock);
        } else if policy.is_lfu() {
            let log_factor = self.cfg.lfu_log_factor();
            self.lfu_state_mut().hit(e, clock, log_factor);
        } else {
            e.set_atime(clock as u32);
        }
    }

    /// `e` (index hash `h`) is new here: LRU's touch, or LHD's or S3-FIFO's admission.
    #[inline]
    fn admitted(&mut self, e: Entry, h: u64, clock: u64) {
        let policy = self.cfg.tenant_policy(self.tenant);
        // A COPY, or a key relocated from another shard, arrives with its source's
        // word, queue bit and all (`insert_entry` counted it in): every policy's
        // admission rewrites the word.
        self.s3_small.leaving(e);
        if policy.is_lhd() {
            self.lhd_model().admit(e, h, clock);
        } else if policy.is_s3fifo() {
            let limit = self.cfg.shard_limit();
            let len = self.table.len();
            let small = &mut self.s3_small;
            self.s3
                .get_or_insert_with(PartS3::new)
                .admit(e, h, clock, len, limit, small);
        } else if policy.is_lfu() {
            crate::lfu::admit(e, clock);
        } else {
            e.set_atime(clock as u32);
        }
    }

    /// Drops the per-policy state (LHD's model, S3-FIFO's ghost, LFU's marks) that
    /// `policy` does not use, so that the other policies pay nothing for it.
    fn keep_policy_state_of(&mut self, policy: EvictionPolicy) {
        if !policy.is_lhd() {
            self.lhd = None;
        }
        if !policy.is_s3fifo() {
            self.s3 = None;
        }
        if !policy.is_lfu() {
            self.lfu = None;
        }
    }

    /// This part's LFU state, created if missing: with no decay until the shard's next
    /// cycle hands it the marks ([`Shard::note_wall_clock`]).
    fn lfu_state_mut(&mut self) -> &mut PartLfu {
        let seed = mix64(((self.tenant as u64) << 32) ^ self.table.len() as u64);
        self.lfu
            .get_or_insert_with(|| Box::new(PartLfu::new(Arc::default(), seed)))
    }

    /// This part's S3-FIFO state, created if missing (as [`Self::lhd_model`]).
    fn s3_state_mut(&mut self) -> &mut PartS3 {
        self.s3.get_or_insert_with(PartS3::new)
    }

    /// Publishes store event `ev` for (db, key) if its class is on (notify.c; see
    /// `crate::notify`): one relaxed load and an untaken branch while it is off.
    #[inline]
    fn event(&self, ev: KeyEvent, db: u8, key: &[u8]) {
        if self.cfg.notifies(ev.class()) {
            self.cfg.emit(self.tenant, db, key, ev);
        }
    }

    /// [`Self::event`] for the entry at `pos` (before it is removed).
    #[inline]
    fn event_at(&self, ev: KeyEvent, pos: usize) {
        if self.cfg.notifies(ev.class()) {
            let e = self.entry(pos);
            self.cfg.emit(self.tenant, e.db(), e.key(), ev);
        }
    }

    /// Tells WATCHers that (db, key) is being modified: written, deleted, evicted,
    /// expired or given a new TTL (Redis's `signalModifiedKey` → `touchWatchedKey`).
    #[inline]
    fn modified(&self, db: u8, key: &[u8]) {
        if let Some(w) = &self.watched {
            w.touch(db, key);
        }
        if self.cfg.key_changes_on.load(Ordering::Relaxed) {
            self.key_changed(key);
        }
    }

    /// Hands a change to the client-side-caching sink (`Self::modified`'s slow path).
    #[cold]
    fn key_changed(&self, key: &[u8]) {
        if let Some(sink) = self.cfg.changes.get() {
            sink.key_changed(self.tenant, key);
        }
    }

    /// Heap bytes held by this tenant here: entries' usable sizes plus index capacity.
    pub(crate) fn used(&self) -> u64 {
        self.n_used()
            + self.zone.as_deref().map_or(0, PartZone::bytes)
            + self.s3.as_deref().map_or(0, PartS3::heap_bytes)
    }

    /// Bytes of the N-zone alone (the uncompressed entries and their index).
    fn n_used(&self) -> u64 {
        self.entry_bytes + self.index_bytes()
    }

    fn index_bytes(&self) -> u64 {
        self.table.heap_bytes()
            + self.volatile.capacity() as u64 * std::mem::size_of::<Entry>() as u64
    }

    /// The index bytes one entry is charged (its share of the table and TTL list).
    fn index_share(&self) -> u64 {
        self.index_bytes() / self.table.len().max(1) as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The LHD state, if this part has one.
    pub(crate) fn lhd_state(&self) -> Option<&PartLhd> {
        self.lhd.as_deref()
    }

    /// Starts fetching what admitting a key of hash `h` will read (S3-FIFO's ghost
    /// buckets), for a write that evicts first: the lines arrive while it does.
    #[inline]
    fn prefetch_admission(&self, h: u64) {
        if let Some(s3) = self.s3.as_deref() {
            s3.prefetch_ghost(h);
        }
    }

    /// INFO's S3-FIFO figures of this part, if it has S3-FIFO state.
    pub(crate) fn s3_stats(&self) -> Option<crate::s3fifo::S3FifoStats> {
        self.s3
            .as_deref()
            .map(|s3| s3.stats(&self.s3_small, self.table.len()))
    }

    #[inline]
    fn entry(&self, pos: usize) -> Entry {
        self.table.at(pos).expect("position is occupied")
    }

    fn find_pooled(table: &Table, db: u8, key: &[u8]) -> Option<usize> {
        table.find(db_hash(key_hash(key), db), |e| {
            e.db() == db && e.key() == key
        })
    }

    /// [`Self::position_of`] where the caller may know it already (`known`: where the
    /// index held `e` when it was sampled, with no change to the index since), saving
    /// the key's hash and the probe.
    #[inline]
    fn known_position_of(&self, e: Entry, known: Option<usize>) -> usize {
        match known {
            Some(pos) if self.table.at(pos) == Some(e) => pos,
            _ => self.position_of(e),
        }
    }

    /// LHD's victim `e` (ranked `rank`, last seen at index position `known`) is about
    /// to go: its model counts the eviction, and its index position is returned. The
    /// eviction's histogram bin is fetched while the index is probed.
    fn lhd_evicting(&mut self, e: Entry, rank: f32, known: Option<usize>, clock: u64) -> usize {
        let tag = self.lhd.as_deref().map(|l| l.eviction_tag(e, clock));
        let pos = self.known_position_of(e, known);
        if let (Some(l), Some(tag)) = (self.lhd.as_deref_mut(), tag) {
            l.evicted(e, tag, rank);
        }
        pos
    }

    /// Position of an entry known to be indexed.
    fn position_of(&self, e: Entry) -> usize {
        self.table
            .find(entry_hash(e), |x| x == e)
            .expect("every entry is indexed")
    }

    /// The position of a live (unexpired) key; an expired one is removed on the way.
    /// When absent, `Err` carries where an insert would go (the probe's vacancy; None if
    /// unknown, e.g. after removing an expired entry), so a write probes once.
    /// A key found in the Z-zone is moved to the N-zone first (see `crate::zone`), so
    /// that every command sees it as an ordinary entry.
    fn find_live_pos(
        &mut self,
        db: u8,
        key: &[u8],
        h: u64,
        now_ms: u64,
    ) -> Result<usize, Option<usize>> {
        self.find_pos(db, key, h, now_ms, Lookup::Write)
    }

    /// [`Self::find_live_pos`] for a read or a write ([`Lookup`]: a paused read leaves
    /// an expired key in place).
    fn find_pos(
        &mut self,
        db: u8,
        key: &[u8],
        h: u64,
        now_ms: u64,
        lookup: Lookup,
    ) -> Result<usize, Option<usize>> {
        match self.find_pos_n(db, key, h, now_ms, lookup) {
            Err(vacancy) if self.zone.is_some() => {
                // Taking an expired key out of the Z-zone drops it: a paused read only
                // takes a live one.
                if lookup == Lookup::Read
                    && self.cfg.expiry_paused(now_ms)
                    && !self.zone_contains(db, key, now_ms)
                {
                    return Err(vacancy);
                }
                match self.fault_in(db, key, h, now_ms) {
                    Some(pos) => Ok(pos),
                    None => Err(vacancy),
                }
            }
            r => r,
        }
    }

    /// [`Self::find_live_pos`] in the N-zone only.
    fn find_live_pos_n(
        &mut self,
        db: u8,
        key: &[u8],
        h: u64,
        now_ms: u64,
    ) -> Result<usize, Option<usize>> {
        self.find_pos_n(db, key, h, now_ms, Lookup::Write)
    }

    /// [`Self::find_pos`] in the N-zone only.
    fn find_pos_n(
        &mut self,
        db: u8,
        key: &[u8],
        h: u64,
        now_ms: u64,
        lookup: Lookup,
    ) -> Result<usize, Option<usize>> {
        let pos = self
            .table
            .find_or_vacancy(h, |e| e.db() == db && e.key() == key)?;
        if self.entry(pos).expire_at().is_some_and(|at| now_ms > at) {
            if lookup == Lookup::Read && self.cfg.expiry_paused(now_ms) {
                return Err(None);
            }
            self.event_at(KeyEvent::Expired, pos);
            self.remove_at_lazily(pos, self.cfg.lazyfree.on_expire());
            self.expired += 1;
            return Err(None);
        }
        Ok(pos)
    }

    fn find_live(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<Entry> {
        let h = db_hash(key_hash(key), db);
        self.find_live_pos(db, key, h, now_ms)
            .ok()
            .map(|pos| self.entry(pos))
    }

    /// [`Self::find_live`] for a read ([`Lookup::Read`]).
    fn find_readable(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<Entry> {
        let h = db_hash(key_hash(key), db);
        self.find_pos(db, key, h, now_ms, Lookup::Read)
            .ok()
            .map(|pos| self.entry(pos))
    }

    #[allow(clippy::too_many_arguments)]
    fn insert_new(
        &mut self,
        db: u8,
        key: &[u8],
        value: &[u8],
        expire: Option<u64>,
        now: u32,
        h: u64,
        vacancy: Option<usize>,
    ) -> Entry {
        self.modified(db, key);
        let ttl = expire.map(|at| (at, self.volatile.len() as u32));
        let e = Entry::new(db, key, value, ttl, now);
        self.index_new(e, h, vacancy);
        e
    }

    /// As `insert_new`, for a hash or set; returns the entry and its position.
    #[allow(clippy::too_many_arguments)]
    fn insert_object_new(
        &mut self,
        db: u8,
        key: &[u8],
        obj: Box<Object>,
        expire: Option<u64>,
        now: u32,
        h: u64,
        vacancy: Option<usize>,
    ) -> (Entry, usize) {
        self.modified(db, key);
        let ttl = expire.map(|at| (at, self.volatile.len() as u32));
        let e = Entry::new_object(db, key, obj, ttl, now);
        let pos = self.index_new(e, h, vacancy);
        (e, pos)
    }

    /// Indexes and counts a new entry (its volatile index, if any, is the list's end).
    fn index_new(&mut self, e: Entry, h: u64, vacancy: Option<usize>) -> usize {
        self.entry_bytes += e.charge() as u64;
        if e.has_ttl() {
            self.volatile.push(e);
            self.expires_per_db[e.db() as usize] += 1;
        }
        self.keys_per_db[e.db() as usize] += 1;
        self.table.insert_at_vacancy(h, e, vacancy, &entry_hash)
    }

    /// Replaces the value (and maybe the TTL) of the entry at `pos`; returns the entry
    /// now holding the value, with the old one's recency (the caller then touches it:
    /// [`Part::referenced`], so that LHD sees the overwrite as a hit of its history).
    fn replace(&mut self, pos: usize, value: &[u8], ttl: SetTtl) -> Entry {
        let e = self.entry(pos);
        self.modified(e.db(), e.key());
        let had_ttl = e.has_ttl();
        let new_expire = match ttl {
            SetTtl::Clear => None,
            SetTtl::Keep => e.expire_at(),
            SetTtl::At(at) => Some(at),
        };
        if new_expire.is_some() == had_ttl && e.reuse_for(value.len()) {
            // Same layout and size class: overwrite in place, no allocation.
            e.overwrite_value(value);
            e.set_raw(false);
            if let Some(at) = new_expire {
                e.set_expire_at(at);
            }
            return e;
        }
        let vol_idx = match (had_ttl, new_expire.is_some()) {
            (true, true) => Some(e.volatile_index()),
            (true, false) => {
                self.unlist_volatile(e);
                None
            }
            (false, true) => {
                self.volatile.push(e);
                self.expires_per_db[e.db() as usize] += 1;
                Some(self.volatile.len() as u32 - 1)
            }
            (false, false) => None,
        };
        let fresh = Entry::new(e.db(), e.key(), value, new_expire.zip(vol_idx), e.atime());
        fresh.copy_recency_from(&e);
        self.swap_allocation(pos, e, fresh);
        fresh
    }

    /// Copies the entry at `pos` into a block with (`Some`) or without a TTL block.
    fn reallocate(&mut self, pos: usize, ttl: Option<(u64, u32)>) {
        let e = self.entry(pos);
        self.modified(e.db(), e.key());
        let fresh = e.with_ttl(ttl);
        self.swap_allocation(pos, e, fresh);
    }

    /// Puts `fresh` where `old` was (index and volatile list) and frees `old` (only its
    /// block when `fresh` is a TTL copy sharing its hash or set).
    fn swap_allocation(&mut self, pos: usize, old: Entry, fresh: Entry) {
        self.repoint(pos, old.charge(), fresh);
        if fresh.shares_object_with(&old) {
            old.free_block();
        } else {
            self.release(old, self.cfg.lazyfree.on_server_del());
        }
    }

    /// Makes the index position `pos` (and, with a TTL, the volatile list slot) name
    /// `fresh` instead of an entry charged `old_charge`; the old block is the caller's.
    fn repoint(&mut self, pos: usize, old_charge: usize, fresh: Entry) {
        if fresh.has_ttl() {
            self.volatile[fresh.volatile_index() as usize] = fresh;
        }
        self.table.replace(pos, fresh, &entry_hash);
        self.entry_bytes += fresh.charge() as u64;
        self.entry_bytes -= old_charge as u64;
    }

    /// Active defragmentation (`crate::defrag`): visits up to `budget` index positions
    /// from `from`, moving each entry whose slab is sparse (`Entry::worth_moving`). Returns the
    /// next position (None once past the last) and what it did.
    fn defrag_step(&mut self, from: usize, budget: usize) -> (Option<usize>, DefragStats) {
        let mut stats = DefragStats::default();
        let end = self.table.positions().min(from.saturating_add(budget));
        for pos in from..end {
            let Some(e) = self.table.at(pos) else {
                continue;
            };
            if !e.worth_moving() {
                stats.misses += 1;
                continue;
            }
            let charge = e.charge();
            match e.relocated() {
                Some(fresh) => {
                    self.repoint(pos, charge, fresh);
                    stats.hits += 1;
                }
                None => stats.misses += 1,
            }
        }
        ((end < self.table.positions()).then_some(end), stats)
    }

    /// Takes `e` (which has a TTL) out of the volatile list.
    fn unlist_volatile(&mut self, e: Entry) {
        let v = e.volatile_index() as usize;
        self.volatile.swap_remove(v);
        if let Some(&moved) = self.volatile.get(v) {
            moved.set_volatile_index(v as u32);
        }
        self.expires_per_db[e.db() as usize] -= 1;
        if self.volatile.capacity() > 64 && self.volatile.len() * 4 < self.volatile.capacity() {
            self.volatile.shrink_to(self.volatile.len() * 2);
        }
    }

    /// Deletes the entry at `pos`, keeping index, volatile list and counters consistent.
    fn remove_at(&mut self, pos: usize) {
        self.unlink_at(pos).free();
    }

    /// [`Self::remove_at`], the value freed on the background thread when `lazy` and
    /// it is large (`crate::lazyfree`).
    fn remove_at_lazily(&mut self, pos: usize, lazy: bool) {
        let e = self.unlink_at(pos);
        self.release(e, lazy);
    }

    /// Frees an entry taken out of the index: its value on the background freer when
    /// `lazy` (the freer keeps small values here), its block at once.
    fn release(&self, e: Entry, lazy: bool) {
        if !lazy {
            return e.free();
        }
        if let Some(obj) = e.take_object() {
            self.cfg.lazyfree.free(obj);
        }
        e.free_block();
    }

    /// Takes the entry at `pos` out of the index, TTL list and counters without freeing
    /// it (the caller frees it, or moves its object and frees the block).
    fn unlink_at(&mut self, pos: usize) -> Entry {
        let e = self.unlink_unmodified(pos);
        self.modified(e.db(), e.key());
        e
    }

    /// [`Self::unlink_at`] without telling WATCHers: the key is not modified, only
    /// moved (to the Z-zone).
    fn unlink_unmodified(&mut self, pos: usize) -> Entry {
        let e = self.table.remove(pos, &entry_hash);
        if let Some(l) = self.lhd.as_deref_mut() {
            l.removed(e);
        }
        self.s3_small.leaving(e);
        if e.has_ttl() {
            self.unlist_volatile(e);
        }
        self.keys_per_db[e.db() as usize] -= 1;
        self.entry_bytes -= e.charge() as u64;
        e
    }

    /// One uniformly random position of this part (of its TTL list with
    /// `from_volatile`) that does not hold `pinned`; None if there is none.
    fn random_victim(
        &self,
        from_volatile: bool,
        pinned: Option<Entry>,
        rng: &mut SmallRng,
    ) -> Option<usize> {
        for _ in 0..64 {
            let pos = if from_volatile {
                if self.volatile.is_empty() {
                    return None;
                }
                let e = self.volatile[rng.gen_range(0..self.volatile.len())];
                self.position_of(e)
            } else {
                self.table.random_occupied(rng)?
            };
            if pinned.is_none_or(|p| self.table.at(pos) != Some(p)) {
                return Some(pos);
            }
        }
        None
    }

    fn random_position_of_db(&self, db: u8, rng: &mut SmallRng) -> Option<usize> {
        // Rejection sampling is uniform over db's entries; fall back to a scan when db
        // holds a tiny share of this part.
        for _ in 0..64 {
            let pos = self.table.random_occupied(rng)?;
            if self.entry(pos).db() == db {
                return Some(pos);
            }
        }
        let positions: Vec<usize> = (0..self.table.positions())
            .filter(|&p| self.table.at(p).is_some_and(|e| e.db() == db))
            .collect();
        if positions.is_empty() {
            None
        } else {
            Some(positions[rng.gen_range(0..positions.len())])
        }
    }

    /// Removes every entry of `db`.
    fn flush_db(&mut self, db: u8, lazy: bool) {
        let mut pos = self.table.positions();
        while pos > 0 {
            pos -= 1;
            // Removal only moves already-examined (higher) entries down into `pos`..
            // A shrink reassigns positions wholesale: then start over from the top.
            if self.table.at(pos).is_some_and(|e| e.db() == db) {
                let epoch = self.table.epoch();
                self.remove_at_lazily(pos, lazy);
                if self.table.epoch() != epoch {
                    pos = self.table.positions();
                }
            }
        }
        self.pool.retain(|k| k[2] != db);
        // Redis's touchAllWatchedKeysInDb: watched keys that exist (here, in the Z-zone).
        if let (Some(w), Some(z)) = (&self.watched, self.zone.as_deref()) {
            for (wdb, key) in w.keys() {
                if *wdb == db && z.z.contains(db, key, 0) {
                    w.touch(db, key);
                }
            }
        }
        if let Some(z) = self.zone.as_deref_mut() {
            z.z.clear_db(db);
            z.clear_stale_db(db);
            z.keys_per_db[db as usize] = 0;
            z.expires_per_db[db as usize] = 0;
        }
    }

    /// Removes everything and returns the memory to the allocator.
    fn flush_all(&mut self, lazy: bool) {
        // Redis's touchAllWatchedKeysInDb: the watched keys that exist are touched.
        if let Some(w) = &self.watched {
            for (db, key) in w.keys() {
                let in_z = |z: &PartZone| z.z.contains(*db, key, 0);
                if Self::find_pooled(&self.table, *db, key).is_some()
                    || self.zone.as_deref().is_some_and(in_z)
                {
                    w.touch(*db, key);
                }
            }
        }
        for e in self.table.entries() {
            self.release(e, lazy);
        }
        self.table.clear();
        self.volatile = Vec::new();
        self.entry_bytes = 0;
        self.keys_per_db.iter_mut().for_each(|c| *c = 0);
        self.expires_per_db.iter_mut().for_each(|c| *c = 0);
        self.pool.clear();
        self.lhd = None;
        self.s3 = None;
        self.s3_small.clear();
        self.zone = None;
    }

    /// LHD's victim among this part's entries (its TTL list's with `from_volatile`):
    /// the lowest hit density per byte among about `samples` uniformly drawn entries
    /// ([`lhd_sample`]) and the recent low-density admissions still here, never
    /// `pinned`; with its rank and, where the sample knows it, its index position.
    fn lhd_victim(
        &mut self,
        from_volatile: bool,
        pinned: Option<Entry>,
        clock: u64,
        samples: usize,
    ) -> Option<(Entry, f32, Option<usize>)> {
        let limit = self.cfg.shard_limit();
        let l = self.lhd_model();
        l.set_capacity(limit);
        l.model.set_time(clock);
        // Fewer while the model has learned nothing (`augur_sim::lhd::samples`).
        let samples = l.model.samples(samples);
        // The recent admissions are confirmed in the index after the sample: their
        // index words are fetched while it is drawn and ranked.
        let Part { table, lhd, .. } = self;
        let l = lhd.as_deref_mut().expect("created above");
        l.prefetch_recent(table);
        // The sampler reads the part; the model's generator and candidates come back
        // after it.
        let mut rng = l.rng.clone();
        let mut carried = std::mem::take(&mut l.carried);
        let best = lhd_choose(
            std::slice::from_ref(self),
            &mut carried,
            from_volatile,
            pinned,
            clock,
            samples,
            &mut rng,
        )
        .map(|v| (v.entry, v.rank, v.pos));
        let Part { table, lhd, .. } = self;
        let l = lhd.as_deref_mut()?;
        l.rng = rng;
        l.carried = carried;
        match l.lowest_recent(table, pinned, from_volatile, clock) {
            Some((e, r, pos)) if best.is_none_or(|(_, b, _)| r < b) => Some((e, r, Some(pos))),
            _ => best,
        }
    }

    /// Chooses and removes one victim of this tenant by `policy` with K = `k`; false if
    /// the policy finds nothing it may evict here.
    fn evict_one(
        &mut self,
        tenant: TenantId,
        policy: EvictionPolicy,
        k: usize,
        clock: u64,
        rng: &mut SmallRng,
        pinned: Option<Entry>,
    ) -> bool {
        if policy != self.pool_policy {
            self.pool.clear();
            self.pool_policy = policy;
        }
        self.keep_policy_state_of(policy);
        self.follow_zone_setting();
        if self
            .zone
            .as_deref()
            .is_some_and(|z| !z.demote_next(self.n_used()))
            && self.evict_from_zone()
        {
            return true;
        }
        match self.pick_victim(tenant, policy, k, clock, rng, pinned) {
            Some(pos) => {
                self.evict_or_demote(pos, clock);
                true
            }
            // An N-zone with nothing to give may still have a Z-zone that can.
            None => self.evict_from_zone(),
        }
    }

    /// Moves the N-zone's victim (by `policy`) to the Z-zone if it is a string: the
    /// N-zone is over its target size though memory is not full (zExpander caps the
    /// N-zone at its target from the start, §3.3.1). False if there is nothing to
    /// demote (then nothing is evicted either).
    fn demote_one(
        &mut self,
        tenant: TenantId,
        policy: EvictionPolicy,
        k: usize,
        clock: u64,
        rng: &mut SmallRng,
        pinned: Option<Entry>,
    ) -> bool {
        if !self.zone.as_deref().is_some_and(PartZone::takes_demotions) {
            return false;
        }
        match self.pick_victim(tenant, policy, k, clock, rng, pinned) {
            Some(pos) if !self.entry(pos).is_object() => {
                self.evict_or_demote(pos, clock);
                true
            }
            _ => false,
        }
    }

    /// This tenant's N-zone victim by `policy` with K = `k`, never `pinned`.
    fn pick_victim(
        &mut self,
        tenant: TenantId,
        policy: EvictionPolicy,
        k: usize,
        clock: u64,
        rng: &mut SmallRng,
        pinned: Option<Entry>,
    ) -> Option<usize> {
        match policy {
            EvictionPolicy::NoEviction => None,
            EvictionPolicy::AllKeysRandom => self.random_victim(false, pinned, rng),
            EvictionPolicy::VolatileRandom => self.random_victim(true, pinned, rng),
            EvictionPolicy::AllKeysLru
            | EvictionPolicy::VolatileLru
            | EvictionPolicy::VolatileTtl
            | EvictionPolicy::AllKeysLfu
            | EvictionPolicy::VolatileLfu => {
                let marks = policy.is_lfu().then(|| self.lfu_state_mut().marks.clone());
                let mut pool = std::mem::take(&mut self.pool);
                let mut candidates = Sampled {
                    parts: std::slice::from_ref(self),
                    first_tenant: tenant,
                    clock,
                    from_volatile: policy.volatile_only(),
                    score: Score::of(policy, marks.as_deref()),
                    pinned,
                };
                let id = select_victim_pooled(&mut pool, &mut candidates, k, rng);
                self.pool = pool;
                id.and_then(|id| Self::find_pooled(&self.table, id[2], &id[3..]))
            }
            EvictionPolicy::AllKeysLhd | EvictionPolicy::VolatileLhd => {
                let samples = self.cfg.lhd_samples();
                self.lhd_victim(policy.volatile_only(), pinned, clock, samples)
                    .map(|(e, rank, pos)| self.lhd_evicting(e, rank, pos, clock))
            }
            EvictionPolicy::AllKeysS3Fifo | EvictionPolicy::VolatileS3Fifo => self
                .s3_victim(policy.volatile_only(), pinned, clock, k, rng)
                .map(|e| self.position_of(e)),
        }
    }

    /// S3-FIFO's victim among this part's entries (its TTL list's with
    /// `from_volatile`), never `pinned`; K = `k` draws for the main queue.
    fn s3_victim(
        &mut self,
        from_volatile: bool,
        pinned: Option<Entry>,
        clock: u64,
        k: usize,
        rng: &mut SmallRng,
    ) -> Option<Entry> {
        // Created here whatever the tenant's policy reads now: the caller evicts by
        // S3-FIFO, and a concurrent CONFIG SET must not turn that into "nothing to
        // evict" (an OOM for a write that had a victim).
        self.s3_state_mut();
        let Part {
            table,
            volatile,
            s3,
            s3_small,
            ..
        } = self;
        let part_len = table.len();
        let s3 = s3.as_deref_mut()?;
        if from_volatile {
            let mut draw = || -> Option<Entry> {
                if volatile.is_empty() {
                    return None;
                }
                Some(volatile[rng.gen_range(0..volatile.len())])
            };
            let drawn_from = volatile.len();
            s3.victim(
                &mut draw,
                pinned,
                clock,
                k,
                drawn_from,
                part_len,
                s3_small,
                &entry_hash,
            )
        } else {
            // Each draw's cache misses overlap with the next few draws' (the eviction
            // draws one at a time, ~10 to find a small-queue entry).
            let mut ahead = DrawsAhead::new(table, rng);
            let mut draw = || ahead.next_entry();
            s3.victim(
                &mut draw,
                pinned,
                clock,
                k,
                part_len,
                part_len,
                s3_small,
                &entry_hash,
            )
        }
    }
}

/// The two zones (zExpander; the decisions are `crate::zone`'s, the moving is here).
impl Part {
    /// Creates the Z-zone when `compressed-zone` is on and drops it (its items counted
    /// as evicted, with their events) when it was turned off.
    fn follow_zone_setting(&mut self) {
        let on = self.cfg.zone.on() && self.zone_allowance() >= MIN_ZONE_ALLOWANCE;
        if self.zone.as_deref().is_some_and(PartZone::gave_up) {
            // Nothing in it and nothing to gain: no fixed cost either until a retry.
            self.zone = None;
            self.zone_paused = true;
            self.zone_paused_since_ms = 0;
        }
        if on && self.zone.is_none() && !self.zone_paused {
            self.zone = Some(Box::new(PartZone::new(
                &self.cfg.zone,
                self.keys_per_db.len(),
            )));
        } else if !on && self.zone.is_some() {
            while self.evict_from_zone() {}
            self.zone = None;
        }
    }

    /// The memory this part may hold here: its tenant's cap's share under partitioning,
    /// else the shard's share of `maxmemory` (0: no limit).
    fn zone_allowance(&self) -> u64 {
        let cap = self.cfg.tenant_cap_share(self.tenant);
        if cap > 0 {
            cap
        } else {
            self.cfg.shard_limit()
        }
    }

    /// Evicts from the Z-zone (§3.2's sweep) until its bytes drop; false if it had
    /// nothing to evict. Evicted items get Redis's `evicted` event and touch WATCHers.
    fn evict_from_zone(&mut self) -> bool {
        let Part {
            zone,
            cfg,
            watched,
            tenant,
            evicted,
            expired,
            ..
        } = self;
        let Some(zone) = zone.as_deref_mut() else {
            return false;
        };
        if zone.z.is_empty() {
            return false;
        }
        // The pending removals of stale copies run first (§3.3.2).
        if zone.remove_stale(self.clock_hint) > 0 {
            return true;
        }
        let PartZone {
            z,
            keys_per_db,
            expires_per_db,
            z_evictions,
            stale,
            ..
        } = zone;
        let target = z.bytes().saturating_sub(1);
        let (mut gone, mut died) = (0u64, 0u64);
        let mut stale_gone = 0u64;
        let now_ms = z.clock_ms();
        z.sweep_to(target, now_ms, |db, key, meta, why| {
            if !stale.is_empty() && stale.remove(&(db, Box::<[u8]>::from(key))).is_some() {
                stale_gone += key.len() as u64;
                return; // superseded: neither counted nor announced
            }
            keys_per_db[db as usize] -= 1;
            if meta.expire_at_ms.is_some() {
                expires_per_db[db as usize] -= 1;
            }
            if let Some(w) = watched.as_deref() {
                w.touch(db, key);
            }
            let ev = match why {
                Gone::Evicted => {
                    gone += 1;
                    KeyEvent::Evicted
                }
                Gone::Expired => {
                    died += 1;
                    KeyEvent::Expired
                }
            };
            if cfg.notifies(ev.class()) {
                cfg.emit(*tenant, db, key, ev);
            }
        });
        zone.stale_key_bytes -= stale_gone;
        *evicted += gone;
        *z_evictions += gone;
        *expired += died;
        gone + died > 0 || stale_gone > 0
    }

    /// Active expiry in the Z-zone: up to `blocks` blocks visited, their expired items
    /// dropped (counted, announced, WATCH touched). Returns how many.
    fn zone_expire_cycle(&mut self, now_ms: u64, blocks: usize) -> u64 {
        let Part {
            zone,
            cfg,
            watched,
            tenant,
            expired,
            ..
        } = self;
        let Some(zone) = zone.as_deref_mut() else {
            return 0;
        };
        let PartZone {
            z,
            keys_per_db,
            expires_per_db,
            stale,
            stale_key_bytes,
            ..
        } = zone;
        let mut died = 0u64;
        z.expire_cycle(now_ms, blocks, |db, key, _meta| {
            if !stale.is_empty() && stale.remove(&(db, Box::<[u8]>::from(key))).is_some() {
                *stale_key_bytes -= key.len() as u64;
                return;
            }
            died += 1;
            keys_per_db[db as usize] -= 1;
            expires_per_db[db as usize] -= 1;
            if let Some(w) = watched.as_deref() {
                w.touch(db, key);
            }
            if cfg.notifies(KeyEvent::Expired.class()) {
                cfg.emit(*tenant, db, key, KeyEvent::Expired);
            }
        });
        *expired += died;
        died
    }

    /// The N-zone's victim at `pos` leaves it: a string moves to the Z-zone when the
    /// zone is on (not a modification: no event, WATCH untouched); otherwise, or for a
    /// hash or set, it is evicted.
    fn evict_or_demote(&mut self, pos: usize, clock: u64) {
        let e = self.entry(pos);
        let takes = self.zone.as_deref().is_some_and(PartZone::takes_demotions);
        if takes && !e.is_object() {
            let meta = ZMeta {
                expire_at_ms: e.expire_at(),
                flags: e.is_raw() as u8,
            };
            let age = e.idle(clock as u32);
            let (n_bytes, n_items) = (self.n_used(), self.table.len() as u64);
            let z = self.zone.as_deref_mut().expect("checked");
            // Replaces a stale copy of the key in the same block write, if there is one.
            z.z.insert(e.db(), e.key(), e.value(), meta);
            z.unstale(e.db(), e.key());
            z.keys_per_db[e.db() as usize] += 1;
            if meta.expire_at_ms.is_some() {
                z.expires_per_db[e.db() as usize] += 1;
            }
            z.note_demotion(age, n_bytes, n_items);
            self.unlink_unmodified(pos).free();
            return;
        }
        self.event_at(KeyEvent::Evicted, pos);
        self.remove_at_lazily(pos, self.cfg.lazyfree.on_eviction());
        self.evicted += 1;
    }

    /// Takes (db, key) out of the Z-zone, keeping its counts (an item found expired is
    /// dropped as expired, with its event).
    fn zone_take(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<(Vec<u8>, ZMeta)> {
        let z = self.zone.as_deref_mut()?;
        if z.is_stale(db, key) {
            return None;
        }
        let before = z.z.len();
        let got = z.z.remove(db, key, now_ms);
        let after = z.z.len();
        if let Some((_, meta)) = &got {
            z.keys_per_db[db as usize] -= 1;
            if meta.expire_at_ms.is_some() {
                z.expires_per_db[db as usize] -= 1;
            }
        } else if after < before {
            self.zone_expired(db, key);
        }
        got
    }

    /// The Z-zone dropped (db, key) because it had expired (it had a TTL).
    fn zone_expired(&mut self, db: u8, key: &[u8]) {
        if let Some(z) = self.zone.as_deref_mut() {
            z.keys_per_db[db as usize] -= 1;
            z.expires_per_db[db as usize] -= 1;
        }
        self.expired += 1;
        self.modified(db, key);
        self.event(KeyEvent::Expired, db, key);
    }

    /// SET over a key that is in the Z-zone: its copy there becomes stale (uncounted,
    /// invisible, removed later; see `crate::zone`). `Some(())` if the key was there,
    /// its expiry time then in `superseded_expire`.
    fn zone_supersede(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<()> {
        let clock = self.clock_hint;
        let z = self.zone.as_deref_mut()?;
        if z.is_stale(db, key) {
            return None;
        }
        let before = z.z.len();
        let mut buf = std::mem::take(&mut z.scratch);
        buf.clear();
        let got = z.z.get(db, key, now_ms, &mut buf);
        z.scratch = buf;
        let Some(meta) = got else {
            if z.z.len() < before {
                self.zone_expired(db, key);
            }
            return None;
        };
        z.keys_per_db[db as usize] -= 1;
        if meta.expire_at_ms.is_some() {
            z.expires_per_db[db as usize] -= 1;
        }
        z.mark_stale(db, key, clock);
        z.served_in_z();
        self.superseded_expire = meta.expire_at_ms;
        Some(())
    }

    /// Moves (db, key) from the Z-zone into the N-zone if it is there; its position.
    /// The shard makes room for it afterwards (`faulted`).
    fn fault_in(&mut self, db: u8, key: &[u8], h: u64, now_ms: u64) -> Option<usize> {
        let (value, meta) = self.zone_take(db, key, now_ms)?;
        let z = self.zone.as_deref_mut().expect("zone_take found it");
        z.promotions += 1;
        z.served_in_z();
        let ttl = meta.expire_at_ms.map(|at| (at, self.volatile.len() as u32));
        let e = Entry::new(db, key, &value, ttl, self.clock_hint);
        e.set_raw(meta.flags & 1 != 0);
        self.faulted = true;
        Some(self.index_new(e, h, None))
    }

    /// Whether (db, key) is live in the Z-zone (the Content Filter answers most misses
    /// without decompressing).
    fn zone_contains(&self, db: u8, key: &[u8], now_ms: u64) -> bool {
        self.zone
            .as_deref()
            .is_some_and(|z| z.z.contains(db, key, now_ms) && !z.is_stale(db, key))
    }
}

impl Part {
    /// Items in the Z-zone (expired ones not yet dropped included, as DBSIZE counts).
    pub(crate) fn zone_items(&self) -> u64 {
        self.zone.as_deref().map_or(0, PartZone::live_items)
    }

    fn zone_scratch_len(&self) -> usize {
        self.zone.as_deref().map_or(0, |z| z.scratch.len())
    }

    /// Keys of `db` in the Z-zone.
    fn zone_keys(&self, db: u8) -> u64 {
        self.zone
            .as_deref()
            .map_or(0, |z| z.keys_per_db.get(db as usize).copied().unwrap_or(0))
    }

    /// KEYS in the Z-zone: live keys of `db` matching `pattern`.
    fn zone_keys_matching(
        &self,
        db: u8,
        pattern: Option<&[u8]>,
        now_ms: u64,
        out: &mut Vec<Vec<u8>>,
    ) {
        let Some(z) = self.zone.as_deref() else {
            return;
        };
        z.z.for_each(|d, key, meta| {
            if d == db
                && meta.expire_at_ms.is_none_or(|at| now_ms <= at)
                && !z.is_stale(d, key)
                && pattern.is_none_or(|p| crate::glob::glob_match(p, key))
            {
                out.push(key.to_vec());
            }
        });
    }
}

/// A part gets a Z-zone only with at least this much memory to manage: a zone's fixed
/// cost (its buffers, first trie levels and tables, ~6 KB) stays under 2.5 % of it, and
/// with no memory limit nothing is ever demoted. (At 64 shards: `maxmemory` of 16 MB.
/// Measured: with 10 KB per shard the zone's fixed cost made misses worse than without
/// it.)
const MIN_ZONE_ALLOWANCE: u64 = 256 << 10;

/// What a GET found in the Z-zone.
enum ZoneRead {
    Absent,
    /// Served in place: the value is the zone's scratch buffer.
    Served,
    /// Promoted to the N-zone at this position.
    Promoted(usize),
}

impl Part {
    /// A GET's look in the Z-zone after an N-zone miss (§3.3.2): serve in place, or
    /// promote when the key's reuse time beats the N-zone's benchmark.
    fn zone_read(&mut self, db: u8, key: &[u8], h: u64, now_ms: u64) -> ZoneRead {
        let clock = self.clock_hint;
        let Some(z) = self.zone.as_deref_mut() else {
            return ZoneRead::Absent;
        };
        if z.is_stale(db, key) {
            return ZoneRead::Absent;
        }
        let before = z.z.len();
        let mut buf = std::mem::take(&mut z.scratch);
        buf.clear();
        let got = z.z.get(db, key, now_ms, &mut buf);
        z.scratch = buf;
        if got.is_none() {
            if z.z.len() < before {
                self.zone_expired(db, key);
            }
            return ZoneRead::Absent;
        }
        if z.promote_on_read(h, clock) {
            match self.fault_in(db, key, h, now_ms) {
                Some(pos) => ZoneRead::Promoted(pos),
                None => ZoneRead::Absent,
            }
        } else {
            ZoneRead::Served
        }
    }
}

/// Index bytes the profiler charges each entry on top of its allocation: the table's
/// 8-byte word at its load factor (0.44-0.875 between resizes, ~0.6 on average) plus the
/// TTL list's share. A constant, not the part's current average, so that a key's size
/// in the model does not move when the table resizes.
pub const PROFILE_INDEX_BYTES: u64 = 16;

/// A shard adds a tenant's usage change to the store-wide per-tenant counter once it
/// reaches this many bytes: one atomic add per ~16 KB of churn instead of per write,
/// at an error of at most this much per shard.
const TENANT_SYNC_BYTES: u64 = 16 << 10;
const MIN_TENANT_SYNC_BYTES: u64 = 1 << 10;

/// The bytes a key of this shape is charged in the profiler's curves: its block's
/// allocated size ([`Entry::allocated_size`], in database `db`) plus
/// [`PROFILE_INDEX_BYTES`].
pub fn charged_bytes(db: u8, key_len: usize, value_len: usize, ttl: bool) -> u64 {
    Entry::allocated_size(db, key_len, value_len, ttl) as u64 + PROFILE_INDEX_BYTES
}

/// A reference's size for the profiler: the key's whole charge (a hash or set with its
/// object), plus [`PROFILE_INDEX_BYTES`].
#[inline]
fn profiled_bytes(e: Entry) -> u64 {
    e.charge() as u64 + PROFILE_INDEX_BYTES
}

/// A write of more than 1/this of the shard's share of `maxmemory` may take the shard
/// past its share while the store as a whole has room for it (the shard then counts as
/// borrowing, and the check before each write evicts in any shard once the store is
/// full: `Store::over_limit_for_writes`). Held to its share, a shard keeps only as many
/// large values as fit whole, and each leaves on average half a value unused: with
/// 100 KB values in 11 MB (64 shares of 176 KB) Augur kept 60 keys, 6.9 MB, where
/// redis-server kept 90 (unit/maxmemory's client-eviction tests write 50 such keys and
/// expect all 50 kept). At 1/16 the loss left to small writes is at most ~3 % of the
/// limit, and a store of small values (1 KB in 64 MB: 1/1000 of a share) never
/// borrows, so the check stays one load.
const LARGE_WRITE_SHARES: u64 = 16;

/// The most read misses a shard remembers as unfilled ([`Shard::unfilled_reads`]): misses
/// never filled (a client that reads and does not write back) stop holding the clock
/// after this many inserts.
const MAX_UNFILLED_READS: u32 = 1024;

pub struct Shard {
    config: Arc<SharedConfig>,
    /// One part per tenant slot that has touched this shard, indexed by [`TenantId`].
    parts: Vec<Part>,
    clock: u64,
    /// Read misses not yet followed by an insert (at most [`MAX_UNFILLED_READS`]). The
    /// insert that fills one does not move [`Self::clock`]: a miss and its fill are one
    /// access, as a simulator counts them, so that the clock counts requests and the ages
    /// LHD measures on it are the simulator's (with both ticking, a cache missing a
    /// quarter of its reads aged its entries 1.25x as fast, and LHD's age bins spanned
    /// 1/1.25 of the requests they span in `augur sim`); nor does it count toward LHD's
    /// next reconfiguration. LRU compares ages only, which this leaves in the same
    /// order. Counted per shard, not per tenant: with several tenants a miss of one may
    /// be "filled" by an insert of another, a miscount of one tick.
    unfilled_reads: u32,
    /// What readers without the lock see: `used()` (for `Store::used_memory`) and where
    /// the tenants' indexes are (for `Store::prefetch_key`).
    published: Arc<Published>,
    /// The pool of free competition (`tenant-partitioning off`): candidates of all
    /// tenants, as Redis's one pool over one keyspace.
    shared_pool: EvictionPool<PoolKey>,
    shared_pool_policy: EvictionPolicy,
    /// LHD's candidates carried between evictions under free competition, over all
    /// parts ([`lhd_sample_carried`]).
    lhd_carried: Carried,
    rng: SmallRng,
    /// The seed the shard was made with (its number in the store, offset): numbers its
    /// tenants' index tables for their growth phases (`Table::with_phase`).
    seed: u64,
    /// The tenant of the last `part()` call: the one whose store-wide usage
    /// `publish()` brings up to date.
    touched: TenantId,
    /// The hash or set a command is changing, which eviction must not choose
    /// (see the module documentation); set only inside [`Shard::write_object`].
    pinned: Option<Entry>,
    /// Wall-clock dates of the logical clock, for OBJECT IDLETIME in seconds.
    wall: wallclock::WallClock,
    /// LFU's decay marks as of the last active-expiry cycle, for free competition's
    /// eviction; each LFU part holds the same (`crate::lfu`).
    lfu_marks: Arc<DecayMarks>,
    /// Over its share of `maxmemory` on room other shards left (a write larger than
    /// 1/[`LARGE_WRITE_SHARES`] of the share, or a policy with nothing to evict here,
    /// such as a volatile one with no key with a TTL), counted in
    /// `SharedConfig::borrowing_shards`; cleared by the next write that fits within the
    /// share.
    borrowing: bool,
}

// SAFETY: the shard exclusively owns every entry allocation it indexes.
unsafe impl Send for Shard {}

impl Shard {
    pub(crate) fn new(config: Arc<SharedConfig>, published: Arc<Published>, seed: u64) -> Shard {
        let policy = config.policy();
        let s = Shard {
            config,
            parts: Vec::new(),
            clock: CLOCK_BASE,
            unfilled_reads: 0,
            published,
            shared_pool: EvictionPool::new(),
            shared_pool_policy: policy,
            lhd_carried: Carried::default(),
            rng: SmallRng::seed_from_u64(seed),
            seed,
            touched: 0,
            pinned: None,
            wall: wallclock::WallClock::new(CLOCK_BASE + 1),
            lfu_marks: Arc::default(),
            borrowing: false,
        };
        s.published.used.store(0, Ordering::Relaxed);
        s
    }

    /// The part of tenant `t`, created on first use. Always inlined: with `#[inline]`
    /// other crates' generic code kept local copies, which fat LTO renames
    /// (`part.4370`) and the linker then does not place with the hot code
    /// (`crates/augur/build.rs`), a stray 128 KB of text resident.
    #[inline(always)]
    fn part(&mut self, t: TenantId) -> &mut Part {
        self.touched = t;
        let t = t as usize;
        if t >= self.parts.len() {
            let (dbs, policy) = (self.config.databases, self.config.policy());
            while self.parts.len() <= t {
                let id = self.parts.len() as TenantId;
                self.parts
                    .push(Part::new(dbs, policy, self.config.clone(), id, self.seed));
            }
        }
        let clock = self.clock as u32;
        let p = &mut self.parts[t];
        p.clock_hint = clock;
        p
    }

    /// Hands a reference to the profiler if the tenant is profiled and the key is in
    /// its spatial sample (kRedis §2.7): O(1), and nothing at all for other keys.
    #[inline]
    fn sample(&self, t: TenantId, id: u64, bytes: u64, kind: RefKind) {
        if self.sampled(t, id, kind) {
            self.record(t, id, bytes, kind);
        }
    }

    /// [`Self::sample`] for entry `e`, whose charged size is only computed (a
    /// `malloc_usable_size`, i.e. a walk of jemalloc's radix tree) for a sampled key:
    /// computed for every GET hit and write it was ~40 instructions and a likely cache
    /// miss per request.
    #[inline(always)]
    fn sample_entry(&self, t: TenantId, id: u64, e: Entry, kind: RefKind) {
        if self.sampled(t, id, kind) {
            self.record(t, id, profiled_bytes(e), kind);
        }
    }

    /// Whether key hash `id` is in tenant `t`'s spatial sample. A profiled tenant's
    /// distinct-key sketch counts every key it references (deletes aside, as the
    /// model's own stream has no deletes among its references), sampled or not.
    #[inline]
    fn sampled(&self, t: TenantId, id: u64, kind: RefKind) -> bool {
        let limits = self.config.tenants.get(t);
        let thr = limits.sample_threshold.load(Ordering::Relaxed);
        if thr == 0 {
            return false;
        }
        let mixed = mix64(id);
        if kind != RefKind::Delete {
            if let Some(sketch) = limits.distinct.get() {
                sketch.observe(mixed);
            }
        }
        (mixed & (SAMPLE_MODULUS - 1)) < thr
    }

    fn record(&self, t: TenantId, id: u64, bytes: u64, kind: RefKind) {
        if let Some(sink) = self.config.sink.get() {
            sink.record(Reference {
                tenant: t,
                id,
                bytes: bytes.min(u32::MAX as u64) as u32,
                kind,
                at: std::time::Instant::now(),
            });
        }
    }

    // ----- public key-level API -----

    /// Reads a string value: lazily expires it, counts a keyspace hit or miss, and makes
    /// the key most recently used. The slice is valid while the shard stays locked.
    /// A hash or set is a hit (as in Redis, whose lookup counts it before the type
    /// check) and answers `Err(WrongType)`.
    pub fn get(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Result<Option<&[u8]>, WrongType> {
        self.tick();
        let clock = self.clock;
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        part.accessed(clock);
        // The N-zone only: a Z-zone hit is served in place or promoted below.
        match part.find_pos_n(ns.db, key, h, now_ms, Lookup::Read) {
            Ok(pos) => {
                part.hits += 1;
                let e = part.entry(pos);
                part.referenced(e, clock);
                if let Some(z) = part.zone.as_deref_mut() {
                    z.n_hits += 1;
                    z.served_in_n();
                }
                self.sample_entry(ns.tenant, h, e, RefKind::Hit);
                if e.is_object() {
                    return Err(WrongType);
                }
                Ok(Some(e.value()))
            }
            Err(_) if part.zone.is_some() => self.get_from_zone(ns, key, h, now_ms),
            Err(_) => {
                self.read_missed(ns.tenant, ns.db, key, h);
                Ok(None)
            }
        }
    }

    /// The rest of [`Shard::get`] when the N-zone missed and the Z-zone is on: the
    /// value served from the Z-zone in place, or promoted (then room is made for it
    /// with the key pinned), or a miss.
    #[cold]
    fn get_from_zone(
        &mut self,
        ns: Ns,
        key: &[u8],
        h: u64,
        now_ms: u64,
    ) -> Result<Option<&[u8]>, WrongType> {
        let t = ns.tenant;
        let part = &mut self.parts[t as usize];
        // Reading an expired item drops it: a paused read only reads a live one.
        if part.cfg.expiry_paused(now_ms) && !part.zone_contains(ns.db, key, now_ms) {
            self.read_missed(t, ns.db, key, h);
            return Ok(None);
        }
        match part.zone_read(ns.db, key, h, now_ms) {
            ZoneRead::Served => {
                part.hits += 1;
                let bytes = charged_bytes(ns.db, key.len(), part.zone_scratch_len(), false);
                self.sample(t, h, bytes, RefKind::Hit);
                let part = &self.parts[t as usize];
                Ok(Some(&part.zone.as_deref().expect("served from it").scratch))
            }
            ZoneRead::Promoted(pos) => {
                part.hits += 1;
                let e = part.entry(pos);
                part.faulted = false;
                self.sample_entry(t, h, e, RefKind::Hit);
                self.pinned = Some(e);
                let _ = self.make_room(t, 0);
                self.pinned = None;
                Ok(Some(e.value()))
            }
            ZoneRead::Absent => {
                self.read_missed(t, ns.db, key, h);
                Ok(None)
            }
        }
    }

    /// Reads a string value without counting stats or touching recency (lazily expires
    /// it); `Err(WrongType)` for a hash or set.
    pub fn peek(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Result<Option<&[u8]>, WrongType> {
        match self.part(ns.tenant).find_readable(ns.db, key, now_ms) {
            Some(e) if e.is_object() => Err(WrongType),
            Some(e) => Ok(Some(e.value())),
            None => Ok(None),
        }
    }

    /// The type of a live key, without touching it (TYPE, SCAN TYPE).
    pub fn kind(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Option<Kind> {
        self.live(ns, key, now_ms).map(|e| e.kind())
    }

    /// A live entry, without stats or touch; a lazily expired one is removed and the
    /// freed memory published.
    fn live(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Option<Entry> {
        let part = self.part(ns.tenant);
        let expired = part.expired;
        let e = part.find_readable(ns.db, key, now_ms);
        if part.expired != expired {
            self.publish();
        }
        e
    }

    /// Reads a hash or set (`kind`): lazily expires it, counts a keyspace hit or miss,
    /// makes the key most recently used and hands the profiler a reference of the
    /// object's whole size. `Err(WrongType)` if the key holds another type.
    pub fn read_object(
        &mut self,
        ns: Ns,
        key: &[u8],
        kind: Kind,
        now_ms: u64,
    ) -> Result<Option<&Object>, WrongType> {
        self.tick();
        let clock = self.clock;
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        part.accessed(clock);
        match part.find_pos(ns.db, key, h, now_ms, Lookup::Read) {
            Ok(pos) => {
                part.hits += 1;
                let e = part.entry(pos);
                part.referenced(e, clock);
                self.sample_entry(ns.tenant, h, e, RefKind::Hit);
                if e.kind() != kind {
                    return Err(WrongType);
                }
                Ok(e.object().map(|o| &*o))
            }
            Err(_) => {
                self.read_missed(ns.tenant, ns.db, key, h);
                Ok(None)
            }
        }
    }

    /// A hash or set without counting stats or touching recency (lazily expires it).
    pub fn peek_object(
        &mut self,
        ns: Ns,
        key: &[u8],
        kind: Kind,
        now_ms: u64,
    ) -> Result<Option<&Object>, WrongType> {
        match self.live(ns, key, now_ms) {
            Some(e) if e.kind() != kind => Err(WrongType),
            Some(e) => Ok(e.object().map(|o| &*o)),
            None => Ok(None),
        }
    }

    /// Changes the hash or set (`kind`) at `key` in place with `f`, creating an empty
    /// one first if the key is missing and `create` is set (`Ok(None)`, nothing done,
    /// if it is missing and `create` is not). Then, as Redis does for every write:
    /// an object left empty is deleted; otherwise the key becomes most recently used,
    /// its charge follows the object's new size, and if that pushed the shard or the
    /// tenant over its budget, *other* keys are evicted (this one is pinned; see the
    /// module documentation). `Err(WrongType)` if the key holds another type.
    pub fn write_object<R>(
        &mut self,
        ns: Ns,
        key: &[u8],
        kind: Kind,
        create: bool,
        now_ms: u64,
        f: impl FnOnce(&mut Object) -> R,
    ) -> Result<Option<R>, WrongType> {
        self.write_object_if(ns, key, kind, create, now_ms, |o| (f(o), true))
    }

    /// [`Shard::write_object`] for a command that changes the object only sometimes
    /// (HSETNX, HDEL, SADD, SREM, SMOVE, ...): `f` also says whether it changed
    /// anything, and WATCHers are told only then, as Redis calls `signalModifiedKey`
    /// only on a change. (A key created by the call, or deleted because `f` emptied it,
    /// is a change either way.)
    pub fn write_object_if<R>(
        &mut self,
        ns: Ns,
        key: &[u8],
        kind: Kind,
        create: bool,
        now_ms: u64,
        f: impl FnOnce(&mut Object) -> (R, bool),
    ) -> Result<Option<R>, WrongType> {
        let now = self.tick();
        let clock = self.clock;
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        part.accessed(clock);
        let mut created = false;
        let (e, pos) = match part.find_live_pos(ns.db, key, h, now_ms) {
            Ok(pos) => {
                let e = part.entry(pos);
                if e.kind() != kind {
                    self.publish();
                    return Err(WrongType);
                }
                (e, pos)
            }
            Err(vacancy) if create => {
                let Some(obj) = Object::new_of(kind) else {
                    self.publish();
                    return Err(WrongType);
                };
                part.event(KeyEvent::New, ns.db, key);
                created = true;
                part.insert_object_new(ns.db, key, Box::new(obj), None, now, h, vacancy)
            }
            Err(_) => {
                self.publish();
                return Ok(None);
            }
        };
        let obj = e.object().expect("a typed entry owns its object");
        let before = obj.bytes() as u64;
        let (r, changed) = f(obj);
        if changed {
            part.modified(ns.db, key);
        }
        let after = obj.bytes() as u64;
        part.entry_bytes = part.entry_bytes + after - before;
        if obj.is_empty() {
            part.remove_at(pos);
            self.sample(ns.tenant, h, 0, RefKind::Delete);
        } else {
            if created {
                part.admitted(e, h, clock);
            } else {
                part.referenced(e, clock);
            }
            part.writes += 1;
            self.sample_entry(ns.tenant, h, e, RefKind::Write);
            self.pinned = Some(e);
            // Under noeviction (or with nothing else to evict) the write stands anyway:
            // the command's OOM check ran before it, as in Redis.
            let _ = self.make_room(ns.tenant, 0);
            self.pinned = None;
        }
        self.publish();
        Ok(Some(r))
    }

    /// Removes `key` and hands over its value with ownership (a hash or set is moved,
    /// not copied or freed): for RENAME and MOVE, with [`Shard::put`] on the target.
    /// No stats, no profiler reference (Redis's RENAME looks the key up for writing).
    pub fn take(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Option<Detached> {
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        let Ok(pos) = part.find_live_pos(ns.db, key, h, now_ms) else {
            self.publish();
            return None;
        };
        let e = part.unlink_at(pos);
        let expire_at_ms = e.expire_at();
        let value = match e.take_object() {
            Some(obj) => Value::Object(obj),
            None => Value::String(e.value().to_vec()),
        };
        e.free_block();
        self.sample(ns.tenant, h, 0, RefKind::Delete);
        self.publish();
        Some(Detached {
            value,
            expire_at_ms,
        })
    }

    /// A deep copy of `key`'s value and expiry, without touching it (COPY).
    pub fn clone_value(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Option<Detached> {
        let e = self.live(ns, key, now_ms)?;
        let value = match e.object() {
            Some(obj) => Value::Object(Box::new(obj.clone())),
            None => Value::String(e.value().to_vec()),
        };
        Some(Detached {
            value,
            expire_at_ms: e.expire_at(),
        })
    }

    /// Stores `d` at `key`, replacing whatever value (of any type) and TTL it had, as
    /// SET does, after evicting room for its whole charge. An empty hash or set deletes
    /// the key instead (Redis never stores one); an expiry time not in the future too.
    pub fn put(&mut self, ns: Ns, key: &[u8], d: Detached, now_ms: u64) -> Result<(), WriteError> {
        let (value_len, obj_bytes, empty) = match &d.value {
            Value::String(v) => (v.len(), 0, false),
            Value::Object(o) => (8, o.bytes(), o.is_empty()),
        };
        if empty || d.expire_at_ms.is_some_and(|at| at <= now_ms) {
            self.delete(ns, key, now_ms);
            return Ok(());
        }
        if key.len() > MAX_LEN || value_len > MAX_LEN {
            return Err(WriteError::TooLarge);
        }
        let block = Entry::block_size(ns.db, key.len(), value_len, d.expire_at_ms.is_some());
        self.make_room(ns.tenant, (block + obj_bytes) as u64)?;
        let now = self.tick();
        let clock = self.clock;
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        part.accessed(clock);
        let vacancy = match part.find_live_pos(ns.db, key, h, now_ms) {
            Ok(pos) => {
                part.remove_at_lazily(pos, part.cfg.lazyfree.on_server_del());
                None
            }
            Err(v) => {
                part.event(KeyEvent::New, ns.db, key);
                v
            }
        };
        let e = match d.value {
            Value::String(v) => part.insert_new(ns.db, key, &v, d.expire_at_ms, now, h, vacancy),
            Value::Object(o) => {
                part.insert_object_new(ns.db, key, o, d.expire_at_ms, now, h, vacancy)
                    .0
            }
        };
        part.admitted(e, h, clock);
        part.writes += 1;
        self.sample_entry(ns.tenant, h, e, RefKind::Write);
        self.publish();
        Ok(())
    }

    /// Information about a key without touching it (lazily expires it).
    pub fn info(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Option<EntryInfo> {
        let clock = self.clock as u32;
        let part = self.part(ns.tenant);
        let e = part.find_readable(ns.db, key, now_ms)?;
        Some(EntryInfo {
            kind: e.kind(),
            encoding: e.object().map(|o| o.encoding()),
            value_len: e.value_len(),
            idle_accesses: e.idle(clock) as u64,
            expire_at_ms: e.expire_at(),
            memory_bytes: e.charge() + part.index_share() as usize,
        })
    }

    /// Inserts or replaces a value, evicting first (per the store's policy and the
    /// tenants' limits) if memory is short. Makes the key most recently used.
    pub fn set(
        &mut self,
        ns: Ns,
        key: &[u8],
        value: &[u8],
        ttl: SetTtl,
        now_ms: u64,
    ) -> Result<(), WriteError> {
        if key.len() > MAX_LEN || value.len() > MAX_LEN {
            return Err(WriteError::TooLarge);
        }
        let h = db_hash(key_hash(key), ns.db);
        self.part(ns.tenant).prefetch_admission(h);
        // Room for the block this write may allocate (an upper bound: a replaced value
        // frees its old block too), so the shard never ends above its budget.
        self.make_room_unpublished(
            ns.tenant,
            Entry::block_size(ns.db, key.len(), value.len(), matches!(ttl, SetTtl::At(_))) as u64,
        )?;
        self.settle();
        let found = self.part(ns.tenant).find_live_pos_n(ns.db, key, h, now_ms);
        let fills = self.tick_unless_fill(found.is_err());
        let (now, clock) = (self.clock as u32, self.clock);
        let part = self.part(ns.tenant);
        // A fill is part of the miss's access (`Shard::unfilled_reads`), which LHD's
        // reconfiguration counted.
        if !fills {
            part.accessed(clock);
        }
        // A key in the Z-zone is superseded there, not moved (see `crate::zone`).
        let e = match found {
            Ok(pos) => {
                let e = part.replace(pos, value, ttl);
                part.referenced(e, clock);
                e
            }
            Err(vacancy)
                if part.zone.is_some() && part.zone_supersede(ns.db, key, now_ms).is_some() =>
            {
                let old = part.superseded_expire;
                let expire = match ttl {
                    SetTtl::At(at) => Some(at),
                    SetTtl::Keep => old,
                    SetTtl::Clear => None,
                };
                let e = part.insert_new(ns.db, key, value, expire, now, h, vacancy);
                part.admitted(e, h, clock);
                e
            }
            Err(vacancy) => {
                let expire = match ttl {
                    SetTtl::At(at) => Some(at),
                    SetTtl::Clear | SetTtl::Keep => None,
                };
                part.event(KeyEvent::New, ns.db, key);
                let e = part.insert_new(ns.db, key, value, expire, now, h, vacancy);
                part.admitted(e, h, clock);
                e
            }
        };
        part.writes += 1;
        self.sample_entry(ns.tenant, h, e, RefKind::Write);
        self.publish();
        Ok(())
    }

    /// Removes a key; true if it existed (and had not expired).
    pub fn delete(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> bool {
        self.delete_as(ns, key, now_ms, false)
    }

    /// UNLINK: [`Self::delete`], the value freed on the background thread when it is
    /// large (`crate::lazyfree`).
    pub fn unlink(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> bool {
        self.delete_as(ns, key, now_ms, true)
    }

    /// A key deleted because a command gave it an expiry time already past (EXPIRE,
    /// GETEX): [`Self::delete`], lazily under `lazyfree-lazy-expire` (expire.c
    /// `expireGenericCommand`). Not counted as expired, as in Redis.
    pub fn delete_expired_now(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> bool {
        let lazy = self.config.lazyfree.on_expire();
        self.delete_as(ns, key, now_ms, lazy)
    }

    fn delete_as(&mut self, ns: Ns, key: &[u8], now_ms: u64, lazy: bool) -> bool {
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        match part.find_live_pos(ns.db, key, h, now_ms) {
            Ok(pos) => {
                part.remove_at_lazily(pos, lazy);
                self.sample(ns.tenant, h, 0, RefKind::Delete);
                self.publish();
                true
            }
            Err(_) => {
                self.publish();
                false
            }
        }
    }

    /// Whether the key exists (lazily expires it; no stats, no touch).
    pub fn exists(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> bool {
        let part = self.part(ns.tenant);
        let h = db_hash(key_hash(key), ns.db);
        part.find_pos_n(ns.db, key, h, now_ms, Lookup::Read).is_ok()
            || part.zone_contains(ns.db, key, now_ms)
    }

    /// Makes the key most recently used; true if it exists (TOUCH).
    pub fn touch(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> bool {
        self.tick();
        let clock = self.clock;
        let part = self.part(ns.tenant);
        part.accessed(clock);
        match part.find_readable(ns.db, key, now_ms) {
            Some(e) => {
                part.referenced(e, clock);
                true
            }
            None => false,
        }
    }

    /// Sets (`Some(at_ms)`) or removes (`None`) a key's expiry time. Returns false if the
    /// key does not exist; for `None`, also false if it had no TTL (PERSIST's 0).
    /// An `at_ms` not in the future deletes the key (and still returns true), as Redis does.
    pub fn set_expire(&mut self, ns: Ns, key: &[u8], at_ms: Option<u64>, now_ms: u64) -> bool {
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        let Ok(pos) = part.find_live_pos(ns.db, key, h, now_ms) else {
            self.publish();
            return false;
        };
        let e = part.entry(pos);
        match at_ms {
            // Redis counts this as a deletion, not an expiry (no expired_keys bump).
            Some(at) if at <= now_ms => part.remove_at_lazily(pos, part.cfg.lazyfree.on_expire()),
            Some(at) if e.has_ttl() => {
                part.modified(e.db(), e.key());
                e.set_expire_at(at);
            }
            Some(at) => {
                part.volatile.push(e);
                part.expires_per_db[e.db() as usize] += 1;
                let v = part.volatile.len() as u32 - 1;
                part.reallocate(pos, Some((at, v)));
            }
            None if e.has_ttl() => {
                part.unlist_volatile(e);
                part.reallocate(pos, None);
            }
            None => return false,
        }
        self.publish();
        true
    }

    pub fn ttl(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> TtlState {
        match self.part(ns.tenant).find_readable(ns.db, key, now_ms) {
            None => TtlState::Missing,
            Some(e) => match e.expire_at() {
                None => TtlState::Persistent,
                Some(at) => TtlState::ExpiresAt(at),
            },
        }
    }

    /// Registers a WATCH of `key` by the connection owning `flag`. An already expired
    /// key is removed first, so that its lazy deletion later does not look like a
    /// change (Redis 7.0 remembers such keys as stale for the same reason).
    pub fn watch(&mut self, ns: Ns, key: &[u8], flag: &WatchFlag, now_ms: u64) {
        let part = self.part(ns.tenant);
        let _ = part.find_readable(ns.db, key, now_ms);
        part.watched
            .get_or_insert_with(Default::default)
            .add(ns.db, key, flag);
        self.publish();
    }

    /// SWAPDB's part in this shard (see `Store::swap_dbs`): tenant `t`'s watched keys in
    /// physical databases `a` and `b` that exist live in either are touched, and every
    /// watch of `a` moves to `b` and back, following its logical database.
    pub(crate) fn swap_watches(&mut self, t: TenantId, a: u8, b: u8, now_ms: u64) {
        let Some(part) = self.parts.get_mut(t as usize) else {
            return;
        };
        let Some(w) = part.watched.take() else {
            return;
        };
        for (db, key) in w.keys() {
            if *db != a && *db != b {
                continue;
            }
            let live = |db: u8| {
                Part::find_pooled(&part.table, db, key)
                    .is_some_and(|pos| part.entry(pos).expire_at().is_none_or(|at| now_ms <= at))
                    || part.zone_contains(db, key, now_ms)
            };
            if live(a) || live(b) {
                w.touch(*db, key);
            }
        }
        part.watched = Some(Box::new(w.swap_dbs(a, b)));
    }

    /// Drops a WATCH registered by [`Shard::watch`].
    pub fn unwatch(&mut self, ns: Ns, key: &[u8], flag: &WatchFlag) {
        if let Some(part) = self.parts.get_mut(ns.tenant as usize) {
            if let Some(w) = &mut part.watched {
                if w.remove(ns.db, key, flag) {
                    part.watched = None;
                }
            }
        }
    }

    // ----- crate-level operations used by Store -----

    /// Heap bytes held by this shard: all parts' entries and index capacity.
    pub(crate) fn used(&self) -> u64 {
        self.parts.iter().map(Part::used).sum()
    }

    pub(crate) fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Keys in this shard, both zones.
    pub(crate) fn len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.len() + p.zone_items() as usize)
            .sum()
    }

    pub(crate) fn keys_in_db(&self, ns: Ns) -> u64 {
        self.parts.get(ns.tenant as usize).map_or(0, |p| {
            p.keys_per_db.get(ns.db as usize).copied().unwrap_or(0) + p.zone_keys(ns.db)
        })
    }

    /// Per database of tenant `t`: (keys, keys with a TTL).
    pub(crate) fn db_counts(&self, t: TenantId) -> Vec<(u64, u64)> {
        match self.parts.get(t as usize) {
            Some(p) => p
                .keys_per_db
                .iter()
                .copied()
                .zip(p.expires_per_db.iter().copied())
                .enumerate()
                .map(|(db, (k, x))| match p.zone.as_deref() {
                    Some(z) => (k + z.keys_per_db[db], x + z.expires_per_db[db]),
                    None => (k, x),
                })
                .collect(),
            None => Vec::new(),
        }
    }

    pub(crate) fn reset_stats(&mut self) {
        for p in &mut self.parts {
            p.hits = 0;
            p.misses = 0;
            p.evicted = 0;
            p.expired = 0;
            p.writes = 0;
        }
    }

    /// Evicts until within budget (used after CONFIG SET maxmemory or a tenant's limit
    /// is lowered).
    pub(crate) fn enforce_limit(&mut self) {
        for t in 0..self.parts.len() {
            let _ = self.make_room(t as TenantId, 0);
        }
        self.publish();
    }

    /// Removes every entry of `ns`.
    pub(crate) fn flush_db(&mut self, ns: Ns, lazy: bool) {
        if let Some(p) = self.parts.get_mut(ns.tenant as usize) {
            p.flush_db(ns.db, lazy);
        }
        self.shared_pool
            .retain(|k| pool_tenant(k) != ns.tenant || k[2] != ns.db);
        self.sync_tenant_used(ns.tenant, true);
        self.publish();
    }

    /// Removes every entry of tenant `t` and returns its memory to the allocator;
    /// `reset` also zeroes its counters (the tenant is being deleted).
    pub(crate) fn flush_tenant(&mut self, t: TenantId, reset: bool, lazy: bool) {
        if let Some(p) = self.parts.get_mut(t as usize) {
            p.flush_all(lazy);
            if reset {
                p.reset_counters();
            }
        }
        self.shared_pool.retain(|k| pool_tenant(k) != t);
        self.sync_tenant_used(t, true);
        self.publish();
    }

    /// Active defragmentation of this shard's entries: continues from `cursor` (part,
    /// position) for up to `budget` index positions; returns the cursor to continue from
    /// (None once every part was walked), what it did, and the positions it visited.
    pub(crate) fn defrag_step(
        &mut self,
        cursor: (usize, usize),
        budget: usize,
    ) -> (Option<(usize, usize)>, DefragStats, usize) {
        let (mut part, mut pos) = cursor;
        let mut visited = 0;
        let mut stats = DefragStats::default();
        while part < self.parts.len() && visited < budget {
            let (next, s) = self.parts[part].defrag_step(pos, budget - visited);
            stats.add(s);
            if s.hits > 0 {
                self.sync_tenant_used(part as TenantId, false);
            }
            let stop = next.unwrap_or_else(|| self.parts[part].table.positions().max(pos));
            visited += stop - pos;
            match next {
                Some(p) => pos = p,
                None => {
                    part += 1;
                    pos = 0;
                }
            }
        }
        if stats.hits > 0 {
            self.publish();
        }
        (
            (part < self.parts.len()).then_some((part, pos)),
            stats,
            visited,
        )
    }

    /// One shard's part of the active expiry cycle (Redis `activeExpireCycle`): in each
    /// tenant's part, sample 20 keys with a TTL, delete the expired ones, and go on
    /// while more than a quarter of a sample had expired (at most `max_rounds`
    /// samples). Returns keys removed.
    pub(crate) fn expire_cycle(&mut self, now_ms: u64, max_rounds: usize) -> u64 {
        const SAMPLE: usize = 20;
        self.note_wall_clock(now_ms);
        let mut removed: u64 = 0;
        let rng = &mut self.rng;
        for part in &mut self.parts {
            for _ in 0..max_rounds {
                if part.volatile.is_empty() {
                    break;
                }
                let n = SAMPLE.min(part.volatile.len());
                let mut expired_here: u64 = 0;
                for _ in 0..n {
                    if part.volatile.is_empty() {
                        break;
                    }
                    let e = part.volatile[rng.gen_range(0..part.volatile.len())];
                    if e.expire_at().is_some_and(|at| now_ms > at) {
                        let pos = part.position_of(e);
                        part.event_at(KeyEvent::Expired, pos);
                        part.remove_at_lazily(pos, part.cfg.lazyfree.on_expire());
                        part.expired += 1;
                        expired_here += 1;
                    }
                }
                removed += expired_here;
                if expired_here * 4 <= n as u64 {
                    break;
                }
            }
        }
        if self.config.zone.on() || self.parts.iter().any(|p| p.zone.is_some()) {
            self.zone_cron(now_ms);
        }
        if removed > 0 {
            for t in 0..self.parts.len() {
                self.sync_tenant_used(t as TenantId, false);
            }
            self.publish();
        }
        removed
    }

    /// The zones' periodic work (zExpander §3.3.1), from the store's cron: follow the
    /// `compressed-zone` setting, end windows (moving the N-zone's share), make room for
    /// lookups' moves, and shrink an N-zone over its target in the background, at most
    /// `SHRINK_PER_TICK` demotions per part per tick.
    fn zone_cron(&mut self, now_ms: u64) {
        const SHRINK_PER_TICK: usize = 256;
        let clock = self.clock;
        let policy = self.config.policy();
        for t in 0..self.parts.len() {
            let p = &mut self.parts[t];
            if p.zone_paused {
                if p.zone_paused_since_ms == 0 {
                    p.zone_paused_since_ms = now_ms;
                } else if now_ms >= p.zone_paused_since_ms + self.config.zone.window_ms() {
                    p.zone_paused = false;
                }
            }
            self.parts[t].follow_zone_setting();
            if self.parts[t].faulted {
                self.parts[t].faulted = false;
                let _ = self.make_room(t as TenantId, 0);
            }
            let p = &mut self.parts[t];
            // Redis's active expiry, for the Z-zone's items too (a few blocks a tick).
            p.zone_expire_cycle(now_ms, 16);
            let n_bytes = p.n_used();
            let Some(z) = p.zone.as_deref_mut() else {
                continue;
            };
            z.tick(now_ms, n_bytes, &self.config.zone);
            if policy == EvictionPolicy::NoEviction || self.config.shard_limit() == 0 {
                continue;
            }
            // Only when memory is nearly full: below that, shrinking would compress
            // items that can stay uncompressed.
            if self.used() * 20 < self.config.shard_limit() * 19 {
                continue;
            }
            let k = self.config.tenant_samples(t as TenantId);
            for _ in 0..SHRINK_PER_TICK {
                let p = &mut self.parts[t];
                let over = p
                    .zone
                    .as_deref()
                    .is_some_and(|z| p.n_used() > z.n_target(p.n_used()) && !z.z.is_empty());
                if !over || p.len() == 0 {
                    break;
                }
                // Under the target share and with a Z-zone to fill, evict_one demotes.
                let own = self.config.tenant_policy(t as TenantId);
                if !p.evict_one(t as TenantId, own, k, clock, &mut self.rng, None) {
                    break;
                }
            }
            self.sync_tenant_used(t as TenantId, false);
        }
        self.publish();
    }

    /// SCAN's Z-zone phase in this shard (after its N-zone positions): live keys of
    /// `ns` from zone cursor `cursor`, about `want` of them; returns the next zone
    /// cursor (0 when done) and how many keys of the database were seen.
    pub(crate) fn zone_scan(
        &self,
        ns: Ns,
        cursor: u64,
        want: usize,
        pattern: Option<&[u8]>,
        now_ms: u64,
        out: &mut Vec<Vec<u8>>,
    ) -> (u64, usize) {
        let Some(z) = self
            .parts
            .get(ns.tenant as usize)
            .and_then(|p| p.zone.as_deref())
        else {
            return (0, 0);
        };
        let mut seen = 0;
        let next = z.z.scan(cursor, want.max(1), |db, key, meta| {
            if db != ns.db || z.is_stale(db, key) {
                return;
            }
            seen += 1;
            if meta.expire_at_ms.is_none_or(|at| now_ms <= at)
                && pattern.is_none_or(|p| crate::glob::glob_match(p, key))
            {
                out.push(key.to_vec());
            }
        });
        (next, seen)
    }

    /// Keys of `ns` in tenant `ns.tenant`'s Z-zone here.
    pub(crate) fn zone_keys_in_db(&self, ns: Ns) -> u64 {
        self.parts
            .get(ns.tenant as usize)
            .map_or(0, |p| p.zone_keys(ns.db))
    }

    /// The zones' figures of tenant `t` (all tenants with `None`) in this shard.
    pub(crate) fn zone_stats(&self, t: Option<TenantId>) -> crate::zone::ZoneStats {
        let mut out = crate::zone::ZoneStats::default();
        for (i, p) in self.parts.iter().enumerate() {
            if t.is_some_and(|t| t as usize != i) {
                continue;
            }
            let mut s = match p.zone.as_deref() {
                Some(z) => z.stats(),
                None => Default::default(),
            };
            s.n_bytes = p.n_used();
            s.n_items = p.len() as u64;
            out.add(&s);
        }
        out
    }

    /// Number of positions a SCAN walks in tenant `t`'s part, and their epoch.
    pub(crate) fn scan_extent(&self, t: TenantId) -> (usize, u32) {
        self.parts
            .get(t as usize)
            .map_or((0, 0), |p| (p.table.positions(), p.table.epoch()))
    }

    /// Live keys of `ns` matching `pattern` at positions `range`, walked from the top down.
    pub(crate) fn collect_keys(
        &self,
        ns: Ns,
        range: std::ops::Range<usize>,
        pattern: Option<&[u8]>,
        now_ms: u64,
        out: &mut Vec<Vec<u8>>,
    ) {
        let Some(part) = self.parts.get(ns.tenant as usize) else {
            return;
        };
        let end = range.end.min(part.table.positions());
        for pos in (range.start.min(end)..end).rev() {
            let Some(e) = part.table.at(pos) else {
                continue;
            };
            if e.db() != ns.db || e.expire_at().is_some_and(|at| now_ms > at) {
                continue;
            }
            if pattern.is_none_or(|p| crate::glob::glob_match(p, e.key())) {
                out.push(e.key().to_vec());
            }
        }
        // The Z-zone's keys come with the range that reaches position 0 (every range
        // partition of the positions has exactly one).
        if range.start == 0 {
            part.zone_keys_matching(ns.db, pattern, now_ms, out);
        }
    }

    /// A uniformly random live key of `ns` in this shard.
    pub(crate) fn random_key(&mut self, ns: Ns, now_ms: u64) -> Option<Vec<u8>> {
        let t = ns.tenant as usize;
        for _ in 0..100 {
            let all = self.keys_in_db(ns);
            if all == 0 {
                return None;
            }
            let part = self.parts.get_mut(t)?;
            // Uniform over both zones: a Z-zone key with its share of the probability.
            let in_z = part.zone_keys(ns.db);
            if in_z > 0 && self.rng.gen_range(0..all) < in_z {
                let z = part.zone.as_deref().expect("it has keys");
                if let Some(k) = z.z.random_key(ns.db, &mut self.rng) {
                    if z.z.contains(ns.db, &k, now_ms) && !z.is_stale(ns.db, &k) {
                        return Some(k);
                    }
                }
                continue;
            }
            let pos = part.random_position_of_db(ns.db, &mut self.rng)?;
            let e = part.entry(pos);
            if e.expire_at().is_some_and(|at| now_ms > at) {
                if part.cfg.expiry_paused(now_ms) {
                    continue;
                }
                part.event_at(KeyEvent::Expired, pos);
                part.remove_at_lazily(pos, part.cfg.lazyfree.on_expire());
                part.expired += 1;
                self.publish();
                continue;
            }
            return Some(e.key().to_vec());
        }
        None
    }

    // ----- internals -----

    /// Advances the logical clock; returns the new time as stored in entries.
    #[inline]
    fn tick(&mut self) -> u32 {
        self.settle();
        self.clock += 1;
        self.clock as u32
    }

    /// A read of `key` (index hash `h`) in tenant `t`'s db `db` missed: counted,
    /// notified and sampled, and the insert that fills it will not move the clock
    /// ([`Self::unfilled_reads`]).
    #[inline]
    fn read_missed(&mut self, t: TenantId, db: u8, key: &[u8], h: u64) {
        let part = &mut self.parts[t as usize];
        part.misses += 1;
        part.event(KeyEvent::KeyMiss, db, key);
        self.unfilled_reads = (self.unfilled_reads + 1).min(MAX_UNFILLED_READS);
        self.sample(t, h, 0, RefKind::Miss);
        self.publish();
    }

    /// Moves the clock for a write whose command has settled ([`Self::settle`]),
    /// unless the write inserts a key (`inserts`) while a read miss is unfilled: it then
    /// fills that miss ([`Self::unfilled_reads`]) and this returns true.
    #[inline]
    fn tick_unless_fill(&mut self, inserts: bool) -> bool {
        if inserts && self.unfilled_reads > 0 {
            self.unfilled_reads -= 1;
            true
        } else {
            self.clock += 1;
            false
        }
    }

    /// Makes room for an item a lookup moved from the Z-zone to the N-zone (see
    /// `Part::faulted`). Called where the shard holds no entry handle: at the start of
    /// a command (`tick`) and at its end (`publish`).
    #[inline]
    fn settle(&mut self) {
        let t = self.touched;
        if self.parts.get(t as usize).is_some_and(|p| p.faulted) {
            self.parts[t as usize].faulted = false;
            let _ = self.make_room(t, 0);
        }
    }

    /// Where tenant `t`'s index is (see `store::IndexHint`).
    #[cfg(test)]
    pub(crate) fn index_layout(&self, t: TenantId) -> (u64, u64) {
        self.parts
            .get(t as usize)
            .map_or((0, 0), |p| p.table.layout())
    }

    /// See `Store::prefetch_entry`.
    #[inline]
    pub(crate) fn prefetch_entry(&self, tenant: TenantId, h: u64) {
        if let Some(p) = self.parts.get(tenant as usize) {
            p.table.prefetch_match(h);
        }
    }

    fn publish(&mut self) {
        self.settle();
        let used = self.used();
        self.published.used.store(used, Ordering::Relaxed);
        if !self.borrowing {
            // A shard can end over its share without a write's `make_room` having seen
            // it: what a policy allocates after the room was made (S3-FIFO's queues and
            // ghost, LHD's admissions, the index growing on the insert). Marked as
            // borrowing, the store-wide check before the next write
            // (`Store::over_limit_for_writes`) evicts the excess, as Redis's check
            // before every command would; unmarked, the store stayed ~8 KB over a 2 MB
            // limit after policy switches (lhd_e2e, one run in seven).
            let budget = self.config.shard_limit();
            if budget > 0 && used > budget {
                self.start_borrowing();
            }
        }
        let t = self.touched as usize;
        if let Some(p) = self.parts.get_mut(t) {
            // A resize freed a large index table: return jemalloc's dirty pages now,
            // but only past half the shard's budget (see `Table::take_freed_large`).
            if p.table.take_freed_large() {
                let budget = self.config.shard_limit();
                if budget > 0 && used > budget / 2 {
                    crate::defrag::purge_dirty_pages();
                }
            }
            if let Some(hint) = self.published.index.0.get(t) {
                hint.note(p.table.layout());
            }
        }
        self.sync_tenant_used(self.touched, false);
    }

    /// Adds what tenant `t` gained or freed here since the last sync to its store-wide
    /// usage, once the difference reaches [`TENANT_SYNC_BYTES`] (or always with
    /// `force`): the eviction decision (`most_over_target`) compares a tenant's whole
    /// usage with its whole target, which a shard's own share cannot do fairly (a
    /// tenant's keys are never spread exactly evenly over shards).
    fn sync_tenant_used(&mut self, t: TenantId, force: bool) {
        let Some(p) = self.parts.get_mut(t as usize) else {
            return;
        };
        let used = p.used();
        let delta = used.wrapping_sub(p.synced) as i64;
        // At most 1/64 of a shard's budget, so small targets are followed closely too.
        let step = match self.config.shard_limit() {
            0 => TENANT_SYNC_BYTES,
            limit => (limit / 64).clamp(MIN_TENANT_SYNC_BYTES, TENANT_SYNC_BYTES),
        };
        if force || delta.unsigned_abs() >= step {
            self.config.tenants.get(t).add_used(delta);
            p.synced = used;
        }
    }

    /// The tenant that gives memory when the shard is full under partitioning (kRedis
    /// §4.2 step 4): the one most over its target share of this shard. When nobody is
    /// over, the writer gives (a tenant at or under its target is never evicted by
    /// another's load); when the writer has nothing here either, the largest part.
    fn most_over_target(&self, writer: TenantId) -> Option<TenantId> {
        let mut best: Option<(i128, TenantId)> = None;
        for (t, p) in self.parts.iter().enumerate() {
            if p.len() == 0 && p.zone_items() == 0 {
                continue;
            }
            let limits = self.config.tenants.get(t as TenantId);
            let over = limits.used() as i128 - limits.target() as i128;
            if best.is_none_or(|(b, _)| over > b) {
                best = Some((over, t as TenantId));
            }
        }
        match best {
            Some((over, t)) if over > 0 => Some(t),
            _ if self
                .parts
                .get(writer as usize)
                .is_some_and(|p| p.len() > 0 || p.zone_items() > 0) =>
            {
                Some(writer)
            }
            Some((_, t)) => Some(t),
            None => None,
        }
    }

    /// Evicts until `incoming` more bytes of tenant `t` fit: within the tenant's cap and
    /// within the shard's share of `maxmemory`. Fails with OOM under noeviction or when
    /// the policy finds nothing it may evict. Publishes the shard's usage.
    fn make_room(&mut self, t: TenantId, incoming: u64) -> Result<(), WriteError> {
        if self.make_room_unpublished(t, incoming)? {
            self.publish();
        }
        Ok(())
    }

    /// [`Self::make_room`] for a write that publishes once it is done (`set`): the
    /// usage is published only on failure. A SET published twice, once here with the
    /// usage before its write and once after: ~150 instructions of the ~4k a pipelined
    /// SET costs. `Ok(true)`: the caller should publish (what `make_room` does).
    fn make_room_unpublished(&mut self, t: TenantId, incoming: u64) -> Result<bool, WriteError> {
        let budget = self.config.shard_limit();
        let mode = self.config.tenants.partitioning();
        let cap = self.config.tenant_cap_share(t);
        if budget == 0 && cap == 0 {
            return Ok(false);
        }
        let policy = self.config.policy();
        if self.config.zone.on() && policy != EvictionPolicy::NoEviction {
            let own = self.config.tenant_policy(t);
            self.cap_n_zone(t, incoming, if cap > 0 { cap } else { budget }, own);
        }
        loop {
            let over_cap =
                cap > 0 && self.parts.get(t as usize).map_or(0, Part::used) + incoming > cap;
            let over_global = budget > 0 && self.used() + incoming > budget;
            if !over_cap && !over_global {
                if self.borrowing {
                    self.stop_borrowing();
                }
                break;
            }
            let exempt = self
                .config
                .oom_exempt
                .load(std::sync::atomic::Ordering::Relaxed);
            if policy == EvictionPolicy::NoEviction {
                // Redis refuses a write when the server is over maxmemory, not when one
                // of our shards is over its 1/N share: with values large against a
                // share (1 MB over 64 shards, 10 KB values) a share fills after a key
                // or two, and a store at a tenth of its limit answered OOM. A shard
                // over its share borrows what the others leave (their published usage:
                // concurrent writers may overshoot by a write each, as Redis's check
                // before the command lets its write overshoot). A shard still under its
                // share does not look at the others, so after borrowing the store can
                // go over `maxmemory` by what such shards then accept; the server's
                // check before every `denyoom` command (`Store::over_limit_for_writes`,
                // Redis's rule) refuses writes once it is over, which bounds that to a
                // write per connection in flight.
                if !over_cap && self.fits_in_store(incoming) {
                    break;
                }
                self.publish();
                if exempt {
                    return Ok(false);
                }
                return Err(WriteError::OutOfMemory);
            }
            // A write large against the shard's share is held to the store's limit, not
            // the share's (`LARGE_WRITE_SHARES`).
            if !over_cap && incoming * LARGE_WRITE_SHARES > budget && self.fits_in_store(incoming) {
                self.start_borrowing();
                break;
            }
            // `Err(())`: nothing in this shard to choose from (partitioned, no entries).
            let victim = if over_cap {
                Ok(Some(t))
            } else if mode == Partitioning::Off {
                Ok(None)
            } else {
                self.most_over_target(t).map(Some).ok_or(())
            };
            let evicted = match victim {
                Ok(Some(v)) => self.evict_from_tenant(v),
                Ok(None) => self.evict_one_shared(policy),
                Err(()) => false,
            };
            if !evicted {
                // Nothing here may be evicted: a volatile policy found no key with a
                // TTL, or the shard is empty and the write is larger than its share.
                // Redis refuses a write only when it has nothing left to evict *and* the
                // server is over maxmemory (evict.c's performEvictions), not when one of
                // our shards is over its 1/N share: as under noeviction, the shard
                // borrows what the others leave. It says so (`borrowing_shards`), so
                // that the check before each write command (`Store::over_limit_for_writes`)
                // evicts in the other shards, still within their shares, once the store
                // as a whole is over: the borrowed room is theirs. The test is that
                // check's (the smallest entry still fits), not this write's size: as in
                // Redis, a write let in may take the store over by itself, and the next
                // write's check evicts elsewhere or refuses; a stricter test here would
                // refuse writes the check had just made room for. A tenant's cap is the
                // tenant's own and is never borrowed past.
                if !over_cap && self.fits_in_store(crate::entry::SMALLEST_ENTRY as u64) {
                    self.start_borrowing();
                    break;
                }
                self.publish();
                if exempt {
                    return Ok(false);
                }
                return Err(WriteError::OutOfMemory);
            }
        }
        Ok(true)
    }

    /// Whether `incoming` more bytes fit in `maxmemory` as a whole: the store's usage as
    /// the shards last published it, with this shard's figure replaced by the exact one.
    /// Concurrent writers in other shards may each overshoot by their write, as Redis's
    /// check before a command lets that command's write overshoot.
    fn fits_in_store(&self, incoming: u64) -> bool {
        let others = self.config.store_used() - self.published.used.load(Ordering::Relaxed);
        others + self.used() + incoming <= self.config.maxmemory()
    }

    /// Marks the shard as over its share on room the others left
    /// (`SharedConfig::borrowing_shards`).
    fn start_borrowing(&mut self) {
        if !self.borrowing {
            self.borrowing = true;
            self.config.borrowing_shards.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[cold]
    fn stop_borrowing(&mut self) {
        self.borrowing = false;
        self.config.borrowing_shards.fetch_sub(1, Ordering::Relaxed);
    }

    /// Evicts one entry of tenant `v` by its policy (its own under `maxmemory-policy
    /// auto`, else the global one) and K; false if the policy found nothing it may evict.
    fn evict_from_tenant(&mut self, v: TenantId) -> bool {
        if v as usize >= self.parts.len() {
            return false;
        }
        let k = self.config.tenant_samples(v);
        let policy = self.config.tenant_policy(v);
        let clock = self.clock;
        let done =
            self.parts[v as usize].evict_one(v, policy, k, clock, &mut self.rng, self.pinned);
        self.sync_tenant_used(v, false);
        done
    }

    /// One eviction for the store as a whole ([`crate::Store::over_limit_for_writes`]),
    /// by the victim a write here under global pressure would choose: free competition's
    /// shared victim, else the tenant most over its target, else any tenant here with
    /// something its policy may evict. Publishes the shard's usage; false if nothing here
    /// may be evicted.
    pub(crate) fn evict_one_for_store(&mut self) -> bool {
        let evicted = if self.config.tenants.partitioning() == Partitioning::Off {
            let policy = self.config.policy();
            self.evict_one_shared(policy)
        } else {
            let first = self.most_over_target(0);
            first.is_some_and(|v| self.evict_from_tenant(v))
                || (0..self.parts.len() as TenantId)
                    .filter(|&v| Some(v) != first)
                    .any(|v| self.evict_from_tenant(v))
        };
        self.publish();
        evicted
    }

    /// zExpander's N-zone has a target size from the start (§3.3.1): a write that would
    /// take tenant `t`'s N-zone here over its share of `allowance` (the tenant's cap, or
    /// the shard's budget) first demotes to the Z-zone, whether or not memory is full,
    /// so the N-zone never grows past its share only to shrink later (which would leave
    /// its allocator pages half empty: RSS far above the bytes in use).
    fn cap_n_zone(&mut self, t: TenantId, incoming: u64, allowance: u64, policy: EvictionPolicy) {
        let Some(p) = self.parts.get(t as usize) else {
            return;
        };
        let Some(z) = p.zone.as_deref() else {
            return;
        };
        let target = (z.n_share() * allowance as f64) as u64;
        let k = self.config.tenant_samples(t);
        let clock = self.clock;
        let mut moved = false;
        for _ in 0..64 {
            let p = &mut self.parts[t as usize];
            if p.n_used() + incoming <= target || p.len() == 0 {
                break;
            }
            if !p.demote_one(t, policy, k, clock, &mut self.rng, self.pinned) {
                break;
            }
            moved = true;
        }
        if moved {
            self.sync_tenant_used(t, false);
        }
    }

    /// Free competition (`tenant-partitioning off`): one victim chosen among all
    /// tenants' entries with the global K, as Redis would over one keyspace.
    fn evict_one_shared(&mut self, policy: EvictionPolicy) -> bool {
        // With Z-zones: a part whose N-zone is within its share gives from its Z-zone
        // (the largest such first); otherwise the shared victim is demoted.
        let mut z_victim: Option<(u64, usize)> = None;
        for (t, p) in self.parts.iter_mut().enumerate() {
            p.follow_zone_setting();
            if let Some(z) = p.zone.as_deref() {
                if !z.z.is_empty()
                    && !z.demote_next(p.n_used())
                    && z_victim.is_none_or(|(b, _)| z.bytes() > b)
                {
                    z_victim = Some((z.bytes(), t));
                }
            }
        }
        if let Some((_, t)) = z_victim {
            if self.parts[t].evict_from_zone() {
                return true;
            }
        }
        if policy != self.shared_pool_policy {
            self.shared_pool.clear();
            self.shared_pool_policy = policy;
            self.parts
                .iter_mut()
                .for_each(|p| p.keep_policy_state_of(policy));
            if !policy.is_lhd() {
                self.lhd_carried = Carried::default();
            }
        }
        let from_volatile = policy.volatile_only();
        let weight = |p: &Part| {
            if from_volatile {
                p.volatile.len()
            } else {
                p.len()
            }
        };
        let victim: Option<(usize, usize)> = match policy {
            EvictionPolicy::NoEviction => None,
            EvictionPolicy::AllKeysRandom | EvictionPolicy::VolatileRandom => {
                let total: usize = self.parts.iter().map(weight).sum();
                if total == 0 {
                    None
                } else {
                    let mut found = None;
                    // Redraw (the tenant too) when the draw is the pinned object.
                    for _ in 0..64 {
                        let t = pick_weighted(&self.parts, &weight, self.rng.gen_range(0..total));
                        let p = &self.parts[t];
                        if let Some(pos) = p.random_victim(from_volatile, None, &mut self.rng) {
                            if self.pinned.is_none_or(|x| p.table.at(pos) != Some(x)) {
                                found = Some((t, pos));
                                break;
                            }
                        }
                    }
                    found
                }
            }
            EvictionPolicy::AllKeysLru
            | EvictionPolicy::VolatileLru
            | EvictionPolicy::VolatileTtl
            | EvictionPolicy::AllKeysLfu
            | EvictionPolicy::VolatileLfu => {
                let mut candidates = Sampled {
                    parts: &self.parts,
                    first_tenant: 0,
                    clock: self.clock,
                    from_volatile,
                    score: Score::of(policy, Some(&self.lfu_marks)),
                    pinned: self.pinned,
                };
                let k = self.config.samples();
                select_victim_pooled(&mut self.shared_pool, &mut candidates, k, &mut self.rng)
                    .and_then(|id| {
                        let t = pool_tenant(&id) as usize;
                        let pos = Part::find_pooled(&self.parts.get(t)?.table, id[2], &id[3..])?;
                        Some((t, pos))
                    })
            }
            EvictionPolicy::AllKeysLhd | EvictionPolicy::VolatileLhd => {
                self.lhd_victim_shared(from_volatile)
            }
            // Free competition: the tenant drawn in proportion to its entries (as the
            // first uniform draw over all of them would be), then its own queues, each
            // tenant keeping its own ghost and small-queue share.
            EvictionPolicy::AllKeysS3Fifo | EvictionPolicy::VolatileS3Fifo => {
                let total: usize = self.parts.iter().map(weight).sum();
                if total == 0 {
                    None
                } else {
                    let t = pick_weighted(&self.parts, &weight, self.rng.gen_range(0..total));
                    let (clock, pinned, k) = (self.clock, self.pinned, self.config.samples());
                    let p = &mut self.parts[t];
                    p.s3_victim(from_volatile, pinned, clock, k, &mut self.rng)
                        .map(|e| (t, p.position_of(e)))
                }
            }
        };
        match victim {
            Some((t, pos)) => {
                let clock = self.clock;
                self.parts[t].evict_or_demote(pos, clock);
                true
            }
            // Nothing in the N-zones to give: the largest Z-zone gives.
            None => match self
                .parts
                .iter()
                .enumerate()
                .max_by_key(|(_, p)| p.zone_items())
            {
                Some((t, p)) if p.zone_items() > 0 => self.parts[t].evict_from_zone(),
                _ => false,
            },
        }
    }
}

impl Shard {
    /// LHD under free competition: `lhd-samples` draws uniform over all tenants'
    /// (volatile) entries, each ranked by its tenant's model (LHD's app classes, §3.4;
    /// all on this shard's clock), plus every part's recent low-density admissions.
    /// Returns the victim's (part, position), after its model has learnt the eviction.
    fn lhd_victim_shared(&mut self, from_volatile: bool) -> Option<(usize, usize)> {
        let clock = self.clock;
        let pinned = self.pinned;
        let limit = self.config.shard_limit();
        // Fewer samples while no tenant's model has learned anything.
        let mut learned = false;
        for p in &mut self.parts {
            let l = p.lhd_model();
            l.model.set_time(clock);
            l.set_capacity(limit);
            learned |= l.model.reconfigurations() > 0;
        }
        let samples = augur_sim::lhd::samples(self.config.lhd_samples(), learned);
        // The recent admissions' index words are fetched while the sample is drawn
        // and ranked (they are confirmed after it).
        for p in &self.parts {
            if let Some(l) = p.lhd.as_deref() {
                l.prefetch_recent(&p.table);
            }
        }
        let mut best = lhd_choose(
            &self.parts,
            &mut self.lhd_carried,
            from_volatile,
            pinned,
            clock,
            samples,
            &mut self.rng,
        );
        for (t, p) in self.parts.iter_mut().enumerate() {
            let Part { table, lhd, .. } = p;
            let Some(l) = lhd.as_deref_mut() else {
                continue;
            };
            if let Some((e, r, pos)) = l.lowest_recent(table, pinned, from_volatile, clock) {
                if best.is_none_or(|v| r < v.rank) {
                    best = Some(LhdVictim {
                        part: t,
                        entry: e,
                        rank: r,
                        pos: Some(pos),
                    });
                }
            }
        }
        let LhdVictim {
            part: t,
            entry: e,
            rank,
            pos,
        } = best?;
        Some((t, self.parts[t].lhd_evicting(e, rank, pos, clock)))
    }
}

impl Part {
    fn reset_counters(&mut self) {
        self.hits = 0;
        self.misses = 0;
        self.evicted = 0;
        self.expired = 0;
        self.writes = 0;
    }
}

/// Draws per batch of [`draw_batch`] (LHD's default 64 candidates in two).
const DRAW_BATCH: usize = 32;
/// Windows per batch of [`draw_windows`]: 128 positions, ~100 entries at the index's
/// 72-90 % fill, so that LHD's default 64 candidates (8-11 windows) are one batch whose
/// cache misses all overlap.
const WINDOW_BATCH: usize = 16;
/// Windows [`lhd_sample`] adds, one at a time, while its windows have found no
/// candidate: at the index's lowest fill (20 %) all 8 positions of a window are empty
/// with probability 0.8^8 = 17 %, of 64 more windows 10^-49.
const MAX_EXTRA_WINDOWS: usize = 64;
/// The most entries a batch of either kind holds.
const SAMPLE_BATCH: usize = WINDOW_BATCH * index::WINDOW;
const _: () = assert!(DRAW_BATCH <= SAMPLE_BATCH);

/// LHD's sampling (§4.1): the lowest hit density per byte among `samples` candidates
/// drawn uniformly over `parts`' entries, each ranked by its part's model at `clock`,
/// never `pinned`; as (part, entry, rank). Over all entries the candidates are
/// [`draw_windows`]' windows of consecutive index positions, as many as hold `samples`
/// entries on average (so the count varies a little from one eviction to the next);
/// over the TTL lists (`from_volatile`) they are `samples` independent draws with
/// replacement ([`draw_batch`]).
///
/// The candidates are taken in batches whose cache misses overlap: all of a batch's
/// index words are fetched, then all its headers, then all their density-table words
/// ([`rank_batch`]), each stage issuing its fetches before it reads the previous
/// stage's. 64 candidates resolved one after another, each two or three dependent
/// cache misses, cost more than the write that needed the eviction.
fn lhd_sample(
    parts: &[Part],
    from_volatile: bool,
    pinned: Option<Entry>,
    clock: u64,
    samples: usize,
    rng: &mut SmallRng,
    drawn: &mut Vec<(usize, u64, usize)>,
) -> Option<LhdVictim> {
    let total: usize = parts.iter().map(|p| draw_weight(p, from_volatile)).sum();
    if total == 0 {
        return None;
    }
    let positions: usize = parts.iter().map(|p| p.table.positions()).sum();
    let mut best: Option<LhdVictim> = None;
    let mut extra_windows = MAX_EXTRA_WINDOWS;
    // Draws (TTL lists) or windows (all entries) still to take.
    let mut left = if from_volatile {
        samples
    } else {
        windows_holding(samples, positions, total)
    };
    while left > 0 {
        drawn.clear();
        if from_volatile {
            let m = left.min(DRAW_BATCH);
            left -= m;
            let mut batch = [None; DRAW_BATCH];
            draw_batch(parts, from_volatile, total, rng, &mut batch[..m]);
            // A TTL list's draw does not know the index position.
            let unknown = usize::MAX;
            drawn.extend(
                batch[..m]
                    .iter()
                    .flatten()
                    .map(|&(t, e)| (t, e.addr(), unknown)),
            );
        } else {
            let w = left.min(WINDOW_BATCH);
            left -= w;
            draw_windows(parts, positions, w, rng, drawn);
        }
        rank_batch(parts, drawn, pinned, clock, &mut best);
        // Windows that held no candidate (an empty run of positions, or only the pinned
        // entry): more, one at a time, as independent draws redraw an empty position.
        if left == 0 && best.is_none() && !from_volatile && extra_windows > 0 {
            extra_windows -= 1;
            left = 1;
        }
    }
    best
}

/// Ranks `drawn` (part, entry address; each header already being fetched) and keeps
/// the lowest in `best`, never `pinned`. Two passes: the first reads each header and
/// starts fetching the density-table word its rank needs (the tables of all shards'
/// models outgrow L2), the second reads them; a header is read once, its class a table
/// lookup ([`PartLhd::compact_of`]).
fn rank_batch(
    parts: &[Part],
    drawn: &[(usize, u64, usize)],
    pinned: Option<Entry>,
    clock: u64,
    best: &mut Option<LhdVictim>,
) {
    let mut ranked = [None::<(Candidate, usize)>; SAMPLE_BATCH];
    for (slot, &(t, addr, pos)) in ranked.iter_mut().zip(drawn) {
        if let Some(l) = parts[t].lhd.as_deref() {
            let (c, at, _) = l.candidate(t, pos, Entry::from_addr(addr), clock);
            *slot = Some((c, at));
        }
    }
    for (c, at) in ranked[..drawn.len()].iter().flatten() {
        let part = c.part as usize;
        let Some(l) = parts[part].lhd.as_deref() else {
            continue;
        };
        let r = l.rank_candidate(c, *at);
        if best.is_none_or(|v| r < v.rank) && Some(c.entry) != pinned {
            *best = Some(LhdVictim {
                part,
                entry: c.entry,
                rank: r,
                pos: (c.pos != usize::MAX).then_some(c.pos),
            });
        }
    }
}

/// An LHD victim: its part, entry and rank, and its index position where the sample
/// read it from the index (`None`: drawn from a TTL list).
#[derive(Clone, Copy)]
struct LhdVictim {
    part: usize,
    entry: Entry,
    rank: f32,
    pos: Option<usize>,
}

/// LHD's sampled victim (before the recent admissions): with carried candidates
/// ([`lhd_sample_carried`]) over all entries and up to [`SAMPLE_BATCH`] samples,
/// otherwise independent windows or draws ([`lhd_sample`]), `carried` then dropped.
fn lhd_choose(
    parts: &[Part],
    carried: &mut Carried,
    from_volatile: bool,
    pinned: Option<Entry>,
    clock: u64,
    samples: usize,
    rng: &mut SmallRng,
) -> Option<LhdVictim> {
    if from_volatile || samples > SAMPLE_BATCH {
        carried.clear();
        lhd_sample(
            parts,
            from_volatile,
            pinned,
            clock,
            samples,
            rng,
            &mut carried.drawn,
        )
    } else {
        lhd_sample_carried(parts, carried, pinned, clock, samples, rng)
    }
}

/// Of the candidates an eviction ranks, the share it carries to the part's next one (the
/// rest are drawn afresh): 7/8, so that LHD's default 64 candidates are 8 new entries
/// (one or two windows) and the 56 lowest-ranked of those earlier evictions left. 3/4
/// (16 new) before 2026-11-29: 7/8 cut `draw_windows`' cycles in the bare store by
/// ~45 % (`perf` on `evict_cost`); the server's CPU per evicting SET moved within this
/// VM's noise (BENCHMARKS.md), and its miss ratio stayed within 0.7 points of the
/// simulator's on all 15 cells of `bench/fidelity.sh lhd`.
const CARRIED_NUMERATOR: usize = 7;
const CARRIED_DENOMINATOR: usize = 8;

/// LHD's victim among `parts`' entries with candidates carried between evictions
/// (as Redis's eviction pool carries K-LRU's, `evict.c`): each eviction ranks `samples`
/// candidates, the lowest-ranked ones the last eviction left (`carried`) and new
/// windows ([`draw_windows`]) for the rest, at least an eighth; it evicts the lowest
/// and carries the lowest 7/8 of `samples` of the others to the next. Never `pinned`;
/// as (part, entry, rank).
///
/// Why: the sample's cost is one cache miss per candidate for its header (what ranks
/// it; ~60 % of LHD's eviction time, measured in BENCHMARKS.md), and a carried
/// candidate is ranked again from its compact tag, without a read. A carried
/// candidate is read only when it ranks lowest: the index must still name it at the
/// same position (else it is dropped: removed, moved by a removal's backward shift, a
/// resize or defragmentation), and its header is read again, so a hit since it was
/// carried (a new tag) ranks it anew before it can be chosen. So the victim is always
/// the lowest of live entries ranked on their current tags; what changes from LHD's
/// independent samples (§4.1) is that the candidates are not all new, the carried
/// ones skewing them towards low ranks, as Redis's pool does for K-LRU. The server's
/// miss ratio is checked against the simulator's independent samples by
/// `bench/fidelity.sh lhd`. While `carried` is short (the first evictions, after a
/// reset) more windows are drawn, so that an eviction always ranks about `samples`; if
/// the windows find nothing and no carried candidate is still in place, [`lhd_sample`]
/// draws until it finds one (an eviction never fails while there are entries).
fn lhd_sample_carried(
    parts: &[Part],
    carried: &mut Carried,
    pinned: Option<Entry>,
    clock: u64,
    samples: usize,
    rng: &mut SmallRng,
) -> Option<LhdVictim> {
    let total: usize = parts.iter().map(Part::len).sum();
    if total == 0 {
        carried.clear();
        return None;
    }
    let carry = samples * CARRIED_NUMERATOR / CARRIED_DENOMINATOR;
    carried.truncate(carry);
    let fresh = samples
        .saturating_sub(carried.len())
        .max(samples - carry)
        .max(1);
    let model = |part: usize| parts.get(part).and_then(|p| p.lhd.as_deref());
    // A part's LHD state goes with a policy switch: its candidates go too (a pass
    // over the candidates only then).
    if parts.iter().any(|p| p.lhd.is_none()) {
        for i in (0..carried.len()).rev() {
            if model(carried.cands[i].part as usize).is_none() {
                carried.swap_remove(i);
            }
        }
    }
    // A carried rank is read again only if the model reconfigured or the candidate's
    // age moved to the next bin; those density words are fetched while the windows
    // are drawn. Only the clocks are scanned for it, not the candidates.
    let epoch = (0..parts.len())
        .filter_map(model)
        .map(|l| l.model.reconfigurations())
        .sum();
    let stale = std::mem::replace(&mut carried.epoch, epoch) != epoch;
    let mut pending = std::mem::take(&mut carried.pending);
    pending.clear();
    for (i, until) in carried.until.iter_mut().enumerate() {
        if !stale && clock < *until {
            continue;
        }
        let c = &carried.cands[i];
        if let Some(l) = model(c.part as usize) {
            let at;
            (at, *until) = l.model.density_entry(c.tag);
            l.model.prefetch_density_entry(at);
            pending.push((i, at));
        }
    }
    carried.read.iter_mut().for_each(|r| *r = false);
    let positions: usize = parts.iter().map(|p| p.table.positions()).sum();
    let mut left = windows_holding(fresh, positions, total);
    let mut drawn = std::mem::take(&mut carried.drawn);
    while left > 0 {
        let w = left.min(WINDOW_BATCH);
        left -= w;
        drawn.clear();
        draw_windows(parts, positions, w, rng, &mut drawn);
        for &(part, addr, pos) in &drawn {
            if let Some(l) = model(part) {
                let (c, at, until) = l.candidate(part, pos, Entry::from_addr(addr), clock);
                pending.push((carried.len(), at));
                carried.push(c, f32::NAN, until, true);
            }
        }
    }
    carried.drawn = drawn;
    for &(i, at) in &pending {
        let c = &carried.cands[i];
        if let Some(l) = model(c.part as usize) {
            carried.ranks[i] = l.rank_candidate(c, at);
        }
    }
    carried.pending = pending;
    // The lowest live candidate; a carried one is confirmed (and re-ranked) first.
    let victim = loop {
        let Some(i) = lowest_rank(&carried.ranks) else {
            // The windows found nothing and no carried candidate is still in place
            // (after a flush, say): independent windows, with more until one is found.
            return lhd_sample(
                parts,
                false,
                pinned,
                clock,
                samples,
                rng,
                &mut carried.drawn,
            );
        };
        let c = carried.cands[i];
        if Some(c.entry) == pinned {
            carried.swap_remove(i);
            continue;
        }
        if carried.read[i] {
            break i;
        }
        // Compared, never read, until the index confirms it is live.
        let part = c.part as usize;
        let (Some(l), true) = (model(part), parts[part].table.at(c.pos) == Some(c.entry)) else {
            carried.swap_remove(i);
            continue;
        };
        let (now, at, until) = l.candidate(part, c.pos, c.entry, clock);
        carried.read[i] = true;
        if (now.tag, now.size) != (c.tag, c.size) {
            carried.cands[i] = now;
            carried.ranks[i] = l.rank_candidate(&now, at);
            carried.until[i] = until;
            continue;
        }
        break i;
    };
    let rank = carried.ranks[victim];
    let chosen = carried.swap_remove(victim);
    carry_lowest(carried, carry);
    Some(LhdVictim {
        part: chosen.part as usize,
        entry: chosen.entry,
        rank,
        pos: Some(chosen.pos),
    })
}

/// The index of the lowest of `ranks` (the first of equals; by `f32::total_cmp`), if any.
fn lowest_rank(ranks: &[f32]) -> Option<usize> {
    let (&first, rest) = ranks.split_first()?;
    let (mut best, mut lowest) = (0, first);
    for (i, &r) in rest.iter().enumerate() {
        if r.total_cmp(&lowest).is_lt() {
            (best, lowest) = (i + 1, r);
        }
    }
    Some(best)
}

/// The `carry`-th lowest of `ranks` (by `f32::total_cmp`; `0 < carry <= ranks.len()`):
/// a quickselect on a copy of them as integers ordered as `total_cmp` orders the
/// floats (one integer comparison each; ~15 % faster than on the floats in a
/// micro-benchmark of 63 ranks; a one-pass buffer of the few highest, with fewer
/// comparisons, took twice as long: they mispredict).
fn carried_cut(ranks: &[f32], carry: usize) -> f32 {
    /// `f32::total_cmp`'s order, as an `i32`.
    fn key(x: f32) -> i32 {
        let b = x.to_bits() as i32;
        b ^ (((b >> 31) as u32) >> 1) as i32
    }
    let mut stack = [0i32; 2 * SAMPLE_BATCH];
    let mut heap = Vec::new();
    let keys = match stack.get_mut(..ranks.len()) {
        Some(keys) => keys,
        None => {
            heap.resize(ranks.len(), 0);
            &mut heap[..]
        }
    };
    for (k, &r) in keys.iter_mut().zip(ranks) {
        *k = key(r);
    }
    let k = *keys.select_nth_unstable(carry - 1).1;
    // `key` is its own inverse on the bits.
    f32::from_bits((k ^ (((k >> 31) as u32) >> 1) as i32) as u32)
}

/// Keeps the `carry` lowest-ranked of `carried`'s candidates (ties broken by order):
/// the ranks are selected on a copy (4 bytes each), and the others removed one by one
/// (the last candidate taking each one's place), so that a candidate kept is not
/// moved unless it was last: ~7 of 63 go per eviction.
fn carry_lowest(carried: &mut Carried, carry: usize) {
    let len = carried.len();
    if len <= carry {
        return;
    }
    if carry == 0 {
        carried.clear();
        return;
    }
    let kth = carried_cut(&carried.ranks, carry);
    let mut ties = carry
        - (carried.ranks.iter())
            .filter(|r| r.total_cmp(&kth).is_lt())
            .count();
    // The first `ties` candidates ranked `kth` (in order) are kept: those before
    // `tie_cut`.
    let mut tie_cut = 0;
    for (i, r) in carried.ranks.iter().enumerate() {
        if ties == 0 {
            break;
        }
        if r.total_cmp(&kth).is_eq() {
            ties -= 1;
            tie_cut = i + 1;
        }
    }
    // Removed from the back, so that each removal's replacement (the last candidate)
    // is one already kept.
    for i in (0..len).rev() {
        let keep = match carried.ranks[i].total_cmp(&kth) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => i < tie_cut,
            std::cmp::Ordering::Greater => false,
        };
        if !keep {
            carried.swap_remove(i);
        }
    }
}

/// LHD's contiguous sampling (as RankCache samples its contiguous tags, LHD §4.1, "64
/// candidates with just 4 cache misses"): `windows` windows of [`index::WINDOW`]
/// consecutive index positions, each in a part drawn in proportion to its positions
/// (`positions` is their sum) at a uniformly random start, and every entry they hold,
/// appended to `out` as (part, entry address, index position) with its header being
/// fetched.
///
/// Every entry is as likely as any other to be drawn (a window covers a fixed span of
/// positions, see [`Table::window_start`]), as with independent draws, but a window's
/// ~6 entries cost one or two index cache lines instead of ~6 random ones. The entries
/// of a window are neighbours by hash, i.e. unrelated keys: the server's miss ratio
/// stays within the fidelity bar of the simulator's independent draws
/// (`bench/fidelity.sh lhd`). The TTL lists are not windowed: their order is the order
/// TTLs were set in. All windows' words are fetched before any is read, and a window's
/// empty positions are skipped without a branch ([`Table::window_addrs`]).
fn draw_windows<R: Rng + ?Sized>(
    parts: &[Part],
    positions: usize,
    windows: usize,
    rng: &mut R,
    out: &mut Vec<(usize, u64, usize)>,
) {
    let mut starts = [(0usize, 0usize); WINDOW_BATCH];
    let mut w = 0;
    for _ in 0..windows.min(starts.len()) {
        let t = if parts.len() == 1 {
            0
        } else {
            pick_weighted(
                parts,
                &|p: &Part| p.table.positions(),
                rng.gen_range(0..positions),
            )
        };
        if let Some(start) = parts[t].table.window_start(rng) {
            starts[w] = (t, start);
            w += 1;
        }
    }
    for &(t, start) in &starts[..w] {
        let mut window = [(0usize, 0u64, 0usize); index::WINDOW];
        let mut n = 0;
        for (pos, addr) in parts[t].table.window_addrs(start) {
            window[n] = (t, addr, pos);
            n += usize::from(addr != 0);
        }
        out.extend_from_slice(&window[..n]);
    }
}

/// How many [`draw_windows`] windows hold `samples` entries on average, at least one, when
/// `total` entries occupy `positions` index positions.
fn windows_holding(samples: usize, positions: usize, total: usize) -> usize {
    ((samples * positions + index::WINDOW * total / 2) / (index::WINDOW * total)).max(1)
}

/// How many entries of `p` an eviction draws among: all, or those with a TTL.
fn draw_weight(p: &Part, from_volatile: bool) -> usize {
    if from_volatile {
        p.volatile.len()
    } else {
        p.len()
    }
}

/// Uniform draws (with replacement) over `parts`' entries (their TTL lists' with
/// `from_volatile`; `total` is the sum of their [`draw_weight`]s, non-zero), one per slot
/// of `out`, as (part, entry), returning how many slots were filled. Why a batch: each
/// draw is two dependent cache misses (an index word, then the entry's header), so all
/// the batch's index words (or TTL-list slots) are prefetched first, then its entries
/// resolved and their headers prefetched: the batch's misses overlap instead of queueing.
/// Each draw is what [`Table::random_occupied`] draws, in two steps.
fn draw_batch<R: Rng + ?Sized>(
    parts: &[Part],
    from_volatile: bool,
    total: usize,
    rng: &mut R,
    out: &mut [Option<(usize, Entry)>],
) -> usize {
    let mut picks = [(0usize, 0usize); DRAW_BATCH];
    let mut n = 0;
    for _ in 0..out.len().min(DRAW_BATCH) {
        let t = if parts.len() == 1 {
            0
        } else {
            pick_weighted(
                parts,
                &|p: &Part| draw_weight(p, from_volatile),
                rng.gen_range(0..total),
            )
        };
        let p = &parts[t];
        let pos = if from_volatile {
            let i = rng.gen_range(0..p.volatile.len());
            index::prefetch(p.volatile.as_ptr().wrapping_add(i) as u64);
            i
        } else {
            let Some(pos) = p.table.random_position(rng) else {
                continue;
            };
            pos
        };
        picks[n] = (t, pos);
        n += 1;
    }
    for (slot, &(t, pos)) in out.iter_mut().zip(&picks[..n]) {
        let p = &parts[t];
        let e = if from_volatile {
            Some(p.volatile[pos])
        } else {
            p.table.at(p.table.occupied_from(pos, rng))
        };
        if let Some(e) = e {
            index::prefetch(e.addr());
        }
        *slot = e.map(|e| (t, e));
    }
    n
}

/// The index of the part that the `r`-th entry (0-based, in `weight` order) falls in.
fn pick_weighted(parts: &[Part], weight: &impl Fn(&Part) -> usize, mut r: usize) -> usize {
    for (i, p) in parts.iter().enumerate() {
        let w = weight(p);
        if r < w {
            return i;
        }
        r -= w;
    }
    parts.len().saturating_sub(1)
}

impl Drop for Shard {
    fn drop(&mut self) {
        for p in &mut self.parts {
            for e in p.table.entries() {
                e.free();
            }
            p.table.clear();
        }
    }
}

/// Parts' entries seen as eviction candidates for [`augur_sim::policy`]: one part (a
/// tenant's own eviction) or all of them (free competition), uniform over the union.
struct Sampled<'a> {
    parts: &'a [Part],
    /// The tenant of `parts[0]` (parts[i] is tenant first_tenant + i).
    first_tenant: TenantId,
    clock: u64,
    from_volatile: bool,
    score: Score<'a>,
    /// The object a command is changing: never a candidate.
    pinned: Option<Entry>,
}

/// What a pooled candidate's score is: higher is evicted first (Redis's `idle` in
/// `evictionPoolPopulate`).
#[derive(Clone, Copy)]
enum Score<'a> {
    /// Accesses since the last one (LRU).
    Idle,
    /// Soonest expiry (volatile-ttl).
    Ttl,
    /// 255 less the decayed LFU counter.
    Lfu(&'a DecayMarks),
}

impl<'a> Score<'a> {
    /// `policy`'s score; `marks` are the decay marks when `policy` is LFU.
    fn of(policy: EvictionPolicy, marks: Option<&'a DecayMarks>) -> Score<'a> {
        match (policy, marks) {
            (EvictionPolicy::VolatileTtl, _) => Score::Ttl,
            (p, Some(m)) if p.is_lfu() => Score::Lfu(m),
            _ => Score::Idle,
        }
    }
}

impl Sampled<'_> {
    fn weight(&self, p: &Part) -> usize {
        draw_weight(p, self.from_volatile)
    }

    /// Whether the pinned entry is among the population sampled here.
    fn pinned_counts(&self) -> bool {
        self.pinned.is_some_and(|p| {
            (!self.from_volatile || p.has_ttl())
                && self
                    .parts
                    .iter()
                    .any(|part| part.table.find(entry_hash(p), |x| x == p).is_some())
        })
    }
}

impl Candidates for Sampled<'_> {
    type Id = PoolKey;

    fn population(&self) -> usize {
        let all: usize = self.parts.iter().map(|p| self.weight(p)).sum();
        all - self.pinned_counts() as usize
    }

    fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(PoolKey, u64)> {
        // Uniform over the population without the pinned entry: redraw when it comes up.
        for _ in 0..64 {
            match self.sample_any(rng) {
                Some((e, i)) if Some(e) != self.pinned => return Some(self.candidate(e, i)),
                Some(_) => continue,
                None => return None,
            }
        }
        None
    }

    /// The draws of [`Sampled::sample`], made as batches ([`draw_batch`]): K = 5 draws
    /// are ten dependent cache misses one after another otherwise.
    fn sample_many<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        k: usize,
        out: &mut impl FnMut(PoolKey, u64),
    ) {
        let total: usize = self.parts.iter().map(|p| self.weight(p)).sum();
        if total == 0 {
            return;
        }
        let mut left = k;
        while left > 0 {
            let mut drawn = [None; DRAW_BATCH];
            let m = left.min(DRAW_BATCH);
            left -= m;
            let n = draw_batch(self.parts, self.from_volatile, total, rng, &mut drawn[..m]);
            for &(i, e) in drawn[..n].iter().flatten() {
                if Some(e) == self.pinned {
                    // Uniform over the population without the pinned entry: redraw.
                    if let Some((id, score)) = self.sample(rng) {
                        out(id, score);
                    }
                    continue;
                }
                let (id, score) = self.candidate(e, i);
                out(id, score);
            }
        }
    }

    fn contains(&self, id: &PoolKey) -> bool {
        let t = pool_tenant(id).wrapping_sub(self.first_tenant) as usize;
        let Some(part) = self.parts.get(t) else {
            return false;
        };
        Part::find_pooled(&part.table, id[2], &id[3..])
            // Like Redis (which looks the key up in `db->expires` for volatile policies),
            // a candidate whose TTL was removed since it was pooled is no longer eligible.
            .is_some_and(|pos| {
                part.table
                    .at(pos)
                    .is_some_and(|e| (!self.from_volatile || e.has_ttl()) && Some(e) != self.pinned)
            })
    }
}

impl Sampled<'_> {
    /// One entry drawn uniformly from all parts' (volatile) entries, with its part.
    fn sample_any<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<(Entry, usize)> {
        let total: usize = self.parts.iter().map(|p| self.weight(p)).sum();
        if total == 0 {
            return None;
        }
        let i = if self.parts.len() == 1 {
            0
        } else {
            pick_weighted(
                self.parts,
                &|p: &Part| self.weight(p),
                rng.gen_range(0..total),
            )
        };
        let part = &self.parts[i];
        let e = if self.from_volatile {
            part.volatile[rng.gen_range(0..part.volatile.len())]
        } else {
            let pos = part.table.random_occupied(rng)?;
            part.table.at(pos)?
        };
        Some((e, i))
    }

    fn candidate(&self, e: Entry, i: usize) -> (PoolKey, u64) {
        let score = match self.score {
            // Soonest expiry first: Redis uses ULLONG_MAX - expire as the "idle" score.
            Score::Ttl => u64::MAX - e.expire_at().unwrap_or(u64::MAX),
            Score::Idle => e.idle(self.clock as u32) as u64,
            Score::Lfu(marks) => {
                augur_sim::lfu::eviction_score(crate::lfu::counter(e, self.clock, marks))
            }
        };
        let tenant = self.first_tenant + i as TenantId;
        (pool_key(tenant, e.db(), e.key()), score)
    }
}
#[cfg(test)]
impl Shard {
    /// The logical clock (for tests of what moves it).
    pub(crate) fn clock(&self) -> u64 {
        self.clock
    }

    /// Checks every internal invariant; panics with a description if one is broken.
    pub(crate) fn check_invariants(&self) {
        for p in &self.parts {
            p.check_invariants();
        }
        // A lookup that moved a key out of the Z-zone publishes at the next command
        // (`settle`), by design; until then the published figure may lag.
        if !self.parts.iter().any(|p| p.faulted) {
            assert_eq!(
                self.published.used.load(Ordering::Relaxed),
                self.used(),
                "published used"
            );
        }
    }
}

#[cfg(test)]
impl Part {
    fn check_invariants(&self) {
        let mut bytes = 0u64;
        let mut n = 0usize;
        let mut keys = vec![0u64; self.keys_per_db.len()];
        let mut expires = vec![0u64; self.keys_per_db.len()];
        let mut small = 0usize;
        for e in self.table.entries() {
            n += 1;
            small += usize::from(crate::s3fifo::state(e).1);
            assert_eq!(
                self.table.at(self.position_of(e)),
                Some(e),
                "entry not findable"
            );
            assert_eq!(
                self.table
                    .find(entry_hash(e), |x| x.db() == e.db() && x.key() == e.key())
                    .map(|p| self.entry(p)),
                Some(e),
                "entry not findable by its key"
            );
            bytes += e.charge() as u64;
            keys[e.db() as usize] += 1;
            if e.has_ttl() {
                expires[e.db() as usize] += 1;
                assert!(
                    self.volatile[e.volatile_index() as usize] == e,
                    "volatile back-pointer"
                );
            }
        }
        assert_eq!(n, self.table.len());
        assert_eq!(small, self.s3_small.get(), "S3-FIFO small-queue count");
        if let Some(z) = self.zone.as_deref() {
            let mut zk = vec![0u64; self.keys_per_db.len()];
            let mut zx = vec![0u64; self.keys_per_db.len()];
            z.z.for_each(|db, key, meta| {
                if z.is_stale(db, key) {
                    return;
                }
                zk[db as usize] += 1;
                if meta.expire_at_ms.is_some() {
                    zx[db as usize] += 1;
                }
                assert!(
                    Self::find_pooled(&self.table, db, key).is_none(),
                    "a key in both zones"
                );
            });
            assert_eq!(zk, z.keys_per_db, "Z-zone keys per db");
            assert_eq!(zx, z.expires_per_db, "Z-zone expires per db");
            assert_eq!(zk.iter().sum::<u64>(), z.live_items(), "Z-zone len");
        }
        for &e in &self.volatile {
            assert!(e.has_ttl(), "volatile list names a persistent entry");
        }
        assert_eq!(self.volatile.len() as u64, expires.iter().sum::<u64>());
        assert_eq!(bytes, self.entry_bytes, "entry byte accounting");
        assert_eq!(keys, self.keys_per_db, "per-db key counts");
        assert_eq!(expires, self.expires_per_db, "per-db expire counts");
    }
}

#[cfg(test)]
mod carry_tests {
    use super::*;
    use augur_sim::lhd::CompactTag;
    use rand::SeedableRng;

    /// `carried_cut` is what a sort puts at index `carry - 1`, by its short buffer and
    /// by its quickselect.
    #[test]
    fn the_cut_is_the_sorted_rank_at_carry() {
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..3000 {
            let n = rng.gen_range(2..150);
            let levels = rng.gen_range(1..40);
            let mut ranks: Vec<f32> = (0..n)
                .map(|_| rng.gen_range(0..levels) as f32 - 5.0)
                .collect();
            if rng.gen_bool(0.2) {
                ranks[0] = f32::NEG_INFINITY;
            }
            let carry = rng.gen_range(1..n);
            let mut sorted = ranks.clone();
            sorted.sort_by(f32::total_cmp);
            assert_eq!(
                carried_cut(&ranks, carry),
                sorted[carry - 1],
                "{ranks:?} {carry}"
            );
        }
    }

    /// `lowest_rank` finds what a sort by `f32::total_cmp` puts first, the first of
    /// equals, including -inf (an overflowed age) and never a NaN over a number.
    #[test]
    fn the_lowest_rank_is_the_first_of_the_lowest() {
        assert_eq!(lowest_rank(&[]), None);
        assert_eq!(lowest_rank(&[2.0, 1.0, 3.0, 1.0]), Some(1));
        assert_eq!(
            lowest_rank(&[f32::NAN, 5.0, f32::NEG_INFINITY, f32::NEG_INFINITY]),
            Some(2)
        );
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..500 {
            let ranks: Vec<f32> = (0..rng.gen_range(1..100))
                .map(|_| rng.gen_range(0..8) as f32)
                .collect();
            let want = (0..ranks.len())
                .min_by(|&a, &b| ranks[a].total_cmp(&ranks[b]))
                .unwrap();
            assert_eq!(lowest_rank(&ranks), Some(want));
        }
    }

    /// `carry_lowest` keeps exactly the `carry` lowest ranks (as a sort would, ties
    /// included: the first in order of those ranked at the cut), each candidate with
    /// its own rank and clock, through its stack path and its fallback for more
    /// candidates than the stack holds.
    #[test]
    fn carrying_keeps_the_lowest_ranks() {
        let mut rng = SmallRng::seed_from_u64(9);
        for case in 0..2000 {
            let n = if case % 10 == 0 {
                rng.gen_range(0..700)
            } else {
                rng.gen_range(0..120)
            };
            let carry = rng.gen_range(0..=n + 2);
            // Few distinct values so that ties straddle the cut.
            let levels = rng.gen_range(1..20);
            let mut carried = Carried::default();
            for i in 0..n {
                let c = Candidate {
                    part: 0,
                    size: 1,
                    pos: i,
                    entry: Entry::from_addr(16 * (i as u64 + 1)),
                    tag: CompactTag {
                        stamp: 0,
                        code: 0,
                        last_hit_age: 0,
                    },
                };
                let rank = rng.gen_range(0..levels) as f32 - 3.0;
                // The clock stored with each candidate travels with it.
                carried.push(c, rank, i as u64 * 7, false);
            }
            let before: Vec<(usize, f32)> = (0..n).map(|i| (i, carried.ranks[i])).collect();
            carry_lowest(&mut carried, carry);
            let mut want: Vec<f32> = before.iter().map(|&(_, r)| r).collect();
            want.sort_by(f32::total_cmp);
            want.truncate(carry);
            let mut got = carried.ranks.clone();
            got.sort_by(f32::total_cmp);
            assert_eq!(got, want, "n {n} carry {carry}");
            // Each kept candidate once, with its own rank and clock.
            assert_eq!(carried.len(), carried.until.len());
            for (i, c) in carried.cands.iter().enumerate() {
                assert_eq!(carried.ranks[i], before[c.pos].1);
                assert_eq!(carried.until[i], c.pos as u64 * 7);
            }
            // Of the candidates ranked as the last one kept, the first in order.
            if let Some(&cut) = got.last() {
                let kept_at_cut: Vec<usize> = carried
                    .cands
                    .iter()
                    .filter(|c| before[c.pos].1 == cut)
                    .map(|c| c.pos)
                    .collect();
                let first_at_cut: Vec<usize> = before
                    .iter()
                    .filter(|&&(_, r)| r == cut)
                    .map(|&(i, _)| i)
                    .take(kept_at_cut.len())
                    .collect();
                let mut kept_at_cut = kept_at_cut;
                kept_at_cut.sort_unstable();
                assert_eq!(kept_at_cut, first_at_cut, "n {n} carry {carry}");
            }
            let mut positions: Vec<usize> = carried.cands.iter().map(|c| c.pos).collect();
            positions.sort_unstable();
            positions.dedup();
            assert_eq!(positions.len(), carried.len());
        }
    }
}
