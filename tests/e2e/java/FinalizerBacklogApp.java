import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A finalizer backlog, growing, for leak_e2e_test's KnownPatternProgramsAreOneLeakEach: a first object's
 * finalize() blocks the JVM's single finalizer thread for good (a finalize() waiting on a lock or I/O), then
 * every 100 ms 100 Resource objects with a finalize() (each with a byte[512]) become unreachable. The GC
 * queues them for finalization and they stay queued behind the blocked one, held by the Finalizer's
 * queue: about 55 KiB more per tick, none of it reachable from the application.
 *
 * <p>Usage: {@code java -jar FinalizerBacklogApp.jar [--max-seconds S]}. Prints "ready" once the finalizer
 * thread is blocked.
 */
public class FinalizerBacklogApp {
  static final CountDownLatch BLOCKED = new CountDownLatch(1);

  static final class Blocker {
    @Override
    @SuppressWarnings("deprecation")
    protected void finalize() throws InterruptedException {
      BLOCKED.countDown();
      Thread.sleep(TimeUnit.DAYS.toMillis(1));  // a finalize() that never returns
    }
  }

  static final class Resource {
    final byte[] buffer = new byte[512];

    @Override
    @SuppressWarnings("deprecation")
    protected void finalize() {
      buffer[0] = 1;
    }
  }

  public static void main(String[] args) throws InterruptedException {
    TestSupport.guardLifetime(args, 3600);
    new Blocker();
    while (!BLOCKED.await(10, TimeUnit.MILLISECONDS)) System.gc();
    System.out.println("FinalizerBacklogApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (int i = 0; i < 100; i++) new Resource();
      Thread.sleep(100);
    }
  }
}
