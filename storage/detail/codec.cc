// Implements docs/storage-format.md. See codec.h for the contracts.
#include "storage/detail/codec.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace heapwatch::storage::detail {
namespace {

// Version byte of agent values. DO NOT CHANGE.
constexpr uint8_t kAgentValueVersion = 1;
// Bits of the agent value's flags byte. DO NOT CHANGE.
constexpr uint8_t kAgentHasInfo = 0x01;
// AgentKind as stored on disk (independent of the in-memory enum's values). DO NOT CHANGE.
constexpr uint8_t kAgentKindLocalAttach = 1;
constexpr uint8_t kAgentKindRegistered = 2;
// Tags of an absl::Time stored in an agent value. DO NOT CHANGE.
constexpr uint8_t kTimeInfinitePast = 0;
constexpr uint8_t kTimeFinite = 1;
constexpr uint8_t kTimeInfiniteFuture = 2;

constexpr uint64_t kMaxClassNo = std::numeric_limits<uint32_t>::max();

Status Corrupt(std::string_view what, std::string_view why) {
  return absl::DataLossError(
      absl::StrFormat("heapwatch store: corrupt value at %s: %s", what, why));
}

// Prepends the CRC of `payload` (the value without its checksum) and returns the whole value.
std::string WithCrc(const std::string& payload) {
  std::string out;
  out.reserve(payload.size() + 4);
  PutFixed32BE(&out, Crc32(payload));
  out += payload;
  return out;
}

// Verifies and strips the leading CRC.
StatusOr<std::string_view> CheckCrc(std::string_view value, std::string_view what) {
  if (value.size() < 4) return Corrupt(what, "shorter than its checksum");
  std::string_view payload = value.substr(4);
  uint32_t stored = DecodeFixed32BE(value.data());
  uint32_t actual = Crc32(payload);
  if (stored != actual) {
    return Corrupt(
        what, absl::StrFormat("checksum mismatch (stored %08x, computed %08x)", stored, actual));
  }
  return payload;
}

// Builds a snapshot value: crc, tag, `header` (uncompressed), then `body`, deflated (as
// raw_size:varint zlib_stream) when `compress` and that is smaller.
std::string Seal(SnapshotTag plain, SnapshotTag deflated, std::string_view header,
                 std::string_view body, bool compress) {
  std::string p;
  if (compress && body.size() > 64) {
    uLongf bound = compressBound(static_cast<uLong>(body.size()));
    std::string z(bound, '\0');
    int rc = compress2(reinterpret_cast<Bytef*>(z.data()), &bound,
                       reinterpret_cast<const Bytef*>(body.data()), static_cast<uLong>(body.size()),
                       Z_DEFAULT_COMPRESSION);
    HW_CHECK(rc == Z_OK);  // only Z_MEM_ERROR / Z_BUF_ERROR, impossible with compressBound
    z.resize(bound);
    if (z.size() + 10 < body.size()) {
      p.reserve(1 + header.size() + 10 + z.size());
      p.push_back(static_cast<char>(deflated));
      p.append(header);
      PutVarint64(&p, body.size());
      p.append(z);
      return WithCrc(p);
    }
  }
  p.reserve(1 + header.size() + body.size());
  p.push_back(static_cast<char>(plain));
  p.append(header);
  p.append(body);
  return WithCrc(p);
}

// Predicted bytes of a class whose base row had (i0, b0) and now has i1 instances: the base's bytes
// per instance times i1, in 128-bit arithmetic, truncated to 64 bits. Exact for classes of fixed
// instance size.
uint64_t PredictBytes(uint64_t i0, uint64_t b0, uint64_t i1) {
  if (i0 == 0) return 0;
  unsigned __int128 p = static_cast<unsigned __int128>(b0) * i1 / i0;
  return static_cast<uint64_t>(p);
}

// Reads a gap-coded class number: the first is `gap`, each next one is previous + 1 + gap.
bool NextClassNo(std::string_view* in, bool first, uint64_t* prev) {
  uint64_t gap;
  if (!GetVarint64(in, &gap)) return false;
  uint64_t next = first ? gap : *prev + 1 + gap;
  if (gap > kMaxClassNo || next > kMaxClassNo || (!first && next <= *prev)) return false;
  *prev = next;
  return true;
}

void PutClassGap(std::string* dst, bool first, uint32_t prev, uint32_t cls) {
  PutVarint64(dst, first ? cls : cls - prev - 1);
}

}  // namespace

void PutVarint64(std::string* dst, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  dst->append(buf, n);
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int i = 0; i < 10; ++i) {
    if (static_cast<size_t>(i) >= in->size()) return false;
    uint8_t byte = static_cast<uint8_t>((*in)[i]);
    if (i == 9 && byte > 1) return false;  // would overflow 64 bits
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}

void PutFixed32BE(std::string* dst, uint32_t v) {
  char buf[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                 static_cast<char>(v)};
  dst->append(buf, 4);
}

void PutFixed64BE(std::string* dst, uint64_t v) {
  PutFixed32BE(dst, static_cast<uint32_t>(v >> 32));
  PutFixed32BE(dst, static_cast<uint32_t>(v));
}

uint32_t DecodeFixed32BE(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

uint64_t DecodeFixed64BE(const char* p) {
  return (uint64_t{DecodeFixed32BE(p)} << 32) | DecodeFixed32BE(p + 4);
}

void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutVarint64(dst, s.size());
  dst->append(s);
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  uint64_t len;
  if (!GetVarint64(in, &len) || len > in->size()) return false;
  *s = in->substr(0, len);
  in->remove_prefix(len);
  return true;
}

uint32_t Crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large inputs in pieces.
  while (!data.empty()) {
    uInt n = static_cast<uInt>(std::min<size_t>(data.size(), 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

uint64_t ClassNameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t TimeKeyBits(int64_t unix_micros) {
  return static_cast<uint64_t>(unix_micros) ^ (uint64_t{1} << 63);
}

int64_t TimeFromKeyBits(uint64_t bits) { return static_cast<int64_t>(bits ^ (uint64_t{1} << 63)); }

std::string AgentPrefix(AgentNo agent) {
  std::string k;
  PutFixed32BE(&k, agent.value);
  return k;
}

std::string SnapshotKey(AgentNo agent, int64_t unix_micros) {
  std::string k;
  k.reserve(kSnapshotKeySize);
  PutFixed32BE(&k, agent.value);
  PutFixed64BE(&k, TimeKeyBits(unix_micros));
  return k;
}

bool ParseSnapshotKey(std::string_view key, AgentNo* agent, int64_t* unix_micros) {
  if (key.size() != kSnapshotKeySize) return false;
  agent->value = DecodeFixed32BE(key.data());
  *unix_micros = TimeFromKeyBits(DecodeFixed64BE(key.data() + 4));
  return true;
}

std::string ClassKey(AgentNo agent, ClassNo cls) {
  std::string k;
  k.reserve(kClassKeySize);
  PutFixed32BE(&k, agent.value);
  PutFixed32BE(&k, cls.value);
  return k;
}

bool ParseClassKey(std::string_view key, AgentNo* agent, ClassNo* cls) {
  if (key.size() != kClassKeySize) return false;
  agent->value = DecodeFixed32BE(key.data());
  cls->value = DecodeFixed32BE(key.data() + 4);
  return true;
}

std::string ClassNamePrefix(AgentNo agent, uint64_t name_hash) {
  std::string k;
  k.reserve(kClassNameKeySize);
  PutFixed32BE(&k, agent.value);
  PutFixed64BE(&k, name_hash);
  return k;
}

std::string ClassNameKey(AgentNo agent, uint64_t name_hash, ClassNo cls) {
  std::string k = ClassNamePrefix(agent, name_hash);
  PutFixed32BE(&k, cls.value);
  return k;
}

bool ParseClassNameKey(std::string_view key, AgentNo* agent, uint64_t* name_hash, ClassNo* cls) {
  if (key.size() != kClassNameKeySize) return false;
  agent->value = DecodeFixed32BE(key.data());
  *name_hash = DecodeFixed64BE(key.data() + 4);
  cls->value = DecodeFixed32BE(key.data() + 12);
  return true;
}

std::string RecordKey(std::string_view table, std::string_view key) {
  std::string k;
  k.reserve(1 + table.size() + key.size());
  k.push_back(static_cast<char>(static_cast<uint8_t>(table.size())));
  k.append(table);
  k.append(key);
  return k;
}

std::string DescribeSnapshot(const AgentId& agent, int64_t unix_micros) {
  return absl::StrFormat("snapshots[%s @ %s]", agent.value,
                         absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(unix_micros),
                                          absl::UTCTimeZone()));
}

// ---- agents

std::string EncodeAgentRecord(const AgentRecord& r) {
  std::string p;
  p.push_back(static_cast<char>(kAgentValueVersion));
  PutFixed32BE(&p, r.agent_no.value);
  PutVarint64(&p, r.next_class.value);
  PutVarint64(&p, ZigZag(r.updated_micros));
  p.push_back(static_cast<char>(r.has_info ? kAgentHasInfo : 0));
  if (r.has_info) {
    const AgentInfo& i = r.info;
    uint8_t kind = i.kind == AgentKind::kRegistered ? kAgentKindRegistered : kAgentKindLocalAttach;
    p.push_back(static_cast<char>(kind));
    PutLengthPrefixed(&p, i.host);
    PutVarint64(&p, ZigZag(i.pid));
    PutLengthPrefixed(&p, i.main_class);
    PutLengthPrefixed(&p, i.jvm_version);
    if (i.start_time == absl::InfinitePast()) {
      p.push_back(static_cast<char>(kTimeInfinitePast));
    } else if (i.start_time == absl::InfiniteFuture()) {
      p.push_back(static_cast<char>(kTimeInfiniteFuture));
    } else {
      p.push_back(static_cast<char>(kTimeFinite));
      PutVarint64(&p, ZigZag(absl::ToUnixMicros(i.start_time)));
    }
    PutVarint64(&p, i.uid);
    PutVarint64(&p, i.gid);
  }
  return WithCrc(p);
}

StatusOr<AgentRecord> DecodeAgentRecord(std::string_view value, const AgentId& id) {
  std::string what = absl::StrFormat("agents[%s]", id.value);
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  AgentRecord r;
  r.info.id = id;
  if (in.empty()) return Corrupt(what, "empty");
  uint8_t version = static_cast<uint8_t>(in[0]);
  if (version != kAgentValueVersion) {
    return Corrupt(what, absl::StrFormat("unknown agent value version %d", version));
  }
  in.remove_prefix(1);
  if (in.size() < 4) return Corrupt(what, "truncated agent number");
  r.agent_no.value = DecodeFixed32BE(in.data());
  in.remove_prefix(4);
  uint64_t next_class, updated;
  if (!GetVarint64(&in, &next_class) || next_class > kMaxClassNo + 1 ||
      !GetVarint64(&in, &updated)) {
    return Corrupt(what, "bad varint");
  }
  // next_class == 2^32 would mean the dictionary is exhausted; it is refused before it is written.
  if (next_class > kMaxClassNo) return Corrupt(what, "class counter out of range");
  r.next_class.value = static_cast<uint32_t>(next_class);
  r.updated_micros = UnZigZag(updated);
  if (in.empty()) return Corrupt(what, "truncated flags");
  uint8_t flags = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  if ((flags & ~kAgentHasInfo) != 0)
    return Corrupt(what, absl::StrFormat("unknown flags %02x", flags));
  r.has_info = (flags & kAgentHasInfo) != 0;
  if (r.has_info) {
    AgentInfo& i = r.info;
    if (in.empty()) return Corrupt(what, "truncated kind");
    uint8_t kind = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    if (kind == kAgentKindLocalAttach) {
      i.kind = AgentKind::kLocalAttach;
    } else if (kind == kAgentKindRegistered) {
      i.kind = AgentKind::kRegistered;
    } else {
      return Corrupt(what, absl::StrFormat("unknown agent kind %d", kind));
    }
    std::string_view host, main_class, jvm_version;
    uint64_t pid;
    if (!GetLengthPrefixed(&in, &host) || !GetVarint64(&in, &pid) ||
        !GetLengthPrefixed(&in, &main_class) || !GetLengthPrefixed(&in, &jvm_version) ||
        in.empty()) {
      return Corrupt(what, "truncated agent info");
    }
    i.host = std::string(host);
    i.pid = UnZigZag(pid);
    i.main_class = std::string(main_class);
    i.jvm_version = std::string(jvm_version);
    uint8_t time_tag = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    if (time_tag == kTimeInfinitePast) {
      i.start_time = absl::InfinitePast();
    } else if (time_tag == kTimeInfiniteFuture) {
      i.start_time = absl::InfiniteFuture();
    } else if (time_tag == kTimeFinite) {
      uint64_t micros;
      if (!GetVarint64(&in, &micros)) return Corrupt(what, "bad start time");
      i.start_time = absl::FromUnixMicros(UnZigZag(micros));
    } else {
      return Corrupt(what, absl::StrFormat("unknown time tag %d", time_tag));
    }
    uint64_t uid, gid;
    if (!GetVarint64(&in, &uid) || !GetVarint64(&in, &gid) || uid > UINT32_MAX ||
        gid > UINT32_MAX) {
      return Corrupt(what, "bad uid/gid");
    }
    i.uid = static_cast<uint32_t>(uid);
    i.gid = static_cast<uint32_t>(gid);
  }
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  return r;
}

// ---- classes

std::string EncodeClassEntry(const ClassEntry& e) {
  std::string p;
  p.reserve(e.name.size() + e.module.size() + 4);
  PutLengthPrefixed(&p, e.name);
  PutLengthPrefixed(&p, e.module);
  PutVarint64(&p, e.duplicate);
  return WithCrc(p);
}

StatusOr<ClassEntry> DecodeClassEntry(std::string_view value, std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  std::string_view name, module;
  uint64_t dup;
  if (!GetLengthPrefixed(&in, &name) || !GetLengthPrefixed(&in, &module) ||
      !GetVarint64(&in, &dup) || dup > kMaxClassNo) {
    return Corrupt(what, "truncated or bad varint");
  }
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  if (name.empty()) return Corrupt(what, "empty class name");
  return ClassEntry{std::string(name), std::string(module), static_cast<uint32_t>(dup)};
}

// ---- records

std::string EncodeRecordValue(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 4);
  PutFixed32BE(&out, Crc32(bytes));
  out.append(bytes);
  return out;
}

StatusOr<std::string> DecodeRecordValue(std::string_view value, std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view payload, CheckCrc(value, what));
  return std::string(payload);
}

// ---- collection costs and live-set points

std::string EncodeCollectionCost(const CollectionCost& cost) {
  std::string p;
  p.push_back(1);
  p.push_back(static_cast<char>(cost.mode));
  PutVarint64(&p, static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Microseconds(cost.pause))));
  return WithCrc(p);
}

StatusOr<CollectionCost> DecodeCollectionCost(std::string_view value, std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  if (in.size() < 2) return Corrupt(what, "truncated");
  if (in[0] != 1) return Corrupt(what, absl::StrFormat("unknown version %d", in[0]));
  const uint8_t mode = static_cast<uint8_t>(in[1]);
  if (mode > static_cast<uint8_t>(HistogramMode::kAllAfterGc)) {
    return Corrupt(what, absl::StrFormat("unknown histogram mode %d", mode));
  }
  in.remove_prefix(2);
  uint64_t micros = 0;
  if (!GetVarint64(&in, &micros) || micros > (uint64_t{1} << 62)) return Corrupt(what, "bad pause");
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  CollectionCost cost;
  cost.mode = static_cast<HistogramMode>(mode);
  cost.pause = absl::Microseconds(static_cast<int64_t>(micros));
  return cost;
}

std::string EncodeLiveSetPoint(const LiveSetPoint& point) {
  std::string p;
  p.push_back(1);
  p.push_back(static_cast<char>(point.source));
  PutVarint64(&p, point.live_bytes);
  PutVarint64(&p, point.capacity_bytes);
  PutVarint64(&p, point.max_bytes);
  return WithCrc(p);
}

StatusOr<LiveSetPoint> DecodeLiveSetPoint(std::string_view value, int64_t micros,
                                          std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  if (in.size() < 2) return Corrupt(what, "truncated");
  if (in[0] != 1) return Corrupt(what, absl::StrFormat("unknown version %d", in[0]));
  const uint8_t source = static_cast<uint8_t>(in[1]);
  if (source < 1 || source > static_cast<uint8_t>(LiveSetSource::kYoungUpperBound)) {
    return Corrupt(what, absl::StrFormat("unknown live-set source %d", source));
  }
  in.remove_prefix(2);
  LiveSetPoint p;
  p.time = absl::FromUnixMicros(micros);
  p.source = static_cast<LiveSetSource>(source);
  if (!GetVarint64(&in, &p.live_bytes) || !GetVarint64(&in, &p.capacity_bytes) ||
      !GetVarint64(&in, &p.max_bytes)) {
    return Corrupt(what, "truncated sizes");
  }
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  return p;
}

// ---- class-loading points

std::string EncodeClassLoadingPoint(const ClassLoadingPoint& point) {
  std::string p;
  p.push_back(1);
  PutVarint64(&p, point.loaded_classes);
  PutVarint64(&p, point.unloaded_classes);
  PutVarint64(&p, point.metaspace_used_bytes);
  PutVarint64(&p, point.metaspace_capacity_bytes);
  PutVarint64(&p, point.class_space_used_bytes);
  return WithCrc(p);
}

StatusOr<ClassLoadingPoint> DecodeClassLoadingPoint(std::string_view value, int64_t micros,
                                                    std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  if (in.empty()) return Corrupt(what, "truncated");
  if (in[0] != 1) return Corrupt(what, absl::StrFormat("unknown version %d", in[0]));
  in.remove_prefix(1);
  ClassLoadingPoint p;
  p.time = absl::FromUnixMicros(micros);
  if (!GetVarint64(&in, &p.loaded_classes) || !GetVarint64(&in, &p.unloaded_classes) ||
      !GetVarint64(&in, &p.metaspace_used_bytes) ||
      !GetVarint64(&in, &p.metaspace_capacity_bytes) ||
      !GetVarint64(&in, &p.class_space_used_bytes)) {
    return Corrupt(what, "truncated counters");
  }
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  return p;
}

// ---- string-table points

std::string EncodeStringTablePoint(const StringTableStats& point) {
  std::string p;
  p.push_back(1);
  for (uint64_t v :
       {point.buckets, point.bucket_bytes, point.entries, point.entry_bytes, point.literals,
        point.literal_bytes, point.footprint_bytes, point.max_bucket}) {
    PutVarint64(&p, v);
  }
  return WithCrc(p);
}

StatusOr<StringTableStats> DecodeStringTablePoint(std::string_view value, int64_t micros,
                                                  std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  if (in.empty()) return Corrupt(what, "truncated");
  if (in[0] != 1) return Corrupt(what, absl::StrFormat("unknown version %d", in[0]));
  in.remove_prefix(1);
  StringTableStats p;
  p.time = absl::FromUnixMicros(micros);
  for (uint64_t* v : {&p.buckets, &p.bucket_bytes, &p.entries, &p.entry_bytes, &p.literals,
                      &p.literal_bytes, &p.footprint_bytes, &p.max_bucket}) {
    if (!GetVarint64(&in, v)) return Corrupt(what, "truncated counters");
  }
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  return p;
}

// ---- snapshots

std::string EncodeFullSnapshot(const NumberedHistogram& h, bool compress) {
  std::string p;
  p.reserve(16 + h.rows.size() * 8);
  PutVarint64(&p, h.total_instances);
  PutVarint64(&p, h.total_bytes);
  PutVarint64(&p, h.rows.size());
  uint32_t prev = 0;
  bool first = true;
  for (const NumberedRow& r : h.rows) {
    PutClassGap(&p, first, prev, r.cls.value);
    PutVarint64(&p, r.instances);
    PutVarint64(&p, r.bytes);
    prev = r.cls.value;
    first = false;
  }
  return Seal(SnapshotTag::kFullVarint, SnapshotTag::kFullDeflate, "", p, compress);
}

std::string EncodeDeltaSnapshot(const NumberedHistogram& base, const NumberedHistogram& next,
                                int64_t base_gap_micros, uint32_t depth, bool compress) {
  HW_CHECK(base_gap_micros > 0 && depth >= 1);
  std::string removed, changed;
  size_t removed_count = 0, changed_count = 0;
  uint32_t prev_removed = 0, prev_changed = 0;
  auto add_removed = [&](ClassNo c) {
    PutClassGap(&removed, removed_count == 0, prev_removed, c.value);
    prev_removed = c.value;
    ++removed_count;
  };
  auto add_changed = [&](ClassNo c, uint64_t i0, uint64_t b0, uint64_t i1, uint64_t b1) {
    PutClassGap(&changed, changed_count == 0, prev_changed, c.value);
    PutVarint64(&changed, ZigZag(static_cast<int64_t>(i1 - i0)));
    PutVarint64(&changed, ZigZag(static_cast<int64_t>(b1 - PredictBytes(i0, b0, i1))));
    prev_changed = c.value;
    ++changed_count;
  };
  size_t i = 0, j = 0;
  while (i < base.rows.size() || j < next.rows.size()) {
    if (j == next.rows.size() || (i < base.rows.size() && base.rows[i].cls < next.rows[j].cls)) {
      add_removed(base.rows[i].cls);
      ++i;
    } else if (i == base.rows.size() || next.rows[j].cls < base.rows[i].cls) {
      add_changed(next.rows[j].cls, 0, 0, next.rows[j].instances, next.rows[j].bytes);
      ++j;
    } else {
      const NumberedRow& a = base.rows[i];
      const NumberedRow& b = next.rows[j];
      if (a.instances != b.instances || a.bytes != b.bytes) {
        add_changed(b.cls, a.instances, a.bytes, b.instances, b.bytes);
      }
      ++i;
      ++j;
    }
  }
  std::string header;
  PutVarint64(&header, static_cast<uint64_t>(base_gap_micros));
  PutVarint64(&header, depth);
  std::string p;
  p.reserve(32 + removed.size() + changed.size());
  PutVarint64(&p, ZigZag(static_cast<int64_t>(next.total_instances - base.total_instances)));
  PutVarint64(&p, ZigZag(static_cast<int64_t>(next.total_bytes - base.total_bytes)));
  PutVarint64(&p, removed_count);
  p += removed;
  PutVarint64(&p, changed_count);
  p += changed;
  return Seal(SnapshotTag::kDeltaVarint, SnapshotTag::kDeltaDeflate, header, p, compress);
}

StatusOr<SnapshotValue> ParseSnapshotValue(std::string_view value, std::string_view what) {
  HW_ASSIGN_OR_RETURN(std::string_view in, CheckCrc(value, what));
  if (in.empty()) return Corrupt(what, "missing kind");
  SnapshotValue v;
  uint8_t tag = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  if (tag == static_cast<uint8_t>(SnapshotTag::kFullVarint) ||
      tag == static_cast<uint8_t>(SnapshotTag::kFullDeflate)) {
    v.kind = SnapshotKind::kFull;
    v.compressed = tag == static_cast<uint8_t>(SnapshotTag::kFullDeflate);
  } else if (tag == static_cast<uint8_t>(SnapshotTag::kDeltaVarint) ||
             tag == static_cast<uint8_t>(SnapshotTag::kDeltaDeflate)) {
    v.kind = SnapshotKind::kDelta;
    v.compressed = tag == static_cast<uint8_t>(SnapshotTag::kDeltaDeflate);
    uint64_t gap, depth;
    if (!GetVarint64(&in, &gap) || !GetVarint64(&in, &depth))
      return Corrupt(what, "bad delta header");
    if (gap == 0 || gap > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        depth == 0 || depth > UINT32_MAX) {
      return Corrupt(what, "delta header out of range");
    }
    v.base_gap_micros = static_cast<int64_t>(gap);
    v.depth = static_cast<uint32_t>(depth);
  } else {
    return Corrupt(what, absl::StrFormat("unknown snapshot tag %d", tag));
  }
  v.body = in;
  return v;
}

Status ApplySnapshotValue(const SnapshotValue& value, std::string_view what, NumberedHistogram* h,
                          DecodeScratch* scratch) {
  std::string_view in = value.body;
  if (value.compressed) {
    uint64_t raw_size;
    if (!GetVarint64(&in, &raw_size)) return Corrupt(what, "bad inflated size");
    // Deflate cannot expand more than 1032:1; refuse sizes a corrupt value could declare to make us
    // allocate without bound.
    if (raw_size > kMaxInflatedBody || raw_size > in.size() * 1032 + 64) {
      return Corrupt(what, absl::StrFormat("implausible inflated size %d", raw_size));
    }
    scratch->inflated.resize(raw_size);
    uLongf out_len = static_cast<uLongf>(raw_size);
    int rc = uncompress(reinterpret_cast<Bytef*>(scratch->inflated.data()), &out_len,
                        reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()));
    if (rc != Z_OK || out_len != raw_size) {
      return Corrupt(what, absl::StrFormat("zlib stream does not inflate (zlib code %d)", rc));
    }
    in = scratch->inflated;
  }
  if (value.kind == SnapshotKind::kFull) {
    uint64_t ti, tb, count;
    if (!GetVarint64(&in, &ti) || !GetVarint64(&in, &tb) || !GetVarint64(&in, &count)) {
      return Corrupt(what, "bad varint in header");
    }
    // Each row takes at least 3 bytes: refuse counts the body cannot hold before allocating.
    if (count > in.size() / 3) return Corrupt(what, "row count exceeds value size");
    h->total_instances = ti;
    h->total_bytes = tb;
    h->rows.clear();
    h->rows.reserve(count);
    uint64_t cls = 0;
    for (uint64_t k = 0; k < count; ++k) {
      NumberedRow r;
      if (!NextClassNo(&in, k == 0, &cls) || !GetVarint64(&in, &r.instances) ||
          !GetVarint64(&in, &r.bytes)) {
        return Corrupt(what, absl::StrFormat("bad row %d", k));
      }
      r.cls.value = static_cast<uint32_t>(cls);
      h->rows.push_back(r);
    }
    if (!in.empty()) return Corrupt(what, "trailing bytes");
    return absl::OkStatus();
  }

  // kDelta: merge the base rows (in *h) with the removed and changed lists, both sorted by class.
  uint64_t dti, dtb, removed_count;
  if (!GetVarint64(&in, &dti) || !GetVarint64(&in, &dtb) || !GetVarint64(&in, &removed_count)) {
    return Corrupt(what, "bad varint in header");
  }
  if (removed_count > in.size()) return Corrupt(what, "removed count exceeds value size");
  std::string_view removed = in;  // decoded lazily during the merge
  // Skip the removed list to find the changed list.
  {
    uint64_t cls = 0;
    for (uint64_t k = 0; k < removed_count; ++k) {
      if (!NextClassNo(&in, k == 0, &cls)) return Corrupt(what, "bad removed class");
    }
  }
  removed = removed.substr(0, removed.size() - in.size());
  uint64_t changed_count;
  if (!GetVarint64(&in, &changed_count)) return Corrupt(what, "bad changed count");
  if (changed_count > in.size() / 3) return Corrupt(what, "changed count exceeds value size");

  std::vector<NumberedRow>& out = scratch->rows;
  out.clear();
  out.reserve(h->rows.size() + changed_count);
  const std::vector<NumberedRow>& base = h->rows;
  size_t i = 0;
  uint64_t next_removed = 0, next_changed = 0;
  uint64_t removed_left = removed_count, changed_left = changed_count;
  bool have_removed = false, have_changed = false;
  auto pull_removed = [&]() -> bool {
    have_removed = removed_left > 0;
    if (!have_removed) return true;
    --removed_left;
    return NextClassNo(&removed, removed_left + 1 == removed_count, &next_removed);
  };
  uint64_t di = 0, residual = 0;
  auto pull_changed = [&]() -> bool {
    have_changed = changed_left > 0;
    if (!have_changed) return true;
    --changed_left;
    return NextClassNo(&in, changed_left + 1 == changed_count, &next_changed) &&
           GetVarint64(&in, &di) && GetVarint64(&in, &residual);
  };
  if (!pull_removed() || !pull_changed()) return Corrupt(what, "bad row");
  while (i < base.size() || have_changed) {
    uint64_t base_cls = i < base.size() ? base[i].cls.value : UINT64_MAX;
    // Every base class below base_cls has been consumed, so a pending removal below it names a
    // class the base does not have.
    if (have_removed && next_removed < base_cls) {
      return Corrupt(
          what, absl::StrFormat("removes class %d that the base snapshot lacks", next_removed));
    }
    if (!have_changed || base_cls < next_changed) {
      if (have_removed && next_removed == base_cls) {
        if (!pull_removed()) return Corrupt(what, "bad removed class");
      } else {
        out.push_back(base[i]);
      }
      ++i;
      continue;
    }
    uint64_t i0 = 0, b0 = 0;
    if (base_cls == next_changed) {
      if (have_removed && next_removed == base_cls) {
        return Corrupt(what, absl::StrFormat("class %d both removed and changed", base_cls));
      }
      i0 = base[i].instances;
      b0 = base[i].bytes;
      ++i;
    }
    NumberedRow r;
    r.cls.value = static_cast<uint32_t>(next_changed);
    r.instances = i0 + static_cast<uint64_t>(UnZigZag(di));
    r.bytes = PredictBytes(i0, b0, r.instances) + static_cast<uint64_t>(UnZigZag(residual));
    out.push_back(r);
    if (!pull_changed()) return Corrupt(what, "bad changed row");
  }
  if (have_removed) {
    return Corrupt(what,
                   absl::StrFormat("removes class %d that the base snapshot lacks", next_removed));
  }
  if (!in.empty()) return Corrupt(what, "trailing bytes");
  h->rows.swap(out);
  h->total_instances += static_cast<uint64_t>(UnZigZag(dti));
  h->total_bytes += static_cast<uint64_t>(UnZigZag(dtb));
  return absl::OkStatus();
}

}  // namespace heapwatch::storage::detail
