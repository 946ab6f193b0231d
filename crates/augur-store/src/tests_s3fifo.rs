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

/// The small queue's share that decides which queue gives is an exact count kept by the
/// part (`s3fifo::SmallQueueCount`); `check_all` compares it with the entries' small bits.
/// Here every way an entry enters or leaves the small queue is mixed at random, under
/// S3-FIFO and across switches to the other policies and back: admission, hits, moves and
/// evictions, overwrites in place and reallocated, DEL, expiry (lazy and active),
/// RENAME / MOVE / COPY within and across shards, RESTORE's IDLETIME and FREQ, a hit or
/// an eviction under LRU, LHD or LFU of an entry still in the small queue, FLUSHDB.
#[test]
fn the_small_queue_count_follows_every_way_an_entry_enters_or_leaves() {
    use rand::{Rng, SeedableRng};
    // As the commands run it (both shards locked); an OOM (volatile-s3fifo with
    // nothing volatile to evict) changes nothing.
    let relocate = |s: &Store, from: Ns, a: &[u8], to: Ns, b: &[u8], how, now| {
        let mut lock = s.lock_keys(&[a, b]);
        let (src, dst) = lock.pair(a, b);
        let _ = src.relocate(dst, from, a, to, b, how, now);
    };
    let s = store(512 << 10, EvictionPolicy::AllKeysS3Fifo, 4);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    let key = |i: u32| format!("key:{i}");
    let policies = [
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::AllKeysLru,
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::AllKeysLhd,
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::AllKeysLfu,
        EvictionPolicy::VolatileS3Fifo,
        EvictionPolicy::AllKeysS3Fifo,
    ];
    let mut now = 1_000u64;
    let mut small_seen = 0;
    for (round, &policy) in policies.iter().enumerate() {
        s.set_policy(policy);
        for _ in 0..20_000 {
            now += 1;
            let a = key(rng.gen_range(0..8_000));
            let b = key(rng.gen_range(0..8_000));
            let db = Ns::new(0, rng.gen_range(0..2));
            let value = vec![b'v'; rng.gen_range(10..300)];
            match rng.gen_range(0..100) {
                0..=39 => {
                    let _ = s.lock_key(a.as_bytes()).get(db, a.as_bytes(), now);
                }
                40..=69 => {
                    let ttl = if rng.gen_bool(0.2) {
                        SetTtl::At(now + rng.gen_range(1..50))
                    } else {
                        SetTtl::Clear
                    };
                    let _ = s
                        .lock_key(a.as_bytes())
                        .set(db, a.as_bytes(), &value, ttl, now);
                }
                70..=74 => {
                    s.lock_key(a.as_bytes()).delete(db, a.as_bytes(), now);
                }
                75..=79 => {
                    let at = Some(now + rng.gen_range(0..20));
                    s.lock_key(a.as_bytes())
                        .set_expire(db, a.as_bytes(), at, now);
                }
                80..=84 => {
                    relocate(
                        &s,
                        db,
                        a.as_bytes(),
                        db,
                        b.as_bytes(),
                        Relocation::Rename,
                        now,
                    );
                }
                85..=87 => {
                    let to = Ns::new(0, 1 - db.db);
                    relocate(
                        &s,
                        db,
                        a.as_bytes(),
                        to,
                        a.as_bytes(),
                        Relocation::RenameNx,
                        now,
                    );
                }
                88..=91 => {
                    let how = Relocation::Copy { replace: true };
                    relocate(&s, db, a.as_bytes(), db, b.as_bytes(), how, now);
                }
                92..=95 => {
                    let (idle, freq) = (Some(rng.gen_range(0..100)), Some(rng.gen_range(0..50)));
                    s.lock_key(a.as_bytes())
                        .set_recency(db, a.as_bytes(), idle, freq, now);
                }
                _ => {
                    s.active_expire_cycle(now);
                }
            }
        }
        check_all(&s);
        small_seen += s
            .s3fifo_stats()
            .iter()
            .map(|q| q.small_share_permille)
            .sum::<u64>();
        if round == 4 {
            s.flushdb(Ns::new(0, 1));
            check_all(&s);
        }
    }
    assert!(s.stats(0).evicted_keys > 10_000, "{:?}", s.stats(0));
    assert!(small_seen > 0, "no entry ever in the small queue");
}

/// The ghost's bytes are charged as the part fills, not all at its first eviction: the
/// key count the store reaches when it first evicts is the one it keeps. Charged at
/// once, the ghost (~3.6 bytes a cached key) made the store evict ~2.6 % of its keys in
/// one burst there, by the main queue's rule.
#[test]
fn the_ghost_is_charged_as_the_store_fills_not_in_one_burst_at_the_first_eviction() {
    let s = store(2 << 20, EvictionPolicy::AllKeysS3Fifo, 2);
    let value = [b'v'; 100];
    let mut i = 0u32;
    while s.stats(0).evicted_keys == 0 {
        set(&s, &format!("key:{i}"), &value).unwrap();
        i += 1;
    }
    let at_first_eviction = s.dbsize(NS);
    let ghost_then = s.s3fifo_stats()[0].ghost_bytes;
    for _ in 0..at_first_eviction / 2 {
        set(&s, &format!("key:{i}"), &value).unwrap();
        i += 1;
    }
    check_all(&s);
    let later = s.dbsize(NS);
    assert!(
        ghost_then * 10 >= at_first_eviction * 3,
        "ghost {ghost_then} B before it remembered a key, {at_first_eviction} keys"
    );
    assert!(
        later * 1000 >= at_first_eviction * 995,
        "{at_first_eviction} keys at the first eviction, {later} after"
    );
}
