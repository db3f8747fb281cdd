// Helpers shared by the storage tests: temporary directories, deterministic synthetic histograms,
// and running a check in a forked child process.
#ifndef HEAPWATCH_TESTS_STORAGE_TEST_UTIL_H_
#define HEAPWATCH_TESTS_STORAGE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <lmdb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "common/histogram.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage::testing {

// A fresh directory under $TMPDIR (or /tmp), or under `base` when given, removed with its contents
// on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/heapwatch-storage-XXXXXX";
    HW_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  explicit TempDir(const std::string& base) {
    std::string tmpl = base + "/heapwatch-storage-XXXXXX";
    HW_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// /dev/shm when it is a writable directory (tmpfs: an fsync costs nothing), else $TMPDIR or /tmp:
// for tests whose subject is not the disk (durability_test.cc's is). Series tests that append
// hundreds of snapshots take 3 s each on a busy disk and a few milliseconds here.
inline std::string MemoryTempBase() {
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";
  }
  const char* base = std::getenv("TMPDIR");
  return base != nullptr ? base : "/tmp";
}

// SplitMix64 finalizer: a cheap, well-mixed hash for synthetic data.
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline absl::Time T0() { return absl::FromUnixSeconds(1'700'000'000); }

// A deterministic histogram for (seed, step): a pool of `classes` classes, each present in most
// steps, counts drifting with the step; class k is "com.example.pkgN.ClassK". Row order is the
// JVM's (bytes descending) so that reads compare equal without resorting.
inline ClassHistogram SyntheticHistogram(uint64_t seed, uint64_t step, int classes) {
  ClassHistogram h;
  for (int k = 0; k < classes; ++k) {
    uint64_t r = Mix(seed * 1'000'003 + k);
    uint64_t base = r % 5000;
    uint64_t size = 16 + 8 * ((r >> 20) % 6);
    uint64_t phase = (r >> 40) % 7;
    if ((step + phase) % 7 == 0 && k % 5 == 0) continue;  // absent now and then
    uint64_t noise = Mix(seed * 7'919 + step * 104'729 + k);
    uint64_t instances = base + (k % 3 == 0 ? step * 10 : noise % 50);
    ClassHistogramRow row;
    row.class_name = absl::StrFormat("com.example.pkg%d.Class%d", k % 17, k);
    row.module = k % 4 == 0 ? "java.base@17.0.15" : "";
    row.instances = instances;
    row.bytes = k % 10 == 0 ? instances * size + (noise >> 32) % 1000 : instances * size;
    h.total_instances += row.instances;
    h.total_bytes += row.bytes;
    h.rows.push_back(std::move(row));
  }
  SortRowsCanonically(&h.rows);
  return h;
}

inline Snapshot SyntheticSnapshot(const std::string& agent, uint64_t seed, uint64_t step,
                                  int classes, absl::Duration interval = absl::Minutes(1)) {
  Snapshot s;
  s.agent = AgentId(agent);
  s.time = T0() + interval * static_cast<double>(step);
  s.histogram = SyntheticHistogram(seed, step, classes);
  return s;
}

inline void ExpectSameSnapshot(const Snapshot& got, const Snapshot& want) {
  EXPECT_EQ(got.agent, want.agent);
  EXPECT_EQ(got.time, want.time);
  ClassHistogram w = want.histogram;
  SortRowsCanonically(&w.rows);
  EXPECT_EQ(got.histogram.total_instances, w.total_instances);
  EXPECT_EQ(got.histogram.total_bytes, w.total_bytes);
  ASSERT_EQ(got.histogram.rows.size(), w.rows.size());
  for (size_t i = 0; i < w.rows.size(); ++i) {
    ASSERT_EQ(got.histogram.rows[i], w.rows[i]) << "row " << i << " of " << want.agent.value;
  }
}

inline StoreOptions TestOptions(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.background_retention = false;
  o.initial_map_bytes = 1 << 20;
  return o;
}

// Overwrites the value under `key` of LMDB table `table` in the store at `dir` (closed).
inline void Poke(const std::string& dir, const char* table, const std::string& key,
                 const std::string& value) {
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_set_maxdbs(env, 8), 0);
  ASSERT_EQ(mdb_env_open(env, dir.c_str(), 0, 0600), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi dbi;
  ASSERT_EQ(mdb_dbi_open(txn, table, 0, &dbi), 0);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

// The value under `key` of LMDB table `table` in the store at `dir` (closed); "" when absent.
inline std::string Peek(const std::string& dir, const char* table, const std::string& key) {
  MDB_env* env;
  HW_CHECK(mdb_env_create(&env) == 0);
  HW_CHECK(mdb_env_set_maxdbs(env, 8) == 0);
  HW_CHECK(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0600) == 0);
  MDB_txn* txn;
  HW_CHECK(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
  MDB_dbi dbi;
  HW_CHECK(mdb_dbi_open(txn, table, 0, &dbi) == 0);
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{};
  std::string out;
  if (mdb_get(txn, dbi, &k, &v) == 0) out.assign(static_cast<const char*>(v.mv_data), v.mv_size);
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return out;
}

// Runs `fn` in a forked child and returns what it returned ("" = success). The child never returns
// to the test framework: it reports through a pipe and _exit()s. A child that dies without
// reporting is a failure described by its wait status.
inline std::string RunInChild(const std::function<std::string()>& fn) {
  int fds[2];
  HW_CHECK(::pipe(fds) == 0);
  pid_t pid = ::fork();
  HW_CHECK(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg = fn();
    msg = "R" + msg;
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t n = ::write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (out.empty() || out[0] != 'R') {
    return absl::StrFormat("child died without a report (wait status %d)", status);
  }
  return out.substr(1);
}

}  // namespace heapwatch::storage::testing

#endif  // HEAPWATCH_TESTS_STORAGE_TEST_UTIL_H_
