//! Redis's LFU in the store (`crate::lfu`): what it keeps that LRU cannot, OBJECT FREQ's
//! counter and its decay with idle time, volatile-lfu's scope, free competition, and
//! live switches that keep every key.

use crate::tests::{
    access, check_all, halving_keeps_read_keys_then_lru_evicts, memory_for, set, store,
    switches_lose_no_key,
};
use crate::*;

const NS: Ns = Ns::new(0, 0);

/// The key's OBJECT FREQ, read without touching it.
fn freq(s: &Store, k: &str, now_ms: u64) -> Option<u8> {
    s.lock_key(k.as_bytes())
        .object_info(NS, k.as_bytes(), now_ms)
        .expect("key exists")
        .freq
}

fn get(s: &Store, k: &str, now_ms: u64) -> bool {
    s.lock_key(k.as_bytes())
        .get(NS, k.as_bytes(), now_ms)
        .unwrap()
        .is_some()
}

/// 200 hot keys read once a round, each round then 2000 keys read once, in a cache of
/// ~1000 keys: a hot key's reuse distance (2200 distinct keys) is beyond LRU's reach,
/// but its counter (one hit takes it from 5 to 6 at any factor) outranks the one-off
/// keys' 5, so under LFU the hot set settles in the cache.
#[test]
fn lfu_keeps_frequent_keys_through_one_off_scans_where_lru_cannot() {
    let value = [0u8; 64];
    let limit = memory_for(1000, &value, 2);
    let run = |policy| {
        let s = store(limit, policy, 2);
        let (mut scan, mut hits) = (0u64, 0u64);
        for round in 0..40u32 {
            for h in 0..200u32 {
                let hit = access(&s, &format!("hot{h}"), &value);
                if round >= 30 {
                    hits += hit as u64;
                }
            }
            for _ in 0..2000 {
                access(&s, &format!("scan{scan}"), &value);
                scan += 1;
            }
        }
        check_all(&s);
        assert!(s.used_memory() <= limit);
        hits
    };
    let lru = run(EvictionPolicy::AllKeysLru);
    let lfu = run(EvictionPolicy::AllKeysLfu);
    // 10 rounds x 200 hot reads measured.
    assert!(lru < 2000 / 5, "LRU hits {lru}");
    assert!(lfu > 2000 * 8 / 10, "LFU hits {lfu} (LRU {lru})");
}

#[test]
fn object_freq_counts_hits_logarithmically_and_only_under_lfu() {
    let s = store(0, EvictionPolicy::AllKeysLru, 1);
    set(&s, "k", b"v").unwrap();
    assert_eq!(freq(&s, "k", 0), None, "not tracked under LRU");
    s.set_policy(EvictionPolicy::AllKeysLfu);
    set(&s, "n", b"v").unwrap();
    assert_eq!(freq(&s, "n", 0), Some(augur_sim::lfu::LFU_INIT_VAL));
    // Written under LRU, never touched since: read as a new key.
    assert_eq!(freq(&s, "k", 0), Some(augur_sim::lfu::LFU_INIT_VAL));
    for _ in 0..100 {
        assert!(get(&s, "n", 0));
    }
    // 100 hits at factor 10: redis.conf's table says 10 (our runs: 8..12).
    let f = freq(&s, "n", 0).unwrap();
    assert!((7..=14).contains(&f), "freq {f} after 100 hits");
    // Factor 0: every hit counts.
    s.set_lfu_log_factor(0);
    for _ in 0..20 {
        get(&s, "n", 0);
    }
    assert_eq!(freq(&s, "n", 0), Some(f + 20));
    // Reading the frequency does not touch the key.
    assert_eq!(freq(&s, "n", 0), Some(f + 20));
    // An overwrite is an access too (Redis's lookupKeyWrite updates the counter).
    set(&s, "n", b"w").unwrap();
    assert_eq!(freq(&s, "n", 0), Some(f + 21));
}

/// `lfu-decay-time` 1: a counter loses one per whole minute the key goes unread, as the
/// shard's wall clock (noted by each active-expiry cycle) dates its last access.
#[test]
fn counters_decay_by_whole_idle_periods() {
    let s = store(0, EvictionPolicy::AllKeysLfu, 1);
    let t0 = 1_700_000_000_000u64;
    set(&s, "k", b"v").unwrap();
    assert!(s
        .lock_key(b"k")
        .set_recency(NS, b"k", Some(60), Some(20), t0));
    s.active_expire_cycle(t0);
    // Other keys' traffic moves the clock on meanwhile.
    for i in 0..1000 {
        set(&s, &format!("o{i}"), b"v").unwrap();
    }
    s.active_expire_cycle(t0 + 30_000);
    assert_eq!(freq(&s, "k", t0 + 30_000), Some(20), "half a minute");
    s.active_expire_cycle(t0 + 181_000);
    assert_eq!(freq(&s, "k", t0 + 181_000), Some(17), "three whole minutes");
    // A read decays, then counts (factor 0), and dates the access now.
    s.set_lfu_log_factor(0);
    assert!(get(&s, "k", t0 + 181_000));
    assert_eq!(freq(&s, "k", t0 + 181_000), Some(18));
    s.active_expire_cycle(t0 + 200_000);
    assert_eq!(freq(&s, "k", t0 + 200_000), Some(18));
    // Decay time 0: no decay, from the next cycle on.
    s.set_lfu_decay_minutes(0);
    s.active_expire_cycle(t0 + 900_000);
    assert_eq!(freq(&s, "k", t0 + 900_000), Some(18));
    s.set_lfu_decay_minutes(5);
    s.active_expire_cycle(t0 + 900_000 + 1000);
    // Last read at t0 + 181 s, now 720 s later: two whole 5-minute periods.
    assert_eq!(freq(&s, "k", t0 + 901_000), Some(16));
}

#[test]
fn volatile_lfu_evicts_keys_with_a_ttl_only_and_refuses_when_there_are_none() {
    let s = store(64 << 10, EvictionPolicy::VolatileLfu, 1);
    for i in 0..3000u32 {
        let k = format!("v{i}");
        s.lock_key(k.as_bytes())
            .set(NS, k.as_bytes(), &[0; 100], SetTtl::At(u64::MAX / 2), 0)
            .unwrap();
    }
    assert!(s.stats(0).evicted_keys > 0);
    let refused = (0..5000u32).any(|i| set(&s, &format!("p{i}"), &[0; 100]).is_err());
    assert!(
        refused,
        "nothing volatile left to evict: OOM as volatile-lru"
    );
    let persistent = (0..5000u32)
        .filter(|i| {
            let k = format!("p{i}");
            s.lock_key(k.as_bytes()).exists(NS, k.as_bytes(), 0)
        })
        .count();
    assert!(persistent > 0);
    check_all(&s);
}

/// Free competition (`tenant-partitioning off`): one LFU eviction samples all tenants'
/// keys; the tenant whose keys are read keeps them.
#[test]
fn lfu_under_free_competition_evicts_the_unread_tenants_keys() {
    let s = store(1 << 20, EvictionPolicy::AllKeysLfu, 2);
    s.set_partitioning(Partitioning::Off);
    let put = |t: TenantId, k: &str| {
        s.lock_key(k.as_bytes())
            .set(Ns::new(t, 0), k.as_bytes(), &[1; 100], SetTtl::Clear, 0)
            .unwrap();
    };
    for i in 0..3000u32 {
        put(0, &format!("read{i}"));
        let k = format!("read{i}");
        // One hit takes a counter from 5 to 6.
        let _ = s.lock_key(k.as_bytes()).get(Ns::new(0, 0), k.as_bytes(), 0);
    }
    for i in 0..20_000u32 {
        put(1, &format!("once{i}"));
    }
    check_all(&s);
    assert!(s.used_memory() <= 1 << 20);
    let ts = s.tenant_stats();
    assert!(ts[1].evicted > 10_000, "{ts:?}");
    assert!(ts[0].evicted < 300, "read keys kept: {ts:?}");
}

/// CONFIG SET maxmemory-policy between allkeys-lru and allkeys-lfu while keys are read
/// and written: no key is lost by a switch, values stay intact, idle times stay sane in
/// either format; then, under LFU with a limit, keys read since the switch outrank
/// those last touched under LRU.
#[test]
fn switching_between_lru_and_lfu_live_loses_no_key() {
    use EvictionPolicy::{AllKeysLfu, AllKeysLru};
    let s = switches_lose_no_key(&[
        AllKeysLfu, AllKeysLru, AllKeysLfu, AllKeysLru, AllKeysLfu, AllKeysLru,
    ]);
    s.set_policy(EvictionPolicy::AllKeysLru);
    for i in 0..5000u32 {
        get(&s, &format!("k{i}"), 0);
    }
    s.set_policy(EvictionPolicy::AllKeysLfu);
    for i in (0..5000u32).step_by(2) {
        get(&s, &format!("k{i}"), 0);
    }
    halving_keeps_read_keys_then_lru_evicts(&s);
}
