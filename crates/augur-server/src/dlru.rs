//! DLRU (Qiu et al., "Dynamic K for Redis's approximated LRU", §3.2-3.5): `maxmemory-samples
//! auto` picks K on the fly from miniature caches and a cost model.
//!
//! - **Miniature caches (§3.3).** One miniature `redis-lru:K` cache per K in
//!   [`DLRU_KS`], the same simulator `augur sim` runs (`augur_sim::build`, Redis's pooled
//!   K-LRU as the store evicts with; DESIGN.md: one policy implementation). They are fed
//!   the profiler's spatially sampled references at the tenant's sample rate R
//!   (`tenant-sample-rate`, 0.01 by default, where DLRU uses 1/200: the store's filter is
//!   the same `hash mod P < T` test as DLRU's Eq. 1, and one sample serves both KRR and
//!   DLRU). A reference is what the profiler models: a GET hit, a write, or a GET miss
//!   entering at its refill.
//! - **Size (Eq. 2).** `Max cSize = C R / average item size` objects; the store charges
//!   and evicts by bytes and the sampled references carry their charged bytes, so the
//!   miniature is `C R` bytes (Eq. 2 times the average item size, exact for variable
//!   sizes). C is the live cache size: `maxmemory` for the whole keyspace, else the
//!   tenant's cap, target or current bytes. Every interval the caches are resized in place
//!   (`CacheSim::set_capacity`, contents kept).
//! - **Interval (§3.5).** `dlru-interval` GETs (DLRU's 5M by default), estimated as
//!   sampled GETs / R, or the profiler's interval (`tenant-interval`,
//!   `tenant-interval-ms`), whichever ends first.
//! - **Cost (Eq. 3).** `P_K = M_K (p + OH_K)`: `M_K` the miniature's misses in the
//!   interval scaled by 1/R, `p` the measured miss latency (GET miss to refill SET, §3.4,
//!   the profiler's measurement), `OH_K` the store's eviction overhead measured once per
//!   process by [`Overhead::calibrate`] (time per eviction of the real `augur_store::Store`
//!   at each K, minus the same writes without eviction). The argmin K is installed; ties go
//!   to the smaller K (§3.5); under [`MIN_KEYS`] distinct sampled keys in the interval the
//!   default K = 5 is installed (§3.3). Unlike §3.5, `M_K` is averaged over the intervals
//!   ([`SMOOTHING`], an EWMA) before the argmin: over intervals much shorter than DLRU's
//!   5M GETs one interval's sample follows the workload's phases. And the running K is
//!   left for the argmin at once only on a large gain ([`LARGE_GAIN`]), otherwise after
//!   it cost less in [`CONFIRM_INTERVALS`] consecutive intervals (`should_switch`).
//! - **Scope.** With `tenant-partitioning off` eviction is shared and uses the global K:
//!   one keyspace model (every tenant's references at the lowest tenant rate) sets
//!   `maxmemory-samples`' effective K. With `static`, each tenant gets its own K. With
//!   `kredis`, the tuner installs K with the memory (from the `k-chooser` curves); DLRU
//!   then only reports what it would choose.
//! - **Generalised for `maxmemory-policy auto`.** [`Dlru::with_candidates`] simulates
//!   any candidate policies (auto: this K set and LHD); Eq. 3 is computed per candidate
//!   with that policy's measured overhead ([`Overhead::at_policy`]), and the choice
//!   with hysteresis is crate::autopolicy's. One engine serves both settings.

use augur_sim::lfu::LfuClock;
use augur_sim::{CacheSim, PolicySpec, Unit};
use augur_store::{EvictionPolicy, Ns, Partitioning, SetTtl, Store, StoreConfig, TenantId};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

/// The K values DLRU simulates (§3.3: 1 is random eviction, 16 is nearly LRU).
pub const DLRU_KS: [u32; 5] = [1, 2, 5, 10, 16];
/// K installed when the interval's sample is too small (Redis's default).
pub const DEFAULT_K: u32 = 5;
/// Weight of the past in the per-K average of predicted misses that DLRU chooses K on
/// (each interval's misses count 1 - this). DLRU §3.5 chooses on the last interval
/// alone, over 5M GETs; over short intervals (the server's default time bound, or a
/// small tenant) one interval's sample follows the workload's phases: on cloudphysics
/// K went 5, 10, 5, 5, 16, 1, 10, 5, 10, 16, 1, ... with K = 1 best in one interval of
/// each 5-interval loop, and an interval evicting at random does damage that outlasts
/// it, so `maxmemory-samples auto` hit 0.312 where every fixed K hit 0.324-0.343
/// (BENCHMARKS.md, "DLRU in the server on a quiet machine"). With 0.5: 0.342, 1.0 % below
/// the best fixed K's throughput at 30 % and 0.3 % above at 75 %; on the two-phase
/// workload at 30 % it left K = 1 for K = 2 after each short reuse phase (-2.1 % vs
/// K = 1, "DLRU with smoothed misses"), which `should_switch` now stops (-0.2 %,
/// "DLRU switches K on a large or repeated gain"). `maxmemory-policy
/// auto` (crate::autopolicy) keeps each interval's costs: its family switches have
/// their own hysteresis, and smoothing its costs missed one more cell of the miss table
/// (38 of 42 within 0.005 instead of 39).
pub const SMOOTHING: f64 = 0.5;
/// Intervals of per-K costs kept for the switching test (`should_switch`); with
/// [`SMOOTHING`] 0.5 the oldest weighs 1/128 of the newest.
const GAIN_HISTORY: usize = 8;
/// A smoothed gain at least this large (relative) switches K at once (a workload that
/// changed: a loop against a recency pattern differ by 30 % and more).
pub const LARGE_GAIN: f64 = 0.15;
/// Otherwise the new K must have cost less than the running one in this many
/// consecutive intervals (as `maxmemory-policy auto`'s family switches).
pub const CONFIRM_INTERVALS: usize = 3;
/// Fewest distinct sampled keys in an interval for a decision (§3.3).
pub const MIN_KEYS: usize = augur_mrc::minisim::MIN_RELIABLE_KEYS;
/// Modulus of the store's sampling filter (`augur_store`'s `SAMPLE_MODULUS`).
const SAMPLE_MODULUS: u64 = 1 << 24;

/// Which model supplies the per-K curves the kRedis tuner partitions with
/// (`k-chooser`; kRedis §6.9 compares the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KChooser {
    /// kRedis's KRR stacks (the default).
    #[default]
    Krr,
    /// DLRU's miniature caches, at several sizes per K.
    Minisim,
}

impl KChooser {
    pub fn name(self) -> &'static str {
        match self {
            KChooser::Krr => "krr",
            KChooser::Minisim => "minisim",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "krr" => Some(KChooser::Krr),
            "minisim" => Some(KChooser::Minisim),
            _ => None,
        }
    }
}

/// Chooses K by Eq. 3: the K with the least `M_K (p + OH_K)`, the smaller K on a tie;
/// [`DEFAULT_K`] when fewer than [`MIN_KEYS`] distinct keys were sampled. Returns the K
/// and whether it is the fallback.
pub fn choose(
    ks: &[u32],
    misses: &[f64],
    penalty_us: f64,
    oh_us: &[f64],
    keys: usize,
) -> (u32, bool) {
    if keys < MIN_KEYS || ks.is_empty() {
        return (DEFAULT_K, true);
    }
    let mut best = (ks[0], f64::INFINITY);
    let mut order: Vec<usize> = (0..ks.len()).collect();
    order.sort_by_key(|&i| ks[i]);
    for i in order {
        let cost = misses[i] * (penalty_us + oh_us[i]);
        if cost < best.1 {
            best = (ks[i], cost);
        }
    }
    (best.0, false)
}

/// Whether DLRU leaves the running K `from` for `to` (the argmin of the smoothed
/// costs), given the per-K Eq. 3 costs of the last intervals with evidence (`history`,
/// oldest first, per K of `ks`): when `to`'s gain `(P_from - P_to) / P_from`, weighted
/// as [`SMOOTHING`] weighs the misses, is at least [`LARGE_GAIN`], or when `to` cost
/// less than `from` in each of the last [`CONFIRM_INTERVALS`] intervals. An interval's
/// miniature counts the misses each K would have had in it, not what a K leaves
/// behind: on DLRU §4.3.3's two-phase workload at 30 % the miniatures put K = 2 below
/// K = 1 by 3-12 % in each short reuse phase and above it by 2-9 % in each loop phase,
/// and the reuse intervals run at K = 2 evicted the loop keys random eviction had kept,
/// which the next loop paid for (auto 2.1 % below fixed K = 1, BENCHMARKS.md "DLRU with
/// smoothed misses"). A fixed margin instead (5 %) also held a poor K: on cloudphysics
/// at 30 % K = 16 beat a running K = 2 by 4 % every interval and was never installed.
fn should_switch(history: &VecDeque<Vec<f64>>, ks: &[u32], from: u32, to: u32) -> bool {
    let (Some(f), Some(t)) = (
        ks.iter().position(|&k| k == from),
        ks.iter().position(|&k| k == to),
    ) else {
        return true;
    };
    let (mut wsum, mut gain_acc, mut w) = (0.0, 0.0, 1.0);
    let (mut streak, mut counting) = (0, true);
    for costs in history.iter().rev() {
        let (cf, ct) = (costs[f], costs[t]);
        if cf > 0.0 && cf.is_finite() && ct.is_finite() {
            wsum += w;
            gain_acc += w * (cf - ct) / cf;
        }
        counting &= ct < cf;
        streak += usize::from(counting);
        w *= SMOOTHING;
    }
    if wsum == 0.0 {
        return true;
    }
    let gain = gain_acc / wsum;
    gain >= LARGE_GAIN || (gain > 0.0 && streak >= CONFIRM_INTERVALS)
}

/// The store's eviction overhead per K (µs per eviction), measured.
#[derive(Debug, Clone)]
pub struct Overhead {
    pub per_k_us: Vec<(u32, f64)>,
    /// `allkeys-lfu`'s per K, measured the same way (`maxmemory-samples auto` under an
    /// LFU policy weighs the LFU miniatures' misses with it).
    pub per_k_lfu_us: Vec<(u32, f64)>,
    /// `allkeys-lhd`'s, measured the same way (0 until measured; `maxmemory-policy
    /// auto` weighs LHD's misses with it, crate::autopolicy).
    pub lhd_us: f64,
    /// `allkeys-s3fifo`'s (with `maxmemory-samples` 8), measured with LHD's.
    pub s3fifo_us: f64,
}

impl Overhead {
    /// Measures, on a private one-shard `Store`, the time of `MEASURE` SETs of new keys
    /// into a full store evicting with `allkeys-lru` at each K, minus the same SETs into
    /// an unlimited store of the same size, per eviction; the best of three rounds (other
    /// work on the machine only ever adds time). Well under a second in a release build,
    /// once per process, on its own thread ([`overhead`]). DLRU §3.4 measures one K live and scales the others by ratios
    /// measured offline; measuring every K directly needs no ratios.
    pub fn calibrate(ks: &[u32]) -> Overhead {
        Self::calibrate_policies(ks, false)
    }

    /// Zero overhead for every K and LHD: Eq. 3 then ranks by misses alone (the
    /// simulator's choice, deterministic; the server's until calibration is done).
    pub fn zero(ks: &[u32]) -> Overhead {
        Overhead {
            per_k_us: ks.iter().map(|&k| (k, 0.0)).collect(),
            per_k_lfu_us: ks.iter().map(|&k| (k, 0.0)).collect(),
            lhd_us: 0.0,
            s3fifo_us: 0.0,
        }
    }

    /// [`Overhead::calibrate`] (`allkeys-lru` and `allkeys-lfu` at each K), plus
    /// `allkeys-lhd` (with `lhd-samples` 64) and `allkeys-s3fifo` (with K = 8) when `lhd`
    /// (the other candidates of `auto`).
    pub fn calibrate_policies(ks: &[u32], lhd: bool) -> Overhead {
        const FILL: usize = 10_000;
        const MEASURE: usize = 10_000;
        let value = vec![b'v'; 100];
        let keys: Vec<Vec<u8>> = (0..FILL + MEASURE)
            .map(|i| format!("dlru:calibration:{i:08}").into_bytes())
            .collect();
        let new_store_as = |maxmemory: u64, k: usize, policy: EvictionPolicy| {
            Store::new(StoreConfig {
                shards: 1,
                databases: 1,
                maxmemory,
                policy,
                samples: k,
                zone: Default::default(),
            })
        };
        let new_store =
            |maxmemory: u64, k: usize| new_store_as(maxmemory, k, EvictionPolicy::AllKeysLru);
        // LHD last, as one more "K" of the loop below.
        let runs: Vec<(u32, EvictionPolicy)> = ks
            .iter()
            .map(|&k| (k, EvictionPolicy::AllKeysLru))
            .chain(ks.iter().map(|&k| (k, EvictionPolicy::AllKeysLfu)))
            .chain(lhd.then_some((0, EvictionPolicy::AllKeysLhd)))
            .chain(lhd.then_some((
                crate::autopolicy::S3FIFO_SAMPLES as u32,
                EvictionPolicy::AllKeysS3Fifo,
            )))
            .collect();
        let ns = Ns::new(0, 0);
        let put = |s: &Store, k: &[u8]| {
            let _ = s.lock_key(k).set(ns, k, &value, SetTtl::Clear, 0);
        };
        let probe = new_store(0, 5);
        for k in &keys[..FILL] {
            put(&probe, k);
        }
        let limit = probe.used_memory();
        drop(probe);
        let mut base = f64::INFINITY;
        let mut per_k = vec![f64::INFINITY; runs.len()];
        let mut evictions = vec![1u64; runs.len()];
        for _ in 0..3 {
            let s = new_store(0, 5);
            for k in &keys[..FILL] {
                put(&s, k);
            }
            let t = Instant::now();
            for k in &keys[FILL..] {
                put(&s, k);
            }
            base = base.min(t.elapsed().as_secs_f64() * 1e6);
            drop(s);
            for (i, &(k, policy)) in runs.iter().enumerate() {
                let s = new_store_as(limit, (k as usize).max(1), policy);
                for key in &keys[..FILL] {
                    put(&s, key);
                }
                let before = s.stats(0).evicted_keys;
                let t = Instant::now();
                for key in &keys[FILL..] {
                    put(&s, key);
                }
                let us = t.elapsed().as_secs_f64() * 1e6;
                let evicted = s.stats(0).evicted_keys.saturating_sub(before).max(1);
                per_k[i] = per_k[i].min(us);
                evictions[i] = evicted;
            }
        }
        // The writes' own cost taken out, per eviction.
        let mut per_run: Vec<f64> = per_k
            .iter()
            .zip(&evictions)
            .map(|(&t, &n)| ((t - base) / n as f64).max(0.0))
            .collect();
        let (s3fifo_us, lhd_us) = if lhd {
            let s3 = per_run.pop().unwrap_or(0.0);
            (s3, per_run.pop().unwrap_or(0.0))
        } else {
            (0.0, 0.0)
        };
        let lfu_run = per_run.split_off(ks.len());
        Overhead {
            per_k_us: ks.iter().copied().zip(per_run).collect(),
            per_k_lfu_us: ks.iter().copied().zip(lfu_run).collect(),
            lhd_us,
            s3fifo_us,
        }
    }

    /// The overhead of a candidate policy (`redis-lru:K` or `lhd:A`).
    pub fn at_policy(&self, p: PolicySpec) -> f64 {
        match p {
            PolicySpec::Lhd { .. } => self.lhd_us,
            PolicySpec::S3Fifo { .. } => self.s3fifo_us,
            PolicySpec::RedisLru { k } | PolicySpec::KLru { k } => self.at(k as u32),
            PolicySpec::RedisLfu { k } => Self::find(&self.per_k_lfu_us, k as u32),
            _ => 0.0,
        }
    }

    fn find(per_k: &[(u32, f64)], k: u32) -> f64 {
        per_k
            .iter()
            .find(|(kk, _)| *kk == k)
            .map_or(0.0, |(_, v)| *v)
    }

    pub fn at(&self, k: u32) -> f64 {
        Self::find(&self.per_k_us, k)
    }
}

static OVERHEAD: std::sync::OnceLock<Overhead> = std::sync::OnceLock::new();
static CALIBRATION: std::sync::Once = std::sync::Once::new();

/// The measured overhead, once [`Overhead::calibrate`] has run. The first call starts it
/// on a thread of its own (so the profiler keeps draining references); until it is done
/// decisions use OH_K = 0, i.e. misses alone, which is what Eq. 3 reduces to whenever
/// p >> OH_K (§3.5).
pub fn overhead() -> Option<&'static Overhead> {
    CALIBRATION.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("augur-dlru-calibration".into())
            .spawn(|| {
                let oh = Overhead::calibrate_policies(&DLRU_KS, true);
                tracing::info!("DLRU eviction overhead per K (us): {:?}", oh.per_k_us);
                let _ = OVERHEAD.set(oh);
            });
    });
    OVERHEAD.get()
}

/// One interval's decision, as INFO shows it.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// `keyspace` or `tenant:NAME`.
    pub scope: String,
    pub interval: u64,
    /// The K of each `redis-lru:K` candidate: the first `ks.len()` entries of
    /// `candidates`, `misses`, `oh_us` and `cost_us`.
    pub ks: Vec<u32>,
    /// Every candidate simulated (DLRU: the K set; `maxmemory-policy auto`: the K set
    /// and LHD, crate::autopolicy).
    pub candidates: Vec<PolicySpec>,
    /// Predicted misses per candidate in the interval (miniature misses / R).
    pub misses: Vec<f64>,
    /// Their average over the intervals so far ([`SMOOTHING`]), which DLRU chooses K on.
    pub smoothed: Vec<f64>,
    pub oh_us: Vec<f64>,
    /// P of Eq. 3 per candidate, in µs.
    pub cost_us: Vec<f64>,
    pub penalty_us: f64,
    pub sampled_refs: u64,
    pub distinct_keys: usize,
    pub rate: f64,
    /// Full-scale cache size C and the miniature's bytes C R.
    pub cache_bytes: u64,
    pub mini_bytes: u64,
    /// Eq. 2's object count, C R / average item size.
    pub eq2_objects: u64,
    /// The K chosen (under auto: the K the chosen or the current K-LRU runs with).
    pub k: u32,
    pub fallback: bool,
    /// Whether the K was installed in the store (not under kredis, whose tuner owns K).
    pub installed: bool,
    /// The policy to run from now on (auto: after hysteresis; DLRU: `redis-lru:k`).
    pub policy: PolicySpec,
    /// The candidate of least cost this interval (before hysteresis).
    pub best: PolicySpec,
    /// Policy switches of this scope so far (K-LRU <-> LHD; a K change is not one).
    pub switches: u64,
    /// Whether the miniatures were full when the interval began (`maxmemory-policy
    /// auto` takes no evidence from an interval begun while they filled).
    pub filled: bool,
    /// `maxmemory-policy auto`: per family (K-LRU, LHD, S3-FIFO), the consecutive
    /// intervals it has beaten the running family by the margin (crate::autopolicy).
    pub streaks: [u32; crate::autopolicy::FAMILIES],
}

/// One scope's miniature caches and interval counters.
pub struct Dlru {
    rate: f64,
    threshold: u64,
    mini_bytes: u64,
    minis: Vec<(PolicySpec, Box<dyn CacheSim>, u64)>,
    refs: u64,
    gets: u64,
    keys: HashSet<u64>,
    size_sum: f64,
    intervals: u64,
    /// `maxmemory-policy auto`'s state (None under plain DLRU).
    auto: Option<crate::autopolicy::Hysteresis>,
    /// Per candidate, the EWMA of its scaled misses over the intervals with evidence
    /// ([`SMOOTHING`]).
    smoothed: Vec<f64>,
    /// The K chosen at the last decision with evidence (plain DLRU), and the per-K Eq. 3
    /// costs of the last [`GAIN_HISTORY`] intervals with evidence (`should_switch`).
    running_k: Option<u32>,
    cost_history: VecDeque<Vec<f64>>,
    /// Whether every miniature was full (at least [`FULL`] of its capacity used) when
    /// the interval began: `maxmemory-policy auto` takes no decision on an interval
    /// in which they were still filling (crate::autopolicy).
    filled: bool,
    /// The LFU tuning and wall clock the miniatures were given ([`Dlru::set_lfu_clock`]),
    /// for one rebuilt at a resize.
    lfu_clock: LfuClock,
}

/// A miniature counts as full from this share of its capacity (byte-sized caches stop
/// short of exactly full by up to an item).
const FULL: f64 = 0.9;

/// Whether a model's K set is LFU's ([`Dlru::new_lfu`]): its candidates start with it.
fn lfu_k_set(candidates: &[PolicySpec]) -> bool {
    matches!(candidates.first(), Some(PolicySpec::RedisLfu { .. }))
}

/// The seed of a candidate's miniature (fixed: runs are reproducible).
fn mini_seed(p: PolicySpec) -> u64 {
    match p {
        PolicySpec::RedisLru { k } => 0x646c_7275 ^ k as u64,
        other => 0x646c_7275 ^ 0x1bd0_0000 ^ crate::autopolicy::spec_code(other),
    }
}

impl Dlru {
    /// DLRU's miniature caches (one `redis-lru:K` per K of [`DLRU_KS`]) at rate `rate`
    /// for a full-scale cache of `cache_bytes`.
    pub fn new(rate: f64, cache_bytes: u64) -> Self {
        Self::k_set(rate, cache_bytes, |k| PolicySpec::RedisLru { k })
    }

    /// DLRU under an LFU policy (`allkeys-lfu`, `volatile-lfu`): K chooses among Redis's
    /// pooled LFU candidates as it does among LRU's, so the miniatures are `redis-lfu:K`
    /// and each K's cost is LFU's measured eviction overhead: choosing by LRU's
    /// miniatures would pick the K at which LRU, not the policy the store runs, misses
    /// least. The simulator's LFU is the store's counter code; the profiler gives the
    /// miniatures the server's `lfu-log-factor`, `lfu-decay-time` and wall clock
    /// ([`Dlru::set_lfu_clock`]), so their counters grow and decay by idle minutes as
    /// the store's do (before 2026-12-02 they ran at factor 10 without decay whatever
    /// the server's tuning).
    pub fn new_lfu(rate: f64, cache_bytes: u64) -> Self {
        Self::k_set(rate, cache_bytes, |k| PolicySpec::RedisLfu { k })
    }

    fn k_set(rate: f64, cache_bytes: u64, spec: impl Fn(usize) -> PolicySpec) -> Self {
        let ks: Vec<PolicySpec> = DLRU_KS.iter().map(|&k| spec(k as usize)).collect();
        Self::with_candidates(rate, cache_bytes, &ks, false)
    }

    /// Miniature caches of `candidates` (`redis-lru:K` first, then any others such as
    /// `lhd:A`); with `auto` the interval's choice is `maxmemory-policy auto`'s, with
    /// hysteresis (crate::autopolicy), else DLRU's K.
    pub fn with_candidates(
        rate: f64,
        cache_bytes: u64,
        candidates: &[PolicySpec],
        auto: bool,
    ) -> Self {
        let mini_bytes = ((cache_bytes as f64 * rate).round() as u64).max(1);
        let minis = candidates
            .iter()
            .map(|&p| {
                let sim =
                    augur_sim::build_miniature(p, mini_bytes, Unit::Bytes, mini_seed(p), rate);
                (p, sim, 0)
            })
            .collect();
        let mut d = Self {
            rate,
            threshold: augur_store::sample_threshold(rate),
            mini_bytes,
            minis,
            refs: 0,
            gets: 0,
            keys: HashSet::new(),
            size_sum: 0.0,
            intervals: 0,
            auto: auto.then(crate::autopolicy::Hysteresis::default),
            smoothed: Vec::new(),
            running_k: None,
            cost_history: VecDeque::new(),
            filled: false,
            lfu_clock: LfuClock::default(),
        };
        // The simulator's LFU starts without decay (offline, references carry no
        // clock); a live model starts at Redis's defaults until it is told otherwise.
        d.set_lfu_clock(LfuClock::default());
        d
    }

    /// Redis LFU's tuning and the wall clock, for the miniatures of the references
    /// that follow: an LFU miniature's counters then grow and decay as the store's
    /// (Redis's `updateLFU`); the other policies' miniatures ignore it.
    pub fn set_lfu_clock(&mut self, clock: LfuClock) {
        self.lfu_clock = clock;
        for (_, sim, _) in &mut self.minis {
            sim.set_lfu_clock(clock);
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// `maxmemory-policy auto`: the scope runs `p` until the chooser has evidence.
    pub fn start_with(&mut self, p: PolicySpec) {
        if self.auto.is_some() {
            self.auto = Some(crate::autopolicy::Hysteresis::starting(p));
        }
    }

    /// Whether this model makes `maxmemory-policy auto`'s choice.
    pub fn is_auto(&self) -> bool {
        self.auto.is_some()
    }

    /// Whether reference `id` falls in this model's sample (the store's filter).
    pub fn samples(&self, id: u64) -> bool {
        (augur_store::mix64(id) & (SAMPLE_MODULUS - 1)) < self.threshold
    }

    /// One sampled reference of `bytes` charged bytes.
    pub fn access(&mut self, key: u64, bytes: u32) {
        self.refs += 1;
        self.size_sum += f64::from(bytes);
        self.keys.insert(key);
        for (_, sim, misses) in &mut self.minis {
            if !sim.access(key, bytes.max(1)) {
                *misses += 1;
            }
        }
    }

    pub fn delete(&mut self, key: u64) {
        for (_, sim, _) in &mut self.minis {
            sim.remove(key);
        }
    }

    /// One sampled GET (hit or miss): the interval's clock.
    pub fn count_get(&mut self) {
        self.gets += 1;
    }

    /// GETs in the interval so far, scaled to the whole stream.
    pub fn gets_estimate(&self) -> f64 {
        self.gets as f64 / self.rate
    }

    pub fn refs(&self) -> u64 {
        self.refs
    }

    /// Ends the interval: Eq. 3 over its counts, counters reset, caches resized for
    /// `next_cache_bytes`.
    pub fn end_interval(
        &mut self,
        penalty_us: f64,
        oh: &Overhead,
        cache_bytes: u64,
        next_cache_bytes: u64,
    ) -> Decision {
        self.intervals += 1;
        let candidates: Vec<PolicySpec> = self.minis.iter().map(|m| m.0).collect();
        let ks: Vec<u32> = candidates
            .iter()
            .map_while(|p| match p {
                PolicySpec::RedisLru { k } | PolicySpec::RedisLfu { k } => Some(*k as u32),
                _ => None,
            })
            .collect();
        let misses: Vec<f64> = self.minis.iter().map(|m| m.2 as f64 / self.rate).collect();
        // Only intervals with evidence move the average (a cold or tiny interval would
        // pull every K towards the same count).
        if self.keys.len() >= MIN_KEYS {
            if self.smoothed.len() != misses.len() {
                self.smoothed = misses.clone();
            } else {
                for (s, m) in self.smoothed.iter_mut().zip(&misses) {
                    *s = SMOOTHING * *s + (1.0 - SMOOTHING) * m;
                }
            }
        }
        let smoothed = if self.smoothed.len() == misses.len() {
            self.smoothed.clone()
        } else {
            misses.clone()
        };
        let oh_us: Vec<f64> = candidates.iter().map(|&p| oh.at_policy(p)).collect();
        let cost_us: Vec<f64> = misses
            .iter()
            .zip(&oh_us)
            .map(|(m, o)| m * (penalty_us + o))
            .collect();
        let nk = ks.len();
        let (mut k, fallback) = choose(
            &ks,
            &smoothed[..nk],
            penalty_us,
            &oh_us[..nk],
            self.keys.len(),
        );
        if !fallback && self.auto.is_none() {
            if self.cost_history.len() == GAIN_HISTORY {
                self.cost_history.pop_front();
            }
            self.cost_history.push_back(cost_us[..nk].to_vec());
            if let Some(r) = self.running_k {
                if r != k && !should_switch(&self.cost_history, &ks, r, k) {
                    k = r;
                }
            }
            self.running_k = Some(k);
        }
        let (policy, best, switches, streaks) = match &mut self.auto {
            Some(h) => {
                let best = crate::autopolicy::least_cost(&candidates, &cost_us);
                let p = h.decide(best, &candidates, &cost_us, self.keys.len(), self.filled);
                (p, best.unwrap_or(p), h.switches, h.streaks)
            }
            None => {
                let p = if lfu_k_set(&candidates) {
                    PolicySpec::RedisLfu { k: k as usize }
                } else {
                    PolicySpec::RedisLru { k: k as usize }
                };
                (p, p, 0, [0; crate::autopolicy::FAMILIES])
            }
        };
        let k = match policy {
            PolicySpec::RedisLru { k } | PolicySpec::RedisLfu { k } => k as u32,
            _ => k,
        };
        let mean_size = if self.refs > 0 {
            self.size_sum / self.refs as f64
        } else {
            0.0
        };
        let d = Decision {
            interval: self.intervals,
            ks,
            candidates,
            misses,
            smoothed,
            oh_us,
            cost_us,
            penalty_us,
            sampled_refs: self.refs,
            distinct_keys: self.keys.len(),
            rate: self.rate,
            cache_bytes,
            mini_bytes: self.mini_bytes,
            eq2_objects: if mean_size > 0.0 {
                (cache_bytes as f64 * self.rate / mean_size).round() as u64
            } else {
                0
            },
            k,
            fallback,
            policy,
            best,
            switches,
            filled: self.filled,
            streaks,
            ..Decision::default()
        };
        for m in &mut self.minis {
            m.2 = 0;
        }
        self.refs = 0;
        self.gets = 0;
        self.size_sum = 0.0;
        self.keys.clear();
        self.resize(next_cache_bytes);
        self.filled = self
            .minis
            .iter()
            .all(|m| m.1.used() as f64 >= FULL * m.1.capacity() as f64);
        d
    }

    fn resize(&mut self, cache_bytes: u64) {
        let mini = ((cache_bytes as f64 * self.rate).round() as u64).max(1);
        if mini == self.mini_bytes {
            return;
        }
        self.mini_bytes = mini;
        let (rate, clock) = (self.rate, self.lfu_clock);
        for (p, sim, _) in &mut self.minis {
            if !sim.set_capacity(mini) {
                *sim = augur_sim::build_miniature(*p, mini, Unit::Bytes, mini_seed(*p), rate);
                sim.set_lfu_clock(clock);
            }
        }
    }

    /// Heap bytes, roughly (for INFO).
    pub fn memory_bytes(&self) -> usize {
        self.minis.iter().map(|m| m.1.len() * 48).sum::<usize>() + self.keys.capacity() * 16
    }
}

/// Scope of a model: `None` = the whole keyspace (partitioning off).
pub type Scope = Option<TenantId>;

/// All of DLRU's state on the profiler thread.
#[derive(Default)]
pub struct Engine {
    pub on: bool,
    pub interval: u64,
    pub off_mode: bool,
    /// `maxmemory-policy auto`: the models simulate LHD too and choose the policy
    /// (crate::autopolicy); else they are DLRU's and choose K.
    pub auto_policy: bool,
    /// `lhd-samples`, LHD's candidate A.
    pub lhd_samples: usize,
    /// The store evicts by LFU (`allkeys-lfu`, `volatile-lfu`): DLRU's miniatures are
    /// LFU's ([`Dlru::new_lfu`]).
    pub lfu: bool,
    /// The server's LFU tuning and wall clock, given to every model's miniatures
    /// ([`Engine::set_lfu_clock`]).
    pub lfu_clock: LfuClock,
    pub scopes: HashMap<Scope, Dlru>,
}

impl Engine {
    /// Follows the configuration; a change of mode or a switch off drops the models, and
    /// so does a switch between LRU-family and LFU eviction (`lfu`) under DLRU.
    /// `on` = `maxmemory-samples auto` or `auto_policy` (`maxmemory-policy auto`).
    pub fn configure(
        &mut self,
        on: bool,
        interval: u64,
        mode: Partitioning,
        auto_policy: bool,
        lhd_samples: usize,
        lfu: bool,
    ) {
        let on = on || auto_policy;
        let off_mode = mode == Partitioning::Off;
        if on != self.on
            || off_mode != self.off_mode
            || auto_policy != self.auto_policy
            || (auto_policy && lhd_samples != self.lhd_samples)
            || (!auto_policy && lfu != self.lfu)
        {
            self.scopes.clear();
        }
        self.lfu = lfu;
        self.auto_policy = auto_policy;
        self.lhd_samples = lhd_samples;
        self.on = on;
        self.off_mode = off_mode;
        self.interval = interval.max(1);
    }

    /// The server's LFU tuning and wall clock, for every model's miniatures, now and as
    /// they are made.
    pub fn set_lfu_clock(&mut self, clock: LfuClock) {
        self.lfu_clock = clock;
        for d in self.scopes.values_mut() {
            d.set_lfu_clock(clock);
        }
    }

    fn scope_of(&self, t: TenantId) -> Scope {
        if self.off_mode {
            None
        } else {
            Some(t)
        }
    }

    /// The key a tenant's id has in the scope's caches (tenants share the keyspace
    /// model, so their ids are told apart).
    fn key(scope: Scope, t: TenantId, id: u64) -> u64 {
        match scope {
            None => id ^ (u64::from(t) << 56),
            Some(_) => id,
        }
    }

    /// The model of `t`'s scope, created at `rate` for `cache_bytes` if missing or at
    /// another rate.
    pub fn model_for(
        &mut self,
        t: TenantId,
        rate: f64,
        cache_bytes: impl FnOnce(Scope) -> u64,
    ) -> Option<(&mut Dlru, Scope)> {
        if !self.on {
            return None;
        }
        let scope = self.scope_of(t);
        let stale = self.scopes.get(&scope).is_some_and(|d| d.rate != rate);
        if stale {
            self.scopes.remove(&scope);
        }
        let (auto, lhd_samples, lfu) = (self.auto_policy, self.lhd_samples, self.lfu);
        let clock = self.lfu_clock;
        let d = self.scopes.entry(scope).or_insert_with(|| {
            let mut d = if auto {
                let candidates = crate::autopolicy::candidates(lhd_samples);
                Dlru::with_candidates(rate, cache_bytes(scope), &candidates, true)
            } else if lfu {
                Dlru::new_lfu(rate, cache_bytes(scope))
            } else {
                Dlru::new(rate, cache_bytes(scope))
            };
            d.set_lfu_clock(clock);
            d
        });
        Some((d, scope))
    }

    /// Feeds one reference; returns the scope if its interval is now due.
    pub fn access(
        &mut self,
        t: TenantId,
        id: u64,
        bytes: u32,
        rate: f64,
        size: impl FnOnce(Scope) -> u64,
    ) {
        if let Some((d, scope)) = self.model_for(t, rate, size) {
            if d.samples(id) {
                d.access(Self::key(scope, t, id), bytes);
            }
        }
    }

    pub fn delete(&mut self, t: TenantId, id: u64) {
        let scope = self.scope_of(t);
        if let Some(d) = self.scopes.get_mut(&scope) {
            d.delete(Self::key(scope, t, id));
        }
    }

    /// Counts one sampled GET; returns the scope if its interval is due.
    pub fn count_get(&mut self, t: TenantId, id: u64) -> Option<Scope> {
        let scope = self.scope_of(t);
        let interval = self.interval as f64;
        let d = self.scopes.get_mut(&scope)?;
        if !d.samples(id) {
            return None;
        }
        d.count_get();
        (d.gets_estimate() >= interval).then_some(scope)
    }
}

/// The full-scale cache size C of a scope: `maxmemory` for the keyspace (else the bytes
/// stored); for a tenant its cap, else its target, else its bytes now, else `maxmemory`.
pub fn cache_bytes(store: &Store, maxmemory: u64, scope: Scope) -> u64 {
    match scope {
        None if maxmemory > 0 => maxmemory,
        None => store.used_memory(),
        Some(t) => {
            let (cap, target, _) = store.tenant_limits(t);
            [cap, target, store.tenant_usage(t), maxmemory]
                .into_iter()
                .find(|&b| b > 0)
                .unwrap_or(0)
        }
    }
}

/// Installs a decision's K where it applies (see the module doc); returns whether it did.
pub fn install(store: &Store, scope: Scope, k: u32) -> bool {
    match (scope, store.partitioning()) {
        (None, Partitioning::Off) => {
            store.set_samples(k as usize);
            true
        }
        (Some(t), Partitioning::Static) => {
            let (cap, target, _) = store.tenant_limits(t);
            store.set_tenant_limits(t, cap, target, k as usize);
            true
        }
        _ => false,
    }
}

/// `maxmemory-samples N` after `auto`: the fixed K is back for the keyspace (set by
/// `install_config`) and every tenant's DLRU K is cleared, so tenants evict with the
/// global K again (under kredis the tuner's K stays: it is not DLRU's).
pub fn turned_off(shared: &crate::state::Shared, k: usize) {
    shared.store.set_samples(k);
    if shared.store.partitioning() != Partitioning::Kredis {
        for u in shared.tenants.users() {
            let (cap, target, _) = shared.store.tenant_limits(u.id);
            shared.store.set_tenant_limits(u.id, cap, target, 0);
        }
    }
    shared.profiler.dlru.lock().clear();
}

/// The `# DLRU` section of INFO.
pub fn info_section(shared: &crate::state::Shared, o: &mut String) {
    use std::fmt::Write as _;
    let cfg = shared.config.read().clone();
    let _ = write!(
        o,
        "# DLRU\r\ndlru_enabled:{}\r\nmaxmemory_policy_auto:{}\r\ndlru_interval:{}\r\nk_chooser:{}\r\nmaxmemory_samples_effective:{}\r\nmaxmemory_policy_effective:{}\r\n",
        u8::from(cfg.maxmemory_samples_auto),
        u8::from(cfg.maxmemory_policy_auto),
        cfg.dlru_interval,
        cfg.k_chooser.name(),
        shared.store.samples(),
        shared.store.policy().name()
    );
    if let Some(oh) = OVERHEAD.get() {
        let mut parts: Vec<String> = oh
            .per_k_us
            .iter()
            .map(|(k, v)| format!("k{k}={v:.4}"))
            .chain(
                oh.per_k_lfu_us
                    .iter()
                    .map(|(k, v)| format!("lfu_k{k}={v:.4}")),
            )
            .collect();
        parts.push(format!("lhd={:.4}", oh.lhd_us));
        parts.push(format!("s3fifo={:.4}", oh.s3fifo_us));
        let _ = write!(o, "dlru_overhead_us:{}\r\n", parts.join(","));
    }
    for d in shared.profiler.dlru.lock().iter() {
        let mut line = format!(
            "dlru_{}:k={},fallback={},installed={},interval={},penalty_us={:.1},sampled_refs={},distinct_keys={},rate={},cache_bytes={},mini_bytes={},eq2_objects={}",
            d.scope,
            d.k,
            u8::from(d.fallback),
            u8::from(d.installed),
            d.interval,
            d.penalty_us,
            d.sampled_refs,
            d.distinct_keys,
            d.rate,
            d.cache_bytes,
            d.mini_bytes,
            d.eq2_objects
        );
        if lfu_k_set(&d.candidates) {
            // DLRU under an LFU policy: the K set's miniatures are LFU's.
            line.push_str(",family=lfu");
        }
        for (i, k) in d.ks.iter().enumerate() {
            let _ = write!(
                line,
                ",misses_k{k}={:.0},smoothed_k{k}={:.0},oh_k{k}={:.4},cost_k{k}={:.0}",
                d.misses[i], d.smoothed[i], d.oh_us[i], d.cost_us[i]
            );
        }
        // `maxmemory-policy auto` (crate::autopolicy): LHD's figures, the interval's
        // least-cost candidate, the policy run from now on and the switches so far.
        for i in d.ks.len()..d.candidates.len() {
            let name = match d.candidates[i] {
                PolicySpec::Lhd { .. } => "lhd",
                PolicySpec::S3Fifo { .. } => "s3fifo",
                _ => continue,
            };
            let _ = write!(
                line,
                ",misses_{name}={:.0},oh_{name}={:.4},cost_{name}={:.0}",
                d.misses[i], d.oh_us[i], d.cost_us[i]
            );
        }
        if d.candidates.len() > d.ks.len() {
            let _ = write!(
                line,
                ",best={},policy={},switches={},filled={}",
                d.best,
                d.policy,
                d.switches,
                u8::from(d.filled)
            );
            for (name, streak) in crate::autopolicy::FAMILY_NAMES.iter().zip(d.streaks) {
                let _ = write!(line, ",streak_{name}={streak}");
            }
        }
        let _ = write!(o, "{line}\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KS: [u32; 5] = DLRU_KS;

    #[test]
    fn eq3_picks_the_least_miss_cost() {
        // K = 10 misses least; with p >> OH it wins.
        let m = [900.0, 800.0, 700.0, 600.0, 650.0];
        let oh = [0.1, 0.2, 0.4, 0.7, 1.0];
        assert_eq!(choose(&KS, &m, 1000.0, &oh, 10_000), (10, false));
        // Random-friendly: K = 1 misses least.
        let m = [500.0, 600.0, 700.0, 800.0, 900.0];
        assert_eq!(choose(&KS, &m, 1000.0, &oh, 10_000), (1, false));
    }

    #[test]
    fn eq3_overhead_decides_near_ties_for_the_smaller_k() {
        // 1000 vs 999 misses: 1000 x (10 + 0.1) = 10100 < 999 x (10 + 1.0) = 10989.
        let m = [1000.0, 1000.0, 1000.0, 1000.0, 999.0];
        let oh = [0.1, 0.2, 0.4, 0.7, 1.0];
        assert_eq!(choose(&KS, &m, 10.0, &oh, 10_000), (1, false));
        // With a large penalty the fewer misses win again: 999 x 1e6 < 1000 x 1e6.
        assert_eq!(choose(&KS, &m, 1e6, &oh, 10_000), (16, false));
        // Exact ties go to the smaller K.
        let m = [5.0; 5];
        assert_eq!(choose(&KS, &m, 10.0, &[0.0; 5], 10_000), (1, false));
    }

    #[test]
    fn under_256_distinct_keys_falls_back_to_5() {
        let m = [500.0, 600.0, 700.0, 800.0, 900.0];
        assert_eq!(choose(&KS, &m, 1000.0, &[0.0; 5], 255), (DEFAULT_K, true));
        assert_eq!(choose(&KS, &m, 1000.0, &[0.0; 5], 256), (1, false));
    }

    /// A loop over more keys than fit: LRU misses every time, random eviction keeps a
    /// share of the loop, so the miniatures must rank K = 1 first.
    #[test]
    fn miniatures_prefer_small_k_on_a_loop_and_large_k_on_recency() {
        let oh = Overhead::zero(&KS);
        // Rate 1: the miniature is the full cache (1000 objects of 100 bytes).
        let mut d = Dlru::new(1.0, 100_000);
        for _ in 0..20 {
            for key in 0..1300u64 {
                d.access(key, 100);
            }
        }
        let loop_d = d.end_interval(1000.0, &oh, 100_000, 100_000);
        assert!(!loop_d.fallback);
        assert!(loop_d.k <= 2, "{loop_d:?}");
        // Recency: every new key is re-read 400 new keys later (400 new and 400 re-read
        // keys in between: 800 < 1000 fit under LRU; random eviction, one victim per
        // new key, loses 1 - (1 - 1/1000)^400 = 33 % of them).
        let mut d = Dlru::new(1.0, 100_000);
        for i in 0..30_000u64 {
            d.access(1_000_000 + i, 100);
            if i >= 400 {
                d.access(1_000_000 + i - 400, 100);
            }
        }
        let rec = d.end_interval(1000.0, &oh, 100_000, 100_000);
        // Pooled K = 5 may already keep every re-read (a tie then goes to 5).
        assert!(rec.k >= 5, "{rec:?}");
        assert!(rec.misses[0] > rec.misses[4] * 1.2, "{rec:?}");
    }

    /// Under an LFU policy the K set's miniatures are Redis's pooled LFU (the simulator's
    /// `redis-lfu:K`, the store's counter code), not LRU's: on a hot set read through
    /// one-off scans the LFU miniatures keep the hot set, which LRU's lose, and each K's
    /// misses are exactly those of `redis-lfu:K` over the same references; the K chosen
    /// is the one of fewest misses.
    #[test]
    fn under_lfu_the_miniatures_are_lfu_and_k_is_their_argmin() {
        let oh = Overhead::zero(&KS);
        let refs: Vec<u64> = (0..40_000u64)
            .map(|i| {
                if i % 4 == 0 {
                    // 300 hot keys, each read again 1200 references later (the cache
                    // holds 1000 objects: LRU has evicted it by then).
                    (i / 4) % 300
                } else {
                    // Scans: each key read once.
                    1_000_000 + i
                }
            })
            .collect();
        let run = |mut d: Dlru| {
            for &key in &refs {
                d.access(key, 100);
            }
            d.end_interval(1000.0, &oh, 100_000, 100_000)
        };
        let lfu = run(Dlru::new_lfu(1.0, 100_000));
        let lru = run(Dlru::new(1.0, 100_000));
        assert!(
            lfu.candidates
                .iter()
                .all(|p| matches!(p, PolicySpec::RedisLfu { .. })),
            "{lfu:?}"
        );
        assert_eq!(lfu.ks, KS.to_vec());
        for (i, &k) in KS.iter().enumerate() {
            let spec = PolicySpec::RedisLfu { k: k as usize };
            let mut sim =
                augur_sim::build_miniature(spec, 100_000, Unit::Bytes, mini_seed(spec), 1.0);
            let misses = refs.iter().filter(|&&key| !sim.access(key, 100)).count();
            assert_eq!(lfu.misses[i], misses as f64, "K = {k}");
        }
        // K = 16: LFU misses ~the scans only (3/4 of the references), LRU loses hot keys.
        assert!(
            lfu.misses[4] < lru.misses[4] * 0.95,
            "lfu {lfu:?} lru {lru:?}"
        );
        let least = lfu.misses.iter().cloned().fold(f64::INFINITY, f64::min);
        let i = KS.iter().position(|&k| k == lfu.k).unwrap();
        assert_eq!(lfu.misses[i], least, "{lfu:?}");
        assert!(matches!(lfu.policy, PolicySpec::RedisLfu { k } if k as u32 == lfu.k));
    }

    /// The engine gives its models the server's LFU tuning and wall clock: 300 keys read
    /// 40 times each, then, 100 minutes later, another 300 read once a round among
    /// one-off keys, in miniatures of 500 objects. With `lfu-decay-time 1` the old
    /// set's counters have decayed to 0 and the new set takes their room; with 0 they
    /// hold it, and the new set misses more, at every K that compares counters.
    #[test]
    fn lfu_miniatures_decay_by_the_servers_clock_and_tuning() {
        let run = |decay_minutes: u32| {
            let mut e = Engine::default();
            e.configure(true, 1_000_000, Partitioning::Off, false, 64, true);
            let at = |minutes| LfuClock {
                log_factor: 10,
                decay_minutes,
                minutes,
            };
            e.set_lfu_clock(at(29_000_000));
            let feed = |e: &mut Engine, key: u64| e.access(0, key, 100, 1.0, |_| 50_000);
            for _ in 0..40 {
                for old in 0..300u64 {
                    feed(&mut e, old);
                }
            }
            e.set_lfu_clock(at(29_000_100));
            let mut scan = 1u64 << 40;
            for _ in 0..40 {
                for new in 1000..1300u64 {
                    feed(&mut e, new);
                }
                for _ in 0..300 {
                    feed(&mut e, scan);
                    scan += 1;
                }
            }
            let d = &e.scopes[&None];
            assert!(lfu_k_set(&d.minis.iter().map(|m| m.0).collect::<Vec<_>>()));
            d.minis.iter().map(|m| m.2).collect::<Vec<u64>>()
        };
        let (decayed, kept) = (run(1), run(0));
        // K = 1 pops the one key it sampled: random eviction, blind to counters.
        assert_eq!(KS[0], 1);
        assert_eq!(decayed[0], kept[0]);
        for (i, k) in KS.iter().enumerate().skip(1) {
            assert!(
                decayed[i] + 1000 < kept[i],
                "K = {k}: misses {} with decay, {} without",
                decayed[i],
                kept[i]
            );
        }
    }

    /// One interval that favours K = 1 (a short loop) after intervals that favour a
    /// large K (recency) does not flip K; a loop that lasts does, within two intervals.
    /// Without [`SMOOTHING`] the odd interval alone would install K <= 2.
    #[test]
    fn smoothed_misses_ride_out_one_odd_interval_and_follow_a_lasting_change() {
        let oh = Overhead::zero(&KS);
        let mut d = Dlru::new(1.0, 100_000);
        let recency = |d: &mut Dlru, base: u64| {
            for i in 0..30_000u64 {
                d.access(base + i, 100);
                if i >= 400 {
                    d.access(base + i - 400, 100);
                }
            }
        };
        let looping = |d: &mut Dlru, passes: usize| {
            for _ in 0..passes {
                for key in 0..1300u64 {
                    d.access(key, 100);
                }
            }
        };
        for r in 1..=3u64 {
            recency(&mut d, r << 32);
            let dec = d.end_interval(1000.0, &oh, 100_000, 100_000);
            assert!(dec.k >= 5, "{dec:?}");
        }
        looping(&mut d, 5);
        let odd = d.end_interval(1000.0, &oh, 100_000, 100_000);
        assert!(
            odd.misses[0] < odd.misses[4],
            "the interval favours K = 1: {odd:?}"
        );
        assert!(odd.k >= 5, "one odd interval flipped K: {odd:?}");
        let mut switched_after = None;
        for n in 1..=3 {
            looping(&mut d, 20);
            if d.end_interval(1000.0, &oh, 100_000, 100_000).k <= 2 {
                switched_after = Some(n);
                break;
            }
        }
        assert!(matches!(switched_after, Some(1 | 2)), "{switched_after:?}");
    }

    /// A K that beats the running one by a little is switched to after three intervals
    /// in a row, by a lot at once; one that wins some intervals and loses others is
    /// not, even when it won the last.
    #[test]
    fn k_switches_on_a_large_or_repeated_gain() {
        let ks = [1, 2, 16];
        let hist = |rows: &[[f64; 3]]| rows.iter().map(|r| r.to_vec()).collect::<VecDeque<_>>();
        // K = 16 4-6 % below K = 2 in every interval (cloudphysics at 30 %).
        let steady = hist(&[
            [1000.0, 1000.0, 950.0],
            [1000.0, 1000.0, 960.0],
            [1000.0, 1000.0, 940.0],
        ]);
        assert!(should_switch(&steady, &ks, 2, 16));
        assert!(!should_switch(&steady, &ks, 16, 2));
        // Two intervals are not yet enough for a small gain.
        let two = hist(&[[1000.0, 1000.0, 950.0], [1000.0, 1000.0, 960.0]]);
        assert!(!should_switch(&two, &ks, 2, 16));
        // K = 2 against K = 1: -7 %, +5 %, -9 %, +12 % (two-phase): won the last
        // interval, not consistently.
        let phases = hist(&[
            [1000.0, 1070.0, 0.0],
            [1000.0, 950.0, 0.0],
            [1000.0, 1090.0, 0.0],
            [1000.0, 880.0, 0.0],
        ]);
        assert!(!should_switch(&phases, &ks, 1, 2));
        // A loop turned recency: K = 16 40 % below K = 1 in the last interval after
        // losing by 30 % before: the smoothed gain is large, the switch immediate.
        let turned = hist(&[
            [1000.0, 1100.0, 1300.0],
            [1000.0, 1100.0, 1300.0],
            [1000.0, 900.0, 300.0],
            [1000.0, 900.0, 400.0],
        ]);
        assert!(should_switch(&turned, &ks, 1, 16));
        // A K outside the set is no evidence against switching.
        assert!(should_switch(&steady, &ks, 5, 16));
    }

    #[test]
    fn calibration_measures_every_k() {
        let oh = Overhead::calibrate(&KS);
        assert_eq!(oh.per_k_us.len(), KS.len());
        for (_, v) in &oh.per_k_us {
            assert!(v.is_finite() && *v >= 0.0 && *v < 1000.0, "{oh:?}");
        }
    }
}
