// Resource limits of heapwatchd's gRPC server against abusive or broken clients (issue 12, "Fault
// injection"; docs/configuration.md, section `grpc`; docs/fault-injection.md). They bound what one
// client can take from the daemon: the size of a request, the streams of one connection, the
// threads and memory of all calls, how often a client may ping, how long an idle connection and one
// call may last. The other clients (and the collection of the JVMs, which never waits for gRPC)
// keep their answers.
//
// This header includes no gRPC header; the gRPC side lives in grpc_limits.cc.
#ifndef HEAPWATCH_DAEMON_GRPC_LIMITS_H_
#define HEAPWATCH_DAEMON_GRPC_LIMITS_H_

#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "common/status.h"

namespace grpc {
class ServerBuilder;
}  // namespace grpc

namespace heapwatch::daemon {

class Metrics;

// YAML section `grpc`. Defaults suit a daemon queried by a few dashboards and operators.
struct GrpcLimits {
  // Largest request message the server accepts, bytes; a bigger one fails with RESOURCE_EXHAUSTED
  // before any handler runs (gRPC's own check). heapwatch's requests are a few hundred bytes.
  uint64_t max_receive_message_bytes = 1 << 20;
  // Streams (calls) one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS,
  // RFC 9113 section 6.5.2); a client's further calls wait in its own transport.
  int max_concurrent_streams = 64;
  // Threads gRPC may use to serve calls, over all connections (grpc::ResourceQuota::SetMaxThreads;
  // the synchronous server's polling threads count too). A call arriving when none is left is not
  // queued: gRPC answers it with RESOURCE_EXHAUSTED "Server Threadpool Exhausted", counted in
  // heapwatch_faults_total{reason="grpc_thread_quota"} (tests/daemon/grpc_keepalive_quota_test.cc).
  int max_threads = 32;
  // Memory gRPC may use for connections and calls, bytes (grpc::ResourceQuota::Resize); beyond it
  // new connections and reads are refused or slowed until memory is released.
  uint64_t max_memory_bytes = 256ull << 20;
  // Keepalive enforcement (gRFC A8): a client that pings more often than this without data gets a
  // strike; after more than max_ping_strikes strikes the server closes the connection (GOAWAY
  // ENHANCE_YOUR_CALM "too_many_pings"; not counted in heapwatch_faults_total: it happens in gRPC's
  // transport). gRPC C-core clients ping at most once a second while a call is open.
  absl::Duration min_ping_interval = absl::Seconds(10);
  int max_ping_strikes = 2;
  // The server pings an idle connection this often, and closes it when the ping is not answered
  // within keepalive_timeout (half-open connections of vanished clients are released).
  absl::Duration keepalive_time = absl::Minutes(2);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // A connection with no call for this long is closed (GOAWAY).
  absl::Duration max_connection_idle = absl::Minutes(10);
  // Server-side time limit of one call (any method except the health service's Watch, a
  // subscription by design): a call still running after this long is cancelled by the server
  // (the client sees CANCELLED), logged and counted in
  // heapwatch_faults_total{reason="grpc_call_time_limit"}. The handler itself runs to its end
  // (queries are not interruptible); its answer is dropped. A shorter client deadline wins.
  absl::Duration max_call_time = absl::Seconds(60);
};

// InvalidArgument (naming the `grpc.` key) for a limit out of range: byte sizes 1 KiB..2 GiB - 1
// (gRPC's message size is an int), max_memory_bytes >= 1 MiB, streams and threads 1..100000,
// ping strikes 0..1000, durations positive (min_ping_interval and keepalive_time >= 1 ms).
Status ValidateGrpcLimits(const GrpcLimits& limits);

// The running side of the limits that gRPC does not enforce by itself: the call time limit. Owns a
// watchdog thread while it lives; the server's interceptors share its ownership, so it lives as
// long as the server needs it. Thread-safe.
class GrpcCallLimiter {
 public:
  virtual ~GrpcCallLimiter() = default;
  // Calls registered now: every call between its start and its status being sent, Watch streams
  // included (for tests and diagnostics).
  virtual int calls_in_flight() const = 0;
};

// Sets every limit of `limits` on `builder` (channel arguments, resource quota, message size, an
// interceptor for the call time limit) and returns the limiter that enforces the time limit.
// `metrics` (not owned, may be null) counts the cancelled calls. Call before BuildAndStart.
// `metrics` must outlive the server.
std::shared_ptr<GrpcCallLimiter> ApplyGrpcLimits(const GrpcLimits& limits, Metrics* metrics,
                                                 grpc::ServerBuilder* builder);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_GRPC_LIMITS_H_
