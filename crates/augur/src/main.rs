//! `augur`: the cache server and its modelling tools, as one binary.

use clap::{Parser, Subcommand};

mod cmd_mrc;
mod cmd_replay;
mod cmd_serve;
mod cmd_sim;
mod cmd_tenants;
mod progress;
mod trace_input;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc options: a background thread returns freed pages to the OS within about a
/// second (dirty pages) and at once for muzzy ones, so RSS tracks what the store really
/// holds after tables grow or keys are evicted (Redis enables jemalloc's background
/// thread for the same reason).
///
/// `slab_sizes:65-256:4`: slabs of 4 pages (16 KiB) for the size classes entries of
/// typical small items fall in (one 14-byte key with a 100-byte value is a 128-byte
/// block: see `augur_store::entry`). jemalloc's default slab of the 128-byte class is
/// one page of 32 blocks, and what it keeps per slab costs ~3.5 B a key there:
/// `bench/memory.sh` 154.0 -> 151.0 B/key RSS at 1M keys (16 pages: 150.5, but a
/// higher fragmentation ratio under eviction, 1.03 against 1.01); under
/// `bench/eviction.sh`'s 64 MB limit, steady RSS 76.9-77.6 -> 75.3-75.6 MiB. The value
/// is a page count (jemalloc's `multi_setting_parse_next`).
///
/// `percpu_arena:percpu`: one arena per CPU, a thread allocating from the arena of the
/// CPU it runs on. jemalloc's default is 4 arenas per CPU, handed to threads round-robin;
/// the server's threads (workers, profiler, runtime, helpers) initialised all 8 of them
/// on a 2-core machine, each with its metadata and a partly used slab per size class:
/// 2.4 MB of jemalloc metadata in an idle server, 1.4 MB with an arena per CPU (idle
/// RSS 9.4 -> 8.8 MB; `bench/ab_server.sh` at 1M keys 151.1 -> 150.7 B/key, rps within
/// noise). Unlike a fixed `narenas:1` (8.7 MB), it still gives a many-core machine an
/// arena per core.
///
/// `tcache_max:4096`: threads cache freed blocks of up to 4 KB only (jemalloc's default
/// is 32 KB). The request path allocates next to nothing from jemalloc (entries live in
/// the store's slabs; a 1M-key pipelined load makes ~7,000 small allocations in all),
/// so what the thread caches held after a load was mostly idle 4-32 KB buffers of start-up,
/// the load and the periodic tasks: 1.75 MB. Blocks above 4 KB now go back to their arena
/// (one uncontended lock per call, beside a copy of over 4 KB). `bench/memory.sh`:
/// 135.5-136.9 -> 135.2-135.5 B/key at 1M keys (4 pairs on one build).
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,\
slab_sizes:65-256:4,percpu_arena:percpu,tcache_max:4096\0";

#[derive(Parser)]
#[command(
    name = "augur",
    version,
    about = "A multi-tenant, self-modelling cache server speaking the Redis protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the cache server.
    Serve(Box<cmd_serve::Args>),
    /// Compute a miss-ratio curve of a trace with a model.
    Mrc(cmd_mrc::MrcArgs),
    /// Run a model and its matching exact simulator on a trace and print the MAE table.
    MrcCompare(cmd_mrc::CompareArgs),
    /// Simulate an eviction policy on a trace at one or more cache sizes.
    Sim(cmd_sim::Args),
    /// Live per-tenant table of a running server; writes each tenant's curves.
    Tenants(cmd_tenants::Args),
    /// Replay traces against a running server (GET, and SET on a miss).
    Replay(cmd_replay::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(a) => cmd_serve::run(*a),
        Command::Tenants(a) => cmd_tenants::run(a),
        Command::Mrc(a) => cmd_mrc::run_mrc(a),
        Command::MrcCompare(a) => cmd_mrc::run_compare(a),
        Command::Sim(a) => cmd_sim::run(a),
        Command::Replay(a) => cmd_replay::run(a),
    }
}
