#include "ctl/token_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace heapwatch::ctl {
namespace {

constexpr size_t kMaxSecretBytes = 4096;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

StatusOr<std::string> ParseTokenFileText(std::string_view text, std::string_view what) {
  std::string_view line = text.substr(0, text.find('\n'));
  while (!line.empty() && IsBlank(line.front())) line.remove_prefix(1);
  while (!line.empty() && IsBlank(line.back())) line.remove_suffix(1);
  if (line.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token file ", std::string(what), ": its first line is empty (expected the secret)"));
  }
  if (line.size() > kMaxSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", std::string(what),
                                                   ": the secret is longer than ", kMaxSecretBytes,
                                                   " bytes"));
  }
  for (char c : line) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat("token file ", std::string(what),
                       ": the secret holds a blank or a byte that is not printable ASCII"));
    }
  }
  return std::string(line);
}

Status LoadToken(GlobalOptions* global) {
  if (global->token_file.empty()) {
    const char* env = std::getenv("HEAPWATCH_TOKEN_FILE");
    if (env == nullptr || *env == '\0') return absl::OkStatus();
    global->token_file = env;
  }
  std::ifstream in(global->token_file, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string message =
        absl::StrCat("cannot read token file ", global->token_file, ": ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(message) : absl::NotFoundError(message);
  }
  std::string text(kMaxSecretBytes + 2, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  HW_ASSIGN_OR_RETURN(global->token, ParseTokenFileText(text, global->token_file));
  return absl::OkStatus();
}

}  // namespace heapwatch::ctl
