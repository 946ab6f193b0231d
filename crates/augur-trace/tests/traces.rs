//! Every shared trace loads, with the request and object counts of traces/README.md,
//! and its stored next_access_vtime agrees with our writer's computation.

use std::collections::HashSet;
use std::path::PathBuf;

use augur_trace::{load_all, next_access_vtimes, open, OracleReader, OracleRecord, TraceFormat};

#[path = "../../../tests/support/traces.rs"]
mod traces;

fn trace(name: &str) -> PathBuf {
    traces::path(name)
}

/// Streams a trace and returns (requests, distinct objects).
fn counts(name: &str) -> (u64, usize) {
    let mut n = 0u64;
    let mut objects = HashSet::new();
    for r in open(trace(name), &TraceFormat::OracleGeneral).unwrap() {
        let r = r.unwrap();
        objects.insert(r.key);
        n += 1;
    }
    (n, objects.len())
}

fn check(name: &str, requests: u64, objects: usize) {
    assert_eq!(counts(name), (requests, objects), "{name}");
}

// LIRS traces: the README gives only the range over the nine files (6,015 - 133,996
// requests, 1,223 - 9,939 objects). The per-trace numbers below come from an
// independent Python `struct` decode of the files (not from this reader), and the
// test also checks that their extremes are exactly the README's range.
#[test]
fn lirs_traces_load_with_expected_counts() {
    let expected: [(&str, u64, usize); 9] = [
        ("lirs_2_pools", 100_000, 9_939),
        ("lirs_cpp", 9_047, 1_223),
        ("lirs_cs", 6_781, 1_409),
        ("lirs_gli", 6_015, 2_529),
        ("lirs_multi1", 15_858, 2_606),
        ("lirs_multi2", 26_311, 5_684),
        ("lirs_multi3", 30_241, 7_454),
        ("lirs_ps", 10_448, 3_083),
        ("lirs_sprite", 133_996, 7_075),
    ];
    assert_eq!(expected.iter().map(|e| e.1).min(), Some(6_015));
    assert_eq!(expected.iter().map(|e| e.1).max(), Some(133_996));
    assert_eq!(expected.iter().map(|e| e.2).min(), Some(1_223));
    assert_eq!(expected.iter().map(|e| e.2).max(), Some(9_939));
    for (name, r, o) in expected {
        check(name, r, o);
    }
}

#[test]
fn cloudphysics_loads() {
    check("cloudphysics", 113_872, 48_974);
    // The only trace with real sizes: 512 B .. 68 KiB.
    let reqs = load_all(trace("cloudphysics")).unwrap();
    let (min, max) = reqs
        .iter()
        .fold((u32::MAX, 0), |(a, b), r| (a.min(r.size), b.max(r.size)));
    assert!(min >= 512 && max <= 68 * 1024, "sizes {min}..{max}");
}

#[test]
fn arc_oltp_loads() {
    if !traces::available(&["arc_oltp"]) {
        return;
    }
    check("arc_oltp", 914_145, 186_880);
}

#[test]
fn scarab_recs_loads() {
    if !traces::available(&["scarab-recs"]) {
        return;
    }
    check("scarab-recs", 1_245_184, 258_368);
}

// The two biggest traces (8.9M requests together) stream in about 2 s in the test
// profile, so they run by default too.
#[test]
fn arc_p3_loads() {
    if !traces::available(&["arc_p3"]) {
        return;
    }
    check("arc_p3", 3_912_296, 762_543);
}

#[test]
fn orm_busy_loads() {
    if !traces::available(&["orm-busy"]) {
        return;
    }
    check("orm-busy", 5_000_000, 76_349);
}

#[test]
fn stored_next_access_vtime_matches_our_computation() {
    for name in ["lirs_cpp", "lirs_2_pools", "cloudphysics"] {
        let dec =
            zstd::stream::read::Decoder::new(std::fs::File::open(trace(name)).unwrap()).unwrap();
        let recs: Vec<OracleRecord> = {
            let mut r = OracleReader::new(dec);
            std::iter::from_fn(move || r.next_record())
                .collect::<anyhow::Result<_>>()
                .unwrap()
        };
        let reqs: Vec<_> = recs.iter().map(OracleRecord::request).collect();
        let ours = next_access_vtimes(&reqs);
        let stored: Vec<i64> = recs.iter().map(|r| r.next_access_vtime).collect();
        assert_eq!(ours, stored, "{name}");
    }
}

#[test]
fn truncated_real_trace_reports_an_error() {
    let dir = std::env::temp_dir().join(format!("augur-trace-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let reqs = load_all(trace("lirs_cs")).unwrap();
    let path = dir.join("cut.oracleGeneral.bin");
    augur_trace::write_oracle_general_file(&path, &reqs).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 10).unwrap();
    drop(f);
    let err = load_all(&path).unwrap_err().to_string();
    assert!(
        err.contains("truncated") && err.contains("14 trailing bytes"),
        "{err}"
    );
    // The plain file advertises its length for progress bars.
    let r = augur_trace::open_auto(&path).unwrap();
    assert_eq!(r.len_hint(), Some(reqs.len() as u64 - 1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Decoding on a second thread hands over every request in order (more than one batch),
/// reports a truncated file as the serial reader does after the requests before it, and
/// stops the decoder when the consumer fails.
#[test]
fn batches_decoded_ahead_are_the_trace_in_order() {
    let path = trace("cloudphysics");
    let serial = load_all(&path).unwrap();
    let mut got = Vec::new();
    let mut batches = 0;
    augur_trace::open_auto(&path)
        .unwrap()
        .for_each_batch(|b| {
            batches += 1;
            got.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
    assert!(batches > 1, "one batch only");
    assert_eq!(got, serial);

    let dir = std::env::temp_dir().join(format!("augur-trace-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.oracleGeneral.bin");
    augur_trace::write_oracle_general_file(&cut, &serial).unwrap();
    let len = std::fs::metadata(&cut).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&cut).unwrap();
    f.set_len(len - 10).unwrap();
    drop(f);
    let mut seen = 0usize;
    let err = augur_trace::open_auto(&cut)
        .unwrap()
        .for_each_batch(|b| {
            seen += b.len();
            Ok(())
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("truncated"), "{err}");
    assert_eq!(seen, serial.len() - 1);
    std::fs::remove_dir_all(&dir).unwrap();

    let mut calls = 0;
    let err = augur_trace::open_auto(&path)
        .unwrap()
        .for_each_batch(|_| {
            calls += 1;
            anyhow::bail!("consumer gave up")
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "consumer gave up");
    assert_eq!(calls, 1);
}

/// A zstd trace written by the `zstd` tool records its content size, so the offline tools
/// can show a total and an ETA without a first pass (the shipped traces all do).
#[test]
fn compressed_traces_advertise_their_length() {
    for (name, requests) in [("lirs_cs", 6_781u64), ("cloudphysics", 113_872)] {
        let r = augur_trace::open_auto(trace(name)).unwrap();
        assert_eq!(r.len_hint(), Some(requests), "{name}");
    }
    // A stream compressed without a known size (as from a pipe) has no hint, and still
    // reads.
    let dir = std::env::temp_dir().join(format!("augur-trace-nohint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let reqs = load_all(trace("lirs_cs")).unwrap();
    let plain = dir.join("t.oracleGeneral.bin");
    augur_trace::write_oracle_general_file(&plain, &reqs).unwrap();
    let bytes = std::fs::read(&plain).unwrap();
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    std::io::Write::write_all(&mut enc, &bytes).unwrap();
    let packed = dir.join("t.oracleGeneral.bin.zst");
    std::fs::write(&packed, enc.finish().unwrap()).unwrap();
    let r = augur_trace::open_auto(&packed).unwrap();
    assert_eq!(r.len_hint(), None);
    assert_eq!(r.count(), reqs.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small zstd trace of one single-segment frame is read and decompressed whole at
/// opening; a larger one, one of several frames, or a plain file streams; both give the
/// same requests; a compressed file cut
/// short or corrupted is an error either way, never a panic or a silent short trace.
#[test]
fn held_whole_or_streamed_the_requests_are_the_same() {
    let dir = std::env::temp_dir().join(format!("augur-trace-whole-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shipped = trace("lirs_sprite");
    let want = load_all(&shipped).unwrap();
    let read = |p: &std::path::Path| -> (bool, anyhow::Result<Vec<augur_trace::Request>>) {
        let r = augur_trace::open_auto(p).unwrap();
        (r.held_whole(), r.collect())
    };
    let (whole, got) = read(&shipped);
    assert!(whole, "a 0.6 MB trace is held whole");
    assert_eq!(got.unwrap(), want);

    // The same bytes in two zstd frames: streamed, the same requests.
    let plain = dir.join("t.oracleGeneral.bin");
    augur_trace::write_oracle_general_file(&plain, &want).unwrap();
    let bytes = std::fs::read(&plain).unwrap();
    let half = bytes.len() / 2;
    let mut two = zstd::bulk::compress(&bytes[..half], 3).unwrap();
    two.extend(zstd::bulk::compress(&bytes[half..], 3).unwrap());
    let framed = dir.join("two.oracleGeneral.bin.zst");
    std::fs::write(&framed, &two).unwrap();
    let (whole, got) = read(&framed);
    assert!(!whole, "two frames stream");
    assert_eq!(got.unwrap(), want);
    // The plain file streams.
    let (whole, got) = read(&plain);
    assert!(!whole);
    assert_eq!(got.unwrap(), want);
    // A frame whose window is smaller than its content (arc_oltp: 21 MB in an 8 MB
    // window) streams: holding it whole would fault in the whole content besides.
    let r = augur_trace::open_auto(trace("arc_oltp")).unwrap();
    assert!(!r.held_whole());

    // Cut short: the frame is incomplete, so it streams and fails at the cut.
    let one = zstd::bulk::compress(&bytes, 3).unwrap();
    let cut = dir.join("cut.oracleGeneral.bin.zst");
    std::fs::write(&cut, &one[..one.len() - 100]).unwrap();
    let (whole, got) = read(&cut);
    assert!(!whole);
    assert!(got.is_err(), "a cut frame read cleanly");
    // A flipped byte inside a frame with a checksum (as the `zstd` tool writes, and
    // every shipped trace has): a single-segment frame (40,000 records, within level 3's
    // 2 MB window) is reported at opening by the one-call decompression; a larger one,
    // streamed, when it is read.
    let flipped = |records: usize| {
        let data = &bytes[..records * 24];
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        enc.set_pledged_src_size(Some(data.len() as u64)).unwrap();
        std::io::Write::write_all(&mut enc, data).unwrap();
        let mut bad = enc.finish().unwrap();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x5a;
        let path = dir.join(format!("bad{records}.oracleGeneral.bin.zst"));
        std::fs::write(&path, &bad).unwrap();
        path
    };
    let err = augur_trace::open_auto(flipped(40_000))
        .err()
        .expect("a corrupt frame opened");
    assert!(format!("{err:#}").contains("decompressing"), "{err:#}");
    let r = augur_trace::open_auto(flipped(want.len())).unwrap();
    assert!(!r.held_whole());
    assert!(r.collect::<anyhow::Result<Vec<_>>>().is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
