#!/usr/bin/env bash
# Regenerates crates/augur/link/hot-functions.txt: the functions `augur serve` runs at
# start and on its request paths, which the linker places together (crates/augur/build.rs)
# so that the pages of code the server touches are few and contiguous.
#
# Why: the kernel maps a file's pages 64 KB at a time around each page fault
# ("fault-around"), so code executed at start-up and on the hot paths, when scattered
# through the 7.8 MB of text, made 4.4 MB of it resident, ~4.4 B per key of RSS at 1M
# keys. The ~1.2 MB of functions actually run, placed together, map ~2 MB.
#
# How: callgrind records every function executed while the server starts, loads keys
# pipelined, serves redis-benchmark's common commands with and without pipelining,
# evicts under maxmemory, and runs its periodic tasks; the list holds those found in the
# binary, in their current address order. Stale names (after a toolchain, dependency or
# code change) are ignored by the linker; re-run this after such changes.
# Usage: scripts/hot-functions.sh   (needs valgrind, redis-cli, redis-benchmark)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p augur
BIN=target/release/augur
OUT=crates/augur/link/hot-functions.txt
PORT=${PORT:-7399}
CG=$(mktemp /tmp/augur-hot.XXXXXX)
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$CG" \
  "$BIN" serve --port "$PORT" --bind 127.0.0.1 >/dev/null 2>&1 &
VG=$!
for _ in $(seq 1 120); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 1; done
python3 bench/gen_keys.py 50000 | redis-cli -p "$PORT" --pipe >/dev/null
redis-benchmark -p "$PORT" -t set,get,incr,sadd,hset,spop,mset -n 3000 -r 100000 -d 100 -q >/dev/null 2>&1 || true
redis-benchmark -p "$PORT" -t set,get -n 30000 -P 16 -r 100000 -d 100 -q >/dev/null 2>&1 || true
redis-cli -p "$PORT" config set maxmemory 4mb maxmemory-policy allkeys-lru >/dev/null
redis-benchmark -p "$PORT" -t set,get -n 30000 -P 16 -r 1000000 -d 100 -q >/dev/null 2>&1 || true
redis-benchmark -p "$PORT" -t set,get -n 3000 -r 1000000 -d 100 -q >/dev/null 2>&1 || true
redis-cli -p "$PORT" info >/dev/null
redis-cli -p "$PORT" dbsize >/dev/null
sleep 20 # periodic tasks (expiry, profiler, memory sampling) at valgrind's speed
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
wait "$VG" || true
nm -S --defined-only "$BIN" | awk '$3 ~ /^[tTwW]$/' >"$CG.nm"
python3 - "$CG" "$CG.nm" "$OUT" <<'PY'
import re, sys
cg, nm, out = sys.argv[1:]
ran = set()
for line in open(cg):
    m = re.match(r'^c?fn=\(\d+\) (.+)$', line)
    if m:
        ran.add(m.group(1).strip())
addr = {}
for line in open(nm):
    p = line.split()
    if len(p) >= 4:
        addr.setdefault(p[3], (int(p[0], 16), int(p[1], 16)))
hot = sorted((n for n in ran if n in addr), key=lambda n: addr[n][0])
open(out, 'w').write(''.join(n + '\n' for n in hot))
print('%d functions, %d KB of code -> %s' % (len(hot), sum(addr[n][1] for n in hot) // 1024, out))
PY
rm -f "$CG" "$CG.nm"
