#!/usr/bin/env bash
# Real HBase engine of `accordion bench`: bench/hbase/run.sh CONFIG.json
# Builds the Maven project if needed, then runs it. One JSON object on stdout; logs on stderr.
# (Other main classes take other arguments: standalone.sh runs accordion.bench.StandaloneHBase.)
# Environment: HBASE_BENCH_HEAP (JVM -Xmx, default 4g), HBASE_BENCH_LOG (root log level,
# default WARN), HBASE_BENCH_JAVA_OPTS (extra JVM flags), HBASE_BENCH_MAIN (the main class,
# default accordion.bench.HBaseBench; filter-oracle.sh runs accordion.bench.FilterOracle).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: $0 CONFIG.json" >&2
  exit 2
fi
JAR="$HERE/target/hbase-bench-0.1.0.jar"
CP_FILE="$HERE/target/classpath.txt"
"$HERE/../maven-build-if-stale.sh" "$HERE" "$JAR"
exec java -Xmx"${HBASE_BENCH_HEAP:-4g}" \
  --add-opens java.base/java.nio=ALL-UNNAMED \
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED \
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  -Dio.netty.tryReflectionSetAccessible=true \
  -Dfile.encoding=UTF-8 \
  -Dlog4j.configuration=log4j-bench.properties \
  -Dbench.log.level="${HBASE_BENCH_LOG:-WARN}" \
  ${HBASE_BENCH_JAVA_OPTS:-} \
  -cp "$JAR:$(cat "$CP_FILE")" "${HBASE_BENCH_MAIN:-accordion.bench.HBaseBench}" "$@"
