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
BIN=${CARGO_TARGET_DIR:-target}/release/augur
OUT=crates/augur/link/hot-functions.txt
PORT=${PORT:-7399}
CG=$(mktemp /tmp/augur-hot.XXXXXX)
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$CG" \
  "$BIN" serve --port "$PORT" --bind 127.0.0.1 >/dev/null 2>&1 &
VG=$!
for _ in $(seq 1 120); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 1; done
# Phases, each ended by a dump; the list orders functions by the first phase that ran
# them, so that a server doing less maps less: 1. start, a pipelined load of SETs, the
# periodic tasks while idle; 2. SET and GET with and without pipelining, INFO;
# 3. eviction; 4. the other command families.
# Natively a fast load takes the profiler over its CPU budget (its sample rate falls, the
# model restarts, a line is logged); at valgrind's speed it would not, so the budget is
# lowered for the load.
redis-cli -p "$PORT" config set tenant-profiler-cpu 0.02 >/dev/null
python3 bench/gen_keys.py 1000000 | redis-cli -p "$PORT" --pipe >/dev/null
redis-cli -p "$PORT" config set tenant-profiler-cpu 1 >/dev/null
sleep 20 # periodic tasks (expiry, profiler, memory sampling) at valgrind's speed
callgrind_control -d "$VG" >/dev/null 2>&1
redis-benchmark -p "$PORT" -t set,get -n 3000 -r 100000 -d 100 -q >/dev/null 2>&1 || true
redis-benchmark -p "$PORT" -t set,get -n 30000 -P 16 -r 100000 -d 100 -q >/dev/null 2>&1 || true
redis-cli -p "$PORT" info >/dev/null
redis-cli -p "$PORT" dbsize >/dev/null
callgrind_control -d "$VG" >/dev/null 2>&1
redis-cli -p "$PORT" config set maxmemory 4mb maxmemory-policy allkeys-lru >/dev/null
redis-benchmark -p "$PORT" -t set,get -n 30000 -P 16 -r 1000000 -d 100 -q >/dev/null 2>&1 || true
redis-benchmark -p "$PORT" -t set,get -n 3000 -r 1000000 -d 100 -q >/dev/null 2>&1 || true
sleep 5
callgrind_control -d "$VG" >/dev/null 2>&1
redis-benchmark -p "$PORT" -t incr,sadd,hset,spop,mset,lpush -n 3000 -r 100000 -d 100 -q >/dev/null 2>&1 || true
redis-cli -p "$PORT" config set maxmemory 0 >/dev/null
redis-benchmark -p "$PORT" -t incr,sadd,hset,spop,mset -n 3000 -r 100000 -d 100 -q >/dev/null 2>&1 || true
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
wait "$VG" || true
nm -S --defined-only "$BIN" | awk '$3 ~ /^[tTwWi]$/' >"$CG.nm"
python3 - "$CG" "$CG.nm" "$OUT" <<'PY'
import re, sys
cg, nm, out = sys.argv[1:]
def functions(path):
    names = set()
    for line in open(path):
        m = re.match(r'^c?fn=\(\d+\) (.+)$', line)
        if m:
            names.add(m.group(1).strip())
    return names
phases = [functions(cg + '.%d' % i) for i in (1, 2, 3)] + [functions(cg)]
ran = set().union(*phases)
addr, at = {}, {}
for line in open(nm):
    p = line.split()
    if len(p) >= 4:
        a = (int(p[0], 16), int(p[1], 16))
        addr.setdefault(p[3], a)
        at.setdefault(a[0], []).append(p[3])
hot = {n for n in ran if n in addr}
# Every name of a function that ran: callgrind reports one of the names at an address
# (merged identical functions, C aliases), the linker orders by any of them.
hot |= {alias for n in list(hot) for alias in at[addr[n][0]]}
# Variants chosen by CPUID at run time (glibc's string and math functions, zstd's BMI2
# paths): valgrind's virtual CPU lacks AVX-512 and more, so callgrind sees the AVX2 or
# SSE variant while the real CPU runs another. If one variant of a family ran, list all.
variant = re.compile(r'_(sse2|ssse3|sse4_1|sse4_2|sse42|avx|avx2|avx512|avx512f|avx512bw|evex|evex512|fma|fma4|bmi2|default)(_|$)')
def family(n):
    if n.startswith(('_ZN', '_R')):
        return None
    m = variant.search(n)
    return n[:m.start()] if m else None
families = {f for f in map(family, hot) if f}
hot |= {n for n in addr if family(n) in families}
fams = [{family(c) for c in ph} - {None} for ph in phases]
def first_phase(n):
    names, f = at[addr[n][0]], family(n)
    return next((i for i, ph in enumerate(phases)
                 if any(a in ph for a in names) or (f and f in fams[i])), len(phases))
order = {n: first_phase(n) for n in hot}
hot = sorted(hot, key=lambda n: (order[n], addr[n][0], n))
open(out, 'w').write(''.join(n + '\n' for n in hot))
size = sum(s for a, s in {addr[n] for n in hot})
per_phase = [sum(s for a, s in {addr[n] for n in hot if order[n] == i}) // 1024 for i in range(4)]
print('%d functions, %d KB of code (by phase: %s KB) -> %s' % (len(hot), size // 1024, per_phase, out))
PY
rm -f "$CG" "$CG".*
