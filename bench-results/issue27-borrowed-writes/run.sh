#!/bin/sh
# A/B of the RPC write path: owned mutations (base, acc-s50 = bcf9f99) against mutations borrowed from
# the request's cells (new), YCSB's write shape only (a million updates of whole rows (four 25-byte fields) through BufferedMutator,
# 10 KB batches), ours only, through HBase's Java client, alternating rounds.
# usage: run.sh ROUNDS BIN_BASE BIN_NEW
set -e
rounds=$1; base=$2; new=$3
for r in $(seq "${first:-1}" "$rounds"); do
  for side in base new; do
    if [ "$side" = base ]; then bin=$base; else bin=$new; fi
    YCSB_MVN_OFFLINE=1 "$bin" bench ycsb --engines accordion --workloads write -p durability=ASYNC_WAL \
      --dir /work/bdir --raw-dir "raw-$side-r$r" --json "$side-r$r.json" > "$side-r$r.txt" 2> "$side-r$r.err"
  done
done
