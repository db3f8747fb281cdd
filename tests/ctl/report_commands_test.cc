// heapwatchctl's extended-dump subcommands (ctl/report_commands.h): the text renderers on
// hand-built heapwatch.v1 messages, the `dump --wait` polling loop on a FakeClock, and the
// commands' gRPC error path and usage errors against the real QueryServer
// (tests/daemon/query_fixture.h). report_server_test.cc runs them against a server with escalation.
#include "ctl/report_commands.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "ctl/ctl.h"
#include "ctl/output.h"
#include "ctl/rpc.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/time_util.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);  // 2023-11-14 22:13:20Z

v1::HeapObject Object(uint64_t id, const std::string& cls, uint64_t shallow, uint64_t retained,
                      const std::string& root_kind = "") {
  v1::HeapObject o;
  o.set_object_id(id);
  o.set_class_name(cls);
  o.set_shallow_bytes(shallow);
  o.set_retained_bytes(retained);
  o.set_gc_root_kind(root_kind);
  return o;
}

void AddStep(v1::GcRootPath* path, const std::string& reference, v1::HeapObject object,
             bool weak = false) {
  v1::PathStep* step = path->add_steps();
  step->set_reference(reference);
  step->set_weak(weak);
  *step->mutable_object() = std::move(object);
}

// sticky class com.example.App -static SESSIONS-> ArrayList -field elementData-> Object[]
v1::GcRootPath SessionsPath() {
  v1::GcRootPath path;
  path.set_found(true);
  path.set_strong(true);
  AddStep(&path, "", Object(0x1000, "com.example.App", 120, 5'600'000, "sticky class"));
  AddStep(&path, "static SESSIONS", Object(0x2000, "java.util.ArrayList", 24, 5'557'452));
  AddStep(&path, "field elementData", Object(0x3000, "java.lang.Object[]", 4096, 5'557'400));
  return path;
}

v1::ExtendedDump Dump(const std::string& id, v1::ExtendedDumpState state) {
  v1::ExtendedDump d;
  d.set_agent("vm-1-a");
  d.set_dump_id(id);
  d.set_state(state);
  d.set_trigger(v1::EXTENDED_DUMP_TRIGGER_SUSPECT);
  proto::ToTimestamp(kT0, d.mutable_requested_time());
  return d;
}

v1::ExtendedDumpDiff Diff() {
  v1::ExtendedDumpDiff diff;
  diff.set_agent("vm-1-a");
  diff.set_from_dump("20231114T220000.000000Z");
  diff.set_to_dump("20231114T221320.000000Z");
  proto::ToTimestamp(kT0 - absl::Seconds(800), diff.mutable_from_time());
  proto::ToTimestamp(kT0, diff.mutable_to_time());
  diff.set_before_reachable_bytes(10 << 20);
  diff.set_after_reachable_bytes(15 << 20);
  diff.set_delta_reachable_bytes(5 << 20);
  for (int i = 0; i < 3; ++i) {
    v1::ExtendedDumpClassDelta* c = diff.add_classes();
    c->set_class_name(i == 0 ? "com.example.Session" : absl::StrCat("com.example.Other", i));
    c->set_change(v1::CLASS_CHANGE_CHANGED);
    c->set_after_instances(1000);
    c->set_delta_instances(i == 0 ? 600 : 1);
    c->set_after_shallow_bytes(32'000);
    c->set_delta_shallow_bytes(i == 0 ? 19'200 : 32);
    c->set_after_retained_bytes(5'000'000);
    c->set_delta_retained_bytes(i == 0 ? 3 << 20 : 32);
  }
  diff.set_class_count(40);
  v1::OwnerDelta* owner = diff.add_owners();
  owner->set_class_name("java.util.ArrayList");
  owner->add_path("sticky class com.example.App");
  owner->add_path("static SESSIONS");
  owner->set_before_retained_bytes(2 << 20);
  owner->set_after_retained_bytes(5 << 20);
  owner->set_delta_retained_bytes(3 << 20);
  owner->set_before_objects(1);
  owner->set_after_objects(1);
  diff.set_owner_count(1);
  v1::OwnerClassDelta* owner_class = diff.add_owner_classes();
  owner_class->set_class_name("java.util.ArrayList");
  owner_class->set_before_retained_bytes(2 << 20);
  owner_class->set_after_retained_bytes(5 << 20);
  owner_class->set_delta_retained_bytes(3 << 20);
  owner_class->set_before_objects(1);
  owner_class->set_after_objects(1);
  return diff;
}

v1::DrillDownReport Report() {
  v1::DrillDownReport r;
  r.set_agent("vm-1-a");
  r.set_class_name("com.example.Session");
  v1::ExtendedDump dump = Dump("20231114T221320.000000Z", v1::EXTENDED_DUMP_STATE_DONE);
  proto::ToTimestamp(kT0 + absl::Seconds(1), dump.mutable_dump_time());
  proto::ToTimestamp(kT0 + absl::Seconds(5), dump.mutable_finished_time());
  dump.set_file_bytes(12 << 20);
  dump.set_gzip(true);
  dump.set_format("JAVA PROFILE 1.0.2");
  proto::ToDuration(absl::Milliseconds(840), dump.mutable_dump_pause());
  proto::ToDuration(absl::Milliseconds(1200), dump.mutable_dump_duration());
  proto::ToDuration(absl::Milliseconds(2100), dump.mutable_analysis_duration());
  dump.set_analysis_peak_memory_bytes(150 << 20);
  dump.mutable_totals()->set_objects(123'456);
  dump.mutable_totals()->set_classes(1234);
  dump.mutable_totals()->set_gc_roots(321);
  dump.mutable_totals()->set_reachable_shallow_bytes(45 << 20);
  dump.add_report_classes("com.example.Session");
  *r.mutable_dump() = dump;
  r.set_instances(1000);
  r.set_shallow_bytes(32'000);
  r.set_retained_bytes(5'600'123);
  r.set_minimum_retained_bytes(5'557'452);

  v1::AccumulationPoint* point = r.add_accumulation_points();
  *point->mutable_object() = Object(0x2000, "java.util.ArrayList", 24, 5'557'452);
  point->set_suspect_instances(1000);
  point->set_suspect_bytes(5'500'000);
  point->set_share(0.9896);
  *point->mutable_path() = SessionsPath();

  v1::KeptAliveBy* k = r.add_kept_alive_by();
  k->set_class_name("com.example.SessionRegistry");
  k->set_dominators(1);
  k->set_dominated(1000);
  k->set_dominated_shallow_bytes(32'000);
  k->set_dominator_retained_bytes(5'557'452);
  *k->mutable_biggest_dominator() = Object(0x4000, "com.example.SessionRegistry", 16, 5'557'452);
  r.add_exclude_patterns("java\\..*");

  v1::GcRootPath shortest = SessionsPath();
  AddStep(&shortest, "[0]", Object(0x5000, "com.example.Session", 32, 5'560));
  *r.mutable_shortest_path() = shortest;

  *r.add_top_objects() = Object(0x1000, "com.example.App", 120, 5'600'000, "sticky class");
  *r.add_top_objects() = Object(0x7000, "java.lang.Thread", 120, 90'000, "thread object");

  for (int i = 0; i < 3; ++i) {
    v1::ClassSample* s = r.add_growth_history();
    proto::ToTimestamp(kT0 + absl::Seconds(60 * i), s->mutable_time());
    s->set_bytes(1000 * (i + 1));
    s->set_instances(10 * (i + 1));
  }
  v1::Suspect* suspect = r.mutable_suspect();
  suspect->set_score(0.9);
  suspect->set_growth_bytes_per_second(20);
  suspect->set_instances(30);
  suspect->set_bytes(3000);
  proto::ToTimestamp(kT0 + absl::Seconds(120), suspect->mutable_first_seen());
  *r.mutable_diff_from_previous() = Diff();
  return r;
}

TEST(RenderReport, NamesTheAccumulationPointAndItsPathFromAGcRoot) {
  std::string text = RenderReport(Report());
  EXPECT_THAT(text, HasSubstr("Drill-down report: com.example.Session in vm-1-a"));
  // Dump metadata.
  EXPECT_THAT(text, HasSubstr("Extended dump 20231114T221320.000000Z (suspect, done)"));
  EXPECT_THAT(text, HasSubstr("requested 2023-11-14 22:13:20Z, dumped 2023-11-14 22:13:21Z"));
  EXPECT_THAT(text, HasSubstr("file 12.0 MiB (gzip)"));
  EXPECT_THAT(text, HasSubstr("JVM pause 0.84 s"));
  EXPECT_THAT(text, HasSubstr("analysis 2.10 s, peak memory 150.0 MiB"));
  EXPECT_THAT(text, HasSubstr("123456 objects, 1234 classes, 321 GC roots"));
  // Sizes: human-readable with the exact count.
  EXPECT_THAT(text, ContainsRegex("Instances: +1000\n"));
  EXPECT_THAT(text, ContainsRegex("Retained size: +5.3 MiB \\(5600123 B\\) \\(precise"));
  EXPECT_THAT(text, ContainsRegex("Minimum retained size: +5.3 MiB \\(5557452 B\\)"));
  // The accumulation point, its share and its path, one step per line.
  EXPECT_THAT(text, HasSubstr("Accumulation point 1 of 1: java.util.ArrayList@0x2000 retains "
                              "5.3 MiB, 99.0% of the minimum retained size (1000 instances"));
  EXPECT_THAT(text, HasSubstr("    GC root (sticky class) com.example.App@0x1000 (5.3 MiB)\n"
                              "    static SESSIONS -> java.util.ArrayList@0x2000 (5.3 MiB)\n"
                              "    field elementData -> java.lang.Object[]@0x3000 (5.3 MiB)\n"));
  // Kept alive by, with the exclude patterns it climbed past.
  EXPECT_THAT(text, HasSubstr("climbing past java\\..*"));
  EXPECT_THAT(text, ContainsRegex("com.example.SessionRegistry +1 +1000 +31.2 KiB +5.3 MiB +"
                                  "com.example.SessionRegistry@0x4000"));
  // Shortest strong path ends at an instance.
  EXPECT_THAT(text, HasSubstr("Shortest strong path from a GC root to an instance:\n"
                              "  GC root (sticky class) com.example.App@0x1000"));
  EXPECT_THAT(text, HasSubstr("  [0] -> com.example.Session@0x5000 (5.4 KiB)\n"));
  // Top objects with their GC root kinds.
  EXPECT_THAT(text, ContainsRegex("java.lang.Thread@0x7000 +120 B +87.9 KiB +thread object"));
  // Growth history, compact.
  EXPECT_THAT(text, HasSubstr("Growth history: 3 samples, 2023-11-14 22:13:20Z 1000 B (10 "
                              "instances) -> 2023-11-14 22:15:20Z 2.9 KiB (30 instances): +2.0 KiB "
                              "(+20 instances) over 2m"));
  EXPECT_THAT(text, HasSubstr("Suspect since 2023-11-14 22:15:20Z: score 0.90, growth +20 B/s "
                              "(+70.3 KiB/h), 30 instances, 2.9 KiB in the newest histogram"));
  // The diff from the previous dump: class and owner deltas with the owner's path.
  EXPECT_THAT(text, HasSubstr("Since the previous extended dump (heapwatchctl dump-diff vm-1-a "
                              "20231114T220000.000000Z 20231114T221320.000000Z)"));
  EXPECT_THAT(text, HasSubstr("reachable heap 10.0 MiB -> 15.0 MiB (+5.0 MiB)"));
  EXPECT_THAT(text, ContainsRegex("com.example.Session +changed +1000 +\\+600"));
  EXPECT_THAT(text, HasSubstr("+3.0 MiB  java.util.ArrayList: retained 2.0 MiB -> 5.0 MiB"));
  EXPECT_THAT(text, HasSubstr("path: sticky class com.example.App -> static SESSIONS\n"));
  EXPECT_THAT(text, HasSubstr("(37 more classes)"));
  EXPECT_THAT(text, Not(HasSubstr("No earlier extended dump")));
}

TEST(RenderReport, ShowsDynamicSizesWhenTheReportHasThem) {
  v1::DrillDownReport r = Report();
  EXPECT_THAT(RenderReport(r), Not(HasSubstr("Dynamic size")));  // reports made before them
  EXPECT_THAT(RenderReport(r), Not(HasSubstr("DYNAMIC")));
  r.set_dynamic_bytes(6'000'000);
  r.set_dynamic_objects(3001);
  r.mutable_accumulation_points(0)->mutable_object()->set_dynamic_bytes(5'900'000);
  r.mutable_accumulation_points(0)->mutable_object()->set_dynamic_objects(3002);
  r.mutable_top_objects(1)->set_dynamic_bytes(100'000);
  r.mutable_top_objects(1)->set_dynamic_objects(42);
  const std::string text = RenderReport(r);
  EXPECT_THAT(text, ContainsRegex("Dynamic size: +5.7 MiB \\(6000000 B\\), 3001 objects "
                                  "\\(everything the instances reach\\)\n"));
  EXPECT_THAT(text, HasSubstr("(1000 instances, 5.2 MiB)\n"
                              "  dynamic size 5.6 MiB (5900000 B), 3002 objects reachable from it\n"
                              "  path from a GC root:\n"));
  EXPECT_THAT(text, ContainsRegex("OBJECT +SHALLOW +RETAINED +DYNAMIC +REACHES +GC ROOT"));
  EXPECT_THAT(text, ContainsRegex("com.example.App@0x1000 +120 B +5.3 MiB +- +- +sticky class"));
  EXPECT_THAT(text, ContainsRegex("java.lang.Thread@0x7000 +120 B +87.9 KiB +97.7 KiB +42 objects "
                                  "+thread object"));
}

TEST(RenderReport, ALeaksReportListsItsClassesWithTheirGrowth) {
  v1::DrillDownReport r = Report();
  v1::Leak* l = r.mutable_leak();
  l->set_leak("L0123456789ab");
  l->set_main_class("com.example.Session");
  l->set_bytes(3 << 20);
  l->set_growth_bytes_per_second(2048);
  l->set_accumulation_point("java.util.HashMap$Node[]");
  for (const auto& [name, bytes, growth] :
       {std::tuple{"com.example.Session", 2 << 20, 1536.0}, {"byte[]", 1 << 20, 512.0}}) {
    v1::LeakClass* c = l->add_classes();
    c->set_class_name(name);
    c->set_bytes(bytes);
    c->set_growth_bytes_per_second(growth);
  }
  std::string text = RenderReport(r);
  EXPECT_THAT(text, HasSubstr("Leak L0123456789ab in "));
  EXPECT_THAT(text, HasSubstr("com.example.Session, 2 classes, 3.0 MiB"));
  EXPECT_THAT(text, HasSubstr("accumulates in java.util.HashMap$Node[]"));
  EXPECT_THAT(text, HasSubstr("byte[]"));
  EXPECT_THAT(text, HasSubstr("+1.5 KiB"));
  EXPECT_LT(text.find("Leak L0123456789ab"), text.find("Drill-down report:"));
  // Without a leak, no leak header.
  EXPECT_THAT(RenderReport(Report()), ::testing::Not(HasSubstr("Leak L")));
}

TEST(RenderReport, AClassLoaderLeakShowsItsLoadersAndPinnedLoadersNotInstances) {
  v1::DrillDownReport r = Report();
  r.set_class_name("<loaded classes>");
  r.mutable_class_loaders()->set_loader_objects(3);
  v1::LeakPatternMatch* m = r.add_leak_patterns();
  m->set_pattern_id("class-loader-pinned");
  m->set_pattern_name("Class loader pinned after its application was stopped");
  m->set_summary("Class loader org.example.WebappLoader@0x10 is held only by threads");
  m->add_culprits("pinned because it is the context class loader of thread java.lang.Thread@0x20");
  std::string text = RenderReport(r);
  EXPECT_THAT(text, HasSubstr("Drill-down report: <loaded classes> in vm-1-a"));
  EXPECT_THAT(text, HasSubstr("Known leak pattern: Class loader pinned after its application was "
                              "stopped [class-loader-pinned]"));
  EXPECT_THAT(text, HasSubstr("context class loader of thread java.lang.Thread@0x20"));
  EXPECT_LT(text.find("Class loaders:"), text.find("Known leak pattern"));
  // No per-class sections: the series has no instances.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("Instances:")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("Accumulation point")));
  r.clear_leak_patterns();
  EXPECT_THAT(RenderReport(r),
              HasSubstr("No class loader pinned by a thread or a JVM-wide registry"));
}

// A path stored shortened (heapwatch.proto GcRootPath.elided_steps) shows the gap, counted, where
// the steps were left out.
TEST(RenderReport, AShortenedPathShowsHowManyStepsWereLeftOut) {
  v1::DrillDownReport r = Report();
  v1::GcRootPath* path = r.mutable_shortest_path();  // root, SESSIONS, elementData, [0]
  path->set_elided_steps(1234);
  path->set_elided_after(2);
  const std::string text = RenderReport(r);
  EXPECT_THAT(text, HasSubstr("  static SESSIONS -> java.util.ArrayList@0x2000 (5.3 MiB)\n"
                              "  ... 1,234 steps ...\n"
                              "  field elementData -> java.lang.Object[]@0x3000 (5.3 MiB)\n"));
  // A whole path has no such line.
  EXPECT_THAT(RenderReport(Report()), Not(HasSubstr(" steps ...")));
}

TEST(RenderReport, SaysWhatIsMissing) {
  v1::DrillDownReport r = Report();
  r.clear_accumulation_points();
  r.clear_diff_from_previous();
  r.clear_kept_alive_by();
  r.clear_growth_history();
  r.mutable_shortest_path()->set_strong(false);
  (*r.mutable_shortest_path()->mutable_steps(1)).set_weak(true);
  std::string text = RenderReport(r);
  EXPECT_THAT(text, HasSubstr("Accumulation point: none"));
  EXPECT_THAT(text, HasSubstr("No earlier extended dump of this agent to compare with."));
  EXPECT_THAT(text, HasSubstr("Growth history: no histogram samples"));
  EXPECT_THAT(text, HasSubstr("(no strong path: every path needs a soft, weak"));
  EXPECT_THAT(text, HasSubstr("static SESSIONS (weak) -> java.util.ArrayList@0x2000"));

  r.mutable_shortest_path()->set_found(false);
  EXPECT_THAT(RenderReport(r), HasSubstr("(no GC root reaches it)"));
  // An empty report still renders (no crash on missing submessages).
  EXPECT_THAT(RenderReport(v1::DrillDownReport()), HasSubstr("Instances:"));
}

TEST(RenderReportList, OneRowPerDumpWithClassesOrError) {
  v1::ListReportsResponse response;
  response.set_agent("vm-1-a");
  v1::ExtendedDump running = Dump("20231114T223000.000000Z", v1::EXTENDED_DUMP_STATE_DUMPING);
  running.set_trigger(v1::EXTENDED_DUMP_TRIGGER_MANUAL);
  running.add_suspect_classes("com.example.Session");
  v1::ExtendedDump failed = Dump("20231114T222000.000000Z", v1::EXTENDED_DUMP_STATE_FAILED);
  failed.set_error("JVM exited during the dump");
  v1::ExtendedDump done = Dump("20231114T221320.000000Z", v1::EXTENDED_DUMP_STATE_DONE);
  done.set_file_bytes(12 << 20);
  proto::ToDuration(absl::Milliseconds(840), done.mutable_dump_pause());
  proto::ToDuration(absl::Milliseconds(2100), done.mutable_analysis_duration());
  done.add_report_classes("com.example.Session");
  done.add_report_classes("byte[]");
  *response.add_dumps() = running;
  *response.add_dumps() = failed;
  *response.add_dumps() = done;
  std::string text = RenderReportList(response);
  EXPECT_THAT(text, HasSubstr("vm-1-a: 3 extended dumps\n"));
  EXPECT_THAT(text, ContainsRegex("DUMP ID +STATE +TRIGGER +REQUESTED +FILE +PAUSE +ANALYSIS +"
                                  "CLASSES / ERROR"));
  EXPECT_THAT(text, ContainsRegex("20231114T223000.000000Z +dumping +manual +2023-11-14 22:13:20Z "
                                  "+- +- +- +for com.example.Session"));
  EXPECT_THAT(text, ContainsRegex("failed +suspect .* error: JVM exited during the dump"));
  EXPECT_THAT(text, ContainsRegex("done +suspect +2023-11-14 22:13:20Z +12.0 MiB +0.84 s +2.10 s +"
                                  "com.example.Session, byte\\[\\]"));

  v1::ListReportsResponse empty;
  empty.set_agent("vm-2-b");
  EXPECT_EQ(RenderReportList(empty), "no extended dumps of vm-2-b\n");
}

TEST(RenderExtendedDumpDiff, TopLimitsRowsAndCountsTheRest) {
  std::string text = RenderExtendedDumpDiff(Diff(), 1);
  EXPECT_THAT(text,
              HasSubstr("vm-1-a: extended dump 20231114T220000.000000Z (2023-11-14 22:00:00Z) "
                        "-> 20231114T221320.000000Z (2023-11-14 22:13:20Z), 13m20s apart"));
  EXPECT_THAT(text, HasSubstr("com.example.Session"));
  EXPECT_THAT(text, Not(HasSubstr("com.example.Other1")));
  EXPECT_THAT(text, HasSubstr("(39 more classes)"));
  EXPECT_THAT(text, HasSubstr("path: sticky class com.example.App -> static SESSIONS"));
  EXPECT_THAT(text, ContainsRegex("OWNER CLASS .*\njava.util.ArrayList +1 -> 1 +2.0 MiB +5.0 MiB "
                                  "+\\+3.0 MiB"));
  std::string all = RenderExtendedDumpDiff(Diff(), 0);
  EXPECT_THAT(all, HasSubstr("com.example.Other2"));
  EXPECT_THAT(all, HasSubstr("(37 more classes)"));
  EXPECT_THAT(RenderExtendedDumpDiff(v1::ExtendedDumpDiff(), 5),
              HasSubstr("Classes: no differences"));
}

TEST(RenderDump, StateTimesAndError) {
  v1::ExtendedDump d = Dump("20231114T222000.000000Z", v1::EXTENDED_DUMP_STATE_FAILED);
  d.set_error("JVM exited during the dump");
  std::string text = RenderDump(d);
  EXPECT_THAT(text, HasSubstr("Extended dump 20231114T222000.000000Z of vm-1-a: failed (suspect)"));
  EXPECT_THAT(text, HasSubstr("requested 2023-11-14 22:13:20Z"));
  EXPECT_THAT(text, HasSubstr("error: JVM exited during the dump"));
}

// --json prints the response message with protobuf's printer (docs/cli.md): exact 64-bit sizes as
// decimal strings, enum names, and it parses back into the API's own message.
TEST(ReportJson, ExactSizesAndParsesBackIntoTheApiMessage) {
  v1::GetReportResponse response;
  *response.mutable_report() = Report();
  std::ostringstream out;
  ASSERT_TRUE(PrintJson(response, out).ok());
  std::string json = out.str();
  EXPECT_THAT(json, HasSubstr("\"retained_bytes\": \"5600123\""));
  EXPECT_THAT(json, HasSubstr("\"state\": \"EXTENDED_DUMP_STATE_DONE\""));
  EXPECT_THAT(json, HasSubstr("\"reference\": \"static SESSIONS\""));
  v1::GetReportResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_EQ(parsed.SerializeAsString(), response.SerializeAsString());
}

// ---- dump --wait ----

class WaitForDumpTest : public ::testing::Test {
 protected:
  // ListReports answers: the dump in `states[i]` at the i-th call (the last state repeats).
  ListReportsFn Script(std::vector<v1::ExtendedDumpState> states) {
    return [this, states](v1::ListReportsResponse* response) -> Status {
      size_t i = std::min(calls_++, states.size() - 1);
      response->set_agent("vm-1-a");
      *response->add_dumps() = Dump("other", v1::EXTENDED_DUMP_STATE_DONE);
      if (states[i] != v1::EXTENDED_DUMP_STATE_UNSPECIFIED) {
        v1::ExtendedDump d = Dump("mine", states[i]);
        if (states[i] == v1::EXTENDED_DUMP_STATE_FAILED) d.set_error("JVM exited");
        *response->add_dumps() = d;
      }
      return absl::OkStatus();
    };
  }
  std::function<void(absl::Duration)> Sleep() {
    return [this](absl::Duration d) {
      sleeps_.push_back(d);
      clock_.Advance(d);
    };
  }

  FakeClock clock_;
  size_t calls_ = 0;
  std::vector<absl::Duration> sleeps_;
};

TEST_F(WaitForDumpTest, PollsEverySecondUntilDone) {
  std::vector<v1::ExtendedDumpState> seen;
  auto result =
      WaitForDump("mine", absl::Minutes(10), absl::Seconds(1), clock_, Sleep(),
                  Script({v1::EXTENDED_DUMP_STATE_QUEUED, v1::EXTENDED_DUMP_STATE_DUMPING,
                          v1::EXTENDED_DUMP_STATE_DUMPING, v1::EXTENDED_DUMP_STATE_ANALYZING,
                          v1::EXTENDED_DUMP_STATE_DONE}),
                  [&](const v1::ExtendedDump& d) { seen.push_back(d.state()); });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->dump_id(), "mine");
  EXPECT_EQ(result->state(), v1::EXTENDED_DUMP_STATE_DONE);
  EXPECT_EQ(calls_, 5u);
  EXPECT_EQ(sleeps_, std::vector<absl::Duration>(4, absl::Seconds(1)));
  EXPECT_EQ(seen, (std::vector<v1::ExtendedDumpState>{
                      v1::EXTENDED_DUMP_STATE_QUEUED, v1::EXTENDED_DUMP_STATE_DUMPING,
                      v1::EXTENDED_DUMP_STATE_ANALYZING, v1::EXTENDED_DUMP_STATE_DONE}));
}

TEST_F(WaitForDumpTest, ReturnsAFailedDumpWithItsError) {
  auto result =
      WaitForDump("mine", absl::Minutes(10), absl::Seconds(1), clock_, Sleep(),
                  Script({v1::EXTENDED_DUMP_STATE_DUMPING, v1::EXTENDED_DUMP_STATE_FAILED}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_EQ(result->error(), "JVM exited");
}

TEST_F(WaitForDumpTest, TimesOutNamingTheLastState) {
  auto result = WaitForDump("mine", absl::Seconds(5), absl::Seconds(2), clock_, Sleep(),
                            Script({v1::EXTENDED_DUMP_STATE_ANALYZING}));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("extended dump mine still analyzing after 5s"));
  // Polls at 0, 2, 4 and 5 s: the last sleep is cut to the deadline.
  EXPECT_EQ(calls_, 4u);
  EXPECT_EQ(sleeps_,
            (std::vector<absl::Duration>{absl::Seconds(2), absl::Seconds(2), absl::Seconds(1)}));
}

TEST_F(WaitForDumpTest, DumpThatNeverAppearsAndListErrors) {
  auto missing = WaitForDump("mine", absl::Seconds(3), absl::Seconds(1), clock_, Sleep(),
                             Script({v1::EXTENDED_DUMP_STATE_UNSPECIFIED}));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("did not appear in ListReports within 3s"));

  auto error = WaitForDump("mine", absl::Seconds(3), absl::Seconds(1), clock_, Sleep(),
                           [](v1::ListReportsResponse*) -> Status {
                             return absl::UnavailableError("connection refused");
                           });
  ASSERT_FALSE(error.ok());
  EXPECT_TRUE(absl::IsUnavailable(error.status()));
}

// ---- the commands against the real QueryServer ----

class ReportCommandsTest : public heapwatch::testing::QueryFixture {
 protected:
  struct Result {
    int code;
    std::string out, err;
  };
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"heapwatchctl", "--server", address_});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }
};

// An agent the daemon does not know: NOT_FOUND naming it. Exit code 1 and one line naming the RPC,
// the server, the gRPC status code and the server's message; nothing on stdout.
TEST_F(ReportCommandsTest, ServerErrorsAreReportedWithTheStatusCode) {
  const std::string rx_server =
      absl::StrCat(" on 127\\.0\\.0\\.1:", server_->port(), " failed: NOT_FOUND: .*nobody");
  struct Case {
    std::vector<std::string> args;
    std::string rpc;
  };
  for (const Case& c : std::vector<Case>{
           {{"report", "nobody", "Leak"}, "GetReport"},
           {{"report", "nobody", "Leak", "--json"}, "GetReport"},
           {{"reports", "nobody"}, "ListReports"},
           {{"dump", "nobody"}, "TriggerExtendedDump"},
           {{"dump", "nobody", "--wait", "--timeout", "5s"}, "TriggerExtendedDump"},
           {{"dump-diff", "nobody"}, "DiffExtendedDumps"},
           {{"dump-diff", "nobody", "a", "b", "--top", "3"}, "DiffExtendedDumps"},
       }) {
    Result r = Run(c.args);
    std::string what = absl::StrJoin(c.args, " ");
    EXPECT_EQ(r.code, 1) << what;
    EXPECT_THAT(r.err, ContainsRegex("^heapwatchctl: " + c.rpc + rx_server)) << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << what;
  }
  // A known agent on a server without escalation (the fixture's): FAILED_PRECONDITION, said so.
  Result no_escalation = Run({"reports", kLive.value});
  EXPECT_EQ(no_escalation.code, 1);
  EXPECT_THAT(no_escalation.err, HasSubstr("failed: FAILED_PRECONDITION: "));
  EXPECT_THAT(no_escalation.err, HasSubstr("escalation"));
}

// A server too old to know an RPC answers UNIMPLEMENTED with an empty message; the line says so.
TEST(ServerError, ExplainsAnEmptyUnimplemented) {
  GlobalOptions global;
  global.server = "127.0.0.1:7750";
  std::ostringstream err;
  EXPECT_EQ(
      ServerError(err, global, "GetReport", grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "")),
      kExitError);
  EXPECT_EQ(err.str(),
            "heapwatchctl: GetReport on 127.0.0.1:7750 failed: UNIMPLEMENTED: this heapwatchd does "
            "not serve the request (an older version?)\n");
}

TEST_F(ReportCommandsTest, UsageErrors) {
  Result one_dump = Run({"dump-diff", kLive.value, "20231114T221320.000000Z"});
  EXPECT_EQ(one_dump.code, 2);
  EXPECT_THAT(one_dump.err, HasSubstr("give two dump ids (A B) or none"));
  EXPECT_EQ(Run({"dump-diff", kLive.value, "a", "b", "c"}).code, 2);
  EXPECT_EQ(Run({"report", kLive.value}).code, 2);  // missing CLASS
  EXPECT_EQ(Run({"reports"}).code, 2);              // missing AGENT
  EXPECT_EQ(Run({"dump-diff", kLive.value, "--top", "many"}).code, 2);
  // After `dump`, --timeout is how long --wait waits (checked before any request).
  Result bad_wait = Run({"dump", kLive.value, "--wait", "--timeout", "soon"});
  EXPECT_EQ(bad_wait.code, 2);
  EXPECT_THAT(bad_wait.err, HasSubstr("heapwatchctl dump: --timeout: invalid duration 'soon'"));
  // Before the subcommand it stays the global per-request deadline.
  EXPECT_EQ(Run({"--timeout", "soon", "dump", kLive.value}).code, 2);
}

}  // namespace
}  // namespace heapwatch::ctl
