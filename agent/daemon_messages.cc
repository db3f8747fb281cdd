#include "agent/daemon_messages.h"

#include "absl/strings/str_cat.h"
#include "proto/time_util.h"

namespace heapwatch::agent {
namespace {

// A google.protobuf.Duration field: nullopt when zero (not set), the duration when positive.
StatusOr<std::optional<absl::Duration>> OptionalDuration(const char* field,
                                                         const google::protobuf::Duration& d) {
  StatusOr<absl::Duration> r = proto::FromDuration(d);
  if (!r.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": seconds and nanos out of range or of different signs"));
  }
  if (*r < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is negative"));
  }
  if (*r == absl::ZeroDuration()) return std::optional<absl::Duration>();
  return std::optional<absl::Duration>(*r);
}

Status CheckRange(const char* field, const std::optional<absl::Duration>& d, absl::Duration min,
                  absl::Duration max) {
  if (!d.has_value() || (*d >= min && *d <= max)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " must be 0 (not set) or in [",
                                                 absl::FormatDuration(min), ", ",
                                                 absl::FormatDuration(max), "]"));
}

bool KnownMode(int mode) {
  return mode >= v1::HISTOGRAM_MODE_UNSPECIFIED && mode <= v1::HISTOGRAM_MODE_ALL_AFTER_GC;
}

StatusOr<CheckedAgentConfig> CheckConfigField(const v1::AgentConfig& config) {
  StatusOr<CheckedAgentConfig> c = CheckAgentConfig(config);
  if (!c.ok()) {
    return Status(c.status().code(), absl::StrCat("AgentConfig: ", c.status().message()));
  }
  return c;
}

}  // namespace

StatusOr<CheckedAgentConfig> CheckAgentConfig(const v1::AgentConfig& config) {
  CheckedAgentConfig c;
  HW_ASSIGN_OR_RETURN(c.histogram_interval,
                      OptionalDuration("histogram_interval", config.histogram_interval()));
  HW_RETURN_IF_ERROR(CheckRange("histogram_interval", c.histogram_interval, kMinHistogramInterval,
                                kMaxHistogramInterval));
  HW_ASSIGN_OR_RETURN(c.pause_budget, OptionalDuration("pause_budget", config.pause_budget()));
  HW_RETURN_IF_ERROR(
      CheckRange("pause_budget", c.pause_budget, absl::Nanoseconds(1), kMaxPauseBudget));
  HW_ASSIGN_OR_RETURN(c.heartbeat_interval,
                      OptionalDuration("heartbeat_interval", config.heartbeat_interval()));
  HW_RETURN_IF_ERROR(CheckRange("heartbeat_interval", c.heartbeat_interval, kMinHeartbeatInterval,
                                kMaxHeartbeatInterval));
  if (!KnownMode(config.mode())) {
    return absl::InvalidArgumentError(absl::StrCat("mode ", config.mode(), " is unknown"));
  }
  c.mode = config.mode();
  c.histogram_after_old_gc = config.histogram_after_old_gc();
  return c;
}

Status CheckDumpId(std::string_view dump_id) {
  if (dump_id.empty() || dump_id.size() > kMaxDumpIdBytes) {
    return absl::InvalidArgumentError("the dump id must be 1..64 printable ASCII bytes");
  }
  for (unsigned char c : dump_id) {
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError("the dump id must be 1..64 printable ASCII bytes");
    }
    if (c == '/' || c == '\\') {
      return absl::InvalidArgumentError("the dump id must not hold a path separator");
    }
  }
  if (dump_id == "." || dump_id == "..") {
    return absl::InvalidArgumentError("the dump id must not be \".\" or \"..\"");
  }
  return absl::OkStatus();
}

StatusOr<DaemonAction> CheckDaemonMessage(const v1::DaemonMessage& message,
                                          const StreamPosition& position) {
  DaemonAction a;
  if (message.body_case() != v1::DaemonMessage::kRegistered && !position.registered) {
    return absl::FailedPreconditionError("the daemon sent something before Registered");
  }
  switch (message.body_case()) {
    case v1::DaemonMessage::kRegistered: {
      if (position.registered) {
        return absl::FailedPreconditionError("the daemon sent Registered twice on one stream");
      }
      const v1::Registered& r = message.registered();
      if (r.stored_through() > position.assigned_through) {
        return absl::OutOfRangeError(
            absl::StrCat("Registered: the daemon claims deliveries through ", r.stored_through(),
                         ", the agent assigned only through ", position.assigned_through));
      }
      a.kind = DaemonAction::Kind::kRegistered;
      a.stored_through = r.stored_through();
      HW_ASSIGN_OR_RETURN(a.config, CheckConfigField(r.config()));
      return a;
    }
    case v1::DaemonMessage::kAck: {
      if (message.ack().stored_through() > position.sent_through) {
        return absl::OutOfRangeError(absl::StrCat(
            "Ack: the daemon claims deliveries through ", message.ack().stored_through(),
            ", the agent sent only through ", position.sent_through, " on this stream"));
      }
      a.kind = DaemonAction::Kind::kAck;
      a.stored_through = message.ack().stored_through();
      return a;
    }
    case v1::DaemonMessage::kConfig: {
      a.kind = DaemonAction::Kind::kConfig;
      HW_ASSIGN_OR_RETURN(a.config, CheckConfigField(message.config()));
      return a;
    }
    case v1::DaemonMessage::kHistogramRequest: {
      const v1::HistogramRequest& r = message.histogram_request();
      a.request_id = r.request_id();
      if (!KnownMode(r.mode())) {
        a.kind = DaemonAction::Kind::kRefuseHistogramRequest;
        a.refusal = absl::StrCat("histogram mode ", r.mode(), " is unknown to this agent");
        return a;
      }
      a.kind = DaemonAction::Kind::kHistogramRequest;
      a.mode = r.mode();
      return a;
    }
    case v1::DaemonMessage::kDumpRequest: {
      const v1::DumpRequest& r = message.dump_request();
      Status id = CheckDumpId(r.dump_id());
      if (!id.ok()) {
        a.kind = DaemonAction::Kind::kRefuseDumpRequest;
        a.refusal = std::string(id.message());
        return a;
      }
      a.kind = DaemonAction::Kind::kDumpRequest;
      a.dump_id = r.dump_id();
      a.gzip = r.gzip();
      a.live_only = r.live_only();
      return a;
    }
    case v1::DaemonMessage::BODY_NOT_SET:
      break;
  }
  a.kind = DaemonAction::Kind::kIgnore;
  return a;
}

StatusOr<uint64_t> CheckUploadOffset(std::string_view call, uint64_t received_bytes,
                                     uint64_t size) {
  if (received_bytes > size) {
    return absl::DataLossError(absl::StrCat(absl::string_view(call.data(), call.size()),
                                            ": the daemon holds ", received_bytes, " bytes of a ",
                                            size, "-byte dump"));
  }
  return received_bytes;
}

}  // namespace heapwatch::agent
