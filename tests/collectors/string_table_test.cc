// ParseStringTable (collectors/string_table.h) on VM.stringtable output captured from real JDK 17
// and JDK 25 JVMs (data/jdk17_stringtable.txt, data/jdk25_stringtable.txt: `jcmd <pid>
// VM.stringtable` of a small program) and on malformed, truncated and error replies; then
// CollectStringTable over the attach socket of a real JDK 17 and JDK 25 JVM.
#include "collectors/string_table.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::Java25Path;
using testing::JavaPath;
using testing::JvmLaunch;
using testing::TestJvm;

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(HW_TEST_DATA) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(StringTableTest, ParsesJdk17Output) {
  auto s = ParseStringTable(ReadData("jdk17_stringtable.txt"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->buckets, 65536u);
  EXPECT_EQ(s->bucket_bytes, 524288u);
  EXPECT_EQ(s->entries, 3871u);
  EXPECT_EQ(s->entry_bytes, 61936u);
  EXPECT_EQ(s->literals, 3871u);
  EXPECT_EQ(s->literal_bytes, 251808u);
  EXPECT_EQ(s->footprint_bytes, 838032u);
  EXPECT_EQ(s->max_bucket, 3u);
  EXPECT_EQ(s->strings_bytes(), 61936u + 251808u);
}

TEST(StringTableTest, ParsesJdk25OutputAndSkipsTheSharedTable) {
  auto s = ParseStringTable(ReadData("jdk25_stringtable.txt"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->entries, 3992u);
  EXPECT_EQ(s->entry_bytes, 63872u);
  EXPECT_EQ(s->literals, 3992u);
  EXPECT_EQ(s->literal_bytes, 264088u);
  EXPECT_EQ(s->footprint_bytes, 852248u);
  // The shared table's "Maximum bucket size : 16" is not the dynamic table's.
  EXPECT_EQ(s->max_bucket, 3u);
}

TEST(StringTableTest, ParsesTheAttachReplyWithoutThePidLine) {
  std::string text = ReadData("jdk17_stringtable.txt");
  text = text.substr(text.find('\n') + 1);
  auto s = ParseStringTable(text);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->entries, 3871u);
}

TEST(StringTableTest, RejectsWhatIsNotAStringTable) {
  for (const std::string text :
       {std::string(""), std::string("\n\n"),
        std::string("java.lang.IllegalArgumentException: Unknown diagnostic command\n"),
        std::string("SymbolTable statistics:\nNumber of buckets : 1 = 8 bytes, each 8\n")}) {
    auto s = ParseStringTable(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  auto s = ParseStringTable("java.lang.IllegalArgumentException: Unknown diagnostic command\n");
  EXPECT_NE(s.status().message().find("Unknown diagnostic command"), std::string::npos)
      << s.status();
}

TEST(StringTableTest, RejectsMalformedMissingAndRepeatedLines) {
  const std::string good = ReadData("jdk17_stringtable.txt");
  struct Case {
    std::string from, to;
  };
  for (const Case& c : std::vector<Case>{
           {"      3871 =     61936 bytes", "      38x1 =     61936 bytes"},
           {"      3871 =     61936 bytes", "     -3871 =     61936 bytes"},
           {"     61936 bytes, each 16", "     61936 kB, each 16"},
           {"=    838032 bytes", "838032 bytes"},
           {"Number of entries       :", "Number of entries        "},
           {"Number of literals      :      3871 =    251808 bytes, avg  65.000\n", ""},
           {"Total footprint         :           =    838032 bytes\n", ""},
           {"Maximum bucket size     :         3",
            "Maximum bucket size     :         3\nNumber of entries : 1 = 16 bytes, each 16"},
           {"      3871 =     61936 bytes", "      99999999999999999999999 =     61936 bytes"},
           {"Maximum bucket size     :         3", "Maximum bucket size     :       3.5"},
       }) {
    std::string text = absl::StrReplaceAll(good, {{c.from, c.to}});
    ASSERT_NE(text, good) << c.from;
    auto s = ParseStringTable(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.to << ": " << s.status();
  }
}

TEST(StringTableTest, FootprintThatIsNotTheSumIsDataLoss) {
  std::string text = absl::StrReplaceAll(ReadData("jdk17_stringtable.txt"),
                                         {{"=    838032 bytes", "=    838033 bytes"}});
  EXPECT_EQ(ParseStringTable(text).status().code(), absl::StatusCode::kDataLoss);
  // A reply cut inside the literals line loses digits: the footprint no longer adds up, or a line
  // is missing.
  const std::string good = ReadData("jdk17_stringtable.txt");
  const size_t cut = good.find("251808") + 4;
  for (size_t n : {cut, good.find("Total footprint")}) {
    auto s = ParseStringTable(good.substr(0, n));
    EXPECT_FALSE(s.ok()) << n;
  }
}

TEST(StringTableTest, StatisticsUnavailableIsUnavailable) {
  auto s = ParseStringTable("12:\nstatistics unavailable at this moment\n");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
  s = ParseStringTable("StringTable statistics:\nstatistics unavailable at this moment\n");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
}

TEST(StringTableTest, BoundsTheReplyAndItsLines) {
  std::string big = ReadData("jdk17_stringtable.txt");
  big.append(kMaxStringTableReplyBytes, ' ');
  EXPECT_EQ(ParseStringTable(big).status().code(), absl::StatusCode::kInvalidArgument);
  std::string many = ReadData("jdk17_stringtable.txt");
  for (int i = 0; i < 100; ++i) many += "Average bucket size     :     0.059\n";
  auto s = ParseStringTable(many);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("more than 64 lines"), std::string::npos) << s.status();
}

void CollectFromRealJvm(const std::string& java) {
  JvmLaunch launch;
  launch.java = java;
  TestJvm jvm(launch);
  ASSERT_EQ(jvm.error(), "");
  std::optional<LocalJvm> local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto s = CollectStringTable(*local, AttachOptions{});
  ASSERT_TRUE(s.ok()) << s.status();
  // A small JVM with the JDK's CDS archive has few interned strings outside the archive's shared
  // table (7 on JDK 25, 31 on JDK 17 for HwTestApp), but some.
  EXPECT_GT(s->entries, 0u);
  EXPECT_EQ(s->entries, s->literals);
  EXPECT_GT(s->literal_bytes, s->entries * 24);
  EXPECT_GT(s->time, absl::Now() - absl::Minutes(1));
}

TEST(StringTableTest, CollectsFromARealJdk17) { CollectFromRealJvm(JavaPath()); }

TEST(StringTableTest, CollectsFromARealJdk25) {
  if (::access(Java25Path().c_str(), X_OK) != 0) GTEST_SKIP() << "no JDK 25 at " << Java25Path();
  CollectFromRealJvm(Java25Path());
}

}  // namespace
}  // namespace heapwatch::collectors
