// Tests of analysis/dump_summary.h: owners keyed by (class, generalised path from a GC root) on
// hand-built heaps where a static list grows between two dumps, the diff of two summaries, and the
// summary of a real dump from the corpora.
#include "analysis/dump_summary.h"

#include <regex>
#include <string>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;

ClassInfo Instance(std::string name, std::vector<std::string> reference_fields, uint32_t size) {
  ClassInfo c;
  c.name = std::move(name);
  for (auto& f : reference_fields) c.instance_fields.push_back(FieldInfo{f, FieldType::kObject});
  c.instance_size = size;
  c.class_object_size = 8;
  return c;
}

// com.acme.App (sticky class) --static ITEMS--> ArrayList --elementData--> Object[capacity] ->
// `items` Item, each --data--> byte[100]. A second static CACHE holds a java.lang.ref.Reference
// whose referent is a byte[5000] only it reaches (a weak path).
StatusOr<HeapGraph> ListHeap(uint32_t items, uint32_t capacity) {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  b.AddClass(Instance("java.lang.Class", {}, 96), 0x20);
  ClassInfo app = Instance("com.acme.App", {}, 16);
  app.static_fields.push_back(FieldInfo{"ITEMS", FieldType::kObject});
  app.static_fields.push_back(FieldInfo{"CACHE", FieldType::kObject});
  ClassId app_class = b.AddClass(app, 0x30);
  ClassId list = b.AddClass(Instance("java.util.ArrayList", {"elementData"}, 24), 0x40);
  ClassInfo objects;
  objects.name = "java.lang.Object[]";
  objects.instance_kind = ObjectKind::kObjectArray;
  ClassId array = b.AddClass(objects, 0x50);
  ClassId item = b.AddClass(Instance("com.acme.Item", {"data"}, 24), 0x60);
  ClassInfo bytes;
  bytes.name = "byte[]";
  bytes.instance_kind = ObjectKind::kPrimitiveArray;
  bytes.element_type = FieldType::kByte;
  ClassId byte_array = b.AddClass(bytes, 0x70);
  ClassInfo reference = Instance("java.lang.ref.Reference", {"referent"}, 32);
  reference.is_reference = true;
  ClassId ref = b.AddClass(reference, 0x80);

  b.SetStaticReferences(app_class, {0x1000, 0x9000});
  b.AddInstance(0x1000, list, {0x2000});
  std::vector<uint64_t> elements(capacity, 0);
  for (uint32_t i = 0; i < items; ++i) elements[i] = 0x100000 + 0x100 * i;
  b.AddObjectArray(0x2000, array, elements);
  for (uint32_t i = 0; i < items; ++i) {
    b.AddInstance(0x100000 + 0x100 * i, item, {0x100000 + 0x100 * i + 0x10});
    b.AddPrimitiveArray(0x100000 + 0x100 * i + 0x10, byte_array, 100);
  }
  b.AddInstance(0x9000, ref, {0x9100});
  b.AddPrimitiveArray(0x9100, byte_array, 5000);
  for (uint64_t c = 0x10; c <= 0x80; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  return std::move(b).Build();
}

struct Analysed {
  HeapGraph graph;
  DominatorTree tree;
  RetainedSizes retained;
};

StatusOr<Analysed> Analyse(StatusOr<HeapGraph> graph) {
  HW_RETURN_IF_ERROR(graph.status());
  HW_ASSIGN_OR_RETURN(DominatorTree tree,
                      ComputeDominatorTree(graph->graph(), graph->root_objects()));
  RetainedSizes retained =
      ComputeRetainedSizes(tree, [&](ObjectIndex v) { return graph->shallow_size(v); });
  return Analysed{std::move(*graph), std::move(tree), std::move(retained)};
}

DumpSummaryOptions AllOwners() {
  DumpSummaryOptions options;
  options.min_owner_bytes = 1;
  options.min_owner_share = 0;
  return options;
}

const OwnerRow* FindOwner(const DumpSummary& s, const std::string& class_name) {
  for (const OwnerRow& row : s.owners) {
    if (row.class_name == class_name) return &row;
  }
  return nullptr;
}

const OwnerDelta* FindOwnerDelta(const DumpDiff& d, const std::string& class_name) {
  for (const OwnerDelta& row : d.owners) {
    if (row.class_name == class_name) return &row;
  }
  return nullptr;
}

TEST(DumpSummaryTest, OwnersAreKeyedByClassAndGeneralisedPath) {
  auto a = Analyse(ListHeap(5, 8));
  ASSERT_TRUE(a.ok()) << a.status();
  auto s = BuildDumpSummary(a->graph, a->tree, a->retained, AllOwners());
  ASSERT_TRUE(s.ok()) << s.status();

  const OwnerRow* list = FindOwner(*s, "java.util.ArrayList");
  ASSERT_NE(list, nullptr);
  EXPECT_THAT(list->path, ElementsAre("STICKY_CLASS class com.acme.App", "static ITEMS"));
  EXPECT_EQ(list->objects, 1u);
  EXPECT_EQ(list->retained_bytes, a->retained[a->graph.FindObject(0x1000).value]);

  // The five items sit at five array indices but share one key.
  const OwnerRow* items = FindOwner(*s, "com.acme.Item");
  ASSERT_NE(items, nullptr);
  EXPECT_THAT(items->path, ElementsAre("STICKY_CLASS class com.acme.App", "static ITEMS",
                                       "field elementData", "[*]"));
  EXPECT_EQ(items->objects, 5u);
  uint64_t item_bytes = 0;
  for (uint32_t i = 0; i < 5; ++i)
    item_bytes += a->retained[a->graph.FindObject(0x100000 + 0x100 * i).value];
  EXPECT_EQ(items->retained_bytes, item_bytes);

  // The referent reached only through Reference.referent: its last step is marked weak.
  bool weak_found = false;
  for (const OwnerRow& row : s->owners) {
    if (row.class_name == "byte[]" && row.path.size() == 3 && row.path[1] == "static CACHE") {
      EXPECT_EQ(row.path[2], "field referent (weak)");
      weak_found = true;
    }
  }
  EXPECT_TRUE(weak_found);

  // Owners are sorted by retained size; the histogram covers every reachable object.
  for (size_t i = 1; i < s->owners.size(); ++i)
    EXPECT_GE(s->owners[i - 1].retained_bytes, s->owners[i].retained_bytes);
  uint64_t instances = 0;
  for (const ClassRow& row : s->classes) instances += row.instances;
  EXPECT_EQ(instances, s->totals.reachable_objects);
  EXPECT_EQ(s->totals.unreachable_objects, 0u);
}

TEST(DumpSummaryTest, GrowingListGainsExactlyTheAddedBytes) {
  auto before = Analyse(ListHeap(5, 8));
  auto after = Analyse(ListHeap(12, 16));
  ASSERT_TRUE(before.ok() && after.ok());
  auto sb = BuildDumpSummary(before->graph, before->tree, before->retained, AllOwners());
  auto sa = BuildDumpSummary(after->graph, after->tree, after->retained, AllOwners());
  ASSERT_TRUE(sb.ok() && sa.ok());
  DumpDiff diff = DiffDumpSummaries(*sb, *sa);

  // Added: 7 items with their byte[] and a bigger elementData array.
  const HeapGraph& g = after->graph;
  uint64_t added = 0;
  for (uint32_t i = 5; i < 12; ++i) {
    added += g.shallow_size(g.FindObject(0x100000 + 0x100 * i));
    added += g.shallow_size(g.FindObject(0x100000 + 0x100 * i + 0x10));
  }
  added += g.shallow_size(g.FindObject(0x2000)) -
           before->graph.shallow_size(before->graph.FindObject(0x2000));
  ASSERT_GT(added, 0u);

  ASSERT_FALSE(diff.owners.empty());
  // The list and the class object holding it gain exactly the added bytes and lead the diff.
  const OwnerDelta* list = FindOwnerDelta(diff, "java.util.ArrayList");
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->delta_retained_bytes, static_cast<int64_t>(added));
  EXPECT_EQ(list->before_objects, 1u);
  EXPECT_EQ(list->after_objects, 1u);
  EXPECT_EQ(diff.owners.front().delta_retained_bytes, static_cast<int64_t>(added));
  const OwnerDelta* items = FindOwnerDelta(diff, "com.acme.Item");
  ASSERT_NE(items, nullptr);
  EXPECT_EQ(items->before_objects, 5u);
  EXPECT_EQ(items->after_objects, 12u);
  // The weakly held byte[] did not change.
  size_t cache_owners = 0;
  for (const OwnerDelta& d : diff.owners) {
    if (d.path.size() >= 2 && d.path[1] == "static CACHE") {
      EXPECT_EQ(d.delta_retained_bytes, 0);
      ++cache_owners;
    }
  }
  EXPECT_EQ(cache_owners, 2u);  // the Reference and its referent
  for (size_t i = 1; i < diff.owners.size(); ++i)
    EXPECT_GE(diff.owners[i - 1].delta_retained_bytes, diff.owners[i].delta_retained_bytes);

  // Per owner class.
  bool found = false;
  for (const OwnerClassDelta& c : diff.owner_classes) {
    if (c.class_name == "java.util.ArrayList") {
      EXPECT_EQ(c.delta_retained_bytes, static_cast<int64_t>(added));
      found = true;
    }
  }
  EXPECT_TRUE(found);

  // Classes: Item gained 7 instances, leads with byte[] (retained deltas), reachable bytes too.
  bool item_class = false;
  for (const DumpClassDelta& c : diff.classes) {
    if (c.class_name == "com.acme.Item") {
      EXPECT_EQ(c.delta_instances, 7);
      EXPECT_EQ(c.change, DumpClassChange::kChanged);
      EXPECT_GT(c.delta_retained_bytes, 0);
      item_class = true;
    }
    if (c.class_name == "java.lang.ref.Reference") {
      EXPECT_EQ(c.change, DumpClassChange::kUnchanged);
    }
  }
  EXPECT_TRUE(item_class);
  EXPECT_EQ(diff.delta_reachable_bytes, static_cast<int64_t>(added));
}

// com.acme.Chain (sticky class) --static HEAD--> Node --next--> Node ... (`length` nodes), each
// --data--> byte[200].
StatusOr<HeapGraph> ChainHeap(uint32_t length) {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  b.AddClass(Instance("java.lang.Class", {}, 96), 0x20);
  ClassInfo chain = Instance("com.acme.Chain", {}, 16);
  chain.static_fields.push_back(FieldInfo{"HEAD", FieldType::kObject});
  ClassId chain_class = b.AddClass(chain, 0x30);
  ClassId node = b.AddClass(Instance("com.acme.Node", {"next", "data"}, 24), 0x40);
  ClassInfo bytes;
  bytes.name = "byte[]";
  bytes.instance_kind = ObjectKind::kPrimitiveArray;
  bytes.element_type = FieldType::kByte;
  ClassId byte_array = b.AddClass(bytes, 0x50);
  b.SetStaticReferences(chain_class, {length > 0 ? 0x100000u : 0u});
  for (uint32_t i = 0; i < length; ++i) {
    const uint64_t id = 0x100000 + 0x100 * i;
    b.AddInstance(id, node, {i + 1 < length ? id + 0x100 : 0, id + 0x10});
    b.AddPrimitiveArray(id + 0x10, byte_array, 200);
  }
  for (uint64_t c = 0x10; c <= 0x50; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  return std::move(b).Build();
}

// A linked list: every node but the head shares one key whatever its depth, the nested nodes are
// not counted twice, and the growth of the list is exactly the added nodes.
TEST(DumpSummaryTest, RecursiveStructuresGeneraliseAndDoNotCountTwice) {
  auto before = Analyse(ChainHeap(5));
  auto after = Analyse(ChainHeap(9));
  ASSERT_TRUE(before.ok() && after.ok());
  auto sb = BuildDumpSummary(before->graph, before->tree, before->retained, AllOwners());
  auto sa = BuildDumpSummary(after->graph, after->tree, after->retained, AllOwners());
  ASSERT_TRUE(sb.ok() && sa.ok());
  const std::vector<std::string> head = {"STICKY_CLASS class com.acme.Chain", "static HEAD"};
  const std::vector<std::string> rest = {"STICKY_CLASS class com.acme.Chain", "static HEAD",
                                         "field next (recursive)"};
  const OwnerRow* head_row = nullptr;
  const OwnerRow* rest_row = nullptr;
  for (const OwnerRow& row : sa->owners) {
    if (row.class_name != "com.acme.Node") continue;
    if (row.path == head) head_row = &row;
    if (row.path == rest) rest_row = &row;
  }
  ASSERT_NE(head_row, nullptr);
  ASSERT_NE(rest_row, nullptr);
  EXPECT_EQ(head_row->objects, 1u);
  EXPECT_EQ(rest_row->objects, 8u);
  const HeapGraph& g = after->graph;
  // The second node's retained size only: the deeper nodes are inside it.
  EXPECT_EQ(rest_row->retained_bytes, after->retained[g.FindObject(0x100100).value]);
  size_t node_rows = 0;
  for (const OwnerRow& row : sa->owners) node_rows += row.class_name == "com.acme.Node";
  EXPECT_EQ(node_rows, 2u);

  uint64_t added = 0;
  for (uint32_t i = 5; i < 9; ++i) {
    added += g.shallow_size(g.FindObject(0x100000 + 0x100 * i));
    added += g.shallow_size(g.FindObject(0x100000 + 0x100 * i + 0x10));
  }
  DumpDiff diff = DiffDumpSummaries(*sb, *sa);
  bool found = false;
  for (const OwnerDelta& d : diff.owners) {
    if (d.class_name == "com.acme.Node" && d.path == rest) {
      EXPECT_EQ(d.delta_retained_bytes, static_cast<int64_t>(added));
      EXPECT_EQ(d.before_objects, 4u);
      EXPECT_EQ(d.after_objects, 8u);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(DumpSummaryTest, OwnerOnOneSideOnlyCountsZeroOnTheOther) {
  auto before = Analyse(ListHeap(0, 0));
  auto after = Analyse(ListHeap(3, 4));
  ASSERT_TRUE(before.ok() && after.ok());
  auto sb = BuildDumpSummary(before->graph, before->tree, before->retained, AllOwners());
  auto sa = BuildDumpSummary(after->graph, after->tree, after->retained, AllOwners());
  ASSERT_TRUE(sb.ok() && sa.ok());
  DumpDiff diff = DiffDumpSummaries(*sb, *sa);
  const OwnerDelta* items = FindOwnerDelta(diff, "com.acme.Item");
  ASSERT_NE(items, nullptr);
  EXPECT_EQ(items->before_retained_bytes, 0u);
  EXPECT_EQ(items->before_objects, 0u);
  EXPECT_EQ(items->delta_retained_bytes, static_cast<int64_t>(items->after_retained_bytes));
  bool new_class = false;
  for (const DumpClassDelta& c : diff.classes) {
    if (c.class_name == "com.acme.Item") new_class = c.change == DumpClassChange::kNew;
  }
  EXPECT_TRUE(new_class);

  DumpDiff reverse = DiffDumpSummaries(*sa, *sb);
  for (const DumpClassDelta& c : reverse.classes) {
    if (c.class_name == "com.acme.Item") EXPECT_EQ(c.change, DumpClassChange::kVanished);
  }
  EXPECT_LT(reverse.owners.back().delta_retained_bytes, 0);
}

TEST(DumpSummaryTest, ThresholdsLimitTheOwners) {
  auto a = Analyse(ListHeap(5, 8));
  ASSERT_TRUE(a.ok());
  DumpSummaryOptions options;  // defaults: 64 KiB, nothing here is that big
  auto s = BuildDumpSummary(a->graph, a->tree, a->retained, options);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->owners.empty());
  EXPECT_FALSE(s->classes.empty());

  options = AllOwners();
  options.max_owners = 2;
  s = BuildDumpSummary(a->graph, a->tree, a->retained, options);
  ASSERT_TRUE(s.ok());
  uint64_t objects = 0;
  for (const OwnerRow& row : s->owners) objects += row.objects;
  EXPECT_EQ(objects, 2u);

  options = AllOwners();
  options.min_owner_share = 0.5;  // half of the reachable bytes: the App class object and the list
  s = BuildDumpSummary(a->graph, a->tree, a->retained, options);
  ASSERT_TRUE(s.ok());
  for (const OwnerRow& row : s->owners)
    EXPECT_GE(row.retained_bytes * 2, s->totals.reachable_shallow_bytes);

  options.min_owner_share = 2;
  EXPECT_EQ(BuildDumpSummary(a->graph, a->tree, a->retained, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  const RetainedSizes short_sizes = RetainedSizes::FromBytes(std::vector<uint64_t>(3, 0));
  EXPECT_EQ(BuildDumpSummary(a->graph, a->tree, short_sizes, AllOwners()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A real dump: every owner path starts at a GC root, has no array index left, and the summary
// diffed with itself changes nothing.
TEST(DumpSummaryTest, RealDumpFromTheCorpora) {
  const std::string path = std::string(HEAPWATCH_CORPORA_DIR) + "/eclipse-mat/sun_jdk6_32bit.hprof";
  auto a = Analyse(hprof::ReadHeapGraph(path));
  ASSERT_TRUE(a.ok()) << a.status();
  DumpSummaryOptions options;
  options.min_owner_bytes = 1024;
  auto s = BuildDumpSummary(a->graph, a->tree, a->retained, options);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_FALSE(s->owners.empty());
  const std::regex index(".*\\[[0-9]+\\].*");
  const std::regex root("^[A-Z_]+ .+");
  for (const OwnerRow& row : s->owners) {
    ASSERT_FALSE(row.path.empty());
    EXPECT_TRUE(std::regex_match(row.path.front(), root)) << row.path.front();
    for (const std::string& step : row.path) EXPECT_FALSE(std::regex_match(step, index)) << step;
    EXPECT_GE(row.retained_bytes, 1024u * row.objects);
  }
  uint64_t instances = 0;
  for (const ClassRow& row : s->classes) instances += row.instances;
  EXPECT_EQ(instances, s->totals.reachable_objects);

  DumpDiff same = DiffDumpSummaries(*s, *s);
  EXPECT_EQ(same.classes.size(), s->classes.size());
  for (const DumpClassDelta& c : same.classes) EXPECT_EQ(c.change, DumpClassChange::kUnchanged);
  EXPECT_EQ(same.owners.size(), s->owners.size());
  for (const OwnerDelta& o : same.owners) EXPECT_EQ(o.delta_retained_bytes, 0);
  EXPECT_EQ(same.delta_reachable_bytes, 0);
}

}  // namespace
}  // namespace heapwatch::analysis
