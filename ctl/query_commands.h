// heapwatchctl's query subcommands over heapwatchd's heapwatch.v1.QueryService: agents, suspects
// (ListSuspects; with --explain AGENT CLASS, ExplainSuspect), leaks (ListLeaks), history, liveset,
// diff. docs/cli.md is the reference (arguments, table columns, JSON fields); leaks and suspects are
// rendered by ctl/leak_output.h.
#ifndef HEAPWATCH_CTL_QUERY_COMMANDS_H_
#define HEAPWATCH_CTL_QUERY_COMMANDS_H_

#include <vector>

#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds the query subcommands to `app`.
std::vector<Subcommand> AddQueryCommands(CLI::App& app);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_QUERY_COMMANDS_H_
