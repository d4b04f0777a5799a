#!/bin/bash
# HBase 2.6.4 with its in-memory compaction BASIC (standalone-basic.sh), the papers' write shape as ../run.sh runs
# it, HBase only. Usage: run.sh N BINARY [OPERATIONS]
set -e
cd "$(dirname "$0")"
n=${1:-1}; bin=${2:?binary}; ops=${3:-10000000}
for r in $(seq "${first:-1}" "$n"); do
  YCSB_MVN_OFFLINE=1 "$bin" bench ycsb --engines hbase --hbase-script "$PWD/standalone-basic.sh" --workloads write \
    --presplits 50 --threads 12 --operations "$ops" -p durability=ASYNC_WAL --dir /work/bdir --raw-dir raw-$r \
    --json runs-$r.json > out-$r.txt 2> err-$r.txt
done
