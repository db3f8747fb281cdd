// Identity and labels of a local JVM agent, read from the JVM itself.
//
// Labels come from the JVM's PerfData (hsperfdata) counters, which need no attach and have no side
// effect on the JVM (collectors/perf_data.h):
//   sun.rt.javaCommand            main class (or jar) and arguments, as `jps -lm` shows them
//   java.property.java.vm.version JVM version, e.g. "17.0.15+6-Debian-1deb12u1"
//                                 (java.property.java.version as fallback, e.g. "17.0.15")
//   sun.rt.createVmBeginTime      JVM start, milliseconds since the Unix epoch
// sun.rt.javaCommand comes from the java launcher; a JVM that another program creates through JNI
// has none. When the main class or version is missing, CompleteAgentInfoViaAttach() reads them
// from the JVM's system properties over the attach API.
//
// Agent id: "<host>-<pid>-<start>", where <host> is the host name reduced to [A-Za-z0-9.-] (other
// bytes become '-', at most 63 bytes, "localhost" when empty), <pid> the decimal pid in the
// daemon's namespace, and <start> the JVM start time in milliseconds since the epoch in lower-case
// base 36 (8 digits until the year 2059), e.g. "build7-4242-mhx3k2a1". It is deterministic: the
// same JVM process gets the same id after a daemon restart; a restarted JVM (new start time) or a
// reused pid gets a new one. Within one host the pair (pid, start time in ms) is unique in practice
// (a pid cannot be reused within the same millisecond).
#ifndef HEAPWATCH_COLLECTORS_AGENT_IDENTITY_H_
#define HEAPWATCH_COLLECTORS_AGENT_IDENTITY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "collectors/perf_data.h"
#include "common/agent.h"
#include "common/status.h"

namespace heapwatch::collectors {

// Builds the agent id described above. `start_time` is truncated to milliseconds; InfinitePast()
// (unknown) gives start "0". Always returns a valid AgentId (printable, at most 128 bytes).
// Thread-safety: pure.
AgentId MakeAgentId(std::string_view host, int64_t pid, absl::Time start_time);

// The label for "main class or jar" from a java command line (sun.rt.javaCommand /
// sun.java.command): its first word, except for the source-file launcher ("java File.java", whose
// command starts with jdk.compiler/com.sun.tools.javac.launcher.Main or .SourceLauncher), where it
// is the source file. Empty for an empty command. Thread-safety: pure.
std::string MainClassFromJavaCommand(std::string_view java_command);

// Agent info from already-read PerfData (no I/O): id, kind kLocalAttach, host, pid, uid/gid from
// `jvm`, main class, JVM version and start time from the counters above.
// Errors: FailedPrecondition when sun.rt.createVmBeginTime is missing or not positive (without a
// start time the id would not be stable). Thread-safety: pure.
StatusOr<AgentInfo> AgentInfoFromPerfData(const PerfData& perf, const LocalJvm& jvm,
                                          std::string_view host);

// Reads the JVM's hsperfdata file and returns AgentInfoFromPerfData. Errors: those of
// PerfData::ReadFile (Unavailable when the file is gone, PermissionDenied, DataLoss when corrupt,
// Unavailable while the JVM is still initialising it) and of AgentInfoFromPerfData. Cost: one read
// of a ~32 KiB file. Thread-safety: thread-safe.
StatusOr<AgentInfo> ReadAgentInfo(const LocalJvm& jvm, std::string_view host);

// Fills an empty main_class or jvm_version of `info` from the JVM's system properties
// (sun.java.command, java.vm.version / java.version) read with the attach operation "properties"
// (what VirtualMachine.getSystemProperties() uses); leaves filled fields unchanged and does not
// attach at all when nothing is missing. Errors: those of ExecuteAttachOperation, Internal when the
// JVM reports a failure. Thread-safety: thread-safe.
StatusOr<AgentInfo> CompleteAgentInfoViaAttach(const LocalJvm& jvm, AgentInfo info,
                                               const AttachOptions& options);

// Parses java.util.Properties.store() text ("key=value" lines, '#' comments, backslash escapes
// including \uXXXX, which is emitted as UTF-8) and returns the value of `key`, or nullopt.
// Complexity: O(text size). Thread-safety: pure.
std::optional<std::string> FindJavaProperty(std::string_view properties_text, std::string_view key);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_AGENT_IDENTITY_H_
