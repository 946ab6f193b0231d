#!/usr/bin/env bash
# Memory under a drifting mix of value sizes, the hard case for size-class allocators:
# SETs of random keys (3N key space) at `maxmemory` MB with allkeys-lru, values of
# 10-120 bytes for the first half of the writes and 80-250 bytes for the second, so the
# first half's size classes empty out at random while new classes fill. Reports, WAIT
# seconds after the load (active defragmentation runs meanwhile): keys held, used_memory,
# RSS, the allocator figures, evictions and defragmentation moves, for augur (and
# OLD_AUGUR, another build, if given) and Debian's redis-server.
# Usage: bench/memory_drift.sh [WRITES=1500000] [MAXMEMORY_MB=64] [WAIT=15]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-1500000}; MB=${2:-64}; WAIT=${3:-15}
[ -n "${NO_BUILD:-}" ] || build_augur
drive() { # name port pid
  python3 - "$1" "$2" "$3" "$N" "$WAIT" <<'PY'
import random, sys, time
import redis
name, port, pid, n, wait = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
r = redis.Redis(port=port)
base = int(open(f"/proc/{pid}/status").read().split("VmRSS:")[1].split()[0]) * 1024
rnd = random.Random(7)
p = r.pipeline(transaction=False)
for i in range(n):
    lo, hi = (10, 120) if i < n // 2 else (80, 250)
    p.set(b"k%09d" % rnd.randrange(3 * n), b"x" * rnd.randint(lo, hi))
    if i % 2000 == 1999:
        p.execute()
p.execute()
time.sleep(wait)
m, s = r.info("memory"), r.info("stats")
rss = int(open(f"/proc/{pid}/status").read().split("VmRSS:")[1].split()[0]) * 1024
print("%-9s keys=%-7d used_memory=%5.1f MiB rss=%5.1f MiB baseline=%4.1f MiB "
      "allocator_allocated=%5.1f active=%5.1f frag=%s evicted=%d defrag_hits=%d"
      % (name, r.dbsize(), m["used_memory"] / 2**20, rss / 2**20, base / 2**20,
         m.get("allocator_allocated", 0) / 2**20, m.get("allocator_active", 0) / 2**20,
         m.get("allocator_frag_ratio"), s["evicted_keys"], s.get("active_defrag_hits", 0)))
PY
}
start_augur 7211 --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru; drive augur 7211 "$LAST_PID"
if [ -n "${OLD_AUGUR:-}" ]; then
  AUGUR=$OLD_AUGUR start_augur 7212 --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru
  drive old-augur 7212 "$LAST_PID"
fi
start_redis 7213 --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru; drive redis 7213 "$LAST_PID"
echo "bound (issue 10): rss <= maxmemory x 1.1 + baseline"
