// The trend detector's figures (diff/leak_detector.h) as heapwatch.v1 messages: one conversion for
// the daemon's API (ListSuspects, ListLeaks, ExplainSuspect, drill-down reports) and for
// `heapwatchctl trend`, so that both render the same way (ctl/leak_output.h).
//
// Times: an infinite or unknown time is an unset field (proto/time_util.h). Thread-safety: pure
// functions. Complexity: linear in the message's size.
#ifndef HEAPWATCH_PROTO_TREND_PROTO_H_
#define HEAPWATCH_PROTO_TREND_PROTO_H_

#include <string_view>

#include "absl/time/time.h"
#include "common/histogram.h"
#include "diff/leak_detector.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch::proto {

// heapwatch.v1.Suspect from a suspect of `agent` (its leak id and time scale included);
// `last_snapshot` is the time of the newest snapshot the detector saw.
void SuspectToProto(const AgentId& agent, const diff::Suspect& s, absl::Time last_snapshot,
                    v1::Suspect* out);
// heapwatch.v1.Leak from a leak of `agent`. `analysed_dump_id` is the extended dump whose
// accumulation points the agent's leaks were regrouped by (empty if none); it is set as dump_id on
// a leak that names an accumulation point.
// heapwatch.v1.HeapExhaustion from a forecast (an infinite latest end leaves `latest` unset).
void HeapExhaustionToProto(const diff::HeapExhaustion& e, v1::HeapExhaustion* out);
void LeakToProto(const AgentId& agent, const diff::Leak& leak, absl::Time last_snapshot,
                 std::string_view analysed_dump_id, v1::Leak* out);
// heapwatch.v1.ExplainSuspectResponse from the detector's explanation of a class of `agent`.
void ExplanationToProto(const AgentId& agent, const diff::Explanation& e,
                        v1::ExplainSuspectResponse* out);

}  // namespace heapwatch::proto

#endif  // HEAPWATCH_PROTO_TREND_PROTO_H_
