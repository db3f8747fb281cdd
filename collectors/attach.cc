#include "collectors/attach.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collectors/absl_compat.h"
#include "collectors/perf_data.h"
#include "collectors/procfs.h"
#include "collectors/unique_fd.h"

namespace heapwatch::collectors {
namespace {

// Limits of protocol version 1 (AttachOperation::name_length_max / arg_length_max in
// attachListener.hpp).
constexpr size_t kMaxOperationLength = 16;
constexpr size_t kMaxArgLength = 1024;
constexpr int32_t kStatusBadVersion = 101;  // ATTACH_ERROR_BADVERSION

constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;

// -----------------------------------------------------------------------------------------------
// The handshake (trigger file, SIGQUIT, wait for the socket, owner check, connect). It runs either
// in the calling thread or in a forked child, so everything from here to Handshake() only makes
// async-signal-safe system calls on pre-computed plain data: no allocation, no locks, no logging.

int64_t MonotonicNanos() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNanosPerSecond + ts.tv_nsec;
}

void SleepNanos(int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / kNanosPerSecond), static_cast<long>(ns % kNanosPerSecond)};
  while (::nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

// Which step of the handshake failed. Sent from the helper child to the parent as plain bytes.
enum class Step : int32_t {
  kOk = 0,
  kSetCredentials,
  kTriggerFile,
  kSignal,
  kNoQuitHandler,
  kHandshakeTimeout,
  kNotSocket,
  kWrongOwner,
  kBadMode,
  kSocket,
  kConnect,
  kConnectTimeout,
};

struct HandshakeResult {
  Step step = Step::kOk;
  int32_t err = 0;           // errno of the failing call, if any
  uint32_t socket_uid = 0;   // for kWrongOwner
  uint32_t socket_mode = 0;  // for kBadMode
  int32_t signals_sent = 0;  // SIGQUITs sent (0, 1 or 2)
};

struct HandshakePlan {
  int64_t pid = 0;
  int pidfd = -1;  // signal through this when >= 0 (immune to pid reuse)
  char socket_path[sizeof(sockaddr_un::sun_path)] = {};
  char trigger_cwd[PATH_MAX] = {};
  char trigger_tmp[PATH_MAX] = {};
  bool switch_credentials = false;
  uint32_t uid = 0;  // credentials to switch to, and the expected socket owner
  uint32_t gid = 0;
  bool may_signal = false;  // SIGQUIT is caught and not ignored
  int64_t handshake_timeout_ns = 0;
  int64_t connect_timeout_ns = 0;
};

int SendQuit(const HandshakePlan& plan) {
  if (plan.pidfd >= 0) {
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, plan.pidfd, SIGQUIT, nullptr, 0));
  }
  return ::kill(static_cast<pid_t>(plan.pid), SIGQUIT);
}

// Creates the trigger file; returns the path created (to delete later), "" when a trigger already
// existed, or nullptr with errno set on failure.
const char* CreateTrigger(const HandshakePlan& plan) {
  for (const char* path : {plan.trigger_cwd, plan.trigger_tmp}) {
    int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno == EEXIST) return "";
  }
  return nullptr;
}

int ConnectWithTimeout(const HandshakePlan& plan, HandshakeResult* result) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) {
    *result = {Step::kSocket, errno};
    return -1;
  }
  sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, plan.socket_path, sizeof(addr.sun_path));
  const int64_t deadline = MonotonicNanos() + plan.connect_timeout_ns;
  for (;;) {
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return s;
    const int err = errno;
    if (err == EINTR) continue;
    const int64_t left = deadline - MonotonicNanos();
    if (err == EAGAIN) {  // the listen backlog is full: the JVM is serving other clients
      if (left <= 0) break;
      SleepNanos(std::min<int64_t>(left, 10 * kNanosPerMilli));
      continue;
    }
    if (err == EINPROGRESS) {
      pollfd p{s, POLLOUT, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0) / kNanosPerMilli));
      if (n == 1) {
        int so_error = 0;
        socklen_t len = sizeof(so_error);
        ::getsockopt(s, SOL_SOCKET, SO_ERROR, &so_error, &len);
        if (so_error == 0) return s;
        *result = {Step::kConnect, so_error};
        ::close(s);
        return -1;
      }
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    *result = {Step::kConnect, err};
    ::close(s);
    return -1;
  }
  ::close(s);
  *result = {Step::kConnectTimeout, ETIMEDOUT};
  return -1;
}

// Returns a connected socket, or -1 with `result` saying which step failed.
int Handshake(const HandshakePlan& plan, HandshakeResult* result) {
  *result = HandshakeResult{};
  if (plan.switch_credentials) {
    // Raw system calls: they change only the calling thread (here: the single thread of the helper
    // child). Order matters: the gid must change while the uid is still 0.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
        ::syscall(SYS_setresgid, -1, static_cast<gid_t>(plan.gid), -1) != 0 ||
        ::syscall(SYS_setresuid, -1, static_cast<uid_t>(plan.uid), -1) != 0) {
      *result = {Step::kSetCredentials, errno};
      return -1;
    }
  }
  struct stat st;
  bool present = ::lstat(plan.socket_path, &st) == 0;
  if (!present) {
    if (!plan.may_signal) {
      *result = {Step::kNoQuitHandler, 0};
      return -1;
    }
    const char* trigger = CreateTrigger(plan);
    if (trigger == nullptr) {
      *result = {Step::kTriggerFile, errno};
      return -1;
    }
    // Another client may have started the listener meanwhile: then a SIGQUIT would only make the
    // JVM print a thread dump, so look once more before signalling.
    present = ::lstat(plan.socket_path, &st) == 0;
    if (!present) {
      if (SendQuit(plan) != 0) {
        *result = {Step::kSignal, errno};
        if (*trigger != '\0') ::unlink(trigger);
        return -1;
      }
      result->signals_sent = 1;
      // Poll for the socket like VirtualMachineImpl does, with shorter first steps; give the JVM
      // one more SIGQUIT at half the timeout.
      const int64_t start = MonotonicNanos();
      const int64_t deadline = start + plan.handshake_timeout_ns;
      int64_t delay = 5 * kNanosPerMilli;
      for (;;) {
        if (::lstat(plan.socket_path, &st) == 0) {
          present = true;
          break;
        }
        const int64_t now = MonotonicNanos();
        if (now >= deadline) break;
        if (result->signals_sent == 1 && now - start > plan.handshake_timeout_ns / 2) {
          if (SendQuit(plan) == 0) result->signals_sent = 2;
        }
        SleepNanos(std::min(delay, deadline - now));
        delay = std::min<int64_t>(delay * 2, 100 * kNanosPerMilli);
      }
    }
    if (*trigger != '\0') ::unlink(trigger);
    if (!present) {
      const int32_t sent = result->signals_sent;
      *result = {Step::kHandshakeTimeout, ETIMEDOUT};
      result->signals_sent = sent;
      return -1;
    }
  }
  const int32_t sent = result->signals_sent;
  if (!S_ISSOCK(st.st_mode)) {
    *result = {Step::kNotSocket, 0};
  } else if (st.st_uid != plan.uid) {
    *result = {Step::kWrongOwner, 0, st.st_uid};
  } else if ((st.st_mode & 077) != 0) {
    *result = {Step::kBadMode, 0, st.st_uid, static_cast<uint32_t>(st.st_mode & 0777)};
  } else {
    int s = ConnectWithTimeout(plan, result);
    result->signals_sent = sent;
    return s;
  }
  result->signals_sent = sent;
  return -1;
}

// -----------------------------------------------------------------------------------------------
// Parent side.

// Runs Handshake() in a forked child with the JVM's credentials and receives the connected socket.
StatusOr<UniqueFd> HandshakeInChild(const HandshakePlan& plan, HandshakeResult* result) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return procfs::ErrnoToStatus(errno, "socketpair");
  }
  UniqueFd parent_end(sv[0]);
  UniqueFd child_end(sv[1]);
  const pid_t child = ::fork();
  if (child < 0) return procfs::ErrnoToStatus(errno, "fork");
  if (child == 0) {
    // Child: async-signal-safe calls only.
    HandshakeResult r;
    int fd = Handshake(plan, &r);
    iovec iov{&r, sizeof(r)};
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      cmsghdr align;
    } control;
    std::memset(&control, 0, sizeof(control));
    msghdr msg;
    std::memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
      msg.msg_control = control.buf;
      msg.msg_controllen = sizeof(control.buf);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ::sendmsg(sv[1], &msg, MSG_NOSIGNAL);
    ::_exit(0);
  }
  child_end.reset();
  auto reap = [child](bool kill_first) {
    if (kill_first) ::kill(child, SIGKILL);
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  };
  const int64_t budget_ms =
      (plan.handshake_timeout_ns + plan.connect_timeout_ns) / kNanosPerMilli + 2000;
  const int64_t deadline = MonotonicNanos() + budget_ms * kNanosPerMilli;
  for (;;) {
    pollfd p{parent_end.get(), POLLIN, 0};
    const int64_t left_ms = (deadline - MonotonicNanos()) / kNanosPerMilli;
    int n = left_ms > 0 ? ::poll(&p, 1, static_cast<int>(left_ms)) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      reap(true);
      // The helper died before it could delete its trigger file; a stale trigger would turn the
      // JVM's next SIGQUIT (meant as a thread-dump request) into a listener start.
      ::unlink(plan.trigger_cwd);
      ::unlink(plan.trigger_tmp);
      return absl::DeadlineExceededError("attach helper process did not finish in time");
    }
    break;
  }
  HandshakeResult r;
  iovec iov{&r, sizeof(r)};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    cmsghdr align;
  } control;
  msghdr msg;
  std::memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof(control.buf);
  ssize_t got;
  do {
    got = ::recvmsg(parent_end.get(), &msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  const int recv_errno = errno;
  UniqueFd fd;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c), sizeof(int));
      fd.reset(received);
    }
  }
  reap(false);
  if (got < 0) return procfs::ErrnoToStatus(recv_errno, "receiving from the attach helper");
  if (got != static_cast<ssize_t>(sizeof(r))) {
    return absl::InternalError("attach helper process exited without a result");
  }
  *result = r;
  return fd;
}

Status HandshakeStatus(const HandshakeResult& r, const LocalJvm& jvm, const HandshakePlan& plan,
                       const AttachOptions& options) {
  const std::string who = absl::StrCat("JVM ", jvm.pid);
  switch (r.step) {
    case Step::kOk:
      return absl::OkStatus();
    case Step::kSetCredentials:
      return procfs::ErrnoToStatus(r.err, absl::StrCat("switching to uid ", plan.uid, " gid ",
                                                       plan.gid, " to attach to ", who));
    case Step::kTriggerFile:
      return procfs::ErrnoToStatus(r.err, absl::StrCat("creating attach trigger file ",
                                                       plan.trigger_cwd, " or ", plan.trigger_tmp));
    case Step::kSignal:
      return procfs::ErrnoToStatus(r.err, absl::StrCat("sending SIGQUIT to ", who));
    case Step::kNoQuitHandler:
      return absl::FailedPreconditionError(
          absl::StrCat(who, " does not handle SIGQUIT (still starting, or -Xrs); no signal sent"));
    case Step::kHandshakeTimeout:
      return absl::DeadlineExceededError(absl::StrCat(
          who, " did not open its attach socket ", plan.socket_path, " within ",
          absl::FormatDuration(options.handshake_timeout), " after ", r.signals_sent,
          " SIGQUIT(s): the JVM is stopped or unresponsive, or attach is not possible"));
    case Step::kNotSocket:
      return absl::PermissionDeniedError(
          absl::StrCat(plan.socket_path, " is not a socket; not connecting"));
    case Step::kWrongOwner:
      return absl::PermissionDeniedError(absl::StrCat(plan.socket_path, " is owned by uid ",
                                                      r.socket_uid, ", not by the JVM's uid ",
                                                      plan.uid, "; not connecting"));
    case Step::kBadMode:
      return absl::PermissionDeniedError(absl::StrCat(plan.socket_path, " has mode 0",
                                                      absl::Hex(r.socket_mode),
                                                      " (group/other access); not connecting"));
    case Step::kSocket:
      return procfs::ErrnoToStatus(r.err, "socket(AF_UNIX)");
    case Step::kConnect:
      return procfs::ErrnoToStatus(r.err, absl::StrCat("connecting to ", plan.socket_path));
    case Step::kConnectTimeout:
      return absl::DeadlineExceededError(
          absl::StrCat("connecting to ", plan.socket_path, " took longer than ",
                       absl::FormatDuration(options.connect_timeout)));
  }
  return absl::InternalError("unknown handshake step");
}

bool CopyPath(char* dst, size_t cap, const std::string& src) {
  if (src.size() + 1 > cap) return false;
  std::memcpy(dst, src.c_str(), src.size() + 1);
  return true;
}

int64_t ToNanos(absl::Duration d) { return std::max<int64_t>(0, absl::ToInt64Nanoseconds(d)); }

Status SendAll(int fd, std::string_view data, int64_t deadline) {
  while (!data.empty()) {
    const int64_t left_ms = (deadline - MonotonicNanos()) / kNanosPerMilli;
    if (left_ms <= 0) return absl::DeadlineExceededError("sending the attach request timed out");
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return procfs::ErrnoToStatus(errno, "poll");
    }
    if (n == 0) continue;
    ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return procfs::ErrnoToStatus(errno, "sending the attach request");
    }
    data.remove_prefix(static_cast<size_t>(w));
  }
  return absl::OkStatus();
}

StatusOr<std::string> ReceiveAll(int fd, int64_t deadline, size_t max_bytes,
                                 absl::Duration io_timeout) {
  std::string out;
  char buf[65536];
  for (;;) {
    const int64_t left_ms = (deadline - MonotonicNanos()) / kNanosPerMilli;
    if (left_ms <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("the JVM did not finish its reply within ",
                                                      absl::FormatDuration(io_timeout), " (",
                                                      out.size(), " bytes received)"));
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return procfs::ErrnoToStatus(errno, "poll");
    }
    if (n == 0) continue;
    ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return procfs::ErrnoToStatus(errno, "reading the attach reply");
    }
    if (r == 0) return out;
    if (out.size() + static_cast<size_t>(r) > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("attach reply larger than ", max_bytes, " bytes"));
    }
    out.append(buf, static_cast<size_t>(r));
  }
}

Status ValidateRequest(std::string_view operation, const std::array<std::string_view, 3>& args) {
  if (operation.empty() || operation.size() > kMaxOperationLength ||
      operation.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("attach operation must be 1..",
                                                   kMaxOperationLength, " bytes without NUL: '",
                                                   absl::CEscape(Av(operation)), "'"));
  }
  for (std::string_view a : args) {
    if (a.size() > kMaxArgLength || a.find('\0') != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("attach argument must be at most ", kMaxArgLength, " bytes without NUL"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<AttachReply> ExecuteAttachOperation(const LocalJvm& jvm, std::string_view operation,
                                             const std::array<std::string_view, 3>& args,
                                             const AttachOptions& options) {
  HW_RETURN_IF_ERROR(ValidateRequest(operation, args));
  HW_RETURN_IF_ERROR(VerifyLocalJvm(jvm));

  // -XX:+DisableAttachMechanism: PerfData "sun.rt.jvmCapabilities" starts with '0' (what jcmd
  // checks in HotSpotAttachProvider.testAttachable). Unreadable PerfData is not fatal: the other
  // checks still apply.
  if (auto perf = PerfData::ReadFile(jvm.perfdata_path); perf.ok()) {
    auto caps = perf->GetString("sun.rt.jvmCapabilities");
    if (caps && !caps->empty() && (*caps)[0] == '0') {
      return absl::FailedPreconditionError(absl::StrCat(
          "JVM ", jvm.pid, " has the attach mechanism disabled (-XX:+DisableAttachMechanism)"));
    }
  }

  HW_ASSIGN_OR_RETURN(procfs::ProcStatus status, procfs::ReadProcStatus(jvm.proc_root, jvm.pid));
  HandshakePlan plan;
  plan.pid = jvm.pid;
  plan.uid = status.euid;
  plan.gid = status.egid;
  plan.may_signal = status.catches(SIGQUIT);
  plan.handshake_timeout_ns = ToNanos(options.handshake_timeout);
  plan.connect_timeout_ns = ToNanos(options.connect_timeout);
  const uid_t my_uid = ::geteuid();
  if (my_uid == 0) {
    plan.switch_credentials = status.euid != 0 || status.egid != 0;
  } else if (my_uid != status.euid || ::getegid() != status.egid) {
    return absl::PermissionDeniedError(absl::StrCat(
        "JVM ", jvm.pid, " runs as uid ", status.euid, " gid ", status.egid,
        "; attaching needs the same effective uid and gid or root (we are uid ", my_uid, ")"));
  }
  const std::string socket_path = absl::StrCat(jvm.root_tmp_dir, "/.java_pid", jvm.ns_pid);
  if (!CopyPath(plan.socket_path, sizeof(plan.socket_path), socket_path) ||
      !CopyPath(plan.trigger_cwd, sizeof(plan.trigger_cwd),
                absl::StrCat(jvm.proc_root, "/", jvm.pid, "/cwd/.attach_pid", jvm.ns_pid)) ||
      !CopyPath(plan.trigger_tmp, sizeof(plan.trigger_tmp),
                absl::StrCat(jvm.root_tmp_dir, "/.attach_pid", jvm.ns_pid))) {
    return absl::FailedPreconditionError(
        absl::StrCat("attach socket path too long for a UNIX socket: ", socket_path));
  }

  // Pin the process with a pidfd, then re-check it is still the JVM we verified: from here on a
  // SIGQUIT can only reach this process.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(jvm.pid), 0)));
  if (!pidfd.valid() && errno != ENOSYS) {
    return procfs::ErrnoToStatus(errno, absl::StrCat("pidfd_open(", jvm.pid, ")"));
  }
  plan.pidfd = pidfd.get();
  auto ticks = procfs::ReadStartTicks(jvm.proc_root, jvm.pid);
  if (!ticks.ok() || *ticks != jvm.start_ticks) {
    return absl::UnavailableError(absl::StrCat("JVM process ", jvm.pid, " is gone"));
  }

  // HotSpot removes its attach socket when it exits normally, not when it is killed (SIGKILL): a
  // later process that gets the same pid finds the dead JVM's .java_pid<pid>. The handshake would
  // refuse it (another user's: wrong owner) or connect to nothing (no listener). A socket whose
  // inode last changed before this process started cannot be this JVM's, so it is removed and the
  // handshake triggers the JVM's own listener. Seen in CI: a JVM of user nobody got the pid of a
  // root JVM that an earlier test had killed. Two seconds of margin cover the boot time's
  // whole-second precision; when the start time cannot be read, the handshake's checks decide.
  if (struct stat st; ::lstat(socket_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    auto started = procfs::ReadProcessStartTime(jvm.proc_root, jvm.pid);
    if (started.ok() && absl::TimeFromTimespec(st.st_ctim) + absl::Seconds(2) < *started) {
      if (::unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
        return procfs::ErrnoToStatus(
            errno, absl::StrCat("removing the stale attach socket ", socket_path,
                                " (left by an earlier process with pid ", jvm.ns_pid, ")"));
      }
    }
  }

  HandshakeResult result;
  UniqueFd sock;
  if (plan.switch_credentials) {
    HW_ASSIGN_OR_RETURN(sock, HandshakeInChild(plan, &result));
  } else {
    sock.reset(Handshake(plan, &result));
  }
  HW_RETURN_IF_ERROR(HandshakeStatus(result, jvm, plan, options));
  if (!sock.valid()) return absl::InternalError("attach handshake returned no socket");

  // The listening socket's credentials (SO_PEERCRED on a connected UNIX socket: the process that
  // called listen(), its pid translated into our pid namespace) must be the JVM's.
  ucred peer{};
  socklen_t peer_len = sizeof(peer);
  if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0) {
    return procfs::ErrnoToStatus(errno, "getsockopt(SO_PEERCRED)");
  }
  if (peer.pid != static_cast<pid_t>(jvm.pid)) {
    return absl::PermissionDeniedError(absl::StrCat(socket_path, " is served by pid ", peer.pid,
                                                    ", not by JVM ", jvm.pid, "; not sending"));
  }

  std::string request = "1";
  request.push_back('\0');
  request.append(operation);
  request.push_back('\0');
  for (std::string_view a : args) {
    request.append(a);
    request.push_back('\0');
  }
  const int64_t io_deadline = MonotonicNanos() + ToNanos(options.io_timeout);
  HW_RETURN_IF_ERROR(SendAll(sock.get(), request, io_deadline));
  HW_ASSIGN_OR_RETURN(std::string raw, ReceiveAll(sock.get(), io_deadline, options.max_reply_bytes,
                                                  options.io_timeout));
  if (raw.empty()) {
    return absl::UnavailableError(
        absl::StrCat("JVM ", jvm.pid,
                     " closed the attach connection without a reply (it rejected the request or "
                     "our credentials, or it is exiting)"));
  }
  return ParseAttachReply(raw, jvm.pid);
}

StatusOr<AttachReply> ParseAttachReply(std::string_view raw, int64_t pid) {
  const size_t eol = raw.find('\n');
  AttachReply reply;
  const absl::string_view status_line = Av(raw).substr(0, eol);
  if (eol == std::string_view::npos || !absl::SimpleAtoi(status_line, &reply.status)) {
    return absl::DataLossError(absl::StrCat("attach reply from JVM ", pid,
                                            " does not start with a status line: '",
                                            absl::CEscape(Av(raw.substr(0, 80))), "'"));
  }
  reply.output = std::string(raw.substr(eol + 1));
  return reply;
}

StatusOr<std::string> ExecuteJcmd(const LocalJvm& jvm, std::string_view command_line,
                                  const AttachOptions& options) {
  HW_ASSIGN_OR_RETURN(AttachReply reply,
                      ExecuteAttachOperation(jvm, "jcmd", {command_line, "", ""}, options));
  return JcmdResult(std::move(reply), jvm.pid, command_line);
}

StatusOr<std::string> JcmdResult(AttachReply reply, int64_t pid, std::string_view command_line) {
  if (reply.status == 0) return std::move(reply.output);
  absl::string_view text = absl::StripAsciiWhitespace(reply.output);
  const std::string message =
      absl::StrCat("JVM ", pid, " failed '", Av(command_line), "' (attach status ", reply.status,
                   "): ", text.substr(0, 1000));
  if (reply.status == kStatusBadVersion) {
    return absl::UnimplementedError(absl::StrCat(message, " [attach protocol version mismatch]"));
  }
  if (absl::StrContains(text, "IllegalArgumentException")) {
    return absl::InvalidArgumentError(message);
  }
  return absl::InternalError(message);
}

}  // namespace heapwatch::collectors
