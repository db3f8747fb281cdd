import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The ThreadLocal leak of a thread pool, growing, for leak_e2e_test's KnownPatternProgramsAreOneLeakEach:
 * every 100 ms it submits 100 tasks (--tasks-per-tick) to a fixed pool of 4 threads; each task appends a
 * 1 KiB buffer to the list in the static {@code ThreadLocal<List<byte[]>> RequestContext.BUFFERS} and never
 * calls remove(), so each pool thread's list grows by about 250 KiB/s (the JVM's live set by about 1 MB/s;
 * retained per task: the byte[1024], 1040 bytes, and its list slot). ThreadLocalPoolCleanApp runs the same
 * tasks with remove() in a finally block (nothing grows).
 *
 * <p>Usage: {@code java -jar ThreadLocalPoolApp.jar [--tasks-per-tick N] [--max-seconds S]}. Prints "ready"
 * once running.
 */
public class ThreadLocalPoolApp {
  static final class RequestContext {
    static final ThreadLocal<List<byte[]>> BUFFERS = ThreadLocal.withInitial(ArrayList::new);
  }

  static ExecutorService pool;

  static void run(String[] args, boolean clean) throws InterruptedException {
    int tasksPerTick = 100;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--tasks-per-tick" -> tasksPerTick = Integer.parseInt(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }
    pool = Executors.newFixedThreadPool(4);
    System.out.println((clean ? "ThreadLocalPoolCleanApp" : "ThreadLocalPoolApp") + " ready pid="
        + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (int i = 0; i < tasksPerTick; i++) {
        pool.execute(() -> {
          try {
            RequestContext.BUFFERS.get().add(new byte[1024]);
          } finally {
            if (clean) RequestContext.BUFFERS.remove();
          }
        });
      }
      Thread.sleep(100);
    }
  }

  public static void main(String[] args) throws InterruptedException {
    run(args, false);
  }
}
