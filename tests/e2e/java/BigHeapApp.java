import java.util.concurrent.ThreadLocalRandom;

/**
 * A JVM with a big, steady heap and no leak, for heapwatch's end-to-end tests of a JVM killed while it writes
 * an extended dump: it builds about --megabytes (default 400) MB of small live objects
 * ({@code BigHeapApp$Node}, 32 bytes each with compressed oops: 12-byte header, two longs, one reference),
 * linked in chunks of 100000 from one static array, so that {@code GC.heap_dump} of it takes seconds. Then it
 * only churns short-lived garbage; the live heap does not change. Run it with -Xmx1g.
 *
 * <p>Usage: {@code java -Xmx1g -cp CLASSES BigHeapApp [--megabytes N] [--max-seconds S]}. It exits within a
 * second once the process that started it is gone, and after --max-seconds (default 3600). Prints
 * "BigHeapApp ready pid=N objects=M" once the heap is built.
 */
public final class BigHeapApp {
  static final class Node {
    final long a;
    final long b;
    Node next;

    Node(long a, long b, Node next) {
      this.a = a;
      this.b = b;
      this.next = next;
    }
  }

  static final int CHUNK = 100_000;
  static Node[] chunks;

  static volatile Object sink;

  public static void main(String[] args) throws InterruptedException {
    long megabytes = 400;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--megabytes" -> megabytes = Long.parseLong(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }

    final long objects = megabytes * 1_000_000L / 32;
    final int chunkCount = (int) ((objects + CHUNK - 1) / CHUNK);
    chunks = new Node[chunkCount];
    long made = 0;
    for (int c = 0; c < chunkCount; c++) {
      Node head = null;
      for (int i = 0; i < CHUNK && made < objects; i++, made++) {
        head = new Node(made, made * 31, head);
      }
      chunks[c] = head;
    }
    System.out.println("BigHeapApp ready pid=" + ProcessHandle.current().pid() + " objects=" + made);
    System.out.flush();
    while (true) {
      for (int i = 0; i < 100; i++) {
        sink = new byte[ThreadLocalRandom.current().nextInt(16, 256)];
      }
      Thread.sleep(100);
    }
  }
}
