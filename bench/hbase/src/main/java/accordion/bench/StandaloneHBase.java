package accordion.bench;

import java.io.File;
import java.net.InetSocketAddress;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hbase.regionserver.HRegionServer;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;

/**
 * Real HBase 2.6.4 as a server, in one JVM, as {@code hbase master start}
 * runs it with {@code hbase.cluster.distributed=false} (HMasterCommandLine):
 * an in-process ZooKeeper (MiniZooKeeperCluster), an HMaster and one
 * HRegionServer (LocalHBaseCluster), data on local disk under DATA_DIR.
 * Everything else is HBase's default, with the settings HBase's shipped
 * standalone hbase-site.xml makes ({@code hbase.unsafe.stream.capability.enforce=false},
 * because the local file system has no hflush/hsync capability to check)
 * and ports the OS picks, so it never collides with a server on 16000/16020;
 * the web UIs are off (the hbase-server artifact does not carry them).
 *
 * <pre>bench/hbase/standalone.sh DATA_DIR [name=value ...]</pre>
 *
 * When the master has initialized and a client can list tables, one line on
 * stdout: {@code standalone hbase ready: zookeeper 127.0.0.1:P master 127.0.0.1:P regionserver 127.0.0.1:P}.
 * Clients use the ZooKeeper registry (hbase.zookeeper.quorum and
 * hbase.zookeeper.property.clientPort), or the RPC registry with the
 * master as bootstrap server. SIGTERM shuts the cluster down.
 */
public final class StandaloneHBase {
  private StandaloneHBase() {}

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {
      // ZooKeeper's and HBase's threads would keep a failed JVM alive.
      t.printStackTrace();
      System.exit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: StandaloneHBase DATA_DIR [name=value ...]");
      System.exit(2);
    }
    File dir = new File(args[0]).getAbsoluteFile();
    Configuration conf = HBaseConfiguration.create();
    conf.setBoolean(HConstants.CLUSTER_DISTRIBUTED, false);
    conf.set(HConstants.HBASE_DIR, new File(dir, "hbase").toURI().toString());
    conf.set("hbase.tmp.dir", new File(dir, "tmp").getPath());
    conf.set(HConstants.ZOOKEEPER_DATA_DIR, new File(dir, "zookeeper").getPath());
    conf.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    conf.setBoolean(LocalHBaseCluster.ASSIGN_RANDOM_PORTS, true);
    // No web UIs: the Maven artifact of hbase-server lacks hbase-webapps/,
    // and no client here needs them.
    conf.setInt(HConstants.MASTER_INFO_PORT, -1);
    conf.setInt(HConstants.REGIONSERVER_INFO_PORT, -1);
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      if (eq <= 0) {
        System.err.println("not name=value: " + args[i]);
        System.exit(2);
      }
      conf.set(args[i].substring(0, eq), args[i].substring(eq + 1));
    }

    // What HMasterCommandLine.startMaster does for a local cluster.
    DefaultMetricsSystem.setMiniClusterMode(true);
    MiniZooKeeperCluster zk = new MiniZooKeeperCluster(conf);
    int zkPort = zk.startup(new File(conf.get(HConstants.ZOOKEEPER_DATA_DIR)));
    conf.set(HConstants.ZOOKEEPER_QUORUM, "127.0.0.1");
    conf.setInt(HConstants.ZOOKEEPER_CLIENT_PORT, zkPort);
    conf.setInt(HConstants.ZK_SESSION_TIMEOUT, conf.getInt(HConstants.ZK_SESSION_TIMEOUT + ".localHBaseCluster", 10_000));
    LocalHBaseCluster cluster = new LocalHBaseCluster(conf, 1, 1, HMaster.class, HRegionServer.class);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      cluster.shutdown();
      cluster.join();
      try {
        zk.shutdown();
      } catch (Exception e) {
        System.err.println("ZooKeeper shutdown: " + e);
      }
    }, "standalone-hbase-shutdown"));
    cluster.startup();

    HMaster master = waitForMaster(cluster);
    // Ready once a client sees the cluster: meta and namespaces assigned.
    try (Connection c = ConnectionFactory.createConnection(conf); Admin admin = c.getAdmin()) {
      admin.listTableNames();
      admin.listNamespaceDescriptors();
    }
    InetSocketAddress m = master.getRpcServer().getListenerAddress();
    InetSocketAddress rs = cluster.getRegionServer(0).getRpcServer().getListenerAddress();
    System.out.println("standalone hbase ready: zookeeper 127.0.0.1:" + zkPort + " master 127.0.0.1:" + m.getPort()
        + " regionserver 127.0.0.1:" + rs.getPort());
    System.out.flush();
    cluster.join();
  }

  private static HMaster waitForMaster(LocalHBaseCluster cluster) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 300_000;
    while (System.currentTimeMillis() < deadline) {
      HMaster master = cluster.getActiveMaster();
      if (master != null && master.isInitialized()) {
        return master;
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("the master did not initialize within 5 minutes");
  }
}
