#include "collectors/agent_identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include "absl/time/clock.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using ::testing::HasSubstr;

TEST(AgentIdTest, FormatIsDeterministicAndPrintable) {
  const absl::Time start = absl::FromUnixMillis(1'763'000'000'123);
  const AgentId a = MakeAgentId("build7.example.com", 4242, start);
  EXPECT_EQ(a, MakeAgentId("build7.example.com", 4242, start));
  // 1763000000123 in base 36.
  EXPECT_EQ(a.value, "build7.example.com-4242-mhwsoi9n");
  EXPECT_NE(a, MakeAgentId("build7.example.com", 4242, start + absl::Milliseconds(1)));
  EXPECT_NE(a, MakeAgentId("build7.example.com", 4243, start));
  EXPECT_NE(a, MakeAgentId("build8.example.com", 4242, start));
}

TEST(AgentIdTest, SanitisesHost) {
  const absl::Time t = absl::FromUnixMillis(36);
  EXPECT_EQ(MakeAgentId("", 1, t).value, "localhost-1-10");
  EXPECT_EQ(MakeAgentId("my host_ü", 1, t).value, "my-host----1-10");
  EXPECT_EQ(MakeAgentId("h", 7, absl::InfinitePast()).value, "h-7-0");
  const AgentId long_host = MakeAgentId(std::string(500, 'a'), 2147483647, absl::Now());
  EXPECT_LE(long_host.value.size(), 128u);
  const std::regex allowed("[A-Za-z0-9._:-]+");
  for (const std::string& host :
       {std::string("a b\tc\n"), std::string("\xff\x01"), std::string("x:y/z")}) {
    EXPECT_TRUE(std::regex_match(MakeAgentId(host, 1, absl::Now()).value, allowed)) << host;
  }
}

TEST(MainClassTest, FromJavaCommand) {
  EXPECT_EQ(MainClassFromJavaCommand("HwTestApp"), "HwTestApp");
  EXPECT_EQ(MainClassFromJavaCommand("com.example.Main --port 8080"), "com.example.Main");
  EXPECT_EQ(MainClassFromJavaCommand("/opt/app/app.jar serve"), "/opt/app/app.jar");
  EXPECT_EQ(MainClassFromJavaCommand("app.module/com.example.Main x"),
            "app.module/com.example.Main");
  // Source-file launcher, as captured from JDK 17 and JDK 25.
  EXPECT_EQ(
      MainClassFromJavaCommand("jdk.compiler/com.sun.tools.javac.launcher.Main HwTestApp.java"),
      "HwTestApp.java");
  EXPECT_EQ(MainClassFromJavaCommand(
                "jdk.compiler/com.sun.tools.javac.launcher.SourceLauncher HwTestApp.java a b"),
            "HwTestApp.java");
  EXPECT_EQ(MainClassFromJavaCommand(""), "");
  EXPECT_EQ(MainClassFromJavaCommand("   "), "");
}

TEST(JavaPropertiesTest, FindsEscapedValues) {
  // As written by java.util.Properties.store() (what the "properties" attach operation returns).
  const std::string text =
      "#Thu Nov 21 23:40:00 UTC 2025\n"
      "java.vm.version=17.0.15+6-Debian-1deb12u1\n"
      "sun.java.command=HwTestApp stdin\n"
      "line.separator=\\n\n"
      "path.with\\=equals=a\\:b\n"
      "unicode=caf\\u00E9 \\uD83D\\uDE00\n"
      "  spaced : value\n"
      "empty=\n";
  EXPECT_EQ(FindJavaProperty(text, "java.vm.version"), "17.0.15+6-Debian-1deb12u1");
  EXPECT_EQ(FindJavaProperty(text, "sun.java.command"), "HwTestApp stdin");
  EXPECT_EQ(FindJavaProperty(text, "line.separator"), "\n");
  EXPECT_EQ(FindJavaProperty(text, "path.with=equals"), "a:b");
  EXPECT_EQ(FindJavaProperty(text, "unicode"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(FindJavaProperty(text, "spaced"), "value");
  EXPECT_EQ(FindJavaProperty(text, "empty"), "");
  EXPECT_EQ(FindJavaProperty(text, "missing"), std::nullopt);
  EXPECT_EQ(FindJavaProperty("#only a comment\n", "x"), std::nullopt);
  // A lone surrogate (a Java String may hold one) becomes U+FFFD: the value stays valid UTF-8.
  EXPECT_EQ(FindJavaProperty("lone=a\\uDE00b\n", "lone"),
            "a\xef\xbf\xbd"
            "b");
}

TEST(AgentInfoTest, FromRealJvm) {
  const absl::Time before = absl::Now();
  testing::TestJvm jvm({});
  ASSERT_EQ(jvm.error(), "");
  const absl::Time after = absl::Now();
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto info = ReadAgentInfo(*local, "testhost");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->kind, AgentKind::kLocalAttach);
  EXPECT_EQ(info->host, "testhost");
  EXPECT_EQ(info->pid, jvm.pid());
  EXPECT_EQ(info->main_class, "HwTestApp");
  EXPECT_EQ(info->uid, ::geteuid());
  EXPECT_GE(info->start_time, before - absl::Seconds(1));
  EXPECT_LE(info->start_time, after);
  EXPECT_EQ(info->id, MakeAgentId("testhost", jvm.pid(), info->start_time));
  EXPECT_THAT(info->id.value, ::testing::StartsWith("testhost-" + std::to_string(jvm.pid()) + "-"));

  // Stable: reading again (as a restarted daemon would) gives the same identity and labels.
  auto again = ReadAgentInfo(*jvm.Discover(), "testhost");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *info);

  // The version label equals what the JVM itself reports over the attach API.
  auto props = ExecuteAttachOperation(*local, "properties", {"", "", ""}, AttachOptions{});
  ASSERT_TRUE(props.ok()) << props.status();
  ASSERT_EQ(props->status, 0);
  EXPECT_EQ(FindJavaProperty(props->output, "java.vm.version"), info->jvm_version);
  EXPECT_THAT(info->jvm_version, HasSubstr("17."));

  // CompleteAgentInfoViaAttach fills what is missing from the JVM's system properties ...
  AgentInfo partial = *info;
  partial.main_class.clear();
  partial.jvm_version.clear();
  auto completed = CompleteAgentInfoViaAttach(*local, partial, AttachOptions{});
  ASSERT_TRUE(completed.ok()) << completed.status();
  EXPECT_EQ(*completed, *info);
  // ... and does not attach when nothing is missing (works even for a bogus record).
  LocalJvm bogus = *local;
  bogus.pid = 999999999;
  auto untouched = CompleteAgentInfoViaAttach(bogus, *info, AttachOptions{});
  ASSERT_TRUE(untouched.ok());
  EXPECT_EQ(*untouched, *info);

  // Gone JVM: its file disappears or is stale.
  jvm.Kill();
  auto gone = ExecuteAttachOperation(*local, "properties", {"", "", ""}, AttachOptions{});
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kUnavailable) << gone.status();
  ::unlink(local->perfdata_path.c_str());  // SIGKILL left it behind
}

TEST(AgentInfoTest, MissingStartTimeIsAnError) {
  PerfData empty;
  LocalJvm jvm;
  jvm.pid = 5;
  auto info = AgentInfoFromPerfData(empty, jvm, "h");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace heapwatch::collectors
