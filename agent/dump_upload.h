// Extended dumps on the agent side (agent.proto, "Extended dumps"): the dump file's digest, and its
// resumable upload with UploadDump / GetUploadStatus.
//
// Upload: GetUploadStatus says how many bytes the daemon holds (and whether it is complete); one
// UploadDump call then streams the rest from that offset in chunks of at most 1 MiB, each with its
// offset and zlib CRC-32, the last one with `last` set. A call that breaks is resumed by the next
// attempt from the daemon's new `received_bytes`.
//
// Thread-safety: pure functions over their arguments (the stub is thread-safe).
#ifndef HEAPWATCH_AGENT_DUMP_UPLOAD_H_
#define HEAPWATCH_AGENT_DUMP_UPLOAD_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "heapwatch/agent/v1/agent.grpc.pb.h"

namespace heapwatch::agent {

inline constexpr size_t kDumpChunkBytes = size_t{1} << 20;

// SHA-256 (32 raw bytes) and size in bytes of the file at `path`, read in 1 MiB blocks.
// Errors: NotFound / PermissionDenied / Unavailable when it cannot be read.
Status DigestFile(const std::string& path, std::string* sha256, uint64_t* size);

// One upload attempt of the dump file at `path` (`size` bytes): returns OK once the daemon answered
// complete. `token` (may be empty) is sent as Bearer credential; `deadline` bounds each call.
// Errors: the gRPC status of a failed call (mapped to absl codes, message "UploadDump: ..."),
// DataLoss when the daemon received the whole file but did not accept it (SHA-256 mismatch),
// Unavailable when the file cannot be read.
Status UploadDumpOnce(heapwatch::agent::v1::AgentGateway::StubInterface& stub,
                      const std::string& token, const std::string& agent_id,
                      const std::string& dump_id, const std::string& path, uint64_t size,
                      absl::Duration deadline);

}  // namespace heapwatch::agent

#endif  // HEAPWATCH_AGENT_DUMP_UPLOAD_H_
