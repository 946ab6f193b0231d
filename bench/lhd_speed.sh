#!/usr/bin/env bash
# LHD simulator speed against libCacheSim's LHD (issue 9: ">= 2x libCacheSim's LHD
# requests/s on the same trace and machine, one thread each"). Both are pinned to one
# core (taskset -c ${CORE:-0}) and alternated REPS times; the best run of each is kept.
# - augur: the whole `augur sim --policy lhd --threads 1` process (reading and decoding
#   the trace, counting its working set, simulating), wall time.
# - libCacheSim: `LHD(...).process_trace(reader)` only (it reads and decodes the trace
#   as it simulates; Python's start-up and import are not counted).
# So the ratio counts against Augur: its trace loading is in, libCacheSim's start-up is out.
# Usage: bench/lhd_speed.sh [TRACE ...]  (default: arc_p3 scarab-recs cloudphysics
# arc_oltp orm-busy); SIZE (default 25%) is the cache size, by object count.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=(arc_p3 scarab-recs cloudphysics arc_oltp orm-busy)
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
REPS=${REPS:-3}
SIZE=${SIZE:-25%}
CORE=${CORE:-0}
python3 -c 'import libcachesim' 2>/dev/null || { echo "pip install libcachesim"; exit 2; }
[ -n "${NO_BUILD:-}" ] || build_augur
printf '%-13s %9s %9s %10s %10s %8s %8s %7s\n' trace requests cache augur-s lcs-s augur-mr lcs-mr ratio
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found" >&2; exit 1; }
  best_a=999999; best_l=999999
  for _ in $(seq 1 "$REPS"); do
    t0=$(date +%s.%N)
    json=$(taskset -c "$CORE" "$AUGUR" sim "$f" --policy lhd --sizes "$SIZE" --threads 1 --json 2>/dev/null)
    t1=$(date +%s.%N)
    a=$(echo "$t1 - $t0" | bc -l)
    read -r requests cache amr < <(echo "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["requests"], r["size"], r["miss_ratio"])')
    read -r l lmr < <(taskset -c "$CORE" python3 - "$f" "$cache" <<'PY'
import sys, time
import libcachesim as lcs
path, size = sys.argv[1], int(sys.argv[2])
reader = lcs.TraceReader(trace=path, trace_type=lcs.TraceType.ORACLE_GENERAL_TRACE,
                         reader_init_params=lcs.ReaderInitParam(ignore_obj_size=True))
cache = lcs.LHD(cache_size=size)
t = time.perf_counter()
mr = cache.process_trace(reader)[0]
print(time.perf_counter() - t, mr)
PY
)
    best_a=$(python3 -c "print(min($best_a, $a))")
    best_l=$(python3 -c "print(min($best_l, $l))")
  done
  python3 -c "
r, c, a, l, amr, lmr = $requests, $cache, $best_a, $best_l, $amr, $lmr
print(f'%-13s %9d %9d %10.3f %10.3f %8.4f %8.4f %6.2fx' % ('$name', r, c, a, l, amr, lmr, l / a))"
done
