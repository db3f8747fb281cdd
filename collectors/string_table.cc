#include "collectors/string_table.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "collectors/absl_compat.h"

namespace heapwatch::collectors {
namespace {

constexpr size_t kMaxLines = 64;

std::string Quote(absl::string_view line) {
  if (line.size() > 80) line = line.substr(0, 80);
  return absl::StrCat("'", absl::CHexEscape(line), "'");
}

// A run of 1..20 decimal digits, the whole of `s` after trimming.
bool Number(absl::string_view s, uint64_t* out) {
  s = absl::StripAsciiWhitespace(s);
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(s, out);
}

// "<count> = <bytes> bytes[, ...]" (count may be blank when `count` is null: "= <bytes> bytes").
bool CountAndBytes(absl::string_view value, uint64_t* count, uint64_t* bytes) {
  const size_t eq = value.find('=');
  if (eq == absl::string_view::npos) return false;
  absl::string_view left = absl::StripAsciiWhitespace(value.substr(0, eq));
  if (count != nullptr ? !Number(left, count) : !left.empty()) return false;
  absl::string_view right = value.substr(eq + 1);
  const size_t comma = right.find(',');
  if (comma != absl::string_view::npos) right = right.substr(0, comma);
  right = absl::StripAsciiWhitespace(right);
  if (!absl::ConsumeSuffix(&right, " bytes")) return false;
  return Number(right, bytes);
}

}  // namespace

StatusOr<StringTableStats> ParseStringTable(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("string table: empty reply");
  if (text.size() > kMaxStringTableReplyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("string table: reply of ", text.size(),
                                                   " bytes, more than the ",
                                                   kMaxStringTableReplyBytes, " accepted"));
  }
  std::vector<absl::string_view> lines = absl::StrSplit(Av(text), '\n');
  size_t i = 0;
  // jcmd's "<pid>:" line.
  if (i < lines.size()) {
    absl::string_view l = absl::StripAsciiWhitespace(lines[i]);
    int64_t pid = 0;
    if (absl::ConsumeSuffix(&l, ":") && absl::SimpleAtoi(l, &pid)) ++i;
  }
  while (i < lines.size() && absl::StripAsciiWhitespace(lines[i]).empty()) ++i;
  if (i == lines.size()) return absl::InvalidArgumentError("string table: empty reply");
  const absl::string_view header = absl::StripAsciiWhitespace(lines[i]);
  if (absl::StrContains(header, "statistics unavailable")) {
    return absl::UnavailableError(
        absl::StrCat("string table: the JVM says ", Quote(header), " (table being resized)"));
  }
  if (header != "StringTable statistics:") {
    return absl::InvalidArgumentError(
        absl::StrCat("string table: not VM.stringtable statistics: ", Quote(header)));
  }
  StringTableStats s;
  bool have_buckets = false, have_entries = false, have_literals = false, have_footprint = false;
  size_t counted = 0;
  for (++i; i < lines.size(); ++i) {
    const absl::string_view raw = lines[i];
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty()) continue;
    if (absl::EndsWith(line, "statistics:")) break;  // e.g. "Shared String Table statistics:"
    if (++counted > kMaxLines) {
      return absl::InvalidArgumentError(
          absl::StrCat("string table: more than ", kMaxLines, " lines"));
    }
    auto malformed = [&] {
      return absl::InvalidArgumentError(
          absl::StrCat("string table: malformed line ", i + 1, ": ", Quote(raw)));
    };
    if (absl::StrContains(line, "statistics unavailable")) {
      return absl::UnavailableError(
          absl::StrCat("string table: the JVM says ", Quote(line), " (table being resized)"));
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) return malformed();
    const absl::string_view label = absl::StripAsciiWhitespace(line.substr(0, colon));
    const absl::string_view value = line.substr(colon + 1);
    auto once = [&](bool* seen) -> Status {
      if (*seen) {
        return absl::InvalidArgumentError(
            absl::StrCat("string table: repeated line ", i + 1, ": ", Quote(raw)));
      }
      *seen = true;
      return absl::OkStatus();
    };
    if (label == "Number of buckets") {
      HW_RETURN_IF_ERROR(once(&have_buckets));
      if (!CountAndBytes(value, &s.buckets, &s.bucket_bytes)) return malformed();
    } else if (label == "Number of entries") {
      HW_RETURN_IF_ERROR(once(&have_entries));
      if (!CountAndBytes(value, &s.entries, &s.entry_bytes)) return malformed();
    } else if (label == "Number of literals") {
      HW_RETURN_IF_ERROR(once(&have_literals));
      if (!CountAndBytes(value, &s.literals, &s.literal_bytes)) return malformed();
    } else if (label == "Total footprint") {
      HW_RETURN_IF_ERROR(once(&have_footprint));
      if (!CountAndBytes(value, nullptr, &s.footprint_bytes)) return malformed();
    } else if (label == "Maximum bucket size") {
      if (!Number(value, &s.max_bucket)) return malformed();
    } else if (label.empty()) {
      return malformed();
    }
  }
  if (!have_buckets || !have_entries || !have_literals || !have_footprint) {
    return absl::InvalidArgumentError(absl::StrCat(
        "string table: missing line(s):", have_buckets ? "" : " 'Number of buckets'",
        have_entries ? "" : " 'Number of entries'", have_literals ? "" : " 'Number of literals'",
        have_footprint ? "" : " 'Total footprint'"));
  }
  // Each of these is at most 20 digits (< 2^64.1); the sum is checked without overflow.
  const unsigned __int128 sum =
      static_cast<unsigned __int128>(s.bucket_bytes) + s.entry_bytes + s.literal_bytes;
  if (sum != s.footprint_bytes) {
    return absl::DataLossError(absl::StrCat("string table: total footprint ", s.footprint_bytes,
                                            " bytes is not buckets ", s.bucket_bytes, " + entries ",
                                            s.entry_bytes, " + literals ", s.literal_bytes));
  }
  return s;
}

StatusOr<StringTableStats> CollectStringTable(const LocalJvm& jvm, const AttachOptions& options) {
  AttachOptions o = options;
  o.max_reply_bytes = std::min(o.max_reply_bytes, kMaxStringTableReplyBytes);
  HW_ASSIGN_OR_RETURN(std::string output, ExecuteJcmd(jvm, "VM.stringtable", o));
  HW_ASSIGN_OR_RETURN(StringTableStats stats, ParseStringTable(output));
  stats.time = absl::Now();
  return stats;
}

}  // namespace heapwatch::collectors
