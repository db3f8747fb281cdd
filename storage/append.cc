// SnapshotStore::Append: interning class names into the agent's dictionary, choosing key frame or
// delta, and the per-agent cache that makes both O(rows) without reading the store.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

using detail::AgentCache;
using detail::AgentNo;
using detail::AgentRecord;
using detail::ClassEntry;
using detail::ClassIdentity;
using detail::ClassIdentityView;
using detail::ClassNo;
using detail::LmdbCursor;
using detail::LmdbTxn;
using detail::NumberedHistogram;
using detail::NumberedRow;
using detail::SnapshotKind;

StatusOr<AgentCache*> SnapshotStore::Impl::CacheFor(const AgentId& id) {
  auto it = cache.find(id);
  if (it != cache.end()) {
    it->second->last_use = ++cache_tick;
    return it->second.get();
  }
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, BeginRead());
  HW_ASSIGN_OR_RETURN(std::optional<AgentRecord> record, FindAgent(txn, id));
  if (!record.has_value()) return nullptr;  // a new agent: created by the Append transaction
  auto c = std::make_unique<AgentCache>();
  c->agent_no = record->agent_no;
  c->next_class = record->next_class;
  c->chain_limit = options.keyframe_interval;
  {
    HW_ASSIGN_OR_RETURN(LmdbCursor cur, LmdbCursor::Open(&txn, classes));
    std::string prefix = detail::AgentPrefix(c->agent_no);
    std::string_view k, v;
    HW_ASSIGN_OR_RETURN(bool ok, cur.Seek(prefix, &k, &v));
    while (ok && k.substr(0, prefix.size()) == prefix) {
      AgentNo a;
      ClassNo cls;
      if (!detail::ParseClassKey(k, &a, &cls)) {
        return absl::DataLossError("heapwatch store: malformed classes key for agent " + id.value);
      }
      std::string what = absl::StrFormat("classes[%s #%d]", id.value, cls.value);
      if (cls >= c->next_class) {
        return absl::DataLossError("heapwatch store: " + what +
                                   " is beyond the agent's class counter");
      }
      // A corrupt entry is skipped: its class gets a new number when it is next seen (numbers are
      // never reused), so new snapshots stay correct; reads of old ones report the DataLoss.
      StatusOr<ClassEntry> e = detail::DecodeClassEntry(v, what);
      if (e.ok()) {
        c->ids.emplace(ClassIdentity{std::move(e->name), std::move(e->module), e->duplicate}, cls);
      } else {
        spdlog::error("heapwatch store {}: {}; the class will be re-interned", dir,
                      e.status().ToString());
      }
      HW_ASSIGN_OR_RETURN(ok, cur.Move(MDB_NEXT, &k, &v));
    }
  }
  HW_ASSIGN_OR_RETURN(std::optional<int64_t> latest,
                      LatestAtOrBefore(txn, c->agent_no, detail::kMaxAbsMicros));
  if (latest.has_value()) {
    c->has_latest = true;
    c->latest_micros = *latest;
    Status st = DecodeAt(txn, id, c->agent_no, *latest, &c->latest, &c->latest_depth);
    if (st.ok()) {
      c->latest_decoded = true;
    } else if (absl::IsDataLoss(st)) {
      // Keep collecting: the next snapshot becomes a key frame instead of a delta on a corrupt
      // chain.
      spdlog::error("heapwatch store {}: {}; the next snapshot of {} is stored as a key frame", dir,
                    st.ToString(), id.value);
      c->latest = NumberedHistogram();
    } else {
      return st;
    }
  }
  c->last_use = ++cache_tick;
  AgentCache* raw = c.get();
  cache[id] = std::move(c);
  EvictIfNeeded();
  return raw;
}

void SnapshotStore::Impl::EvictIfNeeded() {
  while (cache.size() > std::max<size_t>(options.max_cached_agents, 1)) {
    auto oldest = cache.begin();
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->second->last_use < oldest->second->last_use) oldest = it;
    }
    cache.erase(oldest);
  }
}

Status SnapshotStore::Append(const Snapshot& snapshot) { return Append(snapshot, {}); }

Status SnapshotStore::Append(const Snapshot& snapshot, const std::vector<RecordPut>& records) {
  std::vector<std::string> record_values;
  record_values.reserve(records.size());
  for (const RecordPut& p : records) {
    HW_RETURN_IF_ERROR(detail::ValidateRecordKey(p.table, p.key));
    if (p.value.size() > UINT32_MAX - 4) {
      return absl::InvalidArgumentError("record value too large");
    }
    record_values.push_back(detail::EncodeRecordValue(p.value));
  }
  const AgentId& id = snapshot.agent;
  HW_RETURN_IF_ERROR(detail::ValidateAgentId(id));
  HW_ASSIGN_OR_RETURN(const int64_t micros, detail::StorableMicros(snapshot.time, "snapshot"));
  const std::vector<ClassHistogramRow>& rows = snapshot.histogram.rows;
  for (const ClassHistogramRow& r : rows) {
    if (r.class_name.empty())
      return absl::InvalidArgumentError("histogram row with empty class name");
  }

  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.write_mu);
  s.AwaitAppendTurn(lock, id);
  HW_ASSIGN_OR_RETURN(AgentCache * cache, s.CacheFor(id));

  // Intern: the k-th row with a given (name, module) is class (name, module, k). Rows are unique in
  // almost every histogram, so the first pass numbers every row as duplicate 0 and checks the
  // assumption (two rows on one known class, or two new rows with one name and module); only then
  // does a second pass count duplicates.
  NumberedHistogram next;
  next.total_instances = snapshot.histogram.total_instances;
  next.total_bytes = snapshot.histogram.total_bytes;
  std::vector<std::pair<ClassNo, const ClassHistogramRow*>> new_classes;
  std::vector<uint32_t> new_duplicates;
  uint64_t next_class = 0;
  auto number = [&](bool count_duplicates) -> Status {
    absl::flat_hash_map<std::pair<std::string_view, std::string_view>, uint32_t> seen;
    if (count_duplicates) seen.reserve(rows.size());
    next.rows.clear();
    next.rows.reserve(rows.size());
    new_classes.clear();
    new_duplicates.clear();
    next_class = cache != nullptr ? cache->next_class.value : 0;
    if (cache != nullptr) cache->position.resize(rows.size(), nullptr);
    for (size_t i = 0; i < rows.size(); ++i) {
      const ClassHistogramRow& r = rows[i];
      uint32_t dup = count_duplicates ? seen[{r.class_name, r.module}]++ : 0;
      ClassNo cls;
      bool known = false;
      if (cache != nullptr) {
        const auto* guess = cache->position[i];
        if (guess != nullptr && guess->first.duplicate == dup &&
            guess->first.name == r.class_name && guess->first.module == r.module) {
          cls = guess->second;
          known = true;
        } else {
          auto found = cache->ids.find(ClassIdentityView{r.class_name, r.module, dup});
          if (found != cache->ids.end()) {
            cls = found->second;
            known = true;
            cache->position[i] = &*found;
          }
        }
      }
      if (!known) {
        if (next_class > UINT32_MAX - 1) {
          return absl::ResourceExhaustedError("heapwatch store: agent " + id.value +
                                              " has exhausted its 2^32-1 class numbers");
        }
        cls = ClassNo{static_cast<uint32_t>(next_class++)};
        new_classes.emplace_back(cls, &r);
        new_duplicates.push_back(dup);
      }
      next.rows.push_back(NumberedRow{cls, r.instances, r.bytes});
    }
    std::sort(next.rows.begin(), next.rows.end(),
              [](const NumberedRow& a, const NumberedRow& b) { return a.cls < b.cls; });
    return absl::OkStatus();
  };
  HW_RETURN_IF_ERROR(number(/*count_duplicates=*/false));
  bool duplicates = std::adjacent_find(next.rows.begin(), next.rows.end(),
                                       [](const NumberedRow& a, const NumberedRow& b) {
                                         return a.cls == b.cls;
                                       }) != next.rows.end();
  if (!duplicates && new_classes.size() > 1) {
    absl::flat_hash_set<std::pair<std::string_view, std::string_view>> fresh;
    for (const auto& [cls, row] : new_classes) {
      if (!fresh.insert({row->class_name, row->module}).second) {
        duplicates = true;
        break;
      }
    }
  }
  if (duplicates) HW_RETURN_IF_ERROR(number(/*count_duplicates=*/true));

  // Key frame or delta (docs/storage-format.md, "Delta chains").
  const bool in_order = cache == nullptr || !cache->has_latest || micros > cache->latest_micros;
  const bool delta = cache != nullptr && cache->has_latest && cache->latest_decoded &&
                     micros > cache->latest_micros &&
                     cache->latest_depth + 1 < cache->chain_limit;
  const uint32_t depth = delta ? cache->latest_depth + 1 : 0;
  const std::string value =
      delta ? detail::EncodeDeltaSnapshot(cache->latest, next, micros - cache->latest_micros, depth,
                                          s.options.compress_snapshots)
            : detail::EncodeFullSnapshot(next, s.options.compress_snapshots);
  const int64_t now_micros = absl::ToUnixMicros(s.options.clock->Now());

  AgentNo agent_no;
  std::optional<int64_t> rewritten;  // an out-of-order insert re-encodes the snapshot after it
  // The transaction body runs in a group commit, possibly on another Append's thread and without
  // write_mu: it reads only the transaction and these locals, never the cache (which other
  // agents' Appends may evict meanwhile).
  const bool cached = cache != nullptr;
  const AgentNo cached_agent_no = cached ? cache->agent_no : AgentNo{};
  auto body = [&](LmdbTxn& txn) -> Status {
    rewritten.reset();
    HW_ASSIGN_OR_RETURN(std::optional<AgentRecord> record, s.FindAgent(txn, id));
    bool write_record = false;
    if (!record.has_value()) {
      HW_CHECK(!cached);
      record.emplace();
      record->info.id = id;
      HW_ASSIGN_OR_RETURN(record->agent_no, detail::AllocateAgentNo(txn, s.meta));
      record->updated_micros = now_micros;
      write_record = true;
    }
    HW_CHECK(!cached || cached_agent_no == record->agent_no);
    agent_no = record->agent_no;
    const std::string key = detail::SnapshotKey(agent_no, micros);
    HW_ASSIGN_OR_RETURN(auto existing, txn.Get(s.snapshots, key));
    if (existing.has_value()) {
      return absl::AlreadyExistsError("heapwatch store: snapshot exists: " +
                                      detail::DescribeSnapshot(id, micros));
    }
    if (!in_order) {
      // The next snapshot's delta was against this one's predecessor: make it a key frame first
      // (decoded before the insert, while its chain is intact).
      HW_ASSIGN_OR_RETURN(std::optional<int64_t> after, s.FirstAtOrAfter(txn, agent_no, micros));
      HW_CHECK(after.has_value());  // the cached latest snapshot is after `micros`
      HW_ASSIGN_OR_RETURN(auto after_value,
                          txn.Get(s.snapshots, detail::SnapshotKey(agent_no, *after)));
      HW_ASSIGN_OR_RETURN(
          detail::SnapshotValue sv,
          detail::ParseSnapshotValue(*after_value, detail::DescribeSnapshot(id, *after)));
      // (A corrupt next snapshot fails the append: inserting before it would hide which base it
      // had.)
      if (sv.kind == SnapshotKind::kDelta) {
        NumberedHistogram h;
        HW_RETURN_IF_ERROR(s.DecodeAt(txn, id, agent_no, *after, &h));
        HW_RETURN_IF_ERROR(txn.Put(s.snapshots, detail::SnapshotKey(agent_no, *after),
                                   detail::EncodeFullSnapshot(h, s.options.compress_snapshots)));
        rewritten = *after;
      }
    }
    for (size_t i = 0; i < new_classes.size(); ++i) {
      const auto& [cls, row] = new_classes[i];
      HW_RETURN_IF_ERROR(txn.Put(
          s.classes, detail::ClassKey(agent_no, cls),
          detail::EncodeClassEntry(ClassEntry{row->class_name, row->module, new_duplicates[i]})));
      HW_RETURN_IF_ERROR(
          txn.Put(s.class_names,
                  detail::ClassNameKey(agent_no, detail::ClassNameHash(row->class_name), cls), ""));
    }
    if (!new_classes.empty()) {
      record->next_class = ClassNo{static_cast<uint32_t>(next_class)};
      write_record = true;
    }
    HW_RETURN_IF_ERROR(txn.Put(s.snapshots, key, value));
    if (snapshot.cost.mode != HistogramMode::kUnknown) {
      HW_RETURN_IF_ERROR(txn.Put(s.costs, key, detail::EncodeCollectionCost(snapshot.cost)));
    }
    if (write_record) {
      HW_RETURN_IF_ERROR(txn.Put(s.agents, id.value, detail::EncodeAgentRecord(*record)));
    }
    for (size_t i = 0; i < records.size(); ++i) {
      HW_RETURN_IF_ERROR(txn.Put(s.records, detail::RecordKey(records[i].table, records[i].key),
                                 record_values[i]));
    }
    return absl::OkStatus();
  };
  detail::PendingAppend pending{id, body};
  const Status st = s.CommitGrouped(lock, &pending);
  // Ends this agent's Append once the cache is up to date (every return below).
  struct Finish {
    Impl& s;
    const AgentId& id;
    ~Finish() { s.FinishAppend(id); }
  } finish{s, id};
  // Another agent's Append may have evicted the entry while the batch committed.
  auto entry = s.cache.find(id);
  cache = entry == s.cache.end() ? nullptr : entry->second.get();
  if (!st.ok()) {
    // The cache still equals the committed store (nothing was applied), except that a failed commit
    // could leave us unsure; reload next time to be safe.
    if (cache != nullptr && !absl::IsAlreadyExists(st)) s.cache.erase(id);
    return st;
  }

  // Committed: bring the cache up to date (an evicted entry is reloaded by the next Append).
  if (cache == nullptr && cached) {
    s.EvictIfNeeded();
    return absl::OkStatus();
  }
  if (cache == nullptr) {
    auto c = std::make_unique<AgentCache>();
    c->agent_no = agent_no;
    cache = c.get();
    s.cache[id] = std::move(c);
  }
  cache->last_use = ++s.cache_tick;
  for (size_t i = 0; i < new_classes.size(); ++i) {
    const ClassHistogramRow* row = new_classes[i].second;
    cache->ids.emplace(ClassIdentity{row->class_name, row->module, new_duplicates[i]},
                       new_classes[i].first);
  }
  if (!new_classes.empty()) cache->position.clear();  // the inserts may have moved the entries
  cache->next_class = ClassNo{static_cast<uint32_t>(next_class)};
  if (in_order) {
    if (depth == 0) {
      const uint32_t interval = s.options.keyframe_interval;
      cache->chain_limit =
          cache->has_latest ? interval : interval - cache->agent_no.value % interval;
    }
    cache->has_latest = true;
    cache->latest_micros = micros;
    cache->latest_decoded = true;
    cache->latest_depth = depth;
    cache->latest = std::move(next);
  } else if (rewritten.has_value() && *rewritten == cache->latest_micros) {
    cache->latest_depth = 0;
  }
  s.EvictIfNeeded();
  return absl::OkStatus();
}

}  // namespace heapwatch::storage
