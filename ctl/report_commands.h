// heapwatchctl's extended-dump subcommands over heapwatchd's heapwatch.v1.QueryService
// (escalation: docs/escalation.md; reference: docs/cli.md):
//
//   heapwatchctl ... report AGENT CLASS            GetReport: the newest drill-down report of a
//   class heapwatchctl ... reports AGENT                 ListReports: the agent's extended dumps
//   heapwatchctl ... dump AGENT [--wait] [--timeout DUR]
//                                                  TriggerExtendedDump (and follow it with
//                                                  ListReports)
//   heapwatchctl ... dump-diff AGENT [A B] [--top N]
//                                                  DiffExtendedDumps: two analysed dumps (default
//                                                  the last two)
//
// Text output is rendered by ctl/report_render.h (pure, so it is tested on hand-built messages),
// the renderer `heapwatchctl analyze` uses too; sizes there are human-readable (ctl/output.h
// HumanBytes). --json prints the RPC's
// response message with protobuf's JSON printer (proto field names, zero values included): the
// schema is heapwatch.v1 itself, sizes are exact (proto3 JSON prints 64-bit integers as decimal
// strings), enums are their names, durations "1.5s", times RFC 3339.
//
// Exit codes (ctl/command.h): 0 ok; 1 the RPC failed (the message names the gRPC status code and
// the server's message), or `dump --wait` ended with a FAILED dump or timed out; 2 usage error.
#ifndef HEAPWATCH_CTL_REPORT_COMMANDS_H_
#define HEAPWATCH_CTL_REPORT_COMMANDS_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/status.h"
#include "ctl/command.h"
#include "ctl/report_render.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::ctl {

// Adds `report`, `reports`, `dump` and `dump-diff` to `app` (a heapwatchctl app with the global
// --server, --json and --timeout options).
std::vector<Subcommand> AddReportCommands(CLI::App& app);

// How WaitForDump reads the agent's dump list: ListReports over gRPC in heapwatchctl; the status is
// the RPC's.
using ListReportsFn = std::function<Status(heapwatch::v1::ListReportsResponse*)>;

// `dump --wait`: calls `list` every `interval` (sleeping with `sleep`, timing with `clock`) until
// the dump `dump_id` is DONE or FAILED and returns its last record (either state; the caller
// decides what FAILED means). `on_change`, when set, is called with the dump's record whenever its
// state differs from the previous poll's (for progress lines). Errors: the first error `list`
// returns; DeadlineExceeded when `timeout` passes first (the message names the dump's last state,
// or says it never appeared in the list). Makes at most timeout / interval + 2 calls of `list`.
StatusOr<heapwatch::v1::ExtendedDump> WaitForDump(
    const std::string& dump_id, absl::Duration timeout, absl::Duration interval, const Clock& clock,
    const std::function<void(absl::Duration)>& sleep, const ListReportsFn& list,
    const std::function<void(const heapwatch::v1::ExtendedDump&)>& on_change = nullptr);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_REPORT_COMMANDS_H_
