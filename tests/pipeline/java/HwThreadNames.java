// Test program for tests/pipeline/leak_patterns_jvm_test.cc: live threads with names that a
// report must show carefully (docs/leak-patterns.md "Thread names and privacy"): digits (masked by
// default), non-ASCII text, a hostile name with markup, a bidi override and a newline, and a name
// longer than a report shows. Each thread sets a 128 KiB value in a static ThreadLocal that is
// never removed (so the thread-local-value pattern names every thread), prints nothing itself and
// parks. Prints "ready" once all threads hold their value.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public final class HwThreadNames {
  static final ThreadLocal<byte[]> SCRATCH = new ThreadLocal<>();

  public static void main(String[] args) throws Exception {
    final String[] names = {
      "worker-17-of-42",
      "\u00dcberpr\u00fcfung-\u00df-3 \u65e5\u672c\u8a9e",
      "<script>alert('x')</script>\u202e\nforged line 9",
      "long-" + "x".repeat(200),
    };
    final CountDownLatch set = new CountDownLatch(names.length);
    for (String name : names) {
      Thread t = new Thread(() -> {
        SCRATCH.set(new byte[128 * 1024]);
        set.countDown();
        try {
          Thread.sleep(TimeUnit.HOURS.toMillis(1));
        } catch (InterruptedException e) {
          // exit
        }
      }, name);
      t.setDaemon(true);
      t.start();
    }
    set.await();
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
