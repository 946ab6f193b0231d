"""Lockstep comparison of stream commands: the same seeded random commands to Augur and to a
redis-server 7.0, every reply and the keys' final contents compared.

    augur serve --port 7520 &  redis-server --port 7521 --save "" &
    python3 tests/compat/lockstep_streams.py 7520 7521 20000 SEED

FLUSHDB first on both (database 0). Prints each difference (the first 15) and "calls N diffs D"
("CONNECTION LOST" and a stop if a server drops the connection or takes 20 s to answer). The seed
also picks the stream-node-max-entries (2, 3, 10, 100) and stream-node-max-bytes (300, 4096) both
servers get, so approximate trimming (whole nodes) and XINFO STREAM's radix-tree-keys are compared
at several node sizes. Replies are raw RESP2 (redis-py's reply callbacks removed); an error is a
value, compared by its text.

Keys: four streams (s1 s2 s3 s4; s4 only through COPY, RENAME and RESTORE), a string and a list
(WRONGTYPE), "missing" (never written) and "auto". Groups g1 g2 g3, consumers c1..c4. IDs are
explicit, incomplete (`5`) or `ms-*`, taken from a clock the script advances (so most XADDs are
accepted and both servers generate the same IDs), from the IDs added so far, or bad ones (errors
compared). Only "auto" gets `XADD *`: its replies are compared by shape (an ID of two numbers),
its final contents by length and fields, never by ID. Not compared exactly, because they follow
the clock: XPENDING's idle column, XINFO CONSUMERS' idle, XINFO STREAM FULL's delivery times and
seen-time (all masked; an idle must still be an integer) and XINFO STREAM's radix-tree-nodes (the
rax's inner node count, masked). Times given to the servers are clock-proof: XPENDING IDLE,
XCLAIM's and XAUTOCLAIM's min-idle-time only 0 or 10^15 (more than any idle), XCLAIM IDLE small,
TIME 0, 1 or the future. DUMP payloads hold those times, so DUMP is only compared as a RESTORE on
the same server (the RESTORE's reply compared). BLOCK only with 1 to 10 ms (or a bad value).

At the end: the key names, every key's TYPE and contents: for a stream XRANGE - +, XINFO STREAM
(radix-tree-nodes masked), XINFO GROUPS, and for each group XPENDING - + (idle masked) and XINFO
CONSUMERS (idle masked). Not run in CI (it needs both servers).
"""
import random, re, sys, redis
def conn(port):
    r = redis.Redis(port=int(port), decode_responses=False, protocol=2, socket_timeout=20)
    r.response_callbacks.clear()  # raw replies
    return r
if len(sys.argv) != 5: sys.exit("usage: lockstep_streams.py PORT_A PORT_B CALLS SEED")
A = conn(sys.argv[1]); B = conn(sys.argv[2])
N = int(sys.argv[3]); rng = random.Random(int(sys.argv[4]))
NODE_ENTRIES = rng.choice([2, 3, 10, 100]); NODE_BYTES = rng.choice([300, 4096])
print("stream-node-max-entries", NODE_ENTRIES, "stream-node-max-bytes", NODE_BYTES)
STREAMS = ["s1", "s2", "s3"]; ALLSTREAMS = STREAMS + ["s4"]; OTHER = ["str", "l1"]
KEYS = ALLSTREAMS + OTHER + ["missing"]
GROUPS = ["g1", "g2", "g3"]; CONSUMERS = ["c1", "c2", "c3", "c4"]
HUGE = "1000000000000000"  # ms: more than any idle time (the clock is about 1.8e12)
MAXID = "18446744073709551615"
def setup(r):
    r.execute_command("FLUSHDB")
    r.execute_command("CONFIG", "SET", "stream-node-max-entries", NODE_ENTRIES)
    r.execute_command("CONFIG", "SET", "stream-node-max-bytes", NODE_BYTES)
    r.execute_command("SET", "str", "a"); r.execute_command("RPUSH", "l1", "a", "b")
for r in (A, B): setup(r)

clock = [1]  # the ms part of new IDs: only ever grows
added = {}   # per key, the IDs the servers accepted (from B's replies): for ranges, XDEL ...
def O(s): return s.lower() if rng.random() < 0.15 else s  # option names in either case
def tick(): clock[0] += rng.choice([0, 1, 1, 1, 2, 5])
BAD_IDS = ["abc", "1-x", "-1", "1-", "-", "+", "1-1-1", "0x10", "", "1.5", "1-**", "(1", "$", ">", "*-1",
           MAXID + "0", "1-" + MAXID + "0", " 1", "+1-1", "1- 1", "01-01", "1--1"]
def known(k=None):  # an ID added to k (or to any stream)
    ids = added.get(k) if k else None
    if not ids: ids = [i for v in added.values() for i in v[-20:]]
    if ids and rng.random() < 0.8: ids = ids[-30:]  # mostly recent ones: still in the stream
    return rng.choice(ids) if ids else "1-1"
def pel_id(k, g):
    """An ID in g's PEL on k, looked up on PORT_B (XPENDING changes nothing), else an added ID."""
    try: rows = B.execute_command("XPENDING", k, g, "-", "+", "20")
    except redis.ResponseError: rows = []
    return rng.choice(rows)[0].decode() if rows and rng.random() < 0.8 else known(k)
def newid(k):  # an XADD ID
    tick(); c = rng.random(); t = clock[0]
    if c < 0.45: return "%d-%d" % (t, rng.randint(0, 3))
    if c < 0.72: return "%d-*" % t
    if c < 0.80: return str(t)
    if c < 0.88: return rng.choice(["0-0", "0-*", "0-1", "1", "1-1", "%d-1" % max(0, t - 3), "%d-*" % max(0, t - 2), known()])
    if c < 0.94: return rng.choice(BAD_IDS)
    if c < 0.9995 or k != "s3": return "%d-%d" % (t, rng.randint(4, 9))
    return rng.choice(["%s-%s" % (MAXID, MAXID), "%s-*" % MAXID, "%d-%s" % (t, MAXID)])
def anyid(k=None):  # an ID for XDEL, XACK, XCLAIM, XSETID ...
    c = rng.random()
    if c < 0.55: return known(k)
    if c < 0.75: return "%d-%d" % (rng.randint(0, clock[0] + 2), rng.randint(0, 3))
    if c < 0.88: return str(rng.randint(0, clock[0] + 2))
    if c < 0.93: return rng.choice(["0", "0-0", "%s-%s" % (MAXID, MAXID), MAXID])
    return rng.choice(BAD_IDS)
def bound(k=None):  # an XRANGE / XPENDING / XAUTOCLAIM bound
    c = rng.random()
    if c < 0.3: return rng.choice(["-", "+"])
    if c < 0.6: return known(k)
    if c < 0.75: return "(" + known(k)
    if c < 0.88: return str(rng.randint(0, clock[0] + 1))
    if c < 0.93: return "(" + rng.choice([str(rng.randint(0, clock[0] + 1)), "0-0", "%s-%s" % (MAXID, MAXID), "0"])
    return rng.choice(BAD_IDS + ["(-", "(+", "((1"])
def count(lo=-2, hi=8):
    c = rng.random()
    if c < 0.85: return str(rng.randint(lo, hi))
    return rng.choice(["0", "a", "1.5", "", "9223372036854775807", "-9223372036854775808", "99999999999999999999"])
def skey(p=0.85): return rng.choice(STREAMS) if rng.random() < p else rng.choice(["s4"] + OTHER + ["missing"])
def group(p=0.9): return rng.choice(GROUPS) if rng.random() < p else rng.choice(["nog", ""])
def consumer(): return rng.choice(CONSUMERS) if rng.random() < 0.95 else rng.choice(["", "c5", "C1"])
def fields():
    a = []
    for _ in range(rng.randint(1, 3)):
        a += [rng.choice(["f", "g", "h", "name", "n"]), rng.choice(["1", "v", "", "x" * rng.randint(1, 20), "-5", "10" * 40])]
    if rng.random() < 0.03: a = a[:-1]  # odd: arity error
    return a
def old(k):  # an ID from the older half of those added to k: a MINID that leaves some
    ids = added.get(k) or ["1-1"]
    return rng.choice(ids[:max(1, len(ids) // 2)])
def ordered(k, lo, hi):  # usually lo <= hi (when both are plain IDs), so ranges find something
    def key(b):
        m = re.match(r"^\(?([0-9]+)(?:-([0-9]+))?$", b)
        return (int(m.group(1)), int(m.group(2) or 0)) if m else None
    if rng.random() < 0.8 and key(lo) is not None and key(hi) is not None and key(lo) > key(hi): return hi, lo
    return lo, hi
def trim_opts(for_xadd, k):
    a = []
    c = rng.random() * (0.4 if not for_xadd else 1)  # XTRIM: mostly a strategy
    if c < 0.3:
        a += [O(rng.choice(["MAXLEN", "MINID"]))]
        if rng.random() < 0.5: a += [rng.choice(["=", "~", "~", "="] + ([] if rng.random() < 0.97 else ["==", "!"]))]
        a += [str(rng.randint(0, 40)) if a[0].upper() == "MAXLEN" and rng.random() < 0.9 else (old(k) if a[0].upper() == "MINID" and rng.random() < 0.9 else anyid() if a[0].upper() == "MINID" else count(-1, 30))]
        if rng.random() < 0.2: a += [O("LIMIT"), rng.choice(["0", "1", "2", "5", "10", "100", "-1", "a"])]
    elif c < 0.32: a += [O("LIMIT"), "5"]
    elif c < 0.34: a += [O("MAXLEN"), "1", O("MINID"), "1"]
    if for_xadd and rng.random() < 0.15: a.insert(0, O("NOMKSTREAM"))
    return a
def block(): return [O("BLOCK"), rng.choice(["1", "2", "5", "10"] * 4 + ["-1", "a", "1.5"])]

def cmd():
    c = rng.randrange(62)
    if c < 12:  # XADD
        k = skey() if rng.random() < 0.95 else rng.choice(["s4", "missing"])
        if k == "missing": k = "s1"
        return ["XADD", k] + trim_opts(True, k) + [newid(k)] + fields()
    if c == 12: return ["XADD", "auto"] + (trim_opts(False, "auto") if rng.random() < 0.3 else []) + ["*"] + fields()
    if c == 13: return ["XLEN", skey()] + (["x"] if rng.random() < 0.03 else [])
    if c in (14, 15):
        name = rng.choice(["XRANGE", "XREVRANGE"])
        k = skey(); lo, hi = ordered(k, bound(k), bound(k))
        a = [name, k] + ([lo, hi] if name == "XRANGE" or rng.random() < 0.3 else [hi, lo])
        if rng.random() < 0.4: a += [O("COUNT"), count()]
        if rng.random() < 0.03: a += [rng.choice(["COUNT", "FOO"])]
        return a
    if c == 16:
        k = skey(); return ["XDEL", k] + [anyid(k) for _ in range(rng.randint(1 if rng.random() < 0.97 else 0, 3))]
    if c == 17:
        k = skey(); a = ["XTRIM", k] + trim_opts(False, k)
        if rng.random() < 0.03: a.append("extra")
        return a
    if c in (18, 19):  # XREAD
        ks = [skey() for _ in range(rng.randint(1, 3))]
        a = ["XREAD"]
        if rng.random() < 0.4: a += [O("COUNT"), count(-1, 5)]
        if rng.random() < 0.3: a += block()
        if rng.random() < 0.02: a += [rng.choice(["NOACK", "FOO"])]
        ids = [rng.choice(["0", "$", known(), bound(), "0-0"]) for _ in ks]
        if rng.random() < 0.03: ids = ids[:-1]  # unbalanced
        return a + [O("STREAMS")] + ks + ids
    if c in (20, 21):  # XGROUP CREATE
        a = ["XGROUP", O("CREATE"), skey(), group(0.97), rng.choice(["$", "0", "$", known(), anyid()])]
        if rng.random() < 0.3: a += [O("MKSTREAM")]
        if a[2] == "missing" and len(a) > 5: a[2] = "s4"  # "missing" stays missing
        if rng.random() < 0.2: a += [O("ENTRIESREAD"), rng.choice(["0", "1", "3", "-1", "-2", "100", "a"])]
        if rng.random() < 0.02: a += ["FOO"]
        return a
    if c == 22:
        a = ["XGROUP", O("SETID"), skey(), group(), rng.choice(["$", "0", known(), anyid()])]
        if rng.random() < 0.3: a += [O("ENTRIESREAD"), rng.choice(["0", "2", "5", "-1", "-3", "a"])]
        return a
    if c == 23: return ["XGROUP", O("DESTROY"), skey(), group()] if rng.random() < 0.25 else ["XGROUP", O("CREATECONSUMER"), skey(), group(), consumer()]
    if c == 24: return ["XGROUP", O("DELCONSUMER"), skey(), group(), consumer()]
    if c == 25: return rng.choice([["XGROUP", "FOO"], ["XGROUP"], ["XGROUP", "CREATE", "s1"], ["XGROUP", "SETID", "s1", "g1"],
                                   ["XGROUP", "DESTROY", "s1"], ["XGROUP", "HELP"], ["XGROUP", "CREATECONSUMER", "s1", "g1"]])
    if c in (26, 27, 28, 29):  # XREADGROUP
        ks = [skey(0.9) for _ in range(rng.randint(1, 2))]
        a = ["XREADGROUP", O("GROUP"), group(0.95), consumer()]
        opts = []
        if rng.random() < 0.4: opts += [O("COUNT"), count(-1, 5)]
        if rng.random() < 0.2: opts += block()
        if rng.random() < 0.2: opts += [O("NOACK")]
        rng.shuffle(opts) if rng.random() < 0.2 else None
        ids = [rng.choice([">"] * 6 + ["0", "0", known(), "$", anyid()]) for _ in ks]
        return a + opts + [O("STREAMS")] + ks + ids
    if c in (30, 31):
        k, g = skey(), group()
        return ["XACK", k, g] + [pel_id(k, g) if rng.random() < 0.7 else anyid(k) for _ in range(rng.randint(1 if rng.random() < 0.97 else 0, 3))]
    if c in (32, 33):  # XPENDING
        a = ["XPENDING", skey(), group()]
        if rng.random() < 0.7:
            if rng.random() < 0.3: a += [O("IDLE"), rng.choice(["0", "0", HUGE, "a"])]
            a += list(ordered(a[1], bound(a[1]), bound(a[1]))) + [count(-1, 10)]
            if rng.random() < 0.4: a += [consumer()]
        elif rng.random() < 0.1: a += [rng.choice(["-", "+"])]
        return a
    if c in (34, 35):  # XCLAIM
        k, g = skey(), group()
        a = ["XCLAIM", k, g, consumer(), rng.choice(["0", "0", "0", HUGE, "-5", "abc"])]
        a += [pel_id(k, g) if rng.random() < 0.7 else anyid(k) for _ in range(rng.randint(1, 3))]
        opts = []
        if rng.random() < 0.15: opts += [O("IDLE"), rng.choice(["0", "100", "5000", "-5", "abc"])]
        if rng.random() < 0.1: opts += [O("TIME"), rng.choice(["0", "1", "99999999999999", "abc"])]
        if rng.random() < 0.2: opts += [O("RETRYCOUNT"), rng.choice(["0", "1", "5", "-1", "abc"])]
        if rng.random() < 0.2: opts += [O("FORCE")]
        if rng.random() < 0.4: opts += [O("JUSTID")]
        if rng.random() < 0.15: opts += [O("LASTID"), rng.choice([known(), anyid()])]
        if rng.random() < 0.02: opts += [rng.choice(["FOO", "IDLE"])]
        return a + opts
    if c in (36, 37):  # XAUTOCLAIM
        k = skey()
        a = ["XAUTOCLAIM", k, group(), consumer(), rng.choice(["0", "0", "0", HUGE, "-1", "abc"]), rng.choice(["0", "-", bound(k)])]
        if rng.random() < 0.5: a += [O("COUNT"), rng.choice(["1", "2", "3", "10", "100", "0", "-1", "a", "576460752303423488"])]
        if rng.random() < 0.4: a += [O("JUSTID")]
        if rng.random() < 0.02: a += [rng.choice(["FOO", "COUNT"])]
        return a
    if c in (38, 39):
        a = ["XINFO", O("STREAM"), skey()]
        if rng.random() < 0.4:
            a += [O("FULL")]
            if rng.random() < 0.5: a += [O("COUNT"), count(-1, 5)]
        if rng.random() < 0.02: a += ["FOO"]
        return a
    if c == 40: return ["XINFO", O("GROUPS"), skey()]
    if c == 41: return ["XINFO", O("CONSUMERS"), skey(), group()]
    if c == 42: return rng.choice([["XINFO"], ["XINFO", "FOO"], ["XINFO", "HELP"], ["XINFO", "STREAM"], ["XINFO", "CONSUMERS", "s1"]])
    if c == 43:  # XSETID
        a = ["XSETID", skey(), rng.choice([known(), anyid(), "%d-%d" % (clock[0], rng.randint(0, 5))])]
        if rng.random() < 0.3: a += [O("ENTRIESADDED"), rng.choice(["0", "5", "100", "1000", "-1", "a"])]
        if rng.random() < 0.3: a += [O("MAXDELETEDID"), rng.choice([known(), anyid(), "0-0"])]
        return a
    if c == 44: return ["TYPE", rng.choice(KEYS)]
    if c == 45: return ["OBJECT", "ENCODING", rng.choice(KEYS)]
    if c == 46: return ["EXISTS"] + [rng.choice(KEYS) for _ in range(rng.randint(1, 3))]
    if c == 47: return ["DEL", rng.choice(ALLSTREAMS)] if rng.random() < 0.1 else ["XGROUP", "CREATE", rng.choice(STREAMS), rng.choice(GROUPS), rng.choice(["0", "$"]), "MKSTREAM"]
    if c in (48, 49, 50):  # COPY, RENAME, DUMP + RESTORE; a string or list goes to "tmp" only
        name = {48: "COPY", 49: "RENAME", 50: "DUMPRESTORE"}[c]
        if name == "RENAME" and rng.random() < 0.85: return ["TYPE", skey()]
        src = skey(0.9); dst = rng.choice(ALLSTREAMS + ["str"]) if src in ALLSTREAMS else "tmp"
        if name == "RENAME" and dst == "str": dst = "s4"
        return [name, src, dst] + ([O("REPLACE")] if name != "RENAME" and rng.random() < 0.5 else [])
    if c == 51: return ["SET", "str", rng.choice(["a", "1"])] if rng.random() < 0.5 else ["RPUSH", "l1", "x"]
    if c == 52:  # wrong arity
        k = skey()
        return rng.choice([["XADD", k], ["XADD", k, "1-1"], ["XADD", k, "1-1", "f"], ["XLEN"], ["XRANGE", k, "-"],
                           ["XREVRANGE", k], ["XDEL", k], ["XTRIM", k], ["XTRIM", k, "MAXLEN"], ["XREAD", "STREAMS"],
                           ["XREADGROUP", "GROUP", "g1", "STREAMS", k, ">"], ["XACK", k, "g1"], ["XPENDING", k],
                           ["XCLAIM", k, "g1", "c1", "0"], ["XAUTOCLAIM", k, "g1", "c1", "0"], ["XSETID", k]])
    # the rest: more XADDs (plain) and group reads, so the streams and PELs stay populated
    if c < 58:
        k = rng.choice(STREAMS); return ["XADD", k, newid(k)] + fields()
    return ["XREADGROUP", "GROUP", rng.choice(GROUPS), rng.choice(CONSUMERS)] + (["COUNT", str(rng.randint(1, 4))] if rng.random() < 0.6 else []) + ["STREAMS", rng.choice(STREAMS), ">"]

def run(r, a):
    try: return ("ok", r.execute_command(*a))
    except redis.ResponseError as e: return ("err", type(e).__name__, str(e))
def mask(v):
    """The clock's fields masked: after b"idle", b"seen-time" and b"radix-tree-nodes" an integer
    becomes "T" (still checked to be one), in XINFO STREAM FULL's PELs the delivery times."""
    if not isinstance(v, list): return v
    out = [mask(x) for x in v]
    for i in range(len(out) - 1):
        if out[i] in (b"idle", b"seen-time", b"radix-tree-nodes") and isinstance(out[i + 1], int): out[i + 1] = "T"
        if out[i] == b"pending" and isinstance(out[i + 1], list):
            rows = []
            for row in out[i + 1]:
                row = list(row)
                if len(row) == 4 and isinstance(row[2], int): row[2] = "T"  # a group's PEL
                elif len(row) == 3 and isinstance(row[1], int): row[1] = "T"  # a consumer's
                rows.append(row)
            out[i + 1] = rows
    return out
def mask_pending(rep):  # XPENDING's extended form: [id, consumer, idle, deliveries] rows
    if rep[0] != "ok" or not isinstance(rep[1], list): return rep
    return ("ok", [[row[0], row[1], "T" if isinstance(row[2], int) else row[2], row[3]] for row in rep[1]])
IDRE = re.compile(rb"^[0-9]+-[0-9]+$")
def call(r, a):
    name = a[0].upper()
    if name == "DUMPRESTORE":  # DUMP on this server, RESTORE there: only the RESTORE's reply compared
        d = run(r, ["DUMP", a[1]])
        if d[0] != "ok" or d[1] is None: return d
        return run(r, ["RESTORE", a[2], "0", d[1]] + a[3:])
    rep = run(r, a)
    if name == "XADD" and a[1] == "auto":  # `*`: the shape only
        if rep[0] == "ok" and isinstance(rep[1], bytes): return ("ok", "ID" if IDRE.match(rep[1]) else rep[1])
        return rep
    if name == "XPENDING" and len(a) > 3: return mask_pending(rep)
    if name == "XINFO" and rep[0] == "ok": return ("ok", mask(rep[1]))
    return rep
def note(a, rep):  # the IDs added, for later commands
    if a[0] == "XADD" and a[1] != "auto" and rep[0] == "ok" and isinstance(rep[1], bytes):
        ids = added.setdefault(a[1], []); ids.append(rep[1].decode())
        if len(ids) > 400: del ids[:200]
def short(a): return [s if len(s) <= 24 else s[:12] + "..(%d)" % len(s) for s in a[:12]]

diffs = 0
stats = {}  # with STATS=1 in the environment: per command, how many replies were ok / errors / empty
import os
for i in range(N):
    a = cmd()
    try: x, y = call(A, a), call(B, a)
    except (redis.ConnectionError, redis.TimeoutError) as e:
        print("CONNECTION LOST at call", i, short(a), repr(e)); diffs += 1; break
    note(a, y)
    if os.environ.get("STATS"):
        kind = "err" if y[0] == "err" else ("empty" if y[1] in (None, [], 0, [b"0-0", [], []]) else "ok")
        st = stats.setdefault(a[0].upper() + (" " + a[1].upper() if a[0].upper() in ("XGROUP", "XINFO") and len(a) > 1 else ""), {})
        st[kind] = st.get(kind, 0) + 1
    if x != y:
        diffs += 1
        if diffs <= 15: print("DIFF", i, short(a), "\n   augur:", str(x)[:300], "\n   redis:", str(y)[:300])
def state(r):
    out = {}
    for k in sorted(r.execute_command("KEYS", "*")):
        t = r.execute_command("TYPE", k)
        if t == b"stream" and k == b"auto":  # `*` IDs: the length and the fields only
            v = (r.execute_command("XLEN", k), [e[1] for e in r.execute_command("XRANGE", k, "-", "+")])
        elif t == b"stream":
            groups = r.execute_command("XINFO", "GROUPS", k)
            per = []
            for g in groups:
                name = dict(zip(g[0::2], g[1::2]))[b"name"]
                per.append((name, mask_pending(run(r, ["XPENDING", k, name, "-", "+", "1000000"])),
                            mask(r.execute_command("XINFO", "CONSUMERS", k, name))))
            v = (r.execute_command("XRANGE", k, "-", "+"), mask(r.execute_command("XINFO", "STREAM", k)), groups, per)
        elif t == b"list": v = r.execute_command("LRANGE", k, 0, -1)
        else: v = r.execute_command("GET", k)
        out[k] = (t, v)
    return out
sa, sb = state(A), state(B)
for k in sorted(set(sa) | set(sb)):
    if sa.get(k) != sb.get(k):
        diffs += 1
        print("STATE DIFF", k, "\n   augur:", str(sa.get(k))[:300], "\n   redis:", str(sb.get(k))[:300])
for name in sorted(stats): print("  %-24s %s" % (name, stats[name]))
if os.environ.get("STATS"): print("  final", {k.decode(): (len(v[1][0]), [(g[0].decode(), len(g[1][1])) for g in v[1][3]]) for k, v in sb.items() if v[0] == b"stream" and k != b"auto"})
print("calls", N, "diffs", diffs)
