"""Lockstep comparison of sorted-set commands: the same seeded random commands to Augur and
to a redis-server 7.0, every reply and the keys' final contents compared.

    augur serve --port 7520 &  redis-server --port 7521 --save "" &
    python3 tests/compat/lockstep_zsets.py 7520 7521 20000 SEED

FLUSHDB first on both (database 0). Prints each difference (the first 15) and "calls N diffs D"
("CONNECTION LOST" and a stop if a server drops the connection or takes 20 s to answer). The
seed also picks the zset-max-listpack-entries (0, 1, 3, 128) and zset-max-listpack-value
(0, 5, 64) both servers get, so OBJECT ENCODING (listpack or skiplist) is compared too. Replies
are raw RESP2 (redis-py's reply callbacks removed: ZSCORE's "-0" and "0" stay apart); an error
is a value, compared by its text. Keys: four zsets, a list, a set (also a ZUNION/ZINTER/ZDIFF
input), a hash and a string (WRONGTYPE), "missing" (never written) and "dst". zlex is written
with score 0 only; a lex range asked of a zset whose scores differ (checked on PORT_B first)
goes to zlex instead, since a skiplist's answer then hangs on its nodes' random levels and two
redis-servers disagree. At the end: the key names, every key's TYPE and contents (ZRANGE 0 -1
WITHSCORES and OBJECT ENCODING for a zset, sorted SMEMBERS and HGETALL; DUMP not compared).
Not compared exactly, because Redis leaves them to its random generator or its hash table's
seeded order: ZRANDMEMBER with members (compared: how many, whether each is a member with that
score, distinct for a positive count; exactly for count 0, an empty or missing key and errors),
ZSCAN (compared: the set of member/score pairs a full iteration from cursor 0 gathers, not the
cursors or pages; a bad cursor's error exactly) and a set's order. BZPOPMIN, BZPOPMAX and
BZMPOP only with timeouts of 1 ms or 10 ms (never 0), so nothing blocks long. ZRANDMEMBER's
count -2^63 (refused by Redis) only where no zset is. Not run in CI (it needs both servers).
"""
import random, sys, redis
def conn(port):
    r = redis.Redis(port=int(port), decode_responses=False, protocol=2, socket_timeout=20)
    r.response_callbacks.clear()  # raw replies: no float() of scores, no pairing
    return r
if len(sys.argv) != 5: sys.exit("usage: lockstep_zsets.py PORT_A PORT_B CALLS SEED")
A = conn(sys.argv[1]); B = conn(sys.argv[2])
N = int(sys.argv[3]); rng = random.Random(int(sys.argv[4]))
ENTRIES = rng.choice([0, 1, 3, 128]); VALUE = rng.choice([0, 5, 64])
print("zset-max-listpack-entries", ENTRIES, "zset-max-listpack-value", VALUE)
ZKEYS = ["z1", "z2", "z3", "zlex"]; OTHER = ["l1", "s1", "h1", "str"]; KEYS = ZKEYS + OTHER
def setup(r):
    r.execute_command("FLUSHDB")
    r.execute_command("CONFIG", "SET", "zset-max-listpack-entries", ENTRIES)
    r.execute_command("CONFIG", "SET", "zset-max-listpack-value", VALUE)
    r.execute_command("RPUSH", "l1", "a", "b"); r.execute_command("SADD", "s1", "a", "c", "1")
    r.execute_command("HSET", "h1", "a", "1"); r.execute_command("SET", "str", "a")
for r in (A, B): setup(r)

def O(s): return s.lower() if rng.random() < 0.15 else s  # option names in either case
def member():
    c = rng.random()
    if c < 0.55: return rng.choice("abcdefgh")
    if c < 0.62: return rng.choice(["aa", "ab", "ba", "abcde", "abcdef", "b\x00c"])
    if c < 0.75: return rng.choice(["1", "-2", "10", "3.5", "007", "0", "-0", "1e3", "inf", "9223372036854775808"])
    if c < 0.80: return rng.choice(["", "-", "+", "[a", "(a", " "])
    if c < 0.93: return "m%d" % rng.randint(0, 400)  # enough names to pass 128 entries
    if c < 0.985: return rng.choice("xyz") * rng.randint(60, 70)  # about the 64-byte limit
    return "w" * rng.randint(200, 5000)
VALID_SCORES = ["0", "1", "2", "3", "-1", "-5", "0.5", "1.5", "-2.5", "-0", "+0", "inf", "-inf", "+inf",
                "1e300", "-1e300", "0.1", "3.14159265358979323846", "1.7976931348623157e308", "4.9e-324",
                "123456789012345678901234567890", "Infinity", "-INF", "0x10", "1e-5", "2.0", "9007199254740993"]
BAD_SCORES = ["nan", "NaN", "abc", "", "1e400", "1e-400", " 1", "1 ", "1.5.5", "(1.5", "[1", "-nan", "1,5"]
def score():
    c = rng.random()
    if c < 0.55: return str(rng.randint(-4, 4))
    if c < 0.65: return str(rng.randint(-8, 8) / 2)
    if c < 0.93: return rng.choice(VALID_SCORES)
    if c < 0.95: return repr(rng.uniform(-1e6, 1e6))
    return rng.choice(BAD_SCORES)
def rangescore():  # a ZRANGEBYSCORE min or max
    c = rng.random()
    if c < 0.5: return rng.choice(["", "("]) + str(rng.choice([rng.randint(-4, 4), rng.randint(-8, 8) / 2]))
    return rng.choice(["-inf", "+inf", "inf", "(inf", "(-inf", "-inf", "+inf", "(1.5", "(", "", " 2", "1e400",
                       "nan", "(nan", "abc", "[1", "0x10", "-0", "(-0", "1e300", "(2 ", "((1"])
def lex():
    c = rng.random()
    if c < 0.6: return rng.choice("[(") + rng.choice("abcdefgh")
    return rng.choice(["-", "+", "[", "(", "a", "", "+a", "-a", "[aa", "(ab", "[xxx", "(1", "[-", "(+"])
def rank():
    c = rng.random()
    if c < 0.85: return str(rng.randint(-12, 12))
    return rng.choice(["9223372036854775807", "-9223372036854775808", "9223372036854775808", "a", "1.5", "", "-0", "+1"])
def count(lo=-3, hi=8):
    c = rng.random()
    if c < 0.85: return str(rng.randint(lo, hi))
    return rng.choice(["0", "9223372036854775807", "-9223372036854775808", "a", "1.5", "", "99999999999999999999"])
def zkey(p=0.8):
    if rng.random() < p: return rng.choice(ZKEYS)
    return rng.choice(OTHER + ["missing"])
def dest(): return rng.choice(ZKEYS[:3]) if rng.random() < 0.85 else rng.choice(OTHER + ["dst"])  # never zlex
def lexkey(): return "zlex" if rng.random() < 0.5 else zkey(0.7)  # lexsafe() may send it to zlex
def zero(): return rng.choice(["0"] * 6 + ["-0", "+0", "0.0", "0e5"]) if rng.random() < 0.97 else rng.choice(BAD_SCORES)
def numkeys(ks):
    return rng.choice([str(len(ks))] * 14 + ["0", "-1", str(len(ks) + 1), str(len(ks) - 1), "x", "9223372036854775808"])
def limit(): return [O("LIMIT"), count(-2, 5), count(-2, 6)] if rng.random() < 0.35 else []
def ws(p=0.5): return [O("WITHSCORES")] if rng.random() < p else []
def agg_opts(nkeys, weights=True):
    a = []
    if weights and rng.random() < 0.3:
        n = nkeys if rng.random() < 0.8 else rng.randint(0, 4)
        a += [O("WEIGHTS")] + [rng.choice(["1", "2", "0", "-1", "0.5", "-1.5", "inf", "-inf", "3", "1e300"] * 3 + ["abc", "nan", "", "(1"]) for _ in range(n)]
    if weights and rng.random() < 0.3: a += [O("AGGREGATE"), rng.choice(["SUM", "MIN", "MAX", "sum", "max", "AVG"])]
    if rng.random() < 0.03: a += [rng.choice(["WEIGHTS", "AGGREGATE", "BAD", "LIMIT"])]
    return a
def keys(n=3, p=0.85): return [zkey(p) for _ in range(rng.randint(1, n))]

def cmd():
    k = zkey(); c = rng.randrange(60)
    w = k if k != "missing" else "z1"  # "missing" is never written
    if c < 9:
        a = ["ZADD", w if rng.random() < 0.8 else rng.choice(["zlex", "zlex", "zlex"] + OTHER)]
        opts = [o for o in ["NX", "XX", "GT", "LT", "CH", "INCR"] if rng.random() < 0.15]
        if rng.random() < 0.04: opts.append(rng.choice(["FOO", "NXX", "INC"]))
        rng.shuffle(opts); a += [O(o) for o in opts]
        n = 1 if "INCR" in opts and rng.random() < 0.85 else rng.randint(1, 4)
        for _ in range(n): a += [zero() if a[1] == "zlex" else score(), member()]
        if rng.random() < 0.03: a = a[:-1]  # odd arity: syntax error
        return a
    if c == 9: return ["ZINCRBY", w, zero() if w == "zlex" else score(), member()]
    if c == 10: return ["ZREM", k] + [member() for _ in range(rng.randint(1 if rng.random() < 0.97 else 0, 4))]
    if c == 11: return ["ZCARD", k] + (["x"] if rng.random() < 0.03 else [])
    if c == 12: return ["ZSCORE", k, member()]
    if c == 13: return ["ZMSCORE", k] + [member() for _ in range(rng.randint(1 if rng.random() < 0.97 else 0, 4))]
    if c == 14: return ["ZCOUNT", k, rangescore(), rangescore()]
    if c == 15: return ["ZLEXCOUNT", lexkey(), lex(), lex()]
    if c == 16: return [rng.choice(["ZRANK", "ZREVRANK"]), k, member()] + (["WITHSCORE"] if rng.random() < 0.03 else [])
    if c in (17, 18):  # ZRANGE, ZRANGESTORE
        by = rng.choice([None, None, "BYSCORE", "BYLEX"])
        src = lexkey() if by == "BYLEX" else k
        lo, hi = {None: (rank(), rank()), "BYSCORE": (rangescore(), rangescore()), "BYLEX": (lex(), lex())}[by]
        opts = ([O(by)] if by else []) + ([O("REV")] if rng.random() < 0.35 else [])
        opts += limit() if by or rng.random() < 0.2 else []
        if c == 17: opts += ws(0.4 if by != "BYLEX" else 0.05)
        if rng.random() < 0.03: opts.append(rng.choice(["BYSCORE", "BYLEX", "FOO", "LIMIT", "REV"]))
        rng.shuffle(opts) if rng.random() < 0.1 else None
        return (["ZRANGE", src] if c == 17 else ["ZRANGESTORE", dest(), src]) + [lo, hi] + opts
    if c == 19: return ["ZREVRANGE", k, rank(), rank()] + ws()
    if c == 20: return [rng.choice(["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]), k, rangescore(), rangescore()] + ws(0.4) + limit() + (["FOO"] if rng.random() < 0.03 else [])
    if c == 21: return [rng.choice(["ZRANGEBYLEX", "ZREVRANGEBYLEX"]), lexkey(), lex(), lex()] + limit() + (["WITHSCORES"] if rng.random() < 0.03 else [])
    if c == 22: return ["ZREMRANGEBYRANK", k, rank(), rank()]
    if c == 23: return ["ZREMRANGEBYSCORE", k, rangescore(), rangescore()]
    if c == 24: return ["ZREMRANGEBYLEX", lexkey(), lex(), lex()]
    if c in (25, 26): return [rng.choice(["ZPOPMIN", "ZPOPMAX"]), k] + ([count(-2, 6)] if rng.random() < 0.5 else []) + (["1"] if rng.random() < 0.03 else [])
    if c in (27, 28):  # ZMPOP, BZMPOP
        ks = keys()
        a = ["ZMPOP"] if c == 27 else ["BZMPOP", rng.choice(["0.01", "0.001", "0.01", "-1", "abc", ""])]
        a += [numkeys(ks)] + ks + [rng.choice(["MIN", "MAX"] * 3 + ["min", "max", "MID"])]
        if rng.random() < 0.4: a += [O("COUNT"), count(-2, 6)]
        if rng.random() < 0.03: a += [rng.choice(["COUNT", "FOO"])]
        return a
    if c == 29: return [rng.choice(["BZPOPMIN", "BZPOPMAX"])] + keys() + [rng.choice(["0.01", "0.001", "0.01", "-1", "-0.5", "abc", ""])]
    if c in (30, 31, 32):  # ZUNION, ZINTER, ZDIFF
        name = rng.choice(["ZUNION", "ZINTER", "ZDIFF"]); ks = keys(3, 0.75)
        return [name, numkeys(ks)] + ks + agg_opts(len(ks), name != "ZDIFF" or rng.random() < 0.1) + ws()
    if c in (33, 34):
        name = rng.choice(["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]); ks = keys(3, 0.75)
        return [name, dest(), numkeys(ks)] + ks + agg_opts(len(ks), name != "ZDIFFSTORE" or rng.random() < 0.1) + (["WITHSCORES"] if rng.random() < 0.03 else [])
    if c == 35:
        ks = keys(3, 0.75)
        return ["ZINTERCARD", numkeys(ks)] + ks + ([O("LIMIT"), count(-1, 5)] if rng.random() < 0.4 else [])
    if c in (36, 37):
        a = ["ZRANDMEMBER", k]
        if rng.random() < 0.75: a += [rng.choice([str(rng.randint(-8, 8)), "0", "-9223372036854775808", "9223372036854775807", "a", "1.5"])] + ws()
        # Redis refuses -2^63 before it looks the key up; a server that took it would try to send
        # 2^63 members, so only where the key holds no zset.
        if a[2:3] == ["-9223372036854775808"] and a[1] in ZKEYS: a[1] = rng.choice(OTHER + ["missing"])
        return a
    if c in (38, 39):
        a = ["ZSCAN", k, rng.choice(["0"] * 8 + ["", "+0", "-0", "00"])]  # all cursor 0 to Redis
        if rng.random() < 0.3: a += [O("MATCH"), rng.choice(["*", "a*", "[a-c]", "x*", "?", "*b*"])]
        if rng.random() < 0.3: a += [O("COUNT"), rng.choice(["1", "2", "10", "100", "0", "-1", "a"])]
        if rng.random() < 0.05: a[2] = rng.choice(["abc", "18446744073709551616", "1.5", " 1"]); return a + ["NOSCAN"]  # bad cursor: one call, exact
        return a
    if c == 40: return ["TYPE", rng.choice(KEYS)]
    if c == 41: return ["OBJECT", "ENCODING", rng.choice(ZKEYS + ["missing"])]
    if c == 42: return ["EXISTS"] + [rng.choice(KEYS) for _ in range(rng.randint(1, 3))]
    if c == 43: return ["DEL", rng.choice(KEYS)]
    if c == 44: return ["RPUSH", "l1", member()]
    if c == 45: return ["SADD", "s1"] + [member() for _ in range(rng.randint(1, 3))]
    if c == 46: return ["HSET", "h1", member(), member()]
    if c == 47: return ["SET", "str", member()]
    if c == 48:  # wrong arity
        return rng.choice([["ZADD", k], ["ZADD", k, "1"], ["ZINCRBY", k, "1"], ["ZSCORE", k], ["ZCOUNT", k, "0"],
                           ["ZRANGE", k, "0"], ["ZRANGESTORE", k, k, "0"], ["ZPOPMIN"], ["ZMPOP", "1"], ["ZUNION"],
                           ["ZINTERCARD", "1"], ["ZRANDMEMBER"], ["ZSCAN", k], ["ZCARD"], ["ZREMRANGEBYLEX", k, "-"],
                           ["BZPOPMIN", k], ["ZDIFF", "1"], ["ZLEXCOUNT", k], ["ZMSCORE", k]])
    if c == 49: return ["ZREVRANGE", k, rank(), rank(), rng.choice(["WITHSCORES", "withscores", "LIMIT", "FOO"])]
    if c == 50:  # many members at once: past 128 entries
        a = ["ZADD", rng.choice(ZKEYS)]
        for _ in range(rng.randint(20, 80)): a += ["0" if a[1] == "zlex" else rng.choice([str(rng.randint(-9, 9))] * 3 + VALID_SCORES), "m%d" % rng.randint(0, 400)]
        return a
    # the rest: more writes so the keys stay populated
    a = ["ZADD", rng.choice(ZKEYS + ["zlex", "zlex"])]
    for _ in range(rng.randint(1, 5)): a += [zero() if a[1] == "zlex" else score(), member()]
    return a

def run(r, a):
    try: return ("ok", r.execute_command(*a))
    except redis.ResponseError as e: return ("err", type(e).__name__, str(e))
def zcontents(r, k):
    if r.execute_command("TYPE", k) != b"zset": return {}
    x = r.execute_command("ZRANGE", k, 0, -1, "WITHSCORES")
    return dict(zip(x[0::2], x[1::2]))
def randmember(r, a):  # ZRANDMEMBER: properties of the reply, not the members drawn
    rep = run(r, a)
    if rep[0] != "ok" or rep[1] is None or rep[1] == []: return rep
    z = zcontents(r, a[1])
    if len(a) == 2: return ("one", rep[1] in z)
    withscores = len(a) > 3 and a[3].upper() == "WITHSCORES"
    if withscores: pairs = list(zip(rep[1][0::2], rep[1][1::2])); ms = [m for m, _ in pairs]; ok = all(z.get(m) == s for m, s in pairs)
    else: ms = rep[1]; ok = all(m in z for m in ms)
    return ("many", len(ms), ok, len(set(ms)) == len(ms) if int(a[2]) > 0 else None)
def scan(r, a):  # ZSCAN: the pairs a full iteration gathers
    if a[-1] == "NOSCAN": return run(r, a[:-1])
    got, cur = set(), a[2]
    for _ in range(100000):
        rep = run(r, a[:2] + [cur] + a[3:])
        if rep[0] != "ok": return rep
        cur, items = rep[1]; got |= set(zip(items[0::2], items[1::2]))
        if cur == b"0": return ("ok", sorted(got))
    return ("no end",)
LEXCMDS = {"ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT", "ZREMRANGEBYLEX"}
def lexsafe(a):
    """A lex range of a zset whose scores differ goes to zlex instead: Redis's answer then depends
    on its skiplist nodes' random levels, and two redis-servers disagree."""
    if a[0] in LEXCMDS or (a[0] in ("ZRANGE", "ZRANGESTORE") and "BYLEX" in [x.upper() for x in a]):
        i = 2 if a[0] == "ZRANGESTORE" else 1
        if len(a) > i and len(set(map(float, zcontents(B, a[i]).values()))) > 1: a[i] = "zlex"
    return a
def call(r, a):
    if a[0] == "ZRANDMEMBER" and len(a) >= 2: return randmember(r, a)
    if a[0] == "ZSCAN" and len(a) >= 3: return scan(r, a)
    return run(r, a)
def short(a): return [s if len(s) <= 24 else s[:12] + "..(%d)" % len(s) for s in a[:8]]

diffs = 0
for i in range(N):
    a = lexsafe(cmd())
    try: x, y = call(A, a), call(B, a)
    except (redis.ConnectionError, redis.TimeoutError) as e:
        print("CONNECTION LOST at call", i, short(a), repr(e)); diffs += 1; break
    if x != y:
        diffs += 1
        if diffs <= 15: print("DIFF", short(a), "\n   augur:", str(x)[:200], "\n   redis:", str(y)[:200])
def state(r):
    out = {}
    for k in sorted(r.execute_command("KEYS", "*")):
        t = r.execute_command("TYPE", k)
        if t == b"zset": v = (r.execute_command("ZRANGE", k, 0, -1, "WITHSCORES"), r.execute_command("OBJECT", "ENCODING", k))
        elif t == b"list": v = r.execute_command("LRANGE", k, 0, -1)
        elif t == b"set": v = sorted(r.execute_command("SMEMBERS", k))
        elif t == b"hash": v = sorted(zip(*[iter(r.execute_command("HGETALL", k))] * 2))
        else: v = r.execute_command("GET", k)
        out[k] = (t, v)
    return out
sa, sb = state(A), state(B)
for k in sorted(set(sa) | set(sb)):
    if sa.get(k) != sb.get(k):
        diffs += 1
        print("STATE DIFF", k, "\n   augur:", str(sa.get(k))[:200], "\n   redis:", str(sb.get(k))[:200])
print("calls", N, "diffs", diffs)
