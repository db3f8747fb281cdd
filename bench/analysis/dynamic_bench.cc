// heapwatch_dynamic_bench: the dynaTrace thesis's timing tables (seeds/001 appendix A) re-measured
// on this machine: SCC condensation, dominating articulation points, GC (retained) size and the DAP
// dynamic size of every object, next to the exact and estimated dynamic sizes of dynamic_size.h.
//
// Usage:
//   heapwatch_dynamic_bench generated [--reps N]
//       The thesis's generated graph families of Tables A.5-A.8 (balanced tree, unbalanced tree,
//       DAG1, DAG2) at its sizes: 1001, 1501, ..., 10001 nodes (one class node plus 1000 ... 10000
//       objects). Every stage runs N times (default 5) and the median is reported.
//   heapwatch_dynamic_bench dump [--class NAME]... [--dap-max-visits V] [--exact-max-work W]
//                                [--skip-simple] DUMP
//       One HPROF file (Table A.1 was measured on dumps of 0.5-1.8 M nodes); every stage once.
//       --class (repeatable): also the exact dynamic size of that class's instances taken
//       together.
//       --dap-max-visits / --exact-max-work: budgets of the quadratic stages (0 = none); a stage
//       over budget is reported as "over budget" with the time it ran.
//
// Output: "result GRAPH NODES STAGE SECONDS" lines and "check ..." lines (machine-readable), then
// markdown tables: thesis figure (the thesis's time units: seconds of a JUnit test on a 3.2 GHz
// Xeon, including reading its input files and writing its results), ours (seconds, this process,
// input already in memory) and the ratio thesis / ours. The exit status is 1 when a check fails
// (the DAP dynamic sizes differ from the exact ones or from the closed forms of the generated
// graphs, or the DAP counts differ from what the thesis reports for the generated families).
//
// How the generated families are built (seeds/001 §5.1; its figures 5.2, 5.4 and 5.5 are not in
// the text we have, so the DAGs are reconstructed from what the text says about them): node 0 is
// the class (a GC root without references), objects are 1..n, every object 24 bytes, the class 120;
// GC roots: the class and every object without referrers (the thesis computed roots that way).
//   balanced tree: object i references 2i and 2i + 1 (when <= n); "each node, except the leaves,
//     [is a] dominating articulation point".
//   unbalanced tree: "a simple linked list with data objects. The nodes with odd ids represent list
//     entries, even ids represent data objects": entry i (odd) references data i + 1 and entry i +
//     2; "each entry node is a dominating articulation point".
//   DAG1 and DAG2: "the sizes can be computed from the id of the node", "in neither examples
//     articulation or dominating articulation points were found", both about equally expensive.
//     DAG1: object i references i + 2 and i + 3 (sources 1 and 2; object i reaches i and i + 2..n).
//     DAG2: a ladder of levels of two objects, each referencing both objects of the next level
//     (objects 2k + 1, 2k + 2 form level k; sources 1 and 2). Neither has an articulation point in
//     its undirected graph, so neither has a DAP; both reach about n - i objects from object i.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/dap_dynamic_size.h"
#include "analysis/dominating_articulation_points.h"
#include "analysis/dominator_tree.h"
#include "analysis/dynamic_size.h"
#include "analysis/retained_size.h"
#include "analysis/strong_components.h"
#include "collectors/dumps/hprof/hprof_reader.h"

namespace heapwatch::bench {
namespace {

using analysis::ComponentId;
using analysis::Condensation;
using analysis::CsrGraph;
using analysis::DynamicSize;
using analysis::ObjectIndex;
using Clock = std::chrono::steady_clock;

uint64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// CPU seconds of the run Timed() reported last (other processes share the machine's two cores, so
// wall-clock time alone can mislead).
double g_last_cpu_seconds = 0;

// Stages, in table order, with the thesis's algorithm names (seeds/001 §5).
struct StageInfo {
  const char* key;
  const char* thesis_name;  // "" when the thesis has no such algorithm
  const char* ours;
};
const StageInfo kStages[] = {
    {"scc", "StrongConnectedComponents", "CondenseStrongComponents (Tarjan/Pearce, iterative)"},
    {"object_dominators", "SimpleDominator", "ComputeDominatorTree on the object graph"},
    {"gc_size", "GCSize", "ComputeRetainedSizes"},
    {"scc_dominators", "SCCDominatorTree", "SccRoots + SccImmediateDominators"},
    {"dap", "DomArticulationPoints", "DominatingArticulationPointsFromDominators (Listing 4.4)"},
    {"dap_dynamic", "DomArticPointsDynamicSize", "ComputeDapDynamicSizes (all objects)"},
    {"simple_dynamic", "SimpleCompDynamicSize",
     "ComputeExactDynamicSizes, component DFS only (all objects)"},
    {"exact_dynamic", "", "ComputeExactDynamicSizes, auto (all objects)"},
    {"estimate", "", "EstimateDynamicSizes, k = 256 (all objects)"},
};

// Thesis figures. Tables A.5-A.8: columns 1001, 5001 and 10001 nodes; Table A.1: 1,780,673
// nodes.
struct ThesisRow {
  const char* stage;
  double at1001, at5001, at10001;
};
const std::map<std::string, std::vector<ThesisRow>> kThesisGenerated = {
    {"balanced tree (A.5)",
     {{"scc", 0.81, 1.43, 1.98},
      {"object_dominators", 0.92, 1.65, 2.24},
      {"gc_size", 0.63, 0.96, 1.17},
      {"scc_dominators", 0.93, 1.59, 2.12},
      {"dap", 0.81, 1.27, 1.72},
      {"dap_dynamic", 0.91, 1.66, 2.47},
      {"simple_dynamic", 1.14, 1.98, 2.88}}},
    {"unbalanced tree (A.6)",
     {{"scc", 0.81, 1.29, 1.85},
      {"object_dominators", 0.94, 1.49, 1.97},
      {"gc_size", 0.64, 0.94, 1.14},
      {"scc_dominators", 0.93, 1.56, 1.97},
      {"dap", 0.83, 1.19, 1.52},
      {"dap_dynamic", 0.88, 1.55, 2.19},
      {"simple_dynamic", 1.81, 11.97, 195.46}}},
    {"DAG1 (A.7)",
     {{"scc", 0.84, 1.41, 1.77},
      {"object_dominators", 0.97, 1.56, 2.05},
      {"gc_size", 0.63, 0.93, 1.18},
      {"scc_dominators", 0.98, 1.68, 2.20},
      {"dap", 0.82, 1.12, 1.37},
      {"dap_dynamic", 2.49, 31.84, 523.90},
      {"simple_dynamic", 2.51, 31.51, 547.73}}},
    {"DAG2 (A.8)",
     {{"scc", 0.85, 1.38, 1.80},
      {"object_dominators", 0.97, 1.59, 2.05},
      {"gc_size", 0.63, 0.91, 1.15},
      {"scc_dominators", 1.00, 1.66, 2.21},
      {"dap", 0.83, 1.13, 1.36},
      {"dap_dynamic", 2.48, 31.03, 518.81},
      {"simple_dynamic", 2.47, 30.48, 540.27}}},
};
const std::map<std::string, double> kThesisTableA1 = {
    {"scc", 50.14},
    {"object_dominators", 81.96},
    {"gc_size", 17.89},
    {"scc_dominators", 77.27},
    {"dap", 31.59},
    {"dap_dynamic", 6472.95},
    {"simple_dynamic", 9628.27},
};

bool g_failed = false;

void Check(bool ok, const std::string& what) {
  std::printf("check %s %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) g_failed = true;
}

std::string Fmt(double seconds) {
  char buf[64];
  if (seconds < 0) return "-";
  if (seconds >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", seconds);
  } else if (seconds >= 0.1) {
    std::snprintf(buf, sizeof buf, "%.2f", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.4f", seconds);
  } else {
    std::snprintf(buf, sizeof buf, "%.1e", seconds);
  }
  return buf;
}

std::string Ratio(double thesis, double ours) {
  if (thesis <= 0 || ours <= 0) return "-";
  char buf[64];
  double r = thesis / ours;
  if (r >= 100) {  // two significant digits: 5300x, 44000x
    const double scale = std::pow(10.0, std::floor(std::log10(r)) - 1);
    r = std::round(r / scale) * scale;
  }
  std::snprintf(buf, sizeof buf, r >= 10 ? "%.0f×" : "%.1f×", r);
  return buf;
}

// ---- Estimate error.

struct ErrorStats {
  uint64_t objects = 0;    // objects compared (exact size > 0)
  uint64_t estimated = 0;  // of which the estimate is not flagged exact
  double median_all = 0, p90_all = 0;
  double median_estimated = 0, p90_estimated = 0;
  // The same per component (each component once, however many objects it has).
  uint64_t components_estimated = 0;
  double median_components = 0, p90_components = 0;
  bool sampled = false;  // quantiles from a sample checked by exact searches (see below)
};

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// Relative errors of the estimated bytes per object against exact per-component sizes.
ErrorStats EstimateErrors(const analysis::DynamicSizes& estimate,
                          const std::vector<DynamicSize>& exact_of_component) {
  ErrorStats s;
  std::vector<double> all, estimated;
  all.reserve(estimate.object_count());
  for (uint32_t v = 0; v < estimate.object_count(); ++v) {
    const ObjectIndex o(v);
    const double truth = static_cast<double>(exact_of_component[estimate.component(o).value].bytes);
    if (truth <= 0) continue;
    const double e = std::abs(static_cast<double>(estimate.bytes(o)) - truth) / truth;
    all.push_back(e);
    if (!estimate.exact(o)) estimated.push_back(e);
  }
  s.objects = all.size();
  s.estimated = estimated.size();
  s.median_all = Quantile(all, 0.5);
  s.p90_all = Quantile(all, 0.9);
  s.median_estimated = Quantile(estimated, 0.5);
  s.p90_estimated = Quantile(estimated, 0.9);
  std::vector<double> components;
  for (uint32_t c = 0; c < estimate.component_count(); ++c) {
    const ComponentId id(c);
    const double truth = static_cast<double>(exact_of_component[c].bytes);
    if (estimate.component_exact(id) || truth <= 0) continue;
    components.push_back(std::abs(static_cast<double>(estimate.component_bytes(id)) - truth) /
                         truth);
  }
  s.components_estimated = components.size();
  s.median_components = Quantile(components, 0.5);
  s.p90_components = Quantile(components, 0.9);
  return s;
}

// Exact dynamic bytes of component c: a search over the condensation DAG summing component bytes
// (independent of the code under test but for the condensation).
uint64_t SearchBytes(const Condensation& condensation, uint32_t c, std::vector<uint32_t>& mark,
                     uint32_t stamp) {
  std::vector<uint32_t> stack = {c};
  mark[c] = stamp;
  uint64_t bytes = 0;
  while (!stack.empty()) {
    const uint32_t v = stack.back();
    stack.pop_back();
    bytes += condensation.component_bytes[v];
    for (ObjectIndex w : condensation.dag.successors(ObjectIndex(v))) {
      if (mark[w.value] == stamp) continue;
      mark[w.value] = stamp;
      stack.push_back(w.value);
    }
  }
  return bytes;
}

// The estimate's error where no exact method fits its budget: `sample` objects drawn uniformly
// among those whose estimate is not exact, and as many components among the estimated components,
// each checked by one exact search. `objects` counts all objects (the exact ones have error 0, so
// the "all" quantiles are those of the estimated ones scaled by their share).
ErrorStats SampledEstimateErrors(const analysis::DynamicSizes& estimate,
                                 const Condensation& condensation, uint32_t sample) {
  std::vector<uint32_t> estimated_objects, estimated_components;
  for (uint32_t v = 0; v < estimate.object_count(); ++v) {
    if (!estimate.exact(ObjectIndex(v))) estimated_objects.push_back(v);
  }
  for (uint32_t c = 0; c < estimate.component_count(); ++c) {
    if (!estimate.component_exact(ComponentId(c))) estimated_components.push_back(c);
  }
  std::mt19937_64 rng(20091101);
  std::vector<uint32_t> mark(condensation.component_count, 0);
  uint32_t stamp = 0;
  auto error_of = [&](uint32_t c) {
    const double truth = static_cast<double>(SearchBytes(condensation, c, mark, ++stamp));
    return truth <= 0
               ? 0.0
               : std::abs(static_cast<double>(estimate.component_bytes(ComponentId(c))) - truth) /
                     truth;
  };
  ErrorStats s;
  s.objects = estimate.object_count();
  s.estimated = estimated_objects.size();
  s.sampled = true;
  std::vector<double> errors;
  for (uint32_t i = 0; i < sample && !estimated_objects.empty(); ++i) {
    const uint32_t v = estimated_objects[std::uniform_int_distribution<size_t>(
        0, estimated_objects.size() - 1)(rng)];
    errors.push_back(error_of(estimate.component(ObjectIndex(v)).value));
  }
  s.median_estimated = Quantile(errors, 0.5);
  s.p90_estimated = Quantile(errors, 0.9);
  // Over all objects: the exact ones have error 0.
  const double share = s.objects == 0 ? 0 : static_cast<double>(s.estimated) / s.objects;
  std::sort(errors.begin(), errors.end());
  auto all_quantile = [&](double q) {
    const double within = (q - (1 - share)) / share;  // quantile among the estimated ones
    if (share == 0 || within <= 0 || errors.empty()) return 0.0;
    return errors[std::min(errors.size() - 1,
                           static_cast<size_t>(within * static_cast<double>(errors.size())))];
  };
  s.median_all = all_quantile(0.5);
  s.p90_all = all_quantile(0.9);
  std::vector<double> component_errors;
  for (uint32_t i = 0; i < sample && !estimated_components.empty(); ++i) {
    component_errors.push_back(error_of(estimated_components[std::uniform_int_distribution<size_t>(
        0, estimated_components.size() - 1)(rng)]));
  }
  s.components_estimated = estimated_components.size();
  s.median_components = Quantile(component_errors, 0.5);
  s.p90_components = Quantile(component_errors, 0.9);
  return s;
}

// ---- The stages on one graph.

struct GraphRun {
  std::string name;
  uint32_t nodes = 0;
  uint64_t edges = 0;
  std::map<std::string, double> seconds;  // wall; absent: not run; negative: over budget
  std::map<std::string, double> cpu_seconds;
  std::map<std::string, std::string> notes;
  uint32_t components = 0, nontrivial = 0, max_component = 0, scc_roots = 0, points = 0;
  uint64_t points_used = 0, visits = 0;
  std::optional<ErrorStats> errors;
};

// Prints the result of the stage Timed() ran last and keeps its CPU time.
void Result(GraphRun& run, const std::string& stage, double seconds) {
  run.cpu_seconds[stage] = g_last_cpu_seconds;
  std::printf("result %s %u %s %.6f cpu %.6f\n", run.name.c_str(), run.nodes, stage.c_str(),
              seconds, g_last_cpu_seconds);
  std::fflush(stdout);
}

// Runs fn `reps` times and returns the median wall-clock seconds (the thesis took the mean of three
// runs; the median is steadier on a shared machine); g_last_cpu_seconds gets that run's CPU time.
template <typename Fn>
double Timed(int reps, Fn&& fn) {
  std::vector<std::pair<double, double>> runs;
  for (int r = 0; r < reps; ++r) {
    const double cpu = CpuSeconds();
    const auto start = Clock::now();
    fn();
    runs.emplace_back(Seconds(start), CpuSeconds() - cpu);
  }
  std::sort(runs.begin(), runs.end());
  g_last_cpu_seconds = runs[runs.size() / 2].second;
  return runs[runs.size() / 2].first;
}

[[noreturn]] void Die(const std::string& what, const Status& status) {
  std::fprintf(stderr, "heapwatch_dynamic_bench: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  std::exit(1);
}

struct DumpOptions {
  std::vector<std::string> class_names;
  // Without any exact reference: objects (and components) sampled for the estimate's error.
  uint32_t error_sample = 200;
  uint64_t dap_max_visits = 0;
  uint64_t exact_max_work = uint64_t{1} << 34;
  bool skip_simple = false;
};

// Runs every stage on `graph` (condensed with `condense`). `exact_objects(v)`, when given, is the
// closed-form object count of the dynamic size of object v (generated graphs).
GraphRun RunStages(const std::string& name, const CsrGraph& graph,
                   std::function<StatusOr<Condensation>()> condense,
                   std::span<const ObjectIndex> gc_roots, analysis::ShallowSizeFn shallow_size,
                   int reps, const DumpOptions& options,
                   std::function<uint64_t(uint32_t)> closed_form_objects,
                   std::function<void(GraphRun&, const Condensation&)> extra) {
  GraphRun run;
  run.name = name;
  run.nodes = graph.node_count();
  run.edges = graph.edge_count();

  std::optional<Condensation> condensation;
  run.seconds["scc"] = Timed(reps, [&] {
    auto c = condense();
    if (!c.ok()) Die("condensation", c.status());
    condensation.emplace(std::move(*c));
  });
  Result(run, "scc", run.seconds["scc"]);
  run.components = condensation->component_count;
  for (uint32_t count : condensation->component_objects) {
    if (count > 1) ++run.nontrivial;
    run.max_component = std::max(run.max_component, count);
  }
  {
    std::optional<analysis::DominatorTree> tree;
    run.seconds["object_dominators"] = Timed(reps, [&] {
      auto t = analysis::ComputeDominatorTree(graph, gc_roots);
      if (!t.ok()) Die("dominator tree", t.status());
      tree.emplace(std::move(*t));
    });
    Result(run, "object_dominators", run.seconds["object_dominators"]);
    run.seconds["gc_size"] = Timed(reps, [&] {
      analysis::RetainedSizes sizes = analysis::ComputeRetainedSizes(*tree, shallow_size);
      if (sizes.empty()) std::abort();
    });
    Result(run, "gc_size", run.seconds["gc_size"]);
  }

  analysis::DominatingArticulationPoints points;
  run.seconds["scc_dominators"] = Timed(reps, [&] {
    auto roots = analysis::SccRoots(*condensation, gc_roots);
    if (!roots.ok()) Die("SCC roots", roots.status());
    auto idom = analysis::SccImmediateDominators(*condensation, *roots);
    if (!idom.ok()) Die("SCC dominators", idom.status());
    points.scc_roots = std::move(*roots);
    points.immediate_dominators = std::move(*idom);
  });
  Result(run, "scc_dominators", run.seconds["scc_dominators"]);
  run.seconds["dap"] = Timed(reps, [&] {
    auto is_point = analysis::DominatingArticulationPointsFromDominators(
        *condensation, points.immediate_dominators);
    if (!is_point.ok()) Die("DAPs", is_point.status());
    points.is_point = std::move(*is_point);
  });
  Result(run, "dap", run.seconds["dap"]);
  points.points.clear();
  for (uint32_t c = 0; c < condensation->component_count; ++c) {
    if (points.is_point[c]) points.points.push_back(ComponentId(c));
  }
  run.scc_roots = static_cast<uint32_t>(points.scc_roots.size());
  run.points = static_cast<uint32_t>(points.points.size());

  std::optional<analysis::DapDynamicSizes> dap_sizes;
  {
    analysis::DapDynamicSizeOptions dap_options;
    dap_options.max_visits = options.dap_max_visits;
    Status over = absl::OkStatus();
    const double s = Timed(reps, [&] {
      auto sizes = analysis::ComputeDapDynamicSizes(*condensation, points, dap_options);
      if (!sizes.ok()) {
        if (sizes.status().code() != absl::StatusCode::kResourceExhausted)
          Die("DAP dynamic size", sizes.status());
        over = sizes.status();
        return;
      }
      dap_sizes.emplace(std::move(*sizes));
    });
    run.seconds["dap_dynamic"] = over.ok() ? s : -s;
    if (!over.ok()) run.notes["dap_dynamic"] = std::string(over.message());
    Result(run, "dap_dynamic", run.seconds["dap_dynamic"]);
    if (dap_sizes) {
      run.points_used = dap_sizes->points_used;
      run.visits = dap_sizes->visits;
    }
  }

  std::optional<analysis::DynamicSizes> exact;
  if (!options.skip_simple) {
    analysis::ExactDynamicSizesOptions simple;
    simple.method = analysis::ExactDynamicSizesOptions::Method::kComponentDfs;
    simple.max_work = options.exact_max_work;
    Status over = absl::OkStatus();
    const double s = Timed(reps, [&] {
      auto sizes = analysis::ComputeExactDynamicSizes(*condensation, simple);
      if (!sizes.ok()) {
        if (sizes.status().code() != absl::StatusCode::kResourceExhausted)
          Die("simple dynamic size", sizes.status());
        over = sizes.status();
        return;
      }
      exact.emplace(std::move(*sizes));
    });
    run.seconds["simple_dynamic"] = over.ok() ? s : -s;
    if (!over.ok()) run.notes["simple_dynamic"] = std::string(over.message());
    Result(run, "simple_dynamic", run.seconds["simple_dynamic"]);
  }
  {
    analysis::ExactDynamicSizesOptions automatic;
    automatic.max_work = options.exact_max_work;
    Status over = absl::OkStatus();
    std::optional<analysis::DynamicSizes> result;
    const double s = Timed(reps, [&] {
      auto sizes = analysis::ComputeExactDynamicSizes(*condensation, automatic);
      if (!sizes.ok()) {
        if (sizes.status().code() != absl::StatusCode::kResourceExhausted)
          Die("exact dynamic size", sizes.status());
        over = sizes.status();
        return;
      }
      result.emplace(std::move(*sizes));
    });
    run.seconds["exact_dynamic"] = over.ok() ? s : -s;
    if (!over.ok()) run.notes["exact_dynamic"] = std::string(over.message());
    Result(run, "exact_dynamic", run.seconds["exact_dynamic"]);
    if (result) exact = std::move(result);
  }

  // Exact reference per component: the DAP sizes, else dyn-core's exact ones.
  std::vector<DynamicSize> reference;
  if (dap_sizes) {
    reference = dap_sizes->of_component;
  } else if (exact) {
    reference.resize(condensation->component_count);
    for (uint32_t c = 0; c < condensation->component_count; ++c) {
      reference[c] = {exact->component_bytes(ComponentId(c)),
                      exact->component_objects(ComponentId(c))};
    }
  }
  if (dap_sizes && exact) {
    uint64_t differ = 0;
    for (uint32_t c = 0; c < condensation->component_count; ++c) {
      const DynamicSize want{exact->component_bytes(ComponentId(c)),
                             exact->component_objects(ComponentId(c))};
      if (!(dap_sizes->of_component[c] == want)) ++differ;
    }
    Check(differ == 0, name + " " + std::to_string(run.nodes) +
                           " DAP dynamic sizes equal the exact ones (components differing: " +
                           std::to_string(differ) + ")");
  }
  if (dap_sizes && closed_form_objects) {
    uint64_t differ = 0;
    for (uint32_t v = 0; v < run.nodes; ++v) {
      const ComponentId c = condensation->component_of[v];
      if (dap_sizes->of_component[c.value].objects != closed_form_objects(v)) ++differ;
    }
    Check(differ == 0, name + " " + std::to_string(run.nodes) +
                           " DAP dynamic sizes (objects) equal the closed form (objects "
                           "differing: " +
                           std::to_string(differ) + ")");
  }

  {
    std::optional<analysis::DynamicSizes> estimate;
    run.seconds["estimate"] = Timed(reps, [&] {
      auto e = analysis::EstimateDynamicSizes(*condensation);
      if (!e.ok()) Die("estimate", e.status());
      estimate.emplace(std::move(*e));
    });
    Result(run, "estimate", run.seconds["estimate"]);
    if (!reference.empty()) {
      run.errors = EstimateErrors(*estimate, reference);
    } else if (options.error_sample > 0) {
      run.errors = SampledEstimateErrors(*estimate, *condensation, options.error_sample);
    }
  }
  if (extra) extra(run, *condensation);
  return run;
}

// ---- Generated graphs (seeds/001 §5.1).

struct Family {
  std::string name;
  // Edges of object i (1-based) among objects 1..n.
  std::function<void(uint32_t i, uint32_t n, std::vector<uint32_t>& out)> edges;
  std::function<uint64_t(uint32_t i, uint32_t n)> objects;  // closed-form dynamic size (count)
  std::function<uint32_t(uint32_t n)> expected_points;      // DAPs the thesis reports
};

std::vector<Family> Families() {
  std::vector<Family> f;
  f.push_back({"balanced tree (A.5)",
               [](uint32_t i, uint32_t n, std::vector<uint32_t>& out) {
                 if (2 * uint64_t{i} <= n) out.push_back(2 * i);
                 if (2 * uint64_t{i} + 1 <= n) out.push_back(2 * i + 1);
               },
               [](uint32_t i, uint32_t n) {
                 // Subtree size in a heap-ordered binary tree: count level by level.
                 uint64_t size = 0;
                 for (uint64_t lo = i, hi = i; lo <= n; lo = 2 * lo, hi = 2 * hi + 1) {
                   size += std::min<uint64_t>(hi, n) - lo + 1;
                 }
                 return size;
               },
               [](uint32_t n) { return n / 2; }});  // inner nodes 1..n/2
  f.push_back({"unbalanced tree (A.6)",
               [](uint32_t i, uint32_t n, std::vector<uint32_t>& out) {
                 if (i % 2 == 0) return;  // data object
                 if (i + 1 <= n) out.push_back(i + 1);
                 if (i + 2 <= n) out.push_back(i + 2);
               },
               [](uint32_t i, uint32_t n) -> uint64_t { return i % 2 == 0 ? 1 : n - i + 1; },
               [](uint32_t n) { return (n + 1) / 2 - (n % 2); }});  // entries with a successor
  f.push_back({"DAG1 (A.7)",
               [](uint32_t i, uint32_t n, std::vector<uint32_t>& out) {
                 if (i + 2 <= n) out.push_back(i + 2);
                 if (i + 3 <= n) out.push_back(i + 3);
               },
               [](uint32_t i, uint32_t n) -> uint64_t { return i + 2 <= n ? n - i : 1; },
               [](uint32_t) { return 0u; }});
  f.push_back({"DAG2 (A.8)",
               [](uint32_t i, uint32_t n, std::vector<uint32_t>& out) {
                 const uint32_t next_level_first = ((i - 1) / 2 + 1) * 2 + 1;
                 if (next_level_first <= n) out.push_back(next_level_first);
                 if (next_level_first + 1 <= n) out.push_back(next_level_first + 1);
               },
               [](uint32_t i, uint32_t n) -> uint64_t {
                 const uint64_t level = (i - 1) / 2, levels = (n + 1) / 2;
                 return 1 + 2 * (levels - 1 - level) - ((n % 2 == 1 && level + 1 < levels) ? 1 : 0);
               },
               [](uint32_t) { return 0u; }});
  return f;
}

// Object graph of a family: node 0 is the class, objects 1..n.
CsrGraph BuildFamily(const Family& family, uint32_t n) {
  CsrGraph g;
  g.offsets.assign(size_t{n} + 2, 0);
  std::vector<uint32_t> out;
  for (uint32_t i = 1; i <= n; ++i) {
    out.clear();
    family.edges(i, n, out);
    for (uint32_t t : out) g.targets.push_back(ObjectIndex(t));
    g.offsets[i + 1] = static_cast<uint32_t>(g.targets.size());
  }
  return g;
}

std::vector<ObjectIndex> Sources(const CsrGraph& g) {
  std::vector<bool> referenced(g.node_count(), false);
  for (ObjectIndex t : g.targets) referenced[t.value] = true;
  std::vector<ObjectIndex> roots;
  for (uint32_t v = 0; v < g.node_count(); ++v) {
    if (!referenced[v]) roots.push_back(ObjectIndex(v));
  }
  return roots;
}

void PrintGeneratedTable(const std::string& family, const std::map<uint32_t, GraphRun>& runs) {
  const std::vector<uint32_t> columns = {1001, 5001, 10001};
  std::printf("\n#### %s\n\n", family.c_str());
  std::printf(
      "| thesis algorithm | ours | thesis 1001 / 5001 / 10001 nodes | ours (s) 1001 / 5001 / "
      "10001 | thesis / ours at 10001 |\n|---|---|---|---|---|\n");
  const auto& thesis = kThesisGenerated.at(family);
  for (const StageInfo& stage : kStages) {
    const ThesisRow* row = nullptr;
    for (const ThesisRow& r : thesis) {
      if (stage.key == std::string(r.stage)) row = &r;
    }
    std::string ours;
    for (uint32_t c : columns) {
      const auto it = runs.find(c);
      double s = -1;
      if (it != runs.end() && it->second.seconds.count(stage.key))
        s = it->second.seconds.at(stage.key);
      ours += (ours.empty() ? "" : " / ") + Fmt(s);
    }
    std::string thesis_cell = "-", ratio = "-";
    if (row != nullptr) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.2f / %.2f / %.2f", row->at1001, row->at5001, row->at10001);
      thesis_cell = buf;
      const auto it = runs.find(10001);
      if (it != runs.end() && it->second.seconds.count(stage.key))
        ratio = Ratio(row->at10001, it->second.seconds.at(stage.key));
    }
    std::printf("| %s | %s | %s | %s | %s |\n", *stage.thesis_name ? stage.thesis_name : "-",
                stage.ours, thesis_cell.c_str(), ours.c_str(), ratio.c_str());
  }
  const auto it = runs.find(10001);
  if (it != runs.end()) {
    const GraphRun& r = it->second;
    std::printf(
        "\nAt 10001 nodes: %u components, %u SCC roots, %u dominating articulation points, %llu "
        "DAP uses",
        r.components, r.scc_roots, r.points, static_cast<unsigned long long>(r.points_used));
    if (r.errors) {
      std::printf(
          "; estimate: %llu of %llu objects estimated (the rest exact), median / p90 relative "
          "error %.2f%% / %.2f%% among the estimated",
          static_cast<unsigned long long>(r.errors->estimated),
          static_cast<unsigned long long>(r.errors->objects), 100 * r.errors->median_estimated,
          100 * r.errors->p90_estimated);
    }
    std::printf(".\n");
  }
}

int RunGenerated(int reps) {
  std::map<std::string, std::map<uint32_t, GraphRun>> all;
  for (const Family& family : Families()) {
    for (uint32_t nodes = 1001; nodes <= 10001; nodes += 500) {
      const uint32_t n = nodes - 1;  // objects
      const CsrGraph graph = BuildFamily(family, n);
      const std::vector<ObjectIndex> roots = Sources(graph);
      auto size = [](ObjectIndex v) -> uint64_t { return v.value == 0 ? 120 : 24; };
      GraphRun run = RunStages(
          family.name, graph, [&]() { return analysis::CondenseStrongComponents(graph, size); },
          roots, size, reps, DumpOptions{},
          [&](uint32_t v) -> uint64_t { return v == 0 ? 1 : family.objects(v, n); }, nullptr);
      Check(run.points == family.expected_points(n),
            family.name + " " + std::to_string(nodes) + " DAPs " + std::to_string(run.points) +
                " (expected " + std::to_string(family.expected_points(n)) + ")");
      all[family.name].emplace(nodes, std::move(run));
    }
  }
  std::printf(
      "\n### Generated graphs (seeds/001 Tables A.5-A.8): thesis time units vs our seconds "
      "(median of %d runs)\n",
      reps);
  for (const Family& family : Families()) PrintGeneratedTable(family.name, all[family.name]);
  return g_failed ? 1 : 0;
}

// ---- A heap dump (Table A.1).

int RunDump(const std::string& path, const DumpOptions& options) {
  const auto parse_start = Clock::now();
  auto read = hprof::ReadHeapGraph(path);
  if (!read.ok()) Die("reading " + path, read.status());
  const analysis::HeapGraph graph = std::move(*read);
  const double parse_seconds = Seconds(parse_start);
  std::printf("result dump %u parse %.6f\n", graph.object_count(), parse_seconds);
  std::printf("check dump objects %u references %llu gc_roots %zu classes %u\n",
              graph.object_count(), static_cast<unsigned long long>(graph.graph().edge_count()),
              graph.root_objects().size(), graph.class_count());
  const analysis::DynamicSizeOptions references;  // strong references, no class edges
  auto size = [&](ObjectIndex v) { return graph.shallow_size(v); };
  struct ClassRun {
    std::string name;
    size_t instances = 0;
    DynamicSize together;
    double wall = 0, cpu = 0;
  };
  std::vector<ClassRun> class_runs;
  GraphRun run = RunStages(
      "dump", graph.graph(),
      [&]() {
        return analysis::CondenseStrongComponents(graph, analysis::ReferencesFor(references));
      },
      graph.root_objects(), size, 1, options, nullptr,
      [&](GraphRun& r, const Condensation&) {
        for (const std::string& name : options.class_names) {
          const std::vector<analysis::ClassId> classes = graph.FindClasses(name);
          if (classes.empty()) {
            std::fprintf(stderr, "heapwatch_dynamic_bench: no class %s\n", name.c_str());
            std::exit(1);
          }
          ClassRun c;
          c.name = name;
          std::vector<ObjectIndex> instances;
          for (uint32_t v = 0; v < graph.object_count(); ++v) {
            if (std::find(classes.begin(), classes.end(), graph.class_of(ObjectIndex(v))) !=
                classes.end()) {
              instances.push_back(ObjectIndex(v));
            }
          }
          c.instances = instances.size();
          c.wall = Timed(1, [&] {
            auto d = analysis::ComputeDynamicSize(graph, instances, references);
            if (!d.ok()) Die("class dynamic size", d.status());
            c.together = *d;
          });
          c.cpu = g_last_cpu_seconds;
          std::printf("result dump %u class_dynamic:%s %.6f cpu %.6f\n", r.nodes, name.c_str(),
                      c.wall, c.cpu);
          std::printf("check dump class %s instances %zu reach_objects %llu reach_bytes %llu\n",
                      name.c_str(), c.instances,
                      static_cast<unsigned long long>(c.together.objects),
                      static_cast<unsigned long long>(c.together.bytes));
          class_runs.push_back(std::move(c));
        }
      });

  std::printf(
      "check dump components %u nontrivial %u largest %u scc_roots %u points %u "
      "points_used %llu visits %llu\n",
      run.components, run.nontrivial, run.max_component, run.scc_roots, run.points,
      static_cast<unsigned long long>(run.points_used),
      static_cast<unsigned long long>(run.visits));
  if (run.errors) {
    std::printf(
        "check dump estimate objects %llu estimated %llu median_all %.5f p90_all %.5f "
        "median_estimated %.5f p90_estimated %.5f components_estimated %llu "
        "median_components %.5f p90_components %.5f\n",
        static_cast<unsigned long long>(run.errors->objects),
        static_cast<unsigned long long>(run.errors->estimated), run.errors->median_all,
        run.errors->p90_all, run.errors->median_estimated, run.errors->p90_estimated,
        static_cast<unsigned long long>(run.errors->components_estimated),
        run.errors->median_components, run.errors->p90_components);
  }
  std::printf("check dump peak_rss_bytes %llu\n", static_cast<unsigned long long>(PeakRssBytes()));

  std::printf(
      "\n### %s: %u objects, %llu references (thesis Table A.1: 1,780,673 nodes, 4,060,032 "
      "references)\n\n",
      path.c_str(), graph.object_count(),
      static_cast<unsigned long long>(graph.graph().edge_count()));
  std::printf(
      "| thesis algorithm | ours | thesis (time units) | ours (s, wall / CPU) | thesis / ours "
      "(wall) |\n"
      "|---|---|---|---|---|\n");
  for (const StageInfo& stage : kStages) {
    const auto it = run.seconds.find(stage.key);
    if (it == run.seconds.end()) continue;
    const auto thesis = kThesisTableA1.find(stage.key);
    const double t = thesis == kThesisTableA1.end() ? -1 : thesis->second;
    const double cpu = run.cpu_seconds[stage.key];
    std::string ours = it->second < 0
                           ? "> " + Fmt(-it->second) + " / " + Fmt(cpu) + " (stopped: over budget)"
                           : Fmt(it->second) + " / " + Fmt(cpu);
    std::printf("| %s | %s | %s | %s | %s |\n", *stage.thesis_name ? stage.thesis_name : "-",
                stage.ours, t < 0 ? "-" : Fmt(t).c_str(), ours.c_str(),
                it->second < 0 ? "-" : Ratio(t, it->second).c_str());
  }
  for (const ClassRun& c : class_runs) {
    std::printf(
        "| - | ComputeDynamicSize of the %zu instances of %s together (reach %llu objects, %llu "
        "bytes) | - | %s / %s | - |\n",
        c.instances, c.name.c_str(), static_cast<unsigned long long>(c.together.objects),
        static_cast<unsigned long long>(c.together.bytes), Fmt(c.wall).c_str(), Fmt(c.cpu).c_str());
  }
  auto sum = [&](std::initializer_list<const char*> keys) {
    double s = 0;
    for (const char* k : keys) {
      const auto it = run.seconds.find(k);
      if (it == run.seconds.end() || it->second < 0) return -1.0;
      s += it->second;
    }
    return s;
  };
  const double chain = sum({"scc", "scc_dominators", "dap", "dap_dynamic"});
  const double estimate_chain = sum({"scc", "estimate"});
  std::printf(
      "| StrongConnectedComponents + SCCDominatorTree + DomArticulationPoints + "
      "DomArticPointsDynamicSize | the thesis method end to end | %s | %s | %s |\n",
      Fmt(50.14 + 77.27 + 31.59 + 6472.95).c_str(), Fmt(chain).c_str(),
      Ratio(50.14 + 77.27 + 31.59 + 6472.95, chain).c_str());
  std::printf(
      "| - | condensation + estimate (every object, near-linear) | - | %s | %s vs "
      "DomArticPointsDynamicSize |\n",
      Fmt(estimate_chain).c_str(), Ratio(6472.95, estimate_chain).c_str());
  std::printf(
      "\n%u components (%u of more than one object, the largest %u objects), %u SCC roots, %u "
      "dominating articulation points%s. Parse %.2f s, peak RSS %.0f MiB.\n",
      run.components, run.nontrivial, run.max_component, run.scc_roots, run.points,
      run.seconds["dap_dynamic"] < 0
          ? " (the DAP dynamic size stopped over budget)"
          : (", used " + std::to_string(run.points_used) + " times; the DAP searches visited " +
             std::to_string(run.visits) + " components in all")
                .c_str(),
      parse_seconds, static_cast<double>(PeakRssBytes()) / 1048576.0);
  if (run.errors && run.errors->sampled) {
    std::printf(
        "Estimate vs exact bytes (no exact method fitted its budget; %u objects drawn among the "
        "%llu estimated ones and %u components among the %llu estimated ones, each checked by an "
        "exact search): per object median %.2f%%, p90 %.2f%% over all %llu objects; median %.2f%%, "
        "p90 %.2f%% over the estimated ones; per estimated component median %.2f%%, p90 %.2f%%.\n",
        options.error_sample, static_cast<unsigned long long>(run.errors->estimated),
        options.error_sample, static_cast<unsigned long long>(run.errors->components_estimated),
        100 * run.errors->median_all, 100 * run.errors->p90_all,
        static_cast<unsigned long long>(run.errors->objects), 100 * run.errors->median_estimated,
        100 * run.errors->p90_estimated, 100 * run.errors->median_components,
        100 * run.errors->p90_components);
  } else if (run.errors) {
    std::printf(
        "Estimate vs exact bytes per object: median %.2f%%, p90 %.2f%% over all %llu objects; "
        "median %.2f%%, p90 %.2f%% over the %llu whose value is estimated (not exact); per "
        "component, over the %llu estimated components: median %.2f%%, p90 %.2f%%.\n",
        100 * run.errors->median_all, 100 * run.errors->p90_all,
        static_cast<unsigned long long>(run.errors->objects), 100 * run.errors->median_estimated,
        100 * run.errors->p90_estimated, static_cast<unsigned long long>(run.errors->estimated),
        static_cast<unsigned long long>(run.errors->components_estimated),
        100 * run.errors->median_components, 100 * run.errors->p90_components);
  } else {
    std::printf("Estimate error: no exact reference (every exact method was over budget).\n");
  }
  for (const auto& [stage, note] : run.notes) std::printf("%s: %s\n", stage.c_str(), note.c_str());
  return g_failed ? 1 : 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: heapwatch_dynamic_bench generated [--reps N]\n"
               "       heapwatch_dynamic_bench dump [--class NAME]... [--dap-max-visits V] "
               "[--exact-max-work W] [--skip-simple] DUMP\n");
  return 2;
}

int Main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string mode = argv[1];
  if (mode == "generated") {
    int reps = 5;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "--reps" && i + 1 < argc) {
        reps = std::max(1, std::atoi(argv[++i]));
      } else {
        return Usage();
      }
    }
    return RunGenerated(reps);
  }
  if (mode != "dump") return Usage();
  DumpOptions options;
  std::string path;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--class" && i + 1 < argc) {
      options.class_names.push_back(argv[++i]);
    } else if (arg == "--dap-max-visits" && i + 1 < argc) {
      options.dap_max_visits = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--exact-max-work" && i + 1 < argc) {
      options.exact_max_work = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--skip-simple") {
      options.skip_simple = true;
    } else if (path.empty() && !arg.empty() && arg[0] != '-') {
      path = arg;
    } else {
      return Usage();
    }
  }
  if (path.empty()) return Usage();
  return RunDump(path, options);
}

}  // namespace
}  // namespace heapwatch::bench

int main(int argc, char** argv) { return heapwatch::bench::Main(argc, argv); }
