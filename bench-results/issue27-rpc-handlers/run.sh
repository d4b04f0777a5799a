#!/bin/bash
# Alternating rounds of the paper's write shape (50 regions, 12 threads, 5 M updates), rpc_handlers 16 / 4 / 8.
cd "$(dirname "$0")"
for r in $(seq 1 ${1:-2}); do
  for h in 16 4 8; do
    YCSB_MVN_OFFLINE=1 /work/bin/acc-handlers bench ycsb --engines accordion --workloads write --presplits 50 --threads 12 \
      --operations 5000000 -p durability=ASYNC_WAL --set rpc_handlers=$h --dir /work/bdir --raw-dir raw-h$h-$r --json h$h-$r.json > h$h-$r.txt 2>&1
  done
done
echo done > done
