#!/usr/bin/env bash
# What real HBase answers to filtered scans: bench/hbase/filter-oracle.sh CASES.json
# Runs accordion.bench.FilterOracle (HBase 2.6.4's own HRegion in this process) through run.sh
# (which builds the Maven project if needed): ONE JSON document on stdout, logs on stderr.
# Example (the recorded answers of crates/store/tests/filters_vs_hbase.rs):
#   bench/hbase/filter-oracle.sh crates/store/tests/data/filters/cases.json \
#     > crates/store/tests/data/filters/hbase-2.6.4-answers.json
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -ne 1 ]; then
  echo "usage: $0 CASES.json" >&2
  exit 2
fi
HBASE_BENCH_MAIN=accordion.bench.FilterOracle HBASE_BENCH_HEAP="${HBASE_BENCH_HEAP:-1g}" exec "$HERE/run.sh" "$1"
