import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * HBase's own client (hbase-client 2.6.4, its default retry settings)
 * against a cluster whose regions move while it works (issue 56).
 *
 * <p>{@code program REGISTRY RUN}: what a new user's program does — create a
 * namespace and a pre-split table, list the namespace's tables, write, scan,
 * flush, split, move a region, merge two, alter, ask for and run the
 * balancer, truncate, disable and drop — printing "OK step ms" or "FAIL step
 * why" per step, then "DONE ok failed".
 *
 * <p>{@code load REGISTRY TABLE MILLIS THREADS}: THREADS threads put rows and
 * read back rows they wrote earlier for MILLIS ms while an admin thread
 * splits, moves and merges regions and runs the balancer. Prints "ADMIN op
 * start_ms end_ms ok|why" per admin call, "LAT start_ms micros ok" per data
 * call, "STALE row" for a read that did not see the thread's own earlier
 * write, then reads every acknowledged row back ("READ found missing") and
 * "DONE calls failed".
 *
 * <p>REGISTRY is {@code zk:host:port/parent} (ZooKeeper only) or the
 * servers' RPC addresses {@code host:port,...}.
 */
public class MovingCluster {
  static Configuration conf(String registry) {
    Configuration conf = HBaseConfiguration.create();
    if (registry.startsWith("zk:")) {
      String quorum = registry.substring(3, registry.indexOf('/'));
      conf.set("hbase.client.registry.impl", "org.apache.hadoop.hbase.client.ZKConnectionRegistry");
      conf.set("hbase.zookeeper.quorum", quorum.substring(0, quorum.lastIndexOf(':')));
      conf.set("hbase.zookeeper.property.clientPort", quorum.substring(quorum.lastIndexOf(':') + 1));
      conf.set("zookeeper.znode.parent", registry.substring(registry.indexOf('/')));
    } else {
      conf.set("hbase.client.registry.impl", "org.apache.hadoop.hbase.client.RpcConnectionRegistry");
      conf.set("hbase.client.bootstrap.servers", registry);
    }
    // Nothing else: hbase-client's defaults (15 retries, 100 ms pause).
    return conf;
  }

  static byte[] b(String s) {
    return Bytes.toBytes(s);
  }

  static String s(byte[] b) {
    return Bytes.toString(b);
  }

  interface Step {
    void run() throws Exception;
  }

  static int ok = 0;
  static int failed = 0;

  static void step(String name, Step body) {
    long start = System.currentTimeMillis();
    try {
      body.run();
      ok++;
      System.out.println("OK " + name + " " + (System.currentTimeMillis() - start));
    } catch (Throwable e) {
      failed++;
      System.out.println("FAIL " + name + " " + String.valueOf(e).replace('\n', ' '));
    }
  }

  static void expect(boolean condition, Object detail) {
    if (!condition) {
      throw new AssertionError(String.valueOf(detail));
    }
  }

  public static void main(String[] args) throws Exception {
    try (Connection connection = ConnectionFactory.createConnection(conf(args[1]))) {
      if (args[0].equals("program")) {
        program(connection, args[2]);
        System.out.println("DONE " + ok + " " + failed);
      } else {
        load(connection, TableName.valueOf(args[2]), Long.parseLong(args[3]), Integer.parseInt(args[4]));
      }
    }
    System.exit(0);
  }

  static int count(Connection c, TableName t) throws Exception {
    int n = 0;
    try (Table table = c.getTable(t); ResultScanner sc = table.getScanner(new Scan())) {
      for (Result r : sc) {
        n++;
      }
    }
    return n;
  }

  /** The table's regions once there are `want` of them (or after 30 s). */
  static List<HRegionLocation> regionsOnceThere(Connection c, TableName t, int want) throws Exception {
    try (RegionLocator locator = c.getRegionLocator(t)) {
      List<HRegionLocation> all = locator.getAllRegionLocations();
      for (int i = 0; i < 300 && all.size() != want; i++) {
        Thread.sleep(100);
        all = locator.getAllRegionLocations();
      }
      return all;
    }
  }

  static void program(Connection c, String run) throws Exception {
    Admin admin = c.getAdmin();
    String ns = "moving" + run;
    TableName t = TableName.valueOf(ns + ":t");
    byte[] f = b("f");
    step("create-namespace", () -> admin.createNamespace(NamespaceDescriptor.create(ns).build()));
    step("create-presplit-table", () -> admin.createTable(
        TableDescriptorBuilder.newBuilder(t).setColumnFamily(ColumnFamilyDescriptorBuilder.of(f)).build(),
        new byte[][] {b("g"), b("p")}));
    step("list-table-names-by-namespace",
        () -> expect(Arrays.asList(admin.listTableNamesByNamespace(ns)).contains(t),
            Arrays.toString(admin.listTableNamesByNamespace(ns))));
    step("write", () -> {
      try (Table table = c.getTable(t)) {
        for (int i = 0; i < 260; i++) {
          String row = String.format("%c%04d", (char) ('a' + i % 26), i);
          table.put(new Put(b(row)).addColumn(f, b("q"), b(row)));
        }
      }
    });
    step("scan", () -> expect(count(c, t) == 260, count(c, t)));
    step("flush", () -> admin.flush(t));
    step("split", () -> {
      admin.split(t, b("k"));
      List<HRegionLocation> all = regionsOnceThere(c, t, 4);
      expect(all.size() == 4, all);
    });
    step("move", () -> {
      try (RegionLocator locator = c.getRegionLocator(t)) {
        HRegionLocation at = locator.getRegionLocation(b("a"), true);
        List<ServerName> others = new ArrayList<>(admin.getRegionServers());
        others.remove(at.getServerName());
        expect(!others.isEmpty(), "no other server");
        admin.move(at.getRegion().getEncodedNameAsBytes(), others.get(0));
        HRegionLocation now = locator.getRegionLocation(b("a"), true);
        for (int i = 0; i < 300 && !now.getServerName().equals(others.get(0)); i++) {
          Thread.sleep(100);
          now = locator.getRegionLocation(b("a"), true);
        }
        // The balancer (every 10 s) may move it on again: where it went
        // first is what hbase:meta said right after the move.
        expect(now.getServerName().equals(others.get(0)) || !now.getServerName().equals(at.getServerName()),
            "the region stayed on " + at.getServerName());
        expect(count(c, t) == 260, "rows after the move");
      }
    });
    step("merge", () -> {
      try (RegionLocator locator = c.getRegionLocator(t)) {
        byte[] atG = locator.getRegionLocation(b("g"), true).getRegion().getRegionName();
        byte[] atK = locator.getRegionLocation(b("k"), true).getRegion().getRegionName();
        admin.mergeRegionsAsync(new byte[][] {atG, atK}, false).get(120, TimeUnit.SECONDS);
      }
      List<HRegionLocation> all = regionsOnceThere(c, t, 3);
      expect(all.size() == 3 && count(c, t) == 260, all);
    });
    step("alter", () -> {
      admin.addColumnFamily(t, ColumnFamilyDescriptorBuilder.of(b("g")));
      try (Table table = c.getTable(t)) {
        table.put(new Put(b("m-new")).addColumn(b("g"), b("q"), b("in-g")));
        expect(s(table.get(new Get(b("m-new"))).getValue(b("g"), b("q"))).equals("in-g"), "the new family");
      }
    });
    step("balancer", () -> {
      // A cluster's balancer is on unless switched off.
      expect(admin.isBalancerEnabled(), "isBalancerEnabled said false");
      admin.balance();
    });
    step("truncate", () -> {
      admin.disableTable(t);
      admin.truncateTable(t, true);
      expect(admin.isTableEnabled(t) && count(c, t) == 0, "rows after the truncate: " + count(c, t));
      List<HRegionLocation> all = regionsOnceThere(c, t, 3);
      expect(all.size() == 3, all);
    });
    step("drop", () -> {
      admin.disableTable(t);
      admin.deleteTable(t);
      admin.deleteNamespace(ns);
      expect(!admin.tableExists(t), "the table is still there");
    });
  }

  static long now() {
    return System.currentTimeMillis();
  }

  static void load(Connection c, TableName t, long millis, int threads) throws Exception {
    byte[] f = b("f");
    Admin admin = c.getAdmin();
    if (!admin.tableExists(t)) {
      admin.createTable(TableDescriptorBuilder.newBuilder(t).setColumnFamily(ColumnFamilyDescriptorBuilder.of(f)).build(),
          new byte[][] {b("e"), b("i"), b("m"), b("q"), b("u")});
    }
    long end = now() + millis;
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong calls = new AtomicLong();
    AtomicLong failures = new AtomicLong();
    ConcurrentLinkedQueue<String> acked = new ConcurrentLinkedQueue<>();
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      final int id = w;
      Thread worker = new Thread(() -> {
        Random random = new Random(id);
        List<String> mine = new ArrayList<>();
        try (Table table = c.getTable(t)) {
          for (int i = 0; now() < end; i++) {
            String row = String.format("%c-%d-%07d", (char) ('a' + (i * 7 + id) % 26), id, i);
            timed(() -> {
              table.put(new Put(b(row)).addColumn(f, b("q"), b(row)));
              mine.add(row);
              acked.add(row);
            }, calls, failures);
            if (mine.isEmpty()) {
              continue;
            }
            String back = mine.get(random.nextInt(mine.size()));
            timed(() -> {
              if (!back.equals(s(table.get(new Get(b(back))).getValue(f, b("q"))))) {
                System.out.println("STALE " + back);
              }
            }, calls, failures);
          }
        } catch (Exception e) {
          System.out.println("WORKER " + String.valueOf(e).replace('\n', ' '));
        }
      });
      worker.start();
      workers.add(worker);
    }
    Thread admins = new Thread(() -> adminLoop(c, t, end, stop));
    admins.start();
    for (Thread w : workers) {
      w.join();
    }
    stop.set(true);
    admins.join();
    int found = 0;
    int missing = 0;
    try (Table table = c.getTable(t)) {
      for (String row : acked) {
        if (row.equals(s(table.get(new Get(b(row))).getValue(f, b("q"))))) {
          found++;
        } else {
          missing++;
          System.out.println("MISSING " + row);
        }
      }
    }
    System.out.println("READ " + found + " " + missing);
    System.out.println("DONE " + calls.get() + " " + failures.get());
  }

  /** One data call, printed as "LAT start_ms micros ok|why" and counted. */
  static void timed(Step call, AtomicLong calls, AtomicLong failures) {
    long start = now();
    long t0 = System.nanoTime();
    String outcome = "ok";
    try {
      call.run();
    } catch (Exception e) {
      failures.incrementAndGet();
      outcome = String.valueOf(e).replace('\n', ' ');
    }
    System.out.println("LAT " + start + " " + (System.nanoTime() - t0) / 1000 + " " + outcome);
    calls.incrementAndGet();
  }

  /** Every two seconds: a split, a move, a merge or a balancer run, in turn. */
  static void adminLoop(Connection c, TableName t, long end, AtomicBoolean stop) {
    Random random = new Random(42);
    try {
      Admin admin = c.getAdmin();
      for (int turn = 0; !stop.get() && now() < end - 2000; turn++) {
        Thread.sleep(2000);
        long start = now();
        String op = new String[] {"split", "move", "merge", "balance"}[turn % 4];
        String outcome = "ok";
        try (RegionLocator locator = c.getRegionLocator(t)) {
          List<HRegionLocation> all = locator.getAllRegionLocations();
          if (op.equals("split")) {
            String at = String.format("%c-%d", (char) ('a' + random.nextInt(26)), random.nextInt(8));
            admin.split(t, b(at));
          } else if (op.equals("move")) {
            HRegionLocation r = all.get(random.nextInt(all.size()));
            List<ServerName> others = new ArrayList<>(admin.getRegionServers());
            others.remove(r.getServerName());
            Collections.shuffle(others, random);
            if (!others.isEmpty()) {
              admin.move(r.getRegion().getEncodedNameAsBytes(), others.get(0));
            }
          } else if (op.equals("merge") && all.size() > 2) {
            all.sort((x, y) -> Bytes.compareTo(x.getRegion().getStartKey(), y.getRegion().getStartKey()));
            int i = random.nextInt(all.size() - 1);
            admin.mergeRegionsAsync(new byte[][] {all.get(i).getRegion().getRegionName(),
                all.get(i + 1).getRegion().getRegionName()}, false).get(120, TimeUnit.SECONDS);
          } else if (op.equals("balance")) {
            admin.balance();
          }
        } catch (Exception e) {
          outcome = String.valueOf(e).replace('\n', ' ');
        }
        System.out.println("ADMIN " + op + " " + start + " " + now() + " " + outcome);
      }
    } catch (Exception e) {
      System.out.println("ADMIN loop " + String.valueOf(e).replace('\n', ' '));
    }
  }
}
