#!/usr/bin/env bash
# The paper's write-only shape at 1 M ops: 50 regions, 12 threads, 40-row batches, async WAL,
# 4 x 25 B values, YCSB scrambled zipfian keys over 1 M items, 128 MiB flush size,
# 256 MiB memstore limit. Prints one JSON line per policy.
# Usage: bench/hbase/big/big.sh [policies...]   (default: none basic)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK=/tmp/hbase-bench-big
mkdir -p "$WORK"
if [ ! -f "$WORK/keys.bin" ]; then
  python3 "$HERE/../gen_keys.py" --ops 1000000 --keyspace 1000000 --regions 50 --dist zipfian \
    --keys "$WORK/keys.bin" --splits "$WORK/splits.bin"
fi
policies=("$@")
[ ${#policies[@]} -eq 0 ] && policies=(none basic)
for p in "${policies[@]}"; do
  sed "s/\"policy\":\"[a-z]*\"/\"policy\":\"$p\"/" "$HERE/big.json" > "$WORK/big-$p.json"
  rm -rf "$WORK/dir"
  "$HERE/../run.sh" "$WORK/big-$p.json" 2> "$WORK/big-$p.log"
done
