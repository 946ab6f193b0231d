#!/usr/bin/env bash
# Capacity with the compressed zone (issue 10, zExpander §4.3): how many items each server
# holds under the same memory limit when filled far past it with record-shaped values
# (bench/zone_records.py: iso-codes JSON records, ~114 B, each distinct).
#   augur (compressed-zone yes), augur (no), redis-server (allkeys-lru), memcached (-m).
# Also prints RSS, so "holds more" is checked against what the process really uses, and
# each augur server's CPU time for the fill.
# ZONE_ARGS: extra flags for the zone run only (e.g. "--compressed-zone-codec zstd").
# Usage: [ZONE_ARGS=...] bench/zone_capacity.sh [MAXMEM_MB=256] [ITEMS=4000000]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
MB=${1:-256}
ITEMS=${2:-4000000}
read -r -a ZARGS <<<"${ZONE_ARGS:-}"
GEN="python3 $(dirname "$0")/zone_records.py"
build_augur
$GEN ratio 100000
echo "maxmemory ${MB} MB, ${ITEMS} SETs of distinct records; cores: $(nproc)"
report() { # name keys pid
  python3 -c "import sys; n,k,r=sys.argv[1],int(sys.argv[2]),int(sys.argv[3]); \
print('%-18s items=%9d  rss=%7.1f MiB  rss/item=%6.1f B' % (n, k, r/2**20, r/max(k,1)))" "$@"
}
PORT=7301
for zone in yes no; do
  EXTRA=(); [ "$zone" = yes ] && EXTRA=("${ZARGS[@]}")
  start_augur $PORT --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru --compressed-zone "$zone" "${EXTRA[@]}"
  $GEN resp "$ITEMS" | redis-cli -p $PORT --pipe >/dev/null
  sleep 3 # a few cron ticks: the zones' background work
  report "augur zone=$zone" "$(redis-cli -p $PORT dbsize)" "$(rss_bytes $LAST_PID)"
  # The server's CPU for the fill (utime + stime): what demotions cost, steadier than
  # the fill's wall time (the loader is Python).
  awk -v z="$zone" '{printf "augur zone=%s server CPU for the fill: %.1f s\n", z, ($14 + $15) / 100}' "/proc/$LAST_PID/stat"
  redis-cli -p $PORT info zones | tr -d '\r' | grep -E '^(n_zone|z_zone|zone_)' | tr '\n' ' '; echo
  kill "$LAST_PID"; PORT=$((PORT + 1))
done
start_redis $PORT --maxmemory "${MB}mb" --maxmemory-policy allkeys-lru
$GEN resp "$ITEMS" | redis-cli -p $PORT --pipe >/dev/null
sleep 1
report "redis" "$(redis-cli -p $PORT dbsize)" "$(rss_bytes $LAST_PID)"
kill "$LAST_PID"; PORT=$((PORT + 1))
start_memcached $PORT "$MB"
$GEN memcache "$ITEMS" | python3 -c "
import socket, sys
s = socket.create_connection(('127.0.0.1', $PORT))
while True:
    b = sys.stdin.buffer.read(1 << 20)
    if not b: break
    s.sendall(b)
s.sendall(b'stats\r\n')
buf = b''
while b'END' not in buf:
    buf += s.recv(65536)
for l in buf.decode().split('\r\n'):
    if l.startswith('STAT curr_items'): print(l.split()[2], file=open('/tmp/mc_items', 'w'))
"
report "memcached -m $MB" "$(cat /tmp/mc_items)" "$(rss_bytes $LAST_PID)"
