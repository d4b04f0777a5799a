package accordion.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionInfoBuilder;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.filter.ParseFilter;
import org.apache.hadoop.hbase.regionserver.ChunkCreator;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.MemStoreLAB;
import org.apache.hadoop.hbase.regionserver.RegionScanner;
import org.apache.hadoop.hbase.util.CommonFSUtils;
import org.apache.hadoop.hbase.util.VersionInfo;
import org.apache.hadoop.hbase.wal.WAL;
import org.apache.hadoop.hbase.wal.WALFactory;

/**
 * Records what HBase's own region code answers to filtered scans: {@code FilterOracle CASES.json}
 * creates one HRegion (HBase 2.6's region code in this process, no region server), writes the
 * cases' cells with explicit timestamps, runs every scan on the memstore and again after a flush,
 * and prints one JSON document on stdout: the memstore answers under {@code "cases"} and, under
 * {@code "cases_after_flush"}, those flushed answers that differ from the memstore's (normally
 * none). Case names are sorted.
 *
 * <p>Byte strings in both files: {@code "hex:..."} is raw bytes in hex, any other string its UTF-8
 * bytes. Output writes printable ASCII (0x20-0x7E, not starting with {@code hex:}) as text, the
 * rest as {@code hex:} + lowercase hex.
 */
public final class FilterOracle {
  private FilterOracle() {
  }

  public static void main(String[] args) {
    PrintStream stdout = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    System.setOut(System.err); // anything printed by libraries goes to stderr
    if (args.length != 1) {
      System.err.println("usage: FilterOracle CASES.json");
      System.exit(2);
    }
    int rc = 0;
    try {
      String json = run(Paths.get(args[0]));
      stdout.print(json);
      stdout.flush();
    } catch (Throwable t) {
      System.err.println("filter oracle failed: " + t);
      t.printStackTrace(System.err);
      rc = 1;
    }
    System.exit(rc);
  }

  // ---- bytes ----

  static byte[] decode(String s) {
    if (s.startsWith("hex:")) {
      String h = s.substring(4);
      if (h.length() % 2 != 0) {
        throw new IllegalArgumentException("odd hex string " + s);
      }
      byte[] b = new byte[h.length() / 2];
      for (int i = 0; i < b.length; i++) {
        b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
      }
      return b;
    }
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String encode(byte[] b) {
    boolean printable = true;
    for (byte x : b) {
      if (x < 0x20 || x > 0x7e) {
        printable = false;
        break;
      }
    }
    String text = printable ? new String(b, StandardCharsets.US_ASCII) : null;
    if (text != null && !text.startsWith("hex:")) {
      return text;
    }
    StringBuilder sb = new StringBuilder("hex:");
    for (byte x : b) {
      sb.append(String.format(Locale.ROOT, "%02x", x & 0xff));
    }
    return sb.toString();
  }

  // ---- the cases ----

  private static final class ScanCase {
    String name;
    String filter;
    boolean reversed;
    int versions = 1;
    String start;
    String stop;
    List<String> columns = new ArrayList<>();
  }

  @SuppressWarnings("unchecked")
  private static String run(Path casesFile) throws Exception {
    Map<String, Object> doc =
      (Map<String, Object>) MiniJson.parse(Files.readString(casesFile, StandardCharsets.UTF_8));
    List<Object> families = (List<Object>) doc.get("families");
    List<Object> cells = (List<Object>) doc.get("cells");
    List<ScanCase> scans = new ArrayList<>();
    for (Object o : (List<Object>) doc.get("scans")) {
      Map<String, Object> m = (Map<String, Object>) o;
      ScanCase c = new ScanCase();
      c.name = (String) m.get("name");
      c.filter = (String) m.get("filter");
      if (m.containsKey("reversed")) {
        c.reversed = (Boolean) m.get("reversed");
      }
      if (m.containsKey("versions")) {
        c.versions = ((Number) m.get("versions")).intValue();
      }
      c.start = (String) m.get("start");
      c.stop = (String) m.get("stop");
      if (m.containsKey("columns")) {
        for (Object col : (List<Object>) m.get("columns")) {
          c.columns.add((String) col);
        }
      }
      for (ScanCase prev : scans) {
        if (prev.name.equals(c.name)) {
          throw new IllegalArgumentException("duplicate case name " + c.name);
        }
      }
      scans.add(c);
    }

    Path root = Files.createTempDirectory("filter-oracle");
    try {
      Configuration conf = HBaseConfiguration.create();
      conf.set(HConstants.HBASE_DIR, root.toUri().toString());
      conf.set("hbase.tmp.dir", root.resolve("tmp").toString());
      conf.set("hbase.wal.provider", "filesystem");
      conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
      // As HBaseTestingUtility.createLocalHRegion does before creating a region.
      ChunkCreator.initialize(MemStoreLAB.CHUNK_SIZE_DEFAULT, false, 0, 0, 0, null,
        MemStoreLAB.INDEX_CHUNK_SIZE_PERCENTAGE_DEFAULT);

      TableName tn = TableName.valueOf("t");
      TableDescriptorBuilder tdb = TableDescriptorBuilder.newBuilder(tn);
      for (Object o : families) {
        Map<String, Object> f = (Map<String, Object>) o;
        tdb.setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(decode((String) f.get("name")))
          .setMaxVersions(((Number) f.get("versions")).intValue()).build());
      }
      TableDescriptor td = tdb.build();
      RegionInfo info = RegionInfoBuilder.newBuilder(tn).build();
      WALFactory wals = new WALFactory(conf, "filter-oracle");
      WAL wal = wals.getWAL(info);
      HRegion region =
        HRegion.createHRegion(info, CommonFSUtils.getRootDir(conf), conf, td, wal, true);

      for (Object o : cells) {
        List<Object> c = (List<Object>) o;
        Put p = new Put(decode((String) c.get(0)));
        p.addColumn(decode((String) c.get(1)), decode((String) c.get(2)),
          ((Number) c.get(3)).longValue(), decode((String) c.get(4)));
        region.put(p);
      }

      Map<String, String> memstore = new TreeMap<>();
      for (ScanCase c : scans) {
        memstore.put(c.name, answer(region, c));
      }
      region.flush(true);
      Map<String, String> flushed = new TreeMap<>();
      for (ScanCase c : scans) {
        String a = answer(region, c);
        if (!a.equals(memstore.get(c.name))) {
          System.err.println("case " + c.name + " differs after the flush:\n  memstore: "
            + memstore.get(c.name) + "\n  flushed:  " + a);
          flushed.put(c.name, a);
        }
      }
      region.close();
      wals.close();

      StringBuilder b = new StringBuilder();
      b.append("{\n  \"hbase_version\": ");
      MiniJson.quote(b, VersionInfo.getVersion());
      b.append(",\n  \"cases\": ");
      writeCases(b, memstore);
      b.append(",\n  \"cases_after_flush\": ");
      writeCases(b, flushed);
      b.append("\n}\n");
      return b.toString();
    } finally {
      deleteRecursively(root);
    }
  }

  /** One case's answer as a JSON object, with one row per line. */
  private static String answer(HRegion region, ScanCase c) {
    Scan scan = new Scan();
    try {
      Filter f = new ParseFilter().parseFilterString(c.filter);
      scan.setFilter(f);
    } catch (Exception e) {
      return error(e);
    }
    scan.setReversed(c.reversed);
    scan.readVersions(c.versions);
    if (c.start != null) {
      scan.withStartRow(decode(c.start));
    }
    if (c.stop != null) {
      scan.withStopRow(decode(c.stop));
    }
    for (String col : c.columns) {
      byte[] b = decode(col);
      int colon = -1;
      for (int i = 0; i < b.length; i++) {
        if (b[i] == ':') {
          colon = i;
          break;
        }
      }
      if (colon < 0) {
        scan.addFamily(b);
      } else {
        scan.addColumn(java.util.Arrays.copyOfRange(b, 0, colon),
          java.util.Arrays.copyOfRange(b, colon + 1, b.length));
      }
    }
    List<List<Cell>> rows = new ArrayList<>();
    try (RegionScanner s = region.getScanner(scan)) {
      boolean more;
      do {
        List<Cell> row = new ArrayList<>();
        more = s.next(row);
        if (!row.isEmpty()) {
          rows.add(row);
        }
      } while (more);
    } catch (Exception e) {
      return error(e);
    }
    StringBuilder b = new StringBuilder("{\"rows\": [");
    for (int i = 0; i < rows.size(); i++) {
      List<Cell> row = rows.get(i);
      b.append(i == 0 ? "\n      [" : ",\n      [");
      MiniJson.quote(b, encode(CellUtil.cloneRow(row.get(0))));
      b.append(", [");
      for (int j = 0; j < row.size(); j++) {
        Cell cell = row.get(j);
        if (j > 0) {
          b.append(", ");
        }
        b.append('[');
        MiniJson.quote(b, encode(CellUtil.cloneFamily(cell)));
        b.append(", ");
        MiniJson.quote(b, encode(CellUtil.cloneQualifier(cell)));
        b.append(", ").append(cell.getTimestamp()).append(", ");
        MiniJson.quote(b, encode(CellUtil.cloneValue(cell)));
        b.append(']');
        if (!java.util.Arrays.equals(CellUtil.cloneRow(cell), CellUtil.cloneRow(row.get(0)))) {
          throw new IllegalStateException(c.name + ": one next() returned cells of two rows");
        }
      }
      b.append("]]");
    }
    b.append(rows.isEmpty() ? "]}" : "\n    ]}");
    return b.toString();
  }

  private static String error(Exception e) {
    StringBuilder b = new StringBuilder("{\"error\": ");
    MiniJson.quote(b, e.getClass().getSimpleName() + ": " + e.getMessage());
    return b.append('}').toString();
  }

  private static void writeCases(StringBuilder b, Map<String, String> answers) {
    if (answers.isEmpty()) {
      b.append("{}");
      return;
    }
    b.append('{');
    boolean first = true;
    for (Map.Entry<String, String> e : answers.entrySet()) {
      b.append(first ? "\n    " : ",\n    ");
      first = false;
      MiniJson.quote(b, e.getKey());
      b.append(": ").append(e.getValue());
    }
    b.append("\n  }");
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
}
