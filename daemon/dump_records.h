// The escalation's typed record store: the extended-dump records (heapwatch.v1.ExtendedDump, table
// "xdump", key "<agent>/<dump_id>"), the drill-down reports (heapwatch.v1.DrillDownReport, table
// "xreport", key "<agent>/<class>/<dump_id>") and the dump summaries for dump diffs
// (heapwatch.records.v1.ExtendedDumpSummary, table "xsummary", key "<agent>/<dump_id>"), kept as
// generic records of the snapshot store (storage/snapshot_store.h, "Generic records";
// docs/storage-format.md, docs/escalation.md "Stored records"). This is the one place that knows
// these tables and key formats; the escalation (daemon/escalation.h) writes through it and record
// retention (daemon/record_retention.h) reads and deletes the same tables.
//
// Each state change is one LMDB write transaction: PutDump writes one record; CommitAnalysis writes
// a dump's DONE record together with its summary and reports, so a reader sees the dump DONE with
// all of its reports or sees neither (a failed commit leaves no report and no summary behind).
// Agent ids contain no '/' (common/agent.h), dump ids are "%Y%m%dT%H%M%E6SZ" of the request time.
//
// Thread-safety: thread-safe (the snapshot store is). Ordering between writers (e.g. the
// escalation's state changes against record retention) is the caller's: the escalation serialises
// its own writes and retention under its lock.
#ifndef HEAPWATCH_DAEMON_DUMP_RECORDS_H_
#define HEAPWATCH_DAEMON_DUMP_RECORDS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/agent.h"
#include "common/status.h"
#include "heapwatch/records/v1/records.pb.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {

inline constexpr std::string_view kDumpRecordTable = "xdump";
inline constexpr std::string_view kReportRecordTable = "xreport";
inline constexpr std::string_view kSummaryRecordTable = "xsummary";

// "<agent>/<dump_id>": the key of a dump record and of its summary.
std::string DumpRecordKey(const AgentId& agent, std::string_view dump_id);
// "<agent>/<class>/<dump_id>": the key of a drill-down report.
std::string ReportRecordKey(const AgentId& agent, std::string_view class_name,
                            std::string_view dump_id);

// A stored dump record as read back, with its key; `parsed` is false for a record whose bytes do
// not parse (then `record` is empty).
struct StoredDumpRecord {
  std::string key;
  bool parsed = false;
  v1::ExtendedDump record;
};

class DumpRecordStore {
 public:
  // `store` is not owned and must outlive the object.
  explicit DumpRecordStore(storage::SnapshotStore* store) : store_(store) {}

  // Writes (creates or replaces) the dump record under DumpRecordKey(record.agent(),
  // record.dump_id()), in one transaction. Errors: InvalidArgument (key too long), the store's.
  Status PutDump(const v1::ExtendedDump& record);
  // The dump record, or NotFound (absent); DataLoss when it does not parse; InvalidArgument; the
  // store's errors.
  StatusOr<v1::ExtendedDump> GetDump(const AgentId& agent, std::string_view dump_id) const;
  // The agent's dump records that parse, oldest first (ids sort by request time).
  // Errors: the store's.
  StatusOr<std::vector<v1::ExtendedDump>> ListDumps(const AgentId& agent) const;
  // Every dump record of every agent, by key, corrupt ones included (parsed == false).
  // Errors: the store's.
  StatusOr<std::vector<StoredDumpRecord>> ListAllDumps() const;

  // Stores an analysed dump in ONE transaction: `done` (its dump record, normally DONE), `summary`
  // under the same key, and each report under ReportRecordKey(agent, report.class_name(),
  // done.dump_id()). All or nothing. Errors: InvalidArgument (a key too long: check ReportKeyFits
  // first; nothing is written), the store's (nothing is written).
  Status CommitAnalysis(const v1::ExtendedDump& done,
                        const records::v1::ExtendedDumpSummary& summary,
                        const std::vector<v1::DrillDownReport>& reports);
  // Whether the report key of (agent, class_name, dump_id) is short enough for the store (table +
  // key at most 510 bytes, storage/snapshot_store.h).
  static bool ReportKeyFits(const AgentId& agent, std::string_view class_name,
                            std::string_view dump_id);

  // The report of class_name from dump dump_id. Errors: NotFound (absent), DataLoss (does not
  // parse), InvalidArgument, the store's.
  StatusOr<v1::DrillDownReport> GetReport(const AgentId& agent, std::string_view class_name,
                                          std::string_view dump_id) const;
  // The reports of class_name of the agent that parse and name that class, oldest dump first.
  // Errors: InvalidArgument, the store's.
  StatusOr<std::vector<v1::DrillDownReport>> ListReportsOfClass(const AgentId& agent,
                                                                std::string_view class_name) const;
  // The summary of dump dump_id. Errors: NotFound (absent), DataLoss (does not parse: "the stored
  // summary of extended dump <id> is corrupt"), InvalidArgument, the store's.
  StatusOr<records::v1::ExtendedDumpSummary> GetSummary(const AgentId& agent,
                                                        std::string_view dump_id) const;

  // Deletes the listed (table, key) records in one transaction (record retention's groups).
  // Returns how many existed. Errors: as storage::SnapshotStore::DeleteRecords.
  StatusOr<size_t> DeleteRecords(const std::vector<std::pair<std::string, std::string>>& refs);

  storage::SnapshotStore* store() const { return store_; }

 private:
  storage::SnapshotStore* store_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_DUMP_RECORDS_H_
