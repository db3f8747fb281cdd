#include "proto/time_util.h"

#include <cstdint>

namespace heapwatch::proto {
namespace {
// google.protobuf.Timestamp range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
constexpr int64_t kMinSeconds = -62135596800;
constexpr int64_t kMaxSeconds = 253402300799;
}  // namespace

void ToTimestamp(absl::Time t, google::protobuf::Timestamp* out) {
  const int64_t seconds = absl::ToUnixSeconds(t);  // rounds toward negative infinity
  const absl::Duration rest = t - absl::FromUnixSeconds(seconds);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(rest)));
}

StatusOr<absl::Time> FromTimestamp(const google::protobuf::Timestamp& ts) {
  if (ts.nanos() < 0 || ts.nanos() > 999'999'999) {
    return absl::InvalidArgumentError("timestamp nanos out of range");
  }
  if (ts.seconds() < kMinSeconds || ts.seconds() > kMaxSeconds) {
    return absl::InvalidArgumentError("timestamp seconds out of range");
  }
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void ToDuration(absl::Duration d, google::protobuf::Duration* out) {
  const int64_t seconds = absl::IDivDuration(d, absl::Seconds(1), &d);  // truncates toward zero
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
}

StatusOr<absl::Duration> FromDuration(const google::protobuf::Duration& d) {
  if (d.nanos() < -999'999'999 || d.nanos() > 999'999'999 || (d.seconds() > 0 && d.nanos() < 0) ||
      (d.seconds() < 0 && d.nanos() > 0)) {
    return absl::InvalidArgumentError("duration nanos out of range or of the wrong sign");
  }
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

}  // namespace heapwatch::proto
