// The gRPC query service over a real loopback connection (port 0) with a real LMDB store in a temp
// dir.
#include "daemon/query_server.h"

#include <chrono>
#include <cmath>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "proto/time_util.h"
#include "reflection_subset.pb.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::daemon {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

google::protobuf::Timestamp Ts(absl::Time t) {
  google::protobuf::Timestamp ts;
  proto::ToTimestamp(t, &ts);
  return ts;
}

absl::Time T(const google::protobuf::Timestamp& ts) { return *proto::FromTimestamp(ts); }

// Equal, or both NaN (a test's value may be undefined when it did not run).
bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

class QueryServerTest : public heapwatch::testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    if (HasFatalFailure()) return;
    channel_ = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    stub_ = v1::QueryService::NewStub(channel_);
  }

  std::unique_ptr<grpc::ClientContext> Context() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return c;
  }

  grpc::Status History(const v1::GetClassHistoryRequest& r, v1::GetClassHistoryResponse* out) {
    return stub_->GetClassHistory(Context().get(), r, out);
  }
  grpc::Status Diff(const v1::DiffSnapshotsRequest& r, v1::DiffSnapshotsResponse* out) {
    return stub_->DiffSnapshots(Context().get(), r, out);
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::QueryService::Stub> stub_;
};

TEST_F(QueryServerTest, ListAgentsMergesLiveAgentsAndStoredOnes) {
  v1::ListAgentsResponse r;
  ASSERT_TRUE(stub_->ListAgents(Context().get(), v1::ListAgentsRequest(), &r).ok());
  ASSERT_EQ(r.agents_size(), 2);
  const v1::Agent& live = r.agents(0);
  EXPECT_EQ(live.agent(), kLive.value);
  EXPECT_EQ(live.state(), v1::AGENT_STATE_UP);
  EXPECT_EQ(live.kind(), v1::AGENT_KIND_LOCAL_ATTACH);
  EXPECT_EQ(live.pid(), 1);
  EXPECT_EQ(live.host(), "host");
  EXPECT_EQ(live.main_class(), "com.example.Leaky");
  EXPECT_EQ(live.jvm_version(), "17.0.15");
  EXPECT_EQ(T(live.start_time()), kT0 - absl::Hours(1));
  EXPECT_EQ(T(live.last_snapshot_time()), kT0 + absl::Seconds(120));
  EXPECT_EQ(T(live.next_collection_time()), kT0 + absl::Seconds(180));
  EXPECT_EQ(live.last_collection_duration().nanos(), 250'000'000);
  EXPECT_EQ(live.suspect_count(), 1u);
  const v1::Agent& down = r.agents(1);
  EXPECT_EQ(down.agent(), kDown.value);
  EXPECT_EQ(down.state(), v1::AGENT_STATE_DOWN);
  EXPECT_EQ(down.main_class(), "com.example.Old");
  EXPECT_EQ(T(down.last_snapshot_time()), kT0 + absl::Seconds(60));
  EXPECT_FALSE(down.has_next_collection_time());
}

TEST_F(QueryServerTest, ListSuspects) {
  v1::ListSuspectsResponse all;
  ASSERT_TRUE(stub_->ListSuspects(Context().get(), v1::ListSuspectsRequest(), &all).ok());
  ASSERT_EQ(all.suspects_size(), 1);
  const v1::Suspect& s = all.suspects(0);
  EXPECT_EQ(s.agent(), kLive.value);
  EXPECT_EQ(s.class_name(), "Leak");
  EXPECT_DOUBLE_EQ(s.score(), 0.9);
  EXPECT_EQ(T(s.first_seen()), kT0 + absl::Seconds(120));
  EXPECT_DOUBLE_EQ(s.growth_bytes_per_second(), 16.5);
  EXPECT_EQ(s.bytes(), 3000u);
  EXPECT_EQ(s.instances(), 30u);
  EXPECT_EQ(s.leak(), kLeakId);
  EXPECT_TRUE(s.has_time_scale());
  EXPECT_EQ(s.time_scale().seconds(), 0);

  v1::ListSuspectsRequest one;
  one.set_agent(kDown.value);  // known but down: no suspects, not an error
  v1::ListSuspectsResponse none;
  ASSERT_TRUE(stub_->ListSuspects(Context().get(), one, &none).ok());
  EXPECT_EQ(none.suspects_size(), 0);

  one.set_agent("no-such-agent");
  EXPECT_EQ(stub_->ListSuspects(Context().get(), one, &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
  one.set_agent("bad agent id!");
  EXPECT_EQ(stub_->ListSuspects(Context().get(), one, &none).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(QueryServerTest, ListLeaks) {
  v1::ListLeaksResponse all;
  ASSERT_TRUE(stub_->ListLeaks(Context().get(), v1::ListLeaksRequest(), &all).ok());
  ASSERT_EQ(all.leaks_size(), 1);
  const v1::Leak& l = all.leaks(0);
  EXPECT_EQ(l.agent(), kLive.value);
  EXPECT_EQ(l.leak(), kLeakId);
  EXPECT_EQ(l.main_class(), "Leak");
  ASSERT_EQ(l.classes_size(), 1);
  EXPECT_EQ(l.classes(0).class_name(), "Leak");
  EXPECT_EQ(l.classes(0).bytes(), 3000u);
  EXPECT_DOUBLE_EQ(l.classes(0).growth_bytes_per_second(), 16.5);
  EXPECT_EQ(l.bytes(), 3000u);
  EXPECT_DOUBLE_EQ(l.growth_bytes_per_second(), 16.5);
  EXPECT_DOUBLE_EQ(l.score(), 0.9);
  EXPECT_EQ(T(l.first_seen()), kT0 + absl::Seconds(120));
  EXPECT_EQ(T(l.last_snapshot_time()), kT0 + absl::Seconds(120));
  EXPECT_EQ(l.accumulation_point(), "");

  v1::ListLeaksRequest one;
  one.set_agent(kLive.value);
  v1::ListLeaksResponse live;
  ASSERT_TRUE(stub_->ListLeaks(Context().get(), one, &live).ok());
  ASSERT_EQ(live.leaks_size(), 1);
  EXPECT_EQ(live.leaks(0).leak(), kLeakId);

  one.set_agent(kDown.value);  // known but down: no current leaks, not an error
  v1::ListLeaksResponse none;
  ASSERT_TRUE(stub_->ListLeaks(Context().get(), one, &none).ok());
  EXPECT_EQ(none.leaks_size(), 0);
  one.set_agent("no-such-agent");
  EXPECT_EQ(stub_->ListLeaks(Context().get(), one, &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// Leaks of several agents come fastest first, each with its own agent.
TEST_F(QueryServerTest, ListLeaksSortsByGrowthAcrossAgents) {
  AgentStatus other;
  other.info = Info(AgentId("host-3-c"), 3, "com.example.Other");
  other.last_snapshot_time = kT0;
  for (const auto& [id, growth] : {std::pair<std::string, double>{"L000000000001", 5.0},
                                   std::pair<std::string, double>{"L000000000002", 100.0}}) {
    diff::Leak leak;
    leak.id = id;
    leak.main_class = "C" + id;
    leak.growth_bytes_per_second = growth;
    other.leaks.push_back(leak);
  }
  agents_.Put(other);
  v1::ListLeaksResponse all;
  ASSERT_TRUE(stub_->ListLeaks(Context().get(), v1::ListLeaksRequest(), &all).ok());
  std::vector<std::pair<std::string, std::string>> order;
  for (const v1::Leak& l : all.leaks()) order.emplace_back(l.agent(), l.leak());
  EXPECT_THAT(order, ElementsAre(std::pair<std::string, std::string>{"host-3-c", "L000000000002"},
                                 std::pair<std::string, std::string>{kLive.value, kLeakId},
                                 std::pair<std::string, std::string>{"host-3-c", "L000000000001"}));
}

// ExplainSuspect answers with the live agent's detector's own explanation, field by field.
TEST_F(QueryServerTest, ExplainSuspectReturnsTheDetectorsExplanation) {
  for (const std::string name : {"Leak", "Cache", "NeverSeen"}) {
    SCOPED_TRACE(name);
    diff::Explanation expected;
    {
      std::lock_guard<std::mutex> lock(detector_mu_);
      expected = detector_->Explain(name);
    }
    v1::ExplainSuspectRequest request;
    request.set_agent(kLive.value);
    request.set_class_name(name);
    v1::ExplainSuspectResponse r;
    grpc::Status st = stub_->ExplainSuspect(Context().get(), request, &r);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(r.agent(), kLive.value);
    EXPECT_EQ(r.class_name(), expected.class_name);
    EXPECT_EQ(r.known(), expected.known);
    EXPECT_EQ(r.suspect(), expected.suspect);
    EXPECT_EQ(r.leak(), expected.leak);
    ASSERT_EQ(r.scales_size(), static_cast<int>(expected.scales.size()));
    for (size_t i = 0; i < expected.scales.size(); ++i) {
      const diff::ScaleExplanation& e = expected.scales[i];
      const v1::TrendScale& got = r.scales(static_cast<int>(i));
      EXPECT_EQ(absl::Seconds(got.time_scale().seconds()) + absl::Nanoseconds(got.time_scale().nanos()),
                e.time_scale);
      EXPECT_EQ(got.suspect(), e.suspect);
      EXPECT_EQ(got.window_size(), e.window_size);
      EXPECT_EQ(got.min_window(), e.min_window);
      EXPECT_EQ(got.not_evaluated(), e.not_evaluated);
      ASSERT_EQ(got.tests_size(), static_cast<int>(e.tests.size()));
      for (size_t j = 0; j < e.tests.size(); ++j) {
        EXPECT_EQ(got.tests(static_cast<int>(j)).test(), e.tests[j].test);
        EXPECT_TRUE(Same(got.tests(static_cast<int>(j)).value(), e.tests[j].value));
        EXPECT_TRUE(Same(got.tests(static_cast<int>(j)).threshold(), e.tests[j].threshold));
        EXPECT_EQ(got.tests(static_cast<int>(j)).op(), e.tests[j].op);
        EXPECT_EQ(got.tests(static_cast<int>(j)).pass(), e.tests[j].pass);
        EXPECT_EQ(got.tests(static_cast<int>(j)).unit(), e.tests[j].unit);
      }
    }
    EXPECT_EQ(r.has_cycle_veto(), expected.cycle_veto.has_value());
    if (expected.cycle_veto.has_value()) {
      EXPECT_EQ(r.cycle_veto().test(), expected.cycle_veto->test);
      EXPECT_TRUE(Same(r.cycle_veto().value(), expected.cycle_veto->value));
      EXPECT_EQ(r.cycle_veto().pass(), expected.cycle_veto->pass);
    }
  }
  // The detector has seen Leak (three snapshots) but never NeverSeen.
  v1::ExplainSuspectRequest request;
  request.set_agent(kLive.value);
  request.set_class_name("Leak");
  v1::ExplainSuspectResponse r;
  ASSERT_TRUE(stub_->ExplainSuspect(Context().get(), request, &r).ok());
  EXPECT_TRUE(r.known());
  EXPECT_FALSE(r.scales().empty());
  request.set_class_name("NeverSeen");
  ASSERT_TRUE(stub_->ExplainSuspect(Context().get(), request, &r).ok());
  EXPECT_FALSE(r.known());
}

TEST_F(QueryServerTest, ExplainSuspectErrors) {
  v1::ExplainSuspectRequest request;
  v1::ExplainSuspectResponse r;
  request.set_class_name("Leak");
  EXPECT_EQ(stub_->ExplainSuspect(Context().get(), request, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // empty agent
  request.set_agent(kLive.value);
  request.set_class_name("");
  EXPECT_EQ(stub_->ExplainSuspect(Context().get(), request, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // empty class
  request.set_class_name("Leak");
  request.set_agent("no-such-agent");
  EXPECT_EQ(stub_->ExplainSuspect(Context().get(), request, &r).error_code(),
            grpc::StatusCode::NOT_FOUND);
  request.set_agent(kDown.value);  // in the store, but no live detector
  grpc::Status down = stub_->ExplainSuspect(Context().get(), request, &r);
  EXPECT_EQ(down.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(down.error_message(), HasSubstr("not live"));

  // A server without detectors: FAILED_PRECONDITION after the agent checks.
  auto bare = QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_);
  ASSERT_TRUE(bare.ok()) << bare.status();
  auto stub = v1::QueryService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*bare)->port()), grpc::InsecureChannelCredentials()));
  request.set_agent(kLive.value);
  EXPECT_EQ(stub->ExplainSuspect(Context().get(), request, &r).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  request.set_agent("no-such-agent");
  EXPECT_EQ(stub->ExplainSuspect(Context().get(), request, &r).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(QueryServerTest, ClassHistory) {
  v1::GetClassHistoryRequest req;
  req.set_agent(kLive.value);
  req.set_class_name("Leak");
  v1::GetClassHistoryResponse r;
  ASSERT_TRUE(History(req, &r).ok());
  EXPECT_EQ(r.agent(), kLive.value);
  EXPECT_EQ(r.class_name(), "Leak");
  ASSERT_EQ(r.samples_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(T(r.samples(i).time()), kT0 + absl::Seconds(60 * i));
    EXPECT_EQ(r.samples(i).bytes(), 1000u * (i + 1));
    EXPECT_EQ(r.samples(i).instances(), 10u * (i + 1));
  }
  // A range selects snapshots inclusively; a class absent from a snapshot reads 0/0.
  req.set_class_name("Gone");
  *req.mutable_start_time() = Ts(kT0 + absl::Seconds(60));
  ASSERT_TRUE(History(req, &r).ok());
  ASSERT_EQ(r.samples_size(), 2);
  EXPECT_EQ(r.samples(0).bytes(), 100u);
  EXPECT_EQ(r.samples(1).bytes(), 0u);
  *req.mutable_end_time() = Ts(kT0 + absl::Seconds(60));
  ASSERT_TRUE(History(req, &r).ok());
  EXPECT_EQ(r.samples_size(), 1);
}

TEST_F(QueryServerTest, ClassHistoryErrors) {
  v1::GetClassHistoryResponse r;
  v1::GetClassHistoryRequest req;
  req.set_class_name("Leak");
  EXPECT_EQ(History(req, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);  // no agent
  req.set_agent(kLive.value);
  req.clear_class_name();
  EXPECT_EQ(History(req, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);  // no class
  req.set_class_name("Leak");
  *req.mutable_start_time() = Ts(kT0 + absl::Seconds(61));
  *req.mutable_end_time() = Ts(kT0);
  grpc::Status inverted = History(req, &r);
  EXPECT_EQ(inverted.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(inverted.error_message(), HasSubstr("after"));
  req.clear_end_time();
  req.mutable_start_time()->set_nanos(-1);
  EXPECT_EQ(History(req, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // malformed timestamp
  req.clear_start_time();
  req.set_class_name("NeverSeen");
  EXPECT_EQ(History(req, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  req.set_agent("no-such-agent");
  req.set_class_name("Leak");
  EXPECT_EQ(History(req, &r).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(QueryServerTest, DiffOfTheLastTwoSnapshotsByDefault) {
  v1::DiffSnapshotsRequest req;
  req.set_agent(kLive.value);
  v1::DiffSnapshotsResponse r;
  ASSERT_TRUE(Diff(req, &r).ok());
  EXPECT_EQ(T(r.from_time()), kT0 + absl::Seconds(60));
  EXPECT_EQ(T(r.to_time()), kT0 + absl::Seconds(120));
  EXPECT_EQ(r.class_count(), 4u);
  ASSERT_EQ(r.classes_size(), 4);
  // Largest growth first.
  EXPECT_EQ(r.classes(0).class_name(), "Leak");
  EXPECT_EQ(r.classes(0).change(), v1::CLASS_CHANGE_CHANGED);
  EXPECT_EQ(r.classes(0).before_bytes(), 2000u);
  EXPECT_EQ(r.classes(0).after_bytes(), 3000u);
  EXPECT_EQ(r.classes(0).delta_bytes(), 1000);
  EXPECT_EQ(r.classes(0).delta_instances(), 10);
  EXPECT_EQ(r.classes(1).class_name(), "New");
  EXPECT_EQ(r.classes(1).change(), v1::CLASS_CHANGE_NEW);
  EXPECT_EQ(r.classes(3).class_name(), "Gone");
  EXPECT_EQ(r.classes(3).change(), v1::CLASS_CHANGE_VANISHED);
  EXPECT_EQ(r.classes(3).delta_bytes(), -100);
  EXPECT_EQ(r.total_before_bytes(), 2600u);
  EXPECT_EQ(r.total_after_bytes(), 3564u);
  EXPECT_EQ(r.total_delta_bytes(), 964);
  EXPECT_EQ(r.total_delta_instances(), 11);
}

TEST_F(QueryServerTest, DiffSelectsSnapshotsAtOrBeforeTheGivenTimes) {
  v1::DiffSnapshotsRequest req;
  req.set_agent(kLive.value);
  *req.mutable_from_time() = Ts(kT0 + absl::Seconds(30));  // -> t0
  *req.mutable_to_time() = Ts(kT0 + absl::Seconds(200));   // -> t0+120
  req.set_max_classes(1);
  v1::DiffSnapshotsResponse r;
  ASSERT_TRUE(Diff(req, &r).ok());
  EXPECT_EQ(T(r.from_time()), kT0);
  EXPECT_EQ(T(r.to_time()), kT0 + absl::Seconds(120));
  EXPECT_EQ(r.class_count(), 4u);
  ASSERT_EQ(r.classes_size(), 1);
  EXPECT_EQ(r.classes(0).delta_bytes(), 2000);
  // Only `to`: the snapshot before it is the `from`.
  req.clear_from_time();
  *req.mutable_to_time() = Ts(kT0 + absl::Seconds(90));  // -> t0+60, from t0
  ASSERT_TRUE(Diff(req, &r).ok());
  EXPECT_EQ(T(r.from_time()), kT0);
  EXPECT_EQ(T(r.to_time()), kT0 + absl::Seconds(60));
}

TEST_F(QueryServerTest, DiffErrors) {
  v1::DiffSnapshotsResponse r;
  v1::DiffSnapshotsRequest req;
  EXPECT_EQ(Diff(req, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.set_agent("no-such-agent");
  EXPECT_EQ(Diff(req, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  req.set_agent(kLive.value);
  *req.mutable_to_time() = Ts(kT0 - absl::Seconds(1));  // before the first snapshot
  EXPECT_EQ(Diff(req, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  *req.mutable_to_time() = Ts(kT0);  // only one snapshot at or before
  grpc::Status one = Diff(req, &r);
  EXPECT_EQ(one.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(one.error_message(), HasSubstr("only one snapshot"));
  *req.mutable_from_time() = Ts(kT0 + absl::Seconds(120));
  *req.mutable_to_time() = Ts(kT0);
  EXPECT_EQ(Diff(req, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(QueryServerTest, RequestsAreCountedByMethodAndCode) {
  v1::GetClassHistoryRequest req;
  v1::GetClassHistoryResponse r;
  History(req, &r);
  v1::ListAgentsResponse agents;
  ASSERT_TRUE(stub_->ListAgents(Context().get(), v1::ListAgentsRequest(), &agents).ok());
  std::string text = metrics_.ExpositionText();
  EXPECT_THAT(
      text,
      HasSubstr(
          "heapwatch_grpc_requests_total{code=\"INVALID_ARGUMENT\",method=\"GetClassHistory\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("heapwatch_grpc_requests_total{code=\"OK\",method=\"ListAgents\"} 1"));
}

TEST_F(QueryServerTest, HealthCheckingIsEnabled) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "heapwatch.v1.QueryService"}) {
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = health->Check(Context().get(), req, &resp);
    ASSERT_TRUE(s.ok()) << service << ": " << s.error_message();
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(QueryServerTest, ReflectionListsTheServiceAndServesItsFile) {
  namespace refl = ::heapwatch::test::reflection;
  // What a generated ServerReflection stub does, with the wire-compatible test messages.
  const grpc::internal::RpcMethod method(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING, channel_);
  auto context = Context();
  std::unique_ptr<
      grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             refl::ServerReflectionRequest, refl::ServerReflectionResponse>::Create(channel_.get(),
                                                                                    method,
                                                                                    context.get()));
  refl::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  refl::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::vector<std::string> services;
  for (const auto& s : resp.list_services_response().service()) services.push_back(s.name());
  EXPECT_THAT(services, ::testing::Contains("heapwatch.v1.QueryService"));
  EXPECT_THAT(services, ::testing::Contains("grpc.health.v1.Health"));

  refl::ServerReflectionRequest file;
  file.set_file_containing_symbol("heapwatch.v1.QueryService");
  ASSERT_TRUE(stream->Write(file));
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_GT(resp.file_descriptor_response().file_descriptor_proto_size(), 0);
  google::protobuf::FileDescriptorProto fd;
  ASSERT_TRUE(fd.ParseFromString(resp.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(fd.name(), "heapwatch/v1/heapwatch.proto");
  EXPECT_EQ(fd.package(), "heapwatch.v1");
  stream->WritesDone();
}

TEST_F(QueryServerTest, ShutdownStopsServing) {
  server_->Shutdown(absl::Seconds(1));
  v1::ListAgentsResponse r;
  auto c = Context();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  EXPECT_FALSE(stub_->ListAgents(c.get(), v1::ListAgentsRequest(), &r).ok());
}

TEST(QueryServerStart, AnAddressInUseIsUnavailable) {
  AgentTable agents;
  Metrics metrics;
  auto first = QueryServer::Start("127.0.0.1:0", nullptr, &agents, &metrics);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      QueryServer::Start(absl::StrCat("127.0.0.1:", (*first)->port()), nullptr, &agents, &metrics);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(QueryServer::Start("", nullptr, &agents, &metrics).ok());
}

}  // namespace
}  // namespace heapwatch::daemon
