#include "agent/dump_upload.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/daemon_messages.h"

namespace heapwatch::agent {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

Status OpenError(const std::string& path) {
  int err = errno;
  std::string msg = absl::StrCat("open ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::UnavailableError(msg);
}

Status FromGrpc(const grpc::Status& s, const char* call) {
  return Status(static_cast<absl::StatusCode>(s.error_code()),
                absl::StrCat(call, ": ", s.error_message()));
}

void Prepare(grpc::ClientContext* ctx, const std::string& token, absl::Duration deadline) {
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
}

}  // namespace

Status DigestFile(const std::string& path, std::string* sha256, uint64_t* size) {
  File f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return OpenError(path);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  HW_CHECK(ctx != nullptr && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1);
  std::vector<char> buf(kDumpChunkBytes);
  *size = 0;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    HW_CHECK(EVP_DigestUpdate(ctx.get(), buf.data(), n) == 1);
    *size += n;
  }
  if (std::ferror(f.get())) return absl::UnavailableError(absl::StrCat("read ", path));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HW_CHECK(EVP_DigestFinal_ex(ctx.get(), md, &len) == 1 && len == 32);
  sha256->assign(reinterpret_cast<const char*>(md), len);
  return absl::OkStatus();
}

Status UploadDumpOnce(v1::AgentGateway::StubInterface& stub, const std::string& token,
                      const std::string& agent_id, const std::string& dump_id,
                      const std::string& path, uint64_t size, absl::Duration deadline) {
  uint64_t offset = 0;
  {
    grpc::ClientContext ctx;
    Prepare(&ctx, token, deadline);
    v1::GetUploadStatusRequest request;
    request.set_agent_id(agent_id);
    request.set_dump_id(dump_id);
    v1::GetUploadStatusReply reply;
    grpc::Status s = stub.GetUploadStatus(&ctx, request, &reply);
    if (!s.ok()) return FromGrpc(s, "GetUploadStatus");
    if (reply.complete()) return absl::OkStatus();
    HW_ASSIGN_OR_RETURN(offset, CheckUploadOffset("GetUploadStatus", reply.received_bytes(), size));
  }
  File f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return OpenError(path);
  if (fseeko(f.get(), static_cast<off_t>(offset), SEEK_SET) != 0) {
    return absl::UnavailableError(absl::StrCat("seek ", path));
  }
  grpc::ClientContext ctx;
  Prepare(&ctx, token, deadline);
  v1::UploadDumpReply reply;
  std::unique_ptr<grpc::ClientWriterInterface<v1::DumpChunk>> writer(stub.UploadDump(&ctx, &reply));
  std::string data(kDumpChunkBytes, '\0');
  bool first = true;
  bool ok = true;
  do {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kDumpChunkBytes, size - offset));
    size_t n = want == 0 ? 0 : std::fread(data.data(), 1, want, f.get());
    if (n != want) {
      writer->WritesDone();
      writer->Finish();
      return absl::UnavailableError(absl::StrCat("read ", path, " at ", offset));
    }
    v1::DumpChunk chunk;
    if (first) chunk.set_agent_id(agent_id);
    chunk.set_dump_id(dump_id);
    chunk.set_offset(offset);
    chunk.set_data(data.data(), n);
    chunk.set_crc32(static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n))));
    offset += n;
    chunk.set_last(offset == size);
    first = false;
    ok = writer->Write(chunk);
  } while (ok && offset < size);
  if (ok) writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) return FromGrpc(s, "UploadDump");
  if (!ok) return absl::UnavailableError("UploadDump: the stream broke");
  if (!reply.complete()) {
    return absl::DataLossError(absl::StrCat("UploadDump: the daemon holds ", reply.received_bytes(),
                                            " of ", size, " bytes and did not accept the dump"));
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::agent
