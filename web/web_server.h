// heapwatchd's HTTP server (civetweb, Debian libcivetweb-dev): /metrics in the Prometheus text
// format and the web pages (web/pages.h) on one listener, optionally the pages on a second one.
//
// /metrics serialises `metrics` (prometheus::TextSerializer over Collect()) with the content type
// prometheus-cpp's own exposer used ("text/plain; charset=utf-8"), so scrapers see no difference.
// Every other GET path is a page. Only GET and HEAD are answered (405 otherwise).
//
// Authentication: `gate`, when set, is called with the request's Authorization header ("" when
// absent) before anything is served (pages and /metrics alike); it returns the HTTP status to
// answer: 200 serves the request, 401 answers 401 with `WWW-Authenticate: Bearer`, any other value
// is answered with that status and no content.
//
// Thread-safety: Start/Stop from one thread; requests are served on civetweb's worker threads
// (`threads` of them), concurrently calling `source`, `metrics` and `gate`.
#ifndef HEAPWATCH_WEB_WEB_SERVER_H_
#define HEAPWATCH_WEB_WEB_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "web/query_source.h"

namespace prometheus {
class Collectable;
}

namespace heapwatch::web {

using RequestGate = std::function<int(std::string_view authorization_header)>;

struct WebServerOptions {
  // "host:port" (port 0 = any free port) serving /metrics and, unless pages_listen is set, the
  // pages.
  std::string listen;
  // When set: the pages are served here instead (and /metrics only on `listen`).
  std::string pages_listen;
  std::string external_url;  // PageOptions::external_url
  int threads = 4;
  RequestGate gate;  // empty = every request allowed
};

class WebServer {
 public:
  // Binds the listener(s) and starts serving. `metrics` may be null (no /metrics); `source` may be
  // null (no pages, 404). Both are not owned and must outlive the server.
  // Errors: InvalidArgument for an empty or malformed address, Unavailable when an address cannot
  // be bound.
  static StatusOr<std::unique_ptr<WebServer>> Start(const WebServerOptions& options,
                                                    std::weak_ptr<prometheus::Collectable> metrics,
                                                    QuerySource* source);
  ~WebServer();  // Stop()
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // The bound TCP port of `listen`, and of `pages_listen` (== port() when not set).
  int port() const;
  int pages_port() const;
  // Stops accepting, waits for running requests. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit WebServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapwatch::web

#endif  // HEAPWATCH_WEB_WEB_SERVER_H_
