// The errors every pass of the HPROF reader reports the same way (hprof_read_state.h).
#include "collectors/dumps/hprof/hprof_read_state.h"

#include <string>

#include "absl/strings/str_format.h"

namespace heapwatch::hprof {

Status FileChanged(uint64_t offset) {
  return absl::InternalError(absl::StrFormat(
      "the dump changed while it was being read (record at byte %d differs between passes)",
      offset));
}

Status AtRecord(Status status, uint64_t offset) {
  if (status.ok()) return status;
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return FileChanged(offset);
    case absl::StatusCode::kDataLoss:
      return absl::DataLossError(absl::StrFormat(
          "corrupt dump: %s at the record at byte %d; instance records are shorter than their "
          "CLASS DUMP layouts",
          std::string(status.message()), offset));
    default:
      return absl::Status(status.code(), absl::StrFormat("%s (at the record at byte %d)",
                                                         std::string(status.message()), offset));
  }
}

}  // namespace heapwatch::hprof
