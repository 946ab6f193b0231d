//! Miniature simulation (Waldspurger et al. ATC'17; DLRU §3.3) against full simulation
//! of the same policy on real traces.

mod shards_support;

use augur_mrc::curve::SizeUnit;
use augur_mrc::minisim::MiniSim;
use augur_mrc::MrcModel;
use augur_sim::{simulate_sizes, PolicySpec, Unit};
use shards_support::*;

/// Mean |miniature - full| miss ratio at the simulated sizes.
fn mae_at_sizes(mini: &augur_mrc::curve::Curve, full: &[(u64, f64)]) -> f64 {
    full.iter()
        .map(|&(s, mr)| (mini.miss_ratio_at(s as f64) - mr).abs())
        .sum::<f64>()
        / full.len() as f64
}

/// Redis K-LRU (K = 5, 16-entry pool) at R = 0.01 vs the full simulation, at 10
/// sizes from 10% to 100% of the working set; also exact LRU in the same run.
#[test]
fn redis_klru5_at_one_percent_within_mae_0_02() {
    if !traces::available(&["scarab-recs", "arc_oltp"]) {
        return;
    }
    for name in ["scarab-recs", "arc_oltp"] {
        let trace = load(name);
        let (objs, _) = working_set(&trace);
        let sizes: Vec<u64> = (1..=10).map(|i| objs * i / 10).collect();
        let mut mini = MiniSim::new(0.01, SizeUnit::Objects, &sizes);
        mini.add_spec(PolicySpec::RedisLru { k: 5 }, 1);
        mini.add_spec(PolicySpec::Lru, 1);
        for &(k, s) in &trace {
            mini.access(k, s);
        }
        assert!(mini.reliable());
        let curves = mini.curves();
        let full_klru: Vec<(u64, f64)> = simulate_sizes(
            &trace,
            PolicySpec::RedisLru { k: 5 },
            &sizes,
            Unit::Objects,
            1,
        )
        .iter()
        .map(|r| (r.size, r.miss_ratio))
        .collect();
        let (exact, _) = exact_lru(&trace);
        let full_lru: Vec<(u64, f64)> = sizes
            .iter()
            .map(|&s| (s, exact.miss_ratio_at(s as f64)))
            .collect();
        let mae_klru = mae_at_sizes(&curves[0], &full_klru);
        let mae_lru = mae_at_sizes(&curves[1], &full_lru);
        println!(
            "{name}: R={} sampled keys {}, redis-lru:5 MAE {mae_klru:.5}, lru MAE {mae_lru:.5}",
            mini.rate(),
            mini.sampled_keys()
        );
        assert!(mae_klru <= 0.02, "{name}: redis-lru:5 MAE {mae_klru}");
        assert!(mae_lru <= 0.02, "{name}: lru MAE {mae_lru}");
    }
}

/// Byte-capacity miniature caches: FIFO on cloudphysics (real sizes) at R = 0.1.
#[test]
fn fifo_by_bytes_on_cloudphysics() {
    let trace = load("cloudphysics");
    let (_, bytes) = working_set(&trace);
    let sizes: Vec<u64> = (1..=5).map(|i| bytes * i / 5).collect();
    let mut mini = MiniSim::new(0.1, SizeUnit::Bytes, &sizes);
    mini.add_spec(PolicySpec::Fifo, 1);
    for &(k, s) in &trace {
        mini.access(k, s);
    }
    let full: Vec<(u64, f64)> = simulate_sizes(&trace, PolicySpec::Fifo, &sizes, Unit::Bytes, 1)
        .iter()
        .map(|r| (r.size, r.miss_ratio))
        .collect();
    let mae = mae_at_sizes(&mini.curves()[0], &full);
    println!("cloudphysics FIFO by bytes, R=0.1: MAE {mae:.5}");
    assert!(mae <= 0.03, "MAE {mae}");
}

/// A sample that is too small is flagged (DLRU's 256-key rule).
#[test]
fn tiny_samples_are_not_reliable() {
    let trace = load("lirs_cpp");
    let mut mini = MiniSim::new(0.01, SizeUnit::Objects, &[100]);
    mini.add_spec(PolicySpec::Lru, 1);
    for &(k, s) in &trace {
        mini.access(k, s);
    }
    assert!(mini.sampled_keys() < 256 && !mini.reliable());
}
