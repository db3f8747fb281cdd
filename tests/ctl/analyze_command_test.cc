// `heapwatchctl analyze` end to end through RunCtl on the corpora (../shared/corpora): JSON and
// text reports, the MAT DominatorTestData suspect (retained size of R = 224), errors and exit
// codes.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ctl/ctl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::ctl {
namespace {

using ::testing::HasSubstr;

std::string Corpus(const std::string& relative) {
  return std::string(HEAPWATCH_CORPORA_DIR) + "/" + relative;
}

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result Ctl(std::vector<std::string> args) {
  args.insert(args.begin(), "heapwatchctl");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

TEST(AnalyzeCommandTest, JsonSuspectReportForMatDominatorTestData) {
  Result r = Ctl({"analyze", Corpus("eclipse-mat/sun_jdk6_32bit.hprof"), "--json", "--class",
                  "org.eclipse.mat.tests.CreateSampleDump$DominatorTestData$R", "--top", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dump_format"], "JAVA PROFILE 1.0.1");
  EXPECT_GT(j["totals"]["objects"].get<uint64_t>(), 0u);
  EXPECT_GT(j["totals"]["unreachable_objects"].get<uint64_t>(), 0u);  // MAT: at least one
  EXPECT_EQ(j["top_objects"].size(), 5u);
  const nlohmann::json& s = j["suspect"];
  EXPECT_EQ(s["instances"], 1);
  EXPECT_EQ(s["minimum_retained_bytes"], 224);  // MAT DominatorTreeTest
  EXPECT_EQ(s["retained_bytes"], 224);
  ASSERT_EQ(s["accumulation_points"].size(), 1u);
  EXPECT_TRUE(s["shortest_path"]["found"].get<bool>());
  EXPECT_THAT(s["shortest_path"]["steps"].back()["object"]["class_name"].get<std::string>(),
              HasSubstr("DominatorTestData$R"));
}

TEST(AnalyzeCommandTest, TextReportOnCompressedAndAndroidDumps) {
  Result gz = Ctl({"analyze", Corpus("eclipse-mat/openjdk_jdk11_04_x64.hprof.gz"), "--rows", "5"});
  ASSERT_EQ(gz.code, 0) << gz.err;
  EXPECT_THAT(gz.out, HasSubstr("Class histogram"));
  EXPECT_THAT(gz.out, HasSubstr("Biggest objects by retained size"));
  Result android = Ctl({"analyze", Corpus("adt-tools-base-perflib/dialer.android-hprof"), "--class",
                        "android.app.ActivityThread"});
  ASSERT_EQ(android.code, 0) << android.err;
  EXPECT_THAT(android.out, HasSubstr("sizes: android"));
  EXPECT_THAT(android.out, HasSubstr("Suspect class android.app.ActivityThread"));
}

TEST(AnalyzeCommandTest, ByDynamicListsExactDynamicSizes) {
  Result r = Ctl({"analyze", Corpus("eclipse-mat/sun_jdk6_32bit.hprof"), "--json", "--by",
                  "dynamic", "--top", "4"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& by = j["by_dynamic"];
  ASSERT_EQ(by["objects_by_dynamic"].size(), 4u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_GE(by["objects_by_dynamic"][i - 1]["object"]["dynamic_bytes"].get<uint64_t>(),
              by["objects_by_dynamic"][i]["object"]["dynamic_bytes"].get<uint64_t>());
    EXPECT_GE(by["objects_by_shared"][i - 1]["shared_bytes"].get<int64_t>(),
              by["objects_by_shared"][i]["shared_bytes"].get<int64_t>());
  }
  uint64_t counted = 0;
  for (const nlohmann::json& b : by["shared_histogram"]) counted += b["objects"].get<uint64_t>();
  EXPECT_EQ(counted, j["totals"]["reachable_objects"].get<uint64_t>());
  // The thesis's variant follows weak referents and class edges: never less than strong only.
  Result all = Ctl({"analyze", Corpus("eclipse-mat/sun_jdk6_32bit.hprof"), "--json", "--by",
                    "dynamic", "--top", "4", "--all-references"});
  ASSERT_EQ(all.code, 0) << all.err;
  nlohmann::json a = nlohmann::json::parse(all.out);
  EXPECT_TRUE(a["by_dynamic"]["all_references"].get<bool>());
  EXPECT_GE(a["by_dynamic"]["objects_by_dynamic"][0]["object"]["dynamic_bytes"].get<uint64_t>(),
            by["objects_by_dynamic"][0]["object"]["dynamic_bytes"].get<uint64_t>());
  Result text = Ctl({"analyze", Corpus("eclipse-mat/sun_jdk6_32bit.hprof"), "--by", "dynamic"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Biggest objects by shared size"));
}

TEST(AnalyzeCommandTest, ErrorsAndExitCodes) {
  Result missing = Ctl({"analyze", "/nonexistent/heap.hprof"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/heap.hprof"));
  Result not_a_dump = Ctl({"analyze", Corpus("eclipse-mat/EXPECTED.md")});
  EXPECT_EQ(not_a_dump.code, 1);
  EXPECT_FALSE(not_a_dump.err.empty());
  // IBM Portable Heap Dumps are read (collectors/dumps/phd): analysed like any dump, exit 0.
  Result phd = Ctl({"analyze", Corpus("eclipse-mat/heapdump.20100112.141124.11580.0002.phd")});
  EXPECT_EQ(phd.code, 0) << phd.err;
  EXPECT_FALSE(phd.out.empty());
  Result no_class =
      Ctl({"analyze", Corpus("eclipse-mat/sun_jdk5_64bit.hprof"), "--class", "com.acme.Nope"});
  EXPECT_EQ(no_class.code, 1);
  EXPECT_THAT(no_class.err, HasSubstr("com.acme.Nope"));
  Result bad_pattern =
      Ctl({"analyze", Corpus("eclipse-mat/sun_jdk5_64bit.hprof"), "--exclude", "(("});
  EXPECT_EQ(bad_pattern.code, 2);
  Result bad_model =
      Ctl({"analyze", Corpus("eclipse-mat/sun_jdk5_64bit.hprof"), "--size-model", "x"});
  EXPECT_EQ(bad_model.code, 2);
  Result no_file = Ctl({"analyze"});
  EXPECT_EQ(no_file.code, 2);
  Result bad_by = Ctl({"analyze", Corpus("eclipse-mat/sun_jdk5_64bit.hprof"), "--by", "size"});
  EXPECT_EQ(bad_by.code, 2);
  EXPECT_THAT(bad_by.err, HasSubstr("--by"));
}

}  // namespace
}  // namespace heapwatch::ctl
