// Test helper: child processes that cannot outlive the test. Each child runs in its own process
// group, gets SIGKILL from the kernel when the test process dies (PR_SET_PDEATHSIG, so even a
// crashed or SIGKILLed test leaves nothing behind), and is killed (whole group) by the destructor.
//
// Thread-safety: one Subprocess is used by one thread.
#ifndef HEAPWATCH_TESTS_E2E_SUBPROCESS_H_
#define HEAPWATCH_TESTS_E2E_SUBPROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace heapwatch::testing {

class Subprocess {
 public:
  // Starts argv[0] (an absolute path) with `argv`, stdout and stderr appended to `log_path`.
  // Aborts the test process if fork or exec setup fails (reported in the log file for exec).
  Subprocess(std::vector<std::string> argv, const std::string& log_path);
  ~Subprocess();  // Kill(SIGKILL) and reap, if still running.
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends `signal` once to the child's whole process group.
  void Kill(int signal);
  // Waits up to `timeout` for the child to exit; returns its wait status, or nullopt on timeout.
  std::optional<int> Wait(absl::Duration timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Runs a command to completion (up to `timeout`, then SIGKILL) and returns its exit code and
// stdout; stderr goes to `stderr_out` when not null. exit_code is -1 when it was killed or timed
// out.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout);

// Reads a whole file ("" if it cannot be read).
std::string ReadFile(const std::string& path);

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_E2E_SUBPROCESS_H_
