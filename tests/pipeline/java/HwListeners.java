// Test program for tests/pipeline/leak_patterns_jvm_test.cc: listeners never unregistered. A
// long-lived event bus (static BUS) holds its listeners in a CopyOnWriteArrayList; 2000 short-lived
// view models each register a method reference (this::on, a lambda class declared in ViewModel).
// With "leak" they are never removed, so the bus keeps every view model (and its state) alive;
// with "clean" each view model unregisters the listener it registered when it is closed. Prints
// "ready", then keeps the bus alive.
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

public final class HwListeners {
  static final class EventBus {
    private final List<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

    void register(Consumer<String> listener) {
      listeners.add(listener);
    }

    void unregister(Consumer<String> listener) {
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

  public static void main(String[] args) throws Exception {
    final boolean clean = args.length > 0 && args[0].equals("clean");
    for (int i = 0; i < 2000; ++i) {
      ViewModel view = new ViewModel();
      view.attach(BUS);
      if (clean) view.close(BUS);
    }
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
