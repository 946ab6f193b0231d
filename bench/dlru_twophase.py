#!/usr/bin/env python3
"""Writes DLRU §4.3.3's two-phase workload as an oracleGeneral trace (24-byte records:
u32 time, u64 key, u32 size 200, i64 next access = -1, which `augur replay` ignores).

  A (poor temporal reuse, favours random eviction): PASSES passes of a loop over LOOP
    keys; at 30 % and 75 % of the working set the loop is larger than the cache, so LRU
    misses every request and random eviction keeps part of the loop.
  B (high temporal reuse, favours LRU): NEW fresh keys; key j is read when new and again
    DIST and 2 x DIST new keys later (~4 x DIST distinct keys in between, which fit).
Replayed with --loop the trace alternates A, B, A, B. Deterministic (no randomness).
Working set: LOOP + NEW keys (defaults 30000 + 9000: the loop is 77 % of it).

usage: dlru_twophase.py OUT [LOOP=30000] [PASSES=2] [NEW=9000] [DIST=1500]
"""
import struct
import sys

args = sys.argv[2:] + ["30000", "2", "9000", "1500"][len(sys.argv) - 2:]
out = sys.argv[1]
loop, passes, new, dist = (int(a) for a in args)
rec = struct.Struct("<IQIq")
t = 0
with open(out, "wb") as f:
    def emit(key):
        global t
        f.write(rec.pack(t, key, 200, -1))
        t += 1
    for i in range(loop * passes):
        emit(i % loop)
    base = 10_000_000
    for j in range(new + 2 * dist):
        if j < new:
            emit(base + j)
        for back in (dist, 2 * dist):
            if 0 <= j - back < new:
                emit(base + j - back)
