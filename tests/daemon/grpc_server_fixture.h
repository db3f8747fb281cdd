// Shared by the gRPC limit tests (grpc_limits_test.cc, grpc_keepalive_quota_test.cc): the query
// fixture (tests/daemon/query_fixture.h) whose QueryServer can be restarted with other
// daemon/grpc_limits.h limits, a plain ListAgents call that checks its answer, and the
// heapwatch_faults_total count of a reason.
#ifndef HEAPWATCH_TESTS_DAEMON_GRPC_SERVER_FIXTURE_H_
#define HEAPWATCH_TESTS_DAEMON_GRPC_SERVER_FIXTURE_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "daemon/grpc_limits.h"
#include "daemon/query_server.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::testing {

// The wall-clock time `d` from now (a gRPC deadline).
inline std::chrono::system_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

class GrpcServerFixture : public QueryFixture {
 protected:
  // Replaces the fixture's server with one on a new port that has `limits` (valid ones).
  void Restart(const daemon::GrpcLimits& limits) {
    ASSERT_TRUE(daemon::ValidateGrpcLimits(limits).ok());
    server_.reset();
    auto server = daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_,
                                             nullptr, nullptr, nullptr, limits);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
  }

  // One ListAgents of a fresh stub on `channel` (10 s deadline): its status, INTERNAL when it
  // answered without the fixture's two agents; `took` (when given) gets how long it took.
  grpc::Status ListAgents(const std::shared_ptr<grpc::Channel>& channel,
                          std::chrono::steady_clock::duration* took = nullptr) {
    auto stub = v1::QueryService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(In(std::chrono::seconds(10)));
    v1::ListAgentsResponse response;
    const auto start = std::chrono::steady_clock::now();
    grpc::Status s = stub->ListAgents(&context, v1::ListAgentsRequest(), &response);
    if (took != nullptr) *took = std::chrono::steady_clock::now() - start;
    if (s.ok() && response.agents_size() != 2) return grpc::Status(grpc::INTERNAL, "wrong answer");
    return s;
  }

  // heapwatch_faults_total{reason="<reason>"} as the metrics show it; -1 when it is not shown.
  double Faults(std::string_view reason) {
    const std::string text = metrics_.ExpositionText();
    const std::string key =
        absl::StrCat("heapwatch_faults_total{reason=\"", std::string(reason), "\"} ");
    size_t at = text.find(key);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
  }
};

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_DAEMON_GRPC_SERVER_FIXTURE_H_
