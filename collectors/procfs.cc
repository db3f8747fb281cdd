#include "collectors/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collectors/absl_compat.h"
#include "collectors/unique_fd.h"

namespace heapwatch::collectors::procfs {
namespace {

// Returns the value of the "Key:" line in /proc/<pid>/status text, or nullopt.
std::optional<absl::string_view> StatusField(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      return absl::StripAsciiWhitespace(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

// The n-th (0-based) whitespace-separated decimal number of a status field.
bool NthNumber(absl::string_view value, size_t n, uint64_t* out) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  return n < parts.size() && absl::SimpleAtoi(parts[n], out);
}

bool HexMask(absl::string_view value, uint64_t* out) {
  return !value.empty() && value.size() <= 16 && absl::SimpleHexAtoi(value, out);
}

}  // namespace

bool ProcStatus::catches(int signo) const {
  if (signo < 1 || signo > 64) return false;
  const uint64_t bit = uint64_t{1} << (signo - 1);
  return (sig_caught & bit) != 0 && (sig_ignored & bit) == 0;
}

StatusOr<ProcStatus> ParseProcStatus(std::string_view text_in, int64_t fallback_pid) {
  const absl::string_view text = Av(text_in);
  ProcStatus st;
  uint64_t v = 0;
  auto uid = StatusField(text, "Uid");
  if (!uid || !NthNumber(*uid, 1, &v) || v > UINT32_MAX) {
    return absl::InvalidArgumentError("/proc status: missing or malformed Uid line");
  }
  st.euid = static_cast<uint32_t>(v);
  auto gid = StatusField(text, "Gid");
  if (!gid || !NthNumber(*gid, 1, &v) || v > UINT32_MAX) {
    return absl::InvalidArgumentError("/proc status: missing or malformed Gid line");
  }
  st.egid = static_cast<uint32_t>(v);
  auto cgt = StatusField(text, "SigCgt");
  if (!cgt || !HexMask(*cgt, &st.sig_caught)) {
    return absl::InvalidArgumentError("/proc status: missing or malformed SigCgt line");
  }
  auto ign = StatusField(text, "SigIgn");
  if (ign && !HexMask(*ign, &st.sig_ignored)) {
    return absl::InvalidArgumentError("/proc status: malformed SigIgn line");
  }
  if (auto nspid = StatusField(text, "NSpid")) {
    for (absl::string_view part :
         absl::StrSplit(*nspid, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      int64_t pid = 0;
      if (!absl::SimpleAtoi(part, &pid) || pid <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("/proc status: malformed NSpid line: ", *nspid));
      }
      st.ns_pids.push_back(pid);
    }
  }
  if (st.ns_pids.empty()) st.ns_pids.push_back(fallback_pid);
  return st;
}

StatusOr<ProcStatus> ReadProcStatus(std::string_view proc_root_in, int64_t pid) {
  const absl::string_view proc_root = Av(proc_root_in);
  HW_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(absl::StrCat(proc_root, "/", pid, "/status"),
                                                      size_t{64} * 1024));
  return ParseProcStatus(Sv(text), pid);
}

StatusOr<uint64_t> ParseStartTicks(std::string_view stat_text_in) {
  const absl::string_view stat_text = Av(stat_text_in);
  const size_t close = stat_text.rfind(')');
  if (close == absl::string_view::npos) {
    return absl::InvalidArgumentError("/proc stat: no ')' after the command name");
  }
  // After "pid (comm)" come fields 3, 4, ...; the start time is field 22, i.e. the 20th after comm.
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat_text.substr(close + 1), ' ', absl::SkipEmpty());
  uint64_t ticks = 0;
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &ticks)) {
    return absl::InvalidArgumentError("/proc stat: malformed start time (field 22)");
  }
  return ticks;
}

StatusOr<uint64_t> ReadStartTicks(std::string_view proc_root_in, int64_t pid) {
  const absl::string_view proc_root = Av(proc_root_in);
  HW_ASSIGN_OR_RETURN(std::string text,
                      ReadSmallFile(absl::StrCat(proc_root, "/", pid, "/stat"), 4096));
  return ParseStartTicks(Sv(text));
}

StatusOr<absl::Time> ReadProcessStartTime(std::string_view proc_root_in, int64_t pid) {
  const absl::string_view proc_root = Av(proc_root_in);
  HW_ASSIGN_OR_RETURN(uint64_t ticks, ReadStartTicks(proc_root_in, pid));
  HW_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(absl::StrCat(proc_root, "/stat"), 1 << 20));
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "btime ")) continue;
    int64_t btime = 0;
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (!absl::SimpleAtoi(line, &btime) || hz <= 0) break;
    return absl::FromUnixSeconds(btime) +
           absl::Seconds(static_cast<double>(ticks) / static_cast<double>(hz));
  }
  return absl::InvalidArgumentError(absl::StrCat(proc_root, "/stat has no valid btime line"));
}

bool MapsContainFile(std::string_view maps_text_in, uint32_t dev_major, uint32_t dev_minor,
                     uint64_t inode) {
  const absl::string_view maps_text = Av(maps_text_in);
  // Line format: "start-end perms offset major:minor inode [path]", numbers of the device in hex.
  for (absl::string_view line : absl::StrSplit(maps_text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 5) continue;
    uint64_t ino = 0;
    if (!absl::SimpleAtoi(f[4], &ino) || ino != inode) continue;
    std::pair<absl::string_view, absl::string_view> dev = absl::StrSplit(f[3], ':');
    uint64_t major = 0, minor = 0;
    if (absl::SimpleHexAtoi(dev.first, &major) && absl::SimpleHexAtoi(dev.second, &minor) &&
        major == dev_major && minor == dev_minor) {
      return true;
    }
  }
  return false;
}

Status ErrnoToStatus(int err, std::string_view what) {
  std::string msg = absl::StrCat(Av(what), ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ESRCH:
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
      return absl::UnavailableError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    case ETIMEDOUT:
      return absl::DeadlineExceededError(msg);
    default:
      return absl::InternalError(msg);
  }
}

StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

StatusOr<std::string> ReadLink(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  if (n < 0) return ErrnoToStatus(errno, absl::StrCat("readlink ", path));
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace heapwatch::collectors::procfs
