// Test program for tests/pipeline/leak_patterns_jvm_test.cc: java.lang.ref.Cleaner misuse. With
// "leak", 5000 short-lived Connection objects register a cleaning action that is a lambda
// capturing the Connection itself (this::release), the classic mistake: the Cleaner keeps the
// action, the action keeps the object, so the object never becomes phantom reachable and is never
// cleaned; every registration stays in the Cleaner's list with its object. With "clean" the action
// is a static nested class holding only the native state, so each Connection is collected and its
// action run. Prints "ready", then keeps the Cleaner alive.
import java.lang.ref.Cleaner;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class HwCleaners {
  static final Cleaner CLEANER = Cleaner.create();
  static final AtomicInteger RELEASED = new AtomicInteger();
  static final int COUNT = 5000;

  static final class State implements Runnable {
    final long[] handle = new long[8];

    @Override
    public void run() {
      RELEASED.incrementAndGet();
    }
  }

  static final class Connection {
    final byte[] buffer = new byte[256];
    final State state = new State();

    Connection(boolean clean) {
      if (clean) {
        CLEANER.register(this, state);
      } else {
        CLEANER.register(this, this::release);  // captures this: never phantom reachable
      }
    }

    void release() {
      state.run();
    }
  }

  public static void main(String[] args) throws Exception {
    final boolean clean = args.length > 0 && args[0].equals("clean");
    for (int i = 0; i < COUNT; ++i) new Connection(clean);
    System.gc();
    if (clean) {
      while (RELEASED.get() < COUNT) {
        Thread.sleep(10);
        System.gc();
      }
    }
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
