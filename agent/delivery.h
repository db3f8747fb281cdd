// What the agent delivers to the daemon with a sequence number (agent.proto, "Session" 2), kept in
// a bounded buffer until the daemon acknowledges it, and encoded per Connect stream (the class
// dictionary is per stream, so buffered histograms keep class names, not stream ids).
//
// Thread-safety: DeliveryBuffer and StreamEncoder are thread-compatible; the agent's session guards
// its buffer with a mutex and owns one StreamEncoder per stream.
#ifndef HEAPWATCH_AGENT_DELIVERY_H_
#define HEAPWATCH_AGENT_DELIVERY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "common/histogram.h"
#include "heapwatch/agent/v1/agent.pb.h"

namespace heapwatch::agent {

namespace v1 = ::heapwatch::agent::v1;

// One class histogram taken in the JVM, as the daemon will receive it.
struct HistogramDelivery {
  absl::Time time;  // wall clock when taken
  v1::HistogramMode mode = v1::HISTOGRAM_MODE_UNSPECIFIED;
  absl::Duration pause;  // safepoint time across the command
  ClassHistogram histogram;
  uint64_t request_id = 0;  // HistogramRequest.request_id, 0 for a scheduled one
};

struct Delivery {
  uint64_t sequence = 0;
  // A histogram, or live-set points (already stream-independent, sent as they are).
  std::variant<HistogramDelivery, v1::LiveSet> body;
};

// Deliveries not yet acknowledged, in sequence order. Sequences start at 1 and increase by one per
// Add over the whole JVM run. When full, Add drops the oldest delivery (a gap the daemon counts).
class DeliveryBuffer {
 public:
  // REQUIRES: capacity >= 1.
  explicit DeliveryBuffer(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // Appends `body` with the next sequence number and returns that number. O(1) amortised.
  uint64_t Add(std::variant<HistogramDelivery, v1::LiveSet> body);
  // Drops every delivery with sequence <= stored_through (Registered / Ack). O(dropped).
  void AckThrough(uint64_t stored_through);
  // The oldest delivery with sequence > `after`, or nullptr. The pointer is valid until the next
  // non-const call. O(log size).
  const Delivery* NextAfter(uint64_t after) const;

  size_t size() const { return deliveries_.size(); }
  // Deliveries dropped because the buffer was full (since construction).
  uint64_t dropped() const { return dropped_; }
  // The sequence the next Add gets.
  uint64_t next_sequence() const { return next_sequence_; }

 private:
  size_t capacity_;
  std::deque<Delivery> deliveries_;
  uint64_t next_sequence_ = 1;
  uint64_t dropped_ = 0;
};

// Encodes deliveries for one Connect stream: assigns class refs 1, 2, 3, ... to (name, module)
// pairs and puts a ClassDefinition into the first histogram of the stream that uses each. Rows
// whose name or module the daemon would refuse (not printable UTF-8, or longer than 4096 bytes) are
// left out and the totals reduced by them, so one odd class cannot end the stream.
class StreamEncoder {
 public:
  v1::AgentMessage Encode(const Delivery& delivery);
  // Classes defined in this stream so far.
  size_t classes() const { return refs_.size(); }

 private:
  absl::flat_hash_map<std::pair<std::string, std::string>, uint32_t> refs_;
};

// Whether the daemon accepts `name` as a class name or module: 1..4096 bytes (module: 0..4096) of
// valid UTF-8 without control characters. Pure.
bool IsAcceptableClassText(std::string_view text, bool allow_empty);

}  // namespace heapwatch::agent

#endif  // HEAPWATCH_AGENT_DELIVERY_H_
