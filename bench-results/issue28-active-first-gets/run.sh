#!/bin/bash
# Alternating A/B of paper-mixed with named gets (none and adaptive 0.35, 16 KiB blocks): ./run.sh ROUNDS binA binB
R=$1; shift
for r in $(seq 1 $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets paper-mixed --engines accordion --policies none,adaptive:0.35 --block-size-kib 16 --named-gets \
    --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  python3 - $n $r $n-$r.json <<'PY'
import json,sys
n,r,f=sys.argv[1:]
for x in json.load(open(f))['runs']:
  g=x['latency_us']['get']
  print(n,'r'+r,x['policy'],'get p50/p90/p99',g['p50'],g['p90'],g['p99'],'from memory',x.get('gets_from_memstore'),
        'writers',round(x['ops_per_sec']),'cpu/op',round(x['cpu_seconds']/x['ops']*1e6,2))
PY
done; done
