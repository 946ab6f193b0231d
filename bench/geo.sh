#!/usr/bin/env bash
# GEO commands on augur vs Debian's redis-server, same machine, alternating A B per run:
# POINTS random points (lon 13..14, lat 38..39, about 110 km x 90 km) loaded into one geo
# set `pts` on both servers, then redis-benchmark (-c 50, -n N, -P 1 and -P 16) runs
#   GEOADD pts (a hot key growing; member names from __rand_int__),
#   GEOPOS and GEODIST of random members,
#   GEOSEARCH FROMLONLAT 13.5 38.5 BYRADIUS 1 km (about POINTS/10,000 points in range),
#   the same with COUNT 10 ASC, and GEOSEARCH BYBOX 2 2 km WITHDIST,
# and memory per point (RSS after the load). Prints each run, then median rps ratios.
# Usage: bench/geo.sh [POINTS=1000000] [N=200000] [PAIRS=3]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
POINTS=${1:-1000000}
N=${2:-200000}
PAIRS=${3:-3}
build_augur
gen() {
  python3 - "$POINTS" <<'PY'
import sys, random
n = int(sys.argv[1]); rng = random.Random(7); out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
for start in range(0, n, 500):
    args = []
    for i in range(start, min(n, start + 500)):
        args += [b"%.6f" % (13 + rng.random()), b"%.6f" % (38 + rng.random()), b"%012d" % i]
    cmd(b"GEOADD", b"pts", *args)
PY
}
start_redis 7231; R=$LAST_PID
start_augur 7232; A=$LAST_PID
echo "redis: $(redis-server --version | cut -d' ' -f3)  augur: $($AUGUR --version)  cores: $(nproc)  points=$POINTS N=$N pairs=$PAIRS"
for port in 7231 7232; do gen | redis-cli -p $port --pipe >/dev/null; done
sleep 2
for who in redis augur; do
  pid=$R; port=7231; [ "$who" = augur ] && { pid=$A; port=7232; }
  python3 -c "import sys; print('%-6s points=%s rss/point=%.1f B encoding=%s' % (sys.argv[1], sys.argv[2], int(sys.argv[3]) / int(sys.argv[2]), sys.argv[4]))" \
    "$who" "$(redis-cli -p $port zcard pts)" "$(rss_bytes $pid)" "$(redis-cli -p $port object encoding pts)"
done
[ "$(redis-cli -p 7231 geosearch pts fromlonlat 13.5 38.5 byradius 3 km asc | md5sum)" = \
  "$(redis-cli -p 7232 geosearch pts fromlonlat 13.5 38.5 byradius 3 km asc | md5sum)" ] \
  || { echo "the servers disagree on a search"; exit 1; }
echo "GEOSEARCH 1 km finds $(redis-cli -p 7232 geosearch pts fromlonlat 13.5 38.5 byradius 1 km | wc -l) points"
CMDS=(
  "geoadd|GEOADD pts 13.__rand_int__ 38.5 n:__rand_int__"
  "geopos|GEOPOS pts __rand_int__"
  "geodist|GEODIST pts __rand_int__ 000000001234 km"
  "search_1km|GEOSEARCH pts FROMLONLAT 13.5 38.5 BYRADIUS 1 km"
  "search_count10|GEOSEARCH pts FROMLONLAT 13.5 38.5 BYRADIUS 1 km COUNT 10 ASC"
  "box_2km_dist|GEOSEARCH pts FROMLONLAT 13.5 38.5 BYBOX 2 2 km WITHDIST"
)
OUT=$(mktemp)
for pair in $(seq 1 "$PAIRS"); do
  for P in 1 16; do
    for c in "${CMDS[@]}"; do
      name=${c%%|*}; read -r -a WORK <<<"${c#*|}"
      for who in redis augur; do
        port=7231; [ "$who" = augur ] && port=7232
        rps=$(redis-benchmark -p $port -r "$POINTS" -n "$N" -c 50 -P "$P" --csv "${WORK[@]}" 2>/dev/null \
          | tr -d '"' | awk -F, 'NR>1 {print $2}')
        echo "$pair|$who|$P|$name|$rps" | tee -a "$OUT"
      done
    done
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list); names = []
for line in open(sys.argv[1]):
    pair, who, P, name, rps = line.strip().split("|")
    runs[(who, P, name)].append(float(rps))
    if name not in names: names.append(name)
print("\n%-4s %-16s %12s %12s %8s" % ("P", "command", "redis rps", "augur rps", "ratio"))
for P in ("1", "16"):
    for n in names:
        r, a = runs[("redis", P, n)], runs[("augur", P, n)]
        print("%-4s %-16s %12.0f %12.0f %8.2f" % (P, n, statistics.median(r), statistics.median(a),
              statistics.median(x / y for x, y in zip(a, r))))
print("(ratio = augur/redis rps, median over pairs)")
PY
