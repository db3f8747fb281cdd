// Static checks of the shipped monitoring artifacts against the daemon's metric list:
//  - dashboards/grafana/heapwatch.json is well-formed Grafana JSON (parsed as a protobuf Struct),
//    has the expected panels, variables and targets, and every heapwatch_* metric it names is
//    exported by heapwatchd;
//  - dashboards/heapwatch-alerts.yml (parsed with yaml-cpp) has the expected alerts with severity,
//    summary, description and hold period; every heapwatch_* metric in their expressions and
//    annotation templates is exported; each alert is documented in docs/alerts.md and has firing
//    and non-firing promtool cases.
// The authoritative metric list is daemon/metric_names.h (kExportedMetrics). PromQL syntax of the
// dashboard's expressions is checked by promtool (dashboard_promql_test.sh), their results by a
// real Prometheus (prometheus_e2e.sh).
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "daemon/metric_names.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace heapwatch {
namespace {

using ::google::protobuf::ListValue;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using ::testing::IsEmpty;

const std::string kSourceDir = HEAPWATCH_SOURCE_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Histogram families: Prometheus exposes them as <name>_bucket, <name>_sum and <name>_count. Only
// these may be queried with those suffixes (the daemon's header lists family names without their
// types).
const std::set<std::string>& HistogramFamilies() {
  static const auto* families =
      new std::set<std::string>{std::string(daemon::metric_names::kCollectionDuration),
                                std::string(daemon::metric_names::kExtendedDumpPause),
                                std::string(daemon::metric_names::kExtendedDumpAnalysis)};
  return *families;
}

// Every heapwatch_* metric name mentioned in `text` (PromQL, a Go template, a description).
std::set<std::string> MetricNamesIn(const std::string& text) {
  static const std::regex kName(R"(\bheapwatch_[a-z0-9_]*[a-z0-9]\b)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kName);
       it != std::sregex_iterator(); ++it) {
    names.insert(it->str());
  }
  return names;
}

// True when `name` is a series heapwatchd exposes: a family of kExportedMetrics, or a histogram
// family's _bucket/_sum/_count series.
bool IsExported(const std::string& name) {
  for (std::string_view exported : daemon::kExportedMetrics) {
    if (name == exported) return true;
  }
  for (const std::string& family : HistogramFamilies()) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (name == family + suffix) return true;
    }
  }
  return false;
}

// The names in `text` the daemon does not export.
std::set<std::string> UnknownMetrics(const std::string& text) {
  std::set<std::string> unknown;
  for (const std::string& name : MetricNamesIn(text)) {
    if (!IsExported(name)) unknown.insert(name);
  }
  return unknown;
}

// ---------------------------------------------------------------------------------------------------
// The checker itself: it must find names and must reject names the daemon does not export.

TEST(MetricNamesTest, FindsNamesInPromQL) {
  EXPECT_EQ(
      MetricNamesIn(R"(sum by (agent) (rate(heapwatch_collections_total{result!="ok"}[5m])))"),
      std::set<std::string>{"heapwatch_collections_total"});
  EXPECT_EQ(
      MetricNamesIn("heapwatch_class_bytes and on (agent, class) heapwatch_leak_suspect == 1"),
      (std::set<std::string>{"heapwatch_class_bytes", "heapwatch_leak_suspect"}));
  EXPECT_EQ(MetricNamesIn("label_values(heapwatch_agent_info, agent)"),
            std::set<std::string>{"heapwatch_agent_info"});
  // Binary names, CLI names and alert names are not metric names.
  EXPECT_THAT(MetricNamesIn("heapwatchd heapwatchctl HeapwatchLeakSuspect heapwatch:rule"),
              IsEmpty());
}

TEST(MetricNamesTest, AcceptsExportedNamesAndHistogramSeries) {
  EXPECT_TRUE(IsExported("heapwatch_leak_suspect"));
  EXPECT_TRUE(IsExported("heapwatch_collection_duration_seconds_bucket"));
  EXPECT_TRUE(IsExported("heapwatch_collection_duration_seconds_sum"));
  EXPECT_TRUE(IsExported("heapwatch_collection_duration_seconds_count"));
}

TEST(MetricNamesTest, RejectsUnknownNamesAndSuffixesOfNonHistograms) {
  EXPECT_EQ(UnknownMetrics("rate(heapwatch_bogus_total[5m]) + heapwatch_class_bytes"),
            std::set<std::string>{"heapwatch_bogus_total"});
  EXPECT_EQ(UnknownMetrics("heapwatch_store_size_bytes_count"),
            std::set<std::string>{"heapwatch_store_size_bytes_count"});
  EXPECT_EQ(UnknownMetrics("heapwatch_leak_suspects"),
            std::set<std::string>{"heapwatch_leak_suspects"});
}

TEST(MetricNamesTest, HistogramFamiliesAreExported) {
  for (const std::string& family : HistogramFamilies()) EXPECT_TRUE(IsExported(family)) << family;
}

// ---------------------------------------------------------------------------------------------------
// Grafana dashboard.

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string json = ReadFile(kSourceDir + "/dashboards/grafana/heapwatch.json");
    ASSERT_FALSE(json.empty());
    const auto status = google::protobuf::util::JsonStringToMessage(json, &dashboard_);
    ASSERT_TRUE(status.ok()) << "dashboards/grafana/heapwatch.json is not valid JSON: " << status;
    ASSERT_TRUE(dashboard_.fields().contains("panels"));
    for (const Value& panel : dashboard_.fields().at("panels").list_value().values()) {
      ASSERT_EQ(panel.kind_case(), Value::kStructValue);
      panels_.push_back(&panel.struct_value());
    }
  }

  static std::string Str(const Struct& s, const std::string& key) {
    auto it = s.fields().find(key);
    return it == s.fields().end() ? "" : it->second.string_value();
  }
  static const Struct* Obj(const Struct& s, const std::string& key) {
    auto it = s.fields().find(key);
    if (it == s.fields().end() || it->second.kind_case() != Value::kStructValue) return nullptr;
    return &it->second.struct_value();
  }
  static std::vector<const Struct*> List(const Struct& s, const std::string& key) {
    std::vector<const Struct*> out;
    auto it = s.fields().find(key);
    if (it == s.fields().end()) return out;
    for (const Value& v : it->second.list_value().values()) {
      if (v.kind_case() == Value::kStructValue) out.push_back(&v.struct_value());
    }
    return out;
  }
  const Struct* PanelTitled(const std::string& title) const {
    for (const Struct* p : panels_) {
      if (Str(*p, "title") == title) return p;
    }
    return nullptr;
  }
  // All PromQL expressions of the panel's targets, joined.
  static std::string Exprs(const Struct& panel) {
    std::string all;
    for (const Struct* t : List(panel, "targets")) all += Str(*t, "expr") + "\n";
    return all;
  }
  // Every string value in the dashboard (iterative walk over the JSON tree).
  std::vector<std::string> AllStrings() const {
    std::vector<std::string> out;
    std::vector<const Value*> stack;
    Value root;
    *root.mutable_struct_value() = dashboard_;
    stack.push_back(&root);
    while (!stack.empty()) {
      const Value* v = stack.back();
      stack.pop_back();
      switch (v->kind_case()) {
        case Value::kStringValue:
          out.push_back(v->string_value());
          break;
        case Value::kStructValue:
          for (const auto& [key, child] : v->struct_value().fields()) stack.push_back(&child);
          break;
        case Value::kListValue:
          for (const Value& child : v->list_value().values()) stack.push_back(&child);
          break;
        default:
          break;
      }
    }
    return out;
  }

  Struct dashboard_;
  std::vector<const Struct*> panels_;
};

TEST_F(DashboardTest, IsAGrafanaDashboard) {
  EXPECT_EQ(Str(dashboard_, "uid"), "heapwatch");
  EXPECT_FALSE(Str(dashboard_, "title").empty());
  EXPECT_GE(dashboard_.fields().at("schemaVersion").number_value(), 30);
  ASSERT_NE(Obj(dashboard_, "time"), nullptr);
  ASSERT_NE(Obj(dashboard_, "templating"), nullptr);
  EXPECT_GE(panels_.size(), 15u);
}

TEST_F(DashboardTest, PanelsHaveUniqueIdsAndTitlesAndFitTheGrid) {
  std::set<double> ids;
  std::set<std::string> titles;
  for (const Struct* p : panels_) {
    const std::string title = Str(*p, "title");
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(ids.insert(p->fields().at("id").number_value()).second)
        << "duplicate id: " << title;
    EXPECT_TRUE(titles.insert(title).second) << "duplicate title: " << title;
    EXPECT_FALSE(Str(*p, "type").empty()) << title;
    const Struct* grid = Obj(*p, "gridPos");
    ASSERT_NE(grid, nullptr) << title;
    const double x = grid->fields().at("x").number_value();
    const double w = grid->fields().at("w").number_value();
    EXPECT_GT(grid->fields().at("h").number_value(), 0) << title;
    EXPECT_GT(w, 0) << title;
    EXPECT_LE(x + w, 24) << title << " is wider than Grafana's 24-column grid";
  }
}

TEST_F(DashboardTest, EveryQueryPanelHasPrometheusTargets) {
  for (const Struct* p : panels_) {
    const std::string title = Str(*p, "title");
    if (Str(*p, "type") == "row") continue;
    const auto targets = List(*p, "targets");
    ASSERT_FALSE(targets.empty()) << title;
    std::set<std::string> ref_ids;
    for (const Struct* t : targets) {
      EXPECT_FALSE(Str(*t, "expr").empty()) << title;
      EXPECT_TRUE(ref_ids.insert(Str(*t, "refId")).second) << "duplicate refId in " << title;
      const Struct* ds = Obj(*t, "datasource");
      ASSERT_NE(ds, nullptr) << title;
      EXPECT_EQ(Str(*ds, "type"), "prometheus") << title;
      EXPECT_EQ(Str(*ds, "uid"), "${datasource}") << title;
    }
  }
}

TEST_F(DashboardTest, HasTheVariables) {
  std::map<std::string, const Struct*> vars;
  for (const Struct* v : List(*Obj(dashboard_, "templating"), "list")) vars[Str(*v, "name")] = v;
  ASSERT_TRUE(vars.contains("datasource"));
  EXPECT_EQ(Str(*vars["datasource"], "type"), "datasource");
  EXPECT_EQ(Str(*vars["datasource"], "query"), "prometheus");
  ASSERT_TRUE(vars.contains("agent"));
  EXPECT_EQ(Str(*vars["agent"], "type"), "query");
  EXPECT_THAT(Str(*vars["agent"], "definition"),
              ::testing::MatchesRegex(R"(label_values\(heapwatch_agent_info.*, agent\))"));
  ASSERT_TRUE(vars.contains("instance"));
  ASSERT_TRUE(vars.contains("top"));

  // Every $variable a query uses is defined (or is one of Grafana's built-ins).
  static const std::regex kVar(R"(\$\{?([A-Za-z_][A-Za-z0-9_]*))");
  for (const Struct* p : panels_) {
    const std::string exprs = Exprs(*p) + Str(*p, "title") + Str(*p, "repeat");
    for (auto it = std::sregex_iterator(exprs.begin(), exprs.end(), kVar);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1];
      if (name.starts_with("__")) continue;  // $__rate_interval, $__interval, $__range
      EXPECT_TRUE(vars.contains(name)) << Str(*p, "title") << " uses undefined $" << name;
    }
  }
}

// The panels the dashboard exists for, with the metric each must query.
TEST_F(DashboardTest, HasTheExpectedPanels) {
  struct Expected {
    std::string title, type, must_contain;
  };
  const std::vector<Expected> expected = {
      {"Top classes by bytes ($agent)", "timeseries", "heapwatch_class_bytes"},
      {"Top classes by instances ($agent)", "timeseries", "heapwatch_class_instances"},
      {"Leaks", "timeseries", "heapwatch_leak_growth_bytes_per_second"},
      {"Leak suspects", "table", "heapwatch_leak_suspect_score"},
      {"Suspect growth rates", "timeseries", "heapwatch_class_growth_bytes_per_second"},
      {"Suspect bytes over time", "timeseries", "heapwatch_leak_suspect"},
      {"Collections by result", "timeseries", "sum by (result) (rate(heapwatch_collections_total"},
      {"Failed collections per agent", "timeseries", "result!=\"ok\""},
      {"Collection duration", "timeseries", "heapwatch_collection_duration_seconds_bucket"},
      {"Agents up", "timeseries", "heapwatch_agent_up"},
      {"Agents", "table", "heapwatch_agent_info"},
      {"Store size", "timeseries", "heapwatch_store_size_bytes"},
      {"Suspects", "stat", "heapwatch_leak_suspect"},
  };
  for (const Expected& e : expected) {
    const Struct* p = PanelTitled(e.title);
    ASSERT_NE(p, nullptr) << "missing panel " << e.title;
    EXPECT_EQ(Str(*p, "type"), e.type) << e.title;
    EXPECT_THAT(Exprs(*p), ::testing::HasSubstr(e.must_contain)) << e.title;
  }
  // Top classes are shown per agent: the panels repeat over $agent and take the top N by bytes.
  for (const char* title : {"Top classes by bytes ($agent)", "Top classes by instances ($agent)"}) {
    EXPECT_EQ(Str(*PanelTitled(title), "repeat"), "agent") << title;
    EXPECT_THAT(Exprs(*PanelTitled(title)), ::testing::HasSubstr("topk($top,")) << title;
  }
  // The suspects table shows score, growth, bytes and instances of each suspect.
  const std::string suspects = Exprs(*PanelTitled("Leak suspects"));
  for (const char* metric :
       {"heapwatch_leak_suspect_score", "heapwatch_class_growth_bytes_per_second",
        "heapwatch_class_bytes", "heapwatch_class_instances"}) {
    EXPECT_THAT(suspects, ::testing::HasSubstr(metric));
  }
  const std::string duration = Exprs(*PanelTitled("Collection duration"));
  for (const char* q :
       {"histogram_quantile(0.5,", "histogram_quantile(0.9,", "histogram_quantile(0.99,"}) {
    EXPECT_THAT(duration, ::testing::HasSubstr(q));
  }
}

TEST_F(DashboardTest, EveryMetricItNamesIsExportedByTheDaemon) {
  std::set<std::string> seen;
  size_t exprs = 0;
  for (const std::string& s : AllStrings()) {
    const auto names = MetricNamesIn(s);
    if (!names.empty()) ++exprs;
    seen.insert(names.begin(), names.end());
    EXPECT_THAT(UnknownMetrics(s), IsEmpty()) << "in: " << s;
  }
  // Guard against a vacuous pass (e.g. the walk finding no strings).
  EXPECT_GE(exprs, 25u);
  EXPECT_GE(seen.size(), 12u);
}

// ---------------------------------------------------------------------------------------------------
// Alert rules.

class AlertRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const YAML::Node root = YAML::LoadFile(kSourceDir + "/dashboards/heapwatch-alerts.yml");
    ASSERT_TRUE(root["groups"].IsSequence());
    for (const YAML::Node& group : root["groups"]) {
      for (const YAML::Node& rule : group["rules"]) rules_.push_back(rule);
    }
    ASSERT_FALSE(rules_.empty());
  }
  std::map<std::string, YAML::Node> ByName() const {
    std::map<std::string, YAML::Node> by_name;
    for (const YAML::Node& r : rules_) by_name[r["alert"].as<std::string>("")] = r;
    return by_name;
  }
  std::vector<YAML::Node> rules_;
};

TEST_F(AlertRulesTest, EveryRuleIsACompleteAlert) {
  static const std::regex kDuration(R"([0-9]+[smh])");
  std::set<std::string> names;
  for (const YAML::Node& r : rules_) {
    const std::string name = r["alert"].as<std::string>("");
    ASSERT_TRUE(name.starts_with("Heapwatch")) << "not an alerting rule: " << YAML::Dump(r);
    EXPECT_TRUE(names.insert(name).second) << "duplicate alert " << name;
    EXPECT_FALSE(r["expr"].as<std::string>("").empty()) << name;
    EXPECT_TRUE(std::regex_match(r["for"].as<std::string>(""), kDuration))
        << name << ": every alert has a hold period in s/m/h (the e2e test shortens it)";
    const std::string severity = r["labels"]["severity"].as<std::string>("");
    EXPECT_TRUE(severity == "warning" || severity == "critical") << name;
    EXPECT_FALSE(r["annotations"]["summary"].as<std::string>("").empty()) << name;
    EXPECT_FALSE(r["annotations"]["description"].as<std::string>("").empty()) << name;
  }
}

TEST_F(AlertRulesTest, HasTheRequiredAlerts) {
  auto rules = ByName();
  // One alert per leak (a group of suspect classes), not per class.
  ASSERT_TRUE(rules.contains("HeapwatchLeak"));
  EXPECT_THAT(rules["HeapwatchLeak"]["expr"].as<std::string>(),
              ::testing::HasSubstr("heapwatch_leak_growth_bytes_per_second"));
  EXPECT_FALSE(rules.contains("HeapwatchLeakSuspect")) << "the per-class alert is replaced";
  ASSERT_TRUE(rules.contains("HeapwatchAgentDown"));
  EXPECT_THAT(rules["HeapwatchAgentDown"]["expr"].as<std::string>(),
              ::testing::HasSubstr("heapwatch_agent_up == 0"));
  ASSERT_TRUE(rules.contains("HeapwatchCollectionsFailing"));
  EXPECT_THAT(rules["HeapwatchCollectionsFailing"]["expr"].as<std::string>(),
              ::testing::HasSubstr("heapwatch_collections_total{result!=\"ok\"}"));
}

TEST_F(AlertRulesTest, EveryMetricInExpressionsAndTemplatesIsExported) {
  std::set<std::string> seen;
  for (const YAML::Node& r : rules_) {
    const std::string name = r["alert"].as<std::string>("");
    for (const std::string& text :
         {r["expr"].as<std::string>(""), r["annotations"]["summary"].as<std::string>(""),
          r["annotations"]["description"].as<std::string>("")}) {
      EXPECT_THAT(UnknownMetrics(text), IsEmpty()) << name << ": " << text;
      const auto names = MetricNamesIn(text);
      seen.insert(names.begin(), names.end());
    }
  }
  EXPECT_GE(seen.size(), 8u);
}

TEST_F(AlertRulesTest, EveryAlertIsDocumented) {
  const std::string doc = ReadFile(kSourceDir + "/docs/alerts.md");
  for (const auto& [name, rule] : ByName()) {
    EXPECT_THAT(doc, ::testing::HasSubstr("## " + name + "\n")) << "docs/alerts.md lacks a section";
  }
}

// Each alert has at least one promtool case where it fires and one where it must not.
TEST_F(AlertRulesTest, EveryAlertHasFiringAndSilentPromtoolCases) {
  const YAML::Node tests =
      YAML::LoadFile(kSourceDir + "/tests/dashboards/heapwatch-alerts_test.yml")["tests"];
  ASSERT_TRUE(tests.IsSequence());
  std::map<std::string, std::pair<int, int>> cases;  // alert -> (firing, silent)
  for (const YAML::Node& t : tests) {
    for (const YAML::Node& c : t["alert_rule_test"]) {
      auto& [firing, silent] = cases[c["alertname"].as<std::string>()];
      (c["exp_alerts"].size() > 0 ? firing : silent)++;
    }
  }
  for (const auto& [name, rule] : ByName()) {
    EXPECT_GT(cases[name].first, 0) << name << " has no promtool case where it fires";
    EXPECT_GT(cases[name].second, 0) << name << " has no promtool case where it must stay silent";
  }
}

}  // namespace
}  // namespace heapwatch
