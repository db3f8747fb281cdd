// Time source for everything that schedules, expires or timestamps. Production code uses SystemClock;
// tests inject FakeClock (time is the one thing tests may fake).
//
// Thread-safety: both implementations are safe to call from any thread.
#ifndef HEAPWATCH_COMMON_CLOCK_H_
#define HEAPWATCH_COMMON_CLOCK_H_

#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace heapwatch {

class Clock {
 public:
  virtual ~Clock() = default;
  // Current wall-clock time.
  virtual absl::Time Now() const = 0;
  // The process-wide real clock. Never null; lives for the whole program.
  static Clock* Real();
};

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

inline Clock* Clock::Real() {
  static SystemClock* clock = new SystemClock();
  return clock;
}

// A clock that only moves when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}
  absl::Time Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = t;
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_;
};

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_CLOCK_H_
