//! Miss-ratio curves: points of (cache size, miss ratio), interpolation, the mean
//! absolute error used to judge models (kRedis paper §6.3: 40 evenly spaced sizes up to
//! the working-set size; MIMIR paper §3.6: accuracy = 1 - MAE), and the merge by
//! minimum over several curves (kRedis Eq. 4) that keeps which K won at each size.

use serde::{Deserialize, Serialize};

/// What a curve's size axis counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeUnit {
    Objects,
    Bytes,
}

/// One point of a miss-ratio curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Cache size, in objects or bytes (see [`Curve::unit`]).
    pub size: f64,
    /// Miss ratio in [0, 1] at that size.
    pub miss_ratio: f64,
}

/// A miss-ratio curve: points sorted by ascending size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// Which model or simulator produced it (`olken`, `krr`, `sim-redis-klru`, ...).
    pub model: String,
    /// The sampling size K the curve is for, where the model has one.
    pub k: Option<u32>,
    pub unit: SizeUnit,
    pub points: Vec<Point>,
}

impl Curve {
    /// Builds a curve, sorting the points by size.
    pub fn new(
        model: impl Into<String>,
        k: Option<u32>,
        unit: SizeUnit,
        mut points: Vec<Point>,
    ) -> Self {
        points.sort_by(|a, b| a.size.total_cmp(&b.size));
        Self {
            model: model.into(),
            k,
            unit,
            points,
        }
    }

    /// The largest size the curve has a point for.
    pub fn max_size(&self) -> f64 {
        self.points.last().map_or(0.0, |p| p.size)
    }

    /// Miss ratio at `size`, linearly interpolated between neighbouring points. Below
    /// the first point the curve rises linearly to 1.0 at size 0 (an empty cache misses
    /// everything); past the last point it stays flat.
    pub fn miss_ratio_at(&self, size: f64) -> f64 {
        let pts = &self.points;
        if pts.is_empty() {
            return 1.0;
        }
        if size <= 0.0 {
            return 1.0;
        }
        interpolate(pts, pts.partition_point(|p| p.size < size), size)
    }

    /// [`Self::miss_ratio_at`] for a series of non-decreasing sizes in one pass over the
    /// points, instead of a binary search per size: differencing two curves of ~50k points
    /// each (the profiler's interval curves) took ~20 ms of searches per tenant.
    pub fn cursor(&self) -> MissRatioCursor<'_> {
        MissRatioCursor {
            points: &self.points,
            next: 0,
            last_size: f64::NEG_INFINITY,
        }
    }

    /// The curve resampled at `n` evenly spaced sizes `max/n, 2max/n, ..., max`.
    pub fn resample(&self, max_size: f64, n: usize) -> Curve {
        let points = evenly_spaced(max_size, n)
            .map(|s| Point {
                size: s,
                miss_ratio: self.miss_ratio_at(s),
            })
            .collect();
        Curve::new(self.model.clone(), self.k, self.unit, points)
    }

    /// Mean absolute error against `reference` at `n` evenly spaced sizes up to
    /// `max_size` (the kRedis paper's §6.3 measure uses n = 40 up to the working set).
    pub fn mae(&self, reference: &Curve, max_size: f64, n: usize) -> f64 {
        let n = n.max(1);
        evenly_spaced(max_size, n)
            .map(|s| (self.miss_ratio_at(s) - reference.miss_ratio_at(s)).abs())
            .sum::<f64>()
            / n as f64
    }

    /// Mean absolute error against `reference` at the reference's own sizes: the
    /// kRedis §6.3 measure when `reference` holds the simulated points (the sizes a
    /// simulator actually ran, which are whole numbers and so may differ slightly from
    /// [`evenly_spaced`]'s). 0 for an empty reference.
    pub fn mae_at_points(&self, reference: &Curve) -> f64 {
        if reference.points.is_empty() {
            return 0.0;
        }
        reference
            .points
            .iter()
            .map(|p| (self.miss_ratio_at(p.size) - p.miss_ratio).abs())
            .sum::<f64>()
            / reference.points.len() as f64
    }

    /// The lower envelope of several curves at `n` evenly spaced sizes up to `max_size`
    /// (kRedis Eq. 4: the merged MRC of a tenant whose K may be chosen per size), with,
    /// for each point, the K of the curve that achieved the minimum.
    pub fn merge_min(
        curves: &[Curve],
        max_size: f64,
        n: usize,
    ) -> Option<(Curve, Vec<Option<u32>>)> {
        let first = curves.first()?;
        let mut points = Vec::with_capacity(n);
        let mut winners = Vec::with_capacity(n);
        for s in evenly_spaced(max_size, n) {
            let (best_k, best_mr) = curves
                .iter()
                .map(|c| (c.k, c.miss_ratio_at(s)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("curves is not empty");
            points.push(Point {
                size: s,
                miss_ratio: best_mr,
            });
            winners.push(best_k);
        }
        Some((Curve::new("merged-min", None, first.unit, points), winners))
    }
}

/// `n` sizes evenly spaced over (0, max]: max/n, 2max/n, ..., max.
/// A curve size as `augur mrc` writes it to CSV (and TENANT MRC answers it): whole
/// objects or bytes when the spacing allows, otherwise 3 decimals.
pub fn format_size(s: f64) -> String {
    if (s - s.round()).abs() < 1e-9 {
        format!("{}", s.round() as u64)
    } else {
        format!("{s:.3}")
    }
}

pub fn evenly_spaced(max_size: f64, n: usize) -> impl Iterator<Item = f64> {
    (1..=n).map(move |i| max_size * i as f64 / n as f64)
}

/// A histogram of stack distances (hits) plus a count of infinite distances (first
/// references), from which a miss-ratio curve follows directly: the miss ratio of a
/// cache of size `c` is the fraction of references with distance `> c` (kRedis §2.1,
/// "the miss ratio of a cache size c is the probability of stack distance greater
/// than c").
///
/// Buckets have a common width that starts at 1 (exact) and doubles, merging bucket
/// pairs, whenever a distance would need more than `max_buckets` buckets, so memory
/// stays bounded for byte distances or huge traces while small object-count stacks
/// stay exact.
#[derive(Debug, Clone, PartialEq)]
pub struct DistanceHistogram {
    width: u64,
    max_buckets: usize,
    counts: Vec<u64>,
    cold: u64,
    total: u64,
}

impl DistanceHistogram {
    /// An empty histogram of at most `max_buckets` buckets (at least 2).
    pub fn new(max_buckets: usize) -> Self {
        Self {
            width: 1,
            max_buckets: max_buckets.max(2),
            counts: Vec::new(),
            cold: 0,
            total: 0,
        }
    }

    /// Records a reference at finite stack distance `d >= 1` (hit in every cache of size
    /// `>= d`). A distance of 0 is treated as 1.
    #[inline]
    pub fn record(&mut self, d: u64) {
        self.record_n(d, 1);
    }

    /// Records a reference with infinite distance (a cold miss).
    #[inline]
    pub fn record_cold(&mut self) {
        self.cold += 1;
        self.total += 1;
    }

    /// Records `n` references at finite stack distance `d` (or a weight of `n` for one
    /// reference: KRR's regression estimator weighs each sampled reference by its
    /// key's reference count).
    #[inline(always)]
    pub fn record_n(&mut self, d: u64, n: u64) {
        let d = d.max(1);
        let mut idx = (d - 1) / self.width;
        while idx >= self.max_buckets as u64 {
            self.coarsen();
            idx = (d - 1) / self.width;
        }
        let idx = idx as usize;
        if idx >= self.counts.len() {
            self.counts.resize(idx + 1, 0);
        }
        self.counts[idx] += n;
        self.total += n;
    }

    /// Records `n` references (or a weight of `n`) at infinite distance.
    #[inline]
    pub fn record_cold_n(&mut self, n: u64) {
        self.cold += n;
        self.total += n;
    }

    fn coarsen(&mut self) {
        let merged: Vec<u64> = self.counts.chunks(2).map(|c| c.iter().sum()).collect();
        self.counts = merged;
        self.width *= 2;
    }

    /// Bucket width (distances `(i*w, (i+1)*w]` share bucket `i`).
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Number of references recorded (finite and infinite).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of infinite-distance references.
    pub fn cold(&self) -> u64 {
        self.cold
    }

    /// Count per bucket.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The miss-ratio curve, with distances multiplied by `scale` (`1/R` under spatial
    /// sampling, kRedis §2.7). One point per bucket upper edge up to the largest
    /// distance seen: the curve is a step function and `Curve` interpolates linearly, so
    /// every edge is kept to stay flat across empty buckets.
    pub fn to_curve(&self, model: &str, k: Option<u32>, unit: SizeUnit, scale: f64) -> Curve {
        self.to_curve_with_total(model, k, unit, scale, self.total as f64)
    }

    /// As [`Self::to_curve`], but miss ratios are misses divided by `total` instead of
    /// by the number of recorded references, clamped to [0, 1]. With spatial sampling,
    /// `total = N * R` (the expected number of sampled references) is SHARDS'
    /// adjustment ("SHARDS-adj", Waldspurger et al., FAST'15): it is equivalent to
    /// crediting the difference between expected and actual sampled references to the
    /// smallest distance, and removes the bias a few very hot keys cause when they fall
    /// in (or out of) the sample.
    pub fn to_curve_with_total(
        &self,
        model: &str,
        k: Option<u32>,
        unit: SizeUnit,
        scale: f64,
        total: f64,
    ) -> Curve {
        let mut points = Vec::with_capacity(self.counts.len() + 1);
        if self.total == 0 || total <= 0.0 {
            return Curve::new(model, k, unit, points);
        }
        let recorded = self.total as f64;
        let mut hits = 0u64;
        let n = self.counts.len();
        for (i, &c) in self.counts.iter().enumerate() {
            hits += c;
            if !bucket_point_needed(&[&self.counts], i, n) {
                continue;
            }
            points.push(Point {
                size: ((i as u64 + 1) * self.width) as f64 * scale,
                miss_ratio: ((recorded - hits as f64) / total).clamp(0.0, 1.0),
            });
        }
        if points.is_empty() {
            points.push(Point {
                size: scale,
                miss_ratio: (recorded / total).clamp(0.0, 1.0),
            });
        }
        Curve::new(model, k, unit, points)
    }
}

/// Whether bucket `i` (of `n`) of a histogram curve needs its point, given the
/// histograms whose counts the curve's miss ratios are computed from: the first and last
/// always, any other only if it or the next bucket holds references in one of them. A
/// bucket with none leaves the miss ratio where the previous point had it, so a point
/// whose bucket and next bucket are both empty lies inside a flat run, and linear
/// interpolation between the run's ends gives the same value at every size: dropping it
/// changes no miss ratio anywhere (`Curve::miss_ratio_at` is the same function). What it
/// saves: a histogram of 65,536 byte-wide buckets fed a sparse sample (the profiler's
/// ~2k sampled references of a tenant) made curves of ~50k points, almost all of them
/// flat, which every interval copied, differenced, merged and partitioned. A cumulative
/// histogram only gains references, so its later curve keeps every point an earlier one
/// has (same width): differencing the two at the later curve's points stays exact.
#[inline]
pub(crate) fn bucket_point_needed(counts: &[&[u64]], i: usize, n: usize) -> bool {
    let busy = |j: usize| counts.iter().any(|c| c.get(j).is_some_and(|&x| x != 0));
    i == 0 || i + 1 >= n || busy(i) || busy(i + 1)
}

/// See [`Curve::cursor`].
pub struct MissRatioCursor<'a> {
    points: &'a [Point],
    /// The first point whose size is not below the last size asked for.
    next: usize,
    last_size: f64,
}

impl MissRatioCursor<'_> {
    /// The curve's miss ratio at `size`, exactly as [`Curve::miss_ratio_at`] gives it.
    /// Sizes must come in non-decreasing order.
    pub fn at(&mut self, size: f64) -> f64 {
        debug_assert!(size >= self.last_size, "sizes must not decrease");
        self.last_size = size;
        let pts = self.points;
        if pts.is_empty() || size <= 0.0 {
            return 1.0;
        }
        // `partition_point(|p| p.size < size)`, resumed where the last size left it.
        while self.next < pts.len() && pts[self.next].size < size {
            self.next += 1;
        }
        interpolate(pts, self.next, size)
    }
}

/// The miss ratio at `size > 0` of the non-empty sorted `pts`, where `i` is the first
/// point whose size is not below `size`: linear between `pts[i - 1]` (or (0, 1) before
/// the first point) and `pts[i]`, flat past the last point.
fn interpolate(pts: &[Point], i: usize, size: f64) -> f64 {
    if i == pts.len() {
        return pts[pts.len() - 1].miss_ratio;
    }
    let hi = pts[i];
    let (lo_size, lo_mr) = if i == 0 {
        (0.0, 1.0)
    } else {
        (pts[i - 1].size, pts[i - 1].miss_ratio)
    };
    if hi.size <= lo_size {
        return hi.miss_ratio;
    }
    let t = (size - lo_size) / (hi.size - lo_size);
    lo_mr + t * (hi.miss_ratio - lo_mr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(model: &str, k: u32, pts: &[(f64, f64)]) -> Curve {
        Curve::new(
            model,
            Some(k),
            SizeUnit::Objects,
            pts.iter()
                .map(|&(size, miss_ratio)| Point { size, miss_ratio })
                .collect(),
        )
    }

    proptest::proptest! {
        /// The cursor answers exactly what `miss_ratio_at` answers, for curves with
        /// repeated sizes too and for sizes below, between, on and past the points.
        #[test]
        fn cursor_equals_miss_ratio_at(
            pts in proptest::collection::vec((0u32..200, 0.0f64..=1.0), 0..40),
            sizes in proptest::collection::vec(-5i32..250, 0..80),
        ) {
            let c = Curve::new(
                "t",
                Some(1),
                SizeUnit::Bytes,
                pts.iter()
                    .map(|&(s, m)| Point { size: f64::from(s) / 2.0, miss_ratio: m })
                    .collect(),
            );
            let mut sizes: Vec<f64> = sizes.iter().map(|&s| f64::from(s) / 2.0 + 0.25).collect();
            sizes.extend(c.points.iter().map(|p| p.size));
            sizes.sort_by(f64::total_cmp);
            let mut cur = c.cursor();
            for s in sizes {
                proptest::prop_assert_eq!(cur.at(s).to_bits(), c.miss_ratio_at(s).to_bits(), "at {}", s);
            }
        }

        /// A histogram's curve without the points of its flat runs is the same function
        /// as the curve with a point per bucket: bit-equal miss ratios at every bucket
        /// edge, every midpoint, below the first and past the last; and it keeps a point
        /// wherever the count changes.
        #[test]
        fn dropping_flat_run_points_keeps_the_curve(
            distances in proptest::collection::vec(1u64..5000, 0..60),
            cold in 0u64..20,
            buckets in 2usize..300,
            scale in 1.0f64..1000.0,
        ) {
            let mut h = DistanceHistogram::new(buckets);
            for &d in &distances {
                h.record(d);
            }
            for _ in 0..cold {
                h.record_cold();
            }
            let total = h.total() as f64 * 1.1;
            let c = h.to_curve_with_total("t", None, SizeUnit::Bytes, scale, total);
            // The reference: one point per bucket, as before the flat runs were dropped.
            let mut full = Vec::new();
            let mut hits = 0u64;
            for (i, &n) in h.counts().iter().enumerate() {
                hits += n;
                full.push(Point {
                    size: ((i as u64 + 1) * h.width()) as f64 * scale,
                    miss_ratio: ((h.total() as f64 - hits as f64) / total).clamp(0.0, 1.0),
                });
            }
            if h.total() == 0 {
                proptest::prop_assert!(c.points.is_empty());
                return Ok(());
            }
            if full.is_empty() {
                proptest::prop_assert_eq!(c.points.len(), 1);
                return Ok(());
            }
            let reference = Curve::new("t", None, SizeUnit::Bytes, full);
            let busy = h.counts().iter().filter(|&&n| n != 0).count();
            proptest::prop_assert!(c.points.len() <= 2 * busy + 2, "{} points", c.points.len());
            let w = h.width() as f64 * scale;
            for i in 0..=h.counts().len() + 1 {
                for s in [i as f64 * w, i as f64 * w + w / 2.0, i as f64 * w + w / 3.0] {
                    proptest::prop_assert_eq!(
                        c.miss_ratio_at(s).to_bits(),
                        reference.miss_ratio_at(s).to_bits(),
                        "at {}", s
                    );
                }
            }
        }
    }

    #[test]
    fn interpolates_between_points_and_clamps_past_the_last() {
        let c = line("t", 1, &[(10.0, 0.8), (20.0, 0.4)]);
        assert!((c.miss_ratio_at(15.0) - 0.6).abs() < 1e-12);
        assert!((c.miss_ratio_at(5.0) - 0.9).abs() < 1e-12);
        assert_eq!(c.miss_ratio_at(100.0), 0.4);
        assert_eq!(c.miss_ratio_at(0.0), 1.0);
    }

    #[test]
    fn mae_of_a_curve_with_itself_is_zero_and_of_a_shifted_one_is_the_shift() {
        let a = line("a", 1, &[(10.0, 0.5), (100.0, 0.2)]);
        let b = line("b", 1, &[(10.0, 0.55), (100.0, 0.25)]);
        assert_eq!(a.mae(&a, 100.0, 40), 0.0);
        // Sizes 2.5..10 sit on the ramp from (0, 1.0) where the two differ by less.
        let err = a.mae(&b, 100.0, 40);
        assert!(err > 0.04 && err <= 0.05, "{err}");
    }

    #[test]
    fn merge_min_takes_the_lower_curve_and_remembers_its_k() {
        let a = line("krr", 1, &[(10.0, 0.5), (100.0, 0.1)]);
        let b = line("krr", 16, &[(10.0, 0.3), (100.0, 0.2)]);
        let (m, winners) = Curve::merge_min(&[a, b], 100.0, 10).unwrap();
        assert_eq!(winners.first(), Some(&Some(16)));
        assert_eq!(winners.last(), Some(&Some(1)));
        assert!((m.miss_ratio_at(100.0) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn histogram_curve_is_exact_until_it_coarsens() {
        let mut h = DistanceHistogram::new(4);
        h.record_cold();
        h.record(1);
        h.record(3);
        h.record(3);
        let c = h.to_curve("t", None, SizeUnit::Objects, 1.0);
        assert_eq!(c.points.len(), 3);
        assert!((c.miss_ratio_at(1.0) - 0.75).abs() < 1e-12);
        assert!((c.miss_ratio_at(2.0) - 0.75).abs() < 1e-12);
        assert!((c.miss_ratio_at(3.0) - 0.25).abs() < 1e-12);
        // Distance 9 needs bucket 8 > 4 buckets: width doubles twice to 4.
        h.record(9);
        assert_eq!(h.width(), 4);
        assert_eq!(h.counts(), &[3, 0, 1]);
        let c = h.to_curve("t", None, SizeUnit::Objects, 10.0);
        assert!((c.miss_ratio_at(40.0) - 0.4).abs() < 1e-12);
        assert!((c.miss_ratio_at(120.0) - 0.2).abs() < 1e-12);
    }
}
