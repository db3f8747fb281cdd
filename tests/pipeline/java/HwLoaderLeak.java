// Class loaders for tests/pipeline/class_loaders_jvm_test.cc: `HwLoaderLeak <n> <mode>` creates n
// URLClassLoaders over its own class path, each without a parent (so each defines its own copy
// instead of delegating), and loads HwLoaderLeak$Plugin and HwLoaderLeak$Helper through each, as an
// application server loads a web application once per deployment. Mode "pinned": every loader
// stays referenced (a static list, as a thread or a DriverManager registration would keep it);
// "released": the loaders are dropped and System.gc() unloads them. Prints "ready", then sleeps.
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;

public class HwLoaderLeak {
  static final List<Object> PINNED = new ArrayList<>();

  public static class Plugin {
    public static final Object STATE = new Object();
  }

  public static class Helper {}

  public static void main(String[] args) throws Exception {
    // One argument "<n> <mode>" (tests/daemon/test_jvm.h passes one) or two.
    final String[] a = String.join(" ", args).trim().split("\\s+");
    final int n = Integer.parseInt(a[0]);
    final boolean pinned = a.length < 2 || a[1].equals("pinned");
    final URL here = HwLoaderLeak.class.getProtectionDomain().getCodeSource().getLocation();
    for (int i = 0; i < n; i++) {
      URLClassLoader loader = new URLClassLoader(new URL[] {here}, null);
      Class<?> plugin = Class.forName("HwLoaderLeak$Plugin", true, loader);
      Class.forName("HwLoaderLeak$Helper", true, loader);
      Object instance = plugin.getDeclaredConstructor().newInstance();
      if (pinned) PINNED.add(instance);
    }
    if (!pinned) {
      for (int i = 0; i < 5; i++) System.gc();
    }
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(600_000);
  }
}
