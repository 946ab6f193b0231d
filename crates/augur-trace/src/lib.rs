//! Cache traces for Augur: readers, a writer and seeded synthetic generators.
//!
//! Every trace, whatever its on-disk format, is turned into a stream of [`Request`]s.
//! Readers stream (constant memory) so that multi-gigabyte traces can be replayed or
//! modelled without loading them; [`load_all`] is a convenience for tests and for
//! tools that need random access.
//!
//! Supported formats ([`TraceFormat`]):
//! - libCacheSim **oracleGeneral** (24-byte little-endian records), plain or zstd;
//! - **CSV** with a column spec ([`CsvSpec`]);
//! - **plain text**, one key per line ([`TextSpec`]).
//!
//! Any of them may be zstd-compressed: compression is recognised by the zstd frame
//! magic number at the start of the file, not by the name, so `foo.csv.zst` and a
//! misnamed file both work.
//!
//! String keys (CSV and text traces) are mapped to `u64` with [`key_hash`] (FNV-1a 64),
//! which is stable across runs, platforms and versions of this crate.

use std::fmt;

mod csvfmt;
mod format;
mod oracle;
pub mod synth;
mod text;

pub use csvfmt::CsvReader;
pub use format::{open, open_auto, CsvSpec, KeyMode, TextSpec, TraceFormat, TraceReader};
pub use oracle::{
    next_access_vtimes, write_oracle_general, write_oracle_general_file, OracleReader,
    OracleRecord, ORACLE_RECORD_SIZE,
};
pub use text::TextReader;

/// The operation a request performs.
///
/// Traces without an operation column (oracleGeneral, text) are read as all-`Get`:
/// the replay and simulation convention is "GET, and fill (SET) on a miss".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Op {
    /// Read the key; a miss is filled by the client (look-aside cache).
    #[default]
    Get,
    /// Write the key unconditionally.
    Set,
    /// Remove the key.
    Delete,
}

impl Op {
    /// Parses an operation name, case-insensitively. Besides `get`/`set`/`delete` it
    /// accepts the common aliases found in public traces (`read`, `write`, `put`,
    /// `del`, `gets`, `add`, `replace`, `update`, `remove`), because those traces are
    /// what the CSV reader is for.
    pub fn parse(s: &str) -> Option<Op> {
        let s = s.trim();
        let eq = |a: &str| s.eq_ignore_ascii_case(a);
        if eq("get") || eq("gets") || eq("read") {
            Some(Op::Get)
        } else if eq("set")
            || eq("put")
            || eq("write")
            || eq("add")
            || eq("replace")
            || eq("update")
        {
            Some(Op::Set)
        } else if eq("delete") || eq("del") || eq("remove") {
            Some(Op::Delete)
        } else {
            None
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Get => "get",
            Op::Set => "set",
            Op::Delete => "delete",
        })
    }
}

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// Request time as recorded by the trace (its unit is the trace's own), or the
    /// request index when the trace has no time. Models use logical time (request
    /// counts), so this is informational.
    pub time: u64,
    /// Object id. String keys are hashed with [`key_hash`].
    pub key: u64,
    /// Object size in bytes.
    pub size: u32,
    /// What the request does.
    pub op: Op,
}

impl Request {
    /// A `Get` request, the only kind oracleGeneral traces hold.
    pub fn get(time: u64, key: u64, size: u32) -> Request {
        Request {
            time,
            key,
            size,
            op: Op::Get,
        }
    }
}

/// Hashes a string key to a `u64`: FNV-1a 64-bit over the key's bytes.
///
/// FNV-1a is chosen because it is fully specified (offset basis
/// `0xcbf29ce484222325`, prime `0x100000001b3`), so the mapping from a text trace to
/// ids never changes between runs, machines or library upgrades; its collision rate
/// for a few million keys (about n²/2⁶⁵) is negligible for cache modelling.
pub fn key_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Reads a whole trace into memory, detecting its format from the file name
/// (see [`TraceFormat::detect`]).
pub fn load_all(path: impl AsRef<std::path::Path>) -> anyhow::Result<Vec<Request>> {
    open_auto(path)?.collect()
}

/// Reads a whole trace of the given format into memory.
pub fn load(
    path: impl AsRef<std::path::Path>,
    format: &TraceFormat,
) -> anyhow::Result<Vec<Request>> {
    open(path, format)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Reference values from the FNV specification's test suite.
        assert_eq!(key_hash(b""), 0xcbf29ce484222325);
        assert_eq!(key_hash(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(key_hash(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn readers_can_move_between_threads() {
        // The simulator and replay client read traces on worker threads.
        fn send<T: Send>() {}
        send::<TraceReader>();
        send::<synth::Synth>();
    }

    #[test]
    fn op_parsing_is_case_insensitive() {
        assert_eq!(Op::parse("GET"), Some(Op::Get));
        assert_eq!(Op::parse(" Set "), Some(Op::Set));
        assert_eq!(Op::parse("DeLeTe"), Some(Op::Delete));
        assert_eq!(Op::parse("del"), Some(Op::Delete));
        assert_eq!(Op::parse("incr"), None);
        assert_eq!(Op::parse(""), None);
    }
}
