//! Active defragmentation (`crate::defrag`): entries move out of sparse slabs and every
//! key, value, TTL and hash survives the move with the accounting intact.

use crate::tests::{check_all, store};
use crate::*;

fn key(i: usize) -> Vec<u8> {
    format!("dfrag:{i:08}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(100, b'a' + (i % 26) as u8);
    v
}

#[test]
fn defrag_moves_sparse_entries_and_keeps_every_key() {
    let s = store(0, EvictionPolicy::NoEviction, 4);
    let ns = Ns::new(0, 0);
    let n: usize = 60_000;
    let far = 1u64 << 50;
    for i in 0..n {
        let ttl = if i.is_multiple_of(3) {
            SetTtl::At(far + i as u64)
        } else {
            SetTtl::Clear
        };
        s.lock_key(&key(i))
            .set(ns, &key(i), &value(i), ttl, 0)
            .unwrap();
    }
    let lim = EncodingLimits {
        hash_max_listpack_entries: 16,
        hash_max_listpack_value: 32,
        set_max_intset_entries: 16,
        list_max_listpack_size: crate::DEFAULT_LIST_FILL,
        list_compress_depth: 0,
        ..EncodingLimits::default()
    };
    for h in 0..200 {
        let k = format!("dfrag-hash:{h}").into_bytes();
        s.lock_key(&k)
            .write_object(ns, &k, Kind::Hash, true, 0, |o| {
                let hm = o.as_hash_mut().unwrap();
                for f in 0..5 {
                    hm.set(
                        format!("f{f}").as_bytes(),
                        format!("v{h}.{f}").as_bytes(),
                        &lim,
                    );
                }
            })
            .unwrap();
    }
    // Three in four of the first two thirds go: their slabs are left a quarter full.
    let kept = |i: usize| i >= 40_000 || i.is_multiple_of(4);
    for i in (0..n).filter(|&i| !kept(i)) {
        assert!(s.lock_key(&key(i)).delete(ns, &key(i), 0));
    }
    let used_before = s.used_memory();
    let mut total = crate::defrag::DefragStats::default();
    let walk = loop {
        let (st, finished) = s.defrag_cycle(4096);
        total.add(st);
        if let Some(walk) = finished {
            break walk;
        }
    };
    assert_eq!(walk, total, "the walk's totals are the sum of its calls");
    assert!(total.hits >= 1_000, "entries moved: {total:?}");
    assert_eq!(
        total.hits + total.misses,
        (n - 30_000 + 200) as u64,
        "every live entry visited once per walk"
    );
    check_all(&s);
    assert_eq!(
        s.used_memory(),
        used_before,
        "same size classes, same charge"
    );
    for i in (0..n).filter(|&i| kept(i)) {
        let mut g = s.lock_key(&key(i));
        assert_eq!(
            g.get(ns, &key(i), 0).unwrap().map(|v| v.to_vec()),
            Some(value(i))
        );
        let want = if i.is_multiple_of(3) {
            TtlState::ExpiresAt(far + i as u64)
        } else {
            TtlState::Persistent
        };
        assert_eq!(g.ttl(ns, &key(i), 0), want, "key {i}");
    }
    for h in 0..200 {
        let k = format!("dfrag-hash:{h}").into_bytes();
        let mut g = s.lock_key(&k);
        let got = g
            .read_object(ns, &k, Kind::Hash, 0)
            .unwrap()
            .and_then(|o| o.as_hash().unwrap().get(b"f3").map(|v| v.to_vec()));
        assert_eq!(got, Some(format!("v{h}.3").into_bytes()));
    }
}
