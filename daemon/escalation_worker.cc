// The escalation's worker (daemon/escalation_impl.h): one dump thread takes the queued dumps from
// each agent's DumpSource (daemon/dump_source.h), one at a time daemon-wide, and
// escalation.max_concurrent_analyses analysis threads analyse them (pipeline/analyze_dump.h) within
// the memory budget, build the drill-down reports and the summary, and commit them with the dump's
// DONE record in one transaction (daemon/dump_records.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/class_loading_watch.h"
#include "daemon/escalation_impl.h"
#include "heapwatch/records/v1/records.pb.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"
#include "proto/time_util.h"
#include "proto/trend_proto.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {
namespace {

// The known-leak pattern a class loader leak's report shows (analysis/leak_patterns/registry.cc).
constexpr std::string_view kClassLoaderPinnedPattern = "class-loader-pinned";
// Growth-history points kept in a report (the newest).
constexpr size_t kMaxHistoryPoints = 240;
// Rows of the diff embedded in a report.
constexpr uint32_t kReportDiffRows = 20;

// The heapwatch_faults_total reason of a failed DumpSource::WriteDump (its Errors).
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

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  auto t = proto::FromTimestamp(ts);
  return t.ok() ? *t : absl::InfinitePast();
}

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

// Opens the raw dump without following a symlink, and checks that it is a regular file of
// `owner` (or of the daemon's user): the per-user directory belongs to that user, who could
// otherwise swap the dump for a link to a file only the daemon may read, or for a FIFO that blocks
// the reader. Returns the open descriptor; the analysis reads "/proc/self/fd/<fd>", i.e. this very
// file.
StatusOr<int> OpenRawDump(const std::string& path, uint32_t owner) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open the dump ", path, ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_uid != owner && st.st_uid != ::geteuid())) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "the dump ", path, " is not a regular file of the JVM's user; it was replaced"));
  }
  return fd;
}

// What an analysed dump stores: its summary and reports, and the retained bytes per class.
struct AnalysisRecords {
  records::v1::ExtendedDumpSummary summary;
  std::vector<v1::DrillDownReport> reports;
  std::vector<std::pair<std::string, uint64_t>> retained;
};

// Builds the summary and the reports of one analysed dump and fills the analysis fields of
// `record` (its report_classes among them). Reads the store (the previous summary, the classes'
// histories); writes nothing. Runs without mu.
AnalysisRecords BuildAnalysisRecords(const DumpRecordStore& records,
                                     const storage::SnapshotStore& store, const AgentId& id,
                                     const pipeline::DumpAnalysis& analysis,
                                     const std::map<std::string, diff::Suspect>& suspects,
                                     v1::ExtendedDump* record) {
  AnalysisRecords out;
  record->set_format(analysis.report.dump_format);
  *record->mutable_totals() = proto::ToProto(analysis.report.totals);
  proto::ToDuration(absl::Seconds(analysis.report.timings.total_seconds),
                    record->mutable_analysis_duration());
  record->set_analysis_peak_memory_bytes(analysis.peak_memory_bytes);
  const absl::Time dump_time = TimeOf(record->dump_time());

  const analysis::DumpSummary& dump_summary = *analysis.summary;
  proto::FillDumpSummaryRecord(dump_summary, &out.summary);
  out.summary.set_agent(id.value);
  out.summary.set_dump_id(record->dump_id());
  *out.summary.mutable_dump_time() = record->dump_time();

  // The summary of the agent's newest DONE dump before this one, for the embedded diff (dump
  // records are small; only that one summary is read).
  std::optional<records::v1::ExtendedDumpSummary> previous;
  if (auto earlier = records.ListDumps(id); earlier.ok()) {
    for (auto it = earlier->rbegin(); it != earlier->rend(); ++it) {
      if (it->dump_id() < record->dump_id() && it->state() == v1::EXTENDED_DUMP_STATE_DONE) {
        if (auto s = records.GetSummary(id, it->dump_id()); s.ok()) previous = std::move(*s);
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

  for (const analysis::SuspectReport& s : analysis.suspects) {
    if (!DumpRecordStore::ReportKeyFits(id, s.class_name, record->dump_id())) {
      spdlog::warn(
          "escalation: no report for class {} of agent {}: its name is too long for a "
          "record key",
          s.class_name, id.value);
      continue;
    }
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
    auto history = store.ClassHistory(id, s.class_name, absl::InfinitePast(), dump_time);
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
    out.reports.push_back(std::move(report));
    out.retained.emplace_back(s.class_name, s.retained_bytes);
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
    out.reports.push_back(std::move(report));
  }
  return out;
}

}  // namespace

// ---- dump thread ----

void Escalation::Impl::DumpLoop() {
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

std::shared_ptr<Escalation::Impl::Job> Escalation::Impl::NextDumpJob() {
  const absl::Time now = clock->Now();
  for (auto it = dump_queue.begin(); it != dump_queue.end(); ++it) {
    std::shared_ptr<Job> job = *it;
    if (job->not_before > now) continue;
    // Disk budget: raw dumps on disk (being analysed or waiting) plus this one.
    if (!FitsDiskBudget(config, in_flight_disk, job->estimate)) {
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

void Escalation::Impl::TakeDump(const std::shared_ptr<Job>& job,
                                std::unique_lock<std::mutex>& lock) {
  Job& j = *job;
  const AgentId id(j.record.agent());
  AgentEsc& a = agents[id];
  const EscalationTarget target = a.target;
  struct statvfs vfs {};
  if (statvfs(dump_dir.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (free_bytes < j.estimate) {
      Fail(j,
           absl::StrCat(kRefusedPrefix, "the dump would take about ", FormatBytes(j.estimate),
                        " but ", dump_dir, " has ", FormatBytes(free_bytes), " free"),
           ExtendedDumpResult::kRefused);
      metrics->RecordFault(FaultReason::kDumpDiskFull);
      return;
    }
  }
  DumpSource* source = resolve_source ? resolve_source(target.info) : nullptr;
  if (source == nullptr) {
    Fail(j, absl::StrCat("dump failed: no dump source for agent ", id.value),
         ExtendedDumpResult::kError);
    metrics->RecordFault(FaultReason::kDumpFailed);
    return;
  }
  DumpRequest request;
  request.agent = target.info;
  request.jvm = target.jvm;
  request.dump_dir = dump_dir;
  request.file_name = absl::StrCat(j.record.dump_id(), config.gzip ? ".hprof.gz" : ".hprof");
  request.gzip = config.gzip;
  request.timeout = config.dump_timeout;
  const std::string path = source->PathFor(request);
  const absl::Time start = clock->Now();
  a.coverage.last_dump = start;
  j.record.set_state(v1::EXTENDED_DUMP_STATE_DUMPING);
  proto::SetTimestamp(start, &j.record, &v1::ExtendedDump::mutable_dump_time);
  in_flight_disk += j.estimate;
  raw_files.insert(path);
  Persist(j);
  spdlog::info("escalation: taking extended dump {} of agent {} (pid {}) for {}",
               j.record.dump_id(), id.value, target.info.pid,
               j.record.suspect_classes().empty()
                   ? std::string("a manual request")
                   : absl::StrCat(j.record.suspect_classes_size(), " suspect classes"));
  lock.unlock();
  StatusOr<WrittenDump> dumped = source->WriteDump(request);
  // Outside mu (the listener takes the daemon's locks); set before any dump, never changed.
  if (dumped.ok() && dump_pause_listener) dump_pause_listener(target.info.id, dumped->pause);
  lock.lock();
  if (!dumped.ok() || stopping) {
    in_flight_disk -= j.estimate;
    DeleteRaw(path, /*force=*/true);  // the source deletes partial files; this covers the rest
    Fail(j,
         dumped.ok() ? std::string("the daemon stopped before the dump was analysed")
                     : absl::StrCat("dump failed: ", dumped.status().ToString()),
         ExtendedDumpResult::kError);
    if (!dumped.ok()) metrics->RecordFault(DumpFault(dumped.status()));
    return;
  }
  j.record.set_file_bytes(dumped->file_bytes);
  j.record.set_gzip(dumped->gzip);
  proto::ToDuration(dumped->pause, j.record.mutable_dump_pause());
  proto::ToDuration(dumped->wall, j.record.mutable_dump_duration());
  metrics->ObserveExtendedDumpPause(dumped->pause);

  if (config.keep_raw_dumps) {
    j.record.set_raw_dump_kept(true);
    j.record.set_raw_dump_path(dumped->path);
  }
  j.raw_path = dumped->path;
  j.file_owner = source->FileOwner(request);
  j.record.set_state(v1::EXTENDED_DUMP_STATE_ANALYZING);
  Persist(j);
  analysis_queue.push_back(job);
  PublishQueueGauges();
  cv.notify_all();
}

// ---- analysis threads ----

void Escalation::Impl::AnalysisLoop() {
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    if (stopping) break;
    std::shared_ptr<Job> job;
    if (!analysis_queue.empty() && FitsMemoryBudget(config, analyses_in_flight, memory_in_flight,
                                                    analysis_queue.front()->estimate)) {
      job = analysis_queue.front();
      analysis_queue.pop_front();
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

void Escalation::Impl::Analyse(const std::shared_ptr<Job>& job,
                               std::unique_lock<std::mutex>& lock) {
  Job& j = *job;
  const AgentId id(j.record.agent());
  const std::string path = j.raw_path;
  const uint32_t owner = j.file_owner;
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
  StatusOr<int> fd = OpenRawDump(path, owner);
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
  std::optional<AnalysisRecords> built;
  std::vector<std::string> missing;
  AnalysedDump points;
  points.agent = id;
  points.dump_id = record.dump_id();
  if (analysis.ok()) {
    built = BuildAnalysisRecords(*records, *store, id, *analysis, suspects, &record);
    missing = analysis->missing_classes;
    // From the reports as they are stored, so LatestAnalysedDump reads back the same points.
    for (const v1::DrillDownReport& r : built->reports) {
      if (auto point = DetectorAccumulationPoint(r)) points.points.push_back(std::move(*point));
    }
    SortPoints(&points.points);
  }
  const Status analysed = analysis.status();
  analysis = absl::CancelledError("released");  // frees the analysis before the next one
  metrics->ObserveExtendedDumpAnalysis(took);

  lock.lock();
  DeleteRaw(path);  // as soon as the reports are stored (or the analysis failed)
  if (config.keep_raw_dumps) {
    AddKeptRaw(id, j.record.dump_id(), path);  // over budget: evicted by AnalysisLoop
  }
  if (!analysed.ok()) {
    proto::ToDuration(took, j.record.mutable_analysis_duration());
    Fail(j, absl::StrCat("analysis failed: ", analysed.ToString()), ExtendedDumpResult::kError);
    return;
  }
  // The DONE record, the summary and the reports in one transaction (under mu, like every record
  // write of the escalation, so record retention never sees them half written).
  v1::ExtendedDump done = record;
  done.set_state(v1::EXTENDED_DUMP_STATE_DONE);
  proto::SetTimestamp(clock->Now(), &done, &v1::ExtendedDump::mutable_finished_time);
  if (Status stored = records->CommitAnalysis(done, built->summary, built->reports); !stored.ok()) {
    proto::ToDuration(took, j.record.mutable_analysis_duration());
    Fail(j, absl::StrCat("analysis failed: ", stored.ToString()), ExtendedDumpResult::kError);
    // The analysis ran but its reports could not be stored (disk full, store error).
    metrics->RecordFault(FaultReason::kReportWriteFailed);
    return;
  }
  j.record = std::move(done);
  unsaved.erase(DumpRecordKey(id, j.record.dump_id()));
  for (const auto& [name, bytes] : built->retained) metrics->SetSuspectRetained(id, name, bytes);
  for (const std::string& m : missing) {
    spdlog::info("escalation: class {} has no reachable instance in dump {} of agent {}", m,
                 j.record.dump_id(), id.value);
  }
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

}  // namespace heapwatch::daemon
