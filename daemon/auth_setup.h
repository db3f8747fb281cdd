// The credential check of heapwatchd's gRPC query listener, built from the configuration
// (auth.tokens_file, grpc_listen; docs/security.md): refusals are counted in
// heapwatch_auth_failures_total{reason} and logged (spdlog, warn) once per peer host per minute,
// with the method, the reason and the token's name, never a secret.
//
// Thread-safety: MakeQueryAuthorizer is called once at start-up; the authorizer it returns is
// thread-safe (auth/grpc_auth.h).
#ifndef HEAPWATCH_DAEMON_AUTH_SETUP_H_
#define HEAPWATCH_DAEMON_AUTH_SETUP_H_

#include <memory>
#include <string_view>

#include "common/status.h"
#include "daemon/config.h"
#include "daemon/metrics.h"
#include "web/web_server.h"

namespace heapwatch::auth {
class GrpcAuthorizer;
}  // namespace heapwatch::auth

namespace heapwatch::daemon {

// With auth.tokens_file set: loads it and returns an authorizer over the query listener's method
// table (auth/method_roles.h) that reports to `metrics` (not owned, must outlive it). Without it:
// null (no check) when `grpc_listen` is a loopback address (auth::IsLoopbackListenAddress).
// Errors: FailedPrecondition when `grpc_listen` is not loopback and no tokens file is configured
// (the daemon then refuses to start); the tokens file's errors (auth::TokenSet::Load: NotFound,
// PermissionDenied, InvalidArgument with the line) prefixed with "auth.tokens_file: ".
StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeQueryAuthorizer(
    const AuthConfig& config, std::string_view grpc_listen, Metrics* metrics);

// The web pages' and /metrics' gate (web/web_server.h) with the same credentials as the gRPC API:
// with `authorizer` (from MakeQueryAuthorizer) a request needs `Authorization: Bearer SECRET` of a
// `read` or `admin` token: 200 then, 401 without a valid token, 403 for a token of another role
// (`agent`); refusals are counted in heapwatch_auth_failures_total{reason} and logged at most once
// a minute. Without `authorizer` (loopback, no tokens file): an empty gate, every request served.
// Thread-safety: the gate is called concurrently by the HTTP server's threads; it is safe.
// The agent listener's credential check (agents.listen; docs/agents.md): with auth.tokens_file
// set, an authorizer over auth::AgentListenerAccessTable() (every AgentGateway method needs a
// token of role `agent`) whose refusals are counted in heapwatch_auth_failures_total{reason} and
// logged once per peer host per minute. Without it: null (no check) for a UNIX socket or a
// loopback TCP address. Errors: FailedPrecondition for a non-loopback TCP address without a tokens
// file; the tokens file's errors prefixed with "auth.tokens_file: ".
StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeAgentAuthorizer(
    const AuthConfig& config, std::string_view agent_listen, Metrics* metrics);

web::RequestGate MakeWebGate(std::shared_ptr<const auth::GrpcAuthorizer> authorizer,
                             Metrics* metrics);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AUTH_SETUP_H_
