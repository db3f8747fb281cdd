// TLS for heapwatch's gRPC listeners and clients (docs/security.md, "TLS" and "Client
// certificates"): server credentials from PEM files, client (channel) credentials from PEM files,
// and the name of the verified client certificate of a call (mutual TLS), mapped to a role.
//
// Any gRPC listener of heapwatchd uses it with one call each:
//   auto creds = auth::MakeServerCredentials(files, policy);      // once, at start-up
//   builder.AddListeningPort(address, *creds, &port);
// and, in a handler, auth::VerifiedPeerCertificate(*context.auth_context()) for the client
// certificate's name (GrpcAuthorizer does this itself when given a ClientCertificateMap).
//
// The files are read once, when the credentials are made; a changed file takes effect on restart.
// PEM formats: RFC 7468 (CERTIFICATE, PRIVATE KEY / RSA PRIVATE KEY / EC PRIVATE KEY). A private
// key must not be encrypted (there is nobody to type a passphrase). Every file is at most
// kMaxPemFileBytes.
//
// The client certificate's name is its subject's commonName (RFC 5280 section 4.1.2.6,
// X.520 id-at-commonName): client certificates are issued by the CA given as the client CA, which
// is dedicated to heapwatch's clients, so the name is what that CA vouches for; one certificate has
// exactly one name and so one role (a certificate with several commonNames, or none, has no name).
// This is also how Kubernetes and etcd name the users of client certificates. SANs are not used:
// they name hosts, and a certificate with several would need a rule to pick one.
//
// Thread-safety: every function is safe to call from any thread; ClientCertificateMap is immutable
// after Make.
#ifndef HEAPWATCH_AUTH_TLS_H_
#define HEAPWATCH_AUTH_TLS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/tokens.h"
#include "common/status.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace heapwatch::auth {

inline constexpr size_t kMaxPemFileBytes = size_t{1} << 20;  // 1 MiB
// Longest client certificate name (RFC 5280 ub-common-name).
inline constexpr size_t kMaxCertificateNameBytes = 64;

// The PEM files of a TLS listener. All empty: plaintext.
struct TlsServerFiles {
  std::string cert_file;  // the server's certificate, then any intermediate CA certificates
  std::string key_file;   // the private key of cert_file's first certificate
  // CA certificates that sign client certificates. Empty: no client certificate is requested.
  std::string client_ca_file;
};

// Whether a TLS listener with a client CA requires a client certificate in the handshake.
//   kOptional: requested and verified when sent (a client without one may still present a token);
//              gRPC's GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY.
//   kRequired: the handshake fails without a certificate signed by the client CA;
//              GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY.
// Either way a certificate that does not verify against the client CA (another CA, expired, not
// for client authentication) fails the handshake.
enum class ClientCertificatePolicy { kOptional, kRequired };

// Server credentials for grpc::ServerBuilder::AddListeningPort. Without any file: plaintext
// (grpc::InsecureServerCredentials). Otherwise TLS with cert_file / key_file, and client
// certificates verified against client_ca_file when it is set (`policy`).
// Errors (each message names the file): InvalidArgument when only one of cert_file / key_file is
// given, or client_ca_file without them; NotFound / PermissionDenied / FailedPrecondition (not a
// regular file) when a file cannot be read; InvalidArgument for a file over kMaxPemFileBytes, a
// certificate file without a PEM certificate or with one that does not parse, an expired or
// not-yet-valid server certificate, a key that does not parse or is encrypted, a key that does
// not belong to the certificate. O(size of the files).
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsServerFiles& files, ClientCertificatePolicy policy);

// The PEM files of a TLS client.
struct TlsClientFiles {
  // CA certificates that verify the server. Empty: gRPC's default roots.
  std::string ca_file;
  // Client certificate (then intermediates) and its private key, for mutual TLS; both or neither.
  std::string cert_file;
  std::string key_file;
};

// Channel credentials for grpc::CreateChannel: TLS, verifying the server against ca_file, with the
// client certificate when given. Errors as MakeServerCredentials (each names the file); also
// InvalidArgument when only one of cert_file / key_file is given.
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeClientCredentials(
    const TlsClientFiles& files);

// What the TLS handshake established about the client of a call.
struct PeerCertificate {
  // The client sent a certificate and it verified against the listener's client CA.
  bool present = false;
  // Its subject's single commonName when it is 1..kMaxCertificateNameBytes printable ASCII
  // characters (ValidateCertificateName); empty when the certificate has none, several, or one
  // that is not such a name.
  std::string name;
};

// The verified client certificate of a call (context.auth_context() on the server). Not present on
// a plaintext connection, on TLS without a client certificate, or when gRPC reports no PEM
// certificate. O(size of the certificate).
PeerCertificate VerifiedPeerCertificate(const grpc::AuthContext& context);

// The single subject commonName of the first certificate in `pem`, validated as above. Errors:
// InvalidArgument when `pem` holds no certificate, or the certificate has no commonName, several,
// or one that is not a valid name.
StatusOr<std::string> CertificateCommonName(std::string_view pem);

// OK when `name` may name a client certificate: 1..kMaxCertificateNameBytes bytes of printable
// ASCII (0x20..0x7e) that do not begin or end with a space. Errors: InvalidArgument (the message
// quotes no byte of `name`).
Status ValidateCertificateName(std::string_view name);

struct ClientCertificateEntry {
  std::string name;  // the certificate's subject commonName, compared exactly (case-sensitive)
  Role role = Role::kRead;
};

// The roles of client certificates by name (YAML auth.client_certificates).
class ClientCertificateMap {
 public:
  ClientCertificateMap() = default;
  // Errors: InvalidArgument for a name that ValidateCertificateName refuses (the message gives the
  // entry's position, not the name), more than kMaxTokens entries. O(n log n).
  static StatusOr<ClientCertificateMap> Make(const std::map<std::string, Role>& roles);

  // The entry named exactly `name`, or null. O(log n).
  const ClientCertificateEntry* Find(std::string_view name) const;
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<ClientCertificateEntry> entries_;  // sorted by name, unique
};

}  // namespace heapwatch::auth

#endif  // HEAPWATCH_AUTH_TLS_H_
