// `heapwatchctl analyze --json`: the report model (heapwatch.v1.DumpReport, the message the text
// renderer ctl/report_render.h prints) as the JSON object `analyze --json` has always printed, with
// its field names (docs/cli.md "analyze"; scripts and tests rely on them):
//
//   {"dump_path", "dump_file_bytes", "dump_format", "size_model",
//    "totals": {"objects", "classes", "gc_roots", "reachable_objects", "unreachable_objects",
//               "shallow_bytes", "reachable_shallow_bytes", "unreachable_shallow_bytes"},
//    "histogram": [CLASS], "top_objects": [OBJECT], "top_dominators_by_class": [CLASS],
//    "suspect": {"class_name", "instances", "shallow_bytes", "retained_bytes",
//                "minimum_retained_bytes", "dynamic_bytes", "dynamic_objects",
//                "accumulation_points": [{"object": OBJECT,
//                "suspect_instances", "suspect_bytes", "share", "path": PATH}],
//                "kept_alive_by": [{"class_name", "dominators", "dominated",
//                "dominator_shallow_bytes", "dominated_shallow_bytes", "dominator_retained_bytes",
//                "biggest_dominator"}], "exclude_patterns", "shortest_path": PATH}
//               (only with --class: the first suspect)
//    "timings": {"parse_seconds", "dominators_seconds", "retained_seconds",
//                "gc_root_paths_seconds", "aggregation_seconds", "dynamic_seconds",
//                "total_seconds", "peak_rss_bytes"},
//    "by_dynamic": {"all_references", "sketch_size", "objects", "exact_estimates",
//                   "below_retained", "estimate_seconds", "exact_seconds",
//                   "objects_by_dynamic": [DYNOBJ], "objects_by_shared": [DYNOBJ],
//                   "classes_by_dynamic": [DYNCLASS], "classes_by_shared": [DYNCLASS],
//                   "shared_histogram": [{"from_bytes", "to_bytes", "objects"}]}
//                  (only with --by dynamic; heapwatch.v1.DynamicRanking)}
//   CLASS  = {"class_name", "instances", "shallow_bytes", "retained_bytes"}
//   OBJECT = {"object_id", "class_name", "shallow_bytes", "retained_bytes", "gc_root_kind" (GC
//            roots only), "dynamic_bytes" and "dynamic_objects" (where computed: top_objects and
//            accumulation points)}
//   PATH   = {"found", "strong", "steps": [{"reference", "weak", "object": OBJECT}]}
//   DYNOBJ = {"object": OBJECT (with dynamic_*), "estimated_dynamic_bytes", "estimate_exact",
//            "component_objects", "shared_bytes"}
//   DYNCLASS = {"class_name", "instances", "retained_bytes", "dynamic_bytes", "dynamic_objects",
//              "shared_bytes", "estimated_max_bytes", "estimated_sum_bytes"}
// dynamic_* is the exact dynamic size (objects reachable over strong references, or every
// reference with --all-references, itself included; of a suspect or class: of all its instances
// together), absent from an OBJECT when not computed.
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
