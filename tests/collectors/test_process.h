// Test helpers: real JVMs (HwTestApp from tests/collectors/data) and small fake processes, started
// and killed by pid. Every process a helper starts is SIGKILLed and reaped in its destructor.
#ifndef HEAPWATCH_TESTS_COLLECTORS_TEST_PROCESS_H_
#define HEAPWATCH_TESTS_COLLECTORS_TEST_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/local_jvm.h"

namespace heapwatch::collectors::testing {

// Paths given by CMake.
std::string JavaPath();    // JDK 17 `java` (from PATH at configure time)
std::string Java25Path();  // JDK 25 `java`, may not exist
std::string ClassesDir();  // HwTestApp.class compiled by the build
std::string DataDir();     // tests/collectors/data
bool FileExists(const std::string& path);
std::string ReadFileOrDie(const std::string& path);

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct JvmLaunch {
  std::string java = JavaPath();
  std::vector<std::string> jvm_args;  // e.g. {"-XX:+DisableAttachMechanism"}
  std::vector<std::string> program = {"-cp", ClassesDir(), "HwTestApp"};  // after jvm_args
  std::optional<uint32_t> run_as_uid;  // setgid/setuid before exec (needs root)
  std::optional<uint32_t> run_as_gid;
  std::string cwd;  // working directory; "" = a new TempDir
  // Run inside new pid and mount namespaces with a private tmpfs on /tmp (needs root and
  // unshare(1)).
  bool new_namespaces = false;
  // Run in a new mount namespace that keeps every mount, /tmp included (what systemd gives a
  // service with ProtectSystem=; needs root and unshare(1)). The JVM's pid is unchanged.
  bool new_mount_namespace_same_tmp = false;
  // Connect the JVM's stdin to a pipe that CloseStdin() closes (else stdin is /dev/null).
  bool stdin_pipe = false;
};

// A running HwTestApp JVM. Start() waits until it has printed "ready" (its SIGQUIT handler and
// PerfData are set up by then).
class TestJvm {
 public:
  explicit TestJvm(JvmLaunch launch);
  ~TestJvm();
  TestJvm(const TestJvm&) = delete;
  TestJvm& operator=(const TestJvm&) = delete;

  // Empty on success, otherwise why the JVM did not come up (the test should fail with it).
  const std::string& error() const { return error_; }
  int64_t pid() const { return jvm_pid_; }  // the JVM's pid here (for namespaced JVMs: host pid)
  const std::string& cwd() const { return cwd_; }
  std::string Stdout() const;  // everything the JVM printed so far (stdout + stderr)
  bool Alive() const;          // process exists and is not a zombie
  void Kill();                 // SIGKILL and reap (idempotent)
  void CloseStdin();           // EOF on the JVM's stdin (with stdin_pipe)
  // With stdin_pipe and the "stdin" argument: makes HwTestApp drop 3000 fresh garbage objects and
  // waits until it has. False on timeout.
  bool DropGarbage();
  bool WaitForExit(int timeout_ms);  // reaps the JVM if it exits in time
  // The LocalJvm record discovered for this JVM, or nullopt.
  std::optional<LocalJvm> Discover(const DiscoveryOptions& options = {}) const;

 private:
  JvmLaunch launch_;
  std::string error_;
  pid_t child_ = -1;      // what we forked (the JVM itself, or unshare(1))
  int64_t jvm_pid_ = -1;  // the JVM
  std::optional<TempDir> own_dir_;
  std::string cwd_;
  std::string out_path_;
  int stdin_write_ = -1;
};

// A non-JVM process that maps a file named like an hsperfdata file, so that it passes the "maps its
// hsperfdata file" check; with `handle_sigquit` it installs a SIGQUIT handler that counts signals.
class FakeJvm {
 public:
  FakeJvm(const std::string& tmp_dir, bool handle_sigquit);
  ~FakeJvm();
  FakeJvm(const FakeJvm&) = delete;
  FakeJvm& operator=(const FakeJvm&) = delete;

  pid_t pid() const { return pid_; }
  bool Alive() const;
  // SIGQUITs the process received so far (only counted when handle_sigquit).
  int QuitsReceived() const;
  // A LocalJvm record pointing at this process and its fake files.
  LocalJvm AsLocalJvm() const;
  const std::string& cwd() const { return cwd_; }

 private:
  pid_t pid_ = -1;
  std::string tmp_dir_;
  std::string perfdata_path_;
  std::string cwd_;
  std::string counter_path_;
};

// A plain `sleep 60` (no SIGQUIT handler: SIGQUIT would kill it).
class SleepProcess {
 public:
  SleepProcess();
  ~SleepProcess();
  SleepProcess(const SleepProcess&) = delete;
  SleepProcess& operator=(const SleepProcess&) = delete;
  pid_t pid() const { return pid_; }
  bool Alive() const;

 private:
  pid_t pid_ = -1;
};

// True when `pid` exists and is not a zombie.
bool ProcessAlive(int64_t pid);
// Start ticks of `pid` (0 when unreadable).
uint64_t StartTicksOf(int64_t pid);

}  // namespace heapwatch::collectors::testing

#endif  // HEAPWATCH_TESTS_COLLECTORS_TEST_PROCESS_H_
