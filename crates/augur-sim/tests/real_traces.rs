//! Simulator properties on real traces (beyond the reference table in reference.rs).

mod common;

use augur_sim::{build, simulate, simulate_grid, working_set, CacheSim, PolicySpec, Unit};
use common::{load_trace, traces};

const ALL: [PolicySpec; 5] = [
    PolicySpec::Lru,
    PolicySpec::Fifo,
    PolicySpec::Random,
    PolicySpec::RedisLru { k: 5 },
    PolicySpec::KLru { k: 5 },
];

#[test]
fn byte_mode_never_exceeds_capacity_on_cloudphysics() {
    // cloudphysics is the trace with real sizes (512 B - 68 KiB): a 32 KiB cache sees
    // objects larger than itself and evicts several objects per miss; 2 % of the byte
    // working set is a realistic size.
    let trace = load_trace("cloudphysics");
    let ws = working_set(&trace);
    for cap in [32 * 1024, ws.bytes / 50] {
        for p in ALL {
            let mut sim = build(p, cap, Unit::Bytes, 7);
            let mut too_large = 0u64;
            for &(key, size) in &trace {
                sim.access(key, size);
                assert!(sim.used() <= cap, "{p} at {cap} B: used {}", sim.used());
                too_large += u64::from(u64::from(size) > cap);
            }
            assert!(!sim.is_empty());
            if cap == 32 * 1024 {
                assert!(
                    too_large > 0,
                    "the small size should exercise the too-large rule"
                );
            }
        }
    }
}

#[test]
fn unit_sizes_in_byte_mode_are_object_mode() {
    // With every size 1, a byte capacity is an object capacity: every policy must make
    // the very same decisions (same seed, same random stream).
    let trace: Vec<(u64, u32)> = load_trace("cloudphysics")
        .into_iter()
        .map(|(k, _)| (k, 1))
        .collect();
    let cap = working_set(&trace).objects / 5;
    for p in ALL {
        let b = simulate(&trace, p, cap, Unit::Bytes, 3);
        let o = simulate(&trace, p, cap, Unit::Objects, 3);
        assert_eq!(b.hits, o.hits, "{p}");
    }
}

#[test]
fn klru_sampling_every_entry_is_lru_on_lirs_traces() {
    // Caches of at most 8 entries and 512 samples per eviction: missing the oldest
    // entry has probability (7/8)^512 < 1e-29 per eviction, so plain K-LRU (KRR Eq. 1
    // with K -> infinity) must reproduce exact LRU request by request.
    for name in ["lirs_cpp", "lirs_2_pools", "lirs_sprite"] {
        let trace = load_trace(name);
        for cap in [1u64, 3, 8] {
            let mut k = build(PolicySpec::KLru { k: 512 }, cap, Unit::Objects, 1);
            let mut l = build(PolicySpec::Lru, cap, Unit::Objects, 1);
            for (t, &(key, size)) in trace.iter().enumerate() {
                assert_eq!(
                    k.access(key, size),
                    l.access(key, size),
                    "{name} cap {cap} request {t}"
                );
            }
        }
    }
}

#[test]
fn more_samples_move_klru_towards_lru() {
    if !traces::available(&["arc_oltp"]) {
        return;
    }
    // KRR §2.2 / Fig. 1: a larger K evicts closer to the LRU end. On arc_oltp at 10 % of
    // the working set, K = 1 (random), 2, 5, 16 must approach LRU monotonically.
    let trace = load_trace("arc_oltp");
    let cap = working_set(&trace).objects / 10;
    let policies = [
        PolicySpec::Lru,
        PolicySpec::KLru { k: 1 },
        PolicySpec::KLru { k: 2 },
        PolicySpec::KLru { k: 5 },
        PolicySpec::KLru { k: 16 },
    ];
    let out = simulate_grid(&trace, &policies, &[cap], Unit::Objects, 0, &|_| {});
    let lru = out[0].miss_ratio;
    let gaps: Vec<f64> = out[1..]
        .iter()
        .map(|r| (r.miss_ratio - lru).abs())
        .collect();
    for w in gaps.windows(2) {
        assert!(w[1] < w[0], "gaps to LRU by K = 1, 2, 5, 16: {gaps:?}");
    }
    assert!(
        gaps[3] < 0.002,
        "K = 16 should be within 0.002 of LRU: {gaps:?}"
    );
}
