// Conversions between absl::Time / absl::Duration and google.protobuf.Timestamp / Duration, as used
// by the heapwatch.v1 API: an infinite or unknown time is an unset field.
//
// Thread-safety: pure functions.
#ifndef HEAPWATCH_PROTO_TIME_UTIL_H_
#define HEAPWATCH_PROTO_TIME_UTIL_H_

#include "absl/time/time.h"
#include "common/status.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace heapwatch::proto {

// Writes `t` (finite) to `out` with nanosecond precision (seconds rounded down, nanos in [0, 1e9)).
void ToTimestamp(absl::Time t, google::protobuf::Timestamp* out);
// Errors: InvalidArgument when nanos is outside [0, 999999999] or seconds outside the range of
// google.protobuf.Timestamp (years 0001 to 9999).
StatusOr<absl::Time> FromTimestamp(const google::protobuf::Timestamp& ts);

// Sets the Timestamp field of `msg` reached through `mutable_field` when `t` is finite; leaves it
// unset (absent) for absl::InfinitePast() / InfiniteFuture(), which heapwatch uses for "unknown" or
// "none".
template <typename M>
void SetTimestamp(absl::Time t, M* msg, google::protobuf::Timestamp* (M::*mutable_field)()) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return;
  ToTimestamp(t, (msg->*mutable_field)());
}

// Writes `d` (finite) with nanosecond precision; seconds and nanos have the same sign.
void ToDuration(absl::Duration d, google::protobuf::Duration* out);
// Errors: InvalidArgument when seconds and nanos have different signs or nanos is out of range.
StatusOr<absl::Duration> FromDuration(const google::protobuf::Duration& d);

}  // namespace heapwatch::proto

#endif  // HEAPWATCH_PROTO_TIME_UTIL_H_
