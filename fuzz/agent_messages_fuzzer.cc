// libFuzzer target over what a registered agent sends the daemon (daemon/agent_messages.h: the
// agent gateway's checks of heapwatch.agent.v1 messages). The input is a Connect stream as the
// gateway sees it: a sequence of frames, each a 2-byte little-endian length and that many bytes of
// a serialized AgentMessage (a frame that does not parse is skipped, as gRPC would refuse it). One
// class dictionary spans the whole input, as it spans one stream. Besides never crashing, the
// target checks what agent_messages.h promises:
//   - Register: accepted only with an agent id of at most 128 printable bytes equal to the one the
//     daemon derives, kind registered; refused with InvalidArgument "Register: ...";
//   - Histogram: accepted ones have one row per class ref, in-bounds printable names, and totals
//     equal to the sums; refused ones are InvalidArgument "Histogram <sequence>: ..." and leave the
//     stream's dictionary exactly as it was; the dictionary never passes its bounds;
//   - LiveSet: at most 10,000 points when accepted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "daemon/agent_messages.h"
#include "heapwatch/agent/v1/agent.pb.h"

namespace {

namespace av1 = ::heapwatch::agent::v1;
using heapwatch::AgentId;
using heapwatch::daemon::ClassDictionary;
using heapwatch::daemon::IsPrintableUtf8;

void CheckRefused(const absl::Status& status, std::string_view prefix) {
  if (status.code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
  const std::string_view message(status.message().data(), status.message().size());
  if (!message.starts_with(prefix)) __builtin_trap();
}

void OneMessage(const av1::AgentMessage& m, ClassDictionary* dict) {
  if (m.has_register_()) {
    auto info = heapwatch::daemon::ValidateRegister(m.register_());
    if (!info.ok()) return CheckRefused(info.status(), "Register: ");
    if (info->id.value != m.register_().agent_id()) __builtin_trap();
    if (!IsPrintableUtf8(info->id.value, 128)) __builtin_trap();
    if (info->kind != heapwatch::AgentKind::kRegistered) __builtin_trap();
  } else if (m.has_histogram()) {
    const av1::Histogram& h = m.histogram();
    const size_t classes_before = dict->classes.size();
    const size_t bytes_before = dict->bytes;
    auto snapshot = heapwatch::daemon::ToSnapshot(h, AgentId("fuzz"), dict);
    if (!snapshot.ok()) {
      CheckRefused(snapshot.status(), absl::StrCat("Histogram ", h.sequence(), ": "));
      if (dict->classes.size() != classes_before || dict->bytes != bytes_before) __builtin_trap();
      return;
    }
    if (snapshot->histogram.rows.size() != static_cast<size_t>(h.class_refs_size())) {
      __builtin_trap();
    }
    uint64_t instances = 0, bytes = 0;
    for (const heapwatch::ClassHistogramRow& row : snapshot->histogram.rows) {
      if (!IsPrintableUtf8(row.class_name, 4096)) __builtin_trap();
      if (!IsPrintableUtf8(row.module, 1024, true)) __builtin_trap();
      instances += row.instances;
      bytes += row.bytes;
    }
    if (instances != snapshot->histogram.total_instances ||
        bytes != snapshot->histogram.total_bytes) {
      __builtin_trap();
    }
    if (dict->classes.size() > 1'000'000 || dict->bytes > (size_t{64} << 20)) __builtin_trap();
  } else if (m.has_live_set()) {
    auto points = heapwatch::daemon::ToLiveSet(m.live_set());
    if (!points.ok()) return CheckRefused(points.status(), "LiveSet ");
    if (points->size() > 10'000) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Free texts from agents (budget notes, failure reasons) are shown as they come out of
  // PrintableText: whatever the bytes, printable UTF-8 within the bound.
  const std::string text = heapwatch::daemon::PrintableText(
      std::string_view(reinterpret_cast<const char*>(data), size), 400);
  if (!IsPrintableUtf8(text, 400, true)) __builtin_trap();
  ClassDictionary dict;
  size_t pos = 0;
  while (pos + 2 <= size) {
    const size_t length = data[pos] | (size_t{data[pos + 1]} << 8);
    pos += 2;
    if (length > size - pos) break;
    av1::AgentMessage m;
    if (m.ParseFromArray(data + pos, static_cast<int>(length))) OneMessage(m, &dict);
    pos += length;
  }
  return 0;
}
