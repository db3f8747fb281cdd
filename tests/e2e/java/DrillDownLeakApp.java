import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A JVM with two real leaks whose accumulation points are known, for heapwatch's escalation end-to-end test.
 * Every 100 ms (in the same tick, so that both classes become suspects at the same snapshot) it adds
 * <ul>
 *   <li>{@code DrillDownLeakApp$Session} objects to the static list {@code SESSIONS} (a
 *       {@code java.util.ArrayList}, so the accumulation point is its {@code Object[] elementData}, reached
 *       from the GC root {@code class DrillDownLeakApp} through "static SESSIONS", "field elementData"). Each
 *       session holds a token String "hw-secret-N" (the secret a stored report must never contain) and a
 *       16-byte payload;
 *   <li>{@code DrillDownLeakApp$AuditEvent} objects to the static map {@code AUDIT} (a
 *       {@code java.util.HashMap} keyed by a Long).
 * </ul>
 * Each leaking class's shallow size is 48 bytes with compressed oops; at the default 2000 objects/s each
 * class grows by about 96 KB/s in the class histogram, and the whole heap by about 0.5 MB/s (30 MB a
 * minute), so heap dumps stay small and fast. It also churns short-lived garbage.
 *
 * <p>Usage: {@code java -cp CLASSES DrillDownLeakApp [--per-second N] [--audit-delay-seconds D]
 * [--max-seconds S]}. With --audit-delay-seconds the AuditEvent leak starts D seconds after the Session
 * leak (default 0: both in the same tick), so that the two classes become suspects D seconds apart. It
 * exits within a second once the process that started it is gone, and after --max-seconds (default
 * 3600). Prints "DrillDownLeakApp ready pid=N" when the leaks have started.
 */
public final class DrillDownLeakApp {
  /** First leaking class: "DrillDownLeakApp$Session" (12 + 8 + 4 + 4 + 8 + 8 = 44 -> 48 bytes). */
  static final class Session {
    final long id;
    final String token;
    final byte[] payload;
    final long createdNanos;
    long lastAccessNanos;

    Session(long id) {
      this.id = id;
      this.token = "hw-secret-" + id;
      this.payload = new byte[16];
      ThreadLocalRandom.current().nextBytes(payload);
      this.createdNanos = System.nanoTime();
      this.lastAccessNanos = createdNanos;
    }
  }

  /** Second leaking class: "DrillDownLeakApp$AuditEvent" (12 + 8 + 8 + 8 + 4 + 4 = 44 -> 48 bytes). */
  static final class AuditEvent {
    final long id;
    final long timeNanos;
    final long sessionId;
    final int kind;
    final String action;

    AuditEvent(long id, long sessionId) {
      this.id = id;
      this.timeNanos = System.nanoTime();
      this.sessionId = sessionId;
      this.kind = (int) (id % 7);
      this.action = ACTIONS[kind];
    }
  }

  static final String[] ACTIONS = {"login", "logout", "read", "write", "delete", "grant", "revoke"};

  /** Leak 1: sessions are never removed. */
  static final List<Session> SESSIONS = new ArrayList<>();
  /** Leak 2: the audit trail is never trimmed. */
  static final Map<Long, AuditEvent> AUDIT = new HashMap<>();

  static volatile Object sink;

  public static void main(String[] args) throws InterruptedException {
    long perSecond = 2000;
    long auditDelaySeconds = 0;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--per-second" -> perSecond = Long.parseLong(rest[++i]);
        case "--audit-delay-seconds" -> auditDelaySeconds = Long.parseLong(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }

    final long perTick = Math.max(1, perSecond / 10);
    final long auditStart = System.nanoTime() + auditDelaySeconds * 1_000_000_000L;
    long next = 0;
    System.out.println("DrillDownLeakApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (long i = 0; i < perTick; i++) {
        final long id = next++;
        SESSIONS.add(new Session(id));
        if (System.nanoTime() >= auditStart) {
          AUDIT.put(id, new AuditEvent(id, id));
        }
      }
      for (int i = 0; i < 1000; i++) {
        sink = new byte[ThreadLocalRandom.current().nextInt(16, 256)];
      }
      Thread.sleep(100);
    }
  }
}
