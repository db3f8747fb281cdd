// The IBM Portable Heap Dump reader (collectors/dumps/phd): every record form on dumps written by
// tests/collectors/dumps/phd_test_writer.h, hostile and truncated inputs, and the three PHD files
// of Eclipse MAT's test dumps (../shared/corpora/eclipse-mat, EXPECTED.md) with MAT's assertion on
// them: R retains 256 bytes in heapdump.20100112.141124.11580.0002.phd.
#include "collectors/dumps/phd/phd_reader.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/report.h"
#include "analysis/retained_size.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "collectors/dumps/phd/phd_format.h"
#include "collectors/dumps/stream_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/dumps/phd_test_writer.h"

namespace heapwatch::dumps::phd {
namespace {

namespace fs = std::filesystem;
using analysis::ClassId;
using analysis::GcRootKind;
using analysis::HeapGraph;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::PhdWriter;
using ::testing::UnorderedElementsAre;

std::string Corpora() {
  const char* env = std::getenv("HEAPWATCH_CORPORA_DIR");
  return env != nullptr && *env != '\0' ? env : HW_CORPORA_DIR;
}
std::string MatDump(const std::string& name) { return Corpora() + "/eclipse-mat/" + name; }
constexpr const char* k2010 = "heapdump.20100112.141124.11580.0002.phd";
constexpr const char* k2013 = "heapdump.20130429.083110.14261.0001.phd";
constexpr const char* k2016 = "heapdump.20160404.083909.9480.0002.phd";

HeapGraph Read(const std::string& bytes, const ReadOptions& options = {}) {
  auto g = ReadPhdGraphFromBuffer(bytes, options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(g).value() : HeapGraph();
}

ObjectIndex At(const HeapGraph& g, uint64_t id) {
  ObjectIndex v = g.FindObject(id);
  EXPECT_TRUE(v.valid()) << "no object 0x" << std::hex << id;
  return v;
}

// Raw ids of the successors of `id`.
std::vector<uint64_t> Refs(const HeapGraph& g, uint64_t id) {
  std::vector<uint64_t> out;
  for (ObjectIndex t : g.graph().successors(At(g, id))) out.push_back(g.object_id(t));
  return out;
}

// A small 32-bit J9 dump whose every object is hashed (the flags of the 2010 MAT file), with every
// record form.
std::string SampleJ9Dump32() {
  PhdWriter w(5, PhdWriter::kJ9 | PhdWriter::kAllHashed, "J2RE 6.0 test");
  w.Object(0x1000, 0x9000, {0x1010, 0x1020});                   // medium (class cache empty)
  w.Object(0x1010, 0x9000, {0x1000}, PhdWriter::Form::kShort);  // short (class from the cache)
  std::vector<uint64_t> many;
  for (int i = 0; i < 9; ++i) many.push_back(i % 2 ? 0x1010 : 0x1000);
  w.Object(0x1020, 0x9000, many);                         // long (9 references)
  w.ObjectArray(0x1100, 0x9000, {0x1000, 0x1010}, 4);     // NEW_OBJECT_ARRAY, 2 of 4 set
  w.ObjectArray(0x1200, 0x9100, {0x1100}, std::nullopt);  // OBJECT_ARRAY of Node[]
  w.PrimitiveArray(0x1300, 1, 5);                         // char[5], short record
  w.PrimitiveArray(0x1340, 4, 300);                       // byte[300], 2-byte fields
  w.PrimitiveArray(0x1500, 6, 2, /*long_record=*/true);   // int[2], long record
  w.Object(0x80000, 0x9000, {});                          // a gap of 4-byte field size
  w.Class(0x9000, "com/acme/Node", 20, 0x9300, {0x1000});
  w.Class(0x9100, "[Lcom/acme/Node;", 16, 0x9300, {});
  w.Class(0x9200, "[[Lcom/acme/Node;", 16, 0x9300, {});
  w.Class(0x9300, "java/lang/Object", 12, 0, {});
  w.Class(0x9400, "java/lang/Class", 36, 0x9300, {});
  w.Class(0x9500, "[C", 16, 0x9300, {});
  return w.Finish();
}

TEST(PhdReaderTest, ReadsEveryRecordFormOfA32BitJ9Dump) {
  const HeapGraph g = Read(SampleJ9Dump32());
  EXPECT_EQ(g.info().format, "portable heap dump 5");
  EXPECT_EQ(g.info().id_size, 4u);
  EXPECT_EQ(g.info().size_model, analysis::SizeModel::kIbm);
  ASSERT_EQ(g.object_count(), 15u);  // 9 records + 6 class objects
  // References as listed; the array's elements in index order; the long record's 9.
  EXPECT_THAT(Refs(g, 0x1000), ElementsAre(0x1010, 0x1020));
  EXPECT_THAT(Refs(g, 0x1010), ElementsAre(0x1000));
  EXPECT_EQ(Refs(g, 0x1020).size(), 9u);
  EXPECT_THAT(Refs(g, 0x1100), ElementsAre(0x1000, 0x1010));
  EXPECT_THAT(Refs(g, 0x1200), ElementsAre(0x1100));
  // A class object: "<super>", then the record's references as unnamed statics.
  EXPECT_THAT(Refs(g, 0x9000), ElementsAre(0x9300, 0x1000));
  EXPECT_EQ(g.DescribeReference(At(g, 0x9000), g.graph().first_edge(At(g, 0x9000)) + 1),
            "static <reference[0]>");
  // Classes: names in source form, array classes from the element classes the records name.
  const ObjectIndex node = At(g, 0x1000), arr = At(g, 0x1100), arr2 = At(g, 0x1200);
  EXPECT_EQ(g.class_info(g.class_of(node)).name, "com.acme.Node");
  EXPECT_EQ(g.class_info(g.class_of(arr)).name, "com.acme.Node[]");
  EXPECT_EQ(g.class_info(g.class_of(arr2)).name, "com.acme.Node[][]");
  EXPECT_EQ(g.class_info(g.class_of(At(g, 0x1300))).name, "char[]");
  EXPECT_EQ(g.class_info(g.class_of(At(g, 0x1340))).name, "byte[]");  // no record: synthetic
  EXPECT_TRUE(g.class_info(g.class_of(At(g, 0x1340))).synthetic);
  EXPECT_EQ(g.kind(arr), ObjectKind::kObjectArray);
  EXPECT_EQ(g.array_length(arr), 4u);
  EXPECT_EQ(g.array_length(arr2), 1u);
  EXPECT_EQ(g.array_length(At(g, 0x1340)), 300u);
  EXPECT_EQ(g.array_length(At(g, 0x1500)), 2u);
  EXPECT_EQ(g.kind(At(g, 0x9000)), ObjectKind::kClass);
  EXPECT_TRUE(g.IsSubclassOf(g.class_of(node), g.FindClass("java.lang.Object")));
  // Sizes: instance sizes rounded up to 8; arrays 2 x 4 + 8 + data, rounded up to 8; class objects
  // java.lang.Class's instance size.
  EXPECT_EQ(g.shallow_size(node), 24u);
  EXPECT_EQ(g.shallow_size(arr), 32u);             // 16 + 4 x 4
  EXPECT_EQ(g.shallow_size(At(g, 0x1300)), 32u);   // 16 + 5 x 2 = 26
  EXPECT_EQ(g.shallow_size(At(g, 0x1340)), 320u);  // 16 + 300
  EXPECT_EQ(g.shallow_size(At(g, 0x1500)), 24u);   // 16 + 2 x 4
  EXPECT_EQ(g.shallow_size(At(g, 0x9000)), 40u);
  EXPECT_EQ(g.DescribeReference(node, g.graph().first_edge(node) + 1), "<reference[1]>");
  // No root records: roots are inferred.
  EXPECT_TRUE(g.info().roots_inferred);
  std::set<uint64_t> roots;
  for (const auto& r : g.gc_roots()) roots.insert(g.object_id(r.object));
  // 0x1200 (nothing references it) and the classes nothing references; Node's cycle 0x1000 <->
  // 0x1010 is reached from 0x1200.
  EXPECT_TRUE(roots.contains(0x1200));
  EXPECT_FALSE(roots.contains(0x1000));
  EXPECT_TRUE(roots.contains(0x80000));
}

TEST(PhdReaderTest, InstanceClassEdgesComeFirst) {
  ReadOptions options;
  options.instance_class_edges = true;
  const HeapGraph g = Read(SampleJ9Dump32(), options);
  EXPECT_THAT(Refs(g, 0x1000), ElementsAre(0x9000, 0x1010, 0x1020));
  EXPECT_THAT(Refs(g, 0x1100), ElementsAre(0x9100, 0x1000, 0x1010));
  EXPECT_THAT(Refs(g, 0x1340), ElementsAre());  // byte[] has no class object
  // Class objects: java.lang.Class's class object, "<super>", the record's references.
  EXPECT_THAT(Refs(g, 0x9000), ElementsAre(0x9400, 0x9300, 0x1000));
}

TEST(PhdReaderTest, Version6With64BitAddressesRecordedSizesAndHashCodes) {
  PhdWriter w(6, PhdWriter::kJ9 | PhdWriter::k64Bit);
  const uint64_t base = 0x7f0000000000ull;
  w.Object(base, base + 0x100000, {base + 0x40}, PhdWriter::Form::kLong, /*hashed=*/true);
  w.PrimitiveArray(base + 0x40, 1, 3, false, /*recorded=*/16);  // 8 + 6 -> 16: a 8-byte header
  w.PrimitiveArray(base + 0x50, 4, 0, false, 16);               // empty arrays take 16 in J9
  w.PrimitiveArray(base + 0x60, 7, 1, true, 16);
  w.ObjectArray(base + 0x80, base + 0x100000, {base}, 3, 24);  // 8 + 3 x 4 = 20 -> 24
  w.Class(base + 0x100000, "com/acme/Big", 16, 0, {base}, /*hashed=*/true);
  w.Class(base + 0x100100, "[Lcom/acme/Big;", 16, 0, {});
  const HeapGraph g = Read(w.Finish());
  EXPECT_EQ(g.info().id_size, 8u);
  ASSERT_EQ(g.object_count(), 7u);
  EXPECT_THAT(Refs(g, base), ElementsAre(base + 0x40));
  EXPECT_THAT(Refs(g, base + 0x80), ElementsAre(base));
  EXPECT_EQ(g.shallow_size(At(g, base)), 16u);
  EXPECT_EQ(g.shallow_size(At(g, base + 0x40)), 16u);
  EXPECT_EQ(g.shallow_size(At(g, base + 0x50)), 16u);
  EXPECT_EQ(g.shallow_size(At(g, base + 0x60)), 16u);
  EXPECT_EQ(g.shallow_size(At(g, base + 0x80)), 24u);
  EXPECT_TRUE(g.info().layout.inferred);
  EXPECT_EQ(g.info().layout.array_length_offset, 4u);  // an 8-byte array header won the vote
  // The smallest instance is 16 bytes: compressed references (DTFJ's rule).
  EXPECT_EQ(g.info().layout.reference_size, 4u);
}

TEST(PhdReaderTest, Version4SovereignDumpsUse8ByteUnits) {
  PhdWriter w(4, 0);
  w.Object(0x10000, 0x20000, {0x10040});
  w.PrimitiveArray(0x10040, 6, 4);
  w.Class(0x20000, "Old", 16, 0, {});
  const HeapGraph g = Read(w.Finish());
  EXPECT_THAT(Refs(g, 0x10000), ElementsAre(0x10040));
  EXPECT_EQ(g.shallow_size(At(g, 0x10040)), 32u);  // 2 x 4 + 8 + 16
}

TEST(PhdReaderTest, J9FirstReferenceEqualToTheClassIsDropped) {
  PhdWriter w(5, PhdWriter::kJ9);
  w.Object(0x1000, 0x2000, {0x2000, 0x1000}, PhdWriter::Form::kLong);
  w.Object(0x1010, 0x2000, {0x1000, 0x2000}, PhdWriter::Form::kLong);  // not first: kept
  w.Class(0x2000, "A", 16, 0, {});
  const HeapGraph g = Read(w.Finish());
  EXPECT_THAT(Refs(g, 0x1000), ElementsAre(0x1000));
  EXPECT_THAT(Refs(g, 0x1010), ElementsAre(0x1000, 0x2000));
}

TEST(PhdReaderTest, ArraysNamingTheArrayClassAreTakenAsSuch) {
  // Every object array names an array class: the records give the array class itself (as DTFJ
  // concludes for such dumps).
  PhdWriter w(5, PhdWriter::kJ9);
  w.ObjectArray(0x1000, 0x3000, {}, 2);
  w.Class(0x2000, "E", 16, 0, {});
  w.Class(0x3000, "[LE;", 16, 0, {});
  w.Class(0x3100, "[[LE;", 16, 0, {});
  const HeapGraph g = Read(w.Finish());
  EXPECT_EQ(g.class_info(g.class_of(At(g, 0x1000))).name, "E[]");
}

TEST(PhdReaderTest, ClassesWithoutRecordsGetASizeFromTheSpacing) {
  PhdWriter w(5, PhdWriter::kJ9);
  w.Object(0x1000, 0x5000, {});
  w.Object(0x1018, 0x5000, {});  // 24 bytes after the first
  w.Object(0x1040, 0x5000, {});  // 40 after the second: the smallest distance wins
  w.ObjectArray(0x1080, 0x5000, {0x1000}, 1);
  const HeapGraph g = Read(w.Finish());
  const ClassId c = g.class_of(At(g, 0x1000));
  EXPECT_EQ(g.class_info(c).name, "unknown class 0x5000");
  EXPECT_TRUE(g.class_info(c).synthetic);
  EXPECT_EQ(g.shallow_size(At(g, 0x1000)), 24u);
  EXPECT_EQ(g.class_info(g.class_of(At(g, 0x1080))).name, "unknown class 0x5000[]");
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("no class record")));
}

TEST(PhdReaderTest, LoopingSuperclassesDuplicatesAndAddressZeroAreTolerated) {
  PhdWriter w(5, PhdWriter::kJ9);
  w.Object(0x1000, 0x2000, {0x1010});
  w.Object(0x1000, 0x2000, {});  // repeats 0x1000: dropped
  w.Object(0x1010, 0x2000, {});
  w.Object(0x0, 0x2000, {});     // address 0 (the gap goes back): dropped
  w.Object(0x2000, 0x2000, {});  // the class object's address: dropped
  w.Class(0x2000, "A", 16, 0x2100, {});
  w.Class(0x2100, "B", 16, 0x2000, {});  // A -> B -> A
  const HeapGraph g = Read(w.Finish());
  EXPECT_EQ(g.object_count(), 4u);
  EXPECT_THAT(Refs(g, 0x1000), ElementsAre(0x1010));
  EXPECT_EQ(g.info().duplicate_objects, 1u);
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("at a class record's address")));
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("loops")));
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("address 0")));
}

TEST(PhdReaderTest, ArrayLengthsCannotMakeTheReaderAllocateWithoutBound) {
  // An object array claims 2^31 - 1 elements with one listed: its null slots would exceed the
  // budget (64 per byte of the file + 16 M), so it keeps only the listed element; its size still
  // follows the length it claims.
  PhdWriter w(5, PhdWriter::kJ9);
  w.ObjectArray(0x1000, 0x2000, {0x1000}, 0x7fffffff);
  w.ObjectArray(0x1100, 0x2000, {0x1000}, 3);  // within the budget: padded to its length
  w.Class(0x2000, "E", 16, 0, {});
  w.Class(0x2100, "[LE;", 16, 0, {});
  const HeapGraph g = Read(w.Finish());
  EXPECT_EQ(g.array_length(At(g, 0x1000)), 1u);
  EXPECT_EQ(g.shallow_size(At(g, 0x1000)), (16u + 4u * 0x7fffffffull + 7) / 8 * 8);
  EXPECT_EQ(g.array_length(At(g, 0x1100)), 3u);
  EXPECT_THAT(g.info().warnings, ::testing::Contains(HasSubstr("keep only their listed")));
}

TEST(PhdReaderTest, RejectsWhatIsNotAPhdOrAnUnknownVersion) {
  auto not_phd = ReadPhdGraphFromBuffer("JAVA PROFILE 1.0.2");
  EXPECT_EQ(not_phd.status().code(), absl::StatusCode::kInvalidArgument);
  auto empty = ReadPhdGraphFromBuffer("");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  std::string v7 = PhdWriter(5, 0).Finish();
  v7[23] = 7;
  auto version = ReadPhdGraphFromBuffer(v7);
  EXPECT_EQ(version.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(version.status().message()), HasSubstr("version 7"));
  ReadOptions second;
  second.dump_ordinal = 1;
  EXPECT_EQ(ReadPhdGraphFromBuffer(SampleJ9Dump32(), second).status().code(),
            absl::StatusCode::kInvalidArgument);
  ReadOptions hotspot;
  hotspot.size_model = analysis::SizeModel::kHotSpot;
  EXPECT_EQ(ReadPhdGraphFromBuffer(SampleJ9Dump32(), hotspot).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PhdReaderTest, CorruptRecordsGiveDataLossNamingTheOffset) {
  struct Case {
    std::string name;
    std::string bytes;
    std::string message;
  };
  std::vector<Case> cases;
  {
    PhdWriter w(5, PhdWriter::kJ9);
    w.Raw("\x09");
    cases.push_back({"unknown tag", w.bytes(), "unknown record tag 0x09 at offset"});
  }
  {
    PhdWriter w(5, PhdWriter::kJ9);
    w.Raw(std::string("\x04\x00\x01\x00\x00\x20\x00\xff\xff\xff\xff", 11));  // count -1
    cases.push_back({"negative count", w.Finish(), "negative reference count"});
  }
  {
    PhdWriter w(5, PhdWriter::kJ9);
    w.Raw(std::string("\x04\x00\x01\x00\x00\x20\x00\x7f\xff\xff\xff\x01", 12));  // 2^31 - 1 refs
    cases.push_back({"huge count", w.bytes(), "in reference 1 of 2147483647"});
  }
  {
    PhdWriter w(5, PhdWriter::kJ9 | PhdWriter::k64Bit);
    // A long primitive array record with an 8-byte length of 2^40.
    w.Raw(std::string("\x07\xd2\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x01\x00\x00\x00\x00\x00",
                      18));
    cases.push_back({"huge length", w.Finish(), "beyond 2^32-1"});
  }
  {
    PhdWriter w(5, PhdWriter::kJ9);
    w.Raw(std::string("\x08\x00\x01\x00\x00\x20\x00\x00\x00\x00\x00\x80\x00\x00\x00", 15));
    cases.push_back({"negative array length", w.Finish(), "not in 0..2^32-1"});
  }
  {
    PhdWriter w(5, PhdWriter::kJ9);
    w.Object(0x1000, 0x2000, {});
    cases.push_back({"no END_OF_DUMP", w.bytes(), "without the END_OF_DUMP record"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto g = ReadPhdGraphFromBuffer(c.bytes);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss) << g.status();
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(c.message));
  }
}

TEST(PhdReaderTest, EveryTruncationIsAnErrorAndEveryByteFlipIsSafe) {
  const std::string whole = SampleJ9Dump32();
  for (size_t n = 0; n < whole.size(); ++n) {
    auto g = ReadPhdGraphFromBuffer(whole.substr(0, n));
    ASSERT_FALSE(g.ok()) << "prefix of " << n << " bytes read as a dump";
    EXPECT_TRUE(g.status().code() == absl::StatusCode::kDataLoss ||
                g.status().code() == absl::StatusCode::kInvalidArgument)
        << n << ": " << g.status();
  }
  // Damaged bytes: any outcome but a crash (the sanitizer build and the fuzzer check memory).
  int ok = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::string damaged = whole;
      damaged[i] = static_cast<char>(damaged[i] ^ x);
      ok += ReadPhdGraphFromBuffer(damaged).ok();
    }
  }
  EXPECT_GT(ok, 0);
}

TEST(PhdReaderTest, ReadHeapDumpSniffsPhdFiles) {
  const std::string path = ::testing::TempDir() + "/sample.phd";
  {
    std::ofstream out(path, std::ios::binary);
    out << SampleJ9Dump32();
  }
  auto format = DetectDumpFormat(path);
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(*format, DumpFormat::kPhd);
  EXPECT_EQ(DumpFormatName(DumpFormat::kPhd), "PHD");
  auto g = ReadHeapDump(path);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->object_count(), 15u);
  std::string truncated = SampleJ9Dump32().substr(0, 60);
  {
    std::ofstream out(path, std::ios::binary);
    out << truncated;
  }
  auto bad = ReadHeapDump(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr(path));
  fs::remove(path);
}

// ---- Eclipse MAT's PHD files.

void RequireCorpora() {
  if (!fs::exists(MatDump(k2010))) GTEST_SKIP() << "corpora not found at " << Corpora();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct Analysed {
  HeapGraph graph;
  analysis::DominatorTree tree;
  analysis::RetainedSizes retained;
};

Analysed Analyse(const std::string& name) {
  auto g = ReadPhdGraph(MatDump(name));
  EXPECT_TRUE(g.ok()) << g.status();
  HeapGraph graph = g.ok() ? std::move(g).value() : HeapGraph();
  auto tree = analysis::ComputeDominatorTree(graph.graph(), graph.root_objects());
  EXPECT_TRUE(tree.ok()) << tree.status();
  analysis::RetainedSizes retained = analysis::ComputeRetainedSizes(
      *tree, [&graph](ObjectIndex v) { return graph.shallow_size(v); });
  return {std::move(graph), std::move(tree).value(), std::move(retained)};
}

// The one instance of the DominatorTestData class `letter`.
ObjectIndex TestObject(const HeapGraph& g, const std::string& letter) {
  const ClassId c =
      g.FindClass("org.eclipse.mat.tests.CreateSampleDump$DominatorTestData$" + letter);
  EXPECT_TRUE(c.valid()) << letter;
  ObjectIndex found;
  int count = 0;
  for (uint32_t v = 0; v < g.object_count(); ++v) {
    if (g.kind(ObjectIndex(v)) == ObjectKind::kInstance && g.class_of(ObjectIndex(v)) == c) {
      found = ObjectIndex(v);
      ++count;
    }
  }
  EXPECT_EQ(count, 1) << letter;
  return found;
}

// DominatorTreeTest.java's structure (EXPECTED.md): R immediately dominates A, B, C, D, E, H, I, K;
// C dominates F and G, D dominates L, G dominates J; R's retained set has 13 objects.
void CheckLengauerTarjanGraph(const Analysed& a) {
  const HeapGraph& g = a.graph;
  std::map<std::string, ObjectIndex> o;
  for (const char* l : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "R"}) {
    o[l] = TestObject(g, l);
  }
  std::vector<std::string> children;
  for (ObjectIndex c : a.tree.children(o["R"])) {
    for (const auto& [letter, v] : o) {
      if (v == c) children.push_back(letter);
    }
  }
  EXPECT_THAT(children, UnorderedElementsAre("A", "B", "C", "D", "E", "H", "I", "K"));
  EXPECT_THAT(a.tree.children(o["C"]), UnorderedElementsAre(o["F"], o["G"]));
  EXPECT_THAT(a.tree.children(o["D"]), ElementsAre(o["L"]));
  EXPECT_THAT(a.tree.children(o["G"]), ElementsAre(o["J"]));
  auto set = analysis::RetainedSet(a.tree, o["R"]);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 13u);
  uint64_t sum = 0;
  for (const auto& [letter, v] : o) sum += g.shallow_size(v);
  EXPECT_EQ(a.retained[o["R"].value], sum);
}

TEST(PhdCorpusTest, MatAssertsRRetains256BytesIn2010Dump) {
  RequireCorpora();
  const Analysed a = Analyse(k2010);
  CheckLengauerTarjanGraph(a);
  EXPECT_EQ(a.retained[TestObject(a.graph, "R").value], 256u);  // MAT's DominatorTreeTest
}

TEST(PhdCorpusTest, TheLengauerTarjanGraphOfThe2013Dump) {
  RequireCorpora();
  CheckLengauerTarjanGraph(Analyse(k2013));
}

// Counts of a second PHD decoder, written independently in Python from DTFJ's HeapdumpReader.java
// while this reader was developed (object and array records, class records).
struct CorpusFacts {
  const char* name;
  uint32_t id_size;
  uint64_t records;
  uint64_t classes;
};
constexpr CorpusFacts kFacts[] = {
    {k2010, 4, 4858, 411},
    {k2013, 8, 4788, 515},
    {k2016, 8, 55338, 917},
};

TEST(PhdCorpusTest, EveryFileIsReadAndAnalysed) {
  RequireCorpora();
  for (const CorpusFacts& f : kFacts) {
    SCOPED_TRACE(f.name);
    const Analysed a = Analyse(f.name);
    const HeapGraph& g = a.graph;
    EXPECT_EQ(g.info().id_size, f.id_size);
    EXPECT_EQ(g.info().duplicate_objects, 0u);
    uint64_t class_objects = 0;
    for (uint32_t v = 0; v < g.object_count(); ++v) {
      class_objects += g.kind(ObjectIndex(v)) == ObjectKind::kClass;
    }
    EXPECT_EQ(class_objects, f.classes);
    EXPECT_EQ(g.object_count(), f.records + f.classes);
    // Inferred roots reach everything; the tree's total is the heap.
    EXPECT_TRUE(g.info().roots_inferred);
    EXPECT_EQ(a.tree.unreachable_count(), 0u);
    uint64_t total = 0;
    for (uint32_t v = 0; v < g.object_count(); ++v) total += g.shallow_size(ObjectIndex(v));
    EXPECT_EQ(a.retained.back(), total);
    for (const auto& root : g.gc_roots()) {
      EXPECT_TRUE(root.kind == GcRootKind::kPureRoot || root.kind == GcRootKind::kArtificialRoot);
    }
  }
}

TEST(PhdCorpusTest, TheReportSaysTheRootsWereInferred) {
  RequireCorpora();
  auto g = ReadPhdGraph(MatDump(k2010));
  ASSERT_TRUE(g.ok()) << g.status();
  auto report = analysis::BuildReport(*g, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->totals.gc_roots, 0u);
  EXPECT_EQ(report->totals.inferred_roots, report->totals.gc_roots);  // every root is inferred
  EXPECT_EQ(report->totals.unreachable_objects, 0u);
  ASSERT_FALSE(report->top_objects.empty());
  EXPECT_THAT(report->top_objects.front().gc_root_kind,
              ::testing::AnyOf("PURE_ROOT", "ARTIFICIAL_ROOT"));
}

TEST(PhdCorpusTest, Version6ArraysTakeTheSizesTheirRecordsGive) {
  RequireCorpora();
  auto g = ReadPhdGraph(MatDump(k2016));
  ASSERT_TRUE(g.ok()) << g.status();
  // An independent pass over the records.
  std::unique_ptr<ByteSource> source = OpenFileSource(MatDump(k2016)).value();
  StreamReader in(source.get(), StreamReader::WindowFor(*source));
  auto scanner = PhdScanner::Open(&in);
  ASSERT_TRUE(scanner.ok());
  PhdRecord r;
  uint64_t arrays = 0;
  while (scanner->Next(&r).value()) {
    if (r.recorded_size < 0) continue;
    ++arrays;
    ASSERT_EQ(g->shallow_size(g->FindObject(r.address)),
              static_cast<uint64_t>(r.recorded_size + 7) / 8 * 8)
        << std::hex << r.address;
  }
  EXPECT_GT(arrays, 20000u);
}

TEST(PhdCorpusTest, GzipCompressedFilesGiveTheSameGraph) {
  RequireCorpora();
  const std::string plain = Slurp(MatDump(k2013));
  const HeapGraph a = Read(plain);
  const HeapGraph b = Read(Gzip(plain));
  ASSERT_EQ(a.object_count(), b.object_count());
  EXPECT_EQ(a.graph().edge_count(), b.graph().edge_count());
  for (uint32_t v = 0; v < a.object_count(); ++v) {
    ASSERT_EQ(a.object_id(ObjectIndex(v)), b.object_id(ObjectIndex(v)));
    ASSERT_EQ(a.shallow_size(ObjectIndex(v)), b.shallow_size(ObjectIndex(v)));
  }
}

}  // namespace
}  // namespace heapwatch::dumps::phd
