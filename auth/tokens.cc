#include "auth/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"

namespace heapwatch::auth {
namespace {

// std::string_view -> absl::string_view (Debian's Abseil has its own string_view type).
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsPrintable(unsigned char c) { return c >= 0x20 && c <= 0x7e; }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '@' || c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<Sha256Digest> ParseDigestHex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  Sha256Digest d{};
  for (size_t i = 0; i < 32; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return d;
}

std::vector<std::string_view> SplitBlanks(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAgent:
      return "agent";
    case Role::kRead:
      return "read";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::optional<Role> ParseRole(std::string_view text) {
  if (text == "agent") return Role::kAgent;
  if (text == "read") return Role::kRead;
  if (text == "admin") return Role::kAdmin;
  return std::nullopt;
}

bool RoleSatisfies(Role have, Role required) {
  switch (required) {
    case Role::kAgent:
      return have == Role::kAgent;
    case Role::kRead:
      return have == Role::kRead || have == Role::kAdmin;
    case Role::kAdmin:
      return have == Role::kAdmin;
  }
  return false;
}

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest out{};
  unsigned int len = 0;
  // EVP_Digest only fails on allocation failure or a missing algorithm: both are broken invariants.
  HW_CHECK(EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) == 1);
  HW_CHECK(len == out.size());
  return out;
}

std::string DigestHex(const Sha256Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint8_t b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool ConstantTimeEqual(const Sha256Digest& a, const Sha256Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

StatusOr<TokenSet> TokenSet::Parse(std::string_view text, std::string_view source) {
  if (text.size() > kMaxTokensFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(AV(source), ": tokens file is larger than ", kMaxTokensFileBytes, " bytes"));
  }
  TokenSet set;
  std::map<std::string, int, std::less<>> names;  // name -> line
  std::map<Sha256Digest, int> hashes;             // hash -> line
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    auto fail = [&](std::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(AV(source), ":", line_no, ": ", AV(what)));
    };
    if (line.size() > kMaxTokenLineBytes) {
      return fail(absl::StrCat("line is longer than ", kMaxTokenLineBytes, " bytes"));
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    for (size_t i = 0; i < line.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(line[i]);
      if (!IsPrintable(c) && c != '\t') {
        return fail(absl::StrCat("byte 0x", absl::Hex(c, absl::kZeroPad2), " at column ", i + 1,
                                 " is not printable ASCII"));
      }
    }
    size_t first = 0;
    while (first < line.size() && IsBlank(line[first])) ++first;
    if (first == line.size() || line[first] == '#') continue;
    std::vector<std::string_view> fields = SplitBlanks(line);
    if (fields.size() != 3) {
      return fail(absl::StrCat("expected 3 fields 'ROLE NAME SHA256HEX', found ", fields.size()));
    }
    TokenEntry entry;
    entry.line = line_no;
    std::optional<Role> role = ParseRole(fields[0]);
    if (!role) {
      std::string_view shown = fields[0].substr(0, 32);
      return fail(absl::StrCat("unknown role '", AV(shown), "' (expected agent, read or admin)"));
    }
    entry.role = *role;
    std::string_view name = fields[1];
    if (name.size() > kMaxTokenNameBytes) {
      return fail(absl::StrCat("name is longer than ", kMaxTokenNameBytes, " characters"));
    }
    for (char c : name) {
      if (!IsNameChar(c)) {
        return fail(
            absl::StrCat("name '", AV(name), "' has a character other than A-Z a-z 0-9 . _ @ -"));
      }
    }
    entry.name = std::string(name);
    std::optional<Sha256Digest> digest = ParseDigestHex(fields[2]);
    if (!digest) {
      return fail(absl::StrCat("the hash of '", AV(name), "' is not 64 hex digits (",
                               fields[2].size(),
                               " characters); write the SHA-256 of the secret, not the secret"));
    }
    entry.sha256 = *digest;
    if (auto it = names.find(name); it != names.end()) {
      return fail(absl::StrCat("duplicate name '", AV(name), "' (first on line ", it->second, ")"));
    }
    if (auto it = hashes.find(entry.sha256); it != hashes.end()) {
      return fail(absl::StrCat("'", AV(name), "' has the same secret as line ", it->second));
    }
    if (set.entries_.size() >= kMaxTokens) {
      return fail(absl::StrCat("more than ", kMaxTokens, " tokens"));
    }
    names.emplace(entry.name, line_no);
    hashes.emplace(entry.sha256, line_no);
    set.entries_.push_back(std::move(entry));
  }
  if (set.entries_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(AV(source), ": tokens file holds no token"));
  }
  return set;
}

StatusOr<TokenSet> TokenSet::Load(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    int err = errno;
    std::string message = absl::StrCat("cannot read tokens file ", path, ": ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::FailedPreconditionError(message);
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("tokens file ", path, " is not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::PermissionDeniedError(absl::StrCat("cannot open tokens file ", path));
  }
  std::string text(kMaxTokensFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    return absl::FailedPreconditionError(absl::StrCat("cannot read tokens file ", path));
  text.resize(static_cast<size_t>(in.gcount()));
  return Parse(text, path);
}

const TokenEntry* TokenSet::Match(std::string_view secret) const {
  if (secret.empty() || secret.size() > kMaxSecretBytes) return nullptr;
  const Sha256Digest digest = Sha256(secret);
  // `openssl rand -hex 32 | tee secret | sha256sum` hashes the secret with the newline `tee` wrote.
  const Sha256Digest with_newline = Sha256(std::string(secret) + "\n");
  const TokenEntry* found = nullptr;
  for (const TokenEntry& e : entries_) {
    // No early exit: every entry is compared with both digests.
    const bool equal = ConstantTimeEqual(e.sha256, digest);
    const bool equal_nl = ConstantTimeEqual(e.sha256, with_newline);
    if (equal || equal_nl) found = &e;
  }
  return found;
}

}  // namespace heapwatch::auth
