// Reading IBM Portable Heap Dumps (PHD, "heapdump.*.phd", written by IBM J9 / OpenJ9 JVMs with
// -Xdump:heap) into an analysis::HeapGraph. Grammar, endianness, sources and the size model:
// docs/dump-formats.md.
//
// What the graph holds:
//   * every object, object array, primitive array and class object of the dump (class records
//     give the class objects); ObjectIndex in ascending address order;
//   * references as the dump lists them (no field names, nulls not recorded): instances have
//     ClassInfo::unnamed_references, each reference a slot "<reference[i]>"; object arrays get
//     their listed (non-null) elements as elements 0..k-1 followed by null slots up to their length
//     (the dump does not say which elements are null; a budget of null slots per byte of the file
//     bounds the padding, beyond which an array keeps only its listed elements, with a warning); a
//     class object gets "<super>" (the record's superclass) and the record's references (its class
//     loader, statics, constant-pool classes, superclasses and interfaces in J9's order) as unnamed
//     statics "static <reference[i]>"; with ReadOptions::instance_class_edges every object also
//     references its class object first ("<class>");
//   * shallow sizes (SizeModel::kIbm, as Eclipse MAT computes them through IBM's DTFJ): instances
//     take the class record's instance size rounded up to 8 bytes (plus a 3-word header when the
//     dump's smallest instance size is 0, as in Java 1.4.2 dumps; classes without a record take the
//     smallest distance from one of their instances to the next object); version 6 arrays take the
//     size the record gives, rounded up to 8; older arrays 2 pointers + 8 + length x element size,
//     rounded up to 8; class objects the instance size of java.lang.Class;
//   * no GC roots: a PHD has no root records, so the roots are inferred (analysis/root_inference.h:
//     pure roots, then one artificial root per cycle no pure root reaches);
//     DumpInfo::roots_inferred is set. (MAT, without the matching javacore, takes the classes of
//     the boot loader, objects without referrers and guessed finalizable objects instead, and keeps
//     unreachable objects.)
//
// Array classes: J9 names the element class in object array records; the array class is the class
// record named "[L<element>;" ("[<element>" for arrays of arrays), and one without a record is
// created ("java.lang.String[]", synthetic). Dumps whose every object array names an array class
// (some Java 6 dumps) are taken as naming the array class itself, as DTFJ does. Objects whose class
// has no record get a synthetic class "unknown class 0x<address>".
//
// How: the graph is filled through analysis::BulkHeapGraphBuilder. Two streaming passes over the
// file (classes come last in a PHD, so the first collects them with the object ids), three when the
// objects are not in ascending address order or repeat an address; gzip is inflated on each pass.
// Memory: the class records, 8 bytes per object id until they are indexed, the graph itself, and 16
// bytes per array whose size the record gives (version 6) until the sizes are set.
//
// Thread-safety: reentrant; concurrent calls on different files are safe.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_PHD_PHD_READER_H_
#define HEAPWATCH_COLLECTORS_DUMPS_PHD_PHD_READER_H_

#include <string>
#include <string_view>

#include "analysis/heap_graph.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "common/status.h"

namespace heapwatch::dumps::phd {

// True when `prefix` (the first bytes of a file after gzip inflation) starts like a PHD.
bool LooksLikePhd(std::string_view prefix);

// Reads the PHD at `path` (plain or gzip). ReadOptions: instance_class_edges and progress apply;
// dump_ordinal must be -1 or 0 (a PHD holds one dump); size_model kAuto or kIbm (others are
// InvalidArgument).
// Errors: NotFound / PermissionDenied (open); InvalidArgument (not a PHD, a bad option);
// Unimplemented (PHD version other than 4, 5, 6); DataLoss (truncated or corrupt: the message
// names the byte offset); ResourceExhausted (2^32 - 2 objects or more). Messages start with
// `path`. Never crashes on malformed input. O(file size + n log n) time.
StatusOr<analysis::HeapGraph> ReadPhdGraph(const std::string& path,
                                           const ReadOptions& options = {});
// The same for a dump held in memory (plain or gzip); `data` must stay valid during the call.
StatusOr<analysis::HeapGraph> ReadPhdGraphFromBuffer(std::string_view data,
                                                     const ReadOptions& options = {});

}  // namespace heapwatch::dumps::phd

#endif  // HEAPWATCH_COLLECTORS_DUMPS_PHD_PHD_READER_H_
