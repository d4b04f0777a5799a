#!/bin/bash
# Alternating A/B of two binaries' servers alone through YCSB's Java client: load 300 K rows, then
# A (1 M, half updates), C (1 M gets) and E (200 K scans), 8 threads, 8 regions. Usage: [OUT=DIR] run.sh ROUNDS BIN...
# (output in DIR, default this directory)
R=$1; shift
cd "${OUT:-$(dirname "$0")}"
for r in $(seq ${FIRST:-1} $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  YCSB_MVN_OFFLINE=1 $b bench ycsb --engines accordion --workloads a,c,e -p durability=ASYNC_WAL \
    --dir /work/bdir --json $n-$r.json > $n-$r.txt 2> $n-$r.err
  grep -E "^accordion  " $n-$r.txt | sed "s/^/$n r$r /"
done; done
