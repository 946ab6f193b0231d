//! Links the server's hot code together: `link/hot-functions.txt` (written by
//! `scripts/hot-functions.sh` from a callgrind run of `augur serve`) lists the functions
//! the server runs at start and on its request paths, and LLD's `--symbol-ordering-file`
//! places them first, contiguously.
//!
//! Why: the kernel maps a binary's pages 64 KB at a time around each page fault, so the
//! ~1.2 MB of functions the server runs, scattered through 7.8 MB of text, made 4.4 MB of
//! it resident (4.4 B per key at 1M keys); placed together they map 1.5 MB. Names the
//! binary no longer has (after a code, dependency or toolchain change) are skipped
//! silently; only the placement of what is missing suffers.
//!
//! Only where the linker is LLD: x86-64 Linux with rustc 1.90 or later, whose default
//! linker there is its own LLD. `AUGUR_SYMBOL_ORDERING=0` turns it off (a different
//! linker configured by hand).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=link/hot-functions.txt");
    println!("cargo:rerun-if-env-changed=AUGUR_SYMBOL_ORDERING");
    let wanted = std::env::var("AUGUR_SYMBOL_ORDERING").map_or(true, |v| v != "0");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !wanted || target != "x86_64-unknown-linux-gnu" || !rustc_links_with_lld() {
        return;
    }
    let order = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-functions.txt");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    // Relative relocations packed (DT_RELR, glibc 2.36+): a position-independent binary's
    // ~9,000 pointer fix-ups as 24-byte RELA entries were 218 KB that the loader reads
    // at every start, all of it resident; packed they take a few KB.
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}

/// Whether rustc is 1.90 or later (the release that made its bundled LLD the default
/// linker of x86_64-unknown-linux-gnu).
fn rustc_links_with_lld() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let mut parts = version
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
