// The class-loading series: AppendClassLoading and ReadClassLoading (table class_loading,
// docs/storage-format.md). Its points are retained like the live-set series (retention.cc).
#include "absl/strings/str_cat.h"
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentNo;
using detail::AgentRecord;
using detail::LmdbCursor;
using detail::LmdbTxn;

Status SnapshotStore::AppendClassLoading(const AgentId& agent, const ClassLoadingPoint& point) {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(const int64_t micros,
                      detail::StorableMicros(point.time, "class-loading point"));
  Impl& s = *impl_;
  const std::string value = detail::EncodeClassLoadingPoint(point);
  std::lock_guard<std::mutex> lock(s.write_mu);
  return s.Write([&](LmdbTxn& txn) -> Status {
    HW_ASSIGN_OR_RETURN(AgentRecord r, s.RequireAgent(txn, agent));
    const std::string key = detail::SnapshotKey(r.agent_no, micros);
    HW_ASSIGN_OR_RETURN(auto existing, txn.Get(s.class_loading, key));
    if (existing.has_value()) {
      return absl::AlreadyExistsError("heapwatch store: class-loading point exists: " +
                                      detail::DescribeSnapshot(agent, micros));
    }
    return txn.Put(s.class_loading, key, value);
  });
}

StatusOr<std::vector<ClassLoadingPoint>> SnapshotStore::ReadClassLoading(const AgentId& agent,
                                                                         absl::Time from,
                                                                         absl::Time to,
                                                                         size_t max_count) const {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  const int64_t lo = absl::ToUnixMicros(from), hi = absl::ToUnixMicros(to);
  std::vector<ClassLoadingPoint> out;
  if (lo > hi) return out;
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, impl_->class_loading));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::SnapshotKey(r.agent_no, lo), &k, &v));
  while (ok) {
    AgentNo a;
    int64_t t;
    if (!detail::ParseSnapshotKey(k, &a, &t) || a != r.agent_no || t > hi) break;
    HW_ASSIGN_OR_RETURN(
        ClassLoadingPoint p,
        detail::DecodeClassLoadingPoint(
            v, t, absl::StrCat("class_loading[", detail::DescribeSnapshot(agent, t), "]")));
    out.push_back(p);
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
  }
  if (max_count > 0 && out.size() > max_count) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(max_count));
  }
  return out;
}

}  // namespace heapwatch::storage
