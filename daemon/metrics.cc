#include "daemon/metrics.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "daemon/metric_names.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

#ifndef HEAPWATCH_VERSION
#define HEAPWATCH_VERSION "unknown"
#endif

namespace heapwatch::daemon {

std::string_view CollectionResultName(CollectionResult result) {
  switch (result) {
    case CollectionResult::kOk:
      return "ok";
    case CollectionResult::kTimeout:
      return "timeout";
    case CollectionResult::kAttachError:
      return "attach_error";
    case CollectionResult::kParseError:
      return "parse_error";
    case CollectionResult::kStoreError:
      return "store_error";
  }
  return "unknown";
}

std::string_view ExtendedDumpResultName(ExtendedDumpResult result) {
  switch (result) {
    case ExtendedDumpResult::kOk:
      return "ok";
    case ExtendedDumpResult::kError:
      return "error";
    case ExtendedDumpResult::kRefused:
      return "refused";
  }
  return "unknown";
}

std::string_view FaultReasonName(FaultReason reason) {
  switch (reason) {
    case FaultReason::kStoreDiskFull:
      return "store_disk_full";
    case FaultReason::kStoreError:
      return "store_error";
    case FaultReason::kCollectionTimeout:
      return "collection_timeout";
    case FaultReason::kJvmExited:
      return "jvm_exited";
    case FaultReason::kDumpDiskFull:
      return "dump_disk_full";
    case FaultReason::kDumpTimeout:
      return "dump_timeout";
    case FaultReason::kDumpFailed:
      return "dump_failed";
    case FaultReason::kReportWriteFailed:
      return "report_write_failed";
    case FaultReason::kGrpcCallTimeLimit:
      return "grpc_call_time_limit";
    case FaultReason::kGrpcThreadQuota:
      return "grpc_thread_quota";
  }
  return "unknown";
}

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

template <typename T>
void RemoveIfSet(Family<T>* family, T*& metric) {
  if (metric != nullptr) family->Remove(metric);
  metric = nullptr;
}

template <typename Builder>
auto& RegisterFamily(Builder builder, std::string_view name, const char* help,
                     prometheus::Registry& registry) {
  return builder.Name(std::string(name)).Help(help).Register(registry);
}

// The exported values of one class of one agent (heapwatch_class_bytes, heapwatch_class_instances,
// and while the class is a suspect, the four suspect series). Kept as plain values, not as
// prometheus-cpp Gauges: Family<Gauge>::Remove searches the whole family linearly (prometheus-cpp
// 1.0.1), and a registered agent's top classes change often, so with 1,000 agents removing one
// class's series cost more than the rest of the histogram's path (docs/agents.md, "Load"). The
// series are built from these values on each scrape (ClassFamilies).
struct ClassSeries {
  double bytes = 0;
  double instances = 0;
  bool suspect = false;
  double score = 0;
  double growth_bytes = 0;
  double growth_instances = 0;
};

struct AgentSeries {
  Gauge* info = nullptr;
  Gauge* up = nullptr;
  Gauge* last_snapshot = nullptr;
  bool is_up = true;
  std::map<CollectionResult, Counter*> collections;
  std::unordered_map<std::string, ClassSeries> classes;
  std::unordered_map<std::string, Gauge*> suspect_retained;
  Gauge* leaks = nullptr;
  // leak id -> (main class of its series, heapwatch_leak_growth_bytes_per_second series)
  std::unordered_map<std::string, std::pair<std::string, Gauge*>> leak_growth;
  std::map<ExtendedDumpResult, Counter*> extended_dumps;
  Counter* pause = nullptr;
  Gauge* interval = nullptr;
  Gauge* over_budget = nullptr;
  Gauge* live = nullptr;
  Gauge* live_growth = nullptr;
  // The heap exhaustion forecast (SetHeapExhaustion): present only while there is one.
  Gauge* exhaustion = nullptr;
  Gauge* exhaustion_soonest = nullptr;
  Gauge* exhaustion_latest = nullptr;
  Gauge* capacity = nullptr;
  Gauge* max = nullptr;
  // Class loading (SetClassLoading).
  Gauge* classes_loaded = nullptr;
  Counter* classes_unloaded = nullptr;
  uint64_t unloaded_seen = 0;  // the JVM's counter at the last SetClassLoading
  Gauge* metaspace_used = nullptr;
  Gauge* metaspace_capacity = nullptr;
  Gauge* class_space_used = nullptr;
  Gauge* class_loader_leak = nullptr;
  // Interned strings (SetStringTable).
  Gauge* string_table_entries = nullptr;
  Gauge* string_table_bytes = nullptr;
};

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();

  Family<Gauge>& agent_info = RegisterFamily(prometheus::BuildGauge(), metric_names::kAgentInfo,
                                             "Labels of a watched JVM agent; value 1.", *registry);
  Family<Gauge>& agent_up = RegisterFamily(prometheus::BuildGauge(), metric_names::kAgentUp,
                                           "1 while the last class-histogram collection of the "
                                           "agent succeeded, 0 while collections fail.",
                                           *registry);
  Family<Gauge>& agent_last_snapshot =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kAgentLastSnapshot,
                     "Unix time in seconds of the agent's last stored class histogram.", *registry);
  Family<Gauge>& leak_growth = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kLeakGrowthBytes,
      "Growth in bytes per second of a current leak (a group of suspect classes with one cause): "
      "the sum of its classes' robust (Theil-Sen) growth rates.",
      *registry);
  Family<Gauge>& leaks = RegisterFamily(prometheus::BuildGauge(), metric_names::kLeaks,
                                        "Number of current leaks of the agent.", *registry);
  Family<Counter>& collections =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kCollections,
                     "Finished class-histogram collections by agent and result.", *registry);
  Family<Histogram>& collection_duration_family = RegisterFamily(
      prometheus::BuildHistogram(), metric_names::kCollectionDuration,
      "Seconds from the start of an attach to the stored snapshot (or the failure).", *registry);
  Histogram& collection_duration = collection_duration_family.Add(
      {},
      Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120});
  Family<Gauge>& in_flight_family =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kCollectionsInFlight,
                     "Class-histogram collections running now.", *registry);
  Gauge& in_flight = in_flight_family.Add({});
  Family<Gauge>& agents_family =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kAgents,
                     "Watched agents by state (up, unreachable).", *registry);
  Gauge& agents_up = agents_family.Add({{"state", "up"}});
  Gauge& agents_unreachable = agents_family.Add({{"state", "unreachable"}});
  Family<Gauge>& store_size_family =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kStoreSize,
                     "Size of the LMDB store on disk in bytes.", *registry);
  Gauge& store_size = store_size_family.Add({});
  Family<Counter>& retention_runs =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kRetentionRuns,
                     "Background retention runs of the store by result.", *registry);
  Counter& retention_ok = retention_runs.Add({{"result", "ok"}});
  Counter& retention_error = retention_runs.Add({{"result", "error"}});
  Family<Counter>& grpc_requests =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kGrpcRequests,
                     "gRPC requests served by method and status code.", *registry);
  Family<Counter>& auth_failures =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kAuthFailures,
                     "gRPC calls refused by the credential check, by reason.", *registry);
  Family<Counter>& faults = [this]() -> Family<Counter>& {
    Family<Counter>& f = RegisterFamily(
        prometheus::BuildCounter(), metric_names::kFaults,
        "Faults the daemon met and survived (disk full, hung or exited JVMs, gRPC limits), by "
        "reason.",
        *registry);
    for (FaultReason r : kAllFaultReasons) f.Add({{"reason", std::string(FaultReasonName(r))}});
    return f;
  }();
  Family<Counter>& extended_dumps = RegisterFamily(
      prometheus::BuildCounter(), metric_names::kExtendedDumps,
      "Extended dumps that ended, by agent and result (ok, error, refused).", *registry);
  Family<Histogram>& dump_pause_family = RegisterFamily(
      prometheus::BuildHistogram(), metric_names::kExtendedDumpPause,
      "Seconds a JVM was paused writing an extended dump, as the JVM reports it.", *registry);
  Histogram& dump_pause = dump_pause_family.Add(
      {}, Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300});
  Family<Histogram>& analysis_family = RegisterFamily(
      prometheus::BuildHistogram(), metric_names::kExtendedDumpAnalysis,
      "Seconds to analyse an extended dump, from reading the file to stored reports.", *registry);
  Histogram& analysis = analysis_family.Add(
      {}, Histogram::BucketBoundaries{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600});
  Family<Gauge>& analyses_in_flight_family =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kExtendedDumpAnalysesInFlight,
                     "Extended-dump analyses running now.", *registry);
  Gauge& analyses_in_flight = analyses_in_flight_family.Add({});
  Family<Gauge>& analyses_queued_family =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kExtendedDumpAnalysesQueued,
                     "Extended dumps waiting to be taken or analysed.", *registry);
  Gauge& analyses_queued = analyses_queued_family.Add({});
  Family<Gauge>& suspect_retained = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kSuspectRetained,
      "Precise retained size in bytes of a suspect class's instances, from its newest drill-down "
      "report.",
      *registry);
  Family<Counter>& collection_pause = RegisterFamily(
      prometheus::BuildCounter(), metric_names::kCollectionPause,
      "Stop-the-world seconds the agent's class histograms caused, from the JVM's own "
      "sun.rt.safepointTime and safepointSyncTime across each collection.",
      *registry);
  Family<Histogram>& collection_pause_histogram = RegisterFamily(
      prometheus::BuildHistogram(), metric_names::kCollectionPauseHistogram,
      "Pause in seconds one class histogram caused its JVM, by mode (live, all, all_after_gc).",
      *registry);
  std::map<HistogramMode, Histogram*> pause_by_mode;
  Family<Gauge>& collection_interval = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kCollectionInterval,
      "Seconds the pause budget currently allows between two histograms of the agent.", *registry);
  Family<Gauge>& pause_budget_exceeded = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kPauseBudgetExceeded,
      "1 when even the cheapest histogram every collection.max_interval exceeds the agent's "
      "pause budget.",
      *registry);
  Family<Gauge>& heap_live = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kHeapLive,
      "Heap occupancy in bytes after the agent's newest old-generation reclaim (live set), from "
      "its GC counters.",
      *registry);
  Family<Gauge>& heap_live_growth = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kHeapLiveGrowth,
      "Growth of the agent's live set in bytes/s while the trend detector flags it as growing, "
      "else 0.",
      *registry);
  Family<Gauge>& heap_exhaustion = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kHeapExhaustion,
      "Seconds until the agent's live set reaches its maximum heap at its current growth; "
      "present only while the live set is flagged as growing.",
      *registry);
  Family<Gauge>& heap_exhaustion_soonest = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kHeapExhaustionSoonest,
      "Soonest end of the 90 % interval of heapwatch_heap_exhaustion_seconds (steepest plausible "
      "growth).",
      *registry);
  Family<Gauge>& heap_exhaustion_latest = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kHeapExhaustionLatest,
      "Latest end of the 90 % interval of heapwatch_heap_exhaustion_seconds (flattest plausible "
      "growth; +Inf when that growth is not positive).",
      *registry);
  Family<Gauge>& classes_loaded = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kClassesLoaded,
      "Classes the agent's JVM has loaded and not unloaded (java.cls.loadedClasses + "
      "sharedLoadedClasses - unloaded).",
      *registry);
  Family<Counter>& classes_unloaded =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kClassesUnloaded,
                     "Classes the agent's JVM unloaded while heapwatch watched it.", *registry);
  Family<Gauge>& metaspace_used = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kMetaspaceUsed,
      "Metaspace in use by the agent's JVM in bytes (updated by the JVM at GCs).", *registry);
  Family<Gauge>& metaspace_capacity =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kMetaspaceCapacity,
                     "Metaspace committed by the agent's JVM in bytes.", *registry);
  Family<Gauge>& class_space_used =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kClassSpaceUsed,
                     "Compressed class space in use by the agent's JVM in bytes.", *registry);
  Family<Gauge>& class_loader_leak = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kClassLoaderLeak,
      "1 while the agent's class-loading trend reports a class loader leak, else 0.", *registry);
  Family<Gauge>& string_table_entries = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kStringTableEntries,
      "Interned strings in the agent's JVM string table (jcmd VM.stringtable).", *registry);
  Family<Gauge>& string_table_bytes = RegisterFamily(
      prometheus::BuildGauge(), metric_names::kStringTableBytes,
      "Bytes of the agent's interned strings: string table entries plus the String objects.",
      *registry);
  Family<Gauge>& heap_capacity =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kHeapCapacity,
                     "Committed heap of the agent in bytes.", *registry);
  Family<Gauge>& heap_max = RegisterFamily(prometheus::BuildGauge(), metric_names::kHeapMax,
                                           "Maximum heap (-Xmx) of the agent in bytes.", *registry);
  Family<Gauge>& build_info = RegisterFamily(prometheus::BuildGauge(), metric_names::kBuildInfo,
                                             "heapwatchd build information; value 1.", *registry);

  Family<Gauge>& web_info =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kWebInfo,
                     "Base URL of heapwatchd's web pages; value 1.", *registry);
  Gauge* web_url = nullptr;  // guarded by mu

  mutable std::mutex mu;
  std::unordered_map<AgentId, AgentSeries> agents;  // guarded by mu
  // The store's use per kind (SetStoreUsage).
  Family<Gauge>& store_bytes =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kStoreBytes,
                     "Bytes (LMDB pages) of the store's live data per kind of data.", *registry);
  Family<Gauge>& store_records =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kStoreRecords,
                     "Entries in the store per kind of data.", *registry);
  Counter& store_commits =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kStoreCommits,
                     "LMDB write transactions the store committed since heapwatchd started.",
                     *registry)
          .Add({});
  std::mutex store_commits_mu;  // makes SetStoreCommits' read and raise one step

  // Agent gateway (daemon/agent_gateway.h).
  Family<Counter>& agent_deliveries =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kAgentDeliveries,
                     "Deliveries of registered agents by result (stored, duplicate).", *registry);
  Family<Counter>& agent_refusals = RegisterFamily(
      prometheus::BuildCounter(), metric_names::kAgentDeliveriesRefused,
      "Messages and streams of registered agents the gateway refused, by reason.", *registry);
  Counter& agent_delivery_gaps =
      RegisterFamily(prometheus::BuildCounter(), metric_names::kAgentDeliveryGaps,
                     "Deliveries of registered agents missing in sequence gaps.", *registry)
          .Add({});
  Gauge& agents_connected =
      RegisterFamily(prometheus::BuildGauge(), metric_names::kAgentsConnected,
                     "Registered agents with an open Connect stream.", *registry)
          .Add({});

  Impl() {
    build_info.Add({{"version", HEAPWATCH_VERSION}}).Set(1);
    for (const char* r : {"stored", "duplicate"}) agent_deliveries.Add({{"result", r}});
    for (const char* r : {"invalid_register", "invalid_histogram", "invalid_live_set", "protocol",
                          "already_connected", "store_error"}) {
      agent_refusals.Add({{"reason", r}});
    }
    for (HistogramMode m :
         {HistogramMode::kLive, HistogramMode::kAll, HistogramMode::kAllAfterGc}) {
      pause_by_mode[m] = &collection_pause_histogram.Add(
          {{"mode", std::string(HistogramModeName(m))}},
          Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                      2.5, 5, 10, 30});
    }
  }

  void UpdateAgentCounts() {  // REQUIRES: mu held
    int up = 0;
    for (const auto& [id, a] : agents) up += a.is_up ? 1 : 0;
    agents_up.Set(up);
    agents_unreachable.Set(static_cast<double>(agents.size()) - up);
  }

  // The six per-class families (ClassSeries) from every agent's current values, ordered by agent
  // then class. O(agents * exported classes). Locks mu.
  std::vector<prometheus::MetricFamily> ClassFamilies() const {
    struct Spec {
      std::string_view name;
      const char* help;
      bool suspects_only;
      double ClassSeries::*value;
    };
    static const Spec kSpecs[] = {
        {metric_names::kClassBytes,
         "Shallow bytes of a class in the agent's last class histogram (top classes and suspects).",
         false, &ClassSeries::bytes},
        {metric_names::kClassInstances,
         "Instances of a class in the agent's last class histogram (top classes and suspects).",
         false, &ClassSeries::instances},
        {metric_names::kLeakSuspect, "1 while the class is a leak suspect of the agent.", true,
         nullptr},
        {metric_names::kLeakSuspectScore,
         "Confidence in [0, 1] that a suspect class keeps growing.", true, &ClassSeries::score},
        {metric_names::kClassGrowthBytes,
         "Robust (Theil-Sen) growth rate of a suspect class in bytes per second.", true,
         &ClassSeries::growth_bytes},
        {metric_names::kClassGrowthInstances,
         "Robust (Theil-Sen) growth rate of a suspect class in instances per second.", true,
         &ClassSeries::growth_instances},
    };
    std::vector<prometheus::MetricFamily> families;
    families.reserve(std::size(kSpecs));
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::pair<std::string_view, const AgentSeries*>> ordered;
    ordered.reserve(agents.size());
    for (const auto& [id, a] : agents) ordered.emplace_back(id.value, &a);
    std::sort(ordered.begin(), ordered.end());
    for (const Spec& spec : kSpecs) {
      prometheus::MetricFamily family;
      family.name = std::string(spec.name);
      family.help = spec.help;
      family.type = prometheus::MetricType::Gauge;
      for (const auto& [agent, a] : ordered) {
        std::vector<std::pair<std::string_view, const ClassSeries*>> classes;
        classes.reserve(a->classes.size());
        for (const auto& [name, c] : a->classes) {
          if (!spec.suspects_only || c.suspect) classes.emplace_back(name, &c);
        }
        std::sort(classes.begin(), classes.end());
        for (const auto& [name, c] : classes) {
          prometheus::ClientMetric metric;
          metric.label = {{"agent", std::string(agent)}, {"class", std::string(name)}};
          metric.gauge.value = spec.value == nullptr ? 1.0 : c->*spec.value;
          family.metric.push_back(std::move(metric));
        }
      }
      families.push_back(std::move(family));
    }
    return families;
  }

  // What the metrics endpoint collects: the registry's families plus the per-class families.
  class Exported : public prometheus::Collectable {
   public:
    explicit Exported(const Impl* impl) : impl_(impl) {}
    std::vector<prometheus::MetricFamily> Collect() const override {
      std::vector<prometheus::MetricFamily> families = impl_->registry->Collect();
      for (prometheus::MetricFamily& f : impl_->ClassFamilies()) families.push_back(std::move(f));
      return families;
    }

   private:
    const Impl* impl_;
  };
  std::shared_ptr<prometheus::Collectable> exported;  // set by Metrics' constructor
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  impl_->exported = std::make_shared<Impl::Exported>(impl_.get());
}
Metrics::~Metrics() = default;

std::shared_ptr<prometheus::Collectable> Metrics::collectable() const { return impl_->exported; }

std::string Metrics::ExpositionText() const {
  prometheus::TextSerializer serializer;
  return serializer.Serialize(impl_->exported->Collect());
}

void Metrics::AddAgent(const AgentInfo& info) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  AgentSeries& a = impl_->agents[info.id];
  RemoveIfSet(&impl_->agent_info, a.info);
  a.info = &impl_->agent_info.Add({{"agent", info.id.value},
                                   {"host", info.host},
                                   {"pid", std::to_string(info.pid)},
                                   {"main_class", info.main_class},
                                   {"jvm_version", info.jvm_version}});
  a.info->Set(1);
  if (a.up == nullptr) {
    a.up = &impl_->agent_up.Add({{"agent", info.id.value}});
    a.up->Set(1);
    a.is_up = true;
  }
  for (CollectionResult r : kAllCollectionResults) {
    if (!a.collections.count(r)) {
      a.collections[r] = &impl_->collections.Add(
          {{"agent", info.id.value}, {"result", std::string(CollectionResultName(r))}});
    }
  }
  if (a.pause == nullptr) a.pause = &impl_->collection_pause.Add({{"agent", info.id.value}});
  if (a.leaks == nullptr) a.leaks = &impl_->leaks.Add({{"agent", info.id.value}});
  for (ExtendedDumpResult r :
       {ExtendedDumpResult::kOk, ExtendedDumpResult::kError, ExtendedDumpResult::kRefused}) {
    if (!a.extended_dumps.count(r)) {
      a.extended_dumps[r] = &impl_->extended_dumps.Add(
          {{"agent", info.id.value}, {"result", std::string(ExtendedDumpResultName(r))}});
    }
  }
  impl_->UpdateAgentCounts();
}

void Metrics::SetAgentUp(const AgentId& agent, bool up) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  const bool changed = it->second.is_up != up;
  it->second.is_up = up;
  it->second.up->Set(up ? 1 : 0);
  // Counting is O(agents), and SetAgentUp runs on every stored histogram: only on a change.
  if (changed) impl_->UpdateAgentCounts();
}

void Metrics::RemoveAgent(const AgentId& agent) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  RemoveIfSet(&impl_->agent_info, a.info);
  RemoveIfSet(&impl_->agent_up, a.up);
  RemoveIfSet(&impl_->agent_last_snapshot, a.last_snapshot);
  for (auto& [r, counter] : a.collections) impl_->collections.Remove(counter);
  for (auto& [name, g] : a.suspect_retained) impl_->suspect_retained.Remove(g);
  for (auto& [id, series] : a.leak_growth) impl_->leak_growth.Remove(series.second);
  RemoveIfSet(&impl_->leaks, a.leaks);
  RemoveIfSet(&impl_->collection_pause, a.pause);
  RemoveIfSet(&impl_->collection_interval, a.interval);
  RemoveIfSet(&impl_->pause_budget_exceeded, a.over_budget);
  RemoveIfSet(&impl_->heap_live, a.live);
  RemoveIfSet(&impl_->heap_live_growth, a.live_growth);
  RemoveIfSet(&impl_->heap_exhaustion, a.exhaustion);
  RemoveIfSet(&impl_->heap_exhaustion_soonest, a.exhaustion_soonest);
  RemoveIfSet(&impl_->heap_exhaustion_latest, a.exhaustion_latest);
  RemoveIfSet(&impl_->heap_capacity, a.capacity);
  RemoveIfSet(&impl_->heap_max, a.max);
  RemoveIfSet(&impl_->classes_loaded, a.classes_loaded);
  RemoveIfSet(&impl_->classes_unloaded, a.classes_unloaded);
  RemoveIfSet(&impl_->metaspace_used, a.metaspace_used);
  RemoveIfSet(&impl_->metaspace_capacity, a.metaspace_capacity);
  RemoveIfSet(&impl_->class_space_used, a.class_space_used);
  RemoveIfSet(&impl_->class_loader_leak, a.class_loader_leak);
  RemoveIfSet(&impl_->string_table_entries, a.string_table_entries);
  RemoveIfSet(&impl_->string_table_bytes, a.string_table_bytes);
  // Extended-dump counters stay when the agent had a dump (a failure must stay visible after the
  // JVM died); the zero series of agents never dumped go, so short-lived JVMs leave nothing.
  bool dumped = false;
  for (auto& [r, counter] : a.extended_dumps) dumped |= counter->Value() > 0;
  if (!dumped) {
    for (auto& [r, counter] : a.extended_dumps) impl_->extended_dumps.Remove(counter);
  }
  impl_->agents.erase(it);
  impl_->UpdateAgentCounts();
}

void Metrics::RecordCollection(const AgentId& agent, CollectionResult result,
                               absl::Duration duration) {
  impl_->collection_duration.Observe(absl::ToDoubleSeconds(duration));
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  it->second.collections.at(result)->Increment();
}

void Metrics::SetCollectionsInFlight(int n) { impl_->in_flight.Set(n); }

void Metrics::PublishSnapshot(const AgentId& agent, const Snapshot& latest,
                              const std::vector<diff::Suspect>& suspects, int top_classes) {
  // Sum rows by class name (a class loaded by several class loaders has several rows).
  absl::flat_hash_map<std::string_view, std::pair<uint64_t, uint64_t>> totals;  // bytes, instances
  for (const ClassHistogramRow& row : latest.histogram.rows) {
    auto& t = totals[row.class_name];
    t.first += row.bytes;
    t.second += row.instances;
  }
  std::vector<std::pair<uint64_t, std::string_view>> by_bytes;
  by_bytes.reserve(totals.size());
  for (const auto& [name, t] : totals) by_bytes.emplace_back(t.first, name);
  size_t top = std::min(by_bytes.size(), static_cast<size_t>(std::max(top_classes, 0)));
  std::partial_sort(by_bytes.begin(), by_bytes.begin() + top, by_bytes.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  std::vector<diff::ClassTotal> classes;
  for (size_t i = 0; i < top; ++i) {
    const auto& t = totals.at(by_bytes[i].second);
    classes.push_back({std::string(by_bytes[i].second), t.first, t.second});
  }
  for (const diff::Suspect& s : suspects) {
    auto t = totals.find(s.class_name);
    if (t != totals.end()) classes.push_back({s.class_name, t->second.first, t->second.second});
  }
  PublishSnapshot(agent, latest.time, classes, suspects);
}

void Metrics::PublishSnapshot(const AgentId& agent, absl::Time time,
                              const std::vector<diff::ClassTotal>& classes,
                              const std::vector<diff::Suspect>& suspects) {
  absl::flat_hash_map<std::string_view, const diff::ClassTotal*> total_of;
  for (const diff::ClassTotal& c : classes) total_of.emplace(c.class_name, &c);
  absl::flat_hash_map<std::string_view, const diff::Suspect*> suspect_of;
  for (const diff::Suspect& s : suspects) suspect_of.emplace(s.class_name, &s);

  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  Impl& m = *impl_;
  // Drop series of classes that left the exported set.
  for (auto c = a.classes.begin(); c != a.classes.end();) {
    if (!total_of.contains(c->first) && !suspect_of.contains(c->first)) {
      c = a.classes.erase(c);
    } else {
      ++c;
    }
  }
  auto publish = [&](std::string_view name) {
    ClassSeries& c = a.classes[std::string(name)];
    auto t = total_of.find(name);
    c.bytes = t == total_of.end() ? 0 : static_cast<double>(t->second->bytes);
    c.instances = t == total_of.end() ? 0 : static_cast<double>(t->second->instances);
    auto s = suspect_of.find(name);
    c.suspect = s != suspect_of.end();
    c.score = c.suspect ? s->second->score : 0;
    c.growth_bytes = c.suspect ? s->second->growth_bytes_per_second : 0;
    c.growth_instances = c.suspect ? s->second->growth_instances_per_second : 0;
  };
  for (const diff::ClassTotal& c : classes) publish(c.class_name);
  for (const diff::Suspect& s : suspects) publish(s.class_name);
  if (a.last_snapshot == nullptr) {
    a.last_snapshot = &m.agent_last_snapshot.Add({{"agent", agent.value}});
  }
  a.last_snapshot->Set(absl::ToDoubleSeconds(time - absl::UnixEpoch()));
}

void Metrics::PublishLeaks(const AgentId& agent, const std::vector<diff::Leak>& leaks) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  Impl& m = *impl_;
  std::unordered_map<std::string_view, const diff::Leak*> current;
  for (const diff::Leak& l : leaks) current[l.id] = &l;
  for (auto g = a.leak_growth.begin(); g != a.leak_growth.end();) {
    auto c = current.find(g->first);
    if (c == current.end() || c->second->main_class != g->second.first) {
      m.leak_growth.Remove(g->second.second);
      g = a.leak_growth.erase(g);
    } else {
      ++g;
    }
  }
  for (const diff::Leak& l : leaks) {
    auto& series = a.leak_growth[l.id];
    if (series.second == nullptr) {
      series.first = l.main_class;
      series.second = &m.leak_growth.Add(
          {{"agent", agent.value}, {"leak", l.id}, {"main_class", l.main_class}});
    }
    series.second->Set(l.growth_bytes_per_second);
  }
  if (a.leaks != nullptr) a.leaks->Set(static_cast<double>(a.leak_growth.size()));
}

void Metrics::RecordExtendedDump(const AgentId& agent, ExtendedDumpResult result) {
  // Under mu: RemoveAgent reads and may remove these counters.
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it != impl_->agents.end()) {
    it->second.extended_dumps.at(result)->Increment();
    return;
  }
  impl_->extended_dumps
      .Add({{"agent", agent.value}, {"result", std::string(ExtendedDumpResultName(result))}})
      .Increment();
}

void Metrics::ObserveExtendedDumpPause(absl::Duration pause) {
  impl_->dump_pause.Observe(absl::ToDoubleSeconds(pause));
}

void Metrics::ObserveExtendedDumpAnalysis(absl::Duration duration) {
  impl_->analysis.Observe(absl::ToDoubleSeconds(duration));
}

void Metrics::SetExtendedDumpAnalyses(int in_flight, int queued) {
  impl_->analyses_in_flight.Set(in_flight);
  impl_->analyses_queued.Set(queued);
}

void Metrics::SetSuspectRetained(const AgentId& agent, const std::string& class_name,
                                 uint64_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  Gauge*& g = it->second.suspect_retained[class_name];
  if (g == nullptr)
    g = &impl_->suspect_retained.Add({{"agent", agent.value}, {"class", class_name}});
  g->Set(static_cast<double>(bytes));
}

void Metrics::RecordCollectionPause(const AgentId& agent, HistogramMode mode,
                                    absl::Duration pause) {
  const double seconds = std::max(0.0, absl::ToDoubleSeconds(pause));
  if (auto h = impl_->pause_by_mode.find(mode); h != impl_->pause_by_mode.end()) {
    h->second->Observe(seconds);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  it->second.pause->Increment(seconds);
}

void Metrics::SetCollectionPlan(const AgentId& agent, absl::Duration interval, bool over_budget) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  const Labels labels{{"agent", agent.value}};
  if (a.interval == nullptr) a.interval = &impl_->collection_interval.Add(labels);
  if (a.over_budget == nullptr) a.over_budget = &impl_->pause_budget_exceeded.Add(labels);
  a.interval->Set(absl::ToDoubleSeconds(interval));
  a.over_budget->Set(over_budget ? 1 : 0);
}

void Metrics::SetLiveSet(const AgentId& agent, const LiveSetPoint& point) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  const Labels labels{{"agent", agent.value}};
  if (a.live == nullptr) a.live = &impl_->heap_live.Add(labels);
  if (a.capacity == nullptr) a.capacity = &impl_->heap_capacity.Add(labels);
  if (a.max == nullptr) a.max = &impl_->heap_max.Add(labels);
  // The live set's growth exists from the first point on (0 until SetLiveSetGrowth says more).
  if (a.live_growth == nullptr) a.live_growth = &impl_->heap_live_growth.Add(labels);
  a.live->Set(static_cast<double>(point.live_bytes));
  a.capacity->Set(static_cast<double>(point.capacity_bytes));
  a.max->Set(static_cast<double>(point.max_bytes));
}

void Metrics::SetLiveSetGrowth(const AgentId& agent, double bytes_per_second) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  if (a.live_growth == nullptr) {
    if (bytes_per_second == 0) return;  // the series starts with the first live-set point
    a.live_growth = &impl_->heap_live_growth.Add(Labels{{"agent", agent.value}});
  }
  a.live_growth->Set(bytes_per_second);
}

void Metrics::SetHeapExhaustion(const AgentId& agent,
                                const std::optional<diff::HeapExhaustion>& forecast) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  if (!forecast.has_value()) {
    RemoveIfSet(&impl_->heap_exhaustion, a.exhaustion);
    RemoveIfSet(&impl_->heap_exhaustion_soonest, a.exhaustion_soonest);
    RemoveIfSet(&impl_->heap_exhaustion_latest, a.exhaustion_latest);
    a.exhaustion = a.exhaustion_soonest = a.exhaustion_latest = nullptr;
    return;
  }
  const Labels labels{{"agent", agent.value}};
  if (a.exhaustion == nullptr) a.exhaustion = &impl_->heap_exhaustion.Add(labels);
  if (a.exhaustion_soonest == nullptr) {
    a.exhaustion_soonest = &impl_->heap_exhaustion_soonest.Add(labels);
  }
  if (a.exhaustion_latest == nullptr) a.exhaustion_latest = &impl_->heap_exhaustion_latest.Add(labels);
  auto seconds = [](absl::Duration d) {
    return d == absl::InfiniteDuration() ? std::numeric_limits<double>::infinity()
                                         : absl::ToDoubleSeconds(d);
  };
  a.exhaustion->Set(seconds(forecast->estimate));
  a.exhaustion_soonest->Set(seconds(forecast->soonest));
  a.exhaustion_latest->Set(seconds(forecast->latest));
}

void Metrics::SetWebUrl(const std::string& url) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->web_url != nullptr) impl_->web_info.Remove(impl_->web_url);
  impl_->web_url = &impl_->web_info.Add({{"url", url}});
  impl_->web_url->Set(1);
}

void Metrics::SetClassLoading(const AgentId& agent, const ClassLoadingPoint& point, bool leak) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  const Labels labels{{"agent", agent.value}};
  if (a.classes_loaded == nullptr) a.classes_loaded = &impl_->classes_loaded.Add(labels);
  if (a.classes_unloaded == nullptr) {
    a.classes_unloaded = &impl_->classes_unloaded.Add(labels);
    a.unloaded_seen = point.unloaded_classes;
  }
  if (a.metaspace_used == nullptr) a.metaspace_used = &impl_->metaspace_used.Add(labels);
  if (a.metaspace_capacity == nullptr) {
    a.metaspace_capacity = &impl_->metaspace_capacity.Add(labels);
  }
  if (a.class_space_used == nullptr) a.class_space_used = &impl_->class_space_used.Add(labels);
  if (a.class_loader_leak == nullptr) a.class_loader_leak = &impl_->class_loader_leak.Add(labels);
  a.classes_loaded->Set(static_cast<double>(point.live_classes()));
  if (point.unloaded_classes > a.unloaded_seen) {
    a.classes_unloaded->Increment(static_cast<double>(point.unloaded_classes - a.unloaded_seen));
  }
  a.unloaded_seen = point.unloaded_classes;
  a.metaspace_used->Set(static_cast<double>(point.metaspace_used_bytes));
  a.metaspace_capacity->Set(static_cast<double>(point.metaspace_capacity_bytes));
  a.class_space_used->Set(static_cast<double>(point.class_space_used_bytes));
  a.class_loader_leak->Set(leak ? 1 : 0);
}

void Metrics::SetStringTable(const AgentId& agent, uint64_t entries, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->agents.find(agent);
  if (it == impl_->agents.end()) return;
  AgentSeries& a = it->second;
  const Labels labels{{"agent", agent.value}};
  if (a.string_table_entries == nullptr) {
    a.string_table_entries = &impl_->string_table_entries.Add(labels);
  }
  if (a.string_table_bytes == nullptr) {
    a.string_table_bytes = &impl_->string_table_bytes.Add(labels);
  }
  a.string_table_entries->Set(static_cast<double>(entries));
  a.string_table_bytes->Set(static_cast<double>(bytes));
}

void Metrics::SetStoreSize(uint64_t bytes) { impl_->store_size.Set(static_cast<double>(bytes)); }

void Metrics::RecordRetentionRun(bool ok) {
  (ok ? impl_->retention_ok : impl_->retention_error).Increment();
}

void Metrics::RecordGrpcRequest(std::string_view method, std::string_view code) {
  impl_->grpc_requests.Add({{"method", std::string(method)}, {"code", std::string(code)}})
      .Increment();
}

void Metrics::DeclareAuthFailureReason(std::string_view reason) {
  impl_->auth_failures.Add({{"reason", std::string(reason)}});
}

void Metrics::RecordAuthFailure(std::string_view reason) {
  impl_->auth_failures.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::SetStoreCommits(uint64_t commits) {
  std::lock_guard<std::mutex> lock(impl_->store_commits_mu);
  const double now = static_cast<double>(commits);
  const double exported = impl_->store_commits.Value();
  if (now > exported) impl_->store_commits.Increment(now - exported);
}

void Metrics::SetStoreUsage(const std::vector<storage::KindUsage>& usage) {
  for (const storage::KindUsage& u : usage) {
    impl_->store_bytes.Add({{"kind", u.kind}}).Set(static_cast<double>(u.bytes));
    impl_->store_records.Add({{"kind", u.kind}}).Set(static_cast<double>(u.records));
  }
}

void Metrics::RecordFault(FaultReason reason) {
  impl_->faults.Add({{"reason", std::string(FaultReasonName(reason))}}).Increment();
}

void Metrics::RecordAgentDelivery(std::string_view result) {
  impl_->agent_deliveries.Add({{"result", std::string(result)}}).Increment();
}

void Metrics::RecordAgentRefusal(std::string_view reason) {
  impl_->agent_refusals.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::RecordAgentDeliveryGap(uint64_t missing) {
  impl_->agent_delivery_gaps.Increment(static_cast<double>(missing));
}

void Metrics::SetAgentsConnected(int n) { impl_->agents_connected.Set(n); }

}  // namespace heapwatch::daemon
