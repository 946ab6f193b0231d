"""Drives a running augur with redis-py, redis-cli, raw inline commands and
redis-benchmark; compares replies with what Redis 7 answers.

Usage: compat.py PORT [SERVER_PID]   (run.sh starts the server and calls this)
"""

import os
import shutil
import socket
import subprocess
import sys
import time

import redis

PORT = int(sys.argv[1])
SERVER_PID = int(sys.argv[2]) if len(sys.argv) > 2 else None
passed = 0
failed = 0


def check(name, got, want):
    global passed, failed
    if got == want:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: got {got!r}, want {want!r}")


def error_of(fn):
    try:
        fn()
    except redis.RedisError as e:
        return str(e)
    return None


def cli(*args, stdin=None):
    r = subprocess.run(["redis-cli", "-p", str(PORT), *args], input=stdin,
                       capture_output=True, text=True, timeout=20)
    return r.stdout.rstrip("\n")


def raw(data, timeout=1.0):
    """Sends raw bytes, returns everything received until close or timeout."""
    s = socket.create_connection(("127.0.0.1", PORT))
    s.settimeout(timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return out, True
            out += d
    except socket.timeout:
        return out, False
    finally:
        s.close()


def redis_py():
    r = redis.Redis(port=PORT, decode_responses=True)
    r.flushall()
    check("ping", r.ping(), True)
    check("set", r.set("k", "v"), True)
    check("get", r.get("k"), "v")
    check("get missing", r.get("missing"), None)
    check("set nx", r.set("k", "x", nx=True), None)
    check("set get", r.set("k", "w", get=True), "v")
    check("incr", r.incr("n"), 1)
    check("incrby", r.incrby("n", 10), 11)
    check("decr", r.decr("n"), 10)
    check("incrbyfloat", r.incrbyfloat("f", 10.5), 10.5)
    check("incrbyfloat again", r.incrbyfloat("f", 0.1), 10.6)
    check("append", r.append("s", "hello"), 5)
    check("getrange", r.getrange("s", 1, 3), "ell")
    check("setrange", r.setrange("s", 5, " world"), 11)
    check("strlen", r.strlen("s"), 11)
    check("mset", r.mset({"a": "1", "b": "2"}), True)
    check("mget", r.mget("a", "b", "c"), ["1", "2", None])
    check("msetnx", r.msetnx({"a": "9", "z": "0"}), False)
    check("exists", r.exists("a", "b", "c"), 2)
    check("delete", r.delete("a", "b", "c"), 2)
    check("expire", r.expire("k", 100), True)
    check("ttl", r.ttl("k"), 100)
    check("pexpire gt", r.pexpire("k", 50_000, gt=True), False)
    check("persist", r.persist("k"), True)
    check("ttl persistent", r.ttl("k"), -1)
    check("ttl missing", r.ttl("missing"), -2)
    r.set("short", "v", px=100)
    time.sleep(0.25)
    check("expired", r.get("short"), None)
    check("getex", r.getex("k", ex=50), "w")
    check("getex ttl", r.ttl("k"), 50)
    check("getdel", r.getdel("k"), "w")
    check("type", r.type("s"), "string")
    check("type none", r.type("k"), "none")
    check("dbsize", r.dbsize(), 3)
    check("keys", sorted(r.keys("*")), ["f", "n", "s"])
    check("scan_iter", sorted(r.scan_iter(match="*", count=2)), ["f", "n", "s"])
    check("randomkey", r.randomkey() in ("f", "n", "s"), True)
    check("select isolation", redis.Redis(port=PORT, db=5, decode_responses=True).get("s"), None)
    pipe = r.pipeline(transaction=False)
    for i in range(100):
        pipe.set(f"p{i}", i)
    for i in range(100):
        pipe.get(f"p{i}")
    res = pipe.execute()
    check("pipeline", res[100:], [str(i) for i in range(100)])
    check("client setname", r.client_setname("compat"), True)
    check("client getname", r.client_getname(), "compat")
    check("client id", isinstance(r.client_id(), int), True)
    check("client list", any(c.get("name") == "compat" for c in r.client_list()), True)
    check("config get", r.config_get("maxmemory-policy"), {"maxmemory-policy": "noeviction"})
    check("config set", r.config_set("maxmemory", "100mb"), True)
    check("config get units", r.config_get("maxmemory"), {"maxmemory": str(100 * 1024 * 1024)})
    r.config_set("maxmemory", "0")
    info = r.info()
    check("info redis_version", "redis_version" in info, True)
    check("info keyspace", info.get("db0", {}).get("keys"), 103)
    check("info stats", "keyspace_hits" in r.info("stats"), True)
    check("memory usage", r.memory_usage("s") > 0, True)
    stats = r.memory_stats()
    check("memory stats keys.count", stats.get("keys.count"), 103)
    check("memory stats total", stats.get("total.allocated") == r.info("memory")["used_memory"], True)
    r.config_set("maxmemory-policy", "allkeys-lfu")
    check("object freq", r.object("freq", "s"), 5)
    r.config_set("maxmemory-policy", "noeviction")
    check("object freq refused", "LFU maxmemory policy is not selected" in (error_of(lambda: r.object("freq", "s")) or ""), True)
    check("object encoding", r.object("encoding", "n"), "int")
    check("time", len(r.time()), 2)
    check("echo", r.echo("hi"), "hi")
    check("command count", r.command_count() > 40, True)
    check("err wrong args", error_of(lambda: r.execute_command("GET")),
          "wrong number of arguments for 'get' command")
    check("err not int", error_of(lambda: r.incr("s")), "value is not an integer or out of range")
    check("err syntax", error_of(lambda: r.execute_command("SET", "k", "v", "EX")), "syntax error")
    check("err unknown", error_of(lambda: r.execute_command("NOSUCHCMD", "l", "a")),
          "unknown command 'NOSUCHCMD', with args beginning with: 'l' 'a' ")
    check("err select", error_of(lambda: r.execute_command("SELECT", "99")), "DB index is out of range")
    # RESP3
    r3 = redis.Redis(port=PORT, protocol=3, decode_responses=True)
    check("resp3 get", r3.get("s"), "hello world")
    check("resp3 missing", r3.get("missing"), None)
    check("resp3 config get", r3.config_get("maxmemory-samples"), {"maxmemory-samples": "5"})
    check("resp3 incrbyfloat", r3.incrbyfloat("f", 1), 11.6)
    # AUTH
    r.config_set("requirepass", "pw")
    noauth = redis.Redis(port=PORT)
    # redis-py may open with HELLO 3 (Redis then says "HELLO must be called with the
    # client already authenticated...") or with RESP2 (NOAUTH Authentication required.).
    msg = error_of(lambda: noauth.get("s")) or ""
    check("noauth", "Authentication required" in msg or "already authenticated" in msg, True)
    check("auth", redis.Redis(port=PORT, password="pw", decode_responses=True).get("s"), "hello world")
    r.config_set("requirepass", "")
    r.flushall()


def messages(p, n, timeout=3.0, get=None):
    """The next n messages of a redis-py PubSub (confirmations included)."""
    get = get or p.get_message
    out, deadline = [], time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = get(timeout=0.1)
        if m is not None:
            out.append(m)
    return out


def pubsub():
    """Pub/Sub through redis-py's PubSub object, over RESP2 and RESP3 (push messages)."""
    for proto in (2, 3):
        tag = f"resp{proto}"
        r = redis.Redis(port=PORT, decode_responses=True, protocol=proto)
        p = r.pubsub()
        p.subscribe("inval")
        p.psubscribe("user:*")
        check(f"{tag} confirmations", messages(p, 2), [
            {"type": "subscribe", "pattern": None, "channel": "inval", "data": 1},
            {"type": "psubscribe", "pattern": None, "channel": "user:*", "data": 2}])
        check(f"{tag} publish", r.publish("inval", "k1"), 1)
        check(f"{tag} publish pattern", r.publish("user:42", "x"), 1)
        check(f"{tag} publish nobody", r.publish("other", "x"), 0)
        check(f"{tag} messages", messages(p, 2), [
            {"type": "message", "pattern": None, "channel": "inval", "data": "k1"},
            {"type": "pmessage", "pattern": "user:*", "channel": "user:42", "data": "x"}])
        check(f"{tag} pubsub channels", r.pubsub_channels(), ["inval"])
        check(f"{tag} pubsub numsub", r.pubsub_numsub("inval", "other"), [("inval", 1), ("other", 0)])
        check(f"{tag} pubsub numpat", r.pubsub_numpat(), 1)
        p.ping()
        # RESP2 answers ["pong", ""]; RESP3 a plain +PONG, which redis-py 5+ turns into
        # this odd dict (the same with Redis 7.0).
        check(f"{tag} ping while subscribed", messages(p, 1), [
            {"type": "pong", "pattern": None, "channel": None, "data": ""} if proto == 2 else
            {"type": "P", "pattern": None, "channel": "O", "data": "N"}])
        p.ssubscribe("shard1")
        check(f"{tag} ssubscribe", messages(p, 1, get=p.get_sharded_message),
              [{"type": "ssubscribe", "pattern": None, "channel": "shard1", "data": 1}])
        check(f"{tag} spublish", r.spublish("shard1", "s"), 1)
        check(f"{tag} smessage", messages(p, 1, get=p.get_sharded_message),
              [{"type": "smessage", "pattern": None, "channel": "shard1", "data": "s"}])
        # A subscriber thread: messages arrive while it is idle.
        seen = []
        t = r.pubsub(ignore_subscribe_messages=True)
        t.subscribe(**{"bg": lambda m: seen.append(m["data"])})
        worker = t.run_in_thread(sleep_time=0.01, daemon=True)
        for _ in range(50):
            if r.pubsub_numsub("bg")[0][1] == 1:
                break
            time.sleep(0.02)
        for i in range(100):
            r.publish("bg", str(i))
        for _ in range(150):
            if len(seen) == 100:
                break
            time.sleep(0.02)
        worker.stop()
        worker.join(timeout=2)
        t.close()
        check(f"{tag} thread received in order", seen, [str(i) for i in range(100)])
        p.unsubscribe()
        p.punsubscribe()
        p.sunsubscribe()
        kinds = sorted(m["type"] for m in messages(p, 2) + messages(p, 1, get=p.get_sharded_message))
        check(f"{tag} unsubscribed", kinds, ["punsubscribe", "sunsubscribe", "unsubscribe"])
        p.close()
        for _ in range(50):
            if r.pubsub_numsub("inval") == [("inval", 0)]:
                break
            time.sleep(0.02)
        check(f"{tag} gone after close", (r.pubsub_numsub("inval"), r.pubsub_numpat()), ([("inval", 0)], 0))
    # RESP2 subscribed context: other commands are refused with Redis's text.
    out, _ = raw(b"SUBSCRIBE c\r\nGET k\r\nPING\r\n", timeout=0.5)
    check("resp2 context", out, b"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
          b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"
          b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
    if os.environ.get("COMPAT_REAL_REDIS"):
        return  # the rest is Augur's tenancy
    # Channels are per tenant: a tenant's PUBLISH reaches only its own subscribers.
    admin = redis.Redis(port=PORT, decode_responses=True)
    admin.execute_command("ACL", "SETUSER", "ps1", "on", ">pw", "~*", "&*", "+@all")
    admin.execute_command("ACL", "SETUSER", "ps2", "on", ">pw", "~*", "&*", "+@all")
    t1 = redis.Redis(port=PORT, username="ps1", password="pw", decode_responses=True)
    t2 = redis.Redis(port=PORT, username="ps2", password="pw", decode_responses=True)
    p1 = t1.pubsub(ignore_subscribe_messages=True)
    p1.subscribe("inval")
    messages(p1, 1, timeout=0.3)
    check("tenant publish reaches own", t1.publish("inval", "a"), 1)
    check("tenant publish isolated", t2.publish("inval", "b"), 0)
    check("default tenant isolated", admin.publish("inval", "c"), 0)
    check("tenant channels isolated", (t1.pubsub_channels(), t2.pubsub_channels()), (["inval"], []))
    check("tenant message", [m["data"] for m in messages(p1, 2, timeout=0.5)], ["a"])
    p1.close()
    admin.acl_deluser("ps1", "ps2")


def keyspace_and_bits():
    """RENAME/COPY/MOVE, EXPIRETIME, the bit commands and LCS through redis-py's own
    wrappers (they build the arguments the way applications send them)."""
    r = redis.Redis(port=PORT, decode_responses=True)
    r.flushall()
    r.set("src", "hello", ex=100)
    check("rename", r.rename("src", "dst"), True)
    check("rename ttl", r.ttl("dst"), 100)
    check("rename missing", error_of(lambda: r.rename("src", "x")), "no such key")
    r.set("other", "1")
    check("renamenx refused", r.renamenx("dst", "other"), False)
    check("copy", r.copy("dst", "cp", destination_db=3), True)
    check("copy no replace", r.copy("dst", "other"), False)
    check("copy replace", r.copy("dst", "other", replace=True), True)
    check("copy value", r.get("other"), "hello")
    check("move", r.move("other", 2), True)
    check("move gone", r.exists("other"), 0)
    db2 = redis.Redis(port=PORT, db=2, decode_responses=True)
    check("move arrived", (db2.get("other"), db2.ttl("other")), ("hello", 100))
    check("expiretime", r.expiretime("dst") - int(time.time()) in range(98, 102), True)
    check("pexpiretime missing", r.execute_command("PEXPIRETIME", "nokey"), -2)
    check("setbit", r.setbit("bits", 7, 1), 0)
    check("getbit", r.getbit("bits", 7), 1)
    check("bitcount", r.bitcount("bits"), 1)
    r.set("fb", "foobar")
    check("bitcount bit range", r.bitcount("fb", 5, 30, mode="bit"), 17)
    check("bitpos", r.bitpos("bits", 1), 7)
    check("bitop", r.bitop("OR", "or", "bits", "fb"), 6)
    bf = r.bitfield("field")
    bf.set("i8", 0, -100).get("i8", 0).incrby("u4", "#2", 20)
    check("bitfield", bf.execute(), [0, -100, 4])
    check("bitfield overflow fail", r.bitfield("field").overflow("FAIL").incrby("u4", "#2", 20).execute(), [None])
    check("bitfield_ro", r.bitfield_ro("field", "i8", 0), [-100])
    check("object encoding raw", r.object("encoding", "bits"), "raw")
    r.set("a", "ohmytext")
    r.set("b", "mynewtext")
    check("lcs", r.lcs("a", "b"), "mytext")
    check("lcs len", r.lcs("a", "b", len=True), 6)
    # RESP2 flattens the map, as Redis does; RESP3 keeps it.
    idx = r.lcs("a", "b", idx=True, minmatchlen=4, withmatchlen=True)
    check("lcs idx", idx, ["matches", [[[4, 7], [5, 8], 4]], "len", 6])
    r3 = redis.Redis(port=PORT, protocol=3, decode_responses=True)
    idx = r3.lcs("a", "b", idx=True, minmatchlen=4, withmatchlen=True)
    check("lcs idx resp3", idx, {"matches": [[[4, 7], [5, 8], 4]], "len": 6})
    r.set("d", "dumped", ex=100)
    payload = r.dump("d")
    check("restore", r.restore("d2", 0, payload), "OK")
    check("restore value", r.get("d2"), "dumped")
    check("restore busykey", "BUSYKEY" in (error_of(lambda: r.restore("d2", 0, payload)) or ""), True)
    r.flushall()
    for i in range(1000):
        r.set(f"scan:{i}", i)
    pages = []
    cursor = 0
    while True:
        cursor, keys = r.scan(cursor, match="scan:*", count=10)
        pages.append(len(keys))
        if cursor == 0:
            break
    check("scan pages", (len(pages) <= 105, min(pages) > 0), (True, True))
    r.flushall()
    db2.flushall()


def transactions_and_django():
    """redis-py's default pipeline() (MULTI/EXEC), WATCH with a retry, and Django's
    built-in RedisCache (set_many uses a MULTI/EXEC pipeline), as applications use them."""
    r = redis.Redis(port=PORT, decode_responses=True)
    r.delete("tx:a", "tx:b")
    with r.pipeline() as p:  # transaction=True is redis-py's default
        p.set("tx:a", "1").incr("tx:a").set("tx:b", "x").get("tx:a")
        check("pipeline() transaction replies", p.execute(), [True, 2, True, "2"])
    # Optimistic locking as redis-py documents it: WATCH, read, MULTI, write, EXEC.
    other = redis.Redis(port=PORT, decode_responses=True)

    def bump(pipe):
        v = int(pipe.get("tx:a"))
        if not getattr(bump, "raced", False):
            bump.raced = True
            other.set("tx:a", "100")  # a concurrent write: this attempt must fail
        pipe.multi()
        pipe.set("tx:a", v + 1)

    r.transaction(bump, "tx:a")
    check("WATCH retry sees the concurrent write", r.get("tx:a"), "101")
    check("EXEC without MULTI", error_of(lambda: r.execute_command("EXEC")),
          "EXEC without MULTI")
    try:
        import django
        from django.conf import settings
    except ImportError:
        check("django installed", False, True)
        return
    if not settings.configured:
        settings.configure(CACHES={"default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{PORT}/2"}})
        django.setup()
    from django.core.cache import cache
    cache.clear()
    check("django set_many", cache.set_many({"a": 1, "b": [1, 2], "c": "text"}, timeout=30), [])
    check("django get_many", cache.get_many(["a", "b", "c", "zz"]),
          {"a": 1, "b": [1, 2], "c": "text"})
    check("django incr", cache.incr("a", 5), 6)
    check("django touch", cache.touch("c", 100), True)
    ttl = redis.Redis(port=PORT, db=2).ttl(":1:c")  # Django's key: prefix, version, key
    check("django ttl after touch", 90 <= ttl <= 100, True)
    check("django add existing", cache.add("a", 99), False)
    cache.delete_many(["a", "b"])
    check("django delete_many", cache.get_many(["a", "b", "c"]), {"c": "text"})
    check("django get_or_set", cache.get_or_set("d", lambda: "made", 10), "made")


def scripting():
    """Lua scripts as applications send them: redis-py's register_script (EVALSHA, then
    EVAL on NOSCRIPT), a Redlock-style lock release, cjson, errors."""
    r = redis.Redis(port=PORT, decode_responses=True)
    r.script_flush()
    release = r.register_script(
        'if redis.call("get",KEYS[1]) == ARGV[1] then '
        'return redis.call("del",KEYS[1]) else return 0 end')
    check("lock acquire", r.set("lock:res", "token-1", nx=True, px=30000), True)
    check("lock release wrong token", release(keys=["lock:res"], args=["token-2"]), 0)
    check("lock still held", r.get("lock:res"), "token-1")
    check("lock release", release(keys=["lock:res"], args=["token-1"]), 1)
    check("lock released", r.get("lock:res"), None)
    check("script cached", r.script_exists(release.sha), [True])
    check("lock release again", release(keys=["lock:res"], args=["token-1"]), 0)
    check("eval cjson", r.eval("return cjson.encode(cjson.decode(ARGV[1]))", 0, '{"a":[1,2]}'),
          '{"a":[1,2]}')
    check("eval keys argv", r.eval("return {KEYS[1], ARGV[1], #KEYS, #ARGV}", 1, "k", "a"),
          ["k", "a", 1, 1])
    check("eval_ro", r.eval_ro("return redis.call('get', KEYS[1])", 1, "lock:res"), None)
    check("eval error", "Script attempted to access nonexistent global variable 'x'"
          in (error_of(lambda: r.eval("return x", 0)) or ""), True)
    check("evalsha noscript", error_of(lambda: r.evalsha("0" * 40, 0)),
          "No matching script. Please use EVAL.")
    check("script load", r.script_load("return 1"), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
    check("script flush", r.script_flush(), True)
    check("script exists after flush", r.script_exists(release.sha), [False])
    # The registered script reloads itself after a flush.
    r.set("lock:res", "t")
    check("lock release after flush", release(keys=["lock:res"], args=["t"]), 1)
    r.flushall()


def tenants():
    """Tenants are ACL users: redis-py's username=/password= and redis-cli --user."""
    admin = redis.Redis(port=PORT, decode_responses=True)
    check("acl setuser", admin.acl_setuser("shop", enabled=True, passwords=["+s3cret"], keys=["*"], channels=["*"], commands=["+@all", "-@admin"]), True)
    check("acl setuser 2", admin.execute_command("ACL", "SETUSER", "blog", "on", ">pw", "~*", "&*", "+@all", "-@admin"), "OK")
    shop = redis.Redis(port=PORT, username="shop", password="s3cret", decode_responses=True)
    blog = redis.Redis(port=PORT, username="blog", password="pw", decode_responses=True)
    check("whoami", shop.acl_whoami(), "shop")
    shop.set("cart:1", "3 items")
    blog.set("cart:1", "a post")
    check("tenant sees its own value", shop.get("cart:1"), "3 items")
    check("other tenant's value", blog.get("cart:1"), "a post")
    check("default tenant empty", admin.get("cart:1"), None)
    check("keys isolated", sorted(shop.keys("*")), ["cart:1"])
    check("dbsize isolated", admin.dbsize(), 0)
    p = shop.pipeline(transaction=False)
    p.set("a", 1).incr("a").get("a")
    check("pipeline as a tenant", p.execute(), [True, 2, "2"])
    check("wrong password", error_of(lambda: redis.Redis(port=PORT, username="shop", password="no").ping()),
          "invalid username-password pair or user is disabled.")
    check("tenant set", admin.execute_command("TENANT", "SET", "shop", "maxmemory", "10mb", "miss-penalty", "2ms"), "OK")
    got = admin.execute_command("TENANT", "GET", "shop", "maxmemory")
    check("tenant get", got if isinstance(got, dict) else dict(zip(got[::2], got[1::2])), {"maxmemory": str(10 << 20)})
    info = admin.execute_command("TENANT", "INFO", "shop")
    info = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
    check("tenant info keys", info["keys"], "2")
    check("tenant noperm", "has no permissions" in (error_of(lambda: shop.execute_command("TENANT", "SET", "blog", "maxmemory", "1mb")) or ""), True)
    r = subprocess.run(["redis-cli", "-p", str(PORT), "--user", "blog", "--pass", "pw", "--no-auth-warning", "GET", "cart:1"],
                       capture_output=True, text=True, timeout=20)
    check("redis-cli --user", r.stdout.strip(), "a post")
    check("acl deluser", admin.acl_deluser("shop", "blog"), 2)
    check("deleted tenant cannot log in", error_of(lambda: redis.Redis(port=PORT, username="shop", password="s3cret").ping()),
          "invalid username-password pair or user is disabled.")


def hashes_and_sets():
    r = redis.Redis(port=PORT, decode_responses=True)
    rb = redis.Redis(port=PORT)  # bytes, as binary-payload clients use it
    r.flushall()
    # .NET's IDistributedCache (Microsoft.Extensions.Caching.StackExchangeRedis) keeps an
    # entry as a hash of absexp / sldexp / data, with EXPIRE, and reads it with HMGET.
    key = "dotnet:session:42"
    payload = bytes(range(256)) * 4
    check("dotnet hset", rb.hset(key, mapping={"absexp": "638000000000000000", "sldexp": "-1", "data": payload}), 3)
    check("dotnet expire", rb.expire(key, 1200), True)
    check("dotnet hmget", rb.hmget(key, "absexp", "sldexp", "data"), [b"638000000000000000", b"-1", payload])
    check("dotnet hgetall", rb.hgetall(key)[b"data"], payload)
    check("dotnet refresh", rb.expire(key, 600), True)
    check("dotnet ttl", 590 <= r.ttl(key) <= 600, True)
    check("dotnet type", r.type(key), "hash")
    check("dotnet encoding", r.object("encoding", key), "hashtable")  # data > 64 bytes
    check("dotnet remove", r.delete(key), 1)
    # Laravel / Symfony tag caches: a set per tag naming the tagged keys; flushing a tag
    # deletes its members, then the set.
    for i in range(5):
        r.set(f"cache:item:{i}", f"value {i}", ex=600)
        r.sadd("tag:products:entries", f"cache:item:{i}")
    r.sadd("tag:featured:entries", "cache:item:1", "cache:item:3")
    check("tag scard", r.scard("tag:products:entries"), 5)
    check("tag sinter", sorted(r.sinter("tag:products:entries", "tag:featured:entries")), ["cache:item:1", "cache:item:3"])
    members = r.smembers("tag:featured:entries")
    p = r.pipeline(transaction=False)
    for m in members:
        p.delete(m)
    p.delete("tag:featured:entries")
    check("tag flush", p.execute(), [1, 1, 1])
    check("tag members left", sorted(m for m in r.smembers("tag:products:entries") if r.exists(m)),
          ["cache:item:0", "cache:item:2", "cache:item:4"])
    check("tag sscan_iter", len(list(r.sscan_iter("tag:products:entries", count=2))), 5)
    check("tag srem", r.srem("tag:products:entries", "cache:item:0", "nope"), 1)
    check("tag smismember", r.smismember("tag:products:entries", ["cache:item:2", "x"]), [1, 0])
    # The rest of the hash API through redis-py.
    check("hincrby", r.hincrby("counters", "views", 3), 3)
    check("hincrbyfloat", r.hincrbyfloat("counters", "score", 1.25), 1.25)
    check("hsetnx", r.hsetnx("counters", "views", 9), False)
    check("hkeys", sorted(r.hkeys("counters")), ["score", "views"])
    check("hlen", r.hlen("counters"), 2)
    check("hexists", r.hexists("counters", "nope"), False)
    check("hstrlen", r.hstrlen("counters", "score"), 4)
    check("hdel", r.hdel("counters", "views", "score"), 2)
    check("empty hash deleted", r.exists("counters"), 0)
    r.hset("user:1", mapping={f"f{i}": i for i in range(200)})
    check("hscan_iter", len(dict(r.hscan_iter("user:1", count=20))), 200)
    check("hrandfield", r.hrandfield("user:1", 5, withvalues=True).__len__(), 10)
    # WRONGTYPE as redis-py raises it, and GET/MGET on a hash.
    check("wrongtype", error_of(lambda: r.get("user:1")), "WRONGTYPE Operation against a key holding the wrong kind of value")
    check("mget hash nil", r.mget("user:1", "tag:products:entries"), [None, None])
    check("sadd ints encoding", (r.sadd("ids", *range(10)), r.object("encoding", "ids")), (10, "intset"))
    check("spop count", len(r.spop("ids", 4)), 4)
    check("sunionstore", r.sunionstore("all", "ids", "tag:products:entries"), 10)
    check("memory usage", r.memory_usage("user:1") > 2000, True)
    r.flushall()


def redis_cli():
    check("cli ping", cli("PING"), "PONG")
    check("cli set", cli("SET", "ck", "hello world"), "OK")
    check("cli get", cli("GET", "ck"), "hello world")
    check("cli get missing", cli("GET", "nokey"), "")
    check("cli incr", cli("INCR", "cn"), "1")
    check("cli mget", cli("MGET", "ck", "nokey", "cn"), "hello world\n\n1")
    check("cli ttl", cli("TTL", "ck"), "-1")
    check("cli error", cli("INCR", "ck"), "ERR value is not an integer or out of range")
    check("cli unknown", cli("NOSUCHCMD", "l", "a", "b"),
          "ERR unknown command 'NOSUCHCMD', with args beginning with: 'l' 'a' 'b' ")
    check("cli dbsize", cli("DBSIZE"), "2")
    check("cli stdin", cli(stdin="SET x 1\nGET x\n"), "OK\n1")
    check("cli hello 3", cli("-3", "HELLO", "3").splitlines()[:2], ["server redis", "version 7.0.15"])
    check("cli info", "redis_version:" in cli("INFO", "server"), True)
    check("cli config get save", cli("CONFIG", "GET", "save"), "save")
    check("cli config get appendonly", cli("CONFIG", "GET", "appendonly"), "appendonly\nno")
    check("cli flushall", cli("FLUSHALL"), "OK")


def inline():
    out, _ = raw(b"PING\r\n")
    check("inline ping", out, b"+PONG\r\n")
    out, _ = raw(b'SET il "a b"\r\nGET il\r\nECHO \'x y\'\r\nDEL il\n')
    check("inline quoted", out, b"+OK\r\n$3\r\na b\r\n$3\r\nx y\r\n:1\r\n")
    out, closed = raw(b'SET il "unbalanced\r\n')
    check("inline unbalanced", (out, closed), (b"-ERR Protocol error: unbalanced quotes in request\r\n", True))
    out, closed = raw(b"*1\r\n$-3\r\n")
    check("resp bad bulk", (out, closed), (b"-ERR Protocol error: invalid bulk length\r\n", True))
    out, closed = raw(b"*2\r\n$3\r\nGET\r\n:1\r\n")
    check("resp expected $", (out, closed), (b"-ERR Protocol error: expected '$', got ':'\r\n", True))
    if shutil.which("nc"):
        r = subprocess.run(f"printf 'PING\\r\\n' | nc -q1 127.0.0.1 {PORT} || printf 'PING\\r\\n' | nc -w1 127.0.0.1 {PORT}",
                           shell=True, capture_output=True, timeout=10)
        check("nc inline ping", r.stdout[:7], b"+PONG\r\n")


def benchmark():
    r = subprocess.run(["redis-benchmark", "-p", str(PORT), "-t", "set,get", "-n", "20000", "-q"],
                       capture_output=True, text=True, timeout=120)
    lines = [l for l in r.stdout.replace("\r", "\n").split("\n") if "requests per second" in l]
    check("benchmark exit", r.returncode, 0)
    check("benchmark set", any(l.startswith("SET:") for l in lines), True)
    check("benchmark get", any(l.startswith("GET:") for l in lines), True)
    check("benchmark errors", "ERR" in r.stdout + r.stderr, False)


def shutdown():
    if SERVER_PID is None:
        return
    cli("SHUTDOWN", "NOSAVE")
    for _ in range(100):
        try:
            os.kill(SERVER_PID, 0)
        except OSError:
            break
        try:
            if os.waitpid(SERVER_PID, os.WNOHANG)[0]:
                break
        except ChildProcessError:
            pass
        time.sleep(0.05)
    else:
        check("shutdown stops the server", "running", "stopped")
        return
    check("shutdown stops the server", "stopped", "stopped")


for section in (redis_py, transactions_and_django, keyspace_and_bits, tenants, hashes_and_sets, pubsub, scripting, redis_cli, inline, benchmark, shutdown):
    try:
        section()
    except Exception as e:  # a crash in one section is a failure, not the end
        failed += 1
        print(f"FAIL {section.__name__}: {type(e).__name__}: {e}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
