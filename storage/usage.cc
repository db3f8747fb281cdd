// The store's use per kind of data, atomic deletion of a group of records, and the oldest snapshot
// of an agent: what the daemon's record retention (daemon/record_retention.h) needs from the
// store. docs/storage-format.md, "Use per kind".
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentRecord;
using detail::LmdbCursor;
using detail::LmdbTxn;

namespace {

uint64_t PageBytes(const MDB_stat& st) {
  return (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * uint64_t{st.ms_psize};
}

// Bytes LMDB spends on a leaf node besides its key and value (mdb_node header).
constexpr uint64_t kNodeHeaderBytes = 8;

}  // namespace

StatusOr<size_t> SnapshotStore::DeleteRecords(
    const std::vector<std::pair<std::string, std::string>>& refs) {
  for (const auto& [table, key] : refs) HW_RETURN_IF_ERROR(detail::ValidateRecordKey(table, key));
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.write_mu);
  size_t deleted = 0;
  HW_RETURN_IF_ERROR(s.Write([&](LmdbTxn& txn) -> Status {
    deleted = 0;  // Write may run the body again after growing the map
    for (const auto& [table, key] : refs) {
      HW_ASSIGN_OR_RETURN(bool existed, txn.Del(s.records, detail::RecordKey(table, key)));
      deleted += existed ? 1 : 0;
    }
    return absl::OkStatus();
  }));
  return deleted;
}

StatusOr<size_t> SnapshotStore::DeleteRecordsOfAgentsWithoutSnapshots(
    std::string_view table, const std::vector<AgentId>& agents) {
  HW_RETURN_IF_ERROR(detail::ValidateRecordKey(table, ""));
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.write_mu);
  size_t deleted = 0;
  HW_RETURN_IF_ERROR(s.Write([&](LmdbTxn& txn) -> Status {
    deleted = 0;  // Write may run the body again after growing the map
    for (const AgentId& id : agents) {
      if (!detail::ValidateAgentId(id).ok()) continue;
      HW_ASSIGN_OR_RETURN(std::optional<AgentRecord> r, s.FindAgent(txn, id));
      if (r.has_value()) {
        HW_ASSIGN_OR_RETURN(std::optional<int64_t> first,
                            s.FirstAtOrAfter(txn, r->agent_no, -detail::kMaxAbsMicros));
        if (first.has_value()) continue;  // it has history: its record stays
      }
      HW_ASSIGN_OR_RETURN(bool existed, txn.Del(s.records, detail::RecordKey(table, id.value)));
      deleted += existed ? 1 : 0;
    }
    return absl::OkStatus();
  }));
  return deleted;
}

StatusOr<std::optional<absl::Time>> SnapshotStore::OldestSnapshotTime(const AgentId& agent) const {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  HW_ASSIGN_OR_RETURN(std::optional<int64_t> first,
                      impl_->FirstAtOrAfter(txn, r.agent_no, -detail::kMaxAbsMicros));
  if (!first.has_value()) return std::optional<absl::Time>();
  return std::optional<absl::Time>(absl::FromUnixMicros(*first));
}

const StoreOptions& SnapshotStore::options() const { return impl_->options; }

StatusOr<std::vector<KindUsage>> SnapshotStore::UsageByKind() const {
  const Impl& s = *impl_;
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, s.BeginRead());
  auto stat = [&](MDB_dbi dbi) { return txn.Stat(dbi); };
  std::vector<KindUsage> out;
  {
    HW_ASSIGN_OR_RETURN(MDB_stat snap, stat(s.snapshots));
    HW_ASSIGN_OR_RETURN(MDB_stat cost, stat(s.costs));
    out.push_back({"snapshots", snap.ms_entries, PageBytes(snap) + PageBytes(cost)});
    HW_ASSIGN_OR_RETURN(MDB_stat cls, stat(s.classes));
    HW_ASSIGN_OR_RETURN(MDB_stat names, stat(s.class_names));
    out.push_back({"dictionary", cls.ms_entries, PageBytes(cls) + PageBytes(names)});
    for (const detail::TimeSeriesTable& t : s.SeriesTables()) {
      HW_ASSIGN_OR_RETURN(MDB_stat series, stat(t.dbi));
      out.push_back({std::string(t.table), series.ms_entries, PageBytes(series)});
    }
    HW_ASSIGN_OR_RETURN(MDB_stat agents, stat(s.agents));
    HW_ASSIGN_OR_RETURN(MDB_stat meta, stat(s.meta));
    MDB_stat main;
    if (int rc = mdb_env_stat(s.env.get(), &main); rc != 0) {
      return detail::LmdbStatus(rc, "env stat");
    }
    out.push_back(
        {"agents", agents.ms_entries, PageBytes(agents) + PageBytes(meta) + PageBytes(main)});
  }
  // Record tables: count entries and their bytes per table, then split the pages of the records
  // table in proportion.
  HW_ASSIGN_OR_RETURN(MDB_stat rec, stat(s.records));
  struct Table {
    uint64_t records = 0;
    uint64_t entry_bytes = 0;
  };
  std::map<std::string, Table> tables;
  uint64_t all_entry_bytes = 0;
  {
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, s.records));
    std::string_view k, v;
    HW_ASSIGN_OR_RETURN(bool ok, c.Move(MDB_FIRST, &k, &v));
    while (ok) {
      const size_t len = k.empty() ? 0 : static_cast<uint8_t>(k[0]);
      if (k.size() < 1 + len) {
        return absl::DataLossError(
            absl::StrFormat("heapwatch store %s: malformed records key", s.dir));
      }
      Table& t = tables[std::string(k.substr(1, len))];
      const uint64_t bytes = k.size() + v.size() + kNodeHeaderBytes;
      ++t.records;
      t.entry_bytes += bytes;
      all_entry_bytes += bytes;
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
    }
  }
  const uint64_t record_pages = PageBytes(rec);
  uint64_t given = 0;
  size_t i = 0;
  for (const auto& [name, t] : tables) {
    uint64_t share =
        ++i == tables.size()
            ? record_pages - given  // the rest, so that the kinds sum to UsedBytes exactly
            : static_cast<uint64_t>(static_cast<long double>(record_pages) * t.entry_bytes /
                                    all_entry_bytes);
    given += share;
    out.push_back({absl::StrCat("records/", name), t.records, share});
  }
  if (tables.empty() && record_pages > 0) out.push_back({"records/", 0, record_pages});
  return out;
}

}  // namespace heapwatch::storage
