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

}  // namespace
}  // namespace heapwatch::web
