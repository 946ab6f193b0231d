//! Augur's keyspace: a [`Store`] of independently locked [`Shard`]s, each holding the
//! entries of all databases whose key hashes to it.
//!
//! All key-level operations go through a locked [`Shard`] (`store.lock_key(key)`, or
//! `store.lock_keys(&keys)` for multi-key commands). Wall-clock time for TTLs is passed in
//! as `now_ms` (Unix milliseconds) so tests can drive time; logical time (for LRU idle
//! times) is counted by each shard in accesses.

pub mod defrag;
mod entry;
mod glob;
mod index;
pub mod lazyfree;
mod lfu;
mod lhd;
mod list;
pub mod notify;
mod object;
mod policy_name;
mod s3fifo;
mod shard;
pub mod slab;
mod store;
pub mod stream;
mod tenant;
mod watch;
mod zone;
mod zset;
pub mod zzone;

/// Bytes of index tables held as page mappings outside jemalloc (INFO's allocator
/// figures add them to jemalloc's, as they add the entry slabs').
pub use index::mapped_bytes as index_mapped_bytes;

pub use glob::glob_match_nocase;
pub use lhd::{shard_config as lhd_shard_config, LhdStats, DEFAULT_LHD_SAMPLES};
pub use list::{End, List, ListIter, ListShape, DEFAULT_LIST_FILL};
pub use notify::{DbMap, KeyChangeSink, KeyEvent, KeyEventSink};
pub use object::{
    parse_canonical_i64, Hash, HashIter, Kind, Limits as EncodingLimits, Object, Set, SetIter,
};
pub use policy_name::EvictionPolicy;
pub use s3fifo::S3FifoStats;
pub use shard::{
    charged_bytes, Detached, EntryInfo, ObjectInfo, Relocated, Relocation, SetTtl, Shard, TtlState,
    Value, WriteError, WrongType, PROFILE_INDEX_BYTES,
};
pub use store::{
    glob_match, KeyLocation, MultiLock, ScanPage, Store, StoreConfig, StoreStats, TenantStats,
    MAX_LHD_SAMPLES,
};
pub use tenant::{
    mix64, sample_threshold, Ns, Partitioning, RefKind, Reference, ReferenceSink, TenantId,
    TenantLimits, MAX_TENANTS, SAMPLE_MODULUS,
};
pub use watch::WatchFlag;
pub use zone::{ZoneConfig, ZoneStats};
pub use zset::{LexBound, LexRange, ScoreRange, ZSet, ZSetIter};

#[cfg(test)]
mod object_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_defrag;
#[cfg(test)]
mod tests_keyops;
#[cfg(test)]
mod tests_lfu;
#[cfg(test)]
mod tests_lhd;
#[cfg(test)]
mod tests_s3fifo;
#[cfg(test)]
mod tests_zone;
