#include "daemon/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "auth/grpc_auth.h"
#include "collectors/agent_identity.h"
#include "collectors/attach.h"
#include "collectors/class_histogram.h"
#include "collectors/class_loading.h"
#include "collectors/gc_counters.h"
#include "collectors/local_jvm.h"
#include "collectors/string_table.h"
#include "daemon/agent_table.h"
#include "daemon/agent_watch.h"
#include "daemon/agent_gateway.h"
#include "daemon/auth_setup.h"
#include "daemon/escalation.h"
#include "daemon/flags.h"
#include "daemon/metrics.h"
#include "daemon/agent_cost.h"
#include "daemon/class_loading_watch.h"
#include "collectors/pause_budget.h"
#include "daemon/query_server.h"
#include "daemon/record_retention.h"
#include "daemon/scheduler.h"
#include "daemon/string_table_watch.h"
#include "diff/leak_detector.h"
#include "diff/trend_detector.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "web/web_server.h"
#include "spdlog/spdlog.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// Writes "<port>\n" to `path` atomically (temp file + rename), so a reader never sees a partial
// file.
// "http://host:port" of a listen address with the port it bound ("0.0.0.0:0" -> "http://0.0.0.0:N").
std::string WebUrlOf(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  const std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  return absl::StrCat("http://", host.empty() ? "127.0.0.1" : host, ":", port);
}

Status WritePortFile(const std::string& path, int port) {
  if (path.empty()) return absl::OkStatus();
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    out.flush();
    if (!out) {
      return absl::InternalError(
          absl::StrCat("cannot write port file ", tmp, ": ", std::strerror(errno)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

CollectionResult ClassifyAttachError(const Status& s) {
  return s.code() == absl::StatusCode::kDeadlineExceeded ? CollectionResult::kTimeout
                                                         : CollectionResult::kAttachError;
}

std::string Describe(const AgentInfo& info) { return DescribeAgent(info); }

// Process identity used by discovery: (pid, start ticks) names one process for its whole life.
using ProcessKey = std::pair<int64_t, uint64_t>;

// What /metrics collects: `metrics`' families, with heapwatch_store_commits_total first brought up
// to the store's count (an atomic read), so that each scrape sees every commit so far. `store` and
// `metrics` must outlive every Collect (the web server, which calls it, stops before they go).
class ScrapedMetrics : public prometheus::Collectable {
 public:
  ScrapedMetrics(const storage::SnapshotStore* store, Metrics* metrics)
      : store_(store), metrics_(metrics), exported_(metrics->collectable()) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    metrics_->SetStoreCommits(store_->Commits());
    return exported_->Collect();
  }

 private:
  const storage::SnapshotStore* store_;
  Metrics* metrics_;
  std::shared_ptr<prometheus::Collectable> exported_;
};

}  // namespace

struct Daemon::Impl {
  // One watched agent: what its collection touches (one collection per agent runs at a time) and
  // its AgentWatch.
  struct Runtime {
    AgentInfo info;
    collectors::LocalJvm jvm;
    bool all_objects = false;
    // The agent's detectors and leak state: the one ingestion path of both kinds of agents
    // (daemon/agent_watch.h); thread-safe on its own.
    std::unique_ptr<AgentWatch> watch;
    // "Histogram now" (CollectHistogram) of an attach agent, all guarded by Impl::mu: the mode the
    // next collection must use instead of the budget's choice, and how many requested collections
    // ended (with the last one's snapshot, or why it failed).
    std::optional<HistogramMode> requested_mode;
    uint64_t requested_done = 0;
    std::optional<Snapshot> requested_snapshot;
    std::string requested_error;

    // Cost of watching and the live-set series (daemon/agent_cost.h); thread-safe on its own.
    std::unique_ptr<AgentCost> cost;
    // Class-loading readings (GC sampler thread only): the last one, and whether the last
    // AppendClassLoading failed (logged once per failing streak).
    absl::Time class_loading_read = absl::InfinitePast();
    bool class_loading_store_failing = false;
    // Interned-string readings (VM.stringtable) of an attach agent, when
    // collection.string_table_interval is not 0; collection thread only.
    absl::Time string_table_read = absl::InfinitePast();  // last attempt
    bool string_table_failing = false;  // the last reading failed (logged once per streak)
    // The last AppendStringTable failed (logged once per failing streak); collection thread only.
    bool string_table_store_failing = false;
  };

  // Per discovered process: the agent it became, or why not.
  struct Known {
    enum Kind { kWatched, kIgnored, kRetry } kind = kRetry;
    AgentId id;
    int attempts = 0;  // failed attempts so far (kRetry)
  };
  // A JVM whose labels cannot be read is retried at every discovery; it is logged (once) as a
  // warning only after this many attempts, since a starting JVM takes a moment to publish its
  // PerfData.
  static constexpr int kQuietAttempts = 5;
  std::set<int64_t> warned_unreadable;  // discovery thread only

  Config config;
  std::string host = HostName();
  collectors::AttachOptions attach;
  std::unique_ptr<storage::SnapshotStore> store;
  Metrics metrics;
  AgentTable agents;
  Scheduler scheduler;
  std::unique_ptr<Escalation> escalation;
  std::unique_ptr<QueryServer> grpc;
  // What the web server's /metrics collects (it holds a weak_ptr); declared before `web`, so that
  // it outlives the server.
  std::shared_ptr<ScrapedMetrics> scraped_metrics;
  // /metrics and the web pages (docs/web.md); replaces prometheus-cpp's Exposer, which could serve
  // nothing but metrics.
  std::unique_ptr<web::WebServer> web;
  int metrics_port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                                 // guarded by mu
  std::map<AgentId, std::shared_ptr<Runtime>> runtimes;  // guarded by mu: the live agents
  std::map<ProcessKey, Known> known;                     // discovery thread only
  int in_flight = 0;                                     // guarded by mu
  int live_workers = 0;                                  // guarded by mu
  bool store_failing = false;                            // guarded by mu; for state-change logs
  std::vector<std::thread> workers;
  std::thread discovery;
  std::thread gc_sampler;
  bool shut_down = false;
  // Agent gateway (daemon/agent_gateway.h; null when agents.listen is empty). Agents registered
  // through it: discovery does not collect them through the attach socket.
  std::unique_ptr<RegisteredAgentSink> gateway_sink;
  std::unique_ptr<AgentGateway> gateway;
  std::unique_ptr<AttachDumpSource> attach_dumps;  // the escalation's source for attach agents
  std::set<AgentId> registered;  // guarded by mu

  explicit Impl(const Config& c)
      : config(c),
        scheduler(SchedulerOptions{c.collection.interval, c.collection.jitter,
                                   c.collection.backoff_initial, c.collection.backoff_max, 0},
                  Clock::Real()) {
    attach.handshake_timeout = c.collection.handshake_timeout;
    attach.connect_timeout = c.collection.connect_timeout;
    attach.io_timeout = c.collection.io_timeout;
    attach.max_reply_bytes = c.collection.max_reply_bytes;
  }

  // ---- retention of every record kind (daemon/record_retention.h) ----

  // Records over their shares go first (so they do not push out snapshots), then the store's
  // snapshot retention, then the records whose snapshots it just deleted; then the per-kind
  // metrics.
  Status EnforceAllRetention() {
    RecordRetentionPolicy policy;
    policy.max_bytes = config.retention.max_bytes;
    Status s = escalation->EnforceRecordRetention(policy).status();
    if (s.ok()) s = store->EnforceRetention();
    if (s.ok()) s = escalation->EnforceRecordRetention(policy).status();
    if (auto usage = StoreUsage(*store); usage.ok()) metrics.SetStoreUsage(*usage);
    return s;
  }

  // ---- discovery thread ----

  void DiscoveryLoop() {
    absl::Time next_retention = absl::Now() + config.retention.check_interval;
    bool retention_failing = false;  // for state-change logs
    while (true) {
      DiscoverOnce();
      auto bytes = store->DiskBytes();
      if (bytes.ok()) metrics.SetStoreSize(*bytes);
      if (absl::Now() >= next_retention) {
        next_retention = absl::Now() + config.retention.check_interval;
        Status s = EnforceAllRetention();
        metrics.RecordRetentionRun(s.ok());
        if (!s.ok() && !retention_failing) {
          spdlog::error("store retention failed, will retry every {}: {}",
                        FormatDurationText(config.retention.check_interval), s.ToString());
        } else if (s.ok() && retention_failing) {
          spdlog::info("store retention succeeds again");
        }
        retention_failing = !s.ok();
      }
      std::unique_lock<std::mutex> lock(mu);
      if (cv.wait_for(lock, absl::ToChronoMilliseconds(config.collection.discovery_interval),
                      [this] { return stopping; })) {
        return;
      }
    }
  }

  // Processes with an hsperfdata file whose memory map heapwatchd may not read: a JVM of another
  // user seen by a daemon without CAP_SYS_PTRACE (or a stale file whose pid was reused). Said once
  // per process, since nothing else would tell why such a JVM is not watched.
  void WarnUnreadable(const std::vector<int64_t>& pids) {
    std::set<int64_t> now(pids.begin(), pids.end());
    for (int64_t pid : now) {
      if (warned_unreadable.contains(pid)) continue;
      spdlog::warn(
          "process {} has an hsperfdata file but heapwatchd may not read /proc/{}/maps: if it is a "
          "JVM of another user, heapwatchd lacks CAP_SYS_PTRACE and cannot watch it "
          "(docs/deployment.md)",
          pid, pid);
    }
    warned_unreadable = std::move(now);
  }

  void DiscoverOnce() {
    collectors::DiscoveryOptions discovery;
    std::vector<int64_t> unreadable;
    discovery.unreadable = &unreadable;
    std::vector<collectors::LocalJvm> jvms = collectors::DiscoverLocalJvms(discovery);
    WarnUnreadable(unreadable);
    std::set<ProcessKey> seen;
    for (const collectors::LocalJvm& jvm : jvms) {
      ProcessKey key{jvm.pid, jvm.start_ticks};
      seen.insert(key);
      auto it = known.find(key);
      if (it != known.end() && it->second.kind != Known::kRetry) continue;
      const int attempts = it == known.end() ? 0 : it->second.attempts;
      Known result = AddJvm(jvm, attempts);
      if (result.kind == Known::kRetry) result.attempts = attempts + 1;
      known[key] = result;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stopping) return;
      }
    }
    for (auto it = known.begin(); it != known.end();) {
      if (seen.count(it->first)) {
        ++it;
        continue;
      }
      if (it->second.kind == Known::kWatched && !IsRegistered(it->second.id)) {
        RemoveAgent(it->second.id, "its JVM exited");
      }
      it = known.erase(it);
    }
  }

  // Starts watching a newly discovered JVM; `attempts` is how often this failed before.
  Known AddJvm(const collectors::LocalJvm& jvm, int attempts) {
    auto info = collectors::ReadAgentInfo(jvm, host);
    if (!info.ok()) {
      // Typically a JVM still initialising its PerfData; retried at the next discovery.
      if (attempts + 1 == kQuietAttempts) {
        spdlog::warn("JVM pid {}: cannot read its agent labels, will keep retrying: {}", jvm.pid,
                     info.status().ToString());
      } else {
        spdlog::debug("JVM pid {}: cannot read its agent labels yet: {}", jvm.pid,
                      info.status().ToString());
      }
      return {Known::kRetry, {}};
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (registered.contains(info->id)) return {Known::kRetry, {}};  // its agent delivers
    }
    if (!config.watch.agents.Matches(info->main_class)) {
      spdlog::debug("JVM pid {} ({}) is not watched (watch.agents)", jvm.pid, info->main_class);
      return {Known::kIgnored, info->id};
    }
    Status put = store->PutAgent(*info);
    if (!put.ok()) {
      if (attempts == 0) {
        spdlog::error("agent {}: cannot record it in the store, will retry: {}", Describe(*info),
                      put.ToString());
      }
      return {Known::kRetry, {}};
    }
    AgentStatus status;
    size_t replayed = 0;
    WatchUpdate update;
    std::shared_ptr<Runtime> rt = NewRuntime(*info, &jvm, &status, &update, &replayed);

    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return {Known::kRetry, {}};
    metrics.AddAgent(*info);
    if (replayed > 0) PublishReplayedLocked(info->id, update);
    runtimes[info->id] = rt;
    scheduler.Add(info->id);
    if (auto s = scheduler.Get(info->id)) status.next_collection = s->next_due;
    const size_t suspect_count = status.suspects.size();
    const size_t leak_count = status.leaks.size();
    agents.Put(std::move(status));
    cv.notify_all();
    spdlog::info("watching agent {}: JVM {}, {}{}{}", Describe(*info), info->jvm_version,
                 rt->all_objects ? "-all histograms only (collection.all_objects)"
                                 : absl::StrFormat("histograms under a %.3g%% pause budget",
                                                   config.collection.pause_budget * 100),
                 replayed > 0 ? absl::StrFormat(", replayed %d stored snapshots", replayed) : "",
                 suspect_count == 0
                     ? ""
                     : absl::StrFormat(", %d suspects in %d leaks", suspect_count, leak_count));
    return {Known::kWatched, info->id};
  }

  // Most snapshots a replay reads, whatever the horizon.
  static constexpr size_t kMaxReplaySnapshots = 20'000;

  // How far back from the newest stored snapshot a replay reads: the longest time scale's lookback
  // (max_time_scale * scale_lookback_buckets) or the cycle veto's horizon, whichever is longer.
  absl::Duration ReplayHorizon() const {
    const diff::LeakOptions& o = config.trend;
    absl::Duration h = o.cycle_lookback;
    if (o.enable_time_scales) {
      h = std::max(h, o.max_time_scale * static_cast<int64_t>(o.scale_lookback_buckets));
    }
    return h;
  }

  // The runtime of a newly watched agent (`jvm`: its process, nullptr for a registered agent), its
  // detectors rebuilt from the store (AgentWatch::Replay), and its first status. `replayed`: how
  // many stored snapshots the replay took.
  std::shared_ptr<Runtime> NewRuntime(const AgentInfo& info, const collectors::LocalJvm* jvm,
                                      AgentStatus* status, WatchUpdate* update, size_t* replayed) {
    auto rt = std::make_shared<Runtime>();
    rt->info = info;
    if (jvm != nullptr) rt->jvm = *jvm;
    rt->all_objects = config.collection.all_objects.Matches(info.main_class);
    AgentWatchOptions options;
    options.trend = config.trend;
    options.top_classes = static_cast<size_t>(std::max(config.exporter.top_classes, 0));
    // The interned-string trend reads VM.stringtable through the attach socket.
    options.string_table =
        jvm != nullptr && config.collection.string_table_interval > absl::ZeroDuration();
    rt->watch = std::make_unique<AgentWatch>(info, options, store.get());
    rt->cost = std::make_unique<AgentCost>(BudgetOptions(), config.collection.gc_sample_interval,
                                           absl::Now());
    if (jvm != nullptr) {
      if (auto counters = collectors::ReadGcCountersFile(jvm->perfdata_path); counters.ok()) {
        rt->cost->Observe(absl::Now(), *counters, /*forced=*/false);  // the baseline
      }
    }
    status->info = info;
    status->all_objects = rt->all_objects;
    status->watched_since = absl::Now();
    status->planned_interval = config.collection.interval;
    std::vector<diff::LeakDetector::AccumulationPoint> points;
    auto analysed = escalation->LatestAnalysedDump(info.id);
    if (analysed.ok() && analysed->has_value() && !(*analysed)->points.empty()) {
      points = (*analysed)->points;
      status->analysed_dump_id = (*analysed)->dump_id;
    }
    AgentWatch::Replayed r;
    *update = rt->watch->Replay(ReplayHorizon(), kMaxReplaySnapshots, points, &r);
    *replayed = r.snapshots;
    status->last_snapshot_time = r.last_snapshot_time;
    status->class_loading = update->class_loading;
    ApplyUpdate(*update, status);
    return rt;
  }

  // What a replay rebuilt, on /metrics: the newest snapshot's classes, the leaks, the class-loading
  // and string-table readings. REQUIRES: mu held.
  void PublishReplayedLocked(const AgentId& id, const WatchUpdate& update) {
    auto latest = store->ReadLatestAtOrBefore(id, absl::InfiniteFuture());
    if (latest.ok() && latest->has_value()) {
      metrics.PublishSnapshot(id, **latest, update.suspects, config.exporter.top_classes);
    }
    PublishLocked(id, update);
    if (update.class_loading.has_value()) {
      metrics.SetClassLoading(id, *update.class_loading, update.class_loader_leak);
    }
    if (update.string_table.has_value()) {
      metrics.SetStringTable(id, update.string_table->entries,
                             update.string_table->strings_bytes());
    }
  }

  // An AgentWatch update in the agent's status.
  static void ApplyUpdate(const WatchUpdate& update, AgentStatus* s) {
    s->suspects = update.suspects;
    s->leaks = update.leaks;
    s->live_set_growth = update.live_set_growth;
    s->heap_exhaustion = update.exhaustion;
  }

  // Publishes what an AgentWatch update says: the leaks, the live set's growth and the heap
  // exhaustion forecast on /metrics, the suspects and leaks in the agent table. The one place where
  // the detectors' results leave for the outside (plus the snapshot's classes in Succeeded).
  // REQUIRES: mu held.
  void PublishLocked(const AgentId& id, const WatchUpdate& update) {
    metrics.PublishLeaks(id, update.leaks);
    metrics.SetLiveSetGrowth(
        id, update.live_set_growth ? update.live_set_growth->growth_bytes_per_second : 0);
    metrics.SetHeapExhaustion(id, update.exhaustion);
    agents.Update(id, [&](AgentStatus& s) { ApplyUpdate(update, &s); });
  }

  // Histograms are wanted sooner (AgentWatch::WantsConfirmation: exact live-set points for the
  // growth probe, or a heap leak whose classes are not named yet): the attach agent's next one is
  // brought forward to AgentWatch::ConfirmationSpacing after the last one (long enough for the leak
  // to show between them); the pause budget (AgentCost::PlanConfirmation) still decides when it
  // may start. REQUIRES: mu held.
  void RequestConfirmationLocked(const AgentId& id, const Runtime& rt) {
    if (rt.info.kind != AgentKind::kLocalAttach) return;  // a registered agent plans its own
    const absl::Time last = rt.cost->last_start();
    const absl::Time at =
        last == absl::InfinitePast() ? absl::Now() : last + rt.watch->ConfirmationSpacing();
    if (scheduler.DueBy(id, at)) {
      spdlog::debug("agent {}: next histogram brought forward to {} ({})", Describe(rt.info),
                    absl::FormatTime(at), rt.watch->WhySooner());
      cv.notify_all();
    }
  }

  // An extended dump of the agent was analysed: its accumulation points regroup the agent's leaks.
  void OnReport(const AnalysedDump& dump) {
    std::shared_ptr<Runtime> rt;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(dump.agent);
      if (it == runtimes.end()) return;
      rt = it->second;
    }
    spdlog::info("agent {}: extended dump {} names the accumulation points of {} classes",
                 Describe(rt->info), dump.dump_id, dump.points.size());
    const WatchUpdate update = rt->watch->SetAccumulationPoints(dump.points);
    std::lock_guard<std::mutex> lock(mu);
    auto it = runtimes.find(dump.agent);
    if (it == runtimes.end() || it->second != rt) return;
    PublishLocked(dump.agent, update);
    agents.Update(dump.agent, [&](AgentStatus& s) { s.analysed_dump_id = dump.dump_id; });
  }

  // ExplainSuspect: the live agent's detector explains the class; nullopt when not live.
  std::optional<diff::Explanation> Explain(const AgentId& id, std::string_view class_name) {
    std::shared_ptr<Runtime> rt;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(id);
      if (it == runtimes.end()) return std::nullopt;
      rt = it->second;
    }
    return rt->watch->Explain(class_name);
  }

  void RemoveAgent(const AgentId& id, std::string_view why) {
    std::shared_ptr<Runtime> rt;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(id);
      if (it == runtimes.end()) return;
      rt = it->second;
      runtimes.erase(it);
      scheduler.Remove(id);
      agents.Remove(id);
      metrics.RemoveAgent(id);
    }
    escalation->RemoveAgent(id);
    spdlog::info("agent {} is down: {}", Describe(rt->info), why);
  }

  // ---- worker threads ----

  void WorkerLoop() {
    while (true) {
      AgentId id;
      std::shared_ptr<Runtime> rt;
      HistogramMode mode = HistogramMode::kLive;
      bool requested = false;
      {
        std::unique_lock<std::mutex> lock(mu);
        while (true) {
          if (stopping) {
            --live_workers;
            cv.notify_all();
            return;
          }
          std::vector<AgentId> due = scheduler.TakeDue(1);
          if (!due.empty()) {
            id = due.front();
            auto it = runtimes.find(id);
            if (it != runtimes.end()) {
              rt = it->second;
              if (rt->requested_mode.has_value()) {  // asked for: the budget does not hold it back
                mode = *rt->requested_mode;
                rt->requested_mode.reset();
                requested = true;
                break;
              }
              PausePlan plan = PlanCollection(id, *rt);
              if (plan.mode.has_value()) {
                mode = *plan.mode;
                break;
              }
              scheduler.Postpone(id, plan.retry_at);
              const absl::Time last_start = rt->cost->last_start();  // InfinitePast at first
              absl::Duration planned = config.collection.interval;
              agents.Update(id, [&](AgentStatus& s) {
                s.next_collection = plan.retry_at;
                if (!plan.note.empty()) s.budget_note = plan.note;
                s.over_budget = plan.over_budget;
                // What the budget allows now: at least until the postponed collection.
                if (last_start != absl::InfinitePast() && plan.retry_at != absl::InfiniteFuture()) {
                  s.planned_interval = std::max(s.planned_interval, plan.retry_at - last_start);
                }
                planned = s.planned_interval;
              });
              metrics.SetCollectionPlan(id, planned, plan.over_budget);
              rt.reset();
              continue;
            }
            scheduler.Remove(id);  // cannot happen: runtimes and scheduler change together under mu
            continue;
          }
          absl::Duration wait = absl::Seconds(1);
          if (auto next = scheduler.NextDue()) {
            wait = std::clamp(*next - absl::Now(), absl::Milliseconds(1), absl::Seconds(1));
          }
          cv.wait_for(lock, absl::ToChronoMicroseconds(wait));
        }
        metrics.SetCollectionsInFlight(++in_flight);
      }
      bool ok = Collect(id, *rt, mode);
      std::lock_guard<std::mutex> lock(mu);
      metrics.SetCollectionsInFlight(--in_flight);
      scheduler.Finish(id, ok);
      if (requested) {
        ++rt->requested_done;
        rt->requested_snapshot.reset();
        rt->requested_error.clear();
        auto got = agents.Get(id);
        if (ok) {
          auto latest = store->ReadLatestAtOrBefore(id, absl::InfiniteFuture());
          if (latest.ok() && latest->has_value()) rt->requested_snapshot = **latest;
        }
        if (!rt->requested_snapshot.has_value()) {
          rt->requested_error = got.has_value() && !got->last_error.empty()
                                    ? got->last_error
                                    : std::string("the collection failed");
        }
      }
      if (rt->requested_mode.has_value()) scheduler.Expedite(id, absl::InfinitePast());
      if (rt->watch->WantsConfirmation() && runtimes.count(id) && runtimes.at(id) == rt) {
        RequestConfirmationLocked(id, *rt);
      }
      auto sched = scheduler.Get(id);
      if (sched && runtimes.count(id) && runtimes.at(id) == rt) {
        agents.Update(id, [&](AgentStatus& s) { s.next_collection = sched->next_due; });
      }
      cv.notify_all();
    }
  }

  PauseBudgetOptions BudgetOptions() const {
    PauseBudgetOptions o;
    o.fraction = config.collection.pause_budget;
    o.credit_window = config.collection.pause_budget_window;
    o.confirmation_window = config.collection.confirmation_window;
    o.max_interval = std::max(config.collection.max_interval, config.collection.interval);
    return o;
  }

  // What the pause budget allows for an agent the scheduler just handed out (REQUIRES: mu held).
  PausePlan PlanCollection(const AgentId& id, Runtime& rt) {
    const absl::Time now = absl::Now();
    absl::Time due_since = now;
    if (auto sched = scheduler.Get(id)) due_since = std::min(now, sched->due_since);
    // Histograms wanted sooner (a growth being confirmed, a heap leak whose classes are not named
    // yet) may spend one window of budget in advance.
    const bool sooner = rt.watch->WantsConfirmation();
    PausePlan plan = sooner ? rt.cost->PlanConfirmation(now, due_since, config.collection.interval)
                            : rt.cost->Plan(now, due_since, config.collection.interval);
    if (sooner) {
      spdlog::debug("agent {}: histogram wanted sooner ({}): {}", Describe(rt.info),
                    rt.watch->WhySooner(),
                    plan.mode.has_value() ? std::string(HistogramModeName(*plan.mode))
                                          : absl::StrCat("waits: ", plan.note));
    }
    if (plan.mode == HistogramMode::kLive && rt.all_objects) plan.mode = HistogramMode::kAll;
    return plan;
  }

  // Feeds one reading of an agent's GC counters to its live-set tracker; stores the point it
  // completes and hands it to the agent's watch. After a natural old-generation reclaim, makes the
  // agent due at once if its interval has (nearly) passed. `forced`: the reading follows
  // heapwatch's own histogram.
  void OnGcCounters(const AgentId& id, Runtime& rt, const collectors::GcCounters& counters,
                    bool forced) {
    const AgentCost::Observation o = rt.cost->Observe(absl::Now(), counters, forced);
    if (o.after_young.has_value() &&
        rt.watch->IngestUpperBound(o.after_young->time, o.after_young->bytes,
                                   o.after_young->max_bytes)) {
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(id);
      if (it != runtimes.end() && it->second.get() == &rt) RequestConfirmationLocked(id, rt);
    }
    if (o.point.has_value()) {
      Status stored = store->AppendLiveSet(id, *o.point);
      if (!rt.cost->ExchangeLiveSetStoreFailing(!stored.ok()) && !stored.ok()) {
        spdlog::error("agent {}: cannot store a live-set point: {}", Describe(rt.info),
                      stored.ToString());
      }
      const WatchUpdate update = rt.watch->IngestLiveSet(*o.point);
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(id);
      if (it != runtimes.end() && it->second.get() == &rt) {
        metrics.SetLiveSet(id, *o.published);
        PublishLocked(id, update);
        agents.Update(id, [&](AgentStatus& s) { s.live_set = o.published; });
        if (update.wants_confirmation) RequestConfirmationLocked(id, rt);
      }
    }
    if (o.natural_old_gc && !forced) {
      const absl::Duration early =
          config.collection.interval * (1 - config.collection.jitter);
      std::lock_guard<std::mutex> lock(mu);
      if (runtimes.count(id) && scheduler.Expedite(id, o.last_start + early)) cv.notify_all();
    }
  }

  // How often the GC sampler reads an attach agent's class-loading counters: every
  // collection.interval, but at least every kClassLoadingSpacing (15 s) and at most every
  // gc_sample_interval. Read once per histogram before, a class loader leak waited for 13
  // histograms (12 minutes at the defaults); the counters cost no pause, only a point in the store
  // (about 5,800 a day per agent, retained with the snapshots).
  static constexpr absl::Duration kClassLoadingSpacing = absl::Seconds(15);
  absl::Duration ClassLoadingSpacing() const {
    return std::max(config.collection.gc_sample_interval,
                    std::min(kClassLoadingSpacing, config.collection.interval));
  }

  // Reads the agent's class-loading counters (zero pause) when ClassLoadingSpacing() has passed,
  // feeds its class-loading trend and publishes the reading. GC sampler thread only.
  void OnClassLoading(const AgentId& id, Runtime& rt) {
    const absl::Time now = absl::Now();
    // A reading a little early (the sampler's tick drifts) still counts: 90 % of the spacing.
    if (now - rt.class_loading_read < ClassLoadingSpacing() * 0.9) return;
    rt.class_loading_read = now;
    auto point = collectors::ReadClassLoadingFile(rt.jvm.perfdata_path, now);
    if (!point.ok()) return;  // the GC sampler already warns when the file cannot be read
    // Stored first (the series survives a restart and is retained with the snapshots).
    Status stored = store->AppendClassLoading(id, *point);
    if (!stored.ok() && !rt.class_loading_store_failing) {
      spdlog::error("agent {}: cannot store a class-loading point: {}", Describe(rt.info),
                    stored.ToString());
    }
    rt.class_loading_store_failing = !stored.ok();
    const WatchUpdate update = rt.watch->IngestClassLoading(*point);
    std::lock_guard<std::mutex> lock(mu);
    auto it = runtimes.find(id);
    if (it == runtimes.end() || it->second.get() != &rt) return;
    metrics.SetClassLoading(id, *point, update.class_loader_leak);
    agents.Update(id, [&](AgentStatus& s) { s.class_loading = *point; });
  }

  // Reads the agent's string table (jcmd VM.stringtable) when collection.string_table_interval
  // has passed since the last reading, feeds the interned-string trend and publishes the reading.
  // The command runs at a safepoint: its pause, from the JVM's safepoint counter around it, is
  // spent from the pause budget like a dump's (docs/leak-patterns.md).
  void OnStringTable(const AgentId& id, Runtime& rt) {
    if (rt.info.kind != AgentKind::kLocalAttach ||
        config.collection.string_table_interval <= absl::ZeroDuration()) {
      return;
    }
    const absl::Time start = absl::Now();
    if (start - rt.string_table_read < config.collection.string_table_interval) return;
    rt.string_table_read = start;
    auto before = collectors::ReadGcCountersFile(rt.jvm.perfdata_path);
    auto stats = collectors::CollectStringTable(rt.jvm, attach);
    auto after = collectors::ReadGcCountersFile(rt.jvm.perfdata_path);
    absl::Duration pause = absl::ZeroDuration();
    if (before.ok() && after.ok()) pause = collectors::SafepointTimeBetween(*before, *after);
    const absl::Duration total = rt.cost->RecordDump(absl::Now(), pause);
    if (!stats.ok()) {
      if (!rt.string_table_failing) {
        spdlog::warn("agent {}: cannot read its string table (no interned-string trend): {}",
                     Describe(rt.info), stats.status().ToString());
      }
      rt.string_table_failing = true;
    } else {
      if (rt.string_table_failing) {
        spdlog::info("agent {}: its string table is read again", Describe(rt.info));
      }
      rt.string_table_failing = false;
      // Stored first (the series survives a restart and is retained with the snapshots).
      Status stored = store->AppendStringTable(id, *stats);
      if (!stored.ok() && !rt.string_table_store_failing) {
        spdlog::error("agent {}: cannot store a string-table point: {}", Describe(rt.info),
                      stored.ToString());
      }
      rt.string_table_store_failing = !stored.ok();
      rt.watch->IngestStringTable(*stats);
    }
    std::lock_guard<std::mutex> lock(mu);
    auto it = runtimes.find(id);
    if (it == runtimes.end() || it->second.get() != &rt) return;
    if (stats.ok()) metrics.SetStringTable(id, stats->entries, stats->strings_bytes());
    agents.Update(id, [&](AgentStatus& s) { s.total_pause = total; });
  }

  // An extended dump paused the agent's JVM: it counts against the budget's accounting.
  void OnDumpPause(const AgentId& id, absl::Duration pause) {
    std::shared_ptr<Runtime> rt;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(id);
      if (it == runtimes.end()) return;
      rt = it->second;
    }
    const absl::Duration total = rt->cost->RecordDump(absl::Now(), pause);
    std::lock_guard<std::mutex> lock(mu);
    agents.Update(id, [&](AgentStatus& s) { s.total_pause = total; });
  }

  // ---- GC sampler thread: reads every agent's GC counters each gc_sample_interval ----

  void GcSamplerLoop() {
    while (true) {
      std::vector<std::pair<AgentId, std::shared_ptr<Runtime>>> live;
      {
        std::unique_lock<std::mutex> lock(mu);
        if (cv.wait_for(lock, absl::ToChronoMilliseconds(config.collection.gc_sample_interval),
                        [this] { return stopping; })) {
          return;
        }
        live.assign(runtimes.begin(), runtimes.end());
      }
      for (auto& [id, rt] : live) {
        if (rt->info.kind == AgentKind::kRegistered) continue;  // its agent reports the live set
        auto counters = collectors::ReadGcCountersFile(rt->jvm.perfdata_path);
        if (!rt->cost->ExchangeCountersFailing(!counters.ok()) && !counters.ok()) {
          spdlog::warn("agent {}: cannot read its GC counters (no live-set series): {}",
                       Describe(rt->info), counters.status().ToString());
        }
        if (counters.ok()) OnGcCounters(id, *rt, *counters, /*forced=*/false);
        OnClassLoading(id, *rt);
      }
    }
  }

  // One collection of `mode`. Returns true on success (snapshot stored).
  bool Collect(const AgentId& id, Runtime& rt, HistogramMode mode) {
    const absl::Time start = absl::Now();
    const std::string command = collectors::ClassHistogramCommand(
        mode != HistogramMode::kLive, collectors::JavaFeatureVersion(rt.info.jvm_version),
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    // The pause the histogram caused, from the JVM's own safepoint counter around it.
    auto before = collectors::ReadGcCountersFile(rt.jvm.perfdata_path);
    auto output = collectors::ExecuteJcmd(rt.jvm, command, attach);
    auto after = collectors::ReadGcCountersFile(rt.jvm.perfdata_path);
    CollectionCost cost{mode, absl::ZeroDuration()};
    if (before.ok() && after.ok()) cost.pause = collectors::SafepointTimeBetween(*before, *after);
    const AgentCost::Spent spent =
        rt.cost->RecordHistogram(absl::Now(), start, mode, cost.pause,
                                 after.ok() ? &*after : nullptr, config.collection.interval);
    const absl::Duration total_pause = spent.total, planned = spent.planned_interval;
    const bool over_budget = spent.over_budget;
    metrics.RecordCollectionPause(id, mode, cost.pause);
    {
      std::lock_guard<std::mutex> lock(mu);
      metrics.SetCollectionPlan(id, planned, over_budget);
      const std::string planned_text =
          FormatDurationText(absl::Seconds(std::round(absl::ToDoubleSeconds(planned))));
      agents.Update(id, [&](AgentStatus& s) {
        s.last_cost = cost;
        s.total_pause = total_pause;
        s.planned_interval = planned;
        s.over_budget = over_budget;
        if (over_budget) {
          s.budget_note = absl::StrFormat(
              "over budget: even the cheapest histogram every %s exceeds the %.3g%% pause "
              "budget; collected every %s regardless",
              planned_text, config.collection.pause_budget * 100, planned_text);
        } else if (planned > config.collection.interval) {
          s.budget_note = absl::StrFormat(
              "interval stretched to %s by the %.3g%% pause budget (last %s histogram paused "
              "the JVM %.3fs)",
              planned_text, config.collection.pause_budget * 100, std::string(HistogramModeName(mode)),
              absl::ToDoubleSeconds(cost.pause));
        } else {
          s.budget_note.clear();
        }
      });
    }
    if (after.ok()) OnGcCounters(id, rt, *after, /*forced=*/true);
    if (!output.ok()) {
      return Failed(id, rt, ClassifyAttachError(output.status()), output.status(), start);
    }
    OnStringTable(id, rt);  // only once the JVM answered the histogram
    auto histogram = collectors::ParseClassHistogram(*output);
    if (!histogram.ok()) {
      return Failed(id, rt, CollectionResult::kParseError, histogram.status(), start);
    }
    Snapshot snapshot;
    snapshot.agent = id;
    snapshot.time = absl::Now();
    snapshot.histogram = *std::move(histogram);
    snapshot.cost = cost;
    Status stored =
        store->Append(snapshot);  // durable once OK: before anything else sees the snapshot
    if (!stored.ok()) return Failed(id, rt, CollectionResult::kStoreError, stored, start);
    const absl::Duration took = absl::Now() - start;
    Succeeded(id, rt, snapshot, took);
    return true;
  }

  // A stored histogram (of either kind of agent): the agent's watch takes it, the result is
  // published, and escalation hears of the suspects.
  void Succeeded(const AgentId& id, Runtime& rt, const Snapshot& snapshot, absl::Duration took) {
    const WatchUpdate update = rt.watch->IngestHistogram(snapshot);
    EscalationTarget target{rt.info, rt.jvm, 0};
    for (const ClassHistogramRow& row : snapshot.histogram.rows) target.heap_bytes += row.bytes;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (store_failing) {
        spdlog::info("store: snapshots are stored again");
        store_failing = false;
      }
      metrics.RecordCollection(id, CollectionResult::kOk, took);
      auto it = runtimes.find(id);
      if (it == runtimes.end() || it->second.get() != &rt)
        return;  // removed meanwhile: publish nothing
      metrics.SetAgentUp(id, true);
      // The exported classes, chosen by the detector (it knows each row's class already); unset
      // when it refused the snapshot (out of time order), which is then published from its rows.
      if (update.exported.has_value()) {
        metrics.PublishSnapshot(id, snapshot.time, *update.exported, update.suspects);
      } else {
        metrics.PublishSnapshot(id, snapshot, update.suspects, config.exporter.top_classes);
      }
      PublishLocked(id, update);
      agents.Update(id, [&](AgentStatus& s) {
        s.state = AgentState::kUp;
        s.last_snapshot_time = snapshot.time;
        s.last_collection_duration = took;
        s.last_error.clear();
        s.consecutive_failures = 0;
      });
    }
    // Outside mu: escalation may write its records to the store (an fsync) and never blocks on a
    // dump. An agent removed meanwhile is removed from escalation again.
    escalation->OnCollection(target, update.suspects);
    bool removed;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = runtimes.find(id);
      removed = it == runtimes.end() || it->second.get() != &rt;
    }
    if (removed) escalation->RemoveAgent(id);
  }

  bool Failed(const AgentId& id, Runtime& rt, CollectionResult result, const Status& error,
              absl::Time start) {
    const absl::Duration took = absl::Now() - start;
    if (result != CollectionResult::kStoreError && !collectors::VerifyLocalJvm(rt.jvm).ok()) {
      // The JVM exited (or stopped being the JVM we discovered) during the collection: not a
      // failure of the agent. Discovery would notice within one interval; drop it now so nothing is
      // retried.
      metrics.RecordCollection(id, result, took);
      metrics.RecordFault(FaultReason::kJvmExited);
      RemoveAgent(id, "its JVM exited during a collection");
      return false;
    }
    const std::string reason =
        absl::StrCat(std::string(CollectionResultName(result)), ": ", error.ToString());
    // heapwatch_faults_total (docs/fault-injection.md): a full disk, a failing store, a hung JVM.
    if (result == CollectionResult::kStoreError) {
      metrics.RecordFault(error.code() == absl::StatusCode::kResourceExhausted
                              ? FaultReason::kStoreDiskFull
                              : FaultReason::kStoreError);
    } else if (result == CollectionResult::kTimeout) {
      metrics.RecordFault(FaultReason::kCollectionTimeout);
    }
    if (result == CollectionResult::kStoreError) {
      std::lock_guard<std::mutex> lock(mu);
      if (!store_failing) {
        spdlog::error("store: cannot store a snapshot of agent {}, the snapshot is dropped: {}",
                      Describe(rt.info), error.ToString());
        store_failing = true;
      }
    } else {
      rt.watch->SetFailing(true, reason);
    }
    std::lock_guard<std::mutex> lock(mu);
    metrics.RecordCollection(id, result, took);
    auto it = runtimes.find(id);
    if (it == runtimes.end() || it->second.get() != &rt) return false;
    if (result != CollectionResult::kStoreError) metrics.SetAgentUp(id, false);
    agents.Update(id, [&](AgentStatus& s) {
      if (result != CollectionResult::kStoreError) s.state = AgentState::kUnreachable;
      s.last_error = reason;
      s.last_collection_duration = took;
      ++s.consecutive_failures;
    });
    return false;
  }

  // ---- registered agents (daemon/agent_gateway.h): the gateway stores, then calls these ----

  bool IsRegistered(const AgentId& id) {
    std::lock_guard<std::mutex> lock(mu);
    return registered.contains(id);
  }

  std::shared_ptr<Runtime> RuntimeOf(const AgentId& id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = runtimes.find(id);
    return it == runtimes.end() ? nullptr : it->second;
  }

  // Starts watching a registered agent (as AddJvm does for attach agents, without scheduling:
  // the agent takes its histograms itself), or marks a reconnected one up.
  Status OnAgentRegistered(const AgentInfo& info) {
    std::shared_ptr<Runtime> existing = RuntimeOf(info.id);
    if (existing != nullptr && existing->info.kind == AgentKind::kRegistered) {
      std::lock_guard<std::mutex> lock(mu);
      registered.insert(info.id);
      metrics.SetAgentUp(info.id, true);
      agents.Update(info.id, [](AgentStatus& s) {
        s.state = AgentState::kUp;
        s.last_error.clear();
      });
      return absl::OkStatus();
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return absl::UnavailableError("heapwatchd is stopping");
      registered.insert(info.id);  // from now on discovery leaves this JVM alone
    }
    if (existing != nullptr) RemoveAgent(info.id, "its JVM registered through the agent gateway");
    Status put = store->PutAgent(info);
    if (!put.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      registered.erase(info.id);
      return put;
    }
    AgentStatus status;
    size_t replayed = 0;
    WatchUpdate update;
    std::shared_ptr<Runtime> rt = NewRuntime(info, nullptr, &status, &update, &replayed);
    status.next_collection = absl::InfiniteFuture();  // the agent decides
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return absl::UnavailableError("heapwatchd is stopping");
    metrics.AddAgent(info);
    if (replayed > 0) PublishReplayedLocked(info.id, update);
    runtimes[info.id] = rt;
    agents.Put(std::move(status));
    spdlog::info("watching registered agent {}: JVM {}{}", Describe(info), info.jvm_version,
                 replayed > 0 ? absl::StrFormat(", replayed %d stored snapshots", replayed) : "");
    return absl::OkStatus();
  }

  // A histogram of a registered agent is stored: the same path as an attach collection's.
  void OnAgentSnapshot(const AgentId& id, const Snapshot& snapshot) {
    std::shared_ptr<Runtime> rt = RuntimeOf(id);
    if (rt == nullptr || rt->info.kind != AgentKind::kRegistered) return;
    metrics.RecordCollectionPause(id, snapshot.cost.mode, snapshot.cost.pause);
    {
      std::lock_guard<std::mutex> lock(mu);
      agents.Update(id, [&](AgentStatus& s) { s.last_cost = snapshot.cost; });
    }
    Succeeded(id, *rt, snapshot, absl::ZeroDuration());
  }

  void OnAgentLiveSet(const AgentId& id, const LiveSetPoint& point) {
    std::shared_ptr<Runtime> rt = RuntimeOf(id);
    if (rt == nullptr || rt->info.kind != AgentKind::kRegistered) return;
    const WatchUpdate update = rt->watch->IngestLiveSet(point);
    std::lock_guard<std::mutex> lock(mu);
    if (point.source != LiveSetSource::kYoungUpperBound) metrics.SetLiveSet(id, point);
    PublishLocked(id, update);
    agents.Update(id, [&](AgentStatus& s) { s.live_set = point; });
  }

  // "Histogram now" (QueryService.CollectHistogram): a registered agent through its stream, an
  // attach agent by its scheduler at once (after a collection in flight), in `mode`.
  StatusOr<Snapshot> CollectNow(const AgentId& id, HistogramMode mode, absl::Time deadline) {
    std::shared_ptr<Runtime> rt = RuntimeOf(id);
    if (rt == nullptr) {
      return absl::NotFoundError(absl::StrCat("agent ", id.value, " is unknown or not running"));
    }
    if (rt->info.kind == AgentKind::kRegistered) {
      if (gateway == nullptr) return absl::UnavailableError("the agent gateway is not running");
      return gateway->CollectHistogram(id, mode, deadline);
    }
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t done = rt->requested_done;
    rt->requested_mode = mode;
    scheduler.Expedite(id, absl::InfinitePast());  // false while one is in flight: see WorkerLoop
    cv.notify_all();
    while (rt->requested_done == done && !stopping && absl::Now() < deadline) {
      cv.wait_for(
          lock, absl::ToChronoMicroseconds(std::clamp(deadline - absl::Now(), absl::Milliseconds(1),
                                                      absl::Milliseconds(200))));
    }
    if (rt->requested_done == done) {
      rt->requested_mode.reset();
      if (stopping) return absl::UnavailableError("heapwatchd is stopping");
      return absl::DeadlineExceededError(
          absl::StrCat("agent ", id.value, ": no histogram stored before the deadline"));
    }
    if (rt->requested_snapshot.has_value()) return *rt->requested_snapshot;
    return absl::UnavailableError(absl::StrCat("agent ", id.value, ": ", rt->requested_error));
  }

  // A registered agent's pause budget (it runs collectors/pause_budget.h itself) reported a new
  // state: shown like an attach agent's (AgentStatus, heapwatch_pause_budget_exceeded).
  void OnAgentBudget(const AgentId& id, const AgentBudgetReport& report) {
    std::shared_ptr<Runtime> rt = RuntimeOf(id);
    if (rt == nullptr || rt->info.kind != AgentKind::kRegistered) return;
    std::lock_guard<std::mutex> lock(mu);
    const absl::Duration planned = report.planned_interval > absl::ZeroDuration()
                                       ? report.planned_interval
                                       : config.collection.interval;
    metrics.SetCollectionPlan(id, planned, report.over_budget);
    agents.Update(id, [&](AgentStatus& s) {
      s.budget_note = report.note;
      s.over_budget = report.over_budget;
      s.planned_interval = planned;
      s.total_pause = report.total_pause;
    });
  }

  void OnAgentState(const AgentId& id, AgentState state, const std::string& why) {
    std::shared_ptr<Runtime> rt = RuntimeOf(id);
    if (rt == nullptr || rt->info.kind != AgentKind::kRegistered) return;
    if (state == AgentState::kDown) {
      {
        std::lock_guard<std::mutex> lock(mu);
        registered.erase(id);
      }
      RemoveAgent(id, why);
      return;
    }
    if (state == AgentState::kUnreachable) {
      spdlog::warn("registered agent {} is unreachable: {}", Describe(rt->info), why);
    } else {
      spdlog::info("registered agent {} is reachable again", Describe(rt->info));
    }
    std::lock_guard<std::mutex> lock(mu);
    metrics.SetAgentUp(id, state == AgentState::kUp);
    agents.Update(id, [&](AgentStatus& s) {
      s.state = state;
      s.last_error = why;
    });
  }

  // The gateway's view of the daemon (daemon/agent_gateway.h RegisteredAgentSink).
  class GatewaySink final : public RegisteredAgentSink {
   public:
    explicit GatewaySink(Impl* d) : d_(d) {}
    Status OnRegistered(const AgentInfo& info) override { return d_->OnAgentRegistered(info); }
    void OnSnapshotStored(const AgentId& agent, const Snapshot& snapshot) override {
      d_->OnAgentSnapshot(agent, snapshot);
    }
    void OnLiveSetStored(const AgentId& agent, const LiveSetPoint& point) override {
      d_->OnAgentLiveSet(agent, point);
    }
    void OnStateChanged(const AgentId& agent, AgentState state, const std::string& why) override {
      d_->OnAgentState(agent, state, why);
    }
    void OnBudgetReported(const AgentId& agent, const AgentBudgetReport& report) override {
      d_->OnAgentBudget(agent, report);
    }
    bool AllObjects(const AgentInfo& info) override {
      return d_->config.collection.all_objects.Matches(info.main_class);
    }

   private:
    Impl* const d_;
  };
};

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const Config& config) {
  HW_RETURN_IF_ERROR(ValidateConfig(config));
  auto impl = std::make_unique<Impl>(config);

  storage::StoreOptions store_options;
  store_options.dir = config.data_dir;
  store_options.retention_age = config.retention.max_age;
  store_options.retention_bytes = config.retention.max_bytes;
  store_options.background_retention = false;  // the discovery thread runs it, to count and log it
  if (!config.agents.listen.empty()) {
    // Registered agents deliver at once: keep each one's class dictionary and latest snapshot in
    // the store's cache (~100 bytes per class), else every histogram reloads and decodes them.
    store_options.max_cached_agents = std::max<size_t>(
        store_options.max_cached_agents, static_cast<size_t>(config.agents.max_connected));
  }
  HW_ASSIGN_OR_RETURN(impl->store, storage::SnapshotStore::Open(store_options));

  // Dumps of attach agents through the attach API, of registered agents through their gateway
  // stream (daemon/agent_gateway.h dump_source); the gateway is set before any dump can start.
  impl->attach_dumps = std::make_unique<AttachDumpSource>(impl->attach);
  HW_ASSIGN_OR_RETURN(
      impl->escalation,
      Escalation::StartWithSources(
          config.escalation, config.data_dir,
          [raw = impl.get()](const AgentInfo& agent) -> DumpSource* {
            if (agent.kind == AgentKind::kLocalAttach) return raw->attach_dumps.get();
            return raw->gateway != nullptr ? raw->gateway->dump_source() : nullptr;
          },
          impl->store.get(), &impl->metrics, Clock::Real()));
  impl->escalation->SetDumpPauseListener([raw = impl.get()](const AgentId& id, absl::Duration pause) {
    raw->OnDumpPause(id, pause);
  });
  impl->escalation->SetReportListener(
      [raw = impl.get()](const AnalysedDump& dump) { raw->OnReport(dump); });
  if (!config.agents.listen.empty()) {
    HW_ASSIGN_OR_RETURN(
        std::shared_ptr<const auth::GrpcAuthorizer> agent_authorizer,
        MakeAgentAuthorizer(config.auth, config.tls, config.agents.listen, &impl->metrics));
    AgentGatewayOptions gateway;
    gateway.listen = config.agents.listen;
    gateway.heartbeat_interval = config.agents.heartbeat_interval;
    gateway.down_after = config.agents.down_after;
    gateway.max_connected = config.agents.max_connected;
    gateway.histogram_interval = config.collection.interval;
    gateway.pause_budget = config.collection.pause_budget;
    gateway.pause_budget_window = config.collection.pause_budget_window;
    gateway.max_interval = config.collection.max_interval;
    gateway.limits = config.grpc;
    if (!config.agents.listen.starts_with("unix:")) {
      // TLS of a TCP agent listener: the query listener's files (tls.*).
      HW_ASSIGN_OR_RETURN(gateway.credentials, MakeQueryCredentials(config.tls, config.auth));
    }
    impl->gateway_sink = std::make_unique<Impl::GatewaySink>(impl.get());
    HW_ASSIGN_OR_RETURN(impl->gateway,
                        AgentGateway::Start(gateway, impl->store.get(), impl->gateway_sink.get(),
                                            &impl->metrics, std::move(agent_authorizer)));
    HW_RETURN_IF_ERROR(WritePortFile(config.agents.port_file, impl->gateway->port()));
  }
  HW_ASSIGN_OR_RETURN(std::shared_ptr<const auth::GrpcAuthorizer> authorizer,
                      MakeQueryAuthorizer(config.auth, config.tls, config.grpc_listen,
                                          &impl->metrics));
  // TLS of the gRPC listener (auth/tls.h; plaintext without tls.cert_file).
  HW_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> grpc_credentials,
                      MakeQueryCredentials(config.tls, config.auth));
  HW_ASSIGN_OR_RETURN(
      impl->grpc,
      QueryServer::Start(config.grpc_listen, impl->store.get(), &impl->agents, &impl->metrics,
                         impl->escalation.get(),
                         [raw = impl.get()](const AgentId& id, std::string_view class_name) {
                           return raw->Explain(id, class_name);
                         },
                         authorizer, config.grpc, grpc_credentials));
  impl->grpc->SetHistogramCollector(
      [raw = impl.get()](const AgentId& id, HistogramMode mode, absl::Time deadline) {
        return raw->CollectNow(id, mode, deadline);
      });
  {
    web::WebServerOptions web_options;
    web_options.listen = config.metrics_listen;
    web_options.pages_listen = config.web.listen;
    web_options.external_url = config.web.external_url;
    web_options.gate = MakeWebGate(authorizer, &impl->metrics);  // the gRPC API's credentials
    impl->scraped_metrics = std::make_shared<ScrapedMetrics>(impl->store.get(), &impl->metrics);
    auto web =
        web::WebServer::Start(web_options, impl->scraped_metrics, impl->grpc->query_source());
    if (!web.ok()) {
      return absl::UnavailableError(absl::StrCat("cannot listen for metrics or web pages on ",
                                                 config.metrics_listen, ": ",
                                                 web.status().message()));
    }
    impl->web = *std::move(web);
    impl->metrics_port = impl->web->port();
    spdlog::info("heapwatchd: web pages on port {}", impl->web->pages_port());
    impl->metrics.SetWebUrl(!config.web.external_url.empty()
                                ? config.web.external_url
                                : WebUrlOf(config.web.listen.empty() ? config.metrics_listen
                                                                     : config.web.listen,
                                           impl->web->pages_port()));
    HW_RETURN_IF_ERROR(WritePortFile(config.web.port_file, impl->web->pages_port()));
  }
  spdlog::info("heapwatchd: data in {}, gRPC on {} (port {}), metrics on {} (port {}), interval {}",
               config.data_dir, config.grpc_listen, impl->grpc->port(), config.metrics_listen,
               impl->metrics_port, FormatDurationText(config.collection.interval));
  HW_RETURN_IF_ERROR(WritePortFile(config.grpc_port_file, impl->grpc->port()));
  HW_RETURN_IF_ERROR(WritePortFile(config.metrics_port_file, impl->metrics_port));
  if (auto bytes = impl->store->DiskBytes(); bytes.ok()) impl->metrics.SetStoreSize(*bytes);
  if (auto usage = StoreUsage(*impl->store); usage.ok()) impl->metrics.SetStoreUsage(*usage);

  Impl* raw = impl.get();
  raw->live_workers = config.collection.concurrency;
  for (int i = 0; i < config.collection.concurrency; ++i) {
    raw->workers.emplace_back([raw] { raw->WorkerLoop(); });
  }
  raw->discovery = std::thread([raw] { raw->DiscoveryLoop(); });
  raw->gc_sampler = std::thread([raw] { raw->GcSamplerLoop(); });
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

bool Daemon::Shutdown() {
  Impl& d = *impl_;
  if (d.shut_down) return true;
  d.shut_down = true;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.stopping = true;
  }
  d.cv.notify_all();
  if (d.gateway != nullptr) d.gateway->Shutdown();  // no agent delivers from here on
  if (d.discovery.joinable()) d.discovery.join();
  if (d.gc_sampler.joinable()) d.gc_sampler.join();
  bool finished;
  {
    std::unique_lock<std::mutex> lock(d.mu);
    if (d.in_flight > 0) spdlog::info("waiting for {} collections in flight", d.in_flight);
    finished = d.cv.wait_for(lock, absl::ToChronoMilliseconds(d.config.shutdown_grace),
                             [&d] { return d.live_workers == 0; });
    if (!finished) {
      spdlog::warn("abandoning {} collections still running after {}", d.in_flight,
                   FormatDurationText(d.config.shutdown_grace));
    }
  }
  if (!finished) {
    for (std::thread& t : d.workers) t.detach();
    return false;
  }
  for (std::thread& t : d.workers) t.join();
  if (!d.escalation->Stop(d.config.shutdown_grace)) return false;
  d.web.reset();  // before the query service its pages read
  d.grpc->Shutdown(absl::Seconds(2));
  d.store.reset();
  spdlog::info("heapwatchd stopped");
  return true;
}

Daemon::~Daemon() {
  if (impl_ != nullptr) HW_CHECK(Shutdown());
}

int Daemon::grpc_port() const { return impl_->grpc->port(); }
int Daemon::metrics_port() const { return impl_->metrics_port; }
int Daemon::agent_port() const { return impl_->gateway != nullptr ? impl_->gateway->port() : 0; }

int Run(const Config& config) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread started from here on
  signal(SIGPIPE, SIG_IGN);

  auto daemon = Daemon::Start(config);
  if (!daemon.ok()) {
    spdlog::critical("heapwatchd cannot start: {}", daemon.status().ToString());
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("received {}, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  std::thread([signals] {
    int again = 0;
    sigwait(&signals, &again);
    spdlog::warn("second signal: exiting without waiting");
    spdlog::shutdown();
    std::_Exit(1);
  }).detach();
  if (!(*daemon)->Shutdown()) {
    spdlog::shutdown();
    std::_Exit(0);  // see Daemon::Shutdown: abandoned workers must not be destroyed
  }
  daemon->reset();
  return 0;
}

int DaemonMain(int argc, char** argv) {
  CommandLine cl = ParseCommandLine(argc, argv, std::cout, std::cerr);
  if (cl.exit_code) return *cl.exit_code;
  if (cl.print_config) {
    std::cout << ConfigToYaml(cl.config);
    return 0;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(cl.config.log_level));
  // Debian's Abseil is built with its mutex deadlock detection on, and gRPC locks absl::Mutex on
  // every call: the lock-order graph cost about 2-4 % of the daemon's CPU under the agent load
  // benchmark (GraphCycles::GetId and Mutex::UnlockSlow in perf). Our own code uses std::mutex,
  // checked by the TSan runs (scripts/sanitize.sh).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return Run(cl.config);
}

}  // namespace heapwatch::daemon
