// heapwatchctl store: the daemon's store use per kind of data (GetStoreStats): bytes and entries of
// snapshots, class dictionaries, live-set points, agents, dump records, reports, summaries and
// other records, against retention.max_bytes, and the kept raw dumps against
// escalation.max_dump_disk_bytes (docs/storage-format.md, "Retention of records"). --json prints
// the RPC's response.
#ifndef HEAPWATCH_CTL_STORE_COMMAND_H_
#define HEAPWATCH_CTL_STORE_COMMAND_H_

#include "CLI/CLI.hpp"
#include "ctl/command.h"

namespace heapwatch::ctl {

// Adds `store` to `app`.
Subcommand AddStoreCommand(CLI::App& app);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_STORE_COMMAND_H_
