// `heapwatchctl analyze --from-roots` (ctl/from_roots.h): the rendering of seed 000's example graph
// line by line, --depth and --min-size, and the command on an IBM text dump, a PHD of the corpora
// and an HPROF dump.
#include "ctl/from_roots.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "analysis/heap_graph.h"
#include "analysis/root_trees.h"
#include "ctl/ctl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::ctl {
namespace {

using analysis::HeapGraph;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The rendered text with runs of spaces collapsed, one string per line.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::string collapsed;
    for (char c : line) {
      if (c == ' ' && (collapsed.empty() || collapsed.back() == ' ')) continue;
      collapsed += c;
    }
    while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
    out.push_back(collapsed);
  }
  return out;
}

// Seed 000's example: A -> B -> C -> D -> E -> {F -> {G, C}, H}, B -> I -> J, K <-> L -> B; every
// object 8 bytes but B (24) and J (40).
HeapGraph Example() {
  enum { A, B, C, D, E, F, G, H, I, J, K, L, kN };
  const std::vector<std::pair<int, int>> edges = {{A, B}, {B, C}, {C, D}, {D, E}, {E, F},
                                                  {F, G}, {F, C}, {E, H}, {B, I}, {I, J},
                                                  {K, L}, {L, B}, {L, K}};
  analysis::DumpInfo info;
  info.format = "example";
  analysis::HeapGraphBuilder b(info);
  analysis::ClassInfo c;
  c.name = "N";
  c.instance_size = 8;
  c.unnamed_references = true;
  const analysis::ClassId cls = b.AddClass(c, 0);
  for (int v = 0; v < kN; ++v) {
    std::vector<uint64_t> refs;
    for (const auto& [from, to] : edges) {
      if (from == v) refs.push_back(0x10 * (to + 1));
    }
    b.AddInstance(0x10 * (v + 1), cls, refs);
  }
  b.SetShallowSize(0x20, 24);
  b.SetShallowSize(0xa0, 40);
  return std::move(b).Build().value();
}

std::string Render(const HeapGraph& g, FromRootsOptions options) {
  auto trees = analysis::ComputeRootTrees(g);
  EXPECT_TRUE(trees.ok()) << trees.status();
  return RenderRootTrees(g, *trees, options);
}

TEST(FromRootsTest, RendersEveryLevelLargestFirst) {
  const std::vector<std::string> lines = Lines(Render(Example(), {.depth = -1}));
  EXPECT_THAT(
      lines,
      ElementsAre(
          "Dump from roots (example): 0 GC roots, 2 roots inferred for objects no GC root reaches; "
          "12 objects, 144 B",
          "Each row: the total size of the object's tree, its descendants, its maximum depth, its "
          "shallow size. Largest first; all levels below each root.",
          "", "total descendants max depth shallow object",
          "128 B 9 6 8 B N@0x10 [PURE_ROOT]",       // A: 10 x 8 + 24 + 40 - K - L
          "120 B 8 5 24 B N@0x20",                  // B
          "48 B 5 4 8 B N@0x30",                    // C (ties with I: search order)
          "40 B 4 3 8 B N@0x40",                    // D
          "32 B 3 2 8 B N@0x50",                    // E
          "16 B 1 1 8 B N@0x60",                    // F
          "8 B 0 0 8 B N@0x70",                     // G
          "8 B 0 0 8 B N@0x80",                     // H
          "48 B 1 1 8 B N@0x90",                    // I
          "40 B 0 0 40 B N@0xa0",                   // J
          "16 B 1 1 8 B N@0xb0 [ARTIFICIAL_ROOT]",  // K
          "8 B 0 0 8 B N@0xc0",                     // L
          ""));
}

TEST(FromRootsTest, DepthAndMinSizeCutTheTree) {
  const std::vector<std::string> lines = Lines(Render(Example(), {.depth = 1, .min_size = 50}));
  EXPECT_THAT(lines,
              ElementsAre(::testing::_,
                          "Each row: the total size of the object's tree, its descendants, its "
                          "maximum depth, its shallow size. Largest first; 1 level below each "
                          "root, subtrees under 50 B summarised.",
                          "", "total descendants max depth shallow object",
                          "128 B 9 6 8 B N@0x10 [PURE_ROOT]", "120 B 8 5 24 B N@0x20",
                          "16 B ... 1 smaller root (2 objects)", ""));
}

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result Ctl(std::vector<std::string> args) {
  args.insert(args.begin(), "heapwatchctl");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

TEST(FromRootsTest, AnalyzeFromRootsReadsEveryFormat) {
  Result text =
      Ctl({"analyze", std::string(HEAPWATCH_IBM_TEXT_DATA) + "/heaproots.txt", "--from-roots"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Dump from roots (IBM text heap dump): 1 roots inferred"));
  EXPECT_THAT(text.out, HasSubstr("Pair@0x1018f078 [ARTIFICIAL_ROOT]"));
  const std::string corpora = HEAPWATCH_CORPORA_DIR;
  Result phd = Ctl({"analyze", corpora + "/eclipse-mat/heapdump.20100112.141124.11580.0002.phd",
                    "--from-roots", "--depth", "0", "--min-size", "4096"});
  ASSERT_EQ(phd.code, 0) << phd.err;
  EXPECT_THAT(phd.out, HasSubstr("Dump from roots (portable heap dump 5)"));
  EXPECT_THAT(phd.out, HasSubstr("[PURE_ROOT]"));
  EXPECT_THAT(phd.out, HasSubstr("smaller root"));
  Result hprof = Ctl({"analyze", corpora + "/eclipse-mat/sun_jdk6_32bit.hprof", "--from-roots",
                      "--depth", "1", "--min-size", "100000"});
  ASSERT_EQ(hprof.code, 0) << hprof.err;
  EXPECT_THAT(hprof.out, HasSubstr("GC roots, "));
  EXPECT_THAT(hprof.out, HasSubstr("roots inferred for objects no GC root reaches"));
  EXPECT_EQ(Ctl({"analyze", corpora + "/eclipse-mat/sun_jdk6_32bit.hprof", "--from-roots",
                 "--depth", "-2"})
                .code,
            2);
  EXPECT_EQ(
      Ctl({"analyze", "--json", corpora + "/eclipse-mat/sun_jdk6_32bit.hprof", "--from-roots"})
          .code,
      2);
  Result missing = Ctl({"analyze", "/nonexistent.phd", "--from-roots"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent.phd"));
}

}  // namespace
}  // namespace heapwatch::ctl
