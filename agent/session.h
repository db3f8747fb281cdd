// The agent's side of heapwatch.agent.v1.AgentGateway.Connect (agent.proto, "Session"): connects,
// registers first on every connect, resends what the daemon has not stored, sends heartbeats, and
// hands the daemon's configuration and requests to the agent's JVM thread.
//
// Threads: RunWriter and RunReader each run on a thread of their own (the agent creates both
// through JVMTI RunAgentThread, "heapwatch-agent-io" and "heapwatch-agent-io-reader"). Neither
// calls into the JVM; the Listener is called on the reader thread. gRPC's internal threads only run
// gRPC code.
//
// Delivery (exactly once together with the daemon): deliveries stay in a DeliveryBuffer until the
// daemon acknowledges them (Ack, or Registered.stored_through after a reconnect); after every
// connect the writer resends the buffered ones above stored_through in sequence order. A full
// buffer drops its oldest delivery (counted in Heartbeat.dropped_deliveries).
//
// Reconnects: after a broken or refused stream the writer waits a jittered exponential backoff
// (uniform in [d/2, d], d doubling from options.backoff_initial to options.backoff_max) and
// connects again. The first failure after a success (or at start) is logged once on stderr
// ("heapwatch-agent: ..."); the failures that follow it are not, until a connect succeeds again.
//
// Thread-safety: Deliver, SendUnsequenced, Shutdown and the accessors are thread-safe.
#ifndef HEAPWATCH_AGENT_SESSION_H_
#define HEAPWATCH_AGENT_SESSION_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "absl/time/time.h"
#include "agent/delivery.h"
#include "agent/options.h"
#include "heapwatch/agent/v1/agent.grpc.pb.h"

namespace heapwatch::agent {

class Session {
 public:
  // Receives what the daemon sends. Called on the reader thread; must be quick and must not call
  // into the JVM.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void OnConfig(const v1::AgentConfig& config) = 0;
    virtual void OnHistogramRequest(const v1::HistogramRequest& request) = 0;
    virtual void OnDumpRequest(const v1::DumpRequest& request) = 0;
  };

  // `registration` is sent as Register on every connect. `listener` must outlive the Session.
  Session(AgentOptions options, v1::Register registration, Listener* listener);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Queues a sequenced delivery (histogram or live-set points). Never blocks on the network.
  void Deliver(std::variant<HistogramDelivery, v1::LiveSet> body);
  // Sends an unsequenced message (HistogramFailed) on the current stream; dropped when there is
  // none (the daemon would not know the request after a reconnect anyway).
  void SendUnsequenced(v1::AgentMessage message);

  // Thread bodies; each returns after Shutdown().
  void RunWriter();
  void RunReader();
  // Ends the current stream and makes both thread bodies return. Idempotent.
  void Shutdown();

  // A stub on a new channel to the daemon (for UploadDump / GetUploadStatus), and what its calls
  // need: the token (empty without one) and this agent's id.
  std::unique_ptr<v1::AgentGateway::Stub> NewStub() const;
  const std::string& token() const { return options_.token; }
  const std::string& agent_id() const { return registration_.agent_id(); }

  // The pause budget's state to report on every Heartbeat (budget_note, over_budget,
  // planned_interval, total_pause; other fields ignored). A change of the note or of over_budget
  // sends a Heartbeat at once, so the daemon shows why histograms wait without a heartbeat's delay.
  void SetBudgetStatus(const v1::Heartbeat& status);

  uint64_t dropped_deliveries() const;
  size_t buffered_deliveries() const;
  bool connected() const;

 private:
  // One Connect stream; the writer owns it, the reader reads from it.
  struct Stream {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::DaemonMessage>> rw;
    bool registered = false;
    bool broken = false;
    bool reader_done = false;
    uint64_t stored_through = 0;
    uint64_t sent_through =
        0;  // highest sequence written (or stored) on it: an Ack may not pass it
  };

  // Connects once and serves the stream until it breaks. Returns true when it had registered.
  bool ServeOneStream(grpc::Status* status);
  void LogFailure(const std::string& what);
  absl::Duration NextBackoff();

  const AgentOptions options_;
  const v1::Register registration_;
  Listener* const listener_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  DeliveryBuffer buffer_;                                  // guarded by mu_
  std::deque<v1::AgentMessage> unsequenced_;               // guarded by mu_
  std::shared_ptr<Stream> stream_;                         // guarded by mu_
  absl::Duration heartbeat_interval_ = absl::Seconds(10);  // guarded by mu_
  v1::Heartbeat budget_status_;                            // guarded by mu_
  bool budget_changed_ = false;                            // guarded by mu_
  bool shutdown_ = false;                                  // guarded by mu_
  bool failing_ = false;  // writer thread only: a failure was logged and no connect succeeded since
  absl::Duration backoff_;  // writer thread only
};

}  // namespace heapwatch::agent

#endif  // HEAPWATCH_AGENT_SESSION_H_
