// libFuzzer target over heapwatchd's YAML configuration (daemon/config.h), through its
// parse-from-string entry point ParseConfigYaml. Any byte string is parsed on top of the defaults;
// an accepted configuration is validated and must survive ConfigToYaml -> ParseConfigYaml unchanged
// (what config.h promises). The duration syntax of the configuration is fuzzed on the same input:
// an accepted duration must format and parse back to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch::daemon;
  std::string_view text(reinterpret_cast<const char*>(data), size);

  auto duration = ParseDurationText(text.substr(0, 256));
  if (duration.ok()) {
    auto again = ParseDurationText(FormatDurationText(*duration));
    if (!again.ok() || *again != *duration) __builtin_trap();
  }

  const Config defaults;
  auto config = ParseConfigYaml(text, defaults, "fuzz.yaml");
  if (!config.ok()) return 0;
  (void)ValidateConfig(*config);
  const std::string yaml = ConfigToYaml(*config);
  auto reparsed = ParseConfigYaml(yaml, defaults, "ConfigToYaml");
  if (!reparsed.ok() || ConfigToYaml(*reparsed) != yaml) __builtin_trap();
  return 0;
}
