// Debian 12's Abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0),
// distinct from std::string_view. heapwatch's public headers use std::string_view; these two
// conversions are the only bridge, used inside collectors/*.cc. Internal to heapwatch::collectors.
#ifndef HEAPWATCH_COLLECTORS_ABSL_COMPAT_H_
#define HEAPWATCH_COLLECTORS_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace heapwatch::collectors {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_ABSL_COMPAT_H_
