//! KRR under spatial sampling against plain K-LRU (kRedis §2.7 and §6.3 protocol: MAE at
//! 40 sizes evenly spaced up to the working set), per estimator ([`SampleAdjust`]),
//! averaged over hash salts.
//!
//! One sample is one draw: which keys `hash(key) mod P < T` keeps decides most of the
//! error at R = 0.01 (on arc_p3 the model's own RNG seed moves the mean MAE by
//! < .0005, the sample by .003-.012). So besides the sampler's own keys (salt 0) every
//! estimator is run on `--salts N - 1` other samples, taken by feeding KRR `key ^ s`
//! for fixed pseudo-random `s` (the same trace, other keys in the sample).
//!
//! Simulated K-LRU curves are cached in `target/tmp/` (arc_p3: ~40 s to simulate).
//!
//! ```text
//! cargo run --release -p augur-mrc --example krr_sampling -- TRACE [--rate 0.01]
//!     [--salts 20] [--adjust shards,regression,none] [--prefix N] [--seed S] [--lru-diag]
//!     [--write-reference FILE]
//! ```
//!
//! `--seed S` is the model's RNG seed (default `KrrConfig::default().seed`; `augur
//! mrc-compare` uses its `--seed`, 42).
//! `--lru-diag` splits exact LRU's sampling error (SHARDS) in two: the curve from the
//! sampled references' *true* full-trace distances (only which references are sampled)
//! and from their sampled distances scaled by 1/R, under each estimator.
//! `--write-reference FILE` writes the simulated points (`k size miss_ratio` lines) for
//! the tests (`tests/krr_support/`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use augur_mrc::curve::{Curve, Point, SizeUnit};
use augur_mrc::krr::{Krr, KrrConfig, SampleAdjust};
use augur_mrc::{KeyMap, MrcModel, SpatialSampler};
use augur_sim::{simulate_sizes, working_set, PolicySpec, Unit};

const N: u64 = 40;
const KS: [u32; 5] = [1, 2, 4, 8, 16];
const SIM_SEED: u64 = 42;

/// The simulated curve of plain K-LRU (`k >= 1`) or exact LRU (`k == 0`), cached.
fn sim_curve(name: &str, trace: &[(u64, u32)], k: u32, max: u64) -> Curve {
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../target/tmp/sim-{name}-{}-klru{k}.txt",
        trace.len()
    ));
    let pts: Vec<Point> = match std::fs::read_to_string(&cache) {
        Ok(s) => s
            .lines()
            .map(|l| {
                let mut it = l.split(' ').map(|x| x.parse::<f64>().expect("number"));
                Point {
                    size: it.next().expect("size"),
                    miss_ratio: it.next().expect("miss ratio"),
                }
            })
            .collect(),
        Err(_) => {
            let sizes: Vec<u64> = (1..=N).map(|i| (max * i / N).max(1)).collect();
            let policy = if k == 0 {
                PolicySpec::Lru
            } else {
                PolicySpec::KLru { k: k as usize }
            };
            let p: Vec<Point> = simulate_sizes(trace, policy, &sizes, Unit::Objects, SIM_SEED)
                .iter()
                .map(|r| Point {
                    size: r.size as f64,
                    miss_ratio: r.miss_ratio,
                })
                .collect();
            let s: String = p
                .iter()
                .map(|p| format!("{} {}\n", p.size, p.miss_ratio))
                .collect();
            let _ = std::fs::create_dir_all(cache.parent().expect("dir"));
            let _ = std::fs::write(&cache, s);
            p
        }
    };
    Curve::new("sim", Some(k), SizeUnit::Objects, pts)
}

/// The key fed to the models for salt `salt`: a bijection, so the trace is the same
/// and only the sample differs.
fn salted(key: u64, salt: u64) -> u64 {
    if salt == 0 {
        key
    } else {
        key ^ augur_mrc::mix64(salt.wrapping_mul(0x1234_5678_9abc_def1))
    }
}

fn fmt(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.4}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// `--lru-diag`: exact LRU under spatial sampling, per salt (`objects`: the trace's
/// distinct keys, the `D` of the columns that know it).
fn lru_diag(trace: &[(u64, u32)], objects: u64, lru: &Curve, rate: f64, salts: u64) {
    let mut full = augur_mrc::shards::LruStack::new();
    let d: Vec<f64> = trace
        .iter()
        .map(|&(k, s)| {
            full.access(k, s)
                .map_or(f64::INFINITY, |r| r.objects as f64)
        })
        .collect();
    let sizes: Vec<f64> = lru.points.iter().map(|p| p.size).collect();
    let mae = |miss: &dyn Fn(usize) -> f64| {
        mean(
            &lru.points
                .iter()
                .enumerate()
                .map(|(j, p)| (miss(j) - p.miss_ratio).abs())
                .collect::<Vec<_>>(),
        )
    };
    // Columns: true distances (shards-adj, none), sampled distances (shards-adj, none,
    // regression).
    let objects = objects as f64;
    let total = trace.len() as f64;
    let mut avg = [0.0; 8];
    for salt in 0..salts {
        let sampler = SpatialSampler::new(rate);
        let mut st = augur_mrc::shards::LruStack::new();
        let mut refs: KeyMap<u32> = KeyMap::default();
        let n = sizes.len();
        let (mut hit_true, mut hit_s, mut wmiss) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let (mut ns, mut wsum) = (0.0, 0.0);
        // Non-first references only (the cold misses taken out).
        let (mut cold, mut wsum_nf, mut wmiss_nf) = (0.0, 0.0, vec![0.0; n]);
        for (i, &(k, s)) in trace.iter().enumerate() {
            let key = salted(k, salt);
            if !sampler.sampled(key) {
                continue;
            }
            ns += 1.0;
            let w = {
                let e = refs.entry(key).or_default();
                *e += 1;
                f64::from(*e)
            };
            wsum += w;
            if w == 1.0 {
                cold += 1.0;
            } else {
                wsum_nf += w;
            }
            let ds = st
                .access(key, s)
                .map_or(f64::INFINITY, |r| r.objects as f64 / sampler.rate());
            for (j, &c) in sizes.iter().enumerate() {
                if d[i] <= c {
                    hit_true[j] += 1.0;
                }
                if ds <= c {
                    hit_s[j] += 1.0;
                } else {
                    wmiss[j] += w;
                    if w > 1.0 {
                        wmiss_nf[j] += w;
                    }
                }
            }
        }
        let expected = trace.len() as f64 * sampler.rate();
        let r = sampler.rate();
        // The whole stream's distinct count D is known: its cold misses are exact.
        let surplus_nf = (ns - cold) - (total - objects) * r;
        let row = [
            mae(&|j| (ns - hit_true[j]) / expected),
            mae(&|j| (ns - hit_true[j]) / ns),
            mae(&|j| (ns - hit_s[j]) / expected),
            mae(&|j| (ns - hit_s[j]) / ns),
            mae(&|j| (ns - hit_s[j] - wmiss[j] / wsum * (ns - expected)) / expected),
            mae(&|j| (objects + (ns - hit_s[j] - cold) / r) / total),
            mae(&|j| {
                (objects + (total - objects) * (ns - hit_s[j] - cold) / (ns - cold).max(1.0))
                    / total
            }),
            mae(&|j| {
                let b = if wsum_nf > 0.0 {
                    wmiss_nf[j] / wsum_nf
                } else {
                    0.0
                };
                (objects + (ns - hit_s[j] - cold - b * surplus_nf) / r) / total
            }),
        ];
        println!(
            "lru-diag salt {salt:>2}: true distances shards {:.5} none {:.5}; sampled distances shards {:.5} none {:.5} regression {:.5}; D known: shards {:.5} ratio {:.5} regression {:.5}",
            row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7]
        );
        for (a, r) in avg.iter_mut().zip(row) {
            *a += r / salts as f64;
        }
    }
    println!(
        "lru-diag mean: true distances shards {:.5} none {:.5}; sampled distances shards {:.5} none {:.5} regression {:.5}; D known: shards {:.5} ratio {:.5} regression {:.5}",
        avg[0], avg[1], avg[2], avg[3], avg[4], avg[5], avg[6], avg[7]
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().expect("TRACE name (e.g. arc_p3)");
    let (mut rate, mut salts, mut prefix) = (0.01, 20u64, usize::MAX);
    let mut seed = KrrConfig::default().seed;
    let mut adjusts = vec![SampleAdjust::Shards, SampleAdjust::Regression];
    let (mut diag, mut reference) = (false, None);
    let mut lru_only = false;
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("a value");
        match a.as_str() {
            "--rate" => rate = val().parse().expect("number"),
            "--salts" => salts = val().parse().expect("integer"),
            "--prefix" => prefix = val().parse().expect("integer"),
            "--seed" => seed = val().parse().expect("integer"),
            "--lru-diag" => diag = true,
            "--lru-only" => {
                diag = true;
                lru_only = true
            }
            "--write-reference" => reference = Some(val()),
            "--adjust" => {
                adjusts = val()
                    .split(',')
                    .map(|s| {
                        SampleAdjust::from_name(s)
                            .expect("--adjust: distinct, shards, regression or none")
                    })
                    .collect()
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
    let reqs =
        augur_trace::load_all(dir.join(format!("{name}.oracleGeneral.bin.zst"))).expect("trace");
    let trace: Vec<(u64, u32)> = reqs.iter().take(prefix).map(|r| (r.key, r.size)).collect();
    let ws = working_set(&trace).objects;
    if lru_only {
        lru_diag(&trace, ws, &sim_curve(&name, &trace, 0, ws), rate, salts);
        return;
    }
    let t = Instant::now();
    let sims: Vec<Curve> = KS
        .iter()
        .map(|&k| sim_curve(&name, &trace, k, ws))
        .collect();
    println!(
        "{name}: {} requests, {ws} objects, R = {rate}; simulations {:.1} s",
        trace.len(),
        t.elapsed().as_secs_f64()
    );
    if let Some(path) = reference {
        let mut s = String::new();
        for c in &sims {
            for p in &c.points {
                s += &format!("{} {} {}\n", c.k.expect("k"), p.size, p.miss_ratio);
            }
        }
        std::fs::write(&path, s).expect("write reference");
        println!("wrote {path}");
    }
    if diag {
        lru_diag(&trace, ws, &sim_curve(&name, &trace, 0, ws), rate, salts);
    }
    for &adjust in &adjusts {
        let mut per_k = vec![0.0; KS.len()];
        let mut means = Vec::new();
        for salt in 0..salts {
            let t = Instant::now();
            let mut m = Krr::new(KrrConfig {
                rate,
                adjust,
                seed,
                ..KrrConfig::default()
            });
            for &(k, s) in &trace {
                m.access(salted(k, salt), s);
            }
            if std::env::var_os("EXACT_D").is_some() {
                m.set_distinct_keys(ws as f64);
            }
            let maes: Vec<f64> = m
                .curves()
                .iter()
                .zip(&sims)
                .map(|(c, s)| c.mae_at_points(s))
                .collect();
            means.push(mean(&maes));
            println!(
                "{name} {adjust:?} salt {salt:>2}: mean {:.5}  per K {}  tracked {} keys, {} bytes ({:.2} s)",
                mean(&maes),
                fmt(&maes),
                m.tracked_objects(),
                m.memory_bytes(),
                t.elapsed().as_secs_f64()
            );
            for (a, x) in per_k.iter_mut().zip(&maes) {
                *a += x / salts as f64;
            }
        }
        let worst = means.iter().copied().fold(0.0, f64::max);
        let under = means.iter().filter(|&&m| m <= 0.005).count();
        println!(
            "{name} {adjust:?} over {salts} salts: mean {:.5}  per K {}  worst {worst:.5}  <= .005 in {under}/{salts}",
            mean(&per_k),
            fmt(&per_k)
        );
    }
}
