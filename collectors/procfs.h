// Reading what Linux's /proc says about a process: owner, namespace-local pid, signal dispositions,
// start time and memory mappings. Internal to heapwatch::collectors (used by discovery and attach);
// public only so that tests can check the parsers on fixed text.
//
// Source: proc(5) ("/proc/[pid]/status", "/proc/[pid]/stat", "/proc/[pid]/maps"), Linux 4.1+ for
// NSpid.
//
// Thread-safety: every function is thread-safe (no shared state). Each Read* call opens, reads and
// closes one file; none follows a path that the caller did not give.
#ifndef HEAPWATCH_COLLECTORS_PROCFS_H_
#define HEAPWATCH_COLLECTORS_PROCFS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/status.h"

namespace heapwatch::collectors::procfs {

// The fields of /proc/<pid>/status that heapwatch uses.
struct ProcStatus {
  uint32_t euid = 0;  // effective uid ("Uid:" second column)
  uint32_t egid = 0;  // effective gid ("Gid:" second column)
  // "NSpid:": the pid in each pid namespace, outermost (ours) first; never empty
  std::vector<int64_t> ns_pids;
  uint64_t sig_caught = 0;   // "SigCgt:" mask; bit (n - 1) is signal n
  uint64_t sig_ignored = 0;  // "SigIgn:" mask

  // The pid in the process's own (innermost) pid namespace: what the JVM calls its pid.
  int64_t innermost_pid() const { return ns_pids.back(); }
  // True when signal `signo` (1..64) has a handler installed and is not ignored.
  bool catches(int signo) const;
};

// Parses the text of /proc/<pid>/status. When "NSpid:" is missing (kernels before 4.1)
// `fallback_pid` is used as the only pid. Errors: InvalidArgument when "Uid:", "Gid:" or "SigCgt:"
// is missing or malformed. Complexity: O(text size).
StatusOr<ProcStatus> ParseProcStatus(std::string_view text, int64_t fallback_pid);

// Reads and parses <proc_root>/<pid>/status. Errors: Unavailable when the process does not exist
// (ENOENT, ESRCH), PermissionDenied (EACCES), plus those of ParseProcStatus.
StatusOr<ProcStatus> ReadProcStatus(std::string_view proc_root, int64_t pid);

// Parses the process start time from the text of /proc/<pid>/stat: field 22, in clock ticks since
// boot. Together with the pid it identifies a process across pid reuse. The command name (field 2,
// in parentheses) may contain spaces and parentheses; parsing starts after its last ')'.
// Errors: InvalidArgument when the text is malformed.
StatusOr<uint64_t> ParseStartTicks(std::string_view stat_text);

// Reads <proc_root>/<pid>/stat and returns ParseStartTicks. Errors: Unavailable when the process is
// gone, plus those of ParseStartTicks.
StatusOr<uint64_t> ReadStartTicks(std::string_view proc_root, int64_t pid);

// When the process started, as wall-clock time: the boot time (`btime` of <proc_root>/stat, whole
// seconds) plus its start ticks over sysconf(_SC_CLK_TCK). Accurate to about one second. Errors:
// Unavailable when the process is gone, InvalidArgument when a file is malformed.
StatusOr<absl::Time> ReadProcessStartTime(std::string_view proc_root, int64_t pid);

// True when the text of /proc/<pid>/maps has a mapping of the file with device
// `dev_major:dev_minor` and inode `inode` (the HotSpot hsperfdata file stays mapped for the JVM's
// whole life). Complexity: O(text).
bool MapsContainFile(std::string_view maps_text, uint32_t dev_major, uint32_t dev_minor,
                     uint64_t inode);

// Reads a whole file of at most `max_bytes` bytes (procfs files report size 0, so this reads until
// EOF). Errors: Unavailable (ENOENT/ESRCH: gone), PermissionDenied (EACCES/EPERM),
// ResourceExhausted when the file is larger than max_bytes, Internal for other errno values (the
// message names the path and errno).
StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes);

// Maps an errno value from a file or process operation to a status: ENOENT/ESRCH -> Unavailable
// (gone), EACCES/EPERM -> PermissionDenied, ETIMEDOUT -> DeadlineExceeded, ECONNREFUSED,
// ECONNRESET, EPIPE ->
// Unavailable, anything else -> Internal. The message is "<what>: <strerror>".
Status ErrnoToStatus(int err, std::string_view what);

// readlink(2) of `path`, e.g. "/proc/123/ns/mnt" -> "mnt:[4026531841]". Errors as ReadSmallFile.
StatusOr<std::string> ReadLink(const std::string& path);

}  // namespace heapwatch::collectors::procfs

#endif  // HEAPWATCH_COLLECTORS_PROCFS_H_
