#include "daemon/query_server.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "auth/grpc_auth.h"
#include "daemon/record_retention.h"
#include "diff/snapshot_diff.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "proto/time_util.h"
#include "proto/trend_proto.h"

namespace heapwatch::daemon {
namespace {

namespace v1 = ::heapwatch::v1;

constexpr char kServiceName[] = "heapwatch.v1.QueryService";

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status InvalidArgument(std::string message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::move(message));
}

v1::AgentState ToProto(AgentState state) {
  switch (state) {
    case AgentState::kUp:
      return v1::AGENT_STATE_UP;
    case AgentState::kUnreachable:
      return v1::AGENT_STATE_UNREACHABLE;
    case AgentState::kDown:
      return v1::AGENT_STATE_DOWN;
  }
  return v1::AGENT_STATE_UNSPECIFIED;
}

v1::AgentKind ToProto(AgentKind kind) {
  switch (kind) {
    case AgentKind::kLocalAttach:
      return v1::AGENT_KIND_LOCAL_ATTACH;
    case AgentKind::kRegistered:
      return v1::AGENT_KIND_REGISTERED;
  }
  return v1::AGENT_KIND_UNSPECIFIED;
}

v1::ClassChange ToProto(diff::ClassChange change) {
  switch (change) {
    case diff::ClassChange::kChanged:
      return v1::CLASS_CHANGE_CHANGED;
    case diff::ClassChange::kNew:
      return v1::CLASS_CHANGE_NEW;
    case diff::ClassChange::kVanished:
      return v1::CLASS_CHANGE_VANISHED;
    case diff::ClassChange::kUnchanged:
      return v1::CLASS_CHANGE_UNCHANGED;
  }
  return v1::CLASS_CHANGE_UNSPECIFIED;
}

void FillLabels(const AgentInfo& info, v1::Agent* out) {
  out->set_agent(info.id.value);
  out->set_kind(ToProto(info.kind));
  out->set_host(info.host);
  out->set_pid(info.pid);
  out->set_main_class(info.main_class);
  out->set_jvm_version(info.jvm_version);
  proto::SetTimestamp(info.start_time, out, &v1::Agent::mutable_start_time);
  out->mutable_labels()->insert(info.labels.begin(), info.labels.end());
}

}  // namespace

namespace {

v1::HistogramMode ToProto(HistogramMode mode) {
  switch (mode) {
    case HistogramMode::kLive: return v1::HISTOGRAM_MODE_LIVE;
    case HistogramMode::kAll: return v1::HISTOGRAM_MODE_ALL;
    case HistogramMode::kAllAfterGc: return v1::HISTOGRAM_MODE_ALL_AFTER_GC;
    case HistogramMode::kUnknown: break;
  }
  return v1::HISTOGRAM_MODE_UNSPECIFIED;
}

void LiveSetToProto(const LiveSetPoint& p, v1::LiveSetPoint* out) {
  proto::SetTimestamp(p.time, out, &v1::LiveSetPoint::mutable_time);
  switch (p.source) {
    case LiveSetSource::kFullGc: out->set_source(v1::LIVE_SET_SOURCE_FULL_GC); break;
    case LiveSetSource::kConcurrentCycle: out->set_source(v1::LIVE_SET_SOURCE_CONCURRENT_CYCLE); break;
    case LiveSetSource::kYoungUpperBound: out->set_source(v1::LIVE_SET_SOURCE_YOUNG_UPPER_BOUND); break;
  }
  out->set_live_bytes(p.live_bytes);
  out->set_capacity_bytes(p.capacity_bytes);
  out->set_max_bytes(p.max_bytes);
}

// Reads an optional Timestamp field; unset gives `absent`.
StatusOr<absl::Time> TimeField(bool has, const google::protobuf::Timestamp& ts, absl::Time absent,
                               std::string_view name) {
  if (!has) return absent;
  auto t = proto::FromTimestamp(ts);
  if (!t.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": ", t.status().message()));
  }
  return *t;
}

// The inclusive [start_time, end_time] range of a request; unset ends are open. InvalidArgument for
// a malformed time or an inverted range.
template <typename Request>
StatusOr<std::pair<absl::Time, absl::Time>> TimeRange(const Request& request) {
  HW_ASSIGN_OR_RETURN(absl::Time from, TimeField(request.has_start_time(), request.start_time(),
                                                 absl::InfinitePast(), "start_time"));
  HW_ASSIGN_OR_RETURN(absl::Time to, TimeField(request.has_end_time(), request.end_time(),
                                               absl::InfiniteFuture(), "end_time"));
  if (from > to) return absl::InvalidArgumentError("start_time is after end_time");
  return std::make_pair(from, to);
}

class QueryServiceImpl final : public v1::QueryService::Service {
 public:
  QueryServiceImpl(storage::SnapshotStore* store, const AgentTable* agents, Metrics* metrics,
                   Escalation* escalation, SuspectExplainer explainer,
                   std::shared_ptr<const auth::GrpcAuthorizer> authorizer)
      : store_(store),
        agents_(agents),
        metrics_(metrics),
        escalation_(escalation),
        explainer_(std::move(explainer)),
        authorizer_(std::move(authorizer)) {}

  grpc::Status ListAgents(grpc::ServerContext* context, const v1::ListAgentsRequest* request,
                          v1::ListAgentsResponse* response) override {
    if (grpc::Status s = Authorize(*context, "ListAgents"); !s.ok()) return Count("ListAgents", s);
    return Count("ListAgents", DoListAgents(*request, response));
  }
  grpc::Status ListSuspects(grpc::ServerContext* context, const v1::ListSuspectsRequest* request,
                            v1::ListSuspectsResponse* response) override {
    if (grpc::Status s = Authorize(*context, "ListSuspects"); !s.ok())
      return Count("ListSuspects", s);
    return Count("ListSuspects", DoListSuspects(*request, response));
  }
  grpc::Status ListLeaks(grpc::ServerContext* context, const v1::ListLeaksRequest* request,
                         v1::ListLeaksResponse* response) override {
    if (grpc::Status s = Authorize(*context, "ListLeaks"); !s.ok()) return Count("ListLeaks", s);
    return Count("ListLeaks", DoListLeaks(*request, response));
  }
  grpc::Status ExplainSuspect(grpc::ServerContext* context,
                              const v1::ExplainSuspectRequest* request,
                              v1::ExplainSuspectResponse* response) override {
    if (grpc::Status s = Authorize(*context, "ExplainSuspect"); !s.ok())
      return Count("ExplainSuspect", s);
    return Count("ExplainSuspect", DoExplainSuspect(*request, response));
  }
  grpc::Status GetClassHistory(grpc::ServerContext* context,
                               const v1::GetClassHistoryRequest* request,
                               v1::GetClassHistoryResponse* response) override {
    if (grpc::Status s = Authorize(*context, "GetClassHistory"); !s.ok())
      return Count("GetClassHistory", s);
    return Count("GetClassHistory", DoGetClassHistory(*request, response));
  }
  grpc::Status DiffSnapshots(grpc::ServerContext* context, const v1::DiffSnapshotsRequest* request,
                             v1::DiffSnapshotsResponse* response) override {
    if (grpc::Status s = Authorize(*context, "DiffSnapshots"); !s.ok())
      return Count("DiffSnapshots", s);
    return Count("DiffSnapshots", DoDiffSnapshots(*request, response));
  }
  grpc::Status GetReport(grpc::ServerContext* context, const v1::GetReportRequest* request,
                         v1::GetReportResponse* response) override {
    if (grpc::Status s = Authorize(*context, "GetReport"); !s.ok()) return Count("GetReport", s);
    return Count("GetReport", DoGetReport(*request, response));
  }
  grpc::Status ListReports(grpc::ServerContext* context, const v1::ListReportsRequest* request,
                           v1::ListReportsResponse* response) override {
    if (grpc::Status s = Authorize(*context, "ListReports"); !s.ok())
      return Count("ListReports", s);
    return Count("ListReports", DoListReports(*request, response));
  }
  grpc::Status CollectHistogram(grpc::ServerContext* context,
                                const v1::CollectHistogramRequest* request,
                                v1::CollectHistogramResponse* response) override {
    if (grpc::Status s = Authorize(*context, "CollectHistogram"); !s.ok())
      return Count("CollectHistogram", s);
    return Count("CollectHistogram", DoCollectHistogram(*context, *request, response));
  }
  void SetHistogramCollector(HistogramCollector collector) {
    std::lock_guard<std::mutex> lock(collector_mu_);
    collector_ = std::move(collector);
  }
  grpc::Status TriggerExtendedDump(grpc::ServerContext* context,
                                   const v1::TriggerExtendedDumpRequest* request,
                                   v1::TriggerExtendedDumpResponse* response) override {
    if (grpc::Status s = Authorize(*context, "TriggerExtendedDump"); !s.ok())
      return Count("TriggerExtendedDump", s);
    return Count("TriggerExtendedDump", DoTriggerExtendedDump(*request, response));
  }
  grpc::Status DiffExtendedDumps(grpc::ServerContext* context,
                                 const v1::DiffExtendedDumpsRequest* request,
                                 v1::DiffExtendedDumpsResponse* response) override {
    if (grpc::Status s = Authorize(*context, "DiffExtendedDumps"); !s.ok())
      return Count("DiffExtendedDumps", s);
    return Count("DiffExtendedDumps", DoDiffExtendedDumps(*request, response));
  }
  grpc::Status GetLiveSet(grpc::ServerContext* context, const v1::GetLiveSetRequest* request,
                          v1::GetLiveSetResponse* response) override {
    if (grpc::Status s = Authorize(*context, "GetLiveSet"); !s.ok()) return Count("GetLiveSet", s);
    return Count("GetLiveSet", DoGetLiveSet(*request, response));
  }
  grpc::Status GetStoreStats(grpc::ServerContext* context, const v1::GetStoreStatsRequest*,
                             v1::GetStoreStatsResponse* response) override {
    if (grpc::Status s = Authorize(*context, "GetStoreStats"); !s.ok()) {
      return Count("GetStoreStats", s);
    }
    return Count("GetStoreStats", DoGetStoreStats(response));
  }

 private:
  friend class InProcessQuery;  // the web pages call the Do* functions directly
  // The credential check (auth/grpc_auth.h) of `method`, OK when no authorizer is configured.
  grpc::Status Authorize(const grpc::ServerContext& context, std::string_view method) const {
    if (authorizer_ == nullptr) return grpc::Status::OK;
    return authorizer_->Check(context, absl::StrCat("/", kServiceName, "/", std::string(method)));
  }

  grpc::Status Count(std::string_view method, grpc::Status status) {
    metrics_->RecordGrpcRequest(
        method, absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
    return status;
  }

  grpc::Status DoListAgents(const v1::ListAgentsRequest&, v1::ListAgentsResponse* response) {
    std::map<AgentId, v1::Agent> out;
    for (const AgentStatus& s : agents_->List()) {
      v1::Agent& a = out[s.info.id];
      FillLabels(s.info, &a);
      a.set_state(ToProto(s.state));
      proto::SetTimestamp(s.last_snapshot_time, &a, &v1::Agent::mutable_last_snapshot_time);
      a.set_last_error(s.last_error);
      a.set_consecutive_failures(s.consecutive_failures);
      proto::SetTimestamp(s.next_collection, &a, &v1::Agent::mutable_next_collection_time);
      proto::ToDuration(s.last_collection_duration, a.mutable_last_collection_duration());
      a.set_all_objects(s.all_objects);
      a.set_suspect_count(static_cast<uint32_t>(s.suspects.size()));
      a.set_last_histogram_mode(ToProto(s.last_cost.mode));
      proto::ToDuration(s.last_cost.pause, a.mutable_last_pause());
      proto::ToDuration(s.total_pause, a.mutable_total_pause());
      proto::SetTimestamp(s.watched_since, &a, &v1::Agent::mutable_watched_since_time);
      proto::ToDuration(s.planned_interval, a.mutable_planned_interval());
      a.set_budget_note(s.budget_note);
      a.set_over_budget(s.over_budget);
      if (s.live_set.has_value()) LiveSetToProto(*s.live_set, a.mutable_live_set());
      if (s.class_loading.has_value()) {
        v1::ClassLoading* c = a.mutable_class_loading();
        proto::SetTimestamp(s.class_loading->time, c, &v1::ClassLoading::mutable_time);
        c->set_loaded_classes(s.class_loading->loaded_classes);
        c->set_unloaded_classes(s.class_loading->unloaded_classes);
        c->set_metaspace_used_bytes(s.class_loading->metaspace_used_bytes);
        c->set_metaspace_capacity_bytes(s.class_loading->metaspace_capacity_bytes);
        c->set_class_space_used_bytes(s.class_loading->class_space_used_bytes);
      }
      if (s.live_set_growth.has_value()) {
        a.set_live_set_growth_bytes_per_second(s.live_set_growth->growth_bytes_per_second);
        proto::ToDuration(s.live_set_growth->time_scale, a.mutable_live_set_time_scale());
        proto::SetTimestamp(s.live_set_growth->first_seen, &a,
                            &v1::Agent::mutable_live_set_growing_since_time);
      }
      if (s.heap_exhaustion.has_value()) {
        proto::HeapExhaustionToProto(*s.heap_exhaustion, a.mutable_heap_exhaustion());
      }
    }
    auto stored = store_->ListAgents();
    if (!stored.ok()) return ToGrpc(stored.status());
    for (const AgentInfo& info : *stored) {
      if (out.count(info.id)) continue;
      v1::Agent& a = out[info.id];
      FillLabels(info, &a);
      a.set_state(v1::AGENT_STATE_DOWN);
      auto times = store_->ListSnapshotTimes(info.id, absl::InfinitePast(), absl::InfiniteFuture());
      if (times.ok() && !times->empty())
        proto::SetTimestamp(times->back(), &a, &v1::Agent::mutable_last_snapshot_time);
    }
    for (auto& [id, a] : out) *response->add_agents() = std::move(a);
    return grpc::Status::OK;
  }

  grpc::Status DoListSuspects(const v1::ListSuspectsRequest& request,
                              v1::ListSuspectsResponse* response) {
    std::vector<AgentStatus> agents;
    if (!request.agent().empty()) {
      AgentId id(request.agent());
      if (auto live = agents_->Get(id)) {
        agents.push_back(*std::move(live));
      } else {
        auto stored = store_->GetAgent(id);
        if (!stored.ok())
          return ToGrpc(stored.status());  // NOT_FOUND, or INVALID_ARGUMENT for a bad id
        // Known but down: no current suspects.
      }
    } else {
      agents = agents_->List();
    }
    std::vector<v1::Suspect> suspects;
    for (const AgentStatus& a : agents) {
      for (const diff::Suspect& s : a.suspects) {
        proto::SuspectToProto(a.info.id, s, a.last_snapshot_time, &suspects.emplace_back());
      }
    }
    std::stable_sort(suspects.begin(), suspects.end(),
                     [](const v1::Suspect& x, const v1::Suspect& y) {
                       if (x.score() != y.score()) return x.score() > y.score();
                       if (x.agent() != y.agent()) return x.agent() < y.agent();
                       return x.class_name() < y.class_name();
                     });
    for (auto& s : suspects) *response->add_suspects() = std::move(s);
    return grpc::Status::OK;
  }

  // The live agents a request names: all of them for an empty `agent`, the one named when it is
  // live, none when it is known from the store but down. NOT_FOUND for an unknown agent.
  grpc::Status SelectAgents(const std::string& agent, std::vector<AgentStatus>* out) {
    if (agent.empty()) {
      *out = agents_->List();
      return grpc::Status::OK;
    }
    AgentId id(agent);
    if (auto live = agents_->Get(id)) {
      out->push_back(*std::move(live));
      return grpc::Status::OK;
    }
    return ToGrpc(store_->GetAgent(id).status());  // NOT_FOUND, or INVALID_ARGUMENT for a bad id
  }

  grpc::Status DoListLeaks(const v1::ListLeaksRequest& request, v1::ListLeaksResponse* response) {
    std::vector<AgentStatus> agents;
    if (grpc::Status s = SelectAgents(request.agent(), &agents); !s.ok()) return s;
    std::vector<v1::Leak> leaks;
    for (const AgentStatus& a : agents) {
      for (const diff::Leak& l : a.leaks) {
        proto::LeakToProto(a.info.id, l, a.last_snapshot_time, a.analysed_dump_id, &leaks.emplace_back());
      }
    }
    std::stable_sort(leaks.begin(), leaks.end(), [](const v1::Leak& x, const v1::Leak& y) {
      if (x.growth_bytes_per_second() != y.growth_bytes_per_second()) {
        return x.growth_bytes_per_second() > y.growth_bytes_per_second();
      }
      if (x.agent() != y.agent()) return x.agent() < y.agent();
      return x.leak() < y.leak();
    });
    for (auto& l : leaks) *response->add_leaks() = std::move(l);
    return grpc::Status::OK;
  }

  grpc::Status DoExplainSuspect(const v1::ExplainSuspectRequest& request,
                                v1::ExplainSuspectResponse* response) {
    if (request.class_name().empty()) return InvalidArgument("class_name is required");
    if (grpc::Status s = CheckAgent(request.agent()); !s.ok()) return s;
    if (!explainer_) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "this server has no trend detectors to explain suspects with");
    }
    const AgentId id(request.agent());
    std::optional<diff::Explanation> e = explainer_(id, request.class_name());
    if (!e.has_value()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("agent ", request.agent(),
                                       " is not live: only a running JVM's trend detector can "
                                       "explain its classes"));
    }
    proto::ExplanationToProto(id, *e, response);
    return grpc::Status::OK;
  }

  grpc::Status DoGetClassHistory(const v1::GetClassHistoryRequest& request,
                                 v1::GetClassHistoryResponse* response) {
    if (request.agent().empty()) return InvalidArgument("agent is required");
    if (request.class_name().empty()) return InvalidArgument("class_name is required");
    auto range = TimeRange(request);
    if (!range.ok()) return ToGrpc(range.status());
    auto samples = store_->ClassHistory(AgentId(request.agent()), request.class_name(),
                                        range->first, range->second);
    if (!samples.ok()) return ToGrpc(samples.status());
    response->set_agent(request.agent());
    response->set_class_name(request.class_name());
    for (const storage::ClassSample& s : *samples) {
      v1::ClassSample* out = response->add_samples();
      proto::SetTimestamp(s.time, out, &v1::ClassSample::mutable_time);
      out->set_bytes(s.bytes);
      out->set_instances(s.instances);
      out->set_mode(ToProto(s.cost.mode));
      if (s.cost.mode != HistogramMode::kUnknown) proto::ToDuration(s.cost.pause, out->mutable_pause());
    }
    return grpc::Status::OK;
  }

  // The store's use per kind (daemon/record_retention.h StoreUsage), one read transaction.
  grpc::Status DoGetStoreStats(v1::GetStoreStatsResponse* response) {
    auto usage = StoreUsage(*store_);
    if (!usage.ok()) return ToGrpc(usage.status());
    uint64_t used = 0;
    for (const storage::KindUsage& u : *usage) {
      v1::StoreKindUsage* k = response->add_kinds();
      k->set_kind(u.kind);
      k->set_records(u.records);
      k->set_bytes(u.bytes);
      used += u.bytes;
    }
    response->set_used_bytes(used);
    response->set_max_bytes(store_->options().retention_bytes);
    if (auto disk = store_->DiskBytes(); disk.ok()) response->set_disk_bytes(*disk);
    if (escalation_ != nullptr) {
      response->set_kept_raw_dump_bytes(escalation_->KeptRawDumpBytes());
      response->set_max_dump_disk_bytes(escalation_->MaxDumpDiskBytes());
    }
    return grpc::Status::OK;
  }

  grpc::Status DoGetLiveSet(const v1::GetLiveSetRequest& request,
                            v1::GetLiveSetResponse* response) {
    if (request.agent().empty()) return InvalidArgument("agent is required");
    auto range = TimeRange(request);
    if (!range.ok()) return ToGrpc(range.status());
    auto points = store_->ReadLiveSet(AgentId(request.agent()), range->first, range->second, 0);
    if (!points.ok()) return ToGrpc(points.status());
    response->set_agent(request.agent());
    for (const LiveSetPoint& p : *points) LiveSetToProto(p, response->add_points());
    return grpc::Status::OK;
  }

  grpc::Status DoDiffSnapshots(const v1::DiffSnapshotsRequest& request,
                               v1::DiffSnapshotsResponse* response) {
    if (request.agent().empty()) return InvalidArgument("agent is required");
    const AgentId agent(request.agent());
    auto to_time =
        TimeField(request.has_to_time(), request.to_time(), absl::InfiniteFuture(), "to_time");
    if (!to_time.ok()) return ToGrpc(to_time.status());
    auto from_time = TimeField(request.has_from_time(), request.from_time(), absl::InfiniteFuture(),
                               "from_time");
    if (!from_time.ok()) return ToGrpc(from_time.status());
    if (request.has_from_time() && request.has_to_time() && *from_time > *to_time) {
      return InvalidArgument("from_time is after to_time");
    }
    auto to = store_->ReadLatestAtOrBefore(agent, *to_time);
    if (!to.ok()) return ToGrpc(to.status());
    if (!to->has_value()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, request.has_to_time()
                                                           ? "no snapshot at or before to_time"
                                                           : "the agent has no snapshot");
    }
    StatusOr<std::optional<Snapshot>> from =
        request.has_from_time()
            ? store_->ReadLatestAtOrBefore(agent, *from_time)
            : store_->ReadLatestAtOrBefore(agent, (*to)->time - absl::Microseconds(1));
    if (!from.ok()) return ToGrpc(from.status());
    if (!from->has_value()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          request.has_from_time()
                              ? "no snapshot at or before from_time"
                              : "the agent has only one snapshot at or before to_time");
    }
    diff::SnapshotDiff d = diff::DiffSnapshots(**from, **to);
    response->set_agent(request.agent());
    proto::SetTimestamp(d.from, response, &v1::DiffSnapshotsResponse::mutable_from_time);
    proto::SetTimestamp(d.to, response, &v1::DiffSnapshotsResponse::mutable_to_time);
    uint64_t before_bytes = 0, after_bytes = 0, before_instances = 0, after_instances = 0;
    for (const diff::ClassDelta& c : d.classes) {
      before_bytes += c.bytes_before;
      after_bytes += c.bytes_after;
      before_instances += c.instances_before;
      after_instances += c.instances_after;
    }
    response->set_total_before_bytes(before_bytes);
    response->set_total_after_bytes(after_bytes);
    response->set_total_delta_bytes(d.total_bytes_delta);
    response->set_total_before_instances(before_instances);
    response->set_total_after_instances(after_instances);
    response->set_total_delta_instances(d.total_instances_delta);
    response->set_class_count(static_cast<uint32_t>(d.classes.size()));
    size_t limit = request.max_classes() == 0
                       ? d.classes.size()
                       : std::min<size_t>(request.max_classes(), d.classes.size());
    for (size_t i = 0; i < limit; ++i) {
      const diff::ClassDelta& c = d.classes[i];
      v1::ClassDelta* out = response->add_classes();
      out->set_class_name(c.class_name);
      out->set_change(ToProto(c.change));
      out->set_before_instances(c.instances_before);
      out->set_after_instances(c.instances_after);
      out->set_delta_instances(c.instances_delta);
      out->set_before_bytes(c.bytes_before);
      out->set_after_bytes(c.bytes_after);
      out->set_delta_bytes(c.bytes_delta);
    }
    return grpc::Status::OK;
  }

  // NOT_FOUND unless the agent is live or in the store; INVALID_ARGUMENT for an empty id.
  grpc::Status CheckAgent(const std::string& agent) {
    if (agent.empty()) return InvalidArgument("agent is required");
    AgentId id(agent);
    if (agents_->Get(id)) return grpc::Status::OK;
    return ToGrpc(store_->GetAgent(id).status());
  }

  grpc::Status NoEscalation() {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this server has no escalation (extended dumps) configured");
  }

  grpc::Status DoGetReport(const v1::GetReportRequest& request, v1::GetReportResponse* response) {
    if (!request.leak().empty()) return DoGetLeakReport(request, response);
    if (request.class_name().empty()) return InvalidArgument("class_name or leak is required");
    if (grpc::Status s = CheckAgent(request.agent()); !s.ok()) return s;
    if (escalation_ == nullptr) return NoEscalation();
    auto report = request.dump_id().empty()
                      ? escalation_->GetReport(AgentId(request.agent()), request.class_name())
                      : escalation_->GetReportOfDump(AgentId(request.agent()), request.class_name(),
                                                     request.dump_id());
    if (!report.ok()) return ToGrpc(report.status());
    *response->mutable_report() = *std::move(report);
    return grpc::Status::OK;
  }

  // GetReport by leak id: the report of the leak's main class, else of its biggest class with one.
  grpc::Status DoGetLeakReport(const v1::GetReportRequest& request,
                               v1::GetReportResponse* response) {
    if (!request.class_name().empty()) return InvalidArgument("set class_name or leak, not both");
    if (!request.dump_id().empty())
      return InvalidArgument("dump_id goes with class_name, not leak");
    if (grpc::Status s = CheckAgent(request.agent()); !s.ok()) return s;
    if (escalation_ == nullptr) return NoEscalation();
    const AgentId id(request.agent());
    std::optional<AgentStatus> status = agents_->Get(id);
    const diff::Leak* leak = nullptr;
    if (status.has_value()) {
      for (const diff::Leak& l : status->leaks) {
        if (l.id == request.leak()) leak = &l;
      }
    }
    if (leak == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("agent ", request.agent(), " has no current leak ",
                                       request.leak(), " (see ListLeaks)"));
    }
    std::vector<std::string> candidates = {leak->main_class};
    for (const diff::LeakClass& c : leak->classes) {  // by bytes, descending
      if (c.class_name != leak->main_class) candidates.push_back(c.class_name);
    }
    Status last = absl::NotFoundError("no class of the leak has a report");
    for (const std::string& c : candidates) {
      auto report = escalation_->GetReport(id, c);
      if (report.ok()) {
        *response->mutable_report() = *std::move(report);
        proto::LeakToProto(id, *leak, status->last_snapshot_time, status->analysed_dump_id,
                    response->mutable_report()->mutable_leak());
        return grpc::Status::OK;
      }
      if (report.status().code() != absl::StatusCode::kNotFound) return ToGrpc(report.status());
      last = report.status();
    }
    return ToGrpc(absl::NotFoundError(absl::StrCat("no class of leak ", request.leak(),
                                                   " has a report yet: ", last.message())));
  }

  grpc::Status DoListReports(const v1::ListReportsRequest& request,
                             v1::ListReportsResponse* response) {
    if (grpc::Status s = CheckAgent(request.agent()); !s.ok()) return s;
    if (escalation_ == nullptr) return NoEscalation();
    auto dumps = escalation_->ListDumps(AgentId(request.agent()));
    if (!dumps.ok()) return ToGrpc(dumps.status());
    response->set_agent(request.agent());
    for (auto& d : *dumps) *response->add_dumps() = std::move(d);
    return grpc::Status::OK;
  }

  grpc::Status DoCollectHistogram(const grpc::ServerContext& context,
                                  const v1::CollectHistogramRequest& request,
                                  v1::CollectHistogramResponse* response) {
    if (request.agent().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "agent must not be empty");
    }
    HistogramMode mode;
    switch (request.mode()) {
      case v1::HISTOGRAM_MODE_UNSPECIFIED:
      case v1::HISTOGRAM_MODE_LIVE:
        mode = HistogramMode::kLive;
        break;
      case v1::HISTOGRAM_MODE_ALL:
        mode = HistogramMode::kAll;
        break;
      default:
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "mode must be LIVE or ALL");
    }
    HistogramCollector collector;
    {
      std::lock_guard<std::mutex> lock(collector_mu_);
      collector = collector_;
    }
    if (!collector) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "this server collects nothing");
    }
    const absl::Time deadline =
        std::min(absl::FromChrono(context.deadline()), absl::Now() + absl::Minutes(2));
    auto snapshot = collector(AgentId(request.agent()), mode, deadline);
    if (!snapshot.ok()) return ToGrpc(snapshot.status());
    // The time as stored (microseconds, rounded down: storage/snapshot_store.h), so that it names
    // the stored snapshot (history, diff --at); the agent's clock and absl::Now() have nanoseconds.
    proto::ToTimestamp(absl::FromUnixMicros(absl::ToUnixMicros(snapshot->time)),
                       response->mutable_time());
    response->set_mode(ToProto(snapshot->cost.mode));
    proto::ToDuration(snapshot->cost.pause, response->mutable_pause());
    response->set_classes(static_cast<uint32_t>(snapshot->histogram.rows.size()));
    response->set_total_instances(snapshot->histogram.total_instances);
    response->set_total_bytes(snapshot->histogram.total_bytes);
    return grpc::Status::OK;
  }

  grpc::Status DoTriggerExtendedDump(const v1::TriggerExtendedDumpRequest& request,
                                     v1::TriggerExtendedDumpResponse* response) {
    if (grpc::Status s = CheckAgent(request.agent()); !s.ok()) return s;
    if (escalation_ == nullptr) return NoEscalation();
    auto dump = escalation_->Trigger(AgentId(request.agent()));
    if (!dump.ok()) return ToGrpc(dump.status());
    *response->mutable_dump() = *std::move(dump);
    return grpc::Status::OK;
  }

  grpc::Status DoDiffExtendedDumps(const v1::DiffExtendedDumpsRequest& request,
                                   v1::DiffExtendedDumpsResponse* response) {
    if (grpc::Status s = CheckAgent(request.agent()); !s.ok()) return s;
    if (escalation_ == nullptr) return NoEscalation();
    auto diff = escalation_->Diff(AgentId(request.agent()), request.from_dump(),
                                  request.to_dump(), request.max_classes(), request.max_owners());
    if (!diff.ok()) return ToGrpc(diff.status());
    *response->mutable_diff() = *std::move(diff);
    return grpc::Status::OK;
  }

  storage::SnapshotStore* const store_;
  const AgentTable* const agents_;
  Metrics* const metrics_;
  Escalation* const escalation_;  // may be null
  const SuspectExplainer explainer_;  // may be null
  const std::shared_ptr<const auth::GrpcAuthorizer> authorizer_;  // may be null: no check
  std::mutex collector_mu_;
  HistogramCollector collector_;  // guarded by collector_mu_; may be empty
};

// The web pages' view of the service: each call runs the RPC's own Do* function.
class InProcessQuery final : public web::QuerySource {
 public:
  explicit InProcessQuery(QueryServiceImpl* service) : service_(service) {}
  Status ListAgents(const v1::ListAgentsRequest& q, v1::ListAgentsResponse* r) override {
    return FromGrpc(service_->DoListAgents(q, r));
  }
  Status ListLeaks(const v1::ListLeaksRequest& q, v1::ListLeaksResponse* r) override {
    return FromGrpc(service_->DoListLeaks(q, r));
  }
  Status GetLiveSet(const v1::GetLiveSetRequest& q, v1::GetLiveSetResponse* r) override {
    return FromGrpc(service_->DoGetLiveSet(q, r));
  }
  Status GetClassHistory(const v1::GetClassHistoryRequest& q,
                         v1::GetClassHistoryResponse* r) override {
    return FromGrpc(service_->DoGetClassHistory(q, r));
  }
  Status ListReports(const v1::ListReportsRequest& q, v1::ListReportsResponse* r) override {
    return FromGrpc(service_->DoListReports(q, r));
  }
  Status GetReport(const v1::GetReportRequest& q, v1::GetReportResponse* r) override {
    return FromGrpc(service_->DoGetReport(q, r));
  }
  Status DiffExtendedDumps(const v1::DiffExtendedDumpsRequest& q,
                           v1::DiffExtendedDumpsResponse* r) override {
    return FromGrpc(service_->DoDiffExtendedDumps(q, r));
  }

 private:
  static Status FromGrpc(const grpc::Status& s) {
    if (s.ok()) return absl::OkStatus();
    return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  QueryServiceImpl* const service_;
};

}  // namespace

struct QueryServer::Impl {
  std::unique_ptr<QueryServiceImpl> service;
  std::unique_ptr<InProcessQuery> in_process;
  std::shared_ptr<GrpcCallLimiter> limiter;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  bool shut_down = false;
};

QueryServer::QueryServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

QueryServer::~QueryServer() { Shutdown(absl::ZeroDuration()); }

StatusOr<std::unique_ptr<QueryServer>> QueryServer::Start(
    const std::string& listen, storage::SnapshotStore* store, const AgentTable* agents,
    Metrics* metrics, Escalation* escalation, SuspectExplainer explainer,
    std::shared_ptr<const auth::GrpcAuthorizer> authorizer, const GrpcLimits& limits,
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  if (listen.empty()) return absl::InvalidArgumentError("empty gRPC listen address");
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<QueryServiceImpl>(store, agents, metrics, escalation,
                                                     std::move(explainer), std::move(authorizer));
  impl->in_process = std::make_unique<InProcessQuery>(impl->service.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which would let a second daemon bind the same port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl->limiter = ApplyGrpcLimits(limits, metrics, &builder);
  builder.AddListeningPort(listen,
                           credentials != nullptr ? credentials : grpc::InsecureServerCredentials(),
                           &impl->port);
  builder.RegisterService(impl->service.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for gRPC on ", listen, " (address in use or invalid)"));
  }
  impl->server->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  return std::unique_ptr<QueryServer>(new QueryServer(std::move(impl)));
}

int QueryServer::port() const { return impl_->port; }

void QueryServer::SetHistogramCollector(HistogramCollector collector) {
  impl_->service->SetHistogramCollector(std::move(collector));
}

int QueryServer::calls_in_flight() const { return impl_->limiter->calls_in_flight(); }

web::QuerySource* QueryServer::query_source() const { return impl_->in_process.get(); }

void QueryServer::Shutdown(absl::Duration grace) {
  if (impl_ == nullptr || impl_->shut_down || impl_->server == nullptr) return;
  impl_->shut_down = true;
  impl_->server->GetHealthCheckService()->Shutdown();  // every service NOT_SERVING
  impl_->server->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
  impl_->server->Wait();
}

}  // namespace heapwatch::daemon
