// heapwatchctl agent load PID [OPTIONS]: loads libheapwatch_agent.so into a running local JVM
// through the attach protocol's "load" operation (collectors/agent_load.h), so that a JVM started
// without -agentpath registers with heapwatchd. OPTIONS is the agent's option string
// (docs/agent.md), e.g. "address=unix:/run/heapwatch/agents.sock,label.env=prod". The library is
// --agent-library, or found next to heapwatchctl (../lib/heapwatch/, ../lib/, and ../agent/ in a
// build tree). Local only: no daemon call; it needs the JVM's user or root. Exit codes: 0 loaded
// and started, 1 the JVM or the agent refused (the message says why), 2 usage.
#ifndef HEAPWATCH_CTL_AGENT_COMMAND_H_
#define HEAPWATCH_CTL_AGENT_COMMAND_H_

#include "CLI/CLI.hpp"
#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds `agent` (with its subcommand `load`) to `app`.
Subcommand AddAgentCommand(CLI::App& app);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_AGENT_COMMAND_H_
