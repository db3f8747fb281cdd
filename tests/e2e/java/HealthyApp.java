import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A JVM without a leak whose heap still moves, for heapwatch's end-to-end tests. The cache and the
 * sawtooth each move by more than the trend detector's size gate (trend.min_growth_bytes, 1 MiB by
 * default) within a window of snapshots, so that the detector's statistical tests, not the gate, are
 * what keeps them from being flagged. Each pattern uses its own class so that the class histogram
 * shows it separately (shallow sizes with compressed oops):
 * <ul>
 *   <li>{@code HealthyApp$CacheEntry} (24 bytes): an LRU cache that fills to its capacity of 100000
 *       entries (2.4 MB of CacheEntry, plus their 64-byte payloads, LinkedHashMap entries and Long
 *       keys) within 3 s of wall time, then stays at capacity, its content replaced at random. It fills
 *       at start-up, or with --fill-cache-when PATH as soon as the file PATH exists, so that a test can
 *       make it fill while heapwatchd watches;
 *   <li>{@code HealthyApp$Buffered} (32 bytes): a buffer that fills at 20000 objects/s (640 KB/s) and
 *       is emptied every 5 s: a sawtooth peaking at 3.2 MB. Both rates follow the wall clock, so a
 *       slow tick does not shrink the pattern;
 *   <li>{@code HealthyApp$Churn}: a fixed-size pool of 5000 objects whose members are replaced at random
 *       (flat counts), plus short-lived garbage.
 * </ul>
 *
 * <p>Usage: {@code java -jar HealthyApp.jar [--fill-cache-when PATH] [--max-seconds S]}. It never exits
 * on its own before --max-seconds (default 3600) and exits within a second once the process that
 * started it is gone. Prints "HealthyApp ready pid=N" once running (before the cache fills with
 * --fill-cache-when) and "HealthyApp cache full entries=N" once the cache is at capacity.
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

  static final int CACHE_CAPACITY = 100_000;
  static final long CACHE_FILL_NANOS = 3_000_000_000L;
  static final long BUFFER_PER_SECOND = 20_000;
  static final long BUFFER_PERIOD_NANOS = 5_000_000_000L;

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
    Path fillWhen = null;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--fill-cache-when" -> fillWhen = Path.of(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }
    ThreadLocalRandom random = ThreadLocalRandom.current();

    for (int i = 0; i < POOL.length; i++) {
      POOL[i] = new Churn(i);
    }
    System.out.println("HealthyApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();

    long fillStart = -1; // System.nanoTime() when the cache started filling
    boolean cacheFull = false;
    long nextKey = 0;
    long sequence = 0;
    long lastClear = System.nanoTime();
    while (true) {
      final long now = System.nanoTime();
      if (fillStart < 0 && (fillWhen == null || Files.exists(fillWhen))) {
        fillStart = now;
      }
      if (fillStart >= 0 && !cacheFull) {
        // Fill: the entries due by now on a straight line from empty to capacity over 3 s.
        final long due = Math.min(CACHE_CAPACITY, CACHE_CAPACITY * (now - fillStart) / CACHE_FILL_NANOS);
        while (nextKey < due) {
          CACHE.put(nextKey, new CacheEntry(nextKey));
          nextKey++;
        }
        if (CACHE.size() == CACHE_CAPACITY) {
          cacheFull = true;
          System.out.println("HealthyApp cache full entries=" + CACHE.size());
          System.out.flush();
        }
      } else if (cacheFull) {
        // Cache traffic: lookups, misses replace entries; the size stays at capacity.
        for (int i = 0; i < 500; i++) {
          long key = random.nextLong(CACHE_CAPACITY * 3L);
          if (CACHE.get(key) == null) {
            CACHE.put(key, new CacheEntry(key));
          }
        }
      }
      // Sawtooth: the objects due since the last clear at BUFFER_PER_SECOND, emptied every 5 s.
      if (now - lastClear >= BUFFER_PERIOD_NANOS) {
        BUFFER.clear();
        BUFFER.trimToSize();
        lastClear = now;
      }
      final long buffered = BUFFER_PER_SECOND * (now - lastClear) / 1_000_000_000L;
      while (BUFFER.size() < buffered) {
        BUFFER.add(new Buffered(sequence++));
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
