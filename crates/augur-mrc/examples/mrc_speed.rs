//! Speed and memory of the MRC models on one core, trace decoded in memory (kRedis
//! §6.8, Table 4): KRR backward vs linear update, KRR with spatial sampling and five K
//! in one pass, Olken. Prints figures; it asserts nothing (timings are noisy on a shared
//! machine: quote ratios from one run).
//!
//! Run: `cargo run --release -p augur-mrc --example mrc_speed -- [TRACE] [--prefix N]
//! [--reps N]` (default trace arc_p3, linear-update prefix 50000 requests, 3 reps).

use std::path::Path;
use std::time::Instant;

use augur_mrc::krr::{Krr, KrrConfig, UpdateMethod};
use augur_mrc::olken::Olken;
use augur_mrc::{curve::SizeUnit, MrcModel};

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Best of `reps` timings (seconds) of `f` over `trace`; returns the last model too.
fn time_model<M: MrcModel>(
    reps: usize,
    trace: &[(u64, u32)],
    mut make: impl FnMut() -> M,
) -> (f64, M) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..reps.max(1) {
        let mut m = make();
        let t = Instant::now();
        for &(k, s) in trace {
            m.access(k, s);
        }
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(m);
    }
    (best, last.expect("reps >= 1"))
}

fn main() {
    let mut name = "arc_p3".to_string();
    let mut prefix = 50_000usize;
    let mut reps = 3usize;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prefix" => prefix = it.next().expect("N").parse().expect("integer"),
            "--reps" => reps = it.next().expect("N").parse().expect("integer"),
            other => name = other.to_string(),
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(format!("{name}.oracleGeneral.bin.zst"));
    let trace: Vec<(u64, u32)> = augur_trace::load_all(&path)
        .expect("trace")
        .iter()
        .map(|r| (r.key, r.size))
        .collect();
    let n = trace.len();
    println!(
        "trace {name}: {n} requests in memory; VmHWM after load {} MiB",
        vm_hwm_kib() / 1024
    );

    // 1. KRR, spatial sampling R = 0.001, K = 1,2,4,8,16 in one pass.
    let (t, m) = time_model(reps, &trace, || {
        Krr::new(KrrConfig {
            rate: 0.001,
            ..KrrConfig::default()
        })
    });
    println!(
        "krr R=0.001 K=1,2,4,8,16: {:.3}s, {:.1}M requests/s; {} tracked objects, {} B model ({:.0} B/object)",
        t,
        n as f64 / t / 1e6,
        m.tracked_objects(),
        m.memory_bytes(),
        m.memory_bytes() as f64 / m.tracked_objects().max(1) as f64
    );
    let (t, m) = time_model(reps, &trace, || {
        Krr::new(KrrConfig {
            rate: 0.01,
            ..KrrConfig::default()
        })
    });
    println!(
        "krr R=0.01  K=1,2,4,8,16: {:.3}s, {:.1}M requests/s; {} tracked objects",
        t,
        n as f64 / t / 1e6,
        m.tracked_objects()
    );

    // 2. Olken, exact LRU, by objects and by bytes.
    for unit in [SizeUnit::Objects, SizeUnit::Bytes] {
        let (t, m) = time_model(reps, &trace, || Olken::new(unit));
        println!(
            "olken {unit:?}: {:.3}s, {:.2}M requests/s; {} objects, {} B model ({:.0} B/object), {} compactions",
            t,
            n as f64 / t / 1e6,
            m.len(),
            m.memory_bytes(),
            m.memory_bytes() as f64 / m.len().max(1) as f64,
            m.compactions()
        );
    }
    println!("VmHWM after olken {} MiB", vm_hwm_kib() / 1024);

    // 3. Backward (Alg. 1) vs linear update, one K = 5 stack (the paper's Table 4
    // setting), unsampled, on a prefix: the linear update is O(φ) per reference.
    let prefix = prefix.min(n);
    let head = &trace[..prefix];
    let cfg = |update| KrrConfig {
        ks: vec![5],
        update,
        ..KrrConfig::default()
    };
    let (tb, mb) = time_model(reps, head, || Krr::new(cfg(UpdateMethod::Backward)));
    let (tl, ml) = time_model(1, head, || Krr::new(cfg(UpdateMethod::Linear)));
    println!(
        "K=5 (K'={:.2}) on the first {prefix} requests ({} objects): backward {:.3}s ({:.0} swaps/ref), linear {:.3}s ({:.0} swaps/ref): backward is {:.0}x faster",
        mb.stacks()[0].k_effective(),
        mb.tracked_objects(),
        tb,
        mb.stacks()[0].swaps() as f64 / prefix as f64,
        tl,
        ml.stacks()[0].swaps() as f64 / prefix as f64,
        tl / tb
    );
    let (tf, mf) = time_model(1, &trace, || Krr::new(cfg(UpdateMethod::Backward)));
    println!(
        "K=5 backward, whole trace unsampled: {:.2}s, {:.2}M requests/s, {:.0} swaps/ref, {} B model ({:.0} B/object)",
        tf,
        n as f64 / tf / 1e6,
        mf.stacks()[0].swaps() as f64 / n as f64,
        mf.memory_bytes(),
        mf.memory_bytes() as f64 / mf.tracked_objects().max(1) as f64
    );
    println!("VmHWM at end {} MiB", vm_hwm_kib() / 1024);
}
