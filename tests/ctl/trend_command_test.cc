// `heapwatchctl trend` end to end through RunCtl on series of histogram files written to a temp
// directory. Each file is a real captured histogram (tests/collectors/data: JDK 17 live, JDK 25
// -all, and the JDK 17 one rewritten in the JDK 8 format) with one class's row scaled to simulate a
// leak. Covers: the suspects equal those of a diff::TrendDetector fed the same snapshots (as the
// daemon does), a flat series, --history episodes, file-name times (RFC 3339 basic, epoch,
// modification time) and the errors with their exit codes.
#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "collectors/class_histogram.h"
#include "ctl/ctl.h"
#include "ctl/time_arg.h"
#include "ctl/trend_command.h"
#include "diff/trend_detector.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::ctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

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

// `text` with the row of `class_name` set to `instances` and `bytes`, and the Total line adjusted.
std::string WithRow(const std::string& text, const std::string& class_name, uint64_t instances,
                    uint64_t bytes) {
  static const std::regex kRow(R"(^( *\d+:) +(\d+) +(\d+)  (\S+)(.*)$)");
  static const std::regex kTotal(R"(^Total +(\d+) +(\d+)$)");
  std::istringstream in(text);
  std::vector<std::string> lines;
  int64_t d_instances = 0, d_bytes = 0;
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kRow) && m[4] == class_name) {
      d_instances = static_cast<int64_t>(instances) - std::stoll(m[2]);
      d_bytes = static_cast<int64_t>(bytes) - std::stoll(m[3]);
      line = absl::StrFormat("%s %13d  %13d  %s%s", m[1].str(), instances, bytes, m[4].str(),
                             m[5].str());
      found = true;
    }
    lines.push_back(line);
  }
  EXPECT_TRUE(found) << class_name;
  std::string out;
  for (std::string& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, kTotal)) {
      line = absl::StrFormat("Total %13d  %13d", std::stoll(m[1]) + d_instances,
                             std::stoll(m[2]) + d_bytes);
    }
    out += line + "\n";
  }
  return out;
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

// The suspects a diff::TrendDetector with default options reports after the same series.
std::vector<diff::Suspect> DetectorSuspects(int n, const std::function<std::string(int)>& text) {
  diff::TrendDetector detector(diff::TrendOptions{});
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
}

INSTANTIATE_TEST_SUITE_P(Jdks, TrendFormatTest,
                         ::testing::Values("jdk17_live.txt", "jdk25_all.txt", "jdk17_all.txt",
                                           "jdk8_from_jdk17_live"));

TEST_F(TrendCommandTest, TextOutputHasTheSuspectsTableAndTheStillOpenEpisode) {
  std::string base = Captured("jdk17_live.txt");
  WriteSeries(20, [&](int i) { return Leaking(base, i); });
  Result r = Ctl({"trend", "--history", "--agent", "vm-1", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("20 histograms from 2026-11-24 01:00:00Z to 2026-11-24 01:19:00Z, "
                               "agent vm-1\n"));
  EXPECT_THAT(r.out, HasSubstr("AGENT  CLASS"));
  EXPECT_THAT(r.out, HasSubstr("vm-1   HwTestApp$Leaf"));
  EXPECT_THAT(r.out, HasSubstr("HwTestApp$Leaf  2026-11-24 01:12:00Z  -"));

  Result j = Ctl({"trend", "--history", "--json", dir_.string()});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json e = nlohmann::json::parse(j.out)["episodes"];
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0]["main_class"], kLeak);
  EXPECT_EQ(e[0]["classes"], nlohmann::json::array({kLeak}));
  EXPECT_EQ(e[0]["first_seen"], "2026-11-24T01:12:00Z");
  EXPECT_FALSE(e[0].contains("cleared"));  // still flagged
}

TEST_F(TrendCommandTest, FlatSeriesReportsNothing) {
  std::string base = Captured("jdk25_live.txt");
  WriteSeries(30, [&](int) { return base; });
  Result r = Ctl({"trend", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("no leak suspects"));
  Result j = Ctl({"trend", "--json", "--history", dir_.string()});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json json = nlohmann::json::parse(j.out);
  EXPECT_TRUE(json["suspects"].empty());
  EXPECT_TRUE(json["episodes"].empty());
  EXPECT_EQ(json["snapshots"], 30);
}

TEST_F(TrendCommandTest, HistoryListsAnEpisodeClearedWhenTheLeakStopsAndShrinksBack) {
  std::string base = Captured("jdk17_live.txt");
  // Leaks for 20 histograms, then is collected: back to its original 1234 objects.
  WriteSeries(30, [&](int i) { return i < 20 ? Leaking(base, i) : base; });
  Result r = Ctl({"trend", "--json", "--history", dir_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["suspects"].empty()) << r.out;
  ASSERT_EQ(j["episodes"].size(), 1u) << r.out;
  const nlohmann::json& e = j["episodes"][0];
  EXPECT_EQ(e["main_class"], kLeak);
  EXPECT_EQ(e["classes"], nlohmann::json::array({kLeak}));
  EXPECT_EQ(e["first_seen"], "2026-11-24T01:12:00Z");
  ASSERT_TRUE(e.contains("cleared")) << r.out;
  // Cleared at one of the histograms after the drop (index 20), once clear_snapshots (3) failed.
  std::string cleared = e["cleared"];
  EXPECT_GT(cleared, "2026-11-24T01:20:00Z");
  EXPECT_LE(cleared, "2026-11-24T01:29:00Z");

  Result text = Ctl({"trend", "--history", dir_.string()});
  ASSERT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("no leak suspects"));
  EXPECT_THAT(text.out, HasSubstr("HwTestApp$Leaf  2026-11-24 01:12:00Z  2026-11-24 01:2"));
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
