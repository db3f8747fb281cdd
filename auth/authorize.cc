#include "auth/authorize.h"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

namespace heapwatch::auth {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view RefusalReasonName(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::kNone:
      return "none";
    case RefusalReason::kMissingCredential:
      return "missing_credential";
    case RefusalReason::kMalformedCredential:
      return "malformed_credential";
    case RefusalReason::kUnknownCredential:
      return "unknown_credential";
    case RefusalReason::kWrongRole:
      return "wrong_role";
    case RefusalReason::kUnknownMethod:
      return "unknown_method";
    case RefusalReason::kUnmappedCertificate:
      return "unmapped_certificate";
  }
  return "unknown";
}

AuthDecision CheckAuthorizationHeader(const TokenSet& tokens, std::string_view header,
                                      Role required) {
  AuthDecision d;
  header = TrimBlanks(header);
  if (header.empty()) {
    d.reason = RefusalReason::kMissingCredential;
    return d;
  }
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() ||
      !EqualsIgnoreCase(header.substr(0, kScheme.size()), kScheme) ||
      (header[kScheme.size()] != ' ' && header[kScheme.size()] != '\t')) {
    d.reason = RefusalReason::kMalformedCredential;
    return d;
  }
  std::string_view secret = TrimBlanks(header.substr(kScheme.size()));
  if (secret.empty() || secret.find_first_of(" \t") != std::string_view::npos) {
    d.reason = RefusalReason::kMalformedCredential;
    return d;
  }
  const TokenEntry* token = tokens.Match(secret);
  if (token == nullptr) {
    d.reason = RefusalReason::kUnknownCredential;
    return d;
  }
  d.token = token;
  if (!RoleSatisfies(token->role, required)) {
    d.outcome = AuthOutcome::kPermissionDenied;
    d.reason = RefusalReason::kWrongRole;
    return d;
  }
  d.outcome = AuthOutcome::kOk;
  d.reason = RefusalReason::kNone;
  return d;
}

bool IsLoopbackListenAddress(std::string_view listen) {
  if (listen.starts_with("unix:") || listen.starts_with("unix-abstract:")) return true;
  std::string_view host;
  if (!listen.empty() && listen.front() == '[') {
    size_t close = listen.find(']');
    if (close == std::string_view::npos) return false;
    host = listen.substr(1, close - 1);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string_view::npos) return false;
    host = listen.substr(0, colon);
    if (host.find(':') != std::string_view::npos) return false;  // unbracketed IPv6: ambiguous
  }
  if (EqualsIgnoreCase(host, "localhost")) return true;
  std::string h(host);
  in_addr v4;
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::string PeerHost(std::string_view peer) {
  if (peer.starts_with("ipv4:") || peer.starts_with("ipv6:")) {
    std::string_view rest = peer.substr(5);
    size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos) rest = rest.substr(0, colon);
    return std::string(rest);
  }
  return std::string(peer);
}

RefusalLogLimiter::RefusalLogLimiter(absl::Duration interval, size_t max_peers)
    : interval_(interval), max_peers_(std::max<size_t>(max_peers, 1)) {}

bool RefusalLogLimiter::ShouldLog(std::string_view peer_host, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = last_logged_.find(std::string(peer_host));
  if (it != last_logged_.end()) {
    if (now - it->second < interval_) return false;
    it->second = now;
    return true;
  }
  if (last_logged_.size() >= max_peers_) {
    // Forget the older half: bounded memory, and a forgotten peer is merely logged again.
    std::vector<absl::Time> times;
    times.reserve(last_logged_.size());
    for (const auto& [host, t] : last_logged_) times.push_back(t);
    auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
    std::nth_element(times.begin(), mid, times.end());
    const absl::Time cutoff = *mid;
    for (auto i = last_logged_.begin(); i != last_logged_.end();) {
      i = i->second <= cutoff ? last_logged_.erase(i) : std::next(i);
    }
  }
  last_logged_.emplace(std::string(peer_host), now);
  return true;
}

}  // namespace heapwatch::auth
