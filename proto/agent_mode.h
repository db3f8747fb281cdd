// HistogramMode (common/gc.h) <-> heapwatch.agent.v1.HistogramMode (agent.proto): the one mapping
// the in-process agent and the daemon's gateway both use. The two enums have the same values today,
// but the mapping is spelled out so that neither side depends on that.
//
// Header-only, pure functions, thread-safe; O(1).
#ifndef HEAPWATCH_PROTO_AGENT_MODE_H_
#define HEAPWATCH_PROTO_AGENT_MODE_H_

#include "common/gc.h"
#include "heapwatch/agent/v1/agent.pb.h"

namespace heapwatch::proto {

// kUnknown for HISTOGRAM_MODE_UNSPECIFIED and for values agent.proto does not define.
inline HistogramMode FromAgentMode(agent::v1::HistogramMode mode) {
  switch (mode) {
    case agent::v1::HISTOGRAM_MODE_LIVE:
      return HistogramMode::kLive;
    case agent::v1::HISTOGRAM_MODE_ALL:
      return HistogramMode::kAll;
    case agent::v1::HISTOGRAM_MODE_ALL_AFTER_GC:
      return HistogramMode::kAllAfterGc;
    default:
      return HistogramMode::kUnknown;
  }
}

// HISTOGRAM_MODE_UNSPECIFIED for kUnknown.
inline agent::v1::HistogramMode ToAgentMode(HistogramMode mode) {
  switch (mode) {
    case HistogramMode::kLive:
      return agent::v1::HISTOGRAM_MODE_LIVE;
    case HistogramMode::kAll:
      return agent::v1::HISTOGRAM_MODE_ALL;
    case HistogramMode::kAllAfterGc:
      return agent::v1::HISTOGRAM_MODE_ALL_AFTER_GC;
    case HistogramMode::kUnknown:
      break;
  }
  return agent::v1::HISTOGRAM_MODE_UNSPECIFIED;
}

}  // namespace heapwatch::proto

#endif  // HEAPWATCH_PROTO_AGENT_MODE_H_
