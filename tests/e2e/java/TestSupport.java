import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Lifetime guards shared by the heapwatch test programs, so that no test run leaves a JVM behind. */
final class TestSupport {
  private TestSupport() {}

  /** Exits (status 0) within about half a second after the process that started this JVM is gone. */
  static void exitWhenParentDies() {
    Optional<ProcessHandle> parent = ProcessHandle.current().parent();
    if (parent.isEmpty()) {
      return;
    }
    final long parentPid = parent.get().pid();
    Thread watcher =
        new Thread(
            () -> {
              while (true) {
                Optional<ProcessHandle> current = ProcessHandle.current().parent();
                if (current.isEmpty() || current.get().pid() != parentPid || !current.get().isAlive()) {
                  System.exit(0);
                }
                try {
                  Thread.sleep(500);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "parent-watcher");
    watcher.setDaemon(true);
    watcher.start();
  }

  /**
   * The lifetime guards every test program starts with: exits when its parent is gone
   * (exitWhenParentDies) and after {@code --max-seconds S} seconds, or {@code defaultMaxSeconds}
   * without that option (exitAfterSeconds). Returns the other arguments, in order, for the
   * program's own options. Throws IllegalArgumentException when --max-seconds has no value or one
   * that is not a whole number.
   */
  static String[] guardLifetime(String[] args, long defaultMaxSeconds) {
    long maxSeconds = defaultMaxSeconds;
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].equals("--max-seconds")) {
        rest.add(args[i]);
      } else if (i + 1 < args.length) {
        maxSeconds = Long.parseLong(args[++i]);
      } else {
        throw new IllegalArgumentException("--max-seconds needs a number of seconds");
      }
    }
    exitWhenParentDies();
    exitAfterSeconds(maxSeconds);
    return rest.toArray(new String[0]);
  }

  /** Exits (status 0) after the given number of seconds: the last guard against a leftover JVM. */
  static void exitAfterSeconds(long seconds) {
    Thread timer =
        new Thread(
            () -> {
              try {
                Thread.sleep(seconds * 1000);
              } catch (InterruptedException e) {
                return;
              }
              System.exit(0);
            },
            "max-lifetime");
    timer.setDaemon(true);
    timer.start();
  }
}
