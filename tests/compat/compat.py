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
    check("object encoding", r.object("encoding", "n"), "int")
    check("time", len(r.time()), 2)
    check("echo", r.echo("hi"), "hi")
    check("command count", r.command_count() > 40, True)
    check("err wrong args", error_of(lambda: r.execute_command("GET")),
          "wrong number of arguments for 'get' command")
    check("err not int", error_of(lambda: r.incr("s")), "value is not an integer or out of range")
    check("err syntax", error_of(lambda: r.execute_command("SET", "k", "v", "EX")), "syntax error")
    check("err unknown", error_of(lambda: r.execute_command("LPUSH", "l", "a")),
          "unknown command 'LPUSH', with args beginning with: 'l' 'a' ")
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
    check("acl setuser", admin.acl_setuser("shop", enabled=True, passwords=["+s3cret"]), True)
    check("acl setuser 2", admin.execute_command("ACL", "SETUSER", "blog", "on", ">pw"), "OK")
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


def redis_cli():
    check("cli ping", cli("PING"), "PONG")
    check("cli set", cli("SET", "ck", "hello world"), "OK")
    check("cli get", cli("GET", "ck"), "hello world")
    check("cli get missing", cli("GET", "nokey"), "")
    check("cli incr", cli("INCR", "cn"), "1")
    check("cli mget", cli("MGET", "ck", "nokey", "cn"), "hello world\n\n1")
    check("cli ttl", cli("TTL", "ck"), "-1")
    check("cli error", cli("INCR", "ck"), "ERR value is not an integer or out of range")
    check("cli unknown", cli("HSET", "h", "f", "v"),
          "ERR unknown command 'HSET', with args beginning with: 'h' 'f' 'v' ")
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


for section in (redis_py, scripting, tenants, redis_cli, inline, benchmark, shutdown):
    try:
        section()
    except Exception as e:  # a crash in one section is a failure, not the end
        failed += 1
        print(f"FAIL {section.__name__}: {type(e).__name__}: {e}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
