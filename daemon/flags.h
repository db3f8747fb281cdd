// heapwatchd command line (CLI11): flags override the YAML file given by --config, which overrides
// the built-in defaults of daemon/config.h. `heapwatchd --help` lists every flag;
// docs/configuration.md too.
//
// Thread-safety: ParseCommandLine is thread-compatible (no global state).
#ifndef HEAPWATCH_DAEMON_FLAGS_H_
#define HEAPWATCH_DAEMON_FLAGS_H_

#include <optional>
#include <ostream>

#include "daemon/config.h"

namespace heapwatch::daemon {

struct CommandLine {
  // The effective, validated configuration. Meaningful only when exit_code is empty.
  Config config;
  // --print-config: print `config` as YAML and exit instead of running.
  bool print_config = false;
  // Set when the program should exit right away with this code: 0 after --help, 2 after a usage
  // error (unknown flag, bad value, unreadable or invalid config file, invalid configuration), with
  // the message already written to `out` (help) or `err` (errors).
  std::optional<int> exit_code;
};

// Parses argv: --config FILE, --data-dir DIR, --grpc-listen ADDR, --metrics-listen ADDR,
// --grpc-port-file FILE, --metrics-port-file FILE, --interval DUR, --concurrency N, --top-classes
// N,
// --log-level LEVEL, --print-config, --help.
CommandLine ParseCommandLine(int argc, const char* const* argv, std::ostream& out,
                             std::ostream& err);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_FLAGS_H_
