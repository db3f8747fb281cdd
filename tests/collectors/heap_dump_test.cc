// Heap dumps through the attach API against real JDK 17 JVMs: the file, its mode and format (read
// back with the HPROF reader), the JVM's refusals, and a JVM killed with SIGKILL while it writes
// the dump. Also the private dump directory: creation, owner, mode, and the cases it must refuse.
#include "collectors/heap_dump.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "collectors/dumps/hprof/hprof_reader.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::ClassesDir;
using testing::FileExists;
using ::testing::HasSubstr;
using testing::JvmLaunch;
using testing::TempDir;
using testing::TestJvm;

constexpr uint32_t kNobody = 65534;  // the JVM's user in the other-user cases (needs root)

struct stat StatOrDie(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

std::string FirstBytes(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// A TempDir that other users may traverse (TempDir itself is 0700), as a dump directory's parent.
std::string Traversable(const TempDir& dir) {
  EXPECT_EQ(::chmod(dir.path().c_str(), 0711), 0);
  return dir.path();
}

uint32_t CountInstances(const analysis::HeapGraph& graph, std::string_view class_name) {
  const analysis::ClassId c = graph.FindClass(class_name);
  if (!c.valid()) return 0;
  uint32_t n = 0;
  for (uint32_t v = 0; v < graph.object_count(); ++v) {
    n += graph.class_of(analysis::ObjectIndex(v)) == c ? 1 : 0;
  }
  return n;
}

// Dumps a small JVM (run as `nobody` when the test runs as root, so that the attach helper and the
// JVM's file creation use another uid than the daemon's) into a fresh private directory.
TEST(HeapDumpTest, GzipDumpIsPrivateAndReadable) {
  const bool root = ::geteuid() == 0;
  JvmLaunch launch;
  if (root) {
    launch.run_as_uid = kNobody;
    launch.run_as_gid = kNobody;
  }
  TestJvm jvm(launch);
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());

  TempDir tmp;
  const std::string dir = Traversable(tmp) + "/dumps/jvm";  // "dumps" is created too (0711)
  ASSERT_TRUE(PreparePrivateDumpDirectory(dir, local->uid, local->gid).ok());
  struct stat dir_st = StatOrDie(dir);
  EXPECT_TRUE(S_ISDIR(dir_st.st_mode));
  EXPECT_EQ(dir_st.st_mode & 07777, 0700u);
  EXPECT_EQ(dir_st.st_uid, local->uid);
  EXPECT_EQ(dir_st.st_gid, local->gid);
  EXPECT_EQ(StatOrDie(tmp.path() + "/dumps").st_mode & 07777, 0711u);

  const std::string path = dir + "/x.hprof.gz";
  auto result = TakeHeapDump(*local, path, HeapDumpOptions{});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->path, path);
  EXPECT_TRUE(result->gzip);
  EXPECT_GT(result->pause_seconds, 0.0);
  EXPECT_GE(result->wall_seconds, result->pause_seconds);
  struct stat st = StatOrDie(path);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, local->uid);  // written by the JVM itself
  EXPECT_EQ(result->file_bytes, static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(FirstBytes(path, 2), std::string("\x1f\x8b", 2));

  auto graph = hprof::ReadHeapGraph(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // HwTestApp keeps exactly 1234 Leaf objects; a JDK 17 heap holds thousands of other objects.
  EXPECT_EQ(CountInstances(*graph, "HwTestApp$Leaf"), 1234u);
  EXPECT_GT(graph->object_count(), 10000u);
  EXPECT_LT(graph->object_count(), 10000000u);
  std::printf("dump: %llu bytes, pause %.3f s, wall %.3f s, %u objects\n",
              static_cast<unsigned long long>(result->file_bytes), result->pause_seconds,
              result->wall_seconds, graph->object_count());
}

TEST(HeapDumpTest, UncompressedDumpWhenGzipIsOff) {
  TestJvm jvm(JvmLaunch{});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  TempDir tmp;
  const std::string path = tmp.path() + "/x.hprof";
  HeapDumpOptions options;
  options.gzip = false;
  auto result = TakeHeapDump(*local, path, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->gzip);
  EXPECT_EQ(FirstBytes(path, 18), "JAVA PROFILE 1.0.2");
  EXPECT_EQ(StatOrDie(path).st_mode & 07777, 0600u);
}

TEST(HeapDumpTest, RefusesBadArgumentsWithoutTouchingFiles) {
  TestJvm jvm(JvmLaunch{});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  TempDir tmp;

  EXPECT_EQ(TakeHeapDump(*local, "relative/x.hprof", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TakeHeapDump(*local, tmp.path() + "/a b.hprof", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  HeapDumpOptions bad_level;
  bad_level.gzip_level = 11;
  EXPECT_EQ(TakeHeapDump(*local, tmp.path() + "/l.hprof", bad_level).status().code(),
            absl::StatusCode::kInvalidArgument);

  // An existing file is refused and left as it was.
  const std::string existing = tmp.path() + "/existing.hprof.gz";
  { std::ofstream(existing) << "precious"; }
  auto exists = TakeHeapDump(*local, existing, {});
  EXPECT_EQ(exists.status().code(), absl::StatusCode::kFailedPrecondition) << exists.status();
  EXPECT_THAT(std::string(exists.status().message()), HasSubstr("already exists"));
  EXPECT_EQ(testing::ReadFileOrDie(existing), "precious");

  // The JVM itself refuses (its directory does not exist): its reply is in the message.
  auto no_dir = TakeHeapDump(*local, tmp.path() + "/missing/x.hprof.gz", {});
  EXPECT_EQ(no_dir.status().code(), absl::StatusCode::kFailedPrecondition) << no_dir.status();
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("Unable to create"));
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("No such file or directory"));
  // JDK 17 reports this failure with attach status 0; only the text says it failed.
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("(attach status 0)"));

  // JVMs in another mount namespace are not supported.
  LocalJvm other = *local;
  other.root_tmp_dir = "/proc/" + std::to_string(local->pid) + "/root/tmp";
  auto unsupported = TakeHeapDump(other, tmp.path() + "/ns.hprof.gz", {});
  EXPECT_EQ(unsupported.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(FileExists(tmp.path() + "/ns.hprof.gz"));
}

// The JVM resolves the dump's path in its own mount namespace: a directory that is another
// directory there (here its private /tmp) is refused before the JVM writes anything (root only).
TEST(HeapDumpTest, RefusesADirectoryTheJvmSeesElsewhere) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  if (std::system("unshare --pid --fork --mount --mount-proc true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "the kernel or sandbox does not allow new pid/mount namespaces";
  }
  TestJvm jvm(JvmLaunch{.new_namespaces = true});
  ASSERT_EQ(jvm.error(), "");
  auto found = jvm.Discover();
  ASSERT_TRUE(found.has_value());
  LocalJvm claimed = *found;
  claimed.root_tmp_dir = "/tmp";  // as if its /tmp were ours; its /tmp is a private tmpfs
  const std::string path = "/tmp/hw-dump-elsewhere-" + std::to_string(jvm.pid()) + ".hprof.gz";
  auto refused = TakeHeapDump(claimed, path, {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("another directory"));
  EXPECT_FALSE(FileExists(path));
}

// JDK 25 (streaming attach replies, JDK 24+) answers with the same texts; skipped without it.
TEST(HeapDumpTest, Jdk25DumpAndRefusal) {
  if (!FileExists(testing::Java25Path())) GTEST_SKIP() << "no JDK 25 at " << testing::Java25Path();
  JvmLaunch launch;
  launch.java = testing::Java25Path();
  TestJvm jvm(launch);
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  TempDir tmp;
  const std::string path = tmp.path() + "/x.hprof.gz";
  auto result = TakeHeapDump(*local, path, HeapDumpOptions{});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->gzip);
  EXPECT_GT(result->pause_seconds, 0.0);
  EXPECT_EQ(FirstBytes(path, 2), std::string("\x1f\x8b", 2));
  EXPECT_EQ(StatOrDie(path).st_mode & 07777, 0600u);
  auto graph = hprof::ReadHeapGraph(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(CountInstances(*graph, "HwTestApp$Leaf"), 1234u);

  auto no_dir = TakeHeapDump(*local, tmp.path() + "/missing/x.hprof.gz", {});
  EXPECT_EQ(no_dir.status().code(), absl::StatusCode::kFailedPrecondition) << no_dir.status();
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("No such file or directory"));
}

// A JVM with ~400 MB of live objects is killed with SIGKILL as soon as its dump file appears: the
// dump fails with Unavailable and the partial file is gone. The JVM is not reaped before
// TakeHeapDump returns (as for the daemon, which is not the JVM's parent): it stays a zombie.
TEST(HeapDumpTest, JvmKilledWhileDumpingIsUnavailableAndLeavesNoFile) {
  JvmLaunch launch;
  launch.jvm_args = {"-Xmx1g", "-Xms1g"};
  launch.program = {"-cp", ClassesDir(), "HwBigHeapApp", "400"};
  TestJvm jvm(launch);
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  TempDir tmp;
  const std::string path = tmp.path() + "/big.hprof.gz";

  StatusOr<HeapDumpResult> result = absl::UnknownError("not run");
  std::thread dumper([&] { result = TakeHeapDump(*local, path, HeapDumpOptions{}); });
  bool appeared = false;
  for (int i = 0; i < 3000 && !appeared; ++i) {  // up to 30 s
    appeared = FileExists(path);
    if (!appeared) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Let the JVM write some of it first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const bool still_writing = FileExists(path);
  ASSERT_EQ(::kill(static_cast<pid_t>(jvm.pid()), SIGKILL), 0);
  dumper.join();
  ASSERT_TRUE(appeared) << "the dump file never appeared: " << result.status();
  ASSERT_TRUE(still_writing);
  EXPECT_FALSE(result.ok()) << "the dump finished before the kill; make HwBigHeapApp bigger";
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
  EXPECT_FALSE(FileExists(path));
  std::printf("killed during the dump: %s\n", std::string(result.status().message()).c_str());
  jvm.Kill();  // reap
}

TEST(PrepareDumpDirectoryTest, FixesOwnerAndModeOfExistingDirectory) {
  TempDir tmp;
  const std::string dir = Traversable(tmp) + "/d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const uint32_t uid = ::geteuid() == 0 ? kNobody : ::geteuid();
  const uint32_t gid = ::geteuid() == 0 ? kNobody : ::getegid();
  ASSERT_TRUE(PreparePrivateDumpDirectory(dir, uid, gid).ok());
  struct stat st = StatOrDie(dir);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_gid, gid);
  // Idempotent.
  EXPECT_TRUE(PreparePrivateDumpDirectory(dir, uid, gid).ok());
}

TEST(PrepareDumpDirectoryTest, RefusesSymlinksFilesStrangersAndRelativePaths) {
  TempDir tmp;
  const std::string base = Traversable(tmp);
  const uint32_t uid = ::geteuid();
  const uint32_t gid = ::getegid();
  EXPECT_EQ(PreparePrivateDumpDirectory("rel/dir", uid, gid).code(),
            absl::StatusCode::kInvalidArgument);

  const std::string target = base + "/target";
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  const std::string link = base + "/link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  Status s = PreparePrivateDumpDirectory(link, uid, gid);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("symlink"));

  const std::string file = base + "/file";
  { std::ofstream(file) << "x"; }
  s = PreparePrivateDumpDirectory(file, uid, gid);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;

  if (::geteuid() != 0) GTEST_SKIP() << "the other-user cases need root";
  // Owned by a third user: neither the daemon's nor the JVM's.
  const std::string stranger = base + "/stranger";
  ASSERT_EQ(::mkdir(stranger.c_str(), 0700), 0);
  ASSERT_EQ(::chown(stranger.c_str(), 12345, 12345), 0);
  s = PreparePrivateDumpDirectory(stranger, kNobody, kNobody);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(StatOrDie(stranger).st_uid, 12345u);  // untouched

  // A parent the JVM's user cannot traverse.
  const std::string closed = base + "/closed";
  ASSERT_EQ(::mkdir(closed.c_str(), 0700), 0);
  s = PreparePrivateDumpDirectory(closed + "/d", kNobody, kNobody);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("cannot traverse"));
}

}  // namespace
}  // namespace heapwatch::collectors
