#!/usr/bin/env bash
# Server fidelity (issue: MRC engine, item 6): replay a shared trace against `augur serve`
# with allkeys-lru at K = 1 and K = 5, then simulate Redis's pooled K-LRU (augur sim
# redis-lru:K) at the number of keys the server held at the end, and compare miss ratios
# over the whole trace (both see the same cold misses). Bar: within 1 percentage point.
# Usage: bench/fidelity.sh [TRACE=scarab-recs] [MAXMEM=15mb] [CONNECTIONS=4]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
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
