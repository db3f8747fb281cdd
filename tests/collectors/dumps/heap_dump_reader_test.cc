// The dump readers' public entry (collectors/dumps/heap_dump_reader.h): format sniffing and
// dispatch on real files (plain and gzip), and the errors for files no reader takes.
#include "collectors/dumps/heap_dump_reader.h"

#include <cstdio>
#include <string>

#include "collectors/dumps/hprof/hprof_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/dumps/graph_compare.h"
#include "tests/collectors/dumps/hprof_test_writer.h"

namespace heapwatch::dumps {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string WriteFile(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + "/heap_dump_reader_test." + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

// A small HPROF heap: java.lang.Object, a Node class with one reference field, two nodes.
std::string SmallHprof() {
  hprof::testing::HprofWriter w(8);
  w.String(1, "next");
  w.NamedClass(0x100, "java/lang/Object").NamedClass(0x110, "com/example/Node");
  w.Sub(w.ClassDump(0x100, 0, 0, 0, {}));
  w.Sub(w.ClassDump(0x110, 0x100, 0, 8, {{1, 2}}));
  w.Sub(w.Root(0x01, 0x1000));
  w.Sub(w.Instance(0x1000, 0x110, w.Ids({0x1010})));
  w.Sub(w.Instance(0x1010, 0x110, w.Ids({0x1000})));
  w.FlushHeapDump();
  return w.take();
}

TEST(HeapDumpReaderTest, ReadsHprofPlainAndGzipLikeTheHprofReader) {
  std::string plain = WriteFile("hprof", SmallHprof());
  std::string gz = WriteFile("hprof.gz", hprof::testing::Gzip(SmallHprof(), 2));
  for (const std::string& path : {plain, gz}) {
    SCOPED_TRACE(path);
    auto format = DetectDumpFormat(path);
    ASSERT_TRUE(format.ok()) << format.status();
    EXPECT_EQ(*format, DumpFormat::kHprof);
    EXPECT_EQ(DumpFormatName(*format), "HPROF");
    ReadOptions options;
    options.instance_class_edges = true;
    auto g = ReadHeapDump(path, options);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->info().format, "JAVA PROFILE 1.0.2");
    EXPECT_EQ(g->object_count(), 4u);
    EXPECT_TRUE(g->info().instance_class_edges) << "options reach the reader";
    auto direct = hprof::ReadHeapGraph(path, options);
    ASSERT_TRUE(direct.ok()) << direct.status();
    hprof::testing::ExpectSameGraph(*g, *direct);
    std::remove(path.c_str());
  }
}

TEST(HeapDumpReaderTest, FilesNoReaderTakesAreNamed) {
  struct Case {
    std::string name;
    std::string bytes;
    absl::StatusCode code;
    std::string says;
  };
  std::string phd("\0\x12portable heap dump", 20);
  phd += std::string(64, '\0');
  const Case cases[] = {
      // A PHD of a version its reader does not know (the PHD reader is phd_reader_test.cc's).
      {"phd", phd, absl::StatusCode::kUnimplemented, "Portable Heap Dump version 0"},
      {"empty", "", absl::StatusCode::kInvalidArgument, "empty file"},
      {"txt", "hello\nworld\n", absl::StatusCode::kInvalidArgument, "text file"},
      {"hprof9", std::string("JAVA PROFILE 1.0.9\0", 19) + std::string(12, '\0'),
       absl::StatusCode::kUnimplemented, "1.0.9"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = WriteFile(c.name, c.bytes);
    auto g = ReadHeapDump(path);
    EXPECT_EQ(g.status().code(), c.code) << g.status();
    EXPECT_THAT(std::string(g.status().message()), StartsWith(path));
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(c.says));
    EXPECT_EQ(DetectDumpFormat(path).status().code(),
              c.name == "hprof9" || c.name == "phd" ? absl::StatusCode::kOk : c.code)
        << "an HPROF or PHD of an unknown version is still that format; its reader names the version";
    std::remove(path.c_str());
  }
  EXPECT_EQ(ReadHeapDump(::testing::TempDir() + "/no-such-dump.hprof").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace heapwatch::dumps
