#!/usr/bin/env bash
# Cost of LHD in the server (issue 9): redis-benchmark against two augur servers, one
# under allkeys-lru and one under allkeys-lhd, alternating A B A B (PAIRS pairs):
#   redis-benchmark -t set,get -d 100 -r 1000000 -n N -c 50, at -P 1 and -P 16,
# with MAXMEM small enough (default 64mb, ~450 000 keys) that the SETs evict all along.
# Prints every run and the median lhd/lru ratios of rps and p99 (target: <= 3 % slower).
# POLICY (default allkeys-lhd) is the second server's policy: POLICY=auto measures the
# automatic policy choice (issue 9 item 3) against allkeys-lru the same way; "lhd" in the
# output then names that server.
# Usage: [POLICY=auto] bench/lhd_cost.sh [N=1000000] [PAIRS=3]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
PAIRS=${2:-3}
MAXMEM=${MAXMEM:-64mb}
PORT=${PORT:-7121}
build_augur
start_augur $PORT --maxmemory "$MAXMEM" --maxmemory-policy allkeys-lru
POLICY=${POLICY:-allkeys-lhd}
start_augur $((PORT + 1)) --maxmemory "$MAXMEM" --maxmemory-policy "$POLICY"
echo "augur: $($AUGUR --version)  cores: $(nproc)  N=$N pairs=$PAIRS maxmemory=$MAXMEM  second server: $POLICY"
OUT=$(mktemp)
for pair in $(seq 1 "$PAIRS"); do
  for P in 1 16; do
    for who in lru lhd; do
      port=$PORT; [ "$who" = lhd ] && port=$((PORT + 1))
      redis-cli -p $port flushall >/dev/null
      redis-benchmark -p $port -t set,get -d 100 -r 1000000 -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
        | tr -d '"' | awk -F, -v who=$who -v P=$P -v pair=$pair 'NR>1 {print pair, who, P, $1, $2, $7}' | tee -a "$OUT"
    done
  done
done
for port in $PORT $((PORT + 1)); do
  echo "port $port: $(info_field $port memory maxmemory_policy) keys=$(redis-cli -p $port dbsize) evicted=$(info_field $port stats evicted_keys) used_memory=$(info_field $port memory used_memory) $(redis-cli -p $port info memory | tr -d '\r' | grep lhd_tenant || true)"
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    pair, who, P, test, rps, p99 = line.split()
    runs[(who, P, test)].append((float(rps), float(p99)))
print("\n%-4s %-4s %12s %12s %8s %10s %10s %8s" % ("P", "test", "lru rps", "lhd rps", "ratio", "lru p99", "lhd p99", "ratio"))
for P in ("1", "16"):
    for test in ("SET", "GET"):
        r, a = runs[("lru", P, test)], runs[("lhd", P, test)]
        rps_ratio = statistics.median(x[0] / y[0] for x, y in zip(a, r))
        p99_ratio = statistics.median(x[1] / y[1] for x, y in zip(a, r))
        print("%-4s %-4s %12.0f %12.0f %8.3f %10.3f %10.3f %8.2f" % (P, test,
              statistics.median(x[0] for x in r), statistics.median(x[0] for x in a), rps_ratio,
              statistics.median(x[1] for x in r), statistics.median(x[1] for x in a), p99_ratio))
print("(ratio = lhd/lru: rps higher is better, p99 ms lower is better; medians of per-pair ratios)")
PY
