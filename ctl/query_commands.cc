#include "ctl/query_commands.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ctl/leak_output.h"
#include "ctl/output.h"
#include "ctl/rpc.h"
#include "ctl/suspect_table.h"
#include "ctl/time_arg.h"
#include "heapwatch/ctl/v1/json.pb.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;

absl::Time TimeOf(bool has, const google::protobuf::Timestamp& ts) {
  if (!has) return absl::InfinitePast();
  auto t = proto::FromTimestamp(ts);
  return t.ok() ? *t : absl::InfinitePast();
}

std::string KindName(v1::AgentKind kind) {
  switch (kind) {
    case v1::AGENT_KIND_LOCAL_ATTACH:
      return "attach";
    case v1::AGENT_KIND_REGISTERED:
      return "registered";
    default:
      return "unknown";
  }
}

std::string StateName(v1::AgentState state) {
  switch (state) {
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

namespace json = ::heapwatch::ctl::v1;

// Copies an optional Timestamp field (unset stays unset, and is omitted from the JSON).
template <typename M>
void CopyTime(bool has, const google::protobuf::Timestamp& from, M* msg,
              google::protobuf::Timestamp* (M::*mutable_field)()) {
  if (has) *(msg->*mutable_field)() = from;
}

using Client = RpcClient;

// Sets request's start_time / end_time from --since / --until (empty: unset). Prints a usage error
// naming `command` and returns false when one does not parse.
template <typename Request>
bool SetTimeRange(const char* command, const std::string& since, const std::string& until,
                  const GlobalOptions& global, std::ostream& err, Request* request) {
  // (mutable_*_time() would mark an unset end as set, so the field is only touched when given.)
  const struct {
    const std::string& text;
    const char* flag;
    bool bare_duration_means_ago;
    google::protobuf::Timestamp* (Request::*field)();
  } ends[] = {{since, "--since", true, &Request::mutable_start_time},
              {until, "--until", false, &Request::mutable_end_time}};
  for (const auto& end : ends) {
    if (end.text.empty()) continue;
    auto t = ParseTimeArg(end.text, global.now, end.bare_duration_means_ago);
    if (!t.ok()) {
      err << "heapwatchctl " << command << ": " << end.flag << ": " << t.status().message() << "\n";
      return false;
    }
    proto::ToTimestamp(*t, (request->*end.field)());
  }
  return true;
}

std::string ModeName(v1::HistogramMode mode) {
  switch (mode) {
    case v1::HISTOGRAM_MODE_LIVE:
      return "live";
    case v1::HISTOGRAM_MODE_ALL:
      return "all";
    case v1::HISTOGRAM_MODE_ALL_AFTER_GC:
      return "all_after_gc";
    default:
      return "unknown";
  }
}

std::string SourceName(v1::LiveSetSource source) {
  switch (source) {
    case v1::LIVE_SET_SOURCE_FULL_GC:
      return "full_gc";
    case v1::LIVE_SET_SOURCE_CONCURRENT_CYCLE:
      return "concurrent_cycle";
    case v1::LIVE_SET_SOURCE_YOUNG_UPPER_BOUND:
      return "young_upper_bound";
    default:
      return "unknown";
  }
}

double Seconds(const google::protobuf::Duration& d) {
  return static_cast<double>(d.seconds()) + static_cast<double>(d.nanos()) * 1e-9;
}

// Pause heapwatch caused / wall time since it started watching the agent; 0 when unknown.
double PausedFraction(const v1::Agent& a, absl::Time now) {
  const absl::Time since = TimeOf(a.has_watched_since_time(), a.watched_since_time());
  if (since == absl::InfinitePast() || now <= since) return 0;
  return Seconds(a.total_pause()) / absl::ToDoubleSeconds(now - since);
}

std::string Interval(double seconds) {
  if (seconds <= 0) return "-";
  return HumanDuration(absl::Seconds(seconds));
}

// ---- agents ----

// "k1=v1,k2=v2" in key order (a protobuf map has none).
std::string LabelsText(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::string text;
  for (const auto& [k, v] : sorted) absl::StrAppend(&text, text.empty() ? "" : ",", k, "=", v);
  return text;
}

int RunAgents(const GlobalOptions& global, std::ostream& out, std::ostream& err) {
  Client client(global);
  v1::ListAgentsResponse response;
  grpc::Status status =
      client.Call(&v1::QueryService::Stub::ListAgents, v1::ListAgentsRequest(), &response);
  if (!status.ok()) return ServerError(err, global, "ListAgents", status);
  if (global.json) {
    json::AgentList root;
    for (const v1::Agent& a : response.agents()) {
      json::Agent* o = root.add_agents();
      o->set_agent(a.agent());
      o->set_pid(static_cast<int32_t>(a.pid()));
      o->set_host(a.host());
      o->set_main_class(a.main_class());
      o->set_state(StateName(a.state()));
      o->set_kind(KindName(a.kind()));
      o->mutable_labels()->insert(a.labels().begin(), a.labels().end());
      o->set_jvm_version(a.jvm_version());
      CopyTime(a.has_start_time(), a.start_time(), o, &json::Agent::mutable_start_time);
      CopyTime(a.has_last_snapshot_time(), a.last_snapshot_time(), o,
               &json::Agent::mutable_last_snapshot_time);
      CopyTime(a.has_next_collection_time(), a.next_collection_time(), o,
               &json::Agent::mutable_next_collection_time);
      o->set_last_error(a.last_error());
      o->set_consecutive_failures(a.consecutive_failures());
      o->set_all_objects(a.all_objects());
      o->set_suspect_count(a.suspect_count());
      if (a.state() != v1::AGENT_STATE_DOWN) {
        o->set_histogram_mode(ModeName(a.last_histogram_mode()));
        o->set_last_pause_seconds(Seconds(a.last_pause()));
        o->set_total_pause_seconds(Seconds(a.total_pause()));
        o->set_paused_fraction(PausedFraction(a, global.now));
        o->set_planned_interval_seconds(Seconds(a.planned_interval()));
        o->set_budget_note(a.budget_note());
        o->set_over_budget(a.over_budget());
      }
      if (a.has_live_set()) {
        o->set_live_bytes(static_cast<double>(a.live_set().live_bytes()));
        o->set_heap_capacity_bytes(static_cast<double>(a.live_set().capacity_bytes()));
        o->set_heap_max_bytes(static_cast<double>(a.live_set().max_bytes()));
      }
      o->set_live_set_growth_bytes_per_second(a.live_set_growth_bytes_per_second());
      if (a.has_live_set_growing_since_time()) {
        *o->mutable_live_set_time_scale() = a.live_set_time_scale();
        *o->mutable_live_set_growing_since_time() = a.live_set_growing_since_time();
      }
      if (a.has_class_loading()) {
        const v1::ClassLoading& c = a.class_loading();
        o->set_classes_loaded(static_cast<double>(c.loaded_classes() >= c.unloaded_classes()
                                                      ? c.loaded_classes() - c.unloaded_classes()
                                                      : 0));
        o->set_classes_unloaded(static_cast<double>(c.unloaded_classes()));
        o->set_metaspace_used_bytes(static_cast<double>(c.metaspace_used_bytes()));
      }
      if (a.has_heap_exhaustion()) {
        *o->mutable_heap_exhaustion() = HeapExhaustionToJson(a.heap_exhaustion());
      }
    }
    return EmitJson(root, out, err);
  }
  Table table(
      {"AGENT", "STATE", "KIND", "PID", "MAIN CLASS", "JVM", "LAST SNAPSHOT", "SUSPECTS", "MODE",
       "LAST PAUSE", "PAUSED", "INTERVAL", "LIVE SET", "HEAP FULL IN", "LAST ERROR"},
      {3, 7, 9, 10, 11, 12});
  std::vector<std::string> notes;
  for (const v1::Agent& a : response.agents()) {
    const bool down = a.state() == v1::AGENT_STATE_DOWN;
    std::optional<json::HeapExhaustion> forecast;
    if (!down && a.has_heap_exhaustion()) forecast = HeapExhaustionToJson(a.heap_exhaustion());
    table.AddRow(
        {a.agent(), StateName(a.state()), KindName(a.kind()), std::to_string(a.pid()),
         a.main_class(), a.jvm_version(),
         ShortTime(TimeOf(a.has_last_snapshot_time(), a.last_snapshot_time())),
         down ? "-" : std::to_string(a.suspect_count()),
         down ? "-" : ModeName(a.last_histogram_mode()),
         down ? "-" : absl::StrFormat("%.3fs", Seconds(a.last_pause())),
         down ? "-" : absl::StrFormat("%.3f%%", 100 * PausedFraction(a, global.now)),
         down ? "-" : Interval(Seconds(a.planned_interval())),
         a.has_live_set() ? HumanBytes(static_cast<double>(a.live_set().live_bytes())) : "-",
         forecast.has_value() ? HeapFullIn(*forecast) : "-", a.last_error()});
    if (!a.labels().empty()) notes.push_back(a.agent() + ": labels " + LabelsText(a.labels()));
    if (!down && !a.budget_note().empty()) notes.push_back(a.agent() + ": " + a.budget_note());
    if (!down && a.has_class_loading()) {
      const v1::ClassLoading& c = a.class_loading();
      notes.push_back(absl::StrFormat(
          "%s: classes loaded %d (unloaded %d), metaspace %s", a.agent(),
          c.loaded_classes() >= c.unloaded_classes() ? c.loaded_classes() - c.unloaded_classes()
                                                     : 0,
          c.unloaded_classes(),
          c.metaspace_used_bytes() > 0 ? HumanBytes(static_cast<double>(c.metaspace_used_bytes()))
                                       : std::string("- (no GC yet)")));
    }
    if (!down && a.has_live_set_growing_since_time()) {
      notes.push_back(absl::StrFormat("%s: the live set keeps growing, %s/s since %s", a.agent(),
                                      HumanBytes(a.live_set_growth_bytes_per_second()),
                                      ShortTime(TimeOf(true, a.live_set_growing_since_time()))));
    }
    if (forecast.has_value()) {
      // The durations count from the newest live-set point, so the time they end at is absolute.
      const absl::Time computed = TimeOf(forecast->has_computed_time(), forecast->computed_time());
      std::string note = absl::StrCat(a.agent(), ": ", HeapForecastLine(*forecast));
      if (computed != absl::InfinitePast()) {
        absl::StrAppend(&note, ", full about ",
                        ShortTime(computed + absl::Seconds(forecast->estimate_seconds())),
                        absl::StrFormat(" (a line through %d live-set points up to %s)",
                                        forecast->points(), ShortTime(computed)));
      }
      notes.push_back(std::move(note));
    }
  }
  if (table.rows() == 0) {
    out << "no agents\n";
  } else {
    table.Print(out);
    for (const std::string& n : notes) out << n << "\n";
  }
  return kExitOk;
}

// ---- suspects ----

struct SuspectsArgs {
  std::string agent;
  std::vector<std::string> explain;  // AGENT CLASS, or empty
};

int RunExplain(const std::string& agent, const std::string& class_name, const GlobalOptions& global,
               std::ostream& out, std::ostream& err) {
  Client client(global);
  v1::ExplainSuspectRequest request;
  request.set_agent(agent);
  request.set_class_name(class_name);
  v1::ExplainSuspectResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::ExplainSuspect, request, &response);
  if (!status.ok()) return ServerError(err, global, "ExplainSuspect", status);
  if (global.json) return EmitJson(response, out, err);
  out << RenderExplanation(response);
  return kExitOk;
}

int RunSuspects(const SuspectsArgs& args, const GlobalOptions& global, std::ostream& out,
                std::ostream& err) {
  if (!args.explain.empty()) {
    if (!args.agent.empty() && args.agent != args.explain[0]) {
      err << "heapwatchctl suspects: --agent " << args.agent << " and --explain " << args.explain[0]
          << " name different agents\n";
      return kExitUsage;
    }
    return RunExplain(args.explain[0], args.explain[1], global, out, err);
  }
  Client client(global);
  v1::ListSuspectsRequest request;
  request.set_agent(args.agent);
  v1::ListSuspectsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::ListSuspects, request, &response);
  if (!status.ok()) return ServerError(err, global, "ListSuspects", status);
  json::SuspectList root;
  for (const v1::Suspect& s : response.suspects()) *root.add_suspects() = SuspectToJson(s);
  if (global.json) return EmitJson(root, out, err);
  PrintSuspectTable(root.suspects(), out);
  return kExitOk;
}

// ---- leaks ----

struct LeaksArgs {
  std::string agent;
};

int RunLeaks(const LeaksArgs& args, const GlobalOptions& global, std::ostream& out,
             std::ostream& err) {
  Client client(global);
  v1::ListLeaksRequest request;
  request.set_agent(args.agent);
  v1::ListLeaksResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::ListLeaks, request, &response);
  if (!status.ok()) return ServerError(err, global, "ListLeaks", status);
  json::LeakList root;
  for (const v1::Leak& l : response.leaks()) *root.add_leaks() = LeakToJson(l);
  if (global.json) return EmitJson(root, out, err);
  PrintLeakTable(root.leaks(), out);
  return kExitOk;
}

// ---- history ----

struct HistoryArgs {
  std::string agent;
  std::string class_name;
  std::string since;
  std::string until;
};

int RunHistory(const HistoryArgs& args, const GlobalOptions& global, std::ostream& out,
               std::ostream& err) {
  v1::GetClassHistoryRequest request;
  request.set_agent(args.agent);
  request.set_class_name(args.class_name);
  if (!SetTimeRange("history", args.since, args.until, global, err, &request)) return kExitUsage;
  Client client(global);
  v1::GetClassHistoryResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::GetClassHistory, request, &response);
  if (!status.ok()) return ServerError(err, global, "GetClassHistory", status);
  if (global.json) {
    json::History root;
    root.set_agent(response.agent());
    root.set_class_(response.class_name());
    for (const v1::ClassSample& s : response.samples()) {
      json::History::Point* p = root.add_points();
      CopyTime(s.has_time(), s.time(), p, &json::History::Point::mutable_time);
      p->set_bytes(static_cast<double>(s.bytes()));
      p->set_instances(static_cast<double>(s.instances()));
      p->set_mode(ModeName(s.mode()));
      p->set_pause_seconds(Seconds(s.pause()));
    }
    return EmitJson(root, out, err);
  }
  Table table({"TIME", "BYTES", "INSTANCES", "DELTA BYTES", "MODE", "PAUSE"}, {1, 2, 3, 5});
  double previous = 0;
  bool first = true;
  for (const v1::ClassSample& s : response.samples()) {
    double bytes = static_cast<double>(s.bytes());
    table.AddRow({Rfc3339(TimeOf(s.has_time(), s.time())), std::to_string(s.bytes()),
                  std::to_string(s.instances()), first ? "" : SignedHumanBytes(bytes - previous),
                  ModeName(s.mode()),
                  s.mode() == v1::HISTOGRAM_MODE_UNSPECIFIED
                      ? "-"
                      : absl::StrFormat("%.3fs", Seconds(s.pause()))});
    previous = bytes;
    first = false;
  }
  out << response.class_name() << " in " << response.agent() << ": " << table.rows()
      << " snapshots\n";
  if (table.rows() > 0) table.Print(out);
  return kExitOk;
}

// ---- liveset ----

struct LiveSetArgs {
  std::string agent;
  std::string since;
  std::string until;
};

int RunLiveSet(const LiveSetArgs& args, const GlobalOptions& global, std::ostream& out,
               std::ostream& err) {
  v1::GetLiveSetRequest request;
  request.set_agent(args.agent);
  if (!SetTimeRange("liveset", args.since, args.until, global, err, &request)) return kExitUsage;
  Client client(global);
  v1::GetLiveSetResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::GetLiveSet, request, &response);
  if (!status.ok()) return ServerError(err, global, "GetLiveSet", status);
  if (global.json) {
    json::LiveSet root;
    root.set_agent(response.agent());
    for (const v1::LiveSetPoint& p : response.points()) {
      json::LiveSet::Point* o = root.add_points();
      CopyTime(p.has_time(), p.time(), o, &json::LiveSet::Point::mutable_time);
      o->set_source(SourceName(p.source()));
      o->set_live_bytes(static_cast<double>(p.live_bytes()));
      o->set_capacity_bytes(static_cast<double>(p.capacity_bytes()));
      o->set_max_bytes(static_cast<double>(p.max_bytes()));
    }
    return EmitJson(root, out, err);
  }
  Table table({"TIME", "SOURCE", "LIVE", "COMMITTED", "MAX"}, {2, 3, 4});
  for (const v1::LiveSetPoint& p : response.points()) {
    table.AddRow({Rfc3339(TimeOf(p.has_time(), p.time())), SourceName(p.source()),
                  HumanBytes(static_cast<double>(p.live_bytes())),
                  HumanBytes(static_cast<double>(p.capacity_bytes())),
                  HumanBytes(static_cast<double>(p.max_bytes()))});
  }
  out << "live set of " << response.agent() << ": " << table.rows() << " points\n";
  if (table.rows() > 0) table.Print(out);
  return kExitOk;
}

// ---- diff ----

struct DiffArgs {
  std::string agent;
  std::string from;
  std::string to;
  uint32_t max = 20;
};

int RunDiff(const DiffArgs& args, const GlobalOptions& global, std::ostream& out,
            std::ostream& err) {
  v1::DiffSnapshotsRequest request;
  request.set_agent(args.agent);
  request.set_max_classes(args.max);
  for (auto [text, field, name] : {std::tuple{&args.from, request.mutable_from_time(), "--from"},
                                   std::tuple{&args.to, request.mutable_to_time(), "--to"}}) {
    if (text->empty()) continue;
    auto t = ParseTimeArg(*text, global.now, /*bare_duration_means_ago=*/false);
    if (!t.ok()) {
      err << "heapwatchctl diff: " << name << ": " << t.status().message() << "\n";
      return kExitUsage;
    }
    proto::ToTimestamp(*t, field);
  }
  if (args.from.empty()) request.clear_from_time();
  if (args.to.empty()) request.clear_to_time();
  Client client(global);
  v1::DiffSnapshotsResponse response;
  grpc::Status status = client.Call(&v1::QueryService::Stub::DiffSnapshots, request, &response);
  if (!status.ok()) return ServerError(err, global, "DiffSnapshots", status);
  if (global.json) {
    json::Diff root;
    root.set_agent(response.agent());
    CopyTime(response.has_from_time(), response.from_time(), &root, &json::Diff::mutable_from);
    CopyTime(response.has_to_time(), response.to_time(), &root, &json::Diff::mutable_to);
    root.set_total_before_bytes(static_cast<double>(response.total_before_bytes()));
    root.set_total_after_bytes(static_cast<double>(response.total_after_bytes()));
    root.set_total_delta_bytes(static_cast<double>(response.total_delta_bytes()));
    root.set_total_before_instances(static_cast<double>(response.total_before_instances()));
    root.set_total_after_instances(static_cast<double>(response.total_after_instances()));
    root.set_total_delta_instances(static_cast<double>(response.total_delta_instances()));
    root.set_class_count(response.class_count());
    for (const v1::ClassDelta& c : response.classes()) {
      json::Diff::ClassDelta* o = root.add_classes();
      o->set_class_(c.class_name());
      o->set_change(ClassChangeName(c.change()));
      o->set_before_bytes(static_cast<double>(c.before_bytes()));
      o->set_after_bytes(static_cast<double>(c.after_bytes()));
      o->set_delta_bytes(static_cast<double>(c.delta_bytes()));
      o->set_before_instances(static_cast<double>(c.before_instances()));
      o->set_after_instances(static_cast<double>(c.after_instances()));
      o->set_delta_instances(static_cast<double>(c.delta_instances()));
    }
    return EmitJson(root, out, err);
  }
  absl::Time from = TimeOf(response.has_from_time(), response.from_time());
  absl::Time to = TimeOf(response.has_to_time(), response.to_time());
  out << absl::StrFormat("%s: %s -> %s (%s), heap %s -> %s (%s), %d classes\n", response.agent(),
                         Rfc3339(from), Rfc3339(to), absl::FormatDuration(to - from),
                         HumanBytes(static_cast<double>(response.total_before_bytes())),
                         HumanBytes(static_cast<double>(response.total_after_bytes())),
                         SignedHumanBytes(static_cast<double>(response.total_delta_bytes())),
                         response.class_count());
  Table table(
      {"CLASS", "CHANGE", "BYTES BEFORE", "BYTES AFTER", "DELTA", "INSTANCES", "DELTA INST"},
      {2, 3, 4, 5, 6});
  for (const v1::ClassDelta& c : response.classes()) {
    table.AddRow({c.class_name(), ClassChangeName(c.change()), std::to_string(c.before_bytes()),
                  std::to_string(c.after_bytes()),
                  SignedHumanBytes(static_cast<double>(c.delta_bytes())),
                  std::to_string(c.after_instances()), Signed(c.delta_instances())});
  }
  table.Print(out);
  if (response.class_count() > static_cast<uint32_t>(response.classes_size())) {
    out << "(" << response.class_count() - response.classes_size()
        << " more classes; --max 0 shows all)\n";
  }
  return kExitOk;
}

}  // namespace

std::vector<Subcommand> AddQueryCommands(CLI::App& app) {
  std::vector<Subcommand> commands;

  CLI::App* agents =
      app.add_subcommand("agents", "List the JVM agents heapwatchd knows (live and down)");
  commands.push_back({agents, RunAgents});

  auto suspects_args = std::make_shared<SuspectsArgs>();
  CLI::App* suspects = app.add_subcommand(
      "suspects", "List current leak suspects, or explain why a class is (not) one");
  suspects->add_option("--agent", suspects_args->agent, "Only this agent");
  suspects
      ->add_option("--explain", suspects_args->explain,
                   "AGENT CLASS: per time scale, each trend test's value and threshold for CLASS")
      ->expected(2)
      ->type_name("AGENT CLASS");
  commands.push_back(
      {suspects, [suspects_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunSuspects(*suspects_args, g, o, e);
       }});

  auto leaks_args = std::make_shared<LeaksArgs>();
  CLI::App* leaks = app.add_subcommand(
      "leaks", "List current leaks: suspect classes grouped by cause, fastest growth first");
  leaks->add_option("--agent", leaks_args->agent, "Only this agent");
  commands.push_back(
      {leaks, [leaks_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunLeaks(*leaks_args, g, o, e);
       }});

  auto history_args = std::make_shared<HistoryArgs>();
  CLI::App* history = app.add_subcommand("history", "Bytes and instances of one class over time");
  history->add_option("agent", history_args->agent, "Agent id (see `heapwatchctl agents`)")
      ->required();
  history->add_option("class", history_args->class_name, "Class name, e.g. com.example.Cache$Entry")
      ->required();
  history->add_option("--since", history_args->since,
                      "Start: RFC 3339 time, or a duration before now (10m, -10m)");
  history->add_option("--until", history_args->until,
                      "End: RFC 3339 time or -DURATION (default: now)");
  commands.push_back(
      {history, [history_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunHistory(*history_args, g, o, e);
       }});

  auto liveset_args = std::make_shared<LiveSetArgs>();
  CLI::App* liveset = app.add_subcommand(
      "liveset", "An agent's live set over time (heap after old-generation collections)");
  liveset->add_option("agent", liveset_args->agent, "Agent id (see `heapwatchctl agents`)")
      ->required();
  liveset->add_option("--since", liveset_args->since,
                      "Start: RFC 3339 time, or a duration before now (10m, -10m)");
  liveset->add_option("--until", liveset_args->until,
                      "End: RFC 3339 time or -DURATION (default: now)");
  commands.push_back(
      {liveset, [liveset_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
         return RunLiveSet(*liveset_args, g, o, e);
       }});

  auto diff_args = std::make_shared<DiffArgs>();
  CLI::App* diff =
      app.add_subcommand("diff", "Per-class difference between two snapshots of an agent");
  diff->add_option("agent", diff_args->agent, "Agent id")->required();
  diff->add_option(
      "--from", diff_args->from,
      "Older snapshot: the newest at or before this time (RFC 3339 or -DURATION; default: "
      "the snapshot before --to)");
  diff->add_option("--to", diff_args->to,
                   "Newer snapshot: the newest at or before this time (default: the latest)");
  diff->add_option("--max", diff_args->max,
                   "Show at most this many classes, largest growth first; 0 = all")
      ->capture_default_str();
  commands.push_back({diff, [diff_args](const GlobalOptions& g, std::ostream& o, std::ostream& e) {
                        return RunDiff(*diff_args, g, o, e);
                      }});
  return commands;
}

}  // namespace heapwatch::ctl
