// heapwatchd configuration: the effective settings of one daemon run, read from a YAML file
// (yaml-cpp) and overridden by command-line flags (daemon/flags.h). docs/configuration.md is the
// reference for every key; keep it in step with this file.
//
// Thread-safety: Config is a plain value; the functions below are pure and thread-compatible.
#ifndef HEAPWATCH_DAEMON_CONFIG_H_
#define HEAPWATCH_DAEMON_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/status.h"
#include "diff/trend_detector.h"

namespace heapwatch::daemon {

// A set of JVM main classes (or jar names) given by shell-style glob patterns (fnmatch(3) without
// flags, so
// `*` also matches `.`, `$` and `/`). A main class matches when it matches at least one `include`
// pattern and no `exclude` pattern; an empty `include` list therefore matches nothing.
struct MainClassFilter {
  std::vector<std::string> include;
  std::vector<std::string> exclude;

  bool Matches(std::string_view main_class) const;
  friend bool operator==(const MainClassFilter&, const MainClassFilter&) = default;
};

// How and when class histograms are collected.
struct CollectionConfig {
  // Target time between two histograms of one agent. Each period is multiplied by a random factor
  // in [1 - jitter, 1 + jitter] so that agents drift apart instead of being attached to all at
  // once.
  absl::Duration interval = absl::Seconds(60);
  double jitter = 0.1;  // in [0, 0.5]
  // Worker threads attaching to JVMs; at most this many collections run at once.
  int concurrency = 2;
  // Time between two scans of the local JVMs (hsperfdata directories).
  absl::Duration discovery_interval = absl::Seconds(5);
  // Attach timeouts (collectors/attach.h): how long the JVM may take to start its attach listener
  // after the trigger file and SIGQUIT; how long connect(2) may wait; how long sending the request
  // and reading the whole histogram may take (a full GC of a large heap comes first). A collection
  // is bounded by their sum, so an unresponsive JVM holds one worker at most that long.
  absl::Duration handshake_timeout = absl::Seconds(10);
  absl::Duration connect_timeout = absl::Seconds(5);
  absl::Duration io_timeout = absl::Seconds(120);
  // Largest histogram reply accepted, in bytes.
  uint64_t max_reply_bytes = uint64_t{256} << 20;
  // After the n-th consecutive failure of an agent the next attempt waits
  // max(interval, min(backoff_initial * 2^(n-1), backoff_max)).
  absl::Duration backoff_initial = absl::Seconds(10);
  absl::Duration backoff_max = absl::Minutes(10);
  // Agents whose histograms count every object (`GC.class_histogram -all`: no full GC, includes
  // garbage) instead of live objects only. Default: none.
  MainClassFilter all_objects;
};

// Which local JVMs the daemon watches at all. Default: every JVM.
struct WatchConfig {
  MainClassFilter agents{{"*"}, {}};
};

// What the Prometheus exporter publishes.
struct ExportConfig {
  // heapwatch_class_bytes / heapwatch_class_instances are exported for the top_classes classes of
  // each agent by bytes, plus every suspect. Bounds the number of series per agent.
  int top_classes = 20;
};

// How long history is kept (storage/snapshot_store.h), enforced by the daemon in the background.
struct RetentionConfig {
  // Snapshots older than this are deleted.
  absl::Duration max_age = absl::Hours(24 * 14);
  // Then the oldest snapshots (of all agents) until the store's live data is at most this many
  // bytes.
  uint64_t max_bytes = uint64_t{1} << 30;
  // How often retention runs.
  absl::Duration check_interval = absl::Minutes(1);
};

struct Config {
  // Where the LMDB store lives; relative paths are relative to the daemon's working directory.
  std::string data_dir = "./data";
  // gRPC query service address (host:port); port 0 picks a free port.
  std::string grpc_listen = "127.0.0.1:7750";
  // Prometheus /metrics address (host:port); port 0 picks a free port.
  std::string metrics_listen = "127.0.0.1:9750";
  // When set, the bound port is written there (decimal, newline) once the server listens.
  std::string grpc_port_file;
  std::string metrics_port_file;
  // spdlog level: trace, debug, info, warn, error, critical, off.
  std::string log_level = "info";
  // On SIGTERM/SIGINT, how long in-flight collections may take to finish before they are abandoned.
  absl::Duration shutdown_grace = absl::Seconds(30);

  CollectionConfig collection;
  WatchConfig watch;
  ExportConfig exporter;  // YAML section `export`
  diff::TrendOptions trend;
  RetentionConfig retention;
};

// Parses a duration written as in Go / absl::ParseDuration: a sequence of decimal numbers with
// units
// ("300ms", "2s", "1m", "1h30m", "1.5h"; units ns, us, ms, s, m, h). Bare numbers other than "0",
// negative and infinite durations are rejected. Errors: InvalidArgument naming the text.
StatusOr<absl::Duration> ParseDurationText(std::string_view text);

// Formats a duration so that ParseDurationText reads it back exactly ("1m", "1h30m", "1.5s").
std::string FormatDurationText(absl::Duration d);

// Parses a YAML document (see docs/configuration.md) on top of `base` (usually a default Config)
// and returns the result. Keys absent from the document keep their value from `base`. `source`
// names the document in error messages (a file name). Errors: InvalidArgument for YAML syntax
// errors, unknown keys (the message names the full key path, e.g. "collection.intervall", and the
// line), values of the wrong type or out of range.
StatusOr<Config> ParseConfigYaml(std::string_view yaml, const Config& base,
                                 std::string_view source);

// Reads and parses a YAML file on top of `base`.
// Errors: NotFound / PermissionDenied when the file cannot be read; otherwise as ParseConfigYaml.
StatusOr<Config> LoadConfigFile(const std::string& path, const Config& base);

// Checks cross-field constraints (positive interval, jitter in [0, 0.5], concurrency in [1, 64],
// ...). Errors: InvalidArgument naming the key.
Status ValidateConfig(const Config& config);

// The whole config as a YAML document that ParseConfigYaml accepts and that yields `config` again.
std::string ConfigToYaml(const Config& config);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_CONFIG_H_
