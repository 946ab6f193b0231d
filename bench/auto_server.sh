#!/usr/bin/env bash
# `maxmemory-policy auto` in the server (issue 9, item 3), against Redis and against
# the simulator. Each shared trace is replayed (100-byte values, 4 connections, a GET
# miss followed by a filling SET) into, at the same maxmemory (PCT of the working set's
# keys x BYTES_PER_KEY bytes):
#   redis      redis-server (Debian's), allkeys-lru, maxmemory-samples 5
#   augur-lru  augur serve --maxmemory-policy allkeys-lru (K = 5)
#   augur-auto augur serve --maxmemory-policy auto
# and `augur sim --policy auto` is run at the number of keys the auto server held
# (fidelity: the same chooser over the same references; bar as bench/fidelity.sh, 1
# point). The auto server is given the simulator's defaults for the trace, so that
# both decide on the same evidence: ten intervals over the trace (the simulator's
# default; the server's `--tenant-interval` counts the filling SETs too, so it is set
# to the trace's requests x (1 + the simulated S3-FIFO miss ratio) / 10; no time bound)
# and a miniature sampling rate of 8192 / objects clamped to [0.01, 1]
# (`--tenant-sample-rate`). Printed per cell: miss ratios, keys
# held, the policy the auto server ran at the end (INFO dlru), and the simulator's.
# Usage: bench/auto_server.sh [TRACE ...]  (default: cloudphysics arc_oltp scarab-recs);
# PCTS (default "10 25 50"), BYTES_PER_KEY (default 140), PORT.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=(cloudphysics arc_oltp scarab-recs)
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
PORT=${PORT:-7611}
BPK=${BYTES_PER_KEY:-140}
PCTS=${PCTS:-10 25 50}
command -v redis-server >/dev/null || { echo "apt-get install redis-server"; exit 2; }
[ -n "${NO_BUILD:-}" ] || build_augur
replay_miss() { # ADDR-PORT TRACE -> miss ratio over the whole trace
  "$AUGUR" replay "$2" --addr "127.0.0.1:$1" --connections 4 --value-size 100 --json --no-progress |
    python3 -c 'import json,sys; print(1 - json.load(sys.stdin)["groups"][0]["hit_ratio"])'
}
status=0
printf '%-13s %4s %9s %8s %8s %8s %8s %7s %9s  %-16s %s\n' trace ws% maxmemory redis aug-lru aug-auto sim-auto diff_pp auto-keys 'server ends on' 'sim switches'
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found" >&2; status=1; continue; }
  read -r ws requests < <("$AUGUR" sim "$f" --policy lru --sizes 100% --json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)[0]; print(r["size"], r["requests"])')
  interval=$(python3 -c "print(min(max($requests // 10, 10000), 5000000))")
  rate=$(python3 -c "print(min(max(8192 / $ws, 0.01), 1.0))")
  for pct in $PCTS; do
    mem=$((ws * pct / 100 * BPK))
    mr=$("$AUGUR" sim "$f" --policy s3fifo:8 --sizes $((ws * pct / 100)) --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["miss_ratio"])')
    server_interval=$(python3 -c "print(max(1000, int($interval * (1 + $mr))))")
    start_redis $PORT --maxmemory "$mem" --maxmemory-policy allkeys-lru --maxmemory-samples 5
    redis_mr=$(replay_miss $PORT "$f"); kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
    PORT=$((PORT + 1))
    start_augur $PORT --maxmemory "$mem" --maxmemory-policy allkeys-lru --maxmemory-samples 5
    lru_mr=$(replay_miss $PORT "$f"); kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
    PORT=$((PORT + 1))
    start_augur $PORT --maxmemory "$mem" --maxmemory-policy auto \
      --tenant-interval "$server_interval" --tenant-interval-ms 3600000 --tenant-sample-rate "$rate"
    auto_mr=$(replay_miss $PORT "$f")
    keys=$(redis-cli -p $PORT dbsize)
    ends_on=$(info_field $PORT dlru maxmemory_policy_effective)
    kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
    PORT=$((PORT + 1))
    sim=$("$AUGUR" sim "$f" --policy auto --sizes "$keys" --auto-interval "$interval" --json 2>/dev/null)
    python3 - "$name" "$ws" "$pct" "$mem" "$redis_mr" "$lru_mr" "$auto_mr" "$keys" "$ends_on" "$sim" <<'PY' || status=1
import json, sys
name, ws, pct, mem = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
redis, lru, auto = (float(x) for x in sys.argv[5:8])
keys, ends_on, sim = int(sys.argv[8]), sys.argv[9], json.loads(sys.argv[10])[0]
d = (auto - sim["miss_ratio"]) * 100
print("%-13s %3s%% %9d %8.4f %8.4f %8.4f %8.4f %+7.2f %9d  %-16s %s %s" % (
    name, pct, mem, redis, lru, auto, sim["miss_ratio"], d, keys, ends_on,
    sim.get("switches"), "OK" if abs(d) <= 1 else "OVER 1pp"))
sys.exit(0 if abs(d) <= 1 else 1)
PY
  done
done
[ $status -eq 0 ] && echo "PASS: the auto server within 1 point of augur sim --policy auto everywhere" || echo "FAIL"
exit $status
