#include "web/web_server.h"

#include <civetweb.h>

#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "prometheus/collectable.h"
#include "prometheus/text_serializer.h"
#include "web/pages.h"

namespace heapwatch::web {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 500:
      return "Internal Server Error";
    default:
      return "Error";
  }
}

void Send(mg_connection* conn, int status, const std::string& content_type, const std::string& body,
          bool head, const std::string& extra_headers = "") {
  const std::string header =
      absl::StrCat("HTTP/1.1 ", status, " ", Reason(status), "\r\nContent-Type: ", content_type,
                   "\r\nContent-Length: ", body.size(),
                   "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                   "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n",
                   extra_headers, "Connection: close\r\n\r\n");
  mg_write(conn, header.data(), header.size());
  if (!head && !body.empty()) mg_write(conn, body.data(), body.size());
}

// One listener: the civetweb context and what it serves.
struct Listener {
  mg_context* ctx = nullptr;
  int port = 0;
  bool metrics = false;
  bool pages = false;
};

}  // namespace

struct WebServer::Impl {
  WebServerOptions options;
  std::weak_ptr<prometheus::Collectable> metrics;
  QuerySource* source = nullptr;
  Listener main, pages;  // pages.ctx is null unless pages_listen is set
  std::once_flag stopped;

  int Handle(mg_connection* conn, const Listener& l) {
    const mg_request_info* info = mg_get_request_info(conn);
    const std::string_view method = info->request_method ? info->request_method : "";
    const bool head = method == "HEAD";
    if (method != "GET" && !head) {
      Send(conn, 405, "text/plain; charset=utf-8", "only GET and HEAD\n", head,
           "Allow: GET, HEAD\r\n");
      return 405;
    }
    if (options.gate) {
      const char* auth = mg_get_header(conn, "Authorization");
      const int verdict = options.gate(auth ? auth : "");
      if (verdict != 200) {
        Send(conn, verdict, "text/plain; charset=utf-8",
             verdict == 401 ? "unauthorized\n" : "forbidden\n", head,
             verdict == 401 ? "WWW-Authenticate: Bearer realm=\"heapwatch\"\r\n" : "");
        return verdict;
      }
    }
    const std::string_view uri = info->local_uri ? info->local_uri : "/";
    if (l.metrics && uri == "/metrics") {
      auto collectable = metrics.lock();
      if (collectable == nullptr) {
        Send(conn, 404, "text/plain; charset=utf-8", "no metrics\n", head);
        return 404;
      }
      const std::string body = prometheus::TextSerializer().Serialize(collectable->Collect());
      Send(conn, 200, "text/plain; charset=utf-8", body, head);
      return 200;
    }
    if (!l.pages || source == nullptr) {
      Send(conn, 404, "text/plain; charset=utf-8", "not found\n", head);
      return 404;
    }
    PageOptions page_options;
    page_options.external_url = options.external_url;
    page_options.now = absl::Now();
    const HttpResponse r =
        ServePage(*source, uri, info->query_string ? info->query_string : "", page_options);
    Send(conn, r.status, r.content_type, r.body, head);
    return r.status;
  }

  static int Callback(mg_connection* conn, void* cbdata) {
    auto* pair = static_cast<std::pair<Impl*, Listener*>*>(cbdata);
    pair->first->Handle(conn, *pair->second);
    return 1;  // handled
  }

  std::pair<Impl*, Listener*> main_cb{this, &main}, pages_cb{this, &pages};

  Status Open(const std::string& address, Listener* l, std::pair<Impl*, Listener*>* cb) {
    if (address.empty()) return absl::InvalidArgumentError("empty web listen address");
    const std::string threads = absl::StrCat(options.threads > 0 ? options.threads : 1);
    const char* config[] = {"listening_ports",
                            address.c_str(),
                            "num_threads",
                            threads.c_str(),
                            "enable_keep_alive",
                            "no",
                            nullptr};
    mg_callbacks callbacks;
    std::memset(&callbacks, 0, sizeof(callbacks));
    l->ctx = mg_start(&callbacks, nullptr, config);
    if (l->ctx == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen for HTTP on ", address, " (address in use or invalid)"));
    }
    mg_server_port ports[4];
    const int n = mg_get_server_ports(l->ctx, 4, ports);
    if (n <= 0) return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", address));
    l->port = ports[0].port;
    mg_set_request_handler(l->ctx, "/", &Impl::Callback, cb);
    return absl::OkStatus();
  }

  void StopAll() {
    std::call_once(stopped, [this] {
      if (pages.ctx != nullptr) mg_stop(pages.ctx);
      if (main.ctx != nullptr) mg_stop(main.ctx);
      pages.ctx = main.ctx = nullptr;
    });
  }
};

WebServer::WebServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebServer::~WebServer() { Stop(); }

StatusOr<std::unique_ptr<WebServer>> WebServer::Start(
    const WebServerOptions& options, std::weak_ptr<prometheus::Collectable> metrics,
    QuerySource* source) {
  static std::once_flag init;
  std::call_once(init, [] { mg_init_library(0); });
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->metrics = std::move(metrics);
  impl->source = source;
  impl->main.metrics = true;
  impl->main.pages = options.pages_listen.empty();
  impl->pages.pages = true;
  std::unique_ptr<WebServer> server(new WebServer(std::move(impl)));
  Impl& i = *server->impl_;
  HW_RETURN_IF_ERROR(i.Open(options.listen, &i.main, &i.main_cb));
  if (!options.pages_listen.empty()) {
    HW_RETURN_IF_ERROR(i.Open(options.pages_listen, &i.pages, &i.pages_cb));
  }
  return server;
}

int WebServer::port() const { return impl_->main.port; }
int WebServer::pages_port() const {
  return impl_->pages.port != 0 ? impl_->pages.port : impl_->main.port;
}
void WebServer::Stop() {
  if (impl_ != nullptr) impl_->StopAll();
}

}  // namespace heapwatch::web
