// The escalation's policy (docs/escalation.md "When a dump is taken", "Budgets"): which suspects
// need an extended dump (coverage of leaks and of suspect episodes, the join window), when a dump
// may start (the agent's min_dump_interval) and which budgets refuse or delay it (analysis memory,
// raw-dump disk, queue, analysis workers). Pure functions over plain values: no store, no thread,
// no clock of their own (the caller passes `now`), so every decision is testable on its own.
// daemon/escalation.h holds the state these decisions read and carries them out; seed 001
// (dynaTrace: simple dumps trigger extended dumps) is the model.
//
// Thread-safety: every function is pure (no shared state); DumpCoverage is a plain value.
#ifndef HEAPWATCH_DAEMON_ESCALATION_POLICY_H_
#define HEAPWATCH_DAEMON_ESCALATION_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/config.h"
#include "diff/trend_detector.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::daemon {

// The error of a dump refused by a budget starts with this ("refused: ..."); such a dump counts as
// covering its classes.
inline constexpr char kRefusedPrefix[] = "refused: ";

// Estimated analysis memory and uncompressed dump size, in bytes, of a JVM whose last class
// histogram totals `heap_bytes` shallow bytes: 1.2 times that (measured: peak RSS of a whole
// analysis is about 1.0x the uncompressed dump, which is about 1.1x the live heap).
uint64_t EstimateDumpBytes(uint64_t heap_bytes);
// "1.5 GiB", "3.0 MiB", "512 bytes": sizes in messages.
std::string FormatBytes(uint64_t bytes);
// The id of a dump requested at `t`: "%Y%m%dT%H%M%E6SZ" (UTC, microseconds), which sorts by time.
std::string DumpIdFor(absl::Time t);
// QUEUED, DUMPING or ANALYZING.
bool DumpInProgress(v1::ExtendedDumpState state);

// What the policy knows of one agent's dumps.
struct DumpCoverage {
  // dump_time of the agent's newest dump taken (InfinitePast: none).
  absl::Time last_dump = absl::InfinitePast();
  // class -> the time up to which its suspect episodes are covered: a class is covered for an
  // episode that began (diff::Suspect::first_seen) at or before this time.
  std::map<std::string, absl::Time> covered;
};

// Folds one stored dump record into `coverage` (records read at start, oldest first): every dump
// taken advances last_dump; a DONE dump covers its suspect classes up to its finished_time (classes
// join until its analysis starts), a refused one ("refused: ...") up to its requested_time; other
// FAILED dumps cover nothing (they are retried after the interval).
void AddStoredDump(const v1::ExtendedDump& dump, DumpCoverage* coverage);

// When the agent's next dump may start: last_dump + min_dump_interval (InfinitePast: at once).
absl::Time NextDumpAllowed(const DumpCoverage& coverage, absl::Duration min_dump_interval);
// When a dump requested at `now` may start: after `wait` (the join window of an automatic dump,
// zero for a requested one) and not before NextDumpAllowed.
absl::Time DumpNotBefore(absl::Time now, absl::Duration wait, const DumpCoverage& coverage,
                         absl::Duration min_dump_interval);

// What a collection's suspects ask for.
enum class CoverageAction {
  kNone,       // every suspect is covered for its current episode
  kJoin,       // uncovered classes join the agent's open (joinable) dump
  kNewDump,    // a new dump with the uncovered classes: some leak is not covered
  kNoNewLeak,  // uncovered classes only join leaks that are covered already: no dump
};
struct CoverageDecision {
  CoverageAction action = CoverageAction::kNone;
  // The suspects not covered for their current episode (pointers into the suspects argument), in
  // its order: the classes that join or start the dump.
  std::vector<const diff::Suspect*> uncovered;
  // The leaks not covered yet ("class <name>" for a suspect without a leak id).
  std::set<std::string> new_leaks;
};

// The coverage decision for the agent's suspects after a collection (docs/escalation.md "One
// escalation per leak"): a class is covered for its episode when coverage.covered[class] >=
// first_seen; a leak (suspects sharing diff::Suspect::leak) is covered when one of its classes is
// covered at or after the leak's earliest first_seen. Uncovered classes join the open dump when
// `open_dump_joinable`; otherwise they start a new dump only when some leak is uncovered.
// O(suspects log suspects).
CoverageDecision DecideCoverage(const DumpCoverage& coverage,
                                const std::vector<diff::Suspect>& suspects,
                                bool open_dump_joinable);

// Marks `suspect` covered by a dump requested at `requested` (or from its first_seen when it
// joins later).
void MarkCovered(const diff::Suspect& suspect, absl::Time requested, DumpCoverage* coverage);

// Why a new dump of a JVM with `heap_bytes` is refused before it is queued, or "" when it is not:
// its estimate exceeds max_analysis_memory_bytes or max_dump_disk_bytes, or `waiting` dumps
// (queued + waiting for analysis) already fill max_queued. The reason starts with kRefusedPrefix.
std::string RefusalReason(const EscalationConfig& config, uint64_t heap_bytes, size_t waiting);

// Whether a dump of `estimate` bytes may be written while `in_flight_disk` bytes of raw dumps are
// on disk (written or being written, not yet analysed): always when none is; else when both fit in
// max_dump_disk_bytes.
bool FitsDiskBudget(const EscalationConfig& config, uint64_t in_flight_disk, uint64_t estimate);
// Whether an analysis needing `estimate` bytes may start while `analyses_in_flight` analyses hold
// `memory_in_flight` bytes: always when none runs; else when both fit in max_analysis_memory_bytes.
// (The number of workers, max_concurrent_analyses, is the number of analysis threads.)
bool FitsMemoryBudget(const EscalationConfig& config, int analyses_in_flight,
                      uint64_t memory_in_flight, uint64_t estimate);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_ESCALATION_POLICY_H_
