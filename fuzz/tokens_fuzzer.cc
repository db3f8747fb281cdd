// libFuzzer target over the tokens file parser (auth/tokens.h: TokenSet::Parse, TokenSet::Match).
// Any byte string is parsed as a tokens file. Besides never crashing, the target checks what
// tokens.h promises:
//   - a rejected file is InvalidArgument with a message of printable ASCII only, bounded in length,
//     that does not quote the hash field of the line it names (checked when that field is a long
//     hex run, i.e. looks like a pasted hash or secret);
//   - an accepted file holds 1..kMaxTokens entries with valid, unique names, unique hashes and
//     increasing line numbers, and its entries written back as "ROLE NAME HEX" lines parse to the
//     same entries;
//   - Match never returns an entry whose hash is not SHA-256(secret) or SHA-256(secret + "\n"); and
//     with one more entry for a secret taken from the input, Match finds exactly that entry (when
//     the secret is non-empty and at most kMaxSecretBytes long).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "auth/tokens.h"

namespace {

using heapwatch::auth::kMaxSecretBytes;
using heapwatch::auth::kMaxTokenNameBytes;
using heapwatch::auth::kMaxTokens;
using heapwatch::auth::RoleName;
using heapwatch::auth::Sha256;
using heapwatch::auth::Sha256Digest;
using heapwatch::auth::TokenEntry;
using heapwatch::auth::TokenSet;

constexpr std::string_view kSource = "fuzz.tokens";

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '@' || c == '-';
}

std::string_view Line(std::string_view text, int wanted) {
  size_t pos = 0;
  for (int n = 1; pos <= text.size(); ++n) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (n == wanted) {
      std::string_view line = text.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      return line;
    }
    pos = end + 1;
  }
  return {};
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

void CheckError(const absl::Status& status, std::string_view text) {
  if (status.code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
  const std::string_view message(status.message().data(), status.message().size());
  // Longest message: the source, a line number, and a quoted name of at most kMaxTokenNameBytes.
  if (message.size() > kSource.size() + 256) __builtin_trap();
  for (char c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
      __builtin_trap();
    }
  }
  // "fuzz.tokens:LINE: ..." names a line; its hash field must not be quoted.
  if (message.substr(0, kSource.size() + 1) != std::string(kSource) + ":") __builtin_trap();
  std::string_view rest = message.substr(kSource.size() + 1);
  const size_t colon = rest.find(':');
  int line_no = 0;
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(rest.data(), colon), &line_no)) {
    return;  // a whole-file error ("holds no token", "larger than")
  }
  const std::vector<std::string_view> fields = Fields(Line(text, line_no));
  if (fields.size() != 3) return;
  const std::string_view hash = fields[2];
  if (hash.size() < 20 || !std::all_of(hash.begin(), hash.end(), IsHex)) return;
  if (fields[0].find(hash) != std::string_view::npos) return;
  if (fields[1].find(hash) != std::string_view::npos) return;
  if (message.find(hash) != std::string_view::npos) __builtin_trap();
}

std::string Serialize(const std::vector<TokenEntry>& entries) {
  std::string out;
  for (const TokenEntry& e : entries) {
    out += RoleName(e.role);
    out += " " + e.name + " " + heapwatch::auth::DigestHex(e.sha256) + "\n";
  }
  return out;
}

bool SameEntries(const std::vector<TokenEntry>& a, const std::vector<TokenEntry>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].role != b[i].role || a[i].name != b[i].name || a[i].sha256 != b[i].sha256) {
      return false;
    }
  }
  return true;
}

void CheckAccepted(const TokenSet& set, std::string_view secret) {
  const std::vector<TokenEntry>& entries = set.entries();
  if (entries.empty() || entries.size() > kMaxTokens) __builtin_trap();
  std::set<std::string> names;
  std::set<Sha256Digest> hashes;
  int last_line = 0;
  for (const TokenEntry& e : entries) {
    if (e.name.empty() || e.name.size() > kMaxTokenNameBytes) __builtin_trap();
    if (!std::all_of(e.name.begin(), e.name.end(), IsNameChar)) __builtin_trap();
    if (!names.insert(e.name).second || !hashes.insert(e.sha256).second) __builtin_trap();
    if (e.line <= last_line) __builtin_trap();
    last_line = e.line;
  }

  const std::string written = Serialize(entries);
  auto again = TokenSet::Parse(written, "written");
  if (!again.ok() || !SameEntries(again->entries(), entries)) __builtin_trap();

  // No false match: whatever Match returns hashes to the secret (with or without a newline).
  const Sha256Digest digest = Sha256(secret);
  const Sha256Digest digest_nl = Sha256(std::string(secret) + "\n");
  if (const TokenEntry* hit = set.Match(secret)) {
    if (hit->sha256 != digest && hit->sha256 != digest_nl) __builtin_trap();
  }

  // One more entry for `secret` (its plain hash or the hash with a newline, as sha256sum writes
  // it): Match must find exactly that entry.
  if (entries.size() >= kMaxTokens) return;
  std::string name = "fuzz-extra";
  while (names.count(name) != 0) name += "x";
  if (name.size() > kMaxTokenNameBytes) return;
  const Sha256Digest added = secret.size() % 2 == 0 ? digest : digest_nl;
  if (hashes.count(added) != 0) return;
  auto extended = TokenSet::Parse(
      written + "admin " + name + " " + heapwatch::auth::DigestHex(added) + "\n", "extended");
  if (!extended.ok() || extended->entries().size() != entries.size() + 1) __builtin_trap();
  const TokenEntry* hit = extended->Match(secret);
  const bool matchable = !secret.empty() && secret.size() <= kMaxSecretBytes;
  if (matchable != (hit != nullptr)) __builtin_trap();
  if (hit != nullptr && (hit->name != name || hit->sha256 != added)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto set = TokenSet::Parse(text, kSource);
  if (!set.ok()) {
    CheckError(set.status(), text);
    return 0;
  }
  // The secret: the input's last line (possibly empty), or, for one input length in three, the
  // whole input (which may exceed kMaxSecretBytes).
  const size_t last_newline = text.rfind('\n');
  const std::string_view secret = size % 3 == 0 || last_newline == std::string_view::npos
                                      ? text
                                      : text.substr(last_newline + 1);
  CheckAccepted(*set, secret);
  return 0;
}
