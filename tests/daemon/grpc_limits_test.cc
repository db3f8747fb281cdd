// The gRPC server's resource limits (daemon/grpc_limits.h) against abusive clients, over real
// loopback connections to a QueryServer with a real store (tests/daemon/query_fixture.h): an
// oversized request, thousands of streams on one connection beside a normal client, a call that
// outlives grpc.max_call_time, and the `grpc` configuration section.
#include "daemon/grpc_limits.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/config.h"
#include "daemon/query_server.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "reflection_subset.pb.h"
#include "tests/daemon/grpc_server_fixture.h"

namespace heapwatch::daemon {
namespace {

namespace v1 = ::heapwatch::v1;
using Clock = std::chrono::steady_clock;
using heapwatch::testing::In;

// A channel of its own: distinct channel arguments give it its own TCP connection.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address, int id) {
  grpc::ChannelArguments args;
  args.SetInt("heapwatch.test.connection", id);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

using GrpcLimitsTest = heapwatch::testing::GrpcServerFixture;

TEST_F(GrpcLimitsTest, OversizedRequestIsResourceExhaustedAndTheServerGoesOn) {
  GrpcLimits limits;
  limits.max_receive_message_bytes = 64 << 10;
  Restart(limits);
  auto channel = OwnChannel(address_, 1);
  auto stub = v1::QueryService::NewStub(channel);
  // ListAgents requests padded with an unknown field (the server parses and ignores it, and no
  // error message echoes it back).
  auto padded = [](size_t bytes) {
    v1::ListAgentsRequest r;
    r.GetReflection()->MutableUnknownFields(&r)->AddLengthDelimited(1000, std::string(bytes, 'x'));
    return r;
  };
  v1::ListAgentsResponse response;
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(10)));
  grpc::Status s = stub->ListAgents(&context, padded(100 << 10), &response);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED) << s.error_message();
  // Just under the limit: served.
  grpc::ClientContext context2;
  context2.set_deadline(In(std::chrono::seconds(10)));
  s = stub->ListAgents(&context2, padded(60 << 10), &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.agents_size(), 2);
  Clock::duration took;
  EXPECT_TRUE(ListAgents(channel, &took).ok());
}

TEST_F(GrpcLimitsTest, ThousandsOfStreamsOnOneConnectionDoNotStarveANormalClient) {
  GrpcLimits limits;
  limits.max_concurrent_streams = 16;
  Restart(limits);
  // The abuser: 3000 health Watch streams (they stay open until cancelled) on one connection.
  constexpr int kStreams = 3000;
  auto abuser = OwnChannel(address_, 1);
  // One call first: the server's SETTINGS (with its stream limit) are acknowledged before the flood
  // (HTTP/2 lets a client open streams beyond a limit it has not seen yet).
  Clock::duration warm_up;
  ASSERT_TRUE(ListAgents(abuser, &warm_up).ok());
  const grpc::internal::RpcMethod watch("/grpc.health.v1.Health/Watch",
                                        grpc::internal::RpcMethod::SERVER_STREAMING, abuser);
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientAsyncReader<grpc::health::v1::HealthCheckResponse>>>
      streams;
  grpc::health::v1::HealthCheckRequest request;
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.emplace_back(
        grpc::internal::ClientAsyncReaderFactory<grpc::health::v1::HealthCheckResponse>::Create(
            abuser.get(), &cq, watch, contexts.back().get(), request, /*start=*/true,
            reinterpret_cast<void*>(static_cast<intptr_t>(i))));
  }
  // The server sees at most max_concurrent_streams of them at once.
  int most = 0;
  for (int i = 0; i < 30; ++i) {
    most = std::max(most, server_->calls_in_flight());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GT(most, 0) << "the Watch streams never reached the server";
  EXPECT_LE(most, limits.max_concurrent_streams);
  // A normal client on its own connection: 20 answers, each within a second.
  auto normal = OwnChannel(address_, 2);
  Clock::duration slowest{};
  for (int i = 0; i < 20; ++i) {
    Clock::duration took;
    grpc::Status s = ListAgents(normal, &took);
    ASSERT_TRUE(s.ok()) << s.error_message();
    slowest = std::max(slowest, took);
  }
  EXPECT_LT(slowest, std::chrono::seconds(1));
  std::printf(
      "3000 streams: at most %d on the server at once; normal client's slowest answer %.1f ms\n",
      most, std::chrono::duration<double, std::milli>(slowest).count());
  for (auto& c : contexts) c->TryCancel();
  std::vector<grpc::Status> finished(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    streams[i]->Finish(&finished[i], reinterpret_cast<void*>(static_cast<intptr_t>(kStreams + i)));
  }
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_F(GrpcLimitsTest, CallPastMaxCallTimeIsCancelledLoggedAndCounted) {
  GrpcLimits limits;
  limits.max_call_time = absl::Milliseconds(500);
  Restart(limits);
  EXPECT_EQ(Faults("grpc_call_time_limit"), 0);
  auto channel = OwnChannel(address_, 1);
  // A reflection stream the client keeps open without asking anything: a call without end.
  namespace refl = ::heapwatch::test::reflection;
  const grpc::internal::RpcMethod method(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING, channel);
  grpc::ClientContext context;
  context.set_deadline(In(std::chrono::seconds(30)));
  const auto start = Clock::now();
  std::unique_ptr<
      grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             refl::ServerReflectionRequest, refl::ServerReflectionResponse>::Create(channel.get(),
                                                                                    method,
                                                                                    &context));
  refl::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  refl::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));  // served while within the limit
  while (stream->Read(&response)) {
  }
  grpc::Status s = stream->Finish();
  const auto took = Clock::now() - start;
  EXPECT_EQ(s.error_code(), grpc::CANCELLED) << s.error_message();
  EXPECT_GE(took, std::chrono::milliseconds(450));
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(Faults("grpc_call_time_limit"), 1);
  // Short calls are untouched, before and after.
  Clock::duration t;
  EXPECT_TRUE(ListAgents(channel, &t).ok());
  // The health service's Watch is exempt: still open after twice the limit.
  const grpc::internal::RpcMethod watch("/grpc.health.v1.Health/Watch",
                                        grpc::internal::RpcMethod::SERVER_STREAMING, channel);
  grpc::ClientContext watch_context;
  std::unique_ptr<grpc::ClientReader<grpc::health::v1::HealthCheckResponse>> watcher(
      grpc::internal::ClientReaderFactory<grpc::health::v1::HealthCheckResponse>::Create(
          channel.get(), watch, &watch_context, grpc::health::v1::HealthCheckRequest()));
  grpc::health::v1::HealthCheckResponse health;
  ASSERT_TRUE(watcher->Read(&health));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(server_->calls_in_flight(), 1);
  EXPECT_EQ(Faults("grpc_call_time_limit"), 1);
  watch_context.TryCancel();
  while (watcher->Read(&health)) {
  }
  watcher->Finish();
}

TEST(GrpcLimitsConfigTest, SectionParsesAndIsValidated) {
  auto c = ParseConfigYaml(R"(
grpc:
  max_receive_message_bytes: 2MiB
  max_concurrent_streams: 8
  max_threads: 4
  max_memory_bytes: 64MiB
  min_ping_interval: 30s
  max_ping_strikes: 1
  keepalive_time: 1m
  keepalive_timeout: 5s
  max_connection_idle: 5m
  max_call_time: 20s
)",
                           Config(), "test.yml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->grpc.max_receive_message_bytes, 2u << 20);
  EXPECT_EQ(c->grpc.max_concurrent_streams, 8);
  EXPECT_EQ(c->grpc.max_threads, 4);
  EXPECT_EQ(c->grpc.max_memory_bytes, 64u << 20);
  EXPECT_EQ(c->grpc.min_ping_interval, absl::Seconds(30));
  EXPECT_EQ(c->grpc.max_ping_strikes, 1);
  EXPECT_EQ(c->grpc.keepalive_time, absl::Minutes(1));
  EXPECT_EQ(c->grpc.keepalive_timeout, absl::Seconds(5));
  EXPECT_EQ(c->grpc.max_connection_idle, absl::Minutes(5));
  EXPECT_EQ(c->grpc.max_call_time, absl::Seconds(20));
  EXPECT_TRUE(ValidateConfig(*c).ok());
  EXPECT_TRUE(ValidateConfig(Config()).ok());  // the defaults
  Config bad;
  bad.grpc.max_receive_message_bytes = 3ull << 30;
  EXPECT_NE(ValidateConfig(bad).message().find("grpc.max_receive_message_bytes"),
            std::string::npos);
  bad = Config();
  bad.grpc.max_call_time = absl::ZeroDuration();
  EXPECT_NE(ValidateConfig(bad).message().find("grpc.max_call_time"), std::string::npos);
  EXPECT_FALSE(ParseConfigYaml("grpc:\n  max_concurrent_streams: 0\n", Config(), "t").ok());
  EXPECT_FALSE(ParseConfigYaml("grpc:\n  max_streams: 5\n", Config(), "t").ok());
  // What the daemon prints as its effective configuration reads back the same.
  auto again = ParseConfigYaml(ConfigToYaml(*c), Config(), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->grpc.max_call_time, absl::Seconds(20));
  EXPECT_EQ(again->grpc.max_memory_bytes, 64u << 20);
}

}  // namespace
}  // namespace heapwatch::daemon
