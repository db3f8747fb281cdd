#include "collectors/heap_dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "collectors/absl_compat.h"
#include "collectors/procfs.h"
#include "collectors/unique_fd.h"

namespace heapwatch::collectors {
namespace {

constexpr int32_t kStatusBadVersion = 101;  // ATTACH_ERROR_BADVERSION (attachListener.hpp)
constexpr size_t kMaxPathBytes = 1000;      // an attach argument is at most 1024 bytes

Status SysError(int err, std::string_view call, std::string_view path) {
  const std::string message = absl::StrCat(Av(call), "(", Av(path), "): ", std::strerror(err));
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// True when the process that `jvm` names is gone, a zombie, or exiting (its memory, and with it
// the hsperfdata mapping, already released).
bool JvmGone(const LocalJvm& jvm) {
  Status verify = VerifyLocalJvm(jvm);
  if (verify.ok()) return false;
  if (absl::IsUnavailable(verify)) return true;
  auto stat = procfs::ReadSmallFile(absl::StrCat(jvm.proc_root, "/", jvm.pid, "/stat"), 4096);
  if (!stat.ok()) return true;
  const size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size()) return false;
  const char state = (*stat)[paren + 2];
  // FailedPrecondition from VerifyLocalJvm for a process that was a JVM at discovery: it no longer
  // maps its PerfData file, which happens when it is exiting (exit_mm runs before exit_files).
  return state == 'Z' || state == 'X' || absl::IsFailedPrecondition(verify);
}

// Waits up to ~1 s for an exiting JVM to be seen as gone (the attach socket closes while the
// process is still being torn down).
bool JvmGoneSettled(const LocalJvm& jvm) {
  for (int i = 0; i < 20; ++i) {
    if (JvmGone(jvm)) return true;
    usleep(50 * 1000);
  }
  return false;
}

// Parses "Heap dump file created [N bytes in X secs]" out of the reply; 0 when absent.
double ParsePauseSeconds(std::string_view text) {
  absl::string_view t = Av(text);
  const size_t at = t.find("Heap dump file created [");
  if (at == absl::string_view::npos) return 0;
  t = t.substr(at);
  const size_t in = t.find(" bytes in ");
  const size_t secs = t.find(" secs]");
  if (in == absl::string_view::npos || secs == absl::string_view::npos || secs < in) return 0;
  const size_t begin = in + std::strlen(" bytes in ");
  double seconds = 0;
  if (!absl::SimpleAtod(t.substr(begin, secs - begin), &seconds) || seconds < 0) return 0;
  return seconds;
}

// Deletes what the JVM may have written at `path` after a failure. `jvm_refused_create` is true
// when the JVM said it could not create the file (then the file, if any, is not the JVM's).
void DeletePartialDump(const std::string& path, bool jvm_refused_create) {
  if (jvm_refused_create) return;
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) unlink(path.c_str());
}

Status ValidateDumpPath(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("heap dump path must be absolute, got '", path, "'"));
  }
  if (path.size() > kMaxPathBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("heap dump path longer than ", kMaxPathBytes, " bytes"));
  }
  for (char c : path) {
    if (c == '\0' || c == '"' || c == '\'' || absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "heap dump path '", path,
          "' contains whitespace, a quote or NUL (the JVM's command parser would split it)"));
    }
  }
  return absl::OkStatus();
}

// True when the JVM user (uid, gid) may search (traverse) a directory with `st` (primary group
// only; supplementary groups are not known here).
bool Traversable(const struct stat& st, uint32_t uid, uint32_t gid) {
  if (uid == 0) return true;
  if (st.st_uid == uid) return (st.st_mode & S_IXUSR) != 0;
  if (st.st_gid == gid) return (st.st_mode & S_IXGRP) != 0;
  return (st.st_mode & S_IXOTH) != 0;
}

std::string Octal(mode_t mode) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%04o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

}  // namespace

Status PreparePrivateDumpDirectory(const std::string& dir, uint32_t uid, uint32_t gid) {
  if (dir.empty() || dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("dump directory must be an absolute path, got '", dir, "'"));
  }
  const uid_t self = geteuid();
  const bool root = self == 0;
  if (!root && uid != self) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the daemon (uid ", self, ") is not root and cannot make a dump directory for uid ", uid));
  }
  // Parents, outermost first.
  std::vector<std::string> parts = absl::StrSplit(dir, '/', absl::SkipEmpty());
  if (parts.empty()) return absl::InvalidArgumentError("dump directory must not be '/'");
  std::string prefix;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    absl::StrAppend(&prefix, "/", parts[i]);
    struct stat st;
    if (stat(prefix.c_str(), &st) != 0) {
      if (errno != ENOENT) return SysError(errno, "stat", prefix);
      if (mkdir(prefix.c_str(), 0711) == 0) {
        if (chmod(prefix.c_str(), 0711) != 0) return SysError(errno, "chmod", prefix);  // umask
      } else if (errno != EEXIST) {
        return SysError(errno, "mkdir", prefix);
      }
      if (stat(prefix.c_str(), &st) != 0) return SysError(errno, "stat", prefix);
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(prefix, " is not a directory"));
    }
    if (!Traversable(st, uid, gid)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the JVM's user (uid ", uid, ") cannot traverse ", prefix, " (mode ", Octal(st.st_mode),
          ", owner ", st.st_uid,
          "): give it search permission (e.g. chmod o+x) or choose another dump directory"));
    }
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return SysError(errno, "mkdir", dir);
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    struct stat link_st;
    if ((err == ELOOP || err == ENOTDIR) && lstat(dir.c_str(), &link_st) == 0 &&
        S_ISLNK(link_st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("dump directory ", dir, " is a symlink; refusing to use it"));
    }
    if (err == ENOTDIR || err == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat("dump directory ", dir, " exists and is not a directory"));
    }
    return SysError(err, "open", dir);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return SysError(errno, "fstat", dir);
  if (st.st_uid != self && st.st_uid != uid) {
    return absl::FailedPreconditionError(absl::StrCat("dump directory ", dir, " is owned by uid ",
                                                      st.st_uid, ", neither the daemon's (", self,
                                                      ") nor the JVM's (", uid, ")"));
  }
  if (root && (st.st_uid != uid || st.st_gid != gid)) {
    if (fchown(fd.get(), uid, gid) != 0) return SysError(errno, "fchown", dir);
  }
  if ((st.st_mode & 07777) != 0700) {
    if (fchmod(fd.get(), 0700) != 0) return SysError(errno, "fchmod", dir);
  }
  return absl::OkStatus();
}

StatusOr<HeapDumpResult> TakeHeapDump(const LocalJvm& jvm, const std::string& path,
                                      const HeapDumpOptions& options) {
  HW_RETURN_IF_ERROR(ValidateDumpPath(path));
  if (options.gzip && (options.gzip_level < 1 || options.gzip_level > 9)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gzip_level must be 1..9, got ", options.gzip_level));
  }
  if (jvm.root_tmp_dir != "/tmp") {
    return absl::UnimplementedError(absl::StrCat(
        "JVM ", jvm.pid, " runs in another mount namespace (its /tmp is ", jvm.root_tmp_dir,
        "); heap dumps are only supported for JVMs in the daemon's mount namespace"));
  }
  // The JVM opens `path` in its own mount namespace: its directory must be ours.
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  struct stat ours, theirs;
  const std::string their_dir = absl::StrCat(jvm.proc_root, "/", jvm.pid, "/root", dir);
  if (::stat(dir.c_str(), &ours) == 0 && ::stat(their_dir.c_str(), &theirs) == 0 &&
      (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the dump directory ", dir, " is another directory in JVM ", jvm.pid,
        "'s mount namespace; the JVM would write its dump where the daemon cannot read it"));
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("heap dump file ", path, " already exists; not overwriting it"));
  }
  if (errno != ENOENT) return SysError(errno, "lstat", path);

  const absl::Time start = absl::Now();
  bool gzip = options.gzip;
  std::string text;
  for (;;) {
    const std::string command =
        gzip ? absl::StrCat("GC.heap_dump -gz=", options.gzip_level, " ", path)
             : absl::StrCat("GC.heap_dump ", path);
    auto reply = ExecuteAttachOperation(jvm, "jcmd", {command, "", ""}, options.attach);
    if (!reply.ok()) {
      const Status& error = reply.status();
      const bool gone = absl::IsUnavailable(error) ? JvmGoneSettled(jvm) : JvmGone(jvm);
      DeletePartialDump(path, /*jvm_refused_create=*/false);
      if (gone) {
        return absl::UnavailableError(absl::StrCat("JVM ", jvm.pid,
                                                   " is gone: it exited before or during the "
                                                   "heap dump to ",
                                                   path, " (", error.message(), ")"));
      }
      return Status(error.code(), absl::StrCat("heap dump of JVM ", jvm.pid, " to ", path, ": ",
                                               error.message()));
    }
    text = std::string(absl::StripAsciiWhitespace(reply->output));
    if (gzip && absl::StrContains(text, "IllegalArgumentException") &&
        absl::StrContains(text, "'-gz")) {
      gzip = false;  // JDK 8: no -gz option; ask again for an uncompressed dump
      continue;
    }
    if (reply->status == kStatusBadVersion) {
      return absl::UnimplementedError(
          absl::StrCat("JVM ", jvm.pid, ": attach protocol version mismatch (status 101): ", text));
    }
    const bool refused_create = absl::StrContains(text, "Unable to create ");
    if (reply->status != 0 || !absl::StrContains(text, "Heap dump file created")) {
      DeletePartialDump(path, refused_create);
      if (JvmGone(jvm)) {
        return absl::UnavailableError(
            absl::StrCat("JVM ", jvm.pid, " exited during the heap dump to ", path, ": ", text));
      }
      return absl::FailedPreconditionError(
          absl::StrCat("JVM ", jvm.pid, " did not write the heap dump to ", path,
                       " (attach status ", reply->status, "): ", text.substr(0, 1000)));
    }
    break;
  }

  HeapDumpResult result;
  result.path = path;
  result.gzip = gzip;
  result.pause_seconds = ParsePauseSeconds(text);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return absl::InternalError(absl::StrCat("JVM ", jvm.pid, " reported '", text,
                                            "' but the file cannot be opened: open(", path,
                                            "): ", std::strerror(err)));
  }
  if (fstat(fd.get(), &st) != 0) return SysError(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InternalError(absl::StrCat(path, " is not a regular file after the heap dump"));
  }
  if (fchmod(fd.get(), 0600) != 0) {
    const Status error = SysError(errno, "fchmod", path);
    fd.reset();
    unlink(path.c_str());
    return absl::InternalError(error.message());
  }
  result.file_bytes = static_cast<uint64_t>(st.st_size);
  result.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return result;
}

}  // namespace heapwatch::collectors
