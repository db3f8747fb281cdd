// A synthetic but realistic stream of class histograms of one JVM, for the storage benchmarks.
//
// Classes: about 120 JDK classes (module java.base@17.0.15: String, HashMap$Node, byte[], Object[]
// ...), then application and library classes with generated java-like names
// ("com.acme.billing.internal.InvoiceLineItemService$Builder",
// "io.netty.buffer.PooledSlicedByteBuf", "org.example.orders.OrderDto[]"), and lambda classes
// ("...$$Lambda$1234/0x0000000800c4b440"). Instances: log-normal (median about 12, heavy tail to
// millions). Bytes: instances times a fixed instance size (16..72, multiples of 8) for objects; a
// drifting average length for arrays. Drift per snapshot: `changed_fraction` of the classes move by
// a few percent (normal, sd 3%); five leaking classes grow by 0.5% per snapshot; two lambda classes
// appear and two vanish.
#ifndef HEAPWATCH_BENCH_STORAGE_WORKLOAD_H_
#define HEAPWATCH_BENCH_STORAGE_WORKLOAD_H_

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/histogram.h"

namespace heapwatch::storage::bench {

class Workload {
 public:
  Workload(uint64_t seed, int classes, double changed_fraction)
      : rng_(seed), changed_(changed_fraction), time_(absl::FromUnixSeconds(1'700'000'000)) {
    static const char* kJdk[] = {"java.lang.String",
                                 "byte[]",
                                 "char[]",
                                 "int[]",
                                 "long[]",
                                 "short[]",
                                 "boolean[]",
                                 "double[]",
                                 "java.lang.Object[]",
                                 "java.lang.String[]",
                                 "java.lang.Class",
                                 "java.lang.Integer",
                                 "java.lang.Long",
                                 "java.lang.Object",
                                 "java.lang.ref.WeakReference",
                                 "java.lang.ref.SoftReference",
                                 "java.lang.ref.Finalizer",
                                 "java.lang.reflect.Method",
                                 "java.lang.reflect.Field",
                                 "java.lang.reflect.Constructor",
                                 "java.lang.invoke.MemberName",
                                 "java.lang.invoke.MethodType",
                                 "java.lang.invoke.LambdaForm$Name",
                                 "java.lang.invoke.DirectMethodHandle",
                                 "java.lang.ThreadLocal$ThreadLocalMap$Entry",
                                 "java.lang.Thread",
                                 "java.lang.StackTraceElement",
                                 "java.util.HashMap$Node",
                                 "java.util.HashMap$Node[]",
                                 "java.util.HashMap",
                                 "java.util.ArrayList",
                                 "java.util.LinkedHashMap$Entry",
                                 "java.util.LinkedHashMap",
                                 "java.util.TreeMap$Entry",
                                 "java.util.concurrent.ConcurrentHashMap$Node",
                                 "java.util.concurrent.ConcurrentHashMap$Node[]",
                                 "java.util.concurrent.ConcurrentHashMap",
                                 "java.util.concurrent.locks.ReentrantLock$NonfairSync",
                                 "java.util.concurrent.CopyOnWriteArrayList",
                                 "java.util.LinkedList$Node",
                                 "java.util.HashSet",
                                 "java.util.Hashtable$Entry",
                                 "java.util.Collections$UnmodifiableRandomAccessList",
                                 "java.util.Optional",
                                 "java.math.BigDecimal",
                                 "java.math.BigInteger",
                                 "java.time.Instant",
                                 "java.time.LocalDateTime",
                                 "java.nio.HeapByteBuffer",
                                 "java.nio.DirectByteBuffer",
                                 "java.net.URI",
                                 "java.io.File",
                                 "java.security.AccessControlContext",
                                 "jdk.internal.ref.CleanerImpl$PhantomCleanableRef",
                                 "jdk.internal.misc.Unsafe",
                                 "sun.nio.cs.UTF_8$Decoder",
                                 "java.util.regex.Pattern$Node",
                                 "java.util.zip.Inflater",
                                 "java.lang.module.ModuleDescriptor",
                                 "java.lang.ClassValue$Entry"};
    for (const char* name : kJdk) Add(name, "java.base@17.0.15");
    static const char* kRoots[] = {"com.acme",
                                   "org.example",
                                   "io.netty",
                                   "org.springframework",
                                   "com.fasterxml.jackson",
                                   "org.hibernate",
                                   "com.google.common",
                                   "org.apache.kafka",
                                   "io.micrometer",
                                   "net.company"};
    static const char* kWords[] = {
        "billing", "order",     "invoice", "line",    "item",    "customer", "account",
        "payment", "session",   "cache",   "buffer",  "pool",    "request",  "response",
        "handler", "channel",   "event",   "message", "config",  "metrics",  "registry",
        "binding", "bean",      "entity",  "query",   "result",  "token",    "user",
        "profile", "catalog",   "product", "price",   "tax",     "ledger",   "journal",
        "report",  "schedule",  "task",    "worker",  "queue",   "stream",   "record",
        "batch",   "partition", "offset",  "codec",   "decoder", "encoder",  "serializer",
        "mapper",  "node",      "tree",    "index",   "segment"};
    static const char* kSuffix[] = {"",        "Impl",    "Service",  "Factory", "Handler", "Dto",
                                    "Entity",  "Manager", "Support",  "Context", "Holder",  "Key",
                                    "Adapter", "Builder", "Listener", "Wrapper"};
    static const char* kInner[] = {"$Builder", "$1", "$2", "$Node", "$Entry", "$State", "$Segment"};
    auto word = [&] { return std::string(kWords[rng_() % std::size(kWords)]); };
    auto camel = [](std::string w) {
      w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
      return w;
    };
    while (static_cast<int>(classes_.size()) < classes) {
      std::string pkg = kRoots[rng_() % std::size(kRoots)];
      int depth = 1 + static_cast<int>(rng_() % 3);
      for (int d = 0; d < depth; ++d) pkg += "." + word();
      std::string cls;
      int words = 1 + static_cast<int>(rng_() % 3);
      for (int w = 0; w < words; ++w) cls += camel(word());
      cls += kSuffix[rng_() % std::size(kSuffix)];
      std::string name = pkg + "." + cls;
      uint64_t kind = rng_() % 100;
      if (kind < 12) name += kInner[rng_() % std::size(kInner)];
      if (kind >= 12 && kind < 15) name += "[]";
      if (kind >= 15 && kind < 18) name = NextLambda(pkg + "." + cls);
      Add(name, "");
    }
    for (int i = 0; i < 5; ++i) leaks_.push_back(static_cast<size_t>(rng_() % classes_.size()));
  }

  // The next histogram of this JVM, one minute after the previous one, rows in the JVM's order.
  Snapshot Next(const std::string& agent) {
    if (step_ > 0) Drift();
    ++step_;
    Snapshot s;
    s.agent = AgentId(agent);
    s.time = time_;
    time_ += absl::Minutes(1);
    for (const Class& c : classes_) {
      if (c.instances == 0) continue;
      s.histogram.rows.push_back(ClassHistogramRow{c.name, c.module, c.instances, c.bytes});
      s.histogram.total_instances += c.instances;
      s.histogram.total_bytes += c.bytes;
    }
    std::sort(
        s.histogram.rows.begin(), s.histogram.rows.end(),
        [](const ClassHistogramRow& a, const ClassHistogramRow& b) { return a.bytes > b.bytes; });
    return s;
  }

  std::string LeakClassName() const { return classes_[leaks_[0]].name; }

 private:
  struct Class {
    std::string name;
    std::string module;
    uint64_t instances;
    uint64_t size;  // bytes per instance for objects; 0 for arrays
    double avg_array_bytes;
    uint64_t bytes;
  };

  std::string NextLambda(const std::string& owner) {
    return absl::StrFormat("%s$$Lambda$%d/0x%016x", owner, 1000 + lambda_counter_++,
                           0x800c00000ull + (rng_() % 0x400000) * 8);
  }

  void Add(std::string name, std::string module) {
    std::lognormal_distribution<double> count(2.5, 2.2);
    Class c;
    c.name = std::move(name);
    c.module = std::move(module);
    c.instances = std::clamp<uint64_t>(static_cast<uint64_t>(count(rng_)), 1, 50'000'000);
    bool array = c.name.size() > 2 && c.name.compare(c.name.size() - 2, 2, "[]") == 0;
    c.size = array ? 0 : 16 + 8 * std::min<uint64_t>(rng_() % 8, rng_() % 8);
    std::lognormal_distribution<double> len(3.5, 1.5);
    c.avg_array_bytes = 16 + len(rng_);
    c.bytes = Bytes(c);
    if (c.name.find("$$Lambda$") != std::string::npos) lambdas_.push_back(classes_.size());
    classes_.push_back(std::move(c));
  }

  static uint64_t Bytes(const Class& c) {
    if (c.size != 0) return c.instances * c.size;
    return (static_cast<uint64_t>(c.instances * c.avg_array_bytes) + 7) / 8 * 8;
  }

  void Drift() {
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> change(0, 0.03);
    for (Class& c : classes_) {
      if (c.instances == 0 || u(rng_) >= changed_) continue;
      double f = 1 + change(rng_);
      int64_t delta = static_cast<int64_t>(std::llround(c.instances * (f - 1)));
      if (delta == 0) delta = (rng_() % 2) ? 1 : -1;
      c.instances =
          static_cast<uint64_t>(std::max<int64_t>(1, static_cast<int64_t>(c.instances) + delta));
      if (c.size == 0) c.avg_array_bytes *= 1 + change(rng_) / 3;
      c.bytes = Bytes(c);
    }
    for (size_t i : leaks_) {
      Class& c = classes_[i];
      c.instances += std::max<uint64_t>(1, c.instances / 200);
      c.bytes = Bytes(c);
    }
    // The two oldest lambda classes vanish (their counts drop to zero) and two new ones appear.
    for (int k = 0; k < 2; ++k) {
      if (next_vanishing_lambda_ < lambdas_.size()) {
        Class& gone = classes_[lambdas_[next_vanishing_lambda_++]];
        gone.instances = 0;
        gone.bytes = 0;
      }
      Add(NextLambda("com.acme.generated.Handler"), "");
    }
  }

  std::mt19937_64 rng_;
  double changed_;
  absl::Time time_;
  int step_ = 0;
  int lambda_counter_ = 0;
  std::vector<Class> classes_;
  std::vector<size_t> leaks_;
  std::vector<size_t> lambdas_;  // indices into classes_, oldest first
  size_t next_vanishing_lambda_ = 0;
};

}  // namespace heapwatch::storage::bench

#endif  // HEAPWATCH_BENCH_STORAGE_WORKLOAD_H_
