//! `augur sim` on a CSV trace with GET, SET and DELETE operations: a DELETE removes
//! the key from the simulated cache (its next GET misses) and is not a request.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The trace, header first. With `delete`, key 1 is deleted before its third GET.
fn trace_csv(delete: bool) -> String {
    let mut s = String::from("op,key,size\nGET,1,10\nget,2,20\nget,1,10\n");
    if delete {
        s.push_str("DELETE,1,\n");
    }
    s.push_str("get,1,10\nset,2,20\nget,3,30\nget,1,10\n");
    s
}

fn write_trace(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("augur-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

/// Runs `augur sim --json` with LRU at 2 objects and at 100 % of the working set;
/// returns `(size, requests, hits)` per row and stderr.
fn sim(path: &PathBuf) -> (Vec<(u64, u64, u64)>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_augur"))
        .arg("sim")
        .arg(path)
        .args([
            "--format",
            "csv:op=0,key=1,size=2,header",
            "--policy",
            "lru",
            "--sizes",
            "2,100%",
            "--json",
        ])
        .output()
        .expect("running augur sim");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "augur sim failed: {stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let rows = v
        .as_array()
        .expect("an array of results")
        .iter()
        .map(|r| {
            let u = |f: &str| r[f].as_u64().unwrap_or_else(|| panic!("{f} in {r}"));
            (u("size"), u("requests"), u("hits"))
        })
        .collect();
    (rows, stderr)
}

#[test]
fn sim_honours_deletes_in_a_csv_trace() {
    let with = write_trace("with_delete.csv", &trace_csv(true));
    let without = write_trace("without_delete.csv", &trace_csv(false));

    // LRU, 2 objects: g1 miss, g2 miss, g1 hit, del 1, g1 miss (deleted), s2 hit,
    // g3 miss (evicts 1), g1 miss: 2 hits in 7 requests (the DELETE is not one).
    // At the working set (3 objects) only first uses and the re-GET of 1 miss: 3 hits.
    let (rows, stderr) = sim(&with);
    assert_eq!(rows, vec![(2, 7, 2), (3, 7, 3)], "stderr: {stderr}");
    assert!(
        stderr.contains("trace has 1 DELETE requests"),
        "stderr: {stderr}"
    );

    // Without the DELETE: g1 m, g2 m, g1 h, g1 h, s2 h, g3 m (evicts 1), g1 m: 3 hits;
    // at the working set only the 3 first uses miss: 4 hits.
    let (rows, stderr) = sim(&without);
    assert_eq!(rows, vec![(2, 7, 3), (3, 7, 4)], "stderr: {stderr}");
    assert!(!stderr.contains("DELETE"), "stderr: {stderr}");
}

/// `--policy auto` on a real trace: one row labelled `auto` per size, with its decision
/// intervals, switches and final policy, next to the fixed policies of the same run;
/// the same seed gives the same result.
#[test]
fn sim_runs_the_auto_chooser() {
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/traces/lirs_sprite.oracleGeneral.bin.zst");
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_augur"))
            .arg("sim")
            .arg(&trace)
            .args(["--policy", "auto,lhd", "--sizes", "25%", "--json"])
            .output()
            .expect("running augur sim");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "augur sim failed: {stderr}");
        assert!(stderr.contains("auto: miniature sample rate"), "{stderr}");
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON output")
    };
    let v = run();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let auto = &rows[0];
    assert_eq!(auto["policy"], "auto");
    assert_eq!(rows[1]["policy"], "lhd:64");
    assert_eq!(auto["size"], rows[1]["size"]);
    assert_eq!(auto["requests"], rows[1]["requests"]);
    assert_eq!(auto["intervals"].as_u64(), Some(10));
    let last = auto["final_policy"].as_str().unwrap();
    assert!(
        last.starts_with("redis-lru:") || last.starts_with("lhd:"),
        "{last}"
    );
    assert!(auto["switches"].as_u64().is_some());
    let mr = auto["miss_ratio"].as_f64().unwrap();
    assert!(mr > 0.0 && mr < 1.0, "{auto}");
    let again = run();
    for f in ["hits", "switches", "final_policy"] {
        assert_eq!(again[0][f], auto[f], "{f}");
    }
}

/// Runs `augur sim --json` with `args`; returns the rows.
fn sim_rows(trace: &PathBuf, args: &[&str]) -> (Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_augur"))
        .arg("sim")
        .arg(trace)
        .args(args)
        .arg("--json")
        .output()
        .expect("running augur sim");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "augur sim failed: {stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    (v.as_array().expect("an array").clone(), stderr)
}

/// With absolute sizes and one simulation (or one thread) `augur sim` streams the trace
/// instead of loading it: every policy's hits and byte counts equal those of the same
/// simulation over the loaded trace (a percentage forces loading), on the decoder-thread
/// path (one job) and the inline one (`--threads 1`, several jobs); the working set is
/// then not counted.
#[test]
fn streamed_simulation_equals_the_loaded_one() {
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/traces/lirs_sprite.oracleGeneral.bin.zst");
    let policies = "lru,klru:5,redis-lru:5,lhd:16,s3fifo";
    let (loaded, stderr) = sim_rows(&trace, &["--policy", policies, "--sizes", "700,1%"]);
    assert!(stderr.contains("objects"), "loaded: {stderr}");
    let loaded: Vec<&Value> = loaded.iter().filter(|r| r["size"] == 700).collect();
    assert_eq!(loaded.len(), 5);
    let key = |r: &Value| {
        (
            r["policy"].as_str().unwrap().to_string(),
            r["requests"].as_u64().unwrap(),
            r["hits"].as_u64().unwrap(),
            r["byte_miss_ratio"].as_f64().unwrap().to_bits(),
        )
    };

    let (inline, stderr) = sim_rows(
        &trace,
        &["--policy", policies, "--sizes", "700", "--threads", "1"],
    );
    assert!(stderr.contains("streamed"), "inline: {stderr}");
    assert_eq!(
        inline.iter().map(key).collect::<Vec<_>>(),
        loaded.iter().map(|r| key(r)).collect::<Vec<_>>()
    );
    assert!(inline
        .iter()
        .all(|r| r.get("ws_fraction") == Some(&Value::Null)));

    for (i, policy) in policies.split(',').enumerate() {
        let (one, stderr) = sim_rows(&trace, &["--policy", policy, "--sizes", "700"]);
        assert!(stderr.contains("streamed"), "{policy}: {stderr}");
        assert_eq!(key(&one[0]), key(loaded[i]), "{policy}");
    }
}

/// A streamed CSV trace honours its DELETE as the loaded one does (2 hits in 7
/// requests at 2 objects: see `sim_honours_deletes_in_a_csv_trace`).
#[test]
fn streamed_simulation_honours_deletes() {
    let with = write_trace("streamed_with_delete.csv", &trace_csv(true));
    for threads in ["1", "2"] {
        let (rows, stderr) = sim_rows(
            &with,
            &[
                "--format",
                "csv:op=0,key=1,size=2,header",
                "--policy",
                "lru",
                "--sizes",
                "2",
                "--threads",
                threads,
            ],
        );
        assert!(stderr.contains("streamed"), "{stderr}");
        assert!(stderr.contains("trace has 1 DELETE requests"), "{stderr}");
        assert_eq!(rows[0]["requests"], 7, "{stderr}");
        assert_eq!(rows[0]["hits"], 2, "{stderr}");
    }
}
