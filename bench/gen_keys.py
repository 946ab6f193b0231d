#!/usr/bin/env python3
"""Writes RESP for N distinct SETs (key:%010d, VALUE_SIZE-byte values) to stdout, for
`redis-cli --pipe`. Usage: gen_keys.py N [VALUE_SIZE=100] [START=0]"""
import sys

n = int(sys.argv[1])
size = int(sys.argv[2]) if len(sys.argv) > 2 else 100
start = int(sys.argv[3]) if len(sys.argv) > 3 else 0
value = b"v" * size
out = sys.stdout.buffer
head = b"*3\r\n$3\r\nSET\r\n$14\r\n"
tail = b"\r\n$%d\r\n%s\r\n" % (size, value)
buf = []
for i in range(start, start + n):
    buf.append(head + b"key:%010d" % i + tail)
    if len(buf) == 10000:
        out.write(b"".join(buf))
        buf.clear()
out.write(b"".join(buf))
