package accordion.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** CONFIG.json of the bench protocol (see README.md). */
final class Config {
  String preset;
  String policy;
  int regions;
  String splitKeysFile;
  int threads;
  int fields;
  int valueSize;
  int batchRows;
  String durability;
  long flushSize;
  long memstoreLimit;
  double inmemoryFlushShare;
  int pipelineSegmentsLimit;
  double adaptiveThreshold;
  String keysFile;
  /** Reader under writes: rows loaded before the measured phase, and the reader's keys. */
  String loadKeysFile;
  String readKeysFile;
  long loadOps;
  long ops;
  double readRatio;
  String dir;
  String family;
  String table;
  boolean keepDir;
  // Optional knobs (not in the fixed protocol; defaults are a region server's).
  int flushThreads; // hbase.hstore.flusher.count
  long walBlockSize; // hbase.regionserver.hlog.blocksize; 0 = HDFS-like 256 MiB
  double blockCacheFraction; // hfile.block.cache.size
  /** The block cache in bytes, as the other engines get it; 0 = blockCacheFraction of the heap. */
  long blockCacheBytes;
  /** The family's data block size (BLOCKSIZE), as the other engines get it; HBase's default 64 KiB. */
  int blockSize;
  /** Gets the measured reader does (the read keys file holds them in order); 0 = no reader. */
  long readOps;
  /** Rows per second all client threads together may write in the measured phase; 0 = no limit. */
  double writeRate;
  /** Gets name the row's fields (Get.addColumn each) instead of asking for the whole row. */
  boolean namedGets;

  static Config load(Path path) throws IOException {
    String text = new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
    Object parsed = MiniJson.parse(text);
    if (!(parsed instanceof Map)) {
      throw new IllegalArgumentException("CONFIG.json must hold one JSON object");
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> m = (Map<String, Object>) parsed;
    Config c = new Config();
    c.preset = str(m, "preset", "unnamed");
    c.policy = str(m, "policy", "none").toLowerCase();
    c.regions = (int) num(m, "regions", 1);
    c.splitKeysFile = str(m, "split_keys_file", null);
    c.threads = (int) num(m, "threads", 1);
    c.fields = (int) num(m, "fields", 4);
    c.valueSize = (int) num(m, "value_size", 25);
    c.batchRows = (int) num(m, "batch_rows", 40);
    c.durability = str(m, "durability", "ASYNC_WAL").toUpperCase();
    c.flushSize = (long) num(m, "flush_size", 128L << 20);
    c.memstoreLimit = (long) num(m, "memstore_limit", 256L << 20);
    c.inmemoryFlushShare = num(m, "inmemory_flush_share", 0.02);
    c.pipelineSegmentsLimit = (int) num(m, "pipeline_segments_limit", 2);
    c.adaptiveThreshold = num(m, "adaptive_threshold", 0.5);
    c.keysFile = str(m, "keys_file", null);
    c.loadKeysFile = str(m, "load_keys_file", null);
    c.readKeysFile = str(m, "read_keys_file", null);
    c.loadOps = (long) num(m, "load_ops", 0);
    c.ops = (long) num(m, "ops", -1);
    c.readRatio = num(m, "read_ratio", 0.0);
    c.dir = str(m, "dir", null);
    c.family = str(m, "family", "f");
    c.table = str(m, "table", "usertable");
    c.keepDir = Boolean.TRUE.equals(m.get("keep_dir"));
    c.flushThreads = (int) num(m, "flush_threads", 2);
    c.walBlockSize = (long) num(m, "wal_block_size", 0);
    c.blockCacheFraction = num(m, "block_cache_fraction", 0.4);
    c.blockCacheBytes = (long) num(m, "block_cache_bytes", 0);
    c.blockSize = (int) num(m, "block_size", 65536);
    c.readOps = (long) num(m, "read_ops", 0);
    c.writeRate = num(m, "write_rate", 0);
    c.namedGets = Boolean.TRUE.equals(m.get("named_gets"));
    c.validate();
    return c;
  }

  private void validate() {
    if (keysFile == null || dir == null) {
      throw new IllegalArgumentException("keys_file and dir are required");
    }
    if (regions < 1 || (regions > 1 && splitKeysFile == null)) {
      throw new IllegalArgumentException("regions >= 1, and split_keys_file is required if > 1");
    }
    if (!(writeRate >= 0) || Double.isInfinite(writeRate)) {
      throw new IllegalArgumentException("write_rate must be a finite number >= 0");
    }
    if (threads < 1 || fields < 1 || valueSize < 0 || batchRows < 1 || ops < 0) {
      throw new IllegalArgumentException("threads, fields, batch_rows >= 1; value_size, ops >= 0");
    }
    if (!(readRatio >= 0.0 && readRatio <= 1.0)) {
      throw new IllegalArgumentException("read_ratio must be in [0, 1]");
    }
    switch (policy) {
      case "none":
      case "basic":
      case "eager":
      case "adaptive":
        break;
      default:
        throw new IllegalArgumentException("policy must be none|basic|eager|adaptive: " + policy);
    }
    switch (durability) {
      case "SYNC_WAL":
      case "ASYNC_WAL":
      case "SKIP_WAL":
      case "FSYNC_WAL":
        break;
      default:
        throw new IllegalArgumentException("durability must be SYNC_WAL|ASYNC_WAL|SKIP_WAL");
    }
    if (flushSize <= 0 || memstoreLimit <= 0) {
      throw new IllegalArgumentException("flush_size and memstore_limit must be positive");
    }
  }

  private static String str(Map<String, Object> m, String k, String dflt) {
    Object v = m.get(k);
    return v == null ? dflt : v.toString();
  }

  private static double num(Map<String, Object> m, String k, double dflt) {
    Object v = m.get(k);
    if (v == null) {
      return dflt;
    }
    if (v instanceof Number) {
      return ((Number) v).doubleValue();
    }
    throw new IllegalArgumentException(k + " must be a number");
  }

  private static long num(Map<String, Object> m, String k, long dflt) {
    Object v = m.get(k);
    if (v == null) {
      return dflt;
    }
    if (v instanceof Long) {
      return (Long) v;
    }
    if (v instanceof Number) {
      return (long) ((Number) v).doubleValue();
    }
    throw new IllegalArgumentException(k + " must be a number");
  }
}
