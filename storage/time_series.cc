// The per-agent time series: AppendLiveSet/ReadLiveSet (table live_set), AppendClassLoading/
// ReadClassLoading (class_loading) and AppendStringTable/ReadStringTable (string_table), all
// through detail/time_series.h (docs/storage-format.md, "Time series tables"). Their points are
// retained with the snapshots of the same time span (retention.cc).
#include "storage/detail/time_series.h"

#include <string>
#include <vector>

#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentRecord;
using detail::LmdbTxn;
using detail::TimeSeriesTable;

namespace {

// Decodes every point ForEachPoint hands out with `decode` into a vector, oldest first.
template <typename Point>
auto Collect(std::vector<Point>* out,
             StatusOr<Point> (*decode)(std::string_view, int64_t, std::string_view)) {
  return [out, decode](int64_t micros, std::string_view value, std::string_view where) -> Status {
    HW_ASSIGN_OR_RETURN(Point p, decode(value, micros, where));
    out->push_back(std::move(p));
    return absl::OkStatus();
  };
}

}  // namespace

Status SnapshotStore::Impl::AppendPoint(const TimeSeriesTable& t, const AgentId& agent,
                                        absl::Time time, std::string_view value) {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(const int64_t micros, detail::StorableMicros(time, t.point));
  std::lock_guard<std::mutex> lock(write_mu);
  return Write([&](LmdbTxn& txn) -> Status {
    HW_ASSIGN_OR_RETURN(AgentRecord r, RequireAgent(txn, agent));
    return detail::PutNewPoint(txn, t, agent, r.agent_no, micros, value);
  });
}

Status SnapshotStore::Impl::ReadPoints(
    const TimeSeriesTable& t, const AgentId& agent, absl::Time from, absl::Time to,
    absl::FunctionRef<Status(int64_t, std::string_view, std::string_view)> fn) const {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, RequireAgent(txn, agent));
  return detail::ForEachPoint(txn, t, agent, r.agent_no, absl::ToUnixMicros(from),
                              absl::ToUnixMicros(to), fn);
}

Status SnapshotStore::AppendLiveSet(const AgentId& agent, const LiveSetPoint& point) {
  return impl_->AppendPoint(impl_->SeriesTables()[Impl::kLiveSet], agent, point.time,
                            detail::EncodeLiveSetPoint(point));
}

StatusOr<std::vector<LiveSetPoint>> SnapshotStore::ReadLiveSet(const AgentId& agent,
                                                               absl::Time from, absl::Time to,
                                                               size_t max_count) const {
  std::vector<LiveSetPoint> out;
  HW_RETURN_IF_ERROR(impl_->ReadPoints(impl_->SeriesTables()[Impl::kLiveSet], agent, from, to,
                                       Collect(&out, &detail::DecodeLiveSetPoint)));
  detail::KeepNewest(&out, max_count);
  return out;
}

Status SnapshotStore::AppendClassLoading(const AgentId& agent, const ClassLoadingPoint& point) {
  return impl_->AppendPoint(impl_->SeriesTables()[Impl::kClassLoading], agent, point.time,
                            detail::EncodeClassLoadingPoint(point));
}

StatusOr<std::vector<ClassLoadingPoint>> SnapshotStore::ReadClassLoading(const AgentId& agent,
                                                                         absl::Time from,
                                                                         absl::Time to,
                                                                         size_t max_count) const {
  std::vector<ClassLoadingPoint> out;
  HW_RETURN_IF_ERROR(impl_->ReadPoints(impl_->SeriesTables()[Impl::kClassLoading], agent, from, to,
                                       Collect(&out, &detail::DecodeClassLoadingPoint)));
  detail::KeepNewest(&out, max_count);
  return out;
}

Status SnapshotStore::AppendStringTable(const AgentId& agent, const StringTableStats& point) {
  return impl_->AppendPoint(impl_->SeriesTables()[Impl::kStringTable], agent, point.time,
                            detail::EncodeStringTablePoint(point));
}

StatusOr<std::vector<StringTableStats>> SnapshotStore::ReadStringTable(const AgentId& agent,
                                                                       absl::Time from,
                                                                       absl::Time to,
                                                                       size_t max_count) const {
  std::vector<StringTableStats> out;
  HW_RETURN_IF_ERROR(impl_->ReadPoints(impl_->SeriesTables()[Impl::kStringTable], agent, from, to,
                                       Collect(&out, &detail::DecodeStringTablePoint)));
  detail::KeepNewest(&out, max_count);
  return out;
}

}  // namespace heapwatch::storage
