#!/usr/bin/env bash
# Cost of multi-tenancy and online self-modelling (kRedis §6.8), A/B alternated on the
# same machine: redis-benchmark -t set,get -d 100 -r 1000000 -c 50 at -P 1 and -P 16
# against three `augur serve` configurations, runs interleaved A B C A B C ...:
#   base    tenant-partitioning off, tenant-sample-rate 0  (no profiling at all)
#   off     tenant-partitioning off, default sampling (R = 0.01, K = 1,2,4,8,16)
#   kredis  tenant-partitioning kredis, default sampling, 4 idle tenants besides default
# The benchmark runs as the default tenant. Prints each run, the median rps ratios to
# `base` and kredis / off (the issue's bar) with a bootstrap 95 % interval of the median,
# and the profiler's memory and dropped samples (TENANT INFO default).
# Usage: bench/tenant_overhead.sh [N=1000000] [PAIRS=3]
#   env TESTS (default set,get), PS (pipelines, default "1 16"), SERVERS (default
#   "base off kredis"; the kredis / off column needs both): e.g. TESTS=set PS=1
#   SERVERS="off kredis" for many pairs of the one point the bar is closest at.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
PAIRS=${2:-3}
MAXMEM=${MAXMEM:-2gb}
build_augur
common=(--maxmemory "$MAXMEM" --maxmemory-policy allkeys-lru)
TESTS=${TESTS:-set,get}
PS=${PS:-1 16}
SERVERS=${SERVERS:-base off kredis}
on() { [[ " $SERVERS " == *" $1 "* ]]; }
if on base; then start_augur 7201 "${common[@]}" --tenant-sample-rate 0; fi
if on off; then start_augur 7202 "${common[@]}"; fi
on kredis && start_augur 7203 "${common[@]}" --tenant-partitioning kredis \
  --user "t1 on >p1 ~* &* +@all" --user "t2 on >p2 ~* &* +@all" --user "t3 on >p3 ~* &* +@all" --user "t4 on >p4 ~* &* +@all"
echo "augur: $($AUGUR --version)  cores: $(nproc)  N=$N pairs=$PAIRS"
OUT=$(mktemp)
for pair in $(seq 1 "$PAIRS"); do
  for P in $PS; do
    # The order turns every pair (base off kredis, then kredis off base): run in a
    # fixed order, the last server measured paid a position bias.
    order=$SERVERS; [ $((pair % 2)) -eq 0 ] && order=$(echo "$SERVERS" | tr ' ' '\n' | tac | paste -sd' ')
    for who in $order; do
      case $who in base) port=7201;; off) port=7202;; kredis) port=7203;; esac
      redis-cli -p $port flushall >/dev/null
      redis-benchmark -p $port -t "$TESTS" -d 100 -r 1000000 -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
        | tr -d '"' | awk -F, -v who=$who -v P=$P -v pair=$pair 'NR>1 {print pair, who, P, $1, $2, $7}' | tee -a "$OUT"
    done
  done
done
for port in $(on off && echo 7202) $(on kredis && echo 7203); do
  echo "port $port: TENANT INFO default:" \
    "$(redis-cli -p $port tenant info default | paste -d' ' - - | grep -E '^(sampled_references|dropped_samples|profiler_bytes|k|target|intervals) ' | paste -sd' ')"
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections, random
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    pair, who, P, test, rps, p99 = line.split()
    runs[(who, P, test)].append(float(rps))
def ci(r):
    # Bootstrap 95 % interval of the median of the per-pair ratios (fixed seed).
    rng = random.Random(1)
    m = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(2000))
    return m[50], m[1949]
print("\n%-4s %-4s %12s %12s %12s %10s %10s %10s %17s" % ("P", "test", "base rps", "off rps",
      "kredis rps", "off/base", "kredis/base", "kredis/off", "95% CI kredis/off"))
def ratio(a, b):
    return statistics.median(x / y for x, y in zip(a, b)) if a and b else float("nan")
med = lambda r: statistics.median(r) if r else float("nan")
for P in sorted({k[1] for k in runs}, key=int):
    for test in sorted({k[2] for k in runs if k[1] == P}, reverse=True):
        b, o, k = (runs[(w, P, test)] for w in ("base", "off", "kredis"))
        ko = [x / y for x, y in zip(k, o)]
        lo, hi = ci(ko) if ko else (float("nan"), float("nan"))
        print("%-4s %-4s %12.0f %12.0f %12.0f %10.3f %10.3f %10.3f %8.3f-%.3f" % (P, test,
              med(b), med(o), med(k), ratio(o, b), ratio(k, b), med(ko), lo, hi))
print("(medians over pairs of per-pair ratios; 1.000 = no cost)")
PY
