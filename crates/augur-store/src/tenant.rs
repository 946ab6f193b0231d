//! Tenants in the store: the namespace every key lives in, the per-tenant limits the
//! shards read on every write, and the hook through which sampled references leave
//! the request path for the profiler.
//!
//! # Why tenants are dictionaries inside each shard
//!
//! kRedis (§4.3, "multi-dictionary") keeps one dictionary per tenant so that eviction
//! can sample *within* one tenant, and a tenant's keys are never visible to another.
//! Augur does the same inside each shard: a shard holds one `Part` (table, TTL list,
//! eviction pool, counters) per tenant that has touched it, so
//! - isolation is structural: a lookup goes to the caller's tenant's table only;
//! - sampling K entries of one tenant is O(1) and uniform (its own table);
//! - sampling over *all* tenants (`tenant-partitioning off`, free competition as in
//!   Redis) picks a part with probability proportional to its entry count, then a
//!   uniform entry in it: uniform over the union;
//! - the shard's logical clock is shared by its parts, so idle times of different
//!   tenants are comparable when they compete.
//!
//! A tenant's limits are divided evenly over the shards, as the global `maxmemory` is:
//! keys spread over shards by hash, so per-shard shares behave like the global budget
//! (the same argument the single-tenant store rests on), and no write ever has to lock
//! a second shard to make room.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// A tenant's slot in the store (0 is the `default` tenant).
pub type TenantId = u16;

/// The most tenants one store holds at once.
pub const MAX_TENANTS: usize = 1024;

/// The namespace of a key: a tenant and one of its SELECT databases. Every key-level
/// operation names one; two namespaces never see each other's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ns {
    pub tenant: TenantId,
    pub db: u8,
}

impl Ns {
    /// The default tenant's database 0.
    pub const DEFAULT: Ns = Ns { tenant: 0, db: 0 };

    pub const fn new(tenant: TenantId, db: u8) -> Ns {
        Ns { tenant, db }
    }
}

/// How memory is divided between tenants (`tenant-partitioning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Partitioning {
    /// One shared pool: when memory is full, victims are sampled uniformly over all
    /// tenants' entries and the global K applies, as in Redis with prefixed keys.
    #[default]
    Off,
    /// Operator-set per-tenant `maxmemory` (a hard cap); when the whole store is full,
    /// the tenant most over its share gives (kRedis §4.2 step 4 with fixed targets).
    Static,
    /// Targets and K set by the kRedis tuner every interval; enforcement as `Static`.
    Kredis,
}

impl Partitioning {
    pub const ALL: [Partitioning; 3] = [
        Partitioning::Off,
        Partitioning::Static,
        Partitioning::Kredis,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Partitioning::Off => "off",
            Partitioning::Static => "static",
            Partitioning::Kredis => "kredis",
        }
    }

    pub fn parse(s: &str) -> Option<Partitioning> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(c: u8) -> Partitioning {
        Self::ALL[(c as usize).min(2)]
    }
}

/// What the shards read about one tenant on every write; changed live (atomics) by the
/// server's tenant registry and the tuner.
#[derive(Default)]
pub struct TenantLimits {
    /// Hard limit in bytes (0 = none). Never exceeded by the tenant's own writes.
    pub(crate) cap: AtomicU64,
    /// The bytes the tenant is meant to hold when memory is full (0 = nothing
    /// reserved). Under pressure the tenant most over its target gives memory.
    pub(crate) target: AtomicU64,
    /// K for evictions from this tenant (0 = the global `maxmemory-samples`).
    pub(crate) samples: AtomicUsize,
    /// The tenant's own eviction policy (`maxmemory-policy auto`'s choice), as its
    /// index in `EvictionPolicy::ALL` plus one; 0 = the global `maxmemory-policy`.
    pub(crate) policy: std::sync::atomic::AtomicU8,
    /// Spatial-sampling threshold of the profiler (`hash mod 2^24 < threshold`; 0 = off).
    pub(crate) sample_threshold: AtomicU64,
    /// The tenant's bytes over all shards, as the shards last synced them (each within
    /// 16 KB of its own share): what eviction compares with the target.
    pub(crate) used: AtomicU64,
    /// Every key the tenant references while it is profiled, sampled or not: the
    /// distinct-key count `D` of the profiler's estimator (`augur_mrc::krr::SampleAdjust::
    /// Distinct`). Created with the tenant's first sampling rate above 0
    /// ([`crate::Store::set_tenant_sample_rate`]), so that a tenant nobody profiles pays
    /// neither its 16 KB nor its update.
    pub(crate) distinct: std::sync::OnceLock<augur_sim::distinct::DistinctCounter>,
}

impl TenantLimits {
    /// The tenant's usage over all shards (within 16 KB per shard).
    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }
    pub(crate) fn add_used(&self, delta: i64) {
        self.used.fetch_add(delta as u64, Relaxed);
    }
    pub fn cap(&self) -> u64 {
        self.cap.load(Relaxed)
    }
    pub fn target(&self) -> u64 {
        self.target.load(Relaxed)
    }
    pub fn samples(&self) -> usize {
        self.samples.load(Relaxed)
    }
}

/// Modulus of the spatial sampling filter; the same as `augur_mrc::SpatialSampler`'s,
/// so a key the request path hands over is a key the profiler's model tracks.
pub const SAMPLE_MODULUS: u64 = 1 << 24;

/// The threshold for sampling rate `rate` (0 turns profiling off), as
/// `augur_mrc::SpatialSampler::new` rounds it.
pub fn sample_threshold(rate: f64) -> u64 {
    if rate <= 0.0 || rate.is_nan() {
        return 0;
    }
    ((rate.min(1.0) * SAMPLE_MODULUS as f64).round() as u64).clamp(1, SAMPLE_MODULUS)
}

/// SplitMix64's finaliser (the same function as `augur_mrc::mix64`), applied to a key's
/// id before the sampling test so the filter is independent of the table's hash bits.
#[inline]
pub fn mix64(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What happened to a sampled key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// A read found the key.
    Hit,
    /// A read did not find it (the application will usually refill it with a SET).
    Miss,
    /// A write stored it.
    Write,
    /// It was deleted by a command (not by eviction or expiry).
    Delete,
}

/// One sampled reference, as the request path hands it to the profiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    pub tenant: TenantId,
    /// The key's identity within the tenant (its hash with the database mixed in).
    pub id: u64,
    /// Bytes the store charges for the key (allocation plus index share); 0 on a miss
    /// or delete.
    pub bytes: u32,
    pub kind: RefKind,
    pub at: Instant,
}

/// Receives sampled references. Called with a shard locked, so it must be O(1) and
/// never block (a bounded queue that drops and counts when full).
pub trait ReferenceSink: Send + Sync {
    fn record(&self, r: Reference);
}

/// The per-tenant limits of every slot, plus the partitioning mode.
pub(crate) struct TenantTable {
    pub(crate) limits: Box<[TenantLimits]>,
    pub(crate) partitioning: AtomicU8,
    /// Each tenant's logical -> physical database map (SWAPDB; see `crate::notify`).
    pub(crate) db_maps: Box<[std::sync::Arc<crate::notify::DbMap>]>,
}

impl TenantTable {
    pub(crate) fn new(databases: usize) -> Self {
        Self {
            limits: (0..MAX_TENANTS).map(|_| TenantLimits::default()).collect(),
            partitioning: AtomicU8::new(Partitioning::Off.code()),
            db_maps: (0..MAX_TENANTS)
                .map(|_| std::sync::Arc::new(crate::notify::DbMap::identity(databases)))
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn db_map(&self, t: TenantId) -> &std::sync::Arc<crate::notify::DbMap> {
        &self.db_maps[(t as usize).min(MAX_TENANTS - 1)]
    }

    #[inline]
    pub(crate) fn get(&self, t: TenantId) -> &TenantLimits {
        &self.limits[(t as usize).min(MAX_TENANTS - 1)]
    }

    #[inline]
    pub(crate) fn partitioning(&self) -> Partitioning {
        Partitioning::from_code(self.partitioning.load(Relaxed))
    }
}
