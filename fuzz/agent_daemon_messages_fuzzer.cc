// libFuzzer target over what the in-process agent accepts from the daemon (agent/daemon_messages.h:
// CheckDaemonMessage, the check agent/session.cc runs on every DaemonMessage, and
// CheckUploadOffset, the one agent/dump_upload.cc runs on the daemon's upload positions). The input
// is a script of one-byte operations, replayed against a model of the agent's session:
//   op % 4 == 0: a DaemonMessage frame, a 2-byte little-endian length and that many bytes of a
//                serialized DaemonMessage (a frame that does not parse is skipped, as gRPC would
//                refuse it);
//   op % 4 == 1: the agent assigns the next byte's count of deliveries and, when registered,
//                sends them all;
//   op % 4 == 2: an upload position: 8 bytes received_bytes, 8 bytes file size (little-endian);
//   op % 4 == 3: the stream breaks and the agent reconnects (not registered, nothing sent).
// Besides never crashing, the target checks what daemon_messages.h promises:
//   - a refusal is FailedPrecondition exactly when the message is not Registered before
//     registration or Registered after it, OutOfRange only for a Registered beyond what was
//     assigned or an Ack beyond what was sent, InvalidArgument "AgentConfig: ..." only for a
//     config; its message is printable ASCII of at most 300 bytes;
//   - an accepted Ack never passes what was sent on the stream, an accepted Registered never passes
//     what was assigned;
//   - an accepted config's durations are those of the message and within the documented bounds;
//   - an accepted dump request has an id of 1..64 printable ASCII bytes without '/' or '\', not
//     "." or ".."; a refused one has an id that breaks that rule, and its refusal quotes nothing of
//     it; a histogram request is refused exactly when its mode is unknown;
//   - an upload position is accepted exactly when it is within the file, and returned unchanged.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/daemon_messages.h"
#include "google/protobuf/stubs/logging.h"
#include "heapwatch/agent/v1/agent.pb.h"
#include "proto/time_util.h"

namespace {

namespace av1 = ::heapwatch::agent::v1;
using heapwatch::agent::CheckDaemonMessage;
using heapwatch::agent::CheckedAgentConfig;
using heapwatch::agent::CheckUploadOffset;
using heapwatch::agent::DaemonAction;
using heapwatch::agent::StreamPosition;

bool Printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string_view View(const absl::Status& s) { return {s.message().data(), s.message().size()}; }

bool GoodDumpId(const std::string& id) {
  if (id.empty() || id.size() > 64 || id == "." || id == "..") return false;
  for (unsigned char c : id) {
    if (c < 0x20 || c > 0x7e || c == '/' || c == '\\') return false;
  }
  return true;
}

// The duration the message holds, as the config should report it (nullopt when zero).
std::optional<absl::Duration> Expected(const google::protobuf::Duration& d) {
  auto r = heapwatch::proto::FromDuration(d);
  if (!r.ok() || *r <= absl::ZeroDuration()) return std::nullopt;
  return *r;
}

void CheckConfig(const CheckedAgentConfig& c, const av1::AgentConfig& m) {
  if (c.histogram_interval != Expected(m.histogram_interval()) ||
      c.pause_budget != Expected(m.pause_budget()) ||
      c.heartbeat_interval != Expected(m.heartbeat_interval())) {
    __builtin_trap();
  }
  if (c.histogram_interval && (*c.histogram_interval < heapwatch::agent::kMinHistogramInterval ||
                               *c.histogram_interval > heapwatch::agent::kMaxHistogramInterval)) {
    __builtin_trap();
  }
  if (c.pause_budget && *c.pause_budget > heapwatch::agent::kMaxPauseBudget) __builtin_trap();
  if (c.heartbeat_interval && (*c.heartbeat_interval < heapwatch::agent::kMinHeartbeatInterval ||
                               *c.heartbeat_interval > heapwatch::agent::kMaxHeartbeatInterval)) {
    __builtin_trap();
  }
  if (c.mode != m.mode() || c.mode < 0 || c.mode > 3) __builtin_trap();
}

struct Model {
  StreamPosition position;
};

void OneMessage(const av1::DaemonMessage& m, Model* model) {
  StreamPosition& p = model->position;
  auto action = CheckDaemonMessage(m, p);
  const bool is_registered = m.body_case() == av1::DaemonMessage::kRegistered;
  if (!action.ok()) {
    const absl::Status& s = action.status();
    if (View(s).size() > 300 || !Printable(View(s))) __builtin_trap();
    const bool out_of_order = is_registered == p.registered;
    if ((s.code() == absl::StatusCode::kFailedPrecondition) != out_of_order) __builtin_trap();
    if (s.code() == absl::StatusCode::kOutOfRange) {
      const bool beyond = is_registered ? m.registered().stored_through() > p.assigned_through
                                        : m.has_ack() && m.ack().stored_through() > p.sent_through;
      if (!beyond) __builtin_trap();
    } else if (s.code() == absl::StatusCode::kInvalidArgument) {
      if (!View(s).starts_with("AgentConfig: ") || !(is_registered || m.has_config()))
        __builtin_trap();
    } else if (s.code() != absl::StatusCode::kFailedPrecondition) {
      __builtin_trap();
    }
    return;
  }
  if (is_registered == p.registered) __builtin_trap();  // out of order yet accepted
  const DaemonAction& a = *action;
  switch (a.kind) {
    case DaemonAction::Kind::kRegistered:
      if (!is_registered || a.stored_through != m.registered().stored_through() ||
          a.stored_through > p.assigned_through) {
        __builtin_trap();
      }
      CheckConfig(a.config, m.registered().config());
      p.registered = true;
      if (a.stored_through > p.sent_through) p.sent_through = a.stored_through;
      break;
    case DaemonAction::Kind::kAck:
      if (!m.has_ack() || a.stored_through != m.ack().stored_through() ||
          a.stored_through > p.sent_through) {
        __builtin_trap();
      }
      break;
    case DaemonAction::Kind::kConfig:
      if (!m.has_config()) __builtin_trap();
      CheckConfig(a.config, m.config());
      break;
    case DaemonAction::Kind::kHistogramRequest:
    case DaemonAction::Kind::kRefuseHistogramRequest: {
      if (!m.has_histogram_request() || a.request_id != m.histogram_request().request_id()) {
        __builtin_trap();
      }
      const int mode = m.histogram_request().mode();
      const bool known = mode >= 0 && mode <= 3;
      if (known != (a.kind == DaemonAction::Kind::kHistogramRequest)) __builtin_trap();
      if (known && a.mode != mode) __builtin_trap();
      if (!known && (a.refusal.empty() || a.refusal.size() > 200 || !Printable(a.refusal))) {
        __builtin_trap();
      }
      break;
    }
    case DaemonAction::Kind::kDumpRequest:
      if (!m.has_dump_request() || a.dump_id != m.dump_request().dump_id() ||
          !GoodDumpId(a.dump_id) || a.gzip != m.dump_request().gzip() ||
          a.live_only != m.dump_request().live_only()) {
        __builtin_trap();
      }
      break;
    case DaemonAction::Kind::kRefuseDumpRequest: {
      if (!m.has_dump_request() || GoodDumpId(m.dump_request().dump_id()) || !a.dump_id.empty())
        __builtin_trap();
      if (a.refusal.empty() || a.refusal.size() > 200 || !Printable(a.refusal)) __builtin_trap();
      // Quotes nothing of the id: a refusal is one of a few fixed sentences.
      if (!a.refusal.starts_with("the dump id must")) __builtin_trap();
      break;
    }
    case DaemonAction::Kind::kIgnore:
      if (m.body_case() != av1::DaemonMessage::BODY_NOT_SET) __builtin_trap();
      break;
  }
}

uint64_t Le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // protobuf logs every string field with invalid UTF-8 it refuses to parse: thousands of lines.
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Model model;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t op = data[pos++];
    switch (op % 4) {
      case 0: {
        if (pos + 2 > size) return 0;
        const size_t length = data[pos] | (size_t{data[pos + 1]} << 8);
        pos += 2;
        if (length > size - pos) return 0;
        av1::DaemonMessage m;
        if (m.ParseFromArray(data + pos, static_cast<int>(length))) OneMessage(m, &model);
        pos += length;
        break;
      }
      case 1: {
        if (pos >= size) return 0;
        model.position.assigned_through += data[pos++];
        if (model.position.registered)
          model.position.sent_through = model.position.assigned_through;
        break;
      }
      case 2: {
        if (pos + 16 > size) return 0;
        const uint64_t received = Le64(data + pos);
        const uint64_t file_size = Le64(data + pos + 8);
        pos += 16;
        auto offset = CheckUploadOffset("GetUploadStatus", received, file_size);
        if (offset.ok() != (received <= file_size)) __builtin_trap();
        if (offset.ok() && *offset != received) __builtin_trap();
        if (!offset.ok() && offset.status().code() != absl::StatusCode::kDataLoss) __builtin_trap();
        break;
      }
      case 3:
        model.position.registered = false;
        model.position.sent_through = 0;
        break;
    }
  }
  return 0;
}
