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
    let mut deletes = 0u64;
    reader
        .for_each_batch(|batch| {
            trace.extend(batch.iter().map(|r| match r.op {
                Op::Get | Op::Set => TraceOp::get(r.key, r.size),
                Op::Delete => {
                    deletes += 1;
                    TraceOp::delete(r.key)
                }
            }));
            Ok(())
        })
        .with_context(|| format!("reading {}", path.display()))?;
    Ok((trace, deletes))
}
