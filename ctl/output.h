// Output helpers of heapwatchctl: aligned text tables for people, JSON for machines. JSON is
// produced by protobuf's JSON printer (google::protobuf::util::MessageToJsonString) from the
// heapwatch.ctl.v1 messages (proto/heapwatch/ctl/v1/json.proto), never by hand: keys in a fixed
// order, numbers as JSON numbers (exact up to 2^53), times as RFC 3339 strings, names as in
// docs/cli.md.
//
// Thread-safety: Table is thread-compatible; the functions are pure.
#ifndef HEAPWATCH_CTL_OUTPUT_H_
#define HEAPWATCH_CTL_OUTPUT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/status.h"
#include "google/protobuf/message.h"

namespace heapwatch::ctl {

// A text table: a header row and data rows, columns separated by two spaces and padded to the
// widest cell; columns listed in `right_aligned` (numbers) are right-aligned.
class Table {
 public:
  Table(std::vector<std::string> headers, std::vector<size_t> right_aligned = {});
  void AddRow(std::vector<std::string> cells);  // REQUIRES: as many cells as headers
  void Print(std::ostream& out) const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// "912 B", "3.4 KiB", "12.0 MiB", "1.5 GiB" (binary units).
std::string HumanBytes(double bytes);
// HumanBytes with a sign: "+3.4 KiB", "-912 B", "0 B".
std::string SignedHumanBytes(double bytes);
// "+1234", "-5", "0".
std::string Signed(int64_t v);

// A duration for people, as absl formats durations, rounded to a precision that suits its length:
// whole seconds below an hour ("45s", "2m10s"), whole minutes below a day ("5h20m"), whole hours
// beyond ("76h"). "0s" for zero or less, "inf" for an infinite duration.
std::string HumanDuration(absl::Duration d);

// Writes `message` as JSON (indented, proto field names, zero values included) and a newline.
// Errors: Internal when protobuf's printer fails.
Status PrintJson(const google::protobuf::Message& message, std::ostream& out);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_OUTPUT_H_
