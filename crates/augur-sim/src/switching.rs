//! A cache whose eviction policy changes while it runs, keeping its contents: the real
//! cache of `augur sim --policy auto` (`augur_server::dlru`'s chooser picks the policy
//! every interval, as it does for a tenant of the server).
//!
//! It holds one simulator at a time, Redis's pooled K-LRU ([`SampledCache`]) or LHD
//! ([`LhdCache`]), and a switch moves every entry into a fresh simulator of the new
//! policy with its recency intact, as the store does in place (augur-store `lhd.rs`,
//! "Switching policies live"):
//! - K-LRU → LHD: an entry becomes a new object (no hit history) of the age its last
//!   access gives; LHD's model starts empty, as the store's does (a part's model is
//!   dropped when eviction runs under another policy).
//! - LHD → K-LRU: an entry's idle time is its LHD age.
//! - K-LRU → K-LRU with another K: only K changes (the store's `maxmemory-samples`);
//!   the contents, clocks and the eviction pool stay.
//!
//! The clock carries over (both count accesses), so ages compare across switches.

use crate::lhd::{LhdCache, LhdConfig};
use crate::s3fifo::{S3FifoCache, S3FifoConfig};
use crate::sampled::{SampledCache, Sampling};
use crate::spec::{PolicySpec, Unit};
use crate::CacheSim;

enum Inner {
    Sampled(SampledCache),
    Lhd(Box<LhdCache>),
    S3Fifo(Box<S3FifoCache>),
}

/// A cache that runs `redis-lru:K` or `lhd:A` and can switch between them live.
impl Inner {
    /// The clock and every entry as (key, cost in the cache's unit, age in accesses).
    fn contents(&self, unit: Unit) -> (u64, Vec<(u64, u64, u64)>) {
        match self {
            Inner::Sampled(c) => (
                c.now(),
                c.entries()
                    .map(|(key, size, idle)| (key, unit.cost(size), idle))
                    .collect(),
            ),
            Inner::Lhd(c) => (c.model().now(), c.entries().collect()),
            Inner::S3Fifo(c) => (c.now(), c.entries().collect()),
        }
    }

    /// Moves in another cache's [`Inner::contents`], without evicting: a sampled LRU
    /// reads them as idle for their age, LHD as new objects of their age (another
    /// associativity: a fresh model, as a switch in the store), S3-FIFO as main-queue
    /// entries, oldest first.
    fn load(&mut self, now: u64, contents: Vec<(u64, u64, u64)>) {
        match self {
            Inner::Sampled(c) => {
                c.set_now(now);
                for (key, cost, age) in contents {
                    // In object mode every entry costs 1 whatever its size; in byte mode
                    // its cost is its size.
                    c.insert_idle(key, u32::try_from(cost).unwrap_or(u32::MAX), age);
                }
            }
            Inner::Lhd(c) => {
                c.set_now(now);
                for (key, cost, age) in contents {
                    c.insert_aged(key, cost, age);
                }
            }
            Inner::S3Fifo(c) => {
                c.set_now(now);
                c.insert_aged(contents);
            }
        }
    }
}

pub struct SwitchingCache {
    inner: Inner,
    policy: PolicySpec,
    unit: Unit,
    seed: u64,
    switches: u64,
}

impl SwitchingCache {
    /// A cache of `capacity` (in `unit`) starting with `policy`, which must be
    /// `redis-lru:K` or `lhd:A` (anything else is run as `redis-lru:5`).
    pub fn new(policy: PolicySpec, capacity: u64, unit: Unit, seed: u64) -> Self {
        let policy = Self::supported(policy);
        Self {
            inner: Self::make(policy, capacity, unit, seed),
            policy,
            unit,
            seed,
            switches: 0,
        }
    }

    fn supported(policy: PolicySpec) -> PolicySpec {
        match policy {
            PolicySpec::RedisLru { .. } | PolicySpec::Lhd { .. } | PolicySpec::S3Fifo { .. } => {
                policy
            }
            _ => PolicySpec::RedisLru {
                k: crate::spec::DEFAULT_SAMPLES,
            },
        }
    }

    fn make(policy: PolicySpec, capacity: u64, unit: Unit, seed: u64) -> Inner {
        match policy {
            PolicySpec::Lhd { k } => Inner::Lhd(Box::new(LhdCache::new(
                LhdConfig {
                    associativity: k,
                    ..LhdConfig::default()
                },
                capacity,
                unit,
                seed,
            ))),
            PolicySpec::RedisLru { k } => Inner::Sampled(SampledCache::new(
                Sampling::Pooled { k },
                capacity,
                unit,
                seed,
            )),
            PolicySpec::S3Fifo { k } => Inner::S3Fifo(Box::new(S3FifoCache::new(
                S3FifoConfig::sampled(k),
                capacity,
                unit,
                seed,
            ))),
            _ => unreachable!("SwitchingCache::supported filters the policies"),
        }
    }

    /// The policy running now.
    pub fn policy(&self) -> PolicySpec {
        self.policy
    }

    /// Switches made so far (a change of K counts).
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Runs `policy` from now on, keeping every entry (see the module documentation).
    pub fn switch_to(&mut self, policy: PolicySpec) {
        let policy = Self::supported(policy);
        if policy == self.policy {
            return;
        }
        self.switches += 1;
        let capacity = self.capacity();
        // Same simulator, other K: only K changes.
        if let (Inner::Sampled(c), PolicySpec::RedisLru { k }) = (&mut self.inner, policy) {
            c.set_sampling(Sampling::Pooled { k });
            self.policy = policy;
            return;
        }
        let seed = self.seed ^ self.switches.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut next = Self::make(policy, capacity, self.unit, seed);
        let (now, contents) = self.inner.contents(self.unit);
        next.load(now, contents);
        self.inner = next;
        self.policy = policy;
    }

    fn sim(&self) -> &dyn CacheSim {
        match &self.inner {
            Inner::Sampled(c) => c,
            Inner::Lhd(c) => c.as_ref(),
            Inner::S3Fifo(c) => c.as_ref(),
        }
    }
}

impl CacheSim for SwitchingCache {
    fn access(&mut self, key: u64, size: u32) -> bool {
        match &mut self.inner {
            Inner::Sampled(c) => c.access(key, size),
            Inner::Lhd(c) => c.access(key, size),
            Inner::S3Fifo(c) => c.access(key, size),
        }
    }
    fn remove(&mut self, key: u64) {
        match &mut self.inner {
            Inner::Sampled(c) => c.remove(key),
            Inner::Lhd(c) => c.remove(key),
            Inner::S3Fifo(c) => c.remove(key),
        }
    }
    fn len(&self) -> usize {
        self.sim().len()
    }
    fn used(&self) -> u64 {
        self.sim().used()
    }
    fn capacity(&self) -> u64 {
        self.sim().capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A switch in either direction keeps every entry and the occupancy, and the cache
    /// keeps honouring its capacity afterwards.
    #[test]
    fn switching_keeps_contents_and_capacity() {
        for unit in [Unit::Objects, Unit::Bytes] {
            let mut c = SwitchingCache::new(PolicySpec::RedisLru { k: 5 }, 5000, unit, 7);
            let mut x = 1u64;
            let mut step = |c: &mut SwitchingCache, n: usize| {
                for _ in 0..n {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let key = (x >> 33) % 3000;
                    c.access(key, 1 + (key % 7) as u32);
                    assert!(c.used() <= c.capacity());
                }
            };
            step(&mut c, 20_000);
            for p in [
                PolicySpec::Lhd { k: 64 },
                PolicySpec::RedisLru { k: 16 },
                PolicySpec::RedisLru { k: 1 },
                PolicySpec::Lhd { k: 32 },
                PolicySpec::RedisLru { k: 5 },
            ] {
                let (len, used) = (c.len(), c.used());
                c.switch_to(p);
                assert_eq!(c.policy(), p);
                assert_eq!((c.len(), c.used()), (len, used), "{unit} {p}");
                step(&mut c, 20_000);
            }
            assert_eq!(c.switches(), 5);
        }
    }

    /// Recency survives a switch: right after LRU → LHD → LRU, the entries touched
    /// last are still the youngest, so a scan of new keys evicts the old ones first.
    #[test]
    fn recency_carries_over() {
        let mut c = SwitchingCache::new(PolicySpec::RedisLru { k: 16 }, 1000, Unit::Objects, 1);
        for key in 0..1000u64 {
            c.access(key, 1);
        }
        // Keys 900..1000 touched again: the most recent.
        for key in 900..1000u64 {
            assert!(c.access(key, 1));
        }
        c.switch_to(PolicySpec::Lhd { k: 64 });
        c.switch_to(PolicySpec::RedisLru { k: 16 });
        for key in 10_000..10_500u64 {
            c.access(key, 1);
        }
        let kept = (900..1000u64).filter(|&k| c.access(k, 1)).count();
        assert!(kept >= 95, "only {kept} of the 100 recent keys kept");
    }
}
