#!/bin/bash
# RocksDB alone, alternating: acc-src (RocksDB at its default 4 KiB blocks) and acc-bs2 (the guide's 16 KiB)
for r in 1 2; do for b in /work/bin/acc-src /work/bin/acc-bs2; do
  n=$(basename $b); rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets ycsb-c,ycsb-e,ycsb-b --engines rocksdb --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  grep "rocksdb -:" $n-$r.txt | sed "s/^/$n r$r /"
done; done
