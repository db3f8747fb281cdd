#include "ctl/analyze_command.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "analysis/aggregations.h"
#include "analysis/thread_names.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "ctl/dump_report_json.h"
#include "ctl/from_roots.h"
#include "ctl/report_render.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;
using Clock = std::chrono::steady_clock;

struct AnalyzeArgs {
  std::string file;
  std::string suspect_class;
  size_t top = 20;
  size_t rows = 30;
  int dump = -1;
  std::vector<std::string> exclude;
  std::string size_model = "auto";
  double ratio = 0.7;
  std::string by = "retained";  // what the biggest objects and classes are ranked by
  bool all_references = false;  // dynamic sizes follow weak referents and class edges too
  // --thread-names: masked (digit runs as '#'), full or off (analysis/thread_names.h).
  std::string thread_names = "masked";
  // --from-roots: HeapRoots' dump from roots instead of the report (ctl/from_roots.h).
  bool from_roots = false;
  FromRootsOptions roots;
};

// Prints "heapwatchctl analyze: <stage> NN% (T s)" lines to `err`, but only once the command has
// run for more than a second, and then at most once a second (and at every stage change).
class Progress {
 public:
  explicit Progress(std::ostream& err) : err_(err), start_(Clock::now()) {}

  void Update(std::string_view stage, double fraction) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    if (elapsed < 1.0) return;
    bool new_stage = stage != stage_;
    if (!new_stage && elapsed - last_ < 1.0) return;
    stage_ = std::string(stage);
    last_ = elapsed;
    if (fraction > 0 && fraction < 1) {
      err_ << absl::StrFormat("heapwatchctl analyze: %s %.0f%% (%.1f s)\n", stage_, 100 * fraction,
                              elapsed);
    } else {
      err_ << absl::StrFormat("heapwatchctl analyze: %s (%.1f s)\n", stage_, elapsed);
    }
    err_.flush();
  }

 private:
  std::ostream& err_;
  Clock::time_point start_;
  std::string stage_;
  double last_ = 0;
};

// The --size-model argument; nullopt for an unknown name.
std::optional<analysis::SizeModel> ParseSizeModel(const std::string& name) {
  if (name == "auto") return analysis::SizeModel::kAuto;
  if (name == "hotspot") return analysis::SizeModel::kHotSpot;
  if (name == "android") return analysis::SizeModel::kAndroid;
  if (name == "netbeans") return analysis::SizeModel::kNetBeans;
  return std::nullopt;
}

// The pipeline's options from the arguments; false (after a message on `err`) for a usage error.
bool MakeOptions(const AnalyzeArgs& args, std::ostream& err,
                 pipeline::AnalyzeDumpOptions* options) {
  options->dump_ordinal = args.dump;
  options->top_objects = args.top;
  options->histogram_rows = args.rows;
  if (!args.suspect_class.empty()) options->suspect_classes = {args.suspect_class};
  options->exclude_patterns = args.exclude;
  if (!(args.ratio > 0 && args.ratio <= 1)) {
    err << "heapwatchctl analyze: --ratio must be in (0, 1]\n";
    return false;
  }
  options->accumulation_ratio = args.ratio;
  if (!args.exclude.empty()) {
    auto compiled = analysis::ClassNamePatterns::Compile(args.exclude);
    if (!compiled.ok()) {
      err << "heapwatchctl analyze: --exclude: " << compiled.status().message() << "\n";
      return false;
    }
  }
  std::optional<analysis::SizeModel> model = ParseSizeModel(args.size_model);
  if (!model) {
    err << "heapwatchctl analyze: --size-model must be auto, hotspot, android or netbeans\n";
    return false;
  }
  options->size_model = *model;
  auto thread_names = analysis::ParseThreadNamePrivacy(args.thread_names);
  if (!thread_names.ok()) {
    err << "heapwatchctl analyze: --thread-names: " << thread_names.status().message() << "\n";
    return false;
  }
  options->thread_names = *thread_names;
  if (args.by == "dynamic") {
    options->by_dynamic_rows = args.top > 0 ? args.top : 20;
  } else if (args.by != "retained") {
    err << "heapwatchctl analyze: --by must be retained or dynamic\n";
    return false;
  }
  options->dynamic.all_references = args.all_references;
  return true;
}

// The report of the dump: runs the pipeline and prints its report model as text or JSON.
int RunReport(const AnalyzeArgs& args, pipeline::AnalyzeDumpOptions options,
              const GlobalOptions& global, std::ostream& out, std::ostream& err) {
  Progress progress(err);
  options.progress = [&progress](std::string_view stage, double fraction) {
    progress.Update(stage, fraction);
  };
  auto analysis = pipeline::AnalyzeDump(args.file, options);
  if (!analysis.ok()) {
    err << "heapwatchctl analyze: " << args.file << ": " << analysis.status().message() << "\n";
    return kExitError;
  }
  if (!analysis->missing_classes.empty()) {
    err << "heapwatchctl analyze: " << args.file << ": no class named \""
        << analysis->missing_classes.front() << "\" in the dump\n";
    return kExitError;
  }
  v1::DumpReport report = proto::ToDumpReport(analysis->report, analysis->suspects);
  if (analysis->by_dynamic) *report.mutable_by_dynamic() = proto::ToProto(*analysis->by_dynamic);
  *report.mutable_class_loaders() = proto::ToProto(analysis->class_loaders);
  if (global.json) {
    out << DumpReportToJson(report) << "\n";
  } else {
    out << RenderDumpReport(report);
  }
  return kExitOk;
}

int Run(const AnalyzeArgs& args, const GlobalOptions& global, std::ostream& out,
        std::ostream& err) {
  pipeline::AnalyzeDumpOptions options;
  if (!MakeOptions(args, err, &options)) return kExitUsage;
  if (args.from_roots) {
    if (global.json) {
      err << "heapwatchctl analyze: --from-roots prints text only (no --json)\n";
      return kExitUsage;
    }
    dumps::ReadOptions read;
    read.dump_ordinal = options.dump_ordinal;
    read.size_model = options.size_model;
    return RunFromRoots(args.file, read, args.roots, out, err);
  }
  return RunReport(args, std::move(options), global, out, err);
}

}  // namespace

Subcommand AddAnalyzeCommand(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "analyze",
      "Offline report on a heap dump file: histogram with retained sizes, biggest objects, "
      "and with --class the suspect analysis (accumulation point, who keeps it alive, paths)");
  cmd->add_option("file", args->file, "Heap dump (HPROF, optionally gzip-compressed)")->required();
  cmd->add_option("--class", args->suspect_class,
                  "Suspect class to analyse, e.g. com.acme.Session");
  cmd->add_option("--top", args->top, "Number of biggest objects by retained size")
      ->capture_default_str();
  cmd->add_option("--rows", args->rows, "Histogram rows (0 = all)")->capture_default_str();
  cmd->add_option("--dump", args->dump, "Which heap dump of the file, 0-based (default: the last)");
  cmd->add_option("--exclude", args->exclude,
                  "Regular expressions of dominator classes to climb past in 'who keeps it alive' "
                  "(default: java.* javax.* jdk.* sun.* com\\.sun\\..*)");
  cmd->add_option("--size-model", args->size_model,
                  "Shallow sizes: auto, hotspot, android, netbeans")
      ->capture_default_str();
  cmd->add_option("--ratio", args->ratio, "Accumulation-point ratio in (0, 1]")
      ->capture_default_str();
  cmd->add_option("--by", args->by,
                  "Rank the biggest objects and classes by retained size, or by dynamic size and "
                  "shared size (dynamic - retained; --top rows each)")
      ->capture_default_str();
  cmd->add_option("--thread-names", args->thread_names,
                  "Names of live threads in the report: masked (digit runs shown as #, "
                  "pool-#-thread-#), full, or off (docs/leak-patterns.md)")
      ->capture_default_str();
  cmd->add_flag("--all-references", args->all_references,
                "Dynamic sizes follow every reference (weak/soft referents, an object's class), "
                "as the dynaTrace thesis did; default: strong references only");
  cmd->add_flag(
      "--from-roots", args->from_roots,
      "HeapRoots' dump from roots: the tree below each root (GC roots; inferred roots for "
      "dumps without them and for garbage) with total size, descendants and max depth");
  cmd->add_option("--depth", args->roots.depth,
                  "With --from-roots: levels printed below each root (-1 = all)")
      ->capture_default_str();
  cmd->add_option("--min-size", args->roots.min_size,
                  "With --from-roots: summarise subtrees smaller than this many bytes")
      ->capture_default_str();
  Subcommand sub;
  sub.app = cmd;
  sub.run = [args](const GlobalOptions& global, std::ostream& out, std::ostream& err) {
    return Run(*args, global, out, err);
  };
  return sub;
}

}  // namespace heapwatch::ctl
