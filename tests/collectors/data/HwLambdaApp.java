// A program full of run-time generated classes, for the stable-class-name test
// (tests/collectors/stable_class_name_test.cc): lambdas and method references of several host
// classes, java.lang.reflect.Proxy instances of two interfaces, and reflective calls repeated past
// the inflation threshold (JDK 17 then generates a jdk.internal.reflect.GeneratedMethodAccessorN).
// Run with "reverse", it creates the same classes in another order after some extra lambdas, as a
// restarted service whose start-up ran differently would: the counters and addresses in the JVM's
// names change, the classes do not. Keeps everything reachable, prints "ready", sleeps.
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.function.Supplier;

public class HwLambdaApp {
  static final List<Object> KEEP = new ArrayList<>();

  public interface Greeter { String greet(String who); }
  public interface Counter { int count(); }

  static class Views {
    static void make() {
      KEEP.add((Runnable) () -> {});
      KEEP.add((Supplier<String>) () -> "view");
      KEEP.add((Function<String, Integer>) String::length);
    }
  }

  static class Handlers {
    static void make() {
      for (int i = 0; i < 3; i++) {
        final int k = i;
        KEEP.add((Callable<Integer>) () -> k);
      }
      KEEP.add((Function<Integer, Integer>) x -> x + 1);
    }
  }

  static void proxies() {
    InvocationHandler h = (p, m, a) -> m.getName().equals("count") ? (Object) 1 : (Object) "hi";
    ClassLoader cl = HwLambdaApp.class.getClassLoader();
    KEEP.add(Proxy.newProxyInstance(cl, new Class<?>[] {Greeter.class}, h));
    KEEP.add(Proxy.newProxyInstance(cl, new Class<?>[] {Counter.class}, h));
  }

  public int target() { return 42; }

  static void reflection() throws Exception {
    Method m = HwLambdaApp.class.getMethod("target");
    HwLambdaApp app = new HwLambdaApp();
    for (int i = 0; i < 100; i++) m.invoke(app);
    KEEP.add(m);
  }

  public static void main(String[] args) throws Exception {
    boolean reverse = args.length > 0 && args[0].equals("reverse");
    if (reverse) {
      for (int i = 0; i < 5; i++) KEEP.add((Supplier<Integer>) () -> 7);  // extra start-up work
      Runnable extra = () -> {};
      KEEP.add(extra);
      reflection();
      proxies();
      Handlers.make();
      Views.make();
    } else {
      Views.make();
      Handlers.make();
      proxies();
      reflection();
    }
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(600_000);
  }
}
