#include "ctl/trend_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collectors/class_histogram.h"
#include "ctl/leak_output.h"
#include "ctl/output.h"
#include "ctl/rpc.h"
#include "ctl/suspect_table.h"
#include "ctl/time_arg.h"
#include "absl/strings/str_join.h"
#include "diff/leak_detector.h"
#include "diff/trend_detector.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "proto/time_util.h"
#include "proto/trend_proto.h"

namespace heapwatch::ctl {
namespace {

namespace json = ::heapwatch::ctl::v1;
namespace v1 = ::heapwatch::v1;

// A histogram of a few hundred thousand classes is tens of MiB; anything far bigger is some other
// file (a heap dump given by mistake) and is refused before it is read into memory.
constexpr uintmax_t kMaxHistogramFileBytes = uintmax_t{256} << 20;

struct TrendArgs {
  std::vector<std::string> paths;
  std::string agent = "offline";
  bool history = false;
  bool skip_bad = false;
  size_t window = 0;         // 0: the default window_snapshots
  size_t min_snapshots = 0;  // 0: the default min_snapshots
  bool no_time_scales = false;
  std::string min_time_scale;  // empty: the default
  std::string max_time_scale;  // empty: the default
  std::string explain;         // a class to explain at the end, or empty
};

// One histogram file of the series and the time it stands for.
struct InputFile {
  std::string path;
  absl::Time time;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool AllDigits(std::string_view s, size_t from, size_t count) {
  if (from + count > s.size()) return false;
  for (size_t i = from; i < from + count; ++i) {
    if (!IsDigit(s[i])) return false;
  }
  return true;
}

// Adds `path`'s file time to `files`: from its name, else its modification time.
Status AddFile(const std::string& path, std::vector<InputFile>* files) {
  std::string name = std::filesystem::path(path).filename().string();
  auto from_name = TimeFromFileName(name);
  if (!from_name.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", from_name.status().message()));
  }
  if (from_name->has_value()) {
    files->push_back({path, **from_name});
    return absl::OkStatus();
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  files->push_back({path, absl::TimeFromTimespec(st.st_mtim)});
  return absl::OkStatus();
}

// Expands the FILE|DIR arguments into the series of histogram files in time order.
// Errors: NotFound for a missing path or an empty directory, InvalidArgument for a path that is
// neither a file nor a directory, an ill-formed time in a name, or two files with the same time.
StatusOr<std::vector<InputFile>> ListInputs(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<InputFile> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
      return absl::NotFoundError(
          absl::StrCat(path, ": ", ec ? ec.message() : "no such file or directory"));
    }
    if (fs::is_regular_file(st)) {
      if (Status s = AddFile(path, &files); !s.ok()) return s;
      continue;
    }
    if (!fs::is_directory(st)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": neither a regular file nor a directory"));
    }
    std::vector<std::string> in_dir;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_regular_file(type_ec)) in_dir.push_back(it->path().string());
    }
    if (ec) return absl::NotFoundError(absl::StrCat(path, ": ", ec.message()));
    if (in_dir.empty()) {
      return absl::NotFoundError(absl::StrCat(path, ": no regular file in the directory"));
    }
    std::sort(in_dir.begin(), in_dir.end());  // deterministic order of any error message
    for (const std::string& file : in_dir) {
      if (Status s = AddFile(file, &files); !s.ok()) return s;
    }
  }
  std::stable_sort(files.begin(), files.end(),
                   [](const InputFile& a, const InputFile& b) { return a.time < b.time; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].time == files[i - 1].time) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s and %s have the same time %s; each histogram needs a time of its own",
          files[i - 1].path, files[i].path, Rfc3339(files[i].time)));
    }
  }
  return files;
}

// Reads and parses one histogram file. Errors: those of reading (NotFound, PermissionDenied as
// the OS says, ResourceExhausted for a file too big to be a histogram) and of ParseClassHistogram.
StatusOr<ClassHistogram> ReadHistogram(const std::string& path) {
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return absl::NotFoundError(ec.message());
  if (size > kMaxHistogramFileBytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d bytes, too big for a class histogram (at most %d)", size, kMaxHistogramFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError("read error");
  return collectors::ParseClassHistogram(text.str());
}

// Agent ids as common/agent.h defines them: [A-Za-z0-9._:-], 1 to 128 bytes.
bool ValidAgentId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
           c == ':' || c == '-';
  });
}

json::TrendEpisode ToJson(const diff::Episode& e) {
  json::TrendEpisode o;
  for (const std::string& c : e.classes) o.add_classes(c);
  o.set_main_class(e.main_class);
  proto::ToTimestamp(e.first_seen, o.mutable_first_seen());
  if (e.cleared) proto::ToTimestamp(*e.cleared, o.mutable_cleared());
  o.set_kind(e.kind == diff::Episode::Kind::kLeak ? "leak" : "class");
  o.set_leak(e.leak);
  proto::ToDuration(e.time_scale, o.mutable_time_scale());
  return o;
}

void PrintText(const json::Trend& trend, bool history, absl::Time first, absl::Time last,
               std::ostream& out) {
  out << absl::StrFormat("%d histograms from %s to %s, agent %s", trend.snapshots(),
                         ShortTime(first), ShortTime(last), trend.agent());
  if (trend.skipped_files_size() > 0) {
    out << absl::StrFormat(" (%d files skipped)", trend.skipped_files_size());
  }
  out << "\n\nLeaks:\n";
  PrintLeakTable(trend.leaks(), out);
  out << "\nSuspects:\n";
  PrintSuspectTable(trend.suspects(), out);
  if (!history) return;
  out << "\nEpisodes (flagged and cleared at the time of a histogram):\n";
  if (trend.episodes().empty()) {
    out << "no episodes\n";
    return;
  }
  Table table({"KIND", "LEAK", "MAIN CLASS", "FLAGGED AT", "CLEARED AT", "SCALE", "CLASSES"});
  for (const json::TrendEpisode& e : trend.episodes()) {
    auto first_seen = proto::FromTimestamp(e.first_seen());
    auto cleared = proto::FromTimestamp(e.cleared());
    table.AddRow({e.kind(), e.leak().empty() ? "-" : e.leak(), e.main_class(),
                  first_seen.ok() ? ShortTime(*first_seen) : "-",
                  e.has_cleared() && cleared.ok() ? ShortTime(*cleared) : "-",
                  TimeScaleName(e.time_scale()), absl::StrJoin(e.classes(), ", ")});
  }
  table.Print(out);
}

// A duration flag (--min-time-scale, --max-time-scale); empty keeps `*to`. False on a bad value.
bool ParseScaleFlag(const std::string& text, const char* flag, absl::Duration* to,
                    std::ostream& err) {
  if (text.empty()) return true;
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration()) {
    err << "heapwatchctl trend: " << flag << ": invalid duration '" << text << "'\n";
    return false;
  }
  *to = d;
  return true;
}

int Run(const TrendArgs& args, const GlobalOptions& global, std::ostream& out,
        std::ostream& err) {
  const std::string me = "heapwatchctl trend: ";
  if (!ValidAgentId(args.agent)) {
    err << me << "--agent: '" << args.agent
        << "' is not an agent id (1 to 128 of A-Z a-z 0-9 . _ : -)\n";
    return kExitUsage;
  }
  diff::LeakOptions options;  // the daemon's defaults
  if (args.window > 0) {
    options.trend.window_snapshots = args.window;
    options.trend.peak_lookback_snapshots =
        std::max(options.trend.peak_lookback_snapshots, args.window);
  }
  if (args.min_snapshots > 0) options.trend.min_snapshots = args.min_snapshots;
  options.enable_time_scales = !args.no_time_scales;
  if (!ParseScaleFlag(args.min_time_scale, "--min-time-scale", &options.min_time_scale, err) ||
      !ParseScaleFlag(args.max_time_scale, "--max-time-scale", &options.max_time_scale, err)) {
    return kExitUsage;
  }
  if (Status s = diff::ValidateLeakOptions(options); !s.ok()) {
    err << me << s.message()
        << " (--window, --min-snapshots, --min-time-scale, --max-time-scale)\n";
    return kExitUsage;
  }

  auto files = ListInputs(args.paths);
  if (!files.ok()) {
    err << me << files.status().message() << "\n";
    return kExitError;
  }

  diff::LeakDetector detector(options);
  json::Trend trend;
  trend.set_agent(args.agent);
  absl::Time first = absl::InfinitePast(), last = absl::InfinitePast();
  for (const InputFile& file : *files) {
    auto histogram = ReadHistogram(file.path);
    if (!histogram.ok()) {
      if (!args.skip_bad) {
        err << me << file.path << ": " << histogram.status().message() << "\n";
        return kExitError;
      }
      err << me << "warning: skipping " << file.path << ": " << histogram.status().message()
          << "\n";
      trend.add_skipped_files(file.path);
      continue;
    }
    Snapshot snapshot;
    snapshot.agent = AgentId(args.agent);
    snapshot.time = file.time;
    snapshot.histogram = *std::move(histogram);
    // Accepted: the files are in strictly increasing time order, all of one agent.
    detector.Observe(snapshot);
    if (trend.snapshots() == 0) first = file.time;
    last = file.time;
    trend.set_snapshots(trend.snapshots() + 1);
  }
  if (trend.snapshots() == 0) {
    err << me << "no class histogram left to analyse\n";
    return kExitError;
  }
  proto::ToTimestamp(first, trend.mutable_first_snapshot_time());
  proto::ToTimestamp(last, trend.mutable_last_snapshot_time());
  for (const diff::Suspect& s : detector.Suspects()) {
    v1::Suspect suspect;
    proto::SuspectToProto(AgentId(args.agent), s, last, &suspect);
    *trend.add_suspects() = SuspectToJson(suspect);
  }
  for (const diff::Leak& l : detector.Leaks()) {
    v1::Leak leak;
    proto::LeakToProto(AgentId(args.agent), l, last, /*analysed_dump_id=*/"", &leak);
    *trend.add_leaks() = LeakToJson(leak);
  }
  if (args.history) {
    // Episodes() is oldest first (by the histogram that flagged them); within one histogram, leaks
    // before classes, then by main class, so that the order does not depend on the detector's.
    std::vector<diff::Episode> episodes = detector.Episodes();
    std::stable_sort(episodes.begin(), episodes.end(),
                     [](const diff::Episode& a, const diff::Episode& b) {
                       if (a.first_seen != b.first_seen) return a.first_seen < b.first_seen;
                       if (a.kind != b.kind) return a.kind == diff::Episode::Kind::kLeak;
                       return a.main_class < b.main_class;
                     });
    for (const diff::Episode& e : episodes) *trend.add_episodes() = ToJson(e);
  }
  if (!args.explain.empty()) {
    // --explain: the explanation instead of the summary, as `suspects --explain` prints it.
    v1::ExplainSuspectResponse explanation;
    proto::ExplanationToProto(AgentId(args.agent), detector.Explain(args.explain), &explanation);
    if (global.json) return EmitJson(explanation, out, err);
    out << RenderExplanation(explanation);
    return kExitOk;
  }
  if (global.json) return EmitJson(trend, out, err);
  PrintText(trend, args.history, first, last, out);
  return kExitOk;
}

}  // namespace

StatusOr<std::optional<absl::Time>> TimeFromFileName(std::string_view name) {
  // RFC 3339 basic: 8 digits, 'T', 6 digits, optionally '.' and 1-9 digits, 'Z', not preceded by
  // a digit. The first such string in the name counts.
  for (size_t i = 0; i + 16 <= name.size(); ++i) {
    if (i > 0 && IsDigit(name[i - 1])) continue;
    if (!AllDigits(name, i, 8) || name[i + 8] != 'T' || !AllDigits(name, i + 9, 6)) continue;
    size_t end = i + 15;
    if (end < name.size() && name[end] == '.') {
      size_t digits = 0;
      while (end + 1 + digits < name.size() && IsDigit(name[end + 1 + digits])) ++digits;
      if (digits == 0 || digits > 9) continue;
      end += 1 + digits;
    }
    if (end >= name.size() || name[end] != 'Z') continue;
    // absl::ParseTime's %Y would take every digit, so the fields are read by position; a civil
    // time that normalises to another one (month 13, hour 25, February 30) is not a valid time.
    std::string text(name.substr(i, end + 1 - i));
    auto field = [&text](size_t from, size_t count) { return std::stoi(text.substr(from, count)); };
    const absl::CivilSecond civil(field(0, 4), field(4, 2), field(6, 2), field(9, 2),
                                  field(11, 2), field(13, 2));
    if (civil.year() != field(0, 4) || civil.month() != field(4, 2) ||
        civil.day() != field(6, 2) || civil.hour() != field(9, 2) ||
        civil.minute() != field(11, 2) || civil.second() != field(13, 2)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("'%s' in the file name is not a valid time", text));
    }
    absl::Time t = absl::FromCivil(civil, absl::UTCTimeZone());
    if (text[15] == '.') {
      std::string digits = text.substr(16, text.size() - 17);
      digits.resize(9, '0');  // nanoseconds
      t += absl::Nanoseconds(std::stoll(digits));
    }
    return std::optional<absl::Time>(t);
  }
  // Epoch seconds: the stem (up to the first '.') is a bare integer.
  std::string_view stem = name.substr(0, name.find('.'));
  if (!stem.empty() && stem.size() <= 12 && AllDigits(stem, 0, stem.size())) {
    int64_t seconds = 0;
    if (absl::SimpleAtoi(std::string(stem), &seconds)) {
      return std::optional<absl::Time>(absl::FromUnixSeconds(seconds));
    }
  }
  return std::optional<absl::Time>();
}

Subcommand AddTrendCommand(CLI::App& app) {
  auto args = std::make_shared<TrendArgs>();
  CLI::App* cmd = app.add_subcommand(
      "trend",
      "Offline trend analysis of a series of class histogram files (jcmd GC.class_histogram, "
      "jmap -histo): the leaks and suspects at the end of the series, as heapwatchd would flag "
      "them");
  cmd->add_option("paths", args->paths,
                  "Histogram files, or directories of them; each file's time comes from its name "
                  "(20261124T011643Z, or epoch seconds), else its modification time")
      ->required();
  cmd->add_flag("--history", args->history,
                "Also list every episode: leak or class, when it was flagged and when cleared");
  cmd->add_option("--agent", args->agent, "Agent id given to the snapshots")->capture_default_str();
  cmd->add_flag("--skip-bad", args->skip_bad,
                "Warn about files that do not parse and go on without them");
  cmd->add_option("--window", args->window,
                  "Detector window in histograms (default 12, docs/trend-detection.md)");
  cmd->add_option("--min-snapshots", args->min_snapshots,
                  "Fewest histograms in the window before a class can be flagged (default 8)");
  cmd->add_flag("--no-time-scales", args->no_time_scales,
                "Only the every-snapshot scale: no bucketed time scales (docs/trend-detection.md)");
  cmd->add_option("--min-time-scale", args->min_time_scale,
                  "Narrowest bucketed time scale (default 4s)");
  cmd->add_option("--max-time-scale", args->max_time_scale,
                  "Widest bucketed time scale (default 5h)");
  cmd->add_option("--explain", args->explain,
                  "Print instead, for this class at the end of the series, each trend test's value "
                  "and threshold per time scale (as `suspects --explain`)");
  Subcommand sub;
  sub.app = cmd;
  sub.run = [args](const GlobalOptions& global, std::ostream& out, std::ostream& err) {
    return Run(*args, global, out, err);
  };
  return sub;
}

}  // namespace heapwatch::ctl
