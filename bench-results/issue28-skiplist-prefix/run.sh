#!/bin/bash
# Alternating A/B of two binaries: ./run.sh ROUNDS binA binB
# per round and binary: YCSB B and C (adaptive 0.35; ops/s, get p50/p99, CPU/op),
# paper-write-zipf with none and adaptive 0.35 (rows/s, CPU/row, peak RSS, held).
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  for w in ycsb paper-write-zipf; do
    case $w in
      ycsb) args="--presets ycsb-b,ycsb-c --policies adaptive:0.35";;
      paper-write-zipf) args="--presets paper-write-zipf --policies none,adaptive:0.35";;
    esac
    rm -rf /work/bdir; mkdir -p /work/bdir
    $b bench run $args --engines accordion --dir /work/bdir --json $n-$w-$r.json > $n-$w-$r.txt 2>$n-$w-$r.err
    python3 - $n $r $n-$w-$r.json <<'PY'
import json,sys
n,r,f=sys.argv[1:]
d=json.load(open(f))
for x in d['runs']:
  g=x['latency_us'].get('get') or {}
  print(n,'r'+r,x['preset'],x['policy'],'ops/s',round(x['ops_per_sec']),'cpu/op',round(x['cpu_seconds']/x['ops']*1e6,2),
        'get p50/p99',g.get('p50'),g.get('p99'),'rss MiB',x['peak_rss_bytes']>>20,'held MiB',x['peak_held_bytes']>>20,'flushes',x['flushes'])
PY
  done
done; done
