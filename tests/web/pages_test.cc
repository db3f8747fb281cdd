// The web pages (web/pages.h) on a crafted heap dump whose class and field names are markup and
// script: the dump is written with the HPROF test writer, analysed by the real pipeline
// (pipeline/analyze_dump.h), converted into the report model as the daemon does
// (proto/report_proto.h), and rendered. Every hostile name must come out as text. The rendered page
// is also written to $HEAPWATCH_WEB_HOSTILE_PAGE (when set) for the headless-browser check in
// hostile_page_chromium.sh.
#include "web/pages.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"
#include "tests/collectors/dumps/hprof_test_writer.h"
#include "web/html.h"

namespace heapwatch::web {
namespace {

// Java names as the reader gives them ('/' in an internal name becomes '.', so the markup that
// needs a '/' is in the field name).
constexpr char kHolder[] = "Evil<script>alert('holder')</script>";  // internal form, '/'->'.'
constexpr char kLeaf[] = "Leak&<img src=x onerror=alert(1)>\"q\"";
constexpr char kField[] = "</svg><script>alert(\"field\")</script>";

std::string HostileDump() {
  hprof::testing::HprofWriter w(8);
  w.String(1, kField);
  w.NamedClass(0x100, "java/lang/Object")
      .NamedClass(0x110, kHolder)
      .NamedClass(0x120, kLeaf)
      .NamedClass(0x130, "[Ljava/lang/Object;");
  w.Sub(w.ClassDump(0x100, 0, 0, 0, {}));
  w.Sub(w.ClassDump(0x110, 0x100, 0, 0, {}, {{1, 2, 0x2000}}));
  w.Sub(w.ClassDump(0x120, 0x100, 0, 16, {}));
  w.Sub(w.ClassDump(0x130, 0x100, 0, 0, {}));
  w.Sub(w.Root(0x05, 0x110));  // sticky class: the holder class keeps its static field alive
  std::vector<uint64_t> leaves;
  for (uint64_t i = 0; i < 200; ++i) leaves.push_back(0x3000 + 16 * i);
  w.Sub(w.ObjectArray(0x2000, 0x130, leaves));
  for (uint64_t id : leaves) w.Sub(w.Instance(id, 0x120, ""));
  w.FlushHeapDump();
  return w.take();
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(WebPagesTest, HostileNamesFromADumpAreShownAsText) {
  const std::string path =
      (std::filesystem::temp_directory_path() / absl::StrCat("hw-hostile-", getpid(), ".hprof"))
          .string();
  {
    std::ofstream out(path, std::ios::binary);
    out << HostileDump();
  }
  pipeline::AnalyzeDumpOptions options;
  options.suspect_classes = {kLeaf};
  auto analysis = pipeline::AnalyzeDump(path, options);
  std::filesystem::remove(path);
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  ASSERT_EQ(analysis->suspects.size(), 1u);
  ASSERT_FALSE(analysis->suspects[0].accumulation_points.empty());

  v1::DrillDownReport report;
  report.set_agent("host:1-2");
  proto::FillDrillDownReport(analysis->suspects[0], analysis->report.top_objects, &report);
  for (const auto& row : analysis->report.top_dominators_by_class) {
    *report.add_top_dominators_by_class() = proto::ToProto(row);
  }
  report.set_accumulation_point_top_class(analysis->accumulation_point_top_classes[0]);
  ASSERT_EQ(analysis->suspect_treemaps.size(), 1u);
  *report.mutable_dominator_treemap() = proto::ToProto(analysis->suspect_treemaps[0]);
  // The holder's class object is named by the class whose statics it holds (hostile name and all),
  // and it is the marked cell: the accumulation point (the array) lies under its static field.
  ASSERT_GT(report.dominator_treemap().cells_size(), 0);
  const v1::TreemapCell& top = report.dominator_treemap().cells(0);
  EXPECT_EQ(top.label(), "class Evil<script>alert('holder')<.script> (statics)");  // as read
  EXPECT_EQ(top.kind(), "statics");
  EXPECT_TRUE(top.accumulation_point());
  // The holder class's object is the top-level dominator above the array (the accumulation point);
  // the dump has no java.lang.Class, so its class is unknown. It names one of the treemap's rows.
  EXPECT_EQ(report.accumulation_point_top_class(), "<unknown class>");
  bool named = false;
  for (const v1::ClassRetained& row : report.top_dominators_by_class()) {
    named |= row.class_name() == report.accumulation_point_top_class();
  }
  EXPECT_TRUE(named);
  report.mutable_dump()->set_dump_id("20261124T000000.000000Z");
  report.mutable_dump()->set_state(v1::EXTENDED_DUMP_STATE_DONE);
  report.mutable_dump()->set_format(analysis->report.dump_format);

  ReportPageData data;
  data.agent = "host:1-2";
  data.dump_id = report.dump().dump_id();
  data.dump = report.dump();
  data.reports.push_back(report);
  v1::ExtendedDumpDiff diff;
  diff.set_from_dump("a");
  diff.set_to_dump(data.dump_id);
  v1::ExtendedDumpClassDelta* c = diff.add_classes();
  c->set_class_name(kLeaf);
  c->set_delta_retained_bytes(3200);
  v1::OwnerDelta* owner = diff.add_owners();
  owner->set_class_name(kHolder);
  owner->add_path(absl::StrCat("static ", kField));
  data.diff = diff;
  v1::Leak leak;
  leak.set_leak("L000000000001");
  leak.set_main_class(kLeaf);
  leak.add_classes()->set_class_name(kLeaf);
  data.leaks.push_back(leak);
  const std::string html = RenderReportPage(data, {});

  // No hostile markup survives; every svg the page opens it closes itself.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("onerror=alert(1)>"), std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  // The names are there, as text.
  EXPECT_NE(html.find(EscapeHtml("Leak&<img src=x onerror=alert(1)>\"q\"")), std::string::npos);
  EXPECT_NE(html.find(EscapeHtml(kField)), std::string::npos) << "the path's field name";
  EXPECT_NE(html.find("Evil&lt;script&gt;alert(&#39;holder&#39;)&lt;.script&gt;"),
            std::string::npos);
  // The two-level treemap, with the accumulation point's cells marked and labelled.
  EXPECT_NE(html.find("class=\"treemap nested\""), std::string::npos);
  EXPECT_NE(html.find("<g class=\"cell level1 highlight\""), std::string::npos);
  EXPECT_NE(html.find("class=\"ap-caption\""), std::string::npos);
  EXPECT_NE(html.find("(statics)"), std::string::npos);

  if (const char* out = std::getenv("HEAPWATCH_WEB_HOSTILE_PAGE")) {
    std::ofstream(out) << html;
  }
}

TEST(WebPagesTest, AgentsAndLeaksPagesEscapeJvmStrings) {
  AgentsPageData agents;
  v1::Agent* a = agents.agents.add_agents();
  a->set_agent("h:1-2");
  a->set_main_class("<script>x</script>");
  a->set_host("\"><b>");
  a->set_state(v1::AGENT_STATE_UP);
  a->set_last_error("<i>err</i>");
  (*a->mutable_labels())["team"] = "<u>core</u>";
  (*a->mutable_labels())["env"] = "prod";
  v1::GetLiveSetResponse live;
  for (int i = 0; i < 12; ++i) {
    v1::LiveSetPoint* p = live.add_points();
    p->mutable_time()->set_seconds(1000 + 10 * i);
    p->set_live_bytes(1000000 + 1000 * i);
  }
  agents.live_sets["h:1-2"] = live;
  PageOptions options;
  options.external_url = "https://hw.example";
  options.now = absl::FromUnixSeconds(2000);
  const std::string page = RenderAgentsPage(agents, options);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<b>"), std::string::npos);
  EXPECT_EQ(page.find("<i>"), std::string::npos);
  EXPECT_EQ(page.find("<u>"), std::string::npos);
  // A registered agent's labels, in key order, escaped.
  EXPECT_NE(page.find("env=prod, team=&lt;u&gt;core&lt;/u&gt;</span>"), std::string::npos) << page;
  EXPECT_NE(page.find("data-points=\"12\""), std::string::npos) << "the live-set sparkline";
  EXPECT_NE(page.find("href=\"https://hw.example/agents/h%3A1-2/leaks\""), std::string::npos);

  LeaksPageData leaks;
  leaks.agent = "h:1-2";
  leaks.range_name = "15m";
  leaks.from = options.now - absl::Minutes(15);
  v1::Leak* l = leaks.leaks.add_leaks();
  l->set_leak("L1");
  l->set_main_class("a<b");
  l->add_classes()->set_class_name("a<b");
  l->set_dump_id("d1");
  l->add_classes()->set_class_name("second\"<i>");
  l->mutable_time_scale()->set_seconds(0);  // the trend tests ran on every snapshot
  v1::GetClassHistoryResponse h;
  for (int i = 0; i < 5; ++i) {
    v1::ClassSample* s = h.add_samples();
    s->mutable_time()->set_seconds(1100 + i);
    s->set_bytes(100 * i);
  }
  leaks.histories["a<b"] = h;
  for (v1::ClassSample& s : *h.mutable_samples()) s.set_bytes(s.bytes() * 2);
  leaks.histories["second\"<i>"] = h;
  v1::ExtendedDump* d = leaks.reports.add_dumps();
  d->set_dump_id("d1");
  d->set_state(v1::EXTENDED_DUMP_STATE_DONE);
  const std::string lp = RenderLeaksPage(leaks, options);
  EXPECT_EQ(lp.find("a<b"), std::string::npos);
  EXPECT_NE(lp.find("data-points=\"5\""), std::string::npos);
  EXPECT_NE(lp.find("href=\"https://hw.example/agents/h%3A1-2/reports/d1\""), std::string::npos);
  EXPECT_NE(lp.find("report ready"), std::string::npos);
  EXPECT_EQ(lp.find("<i>"), std::string::npos);
  // The time scale 0 means "every snapshot", not a duration of 0.
  EXPECT_NE(lp.find("<td>every snapshot</td>"), std::string::npos);
  // The combined plot: one polyline per class plus the total, and a legend with escaped names.
  EXPECT_NE(lp.find("data-series=\"3\""), std::string::npos);
  EXPECT_NE(lp.find("<ul class=\"legend\">"), std::string::npos);
  EXPECT_NE(lp.find("second&quot;&lt;i&gt;</li>"), std::string::npos);
  EXPECT_NE(lp.find("total of the leak</li>"), std::string::npos);
  // Every plot has a time and a bytes axis.
  EXPECT_EQ(Count(lp, "class=\"axis x-axis\""), 3u);
  EXPECT_EQ(Count(lp, "class=\"axis y-axis\""), 3u);
  // The reports list: newest first, every analysed dump linked by its stable URL.
  v1::ListReportsResponse dumps;
  for (const char* id : {"d3", "d2", "d1"}) {
    v1::ExtendedDump* x = dumps.add_dumps();
    x->set_dump_id(id);
    x->set_state(std::string(id) == "d2" ? v1::EXTENDED_DUMP_STATE_FAILED
                                         : v1::EXTENDED_DUMP_STATE_DONE);
  }
  const std::string rp = RenderReportsPage("h:1-2", dumps, options);
  const size_t d3 = rp.find("href=\"https://hw.example/agents/h%3A1-2/reports/d3\"");
  const size_t d1 = rp.find("href=\"https://hw.example/agents/h%3A1-2/reports/d1\"");
  ASSERT_NE(d3, std::string::npos);
  ASSERT_NE(d1, std::string::npos);
  EXPECT_LT(d3, d1);
  EXPECT_EQ(rp.find("/reports/d2\""), std::string::npos) << "a failed dump has no report";
}

// A path stored shortened (heapwatch.proto GcRootPath.elided_steps) shows the gap, counted, as one
// item of the list, between the steps either side of it.
TEST(WebPagesTest, AShortenedPathShowsHowManyStepsWereLeftOut) {
  v1::DrillDownReport report;
  report.set_class_name("com.acme.Tail");
  report.mutable_dump()->set_dump_id("20261124T000000.000000Z");
  report.mutable_dump()->set_state(v1::EXTENDED_DUMP_STATE_DONE);
  v1::GcRootPath* path = report.mutable_shortest_path();
  path->set_found(true);
  path->set_strong(true);
  for (const char* cls : {"com.acme.Chain", "com.acme.Node", "com.acme.Node", "com.acme.Tail"}) {
    v1::PathStep* step = path->add_steps();
    step->set_reference(path->steps_size() == 1 ? "" : "next");
    step->mutable_object()->set_class_name(cls);
  }
  path->set_elided_steps(99'938);
  path->set_elided_after(2);
  ReportPageData data;
  data.agent = "host-1-a";
  data.dump_id = report.dump().dump_id();
  data.dump = report.dump();
  data.reports.push_back(report);
  const std::string html = RenderReportPage(data, {});
  const std::string item = "<li class=\"muted elided\">... 99,938 steps ...</li>";
  const size_t gap = html.find(item);
  ASSERT_NE(gap, std::string::npos) << html;
  // Between the second and the third step.
  const size_t second = html.find("<li>", html.find("<ol class=\"path\">") + 5);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(html.find("<li>", second + 1), gap);
  EXPECT_LT(gap, html.find("com.acme.Tail</span>", gap));
  EXPECT_EQ(html.find(" steps ...", gap + item.size()), std::string::npos);  // once
}

// A forecast consistent with itself: (512 MiB - 247.4 MiB) / 955.3 KiB/s = 284 s; the interval's
// slopes 1,150,000 and 800,000 B/s give 241 s and 347 s. Computed at 2023-11-14 22:23:20Z.
v1::HeapExhaustion Forecast() {
  v1::HeapExhaustion f;
  f.mutable_estimate()->set_seconds(284);
  f.mutable_soonest()->set_seconds(241);
  f.mutable_latest()->set_seconds(347);
  f.set_growth_bytes_per_second(978'227);
  f.set_growth_low_bytes_per_second(800'000);
  f.set_growth_high_bytes_per_second(1'150'000);
  f.set_live_bytes(259'417'702);
  f.set_max_bytes(512 << 20);
  f.mutable_computed_time()->set_seconds(1'700'000'600);
  f.set_points(14);
  return f;
}

// A growing live set whose classes are not named yet (heapwatch.proto Leak.kind "heap").
v1::Leak HeapLeak() {
  v1::Leak l;
  l.set_agent("h:1-2");
  l.set_leak("L00000000beef");
  l.set_kind("heap");
  l.set_detail("the live set grows 955.3 KiB/s (now 247.4 MiB); its classes are not named yet");
  l.set_bytes(259'417'702);
  l.set_growth_bytes_per_second(978'227);
  l.set_score(0.97);
  *l.mutable_heap_exhaustion() = Forecast();
  return l;
}

std::string Section(const std::string& page, const std::string& leak) {
  const size_t start = page.find("<section class=\"leak\" id=\"" + leak + "\"");
  if (start == std::string::npos) return "";
  return page.substr(start, page.find("</section>", start) - start);
}

TEST(WebPagesTest, LeaksPageShowsTheForecastFirstAndAHeapLeakAsTheLiveSet) {
  PageOptions options;
  options.now = absl::FromUnixSeconds(1'700'000'700);
  LeaksPageData data;
  data.agent = "h:1-2";
  data.range_name = "15m";
  data.from = options.now - absl::Minutes(15);
  data.info.emplace();
  data.info->set_agent("h:1-2");
  data.info->set_state(v1::AGENT_STATE_UP);
  *data.info->mutable_heap_exhaustion() = Forecast();
  *data.leaks.add_leaks() = HeapLeak();
  v1::Leak* other = data.leaks.add_leaks();  // a class leak without the forecast
  other->set_leak("L2");
  other->set_main_class("com.example.Cache");
  other->add_classes()->set_class_name("com.example.Cache");
  for (int i = 0; i < 6; ++i) {
    v1::LiveSetPoint* p = data.live_set.add_points();
    p->mutable_time()->set_seconds(1'700'000'000 + 100 * i);
    p->set_live_bytes(200'000'000 + 10'000'000 * i);
  }
  const std::string page = RenderLeaksPage(data, options);

  // The forecast box, before the first leak.
  const size_t box = page.find(
      "<div class=\"forecast\" id=\"heap-exhaustion\" data-estimate-seconds=\"284\" "
      "data-soonest-seconds=\"241\" data-latest-seconds=\"347\">");
  ASSERT_NE(box, std::string::npos) << page;
  EXPECT_LT(box, page.find("<section class=\"leak\""));
  EXPECT_LT(box, page.find("<p class=\"ranges\">"));
  EXPECT_NE(page.find("<p class=\"headline\">Heap full in about 4m44s</p>"), std::string::npos);
  EXPECT_NE(page.find("90 % interval 4m1s – 5m47s; full around 2023-11-14 22:28:04 UTC."),
            std::string::npos)
      << page;
  EXPECT_NE(
      page.find("Live set <strong>247.4 MiB</strong> of 512.0 MiB maximum heap (48.3%), growing "
                "<strong>56.0 MiB/min</strong> (interval 45.8 MiB/min – 65.8 MiB/min)."),
      std::string::npos)
      << page;
  EXPECT_NE(page.find("A straight line through 14 live-set points up to 2023-11-14 22:23:20 UTC"),
            std::string::npos);
  EXPECT_NE(page.find("The growth belongs to leak <a href=\"#L00000000beef\">L00000000beef</a>."),
            std::string::npos);

  // The heap leak: named as the live set, with its detail, its forecast row and a plot of the live
  // set; no empty main class and no empty classes table.
  const std::string heap = Section(page, "L00000000beef");
  ASSERT_FALSE(heap.empty()) << page;
  EXPECT_NE(heap.find("data-kind=\"heap\""), std::string::npos);
  EXPECT_NE(
      heap.find("<h2>Leak <code>L00000000beef</code>: <span class=\"main-class\">live set</span> "
                "<span class=\"muted\">(classes not named yet)</span></h2>"),
      std::string::npos)
      << heap;
  EXPECT_EQ(heap.find("<span class=\"cls main-class\"></span>"), std::string::npos);
  EXPECT_NE(
      heap.find("<p class=\"detail\">the live set grows 955.3 KiB/s (now 247.4 MiB); its classes "
                "are not named yet</p>"),
      std::string::npos);
  EXPECT_NE(
      heap.find("<th>Heap full in</th><td colspan=\"5\"><span class=\"warn\">about 4m44s</span> "
                "(4m1s – 5m47s)"),
      std::string::npos)
      << heap;
  EXPECT_NE(heap.find("<div class=\"live-set\"><svg"), std::string::npos);
  EXPECT_NE(heap.find("data-points=\"6\""), std::string::npos);
  EXPECT_EQ(heap.find("<table class=\"classes\">"), std::string::npos);
  // The class leak is as before: its main class, its classes, no forecast row.
  const std::string cls = Section(page, "L2");
  EXPECT_NE(cls.find("<span class=\"cls main-class\">com.example.Cache</span>"), std::string::npos);
  EXPECT_NE(cls.find("<table class=\"classes\">"), std::string::npos);
  EXPECT_EQ(cls.find("Heap full in"), std::string::npos);
  EXPECT_EQ(cls.find("data-kind"), std::string::npos);
  EXPECT_EQ(cls.find("class=\"live-set\""), std::string::npos);

  // Unbounded latest end; the forecast from the leak when ListAgents does not name the agent.
  data.info.reset();
  data.leaks.mutable_leaks(0)->mutable_heap_exhaustion()->clear_latest();
  const std::string unbounded = RenderLeaksPage(data, options);
  EXPECT_NE(unbounded.find("data-latest-seconds=\"inf\""), std::string::npos);
  EXPECT_NE(unbounded.find("90 % interval 4m1s – never;"), std::string::npos);
  // No forecast, no box.
  data.leaks.mutable_leaks(0)->clear_heap_exhaustion();
  EXPECT_EQ(RenderLeaksPage(data, options).find("heap-exhaustion\""), std::string::npos);

  // The agents page says it under the live set.
  AgentsPageData agents;
  v1::Agent* a = agents.agents.add_agents();
  a->set_agent("h:1-2");
  a->set_state(v1::AGENT_STATE_UP);
  *a->mutable_heap_exhaustion() = Forecast();
  agents.agents.add_agents()->set_agent("h:3-4");
  const std::string ap = RenderAgentsPage(agents, options);
  EXPECT_EQ(Count(ap, "heap full in about"), 1u);
  EXPECT_NE(ap.find("<span class=\"warn forecast-short\">heap full in about 4m44s</span>"),
            std::string::npos);
}

// ServePage asks for the live set over the page's range when a "heap" leak is listed, and only
// then.
TEST(WebPagesTest, ServePageFetchesTheLiveSetForAHeapLeak) {
  class Source final : public QuerySource {
   public:
    bool heap = true;
    std::vector<v1::GetLiveSetRequest> live_set_requests;
    Status ListAgents(const v1::ListAgentsRequest&, v1::ListAgentsResponse* r) override {
      v1::Agent* a = r->add_agents();
      a->set_agent("h:1-2");
      a->set_state(v1::AGENT_STATE_UP);
      *a->mutable_heap_exhaustion() = Forecast();
      return absl::OkStatus();
    }
    Status ListLeaks(const v1::ListLeaksRequest&, v1::ListLeaksResponse* r) override {
      if (heap) *r->add_leaks() = HeapLeak();
      return absl::OkStatus();
    }
    Status GetLiveSet(const v1::GetLiveSetRequest& q, v1::GetLiveSetResponse* r) override {
      live_set_requests.push_back(q);
      for (int i = 0; i < 4; ++i) {
        v1::LiveSetPoint* p = r->add_points();
        p->mutable_time()->set_seconds(q.start_time().seconds() + 60 * i);
        p->set_live_bytes(100'000'000 + i);
      }
      return absl::OkStatus();
    }
    Status GetClassHistory(const v1::GetClassHistoryRequest&,
                           v1::GetClassHistoryResponse*) override {
      return absl::NotFoundError("no class");
    }
    Status ListReports(const v1::ListReportsRequest&, v1::ListReportsResponse*) override {
      return absl::FailedPreconditionError("escalation is off");
    }
    Status GetReport(const v1::GetReportRequest&, v1::GetReportResponse*) override {
      return absl::NotFoundError("no report");
    }
    Status DiffExtendedDumps(const v1::DiffExtendedDumpsRequest&,
                             v1::DiffExtendedDumpsResponse*) override {
      return absl::NotFoundError("no dump");
    }
  } source;
  PageOptions options;
  options.now = absl::FromUnixSeconds(1'700'000'700);
  HttpResponse r = ServePage(source, "/agents/h%3A1-2/leaks", "range=6h", options);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(source.live_set_requests.size(), 1u);
  EXPECT_EQ(source.live_set_requests[0].agent(), "h:1-2");
  EXPECT_EQ(source.live_set_requests[0].start_time().seconds(), 1'700'000'700 - 6 * 3600);
  EXPECT_EQ(source.live_set_requests[0].end_time().seconds(), 1'700'000'700);
  EXPECT_NE(r.body.find("id=\"heap-exhaustion\""), std::string::npos);
  EXPECT_NE(Section(r.body, "L00000000beef").find("data-points=\"4\""), std::string::npos);

  source.heap = false;
  source.live_set_requests.clear();
  r = ServePage(source, "/agents/h%3A1-2/leaks", "", options);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(source.live_set_requests.empty());
  EXPECT_NE(r.body.find("id=\"heap-exhaustion\""), std::string::npos);  // the agent's forecast
}

TEST(WebPagesTest, RangesAreTheFiveOffered) {
  EXPECT_EQ(ParseRange("15m"), absl::Minutes(15));
  EXPECT_EQ(ParseRange("7d"), absl::Hours(168));
  EXPECT_FALSE(ParseRange("2h").has_value());
  EXPECT_FALSE(ParseRange("").has_value());
}

}  // namespace
}  // namespace heapwatch::web
