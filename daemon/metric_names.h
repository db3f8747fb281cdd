// The single list of Prometheus metric families heapwatchd exports on /metrics. Dashboards and
// alert rules (dashboards/) may only query names from this list; tests/daemon/metrics_test.cc
// checks that it equals what the daemon actually registers, and the dashboards test checks the
// Grafana dashboard against it. docs/metrics.md describes every family (type, labels, meaning).
//
// Histogram families are exposed as <name>_bucket, <name>_sum and <name>_count, as Prometheus does.
#ifndef HEAPWATCH_DAEMON_METRIC_NAMES_H_
#define HEAPWATCH_DAEMON_METRIC_NAMES_H_

#include <algorithm>
#include <array>
#include <string_view>

namespace heapwatch::daemon::metric_names {

// Per agent. Labels: agent, host, pid, main_class, jvm_version. Value 1.
inline constexpr std::string_view kAgentInfo = "heapwatch_agent_info";
// Per agent. 1 while the last collection succeeded, 0 while collections fail. Removed when the JVM
// exits.
inline constexpr std::string_view kAgentUp = "heapwatch_agent_up";
// Per agent. Unix time of the last successfully stored snapshot.
inline constexpr std::string_view kAgentLastSnapshot =
    "heapwatch_agent_last_snapshot_timestamp_seconds";
// Per (agent, class) for the top classes by bytes and every suspect.
inline constexpr std::string_view kClassBytes = "heapwatch_class_bytes";
inline constexpr std::string_view kClassInstances = "heapwatch_class_instances";
// Per (agent, class) for suspects only.
inline constexpr std::string_view kLeakSuspect = "heapwatch_leak_suspect";
inline constexpr std::string_view kLeakSuspectScore = "heapwatch_leak_suspect_score";
inline constexpr std::string_view kClassGrowthBytes = "heapwatch_class_growth_bytes_per_second";
inline constexpr std::string_view kClassGrowthInstances =
    "heapwatch_class_growth_instances_per_second";
// Leaks (groups of suspect classes with one cause, diff/leak_detector.h).
// Per (agent, leak, main_class) for current leaks only: the leak's growth in bytes per second (sum
// of its classes' Theil-Sen slopes). Removed when the leak ends (or its main class changes: the
// series with the new main_class replaces it) and when the JVM exits.
inline constexpr std::string_view kLeakGrowthBytes = "heapwatch_leak_growth_bytes_per_second";
// Per agent: number of current leaks. Created at 0 with the agent, removed when the JVM exits.
inline constexpr std::string_view kLeaks = "heapwatch_leaks";
// Per (agent, result): finished collections. result = ok | timeout | attach_error | parse_error |
// store_error.
inline constexpr std::string_view kCollections = "heapwatch_collections_total";
// Histogram over all agents: seconds from attach to stored snapshot (or failure).
inline constexpr std::string_view kCollectionDuration = "heapwatch_collection_duration_seconds";
// Collections running now.
inline constexpr std::string_view kCollectionsInFlight = "heapwatch_collections_in_flight";
// Agents by state (up, unreachable).
inline constexpr std::string_view kAgents = "heapwatch_agents";
// Size of the LMDB store on disk in bytes.
inline constexpr std::string_view kStoreSize = "heapwatch_store_size_bytes";
// The store's use per kind of data (daemon/record_retention.h StoreUsage): kind = snapshots |
// dictionary | live_set | agents | dump_records | reports | summaries | other_records |
// class_loading | string_table | agent_delivery. Bytes are LMDB pages (they sum to the live data that retention.max_bytes
// bounds); records are entries.
inline constexpr std::string_view kStoreBytes = "heapwatch_store_bytes";
inline constexpr std::string_view kStoreRecords = "heapwatch_store_records";
// LMDB write transactions the store committed since heapwatchd started (SnapshotStore::Commits():
// every write commits one, except that concurrent snapshot appends share one: group commit).
inline constexpr std::string_view kStoreCommits = "heapwatch_store_commits_total";
// Background retention runs by result (ok | error).
inline constexpr std::string_view kRetentionRuns = "heapwatch_retention_runs_total";
// gRPC requests served, by method (e.g. ListSuspects) and status code name (OK, NOT_FOUND, ...).
inline constexpr std::string_view kGrpcRequests = "heapwatch_grpc_requests_total";
// gRPC calls refused by the credential check (auth/grpc_auth.h), by reason: missing_credential,
// malformed_credential, unknown_credential (UNAUTHENTICATED), wrong_role, unknown_method
// (PERMISSION_DENIED). Exported only when a tokens file is configured, every reason from 0.
inline constexpr std::string_view kAuthFailures = "heapwatch_auth_failures_total";
// Faults the daemon met and survived (docs/fault-injection.md), by reason: store_disk_full,
// store_error, collection_timeout, jvm_exited, dump_disk_full, dump_timeout, dump_failed,
// report_write_failed, grpc_call_time_limit. Every reason from 0.
inline constexpr std::string_view kFaults = "heapwatch_faults_total";
// Extended dumps (escalation, daemon/escalation.h).
// Per (agent, result): extended dumps that ended. result = ok (analysed, reports stored) | error (the
// dump or its analysis failed) | refused (a budget refused it). Created at 0 with the agent; when
// the agent exits they are kept if it had any dump (so a failure stays visible), else removed.
inline constexpr std::string_view kExtendedDumps = "heapwatch_extended_dumps_total";
// Histogram over all agents: seconds the JVM was paused writing an extended dump (as it reports).
inline constexpr std::string_view kExtendedDumpPause = "heapwatch_extended_dump_pause_seconds";
// Histogram over all agents: seconds to analyse an extended dump (parse to stored reports).
inline constexpr std::string_view kExtendedDumpAnalysis =
    "heapwatch_extended_dump_analysis_seconds";
// Analyses running now, and dumps waiting to be taken or analysed.
inline constexpr std::string_view kExtendedDumpAnalysesInFlight =
    "heapwatch_extended_dump_analyses_in_flight";
inline constexpr std::string_view kExtendedDumpAnalysesQueued =
    "heapwatch_extended_dump_analyses_queued";
// Per (agent, class): precise retained size of a suspect's instances in its newest drill-down
// report. Removed when the agent's JVM exits.
inline constexpr std::string_view kSuspectRetained = "heapwatch_suspect_retained_bytes";
// Cost of watching (docs/collection-cost.md).
// Per agent: stop-the-world seconds the agent's class histograms caused, from the JVM's own
// sun.rt.safepointTime and safepointSyncTime across each collection. Removed when the JVM exits.
inline constexpr std::string_view kCollectionPause = "heapwatch_collection_pause_seconds_total";
// Histogram over all agents, label mode (live | all | all_after_gc): pause of one histogram.
inline constexpr std::string_view kCollectionPauseHistogram = "heapwatch_collection_pause_seconds";
// Per agent: the time the pause budget currently allows between two histograms (>= the
// configured interval; longer when the budget stretches it).
inline constexpr std::string_view kCollectionInterval = "heapwatch_collection_interval_seconds";
// Per agent: 1 when even the cheapest histogram at collection.max_interval exceeds the pause
// budget (the agent is still collected every max_interval), else 0.
inline constexpr std::string_view kPauseBudgetExceeded = "heapwatch_pause_budget_exceeded";
// Live-set series (tier 0, from hsperfdata GC counters; no pause). Per agent: heap occupancy after
// the newest collection that reclaimed the old generation (or, when none happened for a minute,
// after a young collection: an upper bound).
inline constexpr std::string_view kHeapLive = "heapwatch_heap_live_bytes";
// Per agent: Theil-Sen growth of the live set in bytes/s while the trend detector flags the live-set
// series as growing (docs/trend-detection.md, "The live set"), else 0.
inline constexpr std::string_view kHeapLiveGrowth = "heapwatch_heap_live_growth_bytes_per_second";
// Per agent, only while the live set is flagged as growing (docs/trend-detection.md, "Heap exhaustion
// forecast"): seconds until the live set reaches the maximum heap at its current growth, and the
// 90 % interval's soonest and latest ends (latest is +Inf when the flattest plausible growth is not
// positive).
inline constexpr std::string_view kHeapExhaustion = "heapwatch_heap_exhaustion_seconds";
inline constexpr std::string_view kHeapExhaustionSoonest =
    "heapwatch_heap_exhaustion_soonest_seconds";
inline constexpr std::string_view kHeapExhaustionLatest = "heapwatch_heap_exhaustion_latest_seconds";
// Per agent: committed heap and maximum heap (-Xmx), bytes.
inline constexpr std::string_view kHeapCapacity = "heapwatch_heap_capacity_bytes";
inline constexpr std::string_view kHeapMax = "heapwatch_heap_max_bytes";
// Class loading and metaspace (from hsperfdata counters, no pause; docs/class-loaders.md). Per
// agent: classes loaded now (loaded - unloaded since the JVM started), classes unloaded so far (a
// counter), metaspace in use and committed, compressed class space in use (bytes), and 1 while the
// class-loading trend reports a class loader leak (else 0).
inline constexpr std::string_view kClassesLoaded = "heapwatch_classes_loaded";
inline constexpr std::string_view kClassesUnloaded = "heapwatch_classes_unloaded_total";
inline constexpr std::string_view kMetaspaceUsed = "heapwatch_metaspace_used_bytes";
inline constexpr std::string_view kMetaspaceCapacity = "heapwatch_metaspace_capacity_bytes";
inline constexpr std::string_view kClassSpaceUsed = "heapwatch_class_space_used_bytes";
inline constexpr std::string_view kClassLoaderLeak = "heapwatch_class_loader_leak";
// Interned strings (jcmd VM.stringtable at most every collection.string_table_interval; a short
// safepoint; docs/leak-patterns.md). Per agent: strings in the JVM's string table, and their bytes
// (table entries + the String objects).
inline constexpr std::string_view kStringTableEntries = "heapwatch_string_table_entries";
inline constexpr std::string_view kStringTableBytes = "heapwatch_string_table_bytes";
// Build information. Labels: version. Value 1.
inline constexpr std::string_view kBuildInfo = "heapwatch_build_info";
// Where the daemon's web pages are (docs/web.md): web.external_url, else http://<bound pages
// address>. Labels: url. Value 1. The alert rules' annotations link to pages under it.
inline constexpr std::string_view kWebInfo = "heapwatch_web_info";

// Agent gateway (registered agents, daemon/agent_gateway.h).
// Deliveries (Histogram, LiveSet) of registered agents by result: stored (stored durably, then
// acknowledged) | duplicate (its sequence was already stored: acknowledged and dropped).
inline constexpr std::string_view kAgentDeliveries = "heapwatch_agent_deliveries_total";
// Messages and streams of registered agents the gateway refused, by reason: invalid_register,
// invalid_histogram, invalid_live_set, protocol (out of order or unsupported), already_connected,
// store_error.
inline constexpr std::string_view kAgentDeliveriesRefused =
    "heapwatch_agent_deliveries_refused_total";
// Deliveries missing in sequence gaps (the agent's buffer overflowed while it was disconnected).
inline constexpr std::string_view kAgentDeliveryGaps = "heapwatch_agent_delivery_gaps_total";
// Registered agents with an open Connect stream.
inline constexpr std::string_view kAgentsConnected = "heapwatch_agents_connected";

}  // namespace heapwatch::daemon::metric_names

namespace heapwatch::daemon {

// Every metric family name heapwatchd registers, sorted.
inline constexpr std::array kExportedMetrics = {
    metric_names::kAgentDeliveriesRefused,
    metric_names::kAgentDeliveries,
    metric_names::kAgentDeliveryGaps,
    metric_names::kAgentInfo,
    metric_names::kAgentLastSnapshot,
    metric_names::kAgentUp,
    metric_names::kAgents,
    metric_names::kAgentsConnected,
    metric_names::kAuthFailures,
    metric_names::kBuildInfo,
    metric_names::kClassBytes,
    metric_names::kClassGrowthBytes,
    metric_names::kClassGrowthInstances,
    metric_names::kClassInstances,
    metric_names::kClassLoaderLeak,
    metric_names::kClassSpaceUsed,
    metric_names::kClassesLoaded,
    metric_names::kClassesUnloaded,
    metric_names::kCollectionDuration,
    metric_names::kCollectionInterval,
    metric_names::kCollectionPauseHistogram,
    metric_names::kCollectionPause,
    metric_names::kCollectionsInFlight,
    metric_names::kCollections,
    metric_names::kExtendedDumpAnalysesInFlight,
    metric_names::kExtendedDumpAnalysesQueued,
    metric_names::kExtendedDumpAnalysis,
    metric_names::kExtendedDumpPause,
    metric_names::kExtendedDumps,
    metric_names::kFaults,
    metric_names::kGrpcRequests,
    metric_names::kHeapCapacity,
    metric_names::kHeapExhaustionLatest,
    metric_names::kHeapExhaustion,
    metric_names::kHeapExhaustionSoonest,
    metric_names::kHeapLive,
    metric_names::kHeapLiveGrowth,
    metric_names::kHeapMax,
    metric_names::kLeakGrowthBytes,
    metric_names::kLeakSuspect,
    metric_names::kLeakSuspectScore,
    metric_names::kLeaks,
    metric_names::kMetaspaceCapacity,
    metric_names::kMetaspaceUsed,
    metric_names::kPauseBudgetExceeded,
    metric_names::kRetentionRuns,
    metric_names::kStoreBytes,
    metric_names::kStoreCommits,
    metric_names::kStoreRecords,
    metric_names::kStoreSize,
    metric_names::kStringTableBytes,
    metric_names::kStringTableEntries,
    metric_names::kSuspectRetained,
    metric_names::kWebInfo,
};
static_assert(std::is_sorted(kExportedMetrics.begin(), kExportedMetrics.end()),
              "keep kExportedMetrics sorted");

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_METRIC_NAMES_H_
