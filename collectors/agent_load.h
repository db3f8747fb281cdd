// Loading a JVMTI agent library into a running local JVM: the attach protocol's "load" operation
// (what VirtualMachine.loadAgentPath() sends; collectors/attach.h for the protocol).
//
// Request: operation "load", arg0 the library's absolute path, arg1 "true" (the path is absolute),
// arg2 the agent's option string (at most 1024 bytes, the protocol's argument limit). Reply
// (OpenJDK src/hotspot/share/prims/jvmtiAgent*.cpp / jvmtiExport.cpp load_agent_library, and
// jdk.attach HotSpotVirtualMachine.loadAgentLibrary): a non-zero status with the JVM's text when
// the library cannot be loaded or dynamic loading is refused; otherwise status 0 and the line
// "return code: N", N being what the library's Agent_OnAttach returned (0 = started).
// JDK 21+ prints a warning on the JVM's stderr for every dynamically loaded agent unless the JVM
// runs with -XX:+EnableDynamicAgentLoading (JEP 451); -XX:-EnableDynamicAgentLoading refuses.
#ifndef HEAPWATCH_COLLECTORS_AGENT_LOAD_H_
#define HEAPWATCH_COLLECTORS_AGENT_LOAD_H_

#include <string_view>

#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "common/status.h"

namespace heapwatch::collectors {

// Loads the agent at `library_path` (absolute) into `jvm` with `options`. Blocking: as
// ExecuteAttachOperation, plus Agent_OnAttach's own time (the heapwatch agent starts its threads
// and returns). Errors: those of ExecuteAttachOperation (FailedPrecondition for
// -XX:+DisableAttachMechanism, PermissionDenied for another user's JVM, ...); InvalidArgument for
// a relative path or options longer than 1024 bytes; FailedPrecondition with the JVM's text when it
// refuses to load the library (not found, wrong architecture, dynamic loading disabled);
// Internal "Agent_OnAttach returned N" when the agent refused to start; DataLoss for a reply
// without a return code. Thread-safety: thread-safe.
Status LoadAgentLibrary(const LocalJvm& jvm, std::string_view library_path,
                        std::string_view options, const AttachOptions& attach_options);

// The reply part of LoadAgentLibrary, testable without a JVM. Pure.
Status LoadAgentResult(const AttachReply& reply, int64_t pid);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_AGENT_LOAD_H_
