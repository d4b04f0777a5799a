#!/usr/bin/env bash
# YCSB 0.17 through our HBase 2 client binding (accordion.ycsb.HBaseClient).
#   bench/ycsb/run.sh --rpc 127.0.0.1:16020 -load -P workloads/workloada -p createtable=true
#   bench/ycsb/run.sh --rpc 127.0.0.1:16020 -t    -P workloads/workloada -threads 4
#   bench/ycsb/run.sh --zookeeper 127.0.0.1:2181 -t -P workloads/workloadc     # real HBase
# --rpc HOST:PORT: HBase 2's RpcConnectionRegistry with that bootstrap server (accordion server's
#   rpc_addr, or an HBase 2.5+ master/region server); --zookeeper HOST:PORT: the ZooKeeper registry.
# Everything else goes to site.ycsb.Client as it is; -p settings override the workload file's.
# A -P file that does not exist as given is looked up beside this script (workloads/workloadX).
# Defaults: -db accordion.ycsb.HBaseClient -p columnfamily=family (override with -p).
# Builds the Maven project when target/ is missing or older than the sources.
# Environment: YCSB_HEAP (JVM -Xmx, default 2g), YCSB_LOG (client log level, default WARN),
# YCSB_JAVA_OPTS (extra JVM flags), YCSB_MVN_OFFLINE=1 (build with mvn -o).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAR="$HERE/target/ycsb-hbase2-binding-0.1.0.jar"
CP_FILE="$HERE/target/classpath.txt"
offline=()
[ "${YCSB_MVN_OFFLINE:-0}" = 1 ] && offline=(-o)
"$HERE/../maven-build-if-stale.sh" "$HERE" "$JAR" "${offline[@]}"

args=(-db accordion.ycsb.HBaseClient -p columnfamily=family)
while [ $# -gt 0 ]; do
  case "$1" in
    --rpc)
      args+=(-p hbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry
             -p "hbase.client.bootstrap.servers=$2")
      shift 2 ;;
    --zookeeper)
      args+=(-p "hbase.zookeeper.quorum=${2%:*}" -p "hbase.zookeeper.property.clientPort=${2##*:}")
      shift 2 ;;
    -P)
      file="$2"
      [ -e "$file" ] || [ ! -e "$HERE/$file" ] || file="$HERE/$file"
      args+=(-P "$file")
      shift 2 ;;
    *)
      args+=("$1")
      shift ;;
  esac
done
# The client uses the same unsafe fast paths as HBase itself on Java 17.
exec java -Xmx"${YCSB_HEAP:-2g}" \
  --add-opens java.base/java.nio=ALL-UNNAMED \
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED \
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -Dio.netty.tryReflectionSetAccessible=true \
  -Dfile.encoding=UTF-8 \
  -Dycsb.log.level="${YCSB_LOG:-WARN}" \
  ${YCSB_JAVA_OPTS:-} \
  -cp "$JAR:$(cat "$CP_FILE")" site.ycsb.Client "${args[@]}"
