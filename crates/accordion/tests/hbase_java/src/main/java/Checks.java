import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.RegionMetrics;
import org.apache.hadoop.hbase.ServerMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.FuzzyRowFilter;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.filter.PrefixFilter;
import org.apache.hadoop.hbase.filter.QualifierFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.filter.ValueFilter;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * HBase's own client (hbase-client 2.6.4) against a real `accordion server`
 * over HBase's native RPC (RpcConnectionRegistry: no ZooKeeper). Prints
 * "OK <check>" or "FAIL <check> <why>" per check and "DONE <n> checks";
 * exits 1 when any check failed or threw. Driven by
 * crates/accordion/tests/server_hbase_java.rs.
 */
public class Checks {
  static int failed = 0;
  static int ran = 0;

  static void check(String name, boolean ok, Object detail) {
    ran++;
    if (ok) {
      System.out.println("OK " + name);
    } else {
      failed++;
      System.out.println("FAIL " + name + " " + detail);
    }
  }

  static byte[] b(String s) {
    return Bytes.toBytes(s);
  }

  static String s(byte[] v) {
    return v == null ? "<null>" : Bytes.toString(v);
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.client.registry.impl", "org.apache.hadoop.hbase.client.RpcConnectionRegistry");
    conf.set("hbase.client.bootstrap.servers", args[0]);
    conf.setInt("hbase.client.retries.number", 5);
    conf.setLong("hbase.client.pause", 50);
    conf.setInt("hbase.rpc.timeout", 20000);
    conf.setInt("hbase.client.operation.timeout", 60000);
    try (Connection connection = ConnectionFactory.createConnection(conf);
        Admin admin = connection.getAdmin()) {
      run(connection, admin);
    } catch (Throwable e) {
      failed++;
      System.out.println("FAIL threw " + e);
      e.printStackTrace();
    }
    System.out.println("DONE " + ran + " checks, " + failed + " failed");
    System.exit(failed == 0 ? 0 : 1);
  }

  static void run(Connection connection, Admin admin) throws Exception {
    byte[] f = b("f");
    byte[] g = b("g");
    admin.createNamespace(NamespaceDescriptor.create("ns").build());
    boolean listed = Arrays.stream(admin.listNamespaceDescriptors()).anyMatch(d -> d.getName().equals("ns"));
    check("namespace-created", listed && admin.getNamespaceDescriptor("ns").getName().equals("ns"), "");

    TableName t = TableName.valueOf("ns", "t");
    TableDescriptor desc = TableDescriptorBuilder.newBuilder(t)
      .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(f).setMaxVersions(3).build())
      .setColumnFamily(ColumnFamilyDescriptorBuilder.of(g))
      .build();
    admin.createTable(desc, new byte[][] {b("g"), b("p")});
    check("table-exists", admin.tableExists(t) && admin.isTableEnabled(t), "");
    check("list-table-names", Arrays.asList(admin.listTableNames()).contains(t), Arrays.toString(admin.listTableNames()));
    check("list-namespace-tables", admin.listTableDescriptorsByNamespace(b("ns")).size() == 1, "");
    List<TableName> byPattern = Arrays.asList(admin.listTableNames(Pattern.compile("ns:.*")));
    check("list-table-names-by-pattern", byPattern.contains(t)
      && admin.listTableDescriptors(Pattern.compile("ns:t")).size() == 1
      && admin.listTableNames(Pattern.compile("nothing.*")).length == 0, byPattern);
    TableDescriptor got = admin.getDescriptor(t);
    check("describe-table", got.getColumnFamilyCount() == 2 && got.getColumnFamily(f).getMaxVersions() == 3, got);

    try (RegionLocator locator = connection.getRegionLocator(t)) {
      List<HRegionLocation> locations = locator.getAllRegionLocations();
      StringBuilder starts = new StringBuilder();
      for (HRegionLocation l : locations) {
        starts.append('[').append(s(l.getRegion().getStartKey())).append(']');
      }
      check("region-locations", locations.size() == 3 && starts.toString().equals("[][g][p]"), starts);
      HRegionLocation holding = locator.getRegionLocation(b("m"));
      check("region-of-row", s(holding.getRegion().getStartKey()).equals("g") && s(holding.getRegion().getEndKey()).equals("p"), holding);
    }

    try (Table table = connection.getTable(t)) {
      // Put and Get, in every region.
      for (String r : new String[] {"a", "h", "m", "q", "z"}) {
        table.put(new Put(b(r)).addColumn(f, b("q"), b("v-" + r)).addColumn(g, b("x"), b("x-" + r)));
      }
      Result r = table.get(new Get(b("m")));
      check("get", s(r.getValue(f, b("q"))).equals("v-m") && s(r.getValue(g, b("x"))).equals("x-m"), r);
      r = table.get(new Get(b("m")).addColumn(f, b("q")));
      check("get-column", r.size() == 1 && s(r.getValue(f, b("q"))).equals("v-m"), r);
      check("get-missing", table.get(new Get(b("nope"))).isEmpty(), "");
      check("exists", table.exists(new Get(b("h"))) && !table.exists(new Get(b("nope"))), "");

      // Versions and time ranges.
      table.put(new Put(b("v")).addColumn(f, b("q"), 10L, b("ten")));
      table.put(new Put(b("v")).addColumn(f, b("q"), 20L, b("twenty")));
      table.put(new Put(b("v")).addColumn(f, b("q"), 30L, b("thirty")));
      r = table.get(new Get(b("v")).readVersions(3));
      check("get-versions", r.getColumnCells(f, b("q")).size() == 3, r);
      r = table.get(new Get(b("v")).setTimeRange(0, 25));
      check("get-time-range", s(r.getValue(f, b("q"))).equals("twenty"), r);

      // Scans: forward across regions, reversed, limits, batching, caching.
      check("scan-all", rows(table, new Scan().addFamily(f)).equals("a,h,m,q,v,z"), rows(table, new Scan().addFamily(f)));
      check("scan-range", rows(table, new Scan().withStartRow(b("h")).withStopRow(b("v"))).equals("h,m,q"), rows(table, new Scan().withStartRow(b("h")).withStopRow(b("v"))));
      check("scan-reversed", rows(table, new Scan().setReversed(true)).equals("z,v,q,m,h,a"), rows(table, new Scan().setReversed(true)));
      check("scan-reversed-range", rows(table, new Scan().setReversed(true).withStartRow(b("q")).withStopRow(b("a"))).equals("q,m,h"), rows(table, new Scan().setReversed(true).withStartRow(b("q")).withStopRow(b("a"))));
      check("scan-limit", rows(table, new Scan().setLimit(2)).equals("a,h"), rows(table, new Scan().setLimit(2)));
      check("scan-reversed-limit", rows(table, new Scan().setReversed(true).setLimit(3)).equals("z,v,q"), rows(table, new Scan().setReversed(true).setLimit(3)));
      check("scan-caching", rows(table, new Scan().setCaching(1)).equals("a,h,m,q,v,z"), rows(table, new Scan().setCaching(1)));
      int pieces = 0;
      try (ResultScanner sc = table.getScanner(new Scan().withStartRow(b("m")).withStopRow(b("m\0")).setBatch(1))) {
        for (Result x : sc) {
          pieces += x.size() == 1 ? 1 : 100;
        }
      }
      check("scan-batch", pieces == 2, pieces);

      // Filters, as the client serializes them.
      check("scan-prefix-filter", rows(table, new Scan().setFilter(new PrefixFilter(b("m")))).equals("m"), rows(table, new Scan().setFilter(new PrefixFilter(b("m")))));
      Scan valueScan = new Scan().setFilter(new ValueFilter(CompareOperator.EQUAL, new BinaryComparator(b("v-q"))));
      check("scan-value-filter", rows(table, valueScan).equals("q"), rows(table, valueScan));
      Scan listScan = new Scan().setFilter(new FilterList(FilterList.Operator.MUST_PASS_ONE, new PrefixFilter(b("a")), new PrefixFilter(b("z"))));
      check("scan-filter-list", rows(table, listScan).equals("a,z"), rows(table, listScan));
      // A PageFilter limits each region's scan (HBase's documented behaviour).
      Scan pageScan = new Scan().setFilter(new PageFilter(1));
      check("scan-page-filter", rows(table, pageScan).equals("a,h,q"), rows(table, pageScan));
      SingleColumnValueFilter scvf = new SingleColumnValueFilter(f, b("q"), CompareOperator.EQUAL, b("v-h"));
      scvf.setFilterIfMissing(true);
      check("scan-single-column-value-filter", rows(table, new Scan().setFilter(scvf)).equals("h"), rows(table, new Scan().setFilter(scvf)));
      r = table.get(new Get(b("m")).setFilter(new QualifierFilter(CompareOperator.EQUAL, new BinaryComparator(b("x")))));
      check("get-filter", r.size() == 1 && s(r.getValue(g, b("x"))).equals("x-m"), r);
      long refusedAt = System.nanoTime();
      try {
        rows(table, new Scan().setFilter(new FuzzyRowFilter(Arrays.asList(new org.apache.hadoop.hbase.util.Pair<>(b("a"), new byte[] {0})))));
        check("filter-refused", false, "a FuzzyRowFilter scan was served");
      } catch (Exception e) {
        long ms = (System.nanoTime() - refusedAt) / 1_000_000;
        check("filter-refused", String.valueOf(e).contains("DoNotRetryIOException") && String.valueOf(e).contains("FuzzyRowFilter") && ms < 5000, ms + " ms: " + e);
      }

      // Deletes of each kind.
      table.put(new Put(b("d")).addColumn(f, b("a"), 5L, b("a5")).addColumn(f, b("a"), 6L, b("a6"))
        .addColumn(f, b("b"), b("b")).addColumn(f, b("c"), b("c")).addColumn(g, b("x"), 7L, b("x7")).addColumn(g, b("y"), 7L, b("y7")).addColumn(g, b("z"), 8L, b("z8")));
      table.delete(new Delete(b("d")).addColumn(f, b("a")));
      r = table.get(new Get(b("d")).readVersions(3));
      check("delete-version", r.getColumnCells(f, b("a")).size() == 1 && s(r.getValue(f, b("a"))).equals("a5"), r);
      table.delete(new Delete(b("d")).addColumns(f, b("b")));
      check("delete-columns", !table.get(new Get(b("d"))).containsColumn(f, b("b")), "");
      table.delete(new Delete(b("d")).addFamilyVersion(g, 7L));
      r = table.get(new Get(b("d")));
      check("delete-family-version", r.getFamilyMap(g).size() == 1 && r.containsColumn(g, b("z")), r);
      table.delete(new Delete(b("d")).addFamily(f));
      r = table.get(new Get(b("d")));
      check("delete-family", r.getFamilyMap(f) == null || r.getFamilyMap(f).isEmpty(), r);
      table.delete(new Delete(b("d")));
      check("delete-row", table.get(new Get(b("d"))).isEmpty(), "");

      // checkAndMutate, increment, append.
      CheckAndMutateResult cm = table.checkAndMutate(CheckAndMutate.newBuilder(b("c")).ifNotExists(f, b("q")).build(new Put(b("c")).addColumn(f, b("q"), b("one"))));
      check("check-absent-put", cm.isSuccess() && s(table.get(new Get(b("c"))).getValue(f, b("q"))).equals("one"), cm);
      cm = table.checkAndMutate(CheckAndMutate.newBuilder(b("c")).ifEquals(f, b("q"), b("wrong")).build(new Put(b("c")).addColumn(f, b("q"), b("two"))));
      check("check-mismatch", !cm.isSuccess() && s(table.get(new Get(b("c"))).getValue(f, b("q"))).equals("one"), cm);
      cm = table.checkAndMutate(CheckAndMutate.newBuilder(b("c")).ifEquals(f, b("q"), b("one")).build(new Delete(b("c")).addColumns(f, b("q"))));
      check("check-delete", cm.isSuccess() && table.get(new Get(b("c"))).isEmpty(), cm);
      // RowMutations: one row's puts and deletes applied together, alone,
      // under a condition, and inside a batch.
      table.put(new Put(b("m")).addColumn(f, b("old"), b("o")));
      RowMutations rm = new RowMutations(b("m"));
      rm.add(new Put(b("m")).addColumn(f, b("new"), b("n")));
      rm.add(new Delete(b("m")).addColumns(f, b("old")));
      table.mutateRow(rm);
      r = table.get(new Get(b("m")));
      check("mutate-row", s(r.getValue(f, b("new"))).equals("n") && !r.containsColumn(f, b("old")), r);
      RowMutations rm2 = new RowMutations(b("m"));
      rm2.add(new Put(b("m")).addColumn(f, b("third"), b("t")));
      rm2.add(new Delete(b("m")).addColumns(f, b("new")));
      cm = table.checkAndMutate(CheckAndMutate.newBuilder(b("m")).ifEquals(f, b("new"), b("wrong")).build(rm2));
      check("check-row-mutations-mismatch", !cm.isSuccess() && table.get(new Get(b("m"))).containsColumn(f, b("new")), cm);
      cm = table.checkAndMutate(CheckAndMutate.newBuilder(b("m")).ifEquals(f, b("new"), b("n")).build(rm2));
      r = table.get(new Get(b("m")));
      check("check-row-mutations", cm.isSuccess() && s(r.getValue(f, b("third"))).equals("t") && !r.containsColumn(f, b("new")), r);
      RowMutations rm3 = new RowMutations(b("m2"));
      rm3.add(new Put(b("m2")).addColumn(f, b("q"), b("v")));
      List<Row> mixed = new ArrayList<>();
      mixed.add(rm3);
      mixed.add(new Put(b("m3")).addColumn(f, b("q"), b("v3")));
      Object[] mixedResults = new Object[mixed.size()];
      table.batch(mixed, mixedResults);
      check("batch-row-mutations", s(table.get(new Get(b("m2"))).getValue(f, b("q"))).equals("v")
        && s(table.get(new Get(b("m3"))).getValue(f, b("q"))).equals("v3"), Arrays.toString(mixedResults));
      long n = table.incrementColumnValue(b("n"), f, b("count"), 5);
      n = table.incrementColumnValue(b("n"), f, b("count"), 2);
      check("increment", n == 7, n);
      r = table.increment(new Increment(b("n")).addColumn(f, b("count"), 3).addColumn(f, b("other"), 1));
      check("increment-columns", Bytes.toLong(r.getValue(f, b("count"))) == 10 && Bytes.toLong(r.getValue(f, b("other"))) == 1, r);
      table.append(new Append(b("s")).addColumn(f, b("q"), b("ab")));
      r = table.append(new Append(b("s")).addColumn(f, b("q"), b("cd")));
      check("append", s(r.getValue(f, b("q"))).equals("abcd") && s(table.get(new Get(b("s"))).getValue(f, b("q"))).equals("abcd"), r);

      // A batch of puts, deletes, gets and an increment across regions.
      List<Row> actions = new ArrayList<>();
      actions.add(new Put(b("b1")).addColumn(f, b("q"), b("bv1")));
      actions.add(new Put(b("x1")).addColumn(f, b("q"), b("xv1")));
      actions.add(new Delete(b("a")));
      actions.add(new Get(b("h")));
      actions.add(new Increment(b("n")).addColumn(f, b("count"), 1));
      Object[] results = new Object[actions.size()];
      table.batch(actions, results);
      boolean batchOk = table.get(new Get(b("b1"))).size() == 1 && table.get(new Get(b("x1"))).size() == 1
        && table.get(new Get(b("a"))).isEmpty() && s(((Result) results[3]).getValue(f, b("q"))).equals("v-h")
        && Bytes.toLong(((Result) results[4]).getValue(f, b("count"))) == 11;
      check("batch", batchOk, Arrays.toString(results));

      // A missing family is the client's error, at once.
      try {
        table.put(new Put(b("e")).addColumn(b("nofamily"), b("q"), b("v")));
        check("no-such-family", false, "the put succeeded");
      } catch (Exception e) {
        check("no-such-family", String.valueOf(e).contains("NoSuchColumnFamilyException"), e);
      }
    }

    // A BufferedMutator of 100,000 rows, counted back by a scan.
    TableName big = TableName.valueOf("big");
    admin.createTable(TableDescriptorBuilder.newBuilder(big).setColumnFamily(ColumnFamilyDescriptorBuilder.of(f)).build(), new byte[][] {b("row05"), b("row50")});
    long started = System.nanoTime();
    try (BufferedMutator mutator = connection.getBufferedMutator(big)) {
      for (int i = 0; i < 100_000; i++) {
        mutator.mutate(new Put(b(String.format("row%06d", i))).addColumn(f, b("q"), b("value" + i)));
      }
    }
    long count = 0;
    try (Table table = connection.getTable(big); ResultScanner sc = table.getScanner(new Scan())) {
      for (Result x : sc) {
        count++;
      }
    }
    check("buffered-mutator-100000", count == 100_000, count);
    System.out.println("INFO buffered mutator and scan: " + (System.nanoTime() - started) / 1_000_000 + " ms");

    // Alter: add, modify and delete a family; modify the table.
    byte[] h = b("h");
    admin.addColumnFamily(t, ColumnFamilyDescriptorBuilder.of(h));
    try (Table table = connection.getTable(t)) {
      table.put(new Put(b("hh")).addColumn(h, b("q"), b("in-h")));
      check("add-family", admin.getDescriptor(t).getColumnFamilyCount() == 3
        && s(table.get(new Get(b("hh"))).getValue(h, b("q"))).equals("in-h"), admin.getDescriptor(t));
    }
    try {
      admin.addColumnFamily(t, ColumnFamilyDescriptorBuilder.of(h));
      check("add-existing-family", false, "a family added twice");
    } catch (Exception e) {
      check("add-existing-family", String.valueOf(e).contains("InvalidFamilyOperationException")
        && admin.getDescriptor(t).getColumnFamilyCount() == 3, e);
    }
    admin.modifyColumnFamily(t, ColumnFamilyDescriptorBuilder.newBuilder(f).setMaxVersions(5).build());
    check("modify-family", admin.getDescriptor(t).getColumnFamily(f).getMaxVersions() == 5, admin.getDescriptor(t));
    admin.deleteColumnFamily(t, h);
    check("delete-family", admin.getDescriptor(t).getColumnFamilyCount() == 2 && !admin.getDescriptor(t).hasColumnFamily(h), admin.getDescriptor(t));
    admin.modifyTable(TableDescriptorBuilder.newBuilder(admin.getDescriptor(t))
      .modifyColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(g).setMaxVersions(2).build()).build());
    check("modify-table", admin.getDescriptor(t).getColumnFamily(g).getMaxVersions() == 2
      && admin.getDescriptor(t).getColumnFamily(f).getMaxVersions() == 5, admin.getDescriptor(t));

    // Flush, compact, split; the data reads the same after each.
    String before;
    try (Table table = connection.getTable(t)) {
      before = rows(table, new Scan());
      admin.flush(t);
      admin.majorCompact(t);
      String now = rows(table, new Scan());
      check("flush-and-compact", now.equals(before) && !now.isEmpty(), now + " vs " + before);
    }
    admin.split(t, b("c"));
    try (RegionLocator locator = connection.getRegionLocator(t)) {
      List<String> starts = startsOnceThere(locator, 4);
      HRegionLocation holding = locator.getRegionLocation(b("d"), true);
      try (Table table = connection.getTable(t)) {
        String now = rows(table, new Scan());
        check("split", starts.toString().equals("[, c, g, p]") && s(holding.getRegion().getStartKey()).equals("c")
          && now.equals(before), starts + " " + now + " vs " + before);
      }
    }

    // The cluster as Admin reports it: one live server holding the table's
    // four regions, each with its two stores, counting the writes since
    // they opened (a row written and deleted; the alters and the split
    // reopened every region). HBase's region servers report their load
    // every few seconds: wait for the report after these.
    try (Table table = connection.getTable(t)) {
      table.put(new Put(b("w")).addColumn(f, b("q"), b("w")));
      table.delete(new Delete(b("w")));
    }
    ClusterMetrics metrics = admin.getClusterMetrics();
    long deadline = System.currentTimeMillis() + 20_000;
    while ((tableRegions(metrics, t).size() != 4
        || tableRegions(metrics, t).stream().mapToLong(RegionMetrics::getWriteRequestCount).sum() == 0)
        && System.currentTimeMillis() < deadline) {
      Thread.sleep(200);
      metrics = admin.getClusterMetrics();
    }
    List<RegionMetrics> loads = tableRegions(metrics, t);
    long written = loads.stream().mapToLong(RegionMetrics::getWriteRequestCount).sum();
    check("cluster-metrics", metrics.getLiveServerMetrics().size() == 1 && loads.size() == 4
      && loads.stream().allMatch(l -> l.getStoreCount() == 2) && written > 0
      && metrics.getClusterId() != null && !metrics.getClusterId().isEmpty()
      && metrics.getMasterName() != null && metrics.getHBaseVersion() != null,
      metrics.getLiveServerMetrics().keySet() + " " + loads.size() + " regions, " + written + " writes, id "
        + metrics.getClusterId());
    List<ServerName> servers = new ArrayList<>(admin.getRegionServers());
    ServerName server = servers.isEmpty() ? null : servers.get(0);
    long held = server == null ? 0 : admin.getRegions(server).stream().filter(r -> r.getTable().equals(t)).count();
    int measured = server == null ? 0 : admin.getRegionMetrics(server, t).size();
    check("region-servers", servers.size() == 1 && metrics.getLiveServerMetrics().containsKey(server) && held == 4
      && measured == 4, servers + " holds " + held + " regions of " + t + ", " + measured + " measured");

    // Nothing compacts once the split's daughters are rewritten (HBase
    // compacts them in the background right after the split).
    CompactionState state = admin.getCompactionState(t);
    deadline = System.currentTimeMillis() + 30_000;
    while (state != CompactionState.NONE && System.currentTimeMillis() < deadline) {
      Thread.sleep(200);
      state = admin.getCompactionState(t);
    }
    RegionInfo first;
    try (RegionLocator locator = connection.getRegionLocator(t)) {
      first = locator.getRegionLocation(b("a")).getRegion();
    }
    CompactionState regionState = admin.getCompactionStateForRegion(first.getRegionName());
    check("compaction-state", state == CompactionState.NONE && regionState == CompactionState.NONE,
      state + " " + regionState);

    // Merge [g, p) and [p, ): three regions, the rows as they were.
    try (RegionLocator locator = connection.getRegionLocator(t)) {
      byte[] atG = locator.getRegionLocation(b("g"), true).getRegion().getRegionName();
      byte[] atP = locator.getRegionLocation(b("p"), true).getRegion().getRegionName();
      admin.mergeRegionsAsync(new byte[][] {atG, atP}, false).get(60, TimeUnit.SECONDS);
      List<String> starts = startsOnceThere(locator, 3);
      HRegionLocation holding = locator.getRegionLocation(b("q"), true);
      try (Table table = connection.getTable(t)) {
        String now = rows(table, new Scan());
        check("merge-regions", starts.toString().equals("[, c, g]") && s(holding.getRegion().getStartKey()).equals("g")
          && holding.getRegion().getEndKey().length == 0 && now.equals(before), starts + " " + now + " vs " + before);
      }

      // [, c) and [g, ) are not adjacent: refused, nothing changes.
      byte[] atStart = locator.getRegionLocation(b(""), true).getRegion().getRegionName();
      byte[] atG2 = locator.getRegionLocation(b("g"), true).getRegion().getRegionName();
      try {
        admin.mergeRegionsAsync(new byte[][] {atStart, atG2}, false).get(60, TimeUnit.SECONDS);
        check("merge-non-adjacent-refused", false, "two regions with one between them merged");
      } catch (Exception e) {
        int left = locator.getAllRegionLocations().size();
        check("merge-non-adjacent-refused", String.valueOf(e).contains("MergeRegionException") && left == 3,
          left + " regions: " + e);
      }
    }

    // The namespace's table names; a truncate that keeps the split keys;
    // the balancer's calls (a standalone server has none, HBase's is on).
    check("list-table-names-by-namespace", Arrays.asList(admin.listTableNamesByNamespace("ns")).contains(t),
      Arrays.toString(admin.listTableNamesByNamespace("ns")));
    admin.disableTable(t);
    admin.truncateTable(t, true);
    try (RegionLocator locator = connection.getRegionLocator(t); Table table = connection.getTable(t)) {
      List<String> starts = startsOnceThere(locator, 3);
      String left = rows(table, new Scan());
      check("truncate-preserving-splits", admin.isTableEnabled(t) && left.isEmpty() && starts.toString().equals("[, c, g]"),
        starts + " rows: " + left);
    }
    boolean balancerWas = admin.isBalancerEnabled();
    admin.balance();
    check("balancer-calls", admin.isBalancerEnabled() == balancerWas, balancerWas);

    // Disable and delete the tables, drop the namespace.
    admin.disableTable(t);
    check("disable-table", admin.isTableDisabled(t), "");
    admin.deleteTable(t);
    admin.disableTable(big);
    admin.deleteTable(big);
    check("delete-table", !admin.tableExists(t) && !admin.tableExists(big), "");
    admin.deleteNamespace("ns");
    listed = Arrays.stream(admin.listNamespaceDescriptors()).anyMatch(d -> d.getName().equals("ns"));
    check("namespace-dropped", !listed, "");
  }

  /**
   * The start keys of the table's regions once there are `count` of them
   * (HBase updates hbase:meta a moment after a split or merge answers), or
   * after ten seconds.
   */
  static List<String> startsOnceThere(RegionLocator locator, int count) throws Exception {
    List<HRegionLocation> all = locator.getAllRegionLocations();
    for (int i = 0; i < 100 && all.size() != count; i++) {
      Thread.sleep(100);
      all = locator.getAllRegionLocations();
    }
    List<String> starts = new ArrayList<>();
    for (HRegionLocation l : all) {
      starts.add(s(l.getRegion().getStartKey()));
    }
    return starts;
  }

  /** The loads the live servers report for table t's regions. */
  static List<RegionMetrics> tableRegions(ClusterMetrics metrics, TableName t) {
    List<RegionMetrics> out = new ArrayList<>();
    String prefix = t.getNameAsString() + ",";
    for (ServerMetrics server : metrics.getLiveServerMetrics().values()) {
      for (Map.Entry<byte[], RegionMetrics> e : server.getRegionMetrics().entrySet()) {
        if (s(e.getKey()).startsWith(prefix)) {
          out.add(e.getValue());
        }
      }
    }
    return out;
  }

  static String rows(Table table, Scan scan) throws Exception {
    List<String> out = new ArrayList<>();
    try (ResultScanner sc = table.getScanner(scan)) {
      for (Result r : sc) {
        out.add(s(r.getRow()));
      }
    }
    return String.join(",", out);
  }
}
