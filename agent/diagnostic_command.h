// Runs a HotSpot diagnostic command (what `jcmd PID COMMAND` runs) inside the JVM, through JNI,
// without adding Java code to the application and without starting the platform MBean server.
//
// How (checked on JDK 17, jdk.management module): com.sun.management.internal.DiagnosticCommandImpl
// .getDiagnosticCommandMBean() (static, package-private) returns the DiagnosticCommandMBean, whose
// private native executeDiagnosticCommand(String) runs the command line and returns its output as a
// String (HotSpot jmm_ExecuteDiagnosticCommand, source "MBean"; GC.class_histogram is exported to
// it, GC.heap_dump is not: see DumpHeap). JNI does not check Java access, so private and
// non-exported members can be called. The native method lives in libmanagement_ext, which
// com.sun.management.internal.PlatformMBeanProviderImpl's static initialiser loads; initialising
// that class (not ManagementFactory) is all that is needed.
//
// Thread-safety: one instance per thread (it holds a JNIEnv of its thread).
#ifndef HEAPWATCH_AGENT_DIAGNOSTIC_COMMAND_H_
#define HEAPWATCH_AGENT_DIAGNOSTIC_COMMAND_H_

#include <jni.h>

#include <string>

#include "common/status.h"

namespace heapwatch::agent {

class DiagnosticCommandRunner {
 public:
  // `env` must be the JNIEnv of the calling thread (an agent thread).
  explicit DiagnosticCommandRunner(JNIEnv* env) : env_(env) {}
  ~DiagnosticCommandRunner();
  DiagnosticCommandRunner(const DiagnosticCommandRunner&) = delete;
  DiagnosticCommandRunner& operator=(const DiagnosticCommandRunner&) = delete;

  // Runs `command` (e.g. "GC.class_histogram -all") and returns its output. Blocking: as long as
  // the command (a histogram pauses the JVM at a safepoint). Errors: FailedPrecondition when the
  // JVM has no such entry point (not HotSpot, or jdk.management missing; the first call finds out),
  // Internal with the Java exception's text when the command throws (unknown command, bad option).
  StatusOr<std::string> Run(const std::string& command);

  // Writes an HPROF heap dump of this JVM to `path` (which must not exist), of live objects only
  // (after a full GC) or of every object. GC.heap_dump is not exported to the MBean source in JDK
  // 17 ("Unknown diagnostic command"), so this calls the native behind HotSpotDiagnosticMXBean
  // .dumpHeap: com.sun.management.internal.HotSpotDiagnostic's private dumpHeap0(String, boolean)
  // (libmanagement_ext, jmm DumpHeap0), which skips dumpHeap's ".hprof" suffix check. No gzip:
  // the caller compresses. Blocking: the whole dump (the JVM is paused). Errors: as Run, with
  // the IOException's text ("File exists", no space left).
  Status DumpHeap(const std::string& path, bool live);

 private:
  Status Init();
  // Init() on first use; a failed Init() is remembered and its error returned from then on (the JVM
  // will not grow the classes it lacked).
  Status EnsureInitialized();
  // Returns the pending exception's toString() and clears it.
  std::string TakeException();

  JNIEnv* env_;
  jobject mbean_ = nullptr;  // global reference
  jmethodID execute_ = nullptr;
  jobject hotspot_diagnostic_ = nullptr;  // global reference, created on the first DumpHeap
  jmethodID dump_heap_ = nullptr;
  bool init_failed_ = false;
  std::string init_error_;
};

}  // namespace heapwatch::agent

#endif  // HEAPWATCH_AGENT_DIAGNOSTIC_COMMAND_H_
