// The server-side credential check for any of heapwatchd's gRPC services: each handler calls
// GrpcAuthorizer::Check first and returns its status when it is not OK. The role each method needs
// comes from one table (auth/method_roles.h); the credential is the call's `authorization: Bearer
// SECRET` metadata checked against a TokenSet (auth/tokens.h, auth/authorize.h), or, when the call
// has no such metadata, the verified TLS client certificate's name looked up in a
// ClientCertificateMap (auth/tls.h; docs/security.md "Client certificates"). A presented token is
// always the credential: a wrong token is refused even on a connection with a mapped certificate.
//
// Errors returned by Check: UNAUTHENTICATED without a valid credential (none, malformed, given
// twice, unknown secret; no token and a client certificate that is not mapped,
// kUnmappedCertificate); PERMISSION_DENIED for a valid token whose role does not allow the method,
// and for a method missing from the table. Every refusal is reported to the listener (the daemon
// counts it in heapwatch_auth_failures_total{reason} and logs it when Refusal::log is set: the
// first refusal of a peer host, then at most one a minute per host). Neither the status message nor
// the Refusal holds a secret.
//
// Thread-safety: Check may be called concurrently from gRPC's threads; the listener is called on
// those threads and must be thread-safe.
#ifndef HEAPWATCH_AUTH_GRPC_AUTH_H_
#define HEAPWATCH_AUTH_GRPC_AUTH_H_

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auth/authorize.h"
#include "auth/method_roles.h"
#include "auth/tls.h"
#include "auth/tokens.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace heapwatch::auth {

struct Refusal {
  std::string_view method;  // full method name
  std::string peer_host;    // PeerHost(context.peer())
  AuthOutcome outcome = AuthOutcome::kUnauthenticated;
  RefusalReason reason = RefusalReason::kMissingCredential;
  const TokenEntry* token = nullptr;  // the valid token of a kWrongRole refusal, else null
  // The mapped client certificate of a kWrongRole refusal, else null.
  const ClientCertificateEntry* certificate = nullptr;
  // The client certificate's name of a kUnmappedCertificate refusal (validated printable ASCII,
  // ValidateCertificateName; empty when the certificate has no usable name).
  std::string certificate_name;
  bool log = false;                   // RefusalLogLimiter said this one should be logged
};
using RefusalListener = std::function<void(const Refusal&)>;

class GrpcAuthorizer {
 public:
  // `table` must outlive the authorizer (QueryListenerAccessTable() is static). `listener` may be
  // null.
  GrpcAuthorizer(TokenSet tokens, std::span<const MethodAccess> table, RefusalListener listener,
                 absl::Duration log_interval = absl::Minutes(1));
  // The same, also accepting verified TLS client certificates named in `certificates` (calls
  // without a token). An empty map accepts tokens only.
  GrpcAuthorizer(TokenSet tokens, ClientCertificateMap certificates,
                 std::span<const MethodAccess> table, RefusalListener listener,
                 absl::Duration log_interval = absl::Minutes(1));

  // OK when the call may proceed; see the header comment for the errors. O(len(metadata) + tokens).
  grpc::Status Check(const grpc::ServerContextBase& context, std::string_view full_method) const;

  // The decision for `full_method` given the call's `authorization` metadata values (none, one or
  // several), without a gRPC context. Public methods are kOk whatever the metadata.
  AuthDecision Decide(std::string_view full_method,
                      const std::vector<std::string_view>& authorization) const;
  // The same with the call's client certificate (VerifiedPeerCertificate), used when
  // `authorization` is empty and the certificate map is not.
  AuthDecision Decide(std::string_view full_method,
                      const std::vector<std::string_view>& authorization,
                      const PeerCertificate& peer) const;

  const TokenSet& tokens() const { return tokens_; }
  const ClientCertificateMap& certificates() const { return certificates_; }

 private:
  const TokenSet tokens_;
  const ClientCertificateMap certificates_;
  const std::span<const MethodAccess> table_;
  const RefusalListener listener_;
  mutable RefusalLogLimiter limiter_;
};

}  // namespace heapwatch::auth

#endif  // HEAPWATCH_AUTH_GRPC_AUTH_H_
