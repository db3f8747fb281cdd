// RAII owner of a file descriptor (sockets, pidfds, files). Internal to heapwatch::collectors.
//
// Thread-safety: like any value type; one UniqueFd must not be used from two threads at once.
#ifndef HEAPWATCH_COLLECTORS_UNIQUE_FD_H_
#define HEAPWATCH_COLLECTORS_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace heapwatch::collectors {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  // Closes the current descriptor (if any) and owns `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_UNIQUE_FD_H_
