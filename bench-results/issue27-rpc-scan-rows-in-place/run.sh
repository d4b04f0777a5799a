#!/bin/bash
# Alternating A/B of two binaries' servers through YCSB's Java client: ./run.sh ROUNDS binA binB
# per round and binary: load 300 K rows, then workload e (short scans),
# 100 K operations, 8 threads; throughput and each side's CPU per operation.
R=$1; shift
for r in $(seq ${FIRST:-1} $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  YCSB_MVN_OFFLINE=1 $b bench ycsb --engines accordion --workloads e --records 300000 --operations 100000 \
    --threads 8 --presplits 8 -p durability=ASYNC_WAL --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  grep -E "^accordion  " $n-$r.txt | sed "s/^/$n r$r /"
done; done
