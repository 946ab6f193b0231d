//! One shard of the keyspace: every database's entries whose key hashes here.
//!
//! # Data structures, and why
//!
//! - `slots: Vec<Entry>` is a dense array of all entries. Sampling for eviction picks a
//!   uniformly random index: O(1) and exactly uniform. Deleting swaps the last entry into
//!   the hole (swap-remove), so the array stays dense.
//!   Redis instead samples with `dictGetSomeKeys`/`dictGetRandomKey`: it picks a random
//!   *bucket* and walks its chain (or a run of consecutive buckets). Keys in long chains
//!   and keys after empty runs are picked with different probabilities, so Redis's
//!   "random" sample is biased towards some keys, and its cost depends on the table's
//!   fill. The dense array has neither problem.
//! - `index: HashTable<u32>` maps (db, key) to a slot number. It stores 4-byte slot
//!   numbers rather than pointers to keep the index at ~5 bytes per bucket.
//! - `volatile: Vec<u32>` lists the slots of entries with a TTL (each such entry stores
//!   its position in this list), so volatile-* eviction and the active expiry cycle also
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
//! As Redis (`performEvictions`): before a write, if the shard is over its budget, evict
//! until it is not (the write may then overshoot by its own size, as in Redis); if
//! nothing can be evicted the write fails with OOM. The victim choice is
//! [`augur_sim::policy`]'s code, the same code the offline simulator runs.

use crate::entry::{Entry, MAX_LEN};
use crate::store::{key_hash, SharedConfig};
use crate::EvictionPolicy;
use augur_sim::policy::{select_victim_pooled, Candidates, EvictionPool};
use hashbrown::HashTable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
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
/// copy of the key name in its pool for the same reason: slots move).
type PoolKey = Box<[u8]>;

fn pool_key(db: u8, key: &[u8]) -> PoolKey {
    let mut v = Vec::with_capacity(key.len() + 1);
    v.push(db);
    v.extend_from_slice(key);
    v.into_boxed_slice()
}

/// Mixes the database number into a key's hash so the same key in different databases
/// lands in different buckets.
#[inline]
fn db_hash(h: u64, db: u8) -> u64 {
    h ^ (db as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Bytes of index overhead charged per bucket of the hash table (4-byte slot + 1 control byte).
const INDEX_BUCKET_BYTES: u64 = 5;

pub struct Shard {
    config: Arc<SharedConfig>,
    index: HashTable<u32>,
    slots: Vec<Entry>,
    volatile: Vec<u32>,
    clock: u64,
    /// Sum of the entries' usable sizes.
    entry_bytes: u64,
    /// `used()` published for lock-free reads by `Store::used_memory`.
    published_used: Arc<AtomicU64>,
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

impl Shard {
    pub(crate) fn new(
        config: Arc<SharedConfig>,
        published_used: Arc<AtomicU64>,
        seed: u64,
    ) -> Shard {
        let dbs = config.databases;
        let policy = config.policy();
        let s = Shard {
            config,
            index: HashTable::new(),
            slots: Vec::new(),
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
            Some(i) => {
                self.hits += 1;
                let e = &mut self.slots[i];
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
        let i = self.find_live(db, key, now_ms)?;
        Some(self.slots[i].value())
    }

    /// Information about a key without touching it (lazily expires it).
    pub fn info(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<EntryInfo> {
        let i = self.find_live(db, key, now_ms)?;
        let per_entry_index = self.index_bytes() / self.slots.len().max(1) as u64;
        let e = &self.slots[i];
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
        self.make_room()?;
        let now = self.tick();
        let h = db_hash(key_hash(key), db);
        match self.find_live_hashed(db, key, h, now_ms) {
            Some(i) => self.replace(i, value, ttl, now),
            None => {
                let expire = match ttl {
                    SetTtl::At(at) => Some(at),
                    SetTtl::Clear | SetTtl::Keep => None,
                };
                self.insert_new(db, key, value, expire, now, h);
            }
        }
        self.publish();
        Ok(())
    }

    /// Removes a key; true if it existed (and had not expired).
    pub fn delete(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        match self.find_live(db, key, now_ms) {
            Some(i) => {
                self.remove_slot(i);
                self.publish();
                true
            }
            None => false,
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
            Some(i) => {
                self.slots[i].set_atime(now);
                true
            }
            None => false,
        }
    }

    /// Sets (`Some(at_ms)`) or removes (`None`) a key's expiry time. Returns false if the
    /// key does not exist; for `None`, also false if it had no TTL (PERSIST's 0).
    /// An `at_ms` not in the future deletes the key (and still returns true), as Redis does.
    pub fn set_expire(&mut self, db: u8, key: &[u8], at_ms: Option<u64>, now_ms: u64) -> bool {
        let Some(i) = self.find_live(db, key, now_ms) else {
            return false;
        };
        match at_ms {
            Some(at) if at <= now_ms => {
                self.remove_slot(i);
                // Redis counts this as a deletion, not an expiry (no expired_keys bump).
            }
            Some(at) => self.set_slot_ttl(i, Some(at)),
            None => {
                if !self.slots[i].has_ttl() {
                    return false;
                }
                self.set_slot_ttl(i, None);
            }
        }
        self.publish();
        true
    }

    pub fn ttl(&mut self, db: u8, key: &[u8], now_ms: u64) -> TtlState {
        match self.find_live(db, key, now_ms) {
            None => TtlState::Missing,
            Some(i) => match self.slots[i].expire_at() {
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
        self.slots.len()
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
        let _ = self.make_room();
        self.publish();
    }

    /// Removes every entry of `db`.
    pub(crate) fn flush_db(&mut self, db: u8) {
        let mut i = self.slots.len();
        while i > 0 {
            i -= 1;
            // Swap-remove moves the last entry (already examined and kept) into `i`.
            if self.slots[i].db() == db {
                self.remove_slot(i);
            }
        }
        self.pool.retain(|k| k[0] != db);
        self.shrink_if_sparse();
        self.publish();
    }

    /// Removes everything and returns the memory to the allocator.
    pub(crate) fn flush_all(&mut self) {
        for e in self.slots.drain(..) {
            e.free();
        }
        self.index = HashTable::new();
        self.slots = Vec::new();
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
                let v = self.rng.gen_range(0..self.volatile.len());
                let slot = self.volatile[v] as usize;
                if self.slots[slot].expire_at().is_some_and(|at| now_ms > at) {
                    self.remove_slot(slot);
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
            self.shrink_if_sparse();
            self.publish();
        }
        removed
    }

    /// Keys of `db` matching `pattern` at slots `[from, to)` (to > from), walked from the
    /// top down; live keys only. Returns how many slots were examined.
    pub(crate) fn collect_keys(
        &self,
        db: u8,
        range: std::ops::Range<usize>,
        pattern: Option<&[u8]>,
        now_ms: u64,
        out: &mut Vec<Vec<u8>>,
    ) {
        let end = range.end.min(self.slots.len());
        for i in (range.start.min(end)..end).rev() {
            let e = &self.slots[i];
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
            let pos = self.random_slot_of_db(db)?;
            let e = &self.slots[pos];
            if e.expire_at().is_some_and(|at| now_ms > at) {
                self.remove_slot(pos);
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
    fn idle_of(&self, e: &Entry) -> u64 {
        (self.clock as u32).wrapping_sub(e.atime()) as u64
    }

    fn index_bytes(&self) -> u64 {
        let cap = self.index.capacity();
        // hashbrown keeps at most 7/8 of its buckets full (all but one below 8 buckets).
        let buckets = if cap == 0 {
            0
        } else if cap < 8 {
            cap + 1
        } else {
            cap / 7 * 8
        };
        buckets as u64 * INDEX_BUCKET_BYTES
            + self.slots.capacity() as u64 * std::mem::size_of::<Entry>() as u64
            + self.volatile.capacity() as u64 * 4
    }

    fn publish(&self) {
        self.published_used.store(self.used(), Ordering::Relaxed);
    }

    fn find_hashed(&self, db: u8, key: &[u8], h: u64) -> Option<usize> {
        let slots = &self.slots;
        self.index
            .find(h, |&i| {
                let e = &slots[i as usize];
                e.db() == db && e.key() == key
            })
            .map(|&i| i as usize)
    }

    /// The slot of a live (unexpired) key; an expired one is removed on the way.
    fn find_live(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<usize> {
        let h = db_hash(key_hash(key), db);
        self.find_live_hashed(db, key, h, now_ms)
    }

    fn find_live_hashed(&mut self, db: u8, key: &[u8], h: u64, now_ms: u64) -> Option<usize> {
        let i = self.find_hashed(db, key, h)?;
        if self.slots[i].expire_at().is_some_and(|at| now_ms > at) {
            self.remove_slot(i);
            self.expired += 1;
            self.publish();
            return None;
        }
        Some(i)
    }

    fn entry_hash(e: &Entry) -> u64 {
        db_hash(key_hash(e.key()), e.db())
    }

    fn insert_new(
        &mut self,
        db: u8,
        key: &[u8],
        value: &[u8],
        expire: Option<u64>,
        now: u32,
        h: u64,
    ) {
        let slot = self.slots.len() as u32;
        let ttl = expire.map(|at| (at, self.volatile.len() as u32));
        let e = Entry::new(db, key, value, ttl, now);
        self.entry_bytes += e.usable_size() as u64;
        self.slots.push(e);
        if ttl.is_some() {
            self.volatile.push(slot);
            self.expires_per_db[db as usize] += 1;
        }
        self.keys_per_db[db as usize] += 1;
        let slots = &self.slots;
        self.index
            .insert_unique(h, slot, |&i| Self::entry_hash(&slots[i as usize]));
    }

    /// Replaces the value (and maybe the TTL) of the entry in slot `i`.
    fn replace(&mut self, i: usize, value: &[u8], ttl: SetTtl, now: u32) {
        let had_ttl = self.slots[i].has_ttl();
        let want_ttl = match ttl {
            SetTtl::Clear => false,
            SetTtl::Keep => had_ttl,
            SetTtl::At(_) => true,
        };
        if want_ttl == had_ttl && self.slots[i].fits_in_place(value.len()) {
            // Same layout and it fits: overwrite in place, no allocation.
            let e = &mut self.slots[i];
            e.overwrite_value(value);
            e.set_atime(now);
            if let SetTtl::At(at) = ttl {
                e.set_expire_at(at);
            }
            return;
        }
        let old_expire = self.slots[i].expire_at();
        let new_ttl = match ttl {
            SetTtl::Clear => None,
            SetTtl::Keep => old_expire,
            SetTtl::At(at) => Some(at),
        };
        if had_ttl && new_ttl.is_none() {
            self.unlist_volatile(i);
        }
        let vol_idx = match (had_ttl, new_ttl.is_some()) {
            (true, true) => Some(self.slots[i].volatile_index()),
            (false, true) => {
                self.volatile.push(i as u32);
                self.expires_per_db[self.slots[i].db() as usize] += 1;
                Some(self.volatile.len() as u32 - 1)
            }
            _ => None,
        };
        let old = &self.slots[i];
        let fresh = Entry::new(old.db(), old.key(), value, new_ttl.zip(vol_idx), now);
        self.entry_bytes += fresh.usable_size() as u64;
        let old = std::mem::replace(&mut self.slots[i], fresh);
        self.entry_bytes -= old.usable_size() as u64;
        old.free();
    }

    /// Gives the entry in slot `i` a TTL (`Some`) or removes it (`None`).
    fn set_slot_ttl(&mut self, i: usize, at: Option<u64>) {
        match (self.slots[i].has_ttl(), at) {
            (true, Some(at)) => self.slots[i].set_expire_at(at),
            (true, None) => {
                self.unlist_volatile(i);
                self.reallocate_slot(i, None);
            }
            (false, Some(at)) => {
                self.volatile.push(i as u32);
                self.expires_per_db[self.slots[i].db() as usize] += 1;
                let v = self.volatile.len() as u32 - 1;
                self.reallocate_slot(i, Some((at, v)));
            }
            (false, None) => {}
        }
    }

    fn reallocate_slot(&mut self, i: usize, ttl: Option<(u64, u32)>) {
        let fresh = self.slots[i].with_ttl(ttl);
        self.entry_bytes += fresh.usable_size() as u64;
        let old = std::mem::replace(&mut self.slots[i], fresh);
        self.entry_bytes -= old.usable_size() as u64;
        old.free();
    }

    /// Takes slot `i` (which has a TTL) out of the volatile list.
    fn unlist_volatile(&mut self, i: usize) {
        let v = self.slots[i].volatile_index() as usize;
        self.volatile.swap_remove(v);
        if v < self.volatile.len() {
            let moved = self.volatile[v] as usize;
            self.slots[moved].set_volatile_index(v as u32);
        }
        self.expires_per_db[self.slots[i].db() as usize] -= 1;
    }

    /// Deletes the entry in slot `i`, keeping slots, index and volatile list consistent.
    fn remove_slot(&mut self, i: usize) {
        let h = Self::entry_hash(&self.slots[i]);
        match self.index.find_entry(h, |&s| s as usize == i) {
            Ok(occupied) => {
                occupied.remove();
            }
            Err(_) => unreachable!("every slot is indexed"),
        }
        if self.slots[i].has_ttl() {
            self.unlist_volatile(i);
        }
        let last = self.slots.len() - 1;
        let e = self.slots.swap_remove(i);
        self.keys_per_db[e.db() as usize] -= 1;
        self.entry_bytes -= e.usable_size() as u64;
        e.free();
        if i < last {
            // The former last entry now lives in slot i: repoint its index bucket and its
            // volatile-list entry.
            let moved = &self.slots[i];
            let mh = Self::entry_hash(moved);
            if let Some(bucket) = self.index.find_mut(mh, |&s| s as usize == last) {
                *bucket = i as u32;
            }
            if moved.has_ttl() {
                let v = moved.volatile_index() as usize;
                self.volatile[v] = i as u32;
            }
        }
        if self.slots.len() * 16 < self.slots.capacity() && self.slots.capacity() > 1024 {
            self.shrink_if_sparse();
        }
    }

    /// Returns memory after many deletions (Redis shrinks dicts below 10 % fill).
    fn shrink_if_sparse(&mut self) {
        let n = self.slots.len();
        if self.slots.capacity() > 64 && n * 4 < self.slots.capacity() {
            self.slots.shrink_to(n * 2);
            self.volatile.shrink_to(self.volatile.len() * 2);
            let slots = &self.slots;
            self.index
                .shrink_to(n * 2, |&i| Self::entry_hash(&slots[i as usize]));
        }
    }

    fn random_slot_of_db(&mut self, db: u8) -> Option<usize> {
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        // Rejection sampling is uniform over db's entries; fall back to a scan when db
        // holds a tiny share of this shard.
        for _ in 0..64 {
            let i = self.rng.gen_range(0..n);
            if self.slots[i].db() == db {
                return Some(i);
            }
        }
        let positions: Vec<usize> = (0..n).filter(|&i| self.slots[i].db() == db).collect();
        if positions.is_empty() {
            None
        } else {
            Some(positions[self.rng.gen_range(0..positions.len())])
        }
    }

    /// Evicts until within the shard's budget. Fails with OOM under noeviction or when
    /// the policy finds nothing it may evict.
    fn make_room(&mut self) -> Result<(), WriteError> {
        let limit = self.config.shard_limit();
        if limit == 0 || self.used() <= limit {
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
                EvictionPolicy::AllKeysRandom => {
                    (!self.slots.is_empty()).then(|| self.rng.gen_range(0..self.slots.len()))
                }
                EvictionPolicy::VolatileRandom => (!self.volatile.is_empty())
                    .then(|| self.volatile[self.rng.gen_range(0..self.volatile.len())] as usize),
                EvictionPolicy::AllKeysLru
                | EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileTtl => {
                    let mut candidates = Sampled {
                        slots: &self.slots,
                        volatile: &self.volatile,
                        index: &self.index,
                        clock: self.clock as u32,
                        from_volatile: policy.volatile_only(),
                        by_ttl: policy == EvictionPolicy::VolatileTtl,
                    };
                    select_victim_pooled(&mut self.pool, &mut candidates, k, &mut self.rng)
                        .and_then(|id| {
                            self.find_hashed(id[0], &id[1..], db_hash(key_hash(&id[1..]), id[0]))
                        })
                }
            };
            match victim {
                Some(i) => {
                    self.remove_slot(i);
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
        for e in self.slots.drain(..) {
            e.free();
        }
    }
}

/// The shard's entries seen as eviction candidates for [`augur_sim::policy`].
struct Sampled<'a> {
    slots: &'a [Entry],
    volatile: &'a [u32],
    index: &'a HashTable<u32>,
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
            self.slots.len()
        }
    }

    fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(PoolKey, u64)> {
        let n = self.population();
        if n == 0 {
            return None;
        }
        let r = rng.gen_range(0..n);
        let slot = if self.from_volatile {
            self.volatile[r] as usize
        } else {
            r
        };
        let e = &self.slots[slot];
        let score = if self.by_ttl {
            // Soonest expiry first: Redis uses ULLONG_MAX - expire as the "idle" score.
            u64::MAX - e.expire_at().unwrap_or(u64::MAX)
        } else {
            self.clock.wrapping_sub(e.atime()) as u64
        };
        Some((pool_key(e.db(), e.key()), score))
    }

    fn contains(&self, id: &PoolKey) -> bool {
        let (db, key) = (id[0], &id[1..]);
        let h = db_hash(key_hash(key), db);
        self.index
            .find(h, |&i| {
                let e = &self.slots[i as usize];
                e.db() == db && e.key() == key
            })
            // Like Redis (which looks the key up in `db->expires` for volatile policies),
            // a candidate whose TTL was removed since it was pooled is no longer eligible.
            .is_some_and(|&i| !self.from_volatile || self.slots[i as usize].has_ttl())
    }
}

#[cfg(test)]
impl Shard {
    /// Checks every internal invariant; panics with a description if one is broken.
    pub(crate) fn check_invariants(&self) {
        assert_eq!(
            self.index.len(),
            self.slots.len(),
            "index and slots disagree in size"
        );
        let mut bytes = 0u64;
        let mut keys = vec![0u64; self.keys_per_db.len()];
        let mut expires = vec![0u64; self.keys_per_db.len()];
        for (i, e) in self.slots.iter().enumerate() {
            assert_eq!(
                self.find_hashed(e.db(), e.key(), Self::entry_hash(e)),
                Some(i),
                "slot {i} not indexed"
            );
            bytes += e.usable_size() as u64;
            keys[e.db() as usize] += 1;
            if e.has_ttl() {
                expires[e.db() as usize] += 1;
                assert_eq!(
                    self.volatile[e.volatile_index() as usize] as usize,
                    i,
                    "volatile back-pointer"
                );
            }
        }
        for &s in &self.volatile {
            assert!(
                self.slots[s as usize].has_ttl(),
                "volatile list names a persistent slot"
            );
        }
        assert_eq!(self.volatile.len() as u64, expires.iter().sum::<u64>());
        assert_eq!(bytes, self.entry_bytes, "entry byte accounting");
        assert_eq!(keys, self.keys_per_db, "per-db key counts");
        assert_eq!(expires, self.expires_per_db, "per-db expire counts");
        assert_eq!(
            self.published_used.load(Ordering::Relaxed),
            self.used(),
            "published used"
        );
    }
}
