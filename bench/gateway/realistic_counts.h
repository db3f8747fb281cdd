// The "realistic" histograms of the gateway benchmarks (docs/agents.md, "Load"), one definition for
// heapwatch_agent_load, heapwatch_agent_memory and heapwatch_detector_cost: as a real JVM's class
// counts look from one second to the next. A stable class set with fixed sizes per instance and
// heavy-tailed counts (about 1,000,000 / rank instances, at least 1; 16-136 bytes per instance);
// per histogram about 90 % of the counts unchanged, the others drifting by up to +-1 %, and the
// first 3 classes growing by 0.2 %.
#ifndef HEAPWATCH_BENCH_GATEWAY_REALISTIC_COUNTS_H_
#define HEAPWATCH_BENCH_GATEWAY_REALISTIC_COUNTS_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace heapwatch::bench {

struct RealisticCounts {
  std::vector<uint64_t> instances;       // per class
  std::vector<uint32_t> instance_bytes;  // per class, fixed
};

// The counts of the next histogram of `classes` classes: the first call draws the class set, and
// every call (the first included) applies one histogram's drift. O(classes).
inline void NextRealisticCounts(int classes, std::mt19937_64& rng, RealisticCounts* c) {
  if (c->instances.empty()) {
    c->instances.resize(classes);
    c->instance_bytes.resize(classes);
    for (int i = 0; i < classes; ++i) {
      c->instances[i] = 1 + 1000000 / (1 + (rng() % (classes + 1)));
      c->instance_bytes[i] = 16 + 8 * static_cast<uint32_t>(rng() % 16);
    }
  }
  for (int i = 0; i < classes; ++i) {
    uint64_t& n = c->instances[i];
    if (i < 3) {  // the growing classes
      n += n / 500 + 1;
    } else if (rng() % 10 == 0) {  // drift by up to +-1 %
      const uint64_t range = n / 50 + 1;
      const uint64_t step = rng() % (range + 1);
      n = std::max<uint64_t>(1, n + step - range / 2);
    }
  }
}

}  // namespace heapwatch::bench

#endif  // HEAPWATCH_BENCH_GATEWAY_REALISTIC_COUNTS_H_
