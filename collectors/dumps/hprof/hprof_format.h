// HPROF binary format constants and the file header. Internal to the HPROF reader
// (collectors/dumps/hprof); docs/hprof-format.md is the grammar.
//
// Sources: OpenJDK `src/hotspot/share/services/heapDumper.cpp` (format description comment), the
// JDK 6 hprof agent manual (`demo/jvmti/hprof/manual.html`), Android `art/runtime/hprof/hprof.cc`
// (tags 0x89..0xFE), and seeds/004 (HAHA's tag list). All multi-byte values are big-endian.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_FORMAT_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/dumps/stream_reader.h"
#include "common/status.h"

namespace heapwatch::hprof {

// The input layer shared by the dump readers (collectors/dumps/byte_source.h, stream_reader.h).
using dumps::ByteSource;
using dumps::LoadId;
using dumps::StreamReader;

// Top-level record tags. DO NOT CHANGE (file format).
enum RecordTag : uint8_t {
  kTagString = 0x01,
  kTagLoadClass = 0x02,
  kTagUnloadClass = 0x03,
  kTagStackFrame = 0x04,
  kTagStackTrace = 0x05,
  kTagAllocSites = 0x06,
  kTagHeapSummary = 0x07,
  kTagStartThread = 0x0A,
  kTagEndThread = 0x0B,
  kTagHeapDump = 0x0C,
  kTagCpuSamples = 0x0D,
  kTagControlSettings = 0x0E,
  kTagHeapDumpSegment = 0x1C,
  kTagHeapDumpEnd = 0x2C,
};

// Heap dump sub-record tags. DO NOT CHANGE (file format).
enum SubTag : uint8_t {
  kSubRootUnknown = 0xFF,
  kSubRootJniGlobal = 0x01,
  kSubRootJniLocal = 0x02,
  kSubRootJavaFrame = 0x03,
  kSubRootNativeStack = 0x04,
  kSubRootStickyClass = 0x05,
  kSubRootThreadBlock = 0x06,
  kSubRootMonitorUsed = 0x07,
  kSubRootThreadObject = 0x08,
  kSubClassDump = 0x20,
  kSubInstanceDump = 0x21,
  kSubObjectArrayDump = 0x22,
  kSubPrimitiveArrayDump = 0x23,
  // Android
  kSubRootInternedString = 0x89,
  kSubRootFinalizing = 0x8A,
  kSubRootDebugger = 0x8B,
  kSubRootReferenceCleanup = 0x8C,
  kSubRootVmInternal = 0x8D,
  kSubRootJniMonitor = 0x8E,
  kSubUnreachable = 0x90,
  kSubPrimitiveArrayNoData = 0xC3,
  kSubHeapDumpInfo = 0xFE,
};

// Name of a top-level tag ("HEAP DUMP SEGMENT") or "UNKNOWN(0x42)".
std::string RecordTagName(uint8_t tag);
// Name of a heap dump sub-record tag ("INSTANCE DUMP", "ROOT JNI GLOBAL") or "UNKNOWN(0x42)".
std::string SubTagName(uint8_t tag);

// The file header: "JAVA PROFILE 1.0.x\0", u4 identifier size, u4 high + u4 low millisecond
// timestamp.
struct HprofHeader {
  std::string format;    // without the NUL
  int minor = 0;         // 1, 2 or 3 (1.0.3 = Android)
  uint32_t id_size = 0;  // 4 or 8
  uint64_t timestamp_ms = 0;
  uint64_t length = 0;  // bytes of the header
};

// Identifies what `prefix` (the first bytes of a file, after gzip inflation) is. Returns OK for
// HPROF; otherwise an error naming the format: Unimplemented for recognised heap-dump-like formats
// that are not supported (IBM Portable Heap Dump, IBM javacore, class histogram text, ELF core, zip
// archive, HPROF with an unknown version), InvalidArgument for anything else (empty, text, unknown
// binary).
Status CheckHprofSignature(std::string_view prefix);

// Reads and validates the header at the start of `in`.
// Errors: as CheckHprofSignature; DataLoss for a truncated header; Unimplemented for id sizes other
// than 4/8.
StatusOr<HprofHeader> ReadHprofHeader(StreamReader& in);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_FORMAT_H_
