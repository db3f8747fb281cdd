// Test program for tests/pipeline/dynamic_size_jvm_test.cc: the situation of the dynaTrace thesis's
// Fig. 2.3 (seed 001, chapter 2) in a real JVM. A server S receives data objects and puts them in
// its buffer B; an analysis algorithm A shallow-copies them from the buffer into its own list L.
// B and L hold the same data objects, so each retains only itself and its array (GC size), while
// each reaches all of them (dynamic size).
//
// Shape (n = args[0], default 100000; every class is HwSharedBuffer$...):
//   local variable server   -> Server S   --buffer--> Buffer B   --slots--> Data[n] -> Data_0..n-1
//   local variable analysis -> Analysis A --list-->   DataList L --items--> Data[n] -> Data_0..n-1
//   Data_i --payload--> Payload_i (eight longs)
// S and A are held by local variables of main (JAVA_FRAME GC roots), not by static fields, so that
// nothing else reaches the data: a static field would make the class object, and through its class
// loader much of the JDK, reach them too. Prints "ready" once built, then keeps both alive.
public final class HwSharedBuffer {
  static final class Payload {
    long a, b, c, d, e, f, g, h;
  }

  static final class Data {
    final long id;
    final Payload payload = new Payload();

    Data(long id) {
      this.id = id;
    }
  }

  static final class Buffer {
    final Data[] slots;
    int size;

    Buffer(int capacity) {
      slots = new Data[capacity];
    }

    void add(Data d) {
      slots[size++] = d;
    }
  }

  static final class DataList {
    final Data[] items;
    int size;

    DataList(int capacity) {
      items = new Data[capacity];
    }

    void add(Data d) {
      items[size++] = d;
    }
  }

  static final class Server {
    final Buffer buffer;

    Server(int capacity) {
      buffer = new Buffer(capacity);
    }

    void receive(long id) {
      buffer.add(new Data(id));
    }
  }

  static final class Analysis {
    final DataList list;

    Analysis(int capacity) {
      list = new DataList(capacity);
    }

    // A shallow copy: the list refers to the buffer's data objects.
    void copyFrom(Buffer buffer) {
      for (int i = 0; i < buffer.size; ++i) list.add(buffer.slots[i]);
    }
  }

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    Server server = new Server(n);
    for (int i = 0; i < n; ++i) server.receive(i);
    Analysis analysis = new Analysis(n);
    analysis.copyFrom(server.buffer);
    System.out.println("ready");
    System.out.flush();
    // Uses both after every sleep so that they stay live (and GC roots) in this frame.
    long checksum = 0;
    for (int round = 0; round < 600; ++round) {
      Thread.sleep(1000);
      checksum += server.buffer.size + analysis.list.size;
    }
    System.out.println(checksum);
  }
}
