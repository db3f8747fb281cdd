// heapwatchd's Prometheus metrics (prometheus-cpp): every family of daemon/metric_names.h, and the
// life cycle of the per-agent series. docs/metrics.md documents each family.
//
// Cardinality is bounded: per agent, one info/up/last-snapshot/leaks series, one collections_total
// series per result, class series only for the agent's top `top_classes` classes by bytes plus its
// suspects, and one growth series per current leak. Class series of a class that leaves that set are removed at the next snapshot; every
// series of an agent is removed by RemoveAgent() (its JVM exited).
//
// Thread-safety: thread-safe; every method may be called from any thread (one internal mutex, plus
// prometheus-cpp's own locking for scrapes).
#ifndef HEAPWATCH_DAEMON_METRICS_H_
#define HEAPWATCH_DAEMON_METRICS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/class_loading.h"
#include "common/gc.h"
#include "common/histogram.h"
#include "diff/leak_detector.h"
#include "diff/trend_detector.h"
#include "storage/snapshot_store.h"

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace heapwatch::daemon {

// Outcome of one collection, the `result` label of heapwatch_collections_total.
enum class CollectionResult {
  kOk,           // histogram collected and stored
  kTimeout,      // an attach step or the histogram reply exceeded its timeout
  kAttachError,  // the JVM could not be attached to (refused, gone, permission, protocol error)
  kParseError,   // the JVM replied with something that is not a class histogram
  kStoreError,   // the histogram could not be committed to the store
};
inline constexpr CollectionResult kAllCollectionResults[] = {
    CollectionResult::kOk, CollectionResult::kTimeout, CollectionResult::kAttachError,
    CollectionResult::kParseError, CollectionResult::kStoreError};
// "ok", "timeout", "attach_error", "parse_error", "store_error".
std::string_view CollectionResultName(CollectionResult result);

// Outcome of one extended dump, the `result` label of heapwatch_extended_dumps_total.
enum class ExtendedDumpResult {
  kOk,       // analysed and its reports stored
  kError,    // the dump or its analysis failed (JVM exited, timeout, corrupt dump, store error)
  kRefused,  // a budget refused it (disk, memory, queue)
};
// "ok", "error", "refused".
std::string_view ExtendedDumpResultName(ExtendedDumpResult result);

// A fault the daemon met and survived, the `reason` label of heapwatch_faults_total
// (docs/fault-injection.md).
enum class FaultReason {
  kStoreDiskFull,      // a snapshot or record write failed: no space (ENOSPC/EDQUOT, map full)
  kStoreError,         // a snapshot or record write failed otherwise (EIO, ...)
  kCollectionTimeout,  // a JVM did not answer an attach step or a histogram in time (hung, stopped)
  kJvmExited,          // a JVM exited during a collection or before / during its extended dump
  kDumpDiskFull,       // a JVM could not write its extended dump: no space in the dump directory
  kDumpTimeout,        // a JVM did not finish its extended dump within escalation.dump_timeout
  kDumpFailed,         // an extended dump failed otherwise (attach error, JVM error)
  kReportWriteFailed,  // an analysed dump's reports could not be stored
  kGrpcCallTimeLimit,  // a gRPC call ran past grpc.max_call_time and was cancelled by the server
  kGrpcThreadQuota,    // gRPC refused a call: no server thread left under grpc.max_threads
};
inline constexpr FaultReason kAllFaultReasons[] = {
    FaultReason::kStoreDiskFull, FaultReason::kStoreError,        FaultReason::kCollectionTimeout,
    FaultReason::kJvmExited,     FaultReason::kDumpDiskFull,      FaultReason::kDumpTimeout,
    FaultReason::kDumpFailed,    FaultReason::kReportWriteFailed, FaultReason::kGrpcCallTimeLimit,
    FaultReason::kGrpcThreadQuota};
// "store_disk_full", "store_error", "collection_timeout", "jvm_exited", "dump_disk_full",
// "dump_timeout", "dump_failed", "report_write_failed", "grpc_call_time_limit",
// "grpc_thread_quota".
std::string_view FaultReasonName(FaultReason reason);

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // What the exposer serves on /metrics. Lives as long as this object.
  std::shared_ptr<prometheus::Collectable> collectable() const;
  // The current exposition in the Prometheus text format (what a scrape returns).
  std::string ExpositionText() const;

  // Sets heapwatch_web_info{url} to 1 (replacing an earlier url): the base URL of the web pages.
  void SetWebUrl(const std::string& url);

  // Starts the series of a newly watched agent: agent_info (1), agent_up (1) and collections_total
  // at 0 for every result. Calling it again replaces the info labels.
  void AddAgent(const AgentInfo& info);
  // Sets heapwatch_agent_up (collections succeed / fail). No effect for an agent not added.
  void SetAgentUp(const AgentId& agent, bool up);
  // Removes every series of the agent (its JVM exited). No effect for an agent not added.
  void RemoveAgent(const AgentId& agent);

  // Counts a finished collection and observes its duration (seconds) in the duration histogram.
  // Collections of agents not added (e.g. removed meanwhile) only feed the histogram.
  void RecordCollection(const AgentId& agent, CollectionResult result, absl::Duration duration);
  // Collections running now.
  void SetCollectionsInFlight(int n);

  // Publishes the class series of the agent after a stored snapshot: bytes and instances for the
  // `top_classes` classes of `latest` with the most bytes (rows of one class name summed) and for
  // every suspect; the suspect, score and growth series for `suspects`; and the last-snapshot
  // timestamp. Series of classes no longer in those sets are removed. No effect for an agent not
  // added. Complexity: O(r log r) for r rows.
  void PublishSnapshot(const AgentId& agent, const Snapshot& latest,
                       const std::vector<diff::Suspect>& suspects, int top_classes);
  // The same with the exported classes already chosen and summed, e.g. by
  // diff::LeakDetector::LatestClasses (which knows each row's class without hashing its name):
  // bytes and instances for every class of `classes` (the top classes, and the suspects that are
  // in the snapshot), 0 for a suspect not among them; `time` is the snapshot's. O(c + s).
  void PublishSnapshot(const AgentId& agent, absl::Time time,
                       const std::vector<diff::ClassTotal>& classes,
                       const std::vector<diff::Suspect>& suspects);
  // Publishes the agent's current leaks: heapwatch_leaks{agent} = leaks.size() and one
  // heapwatch_leak_growth_bytes_per_second{agent, leak, main_class} per leak (its
  // growth_bytes_per_second). The series of a leak that is no longer in `leaks` is removed; a leak
  // whose main class changed gets a new series in place of the old one. No effect for an agent not
  // added. O(l log l) for l leaks.
  void PublishLeaks(const AgentId& agent, const std::vector<diff::Leak>& leaks);

  // heapwatch_extended_dumps_total{agent, result}: counts one extended dump that ended. AddAgent
  // creates the series at 0; RemoveAgent keeps them when the agent had a dump (metric_names.h).
  void RecordExtendedDump(const AgentId& agent, ExtendedDumpResult result);
  // Observes the JVM's pause (seconds) writing one extended dump.
  void ObserveExtendedDumpPause(absl::Duration pause);
  // Observes the duration (seconds) of one extended-dump analysis.
  void ObserveExtendedDumpAnalysis(absl::Duration duration);
  // Analyses running now and dumps waiting (to be taken or analysed).
  void SetExtendedDumpAnalyses(int in_flight, int queued);
  // heapwatch_suspect_retained_bytes{agent, class}. No effect for an agent not added; removed by
  // RemoveAgent.
  void SetSuspectRetained(const AgentId& agent, const std::string& class_name, uint64_t bytes);

  // Cost of watching: counts the pause (seconds) one histogram of `mode` caused the agent's JVM
  // (heapwatch_collection_pause_seconds_total{agent} and the pause histogram by mode). Agents not
  // added only feed the histogram.
  void RecordCollectionPause(const AgentId& agent, HistogramMode mode, absl::Duration pause);
  // heapwatch_collection_interval_seconds{agent} and heapwatch_pause_budget_exceeded{agent}. No
  // effect for an agent not added.
  void SetCollectionPlan(const AgentId& agent, absl::Duration interval, bool over_budget);
  // heapwatch_heap_live_bytes / _capacity_bytes / _max_bytes{agent} from a live-set point. No
  // effect for an agent not added.
  void SetLiveSet(const AgentId& agent, const LiveSetPoint& point);
  // heapwatch_heap_live_growth_bytes_per_second{agent}: the live set's growth while it is flagged
  // as growing, 0 otherwise (the series exists from the agent's first SetLiveSet, at 0, or its
  // first non-zero growth). No effect for an unknown agent.
  void SetLiveSetGrowth(const AgentId& agent, double bytes_per_second);
  // heapwatch_heap_exhaustion_seconds / _soonest_seconds / _latest_seconds{agent} from the
  // forecast (diff/heap_forecast.h; +Inf for an unbounded latest end); nullopt removes the three
  // series (the live set is not growing). No effect for an agent not added.
  void SetHeapExhaustion(const AgentId& agent, const std::optional<diff::HeapExhaustion>& forecast);

  // heapwatch_classes_loaded, heapwatch_classes_unloaded_total (raised by the counter's growth
  // since the previous call), heapwatch_metaspace_used_bytes / _capacity_bytes,
  // heapwatch_class_space_used_bytes and heapwatch_class_loader_leak{agent} from one class-loading
  // reading. No effect for an agent not added.
  void SetClassLoading(const AgentId& agent, const ClassLoadingPoint& point, bool leak);
  // heapwatch_string_table_entries / heapwatch_string_table_bytes of an agent: the strings in its
  // JVM's string table and their bytes (collectors/string_table.h StringTableStats::entries and
  // strings_bytes()). Ignored for an agent not added.
  void SetStringTable(const AgentId& agent, uint64_t entries, uint64_t bytes);

  // heapwatch_store_size_bytes.
  void SetStoreSize(uint64_t bytes);
  // heapwatch_store_commits_total, raised to `commits` (SnapshotStore::Commits(), a count that only
  // grows); a smaller value than the counter's is ignored. Thread-safe.
  void SetStoreCommits(uint64_t commits);
  // heapwatch_store_bytes{kind} and heapwatch_store_records{kind}, one series per entry (kinds as
  // daemon/record_retention.h StoreUsage names them).
  void SetStoreUsage(const std::vector<storage::KindUsage>& usage);
  // heapwatch_retention_runs_total{result="ok"|"error"}.
  void RecordRetentionRun(bool ok);
  // heapwatch_grpc_requests_total{method, code}; `code` is the canonical status name ("OK",
  // "NOT_FOUND").
  void RecordGrpcRequest(std::string_view method, std::string_view code);
  // heapwatch_auth_failures_total{reason}: creates the series of `reason` at 0 (Declare) or counts
  // one refused call (Record). `reason` is auth::RefusalReasonName's text.
  void DeclareAuthFailureReason(std::string_view reason);
  void RecordAuthFailure(std::string_view reason);
  // heapwatch_faults_total{reason}: counts one fault (every reason is exported from 0).
  // Thread-safe.
  void RecordFault(FaultReason reason);

  // Agent gateway (daemon/agent_gateway.h). heapwatch_agent_deliveries_total{result}: counts one
  // delivery of a registered agent, `result` "stored" or "duplicate" (both exported from 0).
  void RecordAgentDelivery(std::string_view result);
  // heapwatch_agent_deliveries_refused_total{reason}: one refused message or stream (the reasons of
  // metric_names::kAgentDeliveriesRefused are exported from 0).
  void RecordAgentRefusal(std::string_view reason);
  // heapwatch_agent_delivery_gaps_total: adds `missing` deliveries skipped by a sequence gap.
  void RecordAgentDeliveryGap(uint64_t missing);
  // heapwatch_agents_connected: registered agents with an open stream now.
  void SetAgentsConnected(int n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_METRICS_H_
