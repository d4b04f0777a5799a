#!/usr/bin/env bash
# Real HBase 2.6.4 as a server in one JVM (master, region server, ZooKeeper):
#   bench/hbase/standalone.sh DATA_DIR [name=value ...]
# Prints "standalone hbase ready: zookeeper 127.0.0.1:P master 127.0.0.1:P regionserver 127.0.0.1:P"
# on stdout when clients can use it; SIGTERM stops it. Heap: HBASE_BENCH_HEAP (default 4g, the
# same budget accordion server plans with: memory_budget 4 GiB). Logs on stderr (HBASE_BENCH_LOG).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HBASE_BENCH_MAIN=accordion.bench.StandaloneHBase exec "$HERE/run.sh" "$@"
