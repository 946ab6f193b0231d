//! kRedis's latency-aware memory partitioning (kRedis paper §4.1-4.2): each tenant's
//! per-K miss-ratio curves are merged into one curve that remembers which K wins at
//! every size (Eq. 4), and a dynamic programme over allocation units of `G` bytes
//! (Algorithm 3) splits the memory pool so the total miss latency
//! `Σ_i mMRC_i(C_i)·a_i·p_i` is minimal (Eq. 5-6), or the hit throughput
//! `Σ_i (1 - mMRC_i(C_i))·a_i` maximal (Eq. 7).
//!
//! A pure algorithm: no clock, no I/O. The server measures access rates and miss
//! penalties, feeds the curves KRR produced, and enforces the returned sizes and Ks.
//!
//! With a single tenant the partition is trivial (it gets the whole pool up to its
//! maximum) and what remains is the choice of K at that size: the merged curve's
//! winner. That is kRedis "downgraded to handle a single tenant, where KRR is applied
//! to identify an optimal K" (§6.9, single-tenant case study §6.9.1).

use std::fmt;

use crate::curve::{Curve, SizeUnit};

/// The most allocation units the dynamic programme works with. Its time is
/// `O(N·M²)`: at 4096 units and 15 tenants that is about 1.3·10⁸ inner steps, measured
/// at 0.25-0.3 s in release on a loaded 2-core machine, acceptable once per interval;
/// larger pools are coarsened (see [`partition`]).
pub const MAX_UNITS: u64 = 4096;

/// What can go wrong building a merged curve or partitioning.
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionError {
    /// `unit_bytes` was 0.
    ZeroUnit,
    /// No tenants to partition among.
    NoTenants,
    /// A merged curve needs at least one per-K curve.
    NoCurves,
    /// Curve `index` carries no K, so the merged curve could not say which K to use.
    CurveWithoutK { index: usize },
    /// Curve `index` counts its size in objects; partitioning is in bytes.
    CurveNotInBytes { index: usize },
    /// Tenant `tenant` has a negative, infinite or NaN access rate or miss penalty.
    InvalidDemand { tenant: usize },
    /// Tenant `tenant`'s minimum, rounded up to whole units, exceeds its maximum
    /// rounded down to whole units (or its maximum in bytes).
    MinAboveMax { tenant: usize },
    /// The tenants' minimums, each rounded up to whole units, need more than the pool's
    /// whole units: the operator asked for more memory than there is.
    MinimumsExceedTotal {
        required_bytes: u64,
        total_bytes: u64,
        unit_bytes: u64,
    },
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroUnit => write!(f, "allocation unit is 0 bytes"),
            Self::NoTenants => write!(f, "no tenants to partition memory among"),
            Self::NoCurves => write!(f, "merged miss-ratio curve needs at least one curve"),
            Self::CurveWithoutK { index } => write!(f, "curve {index} has no sampling size K"),
            Self::CurveNotInBytes { index } => {
                write!(f, "curve {index} is sized in objects, not bytes")
            }
            Self::InvalidDemand { tenant } => write!(
                f,
                "tenant {tenant}: access rate and miss penalty must be finite and >= 0"
            ),
            Self::MinAboveMax { tenant } => write!(
                f,
                "tenant {tenant}: minimum memory exceeds maximum (after rounding to units)"
            ),
            Self::MinimumsExceedTotal {
                required_bytes,
                total_bytes,
                unit_bytes,
            } => write!(
                f,
                "tenant minimums need {required_bytes} bytes (rounded up to {unit_bytes}-byte \
                 units) but only {total_bytes} bytes are available"
            ),
        }
    }
}

impl std::error::Error for PartitionError {}

/// A tenant's merged miss-ratio curve `mMRC(C) = min_K MRC_K(C)` (kRedis §4.1, Eq. 4),
/// keeping at each size the K that achieves the minimum so the tenant's eviction can
/// be configured with it (§4.2 step 4). Merging collapses the search over
/// (size, K) per tenant into one curve, so partitioning stays a one-curve-per-tenant
/// problem.
///
/// The minimum is taken over the per-K curves evaluated exactly at the asked size
/// (each interpolated as [`Curve::miss_ratio_at`] does: linear between points, rising
/// to 1 at size 0, flat past its last point), not over a resampled grid.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedMrc {
    /// `(K, curve)` sorted by ascending K.
    curves: Vec<(u32, Curve)>,
}

impl MergedMrc {
    /// Merges a tenant's per-K curves (as [`crate::krr::Krr`] produces, one per K).
    /// Each curve must carry its K and be sized in bytes.
    pub fn new(curves: &[Curve]) -> Result<Self, PartitionError> {
        if curves.is_empty() {
            return Err(PartitionError::NoCurves);
        }
        let mut merged = Vec::with_capacity(curves.len());
        for (index, c) in curves.iter().enumerate() {
            let k = c.k.ok_or(PartitionError::CurveWithoutK { index })?;
            if c.unit != SizeUnit::Bytes {
                return Err(PartitionError::CurveNotInBytes { index });
            }
            merged.push((k, c.clone()));
        }
        merged.sort_by_key(|&(k, _)| k);
        Ok(Self { curves: merged })
    }

    /// The Ks merged, ascending.
    pub fn ks(&self) -> impl Iterator<Item = u32> + '_ {
        self.curves.iter().map(|&(k, _)| k)
    }

    /// `(mMRC(bytes), K achieving it)`. On a tie the smallest K wins: it samples fewer
    /// keys per eviction, so it is the cheaper policy for the same predicted misses.
    pub fn at(&self, bytes: u64) -> (f64, u32) {
        let mut best = (f64::INFINITY, self.curves[0].0);
        for (k, c) in &self.curves {
            let mr = c.miss_ratio_at(bytes as f64);
            if mr < best.0 {
                best = (mr, *k);
            }
        }
        best
    }

    /// The merged miss ratio at a cache of `bytes` bytes (1 at 0 bytes).
    pub fn miss_ratio(&self, bytes: u64) -> f64 {
        self.at(bytes).0
    }

    /// The K whose curve is lowest at `bytes` (smallest K on ties).
    pub fn best_k(&self, bytes: u64) -> u32 {
        self.at(bytes).1
    }

    /// The K to run at `bytes` when `running` runs now: the best K, unless `running` is
    /// among the curves and its miss ratio at `bytes` is less than `margin` above the
    /// best one's, in which case `running` stays.
    ///
    /// Why: the curves are sampled estimates (spatial sampling at R = 0.01 misses the
    /// exact K-LRU curve by ~0.003 on average, issue 8's bar is 0.005), so two Ks whose
    /// curves differ by less than that are not known to differ at all; and a switch has
    /// a cost the curves do not show: the cache still holds what the old K kept, and the
    /// intervals right after a switch missed the model by up to 3.7 points where K went
    /// 8 -> 1 -> 8 between 10-s intervals on arc_oltp (BENCHMARKS.md, "With the
    /// distinct-key estimator"). kRedis (§4.2 step 3) takes the argmin each interval
    /// (a margin of 0 here). Holding a K has its own cost when the best K is better by
    /// a little less than the margin, so the server's default margin is 0.
    pub fn k_to_run(&self, bytes: u64, running: u32, margin: f64) -> u32 {
        let (best_mr, best_k) = self.at(bytes);
        match self.curves.iter().find(|(k, _)| *k == running) {
            Some((_, c)) if c.miss_ratio_at(bytes as f64) < best_mr + margin => running,
            _ => best_k,
        }
    }
}

/// What one tenant asks of the pool for the next interval (kRedis §4.2 step 1-2).
#[derive(Debug, Clone, PartialEq)]
pub struct TenantDemand {
    /// Its merged miss-ratio curve.
    pub mrc: MergedMrc,
    /// `a_i`: requests per second over the last interval (any time base works if it is
    /// the same for every tenant). 0 marks an idle tenant.
    pub access_rate: f64,
    /// `p_i`: mean miss latency in microseconds (the paper's unit: 2000 µs for a remote
    /// database). Only its ratio between tenants matters to the partition; the
    /// [`Objective::Latency`] cost comes out in µs of miss latency per second.
    pub miss_penalty: f64,
    /// Memory the tenant always gets (rounded up to whole units).
    pub min_bytes: u64,
    /// Memory the tenant never exceeds (rounded down to whole units for the
    /// programme), or `None` for no cap.
    pub max_bytes: Option<u64>,
}

/// What the partition optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    /// Minimise the total miss latency `Σ_i mMRC_i(C_i)·a_i·p_i` (Eq. 6).
    Latency,
    /// Maximise the hit throughput `Σ_i (1 - mMRC_i(C_i))·a_i` (Eq. 7), the DCAPS-style
    /// alternative target of §4.2; miss penalties are ignored.
    Hits,
}

impl Objective {
    /// The weight `w_i` with which tenant `t`'s miss ratio enters the cost to minimise:
    /// `a·p` for latency; `a` for hits (maximising `Σ(1-m)a` is minimising `Σ m·a`).
    fn weight(self, t: &TenantDemand) -> f64 {
        match self {
            Objective::Latency => t.access_rate * t.miss_penalty,
            Objective::Hits => t.access_rate,
        }
    }
}

/// The result of [`partition`], one entry per tenant in input order.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// Bytes given to each tenant.
    pub bytes: Vec<u64>,
    /// The K to configure each tenant's eviction with: the merged curve's winner at its
    /// size.
    pub k: Vec<u32>,
    /// Each tenant's merged miss ratio at its size.
    pub predicted_miss_ratio: Vec<f64>,
    /// The objective at this allocation: total miss latency `Σ m·a·p` for
    /// [`Objective::Latency`] (lower is better), hit throughput `Σ (1-m)·a` for
    /// [`Objective::Hits`] (higher is better).
    pub cost: f64,
    /// The allocation unit actually used (`unit_bytes`, or a multiple of it when the
    /// pool had more than [`MAX_UNITS`] units).
    pub unit_bytes: u64,
    /// Bytes of the pool given to no one: non-zero only when every tenant is at its
    /// `max_bytes`.
    pub unallocated_bytes: u64,
}

/// Splits `total_bytes` among `tenants` to optimise `objective` (kRedis §4.2,
/// Algorithm 3), in units of `G = unit_bytes`.
///
/// **Programme.** `f[i][j]` is the least cost of giving the first `i` tenants exactly
/// `j` units; tenant `i` takes `c` units in `[ceil(min_i/G), floor(max_i/G)]` and adds
/// `w_i·mMRC_i(c·G)` ([`Objective`] gives `w_i`). That is `O(N·M²)` time and `O(N·M)`
/// memory for the back-pointers (two rows of costs). Measured in release, wall time on
/// the shared 2-core build machine under load (about 4 runnable jobs per core): **9-26 ms
/// for N = 15 tenants and M = 1024 units** (test
/// `partition_is_fast_for_15_tenants_1024_units`), 0.25-0.3 s at M = [`MAX_UNITS`].
///
/// **Coarsening.** If the pool holds more than [`MAX_UNITS`] units, `G` becomes
/// `unit_bytes·ceil(M/MAX_UNITS)` (still a multiple of the asked unit) so the quadratic
/// term stays bounded; [`Allocation::unit_bytes`] reports the unit used. The paper
/// picks `G` (1 MB, 10 MB) for the same reason.
///
/// **Spare memory (tie rule).** Eq. 6 hands out all of `M`, but curves flatten (past
/// the working set, or past the last point measured) and then further units change
/// no cost. So the programme allows `Σ C_i ≤ M`, takes the *smallest* total that
/// reaches the least cost (totals whose costs differ by no more than the rounding
/// error of the sum count as equal), and then spreads the spare units:
/// 1. over the tenants with positive weight `w_i` (`a·p`, or `a` for hits), in
///    proportion to `w_i`, water-filling around `max_bytes` (a tenant reaching its cap
///    drops out and the rest is re-split), whole units by largest remainder, ties to
///    the lower index. Why weight: the curves describe the last interval; a tenant
///    whose misses cost the most is the one for which an unforeseen growth of its
///    working set would cost the most, so spare memory is the cheapest insurance there.
///    Proportional rather than all-to-one keeps every active tenant some headroom.
/// 2. only if all of those are at their caps, evenly over the zero-weight (idle) tenants,
///    so memory is not left idle. Otherwise an idle tenant (rate 0) gets exactly its
///    minimum: its cost is 0 at any size, so the least total never includes more.
/// 3. if every tenant is at its cap, the rest is [`Allocation::unallocated_bytes`].
///
/// Among allocations of equal cost and equal total, the programme keeps the one that
/// gives the last tenant the fewest units, then the second-last, and so on (strict
/// improvement while scanning `c` upwards). Per tenant, ties between Ks go to the
/// smallest K ([`MergedMrc::at`]).
///
/// **Bytes not filling a unit** (`total_bytes mod G`, and any room below a cap that is
/// not a whole unit) go, after the units, to tenants in order of decreasing weight
/// (ties to the lower index; idle tenants last), each up to its `max_bytes`.
///
/// Curves are assumed non-increasing (as every stack-model curve is): spare memory is
/// given away on the premise that it cannot raise a miss ratio.
///
/// **Errors.** `unit_bytes == 0`; no tenants; a rate or penalty negative, infinite or
/// NaN; a minimum above its maximum after rounding; and the sum of minimums (rounded up
/// to units) above the pool's whole units — the server reports that to the operator.
///
/// One tenant: it gets everything up to its maximum, with the K minimising its merged
/// curve there, which is kRedis reduced to choosing K (§6.9.1).
pub fn partition(
    tenants: &[TenantDemand],
    total_bytes: u64,
    unit_bytes: u64,
    objective: Objective,
) -> Result<Allocation, PartitionError> {
    if unit_bytes == 0 {
        return Err(PartitionError::ZeroUnit);
    }
    if tenants.is_empty() {
        return Err(PartitionError::NoTenants);
    }
    for (tenant, t) in tenants.iter().enumerate() {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if !ok(t.access_rate) || !ok(t.miss_penalty) {
            return Err(PartitionError::InvalidDemand { tenant });
        }
    }
    let unit = coarsened_unit(total_bytes, unit_bytes);
    let m = total_bytes / unit;
    let n = tenants.len();

    // Bounds in units: minimums rounded up, maximums down, both clipped to the pool.
    let mut lo = Vec::with_capacity(n);
    let mut hi = Vec::with_capacity(n);
    for (tenant, t) in tenants.iter().enumerate() {
        let l = t.min_bytes.div_ceil(unit);
        let h = t.max_bytes.map_or(u64::MAX, |b| b / unit);
        if l > h || t.max_bytes.is_some_and(|b| b < t.min_bytes) {
            return Err(PartitionError::MinAboveMax { tenant });
        }
        lo.push(l);
        hi.push(h.min(m));
    }
    let required: u128 = lo.iter().map(|&l| u128::from(l)).sum();
    if required > u128::from(m) {
        return Err(PartitionError::MinimumsExceedTotal {
            required_bytes: u64::try_from(required * u128::from(unit)).unwrap_or(u64::MAX),
            total_bytes,
            unit_bytes: unit,
        });
    }
    // Every lo <= m now, and every hi >= lo.

    let weights: Vec<f64> = tenants.iter().map(|t| objective.weight(t)).collect();
    let mut units = dp_least_total(tenants, &weights, &lo, &hi, m as usize, unit);
    let spare = m - units.iter().sum::<u64>();
    spread_spare(&mut units, &hi, &weights, spare);

    let mut bytes: Vec<u64> = units.iter().map(|&u| u * unit).collect();
    let mut left = total_bytes - bytes.iter().sum::<u64>();
    for i in byte_order(&weights) {
        let room = tenants[i].max_bytes.map_or(u64::MAX, |b| b - bytes[i]);
        let give = room.min(left);
        bytes[i] += give;
        left -= give;
    }

    let mut k = Vec::with_capacity(n);
    let mut predicted = Vec::with_capacity(n);
    let mut cost = 0.0;
    for (t, &b) in tenants.iter().zip(&bytes) {
        let (mr, best_k) = t.mrc.at(b);
        k.push(best_k);
        predicted.push(mr);
        cost += match objective {
            Objective::Latency => mr * t.access_rate * t.miss_penalty,
            Objective::Hits => (1.0 - mr) * t.access_rate,
        };
    }
    Ok(Allocation {
        bytes,
        k,
        predicted_miss_ratio: predicted,
        cost,
        unit_bytes: unit,
        unallocated_bytes: left,
    })
}

/// `unit_bytes`, or the smallest multiple of it that cuts `total_bytes` into at most
/// [`MAX_UNITS`] units.
fn coarsened_unit(total_bytes: u64, unit_bytes: u64) -> u64 {
    let units = total_bytes / unit_bytes;
    if units <= MAX_UNITS {
        unit_bytes
    } else {
        unit_bytes.saturating_mul(units.div_ceil(MAX_UNITS))
    }
}

/// Algorithm 3 with per-tenant bounds and `Σ c_i ≤ m`: the units of the least-cost
/// allocation with the smallest total (see [`partition`] for the tie rules).
fn dp_least_total(
    tenants: &[TenantDemand],
    weights: &[f64],
    lo: &[u64],
    hi: &[u64],
    m: usize,
    unit: u64,
) -> Vec<u64> {
    let n = tenants.len();
    let width = m + 1;
    // choice[i*width + j]: units tenant i takes when the first i+1 tenants hold j.
    let mut choice = vec![0u32; n * width];
    let mut prev = vec![f64::INFINITY; width];
    let mut cur = vec![f64::INFINITY; width];
    prev[0] = 0.0;
    // Totals reachable by the tenants so far: every j in [reach_lo, reach_hi].
    let (mut reach_lo, mut reach_hi) = (0usize, 0usize);
    let mut scale = 0.0;
    for i in 0..n {
        let (l, h) = (lo[i] as usize, hi[i] as usize);
        let w = weights[i];
        // cost[c - l] = w·mMRC(c·G) for c in [l, h].
        let cost: Vec<f64> = if w == 0.0 {
            vec![0.0; h - l + 1]
        } else {
            (l..=h)
                .map(|c| w * tenants[i].mrc.miss_ratio(c as u64 * unit))
                .collect()
        };
        scale += cost.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
        let new_lo = reach_lo + l;
        let new_hi = (reach_hi + h).min(m);
        cur.fill(f64::INFINITY);
        let row = &mut choice[i * width..(i + 1) * width];
        for j in new_lo..=new_hi {
            // c so that j - c is reachable: j - reach_hi <= c <= j - reach_lo.
            let c_min = l.max(j.saturating_sub(reach_hi));
            let c_max = h.min(j - reach_lo);
            let before = &prev[j - c_max..=j - c_min];
            let mine = &cost[c_min - l..=c_max - l];
            let (mut best, mut arg) = (f64::INFINITY, c_min);
            for (d, (&p, &q)) in before.iter().rev().zip(mine).enumerate() {
                let v = p + q;
                if v < best {
                    best = v;
                    arg = c_min + d;
                }
            }
            cur[j] = best;
            row[j] = arg as u32;
        }
        std::mem::swap(&mut prev, &mut cur);
        (reach_lo, reach_hi) = (new_lo, new_hi);
    }

    // The least cost, then the smallest total within the rounding of an N-term sum.
    let reachable = &prev[reach_lo..=reach_hi];
    let least = reachable.iter().copied().fold(f64::INFINITY, f64::min);
    let tol = 4.0 * n as f64 * f64::EPSILON * scale;
    let mut j = reach_lo
        + reachable
            .iter()
            .position(|&v| v <= least + tol)
            .expect("the least cost is reachable");
    let mut units = vec![0u64; n];
    for i in (0..n).rev() {
        let c = choice[i * width + j] as usize;
        units[i] = c as u64;
        j -= c;
    }
    units
}

/// Hands `spare` units out: to positive-weight tenants in proportion to weight, then
/// evenly to zero-weight ones, never past `hi` (see [`partition`]). Returns what no one
/// could take.
fn spread_spare(units: &mut [u64], hi: &[u64], weights: &[f64], mut spare: u64) -> u64 {
    let active: Vec<usize> = (0..units.len()).filter(|&i| weights[i] > 0.0).collect();
    water_fill(units, hi, &active, |i| weights[i], &mut spare);
    let idle: Vec<usize> = (0..units.len()).filter(|&i| weights[i] <= 0.0).collect();
    water_fill(units, hi, &idle, |_| 1.0, &mut spare);
    spare
}

/// Splits `spare` among `members` in proportion to `weight`, capping at `hi`: a member
/// whose share reaches its room takes the room and leaves, the rest is re-split; the
/// final fractional units go by largest remainder, ties to the lower index.
fn water_fill(
    units: &mut [u64],
    hi: &[u64],
    members: &[usize],
    weight: impl Fn(usize) -> f64,
    spare: &mut u64,
) {
    let mut active: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| units[i] < hi[i])
        .collect();
    while *spare > 0 && !active.is_empty() {
        let total_w: f64 = active.iter().map(|&i| weight(i)).sum();
        let to_split = *spare as f64;
        let share = |i: usize| to_split * weight(i) / total_w;
        let capped: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| share(i) >= (hi[i] - units[i]) as f64)
            .collect();
        if !capped.is_empty() {
            for &i in &capped {
                let give = (hi[i] - units[i]).min(*spare);
                units[i] += give;
                *spare -= give;
            }
            active.retain(|i| !capped.contains(i));
            continue;
        }
        // No one reaches its cap: floors, then largest remainders.
        let shares: Vec<f64> = active.iter().map(|&i| share(i)).collect();
        let mut given = 0u64;
        for (&i, &s) in active.iter().zip(&shares) {
            let f = (s.floor() as u64).min(*spare - given);
            units[i] += f;
            given += f;
        }
        *spare -= given;
        let mut order: Vec<usize> = (0..active.len()).collect();
        order.sort_by(|&a, &b| {
            let fa = shares[a] - shares[a].floor();
            let fb = shares[b] - shares[b].floor();
            fb.total_cmp(&fa).then(a.cmp(&b))
        });
        for &k in order.iter().take(*spare as usize) {
            let i = active[k];
            if units[i] < hi[i] {
                units[i] += 1;
                *spare -= 1;
            }
        }
        active.retain(|&i| units[i] < hi[i]);
    }
}

/// Tenants by decreasing weight (ties to the lower index), zero weights last: the
/// order in which bytes that do not fill a unit are handed out.
fn byte_order(weights: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    order
}
