package accordion.ycsb;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.util.Bytes;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;

/**
 * A YCSB 0.17 {@link DB} on HBase 2's Java client, with the semantics of
 * YCSB's own {@code hbase2} binding (which is not published to Maven
 * Central): one row per record key, each field a qualifier in the family
 * {@code columnfamily}, one {@link Connection} shared by all client threads,
 * puts and deletes with the {@code durability} given (HBase's
 * {@link Durability} names; the table's own by default), and with
 * {@code clientbuffering=true} writes through a per-thread
 * {@link BufferedMutator} of {@code writebuffersize} bytes whose final flush
 * is timed under CLEANUP (YCSB's binding times it as an UPDATE with no
 * return).
 *
 * <p>Differences, each for a reason:
 * <ul>
 *   <li>Scans limit the rows with HBase 2's {@link Scan#setLimit} (the server
 *   stops after that many rows) and carry no filter unless
 *   {@code hbase.usepagefilter=true} asks for YCSB's {@link PageFilter};
 *   YCSB's binding always sets a (possibly empty) filter list, and a
 *   server without filters would refuse every scan for it. The client
 *   still stops after {@code recordcount} rows, as YCSB's does.</li>
 *   <li>The connection is configured from YCSB's properties: every property
 *   named {@code hbase.*} or {@code zookeeper.*} is copied into the HBase
 *   {@link Configuration} (YCSB's binding reads only an hbase-site.xml on the
 *   classpath), so {@code -p hbase.client.registry.impl=...} or
 *   {@code -p hbase.zookeeper.quorum=...} choose the cluster.</li>
 *   <li>{@code createtable=true} creates the table with the family when it is
 *   missing, pre-split into {@code presplits} regions at YCSB's documented
 *   split points ({@code user1000}..{@code user9999}); YCSB's binding
 *   expects the table to exist and so does this one otherwise.</li>
 * </ul>
 */
public class HBaseClient extends DB {
  private static final AtomicInteger THREAD_COUNT = new AtomicInteger(0);
  /** Shared by every client thread; guarded by THREAD_COUNT's monitor. */
  private static Connection connection = null;

  private final Configuration config = HBaseConfiguration.create();
  private boolean debug = false;
  private String tableName = "";
  private Table currentTable = null;
  private BufferedMutator bufferedMutator = null;
  private String columnFamily = "";
  private byte[] columnFamilyBytes;
  private Durability durability = Durability.USE_DEFAULT;
  private boolean usePageFilter = false;
  private boolean clientSideBuffering = false;
  private long writeBufferSize = 1024 * 1024 * 12;

  @Override
  public void init() throws DBException {
    for (String name : getProperties().stringPropertyNames()) {
      if (name.startsWith("hbase.") || name.startsWith("zookeeper.")) {
        config.set(name, getProperties().getProperty(name));
      }
    }
    clientSideBuffering = bool("clientbuffering", false);
    if (getProperties().containsKey("writebuffersize")) {
      writeBufferSize = Long.parseLong(getProperties().getProperty("writebuffersize"));
    }
    if (getProperties().getProperty("durability") != null) {
      durability = Durability.valueOf(getProperties().getProperty("durability"));
    }
    debug = bool("debug", false);
    usePageFilter = bool("hbase.usepagefilter", false);
    columnFamily = getProperties().getProperty("columnfamily");
    if (columnFamily == null) {
      System.err.println("Error, must specify a columnfamily for HBase table");
      throw new DBException("No columnfamily specified");
    }
    columnFamilyBytes = Bytes.toBytes(columnFamily);

    String table = getProperties().getProperty("table", "usertable");
    THREAD_COUNT.getAndIncrement();
    try {
      synchronized (THREAD_COUNT) {
        if (connection == null) {
          connection = ConnectionFactory.createConnection(config);
          // Fail now if the table is missing: once the workload runs, YCSB
          // only counts errors.
          TableName name = TableName.valueOf(table);
          try (Admin admin = connection.getAdmin()) {
            if (!admin.tableExists(name)) {
              if (!bool("createtable", false)) {
                throw new DBException("Table " + name + " does not exist");
              }
              createTable(admin, name, Integer.parseInt(getProperties().getProperty("presplits", "1")));
            }
          }
        }
      }
    } catch (IOException e) {
      throw new DBException(e);
    }
  }

  private void createTable(Admin admin, TableName name, int regions) throws IOException {
    TableDescriptorBuilder table = TableDescriptorBuilder.newBuilder(name)
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of(columnFamilyBytes));
    if (regions <= 1) {
      admin.createTable(table.build());
      return;
    }
    // YCSB's recommended pre-split of usertable: user1000 .. user9999 in
    // equal steps (its keys are "user" followed by a hash's digits).
    byte[][] splits = new byte[regions - 1][];
    for (int i = 1; i < regions; i++) {
      splits[i - 1] = Bytes.toBytes("user" + (1000 + i * (9999 - 1000) / regions));
    }
    admin.createTable(table.build(), splits);
  }

  private boolean bool(String name, boolean dflt) {
    return Boolean.parseBoolean(getProperties().getProperty(name, Boolean.toString(dflt)));
  }

  @Override
  public void cleanup() throws DBException {
    Measurements measurements = Measurements.getMeasurements();
    try {
      long st = System.nanoTime();
      if (bufferedMutator != null) {
        bufferedMutator.close();
      }
      if (currentTable != null) {
        currentTable.close();
      }
      long en = System.nanoTime();
      // With client-side buffering the last flush is the writes' own cost:
      // it is in the run's time (and so its throughput) either way. YCSB's
      // binding times it as one more UPDATE without a return, which leaves
      // UPDATE with more operations than returns (what a lost operation
      // looks like); here it is timed under CLEANUP.
      measurements.measure("CLEANUP", (int) ((en - st) / 1000));
      if (THREAD_COUNT.decrementAndGet() <= 0) {
        synchronized (THREAD_COUNT) {
          if (connection != null) {
            connection.close();
            connection = null;
          }
        }
      }
    } catch (IOException e) {
      throw new DBException(e);
    }
  }

  /** Opens the table (and the mutator) when a call names another table. */
  private boolean use(String table) {
    if (tableName.equals(table)) {
      return true;
    }
    try {
      TableName name = TableName.valueOf(table);
      currentTable = connection.getTable(name);
      if (clientSideBuffering) {
        bufferedMutator = connection.getBufferedMutator(new BufferedMutatorParams(name).writeBufferSize(writeBufferSize));
      }
      tableName = table;
      return true;
    } catch (IOException e) {
      System.err.println("Error accessing HBase table: " + e);
      return false;
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    if (!use(table)) {
      return Status.ERROR;
    }
    Result r;
    try {
      Get g = new Get(Bytes.toBytes(key));
      if (fields == null) {
        g.addFamily(columnFamilyBytes);
      } else {
        for (String field : fields) {
          g.addColumn(columnFamilyBytes, Bytes.toBytes(field));
        }
      }
      r = currentTable.get(g);
    } catch (IOException e) {
      if (debug) {
        System.err.println("Error doing get: " + e);
      }
      return Status.ERROR;
    }
    if (r.isEmpty()) {
      return Status.NOT_FOUND;
    }
    while (r.advance()) {
      Cell c = r.current();
      result.put(Bytes.toString(CellUtil.cloneQualifier(c)), new ByteArrayByteIterator(CellUtil.cloneValue(c)));
    }
    return Status.OK;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    if (!use(table)) {
      return Status.ERROR;
    }
    Scan s = new Scan().withStartRow(Bytes.toBytes(startkey));
    s.setCaching(recordcount);
    s.setLimit(recordcount);
    if (usePageFilter) {
      s.setFilter(new PageFilter(recordcount));
    }
    if (fields == null) {
      s.addFamily(columnFamilyBytes);
    } else {
      for (String field : fields) {
        s.addColumn(columnFamilyBytes, Bytes.toBytes(field));
      }
    }
    try (ResultScanner scanner = currentTable.getScanner(s)) {
      int numResults = 0;
      for (Result rr = scanner.next(); rr != null; rr = scanner.next()) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        while (rr.advance()) {
          Cell cell = rr.current();
          row.put(Bytes.toString(CellUtil.cloneQualifier(cell)), new ByteArrayByteIterator(CellUtil.cloneValue(cell)));
        }
        result.add(row);
        numResults++;
        // A PageFilter counts per region; stop at recordcount as YCSB does.
        if (numResults >= recordcount) {
          break;
        }
      }
    } catch (IOException e) {
      if (debug) {
        System.err.println("Error in getting/parsing scan result: " + e);
      }
      return Status.ERROR;
    }
    return Status.OK;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    if (!use(table)) {
      return Status.ERROR;
    }
    Put p = new Put(Bytes.toBytes(key));
    for (Map.Entry<String, ByteIterator> entry : values.entrySet()) {
      p.addColumn(columnFamilyBytes, Bytes.toBytes(entry.getKey()), entry.getValue().toArray());
    }
    return write(p);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return update(table, key, values);
  }

  @Override
  public Status delete(String table, String key) {
    if (!use(table)) {
      return Status.ERROR;
    }
    return write(new Delete(Bytes.toBytes(key)));
  }

  /** A put or delete, buffered or sent at once, with the configured durability. */
  private Status write(Mutation m) {
    m.setDurability(durability);
    try {
      if (clientSideBuffering) {
        bufferedMutator.mutate(m);
      } else if (m instanceof Put) {
        currentTable.put((Put) m);
      } else {
        currentTable.delete((Delete) m);
      }
    } catch (IOException e) {
      if (debug) {
        System.err.println("Error doing " + m.getClass().getSimpleName() + ": " + e);
      }
      return Status.ERROR;
    }
    return Status.OK;
  }
}
