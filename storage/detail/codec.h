// Internal: the byte-level encodings of heapwatch's LMDB store (keys, values, varints, snapshot
// deltas).
//
// docs/storage-format.md is the specification; this file implements it. Every tag and constant that
// is written to disk is marked "DO NOT CHANGE": changing one makes existing stores unreadable. New
// encodings get new tags (and, if old readers must refuse them, a new kFormatVersion).
//
// All decoders take untrusted bytes (a store may be corrupt or truncated) and return DataLoss
// naming the key (`what`, e.g. "snapshots[agent-1 @ 2024-05-01T10:00:00Z]"), never crash or read
// out of bounds.
//
// Thread-safety: all functions are pure (no shared state).
#ifndef HEAPWATCH_STORAGE_DETAIL_CODEC_H_
#define HEAPWATCH_STORAGE_DETAIL_CODEC_H_

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent.h"
#include "common/class_loading.h"
#include "common/gc.h"
#include "common/status.h"
#include "common/string_table.h"

namespace heapwatch::storage::detail {

// Version of the whole on-disk layout, stored in the `meta` table under key "format_version".
// DO NOT CHANGE the meaning of an existing version.
inline constexpr uint32_t kFormatVersion = 1;

// Number of an agent inside one store: assigned 0, 1, 2... when the store first hears of the agent
// and never reused, so keys of a deleted agent can never alias a new one. Big-endian u32 in keys.
struct AgentNo {
  uint32_t value = 0;
  friend auto operator<=>(AgentNo, AgentNo) = default;
};

// Number of a class in one agent's class dictionary: 0, 1, 2... in order of first appearance, never
// reused for the lifetime of the agent record. A class is (name, module, duplicate index): the
// duplicate index tells apart rows of one histogram that share name and module (the same class
// loaded by several class loaders).
struct ClassNo {
  uint32_t value = 0;
  friend auto operator<=>(ClassNo, ClassNo) = default;
};

// ---- Varints (LEB128, little-endian groups of 7 bits, at most 10 bytes for 64 bits) and fixed
// big-endian.

void PutVarint64(std::string* dst, uint64_t v);
// Reads one varint from the front of *in and advances it. False on truncation or an over-long
// encoding (more than 10 bytes, or a 10th byte above 1).
bool GetVarint64(std::string_view* in, uint64_t* v);
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }
void PutFixed32BE(std::string* dst, uint32_t v);
void PutFixed64BE(std::string* dst, uint64_t v);
uint32_t DecodeFixed32BE(const char* p);
uint64_t DecodeFixed64BE(const char* p);
// Length-prefixed bytes: varint length then the bytes.
void PutLengthPrefixed(std::string* dst, std::string_view s);
bool GetLengthPrefixed(std::string_view* in, std::string_view* s);

// CRC-32 (IEEE 802.3 polynomial, zlib's crc32()) of `data`.
uint32_t Crc32(std::string_view data);

// FNV-1a 64-bit hash of a class name (offset basis 0xcbf29ce484222325, prime 0x100000001b3). Stable
// across versions and machines: it is part of the class_names key. DO NOT CHANGE.
uint64_t ClassNameHash(std::string_view name);

// ---- Keys. Integers in keys are big-endian so that LMDB's memcmp order equals numeric order.

// Snapshot time in keys: Unix microseconds with the sign bit flipped (so negative times sort
// first).
uint64_t TimeKeyBits(int64_t unix_micros);
int64_t TimeFromKeyBits(uint64_t bits);

inline constexpr size_t kAgentPrefixSize = 4;
inline constexpr size_t kSnapshotKeySize = 12;   // agent_no:u32 time:u64
inline constexpr size_t kClassKeySize = 8;       // agent_no:u32 class_no:u32
inline constexpr size_t kClassNameKeySize = 16;  // agent_no:u32 name_hash:u64 class_no:u32

std::string AgentPrefix(AgentNo agent);
std::string SnapshotKey(AgentNo agent, int64_t unix_micros);
// False unless `key` is a well-formed snapshot key.
bool ParseSnapshotKey(std::string_view key, AgentNo* agent, int64_t* unix_micros);
std::string ClassKey(AgentNo agent, ClassNo cls);
bool ParseClassKey(std::string_view key, AgentNo* agent, ClassNo* cls);
std::string ClassNamePrefix(AgentNo agent, uint64_t name_hash);
std::string ClassNameKey(AgentNo agent, uint64_t name_hash, ClassNo cls);
bool ParseClassNameKey(std::string_view key, AgentNo* agent, uint64_t* name_hash, ClassNo* cls);
// records table: table_len:u8 table key. REQUIRES: 1 <= table.size() <= 255.
std::string RecordKey(std::string_view table, std::string_view key);

// Human-readable names of keys for error messages.
std::string DescribeSnapshot(const AgentId& agent, int64_t unix_micros);

// ---- Values of the agents table.

struct AgentRecord {
  AgentNo agent_no;
  ClassNo next_class;  // the number the next new class of this agent gets
  int64_t updated_micros =
      0;                  // clock time of the last PutAgent / creation (retention of idle agents)
  bool has_info = false;  // false for agents known only from Append (no PutAgent yet)
  AgentInfo info;         // info.id is the key, not stored in the value
};
std::string EncodeAgentRecord(const AgentRecord& record);
// `id` is the key the value was read from (copied into info.id).
StatusOr<AgentRecord> DecodeAgentRecord(std::string_view value, const AgentId& id);

// ---- Values of the classes table (the per-agent class dictionary).

struct ClassEntry {
  std::string name;
  std::string module;
  uint32_t duplicate = 0;  // k-th row with this (name, module) in one histogram, 0 for the first
  friend bool operator==(const ClassEntry&, const ClassEntry&) = default;
};
std::string EncodeClassEntry(const ClassEntry& entry);
StatusOr<ClassEntry> DecodeClassEntry(std::string_view value, std::string_view what);

// ---- Values of the records table: crc:u32BE then the caller's bytes.

std::string EncodeRecordValue(std::string_view bytes);
StatusOr<std::string> DecodeRecordValue(std::string_view value, std::string_view what);

// ---- Values of the costs table (key: SnapshotKey of the snapshot they belong to):
//   crc:u32BE version:u8(=1) mode:u8 pause_micros:varint                     DO NOT CHANGE
std::string EncodeCollectionCost(const CollectionCost& cost);
StatusOr<CollectionCost> DecodeCollectionCost(std::string_view value, std::string_view what);

// ---- Values of the live_set table (key: SnapshotKey(agent, time of the point)):
//   crc:u32BE version:u8(=1) source:u8 live:varint capacity:varint max:varint  DO NOT CHANGE
std::string EncodeLiveSetPoint(const LiveSetPoint& point);
// `micros` is the time from the key.
StatusOr<LiveSetPoint> DecodeLiveSetPoint(std::string_view value, int64_t micros,
                                          std::string_view what);

// ---- Values of the class_loading table (key: SnapshotKey(agent, time of the reading)):
//   crc:u32BE version:u8(=1) loaded:varint unloaded:varint metaspace_used:varint
//   metaspace_capacity:varint class_space_used:varint                          DO NOT CHANGE
std::string EncodeClassLoadingPoint(const ClassLoadingPoint& point);
// `micros` is the time from the key.
StatusOr<ClassLoadingPoint> DecodeClassLoadingPoint(std::string_view value, int64_t micros,
                                                    std::string_view what);

// ---- Values of the string_table table (key: SnapshotKey(agent, time of the reading)):
//   crc:u32BE version:u8(=1) buckets:varint bucket_bytes:varint entries:varint entry_bytes:varint
//   literals:varint literal_bytes:varint footprint_bytes:varint max_bucket:varint  DO NOT CHANGE
std::string EncodeStringTablePoint(const StringTableStats& point);
// `micros` is the time from the key.
StatusOr<StringTableStats> DecodeStringTablePoint(std::string_view value, int64_t micros,
                                                  std::string_view what);

// ---- Values of the snapshots table.

// What a snapshot value holds.
enum class SnapshotKind : uint8_t {
  kFull,   // a self-contained histogram (a key frame)
  kDelta,  // changes against the snapshot immediately before it (same agent, previous key)
};

// The tag byte of a snapshot value: its kind and whether its body is zlib-compressed. DO NOT
// CHANGE.
enum class SnapshotTag : uint8_t {
  kFullVarint = 1,
  kDeltaVarint = 2,
  kFullDeflate = 3,
  kDeltaDeflate = 4,
};

// Largest uncompressed body a compressed value may declare (a histogram of millions of classes).
inline constexpr uint64_t kMaxInflatedBody = uint64_t{256} << 20;

// One row of a numbered histogram: a class of the agent's dictionary and its counts.
struct NumberedRow {
  ClassNo cls;
  uint64_t instances = 0;
  uint64_t bytes = 0;
  friend bool operator==(const NumberedRow&, const NumberedRow&) = default;
};

// A class histogram with classes replaced by dictionary numbers. REQUIRES (invariant): rows sorted
// by cls, no cls twice.
struct NumberedHistogram {
  std::vector<NumberedRow> rows;
  uint64_t total_instances = 0;
  uint64_t total_bytes = 0;
  friend bool operator==(const NumberedHistogram&, const NumberedHistogram&) = default;
};

// Encodes `h` as a self-contained (kFull) snapshot value. With `compress`, the body is
// zlib-compressed (deflate, zlib format) when that makes the value smaller.
std::string EncodeFullSnapshot(const NumberedHistogram& h, bool compress);
// Encodes `next` as changes against `base`, the snapshot `base_gap_micros` (> 0) earlier; `depth`
// is the number of deltas between this value and the key frame it builds on (1 for a delta on a key
// frame).
std::string EncodeDeltaSnapshot(const NumberedHistogram& base, const NumberedHistogram& next,
                                int64_t base_gap_micros, uint32_t depth, bool compress);

// A snapshot value whose checksum and header have been verified; `body` points into the value.
struct SnapshotValue {
  SnapshotKind kind = SnapshotKind::kFull;
  bool compressed = false;      // body = raw_size:varint zlib_stream
  int64_t base_gap_micros = 0;  // kDelta: this time minus the base snapshot's time (> 0)
  uint32_t depth = 0;           // kDelta: >= 1; kFull: 0
  std::string_view body;
};
// Verifies the CRC and parses the header. DataLoss (naming `what`) on a bad checksum, unknown kind
// or truncation.
StatusOr<SnapshotValue> ParseSnapshotValue(std::string_view value, std::string_view what);
// Memory reused across ApplySnapshotValue calls.
struct DecodeScratch {
  std::vector<NumberedRow> rows;
  std::string inflated;
};
// kFull: replaces *h with the decoded histogram. kDelta: REQUIRES *h to be the decoded base
// snapshot; applies the changes in place. DataLoss on malformed bodies (bad varint, a class number
// out of order or above 2^32-1, removal of a class the base does not have, trailing bytes, a zlib
// stream that does not inflate to exactly its declared size or declares more than kMaxInflatedBody
// or 1032 times its own size).
Status ApplySnapshotValue(const SnapshotValue& value, std::string_view what, NumberedHistogram* h,
                          DecodeScratch* scratch);

}  // namespace heapwatch::storage::detail

#endif  // HEAPWATCH_STORAGE_DETAIL_CODEC_H_
