//! `augur serve [CONFIG_FILE] [--flags]`: runs the cache server.
//!
//! The configuration is built in Redis's order: defaults, then the config file, then
//! command-line flags (which therefore override the file). Every value goes through
//! `ServerConfig::apply`, the same validation CONFIG SET uses.

use anyhow::Context;
use augur_server::{LogLevel, Server, ServerConfig};
use std::path::PathBuf;
use std::sync::Mutex;
use tracing_subscriber::{prelude::*, reload, EnvFilter};

#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// A redis.conf-style file of `name value` lines.
    pub config_file: Option<PathBuf>,
    /// TCP port (0 picks a free one; the bound port is logged).
    #[arg(long)]
    pub port: Option<u16>,
    /// Addresses to listen on (repeat the flag or separate with spaces).
    #[arg(long, num_args = 1..)]
    pub bind: Vec<String>,
    /// Password clients must AUTH with.
    #[arg(long)]
    pub requirepass: Option<String>,
    /// `yes` (the default) or `no`: while the default user has no password, serve
    /// loopback clients only (Redis's protected mode).
    #[arg(long)]
    pub protected_mode: Option<String>,
    #[arg(long)]
    pub maxclients: Option<u64>,
    /// Close clients idle for this many seconds (0 = never).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Memory limit: bytes, or with a unit (k, kb, m, mb, g, gb).
    #[arg(long)]
    pub maxmemory: Option<String>,
    #[arg(long)]
    pub maxmemory_policy: Option<String>,
    #[arg(long)]
    pub maxmemory_samples: Option<String>,
    /// Candidates an LHD eviction ranks (allkeys-lhd, volatile-lhd; default 64).
    #[arg(long)]
    pub lhd_samples: Option<String>,
    /// LFU's counter growth: hits per step grow with it (allkeys-lfu, volatile-lfu;
    /// default 10, as Redis).
    #[arg(long)]
    pub lfu_log_factor: Option<String>,
    /// Minutes unread per LFU counter decrement, 0 for never (default 1, as Redis).
    #[arg(long)]
    pub lfu_decay_time: Option<String>,
    /// The compressed zone (zExpander): yes or no (default no).
    #[arg(long)]
    pub compressed_zone: Option<String>,
    /// Codec of the compressed zone's blocks: lz4 (default) or zstd.
    #[arg(long)]
    pub compressed_zone_codec: Option<String>,
    /// Uncompressed bytes per compressed block (default 2048).
    #[arg(long)]
    pub compressed_zone_block_size: Option<String>,
    /// Bytes of each part's sampled compression dictionary, 0 for none (default 4096).
    #[arg(long)]
    pub compressed_zone_dict_size: Option<String>,
    /// Fraction of requests the uncompressed zone should serve (default 0.9).
    #[arg(long)]
    pub compressed_zone_target: Option<String>,
    /// Window over which that fraction is measured, in ms (default 60000).
    #[arg(long)]
    pub compressed_zone_window_ms: Option<String>,
    #[arg(long)]
    pub databases: Option<String>,
    #[arg(long)]
    pub proto_max_bulk_len: Option<String>,
    #[arg(long)]
    pub client_query_buffer_limit: Option<String>,
    /// debug, verbose, notice, warning or nothing.
    #[arg(long)]
    pub loglevel: Option<String>,
    /// Log file (empty: standard error).
    #[arg(long)]
    pub logfile: Option<String>,
    /// Server cron frequency (active expiry runs this many times a second).
    #[arg(long)]
    pub hz: Option<String>,
    /// Worker threads (0 = one per core).
    #[arg(long)]
    pub threads: Option<String>,
    /// Keyspace shards (a power of two).
    #[arg(long)]
    pub shards: Option<String>,
    /// How memory is divided between tenants: off (one pool, free competition like
    /// Redis), static (each tenant's TENANT maxmemory) or kredis (the tuner).
    #[arg(long)]
    pub tenant_partitioning: Option<String>,
    /// What the kredis tuner minimises: latency (misses x miss penalty) or hits.
    #[arg(long)]
    pub tenant_objective: Option<String>,
    /// How the profiler's sampled KRR turns sampled misses into miss ratios: distinct
    /// (the default: cold misses from the tenant's distinct-key count), shards,
    /// regression or none.
    #[arg(long)]
    pub tenant_sample_adjust: Option<String>,
    /// Requests between re-partitioning intervals.
    #[arg(long)]
    pub tenant_interval: Option<String>,
    /// Time bound of an interval in milliseconds.
    #[arg(long)]
    pub tenant_interval_ms: Option<String>,
    /// Spatial sampling rate R of the per-tenant KRR profiler (0 < R <= 1).
    #[arg(long)]
    pub tenant_sample_rate: Option<String>,
    /// Sample sizes K the profiler models, e.g. 1,2,4,8,16.
    #[arg(long)]
    pub tenant_k_set: Option<String>,
    /// GETs per DLRU interval under `--maxmemory-samples auto` (default 5000000).
    #[arg(long)]
    pub dlru_interval: Option<String>,
    /// Per-K curves the kRedis tuner partitions with: krr or minisim.
    #[arg(long)]
    pub k_chooser: Option<String>,
    /// Allocation unit G of the partitioning DP (bytes or with a unit).
    #[arg(long)]
    pub tenant_alloc_unit: Option<String>,
    /// The tuner changes a tenant's K only for a predicted miss ratio lower by at least
    /// this much (default 0: switch to the best K every interval, as kRedis).
    #[arg(long)]
    pub tenant_k_switch_margin: Option<String>,
    /// A miss not refilled within this many milliseconds is not timed.
    #[arg(long)]
    pub tenant_miss_cutoff_ms: Option<String>,
    /// The online profiler's CPU budget, percent of one core (0 = none; default 1).
    #[arg(long)]
    pub tenant_profiler_cpu: Option<String>,
    /// Miss penalty assumed for tenants that never refill (e.g. 1ms, 500us).
    #[arg(long)]
    pub tenant_default_miss_penalty: Option<String>,
    /// Port of the Prometheus /metrics HTTP endpoint (0 = off).
    #[arg(long)]
    pub metrics_port: Option<String>,
    /// An ACL user (= tenant) as in a config file's `user` line, e.g.
    /// `--user "app1 on >secret ~* &* +@all -@admin"` (a new user may run nothing until
    /// given rules, as in Redis); repeat for several.
    #[arg(long)]
    pub user: Vec<String>,
    /// Tenant settings as in a config file's `tenant` line, e.g.
    /// `--tenant "app1 maxmemory 200mb miss-penalty 2ms"`; repeat for several.
    #[arg(long)]
    pub tenant: Vec<String>,
}

impl Args {
    /// Defaults, then the file, then the flags.
    pub fn to_config(&self) -> anyhow::Result<ServerConfig> {
        let mut cfg = ServerConfig::default();
        if let Some(path) = &self.config_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            cfg.apply_file_contents(&text)
                .map_err(|e| anyhow::anyhow!("bad config file {}: {e}", path.display()))?;
            cfg.config_file = std::path::absolute(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string();
        }
        let mut flags: Vec<(&str, String)> = Vec::new();
        if let Some(v) = self.port {
            flags.push(("port", v.to_string()));
        }
        if !self.bind.is_empty() {
            flags.push(("bind", self.bind.join(" ")));
        }
        if let Some(v) = &self.requirepass {
            flags.push(("requirepass", v.clone()));
        }
        if let Some(v) = self.maxclients {
            flags.push(("maxclients", v.to_string()));
        }
        if let Some(v) = self.timeout {
            flags.push(("timeout", v.to_string()));
        }
        let named = [
            ("protected-mode", &self.protected_mode),
            ("maxmemory", &self.maxmemory),
            ("maxmemory-policy", &self.maxmemory_policy),
            ("maxmemory-samples", &self.maxmemory_samples),
            ("lhd-samples", &self.lhd_samples),
            ("lfu-log-factor", &self.lfu_log_factor),
            ("lfu-decay-time", &self.lfu_decay_time),
            ("compressed-zone", &self.compressed_zone),
            ("compressed-zone-codec", &self.compressed_zone_codec),
            (
                "compressed-zone-block-size",
                &self.compressed_zone_block_size,
            ),
            ("compressed-zone-dict-size", &self.compressed_zone_dict_size),
            ("compressed-zone-target", &self.compressed_zone_target),
            ("compressed-zone-window-ms", &self.compressed_zone_window_ms),
            ("databases", &self.databases),
            ("proto-max-bulk-len", &self.proto_max_bulk_len),
            ("client-query-buffer-limit", &self.client_query_buffer_limit),
            ("loglevel", &self.loglevel),
            ("logfile", &self.logfile),
            ("hz", &self.hz),
            ("threads", &self.threads),
            ("shards", &self.shards),
            ("tenant-partitioning", &self.tenant_partitioning),
            ("tenant-objective", &self.tenant_objective),
            ("tenant-sample-adjust", &self.tenant_sample_adjust),
            ("tenant-interval", &self.tenant_interval),
            ("tenant-interval-ms", &self.tenant_interval_ms),
            ("tenant-sample-rate", &self.tenant_sample_rate),
            ("tenant-k-set", &self.tenant_k_set),
            ("dlru-interval", &self.dlru_interval),
            ("k-chooser", &self.k_chooser),
            ("tenant-alloc-unit", &self.tenant_alloc_unit),
            ("tenant-k-switch-margin", &self.tenant_k_switch_margin),
            ("tenant-miss-cutoff-ms", &self.tenant_miss_cutoff_ms),
            ("tenant-profiler-cpu", &self.tenant_profiler_cpu),
            (
                "tenant-default-miss-penalty",
                &self.tenant_default_miss_penalty,
            ),
            ("metrics-port", &self.metrics_port),
        ];
        for (name, v) in named {
            if let Some(v) = v {
                flags.push((name, v.clone()));
            }
        }
        for (name, value) in flags {
            cfg.apply(name, &value)
                .map_err(|e| anyhow::anyhow!("--{name} {value}: {e}"))?;
        }
        // The same directives a config file's `user` / `tenant` lines give, after them.
        let mut lines = String::new();
        for u in &self.user {
            lines.push_str(&format!("user {u}\n"));
        }
        for t in &self.tenant {
            lines.push_str(&format!("tenant {t}\n"));
        }
        cfg.apply_file_contents(&lines)
            .map_err(|e| anyhow::anyhow!("--user/--tenant: {e}"))?;
        Ok(cfg)
    }
}

fn filter_for(level: LogLevel) -> EnvFilter {
    EnvFilter::new(level.tracing_directive())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cfg = args.to_config()?;
    // `dir` (config.c): the server works there, so relative paths (aclfile) resolve
    // against it; the config file's own path was made absolute before.
    if !cfg.dir.is_empty() {
        std::env::set_current_dir(&cfg.dir)
            .with_context(|| format!("changing to dir {}", cfg.dir))?;
    }

    // Logging: the level can change at run time (CONFIG SET loglevel) through a reload
    // handle; the output goes to stderr or the configured file.
    let (filter, handle) = reload::Layer::new(filter_for(cfg.loglevel));
    let registry = tracing_subscriber::registry().with(filter);
    if cfg.logfile.is_empty() {
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(ansi)
                    .with_writer(std::io::stderr),
            )
            .try_init()
            .ok();
    } else {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&cfg.logfile)
            .with_context(|| format!("opening logfile {}", cfg.logfile))?;
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(Mutex::new(file)),
            )
            .try_init()
            .ok();
    }
    let hook: Box<dyn Fn(LogLevel) + Send + Sync> = Box::new(move |level| {
        let _ = handle.modify(|f| *f = filter_for(level));
    });

    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .thread_name("augur-worker")
        .build()?;
    runtime.block_on(async move {
        let server = Server::bind(cfg, Some(hook)).await?;
        let handle = server.handle();
        tokio::spawn(async move {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return,
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => tracing::warn!("Received SIGINT scheduling shutdown..."),
                _ = term.recv() => tracing::warn!("Received SIGTERM scheduling shutdown..."),
            }
            handle.shutdown();
        });
        tracing::info!(threads, "starting Augur {}", env!("CARGO_PKG_VERSION"));
        server.run().await?;
        anyhow::Ok(())
    })?;
    // Do not wait for connection tasks blocked in reads: they are closed with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn flags_override_file() {
        let dir = std::env::temp_dir().join(format!("augur-serve-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("augur.conf");
        std::fs::write(
            &path,
            "port 7001\nmaxmemory 10mb\nmaxmemory-policy allkeys-lru\n",
        )
        .unwrap();
        let w = Wrap::try_parse_from([
            "x",
            path.to_str().unwrap(),
            "--port",
            "7002",
            "--maxmemory",
            "2gb",
        ])
        .unwrap();
        let cfg = w.args.to_config().unwrap();
        assert_eq!(cfg.port, 7002);
        assert_eq!(cfg.maxmemory, 2 * 1024 * 1024 * 1024);
        assert_eq!(cfg.maxmemory_policy.name(), "allkeys-lru");
        let w = Wrap::try_parse_from(["x", "--maxmemory-samples", "0"]).unwrap();
        assert!(w.args.to_config().is_err());
        let w = Wrap::try_parse_from([
            "x",
            "--tenant-partitioning",
            "kredis",
            "--tenant-k-set",
            "1,4,16",
            "--tenant-sample-rate",
            "0.5",
            "--user",
            "app1 on >pw1",
            "--tenant",
            "app1 maxmemory 1mb",
        ])
        .unwrap();
        let cfg = w.args.to_config().unwrap();
        assert_eq!(cfg.get("tenant-partitioning").unwrap(), "kredis");
        assert_eq!(cfg.get("tenant-k-set").unwrap(), "1,4,16");
        assert_eq!(cfg.users, vec!["app1 on >pw1".to_string()]);
        assert_eq!(cfg.tenant_lines, vec!["app1 maxmemory 1mb".to_string()]);
        let w = Wrap::try_parse_from(["x", "--tenant-partitioning", "bogus"]).unwrap();
        assert!(w.args.to_config().is_err());
    }
}
