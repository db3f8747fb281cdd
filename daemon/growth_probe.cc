#include "daemon/growth_probe.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace heapwatch::daemon {

void GrowthProbe::ObserveUpperBound(absl::Time time, uint64_t bytes, uint64_t max_bytes) {
  if (!rise_.empty() && time <= rise_.back().first) return;
  max_bytes_ = max_bytes;
  rise_.emplace_back(time, bytes);
  // Only the rise since the newest exact point matters; a long stretch without one keeps the last
  // 64 readings (the oldest of them is the rise's base).
  if (rise_.size() > 64) rise_.erase(rise_.begin() + 1, rise_.begin() + 2);
}

void GrowthProbe::ObserveExact(const LiveSetPoint& point) {
  if (point.source == LiveSetSource::kYoungUpperBound) return;
  if (point.max_bytes > 0) max_bytes_ = point.max_bytes;
  // The upper bounds start again after any old-generation reclaim; only full collections are
  // exact enough to confirm or refute a rise (a concurrent cycle's end still holds what was
  // allocated during the cycle, and G1's mixed-phase minimum climbs as the heap is committed).
  rise_.clear();
  if (point.source != LiveSetSource::kFullGc) return;
  if (!exact_.empty()) {
    uint64_t record = 0;
    for (const LiveSetPoint& p : exact_) record = std::max(record, p.live_bytes);
    if (point.live_bytes >= record + RiseNeeded()) {
      // Above every recent exact point: confirm, and forget earlier misses.
      confirming_ = true;
      confirmations_ = 0;
      backoff_ = absl::ZeroDuration();
      backoff_until_ = absl::InfinitePast();
    } else if (confirming_) {
      if (++confirmations_ >= options_.max_confirmations) confirming_ = false;
    } else {
      // The rise that asked for this point (if one did) was garbage: back off.
      backoff_ = backoff_ == absl::ZeroDuration()
                     ? options_.backoff_initial
                     : std::min(options_.backoff_max, backoff_ * 2);
      backoff_until_ = point.time + backoff_;
    }
  }
  exact_.push_back(point);
  if (exact_.size() > options_.record_points) exact_.erase(exact_.begin());
}

uint64_t GrowthProbe::RiseNeeded() const {
  return std::max<uint64_t>(
      options_.min_rise_bytes,
      static_cast<uint64_t>(options_.min_rise_fraction * static_cast<double>(max_bytes_)));
}

bool GrowthProbe::RiseSeen() const {
  if (rise_.size() < options_.min_readings) return false;
  if (rise_.back().first - rise_.front().first < options_.min_rise_span) return false;
  const uint64_t base = exact_.empty() ? rise_.front().second
                                       : std::min(exact_.back().live_bytes, rise_.front().second);
  // Rising: the newest reading above the base by RiseNeeded(), and above the middle one (still
  // rising).
  const uint64_t newest = rise_.back().second;
  return newest >= base + RiseNeeded() && newest > rise_[rise_.size() / 2].second;
}

GrowthProbe::Want GrowthProbe::Wants(absl::Time now) const {
  if (confirming_) return Want::kConfirm;
  if (now < backoff_until_) return Want::kNothing;
  return RiseSeen() ? Want::kProbe : Want::kNothing;
}

std::string GrowthProbe::Describe(absl::Time now) const {
  switch (Wants(now)) {
    case Want::kConfirm:
      return absl::StrFormat("confirming (%d exact points without a rise)", confirmations_);
    case Want::kProbe:
      return "probing";
    case Want::kNothing:
      break;
  }
  if (now < backoff_until_) {
    return absl::StrCat("backing off for ", absl::FormatDuration(backoff_until_ - now));
  }
  return "idle";
}

}  // namespace heapwatch::daemon
