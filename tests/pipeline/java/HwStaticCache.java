// Test program for tests/pipeline/leak_patterns_jvm_test.cc: an unbounded cache in a static field.
// With "leak" 6000 results of 1 KiB are put in the static HashMap CACHE under ids that never
// repeat (about 6.5 MiB); with "clean" the cache is a LinkedHashMap bounded to 100 entries
// (removeEldestEntry). Prints "ready", then keeps the cache alive.
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

public final class HwStaticCache {
  static Map<Long, byte[]> CACHE;

  public static void main(String[] args) throws Exception {
    final boolean clean = args.length > 0 && args[0].equals("clean");
    CACHE = clean ? new LinkedHashMap<Long, byte[]>() {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, byte[]> eldest) {
        return size() > 100;
      }
    } : new HashMap<>();
    for (long id = 0; id < 6000; ++id) CACHE.put(id, new byte[1024]);
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
