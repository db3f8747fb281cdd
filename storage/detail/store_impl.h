// Internal: the state behind SnapshotStore and the helpers its .cc files share (snapshot_store.cc:
// open, agents, records, reads; append.cc: Append and its cache; retention.cc: retention and
// deletion).
#ifndef HEAPWATCH_STORAGE_DETAIL_STORE_IMPL_H_
#define HEAPWATCH_STORAGE_DETAIL_STORE_IMPL_H_

#include <lmdb.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/hash/hash.h"
#include "storage/detail/codec.h"
#include "storage/detail/lmdb_handles.h"
#include "storage/detail/time_series.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage::detail {

// Largest number of snapshots one retention or deletion transaction removes (bounds a transaction's
// dirty pages; see MDB_TXN_FULL in lmdb.h).
inline constexpr size_t kDeleteBatch = 4096;
// Snapshot times must lie within +-2^62 microseconds of the Unix epoch (about +-146,000 years), so
// that differences of two times fit in int64.
inline constexpr int64_t kMaxAbsMicros = int64_t{1} << 62;

inline constexpr size_t kMaxAgentIdBytes = 128;
// LMDB's compile-time MDB_MAXKEYSIZE (Debian's build keeps the default 511; checked at Open).
inline constexpr size_t kMaxLmdbKeyBytes = 511;

// The time as stored (Unix microseconds); InvalidArgument naming `what` ("snapshot", "live-set
// point") for an infinite time or one not within +-2^62 us of the epoch.
StatusOr<int64_t> StorableMicros(absl::Time t, std::string_view what);
// InvalidArgument unless `id` is 1..128 bytes of [A-Za-z0-9._:-] (common/agent.h).
Status ValidateAgentId(const AgentId& id);
// InvalidArgument unless table is 1..255 bytes and the records key (1 + table + key) fits LMDB's
// limit.
Status ValidateRecordKey(std::string_view table, std::string_view key);
// Reads and increments meta/next_agent_no. ResourceExhausted after 2^32-1 agents.
StatusOr<AgentNo> AllocateAgentNo(LmdbTxn& txn, MDB_dbi meta);

// Owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// Class identity inside one agent's dictionary, and its non-owning form for lookups.
struct ClassIdentity {
  std::string name;
  std::string module;
  uint32_t duplicate = 0;
};
struct ClassIdentityView {
  std::string_view name;
  std::string_view module;
  uint32_t duplicate = 0;
};
struct ClassIdentityHash {
  using is_transparent = void;
  size_t operator()(const ClassIdentityView& k) const {
    return absl::Hash<std::tuple<std::string_view, std::string_view, uint32_t>>()(
        std::make_tuple(k.name, k.module, k.duplicate));
  }
  size_t operator()(const ClassIdentity& k) const {
    return (*this)(ClassIdentityView{k.name, k.module, k.duplicate});
  }
};
struct ClassIdentityEq {
  using is_transparent = void;
  static ClassIdentityView View(const ClassIdentity& k) { return {k.name, k.module, k.duplicate}; }
  static ClassIdentityView View(const ClassIdentityView& k) { return k; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    ClassIdentityView x = View(a), y = View(b);
    return x.name == y.name && x.module == y.module && x.duplicate == y.duplicate;
  }
};

// What Append keeps in memory per agent between calls (guarded by Impl::write_mu). Always equal to
// the committed store: updated only after a commit, dropped whenever a write fails or retention
// touches the agent's newest snapshot or dictionary.
struct AgentCache {
  AgentNo agent_no;
  ClassNo next_class;
  absl::flat_hash_map<ClassIdentity, ClassNo, ClassIdentityHash, ClassIdentityEq> ids;
  // Per row position of the last Append, its entry in `ids` (null: none): rows usually come in the
  // same order, so Append compares a row with this entry before hashing it. Cleared whenever `ids`
  // changes (an insert may move the entries).
  std::vector<const std::pair<const ClassIdentity, ClassNo>*> position;
  bool has_latest = false;  // the agent has snapshots; latest_micros is the newest one's time
  int64_t latest_micros = 0;
  bool latest_decoded =
      false;  // `latest` holds it (false if it could not be decoded: no delta on it)
  uint32_t latest_depth = 0;  // 0 for a key frame
  // The chain that `latest` belongs to ends (the next snapshot is a key frame) at this depth:
  // keyframe_interval, except for an agent's first chain, cut to keyframe_interval - (agent number
  // mod keyframe_interval) so that agents that start together (a fleet, the load benchmark) do
  // not all write their key frames in the same second.
  uint32_t chain_limit = 1;
  NumberedHistogram latest;
  uint64_t last_use = 0;
};

// One Append waiting for a group commit (Impl::CommitGrouped): the writes of its transaction body
// and, once a committer ran it, the result. The body reads only the transaction and what the
// appending thread captured (never the cache), so any thread can run it.
struct PendingAppend {
  AgentId agent;
  absl::FunctionRef<Status(LmdbTxn&)> body;
  Status status;
  bool done = false;  // guarded by Impl::write_mu
};

// Result of deleting the oldest snapshots of one agent.
struct PrefixDeletion {
  size_t deleted = 0;
  std::optional<int64_t>
      rewritten_micros;    // the first remaining snapshot, rewritten as a key frame
  bool now_empty = false;  // the agent has no snapshots left
};

}  // namespace heapwatch::storage::detail

namespace heapwatch::storage {

struct SnapshotStore::Impl {
  StoreOptions options;
  std::string dir;
  detail::UniqueFd lock_fd;  // flock'ed for the store's lifetime
  detail::LmdbEnv env;
  MDB_dbi meta = 0, agents = 0, classes = 0, class_names = 0, snapshots = 0, records = 0;
  MDB_dbi costs = 0, live_set = 0;  // per-snapshot collection costs; live-set points
  MDB_dbi class_loading = 0;        // class-loading points
  MDB_dbi string_table = 0;         // string-table (interned strings) points

  // Shared by every transaction, exclusive while mdb_env_set_mapsize runs.
  mutable std::shared_mutex map_mu;
  // Serializes writers and guards `cache` and `cache_tick`.
  std::mutex write_mu;
  absl::flat_hash_map<AgentId, std::unique_ptr<detail::AgentCache>> cache;
  uint64_t cache_tick = 0;

  // Group commit (storage/group_commit.cc). Appends of many agents' threads share one write
  // transaction: an Append prepares its writes under write_mu, queues them and waits; whichever
  // waiting Append finds no commit running becomes the committer, takes the queue, runs every body
  // in one transaction and commits it without write_mu (so the next batch queues meanwhile). Each
  // Append returns only after the transaction holding its writes committed. One Append per agent
  // is in flight at a time, and the other writers (Write) wait until no Append is in flight, so the
  // cache an Append prepared against is still the committed store's when its batch commits.
  // All guarded by write_mu.
  std::condition_variable commit_cv;
  std::vector<detail::PendingAppend*> commit_queue;
  bool committing = false;                 // a committer runs a batch (without write_mu)
  absl::flat_hash_set<AgentId> appending;  // agents with an Append queued, running or
                                           // updating its cache after the commit
  int writers_waiting = 0;                 // Write calls waiting for `appending` to empty
  std::atomic<uint64_t> commits{0};        // write transactions committed since Open
  // REQUIRES: `lock` holds write_mu. Waits until the agent has no Append in flight and no other
  // writer waits (call before preparing an Append against the cache).
  void AwaitAppendTurn(std::unique_lock<std::mutex>& lock, const AgentId& agent);
  // REQUIRES: `lock` holds write_mu, AwaitAppendTurn returned for pending->agent. Queues `pending`
  // and returns its result once the transaction holding it committed (or failed); returns with
  // write_mu held and the agent still marked in `appending` (call FinishAppend after updating the
  // cache). A batch whose body or commit fails is retried one Append per transaction, so a failure
  // (e.g. a full disk, AlreadyExists) reaches only the Appends it belongs to.
  Status CommitGrouped(std::unique_lock<std::mutex>& lock, detail::PendingAppend* pending);
  // REQUIRES: write_mu held. Ends the agent's Append (after its cache update).
  void FinishAppend(const AgentId& agent);
  // Write without waiting for Appends in flight (the committer's; and Write's after the wait).
  Status WriteNow(absl::FunctionRef<Status(detail::LmdbTxn&)> body);

  StatusOr<detail::LmdbTxn> BeginRead() const;

  // The per-agent time series tables (detail/time_series.h), in the order UsageByKind lists them.
  enum Series : size_t { kLiveSet = 0, kClassLoading = 1, kStringTable = 2, kSeriesTables = 3 };
  std::array<detail::TimeSeriesTable, kSeriesTables> SeriesTables() const {
    return {detail::TimeSeriesTable{live_set, "live_set", "live-set point"},
            detail::TimeSeriesTable{class_loading, "class_loading", "class-loading point"},
            detail::TimeSeriesTable{string_table, "string_table", "string-table point"}};
  }
  // The body of AppendLiveSet, AppendClassLoading, ...: checks the agent id and time, then stores
  // the encoded point (`value`) of an existing agent in one write transaction (takes write_mu).
  // Errors: as the public Append methods.
  Status AppendPoint(const detail::TimeSeriesTable& t, const AgentId& agent, absl::Time time,
                     std::string_view value);
  // The body of ReadLiveSet, ReadClassLoading, ...: checks the agent id, then calls
  // ForEachPoint over [from, to] in one read transaction. NotFound for an unknown agent.
  Status ReadPoints(
      const detail::TimeSeriesTable& t, const AgentId& agent, absl::Time from, absl::Time to,
      absl::FunctionRef<Status(int64_t micros, std::string_view value, std::string_view where)> fn)
      const;
  // REQUIRES: write_mu held. Waits until no Append is in flight (group commit, above), then runs
  // `body` in a write transaction and commits it. When the map is
  // full the transaction is aborted, the map doubled, and `body` run again from the start (so
  // `body` must not have effects outside the transaction, or must reset them on entry).
  Status Write(absl::FunctionRef<Status(detail::LmdbTxn&)> body);
  // REQUIRES: write_mu held, no transaction of this thread active.
  Status GrowMap();
  // Turns an EIO from a commit into ResourceExhausted when the disk (or RLIMIT_FSIZE) is nearly
  // full.
  Status ExplainIoError(const Status& s) const;
  static constexpr uint64_t kNearlyFullBytes = 1 << 20;

  // Agents.
  StatusOr<std::optional<detail::AgentRecord>> FindAgent(detail::LmdbTxn& txn,
                                                         const AgentId& id) const;
  // NotFound for unknown agents.
  StatusOr<detail::AgentRecord> RequireAgent(detail::LmdbTxn& txn, const AgentId& id) const;
  // Every agent record in key order.
  StatusOr<std::vector<detail::AgentRecord>> AllAgents(detail::LmdbTxn& txn) const;

  // Snapshots.
  // Time of the agent's newest snapshot at or before `micros`, if any.
  StatusOr<std::optional<int64_t>> LatestAtOrBefore(detail::LmdbTxn& txn, detail::AgentNo agent,
                                                    int64_t micros) const;
  // Time of the agent's oldest snapshot at or after `micros`, if any.
  StatusOr<std::optional<int64_t>> FirstAtOrAfter(detail::LmdbTxn& txn, detail::AgentNo agent,
                                                  int64_t micros) const;
  // Decodes the snapshot at exactly `micros`, following its delta chain back to a key frame.
  // NotFound if absent; DataLoss on a corrupt value or a broken chain. *depth receives the stored
  // delta depth.
  Status DecodeAt(detail::LmdbTxn& txn, const AgentId& id, detail::AgentNo agent, int64_t micros,
                  detail::NumberedHistogram* out, uint32_t* depth = nullptr) const;
  // Calls fn(micros, histogram) for every snapshot of the agent in [from, to], oldest first,
  // decoding incrementally (one key-frame chain, then one value per snapshot).
  Status ForEachSnapshot(
      detail::LmdbTxn& txn, const AgentId& id, detail::AgentNo agent, int64_t from, int64_t to,
      absl::FunctionRef<Status(int64_t, const detail::NumberedHistogram&)> fn) const;
  // Turns numbered histograms into Snapshots (names from the dictionary, canonical row order).
  StatusOr<std::vector<Snapshot>> Materialize(
      detail::LmdbTxn& txn, const AgentId& id, detail::AgentNo agent,
      const std::vector<std::pair<int64_t, detail::NumberedHistogram>>& hs) const;

  // Append cache (REQUIRE write_mu held).
  StatusOr<detail::AgentCache*> CacheFor(const AgentId& id);
  void EvictIfNeeded();

  // Deletion (REQUIRE write_mu held, inside Write).
  // Deletes up to max_count of the agent's oldest snapshots with time < before_micros, rewriting
  // the first remaining snapshot as a key frame if it was a delta.
  StatusOr<detail::PrefixDeletion> DeleteOldestSnapshots(detail::LmdbTxn& txn, const AgentId& id,
                                                         detail::AgentNo agent,
                                                         int64_t before_micros, size_t max_count);
  // Deletes up to max_count of the agent's points with time < before_micros from each time series
  // table (detail::DeletePointsBefore); returns the largest count deleted from one table.
  StatusOr<size_t> DeleteOldPoints(detail::LmdbTxn& txn, detail::AgentNo agent,
                                   int64_t before_micros, size_t max_count);
  // Deletes up to max_count keys of `dbi` starting with `prefix`; returns how many.
  StatusOr<size_t> DeletePrefix(detail::LmdbTxn& txn, MDB_dbi dbi, std::string_view prefix,
                                size_t max_count);
  // Deletes the agent's class dictionary (both tables), in batches of its own transactions.
  Status DeleteDictionary(detail::AgentNo agent);
  // Applies the effects of a deletion on the cache after it committed.
  void AfterDeletion(const AgentId& id, const detail::PrefixDeletion& d);

  StatusOr<uint64_t> UsedBytesIn(detail::LmdbTxn& txn) const;
  Status RetainByAge(int64_t cutoff_micros);
  Status RetainBySize(uint64_t target_bytes);
};

}  // namespace heapwatch::storage

#endif  // HEAPWATCH_STORAGE_DETAIL_STORE_IMPL_H_
