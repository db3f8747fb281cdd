// Several record writes and deletions in one LMDB write transaction (SnapshotStore::WriteRecords):
// what the daemon's dump record store (daemon/dump_records.h) needs so that an extended dump's
// final state and its reports appear together or not at all.
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::LmdbTxn;

Status SnapshotStore::WriteRecords(
    const std::vector<RecordPut>& puts,
    const std::vector<std::pair<std::string, std::string>>& deletes) {
  std::vector<std::string> values;
  values.reserve(puts.size());
  for (const RecordPut& p : puts) {
    HW_RETURN_IF_ERROR(detail::ValidateRecordKey(p.table, p.key));
    if (p.value.size() > UINT32_MAX - 4) {
      return absl::InvalidArgumentError("record value too large");
    }
    values.push_back(detail::EncodeRecordValue(p.value));
  }
  for (const auto& [table, key] : deletes) {
    HW_RETURN_IF_ERROR(detail::ValidateRecordKey(table, key));
  }
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.write_mu);
  return s.Write([&](LmdbTxn& txn) -> Status {
    for (const auto& [table, key] : deletes) {
      HW_ASSIGN_OR_RETURN(bool existed, txn.Del(s.records, detail::RecordKey(table, key)));
      (void)existed;
    }
    for (size_t i = 0; i < puts.size(); ++i) {
      HW_RETURN_IF_ERROR(
          txn.Put(s.records, detail::RecordKey(puts[i].table, puts[i].key), values[i]));
    }
    return absl::OkStatus();
  });
}

}  // namespace heapwatch::storage
