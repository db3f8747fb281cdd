// The agent gateway: heapwatchd's side of heapwatch.agent.v1.AgentGateway
// (proto/heapwatch/agent/v1/agent.proto, whose file comment is the contract; docs/agents.md). JVMs
// running heapwatch's in-process agent register on their own listener (agents.listen) and deliver
// class histograms and live-set points; the gateway validates them, stores each exactly once and
// hands what it stored to the daemon's ingestion (RegisteredAgentSink), the same path as attach
// collections after their store (trend detection, leaks, metrics, escalation trigger).
//
// Exactly once: the highest stored delivery sequence of each agent is a store record
// (kDeliveryTable, key = agent id, value = decimal sequence) written in the SAME LMDB transaction
// as the histogram (storage::SnapshotStore::Append with records). A daemon killed between the
// commit and the Ack loses neither: the agent resends, the gateway finds the sequence stored,
// acknowledges and drops it. Live-set points are stored one by one before their sequence record; a
// resend after a crash between the two finds its points stored (AlreadyExists, skipped), so they
// are stored once too. Registered.stored_through is read from the record.
//
// Agent states: an agent is UP while its stream is open and it speaks at least every 3
// heartbeat intervals; UNREACHABLE when silent longer or when its stream ended; DOWN (forgotten,
// sink told) when its stream has been closed for agents.down_after. A second Connect of an open
// agent id is refused with ALREADY_EXISTS, unless the open stream is UNREACHABLE (silent): that
// stream is cancelled and the new one accepted, so an agent behind a broken connection can come
// back before TCP keepalive notices.
//
// Security (docs/agents.md): a UNIX socket (unix:PATH) is created mode 0660 in a directory that
// must belong to the daemon's user and must not be writable by others (start fails otherwise): who
// may connect is decided by the socket's owner and group. Over TCP, with an authorizer, every call
// needs a token of role `agent` (UNAUTHENTICATED / PERMISSION_DENIED, counted and logged by the
// authorizer's listener).
//
// Thread-safety: Start / Shutdown / the destructor from one thread; the rest is internal (one
// gRPC thread per open stream, one monitor thread).
#ifndef HEAPWATCH_DAEMON_AGENT_GATEWAY_H_
#define HEAPWATCH_DAEMON_AGENT_GATEWAY_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/gc.h"
#include "common/histogram.h"
#include "common/status.h"
#include "daemon/agent_table.h"
#include "daemon/dump_source.h"
#include "daemon/grpc_limits.h"
#include "grpcpp/security/server_credentials.h"

namespace heapwatch::auth {
class GrpcAuthorizer;
}  // namespace heapwatch::auth

namespace heapwatch::storage {
class SnapshotStore;
}  // namespace heapwatch::storage

namespace heapwatch::daemon {

class Metrics;

// Store record table of the agents' highest stored delivery sequences.
inline constexpr std::string_view kDeliveryTable = "agent_delivery";

// The pause budget's state a registered agent reports on its heartbeats (agent.proto Heartbeat
// fields 50-53; the agent runs collectors/pause_budget.h itself).
struct AgentBudgetReport {
  std::string note;  // why histograms wait longer than the interval / over budget; empty: neither
  bool over_budget = false;
  absl::Duration planned_interval = absl::ZeroDuration();  // zero: not known yet
  absl::Duration total_pause = absl::ZeroDuration();       // histograms and dumps so far

  friend bool operator==(const AgentBudgetReport&, const AgentBudgetReport&) = default;
};

// What the daemon does with registered agents (daemon/daemon.cc implements it). Called from gRPC
// threads (one per agent at a time) and the gateway's monitor thread; must be thread-safe.
class RegisteredAgentSink {
 public:
  virtual ~RegisteredAgentSink() = default;
  // An agent registered (or re-registered after a reconnect): record it in the store (PutAgent)
  // and watch it. An agent of the same id watched through the attach socket stops being collected
  // there. Errors end the stream with UNAVAILABLE (e.g. the daemon is stopping, the store fails).
  virtual Status OnRegistered(const AgentInfo& info) = 0;
  // A histogram of the agent is stored durably: trend detection, leaks, metrics, escalation.
  virtual void OnSnapshotStored(const AgentId& agent, const Snapshot& snapshot) = 0;
  // A live-set point of the agent is stored durably.
  virtual void OnLiveSetStored(const AgentId& agent, const LiveSetPoint& point) = 0;
  // The agent became kUp, kUnreachable or kDown (`why`: one line for logs and ListAgents); after
  // kDown the gateway forgets it until it registers again.
  virtual void OnStateChanged(const AgentId& agent, AgentState state, const std::string& why) = 0;
  // The agent's pause budget reported a new state (on a heartbeat; called only when it changed
  // within the stream, and on the stream's first report).
  virtual void OnBudgetReported(const AgentId& /*agent*/, const AgentBudgetReport& /*report*/) {}
  // Whether this agent's histograms are taken with -all (collection.all_objects matches its main
  // class): pushed as AgentConfig.mode ALL.
  virtual bool AllObjects(const AgentInfo& /*info*/) { return false; }
};

struct AgentGatewayOptions {
  std::string listen;  // "HOST:PORT" (port 0 picks one) or "unix:PATH"
  absl::Duration heartbeat_interval = absl::Seconds(10);
  absl::Duration down_after = absl::Minutes(5);
  int max_connected = 256;
  // The configuration pushed to agents (AgentConfig): the daemon's collection settings.
  absl::Duration histogram_interval = absl::Minutes(1);
  bool all_objects = false;    // histograms with -all (mode ALL) instead of LIVE
  double pause_budget = 0.01;  // fraction of wall time; pushed as pause_budget * interval
  // The rest of the pause budget (collectors/pause_budget.h), pushed with the fraction (AgentConfig
  // fields 50-52) so that the agent's scheduler runs the daemon's budget.
  absl::Duration pause_budget_window = absl::Minutes(10);
  absl::Duration max_interval = absl::Hours(6);
  // gRPC limits as on the query listener; the gateway raises max_receive_message_bytes to at least
  // 4 MiB (a first histogram with 3,000 class names is ~200 KB, an upload chunk 1 MiB), the
  // threads to max_connected + 16 and the call time limit to unlimited (Connect lives as long as
  // the JVM).
  GrpcLimits limits;
  // Server credentials of a TCP listener (daemon/auth_setup.h MakeQueryCredentials: TLS and client
  // certificates from tls.*); null = plaintext. Ignored for a UNIX socket, whose file permissions
  // decide who may connect.
  std::shared_ptr<grpc::ServerCredentials> credentials;
};

class AgentGateway {
 public:
  // Binds options.listen and serves AgentGateway. `store`, `sink`, `metrics` are not owned and
  // must outlive the gateway; `authorizer` may be null (no credential check: UNIX socket or
  // loopback, see daemon/auth_setup.h MakeAgentAuthorizer). Errors: InvalidArgument (empty
  // listen), FailedPrecondition (a UNIX socket directory not owned by the daemon's user or writable
  // by others; a path that exists and is not a socket), Unavailable (cannot bind).
  static StatusOr<std::unique_ptr<AgentGateway>> Start(
      const AgentGatewayOptions& options, storage::SnapshotStore* store, RegisteredAgentSink* sink,
      Metrics* metrics, std::shared_ptr<const auth::GrpcAuthorizer> authorizer);

  // Ends every stream (agents see CANCELLED / UNAVAILABLE and reconnect later) and stops the
  // monitor. Idempotent.
  void Shutdown();
  ~AgentGateway();

  // The bound TCP port; 0 for a UNIX socket.
  int port() const;
  // Agents with an open stream now.
  int connected() const;

  // Extended dumps of registered agents (daemon/dump_source.h), owned by the gateway: WriteDump
  // sends DumpRequest on the agent's Connect stream (dump id = the file name without
  // ".hprof[.gz]"), waits for DumpReady, receives the UploadDump chunks (each at the offset the
  // daemon holds, CRC-32 checked; a broken upload resumes where GetUploadStatus says) into
  // PathFor(request) + ".part" (mode 0600, in <dump_dir>/<daemon uid>/, created 0700), checks the
  // SHA-256 against DumpReady's and renames the file to PathFor(request). Errors: Unavailable (the
  // agent is not connected, or its stream ended before DumpReady; the daemon is stopping),
  // FailedPrecondition (DumpFailed with the agent's reason; SHA-256 mismatch; the file exists),
  // DeadlineExceeded (request.timeout), PermissionDenied (the directory or file cannot be
  // created), InvalidArgument (a file name that makes no dump id). No partial file is left on
  // error. Thread-safe; valid while the gateway lives.
  DumpSource* dump_source() const;

  // "Histogram now" for a registered agent (QueryService.CollectHistogram): sends HistogramRequest
  // (a new request id, `mode`) on the agent's Connect stream and waits until the Histogram that
  // answers it is stored, then returns that snapshot. The agent spends its pause from its own
  // budget. Errors: NotFound (no such registered agent), Unavailable (its stream is not open, or
  // ended before the answer; the agent's HistogramFailed reason), DeadlineExceeded (`deadline`).
  // Thread-safe.
  StatusOr<Snapshot> CollectHistogram(const AgentId& agent, HistogramMode mode,
                                      absl::Time deadline);

  struct Impl;

 private:
  explicit AgentGateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AGENT_GATEWAY_H_
