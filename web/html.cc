#include "web/html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/utf8.h"

namespace heapwatch::web {
namespace {

// Length of the valid UTF-8 sequence at text[i] (1-4), or 0 when it is not valid (strict UTF-8,
// common/utf8.h: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t Utf8Length(std::string_view text, size_t i) {
  size_t end = i;
  uint32_t code_point = 0;
  return DecodeUtf8(text, &end, &code_point) ? end - i : 0;
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '&':
        out += "&amp;";
        ++i;
        continue;
      case '<':
        out += "&lt;";
        ++i;
        continue;
      case '>':
        out += "&gt;";
        ++i;
        continue;
      case '"':
        out += "&quot;";
        ++i;
        continue;
      case '\'':
        out += "&#39;";
        ++i;
        continue;
      default:
        break;
    }
    const size_t n = Utf8Length(text, i);
    const unsigned char u = static_cast<unsigned char>(c);
    if (n == 0 || (n == 1 && ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F))) {
      out += "&#xFFFD;";
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 && c < 0x80) {
      out += ch;
    } else if (ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string UrlDecode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string FormatBytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a < 1024) return absl::StrFormat("%.0f B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes / 1024;
  size_t u = 0;
  while (std::fabs(v) >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, kUnits[u]);
}

std::string PolylinePoints(const std::vector<PlotPoint>& points, double width, double height) {
  if (points.empty()) return "";
  double min_x = points[0].x, max_x = points[0].x, min_y = points[0].y, max_y = points[0].y;
  for (const PlotPoint& p : points) {
    min_x = std::min(min_x, p.x);
    max_x = std::max(max_x, p.x);
    min_y = std::min(min_y, p.y);
    max_y = std::max(max_y, p.y);
  }
  std::string out;
  for (size_t i = 0; i < points.size(); ++i) {
    const PlotPoint& p = points[i];
    const double x = max_x > min_x
                         ? (p.x - min_x) / (max_x - min_x) * width
                         : (points.size() == 1 ? width / 2 : i * width / (points.size() - 1));
    const double y = max_y > min_y ? height - (p.y - min_y) / (max_y - min_y) * height : height / 2;
    if (i > 0) out += ' ';
    absl::StrAppendFormat(&out, "%.2f,%.2f", x, y);
  }
  return out;
}

std::string SvgLinePlot(const std::vector<PlotPoint>& points, double width, double height,
                        std::string_view title) {
  std::string out = absl::StrFormat(
      "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"-2 -2 %.0f %.0f\" data-points=\"%d\"><title>%s</title>",
      width, height, width + 4, height + 4, points.size(), EscapeHtml(title));
  if (points.empty()) {
    absl::StrAppendFormat(&out, "<text x=\"4\" y=\"%.0f\" class=\"nodata\">no data</text>",
                          height / 2);
  } else {
    absl::StrAppend(&out, "<polyline class=\"series\" fill=\"none\" points=\"",
                    PolylinePoints(points, width, height), "\"/>");
  }
  out += "</svg>";
  return out;
}

std::string SeriesColour(size_t i) {
  // Okabe & Ito's colour-blind-safe palette plus three darker tones.
  static constexpr const char* kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
                                             "#56b4e9", "#7a5c00", "#6a3d9a", "#b22222", "#2f4f4f"};
  return kPalette[i % std::size(kPalette)];
}

namespace {

// The binary unit of `bytes`: 1, 1024, 1024^2, ... (at most TiB).
double ByteUnit(double bytes) {
  double unit = 1;
  for (int k = 0; k < 4 && std::fabs(bytes) >= unit * 1024; ++k) unit *= 1024;
  return unit;
}

// 1, 2 or 5 times a power of ten, the smallest >= raw (raw > 0).
double NiceStep(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::vector<double> ByteTicks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (hi < lo) std::swap(lo, hi);
  if (max_ticks < 2) max_ticks = 2;
  if (hi == lo) {
    const double pad = lo == 0 ? 1024 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
    if (lo < 0 && hi > 0 && lo > -2048) lo = 0;
  }
  const double unit = ByteUnit(std::max(std::fabs(lo), std::fabs(hi)));
  const double step = NiceStep((hi - lo) / unit / (max_ticks - 1)) * unit;
  std::vector<double> out;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double t = first; out.size() < static_cast<size_t>(max_ticks) + 2; t += step) {
    out.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return out;
}

std::string FormatByteTick(double bytes, double largest) {
  if (bytes == 0) return "0";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const double unit = ByteUnit(largest);
  size_t u = 0;
  for (double x = unit; x >= 1024 && u + 1 < std::size(kUnits); x /= 1024) ++u;
  std::string v = absl::StrFormat("%.2f", bytes / unit);
  while (v.back() == '0') v.pop_back();
  if (v.back() == '.') v.pop_back();
  return absl::StrCat(v, " ", kUnits[u]);
}

std::vector<double> TimeTicks(double from, double to, int max_ticks) {
  if (!std::isfinite(from) || !std::isfinite(to) || to <= from) return {};
  static constexpr double kSteps[] = {1,     5,     10,    15,     30,     60,     120,
                                      300,   600,   900,   1800,   3600,   7200,   10800,
                                      21600, 43200, 86400, 172800, 604800, 2592000};
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps) {
    if (std::floor(to / s) - std::ceil(from / s) + 1 <= max_ticks) {
      step = s;
      break;
    }
  }
  std::vector<double> out;
  for (double t = std::ceil(from / step) * step; t <= to; t += step) out.push_back(t);
  return out;
}

std::string FormatTimeTick(double seconds, double span) {
  const absl::Time t = absl::FromUnixSeconds(static_cast<int64_t>(std::llround(seconds)));
  const char* format = span < 120 ? "%H:%M:%S" : span <= 86400 ? "%H:%M" : "%m-%d %H:%M";
  return absl::FormatTime(format, t, absl::UTCTimeZone());
}

std::string SvgTimePlot(const std::vector<PlotSeries>& series, double from, double to, double width,
                        double height, std::string_view title) {
  constexpr double kLeft = 70, kRight = 10, kTop = 8, kBottom = 22;
  const double pw = std::max(10.0, width - kLeft - kRight);
  const double ph = std::max(10.0, height - kTop - kBottom);
  double lo = 0, hi = 0;
  bool any = false;
  size_t polylines = 0;
  for (const PlotSeries& s : series) {
    if (!s.points.empty()) ++polylines;
    for (const PlotPoint& p : s.points) {
      lo = any ? std::min(lo, p.y) : p.y;
      hi = any ? std::max(hi, p.y) : p.y;
      any = true;
    }
  }
  std::string out = absl::StrFormat(
      "<svg class=\"plot timeplot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" data-points=\"%d\" data-series=\"%d\"><title>%s"
      "</title><rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
      "fill=\"#fff\" stroke=\"#d1d5db\"/>",
      width, height, width, height, series.empty() ? 0 : series[0].points.size(), polylines,
      EscapeHtml(title), kLeft, kTop, pw, ph);
  if (!(to > from)) to = from + 1;
  const auto px = [&](double x) {
    return kLeft + (std::clamp(x, from, to) - from) / (to - from) * pw;
  };
  // Time axis.
  out += "<g class=\"axis x-axis\">";
  for (double t : TimeTicks(from, to, std::max(2, static_cast<int>(pw / 90)))) {
    const double x = px(t);
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                          "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s"
                          "</text>",
                          x, kTop, x, kTop + ph, x, kTop + ph + 14, FormatTimeTick(t, to - from));
  }
  out += "</g>";
  if (!any) {
    absl::StrAppendFormat(&out, "<text x=\"%.1f\" y=\"%.1f\" class=\"nodata\">no data</text></svg>",
                          kLeft + 6, kTop + ph / 2);
    return out;
  }
  const std::vector<double> yt = ByteTicks(lo, hi, std::max(2, static_cast<int>(ph / 22)));
  const double ylo = yt.front(), yhi = yt.back() > yt.front() ? yt.back() : yt.front() + 1;
  const auto py = [&](double y) { return kTop + ph - (y - ylo) / (yhi - ylo) * ph; };
  const double largest = std::max(std::fabs(ylo), std::fabs(yhi));
  out += "<g class=\"axis y-axis\">";
  for (double v : yt) {
    const double y = py(v);
    absl::StrAppendFormat(
        &out,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
        kLeft, y, kLeft + pw, y, kLeft - 4, y + 4, FormatByteTick(v, largest));
  }
  out += "</g>";
  for (const PlotSeries& s : series) {
    if (s.points.empty()) continue;
    absl::StrAppendFormat(&out,
                          "<polyline class=\"series%s\" data-points=\"%d\" fill=\"none\" "
                          "stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
                          s.total ? " total" : "", s.points.size(), EscapeHtml(s.colour),
                          s.total ? "2.5" : "1.5", s.total ? " stroke-dasharray=\"6 3\"" : "");
    for (size_t i = 0; i < s.points.size(); ++i) {
      absl::StrAppendFormat(&out, "%s%.2f,%.2f", i == 0 ? "" : " ", px(s.points[i].x),
                            py(s.points[i].y));
    }
    absl::StrAppendFormat(&out, "\"><title>%s</title></polyline>", EscapeHtml(s.label));
  }
  out += "</svg>";
  return out;
}

std::vector<TreemapRect> SquarifiedLayout(const std::vector<double>& weights, double x, double y,
                                          double width, double height) {
  std::vector<size_t> order;
  double total = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0 && std::isfinite(weights[i])) {
      order.push_back(i);
      total += weights[i];
    }
  }
  std::vector<TreemapRect> out;
  if (order.empty() || width <= 0 || height <= 0) return out;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  const double scale = width * height / total;  // area per unit of weight
  std::vector<double> area(order.size());
  for (size_t k = 0; k < order.size(); ++k) area[k] = weights[order[k]] * scale;

  // worst(R, w) of the paper: the largest aspect ratio of a row of areas summing to `sum` with
  // largest `max_a` and smallest `min_a`, laid along a side of length `side`.
  const auto worst = [](double sum, double max_a, double min_a, double side) {
    const double s2 = side * side, sum2 = sum * sum;
    return std::max(s2 * max_a / sum2, sum2 / (s2 * min_a));
  };
  size_t i = 0;
  while (i < order.size()) {
    const double side = std::min(width, height);
    double sum = area[i];
    size_t j = i + 1;
    // Areas are sorted descending: the row's largest is area[i], its smallest the last added.
    while (j < order.size() &&
           worst(sum + area[j], area[i], area[j], side) <= worst(sum, area[i], area[j - 1], side)) {
      sum += area[j];
      ++j;
    }
    if (j == order.size()) sum = width * height;  // the last row takes what is left (rounding)
    if (width >= height) {  // a column on the left, as wide as the row's area needs
      const double w = std::min(width, sum / height);
      double cy = y;
      for (size_t k = i; k < j; ++k) {
        const double h = (k + 1 == j) ? y + height - cy : area[k] / w;
        out.push_back({order[k], x, cy, w, h});
        cy += h;
      }
      x += w;
      width -= w;
    } else {  // a row along the top
      const double h = std::min(height, sum / width);
      double cx = x;
      for (size_t k = i; k < j; ++k) {
        const double w = (k + 1 == j) ? x + width - cx : area[k] / h;
        out.push_back({order[k], cx, y, w, h});
        cx += w;
      }
      y += h;
      height -= h;
    }
    i = j;
  }
  return out;
}

std::string SvgTreemap(const std::vector<TreemapItem>& items, double width, double height) {
  std::vector<double> weights;
  weights.reserve(items.size());
  for (const TreemapItem& item : items) weights.push_back(item.weight);
  const std::vector<TreemapRect> rects = SquarifiedLayout(weights, 0, 0, width, height);
  std::string out = absl::StrFormat(
      "<svg class=\"treemap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" data-cells=\"%d\">",
      width, height, width, height, rects.size());
  for (const TreemapRect& r : rects) {
    const TreemapItem& item = items[r.item];
    absl::StrAppendFormat(&out,
                          "<g class=\"cell%s\"><title>%s\n%s</title><rect x=\"%.2f\" y=\"%.2f\" "
                          "width=\"%.2f\" height=\"%.2f\"%s/>",
                          item.highlight ? " highlight" : "", EscapeHtml(item.label),
                          EscapeHtml(item.detail), r.x, r.y, r.width, r.height,
                          item.highlight ? " class=\"highlight\"" : "");
    if (r.width >= 60 && r.height >= 16) {
      // Clip the label to its cell: roughly 7 px per character at the page's 11 px font.
      const size_t chars = static_cast<size_t>((r.width - 6) / 7);
      std::string label = item.label;
      if (label.size() > chars)
        label = "…" + label.substr(label.size() - (chars > 1 ? chars - 1 : 0));
      absl::StrAppendFormat(&out, "<text x=\"%.2f\" y=\"%.2f\">%s</text>", r.x + 3, r.y + 13,
                            EscapeHtml(label));
    }
    out += "</g>";
  }
  out += "</svg>";
  return out;
}

std::vector<NestedTreemapRect> NestedTreemapLayout(const std::vector<NestedTreemapItem>& items,
                                                   double width, double height) {
  std::vector<double> weights;
  weights.reserve(items.size());
  for (const NestedTreemapItem& i : items) weights.push_back(i.item.weight);
  std::vector<NestedTreemapRect> out;
  for (const TreemapRect& r : SquarifiedLayout(weights, 0, 0, width, height)) {
    NestedTreemapRect n;
    n.rect = r;
    n.inner = {r.item, r.x + 2, r.y + 15, r.width - 4, r.height - 17};
    if (r.width >= 40 && r.height >= 40) {
      std::vector<double> w;
      for (const TreemapItem& c : items[r.item].children) w.push_back(c.weight);
      n.children = SquarifiedLayout(w, n.inner.x, n.inner.y, n.inner.width, n.inner.height);
    } else {
      n.inner = {r.item, r.x, r.y, 0, 0};
    }
    out.push_back(std::move(n));
  }
  return out;
}

namespace {

// A label clipped to a cell `width` px wide (about 7 px per character at 11 px), keeping the end
// of the name (the simple class name) visible. Counted in bytes; a cut inside a UTF-8 sequence is
// repaired by EscapeHtml (it becomes U+FFFD).
std::string ClipLabel(const std::string& label, double width) {
  const size_t chars = width > 6 ? static_cast<size_t>((width - 6) / 7) : 0;
  if (label.size() <= chars) return label;
  return "…" + label.substr(label.size() - (chars > 1 ? chars - 1 : 0));
}

}  // namespace

std::string SvgNestedTreemap(const std::vector<NestedTreemapItem>& items, double width,
                             double height) {
  const std::vector<NestedTreemapRect> layout = NestedTreemapLayout(items, width, height);
  size_t children = 0;
  for (const NestedTreemapRect& n : layout) children += n.children.size();
  std::string out = absl::StrFormat(
      "<svg class=\"treemap nested\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" data-cells=\"%d\" data-children=\"%d\">",
      width, height, width, height, layout.size(), children);
  for (size_t k = 0; k < layout.size(); ++k) {
    const NestedTreemapRect& n = layout[k];
    const NestedTreemapItem& item = items[n.rect.item];
    const bool marked_leaf = item.item.highlight && n.children.empty();
    absl::StrAppendFormat(
        &out,
        "<g class=\"cell level1%s\" data-label=\"%s\"><title>%s\n%s</title><rect x=\"%.2f\" "
        "y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" fill-opacity=\"0.18\" "
        "stroke=\"#fff\" stroke-width=\"2\"%s/>",
        item.item.highlight ? " highlight" : "", EscapeHtml(item.item.label),
        EscapeHtml(item.item.label), EscapeHtml(item.item.detail), n.rect.x, n.rect.y, n.rect.width,
        n.rect.height, SeriesColour(k), item.item.highlight ? " class=\"highlight\"" : "");
    if (n.rect.width >= 50 && n.rect.height >= 14) {
      absl::StrAppendFormat(
          &out, "<text class=\"label1\" x=\"%.2f\" y=\"%.2f\">%s</text>", n.rect.x + 3,
          n.rect.y + 12,
          EscapeHtml(
              ClipLabel(marked_leaf ? "accumulation point: " + item.item.label : item.item.label,
                        n.rect.width)));
    }
    for (const TreemapRect& c : n.children) {
      const TreemapItem& child = item.children[c.item];
      absl::StrAppendFormat(
          &out,
          "<g class=\"cell level2%s\" data-label=\"%s\"><title>%s\n%s</title><rect x=\"%.2f\" "
          "y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" fill-opacity=\"%s\" "
          "stroke=\"#fff\"%s/>",
          child.highlight ? " highlight" : "", EscapeHtml(child.label), EscapeHtml(child.label),
          EscapeHtml(child.detail), c.x, c.y, c.width, c.height,
          child.highlight ? "#f97316" : SeriesColour(k), child.highlight ? "0.9" : "0.35",
          child.highlight ? " class=\"highlight\"" : "");
      if (c.width >= 50 && c.height >= 16) {
        if (child.highlight && c.height >= 30) {
          absl::StrAppendFormat(&out, "<text class=\"ap-label\" x=\"%.2f\" y=\"%.2f\">%s</text>",
                                c.x + 3, c.y + 13,
                                EscapeHtml(ClipLabel("▶ accumulation point", c.width)));
        }
        absl::StrAppendFormat(&out, "<text x=\"%.2f\" y=\"%.2f\">%s</text>", c.x + 3,
                              c.y + (child.highlight && c.height >= 30 ? 27 : 13),
                              EscapeHtml(ClipLabel(child.label, c.width)));
      }
      out += "</g>";
    }
    out += "</g>";
  }
  out += "</svg>";
  return out;
}

}  // namespace heapwatch::web
