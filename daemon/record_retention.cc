#include "daemon/record_retention.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "daemon/agent_gateway.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {
namespace {

// Debian's Abseil has its own string_view type.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr uint64_t kNodeHeaderBytes = 8;  // as storage's KindUsage
// Groups deleted per transaction (one fsync each).
constexpr size_t kGroupsPerTransaction = 64;

// "20231114T221320.123456Z" (absl's %Y would take every digit, so the fields are cut out here).
absl::Time ParseDumpId(std::string_view id) {
  if (id.size() != 23 || id[8] != 'T' || id[15] != '.' || id[22] != 'Z') {
    return absl::InfinitePast();
  }
  auto num = [&](size_t pos, size_t len, int64_t* out) {
    int64_t v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (id[i] < '0' || id[i] > '9') return false;
      v = v * 10 + (id[i] - '0');
    }
    *out = v;
    return true;
  };
  int64_t y, mo, d, h, mi, sec, us;
  if (!num(0, 4, &y) || !num(4, 2, &mo) || !num(6, 2, &d) || !num(9, 2, &h) || !num(11, 2, &mi) ||
      !num(13, 2, &sec) || !num(16, 6, &us)) {
    return absl::InfinitePast();
  }
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, sec), absl::UTCTimeZone()) +
         absl::Microseconds(us);
}

bool Covers(const v1::ExtendedDump& d) {
  return d.state() == v1::EXTENDED_DUMP_STATE_DONE ||
         (d.state() == v1::EXTENDED_DUMP_STATE_FAILED && absl::StartsWith(d.error(), "refused: "));
}

}  // namespace

bool DumpRecordGroup::InProgress() const {
  if (!has_dump_record) return false;
  const v1::ExtendedDumpState s = record.state();
  return s == v1::EXTENDED_DUMP_STATE_QUEUED || s == v1::EXTENDED_DUMP_STATE_DUMPING ||
         s == v1::EXTENDED_DUMP_STATE_ANALYZING;
}

std::vector<std::pair<std::string, std::string>> DumpRecordGroup::Keys() const {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string key = absl::StrCat(agent.value, "/", dump_id);
  if (has_dump_record) out.emplace_back(std::string(kDumpRecordTable), key);
  for (const std::string& k : report_keys) out.emplace_back(std::string(kReportRecordTable), k);
  if (has_summary) out.emplace_back(std::string(kSummaryRecordTable), key);
  return out;
}

StatusOr<std::vector<DumpRecordGroup>> LoadDumpRecordGroups(const storage::SnapshotStore& store) {
  std::map<std::pair<std::string, std::string>, DumpRecordGroup> groups;
  auto group = [&](std::string_view agent, std::string_view dump_id) -> DumpRecordGroup& {
    DumpRecordGroup& g = groups[{std::string(agent), std::string(dump_id)}];
    if (g.dump_id.empty()) {
      g.agent = AgentId(std::string(agent));
      g.dump_id = std::string(dump_id);
      g.requested = ParseDumpId(dump_id);
    }
    return g;
  };
  // Keys: "<agent>/<dump_id>" and "<agent>/<class>/<dump_id>". Agent ids have no '/', dump ids
  // neither; class names may (hidden classes), so the class is everything in between.
  HW_ASSIGN_OR_RETURN(auto dumps, store.ListRecords(kDumpRecordTable, ""));
  for (const auto& [key, value] : dumps) {
    const size_t slash = key.find('/');
    if (slash == std::string::npos) continue;
    DumpRecordGroup& g =
        group(std::string_view(key).substr(0, slash), std::string_view(key).substr(slash + 1));
    g.has_dump_record = true;
    g.dump_bytes += 1 + kDumpRecordTable.size() + key.size() + 4 + value.size() + kNodeHeaderBytes;
    if (!g.record.ParseFromString(value)) g.record.Clear();
  }
  HW_ASSIGN_OR_RETURN(auto reports, store.ListRecords(kReportRecordTable, ""));
  for (const auto& [key, value] : reports) {
    const size_t first = key.find('/'), last = key.rfind('/');
    if (first == std::string::npos || first == last) continue;
    DumpRecordGroup& g =
        group(std::string_view(key).substr(0, first), std::string_view(key).substr(last + 1));
    g.report_keys.push_back(key);
    g.report_classes.push_back(key.substr(first + 1, last - first - 1));
    g.report_bytes +=
        1 + kReportRecordTable.size() + key.size() + 4 + value.size() + kNodeHeaderBytes;
  }
  HW_ASSIGN_OR_RETURN(auto summaries, store.ListRecords(kSummaryRecordTable, ""));
  for (const auto& [key, value] : summaries) {
    const size_t slash = key.find('/');
    if (slash == std::string::npos) continue;
    DumpRecordGroup& g =
        group(std::string_view(key).substr(0, slash), std::string_view(key).substr(slash + 1));
    g.has_summary = true;
    g.summary_bytes +=
        1 + kSummaryRecordTable.size() + key.size() + 4 + value.size() + kNodeHeaderBytes;
  }
  std::vector<DumpRecordGroup> out;
  out.reserve(groups.size());
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  std::stable_sort(out.begin(), out.end(), [](const DumpRecordGroup& a, const DumpRecordGroup& b) {
    return std::tie(a.requested, a.agent.value, a.dump_id) <
           std::tie(b.requested, b.agent.value, b.dump_id);
  });
  return out;
}

std::vector<AgentId> PlanDeliveryRecordRetention(const std::vector<AgentId>& delivery_agents,
                                                 const std::map<AgentId, absl::Time>& history_start,
                                                 const std::set<AgentId>& live_agents) {
  std::vector<AgentId> out;
  for (const AgentId& a : delivery_agents) {
    if (history_start.count(a) == 0 && live_agents.count(a) == 0) out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

RecordRetentionPlan PlanRecordRetention(const RecordRetentionInput& input,
                                        const RecordRetentionPolicy& policy) {
  RecordRetentionPlan plan;
  const std::vector<DumpRecordGroup>& groups = input.groups;
  // Rule 1: in progress, and the newest report / covering dump of each live suspect class.
  std::set<size_t> kept;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].InProgress()) kept.insert(i);
  }
  for (const auto& [agent, classes] : input.live_suspects) {
    for (const std::string& cls : classes) {
      bool report_found = false, cover_found = false;
      for (size_t i = groups.size(); i-- > 0 && !(report_found && cover_found);) {
        const DumpRecordGroup& g = groups[i];
        if (g.agent != agent || !g.has_dump_record) continue;
        if (!report_found && g.record.state() == v1::EXTENDED_DUMP_STATE_DONE &&
            std::find(g.report_classes.begin(), g.report_classes.end(), cls) !=
                g.report_classes.end()) {
          report_found = true;
          kept.insert(i);
          plan.kept_for_live_leak.insert(i);
        }
        if (!cover_found && Covers(g.record) &&
            std::find(g.record.suspect_classes().begin(), g.record.suspect_classes().end(), cls) !=
                g.record.suspect_classes().end()) {
          cover_found = true;
          kept.insert(i);
        }
      }
    }
  }
  // Rule 2: older than the agent's history.
  for (size_t i = 0; i < groups.size(); ++i) {
    if (kept.count(i)) continue;
    auto it = input.history_start.find(groups[i].agent);
    if (it == input.history_start.end() || groups[i].requested < it->second) {
      plan.aged_out.insert(i);
    }
  }
  // Rule 3: each kind within its share, oldest dumps first. Entry bytes are scaled to the pages
  // the table uses (per kind), since max_bytes bounds pages.
  struct Kind {
    uint64_t DumpRecordGroup::*bytes;
    uint64_t table_bytes;
    double share;
  };
  const Kind kinds[] = {
      {&DumpRecordGroup::dump_bytes, input.dump_table_bytes, policy.dump_record_share},
      {&DumpRecordGroup::report_bytes, input.report_table_bytes, policy.report_share},
      {&DumpRecordGroup::summary_bytes, input.summary_table_bytes, policy.summary_share},
  };
  double remaining[3], factor[3];
  for (int k = 0; k < 3; ++k) {
    uint64_t entries = 0;
    for (const DumpRecordGroup& g : groups) entries += g.*(kinds[k].bytes);
    factor[k] = entries == 0 ? 0.0 : static_cast<double>(kinds[k].table_bytes) / entries;
    remaining[k] = static_cast<double>(kinds[k].table_bytes);
  }
  auto remove = [&](size_t i) {
    for (int k = 0; k < 3; ++k) remaining[k] -= factor[k] * (groups[i].*(kinds[k].bytes));
  };
  for (size_t i : plan.aged_out) remove(i);
  for (int k = 0; k < 3; ++k) {
    const double budget = kinds[k].share * static_cast<double>(policy.max_bytes);
    for (size_t i = 0; i < groups.size() && remaining[k] > budget; ++i) {
      if (kept.count(i) || plan.aged_out.count(i) || plan.over_share.count(i)) continue;
      if (groups[i].*(kinds[k].bytes) == 0) continue;
      plan.over_share.insert(i);
      remove(i);
    }
  }
  return plan;
}

StatusOr<RecordRetentionResult> ApplyRecordRetention(
    storage::SnapshotStore* store, const std::map<AgentId, std::set<std::string>>& live_suspects,
    const std::set<AgentId>& live_agents, const RecordRetentionPolicy& policy) {
  RecordRetentionInput input;
  HW_ASSIGN_OR_RETURN(input.groups, LoadDumpRecordGroups(*store));
  RecordRetentionResult result;
  input.live_suspects = live_suspects;
  HW_ASSIGN_OR_RETURN(std::vector<AgentInfo> agents, store->ListAgents());
  for (const AgentInfo& a : agents) {
    auto oldest = store->OldestSnapshotTime(a.id);
    if (!oldest.ok()) {
      if (absl::IsNotFound(oldest.status())) continue;  // deleted meanwhile
      return oldest.status();
    }
    if (oldest->has_value()) input.history_start[a.id] = **oldest;
  }
  // Rule 4, before the groups (whose pass may end early).
  {
    HW_ASSIGN_OR_RETURN(auto delivery, store->ListRecords(kDeliveryTable, ""));
    std::vector<AgentId> agents;
    agents.reserve(delivery.size());
    for (const auto& entry : delivery) agents.emplace_back(entry.first);
    const std::vector<AgentId> doomed =
        PlanDeliveryRecordRetention(agents, input.history_start, live_agents);
    if (!doomed.empty()) {
      HW_ASSIGN_OR_RETURN(result.delivery_records_deleted,
                          store->DeleteRecordsOfAgentsWithoutSnapshots(kDeliveryTable, doomed));
    }
    if (result.delivery_records_deleted > 0) {
      spdlog::info(
          "record retention deleted the delivery records of {} agents with no snapshot left that "
          "are not live",
          result.delivery_records_deleted);
    }
  }
  if (input.groups.empty()) return result;
  HW_ASSIGN_OR_RETURN(std::vector<storage::KindUsage> usage, store->UsageByKind());
  for (const storage::KindUsage& u : usage) {
    if (u.kind == absl::StrCat("records/", AV(kDumpRecordTable))) input.dump_table_bytes = u.bytes;
    if (u.kind == absl::StrCat("records/", AV(kReportRecordTable))) {
      input.report_table_bytes = u.bytes;
    }
    if (u.kind == absl::StrCat("records/", AV(kSummaryRecordTable))) {
      input.summary_table_bytes = u.bytes;
    }
  }
  const RecordRetentionPlan plan = PlanRecordRetention(input, policy);
  result.kept_for_live_leak = plan.kept_for_live_leak.size();
  result.aged_out = plan.aged_out.size();
  result.over_share = plan.over_share.size();
  std::vector<size_t> doomed(plan.aged_out.begin(), plan.aged_out.end());
  doomed.insert(doomed.end(), plan.over_share.begin(), plan.over_share.end());
  std::sort(doomed.begin(), doomed.end());
  for (size_t start = 0; start < doomed.size(); start += kGroupsPerTransaction) {
    const size_t end = std::min(doomed.size(), start + kGroupsPerTransaction);
    std::vector<std::pair<std::string, std::string>> keys;
    for (size_t j = start; j < end; ++j) {
      auto k = input.groups[doomed[j]].Keys();
      keys.insert(keys.end(), k.begin(), k.end());
    }
    HW_ASSIGN_OR_RETURN(size_t n, DumpRecordStore(store).DeleteRecords(keys));
    result.records_deleted += n;
    for (size_t j = start; j < end; ++j) {
      const DumpRecordGroup& g = input.groups[doomed[j]];
      ++result.dumps_deleted;
      result.deleted_dump_keys.push_back(DumpRecordKey(g.agent, g.dump_id));
      if (g.has_dump_record && g.record.raw_dump_kept() && !g.record.raw_dump_path().empty()) {
        result.kept_raw_dumps.push_back(g.record.raw_dump_path());
      }
    }
  }
  if (result.dumps_deleted > 0) {
    spdlog::info(
        "record retention deleted {} extended dumps ({} aged out with their agent's snapshots, {} "
        "over a record kind's share of retention.max_bytes; {} records), kept {} newest reports "
        "of live leaks",
        result.dumps_deleted, plan.aged_out.size(), plan.over_share.size(), result.records_deleted,
        result.kept_for_live_leak);
  }
  return result;
}

StatusOr<std::vector<storage::KindUsage>> StoreUsage(const storage::SnapshotStore& store) {
  HW_ASSIGN_OR_RETURN(std::vector<storage::KindUsage> raw, store.UsageByKind());
  std::vector<storage::KindUsage> out;
  for (const char* kind :
       {"snapshots", "dictionary", "live_set", "agents", "dump_records", "reports", "summaries",
        "other_records", "class_loading", "string_table", "agent_delivery"}) {
    out.push_back({kind, 0, 0});
  }
  auto slot = [&](std::string_view kind) -> storage::KindUsage& {
    if (kind == "snapshots") return out[0];
    if (kind == "dictionary") return out[1];
    if (kind == "live_set") return out[2];
    if (kind == "agents") return out[3];
    if (kind == "class_loading") return out[8];
    if (kind == "string_table") return out[9];
    if (kind == absl::StrCat("records/", AV(kDumpRecordTable))) return out[4];
    if (kind == absl::StrCat("records/", AV(kReportRecordTable))) return out[5];
    if (kind == absl::StrCat("records/", AV(kSummaryRecordTable))) return out[6];
    if (kind == absl::StrCat("records/", AV(kDeliveryTable))) return out[10];
    return out[7];
  };
  for (const storage::KindUsage& u : raw) {
    storage::KindUsage& s = slot(u.kind);
    s.records += u.records;
    s.bytes += u.bytes;
  }
  return out;
}

}  // namespace heapwatch::daemon
