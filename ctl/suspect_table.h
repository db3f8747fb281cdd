// The text table of leak suspects, shared by `heapwatchctl suspects` (from the daemon) and
// `heapwatchctl trend` (offline), so that both print a suspect the same way. It renders the JSON
// model (heapwatch.ctl.v1.Suspect, proto/heapwatch/ctl/v1/json.proto; ctl/leak_output.h SuspectToJson):
// one model, one renderer.
//
// Thread-safety: pure function.
#ifndef HEAPWATCH_CTL_SUSPECT_TABLE_H_
#define HEAPWATCH_CTL_SUSPECT_TABLE_H_

#include <ostream>

#include "google/protobuf/repeated_ptr_field.h"
#include "heapwatch/ctl/v1/json.pb.h"

namespace heapwatch::ctl {

namespace json = ::heapwatch::ctl::v1;

// Prints AGENT, CLASS, BYTES, INSTANCES, GROWTH/S, GROWTH/H, SCORE, SCALE (the time scale it is
// flagged on, ctl/leak_output.h TimeScaleName), LEAK (its leak id, "-" if none), FIRST SEEN per
// suspect, in the given order, or "no leak suspects" when there is none.
void PrintSuspectTable(const google::protobuf::RepeatedPtrField<json::Suspect>& suspects,
                       std::ostream& out);

}  // namespace heapwatch::ctl

#endif  // HEAPWATCH_CTL_SUSPECT_TABLE_H_
