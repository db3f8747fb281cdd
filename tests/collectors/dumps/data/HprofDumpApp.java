// A JVM for the HPROF reader tests: builds a heap with many shapes of objects (field packing cases,
// superclass gaps, arrays of every type, references of every strength, class loaders, lambdas, records,
// contended JDK classes, threads), prints "READY <pid>" and sleeps until killed, so that the test can take
// `jcmd GC.class_histogram -all` and `jcmd GC.heap_dump -all` of a quiet heap.
import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.SoftReference;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

public class HprofDumpApp {
  // Field packing: each class tests one HotSpot layout rule.
  static class OneByte { byte a; }
  static class ByteAndLong { byte a; long b; }
  static class IntAndRef { int a; Object b; }
  static class Mixed { boolean z; byte b; char c; short s; int i; float f; long j; double d; Object o; }
  static class Parent { byte p; }
  static class Child extends Parent { byte c; }            // JDK 15+ packs c right after p
  static class GrandChild extends Child { long g; int h; }
  static class LongParent { long x; }
  static class IntChild extends LongParent { int y; }
  static class RefParent { Object r; }
  static class ShortChild extends RefParent { short s; byte b; }
  static class Empty {}
  static class EmptyChild extends Empty {}
  static final class Node { Node next; int value; Node(Node n, int v) { next = n; value = v; } }
  record Point(int x, int y, String label) {}

  static final List<Object> KEEP = new ArrayList<>();
  static Object staticRef = new Object();

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < 50; i++) {
      KEEP.add(new OneByte());
      KEEP.add(new ByteAndLong());
      KEEP.add(new IntAndRef());
      KEEP.add(new Mixed());
      KEEP.add(new Parent());
      KEEP.add(new Child());
      KEEP.add(new GrandChild());
      KEEP.add(new IntChild());
      KEEP.add(new ShortChild());
      KEEP.add(new Empty());
      KEEP.add(new EmptyChild());
      KEEP.add(new Point(i, -i, "p" + i));
    }
    Node head = null;
    for (int i = 0; i < 1000; i++) head = new Node(head, i);
    KEEP.add(head);
    // Arrays of every type and length 0..9.
    for (int n = 0; n < 10; n++) {
      KEEP.add(new boolean[n]); KEEP.add(new byte[n]); KEEP.add(new char[n]); KEEP.add(new short[n]);
      KEEP.add(new int[n]); KEEP.add(new float[n]); KEEP.add(new long[n]); KEEP.add(new double[n]);
      KEEP.add(new Object[n]); KEEP.add(new String[n][n]); KEEP.add(new int[n][]);
    }
    KEEP.add(new byte[1 << 20]);
    // Collections.
    Map<String, Integer> hash = new HashMap<>();
    Map<String, Integer> linked = new LinkedHashMap<>();
    Map<String, Integer> tree = new TreeMap<>();
    ConcurrentHashMap<String, Long> chm = new ConcurrentHashMap<>();
    for (int i = 0; i < 2000; i++) {
      String k = "key-" + i;
      hash.put(k, i);
      linked.put(k, i);
      tree.put(k, i);
      chm.put(k, (long) i);
    }
    KEEP.add(hash); KEEP.add(linked); KEEP.add(tree); KEEP.add(chm);
    // Contended JDK classes: LongAdder cells and ConcurrentHashMap counter cells appear under contention.
    LongAdder adder = new LongAdder();
    ConcurrentHashMap<Integer, Integer> contended = new ConcurrentHashMap<>();
    Thread[] workers = new Thread[4];
    for (int t = 0; t < workers.length; t++) {
      final int base = t * 100000;
      workers[t] = new Thread(() -> {
        for (int i = 0; i < 100000; i++) { adder.increment(); contended.put(base + (i % 5000), i); }
      }, "worker-" + t);
      workers[t].start();
    }
    for (Thread w : workers) w.join();
    KEEP.add(adder); KEEP.add(contended);
    // References of every strength.
    ReferenceQueue<Object> queue = new ReferenceQueue<>();
    for (int i = 0; i < 20; i++) {
      Object target = new int[] {i};
      KEEP.add(target);
      KEEP.add(new WeakReference<>(target, queue));
      KEEP.add(new SoftReference<>(target));
      KEEP.add(new PhantomReference<>(target, queue));
    }
    KEEP.add(new WeakReference<>(new Object()));  // referent only weakly reachable
    // Lambdas (hidden classes), a class loader of our own, sleeping threads.
    for (int i = 0; i < 5; i++) {
      final int v = i;
      Supplier<String> s = () -> "lambda" + v;
      KEEP.add(s);
    }
    KEEP.add(new URLClassLoader(new URL[0], HprofDumpApp.class.getClassLoader()));
    for (int t = 0; t < 3; t++) {
      Thread sleeper = new Thread(() -> {
        try { Thread.sleep(Long.MAX_VALUE); } catch (InterruptedException e) { }
      }, "sleeper-" + t);
      sleeper.setDaemon(true);
      sleeper.start();
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 100; i++) sb.append("text ").append(i);
    KEEP.add(sb.toString());
    KEEP.add(Integer.valueOf(123456)); KEEP.add(Long.valueOf(1234567890123L)); KEEP.add(Double.valueOf(2.5));
    System.gc();
    System.out.println("READY " + ProcessHandle.current().pid());
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
