#include "ctl/time_arg.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace heapwatch::ctl {
namespace {

StatusOr<absl::Duration> ParseNonNegativeDuration(const std::string& text) {
  absl::Duration d;
  if (text.empty() || !absl::ParseDuration(text, &d) || d < absl::ZeroDuration() ||
      d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("bad duration");
  }
  return d;
}

}  // namespace

StatusOr<absl::Time> ParseTimeArg(const std::string& raw, absl::Time now,
                                  bool bare_duration_means_ago) {
  std::string text(absl::StripAsciiWhitespace(raw));
  if (text == "now") return now;
  if (!text.empty() && text[0] == '-') {
    auto d = ParseNonNegativeDuration(text.substr(1));
    if (d.ok()) return now - *d;
  } else if (bare_duration_means_ago) {
    auto d = ParseNonNegativeDuration(text);
    if (d.ok()) return now - *d;
  }
  absl::Time t;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return t;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid time '", raw,
                   "': expected RFC 3339 (2026-01-02T15:04:05Z), 'now', or a relative time such as "
                   "-10m or -1h30m"));
}

std::string Rfc3339(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

std::string ShortTime(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace heapwatch::ctl
