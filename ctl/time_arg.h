// Time arguments of heapwatchctl: an RFC 3339 time ("2026-11-21T23:51:42Z",
// "2026-11-21T23:51:42.5+01:00"), "now", or a time relative to now: "-10m", "-1h30m" (durations as
// in daemon/config.h: units ns, us, ms, s, m, h).
#ifndef HEAPWATCH_CTL_TIME_ARG_H_
#define HEAPWATCH_CTL_TIME_ARG_H_

#include <string>

#include "absl/time/time.h"
#include "common/status.h"

namespace heapwatch::ctl {

// Parses `text` as above, relative to `now`. With `bare_duration_means_ago`, a duration without a
// sign
// ("10m", as in `--since 10m`) also means that long before now.
// Errors: InvalidArgument naming the text and the accepted forms.
StatusOr<absl::Time> ParseTimeArg(const std::string& text, absl::Time now,
                                  bool bare_duration_means_ago);

// RFC 3339 in UTC with as many fractional digits as needed: "2026-11-21T23:51:42.091234Z".
std::string Rfc3339(absl::Time t);

// A time for tables: "2026-11-21 23:51:42Z" (whole seconds, UTC), "-" for an unknown
// (infinite) time.
std::string ShortTime(absl::Time t);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_TIME_ARG_H_
