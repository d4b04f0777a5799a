#!/bin/sh
# YCSB's write shape (load 300 K rows, then a million 1 KB-row updates through BufferedMutator with
# 10 KB batches, 8 threads) against ours and HBase 2.6.4, both through HBase's Java client, one
# invocation per round (ours, then HBase).
# usage: run.sh ROUNDS BIN
set -e
rounds=$1; bin=$2
for r in $(seq "${first:-1}" "$rounds"); do
  YCSB_MVN_OFFLINE=1 "$bin" bench ycsb --workloads write -p durability=ASYNC_WAL \
    --dir /work/bdir --raw-dir "raw-r$r" --json "r$r.json" > "r$r.txt" 2> "r$r.err"
done
