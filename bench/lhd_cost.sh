#!/usr/bin/env bash
# Cost of LHD in the server (issue 9): redis-benchmark against two augur servers, one
# under allkeys-lru and one under allkeys-lhd, alternating A B A B (PAIRS pairs):
#   redis-benchmark -t set,get -d 100 -r 1000000 -n N -c 50, at -P 1 and -P 16,
# with MAXMEM small enough (default 64mb, ~450 000 keys) that the SETs evict all along.
# Prints every run and the median lhd/lru ratios of rps, p99 and the server's CPU time per
# request (target: <= 3 % slower). SET and GET run as separate redis-benchmark calls, so
# that each has its own CPU figure: CPU time per request, read from /proc, does not
# depend on how the 2 cores were shared with redis-benchmark, which moves rps by +-15 %
# from one run to the next on our VMs.
# POLICY (default allkeys-lhd) is the second server's policy: POLICY=auto measures the
# automatic policy choice (issue 9 item 3) against allkeys-lru the same way; "lhd" in the
# output then names that server.
# Before each measured run the server is flushed and warmed with WARMUP (default 2M)
# unmeasured SETs at -P 16 (WARMUP=0: none, as before 2026-11-29).
# REDIS=1 adds a third server to every round, Debian's redis-server under allkeys-lru
# (maxmemory-samples 5) at the same maxmemory, warmed and measured the same way, and
# prints lhd/redis and lru/redis beside lhd/lru: what LHD costs against the server an
# operator runs today, not only against Augur's own LRU. REDIS_POLICY (default
# allkeys-lru) is redis-server's policy: POLICY=allkeys-lfu REDIS=1 REDIS_POLICY=allkeys-lfu
# measures Augur's LFU against Redis's.
# BASE_POLICY (default allkeys-lru) and BASE_AUGUR (default this tree's build) are the
# first server's ("lru" in the output): BASE_AUGUR=/tmp/old/target/release/augur
# BASE_POLICY=allkeys-s3fifo POLICY=allkeys-s3fifo compares two builds under one policy.
# Usage: [POLICY=auto] [WARMUP=N] [REDIS=1] [REDIS_POLICY=P] [BASE_POLICY=P] [BASE_AUGUR=BIN]
#        bench/lhd_cost.sh [N=1000000] [PAIRS=3]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
PAIRS=${2:-3}
MAXMEM=${MAXMEM:-64mb}
WARMUP=${WARMUP:-2000000}
PORT=${PORT:-7121}
build_augur
POLICY=${POLICY:-allkeys-lhd}
# The servers, in the order each round visits them: name -> port and PID.
WHO=(lru lhd)
[ -n "${REDIS:-}" ] && WHO+=(redis)
declare -A PORTS=([lru]=$PORT [lhd]=$((PORT + 1)) [redis]=$((PORT + 2))) PID=()
for who in "${WHO[@]}"; do
  case $who in
    lru) AUGUR=${BASE_AUGUR:-$AUGUR} start_augur "${PORTS[$who]}" --maxmemory "$MAXMEM" --maxmemory-policy "${BASE_POLICY:-allkeys-lru}" ;;
    lhd) start_augur "${PORTS[$who]}" --maxmemory "$MAXMEM" --maxmemory-policy "$POLICY" ;;
    redis) start_redis "${PORTS[$who]}" --maxmemory "$MAXMEM" --maxmemory-policy "${REDIS_POLICY:-allkeys-lru}" --maxmemory-samples 5 ;;
  esac
  PID[$who]=$LAST_PID
done
TICK=$(getconf CLK_TCK)
# A server's CPU time so far (user + system), in microseconds (/proc/PID/stat fields 14, 15).
cpu_us() { awk -v t="$TICK" '{print ($14 + $15) * 1000000 / t}' "/proc/$1/stat"; }
echo "augur: $($AUGUR --version)  cores: $(nproc)  N=$N pairs=$PAIRS maxmemory=$MAXMEM  first server: ${BASE_POLICY:-allkeys-lru} (${BASE_AUGUR:-$AUGUR})  second server: $POLICY  redis-server: ${REDIS_POLICY:-allkeys-lru}"
OUT=$(mktemp)
for pair in $(seq 1 "$PAIRS"); do
  for P in 1 16; do
    for who in "${WHO[@]}"; do
      port=${PORTS[$who]}
      redis-cli -p $port flushall >/dev/null
      # Unmeasured SETs first, so that the measured ones evict from a full cache under a
      # model that has learned (a flush drops LHD's models, and each shard's first
      # reconfiguration comes after ~1M of the store's accesses: before it LHD ranks 8
      # candidates, not 64).
      [ "$WARMUP" -gt 0 ] && redis-benchmark -p $port -t set -d 100 -r 1000000 -n "$WARMUP" -c 50 -P 16 -q >/dev/null 2>&1
      for t in set get; do
        c0=$(cpu_us "${PID[$who]}")
        line=$(redis-benchmark -p $port -t $t -d 100 -r 1000000 -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
          | tr -d '"' | awk -F, 'NR>1 {print $1, $2, $7}')
        c1=$(cpu_us "${PID[$who]}")
        echo "$pair $who $P $line $(python3 -c "print(round(($c1 - $c0) / $N, 3))")" | tee -a "$OUT"
      done
    done
  done
done
for who in "${WHO[@]}"; do
  port=${PORTS[$who]}
  echo "$who (port $port): $(info_field $port memory maxmemory_policy) keys=$(redis-cli -p $port dbsize) evicted=$(info_field $port stats evicted_keys) used_memory=$(info_field $port memory used_memory) $(redis-cli -p $port info memory | tr -d '\r' | grep lhd_tenant || true)"
done
python3 - "$OUT" "${REDIS_POLICY:-allkeys-lru}" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    pair, who, P, test, rps, p99, cpu = line.split()
    runs[(who, P, test)].append((float(rps), float(p99), float(cpu)))
RPS, P99, CPU = 0, 1, 2
def med(xs, i):
    return statistics.median(x[i] for x in xs)
def ratio(xs, ys, i):
    """Median of the per-round ratios xs/ys of figure i (rounds share the machine's state)."""
    return statistics.median(x[i] / y[i] for x, y in zip(xs, ys))
print("\n%-4s %-4s %12s %12s %8s %10s %10s %8s %8s %8s %8s" % ("P", "test", "lru rps", "lhd rps", "ratio",
      "lru p99", "lhd p99", "ratio", "lru cpu", "lhd cpu", "ratio"))
for P in ("1", "16"):
    for test in ("SET", "GET"):
        r, a = runs[("lru", P, test)], runs[("lhd", P, test)]
        print("%-4s %-4s %12.0f %12.0f %8.3f %10.3f %10.3f %8.2f %8.3f %8.3f %8.3f" % (P, test,
              med(r, RPS), med(a, RPS), ratio(a, r, RPS),
              med(r, P99), med(a, P99), ratio(a, r, P99),
              med(r, CPU), med(a, CPU), ratio(a, r, CPU)))
print("(ratio = lhd/lru: rps higher is better, p99 ms lower is better; medians of per-pair ratios;")
print(" cpu = the server's CPU time, user + system, in us per request of the run, lower is better)")
if any(k[0] == "redis" for k in runs):
    print("\n%-4s %-4s %12s %10s %10s %10s %10s" % ("P", "test", "redis rps", "lhd/redis", "lru/redis",
          "lhd cpu/r", "lru cpu/r"))
    for P in ("1", "16"):
        for test in ("SET", "GET"):
            d, a, r = runs[("redis", P, test)], runs[("lhd", P, test)], runs[("lru", P, test)]
            print("%-4s %-4s %12.0f %10.3f %10.3f %10.3f %10.3f" % (P, test,
                  med(d, RPS), ratio(a, d, RPS), ratio(r, d, RPS), ratio(a, d, CPU), ratio(r, d, CPU)))
    print("(x/redis: medians of per-round ratios against redis-server %s at the same maxmemory)" % sys.argv[2])
PY
