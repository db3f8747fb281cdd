// Errors as values for every heapwatch module.
//
// heapwatch uses absl::Status / absl::StatusOr<T> (Abseil, Debian package libabsl-dev) for every operation
// that can fail on bad input or a failing environment: a corrupt dump, an unknown agent, a JVM that will not
// attach, a full disk. Such failures are returned to the caller, counted in a metric by the daemon and never
// crash the process. A broken internal invariant (a bug) is not an error value: it is HW_CHECKed and aborts.
//
// Canonical codes used across the project:
//   InvalidArgument    malformed request or input text (e.g. an unparsable histogram row)
//   DataLoss           corrupt or truncated persisted data or dump file
//   NotFound           unknown agent, class, snapshot or report
//   Unavailable        a peer (JVM, server) cannot be reached now; retrying later may succeed
//   DeadlineExceeded   a step took longer than its timeout
//   ResourceExhausted  a budget (disk, memory, rate) is used up
//   FailedPrecondition the operation is not valid in the current state
//   Unimplemented      a recognised but unsupported format or feature
//   Internal           an unexpected failure of a library call (the message says which)
//
// Thread-safety: the macros are expressions/statements with no shared state.
#ifndef HEAPWATCH_COMMON_STATUS_H_
#define HEAPWATCH_COMMON_STATUS_H_

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace heapwatch {

using absl::Status;
using absl::StatusOr;

// Reports a broken internal invariant and aborts. Never use it for bad input.
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "%s:%d: heapwatch internal invariant failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace heapwatch

#define HW_CHECK(condition)                                                         \
  do {                                                                              \
    if (!(condition)) ::heapwatch::CheckFailed(__FILE__, __LINE__, #condition);     \
  } while (false)

#define HW_STATUS_CONCAT_INNER_(a, b) a##b
#define HW_STATUS_CONCAT_(a, b) HW_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing function if it is not OK.
#define HW_RETURN_IF_ERROR(expr)                         \
  do {                                                   \
    ::absl::Status hw_status_ = (expr);                  \
    if (!hw_status_.ok()) return hw_status_;             \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise moves the value into `lhs`
// (which may be a declaration such as `auto x`).
#define HW_ASSIGN_OR_RETURN(lhs, rexpr) \
  HW_ASSIGN_OR_RETURN_IMPL_(HW_STATUS_CONCAT_(hw_statusor_, __LINE__), lhs, rexpr)
#define HW_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

#endif  // HEAPWATCH_COMMON_STATUS_H_
