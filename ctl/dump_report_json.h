// `heapwatchctl analyze --json`: the report model (heapwatch.v1.DumpReport, the message the text
// renderer ctl/report_render.h prints) as the JSON object `analyze --json` has always printed, with
// its field names (docs/cli.md "analyze"; scripts and tests rely on them):
//
//   {"dump_path", "dump_file_bytes", "dump_format", "size_model",
//    "totals": {"objects", "classes", "gc_roots", "reachable_objects", "unreachable_objects",
//               "shallow_bytes", "reachable_shallow_bytes", "unreachable_shallow_bytes"},
//    "histogram": [CLASS], "top_objects": [OBJECT], "top_dominators_by_class": [CLASS],
//    "suspect": {"class_name", "instances", "shallow_bytes", "retained_bytes",
//                "minimum_retained_bytes", "accumulation_points": [{"object": OBJECT,
//                "suspect_instances", "suspect_bytes", "share", "path": PATH}],
//                "kept_alive_by": [{"class_name", "dominators", "dominated", "dominator_shallow_bytes",
//                "dominated_shallow_bytes", "dominator_retained_bytes", "biggest_dominator"}],
//                "exclude_patterns", "shortest_path": PATH}   (only with --class: the first suspect)
//    "timings": {"parse_seconds", "dominators_seconds", "retained_seconds",
//                "gc_root_paths_seconds", "aggregation_seconds", "total_seconds", "peak_rss_bytes"}}
//   CLASS  = {"class_name", "instances", "shallow_bytes", "retained_bytes"}
//   OBJECT = {"object_id", "class_name", "shallow_bytes", "retained_bytes", "gc_root_kind" (GC roots
//            only)}
//   PATH   = {"found", "strong", "steps": [{"reference", "weak", "object": OBJECT}]}
//
// Unlike the other `--json` outputs (protobuf's JSON printer over heapwatch.ctl.v1, ctl/output.h),
// this one is written with nlohmann-json so that 64-bit sizes and object ids stay exact JSON
// integers. Keys are sorted alphabetically within each object. Sizes in bytes, durations in
// seconds. Pure; linear in the message's size.
#ifndef HEAPWATCH_CTL_DUMP_REPORT_JSON_H_
#define HEAPWATCH_CTL_DUMP_REPORT_JSON_H_

#include <string>

#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::ctl {

// The JSON text (2-space indent, no trailing newline).
std::string DumpReportToJson(const heapwatch::v1::DumpReport& report);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_DUMP_REPORT_JSON_H_
