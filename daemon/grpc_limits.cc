#include "daemon/grpc_limits.h"

#include <grpc/grpc.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/metrics.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {
namespace {

// The health service's Watch is a subscription that stays open by design (gRPC client-side health
// checking); the call time limit does not apply to it.
constexpr std::string_view kExemptMethod = "/grpc.health.v1.Health/Watch";
// The status message of a call refused for want of a server thread (grpc.max_threads).
constexpr std::string_view kThreadpoolExhausted = "Server Threadpool Exhausted";

int Millis(absl::Duration d) {
  const int64_t ms = absl::ToInt64Milliseconds(d);
  return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
}

class Limiter final : public GrpcCallLimiter {
 public:
  Limiter(absl::Duration max_call_time, Metrics* metrics)
      : max_call_time_(max_call_time), metrics_(metrics), thread_([this] { Loop(); }) {}
  ~Limiter() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  int calls_in_flight() const override {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(calls_.size());
  }

  void Register(const void* key, grpc::ServerContextBase* context, const char* method) {
    Call call;
    call.context = context;
    call.method = method == nullptr ? "" : method;
    call.deadline =
        call.method == kExemptMethod ? absl::InfiniteFuture() : absl::Now() + max_call_time_;
    {
      std::lock_guard<std::mutex> l(mu_);
      calls_[key] = std::move(call);
    }
    cv_.notify_all();
  }

  void Unregister(const void* key) {
    std::lock_guard<std::mutex> l(mu_);
    calls_.erase(key);
  }

  // A call gRPC answered itself with RESOURCE_EXHAUSTED because the thread quota left no server
  // thread for it (grpc.max_threads): counted, not logged (a flood would flood the log).
  void CountThreadQuotaRefusal() {
    if (metrics_ != nullptr) metrics_->RecordFault(FaultReason::kGrpcThreadQuota);
  }

 private:
  struct Call {
    grpc::ServerContextBase* context = nullptr;  // valid while registered
    std::string method;
    absl::Time deadline;
    bool cancelled = false;
  };

  // Cancels every call past its deadline; sleeps until the next deadline or a new call.
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      const absl::Time now = absl::Now();
      absl::Time next = absl::InfiniteFuture();
      for (auto& [key, call] : calls_) {
        if (call.cancelled) continue;
        if (call.deadline <= now) {
          // Counted and logged first: the client may see CANCELLED as soon as TryCancel runs.
          spdlog::warn("grpc: call {} from {} ran past grpc.max_call_time ({}); cancelled",
                       call.method, call.context->peer(), absl::FormatDuration(max_call_time_));
          if (metrics_ != nullptr) metrics_->RecordFault(FaultReason::kGrpcCallTimeLimit);
          // TryCancel may be called from any thread; the context is alive while registered (the
          // interceptor unregisters before the status is sent and when it is destroyed, both
          // under mu_).
          call.context->TryCancel();
          call.cancelled = true;
        } else {
          next = std::min(next, call.deadline);
        }
      }
      if (next == absl::InfiniteFuture()) {
        cv_.wait(l);
      } else {
        cv_.wait_for(l, absl::ToChronoNanoseconds(next - now));
      }
    }
  }

  const absl::Duration max_call_time_;
  Metrics* const metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                  // guarded by mu_
  std::map<const void*, Call> calls_;  // guarded by mu_; key: the call's interceptor
  std::thread thread_;                 // last member: starts after the others exist
};

class CallInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallInterceptor(std::shared_ptr<Limiter> limiter, grpc::experimental::ServerRpcInfo* info)
      : limiter_(std::move(limiter)) {
    limiter_->Register(this, info->server_context(), info->method());
    constructed_.store(true, std::memory_order_release);
  }
  ~CallInterceptor() override {
    (void)constructed_.load(std::memory_order_acquire);  // see Intercept()
    limiter_->Unregister(this);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // gRPC constructs the interceptor on the thread that sets the call up and runs Intercept() on
    // another of its threads, ordered inside its (uninstrumented) core; this acquire makes that
    // order visible to ThreadSanitizer (scripts/sanitize.sh tsan), once per hook, at no real cost.
    (void)constructed_.load(std::memory_order_acquire);
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      limiter_->Unregister(this);
      // gRPC's synchronous server answers a call it has no thread for with this status (gRPC 1.51,
      // src/cpp/server/server_cc.cc, kServerThreadpoolExhausted); the interceptors still see it.
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
          status.error_message() == kThreadpoolExhausted) {
        limiter_->CountThreadQuotaRefusal();
      }
    }
    methods->Proceed();
  }

 private:
  const std::shared_ptr<Limiter> limiter_;
  std::atomic<bool> constructed_{false};
};

class CallInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallInterceptorFactory(std::shared_ptr<Limiter> limiter)
      : limiter_(std::move(limiter)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallInterceptor(limiter_, info);
  }

 private:
  const std::shared_ptr<Limiter> limiter_;
};

}  // namespace

Status ValidateGrpcLimits(const GrpcLimits& l) {
  auto fail = [](std::string_view key, std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("configuration 'grpc.", std::string(key), "': ", std::string(why)));
  };
  if (l.max_receive_message_bytes < 1024 || l.max_receive_message_bytes > INT32_MAX) {
    return fail("max_receive_message_bytes", "must be between 1KiB and 2GiB - 1");
  }
  if (l.max_memory_bytes < (1u << 20)) return fail("max_memory_bytes", "must be at least 1MiB");
  if (l.max_concurrent_streams < 1 || l.max_concurrent_streams > 100000) {
    return fail("max_concurrent_streams", "must be between 1 and 100000");
  }
  if (l.max_threads < 1 || l.max_threads > 100000) {
    return fail("max_threads", "must be between 1 and 100000");
  }
  if (l.max_ping_strikes < 0 || l.max_ping_strikes > 1000) {
    return fail("max_ping_strikes", "must be between 0 and 1000");
  }
  if (l.min_ping_interval < absl::Milliseconds(1)) {
    return fail("min_ping_interval", "must be at least 1ms");
  }
  if (l.keepalive_time < absl::Milliseconds(1)) return fail("keepalive_time", "must be >= 1ms");
  if (l.keepalive_timeout <= absl::ZeroDuration()) return fail("keepalive_timeout", "must be > 0");
  if (l.max_connection_idle <= absl::ZeroDuration()) {
    return fail("max_connection_idle", "must be > 0");
  }
  if (l.max_call_time <= absl::ZeroDuration()) return fail("max_call_time", "must be > 0");
  return absl::OkStatus();
}

std::shared_ptr<GrpcCallLimiter> ApplyGrpcLimits(const GrpcLimits& limits, Metrics* metrics,
                                                 grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(static_cast<int>(limits.max_receive_message_bytes));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              Millis(limits.min_ping_interval));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, limits.max_ping_strikes);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(limits.keepalive_time));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Millis(limits.keepalive_timeout));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, Millis(limits.max_connection_idle));
  grpc::ResourceQuota quota("heapwatch-grpc");
  quota.SetMaxThreads(limits.max_threads);
  quota.Resize(static_cast<size_t>(limits.max_memory_bytes));
  builder->SetResourceQuota(quota);
  auto limiter = std::make_shared<Limiter>(limits.max_call_time, metrics);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<CallInterceptorFactory>(limiter));
  builder->experimental().SetInterceptorCreators(std::move(factories));
  return limiter;
}

}  // namespace heapwatch::daemon
