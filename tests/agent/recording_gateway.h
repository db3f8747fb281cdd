// The agent's counterpart in tests and benchmarks: a real gRPC AgentGateway server that records
// what arrives (GatewayState, RecordingGateway, TestServer; exactly once with Ack, resumable
// uploads with CRC and SHA-256 checks, optional token and TLS), and a JVM running
// tests/agent/java/HwAgentApp with the agent (AgentJvm). Needs HW_AGENT_SO, HW_JAVA and
// HW_AGENT_TEST_CLASSES defined.
#ifndef HEAPWATCH_TESTS_AGENT_RECORDING_GATEWAY_H_
#define HEAPWATCH_TESTS_AGENT_RECORDING_GATEWAY_H_

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "heapwatch/agent/v1/agent.grpc.pb.h"
#include "proto/time_util.h"

namespace heapwatch::agent::testing {

namespace v1 = ::heapwatch::agent::v1;

inline constexpr int kRetained = 1234;
inline constexpr const char* kRetainedClass = "HwAgentApp$Retained";

struct ReceivedHistogram {
  int connection = 0;
  uint64_t sequence = 0;
  v1::HistogramMode mode = v1::HISTOGRAM_MODE_UNSPECIFIED;
  uint64_t request_id = 0;
  std::map<std::string, uint64_t> instances;  // class name -> instances
  absl::Duration pause;
  absl::Time time;  // Histogram.time (the agent's clock, the same host)
};

// What every server incarnation of one test shares: the "stored" state of a daemon.
struct GatewayState {
  std::mutex mu;
  std::condition_variable cv;
  std::string required_token;               // empty: no check
  v1::AgentConfig config;                   // sent in Registered
  std::optional<uint64_t> stored_override;  // Registered.stored_through for the next connect
  uint64_t stored_through = 0;
  int connections = 0;
  int refused = 0;
  std::vector<v1::Register> registers;
  std::vector<std::string> peer_common_names;  // TLS client certificate CN per registration
  std::vector<ReceivedHistogram> histograms;
  std::vector<std::pair<int, uint64_t>> sequenced;  // (connection, sequence) of every delivery
  std::vector<v1::Heartbeat> heartbeats;
  std::vector<v1::HistogramFailed> failures;
  std::vector<v1::LiveSetPoint> live_points;
  std::vector<v1::DumpReady> dumps_ready;
  std::vector<v1::DumpFailed> dumps_failed;
  struct Upload {
    std::string data;
    bool complete = false;
    int calls = 0;
  };
  std::map<std::string, Upload> uploads;  // by dump id
  int break_uploads = 0;                  // UploadDump calls to break after their first chunk
  int broken_uploads = 0;
  grpc::ServerReaderWriter<v1::DaemonMessage, v1::AgentMessage>* current = nullptr;
  std::mutex write_mu;

  bool WaitFor(const std::function<bool()>& done, absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, absl::ToChronoNanoseconds(timeout), done);
  }
  // Sends `m` on the open stream; false when none.
  bool Push(const v1::DaemonMessage& m) {
    std::lock_guard<std::mutex> w(write_mu);
    grpc::ServerReaderWriter<v1::DaemonMessage, v1::AgentMessage>* s;
    {
      std::lock_guard<std::mutex> lock(mu);
      s = current;
    }
    return s != nullptr && s->Write(m);
  }
};

class RecordingGateway final : public v1::AgentGateway::Service {
 public:
  explicit RecordingGateway(std::shared_ptr<GatewayState> state) : state_(std::move(state)) {}

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::DaemonMessage, v1::AgentMessage>* stream) override {
    GatewayState& st = *state_;
    if (!st.required_token.empty()) {
      auto it = context->client_metadata().find("authorization");
      if (it == context->client_metadata().end() ||
          std::string(it->second.data(), it->second.size()) != "Bearer " + st.required_token) {
        std::lock_guard<std::mutex> lock(st.mu);
        ++st.refused;
        st.cv.notify_all();
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad agent token");
      }
    }
    v1::AgentMessage m;
    if (!stream->Read(&m) || !m.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Register first");
    }
    int connection;
    {
      // Registered goes out before anything Push() sends: write_mu is held from recording the
      // stream as current until Registered is written (lock order: write_mu, then mu).
      std::lock_guard<std::mutex> w(st.write_mu);
      v1::DaemonMessage reply;
      {
        std::lock_guard<std::mutex> lock(st.mu);
        connection = ++st.connections;
        st.registers.push_back(m.register_());
        std::string cn;
        if (auto auth = context->auth_context()) {
          for (const auto& v : auth->FindPropertyValues("x509_common_name")) {
            cn = std::string(v.data(), v.size());
          }
        }
        st.peer_common_names.push_back(cn);
        if (st.stored_override) {
          st.stored_through = *st.stored_override;
          st.stored_override.reset();
        }
        reply.mutable_registered()->set_stored_through(st.stored_through);
        *reply.mutable_registered()->mutable_config() = st.config;
        st.current = stream;
        st.cv.notify_all();
      }
      if (!stream->Write(reply)) {
        std::lock_guard<std::mutex> lock(st.mu);
        st.current = nullptr;
        return grpc::Status::OK;
      }
    }
    std::map<uint32_t, std::string> dictionary;
    while (stream->Read(&m)) {
      uint64_t sequence = 0;
      v1::DaemonMessage ack;
      {
        std::lock_guard<std::mutex> lock(st.mu);
        if (m.has_histogram()) {
          const v1::Histogram& h = m.histogram();
          for (const auto& def : h.new_classes()) dictionary[def.class_ref()] = def.class_name();
          ReceivedHistogram r{connection,
                              h.sequence(),
                              h.mode(),
                              h.request_id(),
                              {},
                              proto::FromDuration(h.pause()).value_or(absl::ZeroDuration()),
                              proto::FromTimestamp(h.time()).value_or(absl::InfinitePast())};
          for (int i = 0; i < h.class_refs_size(); ++i) {
            r.instances[dictionary.at(h.class_refs(i))] += h.instances(i);
          }
          st.histograms.push_back(std::move(r));
          sequence = h.sequence();
        } else if (m.has_live_set()) {
          sequence = m.live_set().sequence();
          for (const auto& p : m.live_set().points()) st.live_points.push_back(p);
        } else if (m.has_heartbeat()) {
          st.heartbeats.push_back(m.heartbeat());
        } else if (m.has_histogram_failed()) {
          st.failures.push_back(m.histogram_failed());
        } else if (m.has_dump_ready()) {
          st.dumps_ready.push_back(m.dump_ready());
        } else if (m.has_dump_failed()) {
          st.dumps_failed.push_back(m.dump_failed());
        }
        if (sequence != 0) {
          st.sequenced.emplace_back(connection, sequence);
          st.stored_through = std::max(st.stored_through, sequence);
          ack.mutable_ack()->set_stored_through(st.stored_through);
        }
        st.cv.notify_all();
      }
      if (sequence != 0) {
        std::lock_guard<std::mutex> w(st.write_mu);
        stream->Write(ack);
      }
    }
    std::lock_guard<std::mutex> lock(st.mu);
    st.current = nullptr;
    return grpc::Status::OK;
  }

  grpc::Status UploadDump(grpc::ServerContext* context, grpc::ServerReader<v1::DumpChunk>* reader,
                          v1::UploadDumpReply* reply) override {
    GatewayState& st = *state_;
    v1::DumpChunk c;
    std::string id;
    bool first = true;
    while (reader->Read(&c)) {
      std::unique_lock<std::mutex> lock(st.mu);
      id = c.dump_id();
      GatewayState::Upload& u = st.uploads[id];
      if (first) ++u.calls;
      if (c.offset() != u.data.size()) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "offset does not follow");
      }
      if (c.data().size() > (1u << 20)) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "chunk over 1 MiB");
      }
      uint32_t crc = static_cast<uint32_t>(
          crc32(0L, reinterpret_cast<const Bytef*>(c.data().data()), c.data().size()));
      if (crc != c.crc32()) return grpc::Status(grpc::StatusCode::DATA_LOSS, "bad crc");
      u.data += c.data();
      if (first && !c.last() && st.break_uploads > 0) {
        --st.break_uploads;
        ++st.broken_uploads;
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "upload broken on purpose");
      }
      first = false;
      if (c.last()) {
        // DumpReady travels on the Connect stream and may arrive after the last chunk (as in the
        // daemon's gateway, which waits for it up to 5 s before it takes chunks).
        auto ready = [&]() -> const v1::DumpReady* {
          for (const v1::DumpReady& r : st.dumps_ready) {
            if (r.dump_id() == id) return &r;
          }
          return nullptr;
        };
        st.cv.wait_for(lock, std::chrono::seconds(5), [&] { return ready() != nullptr; });
        if (const v1::DumpReady* r = ready()) {
          st.uploads[id].complete = Sha256(st.uploads[id].data) == r->sha256();
        }
        st.cv.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(st.mu);
    reply->set_dump_id(id);
    reply->set_received_bytes(st.uploads[id].data.size());
    reply->set_complete(st.uploads[id].complete);
    return grpc::Status::OK;
  }

  grpc::Status GetUploadStatus(grpc::ServerContext*, const v1::GetUploadStatusRequest* request,
                               v1::GetUploadStatusReply* reply) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->uploads.find(request->dump_id());
    if (it != state_->uploads.end()) {
      reply->set_received_bytes(it->second.data.size());
      reply->set_complete(it->second.complete);
    }
    return grpc::Status::OK;
  }

  static std::string Sha256(const std::string& data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
    return std::string(reinterpret_cast<const char*>(md), len);
  }

 private:
  std::shared_ptr<GatewayState> state_;
};

// A gRPC server running one RecordingGateway.
class TestServer {
 public:
  TestServer(std::shared_ptr<GatewayState> state, const std::string& address,
             std::shared_ptr<grpc::ServerCredentials> credentials = nullptr)
      : service_(std::move(state)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, credentials ? credentials : grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~TestServer() { Stop(); }
  void Stop() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    server_->Wait();
    server_.reset();
  }
  bool ok() const { return server_ != nullptr; }
  int port() const { return port_; }

 private:
  RecordingGateway service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// `java -agentpath:libheapwatch_agent.so=OPTIONS HwAgentApp COUNT SECONDS`, stdout and stderr in
// files. Killed by the destructor if still running.
class AgentJvm {
 public:
  // `agent_options` empty: no -agentpath (for `heapwatchctl agent load`). `extra`: HwAgentApp's
  // third argument; `jvm_flag`: one more JVM option.
  AgentJvm(const std::string& agent_options, double seconds, const char* extra = nullptr,
           const char* jvm_flag = nullptr, const char* java = HW_JAVA) {
    char dir[] = "/tmp/hw_agent_jvm_XXXXXX";
    dir_ = mkdtemp(dir);
    std::vector<std::string> argv = {"java", "-Xmx128m", "-XX:+UseSerialGC"};
    if (!agent_options.empty()) {
      argv.push_back(std::string("-agentpath:") + HW_AGENT_SO + "=" + agent_options);
    }
    if (jvm_flag != nullptr) argv.push_back(jvm_flag);
    for (const char* a : {"-cp", HW_AGENT_TEST_CLASSES, "HwAgentApp"}) argv.push_back(a);
    argv.push_back(std::to_string(kRetained));
    argv.push_back(std::to_string(seconds));
    if (extra != nullptr) argv.push_back(extra);
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int out = open((dir_ + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err = open((dir_ + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      execv(java, cargv.data());
      _exit(127);
    }
  }
  // Waits until the program printed "ready".
  bool WaitReady(absl::Duration timeout) {
    absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      if (Stdout().find("ready") != std::string::npos) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }
  bool Running() const { return !exited_ && kill(pid_, 0) == 0; }
  ~AgentJvm() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove((dir_ + "/stdout").c_str());
    std::remove((dir_ + "/stderr").c_str());
    rmdir(dir_.c_str());
  }
  pid_t pid() const { return pid_; }
  // Waits for the JVM to exit; its exit code, or -1 on a signal or timeout.
  int WaitExit(absl::Duration timeout) {
    absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return -1;
  }
  // Time from the end of the program's main ("done" printed) to the process exit: the agent's
  // shutdown at VMDeath. Infinite when either does not happen within `timeout`.
  absl::Duration ShutdownTime(absl::Duration timeout) {
    absl::Time end = absl::Now() + timeout;
    while (Stdout().find("done") == std::string::npos && absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    absl::Time done = absl::Now();
    if (WaitExit(end - done) != 0) return absl::InfiniteDuration();
    return absl::Now() - done;
  }
  std::string Stdout() const { return Slurp(dir_ + "/stdout"); }
  std::string Stderr() const { return Slurp(dir_ + "/stderr"); }
  // Lines of stderr that the agent wrote.
  std::vector<std::string> AgentLogLines() const {
    std::vector<std::string> lines;
    std::istringstream in(Stderr());
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("heapwatch-agent: ", 0) == 0) lines.push_back(line);
    }
    return lines;
  }

 private:
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

inline std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

inline std::string SocketPath() {
  static int n = 0;
  std::string path =
      "/tmp/hw_agent_test_" + std::to_string(getpid()) + "_" + std::to_string(++n) + ".sock";
  unlink(path.c_str());  // left over by an earlier run that ended in a failed assertion
  return path;
}

inline v1::AgentConfig Config(absl::Duration interval, absl::Duration heartbeat) {
  v1::AgentConfig c;
  proto::ToDuration(interval, c.mutable_histogram_interval());
  proto::ToDuration(heartbeat, c.mutable_heartbeat_interval());
  c.set_mode(v1::HISTOGRAM_MODE_LIVE);
  return c;
}

}  // namespace heapwatch::agent::testing

#endif  // HEAPWATCH_TESTS_AGENT_RECORDING_GATEWAY_H_
