#!/usr/bin/env bash
# Throughput and p99 latency of augur vs Debian's redis-server, per DESIGN.md:
#   redis-benchmark -t set,get -d 100 -r 1000000 -n N -c 50, at -P 1 and -P 16,
#   alternating A B A B (PAIRS pairs), both servers with the same maxmemory and policy.
# Prints every run and the median augur/redis ratios of rps and p99.
# Usage: bench/throughput.sh [N=1000000] [PAIRS=3]
# TESTS (default set,get) picks redis-benchmark's tests, e.g. the lists':
#   TESTS=lpush,rpush,lpop,rpop,lrange_100,lrange_600 bench/throughput.sh 400000
# CMD runs one custom command instead (redis-benchmark replaces each __rand_int__ with a
# number below RANGE, default 1000000), e.g. ZADD over many keys:
#   RANGE=100000 CMD="ZADD zset:__rand_int__ __rand_int__ m:__rand_int__" bench/throughput.sh 400000
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
PAIRS=${2:-3}
TESTS=${TESTS:-set,get}
RANGE=${RANGE:-1000000}
if [ -n "${CMD:-}" ]; then read -r -a WORK <<<"$CMD"; else WORK=(-t "$TESTS"); fi
MAXMEM=${MAXMEM:-2gb}
POLICY=${POLICY:-allkeys-lru}
build_augur
start_redis 7101 --maxmemory "$MAXMEM" --maxmemory-policy "$POLICY"
start_augur 7102 --maxmemory "$MAXMEM" --maxmemory-policy "$POLICY"
echo "redis: $(redis-server --version | cut -d' ' -f3)  augur: $($AUGUR --version)  cores: $(nproc)  N=$N pairs=$PAIRS"
OUT=$(mktemp)
for pair in $(seq 1 "$PAIRS"); do
  for P in 1 16; do
    for who in redis augur; do
      port=7101; [ "$who" = augur ] && port=7102
      redis-cli -p $port flushall >/dev/null
      redis-benchmark -p $port -d 100 -r "$RANGE" -n "$N" -c 50 -P "$P" --csv "${WORK[@]}" 2>/dev/null \
        | tr -d '"' | awk -F, -v who=$who -v P=$P -v pair=$pair 'NR>1 {print pair "|" who "|" P "|" $1 "|" $2 "|" $7}' | tee -a "$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
tests = []
for line in open(sys.argv[1]):
    pair, who, P, test, rps, p99 = line.strip().split("|")
    runs[(who, P, test)].append((float(rps), float(p99)))
    if test not in tests:
        tests.append(test)
print("\n%-4s %-4s %12s %12s %8s %10s %10s %8s" % ("P", "test", "redis rps", "augur rps", "ratio", "redis p99", "augur p99", "ratio"))
for P in ("1", "16"):
    for test in tests:
        r, a = runs[("redis", P, test)], runs[("augur", P, test)]
        # Ratios per pair, then the median (runs alternate, so each pair shares conditions).
        rps_ratio = statistics.median(x[0] / y[0] for x, y in zip(a, r))
        p99_ratio = statistics.median(x[1] / y[1] for x, y in zip(a, r))
        print("%-4s %-4s %12.0f %12.0f %8.2f %10.3f %10.3f %8.2f" % (P, test,
              statistics.median(x[0] for x in r), statistics.median(x[0] for x in a), rps_ratio,
              statistics.median(x[1] for x in r), statistics.median(x[1] for x in a), p99_ratio))
print("(ratio = augur/redis: rps higher is better, p99 ms lower is better; medians over pairs)")
PY
