// The record census of an HPROF file (hprof_reader.h: ReadRecordCensus): one streaming pass that
// counts every record and heap dump sub-record, like hprof-slurp's "File content summary".
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "collectors/dumps/hprof/hprof_scanner.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::hprof {
namespace {

class CensusPass : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = false;
  explicit CensusPass(RecordCensus& c) : c_(c) {}
  Status OnRecord(uint8_t tag, uint64_t, uint32_t) {
    ++c_.records[tag];
    return absl::OkStatus();
  }
  Status OnSubRecord(uint8_t tag, uint64_t) {
    ++c_.sub_records[tag];
    return absl::OkStatus();
  }

 private:
  RecordCensus& c_;
};

StatusOr<RecordCensus> CensusImpl(ByteSource* source) {
  StreamReader in(source, StreamReader::WindowFor(*source));
  HW_ASSIGN_OR_RETURN(HprofHeader header, ReadHprofHeader(in));
  RecordCensus census;
  census.format = header.format;
  census.id_size = header.id_size;
  census.timestamp_ms = header.timestamp_ms;
  CensusPass pass(census);
  ScanOptions scan;
  HprofScanner<CensusPass> scanner(in, header, scan, pass);
  HW_RETURN_IF_ERROR(scanner.Run());
  census.heap_dumps = scanner.dumps();
  census.stream_bytes = in.offset();
  return census;
}

}  // namespace

uint64_t RecordCensus::record(uint8_t tag) const {
  auto it = records.find(tag);
  return it == records.end() ? 0 : it->second;
}
uint64_t RecordCensus::sub_record(uint8_t tag) const {
  auto it = sub_records.find(tag);
  return it == sub_records.end() ? 0 : it->second;
}
uint64_t RecordCensus::total_sub_records() const {
  uint64_t t = 0;
  for (const auto& [tag, n] : sub_records) t += n;
  return t;
}
uint64_t RecordCensus::heap_dump_records() const {
  return record(kTagHeapDump) + record(kTagHeapDumpSegment);
}

StatusOr<RecordCensus> ReadRecordCensus(const std::string& path) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, dumps::OpenFileSource(path));
  StatusOr<RecordCensus> c = CensusImpl(source.get());
  if (!c.ok())
    return absl::Status(c.status().code(), absl::StrCat(path, ": ", c.status().message()));
  return c;
}

StatusOr<RecordCensus> ReadRecordCensusFromBuffer(std::string_view data) {
  std::unique_ptr<ByteSource> source = dumps::OpenMemorySource(data);
  return CensusImpl(source.get());
}

}  // namespace heapwatch::hprof
