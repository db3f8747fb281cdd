// web/web_server.h over real HTTP (curl): /metrics in the Prometheus text format with
// prometheus-cpp's content type, the request gate's verdicts, 404 and 405.
#include "web/web_server.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace heapwatch::web {
namespace {

struct Reply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET (or `method`) with curl; the status and content type come from -w.
Reply Fetch(const std::string& url, const std::string& header = "",
            const std::string& method = "GET") {
  std::string cmd =
      absl::StrCat(HEAPWATCH_CURL, " -s -X ", method, " -w '\\n%{http_code} %{content_type}' ");
  if (!header.empty()) absl::StrAppend(&cmd, "-H '", header, "' ");
  absl::StrAppend(&cmd, "'", url, "'");
  Reply r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  const size_t nl = out.rfind('\n');
  if (nl == std::string::npos) return r;
  r.body = out.substr(0, nl);
  const std::string tail = out.substr(nl + 1);
  r.status = std::atoi(tail.c_str());
  const size_t sp = tail.find(' ');
  if (sp != std::string::npos) r.content_type = tail.substr(sp + 1);
  return r;
}

TEST(WebServerTest, ServesMetricsInPrometheusTextFormat) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("hw_test_total")
      .Help("t")
      .Register(*registry)
      .Add({})
      .Increment(3);
  WebServerOptions options;
  options.listen = "127.0.0.1:0";
  auto server = WebServer::Start(options, registry, nullptr);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string base = absl::StrCat("http://127.0.0.1:", (*server)->port());
  const Reply r = Fetch(base + "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
  EXPECT_NE(r.body.find("hw_test_total 3"), std::string::npos) << r.body;
  EXPECT_EQ(Fetch(base + "/nothing").status, 404) << "no pages without a query source";
  EXPECT_EQ(Fetch(base + "/metrics", "", "POST").status, 405);
}

TEST(WebServerTest, GateDecidesEveryRequest) {
  auto registry = std::make_shared<prometheus::Registry>();
  WebServerOptions options;
  options.listen = "127.0.0.1:0";
  options.gate = [](std::string_view authorization) {
    if (authorization.empty()) return 401;
    return authorization == "Bearer reader" ? 200 : 403;
  };
  auto server = WebServer::Start(options, registry, nullptr);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string url = absl::StrCat("http://127.0.0.1:", (*server)->port(), "/metrics");
  EXPECT_EQ(Fetch(url).status, 401);
  EXPECT_EQ(Fetch(url, "Authorization: Bearer wrong").status, 403);
  EXPECT_EQ(Fetch(url, "Authorization: Bearer reader").status, 200);
}

TEST(WebServerTest, PagesOnTheirOwnListenerAndBusyAddressIsAnError) {
  auto registry = std::make_shared<prometheus::Registry>();
  WebServerOptions options;
  options.listen = "127.0.0.1:0";
  options.pages_listen = "127.0.0.1:0";
  auto server = WebServer::Start(options, registry, nullptr);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_NE((*server)->port(), (*server)->pages_port());
  EXPECT_EQ(Fetch(absl::StrCat("http://127.0.0.1:", (*server)->pages_port(), "/metrics")).status,
            404)
      << "/metrics stays on the metrics listener";
  WebServerOptions busy;
  busy.listen = absl::StrCat("127.0.0.1:", (*server)->port());
  auto second = WebServer::Start(busy, registry, nullptr);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  busy.listen = "";
  EXPECT_EQ(WebServer::Start(busy, registry, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace heapwatch::web
