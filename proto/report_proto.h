// Conversions between the analysis report model (analysis/report.h, analysis/dump_summary.h) and
// the public messages (heapwatch.v1: HeapObject, GcRootPath, AccumulationPoint, KeptAliveBy,
// DrillDownReport, DumpReport, ExtendedDumpTotals, ExtendedDumpDiff) and the stored record
// heapwatch.records.v1.ExtendedDumpSummary. The one conversion: the daemon stores what it makes
// (drill-down reports, summaries, diffs) and `heapwatchctl analyze` prints its DumpReport through
// the same renderer as `heapwatchctl report` (ctl/report_render.h).
//
// Field by field and lossless where both sides have the field; the analysis model holds structure
// and sizes only (no primitive values, no string contents) and so do the messages made from it.
// Sizes in bytes. Thread-safety: pure functions. None can fail.
#ifndef HEAPWATCH_PROTO_REPORT_PROTO_H_
#define HEAPWATCH_PROTO_REPORT_PROTO_H_

#include <cstdint>
#include <span>

#include "analysis/class_loaders.h"
#include "analysis/dominator_treemap.h"
#include "analysis/dump_summary.h"
#include "analysis/dynamic_ranking.h"
#include "analysis/report.h"
#include "heapwatch/records/v1/records.pb.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::proto {

v1::HeapObject ToProto(const analysis::ObjectSummary& object);
v1::GcRootPath ToProto(const analysis::GcRootPathReport& path);
v1::AccumulationPoint ToProto(const analysis::AccumulationPointReport& point);
v1::KeptAliveBy ToProto(const analysis::DominatorClassRow& row);
// A known-leak pattern match (anchors are analysis-internal and not carried over).
v1::LeakPatternMatch ToProto(const analysis::LeakPatternMatch& match);
v1::ExtendedDumpTotals ToProto(const analysis::ReportTotals& totals);
analysis::ReportTotals FromProto(const v1::ExtendedDumpTotals& totals);

// Fills the suspect fields of `report` (class_name, instances, shallow_bytes, retained_bytes,
// minimum_retained_bytes, dynamic_bytes, dynamic_objects, accumulation_points, kept_alive_by,
// exclude_patterns, shortest_path, leak_patterns) and
// top_objects (replacing what they held). Leaves agent, dump, growth_history, suspect and
// diff_from_previous to the caller.
void FillDrillDownReport(const analysis::SuspectReport& suspect,
                         std::span<const analysis::ObjectSummary> top_objects,
                         v1::DrillDownReport* report);

// The dynamic-size view (`heapwatchctl analyze --by dynamic`), every field.
v1::DynamicRanking ToProto(const analysis::DynamicRanking& ranking);

// The class loaders of a dump (analysis/class_loaders.h), every field.
v1::ClassLoaderReport ToProto(const analysis::ClassLoaderSummary& summary);

// A class histogram row (also a row of the dominator tree grouped by class).
v1::ClassRetained ToProto(const analysis::ClassRow& row);
v1::AnalysisTimings ToProto(const analysis::ReportTimings& timings);

// The dominator treemap of the web report (analysis/dominator_treemap.h), every field; kinds are
// "class", "statics", "other", "self".
v1::DominatorTreemap ToProto(const analysis::DominatorTreemap& treemap);

// The whole analysis of one dump as `heapwatchctl analyze` prints it: every field of `report`, and
// one DrillDownReport per suspect (FillDrillDownReport without top objects: they are the
// DumpReport's), first report.suspect when set, then `suspects`.
v1::DumpReport ToDumpReport(const analysis::Report& report,
                            std::span<const analysis::SuspectReport> suspects = {});

// Fills totals, classes and owners of `record` (replacing what they held); agent, dump_id and
// dump_time are the caller's.
void FillDumpSummaryRecord(const analysis::DumpSummary& summary,
                           records::v1::ExtendedDumpSummary* record);
// The inverse of FillDumpSummaryRecord.
analysis::DumpSummary DumpSummaryFromRecord(const records::v1::ExtendedDumpSummary& record);

// The diff as a message: the `max_classes` classes and `max_owners` owners (and owner classes) with
// the largest growth first (0 = all), class_count / owner_count = the sizes before truncation.
// agent, from_dump, to_dump, from_time and to_time are the caller's.
v1::ExtendedDumpDiff ToProto(const analysis::DumpDiff& diff, uint32_t max_classes,
                             uint32_t max_owners);

}  // namespace heapwatch::proto

#endif  // HEAPWATCH_PROTO_REPORT_PROTO_H_
