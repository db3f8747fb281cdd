import java.util.HashMap;
import java.util.Map;

/**
 * An unbounded cache in a static field, growing, for leak_e2e_test's KnownPatternProgramsAreOneLeakEach:
 * every 100 ms 100 results of 512 bytes are put in the static HashMap {@code CACHE} under ids that never
 * repeat (about 55 KiB more per tick), the classic memoisation cache without eviction.
 *
 * <p>Usage: {@code java -jar StaticCacheApp.jar [--max-seconds S]}. Prints "ready" once running.
 */
public class StaticCacheApp {
  static final Map<Long, byte[]> CACHE = new HashMap<>();

  public static void main(String[] args) throws InterruptedException {
    TestSupport.guardLifetime(args, 3600);
    System.out.println("StaticCacheApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    long id = 0;
    while (true) {
      for (int i = 0; i < 100; i++) CACHE.put(id++, new byte[512]);
      Thread.sleep(100);
    }
  }
}
