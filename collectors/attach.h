// The HotSpot dynamic attach protocol (Linux), spoken natively: no JDK, no `jcmd` subprocess.
//
// Protocol (what `jcmd PID ...` does; see docs/attach-protocol.md):
//  1. If the JVM's attach listener is not running (no socket <tmp>/.java_pid<ns_pid>), create the
//     trigger file .attach_pid<ns_pid> in the JVM's working directory (/proc/<pid>/cwd), or if that
//     fails in its /tmp, and send SIGQUIT. The JVM's signal handler sees the trigger file and
//     starts the listener, which binds the socket. Wait for the socket, re-sending SIGQUIT once at
//     half the timeout; delete the trigger file.
//  2. Check that the socket is a socket owned by the JVM's effective uid with no group/other
//     permissions, and connect. The JVM accepts the peer only if the peer's effective uid/gid
//     (SO_PEERCRED) equal its own (JDK 8), or the peer is root (JDK 11+).
//  3. Send a version-1 request: "1\0" <operation> "\0" <arg0> "\0" <arg1> "\0" <arg2> "\0"
//     (operation at most 16 bytes, each argument at most 1024 bytes). jcmd sends operation "jcmd"
//     with the whole command line as arg0.
//  4. Read the reply until the JVM closes the connection: a decimal status line ("0\n" = success,
//     101 = protocol version mismatch, other non-zero = failure) followed by the output text. JDK
//     24+ may stream: a command that fails while running then has status 0 and the error in the
//     output.
//
// Safety: heapwatch never sends SIGQUIT to a process that does not handle it (for a process without
// a handler, SIGQUIT's default action kills it and dumps core). Before signalling it checks that
// the process is the discovered JVM (same start time, still maps its hsperfdata file), that
// PerfData says the attach mechanism is enabled (sun.rt.jvmCapabilities;
// -XX:+DisableAttachMechanism turns it off), and that /proc/<pid>/status shows SIGQUIT caught and
// not ignored. The signal goes through a pidfd opened after those checks, so a recycled pid cannot
// receive it.
//
// Credentials: when the daemon runs as root and the JVM does not, steps 1-2 run in a short-lived
// child process (fork) that drops its supplementary groups and switches its effective gid/uid to
// the JVM's (setresgid/setresuid system calls) before creating the trigger file and connecting; it
// passes the connected socket back over a socketpair (SCM_RIGHTS) and exits. The daemon's own
// credentials never change, so this is thread-safe: no other daemon thread ever runs with the JVM's
// uid. The child only makes async-signal-safe system calls, as POSIX requires after fork() in a
// multi-threaded process.
//
// Sources: OpenJDK src/hotspot/os/linux/attachListener_linux.cpp (listener, trigger, credential
// check, request and reply format), src/hotspot/share/services/attachListener.{hpp,cpp}
// (operations, streaming replies in JDK 24+),
// src/jdk.attach/linux/classes/sun/tools/attach/VirtualMachineImpl.java (client side: trigger file
// locations, SIGQUIT retry, ns pid, /proc/<pid>/root/tmp), its native part VirtualMachineImpl.c
// (checkCatchesAndSendQuitTo: SigCgt/SigIgn check, socket owner/permission check), and jdk.attach
// HotSpotVirtualMachine.java (status handling).
#ifndef HEAPWATCH_COLLECTORS_ATTACH_H_
#define HEAPWATCH_COLLECTORS_ATTACH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "collectors/local_jvm.h"
#include "common/status.h"

namespace heapwatch::collectors {

struct AttachOptions {
  // How long to wait for the JVM to create its attach socket after the trigger file and SIGQUIT.
  absl::Duration handshake_timeout = absl::Seconds(10);
  // How long connect(2) may wait when the JVM's listen backlog is full (another client is being
  // served).
  absl::Duration connect_timeout = absl::Seconds(5);
  // Total time for sending the request and reading the whole reply (a class histogram of a large
  // heap runs a full GC first and can take tens of seconds).
  absl::Duration io_timeout = absl::Seconds(120);
  // Largest reply accepted, in bytes; a larger one fails with ResourceExhausted.
  size_t max_reply_bytes = size_t{256} << 20;
};

// The JVM's answer to one attach operation.
struct AttachReply {
  int32_t status = 0;  // 0 on success; 101 = protocol mismatch; other values = the operation failed
  std::string output;  // everything after the status line, verbatim
};

// Sends one attach operation (e.g. "jcmd", "properties", "threaddump") with up to three arguments
// and returns the status and output, whatever the status. Runs the handshake first if the listener
// is not up.
//
// Errors:
//   Unavailable        the process is gone (or its pid now names another process), the socket
//                      refused the connection, or the JVM closed it without a status (e.g. it
//                      rejected our credentials or is exiting)
//   FailedPrecondition not (or no longer) a HotSpot JVM with shared PerfData; attach disabled
//                      (-XX:+DisableAttachMechanism); SIGQUIT not handled (e.g. still starting). No
//                      signal is sent in any of these cases.
//   PermissionDenied   the daemon may not attach (not root and not the JVM's user), the socket has
//                      the wrong owner or mode, or the socket is served by another process than the
//                      JVM
//   DeadlineExceeded   the socket did not appear within handshake_timeout, connect took longer than
//                      connect_timeout, or sending/receiving took longer than io_timeout
//   InvalidArgument    operation longer than 16 bytes, an argument longer than 1024 bytes, or a NUL
//                      in any
//   ResourceExhausted  the reply exceeds max_reply_bytes
//   DataLoss           the reply does not start with a decimal status line
//   Internal           an unexpected system-call failure (the message names the call)
// Blocking: up to handshake_timeout + connect_timeout + io_timeout (plus a second of slack).
// Thread-safety: thread-safe; concurrent calls for the same JVM are served one at a time by the
// JVM.
StatusOr<AttachReply> ExecuteAttachOperation(const LocalJvm& jvm, std::string_view operation,
                                             const std::array<std::string_view, 3>& args,
                                             const AttachOptions& options);

// Runs a diagnostic command like `jcmd <pid> <command_line>` does (operation "jcmd", the command
// line as arg0), e.g. "VM.version" or "GC.class_histogram -all", and returns its output.
// Errors: those of ExecuteAttachOperation, and for a non-zero JVM status: InvalidArgument when the
// JVM rejected the command (java.lang.IllegalArgumentException: unknown command or option),
// Unimplemented for a protocol version mismatch (101), Internal for any other failure reported by
// the JVM; the message holds the JVM's own text. Thread-safety: thread-safe.
StatusOr<std::string> ExecuteJcmd(const LocalJvm& jvm, std::string_view command_line,
                                  const AttachOptions& options);

// The reply parts of ExecuteAttachOperation and ExecuteJcmd, on their own so that they can be
// tested and fuzzed without a JVM (fuzz/attach_reply_fuzzer.cc).
// ParseAttachReply: `raw` is everything the JVM sent until it closed the connection (step 4
// above); returns its decimal status line and the output after it. `pid` only names the JVM in
// the message. Errors: DataLoss when `raw` does not start with a decimal status line that fits an
// int32 and ends in '\n' (the message quotes at most 80 bytes of it, escaped). Complexity: O(size).
// Thread-safety: pure function.
StatusOr<AttachReply> ParseAttachReply(std::string_view raw, int64_t pid);
// JcmdResult: what ExecuteJcmd returns for the reply to `command_line`: the output for status 0,
// else the errors listed at ExecuteJcmd (the message quotes at most 1000 bytes of the JVM's text).
// Thread-safety: pure function.
StatusOr<std::string> JcmdResult(AttachReply reply, int64_t pid, std::string_view command_line);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_ATTACH_H_
