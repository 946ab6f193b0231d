#!/usr/bin/env bash
# MIMIR's instructions per request on arc_p3 (ROUNDER B=8, cache 50,000 objects + 50,000
# ghosts), counted by callgrind: a figure that, unlike a rate, does not move with what
# else the (shared, virtual) machine is running. Prints, per request of the trace:
#   (a) MIMIR alone, fed a real LRU cache's recorded upcalls (HIT / MISS+INSERT / EVICT)
#   (b) MimirLru: MIMIR beside its own LRU cache, over the decoded trace
# Each is the count of a run minus the count of the same run without MIMIR (decoding
# the trace; for (a) also recording the upcalls). Needs valgrind. ~5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p augur-mrc --example mimir_speed >/dev/null
bin=target/release/examples/mimir_speed
requests=3912296
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" --once "$1" 2>&1 \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
load=$(count load)
events=$(count events)
a=$(count a)
b=$(count b)
awk -v r="$requests" -v load="$load" -v ev="$events" -v a="$a" -v b="$b" 'BEGIN {
  printf "(a) MIMIR alone, replayed upcalls: %.1f instructions per request\n", (a - ev) / r
  printf "(b) MimirLru over the trace:       %.1f instructions per request\n", (b - load) / r
}'
