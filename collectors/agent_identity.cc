#include "collectors/agent_identity.h"

#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collectors/absl_compat.h"
#include "common/utf8.h"

namespace heapwatch::collectors {
namespace {

constexpr size_t kMaxHostLength = 63;

std::string Base36(uint64_t v) {
  if (v == 0) return "0";
  std::string out;
  while (v > 0) {
    out.push_back("0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
    v /= 36;
  }
  return std::string(out.rbegin(), out.rend());
}

// Unescapes one key or value of java.util.Properties text (Properties.load's rules, single line).
std::string Unescape(std::string_view s) {
  std::string out;
  uint32_t high_surrogate = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 == s.size()) {
      out.push_back(c);
      continue;
    }
    c = s[++i];
    uint32_t unit = 0;
    if (c == 'u' && i + 4 < s.size() && absl::SimpleHexAtoi(Av(s.substr(i + 1, 4)), &unit)) {
      i += 4;
      if (unit >= 0xD800 && unit < 0xDC00) {
        high_surrogate = unit;
        continue;
      }
      if (unit >= 0xDC00 && unit < 0xE000 && high_surrogate != 0) {
        AppendUtf8(0x10000 + ((high_surrogate - 0xD800) << 10) + (unit - 0xDC00), &out);
      } else {
        AppendUtf8(unit, &out);
      }
      high_surrogate = 0;
      continue;
    }
    switch (c) {
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'f':
        out.push_back('\f');
        break;
      default:
        out.push_back(c);
        break;
    }
  }
  return out;
}

}  // namespace

AgentId MakeAgentId(std::string_view host, int64_t pid, absl::Time start_time) {
  std::string h;
  for (char c : host.substr(0, kMaxHostLength)) {
    h.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c
                                                                                           : '-');
  }
  if (h.empty()) h = "localhost";
  uint64_t ms = 0;
  if (start_time != absl::InfinitePast() && start_time > absl::UnixEpoch()) {
    ms = static_cast<uint64_t>(absl::ToUnixMillis(start_time));
  }
  return AgentId(absl::StrCat(h, "-", pid < 0 ? 0 : pid, "-", Base36(ms)));
}

std::string MainClassFromJavaCommand(std::string_view java_command) {
  std::vector<absl::string_view> words =
      absl::StrSplit(Av(java_command), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.empty()) return "";
  const absl::string_view first = words[0];
  // Source-file mode: JDK 11-21 "jdk.compiler/com.sun.tools.javac.launcher.Main File.java",
  // JDK 22+ "jdk.compiler/com.sun.tools.javac.launcher.SourceLauncher File.java".
  if ((absl::EndsWith(first, "com.sun.tools.javac.launcher.Main") ||
       absl::EndsWith(first, "com.sun.tools.javac.launcher.SourceLauncher")) &&
      words.size() > 1) {
    return std::string(words[1]);
  }
  return std::string(first);
}

StatusOr<AgentInfo> AgentInfoFromPerfData(const PerfData& perf, const LocalJvm& jvm,
                                          std::string_view host) {
  auto begin_ms = perf.GetLong("sun.rt.createVmBeginTime");
  if (!begin_ms || *begin_ms <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "JVM ", jvm.pid, ": hsperfdata has no sun.rt.createVmBeginTime; cannot identify it"));
  }
  AgentInfo info;
  info.start_time = absl::FromUnixMillis(*begin_ms);
  info.id = MakeAgentId(host, jvm.pid, info.start_time);
  info.kind = AgentKind::kLocalAttach;
  info.host = std::string(host);
  info.pid = jvm.pid;
  info.uid = jvm.uid;
  info.gid = jvm.gid;
  info.main_class = MainClassFromJavaCommand(perf.GetString("sun.rt.javaCommand").value_or(""));
  info.jvm_version = perf.GetString("java.property.java.vm.version").value_or("");
  if (info.jvm_version.empty()) {
    info.jvm_version = perf.GetString("java.property.java.version").value_or("");
  }
  return info;
}

StatusOr<AgentInfo> ReadAgentInfo(const LocalJvm& jvm, std::string_view host) {
  HW_ASSIGN_OR_RETURN(PerfData perf, PerfData::ReadFile(jvm.perfdata_path));
  return AgentInfoFromPerfData(perf, jvm, host);
}

std::optional<std::string> FindJavaProperty(std::string_view text, std::string_view key) {
  for (absl::string_view line : absl::StrSplit(Av(text), '\n')) {
    line = absl::StripLeadingAsciiWhitespace(absl::StripSuffix(line, "\r"));
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    // The key ends at the first unescaped '=', ':' or blank.
    size_t end = 0;
    while (end < line.size()) {
      const char c = line[end];
      if (c == '\\') {
        end += 2;
        continue;
      }
      if (c == '=' || c == ':' || c == ' ' || c == '\t') break;
      ++end;
    }
    end = std::min(end, line.size());
    if (Unescape(Sv(line.substr(0, end))) != key) continue;
    absl::string_view value = absl::StripLeadingAsciiWhitespace(line.substr(end));
    if (!value.empty() && (value[0] == '=' || value[0] == ':')) {
      value = absl::StripLeadingAsciiWhitespace(value.substr(1));
    }
    return Unescape(Sv(value));
  }
  return std::nullopt;
}

StatusOr<AgentInfo> CompleteAgentInfoViaAttach(const LocalJvm& jvm, AgentInfo info,
                                               const AttachOptions& options) {
  if (!info.main_class.empty() && !info.jvm_version.empty()) return info;
  HW_ASSIGN_OR_RETURN(AttachReply reply,
                      ExecuteAttachOperation(jvm, "properties", {"", "", ""}, options));
  if (reply.status != 0) {
    return absl::InternalError(
        absl::StrCat("JVM ", jvm.pid, " failed 'properties' (status ", reply.status,
                     "): ", absl::StripAsciiWhitespace(reply.output).substr(0, 500)));
  }
  if (info.main_class.empty()) {
    info.main_class =
        MainClassFromJavaCommand(FindJavaProperty(reply.output, "sun.java.command").value_or(""));
  }
  if (info.jvm_version.empty()) {
    info.jvm_version = FindJavaProperty(reply.output, "java.vm.version").value_or("");
    if (info.jvm_version.empty()) {
      info.jvm_version = FindJavaProperty(reply.output, "java.version").value_or("");
    }
  }
  return info;
}

}  // namespace heapwatch::collectors
