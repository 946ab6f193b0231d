//! MIMIR throughput and memory on arc_p3 (3.9M requests, 762k objects), one core, the
//! trace decoded in memory first. The cache is 50,000 objects (the MIMIR paper's Table 1
//! size for the P-traces) with 50,000 ghosts. Two things are timed, each as the best of
//! `REPS` runs, by wall clock and by this thread's CPU time (`/proc/thread-self/schedstat`,
//! so other processes on a loaded machine do not dilute the rate):
//!
//! - **(a) MIMIR alone**: a plain LRU cache is simulated once, untimed, and records the
//!   upcalls it would make (HIT on a hit; MISS+INSERT on a miss, then one EVICT per
//!   victim). The timed loop replays that event stream into [`Mimir`]
//!   ([`Mimir::hit`], [`Mimir::miss_insert`], [`Mimir::evict`]): the profiler's own
//!   overhead beside a real cache, the MIMIR paper's Fig. 3 / Fig. 7a question. Rates
//!   are per trace request (and per event). "with prefetch" is the same replay passing
//!   the key of the HIT / MISS+INSERT `LOOKAHEAD` upcalls ahead to [`Mimir::prefetch`]
//!   (a cache that knows upcoming keys, e.g. pipelined requests); both give one curve.
//! - **(b) cache + MIMIR**: [`MimirLru`], MIMIR sharing its slab with its own exact LRU
//!   cache, per request: what an offline profiler of a trace costs. "with prefetch" is
//!   [`MimirLru::request_all`] over the decoded trace, which prefetches ahead.
//!
//! Memory: bytes of the per-key structures (slab records + table cells) per tracked key,
//! and the total heap including DELTA. Accuracy against exact LRU over 1..=N and
//! 1..=2N objects is printed for both runs (they must agree).
//!
//! `cargo run --release -p augur-mrc --example mimir_speed [trace] [cache_size] [reps] [only]`
//! (`only`: run just the configurations whose name, e.g. `Rounder B=8`, contains it).
//!
//! `mimir_speed --once PART` runs one part once on arc_p3, ROUNDER B=8, untimed, for an
//! instruction counter (`bench/mimir_instructions.sh` runs it under callgrind): `load`
//! only decodes the trace, `events` also records the cache's upcalls, `a` also replays
//! them into [`Mimir`], `b` decodes the trace and runs [`MimirLru`] over it. The
//! differences `a - events` and `b - load` are MIMIR's own instructions, which unlike
//! rates do not depend on what else the machine is running.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use augur_mrc::curve::{Curve, SizeUnit};
use augur_mrc::mimir::{Aging, Mimir, MimirConfig, MimirLru};
use augur_mrc::shards::Shards;
use augur_mrc::MrcModel;

fn load(name: &str) -> Vec<(u64, u32)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces")
        .join(format!("{name}.oracleGeneral.bin.zst"));
    let mut raw = Vec::new();
    zstd::Decoder::new(std::fs::File::open(&path).expect("trace"))
        .expect("zstd")
        .read_to_end(&mut raw)
        .expect("read");
    raw.chunks_exact(24)
        .map(|r| {
            (
                u64::from_le_bytes(r[4..12].try_into().unwrap()),
                u32::from_le_bytes(r[12..16].try_into().unwrap()),
            )
        })
        .collect()
}

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`), so
/// the rate is not diluted by other processes on a shared machine; None elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// (a'): upcalls ahead whose key is passed to [`Mimir::prefetch`].
const LOOKAHEAD: usize = 8;

/// A cache upcall to MIMIR.
#[derive(Clone, Copy)]
enum Event {
    Hit(u64),
    MissInsert(u64, u32),
    Evict(u64),
}

/// Delivers one recorded upcall to MIMIR.
#[inline(always)]
fn upcall(m: &mut Mimir, ev: Event) {
    match ev {
        Event::Hit(k) => {
            m.hit(k);
        }
        Event::MissInsert(k, s) => {
            m.miss_insert(k, s);
        }
        Event::Evict(k) => m.evict(k),
    }
}

/// (a): MIMIR fed `events` one at a time.
fn replay(cfg: MimirConfig, events: &[Event]) -> Mimir {
    let mut m = Mimir::new(cfg);
    for &ev in events {
        upcall(&mut m, ev);
    }
    m
}

/// (b): MIMIR beside its LRU cache, one request of `trace` at a time.
fn profile(cfg: MimirConfig, trace: &[(u64, u32)]) -> MimirLru {
    let mut m = MimirLru::new(cfg);
    for &(k, s) in trace {
        m.request(k, s);
    }
    m
}

/// The upcalls of an LRU cache of `n` objects over `trace` (HashMap + linked list,
/// independent of MIMIR's code), and its miss ratio.
fn lru_events(trace: &[(u64, u32)], n: usize) -> (Vec<Event>, f64) {
    const NIL: usize = usize::MAX;
    let mut map: HashMap<u64, usize> = HashMap::with_capacity(n + 1);
    // (key, prev, next); head = most recent.
    let mut nodes: Vec<(u64, usize, usize)> = Vec::with_capacity(n + 1);
    let (mut head, mut tail) = (NIL, NIL);
    let mut events = Vec::with_capacity(trace.len() * 2);
    let mut misses = 0usize;
    for &(k, s) in trace {
        let i = match map.get(&k) {
            Some(&i) => {
                events.push(Event::Hit(k));
                let (_, p, nx) = nodes[i];
                if p == NIL {
                    continue; // already the head
                }
                nodes[p].2 = nx;
                if nx == NIL {
                    tail = p;
                } else {
                    nodes[nx].1 = p;
                }
                i
            }
            None => {
                misses += 1;
                events.push(Event::MissInsert(k, s));
                let i = if map.len() == n {
                    let v = tail;
                    events.push(Event::Evict(nodes[v].0));
                    map.remove(&nodes[v].0);
                    tail = nodes[v].1;
                    nodes[tail].2 = NIL;
                    nodes[v].0 = k;
                    v
                } else {
                    nodes.push((k, NIL, NIL));
                    nodes.len() - 1
                };
                map.insert(k, i);
                i
            }
        };
        nodes[i].1 = NIL;
        nodes[i].2 = head;
        if head == NIL {
            tail = i;
        } else {
            nodes[head].1 = i;
        }
        head = i;
    }
    (events, misses as f64 / trace.len() as f64)
}

/// Runs `f` `reps` times; (best wall seconds, best thread-CPU seconds or NaN, last result).
fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, f64, T) {
    let (mut wall, mut cpu, mut last) = (f64::INFINITY, f64::INFINITY, None);
    for _ in 0..reps {
        let c0 = thread_cpu_ns();
        let t = Instant::now();
        let r = f();
        wall = wall.min(t.elapsed().as_secs_f64());
        match (c0, thread_cpu_ns()) {
            (Some(a), Some(z)) => cpu = cpu.min((z - a) as f64 / 1e9),
            _ => cpu = f64::NAN,
        }
        last = Some(r);
    }
    (wall, cpu, last.expect("reps >= 1"))
}

fn accuracy(c: &Curve, exact: &Curve, n: u64) -> (f64, f64) {
    (
        1.0 - c.mae(exact, n as f64, n as usize),
        1.0 - c.mae(exact, 2.0 * n as f64, 2 * n as usize),
    )
}

/// `--once PART` (see the module docs).
fn once(part: &str) {
    let trace = load("arc_p3");
    let n = 50_000u64;
    let cfg = MimirConfig::objects(8, Aging::Rounder, n);
    let curve = match part {
        "load" => return println!("load: {} requests", trace.len()),
        "events" => {
            let (events, _) = lru_events(&trace, n as usize);
            return println!("events: {} upcalls", events.len());
        }
        "a" => {
            let (events, _) = lru_events(&trace, n as usize);
            replay(cfg, &events).curve()
        }
        "b" => profile(cfg, &trace).mimir().curve(),
        _ => panic!("--once load|events|a|b"),
    };
    // A digest of the curve, so that two builds can be checked to agree.
    let sum: f64 = curve.points.iter().map(|p| p.miss_ratio).sum();
    println!(
        "{part}: {} points, sum of miss ratios {sum:.9}",
        curve.points.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--once") {
        return once(args.get(2).map_or("b", String::as_str));
    }
    let name = args.get(1).map_or("arc_p3", String::as_str);
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50_000);
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(7);
    let only = args.get(4).map_or("", String::as_str);
    let trace = load(name);
    let mut exact = Shards::fixed_rate(1.0);
    for &(k, s) in &trace {
        exact.access(k, s);
    }
    let exact = exact.curve(SizeUnit::Objects);
    let (events, lru_miss) = lru_events(&trace, n as usize);
    let r = trace.len() as f64;
    println!(
        "{name}: {} requests, cache {n} objects + {n} ghosts, LRU miss ratio {lru_miss:.4}, \
         {} upcalls; best of {reps}; rates in M requests/s, by thread CPU time (wall)",
        trace.len(),
        events.len()
    );
    for (aging, b) in [
        (Aging::Rounder, 8),
        (Aging::Rounder, 128),
        (Aging::Stacker, 8),
        (Aging::Stacker, 128),
    ] {
        if !format!("{aging:?} B={b}").contains(only) {
            continue;
        }
        let cfg = MimirConfig::objects(b, aging, n);
        let (wall_a, cpu_a, m) = time(reps, || replay(cfg, &events));
        // (a'): the replay knows the upcalls ahead, as a cache with pipelined requests
        // would: it passes the key of the upcall LOOKAHEAD events ahead to
        // `Mimir::prefetch`.
        let (wall_a2, cpu_a2, m2) = time(reps, || {
            let mut m = Mimir::new(cfg);
            for (i, &ev) in events.iter().enumerate() {
                // An EVICT of the LRU tail needs no table probe: not prefetched.
                if let Some(Event::Hit(k) | Event::MissInsert(k, _)) = events.get(i + LOOKAHEAD) {
                    m.prefetch(*k);
                }
                upcall(&mut m, ev);
            }
            m
        });
        assert_eq!(m.curve().points, m2.curve().points);
        let (wall_b, cpu_b, lru) = time(reps, || profile(cfg, &trace));
        let (wall_c, cpu_c, lru_c) = time(reps, || {
            let mut m = MimirLru::new(cfg);
            m.request_all(&trace);
            m
        });
        assert_eq!(lru.mimir().curve().points, lru_c.mimir().curve().points);
        let (an_a, a2n_a) = accuracy(&m.curve(), &exact, n);
        let (an_b, a2n_b) = accuracy(&lru.mimir().curve(), &exact, n);
        assert!((lru.cache_miss_ratio() - lru_miss).abs() < 1e-12);
        println!(
            "{aging:?} B={b:3}: (a) MIMIR alone {:5.1} ({:5.1}) M req/s = {:5.1} M upcalls/s, \
             with prefetch {:5.1} ({:5.1}), \
             (b) cache+MIMIR {:5.1} ({:5.1}) M req/s, with prefetch {:5.1} ({:5.1}); {:.1} B/tracked key ({} keys), heap {:.2} MB; \
             accuracy 1..N {:.2}% / {:.2}%, 1..2N {:.2}% / {:.2}% (a / b)",
            r / cpu_a / 1e6,
            r / wall_a / 1e6,
            events.len() as f64 / cpu_a / 1e6,
            r / cpu_a2 / 1e6,
            r / wall_a2 / 1e6,
            r / cpu_b / 1e6,
            r / wall_b / 1e6,
            r / cpu_c / 1e6,
            r / wall_c / 1e6,
            m.key_heap_bytes() as f64 / m.tracked_keys() as f64,
            m.tracked_keys(),
            m.heap_bytes() as f64 / 1e6,
            100.0 * an_a,
            100.0 * an_b,
            100.0 * a2n_a,
            100.0 * a2n_b,
        );
    }
}
