/** ThreadLocalPoolApp's tasks calling remove() in a finally block: the negative case. */
public final class ThreadLocalPoolCleanApp {
  public static void main(String[] args) throws InterruptedException {
    ThreadLocalPoolApp.run(args, true);
  }
}
