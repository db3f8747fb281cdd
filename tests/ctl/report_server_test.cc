// heapwatchctl report / reports / dump / dump-diff against a real QueryServer with a real
// daemon::Escalation over a real store (tests/daemon/query_fixture.h), whose dump and report
// records are stored the way Escalation stores them (daemon/escalation.h: table "xdump" key
// "<agent>/<dump_id>", table "xreport" key "<agent>/<class>/<dump_id>"). Taking a real extended
// dump of a real JVM (`dump --wait` to DONE) is covered by tests/e2e.
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectors/attach.h"
#include "common/clock.h"
#include "ctl/ctl.h"
#include "daemon/config.h"
#include "daemon/escalation.h"
#include "daemon/query_server.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "heapwatch/records/v1/records.pb.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "proto/time_util.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr char kDoneId[] = "20231114T221320.000000Z";
constexpr char kFailedId[] = "20231114T222000.000000Z";
constexpr char kOlderId[] = "20231114T220000.000000Z";

class ReportServerTest : public heapwatch::testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    if (HasFatalFailure()) return;
    const std::string agent = kLive.value;

    v1::ExtendedDump done;
    done.set_agent(agent);
    done.set_dump_id(kDoneId);
    done.set_state(v1::EXTENDED_DUMP_STATE_DONE);
    done.set_trigger(v1::EXTENDED_DUMP_TRIGGER_SUSPECT);
    done.add_suspect_classes("Leak");
    done.add_report_classes("Leak");
    proto::ToTimestamp(kT0 + absl::Seconds(120), done.mutable_requested_time());
    done.set_file_bytes(12'345'678);
    done.set_gzip(true);
    proto::ToDuration(absl::Milliseconds(840), done.mutable_dump_pause());
    proto::ToDuration(absl::Milliseconds(2100), done.mutable_analysis_duration());
    Put("xdump", absl::StrCat(agent, "/", kDoneId), done);

    v1::ExtendedDump failed;
    failed.set_agent(agent);
    failed.set_dump_id(kFailedId);
    failed.set_state(v1::EXTENDED_DUMP_STATE_FAILED);
    failed.set_trigger(v1::EXTENDED_DUMP_TRIGGER_MANUAL);
    failed.set_error("JVM exited during the dump");
    proto::ToTimestamp(kT0 + absl::Seconds(600), failed.mutable_requested_time());
    Put("xdump", absl::StrCat(agent, "/", kFailedId), failed);

    v1::DrillDownReport report;
    report.set_agent(agent);
    report.set_class_name("Leak");
    *report.mutable_dump() = done;
    report.set_instances(30);
    report.set_shallow_bytes(3000);
    report.set_retained_bytes(9'007'199'254'740'993);  // 2^53 + 1: exact only as a string
    report.set_minimum_retained_bytes(2'900);
    v1::AccumulationPoint* point = report.add_accumulation_points();
    point->mutable_object()->set_object_id(0x2000);
    point->mutable_object()->set_class_name("java.util.ArrayList");
    point->mutable_object()->set_retained_bytes(2'900);
    point->set_share(1.0);
    v1::GcRootPath* path = point->mutable_path();
    path->set_found(true);
    path->set_strong(true);
    v1::PathStep* root = path->add_steps();
    root->mutable_object()->set_object_id(0x1000);
    root->mutable_object()->set_class_name("com.example.Leaky");
    root->mutable_object()->set_gc_root_kind("sticky class");
    v1::PathStep* step = path->add_steps();
    step->set_reference("static LEAKS");
    *step->mutable_object() = point->object();
    Put("xreport", absl::StrCat(agent, "/Leak/", kDoneId), report);

    daemon::EscalationConfig config;
    config.enabled = true;
    config.automatic = false;
    auto escalation = daemon::Escalation::Start(config, dir_ + "/data", collectors::AttachOptions(),
                                                store_.get(), &metrics_, Clock::Real());
    ASSERT_TRUE(escalation.ok()) << escalation.status();
    escalation_ = *std::move(escalation);
    auto server = daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_,
                                             escalation_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    escalation_server_ = *std::move(server);
  }

  void TearDown() override {
    escalation_server_.reset();
    if (escalation_ != nullptr) escalation_->Stop(absl::Seconds(10));
    escalation_.reset();
    QueryFixture::TearDown();
  }

  void Put(const std::string& table, const std::string& key,
           const google::protobuf::Message& message) {
    Status s = store_->PutRecord(table, key, message.SerializeAsString());
    ASSERT_TRUE(s.ok()) << s;
  }

  struct Result {
    int code;
    std::string out, err;
  };
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"heapwatchctl", "--server",
                               absl::StrCat("127.0.0.1:", escalation_server_->port())});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }

  std::unique_ptr<daemon::Escalation> escalation_;
  std::unique_ptr<daemon::QueryServer> escalation_server_;
};

TEST_F(ReportServerTest, ReportTextAndJson) {
  Result r = Run({"report", kLive.value, "Leak"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Drill-down report: Leak in host-1-a"));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("Extended dump ", kDoneId, " (suspect, done)")));
  EXPECT_THAT(r.out, HasSubstr("file 11.8 MiB (gzip)"));
  EXPECT_THAT(r.out, HasSubstr("Accumulation point 1 of 1: java.util.ArrayList@0x2000"));
  EXPECT_THAT(r.out, HasSubstr("    GC root (sticky class) com.example.Leaky@0x1000 (0 B)\n"
                               "    static LEAKS -> java.util.ArrayList@0x2000 (2.8 KiB)\n"));

  Result json = Run({"report", kLive.value, "Leak", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"retained_bytes\": \"9007199254740993\""));
  v1::GetReportResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok()) << json.out;
  EXPECT_EQ(parsed.report().retained_bytes(), 9'007'199'254'740'993u);
  EXPECT_EQ(parsed.report().accumulation_points(0).path().steps(1).reference(), "static LEAKS");

  Result missing = Run({"report", kLive.value, "Cache"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err,
              ContainsRegex("GetReport on 127.0.0.1:[0-9]+ failed: NOT_FOUND: .*Cache"));
}

TEST_F(ReportServerTest, ReportsListsDoneAndFailedDumpsNewestFirst) {
  Result r = Run({"reports", kLive.value});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("host-1-a: 2 extended dumps\n"));
  EXPECT_THAT(r.out, ContainsRegex(absl::StrCat(
                         kFailedId,
                         " +failed +manual .*error: JVM exited "
                         "during the dump\n",
                         kDoneId, " +done +suspect .*11.8 MiB +0.84 s +2.10 s +Leak\n")));
  Result json = Run({"reports", kLive.value, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  v1::ListReportsResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok()) << json.out;
  ASSERT_EQ(parsed.dumps_size(), 2);
  EXPECT_EQ(parsed.dumps(1).file_bytes(), 12'345'678u);
}

TEST_F(ReportServerTest, DumpAndDumpDiffErrorsNameTheReason) {
  // The fixture's agent has no JVM escalation could dump.
  Result dump = Run({"dump", kLive.value, "--wait"});
  EXPECT_EQ(dump.code, 1);
  EXPECT_THAT(dump.err, HasSubstr("TriggerExtendedDump"));
  EXPECT_THAT(dump.err, HasSubstr("NOT_FOUND"));
  EXPECT_EQ(dump.out, "");
  // One analysed dump only.
  Result diff = Run({"dump-diff", kLive.value});
  EXPECT_EQ(diff.code, 1);
  EXPECT_THAT(diff.err, HasSubstr("DiffExtendedDumps"));
  EXPECT_THAT(diff.err, HasSubstr("NOT_FOUND"));
  // A named dump that is not analysed.
  Result not_done = Run({"dump-diff", kLive.value, kDoneId, kFailedId});
  EXPECT_EQ(not_done.code, 1);
  EXPECT_THAT(not_done.err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(not_done.err, HasSubstr(kFailedId));
}

// A summary as Escalation stores it per analysed dump ("xsummary" "<agent>/<dump_id>"): Leak held
// by one ArrayList hanging from a static field, and a Cache that does not change.
records::v1::ExtendedDumpSummary Summary(const std::string& dump_id, uint64_t leaks) {
  records::v1::ExtendedDumpSummary s;
  s.set_agent("host-1-a");
  s.set_dump_id(dump_id);
  s.mutable_totals()->set_reachable_shallow_bytes(500 + 100 * leaks);
  records::v1::DumpClassRow* leak = s.add_classes();
  leak->set_class_name("Leak");
  leak->set_instances(leaks);
  leak->set_shallow_bytes(100 * leaks);
  leak->set_retained_bytes(150 * leaks);
  records::v1::DumpClassRow* cache = s.add_classes();
  cache->set_class_name("Cache");
  cache->set_instances(5);
  cache->set_shallow_bytes(500);
  cache->set_retained_bytes(500);
  records::v1::DumpOwnerRow* owner = s.add_owners();
  owner->set_class_name("java.util.ArrayList");
  owner->add_path("sticky class com.example.Leaky");
  owner->add_path("static LEAKS");
  owner->set_retained_bytes(150 * leaks);
  owner->set_objects(1);
  return s;
}

TEST_F(ReportServerTest, DumpDiffOfTheLastTwoAnalysedDumps) {
  v1::ExtendedDump older;
  older.set_agent(kLive.value);
  older.set_dump_id(kOlderId);
  older.set_state(v1::EXTENDED_DUMP_STATE_DONE);
  older.set_trigger(v1::EXTENDED_DUMP_TRIGGER_MANUAL);
  Put("xdump", absl::StrCat(kLive.value, "/", kOlderId), older);
  Put("xsummary", absl::StrCat(kLive.value, "/", kOlderId), Summary(kOlderId, 10));
  Put("xsummary", absl::StrCat(kLive.value, "/", kDoneId), Summary(kDoneId, 30));

  Result r = Run({"dump-diff", kLive.value});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("host-1-a: extended dump ", kOlderId)));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("-> ", kDoneId)));
  EXPECT_THAT(r.out, ContainsRegex("\nLeak +changed +30 +\\+20 +2.9 KiB +\\+2.0 KiB +4.4 KiB +"
                                   "\\+2.9 KiB\n"));
  EXPECT_THAT(r.out, HasSubstr("+2.9 KiB  java.util.ArrayList: retained 1.5 KiB -> 4.4 KiB"));
  EXPECT_THAT(r.out, ContainsRegex("path: sticky class com.example.Leaky -> static LEAKS"));

  Result named = Run({"dump-diff", kLive.value, kOlderId, kDoneId, "--top", "1", "--json"});
  ASSERT_EQ(named.code, 0) << named.err;
  v1::DiffExtendedDumpsResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(named.out, &parsed).ok()) << named.out;
  ASSERT_EQ(parsed.diff().classes_size(), 1);  // --top 1
  EXPECT_EQ(parsed.diff().classes(0).class_name(), "Leak");
  EXPECT_EQ(parsed.diff().classes(0).delta_retained_bytes(), 3000);
  EXPECT_EQ(parsed.diff().from_dump(), kOlderId);
}

}  // namespace
}  // namespace heapwatch::ctl
