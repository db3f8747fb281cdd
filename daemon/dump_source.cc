#include "daemon/dump_source.h"

#include "absl/strings/str_cat.h"
#include "collectors/heap_dump.h"

namespace heapwatch::daemon {

std::string AttachDumpSource::PathFor(const DumpRequest& request) const {
  return absl::StrCat(request.dump_dir, "/", request.jvm.uid, "/", request.file_name);
}

uint32_t AttachDumpSource::FileOwner(const DumpRequest& request) const { return request.jvm.uid; }

StatusOr<WrittenDump> AttachDumpSource::WriteDump(const DumpRequest& request) {
  collectors::HeapDumpOptions options;
  options.gzip = request.gzip;
  options.attach = attach_;
  options.attach.io_timeout = request.timeout;
  options.attach.max_reply_bytes = size_t{1} << 20;
  HW_RETURN_IF_ERROR(collectors::PreparePrivateDumpDirectory(
      absl::StrCat(request.dump_dir, "/", request.jvm.uid), request.jvm.uid, request.jvm.gid));
  HW_ASSIGN_OR_RETURN(collectors::HeapDumpResult r,
                      collectors::TakeHeapDump(request.jvm, PathFor(request), options));
  WrittenDump out;
  out.path = r.path;
  out.file_bytes = r.file_bytes;
  out.gzip = r.gzip;
  out.pause = absl::Seconds(r.pause_seconds);
  out.wall = absl::Seconds(r.wall_seconds);
  return out;
}

}  // namespace heapwatch::daemon
