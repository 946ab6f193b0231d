#!/usr/bin/env bash
# Server CPU per run, A/B of augur builds (for changes smaller than rps's run-to-run spread
# on a small machine, where redis-benchmark shares the cores with the server): for each
# pair, each binary in turn gets a fresh server, (GET mode: a keyspace preloaded by
# redis-benchmark's own key names), then one redis-benchmark run; prints rps and the
# server process's utime + stime over the run, then the median ratios against the first
# binary.
#   MODE=set|get  P (pipeline)  N (requests)  SERVER_ARGS (extra flags for every server)
# Usage: [MODE=set] [SERVER_ARGS=...] bench/cpu_ab.sh PAIRS P N BIN_A BIN_B [BIN...]
set -euo pipefail
PAIRS=$1; P=$2; N=$3; shift 3
MODE=${MODE:-set}
read -r -a EXTRA <<<"${SERVER_ARGS:-}"
tick=$(getconf CLK_TCK)
OUT=$(mktemp)
for rep in $(seq 1 "$PAIRS"); do
  i=0
  for bin in "$@"; do
    i=$((i + 1)); port=$((7460 + i))
    "$bin" serve --port $port --loglevel warning "${EXTRA[@]}" >/dev/null 2>&1 & pid=$!
    for _ in $(seq 1 50); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
    if [ "$MODE" = get ]; then
      redis-benchmark -p $port -t set -d 100 -r 1000000 -n 4000000 -c 20 -P 64 -q >/dev/null 2>&1
    fi
    a=$(awk '{print $14 + $15}' /proc/$pid/stat)
    rps=$(redis-benchmark -p $port -t "$MODE" -d 100 -r 1000000 -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
      | tail -1 | cut -d, -f2 | tr -d '"')
    b=$(awk '{print $14 + $15}' /proc/$pid/stat)
    cpu=$(python3 -c "print(($b - $a) / $tick)")
    echo "$rep $i $rps $cpu $bin" | tee -a "$OUT"
    kill $pid; wait $pid 2>/dev/null || true
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(dict)
names = {}
for line in open(sys.argv[1]):
    rep, i, rps, cpu, name = line.split()
    runs[int(rep)][int(i)] = (float(rps), float(cpu))
    names[int(i)] = name
print("\n%-40s %12s %14s" % ("binary (vs the first)", "rps ratio", "cpu ratio"))
for i in sorted(names)[1:]:
    r = [runs[k][i][0] / runs[k][1][0] for k in runs]
    c = [runs[k][i][1] / runs[k][1][1] for k in runs]
    print("%-40s %6.3f (%.3f-%.3f) %6.3f (%.3f-%.3f)" % (names[i][-40:], statistics.median(r), min(r), max(r), statistics.median(c), min(c), max(c)))
PY
