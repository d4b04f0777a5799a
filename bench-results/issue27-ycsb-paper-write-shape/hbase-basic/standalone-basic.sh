#!/usr/bin/env bash
# bench/hbase/standalone.sh with HBase's own in-memory compaction on (CompactingMemStore, BASIC: HBase's
# hbase.hregion.compacting.memstore.type for every family that does not set its own), as `bench ycsb
# --hbase-script` takes it. Everything else at HBase's defaults.
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../../../bench/hbase/standalone.sh" "$@" \
  hbase.hregion.compacting.memstore.type=BASIC
