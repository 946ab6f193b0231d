//! Augur's keyspace: a [`Store`] of independently locked [`Shard`]s, each holding the
//! entries of all databases whose key hashes to it.
//!
//! CONTRACT (used by augur-server): all key-level operations go through a locked
//! [`Shard`] (`store.lock_key(key)` or `store.lock_keys(&keys)` for multi-key commands);
//! wall-clock time for TTLs is passed in as `now_ms` (Unix milliseconds) so that tests can
//! drive time; logical time (for LRU idle) is counted by the shard itself in accesses.

mod policy_name;
mod shard;
mod store;

pub use policy_name::EvictionPolicy;
pub use shard::{EntryInfo, SetTtl, Shard, TtlState, WriteError};
pub use store::{glob_match, MultiLock, ScanPage, Store, StoreConfig, StoreStats};
