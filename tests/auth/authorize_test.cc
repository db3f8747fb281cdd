// The transport-independent check (auth/authorize.h): Authorization header values, roles, the
// loopback test of listen addresses, peer hosts and the refusal log limiter.
#include "auth/authorize.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace heapwatch::auth {
namespace {

TokenSet Tokens() {
  auto set = TokenSet::Parse(absl::StrCat("read viewer ", DigestHex(Sha256("r-secret")), "\n",
                                          "admin boss ", DigestHex(Sha256("a-secret")), "\n",
                                          "agent jvm1 ", DigestHex(Sha256("g-secret")), "\n"),
                             "test");
  HW_CHECK(set.ok());
  return *std::move(set);
}

TEST(CheckAuthorizationHeader, OutcomesByCredentialAndRole) {
  const TokenSet tokens = Tokens();
  struct Case {
    std::string header;
    Role required;
    AuthOutcome outcome;
    RefusalReason reason;
  };
  const Case cases[] = {
      {"", Role::kRead, AuthOutcome::kUnauthenticated, RefusalReason::kMissingCredential},
      {"   ", Role::kRead, AuthOutcome::kUnauthenticated, RefusalReason::kMissingCredential},
      {"Bearer r-secret", Role::kRead, AuthOutcome::kOk, RefusalReason::kNone},
      {"bearer   r-secret  ", Role::kRead, AuthOutcome::kOk, RefusalReason::kNone},
      {"BEARER\ta-secret", Role::kAdmin, AuthOutcome::kOk, RefusalReason::kNone},
      {"Bearer a-secret", Role::kRead, AuthOutcome::kOk, RefusalReason::kNone},
      {"Bearer r-secret", Role::kAdmin, AuthOutcome::kPermissionDenied, RefusalReason::kWrongRole},
      {"Bearer g-secret", Role::kRead, AuthOutcome::kPermissionDenied, RefusalReason::kWrongRole},
      {"Bearer g-secret", Role::kAgent, AuthOutcome::kOk, RefusalReason::kNone},
      {"Bearer a-secret", Role::kAgent, AuthOutcome::kPermissionDenied, RefusalReason::kWrongRole},
      {"Bearer wrong", Role::kRead, AuthOutcome::kUnauthenticated,
       RefusalReason::kUnknownCredential},
      {"Bearer r-secretX", Role::kRead, AuthOutcome::kUnauthenticated,
       RefusalReason::kUnknownCredential},
      {"Bearer " + std::string(5000, 'x'), Role::kRead, AuthOutcome::kUnauthenticated,
       RefusalReason::kUnknownCredential},
      {"r-secret", Role::kRead, AuthOutcome::kUnauthenticated, RefusalReason::kMalformedCredential},
      {"Basic r-secret", Role::kRead, AuthOutcome::kUnauthenticated,
       RefusalReason::kMalformedCredential},
      {"Bearerr-secret", Role::kRead, AuthOutcome::kUnauthenticated,
       RefusalReason::kMalformedCredential},
      {"Bearer", Role::kRead, AuthOutcome::kUnauthenticated, RefusalReason::kMalformedCredential},
      {"Bearer r-secret extra", Role::kRead, AuthOutcome::kUnauthenticated,
       RefusalReason::kMalformedCredential},
  };
  for (const Case& c : cases) {
    const AuthDecision d = CheckAuthorizationHeader(tokens, c.header, c.required);
    EXPECT_EQ(d.outcome, c.outcome)
        << "'" << c.header.substr(0, 40) << "' " << RoleName(c.required);
    EXPECT_EQ(d.reason, c.reason) << "'" << c.header.substr(0, 40) << "' " << RoleName(c.required);
    if (c.reason == RefusalReason::kNone || c.reason == RefusalReason::kWrongRole) {
      ASSERT_NE(d.token, nullptr);
    } else {
      EXPECT_EQ(d.token, nullptr);
    }
  }
  EXPECT_EQ(CheckAuthorizationHeader(tokens, "Bearer a-secret", Role::kAdmin).token->name, "boss");
}

TEST(IsLoopbackListenAddress, OnlyThisMachine) {
  for (const char* yes : {"127.0.0.1:7750", "127.1.2.3:0", "localhost:7750", "LOCALHOST:1",
                          "[::1]:7750", "unix:/run/heapwatch.sock", "unix-abstract:hw"}) {
    EXPECT_TRUE(IsLoopbackListenAddress(yes)) << yes;
  }
  for (const char* no : {"0.0.0.0:7750", "[::]:7750", ":7750", "10.0.0.5:7750", "example.com:7750",
                         "128.0.0.1:7750", "[::ffff:127.0.0.1]:1", "::1:7750", "localhost", "[::1",
                         "", "127.0.0.1.example.com:7750"}) {
    EXPECT_FALSE(IsLoopbackListenAddress(no)) << no;
  }
}

TEST(PeerHost, DropsThePort) {
  EXPECT_EQ(PeerHost("ipv4:10.1.2.3:5123"), "10.1.2.3");
  EXPECT_EQ(PeerHost("ipv6:[::1]:5123"), "[::1]");
  EXPECT_EQ(PeerHost("unix:/run/x"), "unix:/run/x");
}

TEST(RefusalLogLimiter, OncePerPeerPerInterval) {
  RefusalLogLimiter limiter(absl::Minutes(1), 4);
  const absl::Time t0 = absl::FromUnixSeconds(1'000'000);
  EXPECT_TRUE(limiter.ShouldLog("10.0.0.1", t0));
  EXPECT_FALSE(limiter.ShouldLog("10.0.0.1", t0 + absl::Seconds(1)));
  EXPECT_FALSE(limiter.ShouldLog("10.0.0.1", t0 + absl::Seconds(59)));
  EXPECT_TRUE(limiter.ShouldLog("10.0.0.2", t0 + absl::Seconds(2)));
  EXPECT_TRUE(limiter.ShouldLog("10.0.0.1", t0 + absl::Seconds(60)));
  EXPECT_FALSE(limiter.ShouldLog("10.0.0.1", t0 + absl::Seconds(61)));
  // Many peers: memory stays bounded and new peers are still logged.
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(limiter.ShouldLog(absl::StrCat("192.168.0.", i), t0 + absl::Seconds(70 + i)));
  }
}

}  // namespace
}  // namespace heapwatch::auth
