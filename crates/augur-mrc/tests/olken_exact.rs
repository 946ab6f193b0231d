//! Olken's O(log M) stack distances must equal a naive Mattson LRU stack (a `Vec` with
//! move-to-front, O(M) per reference) exactly, by object count and by bytes, on random
//! traces with deletes and size changes (proptest) and on a real LIRS trace.

use augur_mrc::curve::SizeUnit;
use augur_mrc::olken::Olken;
use augur_mrc::MrcModel;
use proptest::prelude::*;

#[path = "../../../tests/support/traces.rs"]
mod traces;

/// Mattson's LRU stack: position 0 is the most recent object.
#[derive(Default)]
struct Mattson {
    stack: Vec<(u64, u32)>,
}

impl Mattson {
    /// Distance (objects, bytes) of a reference to `key`, then moves it to the top
    /// with its new `size`.
    fn access(&mut self, key: u64, size: u32) -> Option<(u64, u64)> {
        let found = self.stack.iter().position(|&(k, _)| k == key);
        let d = found.map(|p| {
            let bytes = self.stack[..=p].iter().map(|&(_, s)| u64::from(s)).sum();
            (p as u64 + 1, bytes)
        });
        if let Some(p) = found {
            self.stack.remove(p);
        }
        self.stack.insert(0, (key, size));
        d
    }

    fn delete(&mut self, key: u64) {
        self.stack.retain(|&(k, _)| k != key);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Get(u64, u32),
    Del(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u64..60, 1u32..1000).prop_map(|(k, s)| Op::Get(k, s)),
        1 => (0u64..60).prop_map(Op::Del),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn olken_equals_mattson_on_random_traces(ops in prop::collection::vec(op(), 1..3000)) {
        let mut naive = Mattson::default();
        let mut by_obj = Olken::with_max_buckets(SizeUnit::Objects, 1 << 20);
        let mut by_bytes = Olken::with_max_buckets(SizeUnit::Bytes, 1 << 20);
        for op in ops {
            match op {
                Op::Get(k, s) => {
                    let expect = naive.access(k, s);
                    prop_assert_eq!(by_obj.distance_of(k), expect.map(|d| d.0));
                    prop_assert_eq!(by_bytes.distance_of(k), expect.map(|d| d.1));
                    by_obj.access(k, s);
                    by_bytes.access(k, s);
                }
                Op::Del(k) => {
                    naive.delete(k);
                    by_obj.delete(k);
                    by_bytes.delete(k);
                }
            }
            prop_assert_eq!(by_obj.len(), naive.stack.len());
        }
    }
}

#[test]
fn olken_equals_mattson_on_lirs_sprite_and_its_curve_is_exact() {
    let reqs = augur_trace::load_all(traces::path("lirs_sprite")).expect("lirs_sprite trace");
    assert!(reqs.len() > 100_000, "{} requests", reqs.len());
    // Byte distances with a size derived from the key (the trace has unit sizes):
    // 1 + (mix(key) mod 4096).
    let size_of = |k: u64| 1 + (augur_mrc::mix64(k) % 4096) as u32;
    let mut naive = Mattson::default();
    let mut by_obj = Olken::new(SizeUnit::Objects);
    let mut by_bytes = Olken::new(SizeUnit::Bytes);
    let mut hist = std::collections::BTreeMap::<u64, u64>::new();
    let mut cold = 0u64;
    for r in &reqs {
        let s = size_of(r.key);
        let expect = naive.access(r.key, s);
        assert_eq!(by_obj.distance_of(r.key), expect.map(|d| d.0));
        assert_eq!(by_bytes.distance_of(r.key), expect.map(|d| d.1));
        match expect {
            Some((d, _)) => *hist.entry(d).or_default() += 1,
            None => cold += 1,
        }
        by_obj.access(r.key, s);
        by_bytes.access(r.key, s);
    }
    assert!(by_obj.compactions() > 0);
    // The curve is the exact step function of the naive histogram.
    let curve = by_obj.curves().remove(0);
    let n = reqs.len() as f64;
    let mut hits = 0u64;
    for (&d, &c) in &hist {
        hits += c;
        let mr = 1.0 - hits as f64 / n;
        assert!(
            (curve.miss_ratio_at(d as f64) - mr).abs() < 1e-12,
            "size {d}"
        );
    }
    assert!((curve.points.last().unwrap().miss_ratio - cold as f64 / n).abs() < 1e-12);
}
