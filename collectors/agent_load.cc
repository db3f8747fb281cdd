#include "collectors/agent_load.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace heapwatch::collectors {
namespace {

// At most `max` bytes of `text`, control characters replaced, for an error message.
std::string Quote(std::string_view text, size_t max = 300) {
  std::string out;
  for (char c : text.substr(0, max)) {
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u == '\n' ? ' ' : (u < 0x20 || u == 0x7f ? '?' : c));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

Status LoadAgentResult(const AttachReply& reply, int64_t pid) {
  if (reply.status != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "JVM ", pid, " did not load the agent (status ", reply.status, "): ", Quote(reply.output)));
  }
  std::string_view out = reply.output;
  constexpr std::string_view kPrefix = "return code: ";
  size_t at = out.find(kPrefix);
  if (at == std::string_view::npos) {
    return absl::DataLossError(
        absl::StrCat("JVM ", pid, " answered the load without a return code: ", Quote(out)));
  }
  std::string_view rest = out.substr(at + kPrefix.size());
  rest = rest.substr(0, rest.find('\n'));
  int code = 0;
  if (!absl::SimpleAtoi(absl::string_view(rest.data(), rest.size()), &code)) {
    return absl::DataLossError(absl::StrCat("JVM ", pid, ": bad return code: ", Quote(out)));
  }
  if (code != 0) {
    return absl::InternalError(absl::StrCat("Agent_OnAttach returned ", code, " in JVM ", pid,
                                            " (the agent refused to start; its reason is on the "
                                            "JVM's stderr, \"heapwatch-agent: ...\")"));
  }
  return absl::OkStatus();
}

Status LoadAgentLibrary(const LocalJvm& jvm, std::string_view library_path,
                        std::string_view options, const AttachOptions& attach_options) {
  if (library_path.empty() || library_path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("agent library path must be absolute: ", Quote(library_path)));
  }
  if (options.size() > 1024) {
    return absl::InvalidArgumentError("agent options longer than 1024 bytes");
  }
  HW_ASSIGN_OR_RETURN(
      AttachReply reply,
      ExecuteAttachOperation(jvm, "load", {library_path, "true", options}, attach_options));
  return LoadAgentResult(reply, jvm.pid);
}

}  // namespace heapwatch::collectors
