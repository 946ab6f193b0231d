//! State shared by all connections: the store, the live configuration, the client
//! registry (CLIENT LIST, idle timeouts, shutdown) and server-wide counters.

use crate::config::{LogLevel, ServerConfig};
use augur_store::Store;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// The Redis version Augur answers as (INFO redis_version, HELLO version). Clients pick
/// features by this number, and Augur implements the 7.0 string-command semantics.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

/// Unix time in milliseconds.
#[inline]
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Server-wide counters for INFO. Connections add their per-batch counts (not one per
/// command) to per-thread stripes ([`StripedCounter`]), so cores do not fight over a
/// cache line.
#[derive(Default)]
pub struct Counters {
    pub total_connections_received: AtomicU64,
    pub total_commands_processed: StripedCounter,
    pub rejected_connections: AtomicU64,
    pub net_input_bytes: StripedCounter,
    pub net_output_bytes: StripedCounter,
    /// instantaneous_ops_per_sec, refreshed by the cron task.
    pub instantaneous_ops: AtomicU64,
    /// Connections closed by `maxmemory-clients` (INFO `evicted_clients`).
    pub evicted_clients: AtomicU64,
    /// The most `used_memory` has been (INFO `used_memory_peak`), sampled by the cron
    /// and by INFO, as Redis's serverCron does.
    pub used_memory_peak: AtomicU64,
    /// Active defragmentation (`activedefrag`): entries moved and entries visited but
    /// left (INFO stats `active_defrag_hits` / `_misses`), and whether the last cron
    /// tick found the allocator fragmented enough to run it (INFO memory
    /// `active_defrag_running`).
    pub active_defrag_hits: AtomicU64,
    pub active_defrag_misses: AtomicU64,
    pub active_defrag_running: std::sync::atomic::AtomicBool,
}

/// Stripes of a [`StripedCounter`]: comfortably more than worker threads.
const STRIPES: usize = 16;

#[repr(align(128))]
#[derive(Default)]
struct PaddedCell(AtomicU64);

/// A counter bumped by every worker on every request (commands, bytes in and out).
///
/// One shared `AtomicU64` would move its cache line between cores on every request;
/// here each thread adds to its own 128-byte-aligned cell (picked once per thread), and
/// readers (INFO, the cron) sum the cells. The sum is exact; only reads pay.
#[derive(Default)]
pub struct StripedCounter {
    cells: [PaddedCell; STRIPES],
}

impl StripedCounter {
    #[inline]
    pub fn add(&self, n: u64) {
        thread_local! {
            static STRIPE: usize = {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES
            };
        }
        let i = STRIPE.with(|s| *s);
        self.cells[i]
            .0
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn load(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| c.0.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for c in &self.cells {
            c.0.store(0, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// [`ClientMeta::acl_state`]: the user's rules changed; reload them before the next
/// command.
pub const ACL_DIRTY: u8 = 1;
/// [`ClientMeta::acl_state`]: the user is restricted; check every command.
pub const ACL_RESTRICTED: u8 = 2;

/// What other tasks may see of a connection.
pub struct ClientMeta {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub created: Instant,
    /// Milliseconds since `created` of the last command batch (for idle and timeout).
    pub last_interaction_ms: AtomicU64,
    pub db: AtomicU8,
    /// The tenant (ACL user) the connection is authenticated as.
    pub tenant: std::sync::atomic::AtomicU16,
    pub resp: AtomicU8,
    /// Index into COMMANDS of the last command, u32::MAX for none.
    pub last_cmd: AtomicU32,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<Vec<u8>>,
    pub lib_ver: Mutex<Vec<u8>>,
    /// Channel, pattern and shard-channel subscriptions (CLIENT LIST sub= psub= ssub=).
    pub sub: AtomicU32,
    pub psub: AtomicU32,
    pub ssub: AtomicU32,
    /// ACL state bits ([`ACL_DIRTY`], [`ACL_RESTRICTED`]): zero lets commands skip the
    /// permission check on one load and branch.
    pub acl_state: AtomicU8,
    /// The slot of the ACL user the connection is authenticated as (its tenant is that
    /// user's keyspace, which `tenant:` may make another user's).
    pub user_id: std::sync::atomic::AtomicU16,
    /// Set (then `kill` notified) to make the connection close: idle timeout, shutdown.
    pub killed: AtomicBool,
    pub kill: Notify,
    /// What CLIENT LIST shows of the connection's buffers and state, published by the
    /// connection after each read and each batch of commands (see [`ClientStats`]).
    pub stats: ClientStats,
    /// The socket's file descriptor (CLIENT LIST `fd=`).
    pub fd: i32,
    /// The ACL user the connection is authenticated as (CLIENT LIST `user=`).
    pub user: Mutex<String>,
    /// CLIENT NO-EVICT on: excluded from `maxmemory-clients` eviction (flag `e`).
    pub no_evict: AtomicBool,
    /// Blocked on a list (CLIENT LIST's `b` flag).
    pub blocked: AtomicBool,
    /// The connection's WATCH flag (shared with its `Client`): raised by whoever touches
    /// a watched key, so CLIENT LIST shows `d` at once, as Redis's CLIENT_DIRTY_CAS.
    pub dirty_cas: augur_store::WatchFlag,
    /// Set by the cron when an idle connection's read buffer should be released; the
    /// connection is woken through `kill` and shrinks it (clientsCronResizeQueryBuffer).
    pub shrink_qbuf: AtomicBool,
    /// CLIENT TRACKING state and the invalidations queued for this connection.
    pub tracking: crate::tracking::ClientTracking,
    /// Bytes of Pub/Sub messages and invalidations queued for the connection, counted
    /// against its class's `client-output-buffer-limit` (see `crate::obuf`).
    pub obuf: crate::obuf::Account,
}

/// Per-connection figures for CLIENT LIST / CLIENT INFO (networking.c
/// `catClientInfoString`) and for `maxmemory-clients`. Only the connection writes them,
/// with relaxed stores once per read and once per batch (as Redis, other clients see a
/// connection's state between its batches), so they cost nothing measurable.
#[derive(Default)]
pub struct ClientStats {
    /// Bytes in the read buffer (`qbuf=`) and its free room (`qbuf-free=`).
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    /// Commands queued in the open transaction, -1 outside MULTI (`multi=`), stored +1.
    pub multi_plus1: AtomicU64,
    /// Bytes of the queued commands' arguments (`multi-mem=`).
    pub multi_mem: AtomicU64,
    /// The reply buffer's size and the largest reply batch since the last check
    /// (`rbs=`, `rbp=`).
    pub rbs: AtomicU64,
    pub rbp: AtomicU64,
    /// Reply bytes not yet written to the socket (`obl=`), and bytes of Pub/Sub or
    /// MONITOR messages queued for the connection and not yet encoded (`omem=`).
    pub obl: AtomicU64,
    pub omem: AtomicU64,
    /// Flag letters that only the connection knows: see [`flag`].
    pub flags: AtomicU32,
    /// Everything the connection holds (`tot-mem=`): the sum networking.c's
    /// getClientMemoryUsage takes.
    pub tot_mem: AtomicU64,
}

/// Bits of [`ClientStats::flags`].
pub mod flag {
    /// In MULTI (`x`).
    pub const MULTI: u32 = 1;
    /// MONITOR (`O`).
    pub const MONITOR: u32 = 4;
    /// Closes once its replies are written (`c`, QUIT / CLIENT KILL of itself).
    pub const CLOSE_AFTER_REPLY: u32 = 8;
}

impl ClientMeta {
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr) -> Self {
        Self {
            id,
            addr,
            laddr,
            created: Instant::now(),
            last_interaction_ms: AtomicU64::new(0),
            db: AtomicU8::new(0),
            tenant: std::sync::atomic::AtomicU16::new(0),
            resp: AtomicU8::new(2),
            last_cmd: AtomicU32::new(u32::MAX),
            name: Mutex::default(),
            lib_name: Mutex::default(),
            lib_ver: Mutex::default(),
            sub: AtomicU32::new(0),
            psub: AtomicU32::new(0),
            ssub: AtomicU32::new(0),
            acl_state: AtomicU8::new(ACL_DIRTY),
            user_id: std::sync::atomic::AtomicU16::new(0),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            stats: ClientStats {
                multi_plus1: AtomicU64::new(0),
                ..ClientStats::default()
            },
            fd: -1,
            user: Mutex::new("default".to_string()),
            no_evict: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            dirty_cas: augur_store::WatchFlag::default(),
            shrink_qbuf: AtomicBool::new(false),
            tracking: Default::default(),
            obuf: Default::default(),
        }
    }

    /// Connections report their socket's descriptor.
    pub fn with_fd(mut self, fd: i32) -> Self {
        self.fd = fd;
        self
    }

    /// Seconds since the connection was accepted.
    pub fn age_secs(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    pub fn idle_secs(&self) -> u64 {
        let now = self.created.elapsed().as_millis() as u64;
        now.saturating_sub(self.last_interaction_ms.load(Relaxed)) / 1000
    }

    pub fn close(&self) {
        self.killed.store(true, Relaxed);
        self.kill.notify_one();
    }
}

pub struct Shared {
    pub store: Store,
    /// Held shared by every command and exclusively by EXEC (and scripts): see `gate`.
    pub gate: crate::gate::ExecGate,
    /// Lua scripting: the interpreter, the script cache, the running script's state.
    pub scripting: crate::scripting::Scripting,
    /// ACL users, which are the tenants.
    pub tenants: crate::tenants::Registry,
    /// What the profiler thread publishes (curves, measured miss cost, targets).
    pub profiler: crate::profiler::ProfilerState,
    /// The queue sampled references take to the profiler.
    pub ref_queue: Arc<crate::profiler::RefQueue>,
    pub config: RwLock<ServerConfig>,
    // Hot copies of live settings, read by every connection without a lock.
    pub proto_max_bulk_len: AtomicU64,
    /// `hll-sparse-max-bytes`, read by every PFADD / PFMERGE without the config lock.
    pub hll_sparse_max_bytes: AtomicU64,
    /// `lazyfree-lazy-user-del` and `-user-flush`, read by DEL and FLUSH* without the
    /// config lock.
    pub lazy_user_del: AtomicBool,
    pub lazy_user_flush: AtomicBool,
    pub query_buffer_limit: AtomicU64,
    pub maxclients: AtomicU64,
    /// `protected-mode`, read at every accept.
    pub protected_mode: AtomicBool,
    pub timeout_secs: AtomicU64,
    pub hz: AtomicU32,
    pub pass_required: AtomicBool,
    pub counters: Counters,
    pub clients: Arc<Mutex<HashMap<u64, Arc<ClientMeta>>>>,
    /// CLIENT TRACKING (client-side caching): the key table and invalidations.
    pub tracking: Arc<crate::tracking::Tracking>,
    /// `client-output-buffer-limit`, as Pub/Sub and tracking delivery read it.
    pub obuf_limits: Arc<crate::obuf::LiveLimits>,
    pub next_client_id: AtomicU64,
    pub started: Instant,
    pub shutdown_requested: AtomicBool,
    pub shutdown: Notify,
    /// Called when CONFIG SET loglevel changes the level (the binary owns the subscriber).
    pub log_hook: Option<Box<dyn Fn(LogLevel) + Send + Sync>>,
    pub listen_addrs: Mutex<Vec<SocketAddr>>,
    /// A second handle (dup) of each client-port listening socket, by address: CONFIG
    /// SET port / bind shuts the ones it drops before replying (server.rs
    /// change_listeners), as Redis closes them before its OK, rather than leave them
    /// accepting until the accept loops' task gets to them.
    pub listen_sockets: Mutex<HashMap<SocketAddr, std::net::TcpListener>>,
    pub run_id: String,
    /// Pub/Sub subscriptions, per tenant.
    pub pubsub: Arc<crate::pubsub::Registry>,
    /// Clients blocked on lists and the keys readied for them.
    pub blocking: crate::blocking::Blocking,
    /// INFO commandstats / errorstats / latencystats (see `stats`).
    pub stats: crate::stats::CommandStats,
    /// Connections in MONITOR mode.
    pub monitors: Arc<crate::monitor::Monitors>,
    /// CLIENT PAUSE.
    pub pause: Pause,
    /// Where CONFIG SET port / bind hands newly bound listeners to the running server
    /// (None before [`crate::Server::run`]).
    pub listener_ctl:
        Mutex<Option<tokio::sync::mpsc::UnboundedSender<crate::server::ListenerChange>>>,
    /// ACL LOG.
    pub acl_log: crate::acl::AclLog,
    /// SLOWLOG.
    pub slowlog: crate::slowlog::SlowLog,
    /// LATENCY's event monitor.
    pub latency: crate::latency::LatencyMonitor,
}

/// CLIENT PAUSE state (networking.c `pauseClients`): until when, and whether every
/// command or only writes wait. The request path reads `until_ms` (one relaxed load,
/// 0 when no pause is set).
#[derive(Default)]
pub struct Pause {
    pub until_ms: AtomicU64,
    /// ALL (true) or WRITE (false).
    pub all: AtomicBool,
    /// Wakes paused connections on CLIENT UNPAUSE.
    pub ended: Notify,
    /// Connections waiting for the pause to end: Redis counts them in INFO
    /// blocked_clients (a paused client is blocked, BLOCKED_POSTPONE).
    pub waiting: std::sync::atomic::AtomicUsize,
}

impl Pause {
    /// The pause in force at `now` (Unix ms): Some(all) while one is.
    #[inline]
    pub fn active(&self, now: u64) -> Option<bool> {
        let until = self.until_ms.load(Relaxed);
        if until == 0 {
            return None;
        }
        if now >= until {
            // Over: back to the one-load fast path (unless a new pause came meanwhile).
            let _ = self.until_ms.compare_exchange(until, 0, Relaxed, Relaxed);
            return None;
        }
        Some(self.all.load(Relaxed))
    }

    /// CLIENT PAUSE: a longer pause or a stricter mode wins over the one in force.
    pub fn pause(&self, until: u64, all: bool, now: u64) {
        let cur = self.active(now);
        self.all.store(all || cur == Some(true), Relaxed);
        let prev = if cur.is_some() {
            self.until_ms.load(Relaxed)
        } else {
            0
        };
        self.until_ms.store(until.max(prev), Relaxed);
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        self.until_ms.store(0, Relaxed);
        self.all.store(false, Relaxed);
        self.ended.notify_waiters();
    }
}

impl Shared {
    /// CLIENT PAUSE: the pause in force (a longer or stricter one wins), and nothing
    /// expires until it ends: the cron's active expiry checks the pause, the store's
    /// reads leave expired keys in place until the same time.
    pub fn pause_clients(&self, until: u64, all: bool, now: u64) {
        self.pause.pause(until, all, now);
        self.store.pause_expiry(self.pause.until_ms.load(Relaxed));
    }

    /// CLIENT UNPAUSE.
    pub fn unpause_clients(&self) {
        self.pause.unpause();
        self.store.pause_expiry(0);
    }

    pub fn new(
        config: ServerConfig,
        log_hook: Option<Box<dyn Fn(LogLevel) + Send + Sync>>,
    ) -> Self {
        let store = Store::new(augur_store::StoreConfig {
            shards: config.shards,
            databases: config.databases,
            maxmemory: config.maxmemory,
            policy: config.maxmemory_policy,
            samples: config.maxmemory_samples,
            zone: config.zone,
        });
        store.set_encoding_limits(config.encoding_limits());
        store.set_notify_flags(config.notify_keyspace_events);
        store.set_lazyfree(config.lazyfree());
        store.set_lhd_samples(config.lhd_samples);
        store.set_lfu_log_factor(config.lfu_log_factor);
        store.set_lfu_decay_minutes(config.lfu_decay_time);
        let obuf_limits = Arc::new(crate::obuf::LiveLimits::default());
        obuf_limits.set(&config.client_output_buffer_limit);
        let pubsub = Arc::new(crate::pubsub::Registry::new(obuf_limits.clone()));
        store.set_key_event_sink(Arc::new(crate::notify::StoreEvents(pubsub.clone())));
        let clients: Arc<Mutex<HashMap<u64, Arc<ClientMeta>>>> = Arc::default();
        let tracking = Arc::new(crate::tracking::Tracking::new(
            clients.clone(),
            obuf_limits.clone(),
        ));
        tracking
            .max_keys
            .store(config.tracking_table_max_keys, Relaxed);
        store.set_key_change_sink(Arc::new(crate::tracking::StoreChanges(tracking.clone())));
        let run_id: String = {
            use rand::Rng;
            let mut rng = rand::thread_rng();
            (0..40)
                .map(|_| char::from_digit(rng.gen_range(0..16), 16).unwrap_or('0'))
                .collect()
        };
        let tenants = crate::tenants::Registry::new(config.requirepass.as_deref());
        let stats = crate::stats::CommandStats::default();
        let slowlog = crate::slowlog::SlowLog::default();
        slowlog.configure(config.slowlog_log_slower_than, config.slowlog_max_len);
        let latency = crate::latency::LatencyMonitor::default();
        latency.set_threshold_ms(config.latency_monitor_threshold);
        stats
            .latency_tracking
            .store(config.latency_tracking, Relaxed);
        tenants
            .pubsub_default_all
            .store(config.acl_pubsub_default_all, Relaxed);
        Self {
            store,
            gate: crate::gate::ExecGate::default(),
            scripting: crate::scripting::Scripting::default(),
            tenants,
            profiler: crate::profiler::ProfilerState::default(),
            ref_queue: Arc::new(crate::profiler::RefQueue::new()),
            proto_max_bulk_len: AtomicU64::new(config.proto_max_bulk_len),
            hll_sparse_max_bytes: AtomicU64::new(config.hll_sparse_max_bytes),
            lazy_user_del: AtomicBool::new(config.lazyfree_lazy_user_del),
            lazy_user_flush: AtomicBool::new(config.lazyfree_lazy_user_flush),
            query_buffer_limit: AtomicU64::new(config.client_query_buffer_limit),
            maxclients: AtomicU64::new(config.maxclients),
            protected_mode: AtomicBool::new(config.protected_mode),
            timeout_secs: AtomicU64::new(config.timeout),
            hz: AtomicU32::new(config.hz),
            pass_required: AtomicBool::new(config.requirepass.is_some()),
            config: RwLock::new(config),
            counters: Counters::default(),
            clients,
            tracking,
            obuf_limits,
            next_client_id: AtomicU64::new(1),
            started: Instant::now(),
            shutdown_requested: AtomicBool::new(false),
            shutdown: Notify::new(),
            log_hook,
            listen_addrs: Mutex::new(Vec::new()),
            listen_sockets: Mutex::new(HashMap::new()),
            run_id,
            pubsub,
            blocking: Default::default(),
            stats,
            monitors: Arc::default(),
            pause: Pause::default(),
            listener_ctl: Mutex::new(None),
            acl_log: crate::acl::AclLog::default(),
            slowlog,
            latency,
        }
    }

    /// Installs a validated configuration: pushes the live settings to the store and the
    /// hot copies. Called after CONFIG SET succeeds.
    pub fn install_config(&self, new: ServerConfig) {
        let old_level = self.config.read().loglevel;
        if self.store.maxmemory() != new.maxmemory {
            self.store.set_maxmemory(new.maxmemory);
        }
        // Under `maxmemory-policy auto` the profiler owns the store's policy and K
        // (crate::autopolicy); entering it starts from the chooser's initial policy.
        let was_auto_policy = self.config.read().maxmemory_policy_auto;
        if (!new.maxmemory_policy_auto || !was_auto_policy)
            && self.store.policy() != new.maxmemory_policy
        {
            self.store.set_policy(new.maxmemory_policy);
        }
        if was_auto_policy && !new.maxmemory_policy_auto {
            crate::autopolicy::turned_off(self);
            if !new.maxmemory_samples_auto {
                self.store.set_samples(new.maxmemory_samples);
            }
        }
        // Under `maxmemory-samples auto` the profiler owns the store's K (crate::dlru).
        if !new.maxmemory_samples_auto
            && !new.maxmemory_policy_auto
            && self.store.samples() != new.maxmemory_samples
        {
            self.store.set_samples(new.maxmemory_samples);
        }
        if !new.maxmemory_samples_auto && self.config.read().maxmemory_samples_auto {
            crate::dlru::turned_off(self, new.maxmemory_samples);
        }
        self.store.set_lhd_samples(new.lhd_samples);
        self.store.set_lfu_log_factor(new.lfu_log_factor);
        self.store.set_lfu_decay_minutes(new.lfu_decay_time);
        self.store.set_zone_enabled(new.zone.enabled);
        self.store.set_zone_target(new.zone.target_n_fraction);
        self.store.set_zone_window_ms(new.zone.window_ms);
        self.store.set_encoding_limits(new.encoding_limits());
        self.store.set_notify_flags(new.notify_keyspace_events);
        self.store.set_lazyfree(new.lazyfree());
        self.lazy_user_del
            .store(new.lazyfree_lazy_user_del, Relaxed);
        self.lazy_user_flush
            .store(new.lazyfree_lazy_user_flush, Relaxed);
        self.proto_max_bulk_len
            .store(new.proto_max_bulk_len, Relaxed);
        self.hll_sparse_max_bytes
            .store(new.hll_sparse_max_bytes, Relaxed);
        self.query_buffer_limit
            .store(new.client_query_buffer_limit, Relaxed);
        self.maxclients.store(new.maxclients, Relaxed);
        self.protected_mode.store(new.protected_mode, Relaxed);
        self.timeout_secs.store(new.timeout, Relaxed);
        self.hz.store(new.hz, Relaxed);
        self.tenants
            .pubsub_default_all
            .store(new.acl_pubsub_default_all, Relaxed);
        self.acl_log.truncate(new.acllog_max_len);
        self.slowlog
            .configure(new.slowlog_log_slower_than, new.slowlog_max_len);
        self.latency.set_threshold_ms(new.latency_monitor_threshold);
        self.stats
            .latency_tracking
            .store(new.latency_tracking, Relaxed);
        self.tracking
            .max_keys
            .store(new.tracking_table_max_keys, Relaxed);
        self.obuf_limits.set(&new.client_output_buffer_limit);
        let old = self.config.read().clone();
        if old.requirepass != new.requirepass {
            // requirepass is the default user's password, as in Redis.
            let rules: Vec<Vec<u8>> = match &new.requirepass {
                Some(p) => vec![
                    b"resetpass".to_vec(),
                    [b">".as_slice(), p.as_bytes()].concat(),
                ],
                None => vec![b"nopass".to_vec()],
            };
            let refs: Vec<&[u8]> = rules.iter().map(Vec::as_slice).collect();
            let _ = self.tenants.set_user("default", &refs);
            self.refresh_default_auth();
            self.acl_changed();
        }
        if old.tenant_partitioning != new.tenant_partitioning {
            self.store.set_partitioning(new.tenant_partitioning);
        }
        let level = new.loglevel;
        let (rate_changed, limits_changed) = (
            old.tenant_sample_rate != new.tenant_sample_rate
                || old.tenant_sample_rate_auto != new.tenant_sample_rate_auto,
            old.maxmemory != new.maxmemory || old.tenant_partitioning != new.tenant_partitioning,
        );
        *self.config.write() = new;
        if rate_changed {
            self.install_sample_rates();
        }
        if limits_changed {
            self.install_tenant_limits();
        }
        if level != old_level {
            if let Some(hook) = &self.log_hook {
                hook(level);
            }
        }
    }

    /// Applies the config file's `user` and `tenant` lines and installs every tenant's
    /// limits, sampling rate and the partitioning mode in the store.
    pub fn setup_tenants(&self) -> Result<(), String> {
        let (users, lines, mode, maxmemory) = {
            let c = self.config.read();
            (
                c.users.clone(),
                c.tenant_lines.clone(),
                c.tenant_partitioning,
                c.maxmemory,
            )
        };
        let aclfile = self.config.read().aclfile.clone();
        if !aclfile.is_empty() {
            if !users.is_empty() {
                return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
            }
            self.load_acl_file()?;
        }
        let mut seen = std::collections::HashSet::new();
        for line in &users {
            let mut words = line.split_whitespace();
            let name = words.next().ok_or("user: missing name")?;
            if !seen.insert(name.to_string()) {
                return Err(format!("Error in user declaration '{name}': Duplicate user found. A user can only be defined once in config files"));
            }
            // Config-file users are declared whole (ACLLoadConfiguredUsers): the
            // default user is reset first, the others are created fresh.
            let mut rules: Vec<&[u8]> = Vec::new();
            if name == "default" {
                rules.push(b"reset");
            }
            rules.extend(words.map(str::as_bytes));
            self.tenants
                .set_user(name, &rules)
                .map_err(|e| format!("Error in user declaration '{name}': {e:?}"))?;
        }
        for line in &lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            let (name, rest) = words.split_first().ok_or("tenant: missing name")?;
            if rest.len() % 2 != 0 || rest.is_empty() {
                return Err(format!("tenant {name}: expected parameter value pairs"));
            }
            let pairs: Vec<(String, String)> = rest
                .chunks(2)
                .map(|p| (p[0].to_string(), p[1].to_string()))
                .collect();
            self.tenants
                .set_settings(name, &pairs, maxmemory)
                .map_err(|e| format!("tenant {name}: {e:?}"))?;
        }
        self.refresh_default_auth();
        self.store.set_partitioning(mode);
        self.install_sample_rates();
        self.install_tenant_limits();
        Ok(())
    }

    /// Loads `aclfile` (startup and ACL LOAD): every user replaced at once; the keyspaces
    /// of users gone are dropped and new users start empty. Err is Redis's error text.
    pub fn load_acl_file(&self) -> Result<(), String> {
        let path = self.config.read().aclfile.clone();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("Error loading ACLs, opening file '{path}': {e}"))?;
        let (removed, created) = self.tenants.load_file(&text, &path)?;
        for u in &removed {
            self.store.drop_tenant(u.id);
            self.profiler.views.lock().remove(&u.id);
        }
        let rate = self.config.read().tenant_sample_rate;
        for id in created {
            self.store.drop_tenant(id);
            self.store.set_tenant_sample_rate(id, rate);
        }
        self.install_tenant_limits();
        self.refresh_default_auth();
        self.acl_changed();
        Ok(())
    }

    /// CONFIG REWRITE (crate::config_rewrite): the running configuration, the ACL
    /// users (unless `aclfile` holds them) and the tenants' settings written into the
    /// file the server was started with. Err is Redis's reply text.
    pub fn rewrite_config(&self, force_all: bool) -> Result<(), String> {
        let cfg = self.config.read().clone();
        if cfg.config_file.is_empty() {
            return Err("ERR The server is running without a config file".into());
        }
        let users = self.users_by_name();
        let directives = crate::config_rewrite::Directives {
            users: cfg
                .aclfile
                .is_empty()
                .then(|| users.iter().map(|u| u.describe()).collect()),
            tenants: users.iter().filter_map(|u| u.tenant_line()).collect(),
        };
        let path = std::path::Path::new(&cfg.config_file);
        let fail = |e: String| {
            tracing::warn!("CONFIG REWRITE failed: {e}");
            format!("ERR Rewriting config file: {e}")
        };
        let old = crate::config_rewrite::read_old_file(path).map_err(fail)?;
        let text = crate::config_rewrite::rewrite_text(&old, &cfg, &directives, force_all);
        crate::config_rewrite::overwrite_file(path, &text).map_err(fail)?;
        tracing::info!("CONFIG REWRITE executed with success.");
        Ok(())
    }

    /// ACL SAVE: ACL LIST's lines, written to a temporary file then renamed over
    /// `aclfile` (ACLSaveToFile).
    pub fn save_acl_file(&self) -> Result<(), String> {
        let path = self.config.read().aclfile.clone();
        let mut text = String::new();
        for u in self.users_by_name() {
            text.push_str(&u.describe());
            text.push('\n');
        }
        crate::config_rewrite::overwrite_file(std::path::Path::new(&path), &text).map_err(|e| {
            tracing::warn!("Failed to save the ACL file {path}: {e}");
            "There was an error trying to save the ACLs. Please check the server logs for more information".to_string()
        })
    }

    /// Every ACL user, sorted by name (the order of ACL LIST, ACL SAVE and CONFIG
    /// REWRITE's `user` lines: Redis walks its users' radix tree).
    fn users_by_name(&self) -> Vec<crate::tenants::User> {
        let mut users = self.tenants.users();
        users.sort_by(|a, b| a.name.cmp(&b.name));
        users
    }

    /// Pushes every tenant's profiler sampling rate to the store.
    pub fn install_sample_rates(&self) {
        let default_rate = self.config.read().tenant_sample_rate;
        for u in self.tenants.users() {
            self.store
                .set_tenant_sample_rate(u.id, u.settings.sample_rate.unwrap_or(default_rate));
        }
    }

    /// Pushes the operator's per-tenant limits to the store: caps always; targets as
    /// `static` computes them unless the kRedis tuner owns them.
    pub fn install_tenant_limits(&self) {
        let (maxmemory, mode) = {
            let c = self.config.read();
            (c.maxmemory, c.tenant_partitioning)
        };
        let tuner_owns =
            mode == augur_store::Partitioning::Kredis && self.profiler.intervals.load(Relaxed) > 0;
        self.tenants
            .install_static_limits(&self.store, maxmemory, tuner_owns);
    }

    /// New connections start authenticated exactly when the default user is `on` and
    /// `nopass` (networking.c createClient); keeps the hot copy in step.
    pub fn refresh_default_auth(&self) {
        let open = self
            .tenants
            .get("default")
            .is_some_and(|u| u.enabled && u.nopass);
        self.pass_required.store(!open, Relaxed);
    }

    /// Tells every connection to reload its user's permissions before its next command
    /// (after ACL SETUSER and anything else that changes a user).
    pub fn acl_changed(&self) {
        for c in self.clients.lock().values() {
            c.acl_state
                .fetch_or(ACL_DIRTY, std::sync::atomic::Ordering::Release);
        }
    }

    /// Closes every connection authenticated as user slot `u` (ACL DELUSER), except
    /// connection `keep`.
    pub fn disconnect_user_except(&self, u: augur_store::TenantId, keep: u64) {
        for c in self.clients.lock().values() {
            if c.user_id.load(Relaxed) == u && c.id != keep {
                c.close();
            }
        }
    }

    /// Closes every connection working in tenant (keyspace) `t`, except connection
    /// `keep` (the one asking).
    pub fn disconnect_tenant_except(&self, t: augur_store::TenantId, keep: u64) {
        for c in self.clients.lock().values() {
            if c.tenant.load(Relaxed) == t && c.id != keep {
                c.close();
            }
        }
    }

    /// Asks the server to stop: the accept loops end and every connection closes.
    pub fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Relaxed);
        self.shutdown.notify_waiters();
        self.shutdown.notify_one();
        for c in self.clients.lock().values() {
            c.close();
        }
    }

    pub fn connected_clients(&self) -> usize {
        self.clients.lock().len()
    }
}
