"""Lockstep comparison of the GEO commands: the same seeded random commands to Augur and to a
redis-server 7.0, every reply and the keys' final contents compared exactly.

    augur serve --port 7520 &  redis-server --port 7521 --save "" &
    python3 tests/compat/lockstep_geo.py 7520 7521 20000 SEED

FLUSHDB first on both (database 0). Prints each difference (the first 15) and "calls N diffs D".
Replies are raw RESP2 (redis-py's callbacks removed, so GEOPOS's long-double text, GEODIST's four
decimals and WITHHASH's integers are compared as sent); an error is a value, compared by its text.
Keys: two geo sets (g1 spread over the globe, g2 clustered around a moving centre so searches
find many points, both with points near the poles, the antimeridian and the latitude limits),
"zs" (a sorted set with non-geohash scores: negative, fractional, above 2^52), a string (WRONGTYPE),
"missing" and "dst" (STORE / STOREDIST targets, also read back). Searches draw radii and boxes
from metres to 20,000 km in every unit, with every option in random order (valid and not), so
unsorted result order (cells read in Redis's order), edge points, COUNT / ANY and the error
order are all compared. At the end every key's TYPE and ZRANGE 0 -1 WITHSCORES.
Not run in CI (it needs both servers).
"""
import random, sys, redis
def conn(port):
    r = redis.Redis(port=int(port), decode_responses=False, protocol=2, socket_timeout=20)
    r.response_callbacks.clear()
    return r
if len(sys.argv) != 5: sys.exit("usage: lockstep_geo.py PORT_A PORT_B CALLS SEED")
A = conn(sys.argv[1]); B = conn(sys.argv[2])
N = int(sys.argv[3]); rng = random.Random(int(sys.argv[4]))
ENTRIES = rng.choice([0, 3, 128])
print("zset-max-listpack-entries", ENTRIES)
GEO = ["g1", "g2"]; SRC = GEO + ["zs", "str", "missing", "dst"]
def setup(r):
    r.execute_command("FLUSHDB")
    r.execute_command("CONFIG", "SET", "zset-max-listpack-entries", ENTRIES)
    r.execute_command("SET", "str", "a")
    r.execute_command("ZADD", "zs", "-1", "neg", "0.5", "half", "4503599627370496", "big", "1e20", "huge",
                      "3479099956230698", "palermo", "-inf", "ninf", "inf", "pinf", "0", "zero")
for r in (A, B): setup(r)

centre = [13.36, 38.11]
def O(s): return s.lower() if rng.random() < 0.2 else s
def num(x): return repr(x) if rng.random() < 0.7 else "%.6f" % x
def lon():
    c = rng.random()
    if c < 0.1: return rng.choice(["180", "-180", "179.9999999", "-179.9999999", "0", "-0"])
    if c < 0.13: return rng.choice(["180.0000001", "-181", "inf", "nan", "abc", "", "1e400", " 1", "0x10"])
    return num(rng.uniform(-180, 180))
def lat():
    c = rng.random()
    if c < 0.1: return rng.choice(["85.05112878", "-85.05112878", "85.05112877", "-85", "84.9", "0"])
    if c < 0.13: return rng.choice(["85.05112879", "90", "-90", "-inf", "NaN", "x", "(1"])
    return num(rng.uniform(-85.05, 85.05))
def near():
    return [num(max(-180, min(180, centre[0] + rng.gauss(0, 0.5)))), num(max(-85, min(85, centre[1] + rng.gauss(0, 0.5))))]
def member():
    c = rng.random()
    if c < 0.8: return "p%d" % rng.randint(0, 300)
    return rng.choice(["", "a", "palermo", "neg", "big", "b\x00c", "x" * 70])
def unit(): return O(rng.choice(["m", "km", "ft", "mi", "M", "KM", "Ft", "mI"])) if rng.random() < 0.97 else rng.choice(["yd", "", "kms"])
def dist():
    c = rng.random()
    if c < 0.9: return rng.choice([str(rng.randint(0, 500)), repr(rng.uniform(0, 300)), str(rng.choice([1, 5, 50, 200, 1000, 5000, 20000]))])
    return rng.choice(["-1", "abc", "", "0", "inf", "1e400", "-0"])
def count(): return rng.choice([str(rng.randint(1, 30)), str(rng.randint(1, 30)), "0", "-1", "x", "1.5"])
def options(store, search):
    opts = []
    for _ in range(rng.randint(0, 4)):
        c = rng.random()
        if c < 0.15: opts.append(O("WITHDIST"))
        elif c < 0.25: opts.append(O("WITHHASH"))
        elif c < 0.35: opts.append(O("WITHCOORD"))
        elif c < 0.5: opts.append(O(rng.choice(["ASC", "DESC"])))
        elif c < 0.7: opts += [O("COUNT"), count()] + ([O("ANY")] if rng.random() < 0.4 else [])
        elif c < 0.75: opts.append(O("ANY"))
        elif c < 0.82 and store: opts += [O(rng.choice(["STORE", "STOREDIST"])), "dst"]
        elif c < 0.85 and search: opts.append(O("STOREDIST"))
        elif c < 0.88: opts.append(rng.choice(["FOO", "STORE", "COUNT"]))
    return opts
def search_args():
    a = []
    frm = rng.random()
    if frm < 0.5: a += [O("FROMLONLAT")] + (near() if rng.random() < 0.8 else [lon(), lat()])
    elif frm < 0.95: a += [O("FROMMEMBER"), member()]
    by = rng.random()
    if by < 0.5: a += [O("BYRADIUS"), dist(), unit()]
    elif by < 0.95: a += [O("BYBOX"), dist(), dist(), unit()]
    if rng.random() < 0.05: a += [O("BYRADIUS"), "1", "km"]
    if rng.random() < 0.05: a += [O("FROMLONLAT"), "1", "1"]
    return a
def src(): return rng.choice(GEO * 6 + ["zs", "str", "missing", "dst"])
def cmd():
    global centre
    c = rng.randint(0, 40)
    if c < 8:  # GEOADD, mostly near the centre
        k = rng.choice(GEO + ["str", "zs"] if rng.random() < 0.05 else GEO)
        a = ["GEOADD", k]
        if rng.random() < 0.2: a += [O(rng.choice(["NX", "XX", "CH", "GT", "INCR"])) for _ in range(rng.randint(1, 2))]
        for _ in range(rng.randint(1, 12)):
            p = near() if k == "g2" or rng.random() < 0.5 else [lon(), lat()]
            a += p + [member()]
        if rng.random() < 0.03: a.pop()
        return a
    if c == 8:
        centre = [rng.uniform(-180, 180), rng.uniform(-85, 85)]
        if rng.random() < 0.3: centre = [rng.choice([-179.9, 179.9, 0.0]), rng.choice([84.9, -84.9, 70.0, -70.0, 0.0])]
        return ["GEOADD", "g2"] + sum([near() + [member()] for _ in range(40)], [])
    if c < 12: return ["GEOPOS", src()] + [member() for _ in range(rng.randint(0, 4))]
    if c < 14: return ["GEOHASH", src()] + [member() for _ in range(rng.randint(0, 4))]
    if c < 17:
        a = ["GEODIST", src(), member(), member()]
        if rng.random() < 0.6: a.append(unit())
        if rng.random() < 0.03: a.append("extra")
        return a
    if c < 22:
        ro = rng.random() < 0.3
        p = near() if rng.random() < 0.8 else [lon(), lat()]
        return ["GEORADIUS_RO" if ro else "GEORADIUS", src()] + p + [dist(), unit()] + options(not ro, False)
    if c < 26:
        ro = rng.random() < 0.3
        return ["GEORADIUSBYMEMBER_RO" if ro else "GEORADIUSBYMEMBER", src(), member(), dist(), unit()] + options(not ro, False)
    if c < 33:
        a = ["GEOSEARCH", src()] + search_args() + options(False, False)
        return a
    if c < 36:
        return ["GEOSEARCHSTORE", "dst", src()] + search_args() + options(False, True)
    if c == 36: return ["ZRANGE", "dst", "0", "-1", "WITHSCORES"]
    if c == 37: return ["ZREM", rng.choice(GEO)] + [member() for _ in range(3)]
    if c == 38: return ["OBJECT", "ENCODING", rng.choice(GEO + ["dst"])]
    if c == 39: return rng.choice([["GEOADD", "g1"], ["GEOADD"], ["GEOPOS"], ["GEOSEARCH", "g1", "FROMLONLAT"], ["GEORADIUS", "g1", "1", "2", "3"]])
    return ["ZCARD", rng.choice(GEO + ["dst"])]

def run(r, a):
    try: return ("ok", r.execute_command(*a))
    except redis.ResponseError as e: return ("err", str(e))
def short(a): return [s if len(s) <= 24 else s[:12] + "..(%d)" % len(s) for s in a[:14]]

diffs = 0
for i in range(N):
    a = cmd()
    try: x, y = run(A, a), run(B, a)
    except (redis.ConnectionError, redis.TimeoutError) as e:
        print("CONNECTION LOST at call", i, short(a), repr(e)); diffs += 1; break
    if x != y:
        diffs += 1
        if diffs <= 15: print("DIFF", short(a), "\n   augur:", str(x)[:300], "\n   redis:", str(y)[:300])
def state(r):
    out = {}
    for k in sorted(r.execute_command("KEYS", "*")):
        t = r.execute_command("TYPE", k)
        out[k] = (t, r.execute_command("ZRANGE", k, 0, -1, "WITHSCORES") if t == b"zset" else None)
    return out
sa, sb = state(A), state(B)
for k in sorted(set(sa) | set(sb)):
    if sa.get(k) != sb.get(k):
        diffs += 1
        print("STATE DIFF", k, "\n   augur:", str(sa.get(k))[:200], "\n   redis:", str(sb.get(k))[:200])
print("calls", N, "diffs", diffs)
