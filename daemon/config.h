// heapwatchd configuration: the effective settings of one daemon run, read from a YAML file
// (yaml-cpp) and overridden by command-line flags (daemon/flags.h). docs/configuration.md is the
// reference for every key; keep it in step with this file.
//
// Thread-safety: Config is a plain value; the functions below are pure and thread-compatible.
#ifndef HEAPWATCH_DAEMON_CONFIG_H_
#define HEAPWATCH_DAEMON_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "analysis/thread_names.h"
#include "common/status.h"
#include "daemon/grpc_limits.h"
#include "diff/leak_detector.h"

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
  // Agents whose histograms always count every object (`GC.class_histogram -all`: no full GC,
  // includes garbage); the pause budget never takes a live histogram of them. Default: none.
  MainClassFilter all_objects;
  // Pause budget (collectors/pause_budget.h, docs/collection-cost.md): the fraction of each JVM's wall
  // time that heapwatch's histograms may pause it, on average (0.001: 60 ms per minute). The
  // histogram mode is chosen per collection and the interval stretches to keep it.
  double pause_budget = 0.001;
  // Unused budget accrues for at most this long (so an idle stretch buys no burst of pauses).
  absl::Duration pause_budget_window = absl::Minutes(10);
  // A leak being confirmed (the live set grows and no class is named yet) may spend this window's
  // budget in advance (1 h at 0.1 %: 3.6 s, one or two live histograms of a 2 GiB heap); the debt is
  // repaid before any later histogram, so the budget holds over the window. Below
  // pause_budget_window it is raised to it.
  absl::Duration confirmation_window = absl::Hours(1);
  // Longest time between two histograms of one agent, even when that exceeds the budget (the agent
  // is then reported as over budget). 6 h: at the default budget (0.1 %) every JVM whose cheapest
  // histogram pauses it up to 21.6 s stays within the budget (an 8 GiB G1 heap's -all took 6.5 s
  // on the 2-core bench machine: docs/collection-cost.md); the live-set series needs no histogram.
  absl::Duration max_interval = absl::Hours(6);
  // How often every agent's GC counters (hsperfdata) are read for the live-set series and to take
  // `-all` histograms right after the JVM's own old-generation collections. Costs the JVM nothing.
  absl::Duration gc_sample_interval = absl::Seconds(2);
  // Shortest time between two readings of an agent's string table (jcmd VM.stringtable, a short
  // safepoint counted against the pause budget) for the interned-string trend
  // (daemon/string_table_watch.h, docs/leak-patterns.md); read after a histogram once this has
  // passed. 0 turns the interned-string watch off.
  absl::Duration string_table_interval = absl::Minutes(5);
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

// Escalation (daemon/escalation.h, docs/escalation.md): when a class becomes a leak suspect, or on
// request, take an extended dump (GC.heap_dump) of that JVM, analyse it and store a drill-down
// report per suspect class.
struct EscalationConfig {
  // Master switch. When false, no dump is taken and TriggerExtendedDump fails with
  // FAILED_PRECONDITION.
  bool enabled = true;
  // Escalate new suspects automatically (else only on request).
  bool automatic = true;  // YAML key `auto`
  // At most one extended dump per agent per this interval (requested dumps included): a dump
  // pauses the JVM.
  absl::Duration min_dump_interval = absl::Hours(1);
  // An automatic dump waits this long after the suspect that asked for it, so that classes
  // flagged meanwhile share the dump (one JVM pause instead of several). Requested dumps do not
  // wait.
  absl::Duration join_window = absl::Minutes(1);
  // Analysis worker threads: at most this many analyses at once.
  int max_concurrent_analyses = 1;
  // Dumps waiting to be taken or analysed; a request beyond this is refused with a reason.
  int max_queued = 8;
  // Budget for the memory of the analyses running at once, estimated before the dump as 1.2 times
  // the JVM's heap in its last class histogram. A dump whose analysis alone exceeds it is refused
  // before the JVM is paused; otherwise it waits for memory to free up.
  uint64_t max_analysis_memory_bytes = uint64_t{4} << 30;
  // Budget for raw dumps on disk at once (estimated like the memory, the uncompressed size). A dump
  // that alone exceeds it, or the free space of the file system, is refused.
  uint64_t max_dump_disk_bytes = uint64_t{16} << 30;
  // Where raw dumps are written: one private subdirectory per JVM user (0700, owned by the JVM's
  // user so it can write there), files 0600. Empty: <data_dir>/dumps.
  std::string dump_dir;
  // Ask the JVM for a gzip-compressed dump (GC.heap_dump -gz=1, JDK 9 and later).
  bool gzip = true;
  // Keep raw dumps after their analysis (they hold passwords and tokens; off by default).
  bool keep_raw_dumps = false;
  // Longest time a JVM may take to write a dump.
  absl::Duration dump_timeout = absl::Minutes(30);
  // Regular expressions of classes that "who keeps it alive" climbs past (MAT's skip patterns).
  std::vector<std::string> exclude_patterns = {"java.*", "javax.*", "jdk.*", "sun.*",
                                               "com\\.sun\\..*"};
  // Biggest objects by retained size listed in each report.
  int top_objects = 20;
  // Names of live threads in the dumps' reports (pipeline::AnalyzeDumpOptions::thread_names,
  // analysis/thread_names.h): masked (digit runs shown as '#', the default), full or off.
  analysis::ThreadNamePrivacy thread_names = analysis::ThreadNamePrivacy::kMasked;
};

// YAML section `web`: the web pages (docs/web.md).
struct WebConfig {
  // host:port of the pages; empty = on metrics_listen beside /metrics. Port 0 picks a free port.
  std::string listen;
  // The daemon's URL as users reach it ("https://heapwatch.example.com", no trailing slash), used to
  // build absolute links; empty = links relative to the serving host.
  std::string external_url;
  // When set, the bound pages port is written there (like metrics_port_file).
  std::string port_file;
};

// Credentials of the gRPC query service (auth/, docs/security.md).
struct AuthConfig {
  // Tokens file (auth/tokens.h: `ROLE NAME SHA256HEX` per line). Empty: no credentials, and then
  // grpc_listen must be a loopback address (the daemon refuses to start otherwise).
  std::string tokens_file;
  // Roles of TLS client certificates by their subject commonName (auth/tls.h), e.g.
  // {"grafana.example.com": "read", "oncall": "admin"}; values are role names (agent, read, admin).
  // Needs tls.client_ca_file.
  std::map<std::string, std::string> client_certificates;
};

// TLS of the gRPC query listener (auth/tls.h, docs/security.md). All empty: plaintext. PEM files,
// read once at start.
struct TlsConfig {
  std::string cert_file;       // the server certificate (then intermediates); needs key_file
  std::string key_file;        // its private key, unencrypted
  std::string client_ca_file;  // CAs of client certificates (mutual TLS); needs cert_file
};

// The agent gateway (daemon/agent_gateway.h, docs/agents.md): in-process JVM agents register
// over gRPC (proto/heapwatch/agent/v1/agent.proto). YAML section `agents`.
struct AgentsConfig {
  // "HOST:PORT" or "unix:PATH" of the AgentGateway listener; empty = no gateway (the default).
  // A TCP address that is not loopback needs auth.tokens_file (agents present a token of role
  // `agent`); a UNIX socket is protected by its file mode (0660, directory owned by the daemon).
  std::string listen;
  // How often agents send a Heartbeat (pushed to them in AgentConfig); an agent silent for 3
  // intervals is UNREACHABLE.
  absl::Duration heartbeat_interval = absl::Seconds(10);
  // An agent whose stream ended is DOWN (and forgotten until it registers again) after this long.
  absl::Duration down_after = absl::Minutes(5);
  // Most Connect streams open at once (each holds one gRPC thread); more are refused with
  // RESOURCE_EXHAUSTED by gRPC's thread quota.
  int max_connected = 256;
  // When set, the bound TCP port is written there (like grpc_port_file).
  std::string port_file;
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
  // YAML section `trend`: the trend tests (trend.trend, diff::TrendOptions) and the time scales,
  // daily-cycle veto and grouping of leaks (diff::LeakOptions), as one flat mapping.
  diff::LeakOptions trend;
  RetentionConfig retention;
  EscalationConfig escalation;
  WebConfig web;
  AuthConfig auth;  // YAML section `auth`
  TlsConfig tls;    // YAML section `tls`
  // YAML section `grpc`: resource limits of the gRPC server (daemon/grpc_limits.h).
  GrpcLimits grpc;
  AgentsConfig agents;  // YAML section `agents`
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
