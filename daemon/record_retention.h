// Retention of the escalation's records (docs/storage-format.md, "Retention of records"): the
// extended-dump records ("xdump"), drill-down reports ("xreport") and dump summaries ("xsummary")
// age out with their agent's snapshot history, and each kind is held to a share of
// retention.max_bytes so that no kind can push out another. The agent gateway's delivery records
// ("agent_delivery", daemon/agent_gateway.h) age out with their agent's history too (rule 4). The
// store's own retention (storage/snapshot_store.h) deletes snapshots only; this module is the one
// place that deletes records.
//
// The unit of deletion is one extended dump: its record, its reports and its summary go together
// in one LMDB transaction (SnapshotStore::DeleteRecords), so a gRPC reader never sees a DONE dump
// without its reports or a report without its dump.
//
// Rules, applied to every dump group (a dump id of an agent with any of the three records):
//  1. Never deleted: a dump in progress (QUEUED, DUMPING, ANALYZING), and, for each live agent's
//     currently flagged suspect class, the newest DONE dump with a report of that class (the
//     newest report of a live leak) and the newest dump that covers the class (DONE, or refused by
//     a budget: it keeps escalation from dumping the same episode again).
//  2. Aged out: a dump requested before its agent's oldest snapshot (the snapshots it explains
//     are gone), or of an agent with no snapshots left.
//  3. Over share: while the bytes of a kind exceed share x retention.max_bytes, the oldest
//     remaining dump with records of that kind is deleted (all of its records).
//  4. Delivery records (one per registered agent id, i.e. per JVM run): deleted when the agent
//     has no snapshot left and is not live (escalation's view: a watched agent, connected or
//     not yet declared down). The snapshot check is repeated in the deleting transaction
//     (SnapshotStore::DeleteRecordsOfAgentsWithoutSnapshots), so a record stored with a new
//     snapshot is never deleted. Why this keeps delivery exactly-once: docs/storage-format.md,
//     "Retention of records".
//
// Thread-safety: the functions are thread-safe as far as the store is; the caller (Escalation)
// serializes a pass with its own writes of dump records.
#ifndef HEAPWATCH_DAEMON_RECORD_RETENTION_H_
#define HEAPWATCH_DAEMON_RECORD_RETENTION_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/status.h"
#include "daemon/dump_records.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {

// Shares of retention.max_bytes (bytes of live data, storage/snapshot_store.h UsedBytes) that each
// record kind may use. Snapshots, dictionaries and live-set points get the rest (at least 75 % by
// default), and only snapshots are deleted by the store's size retention, so records cannot push
// out snapshots beyond their shares and snapshots cannot push out records.
struct RecordRetentionPolicy {
  uint64_t max_bytes = uint64_t{1} << 30;  // retention.max_bytes
  double dump_record_share = 0.02;         // "xdump": small (about 1 KiB per dump)
  double report_share = 0.15;              // "xreport": one per analysed suspect class
  double summary_share = 0.08;             // "xsummary": one per analysed dump
};

// The records of one extended dump of an agent.
struct DumpRecordGroup {
  AgentId agent;
  std::string dump_id;   // "%Y%m%dT%H%M%E6SZ" of the request time (docs/escalation.md)
  absl::Time requested;  // parsed from dump_id (InfinitePast when it does not parse)
  bool has_dump_record = false;
  v1::ExtendedDump record;                  // valid when has_dump_record (and it parsed)
  std::vector<std::string> report_keys;     // "xreport" keys "<agent>/<class>/<dump_id>"
  std::vector<std::string> report_classes;  // the class of each report key
  bool has_summary = false;
  // Bytes of the group's entries per kind: key + value + 8 (as storage's KindUsage counts them).
  uint64_t dump_bytes = 0, report_bytes = 0, summary_bytes = 0;

  // QUEUED, DUMPING or ANALYZING.
  bool InProgress() const;
  // Every (table, key) of the group.
  std::vector<std::pair<std::string, std::string>> Keys() const;
};

// Reads the three record tables and groups them by (agent, dump id); ordered by request time,
// oldest first. Errors: the store's. O(records).
StatusOr<std::vector<DumpRecordGroup>> LoadDumpRecordGroups(const storage::SnapshotStore& store);

// Rule 4: the agents (keys of the delivery-record table) whose delivery record may go: no snapshot
// in `history_start` and not in `live_agents`. Ordered by id. O(n log n).
std::vector<AgentId> PlanDeliveryRecordRetention(const std::vector<AgentId>& delivery_agents,
                                                 const std::map<AgentId, absl::Time>& history_start,
                                                 const std::set<AgentId>& live_agents);

// What a pass decides, as indices into the groups.
struct RecordRetentionPlan {
  std::set<size_t> aged_out;            // rule 2
  std::set<size_t> over_share;          // rule 3
  std::set<size_t> kept_for_live_leak;  // rule 1, live-leak part (for logs and tests)
};

struct RecordRetentionInput {
  std::vector<DumpRecordGroup> groups;
  // The oldest snapshot of each agent that has one.
  std::map<AgentId, absl::Time> history_start;
  // The classes flagged as suspects right now, per live agent.
  std::map<AgentId, std::set<std::string>> live_suspects;
  // Bytes of the store's pages per record table (storage::KindUsage "records/<table>").
  uint64_t dump_table_bytes = 0, report_table_bytes = 0, summary_table_bytes = 0;
};

// Applies the rules above to `input` without touching the store. O(groups log groups).
RecordRetentionPlan PlanRecordRetention(const RecordRetentionInput& input,
                                        const RecordRetentionPolicy& policy);

struct RecordRetentionResult {
  size_t dumps_deleted = 0;    // groups
  size_t aged_out = 0;         // of which by rule 2
  size_t over_share = 0;       // of which by rule 3
  size_t records_deleted = 0;  // entries
  size_t kept_for_live_leak = 0;
  // Deleted dumps whose raw dump was kept (keep_raw_dumps): the caller deletes the files.
  std::vector<std::string> kept_raw_dumps;
  std::vector<std::string> deleted_dump_keys;  // "<agent>/<dump_id>" of the deleted groups
  size_t delivery_records_deleted = 0;         // rule 4
};

// One pass: loads the groups, the agents' oldest snapshots and the record tables' sizes, plans,
// and deletes each chosen group in one transaction (several groups per transaction); then deletes
// the delivery records of rule 4 in one transaction. `live_agents`: every agent escalation
// watches now (a superset of live_suspects' keys).
// Errors: the store's (a pass that fails part-way keeps what it committed).
StatusOr<RecordRetentionResult> ApplyRecordRetention(
    storage::SnapshotStore* store, const std::map<AgentId, std::set<std::string>>& live_suspects,
    const std::set<AgentId>& live_agents, const RecordRetentionPolicy& policy);

// The store's use per kind of data as heapwatch names it (GetStoreStats, heapwatch_store_bytes):
// "snapshots", "dictionary", "live_set", "agents" (storage::KindUsage), "dump_records" (xdump),
// "reports" (xreport), "summaries" (xsummary), "other_records" (any other record table),
// "class_loading", "string_table" (storage::KindUsage), "agent_delivery" (the agent gateway's
// delivery records); always these eleven, in this order; bytes sum to the store's UsedBytes.
// Errors: the store's.
// O(tables + records).
StatusOr<std::vector<storage::KindUsage>> StoreUsage(const storage::SnapshotStore& store);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_RECORD_RETENTION_H_
