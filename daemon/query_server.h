// The gRPC server of heapwatchd: the heapwatch.v1.QueryService
// (proto/heapwatch/v1/heapwatch.proto), the standard health service (grpc.health.v1.Health; "" and
// "heapwatch.v1.QueryService" are SERVING while the server runs) and server reflection.
//
// Answers come from the store (history, diffs, agents that are down), from the AgentTable (live
// agents, their current suspects and leaks) and from the live trend detectors (ExplainSuspect). Every request is counted in
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

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "common/histogram.h"
#include "common/status.h"
#include "daemon/agent_table.h"
#include "daemon/escalation.h"
#include "daemon/grpc_limits.h"
#include "daemon/metrics.h"
#include "diff/leak_detector.h"
#include "storage/snapshot_store.h"
#include "web/query_source.h"

namespace heapwatch::auth {
class GrpcAuthorizer;  // auth/grpc_auth.h
}  // namespace heapwatch::auth
namespace grpc {
class ServerCredentials;  // grpcpp/security/server_credentials.h
}  // namespace grpc

namespace heapwatch::daemon {

// Explains one class of a live agent with its trend detector (diff::LeakDetector::Explain);
// nullopt when the agent is not live (no detector). Called on gRPC threads, concurrently: it must
// serialise access to the detector itself.
using SuspectExplainer =
    std::function<std::optional<diff::Explanation>(const AgentId& agent, std::string_view class_name)>;

// Takes a histogram of a live agent now and returns the stored snapshot (CollectHistogram; the
// errors listed there as Status). Called on gRPC threads, concurrently; `deadline` bounds the wait.
using HistogramCollector = std::function<StatusOr<Snapshot>(
    const AgentId& agent, HistogramMode mode, absl::Time deadline)>;

class QueryServer {
 public:
  // Binds `listen` ("host:port", port 0 = any free port) and starts serving. `store`, `agents`,
  // `metrics` and `escalation` are not owned and must outlive the server. `escalation` serves
  // GetReport, ListReports, TriggerExtendedDump and DiffExtendedDumps; when null they fail with
  // FAILED_PRECONDITION (after the agent check: INVALID_ARGUMENT / NOT_FOUND come first).
  // ListLeaks answers from the AgentTable's leaks. `explainer` serves ExplainSuspect:
  // INVALID_ARGUMENT for an empty agent or class, NOT_FOUND for an agent that is neither live nor
  // stored and for one that is down (no detector), FAILED_PRECONDITION when `explainer` is null.
  // Errors: Unavailable when the address cannot be bound (in use, bad host), InvalidArgument when
  // empty.
  // `authorizer` (auth/grpc_auth.h): when set, every QueryService call is checked first (the
  // credential and the method's role); a refused call returns UNAUTHENTICATED or PERMISSION_DENIED
  // and is counted in heapwatch_grpc_requests_total with that code. Null: no check (loopback only,
  // enforced by the daemon, daemon/auth_setup.h).
  // `limits` (daemon/grpc_limits.h): the server's resource limits and call time limit; Start does
  // not validate them (ValidateGrpcLimits does, with the configuration).
  // `credentials`: the listener's transport security (TLS, mutual TLS: auth/tls.h,
  // daemon/auth_setup.h MakeQueryCredentials); null: plaintext.
  static StatusOr<std::unique_ptr<QueryServer>> Start(
      const std::string& listen, storage::SnapshotStore* store, const AgentTable* agents,
      Metrics* metrics, Escalation* escalation = nullptr, SuspectExplainer explainer = nullptr,
      std::shared_ptr<const auth::GrpcAuthorizer> authorizer = nullptr,
      const GrpcLimits& limits = GrpcLimits(),
      std::shared_ptr<grpc::ServerCredentials> credentials = nullptr);
  ~QueryServer();  // Shutdown(absl::ZeroDuration()) if still running.
  QueryServer(const QueryServer&) = delete;
  QueryServer& operator=(const QueryServer&) = delete;

  // Serves CollectHistogram with `collector` (FAILED_PRECONDITION until set). Thread-safe.
  void SetHistogramCollector(HistogramCollector collector);

  // The bound TCP port.
  int port() const;
  // Calls running now (GrpcCallLimiter::calls_in_flight), for tests.
  int calls_in_flight() const;
  // Marks the health status NOT_SERVING, stops accepting calls, lets running calls finish for up to
  // `grace` and cancels the rest. Idempotent.
  void Shutdown(absl::Duration grace);

  // The same answers in-process, for the web pages (web/query_source.h): the RPCs' own functions,
  // not counted in heapwatch_grpc_requests_total. Valid while the QueryServer lives (also after
  // Shutdown); safe to call concurrently.
  web::QuerySource* query_source() const;

 private:
  struct Impl;
  explicit QueryServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_QUERY_SERVER_H_
