#include "storage/detail/time_series.h"

#include <string>

namespace heapwatch::storage::detail {

Status PutNewPoint(LmdbTxn& txn, const TimeSeriesTable& t, const AgentId& agent, AgentNo agent_no,
                   int64_t micros, std::string_view value) {
  const std::string key = SnapshotKey(agent_no, micros);
  HW_ASSIGN_OR_RETURN(auto existing, txn.Get(t.dbi, key));
  if (existing.has_value()) {
    return absl::AlreadyExistsError("heapwatch store: " + std::string(t.point) +
                                    " exists: " + DescribeSnapshot(agent, micros));
  }
  return txn.Put(t.dbi, key, value);
}

Status ForEachPoint(
    LmdbTxn& txn, const TimeSeriesTable& t, const AgentId& agent, AgentNo agent_no, int64_t lo,
    int64_t hi,
    absl::FunctionRef<Status(int64_t micros, std::string_view value, std::string_view where)> fn) {
  if (lo > hi) return absl::OkStatus();
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, t.dbi));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(SnapshotKey(agent_no, lo), &k, &v));
  while (ok) {
    AgentNo a;
    int64_t micros;
    if (!ParseSnapshotKey(k, &a, &micros) || a != agent_no || micros > hi) break;
    HW_RETURN_IF_ERROR(
        fn(micros, v, std::string(t.table) + "[" + DescribeSnapshot(agent, micros) + "]"));
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
  }
  return absl::OkStatus();
}

StatusOr<size_t> DeletePointsBefore(LmdbTxn& txn, MDB_dbi dbi, AgentNo agent_no,
                                    int64_t before_micros, size_t max_count) {
  std::vector<std::string> keys;
  {
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, dbi));
    std::string_view k;
    HW_ASSIGN_OR_RETURN(bool ok, c.Seek(AgentPrefix(agent_no), &k, nullptr));
    while (ok && keys.size() < max_count) {
      AgentNo a;
      int64_t micros;
      if (!ParseSnapshotKey(k, &a, &micros) || a != agent_no || micros >= before_micros) break;
      keys.emplace_back(k);
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, nullptr));
    }
  }
  for (const std::string& k : keys) HW_RETURN_IF_ERROR(txn.Del(dbi, k).status());
  return keys.size();
}

}  // namespace heapwatch::storage::detail
