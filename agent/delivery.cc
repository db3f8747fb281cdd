#include "agent/delivery.h"

#include <algorithm>

#include "proto/time_util.h"

namespace heapwatch::agent {

uint64_t DeliveryBuffer::Add(std::variant<HistogramDelivery, v1::LiveSet> body) {
  if (deliveries_.size() >= capacity_) {
    deliveries_.pop_front();
    ++dropped_;
  }
  uint64_t sequence = next_sequence_++;
  deliveries_.push_back(Delivery{sequence, std::move(body)});
  return sequence;
}

void DeliveryBuffer::AckThrough(uint64_t stored_through) {
  while (!deliveries_.empty() && deliveries_.front().sequence <= stored_through) {
    deliveries_.pop_front();
  }
}

const Delivery* DeliveryBuffer::NextAfter(uint64_t after) const {
  auto it = std::upper_bound(deliveries_.begin(), deliveries_.end(), after,
                             [](uint64_t s, const Delivery& d) { return s < d.sequence; });
  return it == deliveries_.end() ? nullptr : &*it;
}

bool IsAcceptableClassText(std::string_view text, bool allow_empty) {
  if (text.empty()) return allow_empty;
  if (text.size() > 4096) return false;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    int extra = 0;
    uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      unsigned char cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    if (cp >= 0x80 && cp < 0xa0) return false;  // C1 controls
    i += extra + 1;
  }
  return true;
}

v1::AgentMessage StreamEncoder::Encode(const Delivery& delivery) {
  v1::AgentMessage message;
  if (const auto* live = std::get_if<v1::LiveSet>(&delivery.body)) {
    *message.mutable_live_set() = *live;
    message.mutable_live_set()->set_sequence(delivery.sequence);
    return message;
  }
  const HistogramDelivery& h = std::get<HistogramDelivery>(delivery.body);
  v1::Histogram* out = message.mutable_histogram();
  out->set_sequence(delivery.sequence);
  proto::ToTimestamp(h.time, out->mutable_time());
  out->set_mode(h.mode);
  proto::ToDuration(h.pause, out->mutable_pause());
  out->set_request_id(h.request_id);
  uint64_t total_instances = h.histogram.total_instances;
  uint64_t total_bytes = h.histogram.total_bytes;
  for (const ClassHistogramRow& row : h.histogram.rows) {
    if (!IsAcceptableClassText(row.class_name, false) || !IsAcceptableClassText(row.module, true)) {
      total_instances -= std::min(total_instances, row.instances);
      total_bytes -= std::min(total_bytes, row.bytes);
      continue;
    }
    auto [it, inserted] = refs_.try_emplace(std::make_pair(row.class_name, row.module),
                                            static_cast<uint32_t>(refs_.size() + 1));
    if (inserted) {
      v1::ClassDefinition* def = out->add_new_classes();
      def->set_class_ref(it->second);
      def->set_class_name(row.class_name);
      def->set_module(row.module);
    }
    out->add_class_refs(it->second);
    out->add_instances(row.instances);
    out->add_bytes(row.bytes);
  }
  out->set_total_instances(total_instances);
  out->set_total_bytes(total_bytes);
  return message;
}

}  // namespace heapwatch::agent
