import java.lang.ref.Cleaner;

/**
 * Cleaner registrations never cleaned, growing, for leak_e2e_test's KnownPatternProgramsAreOneLeakEach:
 * every 100 ms 100 short-lived Connection objects (each with a byte[512]) register a cleaning action that
 * is a method reference capturing the Connection itself ({@code this::release}), the classic mistake: the
 * Cleaner keeps the action, the action keeps the object, so it never becomes phantom reachable and its
 * registration stays in the Cleaner's list for good: about 60 KiB more per tick.
 *
 * <p>Usage: {@code java -jar CleanerBacklogApp.jar [--max-seconds S]}. Prints "ready" once running.
 */
public class CleanerBacklogApp {
  static final Cleaner CLEANER = Cleaner.create();

  static final class Connection {
    final byte[] buffer = new byte[512];

    Connection() {
      CLEANER.register(this, this::release);  // captures this: never phantom reachable
    }

    void release() {
      buffer[0] = 0;
    }
  }

  public static void main(String[] args) throws InterruptedException {
    TestSupport.guardLifetime(args, 3600);
    System.out.println("CleanerBacklogApp ready pid=" + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (int i = 0; i < 100; i++) new Connection();
      Thread.sleep(100);
    }
  }
}
