#include "daemon/dump_records.h"

#include "absl/strings/str_cat.h"

namespace heapwatch::daemon {
namespace {

// Debian's Abseil has its own string_view type.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// LMDB's key limit as the store applies it to table + key (storage/snapshot_store.h PutRecord).
constexpr size_t kMaxTableAndKeyBytes = 510;

}  // namespace

std::string DumpRecordKey(const AgentId& agent, std::string_view dump_id) {
  return absl::StrCat(agent.value, "/", AV(dump_id));
}

std::string ReportRecordKey(const AgentId& agent, std::string_view class_name,
                            std::string_view dump_id) {
  return absl::StrCat(agent.value, "/", AV(class_name), "/", AV(dump_id));
}

Status DumpRecordStore::PutDump(const v1::ExtendedDump& record) {
  return store_->PutRecord(kDumpRecordTable,
                           DumpRecordKey(AgentId(record.agent()), record.dump_id()),
                           record.SerializeAsString());
}

StatusOr<v1::ExtendedDump> DumpRecordStore::GetDump(const AgentId& agent,
                                                    std::string_view dump_id) const {
  HW_ASSIGN_OR_RETURN(std::string bytes,
                      store_->GetRecord(kDumpRecordTable, DumpRecordKey(agent, dump_id)));
  v1::ExtendedDump d;
  if (!d.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("the stored record of extended dump ", AV(dump_id),
                                            " of agent ", agent.value, " is corrupt"));
  }
  return d;
}

StatusOr<std::vector<v1::ExtendedDump>> DumpRecordStore::ListDumps(const AgentId& agent) const {
  HW_ASSIGN_OR_RETURN(auto records,
                      store_->ListRecords(kDumpRecordTable, absl::StrCat(agent.value, "/")));
  std::vector<v1::ExtendedDump> out;
  for (const auto& [key, value] : records) {
    v1::ExtendedDump d;
    if (d.ParseFromString(value)) out.push_back(std::move(d));
  }
  return out;
}

StatusOr<std::vector<StoredDumpRecord>> DumpRecordStore::ListAllDumps() const {
  HW_ASSIGN_OR_RETURN(auto records, store_->ListRecords(kDumpRecordTable, ""));
  std::vector<StoredDumpRecord> out;
  out.reserve(records.size());
  for (auto& [key, value] : records) {
    StoredDumpRecord r;
    r.key = std::move(key);
    r.parsed = r.record.ParseFromString(value);
    if (!r.parsed) r.record.Clear();
    out.push_back(std::move(r));
  }
  return out;
}

bool DumpRecordStore::ReportKeyFits(const AgentId& agent, std::string_view class_name,
                                    std::string_view dump_id) {
  return kReportRecordTable.size() + ReportRecordKey(agent, class_name, dump_id).size() <=
         kMaxTableAndKeyBytes;
}

Status DumpRecordStore::CommitAnalysis(const v1::ExtendedDump& done,
                                       const records::v1::ExtendedDumpSummary& summary,
                                       const std::vector<v1::DrillDownReport>& reports) {
  const AgentId agent(done.agent());
  const std::string key = DumpRecordKey(agent, done.dump_id());
  std::vector<storage::SnapshotStore::RecordPut> puts;
  puts.reserve(reports.size() + 2);
  puts.push_back({std::string(kSummaryRecordTable), key, summary.SerializeAsString()});
  for (const v1::DrillDownReport& r : reports) {
    puts.push_back({std::string(kReportRecordTable),
                    ReportRecordKey(agent, r.class_name(), done.dump_id()), r.SerializeAsString()});
  }
  puts.push_back({std::string(kDumpRecordTable), key, done.SerializeAsString()});
  return store_->WriteRecords(puts);
}

StatusOr<v1::DrillDownReport> DumpRecordStore::GetReport(const AgentId& agent,
                                                         std::string_view class_name,
                                                         std::string_view dump_id) const {
  HW_ASSIGN_OR_RETURN(
      std::string bytes,
      store_->GetRecord(kReportRecordTable, ReportRecordKey(agent, class_name, dump_id)));
  v1::DrillDownReport r;
  if (!r.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("the stored report of class ", AV(class_name),
                                            " in extended dump ", AV(dump_id), " is corrupt"));
  }
  return r;
}

StatusOr<std::vector<v1::DrillDownReport>> DumpRecordStore::ListReportsOfClass(
    const AgentId& agent, std::string_view class_name) const {
  HW_ASSIGN_OR_RETURN(
      auto records,
      store_->ListRecords(kReportRecordTable, absl::StrCat(agent.value, "/", AV(class_name), "/")));
  std::vector<v1::DrillDownReport> out;
  for (const auto& [key, value] : records) {
    v1::DrillDownReport r;
    // The prefix also matches classes whose name continues with '/' (none in Java names).
    if (r.ParseFromString(value) && r.class_name() == class_name) out.push_back(std::move(r));
  }
  return out;
}

StatusOr<records::v1::ExtendedDumpSummary> DumpRecordStore::GetSummary(
    const AgentId& agent, std::string_view dump_id) const {
  HW_ASSIGN_OR_RETURN(std::string bytes,
                      store_->GetRecord(kSummaryRecordTable, DumpRecordKey(agent, dump_id)));
  records::v1::ExtendedDumpSummary s;
  if (!s.ParseFromString(bytes)) {
    return absl::DataLossError(
        absl::StrCat("the stored summary of extended dump ", AV(dump_id), " is corrupt"));
  }
  return s;
}

StatusOr<size_t> DumpRecordStore::DeleteRecords(
    const std::vector<std::pair<std::string, std::string>>& refs) {
  return store_->DeleteRecords(refs);
}

}  // namespace heapwatch::daemon
