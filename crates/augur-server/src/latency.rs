//! The latency monitor: LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR over the
//! events that took at least `latency-monitor-threshold` milliseconds (0: off). Mirrors
//! Redis 7.0's latency.c: each event keeps a ring of its last 160 samples, one per
//! second (a second's sample is its worst latency), and its all-time maximum.
//!
//! Events Augur records (Redis's names, where Redis records them):
//! - `command` / `fast-command`: a command's run time (server.c `call()`; `fast-command`
//!   for commands flagged `fast`), a command run by EXEC or a script included;
//! - `expire-cycle`: one active-expiry cycle over every shard (expire.c);
//! - `eviction-cycle`: the evictions a command that does not allocate needed before it
//!   ran (evict.c's `performEvictions`, here `Store::evict_before_command`); a write
//!   evicts for itself under its shard's lock, so its evictions are in its `command`
//!   time.
//!
//! Redis's persistence and fork events (`fork`, `aof-*`, `rdb-*`) have no counterpart:
//! Augur is a cache with no disk. LATENCY HISTOGRAM reads the per-command histograms of
//! `crate::stats` (INFO latencystats).
//!
//! **Tenants.** An event carries no key, value or command argument, so, like INFO
//! commandstats, the monitor is the server's and every client sees it.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

/// LATENCY_TS_LEN: samples kept per event.
const TS_LEN: usize = 160;
/// LATENCY_GRAPH_COLS.
const GRAPH_COLS: usize = 80;

#[derive(Clone, Copy, Default)]
struct Sample {
    /// Unix seconds; 0: an empty slot.
    time: u64,
    latency_ms: u64,
}

struct Series {
    /// Where the next sample goes.
    idx: usize,
    max: u64,
    samples: [Sample; TS_LEN],
}

impl Series {
    fn new() -> Self {
        Series {
            idx: 0,
            max: 0,
            samples: [Sample::default(); TS_LEN],
        }
    }

    /// The samples held, oldest first.
    fn ordered(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..TS_LEN)
            .map(move |j| self.samples[(self.idx + j) % TS_LEN])
            .filter(|s| s.time != 0)
    }

    fn last(&self) -> Sample {
        self.samples[(self.idx + TS_LEN - 1) % TS_LEN]
    }
}

/// The server's latency monitor (one per [`crate::state::Shared`]).
#[derive(Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in ms; 0: off.
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<&'static str, Series>>,
}

/// What LATENCY DOCTOR needs of the rest of the configuration.
pub struct DoctorContext {
    /// `slowlog-log-slower-than` (µs; negative: off).
    pub slowlog_slower_than_us: i64,
    pub hz: u32,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl LatencyMonitor {
    pub fn set_threshold_ms(&self, ms: u64) {
        self.threshold_ms.store(ms, Relaxed);
    }

    /// Whether the monitor is on (the request path's check before it times anything
    /// it would not time otherwise).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.threshold_ms.load(Relaxed) != 0
    }

    /// latencyAddSampleIfNeeded: records `latency_ms` for `event` when the monitor is
    /// on and it is at least the threshold.
    #[inline]
    pub fn add_if_needed(&self, event: &'static str, latency_ms: u64) {
        let t = self.threshold_ms.load(Relaxed);
        if t != 0 && latency_ms >= t {
            self.add(event, latency_ms, unix_now());
        }
    }

    /// latencyAddSample: a second's sample keeps the worst latency of that second.
    fn add(&self, event: &'static str, latency_ms: u64, now: u64) {
        let mut events = self.events.lock();
        let ts = events.entry(event).or_insert_with(Series::new);
        ts.max = ts.max.max(latency_ms);
        let prev = (ts.idx + TS_LEN - 1) % TS_LEN;
        if ts.samples[prev].time == now {
            let p = &mut ts.samples[prev];
            p.latency_ms = p.latency_ms.max(latency_ms);
            return;
        }
        ts.samples[ts.idx] = Sample {
            time: now,
            latency_ms,
        };
        ts.idx = (ts.idx + 1) % TS_LEN;
    }

    /// LATENCY LATEST: (event, time of its last sample, that latency, all-time max).
    pub fn latest(&self) -> Vec<(&'static str, u64, u64, u64)> {
        self.events
            .lock()
            .iter()
            .map(|(name, ts)| {
                let last = ts.last();
                (*name, last.time, last.latency_ms, ts.max)
            })
            .collect()
    }

    /// LATENCY HISTORY: (time, latency) oldest first; empty for an unknown event.
    pub fn history(&self, event: &[u8]) -> Vec<(u64, u64)> {
        let events = self.events.lock();
        series(&events, event)
            .map(|(_, ts)| ts.ordered().map(|s| (s.time, s.latency_ms)).collect())
            .unwrap_or_default()
    }

    /// LATENCY RESET: forgets `event` (case-insensitive), or every event; how many.
    pub fn reset(&self, event: Option<&[u8]>) -> usize {
        let mut events = self.events.lock();
        match event {
            None => {
                let n = events.len();
                events.clear();
                n
            }
            Some(e) => {
                let before = events.len();
                events.retain(|n, _| !n.as_bytes().eq_ignore_ascii_case(e));
                before - events.len()
            }
        }
    }

    /// LATENCY GRAPH: latencyCommandGenSparkeline's text, or None for an unknown event.
    pub fn graph(&self, event: &[u8]) -> Option<String> {
        let events = self.events.lock();
        let (name, ts) = series(&events, event)?;
        Some(graph_text(name, ts, unix_now()))
    }

    /// LATENCY DOCTOR: createLatencyReport's analysis, with the advice that applies to
    /// Augur (Redis's fork, AOF and disk advice has no event here to trigger it).
    pub fn doctor(&self, ctx: &DoctorContext) -> String {
        let events = self.events.lock();
        let threshold = self.threshold_ms.load(Relaxed);
        if events.is_empty() && threshold == 0 {
            return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Augur instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n".into();
        }
        let now = unix_now();
        let mut report = String::new();
        let mut advise = Advice::default();
        for (num, (name, ts)) in events.iter().enumerate() {
            if num == 0 {
                report.push_str("Dave, I have observed latency spikes in this Augur instance. You don't mind talking about it, do you Dave?\n\n");
            }
            let ls = analyze(ts, now);
            let _ = write!(
                report,
                "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
                num + 1,
                name,
                ls.samples,
                ls.avg,
                ls.mad,
                ls.period as f64 / ls.samples.max(1) as f64,
                ts.max
            );
            match *name {
                "command" => {
                    if ctx.slowlog_slower_than_us < 0 {
                        advise.slowlog_enable = true;
                    } else if ctx.slowlog_slower_than_us as u64 / 1000 > threshold {
                        advise.slowlog_tune = true;
                    }
                    advise.slowlog_inspect = true;
                    advise.large_objects = true;
                }
                "fast-command" => advise.scheduler = true,
                "expire-cycle" => {
                    advise.hz = true;
                    advise.large_objects = true;
                }
                "eviction-cycle" => advise.mass_eviction = true,
                _ => {}
            }
            report.push('\n');
        }
        let any_advice = advise != Advice::default();
        if events.is_empty() {
            report.push_str("Dave, no latency spike was observed during the lifetime of this Augur instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
            return report;
        }
        if !any_advice {
            report.push_str(
                "\nWhile there are latency events logged, I'm not able to suggest any easy fix.\n",
            );
            return report;
        }
        report.push_str("\nI have a few advices for you:\n\n");
        if advise.slowlog_enable {
            let _ = writeln!(report, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log feature using the command 'CONFIG SET slowlog-log-slower-than {}'. If the Slow log is disabled the server is not able to log slow commands execution for you.", threshold * 1000);
        }
        if advise.slowlog_tune {
            let _ = writeln!(report, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {}'.", threshold * 1000);
        }
        if advise.slowlog_inspect {
            report.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        }
        if advise.scheduler {
            report.push_str("- The system is slow to execute code paths not containing system calls. This usually means the system does not provide the server CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for the cache if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n");
        }
        if advise.hz && ctx.hz < 100 {
            report.push_str("- In order to make the keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
        }
        if advise.large_objects {
            report.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
        if advise.mass_eviction {
            report.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, or RESTORE, may create sudden memory pressure forcing the server to block trying to evict keys. \n");
        }
        report
    }
}

/// The series of `event` (an exact name, as Redis's dict lookup).
fn series<'a>(
    events: &'a BTreeMap<&'static str, Series>,
    event: &[u8],
) -> Option<(&'static str, &'a Series)> {
    let name = std::str::from_utf8(event).ok()?;
    events.get_key_value(name).map(|(n, ts)| (*n, ts))
}

#[derive(Default, PartialEq)]
struct Advice {
    slowlog_enable: bool,
    slowlog_tune: bool,
    slowlog_inspect: bool,
    scheduler: bool,
    hz: bool,
    large_objects: bool,
    mass_eviction: bool,
}

/// analyzeLatencyForEvent's figures (integer ms, as Redis computes them).
struct Stats {
    samples: u64,
    avg: u64,
    mad: u64,
    /// Seconds since the oldest sample (at least 1).
    period: u64,
}

fn analyze(ts: &Series, now: u64) -> Stats {
    let held: Vec<Sample> = ts.samples.iter().copied().filter(|s| s.time != 0).collect();
    let n = held.len() as u64;
    if n == 0 {
        return Stats {
            samples: 0,
            avg: 0,
            mad: 0,
            period: 0,
        };
    }
    let avg = held.iter().map(|s| s.latency_ms).sum::<u64>() / n;
    let oldest = held.iter().map(|s| s.time).min().unwrap_or(now);
    let mad = held.iter().map(|s| avg.abs_diff(s.latency_ms)).sum::<u64>() / n;
    Stats {
        samples: n,
        avg,
        mad,
        period: now.saturating_sub(oldest).max(1),
    }
}

/// The graph of one event: a header, a rule, then the samples as a filled sparkline
/// four rows high with "how long ago" labels written downwards under each column.
fn graph_text(name: &str, ts: &Series, now: u64) -> String {
    let samples: Vec<(f64, String)> = ts
        .ordered()
        .map(|s| {
            let ago = now.saturating_sub(s.time);
            let label = if ago < 60 {
                format!("{ago}s")
            } else if ago < 3600 {
                format!("{}m", ago / 60)
            } else if ago < 86_400 {
                format!("{}h", ago / 3600)
            } else {
                format!("{}d", ago / 86_400)
            };
            (s.latency_ms as f64, label)
        })
        .collect();
    let lat = || samples.iter().map(|s| s.0 as u64);
    let (high, low) = (lat().max().unwrap_or(0), lat().min().unwrap_or(0));
    let mut out = format!(
        "{name} - high {high} ms, low {low} ms (all time high {} ms)\n",
        ts.max
    );
    out.push_str(&"-".repeat(GRAPH_COLS));
    out.push('\n');
    sparkline(&mut out, &samples, GRAPH_COLS, 4);
    out
}

/// sparkline.c's filled rendering (`SPARKLINE_FILL`), `columns` samples per block:
/// each sample's height is `(value - min) / (max - min)` of `rows * 3` steps, drawn
/// with `_o#` (the top character of a column) over `|` (the ones below it); then, if
/// any sample has a label, a blank line and the labels, one character per row.
fn sparkline(out: &mut String, samples: &[(f64, String)], columns: usize, rows: usize) {
    const FILL: [u8; 3] = *b"_o#";
    let steps = FILL.len() * rows;
    let (min, max) = samples
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), s| {
            (a.min(s.0), b.max(s.0))
        });
    let span = if max - min == 0.0 { 1.0 } else { max - min };
    let has_labels = samples.iter().any(|s| !s.1.is_empty());
    for (block, chunk) in samples.chunks(columns).enumerate() {
        if block > 0 {
            out.push('\n');
        }
        let step_of = |v: f64| -> usize {
            let step = ((v - min) * steps as f64 / span) as i64;
            step.clamp(0, steps as i64 - 1) as usize
        };
        for row in 0..rows {
            let line: String = chunk
                .iter()
                .map(|s| {
                    let idx = step_of(s.0) as i64 - ((rows - row - 1) * FILL.len()) as i64;
                    if (0..FILL.len() as i64).contains(&idx) {
                        FILL[idx as usize] as char
                    } else if idx >= FILL.len() as i64 {
                        '|'
                    } else {
                        ' '
                    }
                })
                .collect();
            out.push_str(&line);
            out.push('\n');
        }
        if !has_labels {
            continue;
        }
        out.push_str(&" ".repeat(chunk.len()));
        out.push('\n');
        let longest = chunk.iter().map(|s| s.1.len()).max().unwrap_or(0);
        for i in 0..longest {
            let line: String = chunk
                .iter()
                .map(|s| s.1.as_bytes().get(i).map_or(' ', |&b| b as char))
                .collect();
            out.push_str(&line);
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_keeps_its_worst_sample_and_the_ring_its_last_160() {
        let m = LatencyMonitor::default();
        m.set_threshold_ms(10);
        m.add("command", 30, 1000);
        m.add("command", 50, 1000);
        m.add("command", 20, 1000);
        m.add("command", 40, 1001);
        assert_eq!(m.history(b"command"), [(1000, 50), (1001, 40)]);
        assert_eq!(m.latest(), [("command", 1001, 40, 50)]);
        for t in 0..200 {
            m.add("command", 15, 2000 + t);
        }
        let h = m.history(b"command");
        assert_eq!(h.len(), TS_LEN);
        assert_eq!(h[0], (2040, 15));
        assert_eq!(h[TS_LEN - 1], (2199, 15));
        assert_eq!(m.latest(), [("command", 2199, 15, 50)]);
        assert!(m.history(b"blabla").is_empty());
        assert_eq!(m.reset(Some(b"blabla")), 0);
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert!(m.latest().is_empty());
    }

    #[test]
    fn samples_under_the_threshold_or_with_the_monitor_off_are_not_kept() {
        let m = LatencyMonitor::default();
        m.add_if_needed("command", 1000);
        assert!(m.latest().is_empty());
        m.set_threshold_ms(100);
        m.add_if_needed("command", 99);
        assert!(m.latest().is_empty());
        m.add_if_needed("command", 100);
        assert_eq!(m.latest().len(), 1);
    }

    #[test]
    fn the_graph_draws_each_sample_as_a_filled_column() {
        let m = LatencyMonitor::default();
        m.set_threshold_ms(1);
        let now = unix_now();
        m.add("command", 100, now - 3);
        m.add("command", 200, now - 2);
        m.add("command", 400, now - 1);
        let g = m.graph(b"command").unwrap();
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(
            lines[0],
            "command - high 400 ms, low 100 ms (all time high 400 ms)"
        );
        assert_eq!(lines[1], "-".repeat(80));
        // 12 steps: 100 -> 0 (the bottom `_`), 200 -> 4 (second row `o`... `|` under),
        // 400 -> 11 (the top row `#`, `|` below).
        assert_eq!(&lines[2..6], ["  #", "  |", " o|", "_||"]);
        assert_eq!(lines[6], "   ");
        assert_eq!(&lines[7..9], ["321", "sss"]);
        assert!(m.graph(b"nothing").is_none());
    }

    #[test]
    fn the_doctor_reports_events_and_advice() {
        let m = LatencyMonitor::default();
        let ctx = DoctorContext {
            slowlog_slower_than_us: 10_000,
            hz: 10,
        };
        assert!(m.doctor(&ctx).starts_with("I'm sorry, Dave"));
        m.set_threshold_ms(5);
        assert!(m.doctor(&ctx).starts_with("Dave, no latency spike"));
        let now = unix_now();
        m.add("command", 10, now - 10);
        m.add("command", 30, now);
        m.add("expire-cycle", 7, now);
        let r = m.doctor(&ctx);
        assert!(r.contains("1. command: 2 latency spikes (average 20ms, mean deviation 10ms, period 5.00 sec). Worst all time event 30ms."), "{r}");
        assert!(r.contains("2. expire-cycle: 1 latency spikes"), "{r}");
        assert!(
            r.contains("'CONFIG SET slowlog-log-slower-than 5000'"),
            "{r}"
        );
        assert!(r.contains("'CONFIG SET hz 100'"), "{r}");
    }
}
