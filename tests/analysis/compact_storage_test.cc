// The compact storage behind the memory figures: IdIndex::Pack (16-bit deltas in blocks of 64, wide
// blocks kept in full), the blocked child offsets of DominatorTree (one byte per node, wide
// blocks in full) and the compact form of a CsrGraph's offsets (CsrOffsets::Compact, the same
// layout). Both must answer exactly as the plain arrays they replace.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/dominator_tree.h"
#include "analysis/id_index.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

// Ascending 8-byte-aligned ids with small gaps and, now and then, a gap of more than 65535 units
// (an object of more than 512 KiB) so that some blocks of 64 are wide.
std::vector<uint64_t> MakeIds(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> ids;
  uint64_t id = 0x7f0000000ull;
  for (size_t i = 0; i < n; ++i) {
    ids.push_back(id);
    const uint64_t r = rng() % 10000;
    id += 8 * (r < 3 ? 70000 + rng() % 200000 : 2 + rng() % 40);
  }
  return ids;
}

TEST(CompactStorageTest, PackedIdIndexAnswersLikeTheUnpackedOne) {
  for (size_t n : {0u, 1u, 63u, 64u, 65u, 1000u, 50000u}) {
    const std::vector<uint64_t> ids = MakeIds(n, static_cast<uint32_t>(n) + 7);
    IdIndex plain;
    plain.BuildSorted(ids);
    IdIndex packed;
    packed.BuildSorted(ids);
    packed.Pack();
    ASSERT_EQ(packed.size(), n);
    if (n >= 1000) {
      EXPECT_LT(packed.MemoryUsage() * 10, plain.MemoryUsage() * 6) << n;
    }
    for (uint32_t v = 0; v < n; ++v) {
      ASSERT_EQ(packed.Id(v), ids[v]) << v;
      ASSERT_EQ(packed.Find(ids[v]), v) << v;
      ASSERT_EQ(packed.FindNear(ids[v], v > 0 ? v - 1 : 0), v) << v;
      // Ids that are not in the index: between two objects, misaligned, below and above.
      if (v + 1 < n && ids[v + 1] - ids[v] > 8) {
        ASSERT_EQ(packed.Find(ids[v] + 8), IdIndex::kAbsent);
      }
      ASSERT_EQ(packed.Find(ids[v] + 1), IdIndex::kAbsent);
    }
    EXPECT_EQ(packed.Find(0x7f0000000ull - 8), IdIndex::kAbsent);
    if (n > 0) {
      EXPECT_EQ(packed.Find(ids.back() + 8), IdIndex::kAbsent);
    }
    // Rebuilding a packed index unpacks it.
    packed.BuildSorted(ids);
    for (uint32_t v = 0; v < n; ++v) ASSERT_EQ(packed.Find(ids[v]), v);
  }
}

// Immediate dominators of a random tree in which a few nodes have hundreds or thousands of
// children (wide blocks) and most have none or a few.
std::vector<ObjectIndex> RandomTree(uint32_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<ObjectIndex> idom(n);
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t r = rng() % 100;
    if (v == 0 || r < 2) {
      idom[v] = ObjectIndex(n);  // super root
    } else if (r < 30 && v >= 7) {
      idom[v] = ObjectIndex(v % 7);  // hubs 0..6: thousands of children each
    } else if (r < 35) {
      idom[v] = kNoObject;  // outside the tree
      continue;
    } else {
      idom[v] = ObjectIndex(rng() % v);
    }
    if (idom[v].value < n && idom[idom[v].value] == kNoObject) idom[v] = ObjectIndex(n);
  }
  return idom;
}

TEST(CompactStorageTest, BlockedChildOffsetsGiveEveryChildList) {
  for (uint32_t n : {1u, 15u, 16u, 17u, 300u, 20000u}) {
    const std::vector<ObjectIndex> idom = RandomTree(n, n);
    auto tree = DominatorTree::FromImmediateDominators(idom, {});
    ASSERT_TRUE(tree.ok()) << tree.status();
    std::vector<std::vector<ObjectIndex>> expected(size_t{n} + 1);
    for (uint32_t v = 0; v < n; ++v) {
      if (idom[v] != kNoObject) expected[idom[v].value].push_back(ObjectIndex(v));
    }
    size_t total = 0;
    for (uint32_t v = 0; v <= n; ++v) {
      const auto kids = tree->children(ObjectIndex(v));
      ASSERT_EQ(std::vector<ObjectIndex>(kids.begin(), kids.end()), expected[v]) << v;
      total += kids.size();
    }
    EXPECT_EQ(total, tree->tree_object_count());
  }
}

// Offsets of rows of 0-3 references, with now and then a row of more than 255 (a big array) so that
// some blocks of 64 are wide; sizes around the block size and a last partial block.
TEST(CompactStorageTest, CompactCsrOffsetsAnswerLikeThePlainOnes) {
  std::mt19937 rng(7);
  for (size_t rows : {0u, 1u, 62u, 63u, 64u, 65u, 127u, 128u, 129u, 5000u, 100000u}) {
    CsrOffsets plain;
    plain.assign(rows + 1, 0);
    uint32_t total = 0;
    for (size_t v = 0; v < rows; ++v) {
      const uint32_t r = rng() % 1000;
      total += r < 3 ? 256 + rng() % 100000 : (r < 6 ? 255 : rng() % 4);
      plain[v + 1] = total;
    }
    CsrOffsets compacted = plain;
    compacted.Compact();
    const CsrOffsets& compact = compacted;  // a compact CsrOffsets is read through const access
    ASSERT_TRUE(compact.compact());
    ASSERT_FALSE(plain.compact());
    ASSERT_EQ(compact.size(), rows + 1);
    for (size_t v = 0; v <= rows; ++v) ASSERT_EQ(compact[v], plain[v]) << rows << " " << v;
    EXPECT_EQ(compact.front(), 0u);
    EXPECT_EQ(compact.back(), total);
    EXPECT_TRUE(compact == plain);
    const CsrOffsets copy = compact;  // copies keep the compact form
    EXPECT_TRUE(copy.compact());
    EXPECT_TRUE(copy == plain);
    // 8 bytes per block of 64, 1 per value, and the full 64 offsets of each wide block.
    size_t wide = 0;
    const size_t blocks = (rows + 1 + 63) / 64;
    for (size_t b = 0; b < blocks; ++b) {
      const size_t last = std::min(rows, b * 64 + 63);
      if (plain[last] - plain[b * 64] > 255) ++wide;
    }
    EXPECT_EQ(compact.MemoryUsage(), blocks * 8 + (rows + 1) + wide * 64 * 4) << rows;
    EXPECT_EQ(plain.MemoryUsage(), (rows + 1) * 4);
    if (rows > 0) {
      plain[rows] += 1;
      EXPECT_FALSE(compact == plain);
    }
  }
}

// A graph whose offsets were compacted gives the same successors, and writing to it is refused.
TEST(CompactStorageTest, CompactCsrGraphGivesTheSameSuccessors) {
  CsrGraph g;
  g.offsets = {0, 2, 2, 300, 301};
  for (uint32_t e = 0; e < 301; ++e) g.targets.push_back(ObjectIndex(e % 4));
  CsrGraph compacted = g;
  compacted.offsets.Compact();
  const CsrGraph& c = compacted;
  ASSERT_EQ(c.node_count(), 4u);
  for (uint32_t v = 0; v < 4; ++v) {
    const auto a = g.successors(ObjectIndex(v));
    const auto b = c.successors(ObjectIndex(v));
    ASSERT_EQ(std::vector<ObjectIndex>(a.begin(), a.end()),
              std::vector<ObjectIndex>(b.begin(), b.end()))
        << v;
    EXPECT_EQ(g.first_edge(ObjectIndex(v)), c.first_edge(ObjectIndex(v)));
  }
  EXPECT_DEATH(compacted.offsets[1] = 5, "");
}

}  // namespace
}  // namespace heapwatch::analysis
