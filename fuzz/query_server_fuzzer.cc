// libFuzzer target over the gRPC query service's handlers (daemon/query_server.h). Once per process
// it builds what the daemon serves from: a real SnapshotStore (LMDB) in a fresh temporary directory
// holding two agents' snapshots, dump records, a drill-down report and two dump summaries; an
// AgentTable in which one agent is live with a suspect and a leak; a real LeakDetector behind
// ExplainSuspect; a real Escalation (manual only: no agent is ever handed to it, so nothing is
// dumped); and a real QueryServer on 127.0.0.1:0. Each input's first byte picks one of the
// service's eleven methods and the rest is that method's request as serialized protobuf bytes
// (libprotobuf-mutator is not packaged in Debian): bytes that protobuf rejects are skipped, the
// others are sent through the real channel. Every call must come back (deadline 10 s) with a status
// other than UNKNOWN (what gRPC reports for a handler that threw) and the server must stay up.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "collectors/attach.h"
#include "common/clock.h"
#include "daemon/agent_table.h"
#include "daemon/config.h"
#include "daemon/escalation.h"
#include "daemon/metrics.h"
#include "daemon/query_server.h"
#include "diff/leak_detector.h"
#include "google/protobuf/stubs/logging.h"
#include "grpcpp/grpcpp.h"
#include "heapwatch/records/v1/records.pb.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "proto/time_util.h"
#include "storage/snapshot_store.h"

namespace {

using namespace heapwatch;
namespace v1 = ::heapwatch::v1;

const AgentId kLive{"host-1-a"};
const AgentId kDown{"host-2-b"};
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr char kLeakId[] = "L00000000002a";
constexpr char kDoneId[] = "20231114T221320.000000Z";
constexpr char kOlderId[] = "20231114T220000.000000Z";
constexpr char kFailedId[] = "20231114T222000.000000Z";

void Check(bool ok, const std::string& what) {
  if (!ok) {
    fprintf(stderr, "query_server_fuzzer setup: %s\n", what.c_str());
    abort();
  }
}

// Everything the server needs; built once, never destroyed (gRPC's threads outlive main's statics).
struct Fixture {
  std::string dir;
  std::unique_ptr<storage::SnapshotStore> store;
  daemon::AgentTable agents;
  daemon::Metrics metrics;
  std::mutex detector_mu;
  std::unique_ptr<diff::LeakDetector> detector;
  std::unique_ptr<daemon::Escalation> escalation;
  std::unique_ptr<daemon::QueryServer> server;
  std::unique_ptr<v1::QueryService::Stub> stub;

  static AgentInfo Info(const AgentId& id, int64_t pid, const std::string& main_class) {
    AgentInfo info;
    info.id = id;
    info.host = "host";
    info.pid = pid;
    info.main_class = main_class;
    info.jvm_version = "17.0.15";
    info.start_time = kT0 - absl::Hours(1);
    return info;
  }

  void Append(const AgentId& agent, absl::Time t,
              std::vector<std::tuple<std::string, uint64_t, uint64_t>> rows) {
    Snapshot s;
    s.agent = agent;
    s.time = t;
    for (auto& [name, instances, bytes] : rows) {
      s.histogram.rows.push_back({name, "", instances, bytes});
      s.histogram.total_instances += instances;
      s.histogram.total_bytes += bytes;
    }
    Status st = store->Append(s);
    Check(st.ok(), st.ToString());
  }

  void Put(const std::string& table, const std::string& key, const google::protobuf::Message& m) {
    Status st = store->PutRecord(table, key, m.SerializeAsString());
    Check(st.ok(), st.ToString());
  }

  static v1::ExtendedDump Dump(const char* id, v1::ExtendedDumpState state) {
    v1::ExtendedDump d;
    d.set_agent(kLive.value);
    d.set_dump_id(id);
    d.set_state(state);
    d.set_trigger(v1::EXTENDED_DUMP_TRIGGER_SUSPECT);
    d.add_suspect_classes("Leak");
    d.add_report_classes("Leak");
    proto::ToTimestamp(kT0 + absl::Seconds(120), d.mutable_requested_time());
    d.set_file_bytes(12'345'678);
    return d;
  }

  static records::v1::ExtendedDumpSummary Summary(const std::string& dump_id, uint64_t leaks) {
    records::v1::ExtendedDumpSummary s;
    s.set_agent(kLive.value);
    s.set_dump_id(dump_id);
    s.mutable_totals()->set_reachable_shallow_bytes(500 + 100 * leaks);
    records::v1::DumpClassRow* leak = s.add_classes();
    leak->set_class_name("Leak");
    leak->set_instances(leaks);
    leak->set_shallow_bytes(100 * leaks);
    leak->set_retained_bytes(150 * leaks);
    records::v1::DumpOwnerRow* owner = s.add_owners();
    owner->set_class_name("java.util.ArrayList");
    owner->add_path("sticky class com.example.Leaky");
    owner->add_path("static LEAKS");
    owner->set_retained_bytes(150 * leaks);
    owner->set_objects(1);
    return s;
  }

  Fixture() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/heapwatch-qfuzz-XXXXXX");
    Check(mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
    dir = tmpl;
    storage::StoreOptions options;
    options.dir = dir + "/data";
    options.background_retention = false;
    auto opened = storage::SnapshotStore::Open(options);
    Check(opened.ok(), opened.status().ToString());
    store = *std::move(opened);

    AgentInfo live = Info(kLive, 1, "com.example.Leaky");
    Check(store->PutAgent(live).ok(), "PutAgent");
    Check(store->PutAgent(Info(kDown, 2, "com.example.Old")).ok(), "PutAgent");
    Append(kLive, kT0, {{"Leak", 10, 1000}, {"Cache", 5, 500}, {"Gone", 1, 100}});
    Append(kLive, kT0 + absl::Seconds(60),
           {{"Leak", 20, 2000}, {"Cache", 5, 500}, {"Gone", 1, 100}});
    Append(kLive, kT0 + absl::Seconds(120),
           {{"Leak", 30, 3000}, {"Cache", 5, 500}, {"New", 2, 64}});
    Append(kDown, kT0, {{"Foo", 1, 16}});
    Append(kDown, kT0 + absl::Seconds(60), {{"Foo", 2, 32}});
    detector = std::make_unique<diff::LeakDetector>(diff::LeakOptions(), live.start_time);
    for (int i = 0; i < 3; ++i) {
      auto snapshot = store->ReadSnapshot(kLive, kT0 + absl::Seconds(60 * i));
      Check(snapshot.ok(), snapshot.status().ToString());
      detector->Observe(*snapshot);
    }

    Put("xdump", absl::StrCat(kLive.value, "/", kDoneId),
        Dump(kDoneId, v1::EXTENDED_DUMP_STATE_DONE));
    Put("xdump", absl::StrCat(kLive.value, "/", kOlderId),
        Dump(kOlderId, v1::EXTENDED_DUMP_STATE_DONE));
    v1::ExtendedDump failed = Dump(kFailedId, v1::EXTENDED_DUMP_STATE_FAILED);
    failed.set_error("JVM exited during the dump");
    Put("xdump", absl::StrCat(kLive.value, "/", kFailedId), failed);
    v1::DrillDownReport report;
    report.set_agent(kLive.value);
    report.set_class_name("Leak");
    *report.mutable_dump() = Dump(kDoneId, v1::EXTENDED_DUMP_STATE_DONE);
    report.set_instances(30);
    report.set_shallow_bytes(3000);
    report.set_retained_bytes(4500);
    v1::AccumulationPoint* point = report.add_accumulation_points();
    point->mutable_object()->set_object_id(0x2000);
    point->mutable_object()->set_class_name("java.util.ArrayList");
    point->mutable_object()->set_retained_bytes(4500);
    point->set_share(1.0);
    point->mutable_path()->set_found(true);
    Put("xreport", absl::StrCat(kLive.value, "/Leak/", kDoneId), report);
    Put("xsummary", absl::StrCat(kLive.value, "/", kOlderId), Summary(kOlderId, 10));
    Put("xsummary", absl::StrCat(kLive.value, "/", kDoneId), Summary(kDoneId, 30));

    daemon::AgentStatus status;
    status.info = live;
    status.state = daemon::AgentState::kUp;
    status.last_snapshot_time = kT0 + absl::Seconds(120);
    status.next_collection = kT0 + absl::Seconds(180);
    diff::Suspect suspect;
    suspect.class_name = "Leak";
    suspect.score = 0.9;
    suspect.first_seen = kT0 + absl::Seconds(120);
    suspect.growth_bytes_per_second = 16.5;
    suspect.bytes = 3000;
    suspect.instances = 30;
    suspect.leak = kLeakId;
    status.suspects = {suspect};
    diff::Leak leak;
    leak.id = kLeakId;
    leak.main_class = "Leak";
    leak.classes = {{"Leak", 3000, 16.5}};
    leak.bytes = 3000;
    leak.growth_bytes_per_second = 16.5;
    leak.score = 0.9;
    leak.first_seen = kT0 + absl::Seconds(120);
    status.leaks = {leak};
    agents.Put(status);

    daemon::EscalationConfig config;
    config.enabled = true;
    config.automatic = false;
    auto started = daemon::Escalation::Start(config, dir + "/data", collectors::AttachOptions(),
                                             store.get(), &metrics, Clock::Real());
    Check(started.ok(), started.status().ToString());
    escalation = *std::move(started);

    auto serving = daemon::QueryServer::Start(
        "127.0.0.1:0", store.get(), &agents, &metrics, escalation.get(),
        [this](const AgentId& agent,
               std::string_view class_name) -> std::optional<diff::Explanation> {
          if (agent != kLive) return std::nullopt;
          std::lock_guard<std::mutex> lock(detector_mu);
          return detector->Explain(class_name);
        });
    Check(serving.ok(), serving.status().ToString());
    server = *std::move(serving);
    stub = v1::QueryService::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", server->port()),
                                                         grpc::InsecureChannelCredentials()));
    // The store's files are open; removing the directory at exit leaves nothing behind.
    static std::string cleanup_dir = dir;
    atexit([] { std::filesystem::remove_all(cleanup_dir); });
  }
};

Fixture* fixture = nullptr;

template <typename Request, typename Response>
void Call(grpc::Status (v1::QueryService::Stub::*method)(grpc::ClientContext*, const Request&,
                                                         Response*),
          const uint8_t* data, size_t size) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  Response response;
  grpc::Status status = ((*fixture->stub).*method)(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::UNKNOWN ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    fprintf(stderr, "%s: %d %s\n", Request::descriptor()->name().c_str(),
            static_cast<int>(status.error_code()), status.error_message().c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // protobuf logs every proto3 string field with invalid UTF-8 it rejects (such an input is
  // skipped, as gRPC would reject it before any handler); millions of such lines would drown the
  // fuzzer's own output.
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  fixture = new Fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > (1 << 20)) return 0;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  using S = v1::QueryService::Stub;
  switch (data[0] % 11) {
    case 0:
      Call(&S::ListAgents, body, n);
      break;
    case 1:
      Call(&S::ListSuspects, body, n);
      break;
    case 2:
      Call(&S::ListLeaks, body, n);
      break;
    case 3:
      Call(&S::ExplainSuspect, body, n);
      break;
    case 4:
      Call(&S::GetClassHistory, body, n);
      break;
    case 5:
      Call(&S::DiffSnapshots, body, n);
      break;
    case 6:
      Call(&S::GetReport, body, n);
      break;
    case 7:
      Call(&S::ListReports, body, n);
      break;
    case 8:
      Call(&S::TriggerExtendedDump, body, n);
      break;
    case 9:
      Call(&S::DiffExtendedDumps, body, n);
      break;
    case 10:
      Call(&S::GetLiveSet, body, n);
      break;
  }
  return 0;
}
