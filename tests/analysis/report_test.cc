// Tests of analysis/report.h: BuildReport on a small hand-built heap (a leak held by a static
// ArrayList, garbage, a weakly held object, tests/analysis/leak_heap.h) and its errors. Its JSON
// and text forms are ctl's (tests/ctl/dump_report_test.cc).
#include "analysis/report.h"

#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/leak_heap.h"

namespace heapwatch::analysis {
namespace {

using testing::LeakHeap;

TEST(ReportTest, SuspectAnalysisFindsTheStaticListAndItsPath) {
  auto graph = LeakHeap();
  ASSERT_TRUE(graph.ok()) << graph.status();
  ReportOptions options;
  options.suspect_class = "com.acme.Session";
  options.top_objects = 3;
  auto report = BuildReport(*graph, options);
  ASSERT_TRUE(report.ok()) << report.status();

  const uint64_t session = graph->shallow_size(graph->FindObject(0x3000));
  const uint64_t data = graph->shallow_size(graph->FindObject(0x4000));
  EXPECT_EQ(report->totals.objects, graph->object_count());
  EXPECT_EQ(report->totals.unreachable_objects, 2u);  // the garbage Session and its byte[]
  EXPECT_EQ(report->totals.unreachable_shallow_bytes, session + data);
  EXPECT_EQ(report->totals.reachable_objects + report->totals.unreachable_objects,
            report->totals.objects);

  ASSERT_TRUE(report->suspect.has_value());
  const SuspectReport& s = *report->suspect;
  EXPECT_EQ(s.instances, 5u);  // 4 in the list + the weakly held one (weak references are followed)
  EXPECT_EQ(s.shallow_bytes, 5 * session);
  EXPECT_EQ(s.minimum_retained_bytes, 5 * (session + data));
  EXPECT_EQ(s.retained_bytes, 5 * (session + data));  // nothing else dies with them
  ASSERT_EQ(s.accumulation_points.size(), 1u);
  const AccumulationPointReport& point = s.accumulation_points[0];
  EXPECT_EQ(point.object.object_id, 0x2000u);  // the ArrayList's Object[]
  EXPECT_EQ(point.object.class_name, "java.lang.Object[]");
  EXPECT_EQ(point.suspect_instances, 4u);
  EXPECT_DOUBLE_EQ(point.share, 0.8);
  ASSERT_TRUE(point.path.found);
  EXPECT_TRUE(point.path.strong);
  std::vector<std::string> refs;
  for (const PathStepReport& step : point.path.steps) refs.push_back(step.reference);
  EXPECT_THAT(refs, ::testing::ElementsAre("", "static SESSIONS", "elementData"));
  EXPECT_EQ(point.path.steps.front().object.class_name, "class com.acme.Registry");
  EXPECT_EQ(point.path.steps.front().object.gc_root_kind, "STICKY_CLASS");

  // Who keeps them alive: the Registry class (past ArrayList and Object[]), and the weak
  // reference's class is java.* so that one climbs to <ROOT>.
  ASSERT_EQ(s.kept_alive_by.size(), 2u);
  EXPECT_EQ(s.kept_alive_by[0].class_name, "class com.acme.Registry");
  EXPECT_EQ(s.kept_alive_by[0].dominated, 4u);
  EXPECT_EQ(s.kept_alive_by[0].biggest_dominator.object_id, 0x30u);
  EXPECT_EQ(s.kept_alive_by[1].class_name, "<ROOT>");
  EXPECT_EQ(s.kept_alive_by[1].dominated, 1u);

  // The shortest path leads to an instance (all have the same retained size: the lowest index
  // wins).
  ASSERT_TRUE(s.shortest_path.found);
  EXPECT_EQ(s.shortest_path.steps.back().object.class_name, "com.acme.Session");

  // Histogram: Session's retained size is the minimum retained size of its reachable instances.
  auto row = std::find_if(report->histogram.begin(), report->histogram.end(),
                          [](const ClassRow& r) { return r.class_name == "com.acme.Session"; });
  ASSERT_NE(row, report->histogram.end());
  EXPECT_EQ(row->instances, 5u);
  EXPECT_EQ(row->retained_bytes, 5 * (session + data));
  ASSERT_EQ(report->top_objects.size(), 3u);
  EXPECT_EQ(report->top_objects[0].class_name, "class com.acme.Registry");
  EXPECT_GE(report->top_objects[0].retained_bytes, report->top_objects[1].retained_bytes);
}

// Exact dynamic sizes (strong references only) of the suspect's instances together, of the
// accumulation point and of the biggest objects, figured by hand from the heap's construction.
TEST(ReportTest, DynamicSizesOfTheSuspectThePointAndTheBiggestObjects) {
  auto graph = LeakHeap();
  ASSERT_TRUE(graph.ok()) << graph.status();
  ReportOptions options;
  options.suspect_class = "com.acme.Session";
  options.top_objects = 3;
  options.dynamic_sizes = true;
  auto report = BuildReport(*graph, options);
  ASSERT_TRUE(report.ok()) << report.status();
  auto size = [&](uint64_t id) { return graph->shallow_size(graph->FindObject(id)); };
  const uint64_t session = size(0x3000), data = size(0x4000);

  const SuspectReport& s = *report->suspect;
  // The five reachable Sessions (the weakly held one too: it is an instance) and their byte[].
  EXPECT_EQ(s.dynamic_objects, 10u);
  EXPECT_EQ(s.dynamic_bytes, 5 * (session + data));
  // The Object[] reaches itself, four Sessions and their byte[].
  ASSERT_EQ(s.accumulation_points.size(), 1u);
  EXPECT_EQ(s.accumulation_points[0].object.dynamic_objects, 9u);
  EXPECT_EQ(s.accumulation_points[0].object.dynamic_bytes, size(0x2000) + 4 * (session + data));
  // The biggest object, class com.acme.Registry, reaches through its static field the ArrayList,
  // its Object[] and what that holds.
  ASSERT_EQ(report->top_objects.size(), 3u);
  const ObjectSummary& registry = report->top_objects[0];
  EXPECT_EQ(registry.class_name, "class com.acme.Registry");
  EXPECT_EQ(registry.dynamic_objects, 11u);
  EXPECT_EQ(registry.dynamic_bytes,
            size(0x30) + size(0x1000) + size(0x2000) + 4 * (session + data));
  for (const ObjectSummary& o : report->top_objects) {
    EXPECT_GE(o.dynamic_objects, 1u) << o.class_name;
    EXPECT_GE(o.dynamic_bytes, o.shallow_bytes) << o.class_name;
  }

  // Without the option nothing is computed.
  options.dynamic_sizes = false;
  auto plain = BuildReport(*graph, options);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->suspect->dynamic_objects, 0u);
  EXPECT_EQ(plain->top_objects[0].dynamic_objects, 0u);
  EXPECT_EQ(plain->timings.dynamic_seconds, 0);
}

TEST(ReportTest, ErrorsAreReturned) {
  auto graph = LeakHeap();
  ASSERT_TRUE(graph.ok());
  ReportOptions unknown;
  unknown.suspect_class = "com.acme.Nope";
  EXPECT_EQ(BuildReport(*graph, unknown).status().code(), absl::StatusCode::kNotFound);
  ReportOptions bad_pattern;
  bad_pattern.exclude_patterns = std::vector<std::string>{"(("};
  EXPECT_EQ(BuildReport(*graph, bad_pattern).status().code(), absl::StatusCode::kInvalidArgument);
  ReportOptions bad_ratio;
  bad_ratio.suspect_class = "com.acme.Session";
  bad_ratio.accumulation_ratio = 0;
  EXPECT_EQ(BuildReport(*graph, bad_ratio).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReportTest, EmptyGraph) {
  HeapGraph empty;
  auto report = BuildReport(empty, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->totals.objects, 0u);
  EXPECT_TRUE(report->histogram.empty());
  EXPECT_TRUE(report->top_objects.empty());
}

}  // namespace
}  // namespace heapwatch::analysis
