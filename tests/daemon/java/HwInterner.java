// Test JVM for string_table_watch_test: interns strings for ever.
//   leaky:   String.intern() on unique values (a request-id style counter), all kept reachable, so
//            the JVM's string table grows without bound.
//   bounded: String.intern() on values from a fixed set of 500 keys, so the table stays flat.
// Prints "ready" once the first strings are interned, then prints nothing more.
import java.util.ArrayList;
import java.util.List;

public class HwInterner {
  static final List<String> kept = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    final boolean leaky = args.length > 0 && args[0].equals("leaky");
    long n = 0;
    for (int i = 0; i < 2000; i++, n++) intern(leaky, n);
    System.out.println("ready");
    System.out.flush();
    while (true) {
      for (int i = 0; i < 2000; i++, n++) intern(leaky, n);
      Thread.sleep(50);
    }
  }

  static void intern(boolean leaky, long n) {
    if (leaky) {
      kept.add(("request-" + n).intern());
    } else {
      String s = ("key-" + (n % 500)).intern();
      if (kept.size() < 500) kept.add(s);
    }
  }
}
