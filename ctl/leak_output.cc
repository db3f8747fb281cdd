#include "ctl/leak_output.h"

#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ctl/output.h"
#include "ctl/time_arg.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {
namespace {

namespace api = ::heapwatch::v1;

absl::Time TimeOf(bool has, const google::protobuf::Timestamp& ts) {
  if (!has) return absl::InfinitePast();
  auto t = proto::FromTimestamp(ts);
  return t.ok() ? *t : absl::InfinitePast();
}

// A time scale that is always present in the JSON: "0s" for every snapshot.
void SetScale(bool has, const google::protobuf::Duration& from, google::protobuf::Duration* to) {
  if (has) {
    *to = from;
  } else {
    to->Clear();  // mutable_*() already marked it present: "0s"
  }
}

double Seconds(const google::protobuf::Duration& d) {
  return static_cast<double>(d.seconds()) + static_cast<double>(d.nanos()) * 1e-9;
}

// HumanBytes that keeps a minus sign (growth can be negative; HumanBytes prints magnitudes).
std::string MaybeNegativeBytes(double v) { return v < 0 ? "-" + HumanBytes(-v) : HumanBytes(v); }

// A test's value or threshold for people: bytes human-readable, the rest with 4 significant digits.
std::string TestNumber(double v, const std::string& unit) {
  if (unit == "bytes") return MaybeNegativeBytes(v);
  if (unit == "bytes/s") return MaybeNegativeBytes(v) + "/s";
  return absl::StrFormat("%.4g", v);
}

std::vector<std::string> TestCells(const api::TrendTest& t) {
  return {t.test(), TestNumber(t.value(), t.unit()), t.op(), TestNumber(t.threshold(), t.unit()),
          t.pass() ? "PASS" : "FAIL", t.unit()};
}

// `table` as text, each line with `indent` before it and without the trailing blanks that empty
// last cells leave.
std::string TableText(const Table& table, const std::string& indent = "") {
  std::ostringstream text;
  table.Print(text);
  std::string out;
  std::istringstream in(text.str());
  for (std::string line; std::getline(in, line);) {
    line.erase(line.find_last_not_of(' ') + 1);
    out += indent + line + "\n";
  }
  return out;
}

}  // namespace

std::string TimeScaleName(absl::Duration scale) {
  if (scale <= absl::ZeroDuration()) return "every snapshot";
  return absl::FormatDuration(scale);
}

std::string TimeScaleName(const google::protobuf::Duration& scale) {
  auto d = proto::FromDuration(scale);
  return TimeScaleName(d.ok() ? *d : absl::ZeroDuration());
}

json::Suspect SuspectToJson(const api::Suspect& s) {
  json::Suspect o;
  o.set_agent(s.agent());
  o.set_class_(s.class_name());
  o.set_bytes(static_cast<double>(s.bytes()));
  o.set_instances(static_cast<double>(s.instances()));
  o.set_growth_bytes_per_second(s.growth_bytes_per_second());
  o.set_growth_instances_per_second(s.growth_instances_per_second());
  o.set_score(s.score());
  if (s.has_first_seen()) *o.mutable_first_seen() = s.first_seen();
  if (s.has_last_snapshot_time()) *o.mutable_last_snapshot_time() = s.last_snapshot_time();
  o.set_leak(s.leak());
  SetScale(s.has_time_scale(), s.time_scale(), o.mutable_time_scale());
  return o;
}

json::Leak LeakToJson(const api::Leak& l) {
  json::Leak o;
  o.set_agent(l.agent());
  o.set_leak(l.leak());
  o.set_main_class(l.main_class());
  for (const api::LeakClass& c : l.classes()) {
    o.add_classes(c.class_name());
    json::LeakClass* g = o.add_class_growth();
    g->set_class_(c.class_name());
    g->set_bytes(static_cast<double>(c.bytes()));
    g->set_growth_bytes_per_second(c.growth_bytes_per_second());
  }
  o.set_bytes(static_cast<double>(l.bytes()));
  o.set_growth_bytes_per_second(l.growth_bytes_per_second());
  o.set_score(l.score());
  if (l.has_first_seen()) *o.mutable_first_seen() = l.first_seen();
  if (!l.accumulation_point().empty()) o.set_accumulation_point(l.accumulation_point());
  if (!l.dump_id().empty()) o.set_dump_id(l.dump_id());
  SetScale(l.has_time_scale(), l.time_scale(), o.mutable_time_scale());
  if (l.has_last_snapshot_time()) *o.mutable_last_snapshot_time() = l.last_snapshot_time();
  if (!l.kind().empty()) o.set_kind(l.kind());
  if (!l.detail().empty()) o.set_detail(l.detail());
  if (l.has_heap_exhaustion())
    *o.mutable_heap_exhaustion() = HeapExhaustionToJson(l.heap_exhaustion());
  return o;
}

json::HeapExhaustion HeapExhaustionToJson(const api::HeapExhaustion& f) {
  json::HeapExhaustion o;
  o.set_estimate_seconds(Seconds(f.estimate()));
  o.set_soonest_seconds(Seconds(f.soonest()));
  if (f.has_latest()) o.set_latest_seconds(Seconds(f.latest()));
  o.set_growth_bytes_per_second(f.growth_bytes_per_second());
  o.set_growth_low_bytes_per_second(f.growth_low_bytes_per_second());
  o.set_growth_high_bytes_per_second(f.growth_high_bytes_per_second());
  o.set_live_bytes(static_cast<double>(f.live_bytes()));
  o.set_max_bytes(static_cast<double>(f.max_bytes()));
  if (f.has_computed_time()) *o.mutable_computed_time() = f.computed_time();
  o.set_points(f.points());
  return o;
}

std::string HeapFullIn(const json::HeapExhaustion& f) {
  return absl::StrCat(HumanDuration(absl::Seconds(f.estimate_seconds())), " (",
                      HumanDuration(absl::Seconds(f.soonest_seconds())), "-",
                      f.has_latest_seconds() ? HumanDuration(absl::Seconds(f.latest_seconds()))
                                             : std::string("never"),
                      ")");
}

std::string HeapForecastLine(const json::HeapExhaustion& f) {
  return absl::StrCat("heap full in ~", HumanDuration(absl::Seconds(f.estimate_seconds())),
                      " (soonest ", HumanDuration(absl::Seconds(f.soonest_seconds())), ") at ",
                      MaybeNegativeBytes(f.growth_bytes_per_second()), "/s, live set ",
                      HumanBytes(f.live_bytes()), " of ", HumanBytes(f.max_bytes()), " max");
}

void PrintLeakTable(const google::protobuf::RepeatedPtrField<json::Leak>& leaks,
                    std::ostream& out) {
  if (leaks.empty()) {
    out << "no leaks\n";
    return;
  }
  Table table({"AGENT", "LEAK", "CLASS", "BYTES", "GROWTH/S", "GROWTH/H", "SCORE", "SCALE",
               "FIRST SEEN", "ACCUMULATION POINT"},
              {3, 4, 5, 6});
  // Lines about a leak (its detail, its forecast) go under its row, outside the table: they would
  // widen the CLASS column for every row.
  std::map<size_t, std::vector<std::string>> lines_after;  // by row index
  for (const json::Leak& l : leaks) {
    const bool heap = l.has_kind() && l.kind() == "heap";
    const size_t row = table.rows();
    table.AddRow({l.agent(), l.leak(),
                  heap ? std::string("live set (classes not named yet)")
                       : absl::StrFormat("%s (%d %s)", l.main_class(), l.classes_size(),
                                         l.classes_size() == 1 ? "class" : "classes"),
                  HumanBytes(l.bytes()), SignedHumanBytes(l.growth_bytes_per_second()),
                  SignedHumanBytes(l.growth_bytes_per_second() * 3600),
                  absl::StrFormat("%.2f", l.score()), TimeScaleName(l.time_scale()),
                  ShortTime(TimeOf(l.has_first_seen(), l.first_seen())),
                  l.has_accumulation_point() ? l.accumulation_point() : "-"});
    if (l.has_detail()) lines_after[row].push_back(l.detail());
    if (l.has_heap_exhaustion()) lines_after[row].push_back(HeapForecastLine(l.heap_exhaustion()));
    for (const json::LeakClass& c : l.class_growth()) {
      table.AddRow({"", "", "  " + c.class_(), HumanBytes(c.bytes()),
                    SignedHumanBytes(c.growth_bytes_per_second()),
                    SignedHumanBytes(c.growth_bytes_per_second() * 3600), "", "", "", ""});
    }
  }
  const std::string text = TableText(table);
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);
  out << header << "\n";
  // Where the class rows' names start: two blanks into the CLASS column.
  const std::string indent(header.find("CLASS") + 2, ' ');
  size_t row = 0;
  for (std::string line; std::getline(in, line); ++row) {
    out << line << "\n";
    if (auto it = lines_after.find(row); it != lines_after.end()) {
      for (const std::string& extra : it->second) out << indent << extra << "\n";
    }
  }
}

std::string RenderExplanation(const api::ExplainSuspectResponse& e) {
  std::string out = absl::StrCat(e.class_name(), " in ", e.agent(), ": ");
  if (!e.known()) {
    // Every scale would only repeat that it has no history.
    return absl::StrCat(out,
                        "no history for this class (it was in no histogram the detector saw)\n");
  }
  if (e.suspect()) {
    absl::StrAppend(&out, "a leak suspect",
                    e.leak().empty() ? "" : absl::StrCat(" (leak ", e.leak(), ")"), "\n");
  } else {
    absl::StrAppend(&out, "not a leak suspect\n");
  }
  if (e.has_cycle_veto()) {
    const api::TrendTest& v = e.cycle_veto();
    absl::StrAppend(&out, "Cycle veto (gates becoming a suspect on every scale): ",
                    TestNumber(v.value(), v.unit()), " ", v.op(), " ",
                    TestNumber(v.threshold(), v.unit()), ": ", v.pass() ? "PASS" : "FAIL",
                    v.unit().empty() ? "" : absl::StrCat(" (", v.unit(), ")"), "\n");
  }
  for (const api::TrendScale& s : e.scales()) {
    const bool every = !s.has_time_scale() || TimeScaleName(s.time_scale()) == "every snapshot";
    absl::StrAppend(&out, "Scale ", TimeScaleName(s.time_scale()), ": ");
    if (!s.not_evaluated().empty()) {
      absl::StrAppend(&out, "not evaluated (", s.not_evaluated(), ")");
    } else {
      absl::StrAppend(&out, s.suspect() ? "suspect" : "not a suspect");
    }
    absl::StrAppend(&out, absl::StrFormat(", window %d/%d %s\n", s.window_size(), s.min_window(),
                                          every ? "snapshots" : "buckets"));
    if (s.tests().empty()) continue;
    Table table({"TEST", "VALUE", "OP", "THRESHOLD", "RESULT", "UNIT"}, {1, 3});
    for (const api::TrendTest& t : s.tests()) table.AddRow(TestCells(t));
    absl::StrAppend(&out, TableText(table, "  "));
  }
  return out;
}

}  // namespace heapwatch::ctl
