// Reading IBM's text ("classic") heap dumps into an analysis::HeapGraph: the format IBM JVMs write
// with -Xdump:heap:opts=CLASSIC (heapdump.*.txt) and the one seed 000's HeapRoots reads. Grammar,
// the variants accepted and sources: docs/dump-formats.md ("IBM text heap dump").
//
// In short, one record per object, then one per class, each a line
//     0x<address> [<size in bytes>] OBJ|CLS <type> [<reference> ...]
// whose references may continue on the following lines (J9 writes them on one tab-indented line),
// between an optional "// Version: ..." header and optional "// Breakdown - ..." and "// EOF: ..."
// trailer lines. The OBJ/CLS keyword is optional (HeapRoots' example "0x1018f030 [32]
// java/lang/String 0x1018f050"); types are JVM names ("java/lang/String", "[C",
// "[Ljava/lang/String;"); references are hexadecimal addresses, 0 being null. Java 6 J9 dumps also
// list the class block (outside the heap) and nulls: addresses with no object are dropped and
// counted in DumpInfo::dangling_references, nulls dropped.
//
// What the graph holds: every OBJ record as an instance or array (by its type), every CLS record as
// a class object; references as listed: instances' as unnamed slots (ClassInfo::unnamed_references,
// "<reference[i]>"), object arrays' as their elements (their length is the number of values listed,
// nulls included), a class object's as unnamed statics "static <reference[i]>"; the references a
// primitive array lists (Java 6: its class block) are dropped and counted in a warning. Every
// object's shallow size as its record gives it (SizeModel::kIbm; a class's instance size is that of
// its first instance); primitive arrays' length 0 (the format does not give it); no superclasses
// (the format has none). No GC root records: the roots are inferred (analysis/root_inference.h),
// DumpInfo::roots_inferred is set. Built through analysis::BulkHeapGraphBuilder in two streaming
// passes (three when the records are not in ascending address order).
//
// Bounds: tokens are at most 64 KiB, sizes at most 2^40 bytes, addresses at most 16 hex digits;
// lines may be any length (a J9 object array lists all its elements on one line) and are never held
// whole; one record's references are held (bounded by the file).
//
// Thread-safety: reentrant; concurrent calls on different files are safe.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_IBM_TEXT_TEXT_DUMP_READER_H_
#define HEAPWATCH_COLLECTORS_DUMPS_IBM_TEXT_TEXT_DUMP_READER_H_

#include <string>
#include <string_view>

#include "analysis/heap_graph.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "common/status.h"

namespace heapwatch::dumps::ibm_text {

// True when `prefix` (the first bytes of a file after gzip inflation) starts like an IBM text heap
// dump: a "// Version: " line, or a first line "0x<hex> [<digits>] ...".
bool LooksLikeTextDump(std::string_view prefix);

// Reads the text heap dump at `path` (plain or gzip). ReadOptions: instance_class_edges and
// progress apply; dump_ordinal must be -1 or 0; size_model kAuto or kIbm.
// Errors: NotFound / PermissionDenied (open); InvalidArgument (not a text heap dump, a bad option);
// DataLoss (a malformed line: the message names the line number and byte offset; a record cut
// short); ResourceExhausted (2^32 - 2 objects or more). Messages start with `path`. Never crashes
// on malformed input. Two streaming passes; O(file size + n log n) time.
StatusOr<analysis::HeapGraph> ReadTextDumpGraph(const std::string& path,
                                                const ReadOptions& options = {});
// The same for a dump held in memory (plain or gzip); `data` must stay valid during the call.
StatusOr<analysis::HeapGraph> ReadTextDumpGraphFromBuffer(std::string_view data,
                                                          const ReadOptions& options = {});

}  // namespace heapwatch::dumps::ibm_text

#endif  // HEAPWATCH_COLLECTORS_DUMPS_IBM_TEXT_TEXT_DUMP_READER_H_
