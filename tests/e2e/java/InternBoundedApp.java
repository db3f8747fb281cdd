/** InternApp interning a bounded set of 500 keys: the negative case (a flat string table). */
public final class InternBoundedApp {
  public static void main(String[] args) throws InterruptedException {
    String[] all = new String[args.length + 1];
    System.arraycopy(args, 0, all, 0, args.length);
    all[args.length] = "--bounded";
    InternApp.main(all);
  }
}
