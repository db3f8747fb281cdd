#include "ctl/report_commands.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ctl/output.h"
#include "ctl/rpc.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;

// Rows of the tables inside a report (the full lists are in --json).
constexpr size_t kReportRows = 10;
// Class and owner deltas shown in a report's diff from the previous dump.
constexpr size_t kReportDiffRows = 5;

double D(uint64_t v) { return static_cast<double>(v); }
double D(int64_t v) { return static_cast<double>(v); }

// "2026-11-22 02:15:03Z"; "-" when unset or invalid.
std::string TimeText(bool has, const google::protobuf::Timestamp& ts) {
  if (!has) return "-";
  auto t = proto::FromTimestamp(ts);
  if (!t.ok()) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%SZ", *t, absl::UTCTimeZone());
}

std::string SpanText(absl::Duration d) {
  if (d < absl::Seconds(100)) return absl::StrFormat("%.2f s", absl::ToDoubleSeconds(d));
  return absl::FormatDuration(absl::Trunc(d, absl::Seconds(1)));
}

// "0.84 s", "3m20s"; "-" when unset.
std::string DurationText(bool has, const google::protobuf::Duration& pd) {
  if (!has) return "-";
  auto d = proto::FromDuration(pd);
  if (!d.ok()) return "-";
  return SpanText(*d);
}

std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

std::string StateName(v1::ExtendedDumpState state) {
  switch (state) {
    case v1::EXTENDED_DUMP_STATE_QUEUED:
      return "queued";
    case v1::EXTENDED_DUMP_STATE_DUMPING:
      return "dumping";
    case v1::EXTENDED_DUMP_STATE_ANALYZING:
      return "analyzing";
    case v1::EXTENDED_DUMP_STATE_DONE:
      return "done";
    case v1::EXTENDED_DUMP_STATE_FAILED:
      return "failed";
    default:
      return "unknown";
  }
}

std::string TriggerName(v1::ExtendedDumpTrigger trigger) {
  switch (trigger) {
    case v1::EXTENDED_DUMP_TRIGGER_SUSPECT:
      return "suspect";
    case v1::EXTENDED_DUMP_TRIGGER_MANUAL:
      return "manual";
    default:
      return "unknown";
  }
}

bool Finished(v1::ExtendedDumpState state) {
  return state == v1::EXTENDED_DUMP_STATE_DONE || state == v1::EXTENDED_DUMP_STATE_FAILED;
}

// "java.util.ArrayList@0x7f0012a0".
std::string ObjectName(const v1::HeapObject& o) {
  return absl::StrFormat("%s@0x%x", o.class_name().empty() ? "?" : o.class_name(), o.object_id());
}

// "5.3 MiB (5557452 B)": human-readable with the exact count next to it.
std::string BytesExact(uint64_t bytes) {
  if (bytes < 1024) return HumanBytes(D(bytes));
  return absl::StrFormat("%s (%d B)", HumanBytes(D(bytes)), bytes);
}

std::string TableText(const Table& table) {
  std::ostringstream out;
  table.Print(out);
  return out.str();
}

// Prefixes every line of `text` with `prefix`.
std::string Indent(const std::string& text, const std::string& prefix) {
  std::string result;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    absl::StrAppend(&result, prefix, line, "\n");
  }
  return result;
}

// One line per step: "GC root (sticky class) com.example.App@0x1000 (1.2 KiB)" for the root, then
// "static SESSIONS -> java.util.ArrayList@0x2000 (5.3 MiB)".
std::string PathText(const v1::GcRootPath& path, const std::string& indent) {
  if (!path.found() || path.steps_size() == 0) {
    return absl::StrCat(indent, "(no GC root reaches it)\n");
  }
  std::string text;
  if (!path.strong()) {
    absl::StrAppend(&text, indent,
                    "(no strong path: every path needs a soft, weak, phantom or finalizer "
                    "reference)\n");
  }
  for (int i = 0; i < path.steps_size(); ++i) {
    const v1::PathStep& step = path.steps(i);
    std::string object = absl::StrCat(ObjectName(step.object()), " (",
                                      HumanBytes(D(step.object().retained_bytes())), ")");
    if (i == 0) {
      std::string kind = step.object().gc_root_kind();
      absl::StrAppend(&text, indent, "GC root", kind.empty() ? "" : absl::StrCat(" (", kind, ")"),
                      " ", object, "\n");
    } else {
      std::string reference = step.reference().empty() ? "?" : step.reference();
      absl::StrAppend(&text, indent, reference, step.weak() ? " (weak)" : "", " -> ", object, "\n");
    }
  }
  return text;
}

// The dump's metadata, a few lines starting with `indent`.
std::string DumpDetails(const v1::ExtendedDump& dump, const std::string& indent) {
  std::string text;
  absl::StrAppend(&text, indent, "requested ",
                  TimeText(dump.has_requested_time(), dump.requested_time()), ", dumped ",
                  TimeText(dump.has_dump_time(), dump.dump_time()), ", finished ",
                  TimeText(dump.has_finished_time(), dump.finished_time()), "\n");
  if (dump.file_bytes() > 0 || dump.has_dump_pause() || dump.has_analysis_duration()) {
    absl::StrAppend(
        &text, indent, "file ", dump.file_bytes() > 0 ? HumanBytes(D(dump.file_bytes())) : "-",
        dump.gzip() ? " (gzip)" : "",
        dump.format().empty() ? "" : absl::StrCat(", ", dump.format()), "; JVM pause ",
        DurationText(dump.has_dump_pause(), dump.dump_pause()), " (attach total ",
        DurationText(dump.has_dump_duration(), dump.dump_duration()), "); analysis ",
        DurationText(dump.has_analysis_duration(), dump.analysis_duration()), ", peak memory ",
        dump.analysis_peak_memory_bytes() > 0 ? HumanBytes(D(dump.analysis_peak_memory_bytes()))
                                              : "-",
        "\n");
  }
  if (dump.has_totals() && dump.totals().objects() > 0) {
    const v1::ExtendedDumpTotals& t = dump.totals();
    absl::StrAppend(
        &text, indent,
        absl::StrFormat("heap: %d objects, %d classes, %d GC roots; reachable %s, "
                        "unreachable %s (%d objects)",
                        t.objects(), t.classes(), t.gc_roots(),
                        HumanBytes(D(t.reachable_shallow_bytes())),
                        HumanBytes(D(t.unreachable_shallow_bytes())), t.unreachable_objects()),
        "\n");
  }
  if (dump.raw_dump_kept())
    absl::StrAppend(&text, indent, "raw dump kept: ", dump.raw_dump_path(), "\n");
  return text;
}

// "(12 more classes)" when the server had more rows than shown.
std::string MoreRows(uint32_t total, size_t shown, const std::string& what) {
  if (total <= shown) return "";
  return absl::StrFormat("(%d more %s)\n", total - shown, what);
}

std::string OwnerPath(const v1::OwnerDelta& owner) {
  return owner.path_size() == 0 ? "(no path)" : absl::StrJoin(owner.path(), " -> ");
}

// The class and owner deltas of `diff`, at most `top` rows each (0 = all).
std::string DiffBody(const v1::ExtendedDumpDiff& diff, size_t top, bool owner_classes) {
  auto limit = [top](int size) {
    return top == 0 ? static_cast<size_t>(size) : std::min(top, static_cast<size_t>(size));
  };
  std::string text;
  size_t classes = limit(diff.classes_size());
  if (classes > 0) {
    Table table({"CLASS", "CHANGE", "INSTANCES", "DELTA INST", "SHALLOW", "DELTA SHALLOW",
                 "MIN RETAINED", "DELTA RETAINED"},
                {2, 3, 4, 5, 6, 7});
    for (size_t i = 0; i < classes; ++i) {
      const v1::ExtendedDumpClassDelta& c = diff.classes(static_cast<int>(i));
      table.AddRow({c.class_name(), ClassChangeName(c.change()), std::to_string(c.after_instances()),
                    Signed(c.delta_instances()), HumanBytes(D(c.after_shallow_bytes())),
                    SignedHumanBytes(D(c.delta_shallow_bytes())),
                    HumanBytes(D(c.after_retained_bytes())),
                    SignedHumanBytes(D(c.delta_retained_bytes()))});
    }
    absl::StrAppend(&text, "Classes, largest retained growth first:\n", TableText(table));
  } else {
    absl::StrAppend(&text, "Classes: no differences\n");
  }
  absl::StrAppend(&text, MoreRows(std::max<uint32_t>(diff.class_count(), diff.classes_size()),
                                  classes, "classes"));
  size_t owners = limit(diff.owners_size());
  if (owners > 0) {
    absl::StrAppend(&text,
                    "Owners (dominators grouped by class and path from a GC root), largest growth "
                    "first:\n");
    for (size_t i = 0; i < owners; ++i) {
      const v1::OwnerDelta& o = diff.owners(static_cast<int>(i));
      absl::StrAppend(&text,
                      absl::StrFormat("  %s  %s: retained %s -> %s, objects %d -> %d\n",
                                      SignedHumanBytes(D(o.delta_retained_bytes())), o.class_name(),
                                      HumanBytes(D(o.before_retained_bytes())),
                                      HumanBytes(D(o.after_retained_bytes())), o.before_objects(),
                                      o.after_objects()),
                      "      path: ", OwnerPath(o), "\n");
    }
  } else {
    absl::StrAppend(&text, "Owners: no differences\n");
  }
  absl::StrAppend(&text, MoreRows(std::max<uint32_t>(diff.owner_count(), diff.owners_size()),
                                  owners, "owners"));
  size_t owner_class_rows = owner_classes ? limit(diff.owner_classes_size()) : 0;
  if (owner_class_rows > 0) {
    Table table({"OWNER CLASS", "OBJECTS", "RETAINED BEFORE", "RETAINED AFTER", "DELTA RETAINED"},
                {1, 2, 3, 4});
    for (size_t i = 0; i < owner_class_rows; ++i) {
      const v1::OwnerClassDelta& c = diff.owner_classes(static_cast<int>(i));
      table.AddRow(
          {c.class_name(), absl::StrFormat("%d -> %d", c.before_objects(), c.after_objects()),
           HumanBytes(D(c.before_retained_bytes())), HumanBytes(D(c.after_retained_bytes())),
           SignedHumanBytes(D(c.delta_retained_bytes()))});
    }
    absl::StrAppend(&text, "Owner classes:\n", TableText(table));
  }
  return text;
}

// "vm-1: extended dump A (time) -> B (time), 2m0s; reachable heap X -> Y (+Z)".
std::string DiffHeader(const v1::ExtendedDumpDiff& diff) {
  std::string span;
  if (diff.has_from_time() && diff.has_to_time()) {
    auto from = proto::FromTimestamp(diff.from_time());
    auto to = proto::FromTimestamp(diff.to_time());
    if (from.ok() && to.ok()) span = absl::StrCat(", ", SpanText(*to - *from), " apart");
  }
  return absl::StrFormat(
      "%s: extended dump %s (%s) -> %s (%s)%s; reachable heap %s -> %s (%s)\n", diff.agent(),
      diff.from_dump(), TimeText(diff.has_from_time(), diff.from_time()), diff.to_dump(),
      TimeText(diff.has_to_time(), diff.to_time()), span,
      HumanBytes(D(diff.before_reachable_bytes())), HumanBytes(D(diff.after_reachable_bytes())),
      SignedHumanBytes(D(diff.delta_reachable_bytes())));
}

std::string GrowthText(const v1::DrillDownReport& report) {
  const auto& h = report.growth_history();
  if (h.empty()) return "Growth history: no histogram samples\n";
  const v1::ClassSample& first = h[0];
  const v1::ClassSample& last = h[h.size() - 1];
  std::string span;
  if (first.has_time() && last.has_time()) {
    auto a = proto::FromTimestamp(first.time());
    auto b = proto::FromTimestamp(last.time());
    if (a.ok() && b.ok()) span = absl::StrCat(" over ", SpanText(*b - *a));
  }
  return absl::StrFormat(
      "Growth history: %d samples, %s %s (%d instances) -> %s %s (%d instances): %s (%s "
      "instances)%s\n",
      h.size(), TimeText(first.has_time(), first.time()), HumanBytes(D(first.bytes())),
      first.instances(), TimeText(last.has_time(), last.time()), HumanBytes(D(last.bytes())),
      last.instances(), SignedHumanBytes(D(last.bytes()) - D(first.bytes())),
      Signed(static_cast<int64_t>(last.instances()) - static_cast<int64_t>(first.instances())),
      span);
}

// ---- commands ----

struct ReportArgs {
  std::string agent;
  std::string class_name;  // or a leak id
};

// A leak id as ListLeaks gives it: "L" and 12 lowercase hex digits. An argument of that form is
// taken as a leak id (a class in the default package named like one cannot be asked for by name).
bool IsLeakId(std::string_view s) {
  if (s.size() != 13 || s[0] != 'L') return false;
  for (char c : s.substr(1)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

int RunReport(const ReportArgs& args, const GlobalOptions& global, std::ostream& out,
              std::ostream& err) {
  RpcClient client(global);
  v1::GetReportRequest request;
  request.set_agent(args.agent);
  if (IsLeakId(args.class_name)) {
    request.set_leak(args.class_name);
  } else {
    request.set_class_name(args.class_name);
  }
  v1::GetReportResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::GetReport, request, &response);
  if (!status.ok()) return ServerError(err, global, "GetReport", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderReport(response.report());
  return kExitOk;
}

struct ReportsArgs {
  std::string agent;
};

int RunReports(const ReportsArgs& args, const GlobalOptions& global, std::ostream& out,
               std::ostream& err) {
  RpcClient client(global);
  v1::ListReportsRequest request;
  request.set_agent(args.agent);
  v1::ListReportsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::ListReports, request, &response);
  if (!status.ok()) return ServerError(err, global, "ListReports", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderReportList(response);
  return kExitOk;
}

struct DumpArgs {
  std::string agent;
  bool wait = false;
  std::string timeout = "10m";
};

int RunDump(const DumpArgs& args, const GlobalOptions& global, std::ostream& out,
            std::ostream& err) {
  absl::Duration timeout;
  if (!absl::ParseDuration(args.timeout, &timeout) || timeout <= absl::ZeroDuration()) {
    err << "heapwatchctl dump: --timeout: invalid duration '" << args.timeout
        << "' (e.g. 90s, 10m)\n";
    return kExitUsage;
  }
  RpcClient client(global);
  v1::TriggerExtendedDumpRequest request;
  request.set_agent(args.agent);
  v1::TriggerExtendedDumpResponse response;
  grpc::Status status =
      client.Call(&v1::QueryService::Stub::TriggerExtendedDump, request, &response);
  if (!status.ok()) return ServerError(err, global, "TriggerExtendedDump", status);
  const v1::ExtendedDump& requested = response.dump();
  if (!args.wait) {
    if (global.json) return EmitJson(response, out, err);
    out << RenderDump(requested);
    out << "follow it with: heapwatchctl reports " << args.agent << "\n";
    return kExitOk;
  }
  const absl::Time start = Clock::Real()->Now();
  grpc::Status list_status;
  auto list = [&](v1::ListReportsResponse* list_response) -> Status {
    v1::ListReportsRequest list_request;
    list_request.set_agent(args.agent);
    list_status = client.Call(&v1::QueryService::Stub::ListReports, list_request, list_response);
    if (!list_status.ok()) return absl::UnavailableError(list_status.error_message());
    return absl::OkStatus();
  };
  auto on_change = [&](const v1::ExtendedDump& d) {
    err << absl::StrFormat("heapwatchctl dump: %s %s (%d s)\n", d.dump_id(), StateName(d.state()),
                           absl::ToInt64Seconds(Clock::Real()->Now() - start));
    err.flush();
  };
  auto sleep = [](absl::Duration d) { std::this_thread::sleep_for(absl::ToChronoMicroseconds(d)); };
  auto final_dump = Finished(requested.state())
                        ? StatusOr<v1::ExtendedDump>(requested)
                        : WaitForDump(requested.dump_id(), timeout, absl::Seconds(1),
                                      *Clock::Real(), sleep, list, on_change);
  if (!final_dump.ok()) {
    if (!list_status.ok()) return ServerError(err, global, "ListReports", list_status);
    err << "heapwatchctl dump: " << final_dump.status().message() << "\n";
    return kExitError;
  }
  if (global.json) {
    v1::TriggerExtendedDumpResponse final_response;
    *final_response.mutable_dump() = *final_dump;
    int code = EmitJson(final_response, out, err);
    if (code != kExitOk) return code;
  } else {
    out << RenderDump(*final_dump);
  }
  if (final_dump->state() != v1::EXTENDED_DUMP_STATE_DONE) {
    err << "heapwatchctl dump: extended dump " << final_dump->dump_id() << " of " << args.agent
        << " failed: " << (final_dump->error().empty() ? "(no reason given)" : final_dump->error())
        << "\n";
    return kExitError;
  }
  return kExitOk;
}

struct DumpDiffArgs {
  std::string agent;
  std::vector<std::string> dumps;
  uint32_t top = 20;
};

int RunDumpDiff(const DumpDiffArgs& args, const GlobalOptions& global, std::ostream& out,
                std::ostream& err) {
  if (args.dumps.size() == 1) {
    err << "heapwatchctl dump-diff: give two dump ids (A B) or none (the last two analysed "
           "dumps)\n";
    return kExitUsage;
  }
  v1::DiffExtendedDumpsRequest request;
  request.set_agent(args.agent);
  if (args.dumps.size() == 2) {
    request.set_from_dump(args.dumps[0]);
    request.set_to_dump(args.dumps[1]);
  }
  request.set_max_classes(args.top);
  request.set_max_owners(args.top);
  RpcClient client(global);
  v1::DiffExtendedDumpsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::DiffExtendedDumps, request, &response);
  if (!status.ok()) return ServerError(err, global, "DiffExtendedDumps", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderExtendedDumpDiff(response.diff(), args.top);
  return kExitOk;
}

}  // namespace

std::string RenderReport(const v1::DrillDownReport& report) {
  std::string text;
  if (report.has_leak()) {
    const v1::Leak& l = report.leak();
    absl::StrAppend(
        &text,
        absl::StrFormat("Leak %s in %s: %s, %d classes, %s in the newest histogram, growing %s/s "
                        "(%s/h) since %s%s\n",
                        l.leak(), report.agent(), l.main_class(), l.classes_size(),
                        HumanBytes(D(l.bytes())), SignedHumanBytes(l.growth_bytes_per_second()),
                        SignedHumanBytes(l.growth_bytes_per_second() * 3600),
                        TimeText(l.has_first_seen(), l.first_seen()),
                        l.accumulation_point().empty()
                            ? ""
                            : absl::StrCat(", accumulates in ", l.accumulation_point())));
    Table classes({"CLASS", "BYTES", "GROWTH/S", "GROWTH/H"}, {1, 2, 3});
    for (const v1::LeakClass& c : l.classes()) {
      classes.AddRow({c.class_name(), HumanBytes(D(c.bytes())),
                      SignedHumanBytes(c.growth_bytes_per_second()),
                      SignedHumanBytes(c.growth_bytes_per_second() * 3600)});
    }
    std::ostringstream table;
    classes.Print(table);
    absl::StrAppend(&text, table.str(), "\n");
  }
  absl::StrAppend(&text, "Drill-down report: ", report.class_name(), " in ", report.agent(), "\n");
  if (report.has_dump()) {
    const v1::ExtendedDump& dump = report.dump();
    absl::StrAppend(&text, "Extended dump ", dump.dump_id(), " (", TriggerName(dump.trigger()),
                    ", ", StateName(dump.state()), ")\n", DumpDetails(dump, "  "));
  }
  if (report.has_suspect()) {
    const v1::Suspect& s = report.suspect();
    absl::StrAppend(&text, absl::StrFormat("Suspect since %s: score %.2f, growth %s/s (%s/h), %d "
                                           "instances, %s in the newest histogram\n",
                                           TimeText(s.has_first_seen(), s.first_seen()), s.score(),
                                           SignedHumanBytes(s.growth_bytes_per_second()),
                                           SignedHumanBytes(s.growth_bytes_per_second() * 3600),
                                           s.instances(), HumanBytes(D(s.bytes()))));
  }
  absl::StrAppend(&text, "\n");
  absl::StrAppend(&text, "Instances:              ", report.instances(), "\n");
  absl::StrAppend(&text, "Shallow size:           ", BytesExact(report.shallow_bytes()), "\n");
  absl::StrAppend(&text, "Retained size:          ", BytesExact(report.retained_bytes()),
                  " (precise, simulated GC)\n");
  absl::StrAppend(&text, "Minimum retained size:  ", BytesExact(report.minimum_retained_bytes()),
                  " (dominator tree)\n");

  absl::StrAppend(&text, "\n");
  if (report.accumulation_points().empty()) {
    absl::StrAppend(&text,
                    "Accumulation point: none (no single object retains most of the "
                    "instances)\n");
  }
  for (int i = 0; i < report.accumulation_points_size(); ++i) {
    const v1::AccumulationPoint& p = report.accumulation_points(i);
    absl::StrAppend(
        &text,
        absl::StrFormat("Accumulation point %d of %d: %s retains %s, %s of the minimum retained "
                        "size (%d instances, %s)\n",
                        i + 1, report.accumulation_points_size(), ObjectName(p.object()),
                        HumanBytes(D(p.object().retained_bytes())), Percent(p.share()),
                        p.suspect_instances(), HumanBytes(D(p.suspect_bytes()))),
        "  path from a GC root:\n", PathText(p.path(), "    "));
  }

  absl::StrAppend(&text, "\nKept alive by (immediate dominators grouped by class");
  if (!report.exclude_patterns().empty()) {
    absl::StrAppend(&text, ", climbing past ", absl::StrJoin(report.exclude_patterns(), " "));
  }
  absl::StrAppend(&text, "):\n");
  if (report.kept_alive_by().empty()) {
    absl::StrAppend(&text, "  (none)\n");
  } else {
    Table table({"CLASS", "DOMINATORS", "DOMINATED", "DOMINATED SHALLOW", "DOMINATOR RETAINED",
                 "BIGGEST DOMINATOR"},
                {1, 2, 3, 4});
    size_t rows = std::min<size_t>(kReportRows, report.kept_alive_by_size());
    for (size_t i = 0; i < rows; ++i) {
      const v1::KeptAliveBy& k = report.kept_alive_by(static_cast<int>(i));
      table.AddRow({k.class_name(), std::to_string(k.dominators()), std::to_string(k.dominated()),
                    HumanBytes(D(k.dominated_shallow_bytes())),
                    HumanBytes(D(k.dominator_retained_bytes())),
                    k.has_biggest_dominator() ? ObjectName(k.biggest_dominator()) : "-"});
    }
    absl::StrAppend(&text, Indent(TableText(table), "  "),
                    MoreRows(report.kept_alive_by_size(), rows, "rows (see --json)"));
  }

  absl::StrAppend(&text, "\nShortest strong path from a GC root to an instance:\n");
  absl::StrAppend(
      &text, report.has_shortest_path() ? PathText(report.shortest_path(), "  ") : "  (none)\n");

  absl::StrAppend(&text, "\nBiggest objects by retained size:\n");
  if (report.top_objects().empty()) {
    absl::StrAppend(&text, "  (none)\n");
  } else {
    Table table({"OBJECT", "SHALLOW", "RETAINED", "GC ROOT"}, {1, 2});
    size_t rows = std::min<size_t>(kReportRows, report.top_objects_size());
    for (size_t i = 0; i < rows; ++i) {
      const v1::HeapObject& o = report.top_objects(static_cast<int>(i));
      table.AddRow({ObjectName(o), HumanBytes(D(o.shallow_bytes())),
                    HumanBytes(D(o.retained_bytes())),
                    o.gc_root_kind().empty() ? "" : o.gc_root_kind()});
    }
    absl::StrAppend(&text, Indent(TableText(table), "  "),
                    MoreRows(report.top_objects_size(), rows, "objects (see --json)"));
  }

  absl::StrAppend(&text, "\n", GrowthText(report));

  if (report.has_diff_from_previous()) {
    const v1::ExtendedDumpDiff& diff = report.diff_from_previous();
    absl::StrAppend(&text, "\nSince the previous extended dump (heapwatchctl dump-diff ",
                    report.agent(), " ", diff.from_dump(), " ", diff.to_dump(), "):\n",
                    DiffHeader(diff), DiffBody(diff, kReportDiffRows, /*owner_classes=*/false));
  } else {
    absl::StrAppend(&text, "\nNo earlier extended dump of this agent to compare with.\n");
  }
  return text;
}

std::string RenderReportList(const v1::ListReportsResponse& response) {
  if (response.dumps().empty()) {
    return absl::StrCat("no extended dumps of ", response.agent(), "\n");
  }
  Table table(
      {"DUMP ID", "STATE", "TRIGGER", "REQUESTED", "FILE", "PAUSE", "ANALYSIS", "CLASSES / ERROR"},
      {4, 5, 6});
  for (const v1::ExtendedDump& d : response.dumps()) {
    std::string detail;
    if (d.state() == v1::EXTENDED_DUMP_STATE_FAILED) {
      detail = absl::StrCat("error: ", d.error());
    } else if (d.state() == v1::EXTENDED_DUMP_STATE_DONE) {
      detail = d.report_classes().empty() ? "(no report classes)"
                                          : absl::StrJoin(d.report_classes(), ", ");
    } else {
      detail = d.suspect_classes().empty()
                   ? ""
                   : absl::StrCat("for ", absl::StrJoin(d.suspect_classes(), ", "));
    }
    table.AddRow({d.dump_id(), StateName(d.state()), TriggerName(d.trigger()),
                  TimeText(d.has_requested_time(), d.requested_time()),
                  d.file_bytes() > 0 ? HumanBytes(D(d.file_bytes())) : "-",
                  DurationText(d.has_dump_pause(), d.dump_pause()),
                  DurationText(d.has_analysis_duration(), d.analysis_duration()), detail});
  }
  return absl::StrCat(response.agent(), ": ", response.dumps_size(), " extended dumps\n",
                      TableText(table));
}

std::string RenderDump(const v1::ExtendedDump& dump) {
  std::string text = absl::StrCat("Extended dump ", dump.dump_id(), " of ", dump.agent(), ": ",
                                  StateName(dump.state()), " (", TriggerName(dump.trigger()), ")\n",
                                  DumpDetails(dump, "  "));
  if (!dump.error().empty()) absl::StrAppend(&text, "  error: ", dump.error(), "\n");
  if (!dump.suspect_classes().empty()) {
    absl::StrAppend(&text, "  suspect classes: ", absl::StrJoin(dump.suspect_classes(), ", "),
                    "\n");
  }
  if (!dump.report_classes().empty()) {
    absl::StrAppend(&text, "  reports: ", absl::StrJoin(dump.report_classes(), ", "),
                    " (heapwatchctl report ", dump.agent(), " CLASS)\n");
  }
  return text;
}

std::string RenderExtendedDumpDiff(const v1::ExtendedDumpDiff& diff, size_t top) {
  return absl::StrCat(DiffHeader(diff), DiffBody(diff, top, /*owner_classes=*/true));
}

StatusOr<v1::ExtendedDump> WaitForDump(
    const std::string& dump_id, absl::Duration timeout, absl::Duration interval, const Clock& clock,
    const std::function<void(absl::Duration)>& sleep, const ListReportsFn& list,
    const std::function<void(const v1::ExtendedDump&)>& on_change) {
  const absl::Time deadline = clock.Now() + timeout;
  bool seen = false;
  v1::ExtendedDumpState last_state = v1::EXTENDED_DUMP_STATE_UNSPECIFIED;
  while (true) {
    v1::ListReportsResponse response;
    HW_RETURN_IF_ERROR(list(&response));
    for (const v1::ExtendedDump& d : response.dumps()) {
      if (d.dump_id() != dump_id) continue;
      if (!seen || d.state() != last_state) {
        if (on_change) on_change(d);
      }
      seen = true;
      last_state = d.state();
      if (Finished(d.state())) return d;
      break;
    }
    absl::Time now = clock.Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          seen ? absl::StrFormat("extended dump %s still %s after %s", dump_id,
                                 StateName(last_state), absl::FormatDuration(timeout))
               : absl::StrFormat("extended dump %s did not appear in ListReports within %s",
                                 dump_id, absl::FormatDuration(timeout)));
    }
    sleep(std::min(interval, deadline - now));
  }
}

std::vector<Subcommand> AddReportCommands(CLI::App& app) {
  std::vector<Subcommand> commands;

  auto report_args = std::make_shared<ReportArgs>();
  CLI::App* report = app.add_subcommand(
      "report",
      "Drill-down report of a leak (its id from `leaks`) or of a suspect class, from the newest "
      "extended dump");
  report->add_option("agent", report_args->agent, "Agent id (see `heapwatchctl agents`)")
      ->required();
  report->add_option("class", report_args->class_name,
                     "Leak id (e.g. L1df5ce41a2b4) or class name (e.g. com.example.Cache$Entry)")
      ->required();
  commands.push_back(
      {report, [report_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunReport(*report_args, g, o, e);
       }});

  auto reports_args = std::make_shared<ReportsArgs>();
  CLI::App* reports =
      app.add_subcommand("reports", "Extended dumps of an agent, newest first, with their state");
  reports->add_option("agent", reports_args->agent, "Agent id")->required();
  commands.push_back(
      {reports, [reports_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunReports(*reports_args, g, o, e);
       }});

  auto dump_args = std::make_shared<DumpArgs>();
  CLI::App* dump = app.add_subcommand(
      "dump", "Request an extended dump (heap dump + analysis) of a live agent now");
  dump->add_option("agent", dump_args->agent, "Agent id")->required();
  dump->add_flag("--wait", dump_args->wait,
                 "Poll ListReports every second until the dump is done or failed");
  dump->add_option("--timeout", dump_args->timeout,
                   "With --wait: give up after this long (e.g. 90s, 10m); before the subcommand, "
                   "--timeout is each request's deadline")
      ->capture_default_str();
  commands.push_back({dump, [dump_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
                        return RunDump(*dump_args, g, o, e);
                      }});

  auto diff_args = std::make_shared<DumpDiffArgs>();
  CLI::App* diff = app.add_subcommand(
      "dump-diff", "Per-class and per-owner difference between two analysed extended dumps");
  diff->add_option("agent", diff_args->agent, "Agent id")->required();
  diff->add_option("dumps", diff_args->dumps,
                   "Older and newer dump id (see `heapwatchctl reports`); default: the last two "
                   "analysed dumps")
      ->expected(0, 2);
  diff->add_option("--top", diff_args->top,
                   "At most this many classes and owners, largest growth first; 0 = all")
      ->capture_default_str();
  commands.push_back({diff, [diff_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
                        return RunDumpDiff(*diff_args, g, o, e);
                      }});
  return commands;
}

}  // namespace heapwatch::ctl
