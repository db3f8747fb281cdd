#include "tests/e2e/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"

namespace heapwatch::testing {
namespace {

std::vector<char*> CArgv(std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (auto& a : argv) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

// In the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(pid_t parent, char* const* argv, int out_fd, int err_fd) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  execv(argv[0], argv);
  static const char kMsg[] = "exec failed\n";
  (void)!write(2, kMsg, sizeof(kMsg) - 1);
  _exit(127);
}

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv, const std::string& log_path) {
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(log_path.c_str());
    std::abort();
  }
  std::vector<char*> cargv = CArgv(argv);
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    perror("fork");
    std::abort();
  }
  if (pid_ == 0) ExecChild(parent, cargv.data(), fd, fd);
  setpgid(pid_, pid_);  // also from the parent, so that Kill() works even before the child ran
  close(fd);
}

Subprocess::~Subprocess() {
  if (!reaped_) {
    Kill(SIGKILL);
    Wait(absl::Seconds(10));
  }
}

void Subprocess::Kill(int signal) {
  if (reaped_ || pid_ <= 0) return;
  // One signal per process: the group (the child and anything it started); the child alone if it
  // has not become a group leader.
  if (kill(-pid_, signal) != 0) kill(pid_, signal);
}

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  if (reaped_) return std::nullopt;
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      kill(-pid_, SIGKILL);  // anything the child left in its group
      return status;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

bool Subprocess::running() {
  if (reaped_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  char dir_template[] = "/tmp/heapwatch-cmd-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) std::abort();
  std::string out_path = std::string(dir) + "/out", err_path = std::string(dir) + "/err";
  int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> copy = argv;
  std::vector<char*> cargv = CArgv(copy);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid == 0) ExecChild(parent, cargv.data(), out_fd, err_fd);
  close(out_fd);
  close(err_fd);
  CommandResult result;
  absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
      break;
    }
    if (absl::Now() >= deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir);
  return result;
}

}  // namespace heapwatch::testing
