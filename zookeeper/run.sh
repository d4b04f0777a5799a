#!/usr/bin/env bash
# A real ZooKeeper server (Apache ZooKeeper 3.9.5 from Maven Central) for machines without
# Debian's zookeeper package:
#   zookeeper/run.sh ZOO_CFG
# Resolves the jars with Maven on the first run (logs on stderr), then runs
# org.apache.zookeeper.server.ZooKeeperServerMain in the foreground with the given config.
# Environment: ZOOKEEPER_HEAP (JVM -Xmx, default 512m), ZOOKEEPER_OFFLINE=1 (never resolve online).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CP_FILE="$HERE/target/classpath.txt"

if [ ! -f "$CP_FILE" ] || [ "$HERE/pom.xml" -nt "$CP_FILE" ]; then
  # Tests may start several servers at once: one resolves, the others wait for it.
  mkdir -p "$HERE/target"
  exec 9>"$HERE/target/.build.lock"
  flock 9
  if [ ! -f "$CP_FILE" ] || [ "$HERE/pom.xml" -nt "$CP_FILE" ]; then
    echo "zookeeper: resolving ZooKeeper 3.9.5 with Maven ..." >&2
    offline=()
    if [ "${ZOOKEEPER_OFFLINE:-0}" = 1 ]; then offline=(-o); fi
    if ! (cd "$HERE" && mvn -q -o -B -Dstyle.color=never package) >/dev/null 2>&1; then
      [ "${ZOOKEEPER_OFFLINE:-0}" = 1 ] && { echo "zookeeper: not in ~/.m2 and ZOOKEEPER_OFFLINE=1" >&2; exit 1; }
      (cd "$HERE" && mvn -q -B -Dstyle.color=never "${offline[@]}" package) 1>&2
    fi
    touch "$CP_FILE"
  fi
  exec 9>&-  # the JVM below must not hold the lock
fi

exec java -Xmx"${ZOOKEEPER_HEAP:-512m}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Djava.net.preferIPv4Stack=true -Dzookeeper.admin.enableServer=false \
  -cp "$(cat "$CP_FILE")" org.apache.zookeeper.server.ZooKeeperServerMain "$@"
