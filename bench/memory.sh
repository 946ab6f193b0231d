#!/usr/bin/env bash
# Memory per key: 1,000,000 keys `key:%010d` (14 bytes) with 100-byte values.
# Reports RSS / keys (and used_memory / keys where the server has it) for augur,
# Debian's redis-server and memcached, loaded the same way.
# Usage: bench/memory.sh [KEYS=1000000]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
KEYS=${1:-1000000}
build_augur
GEN="python3 $(dirname "$0")/gen_keys.py"
report() { # name pid keys used_memory
  python3 -c "import sys; n,pid_rss,keys,used=sys.argv[1],int(sys.argv[2]),int(sys.argv[3]),sys.argv[4]; \
print('%-10s keys=%-8d rss=%7.1f MiB  rss/key=%6.1f B' % (n, keys, pid_rss/2**20, pid_rss/keys) + ('' if used=='-' else '  used_memory/key=%6.1f B' % (int(used)/keys)))" "$@"
}

start_augur 7201; A=$LAST_PID
$GEN "$KEYS" | redis-cli -p 7201 --pipe >/dev/null
sleep 3
report augur "$(rss_bytes $A)" "$(redis-cli -p 7201 dbsize)" "$(info_field 7201 memory used_memory)"

start_redis 7202; R=$LAST_PID
$GEN "$KEYS" | redis-cli -p 7202 --pipe >/dev/null
sleep 3
report redis "$(rss_bytes $R)" "$(redis-cli -p 7202 dbsize)" "$(info_field 7202 memory used_memory)"

start_memcached 7203 4096; M=$LAST_PID
python3 - "$KEYS" <<'PY'
import socket, sys
n = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 7203))
v = b"v" * 100
batch = []
for i in range(n):
    batch.append(b"set key:%010d 0 0 100 noreply\r\n%s\r\n" % (i, v))
    if len(batch) == 5000:
        s.sendall(b"".join(batch)); batch.clear()
s.sendall(b"".join(batch) + b"mn\r\n")
buf = b""
while b"MN\r\n" not in buf:
    buf += s.recv(65536)
PY
ITEMS=$(printf 'stats\r\nquit\r\n' | nc -q1 127.0.0.1 7203 | tr -d '\r' | awk '$2 == "curr_items" {print $3}')
report memcached "$(rss_bytes $M)" "$ITEMS" -
