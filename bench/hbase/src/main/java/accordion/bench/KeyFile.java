package accordion.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/** A file of records {@code [u32 big-endian length][key bytes]}, held in one array. */
final class KeyFile {
  private final byte[] data;
  private final int[] offsets; // start of each key's bytes (after its length)

  private KeyFile(byte[] data, int[] offsets) {
    this.data = data;
    this.offsets = offsets;
  }

  static KeyFile load(String file) throws IOException {
    Path p = Path.of(file);
    if (Files.size(p) > Integer.MAX_VALUE - 16) {
      throw new IOException(file + " is larger than 2 GiB");
    }
    byte[] d = Files.readAllBytes(p);
    int n = 0;
    int pos = 0;
    while (pos < d.length) {
      int len = readLen(d, pos, file);
      pos += 4 + len;
      n++;
    }
    int[] offs = new int[n];
    pos = 0;
    for (int i = 0; i < n; i++) {
      int len = readLen(d, pos, file);
      offs[i] = pos + 4;
      pos += 4 + len;
    }
    return new KeyFile(d, offs);
  }

  private static int readLen(byte[] d, int pos, String file) throws IOException {
    if (pos + 4 > d.length) {
      throw new IOException(file + ": truncated length at offset " + pos);
    }
    int len = ((d[pos] & 0xff) << 24) | ((d[pos + 1] & 0xff) << 16) | ((d[pos + 2] & 0xff) << 8)
      | (d[pos + 3] & 0xff);
    if (len < 0 || pos + 4 + len > d.length) {
      throw new IOException(file + ": bad record length " + len + " at offset " + pos);
    }
    return len;
  }

  int size() {
    return offsets.length;
  }

  byte[] get(long i) {
    int off = offsets[(int) i];
    int len = ((data[off - 4] & 0xff) << 24) | ((data[off - 3] & 0xff) << 16)
      | ((data[off - 2] & 0xff) << 8) | (data[off - 1] & 0xff);
    return Arrays.copyOfRange(data, off, off + len);
  }
}
