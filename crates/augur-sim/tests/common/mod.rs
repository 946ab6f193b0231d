//! Test helpers: the shared real traces.

use std::io::Read;
use std::path::{Path, PathBuf};

/// `/work/shared/traces` seen from this crate (CI has the same layout).
pub fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
}

/// Loads `traces/<name>.oracleGeneral.bin.zst` as `(key, size)` requests.
///
/// oracleGeneral: 24-byte little-endian records `u32 time, u64 obj_id, u32 obj_size,
/// i64 next_access_vtime` (traces/README.md); only key and size matter here.
pub fn load_trace(name: &str) -> Vec<(u64, u32)> {
    let path = traces_dir().join(format!("{name}.oracleGeneral.bin.zst"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut raw = Vec::new();
    zstd::Decoder::new(file)
        .and_then(|mut d| d.read_to_end(&mut raw))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(raw.len() % 24, 0, "{}: truncated record", path.display());
    raw.chunks_exact(24)
        .map(|r| {
            let key = u64::from_le_bytes(r[4..12].try_into().unwrap());
            let size = u32::from_le_bytes(r[12..16].try_into().unwrap());
            (key, size)
        })
        .collect()
}
