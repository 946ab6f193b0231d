//! MIMIR's ghost filters (§2.4 "Ghost filters", §4): the counting Bloom filter, the
//! rotating queue of filters, and MIMIR with filters instead of a ghost list against
//! exact LRU on the paper's "challenging" `multi1` trace (Table 1 cache size 2000),
//! where the paper reports 95.5% fidelity up to twice the cache size with 3 filters.
//!
//! Accuracy is measured as in `tests/mimir.rs`: 1 - MAE between the estimated and the
//! exact LRU curve at every integer size `1..=N + ghosts` (MIMIR §3.6 Eq. 1, §4.1).

mod shards_support;

use augur_mrc::curve::SizeUnit;
use augur_mrc::ghost_filter::{CountingBloom, GhostFilters};
use augur_mrc::mimir::{Aging, GhostMode, Mimir, MimirConfig, MimirLru};
use augur_mrc::MrcModel;
use shards_support::*;

/// A fixed-seed stream of distinct-looking keys (SplitMix64 increments).
fn keys(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            augur_mrc::mix64(x)
        })
        .collect()
}

// ---- (a) counting Bloom filter ----------------------------------------------------

#[test]
fn sizing_follows_the_standard_formulas() {
    // m = ceil(-n ln p / ln^2 2) = ceil(1000 x 4.60517 / 0.480453) = 9586; k = round(9.586 ln 2) = 7.
    assert_eq!(CountingBloom::optimal_counters(1000, 0.01), 9586);
    assert_eq!(CountingBloom::optimal_hashes(9586, 1000), 7);
    let f = CountingBloom::with_rate(1000, 0.01);
    assert_eq!((f.counters(), f.hashes()), (9586, 7));
    // 4-bit counters: half a byte each.
    assert_eq!(f.heap_bytes(), 4793);
    assert!((f.expected_fp_rate(1000) - 0.01).abs() < 0.001);
}

#[test]
fn no_false_negatives() {
    let mut f = CountingBloom::with_rate(20_000, 0.01);
    let ks = keys(1, 20_000);
    for &k in &ks {
        f.insert(k);
    }
    assert!(ks.iter().all(|&k| f.contains(k)));
    // Sequential keys (ids, block numbers) too.
    let mut g = CountingBloom::with_rate(20_000, 0.01);
    (0..20_000u64).for_each(|k| g.insert(k));
    assert!((0..20_000u64).all(|k| g.contains(k)));
}

/// Filled to its design load, the measured false-positive rate over 100k probes of keys
/// never inserted is within 2x of the configured rate (either way).
#[test]
fn false_positive_rate_within_2x_of_configured() {
    for (p, seed) in [(0.05, 10), (0.01, 20), (0.001, 30)] {
        let n = 10_000;
        let mut f = CountingBloom::with_rate(n, p);
        keys(seed, n).into_iter().for_each(|k| f.insert(k));
        let probes = keys(seed + 1, 100_000);
        let fp = probes.iter().filter(|&&k| f.contains(k)).count() as f64 / 1e5;
        println!(
            "configured fp {p}: measured {fp:.5} over 100k probes (m = {}, k = {})",
            f.counters(),
            f.hashes()
        );
        assert!(
            fp <= 2.0 * p && fp >= 0.5 * p,
            "configured {p}, measured {fp}"
        );
        // Sequential keys as probes and members.
        let mut g = CountingBloom::with_rate(n, p);
        (0..n as u64).for_each(|k| g.insert(k));
        let fp = (1_000_000..1_100_000u64).filter(|&k| g.contains(k)).count() as f64 / 1e5;
        assert!(
            fp <= 2.0 * p && fp >= 0.5 * p,
            "sequential: configured {p}, measured {fp}"
        );
    }
}

/// On a mostly-empty filter (no two keys share a counter, almost surely) removing a key
/// makes it absent and removing all of them empties the filter.
#[test]
fn remove_then_absent_on_a_mostly_empty_filter() {
    let mut f = CountingBloom::with_rate(100_000, 0.01);
    let ks = keys(7, 50);
    ks.iter().for_each(|&k| f.insert(k));
    for (i, &k) in ks.iter().enumerate() {
        assert!(f.remove(k));
        assert!(!f.contains(k), "key {i} still reported after removal");
        assert!(!f.remove(k), "a second removal found the key");
    }
    assert_eq!(f.nonzero_counters(), 0);
    // A key inserted twice needs two removals.
    f.insert(42);
    f.insert(42);
    assert!(f.remove(42) && f.contains(42));
    assert!(f.remove(42) && !f.contains(42));
}

#[test]
fn saturating_counters_never_underflow() {
    // Saturation is sticky: 20 insertions put the key's counters at 15, where no
    // removal takes them down, so the key never becomes a false negative.
    let mut f = CountingBloom::with_rate(1000, 0.01);
    for _ in 0..20 {
        f.insert(7);
    }
    let nz = f.nonzero_counters();
    assert_eq!(nz, f.hashes() as usize);
    for _ in 0..25 {
        assert!(f.remove(7));
    }
    assert!(f.contains(7));
    assert_eq!(f.nonzero_counters(), nz);

    // Removing absent keys from an empty filter does nothing.
    let mut e = CountingBloom::new(64, 3);
    for k in 0..1000 {
        assert!(!e.remove(k));
    }
    assert_eq!(e.nonzero_counters(), 0);

    // A tiny overloaded filter: false-positive removals take other keys' counts, but a
    // counter never wraps below zero, so the number of non-zero counters only falls.
    let mut t = CountingBloom::new(64, 3);
    keys(3, 50).into_iter().for_each(|k| t.insert(k));
    let mut nz = t.nonzero_counters();
    for k in keys(4, 10_000) {
        t.remove(k);
        let now = t.nonzero_counters();
        assert!(now <= nz, "a counter went from 0 to non-zero on a removal");
        nz = now;
    }
}

// ---- (b) the rotating queue of filters --------------------------------------------

#[test]
fn rotation_forgets_the_oldest_filter() {
    // 3 filters of 100 keys; 1000 keys inserted in order 0..1000: the head holds
    // 900..999, then 800..899 and 700..799; everything older was discarded.
    let mut g = GhostFilters::new(3, 100, 100, 0.001);
    (0..1000u64).for_each(|k| g.insert(k));
    assert_eq!(g.counts().collect::<Vec<_>>(), vec![100, 100, 100]);
    assert_eq!(
        (g.count_above(0), g.count_above(2), g.total()),
        (0, 200, 300)
    );
    // Forgotten keys: only false positives remain (3 filters at 0.1% each).
    let remembered = (0..700u64).filter(|&k| g.position(k).is_some()).count();
    assert!(
        remembered <= 6,
        "{remembered} of the 700 oldest keys still reported"
    );
    // Recent keys: in their filter, or (a false positive) in a more recent one.
    let mut wrong = 0;
    for k in 700..1000u64 {
        let want = ((999 - k) / 100) as usize;
        let pos = g.position(k).expect("no false negatives");
        assert!(pos <= want);
        wrong += usize::from(pos != want);
    }
    assert!(
        wrong <= 3,
        "{wrong} recent keys placed in a more recent filter"
    );

    // A hit removes the key from its filter and lowers that filter's count, which lets
    // the head take one more key before the next rotation.
    assert_eq!(g.remove_if_present(750), Some(2));
    assert_eq!(g.count(2), 99);
    assert_eq!(g.position(750), None);
    assert_eq!(g.remove_if_present(950), Some(0));
    g.insert(5000);
    assert_eq!(g.counts().collect::<Vec<_>>(), vec![100, 100, 99]);
    assert_eq!(g.position(5000), Some(0));
    // Full again: the next key rotates, discarding 700..799.
    g.insert(5001);
    assert_eq!(g.counts().collect::<Vec<_>>(), vec![1, 100, 100]);
    let remembered = (700..800u64).filter(|&k| g.position(k).is_some()).count();
    assert!(
        remembered <= 2,
        "{remembered} keys of the discarded filter reported"
    );
    assert_eq!(g.position(5000), Some(1));
    assert!(g.heap_bytes() < 3 * 1000);
}

#[test]
fn byte_units_count_sizes_and_resize_filters_to_the_keys_they_take() {
    // 2 filters of 10,000 bytes, sized for 10 keys; keys of 100 bytes fill one with
    // 100 keys, so the filter recycled as the next head is re-sized for 100 keys.
    let mut g = GhostFilters::new(2, 10_000, 10, 0.01);
    for k in 0..100u64 {
        g.insert_units(k, 100);
    }
    assert_eq!((g.count(0), g.items(0)), (10_000, 100));
    g.insert_units(100, 100);
    assert_eq!(g.counts().collect::<Vec<_>>(), vec![100, 10_000]);
    assert_eq!(
        g.filter(0).counters(),
        CountingBloom::optimal_counters(100, 0.01)
    );
    // Removal without a size subtracts the filter's mean key size.
    assert_eq!(g.mean_units(1), 100);
    assert_eq!(g.remove_if_present(5), Some(1));
    assert_eq!(g.count(1), 9_900);
}

// ---- MIMIR with ghost filters -----------------------------------------------------

#[test]
fn mimir_upcalls_with_filters() {
    let cfg = MimirConfig {
        buckets: 4,
        aging: Aging::Rounder,
        capacity: 10,
        ghost_capacity: 6,
        unit: SizeUnit::Objects,
    };
    let mut m = Mimir::with_ghost_mode(cfg, GhostMode::filters(3, 0.001));
    assert_eq!(m.ghost_mode(), GhostMode::filters(3, 0.001));
    for k in 0..10 {
        m.insert(k, 1);
    }
    assert!(m.hit(3));
    for k in [0, 1, 2] {
        m.evict(k);
    }
    let f = m.ghost_filters().expect("built at the first eviction");
    assert_eq!((f.filters(), f.capacity()), (3, 2));
    // Filters hold [2] and [0, 1]; the ghosts left the table.
    assert_eq!(
        (m.cached_used(), m.ghost_used(), m.tracked_keys()),
        (7, 3, 7)
    );
    assert!(m.miss(0));
    assert!(!m.miss(42));
    m.delete(1);
    assert_eq!(m.ghost_used(), 1);
    assert!(m.miss_insert(2, 1));
    assert!(!m.miss_insert(43, 1));
    assert_eq!((m.cached_used(), m.ghost_used()), (9, 0));
    // 5 references (HIT, 2 MISS, 2 miss_insert), 3 hits: key 3 in the cache, and the
    // ghosts 0 (filter 1, below 7 cached and 1 ghost: distances (8, 10]) and 2 (filter
    // 0, after 0 and 1 left: (7, 8]). The curve covers 16; all hits are within 10.
    let c = m.curve();
    assert_eq!(c.points.last().unwrap().size, 16.0);
    assert!((c.miss_ratio_at(16.0) - 0.4).abs() < 1e-9);
    assert!((c.miss_ratio_at(10.0) - 0.4).abs() < 1e-9);
    // No ghost capacity: filters are not used and the model is the ghost-less one.
    let none = Mimir::with_ghost_mode(
        MimirConfig {
            ghost_capacity: 0,
            ..cfg
        },
        GhostMode::filters(3, 0.01),
    );
    assert_eq!(none.ghost_mode(), GhostMode::List);
}

const MULTI1_N: u64 = 2000;

fn run(
    trace: &[(u64, u32)],
    n: u64,
    b: usize,
    aging: Aging,
    mode: GhostMode,
    unit: SizeUnit,
) -> MimirLru {
    let mut m = MimirLru::with_ghost_mode(
        MimirConfig {
            buckets: b,
            aging,
            capacity: n,
            ghost_capacity: n,
            unit,
        },
        mode,
    );
    for &(k, s) in trace {
        m.access(k, s);
    }
    m
}

/// §4: "LRU with a list of 3 ghost filters had estimation fidelity of 95.5% for caches
/// of up to double the cache size" on multi1. Cache 2000 objects, 2000 ghosts in 3
/// filters at 1% false positives, accuracy over sizes 1..=4000. Measured (filters /
/// ghost list): ROUNDER B=8 98.51 / 98.56%, B=128 98.72 / 99.90%; STACKER B=8 98.84 /
/// 98.57%, B=128 99.86 / 99.92%. (multi1's exact curve is nearly flat beyond the cache,
/// miss ratio .168 at 2000 and .164 at 4000, so little of the error comes from the
/// ghost range; see the lirs_cs test for a trace whose curve falls there.)
#[test]
fn multi1_three_filters_at_least_95_percent_up_to_twice_the_cache() {
    let trace = load("lirs_multi1");
    let (exact, _) = exact_lru(&trace);
    let (n, s) = (MULTI1_N, 2 * MULTI1_N);
    for (aging, b) in [
        (Aging::Rounder, 8),
        (Aging::Rounder, 128),
        (Aging::Stacker, 8),
        (Aging::Stacker, 128),
    ] {
        let f = run(
            &trace,
            n,
            b,
            aging,
            GhostMode::filters(3, 0.01),
            SizeUnit::Objects,
        );
        let l = run(&trace, n, b, aging, GhostMode::List, SizeUnit::Objects);
        let (cf, cl) = (f.mimir().curve(), l.mimir().curve());
        assert_eq!(cf.points.last().unwrap().size, s as f64);
        let acc_f = 1.0 - cf.mae(&exact, s as f64, s as usize);
        let acc_l = 1.0 - cl.mae(&exact, s as f64, s as usize);
        // Memory: the filters' bytes per ghost, against what the ghost list adds to the
        // per-key structures (slab records and table cells) for the same ghosts.
        let filters = f.mimir().ghost_filters().unwrap();
        let filter_bytes = filters.heap_bytes() as f64 / n as f64;
        let list_bytes =
            (l.mimir().key_heap_bytes() - f.mimir().key_heap_bytes()) as f64 / n as f64;
        println!(
            "multi1 N={n} {aging:?} B={b:3}: accuracy 1..{s} 3 filters {:.3}%, ghost list {:.3}%; bytes per ghost: filters {filter_bytes:.2} ({:.1} bits), list {list_bytes:.1}",
            100.0 * acc_f,
            100.0 * acc_l,
            8.0 * filter_bytes
        );
        assert!(acc_f >= 0.955, "{aging:?} B={b}: 3 ghost filters {acc_f}");
        assert!(filter_bytes < 6.0 && list_bytes > 24.0);
    }
}

/// A harder case for filters: lirs_cs (cache 1000, Table 1) is a loop whose exact miss
/// ratio falls from .98 at 1000 to .21 at 2000, all inside the ghost range, where
/// filters resolve a distance only to a filter's width (and, after each rotation, the
/// oldest third of the ghosts is gone at once). Measured at 1% false positives: 3
/// filters 95.36% (ROUNDER B=8) / 95.39% (B=128) against the list's 97.56% / 99.85%;
/// 8 filters 96.00%, and 8 filters at 0.1% 98.30%. Floor asserted: 95%.
#[test]
fn lirs_cs_loop_in_the_ghost_range() {
    let trace = load("lirs_cs");
    let (exact, _) = exact_lru(&trace);
    let (n, s) = (1000, 2000);
    for (b, mode, bar) in [
        (8, GhostMode::filters(3, 0.01), 0.95),
        (128, GhostMode::filters(3, 0.01), 0.95),
        (128, GhostMode::filters(8, 0.001), 0.98),
    ] {
        let m = run(&trace, n, b, Aging::Rounder, mode, SizeUnit::Objects);
        let acc = 1.0 - m.mimir().curve().mae(&exact, s as f64, s as usize);
        println!(
            "lirs_cs N={n} Rounder B={b:3} {mode:?}: accuracy 1..{s} {:.3}%",
            100.0 * acc
        );
        assert!(acc >= bar, "{mode:?} B={b}: {acc}");
    }
}

/// Byte units: ghost capacity in bytes split over the filters, filters sized in keys
/// from the mean cached size. multi1 with per-key derived sizes, a cache of a third of
/// the working set's bytes and as many ghost bytes. Measured: 98.45% (ROUNDER B=128,
/// list 95.73%), 98.48% (STACKER B=128, list 99.52%).
#[test]
fn multi1_bytes_with_filters() {
    let trace: Vec<(u64, u32)> = load("lirs_multi1")
        .into_iter()
        .map(|(k, _)| (k, derived_size(k)))
        .collect();
    let (_, exact) = exact_lru(&trace);
    let n = working_set(&trace).1 / 3;
    for aging in [Aging::Rounder, Aging::Stacker] {
        let m = run(
            &trace,
            n,
            128,
            aging,
            GhostMode::filters(3, 0.01),
            SizeUnit::Bytes,
        );
        let acc = 1.0 - m.mimir().curve().mae(&exact, 2.0 * n as f64, 4000);
        let f = m.mimir().ghost_filters().unwrap();
        println!(
            "multi1 bytes N={n} {aging:?} B=128 3 filters: accuracy {:.3}%, ghost bytes per filter {:?}, keys per filter {:?}",
            100.0 * acc,
            f.counts().collect::<Vec<_>>(),
            (0..3).map(|p| f.items(p)).collect::<Vec<_>>()
        );
        assert!(acc >= 0.98, "{aging:?}: {acc}");
        assert!(f.total() <= n + 3 * 4096);
    }
}
