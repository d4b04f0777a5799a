package accordion.bench;

import java.io.IOException;
import java.util.Collection;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.regionserver.HStoreFile;
import org.apache.hadoop.hbase.regionserver.RegionServerServices;
import org.apache.hadoop.hbase.regionserver.compactions.CompactionRequestImpl;
import org.apache.hadoop.hbase.security.User;
import org.apache.hadoop.hbase.wal.WAL;

/**
 * HBase's HRegion, unchanged except that its stores count disk compactions and the bytes they
 * write (HStore keeps only cell counts for compactions; the region server's metrics, which get
 * the output size, need a region server).
 */
public class BenchRegion extends HRegion {

  public BenchRegion(Path tableDir, WAL wal, FileSystem fs, Configuration conf,
    RegionInfo regionInfo, TableDescriptor htd, RegionServerServices rsServices) {
    super(tableDir, wal, fs, conf, regionInfo, htd, rsServices);
  }

  @Override
  protected HStore instantiateHStore(ColumnFamilyDescriptor family, boolean warmup)
    throws IOException {
    if (family.isMobEnabled()) {
      return super.instantiateHStore(family, warmup);
    }
    return new CountingStore(this, family, this.conf, warmup);
  }

  /** HStore that counts completed compactions and their input and output bytes. */
  static final class CountingStore extends HStore {
    CountingStore(HRegion region, ColumnFamilyDescriptor family, Configuration conf,
      boolean warmup) throws IOException {
      super(region, family, conf, warmup);
    }

    @Override
    protected List<HStoreFile> doCompaction(CompactionRequestImpl cr,
      Collection<HStoreFile> filesToCompact, User user, long compactionStartTime,
      List<Path> newFiles) throws IOException {
      List<HStoreFile> out =
        super.doCompaction(cr, filesToCompact, user, compactionStartTime, newFiles);
      long bytes = 0;
      for (HStoreFile sf : out) {
        if (sf.getReader() != null) {
          bytes += sf.getReader().length();
        }
      }
      Counters.compaction(cr.getSize(), bytes);
      return out;
    }
  }
}
