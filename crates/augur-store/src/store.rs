//! The store: shards, configuration, whole-keyspace operations. (API contract first.)

use crate::{EvictionPolicy, Shard};
use parking_lot::MutexGuard;

#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Number of independently locked shards (a power of two).
    pub shards: usize,
    /// Number of databases (SELECT 0..databases-1).
    pub databases: usize,
    /// Memory limit in bytes; 0 means no limit.
    pub maxmemory: u64,
    pub policy: EvictionPolicy,
    /// `maxmemory-samples` K.
    pub samples: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            shards: 16,
            databases: 16,
            maxmemory: 0,
            policy: EvictionPolicy::NoEviction,
            samples: 5,
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

/// One page of SCAN.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanPage {
    /// 0 when the iteration is complete.
    pub next_cursor: u64,
    pub keys: Vec<Vec<u8>>,
}

/// Several shards locked at once, in ascending shard order (no deadlock), for
/// multi-key commands (MSET, MSETNX, MGET, DEL, ...).
pub struct MultiLock<'a> {
    _todo: std::marker::PhantomData<&'a ()>,
}

impl MultiLock<'_> {
    /// The locked shard that holds `key` (which must be one of the keys locked).
    pub fn shard_for(&mut self, key: &[u8]) -> &mut Shard {
        let _ = key;
        todo!()
    }
}

pub struct Store {
    _todo: (),
}

impl Store {
    pub fn new(config: StoreConfig) -> Self {
        let _ = config;
        todo!()
    }

    pub fn databases(&self) -> usize {
        todo!()
    }

    /// Locks the shard holding `key`.
    pub fn lock_key(&self, key: &[u8]) -> MutexGuard<'_, Shard> {
        let _ = key;
        todo!()
    }

    /// Locks the shards holding all of `keys`, each once, in ascending order.
    pub fn lock_keys(&self, keys: &[&[u8]]) -> MultiLock<'_> {
        let _ = keys;
        todo!()
    }

    pub fn maxmemory(&self) -> u64 {
        todo!()
    }
    /// Takes effect at once: the next write evicts down to the new limit.
    pub fn set_maxmemory(&self, bytes: u64) {
        let _ = bytes;
        todo!()
    }
    pub fn policy(&self) -> EvictionPolicy {
        todo!()
    }
    pub fn set_policy(&self, policy: EvictionPolicy) {
        let _ = policy;
        todo!()
    }
    pub fn samples(&self) -> usize {
        todo!()
    }
    /// K in 1..=64.
    pub fn set_samples(&self, k: usize) {
        let _ = k;
        todo!()
    }

    /// Bytes charged to stored data: allocator usable sizes plus index overhead.
    pub fn used_memory(&self) -> u64 {
        todo!()
    }
    /// Whether a write must be refused (noeviction and over maxmemory). Write commands
    /// call this before doing anything, as Redis does for `denyoom` commands.
    pub fn over_limit_for_writes(&self) -> bool {
        todo!()
    }

    pub fn stats(&self) -> StoreStats {
        todo!()
    }
    /// CONFIG RESETSTAT: zero hits, misses, evicted and expired counters.
    pub fn reset_stats(&self) {
        todo!()
    }

    pub fn dbsize(&self, db: u8) -> u64 {
        let _ = db;
        todo!()
    }
    pub fn flushdb(&self, db: u8) {
        let _ = db;
        todo!()
    }
    pub fn flushall(&self) {
        todo!()
    }
    /// A uniformly random live key of `db`.
    pub fn random_key(&self, db: u8, now_ms: u64) -> Option<Vec<u8>> {
        let _ = (db, now_ms);
        todo!()
    }
    /// All live keys of `db` matching a glob `pattern` (Redis's glob syntax).
    pub fn keys(&self, db: u8, pattern: &[u8], now_ms: u64) -> Vec<Vec<u8>> {
        let _ = (db, pattern, now_ms);
        todo!()
    }
    /// SCAN: about `count` keys per call; every key present for the whole iteration is
    /// returned at least once.
    pub fn scan(&self, db: u8, cursor: u64, count: usize, pattern: Option<&[u8]>, now_ms: u64) -> ScanPage {
        let _ = (db, cursor, count, pattern, now_ms);
        todo!()
    }
    /// One active-expiry cycle (Redis's `activeExpireCycle`): samples keys with a TTL in
    /// each shard and deletes the expired ones, repeating while many were expired.
    /// Returns how many keys it removed. The server calls it 10 times a second.
    pub fn active_expire_cycle(&self, now_ms: u64) -> u64 {
        let _ = now_ms;
        todo!()
    }
}

/// Redis-style glob matching (`*`, `?`, `[abc]`, `[^a-z]`, `\x`), byte-wise.
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let _ = (pattern, text);
    todo!()
}
