package accordion.bench;

import java.util.concurrent.atomic.LongAdder;

/**
 * Process-wide event counters that HBase itself does not keep without a region server (its
 * MetricsRegionServer needs one). Incremented by the subclasses in this program that wrap HBase's
 * own code paths; see README.md, "How counters are obtained".
 */
public final class Counters {
  /** Disk flushes that wrote a file (FlushResult.isFlushSucceeded()). */
  public static final LongAdder FLUSHES = new LongAdder();
  /** Of those, flushes picked because the global memstore passed its low water mark. */
  public static final LongAdder GLOBAL_PRESSURE_FLUSHES = new LongAdder();
  /** In-memory flushes: active segment pushed into the compaction pipeline. */
  public static final LongAdder INMEMORY_FLUSHES = new LongAdder();
  /** In-memory merges whose result replaced the pipeline. */
  public static final LongAdder MERGES = new LongAdder();
  /** In-memory compactions (data compactions) whose result replaced the pipeline. */
  public static final LongAdder INMEMORY_COMPACTIONS = new LongAdder();
  /** Segments flattened (skip list to array/chunk map index). */
  public static final LongAdder FLATTENS = new LongAdder();
  /** Disk compactions completed. */
  public static final LongAdder COMPACTIONS = new LongAdder();
  /** Bytes of the files written by disk compactions. */
  public static final LongAdder BYTES_COMPACTED = new LongAdder();
  /** Bytes of the files read by disk compactions. */
  public static final LongAdder BYTES_COMPACTED_INPUT = new LongAdder();
  /** Batches retried because a region answered RegionTooBusyException. */
  public static final LongAdder BUSY_RETRIES = new LongAdder();
  /** Milliseconds writers spent blocked above the global memstore limit. */
  public static final LongAdder BLOCKED_MS = new LongAdder();

  private static final Object COMPACTION_LOCK = new Object();

  /** Records one completed disk compaction (its three counters change together). */
  public static void compaction(long inputBytes, long outputBytes) {
    synchronized (COMPACTION_LOCK) {
      COMPACTIONS.increment();
      BYTES_COMPACTED.add(outputBytes);
      BYTES_COMPACTED_INPUT.add(inputBytes);
    }
  }

  /** {compactions, bytes written, bytes read}, consistent with each other. */
  public static long[] compactionSnapshot() {
    synchronized (COMPACTION_LOCK) {
      return new long[] { COMPACTIONS.sum(), BYTES_COMPACTED.sum(), BYTES_COMPACTED_INPUT.sum() };
    }
  }

  private Counters() {
  }
}
