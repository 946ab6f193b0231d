#!/usr/bin/env bash
# Redis's LFU policies in Augur against redis-server's own, by misses. Each shared trace
# is replayed (`augur replay`: 100-byte values, 4 connections, a GET miss followed by a
# filling SET) into four servers with the same memory for data (PCT of the working set's
# keys x BYTES_PER_KEY bytes; redis-server's maxmemory is that plus the used_memory it
# starts with, ~0.9 MB, which Redis counts against maxmemory and Augur does not have),
# maxmemory-samples 5 and Redis's LFU defaults (lfu-log-factor 10, lfu-decay-time 1):
#   redis-lru   redis-server (Debian's 7.0.15) allkeys-lru
#   redis-lfu   redis-server allkeys-lfu
#   augur-lru   augur serve --maxmemory-policy allkeys-lru
#   augur-lfu   augur serve --maxmemory-policy allkeys-lfu
# Printed per cell: the four miss ratios over the whole trace; what LFU changes against
# LRU in each server (lfu - lru, points: the policy's own effect, comparable across the
# two servers); augur-lfu - redis-lfu (points: the policy plus Augur's memory per key);
# and the keys each LFU server held at the end (the same maxmemory holds more of Augur's
# keys).
# Usage: bench/lfu_server.sh [TRACE ...]  (default: cloudphysics arc_oltp scarab-recs);
# PCTS (default "10 25 50"), BYTES_PER_KEY (default 140), PORT. The small LIRS traces
# (a few hundred keys at 10 %) say little here: redis-server also counts its 4 clients'
# buffers against maxmemory (it held no key at all in two such cells), and Augur's 64
# shards each keep a 16-entry pool over ~10 keys, whose scores go stale (as Redis's pool
# does; see BENCHMARKS.md).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=(cloudphysics arc_oltp scarab-recs)
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
PORT=${PORT:-7651}
BPK=${BYTES_PER_KEY:-140}
PCTS=${PCTS:-10 25 50}
command -v redis-server >/dev/null || { echo "apt-get install redis-server"; exit 2; }
[ -n "${NO_BUILD:-}" ] || build_augur
# replay PORT TRACE -> "miss_ratio keys"
replay() {
  local mr
  mr=$("$AUGUR" replay "$2" --addr "127.0.0.1:$1" --connections 4 --value-size 100 --json --no-progress |
    python3 -c 'import json,sys; print(1 - json.load(sys.stdin)["groups"][0]["hit_ratio"])')
  echo "$mr $(redis-cli -p "$1" dbsize)"
}
printf '%-13s %4s %9s %9s %9s %9s %9s %8s %8s %8s %9s %9s\n' trace ws% maxmemory redis-lru redis-lfu augur-lru augur-lfu 'r lfu-lru' 'a lfu-lru' 'a-r lfu' 'redis keys' 'augur keys'
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found" >&2; exit 1; }
  ws=$("$AUGUR" sim "$f" --policy lru --sizes 100% --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')
  for pct in $PCTS; do
    mem=$((ws * pct / 100 * BPK))
    declare -A mr=() keys=()
    for who in redis-lru redis-lfu augur-lru augur-lfu; do
      policy=allkeys-${who#*-}
      case $who in
        redis-*)
          start_redis $PORT --maxmemory-policy "$policy" --maxmemory-samples 5
          base=$(info_field $PORT memory used_memory)
          redis-cli -p $PORT config set maxmemory $((mem + base)) >/dev/null ;;
        augur-*) start_augur $PORT --maxmemory "$mem" --maxmemory-policy "$policy" --maxmemory-samples 5 ;;
      esac
      read -r mr[$who] keys[$who] < <(replay $PORT "$f")
      kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
      PORT=$((PORT + 1))
    done
    python3 -c "
rl, rf, al, af = ${mr[redis-lru]}, ${mr[redis-lfu]}, ${mr[augur-lru]}, ${mr[augur-lfu]}
print('%-13s %3s%% %9d %9.4f %9.4f %9.4f %9.4f %+8.2f %+8.2f %+8.2f %9d %9d' % ('$name', '$pct', $mem, rl, rf, al, af, (rf - rl) * 100, (af - al) * 100, (af - rf) * 100, ${keys[redis-lfu]}, ${keys[augur-lfu]}))"
  done
done
