"""Soak test of a running augur server under live policy churn (manual; not in CI).

Eight redis-py clients (the default user and three tenants it creates: shop, blog,
news, password "pw") send random commands of every group Augur serves (strings, TTLs,
hashes, sets, DUMP/RESTORE with IDLETIME or FREQ, OBJECT, MULTI/EXEC, EVAL, SCAN, RENAME, COPY)
over 3,000 keys with values of 0-20,000 bytes, while one more client live-switches
maxmemory-policy (every Redis name, Augur's lhd / s3fifo / auto), maxmemory-samples,
lhd-samples, lfu-log-factor, lfu-decay-time, maxmemory (1 MB .. none), TENANT SET limits
and miss penalties, compressed-zone and tenant-partitioning, and reads INFO, TENANT INFO,
MEMORY STATS and MEMORY DOCTOR.
Fails (exit 1) if any connection is dropped or times out (a panic closes them) or the
server does not answer at the end; refused settings are counted, not failures.

Usage: augur serve --port 7401 --maxmemory 4mb --maxmemory-policy auto \
           --tenant-partitioning kredis --tenant-interval 20000 --dlru-interval 20000 &
       python3 tests/compat/soak.py 7401 [SECONDS=60] [SEED=1]
"""
import random
import sys
import threading
import time

import redis

PORT = int(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 60
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 1
stop = threading.Event()
errors = []
counts = {}  # worker -> commands sent
refusals = []  # the chaos client's refused settings (Redis-style errors, not failures)
lock = threading.Lock()

POLICIES = ["allkeys-lru", "allkeys-lhd", "volatile-lhd", "auto", "allkeys-s3fifo",
            "allkeys-lfu", "volatile-lru", "volatile-ttl", "allkeys-random",
            "volatile-random", "volatile-lfu", "noeviction"]


def key(rng):
    return "k%d" % rng.randrange(3000)


def val(rng):
    n = rng.choice([0, 1, 5, 50, 100, 300, 2000, 20000])
    return rng.randbytes(n)


def op(r, rng):
    k = key(rng)
    c = rng.randrange(40)
    if c < 8:
        return r.set(k, val(rng), ex=rng.choice([None, None, 1, 100]))
    if c < 16:
        return r.get(k)
    if c == 16:
        return r.delete(k, key(rng))
    if c == 17:
        return r.expire(k, rng.randrange(1, 5))
    if c == 18:
        return r.hset("h" + k, mapping={"f%d" % i: val(rng) for i in range(rng.randrange(1, 8))})
    if c == 19:
        return r.hgetall("h" + k)
    if c == 20:
        return r.sadd("s" + k, *[str(rng.randrange(100)) for _ in range(rng.randrange(1, 10))])
    if c == 21:
        return r.smembers("s" + k)
    if c == 22:
        return r.incrby("n" + k, rng.randrange(-5, 5))
    if c == 23:
        return r.append(k, val(rng))
    if c == 24:
        return r.getrange(k, rng.randrange(-50, 50), rng.randrange(-50, 50))
    if c == 25:
        d = r.dump(k)
        if d is not None:
            if rng.random() < 0.5:
                return r.restore(key(rng), 0, d, replace=True, frequency=rng.randrange(0, 256))
            return r.restore(key(rng), 0, d, replace=True, idletime=rng.randrange(0, 100000))
        return None
    if c == 26:
        return r.object("freq", k) if rng.random() < 0.5 else r.object("idletime", k)
    if c == 27:
        return r.mset({key(rng): val(rng) for _ in range(rng.randrange(1, 5))})
    if c == 28:
        return r.mget([key(rng) for _ in range(rng.randrange(1, 8))])
    if c == 29:
        return r.setrange(k, rng.randrange(0, 300), val(rng))
    if c == 30:
        p = r.pipeline(transaction=True)
        for _ in range(rng.randrange(1, 6)):
            p.set(key(rng), val(rng))
            p.get(key(rng))
        return p.execute()
    if c == 31:
        return r.getex(k, px=rng.randrange(1, 5000))
    if c == 32:
        return r.getdel(k)
    if c == 33:
        return r.scan(rng.randrange(0, 1 << 20), count=rng.randrange(1, 100))
    if c == 34:
        return r.eval("return redis.call('SET', KEYS[1], ARGV[1])", 1, k, "v")
    if c == 35:
        return r.execute_command("SET", k, "x", "KEEPTTL", "GET")
    if c == 36:
        return r.rename(k, key(rng))
    if c == 37:
        return r.copy(k, key(rng), replace=True)
    if c == 38:
        return r.persist(k)
    return r.execute_command("TOUCH", k, key(rng))


TENANTS = ["default", "shop", "blog", "news"]


def worker(i):
    rng = random.Random(SEED * 1000 + i)
    t = TENANTS[i % len(TENANTS)]
    if t == "default":
        r = redis.Redis(port=PORT, socket_timeout=30)
    else:
        r = redis.Redis(port=PORT, socket_timeout=30, username=t, password="pw")
    n = 0
    while not stop.is_set():
        try:
            op(r, rng)
        except redis.ResponseError:
            pass
        except (redis.ConnectionError, redis.TimeoutError) as e:
            errors.append("worker %d: %r" % (i, e))
            stop.set()
            return
        n += 1
    with lock:
        counts[i] = n


def chaos():
    rng = random.Random(SEED)
    r = redis.Redis(port=PORT, socket_timeout=30)
    while not stop.is_set():
        c = rng.randrange(14)
        try:
            if c < 3:
                r.config_set("maxmemory-policy", rng.choice(POLICIES))
            elif c == 3:
                r.config_set("maxmemory-samples", rng.choice(["auto", "1", "5", "16", "64"]))
            elif c == 4:
                r.config_set("lhd-samples", str(rng.choice([1, 8, 64, 200, 1024])))
            elif c == 5:
                r.config_set("maxmemory", rng.choice(["1mb", "2mb", "4mb", "20mb", "0"]))
            elif c == 6:
                r.info("all")
            elif c == 8:
                r.execute_command("TENANT", "SET", rng.choice(TENANTS[1:]),
                                  rng.choice(["maxmemory", "min-memory", "miss-penalty"]),
                                  rng.choice(["0", "500kb", "1mb", "3mb", "2ms", "100us"]))
            elif c == 9:
                r.config_set("compressed-zone", rng.choice(["yes", "no"]))
            elif c == 10:
                r.execute_command("TENANT", "INFO", rng.choice(TENANTS[1:]))
            elif c == 11:
                r.config_set("tenant-partitioning", rng.choice(["kredis", "off", "static"]))
            elif c == 12:
                r.config_set(rng.choice(["lfu-log-factor", "lfu-decay-time"]),
                             str(rng.choice([0, 1, 10, 100])))
            elif c == 13:
                r.execute_command("MEMORY", rng.choice(["STATS", "DOCTOR"]))
            else:
                r.execute_command("MEMORY", "USAGE", key(rng))
        except redis.ResponseError as e:
            refusals.append(str(e)[:80])
        except (redis.ConnectionError, redis.TimeoutError) as e:
            errors.append("chaos: %r" % e)
            stop.set()
            return
        time.sleep(rng.random() * 0.05)


setup = redis.Redis(port=PORT)
for t in TENANTS[1:]:
    setup.acl_setuser(t, enabled=True, passwords=["+pw"], keys=["*"], channels=["*"],
                      commands=["+@all", "-@admin"])
threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
threads.append(threading.Thread(target=chaos))
for t in threads:
    t.start()
time.sleep(SECONDS)
stop.set()
for t in threads:
    t.join()
r = redis.Redis(port=PORT)
try:
    r.ping()
    alive = True
except Exception as e:  # noqa
    alive = False
    errors.append("final ping: %r" % e)
print("ops", sum(counts.values()), "alive", alive, "dbsize", r.dbsize() if alive else None)
print("distinct refusals", sorted(set(refusals))[:10])
for e in errors:
    print("ERROR", e)
sys.exit(1 if errors or not alive else 0)
