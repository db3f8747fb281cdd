// ReadHeapDump and DetectDumpFormat (heap_dump_reader.h): sniff the first bytes, dispatch through
// the format registry (dump_formats.h).
#include "collectors/dumps/heap_dump_reader.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/dump_formats.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::dumps {
namespace {

constexpr size_t kSniffBytes = 4096;

// The registry row for the file at `path`.
StatusOr<const DumpFormatReader*> Sniff(const std::string& path) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
  StreamReader in(source.get(), 64 * 1024);
  HW_ASSIGN_OR_RETURN(bool whole, in.Ensure(kSniffBytes));
  (void)whole;
  std::string_view prefix(reinterpret_cast<const char*>(in.data()), in.available());
  for (const DumpFormatReader& reader : DumpFormatReaders()) {
    if (reader.matches(prefix)) return &reader;
  }
  Status s = UnsupportedDumpError(prefix);
  return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
}

}  // namespace

std::string_view DumpFormatName(DumpFormat format) {
  for (const DumpFormatReader& reader : DumpFormatReaders()) {
    if (reader.format == format) return reader.name;
  }
  return "?";
}

StatusOr<DumpFormat> DetectDumpFormat(const std::string& path) {
  HW_ASSIGN_OR_RETURN(const DumpFormatReader* reader, Sniff(path));
  return reader->format;
}

StatusOr<analysis::HeapGraph> ReadHeapDump(const std::string& path, const ReadOptions& options) {
  HW_ASSIGN_OR_RETURN(const DumpFormatReader* reader, Sniff(path));
  return reader->read(path, options);
}

}  // namespace heapwatch::dumps
