//! LHD, least hit density (Beckmann, Chen & Cidon, NSDI'18, `lhd-least-hit-density.txt`):
//! the ranking model ([`LhdModel`], shared by the simulator and, through [`LhdTag`], any
//! store that keeps a tag per entry) and an exact-capacity simulator ([`LhdCache`]).
//!
//! # The model (§3)
//!
//! An object's *hit density* is its probability of hitting before it is evicted, divided
//! by the space-time it will still occupy: size × expected remaining lifetime (Eq. 2).
//! Both come from two age histograms, hits `H` and evictions `E`, where an object's *age*
//! is the number of accesses since it was last referenced (time is counted in accesses,
//! §3.3). For an object of age `a` in class `c` (Eq. 5, 6):
//!
//! ```text
//!                  Σ_{x>a} H_c[x]
//! density(a, c) = ------------------------------   (per unit of size)
//!                  Σ_{x>a} Σ_{y>=x} (H_c[y] + E_c[y])
//! ```
//!
//! The denominator is the expected remaining lifetime times P[L > a] (Eq. 4) written so
//! that one backward pass over the ages computes every `a` in linear time (§5, "two
//! passes over the ages"). Sizes divide the density at ranking time, so that big objects
//! that hit no more often than small ones go first (variable sizes, Fig. 5).
//!
//! **Classes (§3.4).** Objects are classified by the sum of their last two hit ages
//! (LHD's "last hit age" classes, 16 of them spaced at powers of two up to the maximum
//! age; a new object counts as having last hit at the maximum age) and by an application
//! id (the tenant, `app_classes` of them). Each class has its own histograms and ranks.
//!
//! **Reconfiguration (§5).** Every `reconfigure_every` accesses (default 2^20, the paper's
//! "every one million accesses"), the histograms decay by the EWMA factor (default 0.9)
//! and the density table is recomputed; between reconfigurations a rank is one table
//! lookup. In a server this runs off the request path; in the simulator it is inline.
//!
//! **Age coarsening (appendix A).** Ages are counted in units of `2^shift` accesses and
//! tracked up to `max_age` (20 000). With N cached objects and error tolerance ε (1 %),
//! the appendix bounds the loss by COARSENESS ≤ N·ε (Eq. 8) and MAX_AGE ≥ N/(COARSENESS·ε)
//! (Eq. 7). We take COARSENESS = N/(ε·MAX_AGE) rounded *up* to a power of two: then
//! Eq. 7 holds by construction and COARSENESS ≤ 2N/(ε·MAX_AGE) = N·ε·(2/(ε²·MAX_AGE)),
//! which is ≤ N·ε whenever MAX_AGE ≥ 2/ε² (Eq. 9 with a factor 2: 20 000 for ε = 1 %).
//! N is an EWMA of the cached-object count; the shift is set at the 5th and 25th
//! reconfiguration (when the cache has filled), and the histograms are stretched or
//! compressed to the new unit so that nothing learnt is lost. An object older than the
//! maximum age ranks lowest of all (it is evicted first) and is counted as an overflow.
//!
//! **Explorers (§3.5).** To escape local optima, a new or re-referenced object becomes an
//! *explorer* with probability 1/32 while explorers hold less than 1 % of the capacity; an
//! explorer ranks above every normal object until it overflows the maximum age, so the
//! model keeps seeing what happens at large ages.
//!
//! **Candidates (§4.1).** An eviction samples `associativity` cached objects uniformly
//! (default 64, the paper's RankCache value) and evicts the one of lowest density;
//! until the model's first reconfiguration, when it has learned nothing and ranks by a
//! placeholder table, at most [`UNLEARNED_SAMPLES`] (8). As in
//! the authors' simulator, the last few admitted objects whose density was already below
//! the recent victims' are added to the candidates, so that one-hit wonders are found
//! even when the sample misses them (the simulator admits every object; there is no
//! bypass).

use crate::key_index::KeyMap;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use crate::spec::Unit;
use crate::CacheSim;

/// LHD's parameters; the defaults are the paper's (§3.5, §4.1, §5, appendix A).
#[derive(Debug, Clone, PartialEq)]
pub struct LhdConfig {
    /// Objects sampled per eviction (RankCache: 64).
    pub associativity: usize,
    /// Recently admitted low-density objects kept as extra eviction candidates.
    pub admissions: usize,
    /// Classes by the sum of the last two hit ages (16).
    pub hit_age_classes: usize,
    /// Application (tenant) classes; an app id is taken modulo this (1 = no app classes).
    pub app_classes: usize,
    /// Ages tracked per class, in coarsened units (20 000).
    pub max_age: usize,
    /// Accesses between two reconfigurations (2^20).
    pub reconfigure_every: u64,
    /// Weight kept by the histograms at each reconfiguration (0.9).
    pub ewma_decay: f32,
    /// Share of the capacity explorers may hold (0.01).
    pub explorer_fraction: f64,
    /// An object becomes an explorer with probability 1 / this (32).
    pub explore_inverse_probability: u32,
    /// Error tolerance ε of the age coarsening (appendix A; 0.01).
    pub age_error: f64,
    /// The age coarsening shift until the first adaptation (5th reconfiguration; 10, as
    /// the authors' simulator). A model that sees a fraction r of a cache's accesses (a
    /// store's shard) starts at 10 + log₂ r, so that its ages span as much of its own
    /// traffic as the whole cache's model's do.
    pub initial_age_shift: u32,
    /// The age (in coarsened units) the last-hit-age classes are spaced from (0: the
    /// maximum age, as the paper). A model with fewer age bins than the simulator's
    /// (a store's shard) keeps the simulator's 20 000 here, so that an object of a
    /// given hit history lands in the same class in both.
    pub class_max_age: usize,
}

impl Default for LhdConfig {
    fn default() -> LhdConfig {
        LhdConfig {
            associativity: 64,
            admissions: 8,
            hit_age_classes: 16,
            app_classes: 1,
            max_age: 20_000,
            reconfigure_every: 1 << 20,
            ewma_decay: 0.9,
            explorer_fraction: 0.01,
            explore_inverse_probability: 32,
            age_error: 0.01,
            initial_age_shift: 10,
            class_max_age: 0,
        }
    }
}

/// The placeholder table's weight of hit-age class `class` (of `classes`, 0 = never or
/// seldom hit): before the first reconfiguration nothing has been measured, and an
/// object's density is `weight / (age + 1)`, GDSF-like: "younger, and of a more often hit
/// class, is better". The authors' simulator as libCacheSim runs it (`lhd.cpp`,
/// `hitDensities[a] = (c + 1) / (a + 1)` over *all* classes `c`, every request of its
/// application 1, so its classes are 16..31) weighs the classes 17..32: a mild preference,
/// the order mostly by age (near LRU). Weighing them 1..16 (the index within the app, as
/// we did before) let the class decide at up to 16x: on the 42 cells of the shared traces
/// it missed 1 point less on average than 17..32, but 11.7 points more on lirs_sprite at
/// 10 % (0.2562 against LRU's 0.1461; a frequency order ages out the working set there)
/// and 2.1 on lirs_cpp at 10 %; with 17..32 no cell is more than 0.0091 above libCacheSim's
/// LHD (BENCHMARKS.md, "The placeholder table"). A prior that can lose to LRU by 12
/// points is not one a cache should run before it has measured anything.
pub(crate) fn placeholder_weight(class: usize, classes: usize) -> f32 {
    (classes + class + 1) as f32
}

/// Candidates an eviction ranks while the model has learned nothing yet (before its
/// first reconfiguration, 2^20 accesses by default). Until then ranks come from the
/// placeholder table ([`placeholder_weight`], as the authors' simulator starts), and
/// ranking RankCache's 64 samples (§4.1) by a placeholder applies an arbitrary order
/// at full strength: on traces shorter than one interval (the LIRS traces,
/// cloudphysics) 64 samples missed up to 5.7 points more than 8 (lirs_multi1 at 50 %:
/// 0.4825 against 0.4257), and over the 42 cells of the shared traces at 10 / 25 / 50 %
/// ranking 8 until the first reconfiguration missed 0.34 points less on average (13
/// cells better by more than 0.1 point, 15 worse; with the earlier 1..16 placeholder
/// weights 0.5 points, BENCHMARKS.md). The authors' simulator (libCacheSim's `lhd.cpp`)
/// ranks 8 for its first 50 reconfigurations, a warm-up it calls a hack; we keep it only
/// while the model has not learned at all.
pub const UNLEARNED_SAMPLES: usize = 8;

/// Candidates an eviction ranks for a configured `associativity`: all of them once a
/// model has `learned` (reconfigured at least once), at most [`UNLEARNED_SAMPLES`]
/// before. For a ranking over several models (a store shard's tenants), `learned` when
/// any of them has.
pub fn samples(associativity: usize, learned: bool) -> usize {
    if learned {
        associativity
    } else {
        associativity.min(UNLEARNED_SAMPLES)
    }
}

/// Hits [`LhdModel::on_hit_batched`] defers before adding them to the histograms.
pub const HIT_BATCH: usize = 16;

/// What LHD keeps per cached object: 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LhdTag {
    /// The model's access count when the object was last referenced.
    pub timestamp: u64,
    /// Coarsened age at the last hit (0 for a new object).
    pub last_hit_age: u16,
    /// Coarsened age at the hit before (`max_age` for a new object).
    pub last_last_hit_age: u16,
    /// Application (tenant) class.
    pub app: u8,
    /// Never evicted before it overflows the maximum age (§3.5).
    pub explorer: bool,
}

/// [`LhdTag`] in 8 bytes, for a cache that keeps many and samples them at random
/// ([`LhdCache`]): what ranking and the next hit need, nothing else.
/// - `stamp`: the low 32 bits of the timestamp. Ages are exact while below 2^32 accesses;
///   the owner clamps stamps older than 2^31 accesses to that age at least once every
///   2^30 accesses ([`LhdCache`]), so no stamp wraps.
/// - `code`: the class (bits 0-14; it changes only on a hit, so it is computed then,
///   not at every ranking) and the explorer flag (bit 15).
/// - `last_hit_age`: the next hit's class is that of the sum of its age and this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)] // field offsets read by the AVX2 ranking (`lhd_avx2`)
pub struct CompactTag {
    pub stamp: u32,
    pub code: u16,
    pub last_hit_age: u16,
}

impl CompactTag {
    #[inline]
    fn class(self) -> usize {
        class_of_code(self.code)
    }

    #[inline]
    fn explorer(self) -> bool {
        explorer_of_code(self.code)
    }
}

/// The class a [`CompactTag`]'s `code` holds (its low 15 bits).
#[inline]
fn class_of_code(code: u16) -> usize {
    usize::from(code & 0x7fff)
}

/// Whether a [`CompactTag`]'s `code` marks an explorer (its top bit).
#[inline]
fn explorer_of_code(code: u16) -> bool {
    code & 0x8000 != 0
}

/// The model's clock, age coarsening and ages per class, as a [`CompactTag`] is aged
/// and located with them (also by the AVX2 ranking, `crate::lhd_avx2`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CompactClock {
    pub(crate) now: u32,
    pub(crate) shift: u32,
    pub(crate) max_age: usize,
}

impl CompactClock {
    /// Coarsened age of `tag`, capped at `max_age - 1`: exact while its true age is
    /// below 2^32 accesses (its owner clamps older stamps, see [`CompactTag`]).
    #[inline]
    fn age(self, tag: CompactTag) -> usize {
        let age = u64::from(self.now.wrapping_sub(tag.stamp)) >> self.shift;
        (age as usize).min(self.max_age - 1)
    }

    /// Where the density of `tag` is read: its entry of the density table,
    /// `class * max_age + age` (below 2^31: at most 4096 classes of 65535 ages).
    #[inline]
    fn entry(self, tag: CompactTag) -> usize {
        tag.class() * self.max_age + self.age(tag)
    }
}

/// The LHD ranking model: histograms, classes, the precomputed density table, the
/// coarsened clock and the explorer budget. It knows nothing of where objects live; the
/// cache that owns the objects calls [`LhdModel::on_insert`], [`LhdModel::on_hit`],
/// [`LhdModel::on_evict`] and [`LhdModel::on_remove`], ranks candidates with
/// [`LhdModel::rank`], and calls [`LhdModel::tick`] once per access.
#[derive(Debug, Clone)]
pub struct LhdModel {
    cfg: LhdConfig,
    /// Number of classes (hit-age classes × app classes).
    class_count: usize,
    /// The hit and eviction histograms (§3.3) of every class, age-major (`age *
    /// class_count + class`): the young ages of all classes, where most hits and
    /// evictions fall, share a few pages, so a short run touches (and faults in) a few
    /// pages of them, not one or two per class and histogram (up to 32 with 16 classes,
    /// each ~2 us to fault in on the VMs we measure on: lirs_cpp, 9,000 requests in
    /// ~0.8 ms, faulted in 20-40 fewer pages); the reconfiguration's backward pass walks
    /// the ages once, all classes together. Allocated zeroed (not written) so that
    /// untouched pages are never faulted in.
    hits: Vec<f32>,
    evictions: Vec<f32>,
    /// The bins of hits [`LhdModel::on_hit_batched`] counted and `hits` does not hold
    /// yet (at most [`HIT_BATCH`]; added before anything reads `hits`).
    pending_hits: Vec<u32>,
    /// Hit density per class and age, per unit of size (Eq. 6 without the size), one
    /// table for all classes (`class * max_age + age`): ranking a candidate is one
    /// load from it, with no class record to read first. The last age of every class
    /// (the overflow bin, "past the maximum age") holds `-inf`, so such an object ranks
    /// below everything without a test: `-inf` divided by a size or plus the explorer's
    /// 1 is still `-inf`, so such candidates tie as they did when a test returned one
    /// rank for all of them.
    density: Vec<f32>,
    /// [`LhdModel::hit_age_class`] of every last-hit-age sum (0 ..= 2 * max_age), so that
    /// ranking a candidate is two table lookups.
    class_by_sum: Vec<u8>,
    timestamp: u64,
    until_reconfigure: u64,
    reconfigurations: u64,
    shift: u32,
    ewma_objects: f64,
    ewma_mass: f64,
    explorer_budget: i64,
    /// The budget's full value (`capacity` × `explorer_fraction`).
    explorer_limit: i64,
    ewma_victim_density: f32,
    overflows: u64,
}

impl LhdModel {
    /// A model for a cache of `capacity` (in the cache's cost unit: objects or bytes).
    pub fn new(cfg: LhdConfig, capacity: u64) -> LhdModel {
        let cfg = LhdConfig {
            associativity: cfg.associativity.max(1),
            hit_age_classes: cfg.hit_age_classes.clamp(1, 16),
            app_classes: cfg.app_classes.clamp(1, 256),
            max_age: cfg.max_age.clamp(2, u16::MAX as usize),
            reconfigure_every: cfg.reconfigure_every.max(1),
            explore_inverse_probability: cfg.explore_inverse_probability.max(1),
            ..cfg
        };
        let n = cfg.hit_age_classes * cfg.app_classes;
        let (hits, evictions) = (vec![0.0; n * cfg.max_age], vec![0.0; n * cfg.max_age]);
        let mut density = Vec::with_capacity(n * cfg.max_age);
        for c in 0..n {
            let weight = placeholder_weight(c % cfg.hit_age_classes, cfg.hit_age_classes);
            density.extend((0..cfg.max_age - 1).map(|a| weight / (a + 1) as f32));
            density.push(f32::NEG_INFINITY);
        }
        let explorer_budget = (capacity as f64 * cfg.explorer_fraction) as i64;
        let initial_shift = cfg.initial_age_shift.min(40);
        // With a wider class scale, sums past the histograms' span are class 0 (where
        // a new object, whose sum is max_age, belongs).
        let scale = cfg.class_max_age.max(cfg.max_age);
        let class_by_sum = (0..=2 * cfg.max_age)
            .map(|sum| {
                if sum >= cfg.max_age && scale > cfg.max_age {
                    0
                } else {
                    hit_age_class(sum, scale, cfg.hit_age_classes) as u8
                }
            })
            .collect();
        LhdModel {
            pending_hits: Vec::with_capacity(HIT_BATCH),
            class_by_sum,
            until_reconfigure: cfg.reconfigure_every,
            cfg,
            class_count: n,
            hits,
            evictions,
            density,
            timestamp: 0,
            reconfigurations: 0,
            shift: initial_shift,
            ewma_objects: 0.0,
            ewma_mass: 0.0,
            explorer_budget,
            explorer_limit: explorer_budget,
            ewma_victim_density: 0.0,
            overflows: 0,
        }
    }

    pub fn config(&self) -> &LhdConfig {
        &self.cfg
    }

    /// Reconfigurations done so far.
    pub fn reconfigurations(&self) -> u64 {
        self.reconfigurations
    }

    /// How many sampled candidates an eviction ranks, for a configured `associativity`:
    /// all of them once the model has learned from a reconfiguration, at most
    /// [`UNLEARNED_SAMPLES`] before (see there).
    pub fn samples(&self, associativity: usize) -> usize {
        samples(associativity, self.reconfigurations > 0)
    }

    /// The age coarsening: ages count units of `2^shift` accesses.
    pub fn age_shift(&self) -> u32 {
        self.shift
    }

    /// Rankings that met an object older than the maximum age since the model was made.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Coarsened age of `tag`, capped at `max_age - 1`.
    fn age(&self, tag: &LhdTag) -> usize {
        let age = (self.timestamp.saturating_sub(tag.timestamp) >> self.shift) as usize;
        age.min(self.cfg.max_age - 1)
    }

    #[inline]
    fn class_of(&self, tag: &LhdTag) -> usize {
        let sum = tag.last_hit_age as usize + tag.last_last_hit_age as usize;
        // Tags made by `on_insert` hold an app id already below `app_classes`: no
        // division on the ranking path for them.
        let app = tag.app as usize;
        let app = if app < self.cfg.app_classes {
            app
        } else {
            app % self.cfg.app_classes
        };
        self.class_for(app, sum)
    }

    /// The class of app `app` (below `app_classes`) with last-two-hit-age sum `sum`.
    #[inline]
    fn class_for(&self, app: usize, sum: usize) -> usize {
        let by_hit_age = self.class_by_sum[sum.min(self.class_by_sum.len() - 1)] as usize;
        app * self.cfg.hit_age_classes + by_hit_age
    }

    /// Hit density of an object (higher is more worth keeping); `size` in the cache's
    /// cost unit. An object past the maximum age ranks below everything (`-inf`).
    pub fn rank(&self, tag: &LhdTag, size: u64) -> f32 {
        self.density_at(self.age(tag), self.class_of(tag), tag.explorer, size)
    }

    /// [`LhdModel::rank`] of an object of coarsened `age`, `class` and explorer flag.
    #[inline]
    fn density_at(&self, age: usize, class: usize, explorer: bool, size: u64) -> f32 {
        self.rank_at(class * self.cfg.max_age + age, explorer, size)
    }

    /// The rank read from entry `at` of the density table (`class * max_age + age`).
    #[inline]
    fn rank_at(&self, at: usize, explorer: bool, size: u64) -> f32 {
        // The last age holds -inf (see `density`): below every real density (>= 0).
        let density = self.density[at];
        // Objects mode ranks objects of size 1: no division (the same value).
        let density = if size <= 1 {
            density
        } else {
            density / size as f32
        };
        if explorer {
            density + 1.0
        } else {
            density
        }
    }

    /// The compact form of `tag` ([`CompactTag`]).
    pub fn compact(&self, tag: &LhdTag) -> CompactTag {
        CompactTag {
            stamp: tag.timestamp as u32,
            code: self.class_of(tag) as u16 | (u16::from(tag.explorer) << 15),
            last_hit_age: tag.last_hit_age,
        }
    }

    /// What ages a [`CompactTag`] now (copied out, so that a loop over many tags keeps
    /// it in registers).
    #[inline]
    fn clock(&self) -> CompactClock {
        CompactClock {
            now: self.timestamp as u32,
            shift: self.shift,
            max_age: self.cfg.max_age,
        }
    }

    /// Coarsened age of a [`CompactTag`] ([`CompactClock::age`]).
    #[inline]
    fn compact_age(&self, tag: CompactTag) -> usize {
        self.clock().age(tag)
    }

    /// [`LhdModel::rank`] of a [`CompactTag`]: the same density as the full tag's.
    #[inline]
    pub fn rank_compact(&self, tag: CompactTag, size: u64) -> f32 {
        self.rank_at(self.clock().entry(tag), tag.explorer(), size)
    }

    /// [`LhdModel::rank_compact`] of a tag [`LhdCache::locate`] located (the same
    /// value: `density_at` on the same entry).
    #[inline]
    fn rank_located(&self, located: u32, size: u64) -> f32 {
        self.rank_at((located & !(1 << 31)) as usize, located >> 31 != 0, size)
    }

    #[inline]
    fn prefetch_density(&self, class: usize, age: usize) {
        self.prefetch_density_entry(class * self.cfg.max_age + age);
    }

    /// Where [`LhdModel::rank_compact`] of `tag` reads its density now, and the
    /// model time until which it reads the same one (when the tag's age moves to the
    /// next bin; `u64::MAX` past the last): a rank stays valid that long, unless a
    /// reconfiguration ([`LhdModel::reconfigurations`]) rewrites the density table, so
    /// a caller that keeps ranks can tell when one must be read again.
    #[inline]
    pub fn density_entry(&self, tag: CompactTag) -> (usize, u64) {
        let clock = self.clock();
        let elapsed = u64::from(clock.now.wrapping_sub(tag.stamp));
        let age = elapsed >> clock.shift;
        let until = if age as usize >= clock.max_age - 1 {
            u64::MAX
        } else {
            self.timestamp + (((age + 1) << clock.shift) - elapsed)
        };
        (clock.entry(tag), until)
    }

    #[inline]
    pub fn prefetch_density_entry(&self, at: usize) {
        crate::prefetch::prefetch(self.density.as_ptr().wrapping_add(at));
    }

    /// [`LhdModel::rank_compact`] of `tag`, whose [`LhdModel::density_entry`] is `at`.
    #[inline]
    pub fn rank_compact_at(&self, at: usize, tag: CompactTag, size: u64) -> f32 {
        self.rank_at(at, tag.explorer(), size)
    }

    /// Prefetches what [`LhdModel::rank`] of `tag` will read (its entry of the density
    /// table, 16 classes x 20k ages x 4 bytes: bigger than L2), so that a caller ranking
    /// many sampled candidates overlaps their cache misses.
    #[inline]
    pub fn prefetch_rank(&self, tag: &LhdTag) {
        self.prefetch_density(self.class_of(tag), self.age(tag));
    }

    /// Starts fetching the eviction-histogram bin [`LhdModel::on_evict`] of `tag` will
    /// count into, for a caller with other work to do first (a store finds the victim's
    /// index position): the histograms of a store's many models outgrow L2, so the count
    /// is otherwise a cache miss of its own.
    #[inline]
    pub fn prefetch_eviction(&self, tag: &LhdTag) {
        let at = self.bin(self.age(tag), self.class_of(tag));
        crate::prefetch::prefetch(self.evictions.as_ptr().wrapping_add(at));
    }

    /// The histograms' bin of `age` in `class` (they are age-major, see `hits`).
    #[inline]
    fn bin(&self, age: usize, class: usize) -> usize {
        age * self.class_count + class
    }

    /// An explorer of `size` is gone or no longer one. The budget never grows past its
    /// limit (a store may lose track of an explorer, e.g. across a policy switch).
    fn return_explorer_budget(&mut self, size: u64) {
        self.explorer_budget = (self.explorer_budget + size as i64).min(self.explorer_limit);
    }

    /// The cache's capacity changed (a store's memory limit was reconfigured): explorers
    /// may hold `explorer_fraction` of the new one, those in place still counting.
    pub fn set_capacity(&mut self, capacity: u64) {
        let limit = (capacity as f64 * self.cfg.explorer_fraction) as i64;
        let in_use = self.explorer_limit - self.explorer_budget;
        self.explorer_limit = limit;
        self.explorer_budget = limit - in_use;
    }

    /// Whether a new or hit object becomes an explorer (§3.5): with probability
    /// 1 / `explore_inverse_probability` (one 32-bit draw x, taken when x · n < 2^32: exact
    /// for a power of two n such as the default 32, within 2^-32 otherwise; rand's
    /// `gen_range` rejected half its draws for n = 32 and ran the generator twice per hit)
    /// while the budget lasts.
    fn maybe_explorer(&mut self, size: u64, rng: &mut impl Rng) -> bool {
        let n = u64::from(self.cfg.explore_inverse_probability);
        let roll = (u64::from(rng.next_u32()) * n) >> 32 == 0;
        if roll && self.explorer_budget > 0 {
            self.explorer_budget -= size as i64;
            true
        } else {
            false
        }
    }

    /// A new object of `size` admitted now, of application `app`.
    pub fn on_insert(&mut self, app: u32, size: u64, rng: &mut impl Rng) -> LhdTag {
        let app = app as usize;
        // No division for an app id already in range (the simulator's 0).
        let app = if app < self.cfg.app_classes {
            app
        } else {
            app % self.cfg.app_classes
        };
        LhdTag {
            timestamp: self.timestamp,
            last_hit_age: 0,
            last_last_hit_age: self.cfg.max_age as u16,
            app: app as u8,
            explorer: self.maybe_explorer(size, rng),
        }
    }

    /// `compact(&on_insert(0, size, rng))` without the full tag: a new object of app 0
    /// is in the class of a last-hit-age sum of `max_age` (no hit yet).
    fn on_insert_compact(&mut self, size: u64, rng: &mut impl Rng) -> CompactTag {
        let explorer = self.maybe_explorer(size, rng);
        CompactTag {
            stamp: self.timestamp as u32,
            code: self.class_for(0, self.cfg.max_age) as u16 | (u16::from(explorer) << 15),
            last_hit_age: 0,
        }
    }

    /// [`LhdModel::looks_like_victim`] of a [`CompactTag`].
    fn looks_like_victim_compact(&self, tag: CompactTag, size: u64) -> bool {
        !tag.explorer() && self.rank_compact(tag, size) < self.ewma_victim_density
    }

    /// Whether a just-admitted object already ranks below the recent victims: worth
    /// keeping as an extra eviction candidate.
    pub fn looks_like_victim(&self, tag: &LhdTag, size: u64) -> bool {
        !tag.explorer && self.rank(tag, size) < self.ewma_victim_density
    }

    /// A hit on the object of `tag` (of `size`): counts the hit at its age in its class,
    /// then makes it young again.
    pub fn on_hit(&mut self, tag: &mut LhdTag, size: u64, rng: &mut impl Rng) {
        let age = self.age(tag);
        self.count_hit(age, self.class_of(tag), tag.explorer, size);
        self.renew_after_hit(tag, age, size, rng);
    }

    /// What a hit at coarsened `age` does to `tag` once it is counted: the hit ages
    /// shift, the clock restarts, the explorer roll is made again.
    fn renew_after_hit(&mut self, tag: &mut LhdTag, age: usize, size: u64, rng: &mut impl Rng) {
        tag.last_last_hit_age = tag.last_hit_age;
        tag.last_hit_age = age as u16;
        tag.timestamp = self.timestamp;
        tag.explorer = self.maybe_explorer(size, rng);
    }

    /// [`LhdModel::on_hit`] of a [`CompactTag`]. Its class after the hit comes from
    /// the sum of this hit's age and the last one's, as the full tag's would.
    pub fn on_hit_compact(&mut self, tag: &mut CompactTag, size: u64, rng: &mut impl Rng) {
        let age = self.compact_age(*tag);
        let class = tag.class();
        self.count_hit(age, class, tag.explorer(), size);
        let app = class / self.cfg.hit_age_classes;
        let next_class = self.class_for(app, age + usize::from(tag.last_hit_age));
        let explorer = self.maybe_explorer(size, rng);
        *tag = CompactTag {
            stamp: self.timestamp as u32,
            code: next_class as u16 | (u16::from(explorer) << 15),
            last_hit_age: age as u16,
        };
    }

    /// [`LhdModel::on_hit`] with the hit's count deferred: its histogram bin is noted
    /// and [`HIT_BATCH`] noted bins are added at once, all fetched first, so that their
    /// cache misses overlap. For a cache whose models' histograms outgrow L2 (a store's
    /// 64 shards' models: 4 MB of hit histograms) and whose hits have nothing else to
    /// overlap the count's miss with (a GET: the count was two thirds of
    /// `PartLhd::hit`'s time under -P 16 GETs). The histograms are the same at every
    /// reconfiguration, the only reader of them, which adds what is pending first.
    pub fn on_hit_batched(&mut self, tag: &mut LhdTag, size: u64, rng: &mut impl Rng) {
        let age = self.age(tag);
        let at = self.bin(age, self.class_of(tag));
        if self.pending_hits.len() == HIT_BATCH {
            self.add_pending_hits();
        }
        self.pending_hits.push(at as u32);
        if tag.explorer {
            self.return_explorer_budget(size);
        }
        self.renew_after_hit(tag, age, size, rng);
    }

    /// Adds the hits [`LhdModel::on_hit_batched`] deferred to the histograms.
    fn add_pending_hits(&mut self) {
        for &at in &self.pending_hits {
            crate::prefetch::prefetch(self.hits.as_ptr().wrapping_add(at as usize));
        }
        for &at in &self.pending_hits {
            self.hits[at as usize] += 1.0;
        }
        self.pending_hits.clear();
    }

    fn count_hit(&mut self, age: usize, class: usize, explorer: bool, size: u64) {
        let at = self.bin(age, class);
        self.hits[at] += 1.0;
        if explorer {
            self.return_explorer_budget(size);
        }
    }

    /// The object of `tag` is evicted, having ranked `rank`: counts the eviction at its
    /// age in its class.
    pub fn on_evict(&mut self, tag: &LhdTag, size: u64, rank: f32) {
        self.count_eviction(self.age(tag), self.class_of(tag), tag.explorer, size, rank);
    }

    /// [`LhdModel::on_evict`] of a [`CompactTag`].
    pub fn on_evict_compact(&mut self, tag: CompactTag, size: u64, rank: f32) {
        let age = self.compact_age(tag);
        self.count_eviction(age, tag.class(), tag.explorer(), size, rank);
    }

    fn count_eviction(&mut self, age: usize, class: usize, explorer: bool, size: u64, rank: f32) {
        let at = self.bin(age, class);
        self.evictions[at] += 1.0;
        if explorer {
            self.return_explorer_budget(size);
        }
        if rank > f32::NEG_INFINITY {
            let d = self.cfg.ewma_decay;
            self.ewma_victim_density = d * self.ewma_victim_density + (1.0 - d) * rank;
        } else {
            self.overflows += 1;
        }
    }

    /// The object of `tag` left for another reason (DELETE, expiry, overwrite): not an
    /// eviction, so the histograms do not learn from it.
    pub fn on_remove(&mut self, tag: &LhdTag, size: u64) {
        if tag.explorer {
            self.return_explorer_budget(size);
        }
    }

    /// [`LhdModel::on_remove`] of a [`CompactTag`].
    pub fn on_remove_compact(&mut self, tag: CompactTag, size: u64) {
        if tag.explorer() {
            self.return_explorer_budget(size);
        }
    }

    /// One access happened; `cached_objects` is the cache's object count (for the age
    /// coarsening). Reconfigures when due.
    pub fn tick(&mut self, cached_objects: usize) {
        self.timestamp += 1;
        self.count_access(cached_objects);
    }

    /// The model's clock (accesses so far, or the owner's clock: see [`Self::set_time`]).
    pub fn now(&self) -> u64 {
        self.timestamp
    }

    /// Sets the clock ages are measured against. A store whose time is its own access
    /// counter (augur-store's shards, which keep one clock for all their tenants and
    /// store it in every entry's header) sets it before each use of the model and
    /// counts accesses with [`Self::count_access`] instead of calling [`Self::tick`].
    pub fn set_time(&mut self, now: u64) {
        self.timestamp = now;
    }

    /// One access happened without moving the clock (see [`Self::set_time`]);
    /// reconfigures when due and then returns true.
    pub fn count_access(&mut self, cached_objects: usize) -> bool {
        self.until_reconfigure -= 1;
        if self.until_reconfigure == 0 {
            self.reconfigure(cached_objects);
            self.until_reconfigure = self.cfg.reconfigure_every;
            return true;
        }
        false
    }

    /// Decays the histograms, adapts the age coarsening, recomputes the density table.
    pub fn reconfigure(&mut self, cached_objects: usize) {
        self.add_pending_hits();
        let d = self.cfg.ewma_decay;
        self.hits.iter_mut().for_each(|h| *h *= d);
        self.evictions.iter_mut().for_each(|e| *e *= d);
        self.adapt_age_coarsening(cached_objects);
        self.model_hit_density();
        self.reconfigurations += 1;
    }

    /// Eq. 6 for every class and age, in one backward pass: `hits` and `events` are the
    /// hits and (hits + evictions) at ages > a, `lifetime` accumulates `events` so that
    /// it is Σ_{x>a} P[L ≥ x] ∝ P[L > a] · E[L - a | L > a] (Eq. 4).
    /// All classes advance together, age by age (the histograms are age-major).
    fn model_hit_density(&mut self) {
        let (max, n) = (self.cfg.max_age, self.class_count);
        let last = (max - 1) * n..max * n;
        let mut hits: Vec<f64> = self.hits[last.clone()].iter().map(|&h| h as f64).collect();
        let mut events: Vec<f64> = (self.hits[last.clone()].iter())
            .zip(&self.evictions[last])
            .map(|(&h, &e)| (h + e) as f64)
            .collect();
        let mut lifetime = events.clone();
        for a in (0..max - 1).rev() {
            let row = a * n..(a + 1) * n;
            let rows = self.hits[row.clone()].iter().zip(&self.evictions[row]);
            for (c, (&h, &e)) in rows.enumerate() {
                hits[c] += h as f64;
                events[c] += (h + e) as f64;
                lifetime[c] += events[c];
                self.density[c * max + a] = if events[c] > 1e-5 {
                    (hits[c] / lifetime[c]) as f32
                } else {
                    0.0
                };
            }
        }
    }

    /// Appendix A: COARSENESS = N / (ε · MAX_AGE), rounded up to a power of two, set at
    /// the 5th and 25th reconfiguration; the histograms are rescaled to the new unit.
    fn adapt_age_coarsening(&mut self, cached_objects: usize) {
        let d = f64::from(self.cfg.ewma_decay);
        self.ewma_objects = self.ewma_objects * d + cached_objects as f64;
        self.ewma_mass = self.ewma_mass * d + 1.0;
        // `reconfigurations` counts those done before this one.
        if self.reconfigurations != 4 && self.reconfigurations != 24 {
            return;
        }
        let objects = self.ewma_objects / self.ewma_mass;
        let optimal = objects / (self.cfg.age_error * self.cfg.max_age as f64);
        let mut shift = 0u32;
        while ((1u64 << shift) as f64) < optimal && shift < 40 {
            shift += 1;
        }
        let delta = shift as i64 - self.shift as i64;
        self.shift = shift;
        if delta == 0 {
            return;
        }
        let (max, n) = (self.cfg.max_age, self.class_count);
        let mut class = vec![0.0; max];
        for histogram in [&mut self.hits, &mut self.evictions] {
            for c in 0..n {
                let ages = || (0..max).map(|a| a * n + c);
                ages().zip(&mut class).for_each(|(i, x)| *x = histogram[i]);
                rescale(&mut class, delta, max);
                ages().zip(&class).for_each(|(i, &x)| histogram[i] = x);
            }
        }
    }
}

/// The class of a last-hit-age sum (§3.5, LHD_LASTHIT: classes at powers of two up to the
/// maximum age): the larger the sum, the lower the class; a sum at or beyond the maximum
/// age is class 0, a zero sum the highest class.
fn hit_age_class(sum: usize, max_age: usize, classes: usize) -> usize {
    if sum == 0 {
        return classes - 1;
    }
    let mut age = sum;
    let mut class = 0;
    while age < max_age && class < classes - 1 {
        age <<= 1;
        class += 1;
    }
    class
}

/// Re-bins an age histogram after the age unit grew by `2^delta` (delta > 0: merge
/// `2^delta` old bins into one) or shrank (delta < 0: spread each old bin evenly over
/// `2^-delta` new ones; what no longer fits goes to the last bin).
fn rescale(h: &mut [f32], delta: i64, max: usize) {
    if delta > 0 {
        // The last bin is the overflow bin: it stays as it is.
        let k = (delta as u32).min(30);
        let regular = max - 1;
        let bins = regular.div_ceil(1 << k);
        for a in 0..bins {
            let lo = a << k;
            let hi = ((a + 1) << k).min(regular);
            h[a] = h[lo..hi].iter().sum();
        }
        h[bins..regular].iter_mut().for_each(|x| *x = 0.0);
    } else if delta < 0 {
        let k = (-delta) as u32;
        let f = (1u64 << k.min(30)) as f32;
        let start = (max >> k).min(max - 1);
        let spill: f32 = h[start..max - 1].iter().sum();
        h[max - 1] += spill;
        for a in (0..max - 1).rev() {
            h[a] = h[a >> k] / f;
        }
    }
}

/// An LHD cache simulator: exact capacity in objects or bytes, LHD eviction by
/// [`LhdModel`] among `associativity` uniform samples (with replacement) of the cached
/// objects, plus the recently admitted low-density objects.
///
/// # Layout
///
/// Eviction is most of the simulator's time: every miss of a full cache ranks 64
/// random slots, each a cache miss once the slots outgrow L2, so the number of cache
/// lines in flight bounds the speed. So the slot array holds only what ranking and hits
/// read, a [`CompactTag`] of 8 bytes (190 000 objects: 1.5 MB, within L2); the keys are
/// in a parallel array read only for the victim, and costs in a third one only in
/// bytes mode (in objects mode every object costs 1).
///
/// A freed slot stays where it is and the next admission takes it (a full cache
/// evicts, then admits), so no other slot moves and no index entry is rewritten per
/// eviction. A draw that lands on a hole is redrawn (uniform over the cached objects);
/// holes are compacted away when they pass a quarter of the slots.
///
/// The recently admitted candidates are kept as (slot, stamp) and stay candidates while
/// that slot holds the object admitted at that stamp: one hit since no longer counts
/// (its rank is then no longer an admission's; RankCache keeps it as a candidate, where
/// its fresh rank makes it an unlikely victim).
pub struct LhdCache {
    model: LhdModel,
    tags: Vec<CompactTag>,
    keys: Vec<u64>,
    /// Costs per slot, in bytes mode only.
    costs: Vec<u32>,
    /// Free slots (holes).
    free: Vec<u32>,
    index: KeyMap<u32>,
    /// Recent low-density admissions as (slot, stamp at admission).
    recent: Vec<(u32, u32)>,
    /// Where the next recent admission goes in `recent`.
    recent_head: usize,
    /// Scratch for [`LhdCache::evict_one`]'s candidates (kept to not allocate per miss).
    candidates: SlotBuffer,
    /// The candidates' density-table entries with their explorer marks
    /// ([`LhdCache::locate`]), computed once per eviction.
    located: Vec<u32>,
    /// Uniform draws for the next eviction, made (and prefetched) one eviction ahead,
    /// over `next_len` slots.
    next: SlotBuffer,
    next_len: usize,
    used: u64,
    capacity: u64,
    unit: Unit,
    /// The generator (eviction draws and explorer rolls) and how draws are made.
    drawer: SlotDrawer,
    /// Accesses until the next stamp clamp ([`CompactTag`]).
    until_clamp: u64,
}

/// Uniform draws over a cache's slots: the generator, whether to draw (and, in objects
/// mode, rank) with AVX2 ([`crate::lhd_avx2`]), and Lemire's rejection threshold for
/// the slot count of the last draw. Apart from the slots, so that an eviction can draw
/// straight into the cache's candidate buffers.
#[derive(Debug, Clone)]
struct SlotDrawer {
    rng: SmallRng,
    avx2: bool,
    /// The slot count of the last draw and its Lemire threshold (2^32 mod it).
    draw_over: u32,
    reject_below: u32,
}

impl SlotDrawer {
    /// Fills `out` with uniform draws over the slots of `tags`, prefetching each slot
    /// ([`draw_slots`]).
    #[inline]
    fn draw(&mut self, tags: &[CompactTag], out: &mut [u32]) {
        let n = u32::try_from(tags.len()).expect("at most u32::MAX entries");
        if n != self.draw_over {
            // Lemire's threshold takes a division: once per slot count, not per draw.
            (self.draw_over, self.reject_below) = (n, n.wrapping_neg() % n);
        }
        let (rng, slots) = (&mut self.rng, tags.as_ptr());
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is set only where the CPU has AVX2.
            unsafe { crate::lhd_avx2::draw_slots(rng, n, self.reject_below, slots, out) };
            return;
        }
        draw_slots(rng, n, self.reject_below, slots, out);
    }
}

/// Slots drawn or picked as eviction candidates, in a buffer reused from eviction to
/// eviction: its storage only grows, and a draw writes its slots straight into it (a
/// `Vec` resized for each eviction's draws had them zero-filled first by a call to
/// memset: ~6 % of an eviction's instructions on lirs_cs).
#[derive(Debug, Clone, Default)]
struct SlotBuffer {
    storage: Vec<u32>,
    len: usize,
}

impl SlotBuffer {
    fn clear(&mut self) {
        self.len = 0;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn as_slice(&self) -> &[u32] {
        &self.storage[..self.len]
    }

    /// `more` slots past the current ones, to be written by the caller.
    #[inline]
    fn extend_by(&mut self, more: usize) -> &mut [u32] {
        let (start, end) = (self.len, self.len + more);
        if self.storage.len() < end {
            self.storage.resize(end, 0);
        }
        self.len = end;
        &mut self.storage[start..end]
    }

    /// Keeps the first `len` slots.
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Keeps the slots for which `keep` holds, in order.
    fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        let mut kept = 0;
        for k in 0..self.len {
            let slot = self.storage[k];
            if keep(slot) {
                self.storage[kept] = slot;
                kept += 1;
            }
        }
        self.len = kept;
    }
}

/// The code of a hole (no class code has all bits set: classes are below 2^12).
const FREE: u16 = u16::MAX;

/// The most objects an objects-mode cache makes room for when it is built (1 MB of index
/// and 0.75 MB of slots); a larger one grows from there.
const PRESIZED_OBJECTS: usize = 1 << 16;

/// Holes are compacted away only once there are at least this many and a quarter of
/// the slots ([`LhdCache::maybe_compact`]).
const COMPACT_MIN_HOLES: usize = 16;

/// Stamps are clamped to at most this age ...
const CLAMP_AGE: u64 = 1 << 31;
/// ... once every this many accesses, so that none reaches 2^32 ([`CompactTag`]).
const CLAMP_EVERY: u64 = 1 << 30;

impl LhdCache {
    pub fn new(cfg: LhdConfig, capacity: u64, unit: Unit, seed: u64) -> LhdCache {
        let recent = vec![(u32::MAX, 0); cfg.admissions];
        // In objects mode the capacity is the most objects ever held: the slots and the
        // index are sized for it up front (up to PRESIZED_OBJECTS), not grown and rehashed
        // while the cache fills.
        let objects = match unit {
            Unit::Objects => (capacity as usize).min(PRESIZED_OBJECTS),
            Unit::Bytes => 0,
        };
        LhdCache {
            model: LhdModel::new(cfg, capacity),
            tags: Vec::with_capacity(objects),
            keys: Vec::with_capacity(objects),
            costs: Vec::new(),
            free: Vec::new(),
            index: KeyMap::with_capacity_and_hasher(objects, Default::default()),
            recent,
            recent_head: 0,
            candidates: SlotBuffer::default(),
            located: Vec::new(),
            next: SlotBuffer::default(),
            next_len: 0,
            used: 0,
            capacity,
            unit,
            drawer: SlotDrawer {
                rng: SmallRng::seed_from_u64(seed),
                avx2: crate::lhd_avx2::available(),
                draw_over: 0,
                reject_below: 0,
            },
            until_clamp: CLAMP_EVERY,
        }
    }

    pub fn model(&self) -> &LhdModel {
        &self.model
    }

    /// Every cached entry as (key, cost in the cache's unit, age in accesses), for a
    /// cache that switches policy and moves its contents (`crate::switching`).
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let now = self.model.now() as u32;
        (0..self.tags.len())
            .filter(|&i| self.tags[i].code != FREE)
            .map(move |i| {
                let age = u64::from(now.wrapping_sub(self.tags[i].stamp));
                (self.keys[i], self.cost_of(i), age)
            })
    }

    /// Sets the model's clock (before [`LhdCache::insert_aged`]s: the clock of the cache
    /// the contents come from, so ages carry over).
    pub fn set_now(&mut self, now: u64) {
        self.model.set_time(now);
    }

    /// Inserts `key` last referenced `age` accesses ago, without evicting and with no
    /// hit history: what the store's LHD reads in an entry last touched under LRU (a
    /// new object of the age its clock gives; augur-store `lhd.rs`, "Switching policies
    /// live"). Not an access, and never an explorer.
    pub fn insert_aged(&mut self, key: u64, cost: u64, age: u64) {
        if self.index.contains_key(&key) {
            return;
        }
        let tag = LhdTag {
            timestamp: self.model.now().saturating_sub(age.min(CLAMP_AGE)),
            last_hit_age: 0,
            last_last_hit_age: self.model.cfg.max_age as u16,
            app: 0,
            explorer: false,
        };
        let tag = self.model.compact(&tag);
        self.place(key, cost, tag);
    }

    #[inline]
    fn cost_of(&self, i: usize) -> u64 {
        match self.unit {
            Unit::Objects => 1,
            Unit::Bytes => u64::from(self.costs[i]),
        }
    }

    /// Puts an object in a hole (or a new slot) and indexes it; returns its slot. `key`
    /// is not cached (both callers looked it up), so the index entry is added without
    /// looking for an existing one first.
    #[inline(always)]
    fn place(&mut self, key: u64, cost: u64, tag: CompactTag) -> u32 {
        debug_assert!(!self.index.contains_key(&key));
        // Bytes mode: a cost is an object size (32 bits); objects mode: always 1.
        let cost32 = u32::try_from(cost).unwrap_or(u32::MAX);
        let i = match self.free.pop() {
            Some(i) => {
                self.tags[i as usize] = tag;
                self.keys[i as usize] = key;
                if self.unit == Unit::Bytes {
                    self.costs[i as usize] = cost32;
                }
                i
            }
            None => {
                let i = u32::try_from(self.tags.len()).expect("at most u32::MAX entries");
                self.tags.push(tag);
                self.keys.push(key);
                if self.unit == Unit::Bytes {
                    self.costs.push(cost32);
                }
                i
            }
        };
        self.index.insert_unique_unchecked(key, i);
        self.used += self.cost_of(i as usize);
        i
    }

    /// Frees slot `i` (which holds an object); returns its tag and cost.
    #[inline(always)]
    fn free_slot(&mut self, i: usize) -> (CompactTag, u64) {
        let tag = self.tags[i];
        let cost = self.cost_of(i);
        self.tags[i].code = FREE;
        self.free.push(i as u32);
        self.index.remove(&self.keys[i]);
        self.used -= cost;
        (tag, cost)
    }

    /// Removes the holes once they pass a quarter of the slots (after removals or a
    /// shrink; a full cache's evict-then-admit leaves none for long) by moving the last
    /// objects into them, so that sampling seldom redraws. Inlined: every eviction asks,
    /// and the answer is almost always no.
    #[inline]
    fn maybe_compact(&mut self) {
        if self.free.len() >= COMPACT_MIN_HOLES && self.free.len() * 4 >= self.tags.len() {
            self.compact();
        }
    }

    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let mut free = std::mem::take(&mut self.free);
        free.sort_unstable();
        for hole in free {
            while self.tags.last().is_some_and(|t| t.code == FREE) {
                self.pop_slot();
            }
            let hole = hole as usize;
            if hole >= self.tags.len() {
                break;
            }
            let last = self.tags.len() - 1;
            self.tags.swap(hole, last);
            self.keys.swap(hole, last);
            if self.unit == Unit::Bytes {
                self.costs.swap(hole, last);
            }
            self.pop_slot();
            self.index.insert(self.keys[hole], hole as u32);
        }
        // Slots moved: the recent admissions' slots may no longer be theirs.
        self.recent.iter_mut().for_each(|r| *r = (u32::MAX, 0));
    }

    fn pop_slot(&mut self) {
        self.tags.pop();
        self.keys.pop();
        if self.unit == Unit::Bytes {
            self.costs.pop();
        }
    }

    /// Evicts the lowest-ranked of `associativity` uniform samples of the cached objects
    /// and the recently admitted low-density objects. The candidates are drawn first and
    /// their slots, then their density-table entries, prefetched before any is ranked:
    /// ranking them one by one would wait for each cache miss in turn.
    fn evict_one(&mut self) {
        self.maybe_compact();
        let wanted = self.model.samples(self.model.cfg.associativity);
        if self.next_len == self.tags.len() && self.next.len() == wanted {
            // Drawn (and their slots prefetched) at the previous eviction over the same
            // slots: uniform draws still, their cache misses long paid.
            std::mem::swap(&mut self.candidates, &mut self.next);
        } else {
            self.candidates.clear();
            self.drawer
                .draw(&self.tags, self.candidates.extend_by(wanted));
        }
        if !self.free.is_empty() {
            // Draws on holes are redrawn until `wanted` land on objects.
            loop {
                let tags = &self.tags;
                self.candidates.retain(|i| tags[i as usize].code != FREE);
                if self.candidates.len() == wanted {
                    break;
                }
                let more = wanted - self.candidates.len();
                self.drawer
                    .draw(&self.tags, self.candidates.extend_by(more));
            }
        }
        self.push_live_recent();
        let (best, best_rank) = if self.drawer.avx2 && self.unit == Unit::Objects {
            // The next eviction's draws first (their slots arrive while this one
            // ranks); the gathers overlap the candidates' own misses.
            self.draw_next(wanted);
            self.lowest_density_avx2(self.candidates.as_slice())
        } else {
            let mut located = std::mem::take(&mut self.located);
            self.locate(self.candidates.as_slice(), &mut located);
            // The next eviction's draws, while the density lines arrive.
            self.draw_next(wanted);
            let lowest = self.lowest_density(self.candidates.as_slice(), &located);
            self.located = located;
            lowest
        };
        let (tag, cost) = self.free_slot(best);
        self.model.on_evict_compact(tag, cost, best_rank);
    }

    /// Adds to the candidates the recent admissions still in their slots (not hit
    /// since, not evicted). Without a branch per admission: whether one is still there is
    /// as good as random, and a mispredicted branch costs ~15 cycles, so each is written
    /// and counted only if live.
    #[inline]
    fn push_live_recent(&mut self) {
        let start = self.candidates.len();
        let out = self.candidates.extend_by(self.recent.len());
        let mut live = 0;
        for &(slot, stamp) in &self.recent {
            // A slot past the end (never set, or compacted away) reads as a hole.
            let tag = self.tags.get(slot as usize).copied().unwrap_or(CompactTag {
                stamp: !stamp,
                code: FREE,
                last_hit_age: 0,
            });
            out[live] = slot;
            live += usize::from((tag.code != FREE) & (tag.stamp == stamp));
        }
        self.candidates.truncate(start + live);
    }

    /// Draws the next eviction's `wanted` candidates over the current slots.
    #[inline]
    fn draw_next(&mut self, wanted: usize) {
        self.next.clear();
        self.drawer.draw(&self.tags, self.next.extend_by(wanted));
        self.next_len = self.tags.len();
    }

    /// [`LhdCache::lowest_density`] in objects mode on a CPU with AVX2
    /// ([`crate::lhd_avx2`]): the same victim and rank.
    fn lowest_density_avx2(&self, candidates: &[u32]) -> (usize, f32) {
        #[cfg(target_arch = "x86_64")]
        {
            let (clock, density) = (self.model.clock(), &self.model.density[..]);
            // SAFETY: `avx2` is set only where the CPU has AVX2.
            let (k, rank) =
                unsafe { crate::lhd_avx2::lowest_objects(&self.tags, candidates, clock, density) };
            (candidates[k] as usize, rank)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = candidates;
            unreachable!("avx2 is never set off x86-64")
        }
    }

    /// Sets `located[k]` to where the density of candidate `candidates[k]` is read
    /// ([`CompactClock::entry`]), with the explorer mark in the top bit; and prefetches
    /// that entry, so that the candidates' cache misses overlap. The clock is copied out
    /// of the model and `located` written by index (a `Vec` push kept its length in
    /// memory and checked its capacity every time).
    #[inline]
    fn locate(&self, candidates: &[u32], located: &mut Vec<u32>) {
        let clock = self.model.clock();
        let density = self.model.density.as_ptr();
        located.resize(candidates.len(), 0);
        for (out, &i) in located.iter_mut().zip(candidates) {
            let tag = self.tags[i as usize];
            let at = clock.entry(tag);
            crate::prefetch::prefetch(density.wrapping_add(at));
            *out = at as u32 | (u32::from(tag.explorer()) << 31);
        }
    }

    /// The candidate of lowest hit density and its rank, from [`LhdCache::locate`]'s
    /// entries.
    #[inline]
    fn lowest_density(&self, candidates: &[u32], located: &[u32]) -> (usize, f32) {
        let bytes = self.unit == Unit::Bytes;
        let (mut best, mut best_rank) = (usize::MAX, f32::MAX);
        for (&i, &at) in candidates.iter().zip(located) {
            let i = i as usize;
            let size = if bytes { u64::from(self.costs[i]) } else { 1 };
            let r = self.model.rank_located(at, size);
            if r < best_rank {
                (best, best_rank) = (i, r);
                // The victim's key is read next (to unindex it): asking for it when a
                // candidate becomes the best overlaps that miss with the rest of the loop.
                crate::prefetch::prefetch(self.keys.as_ptr().wrapping_add(i));
            }
        }
        (best, best_rank)
    }

    /// A miss on `key` (of `size`): evicts until the object fits, then admits it (if it
    /// can fit at all) and counts the access.
    #[inline(never)]
    fn miss(&mut self, key: u64, size: u32) {
        let cost = self.unit.cost(size);
        if cost <= self.capacity {
            while self.used + cost > self.capacity {
                self.evict_one();
            }
            let tag = self.model.on_insert_compact(cost, &mut self.drawer.rng);
            let low = !self.recent.is_empty() && self.model.looks_like_victim_compact(tag, cost);
            let i = self.place(key, cost, tag);
            if low {
                // A ring: the oldest recent admission gives way (no division by its
                // length per admission).
                self.recent[self.recent_head] = (i, tag.stamp);
                self.recent_head += 1;
                if self.recent_head == self.recent.len() {
                    self.recent_head = 0;
                }
            }
        }
        self.tick();
    }

    /// One access happened: the model's clock, and once every [`CLAMP_EVERY`]
    /// accesses, stamps older than [`CLAMP_AGE`] are set to that age ([`CompactTag`]).
    #[inline]
    fn tick(&mut self) {
        self.model.tick(self.len());
        self.until_clamp -= 1;
        if self.until_clamp == 0 {
            self.until_clamp = CLAMP_EVERY;
            self.clamp_stamps();
        }
    }

    #[cold]
    #[inline(never)]
    fn clamp_stamps(&mut self) {
        let now = self.model.now() as u32;
        for t in &mut self.tags {
            if u64::from(now.wrapping_sub(t.stamp)) > CLAMP_AGE {
                t.stamp = now.wrapping_sub(CLAMP_AGE as u32);
            }
        }
    }
}

/// Fills `out` with uniform draws over `0..n`, prefetching `slots[i]` for each draw
/// `i`: two draws per 64-bit random number (Lemire's multiply-shift with its exact
/// rejection threshold `reject_below` = 2^32 mod n, so no slot is favoured), the generator in a local so its state
/// stays in registers through the loop, and the draws written by index (a `Vec` push
/// kept its length in memory and checked its capacity at every draw: about half the
/// loop's instructions).
#[inline]
pub(crate) fn draw_slots<T>(
    rng: &mut SmallRng,
    n: u32,
    reject_below: u32,
    slots: *const T,
    out: &mut [u32],
) {
    if out.is_empty() {
        return;
    }
    debug_assert_eq!(reject_below, n.wrapping_neg() % n);
    let mut generator = rng.clone();
    let mut k = 0;
    while !take_draws(generator.next_u64(), n, reject_below, slots, out, &mut k) {}
    *rng = generator;
}

/// Lemire's rule on the two 32-bit halves of one random output `x`, low half first:
/// each accepted draw over `0..n` is written at `out[*k]` (its slot prefetched) until
/// `out` is full, and the rest of `x` is then dropped; returns whether `out` is full.
/// The one rule of [`draw_slots`] and of its AVX2 form's fallback.
#[inline(always)]
pub(crate) fn take_draws<T>(
    x: u64,
    n: u32,
    reject_below: u32,
    slots: *const T,
    out: &mut [u32],
    k: &mut usize,
) -> bool {
    for half in [x & 0xffff_ffff, x >> 32] {
        let m = half * u64::from(n);
        if (m as u32) >= reject_below {
            let i = (m >> 32) as u32;
            crate::prefetch::prefetch(slots.wrapping_add(i as usize));
            out[*k] = i;
            *k += 1;
            if *k == out.len() {
                return true;
            }
        }
    }
    false
}

impl CacheSim for LhdCache {
    /// A hit is handled here, inlined into the caller's loop; a miss (an eviction, an
    /// admission) in [`LhdCache::miss`], so that a hit saves and restores none of the
    /// registers the miss path needs (a prologue and epilogue of ~17 instructions, on a
    /// hit of ~110; lirs_sprite, 86 % hits: its simulation -5 %).
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        if let Some(&i) = self.index.get(&key) {
            let i = i as usize;
            let cost = self.cost_of(i);
            self.model
                .on_hit_compact(&mut self.tags[i], cost, &mut self.drawer.rng);
            self.tick();
            return true;
        }
        self.miss(key, size);
        false
    }

    fn remove(&mut self, key: u64) {
        if let Some(&i) = self.index.get(&key) {
            let (tag, cost) = self.free_slot(i as usize);
            self.model.on_remove_compact(tag, cost);
            self.maybe_compact();
        }
    }

    fn len(&self) -> usize {
        self.tags.len() - self.free.len()
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Shrinking evicts by hit density until the contents fit; the model and its
    /// explorer budget follow the new capacity (DLRU resizes its miniature caches every
    /// interval and keeps their contents; `maxmemory-policy auto` runs an LHD one).
    fn set_capacity(&mut self, capacity: u64) -> bool {
        self.capacity = capacity;
        self.model.set_capacity(capacity);
        while self.used > self.capacity && self.len() > 0 {
            self.evict_one();
        }
        self.maybe_compact();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eq. 5 by its definition (conditional probabilities, O(max²)) equals the linear
    /// backward pass.
    #[test]
    fn density_pass_equals_eq5_by_definition() {
        // Three classes, so that the age-major histograms and the class-major density
        // table are both indexed right.
        let cfg = LhdConfig {
            max_age: 50,
            hit_age_classes: 3,
            ..LhdConfig::default()
        };
        let mut m = LhdModel::new(cfg, 100);
        let mut rng = SmallRng::seed_from_u64(7);
        for (h, e) in m.hits.iter_mut().zip(&mut m.evictions) {
            *h = rng.gen_range(0.0..10.0);
            *e = rng.gen_range(0.0..10.0);
        }
        m.model_hit_density();
        for class in 0..3 {
            let h = |x: usize| m.hits[x * 3 + class] as f64;
            let l = |x: usize| (m.hits[x * 3 + class] + m.evictions[x * 3 + class]) as f64;
            for a in 0..49 {
                // P[hit | age a] / E[L - a | age a], both from the unnormalised histograms.
                let hits_after: f64 = (a + 1..50).map(h).sum();
                let events_after: f64 = (a + 1..50).map(l).sum();
                let remaining: f64 = (a + 1..50).map(|x| (x - a) as f64 * l(x)).sum();
                let want = (hits_after / events_after) / (remaining / events_after);
                let got = m.density[class * 50 + a] as f64;
                // The pass includes age a's own events (an object of age a may still hit
                // at a: ages are coarse): compare with that convention.
                let hits_from: f64 = (a..50).map(h).sum();
                let remaining_from: f64 = (a..50).map(|x| (x - a + 1) as f64 * l(x)).sum();
                let want_from = hits_from / remaining_from;
                assert!(
                    (got - want_from).abs() <= 1e-4 * want_from.max(1e-9),
                    "class {class} age {a}: pass {got}, definition {want_from} (strict {want})"
                );
            }
            assert_eq!(m.density[class * 50 + 49], f32::NEG_INFINITY);
        }
    }

    #[test]
    fn hit_age_classes_are_log_spaced_and_bounded() {
        let class = |s| hit_age_class(s, 20_000, 16);
        assert_eq!(class(0), 15);
        assert_eq!(class(20_000), 0);
        assert_eq!(class(40_000), 0);
        assert_eq!(class(10_000), 1);
        assert_eq!(class(5_000), 2);
        assert_eq!(class(1), 15);
        let mut last = 0;
        for s in (1..20_000).rev() {
            let c = class(s);
            assert!(c >= last);
            last = c;
        }
        // The model's table agrees, and a new object (0 + max_age) is class 0.
        let mut m = LhdModel::new(LhdConfig::default(), 100);
        for s in 0..=40_000 {
            assert_eq!(m.class_by_sum[s] as usize, class(s));
        }
        let tag = m.on_insert(0, 1, &mut SmallRng::seed_from_u64(1));
        assert_eq!(m.class_of(&tag), 0);
    }

    /// The age coarsening re-bins every class's two histograms on their own: the
    /// age-major layout (`age * classes + class`) gathers each class's ages, rescales
    /// them as one class-major histogram would be, and puts them back.
    #[test]
    fn coarsening_rescales_each_class_on_its_own() {
        let (max, classes) = (64, 4);
        let cfg = LhdConfig {
            max_age: max,
            hit_age_classes: classes,
            initial_age_shift: 0,
            ..LhdConfig::default()
        };
        let mut m = LhdModel::new(cfg, 1000);
        let mut rng = SmallRng::seed_from_u64(11);
        for (h, e) in m.hits.iter_mut().zip(&mut m.evictions) {
            *h = rng.gen_range(0.0..10.0);
            *e = rng.gen_range(0.0..10.0);
        }
        let (hits, evictions) = (m.hits.clone(), m.evictions.clone());
        // The 5th reconfiguration adapts: 3 objects / (1 % of 64 ages) -> 2^3 accesses
        // per age unit, from 2^0.
        m.reconfigurations = 4;
        m.adapt_age_coarsening(3);
        assert_eq!(m.age_shift(), 3);
        for c in 0..classes {
            for (before, after) in [(&hits, &m.hits), (&evictions, &m.evictions)] {
                let mut want: Vec<f32> = (0..max).map(|a| before[a * classes + c]).collect();
                rescale(&mut want, 3, max);
                let got: Vec<f32> = (0..max).map(|a| after[a * classes + c]).collect();
                assert_eq!(got, want, "class {c}");
            }
        }
    }

    #[test]
    fn rescale_keeps_the_mass() {
        let mut rng = SmallRng::seed_from_u64(3);
        let base: Vec<f32> = (0..64).map(|_| rng.gen_range(0.0..5.0)).collect();
        let total: f32 = base.iter().sum();
        for delta in [-3i64, -1, 1, 2, 5] {
            let mut h = base.clone();
            rescale(&mut h, delta, 64);
            let t: f32 = h.iter().sum();
            assert!(
                (t - total).abs() < 1e-2 * total,
                "delta {delta}: {t} vs {total}"
            );
        }
    }

    #[test]
    fn set_capacity_shrinks_by_eviction_and_keeps_the_rest() {
        let mut c = LhdCache::new(LhdConfig::default(), 1000, Unit::Objects, 1);
        for key in 0..1000u64 {
            c.access(key, 1);
        }
        assert!(c.set_capacity(600));
        assert_eq!((c.len(), c.used(), c.capacity()), (600, 600, 600));
        assert!(c.set_capacity(2000));
        assert_eq!(c.len(), 600);
        for key in 5000..6400u64 {
            c.access(key, 1);
            assert!(c.used() <= 2000);
        }
        assert_eq!(c.len(), 2000);
    }

    #[test]
    fn never_exceeds_capacity_and_counts_hits() {
        // The hot set (100 keys, ~10 KB) does not fit in either cache.
        for (unit, capacity) in [(Unit::Objects, 60), (Unit::Bytes, 5000)] {
            let cfg = LhdConfig {
                reconfigure_every: 1000,
                ..LhdConfig::default()
            };
            let mut c = LhdCache::new(cfg, capacity, unit, 1);
            let mut lru = crate::ListCache::new(crate::ListOrder::Lru, capacity, unit);
            let mut rng = SmallRng::seed_from_u64(9);
            let (mut hits, mut lru_hits) = (0u64, 0u64);
            for i in 0..50_000u64 {
                let key = if i % 3 == 0 {
                    rng.gen_range(0..100)
                } else {
                    rng.gen_range(0..100_000)
                };
                let size = 1 + (key % 200) as u32;
                hits += c.access(key, size) as u64;
                lru_hits += lru.access(key, size) as u64;
                assert!(c.used() <= c.capacity());
                if i % 1000 == 0 {
                    let k = rng.gen_range(0..100);
                    c.remove(k);
                    lru.remove(k);
                }
            }
            let sum: u64 = c.entries().map(|(_, cost, _)| cost).sum();
            assert_eq!(sum, c.used());
            assert_consistent(&c);
            // A hot set among one-off keys: LHD learns that the one-offs never hit.
            assert!(hits > lru_hits, "{unit}: LHD {hits} hits, LRU {lru_hits}");
            assert!(c.model().reconfigurations() >= 49);
        }
    }

    /// The slot arrays, the holes and the index agree: every indexed key sits in an
    /// occupied slot holding it, every occupied slot is indexed, every hole is free.
    fn assert_consistent(c: &LhdCache) {
        assert_eq!(c.index.len(), c.len());
        for (&k, &i) in &c.index {
            assert_eq!(c.keys[i as usize], k);
            assert_ne!(c.tags[i as usize].code, FREE);
        }
        for &i in &c.free {
            assert_eq!(c.tags[i as usize].code, FREE);
        }
        assert_eq!(
            c.tags.iter().filter(|t| t.code == FREE).count(),
            c.free.len()
        );
    }

    /// An eviction ranks at most `UNLEARNED_SAMPLES` draws until the model's first
    /// reconfiguration, the configured associativity after it.
    #[test]
    fn an_unlearned_model_ranks_fewer_samples() {
        let cfg = LhdConfig {
            associativity: 64,
            reconfigure_every: 5_000,
            ..LhdConfig::default()
        };
        let mut cache = LhdCache::new(cfg, 500, Unit::Objects, 9);
        let mut key = 0u64;
        // Distinct keys: every access past the first 500 evicts.
        while cache.model.reconfigurations() == 0 {
            cache.access(key, 1);
            key += 1;
            if key > 600 && cache.model.reconfigurations() == 0 {
                // The draws for the next eviction, made at this one.
                assert_eq!(cache.next.len(), UNLEARNED_SAMPLES, "access {key}");
            }
        }
        for _ in 0..3 {
            cache.access(key, 1);
            key += 1;
        }
        assert_eq!(cache.next.len(), 64);
        assert_eq!(cache.model.samples(64), 64);
        assert_eq!(
            LhdModel::new(LhdConfig::default(), 10).samples(64),
            UNLEARNED_SAMPLES
        );
        assert_eq!(LhdModel::new(LhdConfig::default(), 10).samples(5), 5);
    }

    /// A whole simulation gives the same hit or miss on every request with the AVX2
    /// kernels as with the scalar code (a CPU without AVX2 runs the latter), in objects
    /// mode at several associativities, with and without recent admissions.
    #[test]
    fn simulations_agree_with_and_without_avx2() {
        if !crate::lhd_avx2::available() {
            eprintln!("no AVX2 on this CPU: nothing to compare");
            return;
        }
        let mut rng = SmallRng::seed_from_u64(5);
        let trace: Vec<u64> = (0..150_000)
            .map(|_| rng.gen_range(0..30_000u64) % rng.gen_range(1..30_000u64))
            .collect();
        for (associativity, admissions) in [(1, 8), (8, 8), (13, 0), (64, 8)] {
            let cfg = LhdConfig {
                associativity,
                admissions,
                reconfigure_every: 1 << 14,
                ..LhdConfig::default()
            };
            let mut fast = LhdCache::new(cfg.clone(), 2_000, Unit::Objects, 3);
            let mut plain = LhdCache::new(cfg, 2_000, Unit::Objects, 3);
            plain.drawer.avx2 = false;
            for (n, &key) in trace.iter().enumerate() {
                assert_eq!(
                    fast.access(key, 1),
                    plain.access(key, 1),
                    "request {n}, associativity {associativity}"
                );
            }
            assert!(fast.model.reconfigurations() > 5);
        }
    }

    /// The AVX2 draws are the scalar draws: the same slots in the same order and the
    /// generator left in the same state, for every length up to 70 and slot counts from
    /// 1 to 2^32 - 1, including 2^31 + 1, where Lemire's rule rejects almost half the
    /// draws (so nearly every block of eight goes through the scalar fallback).
    #[test]
    fn avx2_draws_are_the_scalar_draws() {
        if !crate::lhd_avx2::available() {
            eprintln!("no AVX2 on this CPU: nothing to compare");
            return;
        }
        let slots = [0u64; 4];
        for n in [1u32, 2, 3, 7, 4897, 190_635, (1 << 31) + 1, u32::MAX] {
            let reject_below = n.wrapping_neg() % n;
            for len in 0..=70 {
                let seed = u64::from(n) * 1000 + len as u64;
                let (mut a, mut b) = (SmallRng::seed_from_u64(seed), SmallRng::seed_from_u64(seed));
                let (mut scalar, mut avx2) = (vec![0u32; len], vec![0u32; len]);
                draw_slots(&mut a, n, reject_below, slots.as_ptr(), &mut scalar);
                // SAFETY: checked above that the CPU has AVX2.
                unsafe {
                    crate::lhd_avx2::draw_slots(&mut b, n, reject_below, slots.as_ptr(), &mut avx2)
                };
                assert_eq!(scalar, avx2, "n {n}, len {len}");
                assert_eq!(
                    a.next_u64(),
                    b.next_u64(),
                    "generator state, n {n}, len {len}"
                );
                assert!(scalar.iter().all(|&i| i < n));
            }
        }
    }

    /// The AVX2 ranking picks the scalar loop's victim with the same rank, ties included
    /// (the first candidate of equal rank): on a cache a skewed trace has filled and
    /// reconfigured (several classes, explorers, ages across the table), on candidate
    /// lists of every length up to 80 with repeats, and after the clock jumps so that
    /// every candidate is past the maximum age (all rank -inf: only the tie rule decides).
    #[test]
    fn avx2_ranking_picks_the_scalar_victim() {
        if !crate::lhd_avx2::available() {
            eprintln!("no AVX2 on this CPU: nothing to compare");
            return;
        }
        let cfg = LhdConfig {
            reconfigure_every: 4096,
            ..LhdConfig::default()
        };
        let mut cache = LhdCache::new(cfg, 3000, Unit::Objects, 7);
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..200_000 {
            // Keys 0..20 000, the low ones far more often.
            let key = rng.gen_range(0..20_000u64) % rng.gen_range(1..20_000u64);
            cache.access(key, 1);
        }
        assert!(cache.model.reconfigurations() > 10);
        let objects: Vec<u32> = (0..cache.tags.len() as u32)
            .filter(|&i| cache.tags[i as usize].code != FREE)
            .collect();
        let explorers = objects
            .iter()
            .filter(|&&i| cache.tags[i as usize].explorer())
            .count();
        assert!(explorers > 0, "no explorer among {} objects", objects.len());
        let mut located = Vec::new();
        let mut ties = 0;
        for round in 0..4000 {
            if round == 2000 {
                let now = cache.model.now();
                cache.set_now(now + (1 << 29));
            }
            let len = round % 80 + 1;
            let candidates: Vec<u32> = (0..len)
                .map(|_| objects[rng.gen_range(0..objects.len())])
                .collect();
            cache.locate(&candidates, &mut located);
            let scalar = cache.lowest_density(&candidates, &located);
            let avx2 = cache.lowest_density_avx2(&candidates);
            assert_eq!(scalar, avx2, "round {round}, candidates {candidates:?}");
            ties += usize::from(
                candidates
                    .iter()
                    .zip(&located)
                    .filter(|&(_, &at)| cache.model.rank_located(at, 1) == scalar.1)
                    .count()
                    > 1,
            );
        }
        assert!(ties > 2000, "only {ties} rounds with tied victims");
    }

    /// The compact tag ranks, ages and classes an object exactly as its full tag does,
    /// through any history of hits and evictions (what lets [`LhdCache`] keep 8 bytes per
    /// object): two models fed the same events, one through full tags and one through
    /// compact ones, rank every object alike and learn the same histograms.
    #[test]
    fn compact_tags_rank_and_learn_as_full_tags() {
        let cfg = LhdConfig {
            reconfigure_every: 5_000,
            app_classes: 4,
            ..LhdConfig::default()
        };
        let (mut full_model, mut compact_model) =
            (LhdModel::new(cfg.clone(), 1000), LhdModel::new(cfg, 1000));
        let mut rng = SmallRng::seed_from_u64(11);
        let mut objects: Vec<(LhdTag, CompactTag, u64)> = Vec::new();
        for step in 0..200_000u64 {
            full_model.tick(objects.len());
            compact_model.tick(objects.len());
            // The same explorer rolls for both.
            let (mut roll_full, mut roll_compact) =
                (SmallRng::seed_from_u64(step), SmallRng::seed_from_u64(step));
            match rng.gen_range(0..8) {
                0 | 1 => {
                    let (size, app) = (rng.gen_range(1..300), rng.gen_range(0..9));
                    let full = full_model.on_insert(app, size, &mut roll_full);
                    let twin = compact_model.on_insert(app, size, &mut roll_compact);
                    objects.push((full, compact_model.compact(&twin), size));
                }
                2 if objects.len() > 100 => {
                    let i = rng.gen_range(0..objects.len());
                    let (full, compact, size) = objects.swap_remove(i);
                    let rank = full_model.rank(&full, size);
                    assert_eq!(rank, compact_model.rank_compact(compact, size));
                    full_model.on_evict(&full, size, rank);
                    compact_model.on_evict_compact(compact, size, rank);
                }
                _ if !objects.is_empty() => {
                    let i = rng.gen_range(0..objects.len());
                    let (ref mut full, ref mut compact, size) = objects[i];
                    assert_eq!(
                        full_model.rank(full, size),
                        compact_model.rank_compact(*compact, size)
                    );
                    full_model.on_hit(full, size, &mut roll_full);
                    compact_model.on_hit_compact(compact, size, &mut roll_compact);
                    assert_eq!(full_model.compact(full), *compact, "step {step}");
                }
                _ => {}
            }
        }
        assert!(full_model.reconfigurations() > 30);
        for (full, compact, size) in &objects {
            assert_eq!(
                full_model.rank(full, *size),
                compact_model.rank_compact(*compact, *size)
            );
        }
    }

    /// Deferring hits' counts ([`LhdModel::on_hit_batched`]) changes nothing the model
    /// learns: two models fed the same events, one counting each hit at once and one
    /// deferring them, tag every object alike and hold the same histograms and density
    /// table (bit for bit) after every reconfiguration, while between them the deferred
    /// model's histograms lag by up to [`HIT_BATCH`] hits.
    #[test]
    fn batched_hits_learn_as_counted_hits() {
        let cfg = LhdConfig {
            reconfigure_every: 3_000,
            ..LhdConfig::default()
        };
        let (mut counted, mut batched) =
            (LhdModel::new(cfg.clone(), 1000), LhdModel::new(cfg, 1000));
        let mut rng = SmallRng::seed_from_u64(23);
        let mut objects: Vec<(LhdTag, LhdTag, u64)> = Vec::new();
        let (mut lagged, mut compared) = (0, 0);
        for step in 0..100_000u64 {
            let before = counted.reconfigurations();
            counted.tick(objects.len());
            batched.tick(objects.len());
            if counted.reconfigurations() > before {
                assert_eq!(batched.reconfigurations(), counted.reconfigurations());
                assert!(batched.pending_hits.is_empty());
                assert_eq!(batched.hits, counted.hits, "step {step}");
                assert_eq!(batched.density, counted.density, "step {step}");
                compared += 1;
            }
            let (mut roll_counted, mut roll_batched) =
                (SmallRng::seed_from_u64(step), SmallRng::seed_from_u64(step));
            match rng.gen_range(0..6) {
                0 => {
                    let size = rng.gen_range(1..300);
                    let a = counted.on_insert(0, size, &mut roll_counted);
                    let b = batched.on_insert(0, size, &mut roll_batched);
                    objects.push((a, b, size));
                }
                1 if objects.len() > 100 => {
                    let i = rng.gen_range(0..objects.len());
                    let (a, b, size) = objects.swap_remove(i);
                    let rank = counted.rank(&a, size);
                    assert_eq!(rank, batched.rank(&b, size));
                    counted.on_evict(&a, size, rank);
                    batched.on_evict(&b, size, rank);
                }
                _ if !objects.is_empty() => {
                    // Hot objects first, so that ages and classes spread.
                    let i = rng.gen_range(
                        0..objects
                            .len()
                            .min(if step % 2 == 0 { 50 } else { usize::MAX }),
                    );
                    let (ref mut a, ref mut b, size) = objects[i];
                    counted.on_hit(a, size, &mut roll_counted);
                    batched.on_hit_batched(b, size, &mut roll_batched);
                    assert_eq!(a, b, "step {step}");
                    assert!(batched.pending_hits.len() <= HIT_BATCH);
                    if batched.hits != counted.hits {
                        lagged += 1;
                    }
                }
                _ => {}
            }
        }
        assert!(compared > 20, "{compared} reconfigurations compared");
        assert!(lagged > 1000, "the counts were deferred ({lagged} hits)");
        assert!(batched.explorer_budget == counted.explorer_budget);
    }

    /// Removals leave holes that admissions fill and compaction clears; draws never
    /// land on one; the index always agrees with the slots.
    #[test]
    fn holes_are_refilled_or_compacted_and_never_evicted() {
        for unit in [Unit::Objects, Unit::Bytes] {
            let mut c = LhdCache::new(LhdConfig::default(), 3000, unit, 5);
            let mut rng = SmallRng::seed_from_u64(3);
            for round in 0..20u64 {
                for _ in 0..5000 {
                    let key = rng.gen_range(0..20_000);
                    c.access(key, rng.gen_range(1..5));
                    assert!(c.used() <= c.capacity());
                }
                // Remove a random half of what is cached: many holes at once.
                let keys: Vec<u64> = c.entries().map(|(k, _, _)| k).collect();
                for k in keys.into_iter().filter(|_| rng.gen_range(0..2) == 0) {
                    c.remove(k);
                }
                assert_consistent(&c);
                assert!(c.free.len() * 4 <= c.tags.len() + 64, "round {round}");
                if round % 5 == 4 {
                    c.set_capacity(c.capacity() / 2 + 100);
                    assert!(c.used() <= c.capacity());
                    assert_consistent(&c);
                }
            }
        }
    }

    /// Stamps older than 2^31 accesses are clamped to that age and younger ones kept:
    /// run every 2^30 accesses, this keeps 32-bit stamps from wrapping.
    #[test]
    fn old_stamps_are_clamped_before_they_wrap() {
        let mut c = LhdCache::new(LhdConfig::default(), 100, Unit::Objects, 1);
        let start = 10u64 << 32;
        c.set_now(start);
        c.insert_aged(1, 1, 3 << 30);
        c.insert_aged(2, 1, 5);
        c.clamp_stamps();
        // Another 2^30 accesses later (the next clamp), neither age has wrapped.
        c.set_now(start + (1 << 30));
        let ages: hashbrown::HashMap<u64, u64> = c.entries().map(|(k, _, a)| (k, a)).collect();
        assert_eq!(ages[&1], CLAMP_AGE + (1 << 30));
        assert_eq!(ages[&2], (1 << 30) + 5);
        // Without the clamp, key 1's 32-bit age would have wrapped to 0 here.
        assert_eq!(((3u64 << 30) + (1 << 30)) as u32, 0);
    }

    /// §3.2's example: a scan that fits in the cache, mixed with a long tail of one-off
    /// keys. LRU keeps losing the scan to the tail; LHD learns to protect it (Fig. 2).
    #[test]
    fn protects_a_scan_from_a_long_tail() {
        let cfg = LhdConfig {
            reconfigure_every: 10_000,
            ..LhdConfig::default()
        };
        let mut lhd = LhdCache::new(cfg, 1000, Unit::Objects, 5);
        let mut lru = crate::ListCache::new(crate::ListOrder::Lru, 1000, Unit::Objects);
        let (mut h_lhd, mut h_lru) = (0u64, 0u64);
        let mut tail = 1_000_000u64;
        for round in 0..300u64 {
            for k in 0..800u64 {
                for key in [k, tail] {
                    let a = lhd.access(key, 1);
                    let b = lru.access(key, 1);
                    if round >= 100 {
                        h_lhd += a as u64;
                        h_lru += b as u64;
                    }
                }
                tail += 1;
            }
        }
        // 800 scan keys + 800 tail keys per round, cache of 1000: LRU gets nothing,
        // LHD keeps most of the scan.
        assert_eq!(h_lru, 0);
        assert!(h_lhd > 200 * 800 / 2, "LHD hits {h_lhd}");
    }
}
