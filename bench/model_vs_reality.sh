#!/usr/bin/env bash
# Model vs reality (issue 8): does a tenant's miss ratio during an interval match what its
# merged online curve predicted at the memory it held? One tenant (the default), kredis
# mode (so the K in use is the K the merged curve picked), default sampling (auto:
# R = 0.01), intervals of INTERVAL_MS. For each trace: a first replay without a limit
# measures the working set in the store's own bytes (used_memory), then the server is
# restarted with maxmemory = FRACTION of it and the trace is replayed while TENANT INFO is
# polled once an interval; the measured replay loops the prefix for DURATION. Prints per
# interval: used, K, the observed miss ratio, the forecast (TENANT INFO
# `predicted_miss_ratio`: the curve of the intervals before, at the memory held) and the
# model's figure for the interval itself (`model_miss_ratio`: the interval's own
# references' curve at the memory held); and per trace the mean and max |observed -
# forecast| and |observed - model| after the first WARMUP intervals (the bar: within 0.02).
# Usage: [SERVER_ARGS='--tenant-k-switch-margin 0'] bench/model_vs_reality.sh [LIMIT=2000000] [FRACTION=0.5]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
LIMIT=${1:-2000000}
FRACTION=${2:-0.5}
INTERVAL_MS=${INTERVAL_MS:-2000}
DURATION=${DURATION:-30s}
WARMUP=${WARMUP:-2}
TRACES=${TRACES:-"orm-busy scarab-recs arc_oltp"}
T=${TRACE_DIR:-${AUGUR_TRACES:-$ROOT/../shared/traces}}
build_augur
port=7301
for name in $TRACES; do
  trace="$T/$name.oracleGeneral.bin.zst"
  start_augur $port --maxmemory-policy allkeys-lru
  "$AUGUR" replay "$trace" --addr 127.0.0.1:$port --limit "$LIMIT" --connections 4 --no-progress >/dev/null
  ws=$(info_field $port memory used_memory)
  kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
  maxmem=$(python3 -c "print(int($ws * $FRACTION))")
  start_augur $port --maxmemory "$maxmem" --maxmemory-policy allkeys-lru \
    --tenant-partitioning kredis --tenant-interval-ms "$INTERVAL_MS" --tenant-interval 100000000 \
    ${SERVER_ARGS:-}
  "$AUGUR" replay "$trace" --addr 127.0.0.1:$port --limit "$LIMIT" --connections 4 --no-progress \
    --loop --duration "$DURATION" >/dev/null &
  rp=$!
  OUT=$(mktemp)
  last=0
  while kill -0 $rp 2>/dev/null; do
    sleep 0.2
    info=$(redis-cli -p $port tenant info default | paste -d' ' - -)
    n=$(awk '$1=="intervals"{print $2}' <<<"$info")
    if [ "$n" != "$last" ]; then
      last=$n
      awk -v n="$n" '{v[$1]=$2} END {print n, v["used_memory"], v["k"], v["observed_miss_ratio"], v["predicted_miss_ratio"], v["model_miss_ratio"]}' <<<"$info" >>"$OUT"
    fi
  done
  wait $rp || true
  echo "== $name: working set $ws B, maxmemory $maxmem B ($FRACTION), first $LIMIT requests looped for $DURATION"
  python3 - "$OUT" "$WARMUP" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 6]
warm = int(sys.argv[2])
print("%9s %12s %3s %9s %9s %7s %9s %7s" % ("interval", "used", "K", "observed", "forecast", "|diff|", "model", "|diff|"))
diffs = {"forecast": [], "model": []}
def diff(a, b):
    try:
        return abs(float(a) - float(b))
    except ValueError:
        return None
for n, used, k, obs, pred, model in rows:
    d, dm = diff(obs, pred), diff(obs, model)
    if int(n) > warm:
        for name, x in (("forecast", d), ("model", dm)):
            if x is not None:
                diffs[name].append(x)
    f = lambda x: "-" if x is None else "%.4f" % x
    print("%9s %12s %3s %9s %9s %7s %9s %7s" % (n, used, k, obs[:6], pred[:6], f(d), model[:6], f(dm)))
for name, ds in diffs.items():
    if ds:
        print("after %d warm-up intervals, %s: mean |diff| %.4f, max %.4f over %d intervals (bar 0.02)"
              % (warm, name, sum(ds) / len(ds), max(ds), len(ds)))
PY
  kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
done
