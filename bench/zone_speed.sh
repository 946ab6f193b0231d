#!/usr/bin/env bash
# Speed of the compressed zone (issue 10, zExpander §4.4): zone on vs off, A/B alternated.
#  1. The replay client on a skewed workload (zipf 0.99, 2M requests over 1M keys,
#     realistic 100-byte values from iso-codes), maxmemory at 25 % of the working set:
#     throughput, mean and p99 latency (GET, then SET on a miss; 4 connections), with
#     one request in flight per connection and with 16 (`--pipeline 16`, the skewed
#     counterpart of redis-benchmark's -P 16).
#  2. redis-benchmark -t set,get -d 100 -r 1000000 at -P 1 and -P 16 with maxmemory 64mb
#     (1M keys do not fit: uniform keys, so most GETs go to the Z-zone or miss; this is
#     the zone's worst case for speed). Its values are one repeated byte, which compresses
#     far better than real data: capacity figures from this run mean nothing.
# Usage: [ZONE_ARGS="--compressed-zone-codec zstd ..."] bench/zone_speed.sh [PAIRS=3] [N=1000000]
# (ZONE_ARGS: extra flags for the zone=yes servers).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
PAIRS=${1:-3}
N=${2:-1000000}
CORPUS=${CORPUS:-/usr/share/iso-codes/json}
read -r -a ZARGS <<<"${ZONE_ARGS:-}"
# WARM=1 (default): each replay server first gets one unmeasured pass of the same trace,
# so the measured pass runs warm (full memory, the zone's dictionaries trained and its
# blocks compressed against them), as a cache server runs; WARM=0 measures from empty.
WARM=${WARM:-1}
zargs() { [ "$1" = yes ] && echo "${ZARGS[@]}"; true; }
build_augur
TMP=$(mktemp -d)
python3 "$(dirname "$0")/zipf_trace.py" "$TMP/zipf.oracleGeneral.bin" 2000000 1000000 0.99 100 1
MEM=$((1000000 * 25 / 100 * 140))
PORT=7701
echo "cores: $(nproc); pairs: $PAIRS"
echo "-- replay, zipf 0.99, maxmemory $MEM, --pipeline 1 and 16, warm-up pass: $WARM"
for pair in $(seq 1 "$PAIRS"); do
  for P in 1 16; do
    for zone in no yes; do
      start_augur $PORT --maxmemory $MEM --maxmemory-policy allkeys-lru --compressed-zone $zone $(zargs $zone)
      if [ "$WARM" = 1 ]; then
        "$AUGUR" replay "$TMP/zipf.oracleGeneral.bin" --addr 127.0.0.1:$PORT --connections 4 \
          --pipeline $P --value-size 100 --value-corpus "$CORPUS" --no-progress >/dev/null
      fi
      out=$("$AUGUR" replay "$TMP/zipf.oracleGeneral.bin" --addr 127.0.0.1:$PORT --connections 4 \
            --pipeline $P --value-size 100 --value-corpus "$CORPUS" --json --no-progress)
      python3 -c 'import json,sys; j=json.loads(sys.argv[1]); g=j["groups"][0]
print("replay pair %s P=%-2s zone=%-3s rps %9.0f  hit %.4f  mean %7.1f us  p99 %7.1f us" % (sys.argv[2], sys.argv[4], sys.argv[3], g["throughput_rps"], g["hit_ratio"], g["latency_us"]["mean"], g["latency_us"]["p99"]))' "$out" "$pair" "$zone" "$P" | tee -a "$TMP/replay"
      kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
      PORT=$((PORT + 1))
    done
  done
done
echo "-- redis-benchmark, maxmemory 64mb, -r 1000000 -d 100 -n $N -c 50"
for pair in $(seq 1 "$PAIRS"); do
  for P in 1 16; do
    for zone in no yes; do
      start_augur $PORT --maxmemory 64mb --maxmemory-policy allkeys-lru --compressed-zone $zone $(zargs $zone)
      redis-benchmark -p $PORT -t set,get -d 100 -r 1000000 -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
        | tr -d '"' | awk -F, -v z=$zone -v P=$P -v pair=$pair 'NR>1 {printf "rb pair %s P=%-2s zone=%-3s %-4s rps %10.0f  p99 %6.3f ms\n", pair, P, z, $1, $2, $7}' \
        | tee -a "$TMP/rb"
      kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
      PORT=$((PORT + 1))
    done
  done
done
python3 - "$TMP/replay" "$TMP/rb" <<'PY'
import sys, statistics, collections
rep = collections.defaultdict(list)
for l in open(sys.argv[1]):
    w = l.split()
    rep[(w[3], w[4])].append(float(w[6]))
for P in ("P=1", "P=16"):
    y, n = rep[(P, "zone=yes")], rep[(P, "zone=no")]
    if y and n:
        r = statistics.median(a / b for a, b in zip(y, n))
        print("replay %-4s median rps ratio zone/no-zone %.3f" % (P, r))
rb = collections.defaultdict(list)
for l in open(sys.argv[2]):
    w = l.split()
    rb[(w[3], w[5], w[4])].append(float(w[7]))
for P in ("P=1", "P=16"):
    for t in ("SET", "GET"):
        y, n = rb[(P, t, "zone=yes")], rb[(P, t, "zone=no")]
        if y and n:
            print("redis-benchmark %-4s %-3s median rps ratio zone/no-zone %.3f" % (P, t, statistics.median(a / b for a, b in zip(y, n))))
PY
rm -rf "$TMP"
