// Discovery of local HotSpot JVMs, the way `jps` finds them: every HotSpot JVM maps a PerfData file
// at <its /tmp>/hsperfdata_<user>/<its pid> (see collectors/perf_data.h). heapwatch also finds JVMs
// of other users (when it runs as root) and JVMs in other mount and pid namespaces (containers),
// whose /tmp it reaches through /proc/<pid>/root/tmp and whose files are named by their
// namespace-local pid (the last value of "NSpid:" in /proc/<pid>/status).
//
// A file is only taken as a live JVM when the process that the pid names maps exactly that file
// (same device and inode in /proc/<pid>/maps). This rejects the stale files that JVMs killed with
// SIGKILL leave behind, files of a pid that has since been reused by another program, and
// look-alike files.
//
// Sources: OpenJDK src/hotspot/os/posix/perfMemory_posix.cpp (file location and naming),
// jdk.internal.jvmstat sun/jvmstat/perfdata/monitor/protocol/local/LocalVmManager.java (how jps
// lists them), jdk.attach sun/tools/attach/VirtualMachineImpl.java (Linux; NSpid and
// /proc/<pid>/root/tmp), proc(5).
#ifndef HEAPWATCH_COLLECTORS_LOCAL_JVM_H_
#define HEAPWATCH_COLLECTORS_LOCAL_JVM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace heapwatch::collectors {

// One live local JVM process as seen at discovery time.
struct LocalJvm {
  int64_t pid = 0;  // pid in the daemon's pid namespace (what kill(2) and /proc here use)
  // pid in the JVM's own pid namespace; names its hsperfdata file and attach socket
  int64_t ns_pid = 0;
  uint32_t uid = 0;  // effective uid of the JVM process, as seen from the daemon's user namespace
  uint32_t gid = 0;  // effective gid
  // Process start time in clock ticks since boot (/proc/<pid>/stat field 22). (pid, start_ticks)
  // names one process for its whole life: a pid reused by a later process has a different
  // start_ticks.
  uint64_t start_ticks = 0;
  // The JVM's temporary directory (where its attach socket lives) as reachable from the daemon:
  // "/tmp" for a JVM whose /tmp is the daemon's /tmp (same mount namespace, or another one that
  // mounts the same directory there, as a systemd service with ProtectSystem= has),
  // "/proc/<pid>/root/tmp" for one with a /tmp of its own (a container).
  std::string root_tmp_dir;
  // Full path of the JVM's hsperfdata file as reachable from the daemon, e.g.
  // "/tmp/hsperfdata_alice/4242" or "/proc/4242/root/tmp/hsperfdata_app/1".
  std::string perfdata_path;
  std::string proc_root = "/proc";  // the procfs the record was discovered through

  friend bool operator==(const LocalJvm&, const LocalJvm&) = default;
};

struct DiscoveryOptions {
  // Where procfs is mounted. Tests may point it elsewhere; the daemon keeps the default.
  std::string proc_root = "/proc";
  // Also look for JVMs in other mount namespaces through <proc_root>/<pid>/root/tmp (needs root or
  // the same user, and a kernel that allows it).
  bool other_namespaces = true;
  // The daemon's own /tmp (where JVMs of its own mount namespace put their files).
  std::string tmp_dir = "/tmp";
  // When set, receives the pids of processes that have an hsperfdata file named after them but
  // whose /proc/<pid>/maps the daemon may not read (another user's process without CAP_SYS_PTRACE),
  // so that they cannot be told apart from stale files: possibly JVMs hidden by missing privileges.
  std::vector<int64_t>* unreadable = nullptr;
};

// Returns the JVMs alive now, sorted by pid. A Scan: callers that want to notice JVMs starting and
// exiting call it periodically and compare successive results with DiffJvmSets().
//
// JVMs are skipped (they are not errors of the scan; see options.unreadable) when their files
// cannot be read with the daemon's privileges, when they run with -XX:-UsePerfData or
// -XX:+PerfDisableSharedMem (no file), when they are still creating the file, or when the file is
// stale. Cost: one readlink per process in /proc, plus, for each mount namespace holding hsperfdata
// directories, one directory listing, and for each candidate a read of /proc/<pid>/status, /stat
// and /maps: a few milliseconds for a thousand processes. Thread-safety: thread-safe (no shared
// state).
std::vector<LocalJvm> DiscoverLocalJvms(const DiscoveryOptions& options);

// What changed between two scans. A JVM is identified by (pid, start_ticks).
struct JvmSetChange {
  std::vector<LocalJvm> started;  // in `after` but not in `before`, sorted by pid
  std::vector<LocalJvm> exited;   // in `before` but not in `after`, sorted by pid
};
// Complexity: O((n + m) log(n + m)). Thread-safety: pure function.
JvmSetChange DiffJvmSets(const std::vector<LocalJvm>& before, const std::vector<LocalJvm>& after);

// Checks that `jvm` is still the same live JVM: the process exists with the same start time and
// still maps its hsperfdata file. Errors: Unavailable when the process is gone or the pid now names
// another process, FailedPrecondition when the process does not map the hsperfdata file (not a JVM,
// or a JVM that was started without shared PerfData), PermissionDenied when /proc cannot be read
// for it. Thread-safety: thread-safe.
Status VerifyLocalJvm(const LocalJvm& jvm);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_LOCAL_JVM_H_
