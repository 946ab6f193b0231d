#!/usr/bin/env bash
# Memory per list element: the same lists loaded into augur and Debian's redis-server
# (both list-max-listpack-size -2, Redis's default), reported as RSS and used_memory
# per element. Two shapes: LISTS lists of ELEMS elements each, elements of SIZE bytes.
# Usage: bench/list_memory.sh [LISTS=1000] [ELEMS=1000] [SIZE=16]
#   e.g. bench/list_memory.sh 100000 10 16   (many short lists)
# DEPTH (default 0) sets list-compress-depth on both (Redis compresses with LZF, Augur
# with LZ4).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
LISTS=${1:-1000}
ELEMS=${2:-1000}
SIZE=${3:-16}
DEPTH=${DEPTH:-0}
build_augur
gen() { # RESP of LISTS x RPUSH key:N e1 .. e_ELEMS (batches of 100 elements)
  python3 - "$LISTS" "$ELEMS" "$SIZE" <<'PY'
import sys
lists, elems, size = map(int, sys.argv[1:])
out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
for l in range(lists):
    key = b"list:%08d" % l
    for start in range(0, elems, 100):
        cmd(b"RPUSH", key, *[(b"%0*d" % (size, l * elems + i))[-size:] for i in range(start, min(elems, start + 100))])
PY
}
report() { # name pid port
  python3 -c "import sys; n,rss,used,total=sys.argv[1],int(sys.argv[2]),int(sys.argv[3]),int(sys.argv[4]); \
print('%-6s elements=%-9d rss=%7.1f MiB  rss/element=%6.1f B  used_memory/element=%6.1f B' % (n, total, rss/2**20, rss/total, used/total))" \
    "$1" "$(rss_bytes "$2")" "$(info_field "$3" memory used_memory)" "$((LISTS * ELEMS))"
}
echo "lists=$LISTS elements/list=$ELEMS element=${SIZE}B list-compress-depth=$DEPTH  redis: $(redis-server --version | cut -d' ' -f3)"
start_augur 7211; A=$LAST_PID
redis-cli -p 7211 config set list-compress-depth "$DEPTH" >/dev/null
gen | redis-cli -p 7211 --pipe >/dev/null
sleep 2
report augur "$A" 7211
start_redis 7212; R=$LAST_PID
redis-cli -p 7212 config set list-compress-depth "$DEPTH" >/dev/null
gen | redis-cli -p 7212 --pipe >/dev/null
sleep 2
report redis "$R" 7212
# Same content in both (a sample of lists compared).
for l in 0 $((LISTS / 2)) $((LISTS - 1)); do
  k=$(printf 'list:%08d' "$l")
  [ "$(redis-cli -p 7211 lrange "$k" 0 -1 | md5sum)" = "$(redis-cli -p 7212 lrange "$k" 0 -1 | md5sum)" ] \
    || { echo "content differs for $k"; exit 1; }
done
