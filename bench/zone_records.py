#!/usr/bin/env python3
"""Record-shaped values for the compressed-zone benchmarks (issue 10).

Each value is a JSON record of Debian's iso-codes package (/usr/share/iso-codes/json:
countries, subdivisions, currencies, languages, scripts), wrapped with the fields a cache
entry of such a record carries (an id, the source table, an update time), ~100 bytes like
the paper's Twitter objects. Item i is deterministic (record i mod 14282, id i), so every
value is distinct and every run loads the same data.

  zone_records.py resp N [PREFIX]        RESP SET commands on stdout (redis-cli --pipe)
  zone_records.py memcache N [PREFIX]    memcached text `set ... noreply` lines
  zone_records.py ratio [N]              the data's own LZ4 / zstd ratio (whole records
                                         compressed one by one and in 2 KB blocks)
"""
import glob, json, sys

def records():
    out = []
    for f in sorted(glob.glob("/usr/share/iso-codes/json/iso_*.json")):
        table = f.rsplit("/", 1)[1][:-5]
        for _, rows in json.load(open(f)).items():
            if isinstance(rows, list):
                out.extend((table, r) for r in rows)
    if not out:
        sys.exit("no iso-codes records: apt-get install iso-codes")
    return out

RECS = records()

def value(i):
    table, r = RECS[i % len(RECS)]
    rec = {"id": i, "src": table}
    rec.update(r)
    rec["updated"] = 1764000000 + (i * 7919) % 86400000
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode()

def key(prefix, i):
    return b"%s:%d" % (prefix, i)

def main():
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    prefix = (sys.argv[3] if len(sys.argv) > 3 else "rec").encode()
    w = sys.stdout.buffer
    if mode == "resp":
        for i in range(n):
            k, v = key(prefix, i), value(i)
            w.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
    elif mode == "memcache":
        for i in range(n):
            k, v = key(prefix, i), value(i)
            w.write(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(v), v))
    elif mode == "ratio":
        import lz4.block, zstandard
        vals = [value(i) for i in range(n)]
        raw = sum(len(v) for v in vals)
        one = sum(len(lz4.block.compress(v, store_size=False)) for v in vals)
        def blocks_of(vs):
            blocks, cur = [], b""
            for v in vs:
                if len(cur) + len(v) > 2048:
                    blocks.append(cur)
                    cur = b""
                cur += v
            blocks.append(cur)
            return blocks
        zs = zstandard.ZstdCompressor(level=1)
        print("records=%d mean_bytes=%.1f lz4_each=%.2fx" % (n, raw / n, raw / one))
        # A Z-zone block holds items in hashed-key order: neighbours are random records.
        import random
        shuffled = vals[:]
        random.Random(1).shuffle(shuffled)
        for name, vs in (("in key order", vals), ("hashed order", shuffled)):
            b = blocks_of(vs)
            lz = sum(len(lz4.block.compress(x, store_size=False)) for x in b)
            zb = sum(len(zs.compress(x)) for x in b)
            print("  2KB blocks, %s: lz4 %.2fx, zstd-1 %.2fx" % (name, raw / lz, raw / zb))
    else:
        sys.exit(__doc__)

if __name__ == "__main__":
    main()
