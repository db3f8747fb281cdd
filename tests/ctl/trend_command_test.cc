// `heapwatchctl trend` end to end through RunCtl on series of histogram files written to a temp
// directory. Each file is a real captured histogram (tests/collectors/data: JDK 17 live, JDK 25
// -all, and the JDK 17 one rewritten in the JDK 8 format) with some classes' rows scaled (or added)
// to simulate a leak. Covers: the suspects equal those of a diff::LeakDetector fed the same
// snapshots (as the daemon does), a leak of one application class with three JDK companions
// grouped into one leak, two independent leaks kept apart, healthy series (flat, sawtooth, noise),
// --history episodes of leaks and classes (still open, and cleared after a drop or a plateau),
// --explain, the time-scale flags, file-name times (RFC 3339 basic, epoch, modification time) and
// the errors with their exit codes.
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "collectors/class_histogram.h"
#include "ctl/ctl.h"
#include "ctl/time_arg.h"
#include "ctl/trend_command.h"
#include "diff/leak_detector.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::ctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::ContainsRegex;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

constexpr char kLeak[] = "HwTestApp$Leaf";

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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Captured(const std::string& name) {
  std::string text = ReadFile(std::string(HEAPWATCH_HISTOGRAM_DATA_DIR) + "/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

// `text` (a JDK 9+ histogram) as JDK 8 prints it: no module column.
std::string AsJdk8(const std::string& text) {
  std::string out = std::regex_replace(text, std::regex("class name \\(module\\)"), "class name");
  return std::regex_replace(out, std::regex(" \\([^()\\n]*\\)(\\r?\\n)"), "$1");
}

// One row to set in a histogram: `name` as HotSpot prints it ("[B", "java.lang.Long"), with
// `module` (" (java.base@17.0.15)" or "") when the row is new.
struct Row {
  std::string name;
  uint64_t instances;
  uint64_t bytes;
  std::string module = "";
};

// `text` with each row's class set to its instances and bytes (a class not in `text` is added as a
// new row before the Total line), and the Total line adjusted.
std::string WithRows(const std::string& text, const std::vector<Row>& rows) {
  static const std::regex kRow(R"(^( *\d+:) +(\d+) +(\d+)  (\S+)(.*)$)");
  static const std::regex kTotal(R"(^Total +(\d+) +(\d+)$)");
  std::istringstream in(text);
  std::vector<std::string> lines;
  int64_t d_instances = 0, d_bytes = 0;
  std::vector<bool> found(rows.size(), false);
  int last_num = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kRow)) {
      last_num = std::stoi(m[1].str().substr(0, m[1].str().size() - 1));
      // `m` points into `line`: the rewritten row goes to `out`, so that the match stays valid for
      // the next rows (ASan saw the read of a freed string when `line` itself was overwritten).
      std::string out = line;
      for (size_t r = 0; r < rows.size(); ++r) {
        if (m[4] != rows[r].name) continue;
        d_instances += static_cast<int64_t>(rows[r].instances) - std::stoll(m[2]);
        d_bytes += static_cast<int64_t>(rows[r].bytes) - std::stoll(m[3]);
        out = absl::StrFormat("%s %13d  %13d  %s%s", m[1].str(), rows[r].instances, rows[r].bytes,
                              m[4].str(), m[5].str());
        found[r] = true;
      }
      line = std::move(out);
    }
    lines.push_back(line);
  }
  std::string out;
  for (std::string& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, kTotal)) {
      for (size_t r = 0; r < rows.size(); ++r) {
        if (found[r]) continue;
        out += absl::StrFormat("%4d: %13d  %13d  %s%s\n", ++last_num, rows[r].instances,
                               rows[r].bytes, rows[r].name, rows[r].module);
        d_instances += static_cast<int64_t>(rows[r].instances);
        d_bytes += static_cast<int64_t>(rows[r].bytes);
      }
      line = absl::StrFormat("Total %13d  %13d", std::stoll(m[1]) + d_instances,
                             std::stoll(m[2]) + d_bytes);
    }
    out += line + "\n";
  }
  return out;
}

// `text` with the row of `class_name` set to `instances` and `bytes`, and the Total line adjusted.
std::string WithRow(const std::string& text, const std::string& class_name, uint64_t instances,
                    uint64_t bytes) {
  EXPECT_THAT(text, HasSubstr("  " + class_name)) << class_name;
  return WithRows(text, {{class_name, instances, bytes}});
}

// A leak of `kLeak`: 50,000 objects (1.2 MB) more in every histogram.
std::string Leaking(const std::string& base, int i) {
  return WithRow(base, kLeak, 1234 + 50000 * static_cast<uint64_t>(i),
                 29616 + 1200000 * static_cast<uint64_t>(i));
}

const absl::Time kStart = absl::FromCivil(absl::CivilSecond(2026, 11, 24, 1, 0, 0),
                                          absl::UTCTimeZone());
absl::Time TimeOf(int i) { return kStart + absl::Minutes(i); }
std::string BasicName(int i) {
  return absl::FormatTime("%Y%m%dT%H%M%SZ.txt", TimeOf(i), absl::UTCTimeZone());
}

class TrendCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("trend_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes histograms 0..n-1, named by `name`, with contents `text(i)`.
  void WriteSeries(int n, const std::function<std::string(int)>& text,
                   const std::function<std::string(int)>& name = BasicName) {
    for (int i = 0; i < n; ++i) WriteFile(Path(name(i)), text(i));
  }

  fs::path dir_;
};

// The suspects a diff::LeakDetector with default options (the daemon's) reports after the same
// series.
std::vector<diff::Suspect> DetectorSuspects(int n, const std::function<std::string(int)>& text) {
  diff::LeakDetector detector(diff::LeakOptions{});
  for (int i = 0; i < n; ++i) {
    auto h = collectors::ParseClassHistogram(text(i));
    EXPECT_TRUE(h.ok()) << h.status();
    Snapshot s;
    s.agent = AgentId("offline");
    s.time = TimeOf(i);
    s.histogram = *h;
    detector.Observe(s);
  }
  return detector.Suspects();
}

class TrendFormatTest : public TrendCommandTest,
                        public ::testing::WithParamInterface<const char*> {};

TEST_P(TrendFormatTest, SteadyLeakIsReportedAsTheDetectorWouldWithFirstSeen) {
  const std::string param = GetParam();
  std::string base =
      param == "jdk8_from_jdk17_live" ? AsJdk8(Captured("jdk17_live.txt")) : Captured(param);
  auto text = [&](int i) { return Leaking(base, i); };
  WriteSeries(20, text);
  Result r = Ctl({"trend", "--json", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["snapshots"], 20);
  EXPECT_EQ(j["agent"], "offline");
  EXPECT_EQ(j["first_snapshot_time"], "2026-11-24T01:00:00Z");
  EXPECT_EQ(j["last_snapshot_time"], "2026-11-24T01:19:00Z");
  EXPECT_TRUE(j["episodes"].empty());
  std::vector<diff::Suspect> expected = DetectorSuspects(20, text);
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(j["suspects"].size(), 1u) << r.out;
  const nlohmann::json& s = j["suspects"][0];
  EXPECT_EQ(s["agent"], "offline");
  EXPECT_EQ(s["class"], kLeak);
  EXPECT_EQ(s["bytes"], 29616 + 19 * 1200000);
  EXPECT_EQ(s["instances"], 1234 + 19 * 50000);
  EXPECT_DOUBLE_EQ(s["growth_bytes_per_second"].get<double>(), expected[0].growth_bytes_per_second);
  EXPECT_NEAR(s["growth_bytes_per_second"].get<double>(), 1200000.0 / 60, 1e-6);
  EXPECT_DOUBLE_EQ(s["score"].get<double>(), expected[0].score);
  // 5 warm-up histograms, then 8 in the window: the 13th (index 12) flags it.
  EXPECT_EQ(s["first_seen"], Rfc3339(expected[0].first_seen));
  EXPECT_EQ(s["first_seen"], "2026-11-24T01:12:00Z");
  EXPECT_EQ(s["last_snapshot_time"], "2026-11-24T01:19:00Z");
  EXPECT_EQ(s["leak"], expected[0].leak);
  EXPECT_EQ(s["time_scale"], "0s");  // flagged on every snapshot: no bucketed scale is ready yet
  // One leak of that one class.
  ASSERT_EQ(j["leaks"].size(), 1u) << r.out;
  const nlohmann::json& l = j["leaks"][0];
  EXPECT_EQ(l["leak"], s["leak"]);
  EXPECT_THAT(l["leak"].get<std::string>(), ContainsRegex("^L[0-9a-f]{12}$"));
  EXPECT_EQ(l["main_class"], kLeak);
  EXPECT_EQ(l["classes"], nlohmann::json::array({kLeak}));
  EXPECT_EQ(l["bytes"], s["bytes"]);
  EXPECT_DOUBLE_EQ(l["growth_bytes_per_second"].get<double>(),
                   s["growth_bytes_per_second"].get<double>());
  EXPECT_EQ(l["first_seen"], "2026-11-24T01:12:00Z");
  EXPECT_FALSE(l.contains("accumulation_point"));  // offline: no extended dump
}

INSTANTIATE_TEST_SUITE_P(Jdks, TrendFormatTest,
                         ::testing::Values("jdk17_live.txt", "jdk25_all.txt", "jdk17_all.txt",
                                           "jdk8_from_jdk17_live"));

// The episodes of `j` (a `trend --json --history` output) of one kind.
std::vector<nlohmann::json> EpisodesOfKind(const nlohmann::json& j, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& e : j["episodes"]) {
    if (e["kind"] == kind) out.push_back(e);
  }
  return out;
}

TEST_F(TrendCommandTest, TextOutputHasTheLeakAndSuspectTablesAndTheStillOpenEpisodes) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(20, [&](int i) { return Leaking(base, i); });
  Result j = Ctl({"trend", "--history", "--json", dir_.string()});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json json = nlohmann::json::parse(j.out);
  ASSERT_EQ(json["leaks"].size(), 1u) << j.out;
  const std::string id = json["leaks"][0]["leak"];

  Result r = Ctl({"trend", "--history", "--agent", "vm-1", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("20 histograms from 2026-11-24 01:00:00Z to 2026-11-24 01:19:00Z, "
                               "agent vm-1\n"));
  EXPECT_THAT(r.out, HasSubstr("\nLeaks:\nAGENT  LEAK"));
  EXPECT_THAT(r.out, ContainsRegex("\nvm-1   " + id + "  HwTestApp\\$Leaf \\(1 class\\) .* every "
                                   "snapshot +2026-11-24 01:12:00Z +-\n"));
  EXPECT_THAT(r.out, HasSubstr("\nSuspects:\nAGENT  CLASS"));
  EXPECT_THAT(r.out, ContainsRegex("\nvm-1   HwTestApp\\$Leaf .* every snapshot +" + id +
                                   " +2026-11-24 01:12:00Z\n"));
  EXPECT_THAT(r.out, ContainsRegex("\nEpisodes [^\n]*\nKIND +LEAK +MAIN CLASS +FLAGGED AT +CLEARED AT "
                                   "+SCALE +CLASSES\n"));
  EXPECT_THAT(r.out, ContainsRegex("\nleak +" + id +
                                   " +HwTestApp\\$Leaf +2026-11-24 01:12:00Z +- +every snapshot +"
                                   "HwTestApp\\$Leaf\n"));
  EXPECT_THAT(r.out, ContainsRegex("\nclass +" + id +
                                   " +HwTestApp\\$Leaf +2026-11-24 01:12:00Z +- +every snapshot +"
                                   "HwTestApp\\$Leaf\n"));

  for (const char* kind : {"leak", "class"}) {
    std::vector<nlohmann::json> e = EpisodesOfKind(json, kind);
    ASSERT_EQ(e.size(), 1u) << kind << ": " << j.out;
    EXPECT_EQ(e[0]["leak"], id);
    EXPECT_EQ(e[0]["main_class"], kLeak);
    EXPECT_EQ(e[0]["classes"], nlohmann::json::array({kLeak}));
    EXPECT_EQ(e[0]["first_seen"], "2026-11-24T01:12:00Z");
    EXPECT_EQ(e[0]["time_scale"], "0s");
    EXPECT_FALSE(e[0].contains("cleared"));  // still flagged
  }
  EXPECT_EQ(json["episodes"].size(), 2u) << j.out;
}

TEST_F(TrendCommandTest, FlatSeriesReportsNothing) {
  std::string base = Captured("jdk25_live.txt");
  WriteSeries(30, [&](int) { return base; });
  Result r = Ctl({"trend", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("no leaks\n"));
  EXPECT_THAT(r.out, HasSubstr("no leak suspects\n"));
  Result j = Ctl({"trend", "--json", "--history", dir_.string()});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json json = nlohmann::json::parse(j.out);
  EXPECT_TRUE(json["suspects"].empty());
  EXPECT_TRUE(json["leaks"].empty());
  EXPECT_TRUE(json["episodes"].empty());
  EXPECT_EQ(json["snapshots"], 30);
}

TEST_F(TrendCommandTest, HistoryListsEpisodesClearedWhenTheLeakStopsAndShrinksBack) {
  std::string base = Captured("jdk17_live.txt");
  // Leaks for 20 histograms, then is collected: back to its original 1234 objects.
  WriteSeries(30, [&](int i) { return i < 20 ? Leaking(base, i) : base; });
  Result r = Ctl({"trend", "--json", "--history", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["suspects"].empty()) << r.out;
  EXPECT_TRUE(j["leaks"].empty()) << r.out;
  for (const char* kind : {"leak", "class"}) {
    std::vector<nlohmann::json> episodes = EpisodesOfKind(j, kind);
    ASSERT_EQ(episodes.size(), 1u) << kind << ": " << r.out;
    const nlohmann::json& e = episodes[0];
    EXPECT_EQ(e["main_class"], kLeak);
    EXPECT_EQ(e["classes"], nlohmann::json::array({kLeak}));
    EXPECT_EQ(e["first_seen"], "2026-11-24T01:12:00Z");
    ASSERT_TRUE(e.contains("cleared")) << r.out;
    // Cleared at one of the histograms after the drop (index 20), once clear_snapshots (3) failed.
    std::string cleared = e["cleared"];
    EXPECT_GT(cleared, "2026-11-24T01:20:00Z");
    EXPECT_LE(cleared, "2026-11-24T01:29:00Z");
  }
  EXPECT_EQ(EpisodesOfKind(j, "leak")[0]["leak"], EpisodesOfKind(j, "class")[0]["leak"]);

  Result text = Ctl({"trend", "--history", dir_.string()});
  ASSERT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("no leak suspects"));
  EXPECT_THAT(text.out, ContainsRegex("\nleak +L[0-9a-f]{12} +HwTestApp\\$Leaf +2026-11-24 01:12:00Z "
                                      "+2026-11-24 01:2"));
}

// byte[], java.lang.String and java.lang.Long grow in lockstep with HwTestApp$Leaf (each step's
// growth varies, by the same factor for all four, as when one workload drives them); byte[] holds
// the most bytes. Index `i` of a 60 s series.
std::string LeakWithCompanions(const std::string& base, int i) {
  double steps = 0;  // sum of the step factors up to i, each in [0.5, 1.5]
  for (int k = 1; k <= i; ++k) steps += 1 + 0.5 * std::sin(1.7 * k);
  auto grown = [&](uint64_t start, double per_step) {
    return start + static_cast<uint64_t>(std::llround(per_step * steps));
  };
  const uint64_t leaf = grown(29616, 1'200'000), bytes = grown(110096, 2'000'000),
                 strings = grown(47016, 600'000), longs = grown(16000, 400'000);
  return WithRows(base, {{"[B", bytes / 100, bytes},
                         {kLeak, leaf / 24, leaf},
                         {"java.lang.String", strings / 24, strings},
                         {"java.lang.Long", longs / 16, longs, " (java.base@17.0.15)"}});
}

TEST_F(TrendCommandTest, LeakWithJdkCompanionsIsOneLeakNamedByTheApplicationClass) {
  std::string base = Captured("jdk17_live.txt");
  auto text = [&](int i) { return LeakWithCompanions(base, i); };
  WriteSeries(40, text);
  Result r = Ctl({"trend", "--json", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["leaks"].size(), 1u) << r.out;
  const nlohmann::json& l = j["leaks"][0];
  EXPECT_EQ(l["main_class"], kLeak);  // not byte[], although byte[] holds more
  EXPECT_THAT(l["classes"].get<std::vector<std::string>>(),
              UnorderedElementsAre(kLeak, "byte[]", "java.lang.String", "java.lang.Long"));
  EXPECT_EQ(l["classes"][0], "byte[]");  // by bytes, descending
  // The leak's figures are its classes' sums, and each class is a suspect of this leak.
  double bytes = 0, growth = 0;
  for (const nlohmann::json& c : l["class_growth"]) {
    bytes += c["bytes"].get<double>();
    growth += c["growth_bytes_per_second"].get<double>();
  }
  EXPECT_EQ(l["bytes"].get<double>(), bytes);
  EXPECT_NEAR(l["growth_bytes_per_second"].get<double>(), growth, 1e-6 * growth);
  // 4.2 MB per 60 s on average over the four classes.
  EXPECT_NEAR(growth, 4'200'000.0 / 60, 0.25 * 4'200'000.0 / 60);
  ASSERT_EQ(j["suspects"].size(), 4u) << r.out;
  for (const nlohmann::json& s : j["suspects"]) EXPECT_EQ(s["leak"], l["leak"]) << s.dump();
  // The suspects are those of the daemon's detector.
  std::vector<diff::Suspect> expected = DetectorSuspects(40, text);
  ASSERT_EQ(expected.size(), 4u);
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(j["suspects"][k]["class"], expected[k].class_name);
    EXPECT_EQ(j["suspects"][k]["leak"], expected[k].leak);
  }

  Result table = Ctl({"trend", dir_.string()});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_THAT(table.out, ContainsRegex("offline +L[0-9a-f]{12} +HwTestApp\\$Leaf \\(4 classes\\)"));
  EXPECT_THAT(table.out, ContainsRegex("\n +  byte\\[\\] +[0-9.]+ MiB +\\+"));
  EXPECT_THAT(table.out, ContainsRegex("\n +  java\\.lang\\.Long +[0-9.]+ MiB +\\+"));
}

TEST_F(TrendCommandTest, TwoIndependentLeaksAreTwoLeaks) {
  std::string base = Captured("jdk17_live.txt");
  // HwTestApp$Leaf and java.lang.String both grow, each at its own uneven pace.
  WriteSeries(40, [&](int i) {
    double leaf_steps = 0, string_steps = 0;
    for (int k = 1; k <= i; ++k) {
      leaf_steps += 1 + 0.5 * std::sin(1.7 * k);
      string_steps += 1 + 0.5 * std::sin(2.9 * k + 1.0);
    }
    const uint64_t leaf = 29616 + static_cast<uint64_t>(1'200'000 * leaf_steps);
    const uint64_t strings = 47016 + static_cast<uint64_t>(800'000 * string_steps);
    return WithRows(base, {{kLeak, leaf / 24, leaf}, {"java.lang.String", strings / 24, strings}});
  });
  Result r = Ctl({"trend", "--json", "--agent", "vm-7", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["leaks"].size(), 2u) << r.out;
  // Fastest first: the application class's leak, then the strings'.
  EXPECT_EQ(j["leaks"][0]["main_class"], kLeak);
  EXPECT_EQ(j["leaks"][0]["classes"], nlohmann::json::array({kLeak}));
  EXPECT_EQ(j["leaks"][1]["main_class"], "java.lang.String");
  EXPECT_EQ(j["leaks"][1]["classes"], nlohmann::json::array({"java.lang.String"}));
  EXPECT_NE(j["leaks"][0]["leak"], j["leaks"][1]["leak"]);
  for (const nlohmann::json& l : j["leaks"]) EXPECT_EQ(l["agent"], "vm-7");
}

// A JVM that does not leak: byte[] fills and empties (a 5-histogram sawtooth), java.lang.String
// wobbles around 2 MB, everything else is constant.
std::string Healthy(const std::string& base, int i) {
  const uint64_t bytes = 110096 + static_cast<uint64_t>(i % 5) * 3'000'000;
  const uint64_t strings =
      2'000'000 + static_cast<uint64_t>(std::llround(500'000 * std::sin(2.3 * i)));
  return WithRows(base, {{"[B", bytes / 100, bytes}, {"java.lang.String", strings / 24, strings}});
}

TEST_F(TrendCommandTest, HealthySeriesHasNoLeakAndNoSuspect) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(40, [&](int i) { return Healthy(base, i); });
  Result r = Ctl({"trend", "--json", "--history", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["snapshots"], 40);
  EXPECT_TRUE(j["leaks"].empty()) << r.out;
  EXPECT_TRUE(j["suspects"].empty()) << r.out;
  EXPECT_TRUE(j["episodes"].empty()) << r.out;
}

TEST_F(TrendCommandTest, CacheThatFillsThenPlateausIsAClearedEpisode) {
  std::string base = Captured("jdk17_live.txt");
  // The cache grows by 1.2 MB a minute for 20 minutes, then stays full for 40.
  WriteSeries(60, [&](int i) { return Leaking(base, std::min(i, 20)); });
  Result r = Ctl({"trend", "--json", "--history", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["leaks"].empty()) << r.out;
  EXPECT_TRUE(j["suspects"].empty()) << r.out;
  std::vector<nlohmann::json> leaks = EpisodesOfKind(j, "leak");
  ASSERT_FALSE(leaks.empty()) << r.out;
  for (const nlohmann::json& e : j["episodes"]) {
    EXPECT_EQ(e["main_class"], kLeak) << e.dump();
    EXPECT_EQ(e["classes"], nlohmann::json::array({kLeak})) << e.dump();
    ASSERT_TRUE(e.contains("cleared")) << e.dump();  // nothing is still flagged
    // Flagged while it grew, cleared once it had stopped.
    EXPECT_LT(e["first_seen"].get<std::string>(), "2026-11-24T01:21:00Z") << e.dump();
    EXPECT_GT(e["cleared"].get<std::string>(), "2026-11-24T01:20:00Z") << e.dump();
    EXPECT_GT(e["cleared"].get<std::string>(), e["first_seen"].get<std::string>()) << e.dump();
  }
}

TEST_F(TrendCommandTest, ExplainPrintsEachTestPerScale) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(40, [&](int i) { return LeakWithCompanions(base, i); });
  Result r = Ctl({"trend", "--json", "--explain", kLeak, dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json e = nlohmann::json::parse(r.out);
  EXPECT_EQ(e["agent"], "offline");
  EXPECT_EQ(e["class_name"], kLeak);
  EXPECT_EQ(e["known"], true);
  EXPECT_EQ(e["suspect"], true);
  nlohmann::json summary = nlohmann::json::parse(Ctl({"trend", "--json", dir_.string()}).out);
  ASSERT_EQ(summary["leaks"].size(), 1u);
  EXPECT_EQ(e["leak"], summary["leaks"][0]["leak"]);
  ASSERT_GT(e["scales"].size(), 1u) << r.out;  // every snapshot and some bucketed scales
  EXPECT_EQ(e["scales"][0]["time_scale"], "0s");
  // Each test passes exactly when value <op> threshold; the leak, still growing steadily at the
  // end, passes every test on some scale it is a suspect on.
  bool passes_everything_somewhere = false;
  for (const nlohmann::json& scale : e["scales"]) {
    bool all_pass = !scale["tests"].empty();
    for (const nlohmann::json& t : scale["tests"]) {
      const double v = t["value"], th = t["threshold"];
      ASSERT_TRUE(t["op"] == "<=" || t["op"] == ">=" || t["op"] == ">") << t.dump();
      const bool holds = t["op"] == "<=" ? v <= th : t["op"] == ">=" ? v >= th : v > th;
      EXPECT_EQ(t["pass"].get<bool>(), holds) << t.dump();
      all_pass = all_pass && t["pass"].get<bool>();
    }
    if (scale["suspect"] == true && all_pass) passes_everything_somewhere = true;
  }
  EXPECT_TRUE(passes_everything_somewhere) << r.out;

  Result text = Ctl({"trend", "--explain", kLeak, dir_.string()});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, ContainsRegex("^HwTestApp\\$Leaf in offline: a leak suspect \\(leak "
                                      "L[0-9a-f]{12}\\)\n"));
  EXPECT_THAT(text.out, ContainsRegex("\nScale every snapshot: [^\n]*, window 12/8 snapshots\n"));
  EXPECT_THAT(text.out, ContainsRegex("\n  TEST +VALUE +OP +THRESHOLD +RESULT +UNIT\n"));

  // Only the every-snapshot scale with --no-time-scales.
  Result one = Ctl({"trend", "--json", "--no-time-scales", "--explain", kLeak, dir_.string()});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["scales"].size(), 1u) << one.out;

  Result unknown = Ctl({"trend", "--json", "--explain", "com.example.Nothing", dir_.string()});
  ASSERT_EQ(unknown.code, 0) << unknown.err;
  nlohmann::json u = nlohmann::json::parse(unknown.out);
  EXPECT_EQ(u["known"], false);
  EXPECT_EQ(u["suspect"], false);
}

TEST_F(TrendCommandTest, TimeScaleFlags) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(40, [&](int i) { return LeakWithCompanions(base, i); });
  // The same leak on the every-snapshot scale alone.
  Result r = Ctl({"trend", "--json", "--no-time-scales", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["leaks"].size(), 1u) << r.out;
  EXPECT_EQ(j["leaks"][0]["classes"].size(), 4u) << r.out;
  for (const nlohmann::json& s : j["suspects"]) EXPECT_EQ(s["time_scale"], "0s");

  EXPECT_EQ(Ctl({"trend", "--min-time-scale", "0s", dir_.string()}).code, 2);
  EXPECT_EQ(Ctl({"trend", "--min-time-scale", "x", dir_.string()}).code, 2);
  Result inverted = Ctl({"trend", "--min-time-scale", "1h", "--max-time-scale", "1m", dir_.string()});
  EXPECT_EQ(inverted.code, 2);
  EXPECT_THAT(inverted.err, HasSubstr("time_scale"));
}

TEST(TimeFromFileNameTest, Rfc3339BasicEpochOrNothing) {
  auto t = [](std::string_view name) {
    auto r = TimeFromFileName(name);
    EXPECT_TRUE(r.ok()) << name << ": " << r.status();
    return r.ok() ? *r : std::nullopt;
  };
  const absl::Time base =
      absl::FromCivil(absl::CivilSecond(2026, 11, 24, 1, 16, 43), absl::UTCTimeZone());
  EXPECT_EQ(t("20261124T011643Z.txt"), base);
  EXPECT_EQ(t("20261124T011643Z"), base);
  EXPECT_EQ(t("histo-20261124T011643Z.txt.gz"), base);
  EXPECT_EQ(t("app_20261124T011643.123456Z.histo"), base + absl::Microseconds(123456));
  EXPECT_EQ(t("1763946003.txt"), absl::FromUnixSeconds(1763946003));
  EXPECT_EQ(t("1763946003"), absl::FromUnixSeconds(1763946003));
  EXPECT_EQ(t("7.txt"), absl::FromUnixSeconds(7));
  EXPECT_EQ(t("histo.txt"), std::nullopt);
  EXPECT_EQ(t("1763946003-b.txt"), std::nullopt);
  EXPECT_EQ(t("20261124T011643.txt"), std::nullopt);  // no Z: not UTC
  EXPECT_EQ(t("120261124T011643Z.txt"), std::nullopt);  // nine digits before the T
  EXPECT_EQ(t(".hidden"), std::nullopt);
  EXPECT_FALSE(TimeFromFileName("20261324T011643Z.txt").ok());  // month 13
  EXPECT_FALSE(TimeFromFileName("20261124T256000Z.txt").ok());  // hour 25
}

TEST_F(TrendCommandTest, EpochNamesAndFilesGivenOneByOne) {
  std::string base = Captured("jdk17_live.txt");
  // Epoch seconds 60 s apart, listed out of order on the command line.
  std::vector<std::string> args = {"trend", "--json"};
  for (int i = 19; i >= 0; --i) {
    std::string name = absl::StrFormat("%d.histo", absl::ToUnixSeconds(TimeOf(i)));
    WriteFile(Path(name), Leaking(base, i));
    args.push_back(Path(name));
  }
  Result r = Ctl(args);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["suspects"].size(), 1u) << r.out;
  EXPECT_EQ(j["suspects"][0]["first_seen"], "2026-11-24T01:12:00Z");
}

TEST_F(TrendCommandTest, ModificationTimeWhenTheNameHasNoTime) {
  std::string base = Captured("jdk17_live.txt");
  // Names sort in the opposite order of the times: only the modification times order the leak.
  for (int i = 0; i < 20; ++i) {
    std::string path = Path(absl::StrFormat("histo-%c.txt", 'z' - i));
    WriteFile(path, Leaking(base, i));
    struct timespec times[2] = {absl::ToTimespec(TimeOf(i)), absl::ToTimespec(TimeOf(i))};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  Result r = Ctl({"trend", "--json", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["first_snapshot_time"], "2026-11-24T01:00:00Z");
  ASSERT_EQ(j["suspects"].size(), 1u) << r.out;
  EXPECT_EQ(j["suspects"][0]["first_seen"], "2026-11-24T01:12:00Z");
}

TEST_F(TrendCommandTest, BadFileIsAnErrorNamingItUnlessSkipBad) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(20, [&](int i) { return Leaking(base, i); });
  // A truncated reply and a JVM error instead of a histogram.
  WriteFile(Path(BasicName(7)), base.substr(0, base.size() / 2));
  WriteFile(Path("20261124T013000Z.txt"), Captured("jdk17_raw_unknown_command.txt"));
  Result r = Ctl({"trend", dir_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(Path(BasicName(7)) + ": class histogram: "));
  EXPECT_TRUE(r.out.empty());

  Result skip = Ctl({"trend", "--json", "--skip-bad", dir_.string()});
  ASSERT_EQ(skip.code, 0) << skip.err;
  EXPECT_THAT(skip.err, HasSubstr("warning: skipping " + Path(BasicName(7))));
  EXPECT_THAT(skip.err, HasSubstr("warning: skipping " + Path("20261124T013000Z.txt")));
  nlohmann::json j = nlohmann::json::parse(skip.out);
  EXPECT_EQ(j["snapshots"], 19);
  EXPECT_EQ(j["skipped_files"], nlohmann::json::array({Path(BasicName(7)),
                                                       Path("20261124T013000Z.txt")}));
  EXPECT_EQ(j["suspects"].size(), 1u);

  Result text = Ctl({"trend", "--skip-bad", dir_.string()});
  EXPECT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("19 histograms from"));
  EXPECT_THAT(text.out, HasSubstr("(2 files skipped)"));
}

TEST_F(TrendCommandTest, NothingLeftAfterSkippingIsAnError) {
  WriteFile(Path("1.txt"), "not a histogram\n");
  Result r = Ctl({"trend", "--skip-bad", dir_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("no class histogram left to analyse"));
}

TEST_F(TrendCommandTest, TwoFilesWithTheSameTimeAreAnError) {
  std::string base = Captured("jdk17_live.txt");
  WriteFile(Path("20261124T010000Z.txt"), base);
  WriteFile(Path(absl::StrFormat("%d.txt", absl::ToUnixSeconds(kStart))), base);
  Result r = Ctl({"trend", dir_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("20261124T010000Z.txt"));
  EXPECT_THAT(r.err, HasSubstr(absl::StrFormat("%d.txt", absl::ToUnixSeconds(kStart))));
  EXPECT_THAT(r.err, HasSubstr("have the same time 2026-11-24T01:00:00Z"));
  // Also when one file is named twice.
  Result twice = Ctl({"trend", Path("20261124T010000Z.txt"), Path("20261124T010000Z.txt")});
  EXPECT_EQ(twice.code, 1);
}

TEST_F(TrendCommandTest, PathErrorsAndUsage) {
  fs::create_directories(dir_ / "empty");
  fs::create_directories(dir_ / "only_dirs" / "sub");
  Result empty = Ctl({"trend", Path("empty")});
  EXPECT_EQ(empty.code, 1);
  EXPECT_THAT(empty.err, HasSubstr(Path("empty") + ": no regular file in the directory"));
  EXPECT_EQ(Ctl({"trend", Path("only_dirs")}).code, 1);  // not recursive
  Result missing = Ctl({"trend", Path("missing")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr(Path("missing")));
  Result bad_time = Ctl({"trend", [&] {
                           WriteFile(Path("20261324T000000Z.txt"), Captured("jdk17_live.txt"));
                           return Path("20261324T000000Z.txt");
                         }()});
  EXPECT_EQ(bad_time.code, 1);
  EXPECT_THAT(bad_time.err, HasSubstr("is not a valid time"));

  EXPECT_EQ(Ctl({"trend"}).code, 2);                                        // no path
  EXPECT_EQ(Ctl({"trend", "--window", "4", dir_.string()}).code, 2);       // < min_snapshots
  EXPECT_EQ(Ctl({"trend", "--agent", "a b", dir_.string()}).code, 2);     // not an agent id
  EXPECT_EQ(Ctl({"trend", "--window", "x", dir_.string()}).code, 2);
}

TEST_F(TrendCommandTest, WindowAndMinSnapshotsFlagEarlier) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(12, [&](int i) { return Leaking(base, i); });
  Result def = Ctl({"trend", "--json", dir_.string()});
  ASSERT_EQ(def.code, 0) << def.err;
  EXPECT_TRUE(nlohmann::json::parse(def.out)["suspects"].empty());  // 12 < 5 + 8
  Result r = Ctl({"trend", "--json", "--window", "6", "--min-snapshots", "6", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["suspects"].size(), 1u) << r.out;
  EXPECT_EQ(j["suspects"][0]["first_seen"], "2026-11-24T01:10:00Z");  // 5 warm-up + 6
}

}  // namespace
}  // namespace heapwatch::ctl
