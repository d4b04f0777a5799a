package accordion;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSCluster.DataNodeProperties;
import org.apache.hadoop.hdfs.protocol.HdfsConstants.DatanodeReportType;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * A real HDFS mini cluster (Hadoop's MiniDFSCluster: one NameNode, N DataNodes, all in this JVM)
 * on loopback ports chosen at run time, driven over stdin/stdout.
 *
 * <pre>
 * usage: MiniHdfs --dir PATH [--datanodes N] [--fsync] [--conf KEY=VALUE]...
 * </pre>
 *
 * stdout carries exactly one line "READY hdfs://127.0.0.1:PORT" once the cluster is up, then one
 * line per command read from stdin ("OK ..." or "ERR message"). Everything else (Hadoop's logs,
 * anything Hadoop prints with System.out) goes to stderr. End of stdin shuts the cluster down and
 * exits 0, so a test that dies leaves no JVM behind. See README.md for the commands.
 */
public final class MiniHdfs {
  /** How long restart-datanode and "stop-datanode i wait" wait for the NameNode to agree. */
  private static final long WAIT_MS = 60_000;
  /** Written into --dir; a non-empty --dir without it is refused (MiniDFSCluster deletes it). */
  private static final String MARKER = ".mini-hdfs";

  /** The real stdout; System.out is pointed at stderr so stray prints cannot corrupt the protocol. */
  private final PrintStream out;
  private final MiniDFSCluster cluster;
  private final File base;
  /** DataNode slots, numbered as at start-up; an index keeps naming the same storage. */
  private final List<Slot> slots = new ArrayList<>();
  private volatile boolean down = false;

  private static final class Slot {
    DataNode running;            // null while stopped
    DataNodeProperties stopped;  // what restart needs; null while running
    String xferAddr;             // 127.0.0.1:port of the data transfer server
  }

  private MiniHdfs(PrintStream out, MiniDFSCluster cluster, File base) {
    this.out = out;
    this.cluster = cluster;
    this.base = base;
    for (DataNode dn : cluster.getDataNodes()) {
      Slot s = new Slot();
      s.running = dn;
      s.xferAddr = xferAddr(dn);
      slots.add(s);
    }
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true,
        StandardCharsets.UTF_8);
    System.setOut(System.err);
    if (System.getProperty("minihdfs.log.level") == null) {
      System.setProperty("minihdfs.log.level", "WARN");
    }

    String dir = null;
    int datanodes = 3;
    boolean fsync = false;
    List<String[]> overrides = new ArrayList<>();
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--dir": dir = args[++i]; break;
          case "--datanodes": datanodes = Integer.parseInt(args[++i]); break;
          case "--fsync": fsync = true; break;
          case "--conf": {
            String kv = args[++i];
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("--conf wants KEY=VALUE, got " + kv);
            overrides.add(new String[] {kv.substring(0, eq), kv.substring(eq + 1)});
            break;
          }
          case "-h": case "--help": usage(null); return;
          default: throw new IllegalArgumentException("unknown argument " + args[i]);
        }
      }
      if (dir == null) throw new IllegalArgumentException("--dir PATH is required");
      if (datanodes < 1) throw new IllegalArgumentException("--datanodes must be at least 1");
    } catch (ArrayIndexOutOfBoundsException e) {
      usage("missing value after " + args[args.length - 1]);
    } catch (IllegalArgumentException e) {
      usage(e.getMessage());
    }

    File base = new File(dir).getAbsoluteFile();
    prepareBaseDir(base);

    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getPath());
    conf.setInt("dfs.replication", Math.min(3, datanodes));
    conf.setBoolean("dfs.permissions.enabled", false);
    // Liveness. DataNodes heartbeat every second; the NameNode rechecks every second and declares
    // a DataNode dead after 2 * recheck + 10 * heartbeat = 12 s without a heartbeat (the defaults
    // make that 10.5 minutes). Before that, after 3 s of silence, it is "stale", and stale nodes
    // are neither handed to readers first nor chosen for new blocks.
    conf.set("dfs.heartbeat.interval", "1");
    conf.setInt("dfs.namenode.heartbeat.recheck-interval", 1000);
    conf.setInt("dfs.namenode.stale.datanode.interval", 3000);
    conf.setBoolean("dfs.namenode.avoid.read.stale.datanode", true);
    conf.setBoolean("dfs.namenode.avoid.write.stale.datanode", true);
    conf.setFloat("dfs.namenode.write.stale.datanode.ratio", 1.0f);
    conf.setInt("dfs.namenode.safemode.extension", 0);
    // Tests may want files of many small blocks; the default minimum is 1 MiB.
    conf.setLong("dfs.namenode.fs-limits.min-block-size", 0);
    // Pipeline recovery with 3 DataNodes (client-side settings: they apply to clients built from
    // this Configuration, and a client of this cluster written elsewhere should use the same).
    // When a DataNode of a write pipeline dies, the client rebuilds the pipeline from the ones
    // left. The DEFAULT policy then also asks the NameNode for a replacement DataNode once the
    // stream has been hflushed (every WAL) and fewer than `replication` nodes are left; with 3
    // DataNodes and replication 3 there is no spare, so the write would fail with "Failed to
    // replace a bad datanode on the existing pipeline due to no more good datanodes being
    // available to try". Policy NEVER keeps writing on the surviving DataNodes (the NameNode
    // re-replicates the block later, once a DataNode is back). enable=false would act the same on
    // the write path (both policies never ask for a replacement); we say NEVER because it names
    // the behaviour we want, and best-effort=true so that even a client left on DEFAULT by a
    // --conf override keeps writing when no replacement exists instead of failing the stream.
    conf.setBoolean("dfs.client.block.write.replace-datanode-on-failure.enable", true);
    conf.set("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER");
    conf.setBoolean("dfs.client.block.write.replace-datanode-on-failure.best-effort", true);
    for (String[] kv : overrides) conf.set(kv[0], kv[1]);

    long t0 = System.nanoTime();
    MiniDFSCluster cluster;
    try {
      // Ports: NameNode RPC 0 and HTTP 0 (ephemeral); MiniDFSCluster binds the NameNode and every
      // DataNode (data transfer, IPC, HTTP) to 127.0.0.1:0 and registers DataNodes as 127.0.0.1.
      cluster = new MiniDFSCluster.Builder(conf, base)
          .numDataNodes(datanodes)
          .nameNodePort(0)
          .nameNodeHttpPort(0)
          .format(true)
          .skipFsyncForTesting(!fsync)
          .build();
      cluster.waitActive();
    } catch (Throwable e) {
      System.err.println("mini-hdfs: the cluster did not start: " + e);
      e.printStackTrace(System.err);
      Runtime.getRuntime().halt(1);
      return;
    }
    MiniHdfs mini = new MiniHdfs(out, cluster, base);
    Runtime.getRuntime().addShutdownHook(new Thread(mini::shutdownQuietly, "mini-hdfs-shutdown"));
    int port = cluster.getNameNodePort();
    System.err.printf(Locale.ROOT,
        "mini-hdfs: up in %.1f s: NameNode hdfs://127.0.0.1:%d, web UI %s, %d DataNodes %s,"
            + " base dir %s%n",
        (System.nanoTime() - t0) / 1e9, port, cluster.getHttpUri(0), datanodes,
        mini.addresses(), base);
    out.println("READY hdfs://127.0.0.1:" + port);
    out.flush();

    mini.serve();
    mini.shutdownQuietly();
    System.exit(0);
  }

  private static void usage(String error) {
    PrintStream err = System.err;
    if (error != null) err.println("mini-hdfs: " + error);
    err.println("usage: MiniHdfs --dir PATH [--datanodes N (default 3)] [--fsync]"
        + " [--conf KEY=VALUE]...");
    err.println("  --dir is formatted at start and deleted at exit.");
    err.println("  --fsync: DataNodes really fsync on hsync (by default MiniDFSCluster skips it).");
    if (error != null) System.exit(2);
  }

  /**
   * MiniDFSCluster formats {@code base/data} at start and deletes all of {@code base} at exit,
   * so refuse a directory holding anything that is not ours.
   */
  private static void prepareBaseDir(File base) throws IOException {
    File marker = new File(base, MARKER);
    String[] entries = base.list();
    if (base.exists() && !base.isDirectory()) {
      usage(base + " exists and is not a directory");
    }
    if (entries != null && entries.length > 0 && !marker.exists()) {
      usage(base + " is not empty and was not made by MiniHdfs (no " + MARKER
          + "); it would be deleted at exit, so give an empty or new directory");
    }
    if (!base.isDirectory() && !base.mkdirs()) {
      throw new IOException("cannot create " + base);
    }
    marker.createNewFile();
  }

  /** Reads commands until "shutdown" or end of stdin. */
  private void serve() throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      line = line.trim();
      if (line.isEmpty()) continue;
      String[] w = line.split("\\s+");
      String reply;
      try {
        switch (w[0]) {
          case "shutdown":
            shutdownQuietly();
            out.println("OK shutdown");
            out.flush();
            return;
          case "datanodes": reply = "OK " + liveCount(); break;
          case "status": reply = "OK " + status(); break;
          case "bytes-written": reply = "OK " + bytesWritten(); break;
          case "stop-datanode": reply = stopDataNode(w); break;
          case "restart-datanode": reply = restartDataNode(w); break;
          case "stop-namenode":
            // Clients see connection refused until restart-namenode.
            cluster.shutdownNameNode(0);
            reply = "OK stopped namenode";
            break;
          case "restart-namenode":
            // Same port and metadata; waits until it is active and the
            // DataNodes have re-registered.
            cluster.restartNameNode(0, true);
            cluster.waitActive();
            reply = "OK restarted namenode 127.0.0.1:" + cluster.getNameNodePort();
            break;
          case "help":
            reply = "OK commands: datanodes | status | bytes-written | stop-datanode I [wait]"
                + " | restart-datanode I | stop-namenode | restart-namenode | shutdown";
            break;
          default: reply = "ERR unknown command: " + w[0];
        }
      } catch (IllegalArgumentException e) {
        reply = "ERR " + oneLine(e.getMessage());
      } catch (Throwable e) {
        System.err.println("mini-hdfs: " + line + ": " + e);
        e.printStackTrace(System.err);
        reply = "ERR " + oneLine(e.toString());
      }
      out.println(reply);
      out.flush();
    }
    System.err.println("mini-hdfs: end of stdin, shutting down");
  }

  private Slot slot(String[] w) {
    if (w.length < 2) throw new IllegalArgumentException(w[0] + " needs a DataNode index");
    int i;
    try {
      i = Integer.parseInt(w[1]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a DataNode index: " + w[1]);
    }
    if (i < 0 || i >= slots.size()) {
      throw new IllegalArgumentException(
          "no DataNode " + i + " (indexes are 0.." + (slots.size() - 1) + ")");
    }
    return slots.get(i);
  }

  /**
   * stop-datanode I [wait]: stops DataNode I (its storage stays for restart-datanode). The
   * NameNode learns of it as of a crash, by missed heartbeats (stale after 3 s, dead after
   * about 12 s); with "wait" the answer comes once the NameNode counts it dead.
   */
  private String stopDataNode(String[] w) throws Exception {
    Slot s = slot(w);
    boolean wait = w.length > 2 && w[2].equals("wait");
    if (w.length > 3 || (w.length == 3 && !wait)) {
      return "ERR usage: stop-datanode I [wait]";
    }
    if (s.running == null) return "ERR DataNode " + w[1] + " is already stopped";
    String uuid = s.running.getDatanodeUuid();
    DataNodeProperties props;
    synchronized (cluster) {
      int idx = cluster.getDataNodes().indexOf(s.running);
      if (idx < 0) return "ERR DataNode " + w[1] + " is not in the cluster";
      props = cluster.stopDataNode(idx);
    }
    s.stopped = props;
    s.running = null;
    if (wait) {
      long deadline = System.currentTimeMillis() + WAIT_MS;
      while (isLive(uuid)) {
        if (System.currentTimeMillis() > deadline) {
          return "ERR DataNode " + w[1] + " stopped but the NameNode still counts it live";
        }
        Thread.sleep(100);
      }
    }
    return "OK stopped datanode " + w[1] + " " + s.xferAddr;
  }

  /** restart-datanode I: starts a stopped DataNode again on its old ports and storage. */
  private String restartDataNode(String[] w) throws Exception {
    Slot s = slot(w);
    if (s.running != null) return "ERR DataNode " + w[1] + " is running";
    DataNodeProperties props = s.stopped;
    try {
      // Same transfer and IPC ports as before, as a restarted DataNode on a real host would.
      cluster.restartDataNode(props, true);
    } catch (IOException e) {
      // The old port was taken meanwhile: take new ones (the NameNode accepts the re-registration
      // of the same DataNode UUID at a new address).
      System.err.println("mini-hdfs: restart of DataNode " + w[1] + " on its old ports failed ("
          + e + "); trying new ports");
      Configuration c = dnConf(props);
      c.set("dfs.datanode.address", "127.0.0.1:0");
      c.set("dfs.datanode.ipc.address", "127.0.0.1:0");
      cluster.restartDataNode(props, false);
    }
    ArrayList<DataNode> dns = cluster.getDataNodes();
    DataNode dn = dns.get(dns.size() - 1);
    s.running = dn;
    s.stopped = null;
    s.xferAddr = xferAddr(dn);
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!(dn.isDatanodeFullyStarted() && isLive(dn.getDatanodeUuid()))) {
      if (System.currentTimeMillis() > deadline) {
        return "ERR DataNode " + w[1] + " restarted but is not live after " + WAIT_MS + " ms";
      }
      Thread.sleep(100);
    }
    return "OK restarted datanode " + w[1] + " " + s.xferAddr;
  }

  private static Configuration dnConf(DataNodeProperties props) throws ReflectiveOperationException {
    Field f = DataNodeProperties.class.getDeclaredField("conf");
    f.setAccessible(true);
    return (Configuration) f.get(props);
  }

  private int liveCount() {
    return cluster.getNamesystem().getNumLiveDataNodes();
  }

  private boolean isLive(String uuid) {
    for (DatanodeDescriptor d : cluster.getNamesystem().getBlockManager().getDatanodeManager()
        .getDatanodeListForReport(DatanodeReportType.LIVE)) {
      if (d.getDatanodeUuid().equals(uuid)) return true;
    }
    return false;
  }

  /**
   * Bytes the running DataNodes have written to their block files since they started (their
   * DataNodeMetrics "BytesWritten", every replica counted), summed: what the cluster really wrote
   * for its clients. The counter is a package-private field, read by reflection.
   */
  private synchronized long bytesWritten() throws ReflectiveOperationException {
    java.lang.reflect.Field f =
        org.apache.hadoop.hdfs.server.datanode.metrics.DataNodeMetrics.class.getDeclaredField(
            "bytesWritten");
    f.setAccessible(true);
    long sum = 0;
    for (Slot s : slots) {
      if (s.running == null) continue;
      Object counter = f.get(s.running.getMetrics());
      sum += ((org.apache.hadoop.metrics2.lib.MutableCounterLong) counter).value();
    }
    return sum;
  }

  /** "live=3 0=running:127.0.0.1:41234 1=stopped:127.0.0.1:40011 ..." */
  private String status() {
    StringBuilder b = new StringBuilder("live=").append(liveCount());
    for (int i = 0; i < slots.size(); i++) {
      Slot s = slots.get(i);
      b.append(' ').append(i).append('=').append(s.running != null ? "running" : "stopped")
          .append(':').append(s.xferAddr);
    }
    return b.toString();
  }

  private String addresses() {
    List<String> a = new ArrayList<>();
    for (Slot s : slots) a.add(s.xferAddr);
    return a.toString();
  }

  private static String xferAddr(DataNode dn) {
    return "127.0.0.1:" + dn.getXferAddress().getPort();
  }

  private static String oneLine(String s) {
    return s.replace('\n', ' ').replace('\r', ' ');
  }

  private synchronized void shutdownQuietly() {
    if (down) return;
    down = true;
    try {
      cluster.shutdown(true);
    } catch (Throwable e) {
      // From the JVM shutdown hook (SIGTERM), MiniDFSCluster stops every node, then fails to
      // clear Hadoop's shutdown hooks ("Shutdown in progress") before deleting its directory.
      if (!(e instanceof IllegalStateException)) {
        System.err.println("mini-hdfs: shutdown: " + e);
      }
    }
    FileUtil.fullyDelete(base);
  }
}
