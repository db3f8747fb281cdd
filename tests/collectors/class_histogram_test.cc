// ParseClassHistogram on real GC.class_histogram output captured from JDK 17 and JDK 25 (see
// data/capture_fixtures.sh) and on malformed, truncated and error replies.
#include "collectors/class_histogram.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::DataDir;
using ::testing::HasSubstr;
using testing::ReadFileOrDie;

std::string Fixture(const std::string& name) { return ReadFileOrDie(DataDir() + "/" + name); }

const ClassHistogramRow* FindRow(const ClassHistogram& h, std::string_view name) {
  for (const ClassHistogramRow& r : h.rows) {
    if (r.class_name == name) return &r;
  }
  return nullptr;
}

// Invariants of every successfully parsed real histogram.
void ExpectWellFormed(const ClassHistogram& h) {
  uint64_t instances = 0, bytes = 0;
  for (const ClassHistogramRow& r : h.rows) {
    EXPECT_FALSE(r.class_name.empty());
    EXPECT_NE(r.class_name[0], '[') << r.class_name;  // descriptors normalised to source form
    EXPECT_EQ(r.class_name.find(';'), std::string::npos) << r.class_name;
    EXPECT_EQ(r.class_name.find(' '), std::string::npos) << r.class_name;
    EXPECT_GT(r.instances, 0u);
    EXPECT_GT(r.bytes, 0u);
    instances += r.instances;
    bytes += r.bytes;
  }
  EXPECT_EQ(instances, h.total_instances);
  EXPECT_EQ(bytes, h.total_bytes);
}

struct FixtureCase {
  const char* file;
  size_t rows;
  uint64_t total_instances;
  uint64_t total_bytes;
  const char* module;  // module of java.lang.String
  uint64_t garbage;    // HwTestApp$Garbage instances (-all histograms: startup + one 'g' command)
  const char* lambda_prefix;
};

void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.file; }

class RealFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(RealFixtureTest, ParsesEveryRowAndTotals) {
  const FixtureCase& c = GetParam();
  auto h = ParseClassHistogram(Fixture(c.file));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->rows.size(), c.rows);
  EXPECT_EQ(h->total_instances, c.total_instances);
  EXPECT_EQ(h->total_bytes, c.total_bytes);
  ExpectWellFormed(*h);

  // HotSpot prints rows by descending size.
  for (size_t i = 1; i < h->rows.size(); ++i) EXPECT_GE(h->rows[i - 1].bytes, h->rows[i].bytes);

  const ClassHistogramRow* str = FindRow(*h, "java.lang.String");
  ASSERT_NE(str, nullptr);
  EXPECT_EQ(str->module, c.module);
  const ClassHistogramRow* bytes = FindRow(*h, "byte[]");  // printed as "[B"
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes->module, c.module);
  ASSERT_NE(FindRow(*h, "java.lang.Object[]"), nullptr);  // printed as "[Ljava.lang.Object;"

  // HwTestApp's own classes: unnamed module, exact counts (see HwTestApp.java).
  const ClassHistogramRow* leaf = FindRow(*h, "HwTestApp$Leaf");
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->module, "");
  EXPECT_EQ(leaf->instances, 1234u);
  EXPECT_EQ(leaf->bytes, 1234u * 24);  // 12-byte header + long, aligned to 8
  const ClassHistogramRow* leaves = FindRow(*h, "HwTestApp$Leaf[]");
  ASSERT_NE(leaves, nullptr);
  EXPECT_EQ(leaves->instances, 1u);
  EXPECT_EQ(leaves->bytes, 16u + 1234 * 4);  // array header + compressed references
  const ClassHistogramRow* garbage = FindRow(*h, "HwTestApp$Garbage");
  if (c.garbage > 0) {
    ASSERT_NE(garbage, nullptr);
    EXPECT_EQ(garbage->instances, c.garbage);
    EXPECT_EQ(garbage->bytes, c.garbage * 16);  // 12-byte header + int
  } else {
    EXPECT_EQ(garbage, nullptr);  // live histogram: collected by the full GC
  }
  // The lambda under its stable name (common/stable_class_name.h), the same on both JDKs.
  const ClassHistogramRow* lambda = FindRow(*h, c.lambda_prefix);
  ASSERT_NE(lambda, nullptr);
  EXPECT_EQ(lambda->instances, 1u);
  EXPECT_EQ(lambda->module, "");
}

INSTANTIATE_TEST_SUITE_P(
    Jdk17And25, RealFixtureTest,
    ::testing::Values(FixtureCase{"jdk17_live.txt", 229, 12012, 564496, "java.base@17.0.15", 0,
                                  "HwTestApp$$Lambda"},
                      FixtureCase{"jdk17_all.txt", 293, 21657, 6346568, "java.base@17.0.15", 6000,
                                  "HwTestApp$$Lambda"},
                      FixtureCase{"jdk25_live.txt", 287, 30480, 1365232, "java.base@25.0.3", 0,
                                  "HwTestApp$$Lambda"},
                      FixtureCase{"jdk25_all.txt", 350, 38114, 9656744, "java.base@25.0.3", 6000,
                                  "HwTestApp$$Lambda"}),
    [](const ::testing::TestParamInfo<FixtureCase>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(ClassHistogramTest, FixtureWithoutJcmdPidLineParsesTheSame) {
  const std::string text = Fixture("jdk17_live.txt");
  const std::string raw = text.substr(text.find('\n') + 1);  // what the attach reply carries
  auto a = ParseClassHistogram(text);
  auto b = ParseClassHistogram(raw);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(ClassHistogramTest, CrLfLineEndings) {
  std::string text = Fixture("jdk25_live.txt");
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  auto a = ParseClassHistogram(text);
  auto b = ParseClassHistogram(crlf);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
}

// JDK 8 layout: no module column, header without "(module)". Written by hand after JDK 8's
// KlassInfoEntry::print_on format ("%13ld  %13lu  %s"); no JDK 8 is installed to capture from.
TEST(ClassHistogramTest, Jdk8FormatWithoutModules) {
  const std::string text =
      " num     #instances         #bytes  class name\n"
      "----------------------------------------------\n"
      "   1:          2519         241568  [C\n"
      "   2:           526          60216  java.lang.Class\n"
      "   3:          2500          60000  java.lang.String\n"
      "   4:           120          12800  [[I\n"
      "   5:            10            480  [Ljava.util.HashMap$Node;\n"
      "Total          5675         375064\n";
  auto h = ParseClassHistogram(text);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->rows.size(), 5u);
  EXPECT_EQ(h->rows[0], (ClassHistogramRow{"char[]", "", 2519, 241568}));
  EXPECT_EQ(h->rows[3].class_name, "int[][]");
  EXPECT_EQ(h->rows[4].class_name, "java.util.HashMap$Node[]");
  for (const auto& r : h->rows) EXPECT_EQ(r.module, "");
  EXPECT_EQ(h->total_instances, 5675u);
  EXPECT_EQ(h->total_bytes, 375064u);
}

TEST(ClassHistogramTest, ModuleWithoutVersion) {
  const std::string text =
      " num     #instances         #bytes  class name (module)\n"
      "-------------------------------------------------------\n"
      "   1:             3             72  com.example.Thing (com.example)\n"
      "   2:             1             16  weird.Name (x) (app@1.0)\n"
      "Total             4             88\n";
  auto h = ParseClassHistogram(text);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->rows[0].class_name, "com.example.Thing");
  EXPECT_EQ(h->rows[0].module, "com.example");
  EXPECT_EQ(h->rows[1].class_name, "weird.Name (x)");
  EXPECT_EQ(h->rows[1].module, "app@1.0");
}

TEST(ClassHistogramTest, NormalizeClassName) {
  EXPECT_EQ(NormalizeClassName("[B"), "byte[]");
  EXPECT_EQ(NormalizeClassName("[Z"), "boolean[]");
  EXPECT_EQ(NormalizeClassName("[C"), "char[]");
  EXPECT_EQ(NormalizeClassName("[S"), "short[]");
  EXPECT_EQ(NormalizeClassName("[I"), "int[]");
  EXPECT_EQ(NormalizeClassName("[J"), "long[]");
  EXPECT_EQ(NormalizeClassName("[F"), "float[]");
  EXPECT_EQ(NormalizeClassName("[D"), "double[]");
  EXPECT_EQ(NormalizeClassName("[[[D"), "double[][][]");
  EXPECT_EQ(NormalizeClassName("[Ljava.lang.String;"), "java.lang.String[]");
  EXPECT_EQ(NormalizeClassName("[[Ljava.util.Map$Entry;"), "java.util.Map$Entry[][]");
  EXPECT_EQ(NormalizeClassName("java.lang.String"), "java.lang.String");
  EXPECT_EQ(NormalizeClassName("Foo$$Lambda/0x0000000800c03000"), "Foo$$Lambda/0x0000000800c03000");
  // Not descriptors: unchanged.
  EXPECT_EQ(NormalizeClassName("["), "[");
  EXPECT_EQ(NormalizeClassName("[X"), "[X");
  EXPECT_EQ(NormalizeClassName("[Ljava.lang.String"), "[Ljava.lang.String");
  EXPECT_EQ(NormalizeClassName("[L;"), "[L;");
  EXPECT_EQ(NormalizeClassName("byte[]"), "byte[]");
}

// --- error replies
// -------------------------------------------------------------------------------------

void ExpectError(const std::string& text, absl::StatusCode code, const std::string& fragment) {
  auto h = ParseClassHistogram(text);
  ASSERT_FALSE(h.ok()) << "parsed: " << text.substr(0, 200);
  EXPECT_EQ(h.status().code(), code) << h.status();
  EXPECT_THAT(std::string(h.status().message()), HasSubstr(fragment));
}

TEST(ClassHistogramTest, EmptyReplies) {
  ExpectError("", absl::StatusCode::kInvalidArgument, "empty");
  ExpectError("\n\n  \n", absl::StatusCode::kInvalidArgument, "empty");
  ExpectError("4242:\n", absl::StatusCode::kInvalidArgument, "no histogram header");
}

TEST(ClassHistogramTest, JvmErrorRepliesAreQuoted) {
  // Real attach replies (status line stripped, as ExecuteJcmd would have failed on them anyway).
  for (const char* file : {"jdk17_raw_unknown_command.txt", "jdk17_raw_bad_option.txt"}) {
    std::string reply = Fixture(file);
    ExpectError(reply.substr(reply.find('\n') + 1), absl::StatusCode::kInvalidArgument,
                "java.lang.IllegalArgumentException");
  }
  // What the jcmd tool prints for a JVM with attach disabled.
  ExpectError(Fixture("jdk17_jcmd_not_attachable.txt"), absl::StatusCode::kInvalidArgument,
              "AttachNotSupportedException");
  ExpectError("Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n",
              absl::StatusCode::kInvalidArgument, "Exception in thread");
  ExpectError("Operation nosuchop not recognized!", absl::StatusCode::kInvalidArgument,
              "not recognized");
}

TEST(ClassHistogramTest, Garbage) {
  ExpectError("\x01\x02\x03\xff\xfe garbage", absl::StatusCode::kInvalidArgument,
              "not a class histogram");
  ExpectError(std::string(1000, 'x') + "\n", absl::StatusCode::kInvalidArgument,
              "not a class histogram");
  std::string nul_text = Fixture("jdk17_live.txt");
  nul_text[nul_text.size() / 2] = '\0';
  EXPECT_FALSE(ParseClassHistogram(nul_text).ok());
}

const char kHeader[] =
    " num     #instances         #bytes  class name (module)\n"
    "-------------------------------------------------------\n";

TEST(ClassHistogramTest, MalformedRows) {
  const std::string h = kHeader;
  ExpectError(h + "   1:            a1             16  A\nTotal 1 16\n",
              absl::StatusCode::kInvalidArgument, "malformed row at line 3");
  ExpectError(h + "   1:            -1             16  A\nTotal -1 16\n",
              absl::StatusCode::kInvalidArgument, "malformed row");
  ExpectError(h + "   1:             1             16\nTotal 1 16\n",
              absl::StatusCode::kInvalidArgument, "malformed row");
  ExpectError(h + "   1:             1  99999999999999999999999  A\nTotal 1 1\n",
              absl::StatusCode::kInvalidArgument, "malformed row");
  ExpectError(h + "   1:             1             16  A\n   3:             1             16  B\n"
                  "Total 2 32\n",
              absl::StatusCode::kInvalidArgument, "row number 3 where 2 was expected");
  ExpectError(h + "   1:             1             16  A\n\nTotal 1 16\n",
              absl::StatusCode::kInvalidArgument, "malformed row at line 4");
  ExpectError(h + "   1:             1             16  A\nTotal 1 16 17\n",
              absl::StatusCode::kInvalidArgument, "malformed Total line");
  ExpectError(h + "   1:             1             16  A\nTotal 1 16\nmore text\n",
              absl::StatusCode::kInvalidArgument, "text after the Total line");
  ExpectError(std::string(" num  something else\n") + "---\nTotal 0 0\n",
              absl::StatusCode::kInvalidArgument, "not a class histogram");
  ExpectError(h + "   1:  18446744073709551615             16  A\n"
                  "   2:             1             16  B\nTotal 0 32\n",
              absl::StatusCode::kInvalidArgument, "overflow");
}

TEST(ClassHistogramTest, TotalsMustMatchRows) {
  const std::string h = kHeader;
  ExpectError(h + "   1:             1             16  A\nTotal 2 16\n",
              absl::StatusCode::kDataLoss, "does not match the rows");
  ExpectError(h + "   1:             1             16  A\nTotal 1 24\n",
              absl::StatusCode::kDataLoss, "does not match the rows");
}

TEST(ClassHistogramTest, HeaderOnlyAndNoTotal) {
  ExpectError(" num     #instances         #bytes  class name (module)\n",
              absl::StatusCode::kDataLoss, "truncated after the header");
  ExpectError(kHeader, absl::StatusCode::kDataLoss, "no Total line after 0 rows");
  auto empty = ParseClassHistogram(std::string(kHeader) + "Total             0              0\n");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->rows.empty());
}

// Every prefix of a real reply that is shorter than the whole is rejected (never accepted as a
// smaller histogram, never a crash), with DataLoss or InvalidArgument.
TEST(ClassHistogramTest, EveryTruncationOfARealReplyIsRejected) {
  const std::string text = Fixture("jdk25_live.txt");
  ASSERT_TRUE(ParseClassHistogram(text).ok());
  size_t data_loss = 0;
  // Every cut in the first and last 2 KiB (header, first rows, last rows, Total line), every 7th
  // between.
  for (size_t len = 0; len < text.size(); len += (len < 2048 || len + 2048 > text.size()) ? 1 : 7) {
    auto h = ParseClassHistogram(std::string_view(text).substr(0, len));
    ASSERT_FALSE(h.ok()) << "prefix of " << len << " bytes was accepted";
    ASSERT_TRUE(h.status().code() == absl::StatusCode::kDataLoss ||
                h.status().code() == absl::StatusCode::kInvalidArgument)
        << h.status();
    if (h.status().code() == absl::StatusCode::kDataLoss) ++data_loss;
  }
  // Cuts after the header are reported as truncation.
  EXPECT_GT(data_loss, 4000u);
}

TEST(ClassHistogramTest, CorruptedDigitsAreCaughtByTotals) {
  const std::string text = Fixture("jdk17_live.txt");
  // Change one digit of one row's byte count: the Total line no longer matches.
  const size_t row = text.find("HwTestApp$Leaf\n");
  ASSERT_NE(row, std::string::npos);
  std::string bad = text;
  const size_t digit = bad.rfind("29616", row);
  ASSERT_NE(digit, std::string::npos);
  bad[digit] = '3';
  ExpectError(bad, absl::StatusCode::kDataLoss, "does not match the rows");
}

}  // namespace
}  // namespace heapwatch::collectors

namespace heapwatch::collectors {
namespace {

TEST(JavaFeatureVersionTest, EveryVersionScheme) {
  EXPECT_EQ(JavaFeatureVersion("17.0.15+6-Debian-1deb12u1"), 17);
  EXPECT_EQ(JavaFeatureVersion("25.0.3+9-LTS"), 25);
  EXPECT_EQ(JavaFeatureVersion("21"), 21);
  EXPECT_EQ(JavaFeatureVersion("9"), 9);
  EXPECT_EQ(JavaFeatureVersion("11.0.21+9"), 11);
  EXPECT_EQ(JavaFeatureVersion("1.8.0_392"), 8);
  EXPECT_EQ(JavaFeatureVersion("25.392-b08"), 8);  // JDK 8's java.vm.version
  EXPECT_EQ(JavaFeatureVersion(""), 0);
  EXPECT_EQ(JavaFeatureVersion("unknown"), 0);
}

TEST(ClassHistogramCommandTest, ParallelOnlyWhereTheJvmHasIt) {
  EXPECT_EQ(ClassHistogramCommand(false, 17, 2), "GC.class_histogram -parallel=2");
  EXPECT_EQ(ClassHistogramCommand(true, 25, 8), "GC.class_histogram -all -parallel=8");
  EXPECT_EQ(ClassHistogramCommand(true, 16, 4), "GC.class_histogram -all -parallel=4");
  EXPECT_EQ(ClassHistogramCommand(true, 15, 4), "GC.class_histogram -all");
  EXPECT_EQ(ClassHistogramCommand(false, 8, 4), "GC.class_histogram");
  EXPECT_EQ(ClassHistogramCommand(false, 0, 4), "GC.class_histogram");  // unknown version
  EXPECT_EQ(ClassHistogramCommand(true, 17, 0), "GC.class_histogram -all");
}

}  // namespace
}  // namespace heapwatch::collectors
