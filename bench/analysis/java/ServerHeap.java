// Builds a live heap shaped like the dynaTrace server heaps of the thesis's Table A.1/A.2 (seeds/001 §5.3:
// 1,780,673 nodes, 4,060,032 references; one giant strongly connected component of about a quarter of the
// objects, which "can reach almost all other nodes"; many small components and many objects that own their
// parts alone), for heapwatch's dynamic-size benchmark (bench/analysis/dynamic_run.sh). When the heap is
// built the program prints "READY <pid>" and waits until stdin is closed, so that the driver can dump it with
// `jcmd <pid> GC.heap_dump`.
//
// Usage: java -Xmx2g ServerHeap [SCALE]      SCALE 1.0 (default) gives about 1.8 M objects and 4 M references.
//
// Shape (a monitoring server holding what its agents sent):
//   - a Server with a registry tree (Node: parent pointer, children list, name, shared MethodInfo, owning
//     Agent), the Agents (each pointing back to the Server), and the PurePaths the agents sent: per path a
//     doubly linked list of Events (prev, next, back pointer to the path) with argument arrays. Back pointers
//     make the server, tree, agents, paths and events one giant strongly connected component;
//   - a measurement cache (HashMap<String, Measurement>): each Measurement owns its key, a double[] series
//     and a tag array whose entries come from a shared pool of tag strings;
//   - shared pools (MethodInfo objects, tag strings) referenced from everywhere (no single owner).
// Deterministic for a given SCALE (fixed random seed).
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Random;

public final class ServerHeap {
  static final class MethodInfo {
    final String className;
    final String methodName;
    final int line;

    MethodInfo(String className, String methodName, int line) {
      this.className = className;
      this.methodName = methodName;
      this.line = line;
    }
  }

  static final class Agent {
    final Server server; // back pointer: part of the giant component
    final String name;
    final List<PurePath> paths = new ArrayList<>();

    Agent(Server server, String name) {
      this.server = server;
      this.name = name;
    }
  }

  static final class Node {
    final Node parent;
    ArrayList<Node> children;
    final String name;
    final MethodInfo method;
    final Agent agent;
    long count;

    Node(Node parent, String name, MethodInfo method, Agent agent) {
      this.parent = parent;
      this.name = name;
      this.method = method;
      this.agent = agent;
    }
  }

  static final class PurePath {
    final Agent agent;
    final long id;
    Event first;
    Event last;

    PurePath(Agent agent, long id) {
      this.agent = agent;
      this.id = id;
    }
  }

  static final class Event {
    final PurePath path;
    final MethodInfo method;
    final Object[] args;
    Event prev;
    Event next;

    Event(PurePath path, MethodInfo method, Object[] args) {
      this.path = path;
      this.method = method;
      this.args = args;
    }
  }

  static final class Measurement {
    final String key;
    final double[] series;
    final Object[] tags;
    final MethodInfo method;

    Measurement(String key, double[] series, Object[] tags, MethodInfo method) {
      this.key = key;
      this.series = series;
      this.tags = tags;
      this.method = method;
    }
  }

  static final class Server {
    Node registry;
    final List<Agent> agents = new ArrayList<>();
    final HashMap<String, Measurement> measurements = new HashMap<>();
  }

  static Server server;

  public static void main(String[] args) throws IOException, InterruptedException {
    double scale = args.length > 0 ? Double.parseDouble(args[0]) : 1.0;
    Random random = new Random(2009);
    server = new Server();

    MethodInfo[] methods = new MethodInfo[(int) (4000 * scale)];
    for (int i = 0; i < methods.length; i++) {
      methods[i] = new MethodInfo("com.example.Class" + (i / 20), "method" + i, random.nextInt(2000));
    }
    String[] tagPool = new String[2000];
    for (int i = 0; i < tagPool.length; i++) tagPool[i] = "tag-" + i;

    int agentCount = Math.max(1, (int) (300 * scale));
    for (int i = 0; i < agentCount; i++) server.agents.add(new Agent(server, "agent-" + i));

    // Registry tree, about 4 children per inner node.
    int nodeCount = (int) (150_000 * scale);
    List<Node> all = new ArrayList<>(nodeCount);
    server.registry = new Node(null, "root", methods[0], server.agents.get(0));
    all.add(server.registry);
    for (int i = 1; i < nodeCount; i++) {
      Node parent = all.get((i - 1) / 4);
      Node child = new Node(parent, "node-" + i, methods[random.nextInt(methods.length)],
          server.agents.get(random.nextInt(agentCount)));
      if (parent.children == null) parent.children = new ArrayList<>(4);
      parent.children.add(child);
      all.add(child);
    }

    // PurePaths: doubly linked events with arguments.
    int pathCount = (int) (11_500 * scale);
    for (int p = 0; p < pathCount; p++) {
      Agent agent = server.agents.get(random.nextInt(agentCount));
      PurePath path = new PurePath(agent, p);
      int events = 3 + random.nextInt(8);
      for (int e = 0; e < events; e++) {
        Object[] argv = new Object[1 + random.nextInt(3)];
        for (int a = 0; a < argv.length; a++) {
          argv[a] = random.nextBoolean() ? (Object) Long.valueOf(random.nextLong())
              : "arg-" + random.nextInt(1_000_000);
        }
        Event event = new Event(path, methods[random.nextInt(methods.length)], argv);
        if (path.last == null) {
          path.first = event;
        } else {
          path.last.next = event;
          event.prev = path.last;
        }
        path.last = event;
      }
      agent.paths.add(path);
    }

    // Measurement cache.
    int measurementCount = (int) (130_000 * scale);
    for (int m = 0; m < measurementCount; m++) {
      String key = "measure-" + m;
      double[] series = new double[4 + random.nextInt(12)];
      for (int s = 0; s < series.length; s++) series[s] = random.nextDouble();
      Object[] tags = new Object[8 + random.nextInt(5)];
      for (int t = 0; t < tags.length; t++) tags[t] = tagPool[random.nextInt(tagPool.length)];
      server.measurements.put(key, new Measurement(key, series, tags, methods[random.nextInt(methods.length)]));
    }

    System.gc();
    System.out.println("READY " + ProcessHandle.current().pid());
    System.out.flush();
    while (System.in.read() != -1) {
      Thread.sleep(10);
    }
  }
}
