#!/bin/bash
# Gets with and without huge-page chunks: alternating rounds of YCSB A and C (8 regions, 8 threads, 1 M operations,
# after a 300 K-row load) against ours only; base = acc-handlers (da37a0f's code), huge = acc-s52 (3295e15's).
cd "$(dirname "$0")"
for r in $(seq ${first:-1} ${1:-2}); do
  for b in handlers s52; do
    YCSB_MVN_OFFLINE=1 /work/bin/acc-$b bench ycsb --engines accordion --workloads a,c -p durability=ASYNC_WAL \
      --dir /work/bdir --raw-dir raw-$b-$r --json $b-$r.json > $b-$r.txt 2>&1
  done
done
