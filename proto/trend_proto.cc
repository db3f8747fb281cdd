#include "proto/trend_proto.h"

#include <string>

#include "proto/time_util.h"

namespace heapwatch::proto {

void SuspectToProto(const AgentId& agent, const diff::Suspect& s, absl::Time last_snapshot,
                    v1::Suspect* out) {
  out->set_agent(agent.value);
  out->set_class_name(s.class_name);
  out->set_score(s.score);
  SetTimestamp(s.first_seen, out, &v1::Suspect::mutable_first_seen);
  out->set_growth_bytes_per_second(s.growth_bytes_per_second);
  out->set_growth_instances_per_second(s.growth_instances_per_second);
  out->set_bytes(s.bytes);
  out->set_instances(s.instances);
  SetTimestamp(last_snapshot, out, &v1::Suspect::mutable_last_snapshot_time);
  out->set_leak(s.leak);
  ToDuration(s.time_scale, out->mutable_time_scale());
}

void HeapExhaustionToProto(const diff::HeapExhaustion& e, v1::HeapExhaustion* out) {
  ToDuration(e.estimate, out->mutable_estimate());
  ToDuration(e.soonest, out->mutable_soonest());
  if (e.latest != absl::InfiniteDuration()) ToDuration(e.latest, out->mutable_latest());
  out->set_growth_bytes_per_second(e.growth_bytes_per_second);
  out->set_growth_low_bytes_per_second(e.growth_low_bytes_per_second);
  out->set_growth_high_bytes_per_second(e.growth_high_bytes_per_second);
  out->set_live_bytes(e.live_bytes);
  out->set_max_bytes(e.max_bytes);
  SetTimestamp(e.computed_time, out, &v1::HeapExhaustion::mutable_computed_time);
  out->set_points(static_cast<uint32_t>(e.points));
}

void LeakToProto(const AgentId& agent, const diff::Leak& leak, absl::Time last_snapshot,
                 std::string_view analysed_dump_id, v1::Leak* out) {
  out->set_agent(agent.value);
  out->set_leak(leak.id);
  out->set_main_class(leak.main_class);
  for (const diff::LeakClass& c : leak.classes) {
    v1::LeakClass* o = out->add_classes();
    o->set_class_name(c.class_name);
    o->set_bytes(c.bytes);
    o->set_growth_bytes_per_second(c.growth_bytes_per_second);
  }
  out->set_bytes(leak.bytes);
  out->set_growth_bytes_per_second(leak.growth_bytes_per_second);
  out->set_score(leak.score);
  SetTimestamp(leak.first_seen, out, &v1::Leak::mutable_first_seen);
  ToDuration(leak.time_scale, out->mutable_time_scale());
  out->set_accumulation_point(leak.accumulation_point);
  if (!leak.accumulation_point.empty()) out->set_dump_id(std::string(analysed_dump_id));
  SetTimestamp(last_snapshot, out, &v1::Leak::mutable_last_snapshot_time);
  out->set_kind(leak.kind);
  out->set_detail(leak.detail);
  if (leak.exhaustion.has_value()) {
    HeapExhaustionToProto(*leak.exhaustion, out->mutable_heap_exhaustion());
  }
}

namespace {

void TestToProto(const diff::TestExplanation& t, v1::TrendTest* out) {
  out->set_test(t.test);
  out->set_value(t.value);
  out->set_threshold(t.threshold);
  out->set_op(t.op);
  out->set_pass(t.pass);
  out->set_unit(t.unit);
}
}  // namespace

void ExplanationToProto(const AgentId& agent, const diff::Explanation& e,
                        v1::ExplainSuspectResponse* out) {
  out->set_agent(agent.value);
  out->set_class_name(e.class_name);
  out->set_known(e.known);
  out->set_suspect(e.suspect);
  out->set_leak(e.leak);
  for (const diff::ScaleExplanation& s : e.scales) {
    v1::TrendScale* o = out->add_scales();
    ToDuration(s.time_scale, o->mutable_time_scale());
    o->set_suspect(s.suspect);
    o->set_window_size(s.window_size);
    o->set_min_window(s.min_window);
    o->set_not_evaluated(s.not_evaluated);
    for (const diff::TestExplanation& t : s.tests) TestToProto(t, o->add_tests());
  }
  if (e.cycle_veto.has_value()) TestToProto(*e.cycle_veto, out->mutable_cycle_veto());
}

}  // namespace heapwatch::proto
