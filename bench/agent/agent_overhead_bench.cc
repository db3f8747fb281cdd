// What the in-process agent costs a JVM (docs/agent.md, "Overhead"):
//  1. a nearly idle JVM (HwAgentApp: 1,234 retained objects, 1 KiB allocated every 5 ms,
//     -Xmx256m, Serial GC) without the agent
//     and with it, connected to a recording AgentGateway (heartbeats every 10 s, no scheduled
//     histograms): RSS at the end and CPU time over IDLE_SECONDS (/proc/PID/stat utime+stime);
//  2. on the agent's JVM, alternately: a live histogram requested from the agent (its pause as the
//     agent reports it, Histogram.pause) and `GC.class_histogram` over the attach socket
//     (collectors::ExecuteJcmd, pause from the same safepoint counters): 5 of each, median.
// Usage: agent_overhead_bench [IDLE_SECONDS=10]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "collectors/attach.h"
#include "collectors/gc_counters.h"
#include "collectors/local_jvm.h"
#include "tests/agent/recording_gateway.h"

namespace heapwatch::agent::testing {
namespace {

struct ProcSample {
  double cpu_seconds = 0;
  long rss_kib = 0;
};

ProcSample Sample(pid_t pid) {
  ProcSample s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream in(text.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::stol(line.substr(6));
  }
  return s;
}

// CPU seconds over `seconds` of a JVM that printed "ready", and its RSS at the end.
ProcSample Idle(AgentJvm& jvm, double seconds) {
  jvm.WaitReady(absl::Seconds(20));
  absl::SleepFor(absl::Seconds(2));  // start-up and the agent's registration settle
  ProcSample a = Sample(jvm.pid());
  absl::SleepFor(absl::Seconds(seconds));
  ProcSample b = Sample(jvm.pid());
  return {b.cpu_seconds - a.cpu_seconds, b.rss_kib};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Main(int argc, char** argv) {
  double idle = argc > 1 ? std::atof(argv[1]) : 10;
  const double lifetime = idle + 60;
  ProcSample without;
  {
    AgentJvm jvm("", lifetime, nullptr, "-Xmx256m");
    without = Idle(jvm, idle);
  }
  auto st = std::make_shared<GatewayState>();
  st->config = Config(absl::ZeroDuration(), absl::Seconds(10));
  std::string socket = SocketPath();
  TestServer server(st, "unix:" + socket);
  AgentJvm jvm("address=unix:" + socket, lifetime, nullptr, "-Xmx256m");
  ProcSample with = Idle(jvm, idle);
  {
    std::lock_guard<std::mutex> lock(st->mu);
    if (st->registers.empty()) {
      std::fprintf(stderr, "the agent did not register: %s\n", jvm.Stderr().c_str());
      return 1;
    }
  }
  std::optional<collectors::LocalJvm> local;
  for (const auto& j : collectors::DiscoverLocalJvms({})) {
    if (j.pid == jvm.pid()) local = j;
  }
  if (!local) {
    std::fprintf(stderr, "JVM %d not discovered\n", jvm.pid());
    return 1;
  }
  std::vector<double> agent_ms, jcmd_ms;
  for (int i = 1; i <= 5; ++i) {
    v1::DaemonMessage request;
    request.mutable_histogram_request()->set_request_id(i);
    request.mutable_histogram_request()->set_mode(v1::HISTOGRAM_MODE_LIVE);
    st->Push(request);
    st->WaitFor([&] { return st->histograms.size() >= static_cast<size_t>(i); }, absl::Seconds(30));
    {
      std::lock_guard<std::mutex> lock(st->mu);
      agent_ms.push_back(absl::ToDoubleMilliseconds(st->histograms.back().pause));
    }
    auto before = collectors::ReadGcCountersFile(local->perfdata_path);
    auto text = collectors::ExecuteJcmd(*local, "GC.class_histogram", {});
    auto after = collectors::ReadGcCountersFile(local->perfdata_path);
    if (!text.ok() || !before.ok() || !after.ok()) {
      std::fprintf(stderr, "jcmd histogram failed\n");
      return 1;
    }
    jcmd_ms.push_back(
        absl::ToDoubleMilliseconds(collectors::SafepointTimeBetween(*before, *after)));
  }
  std::printf("idle JVM over %.0f s            CPU s    RSS MiB\n", idle);
  std::printf("  without agent             %7.3f   %7.1f\n", without.cpu_seconds,
              without.rss_kib / 1024.0);
  std::printf("  with agent (connected)    %7.3f   %7.1f\n", with.cpu_seconds,
              with.rss_kib / 1024.0);
  std::printf("  added by the agent        %7.3f   %7.1f\n", with.cpu_seconds - without.cpu_seconds,
              (with.rss_kib - without.rss_kib) / 1024.0);
  std::printf("live histogram pause, median of 5 (ms): in-agent %.2f, jcmd (attach) %.2f\n",
              Median(agent_ms), Median(jcmd_ms));
  unlink(socket.c_str());
  return 0;
}

}  // namespace
}  // namespace heapwatch::agent::testing

int main(int argc, char** argv) { return heapwatch::agent::testing::Main(argc, argv); }
