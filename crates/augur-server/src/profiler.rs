//! Online self-modelling: the per-tenant profiler and the kRedis tuner, on one thread
//! off the request path.
//!
//! - **Hand-off (kRedis §2.7, §5).** A shard that reads or writes a key in its tenant's
//!   spatial sample (`hash mod P < T`) pushes one [`Reference`] into a bounded lock-free
//!   queue ([`RefQueue`]); other keys cost one multiply and compare. A full queue drops
//!   the reference and counts it per tenant (reported by TENANT INFO): the request path
//!   never waits for the profiler.
//! - **Model.** Per tenant, variable-size KRR ([`augur_mrc::krr::Krr`]) over the sampled
//!   references, one stack per K of `tenant-k-set`, in the bytes the store charges
//!   (allocation + index share), with the exponent calibrated against Redis's pooled
//!   K-LRU, which is what the store evicts with. A reference is a GET hit, a write, or a
//!   GET miss: a miss is held in a pending table until the same tenant SETs the key
//!   (the refill), and enters the model then, with the refilled size (a cache's miss is
//!   one reference, not a GET and a SET); a miss never refilled within the cut-off enters
//!   with the tenant's mean sampled size.
//! - **CPU budget** (crate::cpu_budget, `tenant-profiler-cpu`). The model's cost is R
//!   times the request rate times ~10 µs; every 500 ms the thread compares the CPU time
//!   it spent on references with the budget and lowers (or gives back) the busiest
//!   `auto`-rate tenant's R.
//! - **Miss cost (kRedis §4.2 step 1, DLRU §3.4).** The refill delay of a pending miss
//!   is the miss's latency (a bounded table; refills after `tenant-miss-cutoff-ms` are not
//!   counted). The penalty used is the measured mean (decayed by half each interval) once
//!   there are samples, else the tenant's configured `miss-penalty`, else the default.
//! - **Partitioning (§4.1-4.2, Eq. 4-7, Alg. 3).** Every `tenant-interval` requests or
//!   `tenant-interval-ms`, whichever first: merged MRC per tenant, DP over
//!   `tenant-alloc-unit` units ([`augur_mrc::partition`]), and in `kredis` mode each
//!   tenant's target bytes and K are installed in the store. With one tenant this is
//!   choosing K for the whole memory (§6.9.1).

use crate::cpu_budget::{thread_cpu_time, CpuBudget, TenantLoad};
use crate::dlru::{self, KChooser, Scope};
use crate::state::Shared;
use augur_mrc::curve::{Curve, Point, SizeUnit};
use augur_mrc::krr::{Krr, KrrConfig, SampleAdjust};
use augur_mrc::minisim::MiniSim;
use augur_mrc::partition::{self, MergedMrc, Objective, TenantDemand};
use augur_mrc::MrcModel;
use augur_store::{Partitioning, RefKind, Reference, ReferenceSink, TenantId, MAX_TENANTS};
use crossbeam_queue::SegQueue;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The profiler's sleep after a batch: it wakes at most ~200 times a second under load
/// and takes what queued meanwhile. Waking whenever a reference was waiting (every
/// ~0.1-1 ms under redis-benchmark at R = 0.01) preempted a worker or the client each
/// time on a busy two-core machine; the batch is the same work in fewer, longer runs.
const BATCH_SLEEP: Duration = Duration::from_millis(5);
/// The first sleep once the queue is empty; each further empty look doubles it up to
/// [`IDLE_SLEEP_MAX`]. A fixed 2 ms sleep made an idle server's profiler thread wake 500
/// times a second, re-reading the tenants and the configuration each time: 1.5 % of a
/// core on an idle server. With the back-off an idle profiler wakes ~50 times a second;
/// a burst after an idle spell waits at most 20 ms in the queue (its 16k slots hold
/// that up to ~800k sampled references per second).
const IDLE_SLEEP_MIN: Duration = BATCH_SLEEP;
/// See [`IDLE_SLEEP_MIN`].
const IDLE_SLEEP_MAX: Duration = Duration::from_millis(20);
/// References handled before the loop looks at the interval clock again.
const MAX_DRAIN: usize = 1 << 12;

/// Most references the hand-off queue holds: the profiler drains it at least every
/// 20 ms, so 16k hold ~1.6 s of sampled references at 1M req/s and R = 0.01. The
/// memory follows what is queued, not this bound (see [`RefQueue`]).
const QUEUE_CAPACITY: usize = 1 << 14;
/// Most pending misses tracked at once (all tenants).
const PENDING_CAPACITY: usize = 1 << 16;
/// Intervals whose references make the forecast of the next one.
const FORECAST_INTERVALS: usize = 3;
/// Intervals kept in a tenant's history (target, K over time).
const HISTORY: usize = 64;

/// The bounded queue between the shards and the profiler thread.
///
/// A segmented queue (blocks of 31 references, allocated as it fills and freed as the
/// profiler drains it) bounded by a count, rather than a ring allocated whole: the ring's
/// 16k slots were 650 KB of every server's RSS, idle or not (~0.65 B/key of
/// `bench/memory.sh`'s 1M keys), while the queue is nearly always close to empty.
pub struct RefQueue {
    queue: SegQueue<Reference>,
    /// References pushed and not yet popped (at most [`QUEUE_CAPACITY`]).
    len: AtomicUsize,
    dropped: Box<[AtomicU64]>,
}

impl RefQueue {
    pub fn new() -> Self {
        Self {
            queue: SegQueue::new(),
            len: AtomicUsize::new(0),
            dropped: (0..MAX_TENANTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub fn dropped(&self, t: TenantId) -> u64 {
        self.dropped[t as usize].load(Relaxed)
    }

    fn pop(&self) -> Option<Reference> {
        let r = self.queue.pop();
        if r.is_some() {
            self.len.fetch_sub(1, Relaxed);
        }
        r
    }

    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

impl Default for RefQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl ReferenceSink for RefQueue {
    #[inline]
    fn record(&self, r: Reference) {
        if self.len.fetch_add(1, Relaxed) >= QUEUE_CAPACITY {
            self.len.fetch_sub(1, Relaxed);
            self.dropped[(r.tenant as usize).min(MAX_TENANTS - 1)].fetch_add(1, Relaxed);
        } else {
            self.queue.push(r);
        }
    }
}

/// What the profiler last published about a tenant (TENANT INFO / MRC, INFO, metrics).
#[derive(Debug, Clone, Default)]
pub struct TenantView {
    /// Per-K KRR curves in charged bytes, over every reference since the model started
    /// (what TENANT MRC answers and the tuner partitions with).
    pub curves: Vec<Curve>,
    /// Per-K curves of the last (up to 3) intervals' references (see `interval_curves`): the forecast.
    pub forecast: Vec<Curve>,
    /// Measured mean miss latency (µs) and the number of refills it rests on.
    pub miss_latency_us: Option<f64>,
    pub miss_latency_samples: u64,
    /// The penalty the tuner used (µs): measured, configured or default.
    pub penalty_us: f64,
    /// Accesses (GETs) per second during the last interval.
    pub access_rate: f64,
    /// Miss ratio observed during the last interval.
    pub observed_miss_ratio: Option<f64>,
    /// Miss ratio predicted for the last interval, at the memory the tenant held and the
    /// K it was evicted with, from the curve of the intervals before it (the forecast,
    /// [`FORECAST_INTERVALS`] of them; see `interval_curves`).
    pub predicted_miss_ratio: Option<f64>,
    /// Miss ratio the model gives the last interval's own references at the memory the
    /// tenant held and the K it was evicted with (the interval's curve, its stack warm
    /// from the references before). Against `observed_miss_ratio` this is the model's
    /// error alone; the forecast's error adds how much the workload changed from the
    /// intervals before (a phase the past cannot show).
    pub model_miss_ratio: Option<f64>,
    /// The tenant's working set in charged bytes, estimated from the sample: the
    /// first-seen size of every distinct sampled key, scaled by 1/R (what `augur mrc`
    /// computes over a whole trace, and the range TENANT MRC spans).
    pub working_set_bytes: f64,
    /// Distinct keys the tenant referenced since its model started, by the request
    /// path's HyperLogLog sketch (0.81 % standard error): the `D` of the model's
    /// estimator (`augur_mrc::krr::SampleAdjust::Distinct`).
    pub distinct_keys: Option<f64>,
    /// Sampled references fed to the model, and model heap bytes.
    pub sampled_references: u64,
    pub model_bytes: usize,
    /// (interval number, target, K) of the last intervals.
    pub history: VecDeque<(u64, u64, u32)>,
}

impl TenantView {
    /// The miss ratio the last intervals' curve forecasts at `bytes` with sample size
    /// `k` (the merged curve if `k` is not profiled); `None` before any interval.
    pub fn forecast_at(&self, bytes: u64, k: u32) -> Option<f64> {
        curve_at(&self.forecast, k, bytes)
    }
}

/// The profiler's published state, shared with the command handlers.
#[derive(Default)]
pub struct ProfilerState {
    pub views: Mutex<HashMap<TenantId, TenantView>>,
    pub intervals: AtomicU64,
    /// How long the last interval's work took on the profiler thread (curves, the
    /// partition, DLRU), and the longest so far, in µs: the burst a worker may wait
    /// behind when the profiler shares its core (INFO `tenant_interval_last_us`,
    /// `tenant_interval_max_us`).
    pub interval_last_us: AtomicU64,
    pub interval_max_us: AtomicU64,
    /// The last partitioning error (e.g. min-memory above maxmemory), for INFO.
    pub last_error: Mutex<Option<String>>,
    /// DLRU's last decision per scope (`maxmemory-samples auto`), for INFO.
    pub dlru: Mutex<Vec<crate::dlru::Decision>>,
    /// The share of one core the profiler thread spent handling sampled references in
    /// the last CPU budget window (f64 bits; read it with [`Self::cpu_share`]).
    pub cpu_share: AtomicU64,
}

impl ProfilerState {
    /// The share of one core the profiler spent on sampled references in its last CPU
    /// budget window (INFO `tenant_profiler_cpu`, Prometheus `profiler_cpu_share`).
    pub fn cpu_share(&self) -> f64 {
        f64::from_bits(self.cpu_share.load(Relaxed))
    }
}

/// One tenant's model and counters on the profiler thread.
struct TenantModel {
    /// Registry name the model belongs to (a reused slot starts a new model).
    name: String,
    krr: Krr,
    ks: Vec<u32>,
    rate: f64,
    fed: u64,
    fed_in_interval: u64,
    /// `fed` at the start of the CPU budget's window.
    fed_at_window: u64,
    size_sum: f64,
    size_n: u64,
    /// Distinct sampled keys and the sum of their first-seen sizes.
    seen: HashSet<u64>,
    seen_bytes: u64,
    lat_sum_us: f64,
    lat_n: u64,
    lat_mean_us: Option<f64>,
    lat_weight: f64,
    lat_total_samples: u64,
    refills: u64,
    unfilled: u64,
    /// Store counters at the interval's start: (hits, misses, writes).
    last_counts: (u64, u64, u64),
    /// The queue's drop counter for this tenant at the interval's start.
    last_dropped: u64,
    /// Access rate averaged over intervals (weights 1/2, 1/4, ...): the tuner's a_i.
    rate_ewma: Option<f64>,
    /// Cumulative curves and totals at the ends of the last [`FORECAST_INTERVALS`]
    /// intervals, oldest first.
    snapshots: VecDeque<(Vec<Curve>, f64)>,
    /// The curves of the last intervals' references only, to predict the next.
    forecast: Vec<Curve>,
    history: VecDeque<(u64, u64, u32)>,
    /// `k-chooser minisim`: miniature `redis-lru:K` caches at several sizes, fed the same
    /// sample (crate::dlru), whose per-K curves the tuner then partitions with; under
    /// `allkeys-lfu` / `volatile-lfu` they are `redis-lfu:K` (`mini_lfu`), given the
    /// server's LFU tuning and clock, since K is then LFU's sample count.
    mini: Option<MiniSim>,
    mini_lfu: bool,
}

/// Full-scale sizes of the `k-chooser minisim` curves: 16 points, geometric from
/// `max / 1024` to `max`.
fn minisim_sizes(max: u64) -> Vec<u64> {
    (0..16)
        .map(|i| (max as f64 * 1024f64.powf(i as f64 / 15.0 - 1.0)).round() as u64)
        .map(|b| b.max(1))
        .collect()
}

fn krr_config(ks: &[u32], rate: f64, adjust: SampleAdjust) -> KrrConfig {
    KrrConfig {
        ks: ks.to_vec(),
        k_exponent: Some(Krr::REDIS_K_EXPONENT),
        rate,
        unit: SizeUnit::Bytes,
        adjust,
        ..KrrConfig::default()
    }
}

impl TenantModel {
    fn new(name: String, ks: &[u32], rate: f64, adjust: SampleAdjust) -> Self {
        Self {
            name,
            krr: Krr::new(krr_config(ks, rate, adjust)),
            ks: ks.to_vec(),
            rate,
            fed: 0,
            fed_in_interval: 0,
            fed_at_window: 0,
            size_sum: 0.0,
            size_n: 0,
            seen: HashSet::new(),
            seen_bytes: 0,
            lat_sum_us: 0.0,
            lat_n: 0,
            lat_mean_us: None,
            lat_weight: 0.0,
            lat_total_samples: 0,
            refills: 0,
            unfilled: 0,
            last_counts: (0, 0, 0),
            last_dropped: 0,
            rate_ewma: None,
            snapshots: VecDeque::new(),
            forecast: Vec::new(),
            history: VecDeque::new(),
            mini: None,
            mini_lfu: false,
        }
    }

    /// The miniature caches' curves at full scale. They run at rate 1 on sizes already
    /// scaled by R (the references arrive sampled: `MiniSim`'s own filter would sample
    /// them again), so sizes scale back by 1/R.
    fn mini_curves(&self) -> Option<Vec<Curve>> {
        let mini = self.mini.as_ref()?;
        if mini.sampled_requests() == 0 {
            return None;
        }
        Some(
            mini.curves()
                .into_iter()
                .map(|c| {
                    let points = c
                        .points
                        .iter()
                        .map(|p| Point {
                            size: p.size / self.rate,
                            miss_ratio: p.miss_ratio,
                        })
                        .collect();
                    Curve::new("minisim", c.k, c.unit, points)
                })
                .collect(),
        )
    }

    fn feed(&mut self, id: u64, bytes: u32) {
        let bytes = bytes.max(1);
        if self.seen.insert(id) {
            self.seen_bytes += u64::from(bytes);
        }
        self.krr.access(id, bytes);
        if let Some(mini) = &mut self.mini {
            mini.access(id, bytes);
        }
        self.fed += 1;
        self.fed_in_interval += 1;
        self.size_sum += bytes as f64;
        self.size_n += 1;
    }

    fn mean_size(&self) -> u32 {
        if self.size_n == 0 {
            64
        } else {
            (self.size_sum / self.size_n as f64).round() as u32
        }
    }
}

/// The profiler thread's state.
pub struct Profiler {
    shared: Arc<Shared>,
    queue: Arc<RefQueue>,
    models: HashMap<TenantId, TenantModel>,
    pending: HashMap<(TenantId, u64), Instant>,
    last_interval: Instant,
    last_commands: u64,
    /// The registry and configuration as of the last batch (refreshed between batches,
    /// not read under locks for every reference): each tenant's name and sample rate,
    /// the K set and the miss cut-off.
    tenant_meta: HashMap<TenantId, (String, f64)>,
    ks: Vec<u32>,
    /// `tenant-sample-adjust`: the estimator of every model (a change restarts them).
    adjust: SampleAdjust,
    cutoff: Duration,
    /// DLRU (`maxmemory-samples auto`) and the `k-chooser` in use.
    dlru: dlru::Engine,
    chooser: KChooser,
    /// `tenant-profiler-cpu`: caps on tenants' rates while the thread is over budget.
    budget: CpuBudget,
}

impl Profiler {
    pub fn new(shared: Arc<Shared>, queue: Arc<RefQueue>) -> Self {
        let last_commands = shared.counters.total_commands_processed.load();
        Self {
            shared,
            queue,
            models: HashMap::new(),
            pending: HashMap::new(),
            last_interval: Instant::now(),
            last_commands,
            tenant_meta: HashMap::new(),
            ks: Vec::new(),
            adjust: SampleAdjust::default(),
            cutoff: Duration::ZERO,
            dlru: dlru::Engine::default(),
            chooser: KChooser::Krr,
            budget: CpuBudget::default(),
        }
        .refreshed()
    }

    fn refreshed(mut self) -> Self {
        self.refresh();
        self
    }

    /// Re-reads the tenants and the configuration the per-reference path uses.
    fn refresh(&mut self) {
        let cfg = self.shared.config.read();
        self.ks = cfg.tenant_k_set.clone();
        self.adjust = cfg.tenant_sample_adjust;
        self.cutoff = Duration::from_millis(cfg.tenant_miss_cutoff_ms);
        self.chooser = cfg.k_chooser;
        let (auto, dlru_interval) = (cfg.maxmemory_samples_auto, cfg.dlru_interval);
        let (auto_policy, lhd_samples) = (cfg.maxmemory_policy_auto, cfg.lhd_samples);
        let (lfu_log_factor, lfu_decay_time) = (cfg.lfu_log_factor, cfg.lfu_decay_time);
        drop(cfg);
        let lfu = self.shared.store.policy().is_lfu();
        self.dlru.configure(
            auto,
            dlru_interval,
            self.shared.store.partitioning(),
            auto_policy,
            lhd_samples,
            lfu,
        );
        // LFU miniatures decay by idle minutes of the wall clock, as the store's
        // counters do (a reference reaches this thread within milliseconds).
        // The `k-chooser minisim` miniatures too (`model`).
        let clock = augur_sim::lfu::LfuClock {
            log_factor: lfu_log_factor,
            decay_minutes: lfu_decay_time,
            minutes: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() / 60),
        };
        if clock != self.dlru.lfu_clock {
            self.dlru.set_lfu_clock(clock);
            for mini in self.models.values_mut().filter_map(|m| m.mini.as_mut()) {
                mini.set_lfu_clock(clock);
            }
        }
        if auto || auto_policy {
            // Starts the measurement once per process, when auto is first on.
            let _ = dlru::overhead();
        }
        // The model samples at the rate the store filters with (one source of truth:
        // the tenant's threshold in the store).
        let store = &self.shared.store;
        self.tenant_meta = self
            .shared
            .tenants
            .users()
            .into_iter()
            .map(|u| {
                (
                    u.id,
                    (
                        u.name,
                        store.tenant_sample_rate(u.id).max(f64::MIN_POSITIVE),
                    ),
                )
            })
            .collect();
        // A model is of one user at one rate over one K set: when any of them changed,
        // the next reference starts a new one.
        let (meta, ks, adjust) = (&self.tenant_meta, &self.ks, self.adjust);
        // A restart (a new rate, K set or estimator for the same tenant) models the
        // references from now on, so its model starts now rather than at its first
        // sampled reference: the tenant's counts so far would add its whole history to
        // the first interval's N, and the keys its distinct sketch holds are not the new
        // model's (a tenant's first model, made at its first sampled reference, covers
        // the tenant's whole stream, as its counts and its sketch do).
        let mut restarted = Vec::new();
        self.models.retain(|t, m| {
            let Some((name, rate)) = meta.get(t) else {
                return false;
            };
            let keep = m.name == *name
                && m.rate == *rate
                && m.ks == *ks
                && m.krr.config().adjust == adjust;
            if !keep && m.name == *name {
                restarted.push((*t, TenantModel::new(name.clone(), ks, *rate, adjust)));
            }
            keep
        });
        if restarted.is_empty() {
            return;
        }
        let stats = store.tenant_stats();
        for (t, mut m) in restarted {
            let st = stats.get(t as usize).cloned().unwrap_or_default();
            m.last_counts = (st.hits, st.misses, st.writes);
            if let Some(sketch) = store.tenant_distinct(t) {
                sketch.clear();
            }
            self.models.insert(t, m);
        }
    }

    /// Runs until the server shuts down.
    pub fn run(mut self) {
        let mut last_sweep = Instant::now();
        let mut idle_sleep = IDLE_SLEEP_MIN;
        while !self.shared.shutdown_requested.load(Relaxed) {
            self.refresh();
            let mut drained = 0usize;
            // The thread's CPU clock is a system call: read it only around real work.
            let batch_cpu = (!self.queue.is_empty()).then(thread_cpu_time);
            while let Some(r) = self.queue.pop() {
                self.handle(r);
                drained += 1;
                // Back to the interval clock every few thousand references, so a
                // profiler that is behind still ends intervals on time.
                if drained >= MAX_DRAIN {
                    break;
                }
            }
            if let Some(start) = batch_cpu {
                self.budget
                    .add_work(thread_cpu_time().saturating_sub(start));
            }
            if last_sweep.elapsed() >= Duration::from_millis(50) {
                self.sweep_pending(Instant::now());
                last_sweep = Instant::now();
            }
            if self.interval_due() {
                self.run_interval();
            }
            if let Some(share) = self.budget.window_end(Instant::now()) {
                self.budget_step(share);
            }
            if drained == 0 {
                std::thread::sleep(idle_sleep);
                idle_sleep = (idle_sleep * 2).min(IDLE_SLEEP_MAX);
            } else {
                idle_sleep = IDLE_SLEEP_MIN;
                if drained < MAX_DRAIN {
                    std::thread::sleep(BATCH_SLEEP);
                }
            }
        }
    }

    /// The model of tenant `t` (created on its first reference; `refresh` drops a model
    /// whose slot's user, rate or K set changed).
    fn model(&mut self, t: TenantId) -> Option<&mut TenantModel> {
        let (name, rate) = self.tenant_meta.get(&t)?;
        let (ks, adjust) = (&self.ks, self.adjust);
        let m = self
            .models
            .entry(t)
            .or_insert_with(|| TenantModel::new(name.clone(), ks, *rate, adjust));
        let store = &self.shared.store;
        let lfu = store.policy().is_lfu();
        match self.chooser {
            KChooser::Krr => m.mini = None,
            KChooser::Minisim if m.mini.is_none() || m.mini_lfu != lfu => {
                let (cap, _, _) = store.tenant_limits(t);
                let max = if cap > 0 { cap } else { store.maxmemory() };
                if max > 0 {
                    let sizes: Vec<u64> = minisim_sizes(max)
                        .into_iter()
                        .map(|b| ((b as f64 * m.rate).round() as u64).max(1))
                        .collect();
                    let mut mini = MiniSim::new(1.0, SizeUnit::Bytes, &sizes).with_adjust(false);
                    for &k in &m.ks {
                        let k = k as usize;
                        mini.add_spec(
                            if lfu {
                                augur_sim::PolicySpec::RedisLfu { k }
                            } else {
                                augur_sim::PolicySpec::RedisLru { k }
                            },
                            7,
                        );
                    }
                    mini.set_lfu_clock(self.dlru.lfu_clock);
                    m.mini = Some(mini);
                    m.mini_lfu = lfu;
                }
            }
            KChooser::Minisim => {}
        }
        Some(m)
    }

    /// Feeds DLRU's miniature caches (after the tenant's model took the reference).
    fn dlru_feed(&mut self, t: TenantId, id: u64, bytes: u32) {
        if !self.dlru.on {
            return;
        }
        let rate = if self.dlru.off_mode {
            // One keyspace model: every tenant's references at the lowest rate (the
            // store's filter is a threshold, so a key sampled at that rate is sampled
            // at every higher one).
            self.tenant_meta
                .values()
                .map(|m| m.1)
                .filter(|&r| r >= 1.0 / (1u64 << 24) as f64)
                .fold(f64::INFINITY, f64::min)
        } else {
            match self.tenant_meta.get(&t) {
                Some(m) => m.1,
                None => return,
            }
        };
        if !rate.is_finite() || rate < 1.0 / (1u64 << 24) as f64 {
            return;
        }
        let store = &self.shared.store;
        let maxmemory = store.maxmemory();
        self.dlru.access(t, id, bytes, rate, |scope| {
            dlru::cache_bytes(store, maxmemory, scope)
        });
    }

    /// A sampled GET: DLRU's interval clock.
    fn dlru_get(&mut self, t: TenantId, id: u64) {
        if !self.dlru.on {
            return;
        }
        if let Some(scope) = self.dlru.count_get(t, id) {
            self.dlru_decide(scope);
        }
    }

    /// Ends `scope`'s DLRU interval: Eq. 3, install, publish (crate::dlru).
    fn dlru_decide(&mut self, scope: Scope) {
        let default_penalty = self.shared.config.read().tenant_default_miss_penalty_us;
        let (penalty_us, name) = match scope {
            Some(t) => {
                let user = self.shared.tenants.users().into_iter().find(|u| u.id == t);
                let configured = user.as_ref().and_then(|u| u.settings.miss_penalty_us);
                let measured = self.models.get(&t).and_then(|m| {
                    if m.lat_n > 0 {
                        Some(m.lat_sum_us / m.lat_n as f64)
                    } else {
                        m.lat_mean_us
                    }
                });
                (
                    measured.or(configured).unwrap_or(default_penalty),
                    format!("tenant_{}", user.map_or_else(|| t.to_string(), |u| u.name)),
                )
            }
            None => {
                // Every tenant's measured latency, weighted by its refills.
                let (mut sum, mut n) = (0.0, 0.0);
                for m in self.models.values() {
                    if m.lat_n > 0 {
                        sum += m.lat_sum_us;
                        n += m.lat_n as f64;
                    } else if let Some(l) = m.lat_mean_us {
                        sum += l * m.lat_weight;
                        n += m.lat_weight;
                    }
                }
                (
                    if n > 0.0 { sum / n } else { default_penalty },
                    "keyspace".to_string(),
                )
            }
        };
        let store = &self.shared.store;
        let c = dlru::cache_bytes(store, store.maxmemory(), scope);
        let zero = dlru::Overhead::zero(&dlru::DLRU_KS);
        let oh = dlru::overhead().unwrap_or(&zero);
        let Some(d) = self.dlru.scopes.get_mut(&scope) else {
            return;
        };
        let mut dec = d.end_interval(penalty_us, oh, c, c);
        dec.scope = name;
        // Re-read: CONFIG SET maxmemory-samples N (or maxmemory-policy P) may have
        // turned auto off meanwhile.
        let (samples_auto, policy_auto) = {
            let cfg = self.shared.config.read();
            (cfg.maxmemory_samples_auto, cfg.maxmemory_policy_auto)
        };
        if policy_auto && d.is_auto() {
            dec.installed = crate::autopolicy::install(store, scope, dec.policy);
        } else if samples_auto && !d.is_auto() {
            dec.installed = dlru::install(store, scope, dec.k);
        }
        let mut views = self.shared.profiler.dlru.lock();
        views.retain(|v| v.scope != dec.scope);
        views.push(dec);
    }

    /// One sampled reference.
    pub fn handle(&mut self, r: Reference) {
        let cutoff = self.cutoff;
        match r.kind {
            RefKind::Hit => {
                if let Some(m) = self.model(r.tenant) {
                    m.feed(r.id, r.bytes);
                    self.dlru_feed(r.tenant, r.id, r.bytes);
                }
                self.dlru_get(r.tenant, r.id);
            }
            RefKind::Miss => {
                if self.pending.len() >= PENDING_CAPACITY {
                    self.sweep_pending(r.at);
                }
                if self.pending.len() < PENDING_CAPACITY {
                    if let Some(old) = self.pending.insert((r.tenant, r.id), r.at) {
                        // A second miss before any refill: the first was a reference.
                        let _ = old;
                        if let Some(m) = self.model(r.tenant) {
                            let s = m.mean_size();
                            m.unfilled += 1;
                            m.feed(r.id, s);
                            self.dlru_feed(r.tenant, r.id, s);
                        }
                    }
                } else if let Some(m) = self.model(r.tenant) {
                    let s = m.mean_size();
                    m.feed(r.id, s);
                    self.dlru_feed(r.tenant, r.id, s);
                }
                self.dlru_get(r.tenant, r.id);
            }
            RefKind::Write => {
                let missed_at = self.pending.remove(&(r.tenant, r.id));
                if let Some(m) = self.model(r.tenant) {
                    if let Some(at) = missed_at {
                        let d = r.at.saturating_duration_since(at);
                        if d <= cutoff {
                            m.lat_sum_us += d.as_secs_f64() * 1e6;
                            m.lat_n += 1;
                            m.lat_total_samples += 1;
                        }
                        m.refills += 1;
                    }
                    m.feed(r.id, r.bytes);
                    self.dlru_feed(r.tenant, r.id, r.bytes);
                }
            }
            RefKind::Delete => {
                self.pending.remove(&(r.tenant, r.id));
                if let Some(m) = self.model(r.tenant) {
                    m.krr.delete(r.id);
                    if let Some(mini) = &mut m.mini {
                        mini.delete(r.id);
                    }
                }
                self.dlru.delete(r.tenant, r.id);
            }
        }
    }

    /// Misses not refilled within the cut-off enter the model as references of the
    /// tenant's mean size.
    fn sweep_pending(&mut self, now: Instant) {
        let cutoff = self.cutoff;
        let expired: Vec<(TenantId, u64)> = self
            .pending
            .iter()
            .filter(|(_, &at)| now.saturating_duration_since(at) > cutoff)
            .map(|(&k, _)| k)
            .collect();
        for (t, id) in expired {
            self.pending.remove(&(t, id));
            if let Some(m) = self.model(t) {
                let s = m.mean_size();
                m.unfilled += 1;
                m.feed(id, s);
                self.dlru_feed(t, id, s);
            }
        }
    }

    /// The end of a CPU budget window (crate::cpu_budget): lowers or restores one
    /// tenant's rate if the thread was over (or well under) `tenant-profiler-cpu`.
    fn budget_step(&mut self, share: f64) {
        self.shared
            .profiler
            .cpu_share
            .store(share.to_bits(), Relaxed);
        let (auto, small_rate, budget) = {
            let cfg = self.shared.config.read();
            (
                cfg.tenant_sample_rate_auto,
                cfg.tenant_sample_rate,
                cfg.tenant_profiler_cpu / 100.0,
            )
        };
        if !auto || budget <= 0.0 {
            self.budget.clear();
            return;
        }
        let users = self.shared.tenants.users();
        let alive: HashSet<TenantId> = users.iter().map(|u| u.id).collect();
        self.budget.retain(|t| alive.contains(&t));
        let stats = self.shared.store.tenant_stats();
        let mut loads = Vec::new();
        for u in users.iter().filter(|u| u.settings.sample_rate.is_none()) {
            let rate = self.shared.store.tenant_sample_rate(u.id);
            if rate <= 0.0 {
                continue;
            }
            let keys = stats.get(u.id as usize).map_or(0, |s| s.keys);
            let references = self.models.get_mut(&u.id).map_or(0, |m| {
                let n = m.fed - m.fed_at_window;
                m.fed_at_window = m.fed;
                n
            });
            loads.push(TenantLoad {
                id: u.id,
                rate,
                section5_rate: section5_rate(keys, rate, small_rate),
                references,
            });
        }
        if let Some((t, rate)) = self.budget.decide(share, budget, &loads) {
            tracing::info!(
                tenant = t,
                rate,
                cpu_share = share,
                "profiler CPU budget: tenant sample rate changed (its model restarts)"
            );
            // A new rate is a new sample: the model restarts (see `refresh`).
            self.shared.store.set_tenant_sample_rate(t, rate);
            self.refresh();
        }
    }

    fn interval_due(&self) -> bool {
        let cfg = self.shared.config.read();
        let cmds = self.shared.counters.total_commands_processed.load();
        cmds.saturating_sub(self.last_commands) >= cfg.tenant_interval
            || (cfg.tenant_interval_ms > 0
                && self.last_interval.elapsed() >= Duration::from_millis(cfg.tenant_interval_ms))
    }

    /// End of an interval: refresh every tenant's view and, in `kredis` mode, partition
    /// memory and install targets and K.
    pub fn run_interval(&mut self) {
        let began = Instant::now();
        self.run_interval_work();
        let us = began.elapsed().as_micros() as u64;
        let state = &self.shared.profiler;
        state.interval_last_us.store(us, Relaxed);
        state.interval_max_us.fetch_max(us, Relaxed);
    }

    fn run_interval_work(&mut self) {
        // The interval ends at once with what the model has: draining the queue first
        // could take seconds when the profiler is behind (and forever under load).
        self.refresh();
        let secs = self.last_interval.elapsed().as_secs_f64().max(1e-3);
        self.last_interval = Instant::now();
        self.last_commands = self.shared.counters.total_commands_processed.load();
        // Counted once the views are published, so a reader that sees the count move
        // reads this interval's figures.
        let interval_no = self.shared.profiler.intervals.load(Relaxed) + 1;
        let cfg = self.shared.config.read().clone();
        let users = self.shared.tenants.users();
        let stats = self.shared.store.tenant_stats();
        if cfg.tenant_sample_rate_auto {
            for u in users.iter().filter(|u| u.settings.sample_rate.is_none()) {
                let keys = stats.get(u.id as usize).map_or(0, |s| s.keys);
                let now = self.shared.store.tenant_sample_rate(u.id);
                let cap = self.budget.cap(u.id);
                if let Some(rate) = auto_sample_rate(keys, now, cfg.tenant_sample_rate, cap) {
                    // A new rate is a new sample: the model restarts (see `refresh`).
                    self.shared.store.set_tenant_sample_rate(u.id, rate);
                }
            }
            self.refresh();
        }

        struct Row {
            id: TenantId,
            view: TenantView,
            /// The K the tenant ran with this interval.
            k_used: u32,
        }
        let mut rows: Vec<Row> = Vec::new();
        // `rows[i]`'s demand (kept apart: the partition takes them as a slice, and a
        // copy of every tenant's curves, ~250k points each at R = 0.2, cost ~2 ms each).
        let mut demands: Vec<TenantDemand> = Vec::new();
        for u in &users {
            let st = stats.get(u.id as usize).cloned().unwrap_or_default();
            // The K this interval was evicted with: the tuner's, else the global one.
            let k_used = self.shared.store.tenant_samples(u.id) as u32;
            let dropped_total = self.shared.ref_queue.dropped(u.id);
            // The tenant's distinct keys (its sketch is cleared only where its model
            // restarts, in `refresh`, not by `model` below).
            let distinct = self
                .shared
                .store
                .tenant_distinct(u.id)
                .map(|s| s.estimate());
            let Some(m) = self.model(u.id) else { continue };
            let dropped = dropped_total.saturating_sub(m.last_dropped);
            m.last_dropped = dropped_total;
            let (h0, m0, w0) = m.last_counts;
            let (dh, dm, dw) = (
                st.hits.saturating_sub(h0),
                st.misses.saturating_sub(m0),
                st.writes.saturating_sub(w0),
            );
            m.last_counts = (st.hits, st.misses, st.writes);
            // References this interval, as the profiler counts them (hit, write, or a
            // miss never refilled), so SHARDS-adj divides by the right total; the
            // unrefilled share of misses is estimated from the sampled ones.
            let unfilled_share = if m.refills + m.unfilled > 0 {
                m.unfilled as f64 / (m.refills + m.unfilled) as f64
            } else {
                0.0
            };
            let refs = dh + dw + (dm as f64 * unfilled_share).round() as u64;
            // References dropped on a full queue were sampled but never modelled: the
            // stream the model saw is the fed share of the sampled one, so it stands
            // for that share of the interval's references.
            let fed = m.fed_in_interval;
            let seen = if dropped > 0 && fed > 0 {
                (refs as f64 * fed as f64 / (fed + dropped) as f64).round() as u64
            } else {
                refs
            };
            m.krr.add_unsampled_references(seen.saturating_sub(fed));
            if let Some(d) = distinct {
                m.krr.set_distinct_keys(d);
            }
            m.fed_in_interval = 0;
            // Miss latency: the interval's mean, folded into a mean that halves the
            // weight of older intervals.
            if m.lat_n > 0 {
                let mean = m.lat_sum_us / m.lat_n as f64;
                let w = m.lat_n as f64;
                m.lat_mean_us = Some(match m.lat_mean_us {
                    Some(old) => (old * m.lat_weight * 0.5 + mean * w) / (m.lat_weight * 0.5 + w),
                    None => mean,
                });
                m.lat_weight = m.lat_weight * 0.5 + w;
                m.lat_sum_us = 0.0;
                m.lat_n = 0;
            }
            let penalty_us = m
                .lat_mean_us
                .or(u.settings.miss_penalty_us)
                .unwrap_or(cfg.tenant_default_miss_penalty_us);
            let curves = if m.fed > 0 {
                m.krr.curves()
            } else {
                Vec::new()
            };
            // What windows of references are drawn from (`Krr::window_curves`: the
            // cumulative curves, or their part that differences exactly).
            let window = if m.fed > 0 {
                m.krr.window_curves().unwrap_or_else(|| curves.clone())
            } else {
                Vec::new()
            };
            let observed = (dh + dm > 0).then(|| dm as f64 / (dh + dm) as f64);
            let predicted = curve_at(&m.forecast, k_used, st.used_bytes);
            let (references, sampled) = m.krr.counts();
            let total = if m.rate < 1.0 {
                references as f64 * m.rate
            } else {
                sampled as f64
            };
            // The interval's own curve at what the tenant held (the model, not a forecast).
            let model = curve_at(
                &interval_curves(&window, total, m.snapshots.back()),
                k_used,
                st.used_bytes,
            );
            // The forecast is the curve of the last few intervals' references: one
            // interval alone swings with the trace's phases (arc_oltp alternates between
            // .17 and .24 from one 6-s interval to the next), the whole history carries
            // the warm-up's cold misses.
            m.forecast = interval_curves(&window, total, m.snapshots.front());
            m.snapshots.push_back((window, total));
            if m.snapshots.len() > FORECAST_INTERVALS {
                m.snapshots.pop_front();
            }
            let merged = if curves.is_empty() {
                None
            } else {
                MergedMrc::new(&curves).ok()
            };
            let access_rate = (dh + dm) as f64 / secs;
            // The tuner weighs tenants by a rate that halves its memory each interval,
            // so a tenant idle for one interval keeps part of its weight (and its
            // memory) instead of dropping to nothing.
            let tuning_rate = match m.rate_ewma {
                Some(old) => 0.5 * old + 0.5 * access_rate,
                None => access_rate,
            };
            m.rate_ewma = Some(tuning_rate);
            // `k-chooser minisim`: the miniature caches' per-K curves instead of KRR's.
            let merged = match (cfg.k_chooser, m.mini_curves()) {
                (KChooser::Minisim, Some(mc)) => MergedMrc::new(&mc).ok().or(merged),
                _ => merged,
            };
            let demand = TenantDemand {
                mrc: merged.unwrap_or_else(|| flat_mrc(cfg.tenant_k_set[0])),
                access_rate: if curves.is_empty() { 0.0 } else { tuning_rate },
                miss_penalty: penalty_us,
                min_bytes: u.settings.min_memory,
                max_bytes: (u.settings.maxmemory > 0).then_some(u.settings.maxmemory),
            };
            let view = TenantView {
                curves,
                forecast: m.forecast.clone(),
                miss_latency_us: m.lat_mean_us,
                miss_latency_samples: m.lat_total_samples,
                penalty_us,
                access_rate,
                observed_miss_ratio: observed,
                predicted_miss_ratio: predicted,
                model_miss_ratio: model,
                working_set_bytes: m.seen_bytes as f64 / m.rate,
                distinct_keys: m.krr.distinct_keys(),
                sampled_references: m.fed,
                model_bytes: m.krr.memory_bytes() + m.seen.capacity() * 16,
                history: m.history.clone(),
            };
            rows.push(Row {
                id: u.id,
                view,
                k_used,
            });
            demands.push(demand);
        }

        let kredis = self.shared.store.partitioning() == Partitioning::Kredis;
        if kredis && cfg.maxmemory > 0 && !rows.is_empty() {
            let objective = match cfg.tenant_objective {
                crate::config::TenantObjective::Latency => Objective::Latency,
                crate::config::TenantObjective::Hits => Objective::Hits,
                crate::config::TenantObjective::MeanLatency => {
                    // Every active tenant weighs the same: Σ mMRC_i(C_i)·p_i.
                    for d in &mut demands {
                        if d.access_rate > 0.0 {
                            d.access_rate = 1.0;
                        }
                    }
                    Objective::Latency
                }
            };
            match partition::partition(&demands, cfg.maxmemory, cfg.tenant_alloc_unit, objective) {
                Ok(alloc) => {
                    *self.shared.profiler.last_error.lock() = None;
                    for (i, row) in rows.iter_mut().enumerate() {
                        let target = alloc.bytes[i];
                        // The partition's K is the argmin at the target; one within
                        // the margin of it that runs now keeps running.
                        let demand = &demands[i];
                        let k = demand
                            .mrc
                            .k_to_run(target, row.k_used, cfg.tenant_k_switch_margin);
                        debug_assert!(k == alloc.k[i] || k == row.k_used);
                        let cap = demand.max_bytes.unwrap_or(0);
                        self.shared
                            .store
                            .set_tenant_limits(row.id, cap, target, k as usize);
                        if let Some(m) = self.models.get_mut(&row.id) {
                            m.history.push_back((interval_no, target, k));
                            if m.history.len() > HISTORY {
                                m.history.pop_front();
                            }
                            row.view.history = m.history.clone();
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!("tenant partitioning failed: {e}");
                    *self.shared.profiler.last_error.lock() = Some(e.to_string());
                }
            }
        }
        // The profiler's interval also ends DLRU's (whichever ends first).
        let due: Vec<Scope> = self
            .dlru
            .scopes
            .iter()
            .filter(|(_, d)| d.refs() > 0)
            .map(|(s, _)| *s)
            .collect();
        for scope in due {
            self.dlru_decide(scope);
        }
        let mut views = self.shared.profiler.views.lock();
        views.clear();
        for r in rows {
            views.insert(r.id, r.view);
        }
        drop(views);
        self.shared.profiler.intervals.store(interval_no, Relaxed);
    }
}

/// The miss ratio at `bytes` of the curve of sample size `k` among `curves`, or of their
/// merged curve if `k` is not among them; `None` for no curves.
fn curve_at(curves: &[Curve], k: u32, bytes: u64) -> Option<f64> {
    curves
        .iter()
        .find(|c| c.k == Some(k))
        .map(|c| c.miss_ratio_at(bytes as f64))
        .or_else(|| MergedMrc::new(curves).ok().map(|m| m.miss_ratio(bytes)))
}

/// The curves of one interval's references alone, from the cumulative curves at its end
/// (`total` references) and at its start: a curve is misses / references at every size,
/// so the interval's is `(mr_end(c) T_end - mr_start(c) T_start) / (T_end - T_start)`.
/// The cumulative curve carries every cold miss since the tenant started and lags a
/// changing workload; the last interval's own curve is the better forecast of the next.
fn interval_curves(end: &[Curve], total: f64, start: Option<&(Vec<Curve>, f64)>) -> Vec<Curve> {
    let Some((start_curves, start_total)) = start else {
        return end.to_vec();
    };
    let n = total - start_total;
    if n < 1.0 {
        return end.to_vec();
    }
    end.iter()
        .map(|c| {
            // The points come in increasing size: one pass over the start curve.
            let mut before = start_curves.iter().find(|s| s.k == c.k).map(Curve::cursor);
            let points = c
                .points
                .iter()
                .map(|p| {
                    let misses_before = before.as_mut().map_or(0.0, |b| b.at(p.size) * start_total);
                    Point {
                        size: p.size,
                        miss_ratio: ((p.miss_ratio * total - misses_before) / n).clamp(0.0, 1.0),
                    }
                })
                .collect();
            Curve::new(c.model.clone(), c.k, c.unit, points)
        })
        .collect()
}

/// Keys above which `tenant-sample-rate auto` samples at [`BIG_TENANT_RATE`] (kRedis §5:
/// "0.001 ... 0.01 for tenants with fewer than about 8M keys").
pub const BIG_TENANT_KEYS: u64 = 8_000_000;
/// Keys below which a big tenant goes back to the small-tenant rate (hysteresis, so a
/// tenant near 8M keys does not restart its model every interval).
pub const SMALL_AGAIN_KEYS: u64 = 6_000_000;
pub const BIG_TENANT_RATE: f64 = 0.001;

/// The rate kRedis §5's rule gives a tenant with `keys` keys sampled at `now`:
/// [`BIG_TENANT_RATE`] at [`BIG_TENANT_KEYS`] and above (and down to
/// [`SMALL_AGAIN_KEYS`] once there), else `small_rate`.
pub fn section5_rate(keys: u64, now: f64, small_rate: f64) -> f64 {
    let is_big =
        augur_store::sample_threshold(now) == augur_store::sample_threshold(BIG_TENANT_RATE);
    if keys >= BIG_TENANT_KEYS || (is_big && keys >= SMALL_AGAIN_KEYS) {
        BIG_TENANT_RATE
    } else {
        small_rate
    }
}

/// The rate `auto` moves a tenant with `keys` keys to, if it should move from `now`:
/// §5's rule ([`section5_rate`]) under the CPU budget's `cap` (1 for none).
pub fn auto_sample_rate(keys: u64, now: f64, small_rate: f64, cap: f64) -> Option<f64> {
    let want = section5_rate(keys, now, small_rate).min(cap);
    let same = augur_store::sample_threshold(want) == augur_store::sample_threshold(now);
    (!same && now > 0.0).then_some(want)
}

/// A curve that predicts a miss for every size: what a tenant with no sampled
/// references yet asks for (nothing beyond its minimum).
fn flat_mrc(k: u32) -> MergedMrc {
    let c = Curve::new(
        "krr",
        Some(k),
        SizeUnit::Bytes,
        vec![Point {
            size: 1.0,
            miss_ratio: 1.0,
        }],
    );
    MergedMrc::new(&[c]).expect("one curve with K in bytes")
}

/// Starts the profiler thread and connects the store to its queue.
pub fn start(shared: Arc<Shared>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let queue = shared.ref_queue.clone();
    shared.store.set_reference_sink(queue.clone());
    std::thread::Builder::new()
        .name("augur-profiler".into())
        .spawn(move || Profiler::new(shared, queue).run())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rate_follows_section_5_with_hysteresis() {
        assert_eq!(auto_sample_rate(1000, 0.01, 0.01, 1.0), None);
        assert_eq!(auto_sample_rate(9_000_000, 0.01, 0.01, 1.0), Some(0.001));
        assert_eq!(auto_sample_rate(7_000_000, 0.001, 0.01, 1.0), None);
        assert_eq!(auto_sample_rate(5_000_000, 0.001, 0.01, 1.0), Some(0.01));
        // A tenant whose profiling is off (rate 0) stays off.
        assert_eq!(auto_sample_rate(9_000_000, 0.0, 0.01, 1.0), None);
    }

    #[test]
    fn the_cpu_budgets_cap_holds_against_section_5() {
        // Capped at 0.005: §5's 0.01 does not undo the cap, and a capped rate stays.
        assert_eq!(auto_sample_rate(1000, 0.005, 0.01, 0.005), None);
        assert_eq!(auto_sample_rate(1000, 0.01, 0.01, 0.005), Some(0.005));
        // §5 below the cap wins.
        assert_eq!(auto_sample_rate(9_000_000, 0.005, 0.01, 0.005), Some(0.001));
    }
}
