// API credentials of heapwatchd: roles and the tokens file (docs/security.md).
//
// Tokens file format (one token per line, UTF-8 not allowed: printable ASCII only):
//
//   # comment lines start with '#' (after optional blanks); blank lines are ignored
//   ROLE NAME SHA256HEX
//
//   ROLE       `agent`, `read` or `admin` (lower case)
//   NAME       1..64 characters of [A-Za-z0-9._@-]; unique in the file; names the client in logs
//   SHA256HEX  the SHA-256 (FIPS 180-4) of the secret, or of the secret followed by one newline
//              (what `openssl rand -hex 32 | tee secret | sha256sum` prints), 64 hex digits (either
//              case); unique in the file
//
// Fields are separated by blanks (spaces or tabs); lines end in LF or CRLF. A client presents the
// secret itself (`authorization: Bearer SECRET`); the file holds only its hash, so a leaked tokens
// file does not leak the secrets. Create one with `openssl rand -hex 32 | tee secret | sha256sum`.
//
// Parsing is strict: every malformed line is an InvalidArgument error naming the source and line
// ("tokens.txt:7: unknown role 'reader' (expected agent, read or admin)"). Errors never quote the
// hash field (it might be a secret pasted in the wrong place) and never quote bytes that are not
// printable. Bounds: the file is at most kMaxTokensFileBytes, a line at most kMaxTokenLineBytes, at
// most kMaxTokens tokens.
//
// Thread-safety: TokenSet is immutable after Parse/Load; Match and the free functions are safe to
// call from any number of threads at once.
#ifndef HEAPWATCH_AUTH_TOKENS_H_
#define HEAPWATCH_AUTH_TOKENS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace heapwatch::auth {

// What a credential may do.
//   kRead   every read-only RPC of the query service (agents, suspects, leaks, history, reports)
//   kAdmin  everything kRead may, plus actions that pause or change a JVM (TriggerExtendedDump,
//           loading the agent)
//   kAgent  only the agent gateway (a JVM's in-process agent delivering histograms); nothing of the
//           query service
enum class Role { kAgent, kRead, kAdmin };

// "agent", "read", "admin".
std::string_view RoleName(Role role);
// The inverse of RoleName; nullopt for anything else (case-sensitive).
std::optional<Role> ParseRole(std::string_view text);
// Whether a credential of role `have` may call something that requires `required`: kAdmin satisfies
// kRead and kAdmin; kRead only kRead; kAgent only kAgent.
bool RoleSatisfies(Role have, Role required);

using Sha256Digest = std::array<uint8_t, 32>;

// SHA-256 of `data` (OpenSSL EVP). O(n).
Sha256Digest Sha256(std::string_view data);
// Lower-case hex of a digest (64 characters).
std::string DigestHex(const Sha256Digest& digest);
// Compares two equal-length byte strings in time independent of their contents (CRYPTO_memcmp).
bool ConstantTimeEqual(const Sha256Digest& a, const Sha256Digest& b);

inline constexpr size_t kMaxTokensFileBytes = size_t{1} << 20;  // 1 MiB
inline constexpr size_t kMaxTokenLineBytes = 1024;
inline constexpr size_t kMaxTokens = 10000;
inline constexpr size_t kMaxTokenNameBytes = 64;
// Longest secret Match accepts (a longer presented secret never matches).
inline constexpr size_t kMaxSecretBytes = 4096;

struct TokenEntry {
  Role role = Role::kRead;
  std::string name;
  Sha256Digest sha256{};
  int line = 0;  // 1-based line in the tokens file
};

class TokenSet {
 public:
  // Parses the text of a tokens file (format above). `source` names it in error messages.
  // Errors: InvalidArgument "<source>:<line>: <what>" for a line that is too long, holds a byte
  // that is not printable ASCII (NUL, control characters, UTF-8), has not exactly three fields, an
  // unknown role, a bad name, a hash that is not 64 hex digits, a duplicate name or a duplicate
  // hash; InvalidArgument for a text over kMaxTokensFileBytes, over kMaxTokens tokens, or with no
  // token at all. O(n log n) in the number of tokens.
  static StatusOr<TokenSet> Parse(std::string_view text, std::string_view source);
  // Reads `path` (at most kMaxTokensFileBytes; a longer file is refused without reading it all) and
  // parses it. Errors: NotFound / PermissionDenied / FailedPrecondition (not a regular file) when
  // it cannot be read; otherwise as Parse.
  static StatusOr<TokenSet> Load(const std::string& path);

  // The entry whose hash is SHA-256(`secret`) or SHA-256(`secret` + "\n"), or null. Compares
  // against every entry in constant time per entry (no early exit), so the time depends on the
  // number of tokens, not on the secret. Secrets that are empty or longer than kMaxSecretBytes
  // never match. O(len(secret) + tokens).
  const TokenEntry* Match(std::string_view secret) const;

  const std::vector<TokenEntry>& entries() const { return entries_; }

 private:
  std::vector<TokenEntry> entries_;
};

}  // namespace heapwatch::auth

#endif  // HEAPWATCH_AUTH_TOKENS_H_
