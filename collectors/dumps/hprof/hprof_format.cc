#include "collectors/dumps/hprof/hprof_format.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/str_format.h"

namespace heapwatch::hprof {

std::string RecordTagName(uint8_t tag) {
  switch (tag) {
    case kTagString:
      return "STRING IN UTF8";
    case kTagLoadClass:
      return "LOAD CLASS";
    case kTagUnloadClass:
      return "UNLOAD CLASS";
    case kTagStackFrame:
      return "STACK FRAME";
    case kTagStackTrace:
      return "STACK TRACE";
    case kTagAllocSites:
      return "ALLOC SITES";
    case kTagHeapSummary:
      return "HEAP SUMMARY";
    case kTagStartThread:
      return "START THREAD";
    case kTagEndThread:
      return "END THREAD";
    case kTagHeapDump:
      return "HEAP DUMP";
    case kTagCpuSamples:
      return "CPU SAMPLES";
    case kTagControlSettings:
      return "CONTROL SETTINGS";
    case kTagHeapDumpSegment:
      return "HEAP DUMP SEGMENT";
    case kTagHeapDumpEnd:
      return "HEAP DUMP END";
  }
  return absl::StrFormat("UNKNOWN(0x%02x)", tag);
}

std::string SubTagName(uint8_t tag) {
  switch (tag) {
    case kSubRootUnknown:
      return "ROOT UNKNOWN";
    case kSubRootJniGlobal:
      return "ROOT JNI GLOBAL";
    case kSubRootJniLocal:
      return "ROOT JNI LOCAL";
    case kSubRootJavaFrame:
      return "ROOT JAVA FRAME";
    case kSubRootNativeStack:
      return "ROOT NATIVE STACK";
    case kSubRootStickyClass:
      return "ROOT STICKY CLASS";
    case kSubRootThreadBlock:
      return "ROOT THREAD BLOCK";
    case kSubRootMonitorUsed:
      return "ROOT MONITOR USED";
    case kSubRootThreadObject:
      return "ROOT THREAD OBJECT";
    case kSubClassDump:
      return "CLASS DUMP";
    case kSubInstanceDump:
      return "INSTANCE DUMP";
    case kSubObjectArrayDump:
      return "OBJECT ARRAY DUMP";
    case kSubPrimitiveArrayDump:
      return "PRIMITIVE ARRAY DUMP";
    case kSubRootInternedString:
      return "ROOT INTERNED STRING";
    case kSubRootFinalizing:
      return "ROOT FINALIZING";
    case kSubRootDebugger:
      return "ROOT DEBUGGER";
    case kSubRootReferenceCleanup:
      return "ROOT REFERENCE CLEANUP";
    case kSubRootVmInternal:
      return "ROOT VM INTERNAL";
    case kSubRootJniMonitor:
      return "ROOT JNI MONITOR";
    case kSubUnreachable:
      return "UNREACHABLE";
    case kSubPrimitiveArrayNoData:
      return "PRIMITIVE ARRAY NODATA DUMP";
    case kSubHeapDumpInfo:
      return "HEAP DUMP INFO";
  }
  return absl::StrFormat("UNKNOWN(0x%02x)", tag);
}

namespace {

bool LooksLikeText(std::string_view s) {
  if (s.empty()) return false;
  size_t bad = 0;
  for (unsigned char c : s) {
    if (c == 0) return false;
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f') ++bad;
  }
  return bad * 50 < s.size();
}

std::string FirstLine(std::string_view s) {
  std::string_view line = s.substr(0, s.find_first_of("\r\n"));
  std::string out(line.substr(0, 60));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

// `jmap -histo` / GC.class_histogram rows: "   1:   4752   651328  <methodKlass>" or (JDK 5) "  171
// 44312  [C", or the header line " num     #instances         #bytes  class name".
bool LooksLikeClassHistogram(std::string_view s) {
  auto is_number = [](std::string_view t) {
    return !t.empty() &&
           std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  int rows = 0;
  int lines = 0;
  size_t start = 0;
  while (start < s.size() && ++lines <= 12) {
    size_t nl = s.find('\n', start);
    std::string_view line =
        s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? s.size() : nl + 1;
    std::vector<std::string_view> t;
    size_t i0 = 0;
    while (i0 < line.size()) {
      size_t b = line.find_first_not_of(" \t\r", i0);
      if (b == std::string_view::npos) break;
      size_t e = line.find_first_of(" \t\r", b);
      if (e == std::string_view::npos) e = line.size();
      t.push_back(line.substr(b, e - b));
      i0 = e;
    }
    if (t.size() >= 4 && t[0] == "num" && t[1] == "#instances") return true;
    size_t i = 0;
    if (!t.empty() && t[0].size() > 1 && t[0].back() == ':' &&
        is_number(t[0].substr(0, t[0].size() - 1)))
      i = 1;
    if (t.size() >= i + 3 && is_number(t[i]) && is_number(t[i + 1])) ++rows;
  }
  return rows >= 2;
}

}  // namespace

Status CheckHprofSignature(std::string_view p) {
  if (p.empty()) return absl::InvalidArgumentError("empty file: not a heap dump");
  if (p.starts_with("JAVA PROFILE ")) {
    size_t nul = p.find('\0');
    std::string version(
        p.substr(0, std::min<size_t>(nul == std::string_view::npos ? p.size() : nul, 40)));
    if (version == "JAVA PROFILE 1.0.1" || version == "JAVA PROFILE 1.0.2" ||
        version == "JAVA PROFILE 1.0.3") {
      return absl::OkStatus();
    }
    return absl::UnimplementedError(absl::StrFormat(
        "HPROF version \"%s\" is not supported (supported: JAVA PROFILE 1.0.1, 1.0.2, 1.0.3)",
        version));
  }
  if (p.size() >= 20 && p[0] == 0 && p[1] == 18 && p.substr(2, 18) == "portable heap dump") {
    return absl::UnimplementedError(
        "IBM Portable Heap Dump (PHD) format is not HPROF: read it with dumps::ReadHeapDump "
        "(collectors/dumps/phd), which heapwatchctl analyze --from-roots uses");
  }
  if (p.starts_with("\x7f"
                    "ELF")) {
    return absl::UnimplementedError(
        "ELF core file is not supported: convert it to HPROF first (jhsdb jmap --binaryheap --core "
        "...)");
  }
  if (p.starts_with("PK\x03\x04")) {
    return absl::UnimplementedError(
        "zip archive (e.g. an IBM system dump .dmp.zip) is not supported: heapwatch reads HPROF "
        "dumps only");
  }
  if (LooksLikeText(p.substr(0, 4096))) {
    std::string_view head = p.substr(0, 4096);
    if (head.find("0SECTION") != std::string_view::npos &&
        (head.find("TITLE") != std::string_view::npos ||
         head.find("javacore") != std::string_view::npos)) {
      return absl::UnimplementedError(
          "IBM javacore text (thread and class loader report) is not supported: it is not a heap "
          "dump");
    }
    if (LooksLikeClassHistogram(head)) {
      return absl::UnimplementedError(
          "class histogram text (jmap -histo / GC.class_histogram output) is not a heap dump: it "
          "has no object "
          "graph; feed it to the histogram collector instead");
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("text file, not a heap dump (first line: \"%s\")", FirstLine(head)));
  }
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(p.size(), 8); ++i) {
    absl::StrAppendFormat(&hex, "%02x ", static_cast<unsigned char>(p[i]));
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("unrecognised binary file, not an HPROF heap dump (first bytes: %s)", hex));
}

StatusOr<HprofHeader> ReadHprofHeader(StreamReader& in) {
  HW_ASSIGN_OR_RETURN(bool whole, in.Ensure(4096));
  (void)whole;
  std::string_view prefix(reinterpret_cast<const char*>(in.data()), in.available());
  HW_RETURN_IF_ERROR(CheckHprofSignature(prefix));
  HprofHeader h;
  size_t nul = prefix.find('\0');
  if (nul == std::string_view::npos || nul > 64) {
    return absl::DataLossError("HPROF header truncated: no NUL after the format string");
  }
  h.format = std::string(prefix.substr(0, nul));
  h.minor = h.format.back() - '0';
  if (prefix.size() < nul + 1 + 12) {
    return absl::DataLossError(
        absl::StrFormat("HPROF header truncated: file ends at byte %d, the header needs %d bytes",
                        prefix.size(), nul + 13));
  }
  in.Advance(nul + 1);
  h.id_size = in.U4();
  uint64_t hi = in.U4();
  uint64_t lo = in.U4();
  h.timestamp_ms = (hi << 32) | lo;
  h.length = nul + 13;
  if (h.id_size != 4 && h.id_size != 8) {
    return absl::UnimplementedError(absl::StrFormat(
        "HPROF identifier size %d at byte %d is not supported (only 4 and 8)", h.id_size, nul + 1));
  }
  return h;
}

}  // namespace heapwatch::hprof
