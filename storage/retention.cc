// Retention (by age, then by size) and deletion of agents. Deleting the oldest snapshots of an
// agent may remove the base of the first remaining snapshot's delta: that snapshot is rewritten as
// a key frame in the same transaction (decoded before the deletion), so every chain stays intact
// after every commit.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <queue>

#include "absl/strings/str_format.h"
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentNo;
using detail::AgentRecord;
using detail::LmdbCursor;
using detail::LmdbTxn;
using detail::NumberedHistogram;
using detail::PrefixDeletion;

StatusOr<size_t> SnapshotStore::Impl::DeletePrefix(LmdbTxn& txn, MDB_dbi dbi,
                                                   std::string_view prefix, size_t max_count) {
  std::vector<std::string> keys;
  {
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, dbi));
    std::string_view k;
    HW_ASSIGN_OR_RETURN(bool ok, c.Seek(prefix, &k, nullptr));
    while (ok && keys.size() < max_count && k.substr(0, prefix.size()) == prefix) {
      keys.emplace_back(k);
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, nullptr));
    }
  }
  for (const std::string& k : keys) HW_RETURN_IF_ERROR(txn.Del(dbi, k).status());
  return keys.size();
}

StatusOr<size_t> SnapshotStore::Impl::DeleteOldPoints(LmdbTxn& txn, AgentNo agent,
                                                      int64_t before_micros, size_t max_count) {
  size_t most = 0;
  for (const detail::TimeSeriesTable& t : SeriesTables()) {
    HW_ASSIGN_OR_RETURN(size_t n,
                        detail::DeletePointsBefore(txn, t.dbi, agent, before_micros, max_count));
    most = std::max(most, n);
  }
  return most;
}

StatusOr<PrefixDeletion> SnapshotStore::Impl::DeleteOldestSnapshots(LmdbTxn& txn, const AgentId& id,
                                                                    AgentNo agent,
                                                                    int64_t before_micros,
                                                                    size_t max_count) {
  PrefixDeletion d;
  // The points of the time series (live set, class loading, string table) age out with the
  // snapshots of the same time span (and all of them with the agent).
  HW_RETURN_IF_ERROR(DeleteOldPoints(txn, agent, before_micros, max_count).status());
  std::vector<int64_t> times;
  std::optional<int64_t> remaining;
  {
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, snapshots));
    std::string_view k;
    HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::AgentPrefix(agent), &k, nullptr));
    for (;;) {
      AgentNo a;
      int64_t t;
      if (!ok || !detail::ParseSnapshotKey(k, &a, &t) || a != agent) break;
      if (t >= before_micros || times.size() >= max_count) {
        remaining = t;
        break;
      }
      times.push_back(t);
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, nullptr));
    }
  }
  if (times.empty()) {
    d.now_empty = !remaining.has_value();
    return d;
  }

  // The first remaining snapshot must not depend on what is deleted: a delta becomes a key frame. A
  // remaining snapshot that cannot be decoded (a corrupt value in its chain) is unreadable for good
  // once its base is gone: it is deleted too, and the next one considered, so that retention always
  // makes progress.
  std::optional<NumberedHistogram> key_frame;
  while (remaining.has_value()) {
    std::string key = detail::SnapshotKey(agent, *remaining);
    HW_ASSIGN_OR_RETURN(auto v, txn.Get(snapshots, key));
    HW_CHECK(v.has_value());
    StatusOr<detail::SnapshotValue> sv =
        detail::ParseSnapshotValue(*v, detail::DescribeSnapshot(id, *remaining));
    Status decoded = sv.status();
    if (sv.ok() && sv->kind == detail::SnapshotKind::kFull) break;
    if (sv.ok()) {
      key_frame.emplace();
      decoded = DecodeAt(txn, id, agent, *remaining, &*key_frame);
      if (decoded.ok()) break;
      key_frame.reset();
    }
    if (!absl::IsDataLoss(decoded)) return decoded;
    spdlog::error("heapwatch store {}: retention deletes unreadable {}: {}", dir,
                  detail::DescribeSnapshot(id, *remaining), decoded.ToString());
    times.push_back(*remaining);
    HW_ASSIGN_OR_RETURN(remaining, FirstAtOrAfter(txn, agent, *remaining + 1));
  }
  d.now_empty = !remaining.has_value();
  for (int64_t t : times) {
    HW_RETURN_IF_ERROR(txn.Del(snapshots, detail::SnapshotKey(agent, t)).status());
    HW_RETURN_IF_ERROR(txn.Del(costs, detail::SnapshotKey(agent, t)).status());
  }
  if (key_frame.has_value()) {
    HW_RETURN_IF_ERROR(txn.Put(snapshots, detail::SnapshotKey(agent, *remaining),
                               detail::EncodeFullSnapshot(*key_frame, options.compress_snapshots)));
    d.rewritten_micros = remaining;
  }
  d.deleted = times.size();
  return d;
}

Status SnapshotStore::Impl::DeleteDictionary(AgentNo agent) {
  std::string prefix = detail::AgentPrefix(agent);
  for (;;) {
    size_t n1 = 0, n2 = 0;
    HW_RETURN_IF_ERROR(Write([&](LmdbTxn& txn) -> Status {
      HW_ASSIGN_OR_RETURN(n1, DeletePrefix(txn, classes, prefix, detail::kDeleteBatch));
      HW_ASSIGN_OR_RETURN(n2, DeletePrefix(txn, class_names, prefix, detail::kDeleteBatch));
      return absl::OkStatus();
    }));
    if (n1 < detail::kDeleteBatch && n2 < detail::kDeleteBatch) return absl::OkStatus();
  }
}

void SnapshotStore::Impl::AfterDeletion(const AgentId& id, const PrefixDeletion& d) {
  auto it = cache.find(id);
  if (it == cache.end()) return;
  if (d.now_empty) {
    cache.erase(it);
  } else if (d.rewritten_micros.has_value() && *d.rewritten_micros == it->second->latest_micros) {
    it->second->latest_depth = 0;
  }
}

Status SnapshotStore::Impl::RetainByAge(int64_t cutoff_micros) {
  std::vector<AgentRecord> all;
  {
    HW_ASSIGN_OR_RETURN(LmdbTxn txn, BeginRead());
    HW_ASSIGN_OR_RETURN(all, AllAgents(txn));
  }
  size_t deleted = 0, agents_deleted = 0;
  for (const AgentRecord& listed : all) {
    const AgentId& id = listed.info.id;
    // One batch per lock hold, so that Append waits at most one transaction.
    for (;;) {
      std::lock_guard<std::mutex> lock(write_mu);
      PrefixDeletion d;
      bool gone = false;
      HW_RETURN_IF_ERROR(Write([&](LmdbTxn& txn) -> Status {
        d = PrefixDeletion();
        HW_ASSIGN_OR_RETURN(auto r, FindAgent(txn, id));
        gone = !r.has_value() || r->agent_no != listed.agent_no;  // deleted meanwhile
        if (gone) return absl::OkStatus();
        HW_ASSIGN_OR_RETURN(d, DeleteOldestSnapshots(txn, id, listed.agent_no, cutoff_micros,
                                                     detail::kDeleteBatch));
        return absl::OkStatus();
      }));
      if (gone) break;
      AfterDeletion(id, d);
      deleted += d.deleted;
      if (d.deleted < detail::kDeleteBatch) {
        if (d.now_empty) {
          // No snapshots left: drop the dictionary, and the agent itself once it has been idle too
          // long.
          HW_RETURN_IF_ERROR(DeleteDictionary(listed.agent_no));
          cache.erase(id);
          HW_ASSIGN_OR_RETURN(LmdbTxn txn, BeginRead());
          HW_ASSIGN_OR_RETURN(auto r, FindAgent(txn, id));
          txn.Abort();
          if (r.has_value() && r->updated_micros < cutoff_micros) {
            HW_RETURN_IF_ERROR(Write([&](LmdbTxn& w) { return w.Del(agents, id.value).status(); }));
            ++agents_deleted;
          }
        }
        break;
      }
    }
  }
  if (deleted > 0 || agents_deleted > 0) {
    spdlog::info("heapwatch store {}: retention by age deleted {} snapshots and {} idle agents",
                 dir, deleted, agents_deleted);
  }
  return absl::OkStatus();
}

Status SnapshotStore::Impl::RetainBySize(uint64_t target_bytes) {
  size_t deleted = 0;
  bool announced = false;  // the pass's first deletion was logged
  for (;;) {
    std::lock_guard<std::mutex> lock(write_mu);
    bool done = false;
    uint64_t used = 0;
    std::vector<std::pair<AgentRecord, PrefixDeletion>> effects;
    HW_RETURN_IF_ERROR(Write([&](LmdbTxn& txn) -> Status {
      effects.clear();
      HW_ASSIGN_OR_RETURN(used, UsedBytesIn(txn));
      HW_ASSIGN_OR_RETURN(MDB_stat st, txn.Stat(snapshots));
      if (used <= target_bytes || st.ms_entries == 0) {
        done = true;
        return absl::OkStatus();
      }
      // How many snapshots to delete this round: the excess over the average stored snapshot size.
      uint64_t snapshot_bytes =
          (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * uint64_t{st.ms_psize};
      uint64_t avg = std::max<uint64_t>(1, snapshot_bytes / st.ms_entries);
      uint64_t n =
          std::clamp<uint64_t>((used - target_bytes + avg - 1) / avg, 1, detail::kDeleteBatch);
      // Said once per deleting pass, before its first deletion commits: with the line below
      // ("deleted N snapshots", after the last commit) it brackets the deletion in the log (the
      // crash torture times kills on it, tests/e2e/crash_torture.sh).
      if (!announced) {
        spdlog::info(
            "heapwatch store {}: retention by size: {} bytes used, budget {}; deleting the oldest "
            "snapshots",
            dir, used, target_bytes);
        announced = true;
      }
      // The n globally oldest snapshots: a k-way merge over the agents' time-ordered keys.
      HW_ASSIGN_OR_RETURN(std::vector<AgentRecord> all, AllAgents(txn));
      using Item = std::pair<int64_t, size_t>;  // (time, index into all)
      std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
      for (size_t i = 0; i < all.size(); ++i) {
        HW_ASSIGN_OR_RETURN(
            auto first, FirstAtOrAfter(txn, all[i].agent_no, std::numeric_limits<int64_t>::min()));
        if (first.has_value()) heap.emplace(*first, i);
      }
      std::vector<size_t> count(all.size(), 0);
      std::vector<int64_t> last(all.size(), 0);
      for (uint64_t k = 0; k < n && !heap.empty(); ++k) {
        auto [t, i] = heap.top();
        heap.pop();
        ++count[i];
        last[i] = t;
        HW_ASSIGN_OR_RETURN(auto next, FirstAtOrAfter(txn, all[i].agent_no, t + 1));
        if (next.has_value()) heap.emplace(*next, i);
      }
      for (size_t i = 0; i < all.size(); ++i) {
        if (count[i] == 0) continue;
        HW_ASSIGN_OR_RETURN(
            PrefixDeletion d,
            DeleteOldestSnapshots(txn, all[i].info.id, all[i].agent_no, last[i] + 1, count[i]));
        effects.emplace_back(all[i], d);
      }
      if (effects.empty()) done = true;  // nothing deletable (cannot happen with snapshots present)
      return absl::OkStatus();
    }));
    for (const auto& [record, d] : effects) {
      AfterDeletion(record.info.id, d);
      deleted += d.deleted;
      if (d.now_empty) {
        HW_RETURN_IF_ERROR(DeleteDictionary(record.agent_no));
        cache.erase(record.info.id);
      }
    }
    if (done) {
      if (used > target_bytes) {
        spdlog::warn(
            "heapwatch store {}: {} bytes of live data after deleting every snapshot it could; "
            "retention_bytes is {}",
            dir, used, target_bytes);
      }
      break;
    }
  }
  if (deleted > 0) {
    spdlog::info("heapwatch store {}: retention by size deleted {} snapshots", dir, deleted);
  }
  return absl::OkStatus();
}

Status SnapshotStore::EnforceRetention() {
  Impl& s = *impl_;
  absl::Time cutoff = s.options.clock->Now() - s.options.retention_age;
  HW_RETURN_IF_ERROR(s.RetainByAge(absl::ToUnixMicros(cutoff)));
  return s.RetainBySize(s.options.retention_bytes);
}

Status SnapshotStore::DeleteAgent(const AgentId& id) {
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(id));
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.write_mu);
  AgentRecord record;
  {
    HW_ASSIGN_OR_RETURN(LmdbTxn txn, s.BeginRead());
    HW_ASSIGN_OR_RETURN(record, s.RequireAgent(txn, id));
  }
  s.cache.erase(id);
  for (;;) {
    PrefixDeletion d;
    HW_RETURN_IF_ERROR(s.Write([&](LmdbTxn& txn) -> Status {
      HW_ASSIGN_OR_RETURN(d, s.DeleteOldestSnapshots(txn, id, record.agent_no,
                                                     detail::kMaxAbsMicros, detail::kDeleteBatch));
      return absl::OkStatus();
    }));
    if (d.now_empty) break;
  }
  for (;;) {
    size_t n = 0;
    HW_RETURN_IF_ERROR(s.Write([&](LmdbTxn& txn) -> Status {
      HW_ASSIGN_OR_RETURN(
          n, s.DeleteOldPoints(txn, record.agent_no, detail::kMaxAbsMicros, detail::kDeleteBatch));
      return absl::OkStatus();
    }));
    if (n < detail::kDeleteBatch) break;
  }
  HW_RETURN_IF_ERROR(s.DeleteDictionary(record.agent_no));
  return s.Write([&](LmdbTxn& txn) { return txn.Del(s.agents, id.value).status(); });
}

}  // namespace heapwatch::storage
