// The known-leak pattern recognisers (analysis/leak_patterns/leak_patterns.h) on small synthetic
// heaps built with HeapGraphBuilder: each pattern is found on its leak, named with the culprits and
// the path through the right fields, and not claimed on the clean variant of the same heap.
#include "analysis/leak_patterns/leak_patterns.h"

#include <string>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/retained_size.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/leak_heap.h"

namespace heapwatch::analysis {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Instance;

ClassInfo ArrayClass(std::string name, ObjectKind kind, FieldType element = FieldType::kObject) {
  ClassInfo c;
  c.name = std::move(name);
  c.instance_kind = kind;
  c.element_type = element;
  return c;
}

ClassInfo Sub(ClassInfo c, ClassId super) {
  c.super_class = super;
  return c;
}

ClassInfo WithStatic(ClassInfo c, std::string field) {
  c.static_fields.push_back(FieldInfo{std::move(field), FieldType::kObject});
  return c;
}

std::vector<LeakPatternMatch> Recognize(const HeapGraph& graph,
                                        const LeakPatternOptions& options = {}) {
  auto tree = ComputeDominatorTree(graph.graph(), graph.root_objects());
  EXPECT_TRUE(tree.ok()) << tree.status();
  RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return graph.shallow_size(v); });
  auto matches = RecognizeLeakPatterns(graph, *tree, retained, options);
  EXPECT_TRUE(matches.ok()) << matches.status();
  return matches.ok() ? *matches : std::vector<LeakPatternMatch>{};
}

std::vector<LeakPatternMatch> RecognizeWithNames(const HeapGraph& graph, const ThreadNames& names,
                                                 const LeakPatternOptions& options = {}) {
  auto tree = ComputeDominatorTree(graph.graph(), graph.root_objects());
  EXPECT_TRUE(tree.ok()) << tree.status();
  RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return graph.shallow_size(v); });
  auto matches = RecognizeLeakPatterns(graph, *tree, retained, options, &names);
  EXPECT_TRUE(matches.ok()) << matches.status();
  return matches.ok() ? *matches : std::vector<LeakPatternMatch>{};
}

std::vector<std::string> Ids(const std::vector<LeakPatternMatch>& matches) {
  std::vector<std::string> ids;
  for (const LeakPatternMatch& m : matches) ids.push_back(m.pattern_id);
  return ids;
}

std::vector<std::string> References(const GcRootPathReport& path) {
  std::vector<std::string> refs;
  for (size_t i = 1; i < path.steps.size(); ++i) refs.push_back(path.steps[i].reference);
  return refs;
}

// Four pool threads (THREAD_OBJECT roots, target = ThreadPoolExecutor$Worker) whose ThreadLocalMap
// holds, under the ThreadLocal in static com.acme.Ctx.BUFFERS, an ArrayList of `buffers` byte[1024]
// each (none when `leak` is false: the tasks called remove()).
StatusOr<HeapGraph> ThreadLocalHeap(bool leak, int buffers) {
  HeapGraphBuilder b{DumpInfo{}};
  ClassId object = b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  ClassId thread = b.AddClass(
      Sub(Instance("java.lang.Thread", {"threadLocals", "inheritableThreadLocals", "target"}, 40),
          object),
      0x20);
  ClassId map = b.AddClass(
      Sub(Instance("java.lang.ThreadLocal$ThreadLocalMap", {"table"}, 24), object), 0x30);
  ClassId entries = b.AddClass(
      ArrayClass("java.lang.ThreadLocal$ThreadLocalMap$Entry[]", ObjectKind::kObjectArray), 0x40);
  ClassInfo reference = Sub(Instance("java.lang.ref.Reference", {"referent"}, 32), object);
  reference.is_reference = true;
  ClassId ref = b.AddClass(reference, 0x50);
  ClassInfo weak = Sub(Instance("java.lang.ref.WeakReference", {}, 32), ref);
  weak.is_reference = true;
  ClassId weak_ref = b.AddClass(weak, 0x60);
  ClassInfo entry_info =
      Sub(Instance("java.lang.ThreadLocal$ThreadLocalMap$Entry", {"value"}, 40), weak_ref);
  entry_info.is_reference = true;
  ClassId entry = b.AddClass(entry_info, 0x70);
  ClassId tl_object =
      b.AddClass(Sub(Instance("java.lang.ThreadLocal$SuppliedThreadLocal", {}, 16), object), 0x80);
  ClassId ctx =
      b.AddClass(WithStatic(Sub(Instance("com.acme.Ctx", {}, 16), object), "BUFFERS"), 0x90);
  ClassId list =
      b.AddClass(Sub(Instance("java.util.ArrayList", {"elementData"}, 24), object), 0xA0);
  ClassId objects = b.AddClass(ArrayClass("java.lang.Object[]", ObjectKind::kObjectArray), 0xB0);
  ClassId bytes =
      b.AddClass(ArrayClass("byte[]", ObjectKind::kPrimitiveArray, FieldType::kByte), 0xC0);
  ClassId worker = b.AddClass(
      Sub(Instance("java.util.concurrent.ThreadPoolExecutor$Worker", {}, 32), object), 0xD0);
  b.SetStaticReferences(ctx, {0x900});
  b.AddInstance(0x900, tl_object, {});
  for (uint64_t c = 0x10; c <= 0xD0; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  for (uint64_t t = 0; t < 4; ++t) {
    const uint64_t base = 0x10000 * (t + 1);
    b.AddInstance(base, thread, {base + 0x10, 0, base + 0x90});
    b.AddInstance(base + 0x90, worker, {});
    b.AddInstance(base + 0x10, map, {base + 0x20});
    b.AddObjectArray(base + 0x20, entries, {leak ? base + 0x30 : 0, 0});
    b.AddRoot(base, GcRootKind::kThreadObject, static_cast<uint32_t>(t + 1));
    if (!leak) continue;
    b.AddInstance(base + 0x30, entry, {base + 0x40, 0x900});
    b.AddInstance(base + 0x40, list, {base + 0x50});
    std::vector<uint64_t> elements;
    for (int i = 0; i < buffers; ++i) {
      elements.push_back(base + 0x1000 + 0x10 * i);
      b.AddPrimitiveArray(elements.back(), bytes, 1024);
    }
    b.AddObjectArray(base + 0x50, objects, elements);
  }
  return std::move(b).Build();
}

TEST(LeakPatterns, RegistryDescribesEveryPattern) {
  std::vector<std::string> ids;
  for (const LeakPatternInfo& info : LeakPatterns()) {
    ids.emplace_back(info.id);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GT(info.recognition.size(), 40u) << info.id;
    EXPECT_THAT(std::string(info.explanation), HasSubstr("Usual fix")) << info.id;
  }
  EXPECT_THAT(ids,
              ElementsAre("thread-local-value", "listeners-never-removed", "class-loader-pinned",
                          "static-collection", "finalizer-backlog", "cleaner-backlog"));
}

TEST(LeakPatterns, ThreadLocalValuesInPoolThreads) {
  auto graph = ThreadLocalHeap(/*leak=*/true, /*buffers=*/100);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<LeakPatternMatch> matches = Recognize(*graph);
  ASSERT_THAT(Ids(matches), ElementsAre("thread-local-value"));
  const LeakPatternMatch& m = matches[0];
  EXPECT_EQ(m.objects, 4u);
  EXPECT_GT(m.retained_bytes, 4u * 100 * 1024);
  EXPECT_THAT(m.summary, HasSubstr("ThreadLocal static com.acme.Ctx.BUFFERS holds 4 values"));
  EXPECT_THAT(m.summary, HasSubstr("in 4 live threads (4 of them thread-pool workers)"));
  EXPECT_THAT(m.culprits, Contains(HasSubstr("declared by static com.acme.Ctx.BUFFERS")));
  EXPECT_THAT(m.culprits, Contains(HasSubstr("(THREAD_OBJECT root, pool worker "
                                             "java.util.concurrent.ThreadPoolExecutor$Worker)")));
  ASSERT_TRUE(m.path.found);
  EXPECT_EQ(m.path.steps.front().object.class_name, "java.lang.Thread");
  EXPECT_EQ(m.path.steps.front().object.gc_root_kind, "THREAD_OBJECT");
  EXPECT_THAT(References(m.path), ElementsAre("threadLocals", "table", "[0]", "value"));
  EXPECT_EQ(m.path.steps.back().object.class_name, "java.util.ArrayList");
  EXPECT_EQ(m.anchors.size(), 4u);
}

TEST(LeakPatterns, ThreadLocalRemovedOrSmallIsNotClaimed) {
  auto clean = ThreadLocalHeap(/*leak=*/false, 100);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_THAT(Ids(Recognize(*clean)), ElementsAre());
  auto small = ThreadLocalHeap(/*leak=*/true, 10);  // 40 KiB together, below the threshold
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(Ids(Recognize(*small)), ElementsAre());
}

// com.acme.EventBus (static BUS) -> listeners -> CopyOnWriteArrayList -> array -> Object[] of
// `count` lambdas com.acme.ViewModel$$Lambda$14/0x0000000800c01234, each capturing (arg$1) a
// com.acme.ViewModel with a long[64].
StatusOr<HeapGraph> ListenerHeap(int count) {
  HeapGraphBuilder b{DumpInfo{}};
  ClassId object = b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  ClassId bus = b.AddClass(
      WithStatic(Sub(Instance("com.acme.EventBus", {"listeners"}, 16), object), "BUS"), 0x20);
  ClassId cow = b.AddClass(
      Sub(Instance("java.util.concurrent.CopyOnWriteArrayList", {"array"}, 24), object), 0x30);
  ClassId objects = b.AddClass(ArrayClass("java.lang.Object[]", ObjectKind::kObjectArray), 0x40);
  ClassId lambda = b.AddClass(
      Sub(Instance("com.acme.ViewModel$$Lambda$14/0x0000000800c01234", {"arg$1"}, 16), object),
      0x50);
  ClassId view = b.AddClass(Sub(Instance("com.acme.ViewModel", {"state"}, 16), object), 0x60);
  ClassId longs =
      b.AddClass(ArrayClass("long[]", ObjectKind::kPrimitiveArray, FieldType::kLong), 0x70);
  for (uint64_t c = 0x10; c <= 0x70; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  b.SetStaticReferences(bus, {0x100});
  b.AddInstance(0x100, bus, {0x200});
  b.AddInstance(0x200, cow, {0x300});
  std::vector<uint64_t> elements;
  for (int i = 0; i < count; ++i) {
    const uint64_t l = 0x10000 + 0x100 * i;
    elements.push_back(l);
    b.AddInstance(l, lambda, {l + 0x10});
    b.AddInstance(l + 0x10, view, {l + 0x20});
    b.AddPrimitiveArray(l + 0x20, longs, 64);
  }
  b.AddObjectArray(0x300, objects, elements);
  return std::move(b).Build();
}

TEST(LeakPatterns, ListenersNeverRemoved) {
  auto graph = ListenerHeap(150);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<LeakPatternMatch> matches = Recognize(*graph);
  ASSERT_THAT(Ids(matches), ElementsAre("listeners-never-removed"));
  const LeakPatternMatch& m = matches[0];
  EXPECT_EQ(m.objects, 150u);
  EXPECT_THAT(m.summary,
              HasSubstr("150 listeners of class com.acme.ViewModel$$Lambda$14/0x0000000800c01234 "
                        "accumulate in java.util.concurrent.CopyOnWriteArrayList@0x200"));
  EXPECT_THAT(m.summary,
              HasSubstr("listeners registered by com.acme.ViewModel (lambda, capturing a "
                        "com.acme.ViewModel) are never removed"));
  EXPECT_THAT(m.culprits, Contains("each listener captures a com.acme.ViewModel (field arg$1) (150 "
                                   "listeners)"));
  ASSERT_TRUE(m.path.found);
  EXPECT_THAT(References(m.path), ElementsAre("static BUS", "listeners", "array"));
}

TEST(LeakPatterns, FewListenersAreNotClaimed) {
  auto graph = ListenerHeap(20);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Ids(Recognize(*graph)), ElementsAre());
}

// Two URLClassLoaders, each defining com.acme.App with an instance. Loader 0x500 is also held by
// the static field com.acme.Server.CURRENT (a live application); loader 0x600's only holder is a
// running thread (THREAD_OBJECT root) whose target is its App instance. With `stopped_thread`, the
// thread is gone: loader 0x600 is unreachable.
StatusOr<HeapGraph> LoaderHeap(bool stopped_thread) {
  HeapGraphBuilder b{DumpInfo{}};
  ClassId object = b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  ClassId loader = b.AddClass(Sub(Instance("java.lang.ClassLoader", {"parent"}, 40), object), 0x20);
  ClassId url_loader =
      b.AddClass(Sub(Instance("java.net.URLClassLoader", {"ucp"}, 48), loader), 0x30);
  ClassId thread = b.AddClass(Sub(Instance("java.lang.Thread", {"target"}, 40), object), 0x40);
  ClassId server =
      b.AddClass(WithStatic(Sub(Instance("com.acme.Server", {}, 16), object), "CURRENT"), 0x50);
  for (uint64_t c = 0x10; c <= 0x50; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  ClassInfo app = Sub(Instance("com.acme.App", {"data"}, 24), object);
  ClassId app_live = b.AddClass(app, 0x510, 0x500);
  ClassId bytes =
      b.AddClass(ArrayClass("byte[]", ObjectKind::kPrimitiveArray, FieldType::kByte), 0x60);
  b.AddRoot(0x60, GcRootKind::kStickyClass);
  b.AddInstance(0x500, url_loader, {0, 0});
  b.AddInstance(0x520, app_live, {0x530});
  b.AddPrimitiveArray(0x530, bytes, 1000);
  b.SetStaticReferences(server, {0x520});
  ClassId app_old = b.AddClass(app, 0x610, 0x600);
  b.AddInstance(0x600, url_loader, {0, 0});
  b.AddInstance(0x620, app_old, {0x630});
  b.AddPrimitiveArray(0x630, bytes, 1000);
  b.AddInstance(0x700, thread, {0x620});
  if (!stopped_thread) b.AddRoot(0x700, GcRootKind::kThreadObject, 7);
  return std::move(b).Build();
}

TEST(LeakPatterns, ClassLoaderPinnedByAThreadItStarted) {
  auto graph = LoaderHeap(/*stopped_thread=*/false);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<LeakPatternMatch> matches = Recognize(*graph);
  ASSERT_THAT(Ids(matches), ElementsAre("class-loader-pinned"));
  const LeakPatternMatch& m = matches[0];
  EXPECT_THAT(m.summary, HasSubstr("Class loader java.net.URLClassLoader@0x600 (1 class)"));
  EXPECT_THAT(m.summary, HasSubstr("thread java.lang.Thread@0x700 references it through target"));
  ASSERT_TRUE(m.path.found);
  EXPECT_EQ(m.path.steps.front().object.object_id, 0x700u);
  EXPECT_THAT(References(m.path), ElementsAre("target", "<class>", "<classloader>"));
  EXPECT_EQ(m.path.steps.back().object.object_id, 0x600u);
}

TEST(LeakPatterns, LiveOrUnloadedClassLoaderIsNotClaimed) {
  auto graph = LoaderHeap(/*stopped_thread=*/true);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Ids(Recognize(*graph)), ElementsAre());
}

// com.acme.Cache.ENTRIES -> java.util.HashMap -> table -> HashMap$Node[2048] -> `count` nodes, each
// -> value -> byte[4096].
StatusOr<HeapGraph> CacheHeap(int count) {
  HeapGraphBuilder b{DumpInfo{}};
  ClassId object = b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  ClassId cache =
      b.AddClass(WithStatic(Sub(Instance("com.acme.Cache", {}, 16), object), "ENTRIES"), 0x20);
  ClassId map = b.AddClass(Sub(Instance("java.util.HashMap", {"table"}, 48), object), 0x30);
  ClassId nodes =
      b.AddClass(ArrayClass("java.util.HashMap$Node[]", ObjectKind::kObjectArray), 0x40);
  ClassId node = b.AddClass(Sub(Instance("java.util.HashMap$Node", {"value"}, 32), object), 0x50);
  ClassId bytes =
      b.AddClass(ArrayClass("byte[]", ObjectKind::kPrimitiveArray, FieldType::kByte), 0x60);
  for (uint64_t c = 0x10; c <= 0x60; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  b.SetStaticReferences(cache, {0x100});
  b.AddInstance(0x100, map, {0x200});
  std::vector<uint64_t> table(2048, 0);
  for (int i = 0; i < count; ++i) {
    table[i] = 0x10000 + 0x20 * i;
    b.AddInstance(table[i], node, {table[i] + 0x10});
    b.AddPrimitiveArray(table[i] + 0x10, bytes, 4096);
  }
  b.AddObjectArray(0x200, nodes, table);
  return std::move(b).Build();
}

TEST(LeakPatterns, LargeCollectionInAStaticField) {
  auto graph = CacheHeap(1500);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<LeakPatternMatch> matches = Recognize(*graph);
  ASSERT_THAT(Ids(matches), ElementsAre("static-collection"));
  EXPECT_THAT(matches[0].summary,
              HasSubstr("static com.acme.Cache.ENTRIES (a java.util.HashMap) retains"));
  EXPECT_THAT(matches[0].summary, HasSubstr("in 2048 slots"));
  EXPECT_THAT(References(matches[0].path), ElementsAre("static ENTRIES"));
  auto small = CacheHeap(100);  // 0.4 MiB
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(Ids(Recognize(*small)), ElementsAre());
}

TEST(LeakPatterns, MatchesForSuspectRelatesAccumulationPointsAndAnchors) {
  auto graph = ThreadLocalHeap(/*leak=*/true, 100);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto tree = ComputeDominatorTree(graph->graph(), graph->root_objects());
  ASSERT_TRUE(tree.ok());
  RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return graph->shallow_size(v); });
  auto matches = RecognizeLeakPatterns(*graph, *tree, retained);
  ASSERT_TRUE(matches.ok());
  ASSERT_EQ(matches->size(), 1u);
  // A thread (holds the value), a byte[] (held by it): related. The static ThreadLocal: not.
  const ObjectIndex thread[] = {graph->FindObject(0x10000)};
  const ObjectIndex buffer[] = {graph->FindObject(0x11000)};
  const ObjectIndex tl_object[] = {graph->FindObject(0x900)};
  EXPECT_EQ(MatchesForSuspect(*tree, *matches, thread).size(), 1u);
  EXPECT_EQ(MatchesForSuspect(*tree, *matches, buffer).size(), 1u);
  EXPECT_EQ(MatchesForSuspect(*tree, *matches, tl_object).size(), 0u);
}

TEST(LeakPatterns, ThreadLocalNamesTheThreads) {
  auto graph = ThreadLocalHeap(/*leak=*/true, /*buffers=*/100);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ThreadNames names;
  names[graph->FindObject(0x10000).value] = "pool-#-thread-#";
  names[graph->FindObject(0x20000).value] = "pool-#-thread-#";
  names[graph->FindObject(0x30000).value] = "<b>odd</b>";
  const std::vector<LeakPatternMatch> matches = RecognizeWithNames(*graph, names);
  ASSERT_THAT(Ids(matches), ElementsAre("thread-local-value"));
  EXPECT_THAT(matches[0].summary,
              HasSubstr("in 4 live threads named \"pool-#-thread-#\", \"<b>odd</b>\" (4 of them"));
  EXPECT_THAT(
      matches[0].culprits,
      Contains(HasSubstr("thread java.lang.Thread@0x10000 \"pool-#-thread-#\" (THREAD_OBJECT")));
  // A thread without a name is named as before.
  EXPECT_THAT(matches[0].culprits, Contains(HasSubstr("thread java.lang.Thread@0x40000 (THREAD")));
}

// A Cleaner's list of `count` registrations (CleanerImpl$PhantomCleanableRef: action, referent,
// queue), each for a com.acme.Connection; the action is a lambda whose arg$1 is the Connection
// itself (`capture`) or a com.acme.State; with `enqueued`, queue = ReferenceQueue.ENQUEUED.
StatusOr<HeapGraph> CleanerHeap(int count, bool capture, bool enqueued) {
  HeapGraphBuilder b{DumpInfo{}};
  ClassId object = b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  ClassInfo reference = Sub(Instance("java.lang.ref.Reference", {"referent", "queue"}, 32), object);
  reference.is_reference = true;
  ClassId ref = b.AddClass(reference, 0x20);
  ClassInfo phantom = Sub(Instance("java.lang.ref.PhantomReference", {}, 32), ref);
  phantom.is_reference = true;
  ClassId phantom_ref = b.AddClass(phantom, 0x30);
  ClassInfo cleanable =
      Sub(Instance("jdk.internal.ref.PhantomCleanable", {"next"}, 40), phantom_ref);
  cleanable.is_reference = true;
  ClassId cleanable_class = b.AddClass(cleanable, 0x40);
  ClassInfo cleanable_ref =
      Sub(Instance("jdk.internal.ref.CleanerImpl$PhantomCleanableRef", {"action"}, 48),
          cleanable_class);
  cleanable_ref.is_reference = true;
  ClassId ref_class = b.AddClass(cleanable_ref, 0x50);
  ClassId queue = b.AddClass(
      WithStatic(Sub(Instance("java.lang.ref.ReferenceQueue", {}, 32), object), "ENQUEUED"), 0x60);
  ClassId impl = b.AddClass(
      WithStatic(
          Sub(Instance("jdk.internal.ref.CleanerImpl", {"phantomCleanableList"}, 24), object),
          "INSTANCE"),
      0x70);
  ClassId lambda =
      b.AddClass(Sub(Instance("com.acme.Connection$$Lambda", {"arg$1"}, 16), object), 0x80);
  ClassId connection = b.AddClass(Sub(Instance("com.acme.Connection", {}, 1024), object), 0x90);
  ClassId state = b.AddClass(Sub(Instance("com.acme.State", {}, 32), object), 0xA0);
  for (uint64_t c = 0x10; c <= 0xA0; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  b.SetStaticReferences(queue, {0x500});
  b.AddInstance(0x500, queue, {});
  b.AddInstance(0x510, queue, {});  // the Cleaner's own queue
  b.SetStaticReferences(impl, {0x600});
  uint64_t next = 0;
  for (int i = count - 1; i >= 0; --i) {
    const uint64_t r = 0x10000 + 0x100 * i;
    b.AddInstance(r + 0x10, lambda, {capture ? r + 0x20 : r + 0x30});
    b.AddInstance(r + 0x20, connection, {});
    b.AddInstance(r + 0x30, state, {});
    // Own fields first (action), then PhantomCleanable (next), then Reference (referent, queue).
    b.AddInstance(r, ref_class, {r + 0x10, next, r + 0x20, enqueued ? 0x500 : 0x510});
    next = r;
  }
  b.AddInstance(0x600, impl, {next});
  return std::move(b).Build();
}

TEST(LeakPatterns, CleanerActionCapturingItsObject) {
  auto graph = CleanerHeap(150, /*capture=*/true, /*enqueued=*/false);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::vector<LeakPatternMatch> matches = Recognize(*graph);
  ASSERT_THAT(Ids(matches), ElementsAre("cleaner-backlog"));
  const LeakPatternMatch& m = matches[0];
  EXPECT_EQ(m.objects, 150u);
  EXPECT_THAT(m.summary, HasSubstr("150 objects (com.acme.Connection) registered with a "
                                   "java.lang.ref.Cleaner are never cleaned: the cleaning action "
                                   "captures the object it should clean"));
  EXPECT_THAT(m.culprits, Contains("cleaning actions that capture them: 150 "
                                   "com.acme.Connection$$Lambda"));
  ASSERT_TRUE(m.path.found);
  const std::vector<std::string> refs = References(m.path);
  ASSERT_GE(refs.size(), 2u);
  EXPECT_THAT(std::vector<std::string>(refs.end() - 2, refs.end()), ElementsAre("action", "arg$1"));
}

TEST(LeakPatterns, CleanerRegistrationsWaitingForTheCleanerThread) {
  auto graph = CleanerHeap(150, /*capture=*/false, /*enqueued=*/true);
  ASSERT_TRUE(graph.ok()) << graph.status();
  LeakPatternOptions options;
  options.cleaner_min_pending = 100;
  const std::vector<LeakPatternMatch> matches = Recognize(*graph, options);
  ASSERT_THAT(Ids(matches), ElementsAre("cleaner-backlog"));
  EXPECT_THAT(matches[0].summary,
              HasSubstr("150 objects registered with a java.lang.ref.Cleaner wait for its "
                        "cleaner thread"));
  // Below the default threshold: nothing.
  EXPECT_THAT(Ids(Recognize(*graph)), ElementsAre());
}

TEST(LeakPatterns, CleanerUsedRightIsNotClaimed) {
  // Actions that hold only the state, registrations not enqueued: the objects are only phantom
  // reachable (through the referent) and will be cleaned.
  auto graph = CleanerHeap(150, /*capture=*/false, /*enqueued=*/false);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Ids(Recognize(*graph)), ElementsAre());
  auto few = CleanerHeap(50, /*capture=*/true, /*enqueued=*/false);
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_THAT(Ids(Recognize(*few)), ElementsAre());
}

TEST(LeakPatterns, AListenerBusInAStaticFieldIsNamedOnce) {
  // The bus is also a large collection in a static field; the listener pattern, which says more,
  // is the one name of the leak.
  auto graph = ListenerHeap(150);
  ASSERT_TRUE(graph.ok()) << graph.status();
  LeakPatternOptions options;
  options.static_collection_min_bytes = 1;
  options.static_collection_min_elements = 100;
  EXPECT_THAT(Ids(Recognize(*graph, options)), ElementsAre("listeners-never-removed"));
}

}  // namespace
}  // namespace heapwatch::analysis
