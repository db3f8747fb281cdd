// The configuration keys of the interned-string watch and of the daemon's thread-name setting
// (daemon/config.h): collection.string_table_interval and escalation.thread_names, their defaults,
// parsing, validation and YAML round trip.
#include <string>

#include "daemon/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::daemon {
namespace {

using ::testing::HasSubstr;

TEST(ConfigInterned, Defaults) {
  const Config c;
  EXPECT_EQ(c.collection.string_table_interval, absl::Minutes(5));
  EXPECT_EQ(c.escalation.thread_names, analysis::ThreadNamePrivacy::kMasked);
}

TEST(ConfigInterned, ParsesBothKeys) {
  auto c = ParseConfigYaml(
      "collection:\n  string_table_interval: 90s\nescalation:\n  thread_names: full\n", Config(),
      "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collection.string_table_interval, absl::Seconds(90));
  EXPECT_EQ(c->escalation.thread_names, analysis::ThreadNamePrivacy::kFull);
  c = ParseConfigYaml("collection:\n  string_table_interval: 0\nescalation:\n  thread_names: off\n",
                      Config(), "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collection.string_table_interval, absl::ZeroDuration());
  EXPECT_EQ(c->escalation.thread_names, analysis::ThreadNamePrivacy::kOff);
  EXPECT_TRUE(ValidateConfig(*c).ok());
  c = ParseConfigYaml("escalation:\n  thread_names: masked\n", Config(), "x");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->escalation.thread_names, analysis::ThreadNamePrivacy::kMasked);
}

TEST(ConfigInterned, RejectsBadValues) {
  auto c = ParseConfigYaml("escalation:\n  thread_names: everything\n", Config(), "y.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("escalation.thread_names"));
  EXPECT_THAT(c.status().message(), HasSubstr("masked"));
  c = ParseConfigYaml("collection:\n  string_table_interval: -5s\n", Config(), "y.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("collection.string_table_interval"));
  Config bad;
  bad.collection.string_table_interval = absl::Milliseconds(10);
  EXPECT_THAT(ValidateConfig(bad).message(), HasSubstr("collection.string_table_interval"));
}

TEST(ConfigInterned, YamlRoundTrip) {
  Config c;
  c.collection.string_table_interval = absl::Minutes(7);
  c.escalation.thread_names = analysis::ThreadNamePrivacy::kOff;
  auto back = ParseConfigYaml(ConfigToYaml(c), Config(), "round");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << ConfigToYaml(c);
  EXPECT_EQ(back->collection.string_table_interval, absl::Minutes(7));
  EXPECT_EQ(back->escalation.thread_names, analysis::ThreadNamePrivacy::kOff);
  c.collection.string_table_interval = absl::ZeroDuration();
  back = ParseConfigYaml(ConfigToYaml(c), Config(), "round");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << ConfigToYaml(c);
  EXPECT_EQ(back->collection.string_table_interval, absl::ZeroDuration());
}

}  // namespace
}  // namespace heapwatch::daemon
