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
Needs redis-py (pip install redis).
"""
import json
import sys

import redis

from gen_redis_commands import dec


def pairs(flat):
    """A RESP2 flat map ([k1, v1, k2, v2, ...]) as [[k, v], ...], converted within."""
    out = []
    for i in range(0, len(flat), 2):
        k, v = flat[i], flat[i + 1]
        if k == "arguments":
            v = [pairs(a) for a in v]
        elif k == "subcommands":
            # Sorted: Redis lists them in its dictionary's (seeded) order.
            v = sorted([v[j], pairs(v[j + 1])] for j in range(0, len(v), 2))
        out.append([k, v])
    return out


def call(conn, *args):
    conn.send_command(*args)
    return dec(conn.read_response())


def main():
    # RESP2, read raw (as gen_redis_commands.py reads COMMAND): maps arrive as flat lists.
    conn = redis.Redis(port=int(sys.argv[1]), protocol=2).connection_pool.get_connection()
    version = [l for l in call(conn, "INFO", "server").splitlines() if l.startswith("redis_version:")][0]
    docs = call(conn, "COMMAND", "DOCS")
    table = sorted(([docs[i], pairs(docs[i + 1])] for i in range(0, len(docs), 2)),
                   key=lambda e: e[0])
    json.dump({"source": "COMMAND DOCS of Debian's redis-server, %s" % version,
               "commands": table}, sys.stdout, separators=(",", ":"))
    print()


if __name__ == "__main__":
    main()
