/** ListenerApp's view models unregistering their listener when they close: the negative case. */
public final class ListenerCleanApp {
  public static void main(String[] args) throws InterruptedException {
    ListenerApp.run(args, true);
  }
}
