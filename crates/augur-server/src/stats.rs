//! Per-command statistics: INFO `commandstats`, `errorstats`, `latencystats`, and the
//! `total_error_replies` / `unexpected_error_replies` of INFO `stats`. Mirrors Redis
//! 7.0's server.c: `call()` (calls, usec, failed_calls, the latency histogram),
//! `rejectCommand()` (rejected_calls), `afterErrorReply()` / `incrementErrorCount()`
//! (errors counted by their first word), `resetCommandTableStats()` (CONFIG RESETSTAT).
//!
//! What counts as what, as in Redis:
//! - a command refused before it runs (unknown name, wrong arity, NOAUTH, OOM for a
//!   `denyoom` command, BUSY, not allowed in MULTI or in a RESP2 subscriber context) is a
//!   *rejected call* of that command (an unknown one has no entry) and is not a call;
//! - a command that runs is a *call*, with its duration; it is a *failed call* when it
//!   wrote at least one error reply that no nested call (inside EXEC or a script) had
//!   already accounted for. So an EXEC whose queued AUTH fails is a call, the AUTH is the
//!   failed one; EXECABORT is EXEC's own failure.
//! - every error reply counts once in `total_error_replies` and under its code (the
//!   first word of the error, ERR when there is none) in errorstats.
//! - queued commands are counted when EXEC runs them, and commands a script runs as
//!   their own calls, like Redis.
//!
//! **Scope: the server, not the tenant.** Like Redis (which has one set of statistics),
//! every client sees the same commandstats/errorstats/latencystats, whatever tenant it
//! is: they describe the server's work and carry no key or value, so they leak nothing
//! of another tenant's data. Per-tenant figures live in INFO `tenants` / TENANT INFO.
//!
//! **The hot path.** A command adds one record to its connection's [`Pending`] batch (a
//! slot number, the duration and two bits: no atomics, no locks). The connection folds
//! the batch into its worker thread's table once per read batch (one uncontended lock;
//! with `-P 16` one lock per 16 commands), as it already does with
//! total_commands_processed. INFO locks each thread's table in turn and sums them;
//! CONFIG RESETSTAT clears them. The duration costs one read of the monotonic clock per
//! command (a pipelined command starts where the previous one ended; quanta's TSC read,
//! about half the cost of the vDSO's clock_gettime in `perf` on this project's VMs), and
//! the histogram one record, only while `latency-tracking` is on.

use crate::cmdtable::{CommandSpec, COMMANDS};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// Redis's LATENCY_HISTOGRAM_MIN_VALUE / MAX_VALUE (ns) and precision (significant
/// figures).
const HIST_MIN_NS: u64 = 1;
const HIST_MAX_NS: u64 = 1_000_000_000;
const HIST_SIGFIG: u8 = 2;

/// The stat slot of every command and subcommand: commands first (`Cmd as usize`), then
/// each container's subcommands in table order.
fn sub_base() -> &'static [usize] {
    static BASE: OnceLock<Vec<usize>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut next = COMMANDS.len();
        COMMANDS
            .iter()
            .map(|c| {
                let b = next;
                next += c.subcommands.len();
                b
            })
            .collect()
    })
}

fn slot_count() -> usize {
    COMMANDS.len() + COMMANDS.iter().map(|c| c.subcommands.len()).sum::<usize>()
}

/// The slot of `spec`, or of its subcommand `sub` (an index into `spec.subcommands`).
#[inline]
pub fn slot(spec: &CommandSpec, sub: Option<usize>) -> u16 {
    match sub {
        None => spec.cmd as u16,
        Some(i) => (sub_base()[spec.cmd as usize] + i) as u16,
    }
}

/// The full name (`get`, `client|list`) of a slot.
fn slot_name(slot: usize) -> &'static str {
    if slot < COMMANDS.len() {
        return COMMANDS[slot].name;
    }
    let base = sub_base();
    for (i, c) in COMMANDS.iter().enumerate() {
        if slot >= base[i] && slot < base[i] + c.subcommands.len() {
            return c.subcommands[slot - base[i]].name;
        }
    }
    "?"
}

/// The stat slot of a command line: its subcommand's when the command is a container and
/// the subcommand exists, else the command's. Also returns the arity that applies.
pub fn resolve(spec: &'static CommandSpec, sub_name: Option<&[u8]>) -> (u16, Option<i32>) {
    if let Some(name) = sub_name.filter(|_| !spec.subcommands.is_empty()) {
        if let Some(i) = spec
            .subcommands
            .iter()
            .position(|s| s.short().as_bytes().eq_ignore_ascii_case(name))
        {
            return (slot(spec, Some(i)), Some(spec.subcommands[i].arity));
        }
        return (slot(spec, None), None);
    }
    (slot(spec, None), Some(spec.arity))
}

#[derive(Default)]
struct SlotStats {
    calls: u64,
    nanos: u64,
    rejected: u64,
    failed: u64,
    hist: Option<Box<Histogram<u64>>>,
}

/// One worker thread's share of the statistics.
#[derive(Default)]
struct Table {
    slots: Vec<SlotStats>,
    errors: Vec<(Box<str>, u64)>,
    total_error_replies: u64,
}

impl Table {
    fn slot(&mut self, i: usize) -> &mut SlotStats {
        if self.slots.len() <= i {
            self.slots
                .resize_with(slot_count().max(i + 1), SlotStats::default);
        }
        &mut self.slots[i]
    }

    fn add_error(&mut self, code: &str, n: u64) {
        match self.errors.iter_mut().find(|(c, _)| &**c == code) {
            Some((_, k)) => *k += n,
            None => self.errors.push((code.into(), n)),
        }
    }
}

/// A command's outcome, as recorded in a [`Pending`] batch.
#[derive(Clone, Copy)]
struct Rec {
    slot: u16,
    rejected: bool,
    failed: bool,
    nanos: u64,
}

/// A connection's records since its last flush (see the module doc).
#[derive(Default)]
pub struct Pending {
    recs: Vec<Rec>,
    /// Error replies written (and their codes) since the last flush.
    errors: Vec<(ErrCode, u64)>,
    total_errors: u64,
    /// `total_errors` when the last call ended or began (server.c's prev_err_count).
    prev_errors: u64,
    /// An error was replied that had been counted before (see
    /// [`Out::error_counted_before`](crate::resp::Out::error_counted_before)).
    uncounted_failure: bool,
}

/// An error code: the first word of an error reply, at most 32 bytes (Redis reads the
/// code within the first 32 characters and falls back to ERR).
#[derive(Clone, Copy, PartialEq, Eq)]
struct ErrCode {
    len: u8,
    buf: [u8; 32],
}

impl ErrCode {
    fn of(text: &[u8]) -> ErrCode {
        let head = &text[..text.len().min(32)];
        let word = match memchr::memchr(b' ', head) {
            Some(i) if i > 0 => &head[..i],
            _ => b"ERR".as_slice(),
        };
        let mut buf = [0u8; 32];
        buf[..word.len()].copy_from_slice(word);
        ErrCode {
            len: word.len() as u8,
            buf,
        }
    }

    fn as_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.buf[..self.len as usize])
    }
}

impl Pending {
    /// Counts one error reply (`text` starts with its code, without the `-`).
    pub fn error(&mut self, text: &[u8]) {
        let text = text.strip_prefix(b"-").unwrap_or(text);
        self.total_errors += 1;
        let code = ErrCode::of(text);
        match self.errors.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => self.errors.push((code, 1)),
        }
    }

    /// Error replies written so far (never reset; compare two readings).
    #[inline]
    pub fn errors_written(&self) -> u64 {
        self.total_errors
    }

    /// A call of `slot` that ran for `nanos`: failed when error replies were written
    /// since the last call ended (server.c's `prev_err_count` test).
    #[inline]
    pub fn call(&mut self, slot: u16, nanos: u64) {
        let failed = self.total_errors > self.prev_errors || self.uncounted_failure;
        self.uncounted_failure = false;
        self.prev_errors = self.total_errors;
        self.recs.push(Rec {
            slot,
            rejected: false,
            failed,
            nanos,
        });
    }

    /// The current call replied an error counted before (it fails all the same).
    pub fn failed_uncounted(&mut self) {
        self.uncounted_failure = true;
    }

    /// Takes over the records of a nested reply buffer (a script's commands): its calls
    /// and errors become this connection's, and, like the end of a nested call in
    /// server.c, the errors so far are accounted for.
    pub fn absorb(&mut self, other: &mut Pending) {
        self.recs.append(&mut other.recs);
        for (code, n) in other.errors.drain(..) {
            match self.errors.iter_mut().find(|(c, _)| *c == code) {
                Some((_, k)) => *k += n,
                None => self.errors.push((code, n)),
            }
        }
        self.total_errors += other.total_errors;
        self.uncounted_failure |= other.uncounted_failure;
        self.prev_errors = self.total_errors;
        *other = Pending::default();
    }

    /// Takes over the records of a script's final reply: unlike [`Pending::absorb`],
    /// its errors belong to the call still running (EVAL), so they make it fail.
    pub fn absorb_reply(&mut self, other: &mut Pending) {
        let prev = self.prev_errors;
        self.absorb(other);
        self.prev_errors = prev;
    }

    /// Forgets the batch (CONFIG RESETSTAT).
    pub fn clear(&mut self) {
        self.recs.clear();
        self.errors.clear();
    }

    /// A rejected call of `slot` (its error reply is counted by [`Pending::error`]).
    #[inline]
    pub fn reject(&mut self, slot: u16) {
        self.recs.push(Rec {
            slot,
            rejected: true,
            failed: false,
            nanos: 0,
        });
    }

    /// Marks the start of a call: errors written before it are not its own.
    #[inline]
    pub fn begin(&mut self) {
        self.prev_errors = self.total_errors;
        self.uncounted_failure = false;
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty() && self.errors.is_empty()
    }
}

/// The server's command statistics (one per [`Shared`](crate::state::Shared)).
pub struct CommandStats {
    id: u64,
    threads: Mutex<Vec<Arc<Mutex<Table>>>>,
    /// Tables of threads that no longer run commands are kept in `threads`; nothing is
    /// lost when a connection ends, since connections flush into threads' tables.
    pub latency_tracking: AtomicBool,
    /// Error replies of commands that should never fail (Redis counts errors of
    /// commands run by the master link or AOF loading; Augur has neither, so it is 0).
    pub unexpected_error_replies: AtomicU64,
}

impl Default for CommandStats {
    fn default() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT_ID.fetch_add(1, Relaxed),
            threads: Mutex::default(),
            latency_tracking: AtomicBool::new(true),
            unexpected_error_replies: AtomicU64::new(0),
        }
    }
}

thread_local! {
    /// This thread's table in each CommandStats it has worked for (usually one; tests
    /// run several servers in one process).
    static MINE: RefCell<Vec<(u64, Arc<Mutex<Table>>)>> = const { RefCell::new(Vec::new()) };
}

impl CommandStats {
    /// Runs `f` on this thread's table, registering it on first use.
    fn with_my_table<R>(&self, f: impl FnOnce(&mut Table) -> R) -> R {
        MINE.with(|m| {
            let mut m = m.borrow_mut();
            let i = match m.iter().position(|(id, _)| *id == self.id) {
                Some(i) => i,
                None => {
                    let t = Arc::new(Mutex::new(Table::default()));
                    self.threads.lock().push(t.clone());
                    m.push((self.id, t));
                    m.len() - 1
                }
            };
            let mut t = m[i].1.lock();
            f(&mut t)
        })
    }

    /// Folds a connection's batch into this thread's table.
    pub fn flush(&self, p: &mut Pending) {
        if p.is_empty() {
            return;
        }
        let track = self.latency_tracking.load(Relaxed);
        self.with_my_table(|t| Self::fold(t, p, track));
    }

    fn fold(t: &mut Table, p: &mut Pending, track: bool) {
        for r in p.recs.drain(..) {
            let s = t.slot(r.slot as usize);
            if r.rejected {
                s.rejected += 1;
                continue;
            }
            s.calls += 1;
            s.nanos += r.nanos;
            if r.failed {
                s.failed += 1;
            }
            if track {
                let h = s.hist.get_or_insert_with(|| {
                    Box::new(
                        Histogram::new_with_bounds(HIST_MIN_NS, HIST_MAX_NS, HIST_SIGFIG)
                            .expect("valid histogram bounds"),
                    )
                });
                h.saturating_record(r.nanos.clamp(HIST_MIN_NS, HIST_MAX_NS));
            }
        }
        let mut total = 0;
        for (code, n) in p.errors.drain(..) {
            t.add_error(&code.as_str(), n);
            total += n;
        }
        t.total_error_replies += total;
    }

    /// CONFIG RESETSTAT (resetCommandTableStats, resetErrorTableStats).
    pub fn reset(&self) {
        for t in self.threads.lock().iter() {
            *t.lock() = Table::default();
        }
        self.unexpected_error_replies.store(0, Relaxed);
    }

    /// Every thread's table summed.
    fn merged(&self) -> Table {
        let mut sum = Table::default();
        for t in self.threads.lock().iter() {
            let t = t.lock();
            for (i, s) in t.slots.iter().enumerate() {
                if s.calls == 0 && s.rejected == 0 && s.failed == 0 {
                    continue;
                }
                let d = sum.slot(i);
                d.calls += s.calls;
                d.nanos += s.nanos;
                d.rejected += s.rejected;
                d.failed += s.failed;
                if let Some(h) = &s.hist {
                    match &mut d.hist {
                        Some(dh) => {
                            let _ = dh.add(&**h);
                        }
                        None => d.hist = Some(h.clone()),
                    }
                }
            }
            for (code, n) in &t.errors {
                sum.add_error(code, *n);
            }
            sum.total_error_replies += t.total_error_replies;
        }
        sum
    }

    pub fn total_error_replies(&self) -> u64 {
        self.threads
            .lock()
            .iter()
            .map(|t| t.lock().total_error_replies)
            .sum()
    }

    /// INFO commandstats lines (genRedisInfoString's "Commandstats").
    pub fn commandstats(&self, o: &mut String) {
        let t = self.merged();
        for (i, s) in t.slots.iter().enumerate() {
            if s.calls == 0 && s.rejected == 0 && s.failed == 0 {
                continue;
            }
            let usec = s.nanos / 1000;
            let per_call = if s.calls == 0 {
                0.0
            } else {
                usec as f64 / s.calls as f64
            };
            let _ = write!(
                o,
                "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
                slot_name(i),
                s.calls,
                usec,
                per_call,
                s.rejected,
                s.failed
            );
        }
    }

    /// INFO errorstats lines.
    pub fn errorstats(&self, o: &mut String) {
        let mut t = self.merged();
        // Redis walks a radix tree: codes in byte order.
        t.errors.sort();
        for (code, n) in &t.errors {
            let _ = write!(o, "errorstat_{code}:count={n}\r\n");
        }
    }

    /// INFO latencystats lines, one per command with a histogram, at `percentiles`.
    pub fn latencystats(&self, percentiles: &[f64], o: &mut String) {
        let t = self.merged();
        for (i, s) in t.slots.iter().enumerate() {
            let Some(h) = &s.hist else { continue };
            if h.is_empty() {
                continue;
            }
            let _ = write!(o, "latency_percentiles_usec_{}:", slot_name(i));
            for (j, p) in percentiles.iter().enumerate() {
                if j > 0 {
                    o.push(',');
                }
                let v = h.value_at_quantile(p / 100.0) as f64 / 1000.0;
                let _ = write!(o, "p{}={v:.3}", format_percentile(*p));
            }
            o.push_str("\r\n");
        }
    }
}

/// One command's LATENCY HISTOGRAM entry: its full name, calls, and the cumulative
/// distribution as (µs, calls that took at most about that long) pairs.
pub type CommandCdf = (&'static str, u64, Vec<(u64, u64)>);

impl CommandStats {
    /// LATENCY HISTOGRAM: every command with a histogram (`names` None), or the named
    /// ones in the order given, a container standing for itself and its subcommands
    /// (`client`: `client|id`, `client|list`, ...) and unknown names skipped, as
    /// latency.c's latencySpecificCommandsFillCDF. A command has a histogram from its
    /// first call after CONFIG RESETSTAT while `latency-tracking` is on.
    pub fn latency_histogram(&self, names: Option<&[&[u8]]>) -> Vec<CommandCdf> {
        let t = self.merged();
        let cdf_of = |i: usize| -> Option<CommandCdf> {
            let h = t.slots.get(i)?.hist.as_ref()?;
            Some((slot_name(i), h.len(), command_cdf(h)))
        };
        match names {
            None => (0..t.slots.len()).filter_map(cdf_of).collect(),
            Some(names) => names
                .iter()
                .flat_map(|n| slots_named(n))
                .filter_map(cdf_of)
                .collect(),
        }
    }
}

/// The stat slots a LATENCY HISTOGRAM argument names: `container|sub` its subcommand's,
/// a command its own and (a container) each of its subcommands'.
fn slots_named(name: &[u8]) -> Vec<usize> {
    let upper = |b: &[u8]| b.to_ascii_uppercase();
    if let Some(bar) = memchr::memchr(b'|', name) {
        let Some(spec) = crate::cmdtable::lookup(&upper(&name[..bar])) else {
            return Vec::new();
        };
        let sub = &name[bar + 1..];
        return spec
            .subcommands
            .iter()
            .position(|s| s.short().as_bytes().eq_ignore_ascii_case(sub))
            .map(|i| vec![slot(spec, Some(i)) as usize])
            .unwrap_or_default();
    }
    let Some(spec) = crate::cmdtable::lookup(&upper(name)) else {
        return Vec::new();
    };
    std::iter::once(slot(spec, None) as usize)
        .chain((0..spec.subcommands.len()).map(|i| slot(spec, Some(i)) as usize))
        .collect()
}

/// fillCommandCDF's pairs: hdr_iter_log from 1024 ns doubling, each reporting level
/// answered at the first bucket at or above it (that bucket's count included, its
/// highest equivalent value in µs), a pair written only where the cumulative count
/// grew: `histogram_usec 1 2 2 5 ...` as Redis replies.
fn command_cdf(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    let total = h.len();
    let mut out = Vec::new();
    let mut level = 1024u64;
    let mut level_low = h.lowest_equivalent(level);
    let (mut cumulative, mut reported) = (0u64, 0u64);
    for v in h.iter_all() {
        cumulative += v.count_at_value();
        let low = h.lowest_equivalent(v.value_iterated_to());
        while low >= level_low {
            if cumulative > reported {
                out.push((
                    h.highest_equivalent(v.value_iterated_to()) / 1000,
                    cumulative,
                ));
            }
            reported = cumulative;
            level = level.saturating_mul(2);
            level_low = h.lowest_equivalent(level);
        }
        if reported == total {
            break;
        }
    }
    out
}

/// A percentile as Redis prints it (`%f`, trailing zeros and dot trimmed): 50, 99.9.
pub fn format_percentile(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes() {
        assert_eq!(&*ErrCode::of(b"ERR syntax error").as_str(), "ERR");
        assert_eq!(&*ErrCode::of(b"WRONGTYPE Operation").as_str(), "WRONGTYPE");
        assert_eq!(&*ErrCode::of(b"NOSPACE").as_str(), "ERR");
        assert_eq!(
            &*ErrCode::of(b"AVERYVERYVERYVERYLONGCODEOFMORETHAN32 x").as_str(),
            "ERR"
        );
    }

    #[test]
    fn slots_are_unique_and_named() {
        let mut names = std::collections::HashSet::new();
        for i in 0..slot_count() {
            assert!(names.insert(slot_name(i)), "{}", slot_name(i));
        }
        let client = crate::cmdtable::lookup(b"CLIENT").unwrap();
        let (s, arity) = resolve(client, Some(b"LIST"));
        assert_eq!(slot_name(s as usize), "client|list");
        assert_eq!(arity, Some(-2));
    }

    #[test]
    fn percentiles_print_like_redis() {
        assert_eq!(format_percentile(50.0), "50");
        assert_eq!(format_percentile(99.9), "99.9");
        assert_eq!(format_percentile(0.0), "0");
        assert_eq!(format_percentile(100.0), "100");
    }

    #[test]
    fn failed_and_rejected() {
        let st = CommandStats::default();
        let mut p = Pending::default();
        let set = crate::cmdtable::lookup(b"SET").unwrap();
        p.begin();
        p.call(slot(set, None), 1500);
        p.error(b"WRONGTYPE x");
        p.call(slot(set, None), 2500);
        p.reject(slot(set, None));
        st.flush(&mut p);
        let mut o = String::new();
        st.commandstats(&mut o);
        assert_eq!(
            o,
            "cmdstat_set:calls=2,usec=4,usec_per_call=2.00,rejected_calls=1,failed_calls=1\r\n"
        );
        let mut e = String::new();
        st.errorstats(&mut e);
        assert_eq!(e, "errorstat_WRONGTYPE:count=1\r\n");
        assert_eq!(st.total_error_replies(), 1);
        st.reset();
        let mut o = String::new();
        st.commandstats(&mut o);
        assert!(o.is_empty());
    }
}
