// Test program for the agent tests (tests/agent): holds `count` HwAgentApp$Retained objects, prints
// "ready", and runs for `seconds` (allocating a little garbage) before its main returns normally.
// Usage: java -agentpath:...=... -cp CLASSES HwAgentApp COUNT SECONDS
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
    long sink = 0;
    while (System.nanoTime() < end) {
      sink += new byte[1024].length;
      Thread.sleep(5);
    }
    System.out.println("done " + RETAINED.size() + " " + (sink > 0));
  }
}
