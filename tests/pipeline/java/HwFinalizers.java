// Test program for tests/pipeline/leak_patterns_jvm_test.cc: a finalizer backlog. With "leak", a
// first object's finalize() blocks the single finalizer thread forever (a finalize() that waits
// on a lock or I/O), then 20000 Resource objects with a finalize() become unreachable: the GC
// queues them for finalization and they stay queued. With "clean" nothing blocks the finalizer
// thread, so all 20000 are finalized and freed before "ready".
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public final class HwFinalizers {
  static final CountDownLatch BLOCKED = new CountDownLatch(1);
  static final AtomicInteger FINALIZED = new AtomicInteger();
  static final int COUNT = 20000;

  static final class Blocker {
    @Override
    @SuppressWarnings("deprecation")
    protected void finalize() throws InterruptedException {
      BLOCKED.countDown();
      Thread.sleep(TimeUnit.HOURS.toMillis(1));  // a finalize() that never returns
    }
  }

  static final class Resource {
    final byte[] buffer = new byte[64];

    @Override
    @SuppressWarnings("deprecation")
    protected void finalize() {
      FINALIZED.incrementAndGet();
    }
  }

  static void allocate() {
    for (int i = 0; i < COUNT; ++i) new Resource();
  }

  public static void main(String[] args) throws Exception {
    final boolean clean = args.length > 0 && args[0].equals("clean");
    if (!clean) {
      new Blocker();
      while (!BLOCKED.await(10, TimeUnit.MILLISECONDS)) System.gc();
    }
    allocate();
    System.gc();
    if (clean) {
      while (FINALIZED.get() < COUNT) {
        System.gc();
        System.runFinalization();
      }
      System.gc();  // the finalized objects themselves
    } else {
      Thread.sleep(200);  // the Reference Handler thread moves them to the finalizer's queue
    }
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
