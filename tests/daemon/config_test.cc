#include "daemon/config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

using ::testing::HasSubstr;

TEST(DurationText, AcceptsGoStyleDurations) {
  EXPECT_EQ(*ParseDurationText("2s"), absl::Seconds(2));
  EXPECT_EQ(*ParseDurationText("1m"), absl::Minutes(1));
  EXPECT_EQ(*ParseDurationText("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseDurationText("500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDurationText("1.5h"), absl::Minutes(90));
  EXPECT_EQ(*ParseDurationText(" 10s "), absl::Seconds(10));
  EXPECT_EQ(*ParseDurationText("0"), absl::ZeroDuration());
}

TEST(DurationText, RejectsBareNumbersNegativeAndInfinite) {
  for (const char* bad : {"", "5", "abc", "-1s", "inf", "1x", "s", "10 s"}) {
    auto d = ParseDurationText(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(DurationText, FormatRoundTrips) {
  for (absl::Duration d : {absl::Seconds(2), absl::Minutes(90), absl::Milliseconds(1500),
                           absl::Hours(720), absl::ZeroDuration()}) {
    EXPECT_EQ(*ParseDurationText(FormatDurationText(d)), d) << FormatDurationText(d);
  }
}

TEST(Config, DefaultsListenOnLoopbackAndKeepDataInCwd) {
  Config c;
  EXPECT_EQ(c.data_dir, "./data");
  EXPECT_EQ(c.grpc_listen, "127.0.0.1:7750");
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:9750");
  EXPECT_EQ(c.collection.interval, absl::Seconds(60));
  EXPECT_DOUBLE_EQ(c.collection.jitter, 0.1);
  EXPECT_EQ(c.collection.concurrency, 2);
  EXPECT_EQ(c.exporter.top_classes, 20);
  EXPECT_TRUE(c.watch.agents.Matches("com.example.Main"));
  EXPECT_FALSE(c.collection.all_objects.Matches("com.example.Main"));
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(Config, ParsesEverySection) {
  const char* yaml = R"(
data_dir: /var/lib/heapwatch
grpc_listen: 0.0.0.0:7000
metrics_listen: "[::1]:0"
grpc_port_file: /run/grpc.port
metrics_port_file: /run/metrics.port
log_level: debug
shutdown_grace: 5s
collection:
  interval: 1h30m
  jitter: 0.2
  concurrency: 4
  discovery_interval: 2s
  handshake_timeout: 3s
  connect_timeout: 1s
  io_timeout: 2m
  max_reply_bytes: 64MiB
  backoff_initial: 20s
  backoff_max: 1h
  all_objects:
    include: ["com.example.*", "*.jar"]
    exclude: [com.example.Batch]
  pause_budget: 0.005
  pause_budget_window: 30m
  confirmation_window: 2h
  max_interval: 2h
  gc_sample_interval: 500ms
watch:
  agents:
    include: ["*"]
    exclude: ["jdk.jcmd/*", "org.gradle.*"]
export:
  top_classes: 7
trend:
  window_snapshots: 20
  min_snapshots: 10
  warmup_snapshots: 5
  warmup: 2m
  max_p_value: 0.05
  min_growth_bytes: 2MiB
  min_growth_bytes_per_second: 100.5
  min_relative_growth: 0.2
  segments: 4
  min_step_fraction: 0.5
  recent_snapshots: 3
  peak_lookback_snapshots: 40
  confirm_snapshots: 2
  clear_snapshots: 3
  time_scales: false
  min_time_scale: 10s
  max_time_scale: 2h
  scale_window_buckets: 20
  scale_min_buckets: 9
  scale_lookback_buckets: 60
  cycle_lookback: 12h
  group_min_correlation: 0.5
retention:
  max_age: 168h
  max_bytes: 1GiB
  check_interval: 1m
escalation:
  enabled: false
  auto: false
  min_dump_interval: 2h
  join_window: 30s
  max_concurrent_analyses: 3
  max_queued: 5
  max_analysis_memory_bytes: 2GiB
  max_dump_disk_bytes: 8GiB
  dump_dir: /var/tmp/dumps
  gzip: false
  keep_raw_dumps: true
  dump_timeout: 10m
  exclude_patterns: ["org\\.example\\..*", "java.*"]
  top_objects: 7
)";
  auto parsed = ParseConfigYaml(yaml, Config(), "test.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const Config& c = *parsed;
  EXPECT_EQ(c.data_dir, "/var/lib/heapwatch");
  EXPECT_EQ(c.grpc_listen, "0.0.0.0:7000");
  EXPECT_EQ(c.metrics_listen, "[::1]:0");
  EXPECT_EQ(c.grpc_port_file, "/run/grpc.port");
  EXPECT_EQ(c.metrics_port_file, "/run/metrics.port");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.shutdown_grace, absl::Seconds(5));
  EXPECT_EQ(c.collection.interval, absl::Minutes(90));
  EXPECT_DOUBLE_EQ(c.collection.jitter, 0.2);
  EXPECT_EQ(c.collection.concurrency, 4);
  EXPECT_EQ(c.collection.discovery_interval, absl::Seconds(2));
  EXPECT_EQ(c.collection.handshake_timeout, absl::Seconds(3));
  EXPECT_EQ(c.collection.connect_timeout, absl::Seconds(1));
  EXPECT_EQ(c.collection.io_timeout, absl::Minutes(2));
  EXPECT_EQ(c.collection.max_reply_bytes, uint64_t{64} << 20);
  EXPECT_EQ(c.collection.backoff_initial, absl::Seconds(20));
  EXPECT_EQ(c.collection.backoff_max, absl::Hours(1));
  EXPECT_TRUE(c.collection.all_objects.Matches("com.example.Server"));
  EXPECT_TRUE(c.collection.all_objects.Matches("/opt/app/app.jar"));
  EXPECT_FALSE(c.collection.all_objects.Matches("com.example.Batch"));
  EXPECT_FALSE(c.collection.all_objects.Matches("org.other.Main"));
  EXPECT_EQ(c.collection.pause_budget, 0.005);
  EXPECT_EQ(c.collection.pause_budget_window, absl::Minutes(30));
  EXPECT_EQ(c.collection.confirmation_window, absl::Hours(2));
  EXPECT_EQ(c.collection.max_interval, absl::Hours(2));
  EXPECT_EQ(c.collection.gc_sample_interval, absl::Milliseconds(500));
  EXPECT_FALSE(c.watch.agents.Matches("org.gradle.launcher.daemon.bootstrap.GradleDaemon"));
  EXPECT_TRUE(c.watch.agents.Matches("LeakyApp"));
  EXPECT_EQ(c.exporter.top_classes, 7);
  EXPECT_EQ(c.trend.trend.window_snapshots, 20u);
  EXPECT_EQ(c.trend.trend.min_snapshots, 10u);
  EXPECT_EQ(c.trend.trend.warmup_snapshots, 5u);
  EXPECT_EQ(c.trend.trend.warmup, absl::Minutes(2));
  EXPECT_DOUBLE_EQ(c.trend.trend.max_p_value, 0.05);
  EXPECT_EQ(c.trend.trend.min_growth_bytes, 2u << 20);
  EXPECT_DOUBLE_EQ(c.trend.trend.min_growth_bytes_per_second, 100.5);
  EXPECT_DOUBLE_EQ(c.trend.trend.min_relative_growth, 0.2);
  EXPECT_EQ(c.trend.trend.segments, 4u);
  EXPECT_DOUBLE_EQ(c.trend.trend.min_step_fraction, 0.5);
  EXPECT_EQ(c.trend.trend.recent_snapshots, 3u);
  EXPECT_EQ(c.trend.trend.peak_lookback_snapshots, 40u);
  EXPECT_EQ(c.trend.trend.confirm_snapshots, 2u);
  EXPECT_EQ(c.trend.trend.clear_snapshots, 3u);
  EXPECT_FALSE(c.trend.enable_time_scales);
  EXPECT_EQ(c.trend.min_time_scale, absl::Seconds(10));
  EXPECT_EQ(c.trend.max_time_scale, absl::Hours(2));
  EXPECT_EQ(c.trend.scale_window_buckets, 20u);
  EXPECT_EQ(c.trend.scale_min_buckets, 9u);
  EXPECT_EQ(c.trend.scale_lookback_buckets, 60u);
  EXPECT_EQ(c.trend.cycle_lookback, absl::Hours(12));
  EXPECT_DOUBLE_EQ(c.trend.group_min_correlation, 0.5);
  EXPECT_EQ(c.retention.max_age, absl::Hours(168));
  EXPECT_EQ(c.retention.max_bytes, uint64_t{1} << 30);
  EXPECT_EQ(c.retention.check_interval, absl::Minutes(1));
  const EscalationConfig& e = c.escalation;
  EXPECT_FALSE(e.enabled);
  EXPECT_FALSE(e.automatic);
  EXPECT_EQ(e.min_dump_interval, absl::Hours(2));
  EXPECT_EQ(e.join_window, absl::Seconds(30));
  EXPECT_EQ(e.max_concurrent_analyses, 3);
  EXPECT_EQ(e.max_queued, 5);
  EXPECT_EQ(e.max_analysis_memory_bytes, uint64_t{2} << 30);
  EXPECT_EQ(e.max_dump_disk_bytes, uint64_t{8} << 30);
  EXPECT_EQ(e.dump_dir, "/var/tmp/dumps");
  EXPECT_FALSE(e.gzip);
  EXPECT_TRUE(e.keep_raw_dumps);
  EXPECT_EQ(e.dump_timeout, absl::Minutes(10));
  EXPECT_EQ(e.exclude_patterns, (std::vector<std::string>{"org\\.example\\..*", "java.*"}));
  EXPECT_EQ(e.top_objects, 7);
  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c);
}

TEST(Config, EscalationDefaultsAreTheDocumentedOnes) {
  const EscalationConfig e = Config().escalation;
  EXPECT_TRUE(e.enabled);
  EXPECT_TRUE(e.automatic);
  EXPECT_EQ(e.min_dump_interval, absl::Hours(1));
  EXPECT_EQ(e.join_window, absl::Minutes(1));
  EXPECT_EQ(e.max_concurrent_analyses, 1);
  EXPECT_EQ(e.max_queued, 8);
  EXPECT_EQ(e.max_analysis_memory_bytes, uint64_t{4} << 30);
  EXPECT_EQ(e.max_dump_disk_bytes, uint64_t{16} << 30);
  EXPECT_EQ(e.dump_dir, "");
  EXPECT_TRUE(e.gzip);
  EXPECT_FALSE(e.keep_raw_dumps);
  EXPECT_EQ(e.dump_timeout, absl::Minutes(30));
  EXPECT_EQ(e.top_objects, 20);
}

TEST(Config, AbsentKeysKeepTheBase) {
  Config base;
  base.data_dir = "/somewhere";
  auto c = ParseConfigYaml("collection:\n  interval: 2s\n", base, "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->data_dir, "/somewhere");
  EXPECT_EQ(c->collection.interval, absl::Seconds(2));
  EXPECT_EQ(c->collection.concurrency, 2);
  auto empty = ParseConfigYaml("", base, "x");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->data_dir, "/somewhere");
}

TEST(Config, UnknownKeysAreErrorsNamingTheKeyAndLine) {
  auto top = ParseConfigYaml("data_dir: x\ndatadir: y\n", Config(), "a.yaml");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(top.status().message(), HasSubstr("'datadir' (line 2)"));
  EXPECT_THAT(top.status().message(), HasSubstr("a.yaml"));

  auto nested = ParseConfigYaml("collection:\n  interval: 2s\n  intervall: 3s\n", Config(), "b");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.status().message(), HasSubstr("'collection.intervall' (line 3)"));

  auto trend = ParseConfigYaml("trend:\n  window: 3\n", Config(), "c");
  ASSERT_FALSE(trend.ok());
  EXPECT_THAT(trend.status().message(), HasSubstr("'trend.window'"));

  auto filter = ParseConfigYaml("watch:\n  agents:\n    includes: [a]\n", Config(), "d");
  ASSERT_FALSE(filter.ok());
  EXPECT_THAT(filter.status().message(), HasSubstr("'watch.agents.includes'"));
}

TEST(Config, WrongTypesAndRangesAreErrors) {
  struct Case {
    const char* yaml;
    const char* expect;
  } cases[] = {
      {"collection:\n  interval: 5\n", "collection.interval"},
      {"collection:\n  interval: [1s]\n", "collection.interval"},
      {"collection:\n  jitter: 0.9\n", "collection.jitter"},
      {"collection:\n  concurrency: many\n", "collection.concurrency"},
      {"collection:\n  concurrency: 0\n", "collection.concurrency"},
      {"export:\n  top_classes: -1\n", "export.top_classes"},
      {"retention:\n  max_bytes: 10GB\n", "retention.max_bytes"},
      {"escalation:\n  max_concurrent_analyses: 17\n", "escalation.max_concurrent_analyses"},
      {"escalation:\n  max_queued: 0\n", "escalation.max_queued"},
      {"escalation:\n  dump_timeout: 5\n", "escalation.dump_timeout"},
      {"escalation:\n  max_dump_disk_bytes: lots\n", "escalation.max_dump_disk_bytes"},
      {"escalation:\n  keep_raw_dumps: maybe\n", "escalation.keep_raw_dumps"},
      {"watch:\n  agents:\n    include: a\n", "watch.agents.include"},
      {"collection: 3\n", "collection"},
      {"- a\n- b\n", "mapping"},
      {"data_dir: [unclosed\n", "invalid YAML"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseConfigYaml(c.yaml, Config(), "f");
    ASSERT_FALSE(parsed.ok()) << c.yaml;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.expect)) << c.yaml;
  }
}

TEST(Config, ValidateRejectsInconsistentValues) {
  Config c;
  c.collection.pause_budget = 0;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.pause_budget"));
  c = Config();
  c.collection.pause_budget = 1.5;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.pause_budget"));
  c = Config();
  c.collection.pause_budget_window = absl::Milliseconds(10);
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.pause_budget_window"));
  c = Config();
  c.collection.confirmation_window = absl::Milliseconds(10);
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.confirmation_window"));
  c = Config();
  c.collection.gc_sample_interval = absl::Milliseconds(10);
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.gc_sample_interval"));
  c = Config();
  c.collection.max_interval = absl::ZeroDuration();
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.max_interval"));
  c = Config();
  c.collection.backoff_max = absl::Seconds(1);
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.backoff_max"));
  c = Config();
  c.collection.interval = absl::Milliseconds(10);
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("collection.interval"));
  c = Config();
  c.log_level = "loud";
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("log_level"));
  c = Config();
  c.trend.trend.min_snapshots = c.trend.trend.window_snapshots + 1;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("trend"));
  // The time-scale fields are checked by diff::ValidateLeakOptions, named in the message.
  c = Config();
  c.trend.min_time_scale = absl::ZeroDuration();
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("min_time_scale"));
  c = Config();
  c.trend.max_time_scale = c.trend.min_time_scale / 2;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("max_time_scale"));
  c = Config();
  c.trend.scale_window_buckets = 41;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("scale_window_buckets"));
  c = Config();
  c.trend.group_min_correlation = 1.5;
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("group_min_correlation"));
}

TEST(Config, YamlOutputParsesBackToTheSameConfig) {
  auto c = ParseConfigYaml(
      "data_dir: /d\ncollection:\n  interval: 1m30s\n  jitter: 0.15\n  all_objects:\n    include: "
      "['a.*']\ntrend:\n  max_p_value: 0.025\n  min_growth_bytes: 3000000\n  max_time_scale: 1h30m\n  "
      "time_scales: false\nretention:\n  "
      "max_bytes: "
      "12345\n",
      Config(), "x");
  ASSERT_TRUE(c.ok()) << c.status();
  std::string yaml = ConfigToYaml(*c);
  auto back = ParseConfigYaml(yaml, Config(), "printed");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(ConfigToYaml(*back), yaml);
  EXPECT_EQ(back->collection.interval, absl::Seconds(90));
  EXPECT_EQ(back->collection.jitter, 0.15);
  EXPECT_EQ(back->trend.trend.max_p_value, 0.025);
  EXPECT_EQ(back->trend.trend.min_growth_bytes, 3000000u);
  EXPECT_EQ(back->trend.max_time_scale, absl::Minutes(90));
  EXPECT_FALSE(back->trend.enable_time_scales);
  EXPECT_EQ(back->retention.max_bytes, 12345u);
  EXPECT_EQ(back->collection.all_objects.include, std::vector<std::string>{"a.*"});
  EXPECT_THAT(yaml, HasSubstr("interval: 1m30s"));
}

class CommandLineTest : public ::testing::Test {
 protected:
  CommandLine Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "heapwatchd");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    out_.str("");
    err_.str("");
    return ParseCommandLine(static_cast<int>(argv.size()), argv.data(), out_, err_);
  }
  std::string WriteFile(const std::string& text) {
    std::string path = ::testing::TempDir() + "/heapwatch_config_test.yaml";
    std::ofstream(path) << text;
    return path;
  }
  std::ostringstream out_, err_;
};

TEST_F(CommandLineTest, NoArgumentsGivesTheDefaults) {
  CommandLine cl = Parse({});
  ASSERT_FALSE(cl.exit_code.has_value()) << err_.str();
  EXPECT_EQ(cl.config.grpc_listen, "127.0.0.1:7750");
  EXPECT_EQ(cl.config.data_dir, "./data");
  EXPECT_FALSE(cl.print_config);
}

TEST_F(CommandLineTest, FlagsOverrideTheFile) {
  std::string path = WriteFile(
      "data_dir: /from/file\ngrpc_listen: 127.0.0.1:1\ncollection:\n  interval: 10m\n  "
      "concurrency: 3\n");
  CommandLine cl =
      Parse({"--config", path, "--data-dir", "/from/flag", "--interval", "1h30m",
             "--metrics-listen", "127.0.0.1:0", "--grpc-port-file", "/tmp/p", "--metrics-port-file",
             "/tmp/m", "--top-classes", "5", "--log-level", "warn", "--print-config"});
  ASSERT_FALSE(cl.exit_code.has_value()) << err_.str();
  EXPECT_EQ(cl.config.data_dir, "/from/flag");
  EXPECT_EQ(cl.config.grpc_listen, "127.0.0.1:1");  // from the file, no flag
  EXPECT_EQ(cl.config.metrics_listen, "127.0.0.1:0");
  EXPECT_EQ(cl.config.collection.interval, absl::Minutes(90));
  EXPECT_EQ(cl.config.collection.concurrency, 3);
  EXPECT_EQ(cl.config.grpc_port_file, "/tmp/p");
  EXPECT_EQ(cl.config.metrics_port_file, "/tmp/m");
  EXPECT_EQ(cl.config.exporter.top_classes, 5);
  EXPECT_EQ(cl.config.log_level, "warn");
  EXPECT_TRUE(cl.print_config);
}

TEST_F(CommandLineTest, HelpListsTheFlagsAndExitsZero) {
  CommandLine cl = Parse({"--help"});
  ASSERT_TRUE(cl.exit_code.has_value());
  EXPECT_EQ(*cl.exit_code, 0);
  for (const char* flag :
       {"--config", "--data-dir", "--grpc-listen", "--metrics-listen", "--interval",
        "--grpc-port-file", "--metrics-port-file", "--print-config"}) {
    EXPECT_THAT(out_.str(), HasSubstr(flag));
  }
}

TEST_F(CommandLineTest, UsageErrorsExitTwo) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"--bogus"},
                                             {"--interval", "5"},
                                             {"--interval", "-2s"},
                                             {"--concurrency", "x"},
                                             {"--config", "/nonexistent/heapwatch.yaml"},
                                             {"--log-level", "loud"},
                                             {"extra"}}) {
    CommandLine cl = Parse(args);
    ASSERT_TRUE(cl.exit_code.has_value()) << args[0];
    EXPECT_EQ(*cl.exit_code, 2) << args[0];
    EXPECT_FALSE(err_.str().empty()) << args[0];
  }
  std::string path = WriteFile("collection:\n  intervall: 3s\n");
  CommandLine cl = Parse({"--config", path});
  ASSERT_TRUE(cl.exit_code.has_value());
  EXPECT_EQ(*cl.exit_code, 2);
  EXPECT_THAT(err_.str(), HasSubstr("collection.intervall"));
}

TEST(ByteSize, Suffixes) {
  Config c;
  auto p = ParseConfigYaml("retention:\n  max_bytes: 512MiB\n", c, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->retention.max_bytes, 512u << 20);
  p = ParseConfigYaml("retention:\n  max_bytes: 4096\n", c, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->retention.max_bytes, 4096u);
  p = ParseConfigYaml("retention:\n  max_bytes: 2 KiB\n", c, "x");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->retention.max_bytes, 2048u);
}

// A control character in a string value is an error naming the key: ConfigToYaml could not write
// it back (fuzz/config_fuzzer.cc found "log_level: info<CR>   # comment", whose carriage return
// yaml-cpp keeps, written back as a line break).
TEST(Config, ControlCharactersInStringsAreErrors) {
  auto c = ParseConfigYaml("grpc_port_file: ab\r   # comment\n", Config(), "t.yml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("grpc_port_file"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("control characters (byte 0x0d"), std::string::npos)
      << c.status();
  c = ParseConfigYaml("watch:\n  agents:\n    include: [\"a\\x01b\"]\n", Config(), "t.yml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("watch.agents.include"), std::string::npos) << c.status();
  // Invalid UTF-8: an overlong encoding of 0x16 (yaml-cpp would write the control character back),
  // a lone continuation byte, a truncated sequence.
  for (const char* bad : {"a\xc0\x96b", "a\x80", "a\xe2\x82", "a\xed\xa0\x80"}) {
    c = ParseConfigYaml(std::string("grpc_port_file: \"") + bad + "\"\n", Config(), "t.yml");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("must be valid UTF-8"), std::string::npos) << c.status();
  }
  c = ParseConfigYaml("grpc_port_file: \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x98\"\n", Config(),
                      "t.yml");
  ASSERT_TRUE(c.ok()) << c.status();
  // A tab is kept, and what is accepted is written back unchanged.
  c = ParseConfigYaml("grpc_port_file: \"a\\tb\"\n", Config(), "t.yml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->grpc_port_file, "a\tb");
  auto again = ParseConfigYaml(ConfigToYaml(*c), Config(), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->grpc_port_file, "a\tb");
}

}  // namespace
}  // namespace heapwatch::daemon
