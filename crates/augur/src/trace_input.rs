//! Reading a trace file for the modelling commands (`augur mrc`, `mrc-compare`, `sim`):
//! its format from `--format` or else from the file, and the in-memory form the
//! simulators take.

use std::path::Path;

use anyhow::{Context, Result};
use augur_sim::TraceOp;
use augur_trace::{Op, TraceFormat, TraceReader};

/// Opens `path` with `format` (the `--format` value) if given, else as told from the
/// file name and contents.
pub fn open(path: &Path, format: Option<&str>) -> Result<TraceReader> {
    match format {
        Some(f) => {
            let format: TraceFormat = f.parse()?;
            augur_trace::open(path, &format)
        }
        None => augur_trace::open_auto(path),
    }
    .with_context(|| format!("opening {}", path.display()))
}

/// Loads the whole trace for the simulators, with its number of DELETEs. GETs and SETs
/// become references (look-aside: a miss fills the key); DELETEs are kept, in order,
/// and remove the key when simulated (and from the models), not counted as requests.
pub fn load_for_simulation(path: &Path, format: Option<&str>) -> Result<(Vec<TraceOp>, u64)> {
    let reader = open(path, format)?;
    let mut trace = Vec::with_capacity(reader.len_hint().unwrap_or(0) as usize);
    let deletes = stream_reader(reader, path, false, |chunk| trace.extend_from_slice(chunk))?;
    Ok((trace, deletes))
}

/// Converts one trace request to the simulators' form (GET and SET are references).
fn to_trace_op(r: &augur_trace::Request) -> TraceOp {
    match r.op {
        Op::Get | Op::Set => TraceOp::get(r.key, r.size),
        Op::Delete => TraceOp::delete(r.key),
    }
}

/// Entries per chunk handed to `f` by [`stream_for_simulation`] when decoding inline:
/// 2048 (32 KB of entries, decoded straight into the simulators' form, which stay in L1
/// or L2 until the simulator reads them). 8192 ran no faster on long traces and faulted
/// in 24 more fresh pages, ~50 us on this VM, which shows on the shortest traces (lirs_cpp,
/// 9k requests, ~1 ms); 65,536 spilled L2.
const STREAM_CHUNK: usize = 1 << 11;

/// Reads the trace without holding it: `f` gets it in order, chunk by chunk, in the
/// simulators' form. `inline` decodes on the calling thread (one thread in all, as
/// libCacheSim runs); otherwise a decoder thread reads ahead
/// ([`TraceReader::for_each_batch`]). Returns the number of DELETEs.
pub fn stream_for_simulation(
    path: &Path,
    format: Option<&str>,
    inline: bool,
    f: impl FnMut(&[TraceOp]),
) -> Result<u64> {
    stream_reader(open(path, format)?, path, inline, f)
}

/// [`stream_for_simulation`] of an opened `reader` (`path` names it in errors).
fn stream_reader(
    reader: TraceReader,
    path: &Path,
    inline: bool,
    mut f: impl FnMut(&[TraceOp]),
) -> Result<u64> {
    let mut deletes = 0u64;
    let mut chunk: Vec<TraceOp> = Vec::with_capacity(STREAM_CHUNK);
    if inline {
        let mut reader = reader;
        loop {
            chunk.clear();
            let n = reader
                .read_batch_with(&mut chunk, STREAM_CHUNK, |r| {
                    deletes += u64::from(r.op == Op::Delete);
                    to_trace_op(&r)
                })
                .with_context(|| format!("reading {}", path.display()))?;
            if n == 0 {
                break;
            }
            f(&chunk);
        }
    } else {
        reader
            .for_each_batch(|batch| {
                deletes += batch.iter().filter(|r| r.op == Op::Delete).count() as u64;
                chunk.clear();
                chunk.extend(batch.iter().map(to_trace_op));
                f(&chunk);
                Ok(())
            })
            .with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(deletes)
}
