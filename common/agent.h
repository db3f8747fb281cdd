// Agents: the JVMs heapwatch watches, and what it knows about them.
#ifndef HEAPWATCH_COMMON_AGENT_H_
#define HEAPWATCH_COMMON_AGENT_H_

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/time/time.h"

namespace heapwatch {

// Stable identifier of one JVM process (one agent). A distinct type so that agent ids, class names and other
// strings cannot be mixed up. Ids are short printable ASCII strings ([A-Za-z0-9._:-]), at most 128 bytes;
// a restarted JVM is a new agent.
struct AgentId {
  std::string value;

  AgentId() = default;
  explicit AgentId(std::string v) : value(std::move(v)) {}
  friend auto operator<=>(const AgentId&, const AgentId&) = default;
  friend bool operator==(const AgentId&, const AgentId&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const AgentId& id) {
    return H::combine(std::move(h), id.value);
  }
};

// How the daemon reaches an agent.
enum class AgentKind : uint8_t {
  kLocalAttach = 1,  // a local HotSpot JVM reached through the attach socket
  kRegistered = 2,   // a JVM running heapwatch's in-process agent that registered over gRPC
};

// What heapwatch knows about an agent. Labels are read from the JVM itself (attach, hsperfdata, /proc),
// never guessed; a label that could not be read is empty (or 0 / absl::InfinitePast()).
struct AgentInfo {
  AgentId id;
  AgentKind kind = AgentKind::kLocalAttach;
  std::string host;          // host name of the machine the JVM runs on
  int64_t pid = 0;           // process id as seen from the daemon's pid namespace
  std::string main_class;    // main class or jar ("sun.java.command" first word)
  std::string jvm_version;   // "java.vm.version" / "java.version", e.g. "17.0.15+6-Debian-1deb12u1"
  absl::Time start_time = absl::InfinitePast();  // JVM start time (wall clock)
  uint32_t uid = 0;          // owner of the process
  uint32_t gid = 0;
  // A registered agent's labels (agent.proto Register.labels, validated: at most 16, keys
  // [a-z0-9_]{1,32}, values printable UTF-8 of at most 128 bytes); empty for attach agents. Kept
  // in memory while the agent is watched (the store's agent record does not hold them).
  std::map<std::string, std::string> labels;

  friend bool operator==(const AgentInfo&, const AgentInfo&) = default;
};

}  // namespace heapwatch

template <>
struct std::hash<heapwatch::AgentId> {
  size_t operator()(const heapwatch::AgentId& id) const noexcept {
    return std::hash<std::string>()(id.value);
  }
};

#endif  // HEAPWATCH_COMMON_AGENT_H_
