import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * HBase's own client (hbase-client 2.6.4) against a cluster of `accordion
 * server --cluster` processes, given only ZooKeeper's quorum
 * (ZKConnectionRegistry) or their RPC addresses (RpcConnectionRegistry): it
 * finds each region's server in hbase:meta and goes there.
 *
 * <p>{@code write REGISTRY TABLE PREFIX MILLIS}: puts rows aPREFIX-000000,
 * bPREFIX-000001, ... (a leading letter a..z in turn) one at a time for MILLIS ms, printing "ACK row epoch_s"
 * for each put the client reports done and "ERR epoch_s why" for each that
 * failed after the client's own retries; then "DONE acked failed".
 *
 * <p>{@code read REGISTRY TABLE ROW...} (rows also from stdin, one a line,
 * when none are given): prints "MISSING row" for each row not found and
 * "READ found missing".
 */
public class ClusterWriter {
  /**
   * REGISTRY is either the servers' RPC addresses ({@code host:port,...},
   * RpcConnectionRegistry) or {@code zk:host:port/parent} (ZKConnectionRegistry,
   * given only ZooKeeper's quorum and the znode parent).
   */
  static Configuration conf(String registry) {
    // The registry as MovingCluster reads it; the retries longer.
    Configuration conf = MovingCluster.conf(registry);
    // A put waits out a region's move: retried for up to 60 s.
    conf.setInt("hbase.client.retries.number", 60);
    conf.setLong("hbase.client.pause", 100);
    conf.setInt("hbase.rpc.timeout", 5000);
    conf.setInt("hbase.client.operation.timeout", 60000);
    conf.setInt("hbase.ipc.client.connect.timeout", 2000);
    return conf;
  }

  static double now() {
    return System.currentTimeMillis() / 1000.0;
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    try (Connection connection = ConnectionFactory.createConnection(conf(args[1]));
        Table table = connection.getTable(TableName.valueOf(args[2]))) {
      if (mode.equals("write")) {
        write(table, args[3], Long.parseLong(args[4]));
      } else {
        java.util.List<String> rows = new java.util.ArrayList<>();
        for (int i = 3; i < args.length; i++) {
          rows.add(args[i]);
        }
        if (rows.isEmpty()) {
          java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
          for (String line; (line = in.readLine()) != null; ) {
            if (!line.isEmpty()) {
              rows.add(line);
            }
          }
        }
        read(table, rows);
      }
    }
    System.exit(0);
  }

  static void write(Table table, String prefix, long millis) {
    long end = System.currentTimeMillis() + millis;
    int acked = 0;
    int failed = 0;
    for (int i = 0; System.currentTimeMillis() < end; i++) {
      // Leading letters a..z: the rows spread over every region.
      String row = String.format("%c%s-%06d", (char) ('a' + i % 26), prefix, i);
      try {
        table.put(new Put(Bytes.toBytes(row)).addColumn(Bytes.toBytes("f"), Bytes.toBytes("q"), Bytes.toBytes(row)));
        acked++;
        System.out.println("ACK " + row + " " + now());
      } catch (Exception e) {
        failed++;
        System.out.println("ERR " + now() + " " + String.valueOf(e).replace('\n', ' '));
      }
    }
    System.out.println("DONE " + acked + " " + failed);
  }

  static void read(Table table, java.util.List<String> rows) throws Exception {
    int found = 0;
    int missing = 0;
    for (String row : rows) {
      Result r = table.get(new Get(Bytes.toBytes(row)));
      if (row.equals(Bytes.toString(r.getValue(Bytes.toBytes("f"), Bytes.toBytes("q"))))) {
        found++;
      } else {
        missing++;
        System.out.println("MISSING " + row);
      }
    }
    System.out.println("READ " + found + " " + missing);
  }
}
