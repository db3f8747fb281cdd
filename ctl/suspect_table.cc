#include "ctl/suspect_table.h"

#include "absl/strings/str_format.h"
#include "ctl/leak_output.h"
#include "ctl/output.h"
#include "ctl/time_arg.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {

void PrintSuspectTable(const google::protobuf::RepeatedPtrField<json::Suspect>& suspects,
                       std::ostream& out) {
  if (suspects.empty()) {
    out << "no leak suspects\n";
    return;
  }
  Table table(
      {"AGENT", "CLASS", "BYTES", "INSTANCES", "GROWTH/S", "GROWTH/H", "SCORE", "SCALE", "LEAK",
       "FIRST SEEN"},
      {2, 3, 4, 5, 6});
  for (const json::Suspect& s : suspects) {
    absl::Time first_seen = absl::InfinitePast();
    if (s.has_first_seen()) {
      auto t = proto::FromTimestamp(s.first_seen());
      if (t.ok()) first_seen = *t;
    }
    table.AddRow({s.agent(), s.class_(), HumanBytes(s.bytes()), absl::StrFormat("%.0f", s.instances()),
                  SignedHumanBytes(s.growth_bytes_per_second()),
                  SignedHumanBytes(s.growth_bytes_per_second() * 3600),
                  absl::StrFormat("%.2f", s.score()), TimeScaleName(s.time_scale()),
                  s.leak().empty() ? "-" : s.leak(), ShortTime(first_seen)});
  }
  table.Print(out);
}

}  // namespace heapwatch::ctl
