//! Listening, connections and the periodic server cron.
//!
//! One tokio task per connection. A connection reads whatever is available, runs every
//! complete command in it (pipelining), and writes all replies with one write, so a
//! pipeline of 16 commands costs one read and one write system call, like Redis. The
//! read and write buffers live as long as the connection and are reused.

use crate::commands::{execute, Client};
use crate::config::ServerConfig;
use crate::resp::{Parsed, Parser};
use crate::state::{now_ms, ClientMeta, Shared};
use bytes::{Buf, BytesMut};
use std::io;
use std::net::SocketAddr;
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
/// An idle subscriber's Pub/Sub messages are written in batches of about this size; the
/// rest stay queued (and counted against its output-buffer limit) until the write ends.
const PUSH_BATCH: usize = 64 * 1024;

/// What woke a connection in Pub/Sub mode.
enum Wake {
    Read(usize),
    Push(Option<crate::pubsub::Push>),
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
        let mut listeners = Vec::new();
        let mut port = config.port;
        for addr in &config.bind {
            let l = TcpListener::bind((addr.as_str(), port))
                .await
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("could not bind {addr}:{port}: {e}"))
                })?;
            port = l.local_addr()?.port();
            listeners.push(l);
        }
        let mut metrics_listeners = Vec::new();
        if config.metrics_port > 0 {
            for addr in &config.bind {
                let l = TcpListener::bind((addr.as_str(), config.metrics_port))
                    .await
                    .map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!("could not bind metrics {addr}:{}: {e}", config.metrics_port),
                        )
                    })?;
                metrics_listeners.push(l);
            }
        }
        let shared = Arc::new(Shared::new(config, log_hook));
        shared
            .setup_tenants()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        crate::profiler::start(shared.clone())?;
        *shared.listen_addrs.lock() = listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect();
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
        for l in self.listeners {
            tasks.push(tokio::spawn(accept_loop(l, shared.clone())));
        }
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
    loop {
        let hz = shared.hz.load(Relaxed).max(1);
        tokio::time::sleep(Duration::from_millis(1000 / hz as u64)).await;
        let store_shared = shared.clone();
        // The cycle locks shards one by one; run it off the async workers' hot loop.
        // It holds the gate shared, so a key never expires in the middle of a
        // transaction.
        let _ = tokio::task::spawn_blocking(move || {
            let _hold = store_shared.gate.shared();
            store_shared.store.active_expire_cycle(now_ms())
        })
        .await;
        ticks += 1;
        if ticks.is_multiple_of(hz as u64) {
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

/// Removes the client from the registry when the connection ends, however it ends.
struct Registration {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.shared.clients.lock().remove(&self.id);
    }
}

async fn connection(mut sock: TcpStream, addr: SocketAddr, shared: Arc<Shared>) -> io::Result<()> {
    sock.set_nodelay(true)?;
    let maxclients = shared.maxclients.load(Relaxed);
    let id = shared.next_client_id.fetch_add(1, Relaxed);
    let meta = Arc::new(ClientMeta::new(id, addr, sock.local_addr()?));
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
    if shared.shutdown_requested.load(Relaxed) {
        return Ok(());
    }

    let authenticated = !shared.pass_required.load(Relaxed);
    let mut client = Client::new(meta.clone(), authenticated);
    let result = serve(&mut sock, addr, &shared, &meta, &mut client).await;
    client.disconnect(&shared);
    result
}

/// Reads, runs and answers a connection's commands until it closes or is closed.
async fn serve(
    sock: &mut TcpStream,
    addr: SocketAddr,
    shared: &Arc<Shared>,
    meta: &Arc<ClientMeta>,
    client: &mut Client,
) -> io::Result<()> {
    let id = meta.id;
    let mut parser = Parser::new(shared.proto_max_bulk_len.load(Relaxed) as usize);
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    // One kill notification future for the connection's life: creating one per read
    // would register and unregister a waiter (under Notify's lock) on every request.
    let mut killed = std::pin::pin!(meta.kill.notified());

    loop {
        // Make room for the next read: at least a chunk, more for a big announced bulk.
        let needed = parser.bytes_needed().saturating_sub(rbuf.len());
        let want = needed.clamp(READ_CHUNK, MAX_PRERESERVE.max(READ_CHUNK));
        if rbuf.capacity() - rbuf.len() < want / 4 {
            rbuf.reserve(want);
        }
        let n = match client.pubsub.as_mut() {
            None => tokio::select! {
                biased;
                r = sock.read_buf(&mut rbuf) => r?,
                _ = &mut killed => 0,
            },
            // In Pub/Sub mode also wake for messages, so that they are written while the
            // client is idle; the publisher never waits for this connection.
            Some(subs) => {
                let wake = tokio::select! {
                    biased;
                    r = sock.read_buf(&mut rbuf) => Wake::Read(r?),
                    _ = &mut killed => Wake::Read(0),
                    p = subs.recv() => Wake::Push(p),
                };
                match wake {
                    Wake::Read(n) => n,
                    Wake::Push(p) => {
                        if let Some(p) = p {
                            p.write(&mut client.out);
                        }
                        if let Some(subs) = client.pubsub.as_mut() {
                            subs.drain(&mut client.out, PUSH_BATCH);
                        }
                        shared
                            .counters
                            .net_output_bytes
                            .add(client.out.buf.len() as u64);
                        tokio::select! {
                            r = sock.write_all(&client.out.buf) => r?,
                            _ = &mut killed => return Ok(()),
                        }
                        client.out.buf.clear();
                        continue;
                    }
                }
            }
        };
        if n == 0 || meta.killed.load(Relaxed) {
            return Ok(());
        }
        meta.last_interaction_ms
            .store(meta.created.elapsed().as_millis() as u64, Relaxed);

        parser.set_max_bulk_len(shared.proto_max_bulk_len.load(Relaxed) as usize);
        let now = now_ms();
        if let Some(subs) = client.pubsub.as_mut() {
            // Messages queued before these commands arrived go out before their replies.
            subs.drain(&mut client.out, usize::MAX);
        }
        let mut consumed = 0;
        let mut fatal = None;
        while !client.close_after_reply {
            parser.set_auth_required(client.auth_required(shared));
            match parser.parse(&rbuf[consumed..]) {
                Ok(Parsed::Command(len)) => {
                    let args = parser.args(&rbuf[consumed..]);
                    execute(shared, client, args, now);
                    consumed += len;
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
        rbuf.advance(consumed);

        let counters = &shared.counters;
        counters.net_input_bytes.add(n as u64);
        if client.commands > 0 {
            counters.total_commands_processed.add(client.commands);
            client.commands = 0;
        }
        shared.stats.flush(&mut client.out.stats);
        client.clock = None;
        if !client.out.buf.is_empty() {
            counters.net_output_bytes.add(client.out.buf.len() as u64);
            if client.pubsub.is_some() {
                // A subscriber disconnected for its output-buffer limit may be the one
                // not reading: do not wait for its socket.
                tokio::select! {
                    r = sock.write_all(&client.out.buf) => r?,
                    _ = &mut killed => return Ok(()),
                }
            } else {
                sock.write_all(&client.out.buf).await?;
            }
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
            rbuf = BytesMut::with_capacity(READ_CHUNK);
        }
    }
}
