//! `augur tenants --addr HOST:PORT`: a live per-tenant table of a running server (like
//! `top`), from TENANT LIST / TENANT INFO, and each tenant's current miss-ratio curves
//! written as CSV and SVG with the same code `augur mrc` uses (`--csv DIR`, `--svg DIR`).
//!
//! The hit ratio column is over the refresh period (from the change in hits and misses
//! between two polls), so it moves with the workload as `top`'s CPU column does.
//! IV-MISS and IV-MODEL are the profiler's last interval: the miss ratio observed in it
//! and the model's figure for it (TENANT INFO `observed_miss_ratio`, `model_miss_ratio`),
//! side by side so that one can see whether the curves describe the cache. RATE is the
//! profiler's sampling rate now (TENANT INFO `sample_rate`): under load the profiler's
//! CPU budget (`tenant-profiler-cpu`) may have lowered it, and the curves rest on fewer
//! keys.

use anyhow::{bail, Context, Result};
use augur_mrc::curve::{Curve, Point, SizeUnit};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::cmd_mrc::{curves_csv, plot_svg};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server, HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub addr: String,
    /// User to log in as (the `default` user sees every tenant; others see themselves).
    #[arg(long)]
    pub user: Option<String>,
    /// Password (of `--user`, or the server's requirepass).
    #[arg(long)]
    pub pass: Option<String>,
    /// Seconds between refreshes.
    #[arg(long, default_value_t = 2.0)]
    pub interval: f64,
    /// Print the table this many times, then exit (0 = until interrupted).
    #[arg(long, default_value_t = 0)]
    pub iterations: u64,
    /// Print one table and exit (same as `--iterations 1`).
    #[arg(long)]
    pub once: bool,
    /// Write each tenant's curves (every profiled K and the merged one) to
    /// DIR/TENANT.csv, in `augur mrc`'s CSV format, at every refresh.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Plot each tenant's curves to DIR/TENANT.svg at every refresh.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Points per curve in the CSV/SVG (TENANT MRC ... POINTS n).
    #[arg(long, default_value_t = 100)]
    pub points: usize,
}

type Info = HashMap<String, String>;

fn connect(args: &Args) -> Result<redis::Connection> {
    let url = match (&args.user, &args.pass) {
        (Some(u), Some(p)) => format!("redis://{u}:{p}@{}/", args.addr),
        (None, Some(p)) => format!("redis://:{p}@{}/", args.addr),
        (Some(u), None) => format!("redis://{u}@{}/", args.addr),
        (None, None) => format!("redis://{}/", args.addr),
    };
    let client = redis::Client::open(url).context("bad --addr")?;
    client
        .get_connection_with_timeout(Duration::from_secs(5))
        .with_context(|| format!("connecting to {}", args.addr))
}

fn tenant_infos(con: &mut redis::Connection) -> Result<Vec<Info>> {
    let names: Vec<String> = redis::cmd("TENANT")
        .arg("LIST")
        .query(con)
        .context("TENANT LIST")?;
    let mut out = Vec::new();
    for n in names {
        let info: Info = redis::cmd("TENANT")
            .arg("INFO")
            .arg(&n)
            .query(con)
            .with_context(|| format!("TENANT INFO {n}"))?;
        out.push(info);
    }
    Ok(out)
}

fn num(info: &Info, k: &str) -> Option<f64> {
    info.get(k).and_then(|v| v.parse().ok())
}

/// Bytes with a binary unit, 4 significant characters or so.
fn bytes(v: Option<f64>) -> String {
    let Some(v) = v else { return "-".into() };
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut v = v;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn micros(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(us) if us >= 1000.0 => format!("{:.2}ms", us / 1000.0),
        Some(us) => format!("{us:.0}us"),
    }
}

/// The table for one poll; `prev` holds the last poll's (hits, misses) per tenant.
pub fn table(infos: &[Info], prev: &HashMap<String, (f64, f64)>) -> String {
    let header = [
        "TENANT", "USED", "TARGET", "MAXMEM", "K", "KEYS", "HIT%", "GET/S", "MISS-LAT", "PENALTY",
        "IV-MISS", "IV-MODEL", "PRED@TGT", "EVICTED", "DROPPED", "RATE",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for i in infos {
        let name = i.get("name").cloned().unwrap_or_default();
        let (h, m) = (
            num(i, "hits").unwrap_or(0.0),
            num(i, "misses").unwrap_or(0.0),
        );
        let period_hit = match prev.get(&name) {
            Some(&(ph, pm)) if h + m > ph + pm => Some((h - ph) / ((h - ph) + (m - pm))),
            Some(_) => None,
            None if h + m > 0.0 => Some(h / (h + m)),
            None => None,
        };
        let maxmem = num(i, "maxmemory").filter(|&v| v > 0.0);
        rows.push(vec![
            name,
            bytes(num(i, "used_memory")),
            bytes(num(i, "target")),
            maxmem.map_or("-".into(), |v| bytes(Some(v))),
            i.get("k").cloned().unwrap_or_default(),
            i.get("keys").cloned().unwrap_or_default(),
            ratio(period_hit),
            num(i, "access_rate").map_or("-".into(), |v| format!("{v:.0}")),
            micros(num(i, "miss_latency_us")),
            micros(num(i, "miss_penalty_us")),
            ratio(num(i, "observed_miss_ratio")),
            ratio(num(i, "model_miss_ratio")),
            ratio(num(i, "predicted_miss_ratio_at_target")),
            i.get("evicted_keys").cloned().unwrap_or_default(),
            i.get("dropped_samples").cloned().unwrap_or_default(),
            // The profiler's sampling rate now (the CPU budget may have lowered it).
            i.get("sample_rate").cloned().unwrap_or_default(),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                if c == 0 {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A tenant's curves from TENANT MRC: one per profiled K, then the merged one.
fn tenant_curves(con: &mut redis::Connection, name: &str, points: usize) -> Result<Vec<Curve>> {
    let ks: HashMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("tenant-k-set")
        .query(con)?;
    let ks: Vec<u32> = ks
        .get("tenant-k-set")
        .map(|s| s.split(',').filter_map(|k| k.trim().parse().ok()).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    let fetch = |con: &mut redis::Connection, which: String| -> Result<Vec<Point>> {
        let pts: Vec<(String, String)> = redis::cmd("TENANT")
            .arg("MRC")
            .arg(name)
            .arg(which)
            .arg("POINTS")
            .arg(points)
            .query(con)?;
        Ok(pts
            .into_iter()
            .filter_map(|(s, m)| {
                Some(Point {
                    size: s.parse().ok()?,
                    miss_ratio: m.parse().ok()?,
                })
            })
            .collect())
    };
    for k in ks {
        let pts = fetch(con, k.to_string())?;
        if !pts.is_empty() {
            out.push(Curve::new("krr", Some(k), SizeUnit::Bytes, pts));
        }
    }
    let merged = fetch(con, "merged".into())?;
    if !merged.is_empty() {
        out.push(Curve::new("krr-merged", None, SizeUnit::Bytes, merged));
    }
    Ok(out)
}

/// A file name for a tenant: its name with anything but [A-Za-z0-9._-] replaced.
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_curves(con: &mut redis::Connection, args: &Args, infos: &[Info]) -> Result<()> {
    for i in infos {
        let Some(name) = i.get("name") else { continue };
        let curves = tenant_curves(con, name, args.points)?;
        if curves.is_empty() {
            continue;
        }
        if let Some(dir) = &args.csv {
            std::fs::create_dir_all(dir)?;
            let p = dir.join(format!("{}.csv", file_stem(name)));
            std::fs::write(&p, curves_csv(&curves)?)
                .with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(dir) = &args.svg {
            std::fs::create_dir_all(dir)?;
            let p = dir.join(format!("{}.svg", file_stem(name)));
            let title = format!("tenant {name}: online KRR (bytes)");
            std::fs::write(&p, plot_svg(&curves, &title))
                .with_context(|| format!("writing {}", p.display()))?;
        }
    }
    Ok(())
}

pub fn run(args: Args) -> Result<()> {
    if !(args.interval > 0.0 && args.interval.is_finite()) {
        bail!("--interval must be a positive number of seconds");
    }
    if args.points == 0 || args.points > 10_000 {
        bail!("--points must be between 1 and 10000");
    }
    let iterations = if args.once { 1 } else { args.iterations };
    let mut con = connect(&args)?;
    let live = std::io::stdout().is_terminal() && iterations != 1;
    let mut prev: HashMap<String, (f64, f64)> = HashMap::new();
    let mut n = 0u64;
    loop {
        let infos = tenant_infos(&mut con)?;
        let mut out = String::new();
        if live {
            out.push_str("\x1b[2J\x1b[H");
        }
        out.push_str(&format!("augur tenants @ {}\n", args.addr));
        out.push_str(&table(&infos, &prev));
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(out.as_bytes())?;
        stdout.flush()?;
        drop(stdout);
        if args.csv.is_some() || args.svg.is_some() {
            write_curves(&mut con, &args, &infos)?;
        }
        prev = infos
            .iter()
            .filter_map(|i| {
                Some((
                    i.get("name")?.clone(),
                    (
                        num(i, "hits").unwrap_or(0.0),
                        num(i, "misses").unwrap_or(0.0),
                    ),
                ))
            })
            .collect();
        n += 1;
        if iterations > 0 && n >= iterations {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs_f64(args.interval));
        if !live {
            println!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_hit_ratio_is_over_the_period() {
        let info: Info = [
            ("name", "app1"),
            ("hits", "150"),
            ("misses", "50"),
            ("used_memory", "2097152"),
            ("target", "0"),
            ("maxmemory", "0"),
            ("k", "5"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let t = table(std::slice::from_ref(&info), &HashMap::new());
        assert!(t.contains("75.0%"), "{t}");
        assert!(t.contains("2.0M"), "{t}");
        let prev = HashMap::from([("app1".to_string(), (100.0, 0.0))]);
        let t = table(&[info], &prev);
        assert!(t.contains("50.0%"), "{t}");
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("../a b"), ".._a_b");
    }
}
