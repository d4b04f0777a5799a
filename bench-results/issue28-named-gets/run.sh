#!/bin/bash
# paper-mixed at scale 1, 16 KiB blocks, ours (none, adaptive) and RocksDB, 3 runs each;
# first with --named-gets, then with whole-row gets; binary $1.
B=$1
for mode in named row; do
  flag=""; [ $mode = named ] && flag="--named-gets"
  rm -rf /work/bdir; mkdir -p /work/bdir
  echo "$B bench run --presets paper-mixed --engines accordion,rocksdb --policies none,adaptive:0.35 --block-size-kib 16 --repeat 3 $flag --dir /work/bdir --json $mode.json" > $mode-command.txt
  ( time $B bench run --presets paper-mixed --engines accordion,rocksdb --policies none,adaptive:0.35 --block-size-kib 16 --repeat 3 $flag --dir /work/bdir --json $mode.json > $mode-out.txt 2> $mode-err.txt ) 2> $mode-time.txt
done
