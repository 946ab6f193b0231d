#!/usr/bin/env bash
# Eviction under pressure: maxmemory 64mb, allkeys-lru, 5,000,000 distinct SETs
# (key:%010d, 100-byte values). Checks RSS stays within maxmemory + 10% + the process
# baseline (RSS of the empty server), and reports evicted_keys; the same for redis-server.
# Usage: bench/eviction.sh [SETS=5000000] [MAXMEM_MB=64]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SETS=${1:-5000000}
MB=${2:-64}
build_augur
GEN="python3 $(dirname "$0")/gen_keys.py"
status=0
run() { # name port pid
  local name=$1 port=$2 pid=$3
  local base; base=$(rss_bytes "$pid")
  $GEN "$SETS" | redis-cli -p "$port" --pipe | tail -1
  local rss hwm evicted keys used
  rss=$(rss_bytes "$pid"); hwm=$(hwm_bytes "$pid")
  evicted=$(info_field "$port" stats evicted_keys); keys=$(redis-cli -p "$port" dbsize)
  used=$(info_field "$port" memory used_memory)
  python3 - "$name" "$base" "$rss" "$hwm" "$evicted" "$keys" "$used" "$MB" <<'PY' || status=1
import sys
name, base, rss, hwm, ev, keys, used, mb = sys.argv[1:]
base, rss, hwm, ev, keys, used, mb = int(base), int(rss), int(hwm), int(ev), int(keys), int(used), int(mb)
limit = mb * 2**20 * 1.10 + base
ok = hwm <= limit
print("%-6s baseline=%.1f MiB rss=%.1f MiB peak=%.1f MiB bound=%.1f MiB used_memory=%.1f MiB keys=%d evicted_keys=%d  %s"
      % (name, base/2**20, rss/2**20, hwm/2**20, limit/2**20, used/2**20, keys, ev, "OK" if ok else "OVER"))
sys.exit(0 if ok else 1)
PY
}
start_augur 7301 --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru; run augur 7301 "$LAST_PID"
start_redis 7302 --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru; run redis 7302 "$LAST_PID"
exit $status
