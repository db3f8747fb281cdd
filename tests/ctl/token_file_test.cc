// heapwatchctl --token-file / HEAPWATCH_TOKEN_FILE against a real QueryServer that checks tokens
// (loopback, real store: tests/daemon/query_fixture.h; the daemon's authorizer,
// daemon/auth_setup.h).
#include "ctl/token_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "auth/tokens.h"
#include "ctl/ctl.h"
#include "daemon/auth_setup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::ctl {
namespace {

using ::testing::HasSubstr;

TEST(TokenFile, FirstLineTrimmed) {
  EXPECT_EQ(*ParseTokenFileText("  s3cr3t \r\nsecond line\n", "f"), "s3cr3t");
  EXPECT_EQ(*ParseTokenFileText("abc", "f"), "abc");
  for (const std::string& bad :
       {std::string(""), std::string("\nabc\n"), std::string(" \t\n"), std::string("a b\n"),
        std::string("ab\x01"
                    "c"),
        std::string("caf\xc3\xa9"), std::string(5000, 'x')}) {
    auto t = ParseTokenFileText(bad, "f");
    ASSERT_FALSE(t.ok()) << bad.substr(0, 20);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("token file f"));
  }
}

// The recipe of docs/security.md, run for real: `openssl rand -hex 32 | tee secret | sha256sum`
// gives the tokens file's hash, and the secret heapwatchctl reads from `secret` matches it.
TEST(TokenFile, DocumentedRecipeMatches) {
  const std::string dir = ::testing::TempDir() + "/heapwatch-recipe-" + std::to_string(getpid());
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  const std::string command =
      "cd " + dir + " && openssl rand -hex 32 | tee secret | sha256sum | cut -d' ' -f1";
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[128] = {};
  ASSERT_NE(fgets(buf, sizeof(buf), p), nullptr);
  ASSERT_EQ(pclose(p), 0);
  std::string hash(buf);
  while (!hash.empty() && hash.back() == '\n') hash.pop_back();
  auto tokens = auth::TokenSet::Parse("admin me " + hash + "\n", "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  GlobalOptions global;
  global.token_file = dir + "/secret";
  ASSERT_TRUE(LoadToken(&global).ok());
  EXPECT_EQ(global.token.size(), 64u);
  ASSERT_NE(tokens->Match(global.token), nullptr);
  EXPECT_EQ(tokens->Match(global.token)->name, "me");
  EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

class CtlTokenTest : public heapwatch::testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    {
      std::ofstream out(dir_ + "/tokens.txt");
      out << "read viewer " << auth::DigestHex(auth::Sha256("view-secret")) << "\n";
    }
    {
      std::ofstream out(dir_ + "/secret");
      out << "view-secret\n";
    }
    {
      std::ofstream out(dir_ + "/wrong");
      out << "guessed-secret\n";
    }
    daemon::AuthConfig config;
    config.tokens_file = dir_ + "/tokens.txt";
    auto authorizer = daemon::MakeQueryAuthorizer(config, "127.0.0.1:0", &metrics_);
    ASSERT_TRUE(authorizer.ok()) << authorizer.status();
    auto server = daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_,
                                             nullptr, nullptr, *authorizer);
    ASSERT_TRUE(server.ok()) << server.status();
    auth_server_ = *std::move(server);
    auth_address_ = absl::StrCat("127.0.0.1:", auth_server_->port());
    unsetenv("HEAPWATCH_TOKEN_FILE");
  }
  void TearDown() override {
    unsetenv("HEAPWATCH_TOKEN_FILE");
    auth_server_.reset();
    QueryFixture::TearDown();
  }
  struct Result {
    int code;
    std::string out, err;
  };
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"heapwatchctl", "--server", auth_address_});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }

  std::unique_ptr<daemon::QueryServer> auth_server_;
  std::string auth_address_;
};

TEST_F(CtlTokenTest, WithoutTokenUnauthenticated) {
  Result r = Run({"agents"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(r.err, HasSubstr("--token-file"));
}

TEST_F(CtlTokenTest, TokenFileOptionBeforeOrAfterTheSubcommand) {
  Result before = Run({"--token-file", dir_ + "/secret", "agents"});
  EXPECT_EQ(before.code, 0) << before.err;
  EXPECT_THAT(before.out, HasSubstr(kLive.value));
  Result after = Run({"agents", "--token-file", dir_ + "/secret"});
  EXPECT_EQ(after.code, 0) << after.err;
  Result wrong = Run({"--token-file", dir_ + "/wrong", "agents"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_THAT(wrong.err, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(wrong.err, ::testing::Not(HasSubstr("guessed-secret")));
}

TEST_F(CtlTokenTest, EnvironmentVariableAndUnreadableFile) {
  setenv("HEAPWATCH_TOKEN_FILE", (dir_ + "/secret").c_str(), 1);
  Result env = Run({"agents"});
  EXPECT_EQ(env.code, 0) << env.err;
  // The option wins over the environment.
  Result option = Run({"--token-file", dir_ + "/wrong", "agents"});
  EXPECT_EQ(option.code, 1);
  Result missing = Run({"--token-file", dir_ + "/no-such-file", "agents"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("cannot read token file"));
}

}  // namespace
}  // namespace heapwatch::ctl
