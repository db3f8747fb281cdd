// Building blocks of heapwatchd's web pages (web/pages.h): HTML escaping, URL path segments, number
// formatting, SVG line plots and the squarified treemap layout.
//
// Every string that comes from a heap dump or a JVM (class, field, package, thread names, GC-root
// kinds, host names, error texts) reaches a page only through EscapeHtml; it is safe both in
// element text and inside a double- or single-quoted attribute value. Nothing here allocates per
// object of a heap: inputs are report rows (tens to hundreds).
//
// Thread-safety: every function is pure and reentrant.
#ifndef HEAPWATCH_WEB_HTML_H_
#define HEAPWATCH_WEB_HTML_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace heapwatch::web {

// Replaces & < > " ' with &amp; &lt; &gt; &quot; &#39; (the five characters that can end a text
// node, a quoted attribute value or start markup; HTML Living Standard 13.1.2.6 and 13.2.5).
// Bytes that are not valid UTF-8 and control characters other than tab, LF and CR become U+FFFD
// (&#xFFFD;), so a hostile name cannot smuggle a byte the browser would reinterpret. O(size).
std::string EscapeHtml(std::string_view text);

// Percent-encodes everything but A-Z a-z 0-9 - . _ ~ (RFC 3986 2.3 unreserved), for one path
// segment or query value. The result needs no further HTML escaping.
std::string UrlEncode(std::string_view text);
// The reverse of UrlEncode for a path segment or query value ('+' is kept, "%zz" is kept verbatim).
std::string UrlDecode(std::string_view text);

// "1.5 MiB", "312 B", "-2.0 KiB" (binary units, one decimal above 1 KiB).
std::string FormatBytes(double bytes);

// One point of a plot: x (e.g. seconds since the epoch) and y (e.g. bytes).
struct PlotPoint {
  double x = 0;
  double y = 0;
};

// Maps `points` onto a `width` x `height` box (pixels; y grows downwards, the smallest y at the
// bottom, a constant series in the middle) and returns them as the value of an SVG points
// attribute: "x1,y1 x2,y2 ...", one pair per input point, in input order, two decimals. Empty for
// no points. O(points).
std::string PolylinePoints(const std::vector<PlotPoint>& points, double width, double height);

// An inline <svg> of `width` x `height` pixels with one <polyline class="series"> over `points`
// (PolylinePoints) and a <title> (`title`, escaped). data-points="N" on the svg names the number of
// points plotted. An empty series gives an svg with a "no data" text and no polyline.
std::string SvgLinePlot(const std::vector<PlotPoint>& points, double width, double height,
                        std::string_view title);

// A rectangle of a treemap layout: the index of its item in the input and its box in pixels.
struct TreemapRect {
  size_t item = 0;
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
};

// Squarified treemap layout (Bruls, Huizing, van Wijk: "Squarified Treemaps", Data Visualization
// 2000, section 3, algorithm "squarify"): lays `weights` out in the box (x, y, width, height) so
// that each rectangle's area is proportional to its weight and the rectangles tile the box,
// filling rows along the shorter side while the worst aspect ratio improves. Iterative. Items with
// a weight <= 0 (or NaN) get no rectangle; the others, sorted by weight descending, get one each
// (the result is in that order). The areas add up to width * height when any weight is positive.
// O(n log n).
std::vector<TreemapRect> SquarifiedLayout(const std::vector<double>& weights, double x, double y,
                                          double width, double height);

// One cell of an SVG treemap.
struct TreemapItem {
  std::string label;   // untrusted (a class name); escaped here
  double weight = 0;   // bytes
  std::string detail;  // untrusted second line, e.g. "12 objects, 3.4 MiB"; escaped here
  bool highlight = false;
};

// An inline <svg class="treemap"> with one <g class="cell"> per item with a positive weight
// (SquarifiedLayout), each a <rect> (class "highlight" when set), a <title> with label and detail,
// and the label as text when the cell is big enough. data-cells="N" names the number of cells.
std::string SvgTreemap(const std::vector<TreemapItem>& items, double width, double height);

}  // namespace heapwatch::web

#endif  // HEAPWATCH_WEB_HTML_H_
