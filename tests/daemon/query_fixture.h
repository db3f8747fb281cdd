// Shared by tests/daemon and tests/ctl: a real SnapshotStore in a fresh temporary directory holding
// two agents, an AgentTable in which one of them is live with one suspect, and a real QueryServer
// on 127.0.0.1:0 serving them.
//
//   kLive ("host-1-a", pid 1, com.example.Leaky): snapshots at t0, t0+60s, t0+120s
//       t0      Leak 10/1000   Cache 5/500   Gone 1/100
//       t0+60   Leak 20/2000   Cache 5/500   Gone 1/100
//       t0+120  Leak 30/3000   Cache 5/500   New 2/64
//     suspect: Leak, score 0.9, first seen t0+120, 16.5 bytes/s, in leak kLeakId (every-snapshot
//     scale); leaks: kLeakId (main class Leak, the one class Leak), 16.5 bytes/s
//     ExplainSuspect: a real diff::LeakDetector (default options) fed the three snapshots
//   kDown ("host-2-b", pid 2, com.example.Old): snapshots at t0 and t0+60 (Foo 1/16, then Foo 2/32)
#ifndef HEAPWATCH_TESTS_DAEMON_QUERY_FIXTURE_H_
#define HEAPWATCH_TESTS_DAEMON_QUERY_FIXTURE_H_

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "daemon/agent_table.h"
#include "daemon/metrics.h"
#include "daemon/query_server.h"
#include "diff/leak_detector.h"
#include "gtest/gtest.h"
#include "storage/snapshot_store.h"
#include "tests/daemon/test_store.h"

namespace heapwatch::testing {

class QueryFixture : public ::testing::Test {
 protected:
  static inline const AgentId kLive{"host-1-a"};
  static inline const AgentId kDown{"host-2-b"};
  static inline const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
  static inline const std::string kLeakId = "L00000000002a";

  void SetUp() override {
    dir_ = MakeTestDir("query");
    ASSERT_FALSE(dir_.empty());
    AgentInfo live = Info(kLive, 1, "com.example.Leaky");
    AgentInfo down = Info(kDown, 2, "com.example.Old");
    auto store = OpenTestStore(dir_, {live, down});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    Append(kLive, kT0, {{"Leak", 10, 1000}, {"Cache", 5, 500}, {"Gone", 1, 100}});
    Append(kLive, kT0 + absl::Seconds(60),
           {{"Leak", 20, 2000}, {"Cache", 5, 500}, {"Gone", 1, 100}});
    Append(kLive, kT0 + absl::Seconds(120),
           {{"Leak", 30, 3000}, {"Cache", 5, 500}, {"New", 2, 64}});
    detector_ = std::make_unique<diff::LeakDetector>(diff::LeakOptions(), live.start_time);
    for (const absl::Duration d : {absl::Seconds(0), absl::Seconds(60), absl::Seconds(120)}) {
      auto snapshot = store_->ReadSnapshot(kLive, kT0 + d);
      ASSERT_TRUE(snapshot.ok()) << snapshot.status();
      ASSERT_TRUE(detector_->Observe(*snapshot));
    }
    Append(kDown, kT0, {{"Foo", 1, 16}});
    Append(kDown, kT0 + absl::Seconds(60), {{"Foo", 2, 32}});

    daemon::AgentStatus status;
    status.info = live;
    status.state = daemon::AgentState::kUp;
    status.last_snapshot_time = kT0 + absl::Seconds(120);
    status.next_collection = kT0 + absl::Seconds(180);
    status.last_collection_duration = absl::Milliseconds(250);
    diff::Suspect suspect;
    suspect.class_name = "Leak";
    suspect.score = 0.9;
    suspect.first_seen = kT0 + absl::Seconds(120);
    suspect.growth_bytes_per_second = 16.5;
    suspect.growth_instances_per_second = 0.165;
    suspect.bytes = 3000;
    suspect.instances = 30;
    suspect.leak = kLeakId;
    status.suspects = {suspect};
    diff::Leak leak;
    leak.id = kLeakId;
    leak.main_class = "Leak";
    leak.classes = {{"Leak", 3000, 16.5}};
    leak.bytes = 3000;
    leak.growth_bytes_per_second = 16.5;
    leak.score = 0.9;
    leak.first_seen = kT0 + absl::Seconds(120);
    status.leaks = {leak};
    agents_.Put(status);

    auto server = daemon::QueryServer::Start(
        "127.0.0.1:0", store_.get(), &agents_, &metrics_, nullptr,
        [this](const AgentId& agent, std::string_view class_name)
            -> std::optional<diff::Explanation> {
          if (agent != kLive) return std::nullopt;
          std::lock_guard<std::mutex> lock(detector_mu_);
          return detector_->Explain(class_name);
        });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
  }

  void TearDown() override {
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static AgentInfo Info(const AgentId& id, int64_t pid, const std::string& main_class) {
    AgentInfo info;
    info.id = id;
    info.host = "host";
    info.pid = pid;
    info.main_class = main_class;
    info.jvm_version = "17.0.15";
    info.start_time = kT0 - absl::Hours(1);
    return info;
  }

  void Append(const AgentId& agent, absl::Time t,
              std::vector<std::tuple<std::string, uint64_t, uint64_t>> rows) {
    Snapshot s;
    s.agent = agent;
    s.time = t;
    for (auto& [name, instances, bytes] : rows) {
      s.histogram.rows.push_back({name, "", instances, bytes});
      s.histogram.total_instances += instances;
      s.histogram.total_bytes += bytes;
    }
    Status st = store_->Append(s);
    ASSERT_TRUE(st.ok()) << st;
  }

  std::string dir_;
  std::unique_ptr<storage::SnapshotStore> store_;
  daemon::AgentTable agents_;
  daemon::Metrics metrics_;
  std::mutex detector_mu_;
  std::unique_ptr<diff::LeakDetector> detector_;  // guarded by detector_mu_: kLive's detector
  std::unique_ptr<daemon::QueryServer> server_;
  std::string address_;
};

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_DAEMON_QUERY_FIXTURE_H_
