#include "daemon/auth_setup.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "auth/authorize.h"
#include "auth/grpc_auth.h"
#include "auth/method_roles.h"
#include "auth/tokens.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {

StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeQueryAuthorizer(
    const AuthConfig& config, std::string_view grpc_listen, Metrics* metrics) {
  if (config.tokens_file.empty()) {
    if (auth::IsLoopbackListenAddress(grpc_listen)) return nullptr;
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve gRPC on ", std::string(grpc_listen),
        " without credentials: it is not a loopback address, so anyone who can reach it could "
        "read every report and trigger heap dumps. Give a tokens file (--auth-tokens FILE or "
        "auth.tokens_file, see docs/security.md) or listen on 127.0.0.1"));
  }
  auto tokens = auth::TokenSet::Load(config.tokens_file);
  if (!tokens.ok()) {
    return Status(tokens.status().code(),
                  absl::StrCat("auth.tokens_file: ", tokens.status().message()));
  }
  for (auth::RefusalReason r : auth::kAllRefusalReasons) {
    metrics->DeclareAuthFailureReason(auth::RefusalReasonName(r));
  }
  spdlog::info("gRPC API credentials: {} tokens from {}", tokens->entries().size(),
               config.tokens_file);
  auto listener = [metrics](const auth::Refusal& r) {
    metrics->RecordAuthFailure(auth::RefusalReasonName(r.reason));
    if (!r.log) return;
    if (r.token != nullptr) {
      spdlog::warn(
          "gRPC: refused {} from {}: {} (token '{}', role {}); further refusals of this "
          "peer are counted, logged at most once a minute",
          r.method, r.peer_host, auth::RefusalReasonName(r.reason), r.token->name,
          auth::RoleName(r.token->role));
    } else {
      spdlog::warn(
          "gRPC: refused {} from {}: {}; further refusals of this peer are counted, "
          "logged at most once a minute",
          r.method, r.peer_host, auth::RefusalReasonName(r.reason));
    }
  };
  return std::make_shared<const auth::GrpcAuthorizer>(
      *std::move(tokens), auth::QueryListenerAccessTable(), std::move(listener));
}

StatusOr<std::shared_ptr<const auth::GrpcAuthorizer>> MakeAgentAuthorizer(
    const AuthConfig& config, std::string_view agent_listen, Metrics* metrics) {
  if (config.tokens_file.empty()) {
    if (auth::IsLoopbackListenAddress(agent_listen)) return nullptr;
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to serve the agent gateway on ", std::string(agent_listen),
        " without credentials: it is not a loopback address, so anyone who can reach it could "
        "feed histograms as any agent. Give a tokens file with `agent` tokens (--auth-tokens "
        "FILE or auth.tokens_file, see docs/agents.md), listen on 127.0.0.1 or on unix:PATH"));
  }
  auto tokens = auth::TokenSet::Load(config.tokens_file);
  if (!tokens.ok()) {
    return Status(tokens.status().code(),
                  absl::StrCat("auth.tokens_file: ", tokens.status().message()));
  }
  for (auth::RefusalReason r : auth::kAllRefusalReasons) {
    metrics->DeclareAuthFailureReason(auth::RefusalReasonName(r));
  }
  auto listener = [metrics](const auth::Refusal& r) {
    metrics->RecordAuthFailure(auth::RefusalReasonName(r.reason));
    if (!r.log) return;
    spdlog::warn(
        "agent gateway: refused {} from {}: {}{}; further refusals of this peer are counted, "
        "logged at most once a minute",
        r.method, r.peer_host, auth::RefusalReasonName(r.reason),
        r.token != nullptr ? absl::StrCat(" (token '", r.token->name, "', role ",
                                          std::string(auth::RoleName(r.token->role)), ")")
                           : std::string());
  };
  return std::make_shared<const auth::GrpcAuthorizer>(
      *std::move(tokens), auth::AgentListenerAccessTable(), std::move(listener));
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
