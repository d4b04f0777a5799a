#!/bin/bash
# Alternating A/B of the malloc trimmer's trigger on one binary:
#   every100  ACCORDION_MALLOC_TRIM_SLACK_MIB=0  (trim every 100 ms, as before)
#   slack16   the default (trim when the arenas' slack grew by 16 MiB)
# Per round and variant: YCSB B (the get tail), paper-write-zipf with every policy (peak RSS, rows/s),
# paper-mixed adaptive 0.35 with named gets (peak RSS, the reader's tail).
# ./run.sh ROUNDS BIN
R=$1; BIN=$2
for r in $(seq 1 $R); do for v in every100 slack16; do
  if [ $v = every100 ]; then export ACCORDION_MALLOC_TRIM_SLACK_MIB=0; else unset ACCORDION_MALLOC_TRIM_SLACK_MIB; fi
  for w in ycsb-b paper-write-zipf paper-mixed; do
    case $w in
      ycsb-b) args="--presets ycsb-b --policies adaptive:0.35";;
      paper-write-zipf) args="--presets paper-write-zipf --policies none,basic,eager,adaptive:0.35";;
      paper-mixed) args="--presets paper-mixed --policies adaptive:0.35 --block-size-kib 16 --named-gets";;
    esac
    rm -rf /work/bdir; mkdir -p /work/bdir
    $BIN bench run $args --engines accordion --dir /work/bdir --json $v-$w-$r.json > $v-$w-$r.txt 2>$v-$w-$r.err
    python3 - $v $r $v-$w-$r.json <<'PY'
import json,sys
v,r,f=sys.argv[1:]
d=json.load(open(f))
for x in d['runs']:
  lat=x['latency_us']; g=lat.get('get') or lat.get('reader_get') or {}
  print(v,'r'+r,x['preset'],x['policy'],'ops/s',round(x['ops_per_sec']),'rss MiB',x['peak_rss_bytes']>>20,'held MiB',x['peak_held_bytes']>>20,
        'get p50/p99',g.get('p50'),g.get('p99'),'cpu/op us',round(x['cpu_seconds']/x['ops']*1e6,2))
PY
  done
done; done
