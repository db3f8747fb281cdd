#include "web/html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace heapwatch::web {
namespace {

// Length of the valid UTF-8 sequence at text[i] (1-4), or 0 when it is not valid (RFC 3629 section
// 4: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t Utf8Length(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
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

}  // namespace heapwatch::web
