#!/usr/bin/env bash
# HyperLogLog throughput of augur vs Debian's redis-server, side by side, with
# redis-benchmark's custom commands (-c 50, at -P 1 and -P 16, alternating redis / augur
# for PAIRS pairs; ratios are medians of per-pair ratios):
#   pfadd-keys   PFADD hll:__rand_int__ e:__rand_int__   (-r 1000000: mostly new sparse keys)
#   pfadd-one    PFADD hll e:__rand_int__                (one hot key, dense after ~3000)
#   pfcount-one  PFCOUNT dense                           (a dense key; the cached count)
#   pfcount-3    PFCOUNT d1 d2 d3                        (union of 3 dense keys, computed)
# The dense keys are filled first with 200000 elements each (same elements on both).
# Usage: bench/hll.sh [N=400000] [PAIRS=3]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-400000}
PAIRS=${2:-3}
build_augur
start_redis 7111
start_augur 7112
echo "redis: $(redis-server --version | cut -d' ' -f3)  augur: $($AUGUR --version)  cores: $(nproc)  N=$N pairs=$PAIRS"

fill() { # PORT: the dense keys of the PFCOUNT runs
  local port=$1 k
  redis-cli -p "$port" flushall >/dev/null
  for k in dense d1 d2 d3; do
    python3 -c "
import sys
for b in range(0, 200000, 1000):
    print('PFADD $k ' + ' '.join('$k:%d' % i for i in range(b, b + 1000)))
" | redis-cli -p "$port" >/dev/null
  done
  redis-cli -p "$port" pfcount dense >/dev/null
}

OUT=$(mktemp)
run() { # NAME N P CMD...
  local name=$1 n=$2 P=$3; shift 3
  for who in redis augur; do
    local port=7111; [ "$who" = augur ] && port=7112
    redis-benchmark -p $port -r 1000000 -n "$n" -c 50 -P "$P" --csv "$@" 2>/dev/null \
      | tr -d '"' | awk -F, -v who=$who -v P=$P -v name=$name -v pair=$pair \
          'NR>1 {print pair "|" who "|" P "|" name "|" $2 "|" $7}' | tee -a "$OUT"
  done
}
for pair in $(seq 1 "$PAIRS"); do
  fill 7111
  fill 7112
  for P in 1 16; do
    run pfadd-keys "$N" $P PFADD hll:__rand_int__ e:__rand_int__
    run pfadd-one "$N" $P PFADD hll e:__rand_int__
    run pfcount-one "$N" $P PFCOUNT dense
    run pfcount-3 $((N / 8)) $P PFCOUNT d1 d2 d3
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
print("\n%-3s %-12s %12s %12s %8s %10s %10s" % ("P", "test", "redis rps", "augur rps", "ratio", "redis p99", "augur p99"))
for P in ("1", "16"):
    for test in tests:
        r, a = runs[("redis", P, test)], runs[("augur", P, test)]
        ratio = statistics.median(x[0] / y[0] for x, y in zip(a, r))
        print("%-3s %-12s %12.0f %12.0f %8.2f %10.3f %10.3f" % (P, test,
              statistics.median(x[0] for x in r), statistics.median(x[0] for x in a), ratio,
              statistics.median(x[1] for x in r), statistics.median(x[1] for x in a)))
print("(ratio = augur/redis rps, higher is better; p99 in ms; medians over pairs)")
PY
