//! Naming a simulated policy ([`PolicySpec`]), the capacity unit ([`Unit`]) and
//! building a simulator from them ([`build`]).

use std::fmt;
use std::str::FromStr;

use crate::lhd::{LhdCache, LhdConfig};
use crate::list::{ListCache, ListOrder};
use crate::s3fifo::{S3FifoCache, S3FifoConfig};
use crate::sampled::{SampledCache, Sampling};
use crate::CacheSim;

/// Redis's default `maxmemory-samples`, used when a sampled policy is named without K.
pub const DEFAULT_SAMPLES: usize = 5;

/// What a cache's capacity counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Every object costs 1, whatever its size (the reference tables in
    /// `traces/README.md` and the object-count MRCs).
    Objects,
    /// Every object costs its size in bytes (Redis's `maxmemory`, the KRR paper's
    /// byte-level MRCs, §3.3).
    Bytes,
}

impl Unit {
    /// What an object of `size` bytes costs in this unit.
    #[inline]
    pub fn cost(self, size: u32) -> u64 {
        match self {
            Unit::Objects => 1,
            Unit::Bytes => u64::from(size),
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Objects => "objects",
            Unit::Bytes => "bytes",
        })
    }
}

/// An eviction policy to simulate. The textual names (parsed by [`FromStr`], printed by
/// [`fmt::Display`]) are:
///
/// | name | policy |
/// |---|---|
/// | `lru` | exact LRU ([`ListCache`] in LRU order) |
/// | `fifo` | FIFO: insertion order, hits do not reorder |
/// | `random` | evict a uniformly random entry (Redis `allkeys-random`; KRR with K = 1) |
/// | `redis-lru:K` (alias `klru-pool:K`) | Redis's approximated LRU: K samples per round merged into the 16-entry eviction pool (`allkeys-lru` with `maxmemory-samples K`) |
/// | `klru:K` | plain K-LRU of the KRR paper (§2.2, Eq. 1): evict the oldest of K fresh samples, no pool |
/// | `lhd:A` | LHD, least hit density ([`LhdCache`]): evict the lowest hit density among A samples (default 64) |
/// | `s3fifo` | S3-FIFO (SOSP'23, [`S3FifoCache`]) with exact FIFO queues |
/// | `s3fifo:K` | S3-FIFO with sampled queues: the main queue's oldest of K samples, a uniform sample of the small queue |
///
/// `redis-lru` and `klru` without `:K` use K = 5, Redis's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicySpec {
    Lru,
    Fifo,
    Random,
    /// Redis's pooled sampled LRU with `k` samples per eviction round.
    RedisLru {
        k: usize,
    },
    /// Redis's pooled sampled LFU (`allkeys-lfu`, `lfu-log-factor` 10, no decay) with `k`
    /// samples per eviction round ([`crate::lfu`]).
    RedisLfu {
        k: usize,
    },
    /// Plain K-LRU (KRR Eq. 1) with `k` fresh samples per eviction.
    KLru {
        k: usize,
    },
    /// LHD with `k` samples (associativity) per eviction and the paper's other defaults.
    Lhd {
        k: usize,
    },
    /// S3-FIFO: exact FIFO queues with `k` = 0, else both queues sampled with `k`.
    S3Fifo {
        k: usize,
    },
}

/// Redis's default: `allkeys-lru` with `maxmemory-samples 5`.
impl Default for PolicySpec {
    fn default() -> Self {
        PolicySpec::RedisLru { k: DEFAULT_SAMPLES }
    }
}

/// LHD's default associativity (RankCache, LHD §4.1).
pub const DEFAULT_LHD_SAMPLES: usize = 64;

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySpec::Lru => f.write_str("lru"),
            PolicySpec::Fifo => f.write_str("fifo"),
            PolicySpec::Random => f.write_str("random"),
            PolicySpec::RedisLru { k } => write!(f, "redis-lru:{k}"),
            PolicySpec::RedisLfu { k } => write!(f, "redis-lfu:{k}"),
            PolicySpec::KLru { k } => write!(f, "klru:{k}"),
            PolicySpec::Lhd { k } => write!(f, "lhd:{k}"),
            PolicySpec::S3Fifo { k: 0 } => f.write_str("s3fifo"),
            PolicySpec::S3Fifo { k } => write!(f, "s3fifo:{k}"),
        }
    }
}

/// Why a policy name did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsePolicyError(String);

impl fmt::Display for ParsePolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParsePolicyError {}

impl FromStr for PolicySpec {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (name, k) = match s.split_once(':') {
            Some((n, k)) => (n, Some(k)),
            None => (s, None),
        };
        let name = name.to_ascii_lowercase();
        let samples = |k: Option<&str>| -> Result<usize, ParsePolicyError> {
            match k {
                None => Ok(DEFAULT_SAMPLES),
                Some(k) => match k.trim().parse::<usize>() {
                    Ok(k) if k >= 1 => Ok(k),
                    _ => Err(ParsePolicyError(format!(
                        "bad sample count {k:?} in policy {s:?}: expected an integer >= 1"
                    ))),
                },
            }
        };
        let no_k = |p: PolicySpec| -> Result<PolicySpec, ParsePolicyError> {
            match k {
                None => Ok(p),
                Some(_) => Err(ParsePolicyError(format!(
                    "policy {name:?} takes no sample count (got {s:?})"
                ))),
            }
        };
        match name.as_str() {
            "lru" => no_k(PolicySpec::Lru),
            "fifo" => no_k(PolicySpec::Fifo),
            "random" => no_k(PolicySpec::Random),
            "redis-lru" | "klru-pool" => Ok(PolicySpec::RedisLru { k: samples(k)? }),
            "redis-lfu" | "lfu" => Ok(PolicySpec::RedisLfu { k: samples(k)? }),
            "klru" => Ok(PolicySpec::KLru { k: samples(k)? }),
            "s3fifo" | "s3-fifo" => Ok(PolicySpec::S3Fifo {
                k: match k {
                    None => 0,
                    Some(_) => samples(k)?,
                },
            }),
            "lhd" => Ok(PolicySpec::Lhd {
                k: match k {
                    None => DEFAULT_LHD_SAMPLES,
                    Some(_) => samples(k)?,
                },
            }),
            _ => Err(ParsePolicyError(format!(
                "unknown policy {s:?}: expected lru, fifo, random, redis-lru:K (klru-pool:K), redis-lfu:K (lfu:K), klru:K, lhd:A, s3fifo or s3fifo:K"
            ))),
        }
    }
}

/// A simulator for `policy` with `capacity` in `unit`; `seed` drives the sampling
/// policies' random generator (ignored by LRU and FIFO), so a run is reproducible.
pub fn build(policy: PolicySpec, capacity: u64, unit: Unit, seed: u64) -> Box<dyn CacheSim> {
    match policy {
        PolicySpec::Lru => Box::new(ListCache::new(ListOrder::Lru, capacity, unit)),
        PolicySpec::Fifo => Box::new(ListCache::new(ListOrder::Fifo, capacity, unit)),
        PolicySpec::Random => Box::new(SampledCache::new(Sampling::Random, capacity, unit, seed)),
        PolicySpec::RedisLru { k } => Box::new(SampledCache::new(
            Sampling::Pooled { k },
            capacity,
            unit,
            seed,
        )),
        PolicySpec::RedisLfu { k } => Box::new(SampledCache::new(
            Sampling::PooledLfu { k },
            capacity,
            unit,
            seed,
        )),
        PolicySpec::KLru { k } => Box::new(SampledCache::new(
            Sampling::Fresh { k },
            capacity,
            unit,
            seed,
        )),
        PolicySpec::S3Fifo { k } => Box::new(S3FifoCache::new(
            S3FifoConfig::sampled(k),
            capacity,
            unit,
            seed,
        )),
        // At full scale the miniature's time constants are LHD's own.
        PolicySpec::Lhd { .. } => build_miniature(policy, capacity, unit, seed, 1.0),
    }
}

/// [`build`] for a miniature cache that sees a spatial sample of rate `rate` of the
/// references (miniature simulation, Waldspurger et al. ATC'17; DLRU §3.3). Sizes are
/// scaled by the caller; time constants counted in accesses must shrink by the same
/// factor so that the miniature adapts as often, relative to its own stream, as the full
/// cache: LHD reconfigures every `rate` × 2^20 sampled accesses (at least 1 000, so that
/// its histograms hold something). Policies without such constants are built as by
/// [`build`].
pub fn build_miniature(
    policy: PolicySpec,
    capacity: u64,
    unit: Unit,
    seed: u64,
    rate: f64,
) -> Box<dyn CacheSim> {
    match policy {
        PolicySpec::Lhd { k } => {
            let full = LhdConfig::default();
            let rate = rate.clamp(f64::MIN_POSITIVE, 1.0);
            let every = ((full.reconfigure_every as f64 * rate) as u64).max(1000);
            // The miniature counts R of the accesses, so an age unit of 2^(10 + log2 R)
            // of its accesses spans as much of the trace as the full cache's 2^10 (the
            // store's shards start the same way, `LhdConfig::initial_age_shift`). With
            // the full cache's 2^10 its ages were 1/R times coarser: a miniature of
            // 2 000 objects saw a handful of age bins until its 5th reconfiguration
            // (5M accesses of the trace), and its curve was 2-3x further from LHD's
            // (`augur mrc-compare ... --model minisim --policy lhd --rate 0.005`: MAE
            // .0161 -> .0053 on scarab-recs, .0130 -> .0058 arc_oltp, .0076 -> .0057
            // arc_p3).
            let shift = (f64::from(full.initial_age_shift) + rate.log2()).round();
            Box::new(LhdCache::new(
                LhdConfig {
                    associativity: k,
                    reconfigure_every: every,
                    initial_age_shift: shift.max(0.0) as u32,
                    ..full
                },
                capacity,
                unit,
                seed,
            ))
        }
        _ => build(policy, capacity, unit, seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for p in [
            PolicySpec::Lru,
            PolicySpec::Fifo,
            PolicySpec::Random,
            PolicySpec::RedisLru { k: 5 },
            PolicySpec::RedisLfu { k: 10 },
            PolicySpec::KLru { k: 16 },
            PolicySpec::Lhd { k: 64 },
            PolicySpec::S3Fifo { k: 0 },
            PolicySpec::S3Fifo { k: 8 },
        ] {
            assert_eq!(p.to_string().parse::<PolicySpec>(), Ok(p));
        }
        assert_eq!("klru-pool:3".parse(), Ok(PolicySpec::RedisLru { k: 3 }));
        assert_eq!(" Redis-LRU ".parse(), Ok(PolicySpec::RedisLru { k: 5 }));
        assert_eq!("klru".parse(), Ok(PolicySpec::KLru { k: 5 }));
        assert_eq!("LFU".parse(), Ok(PolicySpec::RedisLfu { k: 5 }));
        assert_eq!("LHD".parse(), Ok(PolicySpec::Lhd { k: 64 }));
        assert_eq!("S3-FIFO".parse(), Ok(PolicySpec::S3Fifo { k: 0 }));
    }

    #[test]
    fn bad_names_are_rejected() {
        for bad in [
            "",
            "lfu:0",
            "klru:0",
            "klru:x",
            "lru:5",
            "redis-lru:",
            "random:2",
            "lhd:0",
            "s3fifo:0",
        ] {
            assert!(bad.parse::<PolicySpec>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn build_honours_capacity_and_unit() {
        for p in [
            "lru",
            "fifo",
            "random",
            "redis-lru:5",
            "redis-lfu:5",
            "klru:5",
            "lhd:16",
            "s3fifo",
            "s3fifo:8",
        ] {
            let mut sim = build(p.parse().unwrap(), 1000, Unit::Bytes, 1);
            assert_eq!(sim.capacity(), 1000);
            for key in 0..100u64 {
                sim.access(key, 300);
                assert!(sim.used() <= 1000, "{p}");
            }
            assert_eq!(sim.len(), 3, "{p}");
            assert_eq!(sim.used(), 900, "{p}");
        }
    }
}
