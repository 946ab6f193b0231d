#!/usr/bin/env python3
"""Generates crates/augur-server/src/redis_docs.json: Redis 7.0's COMMAND DOCS (since,
complexity, doc flags, deprecation, history, the argument grammar, subcommands) as
Debian's redis-server 7.0.15 answers it. COMMAND DOCS serves these for every command
Augur shares with Redis (redis-cli's hints and tools' completion read them).

Every RESP map is written as a list of [key, value] pairs, so the file keeps Redis's
field order; `flags` and `doc_flags` are sets of simple strings there and
`key_spec_index` an integer, every other value a bulk string or a list.

Usage: redis-server --port 21151 --save '' --daemonize yes
       python3 scripts/gen_redis_docs.py 21151 > crates/augur-server/src/redis_docs.json
"""
import json
import socket
import sys


class Resp2:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)
        self.s.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()[:-2]
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise ValueError(line)


def pairs(flat):
    """A RESP2 flat map ([k1, v1, k2, v2, ...]) as [[k, v], ...], converted within."""
    out = []
    for i in range(0, len(flat), 2):
        k, v = flat[i], flat[i + 1]
        if k == "arguments":
            v = [pairs(a) for a in v]
        elif k == "subcommands":
            v = [[v[j], pairs(v[j + 1])] for j in range(0, len(v), 2)]
        out.append([k, v])
    return out


def main():
    r = Resp2(int(sys.argv[1]))
    version = [l for l in r.call("INFO", "server").splitlines() if l.startswith("redis_version:")][0]
    docs = r.call("COMMAND", "DOCS")
    table = sorted(([docs[i], pairs(docs[i + 1])] for i in range(0, len(docs), 2)),
                   key=lambda e: e[0])
    json.dump({"source": "COMMAND DOCS of Debian's redis-server, %s" % version,
               "commands": table}, sys.stdout, separators=(",", ":"))
    print()


if __name__ == "__main__":
    main()
