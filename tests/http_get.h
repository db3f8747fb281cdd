// A minimal HTTP/1.0 GET for tests that check the daemon's pages and /metrics over loopback (the
// daemon's own HTTP server is civetweb; this only reads what it answers).
#ifndef HEAPWATCH_TESTS_HTTP_GET_H_
#define HEAPWATCH_TESTS_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace heapwatch::testing {

// GET http://127.0.0.1:<port><path>, the whole response (headers and body); `authorization` is the
// Authorization header's value, none when empty. Empty when the connection fails.
inline std::string HttpGet(int port, const std::string& path,
                           const std::string& authorization = "") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    if (!authorization.empty()) request += "Authorization: " + authorization + "\r\n";
    request += "\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) {
        out.append(buf, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  return out;
}

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_HTTP_GET_H_
