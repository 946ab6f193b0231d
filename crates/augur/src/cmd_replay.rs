//! `augur replay`: replay cache traces against a running Redis-protocol server.
//!
//! Every trace request is a look-aside cache access: `GET key`; on a miss (nil) the
//! client waits the group's *miss penalty* (standing in for the backend fetch) and
//! then `SET key value` with a value of the request's size. This is the methodology of
//! the kRedis paper (§6.1) and of DESIGN.md "Hit ratio / latency of a policy".
//! Requests whose trace op is `set` are sent as `SET`, `delete` as `DEL`.
//!
//! # Groups (tenants)
//!
//! Each *group* replays one trace, with its own credentials, miss penalty and
//! connections; all groups run concurrently. Groups are given as
//!
//! * positional `TRACE` arguments: one group each, using the top-level `--auth`,
//!   `--miss-penalty`, `--connections`, `--key-prefix`, `--limit`;
//! * repeated `--group trace=PATH[,auth=USER:PASS|PASS][,penalty=DUR][,connections=N]
//!   [,prefix=STR][,limit=N][,name=NAME]`: fields not given fall back to the
//!   top-level options. (Paths containing commas cannot be used in `--group`.)
//!
//! Example: `augur replay --addr 127.0.0.1:6379 --group trace=a.zst,auth=t1:pw,penalty=100us
//! --group trace=b.zst,auth=t2:pw,penalty=1ms`.
//!
//! # Wire format
//!
//! Keys are `<prefix><id>` with the decimal object id and prefix `k:` by default
//! (e.g. `k:12345`). Values are deterministic: byte `i` is `b'a' + i % 26`, the length
//! is the request size, capped by `--value-size-cap`. The client speaks RESP2 directly
//! over a tokio `TcpStream` (one request in flight per connection, exactly what the
//! measurement needs) instead of the `redis` crate, whose multiplexer adds a channel
//! hop per command to every latency sample.
//!
//! # Ordering and latency
//!
//! A group's requests are partitioned over its connections by a hash of the key, so
//! all requests for one key run in trace order on one connection: a key's GET can
//! never overtake the SET that filled it, and replaying a trace into a large enough
//! cache yields exactly `requests - distinct objects` hits.
//!
//! Access latency = GET latency, plus on a miss the nominal miss penalty and the SET
//! latency. The wait itself is real (the connection is held, as it would be by a
//! backend fetch); it is done by a dedicated timer thread because tokio timers have
//! 1 ms granularity, which would turn a 200 µs penalty into 1-2 ms. The timer's
//! overshoot (tens of µs) slows the replay slightly but is not charged to latency.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use augur_trace::{Op, Request, TraceFormat};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// Requests per batch sent from a group's trace reader to a connection task.
const BATCH: usize = 512;
/// Batches buffered per connection: enough to hide reader jitter, small enough to
/// keep memory bounded on multi-gigabyte traces.
const BATCHES_IN_FLIGHT: usize = 8;
/// Largest latency the histograms hold (1 hour, in ns); larger samples saturate.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Groups: each positional TRACE is one group using the top-level options; \
    --group 'name=t1,trace=PATH,user=t1,pass=pw,penalty=200us,connections=2,prefix=t1:,limit=500000' \
    adds a group (fields: trace, name, user, pass, auth, penalty, connections, prefix, limit, \
    value-size, value-size-cap, loop, tenant, split, rate) whose missing fields default to the \
    top-level options. `split=I/N` keeps the keys of the trace (or of its limit prefix) whose \
    hash is I mod N: N groups with split=0/N .. N-1/N divide one trace between N tenants, as \
    the kRedis paper's 15-tenant study divides a trace by client id. All groups run concurrently."
)]
pub struct Args {
    /// Trace files to replay, one group (tenant) each.
    pub traces: Vec<PathBuf>,
    /// Additional groups: `trace=PATH,name=..,user=..,pass=..,penalty=..,connections=..,
    /// prefix=..,limit=..,value-size=..,value-size-cap=..,loop=..,tenant=..,split=I/N,rate=..`.
    #[arg(long = "group", value_name = "SPEC")]
    pub groups: Vec<GroupSpec>,
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub addr: String,
    /// Credentials: `USER:PASS` sends `AUTH USER PASS`, `PASS` alone sends `AUTH PASS`.
    #[arg(long)]
    pub auth: Option<String>,
    /// Time to wait on a miss before the SET (e.g. `200us`, `1.5ms`, `0`).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub miss_penalty: Duration,
    /// Connections per group.
    #[arg(long, default_value_t = 4)]
    pub connections: usize,
    /// Replay at most this many requests of each trace (a prefix of it).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Stop every group after this much wall time (e.g. `30s`); requests queued at the
    /// deadline are dropped, and groups that were cut report `complete: false`.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Start each trace (or its `--limit` prefix) over when it ends, until `--duration`
    /// (the paper's tenants replay their workload until the server is stopped).
    #[arg(long = "loop", requires = "duration")]
    pub looped: bool,
    /// Requests in flight per connection (like redis-benchmark's `-P`): each
    /// connection sends up to this many consecutive requests of distinct keys at once,
    /// reads the replies, then fills the window's misses with one pipelined batch of
    /// SETs (after one miss penalty). A window ends early at a key it already holds, so
    /// a key's requests still run in trace order and hit counts are exactly those of
    /// `--pipeline 1`. Every request of a window is charged the window's round trip
    /// (plus the penalty and the fill's round trip if it missed).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub pipeline: u32,
    /// Open loop: offer each group this many requests per second, whatever the server's
    /// speed. Each connection sends its share on a fixed schedule (request i at
    /// i x connections / RATE seconds); a request sent late because its connection was
    /// still busy counts its latency from when it was due, so time spent queued behind
    /// a slow one (a miss's penalty) is charged to it instead of slowing the group down
    /// (no coordinated omission).
    /// Without it the replay is closed-loop: a connection sends its next request when
    /// the previous one is done, so a group whose misses are slow offers fewer
    /// requests. Needs `--pipeline 1`.
    #[arg(long, value_name = "REQ_PER_SEC", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Size of every SET value in bytes, instead of the request's size.
    #[arg(long)]
    pub value_size: Option<u32>,
    /// Cap on the value size of SETs, in bytes (the trace's size is used up to it).
    #[arg(long)]
    pub value_size_cap: Option<u32>,
    /// Cut every SET value from this text instead of `a..z` repeating: a file, or a
    /// directory whose files are read in name order and concatenated (e.g.
    /// `/usr/share/iso-codes/json`). A key's value is the slice of its size starting at
    /// a position fixed by the key's hash, so values are realistic (they compress like
    /// the data does, not like a repeated pattern), distinct and reproducible.
    #[arg(long, value_name = "PATH")]
    pub value_corpus: Option<PathBuf>,
    /// Prefix of the key strings (`<prefix><id>`).
    #[arg(long, default_value = "k:")]
    pub key_prefix: String,
    /// Trace format for all traces (`oracle`, `csv:SPEC`, `txt:SPEC`); default: from
    /// each file name.
    #[arg(long)]
    pub format: Option<TraceFormat>,
    /// Write the results as JSON: to stdout instead of the table (`--json`), or to
    /// FILE (must end in `.json`) besides the table.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Every SECS seconds, send `TENANT INFO <user>` for each group's AUTH user on a
    /// side connection and record the reply in the JSON (`tenant_polls`). Error
    /// replies (e.g. from a server without tenants) are counted and otherwise ignored.
    #[arg(long, value_name = "SECS")]
    pub poll_tenants: Option<f64>,
    /// Credentials of the polling connection (`USER:PASS` or `PASS`); default: none.
    #[arg(long)]
    pub poll_auth: Option<String>,
    /// Never show the progress bar (it is already hidden when stdout is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// One `--group` value: everything optional except the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupSpec {
    pub trace: PathBuf,
    /// `auth=USER:PASS` or `auth=PASS`.
    pub auth: Option<String>,
    pub user: Option<String>,
    pub pass: Option<String>,
    pub penalty: Option<Duration>,
    pub connections: Option<usize>,
    pub prefix: Option<String>,
    pub limit: Option<u64>,
    pub name: Option<String>,
    pub value_size: Option<u32>,
    pub value_size_cap: Option<u32>,
    pub looped: Option<bool>,
    /// Tenant name polled with `TENANT INFO` (default: the AUTH user).
    pub tenant: Option<String>,
    /// `split=I/N`: only the keys whose hash is I mod N.
    pub split: Option<(u64, u64)>,
    /// `rate=N`: the group's open-loop request rate (see `--rate`).
    pub rate: Option<f64>,
}

/// A `--rate` / `rate=` value: requests per second, finite and above 0.
fn parse_rate(v: &str) -> Result<f64> {
    match v.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => bail!("rate={v:?} must be a number of requests per second above 0"),
    }
}

fn parse_split(v: &str) -> Result<(u64, u64)> {
    let parsed = v
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => Ok((i, n)),
        _ => bail!("split={v:?} must be I/N with 0 <= I < N"),
    }
}

fn parse_bool(v: &str) -> Result<bool> {
    match v.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => bail!("{v:?} is not a boolean (true/false, 1/0, yes/no, on/off)"),
    }
}

impl FromStr for GroupSpec {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let mut g = GroupSpec::default();
        let mut has_trace = false;
        for item in s.split(',').filter(|i| !i.trim().is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| anyhow!("group field {item:?} must be NAME=VALUE"))?;
            let num = |what: &str| format!("{what}={v:?}");
            match k.trim().replace('_', "-").as_str() {
                "trace" => {
                    g.trace = PathBuf::from(v);
                    has_trace = true;
                }
                "auth" => g.auth = Some(v.to_owned()),
                "user" => g.user = Some(v.to_owned()),
                "pass" | "password" => g.pass = Some(v.to_owned()),
                "penalty" | "miss-penalty" => g.penalty = Some(parse_duration(v)?),
                "connections" | "conns" => {
                    g.connections = Some(v.parse().with_context(|| num("connections"))?)
                }
                "prefix" | "key-prefix" => g.prefix = Some(v.to_owned()),
                "limit" => g.limit = Some(v.parse().with_context(|| num("limit"))?),
                "name" => g.name = Some(v.to_owned()),
                "value-size" => g.value_size = Some(v.parse().with_context(|| num("value-size"))?),
                "value-size-cap" | "cap" => {
                    g.value_size_cap = Some(v.parse().with_context(|| num("value-size-cap"))?)
                }
                "loop" => g.looped = Some(parse_bool(v)?),
                "tenant" => g.tenant = Some(v.to_owned()),
                "split" => g.split = Some(parse_split(v)?),
                "rate" => g.rate = Some(parse_rate(v)?),
                other => bail!(
                    "unknown group field {other:?} (trace, name, user, pass, auth, penalty, \
                     connections, prefix, limit, value-size, value-size-cap, loop, tenant, \
                     split, rate)"
                ),
            }
        }
        if !has_trace {
            bail!("group {s:?} has no trace=PATH");
        }
        if g.auth.is_some() && (g.user.is_some() || g.pass.is_some()) {
            bail!("group {s:?}: give auth=USER:PASS or user=/pass=, not both");
        }
        if g.user.is_some() && g.pass.is_none() {
            bail!("group {s:?}: user= needs pass= (AUTH USER PASS)");
        }
        Ok(g)
    }
}

/// Parses a duration with a unit: `ns`, `us`/`µs`, `ms`, `s` (decimals allowed);
/// a bare `0` is zero. A unit is required otherwise, because "200" is ambiguous.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().with_context(|| format!("duration {s:?}"))?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "" => bail!("duration {s:?} needs a unit (ns, us, ms, s)"),
        u => bail!("unknown duration unit {u:?} in {s:?}"),
    };
    let secs = v * scale;
    if !secs.is_finite() || !(0.0..1e9).contains(&secs) {
        bail!("duration {s:?} out of range");
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Credentials: `AUTH user pass`, or `AUTH pass` (the default user) without a user.
#[derive(Clone, Debug, PartialEq)]
struct Auth {
    user: Option<String>,
    pass: String,
}

impl Auth {
    /// `USER:PASS` (split at the first colon) or `PASS`.
    fn parse(s: &str) -> Auth {
        match s.split_once(':') {
            Some((user, pass)) => Auth {
                user: Some(user.to_owned()),
                pass: pass.to_owned(),
            },
            None => Auth {
                user: None,
                pass: s.to_owned(),
            },
        }
    }

    fn args(&self) -> Vec<&str> {
        match &self.user {
            Some(u) => vec![u, &self.pass],
            None => vec![&self.pass],
        }
    }
}

/// A fully resolved group.
#[derive(Clone, Debug)]
struct Group {
    /// `--value-corpus`'s bytes, if given.
    corpus: Option<Arc<Vec<u8>>>,
    name: String,
    trace: PathBuf,
    format: TraceFormat,
    auth: Option<Auth>,
    penalty: Duration,
    connections: usize,
    /// Requests in flight per connection (`--pipeline`).
    pipeline: usize,
    prefix: String,
    limit: Option<u64>,
    value_size: Option<u32>,
    value_size_cap: Option<u32>,
    looped: bool,
    /// Polled with `TENANT INFO` (the AUTH user unless given).
    tenant: Option<String>,
    split: Option<(u64, u64)>,
    /// Open-loop requests per second (`--rate`), or closed loop.
    rate: Option<f64>,
}

fn resolve_groups(args: &Args) -> Result<Vec<Group>> {
    let corpus = args
        .value_corpus
        .as_deref()
        .map(load_corpus)
        .transpose()?
        .map(Arc::new);
    let mut specs: Vec<GroupSpec> = args
        .traces
        .iter()
        .map(|t| GroupSpec {
            trace: t.clone(),
            ..GroupSpec::default()
        })
        .collect();
    specs.extend(args.groups.iter().cloned());
    if specs.is_empty() {
        bail!("nothing to replay: give a TRACE or --group trace=PATH");
    }
    let mut groups: Vec<Group> = Vec::with_capacity(specs.len());
    for (i, g) in specs.into_iter().enumerate() {
        let format = match &args.format {
            Some(f) => f.clone(),
            None => TraceFormat::detect(&g.trace)?,
        };
        let connections = g.connections.unwrap_or(args.connections);
        if connections == 0 {
            bail!("a group needs at least one connection");
        }
        let name = g.name.clone().unwrap_or_else(|| {
            let stem = g
                .trace
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = stem.split('.').next().unwrap_or("").to_owned();
            if stem.is_empty() {
                format!("group{i}")
            } else {
                stem
            }
        });
        let auth = match (&g.auth, &g.pass) {
            (Some(a), _) => Some(Auth::parse(a)),
            (None, Some(pass)) => Some(Auth {
                user: g.user.clone(),
                pass: pass.clone(),
            }),
            (None, None) => args.auth.as_deref().map(Auth::parse),
        };
        let looped = g.looped.unwrap_or(args.looped);
        if looped && args.duration.is_none() {
            bail!("group {name}: loop needs --duration (it would never end)");
        }
        let tenant = g
            .tenant
            .or_else(|| auth.as_ref().and_then(|a| a.user.clone()));
        let rate = g.rate.or(args.rate);
        if rate.is_some() && args.pipeline > 1 {
            bail!("group {name}: an open-loop rate needs --pipeline 1");
        }
        groups.push(Group {
            name,
            trace: g.trace,
            format,
            auth,
            penalty: g.penalty.unwrap_or(args.miss_penalty),
            connections,
            pipeline: args.pipeline as usize,
            prefix: g.prefix.unwrap_or_else(|| args.key_prefix.clone()),
            limit: g.limit.or(args.limit),
            value_size: g.value_size.or(args.value_size),
            value_size_cap: g.value_size_cap.or(args.value_size_cap),
            corpus: corpus.clone(),
            looped,
            tenant,
            split: g.split,
            rate,
        });
    }
    // Group names key the JSON and the table: make duplicates distinct.
    for i in 1..groups.len() {
        if groups[..i].iter().any(|g| g.name == groups[i].name) {
            groups[i].name = format!("{}#{i}", groups[i].name);
        }
    }
    Ok(groups)
}

// ---------------------------------------------------------------------------------
// Precise waits
// ---------------------------------------------------------------------------------

/// A thread that completes waits at their deadlines with OS-timer precision (futex
/// timeouts, typically 50-100 µs), shared by every connection task. Tokio's timer
/// wheel has 1 ms resolution, too coarse for sub-millisecond miss penalties, and
/// spinning would steal CPU from the server under test on a small machine.
#[derive(Clone)]
struct Waiter {
    tx: std::sync::mpsc::Sender<(Instant, oneshot::Sender<()>)>,
}

impl Waiter {
    fn start() -> Waiter {
        let (tx, rx) = std::sync::mpsc::channel::<(Instant, oneshot::Sender<()>)>();
        std::thread::Builder::new()
            .name("replay-timer".into())
            .spawn(move || {
                // Min-heap of deadlines; the sequence number breaks ties (senders are not Ord).
                let mut heap: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
                let mut pending = std::collections::HashMap::new();
                let mut seq = 0u64;
                loop {
                    let now = Instant::now();
                    while let Some(&Reverse((t, id))) = heap.peek() {
                        if t > now {
                            break;
                        }
                        heap.pop();
                        if let Some(done) = pending.remove(&id) {
                            let _ = oneshot::Sender::send(done, ());
                        }
                    }
                    let msg = match heap.peek() {
                        Some(&Reverse((t, _))) => {
                            match rx.recv_timeout(t.saturating_duration_since(now)) {
                                Ok(m) => Some(m),
                                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
                                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                            }
                        }
                        None => match rx.recv() {
                            Ok(m) => Some(m),
                            Err(_) => return,
                        },
                    };
                    if let Some((t, done)) = msg {
                        heap.push(Reverse((t, seq)));
                        pending.insert(seq, done);
                        seq += 1;
                    }
                }
            })
            .expect("spawning the replay timer thread");
        Waiter { tx }
    }

    async fn wait(&self, d: Duration) {
        if d.is_zero() {
            return;
        }
        let (done, rx) = oneshot::channel();
        if self.tx.send((Instant::now() + d, done)).is_err() {
            // The timer thread is gone (it never exits while senders live); fall back
            // to the coarse tokio timer rather than skipping the penalty.
            tokio::time::sleep(d).await;
            return;
        }
        let _ = rx.await;
    }
}

// ---------------------------------------------------------------------------------
// RESP client
// ---------------------------------------------------------------------------------

/// The top-level kind of a RESP2 reply; payloads the replay does not need are skipped.
#[derive(Debug, PartialEq)]
enum Reply {
    Nil,
    Bulk,
    Simple,
    Integer,
    Array,
    Error(String),
}

/// A whole RESP2 reply (only the tenant poller reads payloads).
#[derive(Debug, PartialEq)]
enum Value {
    Nil,
    Str(String),
    Int(i64),
    Error(String),
    Array(Vec<Value>),
}

/// One connection: buffered reads, one write syscall per command.
struct Conn {
    stream: BufReader<TcpStream>,
    out: Vec<u8>,
    line: Vec<u8>,
    /// Value bytes (`a..z` repeating), grown on demand to the largest value sent.
    pattern: Vec<u8>,
}

impl Conn {
    async fn connect(addr: &str) -> Result<Conn> {
        let tcp = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        tcp.set_nodelay(true)?;
        Ok(Conn {
            stream: BufReader::with_capacity(64 * 1024, tcp),
            out: Vec::with_capacity(4096),
            line: Vec::new(),
            pattern: Vec::new(),
        })
    }

    fn begin(&mut self, nargs: usize) {
        self.out.clear();
        self.header(nargs);
    }

    /// Starts another command after those already in the output buffer (pipelining).
    fn header(&mut self, nargs: usize) {
        let _ = write!(self.out, "*{nargs}\r\n");
    }

    fn arg(&mut self, a: &[u8]) {
        let _ = write!(self.out, "${}\r\n", a.len());
        self.out.extend_from_slice(a);
        self.out.extend_from_slice(b"\r\n");
    }

    fn key_arg(&mut self, prefix: &str, id: u64) {
        let mut digits = [0u8; 20];
        let mut n = id;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let len = prefix.len() + digits.len() - i;
        let _ = write!(self.out, "${len}\r\n");
        self.out.extend_from_slice(prefix.as_bytes());
        self.out.extend_from_slice(&digits[i..]);
        self.out.extend_from_slice(b"\r\n");
    }

    /// Appends a value argument of `len` deterministic bytes (`a..z` repeating).
    fn value_arg(&mut self, len: usize) {
        let _ = write!(self.out, "${len}\r\n");
        if self.pattern.len() < len {
            self.pattern = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        }
        self.out.extend_from_slice(&self.pattern[..len]);
        self.out.extend_from_slice(b"\r\n");
    }

    /// Appends a value argument of `len` bytes cut from `corpus` at a position fixed by
    /// `key` (wrapping around a corpus shorter than the value).
    fn corpus_value_arg(&mut self, corpus: &[u8], key: u64, len: usize) {
        let _ = write!(self.out, "${len}\r\n");
        let mut at = (augur_store::mix64(key) % corpus.len() as u64) as usize;
        let mut left = len;
        while left > 0 {
            let n = left.min(corpus.len() - at);
            self.out.extend_from_slice(&corpus[at..at + n]);
            left -= n;
            at = 0;
        }
        self.out.extend_from_slice(b"\r\n");
    }

    async fn send(&mut self) -> Result<()> {
        self.stream
            .get_mut()
            .write_all(&self.out)
            .await
            .context("writing to the server")
    }

    /// Reads one header line (without CRLF) into `self.line`.
    async fn read_line(&mut self) -> Result<()> {
        self.line.clear();
        let n = self
            .stream
            .read_until(b'\n', &mut self.line)
            .await
            .context("reading from the server")?;
        if n == 0 {
            bail!("server closed the connection");
        }
        if !self.line.ends_with(b"\r\n") {
            bail!(
                "malformed RESP line {:?}",
                String::from_utf8_lossy(&self.line)
            );
        }
        self.line.truncate(self.line.len() - 2);
        Ok(())
    }

    fn line_int(&self) -> Result<i64> {
        std::str::from_utf8(&self.line[1..])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                anyhow!(
                    "malformed RESP length {:?}",
                    String::from_utf8_lossy(&self.line)
                )
            })
    }

    /// Discards `n` payload bytes plus the trailing CRLF.
    async fn skip(&mut self, n: usize) -> Result<()> {
        let mut left = n + 2;
        while left > 0 {
            let buf = self
                .stream
                .fill_buf()
                .await
                .context("reading from the server")?;
            if buf.is_empty() {
                bail!("server closed the connection mid-reply");
            }
            let k = buf.len().min(left);
            self.stream.consume(k);
            left -= k;
        }
        Ok(())
    }

    /// Reads one complete reply, returning its top-level kind. Nested array elements
    /// are read iteratively and discarded.
    async fn reply(&mut self) -> Result<Reply> {
        let mut top = None;
        let mut pending = 1u64;
        while pending > 0 {
            pending -= 1;
            self.read_line().await?;
            let kind = match self.line.first() {
                Some(b'+') => Reply::Simple,
                Some(b'-') => Reply::Error(String::from_utf8_lossy(&self.line[1..]).into_owned()),
                Some(b':') => Reply::Integer,
                Some(b'_') => Reply::Nil,
                Some(b'$') => {
                    let n = self.line_int()?;
                    if n < 0 {
                        Reply::Nil
                    } else {
                        self.skip(n as usize).await?;
                        Reply::Bulk
                    }
                }
                Some(b'*') => {
                    let n = self.line_int()?;
                    if n < 0 {
                        Reply::Nil
                    } else {
                        pending += n as u64;
                        Reply::Array
                    }
                }
                _ => bail!(
                    "unexpected RESP reply {:?}",
                    String::from_utf8_lossy(&self.line)
                ),
            };
            top.get_or_insert(kind);
        }
        Ok(top.unwrap_or(Reply::Nil))
    }

    /// Reads one complete reply with its payload (for the tenant poller; the replay
    /// itself uses [`Conn::reply`], which skips payloads).
    fn value(
        &mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value>> + Send + '_>> {
        Box::pin(async move {
            self.read_line().await?;
            let text = |l: &[u8]| String::from_utf8_lossy(&l[1..]).into_owned();
            Ok(match self.line.first() {
                Some(b'+') => Value::Str(text(&self.line)),
                Some(b'-') => Value::Error(text(&self.line)),
                Some(b':') => Value::Int(self.line_int()?),
                Some(b'_') => Value::Nil,
                Some(b'$') => {
                    let n = self.line_int()?;
                    if n < 0 {
                        Value::Nil
                    } else {
                        let mut buf = vec![0u8; n as usize + 2];
                        self.stream
                            .read_exact(&mut buf)
                            .await
                            .context("reading from the server")?;
                        buf.truncate(n as usize);
                        Value::Str(String::from_utf8_lossy(&buf).into_owned())
                    }
                }
                Some(b'*') => {
                    let n = self.line_int()?;
                    if n < 0 {
                        Value::Nil
                    } else {
                        let mut items = Vec::with_capacity(n.min(1024) as usize);
                        for _ in 0..n {
                            items.push(self.value().await?);
                        }
                        Value::Array(items)
                    }
                }
                _ => bail!(
                    "unexpected RESP reply {:?}",
                    String::from_utf8_lossy(&self.line)
                ),
            })
        })
    }

    async fn auth(&mut self, auth: &Auth) -> Result<()> {
        let parts = auth.args();
        self.begin(parts.len() + 1);
        self.arg(b"AUTH");
        for p in parts {
            self.arg(p.as_bytes());
        }
        self.send().await?;
        match self.reply().await? {
            Reply::Error(e) => bail!("AUTH failed: {e}"),
            _ => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------------

/// Counters and latencies of one connection (merged per group, and over all groups).
struct Stats {
    requests: u64,
    gets: u64,
    hits: u64,
    fills: u64,
    sets: u64,
    deletes: u64,
    errors: u64,
    first_error: Option<String>,
    latency: Histogram<u64>,
    /// The connection stopped at the `--duration` deadline with requests still queued.
    cut: bool,
    /// Open loop: requests sent 1 ms or more after they were due, and the largest delay.
    late: u64,
    max_lag: Duration,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            requests: 0,
            gets: 0,
            hits: 0,
            fills: 0,
            sets: 0,
            deletes: 0,
            errors: 0,
            first_error: None,
            latency: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
                .expect("valid histogram bounds"),
            cut: false,
            late: 0,
            max_lag: Duration::ZERO,
        }
    }

    fn merge(&mut self, o: &Stats) -> Result<()> {
        self.requests += o.requests;
        self.gets += o.gets;
        self.hits += o.hits;
        self.fills += o.fills;
        self.sets += o.sets;
        self.deletes += o.deletes;
        self.errors += o.errors;
        self.cut |= o.cut;
        self.late += o.late;
        self.max_lag = self.max_lag.max(o.max_lag);
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
        self.latency
            .add(&o.latency)
            .map_err(|e| anyhow!("merging histograms: {e}"))
    }

    fn error(&mut self, e: String) {
        self.errors += 1;
        self.first_error.get_or_insert(e);
    }
}

/// `--value-corpus`: the file's bytes, or a directory's files in name order.
fn load_corpus(path: &std::path::Path) -> Result<Vec<u8>> {
    let mut files = Vec::new();
    if path.is_dir() {
        for e in std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
            let p = e?.path();
            if p.is_file() {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut out = Vec::new();
    for f in &files {
        out.extend(std::fs::read(f).with_context(|| format!("reading {}", f.display()))?);
    }
    if out.is_empty() {
        bail!("value corpus {} is empty", path.display());
    }
    Ok(out)
}

/// Settings a connection task needs.
struct ConnCfg {
    corpus: Option<Arc<Vec<u8>>>,
    prefix: String,
    penalty: Duration,
    value_size: Option<u32>,
    cap: Option<u32>,
    waiter: Waiter,
    progress: Arc<AtomicU64>,
    /// Set at the `--duration` deadline.
    deadline: Arc<AtomicBool>,
    /// Open loop: time between this connection's requests (connections / rate).
    interval: Option<Duration>,
}

/// An open-loop connection's timetable (`--rate`): request i is due `i x interval` after
/// the first.
struct Schedule {
    interval: Duration,
    /// When the last request was due (None before the first).
    due: Option<Instant>,
}

impl Schedule {
    fn new(interval: Duration) -> Schedule {
        Schedule {
            interval,
            due: None,
        }
    }

    /// Waits until the next request is due and returns when its latency clock starts.
    /// A connection behind schedule (still busy with earlier requests when this one
    /// fell due) sends at once and counts from the due time: that wait is the
    /// server's doing, and is counted in `st.late` (1 ms or more) and `st.max_lag`.
    /// A connection ahead of schedule sleeps and counts from when it wakes, so the
    /// timer's own lateness (tens of µs) is not charged to the server.
    async fn next(&mut self, waiter: &Waiter, st: &mut Stats) -> Instant {
        let at = self.due.map_or_else(Instant::now, |d| d + self.interval);
        self.due = Some(at);
        let now = Instant::now();
        if at > now {
            waiter.wait(at - now).await;
            return Instant::now();
        }
        let lag = now - at;
        if lag >= Duration::from_millis(1) {
            st.late += 1;
        }
        st.max_lag = st.max_lag.max(lag);
        at
    }
}

/// Sends a `SET` of `size` bytes (or the group's fixed size, capped) and returns the
/// server's error reply, if any.
async fn set(conn: &mut Conn, cfg: &ConnCfg, key: u64, size: u32) -> Result<Option<String>> {
    conn.out.clear();
    push_set(conn, cfg, key, size);
    conn.send().await?;
    Ok(match conn.reply().await? {
        Reply::Error(e) => Some(e),
        _ => None,
    })
}

/// Appends a `SET` of `size` bytes (or the group's fixed size, capped) to the output.
fn push_set(conn: &mut Conn, cfg: &ConnCfg, key: u64, size: u32) {
    let size = cfg.value_size.unwrap_or(size);
    let len = cfg.cap.map_or(size, |c| size.min(c)) as usize;
    conn.header(3);
    conn.arg(b"SET");
    conn.key_arg(&cfg.prefix, key);
    match &cfg.corpus {
        Some(c) => conn.corpus_value_arg(c, key, len),
        None => conn.value_arg(len),
    }
}

/// [`run_conn`] with up to `depth` requests in flight (`--pipeline`): windows of
/// consecutive requests with distinct keys, then one batch filling the window's misses.
async fn run_conn_pipelined(
    mut conn: Conn,
    cfg: ConnCfg,
    mut rx: mpsc::Receiver<Vec<Request>>,
    depth: usize,
) -> Result<Stats> {
    let mut st = Stats::new();
    let mut keys = std::collections::HashSet::new();
    let mut missed: Vec<bool> = Vec::with_capacity(depth);
    'batches: while let Some(batch) = rx.recv().await {
        let mut i = 0;
        while i < batch.len() {
            if cfg.deadline.load(Ordering::Relaxed) {
                cfg.progress.fetch_add(i as u64, Ordering::Relaxed);
                st.cut = true;
                break 'batches;
            }
            keys.clear();
            let mut j = i;
            while j < batch.len() && j - i < depth && keys.insert(batch[j].key) {
                j += 1;
            }
            let window = &batch[i..j];
            conn.out.clear();
            for r in window {
                match r.op {
                    Op::Get | Op::Delete => {
                        conn.header(2);
                        conn.arg(if r.op == Op::Get { b"GET" } else { b"DEL" });
                        conn.key_arg(&cfg.prefix, r.key);
                    }
                    Op::Set => push_set(&mut conn, &cfg, r.key, r.size),
                }
            }
            let start = Instant::now();
            conn.send().await?;
            missed.clear();
            for r in window {
                let reply = conn.reply().await?;
                let mut miss = false;
                match r.op {
                    Op::Get => {
                        st.gets += 1;
                        match reply {
                            Reply::Nil => miss = true,
                            Reply::Error(e) => st.error(format!("GET: {e}")),
                            _ => st.hits += 1,
                        }
                    }
                    Op::Set => {
                        st.sets += 1;
                        if let Reply::Error(e) = reply {
                            st.error(format!("SET: {e}"));
                        }
                    }
                    Op::Delete => {
                        st.deletes += 1;
                        if let Reply::Error(e) = reply {
                            st.error(format!("DEL: {e}"));
                        }
                    }
                }
                missed.push(miss);
            }
            let round_trip = start.elapsed().as_nanos() as u64;
            let misses = missed.iter().filter(|&&m| m).count();
            let mut fill_ns = 0;
            if misses > 0 {
                cfg.waiter.wait(cfg.penalty).await;
                let fill_start = Instant::now();
                conn.out.clear();
                for (r, _) in window.iter().zip(&missed).filter(|(_, &m)| m) {
                    push_set(&mut conn, &cfg, r.key, r.size);
                }
                conn.send().await?;
                for _ in 0..misses {
                    if let Reply::Error(e) = conn.reply().await? {
                        st.error(format!("SET: {e}"));
                    }
                }
                st.fills += misses as u64;
                fill_ns = cfg.penalty.as_nanos() as u64 + fill_start.elapsed().as_nanos() as u64;
            }
            for &m in &missed {
                let nanos = if m { round_trip + fill_ns } else { round_trip };
                st.requests += 1;
                st.latency.saturating_record(nanos.max(1));
            }
            i = j;
        }
        cfg.progress
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
    Ok(st)
}

/// One connection's share of a group: requests arrive in trace order per key.
async fn run_conn(
    mut conn: Conn,
    cfg: ConnCfg,
    mut rx: mpsc::Receiver<Vec<Request>>,
) -> Result<Stats> {
    let mut st = Stats::new();
    let mut schedule = cfg.interval.map(Schedule::new);
    'batches: while let Some(batch) = rx.recv().await {
        for (done, r) in batch.iter().enumerate() {
            if cfg.deadline.load(Ordering::Relaxed) {
                cfg.progress.fetch_add(done as u64, Ordering::Relaxed);
                st.cut = true;
                break 'batches;
            }
            let start = match schedule.as_mut() {
                None => Instant::now(),
                Some(s) => s.next(&cfg.waiter, &mut st).await,
            };
            let nanos = match r.op {
                Op::Get => {
                    st.gets += 1;
                    conn.begin(2);
                    conn.arg(b"GET");
                    conn.key_arg(&cfg.prefix, r.key);
                    conn.send().await?;
                    match conn.reply().await? {
                        Reply::Nil => {
                            let get_ns = start.elapsed().as_nanos() as u64;
                            cfg.waiter.wait(cfg.penalty).await;
                            let set_start = Instant::now();
                            st.fills += 1;
                            if let Some(e) = set(&mut conn, &cfg, r.key, r.size).await? {
                                st.error(format!("SET: {e}"));
                            }
                            get_ns
                                + cfg.penalty.as_nanos() as u64
                                + set_start.elapsed().as_nanos() as u64
                        }
                        Reply::Error(e) => {
                            st.error(format!("GET: {e}"));
                            start.elapsed().as_nanos() as u64
                        }
                        _ => {
                            st.hits += 1;
                            start.elapsed().as_nanos() as u64
                        }
                    }
                }
                Op::Set => {
                    st.sets += 1;
                    if let Some(e) = set(&mut conn, &cfg, r.key, r.size).await? {
                        st.error(format!("SET: {e}"));
                    }
                    start.elapsed().as_nanos() as u64
                }
                Op::Delete => {
                    st.deletes += 1;
                    conn.begin(2);
                    conn.arg(b"DEL");
                    conn.key_arg(&cfg.prefix, r.key);
                    conn.send().await?;
                    if let Reply::Error(e) = conn.reply().await? {
                        st.error(format!("DEL: {e}"));
                    }
                    start.elapsed().as_nanos() as u64
                }
            };
            st.requests += 1;
            st.latency.saturating_record(nanos.max(1));
        }
        cfg.progress
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
    Ok(st)
}

/// Reads a group's trace (its `limit` prefix, over and over if it loops) on a blocking
/// thread and deals requests to the connections by key hash. Stops early (without
/// error) if `stop` is set because a connection failed or the deadline passed; returns
/// whether it dealt the whole trace.
/// Salt of the `split=I/N` hash (so that it is independent of the connection hash).
const SPLIT_SALT: u64 = 0x5851_f42d_4c95_7f2d;

fn dispatch(
    group: &Group,
    senders: Vec<mpsc::Sender<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    deadline: Arc<AtomicBool>,
) -> Result<bool> {
    let n = senders.len() as u64;
    let mut batches: Vec<Vec<Request>> = (0..n).map(|_| Vec::with_capacity(BATCH)).collect();
    let limit = group
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let stopped = || stop.load(Ordering::Relaxed) || deadline.load(Ordering::Relaxed);
    loop {
        let reader = augur_trace::open(&group.trace, &group.format)?;
        let mut dealt = 0usize;
        for r in reader.take(limit) {
            if stopped() {
                return Ok(false);
            }
            let r = r?;
            if let Some((i, of)) = group.split {
                // A hash independent of the one dealing keys to connections below.
                if augur_trace::synth::mix64(r.key ^ SPLIT_SALT) % of != i {
                    continue;
                }
            }
            dealt += 1;
            let c = (augur_trace::synth::mix64(r.key) % n) as usize;
            batches[c].push(r);
            if batches[c].len() == BATCH {
                let full = std::mem::replace(&mut batches[c], Vec::with_capacity(BATCH));
                if senders[c].blocking_send(full).is_err() {
                    // The connection task ended early; its error is reported by the task.
                    return Ok(false);
                }
            }
        }
        if !group.looped || dealt == 0 || stopped() {
            break;
        }
    }
    for (c, b) in batches.into_iter().enumerate() {
        if !b.is_empty() && senders[c].blocking_send(b).is_err() {
            return Ok(false);
        }
    }
    Ok(!stopped())
}

/// Results of one group, as printed and serialised.
#[derive(Serialize, Debug)]
pub struct GroupReport {
    pub name: String,
    pub trace: String,
    /// AUTH user (none: the default user).
    pub user: Option<String>,
    pub prefix: String,
    pub limit: Option<u64>,
    /// `I/N` if the group replays one of N key partitions of its trace.
    pub split: Option<String>,
    pub connections: usize,
    /// Requests in flight per connection (`--pipeline`).
    pub pipeline: usize,
    pub miss_penalty_us: f64,
    pub requests: u64,
    pub gets: u64,
    pub hits: u64,
    pub hit_ratio: f64,
    /// SETs that filled a miss.
    pub fills: u64,
    /// SET / DEL requests from the trace itself.
    pub sets: u64,
    pub deletes: u64,
    /// Error replies from the server (e.g. OOM refusing a SET); the replay continues.
    pub errors: u64,
    pub first_error: Option<String>,
    /// Whether the whole trace (or its limit prefix) was replayed: false when the
    /// `--duration` deadline cut it, and always false for a looping group.
    pub complete: bool,
    pub seconds: f64,
    pub throughput_rps: f64,
    pub hits_per_sec: f64,
    pub latency_us: LatencyReport,
    /// Open loop (`--rate`): the rate offered, the requests sent 1 ms or more after
    /// they were due (the server, or the penalties, did not keep up), and the largest
    /// delay in ms. None / 0 in closed loop.
    pub offered_rps: Option<f64>,
    pub late_requests: u64,
    pub max_lag_ms: f64,
}

/// All groups together: sums, and latency over every request of every group.
#[derive(Serialize, Debug)]
pub struct OverallReport {
    pub groups: usize,
    pub requests: u64,
    pub gets: u64,
    pub hits: u64,
    pub hit_ratio: f64,
    pub fills: u64,
    pub errors: u64,
    /// Wall time of the whole run.
    pub seconds: f64,
    pub throughput_rps: f64,
    pub hits_per_sec: f64,
    /// Over all requests (weighted by each group's request count).
    pub latency_us: LatencyReport,
    /// Unweighted mean of the groups' mean access latencies (the kRedis paper's
    /// "average of tenants' mean access latency").
    pub mean_of_group_means_us: f64,
}

/// Access-latency summary in microseconds.
#[derive(Serialize, Debug)]
pub struct LatencyReport {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn per_sec(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

fn latency_report(h: &Histogram<u64>) -> LatencyReport {
    if h.is_empty() {
        return LatencyReport {
            mean: 0.0,
            p50: 0.0,
            p99: 0.0,
            p999: 0.0,
            max: 0.0,
        };
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    LatencyReport {
        mean: h.mean() / 1000.0,
        p50: us(h.value_at_quantile(0.5)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
    }
}

fn report(group: &Group, st: &Stats, seconds: f64, complete: bool) -> GroupReport {
    GroupReport {
        name: group.name.clone(),
        trace: group.trace.display().to_string(),
        user: group.auth.as_ref().and_then(|a| a.user.clone()),
        prefix: group.prefix.clone(),
        limit: group.limit,
        split: group.split.map(|(i, n)| format!("{i}/{n}")),
        connections: group.connections,
        pipeline: group.pipeline,
        miss_penalty_us: group.penalty.as_secs_f64() * 1e6,
        requests: st.requests,
        gets: st.gets,
        hits: st.hits,
        hit_ratio: ratio(st.hits, st.gets),
        fills: st.fills,
        sets: st.sets,
        deletes: st.deletes,
        errors: st.errors,
        first_error: st.first_error.clone(),
        complete: complete && !st.cut && !group.looped,
        seconds,
        throughput_rps: per_sec(st.requests, seconds),
        hits_per_sec: per_sec(st.hits, seconds),
        latency_us: latency_report(&st.latency),
        offered_rps: group.rate,
        late_requests: st.late,
        max_lag_ms: st.max_lag.as_secs_f64() * 1e3,
    }
}

fn overall(groups: &[GroupReport], st: &Stats, seconds: f64) -> OverallReport {
    OverallReport {
        groups: groups.len(),
        requests: st.requests,
        gets: st.gets,
        hits: st.hits,
        hit_ratio: ratio(st.hits, st.gets),
        fills: st.fills,
        errors: st.errors,
        seconds,
        throughput_rps: per_sec(st.requests, seconds),
        hits_per_sec: per_sec(st.hits, seconds),
        latency_us: latency_report(&st.latency),
        mean_of_group_means_us: if groups.is_empty() {
            0.0
        } else {
            groups.iter().map(|g| g.latency_us.mean).sum::<f64>() / groups.len() as f64
        },
    }
}

async fn replay_group(
    group: Group,
    waiter: Waiter,
    addr: String,
    progress: Arc<AtomicU64>,
    deadline: Arc<AtomicBool>,
) -> Result<(GroupReport, Stats)> {
    let mut conns = Vec::with_capacity(group.connections);
    for _ in 0..group.connections {
        let mut c = Conn::connect(&addr).await?;
        if let Some(a) = &group.auth {
            c.auth(a)
                .await
                .with_context(|| format!("group {}", group.name))?;
        }
        conns.push(c);
    }
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut senders = Vec::with_capacity(conns.len());
    let mut tasks = Vec::with_capacity(conns.len());
    for conn in conns {
        let (tx, rx) = mpsc::channel(BATCHES_IN_FLIGHT);
        senders.push(tx);
        let cfg = ConnCfg {
            corpus: group.corpus.clone(),
            prefix: group.prefix.clone(),
            penalty: group.penalty,
            value_size: group.value_size,
            cap: group.value_size_cap,
            waiter: waiter.clone(),
            progress: progress.clone(),
            deadline: deadline.clone(),
            interval: group
                .rate
                .map(|r| Duration::from_secs_f64(group.connections as f64 / r)),
        };
        let stop = stop.clone();
        let depth = group.pipeline;
        tasks.push(tokio::spawn(async move {
            let r = if depth > 1 {
                run_conn_pipelined(conn, cfg, rx, depth).await
            } else {
                run_conn(conn, cfg, rx).await
            };
            if r.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            r
        }));
    }
    let g2 = group.clone();
    let reader = tokio::task::spawn_blocking(move || dispatch(&g2, senders, stop, deadline));
    let mut total = Stats::new();
    let mut first_err = None;
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.context("connection task panicked")? {
            Ok(st) => total.merge(&st)?,
            Err(e) => {
                first_err.get_or_insert(e.context(format!("group {} connection {i}", group.name)));
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let complete = reader
        .await
        .context("trace reader panicked")?
        .with_context(|| format!("group {}", group.name))?;
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok((report(&group, &total, seconds, complete), total))
}

// ---------------------------------------------------------------------------------
// Tenant polling
// ---------------------------------------------------------------------------------

/// One `TENANT INFO` answer.
#[derive(Serialize, Debug)]
pub struct TenantSample {
    /// Seconds since the replay started.
    pub t_s: f64,
    pub tenant: String,
    pub group: String,
    /// The reply as text lines: a bulk/simple string split at line ends, an array's
    /// elements one a line (nested arrays flattened).
    pub lines: Vec<String>,
    /// `key:value` / `key=value` lines, or the pairs of a flat array of
    /// alternating names and values, as a map (values kept as text).
    pub fields: std::collections::BTreeMap<String, String>,
}

/// Everything `--poll-tenants` recorded.
#[derive(Serialize, Debug, Default)]
pub struct TenantPolls {
    pub interval_s: f64,
    pub samples: Vec<TenantSample>,
    /// Error replies or connection failures (all ignored).
    pub errors: u64,
    pub first_error: Option<String>,
}

fn flatten_lines(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Nil => {}
        Value::Str(s) => out.extend(
            s.lines()
                .map(|l| l.trim_end_matches('\r').to_owned())
                .filter(|l| !l.trim().is_empty()),
        ),
        Value::Int(i) => out.push(i.to_string()),
        Value::Error(e) => out.push(e.clone()),
        Value::Array(items) => items.iter().for_each(|i| flatten_lines(i, out)),
    }
}

/// The reply of `TENANT INFO` as lines and fields (see [`TenantSample`]). A flat
/// array of alternating names and values (a RESP2 map, which is what Augur answers)
/// is read as pairs, values kept whole (they may contain `:`, e.g. `target_history`,
/// or be empty); any other reply is read as `key:value` / `key=value` lines.
fn tenant_fields(v: &Value) -> (Vec<String>, std::collections::BTreeMap<String, String>) {
    let mut lines = Vec::new();
    flatten_lines(v, &mut lines);
    let mut fields = std::collections::BTreeMap::new();
    if let Value::Array(items) = v {
        let scalar = |i: &Value| match i {
            Value::Str(s) => Some(s.clone()),
            Value::Int(n) => Some(n.to_string()),
            _ => None,
        };
        if items.len() % 2 == 0 {
            if let Some(flat) = items.iter().map(scalar).collect::<Option<Vec<String>>>() {
                for kv in flat.chunks(2) {
                    fields.insert(kv[0].clone(), kv[1].clone());
                }
                return (lines, fields);
            }
        }
    }
    for l in &lines {
        if let Some((k, val)) = l.split_once([':', '=']) {
            if !k.trim().is_empty() && !k.starts_with('#') {
                fields.insert(k.trim().to_owned(), val.trim().to_owned());
            }
        }
    }
    (lines, fields)
}

/// Polls `TENANT INFO` for each (group, tenant) every `interval` until `done`, then
/// once more. Never fails: connection and command errors are counted.
async fn poll_tenants(
    addr: String,
    auth: Option<Auth>,
    tenants: Vec<(String, String)>,
    interval: Duration,
    start: Instant,
    mut done: tokio::sync::watch::Receiver<bool>,
) -> TenantPolls {
    let mut polls = TenantPolls {
        interval_s: interval.as_secs_f64(),
        ..TenantPolls::default()
    };
    let mut conn: Option<Conn> = None;
    loop {
        let last = *done.borrow();
        for (group, tenant) in &tenants {
            let r: Result<Value> = async {
                if conn.is_none() {
                    let mut c = Conn::connect(&addr).await?;
                    if let Some(a) = &auth {
                        c.auth(a).await?;
                    }
                    conn = Some(c);
                }
                let c = conn.as_mut().expect("connected above");
                c.begin(3);
                c.arg(b"TENANT");
                c.arg(b"INFO");
                c.arg(tenant.as_bytes());
                c.send().await?;
                c.value().await
            }
            .await;
            let err = match r {
                Ok(Value::Error(e)) => Some(e),
                Ok(v) => {
                    let (lines, fields) = tenant_fields(&v);
                    polls.samples.push(TenantSample {
                        t_s: start.elapsed().as_secs_f64(),
                        tenant: tenant.clone(),
                        group: group.clone(),
                        lines,
                        fields,
                    });
                    None
                }
                Err(e) => {
                    conn = None; // reconnect next time
                    Some(format!("{e:#}"))
                }
            };
            if let Some(e) = err {
                polls.errors += 1;
                polls.first_error.get_or_insert(e);
            }
        }
        if last {
            return polls;
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = done.changed() => {}
        }
    }
}

// ---------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------

/// Results of a run, as serialised by `--json`.
#[derive(Serialize, Debug)]
pub struct RunReport {
    pub groups: Vec<GroupReport>,
    pub overall: OverallReport,
    /// The `--duration` bound in seconds, if any, and whether it cut the run.
    pub duration_s: Option<f64>,
    pub deadline_reached: bool,
    pub tenant_polls: Option<TenantPolls>,
}

fn print_table(run: &RunReport) {
    println!(
        "{:<16} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}",
        "group",
        "requests",
        "hits",
        "hit%",
        "req/s",
        "hits/s",
        "mean_us",
        "p50_us",
        "p99_us",
        "p99.9_us",
        "errors"
    );
    let row = |name: &str, requests, hits, hr: f64, rps, hps, l: &LatencyReport, errors| {
        println!(
            "{:<16} {:>10} {:>10} {:>8.3} {:>10.0} {:>10.0} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>7}",
            name,
            requests,
            hits,
            hr * 100.0,
            rps,
            hps,
            l.mean,
            l.p50,
            l.p99,
            l.p999,
            errors
        );
    };
    for r in &run.groups {
        let name = if r.complete {
            r.name.clone()
        } else {
            format!("{}*", r.name)
        };
        row(
            &name,
            r.requests,
            r.hits,
            r.hit_ratio,
            r.throughput_rps,
            r.hits_per_sec,
            &r.latency_us,
            r.errors,
        );
    }
    if run.groups.len() > 1 {
        let o = &run.overall;
        row(
            "overall",
            o.requests,
            o.hits,
            o.hit_ratio,
            o.throughput_rps,
            o.hits_per_sec,
            &o.latency_us,
            o.errors,
        );
        println!(
            "mean of the groups' mean latencies: {:.1} us",
            o.mean_of_group_means_us
        );
    }
    if run.groups.iter().any(|r| !r.complete) {
        println!("* cut by --duration (or looping): not the whole trace");
    }
    for r in &run.groups {
        if let Some(offered) = r.offered_rps {
            println!(
                "{}: open loop at {offered:.0} req/s offered; {} requests sent 1 ms or more late \
                 (largest delay {:.1} ms)",
                r.name, r.late_requests, r.max_lag_ms
            );
        }
    }
    if let Some(p) = &run.tenant_polls {
        println!(
            "TENANT INFO: {} samples, {} errors{}",
            p.samples.len(),
            p.errors,
            p.first_error
                .as_deref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        );
    }
    for r in run.groups.iter().filter(|r| r.errors > 0) {
        eprintln!(
            "warning: group {}: {} error replies, first: {}",
            r.name,
            r.errors,
            r.first_error.as_deref().unwrap_or("?")
        );
    }
}

/// What the replay tasks hand back: each group's report and raw counters, and the
/// tenant polls.
type RunResults = (Vec<(GroupReport, Stats)>, Option<TenantPolls>);

pub fn run(args: Args) -> Result<()> {
    // First, so that `--json TRACE` (a trace taken as the JSON file) is reported as such.
    if let Some(p) = &args.json {
        let ok = p.as_os_str() == "-" || p.extension().is_some_and(|e| e == "json");
        if !ok {
            bail!(
                "--json FILE must end in .json (or be `-` for stdout), not {:?}: \
                 was a trace meant? put --json after the traces",
                p.display()
            );
        }
    }
    let groups = resolve_groups(&args)?;
    let poll_interval = match args.poll_tenants {
        Some(s) if !(s.is_finite() && s > 0.0) => bail!("--poll-tenants needs SECS > 0"),
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    // Fail fast on unreadable traces before connecting anywhere.
    let mut total_hint = Some(0u64);
    for g in &groups {
        let r =
            augur_trace::open(&g.trace, &g.format).with_context(|| format!("group {}", g.name))?;
        total_hint = match (total_hint, r.len_hint()) {
            _ if g.looped => None,
            (Some(t), Some(h)) => {
                Some(t + g.limit.map_or(h, |l| l.min(h)) / g.split.map_or(1, |(_, n)| n))
            }
            (Some(t), None) => g.limit.map(|l| t + l),
            _ => None,
        };
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress = Arc::new(AtomicU64::new(0));
    let show_bar = !args.no_progress && std::io::stdout().is_terminal();
    let bar = if show_bar {
        // Compressed traces have no known length: show a counter instead of a bar.
        let (pb, template) = match total_hint {
            Some(t) => (
                indicatif::ProgressBar::new(t),
                "[{elapsed_precise}] {wide_bar} {human_pos}/{human_len} ({eta} left)",
            ),
            None => (
                indicatif::ProgressBar::new_spinner(),
                "{spinner} [{elapsed_precise}] {human_pos} requests",
            ),
        };
        pb.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(pb)
    } else {
        None
    };
    let waiter = Waiter::start();
    let deadline = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let results: Result<RunResults> = rt.block_on(async {
        let ticker = bar.clone().map(|pb| {
            let p = progress.clone();
            tokio::spawn(async move {
                loop {
                    pb.set_position(p.load(Ordering::Relaxed));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        });
        let timer = args.duration.map(|d| {
            let deadline = deadline.clone();
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                deadline.store(true, Ordering::Relaxed);
            })
        });
        let (done_tx, done_rx) = tokio::sync::watch::channel(false);
        let poller = poll_interval.map(|interval| {
            let tenants: Vec<(String, String)> = groups
                .iter()
                .filter_map(|g| g.tenant.clone().map(|t| (g.name.clone(), t)))
                .collect();
            tokio::spawn(poll_tenants(
                args.addr.clone(),
                args.poll_auth.as_deref().map(Auth::parse),
                tenants,
                interval,
                start,
                done_rx,
            ))
        });
        let handles: Vec<_> = groups
            .iter()
            .cloned()
            .map(|g| {
                tokio::spawn(replay_group(
                    g,
                    waiter.clone(),
                    args.addr.clone(),
                    progress.clone(),
                    deadline.clone(),
                ))
            })
            .collect();
        let mut out = Vec::with_capacity(handles.len());
        let mut err = None;
        for h in handles {
            match h.await.context("group task panicked")? {
                Ok(r) => out.push(r),
                Err(e) => {
                    err.get_or_insert(e);
                }
            }
        }
        if let Some(t) = ticker {
            t.abort();
        }
        if let Some(t) = timer {
            t.abort();
        }
        let _ = done_tx.send(true);
        let polls = match poller {
            Some(p) => Some(p.await.context("tenant poller panicked")?),
            None => None,
        };
        match err {
            Some(e) => Err(e),
            None => Ok((out, polls)),
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    let (results, tenant_polls) = results?;
    let mut all = Stats::new();
    let mut reports = Vec::with_capacity(results.len());
    for (r, st) in results {
        all.merge(&st)?;
        reports.push(r);
    }
    let overall = overall(&reports, &all, seconds);
    let run = RunReport {
        groups: reports,
        overall,
        duration_s: args.duration.map(|d| d.as_secs_f64()),
        deadline_reached: deadline.load(Ordering::Relaxed),
        tenant_polls,
    };
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            println!("{}", serde_json::to_string_pretty(&run)?);
        }
        Some(p) => {
            std::fs::write(p, serde_json::to_string_pretty(&run)? + "\n")
                .with_context(|| format!("writing {}", p.display()))?;
            print_table(&run);
        }
        None => print_table(&run),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("200us").unwrap(), Duration::from_micros(200));
        assert_eq!(parse_duration("200µs").unwrap(), Duration::from_micros(200));
        assert_eq!(
            parse_duration("1.5ms").unwrap(),
            Duration::from_micros(1500)
        );
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("100ns").unwrap(), Duration::from_nanos(100));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("200").is_err());
        assert!(parse_duration("5min").is_err());
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn group_specs() {
        let g: GroupSpec =
            "trace=a.zst,auth=t1:pw,penalty=100us,connections=2,prefix=x:,limit=10,name=A"
                .parse()
                .unwrap();
        assert_eq!(
            g,
            GroupSpec {
                trace: "a.zst".into(),
                auth: Some("t1:pw".into()),
                penalty: Some(Duration::from_micros(100)),
                connections: Some(2),
                prefix: Some("x:".into()),
                limit: Some(10),
                name: Some("A".into()),
                ..GroupSpec::default()
            }
        );
        let g: GroupSpec =
            "name=t1,trace=b,user=t1,pass=p:w,value-size=64,value_size_cap=32,loop=yes,tenant=T"
                .parse()
                .unwrap();
        assert_eq!(
            g,
            GroupSpec {
                trace: "b".into(),
                name: Some("t1".into()),
                user: Some("t1".into()),
                pass: Some("p:w".into()),
                value_size: Some(64),
                value_size_cap: Some(32),
                looped: Some(true),
                tenant: Some("T".into()),
                ..GroupSpec::default()
            }
        );
        assert!("auth=x".parse::<GroupSpec>().is_err());
        assert!("trace=a,color=blue".parse::<GroupSpec>().is_err());
        assert!(
            "trace=a,user=u".parse::<GroupSpec>().is_err(),
            "user without pass"
        );
        assert!("trace=a,auth=u:p,pass=p".parse::<GroupSpec>().is_err());
        assert!("trace=a,loop=maybe".parse::<GroupSpec>().is_err());
        let g: GroupSpec = "trace=a,split=14/15".parse().unwrap();
        assert_eq!(g.split, Some((14, 15)));
        for bad in ["15/15", "1/0", "x/2", "3"] {
            assert!(
                format!("trace=a,split={bad}").parse::<GroupSpec>().is_err(),
                "{bad}"
            );
        }
        assert_eq!(Auth::parse("u:p:q").args(), vec!["u", "p:q"]);
        assert_eq!(Auth::parse("secret").args(), vec!["secret"]);
        // pass= alone is the default user's password, colons and all.
        let pw_only = Auth {
            user: None,
            pass: "a:b".into(),
        };
        assert_eq!(pw_only.args(), vec!["a:b"]);
    }

    #[test]
    fn tenant_info_replies_become_fields() {
        let bulk = Value::Str("# tenant t1\r\ntarget:1048576\r\nk:5\r\n\r\nused=10\r\n".into());
        let (lines, fields) = tenant_fields(&bulk);
        assert_eq!(
            lines,
            vec!["# tenant t1", "target:1048576", "k:5", "used=10"]
        );
        assert_eq!(fields.len(), 3);
        assert_eq!(fields["target"], "1048576");
        assert_eq!(fields["k"], "5");
        assert_eq!(fields["used"], "10");
        // A flat array of alternating names and values (CONFIG GET style).
        let arr = Value::Array(vec![
            Value::Str("target".into()),
            Value::Int(42),
            Value::Str("k".into()),
            Value::Str("16".into()),
        ]);
        let (lines, fields) = tenant_fields(&arr);
        assert_eq!(lines, vec!["target", "42", "k", "16"]);
        assert_eq!(fields["target"], "42");
        assert_eq!(fields["k"], "16");
        // TENANT INFO's map (RESP2): values with colons and empty values stay whole.
        let map = Value::Array(vec![
            Value::Str("name".into()),
            Value::Str("t1".into()),
            Value::Str("miss_latency_us".into()),
            Value::Str(String::new()),
            Value::Str("target_history".into()),
            Value::Str("1:1048576:4 2:2097152:16".into()),
        ]);
        let (_, fields) = tenant_fields(&map);
        assert_eq!(fields.len(), 3, "{fields:?}");
        assert_eq!(fields["name"], "t1");
        assert_eq!(fields["miss_latency_us"], "");
        assert_eq!(fields["target_history"], "1:1048576:4 2:2097152:16");
        // Odd arrays and nested arrays give lines but no pairs.
        let (_, fields) = tenant_fields(&Value::Array(vec![Value::Str("x".into())]));
        assert!(fields.is_empty());
    }

    #[test]
    fn command_encoding() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap().to_string();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut c = Conn::connect(&addr).await.unwrap();
            c.begin(3);
            c.arg(b"SET");
            c.key_arg("k:", 1234567890);
            c.value_arg(30);
            assert_eq!(
                c.out,
                b"*3\r\n$3\r\nSET\r\n$12\r\nk:1234567890\r\n$30\r\nabcdefghijklmnopqrstuvwxyzabcd\r\n".to_vec()
            );
            c.begin(2);
            c.key_arg("", 0);
            assert_eq!(c.out, b"*2\r\n$1\r\n0\r\n".to_vec());
        });
    }

    #[test]
    fn reply_parser_handles_every_resp2_kind_split_across_reads() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let canned: &[u8] = b"$-1\r\n$5\r\nhe\r\nl\r\n+OK\r\n-ERR boom\r\n:42\r\n\
                    *3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n+x\r\n*-1\r\n$0\r\n\r\n+end\r\n";
                // Three bytes at a time, so lengths, payloads and CRLFs straddle reads.
                for chunk in canned.chunks(3) {
                    s.write_all(chunk).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::task::yield_now().await;
                }
            });
            let mut c = Conn::connect(&addr).await.unwrap();
            let mut got = vec![];
            for _ in 0..9 {
                got.push(c.reply().await.unwrap());
            }
            assert_eq!(
                got,
                vec![
                    Reply::Nil,
                    Reply::Bulk,
                    Reply::Simple,
                    Reply::Error("ERR boom".into()),
                    Reply::Integer,
                    Reply::Array,
                    Reply::Nil,
                    Reply::Bulk,
                    Reply::Simple,
                ]
            );
            server.await.unwrap();
            // The peer has closed: a further read is an error, not a hang or a panic.
            assert!(c.reply().await.is_err());
        });
    }

    #[test]
    fn value_reader_keeps_payloads_split_across_reads() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let canned: &[u8] = b"*2\r\n$5\r\na\r\nbc\r\n*2\r\n:7\r\n-ERR x\r\n$-1\r\n+OK\r\n";
                for chunk in canned.chunks(2) {
                    s.write_all(chunk).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::task::yield_now().await;
                }
            });
            let mut c = Conn::connect(&addr).await.unwrap();
            assert_eq!(
                c.value().await.unwrap(),
                Value::Array(vec![
                    Value::Str("a\r\nbc".into()),
                    Value::Array(vec![Value::Int(7), Value::Error("ERR x".into())]),
                ])
            );
            assert_eq!(c.value().await.unwrap(), Value::Nil);
            assert_eq!(c.value().await.unwrap(), Value::Str("OK".into()));
            server.await.unwrap();
        });
    }

    #[test]
    fn waiter_is_finer_than_tokio_timers_and_never_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let w = Waiter::start();
        let d = Duration::from_micros(200);
        let n = 50u32;
        let total = rt.block_on(async {
            let t = Instant::now();
            for _ in 0..n {
                let s = Instant::now();
                w.wait(d).await;
                assert!(s.elapsed() >= d, "returned early");
            }
            t.elapsed()
        });
        // tokio::time::sleep(200us) takes at least 1 ms (its wheel's resolution); the
        // timer thread should average well below that even on a busy machine.
        let mean = total / n;
        assert!(mean < Duration::from_micros(900), "mean wait {mean:?}");
    }
}
