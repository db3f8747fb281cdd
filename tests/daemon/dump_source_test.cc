// Escalation with dump sources other than attach (daemon/dump_source.h): what a registered agent's
// source will plug into. A source that delivers a real HotSpot dump file (the Eclipse MAT corpus'
// sun_jdk5_64bit.hprof, read from ../shared/corpora) is dumped, analysed and reported exactly like
// an attach dump; an agent kind without a source gets a FAILED dump with the reason. FakeClock; no
// JVM (the file stands for what an agent would upload).
#include "daemon/dump_source.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "daemon/escalation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/daemon/test_store.h"

namespace heapwatch::daemon {
namespace {

namespace fs = std::filesystem;

const AgentId kAgent{"remote-1"};
constexpr char kSuspectClass[] = "java.lang.String";

// Delivers a copy of a dump file, as a registered agent's upload would: the daemon writes the file
// itself, under <dump_dir>/<its own uid>/.
class FileDumpSource final : public DumpSource {
 public:
  explicit FileDumpSource(std::string from) : from_(std::move(from)) {}
  std::string PathFor(const DumpRequest& r) const override {
    return absl::StrCat(r.dump_dir, "/", ::geteuid(), "/", r.file_name);
  }
  uint32_t FileOwner(const DumpRequest&) const override { return ::geteuid(); }
  StatusOr<WrittenDump> WriteDump(const DumpRequest& r) override {
    ++calls_;
    const std::string path = PathFor(r);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (!fs::copy_file(from_, path, ec)) return absl::InternalError(ec.message());
    WrittenDump out;
    out.path = path;
    out.file_bytes = fs::file_size(path);
    out.gzip = false;
    out.pause = absl::Milliseconds(250);
    return out;
  }
  int calls() const { return calls_; }

 private:
  std::string from_;
  std::atomic<int> calls_{0};
};

class DumpSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = heapwatch::testing::MakeTestDir("dump-source");
    ASSERT_FALSE(dir_.empty());
    AgentInfo info;
    info.id = kAgent;
    info.kind = AgentKind::kRegistered;
    auto store = heapwatch::testing::OpenTestStore(dir_, {info});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    escalation_.reset();
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void Start(DumpSourceResolver sources) {
    EscalationConfig config;
    config.gzip = false;
    auto e = Escalation::StartWithSources(config, dir_ + "/data", std::move(sources), store_.get(),
                                          &metrics_, &clock_);
    ASSERT_TRUE(e.ok()) << e.status();
    escalation_ = *std::move(e);
  }

  // The registered agent is live and flags kSuspectClass.
  void Collect() {
    EscalationTarget t;
    t.info.id = kAgent;
    t.info.kind = AgentKind::kRegistered;
    t.heap_bytes = 1 << 20;
    diff::Suspect s;
    s.class_name = kSuspectClass;
    s.first_seen = clock_.Now();
    escalation_->OnCollection(t, {s});
  }

  // Waits (real time, up to 60 s) until the agent's only dump has ended; returns it.
  v1::ExtendedDump WaitForEnd() {
    for (int i = 0; i < 600; ++i) {
      auto dumps = escalation_->ListDumps(kAgent);
      if (dumps.ok() && dumps->size() == 1 &&
          ((*dumps)[0].state() == v1::EXTENDED_DUMP_STATE_DONE ||
           (*dumps)[0].state() == v1::EXTENDED_DUMP_STATE_FAILED)) {
        return (*dumps)[0];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the dump did not end within 60 s";
    return v1::ExtendedDump();
  }

  std::vector<std::string> RawFiles() {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_ + "/data/dumps", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file()) out.push_back(it->path().string());
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<storage::SnapshotStore> store_;
  Metrics metrics_;
  FakeClock clock_;
  std::unique_ptr<Escalation> escalation_;
};

TEST_F(DumpSourceTest, ADumpFromAnotherSourceIsAnalysedLikeAnAttachDump) {
  FileDumpSource source(HEAPWATCH_CORPORA_DIR "/eclipse-mat/sun_jdk5_64bit.hprof");
  Start([&source](const AgentInfo& agent) -> DumpSource* {
    return agent.kind == AgentKind::kRegistered ? &source : nullptr;
  });
  absl::Duration pause;
  escalation_->SetDumpPauseListener([&pause](const AgentId&, absl::Duration p) { pause = p; });
  Collect();
  auto requested = escalation_->Trigger(kAgent);  // starts it without waiting for the join window
  ASSERT_TRUE(requested.ok()) << requested.status();
  const v1::ExtendedDump done = WaitForEnd();
  ASSERT_EQ(done.state(), v1::EXTENDED_DUMP_STATE_DONE) << done.error();
  EXPECT_EQ(source.calls(), 1);
  EXPECT_EQ(pause, absl::Milliseconds(250));
  EXPECT_EQ(done.dump_pause().nanos(), 250'000'000);
  EXPECT_THAT(done.report_classes(), ::testing::Contains(kSuspectClass));
  auto report = escalation_->GetReport(kAgent, kSuspectClass);
  ASSERT_TRUE(report.ok()) << report.status();
  // MAT counts 492 reachable Strings in this dump (EXPECTED.md).
  EXPECT_EQ(report->instances(), 492u);
  EXPECT_THAT(RawFiles(), ::testing::IsEmpty());  // deleted after the analysis
}

TEST_F(DumpSourceTest, AnAgentKindWithoutASourceFailsWithTheReason) {
  collectors::AttachOptions attach;
  AttachDumpSource attach_source(attach);
  Start(Escalation::AttachDumpSourceResolver(&attach_source));
  Collect();
  ASSERT_TRUE(escalation_->Trigger(kAgent).ok());
  const v1::ExtendedDump failed = WaitForEnd();
  EXPECT_EQ(failed.state(), v1::EXTENDED_DUMP_STATE_FAILED);
  EXPECT_THAT(failed.error(), ::testing::HasSubstr("no dump source for agent remote-1"));
  EXPECT_THAT(RawFiles(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace heapwatch::daemon
