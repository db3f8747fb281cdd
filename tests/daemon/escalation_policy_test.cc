// The escalation's policy (daemon/escalation_policy.h) as a unit: coverage of leaks and suspect
// episodes, joining an open dump, the join window and min_dump_interval driven by a fake clock,
// coverage rebuilt from stored dump records, and the budgets. No thread, no store, no JVM.
#include "daemon/escalation_policy.h"

#include <string>
#include <vector>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/time_util.h"

namespace heapwatch::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

diff::Suspect S(std::string name, absl::Time first_seen, std::string leak = "") {
  diff::Suspect s;
  s.class_name = std::move(name);
  s.first_seen = first_seen;
  s.leak = std::move(leak);
  return s;
}

std::vector<std::string> Names(const CoverageDecision& d) {
  std::vector<std::string> out;
  for (const diff::Suspect* s : d.uncovered) out.push_back(s->class_name);
  return out;
}

TEST(EscalationPolicyTest, AnUncoveredLeakStartsOneDumpWithAllItsClasses) {
  FakeClock clock;
  const absl::Time t = clock.Now();
  DumpCoverage coverage;
  std::vector<diff::Suspect> suspects = {S("a.Node", t, "leak-1"), S("a.Entry", t, "leak-1"),
                                         S("b.Alone", t)};
  CoverageDecision d = DecideCoverage(coverage, suspects, /*open_dump_joinable=*/false);
  EXPECT_EQ(d.action, CoverageAction::kNewDump);
  EXPECT_THAT(Names(d), ElementsAre("a.Node", "a.Entry", "b.Alone"));
  // A suspect without a leak id is a leak of its own.
  EXPECT_THAT(d.new_leaks, ElementsAre("class b.Alone", "leak-1"));
}

TEST(EscalationPolicyTest, UncoveredClassesJoinAnOpenDump) {
  FakeClock clock;
  DumpCoverage coverage;
  std::vector<diff::Suspect> suspects = {S("a.Node", clock.Now(), "leak-1")};
  EXPECT_EQ(DecideCoverage(coverage, suspects, /*open_dump_joinable=*/true).action,
            CoverageAction::kJoin);
}

TEST(EscalationPolicyTest, CoveredEpisodesNeedNothing) {
  FakeClock clock;
  const absl::Time first_seen = clock.Now();
  DumpCoverage coverage;
  clock.Advance(absl::Minutes(1));
  MarkCovered(S("a.Node", first_seen), clock.Now(), &coverage);
  CoverageDecision d = DecideCoverage(coverage, {S("a.Node", first_seen)}, false);
  EXPECT_EQ(d.action, CoverageAction::kNone);
  EXPECT_THAT(d.uncovered, IsEmpty());
}

TEST(EscalationPolicyTest, AClassJoiningACoveredLeakStartsNoDump) {
  FakeClock clock;
  const absl::Time leak_began = clock.Now();
  DumpCoverage coverage;
  clock.Advance(absl::Minutes(2));
  MarkCovered(S("a.Node", leak_began, "leak-1"), clock.Now(), &coverage);
  clock.Advance(absl::Minutes(10));
  // a.Entry is flagged later in the same leak: uncovered itself, but its leak is covered.
  std::vector<diff::Suspect> suspects = {S("a.Node", leak_began, "leak-1"),
                                         S("a.Entry", clock.Now(), "leak-1")};
  CoverageDecision d = DecideCoverage(coverage, suspects, false);
  EXPECT_EQ(d.action, CoverageAction::kNoNewLeak);
  EXPECT_THAT(Names(d), ElementsAre("a.Entry"));
  EXPECT_THAT(d.new_leaks, IsEmpty());
  // With a dump still open it joins that dump.
  EXPECT_EQ(DecideCoverage(coverage, suspects, true).action, CoverageAction::kJoin);
}

TEST(EscalationPolicyTest, ALeakIsCoveredOnlyByADumpRequestedAfterItBegan) {
  FakeClock clock;
  DumpCoverage coverage;
  // a.Node was covered by a dump of an earlier episode, before this leak began.
  MarkCovered(S("a.Node", clock.Now()), clock.Now(), &coverage);
  clock.Advance(absl::Hours(3));
  std::vector<diff::Suspect> suspects = {S("a.Node", clock.Now(), "leak-2"),
                                         S("a.Entry", clock.Now(), "leak-2")};
  CoverageDecision d = DecideCoverage(coverage, suspects, false);
  EXPECT_EQ(d.action, CoverageAction::kNewDump);
  EXPECT_THAT(Names(d), ElementsAre("a.Node", "a.Entry"));
  EXPECT_THAT(d.new_leaks, ElementsAre("leak-2"));
}

TEST(EscalationPolicyTest, ALeakCoveredSinceItBeganStaysCoveredWhenAClassStartsANewEpisode) {
  FakeClock clock;
  const absl::Time leak_began = clock.Now();
  DumpCoverage coverage;
  clock.Advance(absl::Hours(1));
  MarkCovered(S("a.Node", leak_began, "leak-1"), clock.Now(), &coverage);
  clock.Advance(absl::Hours(1));
  // a.Node's episode ended and a new one began; a.Entry was flagged since the leak began. The leak
  // was covered after it began (by a.Node's dump), so neither class starts a dump.
  std::vector<diff::Suspect> suspects = {S("a.Entry", leak_began, "leak-1"),
                                         S("a.Node", clock.Now(), "leak-1")};
  CoverageDecision d = DecideCoverage(coverage, suspects, false);
  EXPECT_EQ(d.action, CoverageAction::kNoNewLeak);
  EXPECT_THAT(Names(d), ElementsAre("a.Entry", "a.Node"));
}

TEST(EscalationPolicyTest, AJoiningClassIsCoveredFromItsOwnFirstSeen) {
  FakeClock clock;
  const absl::Time requested = clock.Now();
  clock.Advance(absl::Seconds(30));
  DumpCoverage coverage;
  MarkCovered(S("a.Late", clock.Now()), requested, &coverage);
  EXPECT_EQ(coverage.covered.at("a.Late"), clock.Now());
}

TEST(EscalationPolicyTest, AnAutomaticDumpWaitsForItsJoinWindowAndTheInterval) {
  FakeClock clock;
  const absl::Duration join = absl::Minutes(1), interval = absl::Hours(1);
  DumpCoverage coverage;
  EXPECT_EQ(NextDumpAllowed(coverage, interval), absl::InfinitePast());
  EXPECT_EQ(DumpNotBefore(clock.Now(), join, coverage, interval), clock.Now() + join);
  EXPECT_EQ(DumpNotBefore(clock.Now(), absl::ZeroDuration(), coverage, interval), clock.Now());
  coverage.last_dump = clock.Now();
  clock.Advance(absl::Minutes(20));
  // Within the interval: the interval decides, whatever the join window.
  EXPECT_EQ(DumpNotBefore(clock.Now(), join, coverage, interval), coverage.last_dump + interval);
  clock.Advance(absl::Minutes(59));
  // Past it: the join window decides again.
  EXPECT_EQ(DumpNotBefore(clock.Now(), join, coverage, interval), clock.Now() + join);
}

v1::ExtendedDump Record(v1::ExtendedDumpState state, absl::Time requested, absl::Time dumped,
                        absl::Time finished, std::vector<std::string> classes,
                        std::string error = "") {
  v1::ExtendedDump d;
  d.set_state(state);
  d.set_error(std::move(error));
  proto::SetTimestamp(requested, &d, &v1::ExtendedDump::mutable_requested_time);
  if (dumped != absl::InfinitePast()) {
    proto::SetTimestamp(dumped, &d, &v1::ExtendedDump::mutable_dump_time);
  }
  proto::SetTimestamp(finished, &d, &v1::ExtendedDump::mutable_finished_time);
  for (std::string& c : classes) d.add_suspect_classes(std::move(c));
  return d;
}

TEST(EscalationPolicyTest, StoredDumpsCoverWhatTheyAnalysedOrRefused) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  DumpCoverage coverage;
  AddStoredDump(Record(v1::EXTENDED_DUMP_STATE_DONE, t0, t0 + absl::Minutes(1),
                       t0 + absl::Minutes(3), {"a.Node"}),
                &coverage);
  AddStoredDump(Record(v1::EXTENDED_DUMP_STATE_FAILED, t0 + absl::Hours(1), absl::InfinitePast(),
                       t0 + absl::Hours(1), {"b.Big"}, "refused: the analysis would need..."),
                &coverage);
  AddStoredDump(Record(v1::EXTENDED_DUMP_STATE_FAILED, t0 + absl::Hours(2), t0 + absl::Hours(2),
                       t0 + absl::Hours(2), {"c.Crash"}, "dump failed: the JVM is gone"),
                &coverage);
  // DONE: up to its finished_time; refused: up to its request; other failures: nothing.
  EXPECT_EQ(coverage.covered.at("a.Node"), t0 + absl::Minutes(3));
  EXPECT_EQ(coverage.covered.at("b.Big"), t0 + absl::Hours(1));
  EXPECT_EQ(coverage.covered.count("c.Crash"), 0u);
  // Every dump taken counts for the interval, failed or not.
  EXPECT_EQ(coverage.last_dump, t0 + absl::Hours(2));
  // An episode that began while the DONE dump's analysis ran is covered; a later one is not.
  EXPECT_EQ(DecideCoverage(coverage, {S("a.Node", t0 + absl::Minutes(2))}, false).action,
            CoverageAction::kNone);
  EXPECT_EQ(DecideCoverage(coverage, {S("a.Node", t0 + absl::Minutes(4))}, false).action,
            CoverageAction::kNewDump);
}

TEST(EscalationPolicyTest, BudgetsRefuseBeforeTheJvmIsPaused) {
  EscalationConfig config;
  config.max_analysis_memory_bytes = 1000;
  config.max_dump_disk_bytes = 2000;
  config.max_queued = 2;
  EXPECT_EQ(EstimateDumpBytes(1000), 1200u);
  EXPECT_EQ(RefusalReason(config, 800, 0), "");  // 960 bytes
  EXPECT_THAT(RefusalReason(config, 900, 0),
              AllOf(StartsWith(kRefusedPrefix), HasSubstr("max_analysis_memory_bytes")));
  config.max_analysis_memory_bytes = 10000;
  EXPECT_THAT(RefusalReason(config, 2000, 0),
              AllOf(StartsWith(kRefusedPrefix), HasSubstr("max_dump_disk_bytes")));
  EXPECT_THAT(RefusalReason(config, 100, 2),
              AllOf(StartsWith(kRefusedPrefix), HasSubstr("2 dumps are already waiting")));
  EXPECT_EQ(RefusalReason(config, 100, 1), "");
}

TEST(EscalationPolicyTest, DiskAndMemoryBudgetsAlwaysLetTheFirstOneIn) {
  EscalationConfig config;
  config.max_analysis_memory_bytes = 1000;
  config.max_dump_disk_bytes = 1000;
  EXPECT_TRUE(FitsDiskBudget(config, 0, 5000));
  EXPECT_TRUE(FitsDiskBudget(config, 400, 600));
  EXPECT_FALSE(FitsDiskBudget(config, 400, 601));
  EXPECT_TRUE(FitsMemoryBudget(config, 0, 0, 5000));
  EXPECT_TRUE(FitsMemoryBudget(config, 1, 400, 600));
  EXPECT_FALSE(FitsMemoryBudget(config, 1, 400, 601));
}

TEST(EscalationPolicyTest, DumpIdsSortByRequestTime) {
  const absl::Time t = absl::FromUnixMicros(1'700'000'000'123'456);
  EXPECT_EQ(DumpIdFor(t), "20231114T221320.123456Z");
  EXPECT_LT(DumpIdFor(t), DumpIdFor(t + absl::Microseconds(1)));
  EXPECT_TRUE(DumpInProgress(v1::EXTENDED_DUMP_STATE_ANALYZING));
  EXPECT_FALSE(DumpInProgress(v1::EXTENDED_DUMP_STATE_DONE));
}

}  // namespace
}  // namespace heapwatch::daemon
