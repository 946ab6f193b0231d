//! INFO memory's process and allocator figures (Redis 7.0's server.c `genRedisInfoString`
//! "memory" section and object.c `getMemoryOverheadData`), read from the OS (/proc) and
//! from jemalloc's own statistics; a figure Augur cannot read is left out rather than
//! made up.
//!
//! Augur's `used_memory` is what the store accounts for its entries (the figure
//! `maxmemory` and eviction work on), so it is also `used_memory_dataset`; what the
//! server holds besides (connection buffers, Lua) is `used_memory_overhead`, outside
//! `used_memory` rather than inside it as in Redis. The store starts empty, so
//! `used_memory_startup` is 0.

use crate::info::human_bytes;
use crate::state::{flag, Shared};
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

pub struct MemStats {
    used: u64,
    peak: u64,
    rss: Option<u64>,
    total_system: Option<u64>,
    /// jemalloc's stats.allocated, stats.active, stats.resident.
    allocator: Option<(u64, u64, u64)>,
    clients_normal: u64,
    clients_monitors: u64,
    /// How many connections each of those two sums is over.
    n_normal: u64,
    n_monitors: u64,
    cached_scripts: u64,
    /// Lua's heap and the script cache.
    lua: u64,
    overhead: u64,
    defrag_running: bool,
    /// (`lazyfree_pending_objects`, `lazyfreed_objects`): augur_store::lazyfree.
    lazyfree: (u64, u64),
}

impl MemStats {
    pub fn gather(shared: &Shared, used: u64) -> MemStats {
        let peak = shared
            .counters
            .used_memory_peak
            .fetch_max(used, Relaxed)
            .max(used);
        let (mut clients_normal, mut clients_monitors) = (0, 0);
        let (mut n_normal, mut n_monitors) = (0, 0);
        for c in shared.clients.lock().values() {
            let m = c.stats.tot_mem.load(Relaxed);
            if c.stats.flags.load(Relaxed) & flag::MONITOR != 0 {
                clients_monitors += m;
                n_monitors += 1;
            } else {
                clients_normal += m;
                n_normal += 1;
            }
        }
        let s = &shared.scripting;
        let lua = s.lua_memory.load(Relaxed) + s.scripts_memory.load(Relaxed);
        MemStats {
            used,
            peak,
            rss: proc_kb("/proc/self/status", "VmRSS:"),
            total_system: proc_kb("/proc/meminfo", "MemTotal:"),
            allocator: jemalloc_stats(),
            clients_normal,
            clients_monitors,
            n_normal,
            n_monitors,
            cached_scripts: s.cached_scripts.load(Relaxed),
            lua,
            overhead: clients_normal + clients_monitors + lua,
            defrag_running: shared.counters.active_defrag_running.load(Relaxed),
            lazyfree: shared.store.lazyfree_stats(),
        }
    }

    /// The figures at this moment ([`MemStats::gather`] at the store's `used_memory`).
    pub fn now(shared: &Shared) -> MemStats {
        MemStats::gather(shared, shared.store.used_memory())
    }

    /// `used_memory` as a percentage of its peak (INFO's used_memory_peak_perc, MEMORY
    /// STATS' peak.percentage).
    fn peak_perc(&self) -> f64 {
        if self.peak > 0 {
            100.0 * ratio(self.used, self.peak)
        } else {
            100.0
        }
    }

    /// The data's share of data and overheads (used_memory_dataset_perc,
    /// dataset.percentage).
    fn dataset_perc(&self) -> f64 {
        100.0 * ratio(self.used, self.used + self.overhead)
    }

    /// The fields Redis prints between used_memory_human and maxmemory.
    pub fn write_head(&self, o: &mut String) {
        macro_rules! line {
            ($($arg:tt)*) => {{ let _ = write!(o, $($arg)*); o.push_str("\r\n"); }};
        }
        if let Some(rss) = self.rss {
            line!("used_memory_rss:{rss}");
            line!("used_memory_rss_human:{}", human_bytes(rss));
        }
        line!("used_memory_peak:{}", self.peak);
        line!("used_memory_peak_human:{}", human_bytes(self.peak));
        line!("used_memory_peak_perc:{:.2}%", self.peak_perc());
        line!("used_memory_overhead:{}", self.overhead);
        line!("used_memory_startup:0");
        line!("used_memory_dataset:{}", self.used);
        line!("used_memory_dataset_perc:{:.2}%", self.dataset_perc());
        if let Some((allocated, active, resident)) = self.allocator {
            line!("allocator_allocated:{allocated}");
            line!("allocator_active:{active}");
            line!("allocator_resident:{resident}");
        }
        if let Some(t) = self.total_system {
            line!("total_system_memory:{t}");
            line!("total_system_memory_human:{}", human_bytes(t));
        }
    }

    /// The fields Redis prints after maxmemory_policy (mem_allocator is printed by the
    /// caller).
    pub fn write_tail(&self, o: &mut String) {
        macro_rules! line {
            ($($arg:tt)*) => {{ let _ = write!(o, $($arg)*); o.push_str("\r\n"); }};
        }
        if let Some((allocated, active, resident)) = self.allocator {
            line!("allocator_frag_ratio:{:.2}", ratio(active, allocated));
            line!("allocator_frag_bytes:{}", active as i64 - allocated as i64);
            line!("allocator_rss_ratio:{:.2}", ratio(resident, active));
            line!("allocator_rss_bytes:{}", resident as i64 - active as i64);
            if let Some(rss) = self.rss {
                line!("rss_overhead_ratio:{:.2}", ratio(rss, resident));
                line!("rss_overhead_bytes:{}", rss as i64 - resident as i64);
            }
        }
        if let Some(rss) = self.rss {
            line!("mem_fragmentation_ratio:{:.2}", ratio(rss, self.used));
            line!("mem_fragmentation_bytes:{}", rss as i64 - self.used as i64);
        }
        // Augur has no replication, AOF or cluster: those buffers do not exist.
        line!("mem_not_counted_for_evict:0");
        line!("mem_replication_backlog:0");
        line!("mem_total_replication_buffers:0");
        // Redis counts MONITORs as replica-class clients.
        line!("mem_clients_slaves:{}", self.clients_monitors);
        line!("mem_clients_normal:{}", self.clients_normal);
        line!("mem_cluster_links:0");
        line!("mem_aof_buffer:0");
        line!("active_defrag_running:{}", self.defrag_running as u8);
        line!("lazyfree_pending_objects:{}", self.lazyfree.0);
        line!("lazyfreed_objects:{}", self.lazyfree.1);
    }
}

impl MemStats {
    /// MEMORY STATS (Redis 7.0's object.c, `memoryCommand` "stats" over
    /// `getMemoryOverheadData`): the same figures as INFO memory, as a map, in Redis's
    /// order and names. `keys` is the keys the caller's keyspace holds over all databases.
    /// As in INFO, `total.allocated` is `used_memory` (the store's accounting) and the
    /// overheads (clients, Lua) are outside it, so `dataset.bytes` is all of it and
    /// `startup.allocated` is 0. Left out, not made up: Redis's per-database `db.N`
    /// maps (the overhead of its two dictionaries per database: Augur's index is per
    /// shard, shared by all databases and charged to the keys), and any allocator or RSS
    /// figure that cannot be read.
    pub fn write_memory_stats(&self, out: &mut crate::resp::Out, keys: u64) {
        enum V {
            Int(i64),
            Double(f64),
        }
        let mut fields: Vec<(&str, V)> = vec![
            ("peak.allocated", V::Int(self.peak as i64)),
            ("total.allocated", V::Int(self.used as i64)),
            ("startup.allocated", V::Int(0)),
            ("replication.backlog", V::Int(0)),
            ("clients.slaves", V::Int(self.clients_monitors as i64)),
            ("clients.normal", V::Int(self.clients_normal as i64)),
            ("cluster.links", V::Int(0)),
            ("aof.buffer", V::Int(0)),
            ("lua.caches", V::Int(self.lua as i64)),
            ("functions.caches", V::Int(0)),
            ("overhead.total", V::Int(self.overhead as i64)),
            ("keys.count", V::Int(keys as i64)),
            (
                "keys.bytes-per-key",
                V::Int(self.used.checked_div(keys).unwrap_or(0) as i64),
            ),
            ("dataset.bytes", V::Int(self.used as i64)),
            ("dataset.percentage", V::Double(self.dataset_perc())),
            ("peak.percentage", V::Double(self.peak_perc())),
        ];
        if let Some((allocated, active, resident)) = self.allocator {
            fields.extend([
                ("allocator.allocated", V::Int(allocated as i64)),
                ("allocator.active", V::Int(active as i64)),
                ("allocator.resident", V::Int(resident as i64)),
                (
                    "allocator-fragmentation.ratio",
                    V::Double(ratio(active, allocated)),
                ),
                (
                    "allocator-fragmentation.bytes",
                    V::Int(active as i64 - allocated as i64),
                ),
                ("allocator-rss.ratio", V::Double(ratio(resident, active))),
                (
                    "allocator-rss.bytes",
                    V::Int(resident as i64 - active as i64),
                ),
            ]);
            if let Some(rss) = self.rss {
                fields.extend([
                    ("rss-overhead.ratio", V::Double(ratio(rss, resident))),
                    ("rss-overhead.bytes", V::Int(rss as i64 - resident as i64)),
                ]);
            }
        }
        if let Some(rss) = self.rss {
            fields.extend([
                ("fragmentation", V::Double(ratio(rss, self.used))),
                ("fragmentation.bytes", V::Int(rss as i64 - self.used as i64)),
            ]);
        }
        out.map(fields.len());
        for (name, v) in fields {
            out.bulk(name.as_bytes());
            match v {
                V::Int(n) => out.int(n),
                V::Double(d) => out.double(d),
            }
        }
    }
}

impl MemStats {
    /// MEMORY DOCTOR: the checks of Redis 7.0's `getMemoryDoctorReport` (object.c), with
    /// its thresholds, over the figures MEMORY STATS reports, in Augur's own words: an
    /// almost empty instance (under 5 MB) is not judged; otherwise a peak over 1.5x the
    /// memory in use, RSS over 1.4x it and 10 MB more, allocator fragmentation or RSS
    /// overhead over 1.1x and 10 MB, process RSS over the allocator's by 1.1x and 10 MB,
    /// clients holding over 200 KB each on average, MONITORs over 10 MB each, or over
    /// 1000 cached scripts are each reported with what to do about it.
    pub fn doctor_report(&self) -> String {
        const MB: u64 = 1 << 20;
        if self.used < 5 * MB {
            return "This instance is empty or holds very little data (under 5 MB): the \
                    memory checks need more to judge by. Ask again once it holds data.\n"
                .into();
        }
        let over = |a: u64, b: u64, r: f64| b > 0 && a as f64 / b as f64 > r && a > b + 10 * MB;
        let mut issues: Vec<&str> = Vec::new();
        if self.peak as f64 / self.used as f64 > 1.5 {
            issues.push(
                "Peak memory: this instance once used more than 1.5x the memory it uses now. \
                 The allocator rarely returns memory after a peak, so RSS and the fragmentation \
                 ratio stay high; the pages are reused as data grows again. MEMORY PURGE may \
                 return some of them now.",
            );
        }
        if let Some(rss) = self.rss {
            if over(rss, self.used, 1.4) {
                issues.push(
                    "High fragmentation: RSS is over 1.4x the memory in use (and 10 MB more). \
                     Active defragmentation (`activedefrag`, on by default) moves live entries \
                     out of sparse pages; INFO memory's allocator_* and rss_* lines say where \
                     the gap is.",
                );
            }
        }
        if let Some((allocated, active, resident)) = self.allocator {
            if over(active, allocated, 1.1) {
                issues.push(
                    "Allocator fragmentation: the allocator's active pages exceed what it has \
                     allocated by over 1.1x (and 10 MB): free slots in partly used pages. \
                     Active defragmentation (`activedefrag`, on by default) compacts them.",
                );
            }
            if over(resident, active, 1.1) {
                issues.push(
                    "Allocator RSS overhead: the allocator holds over 1.1x (and 10 MB more) \
                     resident memory than it uses, pages it has not returned yet. MEMORY PURGE \
                     returns them.",
                );
            }
            if let Some(rss) = self.rss {
                if over(rss, resident, 1.1) {
                    issues.push(
                        "Process RSS overhead: the process holds over 1.1x (and 10 MB more) \
                         resident memory than the allocator accounts for (other allocations, \
                         mapped files or the index's page tables).",
                    );
                }
            }
        }
        if self.n_normal > 0 && self.clients_normal / self.n_normal > 200 * 1024 {
            issues.push(
                "Big client buffers: connections hold over 200 KB each on average, in query \
                 or output buffers (big pipelines or replies, slow readers). CLIENT LIST shows \
                 which; maxmemory-clients bounds them.",
            );
        }
        if self.n_monitors > 0 && self.clients_monitors / self.n_monitors > 10 * MB {
            issues.push(
                "Big MONITOR buffers: MONITOR connections hold over 10 MB each of output \
                 they have not read yet.",
            );
        }
        if self.cached_scripts > 1000 {
            issues.push(
                "Many cached scripts: over 1000 scripts are cached (EVAL of generated script \
                 text?). SCRIPT FLUSH empties the cache; EVALSHA of a few scripts avoids it.",
            );
        }
        if issues.is_empty() {
            return "No memory issue found in this instance.\n".into();
        }
        let mut s = String::from("Memory issues found in this instance:\n\n");
        for i in issues {
            s.push_str(" * ");
            s.push_str(i);
            s.push_str("\n\n");
        }
        s
    }
}

/// a / b, 0 when b is 0 (Redis's ratios of empty figures).
fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

/// A `Name:   123 kB` line of a /proc file, in bytes.
fn proc_kb(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// jemalloc's allocated, active and resident bytes (zmalloc_get_allocator_info), after
/// refreshing its statistics epoch; None if jemalloc does not provide them.
///
/// The store's entry slabs (`augur_store::slab`) are an allocator beside jemalloc, so
/// their figures are added: their slots in use to `allocated`, their slabs to `active`
/// and `resident`. Free slots are then active but unallocated, i.e. fragmentation (only
/// entries of the same size can use them), which INFO's allocator_frag_* and the active
/// defragmenter's trigger see as they see free regions of jemalloc's own slabs. The
/// index tables held as page mappings (`augur_store::index_mapped_bytes`) count as
/// allocated, active and resident alike (a table's pages are all written as it fills).
pub(crate) fn jemalloc_stats() -> Option<(u64, u64, u64)> {
    use std::os::raw::{c_char, c_void};
    // SAFETY: mallctl with NUL-terminated names, properly sized out-parameters and no
    // new value except the epoch's u64, as jemalloc's API requires.
    unsafe {
        let mut epoch: u64 = 1;
        let mut len = std::mem::size_of::<u64>();
        tikv_jemalloc_sys::mallctl(
            c"epoch".as_ptr() as *const c_char,
            &mut epoch as *mut u64 as *mut c_void,
            &mut len,
            &mut epoch as *mut u64 as *mut c_void,
            std::mem::size_of::<u64>(),
        );
        let read = |name: &std::ffi::CStr| -> Option<u64> {
            let mut v: usize = 0;
            let mut len = std::mem::size_of::<usize>();
            let r = tikv_jemalloc_sys::mallctl(
                name.as_ptr() as *const c_char,
                &mut v as *mut usize as *mut c_void,
                &mut len,
                std::ptr::null_mut(),
                0,
            );
            (r == 0).then_some(v as u64)
        };
        let slabs = augur_store::slab::stats();
        let tables = augur_store::index_mapped_bytes();
        let allocated = read(c"stats.allocated")? + slabs.live_bytes as u64 + tables;
        let active = read(c"stats.active")? + slabs.bytes as u64 + tables;
        let resident = read(c"stats.resident")? + slabs.bytes as u64 + tables;
        (allocated > 0).then_some((allocated, active, resident))
    }
}

/// MEMORY MALLOC-STATS: jemalloc's own report (`malloc_stats_print`), as Redis answers it
/// (per-size-class utilisation is where fragmentation shows).
pub fn malloc_stats() -> String {
    use std::os::raw::{c_char, c_void};
    unsafe extern "C" fn append(opaque: *mut c_void, s: *const c_char) {
        // SAFETY: `opaque` is the String below, alive for the call; jemalloc passes a
        // NUL-terminated string.
        unsafe {
            let out = &mut *(opaque as *mut String);
            out.push_str(&std::ffi::CStr::from_ptr(s).to_string_lossy());
        }
    }
    let mut out = String::new();
    // SAFETY: the callback only appends to `out`, which outlives the call.
    unsafe {
        tikv_jemalloc_sys::malloc_stats_print(
            Some(append),
            &mut out as *mut String as *mut c_void,
            std::ptr::null(),
        );
    }
    if out.is_empty() {
        out.push_str("Stats not supported for the current allocator");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn healthy() -> MemStats {
        MemStats {
            used: 100 * MB,
            peak: 120 * MB,
            rss: Some(130 * MB),
            total_system: None,
            allocator: Some((110 * MB, 115 * MB, 120 * MB)),
            clients_normal: 10 * 20 * 1024,
            clients_monitors: 0,
            n_normal: 10,
            n_monitors: 0,
            cached_scripts: 3,
            lua: 0,
            overhead: 0,
            defrag_running: false,
            lazyfree: (0, 0),
        }
    }

    #[test]
    fn doctor_reports_each_issue_past_redis_s_thresholds() {
        assert_eq!(
            healthy().doctor_report(),
            "No memory issue found in this instance.\n"
        );
        let small = MemStats {
            used: 4 * MB,
            peak: 40 * MB,
            ..healthy()
        };
        assert!(small.doctor_report().contains("empty or holds very little"));
        let cases: [(MemStats, &str); 7] = [
            (
                MemStats {
                    peak: 151 * MB,
                    ..healthy()
                },
                "Peak memory",
            ),
            (
                MemStats {
                    rss: Some(141 * MB),
                    allocator: None,
                    ..healthy()
                },
                "High fragmentation",
            ),
            (
                MemStats {
                    allocator: Some((100 * MB, 125 * MB, 126 * MB)),
                    ..healthy()
                },
                "Allocator fragmentation",
            ),
            (
                MemStats {
                    allocator: Some((100 * MB, 105 * MB, 125 * MB)),
                    ..healthy()
                },
                "Allocator RSS overhead",
            ),
            (
                MemStats {
                    rss: Some(139 * MB),
                    ..healthy()
                },
                "Process RSS overhead",
            ),
            (
                MemStats {
                    clients_normal: 10 * 201 * 1024,
                    ..healthy()
                },
                "Big client buffers",
            ),
            (
                MemStats {
                    cached_scripts: 1001,
                    ..healthy()
                },
                "Many cached scripts",
            ),
        ];
        for (stats, issue) in cases {
            let report = stats.doctor_report();
            assert!(
                report.starts_with("Memory issues found"),
                "{issue}: {report}"
            );
            assert!(report.contains(issue), "{issue}: {report}");
            assert_eq!(report.matches(" * ").count(), 1, "only {issue}: {report}");
        }
        // Ratios above the bar but under 10 MB of difference are not reported.
        let slight = MemStats {
            used: 20 * MB,
            peak: 20 * MB,
            rss: Some(29 * MB),
            allocator: Some((20 * MB, 23 * MB, 25 * MB)),
            ..healthy()
        };
        assert_eq!(
            slight.doctor_report(),
            "No memory issue found in this instance.\n"
        );
    }
}
