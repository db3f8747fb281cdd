#include "ctl/agent_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

#include "collectors/agent_load.h"
#include "collectors/local_jvm.h"

namespace heapwatch::ctl {
namespace {

struct AgentLoadArgs {
  int64_t pid = 0;
  std::string options;
  std::string library;
};

// libheapwatch_agent.so next to this heapwatchctl: installed (../lib/heapwatch, ../lib) or in a
// build tree (../agent). Empty when none exists.
std::string FindAgentLibrary() {
  char exe[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  for (const char* rel : {"/../lib/heapwatch/libheapwatch_agent.so",
                          "/../lib/libheapwatch_agent.so", "/../agent/libheapwatch_agent.so"}) {
    std::string path = dir + rel;
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

int RunAgentLoad(const AgentLoadArgs& args, std::ostream& out, std::ostream& err) {
  std::string library = args.library.empty() ? FindAgentLibrary() : args.library;
  if (library.empty()) {
    err << "heapwatchctl: libheapwatch_agent.so not found next to heapwatchctl; pass "
           "--agent-library PATH\n";
    return kExitUsage;
  }
  char resolved[PATH_MAX];
  if (realpath(library.c_str(), resolved) == nullptr) {
    err << "heapwatchctl: agent library " << library << " not found\n";
    return kExitUsage;
  }
  std::optional<collectors::LocalJvm> jvm;
  for (const collectors::LocalJvm& j : collectors::DiscoverLocalJvms({})) {
    if (j.pid == args.pid) jvm = j;
  }
  if (!jvm.has_value()) {
    err << "heapwatchctl: no local HotSpot JVM with pid " << args.pid
        << " (not running, not a JVM, -XX:-UsePerfData, or another user's and we are not root)\n";
    return kExitError;
  }
  Status s = collectors::LoadAgentLibrary(*jvm, resolved, args.options, {});
  if (!s.ok()) {
    err << "heapwatchctl: agent load: " << s.message() << "\n";
    return kExitError;
  }
  out << "loaded " << resolved << " into JVM " << args.pid << "\n";
  return kExitOk;
}

}  // namespace

Subcommand AddAgentCommand(CLI::App& app) {
  CLI::App* agent = app.add_subcommand("agent", "The in-process JVM agent (libheapwatch_agent.so)");
  agent->require_subcommand(1);
  auto args = std::make_shared<AgentLoadArgs>();
  CLI::App* load = agent->add_subcommand(
      "load",
      "Load the agent into a running local JVM (attach 'load'); it then registers with "
      "heapwatchd at the address in OPTIONS");
  load->add_option("pid", args->pid, "Process id of the JVM")->required();
  load->add_option("options", args->options,
                   "Agent options, e.g. address=unix:/run/heapwatch/agents.sock (docs/agent.md)");
  load->add_option("--agent-library", args->library,
                   "Path of libheapwatch_agent.so (default: found next to heapwatchctl)");
  return {agent, [args](const GlobalOptions&, std::ostream& o, std::ostream& e) {
            return RunAgentLoad(*args, o, e);
          }};
}

}  // namespace heapwatch::ctl
