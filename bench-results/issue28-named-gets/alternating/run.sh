#!/bin/bash
# paper-mixed at scale 1, 16 KiB blocks, alternating per round: ours adaptive with --named-gets,
# ours adaptive with whole-row gets, RocksDB. ./run.sh ROUNDS BIN
R=$1; B=$2
for r in $(seq 1 $R); do for mode in named row rocksdb; do
  case $mode in
    named) a="--engines accordion --policies adaptive:0.35 --named-gets";;
    row) a="--engines accordion --policies adaptive:0.35";;
    rocksdb) a="--engines rocksdb";;
  esac
  rm -rf /work/bdir; mkdir -p /work/bdir
  $B bench run --presets paper-mixed $a --block-size-kib 16 --dir /work/bdir --json $mode-$r.json > $mode-$r.txt 2>$mode-$r.err
  python3 -c "
import json
d=json.load(open('$mode-$r.json'))
for x in d['runs']:
  g=x['latency_us']['get']
  print('$mode r$r', x['engine'], 'get p50/p90/p99', g['p50'], g['p90'], g['p99'], 'cpu/op', round(x['cpu_seconds']/x['ops']*1e6,2), 'rss MiB', x['peak_rss_bytes']>>20, 'from memstore', x.get('gets_from_memstore'))
"
done; done
