#!/bin/bash
# Alternating rounds (first=N run.sh M: rounds N..M) of the paper's write shape (50 regions, 12 threads, 5 M updates): base (acc-handlers) vs huge-page chunks (acc-huge).
cd "$(dirname "$0")"
for r in $(seq ${first:-1} ${1:-2}); do
  for b in handlers huge; do
    YCSB_MVN_OFFLINE=1 /work/bin/acc-$b bench ycsb --engines accordion --workloads write --presplits 50 --threads 12 \
      --operations 5000000 -p durability=ASYNC_WAL --dir /work/bdir --raw-dir raw-$b-$r --json $b-$r.json > $b-$r.txt 2>&1
  done
done
echo done > done
