// libFuzzer target over what a JVM sends back on the attach socket (collectors/attach.h): any byte
// string is read as a raw attach reply (status line + output), turned into ExecuteJcmd's result,
// and a successful jcmd output is parsed as a class histogram, as CollectClassHistogram does. Each
// step must return OK or an error, never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/attach.h"
#include "collectors/class_histogram.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch::collectors;
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  auto reply = ParseAttachReply(raw, 4242);
  if (!reply.ok()) {
    if (reply.status().message().size() > 400) __builtin_trap();  // the quote is bounded
    return 0;
  }
  if (reply->output.size() >= size) __builtin_trap();  // the status line is not part of the output
  auto output = JcmdResult(*reply, 4242, "GC.class_histogram -all");
  if (!output.ok()) {
    if (reply->status == 0) __builtin_trap();
    if (output.status().message().size() > 1200) __builtin_trap();
    return 0;
  }
  auto histogram = ParseClassHistogram(*output);
  return histogram.ok() && histogram->rows.size() > size ? 1 : 0;
}
