// The store refuses a corrupt or truncated data file at Open, without writing to it (issue 12,
// fault injection; storage/snapshot_store.cc CheckDataFileHeader). Each Open runs in a forked
// child: a store that mapped a truncated file would die of SIGBUS, and the test must see that as a
// failure.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"
#include "storage/snapshot_store.h"
#include "tests/storage/test_util.h"

namespace heapwatch::storage {
namespace {

using testing::RunInChild;
using testing::SyntheticSnapshot;
using testing::TempDir;
using testing::TestOptions;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good());
}

// A closed store of `snapshots` snapshots of 300 classes (a few hundred KiB of pages).
void MakeStore(const std::string& dir, int snapshots) {
  auto store = SnapshotStore::Open(TestOptions(dir));
  ASSERT_TRUE(store.ok()) << store.status();
  for (int i = 0; i < snapshots; ++i) {
    ASSERT_TRUE((*store)->Append(SyntheticSnapshot("agent-a", 1, i, 300)).ok());
  }
}

// Opens `dir` in a child: "" when it opened and every snapshot reads back, else the status.
std::string OpenAndRead(const std::string& dir) {
  return RunInChild([&]() -> std::string {
    auto store = SnapshotStore::Open(TestOptions(dir));
    if (!store.ok()) return store.status().ToString();
    auto snaps = (*store)->ReadSnapshots(AgentId("agent-a"), absl::InfinitePast(),
                                         absl::InfiniteFuture(), 0);
    if (!snaps.ok()) return snaps.status().ToString();
    if (snaps->size() != 60) return "read " + std::to_string(snaps->size()) + " snapshots, want 60";
    return "";
  });
}

class StartupCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.Sub("store");
    MakeStore(dir_, 60);
    data_ = dir_ + "/data.mdb";
    original_ = ReadAll(data_);
    ASSERT_GT(original_.size(), 16u * 4096) << "the store must span many pages";
    ASSERT_EQ(OpenAndRead(dir_), "");
  }
  // Opening the damaged file fails with DataLoss naming the file, and leaves it byte for byte.
  void ExpectRefused(const std::string& damaged, const std::string& why) {
    WriteAll(data_, damaged);
    std::string result = OpenAndRead(dir_);
    EXPECT_NE(result.find("DATA_LOSS"), std::string::npos) << result;
    EXPECT_NE(result.find(why), std::string::npos) << result;
    EXPECT_NE(result.find(data_), std::string::npos) << result;
    EXPECT_EQ(ReadAll(data_), damaged) << "the damaged data file was changed by Open";
  }
  TempDir tmp_;
  std::string dir_, data_, original_;
};

TEST_F(StartupCheckTest, TruncatedDataFileIsRefusedAndLeftAlone) {
  ExpectRefused(original_.substr(0, original_.size() / 2), "the file ends before");
  ExpectRefused(original_.substr(0, original_.size() - 4096), "the file ends before");
  ExpectRefused(original_.substr(0, 4200), "meta page 1 is cut off");
  ExpectRefused(original_.substr(0, 100), "meta page 0 is cut off");
}

TEST_F(StartupCheckTest, CorruptHeaderIsRefusedAndLeftAlone) {
  std::string bad = original_;
  for (size_t i = 0; i < 4096; ++i) bad[i] = static_cast<char>(testing::Mix(i));
  ExpectRefused(bad, "meta page 0 is not an LMDB meta page");
  bad = original_;
  for (size_t i = 4096 + 16; i < 4096 + 24; ++i) bad[i] = 'x';  // magic and version of meta 1
  ExpectRefused(bad, "meta page 1 is not an LMDB meta page");
  bad = original_;
  bad[4096 + 16 + 120 + 5] = 0x7f;  // last page number of meta 1: far beyond the file
  bad[16 + 120 + 5] = 0x7f;
  ExpectRefused(bad, "impossible");
  // Not an LMDB file at all (a config file written to the wrong path).
  ExpectRefused(std::string(200000, 'y'), "meta page 0 is not an LMDB meta page");
}

TEST_F(StartupCheckTest, IntactAndEmptyDataFilesOpen) {
  WriteAll(data_, original_);
  EXPECT_EQ(OpenAndRead(dir_), "");
  // A data file LMDB created but never wrote (a crash right after creation) holds nothing: LMDB
  // initialises it.
  TempDir fresh;
  std::filesystem::create_directories(fresh.Sub("store"));
  WriteAll(fresh.Sub("store") + "/data.mdb", "");
  EXPECT_EQ(RunInChild([&]() -> std::string {
              auto store = SnapshotStore::Open(TestOptions(fresh.Sub("store")));
              return store.ok() ? "" : store.status().ToString();
            }),
            "");
}

}  // namespace
}  // namespace heapwatch::storage
