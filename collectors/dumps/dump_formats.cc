// The format registry (dump_formats.h). Formats are told apart by their first bytes: HPROF starts
// with "JAVA PROFILE ", a PHD with the u2-length string "portable heap dump", an IBM text heap dump
// with "// Version: " or a record line "0x<address> [<size>]".
#include "collectors/dumps/dump_formats.h"

#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "collectors/dumps/ibm_text/text_dump_reader.h"
#include "collectors/dumps/phd/phd_reader.h"

namespace heapwatch::dumps {
namespace {

bool IsHprof(std::string_view prefix) { return prefix.starts_with("JAVA PROFILE "); }

StatusOr<analysis::HeapGraph> ReadHprof(const std::string& path, const ReadOptions& options) {
  return hprof::ReadHeapGraph(path, options);
}

constexpr DumpFormatReader kReaders[] = {
    {DumpFormat::kHprof, "HPROF", &IsHprof, &ReadHprof},
    {DumpFormat::kPhd, "PHD", &phd::LooksLikePhd, &phd::ReadPhdGraph},
    {DumpFormat::kIbmText, "IBM text", &ibm_text::LooksLikeTextDump, &ibm_text::ReadTextDumpGraph},
};

}  // namespace

std::span<const DumpFormatReader> DumpFormatReaders() { return kReaders; }

Status UnsupportedDumpError(std::string_view prefix) {
  // The HPROF signature check names every other format heapwatch recognises.
  Status s = hprof::CheckHprofSignature(prefix);
  if (s.ok()) return absl::InternalError("an HPROF file that no reader matched");
  return s;
}

}  // namespace heapwatch::dumps
