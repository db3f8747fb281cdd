// Discovery of real local JVMs: found while alive, gone after exit (even when SIGKILL leaves the
// hsperfdata file behind), stale and look-alike files ignored, other users and other namespaces.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "collectors/agent_identity.h"
#include "collectors/attach.h"
#include "collectors/class_histogram.h"
#include "collectors/heap_dump.h"
#include "collectors/local_jvm.h"
#include "collectors/procfs.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::FakeJvm;
using testing::FileExists;
using testing::JvmLaunch;
using testing::SleepProcess;
using testing::TempDir;
using testing::TestJvm;

bool Contains(const std::vector<LocalJvm>& jvms, int64_t pid) {
  return std::any_of(jvms.begin(), jvms.end(), [&](const LocalJvm& j) { return j.pid == pid; });
}

std::string UserName() {
  // hsperfdata_<user> is named after the JVM's effective user (HotSpot's get_user_name).
  const passwd* pw = ::getpwuid(::geteuid());
  return pw != nullptr ? pw->pw_name : "";
}

TEST(DiscoveryTest, FindsAJvmAndNoticesItExiting) {
  const std::vector<LocalJvm> before = DiscoverLocalJvms({});
  TestJvm jvm({});
  ASSERT_EQ(jvm.error(), "");
  EXPECT_FALSE(Contains(before, jvm.pid()));

  const std::vector<LocalJvm> during = DiscoverLocalJvms({});
  ASSERT_TRUE(Contains(during, jvm.pid()));
  const LocalJvm& found = *std::find_if(during.begin(), during.end(),
                                        [&](const LocalJvm& j) { return j.pid == jvm.pid(); });
  EXPECT_EQ(found.ns_pid, jvm.pid());
  EXPECT_EQ(found.uid, ::geteuid());
  EXPECT_EQ(found.gid, ::getegid());
  EXPECT_EQ(found.root_tmp_dir, "/tmp");
  EXPECT_EQ(found.perfdata_path, "/tmp/hsperfdata_" + UserName() + "/" + std::to_string(jvm.pid()));
  EXPECT_EQ(found.start_ticks, testing::StartTicksOf(jvm.pid()));
  EXPECT_TRUE(VerifyLocalJvm(found).ok());
  EXPECT_TRUE(std::is_sorted(during.begin(), during.end(),
                             [](const LocalJvm& a, const LocalJvm& b) { return a.pid < b.pid; }));

  JvmSetChange started = DiffJvmSets(before, during);
  ASSERT_TRUE(Contains(started.started, jvm.pid()));
  EXPECT_FALSE(Contains(started.exited, jvm.pid()));

  // SIGKILL: the JVM cannot delete its hsperfdata file, which stays behind as a stale file.
  jvm.Kill();
  ASSERT_TRUE(FileExists(found.perfdata_path));
  const std::vector<LocalJvm> after = DiscoverLocalJvms({});
  EXPECT_FALSE(Contains(after, jvm.pid()));
  JvmSetChange exited = DiffJvmSets(during, after);
  ASSERT_TRUE(Contains(exited.exited, jvm.pid()));
  EXPECT_FALSE(Contains(exited.started, jvm.pid()));
  EXPECT_EQ(VerifyLocalJvm(found).code(), absl::StatusCode::kUnavailable);
  ::unlink(found.perfdata_path.c_str());
}

TEST(DiscoveryTest, JvmExitingNormallyRemovesItsFile) {
  TestJvm jvm(JvmLaunch{.program = {"-cp", testing::ClassesDir(), "HwTestApp", "stdin"},
                        .stdin_pipe = true});
  ASSERT_EQ(jvm.error(), "");
  auto found = jvm.Discover();
  ASSERT_TRUE(found.has_value());
  jvm.CloseStdin();  // main() returns, the JVM shuts down and deletes its hsperfdata file
  ASSERT_TRUE(jvm.WaitForExit(20000));
  EXPECT_FALSE(FileExists(found->perfdata_path));
  EXPECT_FALSE(Contains(DiscoverLocalJvms({}), jvm.pid()));
  EXPECT_EQ(VerifyLocalJvm(*found).code(), absl::StatusCode::kUnavailable);
}

TEST(DiscoveryTest, StaleAndLookAlikeFilesAreIgnored) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/hsperfdata_someone";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  // A file named after a live process that does not map it (pid reused by a non-JVM) ...
  SleepProcess sleeper;
  const std::string sleeper_file = dir + "/" + std::to_string(sleeper.pid());
  ASSERT_GE(::open(sleeper_file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600), 0);
  // ... a file of a pid that does not exist, and junk names.
  for (const char* name : {"999999999", "notapid", "0"}) {
    ASSERT_GE(::open((dir + "/" + name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600), 0);
  }
  // A process that does map a file there is found (the criterion is the mapping, not the name).
  FakeJvm fake(tmp.path(), /*handle_sigquit=*/true);

  DiscoveryOptions options;
  options.tmp_dir = tmp.path();
  const std::vector<LocalJvm> jvms = DiscoverLocalJvms(options);
  EXPECT_FALSE(Contains(jvms, sleeper.pid()));
  ASSERT_TRUE(Contains(jvms, fake.pid()));
  EXPECT_TRUE(sleeper.Alive());

  // VerifyLocalJvm distinguishes "not a JVM" from "gone".
  LocalJvm not_jvm = fake.AsLocalJvm();
  not_jvm.pid = sleeper.pid();
  not_jvm.ns_pid = sleeper.pid();
  not_jvm.start_ticks = testing::StartTicksOf(sleeper.pid());
  EXPECT_EQ(VerifyLocalJvm(not_jvm).code(), absl::StatusCode::kFailedPrecondition);
  LocalJvm reused = fake.AsLocalJvm();
  reused.start_ticks += 1;  // same pid, other process
  EXPECT_EQ(VerifyLocalJvm(reused).code(), absl::StatusCode::kUnavailable);
}

TEST(DiscoveryTest, DiffIdentifiesProcessesByPidAndStartTime) {
  LocalJvm a;
  a.pid = 10;
  a.start_ticks = 100;
  LocalJvm b = a;
  b.start_ticks = 200;  // pid 10 reused by a new JVM
  LocalJvm c;
  c.pid = 11;
  c.start_ticks = 100;
  JvmSetChange change = DiffJvmSets({a, c}, {b, c});
  ASSERT_EQ(change.started.size(), 1u);
  EXPECT_EQ(change.started[0].start_ticks, 200u);
  ASSERT_EQ(change.exited.size(), 1u);
  EXPECT_EQ(change.exited[0].start_ticks, 100u);
  EXPECT_TRUE(DiffJvmSets({a, c}, {c, a}).started.empty());
  EXPECT_TRUE(DiffJvmSets({}, {}).exited.empty());
}

// A JVM of another user: found (root only), attached to with the JVM's uid/gid (forked helper).
TEST(DiscoveryTest, OtherUsersJvm) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  constexpr uint32_t kNobody = 65534;
  TempDir classes;  // a copy of the classes that user `nobody` can read
  ASSERT_EQ(std::system(("cp " + testing::ClassesDir() + "/*.class " + classes.path()).c_str()), 0);
  TestJvm jvm(JvmLaunch{.program = {"-cp", classes.path(), "HwTestApp"},
                        .run_as_uid = kNobody,
                        .run_as_gid = kNobody});
  ASSERT_EQ(jvm.error(), "");
  auto found = jvm.Discover();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->uid, kNobody);
  EXPECT_EQ(found->gid, kNobody);
  EXPECT_EQ(found->perfdata_path, "/tmp/hsperfdata_nobody/" + std::to_string(jvm.pid()));

  auto version = ExecuteJcmd(*found, "VM.version", AttachOptions{});
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_NE(version->find("JDK 17"), std::string::npos) << *version;
  // The JVM created its socket as nobody, and we connected as nobody (it accepts root too on JDK
  // 17; the trigger file in its cwd was created as nobody and removed).
  struct stat st;
  ASSERT_EQ(::stat(("/tmp/.java_pid" + std::to_string(jvm.pid())).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_FALSE(FileExists(jvm.cwd() + "/.attach_pid" + std::to_string(jvm.pid())));
  auto histogram = CollectClassHistogram(*found, false, AttachOptions{});
  ASSERT_TRUE(histogram.ok()) << histogram.status();
  // The daemon's own credentials did not change.
  EXPECT_EQ(::geteuid(), 0u);
  EXPECT_EQ(::getegid(), 0u);
}

// A JVM in a mount namespace of its own that still mounts our /tmp (as a JVM or the daemon gets
// under systemd's ProtectSystem=): its /tmp is ours, so it is reached through /tmp like a JVM of
// our own namespace, and heap dumps into a directory both see are supported (root only).
TEST(DiscoveryTest, JvmInOtherMountNamespaceWithTheSameTmp) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  if (std::system("unshare --mount true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "the kernel or sandbox does not allow new mount namespaces";
  }
  TestJvm jvm(JvmLaunch{.new_mount_namespace_same_tmp = true});
  ASSERT_EQ(jvm.error(), "");
  const std::string pid = std::to_string(jvm.pid());
  ASSERT_NE(procfs::ReadLink("/proc/" + pid + "/ns/mnt").value_or(""),
            procfs::ReadLink("/proc/self/ns/mnt").value_or(""));
  auto found = jvm.Discover();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->root_tmp_dir, "/tmp");
  EXPECT_EQ(found->perfdata_path, "/tmp/hsperfdata_root/" + pid);

  TempDir dumps;
  auto dump = TakeHeapDump(*found, dumps.path() + "/ns.hprof.gz", {});
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_GT(dump->file_bytes, 0u);
}

// A JVM in its own pid and mount namespaces with a private /tmp, like a container (root only).
TEST(DiscoveryTest, JvmInOtherNamespaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  if (std::system("unshare --pid --fork --mount --mount-proc true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "the kernel or sandbox does not allow new pid/mount namespaces";
  }
  TestJvm jvm(JvmLaunch{.new_namespaces = true});
  ASSERT_EQ(jvm.error(), "");
  // Its files are invisible in our /tmp ...
  EXPECT_FALSE(FileExists("/tmp/hsperfdata_root/1"));
  DiscoveryOptions same_ns_only;
  same_ns_only.other_namespaces = false;
  EXPECT_FALSE(jvm.Discover(same_ns_only).has_value());
  // ... but discovery finds it through /proc/<pid>/root/tmp, named by its namespace pid.
  auto found = jvm.Discover();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->ns_pid, 1);  // exec'd as the namespace's init
  EXPECT_NE(found->pid, found->ns_pid);
  const std::string root_tmp = "/proc/" + std::to_string(jvm.pid()) + "/root/tmp";
  EXPECT_EQ(found->root_tmp_dir, root_tmp);
  EXPECT_EQ(found->perfdata_path, root_tmp + "/hsperfdata_root/1");

  auto info = ReadAgentInfo(*found, "h");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->pid, jvm.pid());
  EXPECT_EQ(info->main_class, "HwTestApp");

  auto version = ExecuteJcmd(*found, "VM.version", AttachOptions{});
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_TRUE(FileExists(root_tmp + "/.java_pid1"));
  auto histogram = CollectClassHistogram(*found, false, AttachOptions{});
  ASSERT_TRUE(histogram.ok()) << histogram.status();
  bool leaf = false;
  for (const auto& row : histogram->rows) leaf |= row.class_name == "HwTestApp$Leaf";
  EXPECT_TRUE(leaf);
}

}  // namespace
}  // namespace heapwatch::collectors
