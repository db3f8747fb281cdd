import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A JVM with a real memory leak, for heapwatch's end-to-end tests: every 100 ms it appends objects of class
 * {@code LeakyApp$Leak} (32 bytes each with compressed oops: 12-byte header, two longs, padding) to a static
 * list that is never cleared, at a configurable rate (default 300000 bytes/s, about 9400 objects/s). It also
 * churns short-lived garbage so that the heap is not trivially quiet.
 *
 * <p>With {@code --system-gc-seconds N} it also calls System.gc() every N seconds, so that its live set is
 * measured exactly (a full collection) that often.
 *
 * <p>Usage: {@code java -cp CLASSES LeakyApp [--bytes-per-second N] [--max-seconds S] [--system-gc-seconds N]}.
 * It never exits on its own before --max-seconds (default 3600) and exits within a second once the process
 * that started it is gone, so a crashed test cannot leave it behind. Prints "LeakyApp ready pid=N" when the
 * leak has started.
 */
public final class LeakyApp {
  /** The leaking class, as it appears in the class histogram: "LeakyApp$Leak". */
  static final class Leak {
    final long id;
    final long createdNanos;

    Leak(long id) {
      this.id = id;
      this.createdNanos = System.nanoTime();
    }
  }

  /** The leak: a static list that only grows. */
  static final List<Leak> LEAKED = new ArrayList<>();

  static volatile Object sink;

  public static void main(String[] args) throws InterruptedException {
    long bytesPerSecond = 300_000;
    long systemGcSeconds = 0;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--bytes-per-second" -> bytesPerSecond = Long.parseLong(rest[++i]);
        case "--system-gc-seconds" -> systemGcSeconds = Long.parseLong(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }

    final long perTick = Math.max(1, bytesPerSecond / 10 / 32);
    long next = 0;
    long lastGcNanos = System.nanoTime();
    System.out.println("LeakyApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (long i = 0; i < perTick; i++) {
        LEAKED.add(new Leak(next++));
      }
      // Short-lived garbage: dies young, never accumulates.
      for (int i = 0; i < 1000; i++) {
        sink = new byte[ThreadLocalRandom.current().nextInt(16, 256)];
      }
      if (systemGcSeconds > 0 && System.nanoTime() - lastGcNanos >= systemGcSeconds * 1_000_000_000L) {
        System.gc();
        lastGcNanos = System.nanoTime();
      }
      Thread.sleep(100);
    }
  }
}
