#include "web/pages.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/number_text.h"
#include "web/html.h"

namespace heapwatch::web {
namespace {

using google::protobuf::Duration;
using google::protobuf::Timestamp;

constexpr std::pair<const char*, absl::Duration> kRanges[] = {{"15m", absl::Minutes(15)},
                                                              {"1h", absl::Hours(1)},
                                                              {"6h", absl::Hours(6)},
                                                              {"1d", absl::Hours(24)},
                                                              {"7d", absl::Hours(24 * 7)}};
constexpr char kDefaultRange[] = "1h";

double Seconds(const Timestamp& ts) { return ts.seconds() + ts.nanos() / 1e9; }
double Seconds(const Duration& d) { return d.seconds() + d.nanos() / 1e9; }
absl::Time ToTime(const Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}
void SetTime(absl::Time t, Timestamp* out) {
  const int64_t us = absl::ToUnixMicros(t);
  int64_t s = us / 1000000, r = us % 1000000;
  if (r < 0) {
    --s;
    r += 1000000;
  }
  out->set_seconds(s);
  out->set_nanos(static_cast<int32_t>(r * 1000));
}

std::string FormatTime(const Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "—";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", ToTime(ts), absl::UTCTimeZone());
}
std::string FormatDuration(double seconds) {
  return absl::FormatDuration(absl::Trunc(absl::Seconds(seconds), absl::Milliseconds(1)));
}
// A leak's or suspect's time scale: 0 (or unset) means the trend tests ran on every snapshot
// (TrendScale.time_scale in heapwatch.proto), not on buckets of some width.
std::string FormatTimeScale(const Duration& d) {
  const double seconds = Seconds(d);
  if (seconds <= 0) return "every snapshot";
  return absl::StrCat(FormatDuration(seconds), " buckets");
}
std::string FormatRate(double bytes_per_second) {
  return absl::StrCat(FormatBytes(bytes_per_second * 60), "/min");
}
// A forecast's duration: FormatDuration rounded to whole seconds below an hour, whole minutes below
// a day, whole hours beyond (as heapwatchctl shows it); "0s" when already reached.
std::string FormatForecastDuration(const Duration& d) {
  const double seconds = Seconds(d);
  const double unit = seconds < 3600 ? 1 : seconds < 86400 ? 60 : 3600;
  const double rounded = std::floor(seconds / unit + 0.5) * unit;
  return rounded <= 0 ? "0s" : FormatDuration(rounded);
}
// "2m10s (1m50s – 2m40s)"; the latest end is "never" when unbounded (the flattest plausible slope
// is not positive).
std::string ForecastInterval(const v1::HeapExhaustion& f) {
  return absl::StrCat(FormatForecastDuration(f.soonest()), " – ",
                      f.has_latest() ? FormatForecastDuration(f.latest()) : "never");
}
// A leak of kind "heap": the live set grows, its classes are not named yet (heapwatch.proto
// Leak.kind).
bool IsHeapLeak(const v1::Leak& l) { return l.kind() == "heap"; }

// Links: the external URL (when configured) and the path, every untrusted part percent-encoded.
std::string AgentsUrl(const PageOptions& o) { return o.external_url + "/"; }
std::string LeaksUrl(const PageOptions& o, std::string_view agent, std::string_view range = {}) {
  std::string url = absl::StrCat(o.external_url, "/agents/", UrlEncode(agent), "/leaks");
  if (!range.empty()) absl::StrAppend(&url, "?range=", UrlEncode(range));
  return url;
}
std::string ReportsUrl(const PageOptions& o, std::string_view agent) {
  return absl::StrCat(o.external_url, "/agents/", UrlEncode(agent), "/reports");
}
std::string ReportUrl(const PageOptions& o, std::string_view agent, std::string_view dump) {
  return absl::StrCat(o.external_url, "/agents/", UrlEncode(agent), "/reports/", UrlEncode(dump));
}

constexpr char kStyle[] = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.2em 2em;color:#1b1f24;background:#fff}
h1{font-size:1.4em;margin:.2em 0 .6em}h2{font-size:1.15em;margin:1.4em 0 .4em}
h3{font-size:1em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.3em 0 1em}th,td{padding:3px 10px;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top}th{background:#f3f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,.cls{font-family:ui-monospace,monospace;word-break:break-all}
nav{margin-bottom:1em;color:#555}a{color:#0b57d0}
svg.plot:not(.timeplot) polyline{stroke:#c2410c;stroke-width:1.5}svg.plot{background:#fafafa;border:1px solid #e5e7eb}
svg.sparkline polyline{stroke:#0b57d0;stroke-width:1.2}
svg.treemap rect{fill:#dbeafe;stroke:#fff;stroke-width:1}svg.treemap rect.highlight{fill:#f97316}
svg.treemap text{font:11px ui-monospace,monospace;fill:#111;pointer-events:none}
svg.timeplot{background:#fff;border:none}svg.timeplot text{font:10px system-ui,sans-serif;fill:#4b5563}
svg.treemap rect.highlight{stroke:#9a3412;stroke-width:3}svg.treemap text.ap-label{font-weight:bold;fill:#7c2d12}
svg.treemap text.label1{font-weight:bold}
ul.legend{list-style:none;padding:0;margin:.2em 0 .8em;display:flex;flex-wrap:wrap;gap:.3em 1.2em}
ul.legend li{font:12px ui-monospace,monospace;word-break:break-all}ul.legend .swatch{display:inline-block;
width:14px;height:4px;margin-right:5px;vertical-align:middle}
.minmax{font-size:12px;color:#4b5563}tr.highlight td{background:#ffedd5}
.state-up{color:#15803d}.state-down{color:#6b7280}.state-unreachable{color:#b91c1c}
.muted{color:#6b7280}.warn{color:#b91c1c}ol.path li{margin:.15em 0}
.forecast{border:2px solid #b91c1c;background:#fef2f2;border-radius:4px;padding:.5em 1em;margin:.6em 0 1em}
.forecast .headline{font-size:1.3em;font-weight:bold;color:#b91c1c;margin:.1em 0 .3em}.forecast p{margin:.2em 0}
p.detail{margin:.2em 0 .5em}
)css";

std::string Header(std::string_view title, const std::string& nav_html) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><title>",
      EscapeHtml(title), " — heapwatch</title><style>", kStyle, "</style></head><body><nav>",
      nav_html, "</nav><h1>", EscapeHtml(title), "</h1>\n");
}
constexpr char kFooter[] = "</body></html>\n";

std::string Link(std::string_view url, std::string_view text) {
  return absl::StrCat("<a href=\"", EscapeHtml(url), "\">", EscapeHtml(text), "</a>");
}

const char* StateName(v1::AgentState s) {
  switch (s) {
    case v1::AGENT_STATE_UP:
      return "up";
    case v1::AGENT_STATE_UNREACHABLE:
      return "unreachable";
    case v1::AGENT_STATE_DOWN:
      return "down";
    default:
      return "unknown";
  }
}
const char* KindName(v1::AgentKind k) {
  switch (k) {
    case v1::AGENT_KIND_LOCAL_ATTACH:
      return "local attach";
    case v1::AGENT_KIND_REGISTERED:
      return "registered";
    default:
      return "unknown";
  }
}
const char* DumpStateName(v1::ExtendedDumpState s) {
  switch (s) {
    case v1::EXTENDED_DUMP_STATE_QUEUED:
      return "queued";
    case v1::EXTENDED_DUMP_STATE_DUMPING:
      return "dumping";
    case v1::EXTENDED_DUMP_STATE_ANALYZING:
      return "analysing";
    case v1::EXTENDED_DUMP_STATE_DONE:
      return "report ready";
    case v1::EXTENDED_DUMP_STATE_FAILED:
      return "failed";
    default:
      return "unknown";
  }
}

std::string ObjectText(const v1::HeapObject& o) {
  std::string text =
      absl::StrFormat("<span class=\"cls\">%s</span> <span class=\"muted\">@0x%x</span>",
                      EscapeHtml(o.class_name()), o.object_id());
  // A live thread's name: text of the JVM, escaped like every other string of a page.
  if (!o.thread_name().empty()) {
    absl::StrAppend(&text, " <span class=\"thread\">&quot;", EscapeHtml(o.thread_name()),
                    "&quot;</span>");
  }
  return text;
}

std::string PathHtml(const v1::GcRootPath& path) {
  if (!path.found()) return "<p class=\"muted\">No GC root reaches it.</p>";
  std::string out = "<ol class=\"path\">";
  for (int i = 0; i < path.steps_size(); ++i) {
    const v1::PathStep& s = path.steps(i);
    // A shortened path (heapwatch.proto GcRootPath.elided_steps): the steps left out, counted.
    if (path.elided_steps() > 0 && i > 0 && static_cast<uint32_t>(i) == path.elided_after()) {
      absl::StrAppend(&out, "<li class=\"muted elided\">... ", GroupedDigits(path.elided_steps()),
                      " steps ...</li>");
    }
    out += "<li>";
    if (i == 0) {
      absl::StrAppend(&out, "GC root", s.object().gc_root_kind().empty() ? "" : " (",
                      EscapeHtml(s.object().gc_root_kind()),
                      s.object().gc_root_kind().empty() ? "" : ")", ": ");
    } else {
      absl::StrAppend(&out, "<code class=\"ref\">", EscapeHtml(s.reference()), "</code>",
                      s.weak() ? " <span class=\"warn\">(weak)</span>" : "", " → ");
    }
    absl::StrAppend(&out, ObjectText(s.object()), "</li>");
  }
  absl::StrAppend(&out, "</ol>",
                  path.strong() ? "" : "<p class=\"warn\">Only through weak references.</p>");
  return out;
}

std::vector<PlotPoint> ClassPoints(const v1::GetClassHistoryResponse& h) {
  std::vector<PlotPoint> points;
  points.reserve(h.samples_size());
  for (const v1::ClassSample& s : h.samples()) {
    points.push_back({Seconds(s.time()), static_cast<double>(s.bytes())});
  }
  return points;
}

// All classes of leak `l` in one plot, one polyline per class with a legend, plus the leak's total
// (the classes' bytes summed per snapshot time).
std::string CombinedPlotHtml(const v1::Leak& l, const LeaksPageData& data,
                             const PageOptions& options) {
  std::vector<PlotSeries> series;
  std::map<double, double> total;
  for (int i = 0; i < l.classes_size(); ++i) {
    const v1::LeakClass& c = l.classes(i);
    auto it = data.histories.find(c.class_name());
    if (it == data.histories.end()) continue;
    PlotSeries s{c.class_name(), ClassPoints(it->second), SeriesColour(i), false};
    for (const PlotPoint& p : s.points) total[p.x] += p.y;
    series.push_back(std::move(s));
  }
  if (series.empty()) return "";
  if (series.size() > 1) {
    PlotSeries t{"total of the leak", {}, "#111827", true};
    for (const auto& [x, y] : total) t.points.push_back({x, y});
    series.push_back(std::move(t));
  }
  std::string out = absl::StrCat(
      "<div class=\"combined\">",
      SvgTimePlot(series, absl::ToUnixSeconds(data.from), absl::ToUnixSeconds(options.now), 900,
                  240,
                  absl::StrCat("leak ", l.leak(), ": bytes of every class over ", data.range_name)),
      "<ul class=\"legend\">");
  for (const PlotSeries& s : series) {
    absl::StrAppend(&out, "<li", s.total ? " class=\"total\"" : "",
                    "><span class=\"swatch\" style=\"background:", EscapeHtml(s.colour),
                    "\"></span>", EscapeHtml(s.label), "</li>");
  }
  out += "</ul></div>";
  return out;
}

// The agent's heap exhaustion forecast as the box at the top of its leaks page: the estimate, its
// interval and the time it ends at, then the live set against the maximum heap, the growth and its
// interval, the points the line went through and the leak the growth belongs to (`leak`, may be
// empty).
std::string ForecastHtml(const v1::HeapExhaustion& f, std::string_view leak) {
  std::string out = absl::StrFormat(
      "<div class=\"forecast\" id=\"heap-exhaustion\" data-estimate-seconds=\"%.0f\" "
      "data-soonest-seconds=\"%.0f\" data-latest-seconds=\"%s\"><p class=\"headline\">Heap full in "
      "about %s</p><p>90 %% interval %s",
      Seconds(f.estimate()), Seconds(f.soonest()),
      f.has_latest() ? absl::StrFormat("%.0f", Seconds(f.latest())) : "inf",
      FormatForecastDuration(f.estimate()), ForecastInterval(f));
  if (f.has_computed_time()) {
    Timestamp end;
    SetTime(ToTime(f.computed_time()) + absl::Seconds(std::floor(Seconds(f.estimate()) + 0.5)),
            &end);
    absl::StrAppend(&out, "; full around ", FormatTime(end));
  }
  absl::StrAppend(&out, ".</p>");
  const double max = static_cast<double>(f.max_bytes());
  absl::StrAppendFormat(
      &out,
      "<p>Live set <strong>%s</strong> of %s maximum heap (%.1f%%), growing <strong>%s</strong> "
      "(interval %s – %s).</p>",
      FormatBytes(static_cast<double>(f.live_bytes())), FormatBytes(max),
      max > 0 ? 100.0 * static_cast<double>(f.live_bytes()) / max : 0.0,
      FormatRate(f.growth_bytes_per_second()), FormatRate(f.growth_low_bytes_per_second()),
      FormatRate(f.growth_high_bytes_per_second()));
  absl::StrAppend(&out, "<p class=\"muted\">A straight line through ", f.points(),
                  " live-set points", f.has_computed_time() ? " up to " : "",
                  f.has_computed_time() ? FormatTime(f.computed_time()) : "",
                  ", extrapolated to the maximum heap. The JVM usually fails with an "
                  "OutOfMemoryError somewhat before its live set reaches the maximum.");
  if (!leak.empty()) {
    absl::StrAppend(&out, " The growth belongs to leak <a href=\"#", EscapeHtml(leak), "\">",
                    EscapeHtml(leak), "</a>.");
  }
  out += "</p></div>\n";
  return out;
}

}  // namespace

std::optional<absl::Duration> ParseRange(std::string_view name) {
  for (const auto& [n, d] : kRanges) {
    if (name == n) return d;
  }
  return std::nullopt;
}

std::string RenderAgentsPage(const AgentsPageData& data, const PageOptions& options) {
  std::map<std::string, int> leak_count;
  for (const v1::Leak& l : data.leaks.leaks()) ++leak_count[l.agent()];
  std::string out = Header("Agents", "heapwatch");
  if (data.agents.agents_size() == 0) out += "<p class=\"muted\">No JVM is watched yet.</p>";
  out +=
      "<table class=\"agents\"><tr><th>Agent</th><th>State</th><th>Kind</th><th>Main class</th>"
      "<th>Live set (last hour)</th><th>Pause budget</th><th>Leaks</th><th>Dumps</th></tr>\n";
  for (const v1::Agent& a : data.agents.agents()) {
    const char* state = StateName(a.state());
    std::string live = "<span class=\"muted\">—</span>";
    if (auto it = data.live_sets.find(a.agent()); it != data.live_sets.end()) {
      std::vector<PlotPoint> points;
      for (const v1::LiveSetPoint& p : it->second.points()) {
        points.push_back({Seconds(p.time()), static_cast<double>(p.live_bytes())});
      }
      if (!points.empty()) {
        live = SvgLinePlot(points, 140, 28, "live set, last hour");
        live.replace(0, std::string_view("<svg class=\"plot\"").size(),
                     "<svg class=\"plot sparkline\"");
        double lo = points[0].y, hi = points[0].y;
        for (const PlotPoint& p : points) {
          lo = std::min(lo, p.y);
          hi = std::max(hi, p.y);
        }
        absl::StrAppend(&live, " ", FormatBytes(static_cast<double>(points.back().y)),
                        "<br><span class=\"minmax\">min ", FormatBytes(lo), ", max ",
                        FormatBytes(hi), " (", points.size(), " points)</span>");
      }
    }
    if (a.has_heap_exhaustion() && a.state() != v1::AGENT_STATE_DOWN) {
      absl::StrAppend(&live, "<br><span class=\"warn forecast-short\">heap full in about ",
                      FormatForecastDuration(a.heap_exhaustion().estimate()), "</span>");
    }
    std::string budget = absl::StrCat(FormatDuration(Seconds(a.total_pause())), " paused");
    if (a.has_watched_since_time()) {
      const double watched = absl::ToDoubleSeconds(options.now - ToTime(a.watched_since_time()));
      if (watched > 0) {
        absl::StrAppendFormat(&budget, " (%.3f%% of %s)", 100 * Seconds(a.total_pause()) / watched,
                              FormatDuration(watched));
      }
    }
    if (a.over_budget()) budget += " <span class=\"warn\">over budget</span>";
    if (!a.budget_note().empty()) {
      absl::StrAppend(&budget, "<br><span class=\"muted\">", EscapeHtml(a.budget_note()),
                      "</span>");
    }
    const int leaks = leak_count[a.agent()];
    // A registered agent's labels (Register.labels), in key order.
    std::string labels;
    for (const auto& [k, v] :
         std::map<std::string, std::string>(a.labels().begin(), a.labels().end())) {
      absl::StrAppend(&labels, labels.empty() ? "<br><span class=\"muted labels\">" : ", ",
                      EscapeHtml(k), "=", EscapeHtml(v));
    }
    if (!labels.empty()) labels += "</span>";
    absl::StrAppend(
        &out, "<tr class=\"agent\" data-agent=\"", EscapeHtml(a.agent()), "\"><td>",
        Link(LeaksUrl(options, a.agent()), a.agent()), "<br><span class=\"muted\">",
        EscapeHtml(a.host()), " pid ", a.pid(), "</span>", labels, "</td><td class=\"state-", state,
        "\">", state, a.last_error().empty() ? "" : "<br><span class=\"muted\">",
        EscapeHtml(a.last_error()), a.last_error().empty() ? "" : "</span>", "</td><td>",
        KindName(a.kind()), "</td><td class=\"cls\">", EscapeHtml(a.main_class()), "</td><td>",
        live, "</td><td>", budget, "</td><td class=\"num\">",
        Link(LeaksUrl(options, a.agent()), absl::StrCat(leaks)), "</td><td>",
        Link(ReportsUrl(options, a.agent()), "reports"), "</td></tr>\n");
  }
  out += "</table>";
  out += kFooter;
  return out;
}

std::string RenderLeaksPage(const LeaksPageData& data, const PageOptions& options) {
  std::string out =
      Header(absl::StrCat("Leaks of ", data.agent), Link(AgentsUrl(options), "Agents"));
  if (data.info.has_value()) {
    absl::StrAppend(&out, "<p><span class=\"cls\">", EscapeHtml(data.info->main_class()),
                    "</span> on ", EscapeHtml(data.info->host()), ", pid ", data.info->pid(),
                    ", JVM ", EscapeHtml(data.info->jvm_version()), ", ",
                    StateName(data.info->state()), "</p>");
  }
  // The forecast: the agent's, else that of the leak it belongs to (the same forecast).
  const v1::HeapExhaustion* forecast = nullptr;
  std::string forecast_leak;
  for (const v1::Leak& l : data.leaks.leaks()) {
    if (!l.has_heap_exhaustion()) continue;
    forecast = &l.heap_exhaustion();
    forecast_leak = l.leak();
    break;
  }
  if (data.info.has_value() && data.info->has_heap_exhaustion()) {
    forecast = &data.info->heap_exhaustion();
  }
  if (forecast != nullptr) out += ForecastHtml(*forecast, forecast_leak);
  out += "<p class=\"ranges\">Range: ";
  for (const auto& [name, d] : kRanges) {
    if (name == data.range_name) {
      absl::StrAppend(&out, "<strong>", name, "</strong> ");
    } else {
      absl::StrAppend(&out, Link(LeaksUrl(options, data.agent, name), name), " ");
    }
  }
  absl::StrAppend(&out, "<span class=\"muted\">(", FormatTime([&] {
    Timestamp t;
    SetTime(data.from, &t);
    return t;
  }()),
                  " to ", FormatTime([&] {
                    Timestamp t;
                    SetTime(options.now, &t);
                    return t;
                  }()),
                  ")</span></p>\n");
  // Machine-readable range of the plots (the browser test asks the gRPC API for the same range).
  absl::StrAppend(&out, "<div id=\"plot-range\" data-from-us=\"", absl::ToUnixMicros(data.from),
                  "\" data-to-us=\"", absl::ToUnixMicros(options.now), "\"></div>\n");
  if (data.leaks.leaks_size() == 0) out += "<p class=\"muted\">No current leak.</p>";
  for (const v1::Leak& l : data.leaks.leaks()) {
    const bool heap = IsHeapLeak(l);
    absl::StrAppend(&out, "<section class=\"leak\" id=\"", EscapeHtml(l.leak()),
                    "\" data-main-class=\"", EscapeHtml(l.main_class()), "\"",
                    l.kind().empty() ? "" : " data-kind=\"", EscapeHtml(l.kind()),
                    l.kind().empty() ? "" : "\"", "><h2>Leak <code>", EscapeHtml(l.leak()),
                    "</code>: ",
                    heap ? "<span class=\"main-class\">live set</span> <span class=\"muted\">"
                           "(classes not named yet)</span>"
                         : absl::StrCat("<span class=\"cls main-class\">",
                                        EscapeHtml(l.main_class()), "</span>"),
                    "</h2>");
    if (!l.detail().empty()) {
      absl::StrAppend(&out, "<p class=\"detail\">", EscapeHtml(l.detail()), "</p>");
    }
    if (heap) {
      out +=
          "<p class=\"muted\">The heap after old-generation collections keeps growing, but no "
          "class "
          "histogram has named the growing classes yet. Once they are named, this leak (same id) "
          "lists "
          "them.</p>";
    }
    absl::StrAppendFormat(
        &out,
        "<table class=\"facts\"><tr><th>Bytes</th><td class=\"num\">%s</td><th>Growth</th><td "
        "class=\"num\">%s</td><th>Score</th><td class=\"num\">%.2f</td></tr><tr><th>First "
        "seen</th><td>%s</td><th>Time scale</th><td>%s</td><th>Escalation</th><td>",
        FormatBytes(static_cast<double>(l.bytes())), FormatRate(l.growth_bytes_per_second()),
        l.score(), FormatTime(l.first_seen()), FormatTimeScale(l.time_scale()));
    // Escalation state: the newest dump taken for one of the leak's classes.
    const v1::ExtendedDump* dump = nullptr;
    for (const v1::ExtendedDump& d : data.reports.dumps()) {  // newest first
      if (!l.dump_id().empty() ? d.dump_id() == l.dump_id() : [&] {
            for (const std::string& c : d.suspect_classes()) {
              for (const v1::LeakClass& lc : l.classes()) {
                if (lc.class_name() == c) return true;
              }
            }
            return false;
          }()) {
        dump = &d;
        break;
      }
    }
    if (dump != nullptr) {
      absl::StrAppend(&out, "<span class=\"dump-state\">", DumpStateName(dump->state()),
                      "</span> (", EscapeHtml(dump->dump_id()), ") ");
      if (dump->state() == v1::EXTENDED_DUMP_STATE_DONE) {
        absl::StrAppend(&out, "<a class=\"report-link\" href=\"",
                        EscapeHtml(ReportUrl(options, data.agent, dump->dump_id())),
                        "\">report</a>");
      } else if (!dump->error().empty()) {
        absl::StrAppend(&out, "<span class=\"warn\">", EscapeHtml(dump->error()), "</span>");
      }
    } else if (!data.reports_error.empty()) {
      absl::StrAppend(&out, "<span class=\"muted\">", EscapeHtml(data.reports_error), "</span>");
    } else {
      out += "<span class=\"muted\">no extended dump yet</span>";
    }
    out += "</td></tr>";
    if (!l.accumulation_point().empty()) {
      absl::StrAppend(&out, "<tr><th>Accumulation point</th><td colspan=\"5\" class=\"cls\">",
                      EscapeHtml(l.accumulation_point()), "</td></tr>");
    }
    if (l.has_heap_exhaustion()) {
      absl::StrAppend(&out,
                      "<tr class=\"heap-full\"><th>Heap full in</th><td colspan=\"5\"><span "
                      "class=\"warn\">about ",
                      FormatForecastDuration(l.heap_exhaustion().estimate()), "</span> (",
                      ForecastInterval(l.heap_exhaustion()),
                      ") <a href=\"#heap-exhaustion\">forecast</a></td></tr>");
    }
    out += "</table>";
    if (heap && data.live_set.points_size() > 0) {
      std::vector<PlotPoint> points;
      for (const v1::LiveSetPoint& p : data.live_set.points()) {
        points.push_back({Seconds(p.time()), static_cast<double>(p.live_bytes())});
      }
      absl::StrAppend(
          &out, "<div class=\"live-set\">",
          SvgTimePlot({PlotSeries{"live set", std::move(points), SeriesColour(0), false}},
                      absl::ToUnixSeconds(data.from), absl::ToUnixSeconds(options.now), 900, 240,
                      absl::StrCat("live set over ", data.range_name)),
          "</div>");
    }
    out += CombinedPlotHtml(l, data, options);
    if (l.classes_size() == 0) {
      out += "</section>\n";
      continue;
    }
    out +=
        "<table class=\"classes\"><tr><th>Class</th><th>Bytes</th><th>Growth</th>"
        "<th>Bytes over the range</th></tr>";
    for (int ci = 0; ci < l.classes_size(); ++ci) {
      const v1::LeakClass& c = l.classes(ci);
      std::string plot = "<span class=\"muted\">—</span>";
      if (auto it = data.histories.find(c.class_name()); it != data.histories.end()) {
        plot = SvgTimePlot({PlotSeries{c.class_name(), ClassPoints(it->second),
                                       SeriesColour(static_cast<size_t>(ci)), false}},
                           absl::ToUnixSeconds(data.from), absl::ToUnixSeconds(options.now), 440,
                           110, absl::StrCat(c.class_name(), ": bytes over ", data.range_name));
      }
      absl::StrAppend(&out, "<tr class=\"leak-class\" data-class=\"", EscapeHtml(c.class_name()),
                      "\"><td class=\"cls\">", EscapeHtml(c.class_name()),
                      "</td><td class=\"num\">", FormatBytes(static_cast<double>(c.bytes())),
                      "</td><td class=\"num\">", FormatRate(c.growth_bytes_per_second()),
                      "</td><td>", plot, "</td></tr>");
    }
    out += "</table></section>\n";
  }
  if (data.reports.dumps_size() > 0) {
    out +=
        "<h2>Extended dumps</h2><table "
        "class=\"dumps\"><tr><th>Dump</th><th>State</th><th>Requested</th><th>For</th></tr>";
    for (const v1::ExtendedDump& d : data.reports.dumps()) {
      const std::string id = d.state() == v1::EXTENDED_DUMP_STATE_DONE
                                 ? Link(ReportUrl(options, data.agent, d.dump_id()), d.dump_id())
                                 : EscapeHtml(d.dump_id());
      std::string classes;
      for (const std::string& c : d.suspect_classes()) {
        absl::StrAppend(&classes, classes.empty() ? "" : ", ", EscapeHtml(c));
      }
      absl::StrAppend(&out, "<tr><td>", id, "</td><td>", DumpStateName(d.state()), "</td><td>",
                      FormatTime(d.requested_time()), "</td><td class=\"cls\">", classes,
                      "</td></tr>");
    }
    out += "</table>";
  }
  out += kFooter;
  return out;
}

namespace {

std::string CellDetail(const v1::TreemapCell& c, uint64_t total) {
  return absl::StrFormat("%s: %d objects, %s retained (%.1f%% of the reachable heap)",
                         c.kind() == "self" ? "own shallow size" : c.kind(), c.objects(),
                         FormatBytes(static_cast<double>(c.retained_bytes())),
                         total == 0 ? 0.0 : 100.0 * c.retained_bytes() / total);
}

// The two-level treemap of the dominator tree (DrillDownReport.dominator_treemap).
std::string NestedTreemapHtml(const v1::DominatorTreemap& t) {
  std::vector<NestedTreemapItem> items;
  std::string marked1, marked2;
  for (const v1::TreemapCell& c : t.cells()) {
    NestedTreemapItem item;
    item.item = {c.label(), static_cast<double>(c.retained_bytes()), CellDetail(c, t.total_bytes()),
                 c.accumulation_point()};
    if (c.accumulation_point()) marked1 = c.label();
    for (const v1::TreemapCell& k : c.children()) {
      item.children.push_back({k.label(), static_cast<double>(k.retained_bytes()),
                               CellDetail(k, t.total_bytes()), k.accumulation_point()});
      if (c.accumulation_point() && k.accumulation_point()) marked2 = k.label();
    }
    items.push_back(std::move(item));
  }
  std::string out = absl::StrCat(
      "<p class=\"muted\">Reachable heap ", FormatBytes(static_cast<double>(t.total_bytes())),
      " in ", t.total_objects(),
      " objects. Outer boxes: what the GC roots keep alive, grouped by class (class objects by "
      "the class whose statics they hold); inner boxes: what those objects dominate, by class "
      "(\"self\" = their own shallow size). Area = retained size.</p>");
  out += SvgNestedTreemap(items, 1000, 480);
  // The same cells as a table: legible however thin a box is.
  out +=
      "<table class=\"treemap-cells\"><tr><th>Box (outer / inner)</th><th>Objects</th>"
      "<th>Retained</th><th>Share of the heap</th></tr>";
  const auto row = [&](const v1::TreemapCell& c, bool inner) {
    absl::StrAppendFormat(
        &out,
        "<tr%s><td class=\"cls\">%s%s%s</td><td class=\"num\">%d</td><td "
        "class=\"num\">%s</td><td class=\"num\">%.1f%%</td></tr>",
        c.accumulation_point() ? " class=\"highlight\"" : "", inner ? "&nbsp;&nbsp;└ " : "",
        EscapeHtml(c.label()), c.accumulation_point() ? " ▶ accumulation point" : "", c.objects(),
        FormatBytes(static_cast<double>(c.retained_bytes())),
        t.total_bytes() == 0 ? 0.0 : 100.0 * c.retained_bytes() / t.total_bytes());
  };
  for (const v1::TreemapCell& c : t.cells()) {
    row(c, false);
    for (const v1::TreemapCell& k : c.children()) row(k, true);
  }
  out += "</table>";
  if (!marked1.empty()) {
    absl::StrAppend(&out, "<p class=\"ap-caption\">Accumulation point: inside <span class=\"cls\">",
                    EscapeHtml(marked1), "</span>",
                    marked2.empty()
                        ? ""
                        : absl::StrCat(", in <span class=\"cls\">", EscapeHtml(marked2), "</span>"),
                    " (orange).</p>");
  }
  return out;
}

std::string TreemapHtml(const v1::DrillDownReport& r) {
  if (r.has_dominator_treemap() && r.dominator_treemap().cells_size() > 0) {
    return NestedTreemapHtml(r.dominator_treemap());
  }
  std::string highlight = r.accumulation_point_top_class();
  std::vector<TreemapItem> items;
  bool any_highlight = false;
  for (const v1::ClassRetained& c : r.top_dominators_by_class()) {
    TreemapItem item;
    item.label = c.class_name();
    item.weight = static_cast<double>(c.retained_bytes());
    item.detail = absl::StrCat(c.instances(), " top-level objects, ",
                               FormatBytes(static_cast<double>(c.retained_bytes())), " retained");
    item.highlight = !highlight.empty() && c.class_name() == highlight;
    any_highlight |= item.highlight;
    items.push_back(std::move(item));
  }
  if (items.empty()) {
    return "<p class=\"muted\">This report has no dominator-tree levels (made before they were "
           "recorded).</p>";
  }
  std::string out = SvgTreemap(items, 900, 360);
  if (any_highlight) {
    absl::StrAppend(&out, "<p class=\"muted\">Highlighted: <span class=\"cls\">",
                    EscapeHtml(highlight),
                    "</span>, the top-level dominator above the accumulation point.</p>");
  }
  return out;
}

std::string DiffHtml(const v1::ExtendedDumpDiff& d) {
  std::string out =
      absl::StrFormat("<p>From <code>%s</code> to <code>%s</code>: reachable %s → %s (%s%s).</p>",
                      EscapeHtml(d.from_dump()), EscapeHtml(d.to_dump()),
                      FormatBytes(static_cast<double>(d.before_reachable_bytes())),
                      FormatBytes(static_cast<double>(d.after_reachable_bytes())),
                      d.delta_reachable_bytes() >= 0 ? "+" : "",
                      FormatBytes(static_cast<double>(d.delta_reachable_bytes())));
  out +=
      "<table class=\"diff\"><tr><th>Class</th><th>Instances</th><th>Δ instances</th><th>Retained "
      "(min)</th><th>Δ retained</th></tr>";
  for (const v1::ExtendedDumpClassDelta& c : d.classes()) {
    absl::StrAppendFormat(
        &out,
        "<tr class=\"diff-class\" data-class=\"%s\"><td class=\"cls\">%s</td><td "
        "class=\"num\">%d</td><td class=\"num\">%+d</td><td class=\"num\">%s</td><td "
        "class=\"num\">%s</td></tr>",
        EscapeHtml(c.class_name()), EscapeHtml(c.class_name()), c.after_instances(),
        c.delta_instances(), FormatBytes(static_cast<double>(c.after_retained_bytes())),
        absl::StrCat(c.delta_retained_bytes() > 0 ? "+" : "",
                     FormatBytes(static_cast<double>(c.delta_retained_bytes()))));
  }
  out += "</table>";
  if (d.owners_size() > 0) {
    out +=
        "<h3>Growth by owner</h3><table class=\"owners\"><tr><th>Owner</th><th>Path</th><th>Δ "
        "retained</th></tr>";
    for (const v1::OwnerDelta& o : d.owners()) {
      std::string path;
      for (const std::string& p : o.path()) {
        absl::StrAppend(&path, path.empty() ? "" : " → ", EscapeHtml(p));
      }
      absl::StrAppend(&out, "<tr><td class=\"cls\">", EscapeHtml(o.class_name()), "</td><td><code>",
                      path, "</code></td><td class=\"num\">",
                      FormatBytes(static_cast<double>(o.delta_retained_bytes())), "</td></tr>");
    }
    out += "</table>";
  }
  return out;
}

std::string MetadataHtml(const v1::ExtendedDump& d) {
  std::string out = "<table class=\"metadata\">";
  const auto row = [&out](std::string_view k, std::string v) {
    absl::StrAppend(&out, "<tr><th>", std::string(k), "</th><td>", v, "</td></tr>");
  };
  row("Dump", absl::StrCat("<code>", EscapeHtml(d.dump_id()), "</code>"));
  row("State", DumpStateName(d.state()));
  row("Requested", FormatTime(d.requested_time()));
  row("Written", FormatTime(d.dump_time()));
  row("Finished", FormatTime(d.finished_time()));
  row("Format", EscapeHtml(d.format()));
  row("File",
      absl::StrCat(FormatBytes(static_cast<double>(d.file_bytes())), d.gzip() ? " (gzip)" : ""));
  row("JVM pause", FormatDuration(Seconds(d.dump_pause())));
  row("Analysis", absl::StrCat(FormatDuration(Seconds(d.analysis_duration())), ", peak memory +",
                               FormatBytes(static_cast<double>(d.analysis_peak_memory_bytes()))));
  row("Objects",
      absl::StrCat(d.totals().objects(), " (", d.totals().reachable_objects(), " reachable), ",
                   d.totals().classes(), " classes, ", d.totals().gc_roots(), " GC roots"));
  if (!d.error().empty()) row("Error", EscapeHtml(d.error()));
  out += "</table>";
  return out;
}

}  // namespace

std::string RenderReportPage(const ReportPageData& data, const PageOptions& options) {
  std::string out = Header(absl::StrCat("Report ", data.dump_id),
                           absl::StrCat(Link(AgentsUrl(options), "Agents"), " / ",
                                        Link(LeaksUrl(options, data.agent), data.agent), " / ",
                                        Link(ReportsUrl(options, data.agent), "reports")));
  if (data.dump.has_value() &&
      static_cast<int>(data.reports.size()) < data.dump->report_classes_size()) {
    absl::StrAppend(
        &out, "<p class=\"muted superseded\">",
        data.dump->report_classes_size() - static_cast<int>(data.reports.size()), " of the ",
        data.dump->report_classes_size(),
        " class reports of this dump were superseded by a newer dump (heapwatch keeps the "
        "newest report of each class).</p>");
  }
  if (data.reports.empty()) {
    out += "<p class=\"muted\">No drill-down report of this dump is available";
    if (data.dump.has_value())
      absl::StrAppend(&out, " (dump ", DumpStateName(data.dump->state()), ")");
    out += ".</p>";
  }
  for (const v1::DrillDownReport& r : data.reports) {
    const v1::Leak* leak = nullptr;
    for (const v1::Leak& l : data.leaks) {
      for (const v1::LeakClass& c : l.classes()) {
        if (c.class_name() == r.class_name()) leak = &l;
      }
    }
    absl::StrAppend(&out, "<section class=\"report\" data-class=\"", EscapeHtml(r.class_name()),
                    "\"><h2>Suspect <span class=\"cls suspect-class\">", EscapeHtml(r.class_name()),
                    "</span></h2>");
    if (leak != nullptr) {
      absl::StrAppend(&out, "<p>Part of leak ",
                      Link(LeaksUrl(options, data.agent) + "#" + leak->leak(), leak->leak()),
                      " (main class <span class=\"cls\">", EscapeHtml(leak->main_class()),
                      "</span>).</p>");
    }
    absl::StrAppendFormat(&out,
                          "<table class=\"sizes\"><tr><th>Instances</th><td "
                          "class=\"num\">%d</td></tr><tr><th>Shallow</th><td "
                          "class=\"num\">%s</td></tr><tr><th>Retained</th><td class=\"num "
                          "retained\">%s</td></tr><tr><th>Minimum "
                          "retained</th><td class=\"num\">%s</td></tr><tr><th>Dynamic size</th><td "
                          "class=\"num\">%s</td></tr></table>",
                          r.instances(), FormatBytes(static_cast<double>(r.shallow_bytes())),
                          FormatBytes(static_cast<double>(r.retained_bytes())),
                          FormatBytes(static_cast<double>(r.minimum_retained_bytes())),
                          r.dynamic_objects() == 0
                              ? std::string("not computed")
                              : absl::StrCat(FormatBytes(static_cast<double>(r.dynamic_bytes())),
                                             " (", r.dynamic_objects(), " objects)"));
    out += "<h3>Accumulation point</h3>";
    if (r.accumulation_points_size() == 0) {
      out += "<p class=\"muted\">None: no single object holds most of the class's instances.</p>";
    }
    for (const v1::AccumulationPoint& ap : r.accumulation_points()) {
      absl::StrAppendFormat(
          &out,
          "<div class=\"accumulation-point\"><p><strong>%s</strong> holds %d instances, %s (%.0f%% "
          "of the minimum retained size); retained %s%s.</p><p>Path from a GC root:</p>%s</div>",
          ObjectText(ap.object()), ap.suspect_instances(),
          FormatBytes(static_cast<double>(ap.suspect_bytes())), 100 * ap.share(),
          FormatBytes(static_cast<double>(ap.object().retained_bytes())),
          ap.object().dynamic_objects() == 0
              ? ""
              : absl::StrCat(", dynamic size ",
                             FormatBytes(static_cast<double>(ap.object().dynamic_bytes()))),
          PathHtml(ap.path()));
    }
    out +=
        "<h3>Kept alive by</h3><table class=\"kept-alive-by\"><tr><th>Dominator "
        "class</th><th>Dominators</th><th>Instances dominated</th><th>Retained</th></tr>";
    for (const v1::KeptAliveBy& k : r.kept_alive_by()) {
      absl::StrAppend(&out, "<tr><td class=\"cls\">", EscapeHtml(k.class_name()),
                      "</td><td class=\"num\">", k.dominators(), "</td><td class=\"num\">",
                      k.dominated(), "</td><td class=\"num\">",
                      FormatBytes(static_cast<double>(k.dominator_retained_bytes())), "</td></tr>");
    }
    out += "</table>";
    if (r.accumulation_points_size() == 0) {
      out += "<h3>Shortest strong path to an instance</h3>" + PathHtml(r.shortest_path());
    }
    out += "</section>\n";
  }
  if (!data.reports.empty()) {
    out += "<h2>Dominator tree (two levels, by class)</h2>";
    out += TreemapHtml(data.reports.front());
  }
  out += "<h2>Against the previous dump</h2>";
  if (data.diff.has_value()) {
    out += DiffHtml(*data.diff);
  } else {
    absl::StrAppend(&out, "<p class=\"muted\">", EscapeHtml(data.diff_error), "</p>");
  }
  if (data.dump.has_value()) {
    out += "<h2>Dump</h2>" + MetadataHtml(*data.dump);
  }
  out += kFooter;
  return out;
}

std::string RenderReportsPage(std::string_view agent, const v1::ListReportsResponse& dumps,
                              const PageOptions& options) {
  std::string out = Header(absl::StrCat("Extended dumps of ", std::string(agent)),
                           absl::StrCat(Link(AgentsUrl(options), "Agents"), " / ",
                                        Link(LeaksUrl(options, agent), agent)));
  if (dumps.dumps_size() == 0) out += "<p class=\"muted\">No extended dump of this agent yet.</p>";
  out +=
      "<table class=\"report-list\"><tr><th>Dump</th><th>State</th><th>Requested</th>"
      "<th>Reports of</th><th>Analysis</th></tr>";
  for (const v1::ExtendedDump& d : dumps.dumps()) {  // newest first, as ListReports gives them
    std::string classes;
    for (const std::string& c : d.report_classes()) {
      absl::StrAppend(&classes, classes.empty() ? "" : ", ", EscapeHtml(c));
    }
    absl::StrAppend(&out, "<tr class=\"dump\" data-dump=\"", EscapeHtml(d.dump_id()), "\"><td>",
                    d.state() == v1::EXTENDED_DUMP_STATE_DONE
                        ? absl::StrCat("<a class=\"dump-link\" href=\"",
                                       EscapeHtml(ReportUrl(options, agent, d.dump_id())), "\">",
                                       EscapeHtml(d.dump_id()), "</a>")
                        : EscapeHtml(d.dump_id()),
                    "</td><td>", DumpStateName(d.state()), "</td><td>",
                    FormatTime(d.requested_time()), "</td><td class=\"cls\">", classes, "</td><td>",
                    d.state() == v1::EXTENDED_DUMP_STATE_DONE
                        ? FormatDuration(Seconds(d.analysis_duration()))
                        : EscapeHtml(d.error()),
                    "</td></tr>");
  }
  out += "</table>";
  out += kFooter;
  return out;
}

std::string RenderErrorPage(int http_status, std::string_view message) {
  return absl::StrCat(Header(absl::StrCat("Error ", http_status), Link("/", "Agents")), "<p>",
                      EscapeHtml(message), "</p>", kFooter);
}

namespace {

HttpResponse Error(int status, std::string_view message) {
  return {status, "text/html; charset=utf-8", RenderErrorPage(status, message)};
}

HttpResponse FromStatus(const Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      return Error(404, std::string(s.message()));
    case absl::StatusCode::kInvalidArgument:
      return Error(400, std::string(s.message()));
    default:
      return Error(500, s.ToString());
  }
}

std::string QueryValue(std::string_view query, std::string_view key) {
  for (const std::string& part :
       std::vector<std::string>(absl::StrSplit(std::string(query), '&'))) {
    std::vector<std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.size() == 2 && kv[0] == key) return UrlDecode(kv[1]);
  }
  return "";
}

HttpResponse ServeAgents(QuerySource& source, const PageOptions& options) {
  AgentsPageData data;
  if (Status s = source.ListAgents({}, &data.agents); !s.ok()) return FromStatus(s);
  if (Status s = source.ListLeaks({}, &data.leaks); !s.ok()) return FromStatus(s);
  for (const v1::Agent& a : data.agents.agents()) {
    v1::GetLiveSetRequest request;
    request.set_agent(a.agent());
    SetTime(options.now - absl::Hours(1), request.mutable_start_time());
    SetTime(options.now, request.mutable_end_time());
    v1::GetLiveSetResponse r;
    if (source.GetLiveSet(request, &r).ok()) data.live_sets[a.agent()] = std::move(r);
  }
  return {200, "text/html; charset=utf-8", RenderAgentsPage(data, options)};
}

HttpResponse ServeLeaks(QuerySource& source, const std::string& agent, std::string_view query,
                        const PageOptions& options) {
  LeaksPageData data;
  data.agent = agent;
  data.range_name = QueryValue(query, "range");
  if (data.range_name.empty()) data.range_name = kDefaultRange;
  std::optional<absl::Duration> range = ParseRange(data.range_name);
  if (!range.has_value()) {
    return Error(
        400, absl::StrCat("unknown range \"", data.range_name, "\"; use 15m, 1h, 6h, 1d or 7d"));
  }
  data.from = options.now - *range;
  v1::ListLeaksRequest leaks_request;
  leaks_request.set_agent(agent);
  if (Status s = source.ListLeaks(leaks_request, &data.leaks); !s.ok()) return FromStatus(s);
  v1::ListAgentsResponse agents;
  if (source.ListAgents({}, &agents).ok()) {
    for (const v1::Agent& a : agents.agents()) {
      if (a.agent() == agent) data.info = a;
    }
  }
  for (const v1::Leak& l : data.leaks.leaks()) {
    for (const v1::LeakClass& c : l.classes()) {
      if (data.histories.count(c.class_name())) continue;
      v1::GetClassHistoryRequest request;
      request.set_agent(agent);
      request.set_class_name(c.class_name());
      SetTime(data.from, request.mutable_start_time());
      SetTime(options.now, request.mutable_end_time());
      v1::GetClassHistoryResponse r;
      if (source.GetClassHistory(request, &r).ok()) data.histories[c.class_name()] = std::move(r);
    }
  }
  // A "heap" leak has no classes to plot: its growth is the live set's.
  if (std::any_of(data.leaks.leaks().begin(), data.leaks.leaks().end(), IsHeapLeak)) {
    v1::GetLiveSetRequest request;
    request.set_agent(agent);
    SetTime(data.from, request.mutable_start_time());
    SetTime(options.now, request.mutable_end_time());
    v1::GetLiveSetResponse r;
    if (source.GetLiveSet(request, &r).ok()) data.live_set = std::move(r);
  }
  v1::ListReportsRequest reports_request;
  reports_request.set_agent(agent);
  if (Status s = source.ListReports(reports_request, &data.reports); !s.ok()) {
    data.reports_error = std::string(s.message());
  }
  return {200, "text/html; charset=utf-8", RenderLeaksPage(data, options)};
}

HttpResponse ServeReport(QuerySource& source, const std::string& agent, const std::string& dump_id,
                         const PageOptions& options) {
  ReportPageData data;
  data.agent = agent;
  data.dump_id = dump_id;
  v1::ListReportsRequest list;
  list.set_agent(agent);
  v1::ListReportsResponse dumps;
  if (Status s = source.ListReports(list, &dumps); !s.ok()) return FromStatus(s);
  for (const v1::ExtendedDump& d : dumps.dumps()) {
    if (d.dump_id() == dump_id) data.dump = d;
  }
  if (!data.dump.has_value()) {
    return Error(404, absl::StrCat("agent ", agent, " has no extended dump ", dump_id));
  }
  // This dump's report of each of its classes (GetReport by dump id: also when a newer dump
  // superseded it).
  for (const std::string& c : data.dump->report_classes()) {
    v1::GetReportRequest request;
    request.set_agent(agent);
    request.set_class_name(c);
    request.set_dump_id(dump_id);
    v1::GetReportResponse r;
    if (source.GetReport(request, &r).ok() && r.report().dump().dump_id() == dump_id) {
      data.reports.push_back(std::move(*r.mutable_report()));
    }
  }
  std::stable_sort(data.reports.begin(), data.reports.end(),
                   [](const v1::DrillDownReport& a, const v1::DrillDownReport& b) {
                     return a.retained_bytes() > b.retained_bytes();
                   });
  v1::DiffExtendedDumpsRequest diff;
  diff.set_agent(agent);
  diff.set_to_dump(dump_id);
  diff.set_max_classes(20);
  diff.set_max_owners(10);
  v1::DiffExtendedDumpsResponse d;
  if (Status s = source.DiffExtendedDumps(diff, &d); s.ok()) {
    data.diff = d.diff();
  } else {
    data.diff_error = s.code() == absl::StatusCode::kNotFound
                          ? "No earlier analysed dump of this agent to compare with."
                          : std::string(s.message());
  }
  v1::ListLeaksRequest leaks_request;
  leaks_request.set_agent(agent);
  v1::ListLeaksResponse leaks;
  if (source.ListLeaks(leaks_request, &leaks).ok()) {
    data.leaks.assign(leaks.leaks().begin(), leaks.leaks().end());
  }
  return {200, "text/html; charset=utf-8", RenderReportPage(data, options)};
}

HttpResponse ServeReports(QuerySource& source, const std::string& agent,
                          const PageOptions& options) {
  v1::ListReportsRequest list;
  list.set_agent(agent);
  v1::ListReportsResponse dumps;
  if (Status s = source.ListReports(list, &dumps); !s.ok()) return FromStatus(s);
  return {200, "text/html; charset=utf-8", RenderReportsPage(agent, dumps, options)};
}

}  // namespace

HttpResponse ServePage(QuerySource& source, std::string_view path, std::string_view query,
                       const PageOptions& options) {
  if (path == "/" || path.empty()) return ServeAgents(source, options);
  std::vector<std::string> parts;
  for (const std::string& p :
       std::vector<std::string>(absl::StrSplit(std::string(path.substr(1)), '/'))) {
    parts.push_back(UrlDecode(p));
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // trailing slash
  if (parts.size() == 3 && parts[0] == "agents" && parts[2] == "leaks" && !parts[1].empty()) {
    return ServeLeaks(source, parts[1], query, options);
  }
  if (parts.size() == 3 && parts[0] == "agents" && parts[2] == "reports" && !parts[1].empty()) {
    return ServeReports(source, parts[1], options);
  }
  if (parts.size() == 4 && parts[0] == "agents" && parts[2] == "reports" && !parts[1].empty() &&
      !parts[3].empty()) {
    return ServeReport(source, parts[1], parts[3], options);
  }
  return Error(404, absl::StrCat("no page at ", std::string(path)));
}

}  // namespace heapwatch::web
