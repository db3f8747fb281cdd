// Extended dumps: asks a local HotSpot JVM to write an HPROF heap dump of its live objects, through
// the attach API (collectors/attach.h), the way `jcmd <pid> GC.heap_dump -gz=1 <file>` does.
//
// The JVM writes the file itself, with its own credentials and in its own mount namespace, so the
// directory must be reachable and writable by the JVM's user: PreparePrivateDumpDirectory() makes
// one private directory (0700) per JVM user. Writing the dump stops the JVM (a safepoint) for the
// whole time. Measured on the 2-core dev machine, JDK 17, -gz=1, -Xmx1g: 13.1 M live long[1]
// arrays -> 45 MB file, "1.831 secs"; tests/collectors/data/HwBigHeapApp (15.7 M) -> 86 MB in
// 6.477 s (under concurrent builds); HwTestApp (24 k objects) -> 1.2 MB in 0.100-0.108 s.
//
// Sources: OpenJDK src/hotspot/share/services/diagnosticCommand.cpp (HeapDumpDCmd: options -all,
// -gz=<1..9> (added in JDK 15, JDK-8237354), reply texts),
// src/hotspot/share/services/heapDumper.cpp (file created with O_CREAT|O_EXCL, "Heap dump file
// created [N bytes in X secs]", "Unable to create <path>: <strerror>"), HPROF format:
// docs/hprof-format.md and collectors/dumps/hprof.
//
// Reply texts measured with JDK 17.0.15 (attach status 0 in all but the last case):
//   success:     "Dumping heap to /d/x ...\n"
//                "Heap dump file created [45243954 bytes in 1.831 secs]\n"
//   file exists: "Dumping heap to /d/x ...\nUnable to create /d/x: File exists\n"
//   no dir:      "Dumping heap to /no/x ...\nUnable to create /no/x: No such file or directory\n"
//   bad level:   "Compression level out of range (1-9): 11\n"
//   bad option:  non-zero status, "java.lang.IllegalArgumentException: Unknown argument '...' in
//                diagnostic command."
#ifndef HEAPWATCH_COLLECTORS_HEAP_DUMP_H_
#define HEAPWATCH_COLLECTORS_HEAP_DUMP_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "collectors/attach.h"
#include "collectors/local_jvm.h"
#include "common/status.h"

namespace heapwatch::collectors {

// AttachOptions for a heap dump: io_timeout 30 minutes, max_reply_bytes 1 MiB.
inline AttachOptions DefaultHeapDumpAttachOptions() {
  AttachOptions options;
  options.io_timeout = absl::Minutes(30);
  options.max_reply_bytes = size_t{1} << 20;  // the reply is two short lines
  return options;
}

struct HeapDumpOptions {
  // Ask the JVM to gzip the dump (`GC.heap_dump -gz=<gzip_level>`, JDK 15+). A JVM that rejects the
  // option ("IllegalArgumentException: Unknown argument '-gz..."; expected from JDK 8/11, not
  // verified here: no such JDK on the dev machine) is asked again without it;
  // HeapDumpResult::gzip says which.
  bool gzip = true;
  int gzip_level = 1;  // 1 (fastest, the JVM's pause is shortest) .. 9
  // Attach timeouts. io_timeout bounds the whole dump (the JVM replies only when the file is
  // complete): 30 minutes by default, because a large heap takes long.
  AttachOptions attach = DefaultHeapDumpAttachOptions();
};

struct HeapDumpResult {
  std::string path;         // the dump file, as reachable by the daemon (== TakeHeapDump's path)
  uint64_t file_bytes = 0;  // size of the file on disk, in bytes (compressed size when gzip)
  bool gzip = false;        // true when the file is gzip-compressed HPROF (magic 1f 8b)
  // Time the JVM spent writing the dump, in seconds, as the JVM reports it ("Heap dump file created
  // [N bytes in X secs]"): the application is stopped at a safepoint for (at least) this long.
  // 0 when the reply does not say.
  double pause_seconds = 0;
  double wall_seconds = 0;  // the whole operation as seen by the daemon (attach + dump), seconds
};

// Makes `dir` (absolute) a private dump directory for the JVM user (uid, gid): a directory, not a
// symlink, mode 0700, owned by (uid, gid) when the daemon runs as root (else owned by the daemon's
// own user, which must then be the JVM's user). Missing parents are created with mode 0711 (owner
// root or the daemon's user) so that the JVM user can traverse them without listing them. An
// existing `dir` owned by the daemon's user or by uid gets its owner and mode fixed; existing
// parents are checked (not changed) to be traversable by uid.
//
// Errors:
//   InvalidArgument    `dir` is empty or relative
//   FailedPrecondition `dir` (or a parent) exists but is a symlink or not a directory; `dir` is
//   owned
//                      by another user than the daemon's and uid; an existing parent cannot be
//                      traversed by uid (no search permission for it)
//   PermissionDenied   the daemon is not root and uid is not its own uid (the JVM could not write
//                      into a directory the daemon makes), or a system call was refused (EACCES)
//   Internal           another system-call failure (the message names the call and the path)
// Thread-safety: thread-safe; concurrent calls for the same `dir` are safe (EEXIST is tolerated).
Status PreparePrivateDumpDirectory(const std::string& dir, uint32_t uid, uint32_t gid);

// Asks `jvm` to write a heap dump of its live objects (the JVM runs a full GC first) to `path`,
// through the attach operation "jcmd" with the command line "GC.heap_dump [-gz=N] <path>", waits
// until the JVM has written it (up to options.attach.io_timeout), then makes the file mode 0600.
// The caller prepares the directory (PreparePrivateDumpDirectory) and deletes the file when done.
// On any failure a partial file that the JVM created is deleted; a file that existed before is
// never touched. After a DeadlineExceeded the JVM may still be writing the (then unlinked) file;
// its space is freed when the JVM finishes.
//
// Only JVMs that share the daemon's /tmp are supported (jvm.root_tmp_dir == "/tmp": the same mount
// namespace, or another one mounting the same directories, as a systemd service with
// ProtectSystem= has): the JVM resolves `path` in its own mount namespace, so the directory of
// `path` must be the same directory there (checked by device and inode through
// /proc/<pid>/root when that is readable). Mapping a path into a container's filesystem (its
// /proc/<pid>/root view, volumes, free space, cleanup after the container is gone) is not
// implemented.
//
// Errors:
//   InvalidArgument    `path` is not absolute, contains whitespace, a quote or a NUL (the JVM's
//                      command-line parser would split it), or is longer than 1000 bytes;
//                      gzip_level outside 1..9
//   Unimplemented      the JVM is in another mount namespace (root_tmp_dir != "/tmp"); attach
//                      protocol version mismatch
//   Unavailable        the JVM is gone before or during the dump (e.g. killed while writing), or
//                      cannot be reached (see ExecuteAttachOperation)
//   DeadlineExceeded   the attach handshake or the dump took longer than options.attach allows
//   FailedPrecondition `path` already exists; the directory of `path` is another directory in the
//                      JVM's mount namespace; the JVM refused or failed the dump (the message holds
//                      the JVM's reply, e.g. "Unable to create ...: No space left on device"); not
//                      a JVM / attach disabled (see ExecuteAttachOperation)
//   PermissionDenied   the daemon may not attach to the JVM
//   Internal           the JVM reported success but the file is missing, not a regular file, or
//                      its mode cannot be changed; another system-call failure
//   (other codes of ExecuteAttachOperation are passed on unchanged)
// Blocking: for the whole dump (seconds to minutes). Thread-safety: thread-safe; dumps of one JVM
// are serialised by the JVM.
StatusOr<HeapDumpResult> TakeHeapDump(const LocalJvm& jvm, const std::string& path,
                                      const HeapDumpOptions& options);

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_HEAP_DUMP_H_
