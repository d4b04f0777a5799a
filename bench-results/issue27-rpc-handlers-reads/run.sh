#!/bin/bash
# Alternating rounds of our server alone through YCSB's Java client with different RPC handler counts:
# load 300 K rows, then C (1 M gets) and E (200 K scans), 8 threads, 8 regions.
# Usage: run.sh ROUNDS BIN HANDLERS... (e.g. run.sh 3 /work/bin/acc 16 4)
R=$1; BIN=$2; shift 2
cd "$(dirname "$0")"
for r in $(seq ${FIRST:-1} $R); do for h in "$@"; do
  rm -rf /work/bdir; mkdir -p /work/bdir
  YCSB_MVN_OFFLINE=1 $BIN bench ycsb --engines accordion --workloads c,e --set rpc_handlers=$h \
    -p durability=ASYNC_WAL --dir /work/bdir --json h$h-$r.json > h$h-$r.txt 2> h$h-$r.err
  grep -E "^accordion  " h$h-$r.txt | sed "s/^/h$h r$r /"
done; done
