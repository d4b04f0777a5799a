#!/bin/bash
# alternating A/B of YCSB B (adaptive 0.35): ./run.sh ROUNDS binA binB...
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets ycsb-b --engines accordion --policies adaptive:0.35 --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  python3 -c "
import json
d=json.load(open('$n-$r.json'))
for x in d['runs']:
  g=x['latency_us']['get']; p=x['latency_us']['put']
  print('$n r$r', x['preset'], round(x['ops_per_sec']), 'get p50/p99/p999', g['p50'], g['p99'], g['p999'], 'put p99', p['p99'], 'cpu/op', round(x['cpu_seconds']/x['ops']*1e6,1))
"
done; done
