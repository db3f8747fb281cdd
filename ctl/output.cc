#include "ctl/output.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"

namespace heapwatch::ctl {

Table::Table(std::vector<std::string> headers, std::vector<size_t> right_aligned)
    : headers_(std::move(headers)), right_(headers_.size(), false) {
  for (size_t c : right_aligned) {
    if (c < right_.size()) right_[c] = true;
  }
}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      std::string pad(width[c] - row[c].size(), ' ');
      bool last = c + 1 == row.size();
      line += right_[c] ? pad + row[c] : (last ? row[c] : row[c] + pad);
    }
    out << line << "\n";
  };
  print_row(headers_);
  for (const auto& row : rows_) print_row(row);
}

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = std::fabs(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrFormat("%.0f B", v);
  return absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

std::string SignedHumanBytes(double bytes) {
  if (bytes == 0) return "0 B";
  return (bytes > 0 ? "+" : "-") + HumanBytes(bytes);
}

std::string Signed(int64_t v) {
  return v > 0 ? absl::StrFormat("+%d", v) : absl::StrFormat("%d", v);
}

std::string HumanDuration(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return "inf";
  if (d <= absl::ZeroDuration()) return "0s";
  const absl::Duration unit = d < absl::Hours(1)    ? absl::Seconds(1)
                              : d < absl::Hours(24) ? absl::Minutes(1)
                                                    : absl::Hours(1);
  const absl::Duration rounded = absl::Floor(d + unit / 2, unit);
  return rounded <= absl::ZeroDuration() ? "0s" : absl::FormatDuration(rounded);
}

Status PrintJson(const google::protobuf::Message& message, std::ostream& out) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrFormat("JSON output failed: %s", status.ToString()));
  }
  out << json;
  if (json.empty() || json.back() != '\n') out << "\n";
  return absl::OkStatus();
}

}  // namespace heapwatch::ctl
