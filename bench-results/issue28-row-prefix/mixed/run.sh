#!/bin/bash
# alternating A/B of paper-mixed (adaptive 0.35, 16 KiB blocks): ./run.sh rounds binA binB...
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets paper-mixed --engines accordion --policies adaptive:0.35 --block-size-kib 16 --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  python3 -c "
import json
d=json.load(open('$n-$r.json'))
for x in d['runs']:
  g=x['latency_us']['get']
  print('$n r$r', x['preset'], 'get p50/p90/p99', g['p50'], g['p90'], g['p99'], 'writers', round(x['ops_per_sec']), 'cpu/op', round(x['cpu_seconds']/x['ops']*1e6,2), 'rss MiB', x['peak_rss_bytes']>>20)
"
done; done
