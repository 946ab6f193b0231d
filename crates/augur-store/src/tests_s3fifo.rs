//! S3-FIFO in the store (`crate::s3fifo`): eviction within the limit with the ghost
//! charged, what S3-FIFO keeps that LRU cannot, volatile-s3fifo's scope, live policy
//! switches that keep every key, and free competition between tenants.

use crate::tests::{
    access, check_all, get_hits, halving_keeps_read_keys_then_lru_evicts, memory_for, set, store,
    switches_lose_no_key,
};
use crate::*;

const NS: Ns = Ns::new(0, 0);

#[test]
fn s3fifo_evicts_within_the_limit_with_its_ghost_charged() {
    let limit = 2 << 20;
    let s = store(limit, EvictionPolicy::AllKeysS3Fifo, 4);
    let value = [b'x'; 100];
    for i in 0..60_000u32 {
        set(&s, &format!("key:{i:08}"), &value).unwrap();
        if i % 3 == 0 {
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
    let q = &s.s3fifo_stats()[0];
    assert_eq!(q.shards, 4);
    // ~0.9 remembered keys of 4 bytes per cached key, inside the limit.
    let keys = s.dbsize(NS);
    assert!(
        q.ghost_bytes >= keys * 3 && q.ghost_bytes <= keys * 5,
        "ghost {} B for {keys} keys",
        q.ghost_bytes
    );
    assert!(q.small_evictions > 0 && q.main_evictions > 0, "{q:?}");
    assert!(
        q.small_share_permille > 0 && q.small_share_permille < 300,
        "{q:?}"
    );
}

/// A loop over 800 keys mixed with a tail of keys seen once, in a cache of ~1 000 keys
/// (each loop key comes back after 1 600 accesses). LRU (K = 5) keeps losing the loop to
/// the tail; S3-FIFO drops tail keys from probation, and loop keys, back from the ghost,
/// go to the main queue and stay.
#[test]
fn s3fifo_keeps_a_loop_that_a_one_off_tail_flushes_from_lru() {
    let value = [0u8; 64];
    let limit = memory_for(1000, &value, 4);
    let run = |policy| {
        let s = store(limit, policy, 4);
        let mut tail = 0u64;
        let mut hits = 0u64;
        for round in 0..200u32 {
            for k in 0..800u32 {
                let hit = access(&s, &format!("k{k}"), &value);
                access(&s, &format!("t{tail}"), &value);
                tail += 1;
                if round >= 100 {
                    hits += hit as u64;
                }
            }
        }
        check_all(&s);
        (hits, s)
    };
    let (lru, _) = run(EvictionPolicy::AllKeysLru);
    let (s3, s) = run(EvictionPolicy::AllKeysS3Fifo);
    let q = &s.s3fifo_stats()[0];
    assert!(q.ghost_hits > 400, "{q:?}");
    // 100 rounds x 800 loop reads measured.
    assert!(lru < 100 * 800 / 10, "LRU hits {lru}");
    assert!(s3 > 100 * 800 * 7 / 10, "S3-FIFO hits {s3} (LRU {lru})");
}

#[test]
fn volatile_s3fifo_evicts_keys_with_a_ttl_only_and_refuses_when_there_are_none() {
    let s = store(64 << 10, EvictionPolicy::VolatileS3Fifo, 1);
    let refused = (0..5000u32).any(|i| set(&s, &format!("p{i}"), &[0; 100]).is_err());
    assert!(refused, "nothing volatile to evict: OOM as volatile-lru");
    check_all(&s);
    let s = store(256 << 10, EvictionPolicy::VolatileS3Fifo, 1);
    for i in 0..200u32 {
        set(&s, &format!("p{i}"), &[0; 100]).unwrap();
    }
    for i in 0..5000u32 {
        let k = format!("v{i}");
        s.lock_key(k.as_bytes())
            .set(NS, k.as_bytes(), &[0; 100], SetTtl::At(u64::MAX / 2), 0)
            .unwrap();
    }
    check_all(&s);
    let persistent = (0..200u32)
        .filter(|i| {
            let k = format!("p{i}");
            s.lock_key(k.as_bytes()).exists(NS, k.as_bytes(), 0)
        })
        .count();
    assert_eq!(
        persistent, 200,
        "volatile-s3fifo evicted a key without a TTL"
    );
}

/// CONFIG SET maxmemory-policy between allkeys-lru, allkeys-s3fifo and allkeys-lhd, in
/// every order, while keys are read and written: no key is lost by a switch, values stay
/// intact, idle times stay sane in every word format, and eviction goes on.
#[test]
fn switching_between_lru_lhd_and_s3fifo_live_loses_no_key() {
    let s = switches_lose_no_key(&[
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::AllKeysLru,
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::AllKeysLhd,
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::AllKeysLhd,
        EvictionPolicy::AllKeysLru,
    ]);
    // Under S3-FIFO with a limit, entries last touched under LRU are main-queue entries:
    // the keys read since the switch (a hit each) get a second round, the others not.
    s.set_policy(EvictionPolicy::AllKeysS3Fifo);
    for i in (0..5000u32).step_by(2) {
        let k = format!("k{i}");
        let _ = s.lock_key(k.as_bytes()).get(NS, k.as_bytes(), 0);
    }
    halving_keeps_read_keys_then_lru_evicts(&s);
    assert!(
        s.s3fifo_stats().iter().all(|q| q.shards == 0),
        "S3-FIFO state dropped under LRU"
    );
}

/// Free competition (`tenant-partitioning off`): victims come from every tenant.
#[test]
fn s3fifo_under_free_competition_evicts_across_tenants() {
    let s = store(1 << 20, EvictionPolicy::AllKeysS3Fifo, 2);
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

/// A switch from S3-FIFO to LRU hands over each entry's last hit, not the time it entered
/// its queue: keys written first but read since (hot) outlive keys written later and
/// never read (cold) when LRU evicts after the switch. Read as idle since queue entry,
/// the hot keys looked the oldest and went first.
#[test]
fn a_switch_from_s3fifo_to_lru_keeps_the_keys_hit_since_they_entered() {
    let s = store(0, EvictionPolicy::AllKeysS3Fifo, 1);
    let value = [b'v'; 64];
    let n = 2_000u32;
    for i in 0..n {
        set(&s, &format!("hot{i}"), &value).unwrap();
    }
    for i in 0..n {
        set(&s, &format!("cold{i}"), &value).unwrap();
    }
    // 4n accesses to absent keys: the hot keys' next reads come > 4n after they entered,
    // so the halving code still places them after every cold key's entry.
    for i in 0..4 * n {
        assert!(!get_hits(&s, &format!("absent{i}")));
    }
    for i in 0..n {
        assert!(get_hits(&s, &format!("hot{i}")));
    }
    s.set_policy(EvictionPolicy::AllKeysLru);
    let before = s.used_memory();
    s.set_maxmemory(before / 2);
    check_all(&s);
    let kept = |prefix: &str| {
        (0..n)
            .filter(|i| {
                let k = format!("{prefix}{i}");
                s.lock_key(k.as_bytes()).exists(NS, k.as_bytes(), 0)
            })
            .count()
    };
    let (hot, cold) = (kept("hot"), kept("cold"));
    assert!(
        hot + cold < 2 * n as usize * 6 / 10,
        "nothing evicted: {hot} + {cold}"
    );
    assert!(hot > cold * 3, "kept {hot} hot keys, {cold} cold");
}
