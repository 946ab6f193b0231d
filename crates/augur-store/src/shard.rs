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

use crate::entry::{Entry, MAX_LEN};
use crate::index::Table;
use crate::store::{key_hash, SharedConfig, UsedCell};
use crate::EvictionPolicy;
use augur_sim::policy::{select_victim_pooled, Candidates, EvictionPool};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
}

/// What OBJECT / MEMORY USAGE / TYPE need to know about a key, read without touching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryInfo {
    pub value_len: usize,
    /// Logical accesses (of this shard) since the key was last read or written.
    pub idle_accesses: u64,
    pub expire_at_ms: Option<u64>,
    /// Bytes charged to this key: allocator usable size plus index overhead.
    pub memory_bytes: usize,
}

/// A pooled eviction candidate: the database byte followed by the key (Redis keeps a
/// copy of the key name in its pool for the same reason: entries move).
type PoolKey = Box<[u8]>;

fn pool_key(db: u8, key: &[u8]) -> PoolKey {
    let mut v = Vec::with_capacity(key.len() + 1);
    v.push(db);
    v.extend_from_slice(key);
    v.into_boxed_slice()
}

/// Mixes the database number into a key's hash so the same key in different databases
/// lands in different positions.
#[inline]
fn db_hash(h: u64, db: u8) -> u64 {
    h ^ (db as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[inline]
fn entry_hash(e: Entry) -> u64 {
    db_hash(key_hash(e.key()), e.db())
}

pub struct Shard {
    config: Arc<SharedConfig>,
    table: Table,
    volatile: Vec<Entry>,
    clock: u64,
    /// Sum of the entries' usable sizes.
    entry_bytes: u64,
    /// `used()` published for lock-free reads by `Store::used_memory`.
    published_used: Arc<UsedCell>,
    keys_per_db: Vec<u64>,
    expires_per_db: Vec<u64>,
    pool: EvictionPool<PoolKey>,
    /// The policy `pool` was filled under; a policy change empties it.
    pool_policy: EvictionPolicy,
    rng: SmallRng,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) evicted: u64,
    pub(crate) expired: u64,
}

// SAFETY: the shard exclusively owns every entry allocation it indexes.
unsafe impl Send for Shard {}

impl Shard {
    pub(crate) fn new(
        config: Arc<SharedConfig>,
        published_used: Arc<UsedCell>,
        seed: u64,
    ) -> Shard {
        let dbs = config.databases;
        let policy = config.policy();
        let s = Shard {
            config,
            table: Table::new(),
            volatile: Vec::new(),
            clock: 0,
            entry_bytes: 0,
            published_used,
            keys_per_db: vec![0; dbs],
            expires_per_db: vec![0; dbs],
            pool: EvictionPool::new(),
            pool_policy: policy,
            rng: SmallRng::seed_from_u64(seed),
            hits: 0,
            misses: 0,
            evicted: 0,
            expired: 0,
        };
        s.publish();
        s
    }

    // ----- public key-level API -----

    /// Reads a value: lazily expires it, counts a keyspace hit or miss, and makes the key
    /// most recently used. The slice is valid while the shard stays locked.
    pub fn get(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<&[u8]> {
        let now = self.tick();
        match self.find_live(db, key, now_ms) {
            Some(e) => {
                self.hits += 1;
                e.set_atime(now);
                Some(e.value())
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Reads a value without counting stats or touching recency (lazily expires it).
    pub fn peek(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<&[u8]> {
        self.find_live(db, key, now_ms).map(|e| e.value())
    }

    /// Information about a key without touching it (lazily expires it).
    pub fn info(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<EntryInfo> {
        let e = self.find_live(db, key, now_ms)?;
        let per_entry_index = self.index_bytes() / self.table.len().max(1) as u64;
        Some(EntryInfo {
            value_len: e.value_len(),
            idle_accesses: self.idle_of(e),
            expire_at_ms: e.expire_at(),
            memory_bytes: e.usable_size() + per_entry_index as usize,
        })
    }

    /// Inserts or replaces a value, evicting first (per the store's policy) if the shard
    /// is over its share of `maxmemory`. Makes the key most recently used.
    pub fn set(
        &mut self,
        db: u8,
        key: &[u8],
        value: &[u8],
        ttl: SetTtl,
        now_ms: u64,
    ) -> Result<(), WriteError> {
        if key.len() > MAX_LEN || value.len() > MAX_LEN {
            return Err(WriteError::TooLarge);
        }
        // Room for the block this write may allocate (an upper bound: a replaced value
        // frees its old block too), so the shard never ends above its budget.
        self.make_room(
            Entry::block_size(key.len(), value.len(), matches!(ttl, SetTtl::At(_))) as u64,
        )?;
        let now = self.tick();
        let h = db_hash(key_hash(key), db);
        let found = self.find_live_pos(db, key, h, now_ms);
        match found {
            Ok(pos) => self.replace(pos, value, ttl, now),
            Err(vacancy) => {
                let expire = match ttl {
                    SetTtl::At(at) => Some(at),
                    SetTtl::Clear | SetTtl::Keep => None,
                };
                self.insert_new(db, key, value, expire, now, h, vacancy);
            }
        }
        self.publish();
        Ok(())
    }

    /// Removes a key; true if it existed (and had not expired).
    pub fn delete(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        let h = db_hash(key_hash(key), db);
        match self.find_live_pos(db, key, h, now_ms) {
            Ok(pos) => {
                self.remove_at(pos);
                self.publish();
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the key exists (lazily expires it; no stats, no touch).
    pub fn exists(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        self.find_live(db, key, now_ms).is_some()
    }

    /// Makes the key most recently used; true if it exists (TOUCH).
    pub fn touch(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        let now = self.tick();
        match self.find_live(db, key, now_ms) {
            Some(e) => {
                e.set_atime(now);
                true
            }
            None => false,
        }
    }

    /// Sets (`Some(at_ms)`) or removes (`None`) a key's expiry time. Returns false if the
    /// key does not exist; for `None`, also false if it had no TTL (PERSIST's 0).
    /// An `at_ms` not in the future deletes the key (and still returns true), as Redis does.
    pub fn set_expire(&mut self, db: u8, key: &[u8], at_ms: Option<u64>, now_ms: u64) -> bool {
        let h = db_hash(key_hash(key), db);
        let Ok(pos) = self.find_live_pos(db, key, h, now_ms) else {
            return false;
        };
        let e = self.entry(pos);
        match at_ms {
            // Redis counts this as a deletion, not an expiry (no expired_keys bump).
            Some(at) if at <= now_ms => self.remove_at(pos),
            Some(at) if e.has_ttl() => e.set_expire_at(at),
            Some(at) => {
                self.volatile.push(e);
                self.expires_per_db[e.db() as usize] += 1;
                let v = self.volatile.len() as u32 - 1;
                self.reallocate(pos, Some((at, v)));
            }
            None if e.has_ttl() => {
                self.unlist_volatile(e);
                self.reallocate(pos, None);
            }
            None => return false,
        }
        self.publish();
        true
    }

    pub fn ttl(&mut self, db: u8, key: &[u8], now_ms: u64) -> TtlState {
        match self.find_live(db, key, now_ms) {
            None => TtlState::Missing,
            Some(e) => match e.expire_at() {
                None => TtlState::Persistent,
                Some(at) => TtlState::ExpiresAt(at),
            },
        }
    }

    // ----- crate-level operations used by Store -----

    /// Heap bytes held by this shard: entries' usable sizes plus index capacity.
    pub(crate) fn used(&self) -> u64 {
        self.entry_bytes + self.index_bytes()
    }

    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn keys_in_db(&self, db: u8) -> u64 {
        self.keys_per_db.get(db as usize).copied().unwrap_or(0)
    }

    pub(crate) fn db_counts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.keys_per_db
            .iter()
            .copied()
            .zip(self.expires_per_db.iter().copied())
    }

    pub(crate) fn reset_stats(&mut self) {
        self.hits = 0;
        self.misses = 0;
        self.evicted = 0;
        self.expired = 0;
    }

    /// Evicts until within budget (used after CONFIG SET maxmemory lowers the limit).
    pub(crate) fn enforce_limit(&mut self) {
        let _ = self.make_room(0);
        self.publish();
    }

    /// Removes every entry of `db`.
    pub(crate) fn flush_db(&mut self, db: u8) {
        let mut pos = self.table.positions();
        while pos > 0 {
            pos -= 1;
            // Removal only moves already-examined (higher) entries down into `pos`..
            // A shrink reassigns positions wholesale: then start over from the top.
            if self.table.at(pos).is_some_and(|e| e.db() == db) {
                let epoch = self.table.epoch();
                self.remove_at(pos);
                if self.table.epoch() != epoch {
                    pos = self.table.positions();
                }
            }
        }
        self.pool.retain(|k| k[0] != db);
        self.publish();
    }

    /// Removes everything and returns the memory to the allocator.
    pub(crate) fn flush_all(&mut self) {
        for e in self.table.entries() {
            e.free();
        }
        self.table.clear();
        self.volatile = Vec::new();
        self.entry_bytes = 0;
        self.keys_per_db.iter_mut().for_each(|c| *c = 0);
        self.expires_per_db.iter_mut().for_each(|c| *c = 0);
        self.pool.clear();
        self.publish();
    }

    /// One shard's part of the active expiry cycle (Redis `activeExpireCycle`): sample
    /// 20 keys with a TTL, delete the expired ones, and go on while more than a quarter
    /// of a sample had expired (at most `max_rounds` samples). Returns keys removed.
    pub(crate) fn expire_cycle(&mut self, now_ms: u64, max_rounds: usize) -> u64 {
        const SAMPLE: usize = 20;
        let mut removed: u64 = 0;
        for _ in 0..max_rounds {
            if self.volatile.is_empty() {
                break;
            }
            let n = SAMPLE.min(self.volatile.len());
            let mut expired_here: u64 = 0;
            for _ in 0..n {
                if self.volatile.is_empty() {
                    break;
                }
                let e = self.volatile[self.rng.gen_range(0..self.volatile.len())];
                if e.expire_at().is_some_and(|at| now_ms > at) {
                    let pos = self.position_of(e);
                    self.remove_at(pos);
                    self.expired += 1;
                    expired_here += 1;
                }
            }
            removed += expired_here;
            if expired_here * 4 <= n as u64 {
                break;
            }
        }
        if removed > 0 {
            self.publish();
        }
        removed
    }

    /// Number of positions a SCAN walks in this shard, and the epoch they belong to.
    pub(crate) fn scan_extent(&self) -> (usize, u32) {
        (self.table.positions(), self.table.epoch())
    }

    /// Live keys of `db` matching `pattern` at positions `range`, walked from the top down.
    pub(crate) fn collect_keys(
        &self,
        db: u8,
        range: std::ops::Range<usize>,
        pattern: Option<&[u8]>,
        now_ms: u64,
        out: &mut Vec<Vec<u8>>,
    ) {
        let end = range.end.min(self.table.positions());
        for pos in (range.start.min(end)..end).rev() {
            let Some(e) = self.table.at(pos) else {
                continue;
            };
            if e.db() != db || e.expire_at().is_some_and(|at| now_ms > at) {
                continue;
            }
            if pattern.is_none_or(|p| crate::glob::glob_match(p, e.key())) {
                out.push(e.key().to_vec());
            }
        }
    }

    /// A uniformly random live key of `db` in this shard.
    pub(crate) fn random_key(&mut self, db: u8, now_ms: u64) -> Option<Vec<u8>> {
        for _ in 0..100 {
            if self.keys_in_db(db) == 0 {
                return None;
            }
            let pos = self.random_position_of_db(db)?;
            let e = self.entry(pos);
            if e.expire_at().is_some_and(|at| now_ms > at) {
                self.remove_at(pos);
                self.expired += 1;
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
        self.clock += 1;
        self.clock as u32
    }

    #[inline]
    fn idle_of(&self, e: Entry) -> u64 {
        (self.clock as u32).wrapping_sub(e.atime()) as u64
    }

    fn index_bytes(&self) -> u64 {
        self.table.heap_bytes()
            + self.volatile.capacity() as u64 * std::mem::size_of::<Entry>() as u64
    }

    fn publish(&self) {
        self.published_used.0.store(self.used(), Ordering::Relaxed);
    }

    #[inline]
    fn entry(&self, pos: usize) -> Entry {
        self.table.at(pos).expect("position is occupied")
    }

    /// The position of a pooled eviction candidate (database byte + key), if indexed.
    fn find_pooled(table: &Table, id: &PoolKey) -> Option<usize> {
        let (db, key) = (id[0], &id[1..]);
        table.find(db_hash(key_hash(key), db), |e| {
            e.db() == db && e.key() == key
        })
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
    fn find_live_pos(
        &mut self,
        db: u8,
        key: &[u8],
        h: u64,
        now_ms: u64,
    ) -> Result<usize, Option<usize>> {
        let pos = self
            .table
            .find_or_vacancy(h, |e| e.db() == db && e.key() == key)?;
        if self.entry(pos).expire_at().is_some_and(|at| now_ms > at) {
            self.remove_at(pos);
            self.expired += 1;
            self.publish();
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

    /// Inserts an absent key; `vacancy` is where the failed lookup ended (see
    /// [`Table::find_or_vacancy`]).
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
    ) {
        let ttl = expire.map(|at| (at, self.volatile.len() as u32));
        let e = Entry::new(db, key, value, ttl, now);
        self.entry_bytes += e.usable_size() as u64;
        if ttl.is_some() {
            self.volatile.push(e);
            self.expires_per_db[db as usize] += 1;
        }
        self.keys_per_db[db as usize] += 1;
        self.table.insert_at_vacancy(h, e, vacancy, &entry_hash);
    }

    /// Replaces the value (and maybe the TTL) of the entry at `pos`.
    fn replace(&mut self, pos: usize, value: &[u8], ttl: SetTtl, now: u32) {
        let e = self.entry(pos);
        let had_ttl = e.has_ttl();
        let new_expire = match ttl {
            SetTtl::Clear => None,
            SetTtl::Keep => e.expire_at(),
            SetTtl::At(at) => Some(at),
        };
        if new_expire.is_some() == had_ttl && e.fits_in_place(value.len()) {
            // Same layout and it fits: overwrite in place, no allocation.
            e.overwrite_value(value);
            e.set_atime(now);
            if let Some(at) = new_expire {
                e.set_expire_at(at);
            }
            return;
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
        let fresh = Entry::new(e.db(), e.key(), value, new_expire.zip(vol_idx), now);
        self.swap_allocation(pos, e, fresh);
    }

    /// Copies the entry at `pos` into a block with (`Some`) or without a TTL block.
    fn reallocate(&mut self, pos: usize, ttl: Option<(u64, u32)>) {
        let e = self.entry(pos);
        let fresh = e.with_ttl(ttl);
        self.swap_allocation(pos, e, fresh);
    }

    /// Puts `fresh` where `old` was (index and volatile list) and frees `old`.
    fn swap_allocation(&mut self, pos: usize, old: Entry, fresh: Entry) {
        if fresh.has_ttl() {
            self.volatile[fresh.volatile_index() as usize] = fresh;
        }
        self.table.replace(pos, fresh);
        self.entry_bytes += fresh.usable_size() as u64;
        self.entry_bytes -= old.usable_size() as u64;
        old.free();
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
        let e = self.table.remove(pos, &entry_hash);
        if e.has_ttl() {
            self.unlist_volatile(e);
        }
        self.keys_per_db[e.db() as usize] -= 1;
        self.entry_bytes -= e.usable_size() as u64;
        e.free();
    }

    fn random_position(&mut self) -> Option<usize> {
        self.table.random_occupied(&mut self.rng)
    }

    fn random_position_of_db(&mut self, db: u8) -> Option<usize> {
        // Rejection sampling is uniform over db's entries; fall back to a scan when db
        // holds a tiny share of this shard.
        for _ in 0..64 {
            let pos = self.random_position()?;
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
            Some(positions[self.rng.gen_range(0..positions.len())])
        }
    }

    /// Evicts until `incoming` more bytes fit in the shard's budget. Fails with OOM under
    /// noeviction or when the policy finds nothing it may evict.
    fn make_room(&mut self, incoming: u64) -> Result<(), WriteError> {
        let budget = self.config.shard_limit();
        if budget == 0 {
            return Ok(());
        }
        let limit = budget.saturating_sub(incoming);
        if self.used() <= limit {
            return Ok(());
        }
        let policy = self.config.policy();
        if policy == EvictionPolicy::NoEviction {
            return Err(WriteError::OutOfMemory);
        }
        if policy != self.pool_policy {
            self.pool.clear();
            self.pool_policy = policy;
        }
        let k = self.config.samples();
        while self.used() > limit {
            let victim = match policy {
                EvictionPolicy::NoEviction => None,
                EvictionPolicy::AllKeysRandom => self.random_position(),
                EvictionPolicy::VolatileRandom => (!self.volatile.is_empty()).then(|| {
                    let e = self.volatile[self.rng.gen_range(0..self.volatile.len())];
                    self.position_of(e)
                }),
                EvictionPolicy::AllKeysLru
                | EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileTtl => {
                    let mut candidates = Sampled {
                        table: &self.table,
                        volatile: &self.volatile,
                        clock: self.clock as u32,
                        from_volatile: policy.volatile_only(),
                        by_ttl: policy == EvictionPolicy::VolatileTtl,
                    };
                    select_victim_pooled(&mut self.pool, &mut candidates, k, &mut self.rng)
                        .and_then(|id| Self::find_pooled(&self.table, &id))
                }
            };
            match victim {
                Some(pos) => {
                    self.remove_at(pos);
                    self.evicted += 1;
                }
                None => {
                    self.publish();
                    return Err(WriteError::OutOfMemory);
                }
            }
        }
        self.publish();
        Ok(())
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        for e in self.table.entries() {
            e.free();
        }
        self.table.clear();
    }
}

/// The shard's entries seen as eviction candidates for [`augur_sim::policy`].
struct Sampled<'a> {
    table: &'a Table,
    volatile: &'a [Entry],
    clock: u32,
    from_volatile: bool,
    by_ttl: bool,
}

impl Candidates for Sampled<'_> {
    type Id = PoolKey;

    fn population(&self) -> usize {
        if self.from_volatile {
            self.volatile.len()
        } else {
            self.table.len()
        }
    }

    fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(PoolKey, u64)> {
        if self.population() == 0 {
            return None;
        }
        let e = if self.from_volatile {
            self.volatile[rng.gen_range(0..self.volatile.len())]
        } else {
            let pos = self.table.random_occupied(rng)?;
            self.table.at(pos)?
        };
        let score = if self.by_ttl {
            // Soonest expiry first: Redis uses ULLONG_MAX - expire as the "idle" score.
            u64::MAX - e.expire_at().unwrap_or(u64::MAX)
        } else {
            self.clock.wrapping_sub(e.atime()) as u64
        };
        Some((pool_key(e.db(), e.key()), score))
    }

    fn contains(&self, id: &PoolKey) -> bool {
        Shard::find_pooled(self.table, id)
            // Like Redis (which looks the key up in `db->expires` for volatile policies),
            // a candidate whose TTL was removed since it was pooled is no longer eligible.
            .is_some_and(|pos| {
                !self.from_volatile || self.table.at(pos).is_some_and(|e| e.has_ttl())
            })
    }
}

#[cfg(test)]
impl Shard {
    /// Checks every internal invariant; panics with a description if one is broken.
    pub(crate) fn check_invariants(&self) {
        let mut bytes = 0u64;
        let mut n = 0usize;
        let mut keys = vec![0u64; self.keys_per_db.len()];
        let mut expires = vec![0u64; self.keys_per_db.len()];
        for e in self.table.entries() {
            n += 1;
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
            bytes += e.usable_size() as u64;
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
        for &e in &self.volatile {
            assert!(e.has_ttl(), "volatile list names a persistent entry");
        }
        assert_eq!(self.volatile.len() as u64, expires.iter().sum::<u64>());
        assert_eq!(bytes, self.entry_bytes, "entry byte accounting");
        assert_eq!(keys, self.keys_per_db, "per-db key counts");
        assert_eq!(expires, self.expires_per_db, "per-db expire counts");
        assert_eq!(
            self.published_used.0.load(Ordering::Relaxed),
            self.used(),
            "published used"
        );
    }
}
