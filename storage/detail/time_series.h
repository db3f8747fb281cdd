// Internal: the per-agent time series tables (live_set, class_loading, string_table;
// docs/storage-format.md, "Time series tables"). Each maps SnapshotKey(agent number, time in Unix
// microseconds) to one point in its codec encoding (detail/codec.h), so one implementation of
// append, range read and deletion serves them all. SnapshotStore's AppendX/ReadX (time_series.cc),
// retention (retention.cc) and the use per kind (usage.cc) go through these functions.
#ifndef HEAPWATCH_STORAGE_DETAIL_TIME_SERIES_H_
#define HEAPWATCH_STORAGE_DETAIL_TIME_SERIES_H_

#include <lmdb.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/agent.h"
#include "common/status.h"
#include "storage/detail/codec.h"
#include "storage/detail/lmdb_handles.h"

namespace heapwatch::storage::detail {

// One time series table.
struct TimeSeriesTable {
  MDB_dbi dbi = 0;
  // The LMDB table's name, also its kind in UsageByKind and the prefix of the keys named in
  // DataLoss messages ("class_loading[agent @ time]").
  std::string_view table;
  // What one entry is, for AlreadyExists and InvalidArgument messages ("class-loading point").
  std::string_view point;
};

// REQUIRES: a write transaction. Stores `value` under (agent_no, micros). AlreadyExists (naming
// the agent and time) when the table holds a point there already; the store's errors otherwise.
// O(log n).
Status PutNewPoint(LmdbTxn& txn, const TimeSeriesTable& t, const AgentId& agent, AgentNo agent_no,
                   int64_t micros, std::string_view value);

// Calls fn(micros, value, where) for each point of the agent with lo <= micros <= hi, oldest first;
// `where` ("table[agent @ time]") names the key for the caller's DataLoss messages. The views are
// valid during the call only. Stops at and returns the first error of fn. O(log n + points).
Status ForEachPoint(
    LmdbTxn& txn, const TimeSeriesTable& t, const AgentId& agent, AgentNo agent_no, int64_t lo,
    int64_t hi,
    absl::FunctionRef<Status(int64_t micros, std::string_view value, std::string_view where)> fn);

// REQUIRES: a write transaction. Deletes up to max_count of the agent's oldest points with
// micros < before_micros; returns how many. O(log n + deleted).
StatusOr<size_t> DeletePointsBefore(LmdbTxn& txn, MDB_dbi dbi, AgentNo agent_no,
                                    int64_t before_micros, size_t max_count);

// Keeps the newest max_count elements of a time-ordered vector (all when max_count is 0).
template <typename Point>
void KeepNewest(std::vector<Point>* points, size_t max_count) {
  if (max_count > 0 && points->size() > max_count) {
    points->erase(points->begin(), points->end() - static_cast<std::ptrdiff_t>(max_count));
  }
}

}  // namespace heapwatch::storage::detail

#endif  // HEAPWATCH_STORAGE_DETAIL_TIME_SERIES_H_
