#!/bin/bash
# Alternating A/B: ./run.sh ROUNDS binA binB: paper-write-zipf, every policy, each run in a child
# process: rows/s, peak RSS, peak held, flushes.
R=$1; shift
for r in $(seq ${FIRST:-1} $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets paper-write-zipf --policies none,basic,eager,adaptive:0.35 --engines accordion --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  python3 - $n $r $n-$r.json <<'PY'
import json,sys
n,r,f=sys.argv[1:]
d=json.load(open(f))
for x in d['runs']:
  print(n,'r'+r,x['policy'],'rows/s',round(x['ops_per_sec']),'rss MiB',round(x['peak_rss_bytes']/2**20,1),'held MiB',round(x['peak_held_bytes']/2**20,1),
        'rss/budget',round(x['peak_rss_bytes']/x['settings']['memstore_bytes'],3),'flushes',x['flushes'])
PY
done; done
