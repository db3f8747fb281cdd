// Reading HPROF heap dumps ("extended dumps") into an analysis::HeapGraph, and a streaming record
// census.
//
// Supported: "JAVA PROFILE 1.0.1", "1.0.2" and Android's "1.0.3"; 4- and 8-byte identifiers; HEAP
// DUMP and HEAP DUMP SEGMENT (+ HEAP DUMP END) records; files holding several heap dumps; every GC
// root sub-record of HotSpot and Android; class dumps with constant pool, static and instance
// fields; instance dumps; object and primitive arrays; Android's HEAP DUMP INFO (heap names) and
// PRIMITIVE ARRAY NODATA; gzip-compressed files
// (.hprof.gz and `jcmd GC.heap_dump -gz`, which writes many gzip members), inflated while
// streaming. Recognised and rejected with an error naming the format: IBM Portable Heap Dumps
// (.phd), IBM javacore text, class histogram text (jmap -histo), ELF cores, zip archives, other
// files. Format reference: docs/hprof-format.md; size model: docs/size-model.md.
//
// How (bounded memory): two or three streaming passes over the file, each through a window of at
// most 4 MiB (gzip is inflated again on every pass; nothing is written to disk):
//   1. strings, class names, class dumps, GC roots and the id of every object of the chosen dump;
//   2. after sorting the ids (ObjectIndex = rank of the id): each object's class, array lengths and
//   its
//      number of non-null references, which sizes the CSR graph exactly once;
//   3. the references, resolved id -> ObjectIndex through an address-bucket directory over the
//   sorted ids.
// When the dump lists its instances and arrays in ascending address order (HotSpot, Android),
// passes 2 and 3 are one pass that appends each object's references in index order. No per-object
// heap allocation; every length in the file is checked against the enclosing record and the file
// size before it is used, and nothing is allocated from a length the file declares.
//
// Thread-safety: the functions are reentrant; concurrent calls on different files are safe.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_READER_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_READER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "analysis/heap_graph.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "common/status.h"

namespace heapwatch::hprof {

// The options of every dump reader (collectors/dumps/heap_dump_reader.h); single_pass picks the
// HPROF reader's strategy.
using ReadOptions = dumps::ReadOptions;

// Reads the heap dump at `path`.
// Errors: NotFound / PermissionDenied (open); InvalidArgument (not a heap dump, a bad option such
// as an ordinal beyond the file's dumps, a file with no heap dump); Unimplemented (a recognised but
// unsupported format or HPROF variant, named in the message); DataLoss (truncated or corrupt file:
// the message names the byte offset and the record); Internal (I/O failure). Never crashes on
// malformed input. Complexity: O(file size + n log n) time; memory O(n + e) for the graph plus
// O(strings + classes).
StatusOr<analysis::HeapGraph> ReadHeapGraph(const std::string& path,
                                            const ReadOptions& options = {});
// The same for a dump held in memory (plain or gzip). `data` must stay valid during the call.
StatusOr<analysis::HeapGraph> ReadHeapGraphFromBuffer(std::string_view data,
                                                      const ReadOptions& options = {});

// Counts of every record of a file (all heap dumps), like hprof-slurp's "File content summary".
struct RecordCensus {
  std::string format;                       // "JAVA PROFILE 1.0.2"
  uint32_t id_size = 0;                     // bytes
  uint64_t timestamp_ms = 0;                // from the header
  uint64_t stream_bytes = 0;                // bytes of the (uncompressed) HPROF stream
  std::map<uint8_t, uint64_t> records;      // top-level tag (hprof_format.h RecordTag) -> count
  std::map<uint8_t, uint64_t> sub_records;  // heap dump sub-record tag (SubTag) -> count
  uint32_t heap_dumps = 0;                  // logical heap dumps (see ReadOptions::dump_ordinal)

  uint64_t record(uint8_t tag) const;
  uint64_t sub_record(uint8_t tag) const;
  uint64_t total_sub_records() const;
  // HEAP DUMP + HEAP DUMP SEGMENT records.
  uint64_t heap_dump_records() const;
};

// One streaming pass over `path` (gzip inflated). Errors as ReadHeapGraph.
StatusOr<RecordCensus> ReadRecordCensus(const std::string& path);
StatusOr<RecordCensus> ReadRecordCensusFromBuffer(std::string_view data);

// Tells whether `path` is a supported heap dump without reading it all (first 4 KiB after
// inflation). Returns OK for HPROF; otherwise the error ReadHeapGraph would give for the format.
Status ProbeHeapDump(const std::string& path);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_READER_H_
