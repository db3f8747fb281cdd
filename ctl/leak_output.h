// heapwatchctl's rendering of leaks, suspects and suspect explanations (docs/cli.md), shared by the
// commands that ask heapwatchd (`leaks`, `suspects`, `suspects --explain`) and by the offline `trend`
// command, so that both print a leak the same way. Everything goes through the heapwatch.v1 messages
// (the daemon's, or the offline detector's converted to them) and one JSON model
// (proto/heapwatch/ctl/v1/json.proto): one model, one renderer.
//
// Thread-safety: pure functions.
#ifndef HEAPWATCH_CTL_LEAK_OUTPUT_H_
#define HEAPWATCH_CTL_LEAK_OUTPUT_H_

#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "heapwatch/ctl/v1/json.pb.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::ctl {

namespace json = ::heapwatch::ctl::v1;

// A trend time scale for people: "every snapshot" for 0, else the bucket width as absl formats
// durations ("4s", "2m8s", "4h33m4s").
std::string TimeScaleName(absl::Duration scale);
// The same for a proto Duration (an unset or invalid one counts as 0).
std::string TimeScaleName(const google::protobuf::Duration& scale);

// The JSON model of one suspect: the heapwatch.v1 fields under the documented names (`class`, sizes
// as numbers), plus its leak id and time scale (time_scale always set, "0s" for every snapshot).
json::Suspect SuspectToJson(const heapwatch::v1::Suspect& suspect);

// The JSON model of one leak: `classes` holds the class names (in the message's order: bytes
// descending), `class_growth` each class's bytes and growth; `accumulation_point` only when the
// daemon names one; time_scale always set.
json::Leak LeakToJson(const heapwatch::v1::Leak& leak);

// The JSON model of a heap exhaustion forecast: durations as seconds (latest_seconds absent when
// unbounded), sizes as numbers, computed_time when set.
json::HeapExhaustion HeapExhaustionToJson(const heapwatch::v1::HeapExhaustion& forecast);

// A forecast for a table cell: the estimate and its interval, "2m10s (1m50s-2m40s)", with "never"
// as the latest end when that is unbounded ("2m10s (1m50s-never)"). Durations as HumanDuration.
std::string HeapFullIn(const json::HeapExhaustion& forecast);

// A forecast as one line: "heap full in ~2m10s (soonest 1m50s) at 955.3 KiB/s, live set 247.4 MiB
// of 512.0 MiB max".
std::string HeapForecastLine(const json::HeapExhaustion& forecast);

// The leak table: per leak a row AGENT, LEAK, CLASS (the main class and how many classes; "live set
// (classes not named yet)" for a leak of kind "heap"), BYTES, GROWTH/S, GROWTH/H, SCORE, SCALE,
// FIRST SEEN, ACCUMULATION POINT ("-" until a report names one); under it, starting at the CLASS
// column and not counted in the column widths, its detail line and its heap exhaustion forecast
// (HeapForecastLine) when it has them; then one row per class of the leak, indented under CLASS,
// with its own bytes and growth. Prints "no leaks" when there is none.
void PrintLeakTable(const google::protobuf::RepeatedPtrField<json::Leak>& leaks,
                    std::ostream& out);

// `suspects --explain`: a summary line (a suspect of which leak, not a suspect, or no history for
// the class: then nothing else), the cycle veto's line when present, then per time scale a header ("Scale every
// snapshot: suspect, window 12/8 snapshots", "Scale 2m8s: not a suspect, window 24/8 buckets",
// "Scale 4s: not evaluated (<why>), window 3/8 buckets") and a line per test: name, value, op,
// threshold, PASS/FAIL, unit. Byte values are shown human-readable ("1.2 MiB", "20.0 KiB/s"),
// other values with 4 significant digits.
std::string RenderExplanation(const heapwatch::v1::ExplainSuspectResponse& explanation);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_LEAK_OUTPUT_H_
