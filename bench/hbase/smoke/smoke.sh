#!/usr/bin/env bash
# Smoke run of the HBase engine: 20,000 ops, 3 regions, 2 threads, 512 KiB flush size,
# 2 MiB memstore limit, for each policy. Prints one JSON line per policy.
# Usage: bench/hbase/smoke/smoke.sh [policies...]   (default: none basic eager adaptive)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK=/tmp/hbase-bench-smoke
mkdir -p "$WORK"
python3 "$HERE/../gen_keys.py" --ops 20000 --keyspace 100000 --regions 3 --dist zipfian \
  --keys "$WORK/keys.bin" --splits "$WORK/splits.bin"
policies=("$@")
[ ${#policies[@]} -eq 0 ] && policies=(none basic eager adaptive)
for p in "${policies[@]}"; do
  sed "s/\"policy\":\"[a-z]*\"/\"policy\":\"$p\"/" "$HERE/smoke.json" > "$WORK/smoke-$p.json"
  rm -rf "$WORK/dir"
  "$HERE/../run.sh" "$WORK/smoke-$p.json" 2> "$WORK/smoke-$p.log"
done
