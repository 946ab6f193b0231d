//! The online profiler's CPU budget (`tenant-profiler-cpu`, percent of one core).
//!
//! **Why.** The profiler's cost is its model's work per sampled reference (~10 µs for
//! KRR with K = 1, 2, 4, 8 on a 10k-key sample) times the rate of sampled references, R
//! times the request rate. kRedis §5 picks R by the tenant's size (0.01 under ~8M keys,
//! else 0.001) so that the sample holds enough keys; it says nothing of the request rate.
//! At 1M requests/s, R = 0.01 is ~10 % of a core, which on a small machine is taken from
//! the request path (BENCHMARKS.md, "The profiler's CPU budget"). A production cache
//! should bound that: the budget is the share of one core the profiler thread may spend on
//! sampled references.
//!
//! **How.** The profiler thread reads its own CPU time (`CLOCK_THREAD_CPUTIME_ID`)
//! around each batch of references it handles; every [`WINDOW`] it compares that time
//! with the budget. Only the references' handling counts: it is what the rate controls.
//! The per-interval work (curves, the partitioning DP) does not scale with the rate and
//! comes in bursts (one 200-ms window in fifty at `tenant-interval-ms 10000`): counted,
//! it cut a 70k-requests/s replay's rate twice for a profiler at 0.6 % of a core on
//! average. Over budget, it cuts the sampling rate of the tenant that fed it the most
//! references in the window (one that fed it none is left alone) in proportion,
//! `rate x budget / share`, and at least by half, never below kRedis §5's default R =
//! 0.001 (below that a tenant of a million keys would be modelled from a few hundred).
//! In proportion, in short windows, because the overshoot comes at once: a fill from
//! empty at ~800k writes/s put the profiler at 5-10 % of a core, and halving once per
//! 500-ms window took three windows to come down, 80 ms of the profiler's CPU (and three
//! model restarts) in a 1.2-s redis-benchmark run, where the budget allows 12 ms.
//! The tenant's rate is capped, and its model restarts at the lower rate (a new rate is a
//! new sample, as for §5's own rule). Under a quarter of the budget for [`CALM_WINDOWS`]
//! windows in a row (so that doubling a rate would still leave it under half the budget),
//! one capped tenant's cap doubles, back up to its §5 rate. Only rates the operator left
//! to `tenant-sample-rate auto` move; a rate set by CONFIG or TENANT SET is kept as set,
//! whatever it costs.

use augur_store::TenantId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Length of one budget window.
pub const WINDOW: Duration = Duration::from_millis(200);
/// Windows in a row under a quarter of the budget before a cap is raised (10 s).
pub const CALM_WINDOWS: u32 = 50;
/// The lowest rate the budget lowers a tenant to: kRedis §5's default R.
pub const FLOOR_RATE: f64 = 0.001;

/// The calling thread's CPU time.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A tenant as the budget sees it at the end of a window.
#[derive(Debug, Clone, Copy)]
pub struct TenantLoad {
    pub id: TenantId,
    /// Its sampling rate now.
    pub rate: f64,
    /// The rate kRedis §5's rule gives it (what it returns to without a cap).
    pub section5_rate: f64,
    /// References the profiler took from it during the window.
    pub references: u64,
}

/// The budget's state on the profiler thread.
#[derive(Debug)]
pub struct CpuBudget {
    window_start: Instant,
    /// CPU time spent handling references since the window started.
    work: Duration,
    calm: u32,
    caps: HashMap<TenantId, f64>,
}

impl Default for CpuBudget {
    fn default() -> Self {
        Self::new(Instant::now())
    }
}

impl CpuBudget {
    pub fn new(now: Instant) -> Self {
        Self {
            window_start: now,
            work: Duration::ZERO,
            calm: 0,
            caps: HashMap::new(),
        }
    }

    /// Adds the CPU time of one batch of references (thread CPU time after minus before).
    pub fn add_work(&mut self, cpu: Duration) {
        self.work += cpu;
    }

    /// The share of one core spent handling references during the window that ends at
    /// `now`, if a window ended; starts the next window.
    pub fn window_end(&mut self, now: Instant) -> Option<f64> {
        let wall = now.saturating_duration_since(self.window_start);
        if wall < WINDOW {
            return None;
        }
        let share = self.work.as_secs_f64() / wall.as_secs_f64();
        self.window_start = now;
        self.work = Duration::ZERO;
        Some(share)
    }

    /// The cap on tenant `t`'s rate (1 when none).
    pub fn cap(&self, t: TenantId) -> f64 {
        self.caps.get(&t).copied().unwrap_or(1.0)
    }

    /// Forgets the caps of tenants not in `alive`.
    pub fn retain(&mut self, alive: impl Fn(TenantId) -> bool) {
        self.caps.retain(|&t, _| alive(t));
    }

    /// Forgets every cap (the budget is off).
    pub fn clear(&mut self) {
        self.caps.clear();
        self.calm = 0;
    }

    /// After a window with the thread at `share` of a core against `budget` (a fraction
    /// of one core), the rate change to make, if any: `(tenant, new rate)`.
    pub fn decide(
        &mut self,
        share: f64,
        budget: f64,
        tenants: &[TenantLoad],
    ) -> Option<(TenantId, f64)> {
        if budget <= 0.0 {
            return None;
        }
        if share > budget {
            self.calm = 0;
            // Only a tenant that fed the profiler in the window: when the load comes
            // from rates the operator fixed, idle tenants' models are not what costs.
            let busiest = tenants
                .iter()
                .filter(|l| l.references > 0 && same_or_above(l.rate, FLOOR_RATE * 1.5))
                .max_by_key(|l| l.references)?;
            let rate = (busiest.rate * (budget / share).min(0.5)).max(FLOOR_RATE);
            self.caps.insert(busiest.id, rate);
            return Some((busiest.id, rate));
        }
        if share >= budget / 4.0 {
            self.calm = 0;
            return None;
        }
        self.calm += 1;
        if self.calm < CALM_WINDOWS {
            return None;
        }
        self.calm = 0;
        let lowest = tenants
            .iter()
            .filter(|l| self.caps.contains_key(&l.id))
            .min_by(|a, b| a.rate.total_cmp(&b.rate))?;
        let raised = self.cap(lowest.id) * 2.0;
        if raised >= lowest.section5_rate {
            self.caps.remove(&lowest.id);
            Some((lowest.id, lowest.section5_rate))
        } else {
            self.caps.insert(lowest.id, raised);
            Some((lowest.id, raised))
        }
    }
}

/// `a >= b` up to float noise.
fn same_or_above(a: f64, b: f64) -> bool {
    a >= b * (1.0 - 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(id: TenantId, rate: f64, references: u64) -> TenantLoad {
        TenantLoad {
            id,
            rate,
            section5_rate: 0.01,
            references,
        }
    }

    #[test]
    fn windows_measure_the_share_of_one_core() {
        let t0 = Instant::now();
        let mut b = CpuBudget::new(t0);
        b.add_work(Duration::from_millis(50));
        assert_eq!(b.window_end(t0 + WINDOW / 2), None);
        b.add_work(Duration::from_millis(50));
        let share = b.window_end(t0 + WINDOW * 2).unwrap();
        let expected = 0.1 / (WINDOW * 2).as_secs_f64();
        assert!((share - expected).abs() < 1e-9, "{share} vs {expected}");
        // The next window starts from nothing.
        assert_eq!(b.window_end(t0 + WINDOW * 4), Some(0.0));
        // The thread's CPU clock moves with work done on this thread.
        let start = thread_cpu_time();
        let mut x = 0u64;
        while thread_cpu_time() < start + Duration::from_millis(2) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
    }

    #[test]
    fn over_budget_cuts_the_busiest_tenant_in_proportion_down_to_the_floor() {
        let mut b = CpuBudget::default();
        let tenants = [load(1, 0.01, 100), load(2, 0.01, 5000)];
        // Just over the budget: at least halved.
        assert_eq!(b.decide(0.03, 0.02, &tenants), Some((2, 0.005)));
        assert_eq!(b.cap(2), 0.005);
        // Five times over: a fifth of the rate in one step.
        let r = b.decide(0.1, 0.02, &tenants).unwrap();
        assert_eq!(r.0, 2);
        assert!((r.1 - 0.002).abs() < 1e-12, "{r:?}");
        // Ten times over from 0.01: straight to the floor.
        assert_eq!(b.decide(0.5, 0.01, &tenants), Some((2, FLOOR_RATE)));
        let tenants = [load(1, 0.01, 100), load(2, 0.0016, 5000)];
        assert_eq!(b.decide(0.05, 0.02, &tenants), Some((2, FLOOR_RATE)));
        // At the floor the busiest is left alone; the next one gives.
        let tenants = [load(1, 0.01, 100), load(2, FLOOR_RATE, 5000)];
        assert_eq!(b.decide(0.04, 0.02, &tenants), Some((1, 0.005)));
        let tenants = [load(1, FLOOR_RATE, 100), load(2, FLOOR_RATE, 5000)];
        assert_eq!(b.decide(0.05, 0.02, &tenants), None);
        // A tenant that sent the profiler nothing is not cut.
        assert_eq!(b.decide(0.05, 0.02, &[load(3, 0.01, 0)]), None);
        // No budget: nothing moves.
        assert_eq!(b.decide(0.9, 0.0, &tenants), None);
    }

    #[test]
    fn caps_are_raised_only_after_calm_windows_and_only_back_to_section5() {
        let mut b = CpuBudget::default();
        assert_eq!(b.decide(0.03, 0.02, &[load(1, 0.01, 10)]), Some((1, 0.005)));
        let capped = [load(1, 0.005, 10)];
        // Between a quarter of the budget and the budget: no change, and no calm.
        for _ in 0..CALM_WINDOWS * 2 {
            assert_eq!(b.decide(0.01, 0.02, &capped), None);
        }
        for _ in 0..CALM_WINDOWS - 1 {
            assert_eq!(b.decide(0.001, 0.02, &capped), None);
        }
        assert_eq!(b.decide(0.001, 0.02, &capped), Some((1, 0.01)));
        assert_eq!(b.cap(1), 1.0, "back at its §5 rate, the cap is gone");
        // Nothing capped: calm windows change nothing.
        for _ in 0..CALM_WINDOWS * 2 {
            assert_eq!(b.decide(0.0, 0.02, &[load(1, 0.01, 10)]), None);
        }
    }

    #[test]
    fn turning_the_budget_off_forgets_the_caps() {
        let mut b = CpuBudget::default();
        b.decide(0.03, 0.02, &[load(1, 0.01, 10), load(2, 0.01, 20)]);
        b.decide(0.03, 0.02, &[load(1, 0.01, 10), load(2, 0.005, 20)]);
        b.retain(|t| t == 2);
        assert_eq!(b.cap(1), 1.0);
        assert_eq!(b.cap(2), 0.0025);
        b.clear();
        assert_eq!(b.cap(2), 1.0);
    }
}
