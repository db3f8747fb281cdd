#include "daemon/auth_setup.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "auth/authorize.h"
#include "auth/grpc_auth.h"
#include "auth/method_roles.h"
#include "auth/tls.h"
#include "auth/tokens.h"
#include "grpcpp/security/server_credentials.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {

namespace {

// auth.client_certificates as a map of certificate names to roles. Errors: InvalidArgument for an
// unknown role or a name auth::ClientCertificateMap::Make refuses, prefixed with the key.
StatusOr<auth::ClientCertificateMap> CertificateRoles(const AuthConfig& config) {
  std::map<std::string, auth::Role> roles;
  for (const auto& [name, role_name] : config.client_certificates) {
    std::optional<auth::Role> role = auth::ParseRole(role_name);
    if (!role) {
      return absl::InvalidArgumentError(absl::StrCat("auth.client_certificates: unknown role for '",
                                                     name, "' (expected agent, read or admin)"));
    }
    roles.emplace(name, *role);
  }
  auto certificates = auth::ClientCertificateMap::Make(roles);
  if (!certificates.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("auth.client_certificates: ", certificates.status().message()));
  }
  return *std::move(certificates);
}

// auth.tokens_file loaded; an empty set when none is configured. Errors: auth::TokenSet::Load's,
// prefixed with "auth.tokens_file: ".
StatusOr<auth::TokenSet> LoadTokens(const AuthConfig& config) {
  if (config.tokens_file.empty()) return auth::TokenSet();
  auto loaded = auth::TokenSet::Load(config.tokens_file);
  if (!loaded.ok()) {
    return Status(loaded.status().code(),
                  absl::StrCat("auth.tokens_file: ", loaded.status().message()));
  }
  return *std::move(loaded);
}

// Counts every refusal in heapwatch_auth_failures_total{reason} and logs the ones the authorizer
// marks (once per peer per minute), naming the credential: "<listener>: refused METHOD from PEER:
// REASON (token 'NAME', role ROLE); ...".
auth::RefusalListener RefusalLogger(Metrics* metrics, std::string listener_name) {
  return [metrics, listener_name = std::move(listener_name)](const auth::Refusal& r) {
    metrics->RecordAuthFailure(auth::RefusalReasonName(r.reason));
    if (!r.log) return;
    std::string who;
    if (r.token != nullptr) {
      who = absl::StrCat(" (token '", r.token->name, "', role ",
                         std::string(auth::RoleName(r.token->role)), ")");
    } else if (r.certificate != nullptr) {
      who = absl::StrCat(" (client certificate '", r.certificate->name, "', role ",
                         std::string(auth::RoleName(r.certificate->role)), ")");
    } else if (r.reason == auth::RefusalReason::kUnmappedCertificate) {
      who = absl::StrCat(" (client certificate '",
                         r.certificate_name.empty() ? "(no valid commonName)" : r.certificate_name,
                         "')");
    }
    spdlog::warn(
        "{}: refused {} from {}: {}{}; further refusals of this peer are counted, logged at most "
        "once a minute",
        listener_name, r.method, r.peer_host, auth::RefusalReasonName(r.reason), who);
  };
}

}  // namespace

StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeQueryAuthorizer(
    const AuthConfig& config, std::string_view grpc_listen, Metrics* metrics) {
  return MakeQueryAuthorizer(config, TlsConfig(), grpc_listen, metrics);
}

StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeQueryAuthorizer(
    const AuthConfig& config, const TlsConfig& tls, std::string_view grpc_listen,
    Metrics* metrics) {
  const bool with_certificates = !config.client_certificates.empty();
  if (with_certificates && tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "auth.client_certificates needs tls.client_ca_file (the CA that signs the client "
        "certificates)");
  }
  if (config.tokens_file.empty() && !with_certificates) {
    if (auth::IsLoopbackListenAddress(grpc_listen)) return nullptr;
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve gRPC on ", std::string(grpc_listen),
        " without credentials: it is not a loopback address, so anyone who can reach it could "
        "read every report and trigger heap dumps. Give a tokens file (--auth-tokens FILE or "
        "auth.tokens_file) or client certificates (--tls-client-ca FILE and "
        "auth.client_certificates), see docs/security.md, or listen on 127.0.0.1"));
  }
  HW_ASSIGN_OR_RETURN(auth::TokenSet tokens, LoadTokens(config));
  HW_ASSIGN_OR_RETURN(auth::ClientCertificateMap certificates, CertificateRoles(config));
  for (auth::RefusalReason r : auth::kAllRefusalReasons) {
    metrics->DeclareAuthFailureReason(auth::RefusalReasonName(r));
  }
  spdlog::info("gRPC API credentials: {} tokens{}{}, {} client certificate names",
               tokens.entries().size(), config.tokens_file.empty() ? "" : " from ",
               config.tokens_file, certificates.size());
  if (!config.tokens_file.empty() && tls.cert_file.empty() &&
      !auth::IsLoopbackListenAddress(grpc_listen)) {
    spdlog::warn(
        "gRPC on {} checks tokens but does not speak TLS: the secrets cross the network in "
        "plaintext (give --tls-cert and --tls-key, see docs/security.md)",
        grpc_listen);
  }
  auto listener = RefusalLogger(metrics, "gRPC");
  return std::make_shared<const auth::GrpcAuthorizer>(std::move(tokens), std::move(certificates),
                                                      auth::QueryListenerAccessTable(),
                                                      std::move(listener));
}

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeQueryCredentials(const TlsConfig& tls,
                                                                        const AuthConfig& auth) {
  auth::TlsServerFiles files;
  files.cert_file = tls.cert_file;
  files.key_file = tls.key_file;
  files.client_ca_file = tls.client_ca_file;
  auto credentials = auth::MakeServerCredentials(
      files, auth.tokens_file.empty() ? auth::ClientCertificatePolicy::kRequired
                                      : auth::ClientCertificatePolicy::kOptional);
  if (!credentials.ok()) {
    return Status(credentials.status().code(),
                  absl::StrCat("tls: ", credentials.status().message()));
  }
  if (!tls.cert_file.empty()) {
    spdlog::info("gRPC: TLS with {}{}", tls.cert_file,
                 tls.client_ca_file.empty()
                     ? std::string()
                     : absl::StrCat(", client certificates verified against ", tls.client_ca_file,
                                    auth.tokens_file.empty() ? " (required)"
                                                             : " (optional: tokens accepted)"));
  }
  return credentials;
}

StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeAgentAuthorizer(
    const AuthConfig& config, const TlsConfig& tls, std::string_view agent_listen,
    Metrics* metrics) {
  // On a UNIX socket the file's permissions are the credential (issue 10: "local agents over a UNIX
  // socket protected by file permissions"; the gateway creates it 0660 in a directory only the
  // daemon's user may write): whoever can open the socket is a local agent, so no token is asked
  // for, even when a tokens file exists for the query listener and TCP agents.
  if (agent_listen.starts_with("unix:")) return nullptr;
  // A client certificate is a credential only with a client CA.
  const bool with_certificates = !tls.client_ca_file.empty() && !config.client_certificates.empty();
  if (config.tokens_file.empty() && !with_certificates) {
    if (auth::IsLoopbackListenAddress(agent_listen)) return nullptr;
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve the agent gateway on ", std::string(agent_listen),
        " without credentials: it is not a loopback address, so anyone who can reach it could "
        "feed histograms as any agent. Give a tokens file with `agent` tokens (--auth-tokens "
        "FILE or auth.tokens_file) or client certificates mapped to the agent role "
        "(--tls-client-ca FILE and auth.client_certificates), see docs/agents.md, or listen on "
        "127.0.0.1 or on unix:PATH"));
  }
  HW_ASSIGN_OR_RETURN(auth::TokenSet tokens, LoadTokens(config));
  auth::ClientCertificateMap certificates;
  if (with_certificates) {
    HW_ASSIGN_OR_RETURN(certificates, CertificateRoles(config));
  }
  for (auth::RefusalReason r : auth::kAllRefusalReasons) {
    metrics->DeclareAuthFailureReason(auth::RefusalReasonName(r));
  }
  if (!config.tokens_file.empty() && tls.cert_file.empty() &&
      !auth::IsLoopbackListenAddress(agent_listen)) {
    spdlog::warn(
        "agent gateway on {} checks tokens but does not speak TLS: the agents' secrets cross the "
        "network in plaintext (give --tls-cert and --tls-key, see docs/security.md)",
        agent_listen);
  }
  auto listener = RefusalLogger(metrics, "agent gateway");
  return std::make_shared<const auth::GrpcAuthorizer>(std::move(tokens), std::move(certificates),
                                                      auth::AgentListenerAccessTable(),
                                                      std::move(listener));
}

web::RequestGate MakeWebGate(std::shared_ptr<const auth::GrpcAuthorizer> authorizer,
                             Metrics* metrics) {
  if (authorizer == nullptr) return {};
  auto limiter = std::make_shared<auth::RefusalLogLimiter>();
  return [authorizer = std::move(authorizer), metrics,
          limiter = std::move(limiter)](std::string_view header) -> int {
    const auth::AuthDecision d =
        auth::CheckAuthorizationHeader(authorizer->tokens(), header, auth::Role::kRead);
    if (d.outcome == auth::AuthOutcome::kOk) return 200;
    metrics->RecordAuthFailure(auth::RefusalReasonName(d.reason));
    if (limiter->ShouldLog("web", absl::Now())) {
      spdlog::warn(
          "web: refused a request: {}; further refusals are counted, logged at most once a minute",
          auth::RefusalReasonName(d.reason));
    }
    return d.outcome == auth::AuthOutcome::kPermissionDenied ? 403 : 401;
  };
}

}  // namespace heapwatch::daemon
