import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The "six-suspect program" of heapwatch's leak grouping end-to-end test (issue "Leaks, not classes"): one
 * leak of one kind of event into a static map, which makes six classes grow at once.
 *
 * <p>Every 100 ms it puts {@code --per-second / 10} new {@code EventLeakApp$Event} objects into the static
 * {@code ConcurrentHashMap<Long, Event> EVENTS} and never removes any. Each event holds
 * <ul>
 *   <li>a {@code double[16]} of samples (16 + 128 = 144 bytes),
 *   <li>a {@code byte[64]} payload (16 + 64 = 80 bytes),
 *   <li>a {@code String} name "event-N" (24 bytes, plus its own {@code byte[]} of about 24 bytes),
 *   <li>a {@code Long} sequence number (16 bytes; the map's key is another {@code Long}),
 * </ul>
 * and the map adds one {@code ConcurrentHashMap$Node} (32 bytes) per event. So the six classes that grow
 * are {@code EventLeakApp$Event}, {@code double[]}, {@code byte[]}, {@code java.lang.String},
 * {@code java.lang.Long} and {@code java.util.concurrent.ConcurrentHashMap$Node}; the map's
 * {@code ConcurrentHashMap$Node[]} table grows too, but in doublings. At the default 5000 events/s the
 * heap grows by about 2 MB/s. The one accumulation point of all of them is the map (its
 * {@code Node[] table}, reached from the GC root {@code class EventLeakApp} through "static EVENTS" and
 * "table").
 *
 * <p>Usage: {@code java -jar EventLeakApp.jar [--per-second N] [--max-seconds S]}. It exits within a second
 * once the process that started it is gone, and after --max-seconds (default 3600). Prints
 * "EventLeakApp ready pid=N" when the leak has started.
 */
public final class EventLeakApp {
  /** The leaking event: "EventLeakApp$Event" (12 + 8 + 4 * 4 = 36 -> 40 bytes with compressed oops). */
  static final class Event {
    final long id;
    final double[] samples;
    final byte[] payload;
    final String name;
    final Long sequence;

    Event(long id) {
      this.id = id;
      ThreadLocalRandom random = ThreadLocalRandom.current();
      this.samples = new double[16];
      for (int i = 0; i < samples.length; i++) {
        samples[i] = random.nextDouble();
      }
      this.payload = new byte[64];
      random.nextBytes(payload);
      this.name = "event-" + id;
      this.sequence = Long.valueOf(id + 1_000_000L);  // never one of Long's cached small values
    }
  }

  /** The leak: events are never removed. */
  static final ConcurrentHashMap<Long, Event> EVENTS = new ConcurrentHashMap<>();

  public static void main(String[] args) throws InterruptedException {
    long perSecond = 5000;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--per-second" -> perSecond = Long.parseLong(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }

    final long perTick = Math.max(1, perSecond / 10);
    long next = 0;
    System.out.println("EventLeakApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (long i = 0; i < perTick; i++) {
        final long id = next++;
        EVENTS.put(Long.valueOf(id + 1_000_000_000L), new Event(id));
      }
      Thread.sleep(100);
    }
  }
}
