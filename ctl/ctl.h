// heapwatchctl: the command-line client of heapwatchd's gRPC query service (docs/cli.md).
//
//   heapwatchctl [--server ADDR] [--json] [--timeout DUR] agents
//   heapwatchctl ... suspects [--agent A] [--explain AGENT CLASS]
//   heapwatchctl ... leaks [--agent A]
//   heapwatchctl ... history AGENT CLASS [--since T] [--until T]
//   heapwatchctl ... diff AGENT [--from T] [--to T] [--max N]
//   heapwatchctl ... report AGENT CLASS
//   heapwatchctl ... reports AGENT
//   heapwatchctl ... dump AGENT [--wait] [--timeout DUR]
//   heapwatchctl ... dump-diff AGENT [A B] [--top N]
//   heapwatchctl analyze FILE [...]
//   heapwatchctl trend FILE|DIR... [...]
//
// Exit codes: 0 ok, 1 server error (or `dump --wait` ending in a failed dump), 2 usage error.
#ifndef HEAPWATCH_CTL_CTL_H_
#define HEAPWATCH_CTL_CTL_H_

#include <ostream>

namespace heapwatch::ctl {

// Runs heapwatchctl with `argv` (argv[0] is the program name), writing results to `out` and errors
// to `err`. Returns the exit code. Thread-safety: thread-compatible.
int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// heapwatchctl's main(): RunCtl on std::cout / std::cerr.
int CtlMain(int argc, char** argv);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_CTL_H_
