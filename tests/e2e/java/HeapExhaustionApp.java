import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A service that leaks until it dies of an OutOfMemoryError, for heapwatch's heap exhaustion end-to-end test
 * (tests/dashboards/heap_exhaustion_e2e.sh). Run it with {@code -Xmx256m -XX:+UseG1GC}.
 *
 * <p>Every 100 ms it
 * <ul>
 *   <li>serves "requests": short-lived garbage (about 5 MB/s of byte[] and String objects that die young),
 *       so that the young generation collects all the time, as in a real service;
 *   <li>leaks: appends {@code HeapExhaustionApp$Order} objects to the static list {@code BACKLOG}, which is
 *       never drained. Each order holds a {@code byte[]} payload (--payload-bytes, default 512) and a String
 *       id "order-N". The orders due by now follow the wall clock at --bytes-per-second (default 1100000)
 *       of estimated retained size (the order, its payload, its id and its list slot: about 610 bytes per
 *       order at the default payload), so a slow tick does not slow the leak down.
 * </ul>
 * With a 256 MiB heap the live set reaches the maximum heap about 4 minutes after the start at the default
 * rate, and the JVM dies.
 *
 * <p>It catches the OutOfMemoryError in the allocating thread (and, through the default uncaught exception
 * handler, in any other Java thread), drops the backlog so that it can still print, prints
 * {@code OOM <epoch-ms> after <seconds> s, leaked <bytes> bytes in <n> orders} to stdout and
 * {@code java.lang.OutOfMemoryError: ...} to stderr, and halts with exit code 3.
 *
 * <p>Usage: {@code java -Xmx256m -XX:+UseG1GC -jar HeapExhaustionApp.jar [--bytes-per-second N]
 * [--payload-bytes N] [--max-seconds S]}. Prints
 * {@code HeapExhaustionApp leak-start <epoch-ms> pid=N bytes_per_second=R} when the leak starts (right
 * at start-up). It exits (status 0) within a second once the process that started it is gone, and after
 * --max-seconds (default 600).
 */
public final class HeapExhaustionApp {
  /** The leaking record, as the class histogram shows it: "HeapExhaustionApp$Order" (24 bytes). */
  static final class Order {
    final byte[] payload;
    final String id;

    Order(long n, int payloadBytes) {
      this.payload = new byte[payloadBytes];
      ThreadLocalRandom.current().nextBytes(payload);
      this.id = "order-" + n;
    }
  }

  /** The leak: orders waiting for a consumer that never comes. */
  static final List<Order> BACKLOG = new ArrayList<>();

  static volatile Object sink;
  static volatile long startNanos;
  static volatile long leakedOrders;
  static volatile long orderBytes;

  public static void main(String[] args) throws InterruptedException {
    long bytesPerSecond = 1_100_000;
    int payloadBytes = 512;
    String[] rest = TestSupport.guardLifetime(args, 600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--bytes-per-second" -> bytesPerSecond = Long.parseLong(rest[++i]);
        case "--payload-bytes" -> payloadBytes = Integer.parseInt(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }
    // Estimated retained bytes of one order with compressed oops: the Order (24), its payload (16-byte
    // array header + payload, 8-aligned), its id String (24) and the id's byte[] (16 + ~12, 8-aligned: 32),
    // and its slot in the backlog's Object[] (4).
    orderBytes = 24 + ((16 + payloadBytes + 7) / 8 * 8) + 24 + 32 + 4;
    Thread.setDefaultUncaughtExceptionHandler(
        (thread, e) -> {
          if (e instanceof OutOfMemoryError oom) {
            died(oom);
          }
          e.printStackTrace();
        });

    startNanos = System.nanoTime();
    System.out.println("HeapExhaustionApp leak-start " + System.currentTimeMillis() + " pid="
        + ProcessHandle.current().pid() + " bytes_per_second=" + bytesPerSecond + " payload_bytes="
        + payloadBytes + " order_bytes=" + orderBytes);
    System.out.flush();
    try {
      serve(bytesPerSecond, payloadBytes);
    } catch (OutOfMemoryError oom) {
      died(oom);
    }
  }

  static void serve(long bytesPerSecond, int payloadBytes) throws InterruptedException {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    long next = 0;
    while (true) {
      // The leak: the orders due by now on the wall clock.
      final long due = bytesPerSecond * ((System.nanoTime() - startNanos) / 1_000_000L) / 1000L / orderBytes;
      while (next < due) {
        BACKLOG.add(new Order(next++, payloadBytes));
        leakedOrders = next;
      }
      // Requests: about 500 KB of short-lived garbage per tick.
      for (int i = 0; i < 1000; i++) {
        sink = new byte[random.nextInt(64, 900)];
        if (i % 10 == 0) {
          sink = "request-" + random.nextLong();
        }
      }
      Thread.sleep(100);
    }
  }

  /** Records the OutOfMemoryError (its time first) and halts with exit code 3. */
  static synchronized void died(OutOfMemoryError oom) {
    final long at = System.currentTimeMillis();
    BACKLOG.clear();  // room to print
    sink = null;
    final double seconds = (System.nanoTime() - startNanos) / 1e9;
    System.out.println("OOM " + at + " after " + String.format("%.1f", seconds) + " s, leaked "
        + leakedOrders * orderBytes + " bytes in " + leakedOrders + " orders");
    System.out.flush();
    System.err.println("HeapExhaustionApp died: " + oom);
    System.err.flush();
    Runtime.getRuntime().halt(3);
  }
}
