// Internal to daemon/config.cc and daemon/config_trend.cc: typed readers for YAML configuration
// values, each returning InvalidArgument that names the full key path and line on bad input.
#ifndef HEAPWATCH_DAEMON_CONFIG_FIELDS_H_
#define HEAPWATCH_DAEMON_CONFIG_FIELDS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/status.h"
#include "diff/leak_detector.h"
#include "yaml-cpp/yaml.h"

namespace heapwatch::daemon::config_fields {

// Applies one YAML value (at key path `path`) to a Config field.
using Field = std::function<Status(const YAML::Node& node, const std::string& path)>;
// The keys allowed in one YAML mapping. Any other key is an error.
using FieldMap = std::map<std::string, Field>;

// "'collection.interval' (line 3)".
std::string Located(const YAML::Node& node, std::string_view path);
// Applies every key of mapping `node` through `fields`; a null node (empty section) is accepted.
Status ReadMap(const YAML::Node& node, const std::string& path, const FieldMap& fields);

StatusOr<std::string> ReadString(const YAML::Node& node, std::string_view path);
StatusOr<int64_t> ReadInt(const YAML::Node& node, std::string_view path, int64_t min, int64_t max);
StatusOr<double> ReadDouble(const YAML::Node& node, std::string_view path, double min, double max);
StatusOr<bool> ReadBool(const YAML::Node& node, std::string_view path);
StatusOr<absl::Duration> ReadDuration(const YAML::Node& node, std::string_view path);
StatusOr<uint64_t> ReadByteSize(const YAML::Node& node, std::string_view path);
StatusOr<std::vector<std::string>> ReadStringList(const YAML::Node& node, std::string_view path);

// "10GiB" -> 10737418240; plain integers are bytes. Suffixes KiB, MiB, GiB, TiB, B.
StatusOr<uint64_t> ParseByteSize(std::string_view text);
// Shortest decimal text that reads back as exactly `v`.
std::string FormatDouble(double v);

// The `trend:` section: one key per field of diff::TrendOptions and one per time-scale / grouping
// field of diff::LeakOptions, in one flat mapping (daemon/config_trend.cc).
FieldMap TrendFields(diff::LeakOptions* trend);
void EmitTrend(YAML::Emitter& out, const diff::LeakOptions& trend);
// diff::ValidateLeakOptions, its message prefixed with "configuration 'trend': ".
Status ValidateTrend(const diff::LeakOptions& trend);

}  // namespace heapwatch::daemon::config_fields

#endif  // HEAPWATCH_DAEMON_CONFIG_FIELDS_H_
