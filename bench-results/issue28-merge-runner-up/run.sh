#!/bin/bash
# Alternating A/B of two binaries: ./run.sh ROUNDS binA binB
# per round and binary: YCSB E and C, embedded, adaptive 0.35 (ops/s, CPU/op, scan/get p50/p99).
R=$1; shift
for r in $(seq ${FIRST:-1} $R); do for b in "$@"; do
  n=$(basename $b)
  rm -rf /work/bdir; mkdir -p /work/bdir
  $b bench run --presets ycsb-e,ycsb-c --policies adaptive:0.35 --engines accordion --dir /work/bdir --json $n-$r.json > $n-$r.txt 2>$n-$r.err
  python3 - $n $r $n-$r.json <<'PY'
import json,sys
n,r,f=sys.argv[1:]
d=json.load(open(f))
for x in d['runs']:
  l=x['latency_us']; g=l.get('scan') or l.get('get') or {}
  print(n,'r'+r,x['preset'],'ops/s',round(x['ops_per_sec']),'cpu/op',round(x['cpu_seconds']/x['ops']*1e6,2),
        'p50/p99',g.get('p50'),g.get('p99'),'rss MiB',x['peak_rss_bytes']>>20)
PY
done; done
