import java.net.URL;
import java.net.URLClassLoader;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A class loader leak, growing, for heapwatch's end-to-end test at the shipped defaults
 * (tests/e2e/defaults_e2e.sh): a plugin host that "redeploys" its plugin every --deploy-seconds
 * (default 5) and never lets the old deployment go.
 *
 * <p>Each deployment is a new {@code URLClassLoader} over this program's own jar without a parent (so
 * it defines its own copy of every class instead of delegating, as an application server's web
 * application loader does), through which it loads {@code ClassLoaderLeakApp$Plugin} and the plugin's
 * 50 {@code ClassLoaderLeakApp$Plugin$PartN} classes: 52 classes per deployment with the plugin's
 * {@code Ticker}. The plugin starts a thread ("plugin-ticker-N", its context class loader the
 * deployment's loader, its Runnable a class of that loader) that nobody ever stops: the classic
 * redeploy leak of docs/class-loaders.md (a thread started by a web application and never stopped
 * pins its loader, every class it defined and their static state). The live class count
 * (java.cls.loadedClasses - unloadedClasses) rises by 52 per deployment, about 620 a minute at the
 * default, and metaspace with it (about 110 KB per deployment, measured on JDK 17); the heap barely
 * moves. Between deployments it serves "requests": about 1 MB/s of short-lived garbage, so that young
 * collections happen (the JVM updates its metaspace counters only at collections).
 *
 * <p>Usage: {@code java -jar ClassLoaderLeakApp.jar [--deploy-seconds S] [--max-seconds S]}. Prints
 * {@code ClassLoaderLeakApp ready pid=N} after the first deployment and exits within a second once
 * the process that started it is gone (TestSupport), and after --max-seconds (default 3600).
 */
public final class ClassLoaderLeakApp {
  /** The plugin: loaded once per deployment by that deployment's loader. */
  public static final class Plugin {
    public static final Object STATE = new Object();
    static final int PARTS = 50;

    /** The thread the plugin starts and never stops; its class pins the deployment's loader. */
    public static final class Ticker implements Runnable {
      long ticks;

      @Override
      public void run() {
        while (true) {
          ticks++;
          try {
            Thread.sleep(60_000);
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }

    /** Loads every part (through this class's own loader) and starts the ticker. */
    public Plugin(int deployment) throws ClassNotFoundException {
      ClassLoader loader = Plugin.class.getClassLoader();
      for (int i = 0; i < PARTS; i++) {
        Class.forName(Plugin.class.getName() + "$Part" + i, true, loader);
      }
      Thread ticker = new Thread(new Ticker(), "plugin-ticker-" + deployment);
      ticker.setContextClassLoader(loader);
      ticker.setDaemon(true);
      ticker.start();
    }

    public static final class Part0 { static final int[] TABLE = new int[8]; int value(int x) { return x * 1 + TABLE.length; } }
    public static final class Part1 { static final int[] TABLE = new int[9]; int value(int x) { return x * 2 + TABLE.length; } }
    public static final class Part2 { static final int[] TABLE = new int[10]; int value(int x) { return x * 3 + TABLE.length; } }
    public static final class Part3 { static final int[] TABLE = new int[11]; int value(int x) { return x * 4 + TABLE.length; } }
    public static final class Part4 { static final int[] TABLE = new int[12]; int value(int x) { return x * 5 + TABLE.length; } }
    public static final class Part5 { static final int[] TABLE = new int[13]; int value(int x) { return x * 6 + TABLE.length; } }
    public static final class Part6 { static final int[] TABLE = new int[14]; int value(int x) { return x * 7 + TABLE.length; } }
    public static final class Part7 { static final int[] TABLE = new int[15]; int value(int x) { return x * 8 + TABLE.length; } }
    public static final class Part8 { static final int[] TABLE = new int[16]; int value(int x) { return x * 9 + TABLE.length; } }
    public static final class Part9 { static final int[] TABLE = new int[17]; int value(int x) { return x * 10 + TABLE.length; } }
    public static final class Part10 { static final int[] TABLE = new int[18]; int value(int x) { return x * 11 + TABLE.length; } }
    public static final class Part11 { static final int[] TABLE = new int[19]; int value(int x) { return x * 12 + TABLE.length; } }
    public static final class Part12 { static final int[] TABLE = new int[20]; int value(int x) { return x * 13 + TABLE.length; } }
    public static final class Part13 { static final int[] TABLE = new int[21]; int value(int x) { return x * 14 + TABLE.length; } }
    public static final class Part14 { static final int[] TABLE = new int[22]; int value(int x) { return x * 15 + TABLE.length; } }
    public static final class Part15 { static final int[] TABLE = new int[23]; int value(int x) { return x * 16 + TABLE.length; } }
    public static final class Part16 { static final int[] TABLE = new int[24]; int value(int x) { return x * 17 + TABLE.length; } }
    public static final class Part17 { static final int[] TABLE = new int[25]; int value(int x) { return x * 18 + TABLE.length; } }
    public static final class Part18 { static final int[] TABLE = new int[26]; int value(int x) { return x * 19 + TABLE.length; } }
    public static final class Part19 { static final int[] TABLE = new int[27]; int value(int x) { return x * 20 + TABLE.length; } }
    public static final class Part20 { static final int[] TABLE = new int[28]; int value(int x) { return x * 21 + TABLE.length; } }
    public static final class Part21 { static final int[] TABLE = new int[29]; int value(int x) { return x * 22 + TABLE.length; } }
    public static final class Part22 { static final int[] TABLE = new int[30]; int value(int x) { return x * 23 + TABLE.length; } }
    public static final class Part23 { static final int[] TABLE = new int[31]; int value(int x) { return x * 24 + TABLE.length; } }
    public static final class Part24 { static final int[] TABLE = new int[32]; int value(int x) { return x * 25 + TABLE.length; } }
    public static final class Part25 { static final int[] TABLE = new int[33]; int value(int x) { return x * 26 + TABLE.length; } }
    public static final class Part26 { static final int[] TABLE = new int[34]; int value(int x) { return x * 27 + TABLE.length; } }
    public static final class Part27 { static final int[] TABLE = new int[35]; int value(int x) { return x * 28 + TABLE.length; } }
    public static final class Part28 { static final int[] TABLE = new int[36]; int value(int x) { return x * 29 + TABLE.length; } }
    public static final class Part29 { static final int[] TABLE = new int[37]; int value(int x) { return x * 30 + TABLE.length; } }
    public static final class Part30 { static final int[] TABLE = new int[38]; int value(int x) { return x * 31 + TABLE.length; } }
    public static final class Part31 { static final int[] TABLE = new int[39]; int value(int x) { return x * 32 + TABLE.length; } }
    public static final class Part32 { static final int[] TABLE = new int[40]; int value(int x) { return x * 33 + TABLE.length; } }
    public static final class Part33 { static final int[] TABLE = new int[41]; int value(int x) { return x * 34 + TABLE.length; } }
    public static final class Part34 { static final int[] TABLE = new int[42]; int value(int x) { return x * 35 + TABLE.length; } }
    public static final class Part35 { static final int[] TABLE = new int[43]; int value(int x) { return x * 36 + TABLE.length; } }
    public static final class Part36 { static final int[] TABLE = new int[44]; int value(int x) { return x * 37 + TABLE.length; } }
    public static final class Part37 { static final int[] TABLE = new int[45]; int value(int x) { return x * 38 + TABLE.length; } }
    public static final class Part38 { static final int[] TABLE = new int[46]; int value(int x) { return x * 39 + TABLE.length; } }
    public static final class Part39 { static final int[] TABLE = new int[47]; int value(int x) { return x * 40 + TABLE.length; } }
    public static final class Part40 { static final int[] TABLE = new int[48]; int value(int x) { return x * 41 + TABLE.length; } }
    public static final class Part41 { static final int[] TABLE = new int[49]; int value(int x) { return x * 42 + TABLE.length; } }
    public static final class Part42 { static final int[] TABLE = new int[50]; int value(int x) { return x * 43 + TABLE.length; } }
    public static final class Part43 { static final int[] TABLE = new int[51]; int value(int x) { return x * 44 + TABLE.length; } }
    public static final class Part44 { static final int[] TABLE = new int[52]; int value(int x) { return x * 45 + TABLE.length; } }
    public static final class Part45 { static final int[] TABLE = new int[53]; int value(int x) { return x * 46 + TABLE.length; } }
    public static final class Part46 { static final int[] TABLE = new int[54]; int value(int x) { return x * 47 + TABLE.length; } }
    public static final class Part47 { static final int[] TABLE = new int[55]; int value(int x) { return x * 48 + TABLE.length; } }
    public static final class Part48 { static final int[] TABLE = new int[56]; int value(int x) { return x * 49 + TABLE.length; } }
    public static final class Part49 { static final int[] TABLE = new int[57]; int value(int x) { return x * 50 + TABLE.length; } }
  }

  public static void main(String[] args) throws Exception {
    long deploySeconds = 5;
    String[] rest = TestSupport.guardLifetime(args, 3600);
    for (int i = 0; i < rest.length; i++) {
      switch (rest[i]) {
        case "--deploy-seconds" -> deploySeconds = Long.parseLong(rest[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + rest[i]);
      }
    }
    final URL jar = ClassLoaderLeakApp.class.getProtectionDomain().getCodeSource().getLocation();
    final ThreadLocalRandom random = ThreadLocalRandom.current();
    final long start = System.nanoTime();
    for (int deployment = 0; ; ) {
      // The deployments due by now on the wall clock; the old ones are not stopped (each ticker
      // thread keeps its loader alive).
      while (deployment <= (System.nanoTime() - start) / (deploySeconds * 1_000_000_000L)) {
        URLClassLoader loader = new URLClassLoader("plugin-" + deployment, new URL[] {jar}, null);
        Class<?> plugin = Class.forName(Plugin.class.getName(), true, loader);
        plugin.getConstructor(int.class).newInstance(deployment);
        if (deployment == 0) {
          System.out.println("ClassLoaderLeakApp ready pid=" + ProcessHandle.current().pid());
          System.out.flush();
        }
        deployment++;
      }
      // Requests: about 1 MB/s of short-lived garbage, so that young collections happen (the JVM
      // publishes metaspace only at collections).
      for (int i = 0; i < 200; i++) {
        sink = new byte[random.nextInt(64, 900)];
      }
      Thread.sleep(100);
    }
  }

  static volatile Object sink;
}
