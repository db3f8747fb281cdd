#include "web/html.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace heapwatch::web {
namespace {

TEST(EscapeHtmlTest, EscapesMarkupQuotesAndAmpersands) {
  EXPECT_EQ(EscapeHtml("<script>alert(\"x\")</script>"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  EXPECT_EQ(EscapeHtml("a&b 'c'"), "a&amp;b &#39;c&#39;");
  EXPECT_EQ(EscapeHtml("</svg>"), "&lt;/svg&gt;");
  EXPECT_EQ(EscapeHtml("java.util.HashMap$Node[]"), "java.util.HashMap$Node[]");
  EXPECT_EQ(EscapeHtml(""), "");
}

TEST(EscapeHtmlTest, AttributeContextCannotBeLeft) {
  // Inside a double- or single-quoted attribute no quote survives.
  const std::string hostile = "x\" onmouseover=\"alert(1)' y='";
  const std::string escaped = EscapeHtml(hostile);
  EXPECT_EQ(escaped.find('"'), std::string::npos);
  EXPECT_EQ(escaped.find('\''), std::string::npos);
  EXPECT_EQ(escaped.find('<'), std::string::npos);
}

TEST(EscapeHtmlTest, KeepsValidUtf8AndReplacesInvalidBytesAndControls) {
  EXPECT_EQ(EscapeHtml("Größe 😀"), "Größe 😀");
  EXPECT_EQ(EscapeHtml(std::string("a\xff"
                                   "b")),
            "a&#xFFFD;b");
  EXPECT_EQ(EscapeHtml(std::string("\xc3")), "&#xFFFD;");              // truncated sequence
  EXPECT_EQ(EscapeHtml(std::string("\xc0\xbc")), "&#xFFFD;&#xFFFD;");  // overlong '<'
  EXPECT_EQ(EscapeHtml(std::string("a\0b", 3)), "a&#xFFFD;b");
  EXPECT_EQ(EscapeHtml("a\tb\nc"), "a\tb\nc");
}

TEST(UrlTest, EncodesEverythingButUnreservedAndDecodesBack) {
  EXPECT_EQ(UrlEncode("host:1234-17000"), "host%3A1234-17000");
  EXPECT_EQ(UrlEncode("a b/<\">"), "a%20b%2F%3C%22%3E");
  for (const std::string s : {"abc", "h:1:2", "<script>&'\"", "ünï"}) {
    EXPECT_EQ(UrlDecode(UrlEncode(s)), s);
  }
  EXPECT_EQ(UrlDecode("%zz%4"), "%zz%4");
}

TEST(FormatBytesTest, BinaryUnits) {
  EXPECT_EQ(FormatBytes(312), "312 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3.0 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(FormatBytes(-2048), "-2.0 KiB");
}

TEST(SparklineTest, OnePointPerSampleInsideTheBox) {
  for (size_t n : {1u, 2u, 7u, 500u}) {
    std::vector<PlotPoint> points;
    for (size_t i = 0; i < n; ++i) points.push_back({1000.0 + 15 * i, 1e6 + 37.0 * (i % 5)});
    const std::string attr = PolylinePoints(points, 140, 28);
    std::vector<std::string> pairs = absl::StrSplit(attr, ' ');
    ASSERT_EQ(pairs.size(), n);
    for (const std::string& p : pairs) {
      double x, y;
      ASSERT_EQ(std::sscanf(p.c_str(), "%lf,%lf", &x, &y), 2) << p;
      EXPECT_GE(x, 0);
      EXPECT_LE(x, 140);
      EXPECT_GE(y, 0);
      EXPECT_LE(y, 28);
    }
    const std::string svg = SvgLinePlot(points, 140, 28, "t");
    EXPECT_NE(svg.find("data-points=\"" + std::to_string(n) + "\""), std::string::npos);
  }
  EXPECT_EQ(PolylinePoints({}, 10, 10), "");
  EXPECT_EQ(SvgLinePlot({}, 10, 10, "t").find("<polyline"), std::string::npos);
}

TEST(SparklineTest, SmallestValueAtTheBottomLargestAtTheTop) {
  const std::string attr = PolylinePoints({{0, 5}, {1, 10}, {2, 0}}, 100, 50);
  EXPECT_EQ(attr, "0.00,25.00 50.00,0.00 100.00,50.00");
}

double Area(const TreemapRect& r) { return r.width * r.height; }

TEST(SquarifiedLayoutTest, AreasAreProportionalAddUpAndTileTheBox) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const size_t n = 1 + rng() % 40;
    std::vector<double> weights(n);
    double total = 0;
    for (double& w : weights) {
      w = (rng() % 4 == 0) ? 0 : 1 + rng() % 100000;
      total += w;
    }
    const double width = 50 + rng() % 900, height = 50 + rng() % 400;
    const std::vector<TreemapRect> rects = SquarifiedLayout(weights, 10, 20, width, height);
    size_t positive = 0;
    for (double w : weights) positive += w > 0;
    ASSERT_EQ(rects.size(), positive);
    double sum = 0;
    for (const TreemapRect& r : rects) {
      sum += Area(r);
      EXPECT_NEAR(Area(r), weights[r.item] / total * width * height, 1e-6 * width * height);
      EXPECT_GE(r.x, 10 - 1e-9);
      EXPECT_GE(r.y, 20 - 1e-9);
      EXPECT_LE(r.x + r.width, 10 + width + 1e-6);
      EXPECT_LE(r.y + r.height, 20 + height + 1e-6);
    }
    if (positive > 0) EXPECT_NEAR(sum, width * height, 1e-6 * width * height);
    // No two rectangles overlap.
    for (size_t i = 0; i < rects.size(); ++i) {
      for (size_t j = i + 1; j < rects.size(); ++j) {
        const double ox = std::min(rects[i].x + rects[i].width, rects[j].x + rects[j].width) -
                          std::max(rects[i].x, rects[j].x);
        const double oy = std::min(rects[i].y + rects[i].height, rects[j].y + rects[j].height) -
                          std::max(rects[i].y, rects[j].y);
        EXPECT_FALSE(ox > 1e-6 && oy > 1e-6) << "rects " << i << " and " << j << " overlap";
      }
    }
  }
}

TEST(SquarifiedLayoutTest, PaperExampleHasTheSquarifiedRows) {
  // Bruls et al., Fig. 3: areas 6 6 4 3 2 2 1 in a 6 x 4 box. The first row is the two 6s
  // stacked in a column of width 3 (aspect 3/2 each).
  const std::vector<TreemapRect> r = SquarifiedLayout({6, 6, 4, 3, 2, 2, 1}, 0, 0, 6, 4);
  ASSERT_EQ(r.size(), 7u);
  EXPECT_NEAR(r[0].width, 3, 1e-9);
  EXPECT_NEAR(r[0].height, 2, 1e-9);
  EXPECT_NEAR(r[1].x, 0, 1e-9);
  EXPECT_NEAR(r[1].y, 2, 1e-9);
  // The second row (4 and 3) lies along the top of the remaining 3 x 4 box.
  EXPECT_NEAR(r[2].x, 3, 1e-9);
  EXPECT_NEAR(r[2].y, 0, 1e-9);
  EXPECT_NEAR(r[2].height, r[3].height, 1e-9);
  for (const TreemapRect& x : r) {
    EXPECT_LE(std::max(x.width / x.height, x.height / x.width), 3.0 + 1e-9);
  }
}

TEST(SvgTreemapTest, OneCellPerPositiveItemHighlightAndEscapedLabels) {
  std::vector<TreemapItem> items = {{"<script>alert(1)</script>", 100, "</svg>", false},
                                    {"java.util.HashMap", 50, "d", true},
                                    {"zero", 0, "", false}};
  const std::string svg = SvgTreemap(items, 400, 200);
  EXPECT_NE(svg.find("data-cells=\"2\""), std::string::npos);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  size_t closes = 0;
  for (size_t p = svg.find("</svg>"); p != std::string::npos; p = svg.find("</svg>", p + 1))
    ++closes;
  EXPECT_EQ(closes, 1u);
  EXPECT_NE(svg.find("<rect"), std::string::npos);
  EXPECT_NE(svg.find("class=\"highlight\""), std::string::npos);
}

TEST(NestedTreemapLayoutTest, ChildrenTileTheirParentsInnerBoxAndStayInside) {
  std::mt19937 rng(11);
  for (int round = 0; round < 1000; ++round) {
    std::vector<NestedTreemapItem> items(1 + rng() % 12);
    for (NestedTreemapItem& it : items) {
      it.item.weight = 1 + rng() % 100000;
      it.children.resize(rng() % 8);
      for (TreemapItem& c : it.children) c.weight = rng() % 5 == 0 ? 0 : 1 + rng() % 1000;
    }
    const double width = 200 + rng() % 900, height = 100 + rng() % 500;
    const std::vector<NestedTreemapRect> layout = NestedTreemapLayout(items, width, height);
    ASSERT_EQ(layout.size(), items.size());
    double level1 = 0;
    for (const NestedTreemapRect& n : layout) {
      level1 += Area(n.rect);
      double positive = 0;
      for (const TreemapItem& c : items[n.rect.item].children) positive += c.weight;
      if (n.children.empty()) continue;
      EXPECT_GE(n.rect.width, 40);
      EXPECT_GE(n.rect.height, 40);
      double sum = 0;
      for (const TreemapRect& c : n.children) {
        sum += Area(c);
        const double share = items[n.rect.item].children[c.item].weight / positive;
        EXPECT_NEAR(Area(c), share * Area(n.inner), 1e-6 * Area(n.inner));
        // Inside the parent's inner box, which is inside the parent.
        EXPECT_GE(c.x, n.inner.x - 1e-6);
        EXPECT_GE(c.y, n.inner.y - 1e-6);
        EXPECT_LE(c.x + c.width, n.inner.x + n.inner.width + 1e-6);
        EXPECT_LE(c.y + c.height, n.inner.y + n.inner.height + 1e-6);
      }
      EXPECT_NEAR(sum, Area(n.inner), 1e-6 * Area(n.inner));
      EXPECT_GE(n.inner.x, n.rect.x);
      EXPECT_GE(n.inner.y, n.rect.y);
      EXPECT_LE(n.inner.x + n.inner.width, n.rect.x + n.rect.width + 1e-9);
      EXPECT_LE(n.inner.y + n.inner.height, n.rect.y + n.rect.height + 1e-9);
    }
    EXPECT_NEAR(level1, width * height, 1e-6 * width * height);
  }
}

TEST(SvgNestedTreemapTest, HighlightedChildIsLabelledAndNamesAreEscaped) {
  std::vector<NestedTreemapItem> items(2);
  items[0].item = {"class <b>Holder</b> (statics)", 900, "x", true};
  items[0].children = {{"java.util.concurrent.ConcurrentHashMap", 800, "y", true},
                       {"self", 100, "z", false}};
  items[1].item = {"java.lang.Thread", 300, "t", false};
  items[1].children = {{"java.lang.Object[]", 300, "", false}};
  const std::string svg = SvgNestedTreemap(items, 800, 400);
  EXPECT_NE(svg.find("data-cells=\"2\""), std::string::npos);
  EXPECT_NE(svg.find("data-children=\"3\""), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;Holder"), std::string::npos);
  EXPECT_NE(svg.find("<g class=\"cell level2 highlight\""), std::string::npos);
  EXPECT_NE(svg.find("▶ accumulation point"), std::string::npos);
}

TEST(PlotAxesTest, ByteTicksCoverTheRangeInRoundBinaryUnits) {
  std::mt19937 rng(3);
  for (int round = 0; round < 2000; ++round) {
    const double lo = static_cast<double>(rng() % (1u << 30)) * (1 + rng() % 8);
    const double hi = lo + static_cast<double>(rng() % (1u << 28)) * (rng() % 3);
    const std::vector<double> t = ByteTicks(lo, hi, 5);
    ASSERT_GE(t.size(), 2u) << lo << " " << hi;
    EXPECT_LE(t.size(), 8u) << lo << " " << hi;
    EXPECT_LE(t.front(), lo);
    EXPECT_GE(t.back(), hi);
    for (size_t i = 1; i < t.size(); ++i) EXPECT_GT(t[i], t[i - 1]);
  }
  EXPECT_EQ(ByteTicks(0, 4 << 20, 5), (std::vector<double>{0, 1 << 20, 2 << 20, 3 << 20, 4 << 20}));
  EXPECT_EQ(FormatByteTick(0, 4 << 20), "0");
  EXPECT_EQ(FormatByteTick(3 << 20, 4 << 20), "3 MiB");
  EXPECT_EQ(FormatByteTick(1536 * 1024, 4 << 20), "1.5 MiB");
  EXPECT_EQ(FormatByteTick(512, 1000), "512 B");
}

TEST(PlotAxesTest, TimeTicksAreRoundClockTimesInsideTheRange) {
  const double now = 1795000000;  // 2026-11-18 11:06:40 UTC
  for (double span : {60.0, 900.0, 3600.0, 21600.0, 86400.0, 604800.0}) {
    const std::vector<double> t = TimeTicks(now - span, now, 6);
    ASSERT_GE(t.size(), 2u) << span;
    EXPECT_LE(t.size(), 6u) << span;
    for (double x : t) {
      EXPECT_GE(x, now - span);
      EXPECT_LE(x, now);
    }
  }
  const std::vector<double> quarter = TimeTicks(now - 900, now, 6);  // 15 min: every 5 min
  EXPECT_EQ(quarter[1] - quarter[0], 300);
  EXPECT_EQ(std::fmod(quarter[0], 300), 0);
  EXPECT_EQ(FormatTimeTick(1795000200, 900), "11:10");
  EXPECT_EQ(FormatTimeTick(1795000200, 604800), "11-18 11:10");
}

TEST(SvgTimePlotTest, AxesLabelsAndOnePolylinePerSeries) {
  std::vector<PlotSeries> series(2);
  series[0] = {"a<b", {}, SeriesColour(0), false};
  for (int i = 0; i < 7; ++i) series[0].points.push_back({1000.0 + 60 * i, 1048576.0 * (1 + i)});
  series[1] = {"total", {{1000, 5}, {1300, 9}}, SeriesColour(1), true};
  const std::string svg = SvgTimePlot(series, 1000, 1000 + 900, 600, 200, "t<i>");
  EXPECT_NE(svg.find("data-points=\"7\""), std::string::npos);
  EXPECT_NE(svg.find("data-series=\"2\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"axis x-axis\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"axis y-axis\""), std::string::npos);
  EXPECT_NE(svg.find(">8 MiB<"), std::string::npos) << svg;  // ticks 0, 2, .., 8 MiB
  EXPECT_NE(svg.find(">00:20<"), std::string::npos) << "a clock tick (1970-01-01 00:20 UTC)";
  EXPECT_EQ(svg.find("<i>"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  size_t polylines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1))
    ++polylines;
  EXPECT_EQ(polylines, 2u);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos) << "the total is dashed";
  EXPECT_NE(SvgTimePlot({}, 0, 60, 300, 100, "x").find("no data"), std::string::npos);
}

}  // namespace
}  // namespace heapwatch::web
