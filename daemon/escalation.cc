#include "daemon/escalation.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collectors/heap_dump.h"
#include "daemon/dump_analysis.h"
#include "daemon/query_server.h"
#include "daemon/report_proto.h"
#include "heapwatch/records/v1/records.pb.h"
#include "proto/time_util.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDumpTable = "xdump";
constexpr std::string_view kReportTable = "xreport";
constexpr std::string_view kSummaryTable = "xsummary";
constexpr char kRefusedPrefix[] = "refused: ";
// Estimated analysis memory and uncompressed dump size, as a multiple of the histogram's bytes
// (measured: peak RSS of a whole analysis is about 1.0x the uncompressed dump, which is about 1.1x
// the live heap; see README "Benchmarks").
constexpr double kEstimateFactor = 1.2;
// Growth-history points kept in a report (the newest).
constexpr size_t kMaxHistoryPoints = 240;
// Rows of the diff embedded in a report.
constexpr uint32_t kReportDiffRows = 20;

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
    bool on_disk = false;   // guarded by mu: a raw dump file exists
  };
  struct AgentEsc {
    EscalationTarget target;
    bool live = false;
    bool loaded = false;
    std::vector<diff::Suspect> suspects;      // as of the last collection
    std::shared_ptr<Job> open;                // joinable job, if any
    absl::Time last_dump = absl::InfinitePast();  // dump_time of the newest dump taken
    std::map<std::string, absl::Time> covered;  // class -> request time of the newest covering job
  };

  EscalationConfig config;
  std::string dump_dir;
  collectors::AttachOptions attach;
  storage::SnapshotStore* store;
  Metrics* metrics;
  const Clock* clock;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                             // guarded by mu
  std::map<AgentId, AgentEsc> agents;                // guarded by mu
  std::deque<std::shared_ptr<Job>> dump_queue;       // guarded by mu: QUEUED
  std::deque<std::shared_ptr<Job>> analysis_queue;   // guarded by mu: ANALYZING, not started
  int analyses_in_flight = 0;                        // guarded by mu
  uint64_t memory_in_flight = 0;                     // guarded by mu
  int live_threads = 0;                              // guarded by mu
  absl::Time last_id_time = absl::InfinitePast();    // guarded by mu: keeps dump ids unique
  std::vector<std::thread> threads;

  // ---- records ----

  // Writes the record of `job`. REQUIRES: mu held (the record is guarded by it). A store error is
  // logged: the in-memory state goes on, and the next state change writes again.
  void Persist(const Job& job) {
    Status s = store->PutRecord(kDumpTable, DumpKey(AgentId(job.record.agent()), job.record.dump_id()),
                                job.record.SerializeAsString());
    if (!s.ok()) {
      spdlog::error("escalation: cannot store the record of dump {} of agent {}: {}",
                    job.record.dump_id(), job.record.agent(), s.ToString());
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
    if (it != agents.end() && it->second.open.get() == &job) it->second.open = nullptr;
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
      const absl::Time requested = TimeOf(d.requested_time());
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
    a.covered[s.class_name] = TimeOf(job.record.requested_time());
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

  // The first queued job that may start now, removed from the queue; failed jobs are ended here.
  // REQUIRES: mu held.
  std::shared_ptr<Job> NextDumpJob() {
    const absl::Time now = clock->Now();
    for (auto it = dump_queue.begin(); it != dump_queue.end(); ++it) {
      std::shared_ptr<Job> job = *it;
      if (job->not_before > now) continue;
      auto agent = agents.find(AgentId(job->record.agent()));
      if (agent == agents.end() || !agent->second.live) {
        dump_queue.erase(it);
        Fail(*job, "the agent's JVM exited before the dump", ExtendedDumpResult::kError);
        PublishQueueGauges();
        return NextDumpJob();
      }
      // Disk budget: raw dumps on disk (waiting for or in analysis) plus this one.
      if (in_flight_disk > 0 && in_flight_disk + job->estimate > config.max_dump_disk_bytes) {
        continue;  // waits for raw dumps to be analysed and deleted
      }
      dump_queue.erase(it);
      PublishQueueGauges();
      return job;
    }
    return nullptr;
  }
  uint64_t in_flight_disk = 0;  // guarded by mu: estimates of dumps being analysed

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
        return;
      }
    }
    const absl::Time start = clock->Now();
    a.last_dump = start;
    j.record.set_state(v1::EXTENDED_DUMP_STATE_DUMPING);
    proto::SetTimestamp(start, &j.record, &v1::ExtendedDump::mutable_dump_time);
    const std::string path =
        absl::StrCat(dir, "/", j.record.dump_id(), config.gzip ? ".hprof.gz" : ".hprof");
    j.on_disk = true;
    in_flight_disk += j.estimate;
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
    lock.lock();
    if (!dumped.ok()) {
      in_flight_disk -= j.estimate;
      j.on_disk = false;
      std::error_code ec;
      fs::remove(path, ec);  // TakeHeapDump deletes partial files; this covers the rest
      Fail(j, absl::StrCat("dump failed: ", dumped.status().ToString()), ExtendedDumpResult::kError);
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
    j.record.set_state(v1::EXTENDED_DUMP_STATE_ANALYZING);
    Persist(j);
    analysis_queue.push_back(job);
    PublishQueueGauges();
    cv.notify_all();
    raw_paths[&j] = dumped->path;
  }
  std::map<const Job*, std::string> raw_paths;  // guarded by mu

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
      PublishQueueGauges();
      cv.notify_all();
    }
    --live_threads;
    cv.notify_all();
  }

  void Analyse(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock) {
    Job& j = *job;
    const AgentId id(j.record.agent());
    const std::string path = raw_paths[&j];
    raw_paths.erase(&j);
    std::vector<std::string> classes(j.record.suspect_classes().begin(),
                                     j.record.suspect_classes().end());
    std::map<std::string, diff::Suspect> suspects = j.suspects;
    v1::ExtendedDump record = j.record;
    lock.unlock();

    DumpAnalysisOptions options;
    options.exclude_patterns = config.exclude_patterns;
    options.top_objects = static_cast<size_t>(config.top_objects);
    const absl::Time start = absl::Now();
    StatusOr<DumpAnalysis> analysis = AnalyzeDumpFile(path, classes, options);
    const absl::Duration took = absl::Now() - start;
    Status stored = analysis.ok() ? StoreAnalysis(id, *analysis, suspects, &record)
                                  : analysis.status();
    if (!config.keep_raw_dumps) {
      std::error_code ec;
      fs::remove(path, ec);
      if (ec) spdlog::error("escalation: cannot delete the raw dump {}: {}", path, ec.message());
    }
    metrics->ObserveExtendedDumpAnalysis(took);

    lock.lock();
    j.on_disk = config.keep_raw_dumps;
    if (!stored.ok()) {
      proto::ToDuration(took, j.record.mutable_analysis_duration());
      Fail(j, absl::StrCat("analysis failed: ", stored.ToString()), ExtendedDumpResult::kError);
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
  }

  // Builds and stores the summary and the reports of one analysed dump; fills the analysis fields
  // of `record`. Runs without mu.
  Status StoreAnalysis(const AgentId& id, const DumpAnalysis& analysis,
                       const std::map<std::string, diff::Suspect>& suspects,
                       v1::ExtendedDump* record) {
    record->set_format(analysis.format);
    *record->mutable_totals() = ToProto(analysis.totals);
    proto::ToDuration(absl::Seconds(analysis.analysis_seconds),
                      record->mutable_analysis_duration());
    record->set_analysis_peak_memory_bytes(analysis.peak_memory_bytes);
    const absl::Time dump_time = TimeOf(record->dump_time());

    records::v1::ExtendedDumpSummary summary;
    FillDumpSummaryRecord(analysis.summary, &summary);
    summary.set_agent(id.value);
    summary.set_dump_id(record->dump_id());
    *summary.mutable_dump_time() = record->dump_time();

    // The previous DONE dump's summary, for the embedded diff.
    std::optional<records::v1::ExtendedDumpSummary> previous;
    auto earlier = store->ListRecords(kSummaryTable, absl::StrCat(id.value, "/"));
    if (earlier.ok()) {
      for (auto it = earlier->rbegin(); it != earlier->rend(); ++it) {
        if (it->first >= DumpKey(id, record->dump_id())) continue;
        records::v1::ExtendedDumpSummary s;
        if (s.ParseFromString(it->second)) {
          previous = std::move(s);
          break;
        }
      }
    }
    std::optional<v1::ExtendedDumpDiff> diff;
    if (previous) {
      v1::ExtendedDumpDiff d = ToProto(
          analysis::DiffDumpSummaries(DumpSummaryFromRecord(*previous), analysis.summary),
          kReportDiffRows, kReportDiffRows);
      d.set_agent(id.value);
      d.set_from_dump(previous->dump_id());
      d.set_to_dump(record->dump_id());
      *d.mutable_from_time() = previous->dump_time();
      *d.mutable_to_time() = record->dump_time();
      diff = std::move(d);
    }

    HW_RETURN_IF_ERROR(store->PutRecord(kSummaryTable, DumpKey(id, record->dump_id()),
                                        summary.SerializeAsString()));
    for (const analysis::SuspectReport& s : analysis.suspects) {
      v1::DrillDownReport report;
      report.set_agent(id.value);
      FillDrillDownReport(s, analysis.top_objects, &report);
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
        SuspectToProto(id, it->second, dump_time, report.mutable_suspect());
      }
      if (diff) *report.mutable_diff_from_previous() = *diff;
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
        return put;
      }
      metrics->SetSuspectRetained(id, s.class_name, s.retained_bytes);
    }
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
      if (d.raw_dump_kept()) kept_files.insert(d.raw_dump_path());
      if (!Active(d.state())) continue;
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
    fs::create_directories(dump_dir, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create the dump directory ", dump_dir, ": ", ec.message()));
    }
    fs::permissions(dump_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                    ec);
    for (auto it = fs::recursive_directory_iterator(dump_dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string p = it->path().string();
      if (!it->is_regular_file() || kept_files.count(p)) continue;
      if (absl::EndsWith(p, ".hprof") || absl::EndsWith(p, ".hprof.gz")) {
        std::error_code rm;
        fs::remove(p, rm);
        spdlog::info("escalation: deleted a raw dump left by an earlier run: {}", p);
      }
    }
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
  d.cv.notify_all();
  const bool finished = d.cv.wait_for(lock, absl::ToChronoMilliseconds(grace),
                                      [&d] { return d.live_threads == 0; });
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
  std::vector<const diff::Suspect*> uncovered;
  for (const diff::Suspect& s : suspects) {
    auto it = a.covered.find(s.class_name);
    if (it == a.covered.end() || it->second < s.first_seen) uncovered.push_back(&s);
  }
  if (uncovered.empty()) return;
  if (a.open != nullptr && a.open->joinable) {
    for (const diff::Suspect* s : uncovered) d.AddSuspect(*a.open, a, *s);
    d.Persist(*a.open);
    spdlog::info("escalation: {} more suspect classes of agent {} join dump {}", uncovered.size(),
                 target.info.id.value, a.open->record.dump_id());
    return;
  }
  std::shared_ptr<Impl::Job> job = d.NewJob(target.info.id, a, v1::EXTENDED_DUMP_TRIGGER_SUSPECT,
                                            d.config.join_window);
  for (const diff::Suspect* s : uncovered) d.AddSuspect(*job, a, *s);
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

void Escalation::RemoveAgent(const AgentId& agent) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.agents.find(agent);
  if (it == d.agents.end()) return;
  it->second.live = false;
  it->second.open = nullptr;
  d.cv.notify_all();  // the dump thread fails its queued jobs
}

StatusOr<v1::ExtendedDump> Escalation::Trigger(const AgentId& agent) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (!d.config.enabled) {
    return absl::FailedPreconditionError("escalation is disabled (escalation.enabled: false)");
  }
  auto it = d.agents.find(agent);
  if (it == d.agents.end() || !it->second.live) {
    return absl::NotFoundError(absl::StrCat("agent ", agent.value, " is not a live agent"));
  }
  Impl::AgentEsc& a = it->second;
  d.Load(agent, a);
  const absl::Time now = d.clock->Now();
  const absl::Time next = d.NextDumpAllowed(a);
  if (a.open != nullptr && a.open->joinable && next <= now) {
    // A pending automatic dump (waiting for suspects to join) starts now instead.
    a.open->not_before = std::min(a.open->not_before, now);
    d.cv.notify_all();
    return a.open->record;
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
    return DumpSummaryFromRecord(s);
  };
  HW_ASSIGN_OR_RETURN(analysis::DumpSummary before, load(*from));
  HW_ASSIGN_OR_RETURN(analysis::DumpSummary after, load(*to));
  v1::ExtendedDumpDiff out =
      ToProto(analysis::DiffDumpSummaries(before, after), max_classes, max_owners);
  out.set_agent(agent.value);
  out.set_from_dump(from->dump_id());
  out.set_to_dump(to->dump_id());
  *out.mutable_from_time() = from->dump_time();
  *out.mutable_to_time() = to->dump_time();
  return out;
}

}  // namespace heapwatch::daemon
