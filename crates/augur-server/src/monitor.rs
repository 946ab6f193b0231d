//! MONITOR: every command the server runs, as one line per command, to every connection
//! that asked. Mirrors Redis 7.0's replication.c `replicationFeedMonitors` (the line's
//! format) and server.c `call()` (which commands are shown, and when).
//!
//! **Format.** `+<unix seconds>.<microseconds> [<db> <ip:port>] "arg" "arg" ...`, each
//! argument quoted and escaped as sds.c's `sdscatrepr` does; commands a Lua script runs
//! show `[<db> lua]` in place of the address. The line is a simple string in RESP2 and
//! RESP3 alike, as in Redis.
//!
//! **What is shown.** A command is shown once it has run (so that AUTH and HELLO can
//! redact their secrets: `"auth" "(redacted)"`), except EVAL and EVALSHA, shown before
//! the commands their script runs. Commands refused before running (unknown, wrong
//! arity, NOAUTH, OOM, queued inside MULTI) are not shown; queued commands are shown
//! when EXEC runs them, between MULTI and EXEC. Admin commands (CONFIG, CLIENT LIST /
//! KILL / PAUSE, MONITOR, SHUTDOWN, ACL, ...) are never shown.
//!
//! **Tenants.** A MONITOR sees the commands of the tenant (ACL user) it was authenticated
//! as when it ran MONITOR, and no other tenant's; a MONITOR run as the `default` user
//! (the administrator) sees every tenant's commands. Redis has no tenants; this keeps a
//! tenant from reading another tenant's keys and values through MONITOR.
//!
//! **Delivery** is as for Pub/Sub (`crate::pubsub`): the line goes through an unbounded
//! channel to the monitor's connection task, which wakes and writes it even while its
//! client is idle; the command's connection never waits. A monitor too far behind is
//! disconnected at Redis's `client-output-buffer-limit replica 256mb 64mb 60` (monitors
//! are replica-class clients in Redis).

use crate::resp::Args;
use crate::state::{now_ms, ClientMeta};
use augur_store::TenantId;
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

const OBUF_HARD_LIMIT: usize = 256 * 1024 * 1024;
const OBUF_SOFT_LIMIT: usize = 64 * 1024 * 1024;
const OBUF_SOFT_SECONDS: u64 = 60;

/// The monitors of a server (one per server, in [`crate::state::Shared`]).
#[derive(Default)]
pub struct Monitors {
    /// Number of monitors: the only thing the request path reads (one relaxed load).
    count: AtomicUsize,
    sinks: Mutex<Vec<Arc<Sink>>>,
}

/// One monitor's end of its channel, as the feeding side sees it.
struct Sink {
    /// None: the default user, which sees every tenant.
    tenant: Option<TenantId>,
    tx: mpsc::UnboundedSender<Bytes>,
    /// Bytes sent and not yet taken off by the monitor's connection.
    queued: AtomicUsize,
    soft_since_ms: AtomicU64,
    meta: Arc<ClientMeta>,
}

/// Where the command came from: a client, or a script (shown as `lua`).
#[derive(Clone, Copy)]
pub enum Origin<'a> {
    Client(&'a ClientMeta),
    Lua,
}

impl Monitors {
    /// Whether any connection is in MONITOR mode (cheap; checked for every command).
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) != 0
    }

    /// Turns a connection into a monitor of `tenant`'s commands (all tenants for the
    /// default user, tenant 0).
    pub fn register(self: &Arc<Self>, meta: Arc<ClientMeta>, tenant: TenantId) -> MonitorRx {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = Arc::new(Sink {
            tenant: (tenant != 0).then_some(tenant),
            tx,
            queued: AtomicUsize::new(0),
            soft_since_ms: AtomicU64::new(0),
            meta,
        });
        let mut sinks = self.sinks.lock();
        sinks.push(sink.clone());
        self.count.store(sinks.len(), Relaxed);
        MonitorRx {
            monitors: self.clone(),
            sink,
            rx,
        }
    }

    /// Sends one command to every monitor that may see `tenant`'s commands.
    /// `redact(i)` says whether argument `i` is a secret, shown as `(redacted)`.
    pub fn feed(
        &self,
        tenant: TenantId,
        db: u8,
        origin: Origin<'_>,
        args: Args<'_>,
        redact: impl Fn(usize) -> bool,
    ) {
        let sinks: Vec<Arc<Sink>> = self
            .sinks
            .lock()
            .iter()
            .filter(|s| s.tenant.is_none_or(|t| t == tenant))
            .cloned()
            .collect();
        if sinks.is_empty() {
            return;
        }
        let line = Bytes::from(format_line(db, origin, args, redact));
        for s in sinks {
            s.deliver(line.clone());
        }
    }
}

impl Sink {
    fn deliver(&self, line: Bytes) {
        if self.meta.killed.load(Relaxed) {
            return;
        }
        let cost = line.len();
        let backlog = self.queued.fetch_add(cost, Relaxed) + cost;
        self.meta.stats.omem.store(backlog as u64, Relaxed);
        let mut over = backlog > OBUF_HARD_LIMIT;
        if backlog > OBUF_SOFT_LIMIT {
            let now = now_ms();
            match self.soft_since_ms.load(Relaxed) {
                0 => self.soft_since_ms.store(now.max(1), Relaxed),
                since => over |= now.saturating_sub(since) >= OBUF_SOFT_SECONDS * 1000,
            }
        } else if self.soft_since_ms.load(Relaxed) != 0 {
            self.soft_since_ms.store(0, Relaxed);
        }
        if over {
            tracing::warn!(
                "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                self.meta.id,
                self.meta.addr
            );
            self.queued.fetch_sub(cost, Relaxed);
            self.meta.close();
            return;
        }
        let _ = self.tx.send(line);
    }
}

/// A monitor connection's end: dropping it (RESET, disconnect) ends MONITOR mode.
pub struct MonitorRx {
    monitors: Arc<Monitors>,
    sink: Arc<Sink>,
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl MonitorRx {
    fn taken(&self, n: usize) {
        let left = self.sink.queued.fetch_sub(n, Relaxed).saturating_sub(n);
        self.sink.meta.stats.omem.store(left as u64, Relaxed);
    }

    /// Waits for the next line (the connection loop selects on this while idle).
    pub async fn recv(&mut self) -> Option<Bytes> {
        let line = self.rx.recv().await?;
        self.taken(line.len());
        Some(line)
    }

    /// Moves queued lines into `out` until it holds `budget` bytes or none is left.
    pub fn drain(&mut self, out: &mut bytes::BytesMut, budget: usize) {
        while out.len() < budget {
            match self.rx.try_recv() {
                Ok(line) => {
                    self.taken(line.len());
                    out.extend_from_slice(&line);
                }
                Err(_) => break,
            }
        }
    }
}

impl Drop for MonitorRx {
    fn drop(&mut self) {
        let mut sinks = self.monitors.sinks.lock();
        sinks.retain(|s| !Arc::ptr_eq(s, &self.sink));
        self.monitors.count.store(sinks.len(), Relaxed);
        self.sink.meta.stats.omem.store(0, Relaxed);
    }
}

/// One MONITOR line, as replicationFeedMonitors writes it.
fn format_line(
    db: u8,
    origin: Origin<'_>,
    args: Args<'_>,
    redact: impl Fn(usize) -> bool,
) -> Vec<u8> {
    use std::io::Write as _;
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut v = Vec::with_capacity(64 + args.iter().map(|a| a.len() + 3).sum::<usize>());
    let _ = write!(v, "+{}.{:06} ", t.as_secs(), t.subsec_micros());
    let _ = match origin {
        Origin::Lua => write!(v, "[{db} lua] "),
        Origin::Client(m) => write!(v, "[{db} {}] ", m.addr),
    };
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            v.push(b' ');
        }
        if redact(i) {
            v.extend_from_slice(b"\"(redacted)\"");
        } else {
            cat_repr(&mut v, a);
        }
    }
    v.extend_from_slice(b"\r\n");
    v
}

/// sds.c `sdscatrepr`: a quoted string with `\\ \" \n \r \t \a \b` escaped and other
/// non-printable bytes as `\xHH`.
pub fn cat_repr(v: &mut Vec<u8>, s: &[u8]) {
    v.push(b'"');
    for &b in s {
        match b {
            b'\\' | b'"' => {
                v.push(b'\\');
                v.push(b);
            }
            b'\n' => v.extend_from_slice(b"\\n"),
            b'\r' => v.extend_from_slice(b"\\r"),
            b'\t' => v.extend_from_slice(b"\\t"),
            7 => v.extend_from_slice(b"\\a"),
            8 => v.extend_from_slice(b"\\b"),
            0x20..=0x7e => v.push(b),
            _ => v.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    v.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_escapes_like_sdscatrepr() {
        let mut v = Vec::new();
        cat_repr(&mut v, b"a\"b\\c\n\r\t\x07\x08\x00\xff ");
        assert_eq!(v, b"\"a\\\"b\\\\c\\n\\r\\t\\a\\b\\x00\\xff \"".to_vec());
    }
}
