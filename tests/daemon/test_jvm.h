// A real JVM for daemon and pipeline tests: `java -cp <classes> HwSecretHolder <count>`
// (tests/daemon/java), or another test program of HEAPWATCH_TEST_JAVA_CLASSES, started by fork/exec
// and killed (SIGKILL) by the destructor. The constructor waits for its "ready" line, so the heap
// then holds `count` sessions. Used by pipeline_test (dumps taken with jcmd) and escalation_test
// (dumps taken by the Escalation itself).
#ifndef HEAPWATCH_TESTS_DAEMON_TEST_JVM_H_
#define HEAPWATCH_TESTS_DAEMON_TEST_JVM_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "collectors/local_jvm.h"

namespace heapwatch::daemon {

class TestJvm {
 public:
  explicit TestJvm(int count) : TestJvm("HwSecretHolder", std::to_string(count)) {}

  // `java -cp <classes> <main_class> <argument>`, waiting for its "ready" line.
  TestJvm(const std::string& main_class, const std::string& argument) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl(HEAPWATCH_JAVA, "java", "-Xmx256m", "-XX:+UseSerialGC", "-cp",
              HEAPWATCH_TEST_JAVA_CLASSES, main_class.c_str(), argument.c_str(), nullptr);
      ::_exit(127);
    }
    ::close(fds[1]);
    FILE* out = ::fdopen(fds[0], "r");
    char line[64];
    ready_ = out != nullptr && std::fgets(line, sizeof line, out) != nullptr &&
             std::string(line).rfind("ready", 0) == 0;
    if (out) std::fclose(out);
  }
  ~TestJvm() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  TestJvm(const TestJvm&) = delete;
  TestJvm& operator=(const TestJvm&) = delete;

  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }

  // The JVM as the daemon discovers it (hsperfdata), or nullopt when discovery does not list it.
  std::optional<collectors::LocalJvm> Discover() const {
    for (const collectors::LocalJvm& jvm : collectors::DiscoverLocalJvms({})) {
      if (jvm.pid == pid_) return jvm;
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_TESTS_DAEMON_TEST_JVM_H_
