// The root-path bug of issue 14: a GC root that is an accumulation point was printed "(no GC root
// reaches it)" because only the first three accumulation points got a path. Synthetic HPROF dumps
// (tests/collectors/dumps/hprof_test_writer.h) with, for every GC-root kind HPROF has, four holders
// that are GC roots of that kind and hold a quarter each of a class's instances: the suspect
// analysis finds the four holders as accumulation points, and each one's path from a GC root is
// the holder alone, with its root kind, in the pipeline, the report model and the rendered text.
// Android's 0x90 UNREACHABLE record marks an object the VM found unreachable, not a root that
// keeps anything alive, so it is not among the cases. Also: "kept alive by" names the excluded
// java.lang.Thread that holds a value, not "<ROOT>".
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ctl/report_render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"
#include "tests/collectors/dumps/hprof_test_writer.h"

namespace heapwatch::pipeline {
namespace {

namespace fs = std::filesystem;
using hprof::testing::HprofWriter;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint8_t kObj = 2;  // HPROF basic type "object"

struct RootKindCase {
  uint8_t tag;
  const char* name;  // GcRootKindName
  bool android;      // the kind exists in Android dumps (JAVA PROFILE 1.0.3) only
};

const RootKindCase kKinds[] = {
    {0xFF, "UNKNOWN", false},          {0x01, "JNI_GLOBAL", false},
    {0x02, "JNI_LOCAL", false},        {0x03, "JAVA_FRAME", false},
    {0x04, "NATIVE_STACK", false},     {0x05, "STICKY_CLASS", false},
    {0x06, "THREAD_BLOCK", false},     {0x07, "MONITOR_USED", false},
    {0x08, "THREAD_OBJECT", false},    {0x89, "INTERNED_STRING", true},
    {0x8A, "FINALIZING", true},        {0x8B, "DEBUGGER", true},
    {0x8C, "REFERENCE_CLEANUP", true}, {0x8D, "VM_INTERNAL", true},
    {0x8E, "JNI_MONITOR", true},
};

class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    std::string pattern = (fs::temp_directory_path() / "hw-rootkinds-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    ::close(fd);
    path_ = pattern;
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Classes: java.lang.Object 0x100, Holder 0x110 (field items), Leak 0x120 (no fields),
// java.lang.Object[] 0x130. For a STICKY_CLASS root the holders are four classes 0x140.. with a
// static field items instead. Holders 0x1000 + 0x100 h hold Object[] 0x5000 + 0x100 h of 10 Leak
// each.
std::string RootKindDump(const RootKindCase& kind, std::vector<uint64_t>* holders) {
  HprofWriter w(8, kind.android ? "JAVA PROFILE 1.0.3" : "JAVA PROFILE 1.0.2");
  w.NamedClass(0x100, "java/lang/Object");
  w.NamedClass(0x110, "Holder");
  w.NamedClass(0x120, "Leak");
  w.NamedClass(0x130, "[Ljava/lang/Object;");
  w.String(0x900, "items");
  const bool sticky = kind.tag == 0x05;
  for (int h = 0; h < 4; ++h) w.NamedClass(0x140 + 0x10 * h, "StaticHolder" + std::to_string(h));
  w.Sub(w.ClassDump(0x100, 0, 0, 0, {}));
  w.Sub(w.ClassDump(0x110, 0x100, 0, 8, {{0x900, kObj}}));
  w.Sub(w.ClassDump(0x120, 0x100, 0, 48, {}));
  w.Sub(w.ClassDump(0x130, 0x100, 0, 0, {}));
  holders->clear();
  for (int h = 0; h < 4; ++h) {
    const uint64_t array = 0x5000 + 0x100 * h;
    if (sticky) {
      const uint64_t cls = 0x140 + 0x10 * h;
      w.Sub(w.ClassDump(cls, 0x100, 0, 0, {}, {{0x900, kObj, array}}));
      holders->push_back(cls);
    } else {
      const uint64_t holder = 0x1000 + 0x100 * h;
      w.Sub(w.Instance(holder, 0x110, w.Ids({array})));
      holders->push_back(holder);
    }
    std::vector<uint64_t> leaks;
    for (int i = 0; i < 10; ++i) {
      leaks.push_back(array + 0x10 + 0x8 * i);
      w.Sub(w.Instance(leaks.back(), 0x120, ""));
    }
    w.Sub(w.ObjectArray(array, 0x130, leaks));
    w.Sub(w.Root(kind.tag, holders->back(), /*thread=*/1, /*frame=*/0));
  }
  // The classes themselves are sticky roots (as in a HotSpot dump) but for the STICKY_CLASS case's
  // holders, which are the roots under test.
  for (uint64_t c : {0x100, 0x110, 0x120, 0x130}) w.Sub(w.Root(0x05, c));
  w.FlushHeapDump();
  return w.take();
}

TEST(GcRootKinds, EveryRootThatIsAnAccumulationPointHasItselfAsPath) {
  for (const RootKindCase& kind : kKinds) {
    SCOPED_TRACE(kind.name);
    std::vector<uint64_t> holders;
    TempFile dump(RootKindDump(kind, &holders));
    AnalyzeDumpOptions options;
    options.suspect_classes = {"Leak"};
    options.dynamic_sizes = false;
    auto analysis = AnalyzeDump(dump.path(), options);
    ASSERT_TRUE(analysis.ok()) << analysis.status();
    ASSERT_EQ(analysis->suspects.size(), 1u);
    const analysis::SuspectReport& suspect = analysis->suspects[0];
    EXPECT_EQ(suspect.instances, 40u);
    ASSERT_EQ(suspect.accumulation_points.size(), 4u);
    std::vector<uint64_t> seen;
    for (const analysis::AccumulationPointReport& point : suspect.accumulation_points) {
      SCOPED_TRACE(point.object.object_id);
      seen.push_back(point.object.object_id);
      ASSERT_TRUE(point.path.found);
      ASSERT_EQ(point.path.steps.size(), 1u);
      EXPECT_EQ(point.path.steps[0].object.object_id, point.object.object_id);
      EXPECT_EQ(point.path.steps[0].object.gc_root_kind, kind.name);
    }
    EXPECT_THAT(seen, ::testing::UnorderedElementsAreArray(holders));

    const v1::DumpReport report = proto::ToDumpReport(analysis->report, analysis->suspects);
    const std::string text = ctl::RenderDumpReport(report);
    EXPECT_THAT(text, Not(HasSubstr("no GC root reaches it")));
    EXPECT_THAT(text, HasSubstr(absl::StrCat("GC root (", kind.name, ")")));
  }
}

// java.lang.Thread (THREAD_OBJECT root) -> threadLocals -> java.lang.ThreadLocal$ThreadLocalMap
// -> table -> Object[] -> java.util.ArrayList -> elementData -> Object[] -> com.acme.Item x 20.
// Every dominator of the items above the lists is java.*: the climb of "kept alive by" passes all
// of them and reached <ROOT>; now it names the thread.
TEST(GcRootKinds, KeptAliveByNamesTheExcludedThreadNotRoot) {
  HprofWriter w(8);
  w.NamedClass(0x100, "java/lang/Object");
  w.NamedClass(0x110, "java/lang/Thread");
  w.NamedClass(0x120, "java/lang/ThreadLocal$ThreadLocalMap");
  w.NamedClass(0x130, "[Ljava/lang/Object;");
  w.NamedClass(0x140, "java/util/ArrayList");
  w.NamedClass(0x150, "com/acme/Item");
  w.String(0x900, "threadLocals").String(0x901, "table").String(0x902, "elementData");
  w.Sub(w.ClassDump(0x100, 0, 0, 0, {}));
  w.Sub(w.ClassDump(0x110, 0x100, 0, 8, {{0x900, kObj}}));
  w.Sub(w.ClassDump(0x120, 0x100, 0, 8, {{0x901, kObj}}));
  w.Sub(w.ClassDump(0x130, 0x100, 0, 0, {}));
  w.Sub(w.ClassDump(0x140, 0x100, 0, 8, {{0x902, kObj}}));
  w.Sub(w.ClassDump(0x150, 0x100, 0, 64, {}));
  std::vector<uint64_t> threads;
  for (int t = 0; t < 2; ++t) {
    const uint64_t base = 0x10000 * (t + 1);
    std::vector<uint64_t> items;
    for (int i = 0; i < 10; ++i) {
      items.push_back(base + 0x1000 + 0x10 * i);
      w.Sub(w.Instance(items.back(), 0x150, ""));
    }
    w.Sub(w.ObjectArray(base + 0x500, 0x130, items));
    w.Sub(w.Instance(base + 0x400, 0x140, w.Ids({base + 0x500})));
    w.Sub(w.ObjectArray(base + 0x300, 0x130, {base + 0x400}));
    w.Sub(w.Instance(base + 0x200, 0x120, w.Ids({base + 0x300})));
    w.Sub(w.Instance(base + 0x100, 0x110, w.Ids({base + 0x200})));
    w.Sub(w.Root(0x08, base + 0x100, t + 1, 0));
    threads.push_back(base + 0x100);
  }
  for (uint64_t c : {0x100, 0x110, 0x120, 0x130, 0x140, 0x150}) w.Sub(w.Root(0x05, c));
  w.FlushHeapDump();
  TempFile dump(w.take());
  AnalyzeDumpOptions options;
  options.suspect_classes = {"com.acme.Item"};
  options.dynamic_sizes = false;
  auto analysis = AnalyzeDump(dump.path(), options);
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  ASSERT_EQ(analysis->suspects.size(), 1u);
  const analysis::SuspectReport& suspect = analysis->suspects[0];
  ASSERT_EQ(suspect.kept_alive_by.size(), 1u);
  EXPECT_EQ(suspect.kept_alive_by[0].class_name, "java.lang.Thread");
  EXPECT_EQ(suspect.kept_alive_by[0].dominators, 2u);
  EXPECT_EQ(suspect.kept_alive_by[0].dominated, 20u);
  EXPECT_THAT(threads, ::testing::Contains(suspect.kept_alive_by[0].biggest_dominator.object_id));
}

}  // namespace
}  // namespace heapwatch::pipeline
