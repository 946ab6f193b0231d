//! Server configuration: the redis.conf-style file, command-line overrides, and the
//! subset that CONFIG GET / CONFIG SET change at run time.
//!
//! One function, [`ServerConfig::apply`], validates every `name value` pair whatever its
//! source (file, flag, CONFIG SET), so the three can never disagree on what is valid.

use augur_store::{EvictionPolicy, Partitioning};

/// Redis's `loglevel` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Verbose,
    Notice,
    Warning,
    Nothing,
}

impl LogLevel {
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Verbose => "verbose",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Nothing => "nothing",
        }
    }

    pub fn parse(s: &str) -> Option<LogLevel> {
        [
            LogLevel::Debug,
            LogLevel::Verbose,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Nothing,
        ]
        .into_iter()
        .find(|l| l.name().eq_ignore_ascii_case(s))
    }

    /// The `tracing` filter directive with the same meaning: Redis's verbose sits
    /// between debug and notice, so it maps to debug too.
    pub fn tracing_directive(self) -> &'static str {
        match self {
            LogLevel::Debug | LogLevel::Verbose => "debug",
            LogLevel::Notice => "info",
            LogLevel::Warning => "warn",
            LogLevel::Nothing => "off",
        }
    }
}

/// Everything `augur serve` can be configured with. Defaults follow Redis's.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub port: u16,
    pub bind: Vec<String>,
    pub requirepass: Option<String>,
    /// `protected-mode` (default yes): while the default user has no password, only
    /// loopback clients are served (networking.c `clientAcceptHandler`).
    pub protected_mode: bool,
    pub maxclients: u64,
    /// Idle client timeout in seconds; 0 = never.
    pub timeout: u64,
    pub maxmemory: u64,
    pub maxmemory_policy: EvictionPolicy,
    pub maxmemory_samples: usize,
    /// `maxmemory-samples auto`: DLRU chooses K each interval (crate::dlru);
    /// `maxmemory_samples` stays the K a number set and the one restored when a number
    /// is set again.
    pub maxmemory_samples_auto: bool,
    /// `maxmemory-policy auto`: each tenant (or the keyspace, partitioning off) runs
    /// the policy its miniature caches predict the cheapest (crate::autopolicy);
    /// `maxmemory_policy` is then the chooser's initial policy (`allkeys-lhd`), which a
    /// tenant without a choice yet evicts by.
    pub maxmemory_policy_auto: bool,
    /// GETs per DLRU interval (DLRU §3.5's 5M); the profiler's interval also ends one.
    pub dlru_interval: u64,
    /// The per-K curves the kRedis tuner partitions with: KRR or miniature caches.
    pub k_chooser: crate::dlru::KChooser,
    /// `lhd-samples`: candidates an LHD eviction ranks (Augur's; augur_store::lhd).
    pub lhd_samples: usize,
    /// `lfu-log-factor` and `lfu-decay-time` (minutes): Redis's LFU tuning
    /// (augur_store's lfu module), defaults 10 and 1 as Redis's.
    pub lfu_log_factor: u32,
    pub lfu_decay_time: u32,
    /// The compressed zone (zExpander, augur_store::zone): `compressed-zone`,
    /// `compressed-zone-codec`, `compressed-zone-block-size`, `compressed-zone-dict-size`,
    /// `compressed-zone-target`,
    /// `compressed-zone-window-ms`.
    pub zone: augur_store::ZoneConfig,
    /// `maxmemory-clients`: bytes the connections may hold together before the largest
    /// are closed; negative values are a percentage of maxmemory (as Redis stores it);
    /// 0 = no limit.
    pub maxmemory_clients: i64,
    pub databases: usize,
    pub proto_max_bulk_len: u64,
    pub client_query_buffer_limit: u64,
    pub loglevel: LogLevel,
    /// Empty = standard error.
    pub logfile: String,
    pub hz: u32,
    /// Tokio worker threads; 0 = one per available core.
    pub threads: usize,
    /// Store shards (a power of two).
    pub shards: usize,
    /// How memory is divided between tenants (off | static | kredis).
    pub tenant_partitioning: Partitioning,
    /// What the kRedis tuner minimises: total miss latency (Eq. 6) or misses (Eq. 7).
    pub tenant_objective: TenantObjective,
    /// How the profiler's sampled KRR turns sampled misses into miss ratios
    /// (`tenant-sample-adjust`: distinct, shards, regression or none; see
    /// `augur_mrc::krr::SampleAdjust`). A change restarts the tenants' models.
    pub tenant_sample_adjust: augur_mrc::krr::SampleAdjust,
    /// Requests between two tuner runs (kRedis §4.2: "every interval").
    pub tenant_interval: u64,
    /// Longest time between two tuner runs, in milliseconds (0 = requests only).
    pub tenant_interval_ms: u64,
    /// Spatial sampling rate R of the per-tenant profiler (kRedis §2.7); 0 = off.
    pub tenant_sample_rate: f64,
    /// `tenant-sample-rate auto` (the default): kRedis §5's rule, R = 0.01 for a tenant
    /// with fewer than ~8M keys and 0.001 above (`tenant_sample_rate` is then the small
    /// tenants' rate). The profiler's model memory grows with sampled keys, R x keys,
    /// so the lower rate caps it for big tenants while small ones keep enough samples.
    pub tenant_sample_rate_auto: bool,
    /// The K values profiled and chosen from (kRedis §5 tracks several at once).
    /// The default leaves out the paper's K = 16: with the exponent calibrated against
    /// Redis's pooled sampling (K' = K^2), its KRR stack costs K' = 256 swaps per level
    /// of every sampled reference, more than the other four together; measured at
    /// ~1M requests/s on 2 cores, profiling with it cost 13-21 % of redis-benchmark's
    /// pipelined rps, without it the cost is within run-to-run noise (BENCHMARKS.md).
    /// `tenant-k-set 1,2,4,8,16` turns it on.
    pub tenant_k_set: Vec<u32>,
    /// Allocation unit G of the partitioning DP, in bytes (Alg. 3).
    pub tenant_alloc_unit: u64,
    /// The tuner keeps a tenant's running K unless the best K's curve predicts a miss
    /// ratio lower by at least this much at the tenant's new target
    /// (`augur_mrc::partition::MergedMrc::k_to_run`). Default 0: kRedis's argmin every
    /// interval; 0.005 stopped K flapping in one measured run but held a worse K in
    /// another (BENCHMARKS.md, "Keeping the running K").
    pub tenant_k_switch_margin: f64,
    /// A refill SET later than this after the GET miss is not counted as the miss's
    /// latency (milliseconds).
    pub tenant_miss_cutoff_ms: u64,
    /// Miss penalty assumed for a tenant that never refills, in microseconds.
    pub tenant_default_miss_penalty_us: f64,
    /// The profiler thread's CPU budget for sampled references, in percent of one core
    /// (0 = none): with `tenant-sample-rate auto`, the profiler halves the busiest
    /// tenant's rate (down to kRedis §5's R = 0.001) while it spends more, and gives it
    /// back when well under (crate::cpu_budget).
    pub tenant_profiler_cpu: f64,
    /// Port of the Prometheus `/metrics` HTTP endpoint (0 = off).
    pub metrics_port: u16,
    /// Milliseconds a script may run before other clients get BUSY and SCRIPT KILL works
    /// (`busy-reply-threshold`, alias `lua-time-limit`; 0 = never).
    pub busy_reply_threshold: u64,
    /// `user ...` lines of the config file (ACL rules, Redis syntax), in order.
    pub users: Vec<String>,
    /// `tenant NAME param value ...` lines of the config file, in order.
    pub tenant_lines: Vec<String>,
    /// Hash and set encoding thresholds (Redis 7.0's names and defaults; the
    /// `hash-max-ziplist-*` names are aliases).
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    /// `list-max-listpack-size` (alias `list-max-ziplist-size`): a list node's fill, as
    /// Redis's quicklist reads it (see `augur_store::List`).
    pub list_max_listpack_size: i64,
    /// `list-compress-depth`: a list's nodes more than this many from either end are
    /// kept compressed (see `augur_store::List`); 0, the default, compresses none.
    pub list_compress_depth: u32,
    /// `zset-max-listpack-entries` (alias `zset-max-ziplist-entries`) and
    /// `zset-max-listpack-value` (alias `zset-max-ziplist-value`): a sorted set's
    /// listpack limits (see `augur_store::ZSet`).
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// `stream-node-max-bytes` and `stream-node-max-entries`: where a stream's nodes
    /// split (see `augur_store::stream`); Redis's defaults 4096 and 100.
    pub stream_node_max_bytes: usize,
    pub stream_node_max_entries: usize,
    /// `hll-sparse-max-bytes`: the longest a sparse HyperLogLog may grow before it is
    /// converted to dense (see `crate::hll`); Redis's default, 3000.
    pub hll_sparse_max_bytes: u64,
    /// Active defragmentation of the entries (`activedefrag`, Redis's name; see
    /// `augur_store::defrag`): runs while jemalloc's active bytes exceed its allocated
    /// bytes by more than `active-defrag-ignore-bytes` and by more than
    /// `active-defrag-threshold-lower` percent, for at most `active-defrag-cycle-max`
    /// percent of one core's time.
    pub activedefrag: bool,
    pub active_defrag_ignore_bytes: u64,
    pub active_defrag_threshold_lower: u64,
    pub active_defrag_cycle_max: u64,
    /// Per-command latency histograms for INFO latencystats (`latency-tracking`).
    pub latency_tracking: bool,
    /// `lazyfree-lazy-*` (Redis's names, all `no` by default): which removals free a
    /// large value on the background thread (`augur_store::lazyfree`): evictions,
    /// expiries, values a command replaces, DEL (as UNLINK), and FLUSHDB / FLUSHALL
    /// without SYNC or ASYNC (as ASYNC).
    pub lazyfree_lazy_eviction: bool,
    pub lazyfree_lazy_expire: bool,
    pub lazyfree_lazy_server_del: bool,
    pub lazyfree_lazy_user_del: bool,
    pub lazyfree_lazy_user_flush: bool,
    /// The percentiles INFO latencystats reports (`latency-tracking-info-percentiles`).
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// `tracking-table-max-keys`: keys CLIENT TRACKING remembers before it invalidates
    /// some to stay under (0: no limit).
    pub tracking_table_max_keys: u64,
    /// `client-output-buffer-limit`: per class (normal, replica, pubsub), how much may be
    /// queued for a connection that does not read before it is closed (see
    /// `crate::obuf`).
    pub client_output_buffer_limit: crate::obuf::Limits,
    /// Accepted and reported for compatibility (tools and Redis's tests set them); they
    /// change nothing in Augur, which has no replication and no persistence:
    /// `repl-backlog-size`, `save` (the snapshot points, kept as given) and the hidden
    /// `key-load-delay`.
    pub repl_backlog_size: u64,
    pub save: String,
    pub key_load_delay: i64,
    /// `notify-keyspace-events` as Redis's flags word (`augur_store::notify::flags`);
    /// 0, the default, publishes nothing.
    pub notify_keyspace_events: u32,
    /// ACL LOG's length (`acllog-max-len`).
    pub acllog_max_len: usize,
    /// SLOWLOG: commands that ran at least this many µs are logged; negative: none
    /// (`slowlog-log-slower-than`, crate::slowlog).
    pub slowlog_log_slower_than: i64,
    /// SLOWLOG's length per tenant (`slowlog-max-len`).
    pub slowlog_max_len: u64,
    /// The latency monitor's threshold in ms; 0: off (`latency-monitor-threshold`,
    /// crate::latency).
    pub latency_monitor_threshold: u64,
    /// `acl-pubsub-default`: whether new users start with `allchannels` (Redis 7.0's
    /// default is `resetchannels`).
    pub acl_pubsub_default_all: bool,
    /// `aclfile`: users come from this file (ACL LOAD / ACL SAVE); empty = none.
    pub aclfile: String,
    /// `dir`: the working directory, as an absolute path (relative paths such as
    /// `aclfile` resolve there); empty = the directory the server was started in.
    /// Setting it changes the process's working directory (config.c's
    /// setConfigDirOption).
    pub dir: String,
    /// The configuration file the server was started with, as an absolute path (INFO
    /// server `config_file`); empty = none.
    pub config_file: String,
}

/// The kRedis tuner's objective (`tenant-objective`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TenantObjective {
    /// Minimise Σ mMRC_i(C_i)·a_i·p_i: total time spent on misses (Eq. 6).
    #[default]
    Latency,
    /// Maximise hits, Σ (1 - mMRC_i(C_i))·a_i (Eq. 7).
    Hits,
    /// Minimise the mean over tenants of each tenant's mean miss latency,
    /// Σ mMRC_i(C_i)·p_i: the metric of kRedis §6.4 ("the average of tenants' mean
    /// access latency"). Not weighted by access rate, so a tenant whose clients wait on
    /// slow misses (and so send fewer requests) is not starved by Eq. 6's feedback.
    MeanLatency,
}

impl TenantObjective {
    pub fn name(self) -> &'static str {
        match self {
            TenantObjective::Latency => "latency",
            TenantObjective::Hits => "hits",
            TenantObjective::MeanLatency => "mean-latency",
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            port: 6379,
            // Redis 7's compiled-in default: every IPv4 address and, if the machine
            // has IPv6, every IPv6 one; protected-mode keeps non-loopback clients out
            // until a password is set.
            bind: vec!["*".into(), "-::*".into()],
            protected_mode: true,
            requirepass: None,
            maxclients: 10000,
            timeout: 0,
            maxmemory: 0,
            maxmemory_policy: EvictionPolicy::NoEviction,
            maxmemory_samples: 5,
            maxmemory_samples_auto: false,
            maxmemory_policy_auto: false,
            dlru_interval: 5_000_000,
            k_chooser: crate::dlru::KChooser::Krr,
            lhd_samples: augur_store::DEFAULT_LHD_SAMPLES,
            lfu_log_factor: augur_sim::lfu::DEFAULT_LOG_FACTOR,
            lfu_decay_time: augur_sim::lfu::DEFAULT_DECAY_MINUTES,
            zone: Default::default(),
            maxmemory_clients: 0,
            databases: 16,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            loglevel: LogLevel::Notice,
            logfile: String::new(),
            hz: 10,
            threads: 0,
            shards: 64,
            tenant_partitioning: Partitioning::Off,
            tenant_objective: TenantObjective::Latency,
            tenant_sample_adjust: augur_mrc::krr::SampleAdjust::default(),
            tenant_interval: 1_000_000,
            tenant_interval_ms: 10_000,
            tenant_sample_rate: 0.01,
            tenant_sample_rate_auto: true,
            tenant_k_set: vec![1, 2, 4, 8],
            tenant_alloc_unit: 1024 * 1024,
            tenant_k_switch_margin: 0.0,
            tenant_miss_cutoff_ms: 1000,
            tenant_profiler_cpu: 1.0,
            tenant_default_miss_penalty_us: 1000.0,
            metrics_port: 0,
            busy_reply_threshold: 5000,
            users: Vec::new(),
            tenant_lines: Vec::new(),
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            list_max_listpack_size: augur_store::DEFAULT_LIST_FILL,
            list_compress_depth: 0,
            zset_max_listpack_entries: 128,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            zset_max_listpack_value: 64,
            hll_sparse_max_bytes: 3000,
            // On by default, unlike Redis: a cache held at maxmemory churns entries of
            // drifting sizes, and the store's promise is RSS within maxmemory + 10 %.
            // Redis's thresholds (100 MB, 10 %) would leave a 256 MB cache 1.25x over;
            // 8 MB let a 64 MB cache's free slots sit at 12 % (`bench/memory_drift.sh`
            // reached the bound exactly), 2 MB is 3 % of it.
            activedefrag: true,
            active_defrag_ignore_bytes: 2 << 20,
            active_defrag_threshold_lower: 5,
            active_defrag_cycle_max: 25,
            latency_tracking: true,
            lazyfree_lazy_eviction: false,
            lazyfree_lazy_expire: false,
            lazyfree_lazy_server_del: false,
            lazyfree_lazy_user_del: false,
            lazyfree_lazy_user_flush: false,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            tracking_table_max_keys: crate::tracking::DEFAULT_MAX_KEYS,
            client_output_buffer_limit: crate::obuf::DEFAULTS,
            repl_backlog_size: 1024 * 1024,
            save: String::new(),
            key_load_delay: 0,
            notify_keyspace_events: 0,
            acllog_max_len: 128,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_monitor_threshold: 0,
            acl_pubsub_default_all: false,
            aclfile: String::new(),
            dir: String::new(),
            config_file: String::new(),
        }
    }
}

impl ServerConfig {
    /// The store's encoding thresholds from this configuration.
    pub fn encoding_limits(&self) -> augur_store::EncodingLimits {
        augur_store::EncodingLimits {
            hash_max_listpack_entries: self.hash_max_listpack_entries,
            hash_max_listpack_value: self.hash_max_listpack_value,
            set_max_intset_entries: self.set_max_intset_entries,
            list_max_listpack_size: self.list_max_listpack_size,
            list_compress_depth: self.list_compress_depth,
            zset_max_listpack_entries: self.zset_max_listpack_entries,
            zset_max_listpack_value: self.zset_max_listpack_value,
            stream_node: augur_store::stream::NodeLimits {
                max_bytes: self.stream_node_max_bytes,
                max_entries: self.stream_node_max_entries,
            },
        }
    }
}

/// Parameters CONFIG GET knows about, in the order it lists them. `save` and `appendonly`
/// are fixed (persistence is off) but answered, because tools such as redis-benchmark
/// query them.
fn yes_no(on: bool) -> String {
    if on { "yes" } else { "no" }.to_string()
}

impl ServerConfig {
    /// The `lazyfree-lazy-*` parameters the store applies itself (`-user-del` and
    /// `-user-flush` are the server's choice of command).
    pub fn lazyfree(&self) -> augur_store::lazyfree::LazyFreeConfig {
        augur_store::lazyfree::LazyFreeConfig {
            expire: self.lazyfree_lazy_expire,
            eviction: self.lazyfree_lazy_eviction,
            server_del: self.lazyfree_lazy_server_del,
        }
    }
}

pub const PARAMS: &[&str] = &[
    "port",
    "bind",
    "requirepass",
    "maxclients",
    "protected-mode",
    "timeout",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "lhd-samples",
    "lfu-log-factor",
    "lfu-decay-time",
    "compressed-zone",
    "compressed-zone-codec",
    "compressed-zone-block-size",
    "compressed-zone-dict-size",
    "compressed-zone-target",
    "compressed-zone-window-ms",
    "maxmemory-clients",
    "databases",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "client-output-buffer-limit",
    "loglevel",
    "logfile",
    "hz",
    "threads",
    "shards",
    "tenant-partitioning",
    "tenant-objective",
    "tenant-sample-adjust",
    "tenant-interval",
    "tenant-interval-ms",
    "tenant-sample-rate",
    "tenant-k-set",
    "dlru-interval",
    "k-chooser",
    "tenant-alloc-unit",
    "tenant-k-switch-margin",
    "tenant-miss-cutoff-ms",
    "tenant-profiler-cpu",
    "tenant-default-miss-penalty",
    "metrics-port",
    "busy-reply-threshold",
    "lua-time-limit",
    "save",
    "appendonly",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
    "set-max-intset-entries",
    "list-max-listpack-size",
    "list-max-ziplist-size",
    "list-compress-depth",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "hll-sparse-max-bytes",
    "latency-tracking",
    "latency-tracking-info-percentiles",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "tracking-table-max-keys",
    "activedefrag",
    "active-defrag-ignore-bytes",
    "active-defrag-threshold-lower",
    "active-defrag-cycle-max",
    "repl-backlog-size",
    "daemonize",
    "replicaof",
    "slaveof",
    "key-load-delay",
    "notify-keyspace-events",
    "acllog-max-len",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "latency-monitor-threshold",
    "acl-pubsub-default",
    "aclfile",
    "dir",
];

/// Parameters `CONFIG GET` with a pattern (`*`) does not list; only their exact name
/// returns them (Redis's HIDDEN_CONFIG).
pub const HIDDEN_PARAMS: &[&str] = &["key-load-delay"];

/// Parameters Redis declares IMMUTABLE_CONFIG: CONFIG SET refuses them whatever the
/// value, with Redis's text. Other parameters Augur cannot change at run time (threads,
/// shards, metrics-port) accept their current value as a no-op, so that
/// a client setting back what CONFIG GET * returned (Redis's "CONFIG sanity") works,
/// and refuse any other value the same way.
pub const IMMUTABLE_PARAMS: &[&str] =
    &["databases", "logfile", "daemonize", "replicaof", "slaveof"];

/// Parameters CONFIG SET may change while running.
pub const LIVE_PARAMS: &[&str] = &[
    "port",
    "bind",
    "maxmemory-clients",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "lhd-samples",
    "lfu-log-factor",
    "lfu-decay-time",
    "compressed-zone",
    "compressed-zone-target",
    "compressed-zone-window-ms",
    "requirepass",
    "maxclients",
    "protected-mode",
    "timeout",
    "loglevel",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "client-output-buffer-limit",
    "hz",
    "tenant-partitioning",
    "tenant-objective",
    "tenant-sample-adjust",
    "tenant-interval",
    "tenant-interval-ms",
    "tenant-sample-rate",
    "tenant-k-set",
    "dlru-interval",
    "k-chooser",
    "tenant-alloc-unit",
    "tenant-k-switch-margin",
    "tenant-miss-cutoff-ms",
    "tenant-profiler-cpu",
    "tenant-default-miss-penalty",
    "busy-reply-threshold",
    "lua-time-limit",
    "save",
    "appendonly",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
    "set-max-intset-entries",
    "list-max-listpack-size",
    "list-max-ziplist-size",
    "list-compress-depth",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "hll-sparse-max-bytes",
    "latency-tracking",
    "latency-tracking-info-percentiles",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-server-del",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "tracking-table-max-keys",
    "activedefrag",
    "active-defrag-ignore-bytes",
    "active-defrag-threshold-lower",
    "active-defrag-cycle-max",
    "repl-backlog-size",
    "key-load-delay",
    "notify-keyspace-events",
    "acllog-max-len",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "latency-monitor-threshold",
    "acl-pubsub-default",
    "dir",
];

/// An io::Error as C's strerror text ("No such file or directory"), without Rust's
/// " (os error 2)" suffix: Redis's error replies quote strerror.
pub fn os_error_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// memtoull's units (case-insensitive; k = 1000, kb = 1024): the multiplier.
pub fn memory_unit(unit: &str) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    })
}

/// Parses a memory amount as Redis's `memtoull`: digits with an optional unit
/// (b, k, kb, m, mb, g, gb; case-insensitive; k = 1000, kb = 1024).
pub fn parse_memory(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(memory_unit(unit)?)
}

/// Parses a duration such as `200us`, `2ms`, `1.5s` or a bare number of microseconds,
/// into microseconds.
pub fn parse_duration_us(s: &str) -> Option<f64> {
    let s = s.trim().to_ascii_lowercase();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mul = match unit {
        "" | "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "ns" => 1e-3,
        _ => return None,
    };
    let v = n * mul;
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// A MEMORY_CONFIG | PERCENT_CONFIG value (config.c): `N%` (stored negative) or a
/// memory amount.
fn parse_memory_or_percent(v: &str) -> Result<i64, String> {
    if let Some(p) = v.strip_suffix('%') {
        let n: i64 = p
            .parse()
            .map_err(|_| "argument must be a memory or percent value".to_string())?;
        if n > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        if n < 0 {
            return Err("argument must be a memory or percent value".into());
        }
        return Ok(-n);
    }
    parse_memory(v)
        .and_then(|n| i64::try_from(n).ok())
        .ok_or_else(|| "argument must be a memory or percent value".to_string())
}

fn parse_int<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.parse::<T>()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())
}

/// An integer within `lo..=hi`, with config.c's out-of-range text.
fn parse_int_in<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    v: &str,
    lo: T,
    hi: T,
) -> Result<T, String> {
    let n: T = parse_int(v)?;
    if n < lo || n > hi {
        return Err(format!("argument must be between {lo} and {hi} inclusive"));
    }
    Ok(n)
}

/// A number within `lo..=hi` (NaN is outside), with config.c's out-of-range text.
pub(crate) fn parse_number_in(v: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let x: f64 = v
        .parse()
        .map_err(|_| "argument couldn't be parsed into a number".to_string())?;
    if !(lo..=hi).contains(&x) {
        return Err(format!("argument must be between {lo} and {hi} inclusive"));
    }
    Ok(x)
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

impl ServerConfig {
    /// Sets one parameter from its textual form. The error is the reason Redis gives
    /// (used in `-ERR CONFIG SET failed (possibly related to argument 'x') - <reason>`
    /// and in config-file error messages).
    pub fn apply(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name.to_ascii_lowercase().as_str() {
            "port" => self.port = parse_int(value)?,
            "bind" => {
                // `bind ""` listens on no TCP address, as in Redis.
                self.bind = value.split_whitespace().map(str::to_string).collect();
            }
            "requirepass" => self.requirepass = if value.is_empty() { None } else { Some(value.to_string()) },
            "protected-mode" => self.protected_mode = parse_bool(value)?,
            "maxclients" => {
                let n: u64 = parse_int(value)?;
                if n < 1 {
                    return Err("argument must be between 1 and 4294967295 inclusive".into());
                }
                self.maxclients = n;
            }
            "timeout" => self.timeout = parse_int(value)?,
            "maxmemory" => self.maxmemory = parse_memory(value).ok_or("argument must be a memory value")?,
            "maxmemory-policy" if value.eq_ignore_ascii_case("auto") => {
                self.maxmemory_policy =
                    crate::autopolicy::store_policy(crate::autopolicy::INITIAL_POLICY);
                self.maxmemory_policy_auto = true;
            }
            "maxmemory-policy" => {
                self.maxmemory_policy = value.parse().map_err(|_| "argument(s) must be one of the following: volatile-lru, allkeys-lru, volatile-lfu, allkeys-lfu, volatile-random, allkeys-random, volatile-ttl, noeviction, allkeys-lhd, volatile-lhd, allkeys-s3fifo, volatile-s3fifo, auto".to_string())?;
                self.maxmemory_policy_auto = false;
            }
            "lhd-samples" => {
                self.lhd_samples = parse_int_in(value, 1, augur_store::MAX_LHD_SAMPLES)?
            }
            // Redis's ranges (config.c): 0..=INT_MAX for both.
            "lfu-log-factor" => self.lfu_log_factor = parse_int_in(value, 0, i32::MAX as u32)?,
            "lfu-decay-time" => self.lfu_decay_time = parse_int_in(value, 0, i32::MAX as u32)?,
            "compressed-zone" => self.zone.enabled = parse_bool(value)?,
            "compressed-zone-codec" => {
                self.zone.codec = match value.to_ascii_lowercase().as_str() {
                    "lz4" => augur_store::zzone::Codec::Lz4,
                    "zstd" => augur_store::zzone::Codec::Zstd { level: 1 },
                    _ => return Err("argument must be one of the following: lz4, zstd".into()),
                }
            }
            "compressed-zone-block-size" => {
                let n: usize = parse_memory(value)
                    .ok_or("argument must be a memory value")?
                    .try_into()
                    .map_err(|_| "argument must be between 256 and 65536 inclusive")?;
                if !(256..=65536).contains(&n) {
                    return Err("argument must be between 256 and 65536 inclusive".into());
                }
                self.zone.block_capacity = n;
            }
            "compressed-zone-dict-size" => {
                let n: usize = parse_memory(value)
                    .ok_or("argument must be a memory value")?
                    .try_into()
                    .map_err(|_| "argument must be between 0 and 65536 inclusive")?;
                if n > augur_store::zzone::MAX_DICT {
                    return Err("argument must be between 0 and 65536 inclusive".into());
                }
                self.zone.dict_size = n;
            }
            "compressed-zone-target" => {
                let f: f64 = value
                    .parse()
                    .ok()
                    .filter(|f: &f64| (0.0..=1.0).contains(f))
                    .ok_or("argument must be a fraction between 0 and 1")?;
                self.zone.target_n_fraction = f;
            }
            "compressed-zone-window-ms" => {
                let n: u64 = parse_int(value)?;
                if n == 0 {
                    return Err("argument must be at least 1".into());
                }
                self.zone.window_ms = n;
            }
            "maxmemory-samples" if value.eq_ignore_ascii_case("auto") => {
                self.maxmemory_samples_auto = true;
            }
            "maxmemory-samples" => {
                self.maxmemory_samples = parse_int_in(value, 1, 64)?;
                self.maxmemory_samples_auto = false;
            }
            "maxmemory-clients" => self.maxmemory_clients = parse_memory_or_percent(value)?,
            "databases" => self.databases = parse_int_in(value, 1, 256)?,
            "proto-max-bulk-len" => {
                let n = parse_memory(value).ok_or("argument must be a memory value")?;
                if n < 1024 * 1024 {
                    return Err("argument must be a memory value greater than or equal to 1mb".into());
                }
                self.proto_max_bulk_len = n;
            }
            "client-query-buffer-limit" => {
                let n = parse_memory(value).ok_or("argument must be a memory value")?;
                if n < 1024 * 1024 {
                    return Err("argument must be a memory value greater than or equal to 1mb".into());
                }
                self.client_query_buffer_limit = n;
            }
            "client-output-buffer-limit" => {
                crate::obuf::parse(value, &mut self.client_output_buffer_limit)?
            }
            "loglevel" => {
                self.loglevel = LogLevel::parse(value)
                    .ok_or("argument(s) must be one of the following: debug, verbose, notice, warning, nothing")?
            }
            "logfile" => self.logfile = value.to_string(),
            "hz" => {
                let n: i64 = parse_int(value)?;
                // Redis clamps hz into 1..=500 rather than refusing.
                self.hz = n.clamp(1, 500) as u32;
            }
            "threads" => self.threads = parse_int(value)?,
            "shards" => {
                let n: usize = parse_int(value)?;
                if n == 0 || !n.is_power_of_two() || n > 65536 {
                    return Err("shards must be a power of two between 1 and 65536".into());
                }
                self.shards = n;
            }
            "tenant-partitioning" => {
                self.tenant_partitioning = Partitioning::parse(value)
                    .ok_or("argument(s) must be one of the following: off, static, kredis")?
            }
            "tenant-objective" => {
                self.tenant_objective = match value.to_ascii_lowercase().as_str() {
                    "latency" => TenantObjective::Latency,
                    "hits" => TenantObjective::Hits,
                    "mean-latency" => TenantObjective::MeanLatency,
                    _ => return Err("argument(s) must be one of the following: latency, hits, mean-latency".into()),
                }
            }
            "tenant-sample-adjust" => {
                self.tenant_sample_adjust = augur_mrc::krr::SampleAdjust::from_name(value).ok_or(
                    "argument(s) must be one of the following: distinct, shards, regression, none",
                )?
            }
            "tenant-interval" => self.tenant_interval = parse_int_in(value, 1000, u64::MAX)?,
            "tenant-interval-ms" => self.tenant_interval_ms = parse_int(value)?,
            "tenant-sample-rate" if value.eq_ignore_ascii_case("auto") => {
                self.tenant_sample_rate = 0.01;
                self.tenant_sample_rate_auto = true;
            }
            "tenant-sample-rate" => {
                self.tenant_sample_rate = parse_number_in(value, 0.0, 1.0)?;
                self.tenant_sample_rate_auto = false;
            }
            "tenant-k-set" => {
                let mut ks = Vec::new();
                for part in value.split(|c: char| c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()) {
                    let k: u32 = parse_int(part)?;
                    if !(1..=64).contains(&k) {
                        return Err("every K must be between 1 and 64 inclusive".into());
                    }
                    ks.push(k);
                }
                ks.sort_unstable();
                ks.dedup();
                if ks.is_empty() || ks.len() > 8 {
                    return Err("argument must list 1 to 8 values of K".into());
                }
                self.tenant_k_set = ks;
            }
            "dlru-interval" => self.dlru_interval = parse_int_in(value, 1000, u64::MAX)?,
            "k-chooser" => {
                self.k_chooser = crate::dlru::KChooser::parse(value)
                    .ok_or("argument(s) must be one of the following: krr, minisim")?
            }
            "tenant-alloc-unit" => {
                let n = parse_memory(value).ok_or("argument must be a memory value")?;
                if n < 1024 {
                    return Err("argument must be a memory value greater than or equal to 1kb".into());
                }
                self.tenant_alloc_unit = n;
            }
            "tenant-k-switch-margin" => {
                self.tenant_k_switch_margin = parse_number_in(value, 0.0, 1.0)?
            }
            "tenant-miss-cutoff-ms" => self.tenant_miss_cutoff_ms = parse_int_in(value, 1, u64::MAX)?,
            "tenant-profiler-cpu" => {
                self.tenant_profiler_cpu = parse_number_in(value.trim_end_matches('%'), 0.0, 100.0)?
            }
            "tenant-default-miss-penalty" => {
                self.tenant_default_miss_penalty_us =
                    parse_duration_us(value).ok_or("argument must be a duration such as 200us, 2ms or 1s")?
            }
            "metrics-port" => self.metrics_port = parse_int(value)?,
            "busy-reply-threshold" | "lua-time-limit" => self.busy_reply_threshold = parse_int(value)?,
            // Persistence is not implemented: accept only the "off" setting, so configs
            // and tools that turn persistence off keep working.
            "appendonly" => {
                if parse_bool(value)? {
                    return Err("persistence is not supported (only appendonly no is accepted)".into());
                }
            }
            "hash-max-listpack-entries" | "hash-max-ziplist-entries" => {
                self.hash_max_listpack_entries = parse_int(value)?
            }
            "hash-max-listpack-value" | "hash-max-ziplist-value" => {
                self.hash_max_listpack_value = parse_memory(value)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or("argument must be a memory value")?
            }
            "set-max-intset-entries" => self.set_max_intset_entries = parse_int(value)?,
            "list-max-listpack-size" | "list-max-ziplist-size" => {
                self.list_max_listpack_size =
                    parse_int_in(value, i64::from(i32::MIN), i64::from(i32::MAX))?
            }
            "list-compress-depth" => {
                self.list_compress_depth = parse_int_in(value, 0, i32::MAX as u32)?
            }
            "zset-max-listpack-entries" | "zset-max-ziplist-entries" => {
                self.zset_max_listpack_entries = parse_int(value)?
            }
            "zset-max-listpack-value" | "zset-max-ziplist-value" => {
                self.zset_max_listpack_value = parse_memory(value)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or("argument must be a memory value")?
            }
            "stream-node-max-bytes" => {
                self.stream_node_max_bytes = parse_memory(value)
                    .filter(|&n| n <= i64::MAX as u64)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or("argument must be a memory value")?
            }
            "stream-node-max-entries" => {
                self.stream_node_max_entries = parse_int_in(value, 0, i64::MAX as usize)?
            }
            "hll-sparse-max-bytes" => {
                self.hll_sparse_max_bytes = parse_memory(value)
                    .filter(|&n| n <= i64::MAX as u64)
                    .ok_or("argument must be a memory value")?
            }
            "latency-tracking" => self.latency_tracking = parse_bool(value)?,
            "lazyfree-lazy-eviction" => self.lazyfree_lazy_eviction = parse_bool(value)?,
            "lazyfree-lazy-expire" => self.lazyfree_lazy_expire = parse_bool(value)?,
            "lazyfree-lazy-server-del" => self.lazyfree_lazy_server_del = parse_bool(value)?,
            "lazyfree-lazy-user-del" => self.lazyfree_lazy_user_del = parse_bool(value)?,
            "lazyfree-lazy-user-flush" => self.lazyfree_lazy_user_flush = parse_bool(value)?,
            "tracking-table-max-keys" => {
                self.tracking_table_max_keys = parse_int_in(value, 0, i64::MAX)? as u64
            }
            "activedefrag" => self.activedefrag = parse_bool(value)?,
            "active-defrag-ignore-bytes" => {
                self.active_defrag_ignore_bytes =
                    parse_memory(value).ok_or("argument must be a memory value")?
            }
            "active-defrag-threshold-lower" => {
                self.active_defrag_threshold_lower = parse_int_in(value, 0, 1000)?
            }
            "active-defrag-cycle-max" => self.active_defrag_cycle_max = parse_int_in(value, 1, 99)?,
            "latency-tracking-info-percentiles" => {
                // config.c's setConfigLatencyTrackingInfoPercentilesOutputOption.
                let mut ps = Vec::new();
                for w in value.split_whitespace() {
                    let p: f64 = w
                        .parse()
                        .ok()
                        .filter(|p: &f64| p.is_finite())
                        .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                    }
                    ps.push(p);
                }
                self.latency_tracking_info_percentiles = ps;
            }
            "repl-backlog-size" => {
                let n = parse_memory(value).ok_or("argument must be a memory value")?;
                if n < 1 {
                    return Err("argument must be a memory value greater than or equal to 1".into());
                }
                self.repl_backlog_size = n;
            }
            "save" => {
                // Pairs of <seconds> <changes>, or "" (config.c's setConfigSaveOption).
                let words: Vec<&str> = value.split_whitespace().collect();
                if !words.len().is_multiple_of(2) || words.iter().any(|w| w.parse::<u64>().is_err()) {
                    return Err("Invalid save parameters".into());
                }
                self.save = words.join(" ");
            }
            "daemonize" => {
                if parse_bool(value)? {
                    return Err("Augur does not daemonize (run it under a supervisor)".into());
                }
            }
            "replicaof" | "slaveof" => {
                if !value.trim().is_empty() && !value.eq_ignore_ascii_case("no one") {
                    return Err("replication is not supported".into());
                }
            }
            "key-load-delay" => self.key_load_delay = parse_int(value)?,
            "notify-keyspace-events" => {
                self.notify_keyspace_events = augur_store::notify::parse_flags(value.as_bytes())
                    .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?
            }
            "acllog-max-len" => self.acllog_max_len = parse_int(value)?,
            "slowlog-log-slower-than" => {
                self.slowlog_log_slower_than = parse_int_in(value, -1, i64::MAX)?
            }
            "slowlog-max-len" => {
                self.slowlog_max_len = parse_int_in(value, 0i64, i64::MAX)? as u64
            }
            "latency-monitor-threshold" => {
                self.latency_monitor_threshold = parse_int_in(value, 0i64, i64::MAX)? as u64
            }
            "aclfile" => self.aclfile = value.to_string(),
            "dir" => {
                let path = std::fs::canonicalize(value).map_err(|e| os_error_text(&e))?;
                if !path.is_dir() {
                    return Err("Not a directory".into());
                }
                self.dir = path.display().to_string();
            }
            "acl-pubsub-default" => {
                self.acl_pubsub_default_all = match value.to_ascii_lowercase().as_str() {
                    "allchannels" => true,
                    "resetchannels" => false,
                    _ => return Err("argument(s) must be one of the following: allchannels, resetchannels".into()),
                }
            }
            _ => return Err(format!("Unknown option or number of arguments for CONFIG SET - '{name}'")),
        }
        Ok(())
    }

    /// The textual value CONFIG GET reports, or None for an unknown name.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "port" => self.port.to_string(),
            "bind" => self.bind.join(" "),
            "requirepass" => self.requirepass.clone().unwrap_or_default(),
            "acllog-max-len" => self.acllog_max_len.to_string(),
            "slowlog-log-slower-than" => self.slowlog_log_slower_than.to_string(),
            "slowlog-max-len" => self.slowlog_max_len.to_string(),
            "latency-monitor-threshold" => self.latency_monitor_threshold.to_string(),
            "aclfile" => self.aclfile.clone(),
            "dir" if self.dir.is_empty() => std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            "dir" => self.dir.clone(),
            "acl-pubsub-default" => if self.acl_pubsub_default_all {
                "allchannels"
            } else {
                "resetchannels"
            }
            .to_string(),
            "maxclients" => self.maxclients.to_string(),
            "protected-mode" => yes_no(self.protected_mode),
            "timeout" => self.timeout.to_string(),
            "maxmemory" => self.maxmemory.to_string(),
            "maxmemory-policy" if self.maxmemory_policy_auto => "auto".into(),
            "maxmemory-policy" => self.maxmemory_policy.name().to_string(),
            "maxmemory-samples" if self.maxmemory_samples_auto => "auto".into(),
            "maxmemory-samples" => self.maxmemory_samples.to_string(),
            "dlru-interval" => self.dlru_interval.to_string(),
            "k-chooser" => self.k_chooser.name().to_string(),
            "lhd-samples" => self.lhd_samples.to_string(),
            "lfu-log-factor" => self.lfu_log_factor.to_string(),
            "lfu-decay-time" => self.lfu_decay_time.to_string(),
            "compressed-zone" => if self.zone.enabled { "yes" } else { "no" }.to_string(),
            "compressed-zone-codec" => match self.zone.codec {
                augur_store::zzone::Codec::Lz4 => "lz4".into(),
                augur_store::zzone::Codec::Zstd { .. } => "zstd".into(),
            },
            "compressed-zone-block-size" => self.zone.block_capacity.to_string(),
            "compressed-zone-dict-size" => self.zone.dict_size.to_string(),
            "compressed-zone-target" => self.zone.target_n_fraction.to_string(),
            "compressed-zone-window-ms" => self.zone.window_ms.to_string(),
            "maxmemory-clients" if self.maxmemory_clients < 0 => {
                format!("{}%", -self.maxmemory_clients)
            }
            "maxmemory-clients" => self.maxmemory_clients.to_string(),
            "databases" => self.databases.to_string(),
            "proto-max-bulk-len" => self.proto_max_bulk_len.to_string(),
            "client-query-buffer-limit" => self.client_query_buffer_limit.to_string(),
            "client-output-buffer-limit" => crate::obuf::format(&self.client_output_buffer_limit),
            "loglevel" => self.loglevel.name().to_string(),
            "logfile" => self.logfile.clone(),
            "hz" => self.hz.to_string(),
            "threads" => self.threads.to_string(),
            "shards" => self.shards.to_string(),
            "tenant-partitioning" => self.tenant_partitioning.name().to_string(),
            "tenant-objective" => self.tenant_objective.name().to_string(),
            "tenant-sample-adjust" => self.tenant_sample_adjust.name().to_string(),
            "tenant-interval" => self.tenant_interval.to_string(),
            "tenant-interval-ms" => self.tenant_interval_ms.to_string(),
            "tenant-sample-rate" if self.tenant_sample_rate_auto => "auto".into(),
            "tenant-sample-rate" => self.tenant_sample_rate.to_string(),
            "tenant-k-set" => self
                .tenant_k_set
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            "tenant-alloc-unit" => self.tenant_alloc_unit.to_string(),
            "tenant-k-switch-margin" => self.tenant_k_switch_margin.to_string(),
            "tenant-miss-cutoff-ms" => self.tenant_miss_cutoff_ms.to_string(),
            "tenant-profiler-cpu" => self.tenant_profiler_cpu.to_string(),
            "tenant-default-miss-penalty" => format!("{}us", self.tenant_default_miss_penalty_us),
            "metrics-port" => self.metrics_port.to_string(),
            "busy-reply-threshold" | "lua-time-limit" => self.busy_reply_threshold.to_string(),
            "save" => self.save.clone(),
            "latency-tracking" => if self.latency_tracking { "yes" } else { "no" }.to_string(),
            "lazyfree-lazy-eviction" => yes_no(self.lazyfree_lazy_eviction),
            "lazyfree-lazy-expire" => yes_no(self.lazyfree_lazy_expire),
            "lazyfree-lazy-server-del" => yes_no(self.lazyfree_lazy_server_del),
            "lazyfree-lazy-user-del" => yes_no(self.lazyfree_lazy_user_del),
            "lazyfree-lazy-user-flush" => yes_no(self.lazyfree_lazy_user_flush),
            "tracking-table-max-keys" => self.tracking_table_max_keys.to_string(),
            "activedefrag" => if self.activedefrag { "yes" } else { "no" }.to_string(),
            "active-defrag-ignore-bytes" => self.active_defrag_ignore_bytes.to_string(),
            "active-defrag-threshold-lower" => self.active_defrag_threshold_lower.to_string(),
            "active-defrag-cycle-max" => self.active_defrag_cycle_max.to_string(),
            "latency-tracking-info-percentiles" => self
                .latency_tracking_info_percentiles
                .iter()
                .map(|p| crate::stats::format_percentile(*p))
                .collect::<Vec<_>>()
                .join(" "),
            "repl-backlog-size" => self.repl_backlog_size.to_string(),
            "daemonize" => "no".to_string(),
            "replicaof" | "slaveof" => String::new(),
            "key-load-delay" => self.key_load_delay.to_string(),
            "appendonly" => "no".to_string(),
            "hash-max-listpack-entries" | "hash-max-ziplist-entries" => {
                self.hash_max_listpack_entries.to_string()
            }
            "hash-max-listpack-value" | "hash-max-ziplist-value" => {
                self.hash_max_listpack_value.to_string()
            }
            "set-max-intset-entries" => self.set_max_intset_entries.to_string(),
            "list-max-listpack-size" | "list-max-ziplist-size" => {
                self.list_max_listpack_size.to_string()
            }
            "list-compress-depth" => self.list_compress_depth.to_string(),
            "zset-max-listpack-entries" | "zset-max-ziplist-entries" => {
                self.zset_max_listpack_entries.to_string()
            }
            "zset-max-listpack-value" | "zset-max-ziplist-value" => {
                self.zset_max_listpack_value.to_string()
            }
            "stream-node-max-bytes" => self.stream_node_max_bytes.to_string(),
            "stream-node-max-entries" => self.stream_node_max_entries.to_string(),
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes.to_string(),
            "notify-keyspace-events" => {
                augur_store::notify::flags_to_string(self.notify_keyspace_events)
            }
            _ => return None,
        })
    }

    /// Applies a redis.conf-style file: one `name value...` per line, `#` comments,
    /// arguments split (and unquoted) as Redis does. Errors name the line.
    pub fn apply_file_contents(&mut self, text: &str) -> Result<(), String> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut data = Vec::new();
            let mut ranges = Vec::new();
            crate::resp::split_args(line.as_bytes(), &mut data, &mut ranges)
                .map_err(|_| format!("line {}: unbalanced quotes in configuration line", i + 1))?;
            let args: Vec<String> = ranges
                .iter()
                .map(|&(s, e)| String::from_utf8_lossy(&data[s..e]).into_owned())
                .collect();
            let Some((name, values)) = args.split_first() else {
                continue;
            };
            // ACL users and tenant settings are directives, not single parameters: kept
            // in order and applied by the server when it builds its tenant registry.
            if name.eq_ignore_ascii_case("user") || name.eq_ignore_ascii_case("tenant") {
                if values.is_empty() {
                    return Err(format!(
                        "line {}: '{}': wrong number of arguments",
                        i + 1,
                        line
                    ));
                }
                let rest = values.join(" ");
                if name.eq_ignore_ascii_case("user") {
                    self.users.push(rest);
                } else {
                    self.tenant_lines.push(rest);
                }
                continue;
            }
            let value = values.join(" ");
            self.apply(name, &value)
                .map_err(|e| format!("line {}: '{}': {}", i + 1, line, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_buffer_limit_lines_accumulate() {
        let mut c = ServerConfig::default();
        c.apply_file_contents(
            "client-output-buffer-limit normal 1mb 0 0\nclient-output-buffer-limit pubsub 1 2 3\n",
        )
        .unwrap();
        assert_eq!(
            c.get("client-output-buffer-limit").unwrap(),
            "normal 1048576 0 0 slave 268435456 67108864 60 pubsub 1 2 3"
        );
        let e = c
            .apply_file_contents("client-output-buffer-limit master 1 2 3")
            .unwrap_err();
        assert!(e.contains("Invalid client class"), "{e}");
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1024"), Some(1024));
        assert_eq!(parse_memory("100mb"), Some(100 * 1024 * 1024));
        assert_eq!(parse_memory("2GB"), Some(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1Kb"), Some(1024));
        assert_eq!(parse_memory("3m"), Some(3_000_000));
        assert_eq!(parse_memory("5g"), Some(5_000_000_000));
        assert_eq!(parse_memory("10b"), Some(10));
        assert_eq!(parse_memory("mb"), None);
        assert_eq!(parse_memory("10tb"), None);
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("99999999999999999999gb"), None);
    }

    #[test]
    fn file_parsing() {
        let mut c = ServerConfig::default();
        c.apply_file_contents(
            "# comment\n\nport 7000\nbind 127.0.0.1 ::1\nmaxmemory 100mb\nmaxmemory-policy ALLKEYS-LRU\nrequirepass \"se cret\"\nsave \"\"\nappendonly no\n",
        )
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, vec!["127.0.0.1", "::1"]);
        assert_eq!(c.maxmemory, 100 * 1024 * 1024);
        assert_eq!(c.maxmemory_policy, EvictionPolicy::AllKeysLru);
        assert_eq!(c.requirepass.as_deref(), Some("se cret"));
        let err = c
            .apply_file_contents("port 1\nmaxmemory-samples 65\n")
            .unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(c.apply_file_contents("nosuchthing 1\n").is_err());
        assert!(c.apply_file_contents("appendonly yes\n").is_err());
        assert!(c.apply_file_contents("save 3600\n").is_err());
        c.apply_file_contents("save \"3600 1 300 100\"\n").unwrap();
        assert_eq!(c.get("save").unwrap(), "3600 1 300 100");
    }

    #[test]
    fn example_config_file_parses_to_defaults() {
        let text = include_str!("../../../augur.conf.example");
        let mut c = ServerConfig::default();
        c.apply_file_contents(text).unwrap();
        assert_eq!(c, ServerConfig::default());
    }

    #[test]
    fn get_reflects_apply() {
        let mut c = ServerConfig::default();
        for name in PARAMS {
            assert!(c.get(name).is_some(), "{name}");
        }
        c.apply("hz", "1000").unwrap();
        assert_eq!(c.get("hz").unwrap(), "500");
        c.apply("loglevel", "WARNING").unwrap();
        assert_eq!(c.get("loglevel").unwrap(), "warning");
        assert!(c.apply("maxmemory-policy", "lfu").is_err());
        c.apply("maxmemory-policy", "Volatile-LFU").unwrap();
        assert_eq!(c.maxmemory_policy, EvictionPolicy::VolatileLfu);
        c.apply("lfu-log-factor", "0").unwrap();
        c.apply("lfu-decay-time", "5").unwrap();
        assert_eq!((c.lfu_log_factor, c.lfu_decay_time), (0, 5));
        assert!(c.apply("lfu-log-factor", "-1").is_err());
        assert!(c.apply("lfu-decay-time", "2147483648").is_err());
        c.apply("latency-tracking-info-percentiles", "0.0 50.0 100.0")
            .unwrap();
        assert_eq!(
            c.get("latency-tracking-info-percentiles").unwrap(),
            "0 50 100"
        );
        assert!(c
            .apply("latency-tracking-info-percentiles", "10 a")
            .is_err());
        assert!(c.apply("latency-tracking-info-percentiles", "101").is_err());
        assert_eq!(
            c.apply("maxmemory-clients", "200%").unwrap_err(),
            "percentage argument must be less or equal to 100"
        );
        c.apply("maxmemory-clients", "10%").unwrap();
        assert_eq!(c.get("maxmemory-clients").unwrap(), "10%");
    }
}
