// `heapwatchctl analyze`: an offline report on one heap dump file (no daemon needed).
//
//   heapwatchctl analyze FILE [--class C] [--top N] [--rows N] [--json] [--dump N] [--exclude
//   PATTERN...] [--size-model auto|hotspot|android|netbeans] [--ratio R] [--by retained|dynamic]
//   [--all-references]
//
// Runs the analysis pipeline the daemon runs on its extended dumps (pipeline/analyze_dump.h: read
// FILE in any format collectors/dumps reads, HPROF 1.0.1/1.0.2/1.0.3 plain or .gz; dominator tree,
// retained sizes, report, suspect analysis) and prints its report model
// (heapwatch.v1.DumpReport, proto/report_proto.h) through the renderer `heapwatchctl report` uses
// (ctl/report_render.h): totals (objects, classes, GC roots, unreachable), the class histogram with
// shallow and retained sizes, the biggest objects by retained size, the first level of the
// dominator tree grouped by class and, with --class, the suspect analysis: total (precise) and
// minimum retained size of the class's instances, the accumulation point(s) with their paths from
// a GC root, who keeps the instances alive (immediate dominators grouped by class, climbing past
// --exclude patterns; default java.*, javax.*, jdk.*, sun.*, com\.sun\..*) and the shortest strong
// path from a GC root to the biggest instance; the exact dynamic size (analysis/dynamic_size.h) of
// the suspect's instances together, of each accumulation point and of each of the biggest
// objects. With --by dynamic the histogram, biggest objects and dominator tables give way to the
// objects and classes by dynamic size and by shared size (dynamic - retained) and the shared-size
// histogram (analysis/dynamic_ranking.h: ranked by an estimate of every object's dynamic size,
// exact figures for the rows). Sizes in bytes, times in seconds. --json prints the
// same model as JSON with the field names of ctl/dump_report_json.h. Progress goes to stderr once
// the command has run for a second.
//
// Options: --top N biggest objects (default 20); --rows N histogram rows (default 30, 0 = all);
// --dump N which heap dump of a file holding several (0-based, default the last); --size-model how
// shallow sizes are computed (default auto); --ratio the accumulation-point ratio (default 0.7, see
// analysis/aggregations.h); --by what the biggest objects and classes are ranked by (default
// retained; dynamic lists --top rows per list); --all-references: dynamic sizes follow soft/weak
// referents and every object's reference to its class too (the thesis's variant).
//
// --from-roots prints HeapRoots' "dump from roots" instead (ctl/from_roots.h): the tree below each
// root with total size, descendants and maximum depth, for any format dumps::ReadHeapDump reads
// (HPROF, IBM PHD, IBM text); --depth N levels below each root (default 3, -1 = all), --min-size
// BYTES summarises smaller subtrees (default 0). Text only (--json is a usage error).
//
// Exit codes (ctl/command.h): 0 ok; 1 the file cannot be read or analysed (missing, not a heap
// dump, unsupported format, corrupt: the message says which and where), or --class names no class
// of the dump; 2 usage error (including an invalid --exclude regular expression, --ratio or --by).
#ifndef HEAPWATCH_CTL_ANALYZE_COMMAND_H_
#define HEAPWATCH_CTL_ANALYZE_COMMAND_H_

#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds the `analyze` subcommand to `app` (a heapwatchctl app with the global --json flag).
Subcommand AddAnalyzeCommand(CLI::App& app);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_ANALYZE_COMMAND_H_
