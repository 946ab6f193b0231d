//! SHARDS against exact LRU on the real traces (SHARDS FAST'15; kRedis §2.7).
//! Accuracy is the kRedis §6.3 measure: mean absolute error at 40 evenly spaced sizes
//! up to the working-set size.

mod shards_support;

use augur_mrc::curve::SizeUnit;
use augur_mrc::shards::{Shards, ShardsMode};
use augur_mrc::MrcModel;
use shards_support::*;

fn run(model: &mut Shards, trace: &[(u64, u32)]) {
    for &(k, s) in trace {
        model.access(k, s);
    }
}

/// The Fenwick stack at rate 1 equals Mattson's naive stack at every size.
#[test]
fn rate_one_is_exact_mattson_on_lirs_traces() {
    for name in ["lirs_cpp", "lirs_multi1", "lirs_sprite"] {
        let trace = load(name);
        let (objs, _) = working_set(&trace);
        let naive = naive_mattson_objects(&trace, objs as usize);
        let (exact, _) = exact_lru(&trace);
        for d in 1..=objs {
            let (a, b) = (naive.miss_ratio_at(d as f64), exact.miss_ratio_at(d as f64));
            assert!((a - b).abs() < 1e-12, "{name} size {d}: {a} vs {b}");
        }
    }
}

/// The bar: R = 0.01 within MAE 0.01 of exact LRU on traces of >= 100k objects, for
/// SHARDS_adj (the paper's fixed-rate variant, [`Shards::fixed_rate`]). Plain SHARDS is
/// printed for the record: on arc_oltp one hot key more or less in a 1% sample shifts
/// the whole curve by ~0.03, which is the bias SHARDS_adj (§3.3) exists to remove.
#[test]
fn fixed_rate_one_percent_within_mae_0_01_on_large_traces() {
    if !traces::available(&["arc_oltp", "arc_p3", "scarab-recs"]) {
        return;
    }
    for name in ["arc_oltp", "arc_p3", "scarab-recs"] {
        let trace = load(name);
        let (objs, _) = working_set(&trace);
        assert!(objs >= 100_000);
        let (exact, _) = exact_lru(&trace);
        let mut adj = Shards::fixed_rate(0.01);
        run(&mut adj, &trace);
        let mae_adj = adj.curve(SizeUnit::Objects).mae(&exact, objs as f64, 40);
        let mut plain = Shards::new(ShardsMode::FixedRate {
            rate: 0.01,
            adjust: false,
        });
        run(&mut plain, &trace);
        let mae = plain.curve(SizeUnit::Objects).mae(&exact, objs as f64, 40);
        println!(
            "{name}: objects {objs}, R=0.01 SHARDS_adj MAE {mae_adj:.5}, plain SHARDS {mae:.5}"
        );
        assert!(mae_adj <= 0.01, "{name}: adj MAE {mae_adj}");
    }
}

/// Fixed-size SHARDS: the rate falls to keep 8k keys and the curve stays accurate.
#[test]
fn fixed_size_8k_keys_within_mae_0_01() {
    if !traces::available(&["arc_oltp", "scarab-recs"]) {
        return;
    }
    for name in ["arc_oltp", "scarab-recs"] {
        let trace = load(name);
        let (objs, _) = working_set(&trace);
        let (exact, _) = exact_lru(&trace);
        let mut s = Shards::fixed_size(8192);
        run(&mut s, &trace);
        assert!(s.tracked_keys() <= 8192);
        let mae = s.curve(SizeUnit::Objects).mae(&exact, objs as f64, 40);
        let mut plain = Shards::new(ShardsMode::FixedSize {
            s_max: 8192,
            adjust: false,
        });
        run(&mut plain, &trace);
        let mae_plain = plain.curve(SizeUnit::Objects).mae(&exact, objs as f64, 40);
        println!(
            "{name}: fixed-size 8192 keys, final rate {:.4}, MAE adj {mae:.5}, plain {mae_plain:.5}",
            s.rate()
        );
        assert!(s.rate() < 0.1);
        assert!(mae <= 0.01, "{name}: MAE {mae}");
    }
}

/// Byte curves: cloudphysics has real sizes; arc_oltp gets derived per-key sizes.
#[test]
fn byte_curves_track_exact_byte_lru() {
    if !traces::available(&["arc_oltp"]) {
        return;
    }
    let cloud = load("cloudphysics");
    let mut oltp = load("arc_oltp");
    for r in oltp.iter_mut() {
        r.1 = derived_size(r.0);
    }
    for (name, trace, rate) in [("cloudphysics", cloud, 0.1), ("arc_oltp+sizes", oltp, 0.01)] {
        let (_, bytes) = working_set(&trace);
        let (_, exact) = exact_lru(&trace);
        let mut s = Shards::fixed_rate(rate);
        run(&mut s, &trace);
        let mae = s.curve(SizeUnit::Bytes).mae(&exact, bytes as f64, 40);
        let mut plain = Shards::new(ShardsMode::FixedRate {
            rate,
            adjust: false,
        });
        run(&mut plain, &trace);
        let mae_plain = plain.curve(SizeUnit::Bytes).mae(&exact, bytes as f64, 40);
        println!(
            "{name}: bytes {bytes}, R={rate} byte-curve MAE adj {mae:.5}, plain {mae_plain:.5}"
        );
        assert!(mae <= 0.02, "{name}: MAE {mae}");
    }
}

/// Deletes remove keys from the sample: a deleted-then-rereferenced key is a cold miss.
#[test]
fn delete_makes_the_next_reference_cold() {
    let mut s = Shards::fixed_rate(1.0);
    for k in [1u64, 2, 1] {
        s.access(k, 10);
    }
    s.delete(1);
    s.access(1, 10);
    // 4 references, one hit (the second 1, at distance 2): miss ratio 0.75 at size 2.
    let c = s.curve(SizeUnit::Objects);
    assert!((c.miss_ratio_at(2.0) - 0.75).abs() < 1e-12);
}
