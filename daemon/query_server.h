// The gRPC server of heapwatchd: the heapwatch.v1.QueryService
// (proto/heapwatch/v1/heapwatch.proto), the standard health service (grpc.health.v1.Health; "" and
// "heapwatch.v1.QueryService" are SERVING while the server runs) and server reflection.
//
// Answers come from the store (history, diffs, agents that are down) and from the AgentTable (live
// agents and their current suspects). Every request is counted in
// heapwatch_grpc_requests_total{method,code}. Status codes: INVALID_ARGUMENT for a malformed
// request (empty agent or class, inverted time range), NOT_FOUND for an unknown agent, class or
// snapshot, the store's code otherwise (see storage/).
//
// This header deliberately includes no gRPC header; the service lives in query_server.cc.
//
// Thread-safety: Start/Shutdown/port are not meant to be called concurrently with each other;
// requests are served concurrently on gRPC's threads.
#ifndef HEAPWATCH_DAEMON_QUERY_SERVER_H_
#define HEAPWATCH_DAEMON_QUERY_SERVER_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/status.h"
#include "daemon/agent_table.h"
#include "daemon/escalation.h"
#include "daemon/metrics.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {

class QueryServer {
 public:
  // Binds `listen` ("host:port", port 0 = any free port) and starts serving. `store`, `agents`,
  // `metrics` and `escalation` are not owned and must outlive the server. `escalation` serves
  // GetReport, ListReports, TriggerExtendedDump and DiffExtendedDumps; when null they fail with
  // FAILED_PRECONDITION (after the agent check: INVALID_ARGUMENT / NOT_FOUND come first).
  // Errors: Unavailable when the address cannot be bound (in use, bad host), InvalidArgument when
  // empty.
  static StatusOr<std::unique_ptr<QueryServer>> Start(const std::string& listen,
                                                      storage::SnapshotStore* store,
                                                      const AgentTable* agents, Metrics* metrics,
                                                      Escalation* escalation = nullptr);
  ~QueryServer();  // Shutdown(absl::ZeroDuration()) if still running.
  QueryServer(const QueryServer&) = delete;
  QueryServer& operator=(const QueryServer&) = delete;

  // The bound TCP port.
  int port() const;
  // Marks the health status NOT_SERVING, stops accepting calls, lets running calls finish for up to
  // `grace` and cancels the rest. Idempotent.
  void Shutdown(absl::Duration grace);

 private:
  struct Impl;
  explicit QueryServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// heapwatch.v1.Suspect from the trend detector's suspect of `agent`; `last_snapshot` is the time
// of the newest snapshot the detector saw. Shared by ListSuspects and the drill-down reports.
void SuspectToProto(const AgentId& agent, const diff::Suspect& s, absl::Time last_snapshot,
                    v1::Suspect* out);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_QUERY_SERVER_H_
