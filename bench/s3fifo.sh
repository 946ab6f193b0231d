#!/usr/bin/env bash
# S3-FIFO against its peer: Augur's `augur sim --policy s3fifo` (exact queues) and
# `s3fifo:8` (sampled queues, what a sampling store can run) beside libCacheSim's S3FIFO
# (Python bindings, `pip install libcachesim`, move_to_main_threshold=1 as the paper), by
# object count at 10 / 25 / 50 % of the working set; Augur's lhd and redis-lru:5 for scale.
# Usage: bench/s3fifo.sh [TRACE ...]   (default: every trace in ../shared/traces)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
TRACES=("$@")
if [ ${#TRACES[@]} -eq 0 ]; then
  for f in "$DIR"/*.oracleGeneral.bin.zst; do TRACES+=("$(basename "$f" .oracleGeneral.bin.zst)"); done
fi
python3 -c 'import libcachesim' 2>/dev/null || { echo "pip install libcachesim"; exit 2; }
build_augur
printf '%-13s %4s %8s %8s %8s %8s %8s %8s\n' trace ws% s3fifo s3fifo:8 lcs-s3 delta lhd redis-lru:5
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found"; continue; }
  ours=$("$AUGUR" sim "$f" --policy s3fifo,s3fifo:8,lhd,redis-lru:5 --sizes 10%,25%,50% --json 2>/dev/null)
  python3 - "$name" "$f" "$ours" <<'PY'
import json, sys
import libcachesim as lcs
name, path, ours = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for size in sorted({r["size"] for r in ours}):
    row = {r["policy"]: r for r in ours if r["size"] == size}
    reader = lcs.TraceReader(trace=path, trace_type=lcs.TraceType.ORACLE_GENERAL_TRACE,
                             reader_init_params=lcs.ReaderInitParam(ignore_obj_size=True))
    ref = lcs.S3FIFO(cache_size=size, move_to_main_threshold=1).process_trace(reader)[0]
    m = {p: row[p]["miss_ratio"] for p in row}
    ws = round(100 * row["s3fifo"]["ws_fraction"])
    print(f'{name:<13} {ws:>3}% {m["s3fifo"]:8.4f} {m["s3fifo:8"]:8.4f} {ref:8.4f} '
          f'{m["s3fifo"] - ref:+8.4f} {m["lhd:64"]:8.4f} {m["redis-lru:5"]:8.4f}')
PY
done
