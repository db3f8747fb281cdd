#include "ctl/analyze_command.h"

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "analysis/aggregations.h"
#include "analysis/report.h"
#include "ctl/from_roots.h"
#include "collectors/dumps/hprof/hprof_reader.h"

namespace heapwatch::ctl {
namespace {

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
  // --from-roots: HeapRoots' dump from roots instead of the report (ctl/from_roots.h).
  bool from_roots = false;
  FromRootsOptions roots;
};

// Peak resident set size of this process (VmHWM), in bytes; 0 when /proc is not there.
uint64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

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

int Run(const AnalyzeArgs& args, const GlobalOptions& global, std::ostream& out,
        std::ostream& err) {
  analysis::ReportOptions options;
  options.top_objects = args.top;
  options.histogram_rows = args.rows;
  if (!args.suspect_class.empty()) options.suspect_class = args.suspect_class;
  if (!args.exclude.empty()) options.exclude_patterns = args.exclude;
  if (!(args.ratio > 0 && args.ratio <= 1)) {
    err << "heapwatchctl analyze: --ratio must be in (0, 1]\n";
    return kExitUsage;
  }
  options.accumulation_ratio = args.ratio;
  if (options.exclude_patterns) {
    auto compiled = analysis::ClassNamePatterns::Compile(*options.exclude_patterns);
    if (!compiled.ok()) {
      err << "heapwatchctl analyze: --exclude: " << compiled.status().message() << "\n";
      return kExitUsage;
    }
  }
  hprof::ReadOptions read;
  read.dump_ordinal = args.dump;
  if (args.size_model == "auto") {
    read.size_model = analysis::SizeModel::kAuto;
  } else if (args.size_model == "hotspot") {
    read.size_model = analysis::SizeModel::kHotSpot;
  } else if (args.size_model == "android") {
    read.size_model = analysis::SizeModel::kAndroid;
  } else if (args.size_model == "netbeans") {
    read.size_model = analysis::SizeModel::kNetBeans;
  } else {
    err << "heapwatchctl analyze: --size-model must be auto, hotspot, android or netbeans\n";
    return kExitUsage;
  }

  if (args.from_roots) {
    if (global.json) {
      err << "heapwatchctl analyze: --from-roots prints text only (no --json)\n";
      return kExitUsage;
    }
    return RunFromRoots(args.file, read, args.roots, out, err);
  }

  Progress progress(err);
  read.progress = [&progress](uint64_t done, uint64_t total) {
    progress.Update("reading the dump",
                    total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total));
  };
  options.progress = [&progress](std::string_view stage, double fraction) {
    progress.Update(stage, fraction);
  };

  auto start = Clock::now();
  auto graph = hprof::ReadHeapGraph(args.file, read);
  if (!graph.ok()) {
    err << "heapwatchctl analyze: " << args.file << ": " << graph.status().message() << "\n";
    return kExitError;
  }
  double parse_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  auto report = analysis::BuildReport(*graph, options);
  if (!report.ok()) {
    err << "heapwatchctl analyze: " << args.file << ": " << report.status().message() << "\n";
    return kExitError;
  }
  report->dump_path = args.file;
  struct stat st {};
  if (::stat(args.file.c_str(), &st) == 0)
    report->dump_file_bytes = static_cast<uint64_t>(st.st_size);
  report->timings.parse_seconds = parse_seconds;
  report->timings.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report->timings.peak_rss_bytes = PeakRssBytes();
  if (global.json) {
    out << analysis::ReportToJson(*report) << "\n";
  } else {
    out << analysis::ReportToText(*report);
  }
  return kExitOk;
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
  cmd->add_flag("--from-roots", args->from_roots,
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
