#include "daemon/agent_gateway.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "auth/grpc_auth.h"
#include "daemon/agent_messages.h"
#include "daemon/config.h"
#include "daemon/metrics.h"
#include "grpcpp/grpcpp.h"
#include "heapwatch/agent/v1/agent.grpc.pb.h"
#include "proto/time_util.h"
#include "spdlog/spdlog.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {
namespace {

namespace av1 = ::heapwatch::agent::v1;

grpc::Status Invalid(std::string message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::move(message));
}

grpc::Status ToGrpc(const Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string_view StateName(AgentState s) {
  switch (s) {
    case AgentState::kUp:
      return "up";
    case AgentState::kUnreachable:
      return "unreachable";
    case AgentState::kDown:
      return "down";
  }
  return "?";
}

}  // namespace

// The writing side of one Connect stream, shared by its handler (Registered, Ack) and the dump
// source (DumpRequest): gRPC allows one Write at a time, and none after the handler returned.
struct StreamWriter {
  std::mutex mu;
  grpc::ServerReaderWriter<av1::DaemonMessage, av1::AgentMessage>* rw = nullptr;  // guarded by mu
  bool closed = false;                                                            // guarded by mu
  bool Write(const av1::DaemonMessage& m) {
    std::lock_guard<std::mutex> lock(mu);
    return !closed && rw->Write(m);
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
  }
  bool is_closed() {
    std::lock_guard<std::mutex> lock(mu);
    return closed;
  }
};

// One extended dump the daemon asked an agent for (AgentDumpSource::WriteDump), from DumpRequest to
// the complete file. All fields guarded by mu.
struct PendingUpload {
  std::mutex mu;
  std::condition_variable cv;
  AgentId agent;
  std::string dump_id;
  std::string path, part_path;  // the final file; the file being received
  int fd = -1;                  // part_path, open for writing
  EVP_MD_CTX* sha = nullptr;    // SHA-256 over the bytes received so far (in order)
  bool ready = false;           // DumpReady received
  uint64_t size = 0;            // DumpReady.size_bytes
  std::string sha256;           // DumpReady.sha256 (32 bytes)
  bool gzip = false;
  absl::Duration pause = absl::ZeroDuration();
  uint64_t received = 0;
  bool uploading = false;  // an UploadDump call is running
  bool complete = false;   // renamed to `path`, SHA-256 checked
  std::string failed;      // why the dump failed (DumpFailed, checksum); empty while not failed
  bool abandoned = false;  // WriteDump returned: the upload is over whatever happens
  ~PendingUpload() {
    if (fd >= 0) close(fd);
    if (sha != nullptr) EVP_MD_CTX_free(sha);
  }
};

// One HistogramRequest the daemon sent (AgentGateway::CollectHistogram). Guarded by Impl::mu.
struct PendingHistogram {
  std::optional<Snapshot> stored;  // the answer, once stored
  std::string failed;              // HistogramFailed's reason, or why the stream ended
};

struct AgentGateway::Impl final : public av1::AgentGateway::Service {
  // One registered agent the gateway knows (open stream, or closed for less than down_after).
  struct Registered {
    AgentInfo info;
    grpc::ServerContext* stream = nullptr;  // the open Connect stream; null when closed
    uint64_t stream_no = 0;                 // which stream `stream` is
    absl::Time last_seen = absl::InfinitePast();
    absl::Time closed_at = absl::InfinitePast();
    AgentState state = AgentState::kUp;
    std::shared_ptr<StreamWriter> writer;  // of the open stream
  };

  AgentGatewayOptions options;
  storage::SnapshotStore* store = nullptr;
  RegisteredAgentSink* sink = nullptr;
  Metrics* metrics = nullptr;
  std::shared_ptr<const auth::GrpcAuthorizer> authorizer;
  std::shared_ptr<GrpcCallLimiter> limiter;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::string socket_path;  // UNIX socket, removed at shutdown

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;                 // guarded by mu
  std::map<AgentId, Registered> agents;  // guarded by mu
  uint64_t next_stream_no = 1;           // guarded by mu
  int open_streams = 0;                  // guarded by mu
  std::thread monitor;
  bool shut_down = false;
  // Dumps requested from agents, by (agent, dump id); guarded by mu.
  std::map<std::pair<AgentId, std::string>, std::shared_ptr<PendingUpload>> uploads;
  std::unique_ptr<DumpSource> dump_source;
  // Histograms requested from agents, by (agent, request id); guarded by mu, signalled on cv.
  std::map<std::pair<AgentId, uint64_t>, std::shared_ptr<PendingHistogram>> requested;
  uint64_t next_request_id = 1;  // guarded by mu

  // A requested histogram was stored (`snapshot`) or failed (`failed`): wakes its caller.
  void AnswerRequest(const AgentId& id, uint64_t request_id, const Snapshot* snapshot,
                     const std::string& failed) {
    if (request_id == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    auto it = requested.find({id, request_id});
    if (it == requested.end()) return;
    if (snapshot != nullptr) {
      it->second->stored = *snapshot;
    } else if (it->second->failed.empty()) {
      it->second->failed = failed.empty() ? "the agent's histogram failed" : failed;
    }
    cv.notify_all();
  }
  // The agent's stream ended: its requests cannot be answered any more.
  void FailRequests(const AgentId& id) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [key, p] : requested) {
      if (key.first == id && !p->stored.has_value() && p->failed.empty()) {
        p->failed = "the agent's stream ended before it answered";
      }
    }
    cv.notify_all();
  }

  StatusOr<Snapshot> CollectHistogram(const AgentId& id, HistogramMode mode, absl::Time deadline) {
    std::shared_ptr<StreamWriter> writer;
    uint64_t request_id;
    auto pending = std::make_shared<PendingHistogram>();
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = agents.find(id);
      if (it == agents.end()) {
        return absl::NotFoundError(absl::StrCat("no registered agent ", id.value));
      }
      if (it->second.stream == nullptr || it->second.writer == nullptr) {
        return absl::UnavailableError(absl::StrCat("agent ", id.value, " is not connected"));
      }
      writer = it->second.writer;
      request_id = next_request_id++;
      requested[{id, request_id}] = pending;
    }
    av1::DaemonMessage m;
    m.mutable_histogram_request()->set_request_id(request_id);
    m.mutable_histogram_request()->set_mode(mode == HistogramMode::kAll ? av1::HISTOGRAM_MODE_ALL
                                                                        : av1::HISTOGRAM_MODE_LIVE);
    const bool sent = writer->Write(m);
    std::unique_lock<std::mutex> lock(mu);
    if (sent) {
      cv.wait_until(lock, absl::ToChronoTime(deadline), [&] {
        return stopping || pending->stored.has_value() || !pending->failed.empty();
      });
    }
    requested.erase({id, request_id});
    if (pending->stored.has_value()) return *std::move(pending->stored);
    if (!sent) return absl::UnavailableError(absl::StrCat("agent ", id.value, " is not connected"));
    if (!pending->failed.empty()) {
      return absl::UnavailableError(absl::StrCat("agent ", id.value, ": ", pending->failed));
    }
    if (stopping) return absl::UnavailableError("heapwatchd is stopping");
    return absl::DeadlineExceededError(
        absl::StrCat("agent ", id.value, " stored no histogram before the deadline"));
  }

  grpc::Status Check(grpc::ServerContext* context, std::string_view method) const {
    if (authorizer == nullptr) return grpc::Status::OK;
    return authorizer->Check(*context, method);
  }

  void Refuse(std::string_view reason) {
    if (metrics != nullptr) metrics->RecordAgentRefusal(reason);
  }

  // The configuration of one agent: the daemon's collection settings, its own mode.
  av1::AgentConfig PushedConfig(const AgentInfo& info) const {
    av1::AgentConfig c;
    proto::ToDuration(options.histogram_interval, c.mutable_histogram_interval());
    c.set_mode(options.all_objects || sink->AllObjects(info) ? av1::HISTOGRAM_MODE_ALL
                                                             : av1::HISTOGRAM_MODE_LIVE);
    proto::ToDuration(options.histogram_interval * options.pause_budget, c.mutable_pause_budget());
    proto::ToDuration(options.heartbeat_interval, c.mutable_heartbeat_interval());
    c.set_histogram_after_old_gc(true);
    c.set_pause_budget_fraction(options.pause_budget);
    proto::ToDuration(options.pause_budget_window, c.mutable_pause_budget_window());
    proto::ToDuration(std::max(options.max_interval, options.histogram_interval),
                      c.mutable_max_interval());
    return c;
  }

  // A heartbeat's pause-budget fields, checked: the note one printable line of at most 400
  // bytes (PrintableText: cut at a code point, control characters '?'), durations positive.
  static AgentBudgetReport BudgetReportOf(const av1::Heartbeat& hb) {
    AgentBudgetReport r;
    r.note = PrintableText(hb.budget_note(), 400);
    r.over_budget = hb.over_budget();
    if (hb.has_planned_interval()) {
      auto d = proto::FromDuration(hb.planned_interval());
      if (d.ok() && *d > absl::ZeroDuration()) r.planned_interval = *d;
    }
    if (hb.has_total_pause()) {
      auto d = proto::FromDuration(hb.total_pause());
      if (d.ok() && *d > absl::ZeroDuration()) r.total_pause = *d;
    }
    return r;
  }

  // The agent's highest stored sequence (0 when none). Errors: the store's.
  StatusOr<uint64_t> StoredThrough(const AgentId& id) const {
    auto v = store->GetRecord(kDeliveryTable, id.value);
    if (!v.ok()) {
      if (absl::IsNotFound(v.status())) return 0;
      return v.status();
    }
    uint64_t seq = 0;
    if (!absl::SimpleAtoi(*v, &seq)) {
      return absl::DataLossError(absl::StrCat("records[", std::string(kDeliveryTable), "/",
                                              id.value, "] is not a sequence number"));
    }
    return seq;
  }

  void SetConnectedMetric() {  // REQUIRES: mu held
    if (metrics != nullptr) metrics->SetAgentsConnected(open_streams);
  }

  // Marks a message from the agent; tells the sink when an unreachable agent speaks again.
  void Seen(const AgentId& id, uint64_t stream_no) {
    bool back = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = agents.find(id);
      if (it == agents.end() || it->second.stream_no != stream_no) return;
      it->second.last_seen = absl::Now();
      if (it->second.state == AgentState::kUnreachable) {
        it->second.state = AgentState::kUp;
        back = true;
      }
    }
    if (back) sink->OnStateChanged(id, AgentState::kUp, "");
  }

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<av1::DaemonMessage, av1::AgentMessage>* stream) override {
    if (grpc::Status s = Check(context, "/heapwatch.agent.v1.AgentGateway/Connect"); !s.ok()) {
      return s;
    }
    av1::AgentMessage first;
    if (!stream->Read(&first)) return grpc::Status::OK;  // gone before it said anything
    if (!first.has_register_()) {
      Refuse("protocol");
      return Invalid("the first message of Connect must be Register");
    }
    auto info = ValidateRegister(first.register_());
    if (!info.ok()) {
      Refuse("invalid_register");
      return ToGrpc(info.status());
    }
    const AgentId id = info->id;
    uint64_t stream_no;
    std::shared_ptr<StreamWriter> writer;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "heapwatchd is stopping");
      auto it = agents.find(id);
      if (it != agents.end() && it->second.stream != nullptr) {
        if (it->second.state != AgentState::kUnreachable) {
          Refuse("already_connected");
          return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                              "another stream of agent " + id.value + " is open");
        }
        // The open stream is silent: a broken connection TCP has not noticed yet. Take over.
        it->second.stream->TryCancel();
        --open_streams;
        spdlog::info("agent gateway: agent {} reconnected; its silent stream is cancelled",
                     id.value);
      }
      stream_no = next_stream_no++;
      writer = std::make_shared<StreamWriter>();
      writer->rw = stream;
      Registered& r = agents[id];
      r.writer = writer;
      r.info = *info;
      r.stream = context;
      r.stream_no = stream_no;
      r.last_seen = absl::Now();
      r.closed_at = absl::InfinitePast();
      r.state = AgentState::kUp;
      ++open_streams;
      SetConnectedMetric();
    }
    grpc::Status result =
        Serve(context, writer.get(), stream, *info, first.register_().agent_version(), stream_no);
    writer->Close();  // no Write after the handler returns
    NotifyUploads(id);
    FailRequests(id);
    bool closed = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = agents.find(id);
      if (it != agents.end() && it->second.stream_no == stream_no) {
        it->second.stream = nullptr;
        it->second.closed_at = absl::Now();
        --open_streams;
        SetConnectedMetric();
        if (it->second.state == AgentState::kUp) {
          it->second.state = AgentState::kUnreachable;
          closed = true;
        }
      }
    }
    if (closed) {
      sink->OnStateChanged(id, AgentState::kUnreachable,
                           result.ok()
                               ? "its stream ended"
                               : absl::StrCat("its stream ended: ", result.error_message()));
    }
    return result;
  }

  // The session after the stream was admitted.
  grpc::Status Serve(grpc::ServerContext* context, StreamWriter* writer,
                     grpc::ServerReaderWriter<av1::DaemonMessage, av1::AgentMessage>* stream,
                     const AgentInfo& info, const std::string& agent_version, uint64_t stream_no) {
    const AgentId& id = info.id;
    if (Status s = sink->OnRegistered(info); !s.ok()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("cannot register agent ", id.value, ": ", s.message()));
    }
    auto stored = StoredThrough(id);
    if (!stored.ok()) {
      Refuse("store_error");
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("store: ", stored.status().message()));
    }
    uint64_t stored_through = *stored;
    {
      av1::DaemonMessage m;
      m.mutable_registered()->set_stored_through(stored_through);
      *m.mutable_registered()->mutable_config() = PushedConfig(info);
      if (!writer->Write(m)) return grpc::Status::OK;
    }
    spdlog::info(
        "agent gateway: agent {} registered (pid {} on {}, {}, agent {}), stored through "
        "sequence {}",
        id.value, info.pid, info.host,
        info.main_class.empty() ? "unknown main class" : info.main_class, agent_version,
        stored_through);
    ClassDictionary dict;
    std::optional<AgentBudgetReport> budget_report;  // the newest one of this stream
    uint64_t last_in_stream = 0;
    av1::AgentMessage msg;
    // Every histogram of the stream is decoded into this one snapshot (agent_messages.h: its rows'
    // strings are reused, not allocated anew per histogram).
    Snapshot snapshot;
    auto ack = [&]() {
      av1::DaemonMessage m;
      m.mutable_ack()->set_stored_through(stored_through);
      return writer->Write(m);
    };
    // A delivery's sequence: a duplicate (acknowledged, dropped), or the next to store (counting
    // a gap). Returns false for a sequence that does not increase within the stream.
    auto admit = [&](uint64_t seq, bool* duplicate) -> bool {
      if (seq == 0 || seq <= last_in_stream) return false;
      last_in_stream = seq;
      *duplicate = seq <= stored_through;
      return true;
    };
    // Counts the deliveries a stored sequence skipped (the agent's buffer overflowed).
    auto stored_now = [&](uint64_t seq) {
      if (seq > stored_through + 1 && metrics != nullptr) {
        metrics->RecordAgentDeliveryGap(seq - stored_through - 1);
      }
      stored_through = seq;
      if (metrics != nullptr) metrics->RecordAgentDelivery("stored");
    };
    while (stream->Read(&msg)) {
      Seen(id, stream_no);
      switch (msg.body_case()) {
        case av1::AgentMessage::kHeartbeat: {
          AgentBudgetReport report = BudgetReportOf(msg.heartbeat());
          if (budget_report != report) {
            budget_report = report;
            sink->OnBudgetReported(id, report);
          }
          break;
        }
        case av1::AgentMessage::kHistogramFailed:
          AnswerRequest(id, msg.histogram_failed().request_id(), nullptr,
                        PrintableText(msg.histogram_failed().reason(), 400));
          break;
        case av1::AgentMessage::kDumpReady:
          OnDumpReady(id, msg.dump_ready());
          break;
        case av1::AgentMessage::kDumpFailed:
          OnDumpFailed(id, msg.dump_failed());
          break;
        case av1::AgentMessage::kHistogram: {
          const av1::Histogram& h = msg.histogram();
          bool duplicate = false;
          if (!admit(h.sequence(), &duplicate)) {
            Refuse("protocol");
            return Invalid(absl::StrCat("Histogram sequence ", h.sequence(),
                                        " does not increase within the stream (last ",
                                        last_in_stream, ")"));
          }
          // Validated (and its classes defined) even when a duplicate: later histograms of the
          // stream may refer to its new classes.
          if (Status valid = ToSnapshot(h, id, &dict, &snapshot); !valid.ok()) {
            Refuse("invalid_histogram");
            spdlog::warn("agent gateway: agent {}: refused: {}", id.value,
                         std::string(valid.message()));
            return ToGrpc(valid);
          }
          if (duplicate) {
            if (metrics != nullptr) metrics->RecordAgentDelivery("duplicate");
            if (!ack()) return grpc::Status::OK;
            break;
          }
          Status st = store->Append(
              snapshot, {{std::string(kDeliveryTable), id.value, absl::StrCat(h.sequence())}});
          if (absl::IsAlreadyExists(st)) {
            Refuse("invalid_histogram");
            return Invalid(absl::StrCat("Histogram ", h.sequence(),
                                        ": a histogram of this agent at the same microsecond is "
                                        "already stored"));
          }
          if (!st.ok()) {
            Refuse("store_error");
            spdlog::error("agent gateway: agent {}: cannot store histogram {}: {}", id.value,
                          h.sequence(), st.ToString());
            return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                absl::StrCat("store: ", st.message()));
          }
          stored_now(h.sequence());
          const bool acked = ack();  // after the commit, before the analysis
          sink->OnSnapshotStored(id, snapshot);
          AnswerRequest(id, h.request_id(), &snapshot, "");
          if (!acked) return grpc::Status::OK;
          break;
        }
        case av1::AgentMessage::kLiveSet: {
          const av1::LiveSet& l = msg.live_set();
          bool duplicate = false;
          if (!admit(l.sequence(), &duplicate)) {
            Refuse("protocol");
            return Invalid(absl::StrCat("LiveSet sequence ", l.sequence(),
                                        " does not increase within the stream"));
          }
          auto points = ToLiveSet(l);
          if (!points.ok()) {
            Refuse("invalid_live_set");
            return ToGrpc(points.status());
          }
          if (duplicate) {
            if (metrics != nullptr) metrics->RecordAgentDelivery("duplicate");
            if (!ack()) return grpc::Status::OK;
            break;
          }
          std::vector<LiveSetPoint> fresh;
          for (const LiveSetPoint& p : *points) {
            Status st = store->AppendLiveSet(id, p);
            if (absl::IsAlreadyExists(st)) continue;  // stored before a crash, or a repeat
            if (!st.ok()) {
              Refuse("store_error");
              return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                  absl::StrCat("store: ", st.message()));
            }
            fresh.push_back(p);
          }
          Status st = store->PutRecord(kDeliveryTable, id.value, absl::StrCat(l.sequence()));
          if (!st.ok()) {
            Refuse("store_error");
            return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                absl::StrCat("store: ", st.message()));
          }
          stored_now(l.sequence());
          const bool acked = ack();
          for (const LiveSetPoint& p : fresh) sink->OnLiveSetStored(id, p);
          if (!acked) return grpc::Status::OK;
          break;
        }
        case av1::AgentMessage::kRegister:
          Refuse("protocol");
          return Invalid("Register may only be the first message of a stream");
        case av1::AgentMessage::BODY_NOT_SET:
          Refuse("protocol");
          return Invalid("empty AgentMessage");
      }
    }
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
    }
    return grpc::Status::OK;
  }

  std::shared_ptr<PendingUpload> FindUpload(const AgentId& agent, const std::string& dump_id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = uploads.find({agent, dump_id});
    return it == uploads.end() ? nullptr : it->second;
  }

  // Wakes the dump source's waits of the agent (its stream ended).
  void NotifyUploads(const AgentId& agent) {
    std::vector<std::shared_ptr<PendingUpload>> of_agent;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [key, u] : uploads) {
        if (key.first == agent) of_agent.push_back(u);
      }
    }
    for (auto& u : of_agent) {
      std::lock_guard<std::mutex> lock(u->mu);
      u->cv.notify_all();
    }
  }

  void OnDumpReady(const AgentId& agent, const av1::DumpReady& r) {
    auto u = FindUpload(agent, r.dump_id());
    if (u == nullptr) return;  // not asked for, or given up
    std::lock_guard<std::mutex> lock(u->mu);
    if (u->ready || !u->failed.empty()) return;
    if (r.sha256().size() != 32) {
      u->failed = "the agent's DumpReady has no 32-byte SHA-256";
    } else {
      u->ready = true;
      u->size = r.size_bytes();
      u->sha256 = r.sha256();
      u->gzip = r.gzip();
      if (r.has_pause()) {
        if (auto p = proto::FromDuration(r.pause()); p.ok() && *p >= absl::ZeroDuration()) {
          u->pause = *p;
        }
      }
    }
    u->cv.notify_all();
  }

  void OnDumpFailed(const AgentId& agent, const av1::DumpFailed& f) {
    auto u = FindUpload(agent, f.dump_id());
    if (u == nullptr) return;
    std::lock_guard<std::mutex> lock(u->mu);
    if (u->complete || !u->failed.empty()) return;
    std::string reason = f.reason().substr(0, 512);
    if (!IsPrintableUtf8(reason, 512, true)) reason = "(unprintable reason)";
    u->failed = absl::StrCat("the agent's dump failed: ", reason);
    u->cv.notify_all();
  }

  // One chunk into the upload. REQUIRES: u->mu held, u->uploading by this call.
  grpc::Status Accept(PendingUpload& u, const av1::DumpChunk& c) {
    if (c.data().size() > (1u << 20)) return Invalid("a chunk holds at most 1 MiB");
    if (c.offset() != u.received) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("chunk at offset ", c.offset(), ": the daemon holds ",
                                       u.received, " bytes; resume at that offset"));
    }
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(c.data().data()), c.data().size()));
    if (crc != c.crc32()) {
      return grpc::Status(grpc::StatusCode::DATA_LOSS,
                          absl::StrCat("chunk at offset ", c.offset(), ": CRC-32 mismatch"));
    }
    if (u.received + c.data().size() > u.size) {
      return Invalid(
          absl::StrCat("chunk at offset ", c.offset(), " goes past the dump's ", u.size, " bytes"));
    }
    for (size_t done = 0; done < c.data().size();) {
      ssize_t n = pwrite(u.fd, c.data().data() + done, c.data().size() - done,
                         static_cast<off_t>(u.received + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        u.failed = absl::StrCat("cannot write ", u.part_path, ": ", std::strerror(errno));
        u.cv.notify_all();
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, u.failed);
      }
      done += static_cast<size_t>(n);
    }
    EVP_DigestUpdate(u.sha, c.data().data(), c.data().size());
    u.received += c.data().size();
    if (!c.last()) return grpc::Status::OK;
    if (u.received != u.size) {
      return Invalid(absl::StrCat("the last chunk ends at ", u.received, " of ", u.size, " bytes"));
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(u.sha, digest, &len);
    if (std::string(reinterpret_cast<char*>(digest), len) != u.sha256) {
      u.failed = "the uploaded dump's SHA-256 differs from DumpReady's";
      u.cv.notify_all();
      return grpc::Status(grpc::StatusCode::DATA_LOSS, u.failed);
    }
    if (fsync(u.fd) != 0 || rename(u.part_path.c_str(), u.path.c_str()) != 0) {
      u.failed = absl::StrCat("cannot store the dump as ", u.path, ": ", std::strerror(errno));
      u.cv.notify_all();
      return grpc::Status(grpc::StatusCode::INTERNAL, u.failed);
    }
    close(u.fd);
    u.fd = -1;
    u.complete = true;
    u.cv.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status UploadDump(grpc::ServerContext* context, grpc::ServerReader<av1::DumpChunk>* reader,
                          av1::UploadDumpReply* reply) override {
    if (grpc::Status s = Check(context, "/heapwatch.agent.v1.AgentGateway/UploadDump"); !s.ok()) {
      return s;
    }
    av1::DumpChunk chunk;
    if (!reader->Read(&chunk)) return Invalid("UploadDump without a chunk");
    if (!IsPrintableUtf8(chunk.agent_id(), 128) || !IsPrintableUtf8(chunk.dump_id(), 64)) {
      return Invalid("the first chunk names the agent and the dump");
    }
    auto u = FindUpload(AgentId(chunk.agent_id()), chunk.dump_id());
    if (u == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "no dump " + chunk.dump_id() + " is expected from this agent");
    }
    std::unique_lock<std::mutex> lock(u->mu);
    // DumpReady travels on the Connect stream and may be a moment behind the first chunk.
    u->cv.wait_for(lock, std::chrono::seconds(5),
                   [&] { return u->ready || u->abandoned || !u->failed.empty(); });
    if (!u->ready || u->abandoned || !u->failed.empty() || u->complete) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          u->complete ? "the dump is complete"
                          : !u->ready ? "DumpReady has not arrived on the Connect stream"
                                      : "the dump is no longer expected: " + u->failed);
    }
    if (u->uploading) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "another upload of this dump runs");
    }
    u->uploading = true;
    grpc::Status result = grpc::Status::OK;
    do {
      result = Accept(*u, chunk);
      if (!result.ok() || u->complete) break;
      lock.unlock();
      const bool more = reader->Read(&chunk);
      lock.lock();
      if (!more) break;
      if (u->abandoned) {
        result = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the daemon gave up the dump");
        break;
      }
    } while (true);
    u->uploading = false;
    reply->set_dump_id(u->dump_id);
    reply->set_received_bytes(u->received);
    reply->set_complete(u->complete);
    return result;
  }

  grpc::Status GetUploadStatus(grpc::ServerContext* context,
                               const av1::GetUploadStatusRequest* request,
                               av1::GetUploadStatusReply* reply) override {
    if (grpc::Status s = Check(context, "/heapwatch.agent.v1.AgentGateway/GetUploadStatus");
        !s.ok()) {
      return s;
    }
    auto u = FindUpload(AgentId(request->agent_id()), request->dump_id());
    if (u == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such dump is expected");
    }
    std::lock_guard<std::mutex> lock(u->mu);
    reply->set_received_bytes(u->received);
    reply->set_complete(u->complete);
    return grpc::Status::OK;
  }

  StatusOr<WrittenDump> WriteDump(const DumpRequest& request, const std::string& path);

  // Every tick: open streams silent for 3 heartbeat intervals become UNREACHABLE; agents whose
  // stream has been closed for down_after become DOWN and are forgotten.
  void MonitorLoop() {
    const absl::Duration tick =
        std::clamp(options.heartbeat_interval / 4, absl::Milliseconds(5), absl::Seconds(1));
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, absl::ToChronoMicroseconds(tick), [this] { return stopping; })) {
      const absl::Time now = absl::Now();
      std::vector<std::pair<AgentId, std::pair<AgentState, std::string>>> changes;
      for (auto it = agents.begin(); it != agents.end();) {
        Registered& r = it->second;
        if (r.stream != nullptr && r.state == AgentState::kUp &&
            now - r.last_seen > 3 * options.heartbeat_interval) {
          r.state = AgentState::kUnreachable;
          changes.push_back({it->first,
                             {AgentState::kUnreachable,
                              absl::StrCat("silent for ",
                                           FormatDurationText(absl::Milliseconds(
                                               absl::ToInt64Milliseconds(now - r.last_seen))),
                                           " (3 heartbeat intervals)")}});
        }
        if (r.stream == nullptr && now - r.closed_at > options.down_after) {
          changes.push_back(
              {it->first,
               {AgentState::kDown,
                absl::StrCat("its stream has been closed for ",
                             FormatDurationText(options.down_after), " (agents.down_after)")}});
          it = agents.erase(it);
          continue;
        }
        ++it;
      }
      if (changes.empty()) continue;
      lock.unlock();
      for (const auto& [id, change] : changes) {
        spdlog::info("agent gateway: agent {} is {}: {}", id.value,
                     std::string(StateName(change.first)), change.second);
        sink->OnStateChanged(id, change.first, change.second);
      }
      lock.lock();
    }
  }
};

namespace {

// Extended dumps of registered agents through their stream (daemon/dump_source.h).
class AgentDumpSource final : public DumpSource {
 public:
  explicit AgentDumpSource(AgentGateway::Impl* gateway) : gateway_(gateway) {}
  std::string PathFor(const DumpRequest& request) const override {
    return absl::StrCat(request.dump_dir, "/", geteuid(), "/", request.file_name);
  }
  uint32_t FileOwner(const DumpRequest&) const override { return geteuid(); }
  StatusOr<WrittenDump> WriteDump(const DumpRequest& request) override {
    return gateway_->WriteDump(request, PathFor(request));
  }

 private:
  AgentGateway::Impl* const gateway_;
};

}  // namespace

StatusOr<WrittenDump> AgentGateway::Impl::WriteDump(const DumpRequest& request,
                                                    const std::string& path) {
  const absl::Time start = absl::Now();
  std::string dump_id = request.file_name;
  for (std::string_view suffix : {".gz", ".hprof"}) {
    if (dump_id.ends_with(suffix)) dump_id.resize(dump_id.size() - suffix.size());
  }
  if (!IsPrintableUtf8(dump_id, 64) || dump_id.find('/') != std::string::npos) {
    return absl::InvalidArgumentError("dump file name " + request.file_name +
                                      " does not make a dump id");
  }
  const AgentId& agent = request.agent.id;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::filesystem::create_directories(dir, ec);
  if (ec || chmod(dir.c_str(), 0700) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir.string()));
  }
  auto u = std::make_shared<PendingUpload>();
  u->agent = agent;
  u->dump_id = dump_id;
  u->path = path;
  u->part_path = path + ".part";
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, " exists"));
  }
  unlink(u->part_path.c_str());  // left by an earlier run
  u->fd = open(u->part_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (u->fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", u->part_path, ": ", std::strerror(errno)));
  }
  u->sha = EVP_MD_CTX_new();
  EVP_DigestInit_ex(u->sha, EVP_sha256(), nullptr);
  std::shared_ptr<StreamWriter> writer;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = agents.find(agent);
    if (it != agents.end() && it->second.stream != nullptr) writer = it->second.writer;
    if (writer == nullptr || !uploads.emplace(std::make_pair(agent, dump_id), u).second) {
      unlink(u->part_path.c_str());
      return writer == nullptr
                 ? absl::UnavailableError("agent " + agent.value + " is gone (not connected)")
                 : absl::FailedPreconditionError("dump " + dump_id + " is already requested");
    }
  }
  // Whatever happens from here: the upload is forgotten and no partial file is left.
  auto finish = [&](StatusOr<WrittenDump> result) -> StatusOr<WrittenDump> {
    {
      std::lock_guard<std::mutex> lock(mu);
      uploads.erase({agent, dump_id});
    }
    std::lock_guard<std::mutex> lock(u->mu);
    u->abandoned = true;
    if (!u->complete) unlink(u->part_path.c_str());
    return result;
  };
  av1::DaemonMessage m;
  m.mutable_dump_request()->set_dump_id(dump_id);
  m.mutable_dump_request()->set_gzip(request.gzip);
  m.mutable_dump_request()->set_live_only(true);
  if (!writer->Write(m)) {
    return finish(absl::UnavailableError("agent " + agent.value + " is gone (its stream ended)"));
  }
  spdlog::info("agent gateway: asked agent {} for extended dump {}", agent.value, dump_id);
  const absl::Time deadline = start + request.timeout;
  std::unique_lock<std::mutex> lock(u->mu);
  while (true) {
    if (u->complete) break;
    if (!u->failed.empty()) {
      std::string why = u->failed;
      lock.unlock();
      return finish(absl::FailedPreconditionError(why));
    }
    // Before DumpReady the dump lives on the stream; after it, the upload may resume on a new one.
    if (!u->ready && writer->is_closed()) {
      lock.unlock();
      return finish(absl::UnavailableError("agent " + agent.value +
                                           " is gone: its stream ended during the dump"));
    }
    bool stop;
    {
      std::lock_guard<std::mutex> g(mu);
      stop = stopping;
    }
    if (stop) {
      lock.unlock();
      return finish(absl::UnavailableError("heapwatchd is stopping"));
    }
    if (absl::Now() >= deadline) {
      lock.unlock();
      return finish(absl::DeadlineExceededError(
          absl::StrCat("the agent's dump took longer than ", FormatDurationText(request.timeout))));
    }
    u->cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  WrittenDump written;
  written.path = path;
  written.file_bytes = u->size;
  written.gzip = u->gzip;
  written.pause = u->pause;
  written.wall = absl::Now() - start;
  lock.unlock();
  spdlog::info("agent gateway: extended dump {} of agent {} arrived ({} bytes)", dump_id,
               agent.value, written.file_bytes);
  return finish(written);
}

namespace {

// unix:PATH -> PATH ("" for TCP addresses).
std::string UnixSocketPath(std::string_view listen) {
  if (!listen.starts_with("unix:")) return "";
  std::string_view p = listen.substr(5);
  if (p.starts_with("//")) p.remove_prefix(2);  // unix:///abs/path
  return std::string(p);
}

// The socket's directory must be the daemon's and not writable by others; a stale socket file is
// removed. Errors: FailedPrecondition.
Status PrepareSocketPath(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("agents.listen: empty UNIX socket path");
  const std::filesystem::path p = std::filesystem::absolute(path);
  const std::string dir = p.parent_path().string();
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("agents.listen: the socket's directory ", dir,
                                                      " cannot be read: ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "agents.listen: the socket's directory ", dir,
        " must be a directory owned by heapwatchd's user and writable by no one else, so that no "
        "one can replace the socket"));
  }
  if (lstat(p.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("agents.listen: ", p.string(), " exists and is not a socket"));
    }
    unlink(p.c_str());  // a socket left by an earlier run (the store's lock excludes a live one)
  }
  return absl::OkStatus();
}

}  // namespace

AgentGateway::AgentGateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AgentGateway::~AgentGateway() { Shutdown(); }

StatusOr<std::unique_ptr<AgentGateway>> AgentGateway::Start(
    const AgentGatewayOptions& options, storage::SnapshotStore* store, RegisteredAgentSink* sink,
    Metrics* metrics, std::shared_ptr<const auth::GrpcAuthorizer> authorizer) {
  if (options.listen.empty()) return absl::InvalidArgumentError("empty agent gateway address");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->store = store;
  impl->sink = sink;
  impl->metrics = metrics;
  impl->authorizer = std::move(authorizer);
  impl->socket_path = UnixSocketPath(options.listen);
  if (options.listen.starts_with("unix:")) {
    HW_RETURN_IF_ERROR(PrepareSocketPath(impl->socket_path));
  }
  GrpcLimits limits = options.limits;
  limits.max_receive_message_bytes = std::max<uint64_t>(limits.max_receive_message_bytes, 4 << 20);
  limits.max_threads = std::max(limits.max_threads, options.max_connected + 16);
  limits.max_call_time = absl::Hours(24 * 365 * 100);  // Connect lives as long as the JVM
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl->limiter = ApplyGrpcLimits(limits, metrics, &builder);
  int* port = impl->socket_path.empty() ? &impl->port : nullptr;
  builder.AddListeningPort(options.listen,
                           options.credentials != nullptr && impl->socket_path.empty()
                               ? options.credentials
                               : grpc::InsecureServerCredentials(),
                           port);
  builder.RegisterService(impl.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || (port != nullptr && *port == 0)) {
    return absl::UnavailableError(absl::StrCat("cannot listen for agents on ", options.listen,
                                               " (address in use or invalid)"));
  }
  if (!impl->socket_path.empty() && chmod(impl->socket_path.c_str(), 0660) != 0) {
    impl->server->Shutdown();
    return absl::FailedPreconditionError(absl::StrCat(
        "agents.listen: cannot chmod ", impl->socket_path, ": ", std::strerror(errno)));
  }
  Impl* raw = impl.get();
  raw->dump_source = std::make_unique<AgentDumpSource>(raw);
  raw->monitor = std::thread([raw] { raw->MonitorLoop(); });
  if (metrics != nullptr) metrics->SetAgentsConnected(0);
  spdlog::info("agent gateway on {}{}{}", options.listen,
               raw->port != 0 ? absl::StrCat(" (port ", raw->port, ")") : std::string(),
               raw->authorizer != nullptr ? ", agents need a token of role agent" : "");
  return std::unique_ptr<AgentGateway>(new AgentGateway(std::move(impl)));
}

void AgentGateway::Shutdown() {
  if (impl_ == nullptr || impl_->shut_down) return;
  impl_->shut_down = true;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  // Cancels the open streams at once (deadline now); waits for their handlers to return.
  impl_->server->Shutdown(std::chrono::system_clock::now());
  impl_->server->Wait();
  if (impl_->monitor.joinable()) impl_->monitor.join();
  if (!impl_->socket_path.empty()) unlink(impl_->socket_path.c_str());
}

int AgentGateway::port() const { return impl_->port; }

DumpSource* AgentGateway::dump_source() const { return impl_->dump_source.get(); }

StatusOr<Snapshot> AgentGateway::CollectHistogram(const AgentId& agent, HistogramMode mode,
                                                  absl::Time deadline) {
  return impl_->CollectHistogram(agent, mode, deadline);
}

int AgentGateway::connected() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->open_streams;
}

}  // namespace heapwatch::daemon
