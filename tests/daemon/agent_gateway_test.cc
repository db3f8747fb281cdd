// The agent gateway of a real heapwatchd (daemon::Daemon in-process, real LMDB store, real gRPC
// over a UNIX socket and loopback TCP), driven by a simulated agent: a gRPC client speaking
// heapwatch.agent.v1 (proto/heapwatch/agent/v1/agent.proto) the way libheapwatch_agent.so does.
// Registered agents must show up in the query service exactly like attach agents; deliveries must
// be stored exactly once across reconnects and daemon restarts; malformed input, a second stream
// and missing or wrong credentials are refused; silence makes an agent UNREACHABLE, then DOWN.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "auth/tokens.h"
#include "collectors/agent_identity.h"
#include "daemon/agent_messages.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/agent/v1/agent.grpc.pb.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "openssl/sha.h"
#include "proto/time_util.h"
#include "tests/daemon/test_jvm.h"
#include "tests/http_get.h"
#include "zlib.h"

namespace heapwatch::testing {
namespace {

namespace v1 = ::heapwatch::v1;
namespace av1 = ::heapwatch::agent::v1;
using ::testing::HasSubstr;

constexpr char kHost[] = "gw-test-host";
constexpr int64_t kPid = 4242;
// An hour ago, whole milliseconds (the agent id's resolution): within the store's retention.
const absl::Time kJvmStart = absl::FromUnixMillis(absl::ToUnixMillis(absl::Now()) - 3'600'000);

std::string AgentIdOf(int64_t pid = kPid) {
  return collectors::MakeAgentId(kHost, pid, kJvmStart).value;
}

using ::heapwatch::testing::HttpGet;

// One simulated agent's Connect stream.
class SimAgent {
 public:
  // A null channel: only for building messages (Histogram).
  SimAgent(std::shared_ptr<grpc::Channel> channel, const std::string& bearer = "") {
    if (channel == nullptr) return;
    stub_ = av1::AgentGateway::NewStub(std::move(channel));
    if (!bearer.empty()) context_.AddMetadata("authorization", bearer);
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    stream_ = stub_->Connect(&context_);
  }

  static av1::AgentMessage Register(int64_t pid = kPid) {
    av1::AgentMessage m;
    av1::Register* r = m.mutable_register_();
    r->set_agent_id(AgentIdOf(pid));
    r->set_host(kHost);
    r->set_pid(pid);
    proto::ToTimestamp(kJvmStart, r->mutable_jvm_start_time());
    r->set_main_class("com.example.Leaky");
    r->set_jvm_version("17.0.15+6-Debian-1deb12u1");
    r->set_agent_version("0.9.0");
    r->set_protocol_version(1);
    (*r->mutable_labels())["team"] = "payments";
    return m;
  }

  // Sends Register and reads Registered; false when the stream ended instead.
  bool Open(av1::Registered* registered, int64_t pid = kPid) {
    if (!stream_->Write(Register(pid))) return false;
    av1::DaemonMessage reply;
    if (!stream_->Read(&reply) || !reply.has_registered()) return false;
    *registered = reply.registered();
    return true;
  }

  // A histogram with sequence `seq`: class "com.example.Leak" grows by 1,000 instances of 32 bytes
  // per sequence, plus byte[] and java.lang.String. The first histogram of a stream defines the
  // classes (refs 1..3).
  av1::AgentMessage Histogram(uint64_t seq) {
    av1::AgentMessage m;
    av1::Histogram* h = m.mutable_histogram();
    h->set_sequence(seq);
    proto::ToTimestamp(kJvmStart + absl::Seconds(10 * seq), h->mutable_time());
    h->set_mode(av1::HISTOGRAM_MODE_LIVE);
    proto::ToDuration(absl::Milliseconds(3), h->mutable_pause());
    if (!defined_) {
      const char* names[] = {"com.example.Leak", "byte[]", "java.lang.String"};
      for (uint32_t i = 0; i < 3; ++i) {
        av1::ClassDefinition* c = h->add_new_classes();
        c->set_class_ref(i + 1);
        c->set_class_name(names[i]);
        c->set_module(i == 0 ? "" : "java.base@17.0.15");
      }
      defined_ = true;
    }
    const uint64_t instances[] = {1000 * seq, 500, 700};
    const uint64_t bytes[] = {32000 * seq, 80000, 16800};
    uint64_t ti = 0, tb = 0;
    for (uint32_t i = 0; i < 3; ++i) {
      h->add_class_refs(i + 1);
      h->add_instances(instances[i]);
      h->add_bytes(bytes[i]);
      ti += instances[i];
      tb += bytes[i];
    }
    h->set_total_instances(ti);
    h->set_total_bytes(tb);
    return m;
  }

  // Sends the histogram and returns the Ack's stored_through (0 when the stream ended).
  uint64_t Deliver(const av1::AgentMessage& m) {
    if (!stream_->Write(m)) return 0;
    av1::DaemonMessage reply;
    if (!stream_->Read(&reply) || !reply.has_ack()) return 0;
    return reply.ack().stored_through();
  }
  uint64_t Deliver(uint64_t seq) { return Deliver(Histogram(seq)); }

  bool Write(const av1::AgentMessage& m) { return stream_->Write(m); }
  // Closes the sending side and returns the stream's status.
  grpc::Status Finish() {
    stream_->WritesDone();
    av1::DaemonMessage ignored;
    while (stream_->Read(&ignored)) {
    }
    return stream_->Finish();
  }
  void Cancel() { context_.TryCancel(); }
  // Reads the next daemon message (false when the stream ended).
  bool Read(av1::DaemonMessage* m) { return stream_->Read(m); }

 private:
  std::unique_ptr<av1::AgentGateway::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<av1::AgentMessage, av1::DaemonMessage>> stream_;
  bool defined_ = false;
};

// Free texts from agents are cut at a code point boundary, ill-formed sequences replaced by U+FFFD
// and control characters by '?', so they are safe in a proto3 string and on a terminal.
TEST(PrintableText, CutsAtCodePointsAndReplacesWhatIsNotPrintable) {
  EXPECT_EQ(daemon::PrintableText("budget ok", 400), "budget ok");
  EXPECT_EQ(daemon::PrintableText("a\x1b[2Jb\x7f", 400), "a?[2Jb?");
  EXPECT_EQ(daemon::PrintableText("\xc3\xa9t\xc3\xa9", 4), "\xc3\xa9t");  // not half of the last é
  EXPECT_EQ(daemon::PrintableText("x\xff\xc3", 400), "x\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(daemon::PrintableText("\xc2\x85", 400), "?");  // C1 NEL
  const std::string cut = daemon::PrintableText(std::string(1000, 'x') + "\xe2\x82\xac", 400);
  EXPECT_EQ(cut.size(), 400u);
  EXPECT_TRUE(daemon::IsPrintableUtf8(cut, 400));
}

// A stream decodes every histogram into one Snapshot (its row strings reused): each result must
// equal a fresh decode, whether the next histogram has more rows, fewer, another order, or shorter
// names and modules than the rows it overwrites; a refused histogram leaves the dictionary as it
// was.
TEST(ToSnapshot, DecodingIntoAReusedSnapshotEqualsAFreshDecode) {
  daemon::ClassDictionary fresh_dict, reused_dict;
  Snapshot reused;
  auto histogram = [](uint64_t seq, const std::vector<uint32_t>& refs, bool define) {
    av1::Histogram h;
    h.set_sequence(seq);
    h.mutable_time()->set_seconds(1'700'000'000 + static_cast<int64_t>(seq));
    h.set_mode(av1::HISTOGRAM_MODE_LIVE);
    if (define) {
      for (uint32_t ref = 1; ref <= 4; ++ref) {
        av1::ClassDefinition* c = h.add_new_classes();
        c->set_class_ref(ref);
        // Names and modules of very different lengths (SSO and heap strings).
        c->set_class_name(ref == 2 ? "B"
                                   : "com.example.a.rather.long.pkg.Class" + std::to_string(ref));
        c->set_module(ref % 2 == 0 ? "" : "java.base@17.0.15-with-a-long-version-suffix");
      }
    }
    uint64_t ti = 0, tb = 0;
    for (uint32_t ref : refs) {
      h.add_class_refs(ref);
      h.add_instances(ref * 10 + seq);
      h.add_bytes(ref * 100 + seq);
      ti += ref * 10 + seq;
      tb += ref * 100 + seq;
    }
    h.set_total_instances(ti);
    h.set_total_bytes(tb);
    return h;
  };
  const std::vector<std::vector<uint32_t>> sequences = {{1, 2, 3, 4},       {4, 3, 2, 1}, {2},
                                                        {1, 3, 1, 4, 2, 2}, {},           {3, 2}};
  for (size_t i = 0; i < sequences.size(); ++i) {
    const av1::Histogram h = histogram(i + 1, sequences[i], i == 0);
    auto expected = daemon::ToSnapshot(h, AgentId("agent-a"), &fresh_dict);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(daemon::ToSnapshot(h, AgentId("agent-a"), &reused_dict, &reused).ok());
    EXPECT_EQ(reused.agent, expected->agent);
    EXPECT_EQ(reused.time, expected->time);
    EXPECT_EQ(reused.cost.mode, expected->cost.mode);
    EXPECT_EQ(reused.histogram, expected->histogram) << "histogram " << i;
  }
  // Refused (an undefined class ref): the dictionary is unchanged, and the next valid histogram
  // decodes as before.
  av1::Histogram bad = histogram(10, {1, 9}, false);
  EXPECT_FALSE(daemon::ToSnapshot(bad, AgentId("agent-a"), &reused_dict, &reused).ok());
  EXPECT_EQ(reused_dict.classes.size(), 4u);
  const av1::Histogram h = histogram(11, {4, 1}, false);
  auto expected = daemon::ToSnapshot(h, AgentId("agent-a"), &fresh_dict);
  ASSERT_TRUE(expected.ok());
  ASSERT_TRUE(daemon::ToSnapshot(h, AgentId("agent-a"), &reused_dict, &reused).ok());
  EXPECT_EQ(reused.histogram, expected->histogram);
}

class AgentGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/heapwatch-gw-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    config_.data_dir = dir_ + "/data";
    config_.grpc_listen = "127.0.0.1:0";
    config_.metrics_listen = "127.0.0.1:0";
    config_.agents.listen = "127.0.0.1:0";
    config_.watch.agents.include = {"heapwatch-gateway-test-watches-no-local-jvm"};
    config_.shutdown_grace = absl::Seconds(5);
    config_.escalation.enabled = false;
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartDaemon() {
    ASSERT_TRUE(daemon::ValidateConfig(config_).ok()) << daemon::ValidateConfig(config_);
    auto d = daemon::Daemon::Start(config_);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
    query_ = v1::QueryService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", daemon_->grpc_port()), grpc::InsecureChannelCredentials()));
  }
  std::shared_ptr<grpc::Channel> AgentChannel() {
    const std::string target = config_.agents.listen.starts_with("unix:")
                                   ? config_.agents.listen
                                   : absl::StrCat("127.0.0.1:", daemon_->agent_port());
    return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  }

  std::vector<v1::Agent> ListAgents() {
    grpc::ClientContext context;
    v1::ListAgentsResponse response;
    grpc::Status s = query_->ListAgents(&context, v1::ListAgentsRequest(), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {response.agents().begin(), response.agents().end()};
  }
  // `info` = the test JVM's agent as the daemon's discovery sees it (same id), and the daemon's
  // configuration set to watch that JVM alone.
  void WatchTestJvm(daemon::TestJvm& jvm, AgentInfo* info) {
    ASSERT_TRUE(jvm.ready());
    auto local = jvm.Discover();
    ASSERT_TRUE(local.has_value());
    char host[256] = {};
    ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
    auto read = collectors::ReadAgentInfo(*local, host);
    ASSERT_TRUE(read.ok()) << read.status();
    *info = *std::move(read);
    config_.watch.agents.include = {"HwSecretHolder"};
  }
  std::optional<v1::Agent> FindAgent(const std::string& id) {
    for (const v1::Agent& a : ListAgents()) {
      if (a.agent() == id) return a;
    }
    return std::nullopt;
  }
  // The stored samples of com.example.Leak.
  std::vector<v1::ClassSample> LeakHistory() {
    grpc::ClientContext context;
    v1::GetClassHistoryRequest request;
    request.set_agent(AgentIdOf());
    request.set_class_name("com.example.Leak");
    proto::ToTimestamp(kJvmStart - absl::Hours(1), request.mutable_start_time());
    proto::ToTimestamp(absl::Now() + absl::Hours(48), request.mutable_end_time());
    v1::GetClassHistoryResponse response;
    grpc::Status s = query_->GetClassHistory(&context, request, &response);
    // NOT_FOUND: nothing of the class stored (yet).
    EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::NOT_FOUND) << s.error_message();
    return {response.samples().begin(), response.samples().end()};
  }
  // TriggerExtendedDump of the agent, retried while the escalation has not seen its first histogram
  // (the Ack precedes the ingestion).
  bool Trigger() {
    grpc::Status s;
    bool ok = Eventually([&] {
      grpc::ClientContext context;
      v1::TriggerExtendedDumpRequest trigger;
      trigger.set_agent(AgentIdOf());
      v1::TriggerExtendedDumpResponse triggered;
      s = query_->TriggerExtendedDump(&context, trigger, &triggered);
      return s.ok();
    });
    EXPECT_TRUE(ok) << s.error_message();
    return ok;
  }
  // Whether the agent's newest extended dump has FAILED; it is copied to *done when listed.
  bool NewestDumpFailed(v1::ExtendedDump* done) {
    grpc::ClientContext c;
    v1::ListReportsRequest request;
    request.set_agent(AgentIdOf());
    v1::ListReportsResponse response;
    if (!query_->ListReports(&c, request, &response).ok() || response.dumps().empty()) return false;
    *done = response.dumps(0);
    return done->state() == v1::EXTENDED_DUMP_STATE_FAILED;
  }
  // No raw dump file (nor a .part of one) in the daemon's dump directory.
  void ExpectNoRawDumpLeft() {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ + "/data/dumps")) {
      EXPECT_FALSE(e.is_regular_file()) << e.path();
    }
  }
  // heapwatch_store_commits_total on the daemon's /metrics; -1 when the sample is missing.
  double StoreCommits() {
    const std::string metrics = HttpGet(daemon_->metrics_port(), "/metrics");
    const std::string name = "\nheapwatch_store_commits_total ";
    const size_t at = metrics.find(name);
    if (at == std::string::npos) return -1;
    return std::strtod(metrics.c_str() + at + name.size(), nullptr);
  }
  // Waits up to `limit` for `pred`.
  template <typename Pred>
  bool Eventually(Pred pred, absl::Duration limit = absl::Seconds(5)) {
    for (absl::Time end = absl::Now() + limit; absl::Now() < end;) {
      if (pred()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return pred();
  }

  std::string dir_;
  daemon::Config config_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::unique_ptr<v1::QueryService::Stub> query_;
};

TEST_F(AgentGatewayTest, RegisteredAgentOverUnixSocketIsServedLikeAnAttachAgent) {
  const std::string sock_dir = dir_ + "/run";
  ASSERT_EQ(mkdir(sock_dir.c_str(), 0700), 0);
  config_.agents.listen = "unix:" + sock_dir + "/agent.sock";
  StartDaemon();
  struct stat st {};
  ASSERT_EQ(stat((sock_dir + "/agent.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  EXPECT_EQ(registered.stored_through(), 0u);
  EXPECT_EQ(registered.config().heartbeat_interval().seconds(), 10);
  EXPECT_EQ(registered.config().histogram_interval().seconds(),
            absl::ToInt64Seconds(config_.collection.interval));
  EXPECT_EQ(registered.config().mode(), av1::HISTOGRAM_MODE_LIVE);
  // Registering wrote the agent's record: at least one commit, seen at the scrape.
  const double commits_before = StoreCommits();
  EXPECT_GE(commits_before, 1);
  for (uint64_t seq = 1; seq <= 4; ++seq) EXPECT_EQ(agent.Deliver(seq), seq);
  // One stream's deliveries are stored one after another (the next is sent after the Ack), so
  // group commit has nothing to share: a commit each at least.
  EXPECT_GE(StoreCommits(), commits_before + 4);

  auto listed = FindAgent(AgentIdOf());
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->kind(), v1::AGENT_KIND_REGISTERED);
  EXPECT_EQ(listed->state(), v1::AGENT_STATE_UP);
  EXPECT_EQ(listed->pid(), kPid);
  EXPECT_EQ(listed->main_class(), "com.example.Leaky");
  EXPECT_TRUE(listed->has_last_snapshot_time());
  const std::vector<v1::ClassSample> history = LeakHistory();
  ASSERT_EQ(history.size(), 4u);
  EXPECT_EQ(history[0].bytes(), 32000u);
  EXPECT_EQ(history[3].instances(), 4000u);
  // The same path as attach collections: the agent's series are on /metrics.
  const std::string metrics = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat("heapwatch_agent_up{agent=\"", AgentIdOf())));
  EXPECT_THAT(metrics, HasSubstr("heapwatch_agent_deliveries_total{result=\"stored\"} 4"));
  EXPECT_THAT(metrics, HasSubstr("heapwatch_agents_connected 1"));
  EXPECT_TRUE(agent.Finish().ok());
}

TEST_F(AgentGatewayTest, ResentDeliveriesAreStoredOnceAcrossReconnectsAndRestarts) {
  StartDaemon();
  {
    SimAgent agent(AgentChannel());
    av1::Registered registered;
    ASSERT_TRUE(agent.Open(&registered));
    EXPECT_EQ(agent.Deliver(1), 1u);
    EXPECT_EQ(agent.Deliver(2), 2u);
    agent.Cancel();  // the connection breaks
  }
  ASSERT_TRUE(Eventually([&] {
    return HttpGet(daemon_->metrics_port(), "/metrics").find("heapwatch_agents_connected 0") !=
           std::string::npos;
  }));
  {
    // The agent's buffer still holds 2 (say its Ack was lost) and has 3 and 5 (4 overflowed).
    SimAgent agent(AgentChannel());
    av1::Registered registered;
    ASSERT_TRUE(agent.Open(&registered));
    EXPECT_EQ(registered.stored_through(), 2u);
    EXPECT_EQ(agent.Deliver(2), 2u);  // acknowledged, dropped
    EXPECT_EQ(agent.Deliver(3), 3u);
    EXPECT_EQ(agent.Deliver(5), 5u);
    EXPECT_TRUE(agent.Finish().ok());
  }
  EXPECT_EQ(LeakHistory().size(), 4u);
  const std::string metrics = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("heapwatch_agent_deliveries_total{result=\"duplicate\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("heapwatch_agent_delivery_gaps_total 1"));

  // A restarted daemon on the same store knows what it stored.
  ASSERT_TRUE(daemon_->Shutdown());
  daemon_.reset();
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  EXPECT_EQ(registered.stored_through(), 5u);
  EXPECT_EQ(agent.Deliver(3), 5u);  // an old one: dropped
  EXPECT_EQ(agent.Deliver(6), 6u);
  EXPECT_TRUE(agent.Finish().ok());
  EXPECT_EQ(LeakHistory().size(), 5u);
  EXPECT_EQ(FindAgent(AgentIdOf())->kind(), v1::AGENT_KIND_REGISTERED);
}

TEST_F(AgentGatewayTest, MalformedMessagesAreRefused) {
  StartDaemon();
  auto refused = [&](const std::function<void(av1::Histogram*)>& corrupt) {
    SimAgent agent(AgentChannel());
    av1::Registered registered;
    if (!agent.Open(&registered)) return grpc::Status(grpc::StatusCode::UNKNOWN, "no Registered");
    av1::AgentMessage m = agent.Histogram(100);
    corrupt(m.mutable_histogram());
    agent.Write(m);
    return agent.Finish();
  };
  struct Case {
    const char* what;
    std::function<void(av1::Histogram*)> corrupt;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"unequal arrays", [](av1::Histogram* h) { h->add_bytes(1); }, "equal lengths"},
      {"undefined ref", [](av1::Histogram* h) { h->set_class_refs(1, 9); }, "undefined class_ref"},
      {"totals", [](av1::Histogram* h) { h->set_total_bytes(h->total_bytes() + 1); }, "totals"},
      {"control character",
       [](av1::Histogram* h) { h->mutable_new_classes(0)->set_class_name("Evil\n[ERROR] x"); },
       "printable"},
      {"DEL", [](av1::Histogram* h) { h->mutable_new_classes(0)->set_class_name("A\x7f"); },
       "printable"},
      {"C1 control (U+0085)",
       [](av1::Histogram* h) { h->mutable_new_classes(0)->set_class_name("A\xc2\x85"); },
       "printable"},
      {"long name",
       [](av1::Histogram* h) { h->mutable_new_classes(0)->set_class_name(std::string(4097, 'a')); },
       "4096"},
      {"ref 0", [](av1::Histogram* h) { h->mutable_new_classes(0)->set_class_ref(0); }, "ref 0"},
      {"no mode", [](av1::Histogram* h) { h->set_mode(av1::HISTOGRAM_MODE_UNSPECIFIED); }, "mode"},
      {"sequence 0", [](av1::Histogram* h) { h->set_sequence(0); }, "sequence"},
  };
  for (const Case& c : cases) {
    grpc::Status s = refused(c.corrupt);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_THAT(s.error_message(), HasSubstr(c.message)) << c.what;
  }
  // A Register whose id is not the agent id scheme's, and a stream that does not start with one.
  {
    SimAgent agent(AgentChannel());
    av1::AgentMessage m = SimAgent::Register();
    m.mutable_register_()->set_agent_id("someone-else");
    agent.Write(m);
    grpc::Status s = agent.Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("MakeAgentId"));
  }
  {
    SimAgent agent(AgentChannel());
    av1::AgentMessage m;
    m.mutable_heartbeat();
    agent.Write(m);
    EXPECT_EQ(agent.Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_TRUE(LeakHistory().empty());
  EXPECT_THAT(
      HttpGet(daemon_->metrics_port(), "/metrics"),
      HasSubstr("heapwatch_agent_deliveries_refused_total{reason=\"invalid_histogram\"} 9"));
  EXPECT_THAT(HttpGet(daemon_->metrics_port(), "/metrics"),
              HasSubstr("heapwatch_agent_delivery_gaps_total 0"));
}

// A stream's class dictionary is bounded (64 MiB of names): an agent defining ever more long names
// is refused before the daemon's memory is.
TEST_F(AgentGatewayTest, ClassDictionaryOfAStreamIsBounded) {
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  grpc::Status status;
  uint32_t next_ref = 1;
  for (uint64_t seq = 1; seq <= 20; ++seq) {  // 20 x 3.9 MiB of names
    av1::AgentMessage m;
    av1::Histogram* h = m.mutable_histogram();
    h->set_sequence(seq);
    proto::ToTimestamp(kJvmStart + absl::Seconds(seq), h->mutable_time());
    h->set_mode(av1::HISTOGRAM_MODE_ALL);
    for (int i = 0; i < 1000; ++i) {
      av1::ClassDefinition* c = h->add_new_classes();
      c->set_class_ref(next_ref);
      c->set_class_name(absl::StrCat("C", next_ref++, std::string(4000, 'x')));
    }
    if (agent.Deliver(m) != seq) break;
  }
  status = agent.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("64 MiB"));
}

TEST_F(AgentGatewayTest, SecondStreamOfAnOpenAgentIsRefused) {
  StartDaemon();
  SimAgent first(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(first.Open(&registered));
  SimAgent second(AgentChannel());
  second.Write(SimAgent::Register());
  grpc::Status s = second.Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(first.Deliver(1), 1u);  // the first stream is unaffected
  EXPECT_TRUE(first.Finish().ok());
}

TEST_F(AgentGatewayTest, TcpWithTokensNeedsAnAgentToken) {
  const std::string tokens = dir_ + "/tokens.txt";
  {
    std::ofstream out(tokens);
    out << "read grafana " << auth::DigestHex(auth::Sha256("r-0123")) << "\n"
        << "admin oncall " << auth::DigestHex(auth::Sha256("a-0123")) << "\n"
        << "agent jvm1 " << auth::DigestHex(auth::Sha256("j-0123")) << "\n";
  }
  config_.auth.tokens_file = tokens;
  StartDaemon();
  auto open = [&](const std::string& bearer) {
    SimAgent agent(AgentChannel(), bearer);
    av1::Registered registered;
    if (agent.Open(&registered)) {
      agent.Finish();
      return grpc::Status::OK;
    }
    return agent.Finish();
  };
  EXPECT_EQ(open("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(open("Bearer j-0124").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(open("Bearer r-0123").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(open("Bearer a-0123").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(open("Bearer j-0123").ok());
  const std::string metrics = HttpGet(daemon_->metrics_port(), "/metrics", "Bearer r-0123");
  EXPECT_THAT(metrics, HasSubstr("heapwatch_auth_failures_total{reason=\"wrong_role\"} 2"));
}

TEST_F(AgentGatewayTest, NonLoopbackTcpWithoutTokensIsRefusedAtStart) {
  config_.agents.listen = "0.0.0.0:0";
  auto d = daemon::Daemon::Start(config_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("agent gateway"));
}

TEST_F(AgentGatewayTest, SilentAgentIsUnreachableThenDown) {
  config_.agents.heartbeat_interval = absl::Milliseconds(50);
  config_.agents.down_after = absl::Milliseconds(400);
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  EXPECT_EQ(registered.config().heartbeat_interval().nanos(), 50'000'000);
  EXPECT_EQ(agent.Deliver(1), 1u);
  // Heartbeats keep it up.
  for (int i = 0; i < 8; ++i) {
    av1::AgentMessage hb;
    hb.mutable_heartbeat();
    ASSERT_TRUE(agent.Write(hb));
    absl::SleepFor(absl::Milliseconds(40));
  }
  EXPECT_EQ(FindAgent(AgentIdOf())->state(), v1::AGENT_STATE_UP);
  // Silence: 3 heartbeat intervals.
  EXPECT_TRUE(Eventually([&] {
    auto a = FindAgent(AgentIdOf());
    return a && a->state() == v1::AGENT_STATE_UNREACHABLE;
  }));
  EXPECT_THAT(FindAgent(AgentIdOf())->last_error(), HasSubstr("silent"));
  // It speaks again: up.
  EXPECT_EQ(agent.Deliver(2), 2u);
  EXPECT_EQ(FindAgent(AgentIdOf())->state(), v1::AGENT_STATE_UP);
  // Its stream ends: down after agents.down_after (reported from the store).
  EXPECT_TRUE(agent.Finish().ok());
  EXPECT_TRUE(Eventually([&] {
    auto a = FindAgent(AgentIdOf());
    return a && a->state() == v1::AGENT_STATE_DOWN;
  }));
}

// The file's bytes.
std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

av1::DumpChunk Chunk(const std::string& dump_id, const std::string& file, uint64_t offset,
                     size_t size) {
  av1::DumpChunk c;
  c.set_agent_id(AgentIdOf());
  c.set_dump_id(dump_id);
  c.set_offset(offset);
  size = std::min(size, file.size() - offset);
  c.set_data(file.substr(offset, size));
  c.set_crc32(crc32(0, reinterpret_cast<const Bytef*>(c.data().data()), c.data().size()));
  c.set_last(offset + size == file.size());
  return c;
}

// An automatic-escalation-free manual dump of a registered agent travels through its stream: the
// simulated agent answers DumpRequest with a real gzip HPROF (eclipse-mat corpus), its first upload
// breaks after two chunks, a chunk with a bad CRC-32 is refused, the upload resumes where
// GetUploadStatus says, and the escalation analyses the file (extended dump DONE).
TEST_F(AgentGatewayTest, ExtendedDumpTravelsThroughTheAgentAndResumesAfterABrokenUpload) {
  const std::string hprof =
      std::string(HEAPWATCH_CORPORA_DIR) + "/eclipse-mat/java_pid1884.0001.hprof.gz";
  if (!std::filesystem::exists(hprof)) GTEST_SKIP() << "corpus missing: " << hprof;
  const std::string file = ReadFile(hprof);
  config_.escalation.enabled = true;
  config_.escalation.automatic = false;
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  ASSERT_EQ(agent.Deliver(1), 1u);

  std::thread uploader([&] {
    av1::DaemonMessage m;
    while (agent.Read(&m) && !m.has_dump_request()) {
    }
    if (!m.has_dump_request()) return;
    const std::string id = m.dump_request().dump_id();
    EXPECT_TRUE(m.dump_request().gzip());
    av1::AgentMessage ready;
    ready.mutable_dump_ready()->set_dump_id(id);
    ready.mutable_dump_ready()->set_size_bytes(file.size());
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(file.data()), file.size(), digest);
    ready.mutable_dump_ready()->set_sha256(std::string(reinterpret_cast<char*>(digest), 32));
    ready.mutable_dump_ready()->set_gzip(true);
    proto::ToDuration(absl::Milliseconds(250), ready.mutable_dump_ready()->mutable_pause());
    ASSERT_TRUE(agent.Write(ready));
    auto stub = av1::AgentGateway::NewStub(AgentChannel());
    constexpr size_t kChunk = 256 << 10;
    uint64_t offset = 0;
    auto received_two_chunks = [&] {
      grpc::ClientContext context;
      av1::GetUploadStatusRequest request;
      request.set_agent_id(AgentIdOf());
      request.set_dump_id(id);
      av1::GetUploadStatusReply reply;
      if (!stub->GetUploadStatus(&context, request, &reply).ok()) return false;
      offset = reply.received_bytes();
      return offset == 2 * kChunk;
    };
    {  // Broken after two chunks, once the daemon holds them (a fixed 200 ms sleep before the
       // cancel could lose the second chunk with the call on a loaded machine).
      grpc::ClientContext context;
      av1::UploadDumpReply reply;
      auto writer = stub->UploadDump(&context, &reply);
      ASSERT_TRUE(writer->Write(Chunk(id, file, 0, kChunk)));
      ASSERT_TRUE(writer->Write(Chunk(id, file, kChunk, kChunk)));
      EXPECT_TRUE(Eventually(received_two_chunks, absl::Seconds(30)));
      context.TryCancel();
      writer->Finish();
    }
    ASSERT_TRUE(Eventually(received_two_chunks));
    {  // A corrupted chunk: refused, nothing taken.
      grpc::ClientContext context;
      av1::UploadDumpReply reply;
      auto writer = stub->UploadDump(&context, &reply);
      av1::DumpChunk bad = Chunk(id, file, offset, kChunk);
      bad.set_crc32(bad.crc32() ^ 1);
      writer->Write(bad);
      writer->WritesDone();
      EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::DATA_LOSS);
      grpc::ClientContext status_context;
      av1::GetUploadStatusRequest request;
      request.set_agent_id(AgentIdOf());
      request.set_dump_id(id);
      av1::GetUploadStatusReply status;
      ASSERT_TRUE(stub->GetUploadStatus(&status_context, request, &status).ok());
      EXPECT_EQ(status.received_bytes(), offset);
    }
    {  // Resumed to the end.
      grpc::ClientContext context;
      av1::UploadDumpReply reply;
      auto writer = stub->UploadDump(&context, &reply);
      for (uint64_t o = offset; o < file.size(); o += kChunk) {
        ASSERT_TRUE(writer->Write(Chunk(id, file, o, kChunk)));
      }
      writer->WritesDone();
      grpc::Status s = writer->Finish();
      EXPECT_TRUE(s.ok()) << s.error_message();
      EXPECT_TRUE(reply.complete());
      EXPECT_EQ(reply.received_bytes(), file.size());
    }
  });
  ASSERT_TRUE(Trigger());
  v1::ExtendedDump done;
  EXPECT_TRUE(Eventually(
      [&] {
        grpc::ClientContext c;
        v1::ListReportsRequest request;
        request.set_agent(AgentIdOf());
        v1::ListReportsResponse response;
        if (!query_->ListReports(&c, request, &response).ok() || response.dumps().empty())
          return false;
        done = response.dumps(0);
        return done.state() == v1::EXTENDED_DUMP_STATE_DONE ||
               done.state() == v1::EXTENDED_DUMP_STATE_FAILED;
      },
      absl::Seconds(60)));
  EXPECT_EQ(done.state(), v1::EXTENDED_DUMP_STATE_DONE) << done.error();
  EXPECT_EQ(done.file_bytes(), file.size());
  uploader.join();
  // No raw dump and no partial file left.
  ExpectNoRawDumpLeft();
  EXPECT_TRUE(agent.Finish().ok());
}

// A dump the agent cannot take fails cleanly with the agent's reason and leaves no file.
TEST_F(AgentGatewayTest, DumpFailedOnTheAgentFailsTheExtendedDump) {
  config_.escalation.enabled = true;
  config_.escalation.automatic = false;
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  ASSERT_EQ(agent.Deliver(1), 1u);
  std::thread answer([&] {
    av1::DaemonMessage m;
    while (agent.Read(&m) && !m.has_dump_request()) {
    }
    av1::AgentMessage failed;
    failed.mutable_dump_failed()->set_dump_id(m.dump_request().dump_id());
    failed.mutable_dump_failed()->set_reason("GC.heap_dump failed: No space left on device");
    agent.Write(failed);
  });
  ASSERT_TRUE(Trigger());
  v1::ExtendedDump done;
  EXPECT_TRUE(Eventually([&] { return NewestDumpFailed(&done); }));
  EXPECT_THAT(done.error(), HasSubstr("No space left on device"));
  answer.join();
  ExpectNoRawDumpLeft();
  EXPECT_TRUE(agent.Finish().ok());
}

// An upload whose bytes do not match DumpReady's SHA-256 fails the dump; nothing is kept.
TEST_F(AgentGatewayTest, UploadWithWrongSha256FailsTheExtendedDump) {
  config_.escalation.enabled = true;
  config_.escalation.automatic = false;
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  ASSERT_EQ(agent.Deliver(1), 1u);
  const std::string file(100'000, 'x');
  std::thread uploader([&] {
    av1::DaemonMessage m;
    while (agent.Read(&m) && !m.has_dump_request()) {
    }
    const std::string id = m.dump_request().dump_id();
    av1::AgentMessage ready;
    ready.mutable_dump_ready()->set_dump_id(id);
    ready.mutable_dump_ready()->set_size_bytes(file.size());
    ready.mutable_dump_ready()->set_sha256(std::string(32, '\0'));
    agent.Write(ready);
    auto stub = av1::AgentGateway::NewStub(AgentChannel());
    grpc::ClientContext context;
    av1::UploadDumpReply reply;
    auto writer = stub->UploadDump(&context, &reply);
    writer->Write(Chunk(id, file, 0, file.size()));
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::DATA_LOSS);
  });
  ASSERT_TRUE(Trigger());
  v1::ExtendedDump done;
  EXPECT_TRUE(Eventually([&] { return NewestDumpFailed(&done); }));
  EXPECT_THAT(done.error(), HasSubstr("SHA-256"));
  uploader.join();
  ExpectNoRawDumpLeft();
  EXPECT_TRUE(agent.Finish().ok());
}

// heapwatchd as a process, killed with SIGKILL while an agent delivers as fast as it can: after a
// restart on the same store, Registered.stored_through tells the agent where to resume, and every
// histogram the agent produced is stored exactly once (the Leak class's instances name the
// sequence).
TEST_F(AgentGatewayTest, KillNineBetweenStoreAndAckLosesAndDuplicatesNothing) {
  const std::string yaml = dir_ + "/config.yaml";
  {
    std::ofstream out(yaml);
    out << "data_dir: " << dir_ << "/data\n"
        << "grpc_listen: 127.0.0.1:0\nmetrics_listen: 127.0.0.1:0\n"
        << "grpc_port_file: " << dir_ << "/grpc.port\nlog_level: warn\n"
        << "watch: {agents: {include: [heapwatch-gateway-test-watches-no-local-jvm]}}\n"
        << "escalation: {enabled: false}\n"
        << "agents: {listen: 'unix:" << dir_ << "/agent.sock'}\n";
  }
  config_.agents.listen = "unix:" + dir_ + "/agent.sock";
  auto start = [&]() -> pid_t {
    std::filesystem::remove(dir_ + "/grpc.port");
    pid_t pid = fork();
    if (pid == 0) {
      execl(HEAPWATCHD, "heapwatchd", "--config", yaml.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 200 && !std::filesystem::exists(dir_ + "/grpc.port"); ++i) {
      absl::SleepFor(absl::Milliseconds(25));
    }
    return pid;
  };
  uint64_t produced = 0;  // the agent's last sequence
  uint64_t acked = 0;
  std::vector<av1::AgentMessage> buffer;  // produced, not acknowledged
  std::mt19937 rng(7);
  for (int round = 0; round < 3; ++round) {
    const pid_t daemon_pid = start();
    ASSERT_GT(daemon_pid, 0);
    {
      SimAgent agent(
          grpc::CreateChannel(config_.agents.listen, grpc::InsecureChannelCredentials()));
      av1::Registered registered;
      ASSERT_TRUE(agent.Open(&registered)) << "round " << round;
      EXPECT_GE(registered.stored_through(), acked);
      acked = registered.stored_through();
      std::erase_if(buffer,
                    [&](const av1::AgentMessage& m) { return m.histogram().sequence() <= acked; });
      // Resend what is buffered (a new stream defines its classes again), then produce more
      // until the daemon is killed under our feet.
      std::vector<av1::AgentMessage> resend;
      for (const av1::AgentMessage& m : buffer) resend.push_back(m);
      std::thread killer([&, daemon_pid] {
        absl::SleepFor(absl::Milliseconds(150 + rng() % 200));
        kill(daemon_pid, SIGKILL);
      });
      bool first = true;
      for (size_t i = 0;; ++i) {
        av1::AgentMessage m;
        if (i < resend.size()) {
          m = resend[i];
        } else {
          m = agent.Histogram(++produced);
          m.mutable_histogram()->clear_new_classes();
          buffer.push_back(m);
        }
        if (first) {  // the first message of a stream defines the classes
          SimAgent fresh(nullptr);
          av1::AgentMessage defs = fresh.Histogram(m.histogram().sequence());
          *m.mutable_histogram()->mutable_new_classes() = defs.histogram().new_classes();
          first = false;
        }
        const uint64_t ack = agent.Deliver(m);
        if (ack == 0) break;  // killed
        acked = std::max(acked, ack);
      }
      killer.join();
    }
    waitpid(daemon_pid, nullptr, 0);
  }
  // A last, gentle round: everything buffered is delivered.
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  EXPECT_GE(registered.stored_through(), acked);
  bool first = true;
  for (av1::AgentMessage m : buffer) {
    if (m.histogram().sequence() <= registered.stored_through()) continue;
    if (first) {
      SimAgent fresh(nullptr);
      *m.mutable_histogram()->mutable_new_classes() = fresh.Histogram(1).histogram().new_classes();
      first = false;
    }
    EXPECT_EQ(agent.Deliver(m), m.histogram().sequence());
  }
  EXPECT_TRUE(agent.Finish().ok());
  // Exactly once: one sample per produced sequence, each naming its own.
  const std::vector<v1::ClassSample> history = LeakHistory();
  ASSERT_EQ(history.size(), produced);
  for (size_t i = 0; i < history.size(); ++i) EXPECT_EQ(history[i].instances(), 1000 * (i + 1));
  EXPECT_GT(produced, 3u);
}

// A real JVM watched through the attach socket whose agent then registers: the attach collections
// stop (the daemon's discovery leaves a registered id alone) and only the agent's deliveries are
// stored; the agent is listed once, as REGISTERED.
TEST_F(AgentGatewayTest, JvmWhoseAgentRegistersIsNoLongerCollectedThroughAttach) {
  daemon::TestJvm jvm(10);
  AgentInfo info;
  ASSERT_NO_FATAL_FAILURE(WatchTestJvm(jvm, &info));
  config_.collection.all_objects.include = {"HwSecretHolder"};  // -all: no GC forced on any JVM
  config_.collection.interval = absl::Milliseconds(200);
  config_.collection.discovery_interval = absl::Milliseconds(100);
  StartDaemon();
  auto snapshot_count = [&]() -> size_t {
    grpc::ClientContext context;
    v1::GetClassHistoryRequest request;
    request.set_agent(info.id.value);
    request.set_class_name("java.lang.String");
    proto::ToTimestamp(absl::Now() - absl::Hours(1), request.mutable_start_time());
    proto::ToTimestamp(absl::Now() + absl::Hours(48), request.mutable_end_time());
    v1::GetClassHistoryResponse response;
    if (!query_->GetClassHistory(&context, request, &response).ok()) return 0;
    return response.samples_size();
  };
  ASSERT_TRUE(Eventually([&] { return snapshot_count() >= 2; }, absl::Seconds(20)))
      << "the JVM is not collected through the attach socket";
  EXPECT_EQ(FindAgent(info.id.value)->kind(), v1::AGENT_KIND_LOCAL_ATTACH);

  SimAgent agent(AgentChannel());
  av1::AgentMessage reg = SimAgent::Register();
  reg.mutable_register_()->set_agent_id(info.id.value);
  reg.mutable_register_()->set_host(info.host);
  reg.mutable_register_()->set_pid(info.pid);
  reg.mutable_register_()->set_main_class(info.main_class);
  proto::ToTimestamp(info.start_time, reg.mutable_register_()->mutable_jvm_start_time());
  ASSERT_TRUE(agent.Write(reg));
  av1::DaemonMessage registered;
  ASSERT_TRUE(agent.Read(&registered) && registered.has_registered());
  EXPECT_EQ(FindAgent(info.id.value)->kind(), v1::AGENT_KIND_REGISTERED);
  absl::SleepFor(absl::Milliseconds(300));  // a collection in flight at registration may end
  const size_t before = snapshot_count();
  absl::SleepFor(absl::Milliseconds(1500));  // 7 attach intervals, 15 discoveries
  EXPECT_EQ(snapshot_count(), before) << "still collected through the attach socket";
  const auto listed_agent = FindAgent(info.id.value);
  EXPECT_EQ(listed_agent->state(), v1::AGENT_STATE_UP);
  EXPECT_EQ(listed_agent->last_error(), "");
  size_t listed = 0;
  for (const v1::Agent& a : ListAgents()) listed += a.agent() == info.id.value;
  EXPECT_EQ(listed, 1u);
  EXPECT_TRUE(agent.Finish().ok());
}

// A JVM that is already registered when discovery first sees it is never collected through the
// attach socket (discovery skips registered ids).
TEST_F(AgentGatewayTest, DiscoverySkipsAJvmWhoseAgentIsRegistered) {
  config_.watch.agents.include = {"HwSecretHolder"};
  config_.collection.all_objects.include = {"HwSecretHolder"};  // -all: no GC forced on any JVM
  config_.collection.interval = absl::Milliseconds(200);
  config_.collection.discovery_interval = absl::Seconds(3);
  StartDaemon();  // its first discovery runs now, before the JVM exists
  const absl::Time started = absl::Now();
  daemon::TestJvm jvm(10);
  ASSERT_TRUE(jvm.ready());
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  auto info = collectors::ReadAgentInfo(*local, host);
  ASSERT_TRUE(info.ok()) << info.status();
  SimAgent agent(AgentChannel());
  av1::AgentMessage reg = SimAgent::Register();
  reg.mutable_register_()->set_agent_id(info->id.value);
  reg.mutable_register_()->set_host(host);
  reg.mutable_register_()->set_pid(info->pid);
  reg.mutable_register_()->set_main_class(info->main_class);
  proto::ToTimestamp(info->start_time, reg.mutable_register_()->mutable_jvm_start_time());
  if (absl::Now() - started > absl::Milliseconds(2500) || FindAgent(info->id.value).has_value()) {
    GTEST_SKIP() << "the JVM took too long to start: discovery may have seen it first";
  }
  ASSERT_TRUE(agent.Write(reg));
  av1::DaemonMessage registered;
  ASSERT_TRUE(agent.Read(&registered) && registered.has_registered());
  absl::SleepFor(started + absl::Seconds(3) + absl::Milliseconds(800) - absl::Now());
  // The second discovery has run (and collections every 200 ms would have followed).
  const auto listed = FindAgent(info->id.value);
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->kind(), v1::AGENT_KIND_REGISTERED);
  EXPECT_FALSE(listed->has_last_snapshot_time()) << "collected through the attach socket";
  EXPECT_TRUE(agent.Finish().ok());
}

// The pause budget of a registered agent: the daemon pushes all of it (fraction, window, longest
// interval) and the agent's own mode (collection.all_objects by main class); what the agent's
// budget reports on its heartbeats is shown by ListAgents and /metrics as for an attach agent.
TEST_F(AgentGatewayTest, BudgetIsPushedAndTheAgentsReportIsShownLikeAnAttachAgents) {
  config_.agents.listen = "127.0.0.1:0";
  config_.collection.pause_budget = 0.002;
  config_.collection.pause_budget_window = absl::Minutes(20);
  config_.collection.max_interval = absl::Hours(2);
  config_.collection.all_objects.include = {"com.example.Leaky"};
  StartDaemon();
  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  const av1::AgentConfig& c = registered.config();
  EXPECT_DOUBLE_EQ(c.pause_budget_fraction(), 0.002);
  EXPECT_EQ(proto::FromDuration(c.pause_budget_window()).value(), absl::Minutes(20));
  EXPECT_EQ(proto::FromDuration(c.max_interval()).value(), absl::Hours(2));
  EXPECT_EQ(c.mode(), av1::HISTOGRAM_MODE_ALL) << "collection.all_objects matches its main class";
  EXPECT_TRUE(c.histogram_after_old_gc());
  // Old agents read the per-interval pause.
  EXPECT_EQ(proto::FromDuration(c.pause_budget()).value(), config_.collection.interval * 0.002);

  av1::AgentMessage hb;
  av1::Heartbeat* h = hb.mutable_heartbeat();
  proto::ToTimestamp(absl::Now(), h->mutable_time());
  h->set_budget_note("over budget: even the cheapest histogram every 2h exceeds\nthe budget");
  h->set_over_budget(true);
  proto::ToDuration(absl::Hours(2), h->mutable_planned_interval());
  proto::ToDuration(absl::Milliseconds(1500), h->mutable_total_pause());
  ASSERT_TRUE(agent.Write(hb));
  std::optional<v1::Agent> listed;
  ASSERT_TRUE(Eventually([&] {
    listed = FindAgent(AgentIdOf());
    return listed.has_value() && listed->over_budget();
  }));
  EXPECT_EQ(listed->budget_note(),
            "over budget: even the cheapest histogram every 2h exceeds?the budget");
  // Register's labels are kept and listed.
  EXPECT_EQ(listed->labels().size(), 1u);
  EXPECT_EQ(listed->labels().at("team"), "payments");
  EXPECT_EQ(proto::FromDuration(listed->planned_interval()).value(), absl::Hours(2));
  EXPECT_EQ(proto::FromDuration(listed->total_pause()).value(), absl::Milliseconds(1500));
  EXPECT_THAT(
      HttpGet(daemon_->metrics_port(), "/metrics"),
      HasSubstr(absl::StrCat("heapwatch_pause_budget_exceeded{agent=\"", AgentIdOf(), "\"} 1")));
  // Back within budget: the note clears, the metric drops to 0.
  h->clear_budget_note();
  h->set_over_budget(false);
  proto::ToDuration(absl::Minutes(1), h->mutable_planned_interval());
  ASSERT_TRUE(agent.Write(hb));
  ASSERT_TRUE(Eventually([&] {
    listed = FindAgent(AgentIdOf());
    return listed.has_value() && !listed->over_budget();
  }));
  EXPECT_EQ(listed->budget_note(), "");
  EXPECT_THAT(
      HttpGet(daemon_->metrics_port(), "/metrics"),
      HasSubstr(absl::StrCat("heapwatch_pause_budget_exceeded{agent=\"", AgentIdOf(), "\"} 0")));
  EXPECT_TRUE(agent.Finish().ok());
}

// "Histogram now" (QueryService.CollectHistogram) of a registered agent: the daemon sends
// HistogramRequest on the agent's stream and answers once the histogram with that request id is
// stored; clear errors for an unknown agent, a failed request, an agent that does not answer in
// time and one that is not connected.
TEST_F(AgentGatewayTest, CollectHistogramOfARegisteredAgentGoesThroughItsStream) {
  config_.agents.listen = "127.0.0.1:0";
  StartDaemon();
  auto collect = [&](const std::string& agent, v1::HistogramMode mode, absl::Duration deadline,
                     v1::CollectHistogramResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    v1::CollectHistogramRequest request;
    request.set_agent(agent);
    request.set_mode(mode);
    return query_->CollectHistogram(&context, request, response);
  };
  v1::CollectHistogramResponse response;
  EXPECT_EQ(collect("nobody", v1::HISTOGRAM_MODE_ALL, absl::Seconds(5), &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(collect(AgentIdOf(), v1::HISTOGRAM_MODE_ALL_AFTER_GC, absl::Seconds(5), &response)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  SimAgent agent(AgentChannel());
  av1::Registered registered;
  ASSERT_TRUE(agent.Open(&registered));
  // Answered: the histogram with the request's id is stored, then the call returns.
  grpc::Status status;
  std::thread caller(
      [&] { status = collect(AgentIdOf(), v1::HISTOGRAM_MODE_ALL, absl::Seconds(10), &response); });
  av1::DaemonMessage m;
  ASSERT_TRUE(agent.Read(&m));
  ASSERT_TRUE(m.has_histogram_request()) << m.DebugString();
  EXPECT_EQ(m.histogram_request().mode(), av1::HISTOGRAM_MODE_ALL);
  EXPECT_NE(m.histogram_request().request_id(), 0u);
  av1::AgentMessage h = agent.Histogram(1);
  h.mutable_histogram()->set_request_id(m.histogram_request().request_id());
  h.mutable_histogram()->set_mode(av1::HISTOGRAM_MODE_ALL);
  // A real agent's clock has nanoseconds; the store keeps microseconds.
  h.mutable_histogram()->mutable_time()->set_nanos(123456789);
  EXPECT_EQ(agent.Deliver(h), 1u);
  caller.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.mode(), v1::HISTOGRAM_MODE_ALL);
  EXPECT_EQ(proto::FromDuration(response.pause()).value(), absl::Milliseconds(3));
  EXPECT_EQ(response.classes(), 3u);
  EXPECT_EQ(response.total_instances(), 1000u + 500 + 700);
  // The response names the stored snapshot: its time as stored (the 789 ns cut).
  const absl::Time sent = proto::FromTimestamp(h.histogram().time()).value();
  EXPECT_EQ(proto::FromTimestamp(response.time()).value(), sent - absl::Nanoseconds(789));
  ASSERT_EQ(LeakHistory().size(), 1u) << "stored like any histogram";
  EXPECT_EQ(proto::FromTimestamp(LeakHistory()[0].time()).value(),
            proto::FromTimestamp(response.time()).value());

  // The agent reports the request failed: UNAVAILABLE with its reason.
  caller = std::thread([&] {
    status = collect(AgentIdOf(), v1::HISTOGRAM_MODE_LIVE, absl::Seconds(10), &response);
  });
  ASSERT_TRUE(agent.Read(&m) && m.has_histogram_request());
  EXPECT_EQ(m.histogram_request().mode(), av1::HISTOGRAM_MODE_LIVE);
  av1::AgentMessage failed;
  failed.mutable_histogram_failed()->set_request_id(m.histogram_request().request_id());
  failed.mutable_histogram_failed()->set_reason("GC.class_histogram failed: out of memory");
  ASSERT_TRUE(agent.Write(failed));
  caller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("out of memory"));

  // No answer within the deadline.
  EXPECT_EQ(
      collect(AgentIdOf(), v1::HISTOGRAM_MODE_ALL, absl::Milliseconds(500), &response).error_code(),
      grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_TRUE(agent.Read(&m) && m.has_histogram_request());  // it was asked

  // Not connected.
  EXPECT_TRUE(agent.Finish().ok());
  ASSERT_TRUE(Eventually([&] {
    auto a = FindAgent(AgentIdOf());
    return a.has_value() && a->state() == v1::AGENT_STATE_UNREACHABLE;
  }));
  status = collect(AgentIdOf(), v1::HISTOGRAM_MODE_ALL, absl::Seconds(5), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("not connected"));
}

// "Histogram now" of an attach agent (a real JVM): the scheduler collects it at once in the mode
// asked for, although its interval is an hour away; the snapshot is stored and its pause spent.
TEST_F(AgentGatewayTest, CollectHistogramOfAnAttachAgentIsTakenByTheSchedulerAtOnce) {
  daemon::TestJvm jvm(30);
  AgentInfo info;
  ASSERT_NO_FATAL_FAILURE(WatchTestJvm(jvm, &info));
  config_.collection.all_objects.include = {"HwSecretHolder"};
  config_.collection.interval = absl::Hours(1);
  config_.collection.pause_budget = 1;
  config_.collection.discovery_interval = absl::Milliseconds(100);
  StartDaemon();
  // Watched, not only listed: the daemon records a JVM in the store (and ListAgents shows that
  // record) a moment before it starts watching it (seen under TSan).
  ASSERT_TRUE(Eventually(
      [&] {
        auto a = FindAgent(info.id.value);
        return a.has_value() && a->has_watched_since_time();
      },
      absl::Seconds(10)));
  for (v1::HistogramMode mode : {v1::HISTOGRAM_MODE_LIVE, v1::HISTOGRAM_MODE_ALL}) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    v1::CollectHistogramRequest request;
    request.set_agent(info.id.value);
    request.set_mode(mode);
    v1::CollectHistogramResponse response;
    const absl::Time asked = absl::Now();
    grpc::Status s = query_->CollectHistogram(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.mode(), mode);
    EXPECT_GT(proto::FromDuration(response.pause()).value(), absl::ZeroDuration());
    EXPECT_GE(proto::FromTimestamp(response.time()).value(), asked);
    EXPECT_GT(response.classes(), 100u);
    auto listed = FindAgent(info.id.value);
    ASSERT_TRUE(listed.has_value());
    EXPECT_EQ(listed->last_histogram_mode(), mode);
    EXPECT_GE(proto::FromDuration(listed->total_pause()).value(),
              proto::FromDuration(response.pause()).value());
  }
}

}  // namespace
}  // namespace heapwatch::testing
