"""DUMP / RESTORE and SORT of sorted sets, Augur against a redis-server 7.0.15.

    augur serve --port 7642 &  redis-server --port 7641 --save "" &
    python3 tests/compat/dump_zsets.py 7642 7641

1. Sorted sets of assorted scores (integers, fractions, inf, -0, whole numbers about 2^53
   and 2^62), members (integers, 64 / 65 / 5000 bytes) and sizes, built on each server
   under several zset-max-listpack-entries / -value: each one's DUMP is RESTOREd on both
   under several limits, and the two must agree on ZRANGE WITHSCORES and OBJECT
   ENCODING.
2. Hand-built payloads (RDB_TYPE_ZSET text scores, ZSET_ZIPLIST, ZSET_LISTPACK, ZSET_2;
   valid and corrupt), sealed with a valid checksum, RESTOREd on both with Redis's
   sanitize-dump-payload yes. Expected differences, printed and not counted: Redis takes
   a packed payload's order as it is (Augur sorts it), accepts a NaN score text in one,
   and reads a ZSET_2 score past the body into the trailer.
3. Random SORT / SORT_RO forms on sorted sets, replies, STOREd lists and encodings after
   each compared (ALPHA BY-pattern ties, whose order Redis leaves to its hash table, as
   sets, and not under LIMIT).

Prints the differences and one "... diffs N" line per part. Not run in CI (it needs both
servers). Leaves both servers' zset limits at their defaults.
"""
import random, struct, sys, redis
A = redis.Redis(port=int(sys.argv[1]))
R = redis.Redis(port=int(sys.argv[2]))
random.seed(7)

def cfg(c, entries=128, value=64):
    c.config_set("zset-max-listpack-entries", entries)
    c.config_set("zset-max-listpack-value", value)

def build(c, key, elems):
    c.delete(key)
    for i in range(0, len(elems), 500):
        c.zadd(key, dict(elems[i:i+500]))

def state(c, key):
    return (c.zrange(key, 0, -1, withscores=True, score_cast_func=bytes), c.object("encoding", key))

# ---- 1. cross-restore
scen = []
scen.append(("ints", [(b"a",1),(b"b",-2),(b"c",0),(b"d",300),(b"e",70000),(b"f",5000000000),(b"g",-9000000000)]))
scen.append(("fracs", [(b"a",1.5),(b"b",0.1),(b"c",1/3),(b"d",1e-300),(b"e",5e-324),(b"f",1e300),(b"g",-2.5e-7),(b"h",123456789.123)]))
scen.append(("infs", [(b"p",float("inf")),(b"m",float("-inf")),(b"z",-0.0),(b"x",1e20)]))
scen.append(("big", [(b"a",2.0**62),(b"b",-2.0**62),(b"c",2.0**62+2048),(b"d",2.0**53),(b"e",2.0**53+2),(b"f",2.0**63),(b"g",-2.0**63),(b"h",4503599627370495.0),(b"i",4503599627370496.0)]))
scen.append(("intmembers", [(b"10",1),(b"-3",2),(b"0",3),(b"007",4),(b"-0",5),(b"9223372036854775807",6),(b"9223372036854775808",7),(b"-9223372036854775808",8),(b"127",9),(b"128",10),(b"4095",11),(b"-4096",12),(b"4096",13),(b"32767",14),(b"8388607",15),(b"8388608",16),(b"2147483648",17),(b"",18)]))
scen.append(("long70", [(b"x"*70,1),(b"b",2)]))
scen.append(("long5000", [(b"y"*5000,1),(b"b",2)]))
scen.append(("n200", [(b"m%d"%i, random.choice([i, i/7.0, -i])) for i in range(200)]))
scen.append(("n3000", [(b"mem-%d-%s"%(i,b"z"*(i%90)), random.random()*1000-500) for i in range(3000)]))
scen.append(("n128", [(b"k%d"%i, i) for i in range(128)]))
scen.append(("n129", [(b"k%d"%i, i) for i in range(129)]))
scen.append(("len64", [(b"q"*64, 1), (b"r"*63, 2)]))
scen.append(("len65", [(b"q"*65, 1), (b"r"*63, 2)]))

configs = [(128, 64), (4, 64), (1000, 64), (128, 200), (128, 6000), (1, 1)]
diffs = checks = 0
for (be, bv) in configs:
    for (name, elems) in scen:
        for src_name, src in (("redis", R), ("augur", A)):
            cfg(src, be, bv)
            build(src, "src", elems)
            payload = src.dump("src")
            for (le, lv) in [(128, 64), (4, 64), (1000, 64), (128, 6000), (be, bv)]:
                got = {}
                for dn, dst in (("redis", R), ("augur", A)):
                    cfg(dst, le, lv)
                    dst.delete("dst")
                    try:
                        dst.restore("dst", 0, payload)
                        got[dn] = state(dst, "dst")
                    except redis.ResponseError as e:
                        got[dn] = ("ERR", str(e))
                checks += 1
                if got["redis"] != got["augur"]:
                    diffs += 1
                    print("DIFF", name, "dumped by", src_name, "under", (be, bv), "restored under", (le, lv))
                    for k, g in got.items():
                        print("  ", k, str(g)[:200])
for c in (R, A):
    cfg(c)
print("cross-restore: checks", checks, "diffs", diffs)

# ---- 2. hand-built payloads
def crc64(data):
    POLY=0x95ac9329ac4bc9b5
    t=[]
    for i in range(256):
        c=i
        for _ in range(8): c = (c>>1)^POLY if c&1 else c>>1
        t.append(c)
    crc=0
    for b in data: crc = t[(crc^b)&0xff] ^ (crc>>8)
    return crc
def seal(body):
    p = body + b"\x0a\x00"
    return p + struct.pack("<Q", crc64(p))
def rlen(n):
    if n < 64: return bytes([n])
    if n < 16384: return bytes([0x40|(n>>8), n&0xff])
    return b"\x80"+struct.pack(">I", n)
def rstr(s): return rlen(len(s)) + s
def t3(elems):
    b = b"\x03" + rlen(len(elems))
    for m, s in elems:
        b += rstr(m) + (bytes([s]) if isinstance(s, int) else bytes([len(s)]) + s)
    return b
def zl_entry(prevlen, e):
    pl = bytes([prevlen]) if prevlen < 254 else b"\xfe" + struct.pack("<I", prevlen)
    if isinstance(e, int):
        if 0 <= e <= 12: enc = bytes([0xF1+e])
        elif -128 <= e <= 127: enc = b"\xfe" + struct.pack("<b", e)
        elif -32768 <= e <= 32767: enc = b"\xc0" + struct.pack("<h", e)
        elif -2**31 <= e < 2**31: enc = b"\xd0" + struct.pack("<i", e)
        else: enc = b"\xe0" + struct.pack("<q", e)
    else:
        n = len(e)
        enc = (bytes([n]) if n < 64 else bytes([0x40|(n>>8), n&0xff])) + e
    return pl + enc
def ziplist(entries, bad_prev=False, tail_delta=0, count=None):
    body = b""; prev = 0; last = 10
    for i, e in enumerate(entries):
        ent = zl_entry(prev + (1 if bad_prev and i == 2 else 0), e)
        last = 10 + len(body)
        body += ent
        prev = len(ent)
    zl = struct.pack("<IIH", 11 + len(body), last + tail_delta, len(entries) if count is None else count) + body + b"\xff"
    return zl
def t12(entries, **kw): z = ziplist(entries, **kw); return b"\x0c" + rlen(len(z)) + z
def lp(entries, count=None):
    out = b""
    for e in entries:
        if isinstance(e, int):
            enc = b"\xf4" + struct.pack("<q", e)
        else:
            n = len(e); enc = (bytes([0x80|n]) if n < 64 else bytes([0xE0|(n>>8), n&0xff])) + e
        l = len(enc); out += enc + (bytes([l]) if l < 128 else bytes([l>>7, (l&127)|128]))
    return struct.pack("<IH", 7 + len(out), len(entries) if count is None else count) + out + b"\xff"
def t17(entries, **kw): z = lp(entries, **kw); return b"\x11" + rlen(len(z)) + z

cases = {
 "t3 basic": t3([(b"a", b"1.5"), (b"b", 254), (b"c", 255), (b"d", b"-3")]),
 "t3 nan": t3([(b"a", 253)]),
 "t3 empty text": t3([(b"a", b"")]),
 "t3 space": t3([(b"a", b" 2")]),
 "t3 trailing": t3([(b"a", b"2abc")]),
 "t3 nantext": t3([(b"a", b"nan")]),
 "t3 1e400": t3([(b"a", b"1e400")]),
 "t3 junk": t3([(b"a", b"x1")]),
 "t3 nul": t3([(b"a", b"\x002")]),
 "t3 pre nul": t3([(b"a", b"7\x00x")]),
 "t3 1ex": t3([(b"a", b"1ex")]),
 "t3 spaces": t3([(b"a", b"   ")]),
 "t12 space score": t12([b"a", b" 4.5zz"]),
 "t12 nan score": t12([b"a", b"-NaN"]),
 "t12 long score": t12([b"a", b"1"*200]),
 "t3 hex": t3([(b"a", b"0x10")]),
 "t3 dup": t3([(b"a", b"1"), (b"a", b"2")]),
 "t3 empty": t3([]),
 "t3 200": t3([(b"m%d" % i, b"%d" % (i % 17)) for i in range(200)]),
 "t3 long": t3([(b"L" * 100, b"1"), (b"b", b"2")]),
 "t12 basic": t12([b"a", 1, b"b", b"2.5", b"c", -300, b"d", 5000000000, b"e", 100000]),
 "t12 long": t12([b"L" * 100, 1, b"b", 2]),
 "t12 200": t12(sum([[b"m%d" % i, i] for i in range(200)], [])),
 "t12 badprev": t12([b"a", 1, b"b", 2], bad_prev=True),
 "t12 badtail": t12([b"a", 1, b"b", 2], tail_delta=-2),
 "t12 badcount": t12([b"a", 1, b"b", 2], count=3),
 "t12 unknown count": t12([b"a", 1, b"b", 2], count=65535),
 "t12 odd": t12([b"a", 1, b"b"]),
 "t12 dup": t12([b"a", 1, b"a", 2]),
 "t12 empty": t12([]),
 "t12 junk score": t12([b"a", b"abc"]),
 "t12 unsorted": t12([b"b", 5, b"a", 1]),
 "t17 basic": t17([b"a", 1, b"b", b"2.5", b"c", b"inf"]),
 "t17 badcount": t17([b"a", 1, b"b", 2], count=3),
 "t17 unknown count": t17([b"a", 1, b"b", 2], count=65535),
 "t17 odd": t17([b"a", 1, b"b"]),
 "t17 dup": t17([b"a", 1, b"a", 2]),
 "t17 200": t17(sum([[b"m%d" % i, i] for i in range(200)], [])),
 "t17 nan score": t17([b"a", b"nan"]),
 "t17 int member": t17([5, 1, b"b", 2]),
 "t5 nan": b"\x05\x01\x01a" + struct.pack("<d", float("nan")),
 "t5 dup": b"\x05\x02\x01a" + struct.pack("<d", 1) + b"\x01a" + struct.pack("<d", 2),
 "t5 short": b"\x05\x02\x01a" + struct.pack("<d", 1) + b"\x01b" + b"\x00\x00",
}
EXPECTED = {"t12 basic", "t12 unsorted", "t12 nan score", "t17 nan score", "t5 short"}
before = R.config_get("sanitize-dump-payload")["sanitize-dump-payload"]
R.config_set("sanitize-dump-payload", "yes")
diffs = 0
for name, body in cases.items():
    res = {}
    for n, c in (("redis", R), ("augur", A)):
        c.delete("k")
        try:
            c.restore("k", 0, seal(body))
            res[n] = state(c, "k")
        except redis.ResponseError as e:
            res[n] = ("ERR", str(e))
    if res["redis"] != res["augur"]:
        diffs += name not in EXPECTED
        print("expected difference" if name in EXPECTED else "DIFF", name, str(res)[:300])
R.config_set("sanitize-dump-payload", before)
print("payloads:", len(cases), "diffs", diffs)

# ---- 3. SORT
def setup(c):
    rng = random.Random(11)
    c.flushall()
    c.config_set("zset-max-listpack-entries", 128)
    c.zadd("z", {"a":1,"b":5,"c":2,"d":10,"e":3})
    c.zadd("zn", {"10":3,"2":1,"-5":2,"3.5":0,"1e1":4})
    c.zadd("zinf", {"a":-100,"b":200,"c":-300,"d":1000000,"max":float("inf"),"min":float("-inf")})
    big = {("m%d" % i): rng.randint(-50, 50) for i in range(300)}
    c.zadd("zbig", big)
    for i in range(300):
        c.set("w_m%d" % i, rng.randint(0, 20))
        c.hset("h_m%d" % i, "f", "v%d" % (i % 7))
    for k in "abcde":
        c.set("w_" + k, rng.randint(0, 3))
        c.set("g_" + k, "G" + k)
    c.zadd("one", {"x": 1})
def run(c, cmd, tie):
    c.delete("dst")
    try:
        r = c.execute_command(*cmd)
    except redis.ResponseError as e:
        r = "ERR " + str(e)
    if tie and isinstance(r, list):
        r = sorted(map(str, r))
    if "STORE" in cmd:
        stored = c.lrange("dst", 0, -1)
        r = (r, sorted(stored) if tie else stored, c.type("dst"))
    enc = {k: c.object("encoding", k) for k in ("z", "zn", "zinf", "zbig", "one")}
    return r, enc
cmds = []
for key in ["z", "zn", "zinf", "zbig", "one"]:
    for by in [None, "nosort", "w_*", "h_*->f", "missing_*"]:
        for order in [None, "ASC", "DESC"]:
            for alpha in [False, True]:
                for limit in [None, (0, 1), (0, 2), (1, 3), (5, 10), (-10, 100), (2, -1), (0, 0), (4, 1), (299, 5), (3, -5)]:
                    for get in [None, ["#"], ["g_*", "#"]]:
                        for store in [False, True]:
                            c = ["SORT", key]
                            if by: c += ["BY", by]
                            if order: c.append(order)
                            if alpha: c.append("ALPHA")
                            if limit: c += ["LIMIT", str(limit[0]), str(limit[1])]
                            if get:
                                for g in get: c += ["GET", g]
                            if store: c += ["STORE", "dst"]
                            cmds.append(c)
random.shuffle(cmds)
cmds = cmds[:3000]
cmds += [["SORT_RO"] + c[1:] for c in cmds[:300] if "STORE" not in c]
fails = 0
for i, c in enumerate(cmds):
    if i % 100 == 0:
        setup(R); setup(A)
    tie = "ALPHA" in c and "BY" in c and c[c.index("BY") + 1] != "nosort"
    if tie and "LIMIT" in c:
        continue
    r, a = run(R, c, tie), run(A, c, tie)
    if r != a:
        fails += 1
        if fails < 15: print("DIFF", c, "\n  redis", str(r)[:300], "\n  augur", str(a)[:300])
print("sort: compared", len(cmds), "diffs", fails)
for c in (R, A):
    c.flushall()
    cfg(c)
