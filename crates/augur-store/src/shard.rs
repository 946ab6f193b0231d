//! One shard of the keyspace. (API contract first; implementation follows.)

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

pub struct Shard {
    _todo: (),
}

impl Shard {
    /// Reads a value: lazily expires it, counts a keyspace hit or miss, and makes the key
    /// most recently used. The slice is valid while the shard stays locked.
    pub fn get(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<&[u8]> {
        let _ = (db, key, now_ms);
        todo!()
    }

    /// Reads a value without counting stats or touching recency (lazily expires it).
    pub fn peek(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<&[u8]> {
        let _ = (db, key, now_ms);
        todo!()
    }

    /// Information about a key without touching it (lazily expires it).
    pub fn info(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<EntryInfo> {
        let _ = (db, key, now_ms);
        todo!()
    }

    /// Inserts or replaces a value, then evicts (per the store's policy) until the shard
    /// is within its share of `maxmemory`. With noeviction, refuses with OutOfMemory when
    /// the store is already over its limit. Makes the key most recently used.
    pub fn set(&mut self, db: u8, key: &[u8], value: &[u8], ttl: SetTtl, now_ms: u64) -> Result<(), WriteError> {
        let _ = (db, key, value, ttl, now_ms);
        todo!()
    }

    /// Removes a key; true if it existed (and had not expired).
    pub fn delete(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        let _ = (db, key, now_ms);
        todo!()
    }

    /// Whether the key exists (lazily expires it; no stats, no touch).
    pub fn exists(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        let _ = (db, key, now_ms);
        todo!()
    }

    /// Makes the key most recently used; true if it exists (TOUCH).
    pub fn touch(&mut self, db: u8, key: &[u8], now_ms: u64) -> bool {
        let _ = (db, key, now_ms);
        todo!()
    }

    /// Sets (`Some(at_ms)`) or removes (`None`) a key's expiry time. Returns false if the
    /// key does not exist; for `None`, also false if it had no TTL (PERSIST's 0).
    /// An `at_ms` in the past deletes the key (and still returns true), as Redis does.
    pub fn set_expire(&mut self, db: u8, key: &[u8], at_ms: Option<u64>, now_ms: u64) -> bool {
        let _ = (db, key, at_ms, now_ms);
        todo!()
    }

    pub fn ttl(&mut self, db: u8, key: &[u8], now_ms: u64) -> TtlState {
        let _ = (db, key, now_ms);
        todo!()
    }
}
