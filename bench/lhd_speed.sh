#!/usr/bin/env bash
# LHD simulator speed against libCacheSim's LHD (issue 9: ">= 2x libCacheSim's LHD
# requests/s on the same trace and machine, one thread each"). Both are pinned to one
# core (taskset -c ${CORE:-0}) and alternated REPS times; the best run of each is kept.
# Both are given the same absolute cache size (SIZE of the working set by object count,
# computed once, untimed, by `augur sim --sizes SIZE`).
# - augur: the whole `augur sim --policy lhd:A --sizes N --threads 1` process, wall
#   time: with an absolute size and one thread it streams the trace, decoding on the
#   simulating thread as libCacheSim does. A = 64 (Augur's default, the issue's) and
#   A = 32 (libCacheSim's default associativity: the same work per eviction). Also,
#   for A = 32, Augur's own in-process time ("simulations in X s, reading included" on
#   stderr: opening, decoding and simulating the trace, as libCacheSim's timing covers),
#   column a32-in, and its ratio x(a32-in): the like-for-like of libCacheSim's figure,
#   which excludes process start-up.
# - libCacheSim: `LHD(...).process_trace(reader)` only (associativity 32, 8 admissions:
#   its defaults; it reads and decodes the trace as it simulates; Python's start-up and
#   import are not counted, while Augur's process start-up is).
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
printf '%-13s %9s %9s %8s %8s %8s %8s %8s %8s %8s %7s %7s %9s\n' trace requests cache a64-s a32-s a32-in lcs-s a64-mr a32-mr lcs-mr 'x(a64)' 'x(a32)' 'x(a32-in)'
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found" >&2; exit 1; }
  cache=$("$AUGUR" sim "$f" --policy lru --sizes "$SIZE" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')
  best_64=999999; best_32=999999; best_l=999999; best_in=999999
  for _ in $(seq 1 "$REPS"); do
    for a in 64 32; do
      t0=$(date +%s.%N)
      json=$(taskset -c "$CORE" "$AUGUR" sim "$f" --policy "lhd:$a" --sizes "$cache" --threads 1 --json 2>/tmp/lhd_speed.err)
      t1=$(date +%s.%N)
      t=$(echo "$t1 - $t0" | bc -l)
      read -r requests mr < <(echo "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["requests"], r["miss_ratio"])')
      if [ "$a" = 64 ]; then best_64=$(python3 -c "print(min($best_64, $t))"); mr64=$mr
      else best_32=$(python3 -c "print(min($best_32, $t))"); mr32=$mr
        tin=$(sed -n 's/.* simulations in \([0-9.]*\)s, reading included.*/\1/p' /tmp/lhd_speed.err)
        best_in=$(python3 -c "print(min($best_in, $tin))"); fi
    done
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
    best_l=$(python3 -c "print(min($best_l, $l))")
  done
  python3 -c "
r, c, a64, a32, ain, l, m64, m32, lmr = $requests, $cache, $best_64, $best_32, $best_in, $best_l, $mr64, $mr32, $lmr
print(f'%-13s %9d %9d %8.3f %8.3f %8.3f %8.3f %8.4f %8.4f %8.4f %6.2fx %6.2fx %8.2fx' % ('$name', r, c, a64, a32, ain, l, m64, m32, lmr, l / a64, l / a32, l / ain))"
done
