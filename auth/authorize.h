// Deciding whether one request may proceed, independent of the transport: the check behind the gRPC
// services (auth/grpc_auth.h) and the web pages (an HTTP `Authorization` header). docs/security.md
// describes the roles and the outcomes.
//
// Thread-safety: the free functions are pure; RefusalLogLimiter is thread-safe.
#ifndef HEAPWATCH_AUTH_AUTHORIZE_H_
#define HEAPWATCH_AUTH_AUTHORIZE_H_

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/time/time.h"
#include "auth/tokens.h"

namespace heapwatch::auth {

struct ClientCertificateEntry;  // auth/tls.h

// The outcome of a check. kUnauthenticated maps to gRPC UNAUTHENTICATED / HTTP 401,
// kPermissionDenied to PERMISSION_DENIED / HTTP 403.
enum class AuthOutcome { kOk, kUnauthenticated, kPermissionDenied };

// Why a request was refused: the `reason` label of heapwatch_auth_failures_total.
enum class RefusalReason {
  kNone,                 // not refused
  kMissingCredential,    // no Authorization header / metadata            -> kUnauthenticated
  kMalformedCredential,  // not "Bearer SECRET", or given more than once   -> kUnauthenticated
  kUnknownCredential,    // a secret that matches no token                 -> kUnauthenticated
  kWrongRole,            // a valid token whose role does not allow it     -> kPermissionDenied
  kUnknownMethod,        // an RPC missing from the method table (fails closed) -> kPermissionDenied
  // No token, and a verified client certificate whose name is not in auth.client_certificates (or
  // that has no usable name; auth/tls.h)                                  -> kUnauthenticated
  kUnmappedCertificate,
};
// "none", "missing_credential", "malformed_credential", "unknown_credential", "wrong_role",
// "unknown_method", "unmapped_certificate".
std::string_view RefusalReasonName(RefusalReason reason);
inline constexpr RefusalReason kAllRefusalReasons[] = {
    RefusalReason::kMissingCredential, RefusalReason::kMalformedCredential,
    RefusalReason::kUnknownCredential, RefusalReason::kWrongRole,
    RefusalReason::kUnknownMethod,     RefusalReason::kUnmappedCertificate};

struct AuthDecision {
  AuthOutcome outcome = AuthOutcome::kUnauthenticated;
  RefusalReason reason = RefusalReason::kMissingCredential;
  // The matching token (its name and role; never its secret), or null when none matched. Points
  // into the TokenSet given to the check.
  const TokenEntry* token = nullptr;
  // The mapped client certificate (auth/tls.h) when it was the credential, else null. Points into
  // the ClientCertificateMap given to the check.
  const ClientCertificateEntry* certificate = nullptr;
};

// Checks the value of an `Authorization` header (HTTP) or `authorization` metadata (gRPC) against
// `tokens` for an action that needs `required`. `header` is the whole value, e.g. "Bearer 3f2a...";
// the scheme is case-insensitive, blanks around the value and between scheme and secret are
// ignored; an empty `header` means it was absent. The secret is compared in constant time
// (TokenSet::Match). Returns kOk, kUnauthenticated (missing, malformed or unknown credential) or
// kPermissionDenied (a valid token of a role that does not satisfy `required`, RoleSatisfies).
// O(len(header) + tokens).
AuthDecision CheckAuthorizationHeader(const TokenSet& tokens, std::string_view header,
                                      Role required);

// Whether a listen address ("host:port", "[v6]:port", "unix:PATH", "unix-abstract:NAME") only
// accepts connections from this machine: localhost, 127.0.0.0/8, ::1 and UNIX sockets. "0.0.0.0",
// "[::]", an empty host and every other name are not loopback (an address that cannot be parsed is
// not either).
bool IsLoopbackListenAddress(std::string_view listen);

// The host part of a gRPC peer string ("ipv4:10.1.2.3:5123" -> "10.1.2.3", "ipv6:[::1]:5123" ->
// "[::1]", "unix:/run/x" -> "unix:/run/x"): a client's connections share it, their ports differ.
std::string PeerHost(std::string_view peer);

// Decides which refusals are logged: the first refusal of a peer host, then at most one per
// `interval` per host. Tracks at most `max_peers` hosts; when full, the oldest entries are
// forgotten (so a flood of distinct hosts still logs, bounded in memory). O(1) amortised per call,
// O(max_peers) when it prunes.
class RefusalLogLimiter {
 public:
  explicit RefusalLogLimiter(absl::Duration interval = absl::Minutes(1), size_t max_peers = 4096);
  // True when a refusal of `peer_host` at `now` should be logged (and records that it was).
  bool ShouldLog(std::string_view peer_host, absl::Time now);

 private:
  const absl::Duration interval_;
  const size_t max_peers_;
  std::mutex mu_;
  std::unordered_map<std::string, absl::Time> last_logged_;  // guarded by mu_
};

}  // namespace heapwatch::auth

#endif  // HEAPWATCH_AUTH_AUTHORIZE_H_
