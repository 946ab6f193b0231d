//! Store tests: a model check against a plain map, eviction, TTL, SCAN and accounting.

use crate::*;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// A store with 4 databases and K = 5 (shared with `tests_keyops` and `object_tests`).
pub(crate) fn store(maxmemory: u64, policy: EvictionPolicy, shards: usize) -> Store {
    Store::new(StoreConfig {
        shards,
        databases: 4,
        maxmemory,
        policy,
        samples: 5,
        zone: Default::default(),
    })
}
/// SET of `k` to `v` in tenant 0, db 0.
pub(crate) fn set(s: &Store, k: &str, v: &[u8]) -> Result<(), WriteError> {
    s.lock_key(k.as_bytes())
        .set(Ns::new(0, 0), k.as_bytes(), v, SetTtl::Clear, 0)
}

/// GET in tenant 0, db 0 (a string key); true on a hit.
pub(crate) fn get_hits(s: &Store, k: &str) -> bool {
    s.lock_key(k.as_bytes())
        .get(Ns::new(0, 0), k.as_bytes(), 0)
        .unwrap()
        .is_some()
}

/// GET, and SET on a miss (a cache's read path), in tenant 0, db 0; true on a hit.
pub(crate) fn access(s: &Store, k: &str, v: &[u8]) -> bool {
    let ns = Ns::new(0, 0);
    let mut g = s.lock_key(k.as_bytes());
    if g.get(ns, k.as_bytes(), 0).unwrap().is_some() {
        return true;
    }
    g.set(ns, k.as_bytes(), v, SetTtl::Clear, 0).unwrap();
    false
}

/// The memory `n` keys like `k{i}` with `v` take, measured on an unlimited store.
pub(crate) fn memory_for(n: u32, v: &[u8], shards: usize) -> u64 {
    let probe = store(0, EvictionPolicy::NoEviction, shards);
    for i in 0..n {
        set(&probe, &format!("k{i}"), v).unwrap();
    }
    probe.used_memory()
}

pub(crate) fn check_all(s: &Store) {
    for i in 0..s.shard_count() {
        s.lock_shard(i).check_invariants();
    }
}

/// The value the live-switch tests write to key `k{i}`.
pub(crate) fn switch_test_value(i: u32) -> String {
    format!("value-{i}-{}", "x".repeat((i % 50) as usize))
}

/// The first part of the live-switch tests (`switching_between_lru_and_*`): an
/// unlimited store of 4 shards holding `k0..k5000` goes through `policies`, each time
/// reading every third key and rewriting every seventh under the new policy: no key is
/// lost, every value stays intact, idle times stay sane in every format (nothing here is
/// older than the run: a misread word would look billions of accesses old), and the
/// structures stay consistent. Returns the store (under the last policy).
pub(crate) fn switches_lose_no_key(policies: &[EvictionPolicy]) -> Store {
    let ns = Ns::new(0, 0);
    let s = store(0, EvictionPolicy::AllKeysLru, 4);
    for i in 0..5000u32 {
        set(&s, &format!("k{i}"), switch_test_value(i).as_bytes()).unwrap();
    }
    for &policy in policies {
        s.set_policy(policy);
        for i in (0..5000u32).step_by(3) {
            let k = format!("k{i}");
            let _ = s.lock_key(k.as_bytes()).get(ns, k.as_bytes(), 0);
        }
        for i in (0..5000u32).step_by(7) {
            set(&s, &format!("k{i}"), switch_test_value(i).as_bytes()).unwrap();
        }
        assert_eq!(s.dbsize(ns), 5000, "after switching to {policy}");
        for i in 0..5000u32 {
            let k = format!("k{i}");
            let mut g = s.lock_key(k.as_bytes());
            let info = g.info(ns, k.as_bytes(), 0).expect("key kept");
            assert!(
                info.idle_accesses < 1_000_000,
                "{k} under {policy}: idle {}",
                info.idle_accesses
            );
            assert_eq!(
                g.peek(ns, k.as_bytes(), 0).unwrap(),
                Some(switch_test_value(i).as_bytes())
            );
        }
        check_all(&s);
    }
    s
}

/// The end of the live-switch tests (`switching_between_lru_and_*`): with the even keys
/// of `k0..k5000` just read under the store's current policy, halving `maxmemory` must
/// keep over twice as many read keys as unread ones, and `allkeys-lru` after it must go
/// on evicting (over entries in the other policy's format) within the new limit.
pub(crate) fn halving_keeps_read_keys_then_lru_evicts(s: &Store) {
    let ns = Ns::new(0, 0);
    let before = s.used_memory();
    s.set_maxmemory(before / 2);
    check_all(s);
    assert!(s.used_memory() <= before / 2);
    let kept = |parity: u32| {
        (0..5000u32)
            .filter(|i| i % 2 == parity)
            .filter(|i| {
                let k = format!("k{i}");
                s.lock_key(k.as_bytes()).exists(ns, k.as_bytes(), 0)
            })
            .count()
    };
    let (read, unread) = (kept(0), kept(1));
    assert!(read > unread * 2, "kept {read} read keys, {unread} unread");
    s.set_policy(EvictionPolicy::AllKeysLru);
    for i in 5000..8000u32 {
        set(s, &format!("k{i}"), switch_test_value(i).as_bytes()).unwrap();
    }
    assert!(s.used_memory() <= before / 2);
    check_all(s);
}

#[derive(Debug, Clone)]
enum Op {
    Set(u8, u8, Vec<u8>, Option<u64>),
    SetKeep(u8, u8, Vec<u8>),
    Del(u8, u8),
    Expire(u8, u8, Option<u64>),
    Get(u8, u8),
    FlushDb(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let db = 0u8..3;
    let key = 0u8..24;
    let val = prop::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        6 => (db.clone(), key.clone(), val.clone(), prop::option::of(100u64..200)).prop_map(|(d, k, v, t)| Op::Set(d, k, v, t)),
        2 => (db.clone(), key.clone(), val).prop_map(|(d, k, v)| Op::SetKeep(d, k, v)),
        2 => (db.clone(), key.clone()).prop_map(|(d, k)| Op::Del(d, k)),
        2 => (db.clone(), key.clone(), prop::option::of(100u64..200)).prop_map(|(d, k, t)| Op::Expire(d, k, t)),
        3 => (db.clone(), key).prop_map(|(d, k)| Op::Get(d, k)),
        1 => db.prop_map(Op::FlushDb),
    ]
}

type Model = HashMap<(u8, Vec<u8>), (Vec<u8>, Option<u64>)>;

fn key(k: u8) -> Vec<u8> {
    format!("key:{k}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Without a memory limit, the store behaves exactly like a map of (db, key) to
    /// (value, expiry), and every internal structure stays consistent.
    #[test]
    fn store_matches_a_map_model(ops in prop::collection::vec(op(), 1..200), shards in prop::sample::select(vec![1usize, 4])) {
        let s = store(0, EvictionPolicy::NoEviction, shards);
        let now = 50u64; // All TTLs are in the future (100..200).
        let mut model: Model = HashMap::new();
        for op in ops {
            match op {
                Op::Set(db, k, v, t) => {
                    let ttl = t.map_or(SetTtl::Clear, SetTtl::At);
                    s.lock_key(&key(k)).set(Ns::new(0, db), &key(k), &v, ttl, now).unwrap();
                    model.insert((db, key(k)), (v, t));
                }
                Op::SetKeep(db, k, v) => {
                    s.lock_key(&key(k)).set(Ns::new(0, db), &key(k), &v, SetTtl::Keep, now).unwrap();
                    let old = model.get(&(db, key(k))).and_then(|(_, t)| *t);
                    model.insert((db, key(k)), (v, old));
                }
                Op::Del(db, k) => {
                    let existed = s.lock_key(&key(k)).delete(Ns::new(0, db), &key(k), now);
                    prop_assert_eq!(existed, model.remove(&(db, key(k))).is_some());
                }
                Op::Expire(db, k, t) => {
                    let r = s.lock_key(&key(k)).set_expire(Ns::new(0, db), &key(k), t, now);
                    let expected = match (model.get_mut(&(db, key(k))), t) {
                        (None, _) => false,
                        (Some((_, old)), None) => old.take().is_some(),
                        (Some((_, old)), Some(t)) => { *old = Some(t); true }
                    };
                    prop_assert_eq!(r, expected);
                }
                Op::Get(db, k) => {
                    let got = s.lock_key(&key(k)).get(Ns::new(0, db), &key(k), now).unwrap().map(|v| v.to_vec());
                    prop_assert_eq!(got, model.get(&(db, key(k))).map(|(v, _)| v.clone()));
                }
                Op::FlushDb(db) => {
                    s.flushdb(Ns::new(0, db));
                    model.retain(|(d, _), _| *d != db);
                }
            }
            check_all(&s);
        }
        for ((db, k), (v, t)) in &model {
            let mut g = s.lock_key(k);
            prop_assert_eq!(g.peek(Ns::new(0, *db), k, now), Ok(Some(&v[..])));
            let ttl = g.ttl(Ns::new(0, *db), k, now);
            prop_assert_eq!(ttl, t.map_or(TtlState::Persistent, TtlState::ExpiresAt));
        }
        for db in 0..3u8 {
            let n = model.keys().filter(|(d, _)| *d == db).count() as u64;
            prop_assert_eq!(s.dbsize(Ns::new(0, db)), n);
            let mut keys = s.keys(Ns::new(0, db), b"*", now);
            keys.sort();
            let mut expected: Vec<Vec<u8>> = model.keys().filter(|(d, _)| *d == db).map(|(_, k)| k.clone()).collect();
            expected.sort();
            prop_assert_eq!(keys, expected);
        }
    }
}

/// The clock counts requests as a simulator counts accesses: a read miss and the insert
/// that fills it are one tick (LHD's ages, measured on it, then mean the simulator's);
/// an overwrite, a hit and an insert without a miss before it tick once each; misses
/// never filled hold back at most `MAX_UNFILLED_READS` (1 024) later inserts.
#[test]
fn a_miss_and_its_fill_are_one_tick_of_the_clock() {
    let s = store(0, EvictionPolicy::AllKeysLru, 1);
    let clock = || s.lock_key(b"a").clock();
    let c0 = clock();
    assert!(!get_hits(&s, "a"));
    set(&s, "a", b"1").unwrap();
    assert_eq!(clock(), c0 + 1, "a miss and its fill");
    set(&s, "b", b"1").unwrap();
    assert_eq!(clock(), c0 + 2, "an insert without a miss");
    assert!(get_hits(&s, "a"));
    assert_eq!(clock(), c0 + 3, "a hit");
    assert!(!get_hits(&s, "x"));
    set(&s, "a", b"2").unwrap();
    assert_eq!(clock(), c0 + 5, "an overwrite does not fill the miss");
    set(&s, "y", b"1").unwrap();
    assert_eq!(clock(), c0 + 5, "the next insert does");
    for i in 0..2000 {
        assert!(!get_hits(&s, &format!("m{i}")));
    }
    for i in 0..2000 {
        set(&s, &format!("n{i}"), b"1").unwrap();
    }
    assert_eq!(
        clock(),
        c0 + 5 + 2000 + (2000 - 1024),
        "at most 1 024 unfilled"
    );
    check_all(&s);
}

#[test]
fn eviction_keeps_memory_within_the_limit_and_counts_evictions() {
    let limit = 4 << 20;
    let s = store(limit, EvictionPolicy::AllKeysLru, 4);
    let value = vec![b'x'; 100];
    for i in 0..200_000u32 {
        let k = format!("key:{i:010}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &value, SetTtl::Clear, 0)
            .unwrap();
    }
    check_all(&s);
    let used = s.used_memory();
    // Each shard may overshoot its budget by the one write that follows eviction.
    assert!(used <= limit + 4 * 256, "used {used} > limit {limit}");
    assert!(used > limit * 9 / 10, "eviction too eager: {used}");
    let st = s.stats(0);
    assert_eq!(st.evicted_keys + s.dbsize(Ns::new(0, 0)), 200_000);
    assert!(st.evicted_keys > 100_000);
}

#[test]
fn sampled_lru_keeps_recently_used_keys() {
    // 10_000 keys fit; a hot set of 1_000 keys is read between every cold insert. With
    // Redis's pooled sampling (K = 5) hot keys should essentially all survive.
    let value = vec![0u8; 100];
    let probe = store(0, EvictionPolicy::NoEviction, 1);
    for i in 0..10_000u32 {
        let k = format!("k{i}");
        probe
            .lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &value, SetTtl::Clear, 0)
            .unwrap();
    }
    let limit = probe.used_memory();
    let s = store(limit, EvictionPolicy::AllKeysLru, 1);
    for round in 0..50_000u32 {
        let hot = format!("hot{}", round % 1000);
        let mut g = s.lock_key(hot.as_bytes());
        if g.get(Ns::new(0, 0), hot.as_bytes(), 0).unwrap().is_none() {
            g.set(Ns::new(0, 0), hot.as_bytes(), &value, SetTtl::Clear, 0)
                .unwrap();
        }
        drop(g);
        let cold = format!("cold{round}");
        s.lock_key(cold.as_bytes())
            .set(Ns::new(0, 0), cold.as_bytes(), &value, SetTtl::Clear, 0)
            .unwrap();
    }
    let st = s.stats(0);
    // Hot keys miss only on their first touch (1_000) plus rare evictions.
    assert!(
        st.keyspace_misses < 1_100,
        "hot-set misses: {}",
        st.keyspace_misses
    );
}

#[test]
fn random_policy_evicts_and_noeviction_refuses_writes() {
    let s = store(1 << 20, EvictionPolicy::AllKeysRandom, 2);
    for i in 0..30_000u32 {
        let k = format!("{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &[1; 64], SetTtl::Clear, 0)
            .unwrap();
    }
    assert!(s.stats(0).evicted_keys > 0);
    check_all(&s);

    let s = store(1 << 20, EvictionPolicy::NoEviction, 2);
    let mut refused = false;
    for i in 0..30_000u32 {
        let k = format!("{i}");
        match s
            .lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &[1; 64], SetTtl::Clear, 0)
        {
            Ok(()) => {}
            Err(WriteError::OutOfMemory) => {
                refused = true;
                break;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(refused);
    assert!(s.over_limit_for_writes() || s.used_memory() <= 1 << 20);
    assert_eq!(s.stats(0).evicted_keys, 0);
}

/// Writes `write(i)` for i in 0..n until one is refused with OOM: how many were stored,
/// and the store's usage before the refused write (None if none was refused).
fn fill_until_refused(
    n: u32,
    write: impl Fn(u32) -> Result<(), WriteError>,
    s: &Store,
) -> (u32, Option<u64>) {
    let mut stored = 0;
    for i in 0..n {
        let before = s.used_memory();
        match write(i) {
            Ok(()) => stored += 1,
            Err(WriteError::OutOfMemory) => return (stored, Some(before)),
            Err(e) => panic!("{e:?}"),
        }
    }
    (stored, None)
}

/// noeviction refuses a write when the store is full, not when the key's shard is over
/// its 1/N share: 10 KB values in 1 MB over 64 shards (16 KB shares). Before, the first
/// key to land on an occupied shard was refused (after 3 keys with this hash, ~10 with
/// the old one: a birthday collision), with the store nearly empty.
#[test]
fn noeviction_fills_the_whole_store_not_one_shard_share() {
    let limit = 1u64 << 20;
    let s = store(limit, EvictionPolicy::NoEviction, 64);
    let value = [7u8; 10_000];
    let (stored, refused_at) = fill_until_refused(1000, |i| set(&s, &format!("k:{i}"), &value), &s);
    let block = s.used_memory() / u64::from(stored);
    // Refused only when the write did not fit in what the whole store had left.
    let before = refused_at.expect("a 1 MB store took 1000 values of 10 KB");
    assert!(
        before + block > limit,
        "refused at {before} B used of {limit} (values of ~{block} B, {stored} stored)"
    );
    assert!(
        u64::from(stored) * block > limit * 9 / 10,
        "stored {stored}"
    );
    assert_eq!(s.stats(0).evicted_keys, 0);
    check_all(&s);
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    for policy in [
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
        EvictionPolicy::VolatileLhd,
    ] {
        let s = store(512 << 10, policy, 1);
        // Persistent keys first, then volatile ones with increasing expiry.
        for i in 0..1000u32 {
            let k = format!("p{i}");
            s.lock_key(k.as_bytes())
                .set(Ns::new(0, 0), k.as_bytes(), &[0; 100], SetTtl::Clear, 0)
                .unwrap();
        }
        let mut oom = false;
        for i in 0..20_000u64 {
            let k = format!("v{i}");
            if s.lock_key(k.as_bytes())
                .set(
                    Ns::new(0, 0),
                    k.as_bytes(),
                    &[0; 100],
                    SetTtl::At(1_000_000 + i),
                    0,
                )
                .is_err()
            {
                oom = true;
            }
        }
        assert!(!oom, "{policy}: volatile keys were available to evict");
        for i in 0..1000u32 {
            let k = format!("p{i}");
            assert!(
                s.lock_key(k.as_bytes())
                    .exists(Ns::new(0, 0), k.as_bytes(), 0),
                "{policy} evicted persistent {k}"
            );
        }
        if policy == EvictionPolicy::VolatileTtl {
            // The soonest-expiring keys go first: early ones are mostly gone, late ones stay.
            let early = (0..1000u64)
                .filter(|i| {
                    s.lock_key(format!("v{i}").as_bytes()).exists(
                        Ns::new(0, 0),
                        format!("v{i}").as_bytes(),
                        0,
                    )
                })
                .count();
            let late = (19_000..20_000u64)
                .filter(|i| {
                    s.lock_key(format!("v{i}").as_bytes()).exists(
                        Ns::new(0, 0),
                        format!("v{i}").as_bytes(),
                        0,
                    )
                })
                .count();
            assert!(early < 50 && late > 950, "early {early} late {late}");
        }
        check_all(&s);
    }
    // Nothing volatile to evict: the write is refused with OOM, like Redis.
    let s = store(64 << 10, EvictionPolicy::VolatileLru, 1);
    let refused = (0..5000u32).any(|i| {
        let k = format!("p{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &[0; 100], SetTtl::Clear, 0)
            .is_err()
    });
    assert!(refused);
}

/// The volatile policies with something to evict only in keys with a TTL.
const VOLATILE_POLICIES: [EvictionPolicy; 6] = [
    EvictionPolicy::VolatileLru,
    EvictionPolicy::VolatileRandom,
    EvictionPolicy::VolatileTtl,
    EvictionPolicy::VolatileLhd,
    EvictionPolicy::VolatileLfu,
    EvictionPolicy::VolatileS3Fifo,
];

/// A write as the server runs it: the check before a `denyoom` command
/// (`Store::over_limit_for_writes`, which may evict in other shards), then the SET.
fn server_set(s: &Store, k: &str, v: &[u8], ttl: SetTtl) -> Result<(), WriteError> {
    if s.over_limit_for_writes() {
        return Err(WriteError::OutOfMemory);
    }
    s.lock_key(k.as_bytes())
        .set(Ns::new(0, 0), k.as_bytes(), v, ttl, 0)
}

fn exists(s: &Store, k: &str) -> bool {
    s.lock_key(k.as_bytes())
        .exists(Ns::new(0, 0), k.as_bytes(), 0)
}

/// A volatile policy with no key with a TTL refuses a write when the *store* is full, as
/// Redis does (unit/maxmemory, "only allkeys-* should remove non-volatile keys"), not
/// when the key's shard is over its 1/64 share: 256 KB over 64 shards are 4 KB shares,
/// ~15 keys of 200 B, and before, the first shard to fill refused with the store at a
/// fraction of its limit.
#[test]
fn volatile_policies_without_ttl_keys_fill_the_whole_store() {
    let limit = 256u64 << 10;
    let value = [3u8; 200];
    for policy in VOLATILE_POLICIES {
        let s = store(limit, policy, 64);
        let (stored, refused_at) = fill_until_refused(
            10_000,
            |i| server_set(&s, &format!("p:{i}"), &value, SetTtl::Clear),
            &s,
        );
        let block = s.used_memory() / u64::from(stored);
        let before = refused_at.unwrap_or_else(|| panic!("{policy}: 10,000 keys fit in 256 KB"));
        assert!(
            before + block > limit,
            "{policy}: refused at {before} B used of {limit} ({stored} keys of ~{block} B)"
        );
        // What a write is charged can exceed what it asked room for by its index's
        // growth (or S3-FIFO's ghost): the overshoot Redis's check before the command
        // also allows.
        assert!(
            s.used_memory() <= limit + block,
            "{policy}: {} B used",
            s.used_memory()
        );
        assert_eq!(
            s.stats(0).evicted_keys,
            0,
            "{policy} evicted a key without a TTL"
        );
        // Every further write of a key without a TTL is refused (nothing may be evicted).
        let refused = (0..stored)
            .filter(|i| server_set(&s, &format!("q:{i}"), &value, SetTtl::Clear).is_err())
            .count();
        assert!(
            refused as u32 > stored * 9 / 10,
            "{policy}: {refused} of {stored} refused"
        );
        assert!(
            s.used_memory() <= limit + block,
            "{policy}: {} B used",
            s.used_memory()
        );
        assert!(
            (0..stored).all(|i| exists(&s, &format!("p:{i}"))),
            "{policy}"
        );
        check_all(&s);
    }
}

/// Shards that run out of keys with a TTL borrow room the others left; the check before
/// each write then evicts keys with a TTL in the other shards, as Redis evicts them from
/// anywhere in its keyspace. 64 shards of 4 KB: keys without a TTL fill half the shards
/// to 1.4x their shares (so they borrow), keys with one the other half to 0.6x, and then
/// both kinds keep being written. The store must stay within its limit (plus the write
/// in flight), keep every key without a TTL, and refuse a write only once no key with a
/// TTL is left. Without the check's eviction the half under its shares takes the store
/// past its limit by more than a write.
#[test]
fn volatile_policies_evict_elsewhere_for_a_shard_without_ttl_keys() {
    let limit = 256u64 << 10;
    let value = [5u8; 200];
    let ttl = SetTtl::At(u64::MAX / 2);
    for policy in VOLATILE_POLICIES {
        let s = store(limit, policy, 64);
        let low = |k: &str| s.shard_index(k.as_bytes()) < 32;
        let keys = |prefix: &'static str, in_low: bool| {
            (0u32..)
                .map(move |i| format!("{prefix}{i}"))
                .filter(move |k| low(k) == in_low)
        };
        let mut persistent = Vec::new();
        for k in keys("p:", true) {
            if s.used_memory() > limit * 7 / 10 {
                break;
            }
            server_set(&s, &k, &value, SetTtl::Clear)
                .unwrap_or_else(|e| panic!("{policy}: {k}: {e:?}"));
            persistent.push(k);
        }
        let mut volatile = keys("v:", false);
        while s.used_memory() + 4096 <= limit {
            let k = volatile.next().unwrap();
            server_set(&s, &k, &value, ttl).unwrap_or_else(|e| panic!("{policy}: {k}: {e:?}"));
        }
        let mut more_persistent = keys("q:", true);
        let mut volatile_written = Vec::new();
        for j in 0..1000 {
            // One write in ten without a TTL: ~24 KB of the ~75 KB of keys with one.
            let (k, t) = if j % 10 == 0 {
                (more_persistent.next().unwrap(), SetTtl::Clear)
            } else {
                (volatile.next().unwrap(), ttl)
            };
            server_set(&s, &k, &value, t).unwrap_or_else(|e| panic!("{policy}: {k}: {e:?}"));
            assert!(
                s.used_memory() <= limit + 512,
                "{policy}: {} B used of {limit} after {k}",
                s.used_memory()
            );
            if t == SetTtl::Clear {
                persistent.push(k);
            } else {
                volatile_written.push(k);
            }
        }
        assert!(s.stats(0).evicted_keys > 0, "{policy}");
        // Then keys without a TTL until one is refused: only once none with a TTL is left.
        let refused =
            more_persistent
                .take(2000)
                .find(|k| match server_set(&s, k, &value, SetTtl::Clear) {
                    Ok(()) => {
                        persistent.push(k.clone());
                        false
                    }
                    Err(_) => true,
                });
        assert!(
            refused.is_some(),
            "{policy}: 2000 more keys without a TTL fit"
        );
        let left = volatile_written.iter().filter(|k| exists(&s, k)).count();
        assert_eq!(
            left, 0,
            "{policy}: refused with {left} keys with a TTL left"
        );
        assert!(
            s.used_memory() <= limit + 512,
            "{policy}: {} B used",
            s.used_memory()
        );
        for k in &persistent {
            assert!(exists(&s, k), "{policy} evicted {k} (no TTL)");
        }
        check_all(&s);
    }
}

/// Values large against a shard's share (100 KB in 11 MB over 64 shards: 176 KB shares)
/// fill the store, not one share per shard: held to its share a shard kept one such
/// value where two did not fit, and the store 60 keys (6.9 MB) where redis-server keeps
/// 90. The check before each write keeps the store within its limit plus the write.
#[test]
fn large_values_fill_the_store_not_each_shard_share() {
    let limit = 11u64 << 20;
    let value = vec![9u8; 100_000];
    for policy in [
        EvictionPolicy::AllKeysLru,
        EvictionPolicy::AllKeysRandom,
        EvictionPolicy::AllKeysLhd,
        EvictionPolicy::AllKeysLfu,
        EvictionPolicy::AllKeysS3Fifo,
    ] {
        let s = store(limit, policy, 64);
        for i in 0..50u32 {
            server_set(&s, &format!("k:{i}"), &value, SetTtl::Clear).unwrap();
        }
        assert_eq!(
            s.stats(0).evicted_keys,
            0,
            "{policy}: 50 values of 100 KB in 11 MB"
        );
        for i in 50..400u32 {
            server_set(&s, &format!("k:{i}"), &value, SetTtl::Clear)
                .unwrap_or_else(|e| panic!("{policy}: k:{i}: {e:?}"));
            assert!(
                s.used_memory() <= limit + 110_000,
                "{policy}: {} B used after k:{i}",
                s.used_memory()
            );
        }
        let keys = (0..400u32)
            .filter(|i| exists(&s, &format!("k:{i}")))
            .count();
        assert!(
            s.used_memory() > limit * 9 / 10 && keys >= 95,
            "{policy}: {keys} keys, {} B used of {limit}",
            s.used_memory()
        );
        check_all(&s);
    }
}

#[test]
fn ttl_expires_lazily_and_in_the_active_cycle() {
    let s = store(0, EvictionPolicy::NoEviction, 4);
    for i in 0..1000u32 {
        let k = format!("t{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), b"v", SetTtl::At(1000), 0)
            .unwrap();
    }
    s.lock_key(b"keep")
        .set(Ns::new(0, 0), b"keep", b"v", SetTtl::Clear, 0)
        .unwrap();
    // Not yet expired at the expiry instant itself (Redis: expired when now > when).
    assert!(s.lock_key(b"t1").exists(Ns::new(0, 0), b"t1", 1000));
    // Lazy: a read after expiry sees nothing and removes the key.
    assert_eq!(s.lock_key(b"t1").get(Ns::new(0, 0), b"t1", 1001), Ok(None));
    let mut removed = 0;
    for _ in 0..200 {
        removed += s.active_expire_cycle(1001);
    }
    assert_eq!(removed, 999);
    assert_eq!(s.dbsize(Ns::new(0, 0)), 1);
    assert_eq!(s.stats(0).expired_keys, 1000);
    check_all(&s);
}

#[test]
fn scan_returns_every_key_present_throughout_despite_deletes() {
    let s = store(0, EvictionPolicy::NoEviction, 4);
    for i in 0..5000u32 {
        let k = format!("k{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), b"v", SetTtl::Clear, 0)
            .unwrap();
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 1), k.as_bytes(), b"v", SetTtl::Clear, 0)
            .unwrap();
    }
    let mut seen = HashSet::new();
    let mut cursor = 0;
    let mut step = 0u32;
    loop {
        let page = s.scan(Ns::new(0, 0), cursor, 37, None, 0);
        seen.extend(page.keys);
        // Between pages, delete odd keys and insert new ones.
        for j in 0..20u32 {
            let k = format!("k{}", (step * 20 + j) * 2 + 1);
            s.lock_key(k.as_bytes())
                .delete(Ns::new(0, 0), k.as_bytes(), 0);
            let n = format!("new{step}_{j}");
            s.lock_key(n.as_bytes())
                .set(Ns::new(0, 0), n.as_bytes(), b"v", SetTtl::Clear, 0)
                .unwrap();
        }
        step += 1;
        cursor = page.next_cursor;
        if cursor == 0 {
            break;
        }
    }
    for i in (0..5000u32).step_by(2) {
        assert!(seen.contains(format!("k{i}").as_bytes()), "k{i} missed");
    }
    // MATCH filters, and database 1 is separate.
    let page = s.scan(Ns::new(0, 1), 0, 100_000, Some(b"k1?"), 0);
    assert_eq!(page.keys.len(), 10);
    assert_eq!(page.next_cursor, 0);
}

#[test]
fn memory_accounting_returns_to_baseline_after_flush() {
    let s = store(0, EvictionPolicy::NoEviction, 4);
    let empty = s.used_memory();
    for i in 0..10_000u32 {
        let k = format!("key:{i:010}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &[0; 100], SetTtl::Clear, 0)
            .unwrap();
    }
    let full = s.used_memory();
    // 120-byte slots (6-byte header in database 0, 14-byte key, 100-byte value) plus
    // the index's 6.7-8.5 bytes per key (6-byte words at 72-90 % fill) and its overflow
    // tail.
    let per_key = (full - empty) as f64 / 10_000.0;
    assert!((126.5..129.5).contains(&per_key), "{per_key} B/key");
    let info = s
        .lock_key(b"key:0000000001")
        .info(Ns::new(0, 0), b"key:0000000001", 0)
        .unwrap();
    assert!(info.memory_bytes >= 128 && info.memory_bytes < 200);
    s.flushall(0);
    assert_eq!(s.used_memory(), empty);
    check_all(&s);
}

#[test]
fn overwriting_with_a_smaller_value_shrinks_the_charge() {
    let s = store(0, EvictionPolicy::NoEviction, 1);
    let ns = Ns::new(0, 0);
    let empty = s.used_memory();
    s.lock_key(b"k")
        .set(ns, b"k", &vec![7; 100 * 1024], SetTtl::Clear, 0)
        .unwrap();
    let big = s.used_memory() - empty;
    assert!(big >= 100 * 1024, "{big}");
    s.lock_key(b"k")
        .set(ns, b"k", b"x", SetTtl::Clear, 0)
        .unwrap();
    let small = s.used_memory() - empty;
    assert!(
        small < 1024,
        "one byte still charged {small} bytes (index included)"
    );
    let info = s.lock_key(b"k").info(ns, b"k", 0).unwrap();
    assert!(info.memory_bytes < 1024, "{}", info.memory_bytes);
    assert_eq!(s.lock_key(b"k").get(ns, b"k", 0).unwrap().unwrap(), b"x");
    // Same size class: still overwritten in place, same charge.
    s.lock_key(b"k")
        .set(ns, b"k", b"y", SetTtl::Clear, 0)
        .unwrap();
    assert_eq!(s.used_memory() - empty, small);
    check_all(&s);
}

#[test]
fn lowering_maxmemory_evicts_at_once() {
    let s = store(0, EvictionPolicy::AllKeysLru, 2);
    for i in 0..20_000u32 {
        let k = format!("{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), &[0; 100], SetTtl::Clear, 0)
            .unwrap();
    }
    s.set_maxmemory(1 << 20);
    assert!(s.used_memory() <= 1 << 20);
    check_all(&s);
}

#[test]
fn random_key_is_roughly_uniform_over_a_db() {
    let s = store(0, EvictionPolicy::NoEviction, 4);
    for i in 0..10u32 {
        let k = format!("{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 2), k.as_bytes(), b"v", SetTtl::Clear, 0)
            .unwrap();
    }
    for i in 0..1000u32 {
        let k = format!("other{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), b"v", SetTtl::Clear, 0)
            .unwrap();
    }
    let mut counts = HashMap::new();
    for _ in 0..10_000 {
        *counts
            .entry(s.random_key(Ns::new(0, 2), 0).unwrap())
            .or_insert(0u32) += 1;
    }
    assert_eq!(counts.len(), 10);
    // Expected 1000 each; chi-square with 9 dof, p = 0.001 critical value 27.9.
    let chi2: f64 = counts
        .values()
        .map(|&c| (c as f64 - 1000.0).powi(2) / 1000.0)
        .sum();
    assert!(chi2 < 27.9, "chi2 {chi2} {counts:?}");
    assert_eq!(s.random_key(Ns::new(0, 3), 0), None);
}

#[test]
fn set_over_an_expired_key_counts_the_expiry_and_starts_fresh() {
    let s = store(0, EvictionPolicy::NoEviction, 1);
    for i in 0..200u32 {
        let k = format!("k{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), b"old", SetTtl::At(1000), 0)
            .unwrap();
    }
    for i in 0..200u32 {
        let k = format!("k{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(0, 0), k.as_bytes(), b"new", SetTtl::Keep, 2000)
            .unwrap();
    }
    check_all(&s);
    assert_eq!(s.stats(0).expired_keys, 200);
    let mut g = s.lock_key(b"k7");
    assert_eq!(g.peek(Ns::new(0, 0), b"k7", 2000), Ok(Some(&b"new"[..])));
    // KEEPTTL on an expired key keeps nothing: the fresh key is persistent.
    assert_eq!(g.ttl(Ns::new(0, 0), b"k7", 2000), TtlState::Persistent);
}

// ----- tenants (kRedis §4.3 multi-dictionary, §4.2 step 4 enforcement) -----

fn fill(s: &Store, t: TenantId, prefix: &str, n: usize, value: &[u8]) -> usize {
    let mut ok = 0;
    for i in 0..n {
        let k = format!("{prefix}{i}");
        if s.lock_key(k.as_bytes())
            .set(Ns::new(t, 0), k.as_bytes(), value, SetTtl::Clear, 0)
            .is_ok()
        {
            ok += 1;
        }
    }
    ok
}

#[test]
fn tenants_never_see_each_others_keys() {
    let s = store(0, EvictionPolicy::AllKeysLru, 4);
    let (a, b) = (Ns::new(1, 0), Ns::new(2, 0));
    s.lock_key(b"k")
        .set(a, b"k", b"from-a", SetTtl::Clear, 0)
        .unwrap();
    assert_eq!(s.lock_key(b"k").get(b, b"k", 0), Ok(None));
    s.lock_key(b"k")
        .set(b, b"k", b"from-b", SetTtl::Clear, 0)
        .unwrap();
    assert_eq!(s.lock_key(b"k").get(a, b"k", 0), Ok(Some(&b"from-a"[..])));
    assert_eq!(s.lock_key(b"k").get(b, b"k", 0), Ok(Some(&b"from-b"[..])));
    // Same tenant, other database: separate too.
    assert_eq!(s.lock_key(b"k").get(Ns::new(1, 1), b"k", 0), Ok(None));
    assert_eq!(s.dbsize(a), 1);
    assert_eq!(s.dbsize(Ns::new(3, 0)), 0);
    assert_eq!(s.keys(a, b"*", 0), vec![b"k".to_vec()]);
    assert_eq!(s.scan(b, 0, 100, None, 0).keys, vec![b"k".to_vec()]);
    assert_eq!(s.random_key(Ns::new(3, 0), 0), None);
    s.flushall(1);
    assert_eq!(s.dbsize(a), 0);
    assert_eq!(s.lock_key(b"k").get(b, b"k", 0), Ok(Some(&b"from-b"[..])));
    s.flushdb(b);
    assert_eq!(s.total_keys(), 0);
    let per = s.tenant_stats();
    assert_eq!(per[1].hits, 1);
    assert_eq!(per[2].hits, 2);
    assert_eq!(per[2].misses, 1);
    check_all(&s);
}

#[test]
fn tenant_memory_sums_to_used_memory() {
    let s = store(0, EvictionPolicy::AllKeysLru, 4);
    fill(&s, 0, "a", 3000, &[1u8; 100]);
    fill(&s, 5, "b", 2000, &[2u8; 300]);
    let per = s.tenant_stats();
    let sum: u64 = per.iter().map(|t| t.used_bytes).sum();
    assert_eq!(sum, s.used_memory());
    assert!(per[5].used_bytes > per[0].used_bytes);
    assert_eq!(per[0].keys, 3000);
    assert_eq!(per[5].keys, 2000);
    // The store-wide per-tenant counters eviction reads are within 16 KB per shard.
    for t in [0u16, 5] {
        let synced = s.tenant_usage(t) as i64;
        let exact = per[t as usize].used_bytes as i64;
        assert!(
            (synced - exact).abs() <= 4 * (16 << 10),
            "{t}: {synced} vs {exact}"
        );
    }
    // Deletes, flushes and drops keep them honest.
    for i in 0..1000 {
        let k = format!("a{i}");
        s.lock_key(k.as_bytes())
            .delete(Ns::new(0, 0), k.as_bytes(), 0);
    }
    let exact = s.tenant_stats()[0].used_bytes as i64;
    let synced = s.tenant_usage(0) as i64;
    assert!(
        (synced - exact).abs() <= 4 * (16 << 10),
        "{synced} vs {exact}"
    );
    s.drop_tenant(5);
    assert_eq!(s.tenant_stats()[5], TenantStats::default());
    assert_eq!(s.tenant_usage(5), 0);
    check_all(&s);
}

#[test]
fn a_tenant_cap_is_never_exceeded_and_evicts_only_that_tenant() {
    let s = store(0, EvictionPolicy::AllKeysLru, 4);
    s.set_partitioning(Partitioning::Static);
    s.set_tenant_limits(1, 200_000, 200_000, 0);
    fill(&s, 2, "other", 2000, &[0u8; 100]);
    fill(&s, 1, "capped", 20_000, &[0u8; 100]);
    let per = s.tenant_stats();
    assert!(per[1].used_bytes <= 200_000, "{}", per[1].used_bytes);
    assert!(per[1].evicted > 0);
    assert_eq!(per[2].evicted, 0);
    assert_eq!(per[2].keys, 2000);
    check_all(&s);
}

#[test]
fn under_pressure_the_tenant_most_over_its_target_gives() {
    // 4 MB total; tenant 1 targets 3 MB, tenant 2 targets 1 MB.
    let s = store(4_000_000, EvictionPolicy::AllKeysLru, 4);
    s.set_partitioning(Partitioning::Kredis);
    s.set_tenant_limits(1, 0, 3_000_000, 0);
    s.set_tenant_limits(2, 0, 1_000_000, 0);
    // Tenant 2 first takes (almost) everything while tenant 1 is idle: targets are
    // soft, unused memory is not wasted.
    fill(&s, 2, "b", 40_000, &[0u8; 100]);
    assert!(s.tenant_stats()[2].used_bytes > 3_000_000);
    // Tenant 1's load then takes memory back from tenant 2 only.
    fill(&s, 1, "a", 40_000, &[0u8; 100]);
    let per = s.tenant_stats();
    assert!(s.used_memory() <= 4_000_000);
    let (a, b) = (per[1].used_bytes as f64, per[2].used_bytes as f64);
    assert!((a - 3e6).abs() < 0.06 * 3e6, "tenant 1 holds {a}");
    assert!((b - 1e6).abs() < 0.15 * 1e6, "tenant 2 holds {b}");
    // Tenant 2 writing at its target evicts its own keys: tenant 1 loses at most what
    // it held above its target (entry granularity), never memory below it.
    // The eviction decision reads each tenant's store-wide usage, which every shard
    // updates once its own change reaches a step (1/64 of its 1 MB share here,
    // `Shard::sync_tenant_used`): tenant 2's figure can lag its real usage by up to a
    // step per shard, 4 x 15,625 B, and tenant 1 lose that much below its target. (This
    // bound was 0.5 % of the target, 15 KB, which the design never promised: it held by
    // the layout's luck until entries shrank from 128 to 122 bytes.)
    fill(&s, 2, "c", 20_000, &[0u8; 100]);
    let after = s.tenant_stats();
    let sync_lag = 4.0 * 15_625.0;
    assert!(
        after[1].used_bytes as f64 >= 3e6 - sync_lag,
        "tenant 1 now holds {}",
        after[1].used_bytes
    );
    assert!(after[2].evicted > per[2].evicted + 19_000);
    check_all(&s);
}

#[test]
fn partitioning_off_is_free_competition_over_all_tenants() {
    let s = store(2_000_000, EvictionPolicy::AllKeysLru, 4);
    s.set_partitioning(Partitioning::Off);
    // Caps and targets are ignored when partitioning is off.
    s.set_tenant_limits(1, 100_000, 100_000, 0);
    for i in 0..20 {
        fill(&s, 1, &format!("a{i}-"), 1000, &[0u8; 100]);
        fill(&s, 2, &format!("b{i}-"), 1000, &[0u8; 100]);
    }
    let per = s.tenant_stats();
    assert!(
        per[1].used_bytes > 500_000,
        "cap ignored: {}",
        per[1].used_bytes
    );
    assert!(per[1].evicted > 1000 && per[2].evicted > 1000);
    // Then only tenant 2 writes: as in one Redis keyspace, tenant 1's older keys go.
    fill(&s, 2, "late", 20_000, &[0u8; 100]);
    let late = s.tenant_stats();
    assert!(
        late[1].used_bytes < per[1].used_bytes / 4,
        "{}",
        late[1].used_bytes
    );
    assert!(s.used_memory() <= 2_000_000);
    check_all(&s);
}

#[test]
fn sampled_references_reach_the_sink_for_sampled_keys_only() {
    use std::sync::Mutex as StdMutex;
    struct Rec(StdMutex<Vec<Reference>>);
    impl ReferenceSink for Rec {
        fn record(&self, r: Reference) {
            self.0.lock().unwrap().push(r);
        }
    }
    let s = store(0, EvictionPolicy::AllKeysLru, 4);
    let sink = std::sync::Arc::new(Rec(StdMutex::new(Vec::new())));
    s.set_reference_sink(sink.clone());
    s.set_tenant_sample_rate(1, 1.0);
    s.set_tenant_sample_rate(2, 0.25);
    let ns1 = Ns::new(1, 0);
    let _ = s.lock_key(b"x").get(ns1, b"x", 0);
    s.lock_key(b"x")
        .set(ns1, b"x", b"v", SetTtl::Clear, 0)
        .unwrap();
    let _ = s.lock_key(b"x").get(ns1, b"x", 0);
    s.lock_key(b"x").delete(ns1, b"x", 0);
    let kinds: Vec<RefKind> = sink.0.lock().unwrap().iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [RefKind::Miss, RefKind::Write, RefKind::Hit, RefKind::Delete]
    );
    let v = sink.0.lock().unwrap().clone();
    assert_eq!(v[1].bytes, v[2].bytes);
    assert_eq!(v[1].bytes as u64, charged_bytes(0, 1, 1, false));
    assert!(v.iter().all(|r| r.id == v[0].id && r.tenant == 1));
    sink.0.lock().unwrap().clear();
    fill(&s, 2, "k", 20_000, b"v");
    fill(&s, 3, "k", 1000, b"v"); // tenant 3 is not profiled
    let got = sink.0.lock().unwrap().len() as f64;
    assert!(
        (got - 5000.0).abs() < 5.0 * 5000f64.sqrt(),
        "{got} of 20000 sampled at 0.25"
    );
    assert!(sink.0.lock().unwrap().iter().all(|r| r.tenant == 2));
}
