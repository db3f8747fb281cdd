// SnapshotStore: heapwatch's durable history of class-histogram snapshots, agents and small
// records, in one LMDB environment (Lightning Memory-Mapped Database 0.9, Debian liblmdb-dev; API
// reference: lmdb.h).
//
// What is stored (layout, grammar and endianness: docs/storage-format.md):
//  - agents: AgentInfo per agent (upserted by PutAgent; agents first seen by Append get a bare
//    record);
//  - per agent, a class dictionary: every (class name, module) the agent ever reported gets a small
//    number;
//  - snapshots keyed by (agent, time in Unix microseconds), big-endian so they sort by agent then
//    time; a value is a key frame (every row, varint-coded) or a delta against the agent's
//    previous snapshot (only the classes that changed, appeared or vanished), zlib-compressed when
//    that makes it smaller. Every `keyframe_interval`-th snapshot is a key frame (an agent's first
//    chain is shorter by its agent number mod the interval, so that agents started together do not
//    write their key frames at once), so reading one snapshot decodes at most that many values.
//  - records: a generic (table, key) -> bytes table for other features (e.g. drill-down reports).
//
// Durability: every mutating call commits an LMDB write transaction holding its changes before it
// returns OK (concurrent Appends share one: group commit, see Append). The
// environment is opened without MDB_NOSYNC, MDB_NOMETASYNC and MDB_WRITEMAP, so a commit has
// written and fsynced the data pages and then the meta page (lmdb.h, mdb_env_open flags): what a
// call reported as OK survives a crash or kill -9 of the process at any moment, and a crash never
// leaves a partially written transaction visible. A failed call leaves the store as it was (the
// transaction is aborted).
//
// Growth: the memory map starts at `initial_map_bytes` and doubles (mdb_env_set_mapsize) whenever a
// write hits MDB_MAP_FULL; the write is then retried, so a full map is never an error until
// `max_map_bytes`. A real full disk (ENOSPC, EDQUOT, EFBIG from the file system) returns
// ResourceExhausted and changes nothing.
//
// Retention: snapshots older than `retention_age` are deleted, then the oldest snapshots of all
// agents (globally oldest first) until the live data (pages of all tables) is at most
// `retention_bytes`. It runs in a background thread every `retention_interval` and on demand
// (EnforceRetention). LMDB never shrinks its file: freed pages are reused by later writes, so the
// file settles at about the retention size plus LMDB's free pages.
//
// Rows on read: Append stores the rows of a histogram as a set. Reads return them ordered by bytes
// descending, then class name, then module (the order HotSpot prints up to ties; see
// SortRowsCanonically). Times are stored with microsecond precision (absl::ToUnixMicros, rounding
// down).
//
// Thread-safety: all methods are thread-safe. Writers (PutAgent, Append, PutRecord, DeleteRecord,
// DeleteAgent, EnforceRetention) are serialized by an internal mutex (Appends only while they
// prepare their writes; they then commit together, and the other writers wait for them); readers
// run concurrently with each other and with the writer, each in its own LMDB read transaction
// (MDB_NOTLS is set, so read transactions are not tied to threads and the daemon's thread pools
// need no per-thread care). Growing the map waits until running read transactions have ended
// (mdb_env_set_mapsize requires that no transaction is active). One store per data directory: a
// second Open of the same directory, from this or another process, fails with FailedPrecondition
// while the first is open (flock on <dir>/heapwatch.lock).
//
// Errors common to every method: ResourceExhausted (disk full, map at max_map_bytes, LMDB reader
// table full), DataLoss (a corrupt or truncated value, unknown format version; the message names
// the key), Internal (an unexpected LMDB or I/O failure, e.g. EIO; the message names the LMDB
// call).
#ifndef HEAPWATCH_STORAGE_SNAPSHOT_STORE_H_
#define HEAPWATCH_STORAGE_SNAPSHOT_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/class_loading.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "common/status.h"
#include "common/string_table.h"

namespace heapwatch::storage {

struct StoreOptions {
  // Data directory; created (mode 0700) with its parents if missing. Holds data.mdb, lock.mdb
  // (LMDB) and heapwatch.lock.
  std::string dir;
  // Initial size of the LMDB memory map in bytes (also its minimum; LMDB uses at least the data
  // file's size). The map doubles on MDB_MAP_FULL up to max_map_bytes. Address space only, not disk
  // or memory.
  uint64_t initial_map_bytes = 64 << 20;
  // Upper bound of the map (and so of the data file) in bytes; a write that needs more fails with
  // ResourceExhausted.
  uint64_t max_map_bytes = 1ull << 40;
  // Snapshots older than this (by `clock`) are deleted by retention.
  absl::Duration retention_age = absl::Hours(24 * 14);
  // Retention deletes the oldest snapshots until the live data of the store is at most this many
  // bytes.
  uint64_t retention_bytes = 1ull << 30;
  // Period of the background retention thread (real time).
  absl::Duration retention_interval = absl::Minutes(1);
  // Time source for retention cutoffs and agent update times. Not owned; must outlive the store.
  Clock* clock = Clock::Real();
  // Run retention in a background thread every retention_interval.
  bool background_retention = true;
  // Every keyframe_interval-th snapshot of an agent is stored whole; the others as deltas. 1 = no
  // deltas.
  uint32_t keyframe_interval = 32;
  // Compress snapshot values with zlib (deflate) when that makes them smaller. Costs CPU on Append
  // (about 0.1-0.3 ms per 3,000-class snapshot) and on reads (inflate); saves 2-4x on disk for
  // typical drift.
  bool compress_snapshots = true;
  // Number of agents whose class dictionary and latest snapshot Append keeps in memory (each costs
  // about 100 bytes per class). Others are reloaded from the store on their next Append.
  size_t max_cached_agents = 64;
};

// One point of a class's history: the class's row in one snapshot (0/0 if the class was absent).
struct ClassSample {
  absl::Time time;
  uint64_t instances = 0;
  uint64_t bytes = 0;   // shallow size, bytes
  CollectionCost cost;  // how that snapshot was taken (mode kUnknown when not recorded)
  friend bool operator==(const ClassSample&, const ClassSample&) = default;
};

// Counts and sizes of a store (for metrics and tests).
struct StoreStats {
  uint64_t agents = 0;
  uint64_t classes = 0;  // dictionary entries over all agents
  uint64_t snapshots = 0;
  uint64_t used_bytes = 0;        // UsedBytes()
  uint64_t snapshot_bytes = 0;    // pages of the snapshots table, bytes
  uint64_t dictionary_bytes = 0;  // pages of the class dictionaries (classes + class_names), bytes
  uint64_t live_set_points = 0;   // live-set points of all agents
  uint64_t live_set_bytes = 0;    // pages of the live_set and costs tables, bytes
  uint64_t class_loading_points = 0;  // class-loading points of all agents
  uint64_t class_loading_bytes = 0;   // pages of the class_loading table, bytes
  uint64_t string_table_points = 0;   // string-table points of all agents
  uint64_t string_table_bytes = 0;    // pages of the string_table table, bytes
  uint64_t disk_bytes = 0;            // DiskBytes()
  uint64_t map_bytes = 0;             // MapBytes()
};

// The store's use by one kind of data (docs/storage-format.md, "Use per kind").
struct KindUsage {
  // "snapshots" (snapshots + costs tables), "dictionary" (classes + class_names), "live_set",
  // "class_loading", "string_table",
  // "agents" (agents + meta + LMDB's table of tables), or "records/<table>" for each record table.
  std::string kind;
  uint64_t records = 0;  // entries (a record, a snapshot, a dictionary entry, ...)
  // Pages of the kind's tables times the page size. The record tables share one LMDB table: its
  // pages are apportioned to each record table by the bytes of its entries (key + value + 8 bytes
  // of node header), so the kinds always sum to UsedBytes().
  uint64_t bytes = 0;
  friend bool operator==(const KindUsage&, const KindUsage&) = default;
};

// Sorts rows by bytes descending, then class name, then module, then instances (the order reads
// return). Complexity O(n log n).
void SortRowsCanonically(std::vector<ClassHistogramRow>* rows);

class SnapshotStore {
 public:
  // Opens (creating if needed) the store in options.dir, checks the format version, clears stale
  // reader slots of dead processes (mdb_reader_check) and starts the retention thread if enabled.
  // Errors: InvalidArgument (empty dir, keyframe_interval 0, max_map_bytes < initial_map_bytes,
  // non-positive retention_interval with background_retention), FailedPrecondition (the directory
  // is in use by another open store, or cannot be created / accessed), DataLoss (not a heapwatch
  // store, or a format version this build does not know), plus the common errors.
  static StatusOr<std::unique_ptr<SnapshotStore>> Open(const StoreOptions& options);

  // Stops the retention thread (waiting for a running pass) and closes the environment.
  ~SnapshotStore();
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  // Inserts or replaces what is known about agent info.id (all fields), and records clock->Now() as
  // the agent's update time (idle agents with no snapshots are deleted by retention after
  // retention_age). Errors: InvalidArgument (malformed id: not 1..128 bytes of [A-Za-z0-9._:-]).
  // O(log n).
  Status PutAgent(const AgentInfo& info);
  // Every agent, ordered by id. Agents known only from Append (no PutAgent yet) have only `id` set.
  // O(agents).
  StatusOr<std::vector<AgentInfo>> ListAgents() const;
  // Errors: NotFound (unknown agent), InvalidArgument (malformed id). O(log n).
  StatusOr<AgentInfo> GetAgent(const AgentId& id) const;
  // Deletes an agent with all its snapshots and its class dictionary (records are not touched).
  // Errors: NotFound, InvalidArgument. O(its snapshots + classes).
  Status DeleteAgent(const AgentId& id);

  // Stores one snapshot (with snapshot.cost when its mode is known); durable when it returns OK.
  // Unknown agents are created (a bare record). Group commit: Appends called concurrently from
  // several threads share write transactions (one commit, and so one pair of fsyncs, for up to
  // 128 of them); each returns only once the transaction holding its snapshot (and records)
  // committed, and an Append that fails (in a shared transaction, e.g. AlreadyExists or a full
  // disk) is retried alone, so it fails only itself. Appends of one agent run one at a time.
  // Snapshots may arrive in any time order (in order is the fast path).
  // Errors: InvalidArgument (malformed agent id, a time that is infinite or not within +-2^62 us of
  // the Unix epoch, an empty class name), AlreadyExists (a snapshot of this agent at the same
  // microsecond exists), ResourceExhausted (disk full, map at max_map_bytes, more than 2^32-1
  // classes for one agent). Cost: O(rows) plus, on the first Append of an agent since Open or since
  // its cache entry was evicted, loading its class dictionary and latest snapshot; out-of-order
  // appends re-encode the next snapshot.
  Status Append(const Snapshot& snapshot);

  // Times of the agent's snapshots in [from, to], oldest first. Errors: NotFound (unknown agent),
  // InvalidArgument (malformed id). O(log n + result).
  StatusOr<std::vector<absl::Time>> ListSnapshotTimes(const AgentId& agent, absl::Time from,
                                                      absl::Time to) const;
  // The snapshot at exactly `time` (microsecond precision). Errors: NotFound (unknown agent or no
  // snapshot at that time), InvalidArgument. Cost: decodes up to keyframe_interval values, O(rows)
  // each.
  StatusOr<Snapshot> ReadSnapshot(const AgentId& agent, absl::Time time) const;
  // The latest snapshot at or before `t`, or nullopt if there is none. Errors: NotFound (unknown
  // agent), InvalidArgument. Cost as ReadSnapshot.
  StatusOr<std::optional<Snapshot>> ReadLatestAtOrBefore(const AgentId& agent, absl::Time t) const;
  // Snapshots in [from, to], oldest first; when more than max_count (> 0) are in range, the most
  // recent max_count. max_count 0 means no limit. Errors: NotFound (unknown agent),
  // InvalidArgument. Cost: O((result + keyframe_interval) * rows).
  StatusOr<std::vector<Snapshot>> ReadSnapshots(const AgentId& agent, absl::Time from,
                                                absl::Time to, size_t max_count) const;
  // One point per snapshot of the agent in [from, to], oldest first, for the class named
  // `class_name` (summed over modules and duplicate rows of that name); 0/0 where the class is
  // absent. Errors: NotFound (unknown agent, or a class name the agent has never reported within
  // retention), InvalidArgument. Cost: O(snapshots in range * changed rows) plus one key-frame
  // decode.
  StatusOr<std::vector<ClassSample>> ClassHistory(const AgentId& agent, std::string_view class_name,
                                                  absl::Time from, absl::Time to) const;

  // Live-set series (common/gc.h): one point of the agent's live set, durable on OK. Points are
  // deleted by retention with the snapshots of the same time span (age: older than
  // retention_age; size: with the agent's oldest snapshots) and with their agent. Errors:
  // NotFound (unknown agent: PutAgent or Append first), InvalidArgument (malformed id, time
  // infinite or out of range), AlreadyExists (a point at the same microsecond). O(log n).
  Status AppendLiveSet(const AgentId& agent, const LiveSetPoint& point);
  // The agent's live-set points in [from, to], oldest first; the most recent max_count when more
  // (0: no limit). Errors: NotFound (unknown agent), InvalidArgument, DataLoss (a corrupt point).
  // O(log n + points in [from, to]).
  StatusOr<std::vector<LiveSetPoint>> ReadLiveSet(const AgentId& agent, absl::Time from,
                                                  absl::Time to, size_t max_count) const;

  // Class-loading series (common/class_loading.h): one reading of the agent's class-loading and
  // metaspace counters, durable on OK, about 20 bytes of value. Retained exactly like the live-set
  // series (with the snapshots of the same time span, and with their agent). Errors: NotFound
  // (unknown agent: PutAgent or Append first), InvalidArgument (malformed id, time infinite or out
  // of range), AlreadyExists (a point at the same microsecond). O(log n).
  Status AppendClassLoading(const AgentId& agent, const ClassLoadingPoint& point);
  // The agent's class-loading points in [from, to], oldest first; the most recent max_count when
  // more (0: no limit). Errors: NotFound (unknown agent), InvalidArgument, DataLoss (a corrupt
  // point). O(log n + points in [from, to]).
  StatusOr<std::vector<ClassLoadingPoint>> ReadClassLoading(const AgentId& agent, absl::Time from,
                                                            absl::Time to, size_t max_count) const;

  // String-table series (common/string_table.h): one reading of the agent's interned-string table
  // summary (counts, and sizes in bytes), durable on OK, 5 bytes plus eight varints of value
  // (table string_table, docs/storage-format.md). Retained exactly like the live-set and
  // class-loading series (with the snapshots of the same time span, and with their agent). Errors:
  // NotFound (unknown agent: PutAgent or Append first), InvalidArgument (malformed id, time
  // infinite or out of range), AlreadyExists (a point at the same microsecond). O(log n).
  Status AppendStringTable(const AgentId& agent, const StringTableStats& point);
  // The agent's string-table points in [from, to], oldest first, each with the time it was stored
  // under (microsecond precision); the most recent max_count when more (0: no limit). Errors:
  // NotFound (unknown agent), InvalidArgument (malformed id), DataLoss (a corrupt point; the
  // message names its key). O(log n + points in [from, to]).
  StatusOr<std::vector<StringTableStats>> ReadStringTable(const AgentId& agent, absl::Time from,
                                                          absl::Time to, size_t max_count) const;

  // Generic records: bytes under (table, key). `table`: 1..255 bytes; table.size() + key.size() <=
  // 510 (LMDB's key limit); `value`: up to 2^32-1 bytes. Records are not subject to retention (they
  // count toward the live data size, though). Durable on OK. Errors: InvalidArgument (sizes). O(log
  // n).
  Status PutRecord(std::string_view table, std::string_view key, std::string_view value);
  // Errors: NotFound (absent), InvalidArgument. O(log n).
  StatusOr<std::string> GetRecord(std::string_view table, std::string_view key) const;
  // All (key, value) of `table` whose key starts with `key_prefix`, ordered by key (bytewise).
  // Errors: InvalidArgument. O(log n + result).
  StatusOr<std::vector<std::pair<std::string, std::string>>> ListRecords(
      std::string_view table, std::string_view key_prefix) const;
  // Errors: NotFound (absent), InvalidArgument. O(log n).
  Status DeleteRecord(std::string_view table, std::string_view key);

  // Deletes every listed (table, key) record in ONE write transaction: a reader sees all of them
  // or none of them (used to delete an extended dump's record with its reports and summary).
  // Absent records are skipped. Returns how many existed. Durable on OK; on error nothing is
  // deleted. Errors: InvalidArgument (a malformed table or key; nothing is deleted). O(n log N).
  StatusOr<size_t> DeleteRecords(const std::vector<std::pair<std::string, std::string>>& refs);

  // One record to write with WriteRecords.
  struct RecordPut {
    std::string table;
    std::string key;
    std::string value;
  };
  // Writes every `puts` record and deletes every `deletes` (table, key) in ONE write transaction:
  // a reader sees all of the changes or none of them (used to store an extended dump's final
  // record together with its reports and summary). Absent records to delete are skipped. Durable
  // on OK; on error nothing is written or deleted. Errors: InvalidArgument (a malformed table or
  // key, or a value over 2^32-5 bytes: nothing is written), the store's write errors.
  // O((puts + deletes) log N).
  Status WriteRecords(const std::vector<RecordPut>& puts,
                      const std::vector<std::pair<std::string, std::string>>& deletes = {});

  // Append, plus every `records` put in the SAME write transaction as the snapshot: the snapshot
  // and the records are stored together or not at all. The agent gateway keeps each registered
  // agent's highest stored delivery sequence this way (daemon/agent_gateway.h), so a crash between
  // the store and the acknowledgement can neither lose nor duplicate a histogram. Errors: those of
  // Append and WriteRecords (nothing is written on error). Cost: Append's plus O(records log N).
  Status Append(const Snapshot& snapshot, const std::vector<RecordPut>& records);

  // The time of the agent's oldest snapshot, nullopt when it has none. Errors: NotFound (unknown
  // agent), InvalidArgument (malformed id). O(log n).
  StatusOr<std::optional<absl::Time>> OldestSnapshotTime(const AgentId& agent) const;

  // Deletes the record (table, agent id) of every agent in `agents` that has no snapshot (or is
  // unknown) at the moment of the deletion, in ONE write transaction: the check and the deletion
  // see the same state of the store, so a record written together with a snapshot (Append with
  // records) is never deleted, even when that Append runs concurrently with the caller's decision.
  // Used for the agent gateway's delivery records (daemon/record_retention.h). Absent records and
  // malformed agent ids are skipped. Returns how many records were deleted. Durable on OK; on
  // error nothing is deleted. Errors: InvalidArgument (a malformed table), the store's write
  // errors. O(agents log N).
  StatusOr<size_t> DeleteRecordsOfAgentsWithoutSnapshots(std::string_view table,
                                                         const std::vector<AgentId>& agents);

  // The options the store was opened with (retention_bytes: what size retention bounds).
  const StoreOptions& options() const;

  // The store's use per kind of data (see KindUsage), in one read transaction; the kinds are
  // listed in the order of KindUsage::kind's comment, record tables by name. Cost: O(tables +
  // records) (it reads every record's key and size, not the snapshots).
  StatusOr<std::vector<KindUsage>> UsageByKind() const;

  // Applies retention now (see the file comment); also runs in the background every
  // retention_interval. Deletes in transactions of at most a few thousand snapshots, each durable.
  // Also deletes the class dictionary of agents left without snapshots, and agents without
  // snapshots whose update time is older than retention_age. Errors: the common errors (a pass that
  // fails part-way keeps what it committed).
  Status EnforceRetention();

  // Bytes allocated on disk by the data file (<dir>/data.mdb; st_blocks * 512). Errors: Internal
  // (stat).
  StatusOr<uint64_t> DiskBytes() const;
  // Bytes of live data: pages of all tables (branch, leaf and overflow) times the page size;
  // excludes the free pages LMDB keeps for reuse. This is what retention_bytes bounds. O(tables).
  StatusOr<uint64_t> UsedBytes() const;
  // Current size of the LMDB memory map in bytes.
  uint64_t MapBytes() const;
  // Write transactions committed since Open (every mutating call commits one, except that
  // concurrent Appends share transactions: group commit, see Append). For metrics and tests.
  uint64_t Commits() const;
  // All of the above in one read transaction. O(tables).
  StatusOr<StoreStats> Stats() const;

 private:
  struct Impl;
  explicit SnapshotStore(std::unique_ptr<Impl> impl);
  void RetentionLoop();

  std::unique_ptr<Impl> impl_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread retention_thread_;
};

}  // namespace heapwatch::storage

#endif  // HEAPWATCH_STORAGE_SNAPSHOT_STORE_H_
