#!/usr/bin/env bash
# LHD simulator speed against libCacheSim's LHD (issue 9: ">= 2x libCacheSim's LHD
# requests/s on the same trace and machine, one thread each"). Both are pinned to one
# core (taskset -c ${CORE:-0}) and alternated REPS times; the best run of each is kept.
# Both are given the same absolute cache size (SIZE of the working set by object count,
# computed once, untimed, by `augur sim --sizes SIZE`).
# - augur: the whole `augur sim --policy lhd:A --sizes N --threads 1` process, wall
#   time (columns aA-s): with an absolute size and one thread it streams the trace,
#   decoding on the simulating thread as libCacheSim does; and its own in-process time
#   (aA-in: "simulations in X s, reading included" on stderr: opening, decoding and
#   simulating the trace, what libCacheSim's timing covers; process start-up is not in
#   it, as Python's is not in libCacheSim's). A = 64 (Augur's default, the paper's
#   RankCache value and the issue's) and A = 8: libCacheSim's LHD (the authors'
#   simulator) samples 8 candidates per eviction until it has reconfigured 51 times,
#   i.e. for the first 53M requests (its `rank`: "sample few candidates early in the trace";
#   its associativity of 32 applies only after that), so on every shared trace A = 8
#   (plus 8 recent admissions, as both do) is the same work per eviction.
# - libCacheSim: `LHD(...).process_trace(reader)` only (its defaults; it reads and
#   decodes the trace as it simulates; Python's start-up and import are not counted).
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
printf '%-13s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %9s %8s %8s\n' trace requests cache a64-s a64-in a8-s a8-in lcs-s a64-mr a8-mr lcs-mr 'x(a64)' 'x(a64-in)' 'x(a8)' 'x(a8-in)'
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found" >&2; exit 1; }
  cache=$("$AUGUR" sim "$f" --policy lru --sizes "$SIZE" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')
  declare -A whole=([64]=999999 [8]=999999) inproc=([64]=999999 [8]=999999) mr=()
  best_l=999999
  for _ in $(seq 1 "$REPS"); do
    for a in 64 8; do
      t0=$(date +%s.%N)
      json=$(taskset -c "$CORE" "$AUGUR" sim "$f" --policy "lhd:$a" --sizes "$cache" --threads 1 --json 2>/tmp/lhd_speed.err)
      t1=$(date +%s.%N)
      t=$(echo "$t1 - $t0" | bc -l)
      read -r requests m < <(echo "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["requests"], r["miss_ratio"])')
      tin=$(sed -n 's/.* simulations in \([0-9.]*\)s, reading included.*/\1/p' /tmp/lhd_speed.err)
      whole[$a]=$(python3 -c "print(min(${whole[$a]}, $t))")
      inproc[$a]=$(python3 -c "print(min(${inproc[$a]}, $tin))")
      mr[$a]=$m
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
r, c, w64, i64, w8, i8, l, m64, m8, lmr = $requests, $cache, ${whole[64]}, ${inproc[64]}, ${whole[8]}, ${inproc[8]}, $best_l, ${mr[64]}, ${mr[8]}, $lmr
print('%-13s %9d %8d %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %7.2fx %8.2fx %7.2fx %7.2fx' % ('$name', r, c, w64, i64, w8, i8, l, m64, m8, lmr, l / w64, l / i64, l / w8, l / i8))"
done
