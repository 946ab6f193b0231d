#!/usr/bin/env bash
# LHD against its peer (issue 9, item 1): Augur's LHD simulator (`augur sim --policy lhd`)
# and libCacheSim's LHD (Python bindings, `pip install libcachesim`) on the same
# oracleGeneral files, by object count at 10 / 25 / 50 % of the working set; LRU from
# libCacheSim for scale. Bar: ours within 0.01 of libCacheSim's LHD, or lower.
# Usage: bench/lhd.sh [TRACE ...]   (default: every shared trace)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=(cloudphysics arc_oltp scarab-recs arc_p3 orm-busy lirs_2_pools lirs_cpp lirs_cs lirs_gli lirs_multi1 lirs_multi2 lirs_multi3 lirs_ps lirs_sprite)
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
python3 -c 'import libcachesim' 2>/dev/null || { echo "pip install libcachesim"; exit 2; }
build_augur
status=0
printf '%-13s %4s %9s %9s %9s %9s %8s\n' trace ws% objects augur-lhd lcs-lhd lcs-lru delta
for name in "${TRACES[@]}"; do
  f=$DIR/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
  [ -f "$f" ] || { echo "trace $name not found (see tests/data/traces/README.md; set AUGUR_TRACES)"; status=1; continue; }
  ours=$("$AUGUR" sim "$f" --policy lhd --sizes 10%,25%,50% --json 2>/dev/null)
  python3 - "$name" "$f" "$ours" <<'PY' || status=1
import json, sys
import libcachesim as lcs
name, path, ours = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
bad = False
for r in ours:
    size = r["size"]
    def run(policy):
        reader = lcs.TraceReader(trace=path, trace_type=lcs.TraceType.ORACLE_GENERAL_TRACE,
                                 reader_init_params=lcs.ReaderInitParam(ignore_obj_size=True))
        return policy(cache_size=size).process_trace(reader)[0]
    lhd, lru = run(lcs.LHD), run(lcs.LRU)
    delta = r["miss_ratio"] - lhd
    bad |= delta > 0.01
    print(f'{name:<13} {round(100 * r["ws_fraction"]):>3}% {size:>9} {r["miss_ratio"]:>9.4f} {lhd:>9.4f} {lru:>9.4f} {delta:>+8.4f}')
sys.exit(1 if bad else 0)
PY
done
[ $status -eq 0 ] && echo "PASS: within 0.01 of libCacheSim's LHD or lower everywhere" || echo "FAIL"
exit $status
