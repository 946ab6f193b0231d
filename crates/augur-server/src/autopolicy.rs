//! `maxmemory-policy auto` (issue 9, item 3): per tenant (or for the shared keyspace
//! when `tenant-partitioning off`), the server picks which eviction policy to run at
//! all, by simulating the candidates in miniature. Beyond both papers; built from
//! DLRU's pieces (crate::dlru, Qiu et al. §3.2-3.5), so DLRU and auto are one
//! implementation, and `augur sim --policy auto` runs this very chooser ([`AutoSim`]).
//!
//! - **Candidates.** `redis-lru:K` for DLRU's K set {1, 2, 5, 10, 16} (the store's real
//!   `allkeys-lru` with that `maxmemory-samples`), `lhd:A` (the store's `allkeys-lhd`
//!   with `lhd-samples` A) and `s3fifo:8` (the store's `allkeys-s3fifo` with
//!   `maxmemory-samples` 8), each a miniature cache of the same simulator
//!   the server runs (`augur_sim`), fed the profiler's spatial sample at the tenant's
//!   rate R (DLRU Eq. 1's filter), sized `C R` bytes (DLRU Eq. 2 times the mean item
//!   size; [`crate::dlru::Dlru`]); LHD's miniature reconfigures `R` times as often in
//!   sampled accesses as the full model (`augur_sim::build_miniature`).
//! - **Cost.** DLRU's Eq. 3 generalised to any policy: `P = M (p + OH)`, `M` the
//!   miniature's misses in the interval scaled by 1/R, `p` the measured miss penalty,
//!   `OH` the store's eviction overhead per eviction of that policy, measured once per
//!   process on a private store ([`crate::dlru::Overhead::calibrate_policies`]).
//! - **Choice with hysteresis** ([`Hysteresis`]). Candidates fall in three families,
//!   K-LRU, LHD and S3-FIFO. Within the running family the least-cost member is taken at once
//!   (a new K costs nothing: the store only reads another `maxmemory-samples`, as
//!   DLRU does every interval). A switch of family needs another family's best to cost
//!   at least [`MARGIN`] (2 %) less than the running family's best in [`CONFIRM`] (3)
//!   consecutive intervals, counted per family (K-LRU and LHD may both beat S3-FIFO in
//!   the same intervals; each keeps its own count, and if both reach [`CONFIRM`] at once
//!   the cheaper one is taken): a family switch has a price the miniatures do not see
//!   (the store drops LHD's learned model when LRU runs, and LHD restarts from empty
//!   histograms, S3-FIFO's queues restart as one main queue), and three intervals in a
//!   row keep one or two noisy intervals of a 1 % sample from flapping the policy, at
//!   the cost of acting one interval later. Ties keep what runs. An interval is no
//!   evidence (nothing changes and every count starts over) when it has fewer than
//!   [`crate::dlru::MIN_KEYS`] (256) distinct sampled keys (DLRU falls back to K = 5 then;
//!   a policy switch on no evidence would only add one) or when the miniatures were not
//!   yet full at its start: while they fill, their misses are mostly first references,
//!   and how soon each policy starts evicting (S3-FIFO's small queue fills first) says
//!   nothing about how it evicts once full. A scope starts with [`INITIAL_POLICY`]
//!   (S3-FIFO: the lowest or near-lowest miss ratio of Augur's fixed policies on the
//!   shared traces, so the start costs least where the run is too short for the
//!   hysteresis to act).
//! - **Install** ([`install`]). Partitioning off: the store's policy and K (the shared
//!   pool is one keyspace). Otherwise: the tenant's own policy and K
//!   (`Store::set_tenant_policy`, `set_tenant_limits`), which its evictions use. The
//!   store switches live and keeps every key: LHD reads an entry last touched under
//!   LRU as a new object of the age its clock gives, LRU reads an LHD tag's clock bits
//!   (augur-store `lhd.rs`).

use crate::dlru::{Decision, Dlru, Overhead, Scope, DLRU_KS, MIN_KEYS};
use augur_sim::{CacheSim, PolicySpec, SwitchingCache, Unit};
use augur_store::{EvictionPolicy, Partitioning, Store};

/// A family switch needs the other family to cost this much less (relative).
pub const MARGIN: f64 = 0.02;
/// ... in this many consecutive intervals, counted per family (2 with two families;
/// with S3-FIFO as a third, 3). On the shared traces at 10/25/50 % of the working set
/// (`augur sim --policy auto` against Augur's fixed policies, BENCHMARKS.md "`auto`
/// counts each family's wins, and waits for full miniatures"): one streak for whichever
/// family won (reset when another family won) left 41 of 42 cells within 0.005 of the
/// best fixed policy (lirs_sprite 50 % switched too late, as K-LRU and LHD took turns
/// beating S3-FIFO); a count per family alone made a switch to LHD on arc_p3 at 25 %
/// from the first, still-filling interval (+0.025); with both, 42 of 42, and 42 of 42
/// and 56 of 56 at the held-out sizes 15/35/75 % and 5/20/40/60 %. A one-interval switch
/// on a 30 % gain (DLRU's rule) flipped the server's cloudphysics at 25 % to K-LRU and
/// back (0.659 -> 0.728 miss ratio): not kept.
pub const CONFIRM: u32 = 3;
/// What a scope runs until the miniatures show another family cheaper: S3-FIFO, whose
/// miss ratio on the shared traces is the lowest of Augur's fixed policies in 26 of 42
/// cells and within 0.006 of the lowest in most others (BENCHMARKS.md, "Miss ratio
/// table"; LHD was the start before S3-FIFO was a candidate), so that short runs, which
/// end before the hysteresis can act, lose least.
pub const INITIAL_POLICY: PolicySpec = PolicySpec::S3Fifo { k: S3FIFO_SAMPLES };

/// Main-queue samples of the S3-FIFO candidate (the store's `allkeys-s3fifo` with
/// `maxmemory-samples` 8: within 0.006 of exact queues on 38 of 42 cells of the shared
/// traces, BENCHMARKS.md "S3-FIFO in the simulator").
pub const S3FIFO_SAMPLES: usize = 8;

/// The candidates: `redis-lru:K` for each K of DLRU's set, then `lhd:A`, then
/// `s3fifo:8`.
pub fn candidates(lhd_samples: usize) -> Vec<PolicySpec> {
    DLRU_KS
        .iter()
        .map(|&k| PolicySpec::RedisLru { k: k as usize })
        .chain([
            PolicySpec::Lhd {
                k: lhd_samples.max(1),
            },
            PolicySpec::S3Fifo { k: S3FIFO_SAMPLES },
        ])
        .collect()
}

/// A number per policy (seeds the miniatures apart).
pub fn spec_code(p: PolicySpec) -> u64 {
    match p {
        PolicySpec::Lru => 1,
        PolicySpec::Fifo => 2,
        PolicySpec::Random => 3,
        PolicySpec::RedisLru { k } => 0x100 | k as u64,
        PolicySpec::KLru { k } => 0x200 | k as u64,
        PolicySpec::Lhd { k } => 0x300 | k as u64,
        PolicySpec::S3Fifo { k } => 0x400 | k as u64,
        PolicySpec::RedisLfu { k } => 0x500 | k as u64,
    }
}

/// A candidate's family: K-LRU (0), LHD (1), S3-FIFO (2) (below [`FAMILIES`]). Within a
/// family the chooser moves at once; between families only with the hysteresis.
fn family(p: PolicySpec) -> u8 {
    match p {
        PolicySpec::Lhd { .. } => 1,
        PolicySpec::S3Fifo { .. } => 2,
        _ => 0,
    }
}

/// The candidate of least cost, the earlier one on a tie (smaller K first, as DLRU §3.5
/// breaks ties; K-LRU before LHD).
pub fn least_cost(candidates: &[PolicySpec], cost: &[f64]) -> Option<PolicySpec> {
    best_where(candidates, cost, |_| true).map(|(p, _)| p)
}

fn best_where(
    candidates: &[PolicySpec],
    cost: &[f64],
    keep: impl Fn(PolicySpec) -> bool,
) -> Option<(PolicySpec, f64)> {
    let mut best: Option<(PolicySpec, f64)> = None;
    for (&p, &c) in candidates.iter().zip(cost) {
        if keep(p) && c.is_finite() && best.is_none_or(|(_, b)| c < b) {
            best = Some((p, c));
        }
    }
    best
}

/// The choice's state across intervals (see the module documentation).
#[derive(Debug, Clone)]
pub struct Hysteresis {
    /// What the scope runs now.
    pub running: PolicySpec,
    /// Per family ([`family`]), the consecutive intervals in which its best candidate
    /// cost [`MARGIN`] less than the running family's best (the running family's own
    /// count stays 0).
    pub streaks: [u32; FAMILIES],
    /// Family switches so far.
    pub switches: u64,
}

/// Candidate families: K-LRU, LHD, S3-FIFO.
pub const FAMILIES: usize = 3;
/// Their names in INFO (`streak_<name>`), in [`family`]'s order.
pub const FAMILY_NAMES: [&str; FAMILIES] = ["klru", "lhd", "s3fifo"];

impl Default for Hysteresis {
    fn default() -> Self {
        Self::starting(INITIAL_POLICY)
    }
}

impl Hysteresis {
    /// A scope that runs `p` until the chooser has evidence.
    pub fn starting(p: PolicySpec) -> Self {
        Self {
            running: p,
            streaks: [0; FAMILIES],
            switches: 0,
        }
    }

    /// One interval's decision from the candidates' costs, the interval's distinct
    /// sampled keys and whether the miniatures were full when it began; returns the
    /// policy to run from now on. `_best` is the least-cost candidate (reported in
    /// INFO; recomputed here per family).
    pub fn decide(
        &mut self,
        _best: Option<PolicySpec>,
        candidates: &[PolicySpec],
        cost: &[f64],
        keys: usize,
        filled: bool,
    ) -> PolicySpec {
        let cost_of = |p: PolicySpec| {
            candidates
                .iter()
                .position(|&c| c == p)
                .map(|i| cost[i])
                .filter(|c| c.is_finite())
        };
        let running = family(self.running);
        let same = best_where(candidates, cost, |p| family(p) == running);
        // Within the running family: its least-cost member, but the running one on a
        // tie (a cold interval, where all miss alike, changes nothing).
        let same = match (same, cost_of(self.running)) {
            (Some((_, sc)), Some(rc)) if rc <= sc => Some((self.running, rc)),
            (s, _) => s,
        };
        let next = match same {
            // No evidence (see the module documentation): keep what runs.
            _ if keys < MIN_KEYS || !filled => {
                self.streaks = [0; FAMILIES];
                self.running
            }
            Some((s, sc)) => {
                // Each other family's count goes on while it beats the running one.
                let mut confirmed: Option<(PolicySpec, f64)> = None;
                for f in 0..FAMILIES as u8 {
                    if f == running {
                        continue;
                    }
                    let streak = &mut self.streaks[usize::from(f)];
                    match best_where(candidates, cost, |p| family(p) == f) {
                        Some((o, oc)) if oc < sc * (1.0 - MARGIN) => {
                            *streak += 1;
                            if *streak >= CONFIRM && confirmed.is_none_or(|(_, c)| oc < c) {
                                confirmed = Some((o, oc));
                            }
                        }
                        _ => *streak = 0,
                    }
                }
                match confirmed {
                    Some((o, _)) => {
                        self.streaks = [0; FAMILIES];
                        o
                    }
                    None => s,
                }
            }
            None => best_where(candidates, cost, |_| true).map_or(self.running, |(o, _)| o),
        };
        if family(next) != family(self.running) {
            self.switches += 1;
        }
        self.running = next;
        next
    }
}

/// `augur sim --policy auto`: a real cache ([`SwitchingCache`]) whose policy the
/// chooser above sets every `interval` requests, from miniature caches
/// ([`crate::dlru::Dlru`]) fed the requests whose key passes the store's spatial filter
/// at rate `rate`. The cost weighs misses with `penalty_us` and zero overhead (the
/// simulator has no store to time, and p ≫ OH makes Eq. 3 rank by misses: DLRU §3.5),
/// so a run is deterministic.
pub struct AutoSim {
    cache: SwitchingCache,
    dlru: Dlru,
    unit: Unit,
    interval: u64,
    seen: u64,
    penalty_us: f64,
    overhead: Overhead,
    decisions: Vec<Decision>,
}

impl AutoSim {
    /// A cache of `capacity` in `unit` (objects: every reference counts 1 in the
    /// miniatures too).
    pub fn new(capacity: u64, unit: Unit, seed: u64, rate: f64, interval: u64) -> Self {
        Self::starting(INITIAL_POLICY, capacity, unit, seed, rate, interval)
    }

    /// [`AutoSim::new`] running `initial` until the chooser has evidence.
    pub fn starting(
        initial: PolicySpec,
        capacity: u64,
        unit: Unit,
        seed: u64,
        rate: f64,
        interval: u64,
    ) -> Self {
        let mut dlru = Dlru::with_candidates(
            rate,
            capacity,
            &candidates(augur_sim::spec::DEFAULT_LHD_SAMPLES),
            true,
        );
        dlru.start_with(initial);
        Self {
            cache: SwitchingCache::new(initial, capacity, unit, seed),
            dlru,
            unit,
            interval: interval.max(1),
            seen: 0,
            penalty_us: 1000.0,
            overhead: Overhead::zero(&DLRU_KS),
            decisions: Vec::new(),
        }
    }

    /// Every interval's decision so far.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }

    /// The policy running now.
    pub fn policy(&self) -> PolicySpec {
        self.cache.policy()
    }

    /// Family switches (K-LRU <-> LHD) the real cache made.
    pub fn switches(&self) -> u64 {
        self.decisions.last().map_or(0, |d| d.switches)
    }
}

impl CacheSim for AutoSim {
    fn access(&mut self, key: u64, size: u32) -> bool {
        if self.dlru.samples(key) {
            let bytes = match self.unit {
                Unit::Objects => 1,
                Unit::Bytes => size,
            };
            self.dlru.access(key, bytes);
        }
        let hit = self.cache.access(key, size);
        self.seen += 1;
        if self.seen >= self.interval {
            self.seen = 0;
            let c = self.cache.capacity();
            let d = self
                .dlru
                .end_interval(self.penalty_us, &self.overhead, c, c);
            self.cache.switch_to(d.policy);
            self.decisions.push(d);
        }
        hit
    }

    fn remove(&mut self, key: u64) {
        if self.dlru.samples(key) {
            self.dlru.delete(key);
        }
        self.cache.remove(key);
    }

    fn len(&self) -> usize {
        self.cache.len()
    }

    fn used(&self) -> u64 {
        self.cache.used()
    }

    fn capacity(&self) -> u64 {
        self.cache.capacity()
    }
}

/// The store's policy for a candidate.
pub fn store_policy(p: PolicySpec) -> EvictionPolicy {
    match p {
        PolicySpec::Lhd { .. } => EvictionPolicy::AllKeysLhd,
        PolicySpec::S3Fifo { .. } => EvictionPolicy::AllKeysS3Fifo,
        PolicySpec::RedisLfu { .. } => EvictionPolicy::AllKeysLfu,
        _ => EvictionPolicy::AllKeysLru,
    }
}

/// Installs `p` (policy and K) for `scope` (see the module documentation); returns
/// whether it did (not under kredis, whose tuner owns each tenant's K: there the
/// tenant's policy is installed and its K left alone).
pub fn install(store: &Store, scope: Scope, p: PolicySpec) -> bool {
    let k = match p {
        PolicySpec::RedisLru { k } | PolicySpec::S3Fifo { k } | PolicySpec::RedisLfu { k } => {
            Some(k)
        }
        _ => None,
    };
    match (scope, store.partitioning()) {
        (None, Partitioning::Off) => {
            if let Some(k) = k {
                store.set_samples(k);
            }
            store.set_policy(store_policy(p));
            true
        }
        (Some(t), mode) if mode != Partitioning::Off => {
            if let (Some(k), Partitioning::Static) = (k, mode) {
                let (cap, target, _) = store.tenant_limits(t);
                store.set_tenant_limits(t, cap, target, k);
            }
            store.set_tenant_policy(t, Some(store_policy(p)));
            true
        }
        _ => false,
    }
}

/// `maxmemory-policy` set from `auto` to a fixed policy: every tenant's own policy
/// (and its auto K, outside kredis) is cleared, so all evict by the global setting again.
pub fn turned_off(shared: &crate::state::Shared) {
    let store = &shared.store;
    for u in shared.tenants.users() {
        store.set_tenant_policy(u.id, None);
        if store.partitioning() != Partitioning::Kredis {
            let (cap, target, _) = store.tenant_limits(u.id);
            store.set_tenant_limits(u.id, cap, target, 0);
        }
    }
    shared.profiler.dlru.lock().clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c() -> Vec<PolicySpec> {
        candidates(64)
    }

    /// Costs with LRU K = 5 at `lru` and LHD at `lhd` (others worse).
    fn costs(lru: f64, lhd: f64) -> Vec<f64> {
        vec![lru * 1.5, lru * 1.2, lru, lru * 1.1, lru * 1.05, lhd]
    }

    /// `CONFIRM - 1` intervals of `cost` keep `running`; the next one switches to `to`.
    fn confirm(h: &mut Hysteresis, cost: &[f64], running: PolicySpec, to: PolicySpec) {
        for _ in 1..CONFIRM {
            assert_eq!(h.decide(None, &c(), cost, 1000, true), running);
        }
        assert_eq!(h.decide(None, &c(), cost, 1000, true), to);
    }

    #[test]
    fn family_switches_need_confirm_intervals_past_the_margin() {
        let lhd = PolicySpec::Lhd { k: 64 };
        let mut h = Hysteresis::starting(lhd);
        let k5 = PolicySpec::RedisLru { k: 5 };
        assert_eq!(Hysteresis::default().running, INITIAL_POLICY);
        // A cold interval (all miss alike) changes nothing.
        assert_eq!(h.decide(None, &c(), &[100.0; 7], 1000, true), lhd);
        // LRU better by 5 %: switch after CONFIRM intervals in a row.
        confirm(&mut h, &costs(95.0, 100.0), lhd, k5);
        assert_eq!(h.switches, 1);
        // LHD better by only 1 % (under the margin): stays, however long.
        for _ in 0..5 {
            assert_eq!(h.decide(None, &c(), &costs(100.0, 99.0), 1000, true), k5);
        }
        // An interrupted streak starts over.
        for _ in 1..CONFIRM {
            assert_eq!(h.decide(None, &c(), &costs(100.0, 90.0), 1000, true), k5);
        }
        assert_eq!(h.decide(None, &c(), &costs(100.0, 100.0), 1000, true), k5);
        confirm(&mut h, &costs(100.0, 90.0), k5, lhd);
        assert_eq!(h.switches, 2);
    }

    #[test]
    fn k_changes_within_lru_are_immediate_and_ties_keep_the_running_k() {
        let mut h = Hysteresis::starting(PolicySpec::RedisLru { k: 5 });
        let cand = c();
        // K = 1 best among LRU, LHD far worse.
        let cost = vec![50.0, 60.0, 70.0, 80.0, 90.0, 200.0];
        assert_eq!(
            h.decide(None, &cand, &cost, 1000, true),
            PolicySpec::RedisLru { k: 1 }
        );
        let cost = vec![90.0, 80.0, 70.0, 60.0, 50.0, 200.0];
        assert_eq!(
            h.decide(None, &cand, &cost, 1000, true),
            PolicySpec::RedisLru { k: 16 }
        );
        // A tie with the running K keeps it (DLRU would take the smaller K).
        let cost = vec![50.0, 50.0, 50.0, 50.0, 50.0, 200.0];
        assert_eq!(
            h.decide(None, &cand, &cost, 1000, true),
            PolicySpec::RedisLru { k: 16 }
        );
        assert_eq!(h.switches, 0);
    }

    /// Costs with LRU K = 5 at `lru`, LHD at `lhd` and S3-FIFO at `s3`.
    fn costs3(lru: f64, lhd: f64, s3: f64) -> Vec<f64> {
        let mut c = costs(lru, lhd);
        c.push(s3);
        c
    }

    #[test]
    fn any_other_family_must_win_by_the_margin_in_a_row() {
        let (k5, lhd) = (PolicySpec::RedisLru { k: 5 }, PolicySpec::Lhd { k: 64 });
        let s3 = PolicySpec::S3Fifo { k: S3FIFO_SAMPLES };
        let mut h = Hysteresis::starting(k5);
        // S3-FIFO 5 % better: switch.
        confirm(&mut h, &costs3(100.0, 120.0, 95.0), k5, s3);
        // Both others better than S3-FIFO by the margin, LHD the best: to LHD.
        confirm(&mut h, &costs3(90.0, 80.0, 100.0), s3, lhd);
        // K-LRU and S3-FIFO taking turns at beating LHD: no family has a streak.
        for i in 0..2 * CONFIRM {
            let cost = if i % 2 == 0 {
                costs3(90.0, 100.0, 120.0)
            } else {
                costs3(120.0, 100.0, 90.0)
            };
            assert_eq!(h.decide(None, &c(), &cost, 1000, true), lhd);
        }
        // S3-FIFO only 1 % better than LHD: LHD stays.
        for _ in 0..4 {
            assert_eq!(
                h.decide(None, &c(), &costs3(120.0, 100.0, 99.0), 1000, true),
                lhd
            );
        }
        assert_eq!(h.switches, 2);
    }

    #[test]
    fn under_256_keys_keeps_what_runs() {
        let mut h = Hysteresis::starting(PolicySpec::RedisLru { k: 5 });
        let k5 = PolicySpec::RedisLru { k: 5 };
        for _ in 0..4 {
            assert_eq!(h.decide(None, &c(), &costs(100.0, 50.0), 255, true), k5);
        }
        assert_eq!(h.streaks, [0; FAMILIES]);
        for _ in 1..CONFIRM {
            assert_eq!(h.decide(None, &c(), &costs(100.0, 50.0), 256, true), k5);
        }
        assert_eq!(
            h.decide(None, &c(), &costs(100.0, 50.0), 256, true),
            PolicySpec::Lhd { k: 64 }
        );
    }

    #[test]
    fn intervals_begun_with_filling_miniatures_are_no_evidence() {
        let k5 = PolicySpec::RedisLru { k: 5 };
        let mut h = Hysteresis::starting(k5);
        for _ in 0..2 * CONFIRM {
            assert_eq!(h.decide(None, &c(), &costs(100.0, 50.0), 1000, false), k5);
        }
        assert_eq!(h.streaks, [0; FAMILIES]);
        // A streak broken by a filling interval starts over.
        for _ in 1..CONFIRM {
            assert_eq!(h.decide(None, &c(), &costs(100.0, 50.0), 1000, true), k5);
        }
        assert_eq!(h.decide(None, &c(), &costs(100.0, 50.0), 1000, false), k5);
        confirm(&mut h, &costs(100.0, 50.0), k5, PolicySpec::Lhd { k: 64 });
    }

    #[test]
    fn each_family_counts_its_own_wins() {
        let (k5, lhd) = (PolicySpec::RedisLru { k: 5 }, PolicySpec::Lhd { k: 64 });
        let s3 = PolicySpec::S3Fifo { k: S3FIFO_SAMPLES };
        // K-LRU and LHD both beat S3-FIFO by the margin, taking turns at being the
        // best: each family's count goes on, and the cheaper at the confirming interval
        // is taken (a single streak for the interval's best would never confirm).
        let mut h = Hysteresis::starting(s3);
        for i in 0..CONFIRM {
            let cost = if i % 2 == 0 {
                costs3(90.0, 85.0, 100.0)
            } else {
                costs3(85.0, 90.0, 100.0)
            };
            let want = if i + 1 == CONFIRM { lhd } else { s3 };
            assert_eq!(
                h.decide(None, &c(), &cost, 1000, true),
                want,
                "interval {i}"
            );
        }
        assert_eq!((h.switches, h.streaks), (1, [0; FAMILIES]));
        // Running LHD: K-LRU beats it twice, then S3-FIFO once: K-LRU's count stops at
        // 2 and starts over; S3-FIFO's is 1.
        for cost in [costs3(90.0, 100.0, 100.0), costs3(90.0, 100.0, 100.0)] {
            assert_eq!(h.decide(None, &c(), &cost, 1000, true), lhd);
        }
        assert_eq!(
            h.decide(None, &c(), &costs3(100.0, 100.0, 90.0), 1000, true),
            lhd
        );
        assert_eq!(h.streaks, [0, 0, 1]);
        confirm(&mut h, &costs3(90.0, 100.0, 100.0), lhd, k5);
    }

    /// The chooser, run as `augur sim --policy auto` runs it, picks the scan-resistant
    /// winner on a scan mix (a hot set re-read often plus a one-pass scan) and K-LRU
    /// where K-LRU wins (a loop a little larger than the cache, where K = 1 keeps part
    /// of the loop and LHD, ranking by age like LRU until it has learned, does not).
    ///
    /// On the scan mix S3-FIFO wins (0.831; libCacheSim's S3-FIFO 0.831 on the same
    /// requests) and LHD barely beats LRU (0.947 against 0.957; libCacheSim's LHD
    /// 0.944): a never-hit object's class tells hot from scanned keys apart only once a
    /// hot key is hit in the cache, and with the authors' near-LRU placeholder ranking
    /// (`augur_sim::lhd::placeholder_weight`) none is, so the learned model stays
    /// near-LRU. (With our earlier 1..16 class weights LHD reached 0.894 here.)
    #[test]
    fn auto_sim_follows_the_winner() {
        // Hot set of 2000 keys (each read ~every 4 requests) mixed with a scan of
        // never-repeated keys: LRU lets the scan push hot keys out, LHD learns that
        // scanned keys are never hit.
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut scan = 1u64 << 40;
        let trace: Vec<u64> = (0..3_000_000)
            .map(|_| {
                if next() % 4 == 0 {
                    next() % 2000
                } else {
                    scan += 1;
                    scan
                }
            })
            .collect();
        let run = |trace: &[u64], policy: Option<PolicySpec>, cap: u64| -> (f64, PolicySpec) {
            let mut hits = 0u64;
            match policy {
                Some(p) => {
                    let mut s = augur_sim::build(p, cap, Unit::Objects, 3);
                    for &k in trace {
                        hits += u64::from(s.access(k, 1));
                    }
                    (1.0 - hits as f64 / trace.len() as f64, p)
                }
                None => {
                    let mut s = AutoSim::new(cap, Unit::Objects, 3, 1.0, 100_000);
                    for &k in trace {
                        hits += u64::from(s.access(k, 1));
                    }
                    (1.0 - hits as f64 / trace.len() as f64, s.policy())
                }
            }
        };
        let (lru, _) = run(&trace, Some(PolicySpec::RedisLru { k: 5 }), 1500);
        let (lhd, _) = run(&trace, Some(PolicySpec::Lhd { k: 64 }), 1500);
        let (s3, _) = run(&trace, Some(PolicySpec::S3Fifo { k: S3FIFO_SAMPLES }), 1500);
        let (auto, chosen) = run(&trace, None, 1500);
        eprintln!("scan mix: lru {lru:.4} lhd {lhd:.4} s3fifo {s3:.4} auto {auto:.4} ({chosen})");
        assert!(
            s3 < lru - 0.02,
            "workload must favour a scan-resistant policy: lhd {lhd} s3fifo {s3} lru {lru}"
        );
        // Whichever of the two is better by more than the margin is chosen.
        if s3 < lhd * (1.0 - MARGIN) {
            assert!(
                matches!(chosen, PolicySpec::S3Fifo { .. }),
                "chose {chosen}"
            );
        } else if lhd < s3 * (1.0 - MARGIN) {
            assert!(matches!(chosen, PolicySpec::Lhd { .. }), "chose {chosen}");
        }
        assert!(
            auto <= lhd.min(s3) + 0.01,
            "auto {auto} lhd {lhd} s3fifo {s3} lru {lru}"
        );

        // A loop over 1,100 keys with room for 1,000, shorter than one LHD
        // reconfiguration: LRU misses every request; K-LRU with K = 1 (random eviction)
        // keeps part of the loop; LHD, ranking by age until it has learned (the
        // placeholder), acts as K-LRU with its 8 samples and keeps little.
        let trace: Vec<u64> = (0..1_000_000u64).map(|i| i % 1_100).collect();
        let (k1, _) = run(&trace, Some(PolicySpec::RedisLru { k: 1 }), 1000);
        let (lhd, _) = run(&trace, Some(PolicySpec::Lhd { k: 64 }), 1000);
        let (initial, _) = run(&trace, Some(INITIAL_POLICY), 1000);
        let (auto, chosen) = run(&trace, None, 1000);
        eprintln!("loop: k1 {k1:.4} lhd {lhd:.4} initial {initial:.4} auto {auto:.4} ({chosen})");
        assert!(
            k1 < lhd.min(initial) - 0.02,
            "workload must favour K-LRU: k1 {k1} lhd {lhd} initial {initial}"
        );
        assert!(
            matches!(chosen, PolicySpec::RedisLru { .. }),
            "chose {chosen}"
        );
        // Auto runs the initial policy for CONFIRM of the trace's ten intervals before
        // it switches; beyond that it may lose at most a point (the switch's transient).
        let before_switch = f64::from(CONFIRM) / 10.0;
        assert!(
            auto < k1 + before_switch * (initial - k1) + 0.01,
            "auto {auto} k1 {k1} initial {initial}"
        );
    }
}
