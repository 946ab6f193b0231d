//! KRR against its references on real traces (kRedis paper §3.2, §6.3):
//! - the backward update (Alg. 1) and Mattson's linear update with Eq. 2 produce the
//!   same stack-distance distribution (two-sample Kolmogorov-Smirnov);
//! - KRR's curves match the K-LRU simulators of augur-sim (plain K-LRU, KRR Eq. 1, and
//!   Redis's pooled K-LRU) at 40 sizes up to the working set, by objects and by bytes.
//!
//! The long sweeps (all traces, spatial sampling on traces with >= 100k objects) are in
//! `examples/mrc_accuracy.rs`, run in release by `bench/mrc_accuracy.sh`.

use std::path::Path;

use augur_mrc::curve::{Curve, DistanceHistogram, Point, SizeUnit};
use augur_mrc::krr::{Krr, KrrConfig, SampleAdjust, UpdateMethod};
use augur_mrc::MrcModel;
use augur_sim::{simulate_sizes, working_set, PolicySpec, Unit};

const KS: [u32; 5] = [1, 2, 4, 8, 16];
const SIZES: u64 = 40;

#[path = "../../../tests/support/traces.rs"]
mod traces;

fn load(name: &str) -> Vec<(u64, u32)> {
    augur_trace::load_all(traces::path(name))
        .expect("trace")
        .iter()
        .map(|r| (r.key, r.size))
        .collect()
}

fn run(trace: &[(u64, u32)], cfg: KrrConfig) -> Krr {
    let mut m = Krr::new(cfg);
    for &(k, s) in trace {
        m.access(k, s);
    }
    m
}

/// Two-sample Kolmogorov-Smirnov statistic between two distance histograms of the same
/// bucket width (cold misses are the +inf bucket, common to both).
fn ks_statistic(a: &DistanceHistogram, b: &DistanceHistogram) -> f64 {
    assert_eq!(a.width(), b.width());
    let (na, nb) = (a.total() as f64, b.total() as f64);
    let len = a.counts().len().max(b.counts().len());
    let (mut ca, mut cb, mut d) = (0u64, 0u64, 0f64);
    for i in 0..len {
        ca += a.counts().get(i).copied().unwrap_or(0);
        cb += b.counts().get(i).copied().unwrap_or(0);
        d = d.max((ca as f64 / na - cb as f64 / nb).abs());
    }
    d
}

#[test]
fn backward_and_linear_updates_give_the_same_distance_distribution() {
    // lirs_multi2: 26k requests over 2.9k objects... big enough for the KS test, small
    // enough for the O(φ) linear update in the test profile.
    let trace = load("lirs_multi2");
    let cfg = |update, seed| KrrConfig {
        ks: vec![1, 4, 16],
        update,
        seed,
        ..KrrConfig::default()
    };
    let back = run(&trace, cfg(UpdateMethod::Backward, 1));
    let back2 = run(&trace, cfg(UpdateMethod::Backward, 2));
    let lin = run(&trace, cfg(UpdateMethod::Linear, 3));
    for i in 0..3 {
        let (hb, hb2, hl) = (
            back.stacks()[i].histogram(),
            back2.stacks()[i].histogram(),
            lin.stacks()[i].histogram(),
        );
        let n = hb.total() as f64;
        assert_eq!(hb.total(), hl.total());
        assert_eq!(hb.cold(), hl.cold());
        // KS critical value at alpha = 0.001 for two samples of size n: 1.949 sqrt(2/n).
        // References of one run are not independent draws, so this is a strict bar:
        // two backward runs with different seeds must also pass it (checked below).
        let crit = 1.949 * (2.0 / n).sqrt();
        let d_lin = ks_statistic(hb, hl);
        let d_seed = ks_statistic(hb, hb2);
        let k = back.stacks()[i].k();
        println!("K={k}: KS D backward/linear {d_lin:.5}, backward/backward {d_seed:.5}, critical {crit:.5}");
        assert!(d_lin < crit, "K={k}: D = {d_lin} >= {crit}");
        assert!(d_seed < crit, "K={k}: D = {d_seed} >= {crit}");
        // Same mean number of swap positions per reference (E[β] of §3.2) within 3%.
        let (sb, sl) = (
            back.stacks()[i].swaps() as f64,
            lin.stacks()[i].swaps() as f64,
        );
        assert!((sb / sl - 1.0).abs() < 0.03, "K={k}: swaps {sb} vs {sl}");
    }
}

fn sim_curve(trace: &[(u64, u32)], policy: PolicySpec, max: u64, unit: Unit) -> Curve {
    let sizes: Vec<u64> = (1..=SIZES).map(|i| (max * i / SIZES).max(1)).collect();
    let su = match unit {
        Unit::Objects => SizeUnit::Objects,
        Unit::Bytes => SizeUnit::Bytes,
    };
    let pts = simulate_sizes(trace, policy, &sizes, unit, 7)
        .iter()
        .map(|r| Point {
            size: r.size as f64,
            miss_ratio: r.miss_ratio,
        })
        .collect();
    Curve::new(policy.to_string(), None, su, pts)
}

/// Mean over K of the MAE of KRR against plain K-LRU (KRR with
/// [`Krr::KLRU_K_EXPONENT`], the default) and against pooled K-LRU (KRR with
/// [`Krr::REDIS_K_EXPONENT`]).
fn mean_mae(trace: &[(u64, u32)], unit: Unit) -> (f64, f64) {
    let ws = working_set(trace).in_unit(unit);
    let su = match unit {
        Unit::Objects => SizeUnit::Objects,
        Unit::Bytes => SizeUnit::Bytes,
    };
    let krr = run(
        trace,
        KrrConfig {
            unit: su,
            ..KrrConfig::default()
        },
    )
    .curves();
    let krr_redis = run(
        trace,
        KrrConfig {
            unit: su,
            k_exponent: Some(Krr::REDIS_K_EXPONENT),
            ..KrrConfig::default()
        },
    )
    .curves();
    let (mut plain, mut pooled) = (0.0, 0.0);
    for ((c, cr), &k) in krr.iter().zip(&krr_redis).zip(&KS) {
        assert_eq!(c.k, Some(k));
        assert_eq!(c.model, "krr");
        let k = k as usize;
        let p = c.mae_at_points(&sim_curve(trace, PolicySpec::KLru { k }, ws, unit));
        let r = cr.mae_at_points(&sim_curve(trace, PolicySpec::RedisLru { k }, ws, unit));
        println!("K={k}: MAE vs klru {p:.5}, vs redis-lru {r:.5}");
        plain += p;
        pooled += r;
    }
    (plain / KS.len() as f64, pooled / KS.len() as f64)
}

// Bars: the task's 0.005 (paper §6.3 Table 1: 0.0008) against plain K-LRU, which is what
// KRR models (Eq. 1); Redis's pooled K-LRU evicts closer to exact LRU than Eq. 1 for the
// same K and KRR follows it less closely even with its own exponent, so it gets 0.01
// (measured .0005-.0072 with K' = K^2, see BENCHMARKS.md).

/// KRR by objects on the LIRS trace `name`: mean MAE at most .005 against plain K-LRU
/// and .01 against Redis's pooled K-LRU.
fn within_object_bars(name: &str) {
    let (plain, pooled) = mean_mae(&load(name), Unit::Objects);
    println!("{name} mean MAE: klru {plain:.5}, redis-lru {pooled:.5}");
    assert!(plain <= 0.005, "{plain}");
    assert!(pooled <= 0.01, "{pooled}");
}

/// lirs_cs loops, the access pattern KRR §3.1 says it handles worst; with the paper's
/// K' = K^1.4 its mean MAE against plain K-LRU is .0089 (over the bar), with the
/// calibrated K^1.6 .0039.
#[test]
fn krr_matches_klru_simulators_on_looping_lirs_cs() {
    within_object_bars("lirs_cs");
}

#[test]
fn krr_matches_klru_simulators_on_lirs_sprite() {
    within_object_bars("lirs_sprite");
}

#[test]
fn krr_matches_klru_simulators_on_lirs_multi2() {
    within_object_bars("lirs_multi2");
}

#[test]
fn variable_size_krr_matches_byte_simulators_on_cloudphysics() {
    let (plain, pooled) = mean_mae(&load("cloudphysics"), Unit::Bytes);
    println!("cloudphysics bytes mean MAE: klru {plain:.5}, redis-lru {pooled:.5}");
    assert!(plain <= 0.01, "{plain}");
    assert!(pooled <= 0.01, "{pooled}");
}

#[test]
fn spatial_sampling_scales_distances_and_tracks_about_r_of_the_keys() {
    if !traces::available(&["arc_oltp"]) {
        return;
    }
    // arc_oltp has 187k objects: at R = 0.01 about 1.9k are tracked. Spatial sampling
    // error shrinks as 1/sqrt(tracked objects) (paper §6.3, after SHARDS); with only
    // 1.9k keys it is about 0.01 here (measured: 0.0089 mean over K against plain K-LRU
    // in the release sweep, which asserts the 0.01 bar on every trace with >= 100k
    // objects). This fast test checks the mechanics: about R of the keys tracked,
    // distances scaled back to the working set, and the mean MAE over K against the
    // unsampled model within 0.015.
    let trace = load("arc_oltp");
    let ws = working_set(&trace).objects as f64;
    let cfg = KrrConfig {
        ks: vec![1, 4, 16],
        ..KrrConfig::default()
    };
    let full = run(&trace, cfg.clone());
    let sampled = run(&trace, KrrConfig { rate: 0.01, ..cfg });
    let tracked = sampled.tracked_objects() as f64;
    let expect = ws * sampled.rate();
    assert!(
        (tracked - expect).abs() < 5.0 * expect.sqrt(),
        "{tracked} vs {expect}"
    );
    let (seen, kept) = sampled.counts();
    assert_eq!(seen, trace.len() as u64);
    assert!(kept < seen / 50);
    let mut sum = 0.0;
    for (f, s) in full.curves().iter().zip(sampled.curves()) {
        let e = s.mae(f, ws, SIZES as usize);
        println!("K={:?}: MAE sampled vs full {e:.5}", f.k);
        sum += e;
        // Distances were scaled by 1/R: the sampled curve reaches the working set.
        assert!(s.max_size() > 0.5 * ws && s.max_size() < 2.0 * ws);
    }
    let mean = sum / 3.0;
    assert!(mean <= 0.015, "mean MAE {mean}");
}

/// The simulated plain K-LRU points of arc_p3 (`k size miss_ratio` lines, 40 sizes up to
/// the working set of 762,543 objects, simulator seed 42), stored because simulating
/// them takes ~40 s in release and several times that in the test profile. Written by
/// `cargo run --release -p augur-mrc --example krr_sampling -- arc_p3
/// --write-reference crates/augur-mrc/tests/krr_support/arc_p3_klru.txt`.
fn stored_klru(name: &str) -> Vec<Curve> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/krr_support/{name}_klru.txt"));
    let text = std::fs::read_to_string(path).expect("stored simulator curves");
    KS.iter()
        .map(|&k| {
            let pts = text
                .lines()
                .map(|l| l.split(' ').collect::<Vec<_>>())
                .filter(|f| f[0] == k.to_string())
                .map(|f| Point {
                    size: f[1].parse().expect("size"),
                    miss_ratio: f[2].parse().expect("miss ratio"),
                })
                .collect::<Vec<_>>();
            assert_eq!(pts.len(), SIZES as usize);
            Curve::new("sim-klru", Some(k), SizeUnit::Objects, pts)
        })
        .collect()
}

/// The bar for spatial sampling: R = 0.01 on a trace with >= 500k objects
/// (arc_p3, the whole trace: 3.9M requests, 762k objects, about 7.7k of them sampled),
/// mean MAE over K in {1,2,4,8,16} at most .005 against plain K-LRU. The default
/// estimator ([`SampleAdjust::Distinct`]: the regression estimator calibrated on the
/// distinct-key count of a HyperLogLog sketch) meets it: .0029 measured on this sample
/// (.0029-.0033 over model seeds 1-9 and 42; .0029 on average and .0049 at worst over
/// 20 hash salts, BENCHMARKS.md), against SHARDS-adj's .0092 and the plain regression
/// estimator's .0047.
#[test]
fn sampled_krr_with_the_default_estimator_meets_the_bar_on_arc_p3() {
    if !traces::available(&["arc_p3"]) {
        return;
    }
    let trace = load("arc_p3");
    let sims = stored_klru("arc_p3");
    let mean_mae = |adjust| {
        let m = run(
            &trace,
            KrrConfig {
                rate: 0.01,
                adjust,
                ..KrrConfig::default()
            },
        );
        assert_eq!(m.estimator(), adjust);
        let maes: Vec<f64> = m
            .curves()
            .iter()
            .zip(&sims)
            .map(|(c, s)| c.mae_at_points(s))
            .collect();
        println!(
            "{adjust:?}: per K {maes:.5?}, {} keys tracked",
            m.tracked_objects()
        );
        maes.iter().sum::<f64>() / maes.len() as f64
    };
    assert_eq!(KrrConfig::default().adjust, SampleAdjust::Distinct);
    let distinct = mean_mae(SampleAdjust::Distinct);
    let regression = mean_mae(SampleAdjust::Regression);
    let shards = mean_mae(SampleAdjust::Shards);
    println!(
        "arc_p3 R = 0.01 mean MAE vs klru: distinct {distinct:.5}, regression {regression:.5}, shards-adj {shards:.5}"
    );
    assert!(distinct <= 0.005, "{distinct}");
    assert!(distinct < regression, "{distinct} vs {regression}");
    assert!(distinct < shards, "{distinct} vs {shards}");
}
