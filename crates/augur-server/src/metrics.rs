//! The Prometheus `/metrics` endpoint (`metrics-port`, off by default): per-tenant
//! gauges and counters (memory, target, K, hits, misses, evictions, measured miss
//! latency, access rate, predicted and observed miss ratios, profiler sampling) and a
//! few server-wide figures, in Prometheus's text format.
//!
//! The exposition is built with `prometheus-client` from the same figures TENANT INFO
//! answers ([`crate::commands::tenant_info_fields`]'s sources), fresh at every scrape:
//! the server keeps no second set of counters. The HTTP side is deliberately minimal
//! (one request per connection, `GET /metrics` only, bounded reads and a timeout): a
//! scrape endpoint, not a web server.

use crate::state::Shared;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Labels = Vec<(String, String)>;
type GaugeF = Gauge<f64, AtomicU64>;

/// Per-tenant metric families of one scrape.
struct TenantFamilies {
    gauges: Vec<(&'static str, &'static str, Family<Labels, GaugeF>)>,
    counters: Vec<(&'static str, &'static str, Family<Labels, Counter>)>,
}

/// Renders every metric in Prometheus's text exposition format.
pub fn render(shared: &Shared) -> String {
    let mut registry = Registry::with_prefix("augur");
    let gauge = |name, help| (name, help, Family::<Labels, GaugeF>::default());
    let counter = |name, help| (name, help, Family::<Labels, Counter>::default());
    let fams = TenantFamilies {
        gauges: vec![
            gauge(
                "tenant_used_bytes",
                "Bytes the tenant holds (entries and index share).",
            ),
            gauge("tenant_keys", "Keys the tenant holds."),
            gauge(
                "tenant_maxmemory_bytes",
                "The tenant's hard limit (0 = none).",
            ),
            gauge(
                "tenant_min_memory_bytes",
                "Memory the kredis tuner always gives the tenant.",
            ),
            gauge(
                "tenant_target_bytes",
                "The tenant's memory target (static limit or the tuner's).",
            ),
            gauge(
                "tenant_k",
                "Sample size K used when evicting the tenant's keys.",
            ),
            gauge(
                "tenant_miss_latency_seconds",
                "Measured mean miss latency (GET miss to refill).",
            ),
            gauge(
                "tenant_miss_penalty_seconds",
                "Miss penalty the tuner uses (measured, configured or default).",
            ),
            gauge(
                "tenant_access_rate",
                "GETs per second in the last interval.",
            ),
            gauge(
                "tenant_observed_miss_ratio",
                "Miss ratio observed in the last interval.",
            ),
            gauge(
                "tenant_predicted_miss_ratio",
                "Miss ratio the merged curve predicted for the last interval.",
            ),
            gauge(
                "tenant_model_miss_ratio",
                "Miss ratio the model gives the last interval's own references at the memory held.",
            ),
            gauge(
                "tenant_predicted_miss_ratio_at_target",
                "Miss ratio the merged curve predicts at the target.",
            ),
            gauge(
                "tenant_working_set_bytes",
                "Working set estimated from the profiler's sample.",
            ),
            gauge(
                "tenant_profiler_bytes",
                "Heap bytes of the tenant's online model.",
            ),
            gauge(
                "tenant_sample_rate",
                "The profiler's spatial sampling rate R for the tenant now (after the CPU budget).",
            ),
        ],
        counters: vec![
            counter("tenant_hits", "GET hits."),
            counter("tenant_misses", "GET misses."),
            counter("tenant_writes", "Writes that stored a value."),
            counter("tenant_evicted_keys", "Keys evicted."),
            counter("tenant_expired_keys", "Keys expired."),
            counter(
                "tenant_sampled_references",
                "References the profiler modelled.",
            ),
            counter(
                "tenant_dropped_samples",
                "Sampled references dropped on a full profiler queue.",
            ),
        ],
    };

    let stats = shared.store.tenant_stats();
    let views = shared.profiler.views.lock().clone();
    for u in shared.tenants.users() {
        let labels: Labels = vec![("tenant".into(), u.name.clone())];
        let st = stats.get(u.id as usize).cloned().unwrap_or_default();
        let (cap, target, _) = shared.store.tenant_limits(u.id);
        let view = views.get(&u.id).cloned().unwrap_or_default();
        let k = shared.store.tenant_samples(u.id);
        let predicted_at_target = (target > 0)
            .then(|| view.forecast_at(target, k as u32))
            .flatten();
        let gauge_values: [Option<f64>; 16] = [
            Some(st.used_bytes as f64),
            Some(st.keys as f64),
            Some(cap as f64),
            Some(u.settings.min_memory as f64),
            Some(target as f64),
            Some(k as f64),
            view.miss_latency_us.map(|us| us / 1e6),
            Some(view.penalty_us / 1e6),
            Some(view.access_rate),
            view.observed_miss_ratio,
            view.predicted_miss_ratio,
            view.model_miss_ratio,
            predicted_at_target,
            Some(view.working_set_bytes),
            Some(view.model_bytes as f64),
            Some(shared.store.tenant_sample_rate(u.id)),
        ];
        for ((_, _, fam), v) in fams.gauges.iter().zip(gauge_values) {
            if let Some(v) = v {
                fam.get_or_create(&labels).set(v);
            }
        }
        let counter_values: [u64; 7] = [
            st.hits,
            st.misses,
            st.writes,
            st.evicted,
            st.expired,
            view.sampled_references,
            shared.ref_queue.dropped(u.id),
        ];
        for ((_, _, fam), v) in fams.counters.iter().zip(counter_values) {
            fam.get_or_create(&labels).inc_by(v);
        }
    }
    for (name, help, fam) in fams.gauges {
        registry.register(name, help, fam);
    }
    for (name, help, fam) in fams.counters {
        registry.register(name, help, fam);
    }

    let used = GaugeF::default();
    used.set(shared.store.used_memory() as f64);
    registry.register("used_memory_bytes", "Bytes the store holds.", used);
    let maxmemory = GaugeF::default();
    maxmemory.set(shared.store.maxmemory() as f64);
    registry.register("maxmemory_bytes", "The memory limit (0 = none).", maxmemory);
    let clients = GaugeF::default();
    clients.set(shared.connected_clients() as f64);
    registry.register("connected_clients", "Client connections.", clients);
    let commands = Counter::<u64>::default();
    commands.inc_by(shared.counters.total_commands_processed.load());
    registry.register("commands_processed", "Commands processed.", commands);
    let intervals = Counter::<u64>::default();
    intervals.inc_by(shared.profiler.intervals.load(Relaxed));
    registry.register(
        "tenant_intervals",
        "Profiler / partitioning intervals completed.",
        intervals,
    );

    let profiler_cpu = GaugeF::default();
    profiler_cpu.set(shared.profiler.cpu_share());
    registry.register(
        "profiler_cpu_share",
        "Share of one core the profiler spent on sampled references in its last 500-ms window.",
        profiler_cpu,
    );

    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut out, &registry);
    out
}

/// Largest request head read before answering 431.
const MAX_REQUEST: usize = 8192;

async fn serve_one(mut s: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let head_done = loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break true;
        }
        if buf.len() > MAX_REQUEST {
            break false;
        }
    };
    let (status, ctype, body) = if !head_done {
        (
            "431 Request Header Fields Too Large",
            "text/plain",
            String::from("request too large\n"),
        )
    } else {
        let line = buf.split(|&b| b == b'\n').next().unwrap_or(b"");
        let line = String::from_utf8_lossy(line);
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = path.split('?').next().unwrap_or("");
        match (method, path) {
            ("GET", "/metrics") => (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                render(&shared),
            ),
            ("GET", _) => (
                "404 Not Found",
                "text/plain",
                String::from("try /metrics\n"),
            ),
            _ => (
                "405 Method Not Allowed",
                "text/plain",
                String::from("GET only\n"),
            ),
        }
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await?;
    s.write_all(body.as_bytes()).await?;
    s.shutdown().await
}

/// Accepts scrapes until the task is aborted.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((s, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), serve_one(s, shared)).await;
        });
    }
}
