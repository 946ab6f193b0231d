//! `augur sim`: run exact cache simulators (the MRC models' ground truth, `augur-sim`)
//! on a trace at one or more cache sizes, all (policy, size) pairs in parallel.
//!
//! GETs and SETs are references (looked up, filled on a miss: a look-aside cache);
//! a DELETE removes its key from the simulated cache, so the key's next reference
//! misses, and is not counted as a request (nor in hits, bytes or the working set).
//! These are the semantics of the MRC models (`augur mrc`).
//!
//! ```text
//! augur sim traces/arc_p3.oracleGeneral.bin.zst --policy lru,redis-lru:5,klru:5 --sizes 10%,25%,50%
//! augur sim cloudphysics.oracleGeneral.bin.zst --policy lru --sizes 64mb,256mb --csv
//! augur sim traces/arc_p3.oracleGeneral.bin.zst --policy auto,lhd,redis-lru:5 --sizes 10%
//! ```
//!
//! `--policy auto` runs the server's `maxmemory-policy auto` chooser
//! (`augur_server::autopolicy`, one implementation): a cache that switches between
//! `redis-lru:K` and `lhd` live, on the choice of miniature caches of every candidate
//! fed a spatial sample of the trace. Two knobs stand in for the server's: the sample
//! rate (`--auto-rate`; default `8192 / objects` clamped to [0.01, 1], so that even a
//! small trace gives the miniatures thousands of keys: the server samples at
//! `tenant-sample-rate`, 0.01, over far larger keyspaces), and the interval in
//! requests (`--auto-interval`; default a tenth of the trace clamped to
//! [10 000, 5 000 000], the top being DLRU's 5M: the shared traces are 0.1-5M
//! requests, shorter than one DLRU interval).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use augur_server::autopolicy::{self, AutoSim};
use augur_sim::{
    simulate_cache, simulate_with_progress, working_set, PolicySimulation, PolicySpec, SimResult,
    Unit, WorkingSet,
};
use rayon::prelude::*;
use serde::Serialize;

use crate::trace_input;

#[derive(clap::Args)]
pub struct Args {
    /// Trace file (oracleGeneral, CSV or text; zstd-compressed or not).
    pub trace: PathBuf,

    /// Trace format when it cannot be told from the file name: oracle, csv[:SPEC],
    /// tsv[:SPEC], txt[:SPEC] (see augur-trace).
    #[arg(long)]
    pub format: Option<String>,

    /// Eviction policies: lru, fifo, random, redis-lru:K (Redis's 16-entry pool,
    /// alias klru-pool:K), klru:K (oldest of K fresh samples, KRR Eq. 1), lhd[:A]
    /// (least hit density among A samples, default 64), s3fifo (S3-FIFO, SOSP'23) and
    /// s3fifo:K (its queues sampled: the main queue's oldest of K samples, as a store
    /// that evicts by sampling would run it). Repeatable or comma-separated.
    /// `auto` runs `maxmemory-policy auto`'s chooser (see the module documentation).
    #[arg(long = "policy", short = 'p', value_delimiter = ',', required = true)]
    pub policies: Vec<SimPolicy>,

    /// `--policy auto`: spatial sampling rate of the miniature caches (default
    /// 8192 / objects, clamped to [0.01, 1]).
    #[arg(long)]
    pub auto_rate: Option<f64>,

    /// `--policy auto`: requests per decision interval (default a tenth of the trace,
    /// clamped to [10 000, 5 000 000]).
    #[arg(long)]
    pub auto_interval: Option<u64>,

    /// `--policy auto`: print every interval's decision to stderr (predicted misses
    /// per candidate, the least-cost one, the policy run next).
    #[arg(long)]
    pub auto_verbose: bool,

    /// `--policy auto`: the policy run until the chooser has evidence (redis-lru:K,
    /// lhd:A or s3fifo:K; default the server's, `augur_server::autopolicy::INITIAL_POLICY`).
    #[arg(long)]
    pub auto_initial: Option<PolicySpec>,

    /// Cache sizes: N% of the working set (objects, or bytes with --bytes); a plain
    /// number of objects (bytes with --bytes); or a byte size such as 512kb, 64mb,
    /// 1.5gb (powers of 1024), which implies --bytes. Repeatable or comma-separated.
    /// When every size is absolute and there is one simulation (or --threads 1), the
    /// trace is streamed, never held in memory (traces larger than RAM work), and its
    /// working set is not counted (the "of ws" column is "-").
    #[arg(long = "sizes", short = 's', value_delimiter = ',', required = true)]
    pub sizes: Vec<String>,

    /// Count capacity in bytes (object sizes from the trace) instead of objects.
    #[arg(long)]
    pub bytes: bool,

    /// Seed of the sampling policies' random generators (same seed, same result).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,

    /// Print JSON (one array of results) instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,

    /// Print CSV instead of a table.
    #[arg(long)]
    pub csv: bool,
}

/// `auto`'s run: (decision intervals, family switches, the policy at the end).
type AutoSummary = (u64, u64, PolicySpec);

/// A policy of `--policy`: a fixed one, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SimPolicy {
    Fixed(PolicySpec),
    Auto,
}

impl std::str::FromStr for SimPolicy {
    type Err = augur_sim::ParsePolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("auto") {
            Ok(SimPolicy::Auto)
        } else {
            s.parse().map(SimPolicy::Fixed)
        }
    }
}

/// `--policy auto`'s sample rate and interval for a trace (see the module
/// documentation).
fn auto_params(args: &Args, ws: &WorkingSet, requests: u64) -> (f64, u64) {
    let rate = args
        .auto_rate
        .unwrap_or_else(|| (8192.0 / ws.objects.max(1) as f64).clamp(0.01, 1.0))
        .clamp(1.0 / (1u64 << 24) as f64, 1.0);
    let interval = args
        .auto_interval
        .unwrap_or_else(|| (requests / 10).clamp(1_000, 5_000_000))
        .max(1);
    (rate, interval)
}

/// A requested cache size before the working set is known.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SizeSpec {
    /// Percent of the working set in the run's unit.
    Percent(f64),
    /// A bare count: objects, or bytes with --bytes.
    Count(u64),
    /// A byte size with a unit suffix (forces byte mode).
    Bytes(u64),
}

fn parse_size(s: &str) -> Result<SizeSpec> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p
            .trim()
            .parse()
            .with_context(|| format!("bad percentage {s:?}"))?;
        if !(p.is_finite() && p >= 0.0) {
            bail!("bad percentage {s:?}");
        }
        return Ok(SizeSpec::Percent(p));
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok(SizeSpec::Count(n));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .with_context(|| format!("bad size {s:?}"))?;
    let (num, suffix) = t.split_at(split);
    let mult: u64 = match suffix.trim() {
        "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => bail!("bad size {s:?}: expected N%, N, or N with b/kb/mb/gb/tb"),
    };
    let n: f64 = num.parse().with_context(|| format!("bad size {s:?}"))?;
    if !(n.is_finite() && n >= 0.0) {
        bail!("bad size {s:?}");
    }
    Ok(SizeSpec::Bytes((n * mult as f64).round() as u64))
}

/// The run's unit: bytes with --bytes or when any size has a byte suffix. A bare count
/// next to a byte-suffixed size without --bytes is refused as ambiguous.
fn choose_unit(sizes: &[SizeSpec], bytes_flag: bool) -> Result<Unit> {
    let any_bytes = sizes.iter().any(|s| matches!(s, SizeSpec::Bytes(_)));
    if bytes_flag || !any_bytes {
        return Ok(if bytes_flag {
            Unit::Bytes
        } else {
            Unit::Objects
        });
    }
    if sizes.iter().any(|s| matches!(s, SizeSpec::Count(_))) {
        bail!("sizes mix byte sizes (e.g. 64mb) with bare counts: add --bytes to read the counts as bytes, or give them a unit");
    }
    Ok(Unit::Bytes)
}

/// Capacity in `unit`. Percentages are floored, as `ws * p / 100` in integers.
fn resolve(size: SizeSpec, ws: &WorkingSet, unit: Unit) -> u64 {
    match size {
        SizeSpec::Percent(p) => (ws.in_unit(unit) as f64 * p / 100.0).floor() as u64,
        SizeSpec::Count(n) | SizeSpec::Bytes(n) => n,
    }
}

#[derive(Serialize)]
struct Row {
    policy: String,
    unit: String,
    size: u64,
    /// Size as a fraction of the working set in the same unit; absent when the trace
    /// was streamed (absolute sizes: the working set is not counted).
    ws_fraction: Option<f64>,
    requests: u64,
    hits: u64,
    miss_ratio: f64,
    byte_miss_ratio: f64,
    seconds: f64,
    requests_per_sec: f64,
    /// `auto`: decision intervals, family switches (K-LRU <-> LHD) and the policy run
    /// at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    intervals: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    switches: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    final_policy: Option<String>,
}

impl Row {
    fn new(r: &SimResult, ws: Option<&WorkingSet>, seconds: f64) -> Row {
        Row {
            policy: r.policy.to_string(),
            unit: r.unit.to_string(),
            size: r.size,
            ws_fraction: ws.map(|ws| match ws.in_unit(r.unit) {
                0 => 0.0,
                wsu => r.size as f64 / wsu as f64,
            }),
            requests: r.requests,
            hits: r.hits,
            miss_ratio: r.miss_ratio,
            byte_miss_ratio: r.byte_miss_ratio,
            seconds,
            requests_per_sec: if seconds > 0.0 {
                r.requests as f64 / seconds
            } else {
                0.0
            },
            intervals: None,
            switches: None,
            final_policy: None,
        }
    }
}

pub fn run(args: Args) -> Result<()> {
    let specs: Vec<SizeSpec> = args
        .sizes
        .iter()
        .map(|s| parse_size(s))
        .collect::<Result<_>>()?;
    let unit = choose_unit(&specs, args.bytes)?;
    if let Some(sizes) = streamable_sizes(&args, &specs) {
        let rows = run_streaming(&args, &sizes, unit)?;
        return print_rows(&args, &rows);
    }

    let t0 = Instant::now();
    let (trace, deletes) = trace_input::load_for_simulation(&args.trace, args.format.as_deref())?;
    let ws = working_set(&trace);
    let load_secs = t0.elapsed().as_secs_f64();
    if deletes > 0 {
        eprintln!(
            "trace has {deletes} DELETE requests; they remove the key and are not counted as requests"
        );
    }
    eprintln!(
        "{}: {} requests, {} objects, {} bytes in the working set (loaded in {:.2}s)",
        args.trace.display(),
        trace.len() as u64 - deletes,
        ws.objects,
        ws.bytes,
        load_secs
    );

    let sizes: Vec<u64> = specs.iter().map(|&s| resolve(s, &ws, unit)).collect();
    let jobs: Vec<(SimPolicy, u64)> = args
        .policies
        .iter()
        .flat_map(|&p| sizes.iter().map(move |&s| (p, s)))
        .collect();

    // Progress counts trace entries, DELETEs included.
    let total = jobs.len() as u64 * trace.len() as u64;
    let bar = crate::progress::bar(Some(total), "simulating");

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let wall = Instant::now();
    // One task per (policy, size): costs differ widely, so let work stealing balance.
    let requests = trace.len() as u64 - deletes;
    let (auto_rate, auto_interval) = auto_params(&args, &ws, requests);
    let results: Vec<(SimResult, f64, Option<AutoSummary>)> = pool.install(|| {
        jobs.par_iter()
            .with_max_len(1)
            .map(|&(policy, size)| {
                let t = Instant::now();
                match policy {
                    SimPolicy::Fixed(policy) => {
                        let r = simulate_with_progress(&trace, policy, size, unit, args.seed, &|n| {
                            bar.inc(n)
                        });
                        (r, t.elapsed().as_secs_f64(), None)
                    }
                    SimPolicy::Auto => {
                        let mut sim = AutoSim::starting(
                            args.auto_initial.unwrap_or(autopolicy::INITIAL_POLICY),
                            size,
                            unit,
                            args.seed,
                            auto_rate,
                            auto_interval,
                        );
                        let r = simulate_cache(
                            &mut sim,
                            &trace,
                            autopolicy::INITIAL_POLICY,
                            unit,
                            &|n| bar.inc(n),
                        );
                        if args.auto_verbose {
                            for d in sim.decisions() {
                                let m: Vec<String> = d
                                    .candidates
                                    .iter()
                                    .zip(&d.misses)
                                    .map(|(p, m)| format!("{p}={m:.0}"))
                                    .collect();
                                eprintln!(
                                    "auto size {size} interval {}: keys {} misses {} best {} run {}",
                                    d.interval,
                                    d.distinct_keys,
                                    m.join(" "),
                                    d.best,
                                    d.policy
                                );
                            }
                        }
                        let auto = (sim.decisions().len() as u64, sim.switches(), sim.policy());
                        (r, t.elapsed().as_secs_f64(), Some(auto))
                    }
                }
            })
            .collect()
    });
    bar.finish_and_clear();
    eprintln!(
        "{} simulations in {:.2}s on {} threads",
        results.len(),
        wall.elapsed().as_secs_f64(),
        pool.current_num_threads()
    );

    let rows: Vec<Row> = results
        .iter()
        .map(|(r, s, auto)| {
            let mut row = Row::new(r, Some(&ws), *s);
            if let Some((intervals, switches, last)) = auto {
                row.policy = "auto".into();
                row.intervals = Some(*intervals);
                row.switches = Some(*switches);
                row.final_policy = Some(last.to_string());
            }
            row
        })
        .collect();
    if args.policies.contains(&SimPolicy::Auto) {
        eprintln!("auto: miniature sample rate {auto_rate}, interval {auto_interval} requests");
    }
    print_rows(&args, &rows)
}

/// The sizes, when the run can stream the trace instead of loading it: every size is
/// absolute (no working set needed), no `auto` (its sample rate and interval depend on
/// the working set and the trace's length), and one simulation or one thread (several
/// simulations on several threads run faster over a trace held in memory).
fn streamable_sizes(args: &Args, specs: &[SizeSpec]) -> Option<Vec<u64>> {
    let sizes: Option<Vec<u64>> = specs
        .iter()
        .map(|s| match *s {
            SizeSpec::Percent(_) => None,
            SizeSpec::Count(n) | SizeSpec::Bytes(n) => Some(n),
        })
        .collect();
    let sizes = sizes?;
    let jobs = args.policies.len() * sizes.len();
    let auto = args.policies.contains(&SimPolicy::Auto);
    (!auto && (jobs == 1 || args.threads == Some(1))).then_some(sizes)
}

/// Simulates every (policy, size) while reading the trace, never holding it: memory
/// stays that of the simulators (and, for a small single-segment zstd trace, its
/// decompressed records, at most 64 MiB: `TraceReader::held_whole`), and with
/// `--threads 1` decoding runs on the simulating thread (otherwise a decoder thread
/// reads ahead). Each row's time is the time spent in its simulator, as in the
/// in-memory path.
fn run_streaming(args: &Args, sizes: &[u64], unit: Unit) -> Result<Vec<Row>> {
    // `streamable_sizes` admits no `auto`: every policy here is a fixed one.
    let mut runs: Vec<(PolicySimulation, f64)> = args
        .policies
        .iter()
        .filter_map(|p| match p {
            SimPolicy::Fixed(policy) => Some(*policy),
            SimPolicy::Auto => None,
        })
        .flat_map(|p| sizes.iter().map(move |&s| (p, s)))
        .map(|(p, s)| (PolicySimulation::new(p, s, unit, args.seed), 0.0))
        .collect();
    let bar = crate::progress::bar(None, "simulating");
    let wall = Instant::now();
    let deletes = trace_input::stream_for_simulation(
        &args.trace,
        args.format.as_deref(),
        args.threads == Some(1),
        |chunk| {
            for (run, seconds) in &mut runs {
                let t = Instant::now();
                run.feed(chunk);
                *seconds += t.elapsed().as_secs_f64();
            }
            bar.inc(chunk.len() as u64);
        },
    )?;
    bar.finish_and_clear();
    let results: Vec<(SimResult, f64)> = runs.iter().map(|(r, s)| (r.result(), *s)).collect();
    let requests = results.first().map_or(0, |(r, _)| r.requests);
    if deletes > 0 {
        eprintln!(
            "trace has {deletes} DELETE requests; they remove the key and are not counted as requests"
        );
    }
    eprintln!(
        "{}: {requests} requests streamed (absolute sizes: working set not counted); {} simulations in {:.6}s, reading included",
        args.trace.display(),
        results.len(),
        wall.elapsed().as_secs_f64()
    );
    Ok(results.iter().map(|(r, s)| Row::new(r, None, *s)).collect())
}

fn print_rows(args: &Args, rows: &[Row]) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, rows)?;
        writeln!(out)?;
    } else if args.csv {
        let mut w = csv::Writer::from_writer(out);
        for row in rows {
            w.serialize(row)?;
        }
        w.flush()?;
    } else {
        print_table(&mut out, rows)?;
    }
    Ok(())
}

fn print_table(out: &mut impl Write, rows: &[Row]) -> Result<()> {
    let pw = rows
        .iter()
        .map(|r| r.policy.len())
        .max()
        .unwrap_or(0)
        .max(6);
    writeln!(
        out,
        "{:<pw$}  {:>14} {:>7}  {:>10}  {:>10}  {:>10}  {:>9}",
        "policy", "size", "of ws", "requests", "miss ratio", "byte miss", "Mreq/s"
    )?;
    for r in rows {
        let size = if r.unit == "bytes" {
            human_bytes(r.size)
        } else {
            r.size.to_string()
        };
        let of_ws = r
            .ws_fraction
            .map_or("-".to_string(), |f| format!("{:.1}%", f * 100.0));
        writeln!(
            out,
            "{:<pw$}  {:>14} {:>7}  {:>10}  {:>10.4}  {:>10.4}  {:>9.2}",
            r.policy,
            size,
            of_ws,
            r.requests,
            r.miss_ratio,
            r.byte_miss_ratio,
            r.requests_per_sec / 1e6
        )?;
    }
    Ok(())
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("10%").unwrap(), SizeSpec::Percent(10.0));
        assert_eq!(parse_size(" 12.5% ").unwrap(), SizeSpec::Percent(12.5));
        assert_eq!(parse_size("5000").unwrap(), SizeSpec::Count(5000));
        assert_eq!(parse_size("64mb").unwrap(), SizeSpec::Bytes(64 << 20));
        assert_eq!(parse_size("64KB").unwrap(), SizeSpec::Bytes(64 << 10));
        assert_eq!(parse_size("1.5g").unwrap(), SizeSpec::Bytes(3 << 29));
        assert_eq!(parse_size("100b").unwrap(), SizeSpec::Bytes(100));
        for bad in ["", "%", "-1%", "12xb", "mb", "1.2.3mb"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unit_choice() {
        use SizeSpec::*;
        assert_eq!(
            choose_unit(&[Percent(10.0), Count(5)], false).unwrap(),
            Unit::Objects
        );
        assert_eq!(choose_unit(&[Percent(10.0)], true).unwrap(), Unit::Bytes);
        assert_eq!(
            choose_unit(&[Bytes(1 << 20), Percent(5.0)], false).unwrap(),
            Unit::Bytes
        );
        assert!(choose_unit(&[Bytes(1 << 20), Count(5)], false).is_err());
        assert_eq!(
            choose_unit(&[Bytes(1 << 20), Count(5)], true).unwrap(),
            Unit::Bytes
        );
        let ws = WorkingSet {
            objects: 48974,
            bytes: 1000,
        };
        assert_eq!(resolve(Percent(25.0), &ws, Unit::Objects), 12243);
        assert_eq!(resolve(Percent(50.0), &ws, Unit::Bytes), 500);
    }
}
