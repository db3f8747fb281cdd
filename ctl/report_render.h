// The one text renderer of heapwatch's report model: the drill-down report of a suspect class
// (heapwatch.v1.DrillDownReport) as `heapwatchctl report` prints it for the daemon's extended dumps
// and `heapwatchctl analyze` for a dump file (heapwatch.v1.DumpReport, which holds one
// DrillDownReport per suspect class), and the other extended-dump messages (ExtendedDump,
// ListReportsResponse, ExtendedDumpDiff). Both commands get their messages from one conversion
// (proto/report_proto.h) of one pipeline's result (pipeline/analyze_dump.h).
//
// One dialect everywhere:
//   * an object is "class@0xid": "java.util.ArrayList@0x7f0012a0" ("?" for an unknown class; a
//     class object is "class com.acme.Cache@0x...");
//   * a path from a GC root is one step per line: "GC root (kind) class@0xid (retained)" for the
//     root, then "reference -> class@0xid (retained)", with " (weak)" after a reference held only
//     by a soft, weak, phantom or finalizer reference; an object no GC root reaches is
//     "(no GC root reaches it)";
//   * sizes are human-readable (ctl/output.h HumanBytes: "5.3 MiB"); the suspect's totals and the
//     dump's totals carry the exact byte count beside ("5.3 MiB (5557452 B)").
//
// Pure functions (tested on hand-built messages); complexity linear in the message's size.
#ifndef HEAPWATCH_CTL_REPORT_RENDER_H_
#define HEAPWATCH_CTL_REPORT_RENDER_H_

#include <cstddef>
#include <string>

#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::ctl {

// "java.util.ArrayList@0x7f0012a0".
std::string ObjectName(const heapwatch::v1::HeapObject& object);

// The suspect part of a drill-down report, shared by `report` and `analyze`: instances / shallow /
// retained (precise) / minimum retained size, each accumulation point with its retained size,
// share and path from a GC root, the "kept alive by" table and the shortest strong path. Tables
// show at most `max_rows` rows (0 = all) and say how many more the message holds.
std::string RenderDrillDown(const heapwatch::v1::DrillDownReport& report, size_t max_rows);

// "Biggest objects by retained size:" and their table (object, shallow, retained, GC root kind), at
// most `max_rows` rows (0 = all).
std::string RenderTopObjects(
    const google::protobuf::RepeatedPtrField<heapwatch::v1::HeapObject>& objects, size_t max_rows);

// The drill-down report as text: header (agent, class, dump id and times, file size, JVM pause,
// analysis time and peak memory), RenderDrillDown (ten rows per table), the biggest objects (ten),
// the growth history (first and last sample, growth) and, when present, the diff from the previous
// extended dump (top class and owner deltas).
std::string RenderReport(const heapwatch::v1::DrillDownReport& report);

// `heapwatchctl analyze` without --json: the dump (path, file size, format, size model), totals,
// the class histogram with retained sizes, the biggest objects, the first level of the dominator
// tree grouped by class (with report.by_dynamic instead of these three: the objects and classes by
// dynamic and by shared size, "~" marking estimates, and the shared-size histogram of the thesis's
// Tab. 5.3), then per suspect "Suspect class C:" and its RenderDrillDown, and the time per stage.
// Every row of the message is shown (the command limits them with --top, --rows).
std::string RenderDumpReport(const heapwatch::v1::DumpReport& report);

// "queued", "dumping", "analyzing", "done", "failed", "unknown".
std::string DumpStateName(heapwatch::v1::ExtendedDumpState state);

// ListReports as a table: dump id, state, trigger, requested time, file size, JVM pause, analysis
// time, and the report classes (done), the error (failed) or the suspect classes (in progress).
std::string RenderReportList(const heapwatch::v1::ListReportsResponse& response);

// One extended dump as a few lines (id, state, trigger, times, sizes, classes or error).
std::string RenderDump(const heapwatch::v1::ExtendedDump& dump);

// A diff of two extended dumps: header (dumps, times, reachable heap delta), the first `top` class
// deltas and owner deltas (each owner with its path from a GC root) and owner classes; `top` 0 =
// all rows in the message. Notes how many rows the server left out (class_count, owner_count).
std::string RenderExtendedDumpDiff(const heapwatch::v1::ExtendedDumpDiff& diff, size_t top);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_REPORT_RENDER_H_
