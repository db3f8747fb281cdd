#include "ctl/report_render.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/number_text.h"
#include "ctl/output.h"
#include "ctl/rpc.h"  // ClassChangeName
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

std::string StateNameImpl(v1::ExtendedDumpState state) {
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
// "static SESSIONS -> java.util.ArrayList@0x2000 (5.3 MiB)"; a shortened path has the line
// "... 1,234 steps ..." where its steps were left out.
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
    if (path.elided_steps() > 0 && i > 0 && static_cast<uint32_t>(i) == path.elided_after()) {
      absl::StrAppend(&text, indent, "... ", GroupedDigits(path.elided_steps()), " steps ...\n");
    }
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

// Known-leak pattern matches (docs/leak-patterns.md), each: "Known leak pattern: <name>
// [<id>]", the summary, the culprits, the path through the holding field, and the explanation with
// the usual fix. Empty when there are none.
std::string LeakPatternsText(
    const google::protobuf::RepeatedPtrField<v1::LeakPatternMatch>& matches) {
  std::string text;
  for (const v1::LeakPatternMatch& m : matches) {
    absl::StrAppend(&text, "Known leak pattern: ", m.pattern_name(), " [", m.pattern_id(), "]\n",
                    "  ", m.summary(), "\n");
    for (const std::string& culprit : m.culprits()) absl::StrAppend(&text, "  - ", culprit, "\n");
    if (m.has_path() && m.path().found()) {
      absl::StrAppend(&text, "  path:\n", PathText(m.path(), "    "));
    }
    absl::StrAppend(&text, "  Why and the usual fix: ", m.explanation(), "\n");
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
        DurationText(dump.has_dump_pause(), dump.dump_pause()), " (whole dump operation ",
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
      table.AddRow(
          {c.class_name(), ClassChangeName(c.change()), std::to_string(c.after_instances()),
           Signed(c.delta_instances()), HumanBytes(D(c.after_shallow_bytes())),
           SignedHumanBytes(D(c.delta_shallow_bytes())), HumanBytes(D(c.after_retained_bytes())),
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

// "<indent>dynamic size 5.3 MiB (5557452 B), 1000 objects reachable from it\n" when the object has
// an exact dynamic size, else "".
std::string DynamicLine(const v1::HeapObject& o, const std::string& indent) {
  if (o.dynamic_objects() == 0) return "";
  return absl::StrCat(indent, "dynamic size ", BytesExact(o.dynamic_bytes()), ", ",
                      o.dynamic_objects(), " objects reachable from it\n");
}

// A table of class rows (histogram or dominator tree by class), indented by two spaces.
std::string ClassTable(const google::protobuf::RepeatedPtrField<v1::ClassRetained>& rows,
                       const std::string& count_header) {
  if (rows.empty()) return "  (none)\n";
  Table table({"CLASS", count_header, "SHALLOW", "RETAINED"}, {1, 2, 3});
  for (const v1::ClassRetained& r : rows) {
    table.AddRow({r.class_name(), std::to_string(r.instances()), HumanBytes(D(r.shallow_bytes())),
                  HumanBytes(D(r.retained_bytes()))});
  }
  return Indent(TableText(table), "  ");
}

// "~12.0 MiB": an estimate; the exact value when the estimate was exact.
std::string Estimate(uint64_t bytes, bool exact) {
  return absl::StrCat(exact ? "" : "~", HumanBytes(D(bytes)));
}

// A signed size: "+12.0 MiB", "-3.0 KiB".
std::string Shared(int64_t bytes) { return SignedHumanBytes(D(bytes)); }

std::string DynamicObjectTable(const google::protobuf::RepeatedPtrField<v1::DynamicObject>& rows) {
  if (rows.empty()) return "  (none)\n";
  Table table({"OBJECT", "SHALLOW", "RETAINED", "DYNAMIC", "REACHES", "SHARED", "ESTIMATE", "SCC"},
              {1, 2, 3, 4, 5, 6, 7});
  for (const v1::DynamicObject& r : rows) {
    const v1::HeapObject& o = r.object();
    table.AddRow({ObjectName(o), HumanBytes(D(o.shallow_bytes())),
                  HumanBytes(D(o.retained_bytes())), HumanBytes(D(o.dynamic_bytes())),
                  absl::StrCat(o.dynamic_objects(), " objects"), Shared(r.shared_bytes()),
                  Estimate(r.estimated_dynamic_bytes(), r.estimate_exact()),
                  std::to_string(r.component_objects())});
  }
  return Indent(TableText(table), "  ");
}

std::string DynamicClassTable(const google::protobuf::RepeatedPtrField<v1::DynamicClass>& rows) {
  if (rows.empty()) return "  (none)\n";
  Table table({"CLASS", "INSTANCES", "RETAINED", "DYNAMIC", "REACHES", "SHARED", "ESTIMATE"},
              {1, 2, 3, 4, 5, 6});
  for (const v1::DynamicClass& c : rows) {
    table.AddRow({c.class_name(), std::to_string(c.instances()), HumanBytes(D(c.retained_bytes())),
                  HumanBytes(D(c.dynamic_bytes())), absl::StrCat(c.dynamic_objects(), " objects"),
                  Shared(c.shared_bytes()),
                  absl::StrCat("~", HumanBytes(D(c.estimated_max_bytes())), "..",
                               HumanBytes(D(c.estimated_sum_bytes())))});
  }
  return Indent(TableText(table), "  ");
}

// "< 1 KiB", "1 KiB - 10 KiB", ">= 100 MiB".
std::string BucketName(const v1::SharedSizeBucket& b) {
  if (b.from_bytes() == 0) return absl::StrCat("< ", HumanBytes(D(b.to_bytes())));
  if (b.to_bytes() == 0) return absl::StrCat(">= ", HumanBytes(D(b.from_bytes())));
  return absl::StrCat(HumanBytes(D(b.from_bytes())), " - ", HumanBytes(D(b.to_bytes())));
}

// The dynamic-size view (`analyze --by dynamic`).
std::string DynamicRankingText(const v1::DynamicRanking& r) {
  std::string text = absl::StrFormat(
      "Dynamic sizes (%s): every reachable object's estimated by priority sampling (k = %d; ~ "
      "marks an estimate, %d of %d objects were exact), exact figures for the rows listed. Shared "
      "= dynamic - retained.\n",
      r.all_references() ? "all references, weak and class ones included"
                         : "strong references; not weak/soft referents, not an object's class",
      r.sketch_size(), r.exact_estimates(), r.objects());
  absl::StrAppend(&text,
                  "\nBiggest objects by dynamic size (one per strongly connected component; SCC = "
                  "its objects, which all have this size):\n",
                  DynamicObjectTable(r.objects_by_dynamic()));
  absl::StrAppend(&text, "\nBiggest objects by shared size:\n",
                  DynamicObjectTable(r.objects_by_shared()));
  absl::StrAppend(&text,
                  "\nBiggest classes by dynamic size (instances together; ESTIMATE = the largest "
                  "instance's .. the sum over the instances):\n",
                  DynamicClassTable(r.classes_by_dynamic()));
  absl::StrAppend(&text, "\nBiggest classes by shared size:\n",
                  DynamicClassTable(r.classes_by_shared()));
  Table histogram({"SHARED SIZE (ESTIMATED)", "OBJECTS"}, {1});
  for (const v1::SharedSizeBucket& b : r.shared_histogram())
    histogram.AddRow({BucketName(b), std::to_string(b.objects())});
  absl::StrAppend(&text, "\nObjects by estimated shared size (the thesis's Tab. 5.3):\n",
                  Indent(TableText(histogram), "  "));
  if (r.below_retained() > 0) {
    absl::StrAppend(&text, "  (", r.below_retained(),
                    " objects with an estimated dynamic size below their retained size, counted in "
                    "the first row: estimate error, or a retained set with soft/weak referents)\n");
  }
  return text;
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

// The class loaders of a dump (heapwatch.v1.ClassLoaderReport): a summary line, one line per
// group of class names that several loaders define ("class loaders: 7 instances of
// ParallelWebappClassLoader define com.example.App and 311 more classes"), and the loaders
// defining the most classes.
std::string ClassLoadersText(const v1::ClassLoaderReport& r, size_t max_loaders) {
  std::string text = absl::StrFormat(
      "Class loaders: %d loader objects define classes (%d boot classes); %d class names are "
      "defined by more than one loader\n",
      r.loader_objects(), r.boot_classes(), r.duplicated_class_names());
  for (const v1::DuplicateClassGroup& g : r.duplicates()) {
    std::string names = absl::StrJoin(g.examples(), ", ");
    const int more = static_cast<int>(g.class_names()) - g.examples_size();
    if (more > 0) absl::StrAppend(&names, absl::StrFormat(" and %d more", more));
    absl::StrAppend(&text, absl::StrFormat("  class loaders: %d instances of %s define %s\n",
                                           g.loaders(), g.loader_class(), names));
  }
  if (r.loaders_size() > 0) {
    Table table({"LOADER", "LOADER CLASS", "CLASSES", "INSTANCES"}, {2, 3});
    for (int i = 0; i < r.loaders_size() && static_cast<size_t>(i) < max_loaders; ++i) {
      const v1::ClassLoaderRow& l = r.loaders(i);
      table.AddRow({absl::StrFormat("0x%x", l.loader_id()), l.loader_class(),
                    std::to_string(l.classes()), std::to_string(l.instances())});
    }
    std::ostringstream out;
    table.Print(out);
    absl::StrAppend(&text, out.str());
  }
  return text;
}

}  // namespace

std::string DumpStateName(v1::ExtendedDumpState state) { return StateNameImpl(state); }

std::string ObjectName(const v1::HeapObject& o) {
  std::string name =
      absl::StrFormat("%s@0x%x", o.class_name().empty() ? "?" : o.class_name(), o.object_id());
  // A live thread's name (already masked and sanitised by the analysis).
  if (!o.thread_name().empty()) absl::StrAppend(&name, " \"", o.thread_name(), "\"");
  return name;
}

std::string RenderDrillDown(const v1::DrillDownReport& report, size_t max_rows) {
  auto limit = [max_rows](int size) {
    return max_rows == 0 ? static_cast<size_t>(size) : std::min<size_t>(max_rows, size);
  };
  std::string text = LeakPatternsText(report.leak_patterns());
  if (!text.empty()) absl::StrAppend(&text, "\n");
  absl::StrAppend(&text, "Instances:              ", report.instances(), "\n");
  absl::StrAppend(&text, "Shallow size:           ", BytesExact(report.shallow_bytes()), "\n");
  absl::StrAppend(&text, "Retained size:          ", BytesExact(report.retained_bytes()),
                  " (precise, simulated GC)\n");
  absl::StrAppend(&text, "Minimum retained size:  ", BytesExact(report.minimum_retained_bytes()),
                  " (dominator tree)\n");
  if (report.dynamic_objects() > 0) {
    absl::StrAppend(&text, "Dynamic size:           ", BytesExact(report.dynamic_bytes()), ", ",
                    report.dynamic_objects(), " objects (everything the instances reach)\n");
  }

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
        DynamicLine(p.object(), "  "), "  path from a GC root:\n", PathText(p.path(), "    "));
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
    const size_t rows = limit(report.kept_alive_by_size());
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
  return text;
}

std::string RenderTopObjects(const google::protobuf::RepeatedPtrField<v1::HeapObject>& objects,
                             size_t max_rows) {
  std::string text = "Biggest objects by retained size:\n";
  if (objects.empty()) return absl::StrCat(text, "  (none)\n");
  const size_t rows = max_rows == 0 ? objects.size() : std::min<size_t>(max_rows, objects.size());
  // The DYNAMIC column (exact dynamic size, objects reachable) when the report has it.
  const bool dynamic = std::any_of(objects.begin(), objects.end(),
                                   [](const v1::HeapObject& o) { return o.dynamic_objects() > 0; });
  Table table = dynamic ? Table({"OBJECT", "SHALLOW", "RETAINED", "DYNAMIC", "REACHES", "GC ROOT"},
                                {1, 2, 3, 4})
                        : Table({"OBJECT", "SHALLOW", "RETAINED", "GC ROOT"}, {1, 2});
  for (size_t i = 0; i < rows; ++i) {
    const v1::HeapObject& o = objects[static_cast<int>(i)];
    std::vector<std::string> row = {ObjectName(o), HumanBytes(D(o.shallow_bytes())),
                                    HumanBytes(D(o.retained_bytes()))};
    if (dynamic) {
      const bool known = o.dynamic_objects() > 0;
      row.push_back(known ? HumanBytes(D(o.dynamic_bytes())) : "-");
      row.push_back(known ? absl::StrCat(o.dynamic_objects(), " objects") : "-");
    }
    row.push_back(o.gc_root_kind());
    table.AddRow(std::move(row));
  }
  absl::StrAppend(&text, Indent(TableText(table), "  "),
                  MoreRows(objects.size(), rows, "objects (see --json)"));
  return text;
}

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
    if (!l.detail().empty()) absl::StrAppend(&text, l.detail(), "\n");
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
                    ", ", StateNameImpl(dump.state()), ")\n", DumpDetails(dump, "  "));
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
  if (report.has_class_loaders()) {
    absl::StrAppend(&text, "\n", ClassLoadersText(report.class_loaders(), kReportRows));
  }
  // A class loader leak's report (the series daemon/class_loading_watch.h names "<loaded
  // classes>") has no instances of its own: its dump's class loaders above and the pinned loaders'
  // patterns are the whole drill-down.
  if (report.class_name() == "<loaded classes>") {
    const std::string patterns = LeakPatternsText(report.leak_patterns());
    absl::StrAppend(&text, "\n",
                    patterns.empty()
                        ? "No class loader pinned by a thread or a JVM-wide registry in "
                          "this dump.\n"
                        : patterns);
    return text;
  }
  absl::StrAppend(&text, "\n", RenderDrillDown(report, kReportRows), "\n",
                  RenderTopObjects(report.top_objects(), kReportRows));

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

std::string RenderDumpReport(const v1::DumpReport& report) {
  std::string text;
  const v1::ExtendedDumpTotals& t = report.totals();
  absl::StrAppend(&text, "Dump: ", report.dump_path(), ", ", BytesExact(report.dump_file_bytes()),
                  ", ", report.dump_format(), ", sizes: ", report.size_model(), "\n");
  absl::StrAppend(&text,
                  absl::StrFormat("Heap: %d objects, %s; %d classes; %d GC roots\n", t.objects(),
                                  BytesExact(t.shallow_bytes()), t.classes(), t.gc_roots()));
  absl::StrAppend(
      &text, absl::StrFormat("Reachable: %d objects, %s; unreachable: %d objects, %s\n",
                             t.reachable_objects(), BytesExact(t.reachable_shallow_bytes()),
                             t.unreachable_objects(), BytesExact(t.unreachable_shallow_bytes())));
  if (!report.leak_patterns().empty()) {
    absl::StrAppend(&text, "\n", LeakPatternsText(report.leak_patterns()));
  }
  if (report.has_by_dynamic()) {
    absl::StrAppend(&text, "\n", DynamicRankingText(report.by_dynamic()));
  } else {
    absl::StrAppend(&text,
                    "\nClass histogram (reachable objects; retained = minimum retained size of "
                    "the instances):\n",
                    ClassTable(report.histogram(), "INSTANCES"));
    absl::StrAppend(&text, "\n", RenderTopObjects(report.top_objects(), 0));
    absl::StrAppend(&text, "\nDominator tree, first level grouped by class:\n",
                    ClassTable(report.top_dominators_by_class(), "OBJECTS"));
  }

  if (report.has_class_loaders()) {
    absl::StrAppend(&text, "\n", ClassLoadersText(report.class_loaders(), 10));
  }

  for (const v1::DrillDownReport& s : report.suspects()) {
    absl::StrAppend(&text, "\nSuspect class ", s.class_name(), ":\n", RenderDrillDown(s, 0));
  }

  const v1::AnalysisTimings& tm = report.timings();
  auto seconds = [](const google::protobuf::Duration& d) {
    auto duration = proto::FromDuration(d);
    return duration.ok() ? absl::ToDoubleSeconds(*duration) : 0.0;
  };
  absl::StrAppend(
      &text,
      absl::StrFormat("\nTimes: parse %.2f s, dominators %.2f s, retained sizes %.2f s, "
                      "aggregations %.2f s, GC-root paths %.2f s, dynamic sizes %.2f s, total "
                      "%.2f s; peak RSS %s\n",
                      seconds(tm.parse_duration()), seconds(tm.dominators_duration()),
                      seconds(tm.retained_duration()), seconds(tm.aggregation_duration()),
                      seconds(tm.gc_root_paths_duration()), seconds(tm.dynamic_duration()),
                      seconds(tm.total_duration()),
                      tm.peak_rss_bytes() > 0 ? HumanBytes(D(tm.peak_rss_bytes())) : "-"));
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
    table.AddRow({d.dump_id(), StateNameImpl(d.state()), TriggerName(d.trigger()),
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
                                  StateNameImpl(dump.state()), " (", TriggerName(dump.trigger()),
                                  ")\n", DumpDetails(dump, "  "));
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

}  // namespace heapwatch::ctl
