// Test program for tests/pipeline/leak_patterns_jvm_test.cc: the classic ThreadLocal leak in a
// thread pool. Four pool threads run 2000 tasks; each task appends a 1 KiB buffer to the list in
// RequestContext.BUFFERS (a static ThreadLocal<List<byte[]>>). With "leak" the tasks never call
// remove(), so each pool thread keeps its list (about 0.5 MiB) as long as it lives; with "clean"
// each task calls BUFFERS.remove() in a finally block. Prints "ready" once all tasks ran, then keeps
// the pool (and its idle threads) alive.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

public final class HwThreadLocalPool {
  static final class RequestContext {
    static final ThreadLocal<List<byte[]>> BUFFERS = ThreadLocal.withInitial(ArrayList::new);
  }

  static ExecutorService pool;

  public static void main(String[] args) throws Exception {
    final boolean clean = args.length > 0 && args[0].equals("clean");
    pool = Executors.newFixedThreadPool(4);
    List<java.util.concurrent.Future<?>> done = new ArrayList<>();
    for (int i = 0; i < 2000; ++i) {
      done.add(pool.submit(() -> {
        try {
          RequestContext.BUFFERS.get().add(new byte[1024]);
        } finally {
          if (clean) RequestContext.BUFFERS.remove();
        }
      }));
    }
    for (java.util.concurrent.Future<?> f : done) f.get();
    done = null;
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
