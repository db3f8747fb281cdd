// Durability: a writer process killed with SIGKILL at random moments never loses a snapshot whose
// Append returned, and never leaves a corrupt one; a full disk (real ENOSPC on a small tmpfs, and
// EFBIG from RLIMIT_FSIZE) is ResourceExhausted, keeps what was stored, and heals when space
// returns.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <fstream>
#include <random>
#include <set>

#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::ExpectSameSnapshot;
using testing::RunInChild;
using testing::SyntheticSnapshot;
using testing::T0;
using testing::TempDir;
using testing::TestOptions;

constexpr int kClasses = 2000;
constexpr uint64_t kSeed = 11;

int StepOf(absl::Time t) { return static_cast<int>((t - T0()) / absl::Minutes(1)); }

// The writer: appends snapshot after snapshot (resuming after what is stored) and reports each step
// on `fd` only after Append returned OK. Never returns.
[[noreturn]] void Writer(const std::string& dir, int fd) {
  StoreOptions o = TestOptions(dir);
  o.initial_map_bytes = 64 << 10;  // map growth happens inside the kill window too
  o.keyframe_interval = 8;
  auto store = SnapshotStore::Open(o);
  if (!store.ok()) ::_exit(2);
  auto times =
      (*store)->ListSnapshotTimes(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture());
  if (!times.ok() && !absl::IsNotFound(times.status())) ::_exit(3);  // NotFound: the first round
  int step = !times.ok() || times->empty() ? 0 : StepOf(times->back()) + 1;
  for (;; ++step) {
    if (!(*store)->Append(SyntheticSnapshot("a", kSeed, step, kClasses)).ok()) ::_exit(4);
    if (step % 4 == 0 &&
        !(*store)->PutRecord("acks", absl::StrFormat("%08d", step), std::to_string(step)).ok()) {
      ::_exit(5);
    }
    int32_t v = step;
    if (::write(fd, &v, sizeof v) != sizeof v) ::_exit(6);
  }
}

TEST(DurabilityTest, KillDashNineNeverLosesAnAcknowledgedSnapshot) {
  TempDir tmp;
  std::mt19937 rng(20240501);
  std::set<int> acked;
  std::set<int> committed;  // verified as stored after earlier rounds (acked, or committed just
                            // before a kill)
  for (int round = 0; round < 6; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      Writer(tmp.path(), fds[1]);
    }
    ::close(fds[1]);
    // Let it write a random number of snapshots, then kill it at a random moment (possibly
    // mid-commit).
    int want = 3 + static_cast<int>(rng() % 20), got = 0;
    int32_t v;
    while (got < want && ::read(fds[0], &v, sizeof v) == sizeof v) {
      acked.insert(v);
      ++got;
    }
    if (got != want) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      FAIL() << "the writer stopped early: wait status " << status << " (exit code "
             << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ")";
    }
    ::usleep(rng() % 15000);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "writer exited with " << status;
    while (::read(fds[0], &v, sizeof v) == sizeof v)
      acked.insert(v);  // acks written before the kill
    ::close(fds[0]);

    // Reopen: every acknowledged snapshot is intact; at most one more (committed, not yet acked)
    // exists; nothing stored is corrupt.
    auto store = SnapshotStore::Open(TestOptions(tmp.path()));
    ASSERT_TRUE(store.ok()) << store.status();
    auto all =
        (*store)->ReadSnapshots(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
    ASSERT_TRUE(all.ok()) << all.status();
    std::set<int> stored;
    for (const Snapshot& s : *all) {
      int step = StepOf(s.time);
      stored.insert(step);
      ExpectSameSnapshot(s, SyntheticSnapshot("a", kSeed, step, kClasses));
    }
    for (int step : acked)
      ASSERT_TRUE(stored.count(step)) << "acknowledged snapshot " << step << " lost";
    for (int step : committed)
      ASSERT_TRUE(stored.count(step)) << "committed snapshot " << step << " lost";
    int newest_known = std::max(*acked.rbegin(), committed.empty() ? -1 : *committed.rbegin());
    for (int step : stored) {
      // Only the snapshot being appended when the kill came may be there without an
      // acknowledgement.
      ASSERT_TRUE(acked.count(step) || committed.count(step) || step == newest_known + 1)
          << "unexpected snapshot " << step;
    }
    committed = stored;
    // Steps are contiguous: no hole from a half-applied transaction.
    ASSERT_EQ(*stored.rbegin() - *stored.begin() + 1, static_cast<int>(stored.size()));
    auto records = (*store)->ListRecords("acks", "");
    ASSERT_TRUE(records.ok()) << records.status();
    for (const auto& [k, value] : *records) EXPECT_EQ(std::stoi(k), std::stoi(value));
    // Snapshots were not acked before their record was written; so every acked multiple of 4 has
    // one.
    for (int step : acked) {
      if (step % 4 == 0) {
        EXPECT_TRUE((*store)->GetRecord("acks", absl::StrFormat("%08d", step)).ok());
      }
    }
  }
  EXPECT_GT(acked.size(), 18u);
}

// Appends until the first failure; returns the steps that were stored and the failure.
std::pair<int, Status> AppendUntilFailure(SnapshotStore& store, int first_step, int limit) {
  int step = first_step;
  for (; step < first_step + limit; ++step) {
    Status s = store.Append(SyntheticSnapshot("a", kSeed, step, 3000));
    if (!s.ok()) return {step, s};
  }
  return {step, absl::OkStatus()};
}

std::string VerifySteps(SnapshotStore& store, int first, int end) {
  auto all = store.ReadSnapshots(AgentId("a"), absl::InfinitePast(), absl::InfiniteFuture(), 0);
  if (!all.ok()) return "read back: " + all.status().ToString();
  if (static_cast<int>(all->size()) != end - first) {
    return absl::StrFormat("expected %d snapshots, found %d", end - first, all->size());
  }
  for (const Snapshot& s : *all) {
    Snapshot want = SyntheticSnapshot("a", kSeed, StepOf(s.time), 3000);
    if (s.histogram.rows.size() != want.histogram.rows.size() ||
        s.histogram.total_bytes != want.histogram.total_bytes) {
      return "snapshot differs at step " + std::to_string(StepOf(s.time));
    }
  }
  return "";
}

TEST(DurabilityTest, FileSizeLimitIsResourceExhaustedAndHeals) {
  TempDir tmp;
  std::string result = RunInChild([&]() -> std::string {
    ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of being killed
    StoreOptions o = TestOptions(tmp.path());
    auto store = SnapshotStore::Open(o);
    if (!store.ok()) return store.status().ToString();
    auto [stored, st] = AppendUntilFailure(**store, 0, 5);
    if (!st.ok()) return "setup: " + st.ToString();
    struct stat sb;
    if (::stat((tmp.path() + "/data.mdb").c_str(), &sb) != 0) return "stat failed";
    struct rlimit old_limit;
    ::getrlimit(RLIMIT_FSIZE, &old_limit);
    struct rlimit lim = old_limit;
    lim.rlim_cur = static_cast<rlim_t>(sb.st_size) + (512 << 10);
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return "setrlimit failed";
    auto [end, failure] = AppendUntilFailure(**store, stored, 2000);
    if (failure.code() != absl::StatusCode::kResourceExhausted) {
      return "expected ResourceExhausted, got " + failure.ToString();
    }
    if (end == stored) return "no append succeeded under the limit";
    // Still full: fails again, cleanly. Reads work. Records too.
    Status again = (*store)->Append(SyntheticSnapshot("a", kSeed, end, 3000));
    if (again.code() != absl::StatusCode::kResourceExhausted) return "second: " + again.ToString();
    if (std::string e = VerifySteps(**store, 0, end); !e.empty()) return "while full: " + e;
    store->reset();
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    store = SnapshotStore::Open(o);
    if (!store.ok()) return "reopen: " + store.status().ToString();
    if (std::string e = VerifySteps(**store, 0, end); !e.empty()) return "after reopen: " + e;
    auto [end2, st2] = AppendUntilFailure(**store, end, 3);
    if (!st2.ok()) return "after the limit was lifted: " + st2.ToString();
    return VerifySteps(**store, 0, end2);
  });
  EXPECT_EQ(result, "");
}

// Moves this (child) process into a private mount namespace; false if the kernel refuses.
bool PrivateMountNamespace() {
  if (::unshare(CLONE_NEWNS) != 0) {
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    std::ofstream("/proc/self/setgroups") << "deny";
    std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
    std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
  }
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

TEST(DurabilityTest, RealDiskFullIsResourceExhaustedAndHeals) {
  TempDir tmp;
  std::string result = RunInChild([&]() -> std::string {
    if (!PrivateMountNamespace()) return "SKIP: no private mount namespace";
    if (::mount("tmpfs", tmp.path().c_str(), "tmpfs", 0, "size=6m,mode=0700") != 0) {
      return "SKIP: cannot mount a tmpfs";
    }
    // 1 MiB of filler, deleted later to make room again.
    std::string filler = tmp.Sub("filler");
    {
      std::ofstream f(filler, std::ios::binary);
      std::string mb(1 << 20, 'x');
      f << mb;
      if (!f) return "filler write failed";
    }
    StoreOptions o = TestOptions(tmp.Sub("store"));
    auto store = SnapshotStore::Open(o);
    if (!store.ok()) return store.status().ToString();
    auto [end, failure] = AppendUntilFailure(**store, 0, 5000);
    if (failure.code() != absl::StatusCode::kResourceExhausted) {
      return "expected ResourceExhausted, got " + failure.ToString();
    }
    // LMDB reports ENOSPC, or EIO for a short write that the store explains as "disk full".
    if (failure.message().find("No space left") == std::string_view::npos &&
        failure.message().find("disk full") == std::string_view::npos) {
      return "expected a disk-full message, got " + failure.ToString();
    }
    if (end < 5) return "too few appends before the disk filled";
    if (std::string e = VerifySteps(**store, 0, end); !e.empty()) return "while full: " + e;
    if ((*store)->PutRecord("r", "k", std::string(2 << 20, 'v')).code() !=
        absl::StatusCode::kResourceExhausted) {
      return "PutRecord on a full disk did not fail with ResourceExhausted";
    }
    ::unlink(filler.c_str());
    auto [end2, st2] = AppendUntilFailure(**store, end, 3);
    if (!st2.ok()) return "after freeing space: " + st2.ToString();
    store->reset();
    store = SnapshotStore::Open(o);
    if (!store.ok()) return "reopen: " + store.status().ToString();
    return VerifySteps(**store, 0, end2);
  });
  if (result.rfind("SKIP:", 0) == 0) GTEST_SKIP() << result;
  EXPECT_EQ(result, "");
}

}  // namespace
}  // namespace heapwatch::storage
