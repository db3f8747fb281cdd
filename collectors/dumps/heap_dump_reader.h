// Reading a heap dump file ("extended dump") of any supported format into an analysis::HeapGraph:
// the public entry of the dump readers (collectors/dumps). ReadHeapDump looks at the first bytes of
// the file (after gzip inflation) and runs the reader of the format it finds.
//
// Formats: HPROF "JAVA PROFILE 1.0.1/1.0.2/1.0.3" (HotSpot, Android, NetBeans; hprof/hprof_reader.h
// has the details), IBM Portable Heap Dumps versions 4-6 (phd/phd_reader.h) and IBM text ("classic")
// heap dumps (ibm_text/text_dump_reader.h), plain or gzip-compressed. The IBM formats have no GC
// root records: their roots are inferred (analysis/root_inference.h). Recognised and rejected with
// an error that names the format: IBM javacore text, class histogram text (jmap -histo), ELF cores,
// zip archives. docs/dump-formats.md describes the IBM formats.
//
// Thread-safety: the functions are reentrant; concurrent calls on different files are safe.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HEAP_DUMP_READER_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HEAP_DUMP_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "analysis/heap_graph.h"
#include "common/status.h"

namespace heapwatch::dumps {

// Options of every reader (a reader ignores those that do not apply to its format).
struct ReadOptions {
  // Which heap dump of the file to read, 0-based in file order; -1 = the last one (HPROF files can
  // hold several).
  int dump_ordinal = -1;
  // How shallow sizes are computed; kAuto = the format's own model (HPROF: Android's sizes for
  // "JAVA PROFILE 1.0.3", the HotSpot layout with parameters inferred from the dump otherwise).
  analysis::SizeModel size_model = analysis::SizeModel::kAuto;
  // Eclipse MAT's "<class>" edge from every instance and array to its class object (see
  // analysis::HeapGraphOptions).
  bool instance_class_edges = false;
  // Called about every 16 MiB and at the end of each pass, with `done` and `total` in bytes of the
  // file on disk summed over the reader's passes (HPROF: total = 2 x file size, or 3 x once the
  // first pass found that the dump needs three passes). May be empty.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // HPROF: use the combined second pass when the dump allows it (instances and arrays in ascending
  // id order, no repeated ids: HotSpot, Android and NetBeans dumps). false forces the three-pass
  // path; both give the same graph (the tests compare them).
  bool single_pass = true;
};

// The formats ReadHeapDump reads. DO NOT CHANGE the values (they may be logged and stored).
enum class DumpFormat : uint8_t {
  kHprof = 0,
  kPhd = 1,      // IBM Portable Heap Dump (phd/phd_reader.h)
  kIbmText = 2,  // IBM text ("classic") heap dump (ibm_text/text_dump_reader.h)
};
// "HPROF", "PHD", "IBM text".
std::string_view DumpFormatName(DumpFormat format);

// The format of the dump at `path` (first 4 KiB after inflation).
// Errors: those of opening the file (NotFound, PermissionDenied, Internal); Unimplemented for a
// recognised format no reader supports (named in the message); InvalidArgument for anything else.
StatusOr<DumpFormat> DetectDumpFormat(const std::string& path);

// Reads the heap dump at `path` with the reader of its format (DetectDumpFormat). The format's
// name in the dump's own terms is in HeapGraph::info().format (e.g. "JAVA PROFILE 1.0.2").
// Errors: those of DetectDumpFormat, then those of the reader (HPROF: hprof::ReadHeapGraph):
// InvalidArgument (a bad option, a file with no heap dump), Unimplemented (an unsupported variant),
// DataLoss (truncated or corrupt; the message names the byte offset), Internal (I/O). Every message
// starts with the path. Never crashes on malformed input. Complexity: one to three streaming passes
// over the file; memory O(objects + references) for the graph.
StatusOr<analysis::HeapGraph> ReadHeapDump(const std::string& path,
                                           const ReadOptions& options = {});

}  // namespace heapwatch::dumps

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HEAP_DUMP_READER_H_
