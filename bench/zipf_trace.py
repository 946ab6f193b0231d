#!/usr/bin/env python3
"""Writes a Zipfian trace in oracleGeneral format (24-byte records: u32 time, u64 key,
u32 size, i64 next access = -1, which `augur replay` ignores), with a fixed seed.
YCSB's default skew is 0.99, the workload of zExpander's §4.3.

usage: zipf_trace.py OUT [REQUESTS=2000000] [KEYS=1000000] [ALPHA=0.99] [SIZE=100] [SEED=1]
"""
import random, struct, sys
import numpy as np

args = sys.argv[2:] + ["2000000", "1000000", "0.99", "100", "1"][len(sys.argv) - 2:]
out = sys.argv[1]
n, keys, alpha, size, seed = int(args[0]), int(args[1]), float(args[2]), int(args[3]), int(args[4])
rng = np.random.default_rng(seed)
w = 1.0 / np.arange(1, keys + 1) ** alpha
cdf = np.cumsum(w / w.sum())
ranks = np.searchsorted(cdf, rng.random(n))
# Popularity rank -> key id: a fixed permutation, so hot keys are not neighbours.
perm = np.random.default_rng(seed + 1).permutation(keys)
rec = np.zeros(n, dtype=[("t", "<u4"), ("k", "<u8"), ("s", "<u4"), ("nx", "<i8")])
rec["t"] = np.arange(n, dtype=np.uint32)
rec["k"] = perm[ranks]
rec["s"] = size
rec["nx"] = -1
rec.tofile(out)
