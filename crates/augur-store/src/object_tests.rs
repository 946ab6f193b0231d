//! Hashes and sets in the store: one cached object each, charged its real memory, for
//! eviction, tenants' accounting and the profiler.

use crate::tests::{check_all, store};
use crate::*;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

fn lim() -> EncodingLimits {
    EncodingLimits {
        hash_max_listpack_entries: 16,
        hash_max_listpack_value: 32,
        set_max_intset_entries: 16,
        list_max_listpack_size: 4,
        list_compress_depth: 0,
        zset_max_listpack_entries: 8,
        zset_max_listpack_value: 32,
        stream_node: Default::default(),
    }
}

fn hset(s: &Store, ns: Ns, key: &[u8], f: &[u8], v: &[u8]) -> Result<Option<bool>, WrongType> {
    s.lock_key(key)
        .write_object(ns, key, Kind::Hash, true, 0, |o| {
            o.as_hash_mut().unwrap().set(f, v, &lim())
        })
}

fn sadd(s: &Store, ns: Ns, key: &[u8], m: &[u8]) -> Result<Option<bool>, WrongType> {
    s.lock_key(key)
        .write_object(ns, key, Kind::Set, true, 0, |o| {
            o.as_set_mut().unwrap().insert(m, &lim())
        })
}

#[derive(Debug, Clone)]
enum Op {
    SetStr(u8, u8, usize),
    HSet(u8, u8, u8, usize),
    HDel(u8, u8, u8),
    SAdd(u8, u8, u8),
    SRem(u8, u8, u8),
    LPush(u8, u8, bool, usize),
    LPop(u8, u8, bool),
    ZAdd(u8, u8, u8, i8),
    ZPop(u8, u8, bool),
    Del(u8, u8),
    Get(u8, u8),
    Expire(u8, u8),
    Persist(u8, u8),
    Move(u8, u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let t = 0u8..3;
    let k = 0u8..12;
    prop_oneof![
        3 => (t.clone(), k.clone(), 0usize..400).prop_map(|(t, k, n)| Op::SetStr(t, k, n)),
        5 => (t.clone(), k.clone(), 0u8..40, 0usize..80).prop_map(|(t, k, f, n)| Op::HSet(t, k, f, n)),
        2 => (t.clone(), k.clone(), 0u8..40).prop_map(|(t, k, f)| Op::HDel(t, k, f)),
        5 => (t.clone(), k.clone(), 0u8..60).prop_map(|(t, k, m)| Op::SAdd(t, k, m)),
        2 => (t.clone(), k.clone(), 0u8..60).prop_map(|(t, k, m)| Op::SRem(t, k, m)),
        4 => (t.clone(), k.clone(), any::<bool>(), 0usize..300).prop_map(|(t, k, h, n)| Op::LPush(t, k, h, n)),
        2 => (t.clone(), k.clone(), any::<bool>()).prop_map(|(t, k, h)| Op::LPop(t, k, h)),
        4 => (t.clone(), k.clone(), 0u8..60, any::<i8>()).prop_map(|(t, k, m, sc)| Op::ZAdd(t, k, m, sc)),
        2 => (t.clone(), k.clone(), any::<bool>()).prop_map(|(t, k, max)| Op::ZPop(t, k, max)),
        1 => (t.clone(), k.clone()).prop_map(|(t, k)| Op::Del(t, k)),
        2 => (t.clone(), k.clone()).prop_map(|(t, k)| Op::Get(t, k)),
        1 => (t.clone(), k.clone()).prop_map(|(t, k)| Op::Expire(t, k)),
        1 => (t.clone(), k.clone()).prop_map(|(t, k)| Op::Persist(t, k)),
        1 => (t, k.clone(), k).prop_map(|(t, a, b)| Op::Move(t, a, b)),
    ]
}

/// What a key holds in the model.
#[derive(Debug, Clone, PartialEq)]
enum M {
    Str(Vec<u8>),
    Hash(HashMap<Vec<u8>, Vec<u8>>),
    Set(HashSet<Vec<u8>>),
    List(std::collections::VecDeque<Vec<u8>>),
    /// member -> score.
    ZSet(std::collections::BTreeMap<Vec<u8>, i8>),
}

fn member(m: u8) -> Vec<u8> {
    // Half integers (intset), half not (hashtable).
    if m.is_multiple_of(2) {
        (m as i64 * 7 - 100).to_string().into_bytes()
    } else {
        format!("member-{m}").into_bytes()
    }
}

/// Runs `ops` on a store and, when nothing can be evicted, on a model too. Returns
/// the store for the caller's checks.
fn run(ops: &[Op], maxmemory: u64, policy: EvictionPolicy) -> (Store, HashMap<(u8, Vec<u8>), M>) {
    let s = store(maxmemory, policy, 2);
    if maxmemory > 0 {
        s.set_partitioning(Partitioning::Off);
    }
    let mut model: HashMap<(u8, Vec<u8>), M> = HashMap::new();
    let key = |k: u8| format!("key:{k}").into_bytes();
    for op in ops {
        match op.clone() {
            Op::SetStr(t, k, n) => {
                let v = vec![b's'; n];
                let r =
                    s.lock_key(&key(k))
                        .set(Ns::new(t as u16, 0), &key(k), &v, SetTtl::Clear, 0);
                if r.is_ok() {
                    model.insert((t, key(k)), M::Str(v));
                }
            }
            Op::HSet(t, k, f, n) => {
                let (f, v) = (format!("f{f}").into_bytes(), vec![b'v'; n]);
                match hset(&s, Ns::new(t as u16, 0), &key(k), &f, &v) {
                    Ok(_) => {
                        // (Under eviction the model may hold a key the store evicted.)
                        let e = model
                            .entry((t, key(k)))
                            .or_insert_with(|| M::Hash(HashMap::new()));
                        if !matches!(e, M::Hash(_)) {
                            *e = M::Hash(HashMap::new());
                        }
                        if let M::Hash(h) = e {
                            h.insert(f, v);
                        }
                    }
                    Err(WrongType) => assert!(
                        maxmemory > 0
                            || !matches!(model.get(&(t, key(k))), Some(M::Hash(_)) | None)
                    ),
                }
            }
            Op::HDel(t, k, f) => {
                let f = format!("f{f}").into_bytes();
                let r = s.lock_key(&key(k)).write_object(
                    Ns::new(t as u16, 0),
                    &key(k),
                    Kind::Hash,
                    false,
                    0,
                    |o| o.as_hash_mut().unwrap().remove(&f),
                );
                if let (Ok(Some(_)), Some(M::Hash(h))) = (r, model.get_mut(&(t, key(k)))) {
                    h.remove(&f);
                    if h.is_empty() {
                        model.remove(&(t, key(k)));
                    }
                }
            }
            Op::SAdd(t, k, m) => {
                if sadd(&s, Ns::new(t as u16, 0), &key(k), &member(m)).is_ok() {
                    let e = model
                        .entry((t, key(k)))
                        .or_insert_with(|| M::Set(HashSet::new()));
                    if !matches!(e, M::Set(_)) {
                        *e = M::Set(HashSet::new());
                    }
                    if let M::Set(h) = e {
                        h.insert(member(m));
                    }
                }
            }
            Op::SRem(t, k, m) => {
                let r = s.lock_key(&key(k)).write_object(
                    Ns::new(t as u16, 0),
                    &key(k),
                    Kind::Set,
                    false,
                    0,
                    |o| o.as_set_mut().unwrap().remove(&member(m)),
                );
                if let (Ok(Some(_)), Some(M::Set(h))) = (r, model.get_mut(&(t, key(k)))) {
                    h.remove(&member(m));
                    if h.is_empty() {
                        model.remove(&(t, key(k)));
                    }
                }
            }
            Op::LPush(t, k, head, n) => {
                let v = format!("{n}:{}", "l".repeat(n)).into_bytes();
                let end = if head { End::Head } else { End::Tail };
                let r = s.lock_key(&key(k)).write_object(
                    Ns::new(t as u16, 0),
                    &key(k),
                    Kind::List,
                    true,
                    0,
                    |o| {
                        o.as_list_mut()
                            .unwrap()
                            .push(end, &v, lim().list_max_listpack_size)
                    },
                );
                if r.is_ok() {
                    let e = model
                        .entry((t, key(k)))
                        .or_insert_with(|| M::List(Default::default()));
                    if !matches!(e, M::List(_)) {
                        *e = M::List(Default::default());
                    }
                    if let M::List(l) = e {
                        if head {
                            l.push_front(v)
                        } else {
                            l.push_back(v)
                        }
                    }
                }
            }
            Op::LPop(t, k, head) => {
                let end = if head { End::Head } else { End::Tail };
                let r = s.lock_key(&key(k)).write_object(
                    Ns::new(t as u16, 0),
                    &key(k),
                    Kind::List,
                    false,
                    0,
                    |o| o.as_list_mut().unwrap().pop(end),
                );
                if let (Ok(Some(got)), Some(M::List(l))) = (r, model.get_mut(&(t, key(k)))) {
                    let want = if head { l.pop_front() } else { l.pop_back() };
                    if maxmemory == 0 {
                        assert_eq!(got, want);
                    }
                    if l.is_empty() {
                        model.remove(&(t, key(k)));
                    }
                }
            }
            Op::ZAdd(t, k, m, sc) => {
                // Long members cross zset-max-listpack-value.
                let m = if m.is_multiple_of(7) {
                    vec![b'z'; 40 + m as usize]
                } else {
                    member(m)
                };
                let r = s.lock_key(&key(k)).write_object(
                    Ns::new(t as u16, 0),
                    &key(k),
                    Kind::ZSet,
                    true,
                    0,
                    |o| o.as_zset_mut().unwrap().insert(&m, f64::from(sc), &lim()),
                );
                if r.is_ok() {
                    let e = model
                        .entry((t, key(k)))
                        .or_insert_with(|| M::ZSet(Default::default()));
                    if !matches!(e, M::ZSet(_)) {
                        *e = M::ZSet(Default::default());
                    }
                    if let M::ZSet(z) = e {
                        z.insert(m, sc);
                    }
                }
            }
            Op::ZPop(t, k, max) => {
                let r = s.lock_key(&key(k)).write_object(
                    Ns::new(t as u16, 0),
                    &key(k),
                    Kind::ZSet,
                    false,
                    0,
                    |o| o.as_zset_mut().unwrap().pop(1, max),
                );
                if let (Ok(Some(got)), Some(M::ZSet(z))) = (r, model.get_mut(&(t, key(k)))) {
                    let mut order: Vec<_> = z.iter().map(|(m, &s)| (s, m.clone())).collect();
                    order.sort();
                    let want = if max { order.last() } else { order.first() }.cloned();
                    if maxmemory == 0 {
                        let want = want.clone().map(|(s, m)| (m, f64::from(s)));
                        assert_eq!(got.first().cloned(), want);
                    }
                    if let Some((_, m)) = want {
                        z.remove(&m);
                    }
                    if z.is_empty() {
                        model.remove(&(t, key(k)));
                    }
                }
            }
            Op::Del(t, k) => {
                s.lock_key(&key(k)).delete(Ns::new(t as u16, 0), &key(k), 0);
                model.remove(&(t, key(k)));
            }
            Op::Get(t, k) => {
                let mut g = s.lock_key(&key(k));
                let _ = g.get(Ns::new(t as u16, 0), &key(k), 0);
                let _ = g.read_object(Ns::new(t as u16, 0), &key(k), Kind::Hash, 0);
            }
            Op::Expire(t, k) => {
                s.lock_key(&key(k))
                    .set_expire(Ns::new(t as u16, 0), &key(k), Some(1 << 50), 0);
            }
            Op::Persist(t, k) => {
                s.lock_key(&key(k))
                    .set_expire(Ns::new(t as u16, 0), &key(k), None, 0);
            }
            Op::Move(t, a, b) => {
                // RENAME: take the whole value out of one shard, put it in (maybe) another.
                let ns = Ns::new(t as u16, 0);
                let d = s.lock_key(&key(a)).take(ns, &key(a), 0);
                if let Some(d) = d {
                    let moved = model.remove(&(t, key(a)));
                    // Under volatile-lru with no volatile key, the put may be refused (OOM).
                    let ok = s.lock_key(&key(b)).put(ns, &key(b), d, 0).is_ok();
                    assert!(ok || maxmemory > 0);
                    if let (true, Some(v)) = (ok, moved) {
                        model.insert((t, key(b)), v);
                    }
                }
            }
        }
        check_all(&s);
    }
    (s, model)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// Without a limit, strings, hashes and sets behave as a model map, and the bytes
    /// charged always equal the sum of the entries' charges (checked by the invariants
    /// after every operation), per tenant summing to used_memory.
    #[test]
    fn mixed_types_match_a_model(ops in prop::collection::vec(op(), 1..150)) {
        let (s, model) = run(&ops, 0, EvictionPolicy::NoEviction);
        for ((t, k), want) in &model {
            let ns = Ns::new(*t as u16, 0);
            let mut g = s.lock_key(k);
            let got = match g.kind(ns, k, 0) {
                Some(Kind::String) => M::Str(g.peek(ns, k, 0).unwrap().unwrap().to_vec()),
                Some(Kind::Hash) => M::Hash(g.peek_object(ns, k, Kind::Hash, 0).unwrap().unwrap()
                    .as_hash().unwrap().iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
                Some(Kind::Set) => M::Set(g.peek_object(ns, k, Kind::Set, 0).unwrap().unwrap()
                    .as_set().unwrap().iter().map(|m| m.into_owned()).collect()),
                Some(Kind::List) => M::List(g.peek_object(ns, k, Kind::List, 0).unwrap().unwrap()
                    .as_list().unwrap().iter().map(|m| m.to_vec()).collect()),
                Some(Kind::ZSet) => M::ZSet(g.peek_object(ns, k, Kind::ZSet, 0).unwrap().unwrap()
                    .as_zset().unwrap().iter().map(|(m, s)| (m.to_vec(), s as i8)).collect()),
                Some(Kind::Stream) => panic!("{k:?} is a stream; the model writes none"),
                None => panic!("{k:?} missing"),
            };
            prop_assert_eq!(&got, want);
        }
        let keys: u64 = (0..3).map(|t| s.dbsize(Ns::new(t, 0))).sum();
        prop_assert_eq!(keys, model.len() as u64);
        let per: u64 = s.tenant_stats().iter().map(|t| t.used_bytes).sum();
        prop_assert_eq!(per, s.used_memory());
    }

    /// Under a small limit with eviction, accounting stays exact (used bytes = sum of
    /// charges, per-tenant sums = used_memory) and memory stays within the limit
    /// plus at most one object's growth per shard.
    #[test]
    fn accounting_stays_exact_under_eviction(ops in prop::collection::vec(op(), 1..200),
                                            policy in prop::sample::select(vec![EvictionPolicy::AllKeysLru, EvictionPolicy::AllKeysRandom, EvictionPolicy::VolatileLru, EvictionPolicy::AllKeysLhd, EvictionPolicy::VolatileLhd])) {
        let limit = 24 << 10;
        let (s, _) = run(&ops, limit, policy);
        let per: u64 = s.tenant_stats().iter().map(|t| t.used_bytes).sum();
        prop_assert_eq!(per, s.used_memory());
        s.flushall(0);
        s.flushall(1);
        s.flushall(2);
        check_all(&s);
    }
}

#[test]
fn a_large_hash_is_one_object_for_eviction() {
    let limit = 4 << 20;
    let s = store(limit, EvictionPolicy::AllKeysLru, 1);
    let ns = Ns::new(0, 0);
    // Strings first, then a hash that grows to over a third of the limit: its growth
    // evicts strings (never the hash itself, which is pinned while it is written).
    // 26,000 strings of ~131 B (slot and index) fill 3.4 of the 4 MB.
    for i in 0..26_000u32 {
        let k = format!("str:{i}");
        s.lock_key(k.as_bytes())
            .set(ns, k.as_bytes(), &[b'x'; 100], SetTtl::Clear, 0)
            .unwrap();
    }
    for i in 0..14_000u32 {
        let f = format!("field:{i}");
        assert!(hset(&s, ns, b"big", f.as_bytes(), &[b'v'; 80])
            .unwrap()
            .is_some());
        assert_eq!(
            s.lock_key(b"big").kind(ns, b"big", 0),
            Some(Kind::Hash),
            "the hash was evicted while being written"
        );
    }
    check_all(&s);
    let info = s.lock_key(b"big").info(ns, b"big", 0).unwrap();
    assert_eq!(info.encoding, Some("hashtable"));
    assert!(info.memory_bytes > 1_000_000, "{}", info.memory_bytes);
    assert!(s.used_memory() <= limit, "{} > {limit}", s.used_memory());
    let evicted = s.stats(0).evicted_keys;
    assert!(evicted > 1000, "{evicted}");
    // Make the hash the least recently used key, then write new strings: one eviction
    // removes it whole, and memory drops by its whole charge at once.
    for i in 0..20_000u32 {
        let k = format!("str:{i}");
        let _ = s.lock_key(k.as_bytes()).get(ns, k.as_bytes(), 0);
    }
    let mut i = 0u32;
    loop {
        let (used, evicted) = (s.used_memory(), s.stats(0).evicted_keys);
        let k = format!("new:{i}");
        s.lock_key(k.as_bytes())
            .set(ns, k.as_bytes(), &[b'y'; 100], SetTtl::Clear, 0)
            .unwrap();
        if s.lock_key(b"big").kind(ns, b"big", 0).is_none() {
            assert_eq!(s.stats(0).evicted_keys, evicted + 1, "one eviction");
            assert!(
                s.used_memory() + info.memory_bytes as u64 <= used + 512,
                "used {} before {used}, hash {}",
                s.used_memory(),
                info.memory_bytes
            );
            break;
        }
        i += 1;
        assert!(i < 60_000, "the hash was never evicted");
    }
    check_all(&s);
}

#[test]
fn a_pinned_object_survives_when_nothing_else_can_go() {
    // One shard, a budget far below the hash: nothing else exists, so the write stands
    // (the shard is over until its next write), and the next write of another key
    // evicts the hash.
    let s = store(8 << 10, EvictionPolicy::AllKeysRandom, 1);
    let ns = Ns::new(0, 0);
    for i in 0..400u32 {
        sadd(&s, ns, b"s", format!("member-{i}").as_bytes()).unwrap();
    }
    assert_eq!(s.lock_key(b"s").kind(ns, b"s", 0), Some(Kind::Set));
    assert!(s.used_memory() > 8 << 10);
    s.lock_key(b"x")
        .set(ns, b"x", b"1", SetTtl::Clear, 0)
        .unwrap();
    assert_eq!(s.lock_key(b"s").kind(ns, b"s", 0), None);
    assert!(s.used_memory() <= 8 << 10);
    check_all(&s);
}

#[test]
fn wrong_type_and_overwrite() {
    let s = store(0, EvictionPolicy::NoEviction, 1);
    let ns = Ns::new(0, 0);
    hset(&s, ns, b"h", b"f", b"v").unwrap();
    let mut g = s.lock_key(b"h");
    assert_eq!(g.get(ns, b"h", 0), Err(WrongType));
    assert_eq!(g.peek(ns, b"h", 0), Err(WrongType));
    assert!(g.read_object(ns, b"h", Kind::Set, 0).is_err());
    // SET overwrites any type; the object's memory is released with it.
    g.set(ns, b"h", b"str", SetTtl::Clear, 0).unwrap();
    assert_eq!(g.kind(ns, b"h", 0), Some(Kind::String));
    drop(g);
    check_all(&s);
    // TTLs work on objects as on strings, and the object survives the block copy.
    sadd(&s, ns, b"st", b"1").unwrap();
    let mut g = s.lock_key(b"st");
    assert!(g.set_expire(ns, b"st", Some(1000), 0));
    assert_eq!(g.ttl(ns, b"st", 0), TtlState::ExpiresAt(1000));
    assert!(g
        .peek_object(ns, b"st", Kind::Set, 0)
        .unwrap()
        .unwrap()
        .as_set()
        .unwrap()
        .contains(b"1"));
    assert!(g.set_expire(ns, b"st", None, 0));
    assert!(g.set_expire(ns, b"st", Some(1000), 0));
    assert_eq!(g.kind(ns, b"st", 1001), None, "expired lazily");
    drop(g);
    check_all(&s);
    assert_eq!(s.stats(0).expired_keys, 1);
}

#[test]
fn object_references_carry_the_whole_size_to_the_profiler() {
    struct Sink(Mutex<Vec<Reference>>);
    impl ReferenceSink for Sink {
        fn record(&self, r: Reference) {
            self.0.lock().unwrap().push(r);
        }
    }
    let s = store(0, EvictionPolicy::NoEviction, 1);
    let sink = Arc::new(Sink(Mutex::new(Vec::new())));
    s.set_reference_sink(sink.clone());
    s.set_tenant_sample_rate(0, 1.0);
    let ns = Ns::new(0, 0);
    for i in 0..100u32 {
        hset(&s, ns, b"h", format!("f{i}").as_bytes(), &[b'v'; 50]).unwrap();
    }
    let charge = s.lock_key(b"h").info(ns, b"h", 0).unwrap().memory_bytes as u64;
    let _ = s.lock_key(b"h").read_object(ns, b"h", Kind::Hash, 0);
    let refs = sink.0.lock().unwrap();
    let last = refs.last().unwrap();
    assert_eq!(last.kind, RefKind::Hit);
    // The reference's size is the key's charge (index share aside): thousands of bytes.
    assert!(last.bytes as u64 > 5_000, "{}", last.bytes);
    // (MEMORY USAGE adds the key's share of the index; the profiler a constant 16.)
    assert!(
        last.bytes as u64 <= charge && last.bytes as u64 + 1024 > charge,
        "{} vs {charge}",
        last.bytes
    );
}
