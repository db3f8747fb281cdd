// The agent gateway's messages (proto/heapwatch/agent/v1/agent.proto) checked and turned into the
// daemon's model: Register -> AgentInfo, Histogram (with the stream's class dictionary) ->
// Snapshot, LiveSet -> live-set points. Everything an agent sends is untrusted: every string is
// bounded and must be printable UTF-8 (common/utf8.h), every count is bounded, and a message that
// breaks a rule of the protocol's file comment is refused whole with InvalidArgument naming the
// rule. Used by daemon/agent_gateway.cc. Pure functions; thread-compatible (a ClassDictionary
// belongs to one stream).
#ifndef HEAPWATCH_DAEMON_AGENT_MESSAGES_H_
#define HEAPWATCH_DAEMON_AGENT_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/agent.h"
#include "common/gc.h"
#include "common/histogram.h"
#include "common/status.h"
#include "heapwatch/agent/v1/agent.pb.h"

namespace heapwatch::daemon {

// Whether `s` is at most `max` bytes (and not empty unless `allow_empty`) of well-formed UTF-8
// without C0, DEL or C1 control characters. O(s.size()).
bool IsPrintableUtf8(std::string_view s, size_t max, bool allow_empty = false);

// A free text from an agent (a budget note, a failure reason) made safe to show and to put in a
// proto3 string: at most `max` bytes, cut at a code point boundary; each ill-formed sequence
// becomes U+FFFD and each C0, DEL or C1 control character '?'. O(s.size()).
std::string PrintableText(std::string_view s, size_t max);

// A stream's class dictionary (agent.proto: ids valid within one Connect stream).
struct ClassDictionary {
  struct Entry {
    std::string name, module;
  };
  std::unordered_map<uint32_t, Entry> classes;
  size_t bytes = 0;  // of the names and modules
};

// Register -> AgentInfo of kind kRegistered. Checks: protocol_version 1; host 1..255 printable
// bytes; pid in (0, 2^32]; jvm_start_time present; agent_id == collectors::MakeAgentId(host, pid,
// jvm_start_time) (the one id scheme of attach and registered agents); main class, versions,
// collector and at most 16 labels (keys [a-z0-9_]{1,32}, values <= 128 bytes) printable.
// Errors: InvalidArgument "Register: <rule>". O(size of the message).
StatusOr<AgentInfo> ValidateRegister(const heapwatch::agent::v1::Register& r);

// Histogram -> Snapshot of `agent` with the stream's dictionary `dict`, which gains the histogram's
// new_classes only when the whole histogram is valid. Checks: time present; mode LIVE, ALL or
// ALL_AFTER_GC; pause >= 0; parallel arrays of equal length, at most 1,000,000 rows; class refs
// defined once (non-zero), names 1..4096 and modules <= 1024 bytes printable, at most 1,000,000
// classes and 64 MiB of names per stream; every row's ref defined; totals equal the sums (no
// overflow). Rows keep the agent's order. Errors: InvalidArgument "Histogram <sequence>: <rule>".
// O(rows + new classes).
StatusOr<Snapshot> ToSnapshot(const heapwatch::agent::v1::Histogram& h, const AgentId& agent,
                              ClassDictionary* dict);
// The same into `*out`, reusing its rows' storage (a stream keeps one Snapshot for all its
// histograms: no allocation per row once the row strings have grown). On error `*out` is left
// partly overwritten (the dictionary is unchanged, as above).
Status ToSnapshot(const heapwatch::agent::v1::Histogram& h, const AgentId& agent,
                  ClassDictionary* dict, Snapshot* out);

// LiveSet -> points (at most 10,000; each with a time and a known source). Errors: InvalidArgument
// "LiveSet <sequence>: <rule>". O(points).
StatusOr<std::vector<LiveSetPoint>> ToLiveSet(const heapwatch::agent::v1::LiveSet& l);

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AGENT_MESSAGES_H_
