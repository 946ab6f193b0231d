#!/usr/bin/env bash
# Whole-process speed of the offline tools (issue 9 item 4): `augur mrc` with KRR,
# R = 0.001, K = 1,2,4,8,16, and `augur sim` with LHD, on the shared traces, wall-clock
# requests/s of the whole process (decompression and parsing included). With OLD_AUGUR
# set to another build of augur, runs both alternately (old, new, old, new ...) and prints
# the median of each and their ratio: the way to compare two builds on a busy machine.
#
#   bench/offline_speed.sh [RUNS=5] [TRACE ...]
#   OLD_AUGUR=/path/to/old/augur bench/offline_speed.sh 5 arc_p3 orm-busy
#
# An old build: git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release -p augur)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=${1:-5}
shift || true
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=(arc_p3 orm-busy scarab-recs arc_oltp cloudphysics)
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
build_augur
BINS=("$AUGUR")
[ -n "${OLD_AUGUR:-}" ] && BINS=("$OLD_AUGUR" "$AUGUR")
echo "cores: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)  runs: $RUNS"

# rate BIN ARGS...: requests/s of one whole run (requests from the tool's own report).
rate() {
  local bin=$1; shift
  local t0 t1 n
  t0=$(date +%s.%N)
  n=$("$bin" "$@" 2>&1 >/dev/null | grep -oE '[0-9]+ requests' | head -1 | cut -d' ' -f1)
  t1=$(date +%s.%N)
  python3 -c "print(f'{$n / ($t1 - $t0) / 1e6:.2f}')"
}

printf '%-14s %-5s %10s %10s %7s\n' trace tool old_Mrps new_Mrps ratio
for t in "${TRACES[@]}"; do
  f="$DIR/$t.oracleGeneral.bin.zst"
  [ -f "$f" ] || { echo "missing $f" >&2; continue; }
  for tool in mrc sim; do
    if [ $tool = mrc ]; then
      args=(mrc "$f" --model krr --rate 0.001 --k 1,2,4,8,16 --out /dev/null)
    else
      args=(sim "$f" --policy lhd --sizes 10% --threads 1)
    fi
    old=(); new=()
    for _ in $(seq "$RUNS"); do
      if [ ${#BINS[@]} -eq 2 ]; then old+=("$(rate "${BINS[0]}" "${args[@]}")"); fi
      new+=("$(rate "$AUGUR" "${args[@]}")")
    done
    python3 - "$t" "$tool" "${#old[@]}" "${old[@]}" "${new[@]}" <<'PY'
import sys, statistics as st
t, tool, n_old = sys.argv[1], sys.argv[2], int(sys.argv[3])
vals = list(map(float, sys.argv[4:]))
old, new = vals[:n_old], vals[n_old:]
mn = st.median(new)
if old:
    mo = st.median(old)
    print(f"{t:<14} {tool:<5} {mo:10.2f} {mn:10.2f} {mn / mo:7.2f}")
else:
    print(f"{t:<14} {tool:<5} {'-':>10} {mn:10.2f} {'-':>7}")
PY
  done
done
