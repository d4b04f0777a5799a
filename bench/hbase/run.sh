#!/usr/bin/env bash
# Real HBase engine of `accordion bench`: bench/hbase/run.sh CONFIG.json
# Builds the Maven project if needed, then runs it. One JSON object on stdout; logs on stderr.
# Environment: HBASE_BENCH_HEAP (JVM -Xmx, default 4g), HBASE_BENCH_LOG (root log level,
# default WARN), HBASE_BENCH_JAVA_OPTS (extra JVM flags), HBASE_BENCH_MAIN (the main class,
# default accordion.bench.HBaseBench; filter-oracle.sh runs accordion.bench.FilterOracle).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -ne 1 ]; then
  echo "usage: $0 CONFIG.json" >&2
  exit 2
fi
JAR="$HERE/target/hbase-bench-0.1.0.jar"
CP_FILE="$HERE/target/classpath.txt"
needs_build=0
if [ ! -f "$JAR" ] || [ ! -f "$CP_FILE" ] || [ "$HERE/pom.xml" -nt "$JAR" ]; then
  needs_build=1
elif [ -n "$(find "$HERE/src" -newer "$JAR" -type f -print -quit)" ]; then
  needs_build=1
fi
if [ "$needs_build" = 1 ]; then
  echo "building $HERE (mvn package) ..." >&2
  (cd "$HERE" && mvn -q -B -DskipTests package) 1>&2
fi
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
  -cp "$JAR:$(cat "$CP_FILE")" "${HBASE_BENCH_MAIN:-accordion.bench.HBaseBench}" "$1"
