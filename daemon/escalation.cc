#include "daemon/escalation.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <regex>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collectors/heap_dump.h"
#include "daemon/class_loading_watch.h"
#include "daemon/query_server.h"
#include "heapwatch/records/v1/records.pb.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"
#include "proto/time_util.h"
#include "proto/trend_proto.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {
namespace {

// The heapwatch_faults_total reason of a failed TakeHeapDump (collectors/heap_dump.h, Errors).
FaultReason DumpFault(const Status& s) {
  if (s.code() == absl::StatusCode::kDeadlineExceeded) return FaultReason::kDumpTimeout;
  if (s.code() == absl::StatusCode::kUnavailable &&
      (s.message().find(" is gone") != std::string_view::npos ||
       s.message().find(" exited during") != std::string_view::npos)) {
    return FaultReason::kJvmExited;
  }
  if (s.message().find("No space left") != std::string_view::npos ||
      s.message().find("Disk quota exceeded") != std::string_view::npos) {
    return FaultReason::kDumpDiskFull;
  }
  return FaultReason::kDumpFailed;
}

}  // namespace

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDumpTable = "xdump";
constexpr std::string_view kReportTable = "xreport";
constexpr std::string_view kSummaryTable = "xsummary";
constexpr char kRefusedPrefix[] = "refused: ";
// The known-leak pattern a class loader leak's report shows (analysis/leak_patterns/registry.cc).
constexpr std::string_view kClassLoaderPinnedPattern = "class-loader-pinned";
// Estimated analysis memory and uncompressed dump size, as a multiple of the histogram's bytes
// (measured: peak RSS of a whole analysis is about 1.0x the uncompressed dump, which is about 1.1x
// the live heap; see README "Benchmarks").
constexpr double kEstimateFactor = 1.2;
// Growth-history points kept in a report (the newest).
constexpr size_t kMaxHistoryPoints = 240;
// Rows of the diff embedded in a report.
constexpr uint32_t kReportDiffRows = 20;

// "0x7f0012345678": how an accumulation point's object id is named to the leak detector.
std::string ObjectIdText(uint64_t id) { return absl::StrFormat("0x%x", id); }

// A class with no reachable instance in the dump gets no report: it joins the classes the dump
// does not name (logged when the reports are stored).
void DropUnreachableSuspects(pipeline::DumpAnalysis* analysis) {
  std::vector<analysis::SuspectReport> kept;
  for (analysis::SuspectReport& s : analysis->suspects) {
    if (s.instances == 0) {
      analysis->missing_classes.push_back(s.class_name);
    } else {
      kept.push_back(std::move(s));
    }
  }
  analysis->suspects = std::move(kept);
}

void SortPoints(std::vector<diff::LeakDetector::AccumulationPoint>* points) {
  std::sort(points->begin(), points->end(), [](const auto& x, const auto& y) {
    return x.suspect_class < y.suspect_class;
  });
}

// Debian's Abseil has its own string_view type.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string DumpKey(const AgentId& agent, std::string_view dump_id) {
  return absl::StrCat(agent.value, "/", AV(dump_id));
}
std::string ReportKey(const AgentId& agent, std::string_view class_name, std::string_view dump_id) {
  return absl::StrCat(agent.value, "/", AV(class_name), "/", AV(dump_id));
}

std::string DumpIdFor(absl::Time t) {
  return absl::FormatTime("%Y%m%dT%H%M%E6SZ", t, absl::UTCTimeZone());
}

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  auto t = proto::FromTimestamp(ts);
  return t.ok() ? *t : absl::InfinitePast();
}

bool Active(v1::ExtendedDumpState s) {
  return s == v1::EXTENDED_DUMP_STATE_QUEUED || s == v1::EXTENDED_DUMP_STATE_DUMPING ||
         s == v1::EXTENDED_DUMP_STATE_ANALYZING;
}

uint64_t Estimate(uint64_t heap_bytes) {
  return static_cast<uint64_t>(static_cast<double>(heap_bytes) * kEstimateFactor);
}

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return absl::StrFormat("%.1f GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return absl::StrFormat("%.1f MiB", b / double(uint64_t{1} << 20));
  return absl::StrFormat("%d bytes", b);
}

}  // namespace

struct Escalation::Impl {
  struct Job {
    v1::ExtendedDump record;  // guarded by mu
    EscalationTarget target;
    std::map<std::string, diff::Suspect> suspects;  // guarded by mu: class -> trend at request
    absl::Time not_before;
    uint64_t estimate = 0;  // bytes: analysis memory and uncompressed dump size
    bool joinable = true;   // guarded by mu: suspects may still join (analysis not started)
    std::string raw_path;   // guarded by mu: the raw dump, once written
    uint32_t jvm_uid = 0;   // owner the raw dump must have
  };
  struct AgentEsc {
    EscalationTarget target;
    bool live = false;
    bool loaded = false;
    std::vector<diff::Suspect> suspects;      // as of the last collection
    std::shared_ptr<Job> open;                // joinable job, if any
    absl::Time last_dump = absl::InfinitePast();  // dump_time of the newest dump taken
    // class -> the time up to which its suspect episodes are covered (see the file comment): the
    // request time of the covering job, or the suspect's first_seen when it joined later.
    std::map<std::string, absl::Time> covered;
  };

  EscalationConfig config;
  std::string dump_dir;
  collectors::AttachOptions attach;
  storage::SnapshotStore* store;
  Metrics* metrics;
  const Clock* clock;
  std::function<void(const AgentId&, absl::Duration)> dump_pause_listener;  // set before Start's threads use it
  std::function<void(const AgentId&, std::string_view)> analysis_start_listener;  // likewise
  std::function<void(const AnalysedDump&)> report_listener;                       // likewise

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                             // guarded by mu
  std::map<AgentId, AgentEsc> agents;                // guarded by mu
  std::deque<std::shared_ptr<Job>> dump_queue;       // guarded by mu: QUEUED
  std::deque<std::shared_ptr<Job>> analysis_queue;   // guarded by mu: ANALYZING, not started
  int analyses_in_flight = 0;                        // guarded by mu
  uint64_t memory_in_flight = 0;                     // guarded by mu
  uint64_t in_flight_disk = 0;                       // guarded by mu: estimated raw dumps on disk
  int live_threads = 0;                              // guarded by mu
  absl::Time last_id_time = absl::InfinitePast();    // guarded by mu: keeps dump ids unique
  std::map<std::string, std::string> unsaved;        // guarded by mu: records to write again
  std::set<std::string> raw_files;                   // guarded by mu: raw dumps on disk now
  // Raw dumps kept after their analysis (keep_raw_dumps), oldest first: key "<dump_id>|<agent>".
  struct KeptRaw {
    AgentId agent;
    std::string dump_id;
    std::string path;
    uint64_t bytes = 0;
  };
  std::map<std::string, KeptRaw> kept_raw;  // guarded by mu
  uint64_t kept_raw_bytes = 0;              // guarded by mu: sum over kept_raw
  std::vector<std::thread> threads;

  // ---- records ----

  // Writes the record of `job`. REQUIRES: mu held (the record is guarded by it). A store error is
  // logged and the record is written again by the dump thread until it succeeds (RetryUnsaved), so
  // a final state is never lost while the daemon runs.
  void Persist(const Job& job) {
    const std::string key = DumpKey(AgentId(job.record.agent()), job.record.dump_id());
    std::string value = job.record.SerializeAsString();
    unsaved.erase(key);
    Status s = store->PutRecord(kDumpTable, key, value);
    if (!s.ok()) {
      spdlog::error("escalation: cannot store the record of dump {} of agent {}, will retry: {}",
                    job.record.dump_id(), job.record.agent(), s.ToString());
      unsaved[key] = std::move(value);
    }
  }

  void RetryUnsaved() {  // REQUIRES: mu held
    for (auto it = unsaved.begin(); it != unsaved.end();) {
      if (store->PutRecord(kDumpTable, it->first, it->second).ok()) {
        it = unsaved.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Deletes a raw dump (unless kept by configuration). REQUIRES: mu held.
  void DeleteRaw(const std::string& path, bool force = false) {
    raw_files.erase(path);
    if (path.empty() || (config.keep_raw_dumps && !force)) return;
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) spdlog::error("escalation: cannot delete the raw dump {}: {}", path, ec.message());
  }

  // Counts a kept raw dump against max_dump_disk_bytes. REQUIRES: mu held.
  void AddKeptRaw(const AgentId& agent, const std::string& dump_id, const std::string& path) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    if (ec) return;  // gone: nothing to count
    const std::string key = absl::StrCat(dump_id, "|", agent.value);
    if (kept_raw.count(key)) return;
    kept_raw[key] = KeptRaw{agent, dump_id, path, static_cast<uint64_t>(size)};
    kept_raw_bytes += size;
  }

  // Deletes the oldest kept raw dumps while the kept ones, the raw dumps being written or analysed
  // (in_flight_disk) and `extra` bytes exceed max_dump_disk_bytes; their records say the raw dump
  // is no longer kept. A dump in progress is never in kept_raw. REQUIRES: mu held.
  void EvictKeptRawDumps(uint64_t extra) {
    while (!kept_raw.empty() &&
           in_flight_disk + kept_raw_bytes + extra > config.max_dump_disk_bytes) {
      auto it = kept_raw.begin();
      const KeptRaw k = it->second;
      kept_raw_bytes -= k.bytes;
      kept_raw.erase(it);
      std::error_code ec;
      fs::remove(k.path, ec);
      if (ec) {
        spdlog::error("escalation: cannot delete the kept raw dump {}: {}", k.path, ec.message());
      }
      spdlog::info(
          "escalation: deleted the kept raw dump {} ({}) of agent {}: kept raw dumps are over "
          "escalation.max_dump_disk_bytes ({})",
          k.path, Bytes(k.bytes), k.agent.value, Bytes(config.max_dump_disk_bytes));
      const std::string key = DumpKey(k.agent, k.dump_id);
      auto stored = store->GetRecord(kDumpTable, key);
      v1::ExtendedDump d;
      if (stored.ok() && d.ParseFromString(*stored)) {
        d.set_raw_dump_kept(false);
        d.clear_raw_dump_path();
        Status put = store->PutRecord(kDumpTable, key, d.SerializeAsString());
        if (!put.ok()) unsaved[key] = d.SerializeAsString();
      }
    }
  }

  void PublishQueueGauges() {  // REQUIRES: mu held
    metrics->SetExtendedDumpAnalyses(analyses_in_flight,
                                     static_cast<int>(dump_queue.size() + analysis_queue.size()));
  }

  // Ends `job` as FAILED with `error`. REQUIRES: mu held.
  void Fail(Job& job, std::string error, ExtendedDumpResult result) {
    job.record.set_state(v1::EXTENDED_DUMP_STATE_FAILED);
    job.record.set_error(std::move(error));
    proto::SetTimestamp(clock->Now(), &job.record, &v1::ExtendedDump::mutable_finished_time);
    job.joinable = false;
    auto it = agents.find(AgentId(job.record.agent()));
    if (it != agents.end()) {
      if (it->second.open.get() == &job) it->second.open = nullptr;
      if (result != ExtendedDumpResult::kRefused) {
        // Not covered after all: retried after the agent's interval if still a suspect.
        for (const auto& [name, s] : job.suspects) it->second.covered.erase(name);
      }
    }
    Persist(job);
    metrics->RecordExtendedDump(AgentId(job.record.agent()), result);
    spdlog::warn("escalation: extended dump {} of agent {} failed: {}", job.record.dump_id(),
                 job.record.agent(), job.record.error());
  }

  // Loads what the store knows of the agent's earlier dumps (interval, covered classes).
  // REQUIRES: mu held.
  void Load(const AgentId& id, AgentEsc& a) {
    if (a.loaded) return;
    a.loaded = true;
    auto records = store->ListRecords(kDumpTable, absl::StrCat(id.value, "/"));
    if (!records.ok()) {
      spdlog::error("escalation: cannot read the dump records of agent {}: {}", id.value,
                    records.status().ToString());
      return;
    }
    for (const auto& [key, value] : *records) {
      v1::ExtendedDump d;
      if (!d.ParseFromString(value)) continue;
      if (d.has_dump_time()) a.last_dump = std::max(a.last_dump, TimeOf(d.dump_time()));
      const bool covers = d.state() == v1::EXTENDED_DUMP_STATE_DONE ||
                          (d.state() == v1::EXTENDED_DUMP_STATE_FAILED &&
                           absl::StartsWith(d.error(), kRefusedPrefix));
      if (!covers) continue;
      // A DONE dump covers the episodes of its classes that began before its analysis finished
      // (classes join until the analysis starts); a refusal those that began before it.
      const absl::Time requested = d.state() == v1::EXTENDED_DUMP_STATE_DONE && d.has_finished_time()
                                       ? TimeOf(d.finished_time())
                                       : TimeOf(d.requested_time());
      for (const std::string& c : d.suspect_classes()) {
        absl::Time& t = a.covered[c];
        t = std::max(t, requested);
      }
      // Republish the retained sizes of the stored reports (records are oldest first, so the
      // newest report of a class wins).
      for (const std::string& c : d.report_classes()) {
        auto report = store->GetRecord(kReportTable, ReportKey(id, c, d.dump_id()));
        v1::DrillDownReport r;
        if (report.ok() && r.ParseFromString(*report)) {
          metrics->SetSuspectRetained(id, c, r.retained_bytes());
        }
      }
    }
  }

  absl::Time NextDumpAllowed(const AgentEsc& a) const {
    return a.last_dump == absl::InfinitePast() ? absl::InfinitePast()
                                               : a.last_dump + config.min_dump_interval;
  }

  // Why a new dump of `a` is refused now, or "" when it is not. REQUIRES: mu held.
  std::string RefusalReason(const AgentEsc& a) const {
    const uint64_t estimate = Estimate(a.target.heap_bytes);
    if (estimate > config.max_analysis_memory_bytes) {
      return absl::StrCat(kRefusedPrefix, "the analysis would need about ", Bytes(estimate),
                          ", more than escalation.max_analysis_memory_bytes (",
                          Bytes(config.max_analysis_memory_bytes), ")");
    }
    if (estimate > config.max_dump_disk_bytes) {
      return absl::StrCat(kRefusedPrefix, "the dump would take about ", Bytes(estimate),
                          ", more than escalation.max_dump_disk_bytes (",
                          Bytes(config.max_dump_disk_bytes), ")");
    }
    if (dump_queue.size() + analysis_queue.size() >= static_cast<size_t>(config.max_queued)) {
      return absl::StrCat(kRefusedPrefix, dump_queue.size() + analysis_queue.size(),
                          " dumps are already waiting (escalation.max_queued)");
    }
    return "";
  }

  // Creates a QUEUED job for the agent that may start after `wait` (and the agent's interval).
  // REQUIRES: mu held.
  std::shared_ptr<Job> NewJob(const AgentId& id, AgentEsc& a, v1::ExtendedDumpTrigger trigger,
                              absl::Duration wait) {
    auto job = std::make_shared<Job>();
    absl::Time now = clock->Now();
    if (now <= last_id_time) now = last_id_time + absl::Microseconds(1);
    last_id_time = now;
    job->record.set_agent(id.value);
    job->record.set_dump_id(DumpIdFor(now));
    job->record.set_state(v1::EXTENDED_DUMP_STATE_QUEUED);
    job->record.set_trigger(trigger);
    proto::SetTimestamp(now, &job->record, &v1::ExtendedDump::mutable_requested_time);
    job->target = a.target;
    job->estimate = Estimate(a.target.heap_bytes);
    job->not_before = std::max(now + wait, NextDumpAllowed(a));
    return job;
  }

  void AddSuspect(Job& job, AgentEsc& a, const diff::Suspect& s) {  // REQUIRES: mu held
    if (job.suspects.emplace(s.class_name, s).second) {
      job.record.add_suspect_classes(s.class_name);
    }
    a.covered[s.class_name] = std::max(TimeOf(job.record.requested_time()), s.first_seen);
  }

  void Enqueue(const std::shared_ptr<Job>& job, AgentEsc& a) {  // REQUIRES: mu held
    a.open = job;
    dump_queue.push_back(job);
    Persist(*job);
    PublishQueueGauges();
    cv.notify_all();
  }

  // ---- dump thread ----

  void DumpLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      if (stopping) break;
      RetryUnsaved();
      std::shared_ptr<Job> job = NextDumpJob();
      if (job == nullptr) {
        cv.wait_for(lock, std::chrono::milliseconds(500));
        continue;
      }
      TakeDump(job, lock);
    }
    --live_threads;
    cv.notify_all();
  }

  // The first queued job that may start now, removed from the queue. REQUIRES: mu held.
  std::shared_ptr<Job> NextDumpJob() {
    const absl::Time now = clock->Now();
    for (auto it = dump_queue.begin(); it != dump_queue.end(); ++it) {
      std::shared_ptr<Job> job = *it;
      if (job->not_before > now) continue;
      // Disk budget: raw dumps on disk (being analysed or waiting) plus this one.
      if (in_flight_disk > 0 && in_flight_disk + job->estimate > config.max_dump_disk_bytes) {
        continue;  // waits for raw dumps to be analysed and deleted
      }
      // Kept raw dumps count too: the oldest make room for this one.
      EvictKeptRawDumps(job->estimate);
      dump_queue.erase(it);
      PublishQueueGauges();
      return job;
    }
    return nullptr;
  }

  // Takes the dump of `job` (unlocking `lock` meanwhile) and hands it to the analysis queue.
  void TakeDump(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock) {
    Job& j = *job;
    const AgentId id(j.record.agent());
    AgentEsc& a = agents[id];
    const EscalationTarget target = a.target;
    const std::string dir = absl::StrCat(dump_dir, "/", target.jvm.uid);
    struct statvfs vfs {};
    if (statvfs(dump_dir.c_str(), &vfs) == 0) {
      const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      if (free_bytes < j.estimate) {
        Fail(j,
             absl::StrCat(kRefusedPrefix, "the dump would take about ", Bytes(j.estimate), " but ",
                          dump_dir, " has ", Bytes(free_bytes), " free"),
             ExtendedDumpResult::kRefused);
        metrics->RecordFault(FaultReason::kDumpDiskFull);
        return;
      }
    }
    const absl::Time start = clock->Now();
    a.last_dump = start;
    j.record.set_state(v1::EXTENDED_DUMP_STATE_DUMPING);
    proto::SetTimestamp(start, &j.record, &v1::ExtendedDump::mutable_dump_time);
    const std::string path =
        absl::StrCat(dir, "/", j.record.dump_id(), config.gzip ? ".hprof.gz" : ".hprof");
    in_flight_disk += j.estimate;
    raw_files.insert(path);
    Persist(j);
    spdlog::info("escalation: taking extended dump {} of agent {} (pid {}) for {}",
                 j.record.dump_id(), id.value, target.info.pid,
                 j.record.suspect_classes().empty()
                     ? std::string("a manual request")
                     : absl::StrCat(j.record.suspect_classes_size(), " suspect classes"));
    lock.unlock();
    collectors::HeapDumpOptions options;
    options.gzip = config.gzip;
    options.attach = attach;
    options.attach.io_timeout = config.dump_timeout;
    options.attach.max_reply_bytes = size_t{1} << 20;
    StatusOr<collectors::HeapDumpResult> dumped = [&]() -> StatusOr<collectors::HeapDumpResult> {
      HW_RETURN_IF_ERROR(
          collectors::PreparePrivateDumpDirectory(dir, target.jvm.uid, target.jvm.gid));
      return collectors::TakeHeapDump(target.jvm, path, options);
    }();
    // Outside mu (the listener takes the daemon's locks); set before any dump, never changed.
    if (dumped.ok() && dump_pause_listener) {
      dump_pause_listener(target.info.id, absl::Seconds(dumped->pause_seconds));
    }
    lock.lock();
    if (!dumped.ok() || stopping) {
      in_flight_disk -= j.estimate;
      DeleteRaw(path, /*force=*/true);  // TakeHeapDump deletes partial files; this covers the rest
      Fail(j,
           dumped.ok() ? std::string("the daemon stopped before the dump was analysed")
                       : absl::StrCat("dump failed: ", dumped.status().ToString()),
           ExtendedDumpResult::kError);
      if (!dumped.ok()) metrics->RecordFault(DumpFault(dumped.status()));
      return;
    }
    j.record.set_file_bytes(dumped->file_bytes);
    j.record.set_gzip(dumped->gzip);
    proto::ToDuration(absl::Seconds(dumped->pause_seconds), j.record.mutable_dump_pause());
    proto::ToDuration(absl::Seconds(dumped->wall_seconds), j.record.mutable_dump_duration());
    metrics->ObserveExtendedDumpPause(absl::Seconds(dumped->pause_seconds));

    if (config.keep_raw_dumps) {
      j.record.set_raw_dump_kept(true);
      j.record.set_raw_dump_path(dumped->path);
    }
    j.raw_path = dumped->path;
    j.jvm_uid = target.jvm.uid;
    j.record.set_state(v1::EXTENDED_DUMP_STATE_ANALYZING);
    Persist(j);
    analysis_queue.push_back(job);
    PublishQueueGauges();
    cv.notify_all();
  }

  // ---- analysis threads ----

  void AnalysisLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      if (stopping) break;
      std::shared_ptr<Job> job;
      if (!analysis_queue.empty()) {
        const uint64_t need = analysis_queue.front()->estimate;
        if (analyses_in_flight == 0 || memory_in_flight + need <= config.max_analysis_memory_bytes) {
          job = analysis_queue.front();
          analysis_queue.pop_front();
        }
      }
      if (job == nullptr) {
        cv.wait_for(lock, std::chrono::milliseconds(500));
        continue;
      }
      ++analyses_in_flight;
      memory_in_flight += job->estimate;
      job->joinable = false;
      auto a = agents.find(AgentId(job->record.agent()));
      if (a != agents.end() && a->second.open == job) a->second.open = nullptr;
      PublishQueueGauges();
      Analyse(job, lock);
      --analyses_in_flight;
      memory_in_flight -= job->estimate;
      in_flight_disk -= job->estimate;
      EvictKeptRawDumps(0);  // a raw dump kept by this analysis may exceed the budget
      PublishQueueGauges();
      cv.notify_all();
    }
    --live_threads;
    cv.notify_all();
  }

  // Opens the raw dump the JVM wrote without following a symlink, and checks that it is a regular
  // file of the JVM's user: the per-user directory belongs to that user, who could otherwise swap
  // the dump for a link to a file only the daemon may read, or for a FIFO that blocks the reader.
  // Returns the open descriptor; the analysis reads "/proc/self/fd/<fd>", i.e. this very file.
  static StatusOr<int> OpenRawDump(const std::string& path, uint32_t jvm_uid) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot open the dump ", path, ": ", std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (st.st_uid != jvm_uid && st.st_uid != ::geteuid())) {
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          "the dump ", path, " is not a regular file of the JVM's user; it was replaced"));
    }
    return fd;
  }

  void Analyse(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock) {
    Job& j = *job;
    const AgentId id(j.record.agent());
    const std::string path = j.raw_path;
    std::vector<std::string> classes(j.record.suspect_classes().begin(),
                                     j.record.suspect_classes().end());
    std::map<std::string, diff::Suspect> suspects = j.suspects;
    v1::ExtendedDump record = j.record;
    lock.unlock();
    if (analysis_start_listener) analysis_start_listener(id, record.dump_id());

    pipeline::AnalyzeDumpOptions options;
    options.suspect_classes = classes;
    options.exclude_patterns = config.exclude_patterns;
    options.top_objects = static_cast<size_t>(config.top_objects);
    options.histogram_rows = 1;  // the stored summary has the histogram by class name
    options.dump_summary = true;
    options.thread_names = config.thread_names;  // escalation.thread_names
    const absl::Time start = absl::Now();
    StatusOr<pipeline::DumpAnalysis> analysis = absl::InternalError("not analysed");
    StatusOr<int> fd = OpenRawDump(path, j.jvm_uid);
    if (!fd.ok()) {
      analysis = fd.status();
    } else {
      try {
        analysis = pipeline::AnalyzeDump(absl::StrCat("/proc/self/fd/", *fd), options);
        if (analysis.ok()) DropUnreachableSuspects(&*analysis);
      } catch (const std::bad_alloc&) {
        analysis = absl::ResourceExhaustedError(
            "out of memory while analysing the dump (escalation.max_analysis_memory_bytes is "
            "larger than the memory available)");
      }
      ::close(*fd);
    }
    const absl::Duration took = absl::Now() - start;
    Status stored =
        analysis.ok() ? StoreAnalysis(id, *analysis, suspects, &record) : analysis.status();
    const bool analysis_ok = analysis.ok();
    AnalysedDump points;
    points.agent = id;
    points.dump_id = record.dump_id();
    if (stored.ok()) {
      for (const analysis::SuspectReport& s : analysis->suspects) {
        if (s.accumulation_points.empty()) continue;
        const analysis::ObjectSummary& o = s.accumulation_points.front().object;
        auto& p = points.points.emplace_back(
            diff::LeakDetector::AccumulationPoint{s.class_name, ObjectIdText(o.object_id),
                                                  o.class_name});
        for (uint64_t d : s.accumulation_points.front().dominator_ids) {
          p.dominator_ids.push_back(ObjectIdText(d));
        }
      }
      SortPoints(&points.points);
    }
    analysis = absl::CancelledError("released");  // frees the analysis before the next one
    metrics->ObserveExtendedDumpAnalysis(took);

    lock.lock();
    DeleteRaw(path);  // as soon as the reports are stored (or the analysis failed)
    if (config.keep_raw_dumps) {
      AddKeptRaw(id, j.record.dump_id(), path);  // over budget: evicted by AnalysisLoop
    }
    if (!stored.ok()) {
      proto::ToDuration(took, j.record.mutable_analysis_duration());
      Fail(j, absl::StrCat("analysis failed: ", stored.ToString()), ExtendedDumpResult::kError);
      // The analysis ran but its reports could not be stored (disk full, store error).
      if (analysis_ok) metrics->RecordFault(FaultReason::kReportWriteFailed);
      return;
    }
    j.record = record;
    j.record.set_state(v1::EXTENDED_DUMP_STATE_DONE);
    proto::SetTimestamp(clock->Now(), &j.record, &v1::ExtendedDump::mutable_finished_time);
    Persist(j);
    metrics->RecordExtendedDump(id, ExtendedDumpResult::kOk);
    spdlog::info("escalation: extended dump {} of agent {} analysed in {:.1f} s: reports for {}",
                 j.record.dump_id(), id.value, absl::ToDoubleSeconds(took),
                 j.record.report_classes_size());
    if (report_listener) {
      lock.unlock();  // the listener takes the daemon's locks
      report_listener(points);
      lock.lock();
    }
  }

  // Builds and stores the summary and the reports of one analysed dump; fills the analysis fields
  // of `record`. Runs without mu.
  Status StoreAnalysis(const AgentId& id, const pipeline::DumpAnalysis& analysis,
                       const std::map<std::string, diff::Suspect>& suspects,
                       v1::ExtendedDump* record) {
    record->set_format(analysis.report.dump_format);
    *record->mutable_totals() = proto::ToProto(analysis.report.totals);
    proto::ToDuration(absl::Seconds(analysis.report.timings.total_seconds),
                      record->mutable_analysis_duration());
    record->set_analysis_peak_memory_bytes(analysis.peak_memory_bytes);
    const absl::Time dump_time = TimeOf(record->dump_time());

    records::v1::ExtendedDumpSummary summary;
    const analysis::DumpSummary& dump_summary = *analysis.summary;
    proto::FillDumpSummaryRecord(dump_summary, &summary);
    summary.set_agent(id.value);
    summary.set_dump_id(record->dump_id());
    *summary.mutable_dump_time() = record->dump_time();

    // The previous DONE dump's summary, for the embedded diff.
    // The summary of the agent's newest DONE dump before this one (dump records are small; only
    // that one summary is read).
    std::optional<records::v1::ExtendedDumpSummary> previous;
    auto earlier = store->ListRecords(kDumpTable, absl::StrCat(id.value, "/"));
    if (earlier.ok()) {
      for (auto it = earlier->rbegin(); it != earlier->rend(); ++it) {
        v1::ExtendedDump d;
        if (d.ParseFromString(it->second) && d.dump_id() < record->dump_id() &&
            d.state() == v1::EXTENDED_DUMP_STATE_DONE) {
          auto bytes = store->GetRecord(kSummaryTable, DumpKey(id, d.dump_id()));
          records::v1::ExtendedDumpSummary s;
          if (bytes.ok() && s.ParseFromString(*bytes)) previous = std::move(s);
          break;
        }
      }
    }
    std::optional<v1::ExtendedDumpDiff> diff;
    if (previous) {
      v1::ExtendedDumpDiff d = proto::ToProto(
          analysis::DiffDumpSummaries(proto::DumpSummaryFromRecord(*previous), dump_summary),
          kReportDiffRows, kReportDiffRows);
      d.set_agent(id.value);
      d.set_from_dump(previous->dump_id());
      d.set_to_dump(record->dump_id());
      *d.mutable_from_time() = previous->dump_time();
      *d.mutable_to_time() = record->dump_time();
      diff = std::move(d);
    }

    // On a store error part-way, what was written is deleted again (best effort), so a failed dump
    // leaves no summary that later diffs would use.
    std::vector<std::pair<std::string_view, std::string>> written;
    auto undo = [&] {
      for (const auto& [table, key] : written) (void)store->DeleteRecord(table, key);
    };
    HW_RETURN_IF_ERROR(store->PutRecord(kSummaryTable, DumpKey(id, record->dump_id()),
                                        summary.SerializeAsString()));
    written.emplace_back(kSummaryTable, DumpKey(id, record->dump_id()));
    std::vector<std::pair<std::string, uint64_t>> retained;
    for (const analysis::SuspectReport& s : analysis.suspects) {
      v1::DrillDownReport report;
      report.set_agent(id.value);
      proto::FillDrillDownReport(s, analysis.report.top_objects, &report);
      // The web report's treemap (docs/web.md): the dominator tree's first level by class and the
      // top-level class above the accumulation point.
      for (const analysis::ClassRow& row : analysis.report.top_dominators_by_class) {
        *report.add_top_dominators_by_class() = proto::ToProto(row);
      }
      if (const size_t index = static_cast<size_t>(&s - analysis.suspects.data());
          index < analysis.accumulation_point_top_classes.size()) {
        report.set_accumulation_point_top_class(analysis.accumulation_point_top_classes[index]);
      }
      if (const size_t index = static_cast<size_t>(&s - analysis.suspects.data());
          index < analysis.suspect_treemaps.size()) {
        *report.mutable_dominator_treemap() = proto::ToProto(analysis.suspect_treemaps[index]);
      }
      auto history = store->ClassHistory(id, s.class_name, absl::InfinitePast(), dump_time);
      if (history.ok()) {
        size_t first = history->size() > kMaxHistoryPoints ? history->size() - kMaxHistoryPoints : 0;
        for (size_t i = first; i < history->size(); ++i) {
          v1::ClassSample* sample = report.add_growth_history();
          proto::SetTimestamp((*history)[i].time, sample, &v1::ClassSample::mutable_time);
          sample->set_bytes((*history)[i].bytes);
          sample->set_instances((*history)[i].instances);
        }
      }
      if (auto it = suspects.find(s.class_name); it != suspects.end()) {
        proto::SuspectToProto(id, it->second, dump_time, report.mutable_suspect());
      }
      if (diff) *report.mutable_diff_from_previous() = *diff;
      if (analysis.class_loaders.duplicated_class_names > 0) {
        *report.mutable_class_loaders() = proto::ToProto(analysis.class_loaders);
      }
      record->add_report_classes(s.class_name);
      *report.mutable_dump() = *record;
      report.mutable_dump()->set_state(v1::EXTENDED_DUMP_STATE_DONE);
      Status put = store->PutRecord(kReportTable, ReportKey(id, s.class_name, record->dump_id()),
                                    report.SerializeAsString());
      if (!put.ok()) {
        if (put.code() == absl::StatusCode::kInvalidArgument) {  // key too long: skip the class
          spdlog::warn("escalation: no report for class {} of agent {}: {}", s.class_name, id.value,
                       put.ToString());
          record->mutable_report_classes()->RemoveLast();
          continue;
        }
        undo();
        return put;
      }
      written.emplace_back(kReportTable, ReportKey(id, s.class_name, record->dump_id()));
      retained.emplace_back(s.class_name, s.retained_bytes);
    }
    // A class loader leak (daemon/class_loading_watch.h) has no class of its own in the dump: its
    // report is the dump's class loaders, under the series' name.
    if (auto it = suspects.find(std::string(kClassLoadingSeries)); it != suspects.end()) {
      v1::DrillDownReport report;
      report.set_agent(id.value);
      report.set_class_name(std::string(kClassLoadingSeries));
      *report.mutable_class_loaders() = proto::ToProto(analysis.class_loaders);
      // The loaders the dump shows pinned, with their pinning paths (docs/leak-patterns.md).
      for (const analysis::LeakPatternMatch& m : analysis.report.leak_patterns) {
        if (m.pattern_id == kClassLoaderPinnedPattern) {
          *report.add_leak_patterns() = proto::ToProto(m);
        }
      }
      proto::SuspectToProto(id, it->second, dump_time, report.mutable_suspect());
      if (diff) *report.mutable_diff_from_previous() = *diff;
      record->add_report_classes(std::string(kClassLoadingSeries));
      *report.mutable_dump() = *record;
      report.mutable_dump()->set_state(v1::EXTENDED_DUMP_STATE_DONE);
      const std::string key = ReportKey(id, std::string(kClassLoadingSeries), record->dump_id());
      Status put = store->PutRecord(kReportTable, key, report.SerializeAsString());
      if (!put.ok()) {
        undo();
        return put;
      }
      written.emplace_back(kReportTable, key);
    }
    for (const auto& [name, bytes] : retained) metrics->SetSuspectRetained(id, name, bytes);
    for (const std::string& missing : analysis.missing_classes) {
      spdlog::info("escalation: class {} has no reachable instance in dump {} of agent {}",
                   missing, record->dump_id(), id.value);
    }
    return absl::OkStatus();
  }

  // ---- start-up ----

  Status Recover() {
    HW_ASSIGN_OR_RETURN(auto records, store->ListRecords(kDumpTable, ""));
    std::set<std::string> kept_files;
    for (const auto& [key, value] : records) {
      v1::ExtendedDump d;
      if (!d.ParseFromString(value)) {
        spdlog::error("escalation: dump record {} is corrupt; ignored", key);
        continue;
      }
      if (!Active(d.state())) {
        if (d.raw_dump_kept()) {
          kept_files.insert(d.raw_dump_path());
          AddKeptRaw(AgentId(d.agent()), d.dump_id(), d.raw_dump_path());
        }
        continue;
      }
      d.set_state(v1::EXTENDED_DUMP_STATE_FAILED);
      d.set_error("daemon restarted before the dump was analysed");
      proto::SetTimestamp(clock->Now(), &d, &v1::ExtendedDump::mutable_finished_time);
      d.set_raw_dump_kept(false);
      d.clear_raw_dump_path();
      HW_RETURN_IF_ERROR(store->PutRecord(kDumpTable, key, d.SerializeAsString()));
      spdlog::warn("escalation: extended dump {} of agent {} was interrupted by a restart",
                   d.dump_id(), d.agent());
    }
    std::error_code ec;
    if (config.enabled) {
      fs::create_directories(dump_dir, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot create the dump directory ", dump_dir, ": ", ec.message()));
      }
      fs::permissions(dump_dir,
                      fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
    }
    // Only files heapwatchd names: <dump_dir>/<uid>/<dump id>.hprof[.gz]; a dump_dir shared with
    // other tools keeps their files.
    static const std::regex kOurs(R"([0-9]{8}T[0-9]{6}\.[0-9]{6}Z\.hprof(\.gz)?)");
    static const std::regex kUid(R"([0-9]+)");
    for (auto user = fs::directory_iterator(dump_dir, ec);
         !ec && user != fs::directory_iterator(); user.increment(ec)) {
      std::error_code uec;
      if (!user->is_directory(uec) || user->is_symlink(uec) ||
          !std::regex_match(user->path().filename().string(), kUid)) {
        continue;
      }
      for (auto f = fs::directory_iterator(user->path(), uec);
           !uec && f != fs::directory_iterator(); f.increment(uec)) {
        const std::string p = f->path().string();
        if (kept_files.count(p) || !std::regex_match(f->path().filename().string(), kOurs)) {
          continue;
        }
        std::error_code rm;
        fs::remove(p, rm);
        spdlog::info("escalation: deleted a raw dump left by an earlier run: {}", p);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    EvictKeptRawDumps(0);
    return absl::OkStatus();
  }
};

Escalation::Escalation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<Escalation>> Escalation::Start(const EscalationConfig& config,
                                                        const std::string& data_dir,
                                                        const collectors::AttachOptions& attach,
                                                        storage::SnapshotStore* store,
                                                        Metrics* metrics, const Clock* clock) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->dump_dir = config.dump_dir.empty() ? absl::StrCat(data_dir, "/dumps") : config.dump_dir;
  std::error_code ec;
  fs::path absolute = fs::absolute(impl->dump_dir, ec);
  if (!ec) impl->dump_dir = absolute.lexically_normal().string();
  if (config.dump_dir.empty() && config.enabled) {
    // The default dump directory is inside the store's directory (0700): let JVMs of other users
    // traverse it (0711) to reach their own 0700 subdirectory. The store's files stay 0600.
    fs::permissions(data_dir,
                    fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  }
  impl->attach = attach;
  impl->store = store;
  impl->metrics = metrics;
  impl->clock = clock;
  HW_RETURN_IF_ERROR(impl->Recover());
  Impl* raw = impl.get();
  raw->live_threads = 1 + config.max_concurrent_analyses;
  raw->threads.emplace_back([raw] { raw->DumpLoop(); });
  for (int i = 0; i < config.max_concurrent_analyses; ++i) {
    raw->threads.emplace_back([raw] { raw->AnalysisLoop(); });
  }
  raw->PublishQueueGauges();
  return std::unique_ptr<Escalation>(new Escalation(std::move(impl)));
}

bool Escalation::Stop(absl::Duration grace) {
  Impl& d = *impl_;
  if (d.threads.empty()) return true;
  std::unique_lock<std::mutex> lock(d.mu);
  d.stopping = true;
  // Work not started ends now: queued dumps fail, written dumps waiting for analysis are deleted.
  for (const auto& job : d.dump_queue) {
    d.Fail(*job, "the daemon stopped before the dump was taken", ExtendedDumpResult::kError);
  }
  d.dump_queue.clear();
  for (const auto& job : d.analysis_queue) {
    d.in_flight_disk -= job->estimate;
    d.DeleteRaw(job->raw_path, /*force=*/true);
    d.Fail(*job, "the daemon stopped before the dump was analysed", ExtendedDumpResult::kError);
  }
  d.analysis_queue.clear();
  d.PublishQueueGauges();
  d.cv.notify_all();
  const bool finished = d.cv.wait_for(lock, absl::ToChronoMilliseconds(grace),
                                      [&d] { return d.live_threads == 0; });
  if (!finished) {
    // The process is about to exit: no raw dump may outlive it.
    for (const std::string& path : std::set<std::string>(d.raw_files)) d.DeleteRaw(path, true);
  }
  lock.unlock();
  if (!finished) {
    spdlog::warn("escalation: abandoning a dump or analysis still running");
    for (std::thread& t : d.threads) t.detach();
    d.threads.clear();
    return false;
  }
  for (std::thread& t : d.threads) t.join();
  d.threads.clear();
  return true;
}

Escalation::~Escalation() {
  if (impl_ != nullptr) HW_CHECK(Stop(absl::Hours(24)));
}

void Escalation::OnCollection(const EscalationTarget& target,
                              const std::vector<diff::Suspect>& suspects) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.stopping) return;
  Impl::AgentEsc& a = d.agents[target.info.id];
  a.target = target;
  a.live = true;
  a.suspects = suspects;
  if (!d.config.enabled || !d.config.automatic) return;
  d.Load(target.info.id, a);
  // Per class: covered for its current episode. Per leak: covered when some class of it is covered
  // for an episode at or after the leak's first_seen.
  auto covered_since = [&a](const std::string& name, absl::Time t) {
    auto it = a.covered.find(name);
    return it != a.covered.end() && it->second >= t;
  };
  std::map<std::string, absl::Time> leak_first_seen;  // leak key -> earliest first_seen
  auto leak_key = [](const diff::Suspect& s) {
    return s.leak.empty() ? absl::StrCat("class ", s.class_name) : s.leak;
  };
  for (const diff::Suspect& s : suspects) {
    auto [it, added] = leak_first_seen.emplace(leak_key(s), s.first_seen);
    if (!added) it->second = std::min(it->second, s.first_seen);
  }
  std::set<std::string> covered_leaks;
  for (const diff::Suspect& s : suspects) {
    const std::string key = leak_key(s);
    if (covered_since(s.class_name, leak_first_seen.at(key))) covered_leaks.insert(key);
  }
  std::vector<const diff::Suspect*> uncovered;
  std::set<std::string> new_leaks;
  for (const diff::Suspect& s : suspects) {
    if (covered_since(s.class_name, s.first_seen)) continue;
    uncovered.push_back(&s);
    if (!covered_leaks.count(leak_key(s))) new_leaks.insert(leak_key(s));
  }
  if (uncovered.empty()) return;
  if (a.open != nullptr && a.open->joinable) {
    for (const diff::Suspect* s : uncovered) d.AddSuspect(*a.open, a, *s);
    d.Persist(*a.open);
    spdlog::info("escalation: {} more suspect classes of agent {} join dump {}", uncovered.size(),
                 target.info.id.value, a.open->record.dump_id());
    return;
  }
  // Classes that joined leaks already escalated: no new dump for them.
  if (new_leaks.empty()) return;
  std::shared_ptr<Impl::Job> job = d.NewJob(target.info.id, a, v1::EXTENDED_DUMP_TRIGGER_SUSPECT,
                                            d.config.join_window);
  for (const diff::Suspect* s : uncovered) d.AddSuspect(*job, a, *s);
  spdlog::info("escalation: dump {} of agent {} for {} new leak{} ({} classes)",
               job->record.dump_id(), target.info.id.value, new_leaks.size(),
               new_leaks.size() == 1 ? "" : "s", uncovered.size());
  if (std::string why = d.RefusalReason(a); !why.empty()) {
    d.Fail(*job, why, ExtendedDumpResult::kRefused);
    return;
  }
  if (job->not_before > d.clock->Now() + d.config.join_window) {
    spdlog::info("escalation: dump {} of agent {} waits until {} (escalation.min_dump_interval)",
                 job->record.dump_id(), target.info.id.value,
                 absl::FormatTime(job->not_before, absl::UTCTimeZone()));
  }
  d.Enqueue(job, a);
}

StatusOr<RecordRetentionResult> Escalation::EnforceRecordRetention(
    const RecordRetentionPolicy& policy) {
  Impl& d = *impl_;
  // Under mu: every dump record is written under it (Persist), so a dump seen as finished here
  // stays finished while its records are deleted.
  std::lock_guard<std::mutex> lock(d.mu);
  std::map<AgentId, std::set<std::string>> live_suspects;
  for (const auto& [id, a] : d.agents) {
    if (!a.live) continue;
    for (const diff::Suspect& s : a.suspects) live_suspects[id].insert(s.class_name);
  }
  HW_ASSIGN_OR_RETURN(RecordRetentionResult result,
                      ApplyRecordRetention(d.store, live_suspects, policy));
  for (const std::string& key : result.deleted_dump_keys) d.unsaved.erase(key);
  for (const std::string& path : result.kept_raw_dumps) {
    for (auto it = d.kept_raw.begin(); it != d.kept_raw.end(); ++it) {
      if (it->second.path != path) continue;
      d.kept_raw_bytes -= it->second.bytes;
      d.kept_raw.erase(it);
      break;
    }
    std::error_code ec;
    fs::remove(path, ec);
  }
  return result;
}

uint64_t Escalation::KeptRawDumpBytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->kept_raw_bytes;
}

uint64_t Escalation::MaxDumpDiskBytes() const { return impl_->config.max_dump_disk_bytes; }

void Escalation::SetDumpPauseListener(
    std::function<void(const AgentId&, absl::Duration)> listener) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->dump_pause_listener = std::move(listener);
}

void Escalation::SetReportListener(std::function<void(const AnalysedDump&)> listener) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->report_listener = std::move(listener);
}

StatusOr<std::optional<AnalysedDump>> Escalation::LatestAnalysedDump(const AgentId& agent) const {
  HW_ASSIGN_OR_RETURN(std::vector<v1::ExtendedDump> dumps, ListDumps(agent));  // newest first
  for (const v1::ExtendedDump& d : dumps) {
    if (d.state() != v1::EXTENDED_DUMP_STATE_DONE) continue;
    AnalysedDump out;
    out.agent = agent;
    out.dump_id = d.dump_id();
    for (const std::string& c : d.report_classes()) {
      HW_ASSIGN_OR_RETURN(std::string bytes,
                          impl_->store->GetRecord(kReportTable, ReportKey(agent, c, d.dump_id())));
      v1::DrillDownReport r;
      if (!r.ParseFromString(bytes) || r.accumulation_points().empty()) continue;
      const v1::HeapObject& o = r.accumulation_points(0).object();
      auto& p = out.points.emplace_back(
          diff::LeakDetector::AccumulationPoint{c, ObjectIdText(o.object_id()), o.class_name()});
      for (uint64_t d : r.accumulation_points(0).dominator_object_ids()) {
        p.dominator_ids.push_back(ObjectIdText(d));
      }
    }
    SortPoints(&out.points);
    return std::optional<AnalysedDump>(std::move(out));
  }
  return std::optional<AnalysedDump>();
}

void Escalation::SetAnalysisStartListener(
    std::function<void(const AgentId&, std::string_view)> listener) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->analysis_start_listener = std::move(listener);
}

void Escalation::RemoveAgent(const AgentId& agent) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.agents.find(agent);
  if (it == d.agents.end()) return;
  it->second.live = false;
  it->second.open = nullptr;
  // Its queued dumps can never be taken: end them now so they hold no queue slot.
  for (auto job = d.dump_queue.begin(); job != d.dump_queue.end();) {
    if ((*job)->record.agent() == agent.value) {
      d.Fail(**job, "agent exited: the JVM exited before the dump", ExtendedDumpResult::kError);
      d.metrics->RecordFault(FaultReason::kJvmExited);
      job = d.dump_queue.erase(job);
    } else {
      ++job;
    }
  }
  d.PublishQueueGauges();
  // Drop the state of agents without work in progress (it is reloaded from the store if needed).
  bool busy = false;
  for (const auto& job : d.analysis_queue) busy |= job->record.agent() == agent.value;
  if (!busy) d.agents.erase(it);
}

StatusOr<v1::ExtendedDump> Escalation::Trigger(const AgentId& agent) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (!d.config.enabled) {
    return absl::FailedPreconditionError("escalation is disabled (escalation.enabled: false)");
  }
  if (d.stopping) return absl::UnavailableError("heapwatchd is shutting down");
  auto it = d.agents.find(agent);
  if (it == d.agents.end() || !it->second.live) {
    return absl::NotFoundError(absl::StrCat("agent ", agent.value, " is not a live agent"));
  }
  Impl::AgentEsc& a = it->second;
  d.Load(agent, a);
  const absl::Time now = d.clock->Now();
  const absl::Time next = d.NextDumpAllowed(a);
  if (a.open != nullptr && a.open->joinable) {
    // The agent's dump that is being taken or waits for analysis is the answer; a queued one
    // waiting only for its join window starts now.
    if (a.open->record.state() != v1::EXTENDED_DUMP_STATE_QUEUED) return a.open->record;
    if (next <= now) {
      a.open->not_before = std::min(a.open->not_before, now);
      d.cv.notify_all();
      return a.open->record;
    }
  }
  if (next > now) {
    const absl::Time when = next;
    d.metrics->RecordExtendedDump(agent, ExtendedDumpResult::kRefused);
    return absl::ResourceExhaustedError(absl::StrCat(
        "agent ", agent.value, " had an extended dump at ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", a.last_dump, absl::UTCTimeZone()),
        "; the next one is allowed at ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", when, absl::UTCTimeZone()),
        " (escalation.min_dump_interval ", FormatDurationText(d.config.min_dump_interval), ")"));
  }
  if (std::string why = d.RefusalReason(a); !why.empty()) {
    d.metrics->RecordExtendedDump(agent, ExtendedDumpResult::kRefused);
    return absl::ResourceExhaustedError(why.substr(sizeof(kRefusedPrefix) - 1));
  }
  std::shared_ptr<Impl::Job> job =
      d.NewJob(agent, a, v1::EXTENDED_DUMP_TRIGGER_MANUAL, absl::ZeroDuration());
  for (const diff::Suspect& s : a.suspects) d.AddSuspect(*job, a, s);
  d.Enqueue(job, a);
  return job->record;
}

StatusOr<v1::DrillDownReport> Escalation::GetReport(const AgentId& agent,
                                                    std::string_view class_name) const {
  if (agent.value.empty() || class_name.empty()) {
    return absl::InvalidArgumentError("agent and class name must not be empty");
  }
  HW_ASSIGN_OR_RETURN(auto reports, impl_->store->ListRecords(
                                        kReportTable, absl::StrCat(agent.value, "/", AV(class_name),
                                                                   "/")));
  for (auto it = reports.rbegin(); it != reports.rend(); ++it) {
    v1::DrillDownReport report;
    if (!report.ParseFromString(it->second)) continue;
    if (report.class_name() != class_name) continue;
    // Only reports whose dump reached DONE (a store failure part-way leaves none visible).
    auto dump = impl_->store->GetRecord(kDumpTable, DumpKey(agent, report.dump().dump_id()));
    v1::ExtendedDump record;
    if (!dump.ok() || !record.ParseFromString(*dump) ||
        record.state() != v1::EXTENDED_DUMP_STATE_DONE) {
      continue;
    }
    *report.mutable_dump() = record;
    return report;
  }
  return absl::NotFoundError(absl::StrCat("no drill-down report of class ", AV(class_name),
                                          " for agent ", agent.value));
}

StatusOr<v1::DrillDownReport> Escalation::GetReportOfDump(const AgentId& agent,
                                                          std::string_view class_name,
                                                          std::string_view dump_id) const {
  if (agent.value.empty() || class_name.empty() || dump_id.empty()) {
    return absl::InvalidArgumentError("agent, class name and dump id must not be empty");
  }
  const auto not_found = [&] {
    return absl::NotFoundError(absl::StrCat("dump ", AV(dump_id), " of agent ", agent.value,
                                            " has no drill-down report of class ", AV(class_name)));
  };
  auto dump = impl_->store->GetRecord(kDumpTable, DumpKey(agent, dump_id));
  if (!dump.ok()) {
    if (dump.status().code() == absl::StatusCode::kNotFound) return not_found();
    return dump.status();
  }
  v1::ExtendedDump record;
  if (!record.ParseFromString(*dump) || record.state() != v1::EXTENDED_DUMP_STATE_DONE) {
    return not_found();
  }
  auto bytes = impl_->store->GetRecord(kReportTable, ReportKey(agent, class_name, dump_id));
  if (!bytes.ok()) {
    if (bytes.status().code() == absl::StatusCode::kNotFound) return not_found();
    return bytes.status();
  }
  v1::DrillDownReport report;
  if (!report.ParseFromString(*bytes) || report.class_name() != class_name) return not_found();
  *report.mutable_dump() = record;
  return report;
}

StatusOr<std::vector<v1::ExtendedDump>> Escalation::ListDumps(const AgentId& agent) const {
  HW_ASSIGN_OR_RETURN(auto records,
                      impl_->store->ListRecords(kDumpTable, absl::StrCat(agent.value, "/")));
  std::vector<v1::ExtendedDump> out;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    v1::ExtendedDump d;
    if (d.ParseFromString(it->second)) out.push_back(std::move(d));
  }
  return out;
}

StatusOr<v1::ExtendedDumpDiff> Escalation::Diff(const AgentId& agent, std::string_view from_dump,
                                                std::string_view to_dump, uint32_t max_classes,
                                                uint32_t max_owners) const {
  HW_ASSIGN_OR_RETURN(std::vector<v1::ExtendedDump> dumps, ListDumps(agent));  // newest first
  auto find = [&](std::string_view id) -> StatusOr<const v1::ExtendedDump*> {
    for (const v1::ExtendedDump& d : dumps) {
      if (d.dump_id() != id) continue;
      if (d.state() != v1::EXTENDED_DUMP_STATE_DONE) {
        return absl::FailedPreconditionError(absl::StrCat(
            "extended dump ", AV(id), " of agent ", agent.value, " is not analysed (state ",
            v1::ExtendedDumpState_Name(d.state()), ")"));
      }
      return &d;
    }
    return absl::NotFoundError(
        absl::StrCat("agent ", agent.value, " has no extended dump ", AV(id)));
  };
  std::vector<const v1::ExtendedDump*> done;
  for (const v1::ExtendedDump& d : dumps) {
    if (d.state() == v1::EXTENDED_DUMP_STATE_DONE) done.push_back(&d);
  }
  const v1::ExtendedDump* to = nullptr;
  if (to_dump.empty()) {
    if (done.empty()) {
      return absl::NotFoundError(
          absl::StrCat("agent ", agent.value, " has no analysed extended dump"));
    }
    to = done.front();
  } else {
    HW_ASSIGN_OR_RETURN(to, find(to_dump));
  }
  const v1::ExtendedDump* from = nullptr;
  if (from_dump.empty()) {
    for (const v1::ExtendedDump* d : done) {
      if (d->dump_id() < to->dump_id()) {
        from = d;
        break;
      }
    }
    if (from == nullptr) {
      return absl::NotFoundError(absl::StrCat("agent ", agent.value,
                                              " has no analysed extended dump before ",
                                              to->dump_id()));
    }
  } else {
    HW_ASSIGN_OR_RETURN(from, find(from_dump));
  }
  auto load = [&](const v1::ExtendedDump& d) -> StatusOr<analysis::DumpSummary> {
    HW_ASSIGN_OR_RETURN(std::string bytes,
                        impl_->store->GetRecord(kSummaryTable, DumpKey(agent, d.dump_id())));
    records::v1::ExtendedDumpSummary s;
    if (!s.ParseFromString(bytes)) {
      return absl::DataLossError(
          absl::StrCat("the stored summary of extended dump ", d.dump_id(), " is corrupt"));
    }
    return proto::DumpSummaryFromRecord(s);
  };
  HW_ASSIGN_OR_RETURN(analysis::DumpSummary before, load(*from));
  HW_ASSIGN_OR_RETURN(analysis::DumpSummary after, load(*to));
  v1::ExtendedDumpDiff out =
      proto::ToProto(analysis::DiffDumpSummaries(before, after), max_classes, max_owners);
  out.set_agent(agent.value);
  out.set_from_dump(from->dump_id());
  out.set_to_dump(to->dump_id());
  *out.mutable_from_time() = from->dump_time();
  *out.mutable_to_time() = to->dump_time();
  return out;
}

}  // namespace heapwatch::daemon
