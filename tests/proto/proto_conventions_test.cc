// The API conventions of proto/heapwatch/v1/heapwatch.proto, checked on the compiled descriptors so
// that later additions (drill-down reports, extended dumps, AgentRegistry) keep them: one request
// and one response message per RPC, times as Timestamp, spans as Duration, byte counts as 64-bit
// integers named
// *_bytes, enums with an UNSPECIFIED zero value.
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.pb.h"

namespace heapwatch {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

const FileDescriptor* File() { return v1::ListAgentsRequest::descriptor()->file(); }

TEST(ProtoConventions, VersionedPackage) {
  EXPECT_EQ(File()->package(), "heapwatch.v1");
  EXPECT_EQ(File()->name(), "heapwatch/v1/heapwatch.proto");
  ASSERT_NE(File()->FindServiceByName("QueryService"), nullptr);
}

TEST(ProtoConventions, EveryRpcHasItsOwnRequestAndResponse) {
  std::map<std::string, int> uses;
  for (int s = 0; s < File()->service_count(); ++s) {
    const auto* service = File()->service(s);
    for (int m = 0; m < service->method_count(); ++m) {
      const auto* method = service->method(m);
      EXPECT_EQ(method->input_type()->name(), method->name() + "Request") << method->full_name();
      EXPECT_EQ(method->output_type()->name(), method->name() + "Response") << method->full_name();
      ++uses[method->input_type()->full_name()];
      ++uses[method->output_type()->full_name()];
    }
  }
  for (const auto& [name, count] : uses)
    EXPECT_EQ(count, 1) << name << " is shared by several RPCs";
  EXPECT_GE(uses.size(), 8u);
}

void CheckMessage(const Descriptor* d, std::set<std::string>* seen) {
  if (!seen->insert(d->full_name()).second) return;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string& name = f->name();
    const std::string where = f->full_name();
    if (absl::EndsWith(name, "_time") || name == "time" || name == "first_seen") {
      ASSERT_EQ(f->type(), FieldDescriptor::TYPE_MESSAGE) << where;
      EXPECT_EQ(f->message_type()->full_name(), "google.protobuf.Timestamp") << where;
    }
    if (absl::EndsWith(name, "_duration")) {
      ASSERT_EQ(f->type(), FieldDescriptor::TYPE_MESSAGE) << where;
      EXPECT_EQ(f->message_type()->full_name(), "google.protobuf.Duration") << where;
    }
    if (f->type() == FieldDescriptor::TYPE_MESSAGE &&
        (f->message_type()->full_name() == "google.protobuf.Timestamp")) {
      EXPECT_TRUE(absl::EndsWith(name, "_time") || name == "time" || name == "first_seen") << where;
    }
    if (absl::EndsWith(name, "bytes") && !absl::EndsWith(name, "_per_second")) {
      EXPECT_TRUE(f->type() == FieldDescriptor::TYPE_UINT64 ||
                  f->type() == FieldDescriptor::TYPE_INT64)
          << where << ": byte counts are 64-bit integers";
    }
    if (f->type() == FieldDescriptor::TYPE_DOUBLE) {
      // A measured quantity with its unit beside it (a trend test's value and threshold: a p-value,
      // bytes, a fraction) names the unit in a string field `unit` of the same message.
      const bool has_unit = d->FindFieldByName("unit") != nullptr &&
                            d->FindFieldByName("unit")->type() == FieldDescriptor::TYPE_STRING;
      EXPECT_TRUE(absl::EndsWith(name, "_per_second") || name == "score" || name == "share" ||
                  ((name == "value" || name == "threshold") && has_unit))
          << where
          << ": a double is a rate (_per_second), a score or a share (fractions in [0, 1]), or a "
             "value/threshold next to a `unit` field";
    }
    if (f->type() == FieldDescriptor::TYPE_ENUM) {
      EXPECT_EQ(f->enum_type()->value(0)->number(), 0);
      EXPECT_TRUE(absl::EndsWith(f->enum_type()->value(0)->name(), "_UNSPECIFIED")) << where;
    }
    if (f->type() == FieldDescriptor::TYPE_MESSAGE &&
        f->message_type()->file()->package() == "heapwatch.v1") {
      CheckMessage(f->message_type(), seen);
    }
  }
}

TEST(ProtoConventions, TimesSizesRatesAndEnums) {
  std::set<std::string> seen;
  for (int i = 0; i < File()->message_type_count(); ++i)
    CheckMessage(File()->message_type(i), &seen);
  for (int i = 0; i < File()->enum_type_count(); ++i) {
    const auto* e = File()->enum_type(i);
    EXPECT_TRUE(absl::EndsWith(e->value(0)->name(), "_UNSPECIFIED")) << e->full_name();
  }
  EXPECT_GE(seen.size(), 12u);
}

}  // namespace
}  // namespace heapwatch
