/**
 * A JVM whose live set stays constant, for heapwatch's cost-of-watching tests: it keeps a fixed number of
 * megabytes of small live objects (first argument, default 64) and allocates short-lived garbage at a slow,
 * steady rate (about 1 MB/s), so that young collections happen but its live set never changes.
 *
 * <p>With {@code --system-gc-seconds N} it also calls System.gc() every N seconds, as RMI's distributed GC and
 * some servers do: a full collection the JVM itself asks for (not heapwatch).
 *
 * <p>Usage: {@code java -cp CLASSES SteadyApp [--live-mb N] [--garbage-kb-per-second N] [--system-gc-seconds N]
 * [--max-seconds S]}.
 * Prints "SteadyApp ready pid=N" once the live set is built; exits within a second once the process that
 * started it is gone, or after --max-seconds (default 3600).
 */
public final class SteadyApp {
  static Object[] live;
  static volatile Object sink;

  public static void main(String[] args) throws InterruptedException {
    long liveMb = 64;
    long garbageKbPerSecond = 1024;
    long systemGcSeconds = 0;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--live-mb" -> liveMb = Long.parseLong(rest[++i]);
        case "--garbage-kb-per-second" -> garbageKbPerSecond = Long.parseLong(rest[++i]);
        case "--system-gc-seconds" -> systemGcSeconds = Long.parseLong(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }
    // long[4] arrays: 48 bytes each with compressed class pointers.
    int objects = (int) (liveMb * 1024 * 1024 / 48);
    live = new Object[objects];
    for (int i = 0; i < objects; i++) live[i] = new long[4];
    System.out.println("SteadyApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    final long perTick = garbageKbPerSecond * 1024 / 10 / 128;
    long nextGc = System.nanoTime() + systemGcSeconds * 1_000_000_000L;
    while (true) {
      for (long i = 0; i < perTick; i++) sink = new byte[112];
      if (systemGcSeconds > 0 && System.nanoTime() >= nextGc) {
        System.gc();
        nextGc = System.nanoTime() + systemGcSeconds * 1_000_000_000L;
      }
      Thread.sleep(100);
    }
  }
}
