// What the agent accepts from the daemon (agent.proto, "Session" and "Extended dumps"): every
// DaemonMessage on the Connect stream, and the daemon's upload positions, checked before the agent
// acts on them. The daemon is trusted to be heapwatchd, but the agent runs inside someone else's
// JVM: a buggy or impostor daemon must get a clear refusal, never a JVM that schedules a histogram
// every nanosecond, drops deliveries it never sent, or seeks past the end of its dump file.
//
// Session::RunReader (agent/session.cc) calls CheckDaemonMessage on every message it reads and
// UploadDumpOnce (agent/dump_upload.cc) calls CheckUploadOffset on every position the daemon
// reports. Fuzzed: fuzz/agent_daemon_messages_fuzzer.cc.
//
// Thread-safety: pure functions.
#ifndef HEAPWATCH_AGENT_DAEMON_MESSAGES_H_
#define HEAPWATCH_AGENT_DAEMON_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "common/status.h"
#include "heapwatch/agent/v1/agent.pb.h"

namespace heapwatch::agent {

// Bounds of AgentConfig's durations. The daemon's own configuration is narrower
// (collection.interval
// >= 100ms, agents.heartbeat_interval >= 10ms, daemon/config.cc); these only refuse what no daemon
// sends.
inline constexpr absl::Duration kMinHistogramInterval = absl::Milliseconds(10);
inline constexpr absl::Duration kMaxHistogramInterval = absl::Hours(24 * 30);
inline constexpr absl::Duration kMaxPauseBudget = absl::Hours(1);
inline constexpr absl::Duration kMinHeartbeatInterval = absl::Milliseconds(10);
inline constexpr absl::Duration kMaxHeartbeatInterval = absl::Hours(1);
// DumpRequest.dump_id: 1..64 printable ASCII bytes (agent.proto).
inline constexpr size_t kMaxDumpIdBytes = 64;

// An AgentConfig with its durations checked.
struct CheckedAgentConfig {
  // Scheduled histogram interval; nullopt (0 or unset) = none taken on the agent's own schedule.
  std::optional<absl::Duration> histogram_interval;
  v1::HistogramMode mode = v1::HISTOGRAM_MODE_UNSPECIFIED;
  // Longest pause one histogram may cost; nullopt (0 or unset) = no budget.
  std::optional<absl::Duration> pause_budget;
  // nullopt (0 or unset) = keep the current heartbeat interval.
  std::optional<absl::Duration> heartbeat_interval;
  bool histogram_after_old_gc = false;
};

// Checks an AgentConfig. Errors: InvalidArgument naming the field when a duration is negative or
// not a valid google.protobuf.Duration (seconds and nanos of different signs, nanos out of range),
// the histogram interval is outside [kMinHistogramInterval, kMaxHistogramInterval], the pause
// budget over kMaxPauseBudget, the heartbeat interval outside [kMinHeartbeatInterval,
// kMaxHeartbeatInterval], or the mode is not a HistogramMode value. Zero durations mean "not set".
StatusOr<CheckedAgentConfig> CheckAgentConfig(const v1::AgentConfig& config);

// Checks a DumpRequest's dump id: 1..kMaxDumpIdBytes printable ASCII bytes, no path separator ('/'
// or '\\'), not "." or ".." (the id names the upload on both sides; the daemon derives file names
// from it). Errors: InvalidArgument (quoting nothing of the id).
Status CheckDumpId(std::string_view dump_id);

// What the reader knows of its stream when a message arrives.
struct StreamPosition {
  // Registered was received on this stream.
  bool registered = false;
  // Highest sequence sent on this stream (0 when none): an Ack may not go beyond it.
  uint64_t sent_through = 0;
  // Highest sequence the agent ever assigned (DeliveryBuffer::next_sequence() - 1): Registered
  // may not go beyond it (the agent id names one JVM run, so the daemon cannot hold more).
  uint64_t assigned_through = 0;
};

// What the agent does with one DaemonMessage.
struct DaemonAction {
  enum class Kind {
    kRegistered,              // stored_through, config
    kAck,                     // stored_through
    kConfig,                  // config
    kHistogramRequest,        // request_id, mode (UNSPECIFIED: the configured mode)
    kDumpRequest,             // dump_id, gzip, live_only
    kRefuseHistogramRequest,  // request_id, refusal: answer HistogramFailed
    kRefuseDumpRequest,       // refusal: answer DumpFailed with dump id "?"
    kIgnore,                  // a body this agent does not know (a newer daemon): nothing to do
  };
  Kind kind = Kind::kIgnore;
  uint64_t stored_through = 0;
  CheckedAgentConfig config;
  uint64_t request_id = 0;
  v1::HistogramMode mode = v1::HISTOGRAM_MODE_UNSPECIFIED;
  std::string dump_id;
  bool gzip = false;
  bool live_only = false;
  // Why a request is refused: printable ASCII, quoting nothing of the request.
  std::string refusal;
};

// Checks one DaemonMessage against the stream's position and says what to do with it. A request
// the agent cannot serve (a HistogramRequest with an unknown mode, a DumpRequest whose id
// CheckDumpId refuses) is a kRefuse* action, answered on the stream. Errors, each a protocol error
// that ends the stream (session.cc):
//   FailedPrecondition: anything but Registered first, or Registered twice on one stream;
//   OutOfRange: Registered.stored_through beyond `assigned_through`, Ack.stored_through beyond
//     `sent_through` (the daemon claims deliveries it never got; honouring it would drop them);
//   InvalidArgument: an AgentConfig (in Registered or alone) that CheckAgentConfig refuses,
//     prefixed "AgentConfig: ".
// Messages are printable ASCII of at most a few hundred bytes. Complexity: O(message size).
StatusOr<DaemonAction> CheckDaemonMessage(const v1::DaemonMessage& message,
                                          const StreamPosition& position);

// Checks a position the daemon reports for an upload (GetUploadStatusReply.received_bytes,
// UploadDumpReply.received_bytes) against the file's size in bytes; returns the offset to resume
// from. Errors: DataLoss "<call>: the daemon holds N bytes of a S-byte dump" when N > size.
StatusOr<uint64_t> CheckUploadOffset(std::string_view call, uint64_t received_bytes, uint64_t size);

}  // namespace heapwatch::agent

#endif  // HEAPWATCH_AGENT_DAEMON_MESSAGES_H_
