// Builds a realistic live heap of a configurable size for heapwatch's analysis benchmark, then waits so
// that scripts/bench.sh can dump it with `jcmd <pid> GC.heap_dump`.
//
// Usage: java -Xmx4g HeapBuilder MEGABYTES
//   MEGABYTES is the approximate size of the live heap to build (the HPROF dump is larger: every reference
//   is written as an 8-byte id even with compressed oops). When the heap is built the program prints
//   "READY <pid>" on stdout and then sleeps until it is killed (or until stdin is closed).
//
// The heap mixes the shapes a heap analyser meets in production:
//   - a customer "database": HashMap<String, Customer>, each customer with strings, an address, an
//     ArrayList of orders, each order with an Object[] of line items and a BigDecimal total;
//   - a TreeMap<Long, Product> index (red-black tree) and a ConcurrentHashMap session cache;
//   - a long singly linked chain (deep paths: stresses iterative graph walks) and a java.util.LinkedList;
//   - a random object graph with cycles (nodes with several random neighbours, rings);
//   - byte[] and int[] buffers, interned-looking strings, boxed numbers;
//   - soft and weak references and a WeakHashMap (edges a GC may clear);
//   - a deliberate leak: Leak.SESSIONS, a static ArrayList that only grows (the accumulation point a
//     leak-suspect analysis must find: `heapwatchctl analyze dump --class HeapBuilder$LeakedSession`).
// Everything is deterministic for a given MEGABYTES (fixed random seed).
import java.io.IOException;
import java.lang.ref.SoftReference;
import java.lang.ref.WeakReference;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

public final class HeapBuilder {
  static final class Address {
    final String street;
    final String city;
    final int zip;

    Address(String street, String city, int zip) {
      this.street = street;
      this.city = city;
      this.zip = zip;
    }
  }

  static final class LineItem {
    final Product product;
    final int quantity;

    LineItem(Product product, int quantity) {
      this.product = product;
      this.quantity = quantity;
    }
  }

  static final class Order {
    final long id;
    final Customer customer; // back reference: cycle customer -> orders -> order -> customer
    final Object[] items;
    final BigDecimal total;

    Order(long id, Customer customer, Object[] items, BigDecimal total) {
      this.id = id;
      this.customer = customer;
      this.items = items;
      this.total = total;
    }
  }

  static final class Customer {
    final String name;
    final String email;
    final Address address;
    final List<Order> orders = new ArrayList<>();
    byte[] avatar;

    Customer(String name, String email, Address address) {
      this.name = name;
      this.email = email;
      this.address = address;
    }
  }

  static final class Product {
    final long sku;
    final String title;
    final double price;
    final int[] stockPerWarehouse;

    Product(long sku, String title, double price, int[] stock) {
      this.sku = sku;
      this.title = title;
      this.price = price;
      this.stockPerWarehouse = stock;
    }
  }

  static final class ChainLink {
    final ChainLink next;
    final long payload;

    ChainLink(ChainLink next, long payload) {
      this.next = next;
      this.payload = payload;
    }
  }

  static final class GraphNode {
    final int id;
    GraphNode[] neighbours;
    Object attachment;

    GraphNode(int id) {
      this.id = id;
    }
  }

  static final class Session {
    final String token;
    final Map<String, Object> attributes = new HashMap<>();

    Session(String token) {
      this.token = token;
    }
  }

  static final class LeakedSession {
    final String user;
    final byte[] state;
    final long createdNanos;

    LeakedSession(String user, byte[] state, long createdNanos) {
      this.user = user;
      this.state = state;
      this.createdNanos = createdNanos;
    }
  }

  static final class Leak {
    static final List<LeakedSession> SESSIONS = new ArrayList<>();
  }

  // Roots of everything built (static fields: the dump shows them as class statics).
  static Map<String, Customer> customers;
  static TreeMap<Long, Product> products;
  static ConcurrentHashMap<String, Session> sessions;
  static ChainLink chain;
  static LinkedList<Integer> queue;
  static GraphNode[] graph;
  static List<Object> buffers;
  static List<SoftReference<byte[]>> softCache;
  static List<WeakReference<Object>> weakRefs;
  static WeakHashMap<Object, String> weakMap;

  public static void main(String[] args) throws IOException, InterruptedException {
    long megabytes = args.length > 0 ? Long.parseLong(args[0]) : 64;
    // One "unit" is about 1 MB of live heap, split across the structures below.
    long units = Math.max(1, megabytes);
    Random random = new Random(42);

    products = new TreeMap<>();
    long productCount = units * 200;
    List<Product> productList = new ArrayList<>();
    for (long i = 0; i < productCount; i++) {
      int[] stock = new int[4 + random.nextInt(8)];
      for (int w = 0; w < stock.length; w++) stock[w] = random.nextInt(1000);
      Product p = new Product(i, "product-" + i + "-" + Long.toHexString(random.nextLong()),
          random.nextDouble() * 100, stock);
      products.put(i, p);
      productList.add(p);
    }

    customers = new HashMap<>();
    long customerCount = units * 400;
    long orderId = 0;
    for (long i = 0; i < customerCount; i++) {
      String name = "customer-" + i;
      Customer c = new Customer(name, name + "@example.com",
          new Address(random.nextInt(9999) + " Main Street", "City" + random.nextInt(500),
              10000 + random.nextInt(89999)));
      if (random.nextInt(10) == 0) c.avatar = new byte[256 + random.nextInt(2048)];
      int orders = random.nextInt(6);
      for (int o = 0; o < orders; o++) {
        Object[] items = new Object[1 + random.nextInt(4)];
        for (int k = 0; k < items.length; k++) {
          items[k] = new LineItem(productList.get(random.nextInt(productList.size())), 1 + random.nextInt(5));
        }
        c.orders.add(new Order(orderId++, c, items, BigDecimal.valueOf(random.nextInt(100000), 2)));
      }
      customers.put(name, c);
    }

    sessions = new ConcurrentHashMap<>();
    for (long i = 0; i < units * 100; i++) {
      Session s = new Session(Long.toHexString(random.nextLong()));
      s.attributes.put("user", "user-" + random.nextInt(100000));
      s.attributes.put("visits", Integer.valueOf(random.nextInt(1000)));
      s.attributes.put("cart", new ArrayList<>(List.of(productList.get(random.nextInt(productList.size())))));
      sessions.put(s.token, s);
    }

    // A long chain: units * 2000 links deep (2 million links per GB).
    ChainLink link = null;
    for (long i = 0; i < units * 2000; i++) link = new ChainLink(link, i);
    chain = link;
    queue = new LinkedList<>();
    for (int i = 0; i < units * 300; i++) queue.add(i);

    // Random graph with cycles and rings.
    int nodes = (int) (units * 1000);
    graph = new GraphNode[nodes];
    for (int i = 0; i < nodes; i++) graph[i] = new GraphNode(i);
    for (int i = 0; i < nodes; i++) {
      GraphNode[] ns = new GraphNode[1 + random.nextInt(3)];
      ns[0] = graph[(i + 1) % nodes]; // ring
      for (int k = 1; k < ns.length; k++) ns[k] = graph[random.nextInt(nodes)];
      graph[i].neighbours = ns;
      if (random.nextInt(4) == 0) graph[i].attachment = "node-" + i;
    }

    buffers = new ArrayList<>();
    for (long i = 0; i < units * 20; i++) {
      buffers.add(random.nextBoolean() ? new byte[1024 + random.nextInt(8192)] : new int[256 + random.nextInt(2048)]);
    }

    softCache = new ArrayList<>();
    weakRefs = new ArrayList<>();
    weakMap = new WeakHashMap<>();
    for (long i = 0; i < units * 20; i++) {
      byte[] strongToo = new byte[512];
      buffers.add(strongToo);
      softCache.add(new SoftReference<>(strongToo));
      Customer someone = customers.get("customer-" + random.nextInt((int) customerCount));
      weakRefs.add(new WeakReference<>(someone));
      weakMap.put(someone, "seen");
    }

    for (long i = 0; i < units * 50; i++) {
      Leak.SESSIONS.add(new LeakedSession("user-" + i, new byte[64 + random.nextInt(256)], System.nanoTime()));
    }

    System.gc();
    System.out.println("READY " + ProcessHandle.current().pid());
    System.out.flush();
    // Wait until the driver closes stdin (or kills us).
    while (System.in.read() != -1) {
      Thread.sleep(10);
    }
  }
}
