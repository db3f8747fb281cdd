// Internal to daemon/escalation*.cc: the state of an Escalation (daemon/escalation.h) shared by its
// parts. escalation.cc: the entry points, the agents' coverage and the dump records' life cycle;
// escalation_worker.cc: the dump thread (DumpSource) and the analysis threads (analysis ->
// reports); escalation_policy.h: the decisions; dump_records.h: the stored records. Not a public
// header: nothing outside those files includes it.
#ifndef HEAPWATCH_DAEMON_ESCALATION_IMPL_H_
#define HEAPWATCH_DAEMON_ESCALATION_IMPL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daemon/dump_records.h"
#include "daemon/dump_source.h"
#include "daemon/escalation.h"
#include "daemon/escalation_policy.h"

namespace heapwatch::daemon {

struct Escalation::Impl {
  struct Job {
    v1::ExtendedDump record;  // guarded by mu
    EscalationTarget target;
    std::map<std::string, diff::Suspect> suspects;  // guarded by mu: class -> trend at request
    absl::Time not_before;
    uint64_t estimate = 0;    // bytes: analysis memory and uncompressed dump size
    bool joinable = true;     // guarded by mu: suspects may still join (analysis not started)
    std::string raw_path;     // guarded by mu: the raw dump, once written
    uint32_t file_owner = 0;  // owner the raw dump must have (DumpSource::FileOwner)
  };
  struct AgentEsc {
    EscalationTarget target;
    bool live = false;
    bool loaded = false;
    std::vector<diff::Suspect> suspects;  // as of the last collection
    std::shared_ptr<Job> open;            // joinable job, if any
    // The newest dump taken and the classes' covered episodes (escalation_policy.h).
    DumpCoverage coverage;
  };
  // Raw dumps kept after their analysis (keep_raw_dumps).
  struct KeptRaw {
    AgentId agent;
    std::string dump_id;
    std::string path;
    uint64_t bytes = 0;
  };

  EscalationConfig config;
  std::string dump_dir;
  std::unique_ptr<DumpSource> default_source;  // the attach source of the Start(AttachOptions) form
  DumpSourceResolver resolve_source;
  storage::SnapshotStore* store;  // the class histories the reports embed
  std::unique_ptr<DumpRecordStore> records;
  Metrics* metrics;
  const Clock* clock;
  std::function<void(const AgentId&, absl::Duration)> dump_pause_listener;  // set before any dump
  std::function<void(const AgentId&, std::string_view)> analysis_start_listener;  // likewise
  std::function<void(const AnalysedDump&)> report_listener;                       // likewise

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                            // guarded by mu
  std::map<AgentId, AgentEsc> agents;               // guarded by mu
  std::deque<std::shared_ptr<Job>> dump_queue;      // guarded by mu: QUEUED
  std::deque<std::shared_ptr<Job>> analysis_queue;  // guarded by mu: ANALYZING, not started
  int analyses_in_flight = 0;                       // guarded by mu
  uint64_t memory_in_flight = 0;                    // guarded by mu
  uint64_t in_flight_disk = 0;                      // guarded by mu: estimated raw dumps on disk
  int live_threads = 0;                             // guarded by mu
  absl::Time last_id_time = absl::InfinitePast();   // guarded by mu: keeps dump ids unique
  std::map<std::string, std::string> unsaved;       // guarded by mu: records to write again
  std::set<std::string> raw_files;                  // guarded by mu: raw dumps on disk now
  std::map<std::string, KeptRaw> kept_raw;  // guarded by mu: "<dump_id>|<agent>", oldest first
  uint64_t kept_raw_bytes = 0;              // guarded by mu: sum over kept_raw
  std::vector<std::thread> threads;

  // ---- records and budgets (escalation.cc); REQUIRES: mu held ----

  // Writes the record of `job`. A store error is logged and the record is written again by the
  // dump thread until it succeeds (RetryUnsaved), so a final state is never lost while the daemon
  // runs.
  void Persist(const Job& job);
  void RetryUnsaved();
  // Deletes a raw dump (unless kept by configuration, or `force`).
  void DeleteRaw(const std::string& path, bool force = false);
  // Counts a kept raw dump against max_dump_disk_bytes.
  void AddKeptRaw(const AgentId& agent, const std::string& dump_id, const std::string& path);
  // Deletes the oldest kept raw dumps while the kept ones, the raw dumps being written or analysed
  // (in_flight_disk) and `extra` bytes exceed max_dump_disk_bytes; their records say the raw dump
  // is no longer kept. A dump in progress is never in kept_raw.
  void EvictKeptRawDumps(uint64_t extra);
  void PublishQueueGauges();
  // Ends `job` as FAILED with `error`.
  void Fail(Job& job, std::string error, ExtendedDumpResult result);
  // Loads what the store knows of the agent's earlier dumps (interval, covered classes).
  void Load(const AgentId& id, AgentEsc& a);
  // Creates a QUEUED job for the agent that may start after `wait` (and the agent's interval).
  std::shared_ptr<Job> NewJob(const AgentId& id, AgentEsc& a, v1::ExtendedDumpTrigger trigger,
                              absl::Duration wait);
  void AddSuspect(Job& job, AgentEsc& a, const diff::Suspect& s);
  void Enqueue(const std::shared_ptr<Job>& job, AgentEsc& a);
  // Start-up: fails the dumps an earlier run left in progress and deletes its raw dumps.
  Status Recover();

  // ---- the worker (escalation_worker.cc) ----

  void DumpLoop();
  // The first queued job that may start now, removed from the queue. REQUIRES: mu held.
  std::shared_ptr<Job> NextDumpJob();
  // Takes the dump of `job` (unlocking `lock` meanwhile) and hands it to the analysis queue.
  void TakeDump(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock);
  void AnalysisLoop();
  // Analyses the raw dump of `job` (unlocking `lock` meanwhile) and commits its records.
  void Analyse(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock);
};

// "0x7f0012345678": how an accumulation point's object id is named to the leak detector.
std::string ObjectIdText(uint64_t id);
void SortPoints(std::vector<diff::LeakDetector::AccumulationPoint>* points);
// The accumulation point the leak detector gets for a drill-down report's class
// (diff::LeakDetector::SetAccumulationPoints): the report's first (heaviest) accumulation point,
// named by ObjectIdText, with its dominators' ids, immediate dominator first. nullopt when the
// report names no accumulation point. Built from the stored report, so a freshly analysed dump
// (escalation_worker.cc) and one read back from the store (LatestAnalysedDump) give the same point.
std::optional<diff::LeakDetector::AccumulationPoint> DetectorAccumulationPoint(
    const v1::DrillDownReport& report);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_ESCALATION_IMPL_H_
