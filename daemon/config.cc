#include "daemon/config.h"

#include <fnmatch.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "auth/tls.h"
#include "auth/tokens.h"
#include "common/utf8.h"
#include "daemon/config_fields.h"
#include "yaml-cpp/yaml.h"

namespace heapwatch::daemon {
namespace {
// Debian 12's Abseil has its own string_view type; convert at the boundary.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }
}  // namespace

bool MainClassFilter::Matches(std::string_view main_class) const {
  std::string subject(main_class);
  auto matches_any = [&](const std::vector<std::string>& patterns) {
    for (const std::string& p : patterns) {
      if (fnmatch(p.c_str(), subject.c_str(), 0) == 0) return true;
    }
    return false;
  };
  return matches_any(include) && !matches_any(exclude);
}

StatusOr<absl::Duration> ParseDurationText(std::string_view text) {
  std::string t(absl::StripAsciiWhitespace(AV(text)));
  absl::Duration d;
  if (t.empty() || !absl::ParseDuration(t, &d)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "invalid duration '%s' (expected e.g. 500ms, 2s, 1m, 1h30m)", std::string(text)));
  }
  if (d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "invalid duration '%s': must be finite and not negative", std::string(text)));
  }
  return d;
}

std::string FormatDurationText(absl::Duration d) { return absl::FormatDuration(d); }

namespace {

using config_fields::Field;
using config_fields::FieldMap;
using config_fields::Located;

}  // namespace

namespace config_fields {

std::string Located(const YAML::Node& node, std::string_view path) {
  if (node.Mark().is_null()) return absl::StrCat("'", AV(path), "'");
  return absl::StrFormat("'%s' (line %d)", std::string(path), node.Mark().line + 1);
}

Status ReadMap(const YAML::Node& node, const std::string& path, const FieldMap& fields) {
  if (node.IsNull()) return absl::OkStatus();  // an empty section keeps every default
  if (!node.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.empty() ? std::string("the document") : Located(node, path),
                     " must be a mapping of keys to values"));
  }
  for (const auto& kv : node) {
    std::string key;
    try {
      key = kv.first.as<std::string>();
    } catch (const YAML::Exception&) {
      return absl::InvalidArgumentError(
          absl::StrCat("non-scalar key in ", path.empty() ? "the document" : path));
    }
    std::string full = path.empty() ? key : absl::StrCat(path, ".", key);
    auto it = fields.find(key);
    if (it == fields.end()) {
      std::vector<std::string> known;
      for (const auto& f : fields) known.push_back(f.first);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown configuration key ", Located(kv.first, full),
                       "; known keys here: ", absl::StrJoin(known, ", ")));
    }
    HW_RETURN_IF_ERROR(it->second(kv.second, full));
  }
  return absl::OkStatus();
}

// A control character (other than tab) in a string value: no path, address, pattern or level has
// one, and ConfigToYaml could not write it back (a plain scalar's carriage return before spaces and
// a comment is kept by yaml-cpp's parser but read back as a line break; found by
// fuzz/config_fuzzer.cc).
Status NoControlCharacters(const YAML::Node& node, std::string_view path, const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const auto c = static_cast<unsigned char>(s[at]);
    uint32_t cp = 0;
    // Strict UTF-8 (common/utf8.h): yaml-cpp's emitter decodes invalid sequences leniently (an
    // overlong 0xC0 0x96 is written back as the control character 0x16; also found by the fuzzer).
    if (!DecodeUtf8(s, &i, &cp)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Located(node, path), " must be valid UTF-8 (byte 0x",
                       absl::Hex(c, absl::kZeroPad2), " at offset ", at, ")"));
    }
    if ((cp < 0x20 && cp != '\t') || cp == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(Located(node, path), " must not contain control characters (byte 0x",
                       absl::Hex(c, absl::kZeroPad2), " at offset ", at, ")"));
    }
  }
  return absl::OkStatus();
}

StatusOr<std::string> ReadString(const YAML::Node& node, std::string_view path) {
  if (node.IsNull()) return std::string();
  if (!node.IsScalar()) {
    return absl::InvalidArgumentError(absl::StrCat(Located(node, path), " must be a string"));
  }
  HW_RETURN_IF_ERROR(NoControlCharacters(node, path, node.Scalar()));
  return node.Scalar();
}

StatusOr<int64_t> ReadInt(const YAML::Node& node, std::string_view path, int64_t min, int64_t max) {
  int64_t v = 0;
  if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &v)) {
    return absl::InvalidArgumentError(absl::StrCat(Located(node, path), " must be an integer"));
  }
  if (v < min || v > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be in [%d, %d], got %d", Located(node, path), min, max, v));
  }
  return v;
}

StatusOr<double> ReadDouble(const YAML::Node& node, std::string_view path, double min, double max) {
  double v = 0;
  if (!node.IsScalar() || !absl::SimpleAtod(node.Scalar(), &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat(Located(node, path), " must be a number"));
  }
  if (v < min || v > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be in [%g, %g], got %g", Located(node, path), min, max, v));
  }
  return v;
}

StatusOr<bool> ReadBool(const YAML::Node& node, std::string_view path) {
  bool v = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, v)) {
    return absl::InvalidArgumentError(absl::StrCat(Located(node, path), " must be true or false"));
  }
  return v;
}

StatusOr<absl::Duration> ReadDuration(const YAML::Node& node, std::string_view path) {
  if (!node.IsScalar()) {
    return absl::InvalidArgumentError(absl::StrCat(Located(node, path), " must be a duration"));
  }
  auto d = ParseDurationText(node.Scalar());
  if (!d.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Located(node, path), ": ", d.status().message()));
  }
  return *d;
}

StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  std::string t(absl::StripAsciiWhitespace(AV(text)));
  static constexpr std::pair<std::string_view, int> kSuffixes[] = {
      {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}};
  int shift = 0;
  for (const auto& [suffix, s] : kSuffixes) {
    if (t.size() > suffix.size() && absl::EndsWith(t, AV(suffix))) {
      t = std::string(absl::StripAsciiWhitespace(t.substr(0, t.size() - suffix.size())));
      shift = s;
      break;
    }
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(t, &v) || (shift > 0 && v > (UINT64_MAX >> shift))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "invalid size '%s' (expected bytes as an integer, optionally with KiB, MiB, GiB or TiB)",
        std::string(text)));
  }
  return v << shift;
}

std::string FormatDouble(double v) {
  for (int precision = 1; precision <= 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, v);
    double back = 0;
    if (absl::SimpleAtod(text, &back) && back == v) return text;
  }
  return absl::StrFormat("%.17g", v);
}

StatusOr<uint64_t> ReadByteSize(const YAML::Node& node, std::string_view path) {
  if (!node.IsScalar()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Located(node, path), " must be a size in bytes"));
  }
  auto v = ParseByteSize(node.Scalar());
  if (!v.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Located(node, path), ": ", v.status().message()));
  }
  return *v;
}

StatusOr<std::vector<std::string>> ReadStringList(const YAML::Node& node, std::string_view path) {
  std::vector<std::string> out;
  if (node.IsNull()) return out;
  if (!node.IsSequence()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Located(node, path), " must be a list of strings"));
  }
  for (const auto& item : node) {
    if (!item.IsScalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Located(item, path), " must hold strings only"));
    }
    HW_RETURN_IF_ERROR(NoControlCharacters(item, path, item.Scalar()));
    out.push_back(item.Scalar());
  }
  return out;
}

}  // namespace config_fields

namespace {

using namespace config_fields;  // NOLINT(google-build-using-namespace): the field readers above

template <typename T>
Field Assign(T* target, std::function<StatusOr<T>(const YAML::Node&, std::string_view)> read) {
  return [target, read](const YAML::Node& node, const std::string& path) -> Status {
    HW_ASSIGN_OR_RETURN(*target, read(node, path));
    return absl::OkStatus();
  };
}

Field StringField(std::string* target) { return Assign<std::string>(target, ReadString); }
Field DurationField(absl::Duration* target) { return Assign<absl::Duration>(target, ReadDuration); }
Field ByteSizeField(uint64_t* target) { return Assign<uint64_t>(target, ReadByteSize); }
Field IntField(int* target, int min, int max) {
  return [=](const YAML::Node& node, const std::string& path) -> Status {
    HW_ASSIGN_OR_RETURN(int64_t v, ReadInt(node, path, min, max));
    *target = static_cast<int>(v);
    return absl::OkStatus();
  };
}
Field DoubleField(double* target, double min, double max) {
  return [=](const YAML::Node& node, const std::string& path) -> Status {
    HW_ASSIGN_OR_RETURN(*target, ReadDouble(node, path, min, max));
    return absl::OkStatus();
  };
}
Field BoolField(bool* target) { return Assign<bool>(target, ReadBool); }
Field StringListField(std::vector<std::string>* target) {
  return Assign<std::vector<std::string>>(target, ReadStringList);
}
Field FilterField(MainClassFilter* target) {
  return [target](const YAML::Node& node, const std::string& path) -> Status {
    return ReadMap(
        node, path,
        {{"include", Assign<std::vector<std::string>>(&target->include, ReadStringList)},
         {"exclude", Assign<std::vector<std::string>>(&target->exclude, ReadStringList)}});
  };
}
Field ThreadNamesField(analysis::ThreadNamePrivacy* target) {
  return [target](const YAML::Node& node, const std::string& path) -> Status {
    HW_ASSIGN_OR_RETURN(std::string text, ReadString(node, path));
    auto privacy = analysis::ParseThreadNamePrivacy(text);
    if (!privacy.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Located(node, path), ": ", privacy.status().message()));
    }
    *target = *privacy;
    return absl::OkStatus();
  };
}
// auth.client_certificates: a mapping of certificate names (auth::ValidateCertificateName) to role
// names (agent, read, admin).
Field CertificateRolesField(std::map<std::string, std::string>* target) {
  return [target](const YAML::Node& node, const std::string& path) -> Status {
    target->clear();
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Located(node, path), " must be a mapping of certificate names to roles"));
    }
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Located(kv.first, path), ": a certificate name must be a string"));
      }
      const std::string name = kv.first.Scalar();
      if (Status v = auth::ValidateCertificateName(name); !v.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(Located(kv.first, path), ": ", v.message()));
      }
      HW_ASSIGN_OR_RETURN(std::string role, ReadString(kv.second, path));
      if (!auth::ParseRole(role)) {
        return absl::InvalidArgumentError(absl::StrCat(Located(kv.second, path),
                                                       ": unknown role for '", name,
                                                       "' (expected agent, read or admin)"));
      }
      if (!target->emplace(name, role).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(Located(kv.first, path), ": '", name, "' is given twice"));
      }
    }
    return absl::OkStatus();
  };
}
Field Section(FieldMap fields) {
  return [fields = std::move(fields)](const YAML::Node& node, const std::string& path) {
    return ReadMap(node, path, fields);
  };
}

FieldMap TopLevelFields(Config* c) {
  CollectionConfig* col = &c->collection;
  return {
      {"data_dir", StringField(&c->data_dir)},
      {"grpc_listen", StringField(&c->grpc_listen)},
      {"metrics_listen", StringField(&c->metrics_listen)},
      {"grpc_port_file", StringField(&c->grpc_port_file)},
      {"metrics_port_file", StringField(&c->metrics_port_file)},
      {"log_level", StringField(&c->log_level)},
      {"shutdown_grace", DurationField(&c->shutdown_grace)},
      {"collection", Section({
                         {"interval", DurationField(&col->interval)},
                         {"jitter", DoubleField(&col->jitter, 0, 0.5)},
                         {"concurrency", IntField(&col->concurrency, 1, 64)},
                         {"discovery_interval", DurationField(&col->discovery_interval)},
                         {"handshake_timeout", DurationField(&col->handshake_timeout)},
                         {"connect_timeout", DurationField(&col->connect_timeout)},
                         {"io_timeout", DurationField(&col->io_timeout)},
                         {"max_reply_bytes", ByteSizeField(&col->max_reply_bytes)},
                         {"backoff_initial", DurationField(&col->backoff_initial)},
                         {"backoff_max", DurationField(&col->backoff_max)},
                         {"all_objects", FilterField(&col->all_objects)},
                         {"pause_budget", DoubleField(&col->pause_budget, 1e-6, 1)},
                         {"pause_budget_window", DurationField(&col->pause_budget_window)},
                         {"confirmation_window", DurationField(&col->confirmation_window)},
                         {"max_interval", DurationField(&col->max_interval)},
                         {"gc_sample_interval", DurationField(&col->gc_sample_interval)},
                         {"string_table_interval", DurationField(&col->string_table_interval)},
                     })},
      {"watch", Section({{"agents", FilterField(&c->watch.agents)}})},
      {"export", Section({{"top_classes", IntField(&c->exporter.top_classes, 0, 10000)}})},
      {"trend", Section(TrendFields(&c->trend))},
      {"retention", Section({
                        {"max_age", DurationField(&c->retention.max_age)},
                        {"max_bytes", ByteSizeField(&c->retention.max_bytes)},
                        {"check_interval", DurationField(&c->retention.check_interval)},
                    })},
      {"web", Section({
                  {"listen", StringField(&c->web.listen)},
                  {"external_url", StringField(&c->web.external_url)},
                  {"port_file", StringField(&c->web.port_file)},
              })},
      {"escalation",
       Section({
           {"enabled", BoolField(&c->escalation.enabled)},
           {"auto", BoolField(&c->escalation.automatic)},
           {"min_dump_interval", DurationField(&c->escalation.min_dump_interval)},
           {"join_window", DurationField(&c->escalation.join_window)},
           {"max_concurrent_analyses", IntField(&c->escalation.max_concurrent_analyses, 1, 16)},
           {"max_queued", IntField(&c->escalation.max_queued, 1, 1000)},
           {"max_analysis_memory_bytes", ByteSizeField(&c->escalation.max_analysis_memory_bytes)},
           {"max_dump_disk_bytes", ByteSizeField(&c->escalation.max_dump_disk_bytes)},
           {"dump_dir", StringField(&c->escalation.dump_dir)},
           {"gzip", BoolField(&c->escalation.gzip)},
           {"keep_raw_dumps", BoolField(&c->escalation.keep_raw_dumps)},
           {"dump_timeout", DurationField(&c->escalation.dump_timeout)},
           {"exclude_patterns", StringListField(&c->escalation.exclude_patterns)},
           {"top_objects", IntField(&c->escalation.top_objects, 1, 1000)},
           {"thread_names", ThreadNamesField(&c->escalation.thread_names)},
       })},
      {"auth",
       Section({{"tokens_file", StringField(&c->auth.tokens_file)},
                {"client_certificates", CertificateRolesField(&c->auth.client_certificates)}})},
      {"tls", Section({
                  {"cert_file", StringField(&c->tls.cert_file)},
                  {"key_file", StringField(&c->tls.key_file)},
                  {"client_ca_file", StringField(&c->tls.client_ca_file)},
              })},
      {"agents", Section({
                     {"listen", StringField(&c->agents.listen)},
                     {"heartbeat_interval", DurationField(&c->agents.heartbeat_interval)},
                     {"down_after", DurationField(&c->agents.down_after)},
                     {"max_connected", IntField(&c->agents.max_connected, 1, 100000)},
                     {"port_file", StringField(&c->agents.port_file)},
                 })},
      {"grpc", Section({
                   {"max_receive_message_bytes", ByteSizeField(&c->grpc.max_receive_message_bytes)},
                   {"max_concurrent_streams", IntField(&c->grpc.max_concurrent_streams, 1, 100000)},
                   {"max_threads", IntField(&c->grpc.max_threads, 1, 100000)},
                   {"max_memory_bytes", ByteSizeField(&c->grpc.max_memory_bytes)},
                   {"min_ping_interval", DurationField(&c->grpc.min_ping_interval)},
                   {"max_ping_strikes", IntField(&c->grpc.max_ping_strikes, 0, 1000)},
                   {"keepalive_time", DurationField(&c->grpc.keepalive_time)},
                   {"keepalive_timeout", DurationField(&c->grpc.keepalive_timeout)},
                   {"max_connection_idle", DurationField(&c->grpc.max_connection_idle)},
                   {"max_call_time", DurationField(&c->grpc.max_call_time)},
               })},
  };
}

}  // namespace

StatusOr<Config> ParseConfigYaml(std::string_view yaml, const Config& base,
                                 std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(AV(source), ": invalid YAML: ", e.what()));
  }
  Config config = base;
  Status s = ReadMap(root, "", TopLevelFields(&config));
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(AV(source), ": ", s.message()));
  return config;
}

StatusOr<Config> LoadConfigFile(const std::string& path, const Config& base) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read configuration file ", path, ": ", std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseConfigYaml(buffer.str(), base, path);
}

Status ValidateConfig(const Config& c) {
  auto fail = [](std::string_view key, std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("configuration '", AV(key), "': ", AV(why)));
  };
  if (c.data_dir.empty()) return fail("data_dir", "must not be empty");
  if (c.grpc_listen.empty()) return fail("grpc_listen", "must not be empty");
  if (c.metrics_listen.empty()) return fail("metrics_listen", "must not be empty");
  if (!c.web.external_url.empty() && c.web.external_url.back() == '/') {
    return fail("web.external_url", "must not end with '/'");
  }
  HW_RETURN_IF_ERROR(ValidateGrpcLimits(c.grpc));
  // TLS (auth/tls.h): a certificate needs its key; client certificates need the server's own.
  if (c.tls.cert_file.empty() != c.tls.key_file.empty()) {
    return fail(c.tls.cert_file.empty() ? "tls.cert_file" : "tls.key_file",
                "tls.cert_file and tls.key_file must be given together");
  }
  if (!c.tls.client_ca_file.empty() && c.tls.cert_file.empty()) {
    return fail("tls.client_ca_file", "needs tls.cert_file and tls.key_file (TLS on the listener)");
  }
  if (!c.auth.client_certificates.empty() && c.tls.client_ca_file.empty()) {
    return fail("auth.client_certificates",
                "needs tls.client_ca_file (the CA that signs the client certificates)");
  }
  if (c.agents.heartbeat_interval < absl::Milliseconds(10)) {
    return fail("agents.heartbeat_interval", "must be >= 10ms");
  }
  if (c.agents.down_after <= absl::ZeroDuration()) {
    return fail("agents.down_after", "must be positive");
  }
  if (c.agents.max_connected < 1) return fail("agents.max_connected", "must be >= 1");
  const CollectionConfig& col = c.collection;
  if (col.interval < absl::Milliseconds(100))
    return fail("collection.interval", "must be >= 100ms");
  if (!(col.jitter >= 0 && col.jitter <= 0.5))
    return fail("collection.jitter", "must be in [0, 0.5]");
  if (col.concurrency < 1 || col.concurrency > 64) {
    return fail("collection.concurrency", "must be in [1, 64]");
  }
  if (col.discovery_interval < absl::Milliseconds(100)) {
    return fail("collection.discovery_interval", "must be >= 100ms");
  }
  if (col.handshake_timeout <= absl::ZeroDuration()) {
    return fail("collection.handshake_timeout", "must be positive");
  }
  if (col.connect_timeout <= absl::ZeroDuration()) {
    return fail("collection.connect_timeout", "must be positive");
  }
  if (col.io_timeout <= absl::ZeroDuration())
    return fail("collection.io_timeout", "must be positive");
  if (col.max_reply_bytes < 4096) return fail("collection.max_reply_bytes", "must be >= 4096");
  if (!(col.pause_budget > 0 && col.pause_budget <= 1)) {
    return fail("collection.pause_budget", "must be in (0, 1]");
  }
  if (col.pause_budget_window < absl::Seconds(1)) {
    return fail("collection.pause_budget_window", "must be >= 1s");
  }
  if (col.confirmation_window < absl::Seconds(1)) {
    return fail("collection.confirmation_window", "must be >= 1s");
  }
  if (col.max_interval < absl::Seconds(1)) {
    return fail("collection.max_interval", "must be >= 1s (below collection.interval it is raised to it)");
  }
  if (col.gc_sample_interval < absl::Milliseconds(100)) {
    return fail("collection.gc_sample_interval", "must be >= 100ms");
  }
  if (col.string_table_interval != absl::ZeroDuration() &&
      col.string_table_interval < absl::Seconds(1)) {
    return fail("collection.string_table_interval", "must be 0 (off) or >= 1s");
  }
  if (c.retention.max_age <= absl::ZeroDuration()) {
    return fail("retention.max_age", "must be positive");
  }
  if (col.backoff_initial <= absl::ZeroDuration()) {
    return fail("collection.backoff_initial", "must be positive");
  }
  if (col.backoff_max < col.backoff_initial) {
    return fail("collection.backoff_max", "must be >= collection.backoff_initial");
  }
  if (c.exporter.top_classes < 0) return fail("export.top_classes", "must not be negative");
  if (c.retention.check_interval < absl::Seconds(1)) {
    return fail("retention.check_interval", "must be >= 1s");
  }
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  bool level_ok = false;
  for (const char* l : kLevels) level_ok |= c.log_level == l;
  if (!level_ok) {
    return fail("log_level", "must be one of trace, debug, info, warn, error, critical, off");
  }
  HW_RETURN_IF_ERROR(ValidateTrend(c.trend));
  const EscalationConfig& e = c.escalation;
  if (e.min_dump_interval < absl::ZeroDuration()) {
    return fail("escalation.min_dump_interval", "must not be negative");
  }
  if (e.join_window < absl::ZeroDuration()) {
    return fail("escalation.join_window", "must not be negative");
  }
  if (e.max_concurrent_analyses < 1 || e.max_concurrent_analyses > 16) {
    return fail("escalation.max_concurrent_analyses", "must be in [1, 16]");
  }
  if (e.max_queued < 1) return fail("escalation.max_queued", "must be >= 1");
  if (e.dump_timeout < absl::Seconds(1)) return fail("escalation.dump_timeout", "must be >= 1s");
  if (e.top_objects < 1) return fail("escalation.top_objects", "must be >= 1");
  for (const std::string& pattern : e.exclude_patterns) {
    try {
      std::regex re(pattern);
    } catch (const std::regex_error& err) {
      return fail("escalation.exclude_patterns",
                  absl::StrCat("\"", pattern, "\" is not a regular expression: ", err.what()));
    }
  }
  return absl::OkStatus();
}

namespace {

void EmitFilter(YAML::Emitter& out, const char* key, const MainClassFilter& f) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "include" << YAML::Value << YAML::Flow << f.include;
  out << YAML::Key << "exclude" << YAML::Value << YAML::Flow << f.exclude;
  out << YAML::EndMap;
}

}  // namespace

std::string ConfigToYaml(const Config& c) {
  YAML::Emitter out;
  auto dur = [](absl::Duration d) { return FormatDurationText(d); };
  out << YAML::BeginMap;
  out << YAML::Key << "data_dir" << YAML::Value << c.data_dir;
  out << YAML::Key << "grpc_listen" << YAML::Value << c.grpc_listen;
  out << YAML::Key << "metrics_listen" << YAML::Value << c.metrics_listen;
  out << YAML::Key << "grpc_port_file" << YAML::Value << c.grpc_port_file;
  out << YAML::Key << "metrics_port_file" << YAML::Value << c.metrics_port_file;
  out << YAML::Key << "log_level" << YAML::Value << c.log_level;
  out << YAML::Key << "shutdown_grace" << YAML::Value << dur(c.shutdown_grace);

  const CollectionConfig& col = c.collection;
  out << YAML::Key << "collection" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "interval" << YAML::Value << dur(col.interval);
  out << YAML::Key << "jitter" << YAML::Value << FormatDouble(col.jitter);
  out << YAML::Key << "concurrency" << YAML::Value << col.concurrency;
  out << YAML::Key << "discovery_interval" << YAML::Value << dur(col.discovery_interval);
  out << YAML::Key << "handshake_timeout" << YAML::Value << dur(col.handshake_timeout);
  out << YAML::Key << "connect_timeout" << YAML::Value << dur(col.connect_timeout);
  out << YAML::Key << "io_timeout" << YAML::Value << dur(col.io_timeout);
  out << YAML::Key << "max_reply_bytes" << YAML::Value << col.max_reply_bytes;
  out << YAML::Key << "backoff_initial" << YAML::Value << dur(col.backoff_initial);
  out << YAML::Key << "backoff_max" << YAML::Value << dur(col.backoff_max);
  EmitFilter(out, "all_objects", col.all_objects);
  out << YAML::Key << "pause_budget" << YAML::Value << FormatDouble(col.pause_budget);
  out << YAML::Key << "pause_budget_window" << YAML::Value << dur(col.pause_budget_window);
  out << YAML::Key << "confirmation_window" << YAML::Value << dur(col.confirmation_window);
  out << YAML::Key << "max_interval" << YAML::Value << dur(col.max_interval);
  out << YAML::Key << "gc_sample_interval" << YAML::Value << dur(col.gc_sample_interval);
  out << YAML::Key << "string_table_interval" << YAML::Value << dur(col.string_table_interval);
  out << YAML::EndMap;

  out << YAML::Key << "watch" << YAML::Value << YAML::BeginMap;
  EmitFilter(out, "agents", c.watch.agents);
  out << YAML::EndMap;

  out << YAML::Key << "export" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "top_classes" << YAML::Value << c.exporter.top_classes;
  out << YAML::EndMap;

  out << YAML::Key << "trend" << YAML::Value;
  EmitTrend(out, c.trend);

  out << YAML::Key << "retention" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_age" << YAML::Value << dur(c.retention.max_age);
  out << YAML::Key << "max_bytes" << YAML::Value << c.retention.max_bytes;
  out << YAML::Key << "check_interval" << YAML::Value << dur(c.retention.check_interval);
  out << YAML::EndMap;

  const EscalationConfig& e = c.escalation;
  out << YAML::Key << "escalation" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << e.enabled;
  out << YAML::Key << "auto" << YAML::Value << e.automatic;
  out << YAML::Key << "min_dump_interval" << YAML::Value << dur(e.min_dump_interval);
  out << YAML::Key << "join_window" << YAML::Value << dur(e.join_window);
  out << YAML::Key << "max_concurrent_analyses" << YAML::Value << e.max_concurrent_analyses;
  out << YAML::Key << "max_queued" << YAML::Value << e.max_queued;
  out << YAML::Key << "max_analysis_memory_bytes" << YAML::Value << e.max_analysis_memory_bytes;
  out << YAML::Key << "max_dump_disk_bytes" << YAML::Value << e.max_dump_disk_bytes;
  out << YAML::Key << "dump_dir" << YAML::Value << e.dump_dir;
  out << YAML::Key << "gzip" << YAML::Value << e.gzip;
  out << YAML::Key << "keep_raw_dumps" << YAML::Value << e.keep_raw_dumps;
  out << YAML::Key << "dump_timeout" << YAML::Value << dur(e.dump_timeout);
  out << YAML::Key << "exclude_patterns" << YAML::Value << YAML::Flow << e.exclude_patterns;
  out << YAML::Key << "top_objects" << YAML::Value << e.top_objects;
  out << YAML::Key << "thread_names" << YAML::Value
      << std::string(analysis::ThreadNamePrivacyName(e.thread_names));
  out << YAML::EndMap;

  out << YAML::Key << "web" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.web.listen;
  out << YAML::Key << "external_url" << YAML::Value << c.web.external_url;
  out << YAML::Key << "port_file" << YAML::Value << c.web.port_file;
  out << YAML::EndMap;
  out << YAML::Key << "auth" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "tokens_file" << YAML::Value << c.auth.tokens_file;
  out << YAML::Key << "client_certificates" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, role] : c.auth.client_certificates) {
    out << YAML::Key << name << YAML::Value << role;
  }
  out << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cert_file" << YAML::Value << c.tls.cert_file;
  out << YAML::Key << "key_file" << YAML::Value << c.tls.key_file;
  out << YAML::Key << "client_ca_file" << YAML::Value << c.tls.client_ca_file;
  out << YAML::EndMap;
  out << YAML::Key << "agents" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.agents.listen;
  out << YAML::Key << "heartbeat_interval" << YAML::Value << dur(c.agents.heartbeat_interval);
  out << YAML::Key << "down_after" << YAML::Value << dur(c.agents.down_after);
  out << YAML::Key << "max_connected" << YAML::Value << c.agents.max_connected;
  out << YAML::Key << "port_file" << YAML::Value << c.agents.port_file;
  out << YAML::EndMap;
  out << YAML::Key << "grpc" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_receive_message_bytes" << YAML::Value
      << c.grpc.max_receive_message_bytes;
  out << YAML::Key << "max_concurrent_streams" << YAML::Value << c.grpc.max_concurrent_streams;
  out << YAML::Key << "max_threads" << YAML::Value << c.grpc.max_threads;
  out << YAML::Key << "max_memory_bytes" << YAML::Value << c.grpc.max_memory_bytes;
  out << YAML::Key << "min_ping_interval" << YAML::Value << dur(c.grpc.min_ping_interval);
  out << YAML::Key << "max_ping_strikes" << YAML::Value << c.grpc.max_ping_strikes;
  out << YAML::Key << "keepalive_time" << YAML::Value << dur(c.grpc.keepalive_time);
  out << YAML::Key << "keepalive_timeout" << YAML::Value << dur(c.grpc.keepalive_timeout);
  out << YAML::Key << "max_connection_idle" << YAML::Value << dur(c.grpc.max_connection_idle);
  out << YAML::Key << "max_call_time" << YAML::Value << dur(c.grpc.max_call_time);
  out << YAML::EndMap;

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace heapwatch::daemon
