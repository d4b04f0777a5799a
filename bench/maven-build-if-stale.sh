#!/usr/bin/env bash
# Shared by the Maven projects' run.sh: bench/maven-build-if-stale.sh PROJECT_DIR JAR [MVN_FLAG...]
# Runs `mvn package` in PROJECT_DIR when JAR or target/classpath.txt is missing, or older than
# pom.xml or any file under src/; Maven's output goes to stderr.
set -euo pipefail
dir="$1"
jar="$2"
shift 2
if [ ! -f "$jar" ] || [ ! -f "$dir/target/classpath.txt" ] || [ "$dir/pom.xml" -nt "$jar" ] \
  || [ -n "$(find "$dir/src" -newer "$jar" -type f -print -quit)" ]; then
  echo "building $dir (mvn package) ..." >&2
  (cd "$dir" && mvn -q -B "$@" -DskipTests package) 1>&2
fi
