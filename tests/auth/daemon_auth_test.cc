// Token auth of a real heapwatchd (daemon::Daemon, in-process, with its store, escalation, /metrics
// exporter and gRPC listener): refusals over real gRPC, their counts on the real /metrics endpoint,
// and the refusal to listen on a non-loopback address without credentials.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "auth/tokens.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/flags.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/http_get.h"

namespace heapwatch::testing {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::HasSubstr;

using ::heapwatch::testing::HttpGet;

class DaemonAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/heapwatch-auth-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    config_.data_dir = dir_ + "/data";
    config_.grpc_listen = "127.0.0.1:0";
    config_.metrics_listen = "127.0.0.1:0";
    config_.watch.agents.include = {"heapwatch-auth-test-watches-no-jvm"};
    config_.shutdown_grace = absl::Seconds(5);
    ASSERT_TRUE(daemon::ValidateConfig(config_).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string WriteTokens(const std::string& text) {
    const std::string path = dir_ + "/tokens.txt";
    std::ofstream out(path);
    out << text;
    return path;
  }

  std::string dir_;
  daemon::Config config_;
};

TEST_F(DaemonAuthTest, TokensFileGuardsTheQueryService) {
  config_.auth.tokens_file =
      WriteTokens(absl::StrCat("read grafana ", auth::DigestHex(auth::Sha256("r-0123")), "\n",
                               "admin oncall ", auth::DigestHex(auth::Sha256("a-0123")), "\n",
                               "agent jvm1 ", auth::DigestHex(auth::Sha256("j-0123")), "\n"));
  auto d = daemon::Daemon::Start(config_);
  ASSERT_TRUE(d.ok()) << d.status();
  auto stub = v1::QueryService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*d)->grpc_port()), grpc::InsecureChannelCredentials()));
  auto list = [&](const std::string& bearer) {
    grpc::ClientContext context;
    if (!bearer.empty()) context.AddMetadata("authorization", bearer);
    v1::ListAgentsResponse response;
    return stub->ListAgents(&context, v1::ListAgentsRequest(), &response);
  };
  auto trigger = [&](const std::string& bearer) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer);
    v1::TriggerExtendedDumpRequest request;
    request.set_agent("no-such-agent");
    v1::TriggerExtendedDumpResponse response;
    return stub->TriggerExtendedDump(&context, request, &response);
  };
  EXPECT_EQ(list("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(list("Bearer a-0124").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(list("Bearer r-0123").ok());
  EXPECT_EQ(trigger("Bearer r-0123").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Accepted by the check; the escalation then answers for the unknown agent.
  EXPECT_EQ(trigger("Bearer a-0123").error_code(), grpc::StatusCode::NOT_FOUND);

  // The web pages and /metrics take the same tokens (read role): refused without one (counted
  // too), with an agent's; served with a read token.
  const int port = (*d)->metrics_port();
  EXPECT_THAT(HttpGet(port, "/metrics"), HasSubstr("HTTP/1.1 401"));
  EXPECT_THAT(HttpGet(port, "/", "Bearer j-0123"), HasSubstr("HTTP/1.1 403"));
  EXPECT_THAT(HttpGet(port, "/", "Bearer r-0123"), HasSubstr("HTTP/1.1 200"));
  const std::string scrape = HttpGet(port, "/metrics", "Bearer r-0123");
  EXPECT_THAT(scrape, HasSubstr("HTTP/1.1 200"));
  for (const char* series : {R"(heapwatch_auth_failures_total{reason="missing_credential"} 2)",
                             R"(heapwatch_auth_failures_total{reason="unknown_credential"} 1)",
                             R"(heapwatch_auth_failures_total{reason="wrong_role"} 2)"}) {
    EXPECT_NE(scrape.find(series), std::string::npos) << series << "\n" << scrape;
  }
  EXPECT_EQ(scrape.find("a-0123"), std::string::npos);
  EXPECT_TRUE((*d)->Shutdown());
}

TEST_F(DaemonAuthTest, RefusesNonLoopbackListenWithoutCredentials) {
  config_.grpc_listen = "0.0.0.0:0";
  auto refused = daemon::Daemon::Start(config_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("refusing to serve gRPC on 0.0.0.0:0 without credentials"));

  // The same address with a tokens file starts.
  config_.auth.tokens_file =
      WriteTokens(absl::StrCat("read r ", auth::DigestHex(auth::Sha256("x")), "\n"));
  auto started = daemon::Daemon::Start(config_);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE((*started)->Shutdown());
}

TEST_F(DaemonAuthTest, ABadTokensFileStopsTheStartWithItsLine) {
  config_.auth.tokens_file = WriteTokens("# ok\nread r " + std::string(63, 'a') + "\n");
  auto d = daemon::Daemon::Start(config_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("tokens.txt:2: the hash of 'r'"));
}

// --auth-tokens and auth.tokens_file reach the Config and survive the YAML round trip.
TEST(AuthConfig, FlagAndYaml) {
  auto parsed = daemon::ParseConfigYaml("auth:\n  tokens_file: /etc/heapwatch/tokens\n",
                                        daemon::Config(), "test.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->auth.tokens_file, "/etc/heapwatch/tokens");
  auto again = daemon::ParseConfigYaml(daemon::ConfigToYaml(*parsed), daemon::Config(), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->auth.tokens_file, "/etc/heapwatch/tokens");
  auto unknown = daemon::ParseConfigYaml("auth:\n  token_file: x\n", daemon::Config(), "t.yaml");
  EXPECT_FALSE(unknown.ok());

  std::ostringstream out, err;
  const char* argv[] = {"heapwatchd", "--auth-tokens", "/etc/t"};
  daemon::CommandLine cl = daemon::ParseCommandLine(3, argv, out, err);
  ASSERT_FALSE(cl.exit_code.has_value()) << err.str();
  EXPECT_EQ(cl.config.auth.tokens_file, "/etc/t");
}

}  // namespace
}  // namespace heapwatch::testing
