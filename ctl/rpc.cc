#include "ctl/rpc.h"

#include <iterator>

#include "absl/status/status.h"
#include "ctl/output.h"

namespace heapwatch::ctl {

std::string StatusCodeName(grpc::StatusCode code) {
  // gRPC's codes are the canonical codes absl::StatusCode names ("UNAUTHENTICATED", ...).
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? std::to_string(static_cast<int>(code)) : name;
}

int ServerError(std::ostream& err, const GlobalOptions& global, std::string_view what,
                const grpc::Status& status) {
  std::string message = status.error_message();
  if (message.empty()) {
    message = status.error_code() == grpc::StatusCode::UNIMPLEMENTED
                  ? "this heapwatchd does not serve the request (an older version?)"
                  : "(no message from the server)";
  }
  err << "heapwatchctl: " << what << " on " << global.server
      << " failed: " << StatusCodeName(status.error_code()) << ": " << message << "\n";
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    // A failed TLS handshake looks like an unreachable server (docs/security.md "TLS").
    err << (global.channel_credentials == nullptr
                ? "heapwatchctl: (the connection was plaintext; if heapwatchd serves TLS, give "
                  "--tls-ca FILE)\n"
                : "heapwatchctl: (over TLS: check that --tls-ca signed heapwatchd's certificate, "
                  "that it names the --server host or --tls-server-name, and that heapwatchd "
                  "accepts the client certificate)\n");
  }
  return kExitError;
}

std::string ClassChangeName(heapwatch::v1::ClassChange change) {
  switch (change) {
    case heapwatch::v1::CLASS_CHANGE_CHANGED:
      return "changed";
    case heapwatch::v1::CLASS_CHANGE_NEW:
      return "new";
    case heapwatch::v1::CLASS_CHANGE_VANISHED:
      return "vanished";
    case heapwatch::v1::CLASS_CHANGE_UNCHANGED:
      return "unchanged";
    default:
      return "unknown";
  }
}

int EmitJson(const google::protobuf::Message& message, std::ostream& out, std::ostream& err) {
  Status s = PrintJson(message, out);
  if (!s.ok()) {
    err << "heapwatchctl: " << s.message() << "\n";
    return kExitError;
  }
  return kExitOk;
}

}  // namespace heapwatch::ctl
