// The `trend:` section of the configuration: one key per field of diff::TrendOptions, same names,
// plus the time-scale and grouping fields of diff::LeakOptions (docs/configuration.md).
#include "absl/strings/str_cat.h"
#include "diff/leak_detector.h"
#include "daemon/config.h"
#include "daemon/config_fields.h"

namespace heapwatch::daemon::config_fields {
namespace {

Field SizeField(size_t* target) {
  return [target](const YAML::Node& node, const std::string& path) -> Status {
    HW_ASSIGN_OR_RETURN(int64_t v, ReadInt(node, path, 0, 1 << 20));
    *target = static_cast<size_t>(v);
    return absl::OkStatus();
  };
}
Field DoubleField(double* target) {
  return [target](const YAML::Node& node, const std::string& path) -> Status {
    HW_ASSIGN_OR_RETURN(*target, ReadDouble(node, path, 0, 1e18));
    return absl::OkStatus();
  };
}

}  // namespace

FieldMap TrendFields(diff::LeakOptions* leak) {
  diff::TrendOptions* t = &leak->trend;
  auto duration = [](absl::Duration* target) -> Field {
    return [target](const YAML::Node& node, const std::string& path) -> Status {
      HW_ASSIGN_OR_RETURN(*target, ReadDuration(node, path));
      return absl::OkStatus();
    };
  };
  return {
      {"window_snapshots", SizeField(&t->window_snapshots)},
      {"min_snapshots", SizeField(&t->min_snapshots)},
      {"warmup_snapshots", SizeField(&t->warmup_snapshots)},
      {"warmup",
       [t](const YAML::Node& node, const std::string& path) -> Status {
         HW_ASSIGN_OR_RETURN(t->warmup, ReadDuration(node, path));
         return absl::OkStatus();
       }},
      {"max_p_value", DoubleField(&t->max_p_value)},
      {"min_growth_bytes",
       [t](const YAML::Node& node, const std::string& path) -> Status {
         HW_ASSIGN_OR_RETURN(t->min_growth_bytes, ReadByteSize(node, path));
         return absl::OkStatus();
       }},
      {"min_growth_bytes_per_second", DoubleField(&t->min_growth_bytes_per_second)},
      {"min_relative_growth", DoubleField(&t->min_relative_growth)},
      {"segments", SizeField(&t->segments)},
      {"min_step_fraction", DoubleField(&t->min_step_fraction)},
      {"recent_snapshots", SizeField(&t->recent_snapshots)},
      {"peak_lookback_snapshots", SizeField(&t->peak_lookback_snapshots)},
      {"confirm_snapshots", SizeField(&t->confirm_snapshots)},
      {"clear_snapshots", SizeField(&t->clear_snapshots)},
      {"time_scales",
       [leak](const YAML::Node& node, const std::string& path) -> Status {
         HW_ASSIGN_OR_RETURN(leak->enable_time_scales, ReadBool(node, path));
         return absl::OkStatus();
       }},
      {"min_time_scale", duration(&leak->min_time_scale)},
      {"max_time_scale", duration(&leak->max_time_scale)},
      {"scale_window_buckets", SizeField(&leak->scale_window_buckets)},
      {"scale_min_buckets", SizeField(&leak->scale_min_buckets)},
      {"scale_lookback_buckets", SizeField(&leak->scale_lookback_buckets)},
      {"cycle_lookback", duration(&leak->cycle_lookback)},
      {"group_min_correlation",
       [leak](const YAML::Node& node, const std::string& path) -> Status {
         HW_ASSIGN_OR_RETURN(leak->group_min_correlation, ReadDouble(node, path, -1, 1));
         return absl::OkStatus();
       }},
  };
}

void EmitTrend(YAML::Emitter& out, const diff::LeakOptions& leak) {
  const diff::TrendOptions& t = leak.trend;
  auto key = [&](const char* k) -> YAML::Emitter& { return out << YAML::Key << k << YAML::Value; };
  out << YAML::BeginMap;
  key("window_snapshots") << t.window_snapshots;
  key("min_snapshots") << t.min_snapshots;
  key("warmup_snapshots") << t.warmup_snapshots;
  key("warmup") << FormatDurationText(t.warmup);
  key("max_p_value") << FormatDouble(t.max_p_value);
  key("min_growth_bytes") << t.min_growth_bytes;
  key("min_growth_bytes_per_second") << FormatDouble(t.min_growth_bytes_per_second);
  key("min_relative_growth") << FormatDouble(t.min_relative_growth);
  key("segments") << t.segments;
  key("min_step_fraction") << FormatDouble(t.min_step_fraction);
  key("recent_snapshots") << t.recent_snapshots;
  key("peak_lookback_snapshots") << t.peak_lookback_snapshots;
  key("confirm_snapshots") << t.confirm_snapshots;
  key("clear_snapshots") << t.clear_snapshots;
  key("time_scales") << leak.enable_time_scales;
  key("min_time_scale") << FormatDurationText(leak.min_time_scale);
  key("max_time_scale") << FormatDurationText(leak.max_time_scale);
  key("scale_window_buckets") << leak.scale_window_buckets;
  key("scale_min_buckets") << leak.scale_min_buckets;
  key("scale_lookback_buckets") << leak.scale_lookback_buckets;
  key("cycle_lookback") << FormatDurationText(leak.cycle_lookback);
  key("group_min_correlation") << FormatDouble(leak.group_min_correlation);
  out << YAML::EndMap;
}

Status ValidateTrend(const diff::LeakOptions& trend) {
  Status s = diff::ValidateLeakOptions(trend);
  if (!s.ok())
    return absl::InvalidArgumentError(absl::StrCat("configuration 'trend': ", s.message()));
  return absl::OkStatus();
}

}  // namespace heapwatch::daemon::config_fields
