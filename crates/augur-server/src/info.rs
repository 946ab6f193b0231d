//! The INFO command's text, laid out as Redis lays it out (`# Section`, `field:value`
//! lines, CRLF) so that tools parsing Redis's INFO parse Augur's.

use crate::resp::Args;
use crate::state::{Shared, REDIS_COMPAT_VERSION};
use augur_store::TenantId;
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

/// Every section, in the order Redis 7.0's genRedisInfoString writes them (Augur's
/// `tenants` last). `INFO all` and `INFO everything` (there are no module sections)
/// render all of them.
const ALL: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
    "tenants",
    "dlru",
    "zones",
];

/// `INFO` and `INFO default`: all but the per-command sections, as in Redis 7.0.
const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
    "tenants",
];

/// Renders the sections INFO's arguments ask for: none or `default`, `all`,
/// `everything`, and section names, case-insensitive, any number of them (7.0's
/// genInfoSectionDict); each section once, in Redis's order; unknown names add nothing.
///
/// `tenant` is the caller's: `keyspace` shows its databases only, and `tenants` shows
/// every tenant to the default user and only itself to any other. The per-command
/// sections are the server's, for every tenant (see `stats`).
pub fn render(shared: &Shared, tenant: TenantId, args: Args<'_>) -> String {
    let mut wanted: Vec<&str> = Vec::new();
    if args.len() == 1 {
        wanted.extend_from_slice(DEFAULT);
    }
    for a in args.iter().skip(1) {
        let a = String::from_utf8_lossy(a).to_ascii_lowercase();
        match a.as_str() {
            "default" => wanted.extend_from_slice(DEFAULT),
            "all" | "everything" => wanted.extend_from_slice(ALL),
            s => {
                if let Some(known) = ALL.iter().find(|d| **d == s) {
                    wanted.push(known);
                }
            }
        }
    }
    let mut out = String::new();
    for section in ALL {
        if !wanted.contains(section) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        section_text(shared, tenant, section, &mut out);
    }
    out
}

fn section_text(shared: &Shared, tenant: TenantId, section: &str, o: &mut String) {
    let cfg = shared.config.read().clone();
    let uptime = shared.started.elapsed().as_secs();
    macro_rules! line {
        ($($arg:tt)*) => {{ let _ = write!(o, $($arg)*); o.push_str("\r\n"); }};
    }
    match section {
        "dlru" => crate::dlru::info_section(shared, o),
        "zones" => {
            // The default user sees the whole server's zones; another tenant its own.
            let z = shared.store.zone_stats((tenant != 0).then_some(tenant));
            let ratio = if z.z_compressed_bytes > 0 {
                z.z_raw_bytes as f64 / z.z_compressed_bytes as f64
            } else {
                0.0
            };
            let share = if z.n_bytes + z.z_bytes > 0 {
                z.n_bytes as f64 / (z.n_bytes + z.z_bytes) as f64
            } else {
                1.0
            };
            line!("# Zones");
            line!(
                "compressed_zone:{}",
                if cfg.zone.enabled { "yes" } else { "no" }
            );
            line!(
                "zone_codec:{}",
                cfg.get("compressed-zone-codec").unwrap_or_default()
            );
            line!("zone_block_size:{}", cfg.zone.block_capacity);
            line!("zone_dict_size:{}", cfg.zone.dict_size);
            line!("zone_target_n_fraction:{}", cfg.zone.target_n_fraction);
            line!("zone_window_ms:{}", cfg.zone.window_ms);
            line!("n_zone_bytes:{}", z.n_bytes);
            line!("n_zone_items:{}", z.n_items);
            line!("z_zone_bytes:{}", z.z_bytes);
            line!("z_zone_items:{}", z.z_items);
            line!("z_zone_raw_bytes:{}", z.z_raw_bytes);
            line!("z_zone_compressed_bytes:{}", z.z_compressed_bytes);
            line!("z_zone_dict_bytes:{}", z.z_dict_bytes);
            line!("z_zone_dicts_trained:{}", z.z_dicts_trained);
            line!("z_zone_compression_ratio:{ratio:.3}");
            line!("n_zone_hits:{}", z.n_hits);
            line!("z_zone_hits:{}", z.z_hits);
            line!("zone_promotions:{}", z.promotions);
            line!("zone_demotions:{}", z.demotions);
            line!("z_zone_evictions:{}", z.z_evictions);
            line!("z_zone_decompressions:{}", z.z_decompressions);
            line!("z_zone_filter_negatives:{}", z.z_filter_negatives);
            line!(
                "z_zone_filter_false_positives:{}",
                z.z_filter_false_positives
            );
            line!("z_zone_tail_appends:{}", z.z_tail_appends);
            line!("z_zone_block_writes:{}", z.z_block_writes);
            line!("z_zone_splits:{}", z.z_splits);
            line!("z_zone_merges:{}", z.z_merges);
            line!("n_zone_share:{share:.4}");
            line!("n_zone_target_share:{:.4}", z.n_share);
            line!("n_zone_served_fraction:{:.4}", z.last_window_n_fraction);
            line!("zone_benchmark_age:{}", z.benchmark);
        }
        "server" => {
            line!("# Server");
            // Redis's fields, in its order (server.c genRedisInfoString), less its
            // compiler's (atomicvar_api, gcc_version); augur_version after the version.
            line!("redis_version:{REDIS_COMPAT_VERSION}");
            line!("augur_version:{}", env!("CARGO_PKG_VERSION"));
            line!("redis_git_sha1:00000000");
            line!("redis_git_dirty:0");
            line!("redis_build_id:{}", build_id());
            line!("redis_mode:standalone");
            line!("os:{}", os_name());
            line!("arch_bits:64");
            line!("monotonic_clock:POSIX clock_gettime");
            line!("multiplexing_api:tokio");
            line!("process_id:{}", std::process::id());
            line!("process_supervised:no");
            line!("run_id:{}", shared.run_id);
            let addrs = shared.listen_addrs.lock();
            line!("tcp_port:{}", addrs.first().map_or(cfg.port, |a| a.port()));
            let now_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros());
            line!("server_time_usec:{now_us}");
            line!("uptime_in_seconds:{uptime}");
            line!("uptime_in_days:{}", uptime / 86400);
            line!("hz:{}", cfg.hz);
            line!("configured_hz:{}", cfg.hz);
            // Redis's LRU clock: seconds, 24 bits (LRU_CLOCK_MAX), at 1 s resolution.
            line!("lru_clock:{}", (now_us / 1_000_000) & ((1 << 24) - 1));
            line!(
                "executable:{}",
                std::env::current_exe()
                    .map_or_else(|_| "augur".into(), |p| p.display().to_string())
            );
            line!("config_file:{}", cfg.config_file);
            line!("io_threads_active:0");
        }
        "clients" => {
            line!("# Clients");
            line!("connected_clients:{}", shared.connected_clients());
            line!("maxclients:{}", cfg.maxclients);
            line!(
                "blocked_clients:{}",
                shared.blocking.blocked_clients() + shared.pause.waiting.load(Relaxed)
            );
            line!("tracking_clients:{}", shared.tracking.info().0);
        }
        "memory" => {
            let used = shared.store.used_memory();
            line!("# Memory");
            line!("used_memory:{used}");
            line!("used_memory_human:{}", human_bytes(used));
            let m = crate::memstats::MemStats::gather(shared, used);
            m.write_head(o);
            line!("maxmemory:{}", cfg.maxmemory);
            line!("maxmemory_human:{}", human_bytes(cfg.maxmemory));
            line!("maxmemory_policy:{}", cfg.maxmemory_policy.name());
            // Augur's LHD (augur_store::lhd): per tenant with a model, summed over shards.
            line!("lhd_samples:{}", cfg.lhd_samples);
            for (t, l) in shared.store.lhd_stats().iter().enumerate() {
                if l.models > 0 && (tenant == 0 || t == tenant as usize) {
                    line!(
                        "lhd_tenant{t}:models={},reconfigurations={},age_shift={},overflows={},model_bytes={}",
                        l.models, l.reconfigurations, l.age_shift, l.overflows, l.bytes
                    );
                }
            }
            // S3-FIFO (augur_store::s3fifo): per tenant with queues, summed over shards.
            for (t, q) in shared.store.s3fifo_stats().iter().enumerate() {
                if q.shards > 0 && (tenant == 0 || t == tenant as usize) {
                    line!(
                        "s3fifo_tenant{t}:moved_to_main={},reinserted={},small_evictions={},main_evictions={},ghost_hits={},small_share={:.3},ghost_bytes={}",
                        q.moved_to_main,
                        q.reinserted,
                        q.small_evictions,
                        q.main_evictions,
                        q.ghost_hits,
                        q.small_share_permille as f64 / 1000.0,
                        q.ghost_bytes
                    );
                }
            }
            m.write_tail(o);
            let s = &shared.scripting;
            let lua = s.lua_memory.load(std::sync::atomic::Ordering::Relaxed);
            let scripts = s.scripts_memory.load(std::sync::atomic::Ordering::Relaxed);
            line!("used_memory_lua:{lua}");
            line!("used_memory_vm_eval:{lua}");
            line!("used_memory_lua_human:{}", human_bytes(lua));
            line!("used_memory_scripts_eval:{scripts}");
            line!(
                "number_of_cached_scripts:{}",
                s.cached_scripts.load(std::sync::atomic::Ordering::Relaxed)
            );
            line!("number_of_functions:0");
            line!("number_of_libraries:0");
            line!("used_memory_vm_functions:0");
            line!("used_memory_vm_total:{lua}");
            line!("used_memory_vm_total_human:{}", human_bytes(lua));
            line!("used_memory_functions:0");
            line!("used_memory_scripts:{scripts}");
            line!("used_memory_scripts_human:{}", human_bytes(scripts));
            line!("mem_allocator:jemalloc");
        }
        "persistence" => {
            line!("# Persistence");
            line!("loading:0");
            line!("async_loading:0");
            line!("rdb_changes_since_last_save:0");
            line!("rdb_bgsave_in_progress:0");
            line!("rdb_last_bgsave_status:ok");
            line!("aof_enabled:0");
            line!("aof_rewrite_in_progress:0");
        }
        "stats" => {
            let s = shared.store.stats(tenant);
            let k = &shared.counters;
            line!("# Stats");
            line!(
                "total_connections_received:{}",
                k.total_connections_received.load(Relaxed)
            );
            line!(
                "total_commands_processed:{}",
                k.total_commands_processed.load()
            );
            line!(
                "instantaneous_ops_per_sec:{}",
                k.instantaneous_ops.load(Relaxed)
            );
            line!("total_net_input_bytes:{}", k.net_input_bytes.load());
            line!("total_net_output_bytes:{}", k.net_output_bytes.load());
            line!(
                "rejected_connections:{}",
                k.rejected_connections.load(Relaxed)
            );
            line!("expired_keys:{}", s.expired_keys);
            line!("evicted_keys:{}", s.evicted_keys);
            line!(
                "evicted_clients:{}",
                shared
                    .counters
                    .evicted_clients
                    .load(std::sync::atomic::Ordering::Relaxed)
            );
            line!("keyspace_hits:{}", s.keyspace_hits);
            line!("keyspace_misses:{}", s.keyspace_misses);
            // One allocation per key: a key's hits and misses are its entry's.
            let dh = k.active_defrag_hits.load(Relaxed);
            let dm = k.active_defrag_misses.load(Relaxed);
            line!("active_defrag_hits:{dh}");
            line!("active_defrag_misses:{dm}");
            line!("active_defrag_key_hits:{dh}");
            line!("active_defrag_key_misses:{dm}");
            // The caller's tenant's channels and patterns (Pub/Sub is per tenant).
            let ps = shared.pubsub.counts(tenant);
            line!("pubsub_channels:{}", ps.channels);
            line!("pubsub_patterns:{}", ps.patterns);
            line!("pubsubshard_channels:{}", ps.shard_channels);
            let (_, tkeys, titems, tprefixes) = shared.tracking.info();
            line!("tracking_total_keys:{tkeys}");
            line!("tracking_total_items:{titems}");
            line!("tracking_total_prefixes:{tprefixes}");
            line!("total_error_replies:{}", shared.stats.total_error_replies());
            line!(
                "unexpected_error_replies:{}",
                shared.stats.unexpected_error_replies.load(Relaxed)
            );
        }
        "replication" => {
            line!("# Replication");
            line!("role:master");
            line!("connected_slaves:0");
            // No replication: the offsets a master without replicas reports.
            line!("master_failover_state:no-failover");
            line!("master_replid:{}", shared.run_id);
            line!("master_replid2:0000000000000000000000000000000000000000");
            line!("master_repl_offset:0");
            line!("second_repl_offset:-1");
            line!("repl_backlog_active:0");
            line!("repl_backlog_size:{}", cfg.repl_backlog_size);
            line!("repl_backlog_first_byte_offset:0");
            line!("repl_backlog_histlen:0");
        }
        "cpu" => {
            line!("# CPU");
            let (user, sys) = cpu_times();
            line!("used_cpu_sys:{sys:.6}");
            line!("used_cpu_user:{user:.6}");
            // Augur forks no children.
            line!("used_cpu_sys_children:0.000000");
            line!("used_cpu_user_children:0.000000");
        }
        "modules" => line!("# Modules"),
        "commandstats" => {
            line!("# Commandstats");
            shared.stats.commandstats(o);
        }
        "errorstats" => {
            line!("# Errorstats");
            shared.stats.errorstats(o);
        }
        "latencystats" => {
            line!("# Latencystats");
            shared
                .stats
                .latencystats(&cfg.latency_tracking_info_percentiles, o);
        }
        "cluster" => {
            line!("# Cluster");
            line!("cluster_enabled:0");
        }
        "keyspace" => {
            line!("# Keyspace");
            let s = shared.store.stats(tenant);
            for (db, (keys, expires)) in s.keys_per_db.iter().enumerate() {
                if *keys > 0 {
                    line!("db{db}:keys={keys},expires={expires},avg_ttl=0");
                }
            }
        }
        "tenants" => {
            line!("# Tenants");
            line!("tenant_partitioning:{}", cfg.tenant_partitioning.name());
            line!("tenant_objective:{}", cfg.tenant_objective.name());
            line!(
                "tenant_intervals:{}",
                shared.profiler.intervals.load(Relaxed)
            );
            line!(
                "tenant_interval_last_us:{}",
                shared.profiler.interval_last_us.load(Relaxed)
            );
            line!(
                "tenant_interval_max_us:{}",
                shared.profiler.interval_max_us.load(Relaxed)
            );
            if let Some(e) = shared.profiler.last_error.lock().clone() {
                line!("tenant_last_error:{e}");
            }
            // The profiler thread's CPU on sampled references, percent of one core, and
            // its budget (crate::cpu_budget).
            line!(
                "tenant_profiler_cpu:{:.2}",
                shared.profiler.cpu_share() * 100.0
            );
            line!("tenant_profiler_cpu_budget:{}", cfg.tenant_profiler_cpu);
            let users = shared.tenants.users();
            line!("tenants:{}", users.len());
            for u in users {
                if tenant != 0 && u.id != tenant {
                    continue;
                }
                let fields = crate::commands::tenant_info_fields(shared, &u);
                let get = |name: &str| {
                    fields
                        .iter()
                        .find(|(k, _)| *k == name)
                        .map_or(String::new(), |(_, v)| v.clone())
                };
                line!(
                    "tenant_{}:id={},used_memory={},keys={},target={},k={},hits={},misses={},evicted_keys={},miss_latency_us={},access_rate={},predicted_miss_ratio_at_target={}",
                    u.name,
                    u.id,
                    get("used_memory"),
                    get("keys"),
                    get("target"),
                    get("k"),
                    get("hits"),
                    get("misses"),
                    get("evicted_keys"),
                    get("miss_latency_us"),
                    get("access_rate"),
                    get("predicted_miss_ratio_at_target")
                );
            }
        }
        _ => {}
    }
}

/// Redis's bytesToHuman.
pub(crate) fn human_bytes(n: u64) -> String {
    let n = n as f64;
    const K: f64 = 1024.0;
    if n < K {
        format!("{}B", n as u64)
    } else if n < K * K {
        format!("{:.2}K", n / K)
    } else if n < K * K * K {
        format!("{:.2}M", n / (K * K))
    } else {
        format!("{:.2}G", n / (K * K * K))
    }
}

/// Process user and system CPU seconds (Linux /proc; zero elsewhere).
fn cpu_times() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return (0.0, 0.0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = 100.0; // USER_HZ on Linux
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / tick;
    (get(11), get(12))
}

/// INFO server `os`: `uname -s -r -m`, as Redis prints it (server.c: `name.sysname`,
/// `name.release`, `name.machine`).
fn os_name() -> String {
    // SAFETY: uname fills the zeroed struct it is given; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

/// INFO server `redis_build_id`: Redis hashes its build's name, date and compiler; this
/// is an FNV-1a hash of Augur's version and target, so it changes with the build's
/// version, in hex as Redis prints it.
fn build_id() -> String {
    let name = concat!("augur-", env!("CARGO_PKG_VERSION"));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes().chain(std::env::consts::ARCH.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:x}")
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn human() {
        assert_eq!(human_bytes(0), "0B");
        assert_eq!(human_bytes(1536), "1.50K");
        assert_eq!(human_bytes(100 * 1024 * 1024), "100.00M");
    }
}
