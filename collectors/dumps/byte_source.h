// Byte streams the HPROF reader pulls from: a plain file read in chunks, a gzip file inflated on
// the fly (zlib), or a buffer in memory. Internal to collectors/dumps (shared by its readers).
//
// Every source can be rewound: the reader makes several passes over a dump. A gzip file is inflated
// again on each pass (no temporary file is written); plain files are read with read(2) into a
// bounded buffer, so the process never maps the whole dump (mapped pages would count toward the
// resident set).
//
// Thread-safety: a source is used by one thread at a time.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_BYTE_SOURCE_H_
#define HEAPWATCH_COLLECTORS_DUMPS_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace heapwatch::dumps {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes into `dst`; returns the number read, 0 only at the end of the stream.
  // Errors: Internal for a failing read(2); DataLoss for a corrupt or truncated gzip stream (the
  // message names the compressed offset).
  virtual StatusOr<size_t> Read(uint8_t* dst, size_t n) = 0;
  // Skips up to `n` bytes; returns the number skipped (fewer only at the end of the stream). The
  // default reads and discards; plain files seek.
  virtual StatusOr<uint64_t> SkipForward(uint64_t n);
  // Starts over from the first byte.
  virtual Status Rewind() = 0;
  // Bytes of the underlying file consumed so far and the file's size in bytes (for progress).
  virtual uint64_t consumed() const = 0;
  virtual uint64_t total() const = 0;
  // True if the bytes are inflated from gzip.
  virtual bool compressed() const { return false; }
};

// Opens `path`; a file that starts with the gzip magic (1f 8b) is inflated transparently
// (concatenated gzip members, as `jcmd GC.heap_dump -gz` writes them, are read as one stream).
// Errors: NotFound / PermissionDenied / Internal from open(2) or fstat(2).
StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path);

// A source over `data` (not copied: it must outlive the source); gzip data is inflated as above.
std::unique_ptr<ByteSource> OpenMemorySource(std::string_view data);

}  // namespace heapwatch::dumps

#endif  // HEAPWATCH_COLLECTORS_DUMPS_BYTE_SOURCE_H_
