#!/bin/bash
# Alternating A/B of two binaries through HBase's Java client (YCSB E then C, accordion only):
# ./run.sh ROUNDS binA binB
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  YCSB_MVN_OFFLINE=1 $b bench ycsb --engines accordion --workloads e,c --records 100000 --operations 40000 --threads 8 \
    --presplits 8 -p durability=ASYNC_WAL --dir /work/bdir --json $n-$r.json > $n-$r.txt 2> $n-$r.err
  grep -E "^accordion +(e|c) " $n-$r.txt | sed "s/^/$n r$r /" | cut -c1-140
done; done
