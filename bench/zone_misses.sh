#!/usr/bin/env bash
# Misses with the compressed zone (issue 10, zExpander §4.3): replay a trace into
# augur (compressed-zone yes), augur (no) and redis-server (allkeys-lru), each with the
# same maxmemory, with realistic values: slices of Debian's iso-codes JSON records
# (`augur replay --value-corpus`), 100 bytes each. Miss ratio = 1 - hit ratio of the
# replay (GET, then SET on a miss), over the whole trace.
# Memory sizes: PCTS (default 10 25 50) percent of the trace's working set at
# BYTES_PER_KEY (default 140: what one ~10-byte key with a 100-byte value costs Augur
# without the zone), so 50 % means "Augur without the zone holds about half the keys".
# SHARDS (default 64, the server's default) is passed to both augur runs: a tenant's part
# of a shard gets a Z-zone only with >= 256 KB to manage, so at small sizes use fewer.
# ZONE_ARGS: extra flags for the zone run only (e.g. "--compressed-zone-codec zstd").
# Usage: [SHARDS=4] [ZONE_ARGS=...] bench/zone_misses.sh [TRACE ...]   (default: zipf0.99 cloudphysics arc_oltp)
#   zipf0.99: bench/zipf_trace.py, 2M requests over 1M keys, YCSB's skew.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=(zipf0.99 cloudphysics arc_oltp)
DIR=${AUGUR_TRACES:-$ROOT/../shared/traces}
PCTS=${PCTS:-10 25 50}
BPK=${BYTES_PER_KEY:-140}
CORPUS=${CORPUS:-/usr/share/iso-codes/json}
PORT=${PORT:-7611}
SHARDS=${SHARDS:-64}
read -r -a ZARGS <<<"${ZONE_ARGS:-}"
build_augur
TMP=$(mktemp -d)
echo "augur shards: $SHARDS; zone flags: ${ZONE_ARGS:-none}"
printf '%-13s %4s %10s  %-9s %-9s %-9s  %s\n' trace ws% maxmemory "zone" "no-zone" "redis" "zone vs redis"
for name in "${TRACES[@]}"; do
  case $name in
    zipf*) f=$TMP/$name.oracleGeneral.bin
           python3 "$(dirname "$0")/zipf_trace.py" "$f" 2000000 1000000 "${name#zipf}" 100 1 ;;
    *) f=$DIR/$name.oracleGeneral.bin.zst
       [ -f "$f" ] || f=$ROOT/tests/data/traces/$name.oracleGeneral.bin.zst
       [ -f "$f" ] || { echo "trace $name not found (set AUGUR_TRACES)"; continue; } ;;
  esac
  ws=$("$AUGUR" sim "$f" --policy lru --sizes 100% --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["size"])')
  for pct in $PCTS; do
    mem=$((ws * pct / 100 * BPK))
    res=()
    for who in zone nozone redis; do
      case $who in
        zone) start_augur $PORT --maxmemory $mem --maxmemory-policy allkeys-lru --compressed-zone yes --shards $SHARDS "${ZARGS[@]}" ;;
        nozone) start_augur $PORT --maxmemory $mem --maxmemory-policy allkeys-lru --shards $SHARDS ;;
        redis) start_redis $PORT --maxmemory $mem --maxmemory-policy allkeys-lru ;;
      esac
      out=$("$AUGUR" replay "$f" --addr 127.0.0.1:$PORT --connections 4 --value-size 100 \
            --value-corpus "$CORPUS" --json --no-progress)
      res+=("$(python3 -c 'import json,sys; print("%.4f" % (1 - json.loads(sys.argv[1])["groups"][0]["hit_ratio"]))' "$out")")
      if [ $who = zone ]; then
        redis-cli -p $PORT info zones | tr -d '\r' | grep -E '^(n_zone_items|z_zone_items|z_zone_compression_ratio|n_zone_target_share)' | tr '\n' ' ' >"$TMP/zinfo"
      fi
      kill "$LAST_PID"; wait "$LAST_PID" 2>/dev/null || true
      PORT=$((PORT + 1))
    done
    python3 - "$name" "$pct" "$mem" "${res[@]}" "$(cat "$TMP/zinfo")" <<'PY'
import sys
name, pct, mem, z, nz, r, info = sys.argv[1:8]
z, nz, r = float(z), float(nz), float(r)
fewer = (1 - z / r) * 100 if r > 0 else 0.0
print("%-13s %3s%% %10s  %.4f    %.4f    %.4f     %+.1f%% misses  [%s]" % (name, pct, mem, z, nz, r, -fewer, info.strip()))
PY
  done
done
rm -rf "$TMP"
