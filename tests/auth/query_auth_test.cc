// Token auth of the gRPC query service over real gRPC on loopback: a QueryServer with the daemon's
// authorizer (daemon/auth_setup.h) on the shared query fixture (a real store with two agents), and
// the method table checked against heapwatch.v1.QueryService's descriptor.
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "auth/grpc_auth.h"
#include "auth/method_roles.h"
#include "daemon/auth_setup.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::testing {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::HasSubstr;

constexpr char kReadSecret[] = "read-secret-0123456789";
constexpr char kAdminSecret[] = "admin-secret-0123456789";
constexpr char kAgentSecret[] = "agent-secret-0123456789";

std::string FullName(const google::protobuf::MethodDescriptor* m) {
  return absl::StrCat("/", m->service()->full_name(), "/", m->name());
}

const google::protobuf::ServiceDescriptor* QueryServiceDescriptor() {
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      "heapwatch.v1.QueryService");
  HW_CHECK(service != nullptr);
  return service;
}

// Every RPC of heapwatch.v1.QueryService has a role in the one table, and the table names no RPC
// that does not exist: adding an RPC to the proto without deciding its role fails here.
TEST(MethodTable, CoversEveryQueryServiceMethod) {
  const auto table = auth::QueryListenerAccessTable();
  const auto* service = QueryServiceDescriptor();
  ASSERT_GT(service->method_count(), 0);
  std::set<std::string> in_proto;
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string name = FullName(service->method(i));
    in_proto.insert(name);
    auto access = auth::FindMethodAccess(table, name);
    ASSERT_TRUE(access.has_value()) << name << " has no entry in auth/method_roles.cc";
    EXPECT_FALSE(access->is_public) << name << ": QueryService methods need a credential";
  }
  for (const auth::MethodAccess& m : table) {
    if (m.method.starts_with("/heapwatch.v1.QueryService/")) {
      EXPECT_TRUE(in_proto.count(std::string(m.method))) << m.method << " is not in the proto";
    }
  }
  EXPECT_EQ(auth::FindMethodAccess(table, "/heapwatch.v1.QueryService/TriggerExtendedDump")->role,
            auth::Role::kAdmin);
  EXPECT_EQ(auth::FindMethodAccess(table, "/heapwatch.v1.QueryService/ListAgents")->role,
            auth::Role::kRead);
}

class QueryAuthTest : public QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    tokens_file_ = dir_ + "/tokens.txt";
    {
      std::ofstream out(tokens_file_);
      out << "# test tokens\n"
          << "read viewer " << auth::DigestHex(auth::Sha256(kReadSecret)) << "\n"
          << "admin boss " << auth::DigestHex(auth::Sha256(kAdminSecret)) << "\n"
          << "agent jvm " << auth::DigestHex(auth::Sha256(kAgentSecret)) << "\n";
    }
    daemon::AuthConfig config;
    config.tokens_file = tokens_file_;
    auto authorizer = daemon::MakeQueryAuthorizer(config, "127.0.0.1:0", &metrics_);
    ASSERT_TRUE(authorizer.ok()) << authorizer.status();
    ASSERT_NE(*authorizer, nullptr);
    auto server = daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_,
                                             nullptr, nullptr, *authorizer);
    ASSERT_TRUE(server.ok()) << server.status();
    auth_server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", auth_server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::QueryService::NewStub(channel_);
  }
  void TearDown() override {
    auth_server_.reset();
    QueryFixture::TearDown();
  }

  // A unary call of `full_method` with an empty request (valid for every request message) and the
  // given `authorization` values, through a generic stub so that every method of the descriptor can
  // be called without naming its types.
  grpc::Status GenericCall(const std::string& full_method, std::vector<std::string> authorization) {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    for (const std::string& a : authorization) context.AddMetadata("authorization", a);
    grpc::CompletionQueue cq;
    grpc::Slice empty("");  // the encoding of an empty message
    grpc::ByteBuffer request(&empty, 1), response;
    auto call = generic.PrepareUnaryCall(&context, full_method, request, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    return status;
  }

  grpc::Status ListAgents(const std::string& bearer, v1::ListAgentsResponse* response) {
    grpc::ClientContext context;
    if (!bearer.empty()) context.AddMetadata("authorization", bearer);
    return stub_->ListAgents(&context, v1::ListAgentsRequest(), response);
  }
  grpc::Status Trigger(const std::string& bearer, const std::string& agent) {
    grpc::ClientContext context;
    if (!bearer.empty()) context.AddMetadata("authorization", bearer);
    v1::TriggerExtendedDumpRequest request;
    request.set_agent(agent);
    v1::TriggerExtendedDumpResponse response;
    return stub_->TriggerExtendedDump(&context, request, &response);
  }

  std::string tokens_file_;
  std::unique_ptr<daemon::QueryServer> auth_server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::QueryService::Stub> stub_;
};

// Each handler checks the credential: every method of the descriptor is refused without one or
// with a wrong one, and with a token of a role the table does not allow; with an allowed role the
// answer is the service's own (never UNAUTHENTICATED / PERMISSION_DENIED). A new RPC whose handler
// forgets the check fails here.
TEST_F(QueryAuthTest, EveryMethodChecksCredentialAndRole) {
  const auto* service = QueryServiceDescriptor();
  const auto table = auth::QueryListenerAccessTable();
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string name = FullName(service->method(i));
    SCOPED_TRACE(name);
    EXPECT_EQ(GenericCall(name, {}).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(GenericCall(name, {"Bearer not-a-token"}).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(GenericCall(name, {std::string("Bearer ") + kReadSecret,
                                 std::string("Bearer ") + kAdminSecret})
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(GenericCall(name, {std::string("Bearer ") + kAgentSecret}).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    const auth::Role role = auth::FindMethodAccess(table, name)->role;
    for (const char* secret : {kReadSecret, kAdminSecret}) {
      const bool allowed = secret == kAdminSecret || role == auth::Role::kRead;
      const grpc::StatusCode code =
          GenericCall(name, {std::string("Bearer ") + secret}).error_code();
      if (allowed) {
        EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED) << secret;
        EXPECT_NE(code, grpc::StatusCode::PERMISSION_DENIED) << secret;
      } else {
        EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED) << secret;
      }
    }
  }
}

TEST_F(QueryAuthTest, RefusalsByCredentialAndRoleAreCountedInMetrics) {
  v1::ListAgentsResponse agents;
  grpc::Status none = ListAgents("", &agents);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.error_message(), HasSubstr("--token-file"));
  grpc::Status wrong = ListAgents("Bearer wrong-secret", &agents);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(wrong.error_message(), ::testing::Not(HasSubstr("wrong-secret")));

  grpc::Status read = ListAgents(std::string("Bearer ") + kReadSecret, &agents);
  ASSERT_TRUE(read.ok()) << read.error_message();
  EXPECT_EQ(agents.agents_size(), 2);

  grpc::Status denied = Trigger(std::string("Bearer ") + kReadSecret, kLive.value);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("'viewer' has role read"));
  EXPECT_THAT(denied.error_message(), HasSubstr("needs role admin"));
  EXPECT_THAT(denied.error_message(), ::testing::Not(HasSubstr(kReadSecret)));

  // The admin token passes the check: the answer is the service's own (this fixture has no
  // escalation, so FAILED_PRECONDITION after the agent check).
  grpc::Status admin = Trigger(std::string("Bearer ") + kAdminSecret, kLive.value);
  EXPECT_EQ(admin.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << admin.error_message();
  EXPECT_EQ(Trigger(std::string("Bearer ") + kAdminSecret, "no-such-agent").error_code(),
            grpc::StatusCode::NOT_FOUND);

  const std::string text = metrics_.ExpositionText();
  for (const char* series : {R"(heapwatch_auth_failures_total{reason="missing_credential"} 1)",
                             R"(heapwatch_auth_failures_total{reason="unknown_credential"} 1)",
                             R"(heapwatch_auth_failures_total{reason="wrong_role"} 1)",
                             R"(heapwatch_auth_failures_total{reason="malformed_credential"} 0)",
                             R"(heapwatch_auth_failures_total{reason="unknown_method"} 0)",
                             R"(code="UNAUTHENTICATED",method="ListAgents"} 2)",
                             R"(code="PERMISSION_DENIED",method="TriggerExtendedDump"} 1)"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
}

// The listener sees every refusal (for the metric) but is asked to log only the first of a peer
// within the interval; no secret reaches it.
TEST_F(QueryAuthTest, RefusalsAreLoggedOncePerPeer) {
  std::mutex mu;
  std::vector<auth::Refusal> refusals;
  auto tokens = auth::TokenSet::Load(tokens_file_);
  ASSERT_TRUE(tokens.ok());
  auto authorizer = std::make_shared<const auth::GrpcAuthorizer>(
      *std::move(tokens), auth::QueryListenerAccessTable(), [&](const auth::Refusal& r) {
        std::lock_guard<std::mutex> lock(mu);
        refusals.push_back(r);
        refusals.back().method = {};  // the view dies with the call
      });
  auto server = daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_,
                                           nullptr, nullptr, authorizer);
  ASSERT_TRUE(server.ok());
  auto stub = v1::QueryService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    v1::ListAgentsResponse response;
    EXPECT_EQ(stub->ListAgents(&context, v1::ListAgentsRequest(), &response).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", std::string("Bearer ") + kReadSecret);
    v1::ListAgentsResponse response;
    EXPECT_TRUE(stub->ListAgents(&context, v1::ListAgentsRequest(), &response).ok());
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(refusals.size(), 3u);
  EXPECT_TRUE(refusals[0].log);
  EXPECT_FALSE(refusals[1].log);
  EXPECT_FALSE(refusals[2].log);
  for (const auth::Refusal& r : refusals) {
    EXPECT_EQ(r.peer_host, "127.0.0.1");
    EXPECT_EQ(r.reason, auth::RefusalReason::kMissingCredential);
  }
}

TEST(MakeQueryAuthorizer, WithoutTokensOnlyLoopback) {
  daemon::Metrics metrics;
  auto loopback = daemon::MakeQueryAuthorizer({}, "127.0.0.1:7750", &metrics);
  ASSERT_TRUE(loopback.ok());
  EXPECT_EQ(*loopback, nullptr);
  for (const char* listen : {"0.0.0.0:7750", "[::]:7750", "192.168.1.10:7750"}) {
    auto open = daemon::MakeQueryAuthorizer({}, listen, &metrics);
    ASSERT_FALSE(open.ok()) << listen;
    EXPECT_EQ(open.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(open.status().message()), HasSubstr("--auth-tokens"));
  }
  daemon::AuthConfig missing;
  missing.tokens_file = "/nonexistent/tokens";
  auto bad = daemon::MakeQueryAuthorizer(missing, "127.0.0.1:7750", &metrics);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("auth.tokens_file: "));
}

// The agent listener: a UNIX socket's permissions are its credential (no token asked for even with
// a tokens file); TCP with a tokens file checks tokens, and without one only loopback is allowed.
TEST(MakeAgentAuthorizer, UnixSocketNeedsNoTokenTcpDoes) {
  const std::string dir = ::testing::TempDir() + "/agent_authorizer";
  std::filesystem::create_directories(dir);
  const std::string tokens_file = dir + "/tokens.txt";
  {
    std::ofstream out(tokens_file);
    out << "agent jvm " << auth::DigestHex(auth::Sha256(kAgentSecret)) << "\n";
  }
  daemon::Metrics metrics;
  daemon::AuthConfig with_tokens;
  with_tokens.tokens_file = tokens_file;
  auto unix_socket =
      daemon::MakeAgentAuthorizer(with_tokens, {}, "unix:" + dir + "/agent.sock", &metrics);
  ASSERT_TRUE(unix_socket.ok()) << unix_socket.status();
  EXPECT_EQ(*unix_socket, nullptr);
  for (const char* listen : {"127.0.0.1:7751", "0.0.0.0:7751"}) {
    auto tcp = daemon::MakeAgentAuthorizer(with_tokens, {}, listen, &metrics);
    ASSERT_TRUE(tcp.ok()) << listen << ": " << tcp.status();
    EXPECT_NE(*tcp, nullptr) << listen;
  }
  auto open_loopback = daemon::MakeAgentAuthorizer({}, {}, "127.0.0.1:7751", &metrics);
  ASSERT_TRUE(open_loopback.ok());
  EXPECT_EQ(*open_loopback, nullptr);
  auto open_network = daemon::MakeAgentAuthorizer({}, {}, "0.0.0.0:7751", &metrics);
  EXPECT_EQ(open_network.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace heapwatch::testing
