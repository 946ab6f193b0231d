//! LHD in the store (`crate::lhd`): eviction within the limit, what LHD learns that LRU
//! cannot, volatile-lhd's scope, and live policy switches that keep every key.

use crate::tests::{
    access, check_all, halving_keeps_read_keys_then_lru_evicts, memory_for, set, store,
    switches_lose_no_key,
};
use crate::*;

const NS: Ns = Ns::new(0, 0);

#[test]
fn lhd_evicts_within_the_limit_and_keeps_the_structures_consistent() {
    let limit = 2 << 20;
    let s = store(limit, EvictionPolicy::AllKeysLhd, 4);
    let value = [b'x'; 100];
    for i in 0..60_000u32 {
        set(&s, &format!("key:{i:08}"), &value).unwrap();
        if i % 3 == 0 {
            // Some reads and deletes, so hits and removals reach the models too.
            let k = format!("key:{:08}", i / 2);
            let _ = s.lock_key(k.as_bytes()).get(NS, k.as_bytes(), 0);
        }
        if i % 101 == 0 {
            let k = format!("key:{:08}", i / 3);
            s.lock_key(k.as_bytes()).delete(NS, k.as_bytes(), 0);
        }
    }
    check_all(&s);
    let used = s.used_memory();
    assert!(used <= limit, "used {used} > limit {limit}");
    assert!(used > limit * 9 / 10, "eviction too eager: {used}");
    let st = s.stats(0);
    assert!(st.evicted_keys > 40_000, "evicted {}", st.evicted_keys);
    let lhd = s.lhd_stats();
    assert_eq!(lhd[0].models, 4, "one model per shard for tenant 0");
    assert!(lhd[0].bytes > 0);
}

/// LHD §3.2 / Fig. 2: a loop over 800 keys mixed with a tail of keys seen once, in a
/// cache of ~1 000 keys. LRU (K = 5) keeps losing the loop to the tail; LHD learns from
/// its hit and eviction ages that loop keys hit and tail keys never do.
#[test]
fn lhd_protects_a_loop_from_a_one_off_tail_where_lru_cannot() {
    let value = [0u8; 64];
    let limit = memory_for(1000, &value, 4);
    let run = |policy| {
        let s = store(limit, policy, 4);
        let mut tail = 0u64;
        let mut hits = 0u64;
        // 3.52M accesses (a miss and its fill count once) reconfigure each shard's
        // model at least 3 times (every 2^18 of its own) as long as the shard gets
        // 22.3 % of them. Its share is 25 % +- 0.75 % (as the key hash spreads the 800
        // loop keys): 2000 rounds (24.6 % needed) failed for about half of the hash
        // seeds tried.
        for round in 0..2200u32 {
            for k in 0..800u32 {
                let hit = access(&s, &format!("k{k}"), &value);
                access(&s, &format!("t{tail}"), &value);
                tail += 1;
                if round >= 1700 {
                    hits += hit as u64;
                }
            }
        }
        check_all(&s);
        (hits, s)
    };
    let (lru, _) = run(EvictionPolicy::AllKeysLru);
    let (lhd, s) = run(EvictionPolicy::AllKeysLhd);
    let st = &s.lhd_stats()[0];
    assert!(
        st.reconfigurations >= 3 * 4,
        "reconfigurations {}",
        st.reconfigurations
    );
    // 500 rounds x 800 loop reads measured.
    assert!(lru < 500 * 800 / 10, "LRU hits {lru}");
    assert!(lhd > 500 * 800 / 2, "LHD hits {lhd} (LRU {lru})");
}

#[test]
fn volatile_lhd_evicts_keys_with_a_ttl_only_and_refuses_when_there_are_none() {
    let s = store(64 << 10, EvictionPolicy::VolatileLhd, 1);
    let refused = (0..5000u32).any(|i| set(&s, &format!("p{i}"), &[0; 100]).is_err());
    assert!(refused, "nothing volatile to evict: OOM as volatile-lru");
    check_all(&s);
}

/// CONFIG SET maxmemory-policy between allkeys-lru and allkeys-lhd, in both directions,
/// while keys are read, written and evicted: no key is lost by a switch, values stay
/// intact, idle times stay sane in either tag format, and eviction goes on.
#[test]
fn switching_between_lru_and_lhd_live_loses_no_key() {
    use EvictionPolicy::{AllKeysLhd, AllKeysLru};
    let s = switches_lose_no_key(&[
        AllKeysLhd, AllKeysLru, AllKeysLhd, AllKeysLru, AllKeysLhd, AllKeysLru,
    ]);
    // Under LHD with a limit, entries last touched under LRU are ranked by the age their
    // clock gives: the keys read since the switch survive better than those not read.
    s.set_policy(EvictionPolicy::AllKeysLru);
    for i in 0..5000u32 {
        let k = format!("k{i}");
        if i % 2 == 0 {
            let _ = s.lock_key(k.as_bytes()).get(NS, k.as_bytes(), 0);
        }
    }
    s.set_policy(EvictionPolicy::AllKeysLhd);
    for i in (0..5000u32).step_by(2) {
        let k = format!("k{i}");
        let _ = s.lock_key(k.as_bytes()).get(NS, k.as_bytes(), 0);
    }
    halving_keeps_read_keys_then_lru_evicts(&s);
    assert!(
        s.lhd_stats().iter().all(|l| l.models == 0),
        "models dropped under LRU"
    );
}

/// Free competition (`tenant-partitioning off`): one LHD eviction ranks all tenants'
/// candidates, each by its own model.
#[test]
fn lhd_under_free_competition_evicts_across_tenants() {
    let s = store(1 << 20, EvictionPolicy::AllKeysLhd, 2);
    s.set_partitioning(Partitioning::Off);
    for i in 0..20_000u32 {
        let t = (i % 2) as TenantId;
        let k = format!("k{i}");
        s.lock_key(k.as_bytes())
            .set(Ns::new(t, 0), k.as_bytes(), &[1; 100], SetTtl::Clear, 0)
            .unwrap();
    }
    check_all(&s);
    assert!(s.used_memory() <= 1 << 20);
    let ts = s.tenant_stats();
    assert!(ts[0].evicted > 1000 && ts[1].evicted > 1000, "{ts:?}");
}

/// LHD's candidates carried from one eviction to the next (`shard::
/// lhd_sample_carried`) name entries that may since have been deleted, rewritten into
/// another block (a new size), moved back by a removal's backward shift, or moved by
/// the index shrinking and growing: an eviction must confirm a carried one in the index
/// before it reads it. One shard (every eviction carries the last one's candidates),
/// all of that churn between evictions, values of both block kinds (slab slots and
/// jemalloc blocks past 255 bytes): the structures stay consistent, memory within the
/// limit, and every key still present holds the value written last.
#[test]
fn lhd_carried_candidates_survive_deletes_rewrites_and_resizes() {
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    let limit = 1 << 20;
    let s = store(limit, EvictionPolicy::AllKeysLhd, 1);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let mut written: HashMap<String, Vec<u8>> = HashMap::new();
    let del = |k: &str| s.lock_key(k.as_bytes()).delete(NS, k.as_bytes(), 0);
    for round in 0..6u32 {
        for i in 0..30_000u32 {
            let k = format!("key:{}", rng.gen_range(0..40_000u32));
            let len = if i % 5 == 0 {
                300
            } else {
                20 + (i % 90) as usize
            };
            let v = vec![b'a' + (i % 26) as u8; len];
            set(&s, &k, &v).unwrap();
            written.insert(k, v);
            let other = format!("key:{}", rng.gen_range(0..40_000u32));
            if i % 7 == 0 {
                del(&other);
                written.remove(&other);
            } else if i % 3 == 0 {
                let _ = s.lock_key(other.as_bytes()).get(NS, other.as_bytes(), 0);
            }
        }
        check_all(&s);
        let used = s.used_memory();
        assert!(used <= limit, "used {used} > limit {limit}");
        if round % 2 == 0 {
            // Nine keys in ten gone: the index shrinks, every position moves.
            for n in (0..40_000u32).filter(|n| n % 10 != 0) {
                let k = format!("key:{n}");
                del(&k);
                written.remove(&k);
            }
            check_all(&s);
        }
    }
    assert!(
        s.stats(0).evicted_keys > 50_000,
        "{}",
        s.stats(0).evicted_keys
    );
    let mut present = 0;
    for (k, v) in &written {
        let mut g = s.lock_key(k.as_bytes());
        if let Some(got) = g.get(NS, k.as_bytes(), 0).unwrap() {
            assert_eq!(got, &v[..], "{k}");
            present += 1;
        }
    }
    assert!(present > 1000, "{present} keys left");
}
