#!/usr/bin/env bash
# Miss ratio table (issue 9): every shared trace at 10 / 25 / 50 % of the working set,
# by object count: Augur's klru:5, redis-lru:5, lhd, s3fifo:8 and auto (all via `augur sim`)
# against libCacheSim's LRU, LHD, ARC, S3-FIFO and Sieve (`pip install libcachesim`).
# Bars: auto <= the best of Augur's fixed policies + 0.005 in every cell; auto within
# 3 % (relative) of the best libCacheSim policy on average over the cells.
# Usage: bench/miss_table.sh [TRACE ...]   (default: every trace in $AUGUR_TRACES)
# Prints a markdown table, then the two verdicts; exit 1 if a bar is missed.
# Per-trace JSON is kept in $OUT (default /tmp/augur-miss-table): libCacheSim's is reused
# on the next run (it does not depend on Augur's build), Augur's is recomputed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
OUT=${OUT:-/tmp/augur-miss-table}
mkdir -p "$OUT"
TRACES=("$@")
if [ ${#TRACES[@]} -eq 0 ]; then
  for f in "$DIR"/*.oracleGeneral.bin.zst; do
    b=$(basename "$f"); TRACES+=("${b%.oracleGeneral.bin.zst}")
  done
fi
python3 -c 'import libcachesim' 2>/dev/null || { echo "pip install libcachesim"; exit 2; }
[ -n "${NO_BUILD:-}" ] || build_augur
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found" >&2; exit 1; }
  # Augur's results are always recomputed (seconds; a kept file would be an older
  # build's); libCacheSim's do not depend on Augur's build and are kept.
  "$AUGUR" sim "$f" --policy klru:5,redis-lru:5,lhd,s3fifo:8,auto --sizes 10%,25%,50% --json \
    2>"$OUT/$name.augur.log" >"$OUT/$name.augur.json"
  if [ ! -s "$OUT/$name.lcs.json" ]; then
    python3 - "$f" "$OUT/$name.augur.json" >"$OUT/$name.lcs.json" <<'PY'
import json, sys
import libcachesim as lcs
path, ours = sys.argv[1], json.load(open(sys.argv[2]))
out = {}
for size in sorted({r["size"] for r in ours}):
    row = {}
    for name, policy in [("LRU", lcs.LRU), ("LHD", lcs.LHD), ("ARC", lcs.ARC),
                         ("S3-FIFO", lcs.S3FIFO), ("Sieve", lcs.Sieve)]:
        reader = lcs.TraceReader(trace=path, trace_type=lcs.TraceType.ORACLE_GENERAL_TRACE,
                                 reader_init_params=lcs.ReaderInitParam(ignore_obj_size=True))
        row[name] = policy(cache_size=size).process_trace(reader)[0]
    out[str(size)] = row
json.dump(out, sys.stdout)
PY
  fi
done
python3 - "$OUT" "${TRACES[@]}" <<'PY'
import json, sys
out, traces = sys.argv[1], sys.argv[2:]
ours_names = ["klru:5", "redis-lru:5", "lhd:64", "s3fifo:8", "auto"]
lcs_names = ["LRU", "LHD", "ARC", "S3-FIFO", "Sieve"]
print("| trace | ws | " + " | ".join(ours_names) + " | " + " | ".join("lcs " + n for n in lcs_names)
      + " | auto - best fixed | auto / best lcs | switches |")
print("|---|---:|" + "---:|" * (len(ours_names) + len(lcs_names) + 3))
fails, rel = [], []
for t in traces:
    ours = json.load(open(f"{out}/{t}.augur.json"))
    lcs = json.load(open(f"{out}/{t}.lcs.json"))
    for size in sorted({r["size"] for r in ours}):
        rows = {r["policy"]: r for r in ours if r["size"] == size}
        ws = rows["auto"]["ws_fraction"]
        fixed = min(rows[n]["miss_ratio"] for n in ours_names[:-1])
        auto = rows["auto"]["miss_ratio"]
        l = lcs[str(size)]
        best_lcs = min(l.values())
        d = auto - fixed
        r = auto / best_lcs if best_lcs > 0 else 1.0
        rel.append(r)
        if d > 0.005:
            fails.append(f"{t} {ws:.0%}")
        cells = [f"{rows[n]['miss_ratio']:.4f}" for n in ours_names]
        cells += [f"{l[n]:.4f}" for n in lcs_names]
        print(f"| {t} | {ws:.0%} | " + " | ".join(cells)
              + f" | {d:+.4f}{' **miss**' if d > 0.005 else ''} | {r:.3f} | {rows['auto'].get('switches')} |")
mean = sum(rel) / len(rel)
print()
print(f"bar 1 (auto <= best fixed + 0.005 in every cell): {'PASS' if not fails else 'FAIL'}"
      f" ({len(rel) - len(fails)}/{len(rel)} cells; missed: {', '.join(fails) or 'none'})")
print(f"bar 2 (auto within 3 % of the best libCacheSim policy on average): "
      f"{'PASS' if mean <= 1.03 else 'FAIL'} (mean auto / best = {mean:.4f})")
sys.exit(1 if fails or mean > 1.03 else 0)
PY
