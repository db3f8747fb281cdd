// heapwatch_exhaustion_sim: how soon heapwatchd's defaults alert on a heap leak and name it, for
// heaps of 0.25, 2 and 8 GiB and leaks that exhaust them in 15 minutes, 2 hours and 1 day
// (bench/exhaustion/README.md).
//
// Real time is too long for the slow cases, so this runs the daemon's own decision code on
// simulated time: the real AgentWatch (live-set trend, growth probe, heap leak, forecast,
// attribution; daemon/agent_watch.h) on a real LMDB store, the real PauseBudget
// (collectors/pause_budget.h) choosing each histogram's mode and time at the default 0.1 % budget,
// the daemon's 60 s interval with +-10 % jitter and its 10 s spacing of histograms wanted sooner.
// The JVM is a model of G1 calibrated on the real runs of tests/dashboards/heap_exhaustion_e2e.sh
// (bench/exhaustion/README.md): young collections when eden fills, promoted garbage, a concurrent
// cycle (an exact live-set point) when the old generation passes 45 % of the heap, a full
// collection at each live histogram; pauses from the budget's per-GiB priors (live 1.5 s/GiB of
// live set, -all 0.4 s/GiB of heap used). The "alert" is the shipped HeapwatchHeapExhaustionSoon
// rule (estimate < 30 min held for 1 min) plus 30 s for Prometheus's scrape and evaluation; the
// warning rule
// (< 12 h for 10 min) likewise.
//
// Usage: heapwatch_exhaustion_sim [--seeds N] [--sizes-mib 256,2048,8192] [--hours 0.25,2,24]
// Prints one table row per (heap, exhaustion time) with medians over the seeds (leak ids and drops:
// the most in any seed; one leak should be one id, listed until the OOM), then the forecast error
// at half-full as a distribution.
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "collectors/pause_budget.h"
#include "daemon/agent_watch.h"
#include "spdlog/spdlog.h"
#include "storage/snapshot_store.h"

namespace heapwatch {
namespace {

constexpr double kMiB = 1 << 20;
constexpr double kGiB = 1 << 30;

struct Result {
  double flagged = NAN;        // a leak is listed (seconds since the JVM started)
  double named = NAN;          // its main class is the leaking class
  double critical = NAN;       // HeapwatchHeapExhaustionSoon fires
  double warning = NAN;        // HeapwatchHeapExhaustion fires
  double oom = NAN;            // the live set reaches 98 % of the heap
  double half_forecast = NAN;  // the estimate when the live set passes half the heap
  double half_actual = NAN;    // the time then left until the OOM
  double pause = 0;            // seconds of pause heapwatch caused
  int drops = 0;              // times the listed leak vanished before the OOM (listed again or not)
  std::set<std::string> ids;  // leak ids listed over the run (one leak: one id)
};

Result Run(double max_bytes, double exhaust_seconds, uint32_t seed, const std::string& dir) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  storage::StoreOptions so;
  so.dir = dir;
  so.background_retention = false;
  auto store = storage::SnapshotStore::Open(so);
  if (!store.ok()) {
    std::fprintf(stderr, "store: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  AgentInfo info;
  info.id = AgentId{"vm-1-sim"};
  info.pid = 1;
  info.main_class = "com.example.Service";
  info.start_time = t0;
  (void)(*store)->PutAgent(info);
  daemon::AgentWatch watch(info, {}, store->get());
  collectors::PauseBudget budget(collectors::PauseBudgetOptions{}, t0);

  // The JVM: a steady live set of 5 % of the heap in 200 classes, a leak of orders (24 bytes, a
  // 528-byte payload, a 24-byte String id) from t=0 at the rate that fills the rest by
  // `exhaust_seconds`, and garbage: an allocation rate that fills eden every ~4 s, 2 % of each
  // young collection promoted.
  const double base = 0.05 * max_bytes;
  const double oom_at = 0.98 * max_bytes;
  const double rate = (oom_at - base) / exhaust_seconds;
  const double eden = std::clamp(0.1 * max_bytes, 16 * kMiB, 1024 * kMiB);
  const double alloc = eden / 4;
  double old_garbage = 0, eden_used = 0;
  double live_at = base;
  Result r;
  const absl::Duration interval = absl::Seconds(60);
  absl::Time next_due = t0 + absl::Seconds(6 * u(rng));
  absl::Time last_start = absl::InfinitePast();
  absl::Time last_upper_point = absl::InfinitePast();
  bool natural_gc = false;
  absl::Time natural_at = absl::InfinitePast();
  std::optional<absl::Time> critical_since, warning_since;
  bool listed_now = false;

  auto exact_point = [&](absl::Time t, LiveSetSource source, double live) {
    LiveSetPoint p;
    p.time = t;
    p.source = source;
    p.live_bytes = static_cast<uint64_t>(live);
    p.capacity_bytes = static_cast<uint64_t>(max_bytes);
    p.max_bytes = static_cast<uint64_t>(max_bytes);
    (void)(*store)->AppendLiveSet(info.id, p);
    return watch.IngestLiveSet(p);
  };
  auto histogram = [&](absl::Time t, HistogramMode mode, double live, double pause) {
    Snapshot s;
    s.agent = info.id;
    s.time = t;
    s.cost = {mode, absl::Seconds(pause)};
    const double orders = (live - base) / 576;
    // -all counts garbage: eden's and the old generation's, spread over the churning classes.
    const double garbage = mode == HistogramMode::kLive ? 0 : eden_used + old_garbage;
    for (int c = 0; c < 200; ++c) {
      const double bytes = base / 220 * (1 + 0.02 * z(rng)) + garbage / 400 * u(rng);
      s.histogram.rows.push_back({"com.example.Steady" + std::to_string(c), "",
                                  static_cast<uint64_t>(bytes / 48), static_cast<uint64_t>(bytes)});
    }
    const double arrays = base / 22 + garbage / 2 * u(rng) + orders * 528;
    s.histogram.rows.push_back(
        {"byte[]", "java.base",
         static_cast<uint64_t>(base / 22 / 200 + garbage / 400 * u(rng) + orders),
         static_cast<uint64_t>(arrays)});
    s.histogram.rows.push_back({"java.lang.String", "java.base",
                                static_cast<uint64_t>(base / 22 / 24 + orders),
                                static_cast<uint64_t>(base / 22 + orders * 24)});
    if (orders >= 1) {
      s.histogram.rows.push_back({"com.example.Order", "", static_cast<uint64_t>(orders),
                                  static_cast<uint64_t>(orders * 24)});
    }
    (void)(*store)->Append(s);
    return watch.IngestHistogram(s);
  };
  auto note = [&](const daemon::WatchUpdate& w, double ts) {
    if (std::isnan(r.flagged) && !w.leaks.empty()) r.flagged = ts;
    if (!std::isnan(r.flagged) && w.leaks.empty() && listed_now) ++r.drops;
    listed_now = !w.leaks.empty();
    for (const diff::Leak& l : w.leaks) r.ids.insert(l.id);
    for (const diff::Leak& l : w.leaks) {
      if (std::isnan(r.named) && l.main_class == "com.example.Order") r.named = ts;
    }
    const bool critical = w.exhaustion && w.exhaustion->estimate < absl::Minutes(30);
    const bool warning = w.exhaustion && w.exhaustion->estimate < absl::Hours(12);
    const absl::Time t = t0 + absl::Seconds(ts);
    if (!critical) critical_since.reset();
    if (!warning) warning_since.reset();
    if (critical && !critical_since) critical_since = t;
    if (warning && !warning_since) warning_since = t;
  };

  const double step = 2;  // the daemon's gc_sample_interval
  for (double ts = step; ts < exhaust_seconds * 1.2; ts += step) {
    const absl::Time t = t0 + absl::Seconds(ts);
    live_at = base + rate * ts;
    if (live_at >= oom_at) {
      r.oom = ts;
      break;
    }
    // Young collections in this step: eden fills with garbage and leak.
    eden_used += alloc * step;
    bool young = false;
    while (eden_used >= eden) {
      eden_used -= eden;
      old_garbage += 0.02 * eden;
      young = true;
    }
    daemon::WatchUpdate w;
    bool have = false;
    if (young) {
      const double upper = live_at + old_garbage;
      if (watch.IngestUpperBound(t, static_cast<uint64_t>(upper),
                                 static_cast<uint64_t>(max_bytes))) {
        if (last_start != absl::InfinitePast())
          next_due = std::min(next_due, last_start + absl::Seconds(10));
      }
      if (upper >= 0.45 * max_bytes) {
        // A concurrent cycle and its mixed collections: the old generation's garbage goes.
        old_garbage = 0;
        w = exact_point(t, LiveSetSource::kConcurrentCycle, live_at * (1 + 0.003 * z(rng)));
        have = true;
        natural_gc = true;
        natural_at = t;
      } else if (t - last_upper_point >= absl::Minutes(1)) {
        last_upper_point = t;
        LiveSetPoint p;
        p.time = t;
        p.source = LiveSetSource::kYoungUpperBound;
        p.live_bytes = static_cast<uint64_t>(upper);
        p.max_bytes = static_cast<uint64_t>(max_bytes);
        (void)(*store)->AppendLiveSet(info.id, p);
        w = watch.IngestLiveSet(p);
        have = true;
      }
    }
    if (watch.WantsConfirmation() && last_start != absl::InfinitePast()) {
      next_due = std::min(next_due, last_start + watch.ConfirmationSpacing());
    }
    if (t >= next_due) {
      const uint64_t post = static_cast<uint64_t>(live_at);
      const uint64_t used = static_cast<uint64_t>(live_at + old_garbage + eden_used);
      const bool natural =
          natural_gc && t - natural_at <= absl::Seconds(4) && natural_at > last_start;
      collectors::PausePlan plan = watch.WantsConfirmation()
                                       ? budget.PlanConfirmation(t, natural, post, used)
                                       : budget.Plan(t, next_due, interval, natural, post, used);
      if (plan.mode.has_value()) {
        const HistogramMode mode = *plan.mode;
        const double pause = mode == HistogramMode::kLive ? 1.5 * live_at / kGiB
                                                          : 0.4 * static_cast<double>(used) / kGiB;
        budget.Spend(t, mode, absl::Seconds(std::max(pause, 0.005)));
        r.pause += pause;
        last_start = t;
        if (mode == HistogramMode::kLive) {
          old_garbage = 0;
          eden_used = 0;
          w = exact_point(t + absl::Milliseconds(1), LiveSetSource::kFullGc, live_at);
          note(w, ts);
        }
        w = histogram(t + absl::Milliseconds(2), mode, live_at, pause);
        have = true;
        next_due = t + interval * (0.9 + 0.2 * u(rng));
        if (watch.WantsConfirmation())
          next_due = std::min(next_due, t + watch.ConfirmationSpacing());
      } else {
        next_due = plan.retry_at;
      }
    }
    if (have) note(w, ts);
    // Prometheus holds the rule for its `for`, then fires within a scrape and an evaluation.
    if (critical_since && std::isnan(r.critical) && t - *critical_since >= absl::Minutes(1)) {
      r.critical = ts + 30;
    }
    if (warning_since && std::isnan(r.warning) && t - *warning_since >= absl::Minutes(10)) {
      r.warning = ts + 30;
    }
    if (std::isnan(r.half_forecast) && live_at >= 0.5 * max_bytes) {
      const daemon::WatchUpdate now = watch.Current();
      r.half_actual = (oom_at - live_at) / rate;
      r.half_forecast = now.exhaustion ? absl::ToDoubleSeconds(now.exhaustion->estimate) : INFINITY;
    }
  }
  store->reset();
  return r;
}

double Median(std::vector<double> v) {
  std::vector<double> finite;
  for (double x : v) {
    if (!std::isnan(x)) finite.push_back(x);
  }
  if (finite.empty()) return NAN;
  std::sort(finite.begin(), finite.end());
  return finite[finite.size() / 2];
}

std::string Time(double s) {
  if (std::isnan(s)) return "never";
  if (s < 120) return std::to_string(static_cast<int>(std::round(s))) + " s";
  if (s < 7200) return std::to_string(static_cast<int>(std::round(s / 60))) + " min";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f h", s / 3600);
  return buf;
}

}  // namespace
}  // namespace heapwatch

int main(int argc, char** argv) {
  using namespace heapwatch;
  spdlog::set_level(spdlog::level::off);
  int seeds = 10;
  std::vector<double> sizes = {256, 2048, 8192};
  std::vector<double> hours = {0.25, 2, 24};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    std::vector<double>* list = flag == "--sizes-mib" ? &sizes
                                : flag == "--hours"   ? &hours
                                                      : nullptr;
    if (flag == "--seeds") {
      seeds = std::atoi(argv[i + 1]);
    } else if (list != nullptr) {
      list->clear();
      for (absl::string_view part : absl::StrSplit(argv[i + 1], ',')) {
        double v;
        if (absl::SimpleAtod(part, &v)) list->push_back(v);
      }
    } else {
      std::fprintf(stderr, "usage: %s [--seeds N] [--sizes-mib A,B] [--hours X,Y]\n", argv[0]);
      return 2;
    }
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "exhaustion_sim.XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return 1;
  std::printf(
      "heap      exhausted in  listed    named     critical  warning   lead (critical)  lead "
      "(warning)  "
      "pause share  leak ids  drops  seeds\n");
  std::vector<double> errors;
  for (double mib : sizes) {
    for (double h : hours) {
      std::vector<double> listed, named, critical, warning, lead_c, lead_w, share, ids, drops;
      for (int seed = 0; seed < seeds; ++seed) {
        const std::string dir = tmpl + "/run";
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        const Result r = Run(mib * kMiB, h * 3600, seed, dir);
        listed.push_back(r.flagged);
        named.push_back(r.named);
        critical.push_back(r.critical);
        warning.push_back(r.warning);
        lead_c.push_back(r.oom - r.critical);
        lead_w.push_back(r.oom - r.warning);
        share.push_back(r.pause / r.oom);
        ids.push_back(static_cast<double>(r.ids.size()));
        drops.push_back(r.drops);
        if (!std::isnan(r.half_actual)) errors.push_back(r.half_forecast / r.half_actual - 1);
      }
      std::printf("%-9s %-13s %-9s %-9s %-9s %-9s %-16s %-15s %.3f %%      %-9.0f %-6.0f %d\n",
                  (mib < 1024 ? std::to_string(static_cast<int>(mib)) + " MiB"
                              : std::to_string(static_cast<int>(mib / 1024)) + " GiB")
                      .c_str(),
                  Time(h * 3600).c_str(), Time(Median(listed)).c_str(), Time(Median(named)).c_str(),
                  Time(Median(critical)).c_str(), Time(Median(warning)).c_str(),
                  Time(Median(lead_c)).c_str(), Time(Median(lead_w)).c_str(), 100 * Median(share),
                  *std::max_element(ids.begin(), ids.end()),
                  *std::max_element(drops.begin(), drops.end()), seeds);
      std::fflush(stdout);
    }
  }
  std::sort(errors.begin(), errors.end());
  if (!errors.empty()) {
    auto q = [&](double p) { return errors[static_cast<size_t>(p * (errors.size() - 1))]; };
    std::printf(
        "\nforecast at half-full vs the real time left (estimate / actual - 1), %zu runs: min "
        "%+.1f %%, "
        "p10 %+.1f %%, median %+.1f %%, p90 %+.1f %%, max %+.1f %%\n",
        errors.size(), 100 * q(0), 100 * q(0.1), 100 * q(0.5), 100 * q(0.9), 100 * q(1));
  }
  std::filesystem::remove_all(tmpl);
  return 0;
}
