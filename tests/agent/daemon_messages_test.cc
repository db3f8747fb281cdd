// What the agent accepts from the daemon (agent/daemon_messages.h): one test per refusal, and the
// messages a real daemon sends (daemon/agent_gateway.cc's PushedConfig) accepted.
#include "agent/daemon_messages.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "proto/time_util.h"

namespace heapwatch::agent {
namespace {

v1::AgentConfig DaemonConfig() {
  // As the gateway pushes it with the defaults: 1 min interval, budget 1% of it, 10 s heartbeats.
  v1::AgentConfig c;
  proto::ToDuration(absl::Minutes(1), c.mutable_histogram_interval());
  c.set_mode(v1::HISTOGRAM_MODE_LIVE);
  proto::ToDuration(absl::Milliseconds(600), c.mutable_pause_budget());
  proto::ToDuration(absl::Seconds(10), c.mutable_heartbeat_interval());
  c.set_histogram_after_old_gc(true);
  return c;
}

v1::DaemonMessage Registered(uint64_t stored_through, const v1::AgentConfig& config) {
  v1::DaemonMessage m;
  m.mutable_registered()->set_stored_through(stored_through);
  *m.mutable_registered()->mutable_config() = config;
  return m;
}

v1::DaemonMessage Ack(uint64_t stored_through) {
  v1::DaemonMessage m;
  m.mutable_ack()->set_stored_through(stored_through);
  return m;
}

v1::DaemonMessage Dump(const std::string& id) {
  v1::DaemonMessage m;
  m.mutable_dump_request()->set_dump_id(id);
  m.mutable_dump_request()->set_gzip(true);
  return m;
}

constexpr StreamPosition kRegistered{.registered = true, .sent_through = 5, .assigned_through = 9};

TEST(DaemonMessagesTest, AcceptsWhatTheDaemonSends) {
  StatusOr<DaemonAction> a =
      CheckDaemonMessage(Registered(3, DaemonConfig()), StreamPosition{false, 0, 9});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, DaemonAction::Kind::kRegistered);
  EXPECT_EQ(a->stored_through, 3u);
  EXPECT_EQ(a->config.histogram_interval, absl::Minutes(1));
  EXPECT_EQ(a->config.pause_budget, absl::Milliseconds(600));
  EXPECT_EQ(a->config.heartbeat_interval, absl::Seconds(10));
  EXPECT_TRUE(a->config.histogram_after_old_gc);
  // A config without durations: no schedule, no budget, heartbeat unchanged.
  a = CheckDaemonMessage(Registered(0, v1::AgentConfig()), StreamPosition{false, 0, 0});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->config.histogram_interval.has_value());
  EXPECT_FALSE(a->config.pause_budget.has_value());
  EXPECT_FALSE(a->config.heartbeat_interval.has_value());

  a = CheckDaemonMessage(Ack(5), kRegistered);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, DaemonAction::Kind::kAck);
  EXPECT_EQ(a->stored_through, 5u);

  a = CheckDaemonMessage(Dump("app-20261125T020000Z"), kRegistered);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, DaemonAction::Kind::kDumpRequest);
  EXPECT_EQ(a->dump_id, "app-20261125T020000Z");
  EXPECT_TRUE(a->gzip);

  v1::DaemonMessage h;
  h.mutable_histogram_request()->set_request_id(7);
  h.mutable_histogram_request()->set_mode(v1::HISTOGRAM_MODE_ALL);
  a = CheckDaemonMessage(h, kRegistered);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, DaemonAction::Kind::kHistogramRequest);
  EXPECT_EQ(a->request_id, 7u);
  EXPECT_EQ(a->mode, v1::HISTOGRAM_MODE_ALL);

  a = CheckDaemonMessage(v1::DaemonMessage(), kRegistered);  // a body unknown to this agent
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, DaemonAction::Kind::kIgnore);
}

TEST(DaemonMessagesTest, AnythingButRegisteredFirstIsAProtocolError) {
  StreamPosition fresh{false, 0, 9};
  EXPECT_EQ(CheckDaemonMessage(Ack(0), fresh).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckDaemonMessage(Dump("d1"), fresh).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckDaemonMessage(v1::DaemonMessage(), fresh).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CheckDaemonMessage(Registered(0, DaemonConfig()), kRegistered).status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "Registered twice";
}

TEST(DaemonMessagesTest, RefusesAcksBeyondWhatWasSent) {
  StatusOr<DaemonAction> a = CheckDaemonMessage(Ack(6), kRegistered);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(a.status().message().find("sent only through 5"), std::string::npos) << a.status();
  EXPECT_EQ(CheckDaemonMessage(Ack(UINT64_MAX), kRegistered).status().code(),
            absl::StatusCode::kOutOfRange);
  // Registered may claim what was assigned (sent on an earlier stream), not more.
  EXPECT_TRUE(CheckDaemonMessage(Registered(9, DaemonConfig()), {false, 0, 9}).ok());
  EXPECT_EQ(CheckDaemonMessage(Registered(10, DaemonConfig()), {false, 0, 9}).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(DaemonMessagesTest, RefusesAbsurdConfigurations) {
  auto refused = [](void (*edit)(v1::AgentConfig*)) {
    v1::AgentConfig c = DaemonConfig();
    edit(&c);
    v1::DaemonMessage m;
    *m.mutable_config() = c;
    StatusOr<DaemonAction> a = CheckDaemonMessage(m, kRegistered);
    if (a.ok()) return std::string("accepted");
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(
        CheckDaemonMessage(Registered(0, c), {false, 0, 0}).status().message(), "AgentConfig: "));
    return std::string(a.status().message());
  };
  EXPECT_EQ(refused([](v1::AgentConfig* c) { c->mutable_histogram_interval()->set_seconds(-60); }),
            "AgentConfig: histogram_interval is negative");
  EXPECT_EQ(refused([](v1::AgentConfig* c) {
              c->mutable_histogram_interval()->set_seconds(0);
              c->mutable_histogram_interval()->set_nanos(1);
            }).find("AgentConfig: histogram_interval must be 0 (not set) or in [10ms, 720h]"),
            0u);
  EXPECT_NE(refused([](v1::AgentConfig* c) {
              c->mutable_histogram_interval()->set_seconds(INT64_MAX);
            }).find("histogram_interval must be"),
            std::string::npos);
  EXPECT_NE(refused([](v1::AgentConfig* c) {
              c->mutable_histogram_interval()->set_seconds(1);
              c->mutable_histogram_interval()->set_nanos(-5);
            }).find("different signs"),
            std::string::npos);
  EXPECT_NE(refused([](v1::AgentConfig* c) {
              c->mutable_pause_budget()->set_seconds(7200);
            }).find("pause_budget must be"),
            std::string::npos);
  EXPECT_NE(refused([](v1::AgentConfig* c) {
              c->mutable_pause_budget()->set_nanos(-1);
            }).find("pause_budget is negative"),
            std::string::npos);
  EXPECT_NE(refused([](v1::AgentConfig* c) {
              c->mutable_heartbeat_interval()->set_seconds(0);
              c->mutable_heartbeat_interval()->set_nanos(1000);
            }).find("heartbeat_interval must be"),
            std::string::npos);
  EXPECT_NE(refused([](v1::AgentConfig* c) {
              c->mutable_heartbeat_interval()->set_seconds(86400);
            }).find("heartbeat_interval must be"),
            std::string::npos);
  EXPECT_EQ(refused([](v1::AgentConfig* c) { c->set_mode(static_cast<v1::HistogramMode>(99)); }),
            "AgentConfig: mode 99 is unknown");
  // The bounds themselves are accepted.
  EXPECT_EQ(refused([](v1::AgentConfig* c) {
              proto::ToDuration(kMinHistogramInterval, c->mutable_histogram_interval());
              proto::ToDuration(kMaxPauseBudget, c->mutable_pause_budget());
              proto::ToDuration(kMinHeartbeatInterval, c->mutable_heartbeat_interval());
            }),
            "accepted");
}

TEST(DaemonMessagesTest, RefusesHostileDumpIds) {
  std::string non_utf8("d\xff\xfe", 3);
  for (const std::string& id :
       {std::string(), std::string(65, 'x'), std::string(10240, 'a'),
        std::string("../../etc/passwd"), std::string("a/b"), std::string("a\\b"), std::string(".."),
        std::string("."), non_utf8, std::string("d\n1"),
        std::string("d\0"
                    "1",
                    3)}) {
    StatusOr<DaemonAction> a = CheckDaemonMessage(Dump(id), kRegistered);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->kind, DaemonAction::Kind::kRefuseDumpRequest) << id;
    EXPECT_TRUE(a->dump_id.empty());
    EXPECT_TRUE(absl::StartsWith(a->refusal, "the dump id must")) << a->refusal;
    EXPECT_FALSE(CheckDumpId(id).ok());
  }
  EXPECT_TRUE(CheckDumpId(std::string(64, 'x')).ok());
  EXPECT_TRUE(CheckDumpId("a..b").ok()) << "dots without a separator name no other directory";
}

TEST(DaemonMessagesTest, RefusesUnknownHistogramModes) {
  v1::DaemonMessage h;
  h.mutable_histogram_request()->set_request_id(11);
  h.mutable_histogram_request()->set_mode(static_cast<v1::HistogramMode>(-3));
  StatusOr<DaemonAction> a = CheckDaemonMessage(h, kRegistered);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind, DaemonAction::Kind::kRefuseHistogramRequest);
  EXPECT_EQ(a->request_id, 11u);
  EXPECT_EQ(a->refusal, "histogram mode -3 is unknown to this agent");
}

TEST(DaemonMessagesTest, RefusesUploadOffsetsBeyondTheFile) {
  EXPECT_EQ(CheckUploadOffset("GetUploadStatus", 0, 0).value(), 0u);
  EXPECT_EQ(CheckUploadOffset("GetUploadStatus", 100, 100).value(), 100u);
  StatusOr<uint64_t> r = CheckUploadOffset("GetUploadStatus", 101, 100);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "GetUploadStatus: the daemon holds 101 bytes of a 100-byte dump");
  EXPECT_FALSE(CheckUploadOffset("UploadDump", UINT64_MAX, 1).ok());
}

}  // namespace
}  // namespace heapwatch::agent
