// heapwatchctl's query subcommands over heapwatchd's heapwatch.v1.QueryService: agents, suspects,
// history, diff. docs/cli.md is the reference (arguments, table columns, JSON fields).
#ifndef HEAPWATCH_CTL_QUERY_COMMANDS_H_
#define HEAPWATCH_CTL_QUERY_COMMANDS_H_

#include <vector>

#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds the four query subcommands to `app`.
std::vector<Subcommand> AddQueryCommands(CLI::App& app);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_QUERY_COMMANDS_H_
