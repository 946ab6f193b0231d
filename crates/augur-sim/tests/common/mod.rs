//! Test helpers: the shared real traces.

#[path = "../../../../tests/support/traces.rs"]
pub mod traces;

/// Loads `traces/<name>.oracleGeneral.bin.zst` (all GETs) as `(key, size)` requests,
/// the simulators' input, with the augur-trace reader.
pub fn load_trace(name: &str) -> Vec<(u64, u32)> {
    let path = traces::path(name);
    augur_trace::load_all(&path)
        .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
        .into_iter()
        .map(|r| {
            assert_eq!(r.op, augur_trace::Op::Get, "oracleGeneral holds GETs only");
            (r.key, r.size)
        })
        .collect()
}
