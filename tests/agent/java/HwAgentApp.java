// Test program for the agent tests (tests/agent): holds `count` HwAgentApp$Retained objects, prints
// "ready", and runs for `seconds` (allocating a little garbage) before its main returns normally.
// With a third argument "gc" it also calls System.gc() every 300 ms (the application's own full
// collections, which the agent sees as old-generation collections).
// Usage: java -agentpath:...=... -cp CLASSES HwAgentApp COUNT SECONDS [gc]
import java.util.ArrayList;
import java.util.List;

public class HwAgentApp {
  static final class Retained {
    final long id;
    final byte[] payload = new byte[16];

    Retained(long id) {
      this.id = id;
    }
  }

  static final List<Retained> RETAINED = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    int count = Integer.parseInt(args[0]);
    double seconds = Double.parseDouble(args[1]);
    for (int i = 0; i < count; i++) RETAINED.add(new Retained(i));
    System.out.println("ready");
    System.out.flush();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    boolean gc = args.length > 2 && args[2].equals("gc");
    long nextGc = System.nanoTime() + 300_000_000L;
    long sink = 0;
    while (System.nanoTime() < end) {
      sink += new byte[1024].length;
      Thread.sleep(5);
      if (gc && System.nanoTime() > nextGc) {
        System.gc();
        nextGc = System.nanoTime() + 300_000_000L;
      }
    }
    System.out.println("done " + RETAINED.size() + " " + (sink > 0));
  }
}
