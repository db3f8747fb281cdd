// A small JVM for the collectors tests: it keeps a known number of objects alive, drops a known number of
// garbage objects, prints "ready" on stdout and then waits until it is killed. Started with the argument
// "stdin" it reads commands from stdin instead: 'g' drops 3000 more garbage objects and prints "garbage";
// EOF makes main() return (the JVM exits normally).
//
// Live objects it keeps (so that GC.class_histogram shows exact counts):
//   HwTestApp$Leaf       1234 instances (unnamed module)
//   HwTestApp$Leaf[]     1 array holding them
//   a lambda instance    (a hidden class "HwTestApp$$Lambda...")
// Garbage it drops: 3000 instances of HwTestApp$Garbage (visible only with -all before the next GC), and
// 3000 more per 'g' command in "stdin" mode.
import java.util.ArrayList;
import java.util.List;

public class HwTestApp {
  static final class Leaf {
    long value;
    Leaf(long v) { value = v; }
  }

  static final class Garbage {
    int value;
    Garbage(int v) { value = v; }
  }

  static Leaf[] leaves;
  static Runnable lambda;
  static final List<Object> sink = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    leaves = new Leaf[1234];
    for (int i = 0; i < leaves.length; i++) leaves[i] = new Leaf(i);
    long seed = System.nanoTime();
    lambda = () -> System.out.println(seed);
    dropGarbage();
    System.out.println("ready");
    System.out.flush();
    if (args.length > 0 && args[0].equals("stdin")) {
      int c;
      while ((c = System.in.read()) != -1) {
        if (c == 'g') {
          dropGarbage();
          System.out.println("garbage");
          System.out.flush();
        }
      }
      return;
    }
    Thread.sleep(Long.MAX_VALUE);
  }

  static void dropGarbage() {
    int garbageSum = 0;
    for (int i = 0; i < 3000; i++) garbageSum += new Garbage(i).value;
    sink.add(Integer.valueOf(garbageSum));
  }
}
