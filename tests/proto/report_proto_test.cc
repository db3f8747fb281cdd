// Tests of proto/report_proto.h: every field of the analysis model reaches its message, the dump
// summary survives a round trip through its stored record, and the diff is truncated with counts.
#include "proto/report_proto.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/analysis/leak_heap.h"

namespace heapwatch::proto {
namespace {

using ::testing::ElementsAre;

analysis::ObjectSummary Object(uint64_t id, std::string cls, uint64_t shallow, uint64_t retained,
                               std::string root = "") {
  analysis::ObjectSummary o;
  o.object_id = id;
  o.class_name = std::move(cls);
  o.shallow_bytes = shallow;
  o.retained_bytes = retained;
  o.gc_root_kind = std::move(root);
  return o;
}

analysis::GcRootPathReport Path() {
  analysis::GcRootPathReport path;
  path.found = true;
  path.strong = false;
  path.steps.push_back({"", false, Object(0x10, "class com.acme.App", 8, 900, "STICKY_CLASS")});
  path.steps.push_back({"static ITEMS", false, Object(0x20, "java.util.ArrayList", 24, 880)});
  path.steps.push_back({"referent", true, Object(0x30, "com.acme.Item", 24, 100)});
  return path;
}

TEST(ReportProtoTest, SuspectReportFillsTheDrillDownReport) {
  analysis::SuspectReport s;
  s.class_name = "com.acme.Item";
  s.instances = 7;
  s.shallow_bytes = 168;
  s.retained_bytes = 900;
  s.minimum_retained_bytes = 880;
  s.dynamic_bytes = 1200;
  s.dynamic_objects = 15;
  analysis::AccumulationPointReport point;
  point.object = Object(0x20, "java.util.ArrayList", 24, 880);
  point.object.dynamic_bytes = 1100;
  point.object.dynamic_objects = 16;
  point.suspect_instances = 7;
  point.suspect_bytes = 860;
  point.share = 0.97;
  point.path = Path();
  s.accumulation_points.push_back(point);
  analysis::DominatorClassRow row;
  row.class_name = "class com.acme.App";
  row.dominators = 1;
  row.dominated = 7;
  row.dominator_shallow_bytes = 8;
  row.dominated_shallow_bytes = 168;
  row.dominator_retained_bytes = 900;
  row.biggest_dominator = Object(0x10, "class com.acme.App", 8, 900, "STICKY_CLASS");
  s.kept_alive_by.push_back(row);
  analysis::DominatorClassRow root_row;
  root_row.class_name = "<ROOT>";
  root_row.dominated = 1;
  s.kept_alive_by.push_back(root_row);
  s.exclude_patterns = {"java.*", "sun.*"};
  s.shortest_path = Path();
  std::vector<analysis::ObjectSummary> top = {Object(0x10, "class com.acme.App", 8, 900),
                                              Object(0x20, "java.util.ArrayList", 24, 880)};

  v1::DrillDownReport r;
  r.add_top_objects()->set_class_name("stale");  // replaced
  FillDrillDownReport(s, top, &r);
  EXPECT_EQ(r.class_name(), "com.acme.Item");
  EXPECT_EQ(r.instances(), 7u);
  EXPECT_EQ(r.shallow_bytes(), 168u);
  EXPECT_EQ(r.retained_bytes(), 900u);
  EXPECT_EQ(r.minimum_retained_bytes(), 880u);
  EXPECT_EQ(r.dynamic_bytes(), 1200u);
  EXPECT_EQ(r.dynamic_objects(), 15u);
  ASSERT_EQ(r.accumulation_points_size(), 1);
  const v1::AccumulationPoint& p = r.accumulation_points(0);
  EXPECT_EQ(p.object().object_id(), 0x20u);
  EXPECT_EQ(p.object().class_name(), "java.util.ArrayList");
  EXPECT_EQ(p.object().shallow_bytes(), 24u);
  EXPECT_EQ(p.object().retained_bytes(), 880u);
  EXPECT_EQ(p.object().dynamic_bytes(), 1100u);
  EXPECT_EQ(p.object().dynamic_objects(), 16u);
  EXPECT_EQ(p.path().steps(0).object().dynamic_objects(), 0u);  // not computed
  EXPECT_EQ(p.suspect_instances(), 7u);
  EXPECT_EQ(p.suspect_bytes(), 860u);
  EXPECT_DOUBLE_EQ(p.share(), 0.97);
  ASSERT_EQ(p.path().steps_size(), 3);
  EXPECT_TRUE(p.path().found());
  EXPECT_FALSE(p.path().strong());
  EXPECT_EQ(p.path().steps(0).object().gc_root_kind(), "STICKY_CLASS");
  EXPECT_EQ(p.path().steps(1).reference(), "static ITEMS");
  EXPECT_FALSE(p.path().steps(1).weak());
  EXPECT_TRUE(p.path().steps(2).weak());
  ASSERT_EQ(r.kept_alive_by_size(), 2);
  EXPECT_EQ(r.kept_alive_by(0).class_name(), "class com.acme.App");
  EXPECT_EQ(r.kept_alive_by(0).dominators(), 1u);
  EXPECT_EQ(r.kept_alive_by(0).dominated(), 7u);
  EXPECT_EQ(r.kept_alive_by(0).dominator_shallow_bytes(), 8u);
  EXPECT_EQ(r.kept_alive_by(0).dominated_shallow_bytes(), 168u);
  EXPECT_EQ(r.kept_alive_by(0).dominator_retained_bytes(), 900u);
  EXPECT_EQ(r.kept_alive_by(0).biggest_dominator().object_id(), 0x10u);
  EXPECT_FALSE(r.kept_alive_by(1).has_biggest_dominator());  // <ROOT> has none
  EXPECT_THAT(r.exclude_patterns(), ElementsAre("java.*", "sun.*"));
  EXPECT_EQ(r.shortest_path().steps_size(), 3);
  ASSERT_EQ(r.top_objects_size(), 2);
  EXPECT_EQ(r.top_objects(1).class_name(), "java.util.ArrayList");
}

TEST(ReportProtoTest, ReportFillsTheDumpReport) {
  analysis::Report report;
  report.dump_path = "/var/tmp/a.hprof";
  report.dump_file_bytes = 123456;
  report.dump_format = "JAVA PROFILE 1.0.2";
  report.size_model = "hotspot";
  report.totals.objects = 10;
  report.totals.unreachable_shallow_bytes = 48;
  report.histogram.push_back({"com.acme.Item", 7, 168, 880});
  report.histogram.push_back({"byte[]", 2, 64, 64});
  report.top_objects.push_back(Object(0x10, "class com.acme.App", 8, 900, "STICKY_CLASS"));
  report.top_dominators_by_class.push_back({"java.lang.Class", 3, 24, 950});
  report.timings.parse_seconds = 1.25;
  report.timings.total_seconds = 2.5;
  report.timings.peak_rss_bytes = 1 << 20;
  report.timings.dynamic_seconds = 0.5;
  analysis::SuspectReport first;
  first.class_name = "com.acme.Item";
  first.instances = 7;
  report.suspect = first;
  analysis::SuspectReport second;
  second.class_name = "byte[]";
  second.retained_bytes = 64;

  const v1::DumpReport r = ToDumpReport(report, std::vector<analysis::SuspectReport>{second});
  EXPECT_EQ(r.dump_path(), "/var/tmp/a.hprof");
  EXPECT_EQ(r.dump_file_bytes(), 123456u);
  EXPECT_EQ(r.dump_format(), "JAVA PROFILE 1.0.2");
  EXPECT_EQ(r.size_model(), "hotspot");
  EXPECT_EQ(r.totals().objects(), 10u);
  EXPECT_EQ(r.totals().unreachable_shallow_bytes(), 48u);
  ASSERT_EQ(r.histogram_size(), 2);
  EXPECT_EQ(r.histogram(0).class_name(), "com.acme.Item");
  EXPECT_EQ(r.histogram(0).instances(), 7u);
  EXPECT_EQ(r.histogram(0).shallow_bytes(), 168u);
  EXPECT_EQ(r.histogram(0).retained_bytes(), 880u);
  ASSERT_EQ(r.top_objects_size(), 1);
  EXPECT_EQ(r.top_objects(0).gc_root_kind(), "STICKY_CLASS");
  ASSERT_EQ(r.top_dominators_by_class_size(), 1);
  EXPECT_EQ(r.top_dominators_by_class(0).retained_bytes(), 950u);
  ASSERT_EQ(r.suspects_size(), 2);  // report.suspect first, then the others
  EXPECT_EQ(r.suspects(0).class_name(), "com.acme.Item");
  EXPECT_EQ(r.suspects(0).instances(), 7u);
  EXPECT_EQ(r.suspects(0).top_objects_size(), 0);  // they are the DumpReport's
  EXPECT_EQ(r.suspects(1).class_name(), "byte[]");
  EXPECT_EQ(r.suspects(1).retained_bytes(), 64u);
  EXPECT_EQ(r.timings().parse_duration().seconds(), 1);
  EXPECT_EQ(r.timings().parse_duration().nanos(), 250'000'000);
  EXPECT_EQ(r.timings().total_duration().seconds(), 2);
  EXPECT_EQ(r.timings().peak_rss_bytes(), 1u << 20);
  EXPECT_EQ(r.timings().dynamic_duration().nanos(), 500'000'000);
  EXPECT_FALSE(r.has_by_dynamic());
}

TEST(ReportProtoTest, DynamicRankingEveryField) {
  analysis::DynamicRanking ranking;
  ranking.all_references = true;
  ranking.sketch_size = 128;
  ranking.objects = 1000;
  ranking.exact_estimates = 900;
  ranking.below_retained = 3;
  ranking.estimate_seconds = 2;
  ranking.exact_seconds = 0.25;
  analysis::DynamicObjectRow row;
  row.object = Object(0x20, "java.util.ArrayList", 24, 880);
  row.object.dynamic_bytes = 5000;
  row.object.dynamic_objects = 50;
  row.estimated_dynamic_bytes = 5100;
  row.estimate_exact = false;
  row.component_objects = 3;
  row.shared_bytes = -7;
  ranking.objects_by_dynamic.push_back(row);
  ranking.objects_by_shared = {row, row};
  analysis::DynamicClassRow c;
  c.class_name = "com.acme.Item";
  c.instances = 7;
  c.retained_bytes = 880;
  c.dynamic_bytes = 4000;
  c.dynamic_objects = 40;
  c.shared_bytes = 3120;
  c.estimated_max_bytes = 3000;
  c.estimated_sum_bytes = 9000;
  ranking.classes_by_dynamic.push_back(c);
  ranking.shared_histogram.push_back({0, 1024, 990});
  ranking.shared_histogram.push_back({100 << 20, 0, 10});

  const v1::DynamicRanking r = ToProto(ranking);
  EXPECT_TRUE(r.all_references());
  EXPECT_EQ(r.sketch_size(), 128u);
  EXPECT_EQ(r.objects(), 1000u);
  EXPECT_EQ(r.exact_estimates(), 900u);
  EXPECT_EQ(r.below_retained(), 3u);
  EXPECT_EQ(r.estimate_duration().seconds(), 2);
  EXPECT_EQ(r.exact_duration().nanos(), 250'000'000);
  ASSERT_EQ(r.objects_by_dynamic_size(), 1);
  const v1::DynamicObject& o = r.objects_by_dynamic(0);
  EXPECT_EQ(o.object().object_id(), 0x20u);
  EXPECT_EQ(o.object().dynamic_bytes(), 5000u);
  EXPECT_EQ(o.object().dynamic_objects(), 50u);
  EXPECT_EQ(o.estimated_dynamic_bytes(), 5100u);
  EXPECT_FALSE(o.estimate_exact());
  EXPECT_EQ(o.component_objects(), 3u);
  EXPECT_EQ(o.shared_bytes(), -7);
  EXPECT_EQ(r.objects_by_shared_size(), 2);
  ASSERT_EQ(r.classes_by_dynamic_size(), 1);
  EXPECT_EQ(r.classes_by_shared_size(), 0);
  const v1::DynamicClass& k = r.classes_by_dynamic(0);
  EXPECT_EQ(k.class_name(), "com.acme.Item");
  EXPECT_EQ(k.instances(), 7u);
  EXPECT_EQ(k.retained_bytes(), 880u);
  EXPECT_EQ(k.dynamic_bytes(), 4000u);
  EXPECT_EQ(k.dynamic_objects(), 40u);
  EXPECT_EQ(k.shared_bytes(), 3120);
  EXPECT_EQ(k.estimated_max_bytes(), 3000u);
  EXPECT_EQ(k.estimated_sum_bytes(), 9000u);
  ASSERT_EQ(r.shared_histogram_size(), 2);
  EXPECT_EQ(r.shared_histogram(0).to_bytes(), 1024u);
  EXPECT_EQ(r.shared_histogram(0).objects(), 990u);
  EXPECT_EQ(r.shared_histogram(1).from_bytes(), 100u << 20);
  EXPECT_EQ(r.shared_histogram(1).to_bytes(), 0u);
}

analysis::DumpSummary Summary() {
  analysis::DumpSummary s;
  s.totals = {100, 10, 5, 90, 10, 5000, 4500, 500};
  s.classes.push_back({"com.acme.Item", 7, 168, 880});
  s.classes.push_back({"byte[]", 7, 700, 700});
  analysis::OwnerRow owner;
  owner.class_name = "java.util.ArrayList";
  owner.path = {"STICKY_CLASS class com.acme.App", "static ITEMS"};
  owner.retained_bytes = 880;
  owner.objects = 1;
  s.owners.push_back(owner);
  owner.class_name = "com.acme.Item";
  owner.path.push_back("field elementData");
  owner.path.push_back("[*]");
  owner.retained_bytes = 840;
  owner.objects = 7;
  s.owners.push_back(owner);
  return s;
}

TEST(ReportProtoTest, DumpSummaryRoundTripsThroughItsRecord) {
  const analysis::DumpSummary s = Summary();
  records::v1::ExtendedDumpSummary record;
  record.set_agent("a1");
  FillDumpSummaryRecord(s, &record);
  EXPECT_EQ(record.agent(), "a1");
  EXPECT_EQ(record.totals().objects(), 100u);
  EXPECT_EQ(record.totals().unreachable_shallow_bytes(), 500u);
  ASSERT_EQ(record.owners_size(), 2);
  EXPECT_THAT(record.owners(1).path(), ElementsAre("STICKY_CLASS class com.acme.App",
                                                   "static ITEMS", "field elementData", "[*]"));
  // Through the wire format, as the store keeps it.
  records::v1::ExtendedDumpSummary parsed;
  ASSERT_TRUE(parsed.ParseFromString(record.SerializeAsString()));
  const analysis::DumpSummary back = DumpSummaryFromRecord(parsed);
  const v1::ExtendedDumpTotals t1 = ToProto(s.totals), t2 = ToProto(back.totals);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(t1, t2));
  ASSERT_EQ(back.classes.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.classes[i].class_name, s.classes[i].class_name);
    EXPECT_EQ(back.classes[i].instances, s.classes[i].instances);
    EXPECT_EQ(back.classes[i].shallow_bytes, s.classes[i].shallow_bytes);
    EXPECT_EQ(back.classes[i].retained_bytes, s.classes[i].retained_bytes);
  }
  ASSERT_EQ(back.owners.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.owners[i].class_name, s.owners[i].class_name);
    EXPECT_EQ(back.owners[i].path, s.owners[i].path);
    EXPECT_EQ(back.owners[i].retained_bytes, s.owners[i].retained_bytes);
    EXPECT_EQ(back.owners[i].objects, s.owners[i].objects);
  }
}

TEST(ReportProtoTest, DiffIsTruncatedWithCounts) {
  analysis::DumpSummary before = Summary();
  analysis::DumpSummary after = Summary();
  after.classes[0].instances = 12;
  after.classes[0].retained_bytes = 1500;
  after.owners[0].retained_bytes = 1500;
  after.owners[1].objects = 12;
  after.classes.push_back({"com.acme.New", 1, 16, 16});
  after.totals.reachable_shallow_bytes = 5120;
  const analysis::DumpDiff diff = analysis::DiffDumpSummaries(before, after);

  v1::ExtendedDumpDiff all = ToProto(diff, 0, 0);
  EXPECT_EQ(all.class_count(), 3u);
  EXPECT_EQ(all.classes_size(), 3);
  EXPECT_EQ(all.owner_count(), 2u);
  EXPECT_EQ(all.owners_size(), 2);
  EXPECT_EQ(all.owner_classes_size(), 2);
  EXPECT_EQ(all.before_reachable_bytes(), 4500u);
  EXPECT_EQ(all.after_reachable_bytes(), 5120u);
  EXPECT_EQ(all.delta_reachable_bytes(), 620);
  const v1::ExtendedDumpClassDelta& first = all.classes(0);
  EXPECT_EQ(first.class_name(), "com.acme.Item");
  EXPECT_EQ(first.change(), v1::CLASS_CHANGE_CHANGED);
  EXPECT_EQ(first.before_instances(), 7u);
  EXPECT_EQ(first.after_instances(), 12u);
  EXPECT_EQ(first.delta_instances(), 5);
  EXPECT_EQ(first.delta_retained_bytes(), 620);
  EXPECT_EQ(all.classes(1).change(), v1::CLASS_CHANGE_NEW);
  EXPECT_EQ(all.classes(2).change(), v1::CLASS_CHANGE_UNCHANGED);
  const v1::OwnerDelta& owner = all.owners(0);
  EXPECT_EQ(owner.class_name(), "java.util.ArrayList");
  EXPECT_THAT(owner.path(), ElementsAre("STICKY_CLASS class com.acme.App", "static ITEMS"));
  EXPECT_EQ(owner.before_retained_bytes(), 880u);
  EXPECT_EQ(owner.after_retained_bytes(), 1500u);
  EXPECT_EQ(owner.delta_retained_bytes(), 620);
  EXPECT_EQ(all.owners(1).before_objects(), 7u);
  EXPECT_EQ(all.owners(1).after_objects(), 12u);
  EXPECT_EQ(all.owner_classes(0).class_name(), "java.util.ArrayList");
  EXPECT_EQ(all.owner_classes(0).delta_retained_bytes(), 620);

  v1::ExtendedDumpDiff cut = ToProto(diff, 1, 1);
  EXPECT_EQ(cut.class_count(), 3u);
  EXPECT_EQ(cut.classes_size(), 1);
  EXPECT_EQ(cut.owner_count(), 2u);
  EXPECT_EQ(cut.owners_size(), 1);
  EXPECT_EQ(cut.owner_classes_size(), 1);
  EXPECT_EQ(cut.owners(0).class_name(), "java.util.ArrayList");
}

// A leak at the end of a chain of 100,000 objects (a linked list held by a static field): the
// stored path from the GC root keeps its first and last 32 steps and counts the rest, so the
// report stays far below gRPC's 4 MiB message limit (3,152 bytes; with the whole path it was
// 3,547,350 bytes, measured).
TEST(ReportProtoTest, AVeryLongPathFromAGcRootIsStoredShortenedWithItsEnds) {
  using analysis::testing::Instance;
  constexpr uint64_t kNodes = 100'000;
  constexpr uint64_t kFirstNode = 0x100000;
  constexpr uint64_t kTail = 0x10;
  const auto node_id = [](uint64_t i) { return kFirstNode + 16 * i; };
  analysis::HeapGraphBuilder b{analysis::DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x1000);
  b.AddClass(Instance("java.lang.Class", {}, 96), 0x1010);
  analysis::ClassInfo head = Instance("com.acme.Chain", {}, 16);
  head.static_fields.push_back(analysis::FieldInfo{"FIRST", analysis::FieldType::kObject});
  const analysis::ClassId chain = b.AddClass(head, 0x1020);
  const analysis::ClassId node = b.AddClass(Instance("com.acme.Node", {"next"}, 24), 0x1030);
  const analysis::ClassId tail = b.AddClass(Instance("com.acme.Tail", {}, 40), 0x1040);
  b.SetStaticReferences(chain, {node_id(0)});
  for (uint64_t i = 0; i < kNodes; ++i) {  // iterative: no recursion over the chain anywhere
    b.AddInstance(node_id(i), node, {i + 1 < kNodes ? node_id(i + 1) : kTail});
  }
  b.AddInstance(kTail, tail, {});
  for (uint64_t c = 0x1000; c <= 0x1040; c += 0x10) {
    b.AddRoot(c, analysis::GcRootKind::kStickyClass);
  }
  auto graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status();
  analysis::ReportOptions options;
  options.suspect_class = "com.acme.Tail";
  auto report = analysis::BuildReport(*graph, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->suspect.has_value());

  // The path: the class object (root), FIRST -> node 0, next -> node 1, ..., next -> the tail.
  constexpr uint64_t kSteps = 1 + kNodes + 1;
  const analysis::GcRootPathReport& path = report->suspect->shortest_path;
  ASSERT_TRUE(path.found);
  EXPECT_TRUE(path.strong);
  ASSERT_EQ(path.steps.size(), analysis::kPathHeadSteps + analysis::kPathTailSteps);
  EXPECT_EQ(path.elided_steps, kSteps - 64);
  EXPECT_EQ(path.elided_after, 32u);
  EXPECT_EQ(path.steps.front().object.object_id, 0x1020u);
  EXPECT_EQ(path.steps.front().object.gc_root_kind, "STICKY_CLASS");
  EXPECT_EQ(path.steps[1].reference, "static FIRST");
  EXPECT_EQ(path.steps[1].object.object_id, node_id(0));
  EXPECT_EQ(path.steps[31].object.object_id, node_id(30));  // the last step before the gap
  // After the gap: the last 31 nodes and the tail, each reached through its field next.
  EXPECT_EQ(path.steps[32].object.object_id, node_id(kNodes - 31));
  EXPECT_EQ(path.steps[32].reference, "next");
  EXPECT_EQ(path.steps.back().object.object_id, kTail);
  EXPECT_EQ(path.steps.back().object.class_name, "com.acme.Tail");
  EXPECT_EQ(path.steps.back().reference, "next");
  ASSERT_FALSE(report->suspect->accumulation_points.empty());
  for (const analysis::AccumulationPointReport& p : report->suspect->accumulation_points) {
    EXPECT_LE(p.path.steps.size(), 64u);
  }

  v1::DrillDownReport stored;
  FillDrillDownReport(*report->suspect, report->top_objects, &stored);
  EXPECT_EQ(stored.shortest_path().steps_size(), 64);
  EXPECT_EQ(stored.shortest_path().elided_steps(), kSteps - 64);
  EXPECT_EQ(stored.shortest_path().elided_after(), 32u);
  EXPECT_EQ(stored.shortest_path().steps(63).object().object_id(), kTail);
  const size_t bytes = stored.ByteSizeLong();
  std::printf("stored drill-down report with a %llu-step path: %zu bytes\n",
              static_cast<unsigned long long>(kSteps), bytes);
  EXPECT_LT(bytes, 64u << 10);  // a few KiB, where the whole path was megabytes
}

}  // namespace
}  // namespace heapwatch::proto
