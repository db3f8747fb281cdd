// The HPROF reader's driver (hprof_reader.h): opens the file, runs the passes and picks the
// strategy. Pass 1 (hprof_index_pass) indexes the file; the class table (hprof_class_table) goes to
// the graph builder (analysis/heap_graph_builder.h); the object records go to it once, in
// ascending address order, or in two rounds otherwise (hprof_object_pass); then the size model
// (hprof_size_model) and the GC roots.
#include "collectors/dumps/hprof/hprof_reader.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/heap_graph_builder.h"
#include "analysis/id_chunks.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/hprof/hprof_class_table.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_index_pass.h"
#include "collectors/dumps/hprof/hprof_object_pass.h"
#include "collectors/dumps/hprof/hprof_read_state.h"
#include "collectors/dumps/hprof/hprof_scanner.h"
#include "collectors/dumps/hprof/hprof_size_model.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::hprof {
namespace {

using analysis::BulkHeapGraphBuilder;
using analysis::ClassId;
using analysis::HeapGraph;
using analysis::ObjectOrder;
using dumps::OpenFileSource;
using dumps::OpenMemorySource;

Status RestartAfterHeader(StreamReader& in, const HprofHeader& h) {
  HW_RETURN_IF_ERROR(in.Rewind());
  HW_ASSIGN_OR_RETURN(HprofHeader again, ReadHprofHeader(in));
  if (again.length != h.length || again.id_size != h.id_size) return FileChanged(0);
  return absl::OkStatus();
}

// A builder error at the end of an object pass, in the reader's terms (as AtRecord).
Status AfterObjects(Status status, const ReadState& st) {
  if (status.ok()) return status;
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return FileChanged(0);
    case absl::StatusCode::kDataLoss:
      return absl::DataLossError(absl::StrFormat(
          "corrupt dump: %s (%d bytes of dump); instance records are shorter than their CLASS "
          "DUMP layouts",
          std::string(status.message()), st.stream_bytes_hint));
    default:
      return status;
  }
}

StatusOr<HeapGraph> ReadImpl(ByteSource* source, const ReadOptions& options) {
  StreamReader in(source, StreamReader::WindowFor(*source));
  HW_ASSIGN_OR_RETURN(HprofHeader header, ReadHprofHeader(in));
  ReadState st;
  st.header = header;
  st.options = options;
  analysis::DumpInfo info;
  info.format = header.format;
  info.id_size = header.id_size;
  info.timestamp_ms = header.timestamp_ms;
  analysis::HeapGraphOptions graph_options;
  graph_options.instance_class_edges = options.instance_class_edges;
  BulkHeapGraphBuilder builder(std::move(info), graph_options);
  if (options.dump_ordinal < -1)
    return absl::InvalidArgumentError("dump ordinal must be >= 0 or -1 (last)");

  int pass = 0;
  int passes = 2;  // becomes 3 when the dump's order needs the two-round strategy
  ScanOptions scan;
  if (options.progress) {
    scan.progress = [&options, &pass, &passes](uint64_t consumed, uint64_t total) {
      options.progress(uint64_t(pass) * total + consumed, uint64_t(passes) * total);
    };
  }

  // Pass 1: the index.
  analysis::IdChunks ids;
  analysis::IdChunks class_ids;
  {
    IndexPass index(st, ids, class_ids);
    scan.dump = options.dump_ordinal;
    HW_RETURN_IF_ERROR(index.Run(in, scan));
    builder.info().dump_count = st.dump_count;
    if (options.dump_ordinal >= 0 && static_cast<uint32_t>(options.dump_ordinal) >= st.dump_count) {
      return absl::InvalidArgumentError(
          absl::StrFormat("heap dump #%d requested but the file holds %d heap dump(s)",
                          options.dump_ordinal, st.dump_count));
    }
    if (st.dump_count == 0) {
      builder.Warn("the file holds no heap dump (no HEAP DUMP or HEAP DUMP SEGMENT record)");
      return std::move(builder).Build();
    }
    st.dump = options.dump_ordinal >= 0 ? options.dump_ordinal : st.dump_count - 1;
    builder.info().dump_ordinal = static_cast<uint32_t>(st.dump);
    if (index.duplicate_classes() > 0) {
      builder.Warn(
          absl::StrFormat("%d CLASS DUMP records repeat a class id (the first one is used)",
                          index.duplicate_classes()));
    }
    HW_RETURN_IF_ERROR(BuildClassTable(st, index, builder));
  }
  HW_RETURN_IF_ERROR(
      builder.IndexObjects(std::move(ids), st.objects_ascending, std::move(class_ids)));
  const uint64_t duplicates = builder.info().duplicate_objects;
  if (duplicates > 0) {
    builder.Warn(absl::StrFormat(
        "%d records repeat an object id (the first record in file order is used)", duplicates));
  }

  // The object passes.
  const uint32_t n = builder.object_count();
  scan.dump = st.dump;
  analysis::ObjectLimits limits;
  // Every reference slot of a well-formed dump is backed by an id in the file (a field value, an
  // array element), so more slots than ids in the stream means instances shorter than their class
  // layouts.
  limits.max_reference_slots =
      st.stream_bytes_hint / header.id_size + (options.instance_class_edges ? n : 0);
  const bool single = options.single_pass && st.objects_ascending && duplicates == 0;
  passes = single ? 2 : 3;
  if (single) {
    ++pass;
    HW_RETURN_IF_ERROR(RestartAfterHeader(in, header));
    limits.expected_object_references = st.reference_bytes / header.id_size;
    builder.BeginObjects(ObjectOrder::kIndexOrder, limits);
    HW_RETURN_IF_ERROR(RunObjectPass(in, scan, st, builder, ObjectPassKind::kSingle));
  } else {
    ++pass;
    HW_RETURN_IF_ERROR(RestartAfterHeader(in, header));
    builder.BeginObjects(ObjectOrder::kTwoRounds, limits);
    HW_RETURN_IF_ERROR(RunObjectPass(in, scan, st, builder, ObjectPassKind::kFirstRound));
    HW_RETURN_IF_ERROR(AfterObjects(builder.EndFirstRound(), st));
    ++pass;
    HW_RETURN_IF_ERROR(RestartAfterHeader(in, header));
    HW_RETURN_IF_ERROR(RunObjectPass(in, scan, st, builder, ObjectPassKind::kSecondRound));
  }
  HW_RETURN_IF_ERROR(AfterObjects(builder.FinishObjects(), st));
  for (size_t c = 0; c < st.data_mismatch.size(); ++c) {
    if (st.data_mismatch[c] > 0) {
      builder.Warn(absl::StrFormat(
          "%d instances of %s have a field data length other than its CLASS DUMP's %d bytes",
          st.data_mismatch[c], builder.classes()[c].name, st.data_size[c]));
    }
  }
  if (builder.info().dangling_references > 0) {
    builder.Warn(absl::StrFormat("%d references point to ids with no object in the dump (dropped)",
                                 builder.info().dangling_references));
  }

  // Sizes and roots.
  SizeModelInput sizes;
  sizes.requested = options.size_model;
  sizes.hprof_minor = header.minor;
  sizes.id_size = header.id_size;
  sizes.field_bytes = st.data_size;
  sizes.boot = st.boot;
  ComputeSizes(sizes, builder);
  for (const RawRoot& r : st.roots) builder.AddRoot(r.id, r.kind, r.thread, r.frame);
  std::vector<RawRoot>().swap(st.roots);
  if (builder.info().unresolved_roots > 0) {
    builder.Warn(
        absl::StrFormat("%d GC root records name objects that are not in the dump (dropped)",
                        builder.info().unresolved_roots));
  }
  return std::move(builder).Build();
}

}  // namespace

// Returns the reader's freed scratch (id chunks, per-pass tables: tens of MB for a 1 GB dump, much
// of it below glibc's mmap threshold) to the kernel, so that it does not stay in the RSS next to
// the graph for the rest of the analysis.
void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

StatusOr<HeapGraph> ReadHeapGraph(const std::string& path, const ReadOptions& options) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
  StatusOr<HeapGraph> g = ReadImpl(source.get(), options);
  source.reset();
  ReleaseFreedMemory();
  if (!g.ok())
    return absl::Status(g.status().code(), absl::StrCat(path, ": ", g.status().message()));
  return g;
}

StatusOr<HeapGraph> ReadHeapGraphFromBuffer(std::string_view data, const ReadOptions& options) {
  std::unique_ptr<ByteSource> source = OpenMemorySource(data);
  StatusOr<HeapGraph> g = ReadImpl(source.get(), options);
  ReleaseFreedMemory();
  return g;
}

Status ProbeHeapDump(const std::string& path) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
  StreamReader in(source.get(), 64 * 1024);
  HW_ASSIGN_OR_RETURN(bool full, in.Ensure(4096));
  (void)full;
  Status s = CheckHprofSignature(
      std::string_view(reinterpret_cast<const char*>(in.data()), in.available()));
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  return absl::OkStatus();
}

}  // namespace heapwatch::hprof
