// End to end test of escalation (issue "Escalation and drill-down") with real JVMs, the real
// heapwatchd and heapwatchctl binaries, real gRPC, real /metrics and the real LMDB file:
//
//  AutomaticEscalationNamesTheAccumulationPoint: DrillDownLeakApp leaks DrillDownLeakApp$Session
//    (into the static ArrayList SESSIONS) and DrillDownLeakApp$AuditEvent (into the static HashMap
//    AUDIT) in the same tick, so both become suspects at the same snapshot. Without any request the
//    daemon takes ONE extended dump covering both; the report of Session names the real
//    accumulation point (the list's Object[] elementData, reached from class DrillDownLeakApp
//    through "static SESSIONS"), with sizes, growth history and dump metadata, over gRPC and in
//    `heapwatchctl report --json`. The raw dump is gone afterwards; no report, no ListReports
//    answer and not the LMDB data file holds the session tokens ("hw-secret-N"); /metrics counts
//    the dump and exports the retained size. After a SIGTERM restart on the same data dir the
//    same report is served and no second dump is taken (one dump per agent per hour).
//
//  SuspectsSecondsApartCauseOneDumpInAMinute: the same with the AuditEvent leak starting 8 s later:
//    within a minute one dump is taken, and the later suspect is covered, queued or refused with a
//    reason (never dropped silently).
//
//  JvmKilledDuringDumpLeavesDaemonHealthy: BigHeapApp (400 MB of small objects, so writing a dump
//    takes seconds) and HealthyApp; an extended dump of BigHeapApp is requested and the JVM is
//    kill -9'ed as soon as the dump file appears. The dump ends FAILED with a reason, counted as
//    result="error" in /metrics, the partial file is deleted, and the daemon keeps answering and
//    collecting HealthyApp.
//
// Each test starts its JVMs from copies of their jars in its own directory and has heapwatchd watch
// only those (OwnJarsWatchConfig), so tests running in parallel never watch or dump each other's
// JVMs. Every child process dies with the test (see subprocess.h).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/e2e/daemon_fixture.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/subprocess.h"

namespace heapwatch {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::heapwatch::v1;
using testing::CopyJar;
using testing::MakeTempDir;
using testing::MetricValue;
using testing::OwnJarsWatchConfig;
using testing::ReadFile;
using testing::ReadPort;
using testing::RunCommand;
using testing::Subprocess;
using testing::WaitFor;

constexpr char kSessionClass[] = "DrillDownLeakApp$Session";
constexpr char kAuditClass[] = "DrillDownLeakApp$AuditEvent";
// What DrillDownLeakApp puts into every session token: no stored byte may contain it.
constexpr char kSecret[] = "hw-secret-";

// Regular files below `dir` (recursively); none when it does not exist.
std::vector<fs::path> FilesUnder(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(it->path());
  }
  return out;
}

std::vector<fs::path> DirectoriesUnder(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) out.push_back(it->path());
  }
  return out;
}

std::string Names(const std::vector<fs::path>& paths) {
  return absl::StrJoin(paths, ", ",
                       [](std::string* out, const fs::path& p) { out->append(p.string()); });
}

// Number of occurrences of `needle` in the file at `path`, read in chunks (an LMDB data file can be
// larger than what is worth holding in memory at once). -1 when the file cannot be read.
int64_t CountInFile(const std::string& path, const std::string& needle) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return -1;
  int64_t count = 0;
  std::string carry;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    std::string window = carry + std::string(chunk.data(), static_cast<size_t>(in.gcount()));
    for (size_t at = window.find(needle); at != std::string::npos;
         at = window.find(needle, at + 1)) {
      ++count;
    }
    carry = window.size() >= needle.size() - 1 ? window.substr(window.size() - (needle.size() - 1))
                                               : window;
  }
  return count;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

double Seconds(const google::protobuf::Duration& d) {
  return absl::ToDoubleSeconds(absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos()));
}

// The path in heapwatchctl's dialect (ctl/report_render.h), for failure messages.
std::string PathText(const v1::GcRootPath& path) {
  std::string out;
  for (const v1::PathStep& step : path.steps()) {
    const std::string kind = step.object().gc_root_kind();
    absl::StrAppend(&out, "\n    ",
                    step.reference().empty()
                        ? absl::StrCat("GC root", kind.empty() ? "" : absl::StrCat(" (", kind, ")"))
                        : absl::StrCat(step.reference(), step.weak() ? " (weak)" : "", " ->"),
                    " ", step.object().class_name(), "@0x", absl::Hex(step.object().object_id()));
  }
  return out;
}

class EscalationEndToEnd : public testing::DaemonFixture {
 protected:
  EscalationEndToEnd() : DaemonFixture("heapwatch-escalation") {}

  void SetUp() override {
    DaemonFixture::SetUp();
    dump_dir_ = dir_ + "/dumps";
  }

  // Starts heapwatchd with <dir>/<config>, logging to <dir>/<log_name>.
  void StartDaemon(const std::string& log_name, const std::string& config,
                   absl::Duration interval) {
    DaemonFixture::StartDaemon(dir_ + "/" + config, interval, log_name);
  }

  std::set<std::string> SuspectClasses(const std::string& agent) {
    std::set<std::string> out;
    const v1::ListSuspectsResponse r =
        Call(&v1::QueryService::Stub::ListSuspects, v1::ListSuspectsRequest());
    for (const v1::Suspect& s : r.suspects()) {
      if (s.agent() == agent) out.insert(s.class_name());
    }
    return out;
  }

  v1::ListReportsResponse ListReports(const std::string& agent) {
    v1::ListReportsRequest request;
    request.set_agent(agent);
    return Call(&v1::QueryService::Stub::ListReports, request);
  }

  std::optional<v1::DrillDownReport> GetReport(const std::string& agent,
                                               const std::string& class_name) {
    v1::GetReportRequest request;
    request.set_agent(agent);
    request.set_class_name(class_name);
    v1::GetReportResponse response;
    grpc::Status status = CallStatus(&v1::QueryService::Stub::GetReport, request, &response);
    EXPECT_TRUE(status.ok()) << "GetReport(" << agent << ", " << class_name
                             << "): " << status.error_code() << " " << status.error_message();
    if (!status.ok()) return std::nullopt;
    return response.report();
  }

  int SnapshotCount(const std::string& agent, const std::string& class_name) {
    v1::GetClassHistoryRequest request;
    request.set_agent(agent);
    request.set_class_name(class_name);
    v1::GetClassHistoryResponse response;
    if (!CallStatus(&v1::QueryService::Stub::GetClassHistory, request, &response).ok()) return 0;
    return response.samples_size();
  }

  testing::CommandResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {HEAPWATCHCTL, "--server", grpc_address_});
    return RunCommand(args, absl::Seconds(30));
  }

  // heapwatchd's configuration for DrillDownLeakApp with automatic escalation.
  std::string DrillDownConfig() const {
    return absl::StrCat(OwnJarsWatchConfig(dir_), R"(collection:
  discovery_interval: 1s
  # These tests are about detection at one histogram a second; the budget's own tests are
  # tests/e2e/cost_e2e.sh and pause_budget_test. 1 = no budget limit.
  pause_budget: 1
  backoff_initial: 2s
  backoff_max: 4s
trend:
  min_growth_bytes: 262144
escalation:
  enabled: true
  auto: true
  min_dump_interval: 1h
  join_window: 20s
  dump_dir: )",
                        dump_dir_, "\n");
  }

  void WriteConfig(const std::string& name, const std::string& body) {
    std::ofstream(dir_ + "/" + name) << body;
  }

  std::string dump_dir_;
};

// Checks the accumulation point of `report`: an object of `holder_class` whose strong path from a
// GC root goes from class DrillDownLeakApp through `static_step` (e.g. "static SESSIONS") to a
// `collection_class` object and then through `field` (e.g. "elementData") to the holder.
void ExpectAccumulationPoint(const v1::DrillDownReport& report, const std::string& holder_class,
                             const std::string& static_step, const std::string& collection_class,
                             const std::string& field) {
  SCOPED_TRACE(report.class_name());
  ASSERT_FALSE(report.accumulation_points().empty()) << report.DebugString();
  const v1::AccumulationPoint& point = report.accumulation_points(0);
  const v1::GcRootPath& path = point.path();
  std::cout << "E2E: " << report.class_name() << ": accumulation point "
            << point.object().class_name() << " @ "
            << absl::StrCat("0x", absl::Hex(point.object().object_id())) << " retains "
            << point.suspect_instances() << " instances, " << point.suspect_bytes()
            << " bytes (share " << point.share() << "), retained size "
            << point.object().retained_bytes() << "; path from a GC root:" << PathText(path)
            << std::endl;
  EXPECT_EQ(point.object().class_name(), holder_class);
  EXPECT_EQ(point.suspect_instances(), report.instances());
  EXPECT_GE(point.share(), 0.9);
  EXPECT_LE(point.share(), 1.0);
  EXPECT_GT(point.suspect_bytes(), 0u);
  EXPECT_LE(point.suspect_bytes(), report.minimum_retained_bytes());
  EXPECT_GE(point.object().retained_bytes(), point.suspect_bytes());
  ASSERT_TRUE(path.found());
  EXPECT_TRUE(path.strong());
  ASSERT_GE(path.steps_size(), 3);
  EXPECT_EQ(path.steps(path.steps_size() - 1).object().object_id(), point.object().object_id());
  EXPECT_FALSE(path.steps(0).object().gc_root_kind().empty()) << "steps[0] must be a GC root";
  int at = -1;
  for (int i = 1; i < path.steps_size(); ++i) {
    if (path.steps(i).reference() == static_step) at = i;
  }
  ASSERT_GE(at, 1) << "no step \"" << static_step << "\" in" << PathText(path);
  EXPECT_TRUE(absl::StrContains(path.steps(at - 1).object().class_name(), "DrillDownLeakApp"))
      << "\"" << static_step << "\" must hang from class DrillDownLeakApp:" << PathText(path);
  EXPECT_EQ(path.steps(at).object().class_name(), collection_class) << PathText(path);
  EXPECT_FALSE(path.steps(at).weak());
  ASSERT_EQ(at + 2, path.steps_size())
      << "the holder must be the collection's " << field << PathText(path);
  EXPECT_TRUE(absl::StrContains(path.steps(at + 1).reference(), field)) << PathText(path);
}

TEST_F(EscalationEndToEnd, AutomaticEscalationNamesTheAccumulationPoint) {
  const absl::Time test_start = absl::Now();
  Subprocess* app = StartJava("DrillDownLeakApp", "512m");
  ASSERT_FALSE(HasFailure());
  // DrillDownLeakApp's two classes grow by about 96 KB/s each in the histograms; 256 KiB over the
  // window lets them be flagged right after warm-up + min_snapshots snapshots. The budget of one
  // dump per agent per hour is written out: it is what makes the two suspects share one dump, and
  // what forbids a second one after the restart.
  WriteConfig("escalation.yaml", DrillDownConfig());
  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd-1.log", "escalation.yaml", absl::Seconds(1)));
  const std::string agent = AgentOf(app->pid());
  ASSERT_FALSE(agent.empty()) << DaemonLog();

  // ---- 1. both classes become suspects and one dump is taken and analysed, unasked ----
  std::map<std::string, absl::Time> flagged;  // class -> when first seen as a suspect
  std::set<std::string> states_seen;
  v1::ExtendedDump dump;
  const bool finished = WaitFor(absl::Seconds(150), [&] {
    for (const std::string& c : SuspectClasses(agent)) flagged.emplace(c, absl::Now());
    const v1::ListReportsResponse reports = ListReports(agent);
    for (const v1::ExtendedDump& d : reports.dumps()) {
      states_seen.insert(v1::ExtendedDumpState_Name(d.state()));
    }
    if (reports.dumps().empty()) return false;
    dump = reports.dumps(reports.dumps_size() - 1);  // the oldest: the first escalation
    return (dump.state() == v1::EXTENDED_DUMP_STATE_DONE ||
            dump.state() == v1::EXTENDED_DUMP_STATE_FAILED) &&
           flagged.count(kSessionClass) && flagged.count(kAuditClass);
  });
  ASSERT_TRUE(finished) << "no finished extended dump with both suspects; suspects seen: "
                        << absl::StrJoin(
                               flagged, ", ",
                               [](std::string* out, const auto& kv) { out->append(kv.first); })
                        << "; dump states seen: " << absl::StrJoin(states_seen, ", ") << "\n"
                        << ToJson(ListReports(agent)) << "\n"
                        << DaemonLog();
  ASSERT_EQ(dump.state(), v1::EXTENDED_DUMP_STATE_DONE) << dump.DebugString() << DaemonLog();
  std::cout << "E2E: " << kSessionClass << " a suspect after "
            << absl::FormatDuration(flagged[kSessionClass] - test_start) << ", " << kAuditClass
            << " after " << absl::FormatDuration(flagged[kAuditClass] - test_start) << "; dump "
            << dump.dump_id() << " DONE after " << absl::FormatDuration(absl::Now() - test_start)
            << " (states seen: " << absl::StrJoin(states_seen, ", ") << ")" << std::endl;

  // Both suspects are still there (a few more snapshots), and no second dump was taken for them.
  absl::SleepFor(absl::Seconds(5));
  const v1::ListReportsResponse reports = ListReports(agent);
  const std::string reports_json = ToJson(reports);
  std::cout << "E2E: ListReports: " << reports_json << std::endl;
  EXPECT_EQ(reports.agent(), agent);
  ASSERT_EQ(reports.dumps_size(), 1) << "two suspects in one minute must cause one dump\n"
                                     << reports_json;
  dump = reports.dumps(0);
  EXPECT_EQ(dump.agent(), agent);
  EXPECT_EQ(dump.state(), v1::EXTENDED_DUMP_STATE_DONE);
  EXPECT_EQ(dump.trigger(), v1::EXTENDED_DUMP_TRIGGER_SUSPECT);
  EXPECT_TRUE(dump.error().empty()) << dump.error();
  const std::set<std::string> suspect_classes(dump.suspect_classes().begin(),
                                              dump.suspect_classes().end());
  const std::set<std::string> report_classes(dump.report_classes().begin(),
                                             dump.report_classes().end());
  EXPECT_TRUE(suspect_classes.count(kSessionClass) && suspect_classes.count(kAuditClass))
      << "the dump must cover both suspects: " << absl::StrJoin(suspect_classes, ", ");
  EXPECT_TRUE(report_classes.count(kSessionClass) && report_classes.count(kAuditClass))
      << absl::StrJoin(report_classes, ", ");
  EXPECT_GT(dump.file_bytes(), 0u);
  EXPECT_TRUE(dump.gzip());
  EXPECT_TRUE(absl::StartsWith(dump.format(), "JAVA PROFILE 1.0.")) << dump.format();
  EXPECT_GT(Seconds(dump.dump_pause()), 0);
  EXPECT_GE(Seconds(dump.dump_duration()), Seconds(dump.dump_pause()));
  EXPECT_GT(Seconds(dump.analysis_duration()), 0);
  EXPECT_GT(dump.analysis_peak_memory_bytes(), 0u);
  EXPECT_TRUE(dump.has_requested_time() && dump.has_dump_time() && dump.has_finished_time());
  EXPECT_LE(dump.requested_time().seconds(), dump.dump_time().seconds());
  EXPECT_LE(dump.dump_time().seconds(), dump.finished_time().seconds());
  EXPECT_GT(dump.totals().objects(), 0u);
  EXPECT_GT(dump.totals().reachable_objects(), 0u);
  EXPECT_GT(dump.totals().gc_roots(), 0u);
  EXPECT_FALSE(dump.raw_dump_kept());
  EXPECT_TRUE(dump.raw_dump_path().empty()) << dump.raw_dump_path();

  // ---- 2. the report names the real accumulation point and its path from a GC root ----
  std::optional<v1::DrillDownReport> report = GetReport(agent, kSessionClass);
  ASSERT_TRUE(report.has_value());
  const std::string report_json = ToJson(*report);
  EXPECT_EQ(report->agent(), agent);
  EXPECT_EQ(report->class_name(), kSessionClass);
  EXPECT_EQ(report->dump().dump_id(), dump.dump_id());
  EXPECT_EQ(report->dump().file_bytes(), dump.file_bytes());
  EXPECT_GT(report->dump().file_bytes(), 0u);
  EXPECT_GT(Seconds(report->dump().dump_pause()), 0);
  EXPECT_GT(report->instances(), 1000u);
  EXPECT_EQ(report->shallow_bytes(), report->instances() * 48) << "48 bytes per Session";
  EXPECT_GT(report->minimum_retained_bytes(), 0u);
  EXPECT_GE(report->retained_bytes(), report->minimum_retained_bytes());
  // Each session retains its token String and both byte arrays: more than its own 48 bytes.
  EXPECT_GT(report->minimum_retained_bytes(), report->shallow_bytes());
  ExpectAccumulationPoint(*report, "java.lang.Object[]", "static SESSIONS", "java.util.ArrayList",
                          "elementData");
  ASSERT_FALSE(report->kept_alive_by().empty());
  EXPECT_TRUE(absl::StrContains(report->kept_alive_by(0).class_name(), "DrillDownLeakApp"))
      << "java.* is climbed past, so the class holding the static field keeps them alive:\n"
      << report->DebugString();
  EXPECT_FALSE(report->exclude_patterns().empty());
  EXPECT_TRUE(report->shortest_path().found() && report->shortest_path().strong());
  ASSERT_GE(report->shortest_path().steps_size(), 2);
  EXPECT_EQ(
      report->shortest_path().steps(report->shortest_path().steps_size() - 1).object().class_name(),
      kSessionClass);
  EXPECT_FALSE(report->top_objects().empty());
  ASSERT_GE(report->growth_history_size(), 2) << "growth history from the histograms";
  EXPECT_LT(report->growth_history(0).bytes(),
            report->growth_history(report->growth_history_size() - 1).bytes());
  EXPECT_TRUE(report->has_suspect());
  EXPECT_EQ(report->suspect().class_name(), kSessionClass);
  EXPECT_FALSE(report->has_diff_from_previous()) << "there is no earlier dump";
  std::cout << "E2E: " << kSessionClass << ": " << report->instances() << " instances, shallow "
            << report->shallow_bytes() << ", retained " << report->retained_bytes() << " (minimum "
            << report->minimum_retained_bytes() << ") bytes; dump " << dump.file_bytes()
            << " bytes, pause " << Seconds(dump.dump_pause()) << " s, analysis "
            << Seconds(dump.analysis_duration()) << " s, peak memory +"
            << dump.analysis_peak_memory_bytes() << " bytes" << std::endl;

  // The second suspect's report: the HashMap's table, from "static AUDIT".
  std::optional<v1::DrillDownReport> audit = GetReport(agent, kAuditClass);
  ASSERT_TRUE(audit.has_value());
  EXPECT_EQ(audit->dump().dump_id(), dump.dump_id());
  ExpectAccumulationPoint(*audit, "java.util.HashMap$Node[]", "static AUDIT", "java.util.HashMap",
                          "table");
  const std::string audit_json = ToJson(*audit);

  // ... and through heapwatchctl.
  const testing::CommandResult ctl_report = Ctl({"report", agent, kSessionClass, "--json"});
  EXPECT_EQ(ctl_report.exit_code, 0) << ctl_report.err << ctl_report.out;
  testing::ParseJson(ctl_report.out);
  for (const std::string& expected :
       {dump.dump_id(), std::string("static SESSIONS"), std::string("java.lang.Object[]"),
        std::string("java.util.ArrayList")}) {
    EXPECT_TRUE(absl::StrContains(ctl_report.out, expected))
        << "heapwatchctl report --json lacks " << expected << ":\n"
        << ctl_report.out;
  }
  const testing::CommandResult ctl_reports = Ctl({"reports", agent, "--json"});
  EXPECT_EQ(ctl_reports.exit_code, 0) << ctl_reports.err << ctl_reports.out;
  testing::ParseJson(ctl_reports.out);
  EXPECT_TRUE(absl::StrContains(ctl_reports.out, dump.dump_id())) << ctl_reports.out;
  const testing::CommandResult ctl_table = Ctl({"report", agent, kSessionClass});
  EXPECT_EQ(ctl_table.exit_code, 0) << ctl_table.err;
  EXPECT_TRUE(absl::StrContains(ctl_table.out, "static SESSIONS")) << ctl_table.out;
  std::cout << "E2E: heapwatchctl report " << agent << " " << kSessionClass << ":\n"
            << ctl_table.out << std::endl;

  // ---- 3. no raw dump and no secret left anywhere ----
  std::vector<fs::path> leftovers = FilesUnder(dump_dir_);
  EXPECT_TRUE(leftovers.empty()) << "raw dumps left behind: " << Names(leftovers);
  // The dump was written below dump_dir (in the JVM user's private subdirectory), so the empty
  // listing above means it was deleted, not written elsewhere.
  EXPECT_FALSE(DirectoriesUnder(dump_dir_).empty())
      << "nothing was ever written under " << dump_dir_;
  for (const fs::path& d : DirectoriesUnder(dump_dir_)) {
    struct stat st {};
    ASSERT_EQ(stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 077, 0u)
        << d << " must be private (0700), mode " << std::oct << (st.st_mode & 0777);
  }
  for (const auto& [what, text] :
       {std::pair<std::string, const std::string*>{"GetReport(Session)", &report_json},
        {"GetReport(AuditEvent)", &audit_json},
        {"ListReports", &reports_json},
        {"heapwatchctl report --json", &ctl_report.out},
        {"heapwatchctl reports --json", &ctl_reports.out},
        {"heapwatchctl report", &ctl_table.out}}) {
    EXPECT_FALSE(absl::StrContains(*text, kSecret)) << what << " holds string contents:\n" << *text;
  }
  const std::string data_file = dir_ + "/data/data.mdb";
  const int64_t secrets_in_store = CountInFile(data_file, kSecret);
  EXPECT_EQ(secrets_in_store, 0) << data_file << " holds session tokens (-1: unreadable)";
  // The search can fail: the JVM's heap does hold the tokens, so any dump of it does.
  const std::string check_dump = dir_ + "/check.hprof";
  const testing::CommandResult jcmd = RunCommand(
      {HEAPWATCH_JCMD, std::to_string(app->pid()), "GC.heap_dump", check_dump}, absl::Seconds(60));
  EXPECT_EQ(jcmd.exit_code, 0) << jcmd.out << jcmd.err;
  EXPECT_GT(CountInFile(check_dump, kSecret), 1000)
      << "DrillDownLeakApp's tokens are not in its heap?";
  fs::remove(check_dump);

  // ---- 4. /metrics ----
  const std::string metrics = Metrics();
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_extended_dumps_total{agent=\"", agent,
                                              "\",result=\"ok\"}")),
            1.0)
      << metrics;
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_extended_dumps_total{agent=\"", agent,
                                              "\",result=\"error\"}"))
                .value_or(0),
            0.0);
  const std::optional<double> retained =
      MetricValue(metrics, absl::StrCat("heapwatch_suspect_retained_bytes{agent=\"", agent,
                                        "\",class=\"", kSessionClass, "\"}"));
  ASSERT_TRUE(retained.has_value()) << metrics;
  EXPECT_EQ(*retained, static_cast<double>(report->retained_bytes()));
  EXPECT_TRUE(MetricValue(metrics, absl::StrCat("heapwatch_suspect_retained_bytes{agent=\"", agent,
                                                "\",class=\"", kAuditClass, "\"}"))
                  .has_value());
  EXPECT_GE(MetricValue(metrics, "heapwatch_extended_dump_pause_seconds_count").value_or(0), 1.0);
  EXPECT_GE(MetricValue(metrics, "heapwatch_extended_dump_analysis_seconds_count").value_or(0),
            1.0);
  EXPECT_EQ(MetricValue(metrics, "heapwatch_extended_dump_analyses_in_flight"), 0.0);
  EXPECT_EQ(MetricValue(metrics, "heapwatch_extended_dump_analyses_queued"), 0.0);

  // ---- 5. the report survives a restart, and the budget holds across it ----
  ASSERT_NO_FATAL_FAILURE(StopDaemon());
  EXPECT_EQ(CountInFile(data_file, kSecret), 0);
  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd-2.log", "escalation.yaml", absl::Seconds(1)));
  ASSERT_EQ(AgentOf(app->pid()), agent) << DaemonLog();
  // Let the suspects come back (replayed from the stored history) and a few snapshots pass.
  EXPECT_TRUE(WaitFor(absl::Seconds(20), [&] {
    std::set<std::string> s = SuspectClasses(agent);
    return s.count(kSessionClass) && s.count(kAuditClass);
  }));
  absl::SleepFor(absl::Seconds(5));
  std::optional<v1::DrillDownReport> after = GetReport(agent, kSessionClass);
  ASSERT_TRUE(after.has_value()) << DaemonLog();
  std::string differences;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differ.Compare(*report, *after)) << "the report changed across the restart:\n"
                                               << differences;
  // The suspects' episodes continue across the restart (replayed from the history) and are covered
  // by the dump already taken: no second dump may be taken for them (a record still QUEUED for the
  // agent's interval would be allowed by the budget rules, but none may be taken or done).
  const v1::ListReportsResponse reports_after = ListReports(agent);
  std::cout << "E2E: ListReports after the restart: " << ToJson(reports_after) << std::endl;
  int done_after = 0;
  for (const v1::ExtendedDump& d : reports_after.dumps()) {
    if (d.dump_id() == dump.dump_id()) {
      EXPECT_EQ(d.state(), v1::EXTENDED_DUMP_STATE_DONE);
      ++done_after;
    } else {
      EXPECT_TRUE(d.state() == v1::EXTENDED_DUMP_STATE_QUEUED ||
                  d.state() == v1::EXTENDED_DUMP_STATE_FAILED)
          << "a second dump was taken within the hour:\n"
          << d.DebugString() << DaemonLog();
    }
  }
  EXPECT_EQ(done_after, 1) << "the dump record must survive the restart";
  const testing::CommandResult ctl_after = Ctl({"report", agent, kSessionClass, "--json"});
  EXPECT_EQ(ctl_after.exit_code, 0) << ctl_after.err;
  EXPECT_TRUE(absl::StrContains(ctl_after.out, dump.dump_id())) << ctl_after.out;
  EXPECT_TRUE(FilesUnder(dump_dir_).empty()) << Names(FilesUnder(dump_dir_));
  ASSERT_NO_FATAL_FAILURE(StopDaemon());

  for (const std::string& log : {ReadFile(dir_ + "/heapwatchd-1.log"), DaemonLog()}) {
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      EXPECT_FALSE(absl::StrContains(line, " critical ")) << line;
      EXPECT_FALSE(absl::StrContains(line, kSecret)) << line;
    }
  }
  std::cout << "E2E: total " << absl::FormatDuration(absl::Now() - test_start) << std::endl;
}

// The two leaks start 8 s apart, so their classes become suspects seconds apart. The automatic dump
// waits for its join window, so within the minute after the first suspect exactly one dump is
// taken and it covers both classes.
TEST_F(EscalationEndToEnd, SuspectsSecondsApartCauseOneDumpInAMinute) {
  Subprocess* app = StartJava("DrillDownLeakApp", "512m", {"--audit-delay-seconds", "8"});
  ASSERT_FALSE(HasFailure());
  WriteConfig("escalation.yaml", DrillDownConfig());
  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd.log", "escalation.yaml", absl::Seconds(1)));
  const std::string agent = AgentOf(app->pid());
  ASSERT_FALSE(agent.empty()) << DaemonLog();

  std::map<std::string, absl::Time> flagged;
  auto taken = [](const v1::ExtendedDump& d) {
    return d.state() == v1::EXTENDED_DUMP_STATE_DUMPING ||
           d.state() == v1::EXTENDED_DUMP_STATE_ANALYZING ||
           d.state() == v1::EXTENDED_DUMP_STATE_DONE;
  };
  int most_taken = 0;
  v1::ListReportsResponse reports;
  auto poll = [&] {
    for (const std::string& c : SuspectClasses(agent)) flagged.emplace(c, absl::Now());
    reports = ListReports(agent);
    int n = 0;
    for (const v1::ExtendedDump& d : reports.dumps()) n += taken(d) ? 1 : 0;
    most_taken = std::max(most_taken, n);
  };
  ASSERT_TRUE(WaitFor(absl::Seconds(150),
                      [&] {
                        poll();
                        return flagged.count(kSessionClass) && flagged.count(kAuditClass);
                      }))
      << ToJson(ListReports(agent)) << DaemonLog();
  const absl::Time first = std::min(flagged[kSessionClass], flagged[kAuditClass]);
  std::cout << "E2E: " << kAuditClass << " became a suspect "
            << absl::FormatDuration(flagged[kAuditClass] - flagged[kSessionClass]) << " after "
            << kSessionClass << std::endl;
  // Watch the rest of the minute after the first suspect.
  WaitFor(first + absl::Minutes(1) - absl::Now(), [&] {
    poll();
    return false;
  });
  std::cout << "E2E: ListReports a minute after the first suspect: " << ToJson(reports)
            << std::endl;
  EXPECT_EQ(most_taken, 1) << "two suspects in one minute must cause one dump";
  // On a loaded machine the analysis may still run: let it finish (no second dump meanwhile).
  EXPECT_TRUE(WaitFor(absl::Minutes(3), [&] {
    poll();
    for (const v1::ExtendedDump& d : reports.dumps()) {
      if (d.state() == v1::EXTENDED_DUMP_STATE_DONE) return true;
    }
    return false;
  })) << ToJson(reports) << DaemonLog();
  EXPECT_EQ(most_taken, 1) << ToJson(reports);
  const std::string metrics = Metrics();
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_extended_dumps_total{agent=\"", agent,
                                              "\",result=\"ok\"}")),
            1.0)
      << metrics;
  // The later suspect was flagged within the join window (escalation.join_window: 20s) of the
  // first, so the one dump covers both, with a report each.
  bool session_covered = false, audit_covered = false;
  for (const v1::ExtendedDump& d : reports.dumps()) {
    if (d.state() != v1::EXTENDED_DUMP_STATE_DONE) continue;
    const std::set<std::string> classes(d.report_classes().begin(), d.report_classes().end());
    session_covered |= classes.count(kSessionClass) > 0;
    audit_covered |= classes.count(kAuditClass) > 0;
  }
  EXPECT_TRUE(session_covered) << ToJson(reports);
  EXPECT_TRUE(audit_covered) << "the later suspect did not join the dump:\n" << ToJson(reports);
  ASSERT_NO_FATAL_FAILURE(StopDaemon());
}

TEST_F(EscalationEndToEnd, JvmKilledDuringDumpLeavesDaemonHealthy) {
  const absl::Time test_start = absl::Now();
  Subprocess* big = StartJava("BigHeapApp", "1g");
  Subprocess* healthy = StartJava("HealthyApp", "512m");
  ASSERT_FALSE(HasFailure());
  // Only requested dumps: automatic escalation is off, so the one dump is the test's.
  WriteConfig("killed.yaml", absl::StrCat(OwnJarsWatchConfig(dir_), R"(collection:
  discovery_interval: 1s
  # These tests are about detection at one histogram a second; the budget's own tests are
  # tests/e2e/cost_e2e.sh and pause_budget_test. 1 = no budget limit.
  pause_budget: 1
  backoff_initial: 2s
  backoff_max: 4s
escalation:
  enabled: true
  auto: false
  dump_dir: )",
                                          dump_dir_, "\n"));
  // A class histogram of BigHeapApp (a full GC over 400 MB) takes about 1.5 s: a 2 s interval.
  ASSERT_NO_FATAL_FAILURE(StartDaemon("heapwatchd.log", "killed.yaml", absl::Seconds(2)));
  const std::string big_agent = AgentOf(big->pid());
  const std::string healthy_agent = AgentOf(healthy->pid());
  ASSERT_FALSE(big_agent.empty() || healthy_agent.empty()) << DaemonLog();
  // The budgets estimate a dump from the JVM's last class histogram: wait for one.
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return SnapshotCount(big_agent, "BigHeapApp$Node") >= 1;
  })) << DaemonLog();

  // ---- 1. request a dump; kill -9 the JVM as soon as the dump file appears ----
  v1::TriggerExtendedDumpRequest trigger;
  trigger.set_agent(big_agent);
  // The snapshot is stored a moment before escalation hears of it: NOT_FOUND until then.
  v1::TriggerExtendedDumpResponse triggered;
  grpc::Status trigger_status;
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    triggered.Clear();
    trigger_status = CallStatus(&v1::QueryService::Stub::TriggerExtendedDump, trigger, &triggered);
    return trigger_status.error_code() != grpc::StatusCode::NOT_FOUND;
  })) << trigger_status.error_message() << DaemonLog();
  ASSERT_TRUE(trigger_status.ok()) << trigger_status.error_code() << " "
                                   << trigger_status.error_message();
  const v1::ExtendedDump& requested = triggered.dump();
  ASSERT_FALSE(requested.dump_id().empty()) << triggered.DebugString() << DaemonLog();
  EXPECT_EQ(requested.agent(), big_agent);
  EXPECT_EQ(requested.trigger(), v1::EXTENDED_DUMP_TRIGGER_MANUAL);
  EXPECT_TRUE(requested.state() == v1::EXTENDED_DUMP_STATE_QUEUED ||
              requested.state() == v1::EXTENDED_DUMP_STATE_DUMPING)
      << v1::ExtendedDumpState_Name(requested.state());
  // Wait until the JVM has written a good part of a megabyte (a partial dump on disk; the whole
  // dump takes seconds), and check that the daemon sees it DUMPING.
  std::vector<fs::path> files;
  ASSERT_TRUE(WaitFor(
      absl::Seconds(60),
      [&] {
        files = FilesUnder(dump_dir_);
        std::error_code ec;
        return !files.empty() && fs::file_size(files[0], ec) >= (512u << 10) && !ec;
      },
      absl::Milliseconds(10)))
      << "no dump file grew under " << dump_dir_ << ": " << Names(files) << "\n"
      << ToJson(ListReports(big_agent)) << DaemonLog();
  {
    const v1::ListReportsResponse before_kill = ListReports(big_agent);
    ASSERT_EQ(before_kill.dumps_size(), 1) << ToJson(before_kill);
    EXPECT_EQ(before_kill.dumps(0).state(), v1::EXTENDED_DUMP_STATE_DUMPING) << ToJson(before_kill);
  }
  struct stat st {};
  const bool stat_ok = stat(files[0].c_str(), &st) == 0;
  big->Kill(SIGKILL);
  const absl::Time killed_at = absl::Now();
  ASSERT_TRUE(big->Wait(absl::Seconds(10)).has_value());
  const v1::ListReportsResponse at_kill = ListReports(big_agent);
  std::cout << "E2E: killed BigHeapApp " << absl::FormatDuration(killed_at - test_start)
            << " into the test while it wrote " << files[0] << " (" << (stat_ok ? st.st_size : -1)
            << " bytes then); dump states just after the kill: " << ToJson(at_kill) << std::endl;
  ASSERT_TRUE(stat_ok) << files[0];
  EXPECT_EQ(st.st_mode & 077, 0u) << files[0] << " must be private (0600), mode " << std::oct
                                  << (st.st_mode & 0777);

  // ---- 2. the dump is FAILED with a reason, counted as an error, its file deleted ----
  v1::ExtendedDump failed;
  ASSERT_TRUE(WaitFor(absl::Seconds(60),
                      [&] {
                        const v1::ListReportsResponse reports = ListReports(big_agent);
                        for (const v1::ExtendedDump& d : reports.dumps()) {
                          if (d.dump_id() == requested.dump_id()) failed = d;
                        }
                        return failed.state() == v1::EXTENDED_DUMP_STATE_FAILED ||
                               failed.state() == v1::EXTENDED_DUMP_STATE_DONE;
                      }))
      << ToJson(ListReports(big_agent)) << DaemonLog();
  ASSERT_EQ(failed.state(), v1::EXTENDED_DUMP_STATE_FAILED) << failed.DebugString();
  EXPECT_FALSE(failed.error().empty());
  EXPECT_FALSE(absl::StrContains(failed.error(), "restarted")) << failed.error();
  EXPECT_TRUE(failed.has_finished_time());
  EXPECT_TRUE(failed.report_classes().empty());
  std::cout << "E2E: dump " << failed.dump_id() << " FAILED "
            << absl::FormatDuration(absl::Now() - killed_at)
            << " after the kill: " << failed.error() << std::endl;
  EXPECT_TRUE(WaitFor(absl::Seconds(10), [&] { return FilesUnder(dump_dir_).empty(); }))
      << "partial dump left behind: " << Names(FilesUnder(dump_dir_));
  const std::string metrics = Metrics();
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_extended_dumps_total{agent=\"", big_agent,
                                              "\",result=\"error\"}")),
            1.0)
      << metrics;
  EXPECT_EQ(MetricValue(metrics, absl::StrCat("heapwatch_extended_dumps_total{agent=\"", big_agent,
                                              "\",result=\"ok\"}"))
                .value_or(0),
            0.0);
  // The fault counter (docs/fault-injection.md): the JVM exited during its dump.
  EXPECT_GE(MetricValue(metrics, "heapwatch_faults_total{reason=\"jvm_exited\"}").value_or(0), 1.0)
      << metrics;
  v1::GetReportRequest get;
  get.set_agent(big_agent);
  get.set_class_name("BigHeapApp$Node");
  v1::GetReportResponse no_report;
  EXPECT_EQ(CallStatus(&v1::QueryService::Stub::GetReport, get, &no_report).error_code(),
            grpc::StatusCode::NOT_FOUND);
  const testing::CommandResult ctl_reports = Ctl({"reports", big_agent, "--json"});
  EXPECT_EQ(ctl_reports.exit_code, 0) << ctl_reports.err;
  EXPECT_TRUE(absl::StrContains(ctl_reports.out, failed.dump_id())) << ctl_reports.out;
  EXPECT_TRUE(absl::StrContains(ctl_reports.out, "FAILED") ||
              absl::StrContains(ctl_reports.out, "failed"))
      << ctl_reports.out;

  // ---- 3. the daemon is healthy: it answers, sees the JVM gone, keeps collecting the other ----
  ASSERT_TRUE(daemon_->running()) << DaemonLog();
  EXPECT_TRUE(WaitFor(absl::Seconds(30), [&] {
    const v1::ListAgentsResponse agents =
        Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest());
    for (const v1::Agent& a : agents.agents()) {
      if (a.agent() == big_agent) return a.state() == v1::AGENT_STATE_DOWN;
    }
    return false;
  })) << DaemonLog();
  const int before = SnapshotCount(healthy_agent, "HealthyApp$CacheEntry");
  absl::SleepFor(absl::Seconds(10));
  const int during = SnapshotCount(healthy_agent, "HealthyApp$CacheEntry") - before;
  EXPECT_GE(during, 3) << "HealthyApp must still be collected every 2 s\n" << DaemonLog();
  EXPECT_TRUE(absl::StrContains(
      Metrics(), absl::StrCat("heapwatch_agent_up{agent=\"", healthy_agent, "\"} 1")));
  EXPECT_TRUE(absl::StrContains(Ctl({"agents", "--json"}).out, healthy_agent));

  ASSERT_NO_FATAL_FAILURE(StopDaemon());
  for (absl::string_view line : absl::StrSplit(DaemonLog(), '\n')) {
    EXPECT_FALSE(absl::StrContains(line, " critical ")) << line;
  }
  std::cout << "E2E: total " << absl::FormatDuration(absl::Now() - test_start) << std::endl;
}

}  // namespace
}  // namespace heapwatch
