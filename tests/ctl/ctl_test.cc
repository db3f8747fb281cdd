// heapwatchctl's commands against a real QueryServer (loopback, real store;
// tests/daemon/query_fixture.h), plus its argument and output helpers.
#include "ctl/ctl.h"

#include <sstream>

#include "ctl/output.h"
#include "ctl/time_arg.h"
#include "diff/heap_forecast.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::ctl {
namespace {

using ::testing::HasSubstr;

TEST(TimeArg, Rfc3339RelativeAndNow) {
  const absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  EXPECT_EQ(*ParseTimeArg("2023-11-14T22:13:20Z", now, false), now);
  EXPECT_EQ(*ParseTimeArg("2023-11-14T23:13:20.5+01:00", now, false),
            now + absl::Milliseconds(500));
  EXPECT_EQ(*ParseTimeArg("-10m", now, false), now - absl::Minutes(10));
  EXPECT_EQ(*ParseTimeArg("-1h30m", now, false), now - absl::Minutes(90));
  EXPECT_EQ(*ParseTimeArg("now", now, false), now);
  EXPECT_EQ(*ParseTimeArg("10m", now, true), now - absl::Minutes(10));
  for (const char* bad : {"10m", "yesterday", "", "-", "--5m", "2023-11-14", "-inf"}) {
    auto t = ParseTimeArg(bad, now, false);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_THAT(std::string(t.status().message()), HasSubstr("RFC 3339")) << bad;
    }
  }
}

TEST(TimeArg, Rfc3339OutputRoundTrips) {
  absl::Time t = absl::FromUnixMicros(1'700'000'000'123'456);
  EXPECT_EQ(Rfc3339(t), "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(*ParseTimeArg(Rfc3339(t), absl::Now(), false), t);
  EXPECT_EQ(Rfc3339(absl::FromUnixSeconds(0)), "1970-01-01T00:00:00Z");
}

TEST(Output, TableAlignsColumns) {
  Table t({"NAME", "BYTES"}, {1});
  t.AddRow({"a", "5"});
  t.AddRow({"longer", "12345"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(), "NAME    BYTES\na           5\nlonger  12345\n");
}

TEST(Output, HumanBytes) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3.0 * (1 << 30)), "3.0 GiB");
  EXPECT_EQ(SignedHumanBytes(-2048), "-2.0 KiB");
  EXPECT_EQ(SignedHumanBytes(0), "0 B");
  EXPECT_EQ(Signed(5), "+5");
  EXPECT_EQ(Signed(-5), "-5");
}

TEST(Output, HumanDuration) {
  EXPECT_EQ(HumanDuration(absl::ZeroDuration()), "0s");
  EXPECT_EQ(HumanDuration(-absl::Seconds(3)), "0s");
  EXPECT_EQ(HumanDuration(absl::Milliseconds(400)), "0s");
  EXPECT_EQ(HumanDuration(absl::Milliseconds(600)), "1s");
  EXPECT_EQ(HumanDuration(absl::Seconds(45)), "45s");
  EXPECT_EQ(HumanDuration(absl::Seconds(130.4)), "2m10s");
  EXPECT_EQ(HumanDuration(absl::Seconds(3599.6)), "1h");  // rounds up into the next unit
  EXPECT_EQ(HumanDuration(absl::Hours(3) + absl::Seconds(1229)), "3h20m");
  EXPECT_EQ(HumanDuration(absl::Hours(3) + absl::Seconds(1231)), "3h21m");
  EXPECT_EQ(HumanDuration(absl::Hours(76) + absl::Minutes(29)), "76h");
  EXPECT_EQ(HumanDuration(absl::InfiniteDuration()), "inf");
}

class CtlTest : public heapwatch::testing::QueryFixture {
 protected:
  struct Result {
    int code;
    std::string out, err;
  };
  Result Run(std::vector<std::string> args, bool with_server = true) {
    args.insert(args.begin(), "heapwatchctl");
    if (with_server) args.insert(args.begin() + 1, {"--server", address_});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }
  static google::protobuf::Struct Json(const std::string& text) {
    google::protobuf::Struct s;
    auto status = google::protobuf::util::JsonStringToMessage(text, &s);
    EXPECT_TRUE(status.ok()) << text;
    return s;
  }
  static const google::protobuf::Value& At(const google::protobuf::Struct& s,
                                           const std::string& key) {
    static const google::protobuf::Value kMissing;
    auto it = s.fields().find(key);
    EXPECT_NE(it, s.fields().end()) << "missing key " << key;
    return it == s.fields().end() ? kMissing : it->second;
  }
};

TEST_F(CtlTest, AgentsJsonCarriesTheDocumentedFields) {
  Result r = Run({"agents", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto root = Json(r.out);
  const auto& agents = At(root, "agents").list_value().values();
  ASSERT_EQ(agents.size(), 2);
  const auto& live = agents[0].struct_value();
  EXPECT_EQ(At(live, "agent").string_value(), kLive.value);
  EXPECT_EQ(At(live, "pid").number_value(), 1);
  EXPECT_EQ(At(live, "host").string_value(), "host");
  EXPECT_EQ(At(live, "main_class").string_value(), "com.example.Leaky");
  EXPECT_EQ(At(live, "state").string_value(), "up");
  EXPECT_EQ(At(live, "kind").string_value(), "attach");
  EXPECT_EQ(At(live, "last_snapshot_time").string_value(), "2023-11-14T22:15:20Z");
  EXPECT_EQ(At(agents[1].struct_value(), "state").string_value(), "down");
  // Global flags also work before the subcommand.
  EXPECT_EQ(Run({"--json", "agents"}).out, r.out);
}

TEST_F(CtlTest, AgentsTable) {
  Result r = Run({"agents"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("AGENT"));
  EXPECT_THAT(r.out, HasSubstr("KIND"));
  EXPECT_THAT(r.out, HasSubstr(" attach "));
  EXPECT_THAT(r.out, HasSubstr("com.example.Leaky"));
  EXPECT_THAT(r.out, HasSubstr("down"));
}

// A registered agent's labels (Register.labels) are in `agents --json` and under the table.
TEST_F(CtlTest, AgentsShowTheLabelsOfARegisteredAgent) {
  ASSERT_TRUE(agents_.Update(kLive, [](daemon::AgentStatus& s) {
    s.info.kind = AgentKind::kRegistered;
    s.info.labels = {{"team", "core"}, {"env", "prod"}};
  }));
  Result r = Run({"agents", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto root = Json(r.out);
  const auto& live = At(root, "agents").list_value().values()[0].struct_value();
  EXPECT_EQ(At(live, "kind").string_value(), "registered");
  const auto& labels = At(live, "labels").struct_value();
  EXPECT_EQ(At(labels, "team").string_value(), "core");
  EXPECT_EQ(At(labels, "env").string_value(), "prod");
  r = Run({"agents"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(kLive.value + ": labels env=prod,team=core\n"));
}

// The daemon's heap exhaustion forecast (AgentStatus::heap_exhaustion) through the real ListAgents:
// the HEAP FULL IN column, the note under the table and `heap_exhaustion` in --json (latest end
// unbounded here).
TEST_F(CtlTest, AgentsShowTheHeapExhaustionForecast) {
  ASSERT_TRUE(agents_.Update(kLive, [](daemon::AgentStatus& s) {
    diff::HeapExhaustion f;
    f.estimate = absl::Seconds(130);
    f.soonest = absl::Seconds(110);
    f.latest = absl::InfiniteDuration();
    f.growth_bytes_per_second = 1 << 20;
    f.growth_low_bytes_per_second = -1024;
    f.growth_high_bytes_per_second = 1.25 * (1 << 20);
    f.live_bytes = 126 << 20;
    f.max_bytes = 256 << 20;
    f.computed_time = kT0 + absl::Seconds(120);
    f.points = 9;
    s.heap_exhaustion = f;
  }));
  Result r = Run({"agents"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("HEAP FULL IN"));
  EXPECT_THAT(r.out, HasSubstr("  2m10s (1m50s-never)  "));
  EXPECT_THAT(
      r.out,
      HasSubstr(kLive.value + ": heap full in ~2m10s (soonest 1m50s) at 1.0 MiB/s, live set "
                              "126.0 MiB of 256.0 MiB max, full about 2023-11-14 22:17:30Z (a line "
                              "through 9 live-set points up to 2023-11-14 22:15:20Z)\n"));
  r = Run({"agents", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto root = Json(r.out);
  const auto& agents = At(root, "agents").list_value().values();
  ASSERT_EQ(agents.size(), 2);
  const auto& f = At(agents[0].struct_value(), "heap_exhaustion").struct_value();
  EXPECT_EQ(At(f, "estimate_seconds").number_value(), 130);
  EXPECT_EQ(At(f, "soonest_seconds").number_value(), 110);
  EXPECT_FALSE(f.fields().contains("latest_seconds"));  // unbounded
  EXPECT_EQ(At(f, "growth_bytes_per_second").number_value(), 1 << 20);
  EXPECT_EQ(At(f, "growth_low_bytes_per_second").number_value(), -1024);
  EXPECT_EQ(At(f, "live_bytes").number_value(), 126 << 20);
  EXPECT_EQ(At(f, "max_bytes").number_value(), 256 << 20);
  EXPECT_EQ(At(f, "computed_time").string_value(), "2023-11-14T22:15:20Z");
  EXPECT_EQ(At(f, "points").number_value(), 9);
  EXPECT_FALSE(agents[1].struct_value().fields().contains("heap_exhaustion"));  // down, none
}

TEST_F(CtlTest, SuspectsJsonCarriesTheDocumentedFields) {
  Result r = Run({"suspects", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto root = Json(r.out);
  const auto& list = At(root, "suspects").list_value().values();
  ASSERT_EQ(list.size(), 1);
  const auto& s = list[0].struct_value();
  EXPECT_EQ(At(s, "agent").string_value(), kLive.value);
  EXPECT_EQ(At(s, "class").string_value(), "Leak");
  EXPECT_EQ(At(s, "bytes").number_value(), 3000);
  EXPECT_EQ(At(s, "instances").number_value(), 30);
  EXPECT_EQ(At(s, "growth_bytes_per_second").number_value(), 16.5);
  EXPECT_EQ(At(s, "score").number_value(), 0.9);
  EXPECT_EQ(At(s, "first_seen").string_value(), "2023-11-14T22:15:20Z");

  Result table = Run({"suspects"});
  EXPECT_THAT(table.out, HasSubstr("Leak"));
  EXPECT_THAT(table.out, HasSubstr("2.9 KiB"));
  Result filtered = Run({"suspects", "--agent", kDown.value});
  EXPECT_EQ(filtered.code, 0);
  EXPECT_THAT(filtered.out, HasSubstr("no leak suspects"));
  Result unknown = Run({"suspects", "--agent", "nobody"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND"));
}

TEST_F(CtlTest, HistoryJsonHasOnePointPerSnapshot) {
  Result r = Run({"history", kLive.value, "Leak", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto root = Json(r.out);
  EXPECT_EQ(At(root, "agent").string_value(), kLive.value);
  EXPECT_EQ(At(root, "class").string_value(), "Leak");
  const auto& points = At(root, "points").list_value().values();
  ASSERT_EQ(points.size(), 3);
  EXPECT_EQ(At(points[0].struct_value(), "time").string_value(), "2023-11-14T22:13:20Z");
  EXPECT_EQ(At(points[2].struct_value(), "bytes").number_value(), 3000);
  EXPECT_EQ(At(points[2].struct_value(), "instances").number_value(), 30);

  Result since = Run({"history", kLive.value, "Leak", "--since", "2023-11-14T22:14:00Z", "--json"});
  ASSERT_EQ(since.code, 0) << since.err;
  EXPECT_EQ(At(Json(since.out), "points").list_value().values().size(), 2);
  // Relative to now (2026+), 10m ago is after every stored snapshot.
  Result recent = Run({"history", kLive.value, "Leak", "--since", "10m", "--json"});
  ASSERT_EQ(recent.code, 0) << recent.err;
  EXPECT_EQ(At(Json(recent.out), "points").list_value().values().size(), 0);

  Result table = Run({"history", kLive.value, "Leak"});
  EXPECT_THAT(table.out, HasSubstr("3 snapshots"));
  EXPECT_THAT(table.out, HasSubstr("+1000 B"));
}

TEST_F(CtlTest, DiffDefaultAndExplicitTimes) {
  Result r = Run({"diff", kLive.value, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto root = Json(r.out);
  EXPECT_EQ(At(root, "from").string_value(), "2023-11-14T22:14:20Z");
  EXPECT_EQ(At(root, "to").string_value(), "2023-11-14T22:15:20Z");
  const auto& classes = At(root, "classes").list_value().values();
  ASSERT_EQ(classes.size(), 4);
  EXPECT_EQ(At(classes[0].struct_value(), "class").string_value(), "Leak");
  EXPECT_EQ(At(classes[0].struct_value(), "delta_bytes").number_value(), 1000);
  EXPECT_EQ(At(classes[3].struct_value(), "change").string_value(), "vanished");

  Result explicit_times = Run({"diff", kLive.value, "--from", "2023-11-14T22:13:20Z", "--to",
                               "2023-11-14T22:14:20Z", "--json"});
  ASSERT_EQ(explicit_times.code, 0) << explicit_times.err;
  EXPECT_EQ(At(Json(explicit_times.out), "from").string_value(), "2023-11-14T22:13:20Z");

  Result table = Run({"diff", kLive.value, "--max", "1"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Leak"));
  EXPECT_THAT(table.out, HasSubstr("3 more classes"));
}

TEST_F(CtlTest, ExitCodes) {
  EXPECT_EQ(Run({"history", "nobody", "Leak"}).code, 1);
  EXPECT_EQ(Run({"diff", kDown.value, "--to", "2023-11-14T22:13:20Z"}).code,
            1);                                      // one snapshot only
  EXPECT_EQ(Run({}).code, 2);                        // no subcommand
  EXPECT_EQ(Run({"history", kLive.value}).code, 2);  // missing CLASS
  EXPECT_EQ(Run({"bogus"}).code, 2);
  EXPECT_EQ(Run({"diff", kLive.value, "--from", "yesterday"}).code, 2);
  EXPECT_EQ(Run({"--timeout", "soon", "agents"}).code, 2);
  EXPECT_EQ(Run({"--help"}).code, 0);
  Result unreachable = Run({"--server", "127.0.0.1:1", "--timeout", "2s", "agents"}, false);
  EXPECT_EQ(unreachable.code, 1);
  EXPECT_THAT(unreachable.err, HasSubstr("UNAVAILABLE"));
}

}  // namespace
}  // namespace heapwatch::ctl
