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
- the connection is never closed by the server (a panic in a command closes it);
- sentinel keys written first (db 9, a string, a hash, a set; never named by the fuzzer)
  read back unchanged at the end (unless a CONFIG SET took, which may have set a limit
  or policy that evicts them), and a control connection answers PING throughout;
- the server's log (LOG=path) has no "panicked".

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
BLOCKING_TIMEOUT = {"blpop": -1, "brpop": -1, "brpoplpush": 3, "blmove": 5, "blmpop": 1}
SHORT_TIMEOUTS = ["0.001", "0.002", "0.001", "-1", "abc", "inf", "1e400", "", "0x0.004"]

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
KEYS = ["k1", "k2", "h1", "s1", "l1", "l2", "{k}l", "{k}1", "{k}2", "", "b1", "K" * 255, "L" * 256]


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
            return None if n < 0 else [self.reply() for _ in range(n)]
        if t == b"%" or t == b"|":
            n = int(rest)
            items = [(self.reply(), self.reply()) for _ in range(n)]
            return self.reply() if t == b"|" else items
        raise ValueError("not RESP: %r" % ln[:80])

    def call(self, *parts):
        self.s.sendall(enc(list(parts)))
        return self.reply()


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
    """A call whose reply Redis builds too, however large: HRANDFIELD / SRANDMEMBER with a
    count below -100,000 (repeats allowed) ask for that many elements, and both servers
    try; left out, like SUBSCRIBE."""
    if parts[0] in ("hrandfield", "srandmember") and len(parts) > 2:
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
    names = commands(control)
    print("fuzzing %d commands and subcommands, %d calls, seed %d" % (len(names), COMMANDS, SEED))
    docs = grammars(int(os.environ["DOCS_PORT"])) if os.environ.get("DOCS_PORT") else {}
    fuzz = Conn()
    if os.environ.get("RESP3"):
        fuzz.call("HELLO", "3")
    errors = 0
    reconfigured = False  # a CONFIG SET took: a new limit or policy may evict sentinels
    for i in range(COMMANDS):
        name = rng.choice(names)
        parts = name.split("|")
        if name in docs and rng.random() < 0.5:
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
        try:
            r = fuzz.call(*parts)
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
          and control.call("LRANGE", "sentinel:list", "0", "-1") == [b"p", b"q", big.encode()])
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
