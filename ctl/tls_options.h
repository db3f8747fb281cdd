// heapwatchctl's TLS options (docs/security.md "TLS"): --tls-ca FILE verifies heapwatchd's
// certificate (and turns TLS on), --tls-cert FILE --tls-key FILE present a client certificate
// (mutual TLS; also turn TLS on, verifying the server against gRPC's default roots unless --tls-ca
// is given), --tls-server-name NAME checks the server certificate for NAME instead of --server's
// host. Each file option falls back on an environment variable when absent: HEAPWATCH_TLS_CA,
// HEAPWATCH_TLS_CERT, HEAPWATCH_TLS_KEY (like HEAPWATCH_TOKEN_FILE, ctl/token_file.h).
//
// Thread-safety: LoadTls reads the environment; call it from one thread before any RPC.
#ifndef HEAPWATCH_CTL_TLS_OPTIONS_H_
#define HEAPWATCH_CTL_TLS_OPTIONS_H_

#include <memory>

#include "common/status.h"
#include "ctl/command.h"
#include "grpcpp/channel.h"

namespace heapwatch::ctl {

// Fills the TLS file options from the environment where absent, then, when any is set, reads the
// files and sets global->channel_credentials (auth::MakeClientCredentials). None set: plaintext
// (channel_credentials stays null). Errors (each names the file): InvalidArgument for
// --tls-server-name without TLS, a certificate without its key or the other way round, a file
// that does not hold what it should, a key that does not belong to the certificate; NotFound /
// PermissionDenied when a file cannot be read.
Status LoadTls(GlobalOptions* global);

// The channel to global.server: TLS with global.channel_credentials (and the
// tls_server_name override) when set, plaintext otherwise. Does not connect.
std::shared_ptr<grpc::Channel> MakeChannel(const GlobalOptions& global);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_TLS_OPTIONS_H_
