#include "auth/grpc_auth.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace heapwatch::auth {
namespace {

// std::string_view -> absl::string_view (Debian's Abseil has its own string_view type).
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

GrpcAuthorizer::GrpcAuthorizer(TokenSet tokens, std::span<const MethodAccess> table,
                               RefusalListener listener, absl::Duration log_interval)
    : GrpcAuthorizer(std::move(tokens), ClientCertificateMap(), table, std::move(listener),
                     log_interval) {}

GrpcAuthorizer::GrpcAuthorizer(TokenSet tokens, ClientCertificateMap certificates,
                               std::span<const MethodAccess> table, RefusalListener listener,
                               absl::Duration log_interval)
    : tokens_(std::move(tokens)),
      certificates_(std::move(certificates)),
      table_(table),
      listener_(std::move(listener)),
      limiter_(log_interval) {}

AuthDecision GrpcAuthorizer::Decide(std::string_view full_method,
                                    const std::vector<std::string_view>& authorization) const {
  return Decide(full_method, authorization, PeerCertificate());
}

AuthDecision GrpcAuthorizer::Decide(std::string_view full_method,
                                    const std::vector<std::string_view>& authorization,
                                    const PeerCertificate& peer) const {
  AuthDecision d;
  std::optional<MethodAccess> access = FindMethodAccess(table_, full_method);
  if (!access) {
    d.outcome = AuthOutcome::kPermissionDenied;
    d.reason = RefusalReason::kUnknownMethod;
    return d;
  }
  if (access->is_public) {
    d.outcome = AuthOutcome::kOk;
    d.reason = RefusalReason::kNone;
    return d;
  }
  if (authorization.size() > 1) {
    d.reason = RefusalReason::kMalformedCredential;
    return d;
  }
  if (authorization.empty() && !certificates_.empty() && peer.present) {
    // No token: the verified client certificate is the credential.
    const ClientCertificateEntry* entry = certificates_.Find(peer.name);
    if (peer.name.empty() || entry == nullptr) {
      d.reason = RefusalReason::kUnmappedCertificate;
      return d;
    }
    d.certificate = entry;
    if (!RoleSatisfies(entry->role, access->role)) {
      d.outcome = AuthOutcome::kPermissionDenied;
      d.reason = RefusalReason::kWrongRole;
      return d;
    }
    d.outcome = AuthOutcome::kOk;
    d.reason = RefusalReason::kNone;
    return d;
  }
  return CheckAuthorizationHeader(tokens_, authorization.empty() ? "" : authorization.front(),
                                  access->role);
}

grpc::Status GrpcAuthorizer::Check(const grpc::ServerContextBase& context,
                                   std::string_view full_method) const {
  std::vector<std::string_view> values;
  const auto& metadata = context.client_metadata();
  auto [begin, end] = metadata.equal_range("authorization");
  for (auto it = begin; it != end; ++it) {
    values.emplace_back(it->second.data(), it->second.size());
  }
  PeerCertificate peer;
  if (values.empty() && !certificates_.empty()) {
    std::shared_ptr<const grpc::AuthContext> auth_context = context.auth_context();
    if (auth_context != nullptr) peer = VerifiedPeerCertificate(*auth_context);
  }
  const AuthDecision d = Decide(full_method, values, peer);
  if (d.outcome == AuthOutcome::kOk) return grpc::Status::OK;

  Refusal r;
  r.method = full_method;
  r.peer_host = PeerHost(context.peer());
  r.outcome = d.outcome;
  r.reason = d.reason;
  r.token = d.token;
  r.certificate = d.certificate;
  if (d.reason == RefusalReason::kUnmappedCertificate) r.certificate_name = peer.name;
  r.log = limiter_.ShouldLog(r.peer_host, absl::Now());
  if (listener_) listener_(r);

  switch (d.reason) {
    case RefusalReason::kMissingCredential:
      if (!certificates_.empty()) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "no credential: this heapwatchd requires 'authorization: Bearer "
                            "SECRET' metadata (heapwatchctl --token-file PATH) or a client "
                            "certificate named in auth.client_certificates (heapwatchctl "
                            "--tls-cert FILE --tls-key FILE)");
      }
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "no credential: this heapwatchd requires 'authorization: Bearer SECRET' "
                          "metadata (heapwatchctl --token-file PATH)");
    case RefusalReason::kUnmappedCertificate:
      return grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          peer.name.empty()
              ? std::string("client certificate without a single valid commonName; no token")
              : absl::StrCat("client certificate '", peer.name,
                             "' is not named in auth.client_certificates; no token"));
    case RefusalReason::kMalformedCredential:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "malformed credential: expected one 'authorization: Bearer SECRET'");
    case RefusalReason::kUnknownCredential:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown credential");
    case RefusalReason::kWrongRole: {
      std::optional<MethodAccess> access = FindMethodAccess(table_, full_method);
      if (d.certificate != nullptr) {
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                            absl::StrCat("client certificate '", d.certificate->name, "' has role ",
                                         AV(RoleName(d.certificate->role)), "; ", AV(full_method),
                                         " needs role ", AV(RoleName(access->role))));
      }
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("token '", d.token->name, "' has role ", AV(RoleName(d.token->role)), "; ",
                       AV(full_method), " needs role ", AV(RoleName(access->role))));
    }
    case RefusalReason::kUnknownMethod:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat(AV(full_method), " has no entry in the access table"));
    case RefusalReason::kNone:
      break;
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, "authorization check failed");
}

}  // namespace heapwatch::auth
