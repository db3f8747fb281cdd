import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Listeners never unregistered, growing, for leak_e2e_test's KnownPatternProgramsAreOneLeakEach: every
 * 100 ms 100 short-lived view models each register a method reference ({@code this::on}) on the static
 * event bus {@code BUS} (its listeners in an ArrayList) and never unregister it, so the bus keeps every view
 * model (each with a long[64] of state) alive: about 55 KiB more per tick. ListenerCleanApp's view models
 * unregister the listener they registered when they close (nothing grows).
 *
 * <p>Usage: {@code java -jar ListenerApp.jar [--max-seconds S]}. Prints "ready" once running.
 */
public class ListenerApp {
  static final class EventBus {
    private final List<Consumer<String>> listeners = new ArrayList<>();

    synchronized void register(Consumer<String> listener) {
      listeners.add(listener);
    }

    synchronized void unregister(Consumer<String> listener) {
      listeners.remove(listener);
    }
  }

  static final class ViewModel {
    final long[] state = new long[64];
    private Consumer<String> registration;

    void attach(EventBus bus) {
      registration = this::on;
      bus.register(registration);
    }

    void close(EventBus bus) {
      bus.unregister(registration);
    }

    void on(String event) {
      state[0] += event.length();
    }
  }

  static final EventBus BUS = new EventBus();

  static void run(String[] args, boolean clean) throws InterruptedException {
    TestSupport.guardLifetime(args, 3600);
    System.out.println((clean ? "ListenerCleanApp" : "ListenerApp") + " ready pid="
        + ProcessHandle.current().pid());
    System.out.flush();
    while (true) {
      for (int i = 0; i < 100; i++) {
        ViewModel view = new ViewModel();
        view.attach(BUS);
        if (clean) view.close(BUS);
      }
      Thread.sleep(100);
    }
  }

  public static void main(String[] args) throws InterruptedException {
    run(args, false);
  }
}
