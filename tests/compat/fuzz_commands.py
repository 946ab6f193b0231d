"""Argument fuzzing of a running augur server over a raw socket (RESP2 and RESP3).

Every command the server lists in COMMAND (and every subcommand) is sent with random
arguments drawn from a vocabulary of what breaks argument parsers: option words of every
group (EX, PXAT, KEEPTTL, WITHSCORES, LIMIT, OVERFLOW, u63, #3, BYTE, IDX, ...), numbers
at and past i64/u64 and float limits, inf/nan, negative counts and offsets, empty and
100 KB strings, glob patterns with unclosed classes and escapes, Lua scripts (valid,
erroring, with bad numkeys), binary bytes; keys come from a handful so that types collide
(WRONGTYPE paths). Commands that block or end the connection (SUBSCRIBE, MONITOR, CLIENT
PAUSE, SHUTDOWN, QUIT, ...) are left out; so is FLUSHALL/SWAPDB/MOVE, which would touch
the sentinels, and the words `port`, `bind` and `timeout`, with which a CONFIG SET would
move the listener or drop the idle control connection.

Checks, each a failure (exit 1):
- every reply is well-formed RESP and arrives within 10 s;
- every call gets its replies and no more (an ECHO after each one must get its own
  answer; UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE answer once per channel, also
  inside EXEC's array, which then holds more replies than it announces, as in Redis);
- the connection is never closed by the server (a panic in a command closes it);
- sentinel keys written first (db 9, a string, a hash, a set, a list, a listpack and a
  skiplist zset, a HyperLogLog; never named by the fuzzer)
  read back unchanged at the end (unless a CONFIG SET took, which may have set a limit
  or policy that evicts them), and a control connection answers PING throughout;
- the server's log (LOG=path) has no "panicked".

One call in eight is a sorted-set command with arguments of its own shape (scores, score
and lex range bounds, ranks, ZADD/ZRANGE/ZUNION options, numkeys right or wrong), some of
them invalid, on zset keys that other calls also write as strings, lists and sets; about
one in twenty is a GEO command of its own shape on the same keys.
One in sixteen is a HyperLogLog call (PFADD, PFCOUNT of one key or many, PFMERGE,
PFDEBUG's subcommands) on sparse and dense HLLs, other types, and HLLs corrupted by
SETRANGE / APPEND (hyperloglog.c must answer INVALIDOBJ, never crash).

With DOCS_PORT=<port of a redis-server 7>, half the calls follow the command's own
argument grammar from that server's COMMAND DOCS (tokens, oneof, blocks, optional and
repeated arguments, typed values), with one argument in four of those calls swapped for a
random one: they reach past the argument checks into the commands themselves.

NO_SENTINELS=1 skips the sentinel check, for servers whose policy may evict any key.
RESP3=1 runs the fuzzing connection in RESP3 (HELLO 3): maps, sets, doubles, pushes.

Usage: augur serve --port 7402 --maxmemory 8mb --maxmemory-policy volatile-lru \
           > /tmp/augur.log 2>&1 &
       LOG=/tmp/augur.log [DOCS_PORT=6379] python3 tests/compat/fuzz_commands.py 7402 \
           [COMMANDS=20000] [SEED=1]
"""
import os
import random
import socket
import sys

PORT = int(sys.argv[1])
COMMANDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 1
rng = random.Random(SEED)

SKIP = {
    "subscribe", "psubscribe", "ssubscribe", "monitor", "shutdown", "quit", "client|pause",
    "client|kill", "flushall", "swapdb", "move", "select", "function|kill", "script|kill",
    "debug", "sync", "psync", "replicaof", "slaveof", "wait", "client|reply", "reset",
    "acl|load", "acl|save", "config|rewrite", "hello", "auth", "acl|setuser",
    "acl|deluser", "tenant|set",
}

# Blocking commands run with a timeout argument forced to a short or a bad value (so a
# call never waits on the one fuzzing connection): name -> the timeout's position.
BLOCKING_TIMEOUT = {"blpop": -1, "brpop": -1, "brpoplpush": 3, "blmove": 5, "blmpop": 1,
                    "bzpopmin": -1, "bzpopmax": -1, "bzmpop": 1}
SHORT_TIMEOUTS = ["0.001", "0.002", "0.001", "-1", "abc", "inf", "1e400", "", "0x0.004"]
# XREAD / XREADGROUP: every BLOCK option's milliseconds forced the same way.
STREAM_BLOCKING = {"xread", "xreadgroup"}
SHORT_BLOCK_MS = ["1", "2", "1", "-1", "abc", "", "1.5", "9223372036854775808"]

WORDS = [
    "EX", "PX", "EXAT", "PXAT", "NX", "XX", "GT", "LT", "KEEPTTL", "GET", "CH", "INCR",
    "WITHSCORES", "WITHVALUES", "LIMIT", "COUNT", "MATCH", "TYPE", "BYTE", "BIT", "LEN",
    "IDX", "MINMATCHLEN", "WITHMATCHLEN", "OVERFLOW", "WRAP", "SAT", "FAIL", "INCRBY",
    "SET", "AND", "OR", "XOR", "NOT", "REPLACE", "ABSTTL", "IDLETIME", "FREQ", "DB",
    "u8", "i64", "u63", "i1", "u0", "i65", "#1", "#-1", "#99999999999", "FILTERBY",
    "MODULE", "ACLCAT", "PATTERN", "ID", "ADDR", "LADDR", "SKIPME", "USER", "MAXAGE",
    "ON", "OFF", "SKIP", "ASYNC", "SYNC", "FLUSH", "LOAD", "NOVALUES", "RANK", "STORE",
    "LEFT", "RIGHT", "BEFORE", "AFTER", "MAXLEN", "BY", "ALPHA", "ASC", "DESC", "nosort",
    "w_*", "*->f", "#", "h*->a",
    "BY", "ALPHA", "ASC", "DESC", "WEIGHTS", "AGGREGATE", "NAME", "LIB-NAME", "LIB-VER",
    "NOEVICT", "TRACKING", "maxmemory", "maxmemory-policy", "maxmemory-samples",
    "lhd-samples", "lfu-log-factor", "allkeys-lhd", "auto", "allkeys-s3fifo",
    "allkeys-lfu", "noeviction", "k-chooser", "minisim", "krr", "*", "save", "appendonly",
    "hz", "databases", "notify-keyspace-events", "KEA", "$",
    "help", "HELP", "all", "default", "everything", "memory", "stats", "server", "clients",
    "commandstats", "keyspace", "tenants", "zone", "profiler",
    "BYSCORE", "BYLEX", "REV", "MIN", "MAX", "SUM", "WITHSCORE", "-", "+", "[a", "(a", "(1",
    "(-inf", "(+inf", "[", "(",
]

NUMBERS = [
    "0", "1", "-1", "2", "3", "7", "10", "100", "-100", "65536", "4294967296",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "18446744073709551615", "18446744073709551616", "-9223372036854775809",
    "99999999999999999999999", "1e308", "1e309", "-1e309", "inf", "-inf", "+inf", "nan",
    "3.5", "-0", "0x10", " 1", "1 ", "01", "1.", ".5", "5e", "", "536870912",
    "4294967295", "2147483648", "-2147483649", "17179869184",
]

PATTERNS = ["*", "[", "[a-", "\\", "k*", "?", "[^]", "[\\", "*[*]*", "a" * 300 + "*"]

SCRIPTS = [
    "return 1", "return redis.call('get', KEYS[1])", "return redis.pcall('incr', KEYS[1])",
    "error(", "return {1, 2, {3, 'x'}}", "return redis.error_reply('E')",
    "return redis.call('hset', KEYS[1], ARGV[1], ARGV[2])", "return string.rep('x', 100)",
    "return redis.call()", "return redis.call('nosuch')", "return tonumber(ARGV[1])",
    "redis.setresp(3); return redis.call('hgetall', KEYS[1])", "return cjson.decode(ARGV[1])",
    "return cmsgpack.unpack(ARGV[1])", "return bit.band(ARGV[1], 3)",
    "return redis.sha1hex(ARGV[1])", "#!lua name=lib\nredis.register_function('f', function() return 1 end)",
]

# Short keys, the empty key, and keys at the store's short/long entry boundary (255 bytes).
KEYS = ["k1", "k2", "h1", "s1", "l1", "l2", "{k}l", "{k}1", "{k}2", "", "b1", "K" * 255, "L" * 256,
        "z1", "z2", "{k}z"]
ZKEYS = ["z1", "z2", "{k}z", "zbig", "s1", "k1", "l1", "missing"]  # zsets, and the other types

ZCOMMANDS = [
    "zadd", "zincrby", "zrem", "zcard", "zscore", "zmscore", "zrank", "zrevrank", "zcount",
    "zlexcount", "zrange", "zrangestore", "zrevrange", "zrangebyscore", "zrevrangebyscore",
    "zrangebylex", "zrevrangebylex", "zremrangebyrank", "zremrangebyscore", "zremrangebylex",
    "zpopmin", "zpopmax", "zmpop", "bzpopmin", "bzpopmax", "bzmpop", "zunion", "zinter",
    "zdiff", "zunionstore", "zinterstore", "zdiffstore", "zintercard", "zrandmember", "zscan",
]
SCORES = ["0", "1", "-1", "2.5", "-0", "1.1", "inf", "-inf", "+inf", "1e308", "-1e308", "1e-300",
          "4.9e-324", "0x10", "9007199254740993", "nan", "", "abc", " 1", "1e400", "(1"]
MEMBERS = ["a", "b", "c", "", "m", "x" * 64, "y" * 65, "\x00\xff", "1", "-", "+", "[a"]


def zscore():
    return rng.choice(SCORES) if rng.random() < 0.3 else str(rng.randrange(-5, 6))


def zmember():
    if rng.random() < 0.2:
        return "m%d" % rng.randrange(300)  # enough names to pass 128 entries
    return rng.choice(MEMBERS)


def zbound():
    c = rng.random()
    if c < 0.5:
        return rng.choice(["", "("]) + str(rng.randrange(-4, 5))
    if c < 0.8:
        return rng.choice(["-inf", "+inf", "(-inf", "(inf", "inf"])
    return rng.choice(["", "(", "nan", "(nan", "abc", "((1", " 2", "1e400"])


def zlex():
    c = rng.random()
    if c < 0.7:
        return rng.choice("[(") + zmember()
    return rng.choice(["-", "+", "", "a", "+a", "[", "("])


def zrank():
    if rng.random() < 0.9:
        return str(rng.randrange(-6, 7))
    return rng.choice(["9223372036854775807", "-9223372036854775808", "x", "1.5"])


def zcount():
    if rng.random() < 0.85:
        return str(rng.randrange(-2, 8))
    return rng.choice(["0", "9223372036854775807", "-9223372036854775808", "x", ""])


def zkeys(n=3):
    ks = [rng.choice(ZKEYS) for _ in range(rng.randrange(1, n + 1))]
    nk = str(len(ks)) if rng.random() < 0.9 else rng.choice(["0", "-1", str(len(ks) + 1), "x"])
    return [nk] + ks


def zopts(words, p=0.3):
    return [w for w in words if rng.random() < p]


def zset_call():
    """A sorted-set command with arguments of its own shape, now and then invalid (an
    option dropped in, a bad number); blocking ones with a short timeout or a bad one."""
    name = rng.choice(ZCOMMANDS)
    k = rng.choice(ZKEYS)
    a = [name]
    if name in ("zadd", "zincrby"):
        a.append(k)
        if name == "zadd":
            a += zopts(["NX", "XX", "GT", "LT", "CH", "INCR"], 0.15)
        n = 1 if name == "zincrby" or rng.random() < 0.5 else rng.randrange(2, 40)
        for _ in range(n):
            a += [zscore(), zmember()]
    elif name in ("zrem", "zmscore"):
        a += [k] + [zmember() for _ in range(rng.randrange(1, 5))]
    elif name in ("zcard",):
        a.append(k)
    elif name in ("zscore", "zrank", "zrevrank"):
        a += [k, zmember()]
    elif name in ("zcount", "zremrangebyscore"):
        a += [k, zbound(), zbound()]
    elif name in ("zlexcount", "zremrangebylex"):
        a += [k, zlex(), zlex()]
    elif name in ("zrange", "zrangestore"):
        if name == "zrangestore":
            a.append(rng.choice(ZKEYS))
        by = rng.choice([None, "BYSCORE", "BYLEX"])
        lo, hi = {None: (zrank(), zrank()), "BYSCORE": (zbound(), zbound()),
                  "BYLEX": (zlex(), zlex())}[by]
        a += [k, lo, hi] + ([by] if by else []) + zopts(["REV"])
        if rng.random() < 0.3:
            a += ["LIMIT", zcount(), zcount()]
        if name == "zrange" and rng.random() < 0.4:
            a.append("WITHSCORES")
    elif name == "zrevrange":
        a += [k, zrank(), zrank()] + zopts(["WITHSCORES"], 0.5)
    elif name in ("zrangebyscore", "zrevrangebyscore", "zrangebylex", "zrevrangebylex"):
        lex = "lex" in name
        a += [k] + ([zlex(), zlex()] if lex else [zbound(), zbound()])
        if not lex:
            a += zopts(["WITHSCORES"], 0.5)
        if rng.random() < 0.3:
            a += ["LIMIT", zcount(), zcount()]
    elif name == "zremrangebyrank":
        a += [k, zrank(), zrank()]
    elif name in ("zpopmin", "zpopmax"):
        a += [k] + ([zcount()] if rng.random() < 0.5 else [])
    elif name in ("bzpopmin", "bzpopmax"):
        a += [rng.choice(ZKEYS) for _ in range(rng.randrange(1, 4))] + ["0"]  # timeout: below
    elif name in ("zmpop", "bzmpop"):
        a += (["0"] if name == "bzmpop" else []) + zkeys() + [rng.choice(["MIN", "MAX", "MID"])]
        if rng.random() < 0.5:
            a += ["COUNT", zcount()]
    elif name in ("zunion", "zinter", "zdiff", "zunionstore", "zinterstore", "zdiffstore"):
        if name.endswith("store"):
            a.append(rng.choice(ZKEYS))
        ks = zkeys()
        a += ks
        if rng.random() < 0.4:
            n = len(ks) - 1 if rng.random() < 0.8 else rng.randrange(0, 4)
            a += ["WEIGHTS"] + [rng.choice(["1", "2", "0", "-1", "0.5", "inf", "-inf", "nan", "x"])
                                for _ in range(n)]
        if rng.random() < 0.4:
            a += ["AGGREGATE", rng.choice(["SUM", "MIN", "MAX", "AVG"])]
        if not name.endswith("store") and rng.random() < 0.5:
            a.append("WITHSCORES")
    elif name == "zintercard":
        a += zkeys() + (["LIMIT", zcount()] if rng.random() < 0.4 else [])
    elif name == "zrandmember":
        a.append(k)
        if rng.random() < 0.7:
            a += [str(rng.randrange(-300, 300))] + zopts(["WITHSCORES"], 0.5)
    elif name == "zscan":
        a += [k, rng.choice(["0", "0", "1", "17", "x", "-1", "18446744073709551616"])]
        if rng.random() < 0.3:
            a += ["MATCH", rng.choice(PATTERNS)]
        if rng.random() < 0.3:
            a += ["COUNT", zcount()]
    if rng.random() < 0.05:  # a stray word or number anywhere after the name
        a.insert(rng.randrange(1, len(a) + 1), rng.choice(WORDS + NUMBERS))
    return a


def geo_coord(lo, hi):
    c = rng.random()
    if c < 0.8:
        return repr(rng.uniform(lo, hi))
    return rng.choice(["180", "-180", "85.05112878", "-85.05112879", "inf", "nan", "x", "",
                       "1e400", "0x10", "-0", "200"])


def geo_call():
    """A GEO command with arguments of its own shape (coordinates at and past the limits,
    radii and boxes in every unit, the search options in any order), on the zset keys."""
    name = rng.choice(["geoadd", "geopos", "geohash", "geodist", "georadius", "georadius_ro",
                       "georadiusbymember", "georadiusbymember_ro", "geosearch",
                       "geosearchstore"])
    k = rng.choice(ZKEYS)
    dist = lambda: rng.choice(["0", "1", "50.5", "1000", "20000", "-1", "inf", "x", "1e308"])
    unit = lambda: rng.choice(["m", "km", "ft", "mi", "KM", "yd"])
    a = [name]
    if name == "geoadd":
        a += [k] + zopts(["NX", "XX", "CH", "GT"], 0.15)
        for _ in range(rng.randrange(1, 30)):
            a += [geo_coord(-180, 180), geo_coord(-85, 85), zmember()]
    elif name in ("geopos", "geohash"):
        a += [k] + [zmember() for _ in range(rng.randrange(0, 4))]
    elif name == "geodist":
        a += [k, zmember(), zmember()] + ([unit()] if rng.random() < 0.6 else [])
    else:
        if name == "geosearchstore":
            a.append(rng.choice(ZKEYS))
        a.append(k)
        if name.startswith("georadiusbymember"):
            a += [zmember(), dist(), unit()]
        elif name.startswith("georadius"):
            a += [geo_coord(-180, 180), geo_coord(-85, 85), dist(), unit()]
        else:
            a += (["FROMMEMBER", zmember()] if rng.random() < 0.5
                  else ["FROMLONLAT", geo_coord(-180, 180), geo_coord(-85, 85)])
            a += (["BYRADIUS", dist(), unit()] if rng.random() < 0.5
                  else ["BYBOX", dist(), dist(), unit()])
        for _ in range(rng.randrange(0, 4)):
            a += rng.choice([["WITHDIST"], ["WITHHASH"], ["WITHCOORD"], ["ASC"], ["DESC"],
                             ["COUNT", zcount()], ["COUNT", zcount(), "ANY"], ["ANY"],
                             ["STORE", rng.choice(ZKEYS)], ["STOREDIST", rng.choice(ZKEYS)],
                             ["STOREDIST"]])
    if rng.random() < 0.05:
        a.insert(rng.randrange(1, len(a) + 1), rng.choice(WORDS + NUMBERS))
    return a


HKEYS = ["hl1", "hl2", "{k}hl", "hldense", "k1", "z1", "missing"]  # HLLs, and other types
HLL_ELEMENTS = ["a", "b", "", "x" * 100, "\x00\xff", "1", "2.5", "e"]


def hll_call():
    """A HyperLogLog command with arguments of its shape, or a corruption of an HLL."""
    c = rng.randrange(10)
    k = rng.choice(HKEYS)
    if c < 3:
        n = rng.choice([0, 1, 3, 50, 400])
        return ["pfadd", k] + [rng.choice(HLL_ELEMENTS) if rng.random() < 0.3
                               else "e%d" % rng.randrange(10**9) for _ in range(n)]
    if c < 5:
        return ["pfcount"] + [rng.choice(HKEYS) for _ in range(rng.choice([1, 1, 2, 3]))]
    if c < 6:
        return ["pfmerge", k] + [rng.choice(HKEYS) for _ in range(rng.randrange(0, 4))]
    if c < 8:
        sub = rng.choice(["getreg", "decode", "encoding", "todense", "nosuch", "GETREG"])
        return ["pfdebug", sub, k] + (["x"] if rng.random() < 0.05 else [])
    if c < 9:  # a byte anywhere, the header included
        return ["setrange", k, str(rng.choice([0, 3, 4, 5, 15, 16, 17, 20, 100, 12303, 12304])),
                rng.choice(["\x00", "\xff", "x", "\x7f", "\x40", "\x80", "HYLL"])]
    return ["append", k, rng.choice(["\x00", "hello", "\x7f", "\x80\x80"])]


SKEYS = ["st1", "st2", "{k}st"]
STREAM_IDS = ["0", "0-0", "1-1", "5", "5-*", "*", "$", ">", "+", "-", "(5", "(+", "-1",
              "18446744073709551615-18446744073709551615", "18446744073709551615-*",
              "9-18446744073709551615", "1-a", ""]


def stream_call():
    """A stream command on a few stream keys, with IDs, groups and options of its shape."""
    c = rng.randrange(14)
    k = rng.choice(SKEYS)
    sid = lambda: rng.choice(STREAM_IDS) if rng.random() < 0.5 else "%d-%d" % (
        rng.randrange(100), rng.randrange(4))
    grp = lambda: rng.choice(["g1", "g2", "nog"])
    cons = lambda: rng.choice(["c1", "c2", ""])
    trim = lambda: [rng.choice(["MAXLEN", "MINID"]), rng.choice(["~", "=", ""]),
                    rng.choice(["0", "1", "5", "-1", "3-0"])] + (
        ["LIMIT", rng.choice(["0", "1", "-1", "x"])] if rng.random() < 0.3 else [])
    if c < 4:
        opts = trim() if rng.random() < 0.3 else []
        if rng.random() < 0.1:
            opts.append("NOMKSTREAM")
        return ["xadd", k] + [o for o in opts if o] + [sid()] + [
            rng.choice(["f", "g", "", "\x00"]) for _ in range(rng.choice([2, 2, 4, 1, 3]))]
    if c < 5:
        return ["xgroup", rng.choice(["create", "setid", "destroy", "createconsumer",
                                      "delconsumer", "CREATE"]), k, grp()] + rng.choice(
            [[sid()], [sid(), "MKSTREAM"], [sid(), "ENTRIESREAD", rng.choice(["-1", "3", "-5"])],
             [cons()], []])
    if c < 7:
        ids = [rng.choice([">", "0", "$", sid()]) for _ in range(rng.choice([1, 1, 2]))]
        head = ["xreadgroup", "GROUP", grp(), cons()] if rng.random() < 0.6 else ["xread"]
        opts = []
        if rng.random() < 0.4:
            opts += ["COUNT", rng.choice(["1", "2", "0", "-1"])]
        if rng.random() < 0.3:
            opts += ["BLOCK", "1"]
        if rng.random() < 0.2:
            opts.append("NOACK")
        keys = [rng.choice(SKEYS) for _ in ids]
        return head + opts + ["STREAMS"] + keys + ids
    if c < 8:
        return ["xack", k, grp()] + [sid() for _ in range(rng.choice([1, 2]))]
    if c < 9:
        return ["xclaim", k, grp(), cons(), rng.choice(["0", "10", "-1"]), sid()] + rng.choice(
            [[], ["JUSTID"], ["FORCE"], ["IDLE", "5"], ["TIME", "0"], ["RETRYCOUNT", "3"],
             ["LASTID", sid()], ["BOGUS"]])
    if c < 10:
        return ["xautoclaim", k, grp(), cons(), rng.choice(["0", "10"]), sid()] + rng.choice(
            [[], ["COUNT", rng.choice(["1", "0", "1000"])], ["JUSTID"]])
    if c < 11:
        return ["xpending", k, grp()] + rng.choice(
            [[], ["-", "+", "10"], ["IDLE", "0", "-", "+", "5", cons()], [sid(), sid(), "3"]])
    if c < 12:
        return ["xinfo", rng.choice(["stream", "groups", "consumers"]), k] + rng.choice(
            [[], ["FULL"], ["FULL", "COUNT", "2"], [grp()]])
    if c < 13:
        return [rng.choice(["xdel", "xrange", "xrevrange", "xtrim", "xlen", "xsetid"]), k] + \
            rng.choice([[sid()], [sid(), sid()], trim(), [sid(), "ENTRIESADDED", "5"]])
    return [rng.choice(["dump", "type", "exists", "copy", "del"]), k] + rng.choice(
        [[], [rng.choice(SKEYS)]])


def arg():
    c = rng.randrange(100)
    if c < 28:
        return rng.choice(KEYS)
    if c < 50:
        return rng.choice(NUMBERS)
    if c < 72:
        return rng.choice(WORDS)
    if c < 77:
        return rng.choice(PATTERNS)
    if c < 82:
        return rng.choice(SCRIPTS)
    if c < 85:
        return "x" * rng.choice([0, 1, 63, 64, 65, 254, 255, 256, 65535, 65536, 100000])
    if c < 90:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))
    if c < 95:
        return str(rng.randrange(-5, 70000))
    return "%.17g" % rng.uniform(-1e6, 1e6)


def enc(parts):
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        b = p if isinstance(p, bytes) else p.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Push(list):
    """A RESP3 push frame (">")."""


# Pushes that arrive between replies (CLIENT TRACKING's invalidations, messages), not
# as one.
OUT_OF_BAND = (b"invalidate", b"tracking-redir-broken", b"message", b"pmessage", b"smessage")


class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n + 2:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        b, self.buf = self.buf[:n], self.buf[n + 2:]
        return b

    def reply(self):
        ln = self.line()
        if not ln:
            raise ValueError("empty reply line")
        t, rest = ln[:1], ln[1:]
        if t in b"+-:,#_(":
            if t == b":":
                int(rest)
            return ln
        if t in b"$=!":
            n = int(rest)
            return None if n < 0 else self.exact(n)
        if t in b"*~>":
            n = int(rest)
            items = None if n < 0 else [self.reply() for _ in range(n)]
            return Push(items) if t == b">" and items is not None else items
        if t == b"%" or t == b"|":
            n = int(rest)
            items = [(self.reply(), self.reply()) for _ in range(n)]
            return self.reply() if t == b"|" else items
        raise ValueError("not RESP: %r" % ln[:80])

    def call(self, *parts):
        self.s.sendall(enc(list(parts)))
        return self.next_reply()

    def next_reply(self):
        r = self.reply()
        while isinstance(r, Push) and r and r[0] in OUT_OF_BAND:
            r = self.reply()
        return r


UNSUBSCRIBES = ("unsubscribe", "punsubscribe", "sunsubscribe")


def replies_of(parts):
    """How many replies a call gets: the unsubscribe commands one per channel named."""
    if parts[0].lower() in UNSUBSCRIBES and len(parts) > 2:
        return len(parts) - 1
    return 1


def commands(c):
    names = []
    for entry in c.call("COMMAND"):
        name = entry[0].decode().lower()
        subs = entry[9] if len(entry) > 9 and isinstance(entry[9], list) else []
        if subs:
            names += [s[0].decode().lower() for s in subs]
        else:
            names.append(name)
    return sorted(n for n in names if n not in SKIP)


def pairs(flat):
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


def grammars(port):
    """Command (or "command|sub") -> its argument specs, from a redis-server's COMMAND DOCS."""
    global PORT
    saved, PORT = PORT, port
    try:
        docs = Conn().call("COMMAND", "DOCS")
    finally:
        PORT = saved
    out = {}

    def add(name, doc):
        d = pairs(doc)
        if "subcommands" in d:
            subs = d["subcommands"]
            for i in range(0, len(subs), 2):
                add(subs[i].decode().lower(), subs[i + 1])
        out[name] = [pairs(a) for a in d.get("arguments", [])]

    for i in range(0, len(docs), 2):
        add(docs[i].decode().lower(), docs[i + 1])
    return out


def typed(kind):
    if kind == "key":
        return rng.choice(KEYS)
    if kind == "integer":
        return rng.choice(NUMBERS) if rng.random() < 0.2 else str(rng.randrange(-3, 200))
    if kind == "double":
        return rng.choice(["0", "1.5", "-2.25", "inf", "-inf", "1e10", "3"])
    if kind == "pattern":
        return rng.choice(PATTERNS)
    if kind == "unix-time":
        return str(rng.choice([0, 1, 1700000000, 4102444800, 1700000000000]))
    return arg()


def generate(specs, out):
    for a in specs:
        flags = [f.decode() for f in a.get("flags", [])]
        if "optional" in flags and rng.random() < 0.5:
            continue
        times = rng.randrange(1, 4) if "multiple" in flags else 1
        for n in range(times):
            if "token" in a and (n == 0 or "multiple_token" in flags):
                out.append(a["token"].decode())
            kind = a["type"].decode()
            if kind == "pure-token":
                continue
            if kind == "oneof":
                generate([pairs(rng.choice(a["arguments"]))], out)
            elif kind == "block":
                generate([pairs(x) for x in a["arguments"]], out)
            else:
                out.append(typed(kind))


def unbounded(parts):
    """A call whose reply Redis builds too, however large: HRANDFIELD / SRANDMEMBER /
    ZRANDMEMBER with a count below -100,000 (repeats allowed) ask for that many elements,
    and both servers try; left out, like SUBSCRIBE."""
    if parts[0] in ("hrandfield", "srandmember", "zrandmember") and len(parts) > 2:
        try:
            return int(parts[2]) < -100000
        except ValueError:
            return False
    return False


def main():
    control = Conn()
    control.call("SELECT", "9")
    big = "v" * 5000
    control.call("SET", "sentinel:str", big)
    control.call("HSET", "sentinel:hash", "a", "1", "b", "2")
    control.call("SADD", "sentinel:set", "x", "y", "z")
    control.call("DEL", "sentinel:list")
    control.call("RPUSH", "sentinel:list", "p", "q", big)
    control.call("DEL", "sentinel:zset", "sentinel:zsetbig")
    control.call("ZADD", "sentinel:zset", "1.5", "a", "-inf", "b", "inf", "c", "-0", "d")
    zbig = ["%d" % i for i in range(200)]
    control.call("ZADD", "sentinel:zsetbig", *[x for i in zbig for x in (i, "e" + i)])
    control.call("ZADD", "sentinel:zsetbig", "0.1", big)
    want_zset = control.call("ZRANGE", "sentinel:zset", "0", "-1", "WITHSCORES")
    want_zsetbig = control.call("ZRANGE", "sentinel:zsetbig", "0", "-1", "WITHSCORES")
    control.call("DEL", "sentinel:hll")
    control.call("PFADD", "sentinel:hll", *["h%d" % i for i in range(300)])
    want_hll = control.call("GET", "sentinel:hll")
    if len(want_zset) != 8 or len(want_zsetbig) != 402:
        print("FAIL: the zset sentinels were not written: %r" % want_zset)
        return 1
    # Zsets of both encodings for the zset-shaped calls (db 0); other calls may overwrite
    # them with other types, or delete them.
    fuzz0 = Conn()
    fuzz0.call("DEL", "zbig")
    fuzz0.call("ZADD", "zbig", *[x for i in zbig for x in (i, "m" + i)])
    fuzz0.call("DEL", "hldense")
    fuzz0.call("PFADD", "hldense", *["d%d" % i for i in range(3000)])
    names = commands(control)
    print("fuzzing %d commands and subcommands, %d calls, seed %d" % (len(names), COMMANDS, SEED))
    docs = grammars(int(os.environ["DOCS_PORT"])) if os.environ.get("DOCS_PORT") else {}
    fuzz = Conn()
    if os.environ.get("RESP3"):
        fuzz.call("HELLO", "3")
    errors = 0
    queued_unsubscribe = False  # in a MULTI: EXEC's array then holds extra replies
    reconfigured = False  # a CONFIG SET took: a new limit or policy may evict sentinels
    for i in range(COMMANDS):
        name = rng.choice(names)
        parts = name.split("|")
        if rng.random() < 0.125:
            parts = zset_call()
        elif rng.random() < 0.06:
            parts = geo_call()
        elif rng.random() < 1 / 14:  # about one in sixteen of all calls
            parts = hll_call()
        elif rng.random() < 1 / 13:
            parts = stream_call()
        elif name in docs and rng.random() < 0.5:
            rest = []
            generate(docs[name], rest)
            if rest and rng.random() < 0.25:
                rest[rng.randrange(len(rest))] = arg()
            parts += rest
        else:
            parts += [arg() for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 9]))]
        if unbounded(parts):
            continue
        at = BLOCKING_TIMEOUT.get(parts[0])
        if at is not None and len(parts) > 1 and (at < 0 or at < len(parts)):
            parts[at] = rng.choice(SHORT_TIMEOUTS)
        if parts[0] in STREAM_BLOCKING:
            for j in range(1, len(parts) - 1):
                word = parts[j].decode("latin1") if isinstance(parts[j], bytes) else str(parts[j])
                if word.upper() == "BLOCK":
                    parts[j + 1] = rng.choice(SHORT_BLOCK_MS)
        try:
            r = fuzz.call(*parts)
            if r == b"+QUEUED":
                queued_unsubscribe |= parts[0].lower() in UNSUBSCRIBES
            else:
                for _ in range(replies_of(parts) - 1):
                    fuzz.next_reply()
            tag = "sync%d" % i
            echo = fuzz.call("ECHO", tag)
            extra = 0
            while echo not in (tag.encode(), b"+QUEUED"):  # QUEUED: in a MULTI
                if not queued_unsubscribe or extra > 1000:
                    print("FAIL: replies out of step after %r: %r, then %r for ECHO"
                          % (parts[:8], r, echo))
                    return 1
                extra += 1
                echo = fuzz.next_reply()
            if echo != b"+QUEUED":
                queued_unsubscribe = False
        except Exception as e:  # noqa: BLE001 - any failure here is the finding
            print("FAIL after %r: %s" % (parts, e))
            return 1
        if isinstance(r, bytes) and r.startswith(b"-"):
            errors += 1
        elif parts[:2] == ["config", "set"] and len(parts) > 2:
            reconfigured = True
        if i % 500 == 0 and control.call("PING") != b"+PONG":
            print("FAIL: control connection does not answer PING")
            return 1
    control.call("SELECT", "9")
    ok = (control.call("GET", "sentinel:str") == big.encode()
          and sorted(control.call("HGETALL", "sentinel:hash")) == [b"1", b"2", b"a", b"b"]
          and sorted(control.call("SMEMBERS", "sentinel:set")) == [b"x", b"y", b"z"]
          and control.call("LRANGE", "sentinel:list", "0", "-1") == [b"p", b"q", big.encode()]
          and control.call("ZRANGE", "sentinel:zset", "0", "-1", "WITHSCORES") == want_zset
          and control.call("ZRANGE", "sentinel:zsetbig", "0", "-1", "WITHSCORES") == want_zsetbig
          and control.call("GET", "sentinel:hll") == want_hll)
    # NO_SENTINELS=1: a server whose policy may evict any key (allkeys-*, auto).
    if not ok and not reconfigured and not os.environ.get("NO_SENTINELS"):
        print("FAIL: a sentinel key changed")
        return 1
    log = os.environ.get("LOG")
    if log and "panicked" in open(log, errors="replace").read():
        print("FAIL: the server's log has a panic")
        return 1
    print("ok: %d calls, %d error replies, sentinels intact" % (COMMANDS, errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
