// Reading snapshots back: positioning on an agent's keys, decoding delta chains, and turning
// numbered histograms into Snapshots with class names.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentNo;
using detail::ClassEntry;
using detail::ClassNo;
using detail::LmdbCursor;
using detail::LmdbTxn;
using detail::NumberedHistogram;
using detail::NumberedRow;
using detail::SnapshotKind;
using detail::SnapshotValue;

namespace {

// Reads the cursor's current snapshot key; false if the cursor is off the end or on another agent.
bool KeyOfAgent(bool positioned, std::string_view k, AgentNo agent, int64_t* micros) {
  AgentNo a;
  return positioned && detail::ParseSnapshotKey(k, &a, micros) && a == agent;
}

Status BrokenChain(const AgentId& id, int64_t micros, int64_t base_micros) {
  return absl::DataLossError(absl::StrFormat(
      "heapwatch store: corrupt value at %s: its base snapshot (%s) is missing (delta chain "
      "broken)",
      detail::DescribeSnapshot(id, micros), detail::DescribeSnapshot(id, base_micros)));
}

}  // namespace

StatusOr<std::optional<int64_t>> SnapshotStore::Impl::LatestAtOrBefore(LmdbTxn& txn, AgentNo agent,
                                                                       int64_t micros) const {
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, snapshots));
  std::string_view k;
  bool ok;
  if (micros >= detail::kMaxAbsMicros) {
    // Beyond any stored time: the first key of the next agent, if any, bounds the search.
    if (agent.value == UINT32_MAX) {
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_LAST, &k, nullptr));
    } else {
      HW_ASSIGN_OR_RETURN(ok, c.Seek(detail::AgentPrefix(AgentNo{agent.value + 1}), &k, nullptr));
      HW_ASSIGN_OR_RETURN(ok, c.Move(ok ? MDB_PREV : MDB_LAST, &k, nullptr));
    }
  } else {
    HW_ASSIGN_OR_RETURN(ok, c.Seek(detail::SnapshotKey(agent, micros + 1), &k, nullptr));
    HW_ASSIGN_OR_RETURN(ok, c.Move(ok ? MDB_PREV : MDB_LAST, &k, nullptr));
  }
  int64_t t;
  if (!KeyOfAgent(ok, k, agent, &t) || t > micros) return std::optional<int64_t>();
  return std::optional<int64_t>(t);
}

StatusOr<std::optional<int64_t>> SnapshotStore::Impl::FirstAtOrAfter(LmdbTxn& txn, AgentNo agent,
                                                                     int64_t micros) const {
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, snapshots));
  std::string_view k;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::SnapshotKey(agent, micros), &k, nullptr));
  int64_t t;
  if (!KeyOfAgent(ok, k, agent, &t)) return std::optional<int64_t>();
  return std::optional<int64_t>(t);
}

Status SnapshotStore::Impl::DecodeAt(LmdbTxn& txn, const AgentId& id, AgentNo agent, int64_t micros,
                                     NumberedHistogram* out, uint32_t* depth) const {
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, snapshots));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.SeekExact(detail::SnapshotKey(agent, micros), &v));
  if (!ok) {
    return absl::NotFoundError("heapwatch store: no snapshot " +
                               detail::DescribeSnapshot(id, micros));
  }
  // Walk back to the key frame, then apply the values forward. Each delta's base is the previous
  // key (docs/storage-format.md, "Delta chains"); the stored gap double-checks it.
  struct Link {
    int64_t micros;
    SnapshotValue value;
  };
  std::vector<Link> chain;
  int64_t t = micros;
  for (;;) {
    HW_ASSIGN_OR_RETURN(SnapshotValue sv,
                        detail::ParseSnapshotValue(v, detail::DescribeSnapshot(id, t)));
    chain.push_back(Link{t, sv});
    if (sv.kind == SnapshotKind::kFull) break;
    int64_t base = t - sv.base_gap_micros;
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_PREV, &k, &v));
    int64_t prev;
    if (!KeyOfAgent(ok, k, agent, &prev) || prev != base) return BrokenChain(id, t, base);
    t = prev;
  }
  if (depth != nullptr) *depth = chain.front().value.depth;
  detail::DecodeScratch scratch;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    HW_RETURN_IF_ERROR(detail::ApplySnapshotValue(
        it->value, detail::DescribeSnapshot(id, it->micros), out, &scratch));
  }
  return absl::OkStatus();
}

Status SnapshotStore::Impl::ForEachSnapshot(
    LmdbTxn& txn, const AgentId& id, AgentNo agent, int64_t from, int64_t to,
    absl::FunctionRef<Status(int64_t, const NumberedHistogram&)> fn) const {
  if (from > to) return absl::OkStatus();
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, snapshots));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::SnapshotKey(agent, from), &k, nullptr));
  int64_t t;
  if (!KeyOfAgent(ok, k, agent, &t) || t > to) return absl::OkStatus();
  NumberedHistogram h;
  HW_RETURN_IF_ERROR(DecodeAt(txn, id, agent, t, &h));
  HW_RETURN_IF_ERROR(fn(t, h));
  detail::DecodeScratch scratch;
  int64_t prev = t;
  for (;;) {
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
    if (!KeyOfAgent(ok, k, agent, &t) || t > to) break;
    std::string what = detail::DescribeSnapshot(id, t);
    HW_ASSIGN_OR_RETURN(SnapshotValue sv, detail::ParseSnapshotValue(v, what));
    if (sv.kind == SnapshotKind::kDelta && t - sv.base_gap_micros != prev) {
      return BrokenChain(id, t, t - sv.base_gap_micros);
    }
    HW_RETURN_IF_ERROR(detail::ApplySnapshotValue(sv, what, &h, &scratch));
    HW_RETURN_IF_ERROR(fn(t, h));
    prev = t;
  }
  return absl::OkStatus();
}

StatusOr<std::vector<Snapshot>> SnapshotStore::Impl::Materialize(
    LmdbTxn& txn, const AgentId& id, AgentNo agent,
    const std::vector<std::pair<int64_t, NumberedHistogram>>& hs) const {
  // The classes any of the snapshots mention, looked up once each, in key order.
  std::vector<ClassNo> wanted;
  for (const auto& [t, h] : hs) {
    for (const NumberedRow& r : h.rows) wanted.push_back(r.cls);
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<ClassEntry> entries(wanted.size());
  {
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, classes));
    std::string_view k, v;
    bool positioned = false;
    ClassNo at;
    for (size_t i = 0; i < wanted.size(); ++i) {
      ClassNo cls = wanted[i];
      bool ok = false;
      if (positioned && at.value + 1 == cls.value) {
        // Dictionaries are dense: the next key is usually the next class.
        HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
        AgentNo a;
        ok = ok && detail::ParseClassKey(k, &a, &at) && a == agent && at == cls;
      }
      if (!ok) {
        HW_ASSIGN_OR_RETURN(ok, c.SeekExact(detail::ClassKey(agent, cls), &v));
      }
      std::string what = absl::StrFormat("classes[%s #%d]", id.value, cls.value);
      if (!ok) {
        return absl::DataLossError(
            "heapwatch store: a snapshot refers to missing dictionary entry " + what);
      }
      positioned = true;
      at = cls;
      HW_ASSIGN_OR_RETURN(entries[i], detail::DecodeClassEntry(v, what));
    }
  }
  // Rank of each entry by (name, module): sorting rows then compares integers, not strings.
  std::vector<uint32_t> order(entries.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (int c = entries[a].name.compare(entries[b].name); c != 0) return c < 0;
    return entries[a].module < entries[b].module;
  });
  std::vector<uint32_t> rank(entries.size());
  for (uint32_t r = 0; r < order.size(); ++r) {
    bool same_as_prev = r > 0 && entries[order[r]].name == entries[order[r - 1]].name &&
                        entries[order[r]].module == entries[order[r - 1]].module;
    rank[order[r]] = same_as_prev ? rank[order[r - 1]] : r;
  }

  std::vector<Snapshot> out;
  out.reserve(hs.size());
  struct Ranked {
    uint64_t bytes;
    uint32_t rank;
    uint64_t instances;
    uint32_t entry;
  };
  std::vector<Ranked> rows;
  for (const auto& [t, h] : hs) {
    rows.clear();
    size_t e = 0;
    for (const NumberedRow& r : h.rows) {
      // Both h.rows and `wanted` are sorted by class number.
      e = static_cast<size_t>(
          std::lower_bound(wanted.begin() + static_cast<std::ptrdiff_t>(e), wanted.end(), r.cls) -
          wanted.begin());
      HW_CHECK(e < wanted.size() && wanted[e] == r.cls);
      rows.push_back(Ranked{r.bytes, rank[e], r.instances, static_cast<uint32_t>(e)});
    }
    std::sort(rows.begin(), rows.end(), [](const Ranked& a, const Ranked& b) {
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      if (a.rank != b.rank) return a.rank < b.rank;
      return a.instances < b.instances;
    });
    Snapshot s;
    s.agent = id;
    s.time = absl::FromUnixMicros(t);
    s.histogram.total_instances = h.total_instances;
    s.histogram.total_bytes = h.total_bytes;
    HW_ASSIGN_OR_RETURN(auto cost, txn.Get(costs, detail::SnapshotKey(agent, t)));
    if (cost.has_value()) {
      HW_ASSIGN_OR_RETURN(s.cost,
                          detail::DecodeCollectionCost(*cost, "costs[" + detail::DescribeSnapshot(id, t) + "]"));
    }
    s.histogram.rows.reserve(rows.size());
    for (const Ranked& r : rows) {
      s.histogram.rows.push_back(
          ClassHistogramRow{entries[r.entry].name, entries[r.entry].module, r.instances, r.bytes});
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace heapwatch::storage
