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
// Every simulated agent runs on its own thread with its own stream, as a real agent runs in its
// own JVM: it sends on its own 1-second schedule, and a slow acknowledgement delays only that
// agent. (Until 2026-11-25 a few threads each served 62 agents in turn, so one slow ack held back
// 61 other agents' histograms: that measured the load generator's queueing, not the daemon.) An
// agent whose previous histogram is still unacknowledged when its next one is due does not burst:
// the slot is counted as missed ("late slots"), and the histograms/s figure falls short.
//
// Phases: all agents connect and register at once; each agent's first histogram defines its
// classes (3,000 names: the daemon interns them into its store), so the first second is a burst of
// a fleet's start, not the steady state. The measured window of SECONDS seconds starts
// kSettleSeconds after every agent's first histogram was acknowledged; the start-up phase is
// reported on its own line (how long until every first histogram was stored, and the slots missed
// meanwhile).
// The agents share CONNECTIONS gRPC connections (HTTP/2 multiplexes their streams); the default
// is one per agent, as real agents in separate JVMs have.
//
// Usage: heapwatch_agent_load TARGET AGENTS CLASSES SECONDS [CONNECTIONS] [realistic|random]
#include <sys/resource.h>
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
#include "bench/gateway/realistic_counts.h"
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
  bool defined_acked = false;  // its first histogram (with the class definitions) was acknowledged
  bool failed = false;
  heapwatch::bench::RealisticCounts counts;  // realistic mode
};

enum class Mode { kRealistic, kRandom };

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
  if (mode == Mode::kRealistic) heapwatch::bench::NextRealisticCounts(classes, rng, &a.counts);
  uint64_t ti = 0, tb = 0;
  for (int i = 1; i <= classes; ++i) {
    uint64_t inst, bytes;
    if (mode == Mode::kRealistic) {
      inst = a.counts.instances[i - 1];
      bytes = inst * a.counts.instance_bytes[i - 1];
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
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr,
                 "usage: %s TARGET AGENTS CLASSES SECONDS [CONNECTIONS] [realistic|random]\n",
                 argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  const int agents = std::atoi(argv[2]), classes = std::atoi(argv[3]);
  const int seconds = std::atoi(argv[4]);
  const int connections = argc >= 6 ? std::atoi(argv[5]) : agents;
  const std::string mode_name = argc == 7 ? argv[6] : "realistic";
  if (mode_name != "realistic" && mode_name != "random") {
    std::fprintf(stderr, "unknown mode %s (realistic or random)\n", mode_name.c_str());
    return 2;
  }
  if (agents < 1 || classes < 1 || seconds < 1 || connections < 1) {
    std::fprintf(stderr, "AGENTS, CLASSES, SECONDS and CONNECTIONS must be positive\n");
    return 2;
  }
  const Mode mode = mode_name == "random" ? Mode::kRandom : Mode::kRealistic;
  const absl::Time run_start = absl::Now();
  const absl::Time start_time = absl::FromUnixMillis(absl::ToUnixMillis(absl::Now()));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string agent_host = std::string("load-") + host;

  std::vector<std::unique_ptr<av1::AgentGateway::Stub>> stubs;
  for (int c = 0; c < std::min(connections, agents); ++c) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", c);  // distinct connections
    stubs.push_back(av1::AgentGateway::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
  }

  std::atomic<uint64_t> acked{0}, acked_total{0}, lost{0}, refused{0}, late{0}, late_startup{0};
  std::atomic<int> first_acked{0};
  std::mutex lat_mu;
  std::vector<double> latencies_ms;
  std::vector<std::thread> pool;
  // Unix ns: the measured window [measure_from, end), set by the main thread once the start-up is
  // over (or after kStartupLimit).
  std::atomic<int64_t> measure_from_ns{INT64_MAX}, end_ns{INT64_MAX};
  std::atomic<int> registered{0};
  pool.reserve(agents);
  for (int i = 0; i < agents; ++i) {
    pool.emplace_back([&, i] {
      std::mt19937_64 rng(i);
      Agent a;
      a.context = std::make_unique<grpc::ClientContext>();
      a.stream = stubs[i % stubs.size()]->Connect(a.context.get());
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
        a.context->TryCancel();
        return;
      }
      a.sequence = reply.registered().stored_through();
      registered++;
      // Agents start at random points of the second, as JVMs started at different times do.
      a.next = absl::Now() + absl::Milliseconds(rng() % 1000);
      std::vector<double> local;
      while (!a.failed) {
        const absl::Time now = absl::Now();
        if (absl::ToUnixNanos(a.next) >= end_ns.load()) break;
        if (a.next > now) {
          absl::SleepFor(a.next - now);
          continue;
        }
        const bool measured = absl::ToUnixNanos(a.next) >= measure_from_ns.load();
        a.next += absl::Seconds(1);
        while (a.next < now) {  // behind: skip the missed slots, do not burst
          (measured ? late : late_startup)++;
          a.next += absl::Seconds(1);
        }
        av1::AgentMessage m = Histogram(a, classes, mode, rng);
        const absl::Time sent = absl::Now();
        if (!a.stream->Write(m) || !a.stream->Read(&reply) || !reply.has_ack()) {
          a.failed = true;
          lost++;
          break;
        }
        if (reply.ack().stored_through() != a.sequence) lost++;
        acked_total++;
        if (!a.defined_acked) {
          a.defined_acked = true;
          first_acked++;
        }
        if (absl::ToUnixNanos(sent) >= measure_from_ns.load()) {
          acked++;
          local.push_back(absl::ToDoubleMilliseconds(absl::Now() - sent));
        }
      }
      a.stream->WritesDone();
      a.context->TryCancel();
      std::lock_guard<std::mutex> lock(lat_mu);
      latencies_ms.insert(latencies_ms.end(), local.begin(), local.end());
    });
  }
  // Start-up: until every registered agent's first histogram is acknowledged (at most
  // kStartupLimit), then kSettleSeconds more for the backlog; then the window.
  constexpr absl::Duration kStartupLimit = absl::Seconds(120), kSettle = absl::Seconds(10);
  while (absl::Now() < run_start + kStartupLimit &&
         (registered.load() + refused.load() < static_cast<uint64_t>(agents) ||
          first_acked.load() < registered.load())) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const double startup_s = absl::ToDoubleSeconds(absl::Now() - run_start);
  const int startup_done = first_acked.load();
  absl::SleepFor(kSettle);
  const absl::Time measure_start = absl::Now();
  const absl::Time end = measure_start + absl::Seconds(seconds);
  measure_from_ns = absl::ToUnixNanos(measure_start);
  end_ns = absl::ToUnixNanos(end);
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
      "start-up: %d of %d agents' first histograms (class definitions) acknowledged %.1f s after "
      "the start; %llu slots missed before the window (which starts %.0f s later)\n",
      startup_done, registered.load(), startup_s,
      static_cast<unsigned long long>(late_startup.load()), absl::ToDoubleSeconds(kSettle));
  std::printf(
      "agents %d registered %d refused %llu classes %d mode %s connections %zu window %.1f s\n"
      "acked %llu histograms = %.1f histograms/s (target %d/s)\n"
      "late slots (an agent's previous histogram still unacknowledged when the next was due) %llu\n"
      "ack latency ms: p50 %.1f p99 %.1f max %.1f\n"
      "lost or out-of-order acks %llu\n"
      "acked in total (registration phase included) %llu\n",
      agents, registered.load(), static_cast<unsigned long long>(refused.load()), classes,
      mode_name.c_str(), stubs.size(), window, static_cast<unsigned long long>(acked.load()),
      acked.load() / window, agents, static_cast<unsigned long long>(late.load()), pct(0.5),
      pct(0.99), latencies_ms.empty() ? 0.0 : latencies_ms.back(),
      static_cast<unsigned long long>(lost.load()),
      static_cast<unsigned long long>(acked_total.load()));
  // The load generator shares the machine with the daemon: its own CPU is part of the picture.
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  const double cpu_s = self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + self.ru_stime.tv_sec +
                       self.ru_stime.tv_usec / 1e6;
  std::printf(
      "load generator CPU: %.1f s = %.3f cores over the whole run, %.3f ms per acked histogram\n",
      cpu_s, cpu_s / absl::ToDoubleSeconds(absl::Now() - run_start),
      acked_total.load() ? cpu_s * 1000 / acked_total.load() : 0.0);
  return lost.load() == 0 && refused.load() == 0 ? 0 : 1;
}
