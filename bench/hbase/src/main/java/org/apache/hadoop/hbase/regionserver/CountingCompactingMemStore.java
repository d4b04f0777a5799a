package org.apache.hadoop.hbase.regionserver;

import accordion.bench.Counters;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.CellComparator;
import org.apache.hadoop.hbase.MemoryCompactionPolicy;

/**
 * HBase's CompactingMemStore, unchanged except that it counts in-memory flushes, merges,
 * compactions and flattenings (HBase 2.6 keeps no such counters). Installed through
 * {@code hbase.regionserver.memstore.class}, which HStore consults for compacting memstores. It
 * lives in HBase's package because the overridden hooks are package-private or take
 * package-private types.
 */
public class CountingCompactingMemStore extends CompactingMemStore {

  public CountingCompactingMemStore(Configuration conf, CellComparator c, HStore store,
    RegionServicesForStores regionServices, MemoryCompactionPolicy compactionPolicy)
    throws IOException {
    super(conf, c, store, regionServices, compactionPolicy);
  }

  @Override
  protected void flushInMemory(MutableSegment currActive) {
    Counters.INMEMORY_FLUSHES.increment();
    super.flushInMemory(currActive);
  }

  @Override
  public boolean swapCompactedSegments(VersionedSegmentsList versionedList,
    ImmutableSegment result, boolean merge) {
    boolean swapped = super.swapCompactedSegments(versionedList, result, merge);
    if (swapped) {
      if (merge) {
        Counters.MERGES.increment();
      } else {
        Counters.INMEMORY_COMPACTIONS.increment();
      }
    }
    return swapped;
  }

  @Override
  public void flattenOneSegment(long requesterVersion, MemStoreCompactionStrategy.Action action) {
    Counters.FLATTENS.increment();
    super.flattenOneSegment(requesterVersion, action);
  }
}
