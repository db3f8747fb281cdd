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
namespace grpc {
class ServerCredentials;
}  // namespace grpc

namespace heapwatch::daemon {

// With auth.tokens_file set: loads it and returns an authorizer over the query listener's method
// table (auth/method_roles.h) that reports to `metrics` (not owned, must outlive it). Without it:
// null (no check) when `grpc_listen` is a loopback address (auth::IsLoopbackListenAddress).
// Errors: FailedPrecondition when `grpc_listen` is not loopback and no tokens file is configured
// (the daemon then refuses to start); the tokens file's errors (auth::TokenSet::Load: NotFound,
// PermissionDenied, InvalidArgument with the line) prefixed with "auth.tokens_file: ".
StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeQueryAuthorizer(
    const AuthConfig& config, std::string_view grpc_listen, Metrics* metrics);

// The same, with TLS client certificates as a second kind of credential (docs/security.md):
// with auth.client_certificates (which needs tls.client_ca_file) the authorizer also accepts a call
// without a token whose verified client certificate is named there, with that role; an unmapped
// certificate is refused (UNAUTHENTICATED, reason unmapped_certificate). A non-loopback
// `grpc_listen` counts as "with credentials" when a tokens file or a client CA with a non-empty
// auth.client_certificates is configured. Without either on loopback: null (no check). Errors: as
// above (FailedPrecondition names both kinds of credentials); InvalidArgument for a client
// certificate mapping that auth::ClientCertificateMap::Make refuses, or one without
// tls.client_ca_file.
StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeQueryAuthorizer(
    const AuthConfig& config, const TlsConfig& tls, std::string_view grpc_listen, Metrics* metrics);

// The gRPC query listener's server credentials (auth::MakeServerCredentials) from `tls`: plaintext
// without tls.cert_file; TLS otherwise; with tls.client_ca_file client certificates are requested
// and verified, and required when no tokens file is configured (then a certificate is the only
// credential, so a client without one need not get past the handshake); optional when tokens are
// also accepted (a client may present a token instead). Errors: auth::MakeServerCredentials's,
// each naming the file, prefixed with "tls: ".
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeQueryCredentials(const TlsConfig& tls,
                                                                        const AuthConfig& auth);

// The web pages' and /metrics' gate (web/web_server.h) with the same credentials as the gRPC API:
// with `authorizer` (from MakeQueryAuthorizer) a request needs `Authorization: Bearer SECRET` of a
// `read` or `admin` token: 200 then, 401 without a valid token, 403 for a token of another role
// (`agent`); refusals are counted in heapwatch_auth_failures_total{reason} and logged at most once
// a minute. Without `authorizer` (loopback, no tokens file): an empty gate, every request served.
// Thread-safety: the gate is called concurrently by the HTTP server's threads; it is safe.
// The agent listener's credential check (agents.listen; docs/agents.md). A UNIX socket
// (`unix:PATH`): null (no check) always; the socket file's permissions decide who may connect, a
// tokens file does not add a token check there. TCP: with auth.tokens_file set, or
// tls.client_ca_file with auth.client_certificates, an authorizer over
// auth::AgentListenerAccessTable() (every AgentGateway method needs a token, or a verified client
// certificate mapped, of role `agent`) whose refusals are counted in
// heapwatch_auth_failures_total{reason} and logged once per peer host per minute. Without either:
// null (no check) on a loopback TCP address. The listener's TLS itself comes from
// MakeQueryCredentials (same files as the query listener). Errors: FailedPrecondition for a
// non-loopback TCP address without credentials; the tokens file's errors prefixed with
// "auth.tokens_file: "; InvalidArgument for a bad auth.client_certificates entry.
StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeAgentAuthorizer(
    const AuthConfig& config, const TlsConfig& tls, std::string_view agent_listen,
    Metrics* metrics);

web::RequestGate MakeWebGate(std::shared_ptr<const auth::GrpcAuthorizer> authorizer,
                             Metrics* metrics);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AUTH_SETUP_H_
