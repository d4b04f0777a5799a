#!/bin/bash
# one binary, the malloc trimmer on / off (ACC_NO_TRIM, a local uncommitted switch), alternating
for r in 1 2 3; do for mode in on off; do
  rm -rf /work/bdir; mkdir -p /work/bdir
  if [ $mode = off ]; then export ACC_NO_TRIM=1; else unset ACC_NO_TRIM; fi
  /work/bin/acc-trimflag bench run --presets ycsb-c,ycsb-e,ycsb-b --engines accordion --policies adaptive:0.35 --dir /work/bdir --json trim-$mode-$r.json > trim-$mode-$r.txt 2>trim-$mode-$r.err
  python3 -c "
import json
d=json.load(open('trim-$mode-$r.json'))
for x in d['runs']:
  print('trim-$mode r$r', x['preset'], round(x['ops_per_sec']), 'cpu/op', round(x['cpu_seconds']/x['ops']*1e6,1), 'p99', {k:v['p99'] for k,v in x['latency_us'].items()}, 'rssMB', round(x['peak_rss_bytes']/2**20))
"
done; done
