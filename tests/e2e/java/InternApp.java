import java.util.ArrayList;
import java.util.List;

/**
 * Interned-string growth for heapwatchd (leak_e2e_test InternedStringGrowthIsOneLeak): interns
 * unique request-id strings and keeps them, so the JVM's string table grows without bound; with
 * --bounded it interns values of a fixed set of 500 keys (the negative case: a flat table).
 *
 * <p>Usage: {@code java -jar InternApp.jar [--max-seconds S] [--bounded]}. Prints "ready" once
 * running.
 */
public final class InternApp {
  static final List<String> kept = new ArrayList<>();

  public static void main(String[] args) throws InterruptedException {
    boolean bounded = false;
    for (String arg : TestSupport.guardLifetime(args, 600)) {
      if (arg.equals("--bounded")) bounded = true;
    }
    System.out.println("ready");
    System.out.flush();
    long n = 0;
    while (true) {
      for (int i = 0; i < 1000; i++, n++) {
        if (bounded) {
          String s = ("key-" + (n % 500)).intern();
          if (kept.size() < 500) kept.add(s);
        } else {
          kept.add(("request-" + n).intern());
        }
      }
      Thread.sleep(50);
    }
  }
}
