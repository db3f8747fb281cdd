package heapwatch.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The fixed application workload of bench/collection/run.sh: a service that keeps sessions in memory.
 *
 * <p>It first builds a live set of about --live-mb MiB: sessions (records with strings, a small map of cart
 * items, a long[] history, a tag list) in 64 ConcurrentHashMaps, measured with System.gc() and the heap's
 * used bytes (calibrated on 1/16, 60 % and 95 % of it, then topped up). Then --threads workers run requests: each
 * looks one random session up and reads it (the live set is touched at random), builds a response out of
 * short-lived objects (a request string, item records, a map, a scratch array; about 2 KB) and computes a
 * checksum. Every N-th request replaces one session with a new one, so old objects die and new ones are
 * promoted: old-generation collections happen now and then, as in a service with a session cache. N is
 * fixed once, at the end of the warm-up (--warmup-seconds), so that --churn-per-min of the live set would
 * be replaced per minute at the speed of the warm-up's second half; from then on every request does the same work, whatever
 * the speed.
 *
 * <p>Output (stdout, one line each): "READY live_bytes B sessions S build_seconds T", then every
 * --report-ms "ops EPOCH_MS CUMULATIVE_OPS", "CALIBRATED replace_every N warmup_ops_per_s R", and at the
 * end "total OPS SECONDS". Commands on stdin: "pause" (workers stop between requests; prints "PAUSED"
 * once all have), "resume" (prints "RESUMED"), "stop" or end of input (prints the total, exits).
 * Pausing lets run.sh measure a single operation's safepoint time without the workload's own young
 * collections in the same window.
 *
 * <p>With --hot-sessions H (default 0: all), requests read only the sessions of the first H slots, as a
 * service whose traffic goes to a few hot keys of a big cache. It was tried to steady the speed on the
 * 2-core VM here and did not (570-1,080 k requests/s from second to second with 4,096 hot sessions,
 * against 300-450 k with uniform reads; bench/collection/README.md, "Noise"); it is kept as a knob. The
 * whole live set is still walked by every histogram, and replacements still go through all slots.
 *
 * <p>Usage: java -cp CLASSES heapwatch.bench.Workload --live-mb 512 [--threads 2] [--warmup-seconds 20]
 * [--churn-per-min 0.2] [--hot-sessions 0] [--report-ms 1000]
 */
public final class Workload {
  record Item(String sku, int qty, long priceCents, int[] attrs) {}

  record Session(long id, String user, String region, HashMap<String, Item> cart, long[] history,
      ArrayList<String> tags) {}

  private static final String[] REGIONS = {"eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1"};
  private static final String[] TAGS = {"premium", "trial", "mobile", "web", "beta", "b2b", "returning"};
  private static final int SHARDS = 64;
  /** Sessions by id, sharded by id. */
  @SuppressWarnings("unchecked")
  private static final ConcurrentHashMap<Long, Session>[] maps = new ConcurrentHashMap[SHARDS];
  /** ids[slot] is the id of the session in that slot; worker t replaces only slots with slot % threads == t. */
  private static AtomicLongArray ids;
  private static long nextId;

  private static volatile boolean paused;
  private static volatile boolean stopping;
  private static int parked;
  private static final Object gate = new Object();
  private static volatile long replaceEvery = Long.MAX_VALUE;

  public static void main(String[] args) throws Exception {
    long liveMb = 512;
    int threads = 2;
    double warmupSeconds = 20;
    double churnPerMin = 0.2;
    long reportMs = 1000;
    int hot = 0;
    for (int i = 0; i < args.length; i += 2) {
      switch (args[i]) {
        case "--live-mb" -> liveMb = Long.parseLong(args[i + 1]);
        case "--threads" -> threads = Integer.parseInt(args[i + 1]);
        case "--warmup-seconds" -> warmupSeconds = Double.parseDouble(args[i + 1]);
        case "--churn-per-min" -> churnPerMin = Double.parseDouble(args[i + 1]);
        case "--report-ms" -> reportMs = Long.parseLong(args[i + 1]);
        case "--hot-sessions" -> hot = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    for (int i = 0; i < SHARDS; i++) maps[i] = new ConcurrentHashMap<>();
    long t0 = System.nanoTime();
    int sessions = build(liveMb << 20);
    long live = usedAfterGc();
    System.out.printf("READY live_bytes %d sessions %d build_seconds %.1f%n", live, sessions,
        (System.nanoTime() - t0) / 1e9);
    System.out.flush();

    final int nThreads = threads;
    final int readSlots = hot > 0 ? Math.min(hot, sessions) : sessions;
    long[] counts = new long[nThreads * 16];  // one counter per worker, 128 bytes apart (no false sharing)
    Thread[] workers = new Thread[nThreads];
    for (int t = 0; t < nThreads; t++) {
      final int me = t;
      workers[t] = new Thread(() -> work(me, nThreads, sessions, readSlots, counts), "worker-" + t);
      workers[t].start();
    }
    final long everyMs = reportMs;
    Thread reporter = new Thread(() -> report(counts, nThreads, everyMs), "reporter");
    reporter.setDaemon(true);
    reporter.start();

    long start = System.nanoTime();
    // The first half of the warm-up runs interpreted and JIT-compiling; the speed is taken on the second.
    Thread.sleep((long) (warmupSeconds * 500));
    long half = System.nanoTime();
    long halfOps = sum(counts, nThreads);
    Thread.sleep((long) (warmupSeconds * 500));
    double warmOps = (sum(counts, nThreads) - halfOps) / ((System.nanoTime() - half) / 1e9);
    // Replace churnPerMin * sessions per minute at the warm-up speed.
    long every = Math.max(1, Math.round(warmOps * 60 / Math.max(1e-9, churnPerMin * sessions)));
    replaceEvery = every;
    System.out.printf("CALIBRATED replace_every %d warmup_ops_per_s %.0f%n", every, warmOps);
    System.out.flush();

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    for (String line; (line = in.readLine()) != null; ) {
      line = line.trim();
      if (line.equals("pause")) {
        synchronized (gate) {
          paused = true;
          while (parked < nThreads) gate.wait();
        }
        System.out.println("PAUSED");
      } else if (line.equals("resume")) {
        synchronized (gate) {
          paused = false;
          gate.notifyAll();
        }
        System.out.println("RESUMED");
      } else if (line.equals("stop")) {
        break;
      }
      System.out.flush();
    }
    stopping = true;
    synchronized (gate) {
      paused = false;
      gate.notifyAll();
    }
    for (Thread w : workers) w.join();
    System.out.printf("total %d %.1f%n", sum(counts, nThreads), (System.nanoTime() - start) / 1e9);
    System.out.flush();
  }

  private static long sum(long[] counts, int n) {
    long s = 0;
    synchronized (counts) {
      for (int t = 0; t < n; t++) s += counts[t * 16];
    }
    return s;
  }

  private static void report(long[] counts, int n, long everyMs) {
    try {
      while (true) {
        Thread.sleep(everyMs);
        System.out.println("ops " + System.currentTimeMillis() + " " + sum(counts, n));
        System.out.flush();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static long usedAfterGc() {
    System.gc();
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  /** Builds sessions until the live set is about target bytes; returns the number of slots. */
  private static int build(long target) {
    SplittableRandom r = new SplittableRandom(42);
    long base = usedAfterGc();
    ArrayList<Long> idList = new ArrayList<>();
    // Measure the bytes per session on 1/16 of the target (guessing 1 KB each), then on 60 % and 95 % of the
    // estimate: a small sample underestimates (the maps' tables, the JVM's own objects in the baseline).
    long want = Math.max(1000, target / 16 / 1024);
    for (double fraction : new double[] {1, 0.6, 0.95}) {
      while (idList.size() < want * fraction) idList.add(insert(r));
      double perSession = (double) (usedAfterGc() - base) / idList.size();
      want = (long) (target / perSession);
      System.err.printf("calibration: %d sessions, %.0f bytes each%n", idList.size(), perSession);
    }
    while (idList.size() < want) idList.add(insert(r));
    ids = new AtomicLongArray(idList.size());
    for (int i = 0; i < idList.size(); i++) ids.set(i, idList.get(i));
    return idList.size();
  }

  private static long insert(SplittableRandom r) {
    long id = nextId++;
    maps[(int) (id % SHARDS)].put(id, newSession(id, r));
    return id;
  }

  private static Session newSession(long id, SplittableRandom r) {
    HashMap<String, Item> cart = new HashMap<>();
    int items = 2 + r.nextInt(5);
    for (int i = 0; i < items; i++) {
      String sku = "SKU-" + (100000 + r.nextInt(900000));
      cart.put(sku, new Item(sku, 1 + r.nextInt(4), 99 + r.nextInt(50000),
          new int[] {r.nextInt(), r.nextInt(), r.nextInt(), r.nextInt()}));
    }
    long[] history = new long[8];
    for (int i = 0; i < history.length; i++) history[i] = r.nextLong();
    ArrayList<String> tags = new ArrayList<>(2);
    tags.add(TAGS[r.nextInt(TAGS.length)]);
    if (r.nextBoolean()) tags.add(TAGS[r.nextInt(TAGS.length)]);
    return new Session(id, "user" + id + "@example.com", REGIONS[r.nextInt(REGIONS.length)], cart, history,
        tags);
  }

  private static void work(int me, int nThreads, int slots, int readSlots, long[] counts) {
    SplittableRandom r = new SplittableRandom(1000 + me);
    long sink = 0;
    long done = 0;
    long sinceReplace = 0;
    int ownSlot = me;
    while (!stopping) {
      if (paused) park();
      sink += request(r, readSlots);
      if (++sinceReplace >= replaceEvery) {
        sinceReplace = 0;
        long old = ids.get(ownSlot);
        long id;
        synchronized (Workload.class) {
          id = nextId++;
        }
        maps[(int) (old % SHARDS)].remove(old);
        maps[(int) (id % SHARDS)].put(id, newSession(id, r));
        ids.set(ownSlot, id);
        ownSlot += nThreads;
        if (ownSlot >= slots) ownSlot = me;
      }
      if ((++done & 255) == 0) {
        synchronized (counts) {
          counts[me * 16] = done;
        }
      }
    }
    synchronized (counts) {
      counts[me * 16] = done;
    }
    if (sink == 42) System.out.println("sink");  // keeps the checksums alive
  }

  private static void park() {
    synchronized (gate) {
      parked++;
      gate.notifyAll();
      try {
        while (paused && !stopping) gate.wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      parked--;
    }
  }

  /** One request: read a random session, build a response of short-lived objects, return a checksum. */
  private static long request(SplittableRandom r, int slots) {
    long id = ids.get(r.nextInt(slots));
    Session s = maps[(int) (id % SHARDS)].get(id);
    long acc = 0;
    String user = "anonymous";
    if (s != null) {
      user = s.user();
      for (long h : s.history()) acc += h;
      for (Item it : s.cart().values()) acc += it.qty() * it.priceCents() + it.attrs()[r.nextInt(4)];
      acc += s.tags().size() + s.region().length();
    }
    StringBuilder sb = new StringBuilder(96);
    sb.append("GET /api/v1/sessions/").append(id).append("?user=").append(user).append("&t=").append(acc);
    String request = sb.toString();
    ArrayList<Item> lines = new ArrayList<>(8);
    for (int i = 0; i < 8; i++) {
      lines.add(new Item("line-" + i, i, acc + i, new int[] {i, (int) acc, request.length(), 0}));
    }
    HashMap<String, Object> response = new HashMap<>();
    response.put("request", request);
    response.put("lines", lines);
    response.put("total", acc);
    response.put("status", s != null ? "ok" : "gone");
    int[] scratch = new int[32 + r.nextInt(96)];
    for (int i = 0; i < scratch.length; i++) scratch[i] = (int) (acc >>> (i & 31)) * 31 + i;
    long h = request.hashCode();
    for (int v : scratch) h = h * 131 + v;
    for (Item it : lines) h += it.sku().hashCode() + it.attrs()[1];
    return h + response.size();
  }
}
