package accordion.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.Abortable;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.MemoryCompactionPolicy;
import org.apache.hadoop.hbase.RegionTooBusyException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionInfoBuilder;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.io.hfile.BlockCache;
import org.apache.hadoop.hbase.io.hfile.BlockCacheFactory;
import org.apache.hadoop.hbase.regionserver.AdaptiveMemStoreCompactionStrategy;
import org.apache.hadoop.hbase.regionserver.ChunkCreator;
import org.apache.hadoop.hbase.regionserver.CompactingMemStore;
import org.apache.hadoop.hbase.regionserver.CountingCompactingMemStore;
import org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.regionserver.MemStoreCompactionStrategy;
import org.apache.hadoop.hbase.regionserver.MemStoreLAB;
import org.apache.hadoop.hbase.regionserver.OperationStatus;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.CommonFSUtils;
import org.apache.hadoop.hbase.wal.AbstractWALRoller;
import org.apache.hadoop.hbase.wal.WAL;
import org.apache.hadoop.hbase.wal.WALFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The "real HBase" engine of {@code accordion bench}: HBase 2.6.4's HRegions run in this process
 * (no region server, no ZooKeeper), pre-split, sharing one WAL, with a flusher, a compactor and a
 * WAL roller that act as a region server's would. {@code HBaseBench CONFIG.json} prints one JSON
 * object on stdout; everything else goes to stderr. See README.md.
 */
public final class HBaseBench {
  private static final Logger LOG = LoggerFactory.getLogger(HBaseBench.class);
  /** HConstants.RETRY_BACKOFF times hbase.client.pause (100 ms), as the client retries. */
  private static final int[] RETRY_BACKOFF = HConstants.RETRY_BACKOFF;
  private static final long CLIENT_PAUSE_MS = 100;

  private final Config cfg;
  private final byte[] family;
  private final byte[][] qualifiers;
  private KeyFile keys;
  private byte[][] splits;
  private final List<HRegion> regions = new ArrayList<>();
  private Flusher flusher;
  private final AtomicLong next = new AtomicLong();
  /** Operations of the phase in progress (the load phase, then the measured one). */
  private volatile long phaseOps;
  /** Whether the measured phase (not the load) is running. */
  private volatile boolean measuring;
  /** Set when the measured reader has done its gets: the writers stop then. */
  private volatile boolean readerDone;
  /**
   * Whether writes are held to write_rate (the measured phase only): operation i is due
   * (i + 1) / write_rate seconds after pacedSince (System.nanoTime), as in the Rust driver.
   * pacedSince is written before the volatile pacing flag and read after it.
   */
  private volatile boolean pacing;
  private long pacedSince;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();

  private HBaseBench(Config cfg) {
    this.cfg = cfg;
    this.family = Bytes.toBytes(cfg.family);
    this.qualifiers = new byte[cfg.fields][];
    for (int f = 0; f < cfg.fields; f++) {
      qualifiers[f] = Bytes.toBytes("field" + f);
    }
  }

  /** A get of the row: its fields by name (named_gets), or the whole row. */
  private Get newGet(byte[] row) {
    Get g = new Get(row);
    if (cfg.namedGets) {
      for (byte[] q : qualifiers) {
        g.addColumn(family, q);
      }
    }
    return g;
  }

  public static void main(String[] args) {
    PrintStream stdout = System.out;
    System.setOut(System.err); // anything printed by libraries goes to stderr
    if (args.length != 1) {
      System.err.println("usage: HBaseBench CONFIG.json");
      System.exit(2);
    }
    int rc = 0;
    try {
      Config cfg = Config.load(Paths.get(args[0]));
      String json = new HBaseBench(cfg).run();
      stdout.println(json);
      stdout.flush();
    } catch (Throwable t) {
      System.err.println("hbase bench failed: " + t);
      t.printStackTrace(System.err);
      rc = 1;
    }
    System.exit(rc);
  }

  private static MemoryCompactionPolicy policyOf(String p) {
    return MemoryCompactionPolicy.valueOf(p.toUpperCase(Locale.ROOT));
  }

  private Configuration hbaseConf(Path root) {
    Configuration conf = HBaseConfiguration.create();
    conf.set(HConstants.HBASE_DIR, root.toUri().toString());
    conf.set("hbase.tmp.dir", root.resolve("tmp").toString());
    conf.set("hbase.wal.provider", "filesystem"); // FSHLog
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.setLong(HConstants.HREGION_MEMSTORE_FLUSH_SIZE, cfg.flushSize);
    // Make the region server's derived sizes (MSLAB pool, maxlogs) follow memstore_limit.
    long maxHeap = Runtime.getRuntime().maxMemory();
    conf.setFloat("hbase.regionserver.global.memstore.size",
      (float) ((double) cfg.memstoreLimit / maxHeap));
    conf.setFloat("hfile.block.cache.size", (float) (cfg.blockCacheBytes > 0
      ? (double) cfg.blockCacheBytes / maxHeap : cfg.blockCacheFraction));
    conf.set(CompactingMemStore.COMPACTING_MEMSTORE_TYPE_KEY, policyOf(cfg.policy).name());
    conf.setDouble(CompactingMemStore.IN_MEMORY_FLUSH_THRESHOLD_FACTOR_KEY,
      cfg.inmemoryFlushShare);
    conf.setInt(MemStoreCompactionStrategy.COMPACTING_MEMSTORE_THRESHOLD_KEY,
      cfg.pipelineSegmentsLimit);
    conf.setDouble(AdaptiveMemStoreCompactionStrategy.ADAPTIVE_COMPACTION_THRESHOLD_KEY,
      cfg.adaptiveThreshold);
    if (policyOf(cfg.policy) != MemoryCompactionPolicy.NONE) {
      // Same class as HBase's, plus counters (HStore reads this key for compacting memstores).
      conf.setClass(HStore.MEMSTORE_CLASS_NAME, CountingCompactingMemStore.class,
        CompactingMemStore.class);
    }
    // WAL files roll at half the WAL block size; a region server on HDFS (128 MiB blocks)
    // uses 2 x 128 MiB, on the local file system 2 x 32 MiB. Default to the HDFS value.
    conf.setLong("hbase.regionserver.hlog.blocksize",
      cfg.walBlockSize > 0 ? cfg.walBlockSize : 256L << 20);
    return conf;
  }

  String run() throws Exception {
    long t0 = System.nanoTime();
    keys = KeyFile.load(cfg.keysFile);
    if (keys.size() < cfg.ops) {
      throw new IllegalArgumentException(
        cfg.keysFile + " holds " + keys.size() + " keys, fewer than ops = " + cfg.ops);
    }
    if (cfg.regions > 1) {
      KeyFile s = KeyFile.load(cfg.splitKeysFile);
      if (s.size() != cfg.regions - 1) {
        throw new IllegalArgumentException(cfg.splitKeysFile + " holds " + s.size()
          + " split keys; regions = " + cfg.regions + " needs " + (cfg.regions - 1));
      }
      splits = new byte[s.size()][];
      for (int i = 0; i < s.size(); i++) {
        splits[i] = s.get(i);
        if (i > 0 && Bytes.compareTo(splits[i - 1], splits[i]) >= 0) {
          throw new IllegalArgumentException("split keys must be strictly ascending");
        }
      }
    } else {
      splits = new byte[0][];
    }
    LOG.info("loaded {} keys and {} split keys in {} ms", keys.size(), splits.length,
      (System.nanoTime() - t0) / 1_000_000);

    Path root = Paths.get(cfg.dir).toAbsolutePath();
    if (Files.exists(root)) {
      try (Stream<Path> s = Files.list(root)) {
        if (s.findAny().isPresent()) {
          throw new IOException("dir " + root + " exists and is not empty");
        }
      }
    }
    Files.createDirectories(root);
    Configuration conf = hbaseConf(root);

    // What HRegionServer.initializeMemStoreChunkCreator does (MSLAB chunk pool).
    ChunkCreator.initialize(conf.getInt(MemStoreLAB.CHUNK_SIZE_KEY, MemStoreLAB.CHUNK_SIZE_DEFAULT),
      false, cfg.memstoreLimit,
      conf.getFloat(MemStoreLAB.CHUNK_POOL_MAXSIZE_KEY, MemStoreLAB.POOL_MAX_SIZE_DEFAULT),
      conf.getFloat(MemStoreLAB.CHUNK_POOL_INITIALSIZE_KEY, MemStoreLAB.POOL_INITIAL_SIZE_DEFAULT),
      null, conf.getFloat(MemStoreLAB.INDEX_CHUNK_SIZE_PERCENTAGE_KEY,
        MemStoreLAB.INDEX_CHUNK_SIZE_PERCENTAGE_DEFAULT));
    BlockCache blockCache = BlockCacheFactory.createBlockCache(conf);

    TableName tn = TableName.valueOf(cfg.table);
    TableDescriptor td = TableDescriptorBuilder.newBuilder(tn)
      .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(family)
        .setInMemoryCompaction(policyOf(cfg.policy)).setBlocksize(cfg.blockSize).build())
      .setDurability(Durability.valueOf(cfg.durability))
      .setRegionSplitPolicyClassName(DisabledRegionSplitPolicy.class.getName()).build();

    List<RegionInfo> infos = new ArrayList<>();
    for (int i = 0; i < cfg.regions; i++) {
      infos.add(RegionInfoBuilder.newBuilder(tn)
        .setStartKey(i == 0 ? HConstants.EMPTY_START_ROW : splits[i - 1])
        .setEndKey(i == cfg.regions - 1 ? HConstants.EMPTY_END_ROW : splits[i]).setRegionId(1)
        .build());
    }

    WALFactory wals = new WALFactory(conf, "bench");
    WAL wal = wals.getWAL(infos.get(0)); // the filesystem provider has one WAL for all regions
    FileSystem fs = CommonFSUtils.getRootDir(conf).getFileSystem(conf);
    org.apache.hadoop.fs.Path rootDir = CommonFSUtils.getRootDir(conf);
    org.apache.hadoop.fs.Path tableDir = CommonFSUtils.getTableDir(rootDir, tn);
    Map<String, HRegion> byEncodedName = new HashMap<>();
    for (RegionInfo info : infos) {
      HRegion.createRegionDir(conf, info, rootDir);
      BenchRegion r = new BenchRegion(tableDir, wal, fs, conf, info, td, null);
      r.setBlockCache(blockCache);
      r.initialize();
      regions.add(r);
      byEncodedName.put(info.getEncodedName(), r);
    }
    LOG.info("opened {} regions under {} (policy {}, durability {})", regions.size(), root,
      cfg.policy, cfg.durability);

    Compactor compactor = new Compactor();
    flusher = new Flusher(regions, compactor, cfg.flushSize, cfg.memstoreLimit,
      conf.getFloat("hbase.regionserver.global.memstore.size.lower.limit", 0.95f),
      conf.getLong("hbase.hstore.blockingWaitTime", 90000), cfg.flushThreads);
    AtomicReference<Throwable> rollerAbort = new AtomicReference<>();
    Abortable abortable = new Abortable() {
      @Override
      public void abort(String why, Throwable e) {
        LOG.error("WAL roller aborted: " + why, e);
        rollerAbort.compareAndSet(null, e == null ? new IOException(why) : e);
      }

      @Override
      public boolean isAborted() {
        return rollerAbort.get() != null;
      }
    };
    AbstractWALRoller<Abortable> roller =
      new AbstractWALRoller<Abortable>("LogRoller", conf, abortable) {
        @Override
        protected void scheduleFlush(String encodedRegionName, List<byte[]> families) {
          HRegion r = byEncodedName.get(encodedRegionName);
          if (r != null) {
            flusher.requestFlush(r, families); // flush to let old WAL files be archived
          }
        }
      };
    roller.setDaemon(true);
    roller.addWAL(wal);
    roller.start();
    flusher.start();

    // ---- load phase (reader-under-writes presets) ----
    KeyFile readKeys = null;
    if (cfg.loadOps > 0) {
      KeyFile mainKeys = keys;
      keys = KeyFile.load(cfg.loadKeysFile);
      readKeys = KeyFile.load(cfg.readKeysFile);
      phaseOps = Math.min(cfg.loadOps, keys.size());
      List<Thread> loaders = new ArrayList<>();
      for (int t = 0; t < cfg.threads; t++) {
        Thread th = new Thread(new Worker(), "loader-" + t);
        loaders.add(th);
        th.start();
      }
      for (Thread th : loaders) {
        th.join();
      }
      if (failure.get() != null) {
        throw new IOException("a loader thread failed", failure.get());
      }
      LOG.info("loaded {} rows", phaseOps);
      keys = mainKeys;
      next.set(0);
    }
    phaseOps = cfg.ops;
    // Every figure counts the measured phase alone: what the load counted is taken off.
    long[] compaction0 = Counters.compactionSnapshot();
    long flushes0 = Counters.FLUSHES.sum();
    long inmemoryFlushes0 = Counters.INMEMORY_FLUSHES.sum();
    long merges0 = Counters.MERGES.sum();
    long inmemoryCompactions0 = Counters.INMEMORY_COMPACTIONS.sum();
    long bytesFlushed0 = bytesFlushed();
    long[] walBefore = walFiles(root);

    // ---- operation phase ----
    List<Worker> workers = new ArrayList<>();
    for (int t = 0; t < cfg.threads; t++) {
      workers.add(new Worker());
    }
    Thread progress = new Thread(this::progressLoop, "progress");
    progress.setDaemon(true);
    measuring = true;
    double cpuBefore = cpuSeconds();
    long start = System.nanoTime();
    if (cfg.writeRate > 0) {
      pacedSince = start;
      pacing = true;
    }
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < workers.size(); t++) {
      Thread th = new Thread(workers.get(t), "client-" + t);
      threads.add(th);
      th.start();
    }
    progress.start();
    Reader reader = null;
    Thread readerThread = null;
    if (readKeys != null) {
      reader = new Reader(readKeys, cfg.readOps > 0 ? cfg.readOps : readKeys.size());
      readerThread = new Thread(reader, "reader");
      readerThread.start();
    }
    for (Thread th : threads) {
      th.join();
    }
    if (readerThread != null) {
      readerThread.join();
    }
    long end = System.nanoTime();
    double cpu = cpuSeconds() - cpuBefore;
    progress.interrupt();
    if (failure.get() != null) {
      throw new IOException("a client thread failed", failure.get());
    }
    if (flusher.fatal() != null) {
      throw new IOException("the flusher failed", flusher.fatal());
    }

    // ---- counters, read right after the operation phase ----
    Histogram puts = new Histogram(3_600_000_000L, 3);
    Histogram gets = new Histogram(3_600_000_000L, 3);
    long userBytes = 0;
    long userBytesLogical = 0;
    long found = 0;
    long opsDone = 0;
    for (Worker w : workers) {
      opsDone += w.opsDone;
      puts.add(w.putLatency);
      gets.add(w.getLatency);
      userBytes += w.userBytes;
      userBytesLogical += w.userBytesLogical;
      found += w.found;
    }
    if (reader != null) {
      gets.add(reader.latency);
      found += reader.found;
      opsDone += reader.latency.getTotalCount();
    }
    long[] compactionNow = Counters.compactionSnapshot();
    long[] compaction = new long[compactionNow.length];
    for (int i = 0; i < compaction.length; i++) {
      compaction[i] = compactionNow[i] - compaction0[i];
    }
    long flushes = Counters.FLUSHES.sum() - flushes0;
    long bytesFlushed = bytesFlushed() - bytesFlushed0;
    long[] walNow = walFiles(root);
    // WAL files created in the phase and the bytes written to them (no WAL file is removed here).
    long[] wal0 = { walNow[0] - walBefore[0], walNow[1] - walBefore[1] };
    double seconds = (end - start) / 1e9;
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("engine", "hbase");
    out.put("policy", cfg.policy);
    out.put("preset", cfg.preset);
    out.put("ops", opsDone);
    out.put("seconds", seconds);
    out.put("ops_per_sec", opsDone / seconds);
    out.put("flushes", flushes);
    out.put("inmemory_flushes", Counters.INMEMORY_FLUSHES.sum() - inmemoryFlushes0);
    out.put("merges", Counters.MERGES.sum() - merges0);
    out.put("inmemory_compactions", Counters.INMEMORY_COMPACTIONS.sum() - inmemoryCompactions0);
    out.put("compactions", compaction[0]);
    out.put("wal_files", wal0[0]);
    out.put("bytes_wal", wal0[1]);
    out.put("bytes_flushed", bytesFlushed);
    out.put("bytes_compacted", compaction[1]);
    out.put("user_bytes", userBytes);
    out.put("write_amplification",
      userBytes == 0 ? 0.0 : (double) (bytesFlushed + compaction[1]) / userBytes);
    Map<String, Object> lat = new LinkedHashMap<>();
    if (puts.getTotalCount() > 0) {
      lat.put("put", percentiles(puts));
    }
    if (gets.getTotalCount() > 0) {
      lat.put("get", percentiles(gets));
    }
    out.put("latency_us", lat);
    out.put("peak_rss_bytes", peakRssBytes());
    out.put("cpu_seconds", cpu);
    // Extras, beyond the fixed protocol.
    out.put("flattenings", Counters.FLATTENS.sum());
    out.put("global_pressure_flushes", Counters.GLOBAL_PRESSURE_FLUSHES.sum());
    out.put("bytes_compacted_input", compaction[2]);
    out.put("user_bytes_logical", userBytesLogical);
    out.put("gets_found", found);
    out.put("blocked_ms", Counters.BLOCKED_MS.sum());
    out.put("busy_retries", Counters.BUSY_RETRIES.sum());
    out.put("regions", cfg.regions);
    out.put("threads", cfg.threads);
    out.put("durability", cfg.durability);
    out.put("hbase_version", org.apache.hadoop.hbase.util.VersionInfo.getVersion());

    // ---- shutdown ----
    LOG.info("operation phase done: {} ops in {} s; closing", cfg.ops,
      String.format(Locale.ROOT, "%.2f", seconds));
    flusher.stop(); // first, so that no new compaction requests arrive
    compactor.stop();
    roller.close();
    for (HRegion r : regions) {
      r.close();
    }
    wals.close();
    blockCache.shutdown();
    if (!cfg.keepDir) {
      deleteRecursively(root);
    }
    StringBuilder b = new StringBuilder();
    writeJson(b, out);
    return b.toString();
  }

  private int route(byte[] row) {
    int lo = 0;
    int hi = splits.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (Bytes.compareTo(splits[mid], row) <= 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * The measured reader of the reader-under-writes presets: its gets, one by one, in the read keys
   * file's order; the writers stop when it is done (as in the Rust driver).
   */
  private final class Reader implements Runnable {
    final Histogram latency = new Histogram(3_600_000_000L, 3);
    final KeyFile readKeys;
    final long gets;
    long found;

    Reader(KeyFile readKeys, long gets) {
      this.readKeys = readKeys;
      this.gets = gets;
    }

    @Override
    public void run() {
      try {
        for (long i = 0; i < gets && failure.get() == null; i++) {
          byte[] row = readKeys.get(i % readKeys.size());
          long t = System.nanoTime();
          Result r = regions.get(route(row)).get(newGet(row));
          latency.recordValue(Math.max(1, (System.nanoTime() - t) / 1000));
          if (!r.isEmpty()) {
            found++;
          }
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      } finally {
        readerDone = true;
      }
    }
  }

  /** Bytes the regions' flushes have written so far. */
  private long bytesFlushed() {
    long bytes = 0;
    for (HRegion r : regions) {
      for (HStore s : r.getStores()) {
        bytes += s.getFlushedOutputFileSize();
      }
    }
    return bytes;
  }

  /** One client thread: takes op indexes from the shared counter; buffers writes. */
  private final class Worker implements Runnable {
    final Histogram putLatency = new Histogram(3_600_000_000L, 3);
    final Histogram getLatency = new Histogram(3_600_000_000L, 3);
    long userBytes;
    long userBytesLogical;
    long found;
    /** Operations this thread did (a reader-under-writes run ends them early). */
    long opsDone;
    final List<Put> buffer = new ArrayList<>();
    /** The buffer's last (highest) operation index. */
    long lastIndex;

    @Override
    public void run() {
      try {
        long readThreshold = Math.round(cfg.readRatio * 1000);
        while (failure.get() == null) {
          long i = next.getAndIncrement();
          // With a measured reader, the writers cycle through their keys until it is done.
          boolean untilReaderDone = measuring && cfg.readOps > 0;
          if (readerDone || (i >= phaseOps && !untilReaderDone)) {
            break;
          }
          opsDone++;
          byte[] row = keys.get(untilReaderDone ? i % keys.size() : i);
          if (Long.remainderUnsigned(i * 2654435761L, 1000) < readThreshold) {
            long t = System.nanoTime();
            Result r = regions.get(route(row)).get(newGet(row));
            getLatency.recordValue(Math.max(1, (System.nanoTime() - t) / 1000));
            if (!r.isEmpty()) {
              found++;
            }
          } else {
            Put p = new Put(row);
            for (int f = 0; f < cfg.fields; f++) {
              byte[] v = new byte[cfg.valueSize];
              java.util.Arrays.fill(v, (byte) ('a' + (int) ((i + f) % 26)));
              p.addColumn(family, qualifiers[f], v);
              int logical = row.length + family.length + qualifiers[f].length + v.length;
              userBytesLogical += logical;
              // Serialized KeyValue: key length (4) + value length (4) + row length (2) +
              // family length (1) + timestamp (8) + type (1) + the bytes themselves.
              userBytes += 20 + logical;
            }
            buffer.add(p);
            lastIndex = i;
            if (buffer.size() >= cfg.batchRows) {
              sendBatch();
            }
          }
        }
        if (!buffer.isEmpty() && failure.get() == null) {
          sendBatch();
        }
      } catch (Throwable t) {
        failure.compareAndSet(null, t);
      }
    }

    /** One client flush of the write buffer: one batchMutate per region touched. */
    private void sendBatch() throws IOException, InterruptedException {
      if (pacing) {
        // Not before the buffer's last row is due (write_rate).
        long wait = pacedSince + (long) ((lastIndex + 1) * 1e9 / cfg.writeRate) - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
      }
      long t = System.nanoTime();
      flusher.reclaimMemStoreMemory();
      Map<Integer, List<Mutation>> byRegion = new LinkedHashMap<>();
      for (Put p : buffer) {
        byRegion.computeIfAbsent(route(p.getRow()), k -> new ArrayList<>()).add(p);
      }
      for (Map.Entry<Integer, List<Mutation>> e : byRegion.entrySet()) {
        mutate(regions.get(e.getKey()), e.getValue().toArray(new Mutation[0]));
      }
      buffer.clear();
      putLatency.recordValue(Math.max(1, (System.nanoTime() - t) / 1000));
    }

    private void mutate(HRegion region, Mutation[] ms) throws IOException, InterruptedException {
      int tries = 0;
      while (true) {
        try {
          OperationStatus[] st = region.batchMutate(ms);
          for (OperationStatus s : st) {
            if (s.getOperationStatusCode() != HConstants.OperationStatusCode.SUCCESS) {
              throw new IOException("put failed: " + s.getOperationStatusCode() + " "
                + s.getExceptionMsg());
            }
          }
          break;
        } catch (RegionTooBusyException e) {
          // The region is above flush size x hbase.hregion.memstore.block.multiplier;
          // the client backs off and retries.
          Counters.BUSY_RETRIES.increment();
          flusher.requestFlush(region, null);
          Thread.sleep(CLIENT_PAUSE_MS * RETRY_BACKOFF[Math.min(tries, RETRY_BACKOFF.length - 1)]);
          tries++;
        }
      }
      flusher.requestFlushIfNeeded(region);
    }
  }

  private void progressLoop() {
    long last = 0;
    long lastT = System.nanoTime();
    while (true) {
      try {
        Thread.sleep(10_000);
      } catch (InterruptedException e) {
        return;
      }
      long done = Math.min(next.get(), cfg.ops);
      long now = System.nanoTime();
      LOG.info(String.format(Locale.ROOT,
        "progress: %d/%d ops, %.0f ops/s; memstore %.1f MiB; flushes %d, compactions %d,"
          + " in-memory flushes %d",
        done, cfg.ops, (done - last) / ((now - lastT) / 1e9), flusher.globalHeapSize() / 1048576.0,
        Counters.FLUSHES.sum(), Counters.COMPACTIONS.sum(), Counters.INMEMORY_FLUSHES.sum()));
      last = done;
      lastT = now;
    }
  }

  private static Map<String, Object> percentiles(Histogram h) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("p50", h.getValueAtPercentile(50.0));
    m.put("p75", h.getValueAtPercentile(75.0));
    m.put("p90", h.getValueAtPercentile(90.0));
    m.put("p95", h.getValueAtPercentile(95.0));
    m.put("p99", h.getValueAtPercentile(99.0));
    m.put("p999", h.getValueAtPercentile(99.9));
    return m;
  }

  /** WAL files created so far (live plus archived) and their total size. */
  private static long[] walFiles(Path root) throws IOException {
    long n = 0;
    long bytes = 0;
    for (String sub : new String[] { HConstants.HREGION_LOGDIR_NAME,
      HConstants.HREGION_OLDLOGDIR_NAME }) {
      Path d = root.resolve(sub);
      if (!Files.isDirectory(d)) {
        continue;
      }
      try (Stream<Path> s = Files.walk(d)) {
        for (Path p : (Iterable<Path>) s::iterator) {
          String name = p.getFileName().toString();
          if (Files.isRegularFile(p) && !name.startsWith(".") && !name.endsWith(".crc")) {
            n++;
            bytes += Files.size(p);
          }
        }
      }
    }
    return new long[] { n, bytes };
  }

  private static double cpuSeconds() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean) {
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9;
    }
    return -1;
  }

  private static long peakRssBytes() {
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (l.startsWith("VmHWM:")) {
          return Long.parseLong(l.substring(6).trim().split("\\s+")[0]) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("cannot read VmHWM", e);
    }
    return -1;
  }

  private static void deleteRecursively(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> s = Files.walk(root)) {
      for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static void writeJson(StringBuilder b, Object v) {
    if (v == null) {
      b.append("null");
    } else if (v instanceof String) {
      MiniJson.quote(b, (String) v);
    } else if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      b.append(Double.isFinite(d) ? Double.toString(d) : "null");
    } else if (v instanceof Number || v instanceof Boolean) {
      b.append(v);
    } else if (v instanceof Map) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
        if (!first) {
          b.append(',');
        }
        first = false;
        MiniJson.quote(b, e.getKey());
        b.append(':');
        writeJson(b, e.getValue());
      }
      b.append('}');
    } else {
      MiniJson.quote(b, v.toString());
    }
  }
}
