#!/bin/bash
# The papers' write-only shape (DESIGN §7: a table pre-split into 50 regions, 12 client threads,
# rows of 4 x 25 B, 10 KB client batches, zipfian keys, async WAL) through HBase's Java client,
# ours then HBase 2.6.4 at its defaults (4 GiB heap), N invocations. Usage: run.sh N BINARY [OPERATIONS]
set -e
cd "$(dirname "$0")"
n=${1:-3}; bin=${2:?binary}; ops=${3:-10000000}
for r in $(seq 1 "$n"); do
  YCSB_MVN_OFFLINE=1 "$bin" bench ycsb --workloads write --presplits 50 --threads 12 --operations "$ops" \
    -p durability=ASYNC_WAL --dir /work/bdir --raw-dir raw-$r --json runs-$r.json > out-$r.txt 2> err-$r.txt
done
