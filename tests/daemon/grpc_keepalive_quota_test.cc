// Two gRPC limits of daemon/grpc_limits.h that gRPC enforces by itself, over real loopback
// connections to a QueryServer with a real store (tests/daemon/query_fixture.h):
//  - keepalive enforcement (gRFC A8): a client that pings more often than grpc.min_ping_interval
//    without data gets GOAWAY ENHANCE_YOUR_CALM ("too_many_pings") after grpc.max_ping_strikes
//    strikes and its connection is closed, while a client pinging within the limit keeps its
//    stream;
//  - the thread quota (grpc.max_threads): what a call beyond it gets, and that the server recovers.
#include <grpc/support/log.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/grpc_limits.h"
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
namespace health = ::grpc::health::v1;
namespace refl = ::heapwatch::test::reflection;
using Clock = std::chrono::steady_clock;
using heapwatch::testing::In;

// gRPC core's log lines (gpr_log), kept while a LogCapture lives; the client transport says there
// why it lost its connection. Every line is still written to stderr, as gRPC's default does (its
// default function is not public in gRPC 1.51, so the capture stays installed).
std::mutex g_log_mu;
std::vector<std::string>* g_log = nullptr;  // guarded by g_log_mu
void CaptureLog(gpr_log_func_args* args) {
  std::fprintf(stderr, "%s %s:%d] %s\n", gpr_log_severity_string(args->severity), args->file,
               args->line, args->message);
  std::lock_guard<std::mutex> l(g_log_mu);
  if (g_log != nullptr) g_log->push_back(args->message);
}
class LogCapture {
 public:
  LogCapture() {
    std::lock_guard<std::mutex> l(g_log_mu);
    g_log = &lines_;
    gpr_set_log_function(CaptureLog);
  }
  ~LogCapture() {
    std::lock_guard<std::mutex> l(g_log_mu);
    g_log = nullptr;
  }
  int Count(std::string_view needle) {
    std::lock_guard<std::mutex> l(g_log_mu);
    int n = 0;
    for (const std::string& s : lines_) n += s.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  std::vector<std::string> lines_;
};

// A channel of its own (distinct arguments: its own TCP connection) that pings the server every
// `ping_every` while it has a call open, with none of the client-side ping throttles in the way.
std::shared_ptr<grpc::Channel> PingingChannel(const std::string& address, int id,
                                              std::chrono::milliseconds ping_every) {
  grpc::ChannelArguments args;
  args.SetInt("heapwatch.test.connection", id);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(ping_every.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // 0: no limit
  args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// A health Watch stream (open until cancelled, no data after its first answer), read on a thread
// of its own; status() is its end.
class OpenWatch {
 public:
  explicit OpenWatch(const std::shared_ptr<grpc::Channel>& channel)
      : method_("/grpc.health.v1.Health/Watch", grpc::internal::RpcMethod::SERVER_STREAMING,
                channel) {
    reader_.reset(grpc::internal::ClientReaderFactory<health::HealthCheckResponse>::Create(
        channel.get(), method_, &context_, health::HealthCheckRequest()));
    health::HealthCheckResponse first;
    first_ok_ = reader_->Read(&first);
    thread_ = std::thread([this] {
      health::HealthCheckResponse r;
      while (reader_->Read(&r)) {
      }
      status_ = reader_->Finish();
      ended_ = true;
    });
  }
  ~OpenWatch() {
    context_.TryCancel();
    thread_.join();
  }
  bool first_ok() const { return first_ok_; }
  bool ended() const { return ended_; }
  // Waits up to `limit` for the stream to end; whether it did.
  bool WaitEnd(std::chrono::milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (!ended_ && Clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return ended_;
  }
  grpc::Status Cancel() {
    context_.TryCancel();
    thread_.join();
    thread_ = std::thread([] {});
    return status_;
  }
  const grpc::Status& status() const { return status_; }

 private:
  grpc::internal::RpcMethod method_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<health::HealthCheckResponse>> reader_;
  bool first_ok_ = false;
  std::atomic<bool> ended_{false};
  grpc::Status status_;
  std::thread thread_;
};

using GrpcKeepaliveQuotaTest = heapwatch::testing::GrpcServerFixture;

// gRPC C-core clients never ping more often than once a second while they have a call open (and
// once in two hours without one, unless GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS; gRPC 1.51 chttp2
// writing.cc), whatever their keepalive time: the abuser asks for a ping every 10 ms and so pings
// once a second, against a server that allows one every 2 s.
TEST_F(GrpcKeepaliveQuotaTest, PingFloodGetsGoawayWhileAClientWithinTheLimitKeepsItsStream) {
  GrpcLimits limits;
  limits.min_ping_interval = absl::Seconds(2);
  limits.max_ping_strikes = 1;
  Restart(limits);
  LogCapture log;
  const auto start = Clock::now();
  // Within the limit: a ping every 2.5 s. (Without grpc.min_ping_interval applied, gRPC's default
  // of 5 minutes would make its second and third pings strikes, and close it at 7.5 s.)
  auto polite = PingingChannel(address_, 1, std::chrono::milliseconds(2500));
  OpenWatch polite_watch(polite);
  ASSERT_TRUE(polite_watch.first_ok());
  // The abuser: pings as often as its transport lets it on a connection with an open stream and
  // no data.
  auto abuser = PingingChannel(address_, 2, std::chrono::milliseconds(10));
  OpenWatch abuser_watch(abuser);
  ASSERT_TRUE(abuser_watch.first_ok());
  ASSERT_TRUE(abuser_watch.WaitEnd(std::chrono::seconds(15)))
      << "the server did not close the pinging client's connection";
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  // The connection is gone under the open stream; the client transport names the GOAWAY.
  EXPECT_EQ(abuser_watch.status().error_code(), grpc::UNAVAILABLE)
      << abuser_watch.status().error_message();
  EXPECT_EQ(log.Count("ENHANCE_YOUR_CALM"), 1);
  EXPECT_EQ(log.Count("too_many_pings"), 1);
  // Two strikes (more than max_ping_strikes) at a ping a second: about 2 s.
  EXPECT_GE(took, 1.5);
  // The polite client: 8.2 s after the start (three pings) its stream is still open, its
  // connection still serves, and no second GOAWAY came.
  std::this_thread::sleep_until(start + std::chrono::milliseconds(8200));
  EXPECT_FALSE(polite_watch.ended()) << polite_watch.status().error_message();
  EXPECT_TRUE(ListAgents(polite).ok());
  const grpc::Status polite_end = polite_watch.Cancel();
  EXPECT_EQ(polite_end.error_code(), grpc::CANCELLED) << polite_end.error_message();
  EXPECT_EQ(log.Count("too_many_pings"), 1);
  std::printf("pinging client's connection closed after %.2f s (%s)\n", took,
              abuser_watch.status().error_message().c_str());
  // The server goes on: the abuser's channel connects again for a new call.
  EXPECT_TRUE(ListAgents(abuser).ok());
}

// A reflection stream the client keeps open: its server handler (a synchronous one) holds a
// server thread until the stream ends.
class HeldThread {
 public:
  explicit HeldThread(const std::shared_ptr<grpc::Channel>& channel)
      : method_("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                grpc::internal::RpcMethod::BIDI_STREAMING, channel) {
    context_.set_deadline(In(std::chrono::seconds(60)));
    stream_.reset(
        grpc::internal::ClientReaderWriterFactory<
            refl::ServerReflectionRequest, refl::ServerReflectionResponse>::Create(channel.get(),
                                                                                   method_,
                                                                                   &context_));
    refl::ServerReflectionRequest list;
    list.set_list_services("");
    refl::ServerReflectionResponse response;
    served_ = stream_->Write(list) && stream_->Read(&response);
  }
  bool served() const { return served_; }
  grpc::Status End() {
    stream_->WritesDone();
    refl::ServerReflectionResponse response;
    while (stream_->Read(&response)) {
    }
    return stream_->Finish();
  }

 private:
  grpc::internal::RpcMethod method_;
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
      stream_;
  bool served_ = false;
};

// grpc.max_threads bounds the synchronous server's threads: each call being served holds one (the
// ResourceQuota's thread quota, gRPC 1.51 ThreadManager). Once no thread is left, gRPC answers new
// calls itself with RESOURCE_EXHAUSTED "Server Threadpool Exhausted" (they are not queued); the
// interceptor of daemon/grpc_limits.cc counts them. With the threads back, calls are served again.
TEST_F(GrpcKeepaliveQuotaTest, CallsBeyondTheThreadQuotaAreRefusedCountedAndTheServerRecovers) {
  GrpcLimits limits;
  limits.max_threads = 4;
  Restart(limits);
  EXPECT_EQ(Faults("grpc_thread_quota"), 0);
  auto channel = PingingChannel(address_, 1, std::chrono::milliseconds(60000));
  ASSERT_TRUE(ListAgents(channel).ok());
  // Reflection streams held open: each holds a server thread while it lasts.
  constexpr int kHeld = 8;
  std::vector<std::unique_ptr<HeldThread>> held;
  int served = 0;
  for (int i = 0; i < kHeld; ++i) {
    held.push_back(std::make_unique<HeldThread>(channel));
    served += held.back()->served() ? 1 : 0;
  }
  EXPECT_GE(served, 1);
  EXPECT_LT(served, limits.max_threads);  // the quota counts the polling thread too
  int refused = 0;
  for (int i = 0; i < 10; ++i) {
    grpc::Status s = ListAgents(channel);
    ASSERT_FALSE(s.ok()) << "call " << i << " was served with every thread held";
    EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_EQ(s.error_message(), "Server Threadpool Exhausted");
    ++refused;
  }
  int ended_ok = 0, ended_refused = 0;
  for (auto& h : held) {
    grpc::Status s = h->End();
    if (s.ok()) ++ended_ok;
    if (s.error_code() == grpc::RESOURCE_EXHAUSTED) ++ended_refused;
  }
  EXPECT_EQ(ended_ok, served);
  EXPECT_EQ(ended_refused, kHeld - served);
  // Every refusal counted: the streams refused and the ListAgents calls.
  EXPECT_EQ(Faults("grpc_thread_quota"), refused + ended_refused);
  // Recovered: the threads are back.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(ListAgents(channel).ok());
  std::printf("max_threads 4: %d streams held a thread, %d streams and %d calls refused\n", served,
              ended_refused, refused);
}

}  // namespace
}  // namespace heapwatch::daemon
