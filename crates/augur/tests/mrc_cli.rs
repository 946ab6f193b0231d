//! `augur mrc --model krr --k-exponent`: the named exponents are the calibrated
//! constants of augur-mrc, a number is taken as is, and bad values are refused.

use std::process::{Command, Output};

/// lirs_cs, shipped in tests/data/traces.
const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/traces/lirs_cs.oracleGeneral.bin.zst"
);

fn mrc(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(["mrc", TRACE, "--model", "krr", "--k", "4", "--points", "20"])
        .args(extra)
        .output()
        .expect("run augur")
}

fn curve(extra: &[&str]) -> String {
    let out = mrc(extra);
    assert!(
        out.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("model,k,size,miss_ratio\n"), "{csv}");
    assert_eq!(csv.lines().count(), 21, "{csv}");
    csv
}

#[test]
fn named_k_exponents_are_the_calibrated_constants() {
    let default = curve(&[]);
    assert_eq!(default, curve(&["--k-exponent", "klru"]));
    assert_eq!(default, curve(&["--k-exponent", "1.6"]));
    let redis = curve(&["--k-exponent", "redis"]);
    assert_eq!(redis, curve(&["--k-exponent", "2"]));
    let paper = curve(&["--k-exponent", "paper"]);
    assert_eq!(paper, curve(&["--k-exponent", "1.4"]));
    let raw = curve(&["--no-k-correction"]);
    // K = 4 gives different effective K for each, hence different curves.
    for (a, b) in [(&default, &redis), (&default, &paper), (&paper, &raw)] {
        assert_ne!(a, b);
    }
}

#[test]
fn bad_k_exponents_are_refused() {
    for bad in ["0", "-1", "abc", "NaN", "inf"] {
        let arg = format!("--k-exponent={bad}");
        let out = mrc(&[&arg]);
        assert!(!out.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("positive number"), "{bad}: {err}");
    }
    let out = mrc(&["--k-exponent", "1.5", "--no-k-correction"]);
    assert!(!out.status.success());
}

/// A CSV trace with a DELETE, read with `--format`: the deleted key's next GET is a
/// cold miss for the model (Olken) and for the simulator alike, and the DELETE is not a
/// request. By hand: 7 references, 4 of them cold (keys 1, 2, 3, and key 1 after its
/// delete); the reuses are at stack distances 2, 2 and 3, so the miss ratio is 1, 5/7
/// and 4/7 at 1, 2 and 3 objects.
#[test]
fn mrc_and_mrc_compare_honour_deletes_read_with_format() {
    let dir = std::env::temp_dir().join(format!("augur-mrc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ops.csv");
    std::fs::write(
        &path,
        "op,key,size\nget,1,10\nget,2,20\nget,1,10\ndelete,1,\nget,1,10\nget,2,20\nget,3,30\nget,1,10\n",
    )
    .unwrap();
    // `augur COMMAND ops.csv --format ... --model olken EXTRA...`: its stdout.
    let olken = |command: &str, extra: [&str; 2]| {
        let out = Command::new(env!("CARGO_BIN_EXE_augur"))
            .arg(command)
            .arg(&path)
            .args([
                "--format",
                "csv:op=0,key=1,size=2,header",
                "--model",
                "olken",
            ])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{command}: {err}");
        if command == "mrc" {
            assert!(err.contains("8 requests (1 of them DELETEs)"), "{err}");
        }
        String::from_utf8(out.stdout).unwrap()
    };
    let csv = olken("mrc", ["--points", "3"]);
    let mr: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    let want = [1.0, 5.0 / 7.0, 4.0 / 7.0];
    for (m, w) in mr.iter().zip(want) {
        assert!((m - w).abs() < 1e-5, "{csv}");
    }
    let text = olken("mrc-compare", ["--sizes", "3"]);
    assert!(text.contains("7 requests (+1 DELETEs)"), "{text}");
    assert!(text.contains("mean MAE vs lru: 0.00000"), "{text}");
}

/// `--model mimir` takes its bucket count, aging policy and ghost filters from the
/// command line; each changes the curve, and impossible values are refused.
#[test]
fn mimir_options_change_the_model() {
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_augur"))
            .args(["mrc", TRACE, "--model", "mimir", "--points", "20"])
            .args(extra)
            .output()
            .expect("run augur")
    };
    let ok = |extra: &[&str]| {
        let out = run(extra);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let default = ok(&[]);
    assert!(
        default
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("mimir-rounder,"),
        "{default}"
    );
    let stacker = ok(&["--aging", "stacker", "--buckets", "128"]);
    assert!(
        stacker
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("mimir-stacker,"),
        "{stacker}"
    );
    let filters = ok(&["--ghost-filters", "3"]);
    assert_ne!(default, ok(&["--buckets", "8"]));
    assert_ne!(default, filters);
    for bad in [
        &["--buckets", "1"][..],
        &["--ghost-filters", "0"],
        &["--aging", "lru"],
    ] {
        assert!(!run(bad).status.success(), "{bad:?} accepted");
    }
}

/// `augur mrc-compare --model minisim --policy lhd,lru`: each policy's miniature curve is
/// compared with the full simulation of the same policy; at R = 1 the "miniature" is the
/// full cache with the same seed, so every MAE is exactly 0 (and the curves differ from
/// each other: LHD is not LRU on cloudphysics).
#[test]
fn minisim_runs_the_named_policies_and_equals_full_simulation_at_rate_one() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/traces/cloudphysics.oracleGeneral.bin.zst"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(["mrc-compare", trace, "--model", "minisim"])
        .args([
            "--policy", "lhd,lru", "--rate", "1", "--sizes", "8", "--json",
        ])
        .output()
        .expect("run augur");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["model"].as_str().unwrap(),
                r["simulator"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [("minisim-lhd:64", "lhd:64"), ("minisim-lru", "lru")]
    );
    for r in rows {
        assert_eq!(r["mae"].as_f64(), Some(0.0), "{r}");
    }
    assert_ne!(rows[0]["sim_at"], rows[1]["sim_at"]);
}
