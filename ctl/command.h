// heapwatchctl's subcommand interface. Each subcommand registers itself on the CLI11 app and gets a
// run function that is called when the user selected it. To add one (e.g. `analyze`,
// ctl/analyze_command.h), write a function `Subcommand AddXCommand(CLI::App& app)` and list it in
// ctl/ctl.cc.
//
// Exit codes shared by every subcommand: 0 ok, 1 server or runtime error (gRPC status not OK,
// unreadable file), 2 usage error (bad arguments; CLI11 parse errors are mapped to 2 by ctl.cc).
#ifndef HEAPWATCH_CTL_COMMAND_H_
#define HEAPWATCH_CTL_COMMAND_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"

namespace grpc {
class ChannelCredentials;  // grpcpp/security/credentials.h
}  // namespace grpc

namespace heapwatch::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Options given before or after any subcommand.
struct GlobalOptions {
  std::string server = "127.0.0.1:7750";       // heapwatchd's gRPC address (--server)
  bool json = false;                           // --json: machine-readable output
  absl::Duration timeout = absl::Seconds(10);  // deadline of each RPC (--timeout)
  absl::Time now;  // the time relative arguments (-10m) are relative to: the start of the command
  // --token-file / HEAPWATCH_TOKEN_FILE: the file's first line (blanks trimmed) is sent as
  // `authorization: Bearer SECRET` on every call; empty: no credential (ctl/token_file.h).
  std::string token_file;
  std::string token;  // the secret read from token_file
  // TLS (ctl/tls_options.h): --tls-ca / HEAPWATCH_TLS_CA, --tls-cert / HEAPWATCH_TLS_CERT,
  // --tls-key / HEAPWATCH_TLS_KEY, --tls-server-name; channel_credentials is made from the files
  // (null: plaintext).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name;
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials;
};

struct Subcommand {
  CLI::App* app = nullptr;  // owned by the parent CLI::App
  // Runs the subcommand after a successful parse; returns the exit code.
  std::function<int(const GlobalOptions& global, std::ostream& out, std::ostream& err)> run;
};

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_COMMAND_H_
