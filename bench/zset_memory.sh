#!/usr/bin/env bash
# Memory per sorted-set member: the same sorted sets loaded into augur and Debian's
# redis-server (default zset-max-listpack-entries 128 / -value 64 on both), reported as
# RSS and used_memory per member. ZSETS sets of MEMBERS members each, members of SIZE
# bytes, scores fractional (i / 7).
# Usage: bench/zset_memory.sh [ZSETS=100] [MEMBERS=10000] [SIZE=16]
#   e.g. bench/zset_memory.sh 100000 10 16   (many small, listpack-encoded sets)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ZSETS=${1:-100}
MEMBERS=${2:-10000}
SIZE=${3:-16}
build_augur
gen() { # RESP of ZSETS x ZADD key:N score member ... (batches of 100 members)
  python3 - "$ZSETS" "$MEMBERS" "$SIZE" <<'PY'
import sys
sets, members, size = map(int, sys.argv[1:])
out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
for z in range(sets):
    key = b"zset:%08d" % z
    for start in range(0, members, 100):
        args = []
        for i in range(start, min(members, start + 100)):
            n = z * members + i
            args += [repr(n / 7).encode(), (b"%0*d" % (size, n))[-size:]]
        cmd(b"ZADD", key, *args)
PY
}
report() { # name pid port
  python3 -c "import sys; n,rss,used,total=sys.argv[1],int(sys.argv[2]),int(sys.argv[3]),int(sys.argv[4]); \
print('%-6s members=%-9d rss=%7.1f MiB  rss/member=%6.1f B  used_memory/member=%6.1f B' % (n, total, rss/2**20, rss/total, used/total))" \
    "$1" "$(rss_bytes "$2")" "$(info_field "$3" memory used_memory)" "$((ZSETS * MEMBERS))"
}
echo "zsets=$ZSETS members/zset=$MEMBERS member=${SIZE}B  redis: $(redis-server --version | cut -d' ' -f3)"
start_augur 7213; A=$LAST_PID
gen | redis-cli -p 7213 --pipe >/dev/null
sleep 2
report augur "$A" 7213
echo "  encoding of zset:00000000: $(redis-cli -p 7213 object encoding zset:00000000)"
start_redis 7214; R=$LAST_PID
gen | redis-cli -p 7214 --pipe >/dev/null
sleep 2
report redis "$R" 7214
echo "  encoding of zset:00000000: $(redis-cli -p 7214 object encoding zset:00000000)"
# Same content in both (a sample of sets compared).
for z in 0 $((ZSETS / 2)) $((ZSETS - 1)); do
  k=$(printf 'zset:%08d' "$z")
  [ "$(redis-cli -p 7213 zrange "$k" 0 -1 withscores | md5sum)" = "$(redis-cli -p 7214 zrange "$k" 0 -1 withscores | md5sum)" ] \
    || { echo "content differs for $k"; exit 1; }
done
echo "contents match (3 sets compared with ZRANGE 0 -1 WITHSCORES)"
