// The daemon's in-memory view of the agents it watches now: labels, collection state, current
// suspects and leaks. Written by the discovery thread and the collection workers, read by the gRPC query
// service. Agents that are down are not kept here; their history lives in the store.
//
// Thread-safety: thread-safe (one internal mutex); every method copies in or out, no reference
// escapes.
#ifndef HEAPWATCH_DAEMON_AGENT_TABLE_H_
#define HEAPWATCH_DAEMON_AGENT_TABLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/class_loading.h"
#include "common/gc.h"
#include "diff/leak_detector.h"
#include "diff/trend_detector.h"

namespace heapwatch::daemon {

enum class AgentState {
  kUp,           // running; the last collection succeeded or none was tried yet
  kUnreachable,  // running; collections fail (backoff)
  kDown,         // exited (only reported for agents known from the store)
};

struct AgentStatus {
  AgentInfo info;
  AgentState state = AgentState::kUp;
  bool all_objects = false;                              // histograms with -all
  absl::Time last_snapshot_time = absl::InfinitePast();  // newest stored snapshot
  absl::Time next_collection = absl::InfinitePast();
  absl::Duration last_collection_duration = absl::ZeroDuration();
  std::string last_error;  // empty after a success
  uint32_t consecutive_failures = 0;
  std::vector<diff::Suspect> suspects;  // sorted by score, highest first; each names its leak
  std::vector<diff::Leak> leaks;        // the suspects grouped by cause, fastest growth first
  // The extended dump whose accumulation points the leaks were last regrouped by; empty if none.
  std::string analysed_dump_id;
  // Cost of watching (collectors/pause_budget.h).
  CollectionCost last_cost;                             // of the last stored histogram
  absl::Duration total_pause = absl::ZeroDuration();    // histograms and extended dumps
  absl::Time watched_since = absl::InfinitePast();      // start of total_pause's count
  absl::Duration planned_interval = absl::ZeroDuration();
  std::string budget_note;  // why the interval is stretched or the agent over budget
  bool over_budget = false;
  std::optional<LiveSetPoint> live_set;  // the newest live-set point
  // The newest class-loading reading (daemon/class_loading_watch.h); a class loader leak, when
  // there is one, is in `leaks` with kind "class_loader".
  std::optional<ClassLoadingPoint> class_loading;
  // The live-set series as a trend suspect (class name kLiveSetSeries) while it grows.
  std::optional<diff::Suspect> live_set_growth;
  // While the live set grows: when it reaches the maximum heap (diff/heap_forecast.h).
  std::optional<diff::HeapExhaustion> heap_exhaustion;
};

class AgentTable {
 public:
  // Inserts or replaces the status of status.info.id.
  void Put(AgentStatus status);
  // Removes an agent; returns false if it was not present.
  bool Remove(const AgentId& id);
  // Applies `update` to the agent's status under the lock; returns false (and does nothing) if
  // absent. `update` must not call back into the table.
  bool Update(const AgentId& id, const std::function<void(AgentStatus&)>& update);
  std::optional<AgentStatus> Get(const AgentId& id) const;
  // Every agent, ordered by id.
  std::vector<AgentStatus> List() const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<AgentId, AgentStatus> agents_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AGENT_TABLE_H_
