import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A JVM without a leak whose heap still moves, for heapwatch's end-to-end tests. Each pattern uses its own
 * class so that the class histogram shows it separately:
 * <ul>
 *   <li>{@code HealthyApp$CacheEntry}: an LRU cache that fills during the first seconds (start-up) and then
 *       stays at its capacity (20000 entries), its content replaced at random;
 *   <li>{@code HealthyApp$Buffered}: a buffer that fills at about 3000 objects/s and is emptied every 5 s (a
 *       sawtooth);
 *   <li>{@code HealthyApp$Churn}: a fixed-size pool of 5000 objects whose members are replaced at random (flat
 *       counts with noise), plus short-lived garbage.
 * </ul>
 *
 * <p>Usage: {@code java -cp CLASSES HealthyApp [--max-seconds S]}. It never exits on its own before
 * --max-seconds (default 3600) and exits within a second once the process that started it is gone. Prints
 * "HealthyApp ready pid=N" once the cache is full.
 */
public final class HealthyApp {
  static final class CacheEntry {
    final long key;
    final byte[] payload = new byte[48];

    CacheEntry(long key) {
      this.key = key;
    }
  }

  static final class Buffered {
    final long sequence;
    final long createdNanos = System.nanoTime();

    Buffered(long sequence) {
      this.sequence = sequence;
    }
  }

  static final class Churn {
    final int value;

    Churn(int value) {
      this.value = value;
    }
  }

  static final int CACHE_CAPACITY = 20_000;

  static final Map<Long, CacheEntry> CACHE =
      new LinkedHashMap<>(CACHE_CAPACITY * 2, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, CacheEntry> eldest) {
          return size() > CACHE_CAPACITY;
        }
      };
  static final ArrayList<Buffered> BUFFER = new ArrayList<>();
  static final Churn[] POOL = new Churn[5000];

  static volatile Object sink;

  public static void main(String[] args) throws InterruptedException {
    long maxSeconds = 3600;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--max-seconds" -> maxSeconds = Long.parseLong(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    TestSupport.exitWhenParentDies();
    TestSupport.exitAfterSeconds(maxSeconds);
    ThreadLocalRandom random = ThreadLocalRandom.current();

    // Start-up: warm the cache to capacity (about 2 s).
    for (long k = 0; k < CACHE_CAPACITY; k++) {
      CACHE.put(k, new CacheEntry(k));
      if (k % 1000 == 999) {
        Thread.sleep(100);
      }
    }
    for (int i = 0; i < POOL.length; i++) {
      POOL[i] = new Churn(i);
    }
    System.out.println("HealthyApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();

    long sequence = 0;
    long lastClear = System.nanoTime();
    while (true) {
      // Cache traffic: lookups, misses replace entries; the size stays at capacity.
      for (int i = 0; i < 500; i++) {
        long key = random.nextLong(CACHE_CAPACITY * 3L);
        if (CACHE.get(key) == null) {
          CACHE.put(key, new CacheEntry(key));
        }
      }
      // Sawtooth: 300 per tick, emptied every 5 s.
      for (int i = 0; i < 300; i++) {
        BUFFER.add(new Buffered(sequence++));
      }
      if (System.nanoTime() - lastClear > 5_000_000_000L) {
        BUFFER.clear();
        BUFFER.trimToSize();
        lastClear = System.nanoTime();
      }
      // Flat churn with noise.
      for (int i = 0; i < 200; i++) {
        POOL[random.nextInt(POOL.length)] = new Churn(random.nextInt());
      }
      for (int i = 0; i < 1000; i++) {
        sink = new byte[random.nextInt(16, 256)];
      }
      Thread.sleep(100);
    }
  }
}
