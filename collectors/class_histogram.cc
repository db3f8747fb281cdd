#include "collectors/class_histogram.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collectors/absl_compat.h"
#include "common/stable_class_name.h"

namespace heapwatch::collectors {
namespace {

absl::string_view PrimitiveName(char code) {
  switch (code) {
    case 'Z':
      return "boolean";
    case 'B':
      return "byte";
    case 'C':
      return "char";
    case 'S':
      return "short";
    case 'I':
      return "int";
    case 'J':
      return "long";
    case 'F':
      return "float";
    case 'D':
      return "double";
    default:
      return {};
  }
}

std::string Quote(absl::string_view line) {
  if (line.size() > 200) line = line.substr(0, 200);
  return absl::StrCat("'", line, "'");
}

// Consumes one run of decimal digits (no sign) followed by at least one space or the end.
bool TakeNumber(absl::string_view* s, uint64_t* out) {
  *s = absl::StripLeadingAsciiWhitespace(*s);
  size_t n = 0;
  while (n < s->size() && absl::ascii_isdigit(static_cast<unsigned char>((*s)[n]))) ++n;
  if (n == 0 || n > 20) return false;
  if (n < s->size() && (*s)[n] != ' ') return false;
  if (!absl::SimpleAtoi(s->substr(0, n), out)) return false;
  s->remove_prefix(n);
  return true;
}

bool IsModuleName(absl::string_view m) {
  if (m.empty()) return false;
  for (char c : m) {
    if (c == ' ' || c == '(' || c == ')' || c == '\t') return false;
  }
  return true;
}

bool AddOverflows(uint64_t a, uint64_t b, uint64_t* sum) {
  return __builtin_add_overflow(a, b, sum);
}

// Sums rows whose (stable) class name and module are equal: several lambda classes of one host
// class, or the proxies of several interfaces, become one row (common/stable_class_name.h). The
// rows stay in descending bytes order (stable, so equal sizes keep the JVM's order). O(rows).
void MergeRowsOfEqualName(ClassHistogram* h) {
  absl::flat_hash_map<std::pair<std::string, std::string>, size_t> index;
  std::vector<ClassHistogramRow> merged;
  merged.reserve(h->rows.size());
  for (ClassHistogramRow& row : h->rows) {
    auto [it, inserted] =
        index.try_emplace(std::make_pair(row.class_name, row.module), merged.size());
    if (inserted) {
      merged.push_back(std::move(row));
    } else {
      // The sums cannot overflow: the parser checked that the sum over all rows fits.
      merged[it->second].instances += row.instances;
      merged[it->second].bytes += row.bytes;
    }
  }
  if (merged.size() == h->rows.size()) {
    h->rows = std::move(merged);
    return;
  }
  std::stable_sort(
      merged.begin(), merged.end(),
      [](const ClassHistogramRow& a, const ClassHistogramRow& b) { return a.bytes > b.bytes; });
  h->rows = std::move(merged);
}

}  // namespace

std::string NormalizeClassName(std::string_view name_in) {
  const absl::string_view name = Av(name_in);
  size_t dims = 0;
  while (dims < name.size() && name[dims] == '[') ++dims;
  if (dims == 0 || dims == name.size()) return std::string(name);
  absl::string_view element = name.substr(dims);
  std::string base;
  if (element.size() == 1 && !PrimitiveName(element[0]).empty()) {
    base = std::string(PrimitiveName(element[0]));
  } else if (element.size() > 2 && element.front() == 'L' && element.back() == ';') {
    base = std::string(element.substr(1, element.size() - 2));
  } else {
    return std::string(name);  // not a descriptor we know: keep what the JVM printed
  }
  for (size_t i = 0; i < dims; ++i) base += "[]";
  return base;
}

StatusOr<ClassHistogram> ParseClassHistogram(std::string_view text_in) {
  const absl::string_view text = Av(text_in);
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError("class histogram: empty reply");
  }
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  // A reply that ends with '\n' has an empty last element; one that does not was cut mid-line.
  const bool ends_with_newline = text.back() == '\n';
  if (ends_with_newline) lines.pop_back();

  size_t i = 0;
  auto line_at = [&](size_t k) { return absl::StripSuffix(lines[k], "\r"); };
  // Optional "<pid>:" line of the jcmd tool, and blank lines.
  while (i < lines.size()) {
    absl::string_view l = absl::StripAsciiWhitespace(line_at(i));
    uint64_t pid = 0;
    if (l.empty() || (absl::ConsumeSuffix(&l, ":") && absl::SimpleAtoi(l, &pid))) {
      ++i;
      continue;
    }
    break;
  }
  if (i >= lines.size()) {
    return absl::InvalidArgumentError("class histogram: reply has no histogram header");
  }
  {
    absl::string_view header = absl::StripAsciiWhitespace(line_at(i));
    if (!absl::StartsWith(header, "num") || !absl::StrContains(header, "#instances") ||
        !absl::StrContains(header, "#bytes") || !absl::StrContains(header, "class name")) {
      return absl::InvalidArgumentError(
          absl::StrCat("class histogram: not a class histogram: ", Quote(header)));
    }
    ++i;
  }
  if (i >= lines.size() || !absl::StartsWith(absl::StripAsciiWhitespace(line_at(i)), "---")) {
    return absl::DataLossError("class histogram: truncated after the header");
  }
  ++i;

  ClassHistogram h;
  uint64_t sum_instances = 0, sum_bytes = 0;
  bool total_seen = false;
  for (; i < lines.size(); ++i) {
    const absl::string_view raw = line_at(i);
    const bool last_unterminated = (i + 1 == lines.size()) && !ends_with_newline;
    absl::string_view s = absl::StripLeadingAsciiWhitespace(raw);
    if (total_seen) {
      if (!absl::StripAsciiWhitespace(s).empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "class histogram: text after the Total line, line ", i + 1, ": ", Quote(raw)));
      }
      continue;
    }
    if (absl::ConsumePrefix(&s, "Total")) {
      uint64_t instances = 0, bytes = 0;
      if (!TakeNumber(&s, &instances) || !TakeNumber(&s, &bytes) ||
          !absl::StripAsciiWhitespace(s).empty()) {
        if (last_unterminated) {
          return absl::DataLossError("class histogram: truncated in the Total line");
        }
        return absl::InvalidArgumentError(
            absl::StrCat("class histogram: malformed Total line ", i + 1, ": ", Quote(raw)));
      }
      if (last_unterminated) {
        // "Total 123 45" without its newline may have lost digits of the byte count.
        return absl::DataLossError("class histogram: truncated in the Total line");
      }
      h.total_instances = instances;
      h.total_bytes = bytes;
      total_seen = true;
      continue;
    }
    // "   12:          1234          29616  class.Name (module@version)"
    const size_t colon = s.find(':');
    uint64_t num = 0, instances = 0, bytes = 0;
    absl::string_view rest;
    bool ok = colon != absl::string_view::npos && absl::SimpleAtoi(s.substr(0, colon), &num);
    if (ok) {
      rest = s.substr(colon + 1);
      ok = TakeNumber(&rest, &instances) && TakeNumber(&rest, &bytes);
      rest = absl::StripAsciiWhitespace(rest);
      ok = ok && !rest.empty();
    }
    if (!ok || last_unterminated) {
      if (last_unterminated) {
        return absl::DataLossError(
            absl::StrCat("class histogram: truncated at line ", i + 1, ": ", Quote(raw)));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("class histogram: malformed row at line ", i + 1, ": ", Quote(raw)));
    }
    if (num != h.rows.size() + 1) {
      return absl::InvalidArgumentError(absl::StrCat("class histogram: row number ", num, " where ",
                                                     h.rows.size() + 1, " was expected, line ",
                                                     i + 1));
    }
    ClassHistogramRow row;
    absl::string_view name = rest;
    if (rest.back() == ')') {
      const size_t open = rest.rfind(" (");
      if (open != absl::string_view::npos) {
        absl::string_view module = rest.substr(open + 2, rest.size() - open - 3);
        if (IsModuleName(module)) {
          row.module = std::string(module);
          name = absl::StripTrailingAsciiWhitespace(rest.substr(0, open));
        }
      }
    }
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("class histogram: row without a class name at line ", i + 1));
    }
    row.class_name = StableClassName(NormalizeClassName(Sv(name)));
    row.instances = instances;
    row.bytes = bytes;
    if (AddOverflows(sum_instances, instances, &sum_instances) ||
        AddOverflows(sum_bytes, bytes, &sum_bytes)) {
      return absl::InvalidArgumentError("class histogram: counts overflow 64 bits");
    }
    h.rows.push_back(std::move(row));
  }
  if (!total_seen) {
    return absl::DataLossError(
        absl::StrCat("class histogram: truncated, no Total line after ", h.rows.size(), " rows"));
  }
  if (sum_instances != h.total_instances || sum_bytes != h.total_bytes) {
    return absl::DataLossError(absl::StrCat(
        "class histogram: Total line (", h.total_instances, " instances, ", h.total_bytes,
        " bytes) does not match the rows (", sum_instances, " instances, ", sum_bytes, " bytes)"));
  }
  MergeRowsOfEqualName(&h);
  return h;
}

StatusOr<ClassHistogram> CollectClassHistogram(const LocalJvm& jvm, bool all_objects,
                                               const AttachOptions& options) {
  HW_ASSIGN_OR_RETURN(
      std::string text,
      ExecuteJcmd(jvm, all_objects ? "GC.class_histogram -all" : "GC.class_histogram", options));
  auto histogram = ParseClassHistogram(text);
  if (!histogram.ok()) {
    return Status(histogram.status().code(),
                  absl::StrCat("JVM ", jvm.pid, ": ", histogram.status().message()));
  }
  return histogram;
}

int JavaFeatureVersion(std::string_view version) {
  size_t i = 0;
  int first = 0;
  while (i < version.size() && version[i] >= '0' && version[i] <= '9' && first < 1000) {
    first = first * 10 + (version[i++] - '0');
  }
  if (i == 0) return 0;
  if (first == 1 && i < version.size() && version[i] == '.') {  // "1.8.0_392": the old scheme
    int second = 0;
    size_t j = i + 1;
    while (j < version.size() && version[j] >= '0' && version[j] <= '9' && second < 1000) {
      second = second * 10 + (version[j++] - '0');
    }
    return j > i + 1 ? second : 0;
  }
  // JDK 8's HotSpot reports its own VM version ("25.0-b70") as java.vm.version.
  if (first == 25 && version.find("-b") != std::string_view::npos) return 8;
  return first;
}

std::string ClassHistogramCommand(bool all_objects, int java_feature_version,
                                  int parallel_threads) {
  std::string command = all_objects ? "GC.class_histogram -all" : "GC.class_histogram";
  if (java_feature_version >= 16 && parallel_threads > 0) {
    command += " -parallel=" + std::to_string(parallel_threads);
  }
  return command;
}

}  // namespace heapwatch::collectors
