#include "daemon/escalation_policy.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/time_util.h"

namespace heapwatch::daemon {
namespace {

// See EstimateDumpBytes.
constexpr double kEstimateFactor = 1.2;

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  auto t = proto::FromTimestamp(ts);
  return t.ok() ? *t : absl::InfinitePast();
}

std::string LeakKey(const diff::Suspect& s) {
  return s.leak.empty() ? absl::StrCat("class ", s.class_name) : s.leak;
}

}  // namespace

uint64_t EstimateDumpBytes(uint64_t heap_bytes) {
  return static_cast<uint64_t>(static_cast<double>(heap_bytes) * kEstimateFactor);
}

std::string FormatBytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return absl::StrFormat("%.1f GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return absl::StrFormat("%.1f MiB", b / double(uint64_t{1} << 20));
  return absl::StrFormat("%d bytes", b);
}

std::string DumpIdFor(absl::Time t) {
  return absl::FormatTime("%Y%m%dT%H%M%E6SZ", t, absl::UTCTimeZone());
}

bool DumpInProgress(v1::ExtendedDumpState s) {
  return s == v1::EXTENDED_DUMP_STATE_QUEUED || s == v1::EXTENDED_DUMP_STATE_DUMPING ||
         s == v1::EXTENDED_DUMP_STATE_ANALYZING;
}

void AddStoredDump(const v1::ExtendedDump& d, DumpCoverage* coverage) {
  if (d.has_dump_time()) coverage->last_dump = std::max(coverage->last_dump, TimeOf(d.dump_time()));
  const bool covers =
      d.state() == v1::EXTENDED_DUMP_STATE_DONE ||
      (d.state() == v1::EXTENDED_DUMP_STATE_FAILED && absl::StartsWith(d.error(), kRefusedPrefix));
  if (!covers) return;
  // A DONE dump covers the episodes of its classes that began before its analysis finished
  // (classes join until the analysis starts); a refusal those that began before it.
  const absl::Time until = d.state() == v1::EXTENDED_DUMP_STATE_DONE && d.has_finished_time()
                               ? TimeOf(d.finished_time())
                               : TimeOf(d.requested_time());
  for (const std::string& c : d.suspect_classes()) {
    absl::Time& t = coverage->covered[c];
    t = std::max(t, until);
  }
}

absl::Time NextDumpAllowed(const DumpCoverage& coverage, absl::Duration min_dump_interval) {
  return coverage.last_dump == absl::InfinitePast() ? absl::InfinitePast()
                                                    : coverage.last_dump + min_dump_interval;
}

absl::Time DumpNotBefore(absl::Time now, absl::Duration wait, const DumpCoverage& coverage,
                         absl::Duration min_dump_interval) {
  return std::max(now + wait, NextDumpAllowed(coverage, min_dump_interval));
}

CoverageDecision DecideCoverage(const DumpCoverage& coverage,
                                const std::vector<diff::Suspect>& suspects,
                                bool open_dump_joinable) {
  auto covered_since = [&coverage](const std::string& name, absl::Time t) {
    auto it = coverage.covered.find(name);
    return it != coverage.covered.end() && it->second >= t;
  };
  std::map<std::string, absl::Time> leak_first_seen;  // leak key -> earliest first_seen
  for (const diff::Suspect& s : suspects) {
    auto [it, added] = leak_first_seen.emplace(LeakKey(s), s.first_seen);
    if (!added) it->second = std::min(it->second, s.first_seen);
  }
  std::set<std::string> covered_leaks;
  for (const diff::Suspect& s : suspects) {
    const std::string key = LeakKey(s);
    if (covered_since(s.class_name, leak_first_seen.at(key))) covered_leaks.insert(key);
  }
  CoverageDecision out;
  for (const diff::Suspect& s : suspects) {
    if (covered_since(s.class_name, s.first_seen)) continue;
    out.uncovered.push_back(&s);
    if (!covered_leaks.count(LeakKey(s))) out.new_leaks.insert(LeakKey(s));
  }
  if (out.uncovered.empty()) {
    out.action = CoverageAction::kNone;
  } else if (open_dump_joinable) {
    out.action = CoverageAction::kJoin;
  } else if (out.new_leaks.empty()) {
    out.action = CoverageAction::kNoNewLeak;
  } else {
    out.action = CoverageAction::kNewDump;
  }
  return out;
}

void MarkCovered(const diff::Suspect& suspect, absl::Time requested, DumpCoverage* coverage) {
  coverage->covered[suspect.class_name] = std::max(requested, suspect.first_seen);
}

std::string RefusalReason(const EscalationConfig& config, uint64_t heap_bytes, size_t waiting) {
  const uint64_t estimate = EstimateDumpBytes(heap_bytes);
  if (estimate > config.max_analysis_memory_bytes) {
    return absl::StrCat(kRefusedPrefix, "the analysis would need about ", FormatBytes(estimate),
                        ", more than escalation.max_analysis_memory_bytes (",
                        FormatBytes(config.max_analysis_memory_bytes), ")");
  }
  if (estimate > config.max_dump_disk_bytes) {
    return absl::StrCat(kRefusedPrefix, "the dump would take about ", FormatBytes(estimate),
                        ", more than escalation.max_dump_disk_bytes (",
                        FormatBytes(config.max_dump_disk_bytes), ")");
  }
  if (waiting >= static_cast<size_t>(config.max_queued)) {
    return absl::StrCat(kRefusedPrefix, waiting,
                        " dumps are already waiting (escalation.max_queued)");
  }
  return "";
}

bool FitsDiskBudget(const EscalationConfig& config, uint64_t in_flight_disk, uint64_t estimate) {
  return in_flight_disk == 0 || in_flight_disk + estimate <= config.max_dump_disk_bytes;
}

bool FitsMemoryBudget(const EscalationConfig& config, int analyses_in_flight,
                      uint64_t memory_in_flight, uint64_t estimate) {
  return analyses_in_flight == 0 || memory_in_flight + estimate <= config.max_analysis_memory_bytes;
}

}  // namespace heapwatch::daemon
