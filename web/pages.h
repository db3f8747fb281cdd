// heapwatchd's read-only web pages, rendered on the server as HTML with inline SVG (docs/web.md):
//
//   /                                  agents: state, kind, live-set sparkline, pause budget, leaks
//   /agents/{agent}/leaks?range=R      the agent's heap exhaustion forecast (when it has one) and
//                                      its leaks: classes, growth plots over R (15m, 1h, 6h, 1d,
//                                      7d; default 1h), score, first seen, escalation state; a leak
//                                      of kind "heap" (classes not named yet) plots the live set
//   /agents/{agent}/reports            every extended dump of the agent, newest first, linked
//   /agents/{agent}/reports/{dump_id}  the dump's drill-down reports: accumulation point and its
//   path
//                                      from a GC root, kept alive by, retained / minimum retained /
//                                      dynamic size, a treemap of the dominator tree's first level
//                                      by class, the diff against the previous dump, the dump's
//                                      metadata
//
// The pages use no script and load nothing: one inline stylesheet. Every string from a dump or a
// JVM goes through EscapeHtml (web/html.h). The data come from a QuerySource (web/query_source.h),
// i.e. the gRPC query service's own answers.
//
// Thread-safety: the Render functions are pure; ServePage calls `source` (which must allow
// concurrent calls) and may run on several threads at once.
#ifndef HEAPWATCH_WEB_PAGES_H_
#define HEAPWATCH_WEB_PAGES_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "web/query_source.h"

namespace heapwatch::web {

struct PageOptions {
  // Prefix of every link ("https://heapwatch.example.com", no trailing slash); empty = links are
  // absolute paths on the server that serves the page.
  std::string external_url;
  // The time the page is rendered for (the end of every plotted range).
  absl::Time now = absl::UnixEpoch();
};

// The time ranges the leaks page offers, by name ("15m", "1h", "6h", "1d", "7d"); nullopt
// otherwise.
std::optional<absl::Duration> ParseRange(std::string_view name);

struct AgentsPageData {
  v1::ListAgentsResponse agents;
  v1::ListLeaksResponse leaks;
  // The last hour of each agent's live-set series, by agent id (agents without one are absent).
  std::map<std::string, v1::GetLiveSetResponse> live_sets;
};
std::string RenderAgentsPage(const AgentsPageData& data, const PageOptions& options);

struct LeaksPageData {
  std::string agent;
  std::optional<v1::Agent> info;  // unset when ListAgents does not name the agent
  v1::ListLeaksResponse leaks;
  std::string range_name;  // one of ParseRange's names
  absl::Time from;         // the plotted range [from, options.now]
  // Each leak class's history in that range, by class name.
  std::map<std::string, v1::GetClassHistoryResponse> histories;
  v1::ListReportsResponse reports;  // the agent's extended dumps (escalation state)
  std::string reports_error;        // why `reports` is empty (e.g. no escalation), else empty
  // The agent's live set in that range, fetched only when a leak of kind "heap" (a growing live set
  // whose classes are not named yet) is listed: that leak's section plots it.
  v1::GetLiveSetResponse live_set;
};
std::string RenderLeaksPage(const LeaksPageData& data, const PageOptions& options);

struct ReportPageData {
  std::string agent;
  std::string dump_id;
  std::optional<v1::ExtendedDump> dump;      // the dump's record (metadata, state)
  std::vector<v1::DrillDownReport> reports;  // its reports, biggest retained size first
  std::optional<v1::ExtendedDumpDiff> diff;  // against the agent's previous analysed dump
  std::string diff_error;                    // why there is no diff
  std::vector<v1::Leak> leaks;  // the agent's current leaks (to name the report's leak)
};
std::string RenderReportPage(const ReportPageData& data, const PageOptions& options);

// /agents/{agent}/reports: every extended dump of the agent (ListReports), newest first, each DONE
// one linking its stable report URL /agents/{agent}/reports/{dump_id}.
std::string RenderReportsPage(std::string_view agent, const v1::ListReportsResponse& dumps,
                              const PageOptions& options);

// A page for an error (404, 400, 500...): `message` is escaped.
std::string RenderErrorPage(int http_status, std::string_view message);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

// Routes one GET request: `path` is the request path (percent-encoded, as sent), `query` the query
// string without '?'. Fetches the data from `source` and renders the page; 404 for an unknown path,
// agent or dump, 400 for a bad range, 500 with the message for other errors of `source`.
HttpResponse ServePage(QuerySource& source, std::string_view path, std::string_view query,
                       const PageOptions& options);

}  // namespace heapwatch::web

#endif  // HEAPWATCH_WEB_PAGES_H_
