// The format registry of the dump readers: one row per format, asked in order whether a file's
// first bytes are theirs. Internal to collectors/dumps; heap_dump_reader.cc dispatches through it.
// A new reader adds its DumpFormat value (heap_dump_reader.h) and one row in dump_formats.cc.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_DUMP_FORMATS_H_
#define HEAPWATCH_COLLECTORS_DUMPS_DUMP_FORMATS_H_

#include <span>
#include <string>
#include <string_view>

#include "collectors/dumps/heap_dump_reader.h"

namespace heapwatch::dumps {

struct DumpFormatReader {
  DumpFormat format;
  std::string_view name;  // DumpFormatName
  // True when `prefix` (the first bytes of the file after gzip inflation: 4 KiB, or the whole file
  // when shorter) is this format, including versions the reader rejects with its own error.
  bool (*matches)(std::string_view prefix);
  // Reads the file. Errors start with the path (heap_dump_reader.h).
  StatusOr<analysis::HeapGraph> (*read)(const std::string& path, const ReadOptions& options);
};

// Every reader, in the order they are asked.
std::span<const DumpFormatReader> DumpFormatReaders();

// The error for a file no reader matches: names the format when it is a known one that heapwatch
// does not read (Unimplemented), else InvalidArgument. Never OK.
Status UnsupportedDumpError(std::string_view prefix);

}  // namespace heapwatch::dumps

#endif  // HEAPWATCH_COLLECTORS_DUMPS_DUMP_FORMATS_H_
