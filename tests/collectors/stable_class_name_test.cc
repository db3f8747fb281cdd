// StableClassName (common/stable_class_name.h) on every form it rewrites and on names it must leave
// alone, the histogram parser's merging of rows that get the same name, and the real-JVM check: two
// runs of HwLambdaApp whose start-up differs give different JVM names but the same stable names.
#include "common/stable_class_name.h"

#include <set>
#include <sstream>
#include <string>

#include "collectors/attach.h"
#include "collectors/class_histogram.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::ClassesDir;
using testing::JvmLaunch;
using testing::TestJvm;

TEST(StableClassNameTest, LambdaProxyClasses) {
  // JDK 15-20: counter and hidden-class address.
  EXPECT_EQ(StableClassName("com.acme.Foo$$Lambda$14/0x0000000801234567"), "com.acme.Foo$$Lambda");
  EXPECT_EQ(StableClassName("Foo$Inner$$Lambda$1/0x00007fe0ec000c18"), "Foo$Inner$$Lambda");
  // JDK 21+: no counter.
  EXPECT_EQ(StableClassName("com.acme.Foo$$Lambda/0x0000000801234567"), "com.acme.Foo$$Lambda");
  // JDK 8: counter and identity hash in decimal.
  EXPECT_EQ(StableClassName("com.acme.Foo$$Lambda$3/1283928880"), "com.acme.Foo$$Lambda");
  // HPROF internal form ("+0x") and the dotted form of it.
  EXPECT_EQ(StableClassName("com/acme/Foo$$Lambda$14+0x0000000800c03000"), "com/acme/Foo$$Lambda");
  EXPECT_EQ(StableClassName("com.acme.Foo$$Lambda$14+0x0000000800c03000"), "com.acme.Foo$$Lambda");
  // Without an address (some tools strip it).
  EXPECT_EQ(StableClassName("com.acme.Foo$$Lambda$14"), "com.acme.Foo$$Lambda");
}

TEST(StableClassNameTest, OtherHiddenClasses) {
  EXPECT_EQ(StableClassName("java.lang.invoke.LambdaForm$MH/0x0000000800c04000"),
            "java.lang.invoke.LambdaForm$MH");
  EXPECT_EQ(StableClassName("java.lang.invoke.LambdaForm$DMH/0x00007fbb20002c68"),
            "java.lang.invoke.LambdaForm$DMH");
  EXPECT_EQ(StableClassName("com.acme.Generated/0xABCDEF"), "com.acme.Generated");
}

TEST(StableClassNameTest, ReflectionAccessors) {
  EXPECT_EQ(StableClassName("jdk.internal.reflect.GeneratedMethodAccessor12"),
            "jdk.internal.reflect.GeneratedMethodAccessor");
  EXPECT_EQ(StableClassName("jdk.internal.reflect.GeneratedConstructorAccessor3"),
            "jdk.internal.reflect.GeneratedConstructorAccessor");
  EXPECT_EQ(StableClassName("jdk.internal.reflect.GeneratedSerializationConstructorAccessor41"),
            "jdk.internal.reflect.GeneratedSerializationConstructorAccessor");
  EXPECT_EQ(StableClassName("sun.reflect.GeneratedMethodAccessor7"),
            "sun.reflect.GeneratedMethodAccessor");
  EXPECT_EQ(StableClassName("jdk/internal/reflect/GeneratedMethodAccessor1"),
            "jdk/internal/reflect/GeneratedMethodAccessor");
  // Only in the JDK's packages: an application class of that name is the application's.
  EXPECT_EQ(StableClassName("com.acme.GeneratedMethodAccessor12"),
            "com.acme.GeneratedMethodAccessor12");
}

TEST(StableClassNameTest, Proxies) {
  EXPECT_EQ(StableClassName("jdk.proxy2.$Proxy17"), "jdk.proxy.$Proxy");
  EXPECT_EQ(StableClassName("jdk.proxy1.$Proxy0"), "jdk.proxy.$Proxy");
  EXPECT_EQ(StableClassName("com.sun.proxy.$Proxy17"), "com.sun.proxy.$Proxy");
  EXPECT_EQ(StableClassName("$Proxy5"), "$Proxy");
  EXPECT_EQ(StableClassName("com.acme.$Proxy3"), "com.acme.$Proxy");
}

TEST(StableClassNameTest, Arrays) {
  EXPECT_EQ(StableClassName("com.acme.Foo$$Lambda$14/0x0000000801234567[]"),
            "com.acme.Foo$$Lambda[]");
  EXPECT_EQ(StableClassName("jdk.proxy2.$Proxy17[][]"), "jdk.proxy.$Proxy[][]");
  EXPECT_EQ(StableClassName("int[]"), "int[]");
}

TEST(StableClassNameTest, OrdinaryAndLookAlikeNamesUnchanged) {
  for (const char* name : {"java.lang.String",
                           "java.util.HashMap$Node",
                           "byte[]",
                           "java.lang.Object[][]",
                           "Foo",
                           "",
                           "[]",
                           "/",
                           "/0x12",
                           "Foo$$Lambda$x",
                           "Foo$$Lambda$",
                           "Foo$$Lambda$14/0x",
                           "Foo$$Lambda$14/0xZZ",
                           "com.acme.$ProxyFactory",
                           "$Proxy",
                           "jdk.proxyX.$Proxy1x",
                           "com.acme.Foo/123",
                           "jdk.internal.reflect.GeneratedMethodAccessor",
                           "jdk.internal.reflect.GeneratedMethodAccessorImpl",
                           "Foo$$EnhancerByCGLIB$$1a2b"}) {
    EXPECT_EQ(StableClassName(name), name) << name;
  }
}

TEST(StableClassNameTest, Idempotent) {
  for (const char* name :
       {"com.acme.Foo$$Lambda$14/0x0000000801234567", "jdk.proxy2.$Proxy17[]",
        "jdk.internal.reflect.GeneratedMethodAccessor12", "java.lang.invoke.LambdaForm$MH/0x1"}) {
    const std::string once = StableClassName(name);
    EXPECT_EQ(StableClassName(once), once) << name;
  }
}

TEST(StableClassNameTest, HistogramRowsOfOneStableNameAreSummed) {
  const std::string text =
      " num     #instances         #bytes  class name (module)\n"
      "-------------------------------------------------------\n"
      "   1:           100           1600  Foo$$Lambda$1/0x0000000800c01000\n"
      "   2:            50           1000  java.lang.String (java.base@17.0.15)\n"
      "   3:            40            640  Foo$$Lambda$2/0x0000000800c02000\n"
      "   4:             2             32  [LFoo$$Lambda$3/0x0000000800c03000;\n"
      "   5:             1             16  jdk.proxy1.$Proxy0\n"
      "   6:             1             16  jdk.proxy2.$Proxy7\n"
      "Total           194           3304\n";
  auto h = ParseClassHistogram(text);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->rows.size(), 4u);
  EXPECT_EQ(h->rows[0], (ClassHistogramRow{"Foo$$Lambda", "", 140, 2240}));
  EXPECT_EQ(h->rows[1], (ClassHistogramRow{"java.lang.String", "java.base@17.0.15", 50, 1000}));
  EXPECT_EQ(h->rows[2], (ClassHistogramRow{"Foo$$Lambda[]", "", 2, 32}));
  EXPECT_EQ(h->rows[3], (ClassHistogramRow{"jdk.proxy.$Proxy", "", 2, 32}));
  EXPECT_EQ(h->total_instances, 194u);
  EXPECT_EQ(h->total_bytes, 3304u);
}

// The names of one run of HwLambdaApp ("reverse" changes its start-up order): the JVM's own
// (from jcmd) and heapwatch's (through the parser) of the classes the test is about.
struct RunNames {
  std::set<std::string> jvm;
  std::set<std::string> stable;
};

bool Generated(const std::string& name) {
  return name.find("HwLambdaApp") != std::string::npos ||
         name.find(".$Proxy") != std::string::npos || name.find("Generated") != std::string::npos;
}

RunNames RunOnce(bool reverse) {
  RunNames out;
  std::vector<std::string> program = {"-cp", ClassesDir(), "HwLambdaApp"};
  if (reverse) program.push_back("reverse");
  TestJvm jvm(JvmLaunch{.program = program});
  EXPECT_EQ(jvm.error(), "");
  auto local = jvm.Discover();
  EXPECT_TRUE(local.has_value());
  if (!local) return out;
  auto text = ExecuteJcmd(*local, "GC.class_histogram", AttachOptions{});
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return out;
  auto h = ParseClassHistogram(*text);
  EXPECT_TRUE(h.ok()) << h.status();
  if (!h.ok()) return out;
  for (const ClassHistogramRow& r : h->rows) {
    if (Generated(r.class_name)) out.stable.insert(r.class_name);
  }
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string num, instances, bytes, name;
    if (words >> num >> instances >> bytes >> name && Generated(name)) out.jvm.insert(name);
  }
  return out;
}

TEST(StableClassNameRealJvmTest, TwoRunsGiveTheSameNames) {
  const RunNames first = RunOnce(false);
  const RunNames second = RunOnce(true);
  // The JVM's names differ between the runs (counters, addresses) ...
  ASSERT_FALSE(first.jvm.empty());
  EXPECT_NE(first.jvm, second.jvm);
  EXPECT_THAT(first.jvm, ::testing::Contains(::testing::HasSubstr("$$Lambda$")));
  // ... heapwatch's do not.
  EXPECT_EQ(first.stable, second.stable);
  EXPECT_THAT(first.stable,
              ::testing::IsSupersetOf({"HwLambdaApp$Views$$Lambda", "HwLambdaApp$Handlers$$Lambda",
                                       "HwLambdaApp$$Lambda", "jdk.proxy.$Proxy",
                                       "jdk.internal.reflect.GeneratedMethodAccessor"}));
  for (const std::string& name : first.stable) {
    EXPECT_EQ(name.find("/0x"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace heapwatch::collectors
