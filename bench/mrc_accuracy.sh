#!/usr/bin/env bash
# MRC accuracy sweep (kRedis §6.3 protocol): KRR (unsampled and R = 0.01) and Olken
# against augur-sim's exact simulators (plain K-LRU, Redis pooled K-LRU, exact LRU), MAE
# at 40 sizes evenly spaced up to the working set, on every trace in /work/shared/traces
# (byte-level too on cloudphysics). Prints the MAE table and exits non-zero if a bar is
# missed (see crates/augur-mrc/examples/mrc_accuracy.rs for the bars).
# Takes ~15-30 minutes on 2 cores (arc_p3 dominates). Extra args are passed through,
# e.g. bench/mrc_accuracy.sh --traces lirs_sprite,cloudphysics
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p augur-mrc --example mrc_accuracy -- --check "$@"
