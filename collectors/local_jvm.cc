#include "collectors/local_jvm.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collectors/procfs.h"

namespace heapwatch::collectors {
namespace {

constexpr size_t kMaxMapsBytes = 64u << 20;

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using UniqueDir = std::unique_ptr<DIR, DirCloser>;

// Names of the numeric entries of a directory (pids in /proc, hsperfdata files).
std::vector<int64_t> NumericEntries(const std::string& dir) {
  std::vector<int64_t> out;
  UniqueDir d(::opendir(dir.c_str()));
  if (!d) return out;
  while (const dirent* e = ::readdir(d.get())) {
    int64_t n = 0;
    if (absl::SimpleAtoi(e->d_name, &n) && n > 0) out.push_back(n);
  }
  return out;
}

// hsperfdata files of one /tmp: namespace-local pid -> paths (one per hsperfdata_<user> directory
// that has a file of that name; normally exactly one).
using PerfdataListing = absl::flat_hash_map<int64_t, std::vector<std::string>>;

PerfdataListing ListPerfdataFiles(const std::string& tmp_dir) {
  PerfdataListing listing;
  UniqueDir d(::opendir(tmp_dir.c_str()));
  if (!d) return listing;
  while (const dirent* e = ::readdir(d.get())) {
    if (!absl::StartsWith(e->d_name, "hsperfdata_")) continue;
    const std::string dir = absl::StrCat(tmp_dir, "/", e->d_name);
    for (int64_t pid : NumericEntries(dir)) {
      listing[pid].push_back(absl::StrCat(dir, "/", pid));
    }
  }
  return listing;
}

// True when process `pid` maps the regular file at `path`.
// `denied` is set when /proc/<pid>/maps exists but may not be read.
bool ProcessMapsFile(const std::string& proc_root, int64_t pid, const std::string& path,
                     bool* denied) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto maps = procfs::ReadSmallFile(absl::StrCat(proc_root, "/", pid, "/maps"), kMaxMapsBytes);
  if (!maps.ok()) {
    *denied = absl::IsPermissionDenied(maps.status());
    return false;
  }
  return procfs::MapsContainFile(*maps, major(st.st_dev), minor(st.st_dev), st.st_ino);
}

// Whether two paths name the same directory (same device and inode).
bool SameDirectory(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && S_ISDIR(sa.st_mode) &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::vector<LocalJvm> DiscoverLocalJvms(const DiscoveryOptions& options) {
  const std::string& proc = options.proc_root;
  const std::string self_mnt = procfs::ReadLink(proc + "/self/ns/mnt").value_or("");
  const std::string self_pidns = procfs::ReadLink(proc + "/self/ns/pid").value_or("");
  // Listings per mount namespace ("" = ours), made lazily: most processes share the daemon's
  // namespace.
  std::map<std::string, PerfdataListing> listings;
  // Per other mount namespace: whether its /tmp is ours.
  std::map<std::string, bool> same_tmp;
  std::vector<LocalJvm> found;

  for (int64_t pid : NumericEntries(proc)) {
    const std::string pid_dir = absl::StrCat(proc, "/", pid);
    std::string mnt = procfs::ReadLink(pid_dir + "/ns/mnt").value_or("");
    // Unreadable (other user, not root) or equal to ours: the JVM's /tmp is our /tmp. So it is when
    // either side runs in a mount namespace of its own that still mounts the same /tmp (systemd's
    // ProtectSystem= and friends give the daemon one): the same directory, found by its inode.
    bool same_mnt = mnt.empty() || mnt == self_mnt;
    if (!same_mnt) {
      auto known = same_tmp.find(mnt);
      if (known == same_tmp.end()) {
        known = same_tmp.emplace(mnt, SameDirectory(pid_dir + "/root/tmp", options.tmp_dir)).first;
      }
      same_mnt = known->second;
    }
    if (!same_mnt && !options.other_namespaces) continue;
    const std::string tmp = same_mnt ? options.tmp_dir : pid_dir + "/root/tmp";
    const std::string key = same_mnt ? std::string() : mnt;
    auto it = listings.find(key);
    if (it == listings.end()) it = listings.emplace(key, ListPerfdataFiles(tmp)).first;
    const PerfdataListing& listing = it->second;
    if (listing.empty()) continue;

    // The file is named by the namespace-local pid. In our own pid namespace that is `pid`, so the
    // status file only needs reading for candidates and for processes of other pid namespaces.
    const std::string pidns = procfs::ReadLink(pid_dir + "/ns/pid").value_or("");
    const bool same_pidns = pidns.empty() || pidns == self_pidns;
    if (same_pidns && !listing.contains(pid)) continue;
    auto status = procfs::ReadProcStatus(proc, pid);
    if (!status.ok()) continue;
    const int64_t ns_pid = status->innermost_pid();
    auto files = listing.find(ns_pid);
    if (files == listing.end()) continue;

    auto ticks_before = procfs::ReadStartTicks(proc, pid);
    if (!ticks_before.ok()) continue;
    for (const std::string& file : files->second) {
      // In another mount namespace, reach the file through this process's root rather than through
      // the root of whichever process first listed the namespace.
      std::string path = file;
      if (!same_mnt) path = absl::StrCat(tmp, file.substr(file.find("/hsperfdata_")));
      bool denied = false;
      if (!ProcessMapsFile(proc, pid, path, &denied)) {
        if (denied && options.unreadable != nullptr) {
          options.unreadable->push_back(pid);
          break;
        }
        continue;
      }
      auto ticks_after = procfs::ReadStartTicks(proc, pid);
      // The pid changed hands meanwhile: not this process's file.
      if (!ticks_after.ok() || *ticks_after != *ticks_before) break;
      LocalJvm jvm;
      jvm.pid = pid;
      jvm.ns_pid = ns_pid;
      jvm.uid = status->euid;
      jvm.gid = status->egid;
      jvm.start_ticks = *ticks_before;
      jvm.root_tmp_dir = tmp;
      jvm.perfdata_path = path;
      jvm.proc_root = proc;
      found.push_back(std::move(jvm));
      break;
    }
  }
  std::sort(found.begin(), found.end(),
            [](const LocalJvm& a, const LocalJvm& b) { return a.pid < b.pid; });
  return found;
}

JvmSetChange DiffJvmSets(const std::vector<LocalJvm>& before, const std::vector<LocalJvm>& after) {
  auto key = [](const LocalJvm& j) { return std::make_tuple(j.pid, j.start_ticks); };
  std::map<std::tuple<int64_t, uint64_t>, const LocalJvm*> old_set, new_set;
  for (const LocalJvm& j : before) old_set[key(j)] = &j;
  for (const LocalJvm& j : after) new_set[key(j)] = &j;
  JvmSetChange change;
  for (const auto& [k, j] : new_set) {
    if (!old_set.contains(k)) change.started.push_back(*j);
  }
  for (const auto& [k, j] : old_set) {
    if (!new_set.contains(k)) change.exited.push_back(*j);
  }
  return change;
}

Status VerifyLocalJvm(const LocalJvm& jvm) {
  auto ticks = procfs::ReadStartTicks(jvm.proc_root, jvm.pid);
  if (!ticks.ok()) {
    if (absl::IsUnavailable(ticks.status())) {
      return absl::UnavailableError(absl::StrCat("JVM process ", jvm.pid, " is gone"));
    }
    return ticks.status();
  }
  if (*ticks != jvm.start_ticks) {
    return absl::UnavailableError(
        absl::StrCat("JVM process ", jvm.pid, " is gone (the pid now names another process)"));
  }
  bool denied = false;
  if (!ProcessMapsFile(jvm.proc_root, jvm.pid, jvm.perfdata_path, &denied)) {
    // Distinguish "exited meanwhile" from "not (or no longer) a JVM with shared PerfData".
    auto again = procfs::ReadStartTicks(jvm.proc_root, jvm.pid);
    if (!again.ok() || *again != jvm.start_ticks) {
      return absl::UnavailableError(absl::StrCat("JVM process ", jvm.pid, " is gone"));
    }
    return absl::FailedPreconditionError(absl::StrCat("process ", jvm.pid, " does not map ",
                                                      jvm.perfdata_path,
                                                      ": not a HotSpot JVM with shared PerfData"));
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::collectors
