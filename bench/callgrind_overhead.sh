#!/usr/bin/env bash
# Cost of kredis with four idle tenants against `tenant-partitioning off`, in executed
# instructions (issue 8's overhead bar, kRedis §6.8): rps A/Bs on a 2-core VM cannot
# resolve 1 %, and the VM has no hardware counters, so both servers run under
# `valgrind --tool=callgrind` (deterministic instruction counts; kernel time excluded)
# with one worker thread and take the same redis-benchmark SET load at -P 1.
# Prints the instructions of the whole process, the worker's request path, the
# profiler thread and a few functions, for off and kredis, and their ratio.
# Usage: bench/callgrind_overhead.sh [N=50000]   (needs valgrind: apt-get install valgrind)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-50000}
PORT=${PORT:-7310}
command -v valgrind >/dev/null || { echo "apt-get install valgrind"; exit 2; }
[ -n "${NO_BUILD:-}" ] || build_augur
DIR=$(mktemp -d)
common=(--port "$PORT" --bind 127.0.0.1 --maxmemory 2gb --maxmemory-policy allkeys-lru --threads 1)
for who in off kredis; do
  extra=()
  if [ "$who" = kredis ]; then
    extra=(--tenant-partitioning kredis --user "t1 on >p1 ~* &* +@all" --user "t2 on >p2 ~* &* +@all"
      --user "t3 on >p3 ~* &* +@all" --user "t4 on >p4 ~* &* +@all")
  fi
  valgrind --tool=callgrind --callgrind-out-file="$DIR/$who.out" --dump-instr=no \
    "$AUGUR" serve "${common[@]}" "${extra[@]}" >"$DIR/$who.log" 2>&1 &
  vp=$!
  for _ in $(seq 1 120); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.5; done
  redis-benchmark -p "$PORT" -t set -d 100 -r 1000000 -n "$N" -c 50 -P 1 -q >/dev/null 2>&1
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$vp" 2>/dev/null || true
  callgrind_annotate --inclusive=yes --threshold=100 "$DIR/$who.out" 2>/dev/null \
    | sed -nE 's/^ *([0-9,]+) \([ 0-9.]+%\)  (.*)$/\1\t\2/p' | sed -E 's/ \[[^]]*\]$//' >"$DIR/$who.tsv"
  grep -o "refs: *[0-9,]*" "$DIR/$who.log" | tr -d ', ' | cut -d: -f2 >"$DIR/$who.total"
done
python3 - "$DIR" "$N" <<'PY'
import sys
d, n = sys.argv[1], int(sys.argv[2])
def load(who):
    f = {}
    for line in open(f"{d}/{who}.tsv"):
        count, name = line.rstrip("\n").split("\t", 1)
        name = name.split(":", 1)[-1]
        f[name] = max(f.get(name, 0), int(count.replace(",", "")))
    return int(open(f"{d}/{who}.total").read()), f
(to, off), (tk, kr) = load("off"), load("kredis")
def find(f, needle):
    return max((v for k, v in f.items() if needle in k), default=0)
print(f"{'':42s} {'off':>14s} {'kredis':>14s} {'kredis/off':>10s}")
print(f"{'whole process':42s} {to:>14,} {tk:>14,} {tk / to:>10.4f}")
for label, needle in [("worker: tokio task polls", "tokio::runtime::task::raw::poll"),
                      ("  Shard::set", "augur_store::shard::Shard::set "),
                      ("  Shard::make_room", "Shard::make_room"),
                      ("  Shard::publish", "Shard::publish"),
                      ("profiler thread: Profiler::run", "Profiler::run"),
                      ("  Profiler::handle", "Profiler::handle"),
                      ("  Profiler::refresh", "Profiler::refresh")]:
    a, b = find(off, needle), find(kr, needle)
    print(f"{label:42s} {a:>14,} {b:>14,} {(b / a if a else float('nan')):>10.4f}")
print(f"({n} SETs at -P 1; per SET, whole process: off {to / n:.0f}, kredis {tk / n:.0f} instructions)")
PY
rm -rf "$DIR"
