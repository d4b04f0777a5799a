#!/usr/bin/env bash
# A real HDFS mini cluster (Hadoop 3.4.2 MiniDFSCluster) for tests and for people trying HDFS:
#   hdfs/minicluster/run.sh --dir /tmp/hdfs [--datanodes 3] [--fsync] [--conf KEY=VALUE]...
# Builds the Maven project if needed (logs of the build on stderr), then runs it. stdout carries
# only "READY hdfs://127.0.0.1:PORT" and the answers to stdin commands (see README.md).
# Environment: MINI_HDFS_HEAP (JVM -Xmx, default 1g), MINI_HDFS_LOG (root log level, default
# WARN), MINI_HDFS_JAVA_OPTS (extra JVM flags), MINI_HDFS_OFFLINE=1 (never build online).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLASS="$HERE/target/classes/accordion/MiniHdfs.class"
CP_FILE="$HERE/target/classpath.txt"

needs_build() {
  [ ! -f "$CLASS" ] || [ ! -f "$CP_FILE" ] \
    || [ "$HERE/pom.xml" -nt "$CLASS" ] || [ "$HERE/pom.xml" -nt "$CP_FILE" ] \
    || [ -n "$(find "$HERE/src" -type f \( -newer "$CLASS" -o -newer "$CP_FILE" \) -print -quit)" ]
}

build() {
  # Offline (mvn -o) when ~/.m2 already has the Hadoop jars: fast, and works without a network.
  # Online otherwise (the first build of a machine), or if the offline build lacks something.
  local m2="${MAVEN_REPO:-$HOME/.m2/repository}" built=0 offline_log
  echo "mini-hdfs: building $HERE (mvn package) ..." >&2
  if [ -f "$m2/org/apache/hadoop/hadoop-client-minicluster/3.4.2/hadoop-client-minicluster-3.4.2.jar" ]; then
    offline_log="$(mktemp)"
    if (cd "$HERE" && mvn -q -o -B -Dstyle.color=never -DskipTests package) >"$offline_log" 2>&1; then
      built=1
    elif [ "${MINI_HDFS_OFFLINE:-0}" = 1 ]; then
      cat "$offline_log" >&2
    else
      echo "mini-hdfs: offline build failed; building online" >&2
    fi
    rm -f "$offline_log"
  fi
  if [ "$built" = 0 ]; then
    if [ "${MINI_HDFS_OFFLINE:-0}" = 1 ]; then
      echo "mini-hdfs: no offline build possible and MINI_HDFS_OFFLINE=1" >&2
      exit 1
    fi
    echo "mini-hdfs: building online (the first build downloads ~125 MB into $m2)" >&2
    (cd "$HERE" && mvn -q -B -Dstyle.color=never -DskipTests package) 1>&2
  fi
  # mvn leaves up-to-date outputs alone; make the freshness check hold from now on.
  touch "$CLASS" "$CP_FILE"
}

if needs_build; then
  # Tests may start several clusters at once: one builds, the others wait for it.
  mkdir -p "$HERE/target"
  exec 9>"$HERE/target/.build.lock"
  flock 9
  if needs_build; then build; fi
  exec 9>&-  # the JVM below must not hold the lock
fi

# Hadoop 3.4 on Java 17 reflects into java.base (the DataNode's direct buffers, the RPC layer,
# Jetty/Guice of the web UIs); the same opens as Hadoop's own scripts use for JDK 17.
exec java -Xmx"${MINI_HDFS_HEAP:-1g}" \
  -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Djava.net.preferIPv4Stack=true \
  --add-opens java.base/java.lang=ALL-UNNAMED \
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED \
  --add-opens java.base/java.io=ALL-UNNAMED \
  --add-opens java.base/java.net=ALL-UNNAMED \
  --add-opens java.base/java.nio=ALL-UNNAMED \
  --add-opens java.base/java.util=ALL-UNNAMED \
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
  --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED \
  --add-opens java.base/java.security=ALL-UNNAMED \
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.base/sun.nio.cs=ALL-UNNAMED \
  --add-opens java.base/sun.security.util=ALL-UNNAMED \
  --add-opens java.base/sun.net.dns=ALL-UNNAMED \
  --add-opens java.base/sun.net.util=ALL-UNNAMED \
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
  --add-exports java.base/sun.net.dns=ALL-UNNAMED \
  -Dio.netty.tryReflectionSetAccessible=true \
  -Dminihdfs.log.level="${MINI_HDFS_LOG:-WARN}" \
  ${MINI_HDFS_JAVA_OPTS:-} \
  -cp "$HERE/target/classes:$(cat "$CP_FILE")" accordion.MiniHdfs "$@"
