// `heapwatchctl trend`: offline trend analysis of a series of class histograms (no daemon needed).
//
//   heapwatchctl trend [--json] [--history] [--agent NAME] [--skip-bad] [--window N]
//                      [--min-snapshots N] [--no-time-scales] [--min-time-scale DUR]
//                      [--max-time-scale DUR] [--explain CLASS] FILE|DIR...
//
// Reads class histograms as printed by `jcmd PID GC.class_histogram [-all]` or `jmap -histo[:live]`
// (every JDK 8-25 format, collectors/class_histogram.h), one per file; a DIR stands for every
// regular file in it (not recursive). Each file's time comes from its name: a UTC time in RFC 3339
// basic format, YYYYMMDDTHHMMSSZ with optional fractional seconds (YYYYMMDDTHHMMSS.123456Z),
// anywhere in the name ("histo-20261124T011643Z.txt"), or else a name whose stem (up to the first
// '.') is a bare integer, taken as seconds since the Unix epoch ("1763946003.txt"); otherwise the
// file's modification time. The files are replayed in time order through a diff::LeakDetector
// with the daemon's default options (diff::LeakOptions: every-snapshot and bucketed time scales,
// cycle veto, grouping of suspects into leaks), as the snapshots of one agent whose start time is
// unknown, exactly as heapwatchd replays an agent's stored history. The command prints the leaks
// and the suspects at the end of the series as `heapwatchctl leaks` and `heapwatchctl suspects`
// do (same tables, and with --json the same "leaks" and "suspects" arrays; proto/heapwatch/ctl/v1/json.proto,
// message Trend), plus the number of histograms and their time span. With --history it also
// prints every episode (diff::LeakDetector::Episodes): a leak or a class flagged at the time of
// one histogram and cleared at a later one (or still flagged at the end), with its leak id, main
// class, classes and time scale. With --explain CLASS it prints instead, for that class at the end
// of the series, each test's value and threshold per time scale, as `suspects --explain` does
// (--json: the heapwatch.v1.ExplainSuspectResponse).
//
// Options: --agent NAME the agent id put in the snapshots and printed with each suspect (default
// "offline"); --skip-bad warns on stderr about a file that cannot be read or parsed and goes on
// without it (the JSON lists it in skipped_files); --window N, --min-snapshots N override the
// every-snapshot scale's window_snapshots and min_snapshots (LeakOptions.trend,
// docs/trend-detection.md; the peak lookback is raised to the window when needed);
// --no-time-scales runs the every-snapshot scale alone; --min-time-scale, --max-time-scale set
// the range of bucket widths. Without them, a steady leak is flagged after 5 warm-up and 8 more
// histograms at the earliest.
//
// Exit codes (ctl/command.h): 0 ok (with or without suspects); 1 a path that does not exist or is
// neither a regular file nor a directory, a directory with no regular file, two files with the
// same time (both are named), an ill-formed time in a file name, a file that cannot be read or is
// not a class histogram (named, with the parser's message; unless --skip-bad), or no histogram
// left to analyse; 2 usage error (including detector options out of range).
//
// Cost: one file in memory at a time; time linear in files * classes * time scales in use (the
// detector's costs: diff/leak_detector.h).
#ifndef HEAPWATCH_CTL_TREND_COMMAND_H_
#define HEAPWATCH_CTL_TREND_COMMAND_H_

#include <optional>
#include <string_view>

#include "absl/time/time.h"
#include "common/status.h"
#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds the `trend` subcommand to `app` (a heapwatchctl app with the global --json flag).
Subcommand AddTrendCommand(CLI::App& app);

// The time a histogram file name carries, as described above: an RFC 3339 basic UTC time anywhere
// in `file_name` (a name without directories), or a bare-integer stem as epoch seconds. Returns
// nullopt when the name carries no time (the caller then uses the modification time), and
// InvalidArgument when it holds a time-shaped string that is not a valid time
// ("20261324T000000Z"). Thread-safety: pure function.
StatusOr<std::optional<absl::Time>> TimeFromFileName(std::string_view file_name);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_TREND_COMMAND_H_
