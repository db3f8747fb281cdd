#include "agent/session.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/daemon_messages.h"
#include "grpcpp/grpcpp.h"
#include "proto/time_util.h"

namespace heapwatch::agent {
namespace {

// How long the writer waits for Registered after sending Register.
constexpr absl::Duration kRegisterTimeout = absl::Seconds(10);
// Deliveries encoded per wake-up of the writer (bounds the time mu_ is held).
constexpr int kBatch = 16;

std::string StatusText(const grpc::Status& status) {
  // gRPC's codes are the canonical codes absl::StatusCode names ("UNAUTHENTICATED", ...).
  const int code = static_cast<int>(status.error_code());
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  if (name.empty()) name = absl::StrCat("code ", code);
  return absl::StrCat(name, ": ", status.error_message());
}

}  // namespace

Session::Session(AgentOptions options, v1::Register registration, Listener* listener)
    : options_(std::move(options)),
      registration_(std::move(registration)),
      listener_(listener),
      buffer_(options_.buffer_capacity),
      backoff_(options_.backoff_initial) {}

Session::~Session() { Shutdown(); }

void Session::Deliver(std::variant<HistogramDelivery, v1::LiveSet> body) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    buffer_.Add(std::move(body));
  }
  cv_.notify_all();
}

void Session::SendUnsequenced(v1::AgentMessage message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_ == nullptr || !stream_->registered || stream_->broken) return;
    unsequenced_.push_back(std::move(message));
  }
  cv_.notify_all();
}

void Session::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    if (stream_ != nullptr) stream_->context.TryCancel();
  }
  cv_.notify_all();
}

void Session::SetBudgetStatus(const v1::Heartbeat& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status.budget_note() != budget_status_.budget_note() ||
        status.over_budget() != budget_status_.over_budget()) {
      budget_changed_ = true;
    }
    budget_status_.set_budget_note(status.budget_note());
    budget_status_.set_over_budget(status.over_budget());
    if (status.has_planned_interval()) {
      *budget_status_.mutable_planned_interval() = status.planned_interval();
    } else {
      budget_status_.clear_planned_interval();
    }
    if (status.has_total_pause()) {
      *budget_status_.mutable_total_pause() = status.total_pause();
    } else {
      budget_status_.clear_total_pause();
    }
  }
  cv_.notify_all();
}

uint64_t Session::dropped_deliveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffer_.dropped();
}

size_t Session::buffered_deliveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffer_.size();
}

bool Session::connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_ != nullptr && stream_->registered && !stream_->broken;
}

void Session::LogFailure(const std::string& what) {
  if (failing_) return;
  failing_ = true;
  std::fprintf(stderr, "heapwatch-agent: %s (retrying in the background)\n", what.c_str());
  std::fflush(stderr);
}

absl::Duration Session::NextBackoff() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  absl::Duration d = backoff_;
  backoff_ = std::min(backoff_ * 2, options_.backoff_max);
  double f = std::uniform_real_distribution<double>(0.5, 1.0)(rng);
  return d * f;
}

void Session::RunWriter() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutdown_) return;
    }
    grpc::Status status;
    bool registered = ServeOneStream(&status);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutdown_) return;
    }
    if (registered) {
      backoff_ = options_.backoff_initial;
      LogFailure(absl::StrCat("lost the stream to the daemon at ", options_.address, ": ",
                              StatusText(status)));
    } else {
      LogFailure(absl::StrCat("cannot register with the daemon at ", options_.address, ": ",
                              StatusText(status)));
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, absl::ToChronoNanoseconds(NextBackoff()), [this] { return shutdown_; });
  }
}

std::unique_ptr<v1::AgentGateway::Stub> Session::NewStub() const {
  grpc::ChannelArguments args;
  // Reconnect timing is ours (jittered backoff); a fresh channel per attempt fails fast.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options_.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.tls_ca_pem;
    ssl.pem_cert_chain = options_.tls_cert_pem;
    ssl.pem_private_key = options_.tls_key_pem;
    credentials = grpc::SslCredentials(ssl);
    if (!options_.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options_.tls_server_name);
    }
  }
  return v1::AgentGateway::NewStub(grpc::CreateCustomChannel(options_.address, credentials, args));
}

bool Session::ServeOneStream(grpc::Status* status) {
  std::unique_ptr<v1::AgentGateway::Stub> stub = NewStub();
  auto s = std::make_shared<Stream>();
  if (!options_.token.empty()) s->context.AddMetadata("authorization", "Bearer " + options_.token);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return false;
    s->rw = stub->Connect(&s->context);
    stream_ = s;
  }
  cv_.notify_all();  // the reader starts reading this stream

  v1::AgentMessage hello;
  *hello.mutable_register_() = registration_;
  bool write_ok = s->rw->Write(hello);
  bool registered = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!write_ok) s->broken = true;
    cv_.wait_for(lock, absl::ToChronoNanoseconds(kRegisterTimeout),
                 [&] { return s->registered || s->broken || shutdown_; });
    registered = s->registered;
    if (!registered) s->broken = true;
  }
  if (registered) {
    if (failing_) {
      std::fprintf(stderr, "heapwatch-agent: registered with the daemon at %s\n",
                   options_.address.c_str());
      std::fflush(stderr);
    }
    failing_ = false;
    StreamEncoder encoder;
    uint64_t sent_through;
    absl::Time next_heartbeat = absl::Now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent_through = s->stored_through;
    }
    while (true) {
      std::vector<v1::AgentMessage> out;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_until(lock, absl::ToChronoTime(next_heartbeat), [&] {
          return shutdown_ || s->broken || !unsequenced_.empty() || budget_changed_ ||
                 buffer_.NextAfter(sent_through) != nullptr;
        });
        if (shutdown_ || s->broken) break;
        while (!unsequenced_.empty()) {
          out.push_back(std::move(unsequenced_.front()));
          unsequenced_.pop_front();
        }
        for (int i = 0; i < kBatch; ++i) {
          const Delivery* d = buffer_.NextAfter(sent_through);
          if (d == nullptr) break;
          out.push_back(encoder.Encode(*d));
          sent_through = d->sequence;
          s->sent_through = std::max(s->sent_through, sent_through);
        }
        absl::Time now = absl::Now();
        if (now >= next_heartbeat || budget_changed_) {
          budget_changed_ = false;
          v1::AgentMessage hb;
          *hb.mutable_heartbeat() = budget_status_;
          proto::ToTimestamp(now, hb.mutable_heartbeat()->mutable_time());
          hb.mutable_heartbeat()->set_dropped_deliveries(buffer_.dropped());
          hb.mutable_heartbeat()->set_buffered_deliveries(buffer_.size());
          out.push_back(std::move(hb));
          next_heartbeat = now + heartbeat_interval_;
        }
      }
      bool ok = true;
      for (const v1::AgentMessage& m : out) {
        if (!s->rw->Write(m)) {
          ok = false;
          break;
        }
      }
      if (!ok) {
        std::lock_guard<std::mutex> lock(mu_);
        s->broken = true;
        break;
      }
    }
  }
  // Tear down: when the daemon ended the stream, the reader has seen the end (and Finish returns
  // the daemon's status, e.g. UNAUTHENTICATED); otherwise cancel it so that the reader stops.
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!shutdown_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return s->reader_done; });
    }
    if (!s->reader_done) s->context.TryCancel();
    cv_.wait(lock, [&] { return s->reader_done; });
    stream_.reset();
    unsequenced_.clear();
  }
  cv_.notify_all();  // the reader waits for the next stream, or returns after Shutdown
  *status = s->rw->Finish();
  return registered;
}

void Session::RunReader() {
  while (true) {
    std::shared_ptr<Stream> s;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return (stream_ != nullptr && !stream_->reader_done) || (shutdown_ && stream_ == nullptr);
      });
      if (stream_ == nullptr) return;  // shut down
      s = stream_;
    }
    v1::DaemonMessage m;
    bool protocol_error = false;
    while (!protocol_error && s->rw->Read(&m)) {
      // Every message is checked first (agent/daemon_messages.h); a refused one ends the stream.
      StatusOr<DaemonAction> action;
      {
        std::lock_guard<std::mutex> lock(mu_);
        action = CheckDaemonMessage(
            m, StreamPosition{s->registered, s->sent_through, buffer_.next_sequence() - 1});
      }
      if (!action.ok()) {
        std::fprintf(stderr, "heapwatch-agent: protocol error from the daemon at %s: %s\n",
                     options_.address.c_str(), action.status().ToString().c_str());
        std::fflush(stderr);
        protocol_error = true;
        break;
      }
      switch (action->kind) {
        case DaemonAction::Kind::kRegistered: {
          {
            std::lock_guard<std::mutex> lock(mu_);
            s->stored_through = action->stored_through;
            s->sent_through = std::max(s->sent_through, action->stored_through);
            buffer_.AckThrough(s->stored_through);
            if (action->config.heartbeat_interval) {
              heartbeat_interval_ = *action->config.heartbeat_interval;
            }
            s->registered = true;
          }
          cv_.notify_all();
          listener_->OnConfig(m.registered().config());
          break;
        }
        case DaemonAction::Kind::kAck: {
          std::lock_guard<std::mutex> lock(mu_);
          buffer_.AckThrough(action->stored_through);
          break;
        }
        case DaemonAction::Kind::kConfig: {
          {
            std::lock_guard<std::mutex> lock(mu_);
            if (action->config.heartbeat_interval) {
              heartbeat_interval_ = *action->config.heartbeat_interval;
            }
          }
          cv_.notify_all();
          listener_->OnConfig(m.config());
          break;
        }
        case DaemonAction::Kind::kHistogramRequest:
          listener_->OnHistogramRequest(m.histogram_request());
          break;
        case DaemonAction::Kind::kDumpRequest:
          listener_->OnDumpRequest(m.dump_request());
          break;
        case DaemonAction::Kind::kRefuseHistogramRequest: {
          v1::AgentMessage failed;
          failed.mutable_histogram_failed()->set_request_id(action->request_id);
          failed.mutable_histogram_failed()->set_reason(action->refusal);
          SendUnsequenced(std::move(failed));
          break;
        }
        case DaemonAction::Kind::kRefuseDumpRequest: {
          v1::AgentMessage failed;
          failed.mutable_dump_failed()->set_dump_id("?");
          failed.mutable_dump_failed()->set_reason(action->refusal);
          SendUnsequenced(std::move(failed));
          break;
        }
        case DaemonAction::Kind::kIgnore:
          break;
      }
    }
    if (protocol_error) s->context.TryCancel();
    {
      std::lock_guard<std::mutex> lock(mu_);
      s->broken = true;
      s->reader_done = true;
    }
    cv_.notify_all();
  }
}

}  // namespace heapwatch::agent
