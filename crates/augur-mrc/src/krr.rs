//! KRR: the probabilistic stack model of K-LRU (random-sampling LRU, as Redis's
//! `allkeys-lru`) of the kRedis paper, §3.
//!
//! * **The stack.** KRR is a Mattson stack algorithm whose `maxPriority` (§3.1, Eq. 2)
//!   keeps `S(i)` at position `i` with probability `((i-1)/i)^K` and otherwise replaces
//!   it by the object pushed down from above. Under Assumption 1 this gives every object
//!   exactly K-LRU's eviction probability (Eq. 1 = Eq. 3), so the position of a
//!   referenced object is its stack distance in a K-LRU cache and one pass yields the
//!   whole miss-ratio curve.
//! * **Backward update** (§3.2, Alg. 1). The linear update draws a coin at every position
//!   above the referenced one: O(M). The positions where a swap happens ("swap
//!   positions") can instead be generated from the bottom up: the last swap position
//!   above `i` is the object a cache of size `i - 1` evicts, whose CDF (Eq. 3) is
//!   `(x / (i-1))^K`, so `x = ceil(r^(1/K) (i-1))` by inversion. Each iteration yields
//!   one swap position and E[#swaps] = O(K log M). Both updates are kept here
//!   ([`UpdateMethod`]); the linear one is the test reference.
//! * **K' = K^e** (§3.1, end). KRR orders objects by recency only coarsely, so it
//!   evicts recent objects more often than K-LRU; the paper offsets this by running the
//!   stack with `K' = K^1.4`, an exponent it found empirically. We calibrated `e` the
//!   same way on the shared traces, against each simulator it is meant to match:
//!   [`Krr::KLRU_K_EXPONENT`] = 1.6 for plain K-LRU (Eq. 1) and
//!   [`Krr::REDIS_K_EXPONENT`] = 2.0 for Redis's pooled K-LRU, whose 16-entry pool
//!   keeps the best candidates of earlier samples and so behaves like a larger K. The
//!   sweep (BENCHMARKS.md, `examples/mrc_accuracy.rs --klru-exponent/--redis-exponent`)
//!   shows why 1.4 is not kept: on the looping lirs_cs trace (the case §3.1 names as
//!   KRR's worst) its error against plain K-LRU is .0089, against .0039 with 1.6, and
//!   1.6 is no worse than .0028 on any other trace. On by default with the plain
//!   K-LRU exponent ([`KrrConfig::k_exponent`]), settable, switchable off.
//! * **Variable sizes** (§3.3, Alg. 2). A `sizeArray` of partial sums Σ_j (total size of
//!   the top `b^j` positions) gives byte distances by interpolation between the two
//!   bracketing partial sums; the backward update keeps it current in O(log M).
//! * **Several K in one pass**: one stack per K (the paper's kRedis tracks K = 1, 5, 8,
//!   16 this way, §5), sharing one key→id map and the object sizes.
//! * **Spatial sampling** (§2.7, §5): only keys with `hash(key) mod P < T` are tracked and
//!   their distances are scaled by `1/R`. Which keys land in the sample is most of the
//!   error at R = 0.01 (arc_p3: the mean MAE over K moves .0035-.0116 with the sample,
//!   < .0005 with the model's RNG seed), and most of that comes from the number of
//!   sampled *references* missing its expectation `N * R` (hot keys in or out). Misses
//!   are turned into miss ratios by [`SampleAdjust`]: SHARDS-adj (Waldspurger et al.,
//!   FAST'15 §3.3; the default) or a regression estimator, which halves arc_p3's error
//!   (.0058 -> .0030 averaged over 20 samples) but is 5-35 % worse on arc_oltp,
//!   scarab-recs and cloudphysics, whatever the number of sampled keys
//!   (BENCHMARKS.md, "KRR under spatial sampling"); it is opt-in.
//!
//! Implementation as in §5: the stack is an array of object ids ordered by stack
//! position, with an id→position array (the paper's hash table holding a pointer into
//! the array), so a referenced object is found in O(1) and an update is a cyclic shift
//! over the swap positions.

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

use crate::curve::{bucket_point_needed, Curve, DistanceHistogram, Point, SizeUnit};
use crate::{KeyMap, MrcModel, SpatialSampler};
use augur_sim::distinct::DistinctCounter;

/// Position marker for an id not on a stack.
const ABSENT: u32 = u32::MAX;

/// How a KRR stack is updated on a reference. Both draw from the same distribution of
/// swap positions (§3.2); they differ only in cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpdateMethod {
    /// Alg. 1: generate swap positions from the referenced position up, O(K log M)
    /// expected per reference.
    #[default]
    Backward,
    /// Mattson's linear pass with Eq. 2's coin at every position: O(φ) per reference.
    /// Kept as the reference the backward update is tested against.
    Linear,
}

/// How a spatially sampled model turns its sampled references into miss ratios
/// (only matters at rate R < 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SampleAdjust {
    /// Misses divided by the actual number of sampled references: the ratio estimator.
    /// A hot key in (or out of) the sample shifts the whole curve.
    None,
    /// SHARDS-adj (Waldspurger et al., FAST'15 §3.3): misses divided by the expected
    /// number of sampled references `N * R`, which credits the surplus or deficit of
    /// sampled references to the smallest distance (see
    /// [`DistanceHistogram::to_curve_with_total`]). Right when the surplus comes from
    /// hot keys that hit; wrong when it comes from keys that miss.
    Shards,
    /// Regression estimator (the survey-sampling GREG estimator for cluster samples,
    /// each key a cluster): with `M_s(c)` the sampled misses at size `c`, `N_s` the
    /// sampled references and `E = N * R` their expectation,
    /// `miss(c) = (M_s(c) - b(c) (N_s - E)) / E`, where `b(c)` estimates
    /// `Cov(M_s(c), N_s) / Var(N_s) = Σ_k m_k(c) n_k / Σ_k n_k²` over the sampled keys
    /// k (n_k references, m_k(c) of them misses). Online each reference is weighted by
    /// its key's reference count so far, so `b(c)` is the fraction of that weight that
    /// misses at `c`. `b = 0` is SHARDS-adj and `b = M_s / N_s` the ratio estimator:
    /// the surplus of sampled references is credited as hits or misses in the
    /// proportion the sampled keys that cause it (the hot ones) hit or miss.
    Regression,
    /// The regression estimator calibrated on the whole stream's distinct-key count `D`
    /// as well as its reference count `N` (GREG with two auxiliary totals): every key's
    /// first reference is a cold miss, so the cold misses are `D` exactly, not the
    /// sample's `d_s / R`; the regression above then runs on the non-first references
    /// only (`N_s - d_s` against their expectation `(N - D) R`):
    /// `miss(c) = (D + (M_s(c) - d_s - b'(c) (N_s - d_s - (N - D) R)) / R) / N`, with
    /// `b'(c)` the weighted fraction of non-first sampled references that miss at `c`.
    /// `D` comes from a HyperLogLog sketch of every key [`MrcModel::access`] sees
    /// (`augur_sim::distinct`, 16 KB, 0.81 % standard error), or from the caller
    /// ([`Krr::set_distinct_keys`]: the server keeps the sketch on its request path,
    /// where the unsampled keys are). The default: at R = 0.01 its mean MAE against
    /// plain K-LRU is below SHARDS-adj's and the regression estimator's on every shared
    /// trace, both on the sample the tools use and on average over 20 hash salts
    /// (arc_p3 .0029 against .0092 and .0047; BENCHMARKS.md).
    #[default]
    Distinct,
}

impl SampleAdjust {
    /// Every estimator, the default first.
    pub const ALL: [SampleAdjust; 4] = [
        SampleAdjust::Distinct,
        SampleAdjust::Shards,
        SampleAdjust::Regression,
        SampleAdjust::None,
    ];

    /// The estimator's name (`augur mrc --sample-adjust`, `tenant-sample-adjust`).
    pub fn name(self) -> &'static str {
        match self {
            SampleAdjust::Distinct => "distinct",
            SampleAdjust::Shards => "shards",
            SampleAdjust::Regression => "regression",
            SampleAdjust::None => "none",
        }
    }

    /// The estimator named `name` (any case).
    pub fn from_name(name: &str) -> Option<SampleAdjust> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }
}

/// Configuration of a [`Krr`] model.
#[derive(Debug, Clone, PartialEq)]
pub struct KrrConfig {
    /// The sampling sizes K to model, one stack each.
    pub ks: Vec<u32>,
    /// `Some(e)` runs each stack with `K' = K^e` (§3.1: "K' ≈ K^1.4 yields a very
    /// accurate approximation"; our calibrations are [`Krr::KLRU_K_EXPONENT`], the
    /// default, and [`Krr::REDIS_K_EXPONENT`]); `None` uses K itself.
    pub k_exponent: Option<f64>,
    /// Spatial sampling rate R in (0, 1] (§2.7); 1 tracks every key.
    pub rate: f64,
    /// Object-count distances, or byte distances through the sizeArray (Alg. 2).
    pub unit: SizeUnit,
    /// Base b of the sizeArray (§3.3): boundaries at positions 1, b, b^2, ...; a smaller
    /// base means more partial sums and less interpolation. At least 1.01.
    pub size_base: f64,
    /// Backward (Alg. 1) or linear update.
    pub update: UpdateMethod,
    /// Seed of the model's random number generator.
    pub seed: u64,
    /// Bucket bound of each distance histogram (see [`DistanceHistogram`]).
    pub max_buckets: usize,
    /// Under spatial sampling, how sampled misses become miss ratios ([`SampleAdjust`]).
    /// The kRedis paper takes its sampling from SHARDS (§2.7); without an adjustment a
    /// few hot keys in or out of the sample shift the whole curve (measured: MAE
    /// 0.04-0.07 at R = 0.01 on arc_oltp and scarab-recs, against 0.01 or less with
    /// SHARDS-adj).
    pub adjust: SampleAdjust,
}

impl Default for KrrConfig {
    fn default() -> Self {
        Self {
            ks: vec![1, 2, 4, 8, 16],
            k_exponent: Some(Krr::KLRU_K_EXPONENT),
            rate: 1.0,
            unit: SizeUnit::Objects,
            size_base: 2.0,
            update: UpdateMethod::Backward,
            seed: 0x6b72_7221,
            max_buckets: 1 << 16,
            adjust: SampleAdjust::default(),
        }
    }
}

/// A uniform draw in (0, 1] with 53 random bits (Alg. 1 line 6 needs r > 0 so that
/// `ceil(r^(1/K) (i-1)) >= 1`).
#[inline]
fn unit_open0<R: RngCore>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One KRR stack for one K, with its sizeArray and distance histogram. Positions are
/// 1-based in the documentation (stack top = 1) and stored 0-based.
#[derive(Debug, Clone)]
pub struct KrrStack {
    k: u32,
    k_eff: f64,
    inv_k: f64,
    /// Object id at each position.
    stack: Vec<u32>,
    /// Position (0-based) of each id, [`ABSENT`] if not on this stack.
    pos: Vec<u32>,
    /// Whether distances are bytes (maintain `bounds`/`sigma`).
    bytes: bool,
    /// sizeArray boundaries: strictly increasing 1-based positions 1, ~b, ~b^2, ...; the
    /// last one is always >= the stack length.
    bounds: Vec<u32>,
    /// Σ_j: total size of positions `1..=min(bounds[j], len)`.
    sigma: Vec<u64>,
    base: f64,
    total_bytes: u64,
    hist: DistanceHistogram,
    /// The same distances, each weighted by its key's reference count so far
    /// ([`SampleAdjust::Regression`]); empty unless that estimator is on.
    weighted: DistanceHistogram,
    swaps: u64,
}

impl KrrStack {
    /// An empty stack modelling K-LRU with sampling size `k`, updated with
    /// `K' = k^exponent` (or `k` if `exponent` is `None`).
    pub fn new(
        k: u32,
        exponent: Option<f64>,
        unit: SizeUnit,
        size_base: f64,
        max_buckets: usize,
    ) -> Self {
        let k = k.max(1);
        let k_eff = match exponent {
            Some(e) => f64::from(k).powf(e),
            None => f64::from(k),
        };
        Self {
            k,
            k_eff,
            inv_k: 1.0 / k_eff,
            stack: Vec::new(),
            pos: Vec::new(),
            bytes: unit == SizeUnit::Bytes,
            bounds: vec![1],
            sigma: vec![0],
            base: size_base.max(1.01),
            total_bytes: 0,
            hist: DistanceHistogram::new(max_buckets),
            weighted: DistanceHistogram::new(max_buckets),
            swaps: 0,
        }
    }

    /// The K this stack models.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The K' its updates use.
    pub fn k_effective(&self) -> f64 {
        self.k_eff
    }

    /// Number of objects on the stack.
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// The unscaled distance histogram (in the stack's unit).
    pub fn histogram(&self) -> &DistanceHistogram {
        &self.hist
    }

    /// Total swap positions moved so far (the β of §3.2, summed over updates).
    pub fn swaps(&self) -> u64 {
        self.swaps
    }

    /// The object ids from stack top to bottom.
    pub fn order(&self) -> &[u32] {
        &self.stack
    }

    /// 1-based position of `id`, if on the stack.
    pub fn position(&self, id: u32) -> Option<usize> {
        match self.pos.get(id as usize) {
            Some(&p) if p != ABSENT => Some(p as usize + 1),
            _ => None,
        }
    }

    /// Heap bytes held by this stack.
    pub fn memory_bytes(&self) -> usize {
        self.stack.capacity() * 4
            + self.pos.capacity() * 4
            + self.bounds.capacity() * 4
            + self.sigma.capacity() * 8
            + self.hist.counts().len() * 8
            + self.weighted.counts().len() * 8
    }

    /// Byte-level stack distance of position `phi` (1-based) by Alg. 2: the partial sum
    /// Σ at the largest boundary `b^index <= phi`, plus a linear interpolation towards the
    /// next boundary. Refinement over the paper's listing: when the next boundary lies
    /// past the stack bottom its Σ only covers the stack, so we interpolate towards the
    /// stack length instead of `b^(index+1)`, which would underestimate.
    pub fn byte_distance(&self, phi: usize) -> u64 {
        let index = self.bounds.partition_point(|&b| b as usize <= phi) - 1;
        let sd_low = self.bounds[index] as usize;
        if sd_low < phi {
            let sd_high = (self.bounds[index + 1] as usize).min(self.stack.len());
            let span = self.sigma[index + 1] - self.sigma[index];
            let frac = (phi - sd_low) as f64 / (sd_high - sd_low) as f64;
            self.sigma[index] + (span as f64 * frac).round() as u64
        } else {
            self.sigma[index]
        }
    }

    /// Exact byte distance of position `phi`: the sum of the sizes of positions
    /// `1..=phi`. O(φ); for tests of Alg. 2.
    pub fn exact_byte_distance(&self, phi: usize, sizes: &[u32]) -> u64 {
        self.stack[..phi]
            .iter()
            .map(|&id| u64::from(sizes[id as usize]))
            .sum()
    }

    /// A reference to object `id`, whose size was `old_size` and is now
    /// `sizes[id]`: records its distance (or a cold miss), then moves it to the top with
    /// `method`.
    pub fn reference<R: RngCore>(
        &mut self,
        id: u32,
        old_size: u32,
        sizes: &[u32],
        method: UpdateMethod,
        rng: &mut R,
    ) {
        self.reference_weighted(id, old_size, sizes, method, rng, 0);
    }

    /// As [`Self::reference`], also recording the distance with weight `weight` in the
    /// weighted histogram of [`SampleAdjust::Regression`] (nothing if 0).
    pub fn reference_weighted<R: RngCore>(
        &mut self,
        id: u32,
        old_size: u32,
        sizes: &[u32],
        method: UpdateMethod,
        rng: &mut R,
        weight: u64,
    ) {
        let new_size = sizes[id as usize];
        let phi = match self.position(id) {
            Some(phi) => {
                let d = if self.bytes {
                    self.byte_distance(phi)
                } else {
                    phi as u64
                };
                self.hist.record(d);
                if weight > 0 {
                    self.weighted.record_n(d, weight);
                }
                if self.bytes && old_size != new_size {
                    // A size update: every partial sum covering φ changes.
                    let delta = i64::from(new_size) - i64::from(old_size);
                    let from = self.bounds.partition_point(|&b| (b as usize) < phi);
                    for s in &mut self.sigma[from..] {
                        *s = s.wrapping_add(delta as u64);
                    }
                    self.total_bytes = self.total_bytes.wrapping_add(delta as u64);
                }
                phi
            }
            None => {
                self.hist.record_cold();
                if weight > 0 {
                    self.weighted.record_cold_n(weight);
                }
                self.push_bottom(id, new_size);
                self.stack.len()
            }
        };
        match method {
            UpdateMethod::Backward => self.update_backward(phi, sizes, rng),
            UpdateMethod::Linear => self.update_linear(phi, sizes, rng),
        }
    }

    /// A first reference enters at the stack bottom, φ = γ (§2.1), and is then moved up
    /// like any other reference.
    fn push_bottom(&mut self, id: u32, size: u32) {
        if self.pos.len() <= id as usize {
            self.pos.resize(id as usize + 1, ABSENT);
        }
        self.pos[id as usize] = self.stack.len() as u32;
        self.stack.push(id);
        if self.bytes {
            let len = self.stack.len();
            self.total_bytes += u64::from(size);
            let from = self.bounds.partition_point(|&b| (b as usize) < len);
            for s in &mut self.sigma[from..] {
                *s += u64::from(size);
            }
            self.extend_bounds();
        }
    }

    /// Adds sizeArray boundaries until the last one covers the whole stack; a new
    /// boundary past the bottom holds the stack total.
    fn extend_bounds(&mut self) {
        while (*self.bounds.last().expect("bounds start at [1]") as usize) < self.stack.len() {
            let last = *self.bounds.last().expect("non-empty");
            let next = ((f64::from(last) * self.base).round() as u32).max(last + 1);
            self.bounds.push(next);
            self.sigma.push(self.total_bytes);
        }
    }

    /// Draws the next swap position above `i` (1-based, `i >= 2`): the object a K-LRU
    /// cache of size `i - 1` evicts, by inverting the CDF `(x/(i-1))^K` of Eq. 3
    /// (Alg. 1 line 7).
    ///
    /// Positions are `i64` and `ceil` is a truncation plus one: this draw is a serial
    /// chain from one swap position to the next, and on baseline x86-64 (no `roundsd`)
    /// `f64::ceil` is a libm call and a `usize` conversion a branchy sequence; with signed
    /// conversions the update took 7.4 instead of 10.1 µs a reference (K = 1, 2, 4, 8, 10k
    /// keys, `examples/krr_online_speed.rs`). A table-driven `r^(1/K)` in place of
    /// libm's `ln` and `exp` (44 % of the instructions under callgrind) was measured too
    /// and was only 4 % faster, so the chain's latency, not the instruction count, is
    /// the cost; not kept. `trunc(v) + 1` differs from `ceil(v)` only at integer `v`.
    #[inline]
    fn draw_swap<R: RngCore>(&self, i: i64, rng: &mut R) -> i64 {
        let r = unit_open0(rng);
        let q = if self.k_eff == 1.0 {
            r
        } else {
            (r.ln() * self.inv_k).exp()
        };
        ((q * (i - 1) as f64) as i64 + 1).min(i - 1)
    }

    /// Alg. 1, backward stack update: starting at the referenced position φ, repeatedly
    /// draw the next swap position `x` above `i`, move `S(x)` down to `i`, continue
    /// from `x`; finally put the referenced object on top. Only swap positions are
    /// touched. In byte mode, Σ_j for every boundary `x <= b^j < i` crossed by a move
    /// loses the moved object and gains the referenced one (which leaves position φ
    /// below every such boundary for position 1 above it); each boundary below φ is
    /// crossed exactly once, so the sizeArray costs O(log_b φ) extra (§3.3).
    pub fn update_backward<R: RngCore>(&mut self, phi: usize, sizes: &[u32], rng: &mut R) {
        let obj = self.stack[phi - 1];
        let obj_size = i64::from(sizes[obj as usize]);
        // Highest boundary strictly above... i.e. numerically below φ (b^j < φ).
        let mut j = self.bounds.partition_point(|&b| (b as usize) < phi) as isize - 1;
        let mut i = phi as i64;
        let mut swaps = 0u64;
        while i > 1 {
            let x = self.draw_swap(i, rng);
            let (xu, iu) = (x as usize, i as usize);
            let moving = self.stack[xu - 1];
            self.stack[iu - 1] = moving;
            self.pos[moving as usize] = (iu - 1) as u32;
            if self.bytes {
                let delta = obj_size - i64::from(sizes[moving as usize]);
                while j >= 0 && self.bounds[j as usize] as usize >= xu {
                    let s = &mut self.sigma[j as usize];
                    *s = s.wrapping_add(delta as u64);
                    j -= 1;
                }
            }
            swaps += 1;
            i = x;
        }
        self.swaps += swaps;
        self.stack[0] = obj;
        self.pos[obj as usize] = 0;
    }

    /// Mattson's linear update with KRR's `maxPriority` (Eq. 2): the object evicted from
    /// a cache of size 1 is `S(1)`; scanning down positions `2..φ-1`, `S(i)` stays with
    /// probability `((i-1)/i)^K`, else it is swapped with the object carried down; the
    /// carried object lands at φ and the referenced one on top. O(φ) coins, plus an
    /// O(M) rebuild of the sizeArray in byte mode: this is the test reference for
    /// [`Self::update_backward`], not a production path.
    pub fn update_linear<R: RngCore>(&mut self, phi: usize, sizes: &[u32], rng: &mut R) {
        let obj = self.stack[phi - 1];
        if phi > 1 {
            let mut carried = self.stack[0];
            for i in 2..phi {
                let stay = ((i - 1) as f64 / i as f64).powf(self.k_eff);
                // random(0,1) < stay keeps S(i); unit_open0 is in (0,1], same law.
                if unit_open0(rng) >= stay {
                    let evicted = self.stack[i - 1];
                    self.stack[i - 1] = carried;
                    self.pos[carried as usize] = (i - 1) as u32;
                    carried = evicted;
                    self.swaps += 1;
                }
            }
            self.stack[phi - 1] = carried;
            self.pos[carried as usize] = (phi - 1) as u32;
            self.swaps += 1;
        }
        self.stack[0] = obj;
        self.pos[obj as usize] = 0;
        if self.bytes {
            self.rebuild_sigma(sizes);
        }
    }

    /// Recomputes every Σ_j from the stack, O(M).
    fn rebuild_sigma(&mut self, sizes: &[u32]) {
        let mut acc = 0u64;
        let mut p = 0usize;
        for (j, &b) in self.bounds.iter().enumerate() {
            let end = (b as usize).min(self.stack.len());
            while p < end {
                acc += u64::from(sizes[self.stack[p] as usize]);
                p += 1;
            }
            self.sigma[j] = acc;
        }
    }

    /// Removes `id` from the stack (a DELETE): the objects below move up one position,
    /// as a cache that lost an object. O(M - φ) memmove; deletes are rare next to
    /// references (the traces have none) and with spatial sampling M is small.
    pub fn remove(&mut self, id: u32, sizes: &[u32]) {
        let Some(phi) = self.position(id) else {
            return;
        };
        let size = u64::from(sizes[id as usize]);
        self.stack.remove(phi - 1);
        self.pos[id as usize] = ABSENT;
        for p in phi - 1..self.stack.len() {
            self.pos[self.stack[p] as usize] = p as u32;
        }
        if self.bytes {
            self.total_bytes -= size;
            let from = self.bounds.partition_point(|&b| (b as usize) < phi);
            for j in from..self.bounds.len() {
                let b = self.bounds[j] as usize;
                // The object now at b (shifted up from b + 1) entered the prefix.
                let entered = if b <= self.stack.len() {
                    u64::from(sizes[self.stack[b - 1] as usize])
                } else {
                    0
                };
                self.sigma[j] = self.sigma[j] + entered - size;
            }
        }
    }

    /// This stack's miss-ratio curve, distances scaled by `scale` (1/R), misses divided
    /// by `total` references (see [`DistanceHistogram::to_curve_with_total`]).
    pub fn curve(&self, unit: SizeUnit, scale: f64, total: f64) -> Curve {
        self.hist
            .to_curve_with_total("krr", Some(self.k), unit, scale, total)
    }

    /// This stack's curve by the regression estimator of [`SampleAdjust::Regression`]:
    /// distances scaled by `scale`, `expected` the expected number of sampled
    /// references `N * R`. Falls back to [`Self::curve`] when nothing was weighted.
    pub fn curve_regression(&self, unit: SizeUnit, scale: f64, expected: f64) -> Curve {
        let (h, w) = (&self.hist, &self.weighted);
        if w.total() == 0 || h.total() == 0 || expected <= 0.0 {
            return self.curve(unit, scale, expected);
        }
        debug_assert_eq!(h.width(), w.width());
        let sampled = h.total() as f64;
        let wtotal = w.total() as f64;
        let surplus = sampled - expected;
        let (mut hits, mut whits) = (0u64, 0u64);
        let mut points = Vec::with_capacity(h.counts().len().max(1));
        let n = h.counts().len().max(1);
        for i in 0..n {
            hits += h.counts().get(i).copied().unwrap_or(0);
            whits += w.counts().get(i).copied().unwrap_or(0);
            if !bucket_point_needed(&[h.counts(), w.counts()], i, n) {
                continue;
            }
            let misses = sampled - hits as f64;
            let b = (wtotal - whits as f64) / wtotal;
            points.push(Point {
                size: ((i as u64 + 1) * h.width()) as f64 * scale,
                miss_ratio: ((misses - b * surplus) / expected).clamp(0.0, 1.0),
            });
        }
        Curve::new("krr", Some(self.k), unit, points)
    }

    /// This stack's curve by [`SampleAdjust::Distinct`]: sampling rate `rate`, `total`
    /// references `N` of which `distinct` (`D`) were first references. Falls back to
    /// the regression estimator when nothing was weighted. Without `regression`, the
    /// estimator's linear part (`b' = 0`: the cold misses from `D`, the later ones scaled
    /// by 1/R), which differences exactly over a window of references (see
    /// [`Krr::window_curves`]); the regression term does not, as `b'` is estimated over
    /// everything since the model started.
    pub fn curve_distinct(
        &self,
        unit: SizeUnit,
        rate: f64,
        total: f64,
        distinct: f64,
        regression: bool,
    ) -> Curve {
        let (h, w) = (&self.hist, &self.weighted);
        let scale = 1.0 / rate;
        if w.total() == 0 || h.total() == 0 || total <= 0.0 {
            return self.curve_regression(unit, scale, total * rate);
        }
        let sampled = h.total() as f64;
        let cold = h.cold() as f64;
        // First references weigh 1 each (a key's count so far); the rest weigh more.
        let wtotal = w.total() as f64;
        let wsum_later = (wtotal - cold).max(0.0);
        let surplus_later = (sampled - cold) - (total - distinct).max(0.0) * rate;
        let (mut hits, mut whits) = (0u64, 0u64);
        let n = h.counts().len().max(1);
        let mut points = Vec::with_capacity(n);
        for i in 0..n {
            hits += h.counts().get(i).copied().unwrap_or(0);
            whits += w.counts().get(i).copied().unwrap_or(0);
            if !bucket_point_needed(&[h.counts(), w.counts()], i, n) {
                continue;
            }
            let later_misses = sampled - hits as f64 - cold;
            let b = if regression && wsum_later > 0.0 {
                ((wtotal - whits as f64 - cold) / wsum_later).clamp(0.0, 1.0)
            } else {
                0.0
            };
            points.push(Point {
                size: ((i as u64 + 1) * h.width()) as f64 * scale,
                miss_ratio: ((distinct + (later_misses - b * surplus_later) / rate) / total)
                    .clamp(0.0, 1.0),
            });
        }
        Curve::new("krr", Some(self.k), unit, points)
    }
}

/// The whole stream's distinct-key count, for [`SampleAdjust::Distinct`].
#[derive(Debug, Clone)]
enum DistinctKeys {
    /// Counted by the model over every key [`MrcModel::access`] sees (offline).
    Sketch(DistinctCounter),
    /// Counted by the caller, which passes only the sampled keys ([`Krr::set_distinct_keys`]).
    Given(f64),
}

/// The KRR model: one [`KrrStack`] per K over a spatially sampled reference stream.
#[derive(Debug, Clone)]
pub struct Krr {
    cfg: KrrConfig,
    sampler: SpatialSampler,
    ids: KeyMap<u32>,
    sizes: Vec<u32>,
    /// References so far per id ([`SampleAdjust::Regression`] only; else empty).
    refs: Vec<u32>,
    free_ids: Vec<u32>,
    stacks: Vec<KrrStack>,
    rng: SmallRng,
    references: u64,
    sampled: u64,
    /// Where [`SampleAdjust::Distinct`]'s `D` comes from (None for the others).
    distinct: Option<DistinctKeys>,
}

impl Krr {
    /// The exponent of the paper's `K' = K^1.4` correction (§3.1).
    pub const PAPER_K_EXPONENT: f64 = 1.4;
    /// `K' = K^1.6`: the exponent calibrated against plain K-LRU (the paper's Eq. 1),
    /// the smallest worst-trace MAE of 1.4-1.7 on the shared traces (module docs).
    pub const KLRU_K_EXPONENT: f64 = 1.6;
    /// `K' = K^2.0`: the exponent calibrated against Redis's pooled K-LRU (what
    /// `allkeys-lru` in Redis and in Augur's store does), best of 1.7-2.2.
    pub const REDIS_K_EXPONENT: f64 = 2.0;

    /// A model with configuration `cfg`.
    pub fn new(cfg: KrrConfig) -> Self {
        let sampler = SpatialSampler::new(cfg.rate);
        // At R = 1 the estimator is the plain ratio ([`Krr::estimator`]): no sketch.
        let distinct = (cfg.adjust == SampleAdjust::Distinct && !sampler.is_full())
            .then(|| DistinctKeys::Sketch(DistinctCounter::new()));
        let stacks = cfg
            .ks
            .iter()
            .map(|&k| KrrStack::new(k, cfg.k_exponent, cfg.unit, cfg.size_base, cfg.max_buckets))
            .collect();
        Self {
            rng: SmallRng::seed_from_u64(cfg.seed),
            cfg,
            sampler,
            ids: KeyMap::default(),
            sizes: Vec::new(),
            refs: Vec::new(),
            free_ids: Vec::new(),
            stacks,
            references: 0,
            sampled: 0,
            distinct,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &KrrConfig {
        &self.cfg
    }

    /// The effective sampling rate `T/P`.
    pub fn rate(&self) -> f64 {
        self.sampler.rate()
    }

    /// The stacks, in the order of `config().ks`.
    pub fn stacks(&self) -> &[KrrStack] {
        &self.stacks
    }

    /// References seen and references in the spatial sample.
    pub fn counts(&self) -> (u64, u64) {
        (self.references, self.sampled)
    }

    /// The estimator [`MrcModel::curves`] uses: `config().adjust`, or
    /// [`SampleAdjust::None`] at R = 1 (nothing sampled away: misses over references).
    pub fn estimator(&self) -> SampleAdjust {
        if self.sampler.is_full() {
            SampleAdjust::None
        } else {
            self.cfg.adjust
        }
    }

    /// Number of tracked (sampled, live) objects.
    pub fn tracked_objects(&self) -> usize {
        self.ids.len()
    }

    /// Approximate heap bytes held: hash map, sizes and every stack.
    pub fn memory_bytes(&self) -> usize {
        let map = self.ids.capacity() * (1 + std::mem::size_of::<(u64, u32)>());
        map + self.sizes.capacity() * 4
            + self.refs.capacity() * 4
            + self.free_ids.capacity() * 4
            + match &self.distinct {
                Some(DistinctKeys::Sketch(sketch)) => sketch.memory_bytes(),
                _ => 0,
            }
            + self
                .stacks
                .iter()
                .map(KrrStack::memory_bytes)
                .sum::<usize>()
    }

    /// Counts `n` references to keys outside the spatial sample that were not passed to
    /// [`MrcModel::access`]: an online caller that filters on the request path (the
    /// server hands over sampled keys only) tells the model how many it skipped, so
    /// every [`SampleAdjust`] sees the whole stream's `N` (SHARDS-adj and the
    /// regression estimator use `N * R`) and draws the same curves as offline.
    pub fn add_unsampled_references(&mut self, n: u64) {
        self.references += n;
    }

    /// The whole stream's distinct-key count so far, for [`SampleAdjust::Distinct`]
    /// (an online caller that passes only sampled keys to [`MrcModel::access`] counts
    /// the others itself, with the same sketch, so that its curves equal the offline
    /// ones). The model's own sketch, which would see the sampled keys only, goes.
    pub fn set_distinct_keys(&mut self, d: f64) {
        self.distinct = Some(DistinctKeys::Given(d));
    }

    /// Curves to difference for a window of references: the curve of the references
    /// between two moments is `(c_2(s) N_2 - c_1(s) N_1) / (N_2 - N_1)` of these. None
    /// when they are [`MrcModel::curves`] themselves: all estimators but
    /// [`SampleAdjust::Distinct`], whose regression term is fitted over the whole stream
    /// so far and does not difference (a change of `b'` between the two moments would
    /// multiply the whole earlier surplus): there, its linear part.
    pub fn window_curves(&self) -> Option<Vec<Curve>> {
        self.curves_by(false)
    }

    /// The distinct-key count [`SampleAdjust::Distinct`] uses.
    pub fn distinct_keys(&self) -> Option<f64> {
        match &self.distinct {
            Some(DistinctKeys::Sketch(sketch)) => Some(sketch.estimate()),
            Some(DistinctKeys::Given(d)) => Some(*d),
            None => None,
        }
    }

    /// Every stack's [`KrrStack::curve_distinct`] (with or without its regression
    /// term), when the estimator is [`SampleAdjust::Distinct`] and `D` is known.
    fn curves_by(&self, regression: bool) -> Option<Vec<Curve>> {
        if self.estimator() != SampleAdjust::Distinct {
            return None;
        }
        let d = self.distinct_keys()?;
        let (rate, total) = (self.sampler.rate(), self.references as f64);
        Some(
            self.stacks
                .iter()
                .map(|s| s.curve_distinct(self.cfg.unit, rate, total, d, regression))
                .collect(),
        )
    }
}

impl MrcModel for Krr {
    #[inline]
    fn access(&mut self, key: u64, size: u32) {
        self.references += 1;
        if let Some(DistinctKeys::Sketch(sketch)) = &self.distinct {
            // One hash for the sketch and the sampler.
            let mixed = crate::mix64(key);
            sketch.observe(mixed);
            if !self.sampler.sampled_hash(mixed) {
                return;
            }
        } else if !self.sampler.sampled(key) {
            return;
        }
        self.sampled += 1;
        let next_id = self
            .free_ids
            .last()
            .copied()
            .unwrap_or(self.sizes.len() as u32);
        let id = *self.ids.entry(key).or_insert(next_id);
        let old_size = if id == next_id {
            if self.free_ids.pop().is_none() {
                self.sizes.push(size);
            }
            size
        } else {
            self.sizes[id as usize]
        };
        self.sizes[id as usize] = size;
        let weight = if matches!(
            self.estimator(),
            SampleAdjust::Regression | SampleAdjust::Distinct
        ) {
            let i = id as usize;
            if self.refs.len() <= i {
                self.refs.resize(i + 1, 0);
            }
            // A new key (or a reused id) starts at 1.
            self.refs[i] = if id == next_id {
                1
            } else {
                self.refs[i].saturating_add(1)
            };
            u64::from(self.refs[i])
        } else {
            0
        };
        for st in &mut self.stacks {
            st.reference_weighted(
                id,
                old_size,
                &self.sizes,
                self.cfg.update,
                &mut self.rng,
                weight,
            );
        }
    }

    fn delete(&mut self, key: u64) {
        if !self.sampler.sampled(key) {
            return;
        }
        if let Some(id) = self.ids.remove(&key) {
            for st in &mut self.stacks {
                st.remove(id, &self.sizes);
            }
            self.free_ids.push(id);
        }
    }

    fn curves(&self) -> Vec<Curve> {
        if let Some(curves) = self.curves_by(true) {
            return curves;
        }
        let rate = self.sampler.rate();
        let expected = self.references as f64 * rate;
        let unit = self.cfg.unit;
        self.stacks
            .iter()
            .map(|s| match self.estimator() {
                SampleAdjust::None => s.curve(unit, 1.0 / rate, self.sampled as f64),
                SampleAdjust::Shards => s.curve(unit, 1.0 / rate, expected),
                // Distinct without a count of D yet.
                SampleAdjust::Regression | SampleAdjust::Distinct => {
                    s.curve_regression(unit, 1.0 / rate, expected)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack_of(k: u32, unit: SizeUnit, n: u32, sizes: &mut Vec<u32>) -> KrrStack {
        let mut st = KrrStack::new(k, None, unit, 2.0, 1 << 16);
        let mut rng = SmallRng::seed_from_u64(1);
        for id in 0..n {
            sizes.push(1 + (id * 37) % 100);
            st.reference(
                id,
                sizes[id as usize],
                sizes,
                UpdateMethod::Backward,
                &mut rng,
            );
        }
        st
    }

    #[test]
    fn backward_update_is_a_permutation_with_the_referenced_object_on_top() {
        let mut sizes = Vec::new();
        let mut st = stack_of(4, SizeUnit::Bytes, 500, &mut sizes);
        let mut rng = SmallRng::seed_from_u64(2);
        for r in 0..5_000u32 {
            let id = (r * 7919) % 500;
            let old = sizes[id as usize];
            sizes[id as usize] = 1 + (r % 300);
            st.reference(id, old, &sizes, UpdateMethod::Backward, &mut rng);
            assert_eq!(st.order()[0], id);
        }
        let mut seen = st.order().to_vec();
        seen.sort_unstable();
        assert_eq!(seen, (0..500).collect::<Vec<_>>());
        for (p, &id) in st.order().iter().enumerate() {
            assert_eq!(st.position(id), Some(p + 1));
        }
        // Every partial sum kept incrementally equals the exact prefix sum.
        for (j, &b) in st.bounds.iter().enumerate() {
            let end = (b as usize).min(st.len());
            assert_eq!(
                st.sigma[j],
                st.exact_byte_distance(end, &sizes),
                "boundary {b}"
            );
        }
    }

    #[test]
    fn byte_distance_is_exact_at_boundaries_and_interpolates_between() {
        let mut sizes = Vec::new();
        let st = stack_of(2, SizeUnit::Bytes, 300, &mut sizes);
        for phi in [1usize, 2, 4, 64, 256] {
            assert_eq!(st.byte_distance(phi), st.exact_byte_distance(phi, &sizes));
        }
        // Between boundaries 64 and 128 the estimate lies between the two partial sums.
        let lo = st.exact_byte_distance(64, &sizes);
        let hi = st.exact_byte_distance(128, &sizes);
        let mid = st.byte_distance(96);
        assert!(lo < mid && mid < hi, "{lo} {mid} {hi}");
        // Past the last power of two, interpolation runs to the stack bottom.
        assert_eq!(st.byte_distance(300), st.exact_byte_distance(300, &sizes));
    }

    #[test]
    fn remove_shifts_up_and_keeps_partial_sums() {
        let mut sizes = Vec::new();
        let mut st = stack_of(1, SizeUnit::Bytes, 100, &mut sizes);
        let victim = st.order()[10];
        let below = st.order()[11];
        st.remove(victim, &sizes);
        assert_eq!(st.len(), 99);
        assert_eq!(st.position(victim), None);
        assert_eq!(st.position(below), Some(11));
        for (j, &b) in st.bounds.iter().enumerate() {
            let end = (b as usize).min(st.len());
            assert_eq!(st.sigma[j], st.exact_byte_distance(end, &sizes));
        }
    }

    #[test]
    fn k_one_backward_swap_count_is_harmonic() {
        // For K = 1 the swap positions are D-RAND's (§3.2): E[#swaps | φ] = H(φ-1).
        let mut sizes = Vec::new();
        let mut st = stack_of(1, SizeUnit::Objects, 1000, &mut sizes);
        let mut rng = SmallRng::seed_from_u64(9);
        let before = st.swaps();
        let n = 20_000u64;
        for _ in 0..n {
            st.update_backward(1000, &sizes, &mut rng);
        }
        let mean = (st.swaps() - before) as f64 / n as f64;
        let harmonic: f64 = (1..1000).map(|i| 1.0 / i as f64).sum();
        // sd of the count is < sqrt(H) ~ 2.7; the mean of 20k has sd < 0.02.
        assert!((mean - harmonic).abs() < 0.1, "mean {mean} vs H {harmonic}");
    }

    #[test]
    fn correction_exponent_sets_k_effective() {
        let m = Krr::new(KrrConfig::default());
        let ke: Vec<f64> = m.stacks().iter().map(KrrStack::k_effective).collect();
        assert!((ke[1] - 2f64.powf(1.6)).abs() < 1e-12);
        assert!((ke[4] - 16f64.powf(1.6)).abs() < 1e-9);
        let m = Krr::new(KrrConfig {
            k_exponent: None,
            ..KrrConfig::default()
        });
        assert_eq!(m.stacks()[4].k_effective(), 16.0);
    }

    /// A skewed stream over `keys` keys: key `i` with probability ~ 1/(i+1) (a
    /// deterministic LCG), so the sample has hot keys and a surplus or deficit of
    /// sampled references.
    fn zipf_stream(keys: u64, n: usize) -> Vec<u64> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let ln = (keys as f64).ln();
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                ((u * ln).exp() as u64 - 1).min(keys - 1)
            })
            .collect()
    }

    fn sampled_cfg(adjust: SampleAdjust) -> KrrConfig {
        KrrConfig {
            ks: vec![1, 4],
            rate: 0.05,
            adjust,
            ..KrrConfig::default()
        }
    }

    #[test]
    fn unsampled_references_counted_in_bulk_give_the_offline_curves() {
        // The online profiler feeds only sampled keys and adds the others' count per
        // interval: every estimator must then draw the same curves as a model that saw
        // the whole stream (N and N_s are all the estimators use of the stream).
        // The distinct-key estimator also needs D: the online caller counts every key in
        // its own sketch (the store's, shared by the request threads) and hands over
        // the estimate.
        let stream = zipf_stream(40_000, 60_000);
        let sampler = SpatialSampler::new(0.05);
        for adjust in [
            SampleAdjust::None,
            SampleAdjust::Shards,
            SampleAdjust::Regression,
            SampleAdjust::Distinct,
        ] {
            let mut offline = Krr::new(sampled_cfg(adjust));
            let mut online = Krr::new(sampled_cfg(adjust));
            let sketch = augur_sim::distinct::DistinctCounter::new();
            let mut skipped = 0;
            for (i, &key) in stream.iter().enumerate() {
                offline.access(key, 1);
                sketch.observe(crate::mix64(key));
                if sampler.sampled(key) {
                    online.access(key, 1);
                } else {
                    skipped += 1;
                }
                if i % 7_919 == 0 {
                    online.add_unsampled_references(skipped);
                    skipped = 0;
                }
            }
            online.add_unsampled_references(skipped);
            online.set_distinct_keys(sketch.estimate());
            assert_eq!(online.counts(), offline.counts(), "{adjust:?}");
            assert_eq!(online.estimator(), offline.estimator());
            assert_eq!(online.curves(), offline.curves(), "{adjust:?}");
        }
    }

    #[test]
    fn regression_differs_from_shards_adj_only_under_sampling() {
        let stream = zipf_stream(40_000, 60_000);
        let curves = |rate, adjust| {
            let mut m = Krr::new(KrrConfig {
                rate,
                ..sampled_cfg(adjust)
            });
            for &key in &stream {
                m.access(key, 1);
            }
            (m.estimator(), m.curves())
        };
        let (used, regression) = curves(0.05, SampleAdjust::Regression);
        assert_eq!(used, SampleAdjust::Regression);
        assert_ne!(regression, curves(0.05, SampleAdjust::Shards).1);
        // At R = 1 nothing is estimated: every adjustment is misses over references.
        let (used, full) = curves(1.0, SampleAdjust::Regression);
        assert_eq!(used, SampleAdjust::None);
        assert_eq!(full, curves(1.0, SampleAdjust::Shards).1);
    }
}
