package org.james.consistency;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Listings of work roots walked on the JVM side, in one call from Python (walking the filesystem's iterator from
 * Python costs several gateway round trips per file). The walk uses listStatus, not listFiles: the located statuses
 * of listFiles read each local file's owner and permissions, by a process per file on a local filesystem without
 * Hadoop's native library, which took most of a minute on a root of about 20,000 files.
 */
public final class WorkFolders {
  private WorkFolders() {}

  /** Every file called {@code name} below {@code root}, at any depth, as "modification time in ms, tab, path". */
  public static String[] filesNamed(FileSystem filesystem, Path root, String name) throws IOException {
    List<String> found = new ArrayList<>();
    Deque<Path> folders = new ArrayDeque<>();
    folders.push(root);
    while (!folders.isEmpty()) {
      for (FileStatus status : filesystem.listStatus(folders.pop())) {
        if (status.isDirectory()) {
          folders.push(status.getPath());
        } else if (status.getPath().getName().equals(name)) {
          found.add(status.getModificationTime() + "\t" + status.getPath());
        }
      }
    }
    return found.toArray(new String[0]);
  }
}
