//! `augur mrc` (a miss-ratio curve of a trace from one model) and `augur mrc-compare`
//! (a model against the exact simulators that are its ground truth, kRedis §6.3: MAE at
//! 40 cache sizes evenly spaced up to the working set).
//!
//! ```text
//! augur mrc traces/arc_p3.oracleGeneral.bin.zst --model krr --k 1,2,4,8,16 --rate 0.001 \
//!     --out curve.csv --plot curve.svg
//! augur mrc-compare traces/cloudphysics.oracleGeneral.bin.zst --model krr --bytes
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use augur_mrc::curve::{Curve, Point, SizeUnit};
use augur_mrc::krr::{Krr, KrrConfig, SampleAdjust};
use augur_mrc::olken::Olken;
use augur_mrc::MrcModel;
use augur_sim::{simulate_grid, working_set, PolicySpec, Unit, WorkingSet, WorkingSetCounter};
use augur_trace::Op;
use serde::Serialize;

use crate::trace_input;

/// The models `augur mrc` can run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelName {
    /// Exact LRU stack distances (Olken, O(log M) per request).
    Olken,
    /// KRR: probabilistic stack model of K-LRU / Redis's sampled LRU (kRedis §3).
    Krr,
    /// SHARDS: spatially sampled LRU stack distances.
    Shards,
    /// MIMIR: bucketed LRU stack.
    Mimir,
    /// Miniature simulation: scaled-down simulators at a grid of sizes.
    Minisim,
}

/// The trace and model arguments both `augur mrc` and `augur mrc-compare` take.
#[derive(clap::Args)]
pub struct ModelArgs {
    /// Trace file (oracleGeneral, CSV or text; zstd-compressed or not).
    pub trace: PathBuf,

    /// Trace format when it cannot be told from the file name: oracle, csv[:SPEC],
    /// tsv[:SPEC], txt[:SPEC] (see augur-trace), e.g. `csv:op=0,key=1,size=2,header`
    /// for a trace with GET / SET / DELETE operations.
    #[arg(long)]
    pub format: Option<String>,

    /// The model.
    #[arg(long, value_enum, default_value = "krr")]
    pub model: ModelName,

    /// Sampling sizes K (krr, minisim): one curve per K. minisim simulates Redis's
    /// pooled K-LRU (`redis-lru:K`) in miniature for each K.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub k: Vec<u32>,

    /// minisim: the policies to run in miniature instead of `redis-lru:K` for each K,
    /// e.g. `lhd` or `lru,klru:5,lhd` (names as `augur sim --policy`); one curve each.
    #[arg(long = "policy", value_delimiter = ',')]
    pub policies: Vec<PolicySpec>,

    /// Spatial sampling rate R in (0, 1] (krr, shards, minisim); default 1 for krr (every
    /// key), 0.01 for shards and minisim.
    #[arg(long)]
    pub rate: Option<f64>,

    /// Sizes in bytes (object sizes from the trace) instead of objects.
    #[arg(long)]
    pub bytes: bool,

    /// KRR's K' = K^E correction (kRedis §3.1): a number, or `klru` (1.6, calibrated
    /// against plain K-LRU), `redis` (2.0, calibrated against Redis's pooled K-LRU, what
    /// Redis and Augur evict with) or `paper` (1.4).
    #[arg(long, default_value = "klru", value_parser = parse_k_exponent)]
    pub k_exponent: f64,

    /// Run KRR with K itself, without the K' = K^E correction.
    #[arg(long, conflicts_with = "k_exponent")]
    pub no_k_correction: bool,

    /// KRR under spatial sampling (--rate < 1): how sampled misses become miss ratios.
    /// `distinct` (the default: the regression estimator calibrated on the whole
    /// trace's distinct-key count, counted with a 16 KB HyperLogLog sketch, so that the
    /// cold misses are known rather than sampled: at R = 0.01 the lowest error of the
    /// four on every shared trace, see BENCHMARKS.md), `shards` (SHARDS-adj, divide by
    /// the expected sampled references), `regression` (the regression estimator, which
    /// credits the surplus of sampled references as hits or misses the way the hot
    /// sampled keys hit or miss) or `none` (divide by the sampled references).
    #[arg(long, default_value = "distinct", value_parser = sample_adjust_parser())]
    pub sample_adjust: SampleAdjust,

    /// MIMIR: number of buckets B (MIMIR §3; more is more accurate and slower).
    #[arg(long, default_value_t = MIMIR_BUCKETS)]
    pub buckets: usize,

    /// MIMIR: aging policy (§3.3): rounder (O(1)) or stacker (O(N) per aging, closer
    /// to LRU).
    #[arg(long, value_enum, default_value = "rounder")]
    pub aging: AgingArg,

    /// MIMIR: keep the ghosts (the half of the working set beyond the profiled cache) in
    /// this many counting Bloom filters instead of a ghost list (§2.4 "ghost filters":
    /// ~5 bytes a ghost instead of ~40, less accurate: on lirs_multi1 the MAE against
    /// exact LRU is .016 with 3 filters, .007 with the list).
    #[arg(long)]
    pub ghost_filters: Option<usize>,

    /// Seed of the model's (and the simulators') random generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// `--k-exponent`: a positive number or the name of a calibrated exponent.
fn parse_k_exponent(s: &str) -> std::result::Result<f64, String> {
    match s {
        "klru" => Ok(Krr::KLRU_K_EXPONENT),
        "redis" | "redis-lru" => Ok(Krr::REDIS_K_EXPONENT),
        "paper" => Ok(Krr::PAPER_K_EXPONENT),
        _ => match s.parse::<f64>() {
            Ok(e) if e.is_finite() && e > 0.0 => Ok(e),
            _ => Err(format!(
                "expected a positive number or klru, redis, paper; got {s:?}"
            )),
        },
    }
}

/// KRR's [`SampleAdjust`] on the command line, by its own names.
fn sample_adjust_parser() -> impl clap::builder::TypedValueParser<Value = SampleAdjust> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(SampleAdjust::ALL.map(SampleAdjust::name))
        .map(|name: String| SampleAdjust::from_name(&name).expect("one of the possible values"))
}

/// MIMIR's aging policy on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum AgingArg {
    Rounder,
    Stacker,
}

/// False-positive rate the ghost filters are sized for when full.
const GHOST_FILTER_FP_RATE: f64 = 0.01;

impl ModelArgs {
    /// Opens the trace, with `--format` if given, else as told from the file.
    fn open_trace(&self) -> Result<augur_trace::TraceReader> {
        trace_input::open(&self.trace, self.format.as_deref())
    }

    fn unit(&self) -> SizeUnit {
        size_unit(self.bytes)
    }

    fn spec<'a>(&'a self, sizes: &'a [u64], working_set: u64) -> ModelSpec<'a> {
        ModelSpec {
            name: self.model,
            ks: &self.k,
            policies: &self.policies,
            rate: self.rate,
            unit: self.unit(),
            k_exponent: (!self.no_k_correction).then_some(self.k_exponent),
            krr_adjust: self.sample_adjust,
            mimir_buckets: self.buckets,
            mimir_aging: match self.aging {
                AgingArg::Rounder => augur_mrc::mimir::Aging::Rounder,
                AgingArg::Stacker => augur_mrc::mimir::Aging::Stacker,
            },
            mimir_ghosts: match self.ghost_filters {
                Some(f) => augur_mrc::mimir::GhostMode::filters(f, GHOST_FILTER_FP_RATE),
                None => augur_mrc::mimir::GhostMode::List,
            },
            seed: self.seed,
            sizes,
            working_set,
        }
    }
}

#[derive(clap::Args)]
pub struct MrcArgs {
    #[command(flatten)]
    pub common: ModelArgs,

    /// Number of points per curve, evenly spaced over (0, working set].
    #[arg(long, default_value_t = 100)]
    pub points: usize,

    /// Write the curves as CSV (`model,k,size,miss_ratio`) here; stdout if absent.
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// Also print the curves as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// Draw the curves as an SVG plot here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub common: ModelArgs,

    /// Number of simulated cache sizes, evenly spaced up to the working set.
    #[arg(long, default_value_t = 40)]
    pub sizes: usize,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Settings shared by both commands for building a model.
struct ModelSpec<'a> {
    name: ModelName,
    ks: &'a [u32],
    rate: Option<f64>,
    unit: SizeUnit,
    /// KRR's K' = K^e exponent, None for no correction.
    k_exponent: Option<f64>,
    /// KRR's estimator under spatial sampling.
    krr_adjust: SampleAdjust,
    mimir_buckets: usize,
    mimir_aging: augur_mrc::mimir::Aging,
    mimir_ghosts: augur_mrc::mimir::GhostMode,
    seed: u64,
    /// minisim's policies (empty: Redis's pooled K-LRU for each K).
    policies: &'a [PolicySpec],
    /// Full-scale cache sizes (for minisim, which simulates a fixed grid) and the
    /// working set (for MIMIR, which profiles a cache plus ghosts covering it).
    sizes: &'a [u64],
    working_set: u64,
}

impl ModelSpec<'_> {
    /// Whether building the model needs the working set, found by a first pass.
    fn needs_working_set(name: ModelName) -> bool {
        matches!(name, ModelName::Mimir | ModelName::Minisim)
    }
}

/// Default spatial sampling rate of SHARDS and miniature simulation when `--rate` is
/// not given (the SHARDS paper's and DLRU's usual 1%).
const DEFAULT_SAMPLED_RATE: f64 = 0.01;

/// MIMIR's bucket count (the MIMIR paper evaluates B = 100 as its default).
const MIMIR_BUCKETS: usize = 100;

fn build_model(spec: &ModelSpec) -> Result<Box<dyn MrcModel>> {
    if spec.ks.is_empty() || spec.ks.contains(&0) {
        bail!("--k needs one or more K >= 1");
    }
    if let Some(r) = spec.rate {
        if !(r > 0.0 && r <= 1.0) {
            bail!("--rate must be in (0, 1], got {r}");
        }
    }
    Ok(match spec.name {
        ModelName::Olken => {
            if spec.rate.is_some_and(|r| r < 1.0) {
                bail!("olken is exact and does not sample; use --model shards for a sampled LRU curve");
            }
            Box::new(Olken::new(spec.unit))
        }
        ModelName::Krr => Box::new(Krr::new(KrrConfig {
            ks: spec.ks.to_vec(),
            k_exponent: spec.k_exponent,
            rate: spec.rate.unwrap_or(1.0),
            unit: spec.unit,
            seed: spec.seed,
            adjust: spec.krr_adjust,
            ..KrrConfig::default()
        })),
        ModelName::Shards => {
            let rate = spec.rate.unwrap_or(DEFAULT_SAMPLED_RATE);
            Box::new(UnitFilter {
                inner: augur_mrc::shards::Shards::fixed_rate(rate),
                unit: spec.unit,
            })
        }
        ModelName::Mimir => {
            if spec.rate.is_some() {
                bail!("mimir does not sample keys; drop --rate");
            }
            // A cache of half the working set with as many ghosts, so the estimated
            // curve covers the whole working set (MIMIR §2.4).
            if spec.mimir_buckets < 2 {
                bail!("--buckets must be at least 2");
            }
            if let augur_mrc::mimir::GhostMode::Filters { filters: 0, .. } = spec.mimir_ghosts {
                bail!("--ghost-filters must be at least 1");
            }
            let capacity = (spec.working_set / 2).max(1);
            Box::new(augur_mrc::mimir::MimirLru::with_ghost_mode(
                augur_mrc::mimir::MimirConfig {
                    buckets: spec.mimir_buckets,
                    aging: spec.mimir_aging,
                    capacity,
                    ghost_capacity: spec.working_set.saturating_sub(capacity).max(1),
                    unit: spec.unit,
                },
                spec.mimir_ghosts,
            ))
        }
        ModelName::Minisim => {
            // One miniature Redis (pooled K-LRU) per K and size, as DLRU runs them.
            let mut m = augur_mrc::minisim::MiniSim::new(
                spec.rate.unwrap_or(DEFAULT_SAMPLED_RATE),
                spec.unit,
                spec.sizes,
            );
            for (_, policy) in minisim_policies(spec.ks, spec.policies) {
                m.add_spec(policy, spec.seed);
            }
            Box::new(m)
        }
    })
}

/// Keeps only the curves in one unit (SHARDS measures objects and bytes at once).
struct UnitFilter<M> {
    inner: M,
    unit: SizeUnit,
}

impl<M: MrcModel> MrcModel for UnitFilter<M> {
    fn access(&mut self, key: u64, size: u32) {
        self.inner.access(key, size)
    }
    fn delete(&mut self, key: u64) {
        self.inner.delete(key)
    }
    fn curves(&self) -> Vec<Curve> {
        let mut v = self.inner.curves();
        v.retain(|c| c.unit == self.unit);
        v
    }
}

/// `n` whole sizes evenly spaced over (0, max].
fn size_grid(max: u64, n: usize) -> Vec<u64> {
    let n = n.max(1) as u64;
    (1..=n).map(|i| (max * i / n).max(1)).collect()
}

/// A trace read once into memory, for the models that need its working set before
/// they are built (their size grid): decoded in one pass, the working set counted over
/// the requests in memory, then fed from there. 16 bytes a request.
struct LoadedTrace {
    ops: Vec<augur_sim::TraceOp>,
    deletes: u64,
    working_set: WorkingSet,
}

impl LoadedTrace {
    fn load(args: &ModelArgs) -> Result<LoadedTrace> {
        let (ops, deletes) = trace_input::load_for_simulation(&args.trace, args.format.as_deref())?;
        let working_set = working_set(&ops);
        Ok(LoadedTrace {
            ops,
            deletes,
            working_set,
        })
    }

    /// Feeds the requests to `model` as [`feed`] does; returns the same counts.
    fn feed(&self, model: &mut dyn MrcModel, msg: &str) -> (WorkingSet, u64, u64) {
        let pb = crate::progress::bar(Some(self.ops.len() as u64), msg);
        for chunk in self.ops.chunks(1 << 16) {
            for op in chunk {
                if op.delete {
                    model.delete(op.key);
                } else {
                    model.access(op.key, op.size);
                }
            }
            pb.inc(chunk.len() as u64);
        }
        pb.finish_and_clear();
        (self.working_set, self.ops.len() as u64, self.deletes)
    }
}

/// A request's key and size if it is a reference (GET / SET), for the working set.
fn reference(r: &augur_trace::Request) -> Option<(u64, u32)> {
    (r.op != Op::Delete).then_some((r.key, r.size))
}

fn size_unit(bytes: bool) -> SizeUnit {
    if bytes {
        SizeUnit::Bytes
    } else {
        SizeUnit::Objects
    }
}

/// The working set in the curve's unit.
fn in_unit(ws: WorkingSet, unit: SizeUnit) -> u64 {
    match unit {
        SizeUnit::Objects => ws.objects,
        SizeUnit::Bytes => ws.bytes,
    }
}

/// Feeds a trace file to `model`, streaming (decoded on a second thread, see
/// [`augur_trace::TraceReader::for_each_batch`]): GET and SET are references, DELETE
/// removes. The working set is counted in the same pass. Returns it, the number of trace
/// entries and how many were DELETEs.
fn feed(args: &ModelArgs, model: &mut dyn MrcModel, msg: &str) -> Result<(WorkingSet, u64, u64)> {
    let reader = args.open_trace()?;
    let pb = crate::progress::bar(reader.len_hint(), msg);
    let mut fp = WorkingSetCounter::with_capacity(reader.len_hint().unwrap_or(0) / 8);
    let (mut n, mut deletes) = (0u64, 0u64);
    reader.for_each_batch(|batch| {
        for req in batch {
            match req.op {
                Op::Get | Op::Set => model.access(req.key, req.size),
                Op::Delete => {
                    deletes += 1;
                    model.delete(req.key)
                }
            }
        }
        fp.add_batch(batch, reference);
        n += batch.len() as u64;
        pb.inc(batch.len() as u64);
        Ok(())
    })?;
    pb.finish_and_clear();
    Ok((fp.working_set(), n, deletes))
}

#[derive(Serialize)]
struct CurveJson<'a> {
    model: &'a str,
    k: Option<u32>,
    unit: &'static str,
    points: &'a [Point],
}

fn unit_name(u: SizeUnit) -> &'static str {
    match u {
        SizeUnit::Objects => "objects",
        SizeUnit::Bytes => "bytes",
    }
}

pub fn run_mrc(args: MrcArgs) -> Result<()> {
    if args.points == 0 {
        bail!("--points must be at least 1");
    }
    let unit = size_unit(args.common.bytes);
    // One read of the trace either way: streamed into the model, or, when the model's
    // size grid needs the working set first, loaded once and fed from memory.
    let loaded = if ModelSpec::needs_working_set(args.common.model) {
        Some(LoadedTrace::load(&args.common)?)
    } else {
        None
    };
    let working_set = loaded.as_ref().map_or(0, |l| in_unit(l.working_set, unit));
    let sizes = size_grid(working_set, args.points);
    let mut model = build_model(&args.common.spec(&sizes, working_set))?;
    let t0 = Instant::now();
    let (fp, n, deletes) = match &loaded {
        Some(l) => l.feed(model.as_mut(), "modelling"),
        None => feed(&args.common, model.as_mut(), "modelling")?,
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let ws = in_unit(fp, unit) as f64;
    let curves: Vec<Curve> = model
        .curves()
        .iter()
        .map(|c| c.resample(ws, args.points))
        .collect();
    eprintln!(
        "{n} requests{}, working set {} {}, {} curve(s) in {elapsed:.2}s ({:.1}M requests/s)",
        if deletes > 0 {
            format!(" ({deletes} of them DELETEs)")
        } else {
            String::new()
        },
        ws,
        unit_name(unit),
        curves.len(),
        n as f64 / elapsed.max(1e-9) / 1e6
    );

    let csv = curves_csv(&curves)?;
    match &args.out {
        Some(p) => std::fs::write(p, csv).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{csv}"),
    }
    if args.json {
        let js: Vec<CurveJson> = curves
            .iter()
            .map(|c| CurveJson {
                model: &c.model,
                k: c.k,
                unit: unit_name(c.unit),
                points: &c.points,
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&js)?);
    }
    if let Some(p) = &args.plot {
        let title = format!(
            "{} — {}",
            args.common.trace.file_name().map_or_else(
                || args.common.trace.display().to_string(),
                |f| f.to_string_lossy().into_owned()
            ),
            format!("{:?}", args.common.model).to_lowercase()
        );
        std::fs::write(p, plot_svg(&curves, &title))
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// CSV with header `model,k,size,miss_ratio` (k empty for single-curve models).
pub(crate) fn curves_csv(curves: &[Curve]) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["model", "k", "size", "miss_ratio"])?;
    for c in curves {
        let k = c.k.map(|k| k.to_string()).unwrap_or_default();
        for p in &c.points {
            w.write_record([
                c.model.as_str(),
                k.as_str(),
                &format_size(p.size),
                &format!("{:.6}", p.miss_ratio),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

use augur_mrc::curve::format_size;

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks.
fn nice_step(max: f64, target: usize) -> f64 {
    let raw = max / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Tick label with SI suffixes (k, M, G) to stay short.
fn short_num(v: f64) -> String {
    let a = v.abs();
    let (x, suf) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suf}")
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A hand-written SVG line plot: axes with ticks and labels, a grid, one polyline per
/// curve and a legend.
pub(crate) fn plot_svg(curves: &[Curve], title: &str) -> String {
    const W: f64 = 860.0;
    const H: f64 = 520.0;
    const L: f64 = 70.0;
    const R: f64 = 190.0;
    const T: f64 = 40.0;
    const B: f64 = 60.0;
    // Okabe & Ito's palette (2008), distinct under the common colour-vision deficiencies
    // (the old red/green pair K=5 vs K=16 was not), and a dash pattern per cycle of it
    // so that curves stay apart in greyscale and beyond eight curves.
    const COLORS: [&str; 8] = [
        "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442",
    ];
    const DASHES: [&str; 3] = ["", "6 3", "2 2"];
    let pw = W - L - R;
    let ph = H - T - B;
    let xmax = curves
        .iter()
        .map(Curve::max_size)
        .fold(0.0f64, f64::max)
        .max(1.0);
    let x = |v: f64| L + v / xmax * pw;
    let y = |v: f64| T + (1.0 - v.clamp(0.0, 1.0)) * ph;
    let unit = curves.first().map_or("objects", |c| unit_name(c.unit));
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        L + pw / 2.0,
        xml_escape(title)
    );
    // Grid and ticks.
    let step = nice_step(xmax, 8);
    let mut v = 0.0;
    while v <= xmax * 1.0001 {
        let px = x(v);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{T}" x2="{px:.1}" y2="{:.1}" stroke="#e5e5e5"/><line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="black"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            T + ph,
            T + ph,
            T + ph + 5.0,
            T + ph + 19.0,
            short_num(v)
        );
        v += step;
    }
    for i in 0..=10 {
        let mr = i as f64 / 10.0;
        let py = y(mr);
        let _ = writeln!(
            s,
            r##"<line x1="{L}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e5e5e5"/><line x1="{:.1}" y1="{py:.1}" x2="{L}" y2="{py:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="end">{mr:.1}</text>"##,
            L + pw,
            L - 5.0,
            L - 8.0,
            py + 4.0
        );
    }
    // Axes and their labels.
    let _ = writeln!(
        s,
        r#"<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">cache size ({unit})</text>"#,
        L + pw / 2.0,
        H - 15.0
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">miss ratio</text>"#,
        T + ph / 2.0,
        T + ph / 2.0
    );
    // Curves and legend.
    for (i, c) in curves.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let dash = match DASHES[(i / COLORS.len()) % DASHES.len()] {
            "" => String::new(),
            d => format!(r#" stroke-dasharray="{d}""#),
        };
        let mut pts = format!("{:.1},{:.1}", x(0.0), y(1.0));
        for p in &c.points {
            let _ = write!(pts, " {:.1},{:.1}", x(p.size), y(p.miss_ratio));
        }
        let _ = writeln!(
            s,
            r#"<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.8"{dash}/>"#
        );
        let label = match c.k {
            Some(k) => format!("{} K={k}", c.model),
            None => c.model.clone(),
        };
        let ly = T + 14.0 + i as f64 * 20.0;
        let lx = L + pw + 15.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            xml_escape(&label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// What minisim runs in miniature: the `--policy` list, or Redis's pooled K-LRU per K.
fn minisim_policies(ks: &[u32], policies: &[PolicySpec]) -> Vec<(Option<u32>, PolicySpec)> {
    if policies.is_empty() {
        return ks
            .iter()
            .map(|&k| (Some(k), PolicySpec::RedisLru { k: k as usize }))
            .collect();
    }
    policies
        .iter()
        .map(|&p| {
            let k = match p {
                PolicySpec::RedisLru { k } | PolicySpec::KLru { k } => Some(k as u32),
                _ => None,
            };
            (k, p)
        })
        .collect()
}

/// The simulators that are a model's ground truth: plain K-LRU (KRR Eq. 1) and Redis's
/// pooled K-LRU for each K of KRR; exact LRU for the LRU models; for miniature
/// simulation the very policy it miniaturises (Redis's pooled K-LRU per K).
fn reference_policies(
    model: ModelName,
    ks: &[u32],
    policies: &[PolicySpec],
) -> Vec<(Option<u32>, PolicySpec)> {
    match model {
        ModelName::Minisim => minisim_policies(ks, policies),
        ModelName::Krr => ks
            .iter()
            .flat_map(|&k| {
                let k2 = k as usize;
                [
                    (Some(k), PolicySpec::KLru { k: k2 }),
                    (Some(k), PolicySpec::RedisLru { k: k2 }),
                ]
            })
            .collect(),
        ModelName::Olken | ModelName::Shards | ModelName::Mimir => {
            vec![(None, PolicySpec::Lru)]
        }
    }
}

#[derive(Serialize)]
struct CompareRow {
    model: String,
    k: Option<u32>,
    simulator: String,
    mae: f64,
    /// Miss ratios of model and simulator at 25/50/75 % of the working set.
    model_at: [f64; 3],
    sim_at: [f64; 3],
}

pub fn run_compare(args: CompareArgs) -> Result<()> {
    if args.sizes == 0 {
        bail!("--sizes must be at least 1");
    }
    let unit = size_unit(args.common.bytes);
    let sim_unit = if args.common.bytes {
        Unit::Bytes
    } else {
        Unit::Objects
    };
    // The simulators need the trace in memory. Model and simulators see the same
    // stream, as in `augur mrc` and `augur sim`: GET and SET are references, a DELETE
    // removes the key and is not counted as a request.
    let (trace, deletes) =
        trace_input::load_for_simulation(&args.common.trace, args.common.format.as_deref())?;
    let ws = in_unit(working_set(&trace), unit);
    let sizes = size_grid(ws, args.sizes);
    let mut model = build_model(&args.common.spec(&sizes, ws))?;
    let t0 = Instant::now();
    for r in &trace {
        if r.delete {
            model.delete(r.key);
        } else {
            model.access(r.key, r.size);
        }
    }
    let t_model = t0.elapsed().as_secs_f64();
    let refs = reference_policies(args.common.model, &args.common.k, &args.common.policies);
    let policies: Vec<PolicySpec> = refs.iter().map(|r| r.1).collect();
    let pb = crate::progress::bar(
        Some((policies.len() * sizes.len() * trace.len()) as u64),
        "simulating",
    );
    let t1 = Instant::now();
    let results = simulate_grid(
        &trace,
        &policies,
        &sizes,
        sim_unit,
        args.common.seed,
        &|d| pb.inc(d),
    );
    pb.finish_and_clear();
    let t_sim = t1.elapsed().as_secs_f64();

    let curves = model.curves();
    let mut rows = Vec::new();
    for (pi, (k, policy)) in refs.iter().enumerate() {
        let sim_pts: Vec<Point> = results[pi * sizes.len()..(pi + 1) * sizes.len()]
            .iter()
            .map(|r| Point {
                size: r.size as f64,
                miss_ratio: r.miss_ratio,
            })
            .collect();
        let sim = Curve::new(policy.to_string(), *k, unit, sim_pts);
        // minisim's curves are its policies', in the order of `refs`; the other models'
        // are found by K (KRR has two references per K, the LRU models one curve).
        let found = if args.common.model == ModelName::Minisim {
            curves.get(pi)
        } else {
            curves.iter().find(|c| c.k == *k || k.is_none())
        };
        let Some(mc) = found else {
            bail!("model produced no curve for {policy} (K = {k:?})");
        };
        let at = |c: &Curve| [0.25, 0.5, 0.75].map(|f| c.miss_ratio_at(f * ws as f64));
        rows.push(CompareRow {
            model: mc.model.clone(),
            k: *k,
            simulator: policy.to_string(),
            mae: mc.mae_at_points(&sim),
            model_at: at(mc),
            sim_at: at(&sim),
        });
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let dels = if deletes > 0 {
        format!(" (+{deletes} DELETEs)")
    } else {
        String::new()
    };
    println!(
        "trace {}: {} requests{dels}, working set {ws} {}; model {:.2}s, {} simulations {:.2}s",
        args.common.trace.display(),
        trace.len() as u64 - deletes,
        unit_name(unit),
        t_model,
        results.len(),
        t_sim
    );
    println!(
        "{:<20} {:>4} {:<14} {:>9}   {:>23}   {:>23}",
        "model", "k", "simulator", "MAE", "model mr @25/50/75%", "sim mr @25/50/75%"
    );
    for r in &rows {
        println!(
            "{:<20} {:>4} {:<14} {:>9.5}   {:>7.4} {:>7.4} {:>7.4}   {:>7.4} {:>7.4} {:>7.4}",
            r.model,
            r.k.map(|k| k.to_string()).unwrap_or_default(),
            r.simulator,
            r.mae,
            r.model_at[0],
            r.model_at[1],
            r.model_at[2],
            r.sim_at[0],
            r.sim_at[1],
            r.sim_at[2]
        );
    }
    // Mean MAE per simulator family.
    let mut families: Vec<String> = Vec::new();
    for r in &rows {
        let fam = r.simulator.split(':').next().unwrap_or("").to_string();
        if !families.contains(&fam) {
            families.push(fam);
        }
    }
    for fam in families {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| r.simulator.split(':').next() == Some(fam.as_str()))
            .map(|r| r.mae)
            .collect();
        println!(
            "mean MAE vs {fam}: {:.5} over {} curve(s)",
            v.iter().sum::<f64>() / v.len() as f64,
            v.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_the_exact_header_and_one_row_per_point() {
        let c = Curve::new(
            "krr",
            Some(4),
            SizeUnit::Objects,
            vec![
                Point {
                    size: 10.0,
                    miss_ratio: 0.5,
                },
                Point {
                    size: 20.0,
                    miss_ratio: 0.25,
                },
            ],
        );
        let s = curves_csv(&[c]).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "model,k,size,miss_ratio");
        assert_eq!(lines[1], "krr,4,10,0.500000");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn svg_has_one_polyline_per_curve_and_a_legend() {
        let mk = |k| {
            Curve::new(
                "krr",
                Some(k),
                SizeUnit::Objects,
                vec![Point {
                    size: 1000.0,
                    miss_ratio: 0.3,
                }],
            )
        };
        let s = plot_svg(&[mk(1), mk(16)], "t <x>");
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("krr K=16"));
        assert!(s.contains("t &lt;x&gt;"));
        assert!(s.ends_with("</svg>\n"));
    }

    #[test]
    fn nice_steps_are_1_2_5_times_powers_of_ten() {
        assert_eq!(nice_step(100.0, 10), 10.0);
        assert_eq!(nice_step(760_000.0, 8), 100_000.0);
        assert_eq!(nice_step(3.0, 8), 0.5);
        assert_eq!(short_num(250_000.0), "250k");
        assert_eq!(short_num(1.5e9), "1.5G");
    }
}
