#!/usr/bin/env bash
# Server fidelity (issue: MRC engine, item 6): replay a shared trace against `augur serve`
# with allkeys-lru at K = 1 and K = 5, then simulate Redis's pooled K-LRU (augur sim
# redis-lru:K) at the number of keys the server held at the end, and compare miss ratios
# over the whole trace (both see the same cold misses). Bar: within 1 percentage point.
# Usage: bench/fidelity.sh [TRACE=scarab-recs] [MAXMEM=15mb] [CONNECTIONS=4]
#
# LHD (issue 9): bench/fidelity.sh lhd [TRACE ...] replays each trace (default: the five
# shared traces) into `augur serve --maxmemory-policy allkeys-lhd` at about 10 / 25 / 50 %
# of its working set and compares with `augur sim --policy lhd` at the number of keys the
# server held. Values are replayed at a fixed 100 bytes: the server ranks hit density per
# byte and the simulator (by object count) per object, which agree when sizes are equal.
# The memory limit is the key count times BYTES_PER_KEY (default 140, measured: block,
# index and TTL-list share of a ~10-byte key with a 100-byte value). Same bar: 1 point.
#
# The simulator is run with SIM_SEEDS seeds (default 5: 42, 43, ...) and the server is
# compared with their mean (the spread, min..max, is printed): on arc_p3 at 11 % the
# simulator's LHD alone moves by 1.6 points from one seed to another, or between 86,957
# and 87,038 objects (2026-11-29), so one seed compared a random draw of the simulator's
# with the server's; before 2026-11-29 it was seed 42 alone.
#
# S3-FIFO: bench/fidelity.sh s3fifo [TRACE ...] does the same with `--maxmemory-policy
# allkeys-s3fifo --maxmemory-samples 8` against `augur sim --policy s3fifo:8` (the
# simulator's sampled queues, by object count; the server's small-queue share is a share
# of entries, which equal sizes make the same).
#
# LFU: bench/fidelity.sh lfu [TRACE ...] with `--maxmemory-policy allkeys-lfu
# --lfu-decay-time 0` against `augur sim --policy redis-lfu:5` (the simulator's requests
# carry no wall time to decay by, so the server runs without decay too).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ "${1:-}" = lhd ] || [ "${1:-}" = s3fifo ] || [ "${1:-}" = lfu ]; then
  MODE=$1
  if [ "$MODE" = lhd ]; then
    SERVER_ARGS=(--maxmemory-policy allkeys-lhd); SIM_POLICY=lhd
  elif [ "$MODE" = lfu ]; then
    SERVER_ARGS=(--maxmemory-policy allkeys-lfu --lfu-decay-time 0); SIM_POLICY=redis-lfu:5
  else
    SERVER_ARGS=(--maxmemory-policy allkeys-s3fifo --maxmemory-samples 8); SIM_POLICY=s3fifo:8
  fi
  shift
  TRACES=("$@")
  [ ${#TRACES[@]} -gt 0 ] || TRACES=(cloudphysics arc_oltp scarab-recs arc_p3 orm-busy)
  DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
  PORT=${PORT:-7511}
  BPK=${BYTES_PER_KEY:-140}
  build_augur
  status=0
  SEEDS=${SIM_SEEDS:-5}
  printf '%-13s %5s %8s %8s %8s %8s %7s %15s\n' trace ws% keys evicted server sim diff_pp sim_seeds
  for name in "${TRACES[@]}"; do
    f=$DIR/$name.oracleGeneral.bin.zst
    [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
    [ -f "$f" ] || { echo "trace $name not found (see tests/data/traces/README.md; set AUGUR_TRACES)"; status=1; continue; }
    ws=$("$AUGUR" sim "$f" --policy lru --sizes 100% --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')
    for pct in 10 25 50; do
      start_augur $PORT --maxmemory $((ws * pct / 100 * BPK)) "${SERVER_ARGS[@]}"
      replay=$("$AUGUR" replay "$f" --addr 127.0.0.1:$PORT --connections 4 --value-size 100 --json --no-progress)
      keys=$(redis-cli -p $PORT dbsize)
      evicted=$(info_field $PORT stats evicted_keys)
      kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
      sims=()
      for seed in $(seq 42 $((42 + SEEDS - 1))); do
        sims+=("$("$AUGUR" sim "$f" --policy "$SIM_POLICY" --sizes "$keys" --seed "$seed" --json 2>/dev/null)")
      done
      python3 - "$name" "$ws" "$keys" "$evicted" "$replay" "${sims[@]}" <<'PY' || status=1
import json, sys
name, ws, keys, evicted = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
server = 1 - json.loads(sys.argv[5])["groups"][0]["hit_ratio"]
runs = [json.loads(a)[0]["miss_ratio"] for a in sys.argv[6:]]
sim = sum(runs) / len(runs)
d = (server - sim) * 100
spread = "%.4f..%.4f" % (min(runs), max(runs))
print("%-13s %4.1f%% %8d %8d %8.4f %8.4f %+7.2f %15s %s" % (name, 100 * keys / ws, keys, evicted, server, sim, d, spread, "OK" if abs(d) <= 1 else "OVER 1pp"))
sys.exit(0 if abs(d) <= 1 else 1)
PY
      PORT=$((PORT + 1))
    done
  done
  [ $status -eq 0 ] && echo "PASS: server $MODE within 1 point of augur sim --policy $SIM_POLICY (mean of $SEEDS seeds) everywhere" || echo "FAIL"
  exit $status
fi
NAME=${1:-scarab-recs}
MAXMEM=${2:-15mb}
CONN=${3:-4}
TRACE="${AUGUR_TRACES:-$ROOT/../shared/traces}/$NAME.oracleGeneral.bin.zst"
[ -f "$TRACE" ] || { echo "trace $TRACE not found: the large traces are not in the repository; see tests/data/traces/README.md for their sources and set AUGUR_TRACES to their folder"; exit 2; }
build_augur
status=0
port=7501
for K in 1 5; do
  start_augur $port --maxmemory "$MAXMEM" --maxmemory-policy allkeys-lru --maxmemory-samples "$K"
  replay=$("$AUGUR" replay "$TRACE" --addr 127.0.0.1:$port --connections "$CONN" --json --no-progress)
  keys=$(redis-cli -p $port dbsize)
  evicted=$(info_field $port stats evicted_keys)
  sim=$("$AUGUR" sim "$TRACE" --policy "redis-lru:$K" --sizes "$keys" --json)
  python3 - "$K" "$keys" "$evicted" "$replay" "$sim" <<'PY' || status=1
import json, sys
k, keys, evicted, replay, sim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5])
def find(o, name):
    # First value for `name` anywhere in a JSON document.
    if isinstance(o, dict):
        if name in o: return o[name]
        o = list(o.values())
    if isinstance(o, list):
        for v in o:
            r = find(v, name)
            if r is not None: return r
    return None
server_mr = 1 - find(replay, "hit_ratio")
sim_mr = find(sim, "miss_ratio")
diff = abs(server_mr - sim_mr)
print("K=%s keys_held=%d evicted=%d  server miss ratio %.4f  simulator redis-lru:%s %.4f  diff %.2f pp  %s"
      % (k, keys, evicted, server_mr, k, sim_mr, diff * 100, "OK" if diff <= 0.01 else "OVER 1pp"))
sys.exit(0 if diff <= 0.01 else 1)
PY
  kill "$LAST_PID"; port=$((port + 1))
done
exit $status
