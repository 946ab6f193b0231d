#!/usr/bin/env bash
# DLRU in the server (DLRU §4.3, issue 9): `augur replay` with a miss penalty (on a GET
# miss the client sleeps PENALTY, then SETs) against `augur serve` with
#   auto   --maxmemory-samples auto (DLRU chooses K every interval)
#   kN     --maxmemory-samples N (fixed K; k5 is Redis's default)
# at maxmemory = empty used_memory + FRACTION x working set, on shared traces and on
# DLRU §4.3.3's two-phase workload (bench/dlru_twophase.py). Reports throughput and mean
# latency per run and the median over REPS repetitions; configurations are run in an
# order rotated every repetition (the machine is shared: alternate, take medians).
#
# Traces: where K matters on their first PREFIX requests (`augur sim -p redis-lru:1,5,16
# -s 30%,75%`): two-phase (K = 1 best at 75 %), cloudphysics (K = 1 best at 75 %, 16 at
# 30 %), arc_oltp (K >= 5 best at 30 %).
# Bounds: each trace's first PREFIX requests are replayed over and over (--loop) with
# CONNS connections: WARMUP seconds unmeasured, then DURATION measured seconds. The
# working set is the bytes the server reports after one pass of the prefix, no limit.
# The profiler samples at SAMPLE_RATE (DLRU uses 1/200; the prefixes hold 10^4-10^5 keys,
# and an interval needs >= 256 distinct sampled keys), and a DLRU interval ends every
# DLRU_INTERVAL GETs or INTERVAL_MS, whichever first.
#
# Usage: bench/dlru.sh   (env: TRACES FRACS CONFIGS REPS PREFIX CONNS WARMUP DURATION ...)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACE_DIR=${TRACE_DIR:-${AUGUR_TRACES:-$ROOT/../shared/traces}}
TRACES=${TRACES:-"twophase cloudphysics arc_oltp"}
FRACS=${FRACS:-"30 75"}
CONFIGS=${CONFIGS:-"auto k5 k1 k16"}
REPS=${REPS:-1}
PREFIX=${PREFIX:-100000}
CONNS=${CONNS:-16}
WARMUP=${WARMUP:-10}
DURATION=${DURATION:-20}
PENALTY=${PENALTY:-2000us}
VALUE_SIZE=${VALUE_SIZE:-200}     # uniform values, as DLRU §4.3.1 (cloudphysics's real sizes reach 68 KiB)
SAMPLE_RATE=${SAMPLE_RATE:-0.05}
INTERVAL_MS=${INTERVAL_MS:-2000}
DLRU_INTERVAL=${DLRU_INTERVAL:-100000}
PORT=${BASE_PORT:-21200}
OUT=${OUT:-/tmp/augur-dlru-bench}
mkdir -p "$OUT"
[ "${SKIP_BUILD:-0}" = 1 ] || build_augur
next_port() { PORT=$((PORT + 1)); }
stop_server() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

trace_path() {
  if [ "$1" = twophase ]; then
    [ -f "$OUT/twophase.oracleGeneral.bin" ] ||
      python3 "$(dirname "$0")/dlru_twophase.py" "$OUT/twophase.oracleGeneral.bin"
    echo "$OUT/twophase.oracleGeneral.bin"
  else
    echo "$TRACE_DIR/$1.oracleGeneral.bin.zst"
  fi
}

start_config() { # CONFIG PORT MAXMEMORY
  local k=auto
  [ "$1" = auto ] || k=${1#k}
  start_augur "$2" --maxmemory "$3" --maxmemory-policy allkeys-lru --maxmemory-samples "$k" \
    --tenant-sample-rate "$SAMPLE_RATE" --tenant-interval-ms "$INTERVAL_MS" \
    --tenant-interval 1000000000 --dlru-interval "$DLRU_INTERVAL"
}

echo "trace frac config rep throughput_rps mean_latency_us hit_ratio k_end" >"$OUT/runs.txt"
t0=$(date +%s)
for tr in $TRACES; do
  path=$(trace_path "$tr")
  next_port
  start_config k5 "$PORT" 0
  pid=$LAST_PID
  empty=$(info_field "$PORT" memory used_memory)
  "$AUGUR" replay --addr "127.0.0.1:$PORT" --no-progress --value-size "$VALUE_SIZE" --limit "$PREFIX" "$path" >/dev/null
  ws=$(( $(info_field "$PORT" memory used_memory) - empty ))
  stop_server "$pid"
  echo "== $tr: working set $ws B (empty $empty B)"
  read -r -a cfgs <<<"$CONFIGS"
  for rep in $(seq 1 "$REPS"); do
    for f in $FRACS; do
      mm=$(( empty + ws * f / 100 ))
      n=${#cfgs[@]}
      for i in $(seq 0 $((n - 1))); do
        cfg=${cfgs[$(( (i + rep - 1) % n ))]}
        next_port
        start_config "$cfg" "$PORT" "$mm"
        pid=$LAST_PID
        common=(--addr "127.0.0.1:$PORT" --no-progress --loop --connections "$CONNS"
          --miss-penalty "$PENALTY" --value-size "$VALUE_SIZE" --limit "$PREFIX" "$path")
        "$AUGUR" replay "${common[@]}" --duration "${WARMUP}s" >/dev/null
        "$AUGUR" replay "${common[@]}" --duration "${DURATION}s" --json "$OUT/$tr-$f-$cfg-$rep.json" >/dev/null
        kend=$(info_field "$PORT" dlru maxmemory_samples_effective)
        redis-cli -p "$PORT" info dlru | tr -d '\r' | grep '^dlru_keyspace' >"$OUT/$tr-$f-$cfg-$rep.dlru" || true
        python3 - "$OUT/$tr-$f-$cfg-$rep.json" "$tr" "$f" "$cfg" "$rep" "$kend" >>"$OUT/runs.txt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
o = j.get("overall", j)
print(*sys.argv[2:6], round(o["throughput_rps"]), round(o["latency_us"]["mean"], 1), round(o["hit_ratio"], 4), sys.argv[6])
PY
        tail -1 "$OUT/runs.txt"
        stop_server "$pid"
      done
    done
  done
done
echo "total wall time: $(( $(date +%s) - t0 )) s"
python3 - "$OUT/runs.txt" <<'PY'
import statistics, sys
from collections import defaultdict
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
runs = defaultdict(list)
for tr, f, cfg, rep, rps, lat, hr, k in rows:
    runs[(tr, f, cfg)].append((float(rps), float(lat), float(hr)))
print(f"{'trace':12} {'mem':>4} {'config':>6} {'rps(median)':>12} {'mean lat us':>12} {'hit ratio':>9} runs")
for (tr, f, cfg), v in sorted(runs.items()):
    med = lambda i: statistics.median(x[i] for x in v)
    print(f"{tr:12} {f+'%':>4} {cfg:>6} {med(0):12.0f} {med(1):12.1f} {med(2):9.4f} {len(v)}")
PY
