import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * Drives HBase's own client (hbase-client 2.6.4) against the server on
 * 127.0.0.1:<port>, over RPC only (RpcConnectionRegistry: no ZooKeeper), and
 * prints one line per step for crates/hbase_rpc/tests/java_client.rs to check.
 * A failed step prints "FAIL <step> <exception>" and the probe goes on.
 * With a second argument "nocodec" the client names no cell block codec, so
 * every cell travels inside the protobuf messages instead.
 */
public class Probe {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.client.registry.impl", "org.apache.hadoop.hbase.client.RpcConnectionRegistry");
    conf.set("hbase.client.bootstrap.servers", "127.0.0.1:" + port);
    conf.setInt("hbase.client.retries.number", 3);
    conf.setLong("hbase.client.pause", 50);
    conf.setInt("hbase.rpc.timeout", 10000);
    conf.setInt("hbase.client.operation.timeout", 20000);
    conf.setInt("hbase.client.meta.operation.timeout", 20000);
    if (args.length > 1 && args[1].equals("nocodec")) {
      // Both keys: the default codec applies when the first is unset.
      conf.set("hbase.client.rpc.codec", "");
      conf.set("hbase.client.default.rpc.codec", "");
    }

    try (Connection connection = ConnectionFactory.createConnection(conf)) {
      System.out.println("CONNECTED");

      step("META", () -> {
        try (RegionLocator meta = connection.getRegionLocator(TableName.META_TABLE_NAME)) {
          for (HRegionLocation loc : meta.getAllRegionLocations()) {
            System.out.println("META " + loc.getRegion().getRegionNameAsString() + " on "
              + loc.getServerName());
          }
        }
      });

      TableName t = TableName.valueOf("t");
      byte[] f = Bytes.toBytes("f");
      byte[] q = Bytes.toBytes("q");
      step("PUT", () -> {
        try (Table table = connection.getTable(t)) {
          // A single Put travels as a Mutate call, its cells inside the
          // protobuf message.
          table.put(new Put(Bytes.toBytes("r1")).addColumn(f, q, Bytes.toBytes("v1")));
          System.out.println("PUT r1");
        }
      });
      step("MULTI", () -> {
        try (Table table = connection.getTable(t)) {
          // A list of Puts travels as a Multi call, its cells in a cell block.
          List<Put> puts = new ArrayList<>();
          puts.add(new Put(Bytes.toBytes("r2")).addColumn(f, q, Bytes.toBytes("v2")));
          puts.add(new Put(Bytes.toBytes("r3")).addColumn(f, q, Bytes.toBytes("v3"))
            .addColumn(f, Bytes.toBytes("q2"), Bytes.toBytes("w3")));
          table.put(puts);
          System.out.println("MULTI r2 r3");
        }
      });
      step("GET", () -> {
        try (Table table = connection.getTable(t)) {
          for (String row : new String[] { "r1", "r2", "r3", "r9" }) {
            Result result = table.get(new Get(Bytes.toBytes(row)));
            StringBuilder line = new StringBuilder("GET " + row);
            if (result.isEmpty()) {
              line.append(" <empty>");
            }
            for (Cell cell : result.rawCells()) {
              line.append(' ').append(Bytes.toString(CellUtil.cloneFamily(cell))).append(':')
                .append(Bytes.toString(CellUtil.cloneQualifier(cell))).append('=')
                .append(Bytes.toString(CellUtil.cloneValue(cell)));
            }
            System.out.println(line);
          }
        }
      });
      step("MOVED", () -> {
        try (Table table = connection.getTable(t)) {
          // The fake answers the first Get of this row RegionMovedException
          // (to itself): the client must take the destination from it and
          // retry there.
          table.put(new Put(Bytes.toBytes("moved")).addColumn(f, q, Bytes.toBytes("vm")));
          Result result = table.get(new Get(Bytes.toBytes("moved")));
          System.out.println("MOVED " + Bytes.toString(result.getValue(f, q)));
        }
      });
      step("UNIMPLEMENTED", () -> {
        // AdminService.GetRegionLoad, which the fake does not implement.
        long start = System.nanoTime();
        try (Admin admin = connection.getAdmin()) {
          admin.getRegionMetrics(ServerName.valueOf("127.0.0.1", port, 1L));
          System.out.println("UNIMPLEMENTED answered?");
        } catch (Exception e) {
          long ms = (System.nanoTime() - start) / 1_000_000;
          System.out.println("UNIMPLEMENTED " + ms + "ms " + e.getClass().getName() + ": "
            + e.getMessage().split("\n")[0]);
        }
      });
    }
    System.out.println("DONE");
    System.exit(0);
  }

  interface Step {
    void run() throws Exception;
  }

  private static void step(String name, Step step) {
    try {
      step.run();
    } catch (Throwable e) {
      System.out.println("FAIL " + name + " " + e);
      e.printStackTrace(System.out);
    }
  }
}
