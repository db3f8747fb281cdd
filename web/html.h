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

// One series of a time plot: x in seconds since the Unix epoch, y in bytes. `label` is untrusted
// (a class name) and escaped where shown; `colour` a CSS colour chosen by the caller
// (SeriesColour).
struct PlotSeries {
  std::string label;
  std::vector<PlotPoint> points;
  std::string colour;
  bool total = false;  // drawn thicker and dashed (a sum of the other series)
};

// A distinct colour for series `i` (a fixed palette of 10 colours that stay apart for common
// colour-vision deficiencies, then repeating).
std::string SeriesColour(size_t i);

// Tick values for a bytes axis over [lo, hi]: multiples of a step of 1, 2 or 5 times a power of
// ten of the axis's binary unit (B, KiB, MiB, GiB, TiB), at most about `max_ticks` of them,
// covering [lo, hi] (the first <= lo, the last >= hi). lo == hi gives ticks around the value.
// O(ticks).
std::vector<double> ByteTicks(double lo, double hi, int max_ticks);
// A tick label for ByteTicks's values: "0", "512 KiB", "1.5 MiB" (the unit of the largest |tick|,
// at most two decimals, trailing zeros dropped).
std::string FormatByteTick(double bytes, double largest);

// Tick values for a time axis over [from, to] (seconds since the epoch): multiples (in UTC) of the
// smallest of 1, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, 1, 2, 7 days that
// gives at most `max_ticks` ticks inside [from, to].
std::vector<double> TimeTicks(double from, double to, int max_ticks);
// A label for a TimeTicks value: "HH:MM:SS" (span < 2 min), "HH:MM" (span <= 1 day), "MM-DD
// HH:MM" (longer spans), UTC; `span` = to - from in seconds.
std::string FormatTimeTick(double seconds, double span);

// An inline <svg class="plot timeplot"> of `width` x `height` pixels (axes included) plotting
// `series` over the time range [from, to] (seconds since the epoch): a time axis at the bottom with
// labelled ticks (TimeTicks, UTC) and a bytes axis on the left (ByteTicks over the points' y
// range), grid lines, one <polyline class="series"> per non-empty series (data-points="N" on it,
// its colour as stroke) and a <title> (escaped). data-points on the svg is the first series' point
// count, data-series the number of polylines. Points outside [from, to] are clamped to the edges. A
// plot without points says "no data". O(points).
std::string SvgTimePlot(const std::vector<PlotSeries>& series, double from, double to, double width,
                        double height, std::string_view title);

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

// A two-level treemap: level-1 cells, each subdivided by its children.
struct NestedTreemapItem {
  TreemapItem item;
  std::vector<TreemapItem> children;
};

// Where NestedTreemapLayout puts each cell: level-1 rectangles (item = index into the input) and
// per level-1 rectangle its children's rectangles (item = index into that cell's children).
struct NestedTreemapRect {
  TreemapRect rect;
  TreemapRect inner;  // the box the children tile: rect inset by 2 px, below a 15 px label strip
  std::vector<TreemapRect> children;
};

// Squarified layout of the level-1 weights in (0, 0, width, height), then of each cell's children
// in its inner box (the rect minus a 2 px border and a 15 px label strip when the cell is at least
// 40 x 40 px; otherwise no children are laid out). Children's areas are proportional to their
// weights within the parent's inner box and add up to it. O(n log n).
std::vector<NestedTreemapRect> NestedTreemapLayout(const std::vector<NestedTreemapItem>& items,
                                                   double width, double height);

// An inline <svg class="treemap nested"> of NestedTreemapLayout: per level-1 cell a <g
// class="cell level1"> with its rect, label strip and title, per child a <g class="cell level2">;
// cells with `highlight` get class "highlight" on their rect and, on level 2 (or level 1 without
// children), the visible label "accumulation point" above their own. data-cells names the number of
// level-1 cells, data-children the number of level-2 cells. Labels escaped.
std::string SvgNestedTreemap(const std::vector<NestedTreemapItem>& items, double width,
                             double height);

}  // namespace heapwatch::web

#endif  // HEAPWATCH_WEB_HTML_H_
