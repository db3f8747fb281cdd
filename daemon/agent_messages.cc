#include "daemon/agent_messages.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collectors/agent_identity.h"
#include "common/utf8.h"
#include "proto/agent_mode.h"
#include "proto/time_util.h"

namespace heapwatch::daemon {

namespace av1 = ::heapwatch::agent::v1;

bool IsPrintableUtf8(std::string_view s, size_t max, bool allow_empty) {
  if (s.size() > max || (!allow_empty && s.empty())) return false;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    if (!DecodeUtf8(s, &i, &cp)) return false;
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) return false;  // C0, DEL, C1
  }
  return true;
}

std::string PrintableText(std::string_view s, size_t max) {
  std::string out;
  std::string next;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    next.clear();
    if (!DecodeUtf8(s, &i, &cp)) {
      AppendUtf8(kReplacementCharacter, &next);
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) {
      next = "?";
    } else {
      AppendUtf8(cp, &next);
    }
    if (out.size() + next.size() > max) break;
    out += next;
  }
  return out;
}

namespace {

constexpr size_t kMaxClassNameBytes = 4096;  // agent.proto file comment
constexpr size_t kMaxModuleBytes = 1024;
constexpr size_t kMaxClassesPerStream = 1'000'000;  // bounds a stream's dictionary ...
constexpr size_t kMaxDictionaryBytes = 64 << 20;    // ... and its names' bytes
constexpr size_t kMaxRowsPerHistogram = 1'000'000;
constexpr size_t kMaxLiveSetPoints = 10'000;
constexpr size_t kMaxLabels = 16;

bool IsLabelKey(std::string_view k) {
  if (k.empty() || k.size() > 32) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

// Register -> AgentInfo, or why not (INVALID_ARGUMENT).
StatusOr<AgentInfo> ValidateRegister(const av1::Register& r) {
  auto bad = [](std::string why) { return absl::InvalidArgumentError("Register: " + why); };
  if (r.protocol_version() != 1) {
    return bad(absl::StrCat("protocol_version ", r.protocol_version(), " is not supported (1)"));
  }
  if (!IsPrintableUtf8(r.host(), 255)) return bad("host must be 1..255 bytes of printable UTF-8");
  if (r.pid() <= 0 || r.pid() > (int64_t{1} << 32)) return bad("pid out of range");
  if (!r.has_jvm_start_time()) return bad("jvm_start_time is missing");
  auto start = proto::FromTimestamp(r.jvm_start_time());
  if (!start.ok()) return bad(absl::StrCat("jvm_start_time: ", start.status().message()));
  const AgentId expected = collectors::MakeAgentId(r.host(), r.pid(), *start);
  if (r.agent_id() != expected.value) {
    // The one id scheme of attach and registered agents (collectors/agent_identity.h): a JVM that
    // runs the agent is recognised by discovery and never collected twice.
    return bad("agent_id must be MakeAgentId(host, pid, jvm_start_time) (\"" +
               std::string(IsPrintableUtf8(r.agent_id(), 128) ? r.agent_id() : "<malformed>") +
               "\" is not \"" + expected.value + "\")");
  }
  if (!IsPrintableUtf8(r.main_class(), kMaxClassNameBytes, true)) {
    return bad("main_class must be printable UTF-8 of at most 4096 bytes");
  }
  if (!IsPrintableUtf8(r.jvm_version(), 256, true) ||
      !IsPrintableUtf8(r.agent_version(), 64, true) ||
      !IsPrintableUtf8(r.garbage_collector(), 256, true)) {
    return bad("jvm_version, agent_version and garbage_collector must be short printable UTF-8");
  }
  if (static_cast<size_t>(r.labels_size()) > kMaxLabels) return bad("more than 16 labels");
  for (const auto& [k, v] : r.labels()) {
    if (!IsLabelKey(k)) return bad("label keys must be [a-z0-9_]{1,32}");
    if (!IsPrintableUtf8(v, 128, true)) {
      return bad("label values must be printable UTF-8 of at most 128 bytes");
    }
  }
  AgentInfo info;
  info.id = expected;
  info.kind = AgentKind::kRegistered;
  info.host = r.host();
  info.pid = r.pid();
  info.main_class = r.main_class();
  info.jvm_version = r.jvm_version();
  info.start_time = *start;
  info.labels.insert(r.labels().begin(), r.labels().end());
  return info;
}

StatusOr<Snapshot> ToSnapshot(const av1::Histogram& h, const AgentId& agent,
                              ClassDictionary* dict) {
  Snapshot s;
  HW_RETURN_IF_ERROR(ToSnapshot(h, agent, dict, &s));
  return s;
}

// Histogram -> Snapshot with the stream's dictionary (extended by new_classes only when the whole
// histogram is valid). Errors: InvalidArgument naming the problem.
Status ToSnapshot(const av1::Histogram& h, const AgentId& agent, ClassDictionary* dict,
                  Snapshot* out) {
  auto bad = [&](std::string why) {
    return absl::InvalidArgumentError(absl::StrCat("Histogram ", h.sequence(), ": ", why));
  };
  if (!h.has_time()) return bad("time is missing");
  auto time = proto::FromTimestamp(h.time());
  if (!time.ok()) return bad(absl::StrCat("time: ", time.status().message()));
  const HistogramMode mode = proto::FromAgentMode(h.mode());
  if (mode == HistogramMode::kUnknown) return bad("mode must be LIVE, ALL or ALL_AFTER_GC");
  absl::Duration pause = absl::ZeroDuration();
  if (h.has_pause()) {
    auto p = proto::FromDuration(h.pause());
    if (!p.ok() || *p < absl::ZeroDuration()) return bad("pause must be a non-negative duration");
    pause = *p;
  }
  if (h.class_refs_size() != h.instances_size() || h.class_refs_size() != h.bytes_size()) {
    return bad(absl::StrCat("class_refs, instances and bytes must have equal lengths (",
                            h.class_refs_size(), ", ", h.instances_size(), ", ", h.bytes_size(),
                            ")"));
  }
  if (static_cast<size_t>(h.class_refs_size()) > kMaxRowsPerHistogram) return bad("too many rows");
  if (dict->classes.size() + h.new_classes_size() > kMaxClassesPerStream) {
    return bad("too many classes in one stream");
  }
  std::unordered_map<uint32_t, ClassDictionary::Entry> fresh;
  size_t fresh_bytes = 0;
  for (const av1::ClassDefinition& c : h.new_classes()) {
    if (c.class_ref() == 0) return bad("class_ref 0 is not allowed");
    if (dict->classes.contains(c.class_ref()) || fresh.contains(c.class_ref())) {
      return bad(absl::StrCat("class_ref ", c.class_ref(), " is defined twice in the stream"));
    }
    if (!IsPrintableUtf8(c.class_name(), kMaxClassNameBytes)) {
      return bad(absl::StrCat("class_ref ", c.class_ref(),
                              ": class_name must be 1..4096 bytes of printable UTF-8"));
    }
    if (!IsPrintableUtf8(c.module(), kMaxModuleBytes, true)) {
      return bad(absl::StrCat("class_ref ", c.class_ref(),
                              ": module must be printable UTF-8 of at most 1024 bytes"));
    }
    fresh_bytes += c.class_name().size() + c.module().size();
    if (dict->bytes + fresh_bytes > kMaxDictionaryBytes) {
      return bad("the stream's class names exceed 64 MiB");
    }
    fresh.emplace(c.class_ref(), ClassDictionary::Entry{c.class_name(), c.module()});
  }
  Snapshot& s = *out;
  if (s.agent != agent) s.agent = agent;
  s.time = *time;
  s.cost = CollectionCost{mode, pause};
  // Rows are overwritten in place: a row's strings keep their buffers, so a stream whose classes
  // come in the same order (nearly always) allocates nothing here (3,000-class histograms: about
  // a fifth of the daemon's CPU went to allocating and freeing these strings).
  s.histogram.rows.resize(h.class_refs_size());
  uint64_t instances = 0, bytes = 0;
  for (int i = 0; i < h.class_refs_size(); ++i) {
    const uint32_t ref = h.class_refs(i);
    const ClassDictionary::Entry* e = nullptr;
    if (auto it = dict->classes.find(ref); it != dict->classes.end()) {
      e = &it->second;
    } else if (auto f = fresh.find(ref); f != fresh.end()) {
      e = &f->second;
    } else {
      return bad(absl::StrCat("row ", i, " refers to undefined class_ref ", ref));
    }
    if (__builtin_add_overflow(instances, h.instances(i), &instances) ||
        __builtin_add_overflow(bytes, h.bytes(i), &bytes)) {
      return bad("totals overflow");
    }
    ClassHistogramRow& row = s.histogram.rows[i];
    row.class_name.assign(e->name);
    row.module.assign(e->module);
    row.instances = h.instances(i);
    row.bytes = h.bytes(i);
  }
  if (instances != h.total_instances() || bytes != h.total_bytes()) {
    return bad(absl::StrCat("totals (", h.total_instances(), " instances, ", h.total_bytes(),
                            " bytes) differ from the sums over the rows (", instances, ", ", bytes,
                            ")"));
  }
  s.histogram.total_instances = instances;
  s.histogram.total_bytes = bytes;
  for (auto& [ref, e] : fresh) dict->classes.emplace(ref, std::move(e));
  dict->bytes += fresh_bytes;
  return absl::OkStatus();
}

StatusOr<std::vector<LiveSetPoint>> ToLiveSet(const av1::LiveSet& l) {
  auto bad = [&](std::string why) {
    return absl::InvalidArgumentError(absl::StrCat("LiveSet ", l.sequence(), ": ", why));
  };
  if (static_cast<size_t>(l.points_size()) > kMaxLiveSetPoints) return bad("too many points");
  std::vector<LiveSetPoint> out;
  for (const av1::LiveSetPoint& p : l.points()) {
    if (!p.has_time()) return bad("a point without time");
    auto t = proto::FromTimestamp(p.time());
    if (!t.ok()) return bad(absl::StrCat("time: ", t.status().message()));
    LiveSetPoint point;
    point.time = *t;
    switch (p.source()) {
      case av1::LIVE_SET_SOURCE_FULL_GC:
        point.source = LiveSetSource::kFullGc;
        break;
      case av1::LIVE_SET_SOURCE_CONCURRENT_CYCLE:
        point.source = LiveSetSource::kConcurrentCycle;
        break;
      case av1::LIVE_SET_SOURCE_YOUNG_UPPER_BOUND:
        point.source = LiveSetSource::kYoungUpperBound;
        break;
      default:
        return bad("source must be FULL_GC, CONCURRENT_CYCLE or YOUNG_UPPER_BOUND");
    }
    point.live_bytes = p.live_bytes();
    point.capacity_bytes = p.capacity_bytes();
    point.max_bytes = p.max_bytes();
    out.push_back(point);
  }
  return out;
}

}  // namespace heapwatch::daemon
