#!/usr/bin/env bash
# What CLIENT TRACKING costs writers, augur vs Debian's redis-server on the same machine:
# redis-benchmark SETs over KEYS keys (-c 50, -P 1 and -P 16) with no tracking client,
# then with READERS RESP3 connections that have tracking on and have read every key
# (each write invalidates one key for every reader: READERS pushes per SET, read off
# the sockets by a background process as they come). Alternates A B per pair; prints
# rps, the invalidations the readers received, and median ratios.
# Usage: bench/tracking.sh [KEYS=20000] [READERS=4] [N=300000] [PAIRS=3]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
KEYS=${1:-20000}
READERS=${2:-4}
N=${3:-300000}
PAIRS=${4:-3}
build_augur
start_redis 7241; start_augur 7242
echo "redis: $(redis-server --version | cut -d' ' -f3)  augur: $($AUGUR --version)  cores: $(nproc)  keys=$KEYS readers=$READERS N=$N"
for port in 7241 7242; do
  redis-benchmark -p $port -t set -r "$KEYS" -n "$((KEYS * 4))" -c 20 -P 16 -q >/dev/null 2>&1
done
# readers PORT SECONDS: READERS tracking connections that read all keys, then count the
# invalidation pushes arriving for SECONDS; prints the total.
readers() {
  python3 - "$1" "$KEYS" "$READERS" "$2" <<'PY'
import socket, sys, threading, time
port, keys, readers, secs = map(int, sys.argv[1:])
def enc(*a):
    return b"".join([b"*%d\r\n" % len(a)] + [b"$%d\r\n%s\r\n" % (len(x), x) for x in a])
counts = [0] * readers
ready = threading.Barrier(readers + 1)
def reader(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(enc(b"HELLO", b"3") + enc(b"CLIENT", b"TRACKING", b"on"))
    batch = b"".join(enc(b"GET", b"key:%012d" % k) for k in range(keys))
    s.sendall(batch + enc(b"PING", b"done-reading"))
    buf = b""
    while b"done-reading" not in buf:
        buf += s.recv(1 << 20)
    buf = buf[buf.index(b"done-reading") + 14:]
    ready.wait()
    s.settimeout(0.2)
    end = time.time() + secs
    while time.time() < end:
        try:
            d = s.recv(1 << 20)
        except socket.timeout:
            continue
        if not d:
            break
        counts[i] += d.count(b"invalidate")
for i in range(readers):
    threading.Thread(target=reader, args=(i,), daemon=True).start()
ready.wait()
print("READY", flush=True)
time.sleep(secs + 0.5)
print(sum(counts), flush=True)
PY
}
OUT=$(mktemp)
for pair in $(seq 1 "$PAIRS"); do
  for mode in plain tracked; do
    for P in 1 16; do
      for who in redis augur; do
        port=7241; [ "$who" = augur ] && port=7242
        got=-
        if [ "$mode" = tracked ]; then
          exec 3< <(readers $port 8)
          read -r _ <&3   # READY: every reader has read every key
        fi
        rps=$(redis-benchmark -p $port -t set -r "$KEYS" -n "$N" -c 50 -P "$P" --csv 2>/dev/null \
          | tr -d '"' | awk -F, 'NR>1 {print $2}')
        if [ "$mode" = tracked ]; then read -r got <&3; exec 3<&-; fi
        echo "$pair|$who|$mode|$P|$rps|$got" | tee -a "$OUT"
      done
    done
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    pair, who, mode, P, rps, got = line.strip().split("|")
    runs[(who, mode, P)].append(float(rps))
print("\n%-8s %-4s %12s %12s %8s" % ("mode", "P", "redis rps", "augur rps", "ratio"))
for mode in ("plain", "tracked"):
    for P in ("1", "16"):
        r, a = runs[("redis", mode, P)], runs[("augur", mode, P)]
        print("%-8s %-4s %12.0f %12.0f %8.2f" % (mode, P, statistics.median(r), statistics.median(a),
              statistics.median(x / y for x, y in zip(a, r))))
print("(ratio = augur/redis SET rps, median over pairs; 'tracked': every SET invalidates a key for each reader)")
PY
