// The attach protocol against real JVMs (JDK 17 from PATH, JDK 25 when installed), and the safety
// rules against processes that are not JVMs or cannot be attached to.
#include "collectors/attach.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "collectors/agent_identity.h"
#include "collectors/class_histogram.h"
#include "collectors/procfs.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::FakeJvm;
using testing::FileExists;
using ::testing::HasSubstr;
using testing::JvmLaunch;
using testing::SleepProcess;
using testing::TempDir;
using testing::TestJvm;

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

AttachOptions Short() {
  AttachOptions o;
  o.handshake_timeout = absl::Seconds(1);
  o.connect_timeout = absl::Seconds(1);
  o.io_timeout = absl::Seconds(1);
  return o;
}

std::string SocketPath(const LocalJvm& jvm) {
  return jvm.root_tmp_dir + "/.java_pid" + std::to_string(jvm.ns_pid);
}

// Other heapwatch daemons on the machine (e.g. the end-to-end test running in parallel) attach to
// every local JVM, including the tests' own, so a test JVM's attach listener may already be up.
// Deleting its socket file makes the next attach go through the full handshake again: on SIGQUIT
// with a trigger file, HotSpot notices the missing socket (AttachListener::check_socket_file) and
// restarts the listener.
void DropListenerSocket(const LocalJvm& jvm) { ::unlink(SocketPath(jvm).c_str()); }

// SIGSTOP, then wait until every thread of the process has stopped (delivery is asynchronous).
bool StopProcess(int64_t pid) {
  if (::kill(static_cast<pid_t>(pid), SIGSTOP) != 0) return false;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (int attempt = 0; attempt < 500; ++attempt) {
    bool all_stopped = true;
    for (const auto& task : std::filesystem::directory_iterator(tasks)) {
      const std::string stat = testing::ReadFileOrDie(task.path().string() + "/stat");
      const size_t close = stat.rfind(')');
      const char state = close + 2 < stat.size() ? stat[close + 2] : '?';
      all_stopped &= state == 'T' || state == 't';
    }
    if (all_stopped) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

const ClassHistogramRow* Row(const ClassHistogram& h, std::string_view name) {
  for (const auto& r : h.rows) {
    if (r.class_name == name) return &r;
  }
  return nullptr;
}

// The common checks for one JDK: first attach (handshake), commands, errors, histograms.
void ExerciseJvm(const std::string& java, const std::string& version_fragment,
                 std::vector<std::string> program, const std::string& main_class) {
  program.push_back("stdin");
  TestJvm jvm(JvmLaunch{
      .java = java, .jvm_args = {"-XX:+UseSerialGC"}, .program = program, .stdin_pipe = true});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto info = ReadAgentInfo(*local, "h");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->main_class, main_class);

  // First attach: the full handshake (trigger file + SIGQUIT), then the command.
  DropListenerSocket(*local);
  auto version = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_THAT(*version, HasSubstr(version_fragment));
  EXPECT_TRUE(FileExists(SocketPath(*local)));  // the handshake started the listener
  // The trigger file is gone from the cwd and from /tmp.
  const std::string trigger = ".attach_pid" + std::to_string(local->ns_pid);
  EXPECT_FALSE(FileExists(jvm.cwd() + "/" + trigger));
  EXPECT_FALSE(FileExists(local->root_tmp_dir + "/" + trigger));

  // Fresh garbage right before the -all histogram (another heapwatchd on the machine may have run a
  // full GC on this JVM already): -all neither collects nor runs a GC, so the objects are still
  // there.
  ASSERT_TRUE(jvm.DropGarbage());
  auto all = CollectClassHistogram(*local, /*all_objects=*/true, AttachOptions{});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_NE(Row(*all, "HwTestApp$Garbage"), nullptr);
  EXPECT_GE(Row(*all, "HwTestApp$Garbage")->instances, 3000u);  // 6000 unless a GC ran since start
  ASSERT_NE(Row(*all, "HwTestApp$Leaf"), nullptr);
  EXPECT_EQ(Row(*all, "HwTestApp$Leaf")->instances, 1234u);

  // Live objects: the full GC has collected the garbage; the leaves are still there.
  auto live = CollectClassHistogram(*local, /*all_objects=*/false, AttachOptions{});
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(Row(*live, "HwTestApp$Garbage"), nullptr);
  ASSERT_NE(Row(*live, "HwTestApp$Leaf"), nullptr);
  EXPECT_EQ(Row(*live, "HwTestApp$Leaf")->instances, 1234u);
  EXPECT_EQ(Row(*live, "HwTestApp$Leaf")->module, "");
  ASSERT_NE(Row(*live, "java.lang.String"), nullptr);
  EXPECT_THAT(Row(*live, "java.lang.String")->module, HasSubstr("java.base@"));
  EXPECT_LT(live->total_bytes, all->total_bytes);

  // Errors reported by the JVM.
  auto unknown = ExecuteJcmd(*local, "No.such_command", AttachOptions{});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument) << unknown.status();
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("Unknown diagnostic command"));
  auto bad_option = ExecuteJcmd(*local, "GC.class_histogram -bogus", AttachOptions{});
  EXPECT_EQ(bad_option.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_option.status().message()), HasSubstr("-bogus"));
  auto raw = ExecuteAttachOperation(*local, "nosuchop", {"", "", ""}, AttachOptions{});
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_NE(raw->status, 0);
  EXPECT_THAT(raw->output, HasSubstr("not recognized"));

  // Requests the protocol cannot carry are refused before connecting.
  EXPECT_EQ(ExecuteJcmd(*local, std::string(1025, 'x'), AttachOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExecuteAttachOperation(*local, "an_operation_name_too_long", {"", "", ""}, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExecuteJcmd(*local, std::string("VM.version\0x", 12), AttachOptions{}).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Several threads at once: the JVM serves them one by one, every call succeeds.
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(6);
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      auto r = i % 2 == 0 ? ExecuteJcmd(*local, "VM.version", AttachOptions{}).status()
                          : CollectClassHistogram(*local, false, AttachOptions{}).status();
      results[i] = r;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : results) EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(jvm.Alive());
}

TEST(AttachTest, Jdk17) {
  ExerciseJvm(testing::JavaPath(), "JDK 17", {"-cp", testing::ClassesDir(), "HwTestApp"},
              "HwTestApp");
}

TEST(AttachTest, Jdk25SourceLauncher) {
  if (!FileExists(testing::Java25Path())) GTEST_SKIP() << testing::Java25Path() << " not installed";
  // Source-file mode (java File.java): the main-class label is the source file as given.
  const std::string source = testing::DataDir() + "/HwTestApp.java";
  ExerciseJvm(testing::Java25Path(), "JDK 25", {source}, source);
}

// -XX:+DisableAttachMechanism: refused from PerfData alone, at once, without any signal (a SIGQUIT
// would make this JVM print a thread dump).
TEST(AttachTest, AttachDisabledIsRefusedWithoutSignal) {
  TestJvm jvm(JvmLaunch{.jvm_args = {"-XX:+DisableAttachMechanism"}});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  const auto start = SteadyClock::now();
  auto r = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  EXPECT_LT(SecondsSince(start), 1.0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("DisableAttachMechanism"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_THAT(jvm.Stdout(), ::testing::Not(HasSubstr("Full thread dump")));
  EXPECT_FALSE(FileExists(jvm.cwd() + "/.attach_pid" + std::to_string(jvm.pid())));
  EXPECT_TRUE(jvm.Alive());
}

// -Xrs: the JVM does not handle SIGQUIT, so it must never receive one; it starts its attach
// listener at startup instead, so attaching works without the handshake.
TEST(AttachTest, ReducedSignalUsageJvmWorksWithoutSignal) {
  TestJvm jvm(JvmLaunch{.jvm_args = {"-Xrs"}});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto status = procfs::ReadProcStatus("/proc", jvm.pid());
  ASSERT_TRUE(status.ok());
  EXPECT_FALSE(status->catches(SIGQUIT));
  EXPECT_TRUE(FileExists(SocketPath(*local)));
  auto version = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_TRUE(jvm.Alive());
}

// A plain process (no hsperfdata mapping, no SIGQUIT handler): refused, never signalled.
TEST(AttachTest, NonJvmProcessIsNeverSignalled) {
  TempDir tmp;
  SleepProcess sleeper;
  LocalJvm fake;
  fake.pid = sleeper.pid();
  fake.ns_pid = sleeper.pid();
  fake.uid = ::geteuid();
  fake.gid = ::getegid();
  fake.start_ticks = testing::StartTicksOf(sleeper.pid());
  fake.root_tmp_dir = tmp.path();
  fake.perfdata_path = tmp.path() + "/hsperfdata_x/" + std::to_string(sleeper.pid());
  auto r = ExecuteJcmd(fake, "VM.version", AttachOptions{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(sleeper.Alive());  // SIGQUIT's default action would have killed it
}

// A process that maps an hsperfdata-like file but has no SIGQUIT handler: refused at the SigCgt
// check.
TEST(AttachTest, ProcessWithoutQuitHandlerIsNeverSignalled) {
  TempDir tmp;
  FakeJvm fake(tmp.path(), /*handle_sigquit=*/false);
  const LocalJvm local = fake.AsLocalJvm();
  ASSERT_TRUE(VerifyLocalJvm(local).ok());
  auto r = ExecuteJcmd(local, "VM.version", Short());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("SIGQUIT"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(fake.Alive());
  EXPECT_FALSE(FileExists(fake.cwd() + "/.attach_pid" + std::to_string(fake.pid())));
}

// A process that handles SIGQUIT but never opens a socket: the handshake times out after
// handshake_timeout, having sent SIGQUIT twice (start and half-time), and removes its trigger file.
TEST(AttachTest, HandshakeTimesOut) {
  TempDir tmp;
  FakeJvm fake(tmp.path(), /*handle_sigquit=*/true);
  const auto start = SteadyClock::now();
  auto r = ExecuteJcmd(fake.AsLocalJvm(), "VM.version", Short());
  const double took = SecondsSince(start);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 3.0);
  EXPECT_EQ(fake.QuitsReceived(), 2);
  EXPECT_TRUE(fake.Alive());
  EXPECT_FALSE(FileExists(fake.cwd() + "/.attach_pid" + std::to_string(fake.pid())));
  EXPECT_FALSE(FileExists(tmp.path() + "/.attach_pid" + std::to_string(fake.pid())));
}

// A stopped JVM: the handshake times out (no listener yet); once the listener is up, a stopped JVM
// makes the read time out. After SIGCONT it answers again.
TEST(AttachTest, UnresponsiveJvmTimesOut) {
  TestJvm jvm({});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());

  ASSERT_TRUE(StopProcess(jvm.pid()));
  DropListenerSocket(*local);  // the stopped JVM cannot open a new one
  auto start = SteadyClock::now();
  auto r = ExecuteJcmd(*local, "VM.version", Short());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("did not open its attach socket"));
  EXPECT_LT(SecondsSince(start), 3.0);
  ASSERT_EQ(::kill(static_cast<pid_t>(jvm.pid()), SIGCONT), 0);

  // The pending SIGQUITs arrive after SIGCONT, without a trigger file: HotSpot prints a thread dump
  // and carries on. Attaching works.
  auto ok = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  ASSERT_TRUE(ok.ok()) << ok.status();

  ASSERT_TRUE(StopProcess(jvm.pid()));
  start = SteadyClock::now();
  auto stalled = ExecuteJcmd(*local, "VM.version", Short());
  EXPECT_EQ(stalled.status().code(), absl::StatusCode::kDeadlineExceeded) << stalled.status();
  EXPECT_THAT(std::string(stalled.status().message()), HasSubstr("did not finish its reply"));
  EXPECT_LT(SecondsSince(start), 3.0);
  ASSERT_EQ(::kill(static_cast<pid_t>(jvm.pid()), SIGCONT), 0);
  auto again = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(jvm.Alive());
}

TEST(AttachTest, ReplyLimitAndListenerRestart) {
  TestJvm jvm({});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  AttachOptions small;
  small.max_reply_bytes = 100;
  auto r = ExecuteJcmd(*local, "GC.class_histogram", small);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  // The JVM is unharmed and answers the next request.
  EXPECT_TRUE(ExecuteJcmd(*local, "VM.version", AttachOptions{}).ok());
  // A deleted socket file (e.g. by a /tmp cleaner) is recovered by the next handshake.
  DropListenerSocket(*local);
  EXPECT_TRUE(ExecuteJcmd(*local, "VM.version", AttachOptions{}).ok());
  EXPECT_TRUE(FileExists(SocketPath(*local)));
}

// A socket with the right name but the wrong owner is not trusted.
TEST(AttachTest, SocketWithWrongOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown the socket";
  TestJvm jvm({});
  ASSERT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  ASSERT_TRUE(ExecuteJcmd(*local, "VM.version", AttachOptions{}).ok());
  const std::string socket = SocketPath(*local);
  ASSERT_EQ(::chown(socket.c_str(), 65534, 65534), 0);
  auto r = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("owned by uid 65534"));
  ASSERT_EQ(::chown(socket.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(socket.c_str(), 0666), 0);
  r = ExecuteJcmd(*local, "VM.version", AttachOptions{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
}

}  // namespace
}  // namespace heapwatch::collectors
