// heapwatchctl's gRPC plumbing, shared by the query (ctl/query_commands.h) and report
// (ctl/report_commands.h) subcommands: a QueryService client with the --server address and the
// per-request --timeout deadline, and the one way errors of a call are printed.
//
// Thread-safety: RpcClient is thread-compatible (one per command); the functions are pure.
#ifndef HEAPWATCH_CTL_RPC_H_
#define HEAPWATCH_CTL_RPC_H_

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "ctl/command.h"
#include "ctl/tls_options.h"
#include "grpcpp/grpcpp.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"

namespace heapwatch::ctl {

// A heapwatch.v1.QueryService client on `global.server` (plaintext, or TLS with the --tls-*
// options: ctl/tls_options.h MakeChannel). Creating it does not connect; each Call does, with
// `global.timeout` as its deadline and, when `global.token` is set, `authorization: Bearer <token>`
// metadata.
class RpcClient {
 public:
  explicit RpcClient(const GlobalOptions& global)
      : global_(global), stub_(heapwatch::v1::QueryService::NewStub(MakeChannel(global))) {}

  // Calls one unary RPC, e.g. Call(&v1::QueryService::Stub::ListAgents, request, &response).
  // Returns gRPC's status: UNAVAILABLE when the server cannot be reached, DEADLINE_EXCEEDED after
  // --timeout, otherwise the server's own status.
  template <typename Request, typename Response>
  grpc::Status Call(grpc::Status (heapwatch::v1::QueryService::Stub::*method)(grpc::ClientContext*,
                                                                              const Request&,
                                                                              Response*),
                    const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(global_.timeout));
    if (!global_.token.empty()) context.AddMetadata("authorization", "Bearer " + global_.token);
    return (stub_.get()->*method)(&context, request, response);
  }

  const GlobalOptions& global() const { return global_; }

 private:
  const GlobalOptions& global_;
  std::unique_ptr<heapwatch::v1::QueryService::Stub> stub_;
};

// "NOT_FOUND", "UNIMPLEMENTED", ... (the grpc::StatusCode's canonical name; the number for an
// unknown code).
std::string StatusCodeName(grpc::StatusCode code);

// Prints "heapwatchctl: <what> on <server> failed: <CODE>: <message>" to `err` and returns
// kExitError (1). An empty message from the server is replaced by a short explanation (for
// UNIMPLEMENTED: the server is too old to serve the request).
int ServerError(std::ostream& err, const GlobalOptions& global, std::string_view what,
                const grpc::Status& status);

// "changed", "new", "vanished", "unchanged" ("unknown" for anything else).
std::string ClassChangeName(heapwatch::v1::ClassChange change);

// Prints `message` as JSON (ctl/output.h PrintJson) on `out` and returns kExitOk; when it cannot be
// printed, prints "heapwatchctl: <reason>" on `err` and returns kExitError.
int EmitJson(const google::protobuf::Message& message, std::ostream& out, std::ostream& err);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_RPC_H_
