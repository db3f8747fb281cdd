// The dynaTrace thesis's Fig. 2.3 (seed 001, chapter 2) in a real JVM: tests/pipeline/java/
// HwSharedBuffer.java builds a server S whose buffer B holds n data objects and an analysis A
// whose list L holds the same n data objects (a shallow copy), keeps S and A in local variables,
// and is dumped with jcmd GC.heap_dump. The pipeline (pipeline/analyze_dump.h) and `heapwatchctl
// analyze --json --by dynamic` must give the exact dynamic sizes that follow from the program's
// construction (object counts from the program, shallow sizes from the dump's own histogram), and
// show what the thesis says: B and L are small by GC (retained) size and, with S, A and their
// arrays, the biggest objects by dynamic size.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ctl/ctl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/analyze_dump.h"
#include "tests/daemon/test_jvm.h"

namespace heapwatch::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kData = 20000;  // n: data objects in B and in L
const std::string kPrefix = "HwSharedBuffer$";

class HwSharedBufferDump : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "hw-fig23-XXXXXX").string();
    dir_ = new std::string(::mkdtemp(pattern.data()));
    daemon::TestJvm java("HwSharedBuffer", std::to_string(kData));
    ASSERT_TRUE(java.ready());
    dump_ = new std::string(*dir_ + "/fig23.hprof");
    const std::string command = std::string(HEAPWATCH_JCMD) + " " + std::to_string(java.pid()) +
                                " GC.heap_dump " + *dump_ + " > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    delete dump_;
  }

  static std::string* dir_;
  static std::string* dump_;
};
std::string* HwSharedBufferDump::dir_ = nullptr;
std::string* HwSharedBufferDump::dump_ = nullptr;

// Shallow size of one instance of the program's class `name`, from the dump's histogram; all
// instances of these classes have the same size (the two Data[] have the same length).
uint64_t ShallowSize(const analysis::Report& report, const std::string& name, uint64_t instances) {
  for (const analysis::ClassRow& row : report.histogram) {
    if (row.class_name != kPrefix + name) continue;
    EXPECT_EQ(row.instances, instances) << name;
    EXPECT_EQ(row.shallow_bytes % instances, 0u) << name;
    return row.shallow_bytes / instances;
  }
  ADD_FAILURE() << "no class " << name << " in the histogram";
  return 0;
}

// The figures the program's construction gives, in bytes from the dump's shallow sizes.
struct Expected {
  uint64_t data, payload, array, buffer, list, server, analysis;
  uint64_t items() const { return kData * (data + payload); }  // the n data objects, payloads too
};

Expected FromHistogram(const analysis::Report& report) {
  Expected e;
  e.data = ShallowSize(report, "Data", kData);
  e.payload = ShallowSize(report, "Payload", kData);
  e.array = ShallowSize(report, "Data[]", 2);
  e.buffer = ShallowSize(report, "Buffer", 1);
  e.list = ShallowSize(report, "DataList", 1);
  e.server = ShallowSize(report, "Server", 1);
  e.analysis = ShallowSize(report, "Analysis", 1);
  return e;
}

const analysis::SuspectReport* Suspect(const DumpAnalysis& a, const std::string& name) {
  for (const analysis::SuspectReport& s : a.suspects) {
    if (s.class_name == kPrefix + name) return &s;
  }
  return nullptr;
}

TEST_F(HwSharedBufferDump, ExactDynamicSizesFromTheConstruction) {
  AnalyzeDumpOptions options;
  for (const char* name : {"Buffer", "DataList", "Server", "Analysis", "Data", "Payload", "Data[]"})
    options.suspect_classes.push_back(kPrefix + name);
  auto a = AnalyzeDump(*dump_, options);
  ASSERT_TRUE(a.ok()) << a.status();
  const Expected e = FromHistogram(a->report);
  const uint64_t n = kData;

  struct Case {
    std::string name;
    uint64_t dynamic_objects, dynamic_bytes, retained_bytes;
  };
  const std::vector<Case> cases = {
      // B and L: themselves, their array and the n data objects with their payloads...
      {"Buffer", 2 * n + 2, e.buffer + e.array + e.items(), e.buffer + e.array},
      {"DataList", 2 * n + 2, e.list + e.array + e.items(), e.list + e.array},
      // ... which they share: each retains only itself and its array. S and A one level up.
      {"Server", 2 * n + 3, e.server + e.buffer + e.array + e.items(),
       e.server + e.buffer + e.array},
      {"Analysis", 2 * n + 3, e.analysis + e.list + e.array + e.items(),
       e.analysis + e.list + e.array},
      // All data objects together reach exactly themselves and their payloads, and retain them.
      {"Data", 2 * n, e.items(), e.items()},
      {"Payload", n, n * e.payload, n * e.payload},
      // Both arrays together: the data once; without both, the data die too.
      {"Data[]", 2 * n + 2, 2 * e.array + e.items(), 2 * e.array + e.items()},
  };
  for (const Case& c : cases) {
    const analysis::SuspectReport* s = Suspect(*a, c.name);
    ASSERT_NE(s, nullptr) << c.name;
    EXPECT_EQ(s->dynamic_objects, c.dynamic_objects) << c.name;
    EXPECT_EQ(s->dynamic_bytes, c.dynamic_bytes) << c.name;
    EXPECT_EQ(s->retained_bytes, c.retained_bytes) << c.name;  // precise (simulated GC)
  }
  // Fig. 2.3: small by GC size, big by dynamic size (here n = 20000: 20x and more).
  for (const char* name : {"Buffer", "DataList"}) {
    const analysis::SuspectReport* s = Suspect(*a, name);
    ASSERT_NE(s, nullptr);
    EXPECT_GT(s->dynamic_bytes, 20 * s->retained_bytes) << name;
  }
}

TEST_F(HwSharedBufferDump, BufferAndListAreTheBiggestByDynamicSize) {
  AnalyzeDumpOptions options;
  options.by_dynamic_rows = 8;
  auto a = AnalyzeDump(*dump_, options);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->by_dynamic.has_value());
  const Expected e = FromHistogram(a->report);
  const uint64_t n = kData;
  // Exact dynamic size and retained size of each of the six objects above the data.
  const std::map<std::string, std::pair<uint64_t, uint64_t>> expected = {
      {kPrefix + "Server",
       {e.server + e.buffer + e.array + e.items(), e.server + e.buffer + e.array}},
      {kPrefix + "Analysis",
       {e.analysis + e.list + e.array + e.items(), e.analysis + e.list + e.array}},
      {kPrefix + "Buffer", {e.buffer + e.array + e.items(), e.buffer + e.array}},
      {kPrefix + "DataList", {e.list + e.array + e.items(), e.list + e.array}},
      {kPrefix + "Data[]", {e.array + e.items(), e.array}},
  };
  for (const auto* list : {&a->by_dynamic->objects_by_dynamic, &a->by_dynamic->objects_by_shared}) {
    ASSERT_EQ(list->size(), 8u);
    std::multiset<std::string> top;
    for (size_t i = 0; i < 6; ++i) {
      const analysis::DynamicObjectRow& row = (*list)[i];
      top.insert(row.object.class_name);
      auto it = expected.find(row.object.class_name);
      ASSERT_NE(it, expected.end()) << row.object.class_name;
      EXPECT_EQ(row.object.dynamic_bytes, it->second.first) << row.object.class_name;
      EXPECT_EQ(row.object.retained_bytes, it->second.second) << row.object.class_name;
      // Shared size = what the six share: exactly the data objects and their payloads.
      EXPECT_EQ(row.shared_bytes, static_cast<int64_t>(e.items())) << row.object.class_name;
      EXPECT_EQ(row.component_objects, 1u);
      EXPECT_LE(row.object.dynamic_objects, 2 * n + 3);
    }
    EXPECT_EQ(top, (std::multiset<std::string>{kPrefix + "Server", kPrefix + "Analysis",
                                               kPrefix + "Buffer", kPrefix + "DataList",
                                               kPrefix + "Data[]", kPrefix + "Data[]"}));
    // The rest of the heap (the JDK's objects) reaches less than the data.
    EXPECT_LT((*list)[6].object.dynamic_bytes, e.items());
  }
  // By class: the two arrays together first (the data once plus both arrays).
  ASSERT_FALSE(a->by_dynamic->classes_by_dynamic.empty());
  const analysis::DynamicClassRow& first = a->by_dynamic->classes_by_dynamic[0];
  EXPECT_EQ(first.class_name, kPrefix + "Data[]");
  EXPECT_EQ(first.dynamic_bytes, 2 * e.array + e.items());
  EXPECT_EQ(first.dynamic_objects, 2 * n + 2);
  // In the thesis's shared-size histogram the six are the only objects of 1 MiB and more (their
  // estimated shared size is about 2 MiB).
  uint64_t at_least_items = 0;
  for (const analysis::SharedSizeBucket& b : a->by_dynamic->shared_histogram) {
    if (b.from_bytes >= 1024 * 1024) at_least_items += b.objects;
  }
  EXPECT_EQ(at_least_items, 6u);
}

TEST_F(HwSharedBufferDump, AnalyzeJsonCarriesTheDynamicSizes) {
  std::vector<std::string> args = {"heapwatchctl",     "analyze", *dump_,    "--json", "--class",
                                   kPrefix + "Buffer", "--by",    "dynamic", "--top",  "7",
                                   "--rows",           "0"};
  std::vector<const char*> argv;
  for (const std::string& s : args) argv.push_back(s.c_str());
  std::ostringstream out, err;
  ASSERT_EQ(ctl::RunCtl(static_cast<int>(argv.size()), argv.data(), out, err), 0) << err.str();
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::map<std::string, uint64_t> shallow;
  for (const nlohmann::json& row : j["histogram"]) {
    shallow[row["class_name"].get<std::string>()] =
        row["shallow_bytes"].get<uint64_t>() / row["instances"].get<uint64_t>();
  }
  const uint64_t items = kData * (shallow[kPrefix + "Data"] + shallow[kPrefix + "Payload"]);
  const nlohmann::json& s = j["suspect"];
  EXPECT_EQ(s["dynamic_objects"].get<uint64_t>(), 2 * kData + 2);
  EXPECT_EQ(s["dynamic_bytes"].get<uint64_t>(),
            shallow[kPrefix + "Buffer"] + shallow[kPrefix + "Data[]"] + items);
  ASSERT_EQ(j["top_objects"].size(), 7u);
  for (const nlohmann::json& o : j["top_objects"]) {
    ASSERT_TRUE(o.contains("dynamic_bytes")) << o.dump();
    EXPECT_GE(o["dynamic_bytes"].get<uint64_t>(), o["shallow_bytes"].get<uint64_t>());
  }
  const nlohmann::json& by = j["by_dynamic"];
  ASSERT_EQ(by["objects_by_dynamic"].size(), 7u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_THAT(by["objects_by_dynamic"][i]["object"]["class_name"].get<std::string>(),
                ::testing::StartsWith(kPrefix));
    EXPECT_EQ(by["objects_by_shared"][i]["shared_bytes"].get<int64_t>(),
              static_cast<int64_t>(items));
  }
}

}  // namespace
}  // namespace heapwatch::pipeline
