#include "tests/collectors/test_process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "collectors/procfs.h"

namespace heapwatch::collectors::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

void Reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Pids whose parent is `ppid`.
std::vector<int64_t> ChildrenOf(pid_t ppid) {
  std::vector<int64_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    int64_t parent = 0;
    rest >> state >> parent;
    if (parent == ppid) out.push_back(std::stoll(name));
  }
  return out;
}

}  // namespace

std::string JavaPath() { return HW_TEST_JAVA; }
std::string Java25Path() { return HW_TEST_JAVA25; }
std::string ClassesDir() { return HW_TEST_CLASSES; }
std::string DataDir() { return HW_TEST_DATA; }

bool FileExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool ProcessAlive(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

uint64_t StartTicksOf(int64_t pid) { return procfs::ReadStartTicks("/proc", pid).value_or(0); }

TempDir::TempDir() {
  char tmpl[] = "/tmp/hwcoll.XXXXXX";
  char* p = ::mkdtemp(tmpl);
  if (p == nullptr) std::abort();
  path_ = p;
  ::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

TestJvm::TestJvm(JvmLaunch launch) : launch_(std::move(launch)) {
  own_dir_.emplace();
  cwd_ = launch_.cwd.empty() ? own_dir_->path() + "/cwd" : launch_.cwd;
  if (launch_.cwd.empty()) {
    ::mkdir(cwd_.c_str(), 0755);
    if (launch_.run_as_uid) {
      if (::chown(cwd_.c_str(), *launch_.run_as_uid, launch_.run_as_gid.value_or(0)) != 0) {
        error_ = "chown of the JVM's working directory failed";
        return;
      }
    }
  }
  out_path_ = own_dir_->path() + "/jvm.out";
  const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    error_ = "cannot create " + out_path_;
    return;
  }
  std::vector<std::string> args;
  if (launch_.new_namespaces) {
    // The private tmpfs hides everything under /tmp, including the test classes when the build
    // tree lives there, so the classes directory is carried over by a bind mount at the same path.
    const std::string classes = ClassesDir();
    const std::string script =
        "set -e; k=$(mktemp -d /dev/shm/hwcls.XXXXXX); mount --bind '" + classes +
        "' \"$k\"; mount -t tmpfs tmpfs /tmp; mkdir -p '" + classes + "'; mount --bind \"$k\" '" +
        classes + "'; umount \"$k\"; rmdir \"$k\"; exec \"$0\" \"$@\"";
    args = {"unshare", "--pid", "--fork", "--mount", "--mount-proc", "--kill-child",
            "sh",      "-c",    script};
  }
  if (launch_.new_mount_namespace_same_tmp) args = {"unshare", "--mount"};  // execs the JVM
  args.push_back(launch_.java);
  for (const std::string& a : launch_.jvm_args) args.push_back(a);
  for (const std::string& a : launch_.program) args.push_back(a);
  std::vector<char*> argv = Argv(args);
  int in_pipe[2] = {-1, -1};
  if (launch_.stdin_pipe && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    error_ = "pipe failed";
    ::close(out);
    return;
  }

  child_ = ::fork();
  if (child_ < 0) {
    error_ = "fork failed";
    ::close(out);
    return;
  }
  if (child_ == 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
    if (in_pipe[0] >= 0) {
      ::dup2(in_pipe[0], 0);
    } else {
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
    }
    if (::chdir(cwd_.c_str()) != 0) ::_exit(126);
    if (launch_.run_as_uid) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(launch_.run_as_gid.value_or(0)) != 0 ||
          ::setuid(*launch_.run_as_uid) != 0) {
        ::_exit(125);
      }
    }
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out);
  if (in_pipe[0] >= 0) ::close(in_pipe[0]);
  stdin_write_ = in_pipe[1];
  jvm_pid_ = launch_.new_namespaces ? -1 : child_;

  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(child_, &wstatus, WNOHANG) == child_) {
      child_ = -1;
      error_ = "JVM exited before it was ready; output:\n" + Stdout();
      return;
    }
    if (launch_.new_namespaces && jvm_pid_ < 0) {
      std::vector<int64_t> kids = ChildrenOf(child_);
      if (!kids.empty()) jvm_pid_ = kids.front();
    }
    if (jvm_pid_ > 0 && Stdout().find("ready") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "JVM did not print 'ready' within 60 s; output:\n" + Stdout();
}

TestJvm::~TestJvm() {
  Kill();
  CloseStdin();
  // SIGKILL leaves the JVM's socket and hsperfdata file behind in /tmp: remove this JVM's litter.
  if (!launch_.new_namespaces && jvm_pid_ > 0) {
    const std::string pid = std::to_string(jvm_pid_);
    ::unlink(("/tmp/.java_pid" + pid).c_str());
    std::error_code ec;
    for (const auto& dir : std::filesystem::directory_iterator("/tmp", ec)) {
      if (dir.path().filename().string().rfind("hsperfdata_", 0) == 0) {
        ::unlink((dir.path() / pid).c_str());
      }
    }
  }
}

void TestJvm::CloseStdin() {
  if (stdin_write_ >= 0) ::close(stdin_write_);
  stdin_write_ = -1;
}

bool TestJvm::DropGarbage() {
  auto count = [this] {
    const std::string out = Stdout();
    size_t n = 0;
    for (size_t pos = out.find("garbage"); pos != std::string::npos;
         pos = out.find("garbage", pos + 1)) {
      ++n;
    }
    return n;
  };
  const size_t before = count();
  if (stdin_write_ < 0 || ::write(stdin_write_, "g", 1) != 1) return false;
  for (int i = 0; i < 3000; ++i) {
    if (count() > before) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

bool TestJvm::WaitForExit(int timeout_ms) {
  for (int waited = 0; child_ > 0 && waited <= timeout_ms; waited += 10) {
    if (::waitpid(child_, nullptr, WNOHANG) == child_) {
      child_ = -1;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return child_ <= 0;
}

void TestJvm::Kill() {
  if (jvm_pid_ > 0 && jvm_pid_ != child_) ::kill(static_cast<pid_t>(jvm_pid_), SIGKILL);
  if (child_ > 0) {
    ::kill(child_, SIGKILL);
    Reap(child_);
    child_ = -1;
  }
}

std::string TestJvm::Stdout() const {
  std::ifstream in(out_path_);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool TestJvm::Alive() const { return jvm_pid_ > 0 && ProcessAlive(jvm_pid_); }

std::optional<LocalJvm> TestJvm::Discover(const DiscoveryOptions& options) const {
  for (const LocalJvm& jvm : DiscoverLocalJvms(options)) {
    if (jvm.pid == jvm_pid_) return jvm;
  }
  return std::nullopt;
}

FakeJvm::FakeJvm(const std::string& tmp_dir, bool handle_sigquit) : tmp_dir_(tmp_dir) {
  const std::string dir = tmp_dir + "/hsperfdata_fake";
  ::mkdir(dir.c_str(), 0755);
  cwd_ = tmp_dir + "/fakecwd";
  ::mkdir(cwd_.c_str(), 0755);
  counter_path_ = tmp_dir + "/quit_counter";
  int ready[2];
  if (::pipe(ready) != 0) std::abort();
  pid_ = ::fork();
  if (pid_ < 0) std::abort();
  if (pid_ == 0) {
    ::close(ready[0]);
    if (::chdir(cwd_.c_str()) != 0) ::_exit(1);
    // The counter file is mapped shared so that the parent can read it.
    const int cfd = ::open(counter_path_.c_str(), O_RDWR | O_CREAT, 0600);
    if (cfd < 0 || ::ftruncate(cfd, 4096) != 0) ::_exit(1);
    static std::atomic<int>* counter = nullptr;
    counter = static_cast<std::atomic<int>*>(
        ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0));
    const std::string file = dir + "/" + std::to_string(::getpid());
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ::ftruncate(fd, 32768) != 0) ::_exit(1);
    void* region = ::mmap(nullptr, 32768, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (region == MAP_FAILED) ::_exit(1);
    if (handle_sigquit) {
      struct sigaction sa;
      std::memset(&sa, 0, sizeof(sa));
      sa.sa_handler = [](int) { counter->fetch_add(1); };
      ::sigaction(SIGQUIT, &sa, nullptr);
    } else {
      ::signal(SIGQUIT, SIG_DFL);
    }
    char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  if (::read(ready[0], &byte, 1) != 1) std::abort();
  ::close(ready[0]);
  perfdata_path_ = dir + "/" + std::to_string(pid_);
}

FakeJvm::~FakeJvm() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Reap(pid_);
  }
}

bool FakeJvm::Alive() const { return ProcessAlive(pid_); }

int FakeJvm::QuitsReceived() const {
  const std::string bytes = ReadFileOrDie(counter_path_);
  int value = 0;
  std::memcpy(&value, bytes.data(), sizeof(value));
  return value;
}

LocalJvm FakeJvm::AsLocalJvm() const {
  LocalJvm jvm;
  jvm.pid = pid_;
  jvm.ns_pid = pid_;
  jvm.uid = ::geteuid();
  jvm.gid = ::getegid();
  jvm.start_ticks = StartTicksOf(pid_);
  jvm.root_tmp_dir = tmp_dir_;
  jvm.perfdata_path = perfdata_path_;
  return jvm;
}

SleepProcess::SleepProcess() {
  pid_ = ::fork();
  if (pid_ < 0) std::abort();
  if (pid_ == 0) {
    ::signal(SIGQUIT, SIG_DFL);
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the exec happened (the comm changes to "sleep").
  for (int i = 0; i < 500; ++i) {
    std::ifstream comm("/proc/" + std::to_string(pid_) + "/comm");
    std::string name;
    comm >> name;
    if (name == "sleep") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

SleepProcess::~SleepProcess() {
  ::kill(pid_, SIGKILL);
  Reap(pid_);
}

bool SleepProcess::Alive() const { return ProcessAlive(pid_); }

}  // namespace heapwatch::collectors::testing
