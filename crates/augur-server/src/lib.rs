//! Augur's network server: the Redis protocol (RESP2/RESP3 and inline commands),
//! connections, the string-command set, and configuration.
//!
//! Entry points: [`ServerConfig`] (defaults, config file, overrides), [`Server::bind`]
//! then [`Server::run`]. The keyspace itself is `augur-store`.

pub mod acl;
pub mod autopolicy;
pub mod blocking;
pub mod cmdtable;
pub mod commands;
pub mod config;
pub mod config_rewrite;
pub mod cpu_budget;
pub mod dlru;
pub mod gate;
pub mod geohash;
pub mod hll;
pub mod info;
pub mod latency;
pub mod long_double;
pub mod memstats;
pub mod metrics;
pub mod monitor;
pub mod notify;
pub mod obuf;
pub mod profiler;
pub mod pubsub;
mod redis_commands;
pub mod redis_docs;
pub mod resp;
pub mod scripting;
pub mod server;
pub mod slowlog;
pub mod state;
pub mod stats;
pub mod tenants;
pub mod tracking;

pub use config::{parse_memory, LogLevel, ServerConfig};
pub use server::{Server, ServerHandle};
