// heapwatchd as a library: Daemon wires discovery, the scheduler and its worker pool, the store,
// the leak detectors, escalation, the Prometheus exporter and the gRPC server; Run() adds signal handling;
// DaemonMain() adds the command line. heapwatchd's main.cc only calls DaemonMain.
//
// Pipeline of one collection (one worker thread, at most collection.concurrency at once, at most
// one per agent): attach and run GC.class_histogram (collectors/) -> parse -> Append to the store
// (durable when it returns) -> only then feed the agent's diff::LeakDetector, update the agent table
// (suspects and leaks) served over gRPC and the Prometheus series, and hand the suspects to
// escalation (one extended dump per new leak). When a dump's reports are stored, their accumulation
// points go back to the agent's detector (SetAccumulationPoints), which regroups its leaks. A histogram that could not be stored is dropped and
// counted as store_error; it is never exported or served.
//
// Discovery runs every collection.discovery_interval: new JVMs (matching watch.agents) are recorded
// in the store (PutAgent), their leak detector is rebuilt by replaying their stored snapshots of the
// last max(trend.max_time_scale * trend.scale_lookback_buckets, trend.cycle_lookback) (at most
// 20,000, the newest) and the accumulation points of their newest analysed dump (an agent survives a daemon restart: its id is derived from host, pid and JVM start
// time), and they are scheduled; JVMs that exited are unscheduled, dropped from the agent table
// (ListAgents then reports them as down, from the store) and all their Prometheus series are
// removed.
//
// Thread-safety: Start, Shutdown and the destructor are called from one thread; the rest is
// internal.
#ifndef HEAPWATCH_DAEMON_DAEMON_H_
#define HEAPWATCH_DAEMON_DAEMON_H_

#include <memory>

#include "common/status.h"
#include "daemon/config.h"

namespace heapwatch::daemon {

class Daemon {
 public:
  // Opens the store in config.data_dir, binds the gRPC and metrics listeners (writing the bound
  // ports to the port files when configured), and starts discovery and the workers. `config` must
  // be valid (ValidateConfig). Errors: those of storage::SnapshotStore::Open (e.g.
  // FailedPrecondition when another heapwatchd uses the directory), Unavailable when a listener
  // cannot be bound, Internal when a port file cannot be written.
  static StatusOr<std::unique_ptr<Daemon>> Start(const Config& config);

  // Stops discovery and scheduling, lets in-flight collections finish (each is bounded by the
  // attach timeouts) for up to config.shutdown_grace, then stops the servers and closes the store.
  // Returns true when every worker finished; false when some collection was still running at the
  // deadline: those workers are abandoned, the Daemon must not be destroyed and the caller should
  // exit the process (every snapshot whose Append returned is durable; an Append cut short by exit
  // is rolled back by LMDB).
  bool Shutdown();
  ~Daemon();  // Shutdown() if not done; REQUIRES: not after a Shutdown() that returned false.

  int grpc_port() const;
  int metrics_port() const;
  // The agent gateway's bound TCP port (daemon/agent_gateway.h); 0 when it is off or on a UNIX
  // socket.
  int agent_port() const;

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs the daemon until SIGTERM or SIGINT, then shuts down gracefully; a second signal exits at
// once. Returns the process exit code: 0 after a shutdown, 1 when the daemon could not start.
// REQUIRES: called before any other thread is started (signals are blocked in every thread and
// taken with sigwait).
int Run(const Config& config);

// heapwatchd's main: parses the command line (daemon/flags.h), prints the configuration for
// --print-config, sets up logging, and calls Run. Exit codes: 0 ok, 1 failure to start, 2 usage
// error.
int DaemonMain(int argc, char** argv);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_DAEMON_H_
