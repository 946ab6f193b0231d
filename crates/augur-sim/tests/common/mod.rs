//! Test helpers: the shared real traces.

use std::path::{Path, PathBuf};

/// `/work/shared/traces` seen from this crate (CI has the same layout).
pub fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
}

/// Loads `traces/<name>.oracleGeneral.bin.zst` (all GETs) as `(key, size)` requests,
/// the simulators' input, with the augur-trace reader.
pub fn load_trace(name: &str) -> Vec<(u64, u32)> {
    let path = traces_dir().join(format!("{name}.oracleGeneral.bin.zst"));
    augur_trace::load_all(&path)
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
        .into_iter()
        .map(|r| {
            assert_eq!(r.op, augur_trace::Op::Get, "oracleGeneral holds GETs only");
            (r.key, r.size)
        })
        .collect()
}
