//! Where the tests find the real traces (included by each crate's tests with
//! `#[path = "../../../tests/support/traces.rs"] mod traces;`).
//!
//! The small traces the tests need ship in the repository (`tests/data/traces/`, with
//! their sources and licences in its README), so a fresh clone runs the suite. The four
//! large ones (arc_oltp, arc_p3, orm-busy, scarab-recs: 56 MB) do not; they are looked
//! up, in order, in `$AUGUR_TRACES`, then in `../shared/traces` next to the checkout (where
//! CI has them). A test that needs a large trace it cannot find says so on stderr and
//! returns without checking anything, unless `AUGUR_REQUIRE_TRACES=1`, in which case it
//! fails: CI sets that, so there the large-trace tests always run.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository's root, seen from the crate whose tests include this file.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn file_name(name: &str) -> String {
    format!("{name}.oracleGeneral.bin.zst")
}

/// The places searched, in order.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("AUGUR_TRACES") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(repo_root().join("tests/data/traces"));
    dirs.push(repo_root().join("../shared/traces"));
    dirs
}

/// The path of trace `name` (e.g. `lirs_cs`), if it is anywhere we look.
pub fn find(name: &str) -> Option<PathBuf> {
    search_dirs()
        .into_iter()
        .map(|d| d.join(file_name(name)))
        .find(|p| p.is_file())
}

/// The path of trace `name`; panics with where it was looked for. For the traces that
/// ship in `tests/data/traces`, and after [`available`] said yes.
pub fn path(name: &str) -> PathBuf {
    find(name).unwrap_or_else(|| {
        panic!(
            "trace {} not found in {:?}; the large traces come from the sources listed in \
             tests/data/traces/README.md (set AUGUR_TRACES to their folder)",
            file_name(name),
            search_dirs()
        )
    })
}

/// Whether every trace in `names` can be found. When one cannot, prints which and why the
/// calling test checks nothing, and answers false; with `AUGUR_REQUIRE_TRACES=1` it
/// panics instead, so that CI never skips.
pub fn available(names: &[&str]) -> bool {
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| find(n).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let required = std::env::var("AUGUR_REQUIRE_TRACES").is_ok_and(|v| v == "1");
    let msg = format!(
        "large trace(s) {missing:?} not found in {:?} (see tests/data/traces/README.md; \
         set AUGUR_TRACES)",
        search_dirs()
    );
    if required {
        panic!("AUGUR_REQUIRE_TRACES=1: {msg}");
    }
    eprintln!("SKIPPED, checks nothing: {msg}");
    false
}
