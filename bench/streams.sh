#!/usr/bin/env bash
# Stream throughput and memory of augur vs Debian's redis-server, side by side, with
# redis-benchmark's custom commands (-c 50, at -P 1 and -P 16, alternating redis / augur
# for PAIRS pairs; ratios are medians of per-pair ratios):
#   xadd-one     XADD s * f __rand_int__                 (one hot stream)
#   xadd-keys    XADD s:__rand_int__ * f v               (-r 100000 streams)
#   xrange-10    XRANGE big - + COUNT 10                 (the head of a FILL-entry stream)
#   xrevrange-10 XREVRANGE big + - COUNT 10              (its tail)
#   xread-10     XREAD COUNT 10 STREAMS big 1-0          (from near the head)
#   xreadgroup   XREADGROUP GROUP g c COUNT 1 STREAMS big >   (delivers and adds to the PEL)
#   xlen         XLEN big
# `big` is filled first with FILL entries `<i>-1 f <i> g x` (same on both; a fresh group g
# per pair). Memory: RSS growth of each server per entry of `big` (VmRSS before and after
# the fill, an empty server of each), printed first.
# Usage: bench/streams.sh [N=400000] [PAIRS=3] [FILL=500000]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-400000}
PAIRS=${2:-3}
FILL=${3:-500000}
build_augur
start_redis 7121
REDIS_PID=$LAST_PID
start_augur 7122
AUGUR_PID=$LAST_PID
echo "redis: $(redis-server --version | cut -d' ' -f3)  augur: $($AUGUR --version)  cores: $(nproc)  N=$N pairs=$PAIRS fill=$FILL"

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

fill() { # PORT
  local port=$1
  redis-cli -p "$port" flushall >/dev/null
  python3 -c "
for i in range(1, $FILL + 1):
    print('XADD big %d-1 f %d g x' % (i, i))
" | redis-cli -p "$port" --pipe >/dev/null
  redis-cli -p "$port" xgroup create big g 0 >/dev/null
}

for who in redis augur; do
  port=7121; pid=$REDIS_PID
  [ "$who" = augur ] && { port=7122; pid=$AUGUR_PID; }
  before=$(rss_kb "$pid")
  fill "$port"
  after=$(rss_kb "$pid")
  echo "$who: RSS $before kB -> $after kB for $FILL entries: $(( (after - before) * 1024 / FILL )) B/entry (XLEN $(redis-cli -p "$port" xlen big))"
done

OUT=$(mktemp)
run() { # NAME N P CMD...
  local name=$1 n=$2 P=$3; shift 3
  for who in redis augur; do
    local port=7121; [ "$who" = augur ] && port=7122
    redis-benchmark -p $port -r 100000 -n "$n" -c 50 -P "$P" --csv "$@" 2>/dev/null \
      | tr -d '"' | awk -F, -v who=$who -v P=$P -v name=$name -v pair=$pair \
          'NR>1 {print pair "|" who "|" P "|" name "|" $2 "|" $7}' | tee -a "$OUT"
  done
}
for pair in $(seq 1 "$PAIRS"); do
  for port in 7121 7122; do
    redis-cli -p $port del s >/dev/null
    redis-cli -p $port xgroup destroy big g >/dev/null
    redis-cli -p $port xgroup create big g 0 >/dev/null
  done
  for P in 1 16; do
    run xadd-one "$N" $P XADD s '*' f __rand_int__
    run xadd-keys "$N" $P XADD s:__rand_int__ '*' f v
    run xrange-10 "$N" $P XRANGE big - + COUNT 10
    run xrevrange-10 "$N" $P XREVRANGE big + - COUNT 10
    run xread-10 "$N" $P XREAD COUNT 10 STREAMS big 1-0
    run xreadgroup $((FILL / 4)) $P XREADGROUP GROUP g c COUNT 1 STREAMS big '>'
    run xlen "$N" $P XLEN big
  done
  for port in 7121 7122; do redis-cli -p $port eval "for _,k in ipairs(redis.call('keys','s:*')) do redis.call('del',k) end" 0 >/dev/null; done
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
print("\n%-3s %-13s %12s %12s %8s %10s %10s" % ("P", "test", "redis rps", "augur rps", "ratio", "redis p99", "augur p99"))
for P in ("1", "16"):
    for test in tests:
        r, a = runs[("redis", P, test)], runs[("augur", P, test)]
        ratio = statistics.median(x[0] / y[0] for x, y in zip(a, r))
        print("%-3s %-13s %12.0f %12.0f %8.2f %10.3f %10.3f" % (P, test,
              statistics.median(x[0] for x in r), statistics.median(x[0] for x in a), ratio,
              statistics.median(x[1] for x in r), statistics.median(x[1] for x in a)))
print("(ratio = augur/redis rps, higher is better; p99 in ms; medians over pairs)")
PY
