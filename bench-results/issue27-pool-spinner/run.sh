#!/bin/sh
# Three-way A/B through HBase's Java client, ours only, alternating in each round:
#   base   = bcf9f99 (acc-s50): RPC workers on a crossbeam channel, owned mutations
#   borrow = + the RPC write path borrows the request's cells (no owned mutations)
#   spin   = + the worker pool with one spinner and the rest asleep
# usage: run.sh ROUNDS BIN_BASE BIN_BORROW BIN_SPIN
set -e
rounds=$1; base=$2; borrow=$3; spin=$4
for r in $(seq "${first:-1}" "$rounds"); do
  for side in base borrow spin; do
    case $side in base) bin=$base;; borrow) bin=$borrow;; spin) bin=$spin;; esac
    YCSB_MVN_OFFLINE=1 "$bin" bench ycsb --engines accordion --workloads a,c,write -p durability=ASYNC_WAL \
      --dir /work/bdir --raw-dir "raw-$side-r$r" --json "$side-r$r.json" > "$side-r$r.txt" 2> "$side-r$r.err"
  done
done
