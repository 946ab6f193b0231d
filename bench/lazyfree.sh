#!/usr/bin/env bash
# What UNLINK (augur_store::lazyfree) buys against DEL, augur vs Debian's redis-server
# on the same machine: a set of MEMBERS members is built, then deleted by DEL or UNLINK
# while a second connection sends GETs of the same key back to back (on augur the same
# key is on the same shard, whose lock a synchronous free holds; on Redis every command
# waits). Prints, per server and command, the medians over REPS runs of the command's
# own round trip and of the probe's longest GET round trip during it, in ms.
# Usage: bench/lazyfree.sh [MEMBERS=1000000] [REPS=5]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
MEMBERS=${1:-1000000}
REPS=${2:-5}
build_augur
start_redis 7251; start_augur 7252
echo "redis: $(redis-server --version | cut -d' ' -f3)  augur: $($AUGUR --version)  cores: $(nproc)  members=$MEMBERS reps=$REPS"
python3 - "$MEMBERS" "$REPS" <<'PY'
import multiprocessing, socket, statistics, sys, time
members, reps = int(sys.argv[1]), int(sys.argv[2])

def enc(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    return b"".join([b"*%d\r\n" % len(a)] + [b"$%d\r\n%s\r\n" % (len(x), x) for x in a])

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 16)
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l
    def reply(self):
        l = self.line()
        if l[:1] == b"$" and int(l[1:]) >= 0:
            n = int(l[1:])
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            self.buf = self.buf[n + 2:]
        return l
    def call(self, *a):
        self.s.sendall(enc(*a))
        return self.reply()

def build(c, key):
    chunk = 10000
    cmds = []
    for i in range(0, members, chunk):
        cmds.append(enc("SADD", key, *[b"member:%d" % j for j in range(i, min(members, i + chunk))]))
    for k in range(0, len(cmds), 8):
        batch = cmds[k:k + 8]
        c.s.sendall(b"".join(batch))
        for _ in batch:
            c.reply()

def probing(port, key, conn):
    """A separate process (no GIL shared with the caller): GETs back to back until
    told to stop, then sends (start, duration) of each, on CLOCK_MONOTONIC."""
    probe = Conn(port)
    done = []
    while not conn.poll():
        t = time.monotonic()
        probe.call("GET", key)
        done.append((t, time.monotonic() - t))
    conn.send(done)

def run(port, cmd):
    c = Conn(port)
    key = "lazyfree:bench"
    c.call("DEL", key)
    build(c, key)
    assert c.call("SCARD", key) == b":%d" % members
    here, there = multiprocessing.Pipe()
    p = multiprocessing.Process(target=probing, args=(port, key, there))
    p.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    assert c.call(cmd, key) == b":1"
    t1 = time.monotonic()
    time.sleep(0.05)
    here.send("stop")
    gets = here.recv()
    p.join()
    # The longest GET that overlapped the command.
    worst = max((d for s, d in gets if s < t1 and s + d > t0), default=0.0)
    # Let a background free finish before the next build.
    time.sleep(0.3)
    return (t1 - t0) * 1e3, worst * 1e3

print("%-7s %-7s %12s %16s" % ("server", "command", "command ms", "probe worst ms"))
for name, port in (("redis", 7251), ("augur", 7252)):
    for cmd in ("DEL", "UNLINK"):
        runs = [run(port, cmd) for _ in range(reps)]
        print("%-7s %-7s %12.2f %16.2f" % (name, cmd, statistics.median(r[0] for r in runs),
                                             statistics.median(r[1] for r in runs)))
PY
