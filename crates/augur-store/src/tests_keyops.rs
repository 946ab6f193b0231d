//! Tests of the entry-level key operations: RENAME/COPY/MOVE against a map model,
//! in-place updates, SCAN page sizes and OBJECT IDLETIME's seconds.

use crate::tests::{check_all, store};
use crate::*;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// Key 0 is the empty key (Redis accepts it; with an empty value in database 0 its
/// entry is the smallest block there is).
fn key(k: u8) -> Vec<u8> {
    if k == 0 {
        return Vec::new();
    }
    format!("key:{k}").into_bytes()
}

#[derive(Debug, Clone)]
enum Op {
    Set(u8, u8, Vec<u8>, Option<u64>),
    Rename(u8, u8, u8, bool),
    Copy(u8, u8, u8, u8, bool),
    Move(u8, u8, u8),
    Update(u8, u8, usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let db = 0u8..3;
    let k = 0u8..12;
    prop_oneof![
        4 => (db.clone(), k.clone(), prop::collection::vec(any::<u8>(), 0..200), prop::option::of(1000u64..2000))
            .prop_map(|(d, k, v, t)| Op::Set(d, k, v, t)),
        2 => (db.clone(), k.clone(), k.clone(), any::<bool>()).prop_map(|(d, a, b, nx)| Op::Rename(d, a, b, nx)),
        2 => (db.clone(), k.clone(), db.clone(), k.clone(), any::<bool>()).prop_map(|(d, a, d2, b, r)| Op::Copy(d, a, d2, b, r)),
        2 => (db.clone(), k.clone(), db.clone()).prop_map(|(d, a, d2)| Op::Move(d, a, d2)),
        2 => (db, k, 0usize..300, any::<u8>()).prop_map(|(d, a, at, b)| Op::Update(d, a, at, b)),
    ]
}

type Model = HashMap<(u8, Vec<u8>), (Vec<u8>, Option<u64>)>;

/// Runs a relocation through the store the way the commands do (both shards locked).
pub(crate) fn relocate(
    s: &Store,
    from: Ns,
    a: &[u8],
    to: Ns,
    b: &[u8],
    how: Relocation,
) -> Relocated {
    let mut lock = s.lock_keys(&[a, b]);
    let (src, dst) = lock.pair(a, b);
    src.relocate(dst, from, a, to, b, how, 10).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// RENAME / RENAMENX / COPY / MOVE / in-place updates behave like the map model
    /// (values and TTLs travel, destinations are overwritten or refused as db.c says)
    /// and every internal structure, including byte accounting, stays consistent.
    #[test]
    fn relocations_match_a_map_model(ops in prop::collection::vec(op(), 1..120), shards in prop::sample::select(vec![1usize, 4])) {
        let s = store(0, EvictionPolicy::NoEviction, shards);
        let mut m: Model = HashMap::new();
        for op in ops {
            match op {
                Op::Set(d, k, v, t) => {
                    let ttl = t.map_or(SetTtl::Clear, SetTtl::At);
                    s.lock_key(&key(k)).set(Ns::new(0, d), &key(k), &v, ttl, 10).unwrap();
                    m.insert((d, key(k)), (v, t));
                }
                Op::Rename(d, a, b, nx) => {
                    if a == b { continue; }
                    let how = if nx { Relocation::RenameNx } else { Relocation::Rename };
                    let got = relocate(&s, Ns::new(0, d), &key(a), Ns::new(0, d), &key(b), how);
                    let want = match m.get(&(d, key(a))).cloned() {
                        None => Relocated::SourceMissing,
                        Some(_) if nx && m.contains_key(&(d, key(b))) => Relocated::DestinationExists,
                        Some(e) => {
                            m.remove(&(d, key(a)));
                            m.insert((d, key(b)), e);
                            Relocated::Done
                        }
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Copy(d, a, d2, b, replace) => {
                    if d == d2 && a == b { continue; }
                    let got = relocate(&s, Ns::new(0, d), &key(a), Ns::new(0, d2), &key(b), Relocation::Copy { replace });
                    let want = match m.get(&(d, key(a))).cloned() {
                        None => Relocated::SourceMissing,
                        Some(_) if !replace && m.contains_key(&(d2, key(b))) => Relocated::DestinationExists,
                        Some(e) => {
                            m.insert((d2, key(b)), e);
                            Relocated::Done
                        }
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Move(d, a, d2) => {
                    if d == d2 { continue; }
                    let got = s.lock_key(&key(a)).relocate(None, Ns::new(0, d), &key(a), Ns::new(0, d2), &key(a), Relocation::RenameNx, 10).unwrap();
                    let want = match m.get(&(d, key(a))).cloned() {
                        None => Relocated::SourceMissing,
                        Some(_) if m.contains_key(&(d2, key(a))) => Relocated::DestinationExists,
                        Some(e) => {
                            m.remove(&(d, key(a)));
                            m.insert((d2, key(a)), e);
                            Relocated::Done
                        }
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Update(d, a, at, byte) => {
                    let len = s.lock_key(&key(a)).update(Ns::new(0, d), &key(a), 10, |l| l.max(at + 1), |v, _| { v[at] = byte; v.len() }).unwrap();
                    let e = m.entry((d, key(a))).or_insert((Vec::new(), None));
                    if e.0.len() <= at { e.0.resize(at + 1, 0); }
                    e.0[at] = byte;
                    prop_assert_eq!(len, e.0.len());
                }
            }
            check_all(&s);
        }
        for d in 0..3u8 {
            for k in 0..12u8 {
                let mut g = s.lock_key(&key(k));
                let got = g.peek(Ns::new(0, d), &key(k), 10).unwrap().map(|v| v.to_vec());
                let ttl = g.ttl(Ns::new(0, d), &key(k), 10);
                let want = m.get(&(d, key(k)));
                prop_assert_eq!(got.as_ref(), want.map(|e| &e.0), "db {} key {}", d, k);
                if let Some((_, t)) = want {
                    let expect = t.map_or(TtlState::Persistent, TtlState::ExpiresAt);
                    prop_assert_eq!(ttl, expect);
                }
            }
        }
    }
}

#[test]
fn a_refused_relocation_under_noeviction_loses_nothing() {
    // 4 shards; fill until writes are refused, then try to rename across shards.
    let s = store(64 << 10, EvictionPolicy::NoEviction, 4);
    let mut keys = Vec::new();
    for i in 0..10_000u32 {
        let k = format!("k{i}").into_bytes();
        if s.lock_key(&k)
            .set(Ns::new(0, 0), &k, &[1; 500], SetTtl::Clear, 0)
            .is_err()
        {
            break;
        }
        keys.push(k);
    }
    let before = s.used_memory();
    let mut refused = 0;
    for (i, k) in keys.iter().enumerate() {
        let new = format!("renamed-{i}-with-a-longer-name").into_bytes();
        let mut lock = s.lock_keys(&[k, &new]);
        let (src, dst) = lock.pair(k, &new);
        match src.relocate(
            dst,
            Ns::DEFAULT,
            k,
            Ns::DEFAULT,
            &new,
            Relocation::Rename,
            0,
        ) {
            Err(WriteError::OutOfMemory) => {
                refused += 1;
                drop(lock);
                assert_eq!(
                    s.lock_key(k).peek(Ns::DEFAULT, k, 0),
                    Ok(Some(&[1u8; 500][..]))
                );
                assert!(!s.lock_key(&new).exists(Ns::DEFAULT, &new, 0));
            }
            Ok(Relocated::Done) => {
                drop(lock);
                assert_eq!(
                    s.lock_key(&new).peek(Ns::DEFAULT, &new, 0),
                    Ok(Some(&[1u8; 500][..]))
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(refused > 0, "some shard was full");
    assert!(s.used_memory() <= before + 4 * 1024);
    assert_eq!(s.dbsize(Ns::DEFAULT), keys.len() as u64);
    check_all(&s);
}

#[test]
fn update_grows_in_place_keeps_ttl_and_marks_raw() {
    let s = store(0, EvictionPolicy::NoEviction, 1);
    let ns = Ns::DEFAULT;
    let mut g = s.lock_key(b"k");
    g.set(ns, b"k", b"12", SetTtl::At(5000), 0).unwrap();
    assert!(!g.object_info(ns, b"k", 0).unwrap().raw);
    let n = g
        .update(
            ns,
            b"k",
            0,
            |l| l.max(1 << 20),
            |v, existed| {
                assert!(existed);
                v[(1 << 20) - 1] = 9;
                v.len()
            },
        )
        .unwrap();
    assert_eq!(n, 1 << 20);
    let v = g.peek(ns, b"k", 0).unwrap().unwrap();
    assert_eq!((&v[..2], v[3], v[(1 << 20) - 1]), (&b"12"[..], 0, 9));
    assert_eq!(g.ttl(ns, b"k", 0), TtlState::ExpiresAt(5000));
    assert!(g.object_info(ns, b"k", 0).unwrap().raw);
    // A plain SET makes it a fresh string again.
    g.set(ns, b"k", b"x", SetTtl::Keep, 0).unwrap();
    assert!(!g.object_info(ns, b"k", 0).unwrap().raw);
    // A missing key starts empty, without a TTL.
    let existed = g.update(ns, b"new", 0, |l| l + 3, |_, e| e).unwrap();
    assert!(!existed);
    assert_eq!(g.peek(ns, b"new", 0), Ok(Some(&[0u8; 3][..])));
    assert_eq!(g.ttl(ns, b"new", 0), TtlState::Persistent);
    g.check_invariants();
    drop(g);
    assert!(s.used_memory() < (1 << 20) + (1 << 19));
}

#[test]
fn scan_pages_hold_about_count_keys_and_none_is_empty() {
    let s = store(0, EvictionPolicy::NoEviction, 16);
    for i in 0..1000u32 {
        let k = format!("key:{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::DEFAULT, k.as_bytes(), b"v", SetTtl::Clear, 0)
            .unwrap();
        // Another database's keys share the tables and must not count.
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 1), k.as_bytes(), b"v", SetTtl::Clear, 0)
            .unwrap();
    }
    let (mut cursor, mut calls, mut empty) = (0, 0, 0);
    let mut seen = HashSet::new();
    loop {
        let page = s.scan(Ns::DEFAULT, cursor, 10, None, 0);
        calls += 1;
        empty += page.keys.is_empty() as u32;
        assert!(page.keys.len() <= 10, "{}", page.keys.len());
        seen.extend(page.keys);
        cursor = page.next_cursor;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    assert_eq!(empty, 0);
    assert!(calls <= 101, "{calls} calls");
}

#[test]
fn idle_time_is_counted_in_wall_clock_seconds() {
    let s = store(0, EvictionPolicy::NoEviction, 1);
    let ns = Ns::DEFAULT;
    s.lock_key(b"a")
        .set(ns, b"a", b"1", SetTtl::Clear, 1_000_000)
        .unwrap();
    s.active_expire_cycle(1_000_100);
    // Many accesses to other keys move the logical clock, not the wall clock.
    for i in 0..1000u32 {
        let k = format!("o{i}");
        s.lock_key(k.as_bytes())
            .set(ns, k.as_bytes(), b"x", SetTtl::Clear, 1_001_000)
            .unwrap();
    }
    s.active_expire_cycle(1_001_100);
    s.active_expire_cycle(1_005_000);
    assert_eq!(
        s.lock_key(b"a")
            .object_info(ns, b"a", 1_005_000)
            .unwrap()
            .idle_secs,
        5
    );
    assert_eq!(
        s.lock_key(b"o1")
            .object_info(ns, b"o1", 1_005_000)
            .unwrap()
            .idle_secs,
        4
    );
    // A read makes it recent.
    let _ = s.lock_key(b"a").get(ns, b"a", 1_006_000);
    s.active_expire_cycle(1_006_100);
    assert_eq!(
        s.lock_key(b"a")
            .object_info(ns, b"a", 1_008_000)
            .unwrap()
            .idle_secs,
        2
    );
}
