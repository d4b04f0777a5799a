#!/bin/bash
# The chunk pool's counters while `bench ycsb` runs the papers' write shape on our server alone:
# /metrics is scraped every 10 s into metrics.txt. Usage: run.sh BIN
set -eu
BIN=$1; OUT=$(dirname "$0"); rm -rf /work/bdir
YCSB_MVN_OFFLINE=1 "$BIN" bench ycsb --engines accordion --workloads write --presplits 50 --threads 12 \
  --operations 5000000 -p durability=ASYNC_WAL --dir /work/bdir --raw-dir "$OUT/raw" --json "$OUT/runs.json" > "$OUT/out.txt" 2>&1 &
BENCH=$!
: > "$OUT/metrics.txt"
while kill -0 $BENCH 2>/dev/null; do
  sleep 10
  P=$(pgrep -f "$BIN server" || true); [ -n "$P" ] || continue
  for port in $(ss -ltnp | grep "pid=$P," | awk '{print $4}' | sed 's/.*://'); do
    if M=$(curl -s -m 2 "localhost:$port/metrics") && grep -q '^accordion_chunk_pool' <<<"$M"; then
      { date -u +%FT%TZ; grep -E '^accordion_(chunk_pool|global_memstore_limit)' <<<"$M"; } >> "$OUT/metrics.txt"; break
    fi
  done
done
wait $BENCH
