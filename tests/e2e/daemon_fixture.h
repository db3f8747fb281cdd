// The shared fixture of the gtest end-to-end tests that run the real heapwatchd against test JVMs of
// their own (escalation_e2e_test, leak_e2e_test): a temporary directory, the JVMs started from copies
// of their jars in it (so that the daemon's OwnJarsWatchConfig watches only them), the daemon with
// port files, and typed gRPC calls. Needs the compile definitions HEAPWATCHD, HEAPWATCH_JAVA,
// HEAPWATCH_CURL and HEAPWATCH_E2E_JARS (tests/e2e/CMakeLists.txt).
#ifndef HEAPWATCH_TESTS_E2E_DAEMON_FIXTURE_H_
#define HEAPWATCH_TESTS_E2E_DAEMON_FIXTURE_H_

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/subprocess.h"

namespace heapwatch::testing {

class DaemonFixture : public ::testing::Test {
 protected:
  // `prefix` names the temporary directory (e.g. "heapwatch-leaks").
  explicit DaemonFixture(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    dir_ = MakeTempDir(prefix_);
    std::cout << "e2e work directory: " << dir_ << std::endl;
  }

  void TearDown() override {
    daemon_.reset();
    jvms_.clear();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Starts a test program (Serial GC) from a copy of its jar in the test's directory and waits for
  // its "ready" line.
  Subprocess* StartJava(const std::string& main_class, const std::string& max_heap,
                        const std::vector<std::string>& args = {}) {
    const std::string log = dir_ + "/" + main_class + ".log";
    std::vector<std::string> argv{HEAPWATCH_JAVA,
                                  "-Xmx" + max_heap,
                                  "-XX:+UseSerialGC",
                                  "-jar",
                                  CopyJar(HEAPWATCH_E2E_JARS, main_class, dir_),
                                  "--max-seconds",
                                  "900"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto jvm = std::make_unique<Subprocess>(argv, log);
    Subprocess* raw = jvm.get();
    jvms_.push_back(std::move(jvm));
    EXPECT_TRUE(
        WaitFor(absl::Seconds(90), [&] { return absl::StrContains(ReadFile(log), "ready"); }))
        << main_class << " did not start:\n"
        << ReadFile(log);
    return raw;
  }

  // Starts heapwatchd with the configuration file `config_path` and the data dir <dir>/data,
  // logging to <dir>/<log_name>; waits for its port files and connects.
  void StartDaemon(const std::string& config_path, absl::Duration interval,
                   const std::string& log_name) {
    std::filesystem::remove(dir_ + "/grpc.port");
    std::filesystem::remove(dir_ + "/metrics.port");
    daemon_log_ = dir_ + "/" + log_name;
    daemon_ = std::make_unique<Subprocess>(
        std::vector<std::string>{HEAPWATCHD, "--config", config_path, "--data-dir",
                                 dir_ + "/data", "--grpc-listen", "127.0.0.1:0", "--metrics-listen",
                                 "127.0.0.1:0", "--grpc-port-file", dir_ + "/grpc.port",
                                 "--metrics-port-file", dir_ + "/metrics.port", "--interval",
                                 absl::FormatDuration(interval)},
        daemon_log_);
    ASSERT_TRUE(WaitFor(absl::Seconds(30),
                        [&] {
                          return (ReadPort(dir_ + "/grpc.port") &&
                                  ReadPort(dir_ + "/metrics.port")) ||
                                 !daemon_->running();
                        }) &&
                daemon_->running())
        << "heapwatchd wrote no port files:\n"
        << DaemonLog();
    grpc_address_ = absl::StrCat("127.0.0.1:", *ReadPort(dir_ + "/grpc.port"));
    metrics_url_ = absl::StrCat("http://127.0.0.1:", *ReadPort(dir_ + "/metrics.port"), "/metrics");
    stub_ = v1::QueryService::NewStub(
        grpc::CreateChannel(grpc_address_, grpc::InsecureChannelCredentials()));
  }

  // SIGTERM; heapwatchd must exit 0.
  void StopDaemon() {
    daemon_->Kill(SIGTERM);
    std::optional<int> status = daemon_->Wait(absl::Seconds(60));
    ASSERT_TRUE(status.has_value()) << "heapwatchd did not exit after SIGTERM\n" << DaemonLog();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status << "\n" << DaemonLog();
  }

  std::string DaemonLog() { return ReadFile(daemon_log_); }

  template <typename Req, typename Resp>
  grpc::Status CallStatus(grpc::Status (v1::QueryService::Stub::*method)(grpc::ClientContext*,
                                                                         const Req&, Resp*),
                          const Req& request, Resp* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return (stub_.get()->*method)(&context, request, response);
  }

  // The call's response; a failed call is a test failure (and an empty response).
  template <typename Req, typename Resp>
  Resp Call(grpc::Status (v1::QueryService::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
            const Req& request) {
    Resp response;
    grpc::Status status = CallStatus(method, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
    return response;
  }

  // The agent id of the JVM with `pid` once the daemon lists it ("" after 30 s). Every agent the
  // daemon lists must be one of this test's JVMs (started from its directory).
  std::string AgentOf(pid_t pid) {
    std::string agent;
    WaitFor(absl::Seconds(30), [&] {
      const v1::ListAgentsResponse r =
          Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest());
      for (const v1::Agent& a : r.agents()) {
        if (a.pid() == pid && a.state() != v1::AGENT_STATE_DOWN) agent = a.agent();
      }
      return !agent.empty();
    });
    const v1::ListAgentsResponse r =
        Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest());
    for (const v1::Agent& a : r.agents()) {
      EXPECT_TRUE(absl::StartsWith(a.main_class(), dir_ + "/"))
          << "heapwatchd watches a JVM that is not this test's: " << a.DebugString();
    }
    return agent;
  }

  // The daemon's /metrics page.
  std::string Metrics() {
    auto r =
        RunCommand({HEAPWATCH_CURL, "-sf", "--max-time", "10", metrics_url_}, absl::Seconds(15));
    EXPECT_EQ(r.exit_code, 0) << "curl " << metrics_url_ << ": " << r.err;
    return r.out;
  }

  std::string prefix_;
  std::string dir_, daemon_log_, metrics_url_, grpc_address_;
  std::vector<std::unique_ptr<Subprocess>> jvms_;
  std::unique_ptr<Subprocess> daemon_;
  std::unique_ptr<v1::QueryService::Stub> stub_;
};

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_E2E_DAEMON_FIXTURE_H_
