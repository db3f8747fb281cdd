// heapwatch_agent_load: N simulated agents (heapwatch.agent.v1 over gRPC) against a running
// heapwatchd's agent gateway, each delivering a class histogram of C classes every second for S
// seconds. Prints the acknowledged histograms per second, the acknowledgement latency (send to Ack;
// p50, p99, max) and whether every delivery was acknowledged exactly in order (none lost). Run
// through bench/gateway/run.sh, which also measures the daemon's CPU and RSS and checks the store's
// snapshot count (docs/agents.md, "Load").
//
// Two kinds of histograms (MODE):
//  - realistic (the default): as a real JVM's look from one second to the next. Each agent has a
//    stable class set with fixed sizes per instance and heavy-tailed counts (a few big classes,
//    many small ones); per histogram about 90 % of the counts are unchanged, the others drift by
//    up to +-1 %, and 3 classes per agent grow by 0.2 % a histogram.
//  - random (the worst case): every count is drawn anew each time (1,000..1,049 instances of 24
//    bytes, class 1 growing), so the top classes and the stored deltas change every histogram.
//
// Usage: heapwatch_agent_load TARGET AGENTS CLASSES SECONDS THREADS [realistic|random]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collectors/agent_identity.h"
#include "grpcpp/grpcpp.h"
#include "heapwatch/agent/v1/agent.grpc.pb.h"
#include "proto/time_util.h"

namespace av1 = ::heapwatch::agent::v1;

namespace {

struct Agent {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReaderWriter<av1::AgentMessage, av1::DaemonMessage>> stream;
  uint64_t sequence = 0;
  absl::Time next = absl::InfinitePast();
  bool defined = false;
  bool failed = false;
  // Realistic mode: the agent's current counts and sizes per instance, per class.
  std::vector<uint64_t> instances;
  std::vector<uint32_t> instance_bytes;
};

enum class Mode { kRealistic, kRandom };

// Realistic mode: this histogram's counts from the last ones (see the file comment).
void Drift(Agent& a, int classes, std::mt19937_64& rng) {
  if (a.instances.empty()) {
    a.instances.resize(classes);
    a.instance_bytes.resize(classes);
    for (int i = 0; i < classes; ++i) {
      // Heavy-tailed: about 1,000,000 / rank instances, at least 1.
      a.instances[i] = 1 + 1000000 / (1 + (rng() % (classes + 1)));
      a.instance_bytes[i] = 16 + 8 * static_cast<uint32_t>(rng() % 16);
    }
  }
  for (int i = 0; i < classes; ++i) {
    if (i < 3) {  // the growing classes
      a.instances[i] += a.instances[i] / 500 + 1;
    } else if (rng() % 10 == 0) {  // drift by up to +-1 %
      const uint64_t range = a.instances[i] / 50 + 1;
      const uint64_t step = rng() % (range + 1);
      a.instances[i] = std::max<uint64_t>(1, a.instances[i] + step - range / 2);
    }
  }
}

av1::AgentMessage Histogram(Agent& a, int classes, Mode mode, std::mt19937_64& rng) {
  av1::AgentMessage m;
  av1::Histogram* h = m.mutable_histogram();
  h->set_sequence(++a.sequence);
  heapwatch::proto::ToTimestamp(absl::Now(), h->mutable_time());
  h->set_mode(av1::HISTOGRAM_MODE_ALL);
  if (!a.defined) {
    for (int i = 1; i <= classes; ++i) {
      av1::ClassDefinition* c = h->add_new_classes();
      c->set_class_ref(i);
      c->set_class_name("com.example.load.pkg" + std::to_string(i % 97) + ".Class" +
                        std::to_string(i));
      c->set_module(i % 3 == 0 ? "java.base@17.0.15" : "");
    }
    a.defined = true;
  }
  if (mode == Mode::kRealistic) Drift(a, classes, rng);
  uint64_t ti = 0, tb = 0;
  for (int i = 1; i <= classes; ++i) {
    uint64_t inst, bytes;
    if (mode == Mode::kRealistic) {
      inst = a.instances[i - 1];
      bytes = inst * a.instance_bytes[i - 1];
    } else {
      inst = 1000 + (rng() % 50) + (i == 1 ? a.sequence * 100 : 0);
      bytes = inst * 24;
    }
    h->add_class_refs(i);
    h->add_instances(inst);
    h->add_bytes(bytes);
    ti += inst;
    tb += bytes;
  }
  h->set_total_instances(ti);
  h->set_total_bytes(tb);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: %s TARGET AGENTS CLASSES SECONDS THREADS [realistic|random]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode_name = argc == 7 ? argv[6] : "realistic";
  if (mode_name != "realistic" && mode_name != "random") {
    std::fprintf(stderr, "unknown mode %s (realistic or random)\n", mode_name.c_str());
    return 2;
  }
  const Mode mode = mode_name == "random" ? Mode::kRandom : Mode::kRealistic;
  const std::string target = argv[1];
  const int agents = std::atoi(argv[2]), classes = std::atoi(argv[3]);
  const int seconds = std::atoi(argv[4]), threads = std::atoi(argv[5]);
  const absl::Time start_time = absl::FromUnixMillis(absl::ToUnixMillis(absl::Now()));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string agent_host = std::string("load-") + host;

  std::atomic<uint64_t> acked{0}, acked_total{0}, lost{0}, refused{0};
  std::mutex lat_mu;
  std::vector<double> latencies_ms;
  std::vector<std::thread> pool;
  const absl::Time end = absl::Now() + absl::Seconds(seconds) + absl::Seconds(5);
  std::atomic<int64_t> measure_from_ns{INT64_MAX};  // Unix ns; set once all agents registered
  std::atomic<int> registered{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      // A few channels per thread (HTTP/2 stream limits), agents spread over them.
      std::vector<std::shared_ptr<grpc::Channel>> channels;
      for (int c = 0; c < 4; ++c) {
        grpc::ChannelArguments args;
        args.SetInt("grpc.channel_id", t * 16 + c);  // distinct connections
        channels.push_back(
            grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
      }
      std::vector<std::unique_ptr<av1::AgentGateway::Stub>> stubs;
      for (auto& ch : channels) stubs.push_back(av1::AgentGateway::NewStub(ch));
      std::vector<Agent> mine;
      for (int i = t; i < agents; i += threads) {
        Agent a;
        a.context = std::make_unique<grpc::ClientContext>();
        a.stream = stubs[mine.size() % stubs.size()]->Connect(a.context.get());
        av1::AgentMessage reg;
        av1::Register* r = reg.mutable_register_();
        const int64_t pid = 100000 + i;
        r->set_agent_id(heapwatch::collectors::MakeAgentId(agent_host, pid, start_time).value);
        r->set_host(agent_host);
        r->set_pid(pid);
        heapwatch::proto::ToTimestamp(start_time, r->mutable_jvm_start_time());
        r->set_main_class("com.example.load.Main");
        r->set_protocol_version(1);
        av1::DaemonMessage reply;
        if (!a.stream->Write(reg) || !a.stream->Read(&reply) || !reply.has_registered()) {
          refused++;
          continue;
        }
        a.sequence = reply.registered().stored_through();
        // Spread the agents over the second.
        a.next = absl::Now() + absl::Milliseconds(rng() % 1000);
        mine.push_back(std::move(a));
        registered++;
      }
      std::vector<double> local;
      while (absl::Now() < end) {
        absl::Time soonest = end;
        for (Agent& a : mine) {
          if (a.failed) continue;
          const absl::Time now = absl::Now();
          if (a.next > now) {
            soonest = std::min(soonest, a.next);
            continue;
          }
          a.next += absl::Seconds(1);
          if (a.next < now) a.next = now + absl::Seconds(1);  // behind: skip, do not burst
          av1::AgentMessage m = Histogram(a, classes, mode, rng);
          const absl::Time sent = absl::Now();
          av1::DaemonMessage reply;
          if (!a.stream->Write(m) || !a.stream->Read(&reply) || !reply.has_ack()) {
            a.failed = true;
            lost++;
            continue;
          }
          if (reply.ack().stored_through() != a.sequence) lost++;
          acked_total++;
          if (absl::ToUnixNanos(sent) >= measure_from_ns.load()) {
            acked++;
            local.push_back(absl::ToDoubleMilliseconds(absl::Now() - sent));
          }
        }
        const absl::Time now = absl::Now();
        if (soonest > now) absl::SleepFor(std::min(soonest - now, absl::Milliseconds(20)));
      }
      for (Agent& a : mine) {
        a.stream->WritesDone();
        a.context->TryCancel();
      }
      std::lock_guard<std::mutex> lock(lat_mu);
      latencies_ms.insert(latencies_ms.end(), local.begin(), local.end());
    });
  }
  // Measure the last SECONDS seconds (the first 5 s register and define the classes).
  while (registered.load() + refused.load() < agents &&
         absl::Now() < end - absl::Seconds(seconds)) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  const absl::Time measure_start = absl::Now();
  measure_from_ns = absl::ToUnixNanos(measure_start);
  for (std::thread& t : pool) t.join();
  const double window = absl::ToDoubleSeconds(end - measure_start);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    return latencies_ms.empty()
               ? 0.0
               : latencies_ms[std::min(latencies_ms.size() - 1,
                                       static_cast<size_t>(p * latencies_ms.size()))];
  };
  std::printf(
      "agents %d registered %d refused %llu classes %d mode %s window %.1f s\n"
      "acked %llu histograms = %.1f histograms/s (target %d/s)\n"
      "ack latency ms: p50 %.1f p99 %.1f max %.1f\n"
      "lost or out-of-order acks %llu\n"
      "acked in total (registration phase included) %llu\n",
      agents, registered.load(), static_cast<unsigned long long>(refused.load()), classes,
      mode_name.c_str(), window, static_cast<unsigned long long>(acked.load()),
      acked.load() / window, agents, pct(0.5), pct(0.99),
      latencies_ms.empty() ? 0.0 : latencies_ms.back(),
      static_cast<unsigned long long>(lost.load()),
      static_cast<unsigned long long>(acked_total.load()));
  return lost.load() == 0 && refused.load() == 0 ? 0 : 1;
}
