// heapwatchctl's leak output (ctl/leak_output.h) on hand-built heapwatch.v1 messages: the JSON
// mapping of leaks and suspects, the leak and suspect tables and the `suspects --explain`
// rendering; then `leaks`, `suspects` and `suspects --explain` end to end through RunCtl against a
// small QueryService on loopback that serves only ListLeaks, ListSuspects and ExplainSuspect with
// the hand-built messages (the daemon's own ListLeaks / ExplainSuspect are tested in tests/daemon).
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ctl/ctl.h"
#include "ctl/leak_output.h"
#include "ctl/output.h"
#include "ctl/suspect_table.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);  // 2023-11-14 22:13:20Z

void AddClass(v1::Leak* leak, const std::string& name, uint64_t bytes, double growth) {
  v1::LeakClass* c = leak->add_classes();
  c->set_class_name(name);
  c->set_bytes(bytes);
  c->set_growth_bytes_per_second(growth);
}

// A leak of com.example.Session with three JDK companions, flagged on the 2m8s scale.
v1::Leak SessionLeak() {
  v1::Leak l;
  l.set_agent("vm-1-a");
  l.set_leak("L0123456789ab");
  l.set_main_class("com.example.Session");
  AddClass(&l, "byte[]", 8 << 20, 2048);
  AddClass(&l, "com.example.Session", 3 << 20, 1024);
  AddClass(&l, "java.lang.String", 2 << 20, 512);
  AddClass(&l, "java.lang.Long", 1 << 20, 256);
  l.set_bytes(14 << 20);
  l.set_growth_bytes_per_second(3840);
  l.set_score(0.875);
  proto::ToTimestamp(kT0 + absl::Seconds(120), l.mutable_first_seen());
  proto::ToDuration(absl::Seconds(128), l.mutable_time_scale());
  proto::ToTimestamp(kT0 + absl::Seconds(600), l.mutable_last_snapshot_time());
  return l;
}

// A one-class leak on the every-snapshot scale whose accumulation point a report named.
v1::Leak CacheLeak() {
  v1::Leak l;
  l.set_agent("vm-2-b");
  l.set_leak("Lfedcba987654");
  l.set_main_class("com.example.Cache$Entry");
  AddClass(&l, "com.example.Cache$Entry", 5000, 10);
  l.set_bytes(5000);
  l.set_growth_bytes_per_second(10);
  l.set_score(0.5);
  proto::ToTimestamp(kT0, l.mutable_first_seen());
  // time_scale left unset: 0, every snapshot.
  l.set_accumulation_point("java.util.concurrent.ConcurrentHashMap");
  l.set_dump_id("20231114T221320.000000Z");
  return l;
}

// A forecast consistent with itself: (512 MiB - 247.4 MiB) / 955.3 KiB/s = 284 s; the interval's
// slopes 1,150,000 and 800,000 B/s give 241 s and 347 s.
v1::HeapExhaustion Forecast() {
  v1::HeapExhaustion f;
  proto::ToDuration(absl::Seconds(284), f.mutable_estimate());
  proto::ToDuration(absl::Seconds(241), f.mutable_soonest());
  proto::ToDuration(absl::Seconds(347), f.mutable_latest());
  f.set_growth_bytes_per_second(978'227);  // 955.3 KiB/s
  f.set_growth_low_bytes_per_second(800'000);
  f.set_growth_high_bytes_per_second(1'150'000);
  f.set_live_bytes(259'417'702);  // 247.4 MiB
  f.set_max_bytes(512 << 20);
  proto::ToTimestamp(kT0 + absl::Seconds(600), f.mutable_computed_time());
  f.set_points(14);
  return f;
}

// The live set of vm-4-d grows but no histogram named its classes yet: a leak of kind "heap".
v1::Leak HeapLeak() {
  v1::Leak l;
  l.set_agent("vm-4-d");
  l.set_leak("L00000000beef");
  l.set_kind("heap");
  l.set_detail("the live set grows 955.3 KiB/s (now 247.4 MiB); its classes are not named yet");
  l.set_bytes(259'417'702);
  l.set_growth_bytes_per_second(978'227);
  l.set_score(0.97);
  proto::ToTimestamp(kT0 + absl::Seconds(300), l.mutable_first_seen());
  proto::ToTimestamp(kT0 + absl::Seconds(600), l.mutable_last_snapshot_time());
  *l.mutable_heap_exhaustion() = Forecast();
  return l;
}

v1::Suspect SessionSuspect() {
  v1::Suspect s;
  s.set_agent("vm-1-a");
  s.set_class_name("com.example.Session");
  s.set_score(0.875);
  proto::ToTimestamp(kT0 + absl::Seconds(120), s.mutable_first_seen());
  s.set_growth_bytes_per_second(1024);
  s.set_growth_instances_per_second(32);
  s.set_bytes(3 << 20);
  s.set_instances(98304);
  proto::ToTimestamp(kT0 + absl::Seconds(600), s.mutable_last_snapshot_time());
  s.set_leak("L0123456789ab");
  proto::ToDuration(absl::Seconds(128), s.mutable_time_scale());
  return s;
}

v1::TrendTest Test(const std::string& name, double value, const std::string& op, double threshold,
                   bool pass, const std::string& unit) {
  v1::TrendTest t;
  t.set_test(name);
  t.set_value(value);
  t.set_op(op);
  t.set_threshold(threshold);
  t.set_pass(pass);
  t.set_unit(unit);
  return t;
}

// com.example.Session: not a suspect on every snapshot (B rate and D fail), not evaluated on 4s, a
// suspect on 2m8s; the cycle veto passes.
v1::ExplainSuspectResponse SessionExplanation() {
  v1::ExplainSuspectResponse e;
  e.set_agent("vm-1-a");
  e.set_class_name("com.example.Session");
  e.set_known(true);
  e.set_suspect(true);
  e.set_leak("L0123456789ab");
  v1::TrendScale* every = e.add_scales();
  proto::ToDuration(absl::ZeroDuration(), every->mutable_time_scale());
  every->set_window_size(12);
  every->set_min_window(8);
  *every->add_tests() = Test("A significance", 0.00012, "<=", 0.002, true, "p");
  *every->add_tests() = Test("B growth", 3 << 20, ">=", 1 << 20, true, "bytes");
  *every->add_tests() = Test("B relative growth", 0.25, ">=", 0.1, true, "fraction");
  *every->add_tests() = Test("B rate", -512, ">=", 256, false, "bytes/s");
  *every->add_tests() = Test("C sustained", 1.2, ">=", 0.25, true, "");
  *every->add_tests() = Test("D still growing", 0.125, ">=", 0.25, false, "fraction");
  v1::TrendScale* fine = e.add_scales();
  proto::ToDuration(absl::Seconds(4), fine->mutable_time_scale());
  fine->set_window_size(3);
  fine->set_min_window(8);
  fine->set_not_evaluated("window has 3 of 8 buckets");
  v1::TrendScale* coarse = e.add_scales();
  proto::ToDuration(absl::Seconds(128), coarse->mutable_time_scale());
  coarse->set_suspect(true);
  coarse->set_window_size(24);
  coarse->set_min_window(8);
  *coarse->add_tests() = Test("A significance", 1e-7, "<=", 0.002, true, "p");
  *coarse->add_tests() = Test("B growth", 2.5 * (1 << 20), ">=", 1 << 20, true, "bytes");
  *e.mutable_cycle_veto() = Test("cycle veto", 3 << 20, ">", 2 << 20, true, "bytes");
  return e;
}

nlohmann::json AsJson(const google::protobuf::Message& m) {
  std::ostringstream out;
  EXPECT_TRUE(PrintJson(m, out).ok());
  return nlohmann::json::parse(out.str());
}

TEST(LeakJson, ClassesAreNamesAndDetailsGoUnderClassGrowth) {
  nlohmann::json j = AsJson(LeakToJson(SessionLeak()));
  EXPECT_EQ(j["agent"], "vm-1-a");
  EXPECT_EQ(j["leak"], "L0123456789ab");
  EXPECT_EQ(j["main_class"], "com.example.Session");
  EXPECT_EQ(j["classes"], nlohmann::json::array({"byte[]", "com.example.Session",
                                                 "java.lang.String", "java.lang.Long"}));
  EXPECT_EQ(j["bytes"], 14 << 20);
  EXPECT_EQ(j["growth_bytes_per_second"], 3840);
  EXPECT_EQ(j["score"], 0.875);
  EXPECT_EQ(j["first_seen"], "2023-11-14T22:15:20Z");
  EXPECT_EQ(j["last_snapshot_time"], "2023-11-14T22:23:20Z");
  EXPECT_EQ(j["time_scale"], "128s");
  EXPECT_FALSE(j.contains("accumulation_point")) << j.dump();  // no report yet
  EXPECT_FALSE(j.contains("dump_id")) << j.dump();
  ASSERT_EQ(j["class_growth"].size(), 4u);
  EXPECT_EQ(j["class_growth"][1],
            nlohmann::json({{"class", "com.example.Session"},
                            {"bytes", 3 << 20},
                            {"growth_bytes_per_second", 1024}}));
  EXPECT_EQ(j["class_growth"][3]["class"], "java.lang.Long");
}

TEST(LeakJson, AccumulationPointOnceAReportNamesItAndScaleZero) {
  nlohmann::json j = AsJson(LeakToJson(CacheLeak()));
  EXPECT_EQ(j["accumulation_point"], "java.util.concurrent.ConcurrentHashMap");
  EXPECT_EQ(j["dump_id"], "20231114T221320.000000Z");
  EXPECT_EQ(j["classes"], nlohmann::json::array({"com.example.Cache$Entry"}));
  EXPECT_EQ(j["time_scale"], "0s");  // every snapshot, present even when the server left it unset
  EXPECT_FALSE(j.contains("last_snapshot_time"));  // unknown: omitted
}

TEST(LeakJson, HeapLeakCarriesKindDetailAndForecast) {
  nlohmann::json j = AsJson(LeakToJson(HeapLeak()));
  EXPECT_EQ(j["kind"], "heap");
  EXPECT_EQ(j["main_class"], "");  // as the server sends it: no class is named yet
  EXPECT_EQ(j["classes"], nlohmann::json::array());
  EXPECT_EQ(j["class_growth"], nlohmann::json::array());
  EXPECT_EQ(j["detail"], HeapLeak().detail());
  EXPECT_EQ(j["bytes"], 259'417'702);
  EXPECT_EQ(j["heap_exhaustion"], nlohmann::json({{"estimate_seconds", 284},
                                                  {"soonest_seconds", 241},
                                                  {"latest_seconds", 347},
                                                  {"growth_bytes_per_second", 978'227},
                                                  {"growth_low_bytes_per_second", 800'000},
                                                  {"growth_high_bytes_per_second", 1'150'000},
                                                  {"live_bytes", 259'417'702},
                                                  {"max_bytes", 512 << 20},
                                                  {"computed_time", "2023-11-14T22:23:20Z"},
                                                  {"points", 14}}))
      << j.dump();
  // An unbounded latest end is absent, not 0.
  v1::HeapExhaustion unbounded = Forecast();
  unbounded.clear_latest();
  nlohmann::json u = AsJson(HeapExhaustionToJson(unbounded));
  EXPECT_FALSE(u.contains("latest_seconds")) << u.dump();
  EXPECT_EQ(u["soonest_seconds"], 241);
  // A leak without a forecast has no heap_exhaustion key.
  EXPECT_FALSE(AsJson(LeakToJson(SessionLeak())).contains("heap_exhaustion"));
}

TEST(LeakJson, SuspectCarriesLeakAndTimeScale) {
  nlohmann::json j = AsJson(SuspectToJson(SessionSuspect()));
  EXPECT_EQ(j["agent"], "vm-1-a");
  EXPECT_EQ(j["class"], "com.example.Session");
  EXPECT_EQ(j["bytes"], 3 << 20);
  EXPECT_EQ(j["instances"], 98304);
  EXPECT_EQ(j["growth_instances_per_second"], 32);
  EXPECT_EQ(j["leak"], "L0123456789ab");
  EXPECT_EQ(j["time_scale"], "128s");
  EXPECT_EQ(j["first_seen"], "2023-11-14T22:15:20Z");

  v1::Suspect bare = SessionSuspect();
  bare.clear_leak();
  bare.clear_time_scale();
  nlohmann::json b = AsJson(SuspectToJson(bare));
  EXPECT_EQ(b["leak"], "");
  EXPECT_EQ(b["time_scale"], "0s");
}

TEST(LeakTable, OneRowPerLeakThenItsClassesIndented) {
  json::LeakList list;
  *list.add_leaks() = LeakToJson(SessionLeak());
  *list.add_leaks() = LeakToJson(CacheLeak());
  std::ostringstream out;
  PrintLeakTable(list.leaks(), out);
  const std::string text = out.str();
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 5 + 2) << text;
  EXPECT_THAT(lines[0], ContainsRegex("^AGENT +LEAK +CLASS +BYTES +GROWTH/S +GROWTH/H +SCORE +SCALE +"
                                      "FIRST SEEN +ACCUMULATION POINT$"));
  EXPECT_THAT(lines[1], ContainsRegex("^vm-1-a +L0123456789ab +com\\.example\\.Session \\(4 classes\\) +"
                                      "14\\.0 MiB +\\+3\\.8 KiB +\\+13\\.2 MiB +0\\.88 +2m8s +"
                                      "2023-11-14 22:15:20Z +-$"));
  EXPECT_THAT(lines[2], ContainsRegex("^ +  byte\\[\\] +8\\.0 MiB +\\+2\\.0 KiB +\\+7\\.0 MiB$"));
  EXPECT_THAT(lines[3], ContainsRegex("^ +  com\\.example\\.Session +3\\.0 MiB +\\+1\\.0 KiB"));
  EXPECT_THAT(lines[5], ContainsRegex("^ +  java\\.lang\\.Long +1\\.0 MiB +\\+256 B"));
  EXPECT_THAT(lines[6], ContainsRegex("^vm-2-b +Lfedcba987654 +com\\.example\\.Cache\\$Entry \\(1 class\\) "
                                      ".* every snapshot +2023-11-14 22:13:20Z +"
                                      "java\\.util\\.concurrent\\.ConcurrentHashMap$"));
  // Class rows line up under the CLASS column.
  EXPECT_EQ(lines[2].find("  byte[]"), lines[0].find("CLASS"));

  std::ostringstream none;
  PrintLeakTable(json::LeakList().leaks(), none);
  EXPECT_EQ(none.str(), "no leaks\n");
}

TEST(LeakTable, HeapLeakReadsAsTheLiveSetWithItsDetailAndForecastUnderIt) {
  json::LeakList list;
  *list.add_leaks() = LeakToJson(HeapLeak());
  v1::Leak named = SessionLeak();  // a class leak that took over the live set's growth
  *named.mutable_heap_exhaustion() = Forecast();
  *list.add_leaks() = LeakToJson(named);
  std::ostringstream out;
  PrintLeakTable(list.leaks(), out);
  const std::string text = out.str();
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u + 3 + 2 + 4) << text;
  EXPECT_THAT(lines[1],
              ContainsRegex("^vm-4-d +L00000000beef +live set \\(classes not named yet\\) +"
                            "247\\.4 MiB +\\+955\\.3 KiB +\\+3\\.3 GiB +0\\.97 +every snapshot +"
                            "2023-11-14 22:18:20Z +-$"))
      << text;
  EXPECT_THAT(text, Not(HasSubstr("(0 classes)")));
  EXPECT_THAT(text, Not(HasSubstr(" ()")));
  // The detail and the forecast start where the class rows' names do, and do not widen CLASS.
  const std::string indent(lines[0].find("CLASS") + 2, ' ');
  EXPECT_EQ(lines[2], indent + HeapLeak().detail()) << text;
  EXPECT_EQ(lines[3],
            indent +
                "heap full in ~4m44s (soonest 4m1s) at 955.3 KiB/s, live set 247.4 MiB of "
                "512.0 MiB max")
      << text;
  EXPECT_LT(lines[0].find("BYTES"), indent.size() + HeapLeak().detail().size());
  // A class leak with the forecast: the forecast line between its row and its classes.
  EXPECT_THAT(lines[4],
              ContainsRegex("^vm-1-a +L0123456789ab +com\\.example\\.Session \\(4 classes\\)"));
  EXPECT_EQ(lines[5], lines[3]);
  EXPECT_THAT(lines[6], ContainsRegex("^ +  byte\\[\\] +8\\.0 MiB"));
  EXPECT_EQ(lines[6].find("  byte[]"), lines[0].find("CLASS"));
}

TEST(HeapForecast, CellAndLine) {
  const json::HeapExhaustion f = HeapExhaustionToJson(Forecast());
  EXPECT_EQ(HeapFullIn(f), "4m44s (4m1s-5m47s)");
  EXPECT_EQ(
      HeapForecastLine(f),
      "heap full in ~4m44s (soonest 4m1s) at 955.3 KiB/s, live set 247.4 MiB of 512.0 MiB max");
  v1::HeapExhaustion unbounded = Forecast();
  unbounded.clear_latest();
  EXPECT_EQ(HeapFullIn(HeapExhaustionToJson(unbounded)), "4m44s (4m1s-never)");
  // Long forecasts are rounded to minutes, then to hours; an estimate of 0 (already at the
  // maximum).
  v1::HeapExhaustion slow = Forecast();
  proto::ToDuration(absl::Hours(5) + absl::Seconds(1234), slow.mutable_estimate());
  proto::ToDuration(absl::Hours(3) + absl::Seconds(29), slow.mutable_soonest());
  proto::ToDuration(absl::Hours(80) + absl::Minutes(31), slow.mutable_latest());
  EXPECT_EQ(HeapFullIn(HeapExhaustionToJson(slow)), "5h21m (3h-81h)");
  v1::HeapExhaustion full = Forecast();
  full.mutable_estimate()->Clear();
  full.mutable_soonest()->Clear();
  EXPECT_EQ(HeapFullIn(HeapExhaustionToJson(full)), "0s (0s-5m47s)");
}

TEST(LeakTable, SuspectTableShowsScaleAndLeak) {
  json::SuspectList list;
  *list.add_suspects() = SuspectToJson(SessionSuspect());
  v1::Suspect bare = SessionSuspect();
  bare.set_class_name("com.example.Other");
  bare.clear_leak();
  bare.clear_time_scale();
  *list.add_suspects() = SuspectToJson(bare);
  std::ostringstream out;
  PrintSuspectTable(list.suspects(), out);
  EXPECT_THAT(out.str(), ContainsRegex("SCORE +SCALE +LEAK +FIRST SEEN\n"));
  EXPECT_THAT(out.str(), ContainsRegex("com\\.example\\.Session .* 0\\.88 +2m8s +L0123456789ab +"
                                       "2023-11-14 22:15:20Z\n"));
  EXPECT_THAT(out.str(), ContainsRegex("com\\.example\\.Other .* 0\\.88 +every snapshot +- +"
                                       "2023-11-14 22:15:20Z\n"));
}

TEST(TimeScale, Names) {
  EXPECT_EQ(TimeScaleName(absl::ZeroDuration()), "every snapshot");
  EXPECT_EQ(TimeScaleName(absl::Seconds(4)), "4s");
  EXPECT_EQ(TimeScaleName(absl::Seconds(128)), "2m8s");
  EXPECT_EQ(TimeScaleName(absl::Seconds(4 << 12)), "4h33m4s");
  google::protobuf::Duration d;
  EXPECT_EQ(TimeScaleName(d), "every snapshot");
  d.set_seconds(8);
  EXPECT_EQ(TimeScaleName(d), "8s");
}

TEST(Explanation, PerScaleHeaderAndOneLinePerTest) {
  const std::string text = RenderExplanation(SessionExplanation());
  EXPECT_THAT(text, HasSubstr("com.example.Session in vm-1-a: a leak suspect (leak L0123456789ab)\n"));
  EXPECT_THAT(text, ContainsRegex("\nCycle veto [^\n]*: 3\\.0 MiB > 2\\.0 MiB: PASS \\(bytes\\)\n"));
  EXPECT_THAT(text, HasSubstr("Scale every snapshot: not a suspect, window 12/8 snapshots\n"));
  EXPECT_THAT(text, ContainsRegex("\n  TEST +VALUE +OP +THRESHOLD +RESULT +UNIT\n"));
  EXPECT_THAT(text, ContainsRegex("\n  A significance +0\\.00012 +<= +0\\.002 +PASS +p\n"));
  EXPECT_THAT(text, ContainsRegex("\n  B growth +3\\.0 MiB +>= +1\\.0 MiB +PASS +bytes\n"));
  EXPECT_THAT(text, ContainsRegex("\n  B relative growth +0\\.25 +>= +0\\.1 +PASS +fraction\n"));
  EXPECT_THAT(text, ContainsRegex("\n  B rate +-512 B/s +>= +256 B/s +FAIL +bytes/s\n"));
  EXPECT_THAT(text, ContainsRegex("\n  C sustained +1\\.2 +>= +0\\.25 +PASS\n"));  // no unit
  EXPECT_THAT(text, ContainsRegex("\n  D still growing +0\\.125 +>= +0\\.25 +FAIL +fraction\n"));
  EXPECT_THAT(text, HasSubstr("Scale 4s: not evaluated (window has 3 of 8 buckets), window 3/8 "
                              "buckets\n"));
  EXPECT_THAT(text, HasSubstr("Scale 2m8s: suspect, window 24/8 buckets\n"));
  EXPECT_THAT(text, ContainsRegex("\n  A significance +1e-07 +<= +0\\.002 +PASS +p\n"));
  // Scales in the server's order, each followed by its own tests.
  const size_t every = text.find("Scale every snapshot"), fine = text.find("Scale 4s"),
               coarse = text.find("Scale 2m8s");
  EXPECT_LT(every, text.find("D still growing"));
  EXPECT_LT(text.find("D still growing"), fine);
  EXPECT_LT(fine, coarse);
  EXPECT_LT(coarse, text.rfind("A significance"));
}

TEST(Explanation, NotASuspectAndUnknownClass) {
  v1::ExplainSuspectResponse e = SessionExplanation();
  e.set_suspect(false);
  e.clear_leak();
  e.mutable_scales(2)->set_suspect(false);
  e.clear_cycle_veto();
  std::string text = RenderExplanation(e);
  EXPECT_THAT(text, HasSubstr("com.example.Session in vm-1-a: not a leak suspect\n"));
  EXPECT_THAT(text, HasSubstr("Scale 2m8s: not a suspect, window 24/8 buckets\n"));
  EXPECT_THAT(text, Not(HasSubstr("Cycle veto")));

  v1::ExplainSuspectResponse unknown;
  unknown.set_agent("vm-1-a");
  unknown.set_class_name("com.example.Nothing");
  unknown.add_scales()->set_not_evaluated("no history for the class on this scale");
  EXPECT_EQ(RenderExplanation(unknown),
            "com.example.Nothing in vm-1-a: no history for this class (it was in no histogram the "
            "detector saw)\n");
}

// ---- the commands over gRPC ----

// A QueryService that serves the hand-built messages above and remembers the requests.
class FakeQueryService final : public v1::QueryService::Service {
 public:
  grpc::Status ListLeaks(grpc::ServerContext*, const v1::ListLeaksRequest* request,
                         v1::ListLeaksResponse* response) override {
    leaks_agent = request->agent();
    if (request->agent() == "nobody") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown agent nobody");
    }
    if (request->agent().empty() || request->agent() == "vm-1-a") {
      *response->add_leaks() = SessionLeak();
    }
    if (request->agent().empty() || request->agent() == "vm-2-b") {
      *response->add_leaks() = CacheLeak();
    }
    if (request->agent() == "vm-4-d") *response->add_leaks() = HeapLeak();
    return grpc::Status::OK;
  }
  // vm-4-d up with a growing live set and its forecast, vm-1-a up without one, vm-9-z down.
  grpc::Status ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                          v1::ListAgentsResponse* response) override {
    v1::Agent* growing = response->add_agents();
    growing->set_agent("vm-4-d");
    growing->set_state(v1::AGENT_STATE_UP);
    growing->set_main_class("com.example.Grows");
    growing->mutable_live_set()->set_live_bytes(259'417'702);
    growing->mutable_live_set()->set_max_bytes(512 << 20);
    growing->set_live_set_growth_bytes_per_second(978'227);
    proto::ToTimestamp(kT0 + absl::Seconds(300), growing->mutable_live_set_growing_since_time());
    *growing->mutable_heap_exhaustion() = Forecast();
    v1::Agent* steady = response->add_agents();
    steady->set_agent("vm-1-a");
    steady->set_state(v1::AGENT_STATE_UP);
    steady->mutable_live_set()->set_live_bytes(64 << 20);
    v1::Agent* down = response->add_agents();
    down->set_agent("vm-9-z");
    down->set_state(v1::AGENT_STATE_DOWN);
    return grpc::Status::OK;
  }
  grpc::Status ListSuspects(grpc::ServerContext*, const v1::ListSuspectsRequest*,
                            v1::ListSuspectsResponse* response) override {
    *response->add_suspects() = SessionSuspect();
    return grpc::Status::OK;
  }
  grpc::Status ExplainSuspect(grpc::ServerContext*, const v1::ExplainSuspectRequest* request,
                              v1::ExplainSuspectResponse* response) override {
    explain_agent = request->agent();
    explain_class = request->class_name();
    if (request->agent() != "vm-1-a") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown agent " + request->agent());
    }
    *response = SessionExplanation();
    response->set_class_name(request->class_name());
    return grpc::Status::OK;
  }

  std::string leaks_agent, explain_agent, explain_class;
};

class LeakCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  struct Result {
    int code;
    std::string out;
    std::string err;
  };
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"heapwatchctl", "--server", "127.0.0.1:" + std::to_string(port_)});
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }

  FakeQueryService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(LeakCommandsTest, LeaksJsonHasTheDocumentedFields) {
  Result r = Run({"leaks", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(service_.leaks_agent, "");
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["leaks"].size(), 2u) << r.out;
  const nlohmann::json& l = j["leaks"][0];
  for (const char* key : {"agent", "leak", "main_class", "classes", "bytes",
                          "growth_bytes_per_second", "score", "first_seen", "time_scale",
                          "class_growth", "last_snapshot_time"}) {
    EXPECT_TRUE(l.contains(key)) << key;
  }
  EXPECT_EQ(l["classes"][0], "byte[]");
  EXPECT_FALSE(l.contains("accumulation_point"));
  EXPECT_EQ(j["leaks"][1]["accumulation_point"], "java.util.concurrent.ConcurrentHashMap");
  // The same as the mapping of the server's messages.
  EXPECT_EQ(l, AsJson(LeakToJson(SessionLeak())));
}

TEST_F(LeakCommandsTest, LeaksTableAndAgentFilterAndErrors) {
  Result r = Run({"leaks", "--agent", "vm-2-b"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(service_.leaks_agent, "vm-2-b");
  EXPECT_THAT(r.out, HasSubstr("Lfedcba987654"));
  EXPECT_THAT(r.out, Not(HasSubstr("L0123456789ab")));
  EXPECT_THAT(r.out, HasSubstr("com.example.Cache$Entry (1 class)"));

  Result none = Run({"leaks", "--agent", "vm-3-c"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "no leaks\n");

  Result unknown = Run({"leaks", "--agent", "nobody"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("ListLeaks on 127.0.0.1:"));
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND: unknown agent nobody"));
}

TEST_F(LeakCommandsTest, HeapLeakTableAndJson) {
  Result r = Run({"leaks", "--agent", "vm-4-d"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              ContainsRegex("\nvm-4-d +L00000000beef +live set \\(classes not named yet\\) "));
  EXPECT_THAT(r.out,
              ContainsRegex("\n +the live set grows 955\\.3 KiB/s \\(now 247\\.4 MiB\\); its "
                            "classes are not named yet\n"));
  EXPECT_THAT(r.out,
              ContainsRegex("\n +heap full in ~4m44s \\(soonest 4m1s\\) at 955\\.3 KiB/s, live "
                            "set 247\\.4 MiB of 512\\.0 MiB max\n$"));
  Result j = Run({"leaks", "--agent", "vm-4-d", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json l = nlohmann::json::parse(j.out)["leaks"][0];
  EXPECT_EQ(l, AsJson(LeakToJson(HeapLeak())));
  EXPECT_EQ(l["kind"], "heap");
  EXPECT_EQ(l["heap_exhaustion"]["estimate_seconds"], 284);
  EXPECT_EQ(l["heap_exhaustion"]["latest_seconds"], 347);
}

TEST_F(LeakCommandsTest, AgentsShowTheForecast) {
  Result r = Run({"agents"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u) << r.out;
  const size_t column = lines[0].find("HEAP FULL IN");
  ASSERT_NE(column, std::string::npos) << r.out;
  EXPECT_THAT(lines[0], ContainsRegex(" LIVE SET  HEAP FULL IN +LAST ERROR$"));
  EXPECT_THAT(lines[1], ContainsRegex("^vm-4-d .* 247\\.4 MiB  4m44s \\(4m1s-5m47s\\) *$"))
      << r.out;
  EXPECT_EQ(lines[1].find("4m44s"), column);
  EXPECT_THAT(lines[2].substr(column), ContainsRegex("^- *$")) << r.out;  // no forecast
  EXPECT_THAT(lines[3].substr(column), ContainsRegex("^- *$")) << r.out;  // down
  EXPECT_THAT(r.out, HasSubstr("\nvm-4-d: the live set keeps growing, 955.3 KiB/s since "
                               "2023-11-14 22:18:20Z\n"));
  EXPECT_THAT(r.out,
              HasSubstr("\nvm-4-d: heap full in ~4m44s (soonest 4m1s) at 955.3 KiB/s, live set "
                        "247.4 MiB of 512.0 MiB max, full about 2023-11-14 22:28:04Z (a line "
                        "through 14 live-set points up to 2023-11-14 22:23:20Z)\n"));

  Result j = Run({"agents", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json agents = nlohmann::json::parse(j.out)["agents"];
  ASSERT_EQ(agents.size(), 3u);
  EXPECT_EQ(agents[0]["heap_exhaustion"], AsJson(HeapExhaustionToJson(Forecast())));
  EXPECT_EQ(agents[0]["heap_exhaustion"]["estimate_seconds"], 284);
  EXPECT_EQ(agents[0]["heap_exhaustion"]["computed_time"], "2023-11-14T22:23:20Z");
  EXPECT_FALSE(agents[1].contains("heap_exhaustion")) << agents[1].dump();
  EXPECT_FALSE(agents[2].contains("heap_exhaustion")) << agents[2].dump();
}

TEST_F(LeakCommandsTest, SuspectsShowLeakAndScale) {
  Result r = Run({"suspects"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, ContainsRegex("2m8s +L0123456789ab"));
  Result j = Run({"suspects", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json s = nlohmann::json::parse(j.out)["suspects"][0];
  EXPECT_EQ(s["leak"], "L0123456789ab");
  EXPECT_EQ(s["time_scale"], "128s");
}

TEST_F(LeakCommandsTest, SuspectsExplainAsksForTheClassAndRendersTheAnswer) {
  Result r = Run({"suspects", "--explain", "vm-1-a", "com.example.Session"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(service_.explain_agent, "vm-1-a");
  EXPECT_EQ(service_.explain_class, "com.example.Session");
  EXPECT_EQ(r.out, RenderExplanation(SessionExplanation()));

  Result j = Run({"suspects", "--explain", "vm-1-a", "com.example.Session", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json e = nlohmann::json::parse(j.out);
  EXPECT_EQ(e, AsJson(SessionExplanation()));  // the response itself
  EXPECT_EQ(e["scales"][1]["time_scale"], "4s");
  EXPECT_EQ(e["scales"][0]["tests"][5]["test"], "D still growing");
  EXPECT_EQ(e["scales"][0]["tests"][5]["pass"], false);

  Result unknown = Run({"suspects", "--explain", "nobody", "X"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("ExplainSuspect on 127.0.0.1:"));
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND"));

  EXPECT_EQ(Run({"suspects", "--explain", "vm-1-a"}).code, 2);  // CLASS missing
  EXPECT_EQ(Run({"suspects", "--agent", "vm-2-b", "--explain", "vm-1-a", "X"}).code, 2);
}

TEST_F(LeakCommandsTest, OlderServerWithoutListLeaksIsAClearError) {
  // A server that registers no ListLeaks answers UNIMPLEMENTED with no message.
  class Old final : public v1::QueryService::Service {};
  Old old;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&old);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const char* argv[] = {"heapwatchctl", "--server", address.c_str(), "leaks"};
  std::ostringstream out, err;
  EXPECT_EQ(RunCtl(4, argv, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("ListLeaks on " + address + " failed: UNIMPLEMENTED"));
  server->Shutdown();
}

}  // namespace
}  // namespace heapwatch::ctl
