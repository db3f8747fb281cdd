// heapwatchctl collect AGENT [--mode live|all]: "histogram now" (QueryService.CollectHistogram).
// The daemon takes a class histogram of the agent at once (an attach agent through its scheduler,
// a registered agent through a HistogramRequest on its stream) and answers once it is stored; the
// command prints its time, mode, pause and size. The pause counts against the agent's pause budget
// (docs/collection-cost.md). Needs the admin role on a daemon with tokens. The call's deadline is
// --timeout, at least one minute (a live histogram of a large heap takes seconds). Exit codes: 0
// stored, 1 the daemon refused or the collection failed (NOT_FOUND, UNAVAILABLE,
// DEADLINE_EXCEEDED, ...), 2 usage.
#ifndef HEAPWATCH_CTL_COLLECT_COMMAND_H_
#define HEAPWATCH_CTL_COLLECT_COMMAND_H_

#include "CLI/CLI.hpp"
#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds `collect` to `app`.
Subcommand AddCollectCommand(CLI::App& app);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_COLLECT_COMMAND_H_
