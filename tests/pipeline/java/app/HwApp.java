// The "web application" of HwRedeploy (tests/pipeline/java/HwRedeploy.java), compiled into its own
// directory and loaded by a fresh URLClassLoader on every deploy. start() starts a worker thread
// running this object; stop(true) stops and joins it, stop(false) forgets it (the leak: the thread
// keeps running and pins the class loader). CACHE stands for the application's static state.
public final class HwApp implements Runnable {
  static final byte[] CACHE = new byte[256 * 1024];
  private volatile boolean stopped;
  private Thread worker;

  public void start() {
    worker = new Thread(this, "app-worker");
    worker.setDaemon(true);
    worker.start();
  }

  public void stop(boolean clean) throws InterruptedException {
    if (!clean) return;
    stopped = true;
    worker.interrupt();
    worker.join();
  }

  @Override
  public void run() {
    while (!stopped) {
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        // stop() interrupts; the loop checks `stopped`
      }
    }
  }
}
