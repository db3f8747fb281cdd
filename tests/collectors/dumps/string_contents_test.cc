// ReadStringContents (collectors/dumps/string_contents.h) on synthetic HPROF dumps: JDK 9+ compact
// strings (LATIN1 and UTF16 coder), JDK 8 strings and bare char[] names, surrogate pairs, the
// length bound, strings whose array is missing, and a truncated file (an error, never a crash).
#include "collectors/dumps/string_contents.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/thread_names.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/dumps/hprof_test_writer.h"

namespace heapwatch::dumps {
namespace {

using analysis::HeapGraph;
using analysis::ObjectIndex;
using hprof::testing::HprofWriter;

constexpr uint8_t kObj = 2, kChar = 5, kByte = 8, kInt = 10;
constexpr uint64_t kObject = 0x100, kString = 0x120, kByteArray = 0x180, kCharArray = 0x190,
                   kString8 = 0x1a0;
constexpr uint64_t kNameValue = 0x9001, kNameHash = 0x9002, kNameCoder = 0x9003;

// A PRIMITIVE ARRAY DUMP with the given contents (already big-endian for char[]).
std::string Array(const HprofWriter& w, uint64_t id, uint8_t type, uint32_t length,
                  const std::string& data) {
  std::string s = w.PrimitiveArray(id, type, 0);
  // Patch the length (after tag, id, serial) and append the data.
  const size_t at = 1 + w.id_size() + 4;
  for (int k = 0; k < 4; ++k) s[at + k] = static_cast<char>(length >> (24 - 8 * k));
  return s + data;
}

std::string Ids(const HprofWriter& w, uint64_t id) { return w.Ids({id}); }

std::string Utf16Le(const std::u16string& s) {
  std::string out;
  for (char16_t c : s) out += {static_cast<char>(c & 0xff), static_cast<char>(c >> 8)};
  return out;
}
std::string Utf16Be(const std::u16string& s) {
  std::string out;
  for (char16_t c : s) out += {static_cast<char>(c >> 8), static_cast<char>(c & 0xff)};
  return out;
}

class StringContentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/hw-strings-XXXXXX";
    const int fd = ::mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = name;
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // A dump with: a LATIN1 string, a UTF16 string (with a surrogate pair), a JDK 8 String class
  // (no coder, char[] value; a second class named java.lang.String would be odd, so JDK 8 strings
  // are their own dump below), a bare char[], a string whose array is not in the dump, a long one.
  HeapGraph Write(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary) << bytes;
    auto graph = ReadHeapDump(path_);
    EXPECT_TRUE(graph.ok()) << graph.status();
    return graph.ok() ? std::move(*graph) : HeapGraph();
  }

  std::string path_;
};

void WriteJdk17Classes(HprofWriter& w) {
  w.String(kNameValue, "value").String(kNameHash, "hash").String(kNameCoder, "coder");
  w.NamedClass(kObject, "java/lang/Object").NamedClass(kString, "java/lang/String");
  w.NamedClass(kByteArray, "[B").NamedClass(kCharArray, "[C");
  w.Sub(w.ClassDump(kObject, 0, 0, 0, {}));
  // JDK 17 order: value, hash, coder.
  w.Sub(w.ClassDump(kString, kObject, 0, w.id_size() + 5,
                    {{kNameValue, kObj}, {kNameHash, kInt}, {kNameCoder, kByte}}));
}

std::string StringData(const HprofWriter& w, uint64_t value, uint8_t coder) {
  return Ids(w, value) + std::string(4, '\0') + std::string(1, static_cast<char>(coder));
}

TEST_F(StringContentsTest, CompactStringsUtf16AndBareCharArrays) {
  HprofWriter w;
  WriteJdk17Classes(w);
  const std::string latin1 = "pool-3-thread-7 caf\xe9";  // é in LATIN1
  const std::u16string utf16 = u"Überprüfung-日本-\U0001F600";
  std::string long_name(300, 'x');
  w.Sub(w.Instance(0x1000, kString, StringData(w, 0x2000, 0)));
  w.Sub(Array(w, 0x2000, kByte, latin1.size(), latin1));
  w.Sub(w.Instance(0x1010, kString, StringData(w, 0x2010, 1)));
  w.Sub(Array(w, 0x2010, kByte, utf16.size() * 2, Utf16Le(utf16)));
  w.Sub(Array(w, 0x2020, kChar, 5, Utf16Be(u"main8")));          // a JDK 8 Thread.name char[]
  w.Sub(w.Instance(0x1030, kString, StringData(w, 0x9999, 0)));  // value array not in the dump
  w.Sub(w.Instance(0x1040, kString, StringData(w, 0x2040, 0)));
  w.Sub(Array(w, 0x2040, kByte, long_name.size(), long_name));
  w.Sub(w.Instance(0x1050, kString, StringData(w, 0x2050, 7)));  // not a coder a JVM writes
  w.Sub(Array(w, 0x2050, kByte, 3, "abc"));
  w.FlushHeapDump();
  const HeapGraph graph = Write(w.take());
  std::vector<ObjectIndex> objects;
  for (uint64_t id : {0x1000, 0x1010, 0x2020, 0x1030, 0x1040, 0x1050, 0x2000}) {
    objects.push_back(graph.FindObject(id));
  }
  auto contents = ReadStringContents(path_, graph, objects, 128);
  ASSERT_TRUE(contents.ok()) << contents.status();
  auto at = [&](uint64_t id) { return contents->at(graph.FindObject(id).value); };
  EXPECT_EQ(at(0x1000).utf8, "pool-3-thread-7 caf\xc3\xa9");
  EXPECT_FALSE(at(0x1000).truncated);
  EXPECT_EQ(at(0x1010).utf8,
            "\xc3\x9c"
            "berpr\xc3\xbc"
            "fung-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80");
  EXPECT_EQ(at(0x2020).utf8, "main8");
  EXPECT_FALSE(contents->contains(graph.FindObject(0x1030).value));
  EXPECT_EQ(at(0x1040).utf8, std::string(128, 'x'));
  EXPECT_TRUE(at(0x1040).truncated);
  EXPECT_FALSE(contents->contains(graph.FindObject(0x1050).value));
  EXPECT_EQ(at(0x2000).utf8, "pool-3-thread-7 caf\xc3\xa9");  // a bare byte[] reads as LATIN1

  // Nothing asked, nothing read; a file cut short is an error, not a crash.
  auto none = ReadStringContents(path_, graph, {}, 128);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  const auto size = std::filesystem::file_size(path_);
  std::filesystem::resize_file(path_, size - 20);
  auto cut = ReadStringContents(path_, graph, objects, 128);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss) << cut.status();
}

TEST_F(StringContentsTest, Jdk8StringsWithCharArrays) {
  HprofWriter w(4);
  w.String(kNameValue, "value").String(kNameHash, "hash");
  w.NamedClass(kObject, "java/lang/Object").NamedClass(kString8, "java/lang/String");
  w.NamedClass(kCharArray, "[C");
  w.Sub(w.ClassDump(kObject, 0, 0, 0, {}));
  w.Sub(w.ClassDump(kString8, kObject, 0, 8, {{kNameValue, kObj}, {kNameHash, kInt}}));
  w.Sub(w.Instance(0x1000, kString8, Ids(w, 0x2000) + std::string(4, '\0')));
  w.Sub(Array(w, 0x2000, kChar, 9, Utf16Be(u"Finalizer")));
  // An unpaired high surrogate at the end and a lone low one in the middle.
  w.Sub(w.Instance(0x1010, kString8, Ids(w, 0x2010) + std::string(4, '\0')));
  w.Sub(Array(w, 0x2010, kChar, 3,
              Utf16Be(u"a\xDC00"
                      u"b")));
  w.FlushHeapDump();
  const HeapGraph graph = Write(w.take());
  const ObjectIndex objects[] = {graph.FindObject(0x1000), graph.FindObject(0x1010)};
  auto contents = ReadStringContents(path_, graph, objects);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->at(objects[0].value).utf8, "Finalizer");
  EXPECT_EQ(contents->at(objects[1].value).utf8,
            "a\xef\xbf\xbd"
            "b");
}

TEST(Utf16ToUtf8, SurrogatesAndBounds) {
  const uint16_t pair[] = {0xD83D, 0xDE00};
  EXPECT_EQ(Utf16ToUtf8(pair), "\xf0\x9f\x98\x80");
  const uint16_t lone[] = {0xD83D, 0x41};
  EXPECT_EQ(Utf16ToUtf8(lone),
            "\xef\xbf\xbd"
            "A");
  EXPECT_EQ(Utf16ToUtf8({}), "");
}

// Real dumps of other projects (../shared/corpora, eclipse-mat): the names of the JVM's own
// threads, read from JDK 6 and JDK 8 dumps (Thread.name is a char[]) and a JDK 11 one (a compact
// String, gzip-compressed).
TEST(StringContentsCorpora, ThreadNamesOfRealDumps) {
  const char* env = std::getenv("HEAPWATCH_CORPORA_DIR");
  const std::string corpora = env != nullptr && *env != '\0' ? env : HW_CORPORA_DIR;
  for (const char* file :
       {"eclipse-mat/sun_jdk6_18_x64.hprof", "eclipse-mat/oracle_jdk8_05_x64.hprof",
        "eclipse-mat/openjdk_jdk11_04_x64.hprof.gz"}) {
    SCOPED_TRACE(file);
    const std::string path = corpora + "/" + file;
    auto graph = ReadHeapDump(path);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const auto threads = analysis::ThreadNameObjects(*graph);
    ASSERT_GE(threads.size(), 4u);
    std::vector<ObjectIndex> names;
    for (const auto& [thread, name] : threads) names.push_back(name);
    auto contents = ReadStringContents(path, *graph, names);
    ASSERT_TRUE(contents.ok()) << contents.status();
    std::vector<std::string> read;
    for (const auto& [thread, name] : threads) {
      auto it = contents->find(name.value);
      if (it != contents->end()) read.push_back(it->second.utf8);
    }
    EXPECT_EQ(read.size(), threads.size());
    EXPECT_THAT(read, ::testing::IsSupersetOf(
                          {"main", "Finalizer", "Reference Handler", "Signal Dispatcher"}));
  }
}

}  // namespace
}  // namespace heapwatch::dumps
