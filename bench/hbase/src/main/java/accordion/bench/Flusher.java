package accordion.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.hbase.DroppedSnapshotException;
import org.apache.hadoop.hbase.regionserver.FlushLifeCycleTracker;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.regionserver.HRegion.FlushResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The region server's MemStoreFlusher (HBase 2.6), rebuilt around HRegion's public API because
 * the original needs a running HRegionServer:
 * <ul>
 * <li>a region whose memstore heap size passes the flush size is queued once (what
 * HRegion.requestFlushIfNeeded does through its region server), and flushed by one of the
 * handler threads (hbase.hstore.flusher.count = 2);</li>
 * <li>when the sum of the regions' memstore heap sizes passes the low water mark (0.95 of the
 * limit), a handler flushes the biggest region, preferring one without too many store files
 * unless the biggest is more than twice as big (flushOneForGlobalPressure);</li>
 * <li>writers call {@link #reclaimMemStoreMemory()} before each batch, which blocks them while
 * the sum is at or above the limit (the high water mark);</li>
 * <li>a queued region with too many store files (hbase.hstore.blockingStoreFiles) gets a
 * compaction request and its flush is delayed, re-queued every blockingWaitTime / 100 ms, for up
 * to hbase.hstore.blockingWaitTime (90 s);</li>
 * <li>after a flush that leaves enough files, a system compaction is requested.</li>
 * </ul>
 */
final class Flusher {
  private static final Logger LOG = LoggerFactory.getLogger(Flusher.class);
  private static final Object WAKEUP = new Object();

  private final List<HRegion> regions;
  private final Compactor compactor;
  private final long flushSize;
  private final long highMark;
  private final long lowMark;
  private final long blockingWaitTime;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  /** Regions queued and not yet taken by a handler (MemStoreFlusher.regionsInQueue). */
  private final Map<HRegion, Entry> regionsInQueue = new HashMap<>();
  /** Regions with a pending request (HRegion.writestate.flushRequested). */
  private final Set<HRegion> flushRequested = ConcurrentHashMap.newKeySet();
  /** Regions a handler is flushing now (HRegion.writestate.flushing). */
  private final Set<HRegion> flushing = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean wakeupPending = new AtomicBoolean();
  private final Object blockSignal = new Object();
  private final ScheduledExecutorService delayer;
  private final List<Thread> handlers = new ArrayList<>();
  private volatile boolean running = true;
  private volatile Throwable fatal;

  Flusher(List<HRegion> regions, Compactor compactor, long flushSize, long memstoreLimit,
    double lowerLimitFraction, long blockingWaitTime, int handlerCount) {
    this.regions = regions;
    this.compactor = compactor;
    this.flushSize = flushSize;
    this.highMark = memstoreLimit;
    this.lowMark = (long) (memstoreLimit * lowerLimitFraction);
    this.blockingWaitTime = blockingWaitTime;
    this.delayer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "flush-delayer");
      t.setDaemon(true);
      return t;
    });
    for (int i = 0; i < handlerCount; i++) {
      Thread t = new Thread(this::handlerLoop, "MemStoreFlusher." + i);
      t.setDaemon(true);
      handlers.add(t);
    }
  }

  void start() {
    handlers.forEach(Thread::start);
  }

  Throwable fatal() {
    return fatal;
  }

  long globalHeapSize() {
    long sum = 0;
    for (HRegion r : regions) {
      sum += r.getMemStoreHeapSize();
    }
    return sum;
  }

  private static final class Entry {
    final HRegion region;
    final List<byte[]> families;
    final long createTime = System.currentTimeMillis();
    int requeueCount;
    volatile boolean cancelled;

    Entry(HRegion region, List<byte[]> families) {
      this.region = region;
      this.families = families;
    }
  }

  /** What HRegion.requestFlushIfNeeded does after a write, with a region server present. */
  void requestFlushIfNeeded(HRegion region) {
    if (region.getMemStoreHeapSize() + region.getMemStoreOffHeapSize() > flushSize) {
      requestFlush(region, null);
    }
  }

  /** FlushRequester.requestFlush: queue the region unless a request is already pending. */
  void requestFlush(HRegion region, List<byte[]> families) {
    if (!flushRequested.add(region)) {
      return;
    }
    synchronized (regionsInQueue) {
      if (!regionsInQueue.containsKey(region)) {
        Entry e = new Entry(region, families);
        regionsInQueue.put(region, e);
        queue.add(e);
      }
    }
  }

  /** MemStoreFlusher.reclaimMemStoreMemory: block while above the limit. */
  void reclaimMemStoreMemory() throws InterruptedException {
    long size = globalHeapSize();
    if (size >= highMark) {
      long start = System.currentTimeMillis();
      synchronized (blockSignal) {
        while (running && globalHeapSize() >= highMark) {
          wakeupFlushThread();
          blockSignal.wait(5000);
        }
      }
      Counters.BLOCKED_MS.add(System.currentTimeMillis() - start);
    } else if (size >= lowMark) {
      wakeupFlushThread();
    }
  }

  private void wakeupFlushThread() {
    if (wakeupPending.compareAndSet(false, true)) {
      queue.add(WAKEUP);
    }
  }

  private void wakeUpIfBlocking() {
    synchronized (blockSignal) {
      blockSignal.notifyAll();
    }
  }

  private void handlerLoop() {
    while (running) {
      Object o;
      try {
        wakeupPending.set(false);
        o = queue.poll(1000, TimeUnit.MILLISECONDS);
        if (o == null || o == WAKEUP) {
          if (globalHeapSize() >= lowMark) {
            if (!flushOneForGlobalPressure()) {
              Thread.sleep(100);
              wakeUpIfBlocking();
            }
            wakeupFlushThread();
          }
          continue;
        }
        Entry e = (Entry) o;
        if (!e.cancelled) {
          flushQueued(e);
        }
      } catch (InterruptedException ie) {
        if (!running) {
          break;
        }
      } catch (Throwable t) {
        LOG.error("flush handler failed", t);
        fatal = t;
        running = false;
        wakeUpIfBlocking();
      }
    }
  }

  private boolean isTooManyStoreFiles(HRegion region) {
    for (HStore s : region.getStores()) {
      if (s.hasTooManyStoreFiles()) {
        return true;
      }
    }
    return false;
  }

  private void flushQueued(Entry e) throws IOException {
    HRegion region = e.region;
    if (isTooManyStoreFiles(region)) {
      if (System.currentTimeMillis() - e.createTime >= blockingWaitTime) {
        LOG.info("Waited {} ms on a compaction to clean up 'too many store files'; proceeding"
          + " with flush of {}", System.currentTimeMillis() - e.createTime,
          region.getRegionInfo().getEncodedName());
      } else {
        if (e.requeueCount == 0) {
          LOG.warn("{} has too many store files; delaying flush up to {} ms",
            region.getRegionInfo().getEncodedName(), blockingWaitTime);
          compactor.requestSystemCompaction(region, "too many store files");
        }
        e.requeueCount++;
        delayer.schedule(() -> {
          if (!e.cancelled && running) {
            queue.add(e);
          }
        }, blockingWaitTime / 100, TimeUnit.MILLISECONDS);
        return;
      }
    }
    flushRegion(region, false, e.families);
  }

  private boolean flushRegion(HRegion region, boolean emergency, List<byte[]> families)
    throws IOException {
    synchronized (regionsInQueue) {
      Entry e = regionsInQueue.remove(region);
      if (e != null && emergency) {
        e.cancelled = true;
        queue.remove(e);
      }
    }
    if (!flushing.add(region)) {
      return false; // another handler is flushing it
    }
    try {
      FlushResult r = region.flushcache(families, false, FlushLifeCycleTracker.DUMMY);
      if (r.isFlushSucceeded()) {
        Counters.FLUSHES.increment();
        if (emergency) {
          Counters.GLOBAL_PRESSURE_FLUSHES.increment();
        }
      }
      if (r.isCompactionNeeded()) {
        compactor.requestSystemCompaction(region, "flush");
      }
    } catch (DroppedSnapshotException ex) {
      // A region server aborts here: the memstore snapshot could not be persisted.
      throw ex;
    } catch (IOException ex) {
      LOG.error("Cache flush failed for region " + region.getRegionInfo().getEncodedName(), ex);
    } finally {
      flushing.remove(region);
      flushRequested.remove(region);
      wakeUpIfBlocking();
    }
    return true;
  }

  private HRegion biggest(List<HRegion> bySize, Set<HRegion> excluded, boolean checkFiles) {
    for (HRegion r : bySize) {
      if (excluded.contains(r) || flushing.contains(r)) {
        continue;
      }
      if (checkFiles && isTooManyStoreFiles(r)) {
        continue;
      }
      return r;
    }
    return null;
  }

  /** MemStoreFlusher.flushOneForGlobalPressure (on-heap memstore). */
  private boolean flushOneForGlobalPressure() throws IOException {
    int n = regions.size();
    long[] sizes = new long[n];
    Integer[] idx = new Integer[n];
    for (int i = 0; i < n; i++) {
      sizes[i] = regions.get(i).getMemStoreHeapSize();
      idx[i] = i;
    }
    java.util.Arrays.sort(idx, (a, b) -> Long.compare(sizes[b], sizes[a]));
    List<HRegion> bySize = new ArrayList<>(n);
    for (Integer i : idx) {
      bySize.add(regions.get(i));
    }
    Set<HRegion> excluded = new HashSet<>();
    while (true) {
      HRegion bestFlushable = biggest(bySize, excluded, true);
      HRegion bestAny = biggest(bySize, excluded, false);
      if (bestAny == null) {
        return false;
      }
      long anySize = bestAny.getMemStoreHeapSize();
      long flushableSize = bestFlushable == null ? 0 : bestFlushable.getMemStoreHeapSize();
      HRegion toFlush =
        (anySize > 2 * flushableSize || bestFlushable == null) ? bestAny : bestFlushable;
      if (toFlush.getMemStoreHeapSize() == 0) {
        return false;
      }
      LOG.debug("Flush of region {} due to global heap pressure; total memstore heap size={}",
        toFlush.getRegionInfo().getEncodedName(), globalHeapSize());
      if (flushRegion(toFlush, true, null)) {
        return true;
      }
      excluded.add(toFlush);
    }
  }

  /** Stops the handlers after their current flush. */
  void stop() throws InterruptedException {
    running = false; // handlers finish their current flush, then see the flag within 1 s
    for (Thread t : handlers) {
      t.join();
    }
    delayer.shutdownNow();
    wakeUpIfBlocking();
  }
}
