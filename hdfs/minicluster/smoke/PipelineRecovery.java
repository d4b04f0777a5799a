// Part of smoke.py: writes a file with hflush (as a WAL does), waits for a line on stdin (the
// smoke test stops a DataNode of the pipeline meanwhile), writes and hflushes more, closes, reads
// it back. Args: hdfs://HOST:PORT POLICY [BEST_EFFORT]. Run as a single-file source program:
// java -cp target/classes:$(cat target/classpath.txt) smoke/PipelineRecovery.java ...
import java.io.*;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.*;
import org.apache.hadoop.hdfs.client.HdfsDataOutputStream;

public class PipelineRecovery {
  public static void main(String[] a) throws Exception {
    Configuration conf = new Configuration();
    conf.set("dfs.client.block.write.replace-datanode-on-failure.policy", a[1]);
    if (a.length > 2) conf.set("dfs.client.block.write.replace-datanode-on-failure.best-effort", a[2]);
    FileSystem fs = FileSystem.get(new URI(a[0]), conf);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    Path p = new Path("/wal-" + a[1]);
    byte[] buf = new byte[64 * 1024];
    for (int i = 0; i < buf.length; i++) buf[i] = (byte) i;
    long n = 0;
    FSDataOutputStream out = fs.create(p, true);
    try {
      for (int i = 0; i < 16; i++) { out.write(buf); n += buf.length; out.hflush(); }
      System.out.println("FLUSHED repl=" + ((HdfsDataOutputStream) out).getCurrentBlockReplication());
      in.readLine();
      for (int i = 0; i < 16; i++) { out.write(buf); n += buf.length; out.hflush(); }
      System.out.println("AFTER repl=" + ((HdfsDataOutputStream) out).getCurrentBlockReplication());
      out.close();
    } catch (IOException e) {
      System.out.println("WRITE FAILED: " + e.toString().replace('\n', ' '));
      return;
    }
    long len = fs.getFileStatus(p).getLen();
    byte[] back = new byte[(int) len];
    try (FSDataInputStream r = fs.open(p)) { r.readFully(back); }
    boolean ok = len == n;
    for (int i = 0; ok && i < back.length; i++) ok = back[i] == (byte) (i % buf.length);
    System.out.println("CLOSED len=" + len + " expected=" + n + " content " + (ok ? "ok" : "BAD"));
  }
}
