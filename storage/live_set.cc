// The live-set series: AppendLiveSet and ReadLiveSet (table live_set, docs/storage-format.md).
// Retention of its points is in retention.cc, next to the snapshots'.
#include "absl/strings/str_cat.h"
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentNo;
using detail::AgentRecord;
using detail::LmdbCursor;
using detail::LmdbTxn;

Status SnapshotStore::AppendLiveSet(const AgentId& agent, const LiveSetPoint& point) {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(const int64_t micros, detail::StorableMicros(point.time, "live-set point"));
  Impl& s = *impl_;
  const std::string value = detail::EncodeLiveSetPoint(point);
  std::lock_guard<std::mutex> lock(s.write_mu);
  return s.Write([&](LmdbTxn& txn) -> Status {
    HW_ASSIGN_OR_RETURN(AgentRecord r, s.RequireAgent(txn, agent));
    const std::string key = detail::SnapshotKey(r.agent_no, micros);
    HW_ASSIGN_OR_RETURN(auto existing, txn.Get(s.live_set, key));
    if (existing.has_value()) {
      return absl::AlreadyExistsError(
          "heapwatch store: live-set point exists: " + detail::DescribeSnapshot(agent, micros));
    }
    return txn.Put(s.live_set, key, value);
  });
}

StatusOr<std::vector<LiveSetPoint>> SnapshotStore::ReadLiveSet(const AgentId& agent,
                                                               absl::Time from, absl::Time to,
                                                               size_t max_count) const {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  const int64_t lo = absl::ToUnixMicros(from), hi = absl::ToUnixMicros(to);
  std::vector<LiveSetPoint> out;
  if (lo > hi) return out;
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, impl_->live_set));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::SnapshotKey(r.agent_no, lo), &k, &v));
  while (ok) {
    AgentNo a;
    int64_t t;
    if (!detail::ParseSnapshotKey(k, &a, &t) || a != r.agent_no || t > hi) break;
    HW_ASSIGN_OR_RETURN(LiveSetPoint p,
                        detail::DecodeLiveSetPoint(
                            v, t, absl::StrCat("live_set[", detail::DescribeSnapshot(agent, t), "]")));
    out.push_back(p);
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
  }
  if (max_count > 0 && out.size() > max_count) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(max_count));
  }
  return out;
}

}  // namespace heapwatch::storage
