//! Miniature simulation (Waldspurger et al., ATC'17 "Cache modeling and optimization
//! using miniature simulations"; used by DLRU §2.2 and §3.3 to pick Redis's K).
//!
//! Any eviction policy, stack algorithm or not, can be modelled by simulating it on the
//! SHARDS spatial sample of the trace (`hash(key) mod P < T`, rate `R = T / P`) with a
//! cache scaled down by the same `R`: a cache of `C` objects (bytes) becomes a
//! miniature cache of `R C`. Because every reference to a sampled key is kept, the
//! miniature cache sees the same reuse pattern at `1/R` the scale, and its miss ratio
//! estimates the full cache's. Several sizes and several policies are simulated at
//! once, each in its own miniature cache (DLRU runs one per K), fed the same sample.
//!
//! Details:
//! - The miniature capacity is `round(R C)` (at least 1); the point is reported at the
//!   size that capacity really emulates, `round(R C) / R`, so rounding does not bias
//!   small caches.
//! - With `adjust` (default), the miss ratio is `misses / (R x all references)` rather
//!   than `misses / sampled references`: the SHARDS_adj correction (SHARDS §3.3) folded
//!   into a ratio, which removes most of the error when a hot key happens to fall in or
//!   out of a small sample.
//! - DLRU §3.3 found fewer than 256 distinct sampled keys too few for a reliable
//!   estimate; [`MiniSim::reliable`] reports that.

use augur_sim::lfu::LfuClock;
use augur_sim::{CacheSim, PolicySpec, Unit};

use crate::curve::{Curve, Point, SizeUnit};
use crate::shards::{Sampler, U64Map};
use crate::MrcModel;

/// Fewest distinct sampled keys for a trustworthy miniature simulation (DLRU §3.3).
pub const MIN_RELIABLE_KEYS: usize = 256;

struct Policy {
    name: String,
    k: Option<u32>,
    sims: Vec<Box<dyn CacheSim>>,
    misses: Vec<u64>,
}

/// Miniature simulations of several policies at several cache sizes.
pub struct MiniSim {
    sampler: Sampler,
    unit: SizeUnit,
    adjust: bool,
    /// Full-scale sizes and their miniature capacities.
    sizes: Vec<(u64, u64)>,
    policies: Vec<Policy>,
    keys: U64Map<()>,
    sampled: u64,
    all: u64,
}

impl MiniSim {
    /// Miniature caches at rate `rate` for the full-scale cache `sizes` (in `unit`),
    /// with the adjusted miss ratio. Add policies with [`MiniSim::add_policy`] or
    /// [`MiniSim::add_spec`] before feeding requests.
    pub fn new(rate: f64, unit: SizeUnit, sizes: &[u64]) -> Self {
        let sampler = Sampler::with_rate(rate);
        let r = sampler.rate();
        let sizes = sizes
            .iter()
            .map(|&s| (s, ((s as f64 * r).round() as u64).max(1)))
            .collect();
        Self {
            sampler,
            unit,
            adjust: true,
            sizes,
            policies: Vec::new(),
            keys: U64Map::default(),
            sampled: 0,
            all: 0,
        }
    }

    /// Turns the SHARDS_adj-style correction on or off.
    pub fn with_adjust(mut self, adjust: bool) -> Self {
        self.adjust = adjust;
        self
    }

    /// The sampling rate `R`.
    pub fn rate(&self) -> f64 {
        self.sampler.rate()
    }

    /// (full-scale size, miniature capacity) pairs.
    pub fn sizes(&self) -> &[(u64, u64)] {
        &self.sizes
    }

    /// Adds a policy named `name` (with sampling size `k`, if any); `make(capacity)`
    /// builds its simulator for one miniature capacity, in the model's unit.
    pub fn add_policy(
        &mut self,
        name: impl Into<String>,
        k: Option<u32>,
        make: impl Fn(u64) -> Box<dyn CacheSim>,
    ) {
        let sims = self.sizes.iter().map(|&(_, c)| make(c)).collect();
        self.policies.push(Policy {
            name: name.into(),
            k,
            sims,
            misses: vec![0; self.sizes.len()],
        });
    }

    /// Adds a policy built by `augur_sim::build_miniature` (every size seeded with
    /// `seed`; time constants scaled to the sample).
    pub fn add_spec(&mut self, spec: PolicySpec, seed: u64) {
        let unit = match self.unit {
            SizeUnit::Objects => Unit::Objects,
            SizeUnit::Bytes => Unit::Bytes,
        };
        let k = match spec {
            PolicySpec::RedisLru { k } | PolicySpec::KLru { k } | PolicySpec::RedisLfu { k } => {
                Some(k as u32)
            }
            PolicySpec::Random => Some(1),
            PolicySpec::Lru
            | PolicySpec::Fifo
            | PolicySpec::Lhd { .. }
            | PolicySpec::S3Fifo { .. } => None,
        };
        let rate = self.rate();
        self.add_policy(format!("minisim-{spec}"), k, |c| {
            augur_sim::build_miniature(spec, c, unit, seed, rate)
        });
    }

    /// Redis LFU's tuning and the wall clock, for every simulator
    /// ([`CacheSim::set_lfu_clock`]: LFU's read it, the others ignore it).
    pub fn set_lfu_clock(&mut self, clock: LfuClock) {
        for sim in self.policies.iter_mut().flat_map(|p| p.sims.iter_mut()) {
            sim.set_lfu_clock(clock);
        }
    }

    /// Distinct keys in the sample so far.
    pub fn sampled_keys(&self) -> usize {
        self.keys.len()
    }

    /// References that fell in the sample.
    pub fn sampled_requests(&self) -> u64 {
        self.sampled
    }

    /// Whether the sample holds at least [`MIN_RELIABLE_KEYS`] distinct keys.
    pub fn reliable(&self) -> bool {
        self.keys.len() >= MIN_RELIABLE_KEYS
    }

    /// The curve of the `i`-th policy added.
    pub fn curve(&self, i: usize) -> Curve {
        let p = &self.policies[i];
        let denom = if self.adjust {
            self.all as f64 * self.rate()
        } else {
            self.sampled as f64
        };
        let r = self.rate();
        let points = self
            .sizes
            .iter()
            .zip(&p.misses)
            .map(|(&(_, mini), &m)| Point {
                size: mini as f64 / r,
                miss_ratio: if denom > 0.0 {
                    (m as f64 / denom).clamp(0.0, 1.0)
                } else {
                    1.0
                },
            })
            .collect();
        Curve::new(p.name.clone(), p.k, self.unit, points)
    }
}

impl MrcModel for MiniSim {
    fn access(&mut self, key: u64, size: u32) {
        self.all += 1;
        if !self.sampler.sampled(key) {
            return;
        }
        self.sampled += 1;
        self.keys.insert(key, ());
        for p in &mut self.policies {
            for (sim, m) in p.sims.iter_mut().zip(&mut p.misses) {
                if !sim.access(key, size) {
                    *m += 1;
                }
            }
        }
    }

    fn delete(&mut self, key: u64) {
        if !self.sampler.sampled(key) {
            return;
        }
        self.keys.remove(&key);
        for p in &mut self.policies {
            for sim in &mut p.sims {
                sim.remove(key);
            }
        }
    }

    /// One curve per policy, in the order they were added.
    fn curves(&self) -> Vec<Curve> {
        (0..self.policies.len()).map(|i| self.curve(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `redis-lfu:K` miniatures (`k-chooser minisim` under `allkeys-lfu`) carry their K,
    /// as the tuner's per-K curves need, and decay by the clock they are given: 300 keys
    /// read 40 times, then 100 minutes later 300 others once a round among one-off keys.
    /// With `lfu-decay-time 1` the old counters read 0 and the new set finds room at
    /// the size of 500 objects; with 0 the old set holds it.
    #[test]
    fn lfu_miniatures_carry_their_k_and_decay_by_the_clock_given() {
        let run = |decay: u32| {
            let mut m = MiniSim::new(1.0, SizeUnit::Objects, &[500, 1000]).with_adjust(false);
            m.add_spec(PolicySpec::RedisLfu { k: 5 }, 7);
            let at = |minutes| LfuClock {
                log_factor: 10,
                decay_minutes: decay,
                minutes,
            };
            m.set_lfu_clock(at(1_000));
            for _ in 0..40 {
                for old in 0..300u64 {
                    m.access(old, 1);
                }
            }
            m.set_lfu_clock(at(1_100));
            let mut scan = 1u64 << 40;
            for _ in 0..40 {
                for new in 1000..1300u64 {
                    m.access(new, 1);
                }
                for _ in 0..300 {
                    m.access(scan, 1);
                    scan += 1;
                }
            }
            m.curve(0)
        };
        let (decayed, kept) = (run(1), run(0));
        assert_eq!(decayed.k, Some(5));
        let (d, k) = (decayed.points[0].miss_ratio, kept.points[0].miss_ratio);
        assert!(d + 0.1 < k, "500 objects: {d} with decay, {k} without");
        // 1000 objects hold both sets: no decay is needed to keep the new one.
        let (d, k) = (decayed.points[1].miss_ratio, kept.points[1].miss_ratio);
        assert!((d - k).abs() < 0.02, "1000 objects: {d} vs {k}");
    }
}
