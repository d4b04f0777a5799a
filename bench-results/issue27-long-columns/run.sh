#!/bin/sh
# A/B of YCSB C right after A (hot rows with many versions in the memstore), ours only,
# through HBase's Java client: base build, then the build with the long-column table, alternating.
# usage: run.sh ROUNDS BIN_BASE BIN_NEW
set -e
rounds=$1; base=$2; new=$3
for r in $(seq "${first:-1}" "$rounds"); do
  for side in base new; do
    if [ "$side" = base ]; then bin=$base; else bin=$new; fi
    YCSB_MVN_OFFLINE=1 "$bin" bench ycsb --engines accordion --workloads a,c -p durability=ASYNC_WAL \
      --dir /work/bdir --raw-dir "raw-$side-r$r" --json "$side-r$r.json" > "$side-r$r.txt" 2> "$side-r$r.err"
  done
done
