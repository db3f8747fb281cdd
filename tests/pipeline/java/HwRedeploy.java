// Test program for tests/pipeline/leak_patterns_jvm_test.cc: an application "server" that deploys
// the application HwApp (tests/pipeline/java/app, compiled into the directory java-app-classes next
// to this program's classes) five times, each time with a new URLClassLoader, and undeploys the
// first four. With "leak" an undeploy forgets the application's worker thread, which keeps running
// and pins the old class loader (four leaked loaders); with "clean" it stops the thread, so the old
// loaders can be collected. The fifth deploy stays live in the static field CURRENT. Prints
// "ready", then keeps running.
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.concurrent.TimeUnit;

public final class HwRedeploy {
  static Object CURRENT;
  static URLClassLoader CURRENT_LOADER;

  public static void main(String[] args) throws Exception {
    final boolean clean = args.length > 0 && args[0].equals("clean");
    File classes = new File(System.getProperty("java.class.path"));
    URL app = new File(classes.getParentFile(), "java-app-classes").toURI().toURL();
    for (int deploy = 0; deploy < 5; ++deploy) {
      URLClassLoader loader =
          new URLClassLoader(new URL[] {app}, ClassLoader.getPlatformClassLoader());
      Object instance = loader.loadClass("HwApp").getDeclaredConstructor().newInstance();
      instance.getClass().getMethod("start").invoke(instance);
      if (deploy < 4) {
        instance.getClass().getMethod("stop", boolean.class).invoke(instance, clean);
        loader.close();
      } else {
        CURRENT = instance;
        CURRENT_LOADER = loader;
      }
    }
    System.gc();
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(TimeUnit.HOURS.toMillis(1));
  }
}
