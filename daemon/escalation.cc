// The escalation's entry points (daemon/escalation.h) and the life cycle of its dump records: the
// agents' coverage state, the queue, the budgets' bookkeeping and the start-up recovery. The
// decisions are in escalation_policy.h, the dump and analysis threads in escalation_worker.cc, the
// stored records in dump_records.h.
#include "daemon/escalation.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "daemon/escalation_impl.h"
#include "proto/report_proto.h"
#include "proto/time_util.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {

namespace fs = std::filesystem;

namespace {

// Debian's Abseil has its own string_view type.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

std::string ObjectIdText(uint64_t id) { return absl::StrFormat("0x%x", id); }

void SortPoints(std::vector<diff::LeakDetector::AccumulationPoint>* points) {
  std::sort(points->begin(), points->end(),
            [](const auto& x, const auto& y) { return x.suspect_class < y.suspect_class; });
}

std::optional<diff::LeakDetector::AccumulationPoint> DetectorAccumulationPoint(
    const v1::DrillDownReport& report) {
  if (report.accumulation_points().empty()) return std::nullopt;
  const v1::AccumulationPoint& top = report.accumulation_points(0);
  diff::LeakDetector::AccumulationPoint point{
      report.class_name(), ObjectIdText(top.object().object_id()), top.object().class_name()};
  for (uint64_t d : top.dominator_object_ids()) point.dominator_ids.push_back(ObjectIdText(d));
  return point;
}

// ---- records and budgets ----

void Escalation::Impl::Persist(const Job& job) {
  const std::string key = DumpRecordKey(AgentId(job.record.agent()), job.record.dump_id());
  unsaved.erase(key);
  Status s = records->PutDump(job.record);
  if (!s.ok()) {
    spdlog::error("escalation: cannot store the record of dump {} of agent {}, will retry: {}",
                  job.record.dump_id(), job.record.agent(), s.ToString());
    unsaved[key] = job.record.SerializeAsString();
  }
}

void Escalation::Impl::RetryUnsaved() {
  for (auto it = unsaved.begin(); it != unsaved.end();) {
    v1::ExtendedDump d;
    if (d.ParseFromString(it->second) && records->PutDump(d).ok()) {
      it = unsaved.erase(it);
    } else {
      ++it;
    }
  }
}

void Escalation::Impl::DeleteRaw(const std::string& path, bool force) {
  raw_files.erase(path);
  if (path.empty() || (config.keep_raw_dumps && !force)) return;
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) spdlog::error("escalation: cannot delete the raw dump {}: {}", path, ec.message());
}

void Escalation::Impl::AddKeptRaw(const AgentId& agent, const std::string& dump_id,
                                  const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return;  // gone: nothing to count
  const std::string key = absl::StrCat(dump_id, "|", agent.value);
  if (kept_raw.count(key)) return;
  kept_raw[key] = KeptRaw{agent, dump_id, path, static_cast<uint64_t>(size)};
  kept_raw_bytes += size;
}

void Escalation::Impl::EvictKeptRawDumps(uint64_t extra) {
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
        k.path, FormatBytes(k.bytes), k.agent.value, FormatBytes(config.max_dump_disk_bytes));
    auto stored = records->GetDump(k.agent, k.dump_id);
    if (stored.ok()) {
      stored->set_raw_dump_kept(false);
      stored->clear_raw_dump_path();
      if (!records->PutDump(*stored).ok()) {
        unsaved[DumpRecordKey(k.agent, k.dump_id)] = stored->SerializeAsString();
      }
    }
  }
}

void Escalation::Impl::PublishQueueGauges() {
  metrics->SetExtendedDumpAnalyses(analyses_in_flight,
                                   static_cast<int>(dump_queue.size() + analysis_queue.size()));
}

void Escalation::Impl::Fail(Job& job, std::string error, ExtendedDumpResult result) {
  job.record.set_state(v1::EXTENDED_DUMP_STATE_FAILED);
  job.record.set_error(std::move(error));
  proto::SetTimestamp(clock->Now(), &job.record, &v1::ExtendedDump::mutable_finished_time);
  job.joinable = false;
  auto it = agents.find(AgentId(job.record.agent()));
  if (it != agents.end()) {
    if (it->second.open.get() == &job) it->second.open = nullptr;
    if (result != ExtendedDumpResult::kRefused) {
      // Not covered after all: retried after the agent's interval if still a suspect.
      for (const auto& [name, s] : job.suspects) it->second.coverage.covered.erase(name);
    }
  }
  Persist(job);
  metrics->RecordExtendedDump(AgentId(job.record.agent()), result);
  spdlog::warn("escalation: extended dump {} of agent {} failed: {}", job.record.dump_id(),
               job.record.agent(), job.record.error());
}

void Escalation::Impl::Load(const AgentId& id, AgentEsc& a) {
  if (a.loaded) return;
  a.loaded = true;
  auto dumps = records->ListDumps(id);
  if (!dumps.ok()) {
    spdlog::error("escalation: cannot read the dump records of agent {}: {}", id.value,
                  dumps.status().ToString());
    return;
  }
  for (const v1::ExtendedDump& d : *dumps) {
    AddStoredDump(d, &a.coverage);
    if (d.state() != v1::EXTENDED_DUMP_STATE_DONE) continue;
    // Republish the retained sizes of the stored reports (records are oldest first, so the
    // newest report of a class wins).
    for (const std::string& c : d.report_classes()) {
      if (auto r = records->GetReport(id, c, d.dump_id()); r.ok()) {
        metrics->SetSuspectRetained(id, c, r->retained_bytes());
      }
    }
  }
}

std::shared_ptr<Escalation::Impl::Job> Escalation::Impl::NewJob(const AgentId& id, AgentEsc& a,
                                                                v1::ExtendedDumpTrigger trigger,
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
  job->estimate = EstimateDumpBytes(a.target.heap_bytes);
  job->not_before = DumpNotBefore(now, wait, a.coverage, config.min_dump_interval);
  return job;
}

void Escalation::Impl::AddSuspect(Job& job, AgentEsc& a, const diff::Suspect& s) {
  if (job.suspects.emplace(s.class_name, s).second) {
    job.record.add_suspect_classes(s.class_name);
  }
  auto requested = proto::FromTimestamp(job.record.requested_time());
  MarkCovered(s, requested.ok() ? *requested : absl::InfinitePast(), &a.coverage);
}

void Escalation::Impl::Enqueue(const std::shared_ptr<Job>& job, AgentEsc& a) {
  a.open = job;
  dump_queue.push_back(job);
  Persist(*job);
  PublishQueueGauges();
  cv.notify_all();
}

// ---- start-up ----

Status Escalation::Impl::Recover() {
  HW_ASSIGN_OR_RETURN(std::vector<StoredDumpRecord> all, records->ListAllDumps());
  std::set<std::string> kept_files;
  for (StoredDumpRecord& r : all) {
    v1::ExtendedDump& d = r.record;
    if (!r.parsed) {
      spdlog::error("escalation: dump record {} is corrupt; ignored", r.key);
      continue;
    }
    if (!DumpInProgress(d.state())) {
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
    HW_RETURN_IF_ERROR(records->PutDump(d));
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
    fs::permissions(dump_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                    ec);
  }
  // Only files heapwatchd names: <dump_dir>/<uid>/<dump id>.hprof[.gz] (daemon/dump_source.h); a
  // dump_dir shared with other tools keeps their files.
  static const std::regex kOurs(R"([0-9]{8}T[0-9]{6}\.[0-9]{6}Z\.hprof(\.gz)?)");
  static const std::regex kUid(R"([0-9]+)");
  for (auto user = fs::directory_iterator(dump_dir, ec); !ec && user != fs::directory_iterator();
       user.increment(ec)) {
    std::error_code uec;
    if (!user->is_directory(uec) || user->is_symlink(uec) ||
        !std::regex_match(user->path().filename().string(), kUid)) {
      continue;
    }
    for (auto f = fs::directory_iterator(user->path(), uec); !uec && f != fs::directory_iterator();
         f.increment(uec)) {
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

// ---- Escalation ----

Escalation::Escalation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<Escalation>> Escalation::Start(const EscalationConfig& config,
                                                        const std::string& data_dir,
                                                        const collectors::AttachOptions& attach,
                                                        storage::SnapshotStore* store,
                                                        Metrics* metrics, const Clock* clock) {
  auto source = std::make_unique<AttachDumpSource>(attach);
  HW_ASSIGN_OR_RETURN(std::unique_ptr<Escalation> escalation,
                      StartWithSources(config, data_dir, AttachDumpSourceResolver(source.get()),
                                       store, metrics, clock));
  // Owned by the Escalation; its threads reach it only through the resolver.
  escalation->impl_->default_source = std::move(source);
  return escalation;
}

DumpSourceResolver Escalation::AttachDumpSourceResolver(DumpSource* attach) {
  return [attach](const AgentInfo& agent) -> DumpSource* {
    return agent.kind == AgentKind::kLocalAttach ? attach : nullptr;
  };
}

StatusOr<std::unique_ptr<Escalation>> Escalation::StartWithSources(
    const EscalationConfig& config, const std::string& data_dir, DumpSourceResolver sources,
    storage::SnapshotStore* store, Metrics* metrics, const Clock* clock) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->dump_dir = config.dump_dir.empty() ? absl::StrCat(data_dir, "/dumps") : config.dump_dir;
  std::error_code ec;
  fs::path absolute = fs::absolute(impl->dump_dir, ec);
  if (!ec) impl->dump_dir = absolute.lexically_normal().string();
  if (config.dump_dir.empty() && config.enabled) {
    // The default dump directory is inside the store's directory (0700): let JVMs of other users
    // traverse it (0711) to reach their own 0700 subdirectory. The store's files stay 0600.
    fs::permissions(data_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                    ec);
  }
  impl->resolve_source = std::move(sources);
  impl->store = store;
  impl->records = std::make_unique<DumpRecordStore>(store);
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
  const bool finished =
      d.cv.wait_for(lock, absl::ToChronoMilliseconds(grace), [&d] { return d.live_threads == 0; });
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
  // Per class: covered for its current episode; per leak: covered when some class of it is
  // covered for an episode at or after the leak's first_seen (escalation_policy.h).
  const CoverageDecision decision =
      DecideCoverage(a.coverage, suspects, a.open != nullptr && a.open->joinable);
  const std::vector<const diff::Suspect*>& uncovered = decision.uncovered;
  const std::set<std::string>& new_leaks = decision.new_leaks;
  if (decision.action == CoverageAction::kNone) return;
  if (decision.action == CoverageAction::kJoin) {
    for (const diff::Suspect* s : uncovered) d.AddSuspect(*a.open, a, *s);
    d.Persist(*a.open);
    spdlog::info("escalation: {} more suspect classes of agent {} join dump {}", uncovered.size(),
                 target.info.id.value, a.open->record.dump_id());
    return;
  }
  // Classes that joined leaks already escalated: no new dump for them.
  if (decision.action == CoverageAction::kNoNewLeak) return;
  std::shared_ptr<Impl::Job> job =
      d.NewJob(target.info.id, a, v1::EXTENDED_DUMP_TRIGGER_SUSPECT, d.config.join_window);
  for (const diff::Suspect* s : uncovered) d.AddSuspect(*job, a, *s);
  spdlog::info("escalation: dump {} of agent {} for {} new leak{} ({} classes)",
               job->record.dump_id(), target.info.id.value, new_leaks.size(),
               new_leaks.size() == 1 ? "" : "s", uncovered.size());
  if (std::string why = RefusalReason(d.config, a.target.heap_bytes,
                                      d.dump_queue.size() + d.analysis_queue.size());
      !why.empty()) {
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
  std::set<AgentId> live_agents;
  for (const auto& [id, a] : d.agents) {
    if (!a.live) continue;
    live_agents.insert(id);
    for (const diff::Suspect& s : a.suspects) live_suspects[id].insert(s.class_name);
  }
  HW_ASSIGN_OR_RETURN(RecordRetentionResult result,
                      ApplyRecordRetention(d.store, live_suspects, live_agents, policy));
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
      StatusOr<v1::DrillDownReport> report = impl_->records->GetReport(agent, c, d.dump_id());
      // A report that does not parse is skipped; any other error is the answer.
      if (!report.ok() && report.status().code() != absl::StatusCode::kDataLoss) {
        return report.status();
      }
      if (!report.ok()) continue;
      if (auto point = DetectorAccumulationPoint(*report)) out.points.push_back(std::move(*point));
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
    // Escalation learns of an agent from its first class histogram (its size estimates the dump),
    // so an agent listed a moment ago is "not live" here until that histogram is stored.
    return absl::NotFoundError(absl::StrCat(
        "agent ", agent.value, " is not a live agent, or has no class histogram yet"));
  }
  Impl::AgentEsc& a = it->second;
  d.Load(agent, a);
  const absl::Time now = d.clock->Now();
  const absl::Time next = NextDumpAllowed(a.coverage, d.config.min_dump_interval);
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
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", a.coverage.last_dump, absl::UTCTimeZone()),
        "; the next one is allowed at ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", when, absl::UTCTimeZone()),
        " (escalation.min_dump_interval ", FormatDurationText(d.config.min_dump_interval), ")"));
  }
  if (std::string why = RefusalReason(d.config, a.target.heap_bytes,
                                      d.dump_queue.size() + d.analysis_queue.size());
      !why.empty()) {
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
  HW_ASSIGN_OR_RETURN(std::vector<v1::DrillDownReport> reports,
                      impl_->records->ListReportsOfClass(agent, class_name));
  for (auto it = reports.rbegin(); it != reports.rend(); ++it) {
    v1::DrillDownReport& report = *it;
    // Only reports whose dump reached DONE (records written before reports were committed with
    // their dump could be left by a failure part-way).
    auto record = impl_->records->GetDump(agent, report.dump().dump_id());
    if (!record.ok() || record->state() != v1::EXTENDED_DUMP_STATE_DONE) continue;
    *report.mutable_dump() = std::move(*record);
    return std::move(report);
  }
  return absl::NotFoundError(
      absl::StrCat("no drill-down report of class ", AV(class_name), " for agent ", agent.value));
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
  auto record = impl_->records->GetDump(agent, dump_id);
  if (!record.ok()) {
    const absl::StatusCode code = record.status().code();
    if (code == absl::StatusCode::kNotFound || code == absl::StatusCode::kDataLoss) {
      return not_found();
    }
    return record.status();
  }
  if (record->state() != v1::EXTENDED_DUMP_STATE_DONE) return not_found();
  auto report = impl_->records->GetReport(agent, class_name, dump_id);
  if (!report.ok()) {
    const absl::StatusCode code = report.status().code();
    if (code == absl::StatusCode::kNotFound || code == absl::StatusCode::kDataLoss) {
      return not_found();
    }
    return report.status();
  }
  if (report->class_name() != class_name) return not_found();
  *report->mutable_dump() = std::move(*record);
  return report;
}

StatusOr<std::vector<v1::ExtendedDump>> Escalation::ListDumps(const AgentId& agent) const {
  HW_ASSIGN_OR_RETURN(std::vector<v1::ExtendedDump> out, impl_->records->ListDumps(agent));
  std::reverse(out.begin(), out.end());  // newest first
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
        return absl::FailedPreconditionError(
            absl::StrCat("extended dump ", AV(id), " of agent ", agent.value,
                         " is not analysed (state ", v1::ExtendedDumpState_Name(d.state()), ")"));
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
      return absl::NotFoundError(absl::StrCat(
          "agent ", agent.value, " has no analysed extended dump before ", to->dump_id()));
    }
  } else {
    HW_ASSIGN_OR_RETURN(from, find(from_dump));
  }
  auto load = [&](const v1::ExtendedDump& d) -> StatusOr<analysis::DumpSummary> {
    HW_ASSIGN_OR_RETURN(records::v1::ExtendedDumpSummary s,
                        impl_->records->GetSummary(agent, d.dump_id()));
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
