// Where the escalation's extended dumps come from (issue 10: "Escalation takes dumps from a dump
// source (attach or agent)"): a DumpSource writes an extended (HPROF) dump of one agent's JVM to a
// file the daemon names, within a time limit, and reports the JVM's pause. AttachDumpSource is
// today's source: the JVM itself writes the dump through the attach API (collectors/heap_dump.h,
// `jcmd <pid> GC.heap_dump -gz=1 <file>`). A source for registered agents (the agent streams its
// dump to the daemon) is one more implementation; the escalation picks a source per agent through
// a DumpSourceResolver.
//
// Files: every source writes under <dump_dir>/<uid>/ (`uid` a decimal user id: the JVM's user for
// attach, the daemon's own for a source that writes the file itself), file names
// "<dump id>.hprof[.gz]", so that the escalation's start-up clean-up (docs/escalation.md) finds
// what an earlier run left.
#ifndef HEAPWATCH_DAEMON_DUMP_SOURCE_H_
#define HEAPWATCH_DAEMON_DUMP_SOURCE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/time/time.h"
#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "common/agent.h"
#include "common/status.h"

namespace heapwatch::daemon {

// One extended dump to write.
struct DumpRequest {
  AgentInfo agent;           // whose JVM
  collectors::LocalJvm jvm;  // the local JVM (attach agents; a remote agent's source ignores it)
  std::string dump_dir;      // absolute directory of the daemon's raw dumps
  std::string file_name;     // "<dump id>.hprof" or "<dump id>.hprof.gz"
  bool gzip = true;          // ask for a gzip-compressed dump
  absl::Duration timeout = absl::Minutes(30);  // longest time the dump may take, whole operation
};

// A dump written.
struct WrittenDump {
  std::string path;         // == DumpSource::PathFor(request)
  uint64_t file_bytes = 0;  // bytes on disk (compressed when gzip)
  bool gzip = false;        // true when the file is gzip-compressed HPROF
  absl::Duration pause;     // the JVM's pause while it wrote the dump (0 when unknown)
  absl::Duration wall;      // the whole operation as the daemon saw it
};

class DumpSource {
 public:
  virtual ~DumpSource() = default;

  // The file the dump of `request` is written to: <dump_dir>/<uid>/<file_name>. Pure.
  virtual std::string PathFor(const DumpRequest& request) const = 0;
  // The user id that must own the written file (the escalation opens it only when it is a regular
  // file of this user or of the daemon's own, never through a symlink). Pure.
  virtual uint32_t FileOwner(const DumpRequest& request) const = 0;

  // Writes an extended dump of the request's JVM to PathFor(request) (a file that must not exist),
  // blocking until it is complete or request.timeout has passed. On error no partial file of the
  // source's making is left.
  // Errors: InvalidArgument (a path the source cannot use), Unavailable (the JVM is gone before or
  // during the dump, or cannot be reached), DeadlineExceeded (request.timeout passed),
  // FailedPrecondition (the file exists; the JVM refused or failed the dump, e.g. "No space left on
  // device" in the message), PermissionDenied, Unimplemented (a JVM this source cannot dump),
  // Internal. The escalation's fault metric reads the code and message (kDumpTimeout, kJvmExited
  // for "is gone" / "exited during", kDumpDiskFull for "No space left" / "Disk quota exceeded").
  // Thread-safety: implementations are thread-safe (the escalation calls from its dump thread; a
  // resolver may share one source between agents).
  virtual StatusOr<WrittenDump> WriteDump(const DumpRequest& request) = 0;
};

// The source of an agent's dumps, or nullptr when the daemon has none for it (the dump fails with
// "no dump source for agent ..."). Called from the escalation's dump thread; must be thread-safe;
// the returned source must outlive the Escalation.
using DumpSourceResolver = std::function<DumpSource*(const AgentInfo& agent)>;

// Dumps of local JVMs through the attach API (collectors/heap_dump.h TakeHeapDump): the JVM writes
// the file itself into a private directory of its user, <dump_dir>/<jvm uid>
// (collectors::PreparePrivateDumpDirectory), file mode 0600. The pause is the JVM's own figure
// ("Heap dump file created [N bytes in X secs]").
class AttachDumpSource final : public DumpSource {
 public:
  // `attach`: the daemon's attach options; io_timeout is replaced by each request's timeout and
  // max_reply_bytes by 1 MiB.
  explicit AttachDumpSource(const collectors::AttachOptions& attach) : attach_(attach) {}

  std::string PathFor(const DumpRequest& request) const override;
  uint32_t FileOwner(const DumpRequest& request) const override;
  // Errors: those of collectors::PreparePrivateDumpDirectory and collectors::TakeHeapDump.
  StatusOr<WrittenDump> WriteDump(const DumpRequest& request) override;

 private:
  const collectors::AttachOptions attach_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_DUMP_SOURCE_H_
