//! `augur mrc --model krr --k-exponent`: the named exponents are the calibrated
//! constants of augur-mrc, a number is taken as is, and bad values are refused.

use std::process::{Command, Output};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/traces/lirs_cs.oracleGeneral.bin.zst"
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
