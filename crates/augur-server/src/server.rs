//! Listening, connections and the periodic server cron.
//!
//! One tokio task per connection. A connection reads whatever is available, runs every
//! complete command in it (pipelining), and writes all replies with one write, so a
//! pipeline of 16 commands costs one read and one write system call, like Redis. The
//! read and write buffers live as long as the connection and are reused.

use crate::commands::{execute, Client};
use crate::config::ServerConfig;
use crate::resp::{Parsed, Parser};
use crate::state::{flag, now_ms, ClientMeta, Shared};
use bytes::BytesMut;
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const READ_CHUNK: usize = 16 * 1024;
/// Buffers grown past this by one big request or reply are released afterwards, so an
/// idle connection does not keep megabytes.
const KEEP_BUFFER: usize = 1024 * 1024;
/// Most a single read may pre-reserve for a large bulk whose length the client announced.
const MAX_PRERESERVE: usize = 4 * 1024 * 1024;
/// An idle subscriber's Pub/Sub messages (and a tracking client's invalidations) are
/// written in batches of about this size; the rest stay queued (and counted against its
/// output-buffer limit) until the write ends.
const PUSH_BATCH: usize = 64 * 1024;

/// Redis's PROTO_RESIZE_THRESHOLD: a read buffer larger than this is trimmed when its
/// recent peak use is less than half of it.
const PROTO_RESIZE_THRESHOLD: usize = 32 * 1024;
/// Redis's reply_buffer_peak_reset_time: how long CLIENT LIST's `rbp=` covers.
const RBP_RESET_MS: u64 = 5000;

/// What woke a connection.
enum Wake {
    Read(usize),
    /// The socket became readable while the read buffer was released (idle).
    Readable,
    /// `meta.kill` was notified: closed, or asked to release its read buffer.
    Nudge,
    Push(Option<crate::pubsub::Push>),
    Monitor(Option<bytes::Bytes>),
}

/// A change of the client port's listeners (CONFIG SET port / bind): keep the
/// listeners on `keep`, close the others, serve `add` (already bound and listening).
pub struct ListenerChange {
    pub keep: Vec<SocketAddr>,
    pub add: Vec<std::net::TcpListener>,
}

/// A bound, not yet running server.
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<TcpListener>,
    /// The Prometheus endpoint's listeners (`metrics-port`; none when 0).
    metrics_listeners: Vec<TcpListener>,
}

/// Lets another task (a test, a signal handler) stop a running server.
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
}

impl ServerHandle {
    pub fn shutdown(&self) {
        self.shared.request_shutdown();
    }
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Server {
    /// Binds every configured address (port 0 picks a free port, the same for all
    /// addresses once the first is bound).
    pub async fn bind(
        config: ServerConfig,
        log_hook: Option<Box<dyn Fn(crate::config::LogLevel) + Send + Sync>>,
    ) -> io::Result<Server> {
        let (_, bound) = bind_addresses(&config.bind, config.port, &[])?;
        if bound.is_empty() {
            tracing::warn!("bind lists no address that could be bound: not listening on TCP");
        }
        let addrs: Vec<SocketAddr> = bound.iter().filter_map(|l| l.local_addr().ok()).collect();
        let handles = second_handles(&bound)?;
        let listeners = bound
            .into_iter()
            .map(TcpListener::from_std)
            .collect::<io::Result<Vec<_>>>()?;
        let mut metrics_listeners = Vec::new();
        if config.metrics_port > 0 {
            let (_, bound) = bind_addresses(&config.bind, config.metrics_port, &[])
                .map_err(|e| io::Error::new(e.kind(), format!("metrics port: {e}")))?;
            for l in bound {
                metrics_listeners.push(TcpListener::from_std(l)?);
            }
        }
        let shared = Arc::new(Shared::new(config, log_hook));
        shared
            .setup_tenants()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        crate::profiler::start(shared.clone())?;
        *shared.listen_addrs.lock() = addrs;
        *shared.listen_sockets.lock() = handles;
        Ok(Server {
            shared,
            listeners,
            metrics_listeners,
        })
    }

    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.shared.listen_addrs.lock().clone()
    }

    pub fn handle(&self) -> ServerHandle {
        ServerHandle {
            shared: self.shared.clone(),
        }
    }

    /// Serves until SHUTDOWN or [`ServerHandle::shutdown`]; then closes every connection.
    pub async fn run(self) -> io::Result<()> {
        let shared = self.shared;
        // The command clock calibrates the TSC on its first read (milliseconds): here,
        // not in the first client's command.
        let _ = quanta::Instant::now();
        {
            let cfg = shared.config.read();
            tracing::info!(
                version = env!("CARGO_PKG_VERSION"),
                addrs = ?*shared.listen_addrs.lock(),
                maxmemory = cfg.maxmemory,
                policy = %cfg.maxmemory_policy,
                "Augur ready to accept connections"
            );
        }
        let mut tasks = Vec::new();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        *shared.listener_ctl.lock() = Some(tx);
        tasks.push(tokio::spawn(listeners(self.listeners, rx, shared.clone())));
        tasks.push(tokio::spawn(cron(shared.clone())));
        for l in self.metrics_listeners {
            tracing::info!(addr = ?l.local_addr().ok(), "Prometheus metrics on /metrics");
            tasks.push(tokio::spawn(crate::metrics::serve(l, shared.clone())));
        }
        while !shared.shutdown_requested.load(Relaxed) {
            shared.shutdown.notified().await;
        }
        for t in &tasks {
            t.abort();
        }
        // Close every connection (ones accepted during the shutdown included).
        for c in shared.clients.lock().values() {
            c.close();
        }
        tracing::info!("Augur is now ready to exit, bye bye...");
        Ok(())
    }
}

/// Aborts the accept loops it holds when dropped (the supervisor's end).
struct AcceptLoops(HashMap<SocketAddr, tokio::task::JoinHandle<()>>);

impl Drop for AcceptLoops {
    fn drop(&mut self) {
        for t in self.0.values() {
            t.abort();
        }
    }
}

/// Runs one accept loop per listener, and swaps them on CONFIG SET port / bind.
async fn listeners(
    initial: Vec<TcpListener>,
    mut changes: tokio::sync::mpsc::UnboundedReceiver<ListenerChange>,
    shared: Arc<Shared>,
) {
    let mut loops = AcceptLoops(HashMap::new());
    for l in initial {
        if let Ok(a) = l.local_addr() {
            loops
                .0
                .insert(a, tokio::spawn(accept_loop(l, shared.clone())));
        }
    }
    while let Some(change) = changes.recv().await {
        loops.0.retain(|a, t| {
            let keep = change.keep.contains(a);
            if !keep {
                t.abort();
            }
            keep
        });
        for l in change.add {
            match TcpListener::from_std(l) {
                Ok(l) => {
                    if let Ok(a) = l.local_addr() {
                        tracing::info!(addr = %a, "listening");
                        loops
                            .0
                            .insert(a, tokio::spawn(accept_loop(l, shared.clone())));
                    }
                }
                Err(e) => tracing::warn!("could not serve a new listener: {e}"),
            }
        }
    }
}

/// Binds `bind`'s addresses on `port` (config.c's bind semantics): `*` is every IPv4
/// address, `::*` every IPv6 one, a `-` prefix marks an address that may fail (absent
/// IPv6, say) without failing the whole; an empty list binds nothing. Addresses in
/// `current` are already bound and are returned in the first list, not bound again.
/// Port 0 binds a free port, then the same port for the addresses after it. Err is the
/// first required address that could not be resolved or bound.
pub fn bind_addresses(
    bind: &[String],
    mut port: u16,
    current: &[SocketAddr],
) -> io::Result<(Vec<SocketAddr>, Vec<std::net::TcpListener>)> {
    let mut keep = Vec::new();
    let mut add: Vec<std::net::TcpListener> = Vec::new();
    for host in bind {
        let optional = host.starts_with('-');
        let h = match host.trim_start_matches('-') {
            "*" => "0.0.0.0",
            "::*" => "::",
            h => h,
        };
        let addrs: Vec<SocketAddr> = match (h, port).to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) if optional => {
                tracing::warn!("could not resolve optional bind address {host}: {e}");
                continue;
            }
            Err(e) => {
                tracing::warn!("could not resolve {host}: {e}");
                return Err(io::Error::new(
                    e.kind(),
                    format!("could not resolve {host}: {e}"),
                ));
            }
        };
        for mut a in addrs {
            if port != 0 {
                a.set_port(port);
            }
            if current.contains(&a) {
                keep.push(a);
                continue;
            }
            match listen_on(a) {
                Ok(l) => {
                    if port == 0 {
                        port = l.local_addr()?.port();
                    }
                    add.push(l)
                }
                Err(e) if optional => tracing::warn!("could not bind optional {a}: {e}"),
                Err(e) => {
                    tracing::warn!("Could not create server TCP listening socket {a}: {e}");
                    // Dropping `add` closes what was bound so far.
                    return Err(io::Error::new(e.kind(), format!("could not bind {a}: {e}")));
                }
            }
        }
    }
    Ok((keep, add))
}

/// One listening socket as Redis makes it (anet.c's anetListen): SO_REUSEADDR, an
/// IPv6 socket IPv6-only (so `* -::*` binds 0.0.0.0 and [::] on the same port instead
/// of the second failing on a dual-stack socket), Redis's default backlog of 511
/// (`tcp-backlog`), non-blocking for tokio.
fn listen_on(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(511)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// CONFIG SET port / bind (config.c's updatePort / updateBind, networking.c's
/// changeListenPort): binds what the new `bind` and `port` need before anything is
/// closed, so on failure the server keeps listening where it did and CONFIG SET fails;
/// on success the accept loops switch over. Addresses bound before on the same port are
/// kept as they are. Port 0 closes the TCP listeners, as in Redis. The error is
/// Redis's reason text ("Unable to listen on this port", "Failed to bind to specified
/// addresses.").
pub fn change_listeners(shared: &Shared, bind: &[String], port: u16) -> Result<(), String> {
    let port_changed = shared.config.read().port != port;
    let fail = || -> String {
        if port_changed {
            "Unable to listen on this port".into()
        } else {
            "Failed to bind to specified addresses.".into()
        }
    };
    let current: Vec<SocketAddr> = shared.listen_addrs.lock().clone();
    let (keep, add) = if port != 0 {
        bind_addresses(bind, port, &current).map_err(|_| fail())?
    } else {
        (Vec::new(), Vec::new())
    };
    let ctl = shared.listener_ctl.lock();
    let Some(tx) = ctl.as_ref() else {
        return Err(fail());
    };
    let added = second_handles(&add).map_err(|_| fail())?;
    let mut now_listening = keep.clone();
    now_listening.extend(add.iter().filter_map(|l| l.local_addr().ok()));
    let dropped: Vec<SocketAddr> = current
        .iter()
        .filter(|a| !keep.contains(a))
        .copied()
        .collect();
    tx.send(ListenerChange { keep, add }).map_err(|_| fail())?;
    let mut sockets = shared.listen_sockets.lock();
    for a in dropped {
        // shutdown(SHUT_RD) takes a listening socket out of LISTEN on Linux (new
        // connections are refused, unaccepted ones reset) for every handle to it, so
        // the port is closed now; the accept loop's own handle goes when it is aborted.
        if let Some(l) = sockets.remove(&a) {
            let _ = socket2::SockRef::from(&l).shutdown(std::net::Shutdown::Read);
        }
    }
    sockets.extend(added);
    *shared.listen_addrs.lock() = now_listening;
    Ok(())
}

/// A second handle (dup) of each listener, by its address (Shared::listen_sockets).
fn second_handles(
    listeners: &[std::net::TcpListener],
) -> io::Result<HashMap<SocketAddr, std::net::TcpListener>> {
    listeners
        .iter()
        .map(|l| Ok((l.local_addr()?, l.try_clone()?)))
        .collect()
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (sock, addr) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        shared
            .counters
            .total_connections_received
            .fetch_add(1, Relaxed);
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(sock, addr, shared).await {
                tracing::debug!("connection {addr}: {e}");
            }
        });
    }
}

/// Periodic work at `hz`: active expiry, idle-client timeouts, ops/sec sampling.
async fn cron(shared: Arc<Shared>) {
    let mut last_cmds = shared.counters.total_commands_processed.load();
    let mut last_t = std::time::Instant::now();
    let mut ticks: u64 = 0;
    let mut defrag_resume_tick: u64 = 0;
    let mut defrag_backoff_waste: Option<u64> = None;
    loop {
        let hz = shared.hz.load(Relaxed).max(1);
        tokio::time::sleep(Duration::from_millis(1000 / hz as u64)).await;
        let store_shared = shared.clone();
        // The cycle locks shards one by one; run it off the async workers' hot loop.
        // It holds the gate shared, so a key never expires in the middle of a
        // transaction.
        // While clients are paused nothing expires (Redis pauses active expiry too, so
        // a paused dataset does not change).
        if shared.pause.active(now_ms()).is_none() {
            let _ = tokio::task::spawn_blocking(move || {
                let _hold = store_shared.gate.shared();
                let t0 = std::time::Instant::now();
                let expired = store_shared.store.active_expire_cycle(now_ms());
                // The latency monitor's `expire-cycle` (expire.c: the cycle's duration).
                store_shared
                    .latency
                    .add_if_needed("expire-cycle", t0.elapsed().as_millis() as u64);
                expired
            })
            .await;
        }
        shared
            .counters
            .used_memory_peak
            .fetch_max(shared.store.used_memory(), Relaxed);
        if shared.tracking.in_use() {
            // trackingLimitUsedSlots, and the BCAST keys expiry gathered.
            shared.tracking.limit_table();
            shared.tracking.broadcast(None);
        }
        if ticks < defrag_resume_tick && fragmentation_grew_since(defrag_backoff_waste, &shared) {
            // The walk that found nothing to move saw other slabs than these: the
            // dataset has changed enough since (a fill that was dense when walked, then a
            // drift of sizes) that waiting out the back-off would leave the new waste.
            defrag_resume_tick = ticks;
        }
        if ticks >= defrag_resume_tick {
            if let Some(pause) = defrag_tick(&shared, hz).await {
                // A whole walk that moved almost nothing: the fragmentation is not the
                // kind moving entries fixes (or not ours); look again later, or as soon
                // as it grows.
                defrag_resume_tick = ticks + pause * hz as u64;
                defrag_backoff_waste = waste_percent();
            }
        } else {
            shared.counters.active_defrag_running.store(false, Relaxed);
        }
        ticks += 1;
        if ticks.is_multiple_of(hz as u64) {
            // clientsCronResizeQueryBuffer's idle case: a connection idle for more than
            // 2 s with more than 4 KB of unused read buffer releases it.
            for c in shared.clients.lock().values() {
                if c.stats.qbuf_free.load(Relaxed) > 4096 && c.idle_secs() > 2 {
                    c.shrink_qbuf.store(true, Relaxed);
                    c.kill.notify_one();
                }
                // clientsCron's closeClientOnOutputBufferLimitReached: a soft limit's
                // seconds run out with no further message queued.
                if c.obuf.queued() > 0
                    && c.obuf
                        .check(shared.obuf_limits.get(crate::obuf::class_of(c)))
                {
                    crate::obuf::close_for_limit(c);
                }
            }
            crate::commands::evict_clients(&shared);
            let timeout = shared.timeout_secs.load(Relaxed);
            if timeout > 0 {
                for c in shared.clients.lock().values() {
                    if c.idle_secs() >= timeout {
                        tracing::debug!(client = c.id, "closing idle client");
                        c.close();
                    }
                }
            }
            let cmds = shared.counters.total_commands_processed.load();
            let secs = last_t.elapsed().as_secs_f64().max(1e-3);
            shared.counters.instantaneous_ops.store(
                (cmds.saturating_sub(last_cmds) as f64 / secs) as u64,
                Relaxed,
            );
            last_cmds = cmds;
            last_t = std::time::Instant::now();
        }
    }
}

/// Seconds active defragmentation waits after a full walk that moved under 1 % of the
/// entries it visited.
const DEFRAG_BACKOFF_SECS: u64 = 30;
/// Index positions per `Store::defrag_cycle` call (the time budget is checked between
/// calls; a call locks one shard at a time).
const DEFRAG_STEP_POSITIONS: usize = 1024;

/// jemalloc's fragmentation as a percentage of its allocated bytes: what active bytes
/// (pages of slabs in use) exceed allocated bytes by.
fn waste_percent() -> Option<u64> {
    crate::memstats::jemalloc_stats().map(|(allocated, active, _)| {
        active.saturating_sub(allocated).saturating_mul(100) / allocated.max(1)
    })
}

/// Whether fragmentation has grown by more than `active-defrag-threshold-lower` points
/// since a walk that found nothing worth moving measured `at_backoff` percent: then the
/// back-off after that walk ends early. Without it, a walk that ends during a fill (slabs
/// dense, nothing to move) kept defragmentation off for 30 s while a following size
/// drift left the allocator at 1.43x its allocated bytes (defrag_drift_e2e, one run in
/// three).
fn fragmentation_grew_since(at_backoff: Option<u64>, shared: &Shared) -> bool {
    let (on, lower) = {
        let c = shared.config.read();
        (c.activedefrag, c.active_defrag_threshold_lower)
    };
    match (at_backoff, on) {
        (Some(before), true) => waste_percent().is_some_and(|now| now > before + lower),
        _ => false,
    }
}

/// One cron tick of active defragmentation (`activedefrag`, `augur_store::defrag`):
/// when jemalloc's active bytes exceed its allocated bytes by more than
/// `active-defrag-ignore-bytes` and `active-defrag-threshold-lower` percent, moves
/// entries out of sparse slabs for up to `active-defrag-cycle-max` percent of the tick.
/// Returns a back-off in seconds after a fruitless full walk.
async fn defrag_tick(shared: &Arc<Shared>, hz: u32) -> Option<u64> {
    let (on, ignore, lower, cycle_max) = {
        let c = shared.config.read();
        (
            c.activedefrag,
            c.active_defrag_ignore_bytes,
            c.active_defrag_threshold_lower,
            c.active_defrag_cycle_max,
        )
    };
    let running = &shared.counters.active_defrag_running;
    let fragmented = on
        && shared.pause.active(now_ms()).is_none()
        && crate::memstats::jemalloc_stats().is_some_and(|(allocated, active, _)| {
            let waste = active.saturating_sub(allocated);
            waste > ignore && waste.saturating_mul(100) > allocated.saturating_mul(lower)
        });
    running.store(fragmented, Relaxed);
    if !fragmented {
        return None;
    }
    let budget = Duration::from_micros(1_000_000 / hz as u64 * cycle_max / 100);
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        let start = std::time::Instant::now();
        let k = &shared.counters;
        loop {
            let (s, finished) = shared.store.defrag_cycle(DEFRAG_STEP_POSITIONS);
            k.active_defrag_hits.fetch_add(s.hits, Relaxed);
            k.active_defrag_misses.fetch_add(s.misses, Relaxed);
            if finished.is_some_and(|walk| walk.hits * 100 < walk.misses) {
                return Some(DEFRAG_BACKOFF_SECS);
            }
            if start.elapsed() >= budget {
                return None;
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// Removes the client from the registry when the connection ends, however it ends.
struct Registration {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let meta = self.shared.clients.lock().remove(&self.id);
        if let Some(m) = meta {
            let tenant = m.tenant.load(Relaxed);
            self.shared.tracking.disable(&m, tenant);
        }
    }
}

/// Whether a client connects from this host's loopback (networking.c `connIsLocal`:
/// 127.0.0.0/8 or ::1, an IPv4-mapped IPv6 loopback included).
fn is_loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Redis 7.0's reply to a client protected mode refuses (networking.c
/// `clientAcceptHandler`), naming Redis's own remedies, which are Augur's too.
const PROTECTED_MODE_DENIED: &str = "-DENIED Redis is running in protected mode because protected \
mode is enabled and no password is set for the default user. \
In this mode connections are only accepted from the loopback interface. \
If you want to connect from external computers to Redis you \
may adopt one of the following solutions: \
1) Just disable protected mode sending the command \
'CONFIG SET protected-mode no' from the loopback interface \
by connecting to Redis from the same host the server is \
running, however MAKE SURE Redis is not publicly accessible \
from internet if you do so. Use CONFIG REWRITE to make this \
change permanent. \
2) Alternatively you can just disable the protected mode by \
editing the Redis configuration file, and setting the protected \
mode option to 'no', and then restarting the server. \
3) If you started the server manually just for testing, restart \
it with the '--protected-mode no' option. \
4) Setup a an authentication password for the default user. \
NOTE: You only need to do one of the above things in order for \
the server to start accepting connections from the outside.\r\n";

async fn connection(mut sock: TcpStream, addr: SocketAddr, shared: Arc<Shared>) -> io::Result<()> {
    sock.set_nodelay(true)?;
    let maxclients = shared.maxclients.load(Relaxed);
    let id = shared.next_client_id.fetch_add(1, Relaxed);
    let meta = Arc::new(ClientMeta::new(id, addr, sock.local_addr()?).with_fd({
        use std::os::fd::AsRawFd;
        sock.as_raw_fd()
    }));
    let admitted = {
        let mut clients = shared.clients.lock();
        let room = (clients.len() as u64) < maxclients;
        if room {
            clients.insert(id, meta.clone());
        }
        room
    };
    if !admitted {
        shared.counters.rejected_connections.fetch_add(1, Relaxed);
        let _ = sock
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return Ok(());
    }
    let _registration = Registration {
        shared: shared.clone(),
        id,
    };
    if shared.protected_mode.load(Relaxed)
        && !is_loopback(addr.ip())
        && shared.tenants.get("default").is_some_and(|u| u.nopass)
    {
        shared.counters.rejected_connections.fetch_add(1, Relaxed);
        let _ = sock.write_all(PROTECTED_MODE_DENIED.as_bytes()).await;
        return Ok(());
    }
    if shared.shutdown_requested.load(Relaxed) {
        return Ok(());
    }

    let authenticated = !shared.pass_required.load(Relaxed);
    let mut client = Client::new(meta.clone(), authenticated);
    client.attach_db_map(&shared);
    let result = serve(&mut sock, addr, &shared, &meta, &mut client).await;
    client.disconnect(&shared);
    result
}

/// Commands of a read whose index words are prefetched before the first one runs.
const PREFETCH_AHEAD: usize = 32;

/// Pipelining: before running the commands a read brought in, starts fetching the index
/// word of each one's key (`Store::prefetch_key`), then the entry it points to
/// (`Store::prefetch_entry`), so that their cache misses overlap instead of each stalling
/// its own command (at a million keys the index outgrows the caches). `buf` starts after
/// the read's first command, which the caller has parsed and is about to run: that one
/// needs its key at once, so a fetch ahead of it gains nothing, and a read of a single
/// command (no pipeline) never comes here. Looking ahead from the first command instead
/// cost an unpipelined SET ~270 instructions (a second parse of its header) for nothing.
fn prefetch_batch(shared: &Shared, client: &Client, buf: &[u8]) {
    let Some((first_key, first_len)) = crate::resp::peek_key(buf) else {
        return;
    };
    let ns = client.ns();
    let mut located = [None; PREFETCH_AHEAD];
    let mut n = 0;
    let mut at = 0;
    let mut next = Some((first_key, first_len));
    while n < PREFETCH_AHEAD {
        let Some((key, len)) = next else { break };
        if let Some(k) = key {
            located[n] = Some(
                shared
                    .store
                    .prefetch_key(ns, &buf[at + k.start..at + k.end]),
            );
            n += 1;
        }
        at += len;
        next = crate::resp::peek_key(&buf[at..]);
    }
    // Second pass, the index words now arriving: the entries they point to.
    for &key in located[..n].iter().flatten() {
        shared.store.prefetch_entry(key);
    }
}

/// Reads, runs and answers a connection's commands until it closes or is closed.
///
/// The read buffer is Redis's query buffer: CLIENT LIST reports its length and free room
/// (`qbuf=`, `qbuf-free=`), and it is trimmed as networking.c / server.c do it
/// (clientsCronResizeQueryBuffer): released when the connection has been idle for more
/// than 2 s (the cron nudges it), and cut down to its recent peak when it is over 32 KB
/// and more than twice that peak (checked at most every cron period, after a batch).
async fn serve(
    sock: &mut TcpStream,
    addr: SocketAddr,
    shared: &Arc<Shared>,
    meta: &Arc<ClientMeta>,
    client: &mut Client,
) -> io::Result<()> {
    let id = meta.id;
    let mut parser = Parser::new(shared.proto_max_bulk_len.load(Relaxed) as usize);
    let mut rbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // The read buffer was released: reserve again only once the socket is readable.
    let mut released = false;
    // Redis's querybuf_peak: the most the read buffer held since the last resize check.
    let mut qb_peak: usize = 0;
    let mut next_resize_ms: u64 = 0;
    // The largest reply batch since `rbp_since` (CLIENT LIST `rbp=`).
    let mut rb_peak: usize = 0;
    let mut rbp_since: u64 = 0;
    // Commands are left in `rbuf` by a CLIENT PAUSE: run them before reading again.
    let mut resume = false;
    publish_stats(meta, client, &rbuf);
    // One kill notification future for the connection's life: creating one per read
    // would register and unregister a waiter (under Notify's lock) on every request.
    let mut killed = std::pin::pin!(meta.kill.notified());

    loop {
        let resumed = std::mem::take(&mut resume);
        let n = if resumed {
            0
        } else {
            if !released {
                // Make room for the next read: at least a chunk, more for a big announced
                // bulk.
                let needed = parser.bytes_needed().saturating_sub(rbuf.len());
                let want = needed.clamp(READ_CHUNK, MAX_PRERESERVE.max(READ_CHUNK));
                if rbuf.capacity() - rbuf.len() < want / 4 {
                    rbuf.reserve(want);
                }
            }
            // Pub/Sub messages and MONITOR lines also wake the connection, so that they
            // are written while the client is idle; the sender never waits for us.
            let wake = if released {
                let subs = client.pubsub.as_deref_mut();
                let mon = client.monitor.as_deref_mut();
                tokio::select! {
                    biased;
                    r = sock.readable() => { r?; Wake::Readable }
                    _ = &mut killed => Wake::Nudge,
                    p = next_push(subs) => Wake::Push(p),
                    l = next_line(mon) => Wake::Monitor(l),
                }
            } else if client.pubsub.is_none() && client.monitor.is_none() {
                tokio::select! {
                    biased;
                    r = sock.read_buf(&mut rbuf) => Wake::Read(r?),
                    _ = &mut killed => Wake::Nudge,
                }
            } else {
                let subs = client.pubsub.as_deref_mut();
                let mon = client.monitor.as_deref_mut();
                tokio::select! {
                    biased;
                    r = sock.read_buf(&mut rbuf) => Wake::Read(r?),
                    _ = &mut killed => Wake::Nudge,
                    p = next_push(subs) => Wake::Push(p),
                    l = next_line(mon) => Wake::Monitor(l),
                }
            };
            match wake {
                Wake::Read(n) => n,
                Wake::Readable => {
                    released = false;
                    continue;
                }
                Wake::Nudge => {
                    if meta.killed.load(Relaxed) {
                        return Ok(());
                    }
                    killed.set(meta.kill.notified());
                    if meta.tracking.has_queued() {
                        // Invalidations for this client-side cache (CLIENT TRACKING), a
                        // batch at a time: the rest stay queued, counted against the
                        // output-buffer limit, while the socket takes this one; then
                        // the nudge comes back for them (after any command that arrived,
                        // as the select prefers the socket).
                        let more = crate::tracking::drain(
                            meta,
                            &mut client.out,
                            client.pubsub.is_some(),
                            PUSH_BATCH,
                        );
                        write_pushed(sock, shared, meta, client, &mut killed).await?;
                        if more {
                            meta.kill.notify_one();
                        }
                        continue;
                    }
                    if meta.shrink_qbuf.swap(false, Relaxed)
                        && meta.idle_secs() > 2
                        && rbuf.capacity() - rbuf.len() > 4096
                    {
                        if rbuf.is_empty() {
                            rbuf = Vec::new();
                            released = true;
                        } else {
                            rbuf.shrink_to_fit();
                        }
                        qb_peak = rbuf.len();
                        publish_stats(meta, client, &rbuf);
                    }
                    continue;
                }
                Wake::Push(p) => {
                    if let Some(p) = p {
                        p.write(&mut client.out);
                    }
                    if let Some(subs) = client.pubsub.as_mut() {
                        subs.drain(&mut client.out, PUSH_BATCH);
                    }
                    write_pushed(sock, shared, meta, client, &mut killed).await?;
                    continue;
                }
                Wake::Monitor(l) => {
                    if let Some(l) = l {
                        client.out.buf.extend_from_slice(&l);
                    }
                    if let Some(m) = client.monitor.as_mut() {
                        m.drain(&mut client.out.buf, PUSH_BATCH);
                    }
                    write_pushed(sock, shared, meta, client, &mut killed).await?;
                    continue;
                }
            }
        };
        if (n == 0 && !resumed) || meta.killed.load(Relaxed) {
            return Ok(());
        }
        if n > 0 {
            meta.last_interaction_ms
                .store(meta.created.elapsed().as_millis() as u64, Relaxed);
            qb_peak = qb_peak.max(rbuf.len());
            meta.stats.qbuf.store(rbuf.len() as u64, Relaxed);
            meta.stats
                .qbuf_free
                .store((rbuf.capacity() - rbuf.len()) as u64, Relaxed);
        }

        parser.set_max_bulk_len(shared.proto_max_bulk_len.load(Relaxed) as usize);
        let now = now_ms();
        if let Some(subs) = client.pubsub.as_mut() {
            // Messages queued before these commands arrived go out before their replies.
            subs.drain(&mut client.out, usize::MAX);
        }
        if let Some(m) = client.monitor.as_mut() {
            m.drain(&mut client.out.buf, usize::MAX);
        }
        if meta.tracking.has_queued() {
            crate::tracking::drain(meta, &mut client.out, client.pubsub.is_some(), usize::MAX);
        }
        let mut consumed = 0;
        let mut fatal = None;
        let mut paused = false;
        while !client.close_after_reply {
            parser.set_auth_required(client.auth_required(shared));
            match parser.parse(&rbuf[consumed..]) {
                Ok(Parsed::Command(len)) => {
                    // The read's first command is parsed: if more follow (a pipeline),
                    // their keys are fetched while this one runs. An unpipelined read
                    // (one command) costs no look-ahead at all.
                    if consumed == 0 && len < rbuf.len() {
                        prefetch_batch(shared, client, &rbuf[len..]);
                    }
                    let args = parser.args(&rbuf[consumed..]);
                    // CLIENT PAUSE: this command waits (with the rest of the buffer)
                    // until the pause ends; the parser re-reads it then.
                    if shared.pause.until_ms.load(Relaxed) != 0
                        && crate::commands::paused_for(shared, client, args, now)
                    {
                        paused = true;
                        break;
                    }
                    execute(shared, client, args, now);
                    consumed += len;
                    if client.blocked.is_some() {
                        // A blocking command found nothing: the rest of the buffer
                        // waits until it is served (see `blocking`).
                        break;
                    }
                }
                Ok(Parsed::Incomplete) => break,
                Err(e) => {
                    tracing::info!("Protocol error ({e}) from client: id={id} addr={addr}");
                    client.out.error(&e.reply());
                    fatal = Some(e);
                    break;
                }
            }
        }
        rbuf.drain(..consumed);

        let counters = &shared.counters;
        counters.net_input_bytes.add(n as u64);
        if client.commands > 0 {
            counters.total_commands_processed.add(client.commands);
            client.commands = 0;
        }
        shared.stats.flush(&mut client.out.stats);
        client.clock = None;
        if !client.out.buf.is_empty() {
            let len = client.out.buf.len();
            rb_peak = rb_peak.max(len);
            counters.net_output_bytes.add(len as u64);
            meta.stats.obl.store(len as u64, Relaxed);
            // A client killed (CLIENT KILL, an output-buffer limit) may be the one not
            // reading: do not wait for its socket.
            if !write_unless_killed(sock, &client.out.buf, meta, &mut killed).await? {
                return Ok(());
            }
            meta.stats.obl.store(0, Relaxed);
            client.out.buf.clear();
            if client.out.buf.capacity() > KEEP_BUFFER {
                client.out.buf = BytesMut::with_capacity(READ_CHUNK);
            }
        }
        if fatal.is_some() || client.close_after_reply {
            return Ok(());
        }
        if rbuf.len() as u64 > shared.query_buffer_limit.load(Relaxed) {
            tracing::warn!(
                "Closing client that reached max query buffer length: id={id} addr={addr} qbuf={}",
                rbuf.len()
            );
            return Ok(());
        }
        if rbuf.is_empty() && rbuf.capacity() > KEEP_BUFFER {
            rbuf = Vec::with_capacity(READ_CHUNK);
        }
        if now >= next_resize_ms {
            // clientsCronResizeQueryBuffer's busy case: trim a buffer much larger than
            // what the connection used lately, not below that use or the bulk being read.
            let alloc = rbuf.capacity();
            if alloc - rbuf.len() > 4096 && alloc > PROTO_RESIZE_THRESHOLD && alloc / 2 > qb_peak {
                let keep = rbuf.len().max(qb_peak).max(parser.bytes_needed());
                rbuf.shrink_to(keep);
            }
            qb_peak = rbuf.len().max(parser.bytes_needed());
            next_resize_ms = now + 1000 / u64::from(shared.hz.load(Relaxed).max(1));
            if now >= rbp_since + RBP_RESET_MS {
                rb_peak = 0;
                rbp_since = now;
            }
        }
        meta.stats.rbp.store(rb_peak as u64, Relaxed);
        publish_stats(meta, client, &rbuf);
        if let Some(blocked) = client.blocked.take() {
            if !wait_blocked(sock, shared, meta, client, blocked, &mut rbuf, &mut killed).await? {
                return Ok(());
            }
            // The reply (served, timed out or unblocked) goes out with the replies of
            // the commands after it.
            resume = true;
        }
        if paused {
            wait_pause_end(shared, meta, &mut killed).await;
            if meta.killed.load(Relaxed) {
                return Ok(());
            }
            resume = true;
        }
    }
}

/// Waits until a blocked client's wait ends: served by another connection, its timeout,
/// CLIENT UNBLOCK; meanwhile what the client sends is read into `rbuf` (and runs
/// afterwards). Its reply is left in the output buffer. False if the connection is to
/// close (killed, or the client went away): the waiter is withdrawn first, so nothing
/// is served to a connection that is gone.
async fn wait_blocked<'a>(
    sock: &mut TcpStream,
    shared: &Shared,
    meta: &'a ClientMeta,
    client: &mut Client,
    blocked: crate::blocking::Blocked,
    rbuf: &mut Vec<u8>,
    killed: &mut std::pin::Pin<&mut tokio::sync::futures::Notified<'a>>,
) -> io::Result<bool> {
    use crate::blocking::Outcome;
    let w = &blocked.waiter;
    let end_wait = |outcome: Outcome| {
        let mut reg = shared.blocking.lock();
        shared.blocking.finish(&mut reg, w, outcome);
    };
    meta.blocked.store(true, Relaxed);
    // Some(outcome) when the wait ended; None (or a read error) when the connection is
    // to close.
    let ended: io::Result<Option<Outcome>> = async {
        loop {
            let outcome = w.outcome();
            if outcome != Outcome::Waiting {
                return Ok(Some(outcome));
            }
            let sleep = async {
                match blocked.deadline_ms {
                    Some(at) => {
                        tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await
                    }
                    None => std::future::pending().await,
                }
            };
            if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
                rbuf.reserve(READ_CHUNK);
            }
            tokio::select! {
                biased;
                _ = w.wake.notified() => {}
                _ = sleep => end_wait(Outcome::TimedOut),
                _ = &mut *killed => {
                    if meta.killed.load(Relaxed) {
                        return Ok(None);
                    }
                    killed.set(meta.kill.notified());
                }
                r = sock.read_buf(rbuf) => {
                    if r? == 0 {
                        return Ok(None);
                    }
                }
            }
        }
    }
    .await;
    meta.blocked.store(false, Relaxed);
    let outcome = match ended {
        Ok(Some(outcome)) => outcome,
        closing => {
            // Withdrawn before the connection goes, so nothing is served to it.
            end_wait(Outcome::TimedOut);
            return closing.map(|_| false);
        }
    };
    match outcome {
        Outcome::Served(reply) => client.out.buf.extend_from_slice(&reply),
        Outcome::TimedOut | Outcome::Waiting => client.out.null_array(),
        Outcome::Failed(e) => client.out.error(&e),
    }
    if let Some((slot, nanos)) = client.blocked_call.take() {
        client.out.stats.call(slot, nanos);
    }
    if let Some(entry) = client.blocked_slow.take() {
        shared.slowlog.push(entry);
    }
    Ok(true)
}

/// Writes the Pub/Sub messages or MONITOR lines gathered while the client was idle.
async fn write_pushed<'a>(
    sock: &mut TcpStream,
    shared: &Shared,
    meta: &'a ClientMeta,
    client: &mut Client,
    killed: &mut std::pin::Pin<&mut tokio::sync::futures::Notified<'a>>,
) -> io::Result<()> {
    let len = client.out.buf.len();
    shared.counters.net_output_bytes.add(len as u64);
    meta.stats.obl.store(len as u64, Relaxed);
    if !write_unless_killed(sock, &client.out.buf, meta, killed).await? {
        return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "killed"));
    }
    meta.stats.obl.store(0, Relaxed);
    client.out.buf.clear();
    Ok(())
}

/// Writes `buf` whole; false if the connection was killed meanwhile (then the write is
/// abandoned). A wake-up that is not a kill (the cron's read-buffer nudge) leaves the
/// write running. When the socket takes the bytes at once, as it nearly always does,
/// this is one poll of the write.
async fn write_unless_killed<'a>(
    sock: &mut TcpStream,
    buf: &[u8],
    meta: &'a ClientMeta,
    killed: &mut std::pin::Pin<&mut tokio::sync::futures::Notified<'a>>,
) -> io::Result<bool> {
    let mut write = std::pin::pin!(sock.write_all(buf));
    loop {
        tokio::select! {
            biased;
            r = &mut write => {
                r?;
                return Ok(true);
            }
            _ = killed.as_mut() => {
                if meta.killed.load(Relaxed) {
                    return Ok(false);
                }
                killed.set(meta.kill.notified());
            }
        }
    }
}

/// The next Pub/Sub message, or never without subscriptions.
async fn next_push(subs: Option<&mut crate::pubsub::Subscriptions>) -> Option<crate::pubsub::Push> {
    match subs {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// The next MONITOR line, or never when not a monitor.
async fn next_line(mon: Option<&mut crate::monitor::MonitorRx>) -> Option<bytes::Bytes> {
    match mon {
        Some(m) => m.recv().await,
        None => std::future::pending().await,
    }
}

/// Waits until CLIENT PAUSE ends (its time runs out or CLIENT UNPAUSE), or the
/// connection is killed.
async fn wait_pause_end<'a>(
    shared: &Shared,
    meta: &'a ClientMeta,
    killed: &mut std::pin::Pin<&mut tokio::sync::futures::Notified<'a>>,
) {
    /// Counts the connection as blocked while it waits (also when its task is dropped).
    struct Waiting<'p>(&'p std::sync::atomic::AtomicUsize);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Relaxed);
        }
    }
    shared.pause.waiting.fetch_add(1, Relaxed);
    let _waiting = Waiting(&shared.pause.waiting);
    loop {
        let ended = shared.pause.ended.notified();
        let mut ended = std::pin::pin!(ended);
        ended.as_mut().enable();
        let now = now_ms();
        if shared.pause.active(now).is_none() {
            return;
        }
        let left = shared.pause.until_ms.load(Relaxed).saturating_sub(now);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(left)) => {}
            _ = ended => {}
            _ = killed.as_mut() => {
                if meta.killed.load(Relaxed) {
                    return;
                }
                killed.set(meta.kill.notified());
            }
        }
    }
}

/// Publishes what CLIENT LIST shows of this connection (see `ClientStats`).
fn publish_stats(meta: &ClientMeta, client: &Client, rbuf: &Vec<u8>) {
    let s = &meta.stats;
    s.qbuf.store(rbuf.len() as u64, Relaxed);
    s.qbuf_free
        .store((rbuf.capacity() - rbuf.len()) as u64, Relaxed);
    let (multi, multi_mem) = match &client.multi {
        Some(m) => (m.len() as u64 + 1, m.mem() as u64),
        None => (0, 0),
    };
    s.multi_plus1.store(multi, Relaxed);
    s.multi_mem.store(multi_mem, Relaxed);
    let mut f = 0;
    if client.multi.is_some() {
        f |= flag::MULTI;
    }
    if client.monitor.is_some() {
        f |= flag::MONITOR;
    }
    if client.close_after_reply {
        f |= flag::CLOSE_AFTER_REPLY;
    }
    s.flags.store(f, Relaxed);
    s.rbs.store(client.out.buf.capacity() as u64, Relaxed);
    // networking.c getClientMemoryUsage: buffers, the client structure itself, queued
    // transaction and pending output.
    let tot = rbuf.capacity()
        + client.out.buf.capacity()
        + std::mem::size_of::<Client>()
        + std::mem::size_of::<ClientMeta>()
        + multi_mem as usize
        + s.omem.load(Relaxed) as usize;
    s.tot_mem.store(tot as u64, Relaxed);
}
