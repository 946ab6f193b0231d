//! The two zones in the store (`crate::zone`): demotion instead of eviction, reads
//! served from the Z-zone, promotion by reuse time, and every key operation's semantics
//! for an item in either zone, checked against a map model.

use crate::tests::check_all;
use crate::zone::INITIAL_N_SHARE;
use crate::*;
use proptest::prelude::*;
use std::collections::HashMap;

fn zoned(maxmemory: u64, shards: usize) -> Store {
    Store::new(StoreConfig {
        shards,
        databases: 4,
        maxmemory,
        policy: EvictionPolicy::AllKeysLru,
        samples: 5,
        zone: ZoneConfig {
            enabled: true,
            ..Default::default()
        },
    })
}

/// A ~100-byte JSON-shaped record (compressible like real records, distinct per `i`).
fn record(i: u64, extra: usize) -> Vec<u8> {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24;
    let mut v = format!(
        "{{\"id\":{i},\"user\":\"u{:x}\",\"country\":\"{}\",\"followers\":{},\"bio\":\"",
        x % 100_000,
        ["DE", "FR", "US", "BR", "IN"][(x % 5) as usize],
        x % 5000
    )
    .into_bytes();
    v.extend(std::iter::repeat_n(b'a' + (x % 26) as u8, extra));
    v.extend_from_slice(b"\"}");
    v
}

fn k(i: u64) -> Vec<u8> {
    format!("rec:{i}").into_bytes()
}

fn set(s: &Store, i: u64, v: &[u8], ttl: SetTtl, now: u64) {
    s.lock_key(&k(i))
        .set(Ns::new(0, 0), &k(i), v, ttl, now)
        .unwrap();
}

fn get(s: &Store, i: u64, now: u64) -> Option<Vec<u8>> {
    s.lock_key(&k(i))
        .get(Ns::new(0, 0), &k(i), now)
        .unwrap()
        .map(|v| v.to_vec())
}

/// Under memory pressure the N-zone demotes instead of evicting: the Z-zone fills, no
/// key is lost while the compressed data fits, values come back byte-exact, and the
/// accounting holds (used within the limit, DBSIZE = both zones).
#[test]
fn pressure_demotes_into_the_z_zone_and_reads_come_back() {
    let limit = 1 << 20;
    let s = zoned(limit, 2);
    let n = 14_000u64; // ~1.5 MB in the N-zone: fits only with the Z-zone
    for i in 0..n {
        set(&s, i, &record(i, 0), SetTtl::Clear, 0);
    }
    check_all(&s);
    let z = s.zone_stats(None);
    assert!(z.z_items > 1000, "{z:?}");
    assert!(z.demotions >= z.z_items, "{z:?}");
    assert_eq!(s.stats(0).evicted_keys, 0, "{z:?}");
    assert_eq!(s.dbsize(Ns::new(0, 0)), n);
    assert!(
        s.used_memory() <= limit + 2 * 4096,
        "used {}",
        s.used_memory()
    );
    for i in 0..n {
        assert_eq!(get(&s, i, 0), Some(record(i, 0)), "key {i}");
    }
    let z2 = s.zone_stats(None);
    assert!(z2.z_hits > 0, "{z2:?}");
    check_all(&s);
}

/// A Z-zone item read twice within the N-zone's benchmark moves back to the N-zone;
/// read once it is served in place (§3.3.2).
#[test]
fn a_reread_item_is_promoted_and_a_single_read_is_not() {
    let s = zoned(1 << 20, 1);
    for i in 0..14_000u64 {
        set(&s, i, &record(i, 0), SetTtl::Clear, 0);
    }
    // Key 0 was written first and never read: it is in the Z-zone now.
    let before = s.zone_stats(None);
    assert!(before.benchmark > 0, "{before:?}");
    assert_eq!(get(&s, 0, 0), Some(record(0, 0)));
    let once = s.zone_stats(None);
    assert_eq!(once.z_hits, before.z_hits + 1);
    assert_eq!(
        once.promotions, before.promotions,
        "one read promotes nothing"
    );
    assert_eq!(get(&s, 0, 0), Some(record(0, 0)));
    let twice = s.zone_stats(None);
    assert_eq!(twice.promotions, before.promotions + 1, "{twice:?}");
    // Now in the N-zone: the next read is an N-zone hit.
    assert_eq!(get(&s, 0, 0), Some(record(0, 0)));
    assert_eq!(s.zone_stats(None).z_hits, twice.z_hits);
    check_all(&s);
}

/// When even the compressed data does not fit, the Z-zone evicts (with evicted counts)
/// and memory stays within the limit.
#[test]
fn a_full_z_zone_evicts_and_memory_holds() {
    let limit = 1 << 20;
    let s = zoned(limit, 2);
    let n = 60_000u64;
    for i in 0..n {
        set(&s, i, &record(i, 0), SetTtl::Clear, 0);
    }
    check_all(&s);
    let z = s.zone_stats(None);
    let st = s.stats(0);
    assert!(z.z_evictions > 0, "{z:?}");
    assert_eq!(st.evicted_keys + s.dbsize(Ns::new(0, 0)), n);
    assert!(
        s.used_memory() <= limit + 2 * 4096,
        "used {}",
        s.used_memory()
    );
}

/// Incompressible values: the zone still never holds fewer items than the store
/// without it (issue 10's "incompressible values" check, at store level).
#[test]
fn incompressible_values_hold_no_fewer_items() {
    use rand::{Rng, SeedableRng};
    let limit = 1 << 20;
    let mut held = Vec::new();
    for zone in [false, true] {
        let s = Store::new(StoreConfig {
            shards: 2,
            databases: 1,
            maxmemory: limit,
            policy: EvictionPolicy::AllKeysLru,
            samples: 5,
            zone: ZoneConfig {
                enabled: zone,
                ..Default::default()
            },
        });
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for i in 0..20_000u64 {
            let v: Vec<u8> = (0..100).map(|_| rng.gen()).collect();
            set(&s, i, &v, SetTtl::Clear, 0);
        }
        check_all(&s);
        assert!(s.used_memory() <= limit + 2 * 4096);
        held.push(s.dbsize(Ns::new(0, 0)));
    }
    assert!(
        held[1] >= held[0],
        "with the zone {} < without {}",
        held[1],
        held[0]
    );
}

#[derive(Debug, Clone)]
enum Op {
    Set(u64, usize, Option<u64>),
    SetKeep(u64, usize),
    Append(u64),
    Del(u64),
    Expire(u64, Option<u64>),
    Get(u64),
    Rename(u64, u64),
    Fill(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u64..300;
    prop_oneof![
        5 => (key.clone(), 0usize..200, prop::option::of(100u64..200)).prop_map(|(k, x, t)| Op::Set(k, x, t)),
        1 => (key.clone(), 0usize..200).prop_map(|(k, x)| Op::SetKeep(k, x)),
        1 => key.clone().prop_map(Op::Append),
        1 => key.clone().prop_map(Op::Del),
        1 => (key.clone(), prop::option::of(100u64..200)).prop_map(|(k, t)| Op::Expire(k, t)),
        4 => key.clone().prop_map(Op::Get),
        1 => (key.clone(), key.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (1000u64..1_000_000).prop_map(Op::Fill),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// With the zone on and memory tight, every answer is the model's or (for a key
    /// the store evicted) a miss, never a wrong value; TTLs and DBSIZE follow both
    /// zones; the structures stay consistent.
    #[test]
    fn zoned_store_matches_a_map_model(ops in prop::collection::vec(op(), 1..400)) {
        let s = zoned(256 << 10, 1);
        let now = 50u64;
        let ns = Ns::new(0, 0);
        let mut model: HashMap<u64, (Vec<u8>, Option<u64>)> = HashMap::new();
        let mut salt = 0u64;
        for op in ops {
            salt += 1;
            match op {
                Op::Set(i, x, t) => {
                    let v = record(i * 1000 + salt, x);
                    set(&s, i, &v, t.map_or(SetTtl::Clear, SetTtl::At), now);
                    model.insert(i, (v, t));
                }
                Op::SetKeep(i, x) => {
                    let v = record(i * 1000 + salt, x);
                    let old_ttl = s.lock_key(&k(i)).ttl(ns, &k(i), now);
                    set(&s, i, &v, SetTtl::Keep, now);
                    let t = match old_ttl { TtlState::ExpiresAt(t) => Some(t), _ => None };
                    model.insert(i, (v, t));
                }
                Op::Append(i) => {
                    // APPEND's way: grow in place, then write the tail.
                    let r = s.lock_key(&k(i)).update(ns, &k(i), now, |l| l + 5, |v, existed| {
                        let n = v.len();
                        v[n - 5..].copy_from_slice(b"+tail");
                        existed
                    });
                    prop_assert!(r.is_ok());
                    let existed = r.unwrap();
                    match s.lock_key(&k(i)).peek(ns, &k(i), now).unwrap() {
                        Some(v) => {
                            // A key created by APPEND (absent, or evicted) has no TTL.
                            let t = if existed { model.get(&i).and_then(|(_, t)| *t) } else { None };
                            model.insert(i, (v.to_vec(), t));
                        }
                        None => { model.remove(&i); }
                    }
                }
                Op::Del(i) => {
                    s.lock_key(&k(i)).delete(ns, &k(i), now);
                    model.remove(&i);
                }
                Op::Expire(i, t) => {
                    let r = s.lock_key(&k(i)).set_expire(ns, &k(i), t, now);
                    if r {
                        if let Some(m) = model.get_mut(&i) { m.1 = t; }
                    } else if t.is_some() {
                        model.remove(&i); // evicted before
                    }
                }
                Op::Get(i) => {
                    let got = get(&s, i, now);
                    match (&got, model.get(&i)) {
                        (Some(v), Some((m, _))) => prop_assert_eq!(v, m),
                        (Some(_), None) => prop_assert!(false, "key {} came back from nowhere", i),
                        (None, Some(_)) => { model.remove(&i); } // evicted
                        (None, None) => {}
                    }
                }
                Op::Rename(a, b) => {
                    let r = crate::tests_keyops::relocate(&s, ns, &k(a), ns, &k(b), Relocation::Rename);
                    if r == Relocated::Done {
                        if let Some(m) = model.remove(&a) { model.insert(b, m); }
                        else { model.remove(&b); }
                    } else {
                        model.remove(&a);
                    }
                }
                Op::Fill(seed) => {
                    for j in 0..200u64 {
                        let i = 1000 + (seed + j) % 5000;
                        set(&s, i, &record(i, 20), SetTtl::Clear, now);
                        model.insert(i, (record(i, 20), None));
                    }
                }
            }
            check_all(&s);
        }
        let mut present = 0u64;
        for (i, (v, t)) in &model {
            let mut g = s.lock_key(&k(*i));
            // Absent: evicted.
            if let Some(got) = g.peek(ns, &k(*i), now).unwrap() {
                prop_assert_eq!(got, &v[..]);
                present += 1;
                let ttl = g.ttl(ns, &k(*i), now);
                prop_assert_eq!(ttl, t.map_or(TtlState::Persistent, TtlState::ExpiresAt));
            }
        }
        prop_assert_eq!(s.dbsize(ns), present);
        let keys = s.keys(ns, b"*", now);
        prop_assert_eq!(keys.len() as u64, present);
    }
}

/// The adaptive split (§3.3.1) converges: on a skewed workload (Zipf 0.99 GETs, SET on
/// a miss) with windows of 100 ms, the fraction of requests served in the N-zone moves
/// to the target (0.8 here) within a band, and the N-zone's share moves from its start.
#[test]
fn the_split_converges_to_the_target_fraction() {
    use rand::{Rng, SeedableRng};
    let s = zoned(2 << 20, 2);
    s.set_zone_window_ms(100);
    s.set_zone_target(0.8);
    let keys = 40_000u64;
    // Zipf(0.99) by inverse CDF over a precomputed table.
    let weights: Vec<f64> = (1..=keys).map(|r| 1.0 / (r as f64).powf(0.99)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(keys as usize);
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
    let mut now = 1_000u64;
    let mut fractions = Vec::new();
    for round in 0..400 {
        for _ in 0..2_000 {
            let u: f64 = rng.gen();
            let i = cdf.partition_point(|&c| c < u) as u64;
            if get(&s, i, now).is_none() {
                set(&s, i, &record(i, 0), SetTtl::Clear, now);
            }
        }
        now += 50;
        s.active_expire_cycle(now);
        if round >= 300 {
            fractions.push(s.zone_stats(None).last_window_n_fraction);
        }
    }
    check_all(&s);
    let z = s.zone_stats(None);
    let mean = fractions.iter().sum::<f64>() / fractions.len() as f64;
    eprintln!("split: mean served in N {mean:.3}, {z:?}");
    assert!(z.z_items > 1000, "{z:?}");
    assert!((z.n_share - INITIAL_N_SHARE).abs() > 0.02, "{z:?}");
    assert!(
        (0.74..=0.86).contains(&mean),
        "served in N over the last windows: {mean:.3} (target 0.8), {z:?}"
    );
}

/// SET over a key in the Z-zone leaves a stale copy there (§3.3.2): invisible to GET
/// after a DEL, to KEYS and to DBSIZE; KEEPTTL takes the Z copy's TTL; the stale copy
/// is removed by the zone's next replacement run or replaced by the key's next demotion.
#[test]
fn a_set_over_a_z_item_supersedes_it() {
    let s = zoned(1 << 20, 1);
    let ns = Ns::new(0, 0);
    set(&s, 0, &record(0, 0), SetTtl::At(10_000), 0);
    for i in 1..14_000u64 {
        set(&s, i, &record(i, 0), SetTtl::Clear, 0);
    }
    // Key 0 (oldest, never read) is in the Z-zone.
    let z0 = s.zone_stats(None);
    assert!(s.lock_key(&k(0)).exists(ns, &k(0), 0));
    let n = s.dbsize(ns);
    set(&s, 0, b"new", SetTtl::Keep, 0);
    check_all(&s);
    assert_eq!(s.dbsize(ns), n, "an overwrite adds no key");
    assert_eq!(s.zone_stats(None).promotions, z0.promotions, "not moved");
    assert_eq!(get(&s, 0, 0).as_deref(), Some(&b"new"[..]));
    assert_eq!(
        s.lock_key(&k(0)).ttl(ns, &k(0), 0),
        TtlState::ExpiresAt(10_000)
    );
    let keys = s.keys(ns, b"rec:0", 0);
    assert_eq!(keys, vec![k(0)]);
    // Deleted from the N-zone: the stale Z copy must not resurface.
    assert!(s.lock_key(&k(0)).delete(ns, &k(0), 0));
    assert_eq!(get(&s, 0, 0), None);
    assert!(!s.lock_key(&k(0)).exists(ns, &k(0), 0));
    assert_eq!(s.dbsize(ns), n - 1);
    check_all(&s);
    // Pressure: the replacement runs (stale copies first), nothing resurfaces.
    for i in 14_000..40_000u64 {
        set(&s, i, &record(i, 0), SetTtl::Clear, 0);
    }
    check_all(&s);
    assert_eq!(get(&s, 0, 0), None);
}
