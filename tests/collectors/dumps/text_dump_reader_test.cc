// The IBM text ("classic") heap dump reader (collectors/dumps/ibm_text) on files written by hand
// from IBM's documentation of the format (tests/collectors/dumps/data/ibm_text, see its README.md):
// the Java 7+ J9 layout, the Java 6 J9 2.5 layout (class block references and nulls listed) and
// seed 000's HeapRoots example lines; then hostile and damaged variants.
#include "collectors/dumps/ibm_text/text_dump_reader.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::dumps::ibm_text {
namespace {

namespace fs = std::filesystem;
using analysis::GcRootKind;
using analysis::HeapGraph;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string DataFile(const std::string& name) {
  return std::string(HW_DUMPS_TEST_DATA) + "/ibm_text/" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

HeapGraph ReadFile(const std::string& name, const ReadOptions& options = {}) {
  auto g = ReadTextDumpGraph(DataFile(name), options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(g).value() : HeapGraph();
}

HeapGraph ReadBytes(const std::string& bytes, const ReadOptions& options = {}) {
  auto g = ReadTextDumpGraphFromBuffer(bytes, options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(g).value() : HeapGraph();
}

std::vector<uint64_t> Refs(const HeapGraph& g, uint64_t id) {
  std::vector<uint64_t> out;
  const ObjectIndex v = g.FindObject(id);
  EXPECT_TRUE(v.valid()) << std::hex << id;
  if (!v.valid()) return out;
  for (ObjectIndex t : g.graph().successors(v)) out.push_back(g.object_id(t));
  return out;
}

std::string ClassName(const HeapGraph& g, uint64_t id) {
  return g.class_info(g.class_of(g.FindObject(id))).name;
}

std::set<uint64_t> RootIds(const HeapGraph& g, GcRootKind kind) {
  std::set<uint64_t> out;
  for (const auto& r : g.gc_roots()) {
    if (r.kind == kind) out.insert(g.object_id(r.object));
  }
  return out;
}

TEST(TextDumpReaderTest, J9Java7Layout) {
  const HeapGraph g = ReadFile("j9_java7.txt");
  EXPECT_EQ(g.info().format, "IBM text heap dump");
  EXPECT_EQ(g.info().id_size, 8u);
  EXPECT_EQ(g.info().size_model, analysis::SizeModel::kIbm);
  EXPECT_THAT(g.info().size_model_notes, HasSubstr("JRE 1.7.0 Linux amd64-64"));
  ASSERT_EQ(g.object_count(), 11u);  // 7 OBJ + 4 CLS records
  EXPECT_EQ(g.graph().edge_count(), 8u);
  EXPECT_THAT(Refs(g, 0xE0001000), ElementsAre(0xE0001020));
  EXPECT_THAT(Refs(g, 0xE0001020), ElementsAre());
  EXPECT_THAT(Refs(g, 0xE0001040), ElementsAre(0xE0001058, 0xE0001000));
  EXPECT_THAT(Refs(g, 0xE0001070), ElementsAre(0xE0001040, 0xE0001058, 0xE0001040));
  EXPECT_THAT(Refs(g, 0xF0000100), ElementsAre(0xE0001070));  // Node's static
  EXPECT_EQ(ClassName(g, 0xE0001000), "java.lang.String");
  EXPECT_EQ(ClassName(g, 0xE0001020), "char[]");
  EXPECT_EQ(ClassName(g, 0xE0001070), "com.acme.Node[]");
  EXPECT_EQ(ClassName(g, 0xE00010B0), "java.lang.Object");
  EXPECT_TRUE(g.class_info(g.class_of(g.FindObject(0xE00010B0))).synthetic);  // no CLS record
  EXPECT_EQ(g.kind(g.FindObject(0xE0001070)), ObjectKind::kObjectArray);
  EXPECT_EQ(g.array_length(g.FindObject(0xE0001070)), 3u);
  EXPECT_EQ(g.kind(g.FindObject(0xE0001020)), ObjectKind::kPrimitiveArray);
  EXPECT_EQ(g.kind(g.FindObject(0xF0000100)), ObjectKind::kClass);
  // Sizes as the records give them.
  const std::vector<std::pair<uint64_t, uint64_t>> sizes = {
      {0xE0001000, 32}, {0xE0001020, 32}, {0xE0001040, 24}, {0xE0001058, 24},
      {0xE0001070, 40}, {0xE0001098, 24}, {0xE00010B0, 32}, {0xF0000100, 104},
      {0xF0000200, 96}, {0xF0000300, 88}, {0xF0000400, 88}};
  uint64_t total = 0;
  for (const auto& [id, size] : sizes) {
    EXPECT_EQ(g.shallow_size(g.FindObject(id)), size) << std::hex << id;
    total += size;
  }
  // The histogram has no row for class objects when the dump has no java.lang.Class.
  EXPECT_EQ(ComputeClassHistogram(g).total_bytes, total - 104 - 96 - 88 - 88);
  // The trailer agrees: no warnings. Roots: what nothing references.
  EXPECT_THAT(g.info().warnings, ElementsAre(HasSubstr("pure roots")));
  EXPECT_TRUE(g.info().roots_inferred);
  EXPECT_THAT(
      RootIds(g, GcRootKind::kPureRoot),
      UnorderedElementsAre(0xE0001098, 0xE00010B0, 0xF0000100, 0xF0000200, 0xF0000300, 0xF0000400));
  EXPECT_THAT(RootIds(g, GcRootKind::kArtificialRoot), ::testing::IsEmpty());
}

TEST(TextDumpReaderTest, J9Java6LayoutListsClassBlocksAndNulls) {
  const HeapGraph g = ReadFile("j9_java6.txt");
  EXPECT_EQ(g.info().id_size, 4u);
  ASSERT_EQ(g.object_count(), 5u);
  // Class blocks without a CLS record are not objects (dropped, counted); nulls dropped; the
  // array's class block is the Entry class record.
  EXPECT_EQ(g.info().dangling_references, 3u);
  EXPECT_THAT(Refs(g, 0x00436E90), ElementsAre(0x00436EB0));
  EXPECT_THAT(Refs(g, 0x004380C0), ElementsAre(0x4158CD80, 0x00436F00, 0x00436F00));
  EXPECT_THAT(Refs(g, 0x00436F00), ElementsAre(0x00436E90, 0x00436E90));
  EXPECT_THAT(Refs(g, 0x4158CD80), ElementsAre(0x004380C0));
  EXPECT_THAT(Refs(g, 0x00436EB0), ElementsAre());          // char[]'s class block has no record
  EXPECT_EQ(g.array_length(g.FindObject(0x004380C0)), 5u);  // values listed, nulls included
  EXPECT_EQ(ClassName(g, 0x004380C0), "java.util.Hashtable$Entry[]");
  EXPECT_EQ(g.shallow_size(g.FindObject(0x4158CD80)), 168u);
  EXPECT_EQ(g.shallow_size(g.FindObject(0x00436EB0)), 44u);
  EXPECT_THAT(g.info().warnings, ElementsAre(HasSubstr("1 references listed by primitive arrays"),
                                             HasSubstr("pure roots")));
  // The array and its class record reference each other: a cycle no pure root reaches.
  EXPECT_THAT(RootIds(g, GcRootKind::kArtificialRoot), ElementsAre(0x004380C0));
}

TEST(TextDumpReaderTest, HeapRootsExampleLines) {
  const HeapGraph g = ReadFile("heaproots.txt");
  ASSERT_EQ(g.object_count(), 4u);
  EXPECT_THAT(Refs(g, 0x1018f030), ElementsAre(0x1018f050));
  EXPECT_THAT(Refs(g, 0x1018f078), ElementsAre(0x1018f088, 0x1018f030));
  EXPECT_EQ(ClassName(g, 0x1018f078), "Pair");
  EXPECT_EQ(g.shallow_size(g.FindObject(0x1018f050)), 40u);
  // Pair <-> Pair is a cycle nothing else references: its lower address is an artificial root.
  EXPECT_THAT(RootIds(g, GcRootKind::kArtificialRoot), ElementsAre(0x1018f078));
  EXPECT_THAT(RootIds(g, GcRootKind::kPureRoot), ::testing::IsEmpty());
}

TEST(TextDumpReaderTest, WindowsLineEndingsGzipAndClassEdges) {
  std::string crlf;
  for (char c : Slurp(DataFile("j9_java7.txt"))) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  const HeapGraph a = ReadBytes(crlf);
  EXPECT_EQ(a.object_count(), 11u);
  EXPECT_EQ(a.graph().edge_count(), 8u);
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string gz(deflateBound(&z, crlf.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(crlf.data());
  z.avail_in = static_cast<uInt>(crlf.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  deflate(&z, Z_FINISH);
  gz.resize(z.total_out);
  deflateEnd(&z);
  ReadOptions options;
  options.instance_class_edges = true;
  const HeapGraph b = ReadBytes(gz, options);
  EXPECT_EQ(b.object_count(), 11u);
  EXPECT_THAT(Refs(b, 0xE0001040), ElementsAre(0xF0000100, 0xE0001058, 0xE0001000));
  EXPECT_THAT(Refs(b, 0xE00010B0), ElementsAre());  // java/lang/Object has no CLS record
}

TEST(TextDumpReaderTest, TrailerMismatchesAndDuplicatesAreReported) {
  const std::string text =
      "// Version: test\n"
      "0x100 [16] OBJ A\n\t0x200 \n"
      "0x100 [16] OBJ A\n"  // repeats 0x100: dropped
      "0x0 [16] OBJ A\n"    // address 0: dropped
      "0x200 [24] OBJ A\n"  // another size than A's first instance
      "0x300 [8] CLS A\n"
      "0x300 [8] OBJ B\n"  // the class object's address: dropped
      "// Breakdown - Classes: 9, Objects: 1, ObjectArrays: 0, PrimitiveArrays: 0\n"
      "// EOF:  Total 'Objects',Refs(null) : 2,0(0)\n";
  const HeapGraph g = ReadBytes(text);
  EXPECT_EQ(g.object_count(), 3u);
  EXPECT_EQ(g.info().duplicate_objects, 1u);
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("at a class record's address")));
  EXPECT_EQ(g.shallow_size(g.FindObject(0x100)), 16u);
  EXPECT_EQ(g.shallow_size(g.FindObject(0x200)), 24u);
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("// Breakdown")));
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("// EOF line counts 2 records")));
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("address 0")));
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("repeat the address")));
  // A J9 file without the EOF line may be truncated.
  const HeapGraph cut = ReadBytes("// Version: test\n0x100 [16] OBJ A\n");
  EXPECT_THAT(cut.info().warnings, ::testing::Contains(HasSubstr("may be truncated")));
}

TEST(TextDumpReaderTest, AddressesSpanningMoreThanHalfTheAddressSpace) {
  // Found by the fuzzer: ids more than 2^63 apart made the id directory shift by 64 bits.
  const HeapGraph g = ReadBytes("0x1 [8] A 0xF000000000000000\n0xF000000000000000 [8] A\n");
  ASSERT_EQ(g.object_count(), 2u);
  EXPECT_THAT(Refs(g, 0x1), ElementsAre(0xF000000000000000u));
  EXPECT_EQ(g.FindObject(0x8000000000000000u), ObjectIndex());
}

TEST(TextDumpReaderTest, MalformedLinesGiveDataLossNamingTheLine) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"// Version: x\n0x10 [8] OBJ\n", "line 2 (offset 23): a record without a type"},
      {"// Version: x\n0x10 [8] OBJ A zz\n", "\"zz\" is not a hexadecimal address"},
      {"// Version: x\n0x10 [99999999999999] OBJ A\n", "beyond 2^40"},
      {"// Version: x\nhello world\n", "line 2 (offset 14): unexpected \"hello\""},
      {"// Version: x\n0x10 0x20\n", "references before any record"},
      {"// Version: x\n0x10 [8] OBJ A 0x11111111111111111\n", "not a hexadecimal"},
      {"// Version: x\n0x" + std::string(70000, 'a') + "\n", "a word longer than 65536 bytes"},
      {"0x10 0x20\n", "the first line is neither"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 60));
    auto g = ReadTextDumpGraphFromBuffer(c.text);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss) << g.status();
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(c.message));
  }
  EXPECT_EQ(ReadTextDumpGraphFromBuffer("").status().code(), absl::StatusCode::kInvalidArgument);
  ReadOptions second;
  second.dump_ordinal = 1;
  EXPECT_EQ(ReadTextDumpGraphFromBuffer("0x1 [8] A\n", second).status().code(),
            absl::StatusCode::kInvalidArgument);
  ReadOptions hotspot;
  hotspot.size_model = analysis::SizeModel::kHotSpot;
  EXPECT_EQ(ReadTextDumpGraphFromBuffer("0x1 [8] A\n", hotspot).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TextDumpReaderTest, EveryPrefixAndByteFlipIsSafe) {
  const std::string whole = Slurp(DataFile("j9_java6.txt"));
  for (size_t n = 0; n <= whole.size(); ++n) {
    auto g = ReadTextDumpGraphFromBuffer(whole.substr(0, n));
    if (!g.ok()) {
      EXPECT_TRUE(g.status().code() == absl::StatusCode::kDataLoss ||
                  g.status().code() == absl::StatusCode::kInvalidArgument)
          << n << ": " << g.status();
    }
  }
  for (size_t i = 0; i < whole.size(); ++i) {
    for (char c : {'\0', '\n', ' ', '[', 'z', '9', '\xff'}) {
      std::string damaged = whole;
      damaged[i] = c;
      (void)ReadTextDumpGraphFromBuffer(damaged);
    }
  }
}

TEST(TextDumpReaderTest, ReadHeapDumpSniffsBothLayouts) {
  for (const char* name : {"j9_java7.txt", "j9_java6.txt", "heaproots.txt"}) {
    SCOPED_TRACE(name);
    auto format = DetectDumpFormat(DataFile(name));
    ASSERT_TRUE(format.ok()) << format.status();
    EXPECT_EQ(*format, DumpFormat::kIbmText);
    auto g = ReadHeapDump(DataFile(name));
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(g->info().roots_inferred);
  }
  EXPECT_EQ(DumpFormatName(DumpFormat::kIbmText), "IBM text");
  EXPECT_FALSE(LooksLikeTextDump("0SECTION       TITLE subcomponent dump routine\n"));
  EXPECT_FALSE(LooksLikeTextDump(" num     #instances         #bytes  class name\n"));
  EXPECT_FALSE(LooksLikeTextDump("0x10 0x20\n"));
  EXPECT_TRUE(LooksLikeTextDump("0x1018f030 [32] java/lang/String 0x1018f050\n"));
}

}  // namespace
}  // namespace heapwatch::dumps::ibm_text
