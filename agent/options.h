// The option string of libheapwatch_agent.so: what follows '=' in
// `-agentpath:/path/libheapwatch_agent.so=OPTIONS`, or the options of `heapwatchctl agent load`.
//
// Grammar (docs/agent.md): comma-separated KEY=VALUE pairs, no escaping (values cannot contain
// ','):
//   address=unix:/path/sock | address=HOST:PORT
//       the daemon's agent listener (required)
//   token_file=PATH
//       file holding the agent token (first line, surrounding blanks trimmed); sent as
//       `authorization: Bearer SECRET` on every call (agent.proto file comment)
//   label.KEY=VALUE
//       a label (at most 16; KEY [a-z0-9_]{1,32}; VALUE printable ASCII, <= 128 bytes)
//   buffer=N
//       deliveries kept while disconnected, 1..100000 (default 256); oldest dropped
//   backoff_initial=D, backoff_max=D
//       first and longest reconnect delay (absl duration: "500ms", "2s"; default 500ms, 30s)
//   tls_ca=PATH, tls_cert=PATH, tls_key=PATH, tls_server_name=NAME
//       TLS / mTLS (PEM files)
//   dump_dir=PATH
//       absolute path of an existing directory the JVM's user can write, where extended dumps are
//       written (each in its own private subdirectory) before their upload (default /tmp)
// The token is read when the options are parsed, so an unreadable file is reported at load time.
//
// Thread-safety: pure functions (ReadTokenFile reads a file).
#ifndef HEAPWATCH_AGENT_OPTIONS_H_
#define HEAPWATCH_AGENT_OPTIONS_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "common/status.h"

namespace heapwatch::agent {

struct AgentOptions {
  // gRPC target: "unix:/path" or "HOST:PORT" exactly as given.
  std::string address;
  // Secret read from token_file; empty without one.
  std::string token;
  std::map<std::string, std::string> labels;
  size_t buffer_capacity = 256;
  absl::Duration backoff_initial = absl::Milliseconds(500);
  absl::Duration backoff_max = absl::Seconds(30);
  // TLS (grpc::SslCredentials) when `tls`; PEM contents, empty when not given.
  bool tls = false;
  std::string tls_ca_pem;
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string tls_server_name;
  // Where extended dumps are written before their upload (dump_dir=), absolute, without a trailing
  // '/' (except "/" itself).
  std::string dump_dir = "/tmp";
};

// The files the option string names (token_file=, tls_ca=, tls_cert=, tls_key=), empty when not
// given. ParseAgentOptionText returns them unread; ParseAgentOptions reads them.
struct AgentOptionFiles {
  std::string token_file;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
};

// Parses the option string without touching the file system: `*files` receives the paths of the
// files it names, and the returned options hold no token or PEM contents yet (`tls` is set when a
// TLS option is given). Errors: InvalidArgument naming the offending option (unknown key, missing
// '=', missing or malformed address, a bad label, a number or duration out of range, more than 16
// labels, an option given twice, tls_cert= without tls_key= or the reverse, an empty path, a
// dump_dir= that is not an absolute path of at most 1024 printable bytes); a
// message quotes at most 64 bytes of the offending text, non-printable bytes as '?'. Input is
// bounded: at most 8192 bytes. Complexity: O(size). Fuzzed: fuzz/agent_options_fuzzer.cc.
StatusOr<AgentOptions> ParseAgentOptionText(std::string_view text, AgentOptionFiles* files);

// Parses the option string (ParseAgentOptionText), then reads the token and PEM files and checks
// that dump_dir= names a directory the process can write. Errors: those of ParseAgentOptionText;
// InvalidArgument for a PEM file that cannot be read or is not PEM, or a dump_dir= that is not a
// writable directory; those of ReadTokenFile. Input is bounded: at most 8192 bytes. Complexity:
// O(size).
StatusOr<AgentOptions> ParseAgentOptions(std::string_view text);

// Reads an agent token: the first line of the file, blanks trimmed, 1..4096 printable ASCII bytes.
// Errors: NotFound / PermissionDenied / Unavailable (cannot read, naming the path), InvalidArgument
// (empty or not printable, file larger than 64 KiB, or not a regular file: a FIFO or a terminal
// such as /dev/stdin would block the JVM's start).
StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace heapwatch::agent

#endif  // HEAPWATCH_AGENT_OPTIONS_H_
