// libFuzzer target over the in-process agent's option string (agent/options.h:
// ParseAgentOptionText, the part of ParseAgentOptions that touches no file; the fuzzer never opens
// the paths the input names). Any byte string is an option string. Besides never crashing, the
// target checks what options.h promises:
//   - a refusal is InvalidArgument with a message of printable ASCII, at most 200 bytes (it quotes
//     at most 64 bytes of the option text);
//   - an input over 8192 bytes is refused;
//   - accepted options have an address that is unix:/PATH or HOST:PORT (port 1..65535), at most 16
//     labels with keys [a-z0-9_]{1,32} and printable values of at most 128 bytes, a buffer of
//     1..100000, backoffs in (0, 1h] with backoff_max >= backoff_initial, TLS on exactly when a TLS
//     option was given, tls_cert with tls_key, no token or PEM read;
//   - accepted options written back as an option string parse to the same options and files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/options.h"

namespace {

using heapwatch::agent::AgentOptionFiles;
using heapwatch::agent::AgentOptions;
using heapwatch::agent::ParseAgentOptionText;

bool Printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool LabelKey(std::string_view k) {
  if (k.empty() || k.size() > 32) return false;
  for (char c : k) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

void CheckAddress(std::string_view a) {
  if (a.empty() || !Printable(a) || a.find(' ') != std::string_view::npos) __builtin_trap();
  if (a.starts_with("unix:")) {
    if (a.size() < 7 || a[5] != '/') __builtin_trap();
    return;
  }
  size_t colon = a.rfind(':');
  if (colon == std::string_view::npos || colon == 0) __builtin_trap();
  int port = 0;
  std::string digits(a.substr(colon + 1));
  if (!absl::SimpleAtoi(digits, &port) || port < 1 || port > 65535) __builtin_trap();
}

void CheckAccepted(const AgentOptions& o, const AgentOptionFiles& f) {
  CheckAddress(o.address);
  if (o.labels.size() > 16) __builtin_trap();
  for (const auto& [k, v] : o.labels) {
    if (!LabelKey(k) || v.size() > 128 || !Printable(v)) __builtin_trap();
  }
  if (o.buffer_capacity < 1 || o.buffer_capacity > 100000) __builtin_trap();
  for (absl::Duration d : {o.backoff_initial, o.backoff_max}) {
    if (d <= absl::ZeroDuration() || d > absl::Hours(1)) __builtin_trap();
  }
  if (o.backoff_max < o.backoff_initial) __builtin_trap();
  const bool tls_given =
      !f.tls_ca.empty() || !f.tls_cert.empty() || !f.tls_key.empty() || !o.tls_server_name.empty();
  if (o.tls != tls_given) __builtin_trap();
  if (f.tls_cert.empty() != f.tls_key.empty()) __builtin_trap();
  if (!o.tls_server_name.empty() &&
      (o.tls_server_name.size() > 253 || !Printable(o.tls_server_name)))
    __builtin_trap();
  if (!o.token.empty() || !o.tls_ca_pem.empty() || !o.tls_cert_pem.empty() ||
      !o.tls_key_pem.empty()) {
    __builtin_trap();  // nothing is read
  }
}

// The accepted options as an option string (the grammar has no escaping; values hold no ',').
std::string WriteBack(const AgentOptions& o, const AgentOptionFiles& f) {
  std::string s = absl::StrCat("address=", o.address, ",buffer=", o.buffer_capacity,
                               ",backoff_initial=", absl::FormatDuration(o.backoff_initial),
                               ",backoff_max=", absl::FormatDuration(o.backoff_max));
  for (const auto& [k, v] : o.labels) absl::StrAppend(&s, ",label.", k, "=", v);
  if (!f.token_file.empty()) absl::StrAppend(&s, ",token_file=", f.token_file);
  if (!f.tls_ca.empty()) absl::StrAppend(&s, ",tls_ca=", f.tls_ca);
  if (!f.tls_cert.empty()) absl::StrAppend(&s, ",tls_cert=", f.tls_cert);
  if (!f.tls_key.empty()) absl::StrAppend(&s, ",tls_key=", f.tls_key);
  if (!o.tls_server_name.empty()) absl::StrAppend(&s, ",tls_server_name=", o.tls_server_name);
  return s;
}

bool Same(const AgentOptions& a, const AgentOptionFiles& fa, const AgentOptions& b,
          const AgentOptionFiles& fb) {
  return a.address == b.address && a.labels == b.labels && a.buffer_capacity == b.buffer_capacity &&
         a.backoff_initial == b.backoff_initial && a.backoff_max == b.backoff_max &&
         a.tls == b.tls && a.tls_server_name == b.tls_server_name &&
         fa.token_file == fb.token_file && fa.tls_ca == fb.tls_ca && fa.tls_cert == fb.tls_cert &&
         fa.tls_key == fb.tls_key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  AgentOptionFiles files;
  auto options = ParseAgentOptionText(text, &files);
  if (!options.ok()) {
    if (options.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    const std::string_view message(options.status().message().data(),
                                   options.status().message().size());
    if (message.empty() || message.size() > 200 || !Printable(message)) __builtin_trap();
    return 0;
  }
  if (size > 8192) __builtin_trap();
  CheckAccepted(*options, files);
  const std::string again = WriteBack(*options, files);
  AgentOptionFiles files2;
  auto reparsed = ParseAgentOptionText(again, &files2);
  // The written-back string may exceed 8192 bytes only when the input did too, which it did not,
  // unless defaults were added: at most ~80 bytes of buffer= and backoff options.
  if (again.size() > 8192) return 0;
  if (!reparsed.ok()) __builtin_trap();
  if (!Same(*options, files, *reparsed, files2)) __builtin_trap();
  return 0;
}
