// libFuzzer target over heapwatchctl's time arguments (ctl/time_arg.h: --since/--until, RFC 3339,
// "now", relative durations). Any byte string is parsed with either meaning of a bare duration; an
// accepted time is formatted for tables and, when its year has four digits, must read back exactly
// from its RFC 3339 form.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "ctl/time_arg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch::ctl;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const absl::Time now = absl::FromUnixSeconds(1'763'769'102);  // 2025-11-21T23:51:42Z
  for (bool bare_duration_means_ago : {false, true}) {
    auto t = ParseTimeArg(text, now, bare_duration_means_ago);
    if (!t.ok()) continue;
    (void)ShortTime(*t);
    const std::string formatted = Rfc3339(*t);
    const absl::CivilSecond civil = absl::ToCivilSecond(*t, absl::UTCTimeZone());
    if (civil.year() < 1 || civil.year() > 9999) continue;
    auto back = ParseTimeArg(formatted, now, false);
    if (!back.ok() || *back != *t) __builtin_trap();
  }
  return 0;
}
