// A JVM with a large live heap for the heap-dump tests: keeps about N MB (first argument, default 400) of small
// live objects (long[1] arrays, 24 bytes each, plus the 4-byte slots of the arrays that hold them), prints
// "ready" and then waits until it is killed. With -Xmx1g a GC.heap_dump of it takes more than a second, so a
// test can kill the JVM while the dump file is being written.
public class HwBigHeapApp {
  static Object[][] keep;

  public static void main(String[] args) throws Exception {
    long megabytes = args.length > 0 ? Long.parseLong(args[0]) : 400;
    long objects = megabytes * 1024 * 1024 / 28;
    int chunk = 1 << 20;
    int chunks = (int) ((objects + chunk - 1) / chunk);
    keep = new Object[chunks][];
    for (int c = 0; c < chunks; c++) {
      Object[] part = new Object[chunk];
      for (int i = 0; i < chunk; i++) part[i] = new long[] {i};
      keep[c] = part;
    }
    System.out.println("ready " + (long) chunks * chunk + " objects");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
