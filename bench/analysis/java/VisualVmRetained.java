// Baseline for heapwatch's analysis benchmark: VisualVM's heap library (Debian package `visualvm`,
// org-graalvm-visualvm-lib-jfluid-heap.jar, the same code as NetBeans' profiler heap walker) computes the
// retained size of every instance of an HPROF dump.
//
// Usage: java -cp <jfluid-heap.jar>:. VisualVmRetained DUMP.hprof
// Delete DUMP.hprof.hwcache (the library's on-disk cache) before timing; scripts/bench.sh does.
// Prints one line per stage, "visualvm <stage> <seconds>", and a checksum line (instances, sum of retained
// sizes, biggest retained size) so that runs can be compared with heapwatch's figures.
import java.io.File;
import java.util.Iterator;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;

public final class VisualVmRetained {
  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: VisualVmRetained DUMP.hprof");
      System.exit(2);
    }
    long t0 = System.nanoTime();
    Heap heap = HeapFactory.createHeap(new File(args[0]));
    long t1 = System.nanoTime();
    System.out.printf("visualvm parse %.3f%n", (t1 - t0) / 1e9);
    long instances = 0;
    long sum = 0;
    long biggest = 0;
    for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
      Instance instance = it.next();
      long retained = instance.getRetainedSize();
      instances++;
      sum += retained;
      biggest = Math.max(biggest, retained);
    }
    long t2 = System.nanoTime();
    System.out.printf("visualvm retained %.3f%n", (t2 - t1) / 1e9);
    System.out.printf("visualvm total %.3f%n", (t2 - t0) / 1e9);
    System.out.printf("visualvm checksum instances=%d retained_sum=%d biggest=%d%n", instances, sum, biggest);
  }
}
