// Pass 1 of the HPROF reader (hprof_index_pass.h).
#include "collectors/dumps/hprof/hprof_index_pass.h"

#include "absl/strings/str_format.h"

namespace heapwatch::hprof {

using analysis::FieldType;

Status IndexPass::Run(StreamReader& in, const ScanOptions& scan) {
  HprofScanner<IndexPass> scanner(in, st_.header, scan, *this);
  HW_RETURN_IF_ERROR(scanner.Run());
  st_.dump_count = scanner.dumps();
  st_.objects_ascending = ascending_;
  st_.reference_bytes = reference_bytes_;
  st_.stream_bytes_hint = in.offset();
  return absl::OkStatus();
}

std::string IndexPass::Name(uint64_t string_id) const {
  auto it = strings_.find(string_id);
  if (it == strings_.end()) return absl::StrFormat("unknown-name@0x%x", string_id);
  return arena_.substr(it->second.first, it->second.second);
}

bool IndexPass::ClassNameId(uint64_t class_id, uint64_t* name_id) const {
  auto it = class_names_.find(class_id);
  if (it == class_names_.end()) return false;
  *name_id = it->second;
  return true;
}

Status IndexPass::OnString(uint64_t id, std::string_view s) {
  if (arena_.size() + s.size() > UINT32_MAX) return absl::OkStatus();  // beyond 4 GiB: unnamed
  strings_.try_emplace(id, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(s.size()));
  arena_.append(s);
  return absl::OkStatus();
}

Status IndexPass::OnLoadClass(uint64_t class_id, uint64_t name_id) {
  class_names_.try_emplace(class_id, name_id);
  return absl::OkStatus();
}

Status IndexPass::OnDumpStart(uint32_t, uint64_t) {
  // Keep only the dump being read: with "the last one", each new dump replaces the previous.
  st_.raw_classes.clear();
  st_.class_by_id.clear();
  st_.roots.clear();
  st_.heap_infos.clear();
  ids_.clear();
  class_ids_.clear();
  ascending_ = true;
  last_object_ = 0;
  reference_bytes_ = 0;
  return absl::OkStatus();
}

Status IndexPass::OnRoot(analysis::GcRootKind kind, uint64_t id, uint32_t thread, int32_t frame) {
  st_.roots.push_back({id, kind, thread, frame});
  return absl::OkStatus();
}

Status IndexPass::OnClassDump(const RawClassDump& c) {
  if (ids_.size() + class_ids_.size() >= UINT32_MAX - 1) {
    return absl::ResourceExhaustedError("more than 2^32 objects in one dump");
  }
  class_ids_.push_back(c.id);
  if (st_.class_by_id.contains(c.id)) {
    ++duplicate_classes_;
    return absl::OkStatus();
  }
  if (st_.raw_classes.size() >= analysis::BulkHeapGraphBuilder::kMaxClasses) {
    return absl::ResourceExhaustedError("more than 2^31 classes in one dump");
  }
  st_.class_by_id.emplace(c.id, static_cast<uint32_t>(st_.raw_classes.size()));
  RawClass& r = st_.raw_classes.emplace_back();
  r.heap = heap_;
  r.id = c.id;
  r.super_id = c.super_id;
  r.loader_id = c.loader_id;
  r.signers_id = c.signers_id;
  r.protection_domain_id = c.protection_domain_id;
  r.instance_size = c.instance_size;
  for (const auto& k : c.constants) {
    if (k.type == FieldType::kObject) r.constant_refs.push_back({k.index, k.value});
  }
  r.statics = c.statics;
  r.fields = c.fields;
  return absl::OkStatus();
}

Status IndexPass::OnHeapDumpInfo(uint32_t heap_type, uint64_t name_id) {
  bool known = false;
  for (const auto& [t, n] : st_.heap_infos) known |= t == heap_type;
  if (!known) st_.heap_infos.push_back({heap_type, name_id});
  heap_ = st_.heap_index_of_type(heap_type);
  return absl::OkStatus();
}

}  // namespace heapwatch::hprof
