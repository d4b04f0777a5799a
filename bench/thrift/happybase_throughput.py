"""One happybase client against a running server: puts in batches of 100
(rows of 4 x 25 B) and single-row gets, the shape the environment notes
used for HBase's Thrift gateway. Usage: happybase_throughput.py PORT [ROWS]"""

import sys
import time

import happybase

port = int(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
c = happybase.Connection("127.0.0.1", port)
if b"ycsb" in c.tables():
    c.delete_table("ycsb", disable=True)
c.create_table("ycsb", {"f": dict()})
t = c.table("ycsb")
v = b"v" * 25
t0 = time.time()
with t.batch(batch_size=100) as b:
    for i in range(n):
        b.put(b"user%012d" % (i * 7919 % 1000003), {b"f:field%d" % f: v for f in range(4)})
print(f"puts: {n / (time.time() - t0):.0f} rows/s (batches of 100, 4 x 25 B, one happybase client)")
m = n // 5
t0 = time.time()
for i in range(m):
    t.row(b"user%012d" % (i * 7919 % 1000003))
print(f"gets: {m / (time.time() - t0):.0f} rows/s (single-row gets, one client)")
