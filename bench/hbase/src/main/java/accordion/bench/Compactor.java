package accordion.bench;

import java.io.IOException;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.regionserver.compactions.CompactionContext;
import org.apache.hadoop.hbase.regionserver.compactions.CompactionLifeCycleTracker;
import org.apache.hadoop.hbase.regionserver.throttle.NoLimitThroughputController;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The region server's CompactSplit, reduced to system compactions: one "short" and one "long"
 * compaction thread (hbase.regionserver.thread.compaction.small/large = 1), each with a priority
 * queue ordered by store priority then arrival; selection happens when a request runs; a request
 * whose selection is larger than the throttle point moves to the long pool; a store still above
 * its compaction threshold after a compaction is enqueued again. No splits (the table's regions
 * are fixed) and no throughput limit (NoLimitThroughputController, see README.md).
 */
final class Compactor {
  private static final Logger LOG = LoggerFactory.getLogger(Compactor.class);

  private final ThreadPoolExecutor shortPool;
  private final ThreadPoolExecutor longPool;
  private final AtomicLong seq = new AtomicLong();
  private volatile boolean stopped;

  Compactor() {
    Comparator<Runnable> order = (a, b) -> {
      Runner x = (Runner) a;
      Runner y = (Runner) b;
      int c = Integer.compare(x.queuedPriority, y.queuedPriority);
      return c != 0 ? c : Long.compare(x.seqNo, y.seqNo);
    };
    shortPool = pool("compact-short", order);
    longPool = pool("compact-long", order);
  }

  private static ThreadPoolExecutor pool(String name, Comparator<Runnable> order) {
    AtomicInteger n = new AtomicInteger();
    return new ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS,
      new PriorityBlockingQueue<>(16, order), r -> {
        Thread t = new Thread(r, name + "-" + n.getAndIncrement());
        t.setDaemon(true);
        return t;
      });
  }

  /** As CompactSplit.requestSystemCompaction: queue every store; select when run. */
  void requestSystemCompaction(HRegion region, String why) {
    if (stopped) {
      return;
    }
    for (HStore store : region.getStores()) {
      requestSystemCompaction(region, store, why);
    }
  }

  private void requestSystemCompaction(HRegion region, HStore store, String why) {
    if (stopped) {
      return;
    }
    LOG.debug("System compaction requested for {}: {}", store, why);
    try {
      shortPool.execute(new Runner(region, store, shortPool));
    } catch (RejectedExecutionException e) {
      // stopping
    }
  }

  /** Drops queued requests and waits for the running compactions to finish. */
  void stop() throws InterruptedException {
    stopped = true;
    shortPool.shutdown();
    longPool.shutdown();
    while (!shortPool.awaitTermination(10, TimeUnit.SECONDS)
      || !longPool.awaitTermination(10, TimeUnit.SECONDS)) {
      LOG.info("waiting for running compactions to finish");
    }
  }

  private final class Runner implements Runnable {
    final HRegion region;
    final HStore store;
    final long seqNo = seq.getAndIncrement();
    int queuedPriority;
    ThreadPoolExecutor parent;

    Runner(HRegion region, HStore store, ThreadPoolExecutor parent) {
      this.region = region;
      this.store = store;
      this.parent = parent;
      this.queuedPriority = store.getCompactPriority();
    }

    @Override
    public void run() {
      if (stopped) {
        return;
      }
      try {
        int oldPriority = queuedPriority;
        queuedPriority = store.getCompactPriority();
        if (queuedPriority > oldPriority) {
          // Store priority decreased while queued; requeue so it does not block others.
          parent.execute(this);
          return;
        }
        Optional<CompactionContext> selected =
          store.requestCompaction(queuedPriority, CompactionLifeCycleTracker.DUMMY, null);
        if (!selected.isPresent()) {
          return;
        }
        CompactionContext c = selected.get();
        ThreadPoolExecutor pool =
          store.throttleCompaction(c.getRequest().getSize()) ? longPool : shortPool;
        if (parent == shortPool && pool == longPool) {
          store.cancelRequestedCompaction(c);
          parent = longPool;
          parent.execute(this);
          return;
        }
        boolean completed =
          region.compact(c, store, NoLimitThroughputController.INSTANCE, null);
        if (completed && store.getCompactPriority() <= 0) {
          requestSystemCompaction(region, store, "Recursive enqueue");
        }
      } catch (IOException e) {
        LOG.error("Compaction failed for " + store, e);
      } catch (RuntimeException e) {
        if (!stopped) {
          LOG.error("Compaction failed for " + store, e);
        }
      }
    }
  }
}
