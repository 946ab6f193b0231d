#!/usr/bin/env bash
# Keys kept at a small maxmemory with large values, augur against redis-server (same
# maxmemory and policy). Each shard of Augur keeps to its 1/64 share of maxmemory; a
# value past 1/16 of a share borrows what the other shards leave (shard.rs,
# LARGE_WRITE_SHARES), so that the store, not each share, is what fills. For each value
# size: FLUSHALL, then N SETs of distinct keys; prints the keys kept, used_memory and
# evicted_keys of both servers and augur/redis of the keys kept.
# Usage: bench/large_values.sh [MAXMEMORY] [POLICY]  (default 11mb allkeys-lru: the
# memory of Redis's unit/maxmemory client-eviction tests).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
MAX=${1:-11mb}
POLICY=${2:-allkeys-lru}
[ -n "${NO_BUILD:-}" ] || build_augur
start_augur 7611 --maxmemory "$MAX" --maxmemory-policy "$POLICY"
start_redis 7612 --maxmemory "$MAX" --maxmemory-policy "$POLICY"
python3 - "$MAX" "$POLICY" <<'PY'
import sys, redis
servers = {"augur": redis.Redis(port=7611), "redis": redis.Redis(port=7612)}
print(f"maxmemory {sys.argv[1]}, {sys.argv[2]}")
print("%9s %6s | %11s %12s %8s | %11s %12s %8s | %6s" % ("value B", "SETs", "augur keys", "used_memory", "evicted",
      "redis keys", "used_memory", "evicted", "ratio"))
for size, n in [(300_000, 200), (100_000, 400), (30_000, 1000), (10_000, 3000), (1_000, 30000)]:
    row = {}
    for name, r in servers.items():
        r.flushall()
        r.config_resetstat()
        value = b"x" * size
        p = r.pipeline(transaction=False)
        for i in range(n):
            p.set(f"k:{i}", value)
            if i % 50 == 49:
                p.execute()
        p.execute()
        info = r.info()
        row[name] = (r.dbsize(), info["used_memory"], info["evicted_keys"])
    a, b = row["augur"], row["redis"]
    print("%9d %6d | %11d %12d %8d | %11d %12d %8d | %6.2f" % (size, n, *a, *b, a[0] / b[0]))
PY
