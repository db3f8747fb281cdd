// Escalation: when a leak of an agent appears (a group of suspect classes, diff/leak_detector.h),
// or on request, take an extended dump of that JVM from the agent's dump source
// (daemon/dump_source.h; today the attach API, collectors/heap_dump.h), analyse it in a bounded
// worker pool (pipeline/analyze_dump.h), store one drill-down report per suspect class plus a
// summary for dump diffs in the store, and delete the raw dump. docs/escalation.md describes the
// policy, the budgets and the stored records; seed 001 (dynaTrace: simple dumps trigger extended
// dumps) is the model.
//
// Structure (one place for each job): this class is the daemon's entry point and keeps the agents'
// state and the queue (escalation.cc); the decisions (coverage, join window, interval, budgets)
// are pure functions in daemon/escalation_policy.h; the dump thread and the analysis threads are
// in escalation_worker.cc; the stored records (tables, keys, one transaction per state change) are
// daemon/dump_records.h, shared with record retention (daemon/record_retention.h).
//
// Life of one extended dump (heapwatch.v1.ExtendedDump, stored in table "xdump" under
// "<agent>/<dump_id>" at every state change, daemon/dump_records.h):
//   QUEUED    accepted; waits until the agent's min_dump_interval has passed since its previous
//             dump, and for the disk budget (raw dumps waiting for analysis).
//   DUMPING   the JVM writes the dump (one dump at a time, daemon-wide).
//   ANALYZING waits for an analysis worker and the memory budget, then is analysed.
//   DONE      reports stored ("xreport" "<agent>/<class>/<dump_id>", "xsummary"
//             "<agent>/<dump_id>") in the same transaction as the DONE record, raw dump deleted
//             (unless keep_raw_dumps).
//   FAILED    `error` says why: the JVM exited or failed during the dump, the agent has no dump
//             source ("no dump source for agent ..."), the analysis failed, a
//             budget refused it ("refused: ..."), or the daemon stopped before it finished ("daemon
//             restarted ..."). The raw dump is deleted.
// One escalation per leak, not per class. A class counts as covered for its current suspect
// episode (diff::Suspect::first_seen) once a dump requested after first_seen is in progress, done
// or refused; a dump that failed for another reason is retried after the interval. A leak (the
// suspects sharing a diff::Suspect::leak id; a suspect without one is a leak of its own) is covered
// when one of its classes is covered for an episode at or after the leak's first_seen (the
// earliest first_seen of its classes), i.e. a dump was requested for it after it began. An
// uncovered leak starts a dump with every uncovered suspect class of the agent. Classes that join a
// covered leak start no dump: they only join the agent's dump that is still QUEUED, DUMPING or
// waiting for analysis, if there is one. An automatic dump waits `join_window` (default 1 min)
// after its first leak before it starts, so classes flagged meanwhile are analysed in it too.
// After a dump's reports are stored, the report listener receives each analysed class's top
// accumulation point (for diff::LeakDetector::SetAccumulationPoints).
//
// Thread-safety: thread-safe. OnCollection, RemoveAgent, Trigger and the queries may be called
// concurrently from any thread; Stop from one thread.
#ifndef HEAPWATCH_DAEMON_ESCALATION_H_
#define HEAPWATCH_DAEMON_ESCALATION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "common/agent.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/config.h"
#include "daemon/dump_source.h"
#include "daemon/metrics.h"
#include "daemon/record_retention.h"
#include "diff/leak_detector.h"
#include "diff/trend_detector.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {

// A live agent as escalation sees it, refreshed after every stored class histogram.
struct EscalationTarget {
  AgentInfo info;
  collectors::LocalJvm jvm;
  // Total shallow bytes of the agent's last class histogram: the basis of the dump size and
  // analysis memory estimates (1.2 times this).
  uint64_t heap_bytes = 0;
};

// What one analysed (DONE) extended dump says retains each suspect class's growth.
struct AnalysedDump {
  AgentId agent;
  std::string dump_id;
  // Per analysed class with at least one accumulation point: its top one (the report's
  // accumulation_points[0]), object id as "0x" + lowercase hex of the dump's object id. Sorted by
  // class name.
  std::vector<diff::LeakDetector::AccumulationPoint> points;
};

class Escalation {
 public:
  // Marks dumps that a previous run left QUEUED, DUMPING or ANALYZING as FAILED ("daemon
  // restarted"), deletes raw dump files in the dump directory that no kept record names, and starts
  // the dump thread and config.max_concurrent_analyses analysis threads. `store`, `metrics` and
  // `clock` are not owned and must outlive the object. `data_dir` is the store's directory (the
  // default dump directory is <data_dir>/dumps).
  // Errors: those of the store when the records cannot be read or updated; Internal when the dump
  // directory cannot be created.
  static StatusOr<std::unique_ptr<Escalation>> Start(const EscalationConfig& config,
                                                     const std::string& data_dir,
                                                     const collectors::AttachOptions& attach,
                                                     storage::SnapshotStore* store,
                                                     Metrics* metrics, const Clock* clock);
  // Start with the dump source of each agent chosen by `sources` (daemon/dump_source.h): called
  // on the dump thread before each dump; an agent without a source (nullptr) gets a FAILED dump
  // ("dump failed: no dump source for agent ..."). The sources must outlive the object. The form
  // above uses AttachDumpSourceResolver over an AttachDumpSource of `attach` that it owns.
  static StatusOr<std::unique_ptr<Escalation>> StartWithSources(
      const EscalationConfig& config, const std::string& data_dir, DumpSourceResolver sources,
      storage::SnapshotStore* store, Metrics* metrics, const Clock* clock);
  // `attach` for local attach agents (AgentKind::kLocalAttach), no source for other kinds.
  static DumpSourceResolver AttachDumpSourceResolver(DumpSource* attach);
  ~Escalation();  // Stop() waiting for work in progress; REQUIRES: not after a Stop that
                  // returned false.
  Escalation(const Escalation&) = delete;
  Escalation& operator=(const Escalation&) = delete;

  // Stops accepting work and waits up to `grace` for the dump and analyses in progress. Returns
  // false when some were still running: their threads are abandoned and the object must not be
  // destroyed (the process should exit; the next start marks those dumps FAILED).
  bool Stop(absl::Duration grace);

  // After a stored histogram of a live agent: refreshes the target and, when escalation is enabled
  // and automatic, escalates the leaks not covered yet (see the file comment; the leaks are the
  // suspects grouped by diff::Suspect::leak). Never blocks on a
  // dump; writes the new or updated dump record to the store (an error is logged and counted as
  // refused).
  void OnCollection(const EscalationTarget& target, const std::vector<diff::Suspect>& suspects);
  // The agent's JVM exited: its queued dumps fail ("agent exited"), a running dump fails on its
  // own.
  void RemoveAgent(const AgentId& agent);

  // Called with the JVM's pause after every extended dump it wrote (for the pause budget's
  // accounting, collectors/pause_budget.h). Set once, before any dump; called from the dump thread
  // with no lock of the Escalation held, so it may take the caller's own locks.
  void SetDumpPauseListener(std::function<void(const AgentId&, absl::Duration)> listener);

  // Called with the accumulation points of every dump that reaches DONE, after its reports are
  // stored, from the analysis thread with no lock of the Escalation held (it may take the
  // caller's locks). Set once, before any dump.
  void SetReportListener(std::function<void(const AnalysedDump&)> listener);

  // The accumulation points of the agent's newest DONE dump (from its stored reports), nullopt
  // when it has none. Errors: the store's errors.
  StatusOr<std::optional<AnalysedDump>> LatestAnalysedDump(const AgentId& agent) const;

  // Test seam: called on an analysis thread when the analysis of a dump starts, i.e. once it holds
  // a worker and its share of max_analysis_memory_bytes, before the raw dump is read; the analysis
  // runs when the listener returns. No lock of the Escalation is held. Tests block in it to keep an
  // analysis running while they check what waits behind it (the memory, disk and worker budgets).
  // Set once, before any dump; the daemon does not set it.
  void SetAnalysisStartListener(
      std::function<void(const AgentId&, std::string_view dump_id)> listener);

  // Record retention (daemon/record_retention.h): deletes the dump records, reports and summaries
  // that aged out with their agent's snapshots or that exceed their kind's share of
  // policy.max_bytes, keeping dumps in progress and the newest report (and covering dump) of every
  // class that a live agent flags as a suspect now. The raw dumps kept for deleted dumps are
  // deleted too. Serialized with the escalation's own record writes. Errors: the store's.
  StatusOr<RecordRetentionResult> EnforceRecordRetention(const RecordRetentionPolicy& policy);

  // Bytes of the raw dumps kept on disk now (keep_raw_dumps), which count against
  // max_dump_disk_bytes together with the dumps being written or analysed.
  uint64_t KeptRawDumpBytes() const;
  // escalation.max_dump_disk_bytes.
  uint64_t MaxDumpDiskBytes() const;

  // Requests an extended dump of a live agent now (TriggerExtendedDump). Returns the dump record:
  // a new QUEUED one, or the agent's dump that is already queued or being taken.
  // Errors: FailedPrecondition (escalation disabled), NotFound (agent not live),
  // ResourceExhausted (the agent's min_dump_interval has not passed: the message says when the next
  // dump is allowed; the analysis memory or disk budget is smaller than the estimate; the queue is
  // full), the store's errors.
  StatusOr<v1::ExtendedDump> Trigger(const AgentId& agent);

  // The newest drill-down report of `class_name` from a DONE dump of the agent.
  // Errors: NotFound (no such report), InvalidArgument, the store's errors.
  StatusOr<v1::DrillDownReport> GetReport(const AgentId& agent, std::string_view class_name) const;
  // The drill-down report of `class_name` from the agent's dump `dump_id` (also when a newer dump
  // superseded it), with the dump's record. Errors: NotFound (no such dump, the dump is not DONE,
  // or it has no report of the class), InvalidArgument (an empty argument), the store's errors.
  StatusOr<v1::DrillDownReport> GetReportOfDump(const AgentId& agent, std::string_view class_name,
                                                std::string_view dump_id) const;
  // Every dump record of the agent, newest first. Errors: the store's errors.
  StatusOr<std::vector<v1::ExtendedDump>> ListDumps(const AgentId& agent) const;
  // The difference between two DONE dumps of the agent (empty ids: the last two / the one before
  // `to_dump`), at most max_classes classes and max_owners owners (0 = all).
  // Errors: NotFound (unknown dump id, fewer than two DONE dumps), FailedPrecondition (a named dump
  // is not DONE), the store's errors.
  StatusOr<v1::ExtendedDumpDiff> Diff(const AgentId& agent, std::string_view from_dump,
                                      std::string_view to_dump, uint32_t max_classes,
                                      uint32_t max_owners) const;

 private:
  struct Impl;
  explicit Escalation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_ESCALATION_H_
