//! `maxmemory-policy` names, as Redis spells them.

use std::fmt;
use std::str::FromStr;

/// Which entries eviction may choose from and how it orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionPolicy {
    /// Refuse writes with an OOM error when over `maxmemory`.
    NoEviction,
    /// Redis's approximated LRU over all keys (K samples into a 16-entry pool).
    AllKeysLru,
    /// Uniformly random victim among all keys.
    AllKeysRandom,
    /// Approximated LRU among keys with a TTL.
    VolatileLru,
    /// Random victim among keys with a TTL.
    VolatileRandom,
    /// Among keys with a TTL, the one expiring soonest (sampled into the pool).
    VolatileTtl,
    /// LHD, least hit density (Beckmann et al., NSDI'18) over all keys: the lowest hit
    /// density per byte among `lhd-samples` sampled keys (see `crate::lhd`).
    AllKeysLhd,
    /// LHD among keys with a TTL.
    VolatileLhd,
    /// S3-FIFO (Yang et al., SOSP'23) over all keys, its queues sampled: a small
    /// probationary queue, a main queue with 2-bit reinsertion and a ghost of keys
    /// dropped from probation (see `crate::s3fifo`).
    AllKeysS3Fifo,
    /// S3-FIFO among keys with a TTL.
    VolatileS3Fifo,
    /// Redis's approximated LFU over all keys: the lowest decayed logarithmic access
    /// counter among K samples, through the same pool as LRU (see `crate::lfu`).
    AllKeysLfu,
    /// Approximated LFU among keys with a TTL.
    VolatileLfu,
}

impl EvictionPolicy {
    /// Every policy; a tenant's policy is stored as its index here, so new ones go last.
    pub const ALL: [EvictionPolicy; 12] = [
        EvictionPolicy::NoEviction,
        EvictionPolicy::AllKeysLru,
        EvictionPolicy::AllKeysRandom,
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
        EvictionPolicy::AllKeysLhd,
        EvictionPolicy::VolatileLhd,
        EvictionPolicy::AllKeysS3Fifo,
        EvictionPolicy::VolatileS3Fifo,
        EvictionPolicy::AllKeysLfu,
        EvictionPolicy::VolatileLfu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EvictionPolicy::NoEviction => "noeviction",
            EvictionPolicy::AllKeysLru => "allkeys-lru",
            EvictionPolicy::AllKeysRandom => "allkeys-random",
            EvictionPolicy::VolatileLru => "volatile-lru",
            EvictionPolicy::VolatileRandom => "volatile-random",
            EvictionPolicy::VolatileTtl => "volatile-ttl",
            EvictionPolicy::AllKeysLhd => "allkeys-lhd",
            EvictionPolicy::VolatileLhd => "volatile-lhd",
            EvictionPolicy::AllKeysS3Fifo => "allkeys-s3fifo",
            EvictionPolicy::VolatileS3Fifo => "volatile-s3fifo",
            EvictionPolicy::AllKeysLfu => "allkeys-lfu",
            EvictionPolicy::VolatileLfu => "volatile-lfu",
        }
    }

    /// Whether only keys with a TTL may be evicted.
    pub fn volatile_only(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileTtl
                | EvictionPolicy::VolatileLhd
                | EvictionPolicy::VolatileS3Fifo
                | EvictionPolicy::VolatileLfu
        )
    }

    /// Whether eviction ranks by Redis's LFU counter (entries then carry LFU words).
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllKeysLfu | EvictionPolicy::VolatileLfu
        )
    }

    /// Whether eviction ranks by LHD's hit density (entries then carry LHD tags).
    pub fn is_lhd(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllKeysLhd | EvictionPolicy::VolatileLhd
        )
    }

    /// Whether eviction is S3-FIFO's (entries then carry S3-FIFO words).
    pub fn is_s3fifo(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllKeysS3Fifo | EvictionPolicy::VolatileS3Fifo
        )
    }
}

impl fmt::Display for EvictionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EvictionPolicy {
    type Err = ();
    /// Case-insensitive, as Redis's CONFIG SET accepts.
    fn from_str(s: &str) -> Result<Self, ()> {
        EvictionPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or(())
    }
}
