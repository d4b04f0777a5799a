#!/bin/bash
# alternating A/B: ./run.sh rounds presets binA binB
R=$1; P=$2; shift 2
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets $P --engines accordion --policies adaptive:0.35 --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  python3 -c "
import json,sys
d=json.load(open('$n-$r.json'))
for x in d['runs']:
  print('$n r$r', x['preset'], round(x['ops_per_sec']), 'cpu/op', round(x['cpu_seconds']/x['ops']*1e6,1), 'allocs/op', round(x.get('allocs_per_op',0),1))
"
done; done
