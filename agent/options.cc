#include "agent/options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace heapwatch::agent {
namespace {

constexpr size_t kMaxOptionsBytes = 8192;
constexpr size_t kMaxLabels = 16;
constexpr size_t kMaxLabelKey = 32;
constexpr size_t kMaxLabelValue = 128;
constexpr size_t kMaxTokenBytes = 4096;
constexpr size_t kMaxTokenFileBytes = 64 * 1024;
constexpr size_t kMaxPemBytes = 1 << 20;

bool IsPrintable(absl::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// What an error message quotes of the option text: at most `max` bytes, non-printable bytes as '?',
// "..." when cut (the option string is the operator's, but it may hold anything).
std::string Quote(absl::string_view s, size_t max = 64) {
  std::string out;
  for (unsigned char c : s.substr(0, max))
    out += c >= 0x20 && c <= 0x7e ? static_cast<char>(c) : '?';
  if (s.size() > max) out += "...";
  return out;
}

// Opens `path` for reading when it is a regular file: never blocks on a FIFO or terminal (e.g.
// /dev/stdin), which would stall the JVM's start. Returns nullptr with errno set otherwise (EINVAL
// for a file that is not regular).
std::FILE* OpenRegularFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return nullptr;
  }
  std::FILE* f = fdopen(fd, "rb");
  if (f == nullptr) {
    int err = errno;
    close(fd);
    errno = err;
  }
  return f;
}

bool IsLabelKey(absl::string_view key) {
  if (key.empty() || key.size() > kMaxLabelKey) return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// "unix:/absolute/path" or "HOST:PORT" with a decimal port in 1..65535.
Status CheckAddress(absl::string_view address) {
  if (address.empty()) return absl::InvalidArgumentError("address= is empty");
  if (!IsPrintable(address) || address.find(' ') != absl::string_view::npos) {
    return absl::InvalidArgumentError("address= must be printable without blanks");
  }
  if (absl::StartsWith(address, "unix:")) {
    if (address.size() < 7 || address[5] != '/') {
      return absl::InvalidArgumentError("address=unix:PATH needs an absolute path");
    }
    return absl::OkStatus();
  }
  size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("address=", Quote(address), " is neither unix:PATH nor HOST:PORT"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("address=", Quote(address), ": bad port"));
  }
  return absl::OkStatus();
}

StatusOr<absl::Duration> ParsePositiveDuration(absl::string_view key, absl::string_view value) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration() || d > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=", Quote(value), ": need a duration in (0, 1h], e.g. 500ms"));
  }
  return d;
}

StatusOr<std::string> ReadPemFile(absl::string_view key, const std::string& path) {
  std::FILE* f = OpenRegularFile(path);
  if (f == nullptr) {
    const char* why = errno == EINVAL ? "not a regular file" : std::strerror(errno);
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=", Quote(path, 256), ": cannot read: ", why));
  }
  std::string content(kMaxPemBytes + 1, '\0');
  size_t n = std::fread(content.data(), 1, content.size(), f);
  std::fclose(f);
  content.resize(n);
  if (n == 0 || n > kMaxPemBytes || content.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=", Quote(path, 256), ": not a PEM file of at most 1 MiB"));
  }
  return content;
}

}  // namespace

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::FILE* f = OpenRegularFile(path);
  if (f == nullptr) {
    int err = errno;
    std::string msg = absl::StrCat("token_file ", Quote(path, 256), ": ",
                                   err == EINVAL ? "not a regular file" : std::strerror(err));
    if (err == EINVAL) return absl::InvalidArgumentError(msg);
    if (err == ENOENT) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::UnavailableError(msg);
  }
  std::string content(kMaxTokenFileBytes + 1, '\0');
  size_t n = std::fread(content.data(), 1, content.size(), f);
  std::fclose(f);
  if (n > kMaxTokenFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("token_file ", Quote(path, 256), ": larger than 64 KiB"));
  }
  content.resize(n);
  absl::string_view first = content;
  first = first.substr(0, first.find('\n'));
  first = absl::StripAsciiWhitespace(first);
  if (first.empty() || first.size() > kMaxTokenBytes || !IsPrintable(first)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token_file ", Quote(path, 256), ": the first line must be 1..4096 printable ASCII bytes"));
  }
  return std::string(first);
}

StatusOr<AgentOptions> ParseAgentOptionText(std::string_view std_text, AgentOptionFiles* files) {
  absl::string_view text(std_text.data(), std_text.size());
  if (text.size() > kMaxOptionsBytes) {
    return absl::InvalidArgumentError("options longer than 8192 bytes");
  }
  *files = AgentOptionFiles();
  AgentOptions options;
  std::set<std::string> seen;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", Quote(item), "' is not KEY=VALUE"));
    }
    absl::string_view key = item.substr(0, eq);
    absl::string_view value = item.substr(eq + 1);
    if (!IsPrintable(key)) return absl::InvalidArgumentError("option key not printable");
    if (!seen.insert(std::string(key)).second) {
      return absl::InvalidArgumentError(absl::StrCat("option ", Quote(key), " given twice"));
    }
    if (key == "address") {
      HW_RETURN_IF_ERROR(CheckAddress(value));
      options.address = std::string(value);
    } else if (key == "token_file") {
      if (value.empty()) return absl::InvalidArgumentError("token_file= is empty");
      files->token_file = std::string(value);
    } else if (absl::StartsWith(key, "label.")) {
      absl::string_view label = key.substr(6);
      if (!IsLabelKey(label)) {
        return absl::InvalidArgumentError(
            absl::StrCat("label key '", Quote(label), "' must match [a-z0-9_]{1,32}"));
      }
      if (value.size() > kMaxLabelValue || !IsPrintable(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("label.", label, ": value must be printable, at most 128 bytes"));
      }
      if (options.labels.size() == kMaxLabels) {
        return absl::InvalidArgumentError("more than 16 labels");
      }
      options.labels.emplace(std::string(label), std::string(value));
    } else if (key == "buffer") {
      size_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 1 || n > 100000) {
        return absl::InvalidArgumentError(
            absl::StrCat("buffer=", Quote(value), ": need 1..100000"));
      }
      options.buffer_capacity = n;
    } else if (key == "backoff_initial") {
      HW_ASSIGN_OR_RETURN(options.backoff_initial, ParsePositiveDuration(key, value));
    } else if (key == "backoff_max") {
      HW_ASSIGN_OR_RETURN(options.backoff_max, ParsePositiveDuration(key, value));
    } else if (key == "tls_ca" || key == "tls_cert" || key == "tls_key") {
      if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(key, "= is empty"));
      (key == "tls_ca"     ? files->tls_ca
       : key == "tls_cert" ? files->tls_cert
                           : files->tls_key) = std::string(value);
      options.tls = true;
    } else if (key == "dump_dir") {
      if (value.empty() || value[0] != '/' || value.size() > 1024 || !IsPrintable(value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dump_dir=", Quote(value), ": need an absolute path of at most 1024 printable bytes"));
      }
      while (value.size() > 1 && value.back() == '/') value.remove_suffix(1);
      options.dump_dir = std::string(value);
    } else if (key == "tls_server_name") {
      if (value.empty() || value.size() > 253 || !IsPrintable(value)) {
        return absl::InvalidArgumentError("tls_server_name= must be a host name");
      }
      options.tls_server_name = std::string(value);
      options.tls = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '", Quote(key), "'"));
    }
  }
  if (options.address.empty()) {
    return absl::InvalidArgumentError("address= is required (unix:/path/sock or HOST:PORT)");
  }
  if (files->tls_cert.empty() != files->tls_key.empty()) {
    return absl::InvalidArgumentError("tls_cert= and tls_key= go together (mTLS)");
  }
  if (options.backoff_max < options.backoff_initial) options.backoff_max = options.backoff_initial;
  return options;
}

StatusOr<AgentOptions> ParseAgentOptions(std::string_view text) {
  AgentOptionFiles files;
  HW_ASSIGN_OR_RETURN(AgentOptions options, ParseAgentOptionText(text, &files));
  if (!files.tls_ca.empty()) {
    HW_ASSIGN_OR_RETURN(options.tls_ca_pem, ReadPemFile("tls_ca", files.tls_ca));
  }
  if (!files.tls_cert.empty()) {
    HW_ASSIGN_OR_RETURN(options.tls_cert_pem, ReadPemFile("tls_cert", files.tls_cert));
  }
  if (!files.tls_key.empty()) {
    HW_ASSIGN_OR_RETURN(options.tls_key_pem, ReadPemFile("tls_key", files.tls_key));
  }
  if (!files.token_file.empty()) {
    HW_ASSIGN_OR_RETURN(options.token, ReadTokenFile(files.token_file));
  }
  // Checked at load, so that a wrong dump_dir= is reported when the JVM starts rather than at the
  // first extended dump, perhaps weeks later.
  struct stat st {};
  if (stat(options.dump_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      access(options.dump_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("dump_dir=", Quote(options.dump_dir, 256),
                                                    ": not a directory this process can write"));
  }
  return options;
}

}  // namespace heapwatch::agent
