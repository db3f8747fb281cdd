// libFuzzer target over HotSpot's PerfData (hsperfdata) files (collectors/perf_data.h): any byte
// string is parsed as a snapshot of the region; an accepted one is queried for the counters
// heapwatch reads. Must return OK or an error, never read outside the buffer, crash or hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/perf_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using heapwatch::collectors::PerfData;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto perf = PerfData::Parse(bytes);
  if (!perf.ok()) return 0;
  if (perf->size() > size) __builtin_trap();  // every counter takes bytes of the region
  uint64_t sum = 0;
  for (const char* name : {"sun.rt.createVmBeginTime", "sun.os.hrt.frequency",
                           "sun.gc.collector.0.invocations", "sun.gc.generation.1.space.0.used"}) {
    sum += static_cast<uint64_t>(perf->GetLong(name).value_or(0));
  }
  for (const char* name :
       {"sun.rt.javaCommand", "java.property.java.vm.version", "sun.rt.jvmCapabilities"}) {
    auto s = perf->GetString(name);
    if (s && s->size() > size) __builtin_trap();
    sum += s ? s->size() : 0;
  }
  return sum == 0xdeadbeef ? 1 : 0;  // keep `sum` alive
}
