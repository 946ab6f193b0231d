#!/usr/bin/env bash
# A/B of two augur builds on the single-keyspace figures that must not regress:
#   1. redis-benchmark -t set,get -d 100 -r 1000000 -n N -c 50 at -P 1 and -P 16
#      (as bench/throughput.sh), the two builds alternated run by run, PAIRS pairs;
#   2. memory per key as bench/memory.sh (1M keys `key:%010d`, 100-byte values):
#      RSS / key and used_memory / key, each build loaded once per pair.
# Prints every run and the median new/old ratio per figure (ratios taken per pair, so
# each pair shares the machine's conditions).
# Usage: OLD_AUGUR=/path/to/old/augur bench/ab_server.sh [N=1000000] [PAIRS=3]
#   (NEW_AUGUR defaults to this tree's release build.)
# To build an old commit: git worktree add /tmp/old COMMIT && (cd /tmp/old && cargo build --release -p augur)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
PAIRS=${2:-3}
: "${OLD_AUGUR:?set OLD_AUGUR to the augur binary of the old build}"
build_augur
NEW_AUGUR=${NEW_AUGUR:-$AUGUR}
GEN="python3 $(dirname "$0")/gen_keys.py"
OUT=$(mktemp)
echo "old: $OLD_AUGUR  new: $NEW_AUGUR  cores: $(nproc)  N=$N pairs=$PAIRS"
for pair in $(seq 1 "$PAIRS"); do
  for who in old new; do
    bin=$OLD_AUGUR; [ "$who" = new ] && bin=$NEW_AUGUR
    AUGUR=$bin start_augur 7151 --maxmemory 2gb --maxmemory-policy allkeys-lru
    for P in 1 16; do
      redis-cli -p 7151 flushall >/dev/null
      redis-benchmark -p 7151 -t set,get -d 100 -r 1000000 -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
        | tr -d '"' | awk -F, -v who=$who -v P=$P -v pair=$pair 'NR>1 {print pair, who, "P" P "_" $1, $2, $7}' | tee -a "$OUT"
    done
    kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
    AUGUR=$bin start_augur 7152
    $GEN 1000000 | redis-cli -p 7152 --pipe >/dev/null
    sleep 3
    keys=$(redis-cli -p 7152 dbsize)
    rss=$(rss_bytes "$LAST_PID")
    used=$(info_field 7152 memory used_memory)
    python3 -c "import sys; p,w,k,r,u=sys.argv[1:]; k=int(k); print(p, w, 'rss_per_key', '%.1f' % (int(r)/k), 0); print(p, w, 'used_per_key', '%.1f' % (int(u)/k), 0)" \
      "$pair" "$who" "$keys" "$rss" "$used" | tee -a "$OUT"
    kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    pair, who, what, val, p99 = line.split()
    runs[what].setdefault(who, []).append((float(val), float(p99)))
print("\n%-14s %12s %12s %8s %9s %9s %8s" % ("figure", "old", "new", "new/old", "old p99", "new p99", "new/old"))
for what, r in runs.items():
    o, n = r.get("old", []), r.get("new", [])
    if not o or not n:
        continue
    ratio = statistics.median(b[0] / a[0] for a, b in zip(o, n))
    line = "%-14s %12.1f %12.1f %8.3f" % (what, statistics.median(a[0] for a in o), statistics.median(b[0] for b in n), ratio)
    if what.startswith("P"):
        pr = statistics.median(b[1] / a[1] for a, b in zip(o, n))
        line += " %9.3f %9.3f %8.3f" % (statistics.median(a[1] for a in o), statistics.median(b[1] for b in n), pr)
    print(line)
print("(rps: higher is better; p99 ms and bytes per key: lower is better)")
PY
rm -f "$OUT"
